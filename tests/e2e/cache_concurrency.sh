#!/bin/sh
# Concurrent compiles of one key, and crash safety (SIGKILL mid-compile and
# mid-store), on a local directory cache.
set -u
T=$(mktemp -d); trap 'kill -9 $(jobs -p) 2>/dev/null; rm -rf "$T"' EXIT
C="$T/cache"
unset NEURON_COMPILE_CACHE_URL NEURON_CC_FLAGS
fail() { echo "FAIL: $*"; exit 1; }
now() { date +%s.%N; }
elapsed() { python3 -c "print(f'{$(now) - $1:.2f}')"; }
lt() { python3 -c "import sys; sys.exit(0 if $1 < $2 else 1)"; }
tc() { "$NXCC" cache test-compile "$@"; }

# 1. two compiles of one key at once: one compiles, the other waits and hits
t0=$(now)
tc --key same --cache-dir "$C" --sleep 2 > "$T/a" 2>"$T/a.err" &
A=$!
sleep 0.3
tc --key same --cache-dir "$C" --sleep 2 > "$T/b" 2>"$T/b.err" &
B=$!
wait $A || fail "first compile failed: $(cat "$T/a.err")"
wait $B || fail "second compile failed: $(cat "$T/b.err")"
dt=$(elapsed "$t0")
[ "$(cat "$T/a")" = "cache miss" ] || fail "first: $(cat "$T/a")"
grep -q "^cache hit" "$T/b" || fail "second should wait and hit: $(cat "$T/b")"
grep -q "waited for another compile" "$T/b.err" || fail "second did not wait: $(cat "$T/b.err")"
lt "$dt" 3.5 || fail "compiles were not shared (took ${dt}s, one compile is 2s)"

# 2. a compiler killed while compiling (lock held) leaves no stale lock
"$NXCC" cache test-compile --key crash --cache-dir "$C" --sleep 30 > /dev/null 2>&1 &
K=$!
sleep 0.5
kill -9 $K; wait $K 2>/dev/null
t0=$(now)
out=$(tc --key crash --cache-dir "$C") || fail "compile after crash"
dt=$(elapsed "$t0")
[ "$out" = "cache miss" ] || fail "after crash: $out"
lt "$dt" 1.5 || fail "waited ${dt}s on a dead compiler's lock"

# 3. a writer killed after model.neff, before model.done: partial entry is a miss
"$NXCC" cache test-compile --key partial --cache-dir "$C" --stall-before-done 30 > /dev/null 2>&1 &
K=$!
E=""
for i in $(seq 1 50); do
	E=$(ls -d "$C"/nxcc-*/MODULE_partial+* 2>/dev/null)
	[ -n "$E" ] && [ -f "$E/model.neff" ] && break
	sleep 0.1
done
[ -f "$E/model.neff" ] || fail "writer never wrote model.neff"
[ -f "$E/model.done" ] && fail "model.done written before the stall"
kill -9 $K; wait $K 2>/dev/null
printf 'truncated' > "$E/model.neff"   # as if the neff itself were cut short
out=$(tc --key partial --cache-dir "$C") || fail "compile after partial write"
[ "$out" = "cache miss" ] || fail "partial entry was used: $out"
out=$(tc --key partial --cache-dir "$C") || fail "hit after rewrite"
case "$out" in "cache hit"*) ;; *) fail "rewritten entry should hit: $out";; esac
"$NXCC" cache verify --cache-dir "$C" >/dev/null || fail "verify after crash tests"

# 4. four concurrent compiles of one key: exactly one miss
for i in 1 2 3 4; do tc --key four --cache-dir "$C" --sleep 1 > "$T/p$i" 2>/dev/null & done
wait
[ "$(cat "$T"/p1 "$T"/p2 "$T"/p3 "$T"/p4 | grep -c '^cache miss$')" -eq 1 ] || fail "four-way: $(cat "$T"/p?)"
echo ok
