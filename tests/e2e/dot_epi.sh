#!/bin/sh
# End to end: dot epilogues (backend/kernels/dot_epi.c). A dot read only by
# the elementwise region after it (lower_split.c) is one dot-loop kernel
# that applies the region to each evacuated tile on DVE before the store:
# qkv a bias row (BERT's q/k/v projections: bias add, reshape for the
# heads); r2 a scale, a bias row and two streamed residuals on shapes that
# are no multiples of 128 (3000 x 1000); bf the same in bf16; gelu the
# GELU-backward product with four streamed inputs. gelu4 (N = 4096, K =
# 128: a short dot) is refused by the dot's plan (the inputs' DMA would
# slow the dot more than its own kernel costs): the region follows the dot
# as a fused loop in place. `nxcc check` must pass on trn1 and trn2, the plan must show the
# epilogue and the kernel count, `nxcc run --check-races` (HBM too) must
# find no race; bat is a batched dot (batches as steps) with scale, bias
# row and a streamed input; qkv also with --auto-cast all --auto-cast-type bf16. gfwd,
# the GELU after a dot with a bias row, is one kernel: its tanh follows the
# bias add and the cubic (a mid op), so POOL runs the ops in two passes over
# the step's groups and ACT the tanh between them (at main c15b312: two
# kernels, 289 us; now 213 us, POOL-bound: 7 ops; ACT runs the tanh
# with the multiply before it as its scale, and f/2). dt (tanh of the dot) and
# gmo is the GELU forward as the recomputation pass leaves it in the BERT
# layer: the dot its own fusion, read by the output and by a loop fusion
# with two outputs (tanh(u), gelu): the dot takes the loop fusion as a
# multi-output epilogue (lower.c dot_multi), storing its own tiles and the
# two values (at main c15b312: two kernels, 331 us; now 264 us); in gmo2
# (K = 16384) the stationary schedule does not take the dot (the K-block
# loop does): the two outputs follow the dot as one fused loop; gmoq
# ([1024, 1024] x [1024, 2048]) stores each output on 4 of the 12 store
# queues (399 us at main c15b312, 272 us now). de (exp(0.125 x), a bias
# row, a streamed factor; 1000 rows) have ACT
# evacuate the dot's tile through the function (at main: two kernels,
# 212 and 114 us; now 92 and 68 us). gbw is BERT's GELU backward after
# l2.dx as the recomputation pass leaves it (f.d and tanh streamed, the
# bias row, 14 ops): DVE alone would bound the dot, so POOL runs the ops
# before each store (faster than DVE), and ACT the four that read only the
# streamed tanh (t*t, 1 - t*t, t + 1, (t + 1) * 0.5) on each tile pair
# before evacuating it (at main 54e055b: all on DVE, 376 us; now 309 us).
set -u
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/qkv.hlo" <<'EOT'
HloModule qkv
%fc (p0: f32[2048,1024], p1: f32[1024,1024], p2: f32[1024]) -> f32[4,512,16,64] {
  %p0 = f32[2048,1024] parameter(0)
  %p1 = f32[1024,1024] parameter(1)
  %d = f32[2048,1024] dot(%p0, %p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %p2 = f32[1024] parameter(2)
  %bb = f32[2048,1024] broadcast(%p2), dimensions={1}
  %q = f32[2048,1024] add(%d, %bb)
  ROOT %r = f32[4,512,16,64] reshape(%q)
}
ENTRY %e (x: f32[2048,1024], w: f32[1024,1024], b: f32[1024]) -> f32[4,16,512,64] {
  %x = f32[2048,1024] parameter(0)
  %w = f32[1024,1024] parameter(1)
  %b = f32[1024] parameter(2)
  %f = f32[4,512,16,64] fusion(%x, %w, %b), kind=kOutput, calls=%fc
  ROOT %t = f32[4,16,512,64] transpose(%f), dimensions={0,2,1,3}
}
EOT
cat > "$tmp/r2.hlo" <<'EOT'
HloModule resid
%fc (p0: f32[3000,256], p1: f32[256,1000], p2: f32[1000], p3: f32[3000,1000], p4: f32[3000,1000]) -> f32[3000,1000] {
  %p0 = f32[3000,256] parameter(0)
  %p1 = f32[256,1000] parameter(1)
  %d = f32[3000,1000] dot(%p0, %p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %p2 = f32[1000] parameter(2)
  %bb = f32[3000,1000] broadcast(%p2), dimensions={1}
  %h = f32[] constant(0.5)
  %hb = f32[3000,1000] broadcast(%h), dimensions={}
  %s = f32[3000,1000] multiply(%d, %hb)
  %y = f32[3000,1000] add(%bb, %s)
  %p3 = f32[3000,1000] parameter(3)
  %z = f32[3000,1000] subtract(%p3, %y)
  %p4 = f32[3000,1000] parameter(4)
  ROOT %o = f32[3000,1000] add(%z, %p4)
}
ENTRY %e (x: f32[3000,256], w: f32[256,1000], b: f32[1000], r: f32[3000,1000], r2: f32[3000,1000]) -> f32[3000,1000] {
  %x = f32[3000,256] parameter(0)
  %w = f32[256,1000] parameter(1)
  %b = f32[1000] parameter(2)
  %r = f32[3000,1000] parameter(3)
  %r2 = f32[3000,1000] parameter(4)
  ROOT %f = f32[3000,1000] fusion(%x, %w, %b, %r, %r2), kind=kOutput, calls=%fc
}
EOT
cat > "$tmp/bf.hlo" <<'EOT'
HloModule bf
%fc (p0: bf16[4096,512], p1: bf16[512,2048], p2: bf16[2048], p3: bf16[4096,2048]) -> bf16[4096,2048] {
  %p0 = bf16[4096,512] parameter(0)
  %p1 = bf16[512,2048] parameter(1)
  %d = bf16[4096,2048] dot(%p0, %p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %p2 = bf16[2048] parameter(2)
  %bb = bf16[4096,2048] broadcast(%p2), dimensions={1}
  %y = bf16[4096,2048] add(%d, %bb)
  %p3 = bf16[4096,2048] parameter(3)
  ROOT %o = bf16[4096,2048] multiply(%y, %p3)
}
ENTRY %e (x: bf16[4096,512], w: bf16[512,2048], b: bf16[2048], g: bf16[4096,2048]) -> bf16[4096,2048] {
  %x = bf16[4096,512] parameter(0)
  %w = bf16[512,2048] parameter(1)
  %b = bf16[2048] parameter(2)
  %g = bf16[4096,2048] parameter(3)
  ROOT %f = bf16[4096,2048] fusion(%x, %w, %b, %g), kind=kOutput, calls=%fc
}
EOT
# the GELU-backward product after a [M, K] x [K, N] dot, its four
# streamed inputs of the result's shape
gelu_hlo() { # M K N
	X="f32[$1,$2]" W="f32[$2,$3]" Y="f32[$1,$3]"
	cat <<EOT
HloModule gelu
%fc (p0: $X, p1: $W, p2: $Y, p3: $Y, p4: $Y, p5: $Y) -> $Y {
  %p0 = $X parameter(0)
  %p1 = $W parameter(1)
  %d = $Y dot(%p0, %p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %p2 = $Y parameter(2)
  %th2 = $Y multiply(%p2, %p2)
  %one = f32[] constant(1)
  %oneF = $Y broadcast(%one), dimensions={}
  %omt = $Y subtract(%oneF, %th2)
  %p3 = $Y parameter(3)
  %c = f32[] constant(0.134145)
  %cF = $Y broadcast(%c), dimensions={}
  %a3 = $Y multiply(%p3, %cF)
  %du = $Y add(%oneF, %a3)
  %p4 = $Y parameter(4)
  %hfo = $Y multiply(%p4, %omt)
  %g2 = $Y multiply(%hfo, %du)
  %p5 = $Y parameter(5)
  %h = f32[] constant(0.5)
  %hF = $Y broadcast(%h), dimensions={}
  %g1 = $Y multiply(%p5, %hF)
  %gp = $Y add(%g1, %g2)
  ROOT %df = $Y multiply(%d, %gp)
}
ENTRY %e (x: $X, w: $W, a: $Y, b: $Y, c: $Y, g: $Y) -> $Y {
  %x = $X parameter(0)
  %w = $W parameter(1)
  %a = $Y parameter(2)
  %b = $Y parameter(3)
  %c = $Y parameter(4)
  %g = $Y parameter(5)
  ROOT %f = $Y fusion(%x, %w, %a, %b, %c, %g), kind=kOutput, calls=%fc
}
EOT
}
gelu_hlo 2048 1024 1024 > "$tmp/gelu.hlo"
# the GELU forward as the recomputation pass leaves it after a [M, K] x
# [K, N] dot: the dot its own fusion, read by the loop fusion computing
# tanh(u) and gelu (two outputs) and by the output (the backward's f.d)
gmo_hlo() { # M K N
	X="f32[$1,$2]" W="f32[$2,$3]" Y="f32[$1,$3]" B="f32[$3]"
	cat <<EOT
HloModule gmo
%fd (p0: $X, p1: $W) -> $Y {
  %p0 = $X parameter(0)
  %p1 = $W parameter(1)
  ROOT %d = $Y dot(%p0, %p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
%fg (q0: $Y, q1: $B) -> ($Y, $Y) {
  %q0 = $Y parameter(0)
  %q1 = $B parameter(1)
  %bb = $Y broadcast(%q1), dimensions={1}
  %f = $Y add(%q0, %bb)
  %f2 = $Y multiply(%f, %f)
  %f3 = $Y multiply(%f2, %f)
  %ga = f32[] constant(0.044715)
  %gaF = $Y broadcast(%ga), dimensions={}
  %af3 = $Y multiply(%f3, %gaF)
  %u0 = $Y add(%f, %af3)
  %gc = f32[] constant(0.7978846)
  %gcF = $Y broadcast(%gc), dimensions={}
  %u = $Y multiply(%u0, %gcF)
  %th = $Y tanh(%u)
  %one = f32[] constant(1)
  %oneF = $Y broadcast(%one), dimensions={}
  %tp1 = $Y add(%th, %oneF)
  %h = f32[] constant(0.5)
  %hF = $Y broadcast(%h), dimensions={}
  %hf = $Y multiply(%f, %hF)
  %gelu = $Y multiply(%hf, %tp1)
  ROOT %t = ($Y, $Y) tuple(%th, %gelu)
}
ENTRY %e (x: $X, w: $W, c: $B) -> ($Y, $Y, $Y) {
  %x = $X parameter(0)
  %w = $W parameter(1)
  %c = $B parameter(2)
  %d = $Y fusion(%x, %w), kind=kOutput, calls=%fd
  %g = ($Y, $Y) fusion(%d, %c), kind=kLoop, calls=%fg
  %th = $Y get-tuple-element(%g), index=0
  %ge = $Y get-tuple-element(%g), index=1
  ROOT %r = ($Y, $Y, $Y) tuple(%th, %ge, %d)
}
EOT
}
gmo_hlo 1024 2048 1024 > "$tmp/gmo.hlo"
gmo_hlo 512 16384 512 > "$tmp/gmo2.hlo"
gmo_hlo 1024 1024 2048 > "$tmp/gmoq.hlo"
gelu_hlo 2048 128 4096 > "$tmp/gelu4.hlo"
cat > "$tmp/gfwd.hlo" <<'EOT'
HloModule gfwd
%fc (p0: f32[2048,512], p1: f32[512,1024], p2: f32[1024]) -> f32[2048,1024] {
  %p0 = f32[2048,512] parameter(0)
  %p1 = f32[512,1024] parameter(1)
  %d = f32[2048,1024] dot(%p0, %p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %p2 = f32[1024] parameter(2)
  %bb = f32[2048,1024] broadcast(%p2), dimensions={1}
  %y = f32[2048,1024] add(%d, %bb)
  %y2 = f32[2048,1024] multiply(%y, %y)
  %y3 = f32[2048,1024] multiply(%y2, %y)
  %k = f32[] constant(0.044715)
  %kb = f32[2048,1024] broadcast(%k), dimensions={}
  %ky3 = f32[2048,1024] multiply(%y3, %kb)
  %in = f32[2048,1024] add(%y, %ky3)
  %c = f32[] constant(0.7978846)
  %cb = f32[2048,1024] broadcast(%c), dimensions={}
  %ci = f32[2048,1024] multiply(%in, %cb)
  %t = f32[2048,1024] tanh(%ci)
  %one = f32[] constant(1)
  %ob = f32[2048,1024] broadcast(%one), dimensions={}
  %t1 = f32[2048,1024] add(%t, %ob)
  %h = f32[] constant(0.5)
  %hb = f32[2048,1024] broadcast(%h), dimensions={}
  %yh = f32[2048,1024] multiply(%y, %hb)
  ROOT %g = f32[2048,1024] multiply(%yh, %t1)
}
ENTRY %e (x: f32[2048,512], w: f32[512,1024], b: f32[1024]) -> f32[2048,1024] {
  %x = f32[2048,512] parameter(0)
  %w = f32[512,1024] parameter(1)
  %b = f32[1024] parameter(2)
  ROOT %f = f32[2048,1024] fusion(%x, %w, %b), kind=kOutput, calls=%fc
}
EOT
cat > "$tmp/bat.hlo" <<'EOT'
HloModule bat
%fc (p0: f32[16,512,64], p1: f32[16,64,512], p2: f32[512], p3: f32[16,512,512]) -> f32[16,512,512] {
  %p0 = f32[16,512,64] parameter(0)
  %p1 = f32[16,64,512] parameter(1)
  %d = f32[16,512,512] dot(%p0, %p1), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  %p2 = f32[512] parameter(2)
  %bb = f32[16,512,512] broadcast(%p2), dimensions={2}
  %h = f32[] constant(0.125)
  %hb = f32[16,512,512] broadcast(%h), dimensions={}
  %s = f32[16,512,512] multiply(%d, %hb)
  %y = f32[16,512,512] add(%s, %bb)
  %p3 = f32[16,512,512] parameter(3)
  ROOT %o = f32[16,512,512] add(%y, %p3)
}
ENTRY %e (x: f32[16,512,64], w: f32[16,64,512], b: f32[512], m: f32[16,512,512]) -> f32[16,512,512] {
  %x = f32[16,512,64] parameter(0)
  %w = f32[16,64,512] parameter(1)
  %b = f32[512] parameter(2)
  %m = f32[16,512,512] parameter(3)
  ROOT %f = f32[16,512,512] fusion(%x, %w, %b, %m), kind=kOutput, calls=%fc
}
EOT
cat > "$tmp/gbw.hlo" <<'EOT'
HloModule gbw
%fc (p0: f32[1024,2048], p1: f32[1024,1024], p2: f32[1024,2048], p3: f32[1024,2048], p4: f32[2048]) -> f32[1024,2048] {
  %p0 = f32[1024,2048] parameter(0)
  %p1 = f32[1024,1024] parameter(1)
  %dg = f32[1024,2048] dot(%p1, %p0), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %p2 = f32[1024,2048] parameter(2)
  %th2 = f32[1024,2048] multiply(%p2, %p2)
  %one = f32[] constant(1)
  %oneF = f32[1024,2048] broadcast(%one), dimensions={}
  %omt = f32[1024,2048] subtract(%oneF, %th2)
  %p3 = f32[1024,2048] parameter(3)
  %p4 = f32[2048] parameter(4)
  %fb = f32[1024,2048] broadcast(%p4), dimensions={1}
  %f = f32[1024,2048] add(%p3, %fb)
  %f2 = f32[1024,2048] multiply(%f, %f)
  %ga3 = f32[] constant(0.134145)
  %ga3F = f32[1024,2048] broadcast(%ga3), dimensions={}
  %a3f2 = f32[1024,2048] multiply(%f2, %ga3F)
  %du0 = f32[1024,2048] add(%oneF, %a3f2)
  %gc = f32[] constant(0.7978846)
  %gcF = f32[1024,2048] broadcast(%gc), dimensions={}
  %du = f32[1024,2048] multiply(%du0, %gcF)
  %half = f32[] constant(0.5)
  %halfF = f32[1024,2048] broadcast(%half), dimensions={}
  %hf = f32[1024,2048] multiply(%f, %halfF)
  %hfo = f32[1024,2048] multiply(%hf, %omt)
  %g2a = f32[1024,2048] multiply(%hfo, %du)
  %tp1 = f32[1024,2048] add(%p2, %oneF)
  %g1a = f32[1024,2048] multiply(%tp1, %halfF)
  %gp = f32[1024,2048] add(%g1a, %g2a)
  ROOT %df = f32[1024,2048] multiply(%dg, %gp)
}
ENTRY %e (w: f32[1024,2048], dy: f32[1024,1024], th: f32[1024,2048], fd: f32[1024,2048], c1: f32[2048]) -> f32[1024,2048] {
  %w = f32[1024,2048] parameter(0)
  %dy = f32[1024,1024] parameter(1)
  %th = f32[1024,2048] parameter(2)
  %fd = f32[1024,2048] parameter(3)
  %c1 = f32[2048] parameter(4)
  ROOT %f = f32[1024,2048] fusion(%w, %dy, %th, %fd, %c1), kind=kOutput, calls=%fc
}
EOT
cat > "$tmp/dt.hlo" <<'EOT'
HloModule dt
%fc (p0: f32[1024,512], p1: f32[512,1536]) -> f32[1024,1536] {
  %p0 = f32[1024,512] parameter(0)
  %p1 = f32[512,1536] parameter(1)
  %d = f32[1024,1536] dot(%p0, %p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %t = f32[1024,1536] tanh(%d)
}
ENTRY %e (x: f32[1024,512], w: f32[512,1536]) -> f32[1024,1536] {
  %x = f32[1024,512] parameter(0)
  %w = f32[512,1536] parameter(1)
  ROOT %f = f32[1024,1536] fusion(%x, %w), kind=kOutput, calls=%fc
}
EOT
cat > "$tmp/de.hlo" <<'EOT'
HloModule de
%fc (p0: f32[1000,256], p1: f32[256,768], p2: f32[768], p3: f32[1000,768]) -> f32[1000,768] {
  %p0 = f32[1000,256] parameter(0)
  %p1 = f32[256,768] parameter(1)
  %d = f32[1000,768] dot(%p0, %p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %c = f32[] constant(0.125)
  %cb = f32[1000,768] broadcast(%c), dimensions={}
  %s = f32[1000,768] multiply(%d, %cb)
  %x = f32[1000,768] exponential(%s)
  %p2 = f32[768] parameter(2)
  %bb = f32[1000,768] broadcast(%p2), dimensions={1}
  %y = f32[1000,768] add(%x, %bb)
  %p3 = f32[1000,768] parameter(3)
  ROOT %o = f32[1000,768] multiply(%y, %p3)
}
ENTRY %e (x: f32[1000,256], w: f32[256,768], b: f32[768], m: f32[1000,768]) -> f32[1000,768] {
  %x = f32[1000,256] parameter(0)
  %w = f32[256,768] parameter(1)
  %b = f32[768] parameter(2)
  %m = f32[1000,768] parameter(3)
  ROOT %f = f32[1000,768] fusion(%x, %w, %b, %m), kind=kOutput, calls=%fc
}
EOT
# name:kernels:epilogue line ('-': none)
for spec in "qkv:2:1 op on dve per store group, 1 bias row resident, 0 streamed inputs" \
	"r2:1:4 ops on dve per store group, 1 bias row resident, 2 streamed inputs" \
	"bf:1:2 ops on dve per store group, 1 bias row resident, 1 streamed input" \
	"gelu:1:9 ops on dve per store group, 0 bias rows resident, 4 streamed inputs" \
	"gelu4:2:none (not in the dot kernel's plan); the region follows in place" \
	"gfwd:1:7 ops on pool per store group in two passes (2 more on act between them, 4 step slots), 1 bias row resident, 0 streamed inputs" \
	"bat:1:3 ops on dve per store group, 1 bias row resident, 1 streamed input" \
	"dt:1:0 ops on dve per store group, evacuated as tanh(x * 1) on act, 0 bias rows resident, 0 streamed inputs" \
	"de:1:2 ops on dve per store group, evacuated as exp(x * 0.125) on act, 1 bias row resident, 1 streamed input" \
	"gmo:1:7 ops on pool per store group in two passes (2 more on act between them, 3 step slots), 1 bias row resident, 0 streamed inputs; stores the dot's value and 2 more" \
	"gmo2:2:none (not in the dot kernel's plan); the outputs follow" \
	"gmoq:1:7 ops on pool per store group in two passes (2 more on act between them, 3 step slots), 1 bias row resident, 0 streamed inputs; stores the dot's value and 2 more, each on 4 store queues" \
	"gbw:1:10 ops on pool per store group (4 more on act, per tile pair before its evacuation), 1 bias row resident, 2 streamed inputs"; do
	g=${spec%%:*} rest=${spec#*:}
	want=${rest%%:*} epi=${rest#*:}
	for t in trn1 trn2; do
		out=$("$NXCC" check "$tmp/$g.hlo" --target $t -O2 --random-inputs 3 2>&1) || fail "check $g $t: $out"
	done
	"$NXCC" compile "$tmp/$g.hlo" --target trn1 -O2 --no-cache --stats --dump-lower plan --output "$tmp/$g.neff" \
		> "$tmp/st.txt" 2>&1 || fail "compile $g: $(cat "$tmp/st.txt")"
	k=$(sed -n 's/^kernels: *//p' "$tmp/st.txt")
	[ "$k" = "$want" ] || fail "$g: $k kernels, expected $want: $(grep '^kernel' "$tmp/st.txt")"
	if [ "$epi" = - ]; then
		! grep -q "epilogue:" "$tmp/st.txt" || fail "$g: an epilogue: $(grep epilogue "$tmp/st.txt")"
	else
		grep -qF "epilogue: $epi" "$tmp/st.txt" || fail "$g: no 'epilogue: $epi': $(grep epilogue "$tmp/st.txt")"
	fi
	NX_CHECK_RACES_HBM=1 "$NXCC" run "$tmp/$g.neff" --timing-only --check-races > "$tmp/run" 2>&1 ||
		fail "$g: run --check-races: $(grep -m2 -E 'race|error' "$tmp/run")"
done
out=$("$NXCC" check "$tmp/qkv.hlo" --target trn1 -O2 --auto-cast all --auto-cast-type bf16 --random-inputs 2 2>&1) ||
	fail "check qkv bf16: $out"
exit 0
