/* passes/canonicalize.h — the canonical forms canonicalize-dot and
 * canonicalize-conv produce, for passes that must not undo them. */
#ifndef NX_PASSES_CANONICALIZE_H
#define NX_PASSES_CANONICALIZE_H

#include "ir/ir.h"

/* lhs [batch..., M, K], rhs [batch..., K, N], batch dims first and in
 * order, exactly one contracting dim. */
bool nx_dot_is_canonical(const nx_inst *dot);
/* dim_labels b01f_01io->b01f. */
bool nx_conv_is_canonical(const nx_inst *conv);

#endif
