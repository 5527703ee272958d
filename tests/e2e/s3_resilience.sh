#!/bin/sh
# S3 signing and failure handling against tests/s3/stub.py, a loopback S3
# that verifies every SigV4 signature (s3rver does not): correct signatures,
# 503 SlowDown retried, and a down, forbidden or wrongly-keyed store only
# warns: the compile still succeeds.
set -u
fail() { echo "FAIL: $*"; exit 1; }
T=$(mktemp -d)
PIDS=""
trap 'kill $PIDS 2>/dev/null; rm -rf "$T"' EXIT
unset NEURON_COMPILE_CACHE_URL NEURON_CC_FLAGS AWS_PROFILE AWS_SESSION_TOKEN AWS_ENDPOINT_URL_S3
export AWS_ACCESS_KEY_ID=AKIDEXAMPLE AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=eu-west-3
export TMPDIR="$T" NXCC_S3_BACKOFF_MS=20
tc() { "$NXCC" cache test-compile "$@"; }
start() { # name, stub args... -> sets PORT
	name=$1; shift
	python3 "$NX_ROOT/tests/s3/stub.py" --log "$T/$name.log" "$@" > "$T/$name.port" 2> "$T/$name.err" &
	PIDS="$PIDS $!"
	for i in $(seq 1 50); do [ -s "$T/$name.port" ] && break; sleep 0.1; done
	PORT=$(cat "$T/$name.port")
	[ -n "$PORT" ] || fail "stub $name did not start: $(cat "$T/$name.err")"
}

# 1. every request is signed correctly (the stub answers 403 otherwise)
start ok
export AWS_ENDPOINT_URL="http://127.0.0.1:$PORT"
out=$(tc --key sig --cache-dir s3://b/p 2>"$T/e") || fail "compile: $(cat "$T/e")"
[ "$out" = "cache miss" ] && [ ! -s "$T/e" ] || fail "signed compile: $out $(cat "$T/e") $(cat "$T/ok.err")"
case "$(tc --key sig --cache-dir s3://b/p 2>&1)" in "cache hit"*) ;; *) fail "no hit; stub: $(cat "$T/ok.err")";; esac
"$NXCC" cache list --cache-dir s3://b/p | grep -q "done .*MODULE_sig" || fail "signed LIST"
grep -q "PUT /b/p/nxcc-.*/MODULE_sig%2B.*/model.neff" "$T/ok.log" || fail "no PUT seen: $(cat "$T/ok.log")"
[ ! -s "$T/ok.err" ] || fail "stub rejected a signature: $(cat "$T/ok.err")"
# the stub really checks: a wrong secret is rejected, and nxcc only warns
out=$(AWS_SECRET_ACCESS_KEY=wrong tc --key sig2 --cache-dir s3://b/p 2>"$T/e") || fail "wrong secret broke the compile"
[ "$out" = "cache miss" ] || fail "wrong secret: $out"
grep -q "SignatureDoesNotMatch" "$T/e" || fail "expected a signature warning: $(cat "$T/e")"
grep -q "signature mismatch" "$T/ok.err" || fail "stub did not see the bad signature"

# 2. 503 SlowDown on the first 3 requests: retried, then fine
start slow --fail-first 3
export AWS_ENDPOINT_URL="http://127.0.0.1:$PORT"
out=$(tc --key slow --cache-dir s3://b 2>"$T/e") || fail "compile with 503s: $(cat "$T/e")"
[ "$out" = "cache miss" ] && [ ! -s "$T/e" ] || fail "503 not retried: $out $(cat "$T/e")"
[ "$(grep -c 'GET /b/nxcc-.*/model.done' "$T/slow.log")" -ge 4 ] || fail "retries not seen: $(cat "$T/slow.log")"
case "$(tc --key slow --cache-dir s3://b 2>&1)" in "cache hit"*) ;; *) fail "no hit after retries";; esac
# persistent 503s are bounded (5 tries), then the compile goes on without the cache
start slow2 --fail-first 1000
export AWS_ENDPOINT_URL="http://127.0.0.1:$PORT"
out=$(tc --key slow --cache-dir s3://b 2>"$T/e") || fail "persistent 503 broke the compile"
[ "$out" = "cache miss" ] && grep -q "continuing without the cache" "$T/e" || fail "503 forever: $out $(cat "$T/e")"
[ "$(wc -l < "$T/slow2.log")" -eq 5 ] || fail "expected exactly 5 tries, got $(wc -l < "$T/slow2.log")"

# 3. forbidden bucket: warning, compile succeeds
start forbid --forbid
export AWS_ENDPOINT_URL="http://127.0.0.1:$PORT"
out=$(tc --key f --cache-dir s3://b -o "$T/f.neff" 2>"$T/e") || fail "403 broke the compile"
[ "$out" = "cache miss" ] && [ -s "$T/f.neff" ] || fail "403: $out"
grep -q "AccessDenied" "$T/e" || fail "403 warning: $(cat "$T/e")"
[ "$(grep -c . "$T/e")" -eq 1 ] || fail "expected one warning: $(cat "$T/e")"

# 4. server down: warning, compile succeeds, quickly
DOWN=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
export AWS_ENDPOINT_URL="http://127.0.0.1:$DOWN"
t0=$(date +%s)
out=$(tc --key down --cache-dir s3://b -o "$T/d.neff" 2>"$T/e") || fail "down server broke the compile"
[ "$out" = "cache miss" ] && [ -s "$T/d.neff" ] || fail "down: $out"
grep -q "continuing without the cache" "$T/e" || fail "down warning: $(cat "$T/e")"
[ $(( $(date +%s) - t0 )) -le 5 ] || fail "took too long with the server down"
"$NXCC" cache list --cache-dir s3://b >/dev/null 2>&1 && fail "cache list should fail with the server down"
echo ok
