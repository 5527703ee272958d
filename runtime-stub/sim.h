/* runtime-stub/sim.h — internal to the simulator. */
#ifndef NX_SIM_H
#define NX_SIM_H

#include "runtime-stub/rt.h"

typedef struct nx_sim {
	const nx_neff *n;
	const nx_target *t;
	uint8_t *hbm, *sbuf, *psum;
	bool sr;
	uint64_t rng;
	nx_diag *d;
	const char *where; /* "sg00/pe.bin: instruction 12" for messages */
	double *tmp[5];
	size_t tmpcap[5];
	uint64_t dma_bytes;
} nx_sim;

/* Executes the data effect of one instruction with the given loop indices.
 * Returns NX_OK or an input error in s->d. */
nx_status nx_sim_exec(nx_sim *s, const nx_insn *in, const int64_t *loop_idx, int depth);

#endif
