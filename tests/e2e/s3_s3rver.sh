#!/bin/sh
# The compile cache on S3, against s3rver (npm) on loopback; boto3 checks
# that what nxcc wrote is listed and downloadable. Fails (never skips) when
# s3rver cannot be installed or started.
set -u
fail() { echo "FAIL: $*"; exit 1; }
python3 -c 'import boto3' 2>/dev/null || fail "python3 boto3 missing (apt-get install python3-boto3; see tools/deps.sh)"
T=$(mktemp -d)
srv=$(sh "$NX_ROOT/tests/s3/start.sh" nxcc-bucket) || fail "could not start s3rver (see above)"
set -- $srv
PORT=$1 PID=$2 DATA=$3
trap 'kill $PID 2>/dev/null; rm -rf "$T" "$DATA" "$DATA.log"' EXIT
unset NEURON_COMPILE_CACHE_URL NEURON_CC_FLAGS AWS_PROFILE AWS_SESSION_TOKEN AWS_ENDPOINT_URL_S3
export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=us-east-1
export AWS_ENDPOINT_URL="http://127.0.0.1:$PORT"
export TMPDIR="$T"   # local S3 lock files
URL=s3://nxcc-bucket/team/cache
tc() { "$NXCC" cache test-compile "$@"; }

out=$(tc --key s3one --cache-dir "$URL" -o "$T/one.neff" 2>"$T/err") || fail "compile: $(cat "$T/err")"
[ "$out" = "cache miss" ] || fail "expected miss: $out $(cat "$T/err")"
[ -s "$T/err" ] && fail "unexpected warnings: $(cat "$T/err")"
out=$(NEURON_COMPILE_CACHE_URL="$URL" tc --key s3one -o "$T/two.neff") || fail "second compile"
case "$out" in "cache hit ($URL/nxcc-"*"/MODULE_s3one+"*")") ;; *) fail "expected S3 hit: $out";; esac
cmp -s "$T/one.neff" "$T/two.neff" || fail "neff from S3 differs"
tc --key s3bad --cache-dir "$URL" --fail 2>/dev/null && fail "--fail"
tc --key s3bad --cache-dir "$URL" 2>&1 | grep -q "previous compile of this module failed" || fail "failure not cached on S3"

# boto3 sees the entry nxcc wrote, with the layout and marker hash
python3 - "$T/one.neff" <<'PY' || fail "boto3 check"
import boto3, hashlib, os, sys
s3 = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name="us-east-1",
                  aws_access_key_id="S3RVER", aws_secret_access_key="S3RVER")
keys = [o["Key"] for o in s3.list_objects_v2(Bucket="nxcc-bucket", Prefix="team/cache/")["Contents"]]
print("\n".join(keys))
one = [k for k in keys if "/MODULE_s3one+" in k]
names = sorted(k.rsplit("/", 1)[1] for k in one)
assert names == ["compile_flags.json", "model.done", "model.neff"], names
entry = one[0].rsplit("/", 1)[0]
assert entry.startswith("team/cache/nxcc-"), entry
neff = s3.get_object(Bucket="nxcc-bucket", Key=entry + "/model.neff")["Body"].read()
done = s3.get_object(Bucket="nxcc-bucket", Key=entry + "/model.done")["Body"].read().decode()
assert done == hashlib.sha256(neff).hexdigest() + " " + entry.split("/")[-1] + "\n", (done, hashlib.sha256(neff).hexdigest())
assert neff == open(sys.argv[1], "rb").read()
flags = s3.get_object(Bucket="nxcc-bucket", Key=entry + "/compile_flags.json")["Body"].read()
assert b'"target":"trn1"' in flags, flags
bad = [k for k in keys if "/MODULE_s3bad+" in k]
assert any(k.endswith("/model.log") for k in bad) and not any(k.endswith("/model.done") for k in bad), bad
PY

# what boto3 writes, nxcc reads (a corrupt neff put by someone else is a miss)
E=$(python3 -c "
import boto3,os
s3=boto3.client('s3',endpoint_url=os.environ['AWS_ENDPOINT_URL'],region_name='us-east-1',aws_access_key_id='S3RVER',aws_secret_access_key='S3RVER')
k=[o['Key'] for o in s3.list_objects_v2(Bucket='nxcc-bucket',Prefix='team/cache/')['Contents'] if '/MODULE_s3one+' in o['Key']][0].rsplit('/',1)[0]
s3.put_object(Bucket='nxcc-bucket',Key=k+'/model.neff',Body=b'corrupt')
print(k)") || fail "boto3 put"
out=$(tc --key s3one --cache-dir "$URL" 2>"$T/err") || fail "compile over corrupt S3 entry"
[ "$out" = "cache miss" ] || fail "corrupt S3 entry should miss: $out"
grep -q corrupt "$T/err" || fail "no corruption warning"
case "$(tc --key s3one --cache-dir "$URL")" in "cache hit"*) ;; *) fail "S3 entry not repaired";; esac

# concurrent compiles on one machine share the work through the local lock
tc --key s3par --cache-dir "$URL" --sleep 1.5 > "$T/a" 2>/dev/null &
sleep 0.3
tc --key s3par --cache-dir "$URL" --sleep 1.5 > "$T/b" 2>/dev/null
wait
[ "$(cat "$T/a" "$T/b" | grep -c '^cache miss$')" -eq 1 ] || fail "two S3 compiles: $(cat "$T/a" "$T/b")"

"$NXCC" cache list --cache-dir "$URL" > "$T/list" || fail "cache list on S3"
[ "$(wc -l < "$T/list")" -eq 3 ] || fail "list: $(cat "$T/list")"
grep -q "failed .*MODULE_s3bad" "$T/list" || fail "list states: $(cat "$T/list")"
"$NXCC" cache verify --cache-dir "$URL" || fail "verify on S3"
"$NXCC" cache prune --cache-dir "$URL" --max-size 0 >/dev/null || fail "prune on S3"
[ -z "$("$NXCC" cache list --cache-dir "$URL")" ] || fail "prune on S3 left entries"
echo ok
