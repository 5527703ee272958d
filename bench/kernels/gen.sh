#!/bin/sh
# Writes the benchmark kernels as HLO text into DIR, at real size (the
# default) or at a tiny size that the evaluator checks in a second:
#   sh bench/kernels/gen.sh [--tiny] DIR
# The real-size files are checked in next to this script; tests/e2e/bench_kernels.sh
# regenerates them (they must not differ) and runs `nxcc check` on the tiny ones.
# bert_layer.hlo and bert_adam.hlo are written by bert.sh (same sizes switch).
set -e
tiny=0
[ "${1:-}" = --tiny ] && { tiny=1; shift; }
out=${1:?usage: gen.sh [--tiny] DIR}
mkdir -p "$out"
here=$(dirname "$0")

if [ $tiny = 1 ]; then
	M=64 K=32 N=96          # dot
	AR=16 AC=40             # Adam [AR,AC]
	SB=2 SH=2 SQ=8 SK=16    # softmax [SB,SH,SQ,SK]
	LR=24 LC=40             # layer norm [LR,LC]
else
	M=2048 K=1024 N=4096    # BERT-large FFN
	AR=4096 AC=4096         # 16M elements
	SB=16 SH=16 SQ=128 SK=128
	LR=2048 LC=1024
fi

add_comp() { # name type
	cat <<EOF
%$1 (a: $2[], b: $2[]) -> $2[] {
  %a = $2[] parameter(0)
  %b = $2[] parameter(1)
  ROOT %r = $2[] add($2[] %a, $2[] %b)
}

EOF
}
max_comp() { # name type
	cat <<EOF
%$1 (a: $2[], b: $2[]) -> $2[] {
  %a = $2[] parameter(0)
  %b = $2[] parameter(1)
  ROOT %r = $2[] maximum($2[] %a, $2[] %b)
}

EOF
}

for t in bf16 f32; do
	cat >"$out/dot_$t.hlo" <<EOF
// $t dot [$M,$K]x[$K,$N] (the BERT-large FFN up-projection at real size).
HloModule dot_$t

