#!/bin/sh
# End to end: GpSimd kernels generated with LLVM (backend/gpsimd/, docs/gpsimd.md).
# `nxcc check` (simulator vs evaluator) on top-k, sort (1-3 operands, ascending,
# descending under the total order with NaN keys, custom comparator, ties),
# argmax reduce, map, cumulative sums, scatter-add with duplicate indices (s32:
# float ones take TensorE),
# scatter-max, select-and-scatter, from 1 element to sizes that take several
# SBUF-half chunks (sort [1024,4096] f32: 16 MiB, more than one SBUF half of
# 12 MiB); the user kernel in examples/custom_op; clang errors; a kernel that
# writes out of its slice; corrupted bitcode rejected at load. Windows small
# enough for op-expand (docs/passes.md) run with --disable-pass=op-expand so
# that they still reach the GpSimd kernels.
set -u
fail() { echo "FAIL: $*"; exit 1; }
T=${TMPDIR:-/tmp}/nx_gpsimd.$$
mkdir -p "$T"
trap 'rm -rf "$T"' EXIT
D="$NX_ROOT/tests/e2e/gpsimd"
n=0
chk() { # name file.hlo [flags...]
	name=$1; f=$2; shift 2
	out=$("$NXCC" check "$f" --framework XLA --target trn1 --random-inputs 3 "$@" 2>&1) ||
		fail "$name: $(echo "$out" | grep -E 'MISMATCH|error|FAILED' | head -3)"
	echo "$out" | grep -q "check: ok" || fail "$name: no ok line"
	n=$((n + 1))
}
gen() { # family shape rshape dim alldims window
	r=$3; [ "$r" = - ] && r=
	sed -e "s/RSHAPE/$r/g" -e "s/SHAPE/$2/g" -e "s/ALLDIMS/$5/g" -e "s/DIM/$4/g" -e "s/WINDOW/$6/g" "$D/$1.hlo" > "$T/$1.hlo"
}
for c in "1 0" "5,33 0" "7,300 1" "1024,4096 1"; do set -- $c; gen sort_asc $1 x $2 x x; chk "sort_asc $1" "$T/sort_asc.hlo"; done
for c in "1 0" "6,17 1" "300,40 0"; do set -- $c; gen sort3 $1 x $2 x x; chk "sort3 $1" "$T/sort3.hlo"; done
for c in "2 0" "3,50 1" "129,64 1"; do set -- $c; gen sort_custom $1 x $2 x x; chk "sort_custom $1" "$T/sort_custom.hlo"; done
for c in "1 - 0" "8,40 8 1" "40,8 8 0" "300,2000 300 1"; do set -- $c; gen argmax $1 $2 $3 x x; chk "argmax $1" "$T/argmax.hlo"; done
for c in "1 1 1 true" "6,50 6,5 5 true" "6,50 6,5 5 false" "300,1000 300,16 16 true"; do set -- $c; gen topk $1 $2 $3 $4 x; chk "topk $1 k=$3 largest=$4" "$T/topk.hlo"; done
for c in "1 0" "4,5 0,1" "700,2048 0,1"; do set -- $c; gen map $1 x x $2 x; chk "map $1" "$T/map.hlo"; done
gen cumsum 1 x x x "size=1 pad=0_0"; chk "cumsum 1" "$T/cumsum.hlo" --disable-pass=op-expand
gen cumsum 3,20 x x x "size=1x20 pad=0_0x19_0"; chk "cumsum 3,20" "$T/cumsum.hlo"
gen cumsum 20,3 x x x "size=20x1 pad=19_0x0_0"; chk "cumsum 20,3 (axis 0)" "$T/cumsum.hlo"
gen cumsum 30,5 x x x "size=5x1 pad=2_2x0_0"; chk "moving sum 30,5" "$T/cumsum.hlo" --disable-pass=op-expand
gen cumsum 6000,256 x x x "size=1x256 pad=0_0x255_0"; chk "cumsum 6000,256" "$T/cumsum.hlo"
chk scatter_add "$D/scatter_add.hlo"
chk scatter_max "$D/scatter_max.hlo"
chk selscat "$D/selscat.hlo" --disable-pass=op-expand
chk "selscat (op-expand)" "$D/selscat.hlo"
chk scatter_add_big "$D/scatter_add_big.hlo"
chk scatter_add_huge "$D/scatter_add_huge.hlo"
# float scatter-adds of rows run as one-hot matmuls on TensorE
# (backend/kernels/scatter_add.c); their s32 forms still take the GpSimd
# kernel (whole, split by columns, by rows)
for b in scatter_add scatter_add_big scatter_add_huge; do
	sed 's/f32/s32/g' "$D/$b.hlo" > "$T/${b}_s32.hlo"
	"$NXCC" compile "$T/${b}_s32.hlo" --target trn1 --no-cache --dump-lower=plan --output "$T/s.neff" 2>&1 |
		grep -q scatter-add-pe && fail "${b}_s32: took the TensorE path"
	chk "${b}_s32" "$T/${b}_s32.hlo"
done
chk scatter_rows "$D/scatter_rows.hlo"
chk selscat_big "$D/selscat_big.hlo" --disable-pass=op-expand
# user kernel: compiled by clang-16, run on GpSimd, checked against the evaluator's host JIT
E="$NX_ROOT/examples/custom_op"
chk custom_op "$E/swish_clip.hlo" --custom-op "swish_clip=$E/swish_clip.c"
printf 'void swish_clip(const void *t, int n) { int x = ; }\n' > "$T/bad.c"
out=$("$NXCC" compile "$E/swish_clip.hlo" --target trn1 --custom-op "swish_clip=$T/bad.c" --output "$T/x.neff" 2>&1)
rc=$?
[ $rc -eq 1 ] || fail "clang error: exit $rc"
echo "$out" | grep -q "bad.c:1:49: error" || fail "clang error without file:line:col: $out"
[ ! -e "$T/x.neff" ] || fail "clang error left an output file"
# a kernel writing out of its slice: the simulator stops it with a clear error
sed 's/"swish_clip"/"oob"/' "$E/swish_clip.hlo" > "$T/oob.hlo"
"$NXCC" compile "$T/oob.hlo" --target trn1 --no-cache --custom-op "oob=$E/oob.c" --output "$T/oob.neff" >/dev/null 2>&1 ||
	fail "oob: compile"
out=$("$NXCC" run "$T/oob.neff" --random-inputs 1 --output-dir "$T/o" 2>&1)
rc=$?
[ $rc -eq 1 ] || fail "oob: exit $rc, expected 1: $out"
echo "$out" | grep -q "GpSimd kernel 'g0000_y' on core 0 (partitions 0..15): write of 16 bytes outside" ||
	echo "$out" | grep -q "GpSimd kernel 'g0000_y' on core 0 (partitions 0..15): write of 4 bytes outside" ||
	fail "oob: unexpected message: $out"
n=$((n + 1))
echo "checked $n configurations"
