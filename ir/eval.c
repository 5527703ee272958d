/* ir/eval.c — placeholder until the evaluator core lands. */
#include "ir/eval.h"

#include <stdio.h>

nx_status nx_eval_error(nx_eval *ev, const nx_inst *i, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return nx_diag_set(ev->diag, NX_ERR_INPUT, NULL, i->line, i->col, "instruction '%s': %s", i->name, buf);
}
