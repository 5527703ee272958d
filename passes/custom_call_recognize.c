/* passes/custom_call_recognize.c — the custom calls torch-neuronx emits are
 * first-class (DESIGN.md section 4):
 *   AwsNeuronGelu(x), AwsNeuronGeluBackward(x[, g]): float, result shaped as x;
 *   AwsNeuronSoftmax(x), AwsNeuronSoftmaxBackward(g, y): backend_config is the
 *     axis ("3" or 3), within the rank; result shaped as x;
 *   AwsNeuronTransferWithStaticRing(x): an identity, replaced by x.
 * Any other target, or a known one used wrongly, is a user error naming the
 * target and the instruction, at the instruction's source position. */
#include "passes/rewrite.h"

#include <stdlib.h>
#include <string.h>

static nx_inst *fail(nx_rw *rw, const nx_inst *in, const char *fmt, const char *arg)
{
	nx_diag *d = rw->ctx->diag;
	nx_diag tmp = {0};
	if (!d)
		d = &tmp;
	rw->status = nx_diag_set(d, NX_ERR_INPUT, rw->m->file, in->line, in->col, fmt, arg,
	                         in->name);
	nx_diag_set_inst(d, in->name);
	if (d == &tmp)
		nx_diag_clear(&tmp);
	return NULL;
}

/* backend_config "3", 3 or "\"3\"" */
static bool parse_axis(const char *s, int64_t *axis)
{
	if (!s)
		return false;
	while (*s == '"' || *s == ' ')
		s++;
	char *end;
	long long v = strtoll(s, &end, 10);
	if (end == s)
		return false;
	while (*end == '"' || *end == ' ')
		end++;
	if (*end)
		return false;
	*axis = v;
	return true;
}

static bool float_like(const nx_inst *in, const nx_inst *x)
{
	return nx_shape_is_array(x->shape) && nx_type_is_float(x->shape->type) &&
	       nx_shape_compatible(x->shape, in->shape);
}

bool (*nx_custom_target_hook)(const char *target);

static nx_inst *recognize(nx_rw *rw, nx_inst *in)
{
	if (in->op != NX_OP_CUSTOM_CALL)
		return NULL;
	const char *t = in->a.custom_call_target ? in->a.custom_call_target : "";
	if (!strcmp(t, "AwsNeuronTransferWithStaticRing")) {
		if (in->noperands != 1 || !nx_shape_compatible(in->operands[0]->shape, in->shape))
			return fail(rw, in, "custom-call target '%s' in instruction '%s' must have one operand of the result's shape", t);
		return in->operands[0];
	}
	if (!strcmp(t, "AwsNeuronGelu") || !strcmp(t, "AwsNeuronGeluBackward")) {
		int maxops = t[strlen(t) - 1] == 'd' ? 2 : 1;
		if (in->noperands < 1 || in->noperands > maxops || !float_like(in, in->operands[0]))
			return fail(rw, in, "custom-call target '%s' in instruction '%s' needs a floating-point operand of the result's shape", t);
		return NULL;
	}
	if (!strcmp(t, "AwsNeuronSoftmax") || !strcmp(t, "AwsNeuronSoftmaxBackward")) {
		int nops = !strcmp(t, "AwsNeuronSoftmax") ? 1 : 2;
		if (in->noperands != nops)
			return fail(rw, in, "custom-call target '%s' in instruction '%s' has the wrong number of operands", t);
		for (int k = 0; k < nops; k++)
			if (!float_like(in, in->operands[k]))
				return fail(rw, in, "custom-call target '%s' in instruction '%s' needs floating-point operands of the result's shape", t);
		int64_t axis;
		if (!parse_axis(in->a.backend_config, &axis) || axis < 0 || axis >= in->shape->rank)
			return fail(rw, in, "custom-call target '%s' in instruction '%s' needs backend_config holding an axis within the rank", t);
		return NULL;
	}
	if (nx_custom_target_hook && nx_custom_target_hook(t))
		return NULL; /* a user GpSimd kernel (--custom-op, compiler/custom_op.c) */
	return fail(rw, in, "unsupported custom-call target '%s' in instruction '%s' (supported: AwsNeuronGelu, AwsNeuronGeluBackward, AwsNeuronSoftmax, AwsNeuronSoftmaxBackward, AwsNeuronTransferWithStaticRing)", t);
}

nx_status nx_pass_custom_call_recognize(nx_module *m, const nx_pass_ctx *ctx, bool *changed)
{
	return nx_rw_run(m, ctx, "custom-call-recognize", recognize, NULL, changed);
}
