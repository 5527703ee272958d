#!/usr/bin/python3
"""Synthetic, linearly separable data for examples/train/mlp_train.hlo.

Writes OUTDIR/<parameter name>.npy for `nxcc train --data OUTDIR`:
  x.npy  f32[B,32,16]  B batches of 32 points (a stack: step s uses batch s mod B)
  y.npy  f32[B,32,4]   one-hot labels
  lr.npy f32[]         the learning rate (the same every step)
  w1, b1, w2, b2       initial weights (scaled normal, zero biases)
  m_w1, m_b1, m_w2, m_b2  initial momentum buffers (zeros)
Four classes: the point is its class centre (a random direction, length 4)
plus unit normal noise, so the classes are separable with a wide margin.
Deterministic: the same SEED gives the same files.

usage: make_data.py OUTDIR [--lr LR] [--batches B] [--seed SEED]
"""
import argparse
import os

import numpy as np

ap = argparse.ArgumentParser()
ap.add_argument("outdir")
ap.add_argument("--lr", type=float, default=0.05)
ap.add_argument("--batches", type=int, default=64)
ap.add_argument("--seed", type=int, default=7)
a = ap.parse_args()

rng = np.random.default_rng(a.seed)
D, H, C, N = 16, 32, 4, 32
centres = rng.normal(size=(C, D))
centres *= 4.0 / np.linalg.norm(centres, axis=1, keepdims=True)
labels = rng.integers(0, C, size=(a.batches, N))
x = centres[labels] + rng.normal(size=(a.batches, N, D))
y = np.eye(C)[labels]

arrays = {
    "x": x, "y": y, "lr": np.array(a.lr),
    "w1": rng.normal(size=(D, H)) / np.sqrt(D), "b1": np.zeros(H),
    "w2": rng.normal(size=(H, C)) / np.sqrt(H), "b2": np.zeros(C),
    "m_w1": np.zeros((D, H)), "m_b1": np.zeros(H),
    "m_w2": np.zeros((H, C)), "m_b2": np.zeros(C),
}
os.makedirs(a.outdir, exist_ok=True)
for name, v in arrays.items():
    np.save(os.path.join(a.outdir, name + ".npy"), np.asarray(v, dtype=np.float32))
print(f"wrote {len(arrays)} arrays to {a.outdir} ({a.batches} batches of {N}, lr {a.lr})")
