#!/bin/sh
# text -> nxcc print --format proto -> nxcc print must equal text -> nxcc print,
# for every corpus module; corrupted protos fail with a clear message.
set -u
: "${NXCC:?}" "${NX_CORPUS:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0; bad=0
for f in "$NX_CORPUS"/hlo/torch-neuronx/*.hlo "$NX_CORPUS"/hlo/jax/*.hlo "$NX_CORPUS"/xla-evaluator/*/module.hlo; do
	[ -f "$f" ] || continue
	n=$((n + 1))
	if ! "$NXCC" print "$f" -o "$tmp/a.txt" 2>"$tmp/err"; then
		echo "text print failed: $f: $(cat "$tmp/err")"; bad=$((bad + 1)); continue
	fi
	if ! "$NXCC" print "$f" --format proto -o "$tmp/x.pb" 2>"$tmp/err" ||
	   ! "$NXCC" print "$tmp/x.pb" -o "$tmp/b.txt" 2>"$tmp/err"; then
		echo "proto round trip failed: $f: $(cat "$tmp/err")"; bad=$((bad + 1)); continue
	fi
	if ! cmp -s "$tmp/a.txt" "$tmp/b.txt"; then
		echo "differs after proto round trip: $f"; diff "$tmp/a.txt" "$tmp/b.txt" | head -5
		bad=$((bad + 1))
	fi
done
[ "$n" -gt 0 ] || { echo "no corpus found at $NX_CORPUS"; exit 1; }
echo "$n modules, $bad failed"
[ "$bad" -eq 0 ] || exit 1

# The proto is binary, starts like an HloModuleProto (field 1, name).
head -c 1 "$tmp/x.pb" | od -An -tx1 | grep -q 0a || { echo "proto does not start with field 1"; exit 1; }

# Corrupted input: truncated and garbage files are refused with exit 1.
size=$(wc -c <"$tmp/x.pb")
head -c $((size / 2)) "$tmp/x.pb" >"$tmp/trunc.pb"
printf '\022\377\377\377\377\017garbage' >"$tmp/junk.pb"
for f in "$tmp/trunc.pb" "$tmp/junk.pb"; do
	"$NXCC" print "$f" >"$tmp/out" 2>"$tmp/err"; rc=$?
	[ "$rc" -eq 1 ] || { echo "$f: exit $rc, want 1"; cat "$tmp/err"; exit 1; }
	grep -q "not a valid HloModuleProto" "$tmp/err" || { echo "$f: message:"; cat "$tmp/err"; exit 1; }
done
echo ok
