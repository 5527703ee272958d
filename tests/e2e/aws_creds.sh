#!/bin/sh
# The AWS credential chain of the S3 cache (compiler/aws_creds.c) against
# loopback stand-ins: tests/s3/aws_meta.py answers as IMDSv2, STS
# (AssumeRoleWithWebIdentity) and ECS container credentials; tests/s3/stub.py
# is an S3 that checks every SigV4 signature with the secret those sources
# hand out and logs the access key and session token each request carried.
# Then s3rver: nxcc stores with instance-metadata credentials and boto3,
# finding the same credentials through the same variables, reads it back.
# Fails (never skips) when a server cannot be started.
set -u
fail() { echo "FAIL: $*"; exit 1; }
PY=/usr/bin/python3; [ -x "$PY" ] || PY=python3
T=$(mktemp -d)
PIDS=""
trap 'for p in $PIDS; do kill $p 2>/dev/null; done; rm -rf "$T"' EXIT
SECRET=chain-secret-7
# start NAME SCRIPT ARGS...: a python server; its port in $T/NAME.port
start() {
	name=$1; shift
	STUB_SECRET=$SECRET "$PY" "$@" > "$T/$name.port" 2> "$T/$name.err" &
	PIDS="$PIDS $!"
	i=0
	while [ ! -s "$T/$name.port" ]; do
		i=$((i + 1)); [ $i -gt 100 ] && fail "$name did not start: $(cat "$T/$name.err")"
		sleep 0.1
	done
}
start meta "$NX_ROOT/tests/s3/aws_meta.py" --secret "$SECRET" --log "$T/meta.log"
start s3 "$NX_ROOT/tests/s3/stub.py" --log "$T/s3.log"
META="http://127.0.0.1:$(cat "$T/meta.port")"
S3="http://127.0.0.1:$(cat "$T/s3.port")"
CLOSED="http://127.0.0.1:9" # discard port: nothing listens, connection refused at once

