#!/bin/sh
# Starts s3rver (npm) on a free loopback port with bucket $1 (default nxcc).
# Installs it once under $NX_BUILD/npm. Prints "PORT PID" on stdout.
# Fails loudly (exit 1, reason on stderr) when it cannot be installed or started:
# the S3 tests must not pass without an S3 server.
set -e
BUCKET=${1:-nxcc}
BUILD=${NX_BUILD:-$(cd "$(dirname "$0")/../.." && pwd)/build}
NPM_DIR="$BUILD/npm"
BIN="$NPM_DIR/node_modules/.bin/s3rver"
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	echo "s3 tests: node and npm are required to run s3rver (apt-get install nodejs npm)" >&2
	exit 1
fi
if [ ! -x "$BIN" ]; then
	mkdir -p "$NPM_DIR"
	# serialize concurrent installs (several S3 tests may start at once)
	exec 9>"$NPM_DIR/.install.lock"
	flock 9
	if [ ! -x "$BIN" ]; then
		echo "s3 tests: installing s3rver@3 into $NPM_DIR" >&2
		if ! npm install --no-audit --no-fund --prefix "$NPM_DIR" s3rver@3 >"$NPM_DIR/install.log" 2>&1; then
			echo "s3 tests: FAILED to install s3rver with npm (is the npm registry reachable?):" >&2
			tail -n 20 "$NPM_DIR/install.log" >&2
			exit 1
		fi
	fi
	exec 9>&-
fi
DATA=$(mktemp -d "${TMPDIR:-/tmp}/nxcc-s3rver.XXXXXX")
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$BIN" -d "$DATA" -a 127.0.0.1 -p "$PORT" --configure-bucket "$BUCKET" --silent >"$DATA.log" 2>&1 &
PID=$!
i=0
while ! python3 -c "import socket,sys; socket.create_connection(('127.0.0.1',$PORT),0.2)" 2>/dev/null; do
	i=$((i + 1))
	if [ $i -gt 100 ] || ! kill -0 $PID 2>/dev/null; then
		echo "s3 tests: s3rver did not start on 127.0.0.1:$PORT:" >&2
		cat "$DATA.log" >&2
		kill $PID 2>/dev/null || true
		exit 1
	fi
	sleep 0.1
done
echo "$PORT $PID $DATA"
