/* backend/lower.h — internal to the lowering (backend/lower*.c).
 *
 * Every HLO value lives in an HBM buffer. A kernel (one unfused instruction,
 * or one instruction of a fusion body) loads its operands into SBUF (SP
 * engine, DMA queues 0-7), computes on PE/ACT/DVE, and stores the result
 * (POOL engine, DMA queues 8-15). Semaphores 0-15 count completed DMAs per
 * queue (queues are FIFO, so a count names a prefix); 16+e counts kernels
 * finished on engine e. A sync point is the vector of counts to wait for.
 * See docs/lowering.md. */
#ifndef NX_LOWER_H
#define NX_LOWER_H

#include "backend/backend.h"
#include "backend/target/neff.h"
#include "ir/map.h"

#include <stdio.h>

/* Kernel families of backend/lower.def (NONE: not lowered). */
#define NX_LK_FAMILIES(X)                                                                              \
	X(NONE, "none") X(BUFFER, "buffer") X(ALIAS, "alias") X(ELEMENTWISE, "elementwise")            \
	X(ROWPROG, "row-program") X(DOT, "dot") X(REDUCE, "reduce") X(BROADCAST, "broadcast")          \
	X(TRANSPOSE, "transpose") X(DATA, "data-movement") X(IOTA, "iota") X(GATHER, "gather")         \
	X(UPDATE, "masked-update") X(RNG, "rng") X(FUSED, "fused") X(CUSTOM, "custom-call")           \
	X(COLLECTIVE, "collective") X(GPSIMD, "gpsimd")
enum {
#define X(e, n) NX_LK_##e,
	NX_LK_FAMILIES(X)
#undef X
	NX_LK_COUNT
};
_Static_assert(NX_LK_COUNT == 18, "kernel families: update the count with NX_LK_FAMILIES");
/* the family of op (lower.def), NX_LK_NONE when the backend does not lower it */
int nx_l_family(nx_opcode op);
const char *nx_l_family_name(int family);

#define NX_LQ 16                      /* DMA queues in use */
#define NX_LSEM_ENG NX_LQ             /* first engine semaphore */
#define NX_LSEMS (NX_LQ + NX_ENG_COUNT)
#define NX_LREGS 64                   /* SBUF regions tracked at once */

typedef struct nx_lsync {
	int64_t s[NX_LSEMS];
} nx_lsync;

typedef struct nx_lbuf {
	int64_t off, bytes;
	nx_lsync written; /* the data is complete */
	nx_lsync war;     /* reads (and writes) of earlier contents are complete */
	int refs;         /* live values using it */
	bool pinned;      /* parameter, constant or output: never reused */
	int fidx;         /* its index in the free list while free */
} nx_lbuf;

typedef struct nx_lval {
	nx_lbuf *buf;      /* arrays */
	nx_dtype dt;
	const nx_shape *shape;
	int ntuple;        /* tuples */
	struct nx_lval **tuple;
	/* SBUF copy its producer kernel left behind (the HBM buffer is written
	 * too): flat layout, element p*sb_F + f at partition p, byte sb_off +
	 * f*esz; valid while SBUF region sb_slot still has generation sb_gen
	 * (nx_l_resident). sb_gen 0: none. */
	int sb_slot;
	int64_t sb_gen, sb_off, sb_P, sb_F;
	nx_lsync sb_ready;
	/* A transpose read only by dots, not done yet (buf NULL): the value is
	 * tsrc permuted by transpose tinst; nx_l_view_of gives that strided
	 * view, so a dot loads its tiles straight from tsrc. */
	struct nx_lval *tsrc;
	const struct nx_inst *tinst;
} nx_lval;

typedef struct nx_lstream {
	nx_insn *v;
	size_t n, cap;
	int64_t waited[NX_LSEMS];
	int depth;
	int64_t mult[NX_LOOP_DEPTH + 1]; /* iterations of the enclosing loops */
} nx_lstream;


typedef struct nx_lent nx_lent;

/* Instructions per engine stream (gpt2_tp1 needs 403,525 on PE today, as
 * dots unroll per PSUM chunk). Loops keep most programs far below this;
 * a graph whose code would grow with tensor volume past it is refused with
 * a clear error instead of exhausting memory. */
#define NX_LOWER_MAX_INSNS (1 << 21)

