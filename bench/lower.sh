#!/bin/sh
# Lowering quality: for each graph and -O level on trn1, compile time, .neff
# size, instructions per engine, simulated time and the ratio to the roofline
# bound (`nxcc compile --stats`, `nxcc run`). Never uses the compile cache.
# Usage: bench/lower.sh [FILE.hlo ...]; default: examples/*.hlo and
# mlp__mini_mlp_single from the corpus.
BUILD=${BUILD:-build}
NXCC=${NXCC:-$BUILD/nxcc}
CORPUS=${NX_CORPUS:-../shared/corpus}
T=${TARGET:-trn1}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ $# -eq 0 ]; then
	set -- examples/*.hlo
	[ -f "$CORPUS/hlo/torch-neuronx/mlp__mini_mlp_single.hlo" ] &&
		set -- "$@" "$CORPUS/hlo/torch-neuronx/mlp__mini_mlp_single.hlo"
fi
fail=0
printf '%-26s %-3s %9s %8s %-22s %12s %11s %8s\n' graph O compile neff "pe/act/dve/pool/sp" simulated roofline ratio
for f in "$@"; do
	for o in -O1 -O2 -O3; do
		if ! "$NXCC" compile "$f" --framework XLA --target "$T" $o --stats --no-cache \
			--output "$tmp/a.neff" >"$tmp/st.txt" 2>&1 ||
			! "$NXCC" run "$tmp/a.neff" --random-inputs 1 --output-dir "$tmp/o" >"$tmp/run.txt" 2>&1; then
			printf '%-26s %-3s FAILED\n' "$(basename "$f" .hlo)" "$o"
			fail=1
			continue
		fi
		ct=$(sed -n 's/^compile time: *\([0-9.]*\).*/\1/p' "$tmp/st.txt")
		nb=$(wc -c <"$tmp/a.neff" | tr -d ' ')
		ins=$(awk '/^instructions /{s=s (s==""?"":"/") $3} END{print s}' "$tmp/st.txt")
		rf=$(sed -n 's/^roofline bound: *\([0-9.]*\) ns.*/\1/p' "$tmp/st.txt")
		sim=$(sed -n 's/^simulated time: *\([0-9.]*\) \([a-z]*\).*/\1 \2/p' "$tmp/run.txt" | head -n 1)
		simns=$(echo "$sim" | awk '{v=$1; if($2=="us")v*=1000; else if($2=="ms")v*=1e6; else if($2=="s")v*=1e9; print v}')
		ratio=$(awk "BEGIN{if ($rf > 0) printf \"%.0fx\", $simns / $rf; else print \"-\"}")
		printf '%-26s %-3s %8ss %8s %-22s %12s %8s ns %8s\n' "$(basename "$f" .hlo)" "$o" "$ct" "$nb" "$ins" "$sim" "$rf" "$ratio"
	done
done
exit $fail
