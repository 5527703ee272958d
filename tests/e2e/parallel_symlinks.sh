#!/bin/sh
# Issue 15: a dump directory with symlink loops made the parallel-compile
# scan exponential (3 loops: 29 s and 5,164 duplicate paths; 5 loops: not
# done after 300 s). Directory symlinks are never followed, in or out of the
# tree; a directory reached twice (bind mount) is scanned once; file
# symlinks are compiled. Input: dump_with_symlink_loops (built here).
set -u
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
D="$T/dump"
mkdir -p "$D/sub/deeper" "$T/outside"
cp "$NX_ROOT/examples/linear_step.hlo" "$D/module_0001.a.before_optimizations.txt"
cp "$NX_ROOT/examples/linear_step.hlo" "$T/outside/module_9999.x.before_optimizations.txt"
for i in 1 2 3 4 5; do ln -s . "$D/loop$i"; ln -s .. "$D/sub/up$i"; ln -s ../.. "$D/sub/deeper/up$i"; done
ln -s "$T/outside" "$D/out"                      # out of the tree
ln -s "$D" "$D/sub/deeper/root"                  # back to the root
cp "$NX_ROOT/examples/mlp_step.hlo" "$T/outside/mlp.hlo"
ln -s "$T/outside/mlp.hlo" "$D/sub/module_0002.b.before_optimizations.txt" # a file link is taken
ln -s "$T/nowhere" "$D/dangling"
# hang guard only
timeout 300 "$NXCC" parallel-compile "$D" --jobs 1 --no-cache --report "$T/r.json" >"$T/log" 2>&1 ||
	fail "parallel-compile: $(tail -3 "$T/log")"
python3 - "$T/r.json" <<'PYEOF' || fail "report"
import json, sys
r = json.load(open(sys.argv[1]))
paths = sorted(g["file"].split("/dump/")[-1] for g in r["graphs"])
assert paths == ["module_0001.a.before_optimizations.txt",
                 "sub/module_0002.b.before_optimizations.txt"], paths
PYEOF
echo ok
