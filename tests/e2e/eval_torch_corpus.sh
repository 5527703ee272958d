#!/bin/sh
# nxcc eval --random-inputs over every torch-neuronx graph of the corpus
# under a 256 MiB memory cap. A graph either evaluates (every replica's
# outputs finite) or is refused up front with "needs at least N bytes"; the
# mlp, qwb_linear_model and misc graphs must all evaluate, and the llama2
# giant (a f32[1024,32,4096,4096] value) must be refused: that refusal is
# part of what is tested.
DIR="$NX_CORPUS/hlo/torch-neuronx"
[ -d "$DIR" ] || { echo "skip: no corpus"; exit 0; }
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
CAP=268435456
ran=0; refused=0; bad=0
for f in "$DIR"/*.hlo; do
	b=$(basename "$f" .hlo)
	if "$NXCC" eval "$f" --random-inputs 3 --max-memory $CAP >"$T/out" 2>"$T/err"; then
		if grep -q "non-finite" "$T/out" || ! grep -q "^out0:" "$T/out"; then
			echo "FAIL $b: non-finite or missing outputs"; grep -m5 "non-finite" "$T/out"; bad=$((bad + 1))
		else
			echo "ok   $b ($(grep -c '^out' "$T/out") outputs)"; ran=$((ran + 1))
		fi
		continue
	fi
	if ! grep -q "needs at least [0-9]* bytes" "$T/err"; then
		echo "FAIL $b: $(cat "$T/err")"; bad=$((bad + 1)); continue
	fi
	case "$b" in
	mlp__* | qwb_linear_model__* | misc__*) echo "FAIL $b refused: $(cat "$T/err")"; bad=$((bad + 1)) ;;
	*) echo "skip $b: $(sed 's/.*error: //' "$T/err")"; refused=$((refused + 1)) ;;
	esac
	[ "$b" = llama2__llama2_dp1_tp1_pp1 ] && cp "$T/err" "$T/giant_refused"
done
[ -f "$DIR/llama2__llama2_dp1_tp1_pp1.hlo" ] && [ ! -f "$T/giant_refused" ] &&
	{ echo "FAIL: llama2__llama2_dp1_tp1_pp1 was not refused under $CAP bytes"; bad=$((bad + 1)); }
if [ -f "$T/giant_refused" ] && ! grep -q "needs at least 2199023255552 bytes (instruction '.*' is f32\[1024,32,4096,4096\])" "$T/giant_refused"; then
	echo "FAIL: the giant's refusal does not name its largest value: $(cat "$T/giant_refused")"; bad=$((bad + 1))
fi
echo "$ran evaluated, $refused refused, $bad failed"
[ "$bad" -eq 0 ] && [ "$ran" -ge 30 ]
