#!/bin/sh
# Writes a BERT-large encoder layer (post-LN, gelu tanh form, no mask, no
# dropout) as HLO text: bert_layer.hlo = forward and backward (inputs x, dy
# and the 16 parameters; outputs y, dx and the 16 gradients), bert_adam.hlo =
# the Adam step over the same 16 parameters (p, g, m, v each -> p', m', v').
#   sh bench/kernels/bert.sh [--tiny|--mid] DIR
# Real size: batch 4, sequence 512 (T = 2048 tokens), hidden 1024, 16 heads
# of 64, FFN 4096. --tiny: batch 2, sequence 8, hidden 32, 2 heads, FFN 64.
# --mid: batch 2, sequence 512, hidden 256, 4 heads of 64, FFN 1024 (the
# attention of the real size at a quarter of its width; tests/e2e/check_bert_bf16.sh).
set -e
tiny=0
case "${1:-}" in --tiny) tiny=1; shift ;; --mid) tiny=2; shift ;; esac
out=${1:?usage: bert.sh [--tiny|--mid] DIR}
mkdir -p "$out"
if [ $tiny = 1 ]; then
	B=2 S=8 H=32 NH=2 FF=64
elif [ $tiny = 2 ]; then
	B=2 S=512 H=256 NH=4 FF=1024
else
	B=4 S=512 H=1024 NH=16 FF=4096
fi
D=$((H / NH)) T=$((B * S))
f() { awk "BEGIN{printf \"%.9g\", $1}"; }
SC=$(f "1/sqrt($D)") IH=$(f "1/$H")

TH="f32[$T,$H]{1,0}" TF="f32[$T,$FF]{1,0}" HH="f32[$H,$H]{1,0}" HF="f32[$H,$FF]{1,0}" FH="f32[$FF,$H]{1,0}"
VH="f32[$H]{0}" VF="f32[$FF]{0}" VT="f32[$T]{0}"
BSND="f32[$B,$S,$NH,$D]{3,2,1,0}" BNSD="f32[$B,$NH,$S,$D]{3,2,1,0}" BNSS="f32[$B,$NH,$S,$S]{3,2,1,0}"
BNS="f32[$B,$NH,$S]{2,1,0}"

# the parameters: name shape
PARAMS="wq:$HH bq:$VH wk:$HH bk:$VH wv:$HH bv:$VH wo:$HH bo:$VH g1:$VH b1:$VH w1:$HF c1:$VF w2:$FH c2:$VH g2:$VH b2:$VH"

comps() {
	cat <<EOF
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = f32[] add(%a, %b)
}

%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = f32[] maximum(%a, %b)
}

EOF
}

