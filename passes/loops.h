/* passes/loops.h — counted while loops (passes/trip_count.c).
 *
 * JAX's fori_loop/scan and XLA's own loops are counted: the state tuple
 * holds an integer induction variable i at some index k, initialised to a
 * constant K (operand k of the while's init tuple), the body's root tuple
 * puts i + S (S a constant, any sign) back at index k, and the condition's
 * root compares i with a constant N (i < N, i <= N, N > i, i != N, ...).
 * The trip count then follows in closed form, as XLA's while-loop analysis
 * finds it (it brute-forces other shapes; we do not). */
#ifndef NX_LOOPS_H
#define NX_LOOPS_H

#include "ir/ir.h"

typedef struct nx_trip_count {
	int64_t n;       /* trips; -1 when unknown */
	int index;       /* tuple index of the induction variable (-1 unknown) */
	int64_t init, step, bound;
	const char *why; /* when unknown: what did not match (static text) */
} nx_trip_count;

nx_trip_count nx_while_trip_count(const nx_inst *w);

/* The largest trips x body-instructions the while-unroll pass clones for one
 * loop; bigger counted loops are lowered as device loops (one copy of the
 * body, backend/lower_while.c). colabfold's 12-trip attention loops (<= 170
 * instructions) stay unrolled inside its 4-, 48- and 8-trip device loops. */
#define NX_UNROLL_MAX_INSTS 4096

#endif
