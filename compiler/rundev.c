/* compiler/rundev.c — host literals in and out of the simulated NeuronCore. */
#include "compiler/rundev.h"

#include "backend/backend.h"
#include "ir/eval/eval.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

nx_type nx_rundev_type(nx_dtype t)
{
	switch (t) {
	case NX_DT_F32: return NX_F32;
	case NX_DT_BF16: return NX_BF16;
	case NX_DT_F16: return NX_F16;
	case NX_DT_FP8E4M3: return NX_F8E4M3FN;
	case NX_DT_FP8E5M2: return NX_F8E5M2;
	case NX_DT_S32: return NX_S32;
	case NX_DT_U32: return NX_U32;
	case NX_DT_S16: return NX_S16;
	case NX_DT_U16: return NX_U16;
	case NX_DT_S8: return NX_S8;
	case NX_DT_S64: return NX_S64;
	case NX_DT_U64: return NX_U64;
	default: return NX_U8;
	}
}

nx_status nx_rundev_input_bytes(const nx_neff *n, int k, const nx_literal *l, void *out, nx_diag *d)
{
	const nx_rt_tensor *t = &n->inputs[k];
	int dt;
	if (nx_shape_elems(l->shape) * nx_dtype_bytes[t->dtype] != t->bytes)
		return nx_diag_set(d, NX_ERR_INPUT, NULL, 0, 0, "input %d (%s): %lld elements, the program wants %lld", k,
		                   t->name, (long long)nx_shape_elems(l->shape),
		                   (long long)(t->bytes / nx_dtype_bytes[t->dtype]));
	if (!nx_lower_literal_bytes(l, out, &dt) || dt != (int)t->dtype)
		return nx_diag_set(d, NX_ERR_INPUT, NULL, 0, 0, "input %d (%s): values do not fit the device type %s", k,
		                   t->name, nx_dtype_names[t->dtype]);
	return NX_OK;
}

static nx_status to_bytes(const nx_neff *n, nx_literal *const *in, void **ib, nx_diag *d)
{
	for (int k = 0; k < n->ninputs; k++) {
		const nx_rt_tensor *t = &n->inputs[k];
		ib[k] = calloc((size_t)t->bytes + 1, 1);
		if (!ib[k])
			return nx_diag_set(d, NX_ERR_INPUT, NULL, 0, 0, "input %d (%s): cannot allocate %lld bytes on the host",
			                   k, t->name, (long long)t->bytes);
		if (nx_rundev_input_bytes(n, k, in[k], ib[k], d) != NX_OK)
			return d->status;
	}
	return NX_OK;
}

static nx_literal *from_bytes(const nx_rt_tensor *t, nx_type ty, const uint8_t *b, nx_arena *a)
{
	nx_shape *s = nx_shape_array(a, ty, t->rank, t->dims);
	nx_literal *l = nx_literal_new(a, s);
	int64_t ne = nx_shape_elems(s);
	if (t->dtype == NX_DT_S64 || t->dtype == NX_DT_U64) { /* exact: not through a double */
		for (int64_t i = 0; i < ne; i++)
			nx_lit_set_u64(l, i, nx_get_le(b + 8 * i, 8));
		return l;
	}
	for (int64_t i = 0; i < ne; i++) {
		double v = nx_rt_load_elem(b + i * nx_dtype_bytes[t->dtype], t->dtype);
		if (nx_type_is_int(ty) || ty == NX_PRED)
			nx_lit_set_i64(l, i, (int64_t)v);
		else
			nx_lit_set_f64(l, i, v);
	}
	return l;
}

nx_status nx_rundev_check_memory(const nx_neff *n, int nranks, nx_diag *d)
{
	/* per rank: the input and output bytes, plus their literals (about as much) */
	int64_t io = 0;
	for (int k = 0; k < n->ninputs; k++)
		io += n->inputs[k].bytes;
	for (int k = 0; k < n->noutputs; k++)
		io += n->outputs[k].bytes;
	return nx_rt_check_host_memory(n, nranks, 2 * nranks * io, d);
}

