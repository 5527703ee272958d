/* ir/hlo/proto_read.c — serialized HloModuleProto -> nx_module.
 *
 * The bytes are untrusted: every id, count, enum, shape and literal size is
 * checked, and any problem becomes an nx_diag naming the instruction (no
 * line/col: a proto has none). nxcc_* extension fields, when present, win
 * over what the XLA fields would print (see ir/hlo/proto_write.c). */
#include "ir/hlo/proto.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_SHAPE_DEPTH = 64, MAX_WIRE_DEPTH = 100 };

typedef struct rctx {
	nx_module *m;
	nx_arena *a;
	const char *file;
	nx_diag *d;
} rctx;

static bool fail(rctx *r, const char *inst, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static bool fail(rctx *r, const char *inst, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (inst)
		nx_diag_set(r->d, NX_ERR_INPUT, r->file, 0, 0, "instruction '%s': %s", inst, msg);
	else
		nx_diag_set(r->d, NX_ERR_INPUT, r->file, 0, 0, "%s", msg);
	if (inst)
		nx_diag_set_inst(r->d, inst);
	return false;
}

static nx_ivec rivec(rctx *r, const int64_t *v, size_t n)
{
	return nx_ivec_dup(r->a, v, (int)n);
}

static const char *rstr(rctx *r, const char *s)
{
	return s && *s ? nx_arena_strdup(r->a, s) : NULL;
}

/* ------------------------------------------------------------------ wire depth */

/* protobuf-c unpacks nested messages recursively without a limit, so a few
 * kilobytes of nested tuple shapes could exhaust the stack. Walk the wire
 * format with the schema first and refuse deeper nesting than any real
 * module has. */
static bool varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	*v = 0;
	for (int s = 0; s < 64 && *p < end; s += 7) {
		uint8_t b = *(*p)++;
		*v |= (uint64_t)(b & 0x7f) << s;
		if (!(b & 0x80))
			return true;
	}
	return false;
}

static bool wire_depth_ok(const ProtobufCMessageDescriptor *md, const uint8_t *p,
                          const uint8_t *end, int depth)
{
	if (depth > MAX_WIRE_DEPTH)
		return false;
	while (p < end) {
		uint64_t tag, v;
		if (!varint(&p, end, &tag))
			return true; /* malformed: protobuf-c will say so */
		switch (tag & 7) {
		case 0:
			if (!varint(&p, end, &v))
				return true;
			break;
		case 1:
			p += 8;
			break;
		case 5:
			p += 4;
			break;
		case 2: {
			if (!varint(&p, end, &v) || v > (uint64_t)(end - p))
				return true;
			const ProtobufCFieldDescriptor *f =
				md ? protobuf_c_message_descriptor_get_field(md, (unsigned)(tag >> 3)) : NULL;
			if (f && f->type == PROTOBUF_C_TYPE_MESSAGE &&
			    !wire_depth_ok(f->descriptor, p, p + v, depth + 1))
				return false;
			p += v;
			break;
		}
		default:
			return true;
		}
	}
	return true;
}

/* ------------------------------------------------------------------ shapes */

static nx_shape *rshape(rctx *r, const Xla__ShapeProto *p, int depth, const char *inst)
{
	if (!p) {
		fail(r, inst, "missing shape");
		return NULL;
	}
	if (depth > MAX_SHAPE_DEPTH) {
		fail(r, inst, "shape nested deeper than %d", MAX_SHAPE_DEPTH);
		return NULL;
	}
	nx_type t = nx_type_from_proto((int)p->element_type);
	if (t == NX_TYPE_INVALID) {
		fail(r, inst, "unknown element type %d", (int)p->element_type);
		return NULL;
	}
	if (t == NX_TUPLE) {
		if (p->n_dimensions) {
			fail(r, inst, "tuple shape with dimensions");
			return NULL;
		}
		if (p->n_tuple_shapes > (size_t)1 << 20) {
			fail(r, inst, "tuple shape with too many elements");
			return NULL;
		}
		nx_shape **el = nx_arena_alloc(r->a, sizeof(nx_shape *) * (p->n_tuple_shapes + 1));
		for (size_t k = 0; k < p->n_tuple_shapes; k++)
			if (!(el[k] = rshape(r, p->tuple_shapes[k], depth + 1, inst)))
				return NULL;
		return nx_shape_tuple(r->a, (int)p->n_tuple_shapes, el);
	}
	if (!nx_type_is_array(t)) {
		nx_shape *s = nx_shape_token(r->a);
		s->type = t;
		return s;
	}
	if (p->n_tuple_shapes) {
		fail(r, inst, "array shape with tuple elements");
		return NULL;
	}
	if (p->n_dimensions > NX_MAX_RANK) {
		fail(r, inst, "shape of rank %zu (at most %d)", p->n_dimensions, NX_MAX_RANK);
		return NULL;
	}
	int rank = (int)p->n_dimensions;
	if (p->n_is_dynamic_dimension && p->n_is_dynamic_dimension != p->n_dimensions) {
		fail(r, inst, "shape has %zu dynamic-dimension flags for rank %d",
		     p->n_is_dynamic_dimension, rank);
		return NULL;
	}
	int64_t dims[NX_MAX_RANK];
	uint8_t dyn[NX_MAX_RANK];
	bool anydyn = false;
	for (int k = 0; k < rank; k++) {
		dims[k] = p->dimensions[k];
		dyn[k] = NX_DIM_STATIC;
		if (p->n_is_dynamic_dimension && p->is_dynamic_dimension[k]) {
			anydyn = true;
			dyn[k] = NX_DIM_BOUNDED;
			if (dims[k] == INT64_MIN || dims[k] == -1) {
				dyn[k] = NX_DIM_UNBOUNDED;
				dims[k] = -1;
			}
		}
		if (dims[k] < 0 && dyn[k] != NX_DIM_UNBOUNDED) {
			fail(r, inst, "negative dimension size %lld", (long long)dims[k]);
			return NULL;
		}
	}
	nx_shape *s = nx_shape_array(r->a, t, rank, dims);
	if (anydyn)
		s->dynamic = nx_arena_dup(r->a, dyn, (size_t)rank);
	else if (nx_shape_elems(s) < 0) {
		fail(r, inst, "shape has more than 2^63 elements");
		return NULL;
	}
	const Xla__LayoutProto *l = p->layout;
	if (l && l->n_minor_to_major) {
		if (l->n_minor_to_major != (size_t)rank) {
			fail(r, inst, "layout has %zu entries for rank %d", l->n_minor_to_major, rank);
			return NULL;
		}
		bool seen[NX_MAX_RANK] = {false};
		for (int k = 0; k < rank; k++) {
			int64_t v = l->minor_to_major[k];
			if (v < 0 || v >= rank || seen[v]) {
				fail(r, inst, "layout minor_to_major is not a permutation of the dimensions");
				return NULL;
			}
			seen[v] = true;
			s->minor_to_major[k] = v;
		}
	}
	if (l && l->nxcc_layout_extra)
		s->layout_extra = nx_arena_strdup(r->a, l->nxcc_layout_extra->text);
	else if (l)
		s->layout_extra = nx_pb_layout_extra_format(r->a, l);
	return s;
}

