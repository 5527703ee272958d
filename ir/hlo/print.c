/* ir/hlo/print.c — HLO text printer: module header, computations, instructions
 * and their attributes, in the form XLA's HloModule::ToString writes (the
 * reader and XLA's parser both accept it; print -> read -> print is a fixed
 * point).
 *
 * Attribute order follows XLA: opcode-specific attributes, called
 * computations, sharding, frontend_attributes, control-predecessors,
 * metadata, backend_config; attributes the reader kept verbatim (a.unknown)
 * come last, in input order.
 *
 * The canonical form (nx_print_opts.canonical, used by the fingerprint)
 * replaces every name by a positional id (%c<k> for computations, %i<k> for
 * instructions within their computation, module name "m"), orders
 * computations and instructions by a post-order walk from the entry / root
 * so that renaming or reordering independent definitions does not change
 * it, sorts frontend attributes by key, and drops metadata. */
#include "ir/hlo/print_internal.h"
#include "ir/map.h"

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- context */

typedef struct {
	bool canonical, metadata;
	nx_ptrmap ids; /* canonical: instruction / computation -> positional id */
} pctx;

static void put_inst_name(nx_buf *b, const pctx *x, const nx_inst *i)
{
	if (x->canonical)
		nx_buf_printf(b, "%%i%d", (int)nx_ptrmap_get(&x->ids, i, -1));
	else
		nx_buf_printf(b, "%%%s", i->name);
}

static void put_comp_name(nx_buf *b, const pctx *x, const nx_comp *c)
{
	if (x->canonical)
		nx_buf_printf(b, "%%c%d", (int)nx_ptrmap_get(&x->ids, c, -1));
	else
		nx_buf_printf(b, "%%%s", c->name);
}

/* Starts the next ", key=" attribute. */
static void attr(nx_buf *b, const char *key)
{
	nx_buf_puts(b, ", ");
	nx_buf_puts(b, key);
	nx_buf_putc(b, '=');
}

static void put_ivec(nx_buf *b, nx_ivec v)
{
	nx_buf_putc(b, '{');
	for (int i = 0; i < v.n; i++)
		nx_buf_printf(b, "%s%lld", i ? "," : "", (long long)v.v[i]);
	nx_buf_putc(b, '}');
}

static void attr_ivec(nx_buf *b, const char *key, nx_ivec v)
{
	attr(b, key);
	put_ivec(b, v);
}

static void attr_ivec_if(nx_buf *b, const char *key, nx_ivec v)
{
	if (v.n)
		attr_ivec(b, key, v);
}

static void put_quoted(nx_buf *b, const char *s)
{
	nx_buf_putc(b, '"');
	nx_buf_escaped(b, s);
	nx_buf_putc(b, '"');
}

/* ------------------------------------------------------ attribute families */

static void put_window(nx_buf *b, const nx_window *w)
{
	bool stride = false, pad = false, lhs = false, rhs = false, rev = false;
	for (int i = 0; i < w->ndims; i++) {
		const nx_window_dim *d = &w->dims[i];
		stride |= d->stride != 1;
		pad |= d->pad_lo != 0 || d->pad_hi != 0;
		lhs |= d->base_dilation != 1;
		rhs |= d->window_dilation != 1;
		rev |= d->reversal;
	}
	nx_buf_puts(b, "{size=");
	for (int i = 0; i < w->ndims; i++)
		nx_buf_printf(b, "%s%lld", i ? "x" : "", (long long)w->dims[i].size);
	if (stride) {
		nx_buf_puts(b, " stride=");
		for (int i = 0; i < w->ndims; i++)
			nx_buf_printf(b, "%s%lld", i ? "x" : "", (long long)w->dims[i].stride);
	}
	if (pad) {
		nx_buf_puts(b, " pad=");
		for (int i = 0; i < w->ndims; i++)
			nx_buf_printf(b, "%s%lld_%lld", i ? "x" : "", (long long)w->dims[i].pad_lo,
			              (long long)w->dims[i].pad_hi);
	}
	if (lhs) {
		nx_buf_puts(b, " lhs_dilate=");
		for (int i = 0; i < w->ndims; i++)
			nx_buf_printf(b, "%s%lld", i ? "x" : "", (long long)w->dims[i].base_dilation);
	}
	if (rhs) {
		nx_buf_puts(b, " rhs_dilate=");
		for (int i = 0; i < w->ndims; i++)
			nx_buf_printf(b, "%s%lld", i ? "x" : "", (long long)w->dims[i].window_dilation);
	}
	if (rev) {
		nx_buf_puts(b, " rhs_reversal=");
		for (int i = 0; i < w->ndims; i++)
			nx_buf_printf(b, "%s%d", i ? "x" : "", w->dims[i].reversal ? 1 : 0);
	}
	nx_buf_putc(b, '}');
}

