/* ir/eval_window.c — placeholder until this op family lands. */
#include "ir/eval.h"

nx_status nx_eval_reduce_window(nx_eval *ev, const nx_inst *i, nx_literal *const *ops, nx_literal **out)
{
	(void)ops;
	(void)out;
	return nx_eval_error(ev, i, "%s is not implemented in the evaluator yet", nx_opcode_name(i->op));
}

nx_status nx_eval_select_and_scatter(nx_eval *ev, const nx_inst *i, nx_literal *const *ops, nx_literal **out)
{
	(void)ops;
	(void)out;
	return nx_eval_error(ev, i, "%s is not implemented in the evaluator yet", nx_opcode_name(i->op));
}

