#!/bin/sh
# while loops: a data-dependent loop (the condition compares a float) is a
# device loop that evaluates its condition on the device (ldreg, brz), which
# a --timing-only run cannot follow (a clear error); a counted loop beyond
# the unroll limit (passes/loops.h) is a device loop whose code does not grow
# with the trip count (backend/lower_while.c); beyond a device loop's 2^24
# trips it is refused. The loops themselves are checked against the
# evaluator in tests/e2e/ops/while_*.hlo (check_ops.sh, and while_device.sh
# with device loops forced).
set -u
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cat > "$T/dd.hlo" <<'HLO'
HloModule dd
cond {
  p = (f32[], f32[4]) parameter(0)
  v = f32[] get-tuple-element(p), index=0
  lim = f32[] constant(100)
  ROOT c = pred[] compare(v, lim), direction=LT
}
body {
  p = (f32[], f32[4]) parameter(0)
  v = f32[] get-tuple-element(p), index=0
  x = f32[4] get-tuple-element(p), index=1
  two = f32[] constant(2)
  v2 = f32[] multiply(v, two)
  ROOT r = (f32[], f32[4]) tuple(v2, x)
}
ENTRY e {
  s = f32[] parameter(0)
  x = f32[4] parameter(1)
  init = (f32[], f32[4]) tuple(s, x)
  grow = (f32[], f32[4]) while(init), condition=cond, body=body
  ROOT y = f32[4] get-tuple-element(grow), index=1
}
HLO
out=$("$NXCC" compile "$T/dd.hlo" --framework XLA --target trn1 --no-cache --dump-lower=plan -o "$T/dd.neff" 2>&1) ||
	fail "data-dependent loop: $out"
echo "$out" | grep -q "loop: data-dependent (condition cond on the device), at most 16777216 trips over body" ||
	fail "data-dependent loop: plan: $out"
out=$("$NXCC" run "$T/dd.neff" --timing-only 2>&1)
rc=$?
[ $rc -eq 1 ] || fail "data-dependent loop, --timing-only: exit $rc, expected 1: $out"
echo "$out" | grep -q "ldreg (a data-dependent loop) needs data: run without --timing-only" ||
	fail "data-dependent loop, --timing-only: unexpected message: $out"

# 3,000,000 trips of a 7-instruction body: beyond the unroll limit, a device loop
cat > "$T/big.hlo" <<'HLO'
HloModule big
cond {
  p = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(3000000)
  ROOT c = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[4] get-tuple-element(p), index=1
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  y = f32[4] sine(x)
  ROOT r = (s32[], f32[4]) tuple(i1, y)
}
ENTRY e {
  x = f32[4] parameter(0)
  z = s32[] constant(0)
  init = (s32[], f32[4]) tuple(z, x)
  long = (s32[], f32[4]) while(init), condition=cond, body=body
  ROOT y = f32[4] get-tuple-element(long), index=1
}
HLO
for t in trn1 trn2; do
	out=$("$NXCC" compile "$T/big.hlo" --framework XLA --target $t -O2 --no-cache --stats --dump-lower=plan -o "$T/big.neff" 2>&1) ||
		fail "long loop ($t): $out"
	echo "$out" | grep -q "kernel 1 while-loop: long (while)" || fail "long loop ($t): no device loop: $out"
	echo "$out" | grep -q "loop: 3000000 trips over body" || fail "long loop ($t): trips: $out"
	# one copy of the body: a few dozen instructions per engine, not millions
	sp=$(echo "$out" | sed -n 's/^instructions sp: //p')
	[ -n "$sp" ] && [ "$sp" -lt 500 ] || fail "long loop ($t): $sp SP instructions"
done
# past a device loop's trip counter (2^24): refused, naming the loop
sed 's/constant(3000000)/constant(20000000)/' "$T/big.hlo" > "$T/huge.hlo"
out=$("$NXCC" compile "$T/huge.hlo" --framework XLA --target trn1 --no-cache -o "$T/huge.neff" 2>&1)
rc=$?
[ $rc -eq 1 ] || fail "huge loop: exit $rc, expected 1: $out"
echo "$out" | grep -q "error: instruction 'long' (while): while loop with 20000000 trips: a device loop counts at most 16777216" ||
	fail "huge loop: unexpected message: $out"
[ ! -e "$T/huge.neff" ] || fail "huge loop left a .neff"
# the same loop with 3 trips compiles and matches the evaluator
sed 's/constant(3000000)/constant(3)/' "$T/big.hlo" > "$T/small.hlo"
out=$("$NXCC" check "$T/small.hlo" --framework XLA --target trn1 -O2 --random-inputs 5 2>&1) || fail "3-trip loop: $out"
echo "$out" | grep -q "check: ok (1 outputs)" || fail "3-trip loop: $out"
echo "ok: data-dependent and long loops are device loops; past 2^24 trips a clear refusal; a short loop checks"