/* One operand's labels: '?' for dimensions no field names, as XLA does. */
static void put_labels(nx_buf *b, int64_t d0, char c0, int64_t d1, char c1, nx_ivec sp)
{
	int64_t n = (d0 > d1 ? d0 : d1) + 1;
	for (int i = 0; i < sp.n; i++)
		if (sp.v[i] + 1 > n)
			n = sp.v[i] + 1;
	for (int64_t k = 0; k < n; k++) {
		if (k == d0) {
			nx_buf_putc(b, c0);
			continue;
		}
		if (k == d1) {
			nx_buf_putc(b, c1);
			continue;
		}
		int found = -1;
		for (int i = 0; i < sp.n; i++)
			if (sp.v[i] == k)
				found = i;
		if (found >= 0)
			nx_buf_printf(b, "%d", found);
		else
			nx_buf_putc(b, '?');
	}
}

static void put_dim_labels(nx_buf *b, const nx_conv_dnums *c)
{
	put_labels(b, c->in_batch, 'b', c->in_feature, 'f', c->in_spatial);
	nx_buf_putc(b, '_');
	put_labels(b, c->k_in, 'i', c->k_out, 'o', c->k_spatial);
	nx_buf_puts(b, "->");
	put_labels(b, c->out_batch, 'b', c->out_feature, 'f', c->out_spatial);
}

static void put_replica_groups(nx_buf *b, const nx_replica_groups *g)
{
	if (g->iota) {
		nx_buf_putc(b, '[');
		for (int i = 0; i < g->iota_shape.n; i++)
			nx_buf_printf(b, "%s%lld", i ? "," : "", (long long)g->iota_shape.v[i]);
		nx_buf_puts(b, "]<=[");
		for (int i = 0; i < g->iota_reshape.n; i++)
			nx_buf_printf(b, "%s%lld", i ? "," : "", (long long)g->iota_reshape.v[i]);
		nx_buf_putc(b, ']');
		if (g->iota_transpose.n) {
			nx_buf_puts(b, "T(");
			for (int i = 0; i < g->iota_transpose.n; i++)
				nx_buf_printf(b, "%s%lld", i ? "," : "",
				              (long long)g->iota_transpose.v[i]);
			nx_buf_putc(b, ')');
		}
		return;
	}
	nx_buf_putc(b, '{');
	for (int i = 0; i < g->ngroups; i++) {
		if (i)
			nx_buf_putc(b, ',');
		put_ivec(b, g->groups[i]);
	}
	nx_buf_putc(b, '}');
}

static const char *cmp_dir_name(nx_cmp_dir d)
{
	switch (d) {
	case NX_CMP_EQ: return "EQ";
	case NX_CMP_NE: return "NE";
	case NX_CMP_LT: return "LT";
	case NX_CMP_LE: return "LE";
	case NX_CMP_GT: return "GT";
	case NX_CMP_GE: return "GE";
	default: NX_UNREACHABLE();
	}
}

static const char *cmp_type_name(nx_cmp_type t)
{
	switch (t) {
	case NX_CMPT_FLOAT: return "FLOAT";
	case NX_CMPT_TOTALORDER: return "TOTALORDER";
	case NX_CMPT_SIGNED: return "SIGNED";
	case NX_CMPT_UNSIGNED: return "UNSIGNED";
	default: NX_UNREACHABLE();
	}
}

static const char *fft_name(nx_fft_type t)
{
	switch (t) {
	case NX_FFT_FFT: return "FFT";
	case NX_FFT_IFFT: return "IFFT";
	case NX_FFT_RFFT: return "RFFT";
	case NX_FFT_IRFFT: return "IRFFT";
	default: NX_UNREACHABLE();
	}
}

static const char *rng_alg_name(nx_rng_algorithm a)
{
	switch (a) {
	case NX_RNG_THREE_FRY: return "rng_three_fry";
	case NX_RNG_PHILOX: return "rng_philox";
	default: return "rng_default";
	}
}

/* Frontend attributes are a map: XLA prints them sorted by key. We print
 * them in stored order (the reader keeps input order, which for XLA output
 * is sorted) except in the canonical form, which sorts so that the order
 * of the source does not change the fingerprint. */
