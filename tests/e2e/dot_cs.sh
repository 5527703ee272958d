#!/bin/sh
# End to end: column sums folded into the dot that streams their input
# (backend/kernels/dot_cs.c; lower.c dot_cs pairs them). A bias gradient
# db = reduce-add(dy) over the rows beside its weight gradient
# dw = x^T . dy: the stationary dot-loop streams dy's tiles anyway; DVE
# adds each tile's K tiles, PE sums their partitions (a matmul against a
# ones column per 128 columns) and POOL stores db as a second output; the
# reduce has no kernel of its own (`column-sum-stored`). wg: dy streamed
# as B (side 0, tiles of
# 256 columns); wl: dy the dot's lhs (through the transpose
# canonicalize-dot leaves), streamed as A^T (side 1), 1009 columns (a
# ragged last step) and init 1.5; wg1: one tile per step, init -2; bl: the
# mid-size BERT layer (bench/kernels/bert.sh --mid: l1.db, lq.db, lk.db,
# lv.db). no: the reduce sums over dims the dot does not contract (dx's
# dot): not paired, its own column-sum kernel. `nxcc check` (evaluator)
# on trn1 and trn2, the plan lines, and `nxcc run --check-races` (HBM
# too) with no race.
set -u
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# name lhs rhs contracting(lhs) contracting(rhs) dot-shape summed-operand init
gen() {
	cat <<EOT
HloModule $1
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = f32[] add(%a, %b)
}
ENTRY %e (p0: f32[$2], p1: f32[$3]) -> (f32[$6], f32[$8]) {
  %p0 = f32[$2] parameter(0)
  %p1 = f32[$3] parameter(1)
  %dw = f32[$6] dot(%p0, %p1), lhs_contracting_dims={$4}, rhs_contracting_dims={$5}
  %init = f32[] constant($9)
  %db = f32[$8] reduce(%$7, %init), dimensions={0}, to_apply=%add
  ROOT %r = (f32[$6], f32[$8]) tuple(%dw, %db)
}
EOT
}
gen wg 2048,512 2048,1024 0 0 512,1024 p1 1024 0 > "$tmp/wg.hlo"
gen wl 1024,1009 1024,768 0 0 1009,768 p0 1009 1.5 > "$tmp/wl.hlo"
gen wg1 512,128 512,3072 0 0 128,3072 p1 3072 -2 > "$tmp/wg1.hlo"
gen no 2048,1024 512,1024 1 1 2048,512 p0 1024 0 > "$tmp/no.hlo"
sh "$NX_ROOT/bench/kernels/bert.sh" --mid "$tmp/mid" > /dev/null || fail "bert.sh --mid"
cp "$tmp/mid/bert_layer.hlo" "$tmp/bl.hlo"
# name:the summed operand's side (A, B; - none):'column sum: of' lines:'column-sum-stored' kernels
for spec in wg:B:1:1 wl:A:1:1 wg1:B:1:1 no:-:0:0 bl:B:4:4; do
	g=${spec%%:*} rest=${spec#*:}
	side=${rest%%:*} rest=${rest#*:}
	ncs=${rest%%:*} nst=${rest#*:}
	ts="trn1 trn2"
	[ $g = bl ] && ts=trn1
	for t in $ts; do
		out=$("$NXCC" check "$tmp/$g.hlo" --target $t -O2 --random-inputs 3 2>&1) || fail "check $g $t: $out"
	done
	"$NXCC" compile "$tmp/$g.hlo" --target trn1 -O2 --no-cache --dump-lower plan --output "$tmp/$g.neff" \
		> "$tmp/pl.txt" 2>&1 || fail "compile $g: $(cat "$tmp/pl.txt")"
	n=$(grep -c "column sum: of $side per step" "$tmp/pl.txt")
	[ "$n" = "$ncs" ] || fail "$g: $n folded column sums, expected $ncs: $(grep -E 'column|^kernel' "$tmp/pl.txt")"
	n=$(grep -c "column-sum-stored" "$tmp/pl.txt")
	[ "$n" = "$nst" ] || fail "$g: $n stored column sums, expected $nst"
	[ $nst = 0 ] && { grep -q "column-sum-pe" "$tmp/pl.txt" || fail "$g: no column-sum kernel of its own"; }
	NX_CHECK_RACES_HBM=1 "$NXCC" run "$tmp/$g.neff" --timing-only --check-races > "$tmp/run" 2>&1 ||
		fail "$g: run --check-races: $(grep -m2 -E 'race|error' "$tmp/run")"
done
echo "5 graphs: column sums folded and stored as planned, results match the evaluator, no races"
exit 0
