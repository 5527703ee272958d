#!/bin/sh
# The loop-nest kernels (backend/kernels/: dot-loop, elementwise-loop,
# reduce-loop, fused-loop) against the evaluator with `nxcc check` on shapes
# with ragged tiles in every dimension, f32 and bf16, trn1 and trn2; and
# their code size independent of the volume (the same instruction count at
# 16x the volume).
set -u
fail() { echo "FAIL: $*"; exit 1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

# $1 name, $2 dtype, $3 M, $4 K, $5 N, $6 batch (0: none)
dot() {
	if [ "$6" = 0 ]; then
		printf 'HloModule %s\nENTRY e {\n  a = %s[%d,%d] parameter(0)\n  b = %s[%d,%d] parameter(1)\n  ROOT d = %s[%d,%d] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n' \
			"$1" "$2" "$3" "$4" "$2" "$4" "$5" "$2" "$3" "$5"
	else
		printf 'HloModule %s\nENTRY e {\n  a = %s[%d,%d,%d] parameter(0)\n  b = %s[%d,%d,%d] parameter(1)\n  ROOT d = %s[%d,%d,%d] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}\n}\n' \
			"$1" "$2" "$6" "$3" "$4" "$2" "$6" "$4" "$5" "$2" "$6" "$3" "$5"
	fi
}
dot d_ragged f32 293 200 1103 0 > "$T/d1.hlo"        # M, N prime: no even tile, the ragged loop
dot d_stat bf16 512 384 1536 0 > "$T/d5.hlo"         # stationary: resident A^T, streamed B
dot d_kblocks bf16 129 9000 131 0 > "$T/d2.hlo"      # K blocks, ragged M
dot d_batch f32 130 64 200 5 > "$T/d3.hlo"           # batch loop
cat > "$T/d4.hlo" <<'EOT'
HloModule d_transposed
ENTRY e {
  a = f32[300,1000] parameter(0)
  b = f32[3001,300] parameter(1)
  ROOT d = f32[1000,3001] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={1}
}
EOT
cat > "$T/e1.hlo" <<'EOT'
HloModule ew
ENTRY e {
  a = f32[6000,1031] parameter(0)
  b = f32[6000,1031] parameter(1)
  ROOT m = f32[6000,1031] maximum(a, b)
}
EOT
cat > "$T/r1.hlo" <<'EOT'
HloModule red
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  a = f32[4099,4096] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[4099] reduce(a, z), dimensions={1}, to_apply=add
}
EOT
cat > "$T/f1.hlo" <<'EOT'
HloModule fused_chain
ENTRY e {
  a = f32[3000,1031] parameter(0)
  b = f32[3000,1031] parameter(1)
  x = f32[3000,1031] multiply(a, b)
  y = f32[3000,1031] exponential(x)
  c = bf16[3000,1031] convert(y)
  d = f32[3000,1031] convert(c)
  z = f32[3000,1031] add(d, a)
  ROOT t = f32[3000,1031] tanh(z)
}
EOT
# Adam-like: a tuple root, broadcasts of scalar constants and of a scalar
# parameter (one column each), two outputs
cat > "$T/f2.hlo" <<'EOT'
HloModule fused_tuple
ENTRY e {
  g = f32[3000,1031] parameter(0)
  m = f32[3000,1031] parameter(1)
  v = f32[3000,1031] parameter(2)
  lr = f32[] parameter(3)
  fu = (f32[3000,1031], f32[3000,1031]) fusion(g, m, v, lr), kind=kLoop, calls=body
  m2 = f32[3000,1031] get-tuple-element(fu), index=0
  v2 = f32[3000,1031] get-tuple-element(fu), index=1
  ROOT r = (f32[3000,1031], f32[3000,1031]) tuple(m2, v2)
}
body {
  g = f32[3000,1031] parameter(0)
  m = f32[3000,1031] parameter(1)
  v = f32[3000,1031] parameter(2)
  lr = f32[] parameter(3)
  c = f32[] constant(0.9)
  cb = f32[3000,1031] broadcast(c), dimensions={}
  lb = f32[3000,1031] broadcast(lr), dimensions={}
  a = f32[3000,1031] multiply(m, cb)
  b = f32[3000,1031] multiply(g, lb)
  mn = f32[3000,1031] add(a, b)
  gg = f32[3000,1031] multiply(g, g)
  vn = f32[3000,1031] add(v, gg)
  ROOT t = (f32[3000,1031], f32[3000,1031]) tuple(mn, vn)
}
EOT
# f3: bf16, odd sizes, outputs aliased to parameters (written in place):
# tensor_tensor with a broadcast operand on either side becomes
# tensor_scalar (a constant immediate, a parameter's per-partition column),
# the instructions split over ACT, DVE and POOL (fused-loop "stages")
cat > "$T/f3.hlo" <<'EOT'
HloModule fused_split, input_output_alias={ {0}: (1, {}, must-alias), {1}: (2, {}, must-alias) }
ENTRY e {
  g = bf16[3001,1031] parameter(0)
  m = bf16[3001,1031] parameter(1)
  v = bf16[3001,1031] parameter(2)
  lr = bf16[] parameter(3)
  fu = (bf16[3001,1031], bf16[3001,1031]) fusion(g, m, v, lr), kind=kLoop, calls=body
  m2 = bf16[3001,1031] get-tuple-element(fu), index=0
  v2 = bf16[3001,1031] get-tuple-element(fu), index=1
  ROOT r = (bf16[3001,1031], bf16[3001,1031]) tuple(m2, v2)
}
body {
  g = bf16[3001,1031] parameter(0)
  m = bf16[3001,1031] parameter(1)
  v = bf16[3001,1031] parameter(2)
  lr = bf16[] parameter(3)
  c = bf16[] constant(0.9)
  cb = bf16[3001,1031] broadcast(c), dimensions={}
  lb = bf16[3001,1031] broadcast(lr), dimensions={}
  a = bf16[3001,1031] multiply(cb, m)
  b = bf16[3001,1031] divide(g, lb)
  q = bf16[3001,1031] subtract(cb, b)
  mn = bf16[3001,1031] add(a, q)
  gg = bf16[3001,1031] multiply(g, g)
  s = bf16[3001,1031] sqrt(gg)
  w = bf16[3001,1031] multiply(s, cb)
  vn = bf16[3001,1031] maximum(v, w)
  ROOT t = (bf16[3001,1031], bf16[3001,1031]) tuple(mn, vn)
}
EOT
# a flat row of a prime length (5087): whole-row chunks, not 5087 of one
cat > "$T/p1.hlo" <<'EOT'
HloModule prime_row
ENTRY e {
  a = f32[30522,16] parameter(0)
  b = f32[30522,16] parameter(1)
  ROOT m = f32[30522,16] multiply(a, b)
}
EOT
# e1, p1 unfused (the fusion pass would make e1 a one-op fusion-loop)
opt() { case $1 in e1|p1) echo "--disable-pass fusion" ;; esac; }
kinds="d1:dot-loop d2:dot-loop d3:dot-loop d4:dot-loop d5:dot-loop e1:elementwise-loop r1:reduce-loop f1:fused-loop"
kinds="$kinds f2:fused-loop f3:fused-loop p1:elementwise"
for kv in $kinds; do
	k=${kv%%:*} kind=${kv#*:}
	"$NXCC" compile "$T/$k.hlo" --target trn1 $(opt $k) --dump-lower=plan -o "$T/$k.neff" > "$T/$k.plan" || fail "compile $k"
	[ "$k" = f3 ] && { "$NXCC" compile "$T/$k.hlo" --target trn1 --dump-lower=streams -o "$T/$k.neff" > "$T/$k.s" || fail "streams $k"; }
	grep -q "^kernel [0-9]* $kind:" "$T/$k.plan" || fail "$k is not lowered by $kind: $(grep '^kernel' "$T/$k.plan")"
done
n=0
for kv in $kinds; do
	k=${kv%%:*}
	ts=trn1
	case $k in d1|f1|f3) ts="trn1 trn2" ;; esac
	for t in $ts; do
		out=$("$NXCC" check "$T/$k.hlo" --target $t $(opt $k) --random-inputs 1 2>&1) ||
			fail "$k $t: $(echo "$out" | grep -E 'MISMATCH|error' | head -3)"
		n=$((n + 1))
	done
