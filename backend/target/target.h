/* backend/target/target.h — machine models: one table per target (docs/targets.md
 * lists every value with its source or marks it as an assumption). */
#ifndef NX_TARGET_H
#define NX_TARGET_H

#include "backend/target/isa.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct nx_target {
	const char *name;         /* trn1, trn1n, inf2, trn2 */
	const char *core;         /* NeuronCore-v2, NeuronCore-v3 */
	int cores_per_chip;
	int partitions;           /* SBUF/PSUM partitions */
	int64_t sbuf_partition_bytes;
	int64_t psum_partition_bytes;
	int psum_banks;           /* per partition */
	int64_t psum_bank_bytes;  /* per partition */
	int pe_rows, pe_cols;     /* systolic array: max K, max M */
	int matmul_max_n;         /* moving free size: one PSUM bank of fp32 */
	double freq_ghz[NX_ENG_COUNT];
	double pe_tflops_bf16, pe_tflops_fp8, pe_tflops_fp32;
	double pe_fp32_factor;    /* matmul cycles x this for fp32 inputs */
	double pe_fp8_factor;     /* matmul cycles x this for fp8 inputs (0.5 = double rate) */
	int mm_min_cycles;        /* MM_INIT_LATENCY */
	int min_ii[NX_ENG_COUNT]; /* minimum cycles per data-path instruction */
	int access_overhead[NX_ENG_COUNT]; /* static SBUF/PSUM access overhead, cycles */
	double engine_stride_factor; /* SBUF/PSUM interface bandwidth factor when an operand's
	                              * innermost stride exceeds 16 bytes */
	bool dve_pool_share_sbuf; /* VectorE and GpSimdE cannot access SBUF in parallel */
	bool dve_act_share_psum;  /* VectorE and ScalarE cannot access PSUM in parallel */
	int ctrl_cycles;          /* a control instruction on a sequencer */
	int act_reduce_cycles;    /* ActReadAccumulator */
	int64_t hbm_bytes;        /* per core */
	double hbm_gbps;          /* per core, GB/s */
	int dma_engines;          /* per core */
	double dma_gbps;          /* per DMA engine (queue), GB/s = bytes per ns */
	double dma_fixed_ns;      /* per DMA transfer: semaphore wait to transfer start */
	double dma_knee_bytes;    /* bytes per partition at which a transfer reaches half its bandwidth */
	double dma_stride_factor; /* bandwidth factor when an innermost stride exceeds 16 bytes */
	double cc_fixed_ns;       /* per collective, single rank */
	double cc_link_gibps;     /* ring link between neighbouring ranks, GiB/s per direction */
	double cc_step_ns;        /* latency of one ring step (send, receive, sync) */
	int semaphores;           /* per core */
	int registers;            /* per sequencer */
	int vec_max_free_sbuf, vec_max_free_psum; /* free-size limit of DVE/ACT operands */
} nx_target;

/* NULL when name is not a target. */
const nx_target *nx_target_get(const char *name);
/* Names, NULL-terminated. */
extern const char *const nx_target_names[];

/* Cycles of one instruction on its engine (cost model of DESIGN.md section 5). */
double nx_target_cycles(const nx_target *t, const nx_insn *in);
/* Nanoseconds of one instruction (DMA: the fixed cost plus bytes over one
 * queue's bandwidth, scaled by the payload per partition and the stride
 * penalty; others: cycles / engine clock). docs/targets.md. */
double nx_target_ns(const nx_target *t, const nx_insn *in);
/* Shared on-chip RAM ports (docs/targets.md): an instruction holding one
 * runs after every earlier instruction on another engine that holds it. */
enum { NX_PORT_SBUF_DVE_POOL = 1, NX_PORT_PSUM_DVE_ACT = 2, NX_PORT_COUNT = 2 };
/* NX_PORT_* mask of the shared ports instruction in holds on target t. */
unsigned nx_target_ports(const nx_target *t, const nx_insn *in);
/* Bandwidth one DMA queue gets: its engine's, capped at its share of HBM. */
double nx_target_dma_queue_gbps(const nx_target *t);
/* Peak HBM traffic of one core through its DMA engines, GB/s: the engines'
 * aggregate capped by HBM (the memory roofline of --stats). */
double nx_target_dma_peak_gbps(const nx_target *t);

/* Nanoseconds of collective op (an NX_I_* CC instruction) over a group of
 * gsize ranks, each contributing src_bytes: a ring algorithm (all_reduce
 * 2(g-1) steps of src/g bytes, all_gather g-1 steps of src, reduce_scatter
 * g-1 steps of src/g, permute one step of src) plus cc_fixed_ns. */
double nx_target_cc_ns(const nx_target *t, int op, double src_bytes, int gsize);

#endif
