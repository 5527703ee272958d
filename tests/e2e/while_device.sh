#!/bin/sh
# Device loops forced: every while test of tests/e2e/ops (while_*.hlo) with
# --disable-pass=while-unroll, so each counted loop, nested ones included, is
# lowered as a device loop (backend/lower_while.c) instead of being unrolled:
# `nxcc check` against the evaluator at -O1 and -O2 on trn1 and trn2, the
# plan shows the loop, and `nxcc run --check-races` finds no race across
# the loop's iterations.
set -u
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
n=0
for f in "$NX_ROOT"/tests/e2e/ops/while_*.hlo; do
	b=$(basename "$f" .hlo)
	for t in trn1 trn2; do
		for o in -O1 -O2; do
			out=$("$NXCC" check "$f" --framework XLA --target $t $o --disable-pass=while-unroll --random-inputs 3 2>&1) ||
				fail "$b $t $o: $(echo "$out" | grep -E 'MISMATCH|error|FAILED' | head -3)"
			out=$("$NXCC" compile "$f" --framework XLA --target $t $o --disable-pass=while-unroll --no-cache \
				--dump-lower=plan -o "$T/$b.neff" 2>&1) || fail "$b $t $o: compile: $out"
			echo "$out" | grep -q "while-loop: " || fail "$b $t $o: no device loop in the plan"
			out=$("$NXCC" run "$T/$b.neff" --check-races --random-inputs 3 --output-dir "$T/out" 2>&1) ||
				fail "$b $t $o: --check-races: $(echo "$out" | grep -E 'race|error' | head -3)"
			n=$((n + 1))
		done
	done
done
echo "checked $n device-loop configurations"
