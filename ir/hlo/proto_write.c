/* ir/hlo/proto_write.c — nx_module -> serialized HloModuleProto.
 *
 * Every protobuf-c struct is built in a scratch arena that dies after
 * packing. Where the IR holds text that XLA's proto structures (sharding,
 * metadata, tiles, api_version), the writer fills the XLA fields and, when
 * the reader would not print them back identically, also the nxcc_* extension
 * field with the text (docs/proto.md). */
#include "ir/hlo/proto.h"

#include <stdlib.h>
#include <string.h>

typedef struct wctx {
	nx_arena a; /* scratch: all protobuf-c structs */
	const nx_module *m;
	nx_diag *d;
	bool failed;
} wctx;

static char *wstr(wctx *w, const char *s)
{
	return s ? nx_arena_strdup(&w->a, s) : (char *)protobuf_c_empty_string;
}

static int64_t *wivec(wctx *w, nx_ivec v, size_t *n)
{
	*n = (size_t)v.n;
	return v.n ? nx_arena_dup(&w->a, v.v, sizeof(int64_t) * (size_t)v.n) : NULL;
}

static Xla__ShapeProto *wshape(wctx *w, const nx_shape *s)
{
	Xla__ShapeProto *p;
	NX_PB_NEW(&w->a, p, Xla__ShapeProto, XLA__SHAPE_PROTO__INIT);
	p->element_type = (Xla__PrimitiveType)nx_type_proto(s->type);
	if (s->type == NX_TUPLE) {
		p->n_tuple_shapes = (size_t)s->ntuple;
		p->tuple_shapes = nx_arena_alloc(&w->a, sizeof(*p->tuple_shapes) * (size_t)(s->ntuple + 1));
		for (int i = 0; i < s->ntuple; i++)
			p->tuple_shapes[i] = wshape(w, s->tuple[i]);
		return p;
	}
	if (!nx_type_is_array(s->type))
		return p;
	p->n_dimensions = (size_t)s->rank;
	p->dimensions = nx_arena_alloc(&w->a, sizeof(int64_t) * (size_t)(s->rank + 1));
	for (int i = 0; i < s->rank; i++) {
		bool unbounded = s->dynamic && s->dynamic[i] == NX_DIM_UNBOUNDED;
		p->dimensions[i] = unbounded ? INT64_MIN : s->dims[i]; /* XLA's kUnboundedSize */
	}
	if (s->dynamic) {
		p->n_is_dynamic_dimension = (size_t)s->rank;
		p->is_dynamic_dimension = nx_arena_alloc(&w->a, sizeof(protobuf_c_boolean) * (size_t)(s->rank + 1));
		for (int i = 0; i < s->rank; i++)
			p->is_dynamic_dimension[i] = s->dynamic[i] != NX_DIM_STATIC;
	}
	Xla__LayoutProto *l;
	NX_PB_NEW(&w->a, l, Xla__LayoutProto, XLA__LAYOUT_PROTO__INIT);
	l->n_minor_to_major = (size_t)s->rank;
	l->minor_to_major = nx_arena_alloc(&w->a, sizeof(int64_t) * (size_t)(s->rank + 1));
	memcpy(l->minor_to_major, s->minor_to_major, sizeof(int64_t) * (size_t)s->rank);
	if (s->layout_extra) {
		Xla__LayoutProto tmp = XLA__LAYOUT_PROTO__INIT;
		bool ok = nx_pb_layout_extra_parse(&w->a, s->layout_extra, &tmp);
		char *back = ok ? nx_pb_layout_extra_format(&w->a, &tmp) : NULL;
		/* What parsed before an unknown item still tells XLA the tiling. */
		l->n_tiles = tmp.n_tiles;
		l->tiles = tmp.tiles;
		l->element_size_in_bits = tmp.element_size_in_bits;
		l->memory_space = tmp.memory_space;
		if (!back || strcmp(back, s->layout_extra) != 0) {
			NX_PB_NEW(&w->a, l->nxcc_layout_extra, Xla__NxccText, XLA__NXCC_TEXT__INIT);
			l->nxcc_layout_extra->text = wstr(w, s->layout_extra);
		}
	}
	p->layout = l;
	return p;
}

/* ------------------------------------------------------------------ literals */

