#!/bin/sh
# Compile cache on a local directory, driven by `nxcc cache test-compile`
# (the compile driver's cache protocol with a fake compiler).
set -u
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
C="$T/cache"
unset NEURON_COMPILE_CACHE_URL NEURON_CC_FLAGS
fail() { echo "FAIL: $*"; exit 1; }
tc() { "$NXCC" cache test-compile "$@"; }

out=$(tc --key aa --cache-dir "$C" --target trn1 -O2) || fail "first compile"
[ "$out" = "cache miss" ] || fail "expected miss, got '$out'"
E=$(ls -d "$C"/nxcc-*/MODULE_aa+*) || fail "no entry directory"
for f in compile_flags.json model.neff model.done; do [ -f "$E/$f" ] || fail "missing $f"; done
[ "$(head -c 64 "$E/model.done")" = "$(sha256sum "$E/model.neff" | cut -c1-64)" ] || fail "model.done is not the neff's sha256"
grep -q '"target":"trn1"' "$E/compile_flags.json" || fail "compile_flags.json: $(cat "$E/compile_flags.json")"

# the same flags spelled differently hit the same entry
for spelling in "--optlevel 2" "--optlevel=O2" "-O 2" "--target=trn1"; do
	out=$(tc --key aa --cache-dir "$C" $spelling -o "$T/out.neff") || fail "hit with $spelling"
	case "$out" in "cache hit ($E)") ;; *) fail "expected hit with '$spelling', got '$out'";; esac
done
cmp -s "$T/out.neff" "$E/model.neff" || fail "--output differs from the cached neff"

# flags that change the output change the key; no-effect flags do not
out=$(tc --key aa --cache-dir "$C" -O1) || fail "-O1"
[ "$out" = "cache miss" ] || fail "-O1 should be a different entry"
out=$(tc --key aa --cache-dir "$C" --enable-fast-context-switch --verbose=info) || fail "no-effect flags"
case "$out" in "cache hit"*) ;; *) fail "no-effect flags changed the key: $out";; esac

# location from NEURON_COMPILE_CACHE_URL, and --cache_dir in NEURON_CC_FLAGS
out=$(NEURON_COMPILE_CACHE_URL="$C" tc --key aa) || fail "env url"
case "$out" in "cache hit"*) ;; *) fail "NEURON_COMPILE_CACHE_URL not used: $out";; esac
out=$(NEURON_CC_FLAGS="--cache_dir=$C --optlevel 2" tc --key aa) || fail "NEURON_CC_FLAGS"
case "$out" in "cache hit"*) ;; *) fail "NEURON_CC_FLAGS --cache_dir not used: $out";; esac
out=$(tc --key aa --cache-dir "$C" --no-cache) || fail "--no-cache"
[ "$out" = "cache miss (cache disabled)" ] || fail "--no-cache: $out"

# a failed compile is remembered, until --retry-failed
tc --key bb --cache-dir "$C" --fail 2>/dev/null && fail "--fail should fail"
EB=$(ls -d "$C"/nxcc-*/MODULE_bb+*)
[ -f "$EB/model.log" ] && [ ! -f "$EB/model.done" ] || fail "failed entry layout"
err=$(tc --key bb --cache-dir "$C" 2>&1) && fail "cached failure should fail again"
echo "$err" | grep -q "previous compile of this module failed" || fail "message: $err"
echo "$err" | grep -q "fake compile failed on purpose" || fail "log not shown: $err"
out=$(tc --key bb --cache-dir "$C" --retry-failed) || fail "--retry-failed"
[ "$out" = "cache miss" ] || fail "--retry-failed should compile: $out"
[ ! -f "$EB/model.log" ] && [ -f "$EB/model.done" ] || fail "retry did not replace the failure"

# a corrupt neff is a miss, with a warning, and is replaced
printf 'garbage' > "$E/model.neff"
"$NXCC" cache verify --cache-dir "$C" > "$T/v" && fail "verify should report corruption"
grep -q "corrupt: .*MODULE_aa" "$T/v" || fail "verify output: $(cat "$T/v")"
out=$(tc --key aa --cache-dir "$C" 2>"$T/err") || fail "compile over corrupt entry"
[ "$out" = "cache miss" ] || fail "corrupt entry should miss: $out"
grep -q "corrupt" "$T/err" || fail "no corruption warning: $(cat "$T/err")"
out=$(tc --key aa --cache-dir "$C") || fail "after repair"
case "$out" in "cache hit"*) ;; *) fail "repaired entry should hit: $out";; esac
"$NXCC" cache verify --cache-dir "$C" || fail "verify after repair"

# an entry without model.done does not exist
EC="$C/nxcc-0.1.0/MODULE_cc+$(basename "$E" | sed 's/.*+//')"
mkdir -p "$EC"; cp "$E/model.neff" "$E/compile_flags.json" "$EC/"
out=$(tc --key cc --cache-dir "$C") || fail "incomplete entry"
[ "$out" = "cache miss" ] || fail "entry without model.done should miss: $out"

# maintenance
"$NXCC" cache list --cache-dir "$C" > "$T/list" || fail "list"
[ "$(wc -l < "$T/list")" -eq 4 ] || fail "list: $(cat "$T/list")"
"$NXCC" cache stats --cache-dir "$C" > "$T/stats" || fail "stats"
grep -q "total: 4 entries (4 done" "$T/stats" || fail "stats: $(cat "$T/stats")"
"$NXCC" cache clear-locks --cache-dir "$C" | grep -q "removed 4 unused lock files" || fail "clear-locks"
"$NXCC" cache prune --cache-dir "$C" --max-size 9K || fail "prune"
"$NXCC" cache stats --cache-dir "$C" | grep -q "total: 2 entries" || fail "prune left: $("$NXCC" cache stats --cache-dir "$C")"
"$NXCC" cache prune --cache-dir "$C" --max-size 0 >/dev/null || fail "prune all"
[ -z "$("$NXCC" cache list --cache-dir "$C")" ] || fail "prune 0 left entries"
"$NXCC" cache prune --cache-dir "$C" --max-size 12X 2>/dev/null && fail "bad size accepted"
"$NXCC" cache frobnicate --cache-dir "$C" 2>/dev/null && fail "unknown subcommand accepted"
echo ok
