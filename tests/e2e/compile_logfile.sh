#!/bin/sh
# nxcc compile/check --logfile and --verbose: the log file gets the flags,
# accepted-no-effect flags, the cache key and decision, phase and pass
# timings and errors; --verbose (names and numbers) sets what the console
# shows; the log is written even when the console is quiet.
set -u
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
unset NEURON_COMPILE_CACHE_URL NEURON_CC_FLAGS NXCC_TEST_HOOKS
fail() { echo "FAIL: $*"; exit 1; }
C="$T/cache"
M="$NX_ROOT/examples/mlp_step.hlo"
has() { grep -q -- "$2" "$1" || fail "$1 lacks '$2': $(cat "$1")"; }
hasnt() { grep -q -- "$2" "$1" && fail "$1 has '$2': $(cat "$1")"; return 0; }

# 1. a miss: everything a user needs to know why it took this long
NEURON_CC_FLAGS="--enable-fast-context-switch" "$NXCC" compile "$M" --cache-dir "$C" -o "$T/a.neff" \
	--logfile "$T/l1" --pipeline=compile > "$T/o1" 2> "$T/e1" || fail "compile: $(cat "$T/e1")"
[ -s "$T/l1" ] || fail "no log file"
has "$T/l1" "INFO .*command line: nxcc compile"
has "$T/l1" "NEURON_CC_FLAGS: --enable-fast-context-switch"
has "$T/l1" '"optlevel":2'
has "$T/l1" "\-\-pipeline=compile accepted"
has "$T/l1" "\-\-enable-fast-context-switch accepted"
has "$T/l1" "cache key MODULE_"
has "$T/l1" "cache miss"
has "$T/l1" "pass timing"
has "$T/l1" "fusion .* ms .* runs"
has "$T/l1" "compile done: read .* ms, verify .* ms, passes .* ms, lower .* ms"
has "$T/l1" "cache: stored in $C"
has "$T/l1" "compile PASSED"
hasnt "$T/l1" "DEBUG"
# the console at the default level (warning) stays quiet
[ -s "$T/e1" ] && fail "warning-level console printed: $(cat "$T/e1")"
has "$T/o1" "^cache miss"

# 2. a hit: the decision and no pass pipeline
"$NXCC" compile "$M" --cache-dir "$C" -o "$T/b.neff" --logfile "$T/l2" > "$T/o2" 2>&1 || fail "hit"
has "$T/l2" "cache hit: [0-9]* bytes"
hasnt "$T/l2" "pass timing"
hasnt "$T/l2" "compile done"
cmp -s "$T/a.neff" "$T/b.neff" || fail "hit gives other bytes"

# 3. --verbose: names, case, Python logging numbers, the verbosity count
for v in info INFO 20 1; do
	"$NXCC" compile "$M" --cache-dir "$C" -o "$T/c.neff" --verbose "$v" > /dev/null 2> "$T/e3" || fail "--verbose $v"
	has "$T/e3" "nxcc: info: cache key"
	hasnt "$T/e3" "nxcc: debug:"
done
for v in debug 10 2; do
	"$NXCC" compile "$M" --cache-dir "$C" -o "$T/c.neff" --verbose="$v" --logfile "$T/l3" > /dev/null 2> "$T/e3" ||
		fail "--verbose $v"
	has "$T/e3" "nxcc: debug:"
	has "$T/l3" " DEBUG "
done
for v in warning 30 0 error 40 critical 50; do
	"$NXCC" compile "$M" --cache-dir "$C" -o "$T/c.neff" --verbose "$v" > /dev/null 2> "$T/e3" || fail "--verbose $v"
	[ -s "$T/e3" ] && fail "--verbose $v printed: $(cat "$T/e3")"
done
"$NXCC" compile "$M" --verbose loud -o "$T/x.neff" > /dev/null 2> "$T/e4" && fail "--verbose loud accepted"
has "$T/e4" "invalid value 'loud' for --verbose"
# debug on a miss: the pass manager's messages reach the console and the log
"$NXCC" compile "$M" --no-cache -o "$T/d.neff" --verbose debug --logfile "$T/l5" > /dev/null 2> "$T/e5" || fail "debug miss"
has "$T/e5" "fusion: .* kernels"
has "$T/l5" "fusion: .* kernels"
# --time-passes puts the table on the console whatever --verbose says
"$NXCC" compile "$M" --no-cache -o "$T/d.neff" --time-passes > /dev/null 2> "$T/e6" || fail "--time-passes"
has "$T/e6" "pass timing"

