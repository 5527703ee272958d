#!/usr/bin/env python3
"""Code quality against the roofline: for each HLO file, `nxcc compile
--stats` then `nxcc run --timing-only --stats-json`, and one row of

  roofline   max(PE time of the dot FLOPs at the dtype's peak, minimal HBM
             bytes at min(HBM rate, 16 DMA queues' rate)), from the target
             table (the memory roofline of `nxcc compile --stats`)
  @HBM       simulated / the bound with the memory part at the HBM rate alone
  simulated  the simulator's time (the same as a full run, see --timing-only)
  ratio      simulated / roofline
  MFU        dot FLOPs at the dtype's peak / simulated
  HBM/min    HBM bytes the DMAs read and wrote / the program's inputs+outputs
  DMAs       transfers; B/DMA/part: bytes per transfer per partition row
  busy %     per engine (pe act dve pool sp) and per DMA queue (q0..q15)

Usage: bench/roofline.py [--nxcc build/nxcc] [--target trn1] [-O2]
                         [--markdown FILE] [--keep DIR] FILE.hlo ...
--markdown writes the table (and the per-queue lines) as Markdown.
NX_BENCH_LIMIT_S (default 900) limits each compile and each run.
docs/benchmarks.md describes the columns and keeps the recorded numbers."""
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time

LIMIT_S = int(os.environ.get("NX_BENCH_LIMIT_S", "900"))  # per compile and per run


def fmt_ns(ns):
    if ns >= 1e9:
        return "%.2f s" % (ns / 1e9)
    if ns >= 1e6:
        return "%.2f ms" % (ns / 1e6)
    if ns >= 1e3:
        return "%.1f us" % (ns / 1e3)
    return "%.0f ns" % ns


def compile_stats(text):
    st = {}
    for line in text.splitlines():
        m = re.match(r"^flops: *([0-9.e+]+)", line)
        if m:
            st["flops"] = float(m.group(1))
        m = re.match(r"^minimal hbm bytes: *([0-9]+)", line)
        if m:
            st["io_bytes"] = int(m.group(1))
        m = re.match(r"^compile time: *([0-9.]+)", line)
        if m:
            st["compile_s"] = float(m.group(1))
    return st


def row(name, cst, js):
    pk = js["peak"]
    ranks = js["ranks"]
    r = max(ranks, key=lambda x: x["simulated_ns"])  # the slowest rank
    sim = js["simulated_ns"]
    flops = cst.get("flops", 0.0)
    # dot FLOPs at the dtype's rate: the executed matmuls' mix of dtypes
    if r["pe_flops"] > 0:
        pe_ns = flops * r["pe_peak_ns"] / r["pe_flops"]
    else:
        pe_ns = flops / (pk["pe_tflops_fp32"] * 1e3)
    io = cst.get("io_bytes", js["io_bytes"])
    # memory: the calibrated peak of the path the bytes take, min(HBM, the
    # DMA queues together), as `nxcc compile --stats` and docs/targets.md
    # (nx_target_dma_peak_gbps); the HBM-only bound is kept for reference
    mem_gbps = min(pk["hbm_gbps"], pk["dma_gbps"] * js.get("dma_queues", 16))
    mem_ns = io / mem_gbps
    bound = max(pe_ns, mem_ns)
    d = r["dma"]
    moved = d["hbm_read_bytes"] + d["hbm_write_bytes"]
    busy = {e: 100.0 * v["busy_ns"] / sim if sim else 0.0 for e, v in r["engines"].items()}
    qb = [100.0 * q / sim if sim else 0.0 for q in d["queue_busy_ns"]]
    return {
        "name": name,
        "bound_ns": bound,
        "bound_kind": "PE" if pe_ns >= mem_ns else "mem",
        "hbm_only_ratio": sim / max(pe_ns, io / pk["hbm_gbps"]) if io or pe_ns else float("nan"),
        "sim_ns": sim,
        "ratio": sim / bound if bound else float("nan"),
        "mfu": 100.0 * pe_ns / sim if sim else 0.0,
        "hbm_ratio": moved / io if io else float("nan"),
        "dmas": d["transfers"],
        "bpp": d["bytes"] / d["partition_rows"] if d["partition_rows"] else 0.0,
        "busy": busy,
        "queues": qb,
        "ranks": len(ranks),
    }


HEAD = ("kernel", "roofline", "simulated", "ratio", "@HBM", "MFU", "HBM/min", "DMAs", "B/DMA/part",
        "busy % pe/act/dve/pool/sp", "queues busy % mean/max")


def cells(x):
    if "error" in x:
        return (x["name"], x["error"], "", "", "", "", "", "", "", "", "")
    b = x["busy"]
    q = x["queues"]
    return (x["name"] + (" (%d ranks)" % x["ranks"] if x["ranks"] > 1 else ""),
            "%s (%s)" % (fmt_ns(x["bound_ns"]), x["bound_kind"]), fmt_ns(x["sim_ns"]),
            "%.2fx" % x["ratio"], "%.2fx" % x["hbm_only_ratio"], "%.1f%%" % x["mfu"], "%.1fx" % x["hbm_ratio"], str(x["dmas"]),
            "%.0f" % x["bpp"], "/".join("%.0f" % b[e] for e in ("pe", "act", "dve", "pool", "sp")),
            "%.1f / %.0f" % (sum(q) / len(q), max(q)) if q else "-")


