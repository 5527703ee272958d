#!/bin/sh
# nxcc run --profile: the Chrome trace / Perfetto JSON follows the trace-event
# format (every event has ph, ts, pid, tid and a name; complete events have a
# non-negative dur; all inside the run; processes and threads named; slices
# carry instruction/kernel/HLO/bytes/FLOPs args; counter tracks for SBUF,
# PSUM and DMA bytes in flight), and --profile-format summary-json has the
# Neuron Explorer summary fields, consistent with the trace.
set -u
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
validate() { # trace.json summary.json
	python3 - "$1" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
s = json.load(open(sys.argv[2]))
ev = d["traceEvents"]
assert isinstance(ev, list) and ev, "no traceEvents"
total_us = d["otherData"]["total_time_ns"] / 1000.0
bad = []
names = {}
kinds = {}
for i, e in enumerate(ev):
    for k in ("ph", "ts", "pid", "tid", "name"):
        if k not in e:
            bad.append(f"event {i} has no {k}: {e}")
    if not isinstance(e.get("name"), str) or not e.get("name"):
        bad.append(f"event {i}: empty name")
    ph = e.get("ph")
    kinds[ph] = kinds.get(ph, 0) + 1
    if not isinstance(e.get("ts"), (int, float)) or e["ts"] < 0 or e["ts"] > total_us + 1e-3:
        bad.append(f"event {i} at ts {e.get('ts')} outside the run (0..{total_us})")
    if ph == "X":
        if not isinstance(e.get("dur"), (int, float)) or e["dur"] < 0:
            bad.append(f"event {i}: bad dur {e.get('dur')}")
        elif e["ts"] + e["dur"] > total_us + 1e-3:
            bad.append(f"event {i} ends after the run")
        a = e.get("args", {})
        for k in ("instruction", "kernel", "bytes", "flops"):
            if k not in a:
                bad.append(f"slice {i} has no args.{k}")
    elif ph == "M":
        names[(e["name"], e["pid"], e["tid"])] = e["args"].get("name", e["args"].get("sort_index"))
    elif ph == "C":
        if not isinstance(e.get("args", {}).get("bytes"), (int, float)) or e["args"]["bytes"] < 0:
            bad.append(f"counter {i}: bad value")
    elif ph not in ("X", "M", "C"):
        bad.append(f"event {i}: unexpected phase {ph}")
if bad:
    print("\n".join(bad[:20])); sys.exit(1)
procs = {v for (n, p, t), v in names.items() if n == "process_name"}
threads = {v for (n, p, t), v in names.items() if n == "thread_name"}
assert {"NeuronCore engines", "DMA queues", "on-chip memory"} <= procs, procs
for t in ("pe (TensorE)", "act (ScalarE)", "dve (VectorE)", "pool (GpSimdE)", "sp (SyncE)", "dma queue 0"):
    assert t in threads, f"no thread named {t}: {threads}"
# every (pid, tid) that has slices is named
for e in ev:
    if e["ph"] == "X":
        assert ("thread_name", e["pid"], e["tid"]) in names, f"unnamed track {e['pid']}/{e['tid']}"
counters = {e["name"] for e in ev if e["ph"] == "C"}
assert counters == {"SBUF bytes in use", "PSUM bytes in use", "DMA bytes in flight"}, counters
sl = [e for e in ev if e["ph"] == "X"]
assert any(e["args"].get("hlo") and e["args"].get("hlo_line") for e in sl), "no slice names its HLO instruction and line"
assert any(e["args"]["flops"] > 0 for e in sl if e["name"] == "matmul"), "matmuls without FLOPs"
assert any(e["args"]["bytes"] > 0 for e in sl if e["name"] == "dma"), "DMAs without bytes"
# DMA bytes in flight returns to zero at the end
dma = [e for e in ev if e["ph"] == "C" and e["name"] == "DMA bytes in flight"]
assert dma[-1]["args"]["bytes"] == 0, "DMA bytes still in flight after the run"
# summary: the documented fields, consistent with the trace
for k in ("total_time", "mfu_estimated_percent", "tensor_engine_active_time_percent",
          "vector_engine_active_time_percent", "scalar_engine_active_time_percent", "dma_active_time_percent",
          "hbm_read_bytes", "hbm_write_bytes"):
    assert k in s and isinstance(s[k], (int, float)), f"summary has no {k}"
assert abs(s["total_time"] * 1e6 - total_us) <= 1e-3 * max(1, total_us), (s["total_time"], total_us)
for k in s:
    if k.endswith("_percent"):
        assert 0 <= s[k] <= 100, f"{k} = {s[k]}"
pe_us = sum(e["dur"] for e in sl if e["pid"] == 1 and e["tid"] == 0)
assert abs(100 * pe_us / total_us - s["tensor_engine_active_time_percent"]) < 0.05, "TensorE % disagrees with the trace"
rd = sum(e["args"]["bytes"] for e in sl if e["name"] == "dma")
assert s["hbm_read_bytes"] > 0 and s["hbm_write_bytes"] > 0 and s["hbm_read_bytes"] <= rd, (s["hbm_read_bytes"], rd)
assert all(isinstance(e["args"].get("rows"), int) and 1 <= e["args"]["rows"] <= 128 for e in sl if e["name"] == "dma"), \
    "DMA slices without partition rows in 1..128"
assert s["tensor_engine_flops"] == sum(e["args"]["flops"] for e in sl if e["name"] == "matmul")
print(f"{len(ev)} events ok: {kinds}; summary ok")
PY
}
for f in "$NX_ROOT/examples/mlp_step.hlo" "$NX_ROOT/examples/linear_step.hlo"; do
	b=$(basename "$f" .hlo)
	"$NXCC" compile "$f" --target trn1 -O2 --no-cache --output "$tmp/$b.neff" > /dev/null || fail "compile $b"
	"$NXCC" run "$tmp/$b.neff" --random-inputs 1 --profile "$tmp/$b.json" > /dev/null || fail "run --profile $b"
	"$NXCC" run "$tmp/$b.neff" --random-inputs 1 --profile "$tmp/$b.sum.json" --profile-format summary-json \
		> /dev/null || fail "run --profile-format summary-json $b"
	validate "$tmp/$b.json" "$tmp/$b.sum.json" || fail "$b: trace or summary invalid"
done
# the validator catches what it checks: a stray event before the run fails it
python3 -c "
import json,sys; d=json.load(open('$tmp/mlp_step.json'))
d['traceEvents'].append({'name':'end','ph':'X','pid':1,'tid':0,'ts':-1,'dur':0,'args':{}})
json.dump(d,open('$tmp/bad.json','w'))"
validate "$tmp/bad.json" "$tmp/mlp_step.sum.json" > "$tmp/bad.txt" 2>&1 && fail "validator accepted an event at ts -1"
grep -q "outside the run" "$tmp/bad.txt" || fail "validator: $(cat "$tmp/bad.txt")"
# unknown format is a usage error
"$NXCC" run "$tmp/mlp_step.neff" --random-inputs 1 --profile "$tmp/x.json" --profile-format xml > /dev/null 2>&1 &&
	fail "--profile-format xml accepted"
[ -e "$tmp/x.json" ] && fail "a profile was written for a bad format"
echo "profile trace: ok"