# projection NAME IN W B: NAME = IN . W + broadcast(B) over [T,H]
proj() {
	echo "  %$1.d = $TH dot(%$2, %$3), lhs_contracting_dims={1}, rhs_contracting_dims={0}"
	echo "  %$1.b = $TH broadcast(%$4), dimensions={1}"
	echo "  %$1 = $TH add(%$1.d, %$1.b)"
}
# heads NAME IN: [T,H] -> [B,NH,S,D]
heads() {
	echo "  %$1.r = $BSND reshape(%$2)"
	echo "  %$1 = $BNSD transpose(%$1.r), dimensions={0,2,1,3}"
}
# unheads NAME IN: [B,NH,S,D] -> [T,H]
unheads() {
	echo "  %$1.t = $BSND transpose(%$2), dimensions={0,2,1,3}"
	echo "  %$1 = $TH reshape(%$1.t)"
}
# layernorm P IN G BETA: P.n (normalized), P.rs (1/std, [T]), P (output)
layernorm() {
	cat <<EOF
  %$1.s = $VT reduce(%$2, %zero), dimensions={1}, to_apply=%add
  %$1.mu = $VT multiply(%$1.s, %ihT)
  %$1.mub = $TH broadcast(%$1.mu), dimensions={0}
  %$1.c = $TH subtract(%$2, %$1.mub)
  %$1.c2 = $TH multiply(%$1.c, %$1.c)
  %$1.s2 = $VT reduce(%$1.c2, %zero), dimensions={1}, to_apply=%add
  %$1.var = $VT multiply(%$1.s2, %ihT)
  %$1.ve = $VT add(%$1.var, %epsT)
  %$1.rs = $VT rsqrt(%$1.ve)
  %$1.rsb = $TH broadcast(%$1.rs), dimensions={0}
  %$1.n = $TH multiply(%$1.c, %$1.rsb)
  %$1.gb = $TH broadcast(%$3), dimensions={1}
  %$1.bb = $TH broadcast(%$4), dimensions={1}
  %$1.ng = $TH multiply(%$1.n, %$1.gb)
  %$1 = $TH add(%$1.ng, %$1.bb)
EOF
}
# layernorm_bwd P DY G LN (the forward layernorm): gradients P.dg, P.db and P.dx (input gradient)
layernorm_bwd() {
	cat <<EOF
  %$1.dyn = $TH multiply(%$2, %$4.n)
  %$1.dg = $VH reduce(%$1.dyn, %zero), dimensions={0}, to_apply=%add
  %$1.db = $VH reduce(%$2, %zero), dimensions={0}, to_apply=%add
  %$1.gbb = $TH broadcast(%$3), dimensions={1}
  %$1.dn = $TH multiply(%$2, %$1.gbb)
  %$1.m1s = $VT reduce(%$1.dn, %zero), dimensions={1}, to_apply=%add
  %$1.m1 = $VT multiply(%$1.m1s, %ihT)
  %$1.m1b = $TH broadcast(%$1.m1), dimensions={0}
  %$1.dnn = $TH multiply(%$1.dn, %$4.n)
  %$1.m2s = $VT reduce(%$1.dnn, %zero), dimensions={1}, to_apply=%add
  %$1.m2 = $VT multiply(%$1.m2s, %ihT)
  %$1.m2b = $TH broadcast(%$1.m2), dimensions={0}
  %$1.nm2 = $TH multiply(%$4.n, %$1.m2b)
  %$1.e1 = $TH subtract(%$1.dn, %$1.m1b)
  %$1.e2 = $TH subtract(%$1.e1, %$1.nm2)
  %$1.dx = $TH multiply(%$1.e2, %$4.rsb)
EOF
}
# linear_bwd P X DY W TY: P.dw = X^T . DY, P.db = sum_T DY, P.dx = DY . W^T
linear_bwd() {
	echo "  %$1.dw = $5 dot(%$2, %$3), lhs_contracting_dims={0}, rhs_contracting_dims={0}"
	echo "  %$1.db = $6 reduce(%$3, %zero), dimensions={0}, to_apply=%add"
	echo "  %$1.dx = $7 dot(%$3, %$4), lhs_contracting_dims={1}, rhs_contracting_dims={1}"
}

{
	echo "// BERT-large encoder layer forward + backward (T=$T tokens = batch $B x sequence $S,"
	echo "// hidden $H, $NH heads of $D, FFN $FF), f32. Written by bench/kernels/bert.sh."
	echo "HloModule bert_layer"
	echo
	comps
	sig="x: $TH, dy: $TH"
	for p in $PARAMS; do sig="$sig, ${p%%:*}: ${p#*:}"; done
	rets="$TH, $TH"
	for p in $PARAMS; do rets="$rets, ${p#*:}"; done
	echo "ENTRY %main ($sig) -> ($rets) {"
	echo "  %x = $TH parameter(0)"
	echo "  %dy = $TH parameter(1)"
	k=2
	for p in $PARAMS; do echo "  %${p%%:*} = ${p#*:} parameter($k)"; k=$((k + 1)); done
	cat <<EOF
  %zero = f32[] constant(0)
  %ninf = f32[] constant(-inf)
  %ih = f32[] constant($IH)
  %ihT = $VT broadcast(%ih), dimensions={}
  %eps = f32[] constant(1e-12)
  %epsT = $VT broadcast(%eps), dimensions={}
  %sc = f32[] constant($SC)
  %scB = $BNSS broadcast(%sc), dimensions={}
EOF
	echo "  // self-attention"
	proj q x wq bq; proj k x wk bk; proj v x wv bv
	heads qh q; heads kh k; heads vh v
	cat <<EOF
  %s0 = $BNSS dot(%qh, %kh), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,1}, rhs_contracting_dims={3}
  %s = $BNSS multiply(%s0, %scB)
  %smax = $BNS reduce(%s, %ninf), dimensions={3}, to_apply=%max
  %smaxb = $BNSS broadcast(%smax), dimensions={0,1,2}
  %sh = $BNSS subtract(%s, %smaxb)
  %e = $BNSS exponential(%sh)
  %esum = $BNS reduce(%e, %zero), dimensions={3}, to_apply=%add
  %esumb = $BNSS broadcast(%esum), dimensions={0,1,2}
  %p = $BNSS divide(%e, %esumb)
  %ctxh = $BNSD dot(%p, %vh), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,1}, rhs_contracting_dims={2}
