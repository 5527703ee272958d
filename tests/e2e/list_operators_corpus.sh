#!/bin/sh
# `nxcc list-operators --framework XLA` covers every opcode and custom-call
# target in the torch-neuronx and jax corpora: each is listed as lowered, as
# rewritten by the passes, or as "(not lowered yet)" (issue 11). Also prints
# which corpus opcodes are not lowered yet (the backend's to-do list).
set -u
: "${NXCC:?}" "${NX_CORPUS:?}"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
"$NXCC" list-operators --framework XLA > "$T/list" || { echo "FAIL: list-operators"; exit 1; }
n=0
for f in "$NX_CORPUS"/hlo/torch-neuronx/*.hlo "$NX_CORPUS"/hlo/jax/*.hlo; do
	[ -f "$f" ] || continue
	n=$((n + 1))
	# printed text: one instruction a line, "%name = <shape> <opcode>(", the
	# shape an array ("f32[2]{0}") or a tuple ("(f32[2]{0}, s32[])")
	"$NXCC" print "$f" -o "$T/p.hlo" 2>"$T/err" || { echo "FAIL: print $f: $(head -2 "$T/err")"; exit 1; }
	sed -En 's/^ *(ROOT )?%[^ ]* = (\([^=]*\)|[^ (]+) ([a-z][a-z0-9-]*)\(.*/\3/p' "$T/p.hlo" >> "$T/ops"
	grep -o 'custom_call_target="[^"]*"' "$T/p.hlo" | sed 's/custom_call_target="\(.*\)"/\1/' >> "$T/targets"
done
[ "$n" -gt 0 ] || { echo "SKIP: no corpus at $NX_CORPUS"; exit 0; }
sort -u "$T/ops" > "$T/ops.u"; touch "$T/targets"; sort -u "$T/targets" > "$T/targets.u"
[ -s "$T/ops.u" ] || { echo "FAIL: no opcodes found in the corpus (test premise)"; exit 1; }
bad=0
while read -r op; do
	if grep -qx "$op" "$T/list"; then :
	elif grep -qx "$op (.*)" "$T/list"; then
		grep -qx "$op (not lowered yet)" "$T/list" && echo "not lowered yet: $op"
	else echo "FAIL: corpus opcode '$op' missing from list-operators"; bad=1; fi
done < "$T/ops.u"
while read -r t; do
	case "$t" in xla.sdy.*) pat='custom-call:xla\.sdy\.\*' ;; *) pat="custom-call:$t" ;; esac
	grep -qx "$pat\( (.*)\)\{0,1\}" "$T/list" || { echo "FAIL: corpus custom-call target '$t' missing from list-operators"; bad=1; }
done < "$T/targets.u"
echo "$(wc -l < "$T/ops.u") opcodes and $(wc -l < "$T/targets.u") custom-call targets in $n corpus graphs"
exit $bad
