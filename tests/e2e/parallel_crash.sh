#!/bin/sh
# Crash safety of nxcc parallel-compile itself: SIGKILL the parent while its
# workers sit between writing model.neff and model.done. Then: the workers
# are gone, no lock is held, no entry without model.done is served as a hit,
# the killed run's work directory is removed by the next run, and the rerun
# completes every graph.
set -u
T=$(mktemp -d); trap 'kill -9 $(jobs -p) 2>/dev/null; rm -rf "$T"' EXIT
unset NEURON_COMPILE_CACHE_URL NEURON_CC_FLAGS XLA_FLAGS NXCC_TEST_HOOKS NXCC_TEST_HANG_ON NXCC_TEST_STALL_BEFORE_DONE
PY=/usr/bin/python3; [ -x "$PY" ] || PY=python3
fail() { echo "FAIL: $*"; exit 1; }
EV="$NX_CORPUS/xla-evaluator"
[ -d "$EV" ] || fail "corpus not found at $EV"
D="$T/dump"; mkdir -p "$D"
cp "$NX_ROOT/examples/linear_step.hlo" "$NX_ROOT/examples/mlp_step.hlo" "$D/"
for c in abs_f32_scalar add_tree_f32 and_s64; do cp "$EV/$c/module.hlo" "$D/$c.hlo"; done
C="$T/cache"
export TMPDIR="$T/tmp"; mkdir -p "$TMPDIR"

# 1. kill the parent while both workers stall before model.done
NXCC_TEST_HOOKS=1 NXCC_TEST_STALL_BEFORE_DONE=30 "$NXCC" parallel-compile --jobs 2 --cache-dir "$C" \
	--report "$T/r1.json" "$D" > "$T/o1" 2>&1 &
PARENT=$!
# wait until two entries have model.neff (workers are stalled in the window)
i=0
while [ "$(ls "$C"/nxcc-*/MODULE_*/model.neff 2>/dev/null | wc -l)" -lt 2 ]; do
	i=$((i + 1)); [ $i -gt 300 ] && fail "workers never reached the store: $(cat "$T/o1")"
	sleep 0.1
done
kill -9 $PARENT
wait $PARENT 2>/dev/null
# the workers die with their parent (PR_SET_PDEATHSIG), within a moment
i=0
while ps -eo args | grep -F "$D/" | grep -v grep > /dev/null; do
	i=$((i + 1)); [ $i -gt 50 ] && fail "workers outlived their killed parent: $(ps -eo pid,args | grep -F "$D/" | grep -v grep)"
	sleep 0.1
done
[ -e "$T/r1.json" ] && fail "a killed run wrote a report"
ls -d "$TMPDIR"/nxcc-parallel-* > /dev/null 2>&1 || fail "expected the killed run's work directory (test premise)"

# 2. no partial entry is served: the stalled entries are incomplete, not done
"$NXCC" cache list --cache-dir "$C" > "$T/l1" || fail "cache list"
grep -q "^done" "$T/l1" && fail "an entry finished although its worker was killed before model.done: $(cat "$T/l1")"
grep -q "^incomplete" "$T/l1" || fail "no incomplete entry left (test premise): $(cat "$T/l1")"
# (compile_cache.sh shows a lookup treats an entry without model.done as a miss)

# 3. no stale lock: every lock file is free
"$NXCC" cache clear-locks --cache-dir "$C" > "$T/cl" || fail "clear-locks"
n=$(ls "$C"/nxcc-*/MODULE_*/model.lock 2>/dev/null | wc -l)
[ "$n" -eq 0 ] || fail "$n lock files still held after the kill: $(cat "$T/cl")"

# 4. the rerun completes every graph, and sweeps the dead run's work directory
start=$(date +%s)
"$NXCC" parallel-compile --jobs 2 --cache-dir "$C" --report "$T/r2.json" "$D" > "$T/o2" 2>&1 \
	|| fail "rerun: $(cat "$T/o2")"
[ $(( $(date +%s) - start )) -lt 30 ] || fail "rerun waited on a dead run"
"$PY" - "$T/r2.json" <<'PYEOF' || fail "rerun report: $(cat "$T/r2.json")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["total"] == 5 and r["failed"] == 0, r
assert r["compiled"] + r["cached"] == 5, r
PYEOF
ls -d "$TMPDIR"/nxcc-parallel-* > /dev/null 2>&1 && fail "work directories left: $(ls "$TMPDIR")"
n=$("$NXCC" cache list --cache-dir "$C" | grep -c '^done')
[ "$n" -eq 5 ] || fail "cache has $n done entries after the rerun, want 5: $("$NXCC" cache list --cache-dir "$C")"
"$NXCC" cache verify --cache-dir "$C" > "$T/v" || fail "cache verify: $(cat "$T/v")"
echo "parallel-compile crash safety: ok"
