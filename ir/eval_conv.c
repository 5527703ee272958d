/* ir/eval_conv.c — placeholder until this op family lands. */
#include "ir/eval.h"

nx_status nx_eval_convolution(nx_eval *ev, const nx_inst *i, nx_literal *const *ops, nx_literal **out)
{
	(void)ops;
	(void)out;
	return nx_eval_error(ev, i, "%s is not implemented in the evaluator yet", nx_opcode_name(i->op));
}

