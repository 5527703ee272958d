#!/bin/bash
# tests/e2e/autocast_preserve.sh — auto-cast keeps results within the
# numerical budget `nxcc check` applies (compiler/cmd_check.c,
# docs/numerics.md): for every corpus module the evaluator can run within
# --max-memory, evaluates the module and `nxcc opt -O2 --auto-cast MODE
# --auto-cast-type TYPE` of it on the same inputs (the reference run's saved
# inputs) and checks each output: floats by relative L2 error
# ||got - ref|| / ||ref|| <= 32 unit roundoffs of TYPE (bf16: 32*2^-8,
# fp16: 32*2^-11), integers and pred exactly.
# Configurations: all/bf16, matmult/bf16, all/fp16.
# AUTOCAST_FILTER=substring limits the modules; AUTOCAST_CORPUS=all also runs
# the xla-evaluator cases (default: the torch-neuronx training graphs).
ROOT=${NX_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
NXCC=${NXCC:-$ROOT/build/nxcc}
CORPUS=${NX_CORPUS:-$ROOT/../shared/corpus}
MAXMEM=${AUTOCAST_MAX_MEMORY:-256000000}
PY=/usr/bin/python3
[ -x "$PY" ] && "$PY" -c 'import numpy' 2>/dev/null || { echo "SKIP: /usr/bin/python3 with numpy is needed"; exit 0; }
[ -d "$CORPUS/hlo/torch-neuronx" ] || { echo "SKIP: no corpus at $CORPUS"; exit 0; }
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT

cat >"$T/cmp.py" <<'PY'
# usage: cmp.py REFDIR REFTYPES OUTDIR BOUND
# REFTYPES: the reference eval's stdout ("out0: f32[4] ..." per output), which
# says the element type (bf16 is stored as '<u2' words).
import sys, os, re
import numpy as np
ref, types, out, bound = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
ty = {}
for line in open(types):
    m = re.match(r'(out\d+): (\w+)\[', line)
    if m:
        ty[m.group(1)] = m.group(2)
def load(p, t):
    a = np.atleast_1d(np.load(p))
    if t == 'bf16':
        return (a.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return a
bad, worst = 0, 0.0
for f in sorted(x for x in os.listdir(ref) if x.startswith('out') and x.endswith('.npy')):
    k = f[:-4]
    t = ty.get(k, '?')
    g = os.path.join(out, f)
    if not os.path.exists(g):
        print('%s: missing in the auto-cast run' % f); bad += 1; continue
    x, y = load(os.path.join(ref, f), t), load(g, t)
    if x.shape != y.shape:
        print('%s: shape %s vs %s' % (f, x.shape, y.shape)); bad += 1; continue
    if t in ('f32', 'f64', 'f16', 'bf16'):
        x = x.astype(np.float64).ravel(); y = y.astype(np.float64).ravel()
        fx, fy = np.isfinite(x), np.isfinite(y)
        if not np.array_equal(fx, fy) or not np.array_equal(x[~fx], y[~fy], equal_nan=True):
            print('%s (%s): non-finite values differ' % (f, t)); bad += 1; continue
        x, y = x[fx], y[fy]
        den = np.sqrt(np.sum(x * x)); num = np.sqrt(np.sum((x - y) ** 2))
        rel = num / den if den > 0 else num
        worst = max(worst, rel)
        if rel > bound:
            print('%s (%s): relative L2 error %.3g > %.3g' % (f, t, rel, bound)); bad += 1
    elif x.tobytes() != y.tobytes():
        print('%s (%s): integer/pred output differs' % (f, t)); bad += 1
print('worst %.3g' % worst, file=sys.stderr)
sys.exit(1 if bad else 0)
PY

# Known to exceed the bound, with the reason (docs/numerics.md "Auto-cast"):
# the Adam second moments of these BERT graphs are squared gradients around
# 1e-12, below fp16's smallest subnormal (6e-8): `all`/fp16 flushes them to 0.
# An entry that starts passing fails the test (XPASS) so the list stays true.
xfail="hlo/torch-neuronx/bert__bert_dp_graph_3.hlo:all/fp16
hlo/torch-neuronx/bert__bert_single_graph_3.hlo:all/fp16"
is_xfail() { echo "$xfail" | grep -qxF "$1"; }

mods="$CORPUS/hlo/torch-neuronx/*.hlo"
[ "${AUTOCAST_CORPUS:-}" = all ] && mods="$mods $CORPUS/xla-evaluator/*/module.hlo"
pass=0; skip=0; fail=0; xf=0
for f in $mods; do
	case "$f" in *"${AUTOCAST_FILTER:-}"*) ;; *) continue ;; esac
	rep=1
	[ -f "$(dirname "$f")/replicas.txt" ] && rep=$(tr -dc 0-9 <"$(dirname "$f")/replicas.txt")
	name=${f#"$CORPUS"/}
	rm -rf "$T"/ref "$T"/out "$T"/*.hlo
	ev() { timeout 120 "$NXCC" eval "$1" --random-inputs 7 --replicas "$rep" --max-memory "$MAXMEM" \
		--output-dir "$2" $3 >"$T/stdout" 2>"$T/err"; }
	if ! ev "$f" "$T/ref" --save-inputs; then
		skip=$((skip + 1)); continue # too big, or the evaluator cannot run it
	fi
	cp "$T/stdout" "$T/types"
	inputs=""
	indir="$T/ref"; outsub=""
	[ "$rep" -gt 1 ] && indir="$T/ref/replica0" && outsub="/replica0"
	for inp in "$indir"/in*.npy; do
		[ -f "$inp" ] || continue
		k=${inp##*/in}; k=${k%.npy}
		inputs="$inputs --input $k=$inp"
	done
	for cfg in all:bf16:8 matmult:bf16:8 all:fp16:11; do
		mode=${cfg%%:*}; rest=${cfg#*:}; type=${rest%%:*}; bits=${rest#*:}
		bound=$("$PY" -c "print(32 * 2.0 ** -$bits)")
		if ! "$NXCC" opt "$f" -O2 --auto-cast "$mode" --auto-cast-type "$type" --verify-each \
			-o "$T/ac.hlo" 2>"$T/err"; then
			echo "FAIL $name $mode/$type: opt failed: $(head -3 "$T/err")"; fail=$((fail + 1)); continue
		fi
		rm -rf "$T/out"
		if ! ev "$T/ac.hlo" "$T/out" "$inputs"; then
			# converts can keep both widths of a tensor live: over the limit is
			# "does not fit", not a failure
			if grep -q "needs more than --max-memory" "$T/err"; then
				echo "skip $name $mode/$type: the auto-cast module needs more than $MAXMEM bytes"
				continue
			fi
			echo "FAIL $name $mode/$type: eval of the auto-cast module failed: $(head -3 "$T/err")"
			fail=$((fail + 1)); continue
		fi
		if msg=$("$PY" "$T/cmp.py" "$T/ref$outsub" "$T/types" "$T/out$outsub" "$bound" 2>"$T/worst"); then
			if is_xfail "$name:$mode/$type"; then
				echo "XPASS $name $mode/$type: now within bounds, remove it from the xfail list"
				fail=$((fail + 1)); continue
			fi
			pass=$((pass + 1))
			[ -n "${AUTOCAST_VERBOSE:-}" ] && echo "ok   $name $mode/$type $(cat "$T/worst")"
		elif is_xfail "$name:$mode/$type"; then
			xf=$((xf + 1))
			echo "xfail $name $mode/$type (known: fp16 range): $(echo "$msg" | head -1)"
		else
			echo "FAIL $name $mode/$type: $(echo "$msg" | head -5) $(grep -v '^worst' "$T/worst" | tail -3)"
			fail=$((fail + 1))
		fi
	done
done
echo "autocast_preserve: $pass module-configurations within bounds, $fail not, $xf known failures, $skip modules skipped (too big or not evaluable)"
[ $fail -eq 0 ] && [ $pass -gt 0 ]
