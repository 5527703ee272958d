#!/bin/sh
# The cost of one cache hit of `nxcc compile` (a whole process: exec, read
# and fingerprint the module, look up, verify, write the .neff), for a
# directory cache and an S3 cache (s3rver on loopback, environment
# credentials): callgrind instruction count (repeatable) and the median wall
# time of 15 runs (noisy on a shared machine).
#   tools/cache_hit_cost.sh [NXCC] [MODULE]
set -u
NXCC=${1:-build/nxcc}
M=${2:-examples/mlp_step.hlo}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
T=$(mktemp -d)
srv=$(NX_BUILD="$ROOT/build" sh "$ROOT/tests/s3/start.sh" nxcc-bench) || { echo "no s3rver" >&2; exit 1; }
set -- $srv
trap 'kill $2 2>/dev/null; rm -rf "$T"' EXIT
for v in $(env | sed -n 's/^\(AWS_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done
unset NEURON_CC_FLAGS NEURON_COMPILE_CACHE_URL
export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=us-east-1
export AWS_ENDPOINT_URL_S3="http://127.0.0.1:$1" TMPDIR="$T"
for where in "$T/dir" s3://nxcc-bench/p; do
	"$NXCC" compile "$M" --cache-dir "$where" -o "$T/o.neff" > "$T/fill" 2>&1 || { cat "$T/fill"; exit 1; }
	"$NXCC" compile "$M" --cache-dir "$where" -o "$T/o.neff" | grep -q "^cache hit" || { echo "no hit at $where" >&2; exit 1; }
	valgrind --tool=callgrind --callgrind-out-file="$T/cg" "$NXCC" compile "$M" --cache-dir "$where" -o "$T/o.neff" \
		> /dev/null 2> "$T/vg" || { cat "$T/vg"; exit 1; }
	ir=$(sed -n 's/^summary: //p' "$T/cg")
	i=0; : > "$T/walls"
	while [ $i -lt 15 ]; do
		s=$(date +%s%N); "$NXCC" compile "$M" --cache-dir "$where" -o "$T/o.neff" > /dev/null; e=$(date +%s%N)
		echo $(( (e - s) / 1000 )) >> "$T/walls"; i=$((i + 1))
	done
	med=$(sort -n "$T/walls" | sed -n 8p)
	case "$where" in s3*) k=s3 ;; *) k=dir ;; esac
	printf '%-4s hit: %s instructions (callgrind), median wall %s.%03d ms\n' "$k" "$ir" $((med / 1000)) $((med % 1000))
done
