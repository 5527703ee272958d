/* backend/target/target.c — the machine tables. Sources (docs/targets.md):
 *  [A2] NKI "Trainium/Inferentia2 Architecture Guide" (trainium_inferentia2_arch)
 *  [A3] NKI "Trainium2 Architecture Guide" (trainium2_arch)
 *  [V2] "NeuronCore-v2 Architecture", [V3] "NeuronCore-v3 Architecture"
 *  [BW] NKI "DMA bandwidth guide" (nki/deep-dives/nki-dma-bandwidth-guide.rst)
 *  [DO] NKI "Introduction to DMA with NKI" (nki/about/nki-dma-overview)
 *  [ASM] assumption: no public source states the value. */
#include "backend/target/target.h"

#include <pthread.h>
#include <string.h>

#define KIB 1024LL
#define GIB (1024LL * 1024 * 1024)

static const nx_target v2_base = {
	.core = "NeuronCore-v2",
	.cores_per_chip = 2,                      /* [A2] 2 NeuronCores per device */
	.partitions = 128,                        /* [A2] */
	.sbuf_partition_bytes = 192 * KIB,        /* [A2] 24 MiB = 128 x 192 KiB */
	.psum_partition_bytes = 16 * KIB,         /* [A2] 2 MiB = 128 x 16 KiB */
	.psum_banks = 8,                          /* [A2] 8 banks per partition */
	.psum_bank_bytes = 2 * KIB,               /* [A2] 512 fp32 per bank */
	.pe_rows = 128, .pe_cols = 128,           /* [A2] 128x128 systolic array */
	.matmul_max_n = 512,                      /* [A2] moving free size <= 512 */
	/* PE 2.8, DVE 1.12, ACT 1.4, POOL 1.4 [A2]; SP clock [ASM] = ACT's */
	.freq_ghz = {2.8, 1.4, 1.12, 1.4, 1.4},
	.pe_tflops_bf16 = 92, .pe_tflops_fp8 = 92, .pe_tflops_fp32 = 23, /* [A2] */
	.pe_fp32_factor = 4.0,                    /* [A2] fp32 ~4x the bf16 cost */
	.pe_fp8_factor = 1.0,                     /* [A2] cFP8 at bf16 rate */
	.mm_min_cycles = 64,                      /* [A2] MM_INIT_LATENCY = 64 cycles */
	.min_ii = {0, 64, 64, 64, 0},             /* [ASM] ~64-cycle minimum II (DESIGN.md) */
	.access_overhead = {0, 60, 60, 60, 0},    /* [A2] ~60-cycle SBUF/PSUM access overhead */
	.engine_stride_factor = 0.5,              /* [A2] half the interface bandwidth for minor strides > 16 bytes */
	.dve_pool_share_sbuf = true,              /* [A2] VectorE and GpSimdE cannot access SBUF in parallel */
	.dve_act_share_psum = true,               /* [A2] VectorE and ScalarE cannot access PSUM in parallel */
	.ctrl_cycles = 8,                         /* [ASM] */
	.act_reduce_cycles = 64,                  /* [A2] ActReadAccumulator ~64 cycles */
	.hbm_bytes = 16 * GIB,                    /* [A2] 32 GiB per 2-core device */
	.hbm_gbps = 410,                          /* [A2] 820 GB/s per 2-core device */
	.dma_engines = 16,                        /* [A2][DO][BW] 16 DMA engines per core */
	.dma_gbps = 17,                           /* [BW] 17 B/ns achievable per engine on trn1 (272 GB/s per core) */
	.dma_fixed_ns = 1300,                     /* [BW] ~1,300 ns cross-engine semaphore to DMA start */
	.dma_knee_bytes = 256,                    /* [BW] < 256 B per partition overhead-bound, >= 2 KiB near peak */
	.dma_stride_factor = 0.5,                 /* [BW][A2] 50% bandwidth for minor strides > 16 bytes */
	.cc_fixed_ns = 10000,                     /* [ASM] */
	.cc_link_gibps = 50,                      /* [ASM] NeuronLink-v2 share per ring direction */
	.cc_step_ns = 2000,                       /* [ASM] one ring step: send, receive, sync */
	.semaphores = 256,                        /* [ASM] DESIGN.md table */
	.registers = NX_NREGS,                    /* [ASM] "a set of 32-bit registers" [A2] */
	.vec_max_free_sbuf = 65536,               /* [A2] 64K elements SBUF */
	.vec_max_free_psum = 4096,                /* [A2] 4K elements PSUM */
};

static nx_target trn1, trn1n, inf2, trn2;
static pthread_once_t ready = PTHREAD_ONCE_INIT;

