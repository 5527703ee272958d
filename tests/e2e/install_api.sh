#!/bin/sh
# make install into a temporary DESTDIR: binary, libnxcc.so + libnxcc.a,
# nxcc.h, nxcc.pc, man page (rendered by man -l, a section per command), bash
# completion; a C program built with `pkg-config --cflags --libs nxcc`
# compiles, caches and runs a model through the library, and Python ctypes
# does the same and matches nxcc eval; make uninstall removes it all.
set -u
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
D="$tmp/root"
B=${NX_BUILD#"$NX_ROOT"/}
make -s -C "$NX_ROOT" BUILD="$B" install PREFIX=/usr/local DESTDIR="$D" > "$tmp/install.txt" 2>&1 ||
	fail "make install: $(tail -5 "$tmp/install.txt")"
P="$D/usr/local"
for f in bin/nxcc lib/libnxcc.so lib/libnxcc.a include/nxcc.h lib/pkgconfig/nxcc.pc share/man/man1/nxcc.1 \
	share/bash-completion/completions/nxcc; do
	[ -e "$P/$f" ] || fail "not installed: $f"
done
"$P/bin/nxcc" --version > /dev/null || fail "installed nxcc does not run"
# the shared library exports the public interface only
nm -D --defined-only "$P/lib/libnxcc.so" | awk '$2 != "A" {print $3}' | grep -v '^nxcc_' | grep -q . &&
	fail "libnxcc.so exports more than nxcc_*: $(nm -D --defined-only "$P/lib/libnxcc.so" | grep -v ' nxcc_' | head -3)"
# man page: renders, one section per command
man -l "$P/share/man/man1/nxcc.1" > "$tmp/man.txt" 2> "$tmp/man.err" || fail "man -l failed: $(cat "$tmp/man.err")"
grep -q "warning" "$tmp/man.err" && fail "man warnings: $(cat "$tmp/man.err")"
for c in $(sed -n 's/^CMD("\([a-z-]*\)".*/\1/p' "$NX_ROOT/compiler/commands.def"); do
	grep -q "^   $c\$" "$tmp/man.txt" || fail "man page has no section for '$c'"
done
# bash completion
out=$(bash -c ". '$P/share/bash-completion/completions/nxcc'; COMP_WORDS=(nxcc com); COMP_CWORD=1; _nxcc; echo \${COMPREPLY[*]};
	COMP_WORDS=(nxcc run x.neff --profile-f); COMP_CWORD=3; _nxcc; echo \${COMPREPLY[*]};
	COMP_WORDS=(nxcc compile --dump-format ''); COMP_CWORD=3; _nxcc; echo \${COMPREPLY[*]}")
[ "$out" = "$(printf 'compile\n--profile-format\nhlo dot html')" ] || fail "bash completion: $out"
# pkg-config and a C program against the installed library
export PKG_CONFIG_PATH="$P/lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$D"
flags=$(pkg-config --cflags --libs nxcc) || fail "pkg-config does not know nxcc"
echo "pkg-config: $flags"
# a library built for make asan needs the sanitizer runtime first in the
# program (and preloaded under Python)
san="" preload=""
if ldd "$P/lib/libnxcc.so" | grep -q libasan; then
	san="-fsanitize=address,undefined"
	preload=$(cc -print-file-name=libasan.so)
fi
cc -std=c11 -Wall -Wextra -Werror $san -o "$tmp/api_test" "$NX_ROOT/tests/api/api_test.c" $flags -lm ||
	fail "cannot build a C program with pkg-config --cflags --libs nxcc"
LD_LIBRARY_PATH="$P/lib" "$tmp/api_test" "$NX_ROOT/examples/mlp_step.hlo" "$tmp/api.neff" "$tmp/cache" || fail "api_test"
"$NXCC" compile "$NX_ROOT/examples/mlp_step.hlo" --framework XLA --target trn1 -O2 --no-cache --output "$tmp/cli.neff" \
	> /dev/null || fail "nxcc compile"
cmp -s "$tmp/api.neff" "$tmp/cli.neff" || fail "the library's .neff differs from nxcc compile's"
ls "$tmp"/cache/*/MODULE_*/model.neff > /dev/null 2>&1 || fail "the library did not store in the compile cache"
# Python ctypes
PY=""
for c in /usr/bin/python3 python3; do "$c" -c "import numpy" 2> /dev/null && { PY=$c; break; }; done
[ -n "$PY" ] || fail "no python3 with numpy (make deps installs python3-numpy)"
LD_PRELOAD="$preload" ASAN_OPTIONS="${ASAN_OPTIONS:-}${preload:+:detect_leaks=0}" \
	"$PY" "$NX_ROOT/tests/api/api_ctypes.py" "$P/lib/libnxcc.so" "$NX_ROOT/examples/mlp_step.hlo" "$NXCC" "$tmp" ||
	fail "ctypes"
# uninstall leaves nothing behind
make -s -C "$NX_ROOT" BUILD="$B" uninstall PREFIX=/usr/local DESTDIR="$D" > /dev/null 2>&1 || fail "make uninstall"
left=$(find "$D" ! -type d)
[ -z "$left" ] || fail "left after uninstall: $left"
echo "install + api: ok"
