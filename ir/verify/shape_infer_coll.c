/* ir/verify/shape_infer_coll.c — shape inference for collectives, async wrappers,
 * copy-start/done, tokens (send/recv/infeed/outfeed/after-all) and
 * custom-call. The -start forms return tuples as in XLA. */
#include "ir/verify/shape_infer_int.h"

#include <string.h>

int64_t nx_collective_group_size(const nx_inst *i)
{
	const nx_replica_groups *rg = &i->a.replica_groups;
	if (rg->present && rg->iota && rg->iota_shape.n == 2)
		return rg->iota_shape.v[1];
	if (rg->present && !rg->iota && rg->ngroups > 0)
		return rg->groups[0].n;
	const nx_module *m = i->parent ? i->parent->module : NULL;
	if (!m || (m->replica_count == 0 && m->num_partitions == 0))
		return 0;
	int64_t rc = m->replica_count ? m->replica_count : 1;
	int64_t np = m->num_partitions ? m->num_partitions : 1;
	return i->a.channel_id || i->a.use_global_device_ids ? rc * np : rc;
}

static bool check_groups(const si_ctx *c)
{
	const nx_replica_groups *rg = &c->i->a.replica_groups;
	if (!rg->present || rg->iota)
		return true;
	for (int g = 1; g < rg->ngroups; g++)
		if (rg->groups[g].n != rg->groups[0].n) {
			si_fail(c, "replica groups have different sizes (%d and %d)", rg->groups[0].n,
			        rg->groups[g].n);
			return false;
		}
	return true;
}

static nx_shape *operands_tuple(const si_ctx *c, int from, int to)
{
	int n = to - from;
	nx_shape **e = nx_arena_alloc(c->a, sizeof(nx_shape *) * (size_t)(n + 1));
	for (int k = 0; k < n; k++)
		e[k] = nx_shape_copy(c->a, c->i->operands[from + k]->shape);
	return nx_shape_tuple(c->a, n, e);
}

/* The result of a variadic collective: one shape per operand, a tuple when
 * there are several. */
static nx_shape *single_or_tuple(const si_ctx *c, int n, nx_shape **e)
{
	return n == 1 ? e[0] : nx_shape_tuple(c->a, n, e);
}

/* Declared element k of the instruction's result (NULL when not a tuple). */
static const nx_shape *declared_elem(const si_ctx *c, int n, int k)
{
	const nx_shape *s = c->i->shape;
	if (n == 1 && s->type != NX_TUPLE)
		return s;
	return s->type == NX_TUPLE && k < s->ntuple ? s->tuple[k] : NULL;
}

static nx_shape *infer_all_reduce(const si_ctx *c)
{
	const nx_inst *i = c->i;
	int n = i->noperands;
	if (!si_min_ops(c, 1) || n > 4096)
		return NULL;
	nx_shape **e = nx_arena_alloc(c->a, sizeof(nx_shape *) * (size_t)n);
	nx_type *acc = nx_arena_alloc(c->a, sizeof(nx_type) * (size_t)n);
	for (int k = 0; k < n; k++) {
		const nx_shape *s = si_array_operand(c, k);
		if (!s)
			return NULL;
		e[k] = nx_shape_copy(c->a, s);
		nx_shape_set_default_layout(e[k]);
		acc[k] = s->type;
	}
	const nx_comp *f = si_called(c, 0, "to_apply");
	if (!f)
		return NULL;
	/* The reducer is applied per operand, so it is a binary scalar op of
	 * the first operand's type (XLA requires all operands to share it). */
	if (!si_check_reducer(c, f, "to_apply", 1, acc, NULL))
		return NULL;
	return single_or_tuple(c, n, e);
}

