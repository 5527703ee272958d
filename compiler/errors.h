/* compiler/errors.h — stable error codes (docs/errors.md has a section per
 * code; tests/e2e/errors_doc.sh checks that every code used here has one).
 *
 * A message that carries a code starts with it: "NXCC_EARG001: unknown flag
 * '--frobnicate' (did you mean '--framework'?)". Codes never change meaning;
 * a new kind of error gets a new number. */
#ifndef NX_ERRORS_H
#define NX_ERRORS_H

#include "ir/ir.h"

#define NX_E_ARG_UNKNOWN "NXCC_EARG001"  /* unknown flag */
#define NX_E_ARG_VALUE "NXCC_EARG002"    /* bad or missing flag value */
#define NX_E_ARG_COMBO "NXCC_EARG003"    /* flags that do not fit the target or each other */
#define NX_E_ARG_ENV "NXCC_EARG004"      /* NEURON_CC_FLAGS cannot be split or holds a non-flag word */
#define NX_E_ARG_INPUTS "NXCC_EARG005"   /* no input file, or more than one */
#define NX_E_INPUT "NXCC_EINP001"        /* bad input module or unsupported operation */
#define NX_E_IO "NXCC_EIO001"            /* a file could not be read or written */
#define NX_E_CACHED_FAILURE "NXCC_ECACHE001" /* an earlier compile of this module failed */
#define NX_E_TRIAL "NXCC_EPC001"         /* the trial run of the training command failed */
#define NX_E_PC_FAILED "NXCC_EPC002"     /* some graphs failed to compile */
#define NX_E_INTERNAL "NXCC_EINT001"     /* internal compiler error */

/* The code of a diagnostic: the one its message starts with, else one
 * chosen by its status (input, I/O, internal). */
const char *nx_error_code(const nx_diag *d);

#endif
