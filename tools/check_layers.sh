#!/bin/sh
# make check-layers: every #include "..." in the library crosses layers only
# downward (ir <- passes <- backend <- compiler; runtime-stub sees only
# backend/target and ir), and the runtime stub's objects need no symbol that
# only backend/ outside backend/target defines.
# Usage: tools/check_layers.sh [BUILD_DIR]   (symbol check skipped without objects)
BUILD=${1:-build}
cd "$(dirname "$0")/.." || exit 2
status=0

# allowed DIR -> space-separated list of directories it may include from
allowed() {
	case "$1" in
	ir) echo "ir" ;;
	ir/hlo|ir/verify|ir/eval) echo "ir $1" ;;
	passes) echo "ir ir/hlo ir/verify ir/eval passes" ;;
	backend/target) echo "backend/target ir" ;;
	backend|backend/*) echo "ir ir/hlo ir/verify ir/eval passes backend backend/target backend/kernels backend/gpsimd $1" ;;
	runtime-stub) echo "runtime-stub backend/target ir" ;;
	compiler) echo "*" ;;
	*) echo "?" ;;
	esac
}

for f in $(find ir passes backend runtime-stub compiler -name '*.[ch]' | sort); do
	dir=$(dirname "$f")
	ok=$(allowed "$dir")
	[ "$ok" = "*" ] && continue
	if [ "$ok" = "?" ]; then
		echo "check-layers: $f: directory '$dir' has no layer rule (tools/check_layers.sh)"; status=1; continue
	fi
	grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" | while IFS= read -r line; do
		n=${line%%:*}
		inc=$(echo "$line" | sed 's/.*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/')
		case "$inc" in */*) ;; *) continue ;; esac   # same-directory or generated header
		idir=$(dirname "$inc")
		hit=0
		for a in $ok; do [ "$idir" = "$a" ] && hit=1; done
		if [ $hit = 0 ]; then
			echo "check-layers: $f:$n: '$dir' may not include \"$inc\" (allowed: $ok)"
			echo x >> "${TMPDIR:-/tmp}/nx_layers.$$"
		fi
	done
done
if [ -f "${TMPDIR:-/tmp}/nx_layers.$$" ]; then rm -f "${TMPDIR:-/tmp}/nx_layers.$$"; status=1; fi

# Symbol check: what runtime-stub's objects leave undefined must be defined by
# runtime-stub, backend/target or ir objects, or come from system libraries.
if [ -d "$BUILD/obj/runtime-stub" ]; then
	tmp=$(mktemp -d) || exit 2
	nm -g --defined-only $(find "$BUILD/obj/runtime-stub" "$BUILD/obj/backend/target" "$BUILD/obj/ir" "$BUILD/gen" -name '*.o') 2>/dev/null |
		awk 'NF==3 {print $3}' | sort -u > "$tmp/def"
	nm -g --defined-only $(find "$BUILD/obj/backend" -path "$BUILD/obj/backend/target" -prune -o -name '*.o' -print) 2>/dev/null |
		awk 'NF==3 {print $3}' | sort -u > "$tmp/backend"
	nm -u $(find "$BUILD/obj/runtime-stub" -name '*.o') | awk '{print $NF}' | sort -u > "$tmp/undef"
	bad=$(comm -23 "$tmp/undef" "$tmp/def" | comm -12 - "$tmp/backend")
	if [ -n "$bad" ]; then
		echo "check-layers: runtime-stub uses backend symbols outside backend/target:"; echo "$bad" | sed 's/^/  /'
		status=1
	fi
	rm -rf "$tmp"
fi
[ $status = 0 ] && echo "check-layers: OK"
exit $status