nx_status nx_rundev_ranks(const nx_neff *n, int nranks, nx_literal *const *const *in, const nx_type *out_types,
                          nx_arena *a, nx_literal **const *outs, const nx_rt_opts *o, nx_rt_stats *st,
                          nx_diag *d)
{
	if ((!o || !o->timing_only) && nx_rundev_check_memory(n, nranks, d) != NX_OK)
		return d->status;
	nx_status rc = NX_OK;
	void ***ib = calloc((size_t)nranks, sizeof *ib), ***ob = calloc((size_t)nranks, sizeof *ob);
	const nx_neff **ns = calloc((size_t)nranks, sizeof *ns);
	for (int r = 0; r < nranks; r++) {
		ns[r] = n;
		ib[r] = calloc((size_t)n->ninputs + 1, sizeof **ib);
		ob[r] = calloc((size_t)n->noutputs + 1, sizeof **ob);
		if (rc == NX_OK)
			rc = to_bytes(n, in[r], ib[r], d);
		for (int k = 0; k < n->noutputs; k++) {
			ob[r][k] = calloc((size_t)n->outputs[k].bytes + 1, 1);
			if (!ob[r][k] && rc == NX_OK)
				rc = nx_diag_set(d, NX_ERR_INPUT, NULL, 0, 0, "output %d (%s): cannot allocate %lld bytes on the host",
				                 k, n->outputs[k].name, (long long)n->outputs[k].bytes);
		}
	}
	if (rc == NX_OK)
		rc = nx_rt_run_ranks(nranks, ns, (const void *const *const *)ib, (void *const *const *)ob, o, st, d);
	for (int r = 0; r < nranks; r++) {
		for (int k = 0; k < n->noutputs && rc == NX_OK; k++)
			outs[r][k] = from_bytes(&n->outputs[k], out_types ? out_types[k] : nx_rundev_type(n->outputs[k].dtype),
			                        ob[r][k], a);
		for (int k = 0; k < n->ninputs; k++)
			free(ib[r][k]);
		for (int k = 0; k < n->noutputs; k++)
			free(ob[r][k]);
		free(ib[r]);
		free(ob[r]);
	}
	free(ib);
	free(ob);
	free(ns);
	return rc;
}

nx_status nx_rundev(const nx_neff *n, nx_literal *const *in, const nx_type *out_types, nx_arena *a,
                    nx_literal **outs, const nx_rt_opts *o, nx_rt_stats *st, nx_diag *d)
{
	nx_literal *const *ins[1] = {in};
	nx_literal **const os[1] = {outs};
	return nx_rundev_ranks(n, 1, ins, out_types, a, os, o, st, d);
}

void nx_rundev_print_stats(const nx_neff *n, const nx_rt_stats *st)
{
	printf("simulated time: %.3f us on %s\n", st->total_ns / 1000.0, n->tgt->name);
	for (int e = 0; e < NX_ENG_COUNT; e++)
		printf("  %-4s busy %10.3f us / %10.3f us (%5.1f%%), %llu instructions executed\n", nx_engine_names[e],
		       st->busy_ns[e] / 1000.0, st->total_ns / 1000.0,
		       st->total_ns > 0 ? 100.0 * st->busy_ns[e] / st->total_ns : 0.0, (unsigned long long)st->insns[e]);
	printf("  dma  busy %10.3f us (all queues), %llu bytes\n", st->dma_busy_ns / 1000.0,
	       (unsigned long long)st->dma_bytes);
	double pw = 0;
	for (int e = 0; e < NX_ENG_COUNT; e++)
		pw += st->port_wait_ns[e];
	if (pw > 0) {
		printf("  port wait");
		for (int e = 0; e < NX_ENG_COUNT; e++)
			if (st->port_wait_ns[e] > 0)
				printf(" %s %.3f us", nx_engine_names[e], st->port_wait_ns[e] / 1000.0);
		printf(" (shared SBUF/PSUM ports)\n");
	}
}

void nx_rundev_print_ranks(const nx_neff *n, int nranks, const nx_rt_stats *st)
{
	if (nranks == 1) {
		nx_rundev_print_stats(n, st);
		if (st->cc_count)
			printf("  cc   %10.3f us in %llu collectives, %llu bytes\n", st->cc_ns / 1000.0,
			       (unsigned long long)st->cc_count, (unsigned long long)st->cc_bytes);
		return;
	}
	double mx = 0;
	for (int r = 0; r < nranks; r++)
		mx = st[r].total_ns > mx ? st[r].total_ns : mx;
	printf("simulated time: %.3f us on %s (slowest of %d ranks)\n", mx / 1000.0, n->tgt->name, nranks);
	for (int r = 0; r < nranks; r++)
		printf("  rank %-3d %10.3f us; cc %10.3f us in %llu collectives, %llu bytes\n", r, st[r].total_ns / 1000.0,
		       st[r].cc_ns / 1000.0, (unsigned long long)st[r].cc_count, (unsigned long long)st[r].cc_bytes);
}

