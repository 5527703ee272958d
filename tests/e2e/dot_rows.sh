#!/bin/sh
# End to end: the batched dot's row epilogue (backend/kernels/dot_rows.c).
# Attention graphs [B, S, H x D] generated below: the scores' dot applies
# the row softmax in its evacuation and dp's dot the softmax backward
# 0.125 p (dp - rowsum(dp p)) with p loaded per step; the plan must say so
# (epilogue lines counted) and the result must match the evaluator
# (`nxcc check`, trn1 and trn2, -O2; a subset -O1/-O3 and with bf16
# auto-cast, which fuses the softmax differently and keeps the row loops)
# and `nxcc run --check-races` (HBM too) must find no race. Fallbacks keep
# today's path and stay correct: an additive mask (not matched), seq 384
# (backward: odd tile count, no batch steps), seq 200 and 256 (the
# forward's scale is a one-op region the driver merges into the scores'
# dot, so both epilogues apply), seq 1024 (a row does not fit a PSUM
# tile). bf: bf16
# operands with the softmax computed in f32 through converts; div: the
# scale as a divide by 8; s16: 8-row tiles (p on at most 8 load queues,
# a partition range each). Batch steps of several batches (one transfer per
# queue covers them; the plan says `batches of`): bwd (2 per step),
# h20 (20 batches, 4 per step: an odd step count, one-level batch) and
# b3h6x (dv its own dot over 18 batches, 2 per step: 9 steps; the others
# keep one per step since 6 / 2 is odd, as every dot of b3h6). bwdt: the context and the gradients transposed
# back to [B, S, H x D] (ROOT outputs): dq, dk and dv store in that
# layout and their transposes have no kernel (`transpose-stored`; the
# context has a second reader); s384t the same with the one-tile steps of
# seq 384 (B = 1: the heads merge into one batch stride there).
# dv = p^T . d2 reads dp's p and dk = ds^T . qh its result: dp's kernel
# computes them as second outputs (kernels/dot_sec.c; the plan's `second
# output:` lines counted, the last field below; in bwdt in the transposed
# layouts, where their dots have no kernel; s200, s16: dv only); bwdx,
# b3h6x: dv = p^T . (dh + o), a value made after dp, stays its own dot.
set -u
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
gen() {
	n=$1 B=$2 S=$3 H=$4 D=$5 mode=$6 HD=$(($4 * $5)) T=f32
	[ "$mode" = bf16 ] && T=bf16
	{
	echo "HloModule $n"
	echo 'add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT r = f32[] add(a, b) }'
	echo 'max { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT r = f32[] maximum(a, b) }'
	echo 'ENTRY e {'
	for x in q k v d; do
		echo "  $x = $T[$B,$S,$HD] parameter($(echo qkvd | sed "s/$x.*//" | wc -c | awk '{print $1-1}'))"
		echo "  ${x}r = $T[$B,$S,$H,$D] reshape($x)"
		echo "  ${x}h = $T[$B,$H,$S,$D] transpose(${x}r), dimensions={0,2,1,3}"
	done
	[ "$mode" = mask ] && echo "  mk = f32[$B,$S] parameter(4)" && echo "  mkb = f32[$B,$H,$S,$S] broadcast(mk), dimensions={0,3}"
	echo "  s0 = $T[$B,$H,$S,$S] dot(qh, kh), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,1}, rhs_contracting_dims={3}"
	if [ "$mode" = bf16 ]; then
		echo "  s0f = f32[$B,$H,$S,$S] convert(s0)"
	else
		echo "  s0f = f32[$B,$H,$S,$S] copy(s0)"
	fi
	echo "  c = f32[] constant(0.125)"
	echo "  cb = f32[$B,$H,$S,$S] broadcast(c), dimensions={}"
	if [ "$mode" = mask ]; then
		echo "  s1 = f32[$B,$H,$S,$S] multiply(s0f, cb)"
		echo "  s = f32[$B,$H,$S,$S] add(s1, mkb)"
	elif [ "$mode" = div ]; then
		echo "  c8 = f32[] constant(8)"
		echo "  c8b = f32[$B,$H,$S,$S] broadcast(c8), dimensions={}"
		echo "  s = f32[$B,$H,$S,$S] divide(s0f, c8b)"
	else
		echo "  s = f32[$B,$H,$S,$S] multiply(s0f, cb)"
	fi
	echo "  ninf = f32[] constant(-inf)"
	echo "  m = f32[$B,$H,$S] reduce(s, ninf), dimensions={3}, to_apply=max"
	echo "  mb = f32[$B,$H,$S,$S] broadcast(m), dimensions={0,1,2}"
	echo "  sh = f32[$B,$H,$S,$S] subtract(s, mb)"
	echo "  ex = f32[$B,$H,$S,$S] exponential(sh)"
	echo "  z = f32[] constant(0)"
	echo "  es = f32[$B,$H,$S] reduce(ex, z), dimensions={3}, to_apply=add"
	echo "  eb = f32[$B,$H,$S,$S] broadcast(es), dimensions={0,1,2}"
	echo "  pf = f32[$B,$H,$S,$S] divide(ex, eb)"
	if [ "$mode" = bf16 ]; then echo "  p = bf16[$B,$H,$S,$S] convert(pf)"; else echo "  p = f32[$B,$H,$S,$S] copy(pf)"; fi
	echo "  o = $T[$B,$H,$S,$D] dot(p, vh), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,1}, rhs_contracting_dims={2}"
	if [ "$mode" = fwd ] || [ "$mode" = mask ] || [ "$mode" = div ]; then echo "  ROOT r = $T[$B,$H,$S,$D] copy(o)"; echo '}'; return; fi
	echo "  d2 = $T[$B,$H,$S,$D] multiply(dh, o)"
	echo "  dp = $T[$B,$H,$S,$S] dot(d2, vh), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,1}, rhs_contracting_dims={3}"
	echo "  dpp = $T[$B,$H,$S,$S] multiply(dp, p)"
	echo "  dps = $T[$B,$H,$S] reduce(dpp, z), dimensions={3}, to_apply=add"
	echo "  dpsb = $T[$B,$H,$S,$S] broadcast(dps), dimensions={0,1,2}"
	echo "  dpc = $T[$B,$H,$S,$S] subtract(dp, dpsb)"
	echo "  ds0 = $T[$B,$H,$S,$S] multiply(p, dpc)"
	echo "  c2 = $T[] constant(0.125)"
	echo "  cb2 = $T[$B,$H,$S,$S] broadcast(c2), dimensions={}"
	echo "  ds = $T[$B,$H,$S,$S] multiply(ds0, cb2)"
	echo "  dq = $T[$B,$H,$S,$D] dot(ds, kh), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,1}, rhs_contracting_dims={2}"
	echo "  dk = $T[$B,$H,$S,$D] dot(ds, qh), lhs_batch_dims={0,1}, lhs_contracting_dims={2}, rhs_batch_dims={0,1}, rhs_contracting_dims={2}"
	dvr=d2
	[ "$mode" = bwdx ] && dvr=d3 && echo "  d3 = $T[$B,$H,$S,$D] add(dh, o)"
	echo "  dv = $T[$B,$H,$S,$D] dot(p, $dvr), lhs_batch_dims={0,1}, lhs_contracting_dims={2}, rhs_batch_dims={0,1}, rhs_contracting_dims={2}"
	if [ "$mode" = bwdt ]; then
		for x in o dq dk dv; do
			echo "  ${x}t = $T[$B,$S,$H,$D] transpose($x), dimensions={0,2,1,3}"
			echo "  ${x}r = $T[$B,$S,$HD] reshape(${x}t)"
		done
		echo "  ROOT t = ($T[$B,$S,$HD], $T[$B,$S,$HD], $T[$B,$S,$HD], $T[$B,$S,$HD]) tuple(or, dqr, dkr, dvr)"
	else
		echo "  ROOT t = ($T[$B,$H,$S,$D], $T[$B,$H,$S,$D], $T[$B,$H,$S,$D], $T[$B,$H,$S,$D]) tuple(o, dq, dk, dv)"
	fi
	echo '}'
	} > "$tmp/$n.hlo"
}
gen fwd 2 512 8 64 fwd
gen bwd 2 512 8 64 bwd
gen bf 2 512 8 64 bf16
gen mask 2 512 8 64 mask
gen s384 2 384 8 64 bwd
gen s200 2 200 4 64 bwd
gen s256 2 256 8 64 bwd
gen s1024 1 1024 4 64 bwd
gen div 2 512 8 64 div
gen s16 2 16 4 8 bwd
gen h20 1 256 20 64 bwd
gen b3h6 3 512 6 64 bwd
gen bwdt 2 512 8 64 bwdt
gen s384t 1 384 8 64 bwdt
gen bwdx 2 512 8 64 bwdx
gen b3h6x 3 512 6 64 bwdx
n=0
# name:epilogues:dots with batch steps of several batches (-: any):second outputs
for c in fwd:1:2:0 bwd:2:4:2 bf:2:-:2 mask:0:-:0 s384:1:0:0 s200:2:-:1 s256:2:-:2 div:1:-:0 s16:2:0:1 \
	h20:2:4:2 b3h6:2:0:2 bwdt:2:4:2 s384t:1:0:0 bwdx:2:4:1 b3h6x:2:1:1 s1024:0:-:0; do # s1024 last (checked below)
	g=${c%%:*} want=${c#*:}
	sec=${want##*:} want=${want%:*}
	bs=${want#*:} want=${want%%:*}
	"$NXCC" compile "$tmp/$g.hlo" --target trn1 -O2 --dump-lower plan -o "$tmp/$g.neff" > "$tmp/plan" 2>&1 ||
		fail "$g: compile: $(tail -2 "$tmp/plan")"
	got=$(grep -c 'epilogue: ' "$tmp/plan")
	[ "$got" = "$want" ] || fail "$g: $got epilogues in the plan, expected $want"
	got=$(grep -c 'batches of' "$tmp/plan")
	[ "$bs" = - ] || [ "$got" = "$bs" ] || fail "$g: $got dots with batch steps of several batches, expected $bs"
	case $g in *t) got=$(grep -c 'transpose-stored' "$tmp/plan")
		[ "$got" = 3 ] || fail "$g: $got transposes stored by their dots, expected 3" ;; esac
	got=$(grep -c 'second output: d[vk]' "$tmp/plan")
	[ "$got" = "$sec" ] || fail "$g: $got second outputs in the plan, expected $sec"
	got=$(grep -c 'dot-second-output: d[vk]' "$tmp/plan")
	[ "$got" = "$sec" ] || fail "$g: $got second outputs' dots without a kernel, expected $sec"
	[ "$g" != bwdt ] || [ "$(grep -c 'second output: d[vk].* in the layout of d[vk]t' "$tmp/plan")" = 2 ] ||
		fail "bwdt: dv and dk not stored in their transposes' layouts" 
	NX_CHECK_RACES_HBM=1 "$NXCC" run "$tmp/$g.neff" --timing-only --check-races > "$tmp/run" 2>&1 ||
		fail "$g: run --check-races: $(grep -m2 -E 'race|error' "$tmp/run")"
	for t in trn1 trn2; do
		out=$("$NXCC" check "$tmp/$g.hlo" --framework XLA --target $t -O2 --random-inputs 2 2>&1) ||
			fail "$g $t: $(echo "$out" | grep -E 'MISMATCH|error|FAILED' | head -3)"
		n=$((n + 1))
	done
done
grep -q 'epilogue: row softmax of 0.125 x per \[128, 512\] tile' "$tmp/plan" && fail "s1024: softmax epilogue"
for a in "-O1 --auto-cast none" "-O3 --auto-cast none" "-O2 --auto-cast all --auto-cast-type bf16"; do
	for g in fwd bwd; do
		out=$("$NXCC" check "$tmp/$g.hlo" --framework XLA --target trn1 $a --random-inputs 3 2>&1) ||
			fail "$g $a: $(echo "$out" | grep -E 'MISMATCH|error|FAILED' | head -3)"
		n=$((n + 1))
	done
done
echo "dot_rows: $n checks ok"