typedef struct nx_lower {
	const nx_module *m;
	const nx_target *t;
	const bool *input_nonneg; /* per entry parameter, or NULL */
	nx_diag *d;
	nx_arena a;
	nx_lstream s[NX_ENG_COUNT];
	bool too_big;      /* a stream passed NX_LOWER_MAX_INSNS: the compile fails */
	nx_insn overflow;  /* where instructions past the limit go (never emitted) */
	int64_t qcount[NX_LQ];
	int64_t ecount[NX_ENG_COUNT];
	int qnext[2];
	/* instruction -> entry (resolution, value, liveness) */
	nx_lent *map;
	size_t mapcap, mapn;
	/* HBM */
	int64_t hbm_top;
	nx_lbuf **freel;
	int nfree, capfree;
	int64_t *freemax; /* max segment tree over freel[k]->bytes (2 * capfree): first fit in log time */
	nx_ptrmap fstart, fend; /* free blocks by start + 1 and end + 1: neighbours coalesce */
	/* on-chip: SBUF is a ring of kernel regions (slot k: [reg_off, reg_end),
	 * free when sbuf_free[k] is reached, generation reg_gen); a kernel's
	 * region is taken from the ring top, wrapping, and waits for the regions
	 * it overwrites. PSUM halves alternate between dot chunks. */
	nx_lsync sbuf_free[NX_LREGS], psum_free[2], sbuf_retired;
	int64_t reg_off[NX_LREGS], reg_end[NX_LREGS], reg_gen[NX_LREGS];
	int64_t ring_top, gen_next;
	/* bounds check (lower.c, check_sbuf): the bytes each region's kernel
	 * asked for, the first generation of the current node, and how far each
	 * stream has been checked (with its open loops' trip counts) */
	int64_t reg_req[NX_LREGS], node_gen0;
	nx_lsync reg_wait[NX_LREGS]; /* what a region's accesses must follow */
	/* what a region's free point must cover: DMA queue counts (need) and,
	 * per compute engine, the last accessing instruction (-1 none); the
	 * stream index of every signal per engine; DMA counts while checking */
	nx_lsync reg_need[NX_LREGS];
	int64_t reg_last[NX_LREGS][NX_ENG_COUNT];
	size_t *sig_idx[NX_ENG_COUNT], nsig[NX_ENG_COUNT], capsig[NX_ENG_COUNT];
	int64_t *sig_cnt[NX_ENG_COUNT]; /* the engine's count after each signal (all iterations) */
	int64_t chk_qc[NX_LQ];
	/* what each engine knows has completed (its waits, transitively through
	 * the sync points it waited for): kn now, klog from instruction `at` on;
	 * know[sem]: what reaching count `cnt` of a semaphore implies */
	nx_lsync kn[NX_ENG_COUNT];
	struct nx_lklog { size_t at; nx_lsync k; } *klog[NX_ENG_COUNT];
	size_t nklog[NX_ENG_COUNT], capklog[NX_ENG_COUNT], chk_klog[NX_ENG_COUNT];
	struct nx_lknow { int64_t cnt; nx_lsync k; } *know[NX_LSEMS];
	size_t nknow[NX_LSEMS], capknow[NX_LSEMS];
	size_t chk_pos[NX_ENG_COUNT];
	int chk_depth[NX_ENG_COUNT];
	int64_t chk_trip[NX_ENG_COUNT][NX_LOOP_DEPTH];
	int kidx, pidx;
	int64_t sbuf_half, sbuf_peak;
	struct nx_ldepi *epi; /* kernels/dot_epi.c: the epilogue for the next dot-loop (NULL none) */
	bool o3;           /* -O3: kernels search a wider plan space by their cost estimates */
	int node;          /* current node (program order) */
	const nx_inst *cur;
	uint32_t cur_debug;
	const char **debug;
	nx_neff_src *debug_src; /* parallel to debug */
	int ndebug, capdebug;
	nx_neff_tensor *consts;
	int nconsts, capconsts;
	nx_lower_stats st;
	/* collectives: replicas, the def.json replica-group table, CC count */
	int nreplicas;
	nx_neff_rgroup *rg;
	int nrg, caprg, ncc;
	nx_lbuf *rank_id; /* HBM word the runtime fills with the rank (replica-id) */
	/* the printable plan (plan.c): open streams when a dump was asked for */
	FILE *plan_f, *mem_f;
	int plan_n;
	const char *plan_kind;
	int last_slot; /* the SBUF region nx_l_sbuf_begin handed out last (-1 none) */
	int64_t last_off, last_bytes;
	struct nx_gs_list *gs; /* GpSimd kernels so far (backend/gpsimd/gs_lower.c) */
	/* the node being lowered writes its tuple element t (0: an array) into
	 * dest[t] when set: an aliased parameter's buffer (lower.c, in place) */
	nx_lbuf **dest;
	int ndest;
	/* device while loops (lower_while.c): open ones, and how many so far;
	 * once there is one, every wait adds register NX_LREG_ITER */
	int dloop_depth, ndloops;
	int64_t dloop_adv; /* how far NX_LREG_ITER has advanced at most, so far */
	struct nx_ldrows *dot_rows; /* the row epilogue the dot being lowered may apply (NULL: none) */
	/* the dot being lowered may store its result in the layout of its only
	 * reader, a transpose keeping the last dim (lower.c, lower_data.c):
	 * tout_i that transpose (NULL: none); tout_v its value, set when the
	 * dot wrote it (dot_out: the result's matrix view in it, for dot-loop) */
	const struct nx_inst *tout_i;
	struct nx_lval *tout_v;
	const struct nx_ldmat *dot_out;
	struct nx_ldcs *dot_cs; /* a column sum the dot being lowered may store beside its result (NULL: none) */
} nx_lower;

/* The register that holds a device while loop's iteration offset on every
 * engine (lower_while.c): the kernels' own loop registers stay below it. */
#define NX_LREG_ITER (NX_NREGS - 1)
/* the predicate of a data-dependent while loop (lower_while.c) */
#define NX_LREG_PRED (NX_NREGS - 2)

/* plan.c: a kernel's plan block (kind: "dot-loop", "elementwise", ...) and
 * its lines; nx_l_plan for tiling/loops/engines/residency, nx_l_mem for
 * SBUF/PSUM/HBM placement. */