done
echo "checked $n loop-kernel configurations"
# d4's lhs transpose (canonicalize-dot) is read through its view, not copied
grep -q "transpose-deferred" "$T/d4.plan" || fail "d4: the lhs transpose is not deferred: $(grep '^kernel' "$T/d4.plan")"
grep -q "2 outputs" "$T/f2.plan" || fail "f2: not one kernel with two outputs"
grep -q "tensor_scalar" "$T/f3.s" || fail "f3: no tensor_scalar for the broadcast operands"
[ "$(grep -c "in-place" "$T/f3.plan")" = 2 ] || fail "f3: outputs not written in place: $(cat "$T/f3.plan")"
n3=$(grep -o "stages [a-z >]*" "$T/f3.plan" | tr ' ' '\n' | grep -cE "^(act|dve|pool)$")
[ "$n3" -ge 2 ] || fail "f3: one compute engine only: $(grep stages "$T/f3.plan")"
grep -q "in 1 chunks of 5087" "$T/p1.plan" || fail "p1: $(grep tiling "$T/p1.plan")"

# code size: 16x the volume, the same instructions
count() { "$NXCC" compile "$1" --target trn1 --no-cache --stats -o "$T/c.neff" | awk '/^instructions/{s+=$3} END{print s}'; }
dot big f32 1172 200 4412 0 > "$T/big.hlo"
a=$(count "$T/d1.hlo") b=$(count "$T/big.hlo")
[ "$a" = "$b" ] || fail "dot: $a instructions, $b at 16x the volume"
# the stationary schedule: its plan (tile groups, pieces) varies with the
# shape, its size does not grow with the volume (1x, 16x, 256x)
grep -q "whole K resident" "$T/d5.plan" || fail "d5: not the stationary schedule: $(grep tiling "$T/d5.plan")"
for s in 1 4 16; do
	dot st f32 $((256 * s)) 512 $((512 * s)) 0 > "$T/st.hlo"
	a=$(count "$T/st.hlo")
	[ "$a" -le 1000 ] || fail "stationary dot at ${s}x${s}: $a instructions"
done
# (whole tiles at both volumes: how many ragged tail tiles a volume has
# depends on the tile width, which the SBUF budget picks)
sed 's/3000,1031/4096,1024/g' "$T/f1.hlo" > "$T/f1w.hlo"
sed 's/3000,1031/65536,1024/g' "$T/f1.hlo" > "$T/f16.hlo"
a=$(count "$T/f1w.hlo") b=$(count "$T/f16.hlo")
[ "$a" = "$b" ] || fail "fused chain: $a instructions, $b at 16x the volume"
echo "instruction counts independent of the volume"
