/* ir/verify/shape_infer.h — shape inference for every HLO opcode.
 *
 * nx_infer_shape returns the shape instruction i must have given its
 * operands, called computations and attributes, allocated in arena a. For
 * opcodes whose result is fixed by the instruction itself (parameter,
 * constant, broadcast, reshape, iota, convert, custom-call, rng, infeed, ...)
 * the declared shape is checked against what the operands allow and returned
 * as the answer. On invalid operands or attributes it returns NULL and fills
 * *d with "instruction 'name': <problem>" at i's source position. */
#ifndef NX_SHAPE_INFER_H
#define NX_SHAPE_INFER_H

#include "ir/ir.h"

nx_shape *nx_infer_shape(nx_arena *a, const nx_inst *i, nx_diag *d);

/* declared agrees with inferred: same element types, tuple structure, ranks
 * and dimension sizes; layouts and dynamic-dimension markers are ignored, and
 * an unbounded dimension ("?") on either side matches any size. */
bool nx_shape_infer_match(const nx_shape *declared, const nx_shape *inferred);

/* Number of participants in each group of a collective (all-gather,
 * reduce-scatter, all-to-all): from replica_groups, else from the module's
 * replica_count / num_partitions; 0 when it cannot be known. */
int64_t nx_collective_group_size(const nx_inst *i);

#endif