# a clean slate: no credentials anywhere but what each case sets
for v in $(env | sed -n 's/^\(AWS_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done
unset NEURON_CC_FLAGS NEURON_COMPILE_CACHE_URL
export HOME="$T/home" TMPDIR="$T" AWS_REGION=us-east-1 AWS_ENDPOINT_URL_S3="$S3"
export AWS_EC2_METADATA_SERVICE_ENDPOINT="$CLOSED"
mkdir -p "$HOME/.aws"
n=0
# tc: one cache round trip (miss + store) under a fresh key, through the chain
tc() {
	n=$((n + 1))
	: > "$T/s3.log"; : > "$T/meta.log"
	"$NXCC" cache test-compile --key "case$n" --cache-dir s3://b/p > "$T/out" 2>&1
}
# signed_by KEY TOKEN: every S3 request of the case carried them
signed_by() {
	[ -s "$T/s3.log" ] || fail "case $n: no S3 request: $(cat "$T/out")"
	bad=$(grep -v " key=$1 token=$2\$" "$T/s3.log")
	[ -z "$bad" ] || fail "case $n: requests not signed with $1/$2: $bad; out: $(cat "$T/out")"
	grep -q "PUT /b/p/nxcc-.*/MODULE_case$n%2B.*/model.done" "$T/s3.log" || fail "case $n: nothing stored: $(cat "$T/s3.log")"
	grep -qi "warning" "$T/out" && fail "case $n: warnings: $(cat "$T/out")"
	grep -q "SignatureDoesNotMatch" "$T/s3.err" && fail "case $n: bad signature: $(cat "$T/s3.err")"
	return 0
}

# 1. environment (and it wins over the instance metadata)
AWS_ACCESS_KEY_ID=AKIAENV AWS_SECRET_ACCESS_KEY=$SECRET AWS_EC2_METADATA_SERVICE_ENDPOINT=$META tc || fail "env: $(cat "$T/out")"
signed_by AKIAENV -
[ -s "$T/meta.log" ] && fail "env credentials, yet the metadata service was asked: $(cat "$T/meta.log")"

# 2. AWS_PROFILE in ~/.aws/credentials; a profile only in ~/.aws/config
printf '[default]\naws_access_key_id = AKIADEFAULT\naws_secret_access_key = wrong\n\n[ci]\naws_access_key_id = AKIAPROFILE\naws_secret_access_key = %s\naws_session_token = tok-profile\n' "$SECRET" > "$HOME/.aws/credentials"
printf '[profile cfg]\nregion = us-east-1\naws_access_key_id = AKIACONFIG\naws_secret_access_key = %s\n' "$SECRET" > "$HOME/.aws/config"
AWS_PROFILE=ci tc || fail "profile: $(cat "$T/out")"
signed_by AKIAPROFILE tok-profile
AWS_PROFILE=cfg tc || fail "config profile: $(cat "$T/out")"
signed_by AKIACONFIG -
rm -f "$HOME/.aws/credentials" "$HOME/.aws/config"

# 3. web identity (EKS IRSA): STS AssumeRoleWithWebIdentity
echo eks-web-identity-token > "$T/web-token"
AWS_WEB_IDENTITY_TOKEN_FILE="$T/web-token" AWS_ROLE_ARN=arn:aws:iam::123456789012:role/nxcc-cache \
	AWS_ENDPOINT_URL_STS="$META" tc || fail "web identity: $(cat "$T/out")"
signed_by ASIASTS "tok-sts-[0-9]*"
grep -q "^POST / 200 tok-sts" "$T/meta.log" || fail "STS not asked: $(cat "$T/meta.log")"
# a token STS refuses: one warning that says so, and the compile goes on
echo forged > "$T/bad-token"
AWS_WEB_IDENTITY_TOKEN_FILE="$T/bad-token" AWS_ROLE_ARN=arn:aws:iam::123456789012:role/nxcc-cache \
	AWS_ENDPOINT_URL_STS="$META" tc || fail "refused web identity failed the compile: $(cat "$T/out")"
[ "$(grep -c warning "$T/out")" -eq 1 ] || fail "refused web identity: want one warning: $(cat "$T/out")"
grep -q "warning: .*web identity: STS AssumeRoleWithWebIdentity for arn:aws:iam::123456789012:role/nxcc-cache: HTTP 403 AccessDenied" "$T/out" \
	|| fail "refused web identity message: $(cat "$T/out")"
[ -s "$T/s3.log" ] && fail "requests sent without credentials: $(cat "$T/s3.log")"

# 4. ECS container credentials (FULL_URI + authorization token)
AWS_CONTAINER_CREDENTIALS_FULL_URI="$META/ecs/creds" AWS_CONTAINER_AUTHORIZATION_TOKEN=ecs-secret-auth tc \
	|| fail "ecs: $(cat "$T/out")"
signed_by ASIAECS "tok-ecs-[0-9]*"

# 5. EC2 instance metadata, IMDSv2: token first, one issue per process
AWS_EC2_METADATA_SERVICE_ENDPOINT="$META" tc || fail "imds: $(cat "$T/out")"
signed_by ASIAIMDS "tok-imds-[0-9]*"
head -n 1 "$T/meta.log" | grep -q "^PUT /latest/api/token 200" || fail "IMDSv2 token not first: $(cat "$T/meta.log")"
grep -q "401" "$T/meta.log" && fail "an IMDSv1 request was made: $(cat "$T/meta.log")"
[ "$(grep -c '200 tok-imds' "$T/meta.log")" -eq 1 ] || fail "credentials fetched more than once: $(cat "$T/meta.log")"
[ "$(cut -d" " -f5 "$T/s3.log" | sort -u | wc -l)" -eq 1 ] || fail "one token expected: $(cat "$T/s3.log")"

# 6. refresh: credentials 200 s from expiry are stale (the SDKs refresh 5
# minutes ahead), so each request of the process gets fresh ones
start meta2 "$NX_ROOT/tests/s3/aws_meta.py" --secret "$SECRET" --expires-in 200 --log "$T/meta2.log"
AWS_EC2_METADATA_SERVICE_ENDPOINT="http://127.0.0.1:$(cat "$T/meta2.port")" tc || fail "refresh: $(cat "$T/out")"
signed_by ASIAIMDS "tok-imds-[0-9]*"
reqs=$(wc -l < "$T/s3.log"); toks=$(cut -d" " -f5 "$T/s3.log" | sort -u | wc -l)
[ "$toks" -eq "$reqs" ] && [ "$reqs" -ge 3 ] || fail "expiring credentials not refreshed: $reqs requests, $toks tokens"

# 7. nothing anywhere: one clear warning, the compile still works
: > "$T/s3.log"
"$NXCC" compile "$NX_ROOT/examples/linear_step.hlo" --cache-dir s3://b/none -o "$T/x.neff" > "$T/out" 2>&1 \
	|| fail "no credentials failed the compile: $(cat "$T/out")"
[ "$(grep -c warning "$T/out")" -eq 1 ] || fail "no credentials: want exactly one warning: $(cat "$T/out")"
grep -q "^nxcc: warning: compile cache s3://b/none: lookup failed (no AWS credentials found (environment: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY unset; profile 'default': not in ~/.aws/credentials or ~/.aws/config; web identity: AWS_WEB_IDENTITY_TOKEN_FILE/AWS_ROLE_ARN unset; container: AWS_CONTAINER_CREDENTIALS_\*_URI unset; instance metadata: $CLOSED: " "$T/out" \
	|| fail "no credentials message: $(cat "$T/out")"
grep -q "^cache miss: compiled .* not stored: lookup failed: no AWS credentials found" "$T/out" || fail "result line: $(cat "$T/out")"
[ -s "$T/s3.log" ] && fail "unsigned requests were sent: $(cat "$T/s3.log")"
[ -s "$T/x.neff" ] || fail "no .neff"

# 8. s3rver + boto3: nxcc stores with IMDSv2 credentials; boto3 resolves
# the same instance-metadata credentials (same variables) and reads it
"$PY" -c 'import boto3' 2>/dev/null || fail "$PY lacks boto3 (apt-get install python3-boto3)"
srv=$(sh "$NX_ROOT/tests/s3/start.sh" nxcc-creds) || fail "could not start s3rver (see above)"
set -- $srv
PIDS="$PIDS $2"
# s3rver knows one access key: this metadata service hands it out
start meta3 "$NX_ROOT/tests/s3/aws_meta.py" --access-key S3RVER --secret S3RVER --log "$T/meta3.log"
export AWS_ENDPOINT_URL_S3="http://127.0.0.1:$1" AWS_EC2_METADATA_SERVICE_ENDPOINT="http://127.0.0.1:$(cat "$T/meta3.port")"
"$NXCC" compile "$NX_ROOT/examples/linear_step.hlo" --cache-dir s3://nxcc-creds/team -o "$T/a.neff" > "$T/out" 2>&1 \
	|| fail "compile to s3rver: $(cat "$T/out")"
grep -q "^cache miss: compiled .*, stored in s3://nxcc-creds/team/nxcc-" "$T/out" || fail "not stored: $(cat "$T/out")"
"$PY" - "$T/a.neff" <<'PYEOF' || fail "boto3 read-back"
import boto3, botocore.session, hashlib, os, sys
s = boto3.session.Session()
c = s.get_credentials()
assert c.method == "iam-role" and c.access_key == "S3RVER" and c.token.startswith("tok-imds-"), (c.method, c.access_key)
s3 = s.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL_S3"])
keys = [o["Key"] for o in s3.list_objects_v2(Bucket="nxcc-creds", Prefix="team/")["Contents"]]
neff_key = [k for k in keys if k.endswith("/model.neff")][0]
neff = s3.get_object(Bucket="nxcc-creds", Key=neff_key)["Body"].read()
done = s3.get_object(Bucket="nxcc-creds", Key=neff_key[:-len("model.neff")] + "model.done")["Body"].read().decode()
assert neff == open(sys.argv[1], "rb").read()
assert done.split()[0] == hashlib.sha256(neff).hexdigest()  # model.done: sha256 then the key
PYEOF
"$NXCC" compile "$NX_ROOT/examples/linear_step.hlo" --cache-dir s3://nxcc-creds/team -o "$T/b.neff" > "$T/out" 2>&1 \
	|| fail "second compile: $(cat "$T/out")"
grep -q "^cache hit (s3://nxcc-creds/team/" "$T/out" || fail "not a hit: $(cat "$T/out")"
grep -q "^GET /latest/meta-data/iam/security-credentials/nxcc-node-role 200 tok-imds" "$T/meta3.log" || fail "nxcc did not use IMDS: $(cat "$T/meta3.log")"
echo "aws_creds: ok"
