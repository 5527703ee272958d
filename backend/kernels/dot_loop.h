/* backend/kernels/dot_loop.h — the dot-loop family's two schedules:
 * dot_loop.c (nx_l_dot_loop: the stationary schedule, a resident operand
 * per block or batch step, with its epilogues) hands a dot it cannot plan
 * to dot_kloop.c's K-block loop. */
#ifndef NX_BACKEND_KERNELS_DOT_LOOP_H
#define NX_BACKEND_KERNELS_DOT_LOOP_H

#include "backend/lower.h"

/* out = A . B per batch as the K-block loop nest (no batch of two levels) */
nx_status nx_l_dot_kloop(nx_lower *L, const nx_ldmat *A, const nx_ldmat *B, nx_lval *out, int64_t Bt, int64_t M,
                         int64_t K, int64_t N);

#endif