static Xla__LiteralProto *wliteral(wctx *w, const nx_literal *lit)
{
	Xla__LiteralProto *p;
	NX_PB_NEW(&w->a, p, Xla__LiteralProto, XLA__LITERAL_PROTO__INIT);
	p->shape = wshape(w, lit->shape);
	const nx_shape *s = lit->shape;
	if (s->type == NX_TUPLE) {
		p->n_tuple_literals = (size_t)lit->ntuple;
		p->tuple_literals = nx_arena_alloc(&w->a, sizeof(*p->tuple_literals) * (size_t)(lit->ntuple + 1));
		for (int i = 0; i < lit->ntuple; i++)
			p->tuple_literals[i] = wliteral(w, lit->tuple[i]);
		return p;
	}
	if (!nx_type_is_array(s->type))
		return p;
	int64_t n = nx_shape_elems(s);
	int eb = nx_type_bytes(s->type);
	if (n <= 0 || !lit->data || lit->nbytes < n * eb)
		return p;
	/* LiteralProto holds the elements in the layout's physical order. */
	const uint8_t *src = lit->data;
	if (!nx_shape_has_default_layout(s) && s->rank > 1) {
		uint8_t *t = nx_arena_alloc(&w->a, (size_t)(n * eb));
		nx_pb_permute(s, lit->data, t, eb, true);
		src = t;
	}
	size_t nb = (size_t)(n * eb);
	ProtobufCBinaryData bin = {nb, nx_arena_dup(&w->a, src, nb)};
	switch (s->type) {
	case NX_PRED:
		p->n_preds = (size_t)n;
		p->preds = nx_arena_alloc(&w->a, sizeof(protobuf_c_boolean) * (size_t)n);
		for (int64_t i = 0; i < n; i++)
			p->preds[i] = src[i] != 0;
		break;
#define BYTES(T, f) \
	case NX_##T: p->f = bin; break;
	BYTES(S1, s1s) BYTES(S2, s2s) BYTES(S4, s4s) BYTES(S8, s8s)
	BYTES(U1, u1s) BYTES(U2, u2s) BYTES(U4, u4s) BYTES(U8, u8s)
	BYTES(F4E2M1FN, f4e2m1fns) BYTES(F8E5M2, f8e5m2s) BYTES(F8E4M3, f8e4m3s)
	BYTES(F8E4M3FN, f8e4m3fns) BYTES(F8E4M3B11FNUZ, f8e4m3b11fnuzs) BYTES(F8E3M4, f8e3m4s)
	BYTES(F8E5M2FNUZ, f8e5m2fnuzs) BYTES(F8E4M3FNUZ, f8e4m3fnuzs) BYTES(F8E8M0FNU, f8e8m0fnus)
	/* 16-bit types: little-endian bytes, which is our storage on every host we build for. */
	BYTES(F16, f16s) BYTES(BF16, bf16s) BYTES(S16, s16s) BYTES(U16, u16s)
#undef BYTES
#define REP(T, f, k) \
	case NX_##T: p->n_##f = (size_t)n * (k); p->f = (void *)bin.data; break;
	REP(S32, s32s, 1) REP(S64, s64s, 1) REP(U32, u32s, 1) REP(U64, u64s, 1)
	REP(F32, f32s, 1) REP(F64, f64s, 1) REP(C64, c64s, 2) REP(C128, c128s, 2)
#undef REP
	default:
		break;
	}
	return p;
}

/* ------------------------------------------------------------------ attributes */

static Xla__NxccAttr **wkvs(wctx *w, const nx_kv *kv, int n)
{
	Xla__NxccAttr **v = nx_arena_alloc(&w->a, sizeof(*v) * (size_t)(n + 1));
	for (int i = 0; i < n; i++) {
		NX_PB_NEW(&w->a, v[i], Xla__NxccAttr, XLA__NXCC_ATTR__INIT);
		v[i]->key = wstr(w, kv[i].key);
		v[i]->value = wstr(w, kv[i].value);
	}
	return v;
}

static Xla__FrontendAttributes *wfrontend(wctx *w, const nx_kv *kv, int n)
{
	Xla__FrontendAttributes *f;
	NX_PB_NEW(&w->a, f, Xla__FrontendAttributes, XLA__FRONTEND_ATTRIBUTES__INIT);
	/* Map entries go out in IR order; protobuf-c reads them back in wire order. */
	f->n_map = (size_t)n;
	f->map = nx_arena_alloc(&w->a, sizeof(*f->map) * (size_t)(n + 1));
	for (int i = 0; i < n; i++) {
		NX_PB_NEW(&w->a, f->map[i], Xla__FrontendAttributes__MapEntry,
		          XLA__FRONTEND_ATTRIBUTES__MAP_ENTRY__INIT);
		f->map[i]->key = wstr(w, kv[i].key);
		f->map[i]->value = wstr(w, kv[i].value);
	}
	return f;
}

