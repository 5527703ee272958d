#!/bin/sh
# Issue 15: when a thread cannot be created (the process or user thread
# limit; NX_FAULT_THREAD=N fails the N-th creation with EAGAIN, ir/thread.h),
# the evaluator's replicas and the simulator's ranks stop with a clear error
# (exit 1) instead of an internal error, and the replicas already running are
# released from their collectives (no hang).
set -u
: "${NXCC:?}"
fail() { echo "FAIL: $*"; exit 1; }
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
cat >"$W/ar.hlo" <<'HLO'
HloModule ar, replica_count=4
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}
ENTRY main {
  p = f32[8] parameter(0)
  s = f32[8] all-reduce(p), replica_groups={{0,1,2,3}}, to_apply=add
  ROOT n = f32[8] negate(s)
}
HLO
"$NXCC" eval "$W/ar.hlo" --random-inputs 1 --replicas 4 >"$W/out" 2>&1 || fail "eval without a fault: $(cat "$W/out")"
for k in 1 3 4; do
	NX_FAULT_THREAD=$k timeout 120 "$NXCC" eval "$W/ar.hlo" --random-inputs 1 --replicas 4 >"$W/out" 2>&1
	rc=$?
	[ $rc -eq 1 ] || fail "eval, thread $k fails: exit $rc, want 1: $(cat "$W/out")"
	grep -q "cannot start a thread for replica $((k - 1)) of 4" "$W/out" || fail "eval, thread $k: $(cat "$W/out")"
done
# nxcc check: 4 evaluator threads, then the simulator's ranks (thread 6 = rank 1)
NX_FAULT_THREAD=6 timeout 120 "$NXCC" check "$W/ar.hlo" --ranks 4 >"$W/out" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "check, rank 1's thread fails: exit $rc, want 1: $(cat "$W/out")"
grep -q "cannot start a thread for rank 1 of 4" "$W/out" || fail "check: $(cat "$W/out")"
echo "ok"
