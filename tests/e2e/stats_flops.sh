#!/bin/sh
# End to end: `nxcc compile --stats` counts every dot's FLOPs once, whatever
# kernel computes it: its own dot loop, a multi-output epilogue (the BERT
# layer's f.d with its GELU), or a second output of another dot's kernel
# (attention's dv and dk inside dp's, kernels/dot_sec.c). bench/roofline.py
# takes the PE roofline from that count, so a dot left out makes every
# ratio look better than it is. The expected count is 2 x (output elements)
# x (contracted elements) over the HLO's dots, from the module text.
set -u
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for f in "$NX_ROOT/bench/kernels/bert_layer.hlo" "$NX_ROOT/bench/kernels/dot_f32.hlo"; do
	"$NXCC" compile "$f" --target trn1 -O2 --no-cache --stats --output "$tmp/a.neff" > "$tmp/stats" 2>&1 ||
		fail "compile $f: $(tail -3 "$tmp/stats")"
	got=$(sed -n 's/^flops: *\([0-9.e+]*\).*/\1/p' "$tmp/stats")
	[ -n "$got" ] || fail "$f: no flops line in --stats"
	want=$(python3 - "$f" <<'PY'
import re, sys
dims, total = {}, 0
for line in open(sys.argv[1]):
    m = re.match(r"\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*\w+\[([0-9,]*)\]", line)
    if not m:
        continue
    d = [int(x) for x in m.group(2).split(",") if x]
    dims[m.group(1)] = d
    if " dot(" not in line:
        continue
    lhs = re.search(r"dot\((?:\w+\[[0-9,]*\](?:\{[0-9,]*\})?\s+)?%?([\w.\-]+)", line).group(1)
    con = re.search(r"lhs_contracting_dims=\{([0-9,]*)\}", line).group(1)
    out = 1
    for x in d:
        out *= x
    k = 1
    for c in con.split(","):
        k *= dims[lhs][int(c)]
    total += 2 * out * k
print(total)
PY
)
	python3 -c "import sys; g, w = float(sys.argv[1]), float(sys.argv[2]); sys.exit(0 if abs(g - w) <= 1e-9 * w else 1)" "$got" "$want" ||
		fail "$(basename "$f"): --stats flops $got, the module's dots $want"
done
exit 0