static void json_rank(FILE *f, const nx_neff *n, const nx_rt_stats *st)
{
	fprintf(f, "{\"simulated_ns\": %.3f, \"engines\": {", st->total_ns);
	for (int e = 0; e < NX_ENG_COUNT; e++)
		fprintf(f, "%s\"%s\": {\"busy_ns\": %.3f, \"instructions\": %llu, \"port_wait_ns\": %.3f}", e ? ", " : "",
		        nx_engine_names[e], st->busy_ns[e], (unsigned long long)st->insns[e], st->port_wait_ns[e]);
	fprintf(f,
	        "},\n    \"dma\": {\"transfers\": %llu, \"bytes\": %llu, \"partition_rows\": %llu, \"busy_ns\": %.3f, "
	        "\"hbm_read_bytes\": %llu, \"hbm_write_bytes\": %llu, \"queue_busy_ns\": [",
	        (unsigned long long)st->dma_count, (unsigned long long)st->dma_bytes, (unsigned long long)st->dma_rows,
	        st->dma_busy_ns, (unsigned long long)st->hbm_read_bytes, (unsigned long long)st->hbm_write_bytes);
	for (int q = 0; q < n->tgt->dma_engines && q < NX_RT_MAX_QUEUES; q++)
		fprintf(f, "%s%.3f", q ? ", " : "", st->queue_busy_ns[q]);
	fprintf(f, "]},\n    \"pe_flops\": %.0f, \"pe_peak_ns\": %.3f, \"cc\": {\"count\": %llu, \"bytes\": %llu, \"ns\": %.3f}}",
	        st->pe_flops, st->pe_peak_ns, (unsigned long long)st->cc_count, (unsigned long long)st->cc_bytes,
	        st->cc_ns);
}

nx_status nx_rundev_write_stats_json(const char *path, const nx_neff *n, int nranks, const nx_rt_stats *st,
                                     bool timing_only, nx_diag *d)
{
	size_t len = strlen(path) + 32;
	char *tmp = malloc(len);
	snprintf(tmp, len, "%s.tmp%ld", path, (long)getpid());
	FILE *f = fopen(tmp, "w");
	if (!f) {
		free(tmp);
		return nx_diag_set(d, NX_ERR_IO, path, 0, 0, "cannot write the statistics");
	}
	double mx = 0;
	int64_t io = 0;
	for (int r = 0; r < nranks; r++)
		mx = st[r].total_ns > mx ? st[r].total_ns : mx;
	for (int k = 0; k < n->ninputs; k++)
		io += n->inputs[k].bytes;
	for (int k = 0; k < n->noutputs; k++)
		io += n->outputs[k].bytes;
	fprintf(f, "{\"format\": \"nxcc-run-stats/1\", \"target\": \"%s\", \"module\": \"", n->tgt->name);
	for (const char *p = n->module; *p; p++)
		if (*p != '"' && *p != '\\' && (unsigned char)*p >= 0x20)
			fputc(*p, f);
	const nx_target *t = n->tgt;
	fprintf(f, "\", \"timing_only\": %s, \"simulated_ns\": %.3f, \"io_bytes\": %lld,\n", timing_only ? "true" : "false",
	        mx, (long long)io);
	fprintf(f,
	        "  \"peak\": {\"pe_tflops_bf16\": %g, \"pe_tflops_fp8\": %g, \"pe_tflops_fp32\": %g, \"hbm_gbps\": %g, "
	        "\"dma_gbps\": %g, \"dma_fixed_ns\": %g},\n  \"dma_queues\": %d, \"ranks\": [\n    ",
	        t->pe_tflops_bf16, t->pe_tflops_fp8, t->pe_tflops_fp32, t->hbm_gbps, t->dma_gbps, t->dma_fixed_ns,
	        t->dma_engines);
	for (int r = 0; r < nranks; r++) {
		if (r)
			fprintf(f, ",\n    ");
		json_rank(f, n, &st[r]);
	}
	fprintf(f, "\n  ]\n}\n");
	bool ok = !ferror(f);
	ok = fclose(f) == 0 && ok;
	if (!ok || rename(tmp, path) != 0) {
		remove(tmp);
		free(tmp);
		return nx_diag_set(d, NX_ERR_IO, path, 0, 0, "cannot write the statistics");
	}
	free(tmp);
	return NX_OK;
}
