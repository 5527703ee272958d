#!/bin/sh
# nxcc eval --replicas N on collective cases of the xla-evaluator corpus:
# DIR/replica<i>/out0.npy must equal the case's expected value for replica i
# (expected.txt: one "replica <i>:" line each, or one line for all), with
# the case's inputs.txt given to every replica as .npy. Then per-replica
# inputs: --input r1:0=x.npy overrides parameter 0 on replica 1 only.
set -e
C="$NX_CORPUS/xla-evaluator"
[ -d "$C" ] || { echo "skip: no corpus"; exit 0; }
PY=""
for c in /usr/bin/python3 python3; do "$c" -c "import numpy" 2>/dev/null && { PY=$c; break; }; done
[ -n "$PY" ] || { echo "FAIL: no python3 with numpy (make deps installs python3-numpy)"; exit 1; }
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cat >"$T/lit.py" <<'PY'
import numpy as np, re, sys
DT = {"pred": np.bool_, "s8": np.int8, "s16": np.int16, "s32": np.int32, "s64": np.int64,
      "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
      "f16": np.float16, "f32": np.float32, "f64": np.float64}
def parse(line):
    m = re.match(r"\s*(\w+)\[([\d,]*)\]\s*(.*)$", line)
    t, dims, body = m.group(1), m.group(2), m.group(3)
    shape = tuple(int(d) for d in dims.split(",") if d)
    vals = [v for v in re.split(r"[{},\s]+", body) if v]
    if t == "pred":
        a = np.array([v == "true" for v in vals], dtype=np.bool_)
    else:
        a = np.array([float(v) if t[0] == "f" else int(v) for v in vals], dtype=DT[t])
    return a.reshape(shape)
PY
for case in collective_all_reduce_degenerate_groups collective_permute_rotate \
	collective_all_to_all_split_dimension collective_all_reduce_three_replica_groups \
	collective_reduce_scatter collective_replica_id collective_all_reduce_sum_f32_2d; do
	d="$C/$case"
	[ -f "$d/module.hlo" ] || { echo "FAIL: missing case $case"; exit 1; }
	n=$(cat "$d/replicas.txt")
	"$PY" - "$T/lit.py" "$d/inputs.txt" "$T/$case" <<'PY'
import sys, os
exec(open(sys.argv[1]).read())
os.makedirs(sys.argv[3], exist_ok=True)
for k, line in enumerate(l for l in open(sys.argv[2]) if l.strip()):
    np.save(f"{sys.argv[3]}/in{k}.npy", parse(line))
PY
	set -- --replicas "$n" --output-dir "$T/$case/out"
	for f in "$T/$case"/in*.npy; do
		[ -f "$f" ] || continue
		k=$(basename "$f" .npy | sed 's/^in//')
		set -- "$@" --input "$k=$f"
	done
	"$NXCC" eval "$d/module.hlo" "$@" >"$T/$case.log"
	"$PY" - "$T/lit.py" "$d/expected.txt" "$T/$case/out" "$n" <<'PY'
import sys
exec(open(sys.argv[1]).read())
lines = [l for l in open(sys.argv[2]) if l.strip() and not l.startswith("tolerance")]
n = int(sys.argv[4])
for r in range(n):
    exp = [l for l in lines if l.startswith(f"replica {r}:")]
    want = parse(exp[0].split(":", 1)[1]) if exp else parse(lines[0])
    got = np.load(f"{sys.argv[3]}/replica{r}/out0.npy")
    assert got.shape == want.shape and got.dtype == want.dtype, (r, got.dtype, got.shape, want.dtype, want.shape)
    assert np.array_equal(got, want), f"replica {r}: {got} != {want}"
print("ok", n, "replicas")
PY
	echo "$case: $n replicas ok"
done

# per-replica input: replica 1 gets its own p; groups {0},{1,2},{3}
case=collective_all_reduce_three_replica_groups
"$PY" -c "import numpy as np; np.save('$T/base.npy', np.arange(137, dtype=np.float32)); np.save('$T/r1.npy', np.full(137, 1000, np.float32))"
"$NXCC" eval "$C/$case/module.hlo" --replicas 4 --input 0="$T/base.npy" --input r1:0="$T/r1.npy" \
	--output-dir "$T/pr" >/dev/null
"$PY" - "$T/pr" <<'PY'
import numpy as np, sys
o = lambda r: np.load(f"{sys.argv[1]}/replica{r}/out0.npy")
base = np.arange(137, dtype=np.float32)
assert np.array_equal(o(0), base) and np.array_equal(o(3), base)
assert np.array_equal(o(1), base + 1000) and np.array_equal(o(2), base + 1000)
print("per-replica input ok")
PY
# a replica index out of range is an error, not a silent no-op
if "$NXCC" eval "$C/$case/module.hlo" --replicas 4 --input 0="$T/base.npy" --input r7:0="$T/r1.npy" 2>"$T/err" >/dev/null; then
	echo "FAIL: --input r7: accepted with 4 replicas"; exit 1
fi
grep -q "replica 7" "$T/err" || { cat "$T/err"; exit 1; }
echo ok