static int kv_cmp(const void *a, const void *b)
{
	const nx_kv *x = a, *y = b;
	int c = strcmp(x->key, y->key);
	return c ? c : strcmp(x->value, y->value);
}

static void put_frontend_attrs(nx_buf *b, const nx_kv *kv, int n, bool sorted)
{
	nx_kv *tmp = NULL;
	if (sorted && n > 1) {
		tmp = malloc(sizeof(*tmp) * (size_t)n);
		if (!tmp)
			nx_ice(__FILE__, __LINE__, "out of memory");
		memcpy(tmp, kv, sizeof(*tmp) * (size_t)n);
		qsort(tmp, (size_t)n, sizeof(*tmp), kv_cmp);
		kv = tmp;
	}
	nx_buf_putc(b, '{');
	for (int i = 0; i < n; i++) {
		if (i)
			nx_buf_putc(b, ',');
		nx_buf_puts(b, kv[i].key);
		nx_buf_putc(b, '=');
		put_quoted(b, kv[i].value);
	}
	nx_buf_putc(b, '}');
	free(tmp);
}

/* OpMetadata fields that are strings in XLA's proto; the rest (source_line,
 * profile_type={...}, preserve_layout=true, ...) are printed verbatim. */
static bool metadata_is_string(const nx_kv *kv)
{
	static const char *const strings[] = {"op_type", "op_name", "source_file",
	                                      "deduplicated_name", "scheduling_name"};
	for (size_t i = 0; i < sizeof strings / sizeof *strings; i++)
		if (strcmp(kv->key, strings[i]) == 0)
			return true;
	const char *v = kv->value;
	if (!*v)
		return true;
	if (*v == '{' || strcmp(v, "true") == 0 || strcmp(v, "false") == 0)
		return false;
	if (*v == '-')
		v++;
	if (!*v)
		return true;
	for (; *v; v++)
		if (*v < '0' || *v > '9')
			return true;
	return false;
}

static void put_metadata(nx_buf *b, const nx_kv *kv, int n)
{
	nx_buf_putc(b, '{');
	for (int i = 0; i < n; i++) {
		if (i)
			nx_buf_putc(b, ' ');
		nx_buf_puts(b, kv[i].key);
		nx_buf_putc(b, '=');
		if (metadata_is_string(&kv[i]))
			put_quoted(b, kv[i].value);
		else
			nx_buf_puts(b, kv[i].value);
	}
	nx_buf_putc(b, '}');
}

static void put_gather(nx_buf *b, const nx_gather_dnums *g)
{
	attr_ivec(b, "offset_dims", g->offset_dims);
	attr_ivec(b, "collapsed_slice_dims", g->collapsed_slice_dims);
	attr_ivec(b, "start_index_map", g->start_index_map);
	attr_ivec_if(b, "operand_batching_dims", g->operand_batching_dims);
	attr_ivec_if(b, "start_indices_batching_dims", g->start_indices_batching_dims);
	attr(b, "index_vector_dim");
	nx_buf_printf(b, "%lld", (long long)g->index_vector_dim);
	attr_ivec(b, "slice_sizes", g->slice_sizes);
	if (g->indices_are_sorted)
		nx_buf_puts(b, ", indices_are_sorted=true");
}

static void put_scatter(nx_buf *b, const nx_scatter_dnums *s)
{
	attr_ivec(b, "update_window_dims", s->update_window_dims);
	attr_ivec(b, "inserted_window_dims", s->inserted_window_dims);
	attr_ivec(b, "scatter_dims_to_operand_dims", s->scatter_dims_to_operand_dims);
	attr_ivec_if(b, "input_batching_dims", s->input_batching_dims);
	attr_ivec_if(b, "scatter_indices_batching_dims", s->scatter_indices_batching_dims);
	attr(b, "index_vector_dim");
	nx_buf_printf(b, "%lld", (long long)s->index_vector_dim);
	if (s->indices_are_sorted)
		nx_buf_puts(b, ", indices_are_sorted=true");
	if (s->unique_indices)
		nx_buf_puts(b, ", unique_indices=true");
}

static void put_dot(nx_buf *b, const nx_dot_dnums *d)
{
	attr_ivec_if(b, "lhs_batch_dims", d->lhs_batch);
	attr_ivec(b, "lhs_contracting_dims", d->lhs_contracting);
	attr_ivec_if(b, "rhs_batch_dims", d->rhs_batch);
	attr_ivec(b, "rhs_contracting_dims", d->rhs_contracting);
}

