/* backend/kernels/row_loop.h — the row kernel's state, shared by its two
 * halves: row_body.c (what one tile computes: the body's values and
 * instructions, their SBUF slots and engines) and row_loop.c (the tiles:
 * loads, stages, stores, their queues, waits and order, the tile size).
 * Private to backend/kernels/row_*.c. docs/lowering.md, "Row kernels". */
#ifndef NX_ROW_LOOP_H
#define NX_ROW_LOOP_H

#include "backend/lower.h"

#define RW_MAX 64  /* body instructions */
#define RW_IO 16   /* row/stat inputs + outputs */

enum {
	V_ROWIN, V_STATIN, V_COLIN, V_SCIN, V_CONST, /* inputs */
	V_SBC, V_RB, V_CB, V_ALIAS,                  /* views */
	V_ROW, V_STAT, V_COL,                        /* computed (V_COL: a converted column, once) */
	V_CSUM,                                      /* a column sum (an output, accumulated in PSUM) */
};
enum { O_FULL, O_ROWSC, O_TSC, O_RED, O_ACTROW, O_NEG, O_IOTA, O_CSUM };

typedef struct rv {
	const nx_inst *i;
	int kind, a;    /* a: source value (views), -1 */
	nx_dtype dt;
	int pn;         /* parameter number */
	float imm;      /* constant value */
	int64_t off;    /* slot in a buffer set (rows, stats) or absolute (columns) */
	bool slot, out;
	bool mem;       /* V_CONST: read as an operand (a [128, 1] column set once) */
	int users;
	int pc;         /* V_CSUM: its first PSUM column (one per 128 columns of a row) */
} rv;

typedef struct rop {
	int kind, v;   /* value written */
	int o[3], no;  /* operands (values) */
	nx_lemap m;
	int alu;       /* O_ROWSC/O_TSC/O_RED: ALU op */
	bool rev;      /* O_ROWSC/O_TSC: scalar op src */
	int sc;        /* O_ROWSC/O_TSC/O_ACTROW: the scalar operand (value), or -1 for imm */
	float imm;
	int acc;       /* O_ACTROW: accumulator stat value, -1 */
	float init;    /* O_RED: init combined when not neutral */
	bool combine;
	nx_engine e;
	int stage;
} rop;

#define RW_ND 8 /* buffer sets at most */
#define RW_NB 64 /* tiles per loop body at most */
#define RW_NC 16 /* chunks per row at most (long rows) */

