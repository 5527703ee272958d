#!/bin/sh
# The lowering's synchronization, checked at compile time: NX_CHECK_ONCHIP
# (1 SBUF, 2 PSUM) and NX_CHECK_HBM report accesses to the same bytes, one a
# write, on different engines or DMA queues where neither waits for the
# other. The always-on checks (an SBUF access outside the kernel's request,
# a region used before its earlier users finished) are internal errors.
# llama__tp_1 -O2 had such a race (a partly overwritten SBUF region). The
# detectors are quadratic in the accesses (gpt2_tp1: 30 s), so small graphs only.
# They skip a loop kernel's accesses against each other (per-iteration
# waits); `nxcc run --check-races` (runtime-stub/sim_race.c) checks every
# executed SBUF/PSUM access, loop iterations included, so each program is
# also run with it, and (but for bert) with NX_CHECK_RACES_HBM=1 (HBM too)
# (tests/unit/test_race.c shows it firing on broken loops).
set -u
fail() { echo "FAIL: $*"; exit 1; }
corpus="$NX_CORPUS/hlo/torch-neuronx"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
files="$NX_ROOT/examples/*.hlo"
for g in mlp__mini_mlp_single mlp__mlp_single_final llama__tp_1 bert__bert_dp_graph_3; do
	[ -f "$corpus/$g.hlo" ] && files="$files $corpus/$g.hlo"
done
n=0 r=0 h=0
for f in $files; do
	for t in trn1 trn2; do
		for o in -O1 -O2; do
			for k in 1 2; do
				NX_CHECK_ONCHIP=$k NX_CHECK_HBM=1 "$NXCC" compile "$f" --framework XLA --target $t $o --no-cache \
					--output "$tmp/a.neff" >"$tmp/log" 2>&1
				rc=$?
				grep -q "internal compiler error" "$tmp/log" && fail "$(basename "$f") $t $o: $(head -3 "$tmp/log")"
				[ $rc -ne 0 ] && ! grep -q "not supported" "$tmp/log" && fail "$(basename "$f") $t $o: $(head -3 "$tmp/log")"
				grep -q "race" "$tmp/log" && fail "$(basename "$f") $t $o: $(grep race "$tmp/log" | head -3)"
				n=$((n + 1))
				[ $rc -eq 0 ] && [ $k -eq 1 ] || continue
				"$NXCC" run "$tmp/a.neff" --timing-only --check-races >"$tmp/run" 2>&1 ||
					fail "$(basename "$f") $t $o: run --check-races: $(grep -m2 -E 'race|error' "$tmp/run")"
				r=$((r + 1))
				case "$f" in *bert__*) continue ;; esac # HBM too: ~6x the cost on bert
				NX_CHECK_RACES_HBM=1 "$NXCC" run "$tmp/a.neff" --timing-only --check-races >"$tmp/run" 2>&1 ||
					fail "$(basename "$f") $t $o: run --check-races (HBM): $(grep -m2 -E 'race|error' "$tmp/run")"
				h=$((h + 1))
			done
		done
	done
done
[ $r -gt 0 ] || fail "no program ran with --check-races"
echo "no races in $n compiles; none in $r runs with --check-races ($h with HBM too)"