/* ------------------------------------------------------------------ literals */

static nx_literal *rliteral(rctx *r, const Xla__LiteralProto *p, const nx_shape *want, int depth,
                            const char *inst)
{
	if (depth > MAX_SHAPE_DEPTH) {
		fail(r, inst, "literal nested deeper than %d", MAX_SHAPE_DEPTH);
		return NULL;
	}
	nx_shape *s = p->shape ? rshape(r, p->shape, 0, inst) : nx_shape_copy(r->a, want);
	if (!s)
		return NULL;
	if (!nx_shape_compatible(s, want)) {
		fail(r, inst, "literal shape %s does not match %s", nx_shape_str(r->a, s, false),
		     nx_shape_str(r->a, want, false));
		return NULL;
	}
	nx_literal *lit = nx_arena_alloc(r->a, sizeof(*lit));
	lit->shape = s;
	if (s->type == NX_TUPLE) {
		if (p->n_tuple_literals != (size_t)s->ntuple) {
			fail(r, inst, "tuple literal has %zu elements, shape has %d", p->n_tuple_literals,
			     s->ntuple);
			return NULL;
		}
		lit->ntuple = s->ntuple;
		lit->tuple = nx_arena_alloc(r->a, sizeof(nx_literal *) * (size_t)(s->ntuple + 1));
		for (int k = 0; k < s->ntuple; k++)
			if (!(lit->tuple[k] = rliteral(r, p->tuple_literals[k], s->tuple[k], depth + 1, inst)))
				return NULL;
		return lit;
	}
	if (!nx_type_is_array(s->type))
		return lit;
	if (s->dynamic) {
		fail(r, inst, "literal with a dynamic shape");
		return NULL;
	}
	int64_t n = nx_shape_elems(s);
	int eb = nx_type_bytes(s->type);
	size_t cnt = 0, k = 1; /* values in the proto field, values per element */
	const void *src = NULL;
	switch (s->type) {
	case NX_PRED:
		cnt = p->n_preds;
		break;
#define BYTES(T, f) \
	case NX_##T: cnt = p->f.len; src = p->f.data; k = (size_t)eb; break;
	BYTES(S1, s1s) BYTES(S2, s2s) BYTES(S4, s4s) BYTES(S8, s8s)
	BYTES(U1, u1s) BYTES(U2, u2s) BYTES(U4, u4s) BYTES(U8, u8s)
	BYTES(F4E2M1FN, f4e2m1fns) BYTES(F8E5M2, f8e5m2s) BYTES(F8E4M3, f8e4m3s)
	BYTES(F8E4M3FN, f8e4m3fns) BYTES(F8E4M3B11FNUZ, f8e4m3b11fnuzs) BYTES(F8E3M4, f8e3m4s)
	BYTES(F8E5M2FNUZ, f8e5m2fnuzs) BYTES(F8E4M3FNUZ, f8e4m3fnuzs) BYTES(F8E8M0FNU, f8e8m0fnus)
	BYTES(F16, f16s) BYTES(BF16, bf16s) BYTES(S16, s16s) BYTES(U16, u16s)
#undef BYTES
#define REP(T, f, per) \
	case NX_##T: cnt = p->n_##f; src = p->f; k = (per); break;
	REP(S32, s32s, 1) REP(S64, s64s, 1) REP(U32, u32s, 1) REP(U64, u64s, 1)
	REP(F32, f32s, 1) REP(F64, f64s, 1) REP(C64, c64s, 2) REP(C128, c128s, 2)
#undef REP
	default:
		fail(r, inst, "no literal encoding for %s", nx_type_name(s->type));
		return NULL;
	}
	size_t have = cnt % k ? (size_t)-1 : cnt / k;
	if (have != (size_t)n) {
		if (have == (size_t)-1)
			fail(r, inst, "literal of shape %s has a partial element",
			     nx_shape_str(r->a, s, false));
		else
			fail(r, inst, "literal of shape %s has %zu elements, expected %lld",
			     nx_shape_str(r->a, s, false), have, (long long)n);
		return NULL;
	}
	if (n == 0)
		return lit;
	lit->nbytes = n * eb;
	uint8_t *phys = nx_arena_alloc(r->a, (size_t)lit->nbytes);
	if (s->type == NX_PRED) {
		for (int64_t i = 0; i < n; i++)
			phys[i] = p->preds[i] ? 1 : 0;
	} else {
		memcpy(phys, src, (size_t)lit->nbytes);
	}
	if (!nx_shape_has_default_layout(s) && s->rank > 1) {
		lit->data = nx_arena_alloc(r->a, (size_t)lit->nbytes);
		nx_pb_permute(s, phys, lit->data, eb, false);
	} else {
		lit->data = phys;
	}
	return lit;
}

