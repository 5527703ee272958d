#!/usr/bin/env python3
"""Random valid HLO modules for the differential campaign (tests/fuzz/diff.sh).

gen_hlo.py SEED prints one module; gen_hlo.py --batch FIRST COUNT prints
COUNT of them framed for the in-process campaign (tests/fuzz/diff_inproc.c). Every module is a small random DAG over
parameters and constants of one element type per chain, using elementwise
unary and binary ops (integer: divide, remainder, shifts, bitwise ops, abs,
negate, compare + select, wrapping converts; float: the arithmetic ops),
broadcast, reshape, transpose, slice, concatenate, reverse, iota, reduce
(add / maximum / minimum / multiply) and f32 dot; float math (tanh, logistic, sine, cosine, floor, ceil, sign,
rounding, exponential, sqrt, log-plus-one, erf, atan, expm1), not, clamp,
pad, dynamic-slice with constant starts and int -> float converts; with
random shapes and attributes. Like XLA's rand_*.hlo modules, but only ops the device lowers,
so every module is run through eval, opt -O1/-O2/-O3 and check for trn1
and trn2 and any difference is a bug.
"""
import random
import sys

INT = ["s8", "s16", "s32", "u8", "u16", "u32"]
FLOAT = ["f32", "bf16", "f16"]


