/* compiler/errors.c — the stable error code of a diagnostic (compiler/errors.h). */
#include "compiler/errors.h"

#include <string.h>

const char *nx_error_code(const nx_diag *d)
{
	static const char *const coded[] = {NX_E_ARG_UNKNOWN, NX_E_ARG_VALUE, NX_E_ARG_COMBO, NX_E_ARG_ENV,
	                                    NX_E_ARG_INPUTS, NX_E_INPUT, NX_E_IO, NX_E_CACHED_FAILURE,
	                                    NX_E_TRIAL, NX_E_PC_FAILED, NX_E_INTERNAL};
	for (size_t i = 0; d->msg && i < sizeof(coded) / sizeof(coded[0]); i++)
		if (strncmp(d->msg, coded[i], strlen(coded[i])) == 0)
			return coded[i];
	switch (d->status) {
	case NX_ERR_IO: return NX_E_IO;
	case NX_ERR_INTERNAL: return NX_E_INTERNAL;
	default: return NX_E_INPUT;
	}
}
