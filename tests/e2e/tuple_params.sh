#!/bin/sh
# A tuple entry parameter (tests/e2e/ops/tuple_param.hlo) is one .neff input
# per leaf, named <param>.<i>[.<j>]; `nxcc run --random-inputs S` on the
# .neff and `nxcc eval --random-inputs S` on the module give the same data,
# so byte-identical outputs here (only adds and multiplies of the inputs).
set -u
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
F="$NX_ROOT/tests/e2e/ops/tuple_param.hlo"
"$NXCC" compile "$F" --framework XLA --target trn1 --no-cache -o "$T/t.neff" > "$T/log" 2>&1 || fail "compile: $(cat "$T/log")"
ins=$("$NXCC" inspect "$T/t.neff" | awk '$1 == "input" {printf "%s ", $2}')
[ "$ins" = "state.0 state.1.0 state.1.1 state.2 x " ] || fail "inputs: $ins"
"$NXCC" inspect "$T/t.neff" | grep -q "output   output1 .* aliases input 1" || fail "alias of {1, 0} is not input 1"
"$NXCC" eval "$F" --random-inputs 7 --output-dir "$T/ev" > "$T/log" 2>&1 || fail "eval: $(cat "$T/log")"
"$NXCC" run "$T/t.neff" --random-inputs 7 --output-dir "$T/rn" > "$T/log" 2>&1 || fail "run: $(cat "$T/log")"
for k in 0 1; do
	cmp -s "$T/ev/out$k.npy" "$T/rn/out$k.npy" || fail "out$k differs between eval and run"
done
echo "ok: tuple parameter leaves are inputs; eval and run agree"

# nxcc eval addresses a tuple parameter's leaves as the .neff does: --input
# by leaf name (state.1.0) or leaf number, --save-inputs writes in<k>.npy per
# leaf (k = .neff input index), and those files fed back by number give the
# same outputs; the tuple's own name is refused naming a leaf.
PY=""
for c in /usr/bin/python3 python3; do "$c" -c "import numpy" 2>/dev/null && { PY=$c; break; }; done
[ -n "$PY" ] || fail "no python3 with numpy"
F2="$NX_ROOT/tests/e2e/ops/tuple_param_train.hlo"
"$PY" -c "import numpy as np; np.save('$T/b.npy', np.arange(4, dtype=np.float32) * 0.5 - 1)"
"$NXCC" eval "$F2" --input state.1.0="$T/b.npy" --random-inputs 3 --save-inputs --output-dir "$T/e1" > "$T/log" 2>&1 ||
	fail "eval --input state.1.0: $(cat "$T/log")"
for k in 0 1 2 3; do [ -f "$T/e1/in$k.npy" ] || fail "--save-inputs wrote no in$k.npy: $(ls "$T/e1")"; done
[ ! -e "$T/e1/in4.npy" ] || fail "--save-inputs wrote more inputs than leaves"
"$PY" - "$T" <<'PY' || fail "saved inputs"
import sys, numpy as np
T = sys.argv[1]
b, i1 = np.load(T + "/b.npy"), np.load(T + "/e1/in1.npy")
assert i1.dtype == np.float32 and (i1 == b).all(), "in1 (state.1.0) is not the given file: %r" % i1
assert np.load(T + "/e1/in0.npy").shape == (8, 4) and np.load(T + "/e1/in2.npy").dtype == np.int32
assert np.load(T + "/e1/in3.npy").shape == (16, 8)
# b1 = b - lr * sum_rows(e): the given bias moved by the step
assert np.load(T + "/e1/out2.npy").shape == (4,)
assert np.load(T + "/e1/out3.npy") == np.load(T + "/e1/in2.npy") + 1, "step counter"
PY
"$NXCC" eval "$F2" --input 0="$T/e1/in0.npy" --input 1="$T/e1/in1.npy" --input 2="$T/e1/in2.npy" \
	--input x="$T/e1/in3.npy" --output-dir "$T/e2" > "$T/log" 2>&1 || fail "eval of the saved leaves: $(cat "$T/log")"
for k in 0 1 2 3; do cmp -s "$T/e1/out$k.npy" "$T/e2/out$k.npy" || fail "out$k differs when the saved leaves are fed back"; done
"$NXCC" eval "$F2" --input state="$T/b.npy" --random-inputs 3 > "$T/log" 2>&1 && fail "--input of a whole tuple accepted"
grep -q "input state: a tuple parameter; give each array leaf its own --input (state.0" "$T/log" ||
	fail "tuple --input message: $(cat "$T/log")"
echo "ok: eval --input / --save-inputs address tuple leaves"

# nxcc train: the aliased outputs feed the tuple's leaves back, DIR/<leaf>.npy
# sets a leaf's initial value, and the simulator follows the evaluator's loop.
mkdir -p "$T/d"
cp "$T/b.npy" "$T/d/state.1.0.npy"
"$NXCC" train "$F2" --steps 20 --data "$T/d" --no-cache --report "$T/r" > "$T/log" 2>&1 || fail "train: $(cat "$T/log")"
grep -q "input 1 state.1.0 .*state (fed back), $T/d/state.1.0.npy" "$T/log" || fail "train plan: $(cat "$T/log")"
grep -q "input 2 state.1.1 .*state (fed back)" "$T/log" || fail "train plan: $(cat "$T/log")"
"$PY" - "$T/r/train.csv" <<'PY' || fail "train losses"
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
assert rows[0] == ["step", "f32_baseline", "simulator"], rows[0]
b = [float(r[1]) for r in rows[1:]]; s = [float(r[2]) for r in rows[1:]]
assert len(b) == 20
for k, (x, y) in enumerate(zip(b, s)):
    assert abs(x - y) <= 4 * 2.0 ** -23 * 128 * (k + 1) * abs(x), (k, x, y)
assert sum(b[-5:]) < sum(b[:5]), "the loss does not decrease: %r" % b
PY
echo "ok: train feeds a tuple parameter's leaves back"
