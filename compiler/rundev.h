/* compiler/rundev.h — running a loaded .neff on host literals (nxcc run, check). */
#ifndef NX_RUNDEV_H
#define NX_RUNDEV_H

#include "runtime-stub/rt.h"

/* HLO type for a device dtype (s32 for S32, u8 for U8...). */
nx_type nx_rundev_type(nx_dtype t);
/* Input k of n as device bytes at out (n->inputs[k].bytes): l must have the
 * input's element count and a type whose device type is the input's. */
nx_status nx_rundev_input_bytes(const nx_neff *n, int k, const nx_literal *l, void *out, nx_diag *d);
/* Runs n with inputs in[k] (any literal type whose values fit the device
 * type). outs[k] gets a literal of out_types[k] (NULL: the device types) in a. */
nx_status nx_rundev(const nx_neff *n, nx_literal *const *in, const nx_type *out_types, nx_arena *a,
                    nx_literal **outs, const nx_rt_opts *o, nx_rt_stats *st, nx_diag *d);
/* Whether the host can hold a full run of nranks ranks of n (simulated
 * HBMs, inputs, outputs): an error suggesting --timing-only if not. */
nx_status nx_rundev_check_memory(const nx_neff *n, int nranks, nx_diag *d);
/* nranks ranks of n: in[r][k] rank r's inputs, outs[r][k] its outputs,
 * st[r] its statistics. */
nx_status nx_rundev_ranks(const nx_neff *n, int nranks, nx_literal *const *const *in, const nx_type *out_types,
                          nx_arena *a, nx_literal **const *outs, const nx_rt_opts *o, nx_rt_stats *st,
                          nx_diag *d);
/* Simulated time and busy/total per engine. */
void nx_rundev_print_stats(const nx_neff *n, const nx_rt_stats *st);
/* Several ranks: the slowest rank's time, then time and CC time per rank. */
void nx_rundev_print_ranks(const nx_neff *n, int nranks, const nx_rt_stats *st);

/* Writes the ranks' statistics as a JSON object to path (written to a
 * temporary name, then renamed: never a partial file). */
nx_status nx_rundev_write_stats_json(const char *path, const nx_neff *n, int nranks, const nx_rt_stats *st,
                                     bool timing_only, nx_diag *d);

#endif
