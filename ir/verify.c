/* ir/verify.c — placeholder until the verifier lands. */
#include "ir/ir.h"

nx_status nx_verify_module(const nx_module *m, nx_diag *d)
{
	(void)m;
	(void)d;
	return NX_OK;
}