/* all-gather (grow=true) and reduce-scatter (grow=false) along dimensions[0]. */
static nx_shape *infer_gather_scatter(const si_ctx *c, bool grow)
{
	const nx_inst *i = c->i;
	int n = i->noperands;
	if (!si_min_ops(c, 1) || !check_groups(c))
		return NULL;
	if (i->a.dimensions.n != 1)
		return si_fail(c, "%s needs one dimension", nx_opcode_name(i->op));
	int64_t dim = i->a.dimensions.v[0];
	int64_t g = nx_collective_group_size(i);
	nx_shape **e = nx_arena_alloc(c->a, sizeof(nx_shape *) * (size_t)n);
	for (int k = 0; k < n; k++) {
		const nx_shape *s = si_array_operand(c, k);
		if (!s)
			return NULL;
		e[k] = nx_shape_copy(c->a, s);
		nx_shape_set_default_layout(e[k]);
		/* Neuron's graphs pass scalars (e.g. a bf16[] scale) through
		 * variadic all-gather/reduce-scatter unchanged. */
		if (s->rank == 0)
			continue;
		if (dim < 0 || dim >= s->rank)
			return si_fail(c, "dimension %lld out of range for rank-%d operand",
			               (long long)dim, s->rank);
		int64_t in = s->dims[dim];
		if (g > 0) {
			if (grow)
				e[k]->dims[dim] = in * g;
			else if (in % g)
				return si_fail(c, "reduce-scatter dimension %lld (%lld) is not divisible by the "
				               "group size %lld", (long long)dim, (long long)in, (long long)g);
			else
				e[k]->dims[dim] = in / g;
			continue;
		}
		/* Group size unknown: take the declared size if it is consistent. */
		const nx_shape *dk = declared_elem(c, n, k);
		if (!dk || !nx_shape_is_array(dk) || dk->rank != s->rank)
			return si_fail(c, "%s result element %d does not match operand %s",
			               nx_opcode_name(i->op), k, si_str(c, s));
		int64_t out = dk->dims[dim];
		bool ok = grow ? (in == 0 ? out == 0 : out > 0 && out % in == 0)
		               : (out == 0 ? in == 0 : in % out == 0);
		if (!ok)
			return si_fail(c, "%s dimension %lld: %lld and %lld are not related by a whole "
			               "group size", nx_opcode_name(i->op), (long long)dim, (long long)in,
			               (long long)out);
		e[k]->dims[dim] = out;
	}
	if (!grow) {
		const nx_comp *f = si_called(c, 0, "to_apply");
		nx_type acc = i->operands[0]->shape->type;
		if (!f || !si_check_reducer(c, f, "to_apply", 1, &acc, NULL))
			return NULL;
	}
	return single_or_tuple(c, n, e);
}

static nx_shape *infer_all_to_all(const si_ctx *c)
{
	const nx_inst *i = c->i;
	if (!si_min_ops(c, 1) || !check_groups(c))
		return NULL;
	if (i->a.dimensions.n == 0)
		return i->noperands == 1 ? nx_shape_copy(c->a, i->operands[0]->shape)
		                         : operands_tuple(c, 0, i->noperands);
	const nx_shape *s = si_array_operand(c, 0);
	if (!s)
		return NULL;
	int64_t dim = i->a.dimensions.v[0];
	if (i->a.dimensions.n != 1 || dim < 0 || dim >= s->rank)
		return si_fail(c, "split dimension %lld out of range for rank-%d operand",
		               (long long)dim, s->rank);
	int64_t g = nx_collective_group_size(i);
	if (g > 0 && s->dims[dim] % g)
		return si_fail(c, "all-to-all split dimension %lld (%lld) is not divisible by the "
		               "group size %lld", (long long)dim, (long long)s->dims[dim], (long long)g);
	if (i->noperands != 1)
		return operands_tuple(c, 0, i->noperands);
	nx_shape *r = nx_shape_copy(c->a, s);
	nx_shape_set_default_layout(r);
	return r;
}

static nx_shape *infer_collective_permute(const si_ctx *c)
{
	const nx_inst *i = c->i;
	if (!si_min_ops(c, 1))
		return NULL;
	for (int k = 0; k < i->a.nsource_target_pairs; k++)
		for (int j = 0; j < k; j++)
			if (i->a.source_target_pairs[j][1] == i->a.source_target_pairs[k][1])
				return si_fail(c, "source_target_pairs has target %lld twice",
				               (long long)i->a.source_target_pairs[k][1]);
	if (i->noperands == 4) /* in-place form: input, output, in/out offsets */
		return nx_shape_copy(c->a, i->operands[1]->shape);
	if (i->noperands == 1)
		return nx_shape_copy(c->a, i->operands[0]->shape);
	return operands_tuple(c, 0, i->noperands);
}

static nx_shape *infer_plain_collective(const si_ctx *c)
{
	if (!si_min_ops(c, 1))
		return NULL;
	if (c->i->noperands == 1)
		return nx_shape_copy(c->a, c->i->operands[0]->shape);
	return operands_tuple(c, 0, c->i->noperands);
}

/* Extra "context" elements of a -start tuple after the first `fixed` ones
 * are implementation state (u32[]/s32[] scalars in XLA): taken as declared. */