static void init(void)
{
	trn1 = v2_base;
	trn1.name = "trn1";
	/* trn1n: same NeuronCore-v2 and HBM; only the network (EFA) differs. */
	trn1n = v2_base;
	trn1n.name = "trn1n";
	/* inf2: same NeuronCore-v2 device ([A2] covers Trainium and Inferentia2). */
	inf2 = v2_base;
	inf2.name = "inf2";
	trn2 = v2_base;
	trn2.name = "trn2";
	trn2.core = "NeuronCore-v3";
	trn2.cores_per_chip = 8;                   /* [A3] */
	trn2.sbuf_partition_bytes = 224 * KIB;     /* [A3] 28 MiB = 128 x 224 KiB */
	/* PE 2.4, DVE 0.96, ACT 1.2, POOL 1.2 [A3]; SP [ASM] = ACT */
	trn2.freq_ghz[NX_ENG_PE] = 2.4;
	trn2.freq_ghz[NX_ENG_DVE] = 0.96;
	trn2.freq_ghz[NX_ENG_ACT] = 1.2;
	trn2.freq_ghz[NX_ENG_POOL] = 1.2;
	trn2.freq_ghz[NX_ENG_SP] = 1.2;
	trn2.pe_tflops_bf16 = 79;                  /* [A3][V3] */
	trn2.pe_tflops_fp8 = 158;                  /* [A3] double-FP8 mode */
	trn2.pe_tflops_fp32 = 20;                  /* [A3] */
	trn2.pe_fp8_factor = 0.5;                  /* [A3] */
	trn2.hbm_bytes = 12 * GIB;                 /* [A3] 96 GiB per 8-core device */
	trn2.hbm_gbps = 362.5;                     /* [A3] 2.9 TB/s per 8-core device */
	trn2.dma_engines = 16;                     /* [A3] 128 DMA engines per device */
	trn2.dma_gbps = 23;                        /* [BW] 23 B/ns per engine on trn2 (368 GB/s per core) */
	trn2.dve_pool_share_sbuf = false;          /* [A3] VectorE and GpSimdE access SBUF in parallel */
	trn2.dve_act_share_psum = false;           /* [A3] VectorE and ScalarE access PSUM in parallel */
	trn2.cc_link_gibps = 100;                  /* [ASM] NeuronLink-v3 share per ring direction */
}

const char *const nx_target_names[] = {"trn1", "trn1n", "inf2", "trn2", NULL};

const nx_target *nx_target_get(const char *name)
{
	pthread_once(&ready, init);
	if (!name)
		return NULL;
	if (strcmp(name, "trn1") == 0)
		return &trn1;
	if (strcmp(name, "trn1n") == 0)
		return &trn1n;
	if (strcmp(name, "inf2") == 0)
		return &inf2;
	if (strcmp(name, "trn2") == 0)
		return &trn2;
	return NULL;
}

static double max2(double a, double b)
{
	return a > b ? a : b;
}

static double min2(double a, double b)
{
	return a < b ? a : b;
}

static uint64_t elems(const nx_ap *a)
{
	return a->space == NX_MEM_NONE ? 0 : nx_ap_free_elems(a);
}

/* an innermost stride above 16 bytes (element-wise gathers, transposing
 * loads) */
static bool strided(const nx_ap *a)
{
	if (a->space == NX_MEM_NONE || a->ndims == 0 || a->dtype >= NX_DT_COUNT)
		return false;
	int d = a->ndims - 1;
	int64_t s = a->stride[d] < 0 ? -(int64_t)a->stride[d] : a->stride[d];
	return a->count[d] > 1 && s * nx_dtype_bytes[a->dtype] > 16;
}

/* the rate of an engine's SBUF/PSUM interfaces: halved when any on-chip
 * operand has an innermost stride above 16 bytes [A2] */
static double engine_rate(const nx_target *t, const nx_insn *in)
{
	for (int a = 0; a < nx_isa_table[in->op].nap; a++)
		if ((in->ap[a].space == NX_MEM_SBUF || in->ap[a].space == NX_MEM_PSUM) && strided(&in->ap[a]))
			return t->engine_stride_factor;
	return 1.0;
}

unsigned nx_target_ports(const nx_target *t, const nx_insn *in)
{
	if (in->op >= NX_I_COUNT || in->engine >= NX_ENG_COUNT)
		return 0;
	nx_cost_id c = nx_isa_table[in->op].cost;
	if (c == NX_COST_CTRL || c == NX_COST_DMA || c == NX_COST_CC)
		return 0; /* sequencer work, or the DMA queues' own path */
	bool sbuf = false, psum = false;
	for (int a = 0; a < nx_isa_table[in->op].nap; a++) {
		sbuf = sbuf || in->ap[a].space == NX_MEM_SBUF;
		psum = psum || in->ap[a].space == NX_MEM_PSUM;
	}
	unsigned m = 0;
	if (sbuf && t->dve_pool_share_sbuf && (in->engine == NX_ENG_DVE || in->engine == NX_ENG_POOL))
		m |= NX_PORT_SBUF_DVE_POOL;
	if (psum && t->dve_act_share_psum && (in->engine == NX_ENG_DVE || in->engine == NX_ENG_ACT))
		m |= NX_PORT_PSUM_DVE_ACT;
	return m;
}

