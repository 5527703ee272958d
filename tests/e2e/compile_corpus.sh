#!/bin/sh
# Every corpus graph through `nxcc parallel-compile --no-cache`: the
# torch-neuronx directory (all 44 graphs) and the JAX directory (13). Only
# the graphs known not to lower fail, each with its known message (below). A
# newly failing graph, a known one failing differently (crash, timeout), or a
# known one that now compiles fails this test. No timing decides the result:
# --timeout is only a hang guard, far above the slowest graph (the report's
# slowest time is printed for the record).
set -u
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
C="$NX_CORPUS/hlo/torch-neuronx"
[ -d "$C" ] || fail "corpus not found at $C"
PY=/usr/bin/python3; [ -x "$PY" ] || PY=python3
# The report check, shared by both directories: python3 check.py REPORT
# COUNT KNOWN_JSON, KNOWN_JSON mapping a graph's file name to the messages
# (any one of them) its refusal must contain.
cat > "$T/check.py" <<'PYEOF'
import json, sys, os
r = json.load(open(sys.argv[1]))
count, known = int(sys.argv[2]), json.loads(sys.argv[3])
gs = r.get("graphs") or r.get("results") or []
assert len(gs) == count, "report lists %d graphs, not %d" % (len(gs), count)
bad = []
for g in gs:
    name = os.path.basename(g.get("path") or g.get("file") or "")
    st = g.get("status") or g.get("result")
    ok = st in ("compiled", "cached", "ok")
    if name in known:
        if ok:
            bad.append((name, "now compiles: remove it from the known list"))
        elif not any(k in (g.get("error") or "") for k in known[name]):
            bad.append((name, g.get("error")))
    elif not ok:
        bad.append((name, g.get("error") or st))
assert not bad, "unexpected results: %r" % bad
slow = max(gs, key=lambda g: g.get("seconds") or 0)
print("slowest: %s %.1f s" % (os.path.basename(slow.get("path") or slow.get("file") or ""), slow.get("seconds") or 0))
PYEOF
# graphs too large for one trn1 core's 16 GiB of HBM: refused before emitting
HBM='["HBM plan needs at least", "bytes of HBM of one trn1 core"]'

# llama2_dp1_tp1_pp1: a fused pred[1024,4096,32000] value of 134 GB.
"$NXCC" parallel-compile "$C" --jobs 2 --no-cache --timeout 900 --report "$T/r.json" > "$T/log" 2>&1
"$PY" "$T/check.py" "$T/r.json" 44 "{\"llama2__llama2_dp1_tp1_pp1.hlo\": $HBM}" ||
	{ tail -5 "$T/log"; fail "report"; }
echo "ok: 44 graphs, failures only among the known ones"

# The JAX corpus (../shared/corpus/hlo/jax): the reader takes every module
# (stack-frame tables, elided constants, sharding custom calls, call); the
# backend refuses what it does not lower yet, each graph with its known
# message, which names the op and the user's source (issue 11's table in
# the closing notes of issue 11). lit, efficientnet, mlp_mixer, resnet50 and
# vit compile (conv-to-dot, op-expand); colabfold and stable_diffusion compile
# with their big counted loops as device loops (backend/lower_while.c). The
# timeout is only a hang guard.
J="$NX_CORPUS/hlo/jax"
[ -d "$J" ] || fail "corpus not found at $J"
"$NXCC" parallel-compile "$J" --jobs 2 --no-cache --timeout 2400 --report "$T/j.json" > "$T/jlog" 2>&1
# gpt_j, llama3 x4 and mixtral: their parameters alone exceed the core's HBM.
J_KNOWN="{
 \"large_language_models__gpt_j_6b__inference__1gpu__module_0218.jit_predict_step.hlo\": $HBM,
 \"large_language_models__llama3_8b__inference__1gpu__module_0087.jit__prefill_jit.hlo\": $HBM,
 \"large_language_models__llama3_8b__inference__1gpu__module_2266.jit__generate_jit.hlo\": $HBM,
 \"large_language_models__llama3_8b__inference__8gpu__module_0035.jit__prefill_jit.hlo\": $HBM,
 \"large_language_models__llama3_8b__training__module_0099.jit_train_step.hlo\": $HBM,
 \"large_language_models__mixtral_8x7b__inference__1gpu__module_0036.jit__prefill_jit.hlo\": $HBM}"
"$PY" "$T/check.py" "$T/j.json" 13 "$J_KNOWN" || { tail -5 "$T/jlog"; fail "jax report"; }
echo "ok: 13 jax graphs, failures only among the known ones"