static void put_float_attr(nx_buf *b, const char *key, float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	attr(b, key);
	nx_buf_float(b, NX_F32, u);
}

/* The opcode-specific attributes. Each field is set only for the opcodes
 * whose syntax has it, so one sequence serves every opcode; it is arranged
 * so that each family comes out in XLA's order. */
static void put_specific(nx_buf *b, const nx_inst *i)
{
	const nx_attrs *a = &i->a;
	nx_opcode op = i->op;
	bool is_dot = op == NX_OP_DOT || op == NX_OP_RAGGED_DOT || op == NX_OP_SCALED_DOT;
	if (op == NX_OP_GET_TUPLE_ELEMENT) {
		attr(b, "index");
		nx_buf_printf(b, "%lld", (long long)a->tuple_index);
	}
	if (op == NX_OP_IOTA) {
		attr(b, "iota_dimension");
		nx_buf_printf(b, "%lld", (long long)a->iota_dimension);
	}
	if (a->channel_id) {
		attr(b, "channel_id");
		nx_buf_printf(b, "%lld", (long long)a->channel_id);
	}
	if (a->replica_groups.present) {
		attr(b, "replica_groups");
		put_replica_groups(b, &a->replica_groups);
	}
	if (a->constrain_layout)
		nx_buf_puts(b, ", constrain_layout=true");
	if (a->nsource_target_pairs) {
		attr(b, "source_target_pairs");
		nx_buf_putc(b, '{');
		for (int k = 0; k < a->nsource_target_pairs; k++)
			nx_buf_printf(b, "%s{%lld,%lld}", k ? "," : "",
			              (long long)a->source_target_pairs[k][0],
			              (long long)a->source_target_pairs[k][1]);
		nx_buf_putc(b, '}');
	}
	if (a->slice_start.n || op == NX_OP_SLICE) {
		attr(b, "slice");
		nx_buf_putc(b, '{');
		for (int k = 0; k < a->slice_start.n; k++) {
			int64_t stride = k < a->slice_stride.n ? a->slice_stride.v[k] : 1;
			nx_buf_printf(b, "%s[%lld:%lld", k ? ", " : "", (long long)a->slice_start.v[k],
			              (long long)(k < a->slice_limit.n ? a->slice_limit.v[k] : 0));
			if (stride != 1)
				nx_buf_printf(b, ":%lld", (long long)stride);
			nx_buf_putc(b, ']');
		}
		nx_buf_putc(b, '}');
	}
	if (a->dynamic_slice_sizes.n || op == NX_OP_DYNAMIC_SLICE)
		attr_ivec(b, "dynamic_slice_sizes", a->dynamic_slice_sizes);
	if (a->npadding || op == NX_OP_PAD) {
		bool interior = false;
		for (int k = 0; k < a->npadding; k++)
			interior |= a->padding[k].interior != 0;
		attr(b, "padding");
		for (int k = 0; k < a->npadding; k++) {
			nx_buf_printf(b, "%s%lld_%lld", k ? "x" : "", (long long)a->padding[k].lo,
			              (long long)a->padding[k].hi);
			if (interior)
				nx_buf_printf(b, "_%lld", (long long)a->padding[k].interior);
		}
	}
	if (a->window.ndims) {
		attr(b, "window");
		put_window(b, &a->window);
	}
	if (a->conv.present) {
		attr(b, "dim_labels");
		put_dim_labels(b, &a->conv);
	}
	if (a->feature_group_count != 1) {
		attr(b, "feature_group_count");
		nx_buf_printf(b, "%lld", (long long)a->feature_group_count);
	}
	if (a->batch_group_count != 1) {
		attr(b, "batch_group_count");
		nx_buf_printf(b, "%lld", (long long)a->batch_group_count);
	}
	if (a->custom_call_target) {
		attr(b, "custom_call_target");
		put_quoted(b, a->custom_call_target);
	}
	if (is_dot)
		put_dot(b, &a->dot);
	if (op == NX_OP_GATHER)
		put_gather(b, &a->gather);
	if (op == NX_OP_SCATTER)
		put_scatter(b, &a->scatter);
	bool dims_late = op == NX_OP_REDUCE_SCATTER;
	if (a->has_dimensions && !dims_late)
		attr_ivec(b, "dimensions", a->dimensions);
	if (a->use_global_device_ids)
		nx_buf_puts(b, ", use_global_device_ids=true");
	if (a->has_dimensions && dims_late)
		attr_ivec(b, "dimensions", a->dimensions);
	if (a->direction != NX_CMP_NONE) {
		attr(b, "direction");
		nx_buf_puts(b, cmp_dir_name(a->direction));
	}
	if (a->compare_type != NX_CMPT_DEFAULT) {
		attr(b, "type");
		nx_buf_puts(b, cmp_type_name(a->compare_type));
	}
	if (a->fft_type != NX_FFT_NONE) {
		attr(b, "fft_type");
		nx_buf_puts(b, fft_name(a->fft_type));
		attr_ivec(b, "fft_length", a->fft_length);
	}
	if (op == NX_OP_BATCH_NORM_TRAINING || op == NX_OP_BATCH_NORM_INFERENCE ||
	    op == NX_OP_BATCH_NORM_GRAD) {
		put_float_attr(b, "epsilon", a->epsilon);
		attr(b, "feature_index");
		nx_buf_printf(b, "%lld", (long long)a->feature_index);
	}
	if (a->rng_distribution != NX_RNG_DIST_NONE) {
		attr(b, "distribution");
		nx_buf_puts(b, a->rng_distribution == NX_RNG_DIST_NORMAL ? "rng_normal" : "rng_uniform");
	}
	if (op == NX_OP_RNG_BIT_GENERATOR) {
		attr(b, "algorithm");
		nx_buf_puts(b, rng_alg_name(a->rng_algorithm));
	}
	if (op == NX_OP_REDUCE_PRECISION) {
		attr(b, "exponent_bits");
		nx_buf_printf(b, "%lld", (long long)a->exponent_bits);
		attr(b, "mantissa_bits");
		nx_buf_printf(b, "%lld", (long long)a->mantissa_bits);
	}
	if (a->is_stable)
		nx_buf_puts(b, ", is_stable=true");
	if (a->fusion_kind) {
		attr(b, "kind");
		nx_buf_puts(b, a->fusion_kind);
	}
	if (a->custom_call_has_side_effect)
		nx_buf_puts(b, ", custom_call_has_side_effect=true");
	if (a->api_version) {
		attr(b, "api_version");
		nx_buf_puts(b, a->api_version);
	}
}