static nx_shape *start_tuple(const si_ctx *c, int fixed, nx_shape **e)
{
	const nx_shape *dcl = c->i->shape;
	if (dcl->type != NX_TUPLE || dcl->ntuple < fixed)
		return si_fail(c, "%s result must be a tuple of at least %d elements, declared %s",
		               nx_opcode_name(c->i->op), fixed, si_str(c, dcl));
	nx_shape **all = nx_arena_alloc(c->a, sizeof(nx_shape *) * (size_t)(dcl->ntuple + 1));
	for (int k = 0; k < dcl->ntuple; k++)
		all[k] = k < fixed ? e[k] : nx_shape_copy(c->a, dcl->tuple[k]);
	return nx_shape_tuple(c->a, dcl->ntuple, all);
}

/* The wrapped instruction of an async or -start op, with its declared
 * result taken from element k of the declared tuple. */
static nx_shape *infer_as(const si_ctx *c, nx_opcode op, int k)
{
	nx_inst tmp = *c->i;
	tmp.op = op;
	tmp.a.async_wrapped = NX_OP_COUNT;
	const nx_shape *dcl = c->i->shape;
	if (dcl->type == NX_TUPLE && k < dcl->ntuple)
		tmp.shape = dcl->tuple[k];
	return nx_infer_shape(c->a, &tmp, c->d);
}

static nx_shape *infer_done(const si_ctx *c, int k, nx_opcode start)
{
	const nx_inst *s = c->i->operands[0];
	if (start != NX_OP_COUNT && s->op != start)
		return si_fail(c, "%s operand must be a %s, got %s", nx_opcode_name(c->i->op),
		               nx_opcode_name(start), nx_opcode_name(s->op));
	if (s->shape->type != NX_TUPLE || k >= s->shape->ntuple)
		return si_fail(c, "%s operand must be a tuple with element %d, got %s",
		               nx_opcode_name(c->i->op), k, si_str(c, s->shape));
	return nx_shape_copy(c->a, s->shape->tuple[k]);
}

static nx_shape *infer_async(const si_ctx *c)
{
	const nx_inst *i = c->i;
	nx_opcode w = i->a.async_wrapped;
	switch (i->op) {
	case NX_OP_ASYNC_START: {
		nx_shape *res;
		if (w != NX_OP_COUNT) {
			res = infer_as(c, w, 1);
		} else {
			const nx_comp *f = si_called(c, 0, "async");
			if (!f)
				return NULL;
			nx_shape **p = nx_arena_alloc(c->a, sizeof(nx_shape *) * (size_t)(i->noperands + 1));
			for (int k = 0; k < i->noperands; k++)
				p[k] = i->operands[k]->shape;
			if (!si_check_params(c, f, "async", i->noperands, p))
				return NULL;
			res = nx_shape_copy(c->a, f->root->shape);
		}
		if (!res)
			return NULL;
		nx_shape *e[2] = {operands_tuple(c, 0, i->noperands), res};
		return start_tuple(c, 2, e);
	}
	case NX_OP_ASYNC_UPDATE: {
		if (!si_nops(c, 1))
			return NULL;
		const nx_inst *s = i->operands[0];
		if (s->op != NX_OP_ASYNC_START && s->op != NX_OP_ASYNC_UPDATE)
			return si_fail(c, "async-update operand must be an async-start or async-update, got "
			               "%s", nx_opcode_name(s->op));
		return nx_shape_copy(c->a, s->shape);
	}
	default: /* async-done */
		if (i->operands[0]->op != NX_OP_ASYNC_START && i->operands[0]->op != NX_OP_ASYNC_UPDATE)
			return si_fail(c, "async-done operand must be an async-start or async-update, got "
			               "%s", nx_opcode_name(i->operands[0]->op));
		return infer_done(c, 1, NX_OP_COUNT);
	}
}

/* ------------------------------------------------------------ tokens */

static bool is_token(const nx_shape *s) { return s->type == NX_TOKEN; }

static nx_shape *need_token(const si_ctx *c, int k)
{
	return si_fail(c, "operand %d of %s must be a token, got %s", k, nx_opcode_name(c->i->op),
	               si_str(c, c->i->operands[k]->shape));
}

