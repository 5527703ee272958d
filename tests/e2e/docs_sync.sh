#!/bin/sh
# The docs list what the code has: docs/cli.md's flag list is exactly the
# parser's table (nxcc compile --list-flags), and docs/errors.md has a
# section for every NXCC_E code compiler/errors.h defines, and no other.
set -u
fail() { echo "FAIL: $*"; exit 1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$NXCC" compile --list-flags > "$T/parser" || fail "--list-flags"
sed -n '/<!-- flag-list:begin -->/,/<!-- flag-list:end -->/p' "$NX_ROOT/docs/cli.md" | sed '1,2d;$d' | sed '$d' > "$T/doc"
[ "$(wc -l < "$T/parser")" -gt 40 ] || fail "the parser lists only $(wc -l < "$T/parser") flags"
diff -u "$T/doc" "$T/parser" || fail "docs/cli.md's flag list differs from the parser (above: - docs, + parser)"
# every flag in the list is also explained in a table or text of docs/cli.md
while read -r flag _; do
	n=$(grep -c -- "\`$flag" "$NX_ROOT/docs/cli.md")
	[ "$n" -ge 1 ] || fail "$flag is listed but not described in docs/cli.md"
done < "$T/parser"
grep -o '"NXCC_E[A-Z]*[0-9]*"' "$NX_ROOT/compiler/errors.h" | tr -d '"' | sort -u > "$T/codes"
[ "$(wc -l < "$T/codes")" -ge 8 ] || fail "codes: $(cat "$T/codes")"
sed -n 's/^## \(NXCC_E[A-Z]*[0-9]*\)$/\1/p' "$NX_ROOT/docs/errors.md" | sort -u > "$T/sections"
diff -u "$T/sections" "$T/codes" || fail "docs/errors.md sections differ from compiler/errors.h (above: - docs, + code)"
# and nothing in the compiler uses a code errors.h does not define
grep -rhoE 'NXCC_E[A-Z]+[0-9]+' "$NX_ROOT/compiler" | sort -u > "$T/used"
comm -23 "$T/used" "$T/codes" > "$T/undef"
[ -s "$T/undef" ] && fail "codes used but not defined in errors.h: $(cat "$T/undef")"
echo "docs_sync: ok"