/* ------------------------------------------------------------------ attributes */

static nx_kv *rkvs(rctx *r, Xla__NxccAttr *const *v, size_t n)
{
	nx_kv *kv = nx_arena_alloc(r->a, sizeof(nx_kv) * (n + 1));
	for (size_t i = 0; i < n; i++)
		kv[i] = (nx_kv){nx_arena_strdup(r->a, v[i]->key), nx_arena_strdup(r->a, v[i]->value)};
	return kv;
}

static nx_kv *rfrontend(rctx *r, const Xla__FrontendAttributes *f, int *n)
{
	nx_kv *kv = nx_arena_alloc(r->a, sizeof(nx_kv) * (f->n_map + 1));
	for (size_t i = 0; i < f->n_map; i++)
		kv[i] = (nx_kv){nx_arena_strdup(r->a, f->map[i]->key),
		                nx_arena_strdup(r->a, f->map[i]->value)};
	*n = (int)f->n_map;
	return kv;
}

static int find_name(const char *const *names, int n, const char *s)
{
	for (int i = 0; i < n; i++)
		if (strcmp(names[i], s) == 0)
			return i;
	return -1;
}

static const char *const cmp_dirs[] = {"", "EQ", "NE", "LT", "LE", "GT", "GE"};
static const char *const cmp_types[] = {"", "FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED"};