static void put_comp_list(nx_buf *b, const pctx *x, const nx_inst *i, int from)
{
	for (int k = from; k < i->ncalled; k++) {
		if (k > from)
			nx_buf_puts(b, ", ");
		put_comp_name(b, x, i->called[k]);
	}
}

static void put_called(nx_buf *b, const pctx *x, const nx_inst *i)
{
	if (!i->ncalled)
		return;
	switch (i->op) {
	case NX_OP_WHILE:
	case NX_OP_SELECT_AND_SCATTER:
		attr(b, i->op == NX_OP_WHILE ? "condition" : "select");
		put_comp_name(b, x, i->called[0]);
		if (i->ncalled > 1) {
			attr(b, i->op == NX_OP_WHILE ? "body" : "scatter");
			put_comp_name(b, x, i->called[1]);
		}
		return;
	case NX_OP_CONDITIONAL:
		if (i->ncalled == 2 && i->noperands && i->operands[0]->shape->type == NX_PRED) {
			attr(b, "true_computation");
			put_comp_name(b, x, i->called[0]);
			attr(b, "false_computation");
			put_comp_name(b, x, i->called[1]);
		} else {
			attr(b, "branch_computations");
			nx_buf_putc(b, '{');
			put_comp_list(b, x, i, 0);
			nx_buf_putc(b, '}');
		}
		return;
	case NX_OP_CALL:
	case NX_OP_MAP:
	case NX_OP_REDUCE_WINDOW:
	case NX_OP_REDUCE:
	case NX_OP_ALL_REDUCE:
	case NX_OP_REDUCE_SCATTER:
	case NX_OP_ALL_REDUCE_START:
	case NX_OP_SCATTER:
	case NX_OP_SORT:
		attr(b, "to_apply");
		put_comp_name(b, x, i->called[0]);
		return;
	case NX_OP_CUSTOM_CALL:
		attr(b, "called_computations");
		nx_buf_putc(b, '{');
		put_comp_list(b, x, i, 0);
		nx_buf_putc(b, '}');
		return;
	default:
		if (i->a.async_wrapped != NX_OP_COUNT)
			return;
		attr(b, "calls");
		put_comp_list(b, x, i, 0);
		return;
	}
}

