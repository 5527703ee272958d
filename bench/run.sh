#!/bin/sh
# Runs every benchmark binary in $BUILD/bench.
BUILD=${BUILD:-build}
CORPUS=${NX_CORPUS:-../shared/corpus}
"$BUILD/bench/bench_reader" "$CORPUS/hlo/torch-neuronx/llama2__llama2_dp1_tp1_pp1.hlo" 20
