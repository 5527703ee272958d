#!/bin/sh
# nxcc run --report and nxcc check --report: one self-contained HTML file,
# opened in headless Chromium (tools/browser_check.py, DevTools protocol):
# the summary, engine table, timeline, kernel table, occupancy chart and (check)
# error table render non-blank, the console shows no error and the page
# fetches nothing. For examples/mlp_step.hlo and the GPT-2 transformer graph
# of the corpus (8 ranks, tensor parallel).
set -u
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
command -v "${CHROMIUM:-chromium}" > /dev/null || { echo "SKIP: chromium not installed (make deps installs it)"; exit 0; }
check_page() { # page ids...
	page=$1; shift
	grep -qi '<script\|src="http\|href="http\|@import\|url(http' "$page" && fail "$page is not self-contained"
	timeout 300 python3 "$NX_ROOT/tools/browser_check.py" "$page" --require "$(echo "$@" | tr ' ' ',')" \
		--png "$tmp/$(basename "$page" .html).png" || fail "$(basename "$page") did not render"
}
f="$NX_ROOT/examples/mlp_step.hlo"
"$NXCC" check "$f" --target trn1 -O2 --random-inputs 1 --report "$tmp/mlp_check.html" > "$tmp/check.txt" ||
	fail "check --report: $(tail -3 "$tmp/check.txt")"
for k in 'id="errors"' 'out4' 'Top kernels' 'line [0-9]* <code>' 'roofline bound' 'MFU estimate'; do
	grep -q "$k" "$tmp/mlp_check.html" || fail "check report has no '$k'"
done
# the HLO source line is quoted from the file
grep -q '<br><code>[^<]*dot(' "$tmp/mlp_check.html" || fail "check report does not quote the HLO source of a dot kernel"
check_page "$tmp/mlp_check.html" summary engines errors timeline kernels occupancy
"$NXCC" compile "$f" --target trn1 -O2 --no-cache --output "$tmp/mlp.neff" > /dev/null || fail compile
"$NXCC" run "$tmp/mlp.neff" --random-inputs 1 --report "$tmp/mlp_run.html" > /dev/null || fail "run --report"
grep -q 'id="errors"' "$tmp/mlp_run.html" && fail "run report has a check table"
check_page "$tmp/mlp_run.html" summary engines timeline kernels occupancy
# the blank-page detector works: an empty timeline fails the check
sed 's/<svg id="timeline"[^>]*>/&<rect width="100%" height="100%" fill="#fafafa"\/>/; s/<rect x="[0-9.]*" y="[0-9]*" width="[0-9.]*" height="18" fill="hsl[^/]*\/title><\/rect>//g' \
	"$tmp/mlp_run.html" | sed '/<svg id="timeline"/,/<\/svg>/{/<text\|<line\|fill="#eceff3"\|<title>/d}' > "$tmp/blank.html"
timeout 300 python3 "$NX_ROOT/tools/browser_check.py" "$tmp/blank.html" --require timeline > "$tmp/blank.txt" 2>&1 &&
	fail "browser_check passed a blank timeline: $(cat "$tmp/blank.txt")"
grep -q "#timeline: blank" "$tmp/blank.txt" || fail "blank timeline not detected: $(cat "$tmp/blank.txt")"
# a console error is caught
sed 's/<\/body>/<script>console.error("boom")<\/script><\/body>/' "$tmp/mlp_run.html" > "$tmp/err.html"
timeout 300 python3 "$NX_ROOT/tools/browser_check.py" "$tmp/err.html" --require timeline > "$tmp/err.txt" 2>&1 &&
	fail "browser_check missed a console error"
grep -q "console error: boom" "$tmp/err.txt" || fail "console error not reported: $(cat "$tmp/err.txt")"

g="$NX_CORPUS/hlo/torch-neuronx/gpt__gpt2_tp8.hlo"
if [ -f "$g" ]; then
	"$NXCC" check "$g" --target trn1 -O2 --random-inputs 1 --report "$tmp/gpt2.html" > "$tmp/gpt.txt" ||
		fail "gpt2_tp8 check --report: $(tail -3 "$tmp/gpt.txt")"
	grep -q 'softmax\|exponential\|dot' "$tmp/gpt2.html" || fail "gpt2 report names no transformer kernel"
	check_page "$tmp/gpt2.html" summary engines errors timeline kernels occupancy
else
	echo "note: no corpus: transformer report not checked"
fi
echo "report in browser: ok"
