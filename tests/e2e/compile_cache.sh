#!/bin/sh
# nxcc compile with the compile cache (local directory): miss then hit with
# identical bytes, cached failures and --retry-failed, SIGKILL mid-store,
# two concurrent compiles of one key, neuronx-cc flag spellings and
# NEURON_CC_FLAGS in the key.
set -u
T=$(mktemp -d); trap 'kill -9 $(jobs -p) 2>/dev/null; rm -rf "$T"' EXIT
unset NEURON_COMPILE_CACHE_URL NEURON_CC_FLAGS NXCC_TEST_HOOKS NXCC_TEST_HANG_ON NXCC_TEST_STALL_BEFORE_DONE
fail() { echo "FAIL: $*"; exit 1; }
C="$T/cache"
M="$NX_ROOT/examples/mlp_step.hlo"
cc() { "$NXCC" compile --cache-dir "$C" "$@"; }

# 1. miss, then hit with the same bytes
cc "$M" --output "$T/a.neff" > "$T/o1" 2>&1 || fail "compile: $(cat "$T/o1")"
grep -q "^cache miss" "$T/o1" || fail "first compile not a miss: $(cat "$T/o1")"
cc "$M" --output "$T/b.neff" > "$T/o2" 2>&1 || fail "second compile: $(cat "$T/o2")"
grep -q "^cache hit ($C/nxcc-.*/MODULE_" "$T/o2" || fail "second compile not a hit: $(cat "$T/o2")"
cmp -s "$T/a.neff" "$T/b.neff" || fail "cached .neff differs"
"$NXCC" compile "$M" --no-cache --output "$T/c.neff" > "$T/o3" 2>&1 || fail "--no-cache"
grep -q "cache" "$T/o3" && fail "--no-cache used the cache: $(cat "$T/o3")"
cmp -s "$T/a.neff" "$T/c.neff" || fail "uncached compile gives other bytes"
E=$(ls -d "$C"/nxcc-*/MODULE_*)
for f in model.hlo_module.pb compile_flags.json model.neff model.done; do
	[ -s "$E/$f" ] || fail "entry lacks $f"
done
"$NXCC" parse "$E/model.hlo_module.pb" > /dev/null || fail "stored model.hlo_module.pb does not read back"

# 2. a failed compile is cached, reported without recompiling, exit 1
printf 'HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  q = f32[3] parameter(1)\n  ROOT a = f32[4] add(p, q)\n}\n' > "$T/bad.hlo"
cc "$T/bad.hlo" -o "$T/bad.neff" > "$T/f1" 2>&1; rc=$?
[ $rc -eq 1 ] || fail "failed compile exit status $rc"
[ -e "$T/bad.neff" ] && fail "output written for a failed compile"
grep -q "incompatible" "$T/f1" || fail "diagnostic missing: $(cat "$T/f1")"
L=$(ls "$C"/nxcc-*/MODULE_*/model.log) || fail "no model.log stored"
grep -q "incompatible" "$L" || fail "model.log lacks the diagnostic"
cc "$T/bad.hlo" -o "$T/bad.neff" > "$T/f2" 2>&1; rc=$?
[ $rc -eq 1 ] || fail "cached failure exit status $rc"
grep -q "previous compile of .* failed" "$T/f2" || fail "not reported as cached failure: $(cat "$T/f2")"
grep -q "incompatible" "$T/f2" || fail "cached failure lacks the diagnostic"
cc "$T/bad.hlo" -o "$T/bad.neff" --retry-failed > "$T/f3" 2>&1
grep -q "previous compile" "$T/f3" && fail "--retry-failed did not recompile"
grep -q "incompatible" "$T/f3" || fail "--retry-failed: $(cat "$T/f3")"

# 3. SIGKILL between model.neff and model.done (lock held): no stale lock,
# no entry a reader would take; the next compile is a miss without waiting
K="$NX_ROOT/examples/linear_step.hlo"
NXCC_TEST_HOOKS=1 NXCC_TEST_STALL_BEFORE_DONE=30 "$NXCC" compile --cache-dir "$C" "$K" -o "$T/k.neff" > /dev/null 2>&1 &
P=$!
i=0
until "$NXCC" cache list --cache-dir "$C" | grep -q "^incomplete"; do
	[ $i -lt 100 ] || fail "the stalled compile never stored its neff"
	sleep 0.1; i=$((i + 1))
done
kill -9 $P; wait $P 2>/dev/null
[ -e "$T/k.neff" ] && fail "killed compile left an output file"
start=$(date +%s)
cc "$K" -o "$T/k.neff" > "$T/k1" 2>&1 || fail "compile after kill: $(cat "$T/k1")"
[ $(( $(date +%s) - start )) -lt 10 ] || fail "compile after kill waited on a stale lock"
grep -q "^cache miss" "$T/k1" || fail "partial entry taken as a hit: $(cat "$T/k1")"
grep -q "waited" "$T/k1" && fail "waited on a dead compile's lock"
"$NXCC" cache list --cache-dir "$C" | grep -q "^incomplete" && fail "entry still incomplete"