# 4. errors reach the log; --verbose critical keeps a user error off the console only
printf 'HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  q = f32[3] parameter(1)\n  ROOT a = f32[4] add(p, q)\n}\n' > "$T/bad.hlo"
"$NXCC" compile "$T/bad.hlo" --no-cache -o "$T/bad.neff" --logfile "$T/l7" > /dev/null 2> "$T/e7"; rc=$?
[ $rc -eq 1 ] || fail "bad compile exit $rc"
has "$T/e7" "error: .*incompatible"
has "$T/l7" "ERROR .*incompatible"
has "$T/l7" "compile FAILED (exit status 1)"
"$NXCC" compile "$T/bad.hlo" --no-cache -o "$T/bad.neff" --logfile "$T/l8" --verbose critical > /dev/null 2> "$T/e8"; rc=$?
[ $rc -eq 1 ] || fail "bad compile at critical exit $rc"
[ -s "$T/e8" ] && fail "--verbose critical printed a user error: $(cat "$T/e8")"
has "$T/l8" "ERROR .*incompatible"
# the cached failure, too
"$NXCC" compile "$T/bad.hlo" --cache-dir "$C" -o "$T/bad.neff" > /dev/null 2>&1
"$NXCC" compile "$T/bad.hlo" --cache-dir "$C" -o "$T/bad.neff" --logfile "$T/l9" > /dev/null 2>&1 && fail "cached failure passed"
has "$T/l9" "a failed compile is cached"
has "$T/l9" "ERROR .*previous compile of .* failed"

# 5. a log file that cannot be written is an error before any work
"$NXCC" compile "$M" --no-cache -o "$T/e.neff" --logfile "$T/no/such/dir/log" > /dev/null 2> "$T/e10" && fail "bad --logfile accepted"
has "$T/e10" "cannot open the log file"
[ -e "$T/e.neff" ] && fail "compiled despite the bad --logfile"

# 6. nxcc check takes the same flags and NEURON_CC_FLAGS, and logs too
NEURON_CC_FLAGS="--target=trn2 --verbose=INFO" "$NXCC" check "$M" -O1 --logfile "$T/l11" > "$T/o11" 2> "$T/e11" ||
	fail "check: $(cat "$T/o11" "$T/e11")"
has "$T/o11" "check: ok"
has "$T/l11" '"target":"trn2"'
has "$T/l11" '"optlevel":1'
has "$T/l11" "pass timing"
has "$T/l11" "check PASSED"
has "$T/e11" "nxcc: info:"
"$NXCC" check "$M" --optlevel=O3 --auto-cast=matmult --random-inputs 3 > "$T/o12" 2>&1 || fail "check spellings: $(cat "$T/o12")"
"$NXCC" check "$M" --bogus > "$T/o13" 2>&1 && fail "check took an unknown flag"
has "$T/o13" "unknown flag '--bogus'"
NEURON_CC_FLAGS="--target=trn9" "$NXCC" check "$M" > "$T/o14" 2>&1 && fail "check ignored NEURON_CC_FLAGS"
has "$T/o14" "NEURON_CC_FLAGS"

# 7. parallel-compile --logfile: the run's outcomes and each worker's compile
# log in one file (workers do not write the user's file concurrently)
cp "$M" "$NX_ROOT/examples/linear_step.hlo" "$T/" && mkdir -p "$T/pd" && mv "$T/mlp_step.hlo" "$T/linear_step.hlo" "$T/pd/"
"$NXCC" parallel-compile --jobs 2 --cache-dir "$T/pc" --report "$T/pr.json" --logfile "$T/l15" "$T/pd" > "$T/o15" 2>&1 ||
	fail "parallel-compile: $(cat "$T/o15")"
has "$T/l15" "command line: nxcc parallel-compile"
has "$T/l15" "linear_step.hlo: compiled"
has "$T/l15" "mlp_step.hlo: compiled"
[ "$(grep -c "compile PASSED" "$T/l15")" -eq 2 ] || fail "worker logs missing: $(cat "$T/l15")"
has "$T/l15" "parallel-compile: total 2, compiled 2"
ls "$T/pd" | grep -q log && fail "worker logs left next to the inputs"
"$NXCC" parallel-compile --cache-dir "$T/pc" --report "$T/pr.json" --logfile "$T/l16" "$T/pd" > /dev/null 2>&1 || fail "rerun"
[ "$(grep -c ": cached (key MODULE_" "$T/l16")" -eq 2 ] || fail "cached graphs not logged: $(cat "$T/l16")"
# the log does not leak onto the console: --quiet stays quiet, even with a failure
printf 'HloModule broken\nENTRY e {\n' > "$T/pd/broken.hlo"
"$NXCC" parallel-compile --quiet --cache-dir "$T/pc" --report "$T/pr.json" --logfile "$T/l17" "$T/pd" > "$T/o17" 2> "$T/e17"
[ $? -eq 1 ] || fail "parallel-compile with a broken graph"
[ -s "$T/e17" ] && fail "--quiet printed: $(cat "$T/e17")"
has "$T/l17" "ERROR .*broken.hlo: failed"
has "$T/o17" "^failed: .*broken.hlo"
echo "ok"
