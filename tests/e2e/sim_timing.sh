#!/bin/sh
# The simulator's two speed-ups keep their promises:
# - `nxcc run --timing-only` (no data) gives the same simulated time, engine
#   lines and --stats-json statistics as a full run, on examples/*.hlo, the
#   tiny benchmark kernels and every torch-neuronx corpus graph in GRAPHS
#   (those that compile today; one that stops compiling is skipped with a
#   note: compile coverage is compile_corpus.sh's business);
# - the host-speed paths (runtime-stub/sim_fast.c) give byte-identical
#   outputs and summaries to the generic element path (NXCC_SIM_GENERIC=1)
#   on the examples, the tiny kernels and the small corpus graphs;
# - the benchmark kernels: bench/kernels/*.hlo are what gen.sh writes, and
#   their tiny versions pass `nxcc check` (parse, evaluate, compare).
set -u
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
corpus="$NX_CORPUS/hlo/torch-neuronx"
cd "$NX_ROOT" || exit 1

sh bench/kernels/gen.sh "$tmp/real" || fail "gen.sh"
for f in "$tmp"/real/*.hlo; do
	cmp -s "$f" "bench/kernels/$(basename "$f")" || fail "bench/kernels/$(basename "$f") differs from what gen.sh writes"
done
[ "$(ls "$tmp"/real/*.hlo | wc -l)" -eq "$(ls bench/kernels/*.hlo | wc -l)" ] || fail "bench/kernels has files gen.sh does not write"
sh bench/kernels/gen.sh --tiny "$tmp/tiny" || fail "gen.sh --tiny"
for f in "$tmp"/tiny/*.hlo; do
	out=$("$NXCC" check "$f" --framework XLA --target trn1 --random-inputs 1 2>&1) ||
		fail "check $(basename "$f"): $(echo "$out" | grep -E 'MISMATCH|error' | head -3)"
done

# compare NAME FILE GENERIC(0|1)
compare() {
	name=$1 f=$2
	"$NXCC" compile "$f" --framework XLA --target trn1 -O2 --no-cache --output "$tmp/a.neff" >"$tmp/c.log" 2>&1 || return 2
	"$NXCC" run "$tmp/a.neff" --random-inputs 1 --output-dir "$tmp/full" --stats-json "$tmp/full.json" >"$tmp/full.txt" 2>&1 ||
		fail "$name: run: $(tail -n 2 "$tmp/full.txt")"
	"$NXCC" run "$tmp/a.neff" --timing-only --stats-json "$tmp/t.json" >"$tmp/t.txt" 2>&1 ||
		fail "$name: --timing-only: $(tail -n 2 "$tmp/t.txt")"
	sed -n '/^simulated time/,$p' "$tmp/full.txt" >"$tmp/full.sim"
	[ -s "$tmp/full.sim" ] || fail "$name: no simulated time"
	cmp -s "$tmp/full.sim" "$tmp/t.txt" || fail "$name: --timing-only differs: $(diff "$tmp/full.sim" "$tmp/t.txt" | head -4)"
	sed 's/"timing_only": [a-z]*/T/' "$tmp/full.json" >"$tmp/a.j"
	sed 's/"timing_only": [a-z]*/T/' "$tmp/t.json" >"$tmp/b.j"
	cmp -s "$tmp/a.j" "$tmp/b.j" || fail "$name: --stats-json differs between full and --timing-only"
	if [ "$3" = 1 ]; then
		NXCC_SIM_GENERIC=1 "$NXCC" run "$tmp/a.neff" --random-inputs 1 --output-dir "$tmp/gen" >"$tmp/gen.txt" 2>&1 ||
			fail "$name: generic run: $(tail -n 2 "$tmp/gen.txt")"
		cmp -s "$tmp/full.txt" "$tmp/gen.txt" || fail "$name: summaries differ: $(diff "$tmp/full.txt" "$tmp/gen.txt" | head -4)"
		for o in "$tmp"/full/*.npy; do
			cmp -s "$o" "$tmp/gen/$(basename "$o")" || fail "$name: $(basename "$o") differs from the generic path"
		done
	fi
	rm -rf "$tmp/full" "$tmp/gen"
	return 0
}

n=0 g=0
for f in examples/*.hlo "$tmp"/tiny/*.hlo; do
	compare "$(basename "$f")" "$f" 1 || fail "$(basename "$f"): compile: $(grep -m1 error "$tmp/c.log")"
	n=$((n + 1)) g=$((g + 1))
done

# corpus graphs that compile and run today (trn1 -O2); generic comparison on
# the quick ones (the generic path takes minutes on the larger graphs)
GENERIC="mlp__mini_mlp_single mlp__mlp_single_final misc__linear qwb_linear_model__pp_1_final bert__bert_dp_graph_1"
GRAPHS="$GENERIC ${SIM_TIMING_GRAPHS:-bert__bert_dp_graph_2 bert__bert_single_graph_2 llama__tp_1 gpt__gpt2_tp2 qwb_linear_model__pp_2_final}"
if [ -d "$corpus" ]; then
	for b in $GRAPHS; do
		[ -f "$corpus/$b.hlo" ] || continue
		gen=0
		case " $GENERIC " in *" $b "*) gen=1 ;; esac
		if compare "$b" "$corpus/$b.hlo" $gen; then
			n=$((n + 1)) g=$((g + gen))
		else
			echo "note: $b does not compile today: $(grep -m1 error "$tmp/c.log")"
		fi
	done
fi
echo "--timing-only equal to a full run on $n programs; fast path equal to the generic path on $g"
