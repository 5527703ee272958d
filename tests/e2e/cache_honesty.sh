#!/bin/sh
# The compile cache says what happened (issue 13): the result line reads
# "stored in WHERE" or "not stored: <reason>", one warning per failed cache
# operation; one location rule (--cache_dir/--cache-dir > NEURON_COMPILE_CACHE_URL
# > default) in compile, cache list/stats/prune/verify and parallel-compile;
# read-only commands never create a directory; the default directory is
# shared (1777, entries readable by all) so a second user can store; an
# unknown --disable-pass name does not split the key.
set -u
fail() { echo "FAIL: $*"; exit 1; }
T=$(mktemp -d)
PIDS=""
trap 'for p in $PIDS; do kill $p 2>/dev/null; done; chmod -R u+rwx "$T" 2>/dev/null; rm -rf "$T"' EXIT
chmod 755 "$T"
unset NEURON_CC_FLAGS NEURON_COMPILE_CACHE_URL
M="$NX_ROOT/examples/linear_step.hlo"
cd "$T" || exit 1
warnings() { grep -c "warning" "$1"; }

# --- result lines
"$NXCC" compile "$M" --cache-dir "$T/c1" -o a.neff > o1 2>&1 || fail "compile: $(cat o1)"
grep -q "^cache miss: compiled $M in [0-9.]* s, stored in $T/c1/nxcc-[^/]*/MODULE_" o1 || fail "stored line: $(cat o1)"
[ "$(warnings o1)" -eq 0 ] || fail "warnings on a plain miss: $(cat o1)"
# a cache root that cannot exist (under a file): one warning, not stored
echo x > "$T/afile"
"$NXCC" compile "$M" --cache-dir "$T/afile/cache" -o b.neff > o2 2>&1 || fail "unusable cache failed the compile: $(cat o2)"
[ "$(warnings o2)" -eq 1 ] || fail "want one warning: $(cat o2)"
grep -q "^nxcc: warning: compile cache unusable: .*cannot create compile cache directory: Not a directory" o2 || fail "warning text: $(cat o2)"
grep -q "^cache miss: compiled .* not stored: .*cannot create compile cache directory: Not a directory" o2 || fail "not-stored line: $(cat o2)"
# a root whose version directory cannot be made: the lookup misses, the
# lock and the store cannot work: one warning (not three), not stored
mkdir "$T/c2"; VER=$(basename "$(ls -d "$T"/c1/nxcc-*)"); echo x > "$T/c2/$VER"
"$NXCC" compile "$M" --cache-dir "$T/c2" -o b.neff > o3 2>&1 || fail "compile: $(cat o3)"
[ "$(warnings o3)" -eq 1 ] || fail "want exactly one warning: $(cat o3)"
grep -q "^nxcc: warning: compile cache $T/c2: lock failed (cannot create a lock directory for MODULE_.*: Not a directory); continuing without the cache" o3 \
	|| fail "lock warning: $(cat o3)"
grep -q "^cache miss: compiled .* not stored: lock failed: cannot create a lock directory" o3 || fail "not-stored line: $(cat o3)"
cmp -s a.neff b.neff || fail "the .neff differs"

# EACCES, as a user who may not write the cache (root may write anything)
if [ "$(id -u)" -eq 0 ]; then
	mkdir "$T/c3"; chmod 755 "$T/c3"
	setpriv --reuid=65534 --regid=65534 --clear-groups "$NXCC" compile "$M" --cache-dir "$T/c3" -o /dev/null > o4 2>&1 \
		|| fail "EACCES compile: $(cat o4)"
	[ "$(warnings o4)" -eq 1 ] || fail "EACCES: want one warning: $(cat o4)"
	grep -q "^cache miss: compiled .* not stored: lock failed: cannot create a lock directory for MODULE_.*: Permission denied" o4 \
		|| fail "EACCES line: $(cat o4)"
fi

# S3: a bucket that does not exist, and a server that is down
export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=us-east-1 NXCC_S3_BACKOFF_MS=1 TMPDIR="$T"
python3 "$NX_ROOT/tests/s3/stub.py" --buckets real --log "$T/s3.log" > s3.port 2> s3.err &
PIDS="$PIDS $!"
i=0; while [ ! -s s3.port ]; do i=$((i + 1)); [ $i -gt 100 ] && fail "stub: $(cat s3.err)"; sleep 0.1; done
export AWS_ENDPOINT_URL_S3="http://127.0.0.1:$(cat s3.port)"
"$NXCC" compile "$M" --cache-dir s3://real/p -o /dev/null > o5 2>&1 || fail "s3 compile: $(cat o5)"
grep -q "^cache miss: compiled .*, stored in s3://real/p/nxcc-" o5 || fail "s3 stored line: $(cat o5)"
"$NXCC" compile "$M" --cache-dir s3://nosuch/p -o /dev/null > o6 2>&1 || fail "NoSuchBucket compile: $(cat o6)"
[ "$(warnings o6)" -eq 1 ] || fail "NoSuchBucket: want one warning: $(cat o6)"
grep -q "^cache miss: compiled .* not stored: lookup failed: GET .*S3 error 404 NoSuchBucket" o6 || fail "NoSuchBucket line: $(cat o6)"
AWS_ENDPOINT_URL_S3=http://127.0.0.1:9 "$NXCC" compile "$M" --cache-dir s3://real/p -o /dev/null > o7 2>&1 || fail "S3 down: $(cat o7)"
[ "$(warnings o7)" -eq 1 ] || fail "S3 down: want one warning: $(cat o7)"
grep -q "^cache miss: compiled .* not stored: lookup failed: GET http://127.0.0.1:9/real/p/nxcc-.*: .*onnect" o7 || fail "S3 down line: $(cat o7)"
unset AWS_ENDPOINT_URL_S3

