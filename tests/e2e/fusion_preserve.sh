#!/bin/sh
# Fusion and the O1/O2/O3 pipelines keep the module's meaning: nxcc eval
# gives bitwise-identical outputs before and after (fused computations are
# evaluated by calling them), with and without --model-type transformer.
set -e
C="$NX_CORPUS/hlo/torch-neuronx"
[ -d "$C" ] || { echo "skip: no corpus"; exit 0; }
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail=0
for f in "$NX_ROOT/examples/mlp_step.hlo" "$NX_ROOT/examples/linear_step.hlo" \
         "$C/mlp__mini_mlp_single.hlo" "$C/misc__linear.hlo" "$C/mlp__single_mlp.hlo"; do
	[ -f "$f" ] || continue
	rm -rf "$T/ref"; "$NXCC" eval "$f" --random-inputs 3 --output-dir "$T/ref" >/dev/null
	for flags in "-O1" "-O2" "-O3" "-O2 --model-type transformer"; do
		"$NXCC" opt "$f" $flags --verify-each -o "$T/o.hlo"
		grep -q 'fusion(' "$T/o.hlo" || { echo "FAIL $f $flags: no fusion"; fail=1; }
		rm -rf "$T/out"; "$NXCC" eval "$T/o.hlo" --random-inputs 3 --output-dir "$T/out" >/dev/null
		if ! diff -r "$T/ref" "$T/out" >/dev/null; then echo "FAIL $f $flags: outputs differ"; fail=1; fi
	done
done
exit $fail
