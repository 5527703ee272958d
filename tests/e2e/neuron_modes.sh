#!/bin/sh
# nxcc as the Neuron tools (argv[0] decides; make install links them):
# `neuronx-cc` (global options before the subcommand, log-neuron-cc.txt, no
# nxcc cache unless asked, "Compiler status", argument checks with NXCC_E
# codes) and `neuron_parallel_compile` (run command, --command values, its
# environment variables, Neuron's JSON report, Neuron-layout cache entries
# compiled with their own compile_flags). Then `parallel-compile --shard auto`
# from each scheduler's environment.
set -u
fail() { echo "FAIL: $*"; exit 1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
unset NEURON_CC_FLAGS NEURON_COMPILE_CACHE_URL NEURON_PARALLEL_COMPILE_MAX_RETRIES \
	NEURON_IGNORE_TRAINING_SCRIPT_ERROR_AND_COMPILE SLURM_PROCID SLURM_NTASKS SLURM_ARRAY_TASK_ID \
	JOB_COMPLETION_INDEX AWS_BATCH_JOB_ARRAY_INDEX AWS_BATCH_JOB_ARRAY_SIZE NXCC_SHARD_COUNT
export TMPDIR="$T"
cd "$T" || exit 1
ln -s "$NXCC" neuronx-cc
ln -s "$NXCC" neuron_parallel_compile
M="$NX_ROOT/examples/linear_step.hlo"
export NXCC_TEST_HOOKS=1 NXCC_TEST_DEFAULT_CACHE_DIR="$T/default-cache"

# ---------------------------------------------------------------- neuronx-cc
# the older wrapper form: global options before the subcommand
./neuronx-cc --target=trn1 compile "$M" --framework XLA --output a.neff > o1 2> e1 || fail "wrapper form: $(cat o1 e1)"
[ "$(tail -n 1 o1)" = "Compiler status PASS" ] || fail "status line: $(cat o1)"
grep -q "cache" o1 && fail "nxcc's cache line in neuronx-cc output: $(cat o1)"
[ -s a.neff ] || fail "no .neff"
[ -s log-neuron-cc.txt ] || fail "no log-neuron-cc.txt"
grep -q "INFO .*compile cache off" log-neuron-cc.txt || fail "log: $(cat log-neuron-cc.txt)"
grep -q "Compiler status PASS" log-neuron-cc.txt || fail "log lacks the status"
[ -e "$T/default-cache" ] && fail "neuronx-cc used nxcc's cache without being asked"
cmp -s a.neff "$(./neuronx-cc compile "$M" --framework=XLA --target trn1 --output b.neff >/dev/null 2>&1; echo b.neff)" \
	|| fail "the two forms compile differently"
# a cache only when asked on the command line; then the result line goes to the log
./neuronx-cc compile "$M" --framework XLA --target trn1 --cache_dir "$T/nc" --output c.neff --logfile l2.txt > o2 2>&1 \
	|| fail "with --cache_dir: $(cat o2)"
[ "$(cat o2)" = "Compiler status PASS" ] || fail "stdout with a cache: $(cat o2)"
grep -q "INFO .*cache miss: compiled .* stored in $T/nc/" l2.txt || fail "result line not logged: $(cat l2.txt)"
# neuronx-cc's argument checks, with stable codes, exit 1
./neuronx-cc compile "$M" --framework XLA --target trn1 --lnc 2 > o3 2> e3 && fail "--lnc 2 on trn1 accepted"
grep -q "error: NXCC_EARG003: --lnc 2 is not supported on --target trn1 (trn2 only; use --lnc 1)" e3 || fail "lnc: $(cat e3)"
[ "$(tail -n 1 o3)" = "Compiler status ERROR" ] || fail "status line on error: $(cat o3)"
./neuronx-cc compile "$M" --framework XLA --target trn2 --lnc 2 --output d.neff > /dev/null 2>&1 || fail "--lnc 2 on trn2 refused"
./neuronx-cc compile "$M" --auto-cast fast > o4 2> e4; [ $? -eq 1 ] || fail "bad --auto-cast: exit status"
grep -q "error: NXCC_EARG002: invalid value 'fast' for --auto-cast (expected none|matmult|all|matmul)" e4 || fail "auto-cast: $(cat e4)"
./neuronx-cc compile "$T/missing.hlo" --framework XLA > o5 2> e5; [ $? -eq 1 ] || fail "missing input: exit status"
grep -q "error: NXCC_EIO001: cannot open" e5 || fail "missing input: $(cat e5)"
printf 'HloModule m\nENTRY e {\n  ROOT a = f32[4] add(p0, p9)\n}\n' > bad.hlo
./neuronx-cc compile bad.hlo > o6 2> e6; [ $? -eq 1 ] || fail "bad HLO: exit status"
grep -q "bad.hlo:3:.*error: NXCC_EINP001: " e6 || fail "bad HLO: $(cat e6)"
./neuronx-cc --verbose info list-operators --framework XLA > ops || fail "list-operators"
grep -qx "add" ops || fail "list-operators output"
./neuronx-cc frobnicate > /dev/null 2> e7 && fail "unknown command accepted"
grep -q "NXCC_EARG001: unknown command 'frobnicate'" e7 || fail "unknown command: $(cat e7)"

# ----------------------------------------------------- neuron_parallel_compile
cat > train.sh <<'SH'
#!/bin/sh
# a training script in graph-extraction mode: dumps two graphs, no steps
[ "$NEURON_EXTRACT_GRAPHS_ONLY" = 1 ] || { echo "trial run not in graph extraction mode"; exit 9; }
dir=$(echo "$XLA_FLAGS" | sed -n 's/.*--xla_dump_to=\([^ ]*\).*/\1/p')
cp "$NX_ROOT/examples/linear_step.hlo" "$dir/module_0001.a.before_optimizations.txt"
cp "$NX_ROOT/examples/mlp_step.hlo" "$dir/module_0002.b.before_optimizations.txt"
echo "trial ran"
exit ${TRAIN_RC:-0}
SH
chmod +x train.sh
export NEURON_CC_FLAGS="--cache_dir=$T/npc"
./neuron_parallel_compile --num_parallel 2 ./train.sh > n1 2> ne1 || fail "npc: $(cat n1 ne1)"
grep -q "trial ran" n1 || fail "the run command did not run: $(cat n1 ne1)"
grep -q "Total successful compilations: 2" n1 || fail "npc summary: $(cat n1)"
python3 - "$T/npc" <<'PY' || fail "npc report: $(cat neuron_parallel_compile_report.json)"
import json, sys
r = json.load(open("neuron_parallel_compile_report.json"))
assert r["compilation_summary"] == {"true": 2, "false": 0}, r
for k, v in r["compilation_report"].items():
    assert k.startswith(sys.argv[1] + "/nxcc-") and k.endswith("/model.hlo_module.pb"), k
    assert v == {"status": True, "retry": 0}, v
PY
# the framework's next compile of those graphs is a hit
"$NXCC" compile "$M" -o /dev/null > n2 2>&1 || fail "compile after npc: $(cat n2)"
grep -q "^cache hit ($T/npc/" n2 || fail "npc did not fill the cache compile reads: $(cat n2)"
# a crashed trial run fails the command...
TRAIN_RC=3 ./neuron_parallel_compile ./train.sh > n3 2> ne3 && fail "crashed trial run exited 0"
grep -q "error: NXCC_EPC001: ./train.sh exited with status 3; set NEURON_IGNORE_TRAINING_SCRIPT_ERROR_AND_COMPILE=1" ne3 \
	|| fail "trial failure message: $(cat ne3)"
# ...unless told to go on
TRAIN_RC=3 NEURON_IGNORE_TRAINING_SCRIPT_ERROR_AND_COMPILE=1 ./neuron_parallel_compile ./train.sh > n4 2> ne4 \
	|| fail "ignored trial failure: $(cat n4 ne4)"
# collect, then compile, as separate steps
export NEURON_CC_FLAGS="--cache_dir=$T/npc2 -O1"
./neuron_parallel_compile --command collect ./train.sh > n5 2> ne5 || fail "collect: $(cat ne5)"
grep -q "extracted 2 graphs into $T/npc2" ne5 || fail "collect: $(cat ne5)"
[ -n "$(ls "$T"/npc2/nxcc-*/*/model.hlo_module.pb 2>/dev/null)" ] || fail "collect stored no graph"
[ -z "$(ls "$T"/npc2/nxcc-*/*/model.neff 2>/dev/null)" ] || fail "collect compiled"
"$NXCC" cache list --cache-dir "$T/npc2" | grep -c "^incomplete" | grep -qx 2 || fail "collected entries: $("$NXCC" cache list --cache-dir "$T/npc2")"
# a Neuron cache entry next to ours: compiled with its own flags
NE="$T/npc2/neuronxcc-2.15.0+abc/MODULE_1234+5678"
mkdir -p "$NE"
"$NXCC" print "$M" --format proto -o "$NE/model.hlo_module.pb" || fail "print proto"
printf '["--target=inf2", "--model-type=transformer", "--auto-cast=matmul", "--some-future-flag=1", "--verbose=35"]' > "$NE/compile_flags.json"
NE2="$T/npc2/neuronxcc-2.15.0+abc/MODULE_999+5678"
mkdir -p "$NE2"
"$NXCC" print "$NX_ROOT/examples/mlp_step.hlo" --format proto -o "$NE2/model.hlo.pb" || fail "print proto"
printf -- '--target trn2 --lnc=2 -O3\n' > "$NE2/compile_flags.txt"
NEURON_PARALLEL_COMPILE_MAX_RETRIES=1 ./neuron_parallel_compile --command compile > n6 2> ne6 || fail "compile: $(cat n6 ne6)"
grep -q "Total successful compilations: 4" n6 || fail "compile summary: $(cat n6 ne6)"
grep -q "\"$NE/model.hlo_module.pb\": {\"status\": true, \"retry\": 0}" neuron_parallel_compile_report.json \
	|| fail "Neuron entry not in the report: $(cat neuron_parallel_compile_report.json)"
grep -l '"target":"inf2","model_type":"transformer","auto_cast":"matmult"' "$T"/npc2/nxcc-*/*/compile_flags.json > /dev/null \
	|| fail "the Neuron entry was not compiled with its own flags"
grep -l '"target":"trn2".*"optlevel":3,"lnc":2' "$T"/npc2/nxcc-*/*/compile_flags.json > /dev/null \
	|| fail "the .txt flags were not used"
"$NXCC" cache list --cache-dir "$T/npc2" | grep -q "^incomplete" && fail "collected graphs left uncompiled"
./neuron_parallel_compile --command clear-locks > n7 2>&1 || fail "clear-locks: $(cat n7)"
grep -q "removed [0-9]* unused lock files" n7 || fail "clear-locks: $(cat n7)"
./neuron_parallel_compile --command clean > n8 2>&1 || fail "clean: $(cat n8)"
grep -q "removed 4 cache entries from $T/npc2" n8 || fail "clean: $(cat n8)"
./neuron_parallel_compile --command analyze --analyze-output "$T/an" ./train.sh > n9 2>&1 || fail "analyze: $(cat n9)"
python3 -c "import json,sys; r=json.load(open('$T/an/result.json')); assert len(r['graphs']) == 2 and r['unsupported_total'] == 0, r" \
	|| fail "analyze result: $(cat "$T/an/result.json")"
./neuron_parallel_compile --command bake ./train.sh > /dev/null 2> ne10 && fail "bad --command accepted"
grep -q "NXCC_EARG002: invalid --command 'bake'" ne10 || fail "bad --command: $(cat ne10)"
unset NEURON_CC_FLAGS

# ------------------------------------------------------------- --shard auto
mkdir g; cp "$NX_ROOT/examples/linear_step.hlo" "$NX_ROOT/examples/mlp_step.hlo" g/
export NXCC_TEST_PC_WORKER=test-compile
pc() { "$NXCC" parallel-compile --quiet --shard auto --cache-dir "$T/sc" g; }
SLURM_PROCID=1 SLURM_NTASKS=3 pc > s1 2>&1 || fail "slurm: $(cat s1)"
grep -q "shard 1/3 (Slurm: SLURM_PROCID=1, SLURM_NTASKS=3)" s1 || fail "slurm: $(cat s1)"
[ -s compilation_report.1of3.json ] || fail "no per-shard report"
SLURM_ARRAY_TASK_ID=5 SLURM_ARRAY_TASK_MIN=4 SLURM_ARRAY_TASK_COUNT=2 pc > s2 2>&1 || fail "slurm array: $(cat s2)"
grep -q "shard 1/2 (Slurm array" s2 || fail "slurm array: $(cat s2)"
JOB_COMPLETION_INDEX=2 NXCC_SHARD_COUNT=4 pc > s3 2>&1 || fail "k8s: $(cat s3)"
grep -q "shard 2/4 (Kubernetes Indexed Job: JOB_COMPLETION_INDEX=2, NXCC_SHARD_COUNT=4)" s3 || fail "k8s: $(cat s3)"
JOB_COMPLETION_INDEX=2 pc > s4 2>&1 && fail "k8s without a count accepted"
grep -q "JOB_COMPLETION_INDEX=2 is set but NXCC_SHARD_COUNT is not" s4 || fail "k8s count: $(cat s4)"
AWS_BATCH_JOB_ARRAY_INDEX=0 AWS_BATCH_JOB_ARRAY_SIZE=2 pc > s5 2>&1 || fail "batch: $(cat s5)"
grep -q "shard 0/2 (AWS Batch array job: AWS_BATCH_JOB_ARRAY_INDEX=0, AWS_BATCH_JOB_ARRAY_SIZE=2)" s5 || fail "batch: $(cat s5)"
SLURM_PROCID=4 SLURM_NTASKS=4 pc > s6 2>&1 && fail "index out of range accepted"
pc > s7 2>&1 && fail "--shard auto without a scheduler accepted"
grep -q "error: --shard auto: no scheduler environment" s7 || fail "no scheduler: $(cat s7)"
# the shards of one job cover every graph once
for i in 0 1 2; do SLURM_PROCID=$i SLURM_NTASKS=3 "$NXCC" parallel-compile --quiet --shard auto --cache-dir "$T/sc2" g > /dev/null 2>&1 || fail "shard $i"; done
python3 -c "
import json
n = sum(json.load(open('compilation_report.%dof3.json' % i))['total'] for i in range(3))
assert n == 2, n" || fail "shards do not add up"
echo "neuron_modes: ok"
