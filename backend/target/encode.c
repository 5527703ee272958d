/* backend/target/encode.c — instruction streams to and from their binary form. */
#include "backend/target/isa.h"

#include <stdio.h>
#include <stdlib.h>

void nx_isa_encode_to(int engine, const nx_insn *insns, size_t n, uint8_t *b)
{
	memcpy(b, NX_ISA_MAGIC, 4);
	nx_put_le(b + 4, NX_ISA_VERSION, 4);
	nx_put_le(b + 8, (uint64_t)engine, 4);
	nx_put_le(b + 12, n, 4);
	for (size_t i = 0; i < n; i++)
		nx_isa_put_record(b + NX_ISA_STREAM_HEADER + i * NX_ISA_RECORD, &insns[i]);
}

void nx_isa_encode(int engine, const nx_insn *insns, size_t n, uint8_t **out, size_t *len)
{
	size_t sz = nx_isa_stream_bytes(n);
	uint8_t *b = malloc(sz);
	nx_isa_encode_to(engine, insns, n, b);
	*out = b;
	*len = sz;
}

int nx_isa_decode(const uint8_t *buf, size_t len, int *engine, nx_insn **insns, size_t *n,
                  char *err, size_t errlen)
{
	*insns = NULL;
	*n = 0;
	if (len < NX_ISA_STREAM_HEADER || memcmp(buf, NX_ISA_MAGIC, 4) != 0) {
		snprintf(err, errlen, "not an instruction stream (bad magic)");
		return -1;
	}
	uint32_t ver = (uint32_t)nx_get_le(buf + 4, 4), eng = (uint32_t)nx_get_le(buf + 8, 4);
	uint64_t cnt = nx_get_le(buf + 12, 4);
	if (ver != NX_ISA_VERSION) {
		snprintf(err, errlen, "instruction stream version %u, expected %d", ver, NX_ISA_VERSION);
		return -1;
	}
	if (eng >= NX_ENG_COUNT) {
		snprintf(err, errlen, "unknown engine %u", eng);
		return -1;
	}
	if ((len - NX_ISA_STREAM_HEADER) / NX_ISA_RECORD != cnt ||
	    (len - NX_ISA_STREAM_HEADER) % NX_ISA_RECORD != 0) {
		snprintf(err, errlen, "stream says %llu instructions but holds %zu bytes",
		         (unsigned long long)cnt, len);
		return -1;
	}
	nx_insn *v = calloc(cnt ? cnt : 1, sizeof *v);
	for (size_t i = 0; i < cnt; i++) {
		nx_isa_get_record(buf + NX_ISA_STREAM_HEADER + i * NX_ISA_RECORD, &v[i]);
		const char *why = nx_isa_check_record(&v[i], (int)eng);
		if (why) {
			if (v[i].op >= NX_I_COUNT)
				snprintf(err, errlen, "instruction %zu: unknown opcode %u", i, v[i].op);
			else
				snprintf(err, errlen, "instruction %zu (%s): %s", i,
				         nx_isa_table[v[i].op].name, why);
			free(v);
			return -1;
		}
	}
	*engine = (int)eng;
	*insns = v;
	*n = cnt;
	return 0;
}

static nx_ap mk(nx_mem m, nx_dtype t, int p0, int np, int64_t off, int ndims,
                const int32_t *stride, const uint32_t *count)
{
	nx_ap a;
	memset(&a, 0, sizeof a);
	a.space = (uint8_t)m;
	a.dtype = (uint8_t)t;
	a.ndims = (uint8_t)ndims;
	a.part_start = (uint16_t)p0;
	a.part_count = (uint16_t)np;
	a.offset = off;
	for (int d = 0; d < ndims && d < NX_AP_DIMS; d++) {
		a.stride[d] = stride[d];
		a.count[d] = count[d];
	}
	return a;
}

nx_ap nx_ap_sbuf(nx_dtype t, int p0, int np, int64_t off, int ndims, const int32_t *stride,
                 const uint32_t *count)
{
	return mk(NX_MEM_SBUF, t, p0, np, off, ndims, stride, count);
}

nx_ap nx_ap_psum(nx_dtype t, int p0, int np, int64_t off, int ndims, const int32_t *stride,
                 const uint32_t *count)
{
	return mk(NX_MEM_PSUM, t, p0, np, off, ndims, stride, count);
}

nx_ap nx_ap_hbm(nx_dtype t, int64_t off, int np, int64_t part_stride, int ndims,
                const int32_t *stride, const uint32_t *count)
{
	nx_ap a = mk(NX_MEM_HBM, t, 0, np, off, ndims, stride, count);
	a.part_stride = part_stride;
	return a;
}

nx_insn nx_insn_new(nx_isa_op op, nx_engine e)
{
	nx_insn in;
	memset(&in, 0, sizeof in);
	in.op = (uint16_t)op;
	in.engine = (uint8_t)e;
	in.debug_id = 0xffffffffu;
	if (op == NX_I_DMA || nx_isa_table[op].cost == NX_COST_CC)
		in.iarg[1] = -1;
	return in;
}
