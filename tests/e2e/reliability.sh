#!/bin/sh
# Regression inputs from issue 15 (tests/reliability/*.hlo): each file names
# the commands to run on it and their outcome in lines of the form
#   // RUN: <nxcc args, %s = this file, %t = a scratch dir> => <exit> [text]
# The exit status must match and, when given, stderr+stdout must contain text.
# Never a signal, never an internal error unless a line says 70.
set -u
: "${NXCC:?}" "${NX_ROOT:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0; bad=0
for f in "$NX_ROOT"/tests/reliability/*.hlo; do
	grep '^// RUN: ' "$f" | sed 's|^// RUN: ||' >"$tmp/runs"
	while IFS= read -r line; do
		n=$((n + 1))
		args=${line%% => *}
		want=${line#* => }
		wrc=${want%% *}
		text=""
		[ "$want" != "$wrc" ] && text=${want#* }
		rm -rf "$tmp/t"; mkdir -p "$tmp/t"
		args=$(printf '%s' "$args" | sed "s|%s|$f|g; s|%t|$tmp/t|g")
		# shellcheck disable=SC2086
		"$NXCC" $args >"$tmp/out" 2>&1 </dev/null
		rc=$?
		if [ "$rc" -ne "$wrc" ]; then
			echo "FAIL $(basename "$f"): nxcc $args: exit $rc, want $wrc"; head -5 "$tmp/out"
			bad=$((bad + 1)); continue
		fi
		if [ -n "$text" ] && ! grep -qF -- "$text" "$tmp/out"; then
			echo "FAIL $(basename "$f"): nxcc $args: output lacks '$text'"; head -5 "$tmp/out"
			bad=$((bad + 1))
		fi
	done <"$tmp/runs"
done
echo "$n runs, $bad failed"
[ "$n" -gt 0 ] && [ "$bad" -eq 0 ]
