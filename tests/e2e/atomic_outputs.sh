#!/bin/sh
# Output files on a full disk: --profile, --report, --output-dir arrays,
# --output .neff and dumps are written whole or not at all (temp file +
# rename). A small tmpfs stands in for the full disk (mounted directly as
# root, else in a user namespace; SKIP where neither is permitted). A file
# that was there before a failed write keeps its old contents.
set -u
fail() { echo "FAIL: $*"; exit 1; }
if [ "${NX_IN_NS:-}" != 1 ]; then
	if [ "$(id -u)" != 0 ]; then
		command -v unshare > /dev/null && unshare -rm true 2> /dev/null ||
			{ echo "SKIP: cannot mount a tmpfs here (not root, no user namespaces)"; exit 0; }
		NX_IN_NS=1 exec unshare -rm sh "$0" "$@"
	fi
fi
tmp=$(mktemp -d)
full="$tmp/full"
mkdir "$full"
trap 'umount "$full" 2> /dev/null; rm -rf "$tmp"' EXIT
mount -t tmpfs -o size=128k tmpfs "$full" 2> /dev/null || { echo "SKIP: mount tmpfs not permitted"; exit 0; }
f="$NX_ROOT/examples/mlp_step.hlo"
"$NXCC" compile "$f" --target trn1 -O2 --no-cache --output "$tmp/m.neff" > /dev/null || fail compile
"$NXCC" run "$tmp/m.neff" --random-inputs 1 --output-dir "$tmp/ref" --profile "$tmp/ref.json" --report "$tmp/ref.html" \
	> /dev/null || fail "run with room"
# leave 6 KiB: less than the trace (~37 KB), report, .neff or all outputs need
avail=$(df -k --output=avail "$full" | tail -1)
dd if=/dev/zero of="$full/filler" bs=1k count=$((avail - 6)) 2> /dev/null
echo "free on the small disk: $(df -k --output=avail "$full" | tail -1) KiB"
no_temp() { ls -a "$full" "$full"/* 2> /dev/null | grep -q '\.tmp\.' && fail "$1 left a temporary file: $(ls -aR "$full")"; return 0; }

echo old > "$full/p.json"
"$NXCC" run "$tmp/m.neff" --random-inputs 1 --profile "$full/p.json" > /dev/null 2> "$tmp/err" && fail "--profile on a full disk succeeded"
grep -q "p.json" "$tmp/err" || fail "error does not name the profile: $(cat "$tmp/err")"
[ "$(cat "$full/p.json")" = old ] || fail "the old profile was replaced by a partial one"
rm "$full/p.json"; no_temp "--profile"
# the small summary still fits
"$NXCC" run "$tmp/m.neff" --random-inputs 1 --profile "$full/s.json" --profile-format summary-json > /dev/null ||
	fail "a 1 KB summary did not fit: $(df -k --output=avail "$full" | tail -1) KiB free"
python3 -c "import json; json.load(open('$full/s.json'))" || fail "summary unreadable"
rm "$full/s.json"

"$NXCC" run "$tmp/m.neff" --random-inputs 1 --report "$full/r.html" > /dev/null 2>&1 && fail "--report on a full disk succeeded"
[ -e "$full/r.html" ] && fail "partial report left"
no_temp "--report"

"$NXCC" compile "$f" --target trn1 -O2 --no-cache --output "$full/x.neff" > /dev/null 2>&1 && fail ".neff on a full disk"
[ -e "$full/x.neff" ] && fail "partial .neff left"
no_temp "--output"

"$NXCC" run "$tmp/m.neff" --random-inputs 1 --output-dir "$full/out" > /dev/null 2>&1 && fail "--output-dir on a full disk succeeded"
for o in "$full"/out/*.npy; do # whatever was written is whole
	[ -e "$o" ] || continue
	cmp -s "$o" "$tmp/ref/$(basename "$o")" || fail "partial output array $(basename "$o")"
done
no_temp "--output-dir"
rm -rf "$full/out"

"$NXCC" compile "$f" --target trn1 -O2 --no-cache --output "$tmp/d.neff" --dump-after all --dump-dir "$full/dumps" \
	> /dev/null 2> "$tmp/err" || fail "dumps on a full disk failed the compile"
grep -q "warning: dump after pass" "$tmp/err" || fail "no warning for dumps that did not fit"
for h in "$full"/dumps/*.hlo; do
	[ -e "$h" ] || continue
	"$NXCC" parse "$h" > /dev/null 2>&1 || fail "partial dump $(basename "$h")"
done
no_temp "dumps"
echo "atomic outputs: ok"
