#!/bin/sh
# --dump-format=dot|html: the graph of mlp__mini_mlp_single at -O2 shows every
# fusion as a cluster (clusters = the `fusions:` line of --stats = fusion
# instructions in `nxcc opt` output), edges carry shapes and, between
# kernels, the fusion refusal reason; Graphviz renders it to SVG; the dump
# directory is created; an unwritable dump directory warns and the compile
# still succeeds.
set -u
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
f="$NX_CORPUS/hlo/torch-neuronx/mlp__mini_mlp_single.hlo"
[ -f "$f" ] || f="$NX_ROOT/examples/mlp_step.hlo"
"$NXCC" compile "$f" --framework XLA --target trn1 -O2 --no-cache --output "$tmp/m.neff" --stats \
	--dump-after fusion --dump-format=dot --dump-dir "$tmp/new/dir" > "$tmp/stats.txt" || fail "compile with dot dump"
dot=$(ls "$tmp"/new/dir/*.fusion.dot) || fail "no .dot in the created dump directory"
fusions=$(sed -n 's/^fusions: //p' "$tmp/stats.txt")
clusters=$(grep -c '^  subgraph cluster_' "$dot")
opt=$("$NXCC" opt "$f" -O2 | grep -c ' fusion(')
echo "fusions (--stats) $fusions, clusters $clusters, fusion instructions (opt) $opt"
[ -n "$fusions" ] && [ "$fusions" -gt 0 ] || fail "--stats printed no fusions: $(cat "$tmp/stats.txt")"
[ "$clusters" = "$fusions" ] || fail "$clusters clusters for $fusions fusions"
[ "$opt" = "$fusions" ] || fail "opt shows $opt fusions, --stats $fusions"
# every cluster is labeled with its kind and colored; kinds present at -O2
for k in kLoop kInput kOutput; do grep -q "($k)\"" "$dot" || fail "no $k cluster"; done
[ "$(grep -c 'fillcolor="#' "$dot")" -ge "$clusters" ] || fail "clusters are not colored"
# edges between kernels say why they were not fused; edges carry shapes
grep -q 'label="f32\[32,10\]"' "$dot" || grep -q 'label="f32\[' "$dot" || fail "no shape labels on edges"
grep -q 'tooltip="a reduction ends its kernel' "$dot" || fail "no refusal reason (reduction) on a cross-kernel edge"
grep -q 'tooltip="fused: computed in the same kernel"' "$dot" || fail "no in-kernel edge"
if command -v dot > /dev/null; then
	svg="${dot%.dot}.svg"
	[ -s "$svg" ] || fail "Graphviz is installed but no SVG was written"
	[ "$(grep -c 'class="cluster"' "$svg")" = "$clusters" ] || fail "SVG clusters differ from the dot"
	grep -q '<title>.*not fused\|xlink:title="a reduction ends' "$svg" ||
		grep -q 'a reduction ends its kernel' "$svg" || fail "SVG lost the refusal tooltips"
else
	echo "note: Graphviz (dot) not installed: SVG not checked"
fi
# html: self-contained page with the kernel table and the graph
"$NXCC" opt "$f" -O2 --dump-after fusion --dump-format html --dump-dir "$tmp/h" -o "$tmp/o.hlo" || fail "opt html dump"
html=$(ls "$tmp"/h/*.fusion.html) || fail "no html dump"
[ "$(grep -c '^<tr><td>fusion' "$html")" = "$fusions" ] || fail "html kernel table does not list every fusion"
grep -q 'id="graph"' "$html" || fail "html has no graph"
grep -qi '<script\|src="http\|href="http' "$html" && fail "html dump is not self-contained"
# unknown format: a flag error, exit 1
"$NXCC" opt "$f" --dump-after fusion --dump-format png -o /dev/null 2> "$tmp/err" && fail "--dump-format png accepted"
grep -q "dump-format" "$tmp/err" || fail "error does not name the flag: $(cat "$tmp/err")"
# a dump that cannot be written warns; the compile succeeds and writes its .neff
mkdir "$tmp/ro" && chmod a-w "$tmp/ro"
if [ "$(id -u)" != 0 ]; then
	"$NXCC" compile "$f" --target trn1 -O2 --no-cache --output "$tmp/ro.neff" --dump-after all --dump-dir "$tmp/ro/x" \
		2> "$tmp/warn" > /dev/null || fail "an unwritable dump dir failed the compile"
else # root writes anywhere: a dump dir path through a regular file cannot be created
	: > "$tmp/file"
	"$NXCC" compile "$f" --target trn1 -O2 --no-cache --output "$tmp/ro.neff" --dump-after all --dump-dir "$tmp/file/x" \
		2> "$tmp/warn" > /dev/null || fail "an impossible dump dir failed the compile: $(cat "$tmp/warn")"
fi
[ -s "$tmp/ro.neff" ] || fail "no .neff after a failed dump"
grep -q "warning: dump after pass" "$tmp/warn" || fail "no warning for the failed dump: $(cat "$tmp/warn")"
echo "dump graph: ok"
