#!/bin/sh
# numpy.load opens the .npy files nxcc eval writes (f32, s64, pred, bf16 as
# '<u2' raw words) with the right shapes and values.
set -e
PY=""
for c in /usr/bin/python3 python3; do "$c" -c "import numpy" 2>/dev/null && { PY=$c; break; }; done
[ -n "$PY" ] || { echo "FAIL: no python3 with numpy (make deps installs python3-numpy)"; exit 1; }
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cat >"$T/m.hlo" <<'H'
HloModule m
ENTRY e {
  i = s64[2,3] iota(), iota_dimension=1
  f = f32[2,3] convert(i)
  b = bf16[2,3] convert(f)
  p = pred[2,3] compare(i, i), direction=EQ
  h = f16[2,3] convert(f)
  c = c64[2,3] convert(f)
  ROOT t = (s64[2,3], f32[2,3], bf16[2,3], pred[2,3], f16[2,3], c64[2,3]) tuple(i, f, b, p, h, c)
}
H
"$NXCC" eval "$T/m.hlo" --output-dir "$T/o" >/dev/null
"$PY" - "$T/o" <<'PY'
import numpy as np, sys
d = sys.argv[1]; L = lambda k: np.load(f"{d}/out{k}.npy")
want = np.array([[0, 1, 2], [0, 1, 2]])
assert L(0).dtype == np.int64 and np.array_equal(L(0), want)
assert L(1).dtype == np.float32 and np.array_equal(L(1), want)
b = L(2); assert b.dtype == np.uint16
assert np.array_equal((b.astype(np.uint32) << 16).view(np.float32), want)
assert L(3).dtype == np.bool_ and L(3).all()
assert L(4).dtype == np.float16 and np.array_equal(L(4), want)
assert L(5).dtype == np.complex64 and np.array_equal(L(5), want)
np.save(f"{d}/in.npy", np.arange(6, dtype=np.float32).reshape(2, 3))
print("ok")
PY
cat >"$T/n.hlo" <<'H'
HloModule n
ENTRY e {
  x = f32[2,3] parameter(0)
  ROOT y = f32[2,3] negate(x)
}
H
"$NXCC" eval "$T/n.hlo" --input 0="$T/o/in.npy" --output-dir "$T/p" >/dev/null
"$PY" -c "import numpy as np; assert np.array_equal(np.load('$T/p/out0.npy'), -np.arange(6, dtype=np.float32).reshape(2,3))"
# wrong shape is a clear error
! "$NXCC" eval "$T/n.hlo" --input 0="$T/o/out0.npy" 2>"$T/err"
grep -q "expected f32" "$T/err"
echo ok
