#!/bin/sh
# Precompilation on a real (one-node) Slurm cluster: tools/slurm_local.sh
# starts munged, slurmctld and slurmd from Debian's packages (make deps), and
# `srun -n 4 nxcc parallel-compile --shard auto` compiles corpus graphs into
# one S3 cache (s3rver): every graph compiled exactly once, the four shards'
# reports merge to the full set, a second srun is all hits. Prints the wall
# time of 1 task and of 4 (information, not a pass criterion).
# Fails, never skips, when a daemon cannot run here.
set -u
fail() { echo "FAIL: $*"; exit 1; }
T=$(mktemp -d)
chmod 755 "$T"
SLURM_DIR="$T/slurm"
S3PID=""
cleanup() {
	sh "$NX_ROOT/tools/slurm_local.sh" stop "$SLURM_DIR" 2>/dev/null
	[ -n "$S3PID" ] && kill "$S3PID" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
out=$(sh "$NX_ROOT/tools/slurm_local.sh" start "$SLURM_DIR" 2>"$T/slurm.err") \
	|| fail "cannot run a Slurm cluster here (a daemon is forbidden or failed to start): $(cat "$T/slurm.err")"
eval "$out"
export PATH="$PATH:/usr/sbin"

srv=$(sh "$NX_ROOT/tests/s3/start.sh" nxcc-slurm) || fail "could not start s3rver (see above)"
set -- $srv
S3PID=$2
for v in $(env | sed -n 's/^\(AWS_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done
unset NEURON_CC_FLAGS NEURON_COMPILE_CACHE_URL
export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=us-east-1
export AWS_ENDPOINT_URL_S3="http://127.0.0.1:$1" TMPDIR="$T"

# the graphs: the torch-neuronx corpus modules under 50 KB, less the two
# slow gpt2 ones (the test must stay short)
G="$T/graphs"; mkdir -p "$G"
for f in "$NX_CORPUS"/hlo/torch-neuronx/*.hlo; do
	case "$f" in *gpt2_tp1*|*gpt2_tp2*) continue ;; esac
	[ "$(stat -c %s "$f")" -lt 50000 ] && cp "$f" "$G/"
done
N=$(ls "$G" | wc -l)
[ "$N" -ge 10 ] || fail "only $N corpus graphs found in $NX_CORPUS"
cd "$T" || exit 1

# srun TASKS PREFIX: one run; its wall time in $T/wall.PREFIX
run() {
	mkdir -p "$T/$2"
	s=$(date +%s.%N)
	(cd "$T/$2" && timeout 600 srun -n "$1" --overcommit --kill-on-bad-exit=0 \
		"$NXCC" parallel-compile --shard auto --jobs 1 --quiet --cache-dir "s3://nxcc-slurm/$3" "$G") \
		> "$T/$2.out" 2>&1
	rc=$?
	e=$(date +%s.%N)
	python3 -c "print(f'{$e - $s:.2f}')" > "$T/wall.$2"
	return $rc
}
run 1 one one || fail "srun -n 1: $(cat "$T/one.out")"
run 4 four four || fail "srun -n 4: $(cat "$T/four.out")"
for i in 0 1 2 3; do
	grep -q "shard $i/4 (Slurm: SLURM_PROCID=$i, SLURM_NTASKS=4)" "$T/four.out" || fail "task $i's shard: $(cat "$T/four.out")"
done
python3 - "$T/four" "$N" <<'PY' || fail "the four shards do not cover the graphs once: $(cat "$T/four.out")"
import glob, json, sys
d, n = sys.argv[1], int(sys.argv[2])
reps = sorted(glob.glob(d + "/compilation_report.*of4.json"))
assert len(reps) == 4, reps
seen = {}
for r in reps:
    for g in json.load(open(r))["graphs"]:
        assert g["status"] == "compiled", (r, g)
        assert g["key"] not in seen, ("compiled twice", g["key"], r, seen.get(g["key"]))
        seen[g["key"]] = r
files = json.load(open(reps[0]))
assert len(seen) == n, (len(seen), n)
PY
python3 - "$N" <<'PY' || fail "S3 does not hold one entry per graph"
import boto3, os, sys
s3 = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL_S3"], region_name="us-east-1",
                  aws_access_key_id="S3RVER", aws_secret_access_key="S3RVER")
keys, tok = [], None
while True:
    kw = {"Bucket": "nxcc-slurm", "Prefix": "four/"}
    if tok: kw["ContinuationToken"] = tok
    r = s3.list_objects_v2(**kw)
    keys += [o["Key"] for o in r.get("Contents", [])]
    tok = r.get("NextContinuationToken")
    if not tok: break
done = [k for k in keys if k.endswith("/model.done")]
assert len(done) == int(sys.argv[1]), (len(done), sys.argv[1])
PY
# a second srun over the same cache: all hits
mkdir -p "$T/again"
(cd "$T/again" && timeout 600 srun -n 4 --overcommit "$NXCC" parallel-compile --shard auto --jobs 1 --quiet \
	--cache-dir s3://nxcc-slurm/four "$G") > "$T/again.out" 2>&1 || fail "second srun: $(cat "$T/again.out")"
python3 - "$T/again" "$N" <<'PY' || fail "second srun was not all hits: $(cat "$T/again.out")"
import glob, json, sys
n = 0
for r in glob.glob(sys.argv[1] + "/compilation_report.*of4.json"):
    j = json.load(open(r))
    assert j["compiled"] == 0 and j["failed"] == 0, j
    n += j["cached"]
assert n == int(sys.argv[2]), n
PY
echo "slurm: $N graphs; wall time srun -n 1: $(cat "$T/wall.one") s, srun -n 4: $(cat "$T/wall.four") s"
echo "slurm_parallel: ok"
