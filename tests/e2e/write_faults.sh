#!/bin/sh
# Issue 15: every file the tools write is whole or absent after a failed
# write, with a clear error. Faults come from NX_FAULT_WRITE=N:ERR (the N-th
# write of the process fails with ERR; ir/file.c) and, where the sandbox lets
# us mount one, from a 16 KiB tmpfs that is full. Inputs:
# run_output_dir_enospc, run_profile_eio, compile_output_eacces_keeps_old,
# full_tmpfs (output dir, profile, .neff and --logfile on a full disk).
set -u
T=$(mktemp -d)
M=""
trap '[ -n "$M" ] && umount "$M" 2>/dev/null; rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
H="$NX_ROOT/examples/mlp_step.hlo"
"$NXCC" compile "$H" --no-cache -o "$T/m.neff" >/dev/null 2>&1 || fail "compile"

# run_output_dir_enospc: the second output fails; the first is whole, no part of the second
NX_FAULT_WRITE=2:ENOSPC "$NXCC" run "$T/m.neff" --random-inputs 1 --output-dir "$T/out" >/dev/null 2>"$T/e" &&
	fail "run with a failing write succeeded"
grep -q "out1.npy: error: write failed: No space left on device" "$T/e" || fail "message: $(cat "$T/e")"
[ -s "$T/out/out0.npy" ] && [ ! -e "$T/out/out1.npy" ] || fail "partial outputs: $(ls -la "$T/out")"
ls "$T/out" | grep -q tmp && fail "temporary left: $(ls "$T/out")"

# run_profile_eio
NX_FAULT_WRITE=1:EIO "$NXCC" run "$T/m.neff" --random-inputs 1 --profile "$T/trace.json" >/dev/null 2>"$T/e" &&
	fail "profile with a failing write succeeded"
grep -q "Input/output error" "$T/e" || fail "message: $(cat "$T/e")"
[ ! -e "$T/trace.json" ] || fail "partial profile left"

# compile_output_eacces_keeps_old: the old .neff stays as it was
cp "$T/m.neff" "$T/old.neff"
NX_FAULT_WRITE=1:EACCES "$NXCC" compile "$NX_ROOT/examples/linear_step.hlo" --no-cache -o "$T/m.neff" >/dev/null 2>"$T/e" &&
	fail "compile with a failing write succeeded"
cmp -s "$T/m.neff" "$T/old.neff" || fail "the old .neff was changed"

# full_tmpfs, where mounting one is allowed
mkdir -p "$T/full"
if mount -t tmpfs -o size=16k tmpfs "$T/full" 2>/dev/null; then
	M="$T/full"
	head -c 12000 /dev/zero > "$M/pad"
	"$NXCC" run "$T/m.neff" --random-inputs 1 --output-dir "$M/out" >/dev/null 2>&1 && fail "full disk: run succeeded"
	for f in "$M"/out/*; do [ -e "$f" ] || continue; [ -s "$f" ] || fail "full disk: empty $f"; done
	"$NXCC" run "$T/m.neff" --random-inputs 1 --profile "$M/t.json" >/dev/null 2>&1 && fail "full disk: profile"
	[ ! -e "$M/t.json" ] || fail "full disk: partial profile"
	"$NXCC" compile "$H" --no-cache -o "$M/x.neff" >/dev/null 2>&1 && fail "full disk: compile"
	[ ! -e "$M/x.neff" ] || fail "full disk: partial .neff"
	"$NXCC" compile "$H" --no-cache -o "$T/y.neff" --logfile "$M/log.txt" --verbose debug >/dev/null 2>"$T/e" &&
		fail "full disk: --logfile silently empty"
	grep -q "cannot write the log file" "$T/e" || fail "logfile message: $(cat "$T/e")"
	echo "full tmpfs: checked"
else
	echo "full tmpfs: cannot mount here (fault hook only)"
fi
echo ok