static bool rattrs(rctx *r, const Xla__HloInstructionProto *p, nx_inst *i)
{
	nx_attrs *a = &i->a;
	const char *nm = i->name;
	a->parameter_number = p->parameter_number;
	a->tuple_index = p->tuple_index;
	if (i->op == NX_OP_IOTA) {
		a->iota_dimension = p->n_dimensions ? p->dimensions[0] : 0;
	} else {
		a->dimensions = rivec(r, p->dimensions, p->n_dimensions);
		a->has_dimensions = p->nxcc_dimensions_given == 2 ||
		                    (p->nxcc_dimensions_given == 0 &&
		                     (p->n_dimensions || nx_pb_op_implies_dimensions(i->op)));
	}
	int v = find_name(cmp_dirs, 7, p->comparison_direction);
	if (v < 0)
		return fail(r, nm, "unknown comparison direction '%s'", p->comparison_direction);
	a->direction = (nx_cmp_dir)v;
	v = find_name(cmp_types, 5, p->comparison_type);
	if (v < 0)
		return fail(r, nm, "unknown comparison type '%s'", p->comparison_type);
	a->compare_type = (nx_cmp_type)v;
	if (p->comparison_order && *p->comparison_order) {
		/* as the text's order=: TOTAL on a float compare is TOTALORDER */
		if (!strcmp(p->comparison_order, "TOTAL")) {
			if (a->compare_type == NX_CMPT_DEFAULT || a->compare_type == NX_CMPT_FLOAT)
				a->compare_type = NX_CMPT_TOTALORDER;
		} else if (strcmp(p->comparison_order, "PARTIAL") != 0) {
			return fail(r, nm, "unknown comparison order '%s'", p->comparison_order);
		}
	}
	if (p->literal && !(a->literal = rliteral(r, p->literal, i->shape, 0, nm)))
		return false;
	if (i->op == NX_OP_CONSTANT && !a->literal)
		return fail(r, nm, "constant without a literal");
	size_t ns = p->n_slice_dimensions;
	if (ns) {
		a->slice_start = (nx_ivec){nx_arena_alloc(r->a, sizeof(int64_t) * ns), (int)ns};
		a->slice_limit = (nx_ivec){nx_arena_alloc(r->a, sizeof(int64_t) * ns), (int)ns};
		a->slice_stride = (nx_ivec){nx_arena_alloc(r->a, sizeof(int64_t) * ns), (int)ns};
		for (size_t k = 0; k < ns; k++) {
			a->slice_start.v[k] = p->slice_dimensions[k]->start;
			a->slice_limit.v[k] = p->slice_dimensions[k]->limit;
			a->slice_stride.v[k] = p->slice_dimensions[k]->stride;
		}
	}
	a->dynamic_slice_sizes = rivec(r, p->dynamic_slice_sizes, p->n_dynamic_slice_sizes);
	if (p->padding_config) {
		const Xla__PaddingConfig *pc = p->padding_config;
		a->npadding = (int)pc->n_dimensions;
		a->padding = nx_arena_alloc(r->a, sizeof(nx_pad_dim) * (pc->n_dimensions + 1));
		for (size_t k = 0; k < pc->n_dimensions; k++)
			a->padding[k] = (nx_pad_dim){pc->dimensions[k]->edge_padding_low,
			                             pc->dimensions[k]->edge_padding_high,
			                             pc->dimensions[k]->interior_padding};
	}
	if (p->window && p->window->n_dimensions) {
		const Xla__Window *w = p->window;
		a->window.ndims = (int)w->n_dimensions;
		a->window.dims = nx_arena_alloc(r->a, sizeof(nx_window_dim) * w->n_dimensions);
		for (size_t k = 0; k < w->n_dimensions; k++) {
			const Xla__WindowDimension *d = w->dimensions[k];
			a->window.dims[k] = (nx_window_dim){d->size, d->stride, d->padding_low,
			                                    d->padding_high, d->window_dilation,
			                                    d->base_dilation, d->window_reversal};
		}
	}
	if (p->convolution_dimension_numbers) {
		const Xla__ConvolutionDimensionNumbers *c = p->convolution_dimension_numbers;
		nx_conv_dnums *cd = &a->conv;
		cd->present = true;
		cd->in_batch = c->input_batch_dimension;
		cd->in_feature = c->input_feature_dimension;
		cd->in_spatial = rivec(r, c->input_spatial_dimensions, c->n_input_spatial_dimensions);
		cd->k_in = c->kernel_input_feature_dimension;
		cd->k_out = c->kernel_output_feature_dimension;
		cd->k_spatial = rivec(r, c->kernel_spatial_dimensions, c->n_kernel_spatial_dimensions);
		cd->out_batch = c->output_batch_dimension;
		cd->out_feature = c->output_feature_dimension;
		cd->out_spatial = rivec(r, c->output_spatial_dimensions, c->n_output_spatial_dimensions);
		/* The printer writes one dim_labels character per dimension up to the
		 * largest number named: an unchecked 1e15 would never finish. */
		int64_t one[6] = {cd->in_batch, cd->in_feature, cd->k_in, cd->k_out, cd->out_batch, cd->out_feature};
		const nx_ivec *sp[3] = {&cd->in_spatial, &cd->k_spatial, &cd->out_spatial};
		bool ok = true;
		for (int k = 0; k < 6; k++)
			ok &= one[k] >= 0 && one[k] < NX_MAX_RANK;
		for (int k = 0; k < 3; k++) {
			ok &= sp[k]->n <= NX_MAX_RANK;
			for (int j = 0; j < sp[k]->n; j++)
				ok &= sp[k]->v[j] >= 0 && sp[k]->v[j] < NX_MAX_RANK;
		}
		if (!ok)
			return fail(r, nm, "convolution dimension number out of range [0, %d)", NX_MAX_RANK);
	}
	a->feature_group_count = p->feature_group_count ? p->feature_group_count : 1;
	a->batch_group_count = p->batch_group_count ? p->batch_group_count : 1;
	if (p->dot_dimension_numbers) {
		const Xla__DotDimensionNumbers *dn = p->dot_dimension_numbers;
		a->dot.lhs_batch = rivec(r, dn->lhs_batch_dimensions, dn->n_lhs_batch_dimensions);
		a->dot.rhs_batch = rivec(r, dn->rhs_batch_dimensions, dn->n_rhs_batch_dimensions);
		a->dot.lhs_contracting = rivec(r, dn->lhs_contracting_dimensions, dn->n_lhs_contracting_dimensions);
		a->dot.rhs_contracting = rivec(r, dn->rhs_contracting_dimensions, dn->n_rhs_contracting_dimensions);
	}
	if (p->gather_dimension_numbers) {
		const Xla__GatherDimensionNumbers *g = p->gather_dimension_numbers;
		nx_gather_dnums *gd = &a->gather;
		gd->offset_dims = rivec(r, g->offset_dims, g->n_offset_dims);
		gd->collapsed_slice_dims = rivec(r, g->collapsed_slice_dims, g->n_collapsed_slice_dims);
		gd->start_index_map = rivec(r, g->start_index_map, g->n_start_index_map);
		gd->operand_batching_dims = rivec(r, g->operand_batching_dims, g->n_operand_batching_dims);
		gd->start_indices_batching_dims =
			rivec(r, g->start_indices_batching_dims, g->n_start_indices_batching_dims);
		gd->index_vector_dim = g->index_vector_dim;
		gd->slice_sizes = rivec(r, p->gather_slice_sizes, p->n_gather_slice_sizes);
		gd->indices_are_sorted = p->indices_are_sorted;
	}
	if (p->scatter_dimension_numbers) {
		const Xla__ScatterDimensionNumbers *s = p->scatter_dimension_numbers;
		nx_scatter_dnums *sd = &a->scatter;
		sd->update_window_dims = rivec(r, s->update_window_dims, s->n_update_window_dims);
		sd->inserted_window_dims = rivec(r, s->inserted_window_dims, s->n_inserted_window_dims);
		sd->scatter_dims_to_operand_dims =
			rivec(r, s->scatter_dims_to_operand_dims, s->n_scatter_dims_to_operand_dims);
		sd->input_batching_dims = rivec(r, s->input_batching_dims, s->n_input_batching_dims);
		sd->scatter_indices_batching_dims =
			rivec(r, s->scatter_indices_batching_dims, s->n_scatter_indices_batching_dims);
		sd->index_vector_dim = s->index_vector_dim;
		sd->indices_are_sorted = p->indices_are_sorted;
		sd->unique_indices = p->unique_indices;
	}
	a->custom_call_target = rstr(r, p->custom_call_target);
	if (p->nxcc_api_version)
		a->api_version = nx_arena_strdup(r->a, p->nxcc_api_version->text);
	else if (p->custom_call_api_version)
		a->api_version = nx_pb_api_version_name((int)p->custom_call_api_version);
	a->custom_call_has_side_effect = p->custom_call_has_side_effect;
	if (p->backend_config.len || p->nxcc_backend_config_empty) {
		a->backend_config = nx_arena_strndup(r->a, (const char *)p->backend_config.data,
		                                     p->backend_config.len);
		a->backend_config_raw = p->nxcc_backend_config_raw;
	}
	nx_replica_groups *g = &a->replica_groups;
	const Xla__CollectiveDeviceListProto *cl = p->collective_device_list;
	if (cl && cl->iota_replica_group_list) {
		const Xla__IotaReplicaGroupListProto *io = cl->iota_replica_group_list;
		g->iota = true;
		int64_t gs[2] = {io->num_replica_groups, io->num_devices_per_group};
		g->iota_shape = nx_ivec_dup(r->a, gs, 2);
		g->iota_reshape = rivec(r, io->iota_reshape_dims, io->n_iota_reshape_dims);
		g->iota_transpose = (nx_ivec){nx_arena_alloc(r->a, sizeof(int64_t) * (io->n_iota_transpose_perm + 1)),
		                              (int)io->n_iota_transpose_perm};
		for (size_t k = 0; k < io->n_iota_transpose_perm; k++)
			g->iota_transpose.v[k] = io->iota_transpose_perm[k];
	} else {
		Xla__ReplicaGroup *const *rg = cl ? cl->replica_groups : p->replica_groups;
		size_t nrg = cl ? cl->n_replica_groups : p->n_replica_groups;
		g->ngroups = (int)nrg;
		g->groups = nx_arena_alloc(r->a, sizeof(nx_ivec) * (nrg + 1));
		for (size_t k = 0; k < nrg; k++)
			g->groups[k] = rivec(r, rg[k]->replica_ids, rg[k]->n_replica_ids);
	}
	g->present = p->nxcc_replica_groups_given == 2 ||
	             (p->nxcc_replica_groups_given == 0 &&
	              (g->iota || g->ngroups || nx_pb_op_implies_replica_groups(i->op)));
	a->channel_id = p->channel_id > 0 ? p->channel_id : 0;
	a->use_global_device_ids = p->use_global_device_ids;
	a->constrain_layout = p->constrain_layout;
	if (p->n_source_target_pairs) {
		a->nsource_target_pairs = (int)p->n_source_target_pairs;
		a->source_target_pairs = nx_arena_alloc(r->a, sizeof(int64_t[2]) * p->n_source_target_pairs);
		for (size_t k = 0; k < p->n_source_target_pairs; k++) {
			a->source_target_pairs[k][0] = p->source_target_pairs[k]->source;
			a->source_target_pairs[k][1] = p->source_target_pairs[k]->target;
		}
	}
	if (i->op == NX_OP_FFT) {
		if ((unsigned)p->fft_type > 3)
			return fail(r, nm, "unknown fft_type %d", (int)p->fft_type);
		a->fft_type = (nx_fft_type)(p->fft_type + 1);
	}
	a->fft_length = rivec(r, p->fft_length, p->n_fft_length);
	a->epsilon = p->epsilon;
	a->feature_index = p->feature_index;
	if ((unsigned)p->rng_algorithm > 2)
		return fail(r, nm, "unknown rng_algorithm %d", (int)p->rng_algorithm);
	a->rng_algorithm = (nx_rng_algorithm)p->rng_algorithm;
	if ((unsigned)p->distribution > 2)
		return fail(r, nm, "unknown rng distribution %d", (int)p->distribution);
	a->rng_distribution = (nx_rng_distribution)p->distribution;
	a->exponent_bits = p->exponent_bits;
	a->mantissa_bits = p->mantissa_bits;
	a->is_stable = p->is_stable;
	a->fusion_kind = rstr(r, p->fusion_kind);
	if (*p->nxcc_async_wrapped) {
		a->async_wrapped = nx_opcode_from_name(p->nxcc_async_wrapped, strlen(p->nxcc_async_wrapped));
		if (a->async_wrapped == NX_OP_COUNT)
			return fail(r, nm, "unknown wrapped opcode '%s'", p->nxcc_async_wrapped);
	}
	if (p->nxcc_sharding)
		a->sharding = nx_arena_strdup(r->a, p->nxcc_sharding->text);
	else if (p->sharding)
		a->sharding = nx_pb_sharding_format(r->a, p->sharding); /* NULL: a form we cannot print */
	if (p->n_nxcc_metadata) {
		a->nmetadata = (int)p->n_nxcc_metadata;
		a->metadata = rkvs(r, p->nxcc_metadata, p->n_nxcc_metadata);
	} else if (p->metadata) {
		a->nmetadata = nx_pb_metadata_entries(r->a, p->metadata, &a->metadata);
	}
	if (p->frontend_attributes)
		a->frontend_attributes = rfrontend(r, p->frontend_attributes, &a->nfrontend_attributes);
	if (p->n_nxcc_unknown_attributes) {
		a->nunknown = (int)p->n_nxcc_unknown_attributes;
		a->unknown = rkvs(r, p->nxcc_unknown_attributes, p->n_nxcc_unknown_attributes);
	}
	if (i->op == NX_OP_TOPK) {
		/* XLA's k and largest fields; the IR keeps them as the text
		 * attributes "k=5, largest=true", first. */
		nx_kv *kv = nx_arena_alloc(r->a, sizeof(nx_kv) * (size_t)(a->nunknown + 3));
		kv[0] = (nx_kv){"k", nx_arena_printf(r->a, "%lld", (long long)p->k)};
		kv[1] = (nx_kv){"largest", p->largest ? "true" : "false"};
		for (int k = 0; k < a->nunknown; k++)
			kv[k + 2] = a->unknown[k];
		a->unknown = kv;
		a->nunknown += 2;
	}
	return true;
}

