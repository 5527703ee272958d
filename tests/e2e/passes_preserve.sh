#!/bin/bash
# tests/e2e/passes_preserve.sh — the optimization pipelines preserve meaning.
# For every corpus module whose tensors fit in --max-memory (the evaluator
# refuses the llama/gpt giants with "needs N bytes"), evaluates the module
# before and after `nxcc opt -O1`, `-O2`, `-O3` (with --verify-each and
# --check-changed: a pass that says "unchanged" must print the same module)
# on the same random inputs and
# compares the outputs: integers and pred bitwise, f32/f64 within a
# tolerance (the simplifier reassociates nothing, but batchnorm-expand
# computes in f32 where the evaluator uses double), bf16 and f16 within their
# own tolerance (batchnorm-expand computes them in f32 and rounds once, the
# evaluator in double: the two may differ by a rounding of the result);
# the .npy files store bf16 as integer words, so the types come from
# `nxcc eval`'s summary lines. NaN == NaN and -0 == +0.
# Besides the corpus: tests/e2e/preserve/*.hlo (bf16 layer norm through
# batch-norm-training, bf16 softmax and sums: mixed-precision accumulation).
# PRESERVE_FILTER=substring limits the modules (for debugging).
ROOT=${NX_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
NXCC=${NXCC:-$ROOT/build/nxcc}
CORPUS=${NX_CORPUS:-$ROOT/../shared/corpus}
MAXMEM=${PRESERVE_MAX_MEMORY:-536870912}
command -v python3 >/dev/null || { echo "SKIP: python3 is needed to compare .npy outputs"; exit 0; }
[ -d "$CORPUS" ] || { echo "SKIP: no corpus at $CORPUS"; exit 0; }
"$NXCC" eval --help >/dev/null 2>&1 || { echo "SKIP: nxcc eval missing"; exit 0; }
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT

cat >"$T/cmp.py" <<'PY'
# Compares the .npy files of two directories without numpy (not installed
# everywhere): parses the header, then compares raw bytes, and only when those
# differ, floats element by element.
import sys, os, ast, struct, math
def load(p):
    d = open(p, 'rb').read()
    assert d[:6] == b'\x93NUMPY', p
    hl = struct.unpack('<H', d[8:10])[0] if d[6] == 1 else struct.unpack('<I', d[8:12])[0]
    off = 10 if d[6] == 1 else 12
    h = ast.literal_eval(d[off:off + hl].decode('latin1'))
    return h['descr'], tuple(h['shape']), d[off + hl:]
def types(d):
    # "out0: bf16[4,8]  min ..." lines of nxcc eval, saved as <dir>.log
    t = {}
    try:
        for line in open(d + '.log'):
            k, _, rest = line.partition(': ')
            if k.startswith('out'):
                t[k + '.npy'] = rest.split('[')[0].strip()
    except OSError:
        pass
    return t
def words(raw, ty):
    # bf16 / f16 words as floats
    n = len(raw) // 2
    w = struct.unpack('<%dH' % n, raw)
    if ty == 'bf16':
        return [struct.unpack('<f', struct.pack('<I', v << 16))[0] for v in w]
    return list(struct.unpack('<%de' % n, raw))
def compare(a, b):
  ta = types(a)
  fa = sorted(f for f in os.listdir(a) if f.endswith('.npy') and f.startswith('out'))
  fb = sorted(f for f in os.listdir(b) if f.endswith('.npy') and f.startswith('out'))
  if fa != fb:
    return "different outputs: %s vs %s" % (fa, fb)
  for f in fa:
      (dx, sx, x), (dy, sy, y) = load(os.path.join(a, f)), load(os.path.join(b, f))
      if (dx, sx) != (dy, sy):
          return "%s: %s %s vs %s %s" % (f, dx, sx, dy, sy)
      if x == y:
          continue
      kind, size = dx[1], int(dx[2:])
      ty = ta.get(f, '')
      if ty in ('bf16', 'f16'):
          # two units in the last place of the type, plus one of the
          # output's scale for results of a cancellation
          ulp = 2.0 ** (-7 if ty == 'bf16' else -10)
          vx, vy = words(x, ty), words(y, ty)
          scale = max([abs(v) for v in vx if not math.isnan(v) and not math.isinf(v)] + [0.0])
          bad = [i for i in range(len(vx)) if not (vx[i] == vy[i] or (math.isnan(vx[i]) and math.isnan(vy[i])) or
                 abs(vx[i] - vy[i]) <= 2 * ulp * abs(vx[i]) + ulp * scale)]
          if bad:
              i = bad[0]
              return "%s: %d of %d %s values differ beyond bf16/f16 tolerance, first at %d: %r vs %r" % (f, len(bad), len(vx), ty, i, vx[i], vy[i])
          continue
      if kind not in 'fc':
          return "%s: integer outputs differ (%s)" % (f, dx)
      code = {2: 'e', 4: 'f', 8: 'd', 16: 'd'}[size]
      if kind == 'c':
          code = {8: 'f', 16: 'd'}[size]
      n = len(x) // struct.calcsize(code)
      vx = struct.unpack('<%d%s' % (n, code), x)
      vy = struct.unpack('<%d%s' % (n, code), y)
      # absolute slack relative to the output's scale: f32 sums over thousands
      # of terms differ in their last bits when the evaluator's batch-norm (in
      # double) becomes f32 reduces, and small outputs of a cancellation show it
      scale = max([abs(v) for v in vx if not math.isnan(v) and not math.isinf(v)] + [0.0])
      bad = 0
      for i in range(n):
          p, q = vx[i], vy[i]
          if p == q or (math.isnan(p) and math.isnan(q)):
              continue
          if abs(p - q) <= 1e-5 + 1e-4 * scale + 1e-3 * abs(p):
              continue
          if bad == 0:
              first = (i, p, q)
          bad += 1
      if bad:
          return "%s: %d of %d differ, first at %d: %r vs %r" % ((f, bad, n) + first)
  return None
bad = 0
for d in sys.argv[2:]:
    msg = compare(sys.argv[1], d)
    if msg:
        print('%s: %s' % (os.path.basename(d), msg)); bad = 1
sys.exit(bad)
PY

pass=0; skip=0; fail=0
for f in "$CORPUS"/hlo/torch-neuronx/*.hlo "$CORPUS"/xla-evaluator/*/module.hlo "$ROOT"/tests/e2e/preserve/*.hlo; do
	case "$f" in *"${PRESERVE_FILTER:-}"*) ;; *) continue ;; esac
	rep=1
	[ -f "$(dirname "$f")/replicas.txt" ] && rep=$(tr -dc 0-9 <"$(dirname "$f")/replicas.txt")
	name=${f#"$CORPUS"/}; name=${name#"$ROOT"/}
	rm -rf "$T"/ref* "$T"/out* "$T"/*.hlo
	ev() { timeout 60 "$NXCC" eval "$1" --random-inputs 7 --replicas "$rep" --max-memory "$MAXMEM" \
		--output-dir "$2" $3 >"$2.log" 2>"$T/err"; }
	if ! ev "$f" "$T/ref" --save-inputs; then
		skip=$((skip + 1)); continue # too big, or the evaluator cannot run it
	fi
	# The optimized modules get exactly the reference's inputs (the random
	# generator's domain analysis may see a rewritten graph differently).
	inputs=""
	indir="$T/ref"; [ "$rep" -gt 1 ] && indir="$T/ref/replica0"
	for inp in "$indir"/in*.npy; do
		[ -f "$inp" ] || continue
		k=${inp##*/in}; k=${k%.npy}
		inputs="$inputs --input $k=$inp"
	done
	"$NXCC" print "$f" -o "$T/orig.hlo" 2>/dev/null
	dirs=""; prev="$T/orig.hlo"; prevdir="$T/ref"
	for lvl in 1 2 3; do
		if ! "$NXCC" opt "$f" -O$lvl --verify-each --check-changed -o "$T/o$lvl.hlo" 2>"$T/err"; then
			echo "FAIL $name -O$lvl: opt failed: $(head -3 "$T/err")"; fail=$((fail + 1)); continue
		fi
		# an unchanged module needs no second evaluation
		if cmp -s "$T/o$lvl.hlo" "$prev"; then
			pass=$((pass + 1)); continue
		fi
		prev="$T/o$lvl.hlo"
		if ! ev "$T/o$lvl.hlo" "$T/out$lvl" "$inputs"; then
			echo "FAIL $name -O$lvl: eval of the optimized module failed: $(head -3 "$T/err")"
			fail=$((fail + 1)); continue
		fi
		dirs="$dirs $T/out$lvl"
	done
	if [ -n "$dirs" ]; then
		n=$(echo $dirs | wc -w)
		if msg=$(python3 "$T/cmp.py" "$T/ref" $dirs); then
			pass=$((pass + n))
		else
			echo "FAIL $name: $msg" | sed "s|$T/||g"; fail=$((fail + $(echo "$msg" | wc -l)))
			pass=$((pass + n - $(echo "$msg" | wc -l)))
		fi
	fi
done
echo "passes_preserve: $pass module-levels equal, $fail differ, $skip modules skipped (too big or not evaluable)"
[ $fail -eq 0 ] && [ $pass -gt 0 ]
