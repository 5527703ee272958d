#!/bin/sh
# Runs every benchmark binary in $BUILD/bench and prints one summary block.
# CALLGRIND=1 runs each under valgrind --tool=callgrind with smaller inputs and
# reports instructions executed (Ir): repeatable numbers on a noisy machine.
BUILD=${BUILD:-build}
CORPUS=${NX_CORPUS:-../shared/corpus}
HLO="$CORPUS/hlo/torch-neuronx/llama2__llama2_dp1_tp1_pp1.hlo"
OUT="$BUILD/bench/out"
mkdir -p "$OUT"
summary=""
fail=0

# name, then the command with its normal-mode and callgrind-mode arguments
# chosen by the caller.
bench() {
	name=$1; shift
	if [ -n "${CALLGRIND:-}" ]; then
		cg="$OUT/callgrind.$name.out"
		if valgrind --tool=callgrind --callgrind-out-file="$cg" "$@" >"$OUT/$name.txt" 2>"$OUT/$name.err"; then
			ir=$(sed -n 's/^summary: *//p' "$cg")
			line="Ir $ir  ($(tail -n 1 "$OUT/$name.txt"))"
		else
			line="FAILED (see $OUT/$name.err)"; fail=1
		fi
	elif "$@" >"$OUT/$name.txt" 2>"$OUT/$name.err"; then
		cat "$OUT/$name.txt"
		line=$(tail -n 1 "$OUT/$name.txt")
	else
		line="FAILED (see $OUT/$name.err)"; fail=1
	fi
	summary="$summary$(printf '%-10s %s' "$name" "$line")
"
}

if [ -n "${CALLGRIND:-}" ]; then
	bench reader "$BUILD/bench/bench_reader" "$HLO" 2
	bench eval_dot "$BUILD/bench/bench_eval_dot" 128
else
	bench reader "$BUILD/bench/bench_reader" "$HLO" 20
	bench eval_dot "$BUILD/bench/bench_eval_dot" 1024
fi

if [ -z "${CALLGRIND:-}" ]; then
	# parallel-compile over the torch-neuronx corpus: --jobs 1, --jobs 2, then a
	# second run (all cache lookups). Graphs the backend cannot lower yet fail.
	PCB=$(mktemp -d)
	for j in 1 2; do
		s=$(date +%s.%N)
		"$BUILD/nxcc" parallel-compile --quiet --jobs $j --cache-dir "$PCB/c$j" --report "$PCB/r.json" "$CORPUS/hlo/torch-neuronx" | head -n 1
		echo "parallel-compile --jobs $j: $(awk "BEGIN{printf \"%.2f\", $(date +%s.%N) - $s}") s"
	done
	s=$(date +%s.%N)
	"$BUILD/nxcc" parallel-compile --quiet --jobs 2 --cache-dir "$PCB/c2" --report "$PCB/r.json" "$CORPUS/hlo/torch-neuronx" | head -n 1
	echo "parallel-compile second run (cache): $(awk "BEGIN{printf \"%.2f\", $(date +%s.%N) - $s}") s"
	rm -rf "$PCB"
fi

if [ -z "${CALLGRIND:-}" ]; then
	# lowering quality: simulated time against the roofline (trn1)
	BUILD="$BUILD" NX_CORPUS="$CORPUS" sh bench/lower.sh > "$OUT/lower.txt" 2>&1 || fail=1
	cat "$OUT/lower.txt"
	summary="$summary$(printf '%-10s %s' lower "$(awk '$1=="mlp_step" && $2=="-O3" {print "mlp_step -O3: " $(NF-4) " " $(NF-3) ", " $NF " the roofline"}' "$OUT/lower.txt")")
"
fi

echo "== nxcc bench summary (${CALLGRIND:+callgrind, }$(uname -m), $(date -u +%Y-%m-%dT%H:%MZ)) =="
printf '%s' "$summary"
exit $fail
