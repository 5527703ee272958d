#!/bin/sh
# Issue 15: --xla_dump_to= was passed unquoted to the trial run, so a dump
# directory with a space broke it and a crafted one injected XLA flags.
# Inputs: dump_dir_with_space, dump_dir_injecting_flags.
set -u
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
mkdir -p "$T/d ump"
"$NXCC" parallel-compile --xla-dump-dir "$T/d ump" --no-cache -- sh -c 'printf "%s\n" "$XLA_FLAGS" > "$0/flags"' "$T" \
	>/dev/null 2>&1
[ "$(cat "$T/flags")" = "--xla_dump_to=\"$T/d ump\" --xla_dump_hlo_as_proto" ] || fail "flags: $(cat "$T/flags")"
out=$("$NXCC" parallel-compile --xla-dump-dir "$T/x\" --xla_evil=1 \"" --no-cache -- sh -c 'touch "$0/ran"' "$T" 2>&1)
[ $? -eq 1 ] || fail "injecting dump dir accepted"
[ ! -e "$T/ran" ] || fail "the command ran with injected flags"
echo "$out" | grep -q "cannot be passed in XLA_FLAGS safely" || fail "message: $out"
echo ok
