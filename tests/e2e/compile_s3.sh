#!/bin/sh
# nxcc compile through an S3 cache (s3rver on loopback): miss then hit via
# NEURON_COMPILE_CACHE_URL, and boto3 lists and downloads what nxcc stored.
# Fails (never skips) when s3rver cannot be started.
set -u
fail() { echo "FAIL: $*"; exit 1; }
PY=/usr/bin/python3; [ -x "$PY" ] || PY=python3
"$PY" -c 'import boto3' 2>/dev/null || fail "$PY lacks boto3 (apt-get install python3-boto3)"
T=$(mktemp -d)
srv=$(sh "$NX_ROOT/tests/s3/start.sh" nxcc-compile) || fail "could not start s3rver (see above)"
set -- $srv
PORT=$1 PID=$2 DATA=$3
trap 'kill $PID 2>/dev/null; rm -rf "$T" "$DATA" "$DATA.log"' EXIT
unset NEURON_CC_FLAGS AWS_PROFILE AWS_SESSION_TOKEN AWS_ENDPOINT_URL_S3
export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=us-east-1
export AWS_ENDPOINT_URL="http://127.0.0.1:$PORT"
export TMPDIR="$T"
export NEURON_COMPILE_CACHE_URL=s3://nxcc-compile/ci/cache
M="$NX_ROOT/examples/mlp_step.hlo"

"$NXCC" compile "$M" -o "$T/a.neff" > "$T/o1" 2>&1 || fail "compile: $(cat "$T/o1")"
grep -q "^cache miss" "$T/o1" || fail "first compile not a miss: $(cat "$T/o1")"
grep -q "warning" "$T/o1" && fail "warnings: $(cat "$T/o1")"
"$NXCC" compile "$M" -o "$T/b.neff" > "$T/o2" 2>&1 || fail "second compile: $(cat "$T/o2")"
grep -q "^cache hit (s3://nxcc-compile/ci/cache/nxcc-.*/MODULE_" "$T/o2" || fail "not an S3 hit: $(cat "$T/o2")"
cmp -s "$T/a.neff" "$T/b.neff" || fail "neff from S3 differs"

"$PY" - "$T/a.neff" <<'PYEOF' || fail "boto3 check"
import boto3, hashlib, json, os, sys
s3 = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name="us-east-1",
                  aws_access_key_id="S3RVER", aws_secret_access_key="S3RVER")
keys = [o["Key"] for o in s3.list_objects_v2(Bucket="nxcc-compile", Prefix="ci/cache/")["Contents"]]
entry = {k.rsplit("/", 1)[0] for k in keys}
assert len(entry) == 1, keys
entry = entry.pop()
assert entry.startswith("ci/cache/nxcc-") and "/MODULE_" in entry, entry
names = sorted(k.rsplit("/", 1)[1] for k in keys)
assert names == ["compile_flags.json", "model.done", "model.hlo_module.pb", "model.neff"], names
neff = s3.get_object(Bucket="nxcc-compile", Key=entry + "/model.neff")["Body"].read()
assert neff == open(sys.argv[1], "rb").read()
done = s3.get_object(Bucket="nxcc-compile", Key=entry + "/model.done")["Body"].read().decode().strip()
assert done == hashlib.sha256(neff).hexdigest() + " " + entry.split("/")[-1], done
flags = json.loads(s3.get_object(Bucket="nxcc-compile", Key=entry + "/compile_flags.json")["Body"].read())
assert flags["target"] == "trn1", flags
PYEOF

# parallel-compile fills the same S3 cache; a second machine's run is all hits
mkdir "$T/d"; cp "$NX_ROOT/examples/"*.hlo "$T/d/"
"$NXCC" parallel-compile --jobs 2 --report "$T/r1.json" "$T/d" > "$T/p1" 2>&1 || fail "parallel-compile: $(cat "$T/p1")"
grep -q "total 2, compiled 1, cached 1, failed 0" "$T/p1" || fail "parallel-compile on S3: $(cat "$T/p1")"
echo "compile s3: ok"
