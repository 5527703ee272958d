/* backend/plan.c — the printable kernel plan: every kernel opens a block
 * (nx_l_plan_kernel: number, HLO instruction, kind) and records its
 * decisions as "key: value" lines, in the plan (tiling, loop nest, engines,
 * resident inputs) or in the memory plan (SBUF region, PSUM half, HBM
 * buffers). `nxcc compile --dump-lower=plan|memory` prints them
 * (docs/lowering.md, "Kernel plan"). Nothing is recorded unless a dump was
 * asked for. */
#include "backend/lower.h"

#include <stdarg.h>
#include <stdio.h>

static void header(nx_lower *L, FILE *f, const char *kind)
{
	const nx_inst *i = L->cur;
	fprintf(f, "kernel %d %s: %s (%s)\n", L->plan_n, kind, i ? i->name : "-", i ? nx_opcode_name(i->op) : "-");
}

void nx_l_plan_kernel(nx_lower *L, const char *kind)
{
	L->st.kernels++;
	L->plan_n++;
	L->plan_kind = kind;
	if (L->plan_f)
		header(L, L->plan_f, kind);
	if (L->mem_f) {
		header(L, L->mem_f, kind);
		if (L->last_slot >= 0)
			fprintf(L->mem_f, "  sbuf: region %d at %lld, %lld bytes per partition\n", L->last_slot,
			        (long long)L->last_off, (long long)L->last_bytes);
	}
	L->last_slot = -1;
}

static void line(FILE *f, const char *key, const char *fmt, va_list ap)
{
	fprintf(f, "  %s: ", key);
	vfprintf(f, fmt, ap);
	fputc('\n', f);
}

void nx_l_plan(nx_lower *L, const char *key, const char *fmt, ...)
{
	if (!L->plan_f)
		return;
	va_list ap;
	va_start(ap, fmt);
	line(L->plan_f, key, fmt, ap);
	va_end(ap);
}

void nx_l_mem(nx_lower *L, const char *key, const char *fmt, ...)
{
	if (!L->mem_f)
		return;
	va_list ap;
	va_start(ap, fmt);
	line(L->mem_f, key, fmt, ap);
	va_end(ap);
}
