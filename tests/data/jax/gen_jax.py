#!/usr/bin/env python3
"""Generate small real JAX training/inference steps with XLA's own outputs.

Run where JAX is installed (`python3 gen_jax.py OUTDIR`). For each model it
writes OUTDIR/<model>/: model.hlo (XLA's `before_optimizations` text dump,
stack-frame tables and metadata included), model.hlo.pb (the HloModuleProto
of the same dump), in<k>.npy (parameter k, in HLO parameter order; jit with
keep_unused so every pytree leaf is a parameter), out<k>.npy (leaf k of the
result, computed by XLA:CPU) and meta.json. bf16 arrays are stored as '<u2'
words, as nxcc eval writes them. Inputs come from numpy's seeded generator.
"""
import glob
import json
import os
import shutil
import sys
import traceback

OUTDIR = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "jaxdata")
DUMP = "/tmp/nx_jax_dump"
shutil.rmtree(DUMP, ignore_errors=True)
# --xla_allow_excess_precision=false: XLA:CPU rounds every bf16 value as
# the HLO says (its default keeps fused bf16 intermediates in f32)
os.environ["XLA_FLAGS"] = ("--xla_dump_to=%s --xla_dump_hlo_as_text --xla_dump_hlo_as_proto "
                           "--xla_dump_hlo_module_re=nxgen_.* --xla_allow_excess_precision=false" % DUMP)
os.environ["JAX_PLATFORMS"] = "cpu"

import numpy as np  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

RNG = np.random.default_rng(20261126)


def rn(*shape, scale=1.0, dtype=np.float32):
    return (RNG.standard_normal(shape) * scale).astype(dtype)


def save_np(path, x):
    x = np.asarray(x)
    if x.dtype.name == "bfloat16":
        x = x.view(np.uint16)
    np.save(path, x)


def dense(x, w, b):
    return x @ w + b


def layer_norm(x, g, b, eps=1e-6):
    m = jnp.mean(x, axis=-1, keepdims=True)
    v = jnp.mean(jnp.square(x - m), axis=-1, keepdims=True)
    return (x - m) * lax.rsqrt(v + eps) * g + b


def xent(logits, labels, n):
    lp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.mean(jnp.take_along_axis(lp, labels[:, None], axis=-1)) + 0.0 * n


# ---------------------------------------------------------------- MLP, SGD
def nxgen_mlp_train(p, x, y):
    def loss(p):
        h = jax.nn.relu(dense(x, p["w1"], p["b1"]))
        return xent(dense(h, p["w2"], p["b2"]), y, 0)
    l, g = jax.value_and_grad(loss)(p)
    return jax.tree_util.tree_map(lambda a, b: a - 0.1 * b, p, g), l


def mlp_args():
    p = {"w1": rn(16, 32, scale=0.25), "b1": rn(32, scale=0.1), "w2": rn(32, 10, scale=0.2), "b2": rn(10, scale=0.1)}
    return (p, rn(8, 16), RNG.integers(0, 10, 8).astype(np.int32))


# ------------------------------------------------- ViT, dropout, Adam
D_, H_, L_ = 32, 4, 2