static void wmetadata(wctx *w, const nx_inst *i, Xla__HloInstructionProto *p)
{
	if (!i->a.nmetadata)
		return;
	NX_PB_NEW(&w->a, p->metadata, Xla__OpMetadata, XLA__OP_METADATA__INIT);
	nx_pb_metadata_fill(&w->a, i->a.metadata, i->a.nmetadata, p->metadata);
	nx_kv *back;
	int nb = nx_pb_metadata_entries(&w->a, p->metadata, &back);
	bool same = nb == i->a.nmetadata;
	for (int k = 0; same && k < nb; k++)
		same = strcmp(back[k].key, i->a.metadata[k].key) == 0 &&
		       strcmp(back[k].value, i->a.metadata[k].value) == 0;
	if (!same) {
		p->n_nxcc_metadata = (size_t)i->a.nmetadata;
		p->nxcc_metadata = wkvs(w, i->a.metadata, i->a.nmetadata);
	}
}

static void wsharding(wctx *w, const char *text, Xla__HloInstructionProto *p)
{
	Xla__OpSharding *s;
	bool ok = nx_pb_sharding_parse(&w->a, text, &s);
	char *back = ok ? nx_pb_sharding_format(&w->a, s) : NULL;
	if (ok)
		p->sharding = s;
	if (!back || strcmp(back, text) != 0) {
		NX_PB_NEW(&w->a, p->nxcc_sharding, Xla__NxccText, XLA__NXCC_TEXT__INIT);
		p->nxcc_sharding->text = wstr(w, text);
	}
}

static Xla__ReplicaGroup **wgroups(wctx *w, const nx_replica_groups *g)
{
	Xla__ReplicaGroup **v = nx_arena_alloc(&w->a, sizeof(*v) * (size_t)(g->ngroups + 1));
	for (int k = 0; k < g->ngroups; k++) {
		NX_PB_NEW(&w->a, v[k], Xla__ReplicaGroup, XLA__REPLICA_GROUP__INIT);
		v[k]->replica_ids = wivec(w, g->groups[k], &v[k]->n_replica_ids);
	}
	return v;
}

static void wreplica_groups(wctx *w, const nx_inst *i, Xla__HloInstructionProto *p)
{
	const nx_replica_groups *g = &i->a.replica_groups;
	bool implied = nx_pb_op_implies_replica_groups(i->op) || g->ngroups || g->iota;
	if (implied != g->present)
		p->nxcc_replica_groups_given = g->present ? 2 : 1;
	if (!g->present)
		return;
	Xla__CollectiveDeviceListProto *cl;
	NX_PB_NEW(&w->a, cl, Xla__CollectiveDeviceListProto, XLA__COLLECTIVE_DEVICE_LIST_PROTO__INIT);
	p->collective_device_list = cl;
	if (g->iota) {
		Xla__IotaReplicaGroupListProto *io;
		NX_PB_NEW(&w->a, io, Xla__IotaReplicaGroupListProto,
		          XLA__IOTA_REPLICA_GROUP_LIST_PROTO__INIT);
		io->num_replica_groups = g->iota_shape.n > 0 ? g->iota_shape.v[0] : 0;
		io->num_devices_per_group = g->iota_shape.n > 1 ? g->iota_shape.v[1] : 0;
		io->iota_reshape_dims = wivec(w, g->iota_reshape, &io->n_iota_reshape_dims);
		io->n_iota_transpose_perm = (size_t)g->iota_transpose.n;
		io->iota_transpose_perm = nx_arena_alloc(&w->a, sizeof(int32_t) * (size_t)(g->iota_transpose.n + 1));
		for (int k = 0; k < g->iota_transpose.n; k++)
			io->iota_transpose_perm[k] = (int32_t)g->iota_transpose.v[k];
		cl->iota_replica_group_list = io;
		return;
	}
	cl->n_replica_groups = (size_t)g->ngroups;
	cl->replica_groups = wgroups(w, g);
	/* The deprecated field too, for XLA versions before the device list. */
	p->n_replica_groups = (size_t)g->ngroups;
	p->replica_groups = cl->replica_groups;
}

static const char *const cmp_dirs[] = {"", "EQ", "NE", "LT", "LE", "GT", "GE"};
static const char *const cmp_types[] = {"", "FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED"};

