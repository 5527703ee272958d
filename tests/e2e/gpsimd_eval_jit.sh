#!/bin/sh
# End to end: the evaluator's host JIT (backend/gpsimd/gs_host.c, docs/gpsimd.md)
# gives the interpreter's bits. Each graph is evaluated twice with the same
# random inputs, with NX_EVAL_JIT=0 (the interpreter) and with every
# elementwise cluster JIT-compiled (NX_EVAL_JIT_MIN=1), and every output .npy
# must be byte-identical (also with NX_EVAL_JIT=plan: the same clusters, their
# members interpreted at the root's turn, the fallback path): tests/e2e/ops/*.hlo, the special values of
# tests/e2e/gpsimd/eval_jit_edge.hlo (NaN, Inf, -0, denormals, integer
# division by zero, shifts past the width), and torch-neuronx MLP, BERT and
# linear graphs from the corpus. The JIT must have run clusters (its stats
# line), so the comparison is not vacuous.
set -u
fail() { echo "FAIL: $*"; exit 1; }
T=${TMPDIR:-/tmp}/nx_evaljit.$$
mkdir -p "$T"
trap 'rm -rf "$T"' EXIT
C=$NX_CORPUS/hlo/torch-neuronx
n=0 total=0
for f in "$NX_ROOT"/tests/e2e/ops/*.hlo "$NX_ROOT/tests/e2e/gpsimd/eval_jit_edge.hlo" \
	"$C"/mlp__*.hlo "$C/bert__bert_single_graph_2.hlo" "$C/misc__linear.hlo"; do
	[ -f "$f" ] || fail "missing $f"
	b=$(basename "$f" .hlo)
	rm -rf "$T/i" "$T/j"
	NX_EVAL_JIT=0 "$NXCC" eval "$f" --random-inputs 7 --output-dir "$T/i" >/dev/null 2>"$T/err" ||
		fail "$b: interpreter: $(head -3 "$T/err")"
	NX_EVAL_JIT_MIN=1 NX_EVAL_JIT_STATS=1 "$NXCC" eval "$f" --random-inputs 7 --output-dir "$T/j" >/dev/null 2>"$T/err" ||
		fail "$b: JIT: $(head -3 "$T/err")"
	cl=$(sed -n 's/.*eval JIT: \([0-9]*\) clusters.*/\1/p' "$T/err")
	rm -rf "$T/p"
	NX_EVAL_JIT=plan NX_EVAL_JIT_MIN=1 "$NXCC" eval "$f" --random-inputs 7 --output-dir "$T/p" >/dev/null 2>"$T/perr" ||
		fail "$b: NX_EVAL_JIT=plan: $(head -3 "$T/perr")"
	[ -n "$cl" ] || fail "$b: no JIT stats line"
	total=$((total + cl))
	outs=$(cd "$T/i" && find . -name '*.npy' | sort) # DIR/replica<i>/ with several replicas
	[ -n "$outs" ] || fail "$b: no outputs written"
	for o in $outs; do
		cmp -s "$T/i/$o" "$T/j/$o" || fail "$b: $o differs between the interpreter and the JIT"
		cmp -s "$T/i/$o" "$T/p/$o" || fail "$b: $o differs with clusters interpreted at their root"
	done
	[ "$(cd "$T/j" && find . -name '*.npy' | sort)" = "$outs" ] || fail "$b: different outputs"
	case "$b" in eval_jit_edge|mlp__mini_mlp_single|bert__bert_single_graph_2)
		[ "$cl" -gt 0 ] || fail "$b: the JIT ran no cluster";;
	esac
	n=$((n + 1))
done
[ "$total" -gt 100 ] || fail "only $total clusters JIT-compiled over all graphs"
echo "ok: $n graphs bit-identical with and without the eval JIT ($total clusters)"
