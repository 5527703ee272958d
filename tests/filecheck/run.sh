#!/bin/sh
# Runs every tests/filecheck/*.hlo: each `// RUN:` line is a shell pipeline in
# which %s is the test file and `nxcc` / `FileCheck` are our binary and LLVM's
# FileCheck (llvm-16-tools). Prints a line per failing file and a summary.
ROOT=${NX_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
NXCC=${NXCC:-$ROOT/build/nxcc}
FC=${FILECHECK:-$(command -v FileCheck-16 || echo /usr/lib/llvm-16/bin/FileCheck)}
[ -x "$FC" ] || { echo "FileCheck not found (install llvm-16-tools: make deps)"; exit 1; }
pass=0; fail=0
for t in "$ROOT"/tests/filecheck/*.hlo; do
	runs=$(sed -n 's|^// RUN: *||p' "$t")
	if [ -z "$runs" ]; then
		echo "FAIL $(basename "$t"): no RUN line"; fail=$((fail + 1)); continue
	fi
	ok=1
	echo "$runs" | while IFS= read -r cmd; do
		c=$(printf '%s' "$cmd" | sed -e "s|%s|$t|g" -e "s|\bnxcc\b|$NXCC|g" -e "s|\bFileCheck\b|$FC|g")
		if ! bash -c "set -o pipefail; $c" >/tmp/fc.$$ 2>&1; then
			echo "FAIL $(basename "$t"): $cmd"; sed 's/^/    /' /tmp/fc.$$ | head -30; exit 1
		fi
	done || ok=0
	rm -f /tmp/fc.$$
	if [ $ok = 1 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
done
echo "filecheck: $pass passed, $fail failed"
[ $fail -eq 0 ]
