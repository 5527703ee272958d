#!/bin/sh
# Issue 15: a shared compile cache whose entry directories another user can
# write. Inputs, each named: a symlink planted as model.neff and as
# temporaries, a squatted model.lock (a symlink to a victim file), an entry
# copied under another key, a directory in place of model.neff, temporaries
# orphaned by SIGKILL, trn1 vs trn1n. The compile always succeeds, the victim
# file is never written, and nothing wrong is served.
set -u
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
chmod 755 "$T"
umask 000 # a cache shared between users
C="$T/cache"
unset NEURON_COMPILE_CACHE_URL NEURON_CC_FLAGS
fail() { echo "FAIL: $*"; exit 1; }
tc() { "$NXCC" cache test-compile "$@"; }
# plant files as another user when we can (root in CI), else as ourselves
as_other() {
	if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null 2>&1; then
		setpriv --reuid=65534 --regid=65534 --clear-groups "$@"
	else
		"$@"
	fi
}
printf 'precious\n' > "$T/victim"
chmod 666 "$T/victim"

out=$(tc --key aa --cache-dir "$C") || fail "first compile"
E=$(ls -d "$C"/nxcc-*/MODULE_aa+*) || fail "no entry directory"
K=$(basename "$E")
# directories: world writable with the sticky bit, like /var/tmp
[ "$(stat -c %a "$E")" = 1777 ] || fail "entry dir mode $(stat -c %a "$E")"
# model.done holds the sha256 and the key
[ "$(cat "$E/model.done")" = "$(sha256sum "$E/model.neff" | cut -c1-64) $K" ] || fail "model.done: $(cat "$E/model.done")"

# symlink_planted_model_neff: the next store replaces the link, never writes through it
rm -f "$E/model.done" "$E/model.neff"
as_other ln -s "$T/victim" "$E/model.neff"
for p in 1 2 3 4 5 6 7 8 9 $$; do as_other ln -s "$T/victim" "$E/model.neff.tmp.$p"; done
out=$(tc --key aa --cache-dir "$C") || fail "compile over a planted symlink"
[ "$out" = "cache miss" ] || fail "planted symlink: $out"
[ "$(cat "$T/victim")" = precious ] || fail "victim file was overwritten"
[ -f "$E/model.neff" ] && [ ! -L "$E/model.neff" ] || fail "model.neff is still a link"
out=$(tc --key aa --cache-dir "$C") || fail "hit after repair"
case "$out" in "cache hit"*) ;; *) fail "after repair: $out";; esac

# lock_squatted_symlink: model.lock is a link to the victim
rm -f "$E/model.lock" "$E/model.done"
as_other ln -s "$T/victim" "$E/model.lock"
out=$(tc --key aa --cache-dir "$C" 2>"$T/err") || fail "compile with a squatted lock: $(cat "$T/err")"
[ "$(cat "$T/victim")" = precious ] || fail "victim written through the lock"
grep -q "compiling without the lock\|cannot open lock" "$T/err" || true
rm -f "$E/model.lock"

# entry_copied_from_other_key: a whole entry copied under another key
out=$(tc --key bb --cache-dir "$C") || fail "compile bb"
EB=$(ls -d "$C"/nxcc-*/MODULE_bb+*)
printf 'other' > "$T/other.neff"
cp "$E/model.neff" "$EB/model.neff"; cp "$E/model.done" "$EB/model.done"
"$NXCC" cache verify --cache-dir "$C" > "$T/v" && fail "verify accepted an entry copied from another key"
grep -q "corrupt: .*MODULE_bb" "$T/v" || fail "verify output: $(cat "$T/v")"
out=$(tc --key bb --cache-dir "$C" 2>"$T/err") || fail "compile over a copied entry"
[ "$out" = "cache miss" ] || fail "copied entry served: $out"
"$NXCC" cache verify --cache-dir "$C" >/dev/null || fail "verify after recompiling bb"

# directory_in_place_of_model_neff: a miss, and the store moves it aside
rm -f "$E/model.done" "$E/model.neff"
mkdir -p "$E/model.neff/sub"; : > "$E/model.neff/sub/x"
out=$(tc --key aa --cache-dir "$C" 2>"$T/err") || fail "compile with a directory as model.neff"
[ "$out" = "cache miss" ] || fail "directory as model.neff: $out"
[ -f "$E/model.neff" ] || fail "the directory still blocks model.neff"
out=$(tc --key aa --cache-dir "$C") || fail "hit after the directory"
case "$out" in "cache hit"*) ;; *) fail "cache disabled by a directory: $out";; esac

# orphans_after_sigkill: temporaries of killed writers; prune sweeps old ones only
: > "$E/model.neff.tmp.4242"; : > "$E/model.done.tmp.AbC123"
ls -d "$E"/model.neff.tmp.dir.* >/dev/null 2>&1 || fail "the directory was not moved aside"
touch -h -d '2 hours ago' "$E"/*.tmp.*
: > "$E/model.neff.tmp.fresh1"
"$NXCC" cache prune --cache-dir "$C" --max-size 1G > "$T/p" || fail "prune"
[ ! -e "$E/model.neff.tmp.4242" ] && [ ! -e "$E/model.done.tmp.AbC123" ] || fail "prune left orphans: $(ls "$E")"
[ ! -e "$E/model.neff.tmp.1" ] || fail "prune left planted links"
[ -e "$E/model.neff.tmp.fresh1" ] || fail "prune removed a live writer's temporary"
ls -d "$E"/model.neff.tmp.dir.* >/dev/null 2>&1 && fail "moved-aside directory not swept"
[ "$(cat "$T/victim")" = precious ] || fail "prune followed a link"
grep -q "orphaned temporaries" "$T/p" || fail "prune output: $(cat "$T/p")"

# trn1_vs_trn1n: the .neff names its target, so each target has its own key
tc --key tt --cache-dir "$C" --target trn1 >/dev/null || fail "trn1"
tc --key tt --cache-dir "$C" --target trn1n >/dev/null || fail "trn1n"
[ "$(ls -d "$C"/nxcc-*/MODULE_tt+* | wc -l)" -eq 2 ] || fail "trn1 and trn1n share a key"
echo ok