def vit_fwd(p, img, key, train):
    x = lax.conv_general_dilated(img, p["patch"], (4, 4), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    B = x.shape[0]
    x = x.reshape(B, -1, D_) + p["patch_b"]
    x = jnp.concatenate([jnp.broadcast_to(p["cls"], (B, 1, D_)), x], axis=1) + p["pos"]
    T = x.shape[1]
    for i in range(L_):
        q = p["blk%d" % i]
        h = layer_norm(x, q["ln1g"], q["ln1b"])
        qkv = dense(h, q["wqkv"], q["bqkv"]).reshape(B, T, 3, H_, D_ // H_)
        s = jnp.einsum("bthd,bshd->bhts", qkv[:, :, 0], qkv[:, :, 1]) / np.sqrt(D_ // H_)
        a = jax.nn.softmax(s, axis=-1)
        if train:
            key, k2 = jax.random.split(key)
            keep = jax.random.bernoulli(k2, 0.9, a.shape)
            a = jnp.where(keep, a / 0.9, 0.0)
        o = jnp.einsum("bhts,bshd->bthd", a, qkv[:, :, 2]).reshape(B, T, D_)
        x = x + dense(o, q["wo"], q["bo"])
        h = layer_norm(x, q["ln2g"], q["ln2b"])
        x = x + dense(jax.nn.gelu(dense(h, q["w1"], q["b1"]), approximate=False), q["w2"], q["b2"])
    x = layer_norm(x[:, 0], p["lng"], p["lnb"])
    return dense(x, p["head"], p["head_b"])


def nxgen_vit_train(p, m, v, step, img, y, key):
    l, g = jax.value_and_grad(lambda p: xent(vit_fwd(p, img, key, True), y, 0))(p)
    gn = jnp.sqrt(sum(jnp.sum(jnp.square(t)) for t in jax.tree_util.tree_leaves(g)))
    scale = jnp.where(jnp.isfinite(gn), jnp.minimum(1.0, 1.0 / (gn + 1e-6)), 0.0)
    g = jax.tree_util.tree_map(lambda t: t * scale, g)
    t = step + 1
    b1, b2, lr = 0.9, 0.999, 1e-3
    m = jax.tree_util.tree_map(lambda a, b: b1 * a + (1 - b1) * b, m, g)
    v = jax.tree_util.tree_map(lambda a, b: b2 * a + (1 - b2) * b * b, v, g)
    c1 = 1 - b1 ** t.astype(jnp.float32)
    c2 = 1 - b2 ** t.astype(jnp.float32)
    p = jax.tree_util.tree_map(lambda w, a, b: w - lr * (a / c1) / (jnp.sqrt(b / c2) + 1e-8) - lr * 0.01 * w, p, m, v)
    return p, m, v, t, l, gn


def vit_args():
    p = {"patch": rn(4, 4, 3, D_, scale=0.2), "patch_b": rn(D_, scale=0.1), "cls": rn(1, 1, D_, scale=0.1),
         "pos": rn(1, 17, D_, scale=0.1), "lng": 1 + rn(D_, scale=0.1), "lnb": rn(D_, scale=0.1),
         "head": rn(D_, 10, scale=0.2), "head_b": rn(10, scale=0.1)}
    for i in range(L_):
        p["blk%d" % i] = {"ln1g": 1 + rn(D_, scale=0.1), "ln1b": rn(D_, scale=0.1), "wqkv": rn(D_, 3 * D_, scale=0.18),
                          "bqkv": rn(3 * D_, scale=0.1), "wo": rn(D_, D_, scale=0.18), "bo": rn(D_, scale=0.1),
                          "ln2g": 1 + rn(D_, scale=0.1), "ln2b": rn(D_, scale=0.1), "w1": rn(D_, 64, scale=0.18),
                          "b1": rn(64, scale=0.1), "w2": rn(64, D_, scale=0.12), "b2": rn(D_, scale=0.1)}
    z = jax.tree_util.tree_map(lambda a: (np.abs(rn(*a.shape, scale=0.01)) ).astype(np.float32), p)
    m = jax.tree_util.tree_map(lambda a: rn(*a.shape, scale=0.01), p)
    return (p, m, z, np.int32(3), rn(4, 16, 16, 3), RNG.integers(0, 10, 4).astype(np.int32),
            np.array([0, 42], dtype=np.uint32))


# ------------------------------------ CNN: batch norm, max-pool, depthwise
def cnn_fwd(p, x):
    x = lax.conv_general_dilated(x, p["c1"], (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    mu = jnp.mean(x, axis=(0, 1, 2))
    var = jnp.mean(jnp.square(x - mu), axis=(0, 1, 2))
    x = jax.nn.relu((x - mu) * lax.rsqrt(var + 1e-5) * p["bng"] + p["bnb"])
    x = lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    x = lax.conv_general_dilated(x, p["dw"], (2, 2), ((1, 1), (1, 1)), rhs_dilation=(1, 1),
                                 dimension_numbers=("NHWC", "HWIO", "NHWC"), feature_group_count=8)
    x = lax.conv_general_dilated(x, p["c2"], (1, 1), ((2, 2), (2, 2)), rhs_dilation=(2, 2),
                                 dimension_numbers=("NHWC", "HWIO", "NHWC"))
    x = jnp.mean(jax.nn.relu(x), axis=(1, 2))
    return dense(x, p["fc"], p["fcb"])


def nxgen_cnn_train(p, mom, x, y):
    def loss(p):
        lg = cnn_fwd(p, x)
        return xent(lg, y, 0), lg
    (l, lg), g = jax.value_and_grad(loss, has_aux=True)(p)
    mom = jax.tree_util.tree_map(lambda a, b: 0.9 * a + b, mom, g)
    p = jax.tree_util.tree_map(lambda w, a: w - 0.05 * a, p, mom)
    acc = jnp.mean((jnp.argmax(lg, axis=-1) == y).astype(jnp.float32))
    return p, mom, l, acc


def cnn_args():
    p = {"c1": rn(3, 3, 3, 8, scale=0.3), "bng": 1 + rn(8, scale=0.1), "bnb": rn(8, scale=0.1),
         "dw": rn(3, 3, 1, 8, scale=0.3), "c2": rn(3, 3, 8, 12, scale=0.2), "fc": rn(12, 10, scale=0.3),
         "fcb": rn(10, scale=0.1)}
    mom = jax.tree_util.tree_map(lambda a: rn(*a.shape, scale=0.01), p)
    return (p, mom, rn(4, 8, 8, 3), RNG.integers(0, 10, 4).astype(np.int32))


# ---------------------------------------------- Llama-style forward, bf16
def nxgen_llama_bf16(p, tok):
    V, Dm, Hh = 64, 32, 4
    hd = Dm // Hh
    x = p["emb"][tok]  # gather
    B, T = tok.shape
    pos = jnp.arange(T, dtype=jnp.float32)
    inv = 1.0 / (10000.0 ** (jnp.arange(0, hd, 2, dtype=jnp.float32) / hd))
    rot = jnp.exp(1j * (pos[:, None] * inv[None, :]))  # complex64 [T, hd/2]

    def rms(x, g):
        xf = x.astype(jnp.float32)
        return (xf * lax.rsqrt(jnp.mean(xf * xf, axis=-1, keepdims=True) + 1e-5)).astype(x.dtype) * g

    def rope(t):
        tf = t.astype(jnp.float32).reshape(B, T, Hh, hd // 2, 2)
        c = lax.complex(tf[..., 0], tf[..., 1]) * rot[None, :, None, :]
        return jnp.stack([jnp.real(c), jnp.imag(c)], axis=-1).reshape(B, T, Hh, hd).astype(t.dtype)

    h = rms(x, p["g1"])
    q = rope((h @ p["wq"]).reshape(B, T, Hh, hd))
    k = rope((h @ p["wk"]).reshape(B, T, Hh, hd))
    v = (h @ p["wv"]).reshape(B, T, Hh, hd)
    s = jnp.einsum("bthd,bshd->bhts", q, k, preferred_element_type=jnp.float32) / np.sqrt(hd)
    mask = lax.broadcasted_iota(jnp.int32, (T, T), 0) >= lax.broadcasted_iota(jnp.int32, (T, T), 1)
    s = jnp.where(mask, s, -1e9)
    a = jax.nn.softmax(s, axis=-1).astype(jnp.bfloat16)
    o = jnp.einsum("bhts,bshd->bthd", a, v).reshape(B, T, Dm)
    x = x + o @ p["wo"]
    h = rms(x, p["g2"])
    x = x + (jax.nn.silu(h @ p["wg"]) * (h @ p["wu"])) @ p["wd"]
    logits = (rms(x, p["g3"]) @ p["emb"].T).astype(jnp.float32)
    return logits, jnp.argmax(logits, axis=-1), lax.top_k(logits[:, -1], 5)


def llama_args():
    b = lambda *s, scale=1.0: jnp.asarray(rn(*s, scale=scale), dtype=jnp.bfloat16)  # noqa: E731
    p = {"emb": b(64, 32, scale=0.5), "g1": 1 + b(32, scale=0.1), "g2": 1 + b(32, scale=0.1), "g3": 1 + b(32, scale=0.1),
         "wq": b(32, 32, scale=0.18), "wk": b(32, 32, scale=0.18), "wv": b(32, 32, scale=0.18),
         "wo": b(32, 32, scale=0.18), "wg": b(32, 48, scale=0.18), "wu": b(32, 48, scale=0.18),
         "wd": b(48, 32, scale=0.15)}
    return (p, RNG.integers(0, 64, (2, 8)).astype(np.int32))


# -------------------------------------------- assorted ops, loops, sort
def nxgen_ops_misc(x, y, idx, upd, start, n):
    r = {}
    r["sort"] = jnp.sort(x, axis=-1)
    r["argsort"] = jnp.argsort(x[:, :8], axis=-1)
    r["topk_v"], r["topk_i"] = lax.top_k(x, 3)
    r["cumsum"] = jnp.cumsum(x, axis=1)
    xn = x.at[0, 3].set(jnp.nan).at[1, 2].set(x[1, 5])
    r["argmax"] = jnp.argmax(xn, axis=-1)
    r["argmin"] = jnp.argmin(jnp.round(x), axis=0)
    z = jnp.array([1.0, -jnp.inf, jnp.inf, jnp.nan, 0.0, -0.0, 3e38, 1e-40], jnp.float32)
    r["isfinite"] = jnp.isfinite(z * y[0, 0])
    r["atan2"] = jnp.arctan2(x, y)
    r["tan"] = jnp.tan(x * 0.7)
    r["cbrt"] = jnp.cbrt(x * 3.0)
    xi = lax.bitcast_convert_type(x, jnp.int32)
    r["bitcast"] = xi
    r["clz"] = lax.clz(xi)
    r["popcnt"] = lax.population_count(xi)
    r["erf"] = lax.erf(x)
    r["rem"] = jnp.remainder(x * 5.0, 1.5)
    ii = (xi >> 20) - 1000
    r["idiv"] = lax.div(ii, jnp.full_like(ii, 7))
    r["irem"] = lax.rem(ii, jnp.full_like(ii, 7))
    tbl = jnp.zeros((10, 4), jnp.float32)
    r["scatter_add"] = tbl.at[idx].add(upd)
    r["gather"] = jnp.take(x, idx, axis=0, mode="clip")
    r["dyn_slice"] = lax.dynamic_slice(x, (start[0], start[1]), (3, 5))
    r["dyn_update"] = lax.dynamic_update_slice(x, y[:2, :4], (start[1], start[0]))

    def cond(c):
        i, v = c
        return (i < n) & (jnp.max(jnp.abs(v * v - 2.0)) > 1e-6)

    def body(c):
        i, v = c
        return i + 1, 0.5 * (v + 2.0 / v)
    r["while_i"], r["while_v"] = lax.while_loop(cond, body, (jnp.int32(0), jnp.abs(x[0]) + 1.0))
    r["fori"] = lax.fori_loop(0, 5, lambda i, a: a * 0.5 + lax.convert_element_type(i, jnp.float32), x[1])
    c = lax.complex(x[2], y[2])
    r["cplx_abs"] = jnp.abs(c * c)
    r["cplx_re"] = jnp.real(jnp.exp(c * 0.3))
    r["cplx_im"] = jnp.imag(c * jnp.conj(c + 1.0))
    r["clip"] = jnp.clip(x, -0.5, 0.5)
    r["select_n"] = lax.select_n(jnp.clip(idx[:4], 0, 2), x[0, :4], x[1, :4], x[2, :4])
    return r


def misc_args():
    return (rn(6, 16), rn(6, 16), np.array([1, 3, 3, 0, 9, 3, 7, 1], np.int32), rn(8, 4),
            np.array([2, 4], np.int32), np.int32(50))


MODELS = [
    ("mlp_train", nxgen_mlp_train, mlp_args),
    ("vit_train", nxgen_vit_train, vit_args),
    ("cnn_train", nxgen_cnn_train, cnn_args),
    ("llama_bf16", nxgen_llama_bf16, llama_args),
    ("ops_misc", nxgen_ops_misc, misc_args),
]


def main():
    os.makedirs(OUTDIR, exist_ok=True)
    summary = {"jax": jax.__version__, "backend": jax.default_backend(), "models": {}}
    for name, fn, mk in MODELS:
        d = os.path.join(OUTDIR, name)
        os.makedirs(d, exist_ok=True)
        try:
            args = mk()
            jf = jax.jit(fn, keep_unused=True)
            out = jax.block_until_ready(jf(*args))
            ins = jax.tree_util.tree_leaves(args)
            outs = jax.tree_util.tree_leaves(out)
            for k, a in enumerate(ins):
                save_np(os.path.join(d, "in%d.npy" % k), a)
            for k, a in enumerate(outs):
                save_np(os.path.join(d, "out%d.npy" % k), a)
            txt = sorted(glob.glob(os.path.join(DUMP, "*jit_%s.before_optimizations.txt" % fn.__name__)))
            pb = sorted(glob.glob(os.path.join(DUMP, "*jit_%s.before_optimizations*.pb" % fn.__name__)))
            if txt:
                shutil.copy(txt[-1], os.path.join(d, "model.hlo"))
            if pb:
                shutil.copy(pb[-1], os.path.join(d, "model.hlo.pb"))
            paths = [jax.tree_util.keystr(k) for k, _ in jax.tree_util.tree_flatten_with_path(args)[0]]
            opaths = [jax.tree_util.keystr(k) for k, _ in jax.tree_util.tree_flatten_with_path(out)[0]]
            meta = {"function": fn.__name__, "jax": jax.__version__, "backend": jax.default_backend(),
                    "inputs": [{"path": p, "shape": list(np.shape(a)), "dtype": str(np.asarray(a).dtype)}
                               for p, a in zip(paths, ins)],
                    "outputs": [{"path": p, "shape": list(np.shape(a)), "dtype": str(np.asarray(a).dtype)}
                                for p, a in zip(opaths, outs)],
                    "dump_files": [os.path.basename(f) for f in txt + pb]}
            with open(os.path.join(d, "meta.json"), "w") as f:
                json.dump(meta, f, indent=1)
            summary["models"][name] = "ok: %d inputs, %d outputs, text %d, proto %d" % (len(ins), len(outs), len(txt), len(pb))
        except Exception:
            summary["models"][name] = "FAILED: " + traceback.format_exc()
        print(name, summary["models"][name], flush=True)
    with open(os.path.join(OUTDIR, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    summary["dump_dir"] = sorted(os.listdir(DUMP)) if os.path.isdir(DUMP) else []
    with open(os.path.join(OUTDIR, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
