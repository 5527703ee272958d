#!/bin/sh
# Issue 15: an S3 cache that answers with faults (tests/s3/fault.py) must
# never fail or hang a compile: a 200 whose body is an XML error, a short
# Content-Length, a server that stalls, one that drips bytes, an endless
# body. Each compile exits 0 with its .neff; the cache is reported unusable.
# Each compile's time is printed for the record (the default budget is
# NXCC_S3_TIMEOUT=5 s per request); only a hang guard decides.
set -u
fail() { echo "FAIL: $*"; exit 1; }
T=$(mktemp -d)
PID=""
trap '[ -n "$PID" ] && kill $PID 2>/dev/null; rm -rf "$T"' EXIT
unset NEURON_COMPILE_CACHE_URL NEURON_CC_FLAGS AWS_PROFILE AWS_SESSION_TOKEN AWS_ENDPOINT_URL_S3
export AWS_ACCESS_KEY_ID=AKIDEXAMPLE AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=eu-west-3
export TMPDIR="$T" NXCC_S3_BACKOFF_MS=20
H="$NX_ROOT/examples/linear_step.hlo"
for mode in xml200 shortcl stall drip endless; do
	python3 "$NX_ROOT/tests/s3/fault.py" $mode > "$T/port" 2>"$T/fault.err" &
	PID=$!
	for i in $(seq 1 50); do [ -s "$T/port" ] && break; sleep 0.1; done
	PORT=$(cat "$T/port")
	[ -n "$PORT" ] || fail "$mode: fault server did not start: $(cat "$T/fault.err")"
	export AWS_ENDPOINT_URL="http://127.0.0.1:$PORT"
	rm -f "$T/out.neff"
	start=$(date +%s)
	# hang guard only: far above the budget
	timeout 300 "$NXCC" compile "$H" --cache-dir s3://b/p -o "$T/out.neff" >"$T/log" 2>&1
	rc=$?
	secs=$(( $(date +%s) - start ))
	kill $PID 2>/dev/null; wait $PID 2>/dev/null; PID=""
	[ "$rc" -eq 0 ] || fail "$mode: compile exit $rc: $(tail -3 "$T/log")"
	[ -s "$T/out.neff" ] || fail "$mode: no .neff"
	"$NXCC" inspect "$T/out.neff" >/dev/null || fail "$mode: bad .neff"
	grep -q "previous compile" "$T/log" && fail "$mode: taken for a cached failure"
	echo "$mode: ok in ${secs}s ($(grep -o 'compile cache[^;]*' "$T/log" | head -1))"
	rm -f "$T/port"
done
echo ok