# 4. two compiles of one key at once: one compiles, the other waits and hits
C2="$T/cache2"
NXCC_TEST_HOOKS=1 NXCC_TEST_STALL_BEFORE_DONE=2 "$NXCC" compile --cache-dir "$C2" "$M" -o "$T/p.neff" > "$T/p1" 2>&1 &
A=$!
sleep 0.7
"$NXCC" compile --cache-dir "$C2" "$M" -o "$T/q.neff" > "$T/p2" 2>&1 || fail "second concurrent compile: $(cat "$T/p2")"
wait $A || fail "first concurrent compile: $(cat "$T/p1")"
grep -q "^cache miss" "$T/p1" || fail "first: $(cat "$T/p1")"
grep -q "^cache hit" "$T/p2" || fail "second did not hit: $(cat "$T/p2")"
grep -q "waited for another compile" "$T/p2" || fail "second did not wait: $(cat "$T/p2")"
cmp -s "$T/p.neff" "$T/q.neff" || fail "concurrent outputs differ"

# 5. neuronx-cc flags: NEURON_CC_FLAGS drives compile and the key
C3="$T/cache3"
NEURON_CC_FLAGS="--target trn1 --auto-cast all --auto-cast-type bf16 --model-type transformer --optlevel O1" \
	"$NXCC" compile --cache-dir "$C3" "$M" -o "$T/n.neff" > "$T/n1" 2>&1 || fail "NEURON_CC_FLAGS compile: $(cat "$T/n1")"
J=$(cat "$C3"/nxcc-*/MODULE_*/compile_flags.json)
case "$J" in *'"model_type":"transformer"'*'"auto_cast":"all"'*'"auto_cast_type":"bf16"'*'"optlevel":1'*) ;;
	*) fail "compile_flags.json: $J";; esac
"$NXCC" compile --cache-dir "$C3" "$M" -o "$T/n2.neff" --target=trn1 --auto-cast=all --auto-cast-type=bf16 \
	--model-type=transformer -O1 > "$T/n2" 2>&1 || fail "flags: $(cat "$T/n2")"
grep -q "^cache hit" "$T/n2" || fail "same flags in the other spelling gave another key: $(cat "$T/n2")"
C4="$T/cache4"
"$NXCC" compile --cache-dir "$C4" "$M" -o "$T/o.neff" --optlevel 1 > "$T/l1" 2>&1 || fail "--optlevel 1"
grep -q "^cache miss" "$T/l1" || fail "--optlevel 1: $(cat "$T/l1")"
for spelling in --optlevel=1 -O1 "--optlevel O1"; do
	"$NXCC" compile --cache-dir "$C4" "$M" -o "$T/o.neff" $spelling > "$T/l2" 2>&1 || fail "$spelling"
	grep -q "^cache hit" "$T/l2" || fail "$spelling gave another key: $(cat "$T/l2")"
done
NEURON_CC_FLAGS=-O3 "$NXCC" compile --cache-dir "$C4" "$M" -o "$T/o.neff" -O1 > "$T/l3" 2>&1 || fail "env+cmdline"
grep -q "^cache hit" "$T/l3" || fail "command line did not win over NEURON_CC_FLAGS: $(cat "$T/l3")"
"$NXCC" compile --cache-dir "$C4" "$M" -o "$T/o.neff" -O3 > "$T/l4" 2>&1 || fail "-O3"
grep -q "^cache miss" "$T/l4" || fail "-O3 shares -O1's key: $(cat "$T/l4")"
"$NXCC" compile --cache-dir "$C4" "$M" -o "$T/o.neff" -O1 --enable-fast-loading-neuron-binaries --verbose info \
	> "$T/l5" 2>&1 || fail "no-effect flag: $(cat "$T/l5")"
grep -q "enable-fast-loading-neuron-binaries accepted" "$T/l5" || fail "no-effect flag not logged: $(cat "$T/l5")"
grep -q "^cache hit" "$T/l5" || fail "no-effect flag changed the key"
"$NXCC" compile "$M" --bogus-flag -o "$T/o.neff" > /dev/null 2>&1 && fail "unknown flag accepted"
# a pipe is read once: compiled without the cache, twice in a row, and a
# regular file of the same text then compiles (no entry poisoned by a pipe)
C5="$T/c5"
for k in 1 2; do
	cat "$M" | "$NXCC" compile --cache-dir "$C5" /dev/stdin -o "$T/s$k.neff" > "$T/s$k" 2>&1 ||
		fail "compile from a pipe ($k): $(cat "$T/s$k")"
done
cmp -s "$T/s1.neff" "$T/s2.neff" || fail "two compiles from a pipe differ"
"$NXCC" compile --cache-dir "$C5" "$M" -o "$T/s3.neff" > "$T/s3" 2>&1 || fail "file after pipe: $(cat "$T/s3")"
grep -q "^cache miss" "$T/s3" || fail "the pipe compile left a cache entry: $(cat "$T/s3")"
echo "compile cache: ok"