static void wattrs(wctx *w, const nx_inst *i, Xla__HloInstructionProto *p)
{
	const nx_attrs *a = &i->a;
	nx_arena *ar = &w->a;
	if (i->op == NX_OP_PARAMETER)
		p->parameter_number = a->parameter_number;
	p->tuple_index = a->tuple_index;
	if (i->op == NX_OP_IOTA) {
		p->n_dimensions = 1;
		p->dimensions = nx_arena_dup(ar, &a->iota_dimension, sizeof(int64_t));
	} else {
		p->dimensions = wivec(w, a->dimensions, &p->n_dimensions);
		bool implied = nx_pb_op_implies_dimensions(i->op) || a->dimensions.n > 0;
		if (implied != a->has_dimensions)
			p->nxcc_dimensions_given = a->has_dimensions ? 2 : 1;
	}
	p->comparison_direction = (char *)cmp_dirs[a->direction];
	p->comparison_type = (char *)cmp_types[a->compare_type];
	if (a->literal)
		p->literal = wliteral(w, a->literal);
	int ns = a->slice_start.n;
	if (ns) {
		p->n_slice_dimensions = (size_t)ns;
		p->slice_dimensions = nx_arena_alloc(ar, sizeof(*p->slice_dimensions) * (size_t)ns);
		for (int k = 0; k < ns; k++) {
			Xla__HloInstructionProto__SliceDimensions *sd;
			NX_PB_NEW(ar, sd, Xla__HloInstructionProto__SliceDimensions,
			          XLA__HLO_INSTRUCTION_PROTO__SLICE_DIMENSIONS__INIT);
			sd->start = a->slice_start.v[k];
			sd->limit = k < a->slice_limit.n ? a->slice_limit.v[k] : 0;
			sd->stride = k < a->slice_stride.n ? a->slice_stride.v[k] : 1;
			p->slice_dimensions[k] = sd;
		}
	}
	p->dynamic_slice_sizes = wivec(w, a->dynamic_slice_sizes, &p->n_dynamic_slice_sizes);
	if (a->padding) {
		Xla__PaddingConfig *pc;
		NX_PB_NEW(ar, pc, Xla__PaddingConfig, XLA__PADDING_CONFIG__INIT);
		pc->n_dimensions = (size_t)a->npadding;
		pc->dimensions = nx_arena_alloc(ar, sizeof(*pc->dimensions) * (size_t)(a->npadding + 1));
		for (int k = 0; k < a->npadding; k++) {
			Xla__PaddingConfig__PaddingConfigDimension *pd;
			NX_PB_NEW(ar, pd, Xla__PaddingConfig__PaddingConfigDimension,
			          XLA__PADDING_CONFIG__PADDING_CONFIG_DIMENSION__INIT);
			pd->edge_padding_low = a->padding[k].lo;
			pd->edge_padding_high = a->padding[k].hi;
			pd->interior_padding = a->padding[k].interior;
			pc->dimensions[k] = pd;
		}
		p->padding_config = pc;
	}
	if (a->window.ndims) {
		Xla__Window *wi;
		NX_PB_NEW(ar, wi, Xla__Window, XLA__WINDOW__INIT);
		wi->n_dimensions = (size_t)a->window.ndims;
		wi->dimensions = nx_arena_alloc(ar, sizeof(*wi->dimensions) * (size_t)a->window.ndims);
		for (int k = 0; k < a->window.ndims; k++) {
			const nx_window_dim *wd = &a->window.dims[k];
			Xla__WindowDimension *pd;
			NX_PB_NEW(ar, pd, Xla__WindowDimension, XLA__WINDOW_DIMENSION__INIT);
			pd->size = wd->size;
			pd->stride = wd->stride;
			pd->padding_low = wd->pad_lo;
			pd->padding_high = wd->pad_hi;
			pd->window_dilation = wd->window_dilation;
			pd->base_dilation = wd->base_dilation;
			pd->window_reversal = wd->reversal;
			wi->dimensions[k] = pd;
		}
		p->window = wi;
	}
	if (a->conv.present) {
		Xla__ConvolutionDimensionNumbers *c;
		NX_PB_NEW(ar, c, Xla__ConvolutionDimensionNumbers, XLA__CONVOLUTION_DIMENSION_NUMBERS__INIT);
		c->input_batch_dimension = a->conv.in_batch;
		c->input_feature_dimension = a->conv.in_feature;
		c->input_spatial_dimensions = wivec(w, a->conv.in_spatial, &c->n_input_spatial_dimensions);
		c->kernel_input_feature_dimension = a->conv.k_in;
		c->kernel_output_feature_dimension = a->conv.k_out;
		c->kernel_spatial_dimensions = wivec(w, a->conv.k_spatial, &c->n_kernel_spatial_dimensions);
		c->output_batch_dimension = a->conv.out_batch;
		c->output_feature_dimension = a->conv.out_feature;
		c->output_spatial_dimensions = wivec(w, a->conv.out_spatial, &c->n_output_spatial_dimensions);
		p->convolution_dimension_numbers = c;
	}
	p->feature_group_count = a->feature_group_count;
	p->batch_group_count = a->batch_group_count;
	const nx_dot_dnums *dd = &a->dot;
	if (i->op == NX_OP_DOT || dd->lhs_batch.n || dd->rhs_batch.n || dd->lhs_contracting.n ||
	    dd->rhs_contracting.n) {
		Xla__DotDimensionNumbers *dn;
		NX_PB_NEW(ar, dn, Xla__DotDimensionNumbers, XLA__DOT_DIMENSION_NUMBERS__INIT);
		dn->lhs_batch_dimensions = wivec(w, dd->lhs_batch, &dn->n_lhs_batch_dimensions);
		dn->rhs_batch_dimensions = wivec(w, dd->rhs_batch, &dn->n_rhs_batch_dimensions);
		dn->lhs_contracting_dimensions = wivec(w, dd->lhs_contracting, &dn->n_lhs_contracting_dimensions);
		dn->rhs_contracting_dimensions = wivec(w, dd->rhs_contracting, &dn->n_rhs_contracting_dimensions);
		p->dot_dimension_numbers = dn;
	}
	if (i->op == NX_OP_GATHER) {
		const nx_gather_dnums *g = &a->gather;
		Xla__GatherDimensionNumbers *gd;
		NX_PB_NEW(ar, gd, Xla__GatherDimensionNumbers, XLA__GATHER_DIMENSION_NUMBERS__INIT);
		gd->offset_dims = wivec(w, g->offset_dims, &gd->n_offset_dims);
		gd->collapsed_slice_dims = wivec(w, g->collapsed_slice_dims, &gd->n_collapsed_slice_dims);
		gd->start_index_map = wivec(w, g->start_index_map, &gd->n_start_index_map);
		gd->operand_batching_dims = wivec(w, g->operand_batching_dims, &gd->n_operand_batching_dims);
		gd->start_indices_batching_dims =
			wivec(w, g->start_indices_batching_dims, &gd->n_start_indices_batching_dims);
		gd->index_vector_dim = g->index_vector_dim;
		p->gather_dimension_numbers = gd;
		p->gather_slice_sizes = wivec(w, g->slice_sizes, &p->n_gather_slice_sizes);
		p->indices_are_sorted = g->indices_are_sorted;
	}
	if (i->op == NX_OP_SCATTER) {
		const nx_scatter_dnums *s = &a->scatter;
		Xla__ScatterDimensionNumbers *sd;
		NX_PB_NEW(ar, sd, Xla__ScatterDimensionNumbers, XLA__SCATTER_DIMENSION_NUMBERS__INIT);
		sd->update_window_dims = wivec(w, s->update_window_dims, &sd->n_update_window_dims);
		sd->inserted_window_dims = wivec(w, s->inserted_window_dims, &sd->n_inserted_window_dims);
		sd->scatter_dims_to_operand_dims =
			wivec(w, s->scatter_dims_to_operand_dims, &sd->n_scatter_dims_to_operand_dims);
		sd->input_batching_dims = wivec(w, s->input_batching_dims, &sd->n_input_batching_dims);
		sd->scatter_indices_batching_dims =
			wivec(w, s->scatter_indices_batching_dims, &sd->n_scatter_indices_batching_dims);
		sd->index_vector_dim = s->index_vector_dim;
		p->scatter_dimension_numbers = sd;
		p->indices_are_sorted = s->indices_are_sorted;
		p->unique_indices = s->unique_indices;
	}
	p->custom_call_target = wstr(w, a->custom_call_target);
	if (a->api_version) {
		int v = nx_pb_api_version_num(a->api_version);
		if (v > 0) {
			p->custom_call_api_version = (Xla__CustomCallApiVersion)v;
		} else {
			NX_PB_NEW(ar, p->nxcc_api_version, Xla__NxccText, XLA__NXCC_TEXT__INIT);
			p->nxcc_api_version->text = wstr(w, a->api_version);
		}
	}
	p->custom_call_has_side_effect = a->custom_call_has_side_effect;
	if (a->backend_config) {
		size_t n = strlen(a->backend_config);
		p->backend_config = (ProtobufCBinaryData){n, (uint8_t *)wstr(w, a->backend_config)};
		p->nxcc_backend_config_empty = n == 0;
		p->nxcc_backend_config_raw = a->backend_config_raw;
	}
	wreplica_groups(w, i, p);
	p->channel_id = a->channel_id;
	p->use_global_device_ids = a->use_global_device_ids;
	p->constrain_layout = a->constrain_layout;
	if (a->nsource_target_pairs) {
		p->n_source_target_pairs = (size_t)a->nsource_target_pairs;
		p->source_target_pairs = nx_arena_alloc(ar, sizeof(*p->source_target_pairs) * (size_t)a->nsource_target_pairs);
		for (int k = 0; k < a->nsource_target_pairs; k++) {
			Xla__SourceTarget *st;
			NX_PB_NEW(ar, st, Xla__SourceTarget, XLA__SOURCE_TARGET__INIT);
			st->source = a->source_target_pairs[k][0];
			st->target = a->source_target_pairs[k][1];
			p->source_target_pairs[k] = st;
		}
	}
	if (i->op == NX_OP_FFT && a->fft_type != NX_FFT_NONE)
		p->fft_type = (Xla__FftType)(a->fft_type - 1);
	p->fft_length = wivec(w, a->fft_length, &p->n_fft_length);
	p->epsilon = a->epsilon;
	p->feature_index = a->feature_index;
	p->rng_algorithm = (Xla__RandomAlgorithm)a->rng_algorithm;
	p->distribution = (Xla__RandomDistribution)a->rng_distribution;
	p->exponent_bits = (int32_t)a->exponent_bits;
	p->mantissa_bits = (int32_t)a->mantissa_bits;
	p->is_stable = a->is_stable;
	p->fusion_kind = wstr(w, a->fusion_kind);
	if (a->async_wrapped != NX_OP_COUNT)
		p->nxcc_async_wrapped = wstr(w, nx_opcode_name(a->async_wrapped));
	if (a->sharding)
		wsharding(w, a->sharding, p);
	wmetadata(w, i, p);
	if (a->nfrontend_attributes)
		p->frontend_attributes = wfrontend(w, a->frontend_attributes, a->nfrontend_attributes);
	if (a->ncontrol_predecessors) {
		p->n_control_predecessor_ids = (size_t)a->ncontrol_predecessors;
		p->control_predecessor_ids = nx_arena_alloc(ar, sizeof(int64_t) * (size_t)a->ncontrol_predecessors);
		for (int k = 0; k < a->ncontrol_predecessors; k++)
			p->control_predecessor_ids[k] = a->control_predecessors[k]->id;
	}
	if (i->op == NX_OP_TOPK) {
		/* k and largest have XLA fields (81, 85): write them there, not
		 * among the verbatim attributes. largest defaults to true. */
		nx_kv *rest = nx_arena_alloc(ar, sizeof(nx_kv) * (size_t)(a->nunknown + 1));
		int nrest = 0;
		p->largest = true;
		for (int k = 0; k < a->nunknown; k++) {
			if (!strcmp(a->unknown[k].key, "k"))
				p->k = strtoll(a->unknown[k].value, NULL, 10);
			else if (!strcmp(a->unknown[k].key, "largest"))
				p->largest = strcmp(a->unknown[k].value, "false") != 0;
			else
				rest[nrest++] = a->unknown[k];
		}
		if (nrest) {
			p->n_nxcc_unknown_attributes = (size_t)nrest;
			p->nxcc_unknown_attributes = wkvs(w, rest, nrest);
		}
	} else if (a->nunknown) {
		p->n_nxcc_unknown_attributes = (size_t)a->nunknown;
		p->nxcc_unknown_attributes = wkvs(w, a->unknown, a->nunknown);
	}
}