static void put_operands(nx_buf *b, const pctx *x, const nx_inst *i)
{
	if (i->op == NX_OP_CONSTANT) {
		if (i->a.literal)
			nx_buf_literal_value(b, i->a.literal);
		return;
	}
	if (i->op == NX_OP_PARAMETER) {
		nx_buf_printf(b, "%lld", (long long)i->a.parameter_number);
		return;
	}
	for (int k = 0; k < i->noperands; k++) {
		if (k)
			nx_buf_puts(b, ", ");
		if (k && k % 5 == 0)
			nx_buf_printf(b, "/*index=%d*/", k);
		nx_buf_shape(b, i->operands[k]->shape, true);
		nx_buf_putc(b, ' ');
		put_inst_name(b, x, i->operands[k]);
	}
}

static void put_opcode(nx_buf *b, const nx_inst *i)
{
	nx_opcode w = i->a.async_wrapped;
	if (w != NX_OP_COUNT && (i->op == NX_OP_ASYNC_START || i->op == NX_OP_ASYNC_UPDATE ||
	                         i->op == NX_OP_ASYNC_DONE)) {
		nx_buf_puts(b, nx_opcode_name(w));
		nx_buf_puts(b, i->op == NX_OP_ASYNC_START    ? "-start"
		               : i->op == NX_OP_ASYNC_UPDATE ? "-update"
		                                             : "-done");
		return;
	}
	nx_buf_puts(b, nx_opcode_name(i->op));
}

static void put_inst(nx_buf *b, const pctx *x, const nx_inst *i)
{
	const nx_attrs *a = &i->a;
	put_inst_name(b, x, i);
	nx_buf_puts(b, " = ");
	nx_buf_shape(b, i->shape, true);
	nx_buf_putc(b, ' ');
	put_opcode(b, i);
	nx_buf_putc(b, '(');
	put_operands(b, x, i);
	nx_buf_putc(b, ')');
	put_specific(b, i);
	put_called(b, x, i);
	if (a->sharding) {
		attr(b, "sharding");
		nx_buf_putc(b, '{');
		nx_buf_puts(b, a->sharding);
		nx_buf_putc(b, '}');
	}
	if (a->nfrontend_attributes) {
		attr(b, "frontend_attributes");
		put_frontend_attrs(b, a->frontend_attributes, a->nfrontend_attributes, x->canonical);
	}
	if (a->ncontrol_predecessors) {
		attr(b, "control-predecessors");
		nx_buf_putc(b, '{');
		for (int k = 0; k < a->ncontrol_predecessors; k++) {
			if (k)
				nx_buf_puts(b, ", ");
			put_inst_name(b, x, a->control_predecessors[k]);
		}
		nx_buf_putc(b, '}');
	}
	if (x->metadata && a->nmetadata) {
		attr(b, "metadata");
		put_metadata(b, a->metadata, a->nmetadata);
	}
	if (a->backend_config) {
		attr(b, "backend_config");
		if (a->backend_config_raw)
			nx_buf_puts(b, a->backend_config);
		else
			put_quoted(b, a->backend_config);
	}
	for (int k = 0; k < a->nunknown; k++) {
		attr(b, a->unknown[k].key);
		nx_buf_puts(b, a->unknown[k].value);
	}
}

/* ------------------------------------------------------- canonical order */

/* Post-order of c's instructions: operands (then control predecessors)
 * before users, starting from the root, then from every instruction the
 * root does not reach, in stored order. Iterative: graphs are deep. */
static const nx_inst **inst_order(const nx_comp *c)
{
	const nx_inst **out = malloc(sizeof(*out) * (size_t)(c->ninsts + 1));
	const nx_inst **stack = malloc(sizeof(*stack) * (size_t)(c->ninsts + 1));
	int *next = malloc(sizeof(*next) * (size_t)(c->ninsts + 1));
	if (!out || !stack || !next)
		nx_ice(__FILE__, __LINE__, "out of memory");
	nx_ptrmap state; /* 1 = on the stack, 2 = emitted */
	nx_ptrmap_init(&state, (size_t)c->ninsts);
	for (int k = 0; k < c->ninsts; k++)
		nx_ptrmap_put(&state, c->insts[k], 0);
	int n = 0;
	for (int s = -1; s < c->ninsts; s++) {
		const nx_inst *start = s < 0 ? c->root : c->insts[s];
		if (!start || (int)nx_ptrmap_get(&state, start, -1) != 0)
			continue;
		int sp = 0;
		stack[sp] = start;
		next[sp++] = 0;
		nx_ptrmap_put(&state, start, 1);
		while (sp) {
			const nx_inst *t = stack[sp - 1];
			int k = next[sp - 1]++;
			int nops = t->noperands + t->a.ncontrol_predecessors;
			if (k < nops) {
				const nx_inst *o = k < t->noperands
				                       ? t->operands[k]
				                       : t->a.control_predecessors[k - t->noperands];
				/* Operands outside c (malformed) or already seen: skip. */
				if ((int)nx_ptrmap_get(&state, o, -1) == 0 && sp < c->ninsts) {
					nx_ptrmap_put(&state, o, 1);
					stack[sp] = o;
					next[sp++] = 0;
				}
				continue;
			}
			nx_ptrmap_put(&state, t, 2);
			out[n++] = t;
			sp--;
		}
	}
	NX_ASSERT(n == c->ninsts);
	nx_ptrmap_free(&state);
	free(stack);
	free(next);
	return out;
}

