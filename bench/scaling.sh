#!/bin/sh
# Code size against tensor volume (issue 9): compiles each kernel kind at 1x,
# 16x and 256x its base volume (trn1 -O2, no cache) and prints instructions
# per engine (pe/act/dve/pool/sp) and .neff bytes. Base volumes: a
# [256,512]x[512,512] dot, a 1M-element elementwise chain, a [1024,4096] row
# reduction, a [1024,1024] transpose (and a broadcast, a slice and a
# concatenate of 1M elements). The dot and the transpose scale both sides (x4,
# x16), the others their rows. Exit 1 when a kind's 256x instruction total is
# above 1.2x its 1x total. Usage: BUILD=build sh bench/scaling.sh
BUILD=${BUILD:-build}
NXCC=${NXCC:-$BUILD/nxcc}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0

gen() { # kind factor
	f=$2
	case $f in 1) s=1 ;; 16) s=4 ;; 256) s=16 ;; esac
	case $1 in
	dot)
		M=$((256 * s)) N=$((512 * s))
		printf 'HloModule dot\nENTRY e {\n  a = f32[%d,512] parameter(0)\n  b = f32[512,%d] parameter(1)\n  ROOT d = f32[%d,%d] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n' $M $N $M $N ;;
	elementwise)
		R=$((1024 * f))
		printf 'HloModule ew\nENTRY e {\n  a = f32[%d,1024] parameter(0)\n  b = f32[%d,1024] parameter(1)\n  x = f32[%d,1024] multiply(a, b)\n  y = f32[%d,1024] exponential(x)\n  ROOT z = f32[%d,1024] add(y, a)\n}\n' $R $R $R $R $R ;;
	reduce)
		R=$((1024 * f))
		printf 'HloModule red\nadd {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}\nENTRY e {\n  a = f32[%d,4096] parameter(0)\n  z = f32[] constant(0)\n  ROOT r = f32[%d] reduce(a, z), dimensions={1}, to_apply=add\n}\n' $R $R ;;
	transpose)
		D=$((1024 * s))
		printf 'HloModule tr\nENTRY e {\n  a = f32[%d,%d] parameter(0)\n  ROOT t = f32[%d,%d] transpose(a), dimensions={1,0}\n}\n' $D $D $D $D ;;
	broadcast)
		R=$((1024 * f))
		printf 'HloModule bc\nENTRY e {\n  a = f32[1024] parameter(0)\n  ROOT b = f32[%d,1024] broadcast(a), dimensions={1}\n}\n' $R ;;
	slice)
		R=$((1024 * f))
		printf 'HloModule sl\nENTRY e {\n  a = f32[%d,1025] parameter(0)\n  ROOT s = f32[%d,1024] slice(a), slice={[0:%d], [1:1025]}\n}\n' $R $R $R ;;
	concatenate)
		R=$((512 * f))
		printf 'HloModule cc\nENTRY e {\n  a = f32[%d,1024] parameter(0)\n  b = f32[%d,1024] parameter(1)\n  ROOT c = f32[%d,1024] concatenate(a, b), dimensions={0}\n}\n' $R $R $((2 * R)) ;;
	esac
}

printf '%-12s %6s %-32s %8s %12s\n' kind volume "instructions pe/act/dve/pool/sp" total "neff bytes"
for k in dot elementwise reduce transpose broadcast slice concatenate; do
	base=
	for f in 1 16 256; do
		gen $k $f > "$T/$k.hlo"
		if ! "$NXCC" compile "$T/$k.hlo" --target trn1 -O2 --no-cache --stats -o "$T/$k.neff" > "$T/st" 2>&1; then
			printf '%-12s %5sx FAILED: %s\n' $k $f "$(grep error "$T/st" | head -1)"
			fail=1
			continue
		fi
		ins=$(awk '/^instructions/{v[$2]=$3} END{printf "%d/%d/%d/%d/%d", v["pe:"], v["act:"], v["dve:"], v["pool:"], v["sp:"]}' "$T/st")
		tot=$(echo "$ins" | tr / '\n' | awk '{s+=$1} END{print s}')
		bytes=$(wc -c < "$T/$k.neff")
		printf '%-12s %5sx %-32s %8d %12d\n' $k $f "$ins" "$tot" "$bytes"
		[ $f = 1 ] && base=$tot
		if [ $f = 256 ] && [ -n "$base" ] && [ $((tot * 10)) -gt $((base * 12)) ]; then
			echo "  $k: $tot instructions at 256x > 1.2 x $base at 1x"
			fail=1
		fi
	done
done
exit $fail
