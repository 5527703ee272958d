#!/bin/sh
# Differential campaign: random valid HLO modules (tests/fuzz/gen_hlo.py),
# each evaluated as written and after `nxcc opt -O1/-O2/-O3` (outputs must be
# byte-identical .npy files), and checked on the simulated device with
# `nxcc check` for trn1 and trn2 (the -O level rotates with the seed). Runs
# for FUZZ_SECONDS (default 60) from seed FUZZ_SEED (default 1); a failing
# module is kept in build-fuzz/diff/fail-SEED.hlo with its log.
#   FUZZ_SECONDS=1800 FUZZ_SEED=1 sh tests/fuzz/diff.sh
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
NXCC=${NXCC:-$ROOT/build/nxcc}
SECS=${FUZZ_SECONDS:-60}
seed=${FUZZ_SEED:-1}
first=$seed
OUT=$ROOT/build-fuzz/diff
mkdir -p "$OUT"
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
end=$(( $(date +%s) + SECS ))
n=0; bad=0
while [ "$(date +%s)" -lt "$end" ]; do
	m="$W/m.hlo"
	python3 "$ROOT/tests/fuzz/gen_hlo.py" "$seed" > "$m"
	why=""
	rm -rf "$W/o0" "$W/o1" "$W/o2" "$W/o3"
	if ! "$NXCC" eval "$m" --random-inputs "$seed" --output-dir "$W/o0" >"$W/log" 2>&1; then
		why="eval failed"
	fi
	for o in 1 2 3; do
		[ -n "$why" ] && break
		if ! "$NXCC" opt -O$o "$m" -o "$W/opt.hlo" >>"$W/log" 2>&1 ||
		   ! "$NXCC" eval "$W/opt.hlo" --random-inputs "$seed" --output-dir "$W/o$o" >>"$W/log" 2>&1; then
			why="opt -O$o failed"
		elif ! diff -r "$W/o0" "$W/o$o" >/dev/null 2>&1; then
			why="opt -O$o changed the results"
		fi
	done
	o1=$(( seed % 3 + 1 )); o2=$(( (seed + 1) % 3 + 1 ))
	[ -z "$why" ] && ! "$NXCC" check "$m" --target trn1 -O$o1 --random-inputs "$seed" >>"$W/log" 2>&1 &&
		why="check trn1 -O$o1"
	[ -z "$why" ] && ! "$NXCC" check "$m" --target trn2 -O$o2 --random-inputs "$seed" >>"$W/log" 2>&1 &&
		why="check trn2 -O$o2"
	if [ -n "$why" ]; then
		bad=$((bad + 1))
		cp "$m" "$OUT/fail-$seed.hlo"; cp "$W/log" "$OUT/fail-$seed.log"
		echo "diff: seed $seed: $why (build-fuzz/diff/fail-$seed.hlo)"
	fi
	n=$((n + 1)); seed=$((seed + 1))
done
echo "diff: $n modules (seeds $first..$((seed - 1))), $bad differences"
[ "$bad" -eq 0 ]
