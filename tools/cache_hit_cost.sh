#!/bin/sh
# The cost of one cache hit of `nxcc compile` (a whole process: exec, read
# and fingerprint the module, look up, verify, write the .neff), for a
# directory cache and an S3 cache (s3rver on loopback, environment
# credentials, then instance-metadata credentials from tests/s3/aws_meta.py):
# callgrind instruction count (repeatable) and the median wall time of 15
# runs (noisy on a shared machine).
#   tools/cache_hit_cost.sh [NXCC] [MODULE]
set -u
NXCC=${1:-build/nxcc}
M=${2:-examples/mlp_step.hlo}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
T=$(mktemp -d)
srv=$(NX_BUILD="$ROOT/build" sh "$ROOT/tests/s3/start.sh" nxcc-bench) || { echo "no s3rver" >&2; exit 1; }
set -- $srv
S3PID=$2
python3 "$ROOT/tests/s3/aws_meta.py" --access-key S3RVER --secret S3RVER --log "$T/meta.log" > "$T/meta.port" 2>/dev/null &
METAPID=$!
trap 'kill $S3PID $METAPID 2>/dev/null; rm -rf "$T"' EXIT
i=0; while [ ! -s "$T/meta.port" ]; do i=$((i + 1)); [ $i -gt 100 ] && { echo "aws_meta.py did not start" >&2; exit 1; }; sleep 0.1; done
for v in $(env | sed -n 's/^\(AWS_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done
unset NEURON_CC_FLAGS NEURON_COMPILE_CACHE_URL
export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=us-east-1
export AWS_ENDPOINT_URL_S3="http://127.0.0.1:$1" TMPDIR="$T"
for where in "$T/dir" s3://nxcc-bench/p imds; do
	k=$where
	case "$where" in
	s3*) k=s3 ;;
	imds) # the same S3 hit, credentials from IMDSv2 (three local HTTP requests more)
		k=s3-imds; where=s3://nxcc-bench/p
		unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
		export AWS_EC2_METADATA_SERVICE_ENDPOINT="http://127.0.0.1:$(cat "$T/meta.port")" HOME="$T" ;;
	*) k=dir ;;
	esac
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
	printf '%-8s hit: %s instructions (callgrind), median wall %s.%03d ms\n' "$k" "$ir" $((med / 1000)) $((med % 1000))
done
