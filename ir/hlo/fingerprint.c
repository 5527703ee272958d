/* ir/hlo/fingerprint.c — the module fingerprint, the basis of the compile cache
 * key: XXH3-128 of the canonical HLO text (nx_print_module with
 * opts.canonical), printed as 32 lowercase hex characters.
 *
 * What the canonical text keeps, and so what changes the fingerprint:
 * structure (computations, instructions, operand order, called
 * computations, root), every shape with its layout, every semantic
 * attribute, constant values (bit-exact through the shortest round-trip
 * decimal), input/output aliases, entry layout, replica and partition
 * counts, unknown attributes verbatim, and also sharding and frontend
 * attributes: both steer compilation (partitioning; neff_input_names names
 * the executable's inputs), so two modules that differ only there must not
 * share a cache entry.
 *
 * What it drops: metadata, the module name, instruction and computation
 * names (replaced by positional ids), the order in which independent
 * instructions or computations were written (both are put in a post-order
 * from the root / entry), and the order of frontend attributes.
 *
 * The text depends on nothing but the module's content (no pointers, no
 * hash-table order), so the fingerprint is stable across runs and hosts. */
#include "ir/ir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

void nx_fingerprint(const nx_module *m, char out[33])
{
	nx_print_opts o = {.no_metadata = true, .canonical = true};
	char *text = nx_print_module(m, &o);
	XXH128_hash_t h = XXH3_128bits(text, strlen(text));
	free(text);
	snprintf(out, 33, "%016llx%016llx", (unsigned long long)h.high64,
	         (unsigned long long)h.low64);
}