static Xla__HloInstructionProto *winst(wctx *w, const nx_inst *i)
{
	Xla__HloInstructionProto *p;
	NX_PB_NEW(&w->a, p, Xla__HloInstructionProto, XLA__HLO_INSTRUCTION_PROTO__INIT);
	p->name = wstr(w, i->name);
	p->opcode = wstr(w, nx_opcode_name(i->op));
	p->id = i->id;
	p->shape = wshape(w, i->shape);
	p->n_operand_ids = (size_t)i->noperands;
	p->operand_ids = nx_arena_alloc(&w->a, sizeof(int64_t) * (size_t)(i->noperands + 1));
	for (int k = 0; k < i->noperands; k++)
		p->operand_ids[k] = i->operands[k]->id;
	p->n_called_computation_ids = (size_t)i->ncalled;
	p->called_computation_ids = nx_arena_alloc(&w->a, sizeof(int64_t) * (size_t)(i->ncalled + 1));
	for (int k = 0; k < i->ncalled; k++)
		p->called_computation_ids[k] = i->called[k]->id;
	if (i->op == NX_OP_WHILE && i->ncalled == 2) { /* XLA: body first */
		p->called_computation_ids[0] = i->called[1]->id;
		p->called_computation_ids[1] = i->called[0]->id;
	}
	wattrs(w, i, p);
	return p;
}

