#!/bin/sh
# nxcc parallel-compile: XLA-dump scanning, de-duplication, report, exit
# status, a second run from the cache, --shard, --timeout with --retries on
# a hanging compile, and -- COMMAND (a fake training script that dumps).
set -u
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
unset NEURON_COMPILE_CACHE_URL NEURON_CC_FLAGS XLA_FLAGS NXCC_TEST_HOOKS NXCC_TEST_HANG_ON
PY=/usr/bin/python3; [ -x "$PY" ] || PY=python3
fail() { echo "FAIL: $*"; exit 1; }
EV="$NX_CORPUS/xla-evaluator"
[ -d "$EV" ] || fail "corpus not found at $EV"

# A dump directory: examples, evaluator modules under XLA dump names (text
# and proto), one duplicate, one malformed file, and files to skip.
D="$T/dump"; mkdir -p "$D/sub"
cp "$NX_ROOT/examples/linear_step.hlo" "$NX_ROOT/examples/mlp_step.hlo" "$D/"
cp "$NX_ROOT/examples/mlp_step.hlo" "$D/sub/dup.hlo"
printf 'HloModule broken\nENTRY e {\n  ROOT x = f32[2] add(p, q)\n' > "$D/bad.hlo"
cp "$EV/abs_f32_scalar/module.hlo" "$D/module_0001.SyncTensorsGraph.7.before_optimizations.txt"
cp "$EV/add_s64/module.hlo" "$D/module_0001.SyncTensorsGraph.7.after_optimizations.txt"
echo "allocation 0" > "$D/module_0001.SyncTensorsGraph.7.after_optimizations-buffer-assignment.txt"
echo "; llvm" > "$D/module_0001.SyncTensorsGraph.7.ir-no-opt.ll"
"$NXCC" print "$EV/add_tree_f32/module.hlo" --format proto -o "$D/module_0002.SyncTensorsGraph.9.before_optimizations.hlo.pb" || fail "print proto"
cp "$EV/add_tree_f32/module.hlo" "$D/module_0002.SyncTensorsGraph.9.before_optimizations.txt"
"$NXCC" print "$EV/and_s64/module.hlo" --format proto -o "$D/model.hlo_module.pb" || fail "print proto"
for f in linear_step.hlo mlp_step.hlo; do
	"$NXCC" compile "$D/$f" --no-cache -o "$T/x.neff" >/dev/null 2>&1 || fail "setup: $f does not compile alone"
done

check() { # report, python assertions on r (the report) and g (file basename -> graph)
	"$PY" - "$@" <<'PYEOF' || exit 1
import json, os, sys
r = json.load(open(sys.argv[1]))
assert set(r) == {"total", "compiled", "cached", "failed", "seconds", "graphs"}, r.keys()
for x in r["graphs"]:
    assert set(x) == {"file", "key", "status", "seconds", "retries", "error"}, x.keys()
    assert x["status"] in ("compiled", "cached", "failed"), x
    assert (x["error"] is None) == (x["status"] != "failed"), x
g = {os.path.basename(x["file"]): x for x in r["graphs"]}
assert r["total"] == len(r["graphs"])
for s in ("compiled", "cached", "failed"):
    assert r[s] == sum(1 for x in r["graphs"] if x["status"] == s), (s, r)
for a in sys.argv[2:]:
    assert eval(a), (a, json.dumps(r, indent=1))
PYEOF
}

C="$T/cache"
cd "$T" || exit 1
# 1. first run: 6 graphs (dup.hlo is mlp_step.hlo; the .txt twin of the proto
# dump, the after-optimization dump, buffer assignment and LLVM IR skipped)
"$NXCC" parallel-compile --jobs 2 --cache-dir "$C" "$D" > out1 2> err1
rc=$?
[ $rc -eq 1 ] || fail "exit status $rc with a failed graph (want 1): $(cat out1 err1)"
check compilation_report.json \
	'r["total"] == 6 and r["compiled"] == 5 and r["failed"] == 1 and r["cached"] == 0' \
	'"dup.hlo" not in g and "mlp_step.hlo" in g' \
	'"module_0002.SyncTensorsGraph.9.before_optimizations.hlo.pb" in g' \
	'"module_0002.SyncTensorsGraph.9.before_optimizations.txt" not in g' \
	'"module_0001.SyncTensorsGraph.7.before_optimizations.txt" in g and "model.hlo_module.pb" in g' \
	'g["bad.hlo"]["status"] == "failed" and "bad.hlo:" in g["bad.hlo"]["error"] and g["bad.hlo"]["key"] is None' \
	'all(x["key"].startswith("MODULE_") for x in r["graphs"] if x["status"] != "failed")' \
	|| fail "first report: $(cat compilation_report.json)"
