#!/bin/sh
# End to end: `nxcc check` (device simulator vs reference evaluator) on the
# small per-family graphs in tests/e2e/ops/*.hlo (data movement, rounding and
# conversion, custom calls, batch dot, scatter / dynamic-update-slice with
# out-of-bounds indices, scatter-add of rows on TensorE (scatter_onehot*:
# duplicates, out-of-range indices, bf16, column and row chunks), column sums
# on TensorE (colsum), large iotas (iota_big), gather / dynamic-slice with clamped indices, exact
# integer ops, output aliasing permutations, convolutions lowered by
# conv-to-dot: forward, depthwise, grouped, JAX input/weight gradients,
# unusual dim_labels, 1-D, bf16/f16; op-expand: pooling windows, is-finite,
# take_along_axis gather/scatter, select-and-scatter; math-expand: tan, atan2, cbrt, hyperbolic and inverse trigonometric functions, popcnt, count-leading-zeros (math_expand*); complex-split: c64 arithmetic as f32 pairs (complex_split), and the refusal of a c64 value it cannot split; bitcast-convert; s64/u64 arithmetic, converts, add/arg-max reduces and the dropout-seed rng: int64*) at -O1 and -O2 on trn1 and trn2 (a subset also at -O3), auto-cast none and
# bf16 for the float-only families (custom, dot_batch, dot_shapes, data, conv_*).
set -u
fail() { echo "FAIL: $*"; exit 1; }
n=0
for f in "$NX_ROOT"/tests/e2e/ops/*.hlo; do
	b=$(basename "$f" .hlo)
	casts="none"
	case "$b" in custom | dot_batch | dot_shapes | data | conv_*) casts="none bf16" ;; esac
	for t in trn1 trn2; do
		for o in -O1 -O2; do
			for c in $casts; do
				ac="--auto-cast none"
				[ "$c" = bf16 ] && ac="--auto-cast all --auto-cast-type bf16"
				out=$("$NXCC" check "$f" --framework XLA --target $t $o $ac --random-inputs 3 2>&1) ||
					fail "$b $t $o $ac: $(echo "$out" | grep -E 'MISMATCH|error|FAILED' | head -3)"
				n=$((n + 1))
			done
		done
	done
done
# -O3 (the backend's plan search: row-loop tiles, fused-loop engine split)
# on the kernels it changes, on both targets
for b in row_softmax row_layernorm row_bcast_out row_fallback alias_inplace bcast_big dot_shapes dot_batch; do
	for t in trn1 trn2; do
		out=$("$NXCC" check "$NX_ROOT/tests/e2e/ops/$b.hlo" --framework XLA --target $t -O3 --auto-cast none --random-inputs 3 2>&1) ||
			fail "$b $t -O3: $(echo "$out" | grep -E 'MISMATCH|error|FAILED' | head -3)"
		n=$((n + 1))
	done
done
# (a multi-index gather that takes part of a dim it does not index: neither
# gather-linearize nor the backend's one-dimension lookup covers it)
printf 'HloModule g\nENTRY m {\n  t = f32[8,4,5] parameter(0)\n  i = s32[3,2] parameter(1)\n  ROOT g = f32[3,2] gather(t, i), offset_dims={1}, collapsed_slice_dims={0,1}, start_index_map={0,1}, index_vector_dim=1, slice_sizes={1,1,2}\n}\n' > "${TMPDIR:-/tmp}/nx_ops_gather.$$.hlo"
out=$("$NXCC" check "${TMPDIR:-/tmp}/nx_ops_gather.$$.hlo" 2>&1)
rc=$?
rm -f "${TMPDIR:-/tmp}/nx_ops_gather.$$.hlo"
[ $rc -eq 1 ] || fail "gather: exit $rc, expected 1"
echo "$out" | grep -q "gather: only lookups along one operand dimension" || fail "gather: unexpected message: $out"
# a 64-bit op int64-split does not expand (a multiply-reduce) is refused
# naming op and type, never computed in 32 bits
printf 'HloModule r\nadd {\n  x = s64[] parameter(0)\n  y = s64[] parameter(1)\n  ROOT a = s64[] multiply(x, y)\n}\nENTRY m {\n  p = s64[8] parameter(0)\n  z = s64[] constant(0)\n  ROOT r = s64[] reduce(p, z), dimensions={0}, to_apply=add\n}\n' > "${TMPDIR:-/tmp}/nx_ops_r64.$$.hlo"
out=$("$NXCC" check "${TMPDIR:-/tmp}/nx_ops_r64.$$.hlo" 2>&1)
rc=$?
rm -f "${TMPDIR:-/tmp}/nx_ops_r64.$$.hlo"
[ $rc -eq 1 ] || fail "s64 reduce: exit $rc, expected 1"
echo "$out" | grep -q "instruction 'r' (reduce): s64 arithmetic in this op is not supported" || fail "s64 reduce: unexpected message: $out"
# complex-split in a loop body that stays a device loop
for t in trn1 trn2; do
	out=$("$NXCC" check "$NX_ROOT/tests/e2e/ops/complex_while.hlo" --framework XLA --target $t -O2 --disable-pass=while-unroll --auto-cast none --random-inputs 3 2>&1) ||
		fail "complex_while device loop $t: $(echo "$out" | grep -E 'MISMATCH|error|FAILED' | head -3)"
	n=$((n + 1))
done
# a long-row sum with a non-neutral init (row_long with init 1: the row
# kernel combines it in each row's first chunk; -O2 fuses it with its
# producers, -O1 leaves a lone reduce the reduce kernels refuse)
sed 's/q = f32\[300\] reduce(sq, zero)/one = f32[] constant(1)\n  q = f32[300] reduce(sq, one)/' "$NX_ROOT/tests/e2e/ops/row_long.hlo" > "${TMPDIR:-/tmp}/nx_ops_rl.$$.hlo"
grep -q 'reduce(sq, one)' "${TMPDIR:-/tmp}/nx_ops_rl.$$.hlo" || fail "row_long init: sed did not apply"
for t in trn1 trn2; do
	out=$("$NXCC" check "${TMPDIR:-/tmp}/nx_ops_rl.$$.hlo" --framework XLA --target $t -O2 --auto-cast none --random-inputs 3 2>&1) ||
		fail "row_long init 1 $t: $(echo "$out" | grep -E 'MISMATCH|error|FAILED' | head -3)"
	n=$((n + 1))
done
rm -f "${TMPDIR:-/tmp}/nx_ops_rl.$$.hlo"
# layer norm over 1450 rows: one body of 11 tiles in 5 buffer sets, then a
# 42-row tail, which goes to set 11 % 5 (it went to set 0 and waited for
# tile 6 rather than tile 10, the tile before it in set 0: a race)
sed 's/2048,/1450,/g; s/\[2048\]/[1450]/g' "$NX_ROOT/bench/kernels/layernorm_f32.hlo" > "${TMPDIR:-/tmp}/nx_ops_ln.$$.hlo"
"$NXCC" compile "${TMPDIR:-/tmp}/nx_ops_ln.$$.hlo" --target trn1 -O2 --no-cache -o "${TMPDIR:-/tmp}/nx_ops_ln.$$.neff" --dump-lower=plan > "${TMPDIR:-/tmp}/nx_ops_ln.$$.plan" 2>&1 ||
	fail "layer norm 1450 rows: compile"
grep -q 'tile 11 (5 buffers, 11 tiles per iteration' "${TMPDIR:-/tmp}/nx_ops_ln.$$.plan" || fail "layer norm 1450 rows: plan changed"
"$NXCC" run "${TMPDIR:-/tmp}/nx_ops_ln.$$.neff" --timing-only --check-races > "${TMPDIR:-/tmp}/nx_ops_ln.$$.run" 2>&1 ||
	fail "layer norm 1450 rows: $(grep -m2 -E 'race|error' "${TMPDIR:-/tmp}/nx_ops_ln.$$.run")"
n=$((n + 1))
rm -f "${TMPDIR:-/tmp}/nx_ops_ln.$$.hlo" "${TMPDIR:-/tmp}/nx_ops_ln.$$.neff" "${TMPDIR:-/tmp}/nx_ops_ln.$$.plan" "${TMPDIR:-/tmp}/nx_ops_ln.$$.run"
# a c64 value complex-split cannot split (it reads a c64 entry parameter) is
# refused naming the op and the type, never computed in f32 pairs wrongly
printf 'HloModule c\nENTRY m {\n  z = c64[8] parameter(0)\n  a = f32[8] parameter(1)\n  w = c64[8] complex(a, a)\n  s = c64[8] add(z, w)\n  ROOT r = f32[8] real(s)\n}\n' > "${TMPDIR:-/tmp}/nx_ops_c64.$$.hlo"
out=$("$NXCC" check "${TMPDIR:-/tmp}/nx_ops_c64.$$.hlo" 2>&1)
rc=$?
rm -f "${TMPDIR:-/tmp}/nx_ops_c64.$$.hlo"
[ $rc -eq 1 ] || fail "c64 parameter: exit $rc, expected 1"
echo "$out" | grep -q "instruction 's' (add): c64 is not supported on NeuronCore" || fail "c64 parameter: unexpected message: $out"
echo "checked $n configurations"
