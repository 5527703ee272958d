#!/bin/sh
# nxcc eval on a real torch-neuronx training step (mini MLP + SGD): outputs
# are finite, pass-through outputs equal their inputs, and the SGD update
# holds: out0 = p3 + p0*out7 and out1 = p2 + p0*out6 (p0 = -lr, out6/out7 the
# gradients the graph also returns). Then --random-inputs is deterministic.
set -e
HLO="$NX_CORPUS/hlo/torch-neuronx/mlp__mini_mlp_single.hlo"
[ -f "$HLO" ] || { echo "skip: no corpus"; exit 0; }
PY=""
for c in /usr/bin/python3 python3; do "$c" -c "import numpy" 2>/dev/null && { PY=$c; break; }; done
[ -n "$PY" ] || { echo "FAIL: no python3 with numpy (make deps installs python3-numpy)"; exit 1; }
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
"$PY" - "$T" <<'PY'
import numpy as np, sys
d = sys.argv[1]; r = np.random.default_rng(7)
np.save(d + "/p0.npy", np.array(-0.1, dtype=np.float32))
np.save(d + "/p1.npy", r.integers(0, 10, 32).astype(np.int64))
np.save(d + "/p2.npy", r.uniform(-1, 1, 10).astype(np.float32))
np.save(d + "/p3.npy", r.uniform(-0.1, 0.1, (10, 784)).astype(np.float32))
np.save(d + "/p4.npy", r.uniform(0, 1, (32, 784)).astype(np.float32))
PY
"$NXCC" eval "$HLO" --input 0="$T/p0.npy" --input input1="$T/p1.npy" --input p2.7="$T/p2.npy" \
	--input input3="$T/p3.npy" --input 4="$T/p4.npy" --output-dir "$T/out"
"$PY" - "$T" <<'PY'
import numpy as np, sys
d = sys.argv[1]; o = lambda k: np.load(f"{d}/out/out{k}.npy"); p = lambda k: np.load(f"{d}/p{k}.npy")
for k in range(8):
    assert np.all(np.isfinite(o(k))), f"out{k} not finite"
assert np.array_equal(o(2), p(4)) and np.array_equal(o(3), p(1)), "pass-through outputs differ"
lr = p(0)
assert np.array_equal(o(0), (p(3) + lr * o(7)).astype(np.float32)), "SGD update of the weight"
assert np.array_equal(o(1), (p(2) + lr * o(6)).astype(np.float32)), "SGD update of the bias"
assert np.abs(o(7)).max() > 0, "zero gradient"
print("mlp SGD update ok")
PY
"$NXCC" eval "$HLO" --random-inputs 1 --output-dir "$T/a" >/dev/null
"$NXCC" eval "$HLO" --random-inputs 1 --output-dir "$T/b" >/dev/null
"$NXCC" eval "$HLO" --random-inputs 2 --output-dir "$T/c" >/dev/null
cmp "$T/a/out0.npy" "$T/b/out0.npy"
! cmp -s "$T/a/out0.npy" "$T/c/out0.npy"
# a parameter without data is an error naming it
! "$NXCC" eval "$HLO" 2>"$T/err"
grep -q "p0.1" "$T/err"
echo ok
