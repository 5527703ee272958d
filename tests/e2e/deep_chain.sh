#!/bin/sh
# Issue 15: a chain of 10^5 nested calls (c1 calls c2 ... calls c100000) goes
# through every command without overflowing the stack or growing
# quadratically: parse, opt -O2 (the inliner expands only the entry: was
# over 300 s and 10 GB), compile, print --format proto and back (the
# proto writer's id check was all pairs: 90 s). The evaluator refuses the
# nesting with a clear error (its explicit depth limit). Each step takes a few
# seconds; the timeouts only guard against hangs.
set -u
: "${NXCC:?}"
fail() { echo "FAIL: $*"; exit 1; }
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
python3 - "$W/deep.hlo" <<'PY'
import sys
N = 100000
out = ["HloModule deep", "c%d {\n  p = f32[4] parameter(0)\n  ROOT n = f32[4] negate(p)\n}" % N]
for i in range(N - 1, 0, -1):
    out.append("c%d {\n  p = f32[4] parameter(0)\n  ROOT r = f32[4] call(p), to_apply=c%d\n}" % (i, i + 1))
out.append("ENTRY main {\n  p = f32[4] parameter(0)\n  ROOT r = f32[4] call(p), to_apply=c1\n}")
open(sys.argv[1], "w").write("\n".join(out) + "\n")
PY
T="timeout 300"
$T "$NXCC" parse "$W/deep.hlo" >"$W/out" 2>&1 || fail "parse: $(tail -3 "$W/out")"
grep -q "computations: 100001" "$W/out" || fail "parse: $(cat "$W/out")"
$T "$NXCC" opt -O2 "$W/deep.hlo" -o "$W/opt.hlo" >"$W/out" 2>&1 || fail "opt: exit $?: $(tail -3 "$W/out")"
grep -q " call(" "$W/opt.hlo" && fail "opt left a call"
grep -q "negate(" "$W/opt.hlo" || fail "opt lost the negate"
$T "$NXCC" eval "$W/opt.hlo" --random-inputs 1 >"$W/out" 2>&1 || fail "eval of the optimized module: $(tail -3 "$W/out")"
$T "$NXCC" compile "$W/deep.hlo" --no-cache -o "$W/deep.neff" >"$W/out" 2>&1 || fail "compile: exit $?: $(tail -3 "$W/out")"
$T "$NXCC" print "$W/deep.hlo" --format proto -o "$W/deep.pb" >"$W/out" 2>&1 || fail "print --format proto: $(tail -3 "$W/out")"
$T "$NXCC" parse "$W/deep.pb" >"$W/out" 2>&1 || fail "parse of the proto: $(tail -3 "$W/out")"
$T "$NXCC" eval "$W/deep.hlo" --random-inputs 1 >"$W/out" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "eval: exit $rc, want 1: $(tail -3 "$W/out")"
grep -q "calls nested too deeply" "$W/out" || fail "eval: $(tail -3 "$W/out")"
echo "ok"
