/* passes/canonicalize_conv.c — every convolution into one dimension order,
 * dim_labels b01f_01io->b01f (batch, spatial..., feature; kernel spatial...,
 * input feature, output feature), so the backend handles one layout:
 * the input and the kernel are transposed into that order, the convolution
 * computes its result in b01f and a transpose restores the original output
 * order. The window, the group counts and the precision config keep their
 * meaning: they are defined per labelled dimension, not per position. */
#include "passes/canonicalize.h"
#include "passes/rewrite.h"

bool nx_conv_is_canonical(const nx_inst *cv)
{
	const nx_conv_dnums *d = &cv->a.conv;
	int ns = d->in_spatial.n;
	if (d->in_batch != 0 || d->in_feature != ns + 1 || d->k_in != ns || d->k_out != ns + 1 ||
	    d->out_batch != 0 || d->out_feature != ns + 1 || d->k_spatial.n != ns ||
	    d->out_spatial.n != ns)
		return false;
	for (int k = 0; k < ns; k++)
		if (d->in_spatial.v[k] != k + 1 || d->k_spatial.v[k] != k || d->out_spatial.v[k] != k + 1)
			return false;
	return true;
}

static bool identity(const int64_t *perm, int n)
{
	for (int k = 0; k < n; k++)
		if (perm[k] != k)
			return false;
	return true;
}

static nx_inst *canonicalize(nx_rw *rw, nx_inst *in)
{
	if (in->op != NX_OP_CONVOLUTION || in->noperands != 2 || nx_conv_is_canonical(in))
		return NULL;
	const nx_conv_dnums *d = &in->a.conv;
	int ns = d->in_spatial.n, r = ns + 2;
	nx_inst *x = in->operands[0], *w = in->operands[1];
	if (x->shape->dynamic || w->shape->dynamic || in->shape->dynamic || x->shape->rank != r ||
	    w->shape->rank != r || in->shape->rank != r || d->k_spatial.n != ns || d->out_spatial.n != ns)
		return NULL;
	int64_t px[NX_MAX_RANK], pw[NX_MAX_RANK], po[NX_MAX_RANK], odims[NX_MAX_RANK];
	px[0] = d->in_batch;
	px[ns + 1] = d->in_feature;
	pw[ns] = d->k_in;
	pw[ns + 1] = d->k_out;
	po[d->out_batch] = 0;
	po[d->out_feature] = ns + 1;
	for (int k = 0; k < ns; k++) {
		px[k + 1] = d->in_spatial.v[k];
		pw[k] = d->k_spatial.v[k];
		po[d->out_spatial.v[k]] = k + 1;
	}
	odims[0] = in->shape->dims[d->out_batch];
	odims[ns + 1] = in->shape->dims[d->out_feature];
	for (int k = 0; k < ns; k++)
		odims[k + 1] = in->shape->dims[d->out_spatial.v[k]];
	nx_arena *a = nx_rw_arena(rw);
	nx_inst *ops[2] = {identity(px, r) ? x : nx_rw_transpose(rw, x, px),
	                   identity(pw, r) ? w : nx_rw_transpose(rw, w, pw)};
	nx_shape *s = nx_shape_array(a, in->shape->type, r, odims);
	nx_inst *c = nx_rw_add(rw, NX_OP_CONVOLUTION, s, ops, 2, in->name);
	c->a = in->a;
	c->a.control_predecessors = NULL; /* the driver moves them to the replacement */
	c->a.ncontrol_predecessors = 0;
	c->called = in->called;
	c->ncalled = in->ncalled;
	nx_conv_dnums *n = &c->a.conv;
	int64_t seq[NX_MAX_RANK];
	for (int k = 0; k < r; k++)
		seq[k] = k;
	n->in_batch = 0;
	n->in_feature = ns + 1;
	n->in_spatial = nx_ivec_dup(a, &seq[1], ns);
	n->k_in = ns;
	n->k_out = ns + 1;
	n->k_spatial = nx_ivec_dup(a, seq, ns);
	n->out_batch = 0;
	n->out_feature = ns + 1;
	n->out_spatial = nx_ivec_dup(a, &seq[1], ns);
	if (identity(po, r)) {
		c->shape = nx_shape_copy(a, in->shape);
		return c;
	}
	nx_inst *t = nx_rw_add(rw, NX_OP_TRANSPOSE, nx_shape_copy(a, in->shape), &c, 1, NULL);
	t->a.dimensions = nx_ivec_dup(a, po, r);
	t->a.has_dimensions = true;
	return t;
}

nx_status nx_pass_canonicalize_conv(nx_module *m, const nx_pass_ctx *ctx, bool *changed)
{
	return nx_rw_run(m, ctx, "canonicalize-conv", canonicalize, NULL, changed);
}
