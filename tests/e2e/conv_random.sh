#!/bin/sh
# End to end: conv-to-dot (passes/conv_to_dot.c) on 60 generated
# convolutions (fixed seed): dim_labels permuted at random (input, kernel and
# output), 1-D and 2-D, strides, padding from -1 to 2, lhs and rhs dilation,
# window reversal, feature_group_count (incl. depthwise with multipliers),
# batch_group_count, f32 and bf16 inputs with an f32 or a bf16 result;
# `nxcc check` against the evaluator, trn1 -O2 (the odd ones) and trn2 -O1
# (the even ones).
set -u
fail() { echo "FAIL: $*"; exit 1; }
PY=/usr/bin/python3; [ -x "$PY" ] || PY=python3
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
"$PY" - "$T" <<'PYEOF' || fail "generator"
import random, sys
out = sys.argv[1]
random.seed(11)
for t in range(60):
    while True:
        ns = random.choice([1, 2, 2])
        sp = [str(k) for k in range(ns)]
        il = ['b', 'f'] + sp; random.shuffle(il)
        kl = ['i', 'o'] + sp; random.shuffle(kl)
        ol = ['b', 'f'] + sp; random.shuffle(ol)
        G = random.choice([1, 1, 2, 3]); B = 1
        if G == 1 and random.random() < 0.3:
            B = random.choice([2, 3])
        ci = random.choice([1, 2, 3]); nb = random.choice([1, 2])
        N = nb * B; C = ci * G; Co = G * B * random.choice([1, 2])
        I = []; K = []; O = []; win = []; ok = True
        for d in range(ns):
            i = random.randint(1, 9); k = random.randint(1, 4)
            s = random.choice([1, 1, 2, 3]); rd = random.choice([1, 1, 2]); ld = random.choice([1, 1, 2])
            lo = random.randint(-1, 2); hi = random.randint(-1, 2)
            pad = lo + hi + (i - 1) * ld + 1; dk = (k - 1) * rd + 1
            if pad < dk:
                ok = False; break
            I.append(i); K.append(k); O.append((pad - dk) // s + 1)
            win.append((k, s, lo, hi, ld, rd))
        if ok:
            break
    dims = lambda lab, m: ','.join(str(m[c]) for c in lab)
    sd = lambda v: {str(d): v[d] for d in range(ns)}
    ish = dims(il, dict(b=N, f=C, **sd(I)))
    ksh = dims(kl, dict(i=ci, o=Co, **sd(K)))
    osh = dims(ol, dict(b=N // B, f=Co, **sd(O)))
    ty = random.choice(['f32', 'f32', 'bf16'])
    oty = 'f32' if random.random() < 0.5 else ty
    w = ' '.join(['size=' + 'x'.join(str(x[0]) for x in win),
                  'stride=' + 'x'.join(str(x[1]) for x in win),
                  'pad=' + 'x'.join('%d_%d' % (x[2], x[3]) for x in win),
                  'lhs_dilate=' + 'x'.join(str(x[4]) for x in win),
                  'rhs_dilate=' + 'x'.join(str(x[5]) for x in win)])
    if random.random() < 0.15:
        w += ' rhs_reversal=' + 'x'.join(random.choice('01') for x in win)
    extra = (', feature_group_count=%d' % G if G > 1 else '') + (', batch_group_count=%d' % B if B > 1 else '')
    open('%s/c%02d.hlo' % (out, t), 'w').write(
        'HloModule c%d\nENTRY e {\n  x = %s[%s] parameter(0)\n  w = %s[%s] parameter(1)\n'
        '  ROOT c = %s[%s] convolution(x, w), window={%s}, dim_labels=%s_%s->%s%s\n}\n'
        % (t, ty, ish, ty, ksh, oty, osh, w, ''.join(il), ''.join(kl), ''.join(ol), extra))
PYEOF
n=0
for f in "$T"/c*.hlo; do
	k=$(basename "$f" .hlo); k=${k#c}; k=${k#0}
	if [ $((k % 2)) -eq 1 ]; then cfg="--target trn1 -O2"; else cfg="--target trn2 -O1"; fi
	out=$("$NXCC" check "$f" --framework XLA $cfg --random-inputs 2 2>&1) ||
		fail "$(grep ROOT "$f") ($cfg): $(echo "$out" | grep -E 'MISMATCH|error|FAILED' | head -3)"
	n=$((n + 1))
done
[ "$n" -eq 60 ] || fail "generated $n convolutions, expected 60"
echo "checked $n convolutions"