/* ------------------------------------------------------------------ id maps */

typedef struct idref {
	int64_t id;
	int index;
} idref;

static int cmp_idref(const void *x, const void *y)
{
	const idref *a = x, *b = y;
	return a->id < b->id ? -1 : a->id > b->id;
}

static int find_id(const idref *v, int n, int64_t id)
{
	idref key = {id, 0};
	const idref *f = bsearch(&key, v, (size_t)n, sizeof(idref), cmp_idref);
	return f ? f->index : -1;
}

/* ------------------------------------------------------------------ computations */

/* Orders c->insts so that operands and control predecessors come first,
 * keeping the proto order when it already is one; a cycle is an error. */
static bool topo_sort(rctx *r, nx_comp *c, const idref *ids)
{
	int n = c->ninsts;
	bool ordered = true;
	for (int k = 0; k < n && ordered; k++) {
		c->insts[k]->aux = (void *)(intptr_t)k;
	}
	for (int k = 0; k < n && ordered; k++) {
		nx_inst *in = c->insts[k];
		for (int o = 0; o < in->noperands && ordered; o++)
			ordered = (intptr_t)in->operands[o]->aux < k;
		for (int o = 0; o < in->a.ncontrol_predecessors && ordered; o++)
			ordered = (intptr_t)in->a.control_predecessors[o]->aux < k;
	}
	(void)ids;
	if (ordered)
		goto done;
	/* Iterative DFS: state 0 new, 1 on the stack, 2 placed. */
	uint8_t *state = calloc((size_t)n + 1, 1);
	int *stack = malloc(sizeof(int) * ((size_t)n + 1));
	int *next = calloc((size_t)n + 1, sizeof(int));
	nx_inst **out = nx_arena_alloc(r->a, sizeof(nx_inst *) * ((size_t)n + 1));
	NX_ASSERT(state && stack && next);
	int nout = 0;
	bool ok = true;
	for (int s = 0; s < n && ok; s++) {
		if (state[s])
			continue;
		int sp = 0;
		stack[sp++] = s;
		state[s] = 1;
		while (sp && ok) {
			int k = stack[sp - 1];
			nx_inst *in = c->insts[k];
			int deps = in->noperands + in->a.ncontrol_predecessors;
			if (next[k] < deps) {
				int e = next[k]++;
				nx_inst *dep = e < in->noperands ? in->operands[e]
				                                 : in->a.control_predecessors[e - in->noperands];
				int j = (int)(intptr_t)dep->aux;
				if (state[j] == 1) {
					ok = fail(r, in->name, "is part of a cycle in computation '%s'", c->name);
				} else if (state[j] == 0) {
					state[j] = 1;
					stack[sp++] = j;
				}
			} else {
				state[k] = 2;
				out[nout++] = in;
				sp--;
			}
		}
	}
	free(state);
	free(stack);
	free(next);
	if (!ok)
		return false;
	memcpy(c->insts, out, sizeof(nx_inst *) * (size_t)n);
done:
	for (int k = 0; k < n; k++)
		c->insts[k]->aux = NULL;
	return true;
}

