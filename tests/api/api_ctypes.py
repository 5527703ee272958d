#!/usr/bin/env python3
"""The library from Python ctypes: compile HLO bytes to .neff bytes, run them
on the simulated NeuronCore with NumPy buffers, compare with `nxcc eval` on
the same inputs; diagnostics of a broken module come back as data.
  api_ctypes.py LIBNXCC.so MODEL.hlo NXCC TMPDIR"""
import ctypes as C, os, subprocess, sys
import numpy as np

lib_path, model, nxcc, tmp = sys.argv[1:5]
lib = C.CDLL(lib_path)


class Diag(C.Structure):
    _fields_ = [("severity", C.c_char_p), ("code", C.c_int), ("file", C.c_char_p), ("line", C.c_int),
                ("col", C.c_int), ("instruction", C.c_char_p), ("message", C.c_char_p)]


lib.nxcc_version.restype = C.c_char_p
lib.nxcc_compile.argtypes = [C.c_void_p, C.c_size_t, C.c_char_p, C.c_char_p, C.POINTER(C.c_void_p)]
lib.nxcc_compile_neff.restype = C.c_void_p
lib.nxcc_compile_neff.argtypes = [C.c_void_p, C.POINTER(C.c_size_t)]
lib.nxcc_compile_diagnostic.restype = C.POINTER(Diag)
lib.nxcc_compile_diagnostic.argtypes = [C.c_void_p, C.c_int]
lib.nxcc_compile_num_diagnostics.argtypes = [C.c_void_p]
lib.nxcc_compile_result_free.argtypes = [C.c_void_p]
lib.nxcc_program_load.argtypes = [C.c_void_p, C.c_size_t, C.POINTER(C.c_void_p), C.POINTER(Diag)]
for f in ("nxcc_program_num_inputs", "nxcc_program_num_outputs"):
    getattr(lib, f).argtypes = [C.c_void_p]
lib.nxcc_program_tensor_dtype.restype = C.c_char_p
lib.nxcc_program_tensor_dtype.argtypes = [C.c_void_p, C.c_int, C.c_int]
lib.nxcc_program_tensor_name.restype = C.c_char_p
lib.nxcc_program_tensor_name.argtypes = [C.c_void_p, C.c_int, C.c_int]
lib.nxcc_program_tensor_rank.argtypes = [C.c_void_p, C.c_int, C.c_int]
lib.nxcc_program_tensor_dim.restype = C.c_int64
lib.nxcc_program_tensor_dim.argtypes = [C.c_void_p, C.c_int, C.c_int, C.c_int]
lib.nxcc_run.argtypes = [C.c_void_p, C.POINTER(C.c_void_p), C.POINTER(C.c_void_p), C.POINTER(C.c_double),
                         C.POINTER(Diag)]
lib.nxcc_program_free.argtypes = [C.c_void_p]

print("nxcc", lib.nxcc_version().decode())
hlo = open(model, "rb").read()
res = C.c_void_p()
st = lib.nxcc_compile(hlo, len(hlo), b"model.hlo", b"--target trn1 -O2 --auto-cast none", C.byref(res))
assert st == 0, f"compile status {st}"
n = C.c_size_t()
ptr = lib.nxcc_compile_neff(res, C.byref(n))
neff = C.string_at(ptr, n.value)
assert neff[:4] and len(neff) > 1024
lib.nxcc_compile_result_free(res)

prog, d = C.c_void_p(), Diag()
assert lib.nxcc_program_load(neff, len(neff), C.byref(prog), C.byref(d)) == 0, d.message
types = {b"f32": np.float32, b"s32": np.int32}


def shape(io, i):
    return tuple(lib.nxcc_program_tensor_dim(prog, io, i, k) for k in range(lib.nxcc_program_tensor_rank(prog, io, i)))


rng = np.random.default_rng(7)
ins, outs = [], []
for i in range(lib.nxcc_program_num_inputs(prog)):
    a = rng.uniform(0.05, 1, size=shape(0, i)).astype(types[lib.nxcc_program_tensor_dtype(prog, 0, i)])
    ins.append(np.ascontiguousarray(a))
    np.save(os.path.join(tmp, f"in{i}.npy"), a)
for i in range(lib.nxcc_program_num_outputs(prog)):
    outs.append(np.zeros(shape(1, i), dtype=types[lib.nxcc_program_tensor_dtype(prog, 1, i)]))
inp = (C.c_void_p * len(ins))(*[a.ctypes.data for a in ins])
outp = (C.c_void_p * len(outs))(*[a.ctypes.data for a in outs])
ns = C.c_double()
st = lib.nxcc_run(prog, inp, outp, C.byref(ns), C.byref(d))
assert st == 0, d.message
lib.nxcc_program_free(prog)

# the reference evaluator on the same inputs
ev = os.path.join(tmp, "ev")
args = [nxcc, "eval", model, "--output-dir", ev] + sum([["--input", f"{i}={tmp}/in{i}.npy"] for i in range(len(ins))], [])
subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
for i, got in enumerate(outs):
    ref = np.load(os.path.join(ev, f"out{i}.npy"))
    err = float(np.max(np.abs(ref - got))) if ref.size else 0.0
    tol = 1e-5 * float(np.max(np.abs(ref))) + 1e-6
    assert ref.shape == got.shape and err <= tol, f"out{i}: max |diff| {err} > {tol}"
    print(f"out{i} {got.shape}: max |diff| {err:.3g} (tol {tol:.3g})")
print(f"simulated {ns.value / 1e3:.3f} us")

# diagnostics as data
bad = b"HloModule m\nENTRY e {\n  ROOT c = f32[2] constant({1, 2, 3})\n}\n"
st = lib.nxcc_compile(bad, len(bad), b"bad.hlo", b"", C.byref(res))
dg = lib.nxcc_compile_diagnostic(res, 0).contents
print(f"diagnostic: {dg.file.decode()}:{dg.line}:{dg.col}: {dg.message.decode()}")
assert st == 1 and dg.code == 1 and dg.file == b"bad.hlo" and dg.line == 3 and lib.nxcc_compile_neff(res, None) is None
lib.nxcc_compile_result_free(res)
print("api_ctypes: ok")