ENTRY %main (a: $t[$M,$K], b: $t[$K,$N]) -> $t[$M,$N] {
  %a = $t[$M,$K]{1,0} parameter(0)
  %b = $t[$K,$N]{1,0} parameter(1)
  ROOT %d = $t[$M,$N]{1,0} dot($t[$M,$K]{1,0} %a, $t[$K,$N]{1,0} %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
EOF
done

# Adam (lr 1e-3, beta1 0.9, beta2 0.999, eps 1e-8, step 10 bias corrections
# folded into constants): 4 inputs (param, grad, m, v), 3 outputs.
S="f32[$AR,$AC]{1,0}"
bc() { echo "  %$1 = $S broadcast(f32[] %$2), dimensions={}"; }
{
	cat <<EOF
// f32 Adam update of $AR x $AC elements: (p, g, m, v) -> (p', m', v').
HloModule adam_f32, input_output_alias={ {0}: (0, {}, may-alias), {1}: (2, {}, may-alias), {2}: (3, {}, may-alias) }

ENTRY %main (p: $S, g: $S, m: $S, v: $S) -> ($S, $S, $S) {
  %p = $S parameter(0)
  %g = $S parameter(1)
  %m = $S parameter(2)
  %v = $S parameter(3)
  %b1 = f32[] constant(0.9)
  %nb1 = f32[] constant(0.1)
  %b2 = f32[] constant(0.999)
  %nb2 = f32[] constant(0.001)
  %c1 = f32[] constant(1.5353399)
  %c2 = f32[] constant(100.45)
  %eps = f32[] constant(1e-08)
  %lr = f32[] constant(0.001)
EOF
	bc B1 b1; bc NB1 nb1; bc B2 b2; bc NB2 nb2; bc C1 c1; bc C2 c2; bc EPS eps; bc LR lr
	cat <<EOF
  %m0 = $S multiply($S %m, $S %B1)
  %m1 = $S multiply($S %g, $S %NB1)
  %mn = $S add($S %m0, $S %m1)
  %v0 = $S multiply($S %v, $S %B2)
  %gg = $S multiply($S %g, $S %g)
  %v1 = $S multiply($S %gg, $S %NB2)
  %vn = $S add($S %v0, $S %v1)
  %mh = $S multiply($S %mn, $S %C1)
  %vh = $S multiply($S %vn, $S %C2)
  %sv = $S sqrt($S %vh)
  %de = $S add($S %sv, $S %EPS)
  %up = $S divide($S %mh, $S %de)
  %st = $S multiply($S %up, $S %LR)
  %pn = $S subtract($S %p, $S %st)
  ROOT %r = ($S, $S, $S) tuple($S %pn, $S %mn, $S %vn)
}
EOF
} >"$out/adam_f32.hlo"

# softmax over the last axis of [SB,SH,SQ,SK] (attention scores).
X="f32[$SB,$SH,$SQ,$SK]{3,2,1,0}" R="f32[$SB,$SH,$SQ]{2,1,0}"
{
	echo "// f32 softmax over the last axis of [$SB,$SH,$SQ,$SK]."
	echo "HloModule softmax_f32"
	echo
	max_comp max f32
	add_comp add f32
	cat <<EOF
ENTRY %main (x: $X) -> $X {
  %x = $X parameter(0)
  %ninf = f32[] constant(-inf)
  %zero = f32[] constant(0)
  %mx = $R reduce($X %x, f32[] %ninf), dimensions={3}, to_apply=%max
  %mxb = $X broadcast($R %mx), dimensions={0,1,2}
  %sh = $X subtract($X %x, $X %mxb)
  %e = $X exponential($X %sh)
  %s = $R reduce($X %e, f32[] %zero), dimensions={3}, to_apply=%add
  %sb = $X broadcast($R %s), dimensions={0,1,2}
  ROOT %y = $X divide($X %e, $X %sb)
}
EOF
} >"$out/softmax_f32.hlo"

# layer norm over the last axis of [LR,LC] with gamma and beta.
X="f32[$LR,$LC]{1,0}" R="f32[$LR]{0}" V="f32[$LC]{0}"
{
	echo "// f32 layer norm over the last axis of [$LR,$LC] (eps 1e-12), scale and shift."
	echo "HloModule layernorm_f32"
	echo
	add_comp add f32
	cat <<EOF
ENTRY %main (x: $X, gamma: $V, beta: $V) -> $X {
  %x = $X parameter(0)
  %gamma = $V parameter(1)
  %beta = $V parameter(2)
  %zero = f32[] constant(0)
  %inv = f32[] constant($(awk "BEGIN{printf \"%.9g\", 1/$LC}"))
  %invb = $R broadcast(f32[] %inv), dimensions={}
  %s = $R reduce($X %x, f32[] %zero), dimensions={1}, to_apply=%add
  %mean = $R multiply($R %s, $R %invb)
  %mb = $X broadcast($R %mean), dimensions={0}
  %c = $X subtract($X %x, $X %mb)
  %c2 = $X multiply($X %c, $X %c)
  %s2 = $R reduce($X %c2, f32[] %zero), dimensions={1}, to_apply=%add
  %var = $R multiply($R %s2, $R %invb)
  %eps = f32[] constant(1e-12)
  %epsb = $R broadcast(f32[] %eps), dimensions={}
  %ve = $R add($R %var, $R %epsb)
  %rs = $R rsqrt($R %ve)
  %rb = $X broadcast($R %rs), dimensions={0}
  %n = $X multiply($X %c, $X %rb)
  %gb = $X broadcast($V %gamma), dimensions={1}
  %bb = $X broadcast($V %beta), dimensions={1}
  %ng = $X multiply($X %n, $X %gb)
  ROOT %y = $X add($X %ng, $X %bb)
}
EOF
} >"$out/layernorm_f32.hlo"

if [ -f "$here/bert.sh" ]; then
	if [ $tiny = 1 ]; then sh "$here/bert.sh" --tiny "$out"; else sh "$here/bert.sh" "$out"; fi
fi
