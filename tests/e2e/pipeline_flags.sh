#!/bin/sh
# NEURON_CC_FLAGS as real training pipelines set it (issue 13): every flag
# below used to abort the compile. Unknown flags from NEURON_CC_FLAGS warn
# once and are ignored (an error with --strict-flags); on the command line
# they are errors with a "did you mean".
set -u
fail() { echo "FAIL: $*"; exit 1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
unset NEURON_COMPILE_CACHE_URL
M="$NX_ROOT/examples/linear_step.hlo"
cd "$T" || exit 1
export NEURON_CC_FLAGS="--no_cache --log_level=INFO --compile_workdir=$T/w --execute-repetition=1 --pipeline compile SaveTemps --model-type=cnn-training --auto-cast=matmul --enable-dge"
"$NXCC" compile "$M" --cache-dir "$T/c" -o a.neff > o1 2> e1 || fail "pipeline flags: $(cat o1 e1)"
grep -q "warning" e1 && fail "warnings: $(cat e1)"
[ -e "$T/c" ] && fail "--no_cache ignored"
grep -q "^nxcc: info: compile cache off (--no-cache)" e1 || fail "--log_level=INFO not applied: $(cat e1)"
for f in "--execute-repetition=1" "--pipeline=compile" "--enable-dge"; do
	grep -qx "nxcc: info: $f accepted; it does not change nxcc's output" e1 || fail "$f not logged: $(cat e1)"
done
grep -q '"auto_cast":"matmult"' e1 || fail "--auto-cast=matmul: $(cat e1)"
[ -s a.neff ] || fail "no .neff"

# unknown flags in NEURON_CC_FLAGS: one warning, the compile goes on
export NEURON_CC_FLAGS="--frobnicate 3 --target trn1 --zap=1"
"$NXCC" compile "$M" --no-cache -o b.neff > o2 2> e2 || fail "unknown env flags failed the compile: $(cat e2)"
[ "$(grep -c warning e2)" -eq 1 ] || fail "want one warning: $(cat e2)"
grep -qx "nxcc: warning: ignoring unknown flags '--frobnicate', '--zap' from NEURON_CC_FLAGS (--strict-flags makes this an error)" e2 \
	|| fail "warning text: $(cat e2)"
# parallel-compile: one warning for the run, none from its workers
mkdir g; cp "$M" g/
"$NXCC" parallel-compile --quiet --cache-dir "$T/pc" g > o3 2> e3 || fail "parallel-compile: $(cat o3 e3)"
[ "$(grep -c "ignoring unknown flags" e3)" -eq 1 ] || fail "parallel-compile warnings: $(cat e3)"
# --strict-flags makes it an error (exit 1)
"$NXCC" compile "$M" --no-cache --strict-flags -o c.neff > o4 2> e4; [ $? -eq 1 ] || fail "--strict-flags: exit status"
grep -q "error: NXCC_EARG001: unknown flag '--frobnicate' (from NEURON_CC_FLAGS; --strict-flags)" e4 || fail "strict: $(cat e4)"
[ -e c.neff ] && fail "partial output"
unset NEURON_CC_FLAGS
# on the command line: an error with a suggestion
"$NXCC" compile "$M" --retry_failed_compilaton -o d.neff > o5 2> e5; [ $? -eq 1 ] || fail "typo: exit status"
grep -q "error: NXCC_EARG001: unknown flag '--retry_failed_compilaton' (did you mean '--retry_failed_compilation'?)" e5 \
	|| fail "typo: $(cat e5)"
echo "pipeline_flags: ok"
