#!/bin/sh
# nxcc eval on the corpus's BERT training graphs with random inputs. Every
# graph whose values fit in 256 MiB (nxcc's own size check: parameters,
# results and the largest single value) must evaluate to finite outputs; the
# others must be refused with a "needs at least N bytes" message. For
# bert_single_graph_2 (grad-norm clipping + AdamW, see docs/numerics.md)
# the update of the word embedding is recomputed in numpy:
#   c  = min(1 / (||grads|| + eps), 1)       grads = p4..p33, eps = p2
#   m' = p38*p37 + (c*p33)*p36                (out31)
#   v' = p35*p34 + (c*p33)^2*p3               (out32)
#   w  = p39 + p1 * m' / (sqrt(v') + eps);  out0 = w + w*p0   (bit-exact)
set -e
DIR="$NX_CORPUS/hlo/torch-neuronx"
[ -f "$DIR/bert__bert_single_graph_2.hlo" ] || { echo "skip: no corpus"; exit 0; }
PY=""
for c in /usr/bin/python3 python3; do "$c" -c "import numpy" 2>/dev/null && { PY=$c; break; }; done
[ -n "$PY" ] || { echo "FAIL: no python3 with numpy (make deps installs python3-numpy)"; exit 1; }
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
CAP=268435456
ran=0; refused=0
for f in "$DIR"/bert__*.hlo; do
	b=$(basename "$f" .hlo)
	if "$NXCC" eval "$f" --random-inputs 1 --max-memory $CAP --save-inputs \
		--output-dir "$T/$b" >"$T/$b.out" 2>"$T/$b.err"; then
		if grep -q "non-finite" "$T/$b.out"; then
			echo "FAIL: $b has non-finite outputs:"; grep non-finite "$T/$b.out" | head; exit 1
		fi
		"$PY" -c "import numpy as np,glob,sys
fs=glob.glob(sys.argv[1]+'/out*.npy'); assert fs
for p in fs: assert np.all(np.isfinite(np.load(p))), p" "$T/$b"
		echo "$b: $(grep -c '^out' "$T/$b.out") finite outputs"
		ran=$((ran + 1))
	else
		grep -q "needs at least [0-9]* bytes" "$T/$b.err" || { echo "FAIL: $b:"; cat "$T/$b.err"; exit 1; }
		echo "$b: refused: $(cat "$T/$b.err")"
		refused=$((refused + 1))
	fi
done
[ "$ran" -ge 5 ] || { echo "FAIL: only $ran BERT graphs evaluated"; exit 1; }
[ -d "$T/bert__bert_single_graph_2" ] || { echo "FAIL: bert_single_graph_2 did not run"; exit 1; }

"$PY" - "$T/bert__bert_single_graph_2" <<'PY'
import numpy as np, sys
d = sys.argv[1]
o = lambda k: np.load(f"{d}/out{k}.npy"); p = lambda k: np.load(f"{d}/in{k}.npy")
eps = p(2)
assert (p(34) >= 0).all() and (p(35) >= 0).all() and eps >= 0, "second moment / beta2 / eps got negative random values"
norm = np.sqrt(sum(np.sum(p(k).astype(np.float64) ** 2) for k in range(4, 34)))
c = min(1.0 / (norm + float(eps)), 1.0)
g = p(33).astype(np.float64) * c
m = p(38) * np.float64(p(37)) + g * np.float64(p(36))
v = p(35) * np.float64(p(34)) + g * g * np.float64(p(3))
assert np.allclose(o(31), m, rtol=1e-5, atol=1e-7), "first moment"
assert np.allclose(o(32), v, rtol=1e-5, atol=1e-7), "second moment"
w = p(39) + p(1) * (o(31) / (np.sqrt(o(32)) + eps))
assert w.dtype == np.float32
upd = w + w * p(0)
assert np.array_equal(o(0), upd), "AdamW parameter update (max diff %g)" % np.abs(o(0) - upd).max()
assert not np.array_equal(o(0), p(39)), "parameter unchanged"
print("AdamW update of the word embedding ok, clip coefficient %.6g" % c)
PY
# one seed, one data set
"$NXCC" eval "$DIR/bert__bert_single_graph_2.hlo" --random-inputs 1 --output-dir "$T/again" >/dev/null
cmp "$T/again/out0.npy" "$T/bert__bert_single_graph_2/out0.npy"
# --trace-nonfinite names the instruction that creates a NaN: the optimizer
# with a negative second moment given explicitly
"$PY" -c "import numpy as np; np.save('$T/neg.npy', -np.ones((30522,16), np.float32))"
"$NXCC" eval "$DIR/bert__bert_single_graph_2.hlo" --random-inputs 1 --input 35="$T/neg.npy" \
	--trace-nonfinite >"$T/tr.out" 2>"$T/tr.err"
grep -q "first non-finite value: sqrt 'sqrt.371'" "$T/tr.err" || { cat "$T/tr.err"; exit 1; }
grep -q "operand 0 'add.370' f32\[30522,16\]: min -" "$T/tr.err" || { cat "$T/tr.err"; exit 1; }
echo "ok: $ran evaluated, $refused refused"
