#!/bin/sh
# Runs every benchmark binary in $BUILD/bench.
BUILD=${BUILD:-build}
CORPUS=${NX_CORPUS:-../shared/corpus}
"$BUILD/bench/bench_reader" "$CORPUS/hlo/torch-neuronx/llama2__llama2_dp1_tp1_pp1.hlo" 20
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
