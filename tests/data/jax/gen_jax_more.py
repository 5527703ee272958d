#!/usr/bin/env python3
"""Second batch of JAX models for tests/data/jax (same layout and machinery
as gen_jax.py: `python3 gen_jax_more.py OUTDIR`): convolution gradients in
unusual layouts, pooling/cumulative windows, scan, random numbers, 64-bit
integers, multi-index gather/scatter and a bf16 mixed-precision step."""
import gen_jax as g  # first: it sets XLA_FLAGS and JAX_PLATFORMS before JAX starts

import numpy as np  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

rn = g.rn
RNG = g.RNG


# --------------------------- convolutions: layouts, groups, dilation, grads
def nxgen_conv_grads(x, w, wg, wt, x1, w1):
    def loss(x, w, wg, wt, x1, w1):
        a = lax.conv_general_dilated(x, w, (2, 1), ((1, 2), (0, 1)), rhs_dilation=(1, 2),
                                     dimension_numbers=("NCHW", "OIHW", "NCHW"))
        b = lax.conv_general_dilated(x, wg, (1, 1), "SAME", feature_group_count=2,
                                     dimension_numbers=("NCHW", "OIHW", "NCHW"))
        c = lax.conv_transpose(jnp.transpose(x, (0, 2, 3, 1)), wt, (2, 2), "SAME",
                               dimension_numbers=("NHWC", "HWIO", "NHWC"))
        d = lax.conv_general_dilated(x1, w1, (1,), ((2, 1),), lhs_dilation=(2,),
                                     dimension_numbers=("NWC", "WIO", "NWC"))
        return (jnp.sum(jnp.tanh(a)) + jnp.sum(b * b) * 0.1 + jnp.sum(jnp.sin(c)) + jnp.sum(d * d) * 0.05), (a, b, c, d)
    (l, outs), gr = jax.value_and_grad(loss, argnums=(0, 1, 2, 3, 4, 5), has_aux=True)(x, w, wg, wt, x1, w1)
    return l, outs, gr


def conv_args():
    return (rn(2, 4, 7, 6), rn(5, 4, 3, 2, scale=0.3), rn(6, 2, 3, 3, scale=0.3), rn(3, 3, 4, 3, scale=0.3),
            rn(2, 9, 3), rn(4, 3, 5, scale=0.3))


# ------------------------------------- windows, cumulative ops, scan, sort
def nxgen_pool_scan(x, seq, w, u, keys, vals):
    r = {}
    r["avg_pool"] = lax.reduce_window(x, 0.0, lax.add, (1, 3, 3, 1), (1, 2, 2, 1), "SAME") / 9.0
    r["max_pool_s1"] = lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 1, 1, 1), ((0, 0), (1, 0), (0, 1), (0, 0)))
    r["cumsum"] = jnp.cumsum(x, axis=2)
    r["cumprod"] = jnp.cumprod(1.0 + 0.1 * x, axis=1)
    r["cummax"] = lax.cummax(x, axis=2)
    r["cummin_rev"] = lax.cummin(x, axis=1, reverse=True)

    def rnn(w, u):
        def step(h, xt):
            h = jnp.tanh(xt @ w + h @ u)
            return h, h
        h, hs = lax.scan(step, jnp.zeros((seq.shape[1], u.shape[0]), jnp.float32), seq)
        return jnp.sum(hs * hs), h
    (l, h), (gw, gu) = jax.value_and_grad(rnn, argnums=(0, 1), has_aux=True)(w, u)
    r["rnn_loss"], r["rnn_h"], r["rnn_gw"], r["rnn_gu"] = l, h, gw, gu
    sk, sv = lax.sort((keys, vals), num_keys=1)
    r["sort_k"], r["sort_v"] = sk, sv
    r["sort_desc"] = -jnp.sort(-keys, axis=0)
    r["argmax_ax0"] = jnp.argmax(x, axis=0)
    r["argmin_ax3"] = jnp.argmin(x, axis=3)
    return r


def pool_args():
    keys = RNG.integers(0, 5, (6, 7)).astype(np.int32)  # ties: a stable sort keeps order
    return (rn(2, 6, 5, 3), rn(6, 3, 4), rn(4, 5, scale=0.4), rn(5, 5, scale=0.4), keys, rn(6, 7))


# ------------------------------------------------------ random numbers
def nxgen_rng_ops(key, x):
    k1, k2, k3, k4, k5 = jax.random.split(key, 5)
    return {"normal": jax.random.normal(k1, (4, 8)),
            "uniform": jax.random.uniform(k2, (3, 5), minval=-2.0, maxval=3.0),
            "bits": jax.random.bits(k3, (7,)),
            "categorical": jax.random.categorical(k4, x, axis=-1),
            "perm": jax.random.permutation(k5, 10),
            "dropout": jnp.where(jax.random.bernoulli(k1, 0.7, x.shape), x / 0.7, 0.0)}


