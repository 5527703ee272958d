#!/bin/sh
# Installs the Debian packages nxcc needs, only when some are missing.
set -e
PKGS="build-essential libcmocka-dev libprotobuf-c-dev protobuf-c-compiler llvm-16-dev llvm-16-tools \
libcurl4-openssl-dev libssl-dev libxxhash-dev python3 python3-numpy python3-boto3 clang clang-16 libclang-rt-14-dev \
slurmctld slurmd slurm-client munge graphviz chromium"
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
# Node.js and npm (for the s3rver test server): the machine image may ship
# them outside Debian's packaging (nodejs with a bundled npm); install
# Debian's only when the commands are absent.
command -v node >/dev/null 2>&1 || missing="$missing nodejs"
command -v npm >/dev/null 2>&1 || missing="$missing npm"
if [ -n "$missing" ]; then
	echo "deps: installing$missing"
	SUDO=""
	[ "$(id -u)" = 0 ] || SUDO=sudo
	$SUDO apt-get update -q
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q $missing
else
	echo "deps: all Debian packages present"
fi
