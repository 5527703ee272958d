/* ir/print.c — placeholder until the HLO printer lands. */
#include "ir/ir.h"

#include <string.h>
#include <stdlib.h>

char *nx_print_module(const nx_module *m, const nx_print_opts *o)
{
	(void)m;
	(void)o;
	return strdup("");
}

char *nx_print_inst(const nx_inst *i, const nx_print_opts *o)
{
	(void)o;
	return strdup(i->name);
}
