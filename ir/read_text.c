/* ir/read_text.c — placeholder until the HLO text reader lands. */
#include "ir/ir.h"

nx_module *nx_read_text(const char *text, size_t len, const char *file, nx_diag *d)
{
	(void)text;
	(void)len;
	nx_diag_set(d, NX_ERR_INPUT, file, 0, 0, "HLO text reader not implemented yet");
	return NULL;
}