def rng_args():
    return (np.array([7, 20261126], dtype=np.uint32), rn(4, 6))


# --------------------------------------- multi-index gather / scatter
def nxgen_gather_scatter(t, i0, i1, upd, seg, segv, rows):
    r = {}
    r["gather2"] = t[i0, i1]
    r["gather_rows"] = t[rows]
    r["gather_slices"] = jax.vmap(lambda s: lax.dynamic_slice(t, (s, 1), (2, 3)))(rows)
    r["scatter2_add"] = jnp.zeros_like(t).at[i0, i1].add(upd)
    r["scatter2_set"] = t.at[i0, i1].set(upd)
    r["scatter_max"] = t.at[rows].max(t[:rows.shape[0]] * 2.0)
    r["segment_sum"] = jax.ops.segment_sum(segv, seg, num_segments=5)
    r["one_hot"] = jax.nn.one_hot(i1, 6)
    r["take_ax1"] = jnp.take_along_axis(t, jnp.clip(i1[None, :4], 0, 5).repeat(t.shape[0], 0), axis=1)

    def body(i, acc):
        return lax.dynamic_update_slice(acc, jnp.full((1, 6), i, jnp.float32) + lax.dynamic_slice(t, (i, 0), (1, 6)) * 0.0, (i, 0))
    r["dus_loop"] = lax.fori_loop(0, t.shape[0], body, jnp.zeros_like(t))
    return r


def gs_args():
    return (rn(8, 6), np.array([0, 7, 3, 3, 5], np.int32), np.array([1, 5, 2, 2, 0], np.int32), rn(5),
            np.array([0, 4, 4, 1, 0, 2, 4], np.int32), rn(7, 3), np.array([6, 2, 2], np.int32))


# ------------------------------------------------------ 64-bit integers
def nxgen_int64(a, b, s):
    return {"add": a + b, "mul": a * b, "div": lax.div(a, jnp.where(b == 0, 1, b)),
            "rem": lax.rem(a, jnp.where(b == 0, 1, b)), "shr": lax.shift_right_logical(a.astype(jnp.uint64), s.astype(jnp.uint64)),
            "shl": lax.shift_left(a, s), "cmp": a < b, "max": jnp.maximum(a, b), "cumsum": jnp.cumsum(a),
            "sum": jnp.sum(a), "argmax": jnp.argmax(b), "to_f32": a.astype(jnp.float32),
            "iota": jnp.arange(5, dtype=jnp.int64) * (1 << 40)}


def int64_args():
    a = np.array([1, -3, 1 << 40, -(1 << 50), 123456789012, 7, 0, -1], np.int64)
    b = np.array([5, 7, 3, -(1 << 20), 1000003, -7, 9, 0], np.int64)
    return (a, b, np.array([0, 1, 5, 13, 31, 33, 62, 63], np.int64))


# ------------------------------------------- bf16 mixed-precision step
def nxgen_mixed_bf16(p, x, y):
    def loss(p):
        h = x.astype(jnp.bfloat16)
        for i in range(2):
            w = p["w%d" % i].astype(jnp.bfloat16)
            h = jax.nn.gelu(h @ w + p["b%d" % i].astype(jnp.bfloat16))
            hf = h.astype(jnp.float32)
            m = jnp.mean(hf, axis=-1, keepdims=True)
            v = jnp.mean(jnp.square(hf - m), axis=-1, keepdims=True)
            h = ((hf - m) * lax.rsqrt(v + 1e-5)).astype(jnp.bfloat16)
        lg = (h @ p["wo"].astype(jnp.bfloat16)).astype(jnp.float32)
        return g.xent(lg, y, 0)
    l, gr = jax.value_and_grad(loss)(p)
    return jax.tree_util.tree_map(lambda a, b: a - 0.05 * b, p, gr), l


def mixed_args():
    p = {"w0": rn(16, 32, scale=0.25), "b0": rn(32, scale=0.1), "w1": rn(32, 32, scale=0.18),
         "b1": rn(32, scale=0.1), "wo": rn(32, 10, scale=0.2)}
    return (p, rn(8, 16), RNG.integers(0, 10, 8).astype(np.int32))


def int64_wrapped():
    jax.config.update("jax_enable_x64", True)
    return int64_args()


g.MODELS = [
    ("conv_grads", nxgen_conv_grads, conv_args),
    ("pool_scan", nxgen_pool_scan, pool_args),
    ("rng_ops", nxgen_rng_ops, rng_args),
    ("gather_scatter", nxgen_gather_scatter, gs_args),
    ("mixed_bf16", nxgen_mixed_bf16, mixed_args),
    ("int64", nxgen_int64, int64_wrapped),  # last: turns on jax_enable_x64
]

if __name__ == "__main__":
    g.main()