EOF
	unheads ctx ctxh
	proj a ctx wo bo
	echo "  %h1 = $TH add(%x, %a)"
	layernorm ln1 h1 g1 b1
	echo "  // feed-forward, gelu (tanh form)"
	echo "  %f.d = $TF dot(%ln1, %w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}"
	echo "  %f.b = $TF broadcast(%c1), dimensions={1}"
	cat <<EOF
  %f = $TF add(%f.d, %f.b)
  %half = f32[] constant(0.5)
  %halfF = $TF broadcast(%half), dimensions={}
  %one = f32[] constant(1)
  %oneF = $TF broadcast(%one), dimensions={}
  %gc = f32[] constant(0.797884561)
  %gcF = $TF broadcast(%gc), dimensions={}
  %ga = f32[] constant(0.044715)
  %gaF = $TF broadcast(%ga), dimensions={}
  %ga3 = f32[] constant(0.134145)
  %ga3F = $TF broadcast(%ga3), dimensions={}
  %f2 = $TF multiply(%f, %f)
  %f3 = $TF multiply(%f2, %f)
  %af3 = $TF multiply(%f3, %gaF)
  %u0 = $TF add(%f, %af3)
  %u = $TF multiply(%u0, %gcF)
  %th = $TF tanh(%u)
  %tp1 = $TF add(%th, %oneF)
  %hf = $TF multiply(%f, %halfF)
  %gelu = $TF multiply(%hf, %tp1)
  %o.d = $TH dot(%gelu, %w2), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %o.b = $TH broadcast(%c2), dimensions={1}
  %o = $TH add(%o.d, %o.b)
  %h2 = $TH add(%ln1, %o)
EOF
	layernorm ln2 h2 g2 b2
	echo "  // backward"
	layernorm_bwd lb2 dy g2 ln2
	linear_bwd l2 gelu lb2.dx w2 "$FH" "$VH" "$TF"
	cat <<EOF
  %th2 = $TF multiply(%th, %th)
  %omt = $TF subtract(%oneF, %th2)
  %a3f2 = $TF multiply(%f2, %ga3F)
  %du0 = $TF add(%oneF, %a3f2)
  %du = $TF multiply(%du0, %gcF)
  %hfo = $TF multiply(%hf, %omt)
  %g2a = $TF multiply(%hfo, %du)
  %g1a = $TF multiply(%tp1, %halfF)
  %gp = $TF add(%g1a, %g2a)
  %df = $TF multiply(%l2.dx, %gp)
EOF
	linear_bwd l1 ln1 df w1 "$HF" "$VF" "$TH"
	echo "  %dln1 = $TH add(%lb2.dx, %l1.dx)"
	layernorm_bwd lb1 dln1 g1 ln1
	linear_bwd lo ctx lb1.dx wo "$HH" "$VH" "$TH"
	heads dctxh lo.dx
	cat <<EOF
  %dp = $BNSS dot(%dctxh, %vh), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,1}, rhs_contracting_dims={3}
  %dvh = $BNSD dot(%p, %dctxh), lhs_batch_dims={0,1}, lhs_contracting_dims={2}, rhs_batch_dims={0,1}, rhs_contracting_dims={2}
  %dpp = $BNSS multiply(%dp, %p)
  %dps = $BNS reduce(%dpp, %zero), dimensions={3}, to_apply=%add
  %dpsb = $BNSS broadcast(%dps), dimensions={0,1,2}
  %dpc = $BNSS subtract(%dp, %dpsb)
  %ds0 = $BNSS multiply(%p, %dpc)
  %ds = $BNSS multiply(%ds0, %scB)
  %dqh = $BNSD dot(%ds, %kh), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,1}, rhs_contracting_dims={2}
  %dkh = $BNSD dot(%ds, %qh), lhs_batch_dims={0,1}, lhs_contracting_dims={2}, rhs_batch_dims={0,1}, rhs_contracting_dims={2}