static Xla__ProgramShapeProto *wprogram_shape(wctx *w, const nx_comp *c)
{
	Xla__ProgramShapeProto *ps;
	NX_PB_NEW(&w->a, ps, Xla__ProgramShapeProto, XLA__PROGRAM_SHAPE_PROTO__INIT);
	ps->n_parameters = ps->n_parameter_names = (size_t)c->nparams;
	ps->parameters = nx_arena_alloc(&w->a, sizeof(*ps->parameters) * (size_t)(c->nparams + 1));
	ps->parameter_names = nx_arena_alloc(&w->a, sizeof(char *) * (size_t)(c->nparams + 1));
	for (int k = 0; k < c->nparams; k++) {
		const nx_inst *pi = c->params[k];
		ps->parameters[k] = pi ? wshape(w, pi->shape) : NULL;
		ps->parameter_names[k] = wstr(w, pi ? pi->name : "");
		if (!pi) {
			w->failed = true;
			nx_diag_set(w->d, NX_ERR_INPUT, w->m->file, 0, 0,
			            "computation '%s' has no parameter %d", c->name, k);
			return ps;
		}
	}
	if (c->root)
		ps->result = wshape(w, c->root->shape);
	return ps;
}

static Xla__HloComputationProto *wcomp(wctx *w, const nx_comp *c)
{
	Xla__HloComputationProto *p;
	NX_PB_NEW(&w->a, p, Xla__HloComputationProto, XLA__HLO_COMPUTATION_PROTO__INIT);
	p->name = wstr(w, c->name);
	p->id = c->id;
	if (!c->root) {
		w->failed = true;
		nx_diag_set(w->d, NX_ERR_INPUT, w->m->file, 0, 0, "computation '%s' has no root", c->name);
		return p;
	}
	p->root_id = c->root->id;
	p->execution_thread = wstr(w, c->execution_thread);
	p->n_instructions = (size_t)c->ninsts;
	p->instructions = nx_arena_alloc(&w->a, sizeof(*p->instructions) * (size_t)(c->ninsts + 1));
	for (int k = 0; k < c->ninsts; k++)
		p->instructions[k] = winst(w, c->insts[k]);
	p->program_shape = wprogram_shape(w, c);
	return p;
}