/* the kernel: its body (row_body.c) and its tiles (row_loop.c) */
typedef struct rk {
	nx_lower *L;
	int nv, nop;
	rv v[RW_MAX];
	rop op[RW_MAX * 2];
	int64_t R, C, kt, bufb, step;
	/* long rows (nc > 1): a tile is 128 rows x one chunk of a row, one
	 * row per partition; C is the chunk's width (the last chunk: cl), Cf
	 * the row's; reductions (whose results no op reads) carry their
	 * partial from each chunk's tile to the next; per-row outputs are
	 * stored by the row's last chunk */
	int64_t Cf, cl;
	int nc;
	bool chunkable;  /* the body allows chunks (nx_rw_build) */
	bool lone;       /* one reduction and nothing else */
	int chunk, pset; /* the tile being emitted: its chunk, the set of the chunk before */
	int64_t w;       /* its width (C or cl) */
	int nd, nb; /* buffer sets; tiles per loop body (a multiple of nd) */
	int nstage;
	nx_engine seng[RW_MAX * 2];
	int sidx[RW_MAX * 2], per[NX_ENG_COUNT];
	int idx[RW_NB][RW_MAX * 2]; /* signal of stage s of body tile b among its engine's in the body */
	int64_t loop_tiles;     /* tiles done by the loop (tails number on from here) */
	int64_t ntile;          /* tiles in all */
	bool ht;                /* small first and last transfers (body_kl, body_ks) */
	bool sep, io_shared;    /* layout: outputs kept off input slots / an output on one */
	int order[RW_NB * (RW_MAX * 2 + 2)][2]; /* the body's items in emission order (schedule) */
	nx_lsync tail_last[RW_NB + RW_NC + 2], tail_st[RW_NB + RW_NC + 2];
	int ld[RW_IO], nld, outs[RW_IO], nout;
	int otup[RW_IO];           /* outs[o]'s position in the fusion's result */
	/* column sums (reductions over the rows, e.g. bias gradients): PE
	 * adds each tile's rows into PSUM (against a ones column), the last
	 * stage of a tile; stored once after the tiles */
	int cs[RW_IO], cstup[RW_IO], ncs, sst; /* their values, result positions; the stage stores wait for */
	int64_t pbase;             /* their PSUM half's first byte */
	nx_lval *const *ext;
	nx_lval *out[RW_IO], *csout[RW_IO];
	/* DMAs: SP issues every load and store over all 16 queues, each piece
	 * of a transfer on the least busy queue so far (estimated); kl / ks
	 * pieces per input / output of a tile */
	int kl, ks, lv;
	double qload[NX_LQ];         /* estimated busy time per queue (the body's, then the tails') */
	bool rr;                     /* pieces kept to two counts per queue and kind (rcnt: so far) instead */
	int rcnt[3][NX_LQ];
	int8_t qmap[RW_NB][2][NX_LQ]; /* body tile b's loads (0) / stores (1): piece k's queue */
	int qpos[RW_NB][2][NX_LQ];   /* and the count on queue q after its last piece there (0: none) */
	int qcnt[NX_LQ], qreg[NX_LQ]; /* transfers per queue per body; the register advancing by it */
	int64_t base_q[NX_LQ], base_e[NX_ENG_COUNT];
	nx_lsync loads, stores, comp;
	nx_lsync colw;             /* the columns loaded (and converted) */
	bool cwait[NX_ENG_COUNT];  /* engine e waited for colw */
} rk;

/* engine clocks (GHz) of the estimates */
static const double clk_act = 1.4, clk_dve = 1.12, clk_pool = 1.4, clk_pe = 2.8;

/* Where DVE and POOL share the SBUF port they never run at once, so
 * POOL, the faster clock, takes every op of theirs it can run
 * (nx_rw_assign) in kernels of 4 full tiles or more of kt rows; smaller
 * ones, bound by latency rather than the port, keep DVE too (POOL often
 * still issues an earlier kernel's stores: mlp_single_case_2's [32, 10]
 * row kernels 5.5 -> 10.3 us on POOL alone) */
static inline bool port_pool(const rk *x, int64_t kt)
{
	return x->L->t->dve_pool_share_sbuf && x->R / (128 * kt) * x->nc >= 4;
}

/* the clock of the ops only DVE or POOL run at kt rows per partition */
static inline double clk_port(const rk *x, int64_t kt)
{
	return port_pool(x, kt) ? clk_pool : clk_dve;
}

/* row_body.c: classifies fusion f's body into x (false: outside the
 * subset) */
bool nx_rw_build(rk *x, const nx_lower *L, const nx_inst *f);
/* the slots of a buffer set for kt rows per partition (its bytes per
 * partition; *cols: the columns' bytes, once) */
int64_t nx_rw_layout(rk *x, int64_t kt, int64_t *cols);
/* estimated cycles of op o for a tile of x->kt rows; *only: 1 ACT only, 2
 * DVE/POOL only, 0 either */
double nx_rw_op_cycles(const rk *x, const rop *o, int *only);
/* long rows: the fewest chunks per row such that two buffer sets fit
 * SBUF (0: none) */
int nx_rw_chunks_min(rk *x, int64_t half);
/* chunks of a row of x->Cf: nc of width C, the last cl */
bool nx_rw_set_chunks(rk *x, int nc);
/* engines and stages of the ops */
void nx_rw_assign(rk *x);
/* value k in buffer set b (rows: [np, kt, C], or row j; statistics) */
nx_ap nx_rw_vap(const rk *x, int k, int64_t np, int64_t kt, int b, int j, bool as_row);
/* op o for a tile of np partitions and kt rows in buffer set b */
void nx_rw_emit_op(rk *x, const rop *o, int64_t np, int64_t kt, int b);

#endif
