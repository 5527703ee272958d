#!/bin/sh
# Runs every test: cmocka unit binaries, FileCheck tests, end-to-end scripts.
# Prints one line per test group and closes with "N passed, N failed".
# TESTS=pattern runs only groups whose name contains pattern; alternatives
# separated by '|' (TESTS='unit|filecheck|e2e/train').
BUILD=${BUILD:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
export NXCC="$ROOT/$BUILD/nxcc" NX_BUILD="$ROOT/$BUILD" NX_ROOT="$ROOT"
export NX_CORPUS="${NX_CORPUS:-$ROOT/../shared/corpus}"
LOG="$ROOT/$BUILD/test-logs"
rm -rf "$LOG"; mkdir -p "$LOG"
pass=0; fail=0; failed=""

run() { # name, command...
	name=$1; shift
	want=0
	oldifs=$IFS; IFS='|'
	for p in ${TESTS:-""}; do
		case "$name" in *"$p"*) want=1 ;; esac
	done
	IFS=$oldifs
	[ "$want" = 1 ] || [ -z "${TESTS:-}" ] || return
	start=$(date +%s)
	mkdir -p "$(dirname "$LOG/$name.log")"
	if "$@" >"$LOG/$name.log" 2>&1; then
		pass=$((pass + 1)); echo "PASS $name ($(( $(date +%s) - start ))s)"
	else
		fail=$((fail + 1)); failed="$failed $name"
		echo "FAIL $name ($(( $(date +%s) - start ))s)"; tail -n 40 "$LOG/$name.log" | sed 's/^/    /'
	fi
}

run "check-layers" sh tools/check_layers.sh "$BUILD"
for t in "$BUILD"/tests/test_*; do
	[ -x "$t" ] || continue
	run "unit/$(basename "$t")" "$t"
done
if [ -d tests/filecheck ] && ls tests/filecheck/*.hlo >/dev/null 2>&1; then
	run "filecheck" sh tests/filecheck/run.sh
fi
for t in tests/e2e/*.sh; do
	[ -f "$t" ] || continue
	run "e2e/$(basename "$t" .sh)" sh "$t"
done
[ -n "$failed" ] && echo "failed:$failed"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
