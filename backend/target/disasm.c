/* backend/target/disasm.c — the text form of instructions, one per line. It prints
 * every encoded field that is not at its default, so two different records
 * never print the same (tests rely on it). */
#include "backend/target/isa.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct {
	char *b;
	size_t n, len;
} sbuf;

static void put(sbuf *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(s->b + s->len, s->len < s->n ? s->n - s->len : 0, fmt, ap);
	va_end(ap);
	if (k > 0)
		s->len += (size_t)k;
}

static void put_ap(sbuf *s, const nx_ap *a)
{
	if (a->space == NX_MEM_NONE) {
		put(s, "_");
		return;
	}
	put(s, "%s.%s[%u:%u", nx_mem_names[a->space], a->dtype < NX_DT_COUNT ? nx_dtype_names[a->dtype] : "?",
	    a->part_start, a->part_start + a->part_count);
	if (a->part_stride)
		put(s, "/%" PRId64, a->part_stride);
	put(s, "]+%" PRId64 " [", a->offset);
	for (int d = 0; d < a->ndims && d < NX_AP_DIMS; d++)
		put(s, "%s%d:%u", d ? "," : "", a->stride[d], a->count[d]);
	put(s, "]");
	bool any = false;
	for (int d = 0; d < NX_LOOP_DEPTH; d++)
		any |= a->loop_stride[d] != 0;
	if (any) {
		put(s, "{");
		for (int d = 0; d < NX_LOOP_DEPTH; d++)
			put(s, "%s%" PRId64, d ? "," : "", a->loop_stride[d]);
		put(s, "}");
	}
}

void nx_isa_disasm(const nx_insn *in, char *buf, size_t n)
{
	sbuf s = {buf, n, 0};
	if (n)
		buf[0] = 0;
	if (in->op >= NX_I_COUNT) {
		put(&s, "<unknown opcode %u>", in->op);
		return;
	}
	const nx_isa_info *info = &nx_isa_table[in->op];
	/* synchronization and registers read as what they do */
	const char *dbg = in->debug_id != 0xffffffffu ? " #" : "";
	char id[16] = "";
	if (*dbg)
		snprintf(id, sizeof id, " #%u", in->debug_id);
	switch (in->op) {
	case NX_I_WAIT:
		put(&s, "wait s%d >= %d", in->iarg[0], in->iarg[1]);
		if (in->iarg[2] > 0)
			put(&s, "+r%d", in->iarg[2] - 1);
		if (in->iarg[3] > 0)
			put(&s, "+r%d", in->iarg[3] - 1);
		put(&s, "%s", id);
		return;
	case NX_I_SIGNAL:
		put(&s, "signal s%d += %d%s", in->iarg[0], in->iarg[1], id);
		return;
	case NX_I_SETREG:
		put(&s, "setreg r%d = %d%s", in->iarg[0], in->iarg[1], id);
		return;
	case NX_I_ADDREG:
		put(&s, "addreg r%d += %d%s", in->iarg[0], in->iarg[1], id);
		return;
	default:
		break;
	}
	put(&s, "%s", info->name);
	if (info->func_kind == NX_F_ACT)
		put(&s, ".%s", in->func < NX_ACT_COUNT ? nx_act_names[in->func] : "?");
	else if (info->func_kind == NX_F_ALU)
		put(&s, ".%s", in->func < NX_ALU_COUNT ? nx_alu_names[in->func] : "?");
	if (in->flags & NX_IF_START)
		put(&s, " start");
	if (in->flags & NX_IF_REVERSE)
		put(&s, " reverse");
	if (in->flags & NX_IF_DROP)
		put(&s, " drop");
	for (int a = 0; a < info->nap; a++) {
		put(&s, a == 0 ? " " : a == 1 ? " <- " : ", ");
		put_ap(&s, &in->ap[a]);
	}
	int ni = 4;
	while (ni > 0 && in->iarg[ni - 1] == 0)
		ni--;
	for (int i = 0; i < ni; i++)
		put(&s, "%s%d", i ? "," : " i=", in->iarg[i]);
	if (in->fimm[0] != 0 || in->fimm[1] != 0)
		put(&s, " f=%.9g,%.9g", (double)in->fimm[0], (double)in->fimm[1]);
	if (in->debug_id != 0xffffffffu)
		put(&s, " #%u", in->debug_id);
}

char *nx_isa_disasm_stream(const nx_insn *insns, size_t n)
{
	size_t cap = 256 + n * 512, len = 0;
	char *out = malloc(cap);
	out[0] = 0;
	int depth = 0;
	for (size_t i = 0; i < n; i++) {
		char line[1024];
		nx_isa_disasm(&insns[i], line, sizeof line);
		if (insns[i].op == NX_I_ENDLOOP && depth > 0)
			depth--;
		len += (size_t)snprintf(out + len, cap - len, "%6zu  %*s%s\n", i, 2 * depth, "", line);
		if (insns[i].op == NX_I_LOOP)
			depth++;
	}
	return out;
}