static bool op_is_param(const nx_inst *i) { return i->op == NX_OP_PARAMETER; }

static bool rcomp_body(rctx *r, const Xla__HloComputationProto *p, nx_comp *c,
                       const idref *comp_ids, int ncomps)
{
	int n = (int)p->n_instructions;
	if (n == 0)
		return fail(r, NULL, "computation '%s' has no instructions", c->name);
	idref *ids = malloc(sizeof(idref) * (size_t)n);
	NX_ASSERT(ids);
	bool ok = true;
	for (int k = 0; k < n && ok; k++) {
		const Xla__HloInstructionProto *ip = p->instructions[k];
		const char *nm = *ip->name ? ip->name : "(unnamed)";
		nx_opcode op = nx_opcode_from_name(ip->opcode, strlen(ip->opcode));
		if (op == NX_OP_COUNT) {
			ok = fail(r, nm, "unknown opcode '%s'", ip->opcode);
			break;
		}
		nx_shape *s = rshape(r, ip->shape, 0, nm);
		if (!s) {
			ok = false;
			break;
		}
		nx_inst *in = nx_inst_new(c, op, s, NULL, 0, nm);
		in->id = ip->id;
		ids[k] = (idref){ip->id, k};
	}
	if (ok) {
		qsort(ids, (size_t)n, sizeof(idref), cmp_idref);
		for (int k = 1; k < n && ok; k++)
			if (ids[k].id == ids[k - 1].id)
				ok = fail(r, c->insts[ids[k].index]->name, "id %lld is used twice in computation '%s'",
				          (long long)ids[k].id, c->name);
	}
	for (int k = 0; k < n && ok; k++) {
		const Xla__HloInstructionProto *ip = p->instructions[k];
		nx_inst *in = c->insts[k];
		in->noperands = (int)ip->n_operand_ids;
		in->operands = nx_arena_alloc(r->a, sizeof(nx_inst *) * (ip->n_operand_ids + 1));
		for (size_t o = 0; o < ip->n_operand_ids && ok; o++) {
			int j = find_id(ids, n, ip->operand_ids[o]);
			if (j < 0)
				ok = fail(r, in->name, "operand %zu refers to id %lld, not an instruction of computation '%s'",
				          o, (long long)ip->operand_ids[o], c->name);
			else
				in->operands[o] = c->insts[j];
		}
		in->a.ncontrol_predecessors = (int)ip->n_control_predecessor_ids;
		in->a.control_predecessors = nx_arena_alloc(r->a, sizeof(nx_inst *) * (ip->n_control_predecessor_ids + 1));
		for (size_t o = 0; o < ip->n_control_predecessor_ids && ok; o++) {
			int j = find_id(ids, n, ip->control_predecessor_ids[o]);
			if (j < 0)
				ok = fail(r, in->name, "control predecessor id %lld is not an instruction of computation '%s'",
				          (long long)ip->control_predecessor_ids[o], c->name);
			else
				in->a.control_predecessors[o] = c->insts[j];
		}
		in->ncalled = (int)ip->n_called_computation_ids;
		in->called = nx_arena_alloc(r->a, sizeof(nx_comp *) * (ip->n_called_computation_ids + 1));
		for (size_t o = 0; o < ip->n_called_computation_ids && ok; o++) {
			int j = find_id(comp_ids, ncomps, ip->called_computation_ids[o]);
			if (j < 0)
				ok = fail(r, in->name, "calls computation id %lld, which does not exist",
				          (long long)ip->called_computation_ids[o]);
			else
				in->called[o] = r->m->comps[j];
		}
		/* XLA keeps a while's body first (kBodyComputationIndex = 0); the IR
		 * keeps the condition first, as the text lists it. */
		if (ok && in->op == NX_OP_WHILE && in->ncalled == 2) {
			nx_comp *body = in->called[0];
			in->called[0] = in->called[1];
			in->called[1] = body;
		}
		if (ok)
			ok = rattrs(r, ip, in);
		if (ok && op_is_param(in)) {
			int64_t pn = in->a.parameter_number;
			if (pn < 0 || pn >= n)
				ok = fail(r, in->name, "parameter number %lld out of range", (long long)pn);
			else if (pn < c->nparams && c->params[pn])
				ok = fail(r, in->name, "parameter number %lld is used twice in computation '%s'",
				          (long long)pn, c->name);
			else
				nx_comp_add_param(c, in);
		}
	}
	for (int k = 0; k < c->nparams && ok; k++)
		if (!c->params[k])
			ok = fail(r, NULL, "computation '%s' has no parameter %d", c->name, k);
	if (ok) {
		int j = find_id(ids, n, p->root_id);
		if (j < 0)
			ok = fail(r, NULL, "computation '%s': root id %lld is not one of its instructions",
			          c->name, (long long)p->root_id);
		else
			c->root = c->insts[j];
	}
	if (ok)
		ok = topo_sort(r, c, ids);
	free(ids);
	if (ok) {
		const char *t = p->execution_thread;
		c->execution_thread = *t && strcmp(t, "main") != 0 ? nx_arena_strdup(r->a, t) : NULL;
	}
	return ok;
}