/* Computations in post-order of the call graph from the entry (callees
 * first), then the ones the entry does not reach, in stored order. */
static const nx_comp **comp_order(const nx_module *m)
{
	const nx_comp **out = malloc(sizeof(*out) * (size_t)(m->ncomps + 1));
	if (!out)
		nx_ice(__FILE__, __LINE__, "out of memory");
	nx_ptrmap seen; /* 0 = not yet visited; callees outside m are never followed */
	nx_ptrmap_init(&seen, (size_t)m->ncomps);
	for (int k = 0; k < m->ncomps; k++)
		nx_ptrmap_put(&seen, m->comps[k], 0);
	int n = 0;
	/* Explicit stack of (computation, instruction index, called index). */
	typedef struct {
		const nx_comp *c;
		int inst, call;
	} frame;
	frame *st = malloc(sizeof(*st) * (size_t)(m->ncomps + 1));
	if (!st)
		nx_ice(__FILE__, __LINE__, "out of memory");
	for (int s = -1; s < m->ncomps; s++) {
		const nx_comp *start = s < 0 ? m->entry : m->comps[s];
		if (!start || (int)nx_ptrmap_get(&seen, start, -1) != 0)
			continue;
		int sp = 0;
		st[sp++] = (frame){start, 0, 0};
		nx_ptrmap_put(&seen, start, 1);
		while (sp) {
			frame *f = &st[sp - 1];
			if (f->inst >= f->c->ninsts) {
				out[n++] = f->c;
				sp--;
				continue;
			}
			const nx_inst *i = f->c->insts[f->inst];
			if (f->call >= i->ncalled) {
				f->inst++;
				f->call = 0;
				continue;
			}
			const nx_comp *callee = i->called[f->call++];
			if ((int)nx_ptrmap_get(&seen, callee, -1) == 0 && sp < m->ncomps) {
				nx_ptrmap_put(&seen, callee, 1);
				st[sp++] = (frame){callee, 0, 0};
			}
		}
	}
	free(st);
	nx_ptrmap_free(&seen);
	NX_ASSERT(n == m->ncomps);
	return out;
}

/* ------------------------------------------------------------ computations */

static void put_comp(nx_buf *b, const pctx *x, const nx_comp *c, const nx_inst **order)
{
	if (c->is_entry)
		nx_buf_puts(b, "ENTRY ");
	put_comp_name(b, x, c);
	nx_buf_puts(b, " (");
	bool first = true;
	for (int k = 0; k < c->nparams; k++) {
		const nx_inst *p = c->params[k];
		if (!p)
			continue;
		if (!first)
			nx_buf_puts(b, ", ");
		first = false;
		if (x->canonical)
			nx_buf_printf(b, "i%d", (int)nx_ptrmap_get(&x->ids, p, -1));
		else
			nx_buf_puts(b, p->name);
		nx_buf_puts(b, ": ");
		nx_buf_shape(b, p->shape, false);
	}
	nx_buf_puts(b, ") -> ");
	const nx_inst *root = c->root ? c->root : (c->ninsts ? c->insts[c->ninsts - 1] : NULL);
	if (root)
		nx_buf_shape(b, root->shape, false);
	else
		nx_buf_puts(b, "()");
	nx_buf_puts(b, " {\n");
	for (int k = 0; k < c->ninsts; k++) {
		const nx_inst *i = order ? order[k] : c->insts[k];
		nx_buf_puts(b, i == root ? "  ROOT " : "  ");
		put_inst(b, x, i);
		nx_buf_putc(b, '\n');
	}
	nx_buf_putc(b, '}');
	if (c->execution_thread) {
		nx_buf_puts(b, ", execution_thread=");
		put_quoted(b, c->execution_thread);
	}
	nx_buf_puts(b, "\n\n");
}