static nx_shape *infer_token_op(const si_ctx *c)
{
	const nx_inst *i = c->i;
	const nx_shape *dcl = i->shape;
	switch (i->op) {
	case NX_OP_AFTER_ALL:
		for (int k = 0; k < i->noperands; k++)
			if (!is_token(i->operands[k]->shape))
				return need_token(c, k);
		return nx_shape_token(c->a);
	case NX_OP_ADD_DEPENDENCY:
		if (!is_token(i->operands[1]->shape))
			return need_token(c, 1);
		return nx_shape_copy(c->a, i->operands[0]->shape);
	case NX_OP_OUTFEED:
		if (!is_token(i->operands[1]->shape))
			return need_token(c, 1);
		return nx_shape_token(c->a);
	case NX_OP_INFEED: {
		if (!is_token(i->operands[0]->shape))
			return need_token(c, 0);
		if (dcl->type != NX_TUPLE || dcl->ntuple != 2 || !is_token(dcl->tuple[1]))
			return si_fail(c, "infeed result must be (data, token), declared %s", si_str(c, dcl));
		return si_declared(c);
	}
	case NX_OP_SEND: {
		if (!is_token(i->operands[1]->shape))
			return need_token(c, 1);
		nx_shape *e[3] = {nx_shape_copy(c->a, i->operands[0]->shape),
		                  nx_shape_scalar(c->a, NX_U32), nx_shape_token(c->a)};
		return nx_shape_tuple(c->a, 3, e);
	}
	case NX_OP_RECV: {
		if (!is_token(i->operands[0]->shape))
			return need_token(c, 0);
		if (dcl->type != NX_TUPLE || dcl->ntuple != 3 || !is_token(dcl->tuple[2]))
			return si_fail(c, "recv result must be (data, u32[], token), declared %s",
			               si_str(c, dcl));
		nx_shape *e[3] = {nx_shape_copy(c->a, dcl->tuple[0]), nx_shape_scalar(c->a, NX_U32),
		                  nx_shape_token(c->a)};
		return nx_shape_tuple(c->a, 3, e);
	}
	case NX_OP_SEND_DONE:
		if (i->operands[0]->op != NX_OP_SEND)
			return si_fail(c, "send-done operand must be a send");
		return nx_shape_token(c->a);
	case NX_OP_RECV_DONE: {
		const nx_shape *r = i->operands[0]->shape;
		if (i->operands[0]->op != NX_OP_RECV || r->type != NX_TUPLE || r->ntuple != 3)
			return si_fail(c, "recv-done operand must be a recv");
		nx_shape *e[2] = {nx_shape_copy(c->a, r->tuple[0]), nx_shape_token(c->a)};
		return nx_shape_tuple(c->a, 2, e);
	}
	default:
		NX_UNREACHABLE();
	}
}

/* --------------------------------------------------------- custom-call */

static bool ends_with(const char *s, const char *suf)
{
	size_t n = strlen(s), k = strlen(suf);
	return n >= k && strcmp(s + n - k, suf) == 0;
}

static nx_shape *infer_custom_call(const si_ctx *c)
{
	const nx_inst *i = c->i;
	const char *t = i->a.custom_call_target;
	if (!t)
		return si_fail(c, "custom-call has no custom_call_target");
	bool same_as_op0 = strcmp(t, "AwsNeuronGelu") == 0 || strcmp(t, "AwsNeuronSoftmax") == 0 ||
	                   strcmp(t, "AwsNeuronTransferWithStaticRing") == 0 ||
	                   (strncmp(t, "AwsNeuron", 9) == 0 && ends_with(t, "Backward"));
	if (same_as_op0) {
		if (i->noperands < 1)
			return si_fail(c, "custom-call %s needs an operand", t);
		if (strcmp(t, "AwsNeuronTransferWithStaticRing") == 0 && i->noperands != 1)
			return si_fail(c, "custom-call %s takes 1 operand, got %d", t, i->noperands);
		return nx_shape_copy(c->a, i->operands[0]->shape);
	}
	return si_declared(c);
}

bool si_is_coll(nx_opcode op)
{
	switch (op) {
	case NX_OP_ALL_REDUCE:
	case NX_OP_ALL_REDUCE_START:
	case NX_OP_ALL_REDUCE_DONE:
	case NX_OP_ALL_GATHER:
	case NX_OP_ALL_GATHER_START:
	case NX_OP_ALL_GATHER_DONE:
	case NX_OP_REDUCE_SCATTER:
	case NX_OP_ALL_TO_ALL:
	case NX_OP_RAGGED_ALL_TO_ALL:
	case NX_OP_COLLECTIVE_PERMUTE:
	case NX_OP_COLLECTIVE_PERMUTE_START:
	case NX_OP_COLLECTIVE_PERMUTE_DONE:
	case NX_OP_COLLECTIVE_BROADCAST:
	case NX_OP_COLLECTIVE_REDUCE:
	case NX_OP_REPLICA_ID:
	case NX_OP_PARTITION_ID:
	case NX_OP_COPY_START:
	case NX_OP_COPY_DONE:
	case NX_OP_ASYNC_START:
	case NX_OP_ASYNC_UPDATE:
	case NX_OP_ASYNC_DONE:
	case NX_OP_AFTER_ALL:
	case NX_OP_ADD_DEPENDENCY:
	case NX_OP_INFEED:
	case NX_OP_OUTFEED:
	case NX_OP_SEND:
	case NX_OP_SEND_DONE:
	case NX_OP_RECV:
	case NX_OP_RECV_DONE:
	case NX_OP_CUSTOM_CALL:
		return true;
	default:
		return false;
	}
}