/* A computation must not call itself, directly or through others. */
static bool check_call_cycles(rctx *r)
{
	nx_module *m = r->m;
	int n = m->ncomps;
	for (int k = 0; k < n; k++)
		m->comps[k]->line = k; /* scratch index; reset below */
	uint8_t *state = calloc((size_t)n + 1, 1);
	int *stack = malloc(sizeof(int) * ((size_t)n + 1));
	int *ni = calloc((size_t)n + 1, sizeof(int)), *nc = calloc((size_t)n + 1, sizeof(int));
	NX_ASSERT(state && stack && ni && nc);
	bool ok = true;
	for (int s = 0; s < n && ok; s++) {
		if (state[s])
			continue;
		int sp = 0;
		stack[sp++] = s;
		state[s] = 1;
		while (sp && ok) {
			int k = stack[sp - 1];
			nx_comp *c = m->comps[k];
			/* Next (instruction, callee) pair of c. */
			nx_comp *callee = NULL;
			while (!callee && ni[k] < c->ninsts) {
				nx_inst *in = c->insts[ni[k]];
				if (nc[k] < in->ncalled) {
					callee = in->called[nc[k]++];
				} else {
					ni[k]++;
					nc[k] = 0;
				}
			}
			if (!callee) {
				state[k] = 2;
				sp--;
				continue;
			}
			int j = callee->line;
			if (state[j] == 1) {
				ok = fail(r, c->insts[ni[k]]->name,
				          "calls computation '%s', which is part of a call cycle", callee->name);
			} else if (state[j] == 0) {
				state[j] = 1;
				stack[sp++] = j;
			}
		}
	}
	for (int k = 0; k < n; k++)
		m->comps[k]->line = 0;
	free(state);
	free(stack);
	free(ni);
	free(nc);
	return ok;
}

