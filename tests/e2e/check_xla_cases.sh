#!/bin/sh
# End to end: `nxcc check` (trn1 -O2, random inputs) on every case of the
# xla-evaluator corpus that is not a collective (check_collectives.sh runs
# those on several ranks). A case either checks ok or is refused with exit 1
# and an error naming the instruction; a refusal must be one of the known
# kinds (f64/c64 values the device has no type for, or the forms listed
# below), so a new refusal or a mismatch fails the test.
set -u
fail() { echo "FAIL: $*"; exit 1; }
corpus="$NX_CORPUS/xla-evaluator"
[ -d "$corpus" ] || { echo "SKIP: no corpus at $corpus"; exit 0; }
# refused forms besides f64/c64 values: imag of a real operand, variadic
# (tuple) reduce-window and multi-output scatter (no device type for tuples)
known="imag_f32_real_input reduce_window_variadic_min_tuple reduce_window_variadic_min_tuple_f32_s32 scatter_multioutput"
ok=0 refused=0
for d in "$corpus"/*/; do
	b=$(basename "$d")
	case "$b" in collective_*) continue ;; esac
	out=$(timeout 300 "$NXCC" check "$d/module.hlo" --target trn1 -O2 --random-inputs 1 2>&1)
	rc=$?
	if [ $rc -eq 0 ]; then
		echo "$out" | grep -q "^check: ok" || fail "$b: no verdict"
		ok=$((ok + 1))
		continue
	fi
	[ $rc -eq 1 ] || fail "$b: exit $rc: $(echo "$out" | tail -3)"
	echo "$out" | grep -q "MISMATCH" && fail "$b: $(echo "$out" | grep MISMATCH | head -3)"
	err=$(echo "$out" | grep -m1 "error: instruction '") || fail "$b: refused without naming an instruction: $out"
	if echo "$err" | grep -qE "(f64|c64) is not supported on NeuronCore"; then
		:
	elif echo " $known " | grep -q " $b "; then
		:
	else
		fail "$b: unexpected refusal: $err"
	fi
	refused=$((refused + 1))
done
[ $ok -ge 95 ] || fail "only $ok xla-evaluator cases checked"
echo "xla-evaluator: $ok cases checked ok, $refused refused by name (f64/c64 values or known forms)"