nx_shape *si_infer_coll(const si_ctx *c)
{
	const nx_inst *i = c->i;
	if (i->a.async_wrapped != NX_OP_COUNT &&
	    (i->op == NX_OP_ASYNC_START || i->op == NX_OP_ASYNC_UPDATE || i->op == NX_OP_ASYNC_DONE))
		return infer_async(c);
	switch (i->op) {
	case NX_OP_ALL_REDUCE:
	case NX_OP_ALL_REDUCE_START: return infer_all_reduce(c);
	case NX_OP_ALL_REDUCE_DONE:
		if (i->operands[0]->op != NX_OP_ALL_REDUCE_START)
			return si_fail(c, "all-reduce-done operand must be an all-reduce-start");
		return nx_shape_copy(c->a, i->operands[0]->shape);
	case NX_OP_ALL_GATHER: return infer_gather_scatter(c, true);
	case NX_OP_ALL_GATHER_START: {
		nx_shape *res = infer_as(c, NX_OP_ALL_GATHER, 1);
		if (!res)
			return NULL;
		nx_shape *in = i->noperands == 1 ? nx_shape_copy(c->a, i->operands[0]->shape)
		                                 : operands_tuple(c, 0, i->noperands);
		nx_shape *e[2] = {in, res};
		return nx_shape_tuple(c->a, 2, e);
	}
	case NX_OP_ALL_GATHER_DONE: return infer_done(c, 1, NX_OP_ALL_GATHER_START);
	case NX_OP_REDUCE_SCATTER: return infer_gather_scatter(c, false);
	case NX_OP_ALL_TO_ALL: return infer_all_to_all(c);
	case NX_OP_RAGGED_ALL_TO_ALL:
		for (int k = 2; k < 6; k++) {
			const nx_shape *s = i->operands[k]->shape;
			if (!nx_shape_is_array(s) || s->rank != 1 || !nx_type_is_int(s->type))
				return si_fail(c, "ragged-all-to-all operand %d must be a rank-1 integer array, "
				               "got %s", k, si_str(c, s));
		}
		return nx_shape_copy(c->a, i->operands[1]->shape);
	case NX_OP_COLLECTIVE_PERMUTE: return infer_collective_permute(c);
	case NX_OP_COLLECTIVE_PERMUTE_START: {
		nx_shape *res = infer_collective_permute(c);
		if (!res)
			return NULL;
		nx_shape *e[2] = {nx_shape_copy(c->a, i->operands[0]->shape), res};
		return start_tuple(c, 2, e);
	}
	case NX_OP_COLLECTIVE_PERMUTE_DONE: return infer_done(c, 1, NX_OP_COLLECTIVE_PERMUTE_START);
	case NX_OP_COLLECTIVE_BROADCAST: return infer_plain_collective(c);
	case NX_OP_COLLECTIVE_REDUCE: return si_declared(c);
	case NX_OP_REPLICA_ID:
	case NX_OP_PARTITION_ID: return nx_shape_scalar(c->a, NX_U32);
	case NX_OP_COPY_START: {
		nx_shape *x = nx_shape_copy(c->a, i->operands[0]->shape);
		nx_shape *e[3] = {x, nx_shape_copy(c->a, x), nx_shape_scalar(c->a, NX_U32)};
		return nx_shape_tuple(c->a, 3, e);
	}
	case NX_OP_COPY_DONE: return infer_done(c, 0, NX_OP_COPY_START);
	case NX_OP_ASYNC_START:
	case NX_OP_ASYNC_UPDATE:
	case NX_OP_ASYNC_DONE: return infer_async(c);
	case NX_OP_CUSTOM_CALL: return infer_custom_call(c);
	default: return infer_token_op(c);
	}
}