# --- one location rule everywhere
A="$T/env-cache" B="$T/flag-cache"
export NEURON_COMPILE_CACHE_URL="$A" NEURON_CC_FLAGS="--cache_dir=$B"
"$NXCC" compile "$M" -o /dev/null > p1 2>&1 || fail "compile: $(cat p1)"
grep -q "stored in $B/" p1 || fail "compile did not use --cache_dir from NEURON_CC_FLAGS: $(cat p1)"
[ -e "$A" ] && fail "compile created NEURON_COMPILE_CACHE_URL's directory"
KEY=$(sed -n 's|.*stored in .*/\(MODULE_[^ ]*\)$|\1|p' p1)
"$NXCC" cache list > p2 2>&1 || fail "cache list: $(cat p2)"
grep -q "^done .*$KEY" p2 || fail "cache list looked elsewhere: $(cat p2)"
"$NXCC" cache stats > p3 2>&1 || fail "cache stats: $(cat p3)"
grep -q "^cache: $B (dir)" p3 || fail "cache stats: $(cat p3)"
"$NXCC" cache verify > p4 2>&1 || fail "cache verify: $(cat p4)"
grep -q "^1 entries verified, 0 corrupt" p4 || fail "cache verify: $(cat p4)"
[ -e "$A" ] && fail "a read-only command created NEURON_COMPILE_CACHE_URL's directory"
mkdir -p "$T/pc"; cp "$M" "$T/pc/"
"$NXCC" parallel-compile --quiet --report pc.json "$T/pc" > p5 2>&1 || fail "parallel-compile: $(cat p5)"
grep -q '"status":"cached"' pc.json || fail "parallel-compile did not find compile's entry: $(cat pc.json p5)"
"$NXCC" cache prune --max-size 0 > p6 2>&1 || fail "cache prune: $(cat p6)"
grep -q "^pruned 1 entries" p6 || fail "prune acted elsewhere: $(cat p6)"
[ -z "$(ls "$B"/nxcc-*/ 2>/dev/null)" ] || fail "prune left $B's entry"
# the command line wins over both
"$NXCC" cache stats --cache_dir "$T/c1" > p7 2>&1 || fail "stats --cache_dir: $(cat p7)"
grep -q "^cache: $T/c1 (dir)" p7 || fail "--cache_dir on the command line: $(cat p7)"
# without --cache_dir anywhere, NEURON_COMPILE_CACHE_URL
NEURON_CC_FLAGS= "$NXCC" compile "$M" -o /dev/null > p8 2>&1 || fail "compile: $(cat p8)"
grep -q "stored in $A/" p8 || fail "NEURON_COMPILE_CACHE_URL not used: $(cat p8)"
unset NEURON_COMPILE_CACHE_URL NEURON_CC_FLAGS

# --- read-only commands never create directories
for c in list stats verify "prune --max-size 1G" clear-locks; do
	"$NXCC" cache $c --cache-dir "$T/typo/cache" > r1 2>&1 && fail "cache $c on a missing cache succeeded"
	grep -q "error: no compile cache at $T/typo/cache (No such file or directory)" r1 || fail "cache $c message: $(cat r1)"
	[ -e "$T/typo" ] && fail "cache $c created $T/typo"
done

# --- the default directory is shared: sticky 1777, entries readable by all
export NXCC_TEST_HOOKS=1 NXCC_TEST_DEFAULT_CACHE_DIR="$T/default"
(umask 077; "$NXCC" compile "$M" -o /dev/null > d1 2>&1) || fail "default compile: $(cat d1)"
[ "$(stat -c %a "$T/default")" = 1777 ] || fail "default dir mode $(stat -c %a "$T/default")"
[ "$(stat -c %a "$T/default/$VER")" = 1777 ] || fail "version dir mode $(stat -c %a "$T/default/$VER")"
for f in "$T"/default/"$VER"/MODULE_*/model.neff "$T"/default/"$VER"/MODULE_*/model.done; do
	[ "$(stat -c %a "$f")" = 644 ] || fail "$f mode $(stat -c %a "$f") under umask 077"
done
[ "$(stat -c %a "$(dirname "$f")")" = 1777 ] || fail "entry dir mode"
if [ "$(id -u)" -eq 0 ]; then
	# a second user reads root's entry and adds an entry of their own
	setpriv --reuid=65534 --regid=65534 --clear-groups "$NXCC" compile "$M" -o /dev/null > d2 2>&1 || fail "2nd user: $(cat d2)"
	grep -q "^cache hit" d2 || fail "second user cannot read the entry: $(cat d2)"
	setpriv --reuid=65534 --regid=65534 --clear-groups "$NXCC" compile "$M" -O1 -o /dev/null > d3 2>&1 || fail "2nd user: $(cat d3)"
	grep -q "^cache miss: .* stored in $T/default/" d3 || fail "second user cannot store: $(cat d3)"
fi
unset NXCC_TEST_HOOKS NXCC_TEST_DEFAULT_CACHE_DIR

# --- an unknown --disable-pass name does not split the key
"$NXCC" compile "$M" --cache-dir "$T/c1" --disable-pass no-such-pass -o /dev/null > k1 2>&1 || fail "disable-pass: $(cat k1)"
grep -q "^cache hit" k1 || fail "unknown --disable-pass split the key: $(cat k1)"
grep -q "warning: --disable-pass=no-such-pass: nxcc has no pass of that name" k1 || fail "no warning: $(cat k1)"
echo "cache_honesty: ok"
