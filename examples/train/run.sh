#!/bin/sh
# Regenerates examples/train/results/ (examples/train/README.md):
#   main/      four configurations, 500 steps, lr 0.05
#   small-lr/  lr 5e-4: bf16 weights with round-to-nearest-even stall,
#              stochastic rounding follows f32
# usage: sh examples/train/run.sh [STEPS]   (from the repository root; make first)
set -e
NXCC=${NXCC:-build/nxcc}
STEPS=${1:-500}
PY=""
for c in /usr/bin/python3 python3; do "$c" -c "import numpy" 2>/dev/null && { PY=$c; break; }; done
[ -n "$PY" ] || { echo "run.sh: needs python3 with numpy (make deps)"; exit 1; }
EX=examples/train
mkdir -p $EX/results
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
"$PY" $EX/make_data.py "$T/main"
"$NXCC" train $EX/mlp_train.hlo --target trn1 --steps "$STEPS" --data "$T/main" --report $EX/results/main \
	--config 'f32=' \
	--config 'auto-cast-bf16=--auto-cast all --auto-cast-type bf16' \
	--config 'param-bf16-rne=--param-dtype bf16 --rounding rne' \
	--config 'param-bf16-sr=--param-dtype bf16 --rounding sr'
"$PY" $EX/make_data.py "$T/small" --lr 0.0005
"$NXCC" train $EX/mlp_train.hlo --target trn1 --steps "$STEPS" --data "$T/small" --report $EX/results/small-lr \
	--config 'f32=' \
	--config 'param-bf16-rne=--param-dtype bf16 --rounding rne' \
	--config 'param-bf16-sr=--param-dtype bf16 --rounding sr'