double nx_target_cycles(const nx_target *t, const nx_insn *in)
{
	if (in->op >= NX_I_COUNT)
		return 0;
	int e = in->engine < NX_ENG_COUNT ? in->engine : 0;
	double fixed = t->access_overhead[e], ii = t->min_ii[e], rate = engine_rate(t, in);
	switch (nx_isa_table[in->op].cost) {
	case NX_COST_CTRL:
		return t->ctrl_cycles;
	case NX_COST_MATMUL: {
		/* max(min(64, M), N) per DESIGN.md; M = stationary free size
		 * (transpose: input free size), N = moving free size. */
		double m, n;
		int dt;
		if (in->op == NX_I_MATMUL) {
			m = (double)elems(&in->ap[1]);
			n = (double)elems(&in->ap[2]);
			dt = in->ap[2].dtype;
		} else {
			m = (double)elems(&in->ap[1]);
			n = in->ap[1].part_count;
			dt = in->ap[1].dtype;
		}
		double c = max2(min2(t->mm_min_cycles, m), n);
		if (dt == NX_DT_F32)
			c *= t->pe_fp32_factor;
		else if (dt == NX_DT_FP8E4M3 || dt == NX_DT_FP8E5M2)
			c *= t->pe_fp8_factor;
		return c;
	}
	case NX_COST_ACT: {
		double c = max2(64, (double)elems(&in->ap[1]) / rate) + fixed;
		if (in->ap[3].space != NX_MEM_NONE)
			c += t->act_reduce_cycles;
		return c;
	}
	case NX_COST_VEC1: {
		const nx_ap *src = in->ap[1].space != NX_MEM_NONE ? &in->ap[1] : &in->ap[0];
		return max2(ii, (double)elems(src) / rate) + fixed;
	}
	case NX_COST_VEC2: {
		double n = 0;
		for (int a = 1; a < 4; a++)
			n += (double)elems(&in->ap[a]);
		return max2(ii, n / rate) + fixed;
	}
	case NX_COST_XPART: /* [ASM] two passes over the input */
		return max2(ii, 2.0 * (double)elems(&in->ap[1]) / rate) + fixed;
	case NX_COST_DMA:
	case NX_COST_CC:
		return 0; /* time-based, see nx_target_ns */
	case NX_COST_GPSIMD: /* the launch; the simulator adds the kernel's measured work (docs/gpsimd.md) */
		return ii + fixed;
	}
	return 0;
}

double nx_target_dma_queue_gbps(const nx_target *t)
{
	return min2(t->dma_gbps, t->hbm_gbps / t->dma_engines);
}

double nx_target_dma_peak_gbps(const nx_target *t)
{
	return min2(t->dma_gbps * t->dma_engines, t->hbm_gbps);
}

double nx_target_ns(const nx_target *t, const nx_insn *in)
{
	if (in->op < NX_I_COUNT && nx_isa_table[in->op].cost == NX_COST_CC) {
		const nx_ap *s = &in->ap[1];
		double bytes = (double)s->part_count * (double)nx_ap_free_elems(s) * nx_dtype_bytes[s->dtype < NX_DT_COUNT ? s->dtype : 0];
		return t->cc_fixed_ns + bytes / nx_target_dma_queue_gbps(t);
	}
	if (in->op < NX_I_COUNT && nx_isa_table[in->op].cost == NX_COST_DMA) {
		/* fixed + bytes / (queue bandwidth x efficiency): efficiency by the
		 * payload per partition (half at dma_knee_bytes), halved for a
		 * strided innermost axis on either side [BW] */
		const nx_ap *s = &in->ap[1];
		double esz = nx_dtype_bytes[s->dtype < NX_DT_COUNT ? s->dtype : 0];
		double parts = s->part_count > 0 ? s->part_count : 1;
		double bytes = parts * (double)nx_ap_free_elems(s) * esz, bpp = bytes / parts;
		double eff = bpp / (bpp + t->dma_knee_bytes);
		if (strided(&in->ap[0]) || strided(&in->ap[1]))
			eff *= t->dma_stride_factor;
		if (bytes <= 0)
			return t->dma_fixed_ns;
		return t->dma_fixed_ns + bytes / (nx_target_dma_queue_gbps(t) * eff);
	}
	int e = in->engine < NX_ENG_COUNT ? in->engine : 0;
	return nx_target_cycles(t, in) / t->freq_ghz[e];
}

double nx_target_cc_ns(const nx_target *t, int op, double src_bytes, int gsize)
{
	double g = gsize > 1 ? gsize : 1, steps, bytes;
	switch (op) {
	case NX_I_ALL_REDUCE: steps = 2 * (g - 1), bytes = src_bytes / g; break;
	case NX_I_ALL_GATHER: steps = g - 1, bytes = src_bytes; break;
	case NX_I_REDUCE_SCATTER: steps = g - 1, bytes = src_bytes / g; break;
	default: steps = 1, bytes = src_bytes; break; /* permute: one hop */
	}
	if (gsize <= 1 && op != NX_I_COLLECTIVE_PERMUTE)
		steps = 0;
	return t->cc_fixed_ns + steps * (t->cc_step_ns + bytes / (t->cc_link_gibps * (double)GIB) * 1e9);
}