grep -q "same graph as" err1 || fail "duplicate not mentioned: $(cat err1)"
grep -q "total 6, compiled 5, cached 0, failed 1" out1 || fail "summary: $(cat out1)"
# the cache holds exactly the 5 compiled graphs
n=$("$NXCC" cache list --cache-dir "$C" | grep -c '^done')
[ "$n" -eq 5 ] || fail "cache has $n done entries, want 5"

# 2. second run: everything that compiled is a hit; no worker needed
"$NXCC" parallel-compile --jobs 2 --cache-dir "$C" --report r2.json "$D" > out2 2> err2
[ $? -eq 1 ] || fail "second run exit status"
check r2.json 'r["total"] == 6 and r["cached"] == 5 and r["compiled"] == 0 and r["failed"] == 1' \
	|| fail "second report: $(cat r2.json)"
rm "$D/bad.hlo"
"$NXCC" parallel-compile --cache-dir "$C" --report r3.json "$D" > out3 2>&1 || fail "all cached, exit status: $(cat out3)"
check r3.json 'r["total"] == 5 and r["cached"] == 5' || fail "third report"

# 3. --shard 0/2 and 1/2 cover every graph exactly once
for i in 0 1; do
	"$NXCC" parallel-compile --jobs 2 --cache-dir "$T/shard-cache" --shard $i/2 --report s$i.json "$D" > so$i 2>&1 \
		|| fail "shard $i: $(cat so$i)"
done
"$PY" - s0.json s1.json compilation_report.json <<'PYEOF' || fail "shards do not partition the graphs"
import json, sys
a, b, full = (json.load(open(p)) for p in sys.argv[1:])
ka = {x["key"] for x in a["graphs"]}; kb = {x["key"] for x in b["graphs"]}
want = {x["key"] for x in full["graphs"] if x["key"]}
assert not (ka & kb), (ka, kb)
assert ka | kb == want, (ka, kb, want)
assert a["compiled"] + b["compiled"] == 5
PYEOF
"$NXCC" parallel-compile --shard 2/2 "$D" > /dev/null 2>&1 && fail "--shard 2/2 accepted"

# 4. a hanging compile is killed by --timeout (each attempt), the rest succeed
start=$(date +%s)
NXCC_TEST_HOOKS=1 NXCC_TEST_HANG_ON=linear_step.hlo "$NXCC" parallel-compile --jobs 2 --timeout 1 --retries 1 \
	--cache-dir "$T/hang-cache" --report h.json "$D" > ho 2> he
rc=$?
dt=$(( $(date +%s) - start ))
[ $rc -eq 1 ] || fail "hang: exit status $rc: $(cat ho he)"
[ $dt -lt 30 ] || fail "hang: took ${dt}s"
check h.json 'r["total"] == 5 and r["compiled"] == 4 and r["failed"] == 1' \
	'g["linear_step.hlo"]["status"] == "failed" and "timed out" in g["linear_step.hlo"]["error"]' \
	'g["linear_step.hlo"]["retries"] == 1' || fail "hang report: $(cat h.json)"
ps -eo args | grep -F "$D/linear_step.hlo" | grep -v grep && fail "a killed compile is still running"

# 5. -- COMMAND: a fake training script dumps where XLA_FLAGS says
cat > train.sh <<SH
#!/bin/sh
dir=\$(echo "\$XLA_FLAGS" | sed -n 's/.*--xla_dump_to=\([^ ]*\).*/\1/p')
echo "\$XLA_FLAGS" | grep -q -- --xla_dump_hlo_as_proto || exit 3
mkdir -p "\$dir"
"$NXCC" print "$NX_ROOT/examples/mlp_step.hlo" --format proto -o "\$dir/module_0003.SyncTensorsGraph.5.before_optimizations.hlo.pb"
cp "$EV/add_s64/module.hlo" "\$dir/module_0003.SyncTensorsGraph.5.after_optimizations.txt"
echo "training step 1 loss 0.5"
SH
chmod +x train.sh
XLA_FLAGS=--xla_foo "$NXCC" parallel-compile --cache-dir "$T/cmd-cache" --xla-dump-dir "$T/xd" --report c.json -- ./train.sh > co 2> ce \
	|| fail "-- COMMAND: $(cat co ce)"
grep -q "training step 1" co || fail "the command's output is not shown"
check c.json 'r["total"] == 1 and r["compiled"] == 1' || fail "-- COMMAND report: $(cat c.json)"
grep -q -- "--xla_foo --xla_dump_to=" ce || fail "XLA_FLAGS not extended: $(cat ce)"

# 6. usage errors
"$NXCC" parallel-compile --jobs 0 "$D" >/dev/null 2>&1 && fail "--jobs 0 accepted"
"$NXCC" parallel-compile --target trn9 "$D" >/dev/null 2>&1 && fail "bad compile flag accepted"
"$NXCC" parallel-compile --output x.neff "$D" >/dev/null 2>&1 && fail "--output accepted"
"$NXCC" parallel-compile "$T/empty-nothing" >/dev/null 2>&1 && fail "missing input accepted"
echo "parallel-compile: ok"
