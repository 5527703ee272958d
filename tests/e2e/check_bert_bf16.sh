#!/bin/bash
# End to end: `nxcc check` of a BERT encoder layer, forward and backward,
# under bf16 auto-cast (bench/kernels/bert.sh --mid: batch 2, sequence 512,
# hidden 256, 4 heads, FFN 1024), trn1 and trn2 at -O2. The attention's
# backward cancels (ds = p (dp - sum dp p) with p nearly one-hot; the key-bias
# gradient is analytically zero), so several outputs are dominated by bf16
# rounding noise: they pass by the rounding-noise bound (device against the
# evaluator) and by sum |terms| (against the f32 original; dx as a sum of the
# sums dx0 + dq.Wq + dk.Wk + dv.Wv), docs/numerics.md. The check must pass
# and say which bound accepted what; the bound must stay well inside itself
# (at most 0.25 of it: measured 0.013 at this size, 0.092 at the real size).
set -u
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sh "$NX_ROOT/bench/kernels/bert.sh" --mid "$tmp" >/dev/null || fail "bert.sh --mid"
for t in trn1 trn2; do
	out=$(timeout 300 "$NXCC" check "$tmp/bert_layer.hlo" --target $t -O2 --auto-cast all --auto-cast-type bf16 2>&1) ||
		fail "$t: $(echo "$out" | grep -E 'MISMATCH|TOO LARGE|error|FAILED|outside' | head -6)"
	echo "$out" | grep -q "^check: ok (18 outputs)" || fail "$t: no 'check: ok (18 outputs)'"
	# lk.db (out5), the key-bias gradient: noise, accepted by the noise bound
	echo "$out" | grep -E "^out5 .*elements by the rounding-noise bound" >/dev/null ||
		fail "$t: out5 (lk.db) not by the rounding-noise bound: $(echo "$out" | grep '^out5 ')"
	# dx (out1) against the f32 original, as a sum of sums
	echo "$out" | grep -E "^out1 vs f32 original: .*sum of sums \(769 terms\) [0-9.e-]+ ok" >/dev/null ||
		fail "$t: out1 (dx) not by the sum of sums: $(echo "$out" | grep '^out1 vs')"
	# how much of the noise bound the device used
	worst=$(echo "$out" | sed -n 's/.*rounding-noise bound.*at most \([0-9.e+-]*\) of it.*/\1/p' | sort -g | tail -1)
	awk -v w="$worst" 'BEGIN { exit !(w != "" && w + 0 <= 0.25) }' || fail "$t: noise bound used up to $worst"
	echo "$t: ok, at most $worst of the rounding-noise bound"
done