EOF
	unheads dq dqh; unheads dk dkh; unheads dv dvh
	linear_bwd lq x dq wq "$HH" "$VH" "$TH"
	linear_bwd lk x dk wk "$HH" "$VH" "$TH"
	linear_bwd lv x dv wv "$HH" "$VH" "$TH"
	cat <<EOF
  %dx0 = $TH add(%lb1.dx, %lq.dx)
  %dx1 = $TH add(%dx0, %lk.dx)
  %dx = $TH add(%dx1, %lv.dx)
  ROOT %r = ($rets) tuple(%ln2, %dx, %lq.dw, %lq.db, %lk.dw, %lk.db, %lv.dw, %lv.db, %lo.dw, %lo.db, %lb1.dg, %lb1.db, %l1.dw, %l1.db, %l2.dw, %l2.db, %lb2.dg, %lb2.db)
}
EOF
} >"$out/bert_layer.hlo"

# Adam over the 16 parameters (lr 1e-4, beta1 0.9, beta2 0.999, eps 1e-6,
# bias corrections of step 10 folded into constants).
{
	echo "// Adam step over the 16 parameters of bench/kernels/bert_layer.hlo: for each"
	echo "// parameter p with gradient g and moments m, v: (p', m', v'). Written by bert.sh."
	echo "HloModule bert_adam"
	echo
	sig="" rets="" k=0
	for p in $PARAMS; do
		n=${p%%:*} s=${p#*:}
		for w in p g m v; do sig="$sig${sig:+, }$n.$w: $s"; done
		for w in p m v; do rets="$rets${rets:+, }$s"; done
	done
	echo "ENTRY %main ($sig) -> ($rets) {"
	cat <<EOF
  %b1 = f32[] constant(0.9)
  %nb1 = f32[] constant(0.1)
  %b2 = f32[] constant(0.999)
  %nb2 = f32[] constant(0.001)
  %c1 = f32[] constant(1.5353399)
  %c2 = f32[] constant(100.45)
  %eps = f32[] constant(1e-06)
  %lr = f32[] constant(0.0001)
EOF
	res=""
	for p in $PARAMS; do
		n=${p%%:*} s=${p#*:}
		dims=$(echo "$s" | sed 's/{.*//')
		for w in p g m v; do echo "  %$n.$w = $s parameter($k)"; k=$((k + 1)); done
		for c in b1 nb1 b2 nb2 c1 c2 eps lr; do echo "  %$n.$c = $dims broadcast(%$c), dimensions={}"; done
		cat <<EOF
  %$n.m0 = $s multiply(%$n.m, %$n.b1)
  %$n.m1 = $s multiply(%$n.g, %$n.nb1)
  %$n.mn = $s add(%$n.m0, %$n.m1)
  %$n.v0 = $s multiply(%$n.v, %$n.b2)
  %$n.gg = $s multiply(%$n.g, %$n.g)
  %$n.v1 = $s multiply(%$n.gg, %$n.nb2)
  %$n.vn = $s add(%$n.v0, %$n.v1)
  %$n.mh = $s multiply(%$n.mn, %$n.c1)
  %$n.vh = $s multiply(%$n.vn, %$n.c2)
  %$n.sv = $s sqrt(%$n.vh)
  %$n.de = $s add(%$n.sv, %$n.eps)
  %$n.up = $s divide(%$n.mh, %$n.de)
  %$n.st = $s multiply(%$n.up, %$n.lr)
  %$n.pn = $s subtract(%$n.p, %$n.st)
EOF
		res="$res${res:+, }%$n.pn, %$n.mn, %$n.vn"
	done
	echo "  ROOT %r = ($rets) tuple($res)"
	echo "}"
} >"$out/bert_adam.hlo"
