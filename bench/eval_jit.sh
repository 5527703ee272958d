#!/bin/sh
# `nxcc eval` wall time with the host JIT (default) and without (NX_EVAL_JIT=0)
# on the ViT-B/16 training step of the JAX corpus, and the same graph at
# batch 4 (the corpus file with its leading batch dimension 32 -> 4 by sed,
# shapes and the label gather's slice size:
# the full graph needs more than 12 GiB of live tensors, more than a small
# machine's default --max-memory). Outputs are compared byte for byte too.
# The batch-32 graph runs where the machine has at least 40 GiB of RAM;
# EVAL_JIT_FULL=0 skips it, EVAL_JIT_FULL=1 forces it. Also a GELU graph at
# the ViT's MLP size: the elementwise work alone.
BUILD=${BUILD:-build}
CORPUS=${NX_CORPUS:-../shared/corpus}
VIT="$CORPUS/hlo/jax/vision_diffusion__vit__training__module_2323.jit_train_step.hlo"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
[ -f "$VIT" ] || { echo "eval_jit: $VIT missing"; exit 1; }
sed -e 's/\[32,/[4,/g' -e 's/\[32\]/[4]/g' -e 's/slice_sizes={32,/slice_sizes={4,/g' "$VIT" > "$T/vit_b4.hlo"
one() { # label file jit(0/1): prints "wall s (user s)" or FAILED
	s=$(date +%s.%N)
	if NX_EVAL_JIT=$3 NX_EVAL_JIT_STATS=1 /usr/bin/time -f "%U %S %M" -o "$T/time" "$BUILD/nxcc" eval "$2" \
		--random-inputs 1 --output-dir "$T/o$3" >/dev/null 2>"$T/err$3"; then
		set -- $(cat "$T/time")
		printf '%.1f s (CPU user %.1f + sys %.1f s, peak %d MiB)' "$(echo "$(date +%s.%N) - $s" | bc)" "$1" "$2" "$(($3 / 1024))"
	else
		printf 'FAILED: %s' "$(grep -m1 error "$T/err$3" | cut -c1-120)"
	fi
}
# the ViT MLP's activation alone: x * gamma + beta, GELU (tanh form), at
# the batch-32 size: what the JIT covers, without dot and convolution
{
	echo 'HloModule gelu'; echo 'ENTRY e {'
	S=f32[32,196,3072]
	echo "  x = $S parameter(0)"; echo "  g = f32[3072] parameter(1)"; echo "  b = f32[3072] parameter(2)"
	echo "  gb = $S broadcast(g), dimensions={2}"; echo "  bb = $S broadcast(b), dimensions={2}"
	echo "  y0 = $S multiply(x, gb)"; echo "  y = $S add(y0, bb)"
	for c in "c0 0.044715" "c1 0.797884583" "h 0.5" "one 1"; do
		set -- $c; echo "  $1 = f32[] constant($2)"; echo "  $1b = $S broadcast($1), dimensions={}"
	done
	echo "  y2 = $S multiply(y, y)"; echo "  y3 = $S multiply(y2, y)"; echo "  t0 = $S multiply(y3, c0b)"
	echo "  t1 = $S add(y, t0)"; echo "  t2 = $S multiply(t1, c1b)"; echo "  t3 = $S tanh(t2)"
	echo "  t4 = $S add(t3, oneb)"; echo "  t5 = $S multiply(t4, hb)"; echo "  ROOT r = $S multiply(y, t5)"; echo '}'
} > "$T/gelu.hlo"
line=""
for g in gelu b4 full; do
	if [ $g = full ]; then
		[ "${EVAL_JIT_FULL:-1}" = 0 ] && continue
		mem=$(awk '/^MemTotal/ {print int($2 / 1048576)}' /proc/meminfo)
		if [ "${mem:-0}" -lt 40 ] && [ "${EVAL_JIT_FULL:-}" != 1 ]; then
			echo "eval ViT-B/16 train step batch 32: skipped (more than 12 GiB of live tensors; ${mem} GiB RAM here; EVAL_JIT_FULL=1 forces)"
			line="${line}full: skipped; "
			continue
		fi
		f=$VIT; label="ViT-B/16 train step batch 32"
	elif [ $g = gelu ]; then
		f=$T/gelu.hlo; label="GELU f32[32,196,3072] (elementwise only)"
	else
		f=$T/vit_b4.hlo; label="ViT-B/16 train step batch 4"
	fi
	rm -rf "$T/o0" "$T/o1"
	i=$(one "$label" "$f" 0)
	j=$(one "$label" "$f" 1)
	same=""
	if [ -d "$T/o0" ] && [ -d "$T/o1" ]; then
		same="identical"
		for o in "$T"/o0/*.npy; do cmp -s "$o" "$T/o1/$(basename "$o")" || same="DIFFERENT"; done
	fi
	st=$(sed -n 's/^nxcc: eval JIT: //p' "$T/err1")
	echo "eval $label: interpreter $i, JIT $j; outputs $same; JIT: $st"
	line="$line$g: interp $i, JIT $j; "
done
echo "eval_jit: $line"
