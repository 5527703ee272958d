#!/bin/sh
# `nxcc parse` on malformed files: exit 1, "file:line:col: error: msg", the
# source line and a caret under the column.
set -u
fail() { echo "FAIL: $*"; exit 1; }
for name in undefined_operand unknown_opcode; do
	f="$NX_ROOT/tests/malformed/$name.hlo"
	out=$("$NXCC" parse "$f" 2>&1)
	rc=$?
	[ "$rc" -eq 1 ] || fail "$name: exit status $rc, expected 1"
	exp=$(head -n 1 "$f" | sed 's|^// ERROR: ||')
	line=${exp%%:*}
	rest=${exp#*:}
	col=${rest%%:*}
	first=$(printf '%s\n' "$out" | head -n 1)
	want="$f:$line:$col: error: ${rest#*: }"
	[ "$first" = "$want" ] || fail "$name: got '$first', want '$want'"
	src=$(sed -n "${line}p" "$f")
	[ "$(printf '%s\n' "$out" | sed -n 2p)" = "  $src" ] || fail "$name: source line missing"
	caret=$(printf '%s\n' "$out" | sed -n 3p)
	[ "$caret" = "  $(printf '%*s' $((col - 1)) '')^" ] || fail "$name: caret '$caret' not at column $col"
done
echo ok

# Writing to a device (-o /dev/null) must not replace the device node with a
# regular file (the atomic temp+rename path is for regular files only).
t=$(mktemp -d)
mkfifo "$t/fifo"
(cat "$t/fifo" >/dev/null &)
"$NXCC" print "$NX_ROOT/examples/linear_step.hlo" -o "$t/fifo" || { echo "FAIL: print to a FIFO"; exit 1; }
[ -p "$t/fifo" ] || { echo "FAIL: the FIFO was replaced by a regular file"; exit 1; }
rm -rf "$t"