static int cmp_i64(const void *x, const void *y)
{
	int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
	return a < b ? -1 : a > b;
}

static int cmp_comp_id(const void *x, const void *y)
{
	int64_t a = (*(nx_comp *const *)x)->id, b = (*(nx_comp *const *)y)->id;
	return a < b ? -1 : a > b;
}

/* Ids are the references of the proto: they must be unique. */
static bool check_ids(wctx *w)
{
	const nx_module *m = w->m;
	size_t n = 0;
	for (int c = 0; c < m->ncomps; c++)
		n += (size_t)m->comps[c]->ninsts;
	int64_t *v = malloc(sizeof(int64_t) * (n + 1));
	NX_ASSERT(v);
	n = 0;
	for (int c = 0; c < m->ncomps; c++)
		for (int k = 0; k < m->comps[c]->ninsts; k++)
			v[n++] = m->comps[c]->insts[k]->id;
	qsort(v, n, sizeof(int64_t), cmp_i64);
	bool ok = true;
	for (size_t k = 1; k < n && ok; k++)
		if (v[k] == v[k - 1]) {
			ok = false;
			nx_diag_set(w->d, NX_ERR_INTERNAL, m->file, 0, 0,
			            "two instructions share id %lld", (long long)v[k]);
		}
	free(v);
	/* computations sorted by id (was all pairs: 90 s for 10^5 computations) */
	nx_comp **cs = malloc(sizeof *cs * ((size_t)m->ncomps + 1));
	NX_ASSERT(cs);
	memcpy(cs, m->comps, sizeof *cs * (size_t)m->ncomps);
	qsort(cs, (size_t)m->ncomps, sizeof *cs, cmp_comp_id);
	for (int c = 1; c < m->ncomps && ok; c++)
		if (cs[c]->id == cs[c - 1]->id) {
			ok = false;
			nx_diag_set(w->d, NX_ERR_INTERNAL, m->file, 0, 0, "computations '%s' and '%s' share id %lld",
			            cs[c - 1]->name, cs[c]->name, (long long)cs[c]->id);
		}
	free(cs);
	return ok;
}

