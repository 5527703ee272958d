#!/bin/sh
# A fixed slice of the differential campaign (make fuzz-diff runs 10,000):
# 300 random modules (tests/fuzz/gen_hlo.py, seeds 1..300) through the
# evaluator, opt -O1/-O2/-O3 and the simulated device on trn1 and trn2 in one
# process (tests/fuzz/diff_inproc.c). Any difference fails, with the module
# and its log in the test's temporary directory.
set -u
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
python3 "$NX_ROOT/tests/fuzz/gen_hlo.py" --batch 1 300 | "$NX_BUILD/fuzz/diff_inproc" "$W"
rc=$?
for f in "$W"/fail-*.log; do
	[ -f "$f" ] || continue
	echo "== ${f%.log}.hlo"; cat "${f%.log}.hlo"; echo "== $f"; cat "$f"
done
exit $rc