void nx_l_plan_kernel(nx_lower *L, const char *kind);
void nx_l_plan(nx_lower *L, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void nx_l_mem(nx_lower *L, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* kernels/dot_loop.c: Bt matrices [R, C] in an HBM buffer, element (b, r, c)
 * at off + b*sb + r*sr + c*sc (elements). */
typedef struct nx_ldmat {
	nx_lbuf *buf;
	nx_dtype dt;
	int64_t off, sb, sr, sc;
	/* a batch of two levels (B2 > 0: B2 inner batches of stride sb, the
	 * outer ones of stride sb1), when the batch dims do not merge into one */
	int64_t B2, sb1;
} nx_ldmat;
/* out (contiguous [Bt, M, N]) = A [M, K] . B [K, N] per batch, as one loop
 * nest (code size independent of the sizes). With L->dot_out, the
 * stationary schedule stores into that view instead (column stride 1, its
 * batch levels those of A) and clears L->dot_out when it did; otherwise
 * out is written and L->dot_out stays. */
nx_status nx_l_dot_loop(nx_lower *L, const nx_ldmat *A, const nx_ldmat *B, nx_lval *out, int64_t Bt, int64_t M,
                        int64_t K, int64_t N);

/* kernels/dot_rows.c: a row epilogue the stationary dot-loop applies to
 * each evacuated PSUM tile when a tile holds whole rows of C (nt = N = C):
 * SOFTMAX, the row softmax of scale x; SOFTMAX_BWD, scale p (x - rowsum(x p))
 * with p (the fusion's parameter pk, value P: contiguous, the dot result's
 * shape) loaded per tile. nx_l_dot_rows_match: fusion f's root is one of
 * them of its parameter k (the dot). The dot loop reads L->dot_rows (set by
 * lower.c around the dot's node) and sets done when it applied it. */
enum { NX_DR_SOFTMAX = 1, NX_DR_SOFTMAX_BWD };
/* more dots the SOFTMAX_BWD dot computes (kernels/dot_sec.c): V = X^T . Y
 * per batch ([Bt, N, K']), X its P or (post) its result, Y [Bt, M, K']
 * another value (attention's dv = p^T . dctx and dk = ds^T . q beside
 * dp). lower.c finds them (nx_l_dot_sec_match), gives Y's value and names
 * V's when done; lower_data.c's dot loop sets val, O and Y
 * (nx_l_dot_sec_prep) around the dot. */
typedef struct nx_ldsec {
	const struct nx_inst *i, *tout; /* the dot; its transposing reader, whose layout it stores in (or NULL) */
	bool post;                       /* X is the epilogue's result, not P */
	nx_lval *yv;                     /* Y's value */
	nx_lval *val;                    /* the value written: i's, or tout's */
	nx_ldmat O, Y;                   /* V's view in it, Y's rows (the batch levels of A) */
	bool done;
	struct nx_ldsec *next; /* another one (NULL: none) */
} nx_ldsec;
typedef struct nx_ldrows {
	int kind;
	float scale;
	int64_t C;
	int pk;
	nx_lval *P;
	nx_ldsec *sec; /* SOFTMAX_BWD with P: the second dot it may compute (NULL: none) */
	bool done;
} nx_ldrows;
bool nx_l_dot_rows_match(const nx_inst *f, int k, nx_ldrows *r);
void nx_l_dot_rows_plan(nx_lower *L, const nx_ldrows *r, int64_t mt, int64_t nt);
/* SBUF bytes per partition beyond the statistics (64): P tiles per parity
 * and DVE's products per bank */
int64_t nx_l_dot_rows_bytes(const nx_ldrows *r, int64_t G, int64_t nt);
/* per tile: DVE the statistics of PSUM tile ps (p: its P tile) into the f32
 * [np, 1] slot at nb (tmp: an f32 [np, n] slot); ACT the result into o
 * (slots nb, sum, tmp); POOL (SOFTMAX_BWD) o *= p before the store */
void nx_l_dot_rows_stats(nx_lower *L, const nx_ldrows *r, nx_ap ps, nx_ap p, int64_t nb, int64_t tmp);
void nx_l_dot_rows_evac(nx_lower *L, const nx_ldrows *r, nx_ap o, nx_ap ps, int64_t nb, int64_t sum, int64_t tmp);
void nx_l_dot_rows_post(nx_lower *L, const nx_ldrows *r, nx_ap o, nx_ap p);

/* lower_dot.c, kernels/dot_cs.c: a column sum folded into a dot. A reduce-add
 * over the contracting dims of the dot's operand k (its kept dims in order:
 * the operand's free dims), init a scalar constant: per streamed tile, the
 * stationary dot-loop sums the tile's columns on PE (stationary the tile,
 * moving a ones column) and stores the sums as a second output. The driver
 * (lower.c) sets L->dot_cs around the dot; the dot loop makes out and sets
 * done when it stored them. nx_l_dot_cs_match: red (its init resolved
 * to init) is that column sum of dot's operand k, or of the value that
 * operand transposes (t, else NULL). */
typedef struct nx_ldcs {
	int k;
	float init;
	nx_dtype dt; /* the sums' */
	const nx_inst *red;
	nx_lval *out;
	bool done;
} nx_ldcs;
bool nx_l_dot_cs_match(const nx_inst *dot, int k, const nx_inst *red, const nx_inst *init, const nx_inst *t,
                       nx_ldcs *cs);

/* lower.c: streams, sync, buffers; nx_l_now: monotonic seconds (stage timings) */
double nx_l_now(void);
nx_insn *nx_l_emit(nx_lower *L, nx_engine e, nx_isa_op op);
void nx_l_wait(nx_lower *L, nx_engine e, const nx_lsync *y);
void nx_l_loop(nx_lower *L, nx_engine e, int64_t n);
void nx_l_endloop(nx_lower *L, nx_engine e);
/* A DMA issued by e (SP or POOL); returns its completion. nx_l_dma picks
 * the next queue of e's side (nx_l_queue); nx_l_dma_q uses queue q. Inside
 * loops the counts advance by the iterations. */
nx_lsync nx_l_dma(nx_lower *L, nx_engine e, nx_ap dst, nx_ap src);
nx_lsync nx_l_dma_q(nx_lower *L, nx_engine e, int q, nx_ap dst, nx_ap src);
/* An indirect DMA on SP (op NX_I_DMA_GATHER or NX_I_DMA_SCATTER, isa.def):
 * rows chosen by the indices idx at run time among `bound`, row_stride
 * bytes apart; flags NX_IF_* (NX_IF_DROP for a scatter). */
nx_lsync nx_l_dma_indexed(nx_lower *L, int op, nx_ap dst, nx_ap src, nx_ap idx, int64_t bound, int64_t row_stride,
                          int flags);
int nx_l_queue(nx_lower *L, nx_engine e);
/* Load queues of a loop kernel that splits the NX_LQ queues between its
 * loads (bl bytes per element, over all streams) and its nout stores (bs
 * bytes per element) by bytes: NX_LQ bl / (bl + bs) rounded, at least SP's
 * NX_LQ / 2 and leaving each store a queue of its own. */
int nx_l_load_queues(int64_t bl, int64_t bs, int nout);
/* PE: the column sums of np rows of w columns at SBUF offset roff (dt):
 * psum column pcol + 4*t (+)= rows[p, 128t .. 128t+127]^T . ones[p] per
 * column tile t (the ragged one last), ones: a column of np ones (dt);
 * flags on every matmul (NX_IF_START: the first of an accumulation) */
void nx_l_colsum_mm(nx_lower *L, nx_dtype dt, int64_t np, int64_t roff, int64_t w, int64_t ones, int64_t pcol,
                    uint32_t flags);
/* ACT: those sums of C columns, [128, C/128] in PSUM from pcol (the ragged
 * last column tile on C % 128 partitions), plus init, cast into dt at SBUF
 * offset out (column tile t at out + t * size of dt); init: the immediate,
 * or with init_off >= 0 the column of init_dt values at that SBUF offset */
void nx_l_colsum_finish(nx_lower *L, nx_dtype dt, int64_t out, int64_t pcol, int64_t C, float init, nx_dtype init_dt,
                        int64_t init_off);
nx_lsync nx_l_signal(nx_lower *L, nx_engine e);
/* signal semaphore sem += inc (inc <= 65535) from engine e: a device while
 * loop's padding (lower_while.c); counts and knowledge advance as for DMAs
 * and kernel signals */
void nx_l_signal_sem(nx_lower *L, nx_engine e, int sem, int64_t inc);
/* lower.c: lowers computation c (a while body) in program order with its
 * parameter bound to param; *root is its root's value (not released) */
nx_status nx_l_lower_comp(nx_lower *L, const nx_comp *c, nx_lval *param, nx_lval **root);
void nx_l_release_val(nx_lower *L, nx_lval *v);
/* Appends v's array leaves, depth first, to the growable *out (*n of *cap). */
void nx_l_leaves(nx_lval *v, nx_lval ***out, int *n, int *cap);
/* lower_while.c: a counted while loop as a device loop; refusal otherwise.
 * init_dies: the loop is the init's last reader (its buffers may be taken). */
nx_status nx_l_while(nx_lower *L, const nx_inst *i, nx_lval *init, bool init_dies, nx_lval **out);
/* Per-iteration synchronization inside loops: registers of engine e and a
 * wait for semaphore sem >= base + register r (r advanced by addreg in the
 * loop body, so iteration i waits for its own producer iteration). */
void nx_l_setreg(nx_lower *L, nx_engine e, int r, int64_t v);
void nx_l_addreg(nx_lower *L, nx_engine e, int r, int64_t v);
void nx_l_wait_rel(nx_lower *L, nx_engine e, int sem, int64_t base, int r);
void nx_l_max(nx_lsync *a, const nx_lsync *b);
nx_lbuf *nx_l_alloc(nx_lower *L, int64_t bytes);
void nx_l_release_buf(nx_lower *L, nx_lbuf *b); /* drops one reference */
/* lower_hbm.c: refuses a module with an unbounded dimension or one value
 * larger than the core's HBM, before anything is emitted */
nx_status nx_l_hbm_refuse_unplannable(nx_lower *L);
nx_lval *nx_l_newval(nx_lower *L, const nx_shape *s); /* with a fresh buffer */
/* The shape a value of HLO shape s has on the device: s, or for s64/u64
 * arrays u32[..., 2] (lo, hi words; 8 bytes per element in HBM). */
const nx_shape *nx_l_dev_shape(nx_lower *L, const nx_shape *s);
nx_status nx_l_err(nx_lower *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Starts a kernel's on-chip use: an SBUF region of `bytes` per partition (at
 * most half a partition) at *base; *half is its slot: wait for
 * L->sbuf_free[*half] before writing it, nx_l_sbuf_end records the kernel's
 * completion there. */
nx_status nx_l_sbuf_begin(nx_lower *L, int64_t bytes, int64_t *base, int *half);
/* a region of more than half the partition (up to nx_l_sbuf_big) for a
 * kernel whose plan gains from it: it overlaps the neighbouring kernels'
 * regions, so those do not run beside it */
nx_status nx_l_sbuf_begin_big(nx_lower *L, int64_t bytes, int64_t *base, int *half);
int64_t nx_l_sbuf_big(const nx_lower *L);
void nx_l_sbuf_end(nx_lower *L, int half, const nx_lsync *done);
/* The engines a loop kernel with these compute stages uses: SP (loads), POOL
 * (stores) and each stage's engine. */
void nx_l_kernel_engines(const nx_engine *stage, int nstage, bool used[NX_ENG_COUNT]);
/* A loop kernel's start: each engine it uses waits for SBUF half `half`. */
void nx_l_kernel_begin(nx_lower *L, int half, const bool used[NX_ENG_COUNT]);
/* A loop kernel's end: its nout outputs are written (and their buffers free
 * of its accesses) once its stores are done; its SBUF half once its loads,
 * stores and compute are. */
void nx_l_kernel_end(nx_lower *L, int half, nx_lval *const *out, int nout, const nx_lsync *loads,
                     const nx_lsync *stores, const nx_lsync *comp);
/* Residency: v's SBUF copy (region slot, address, flat [P, F], ready after
 * `ready`). nx_l_resident: the copy exists, is intact and has this layout
 * (P, F <= 0: any). A kernel that reads it calls nx_l_resident_read with its
 * completion so the region is not overwritten before. */
void nx_l_set_resident(nx_lower *L, nx_lval *v, int slot, int64_t off, int64_t P, int64_t F,
                       const nx_lsync *ready);
bool nx_l_resident(const nx_lower *L, const nx_lval *v, int64_t P, int64_t F);
void nx_l_resident_read(nx_lower *L, const nx_lval *v, const nx_lsync *done);

int64_t nx_l_div_le(int64_t n, int64_t cap); /* largest divisor of n <= cap */
/* x rounded up to a multiple of 64 bytes (SBUF and HBM placement) */
static inline int64_t nx_l_al64(int64_t x)
{
	return (x + 63) & ~(int64_t)63;
}
/* Chunk of a flat row of F elements: the largest divisor <= fmax, or when
 * that is below fmax / 4 (and below F), the smallest divisor above fmax. */
int64_t nx_l_chunk(int64_t F, int64_t fmax);

/* lower_check.c. nx_l_check_sbuf: SBUF accesses emitted since the last call
 * stay inside their regions' requests and follow what those regions wait for
 * (internal error otherwise); nx_l_check_free: region r's free point covers
 * every access made to it. Debug detectors (stderr): nx_l_check_hbm_races,
 * nx_l_check_onchip_races (NX_MEM_SBUF or NX_MEM_PSUM). The dead-store pass
 * keeps stores into the [lo, hi) byte ranges in keep. nx_l_know_at: what
 * reaching count v of semaphore k implies (NULL: nothing recorded). */
void nx_l_check_sbuf(nx_lower *L);
void nx_l_check_free(nx_lower *L, int r);
void nx_l_check_hbm_races(const nx_lower *L);
void nx_l_check_onchip_races(const nx_lower *L, int space);
void nx_l_drop_dead_stores(nx_lower *L, const int64_t (*keep)[2], int nkeep);
const nx_lsync *nx_l_know_at(const nx_lower *L, int k, int64_t v);

/* Loads src (whole value, flat [P, F] view, F split in L chunks of Fc) etc. */
typedef struct nx_ltile {
	int64_t n, P, F, Fc, Lc;
} nx_ltile;
nx_ltile nx_l_tile(int64_t n, int64_t fmax);
nx_ltile nx_l_tile_p(int64_t n, int64_t P, int64_t fmax); /* P partitions given (P | n) */
nx_ap nx_l_hbm_tile(const nx_lval *v, const nx_ltile *t);
nx_ap nx_l_sbuf_tile(nx_dtype dt, const nx_ltile *t, int64_t off, int64_t esz_slot);

/* The one DMA view type: a strided view of part of an HBM buffer, element
 * (i0..ir-1) at buf->off + (off + sum i_k*stride_k) * element size. */
typedef struct nx_lview {
	nx_lbuf *buf;
	nx_dtype dt;
	int rank;
	int64_t off;                                    /* elements */
	int64_t dims[NX_MAX_RANK], stride[NX_MAX_RANK]; /* elements */
} nx_lview;
/* v as a contiguous row-major view (off 0) */
nx_lview nx_l_view_of(const nx_lval *v);
/* Copies view src into the contiguous (row-major) buffer of dst, with cast. */
nx_status nx_l_copy_view(nx_lower *L, const nx_lview *src, nx_lval *dst);

/* lower_ops.c */
nx_status nx_l_elementwise(nx_lower *L, const nx_inst *i, nx_lval *const *ops, nx_lval *out);
nx_status nx_l_iota(nx_lower *L, const nx_inst *i, nx_lval *out);
nx_status nx_l_reduce(nx_lower *L, const nx_inst *i, nx_lval *const *ops, nx_lval *out);
nx_status nx_l_broadcast(nx_lower *L, const nx_inst *i, nx_lval *op, nx_lval *out);
nx_status nx_l_transpose(nx_lower *L, const nx_inst *i, nx_lval *op, nx_lval *out);
bool nx_l_elementwise_ok(const nx_inst *i);
/* The engine instruction of an elementwise op (as nx_l_elementwise emits it). */
typedef struct nx_lemap {
	nx_isa_op op;
	nx_engine e;
	int func, flags;
	float imm;
} nx_lemap;
bool nx_l_elem_map(const nx_inst *i, nx_lemap *m);

/* kernels/dot_epi.c: a dot epilogue, the elementwise region that reads a
 * dot's result, applied by the dot kernel to every evacuated output tile
 * before its store (docs/lowering.md, "Dot epilogue"). Values: 0 the dot's
 * result (the evacuated tile), then the nrow bias rows (N elements along
 * the result's last axis, resident in SBUF), the nstr streamed inputs (the
 * result's shape, loaded per tile), then op k's result. Every value has the
 * result's device type; op nop - 1 is the kernel's output. */
enum { NX_LEPI_IN = 4, NX_LEPI_OPS = 24, NX_LEPI_XO = 4 };
typedef struct nx_ldepi_op {
	nx_lemap m;   /* instruction, function, flags, immediate */
	int nops;
	int src[2];   /* operand values */
	nx_engine e;  /* DVE or POOL (the dot-loop's choice): per store group after the evacuation */
	/* an ACT op on streamed inputs only (x op immediate, x*x as square):
	 * with the ops on POOL, ACT runs it over the step's tiles before their
	 * evacuation, into pre buffer pbuf (>= 0) or in place into streamed
	 * input -pbuf - 1 (read by no later op) */
	bool act;
	int pbuf;
	bool evac; /* folded into the evacuation (evac_func): its value is the evacuated tile */
	/* a mid op: an ACT function after POOL's first ops (dot_epi.c
	 * mark_mid); lvl 1: the op reads a mid op's value (POOL's second pass
	 * over the step's groups); cslot >= 0: the value's step slot (a mid
	 * op's result, or a first-pass value a later pass reads) */
	bool mid, fold; /* fold: x * s folded into the mid op reading it (its scale) */
	int lvl, cslot;
	int xo; /* an output of a multi-output epilogue: its index among them (-1 none) */
} nx_ldepi_op;
typedef struct nx_ldepi {
	nx_dtype dt;
	int nrow, nstr, nop;
	nx_lval *row[NX_LEPI_IN], *str[NX_LEPI_IN];
	nx_ldepi_op op[NX_LEPI_OPS];
	int npbuf;     /* pre buffers ([G tiles of nt] per step parity) of the act ops */
	int nmid, ncarry; /* mid ops; step slots ([G tiles of nt], one parity) */
	/* a multi-output epilogue (a tuple root; nxo 0: one output, the last
	 * op): the dot's value, output dout, stored from the evacuated tiles,
	 * and nxo op values (op xo_op[j], output xo_tup[j], its value xout[j]),
	 * each computed into step slot ncarry + j (both parities) and stored */
	int nxo, dout;
	int xo_op[NX_LEPI_XO], xo_tup[NX_LEPI_XO];
	nx_lval *xout[NX_LEPI_XO];
	/* ACT evacuates the dot's tile as activate(evac_func, x * evac_scale)
	 * (-1: a copy); the evac ops are the first ones */
	int evac_func;
	float evac_scale;
	char desc[96]; /* the plan line, after the ops and their engine */
	bool used;     /* set by the dot kernel that applied it */
} nx_ldepi;
/* the first value of op k, of streamed input k, of bias row k */
#define NX_LEPI_OP(e, k) (1 + (e)->nrow + (e)->nstr + (k))
#define NX_LEPI_STR(e, k) (1 + (e)->nrow + (k))
#define NX_LEPI_ROW(e, k) (1 + (k))
/* SBUF bytes per partition of the epilogue's buffers for tiles of nt
 * columns, G tiles per step, gb per store group, N columns in all */
int64_t nx_l_epi_bytes(const nx_ldepi *e, int64_t G, int64_t gb, int64_t nt, int64_t N);
/* the act ops' pre buffers (both parities) for G tiles of nt columns */
int64_t nx_l_epi_pre_bytes(const nx_ldepi *e, int64_t G, int64_t nt);
/* engine eng's time for one store group [128, w] (the target model; POOL:
 * without the act ops), and ACT's for the act ops over w columns */
double nx_l_epi_ns(const nx_lower *L, const nx_ldepi *e, nx_engine eng, int64_t w);
double nx_l_epi_act_ns(const nx_lower *L, const nx_ldepi *e, int64_t w);
/* emits the ops on engine e over one group: dst / val[v] the operands'
 * access patterns (val[0] the evacuated tile, scratch for the ops from
 * `scratch`, w elements per partition apart); with pre, the act ops are
 * done and val holds their results */
void nx_l_epi_emit(nx_lower *L, const nx_ldepi *e, nx_engine eng, const nx_ap *val, nx_ap dst, int64_t scratch,
                   int64_t w, bool pre);
/* emits the act ops on ACT: val[v] the streamed inputs' access patterns
 * (the step's tiles), pre[j] pre buffer j's */
void nx_l_epi_emit_act(nx_lower *L, const nx_ldepi *e, const nx_ap *val, const nx_ap *pre);
/* with mid ops (on POOL): pass `pass` (0: the ops before the mid ops, 1:
 * after) over one group, carry[c] step slot c's access pattern for the
 * group; nx_l_epi_emit_mid: the mid ops on ACT (dst: the group's tile,
 * the root's place when it is a mid op) */
void nx_l_epi_emit_pass(nx_lower *L, const nx_ldepi *e, nx_engine eng, const nx_ap *val, nx_ap dst, int64_t scratch,
                        int64_t w, int pass, const nx_ap *carry);
void nx_l_epi_emit_mid(nx_lower *L, const nx_ldepi *e, const nx_ap *carry, nx_ap dst);
/* whether fusion f is a dot with its epilogue (lower_split.c made it), and
 * whether its operand k is read only by the dot; nx_l_dot_epi_ok: whether
 * the body is in the epilogue's subset (*e filled when e is not NULL) */
bool nx_l_is_dot_epi(const nx_inst *f);
bool nx_l_dot_epi_operand(const nx_inst *f, int k);
bool nx_l_dot_epi_ok(const nx_lower *L, const nx_inst *f, const nx_inst **dot, nx_ldepi *e);
/* lowers it: the dot-loop applies the epilogue; when the dot takes another
 * kernel, the region runs after it in place (nx_l_dot_epi_region) */
nx_status nx_l_dot_epi_fusion(nx_lower *L, const nx_inst *f, nx_lval *const *ops, nx_lval *out);
/* lower_split.c: f's body with its dot's value read as a parameter
 * (number f->noperands, after f's own): a fusion the fused loop takes */
const nx_inst *nx_l_dot_epi_region(nx_lower *L, const nx_inst *f);

/* the ALU operator of a reduce's computation (single add/multiply/max/min/
 * and/or of its parameters), -1 otherwise */
int nx_l_reduce_alu(const nx_inst *i);

/* kernels/stream.c: values beyond one SBUF half as one loop nest over
 * [128, rows] tiles: an elementwise op with <= 3 operands (nx_l_elem_map),
 * and a reduction of O contiguous rows of R (reduced axes last). */
nx_status nx_l_elementwise_loop(nx_lower *L, const nx_inst *i, nx_lval *const *ops, nx_lval *out);
nx_status nx_l_reduce_loop(nx_lower *L, const nx_inst *i, nx_lval *const *ops, nx_lval *out, int64_t O, int64_t R);
bool nx_l_reduce_row_fits(const nx_lower *L, nx_dtype in, nx_dtype out, int64_t R);
/* kernels/stream.c: [R, C] reduced over its rows (the reduced axes leading):
 * row tiles accumulated on DVE, one partition_all_reduce per column chunk.
 * nx_l_colreduce_ok: float data, R >= 128, the unrolled tiles capped. */
bool nx_l_colreduce_ok(const nx_lower *L, const nx_inst *i, nx_dtype in, nx_dtype out, int64_t R, int64_t C);
nx_status nx_l_colreduce(nx_lower *L, const nx_inst *i, nx_lval *const *ops, nx_lval *out, int64_t R, int64_t C);

/* kernels/fused_loop.c: a fusion of elementwise ops (parameters, one-
 * instruction ops, same-type reshapes/converts, all of one element count)
 * as one loop nest over tiles, for bodies beyond the fused kernel's SBUF. */
bool nx_l_fused_loop_ok(const nx_lower *L, const nx_inst *f);
nx_status nx_l_fused_loop(nx_lower *L, const nx_inst *f, nx_lval *const *ops, nx_lval *out);

/* kernels/row_loop.c: a fusion whose reductions run over the trailing axes
 * of R rows of C (softmax, layer norm) as one loop nest over row tiles
 * (nx_l_row_ok: the body is in its subset and a row fits SBUF); out is an
 * array or a tuple of fresh values. */
bool nx_l_row_ok(const nx_lower *L, const nx_inst *f);
nx_status nx_l_row(nx_lower *L, const nx_inst *f, nx_lval *const *ops, nx_lval *out);

/* lower_split.c: whether a fusion is one kernel (row loop, fused kernel or
 * fused loop); else nx_l_split_fusion splits it: the nodes to lower in its
 * place (its own heavy instructions, synthetic fusions of its elementwise
 * regions, their tuple elements, what no kernel took as it is) and the body
 * values they now stand for (from -> to). False: nothing to split. */
bool nx_l_fusion_whole(const nx_lower *L, const nx_inst *f);
typedef struct nx_lsplit {
	const nx_inst **node;
	int nnode;
	const nx_inst **from, **to;
	int nmap;
} nx_lsplit;
bool nx_l_split_fusion(nx_lower *L, const nx_inst *f, nx_lsplit *out);
/* whether i is one of the split's synthetic region fusions; a region read
 * only by fusion c (operand k) merged into it: a synthetic fusion one
 * kernel takes, or NULL */
bool nx_l_is_region(const nx_inst *i);
const nx_inst *nx_l_merge_region(nx_lower *L, const nx_inst *c, int k, const nx_inst *r);
/* fusion F's operand k, dot D, read elsewhere too: D and F as one dot
 * with a multi-output epilogue (root: F's outputs, then D), or NULL */
const nx_inst *nx_l_dot_multi(nx_lower *L, const nx_inst *F, int k, const nx_inst *D);
/* whether instruction i of a fusion body reaches the body's root (one of
 * c's own: true); a get-tuple-element of fusion f's element t */
bool nx_l_body_live(const nx_comp *c, const nx_inst *i);
/* fusion m (one kernel) of c reading a dot that c reads elsewhere too,
 * node *at of the nv nodes v (res: the driver's resolution), no live node
 * after it reading it: the dot with m as its multi-output epilogue
 * (nx_l_dot_multi; *dot the dot), or NULL */
const nx_inst *nx_l_dot_multi_at(nx_lower *L, const nx_comp *c, const nx_inst *const *v, int nv, const nx_inst *m,
                                 const nx_inst *(*res)(nx_lower *, const nx_inst *), int *at, const nx_inst **dot);
const nx_inst *nx_l_gte(nx_lower *L, const nx_inst *f, int t);

/* lower.c: a constant's pinned HBM buffer (data copied in before the run) */
nx_status nx_l_constant(nx_lower *L, const nx_inst *i, nx_lval **out);

/* lower_fused.c: a fusion lowered as one kernel (inputs loaded once, the body
 * computed in SBUF, only the result stored). nx_l_fused_ok says whether the
 * body is in the supported subset; otherwise the driver flattens the fusion. */
bool nx_l_fused_ok(const nx_lower *L, const nx_inst *fusion);
nx_status nx_l_fused(nx_lower *L, const nx_inst *fusion, nx_lval *const *ops, nx_lval *out);

/* lower_coll.c: ops[k] for every operand */
nx_status nx_l_collective(nx_lower *L, const nx_inst *i, nx_lval *const *ops, nx_lval **out);
nx_status nx_l_replica_id(nx_lower *L, const nx_inst *i, nx_lval **out);

/* lower_dot.c */
nx_status nx_l_dot(nx_lower *L, const nx_inst *i, nx_lval *const *ops, nx_lval *out);
/* A fused epilogue: the dot leaves its result in SBUF ([mt partitions,
 * MT*N], M tile mi at free offset mi*N) at res; emit computes on it (its own
 * SBUF `bytes` per partition at epi), stores the kernel's result and returns
 * the kernel's completion. */
typedef struct nx_ldot_epi {
	int64_t bytes;
	nx_status (*emit)(nx_lower *L, void *ctx, int half, int64_t res, int64_t epi, const nx_lsync *ready,
	                  nx_lsync *done);
	void *ctx;
} nx_ldot_epi;
nx_status nx_l_dot_epi(nx_lower *L, const nx_inst *i, nx_lval *const *ops, nx_lval *out, const nx_ldot_epi *epi);
/* PE transposes SBUF [P, F] (dtype sdt) at src into SBUF [F, P] (ddt) at dst
 * of region `slot`, through a PSUM half, after `after`; P, F <= 128. Returns
 * the completion of the copy out of PSUM (ACT). */
nx_lsync nx_l_transpose_sbuf(nx_lower *L, nx_dtype sdt, int64_t src, nx_dtype ddt, int64_t dst, int64_t P,
                             int64_t F, const nx_lsync *after, int slot);
/* A dot is lowered by nx_l_dot (chunks unrolled, operands and result
 * resident) when it has one PSUM chunk and fits an SBUF half, else by the
 * loop kernel (kernels/dot_loop.c); a fused dot epilogue takes up to this
 * many chunks. */
#define NX_LDOT_MAX_CHUNKS 8
int64_t nx_l_dot_chunks(const nx_lower *L, int64_t M, int64_t N);
/* Operand v as matrices: rows = its dims a[], cols = dims b[] (merged);
 * false when they do not merge into one stride each. */
bool nx_l_dot_mat(const nx_lval *v, int nbatch, const int64_t *a, int na, const int64_t *b, int nb, nx_ldmat *m);
/* the same with the batch dims in two groups, [0, split) and [split, nbatch) */
bool nx_l_dot_mat2(const nx_lval *v, int nbatch, int split, const int64_t *a, int na, const int64_t *b, int nb,
                   nx_ldmat *m);
/* lower_dot.c: whether dot d2 is x^T . Y per batch for the SOFTMAX_BWD
 * dot d (its lhs [.., M, K], x [.., M, N] its p or its result, resolved;
 * res: lower.c's resolve, through fusion parameters and roots); nx_l_dot_sec_prep: the second output's
 * value and view before the dot loop of L->dot_rows' dot (A's batch dims
 * split there, 0: one level); nx_l_dot_sec_end: its value released when
 * the dot loop did not compute it */
typedef const struct nx_inst *(*nx_l_res_fn)(nx_lower *L, const struct nx_inst *i);
bool nx_l_dot_sec_match(nx_lower *L, const struct nx_inst *d, const struct nx_inst *d2, const struct nx_inst *x,
                        nx_l_res_fn res);
void nx_l_dot_sec_prep(nx_lower *L, int nb, int split);
void nx_l_dot_sec_end(nx_lower *L);
/* lower_data.c: dot i's result [batch, M, N] as a matrix view into T, the
 * value of its transposing reader t (T NULL: whether it can) */
bool nx_l_tout_mat(const struct nx_inst *t, const struct nx_inst *i, int nb, int split, const nx_lval *T,
                   nx_ldmat *O);
/* whether nx_l_dot_loop takes operands with a two-level batch */
bool nx_l_dot_loop_b2_ok(nx_lower *L, const nx_ldmat *A, const nx_ldmat *B, nx_lval *out, int64_t Bt, int64_t M,
                         int64_t K, int64_t N);
/* M, N and the M tile of a dot without batch dims that the unrolled kernel
 * takes (false otherwise) */
bool nx_l_dot_dims(const nx_lower *L, const nx_inst *i, int64_t *M, int64_t *N, int64_t *mt);

/* lower.c: what the driver knows of a node (its value, liveness, the
 * pairings of lower_pair.c); nx_l_ent: i's entry (made on first use; the
 * map may move, so entries are not kept across calls), nx_l_resolve: i
 * through fusion parameters and roots */
struct nx_lent {
	const nx_inst *key;
	const nx_inst *res; /* resolved to (fusion param -> outer operand, fusion -> root) */
	nx_lval *val;
	int last_use;       /* node index; -1 none */
	bool output, dead;
	bool used;          /* read by a live node (dead code is not lowered) */
	bool nondot;        /* read by a live node other than a dot */
	/* a dot: the row fusion it may apply as its epilogue (its only reader;
	 * kernels/dot_rows.c), and what the dot loop did with it */
	const nx_inst *rows_f;
	nx_ldrows rows;
	nx_ldsec sec[2]; /* with SOFTMAX_BWD: the dots it may compute from p and from its result (dot_sec) */
	/* a batched dot: its only reader, a transpose keeping the last dim,
	 * whose layout it may store in (dot_tout); that transpose: the value
	 * its dot wrote (NULL: none, it transposes) */
	const nx_inst *tout;
	nx_lval *pre;
	nx_ldcs cs; /* a dot: the column sum it may store too (dot_cs; red NULL: none) */
};
nx_lent *nx_l_ent(nx_lower *L, const nx_inst *i);
const nx_inst *nx_l_resolve(nx_lower *L, const nx_inst *i);
/* lower_pair.c: the pairings over the n flattened nodes v, after liveness */
void nx_l_pair_dots(nx_lower *L, const nx_inst *const *v, int n);

#endif
