#!/usr/bin/env python3
"""DMA transfer sizes per kernel: which kernels move data in transfers below
512 bytes per partition row (the NKI DMA guide's floor for efficient
descriptors) although the transfer is large enough to give every row more.

For each HLO file: `nxcc compile` (trn1 -O2 unless --target/-O given), then
`nxcc run --timing-only --profile` (one Chrome-trace event per DMA with its
bytes and partition rows), and per kernel: DMA count, bytes, mean bytes per
row, and the DMAs below 512 B/row split into
  small  -- the whole transfer is under 64 KiB (512 B x 128 rows): a smaller
            tensor or tile; fewer rows would not make it faster to matter,
  short  -- the transfer holds >= 64 KiB yet has < 512 B per row: the layout
            could give each row more (the issue's "where the tensor allows").
Prints the kernels with short DMAs first; exit status 0 (an audit, not a
test). Usage: dma_audit.py [--nxcc PATH] [--target T] [-O2] FILE...
"""
import collections
import json
import os
import subprocess
import sys
import tempfile

FLOOR = 512
BIG = FLOOR * 128


def main(argv):
    nxcc, target, opt, files = "build/nxcc", "trn1", "-O2", []
    it = iter(argv)
    for a in it:
        if a == "--nxcc":
            nxcc = next(it)
        elif a == "--target":
            target = next(it)
        elif a.startswith("-O"):
            opt = a
        else:
            files.append(a)
    tot_short = 0
    for f in files:
        with tempfile.TemporaryDirectory() as d:
            neff, prof = os.path.join(d, "x.neff"), os.path.join(d, "p.json")
            c = subprocess.run([nxcc, "compile", f, "--framework", "XLA", "--target", target, opt, "--no-cache",
                                "--output", neff], capture_output=True, text=True)
            if c.returncode != 0:
                print("%s: compile failed: %s" % (os.path.basename(f), (c.stderr.strip().splitlines() or ["?"])[-1]))
                continue
            r = subprocess.run([nxcc, "run", neff, "--timing-only", "--profile", prof], capture_output=True, text=True)
            if r.returncode != 0:
                print("%s: run failed: %s" % (os.path.basename(f), (r.stderr.strip().splitlines() or ["?"])[-1]))
                continue
            with open(prof) as fp:
                ev = json.load(fp)["traceEvents"]
        k = collections.defaultdict(lambda: [0, 0, 0, 0, 0, 0])  # n, bytes, rows, small, short, short bytes
        for e in ev:
            a = e.get("args") or {}
            if e.get("ph") != "X" or "rows" not in a:
                continue
            s = k[a.get("kernel", "?")]
            b, rows = a["bytes"], max(1, a["rows"])
            s[0] += 1
            s[1] += b
            s[2] += rows
            if b / rows < FLOOR:
                if b >= BIG:
                    s[4] += 1
                    s[5] += b
                else:
                    s[3] += 1
        n = sum(v[0] for v in k.values())
        nb = sum(v[1] for v in k.values())
        short = sum(v[4] for v in k.values())
        tot_short += short
        print("%s: %d DMAs, %.1f MB, %d below %d B/row (%d small, %d short in %d kernels, %.1f MB)"
              % (os.path.basename(f), n, nb / 1e6, sum(v[3] + v[4] for v in k.values()), FLOOR,
                 sum(v[3] for v in k.values()), short, sum(1 for v in k.values() if v[4]),
                 sum(v[5] for v in k.values()) / 1e6))
        for name, v in sorted(k.items(), key=lambda x: -x[1][5])[:8]:
            if v[4]:
                print("  short: %-40s %5d of %5d DMAs, %.1f MB, mean %.0f B/row"
                      % (name, v[4], v[0], v[5] / 1e6, v[1] / v[2]))
    print("total short DMAs: %d" % tot_short)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
