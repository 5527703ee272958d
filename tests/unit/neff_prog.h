/* tests/unit/neff_prog.h — hand-assembled programs for the backend tests. */
#ifndef NX_NEFF_PROG_H
#define NX_NEFF_PROG_H

#include "backend/target/isa.h"
#include "backend/target/neff.h"
#include "backend/target/target.h"
#include "runtime-stub/rt.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
	nx_insn v[NX_ENG_COUNT][256];
	size_t n[NX_ENG_COUNT];
} tp_streams;

static inline nx_insn *tp_add(tp_streams *s, nx_engine e, nx_isa_op op)
{
	nx_insn *in = &s->v[e][s->n[e]++];
	*in = nx_insn_new(op, e);
	return in;
}

static inline nx_ap tp_sb(nx_dtype t, int np, int64_t off, uint32_t nf)
{
	int32_t st[1] = {1};
	uint32_t c[1] = {nf};
	return nx_ap_sbuf(t, 0, np, off, 1, st, c);
}

static inline nx_ap tp_ps(int np, int64_t off, uint32_t nf)
{
	int32_t st[1] = {1};
	uint32_t c[1] = {nf};
	return nx_ap_psum(NX_DT_F32, 0, np, off, 1, st, c);
}

static inline nx_ap tp_hbm(nx_dtype t, int64_t off, int np, uint32_t nf, int64_t row)
{
	int32_t st[1] = {1};
	uint32_t c[1] = {nf};
	return nx_ap_hbm(t, off, np, row, 1, st, c);
}

static inline void tp_dma(tp_streams *s, nx_ap dst, nx_ap src, int queue, int sem)
{
	nx_insn *in = tp_add(s, NX_ENG_SP, NX_I_DMA);
	in->ap[0] = dst;
	in->ap[1] = src;
	in->iarg[0] = queue;
	in->iarg[1] = sem;
}

static inline void tp_wait(tp_streams *s, nx_engine e, int sem, int v)
{
	nx_insn *in = tp_add(s, e, NX_I_WAIT);
	in->iarg[0] = sem;
	in->iarg[1] = v;
}

static inline void tp_signal(tp_streams *s, nx_engine e, int sem, int v)
{
	nx_insn *in = tp_add(s, e, NX_I_SIGNAL);
	in->iarg[0] = sem;
	in->iarg[1] = v;
}

/* Serializes a program (tensors given by the caller) into a malloc'd .neff. */
static inline uint8_t *tp_neff(const tp_streams *s, const nx_neff_tensor *in, int nin,
                               const nx_neff_tensor *out, int nout, int64_t hbm, int nsems, size_t *len)
{
	nx_neff_program p;
	memset(&p, 0, sizeof p);
	p.module_name = "test";
	p.target = "trn1";
	p.n_cores = 1;
	p.inputs = in;
	p.ninputs = nin;
	p.outputs = out;
	p.noutputs = nout;
	p.hbm_size = hbm;
	p.nsems = nsems;
	for (int e = 0; e < NX_ENG_COUNT; e++) {
		p.streams[e] = s->v[e];
		p.nstream[e] = s->n[e];
	}
	static const char *names[] = {"dot.1", "exponential.2"};
	p.debug_names = names;
	p.ndebug = 2;
	uint8_t *b;
	nx_diag d = {0};
	if (nx_neff_write(&p, &b, len, &d) != NX_OK)
		return NULL;
	return b;
}

static inline nx_neff_tensor tp_tensor(const char *name, nx_dtype t, int64_t r, int64_t c, int64_t off)
{
	nx_neff_tensor x;
	memset(&x, 0, sizeof x);
	x.name = name;
	x.dtype = t;
	x.rank = 2;
	x.dims[0] = r;
	x.dims[1] = c;
	x.hbm_offset = off;
	x.alias_input = -1;
	return x;
}

#endif
