#!/bin/sh
# `nxcc eval` wall time with the host JIT (default) and without (NX_EVAL_JIT=0)
# on the ViT-B/16 training step of the JAX corpus, and the same graph at
# batch 4 (the corpus file with its leading batch dimension 32 -> 4 by sed,
# shapes and the label gather's slice size:
# the full graph needs more than 12 GiB of live tensors, more than a small
# machine's default --max-memory). Outputs are compared byte for byte too.
# The batch-32 graph runs where the machine has at least 40 GiB of RAM;
# EVAL_JIT_FULL=0 skips it, EVAL_JIT_FULL=1 forces it.
BUILD=${BUILD:-build}
CORPUS=${NX_CORPUS:-../shared/corpus}
VIT="$CORPUS/hlo/jax/vision_diffusion__vit__training__module_2323.jit_train_step.hlo"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
[ -f "$VIT" ] || { echo "eval_jit: $VIT missing"; exit 1; }
sed -e 's/\[32,/[4,/g' -e 's/\[32\]/[4]/g' -e 's/slice_sizes={32,/slice_sizes={4,/g' "$VIT" > "$T/vit_b4.hlo"
one() { # label file jit(0/1): prints "wall s (user s)" or FAILED
	s=$(date +%s.%N)
	if NX_EVAL_JIT=$3 NX_EVAL_JIT_STATS=1 /usr/bin/time -f "%U" -o "$T/time" "$BUILD/nxcc" eval "$2" \
		--random-inputs 1 --output-dir "$T/o$3" >/dev/null 2>"$T/err$3"; then
		printf '%.1f s (user %.1f s)' "$(echo "$(date +%s.%N) - $s" | bc)" "$(cat "$T/time")"
	else
		printf 'FAILED: %s' "$(grep -m1 error "$T/err$3" | cut -c1-120)"
	fi
}
line=""
for g in b4 full; do
	if [ $g = full ]; then
		[ "${EVAL_JIT_FULL:-1}" = 0 ] && continue
		mem=$(awk '/^MemTotal/ {print int($2 / 1048576)}' /proc/meminfo)
		if [ "${mem:-0}" -lt 40 ] && [ "${EVAL_JIT_FULL:-}" != 1 ]; then
			echo "eval ViT-B/16 train step batch 32: skipped (more than 12 GiB of live tensors; ${mem} GiB RAM here; EVAL_JIT_FULL=1 forces)"
			line="${line}full: skipped; "
			continue
		fi
		f=$VIT; label="ViT-B/16 train step batch 32"
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
