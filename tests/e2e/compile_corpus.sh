#!/bin/sh
# Every corpus graph through `nxcc parallel-compile --no-cache` at -O1, -O2
# and -O3 for trn1 and trn2: the torch-neuronx directory (44 graphs) and the
# JAX directory (13). Only the graphs known not to fit fail, each with its
# known message (below), asserted by name per configuration. A newly failing
# graph, a known one failing differently (crash, timeout), or a known one that
# now compiles fails this test. No timing decides the result: --timeout is
# only a hang guard, far above the slowest graph (the report's slowest time
# is printed for the record).
#
# Measured on the shared 2-core machine (nice, --jobs 2, whole directory per
# configuration, wall, under the other agents' load): torch-neuronx 1-4 s
# at each of the six; JAX with colabfold: trn1 -O1 24-42 s, -O2 20-50 s,
# -O3 22-78 s, trn2 -O1 33 s, -O2 21-89 s, -O3 22-95 s. colabfold
# dominates every JAX run (15-73 s alone; 6.7 GB RSS and a 2 GB .neff at
# -O1, 4 GB RSS at -O2/-O3: its 11 while loops are unrolled); the other 12
# JAX graphs take 5-25 s a configuration, stable_diffusion (refused after
# 10-25 s) most of it. On main ab3b317 with less load: the whole test
# 256 s wall, 126 s user + 60 s sys, 7.6 GB peak RSS (colabfold -O1).
#
# Not covered here, to keep `make test` short: colabfold is compiled at one
# configuration per level, each target at least once (trn1 -O1, trn1 -O2,
# trn2 -O3), not at trn1 -O3, trn2 -O1, trn2 -O2. The passes of a level
# do not depend on the target, and the backend's target differences (HBM
# size, engine tables) are exercised by the other 12 JAX graphs and the 44
# torch graphs at all six. NX_CORPUS_MATRIX=full (`make corpus-matrix`)
# compiles colabfold at all six too, so the full matrix is 6 x 44 + 6 x 13
# graphs (all pass: trn2 -O1 colabfold in 31 s, trn2 -O2 67 s, trn1 -O3
# 59 s).
set -u
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
C="$NX_CORPUS/hlo/torch-neuronx"
J="$NX_CORPUS/hlo/jax"
[ -d "$C" ] || fail "corpus not found at $C"
[ -d "$J" ] || fail "corpus not found at $J"
PY=/usr/bin/python3; [ -x "$PY" ] || PY=python3
FULL=${NX_CORPUS_MATRIX:-}
# The report check: python3 check.py REPORT COUNT KNOWN_JSON, KNOWN_JSON
# mapping a graph's file name to its known refusals, each a list of strings
# the message must all contain (any one refusal will do).
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
        elif not any(all(k in (g.get("error") or "") for k in alt) for alt in known[name]):
            bad.append((name, g.get("error")))
    elif not ok:
        bad.append((name, g.get("error") or st))
assert not bad, "unexpected results: %r" % bad
slow = max(gs, key=lambda g: g.get("seconds") or 0)
print("slowest: %s %.1f s; run %.1f s" % (os.path.basename(slow.get("path") or slow.get("file") or ""),
      slow.get("seconds") or 0, r.get("seconds") or 0))
PYEOF

J_DS="vision_diffusion__stable_diffusion_1_5__inference__1gpu__module_0047.jit__fun.hlo"
J_CF="science__colabfold__inference__1gpu__module_0200.jit_apply_fn.hlo"
n=0
for t in trn1 trn2; do
	# too large for one core's HBM (16 GiB trn1, 12 GiB trn2): refused
	# before emitting, the message naming the target
	HBM="[[\"HBM plan needs\", \" $t \"]]"
	for o in -O1 -O2 -O3; do
		# llama2_dp1_tp1_pp1: a fused pred[1024,4096,32000] value of 134 GB.
		"$NXCC" parallel-compile "$C" --target $t $o --jobs 2 --no-cache --timeout 900 \
			--report "$T/r.json" > "$T/log" 2>&1
		printf '%s %s torch-neuronx: ' $t $o
		"$PY" "$T/check.py" "$T/r.json" 44 "{\"llama2__llama2_dp1_tp1_pp1.hlo\": $HBM}" ||
			{ tail -5 "$T/log"; fail "torch-neuronx $t $o report"; }
		n=$((n + 44))

		# The JAX corpus: the reader takes every module (stack-frame tables,
		# elided constants, sharding custom calls, call); lit, efficientnet,
		# mlp_mixer, resnet50, vit and colabfold compile. gpt_j, llama3 x4
		# and mixtral: their parameters alone exceed the core's HBM.
		# stable_diffusion: its denoising while loop, unrolled, exceeds the
		# per-engine instruction limit (no device loops yet), or at -O1
		# (no buffer sharing across the unrolled trips) its HBM plan, 95 GB,
		# is refused first: which one comes first moves with the backend's
		# kernels (main at 9dd8c3a: HBM at -O1; at ab3b317: the limit).
		DS="[[\"HBM plan needs\", \" $t \"], [\"the program would need more than 2097152 instructions on one engine\"]]"
		files=$(ls "$J"/*.hlo)
		count=13
		case "$FULL $t$o" in
		full*|*"trn1-O1"|*"trn1-O2"|*"trn2-O3") cf=1 ;;
		*) cf=0 ;;
		esac
		if [ $cf = 0 ]; then
			files=$(echo "$files" | grep -v "/$J_CF\$")
			count=12
		fi
		"$NXCC" parallel-compile $files --target $t $o --jobs 2 --no-cache --timeout 2400 \
			--report "$T/j.json" > "$T/jlog" 2>&1
		J_KNOWN="{
 \"large_language_models__gpt_j_6b__inference__1gpu__module_0218.jit_predict_step.hlo\": $HBM,
 \"large_language_models__llama3_8b__inference__1gpu__module_0087.jit__prefill_jit.hlo\": $HBM,
 \"large_language_models__llama3_8b__inference__1gpu__module_2266.jit__generate_jit.hlo\": $HBM,
 \"large_language_models__llama3_8b__inference__8gpu__module_0035.jit__prefill_jit.hlo\": $HBM,
 \"large_language_models__llama3_8b__training__module_0099.jit_train_step.hlo\": $HBM,
 \"large_language_models__mixtral_8x7b__inference__1gpu__module_0036.jit__prefill_jit.hlo\": $HBM,
 \"$J_DS\": $DS}"
		printf '%s %s jax (%d graphs): ' $t $o $count
		"$PY" "$T/check.py" "$T/j.json" $count "$J_KNOWN" || { tail -5 "$T/jlog"; fail "jax $t $o report"; }
		n=$((n + count))
	done
done
echo "ok: $n graph compiles over trn1/trn2 x -O1/-O2/-O3, failures only among the known ones"
