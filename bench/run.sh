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
	bench gpsimd sh bench/gpsimd.sh # GpSimd kernel compile / load ms per kernel
	bench eval_jit sh bench/eval_jit.sh # nxcc eval with and without the host JIT (ViT-B/16)
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

# Cache hit latency of `nxcc compile` (examples/mlp_step.hlo): the whole
# process, as a framework sees it; median of 20 runs on a local directory
# cache and, when s3rver can be started (tests/s3/start.sh), on S3.
hit_median() { # cache-url: prints the median wall ms of 20 hits
	"$BUILD/nxcc" compile "$ROOT_DIR/examples/mlp_step.hlo" --cache-dir "$1" -o "$HB/o.neff" >/dev/null 2>&1 || return 1
	for i in $(seq 20); do
		s=$(date +%s%N)
		"$BUILD/nxcc" compile "$ROOT_DIR/examples/mlp_step.hlo" --cache-dir "$1" -o "$HB/o.neff" > "$HB/hit" 2>&1 || return 1
		e=$(date +%s%N)
		grep -q "^cache hit" "$HB/hit" || return 1
		echo $(( (e - s) / 1000 ))
	done | sort -n | awk '{v[NR]=$1} END {printf "%.2f ms (min %.2f, max %.2f)", (v[10]+v[11])/2000, v[1]/1000, v[NR]/1000}'
}
ROOT_DIR=$(cd "$(dirname "$0")/.." && pwd)
HB=$(mktemp -d)
if [ -n "${CALLGRIND:-}" ]; then
	"$BUILD/nxcc" compile "$ROOT_DIR/examples/mlp_step.hlo" --cache-dir "$HB/c" -o "$HB/o.neff" >/dev/null 2>&1
	bench cache_hit "$BUILD/nxcc" compile "$ROOT_DIR/examples/mlp_step.hlo" --cache-dir "$HB/c" -o "$HB/o.neff"
else
	line="cache hit (local dir) median of 20: $(hit_median "$HB/c" || echo FAILED)"
	echo "$line"; summary="$summary$(printf '%-10s %s' cache_hit "$line")
"
	if srv=$(sh "$ROOT_DIR/tests/s3/start.sh" nxcc-bench 2>"$HB/s3.err"); then
		set -- $srv
		line="cache hit (s3rver) median of 20: $(export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER \
			AWS_REGION=us-east-1 AWS_ENDPOINT_URL="http://127.0.0.1:$1"; unset AWS_PROFILE AWS_SESSION_TOKEN
			hit_median s3://nxcc-bench/bench || echo FAILED)"
		kill "$2" 2>/dev/null; rm -rf "$3" "$3.log"
	else
		line="cache hit (s3rver): skipped ($(head -n 1 "$HB/s3.err"))"
	fi
	echo "$line"; summary="$summary$(printf '%-10s %s' cache_s3 "$line")
"
fi
rm -rf "$HB"

# compile time per -O level (issue 10: O1 <= 20 % of O2, O3 <= 10x O2):
# the torch-neuronx corpus, CPU ms; under CALLGRIND three graphs, Ir
if [ -n "${CALLGRIND:-}" ]; then
	set -- "$CORPUS/hlo/torch-neuronx/bert__bert_dp_graph_4.hlo" "$CORPUS/hlo/torch-neuronx/gpt__gpt2_tp1.hlo" \
		"$CORPUS/hlo/torch-neuronx/mlp__mini_mlp_single.hlo"
else
	set --
fi
BUILD="$BUILD" NX_CORPUS="$CORPUS" sh bench/compile_time.sh "$@" > "$OUT/compile_time.txt" 2>&1 || fail=1
cat "$OUT/compile_time.txt"
summary="$summary$(printf '%-10s %s' compile "$(sed -n 's/^compile time //p' "$OUT/compile_time.txt")")
"

if [ -z "${CALLGRIND:-}" ]; then
	# lowering quality: simulated time against the roofline (trn1)
	BUILD="$BUILD" NX_CORPUS="$CORPUS" sh bench/lower.sh > "$OUT/lower.txt" 2>&1 || fail=1
	cat "$OUT/lower.txt"
	summary="$summary$(printf '%-10s %s' lower "$(awk '$1=="mlp_step" && $2=="-O3" {print "mlp_step -O3: " $(NF-4) " " $(NF-3) ", " $NF " the roofline"}' "$OUT/lower.txt")")
"
fi

if [ -z "${CALLGRIND:-}" ]; then
	# code size against tensor volume (bench/scaling.sh, issue 9)
	BUILD="$BUILD" sh bench/scaling.sh > "$OUT/scaling.txt" 2>&1 || fail=1
	cat "$OUT/scaling.txt"
	summary="$summary$(printf '%-10s %s' scaling "$(grep -c 'x > 1.2' "$OUT/scaling.txt" | sed 's/$/ kinds above 1.2x at 256x/')")
"
	# code quality against the roofline: kernels at real size and the corpus
	# (docs/benchmarks.md keeps the recorded table)
	python3 bench/roofline.py --nxcc "$BUILD/nxcc" bench/kernels/*.hlo "$CORPUS"/hlo/torch-neuronx/*.hlo \
		> "$OUT/roofline.txt" 2>&1 || fail=1
	cat "$OUT/roofline.txt"
	summary="$summary$(printf '%-10s %s' roofline "$(awk '$1=="dot_bf16" {print "dot_bf16: " $5 " " $6 " simulated, " $7 " the roofline"}' "$OUT/roofline.txt")")
"
fi

echo "== nxcc bench summary (${CALLGRIND:+callgrind, }$(uname -m), $(date -u +%Y-%m-%dT%H:%MZ)) =="
printf '%s' "$summary"
exit $fail