static void wmodule(wctx *w, Xla__HloModuleProto *p)
{
	const nx_module *m = w->m;
	nx_arena *ar = &w->a;
	p->name = wstr(w, m->name);
	p->n_computations = (size_t)m->ncomps;
	p->computations = nx_arena_alloc(ar, sizeof(*p->computations) * (size_t)(m->ncomps + 1));
	for (int c = 0; c < m->ncomps && !w->failed; c++)
		p->computations[c] = wcomp(w, m->comps[c]);
	if (w->failed)
		return;
	p->entry_computation_name = wstr(w, m->entry->name);
	p->entry_computation_id = m->entry->id;
	if (m->entry_layout && m->entry_layout->type == NX_TUPLE &&
	    m->entry_layout->ntuple == m->entry_layout_nparams + 1) {
		Xla__ProgramShapeProto *ps;
		NX_PB_NEW(ar, ps, Xla__ProgramShapeProto, XLA__PROGRAM_SHAPE_PROTO__INIT);
		int np = m->entry_layout_nparams;
		ps->n_parameters = ps->n_parameter_names = (size_t)np;
		ps->parameters = nx_arena_alloc(ar, sizeof(*ps->parameters) * (size_t)(np + 1));
		ps->parameter_names = nx_arena_alloc(ar, sizeof(char *) * (size_t)(np + 1));
		for (int k = 0; k < np; k++) {
			ps->parameters[k] = wshape(w, m->entry_layout->tuple[k]);
			const nx_inst *pi = k < m->entry->nparams ? m->entry->params[k] : NULL;
			ps->parameter_names[k] = wstr(w, pi ? pi->name : "");
		}
		ps->result = wshape(w, m->entry_layout->tuple[np]);
		p->host_program_shape = ps;
	} else {
		/* XLA wants a host program shape; derive it from the entry. */
		p->host_program_shape = wprogram_shape(w, m->entry);
		p->nxcc_no_entry_layout = true;
	}
	if (m->naliases) {
		Xla__HloInputOutputAliasProto *io;
		NX_PB_NEW(ar, io, Xla__HloInputOutputAliasProto, XLA__HLO_INPUT_OUTPUT_ALIAS_PROTO__INIT);
		io->n_entries = (size_t)m->naliases;
		io->entries = nx_arena_alloc(ar, sizeof(*io->entries) * (size_t)m->naliases);
		for (int k = 0; k < m->naliases; k++) {
			const nx_alias *al = &m->aliases[k];
			Xla__HloInputOutputAliasProto__AliasEntryProto *e;
			NX_PB_NEW(ar, e, Xla__HloInputOutputAliasProto__AliasEntryProto,
			          XLA__HLO_INPUT_OUTPUT_ALIAS_PROTO__ALIAS_ENTRY_PROTO__INIT);
			e->output_shape_index = wivec(w, al->output_index, &e->n_output_shape_index);
			e->parameter_number = al->param_number;
			e->parameter_shape_index = wivec(w, al->param_index, &e->n_parameter_shape_index);
			e->kind = al->must_alias ? XLA__KIND__MUST_ALIAS : XLA__KIND__MAY_ALIAS;
			e->nxcc_kind_omitted = !al->kind_given;
			io->entries[k] = e;
		}
		p->input_output_alias = io;
	}
	if (m->is_scheduled) {
		Xla__HloScheduleProto *s;
		NX_PB_NEW(ar, s, Xla__HloScheduleProto, XLA__HLO_SCHEDULE_PROTO__INIT);
		s->n_sequences = (size_t)m->ncomps;
		s->sequences = nx_arena_alloc(ar, sizeof(*s->sequences) * (size_t)m->ncomps);
		for (int c = 0; c < m->ncomps; c++) {
			Xla__HloScheduleProto__SequencesEntry *e;
			NX_PB_NEW(ar, e, Xla__HloScheduleProto__SequencesEntry,
			          XLA__HLO_SCHEDULE_PROTO__SEQUENCES_ENTRY__INIT);
			NX_PB_NEW(ar, e->value, Xla__HloScheduleProto__InstructionSequence,
			          XLA__HLO_SCHEDULE_PROTO__INSTRUCTION_SEQUENCE__INIT);
			e->key = m->comps[c]->id;
			e->value->n_instruction_ids = p->computations[c]->n_instructions;
			e->value->instruction_ids =
				nx_arena_alloc(ar, sizeof(int64_t) * (e->value->n_instruction_ids + 1));
			for (size_t k = 0; k < e->value->n_instruction_ids; k++)
				e->value->instruction_ids[k] = p->computations[c]->instructions[k]->id;
			s->sequences[c] = e;
		}
		p->schedule = s;
	}
	if (m->nfrontend_attributes)
		p->frontend_attributes = wfrontend(w, m->frontend_attributes, m->nfrontend_attributes);
	p->stack_frame_index = nx_pb_stack_frames_to(ar, &m->stack);
	p->nxcc_replica_count = m->replica_count;
	p->nxcc_num_partitions = m->num_partitions;
	if (m->nunknown) {
		p->n_nxcc_unknown_attributes = (size_t)m->nunknown;
		p->nxcc_unknown_attributes = wkvs(w, m->unknown, m->nunknown);
	}
}

void *nx_write_proto(const nx_module *m, size_t *len, nx_diag *d)
{
	*len = 0;
	if (!m->entry) {
		nx_diag_set(d, NX_ERR_INPUT, m->file, 0, 0, "module '%s' has no entry computation", m->name);
		return NULL;
	}
	wctx w = {.m = m, .d = d};
	nx_arena_init(&w.a);
	if (!check_ids(&w)) {
		nx_arena_free(&w.a);
		return NULL;
	}
	Xla__HloModuleProto p = XLA__HLO_MODULE_PROTO__INIT;
	wmodule(&w, &p);
	void *buf = NULL;
	if (!w.failed) {
		size_t n = xla__hlo_module_proto__get_packed_size(&p);
		buf = malloc(n ? n : 1);
		NX_ASSERT(buf);
		*len = xla__hlo_module_proto__pack(&p, buf);
		NX_ASSERT(*len == n);
	}
	nx_arena_free(&w.a);
	return buf;
}
