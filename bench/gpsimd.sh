#!/bin/sh
# GpSimd kernels: compile time per kernel (LLVM IR built, verified, optimized
# at default<O2>, written as bitcode) and load time per kernel (validated in a
# child process, instrumented, JIT-compiled by LLJIT). Two graphs differing
# only in the number of sorts (1 and N+1): the difference over N is the cost
# of one kernel, independent of process start-up and the rest of the compile.
BUILD=${BUILD:-build}
N=${GPSIMD_KERNELS:-20}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
gen() { # number of sorts
	{
		echo "HloModule gpsimd_bench"
		for k in $(seq 1 "$1"); do
			printf 'c%d {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  s = f32[] constant(%d)\n' "$k" "$k"
			printf '  x = f32[] multiply(a, s)\n  ROOT r = pred[] compare(x, b), direction=LT\n}\n'
		done
		echo "ENTRY e {"
		echo "  p = f32[16,256] parameter(0)"
		for k in $(seq 1 "$1"); do
			echo "  s$k = f32[16,256] sort(p), dimensions={1}, to_apply=c$k"
		done
		printf '  ROOT t = (%s) tuple(%s)\n}\n' "$(for k in $(seq 1 "$1"); do printf 'f32[16,256]%s' "$([ "$k" -lt "$1" ] && echo ,)"; done)" \
			"$(for k in $(seq 1 "$1"); do printf 's%d%s' "$k" "$([ "$k" -lt "$1" ] && echo ,)"; done)"
	} > "$T/g$1.hlo"
}
now() { date +%s.%N; }
gen 1; gen $((N + 1))
best() { # the fastest of 3 runs of "$@", seconds
	b=""
	for r in 1 2 3; do
		s=$(now); "$@" >/dev/null 2>&1 || { echo "FAILED: $*" >&2; exit 1; }; e=$(now)
		b=$(awk -v b="$b" -v d="$(awk "BEGIN{print $e - $s}")" 'BEGIN{print (b == "" || d < b) ? d : b}')
	done
	echo "$b"
}
c1=$(best "$BUILD/nxcc" compile "$T/g1.hlo" --target trn1 --no-cache --output "$T/g1.neff")
cn=$(best "$BUILD/nxcc" compile "$T/g$((N + 1)).hlo" --target trn1 --no-cache --output "$T/gn.neff")
l1=$(best "$BUILD/nxcc" inspect "$T/g1.neff")
ln=$(best "$BUILD/nxcc" inspect "$T/gn.neff")
echo "gpsimd: $N kernels: compile $(awk "BEGIN{printf \"%.1f\", ($cn - $c1) * 1000 / $N}") ms/kernel (emit + verify + O2 + bitcode)," \
	"load $(awk "BEGIN{printf \"%.1f\", ($ln - $l1) * 1000 / $N}") ms/kernel (validate + instrument + JIT)"