class Gen:
    def __init__(self, seed):
        self.r = random.Random(seed)
        self.lines = []
        self.comps = []
        self.n = 0
        self.params = []

    def name(self, base):
        self.n += 1
        return "%s.%d" % (base, self.n)

    def shape(self, t, dims):
        return "%s[%s]" % (t, ",".join(map(str, dims)))

    def emit(self, base, t, dims, rhs):
        nm = self.name(base)
        self.lines.append("  %s = %s %s" % (nm, self.shape(t, dims), rhs))
        return (nm, t, tuple(dims))

    def param(self, t, dims):
        k = len(self.params)
        v = self.emit("p", t, dims, "parameter(%d)" % k)
        self.params.append(v)
        return v

    def const_scalar(self, t):
        r = self.r
        if t in INT:
            lo = 0 if t.startswith("u") else -5
            val = str(r.randint(lo, 9))
        else:
            val = repr(r.choice([0.5, 1.0, -2.0, 3.0, 0.25]))
        return self.emit("c", t, [], "constant(%s)" % val)

    def bcast(self, v, dims):
        return self.emit("b", v[1], dims, "broadcast(%s), dimensions={}" % v[0])

    def leaf(self, t, dims):
        r = self.r
        k = r.random()
        if k < 0.6:
            return self.param(t, dims)
        if k < 0.8 or not dims:
            c = self.const_scalar(t)
            return self.bcast(c, dims) if dims else c
        d = r.randrange(len(dims))
        it = "s32" if t in FLOAT else t
        v = self.emit("iota", it, dims, "iota(), iota_dimension=%d" % d)
        return v if it == t else self.emit("cv", t, dims, "convert(%s)" % v[0])

    def reducer(self, t, op):
        nm = "%s_%s_%d" % (op, t, len(self.comps))
        self.comps.append("%s {\n  a = %s[] parameter(0)\n  b = %s[] parameter(1)\n  ROOT r = %s[] %s(a, b)\n}\n"
                          % (nm, t, t, t, op))
        return nm

    def value(self, t, dims, depth):
        """A random expression of type t and shape dims."""
        r = self.r
        if depth <= 0 or r.random() < 0.15:
            return self.leaf(t, dims)
        isint = t in INT
        if r.random() < 0.2:
            return self.more(t, dims, depth)
        k = r.random()
        if k < 0.35:
            a = self.value(t, dims, depth - 1)
            b = self.value(t, dims, depth - 1)
            ops = ["add", "subtract", "multiply", "maximum", "minimum"]
            if isint:
                ops += ["divide", "remainder", "and", "or", "xor", "shift-left",
                        "shift-right-logical", "shift-right-arithmetic"]
            op = r.choice(ops)
            return self.emit(op.split("-")[0], t, dims, "%s(%s, %s)" % (op, a[0], b[0]))
        if k < 0.5:
            a = self.value(t, dims, depth - 1)
            ops = ["negate", "abs"] if isint or t == "f32" else ["negate", "abs"]
            op = r.choice(ops)
            return self.emit(op, t, dims, "%s(%s)" % (op, a[0]))
        if k < 0.58:
            a = self.value(t, dims, depth - 1)
            b = self.value(t, dims, depth - 1)
            d = r.choice(["EQ", "NE", "LT", "LE", "GT", "GE"])
            c = self.emit("cmp", "pred", dims, "compare(%s, %s), direction=%s" % (a[0], b[0], d))
            x = self.value(t, dims, depth - 1)
            y = self.value(t, dims, depth - 1)
            return self.emit("sel", t, dims, "select(%s, %s, %s)" % (c[0], x[0], y[0]))
        if k < 0.64 and isint:
            src = r.choice(INT)
            a = self.value(src, dims, depth - 1)
            return self.emit("cvt", t, dims, "convert(%s)" % a[0])
        if k < 0.72 and dims:
            # reduce over an extra dimension
            extra = r.randint(1, 6)
            pos = r.randint(0, len(dims))
            full = list(dims[:pos]) + [extra] + list(dims[pos:])
            a = self.value(t, full, depth - 1)
            op = r.choice(["add", "maximum", "minimum"] + (["multiply"] if isint else []))
            init = self.const_scalar(t) if op in ("add", "multiply") and isint else None
            if init is None:
                ival = {"add": "0", "multiply": "1"}.get(op)
                if ival is None:
                    ival = ("-inf" if op == "maximum" else "inf") if not isint else (
                        ("0" if t.startswith("u") else str(-(1 << (int(t[1:]) - 1)))) if op == "maximum"
                        else str((1 << int(t[1:])) - 1 if t.startswith("u") else (1 << (int(t[1:]) - 1)) - 1))
                init = self.emit("init", t, [], "constant(%s)" % ival)
            comp = self.reducer(t, op)
            return self.emit("red", t, dims, "reduce(%s, %s), dimensions={%d}, to_apply=%s"
                             % (a[0], init[0], pos, comp))
        if k < 0.78 and len(dims) >= 2:
            perm = list(range(len(dims)))
            r.shuffle(perm)
            src = [0] * len(dims)
            for i, p in enumerate(perm):
                src[p] = dims[i]
            a = self.value(t, src, depth - 1)
            return self.emit("tr", t, dims, "transpose(%s), dimensions={%s}" % (a[0], ",".join(map(str, perm))))
        if k < 0.84 and dims:
            d = r.randrange(len(dims))
            grow = r.randint(0, 3)
            src = list(dims)
            src[d] += grow
            a = self.value(t, src, depth - 1)
            lo = r.randint(0, grow)
            sl = ",".join("[%d:%d]" % ((lo, lo + dims[i]) if i == d else (0, dims[i])) for i in range(len(dims)))
            return self.emit("sl", t, dims, "slice(%s), slice={%s}" % (a[0], sl))
        if k < 0.88 and dims and dims[0] >= 2:
            cut = r.randint(1, dims[0] - 1)
            a = self.value(t, [cut] + list(dims[1:]), depth - 1)
            b = self.value(t, [dims[0] - cut] + list(dims[1:]), depth - 1)
            return self.emit("cat", t, dims, "concatenate(%s, %s), dimensions={0}" % (a[0], b[0]))
        if k < 0.92 and dims:
            n = 1
            for x in dims:
                n *= x
            a = self.value(t, [n], depth - 1)
            return self.emit("rs", t, dims, "reshape(%s)" % a[0])
        if k < 0.95 and dims:
            d = r.randrange(len(dims))
            a = self.value(t, dims, depth - 1)
            return self.emit("rev", t, dims, "reverse(%s), dimensions={%d}" % (a[0], d))
        if k < 0.98 and t == "f32" and len(dims) == 2:
            kk = r.randint(1, 8)
            a = self.value(t, [dims[0], kk], depth - 1)
            b = self.value(t, [kk, dims[1]], depth - 1)
            return self.emit("dot", t, dims, "dot(%s, %s), lhs_contracting_dims={1}, rhs_contracting_dims={0}"
                             % (a[0], b[0]))
        if dims:
            keep = sorted(self.r.sample(range(len(dims)), self.r.randint(0, len(dims))))
            small = [dims[i] for i in keep]
            a = self.value(t, small, depth - 1)
            return self.emit("bc", t, dims, "broadcast(%s), dimensions={%s}" % (a[0], ",".join(map(str, keep))))
        return self.leaf(t, dims)

    def more(self, t, dims, depth):
        """The ops added second: float math, not/sign, clamp, pad,
        dynamic-slice with constant (possibly clamped) starts, int -> float
        converts."""
        r = self.r
        isint = t in INT
        k = r.random()
        if k < 0.35:
            a = self.value(t, dims, depth - 1)
            if isint:
                op = r.choice(["not", "sign", "negate"])
                return self.emit(op, t, dims, "%s(%s)" % (op, a[0]))
            op = r.choice(["tanh", "logistic", "sine", "cosine", "floor", "ceil", "sign",
                           "round-nearest-even", "round-nearest-afz", "exponential", "sqrt",
                           "log-plus-one", "erf", "atan", "exponential-minus-one"])
            if op in ("sqrt", "log-plus-one"):
                a = self.emit("abs", t, dims, "abs(%s)" % a[0])
            if op in ("exponential", "exponential-minus-one"):
                a = self.emit("tanh", t, dims, "tanh(%s)" % a[0])
            return self.emit(op.split("-")[0], t, dims, "%s(%s)" % (op, a[0]))
        if k < 0.5:
            a = self.value(t, dims, depth - 1)
            lo, hi = sorted([r.randint(-3, 6), r.randint(-3, 6)])
            if t.startswith("u"):
                lo, hi = abs(lo), abs(lo) + abs(hi)
            cl = self.emit("lo", t, [], "constant(%d)" % lo)
            ch = self.emit("hi", t, [], "constant(%d)" % hi)
            return self.emit("clamp", t, dims, "clamp(%s, %s, %s)" % (cl[0], a[0], ch[0]))
        if k < 0.65 and dims:
            lo = [r.randint(0, 2) for _ in dims]
            hi = [r.randint(-1, 2) for _ in dims]
            it = [r.randint(0, 1) for _ in dims]
            src = []
            for i, d in enumerate(dims):
                # d = lo + hi + n + (n - 1) * it, n >= 1
                n = (d - lo[i] - hi[i] + it[i]) // (1 + it[i])
                if n < 1:
                    lo[i], hi[i], it[i], n = 0, 0, 0, d
                hi[i] = d - lo[i] - n - (n - 1) * it[i]
                src.append(n)
            a = self.value(t, src, depth - 1)
            pv = self.const_scalar(t)
            cfg = "x".join("%d_%d_%d" % (lo[i], hi[i], it[i]) for i in range(len(dims)))
            return self.emit("pad", t, dims, "pad(%s, %s), padding=%s" % (a[0], pv[0], cfg))
        if k < 0.8 and dims:
            src = [d + r.randint(0, 3) for d in dims]
            a = self.value(t, src, depth - 1)
            idx = [self.emit("i", "s32", [], "constant(%d)" % r.randint(-1, 5)) for _ in dims]
            return self.emit("ds", t, dims, "dynamic-slice(%s, %s), dynamic_slice_sizes={%s}"
                             % (a[0], ", ".join(i[0] for i in idx), ",".join(map(str, dims))))
        if not isint:
            src = r.choice(INT)
            a = self.value(src, dims, depth - 1)
            return self.emit("cvt", t, dims, "convert(%s)" % a[0])
        return self.leaf(t, dims)

    def module(self):
        r = self.r
        nout = r.randint(1, 3)
        outs = []
        for _ in range(nout):
            t = r.choice(INT * 2 + FLOAT)
            rank = r.randint(0, 3)
            dims = [r.randint(1, 6) for _ in range(rank)]
            outs.append(self.value(t, dims, r.randint(1, 5)))
        body = "\n".join(self.lines)
        if len(outs) == 1:
            root = "  ROOT out = %s copy(%s)" % (self.shape(outs[0][1], outs[0][2]), outs[0][0])
        else:
            root = "  ROOT out = (%s) tuple(%s)" % (", ".join(self.shape(o[1], o[2]) for o in outs),
                                                  ", ".join(o[0] for o in outs))
        return "HloModule rand_%d\n\n%s\nENTRY main {\n%s\n%s\n}\n" % (
            self.seed, "\n".join(self.comps), body, root)


def module(seed):
    g = Gen(seed)
    g.seed = seed
    return g.module()


if __name__ == "__main__":
    if sys.argv[1] == "--batch":
        # gen_hlo.py --batch FIRST COUNT: COUNT modules from seed FIRST, each
        # framed by "@@ SEED BYTES" (tests/fuzz/diff_inproc.c reads them)
        first, count = int(sys.argv[2]), int(sys.argv[3])
        out = sys.stdout.buffer
        for s in range(first, first + count):
            b = module(s).encode()
            out.write(b"@@ %d %d\n" % (s, len(b)))
            out.write(b)
        out.flush()
    else:
        sys.stdout.write(module(int(sys.argv[1])))
