#!/bin/sh
# make install PREFIX=... DESTDIR=... puts nxcc and the two Neuron tool
# names (symlinks to it) in the bin directory; they run as those tools.
set -u
fail() { echo "FAIL: $*"; exit 1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
make -s -C "$NX_ROOT" install BUILD="$NX_BUILD" PREFIX=/opt/nx DESTDIR="$T" > "$T/out" 2>&1 || fail "make install: $(cat "$T/out")"
B="$T/opt/nx/bin"
[ -x "$B/nxcc" ] && [ ! -L "$B/nxcc" ] || fail "no nxcc in $B"
for l in neuronx-cc neuron_parallel_compile; do
	[ "$(readlink "$B/$l")" = nxcc ] || fail "$l is not a link to nxcc: $(ls -l "$B")"
done
"$B/neuronx-cc" --version | grep -q "^NeuronX Compiler version" || fail "neuronx-cc mode"
"$B/neuron_parallel_compile" --help | grep -q "^usage: neuron_parallel_compile" || fail "neuron_parallel_compile mode"
make -s -C "$NX_ROOT" uninstall BUILD="$NX_BUILD" PREFIX=/opt/nx DESTDIR="$T" > "$T/out" 2>&1 || fail "uninstall: $(cat "$T/out")"
[ -z "$(ls "$B")" ] || fail "uninstall left $(ls "$B")"
echo "install_links: ok"
