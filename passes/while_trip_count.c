/* passes/while_trip_count.c — writes the trip count of every counted while
 * loop (passes/loops.h) into its backend_config as XLA's trip-count
 * annotator does: backend_config={"known_trip_count":{"n":"N"}}. Loops that
 * already carry a backend_config keep it. Later passes and the backend
 * recompute the count; the annotation is for people reading `nxcc opt`. */
#include "passes/loops.h"
#include "passes/pass.h"

#include <string.h>

nx_status nx_pass_while_trip_count(nx_module *m, const nx_pass_ctx *ctx, bool *changed)
{
	for (int c = 0; c < m->ncomps; c++)
		for (int k = 0; k < m->comps[c]->ninsts; k++) {
			nx_inst *w = m->comps[c]->insts[k];
			if (w->op != NX_OP_WHILE)
				continue;
			nx_trip_count t = nx_while_trip_count(w);
			if (t.n < 0) {
				nx_pass_log(ctx, 2, "while-trip-count: %s: unknown (%s)", w->name, t.why);
				continue;
			}
			const char *bc = w->a.backend_config;
			if (bc && *bc && strcmp(bc, "{}") != 0)
				continue;
			w->a.backend_config = nx_arena_printf(&m->arena, "{\"known_trip_count\":{\"n\":\"%lld\"}}",
			                                      (long long)t.n);
			w->a.backend_config_raw = true;
			nx_pass_log(ctx, 2, "while-trip-count: %s: %lld trips", w->name, (long long)t.n);
			*changed = true;
		}
	return NX_OK;
}
