#!/bin/sh
# The simulator's two speed-ups keep their promises:
# - `nxcc run --timing-only` (no data) gives the same simulated time, engine
#   lines and --stats-json statistics as a full run (and the same --report
#   page and summary-json profile on the quick ones), on examples/*.hlo, the
#   tiny benchmark kernels and the torch-neuronx corpus graphs that compile
#   (one that does not is skipped with a note: compile coverage is
#   compile_corpus.sh's business; SIM_TIMING_ALL=1 adds the heavy ones);
# - the host-speed paths (runtime-stub/sim_fast.c) give byte-identical
#   outputs and summaries to the generic element path (NXCC_SIM_GENERIC=1)
#   on the examples, the tiny kernels and the small corpus graphs;
# - the benchmark kernels: bench/kernels/*.hlo are what gen.sh writes, and
#   their tiny versions pass `nxcc check` (parse, evaluate, compare);
# - a program too large for the host's memory is a clear error, not a crash.
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

# a program whose simulated HBM the host cannot hold: a clear error (exit 1),
# not a crash; --timing-only still times it (the real-size Adam kernel: 640 MiB)
"$NXCC" compile bench/kernels/adam_f32.hlo --framework XLA --target trn1 --no-cache --output "$tmp/adam.neff" \
	>/dev/null 2>&1 || fail "compile adam_f32"
# (an AddressSanitizer build reserves terabytes of shadow address space, so
# an address-space limit cannot stand for "the host cannot hold it" there)
if ldd "$NXCC" 2>/dev/null | grep -q libasan; then
	echo "skip: the 1 GB address-space limit under AddressSanitizer"
else
	(ulimit -v 1000000 && exec "$NXCC" run "$tmp/adam.neff" --random-inputs 1) >"$tmp/oom.txt" 2>&1
	rc=$?
	[ $rc -eq 1 ] && grep -q "cannot allocate" "$tmp/oom.txt" ||
		fail "run under a 1 GB limit: exit $rc: $(tail -n 2 "$tmp/oom.txt")"
	(ulimit -v 1000000 && exec "$NXCC" run "$tmp/adam.neff" --timing-only) >"$tmp/oom.txt" 2>&1 ||
		fail "--timing-only under a 1 GB limit: $(tail -n 2 "$tmp/oom.txt")"
	grep -q "^simulated time" "$tmp/oom.txt" || fail "--timing-only printed no time"
fi

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
		# --report and the summary profile: the same page and summary without data
		"$NXCC" run "$tmp/a.neff" --random-inputs 1 --report "$tmp/full.html" \
			--profile "$tmp/full.sum" --profile-format summary-json >/dev/null 2>&1 || fail "$name: run --report"
		"$NXCC" run "$tmp/a.neff" --timing-only --report "$tmp/t.html" \
			--profile "$tmp/t.sum" --profile-format summary-json >/dev/null 2>&1 || fail "$name: --timing-only --report"
		cmp -s "$tmp/full.html" "$tmp/t.html" || fail "$name: --timing-only --report differs from a full run's"
		grep -q '"total_time_ns"' "$tmp/t.sum" && cmp -s "$tmp/full.sum" "$tmp/t.sum" ||
			fail "$name: --timing-only --profile-format summary-json differs from a full run's"
		NXCC_SIM_GENERIC=1 "$NXCC" run "$tmp/a.neff" --random-inputs 1 --output-dir "$tmp/gen" >"$tmp/gen.txt" 2>&1 ||
			fail "$name: generic run: $(tail -n 2 "$tmp/gen.txt")"
		cmp -s "$tmp/full.txt" "$tmp/gen.txt" || fail "$name: summaries differ: $(diff "$tmp/full.txt" "$tmp/gen.txt" | head -4)"
		outs=$(cd "$tmp/full" && find . -name '*.npy' | sort) # DIR/rank<i>/ with several ranks
		[ -n "$outs" ] || fail "$name: no outputs written"
		for o in $outs; do
			cmp -s "$tmp/full/$o" "$tmp/gen/$o" || fail "$name: $o differs from the generic path"
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

# every torch-neuronx corpus graph that compiles (trn1 -O2), except the
# heavy ones unless SIM_TIMING_ALL=1: their full runs need 5-7 GB of host
# memory and half a minute each (llama tp_*, gpt-j), a large compile
# (gpt2_tp1), 60 GB for 32 ranks (llama2 tp8_pp4: --timing-only only), or
# the 2 TB llama2 that is refused. The generic-path comparison runs on the
# quick ones (the generic path takes minutes on the larger graphs).
GENERIC="mlp__mini_mlp_single mlp__mlp_single_final misc__linear qwb_linear_model__pp_1_final qwb_linear_model__pp_2_final bert__bert_dp_graph_1"
HEAVY="llama__tp_1 llama__tp_2 llama__tp_8 gpt__gpt-j-6B-tp2 gpt__gpt2_tp1 llama2__llama2_dp1_tp8_pp4 llama2__llama2_dp1_tp1_pp1"
if [ -d "$corpus" ]; then
	for f in "$corpus"/*.hlo; do
		b=$(basename "$f" .hlo)
		case " $HEAVY " in *" $b "*) [ -n "${SIM_TIMING_ALL:-}" ] || continue ;; esac
		gen=0
		case " $GENERIC " in *" $b "*) gen=1 ;; esac
		if compare "$b" "$f" $gen; then
			n=$((n + 1)) g=$((g + gen))
		else
			echo "note: $b does not compile today: $(grep -m1 error "$tmp/c.log" | cut -c1-160)"
		fi
	done
fi
echo "--timing-only equal to a full run on $n programs; fast path equal to the generic path on $g"