static bool rmodule(rctx *r, const Xla__HloModuleProto *p)
{
	nx_module *m = r->m;
	int n = (int)p->n_computations;
	if (n == 0)
		return fail(r, NULL, "module '%s' has no computations", m->name);
	idref *cids = malloc(sizeof(idref) * (size_t)n);
	NX_ASSERT(cids);
	for (int k = 0; k < n; k++) {
		const Xla__HloComputationProto *cp = p->computations[k];
		nx_comp *c = nx_comp_new(m, *cp->name ? cp->name : "(unnamed)");
		c->id = cp->id;
		cids[k] = (idref){cp->id, k};
	}
	qsort(cids, (size_t)n, sizeof(idref), cmp_idref);
	bool ok = true;
	for (int k = 1; k < n && ok; k++)
		if (cids[k].id == cids[k - 1].id)
			ok = fail(r, NULL, "computations '%s' and '%s' share id %lld",
			          m->comps[cids[k - 1].index]->name, m->comps[cids[k].index]->name,
			          (long long)cids[k].id);
	for (int k = 0; k < n && ok; k++)
		ok = rcomp_body(r, p->computations[k], m->comps[k], cids, n);
	if (ok) {
		int j = find_id(cids, n, p->entry_computation_id);
		if (j < 0 || (*p->entry_computation_name &&
		              strcmp(m->comps[j]->name, p->entry_computation_name) != 0)) {
			j = -1;
			for (int k = 0; k < n && j < 0; k++)
				if (*p->entry_computation_name &&
				    strcmp(m->comps[k]->name, p->entry_computation_name) == 0)
					j = k;
		}
		if (j < 0)
			ok = fail(r, NULL, "entry computation (id %lld, name '%s') not found",
			          (long long)p->entry_computation_id, p->entry_computation_name);
		else {
			m->entry = m->comps[j];
			m->entry->is_entry = true;
		}
	}
	free(cids);
	if (!ok || !check_call_cycles(r))
		return false;
	/* Instruction ids are module-wide references in XLA (and our writer). */
	size_t ni = 0;
	for (int c = 0; c < n; c++)
		ni += (size_t)m->comps[c]->ninsts;
	idref *all = malloc(sizeof(idref) * (ni + 1));
	NX_ASSERT(all);
	ni = 0;
	int64_t maxid = 0;
	for (int c = 0; c < n; c++) {
		if (m->comps[c]->id > maxid)
			maxid = m->comps[c]->id;
		for (int k = 0; k < m->comps[c]->ninsts; k++) {
			nx_inst *in = m->comps[c]->insts[k];
			all[ni++] = (idref){in->id, c};
			if (in->id > maxid)
				maxid = in->id;
		}
	}
	qsort(all, ni, sizeof(idref), cmp_idref);
	for (size_t k = 1; k < ni && ok; k++)
		if (all[k].id == all[k - 1].id)
			ok = fail(r, NULL, "instruction id %lld is used in computations '%s' and '%s'",
			          (long long)all[k].id, m->comps[all[k - 1].index]->name,
			          m->comps[all[k].index]->name);
	free(all);
	if (!ok)
		return false;
	m->next_id = maxid < INT64_MAX ? maxid + 1 : maxid;

	const Xla__ProgramShapeProto *hs = p->host_program_shape;
	if (hs && !p->nxcc_no_entry_layout) {
		size_t np = hs->n_parameters;
		nx_shape **el = nx_arena_alloc(r->a, sizeof(nx_shape *) * (np + 2));
		for (size_t k = 0; k < np; k++)
			if (!(el[k] = rshape(r, hs->parameters[k], 0, NULL)))
				return false;
		if (!hs->result)
			return fail(r, NULL, "host_program_shape has no result shape");
		if (!(el[np] = rshape(r, hs->result, 0, NULL)))
			return false;
		m->entry_layout = nx_shape_tuple(r->a, (int)np + 1, el);
		m->entry_layout_nparams = (int)np;
	}
	if (p->input_output_alias && p->input_output_alias->n_entries) {
		const Xla__HloInputOutputAliasProto *io = p->input_output_alias;
		m->naliases = (int)io->n_entries;
		m->aliases = nx_arena_alloc(r->a, sizeof(nx_alias) * io->n_entries);
		for (size_t k = 0; k < io->n_entries; k++) {
			const Xla__HloInputOutputAliasProto__AliasEntryProto *e = io->entries[k];
			nx_alias *al = &m->aliases[k];
			if ((unsigned)e->kind > 2)
				return fail(r, NULL, "input_output_alias entry %zu has unknown kind %d", k,
				            (int)e->kind);
			if (e->parameter_number < 0 || e->parameter_number >= m->entry->nparams)
				return fail(r, NULL, "input_output_alias entry %zu names parameter %lld of %d", k,
				            (long long)e->parameter_number, m->entry->nparams);
			al->output_index = rivec(r, e->output_shape_index, e->n_output_shape_index);
			al->param_number = e->parameter_number;
			al->param_index = rivec(r, e->parameter_shape_index, e->n_parameter_shape_index);
			al->must_alias = e->kind == XLA__KIND__MUST_ALIAS;
			al->kind_given = e->kind != XLA__KIND__UNDEFINED_ALIAS && !e->nxcc_kind_omitted;
		}
	}
	m->is_scheduled = p->schedule != NULL;
	if (p->frontend_attributes)
		m->frontend_attributes = rfrontend(r, p->frontend_attributes, &m->nfrontend_attributes);
	if (p->stack_frame_index) {
		char err[200];
		if (!nx_pb_stack_frames_from(r->a, p->stack_frame_index, &m->stack, err, sizeof err))
			return fail(r, NULL, "%s", err);
	}
	m->replica_count = p->nxcc_replica_count;
	m->num_partitions = p->nxcc_num_partitions;
	if (p->n_nxcc_unknown_attributes) {
		m->nunknown = (int)p->n_nxcc_unknown_attributes;
		m->unknown = rkvs(r, p->nxcc_unknown_attributes, p->n_nxcc_unknown_attributes);
	}
	return true;
}

nx_module *nx_read_proto(const void *data, size_t len, const char *file, nx_diag *d)
{
	const uint8_t *b = data;
	if (!wire_depth_ok(&xla__hlo_module_proto__descriptor, b, b + len, 0)) {
		nx_diag_set(d, NX_ERR_INPUT, file, 0, 0,
		            "not a valid HloModuleProto: messages nested deeper than %d", MAX_WIRE_DEPTH);
		return NULL;
	}
	Xla__HloModuleProto *p = xla__hlo_module_proto__unpack(NULL, len, b);
	/* A module always has computations; without any, the bytes may be the
	 * HloProto wrapper (hlo_module = 1) that XLA's tools write. */
	Xla__HloProto *w = NULL;
	if (!p || p->n_computations == 0) {
		w = wire_depth_ok(&xla__hlo_proto__descriptor, b, b + len, 0)
		        ? xla__hlo_proto__unpack(NULL, len, b) : NULL;
		if (w && w->hlo_module && w->hlo_module->n_computations) {
			if (p)
				xla__hlo_module_proto__free_unpacked(p, NULL);
			p = w->hlo_module;
		} else if (w) {
			xla__hlo_proto__free_unpacked(w, NULL);
			w = NULL;
		}
	}
	if (!p) {
		nx_diag_set(d, NX_ERR_INPUT, file, 0, 0, "not a valid HloModuleProto (nor an HloProto holding one)");
		return NULL;
	}
	nx_module *m = nx_module_new(*p->name ? p->name : "module");
	m->file = file ? nx_arena_strdup(&m->arena, file) : NULL;
	rctx r = {m, &m->arena, file, d};
	bool ok = rmodule(&r, p);
	if (w)
		xla__hlo_proto__free_unpacked(w, NULL);
	else
		xla__hlo_module_proto__free_unpacked(p, NULL);
	if (!ok) {
		nx_module_free(m);
		return NULL;
	}
	return m;
}