def main(argv):
    nxcc, target, opt, md, keep, files = "build/nxcc", "trn1", "-O2", None, None, []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("--nxcc", "--target", "--markdown", "--keep"):
            i += 1
            v = argv[i]
            if a == "--nxcc":
                nxcc = v
            elif a == "--target":
                target = v
            elif a == "--markdown":
                md = v
            else:
                keep = v
        elif re.match(r"^-O[0-3]$", a):
            opt = a
        elif a in ("-h", "--help"):
            print(__doc__)
            return 0
        else:
            files.append(a)
        i += 1
    if not files:
        print(__doc__, file=sys.stderr)
        return 1
    tmp = keep or tempfile.mkdtemp(prefix="nxcc-roofline-")
    os.makedirs(tmp, exist_ok=True)
    rows = []
    widths = [28, 16, 10, 9, 7, 6, 8, 8, 10, 26, 12]
    print("  ".join(h.ljust(w) for h, w in zip(HEAD, widths)), flush=True)
    for f in files:
        name = os.path.basename(f)
        for ext in (".hlo", ".txt", ".pb"):
            if name.endswith(ext):
                name = name[: -len(ext)]
        neff = os.path.join(tmp, name + ".neff")
        sj = os.path.join(tmp, name + ".json")
        try:
            c = subprocess.run([nxcc, "compile", f, "--framework", "XLA", "--target", target, opt, "--stats",
                                "--no-cache", "--output", neff], capture_output=True, text=True, timeout=LIMIT_S)
        except subprocess.TimeoutExpired:
            c = subprocess.CompletedProcess([], 1, "", "error: compile took over %d s" % LIMIT_S)
        if c.returncode != 0:
            msg = (c.stdout + c.stderr).strip().splitlines()
            err = next((l for l in msg if "error" in l), msg[-1] if msg else "failed")
            x = {"name": name, "error": "does not compile: " + err[:90]}
        else:
            t0 = time.time()
            try:
                r = subprocess.run([nxcc, "run", neff, "--timing-only", "--stats-json", sj], capture_output=True,
                                   text=True, timeout=LIMIT_S)
            except subprocess.TimeoutExpired:
                r = subprocess.CompletedProcess([], 1, "", "took over %d s" % LIMIT_S)
            if r.returncode != 0:
                x = {"name": name, "error": "run failed: " + (r.stdout + r.stderr).strip()[:90]}
            else:
                with open(sj) as fh:
                    x = row(name, compile_stats(c.stdout), json.load(fh))
                x["wall_s"] = time.time() - t0
        if not keep and os.path.exists(neff):
            os.remove(neff)
        x["kernel"] = os.path.basename(os.path.dirname(os.path.abspath(f))) == "kernels"
        rows.append(x)
        print("  ".join(str(v).ljust(w) for v, w in zip(cells(x), widths)), flush=True)
    summary = []
    for label, sel in (("kernels", True), ("corpus graphs", False)):
        rs = sorted(x["ratio"] for x in rows if "ratio" in x and x["kernel"] == sel and x["ratio"] > 0)
        if rs:
            gm = math.exp(sum(math.log(r) for r in rs) / len(rs))
            med = (rs[(len(rs) - 1) // 2] + rs[len(rs) // 2]) / 2
            summary.append("%s: %d run, ratio median %.1fx, geometric mean %.1fx, worst %.1fx" %
                           (label, len(rs), med, gm, rs[-1]))
    failed = [x["name"] for x in rows if "error" in x]
    if failed:
        summary.append("not run: " + ", ".join(failed))
    print("\n" + "\n".join(summary))
    print("\nDMA queue busy % (q0..q15):")
    for x in rows:
        if "queues" in x:
            print("  %-28s %s" % (x["name"], " ".join("%.0f" % q for q in x["queues"])))
    if md:
        with open(md, "w") as fh:
            commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
            fh.write("Recorded %s at commit %s (%s %s, `bench/roofline.py`).\n\n" %
                     (time.strftime("%Y-%m-%d", time.gmtime()), commit or "?", target, opt))
            fh.write("| " + " | ".join(HEAD) + " |\n|" + "---|" * len(HEAD) + "\n")
            for x in rows:
                fh.write("| " + " | ".join(cells(x)) + " |\n")
            fh.write("\n" + "".join("- %s\n" % l for l in summary))
            fh.write("\nDMA queue busy % (q0..q15):\n\n")
            for x in rows:
                if "queues" in x:
                    fh.write("- %s: %s\n" % (x["name"], " ".join("%.0f" % q for q in x["queues"])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