static void put_index(nx_buf *b, nx_ivec v)
{
	nx_buf_putc(b, '{');
	for (int i = 0; i < v.n; i++)
		nx_buf_printf(b, "%s%lld", i ? "," : "", (long long)v.v[i]);
	nx_buf_putc(b, '}');
}

static void put_header(nx_buf *b, const pctx *x, const nx_module *m)
{
	nx_buf_puts(b, "HloModule ");
	nx_buf_puts(b, x->canonical ? "m" : m->name);
	if (m->is_scheduled)
		nx_buf_puts(b, ", is_scheduled=true");
	if (m->naliases) {
		attr(b, "input_output_alias");
		nx_buf_puts(b, "{ ");
		for (int k = 0; k < m->naliases; k++) {
			const nx_alias *al = &m->aliases[k];
			if (k)
				nx_buf_puts(b, ", ");
			put_index(b, al->output_index);
			nx_buf_printf(b, ": (%lld, ", (long long)al->param_number);
			put_index(b, al->param_index);
			if (al->kind_given)
				nx_buf_puts(b, al->must_alias ? ", must-alias" : ", may-alias");
			nx_buf_putc(b, ')');
		}
		nx_buf_puts(b, " }");
	}
	if (m->entry_layout) {
		const nx_shape *l = m->entry_layout;
		attr(b, "entry_computation_layout");
		nx_buf_puts(b, "{(");
		for (int k = 0; k < m->entry_layout_nparams && k < l->ntuple; k++) {
			if (k)
				nx_buf_puts(b, ", ");
			nx_buf_shape(b, l->tuple[k], true);
		}
		nx_buf_puts(b, ")->");
		if (m->entry_layout_nparams < l->ntuple)
			nx_buf_shape(b, l->tuple[m->entry_layout_nparams], true);
		nx_buf_putc(b, '}');
	}
	if (m->replica_count) {
		attr(b, "replica_count");
		nx_buf_printf(b, "%lld", (long long)m->replica_count);
	}
	if (m->num_partitions) {
		attr(b, "num_partitions");
		nx_buf_printf(b, "%lld", (long long)m->num_partitions);
	}
	if (m->nfrontend_attributes) {
		attr(b, "frontend_attributes");
		put_frontend_attrs(b, m->frontend_attributes, m->nfrontend_attributes, x->canonical);
	}
	for (int k = 0; k < m->nunknown; k++) {
		attr(b, m->unknown[k].key);
		nx_buf_puts(b, m->unknown[k].value);
	}
	nx_buf_puts(b, "\n\n");
}

/* ------------------------------------------------------------ entry points */

char *nx_print_module(const nx_module *m, const nx_print_opts *o)
{
	pctx x = {0};
	x.canonical = o && o->canonical;
	x.metadata = !(o && (o->no_metadata || o->canonical));
	nx_buf b = {0};
	if (!x.canonical) {
		put_header(&b, &x, m);
		if (x.metadata)
			nx_buf_stack_frames(&b, &m->stack);
		for (int k = 0; k < m->ncomps; k++)
			put_comp(&b, &x, m->comps[k], NULL);
		return nx_buf_take(&b);
	}
	size_t total = (size_t)m->ncomps;
	for (int k = 0; k < m->ncomps; k++)
		total += (size_t)m->comps[k]->ninsts;
	nx_ptrmap_init(&x.ids, total);
	const nx_comp **comps = comp_order(m);
	const nx_inst ***orders = malloc(sizeof(*orders) * (size_t)(m->ncomps + 1));
	if (!orders)
		nx_ice(__FILE__, __LINE__, "out of memory");
	for (int k = 0; k < m->ncomps; k++) {
		nx_ptrmap_put(&x.ids, comps[k], k);
		orders[k] = inst_order(comps[k]);
		for (int j = 0; j < comps[k]->ninsts; j++)
			nx_ptrmap_put(&x.ids, orders[k][j], j);
	}
	put_header(&b, &x, m);
	for (int k = 0; k < m->ncomps; k++) {
		put_comp(&b, &x, comps[k], orders[k]);
		free(orders[k]);
	}
	free(orders);
	free(comps);
	nx_ptrmap_free(&x.ids);
	return nx_buf_take(&b);
}

char *nx_print_inst(const nx_inst *i, const nx_print_opts *o)
{
	pctx x = {0};
	x.metadata = !(o && (o->no_metadata || o->canonical));
	/* A single instruction has no positional ids to refer to: names stay. */
	nx_buf b = {0};
	put_inst(&b, &x, i);
	return nx_buf_take(&b);
}
