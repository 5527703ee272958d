#!/bin/sh
# A tuple entry parameter (tests/e2e/ops/tuple_param.hlo) is one .neff input
# per leaf, named <param>.<i>[.<j>]; `nxcc run --random-inputs S` on the
# .neff and `nxcc eval --random-inputs S` on the module give the same data,
# so byte-identical outputs here (only adds and multiplies of the inputs).
set -u
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
F="$NX_ROOT/tests/e2e/ops/tuple_param.hlo"
"$NXCC" compile "$F" --framework XLA --target trn1 --no-cache -o "$T/t.neff" > "$T/log" 2>&1 || fail "compile: $(cat "$T/log")"
ins=$("$NXCC" inspect "$T/t.neff" | awk '$1 == "input" {printf "%s ", $2}')
[ "$ins" = "state.0 state.1.0 state.1.1 state.2 x " ] || fail "inputs: $ins"
"$NXCC" inspect "$T/t.neff" | grep -q "output   output1 .* aliases input 1" || fail "alias of {1, 0} is not input 1"
"$NXCC" eval "$F" --random-inputs 7 --output-dir "$T/ev" > "$T/log" 2>&1 || fail "eval: $(cat "$T/log")"
"$NXCC" run "$T/t.neff" --random-inputs 7 --output-dir "$T/rn" > "$T/log" 2>&1 || fail "run: $(cat "$T/log")"
for k in 0 1; do
	cmp -s "$T/ev/out$k.npy" "$T/rn/out$k.npy" || fail "out$k differs between eval and run"
done
echo "ok: tuple parameter leaves are inputs; eval and run agree"
