/* ir/proto.c — placeholder until the HloModuleProto reader/writer lands. */
#include "ir/ir.h"

nx_module *nx_read_proto(const void *data, size_t len, const char *file, nx_diag *d)
{
	(void)data;
	(void)len;
	nx_diag_set(d, NX_ERR_INPUT, file, 0, 0, "HloModuleProto reader not implemented yet");
	return NULL;
}

void *nx_write_proto(const nx_module *m, size_t *len, nx_diag *d)
{
	(void)m;
	*len = 0;
	nx_diag_set(d, NX_ERR_INPUT, NULL, 0, 0, "HloModuleProto writer not implemented yet");
	return NULL;
}
