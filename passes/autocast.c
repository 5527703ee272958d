#include "passes/pass.h"
nx_status nx_pass_autocast(nx_module *m, const nx_pass_ctx *ctx, bool *changed)
{
	(void)m; (void)ctx; (void)changed;
	return NX_OK;
}
