#!/bin/sh
# Compile time per -O level (issue 10: O1 <= 20 % of O2, O3 <= 10x O2).
# Every graph (default: the torch-neuronx corpus) at -O1, -O2 and -O3 on
# trn1 without the cache, REPS (default 3) rounds with the levels
# interleaved; per graph and level the round that took the least CPU time
# (`nxcc compile --stats`: "compile phases", the compile's CPU time, which a
# loaded machine stretches less than the wall time, and "lower stages"),
# then the sums over the graphs that compile at every level, split into
# front end (read + verify + passes), kernels (lowering without encode) and
# encode in the shares of the wall time, and the ratios O1/O2, O3/O2.
# CALLGRIND=1: one run each under valgrind --tool=callgrind instead, the
# instructions executed by the whole process (Ir): repeatable on a noisy
# machine (libcrypto's SHA-256 runs without SHA-NI there, so encode weighs
# more than natively).
# Usage: bench/compile_time.sh [FILE.hlo ...]
BUILD=${BUILD:-build}
NXCC=${NXCC:-$BUILD/nxcc}
CORPUS=${NX_CORPUS:-../shared/corpus}
T=${TARGET:-trn1}
REPS=${REPS:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ $# -eq 0 ] && set -- "$CORPUS"/hlo/torch-neuronx/*.hlo
# one compile: prints its CPU ms and the wall-time shares of front end,
# kernels and encode, or nothing
one() { # file level
	if [ -n "${CALLGRIND:-}" ]; then
		valgrind --tool=callgrind --callgrind-out-file="$tmp/cg" "$NXCC" compile "$1" --target "$T" "-O$2" \
			--no-cache --output "$tmp/a.neff" >/dev/null 2>&1 || return 0
		sed -n 's/^summary: *//p' "$tmp/cg" | awk '{printf "%.1f 0 0 0\n", $1 / 1e6}'
		return 0
	fi
	"$NXCC" compile "$1" --target "$T" "-O$2" --no-cache --stats --output "$tmp/a.neff" >"$tmp/st" 2>/dev/null || return 0
	awk '/^lower stages:/ {k = $4 + $7 + $10; e = $13}
	     /^compile phases:/ {w = $16; tot = $19; fe = $4 + $7 + $10}
	     END {if (tot != "" && w > 0) printf "%s %.4f %.4f %.4f\n", tot, fe / w, k / w, e / w}' "$tmp/st"
}
[ -n "${CALLGRIND:-}" ] && REPS=1 && unit="MIr" || unit="cpu ms"
printf '%-44s %10s %10s %10s %7s %7s   (%s, best of %d)\n' graph -O1 -O2 -O3 O1/O2 O3/O2 "$unit" "$REPS"
: >"$tmp/all"
for f in "$@"; do
	g=$(basename "$f" .hlo)
	: >"$tmp/g"
	r=0
	while [ $r -lt "$REPS" ]; do
		for o in 1 2 3; do
			v=$(one "$f" $o)
			[ -n "$v" ] && echo "$o $v" >>"$tmp/g"
		done
		r=$((r + 1))
	done
	# best round per level: "level cpu front kernels encode"
	best=$(sort -k1,1n -k2,2g "$tmp/g" | awk '!seen[$1]++')
	echo "$best" | awk -v g="$g" -v all="$tmp/all" '
		NF == 5 {t[$1] = $2; line[$1] = $0}
		END {
			bad = 0
			for (o = 1; o <= 3; o++)
				if (t[o] == "") {s[o] = "FAILED"; bad = 1} else s[o] = t[o]
			if (bad) {
				printf "%-44s %10s %10s %10s\n", g, s[1], s[2], s[3]
				exit
			}
			r1 = t[2] > 0 ? t[1] / t[2] : 0
			r3 = t[2] > 0 ? t[3] / t[2] : 0
			printf "%-44s %10.3f %10.3f %10.3f %6.2fx %6.2fx\n", g, t[1], t[2], t[3], r1, r3
			for (o = 1; o <= 3; o++) print line[o] >> all
		}'
done
awk -v unit="$unit" -v cg="${CALLGRIND:-}" '
	{n[$1]++; t[$1] += $2; fe[$1] += $2 * $3; k[$1] += $2 * $4; e[$1] += $2 * $5}
	END {
		if (!n[2]) {print "no graph compiled at every level"; exit 1}
		printf "\nsum over %d graphs (%s):\n", n[2], unit
		for (o = 1; o <= 3; o++)
			if (cg) printf "  -O%d %12.1f\n", o, t[o]
			else printf "  -O%d %12.3f  front end %9.3f  kernels %9.3f  encode %9.3f\n", o, t[o], fe[o], k[o], e[o]
		printf "compile time O1/O2: %.2fx (budget 0.20x)  O3/O2: %.2fx (budget 10x)\n", t[1] / t[2], t[3] / t[2]
	}' "$tmp/all"
