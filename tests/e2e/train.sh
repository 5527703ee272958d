#!/bin/sh
# nxcc train on examples/train/mlp_train.hlo with the synthetic data of
# examples/train/make_data.py, 50 steps, four configurations (f32, auto-cast
# all bf16, --param-dtype bf16 with RNE and with stochastic rounding):
#  - the f32 run matches the evaluator baseline step for step, within the f32
#    tolerance of nxcc check (4 eps32 L, L = 32 the longest reduction) grown
#    by one such unit per step;
#  - every run's loss decreases (mean of the last 10 steps < half the first 10's);
#  - the CSV, summary and SVG are written (the SVG parses as XML, a polyline
#    per run);
#  - stochastic rounding is reproducible for one --sr-seed and differs for another;
#  - the simulator rounds a narrowing store stochastically: a .neff whose only
#    work is f32 -> bf16 of 1 + 2^-10 stores 1.0 under RNE and, with
#    NEURON_RT_STOCHASTIC_ROUNDING_EN=1, 1 + 2^-7 in about 1/8 of the elements;
#  - bad input: no aliased output, a stack of the wrong shape, no --steps.
set -e
PY=""
for c in /usr/bin/python3 python3; do "$c" -c "import numpy" 2>/dev/null && { PY=$c; break; }; done
[ -n "$PY" ] || { echo "FAIL: no python3 with numpy (make deps installs python3-numpy)"; exit 1; }
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
EX="$NX_ROOT/examples/train"
"$PY" "$EX/make_data.py" "$T/d" --batches 16 >/dev/null
"$NXCC" train "$EX/mlp_train.hlo" --steps 50 --data "$T/d" --report "$T/r" --no-cache \
	--config 'f32=' --config 'auto-cast-bf16=--auto-cast all --auto-cast-type bf16' \
	--config 'param-bf16-rne=--param-dtype bf16 --rounding rne' \
	--config 'param-bf16-sr=--param-dtype bf16 --rounding sr --sr-seed 5' >"$T/out.txt"
cat "$T/out.txt"
"$PY" - "$T/r" <<'PY'
import csv, sys, xml.etree.ElementTree as ET
d = sys.argv[1]
rows = list(csv.reader(open(d + "/train.csv")))
head, data = rows[0], rows[1:]
assert head == ["step", "f32_baseline", "f32", "auto-cast-bf16", "param-bf16-rne", "param-bf16-sr"], head
assert len(data) == 50 and all(len(r) == 6 and all(r) for r in data), "missing values"
col = {h: [float(r[i]) for r in data] for i, h in enumerate(head)}
eps32, L = 2.0 ** -23, 32
for s, (b, f) in enumerate(zip(col["f32_baseline"], col["f32"])):
    tol = 4 * eps32 * L * (s + 1) * abs(b)
    assert abs(f - b) <= tol, f"step {s}: f32 simulator {f!r} vs evaluator {b!r} (tol {tol:.3g})"
for h in head[1:]:
    first, last = sum(col[h][:10]) / 10, sum(col[h][-10:]) / 10
    assert last < 0.5 * first, f"{h}: loss does not decrease ({first:.4g} -> {last:.4g})"
    print(f"{h}: {first:.4g} -> {last:.4g}")
svg = ET.parse(d + "/loss.svg").getroot()
lines = svg.findall(".//{http://www.w3.org/2000/svg}polyline")
assert len(lines) >= 5, f"{len(lines)} polylines"
assert "param-bf16-sr" in open(d + "/summary.txt").read()
PY
# stochastic rounding: the same seed reproduces the run, another seed differs
for s in 5 5 6; do
	"$NXCC" train "$EX/mlp_train.hlo" --steps 5 --data "$T/d" --baseline none --param-dtype bf16 \
		--rounding sr --sr-seed $s --report "$T/sr$s" --no-cache >/dev/null
	cut -d, -f2 "$T/sr$s/train.csv" >>"$T/sr$s.col"
done
n5=$(sort -u "$T/sr5.col" | wc -l)
[ "$(head -6 "$T/sr5.col")" = "$(tail -6 "$T/sr5.col")" ] || { echo "FAIL: --sr-seed 5 twice differs"; exit 1; }
[ "$(head -6 "$T/sr5.col")" != "$(cat "$T/sr6.col")" ] || { echo "FAIL: --sr-seed 5 and 6 agree"; exit 1; }
[ "$n5" -gt 2 ] || { echo "FAIL: loss column too short"; exit 1; }
# a narrowing store rounds stochastically
cat >"$T/narrow.hlo" <<'H'
HloModule narrow
ENTRY e {
  p = f32[64,64] parameter(0)
  ROOT c = bf16[64,64] convert(p)
}
H
"$PY" -c "import numpy as np; np.save('$T/p.npy', np.full((64, 64), 1 + 2.0 ** -10, np.float32))"
"$NXCC" compile "$T/narrow.hlo" --framework XLA --target trn1 --no-cache --output "$T/narrow.neff" >/dev/null
"$NXCC" run "$T/narrow.neff" --input 0="$T/p.npy" --output-dir "$T/rne" >/dev/null
NEURON_RT_STOCHASTIC_ROUNDING_EN=1 NEURON_RT_STOCHASTIC_ROUNDING_SEED=3 \
	"$NXCC" run "$T/narrow.neff" --input 0="$T/p.npy" --output-dir "$T/sr" >/dev/null
"$PY" - "$T" <<'PY'
import numpy as np, sys
d = sys.argv[1]
f = lambda p: (np.load(p).astype(np.uint32) << 16).view(np.float32)
rne, sr = f(d + "/rne/out0.npy"), f(d + "/sr/out0.npy")
assert (rne == 1.0).all(), "RNE store"
up = (sr == np.float32(1 + 2.0 ** -7)).mean()
assert ((sr == 1.0) | (sr == np.float32(1 + 2.0 ** -7))).all(), "SR store outside the two neighbours"
# P(up) = 2^-10 / 2^-7 = 1/8; 4096 draws: sd 0.005
assert 0.1 < up < 0.15, f"SR rounded up {up:.3f} of the elements, expected 0.125"
print(f"narrowing store: RNE all 1.0; SR rounds up {up:.3f} (expected 0.125), mean {sr.mean():.6f}")
PY
# bad input: clear errors, exit 1
cat >"$T/noalias.hlo" <<'H'
HloModule noalias
ENTRY e {
  p = f32[4] parameter(0)
  ROOT n = f32[4] negate(p)
}
H
set +e
"$NXCC" train "$T/noalias.hlo" --steps 3 --no-cache >"$T/e1" 2>&1; rc1=$?
"$PY" -c "import numpy as np; np.save('$T/d/x.npy', np.zeros((3, 32, 15), np.float32))"
"$NXCC" train "$EX/mlp_train.hlo" --steps 3 --data "$T/d" --no-cache >"$T/e2" 2>&1; rc2=$?
"$NXCC" train "$EX/mlp_train.hlo" --no-cache >"$T/e3" 2>&1; rc3=$?
set -e
cat "$T/e1" "$T/e2" "$T/e3"
[ $rc1 = 1 ] && grep -q "no output aliases a parameter" "$T/e1" || { echo "FAIL: no-alias module"; exit 1; }
[ $rc2 = 1 ] && grep -q "x.npy.*neither the parameter's shape" "$T/e2" || { echo "FAIL: bad stack"; exit 1; }
[ $rc3 = 1 ] && grep -q "steps N is required" "$T/e3" || { echo "FAIL: no --steps"; exit 1; }
echo "train: ok"
