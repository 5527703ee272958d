#!/bin/sh
# tools/corpus_status.sh [DIR...] — per corpus graph: does it parse (and
# verify), optimize at -O2, evaluate under a 1 GiB cap, compile for trn1 at
# -O2? One tab-separated line per graph; the last two columns are why eval
# and compile failed (the first error line), when they did. Not a test (no pass/fail): the numbers
# the closing notes quote. Defaults to the torch-neuronx and jax corpora.
# STATUS_TIMEOUT (seconds per stage, default 600) guards against hangs;
# STATUS_NO_COMPILE=1 skips the compile stage (tests/e2e/compile_corpus.sh
# has those outcomes).
ROOT=$(cd "$(dirname "$0")/.." && pwd)
NXCC=${NXCC:-$ROOT/build/nxcc}
CORPUS=${NX_CORPUS:-$ROOT/../shared/corpus}
TO=${STATUS_TIMEOUT:-600}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
[ $# -gt 0 ] || set -- "$CORPUS/hlo/torch-neuronx" "$CORPUS/hlo/jax"
printf 'dir\tgraph\tparse\topt-O2\teval\tcompile\teval error\tcompile error\n'
for d in "$@"; do
	for f in "$d"/*.hlo; do
		[ -f "$f" ] || continue
		st() { # stage name, command...: prints ok/FAIL, keeps the error in $T/<stage>
			s=$1; shift
			rm -f "$T/$s"
			timeout "$TO" "$@" >/dev/null 2>"$T/err"
			rc=$?
			[ $rc -eq 0 ] && { echo ok; return; }
			[ $rc -eq 124 ] && echo "timeout ${TO}s" >"$T/err"
			[ $rc -gt 124 ] && [ ! -s "$T/err" ] && echo "killed by signal $((rc - 128))" >"$T/err"
			grep -m1 -E 'error|needs|timeout|refus|killed' "$T/err" | sed "s|^$d/||" | cut -c1-400 >"$T/$s"
			echo FAIL
		}
		p=$(st parse "$NXCC" parse "$f")
		o=$(st opt "$NXCC" opt -O2 "$f" -o "$T/o.hlo")
		e=$(st eval "$NXCC" eval "$f" --random-inputs 1 --max-memory 1073741824 --output-dir "$T/ev")
		c=skipped
		[ -z "${STATUS_NO_COMPILE:-}" ] &&
			c=$(st compile "$NXCC" compile "$f" --framework XLA --target trn1 -O2 --no-cache --output "$T/x.neff")
		printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(basename "$d")" "$(basename "$f" .hlo)" "$p" "$o" "$e" "$c" \
			"$(cat "$T/eval" 2>/dev/null)" "$(cat "$T/compile" 2>/dev/null)"
		rm -rf "$T/ev" "$T/x.neff" "$T/o.hlo"
	done
done
