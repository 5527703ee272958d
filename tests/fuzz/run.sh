#!/bin/sh
# Builds seed corpora and runs every libFuzzer target in build-fuzz/fuzz for
# FUZZ_SECONDS (default 60) each. Exits non-zero when any target finds a crash,
# a leak, a timeout or a round-trip mismatch; the input is left in
# build-fuzz/artifacts/<target>/ (add it to tests/fuzz/regress/ once fixed).
# Then the differential campaign in one process (tests/fuzz/diff_inproc.c:
# random valid modules through eval, opt -O1/-O2/-O3 and the simulated
# device on trn1/trn2): FUZZ_MODULES (default 10000) from FUZZ_SEED.
#   FUZZ_SECONDS=300 FUZZ_TARGETS="text proto" sh tests/fuzz/run.sh
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 1
B=build-fuzz
SECS=${FUZZ_SECONDS:-60}
TARGETS=${FUZZ_TARGETS:-"text proto hloproto neff defjson literal npy"}
CORPUS=${NX_CORPUS:-$ROOT/../shared/corpus}

# Seeds: hand-written ones (tests/fuzz/seeds), the repository's HLO files,
# the shared corpus (read in place, never copied into the tree), and inputs
# derived from them by gen_seeds. Working corpora under build-fuzz/corpus
# keep what earlier runs found.
hlo_files() {
	ls examples/*.hlo tests/malformed/*.hlo tests/filecheck/*.hlo 2>/dev/null
	ls "$CORPUS"/hlo/torch-neuronx/*.hlo "$CORPUS"/xla-evaluator/*/module.hlo 2>/dev/null
}
mkdir -p $B/seeds
for t in text proto hloproto neff defjson literal npy; do mkdir -p $B/seeds/$t; done
for t in $TARGETS; do mkdir -p $B/corpus/$t $B/artifacts/$t; done
if [ ! -f $B/seeds/.done ]; then
	hlo_files | while read -r f; do
		# Large graphs are kept whole for the text target's dictionary of
		# shapes and attributes; libFuzzer truncates them to -max_len.
		cp "$f" "$B/seeds/text/$(echo "$f" | tr '/' '_')"
	done
	# shellcheck disable=SC2046
	$B/fuzz/gen_seeds proto $B/seeds/proto $(hlo_files) >/dev/null
	# shellcheck disable=SC2046
	$B/fuzz/gen_seeds literal $B/seeds/literal $(hlo_files | grep -v torch-neuronx) >/dev/null
	$B/fuzz/gen_seeds neff $B/seeds/neff
	$B/fuzz/gen_seeds defjson $B/seeds/defjson
	# shellcheck disable=SC2046
	$B/fuzz/gen_seeds npy $B/seeds/npy $(hlo_files | grep -v torch-neuronx) >/dev/null
	# the HloProto target wraps each HloModuleProto seed itself
	cp $B/seeds/proto/* $B/seeds/hloproto/ 2>/dev/null
	touch $B/seeds/.done
fi

fail=0
for t in $TARGETS; do
	case $t in
	text | proto | hloproto | neff) max=65536 ;; *) max=4096 ;;
	esac
	extra=""
	[ -d tests/fuzz/seeds/$t ] && extra=tests/fuzz/seeds/$t
	regress=""
	[ -d tests/fuzz/regress/$t ] && regress=tests/fuzz/regress/$t
	echo "fuzz: $t for ${SECS}s (max_len $max)"
	# detect_leaks: a leak is a bug like any other.
	if ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		$B/fuzz/fuzz_$t $B/corpus/$t $B/seeds/$t $extra $regress \
		-max_total_time="$SECS" -max_len=$max -timeout=10 -rss_limit_mb=4096 \
		-print_final_stats=1 \
		-artifact_prefix=$B/artifacts/$t/ >$B/fuzz_$t.log 2>&1; then
		grep -E '^stat::number_of_executed_units|^#[0-9]+.*DONE' $B/fuzz_$t.log | tail -2
	else
		fail=1
		echo "FAIL fuzz_$t: see $B/fuzz_$t.log"
		grep -E 'ERROR|SUMMARY|fuzz:|Test unit written' $B/fuzz_$t.log | head -10
	fi
done
echo "fuzz: differential campaign, ${FUZZ_MODULES:-10000} modules from seed ${FUZZ_SEED:-1}"
mkdir -p $B/diff
python3 tests/fuzz/gen_hlo.py --batch "${FUZZ_SEED:-1}" "${FUZZ_MODULES:-10000}" |
	"${BUILD:-build}/fuzz/diff_inproc" $B/diff || fail=1
exit $fail
