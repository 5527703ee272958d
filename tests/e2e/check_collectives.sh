#!/bin/bash
# End to end: `nxcc check --ranks N` (N from replicas.txt) on the collective
# cases of the xla-evaluator corpus: the simulated ranks must match the
# evaluator's replicas. Cases the backend cannot lower must fail with exit 1
# and a message naming the instruction, never crash or hang.
set -u
fail() { echo "FAIL: $*"; exit 1; }
corpus="$NX_CORPUS/xla-evaluator"
[ -d "$corpus" ] || { echo "SKIP: no corpus at $corpus"; exit 0; }
# Not lowered: f64 has no device type; async all-reduce-start and all-to-all
# are not in the backend.
unsupported="collective_all_reduce_add_f64 collective_all_reduce_multiply_f64
collective_all_reduce_start_done collective_all_reduce_start_done_two_operands
collective_all_to_all_split_dimension
collective_all_to_all_tuple_empty_groups collective_all_to_all_tuple_ordered_groups
collective_all_to_all_tuple_two_groups collective_all_to_all_u16"
ok=0 refused=0
for c in "$corpus"/collective_*; do
	b=$(basename "$c")
	n=$(cat "$c/replicas.txt" 2>/dev/null || echo 1)
	out=$(timeout 60 "$NXCC" check "$c/module.hlo" --ranks "$n" 2>&1)
	rc=$?
	if echo "$unsupported" | grep -qw "$b"; then
		[ $rc -eq 1 ] || fail "$b: exit $rc, expected 1 (not lowered): $out"
		echo "$out" | grep -qE "error: instruction '.*' \(.*\): .*(not supported|device types)" ||
			fail "$b: unexpected message: $out"
		echo "cannot lower $b: $(echo "$out" | grep -o "instruction '.*" | head -1)"
		refused=$((refused + 1))
		continue
	fi
	[ $rc -eq 0 ] || fail "$b (--ranks $n): exit $rc: $(echo "$out" | grep -E 'MISMATCH|error|FAILED' | head -3)"
	echo "$out" | grep -q "check: ok" || fail "$b: no verdict"
	ok=$((ok + 1))
done
[ $ok -ge 40 ] || fail "only $ok collective cases checked"
echo "checked $ok collective cases; $refused not lowered"

# more ranks than the program was compiled for: a clear error
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
c="$corpus/collective_all_reduce_add_f32"
"$NXCC" compile "$c/module.hlo" --no-cache --target trn1 --output "$tmp/a.neff" || fail "compile"
out=$("$NXCC" run "$tmp/a.neff" --random-inputs 1 --ranks 3 2>&1)
[ $? -eq 1 ] || fail "run --ranks 3 of a 1-rank program: $out"
echo "$out" | grep -q "compiled for 1 rank" || fail "unexpected message: $out"
# a 2-rank run writes rank<i>/out<k>.npy; per-rank inputs
f=/dev/null
cat > "$tmp/ar.hlo" <<'EOT'
HloModule ar, replica_count=2
add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }
ENTRY e {
  p = f32[4] parameter(0)
  ROOT r = f32[4] all-reduce(p), replica_groups={{0,1}}, to_apply=add
}
EOT
"$NXCC" compile "$tmp/ar.hlo" --no-cache --target trn2 --output "$tmp/ar.neff" || fail "compile ar"
"$NXCC" run "$tmp/ar.neff" --random-inputs 1 --output-dir "$tmp/o" > "$tmp/run.txt" || fail "run ar: $(cat "$tmp/run.txt")"
[ -f "$tmp/o/rank0/out0.npy" ] && [ -f "$tmp/o/rank1/out0.npy" ] || fail "no rank<i>/out0.npy"
grep -q "slowest of 2 ranks" "$tmp/run.txt" || fail "no per-rank summary"
"$NXCC" eval "$tmp/ar.hlo" --random-inputs 1 --output-dir "$tmp/ev" > /dev/null || fail "eval ar"
cmp -s "$tmp/o/rank1/out0.npy" "$tmp/ev/replica1/out0.npy" || fail "run and eval disagree on rank 1"
exit 0
