#!/bin/sh
# Issue 15: a module name from a .pb (which the proto format does not
# restrict) names the --dump-after files; '/' and a leading '.' must not reach
# the path. The name "../../../escape/xxxx" would put the dumps of
# --dump-dir D/a/b into D/escape.
set -u
: "${NXCC:?}"
fail() { echo "FAIL: $*"; exit 1; }
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
printf 'HloModule aaaaaaaaaaaaaaaaaaaa\nENTRY main {\n  p = f32[4] parameter(0)\n  ROOT n = f32[4] negate(p)\n}\n' >"$W/m.hlo"
"$NXCC" print "$W/m.hlo" --format proto -o "$W/m.pb" || fail "print --format proto"
python3 - "$W/m.pb" <<'PY' || fail "cannot rename the module in the proto"
import sys
p = sys.argv[1]
b = open(p, "rb").read()
a, e = b"a" * 20, b"../../../escape/xxxx"
assert len(a) == len(e) and b.count(a) == 1
open(p, "wb").write(b.replace(a, e))
PY
mkdir -p "$W/escape" "$W/d/a/b"
"$NXCC" opt "$W/m.pb" --dump-after=all --dump-dir="$W/d/a/b" -o "$W/out.hlo" || fail "opt exited $?"
[ -z "$(ls "$W/escape")" ] || fail "dumps escaped the dump dir: $(ls "$W/escape" | head -3)"
n=$(ls "$W/d/a/b" | grep -c '\.hlo$')
[ "$n" -gt 0 ] || fail "no dumps in the dump dir"
ls "$W/d/a/b" | grep -q '/' && fail "a dump name has a slash"
echo "$n dumps, all inside the dump dir"
