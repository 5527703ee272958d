/* ir/hlo/read_attrs.c — instruction and module-header attributes of the HLO
 * text reader. Known keys go into typed fields of nx_attrs; any other key is
 * kept verbatim in a.unknown so nothing is lost. */
#include "ir/hlo/read_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool key_is(const char *k, size_t n, const char *lit)
{
	return strlen(lit) == n && memcmp(k, lit, n) == 0;
}

static void kv_push(nx_rd *r, nx_kv **v, int *n, const char *key, const char *value)
{
	/* arrays are grown by doubling at powers of two */
	if ((*n & (*n - 1)) == 0) {
		int cap = *n ? 2 * *n : 4;
		*v = nx_arena_grow(r->a, *v, (size_t)*n, (size_t)cap, sizeof(nx_kv));
	}
	(*v)[*n].key = key;
	(*v)[*n].value = value;
	(*n)++;
}

static void ref_push(nx_rd *r, rd_ref **v, int *n, rd_ref ref)
{
	if ((*n & (*n - 1)) == 0) {
		int cap = *n ? 2 * *n : 4;
		*v = nx_arena_grow(&r->scratch, *v, (size_t)*n, (size_t)cap, sizeof(rd_ref));
	}
	(*v)[(*n)++] = ref;
}

bool rd_comp_ref(nx_rd *r, rd_ref *ref)
{
	const char *nm;
	size_t n;
	if (!rd_ws(r))
		return false;
	ref->pos = r->pos;
	ref->written = NULL;
	if (!rd_name(r, &nm, &n))
		return rd_expect(r, '%', "before a computation name");
	ref->name = nx_arena_strndup(&r->scratch, nm, n);
	return true;
}

static bool comp_ref_list(nx_rd *r, rd_ref **v, int *n)
{
	if (!rd_ws(r))
		return false;
	if (rd_peek(r) != '{') {
		rd_ref ref;
		if (!rd_comp_ref(r, &ref))
			return false;
		ref_push(r, v, n, ref);
		return true;
	}
	r->pos++;
	if (rd_accept(r, '}'))
		return true;
	for (;;) {
		rd_ref ref;
		if (!rd_comp_ref(r, &ref))
			return false;
		ref_push(r, v, n, ref);
		if (rd_accept(r, '}'))
			return true;
		if (!rd_expect(r, ',', "between computation names"))
			return false;
	}
}

/* Values like 0_1x2_3 or 3x3: items separated by 'x', parts by '_'. */
static bool x_list(nx_rd *r, int64_t (*out)[3], int *n, int maxparts, int *nparts_seen,
                   const char *what)
{
	*n = 0;
	if (!rd_ws(r))
		return false;
	for (;;) {
		if (*n == NX_MAX_RANK)
			return rd_err(r, r->pos, "%s has more than %d dimensions", what, NX_MAX_RANK);
		int parts = 0;
		for (;;) {
			if (parts == maxparts)
				return rd_err(r, r->pos, "too many '_'-separated parts in %s", what);
			if (!rd_int_raw(r, &out[*n][parts], what))
				return false;
			parts++;
			if (r->pos < r->len && r->s[r->pos] == '_') {
				r->pos++;
				continue;
			}
			break;
		}
		if (nparts_seen)
			nparts_seen[*n] = parts;
		(*n)++;
		if (r->pos < r->len && r->s[r->pos] == 'x') {
			r->pos++;
			continue;
		}
		break;
	}
	if (r->pos < r->len && rd_is_name_char(r->s[r->pos]))
		return rd_err(r, r->pos, "unexpected '%c' in %s", r->s[r->pos], what);
	return true;
}

static bool padding_attr(nx_rd *r, nx_attrs *a)
{
	int64_t v[NX_MAX_RANK][3];
	int parts[NX_MAX_RANK], n;
	/* A rank-0 pad prints as "padding=" with an empty list (as XLA does). */
	if (r->pos >= r->len || r->s[r->pos] == ',' || r->s[r->pos] == '\n' || r->s[r->pos] == '\r') {
		a->padding = NULL;
		a->npadding = 0;
		return true;
	}
	size_t at = (rd_ws(r), r->pos);
	if (!x_list(r, v, &n, 3, parts, "padding"))
		return false;
	a->padding = nx_arena_alloc(r->a, sizeof(nx_pad_dim) * (size_t)n);
	a->npadding = n;
	for (int k = 0; k < n; k++) {
		if (parts[k] < 2)
			return rd_err(r, at, "padding needs low_high[_interior] per dimension");
		a->padding[k].lo = v[k][0];
		a->padding[k].hi = v[k][1];
		a->padding[k].interior = parts[k] == 3 ? v[k][2] : 0;
		if (a->padding[k].interior < 0)
			return rd_err(r, at, "negative interior padding");
	}
	return true;
}

static bool window_attr(nx_rd *r, nx_window *w)
{
	if (!rd_expect(r, '{', "to start the window"))
		return false;
	int64_t vals[6][NX_MAX_RANK][3];
	int counts[6] = {0};
	bool seen[6] = {false};
	static const char *const keys[6] = {"size", "stride", "pad", "lhs_dilate", "rhs_dilate",
	                                    "rhs_reversal"};
	while (!rd_accept(r, '}')) {
		if (r->failed)
			return false;
		const char *k;
		size_t n;
		size_t at = r->pos;
		if (!rd_word(r, &k, &n))
			return rd_expect(r, '}', "to end the window");
		int which = -1;
		for (int j = 0; j < 6; j++)
			if (key_is(k, n, keys[j]))
				which = j;
		if (which < 0)
			return rd_err(r, at, "unknown window field '%.*s'", (int)n, k);
		if (!rd_expect(r, '=', "after window field name"))
			return false;
		int parts[NX_MAX_RANK];
		size_t vpos = (rd_ws(r), r->pos);
		if (!x_list(r, vals[which], &counts[which], which == 2 ? 2 : 1, parts, keys[which]))
			return false;
		if (which == 2)
			for (int d = 0; d < counts[2]; d++)
				if (parts[d] != 2)
					return rd_err(r, vpos, "window pad needs low_high per dimension");
		seen[which] = true;
	}
	if (r->failed)
		return false;
	if (!seen[0])
		return rd_err(r, r->pos - 1, "window has no size");
	int nd = counts[0];
	for (int j = 1; j < 6; j++)
		if (seen[j] && counts[j] != nd)
			return rd_err(r, r->pos - 1, "window %s has %d dimensions but size has %d", keys[j],
			              counts[j], nd);
	w->ndims = nd;
	w->dims = nx_arena_alloc(r->a, sizeof(nx_window_dim) * (size_t)(nd ? nd : 1));
	for (int d = 0; d < nd; d++) {
		nx_window_dim *wd = &w->dims[d];
		wd->size = vals[0][d][0];
		wd->stride = seen[1] ? vals[1][d][0] : 1;
		wd->pad_lo = seen[2] ? vals[2][d][0] : 0;
		wd->pad_hi = seen[2] ? vals[2][d][1] : 0;
		wd->base_dilation = seen[3] ? vals[3][d][0] : 1;
		wd->window_dilation = seen[4] ? vals[4][d][0] : 1;
		wd->reversal = seen[5] ? vals[5][d][0] != 0 : false;
	}
	return true;
}

static bool dim_labels_part(nx_rd *r, const char *s, size_t n, size_t at, char c1, char c2,
                            int64_t *p1, int64_t *p2, nx_ivec *sp)
{
	int64_t pos[NX_MAX_RANK];
	int nsp = 0;
	*p1 = *p2 = -1;
	if (n > NX_MAX_RANK)
		return rd_err(r, at, "dim_labels part '%.*s' is too long", (int)n, s);
	for (size_t k = 0; k < n; k++) {
		char c = s[k];
		if (c == c1 && *p1 < 0)
			*p1 = (int64_t)k;
		else if (c == c2 && *p2 < 0)
			*p2 = (int64_t)k;
		else if (c >= '0' && c <= '9')
			nsp++;
		else
			return rd_err(r, at, "bad dim_labels '%.*s': unexpected '%c'", (int)n, s, c);
	}
	if (*p1 < 0 || *p2 < 0)
		return rd_err(r, at, "bad dim_labels '%.*s': needs '%c' and '%c'", (int)n, s, c1, c2);
	for (int k = 0; k < nsp; k++)
		pos[k] = -1;
	for (size_t k = 0; k < n; k++) {
		if (s[k] >= '0' && s[k] <= '9') {
			int d = s[k] - '0';
			if (d >= nsp || pos[d] >= 0)
				return rd_err(r, at, "bad dim_labels '%.*s': spatial dimensions must be 0..%d",
				              (int)n, s, nsp - 1);
			pos[d] = (int64_t)k;
		}
	}
	*sp = nx_ivec_dup(r->a, pos, nsp);
	return true;
}

static bool dim_labels_attr(nx_rd *r, nx_conv_dnums *c)
{
	if (!rd_ws(r))
		return false;
	size_t at = r->pos, i = at;
	while (i < r->len && (rd_is_name_char(r->s[i]) || r->s[i] == '>'))
		i++;
	const char *s = r->s + at;
	size_t n = i - at;
	const char *u = memchr(s, '_', n);
	const char *arrow = NULL;
	for (size_t k = 0; k + 1 < n; k++)
		if (s[k] == '-' && s[k + 1] == '>')
			arrow = s + k;
	if (!u || !arrow || arrow < u)
		return rd_err(r, at, "bad dim_labels '%.*s': expected lhs_rhs->out", (int)n, s);
	r->pos = i;
	c->present = true;
	return dim_labels_part(r, s, (size_t)(u - s), at, 'b', 'f', &c->in_batch, &c->in_feature,
	                       &c->in_spatial) &&
	       dim_labels_part(r, u + 1, (size_t)(arrow - u - 1), at, 'i', 'o', &c->k_in, &c->k_out,
	                       &c->k_spatial) &&
	       dim_labels_part(r, arrow + 2, (size_t)(s + n - arrow - 2), at, 'b', 'f',
	                       &c->out_batch, &c->out_feature, &c->out_spatial);
}

static bool slice_attr(nx_rd *r, nx_attrs *a)
{
	int64_t st[NX_MAX_RANK], li[NX_MAX_RANK], sr[NX_MAX_RANK];
	int n = 0;
	if (!rd_expect(r, '{', "to start the slice"))
		return false;
	if (!rd_accept(r, '}')) {
		for (;;) {
			if (n == NX_MAX_RANK)
				return rd_err(r, r->pos, "slice has more than %d dimensions", NX_MAX_RANK);
			if (!rd_expect(r, '[', "to start a slice dimension") ||
			    !rd_int(r, &st[n], "as slice start") || !rd_expect(r, ':', "after slice start") ||
			    !rd_int(r, &li[n], "as slice limit"))
				return false;
			sr[n] = 1;
			if (rd_accept(r, ':') && !rd_int(r, &sr[n], "as slice stride"))
				return false;
			if (!rd_expect(r, ']', "to end a slice dimension"))
				return false;
			n++;
			if (rd_accept(r, '}'))
				break;
			if (!rd_expect(r, ',', "between slice dimensions"))
				return false;
		}
	}
	a->slice_start = nx_ivec_dup(r->a, st, n);
	a->slice_limit = nx_ivec_dup(r->a, li, n);
	a->slice_stride = nx_ivec_dup(r->a, sr, n);
	return true;
}

static bool int_list_bracket(nx_rd *r, nx_ivec *v, const char *what)
{
	int64_t tmp[NX_MAX_RANK];
	int n = 0;
	if (!rd_expect(r, '[', what))
		return false;
	if (!rd_accept(r, ']')) {
		for (;;) {
			if (n == NX_MAX_RANK)
				return rd_err(r, r->pos, "too many entries in %s", what);
			if (!rd_int(r, &tmp[n++], what))
				return false;
			if (rd_accept(r, ']'))
				break;
			if (!rd_expect(r, ',', what))
				return false;
		}
	}
	*v = nx_ivec_dup(r->a, tmp, n);
	return true;
}

static bool replica_groups_attr(nx_rd *r, nx_replica_groups *g)
{
	g->present = true;
	if (!rd_ws(r))
		return false;
	if (rd_peek(r) == '[') {
		g->iota = true;
		if (!int_list_bracket(r, &g->iota_shape, "in the replica group shape"))
			return false;
		if (!rd_ws(r))
			return false;
		if (!(r->pos + 1 < r->len && r->s[r->pos] == '<' && r->s[r->pos + 1] == '='))
			return rd_expect(r, '<', "followed by '=' in iota replica groups");
		r->pos += 2;
		if (!int_list_bracket(r, &g->iota_reshape, "in the replica group reshape"))
			return false;
		if (r->pos < r->len && r->s[r->pos] == 'T') {
			r->pos++;
			int64_t tmp[NX_MAX_RANK];
			int n = 0;
			if (!rd_expect(r, '(', "after T in replica groups"))
				return false;
			if (!rd_accept(r, ')')) {
				for (;;) {
					if (n == NX_MAX_RANK)
						return rd_err(r, r->pos, "transpose too long");
					if (!rd_int(r, &tmp[n++], "in the replica group transpose"))
						return false;
					if (rd_accept(r, ')'))
						break;
					if (!rd_expect(r, ',', "in the replica group transpose"))
						return false;
				}
			}
			g->iota_transpose = nx_ivec_dup(r->a, tmp, n);
		}
		return true;
	}
	if (!rd_expect(r, '{', "to start replica groups"))
		return false;
	int cap = 0;
	if (rd_accept(r, '}'))
		return true;
	for (;;) {
		if (g->ngroups == cap) {
			int nc = cap ? 2 * cap : 4;
			g->groups = nx_arena_grow(r->a, g->groups, (size_t)cap, (size_t)nc, sizeof(nx_ivec));
			cap = nc;
		}
		if (!rd_ivec_braced(r, &g->groups[g->ngroups], "in replica groups"))
			return false;
		g->ngroups++;
		if (rd_accept(r, '}'))
			return true;
		if (!rd_expect(r, ',', "between replica groups"))
			return false;
	}
}

static bool pairs_attr(nx_rd *r, nx_attrs *a)
{
	if (!rd_expect(r, '{', "to start source_target_pairs"))
		return false;
	int cap = 0;
	if (rd_accept(r, '}'))
		return true;
	for (;;) {
		if (a->nsource_target_pairs == cap) {
			int nc = cap ? 2 * cap : 4;
			a->source_target_pairs = nx_arena_grow(r->a, a->source_target_pairs, (size_t)cap,
			                                       (size_t)nc, sizeof(int64_t[2]));
			cap = nc;
		}
		int64_t *p = a->source_target_pairs[a->nsource_target_pairs++];
		if (!rd_expect(r, '{', "to start a source-target pair") ||
		    !rd_int(r, &p[0], "as pair source") || !rd_expect(r, ',', "in a source-target pair") ||
		    !rd_int(r, &p[1], "as pair target") || !rd_expect(r, '}', "to end a source-target pair"))
			return false;
		if (rd_accept(r, '}'))
			return true;
		if (!rd_expect(r, ',', "between source-target pairs"))
			return false;
	}
}

bool rd_kv_list(nx_rd *r, nx_kv **out, int *n, bool commas)
{
	(void)commas;
	if (!rd_expect(r, '{', "to start the attribute list"))
		return false;
	for (;;) {
		if (rd_accept(r, '}'))
			return true;
		if (r->failed)
			return false;
		const char *k;
		size_t kn;
		if (!rd_name(r, &k, &kn)) {
			if (r->failed)
				return false;
			if (rd_eof(r))
				return rd_expect(r, '}', "to end the attribute list");
			return rd_err(r, r->pos, "expected key=value or '}', found '%c'", rd_peek(r));
		}
		const char *key = nx_arena_strndup(r->a, k, kn);
		if (!rd_expect(r, '=', "after key"))
			return false;
		if (!rd_ws(r))
			return false;
		const char *val;
		if (rd_peek(r) == '"') {
			if (!rd_string(r, r->a, &val))
				return false;
		} else {
			size_t s = r->pos, i = s;
			int depth = 0;
			while (i < r->len) {
				char c = r->s[i];
				if (c == '{' || c == '(' || c == '[') {
					depth++;
				} else if (c == '}' || c == ')' || c == ']') {
					if (depth == 0)
						break;
					depth--;
				} else if (depth == 0 && (c == ' ' || c == ',' || c == '\n' || c == '\t')) {
					break;
				}
				i++;
			}
			if (i == s)
				return rd_err(r, s, "expected a value after '%s='", key);
			val = nx_arena_strndup(r->a, r->s + s, i - s);
			r->pos = i;
		}
		kv_push(r, out, n, key, val);
		rd_accept(r, ',');
	}
}

static bool word_value(nx_rd *r, const char **w, size_t *n, size_t *at, const char *key)
{
	if (!rd_ws(r))
		return false;
	*at = r->pos;
	if (!rd_name(r, w, n))
		return rd_err(r, *at, "expected a value for '%s'", key);
	return true;
}

static const char *const cmp_dirs[] = {"", "EQ", "NE", "LT", "LE", "GT", "GE"};
static const char *const cmp_types[] = {"", "FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED"};
static const char *const fft_types[] = {"", "FFT", "IFFT", "RFFT", "IRFFT"};

static int pick(const char *const *names, int n, const char *w, size_t wn)
{
	for (int k = 1; k < n; k++)
		if (key_is(w, wn, names[k]))
			return k;
	return 0;
}

bool rd_attrs(nx_rd *r, nx_inst *i, rd_pending *pd)
{
	nx_attrs *a = &i->a;
	while (rd_accept(r, ',')) {
		const char *k;
		size_t kn;
		size_t kpos = r->pos;
		if (!rd_name(r, &k, &kn)) {
			if (r->failed)
				return false;
			return rd_err(r, kpos, "expected attribute name after ','");
		}
		if (!rd_expect(r, '=', "after attribute name"))
			return false;
		bool ok = true;
		const char *w;
		size_t wn, at;
#define K(s) key_is(k, kn, s)
		if (K("dimensions")) {
			ok = rd_ivec_braced(r, &a->dimensions, "in dimensions");
			a->has_dimensions = true;
		} else if (K("index")) {
			ok = rd_int(r, &a->tuple_index, "as tuple index");
		} else if (K("iota_dimension")) {
			ok = rd_int(r, &a->iota_dimension, "as iota dimension");
		} else if (K("direction")) {
			if (!word_value(r, &w, &wn, &at, "direction"))
				return false;
			a->direction = (nx_cmp_dir)pick(cmp_dirs, 7, w, wn);
			if (!a->direction)
				return rd_err(r, at, "unknown comparison direction '%.*s'", (int)wn, w);
		} else if (K("type")) {
			if (!word_value(r, &w, &wn, &at, "type"))
				return false;
			a->compare_type = (nx_cmp_type)pick(cmp_types, 5, w, wn);
			if (!a->compare_type)
				return rd_err(r, at, "unknown comparison type '%.*s'", (int)wn, w);
		} else if (K("order") && i->op == NX_OP_COMPARE) {
			/* newer XLA prints a float total-order compare as
			 * "order=TOTAL" instead of "type=TOTALORDER" (the proto's
			 * comparison_type is still "TOTALORDER") */
			if (!word_value(r, &w, &wn, &at, "order"))
				return false;
			if (key_is(w, wn, "TOTAL")) {
				if (a->compare_type == NX_CMPT_DEFAULT || a->compare_type == NX_CMPT_FLOAT)
					a->compare_type = NX_CMPT_TOTALORDER;
			} else if (key_is(w, wn, "PARTIAL")) {
				if (a->compare_type == NX_CMPT_TOTALORDER)
					return rd_err(r, at, "order=PARTIAL contradicts type=TOTALORDER");
			} else {
				return rd_err(r, at, "unknown comparison order '%.*s' (expected TOTAL or PARTIAL)",
				              (int)wn, w);
			}
		} else if (K("slice")) {
			ok = slice_attr(r, a);
		} else if (K("dynamic_slice_sizes")) {
			ok = rd_ivec_braced(r, &a->dynamic_slice_sizes, "in dynamic_slice_sizes");
		} else if (K("padding")) {
			ok = padding_attr(r, a);
		} else if (K("window")) {
			ok = window_attr(r, &a->window);
		} else if (K("dim_labels")) {
			ok = dim_labels_attr(r, &a->conv);
		} else if (K("feature_group_count")) {
			ok = rd_int(r, &a->feature_group_count, "as feature_group_count");
		} else if (K("batch_group_count")) {
			ok = rd_int(r, &a->batch_group_count, "as batch_group_count");
		} else if (K("lhs_batch_dims")) {
			ok = rd_ivec_braced(r, &a->dot.lhs_batch, "in lhs_batch_dims");
		} else if (K("rhs_batch_dims")) {
			ok = rd_ivec_braced(r, &a->dot.rhs_batch, "in rhs_batch_dims");
		} else if (K("lhs_contracting_dims")) {
			ok = rd_ivec_braced(r, &a->dot.lhs_contracting, "in lhs_contracting_dims");
		} else if (K("rhs_contracting_dims")) {
			ok = rd_ivec_braced(r, &a->dot.rhs_contracting, "in rhs_contracting_dims");
		} else if (K("offset_dims")) {
			ok = rd_ivec_braced(r, &a->gather.offset_dims, "in offset_dims");
		} else if (K("collapsed_slice_dims")) {
			ok = rd_ivec_braced(r, &a->gather.collapsed_slice_dims, "in collapsed_slice_dims");
		} else if (K("start_index_map")) {
			ok = rd_ivec_braced(r, &a->gather.start_index_map, "in start_index_map");
		} else if (K("operand_batching_dims")) {
			ok = rd_ivec_braced(r, &a->gather.operand_batching_dims, "in operand_batching_dims");
		} else if (K("start_indices_batching_dims")) {
			ok = rd_ivec_braced(r, &a->gather.start_indices_batching_dims,
			                    "in start_indices_batching_dims");
		} else if (K("slice_sizes")) {
			ok = rd_ivec_braced(r, &a->gather.slice_sizes, "in slice_sizes");
		} else if (K("index_vector_dim")) {
			ok = rd_int(r, &a->gather.index_vector_dim, "as index_vector_dim");
			a->scatter.index_vector_dim = a->gather.index_vector_dim;
		} else if (K("indices_are_sorted")) {
			ok = rd_bool(r, &a->gather.indices_are_sorted, "for indices_are_sorted");
			a->scatter.indices_are_sorted = a->gather.indices_are_sorted;
		} else if (K("unique_indices")) {
			ok = rd_bool(r, &a->scatter.unique_indices, "for unique_indices");
		} else if (K("update_window_dims")) {
			ok = rd_ivec_braced(r, &a->scatter.update_window_dims, "in update_window_dims");
		} else if (K("inserted_window_dims")) {
			ok = rd_ivec_braced(r, &a->scatter.inserted_window_dims, "in inserted_window_dims");
		} else if (K("scatter_dims_to_operand_dims")) {
			ok = rd_ivec_braced(r, &a->scatter.scatter_dims_to_operand_dims,
			                    "in scatter_dims_to_operand_dims");
		} else if (K("input_batching_dims")) {
			ok = rd_ivec_braced(r, &a->scatter.input_batching_dims, "in input_batching_dims");
		} else if (K("scatter_indices_batching_dims")) {
			ok = rd_ivec_braced(r, &a->scatter.scatter_indices_batching_dims,
			                    "in scatter_indices_batching_dims");
		} else if (K("to_apply") || K("calls") || K("called_computations")) {
			ok = comp_ref_list(r, &pd->to_apply, &pd->nto_apply);
		} else if (K("branch_computations")) {
			pd->has_branches = true;
			ok = comp_ref_list(r, &pd->branches, &pd->nbranches);
		} else if (K("condition")) {
			ok = pd->has_cond = rd_comp_ref(r, &pd->cond);
		} else if (K("body")) {
			ok = pd->has_body = rd_comp_ref(r, &pd->body);
		} else if (K("true_computation")) {
			ok = pd->has_true = rd_comp_ref(r, &pd->tcomp);
		} else if (K("false_computation")) {
			ok = pd->has_false = rd_comp_ref(r, &pd->fcomp);
		} else if (K("select")) {
			ok = pd->has_select = rd_comp_ref(r, &pd->select);
		} else if (K("scatter")) {
			ok = pd->has_scatter = rd_comp_ref(r, &pd->scatter);
		} else if (K("custom_call_target")) {
			ok = rd_string(r, r->a, &a->custom_call_target);
		} else if (K("api_version")) {
			if (!word_value(r, &w, &wn, &at, "api_version"))
				return false;
			a->api_version = rd_strndup(r, w, wn);
		} else if (K("custom_call_has_side_effect")) {
			ok = rd_bool(r, &a->custom_call_has_side_effect, "for custom_call_has_side_effect");
		} else if (K("backend_config")) {
			if (!rd_ws(r))
				return false;
			if (rd_peek(r) == '{') {
				size_t s = r->pos;
				const char *inner;
				if (!rd_raw_braced(r, &inner))
					return false;
				a->backend_config = rd_strndup(r, r->s + s, r->pos - s);
				a->backend_config_raw = true;
			} else {
				ok = rd_string(r, r->a, &a->backend_config);
			}
		} else if (K("replica_groups")) {
			ok = replica_groups_attr(r, &a->replica_groups);
		} else if (K("channel_id")) {
			ok = rd_int(r, &a->channel_id, "as channel_id");
		} else if (K("use_global_device_ids")) {
			ok = rd_bool(r, &a->use_global_device_ids, "for use_global_device_ids");
		} else if (K("constrain_layout")) {
			ok = rd_bool(r, &a->constrain_layout, "for constrain_layout");
		} else if (K("source_target_pairs")) {
			ok = pairs_attr(r, a);
		} else if (K("fft_type")) {
			if (!word_value(r, &w, &wn, &at, "fft_type"))
				return false;
			a->fft_type = (nx_fft_type)pick(fft_types, 5, w, wn);
			if (!a->fft_type)
				return rd_err(r, at, "unknown fft_type '%.*s'", (int)wn, w);
		} else if (K("fft_length")) {
			ok = rd_ivec_braced(r, &a->fft_length, "in fft_length");
		} else if (K("epsilon")) {
			if (!word_value(r, &w, &wn, &at, "epsilon"))
				return false;
			char buf[64];
			char *end;
			snprintf(buf, sizeof buf, "%.*s", (int)(wn < 63 ? wn : 63), w);
			a->epsilon = strtof(buf, &end);
			if (end == buf || *end)
				return rd_err(r, at, "bad epsilon value '%s'", buf);
		} else if (K("feature_index")) {
			ok = rd_int(r, &a->feature_index, "as feature_index");
		} else if (K("algorithm") && (rd_ws(r), r->pos + 4 < r->len &&
		                              memcmp(r->s + r->pos, "rng_", 4) == 0)) {
			if (!word_value(r, &w, &wn, &at, "algorithm"))
				return false;
			if (key_is(w, wn, "rng_default"))
				a->rng_algorithm = NX_RNG_DEFAULT;
			else if (key_is(w, wn, "rng_three_fry"))
				a->rng_algorithm = NX_RNG_THREE_FRY;
			else if (key_is(w, wn, "rng_philox"))
				a->rng_algorithm = NX_RNG_PHILOX;
			else
				return rd_err(r, at, "unknown rng algorithm '%.*s'", (int)wn, w);
		} else if (K("distribution")) {
			if (!word_value(r, &w, &wn, &at, "distribution"))
				return false;
			if (key_is(w, wn, "rng_uniform"))
				a->rng_distribution = NX_RNG_DIST_UNIFORM;
			else if (key_is(w, wn, "rng_normal"))
				a->rng_distribution = NX_RNG_DIST_NORMAL;
			else
				return rd_err(r, at, "unknown rng distribution '%.*s'", (int)wn, w);
		} else if (K("exponent_bits")) {
			ok = rd_int(r, &a->exponent_bits, "as exponent_bits");
		} else if (K("mantissa_bits")) {
			ok = rd_int(r, &a->mantissa_bits, "as mantissa_bits");
		} else if (K("is_stable")) {
			ok = rd_bool(r, &a->is_stable, "for is_stable");
		} else if (K("kind")) {
			if (!word_value(r, &w, &wn, &at, "kind"))
				return false;
			a->fusion_kind = rd_strndup(r, w, wn);
		} else if (K("sharding")) {
			ok = rd_raw_braced(r, &a->sharding);
		} else if (K("metadata")) {
			ok = rd_kv_list(r, &a->metadata, &a->nmetadata, false);
		} else if (K("frontend_attributes")) {
			ok = rd_kv_list(r, &a->frontend_attributes, &a->nfrontend_attributes, true);
		} else if (K("control-predecessors")) {
			ok = comp_ref_list(r, &pd->preds, &pd->npreds);
		} else {
			const char *raw;
			if (!rd_raw_value(r, &raw))
				return false;
			kv_push(r, &a->unknown, &a->nunknown, rd_strndup(r, k, kn), raw);
		}
#undef K
		if (!ok)
			return false;
	}
	return !r->failed;
}

static bool alias_attr(nx_rd *r, nx_module *m)
{
	if (!rd_expect(r, '{', "to start input_output_alias"))
		return false;
	int cap = 0;
	if (rd_accept(r, '}'))
		return true;
	for (;;) {
		if (m->naliases == cap) {
			int nc = cap ? 2 * cap : 8;
			m->aliases = nx_arena_grow(r->a, m->aliases, (size_t)cap, (size_t)nc, sizeof(nx_alias));
			cap = nc;
		}
		nx_alias *al = &m->aliases[m->naliases++];
		if (!rd_ivec_braced(r, &al->output_index, "in the alias output index") ||
		    !rd_expect(r, ':', "after the alias output index") ||
		    !rd_expect(r, '(', "to start an alias") ||
		    !rd_int(r, &al->param_number, "as alias parameter number") ||
		    !rd_expect(r, ',', "after the alias parameter number") ||
		    !rd_ivec_braced(r, &al->param_index, "in the alias parameter index"))
			return false;
		if (rd_accept(r, ',')) {
			const char *w;
			size_t wn, at;
			if (!word_value(r, &w, &wn, &at, "alias kind"))
				return false;
			if (key_is(w, wn, "must-alias"))
				al->must_alias = true;
			else if (!key_is(w, wn, "may-alias"))
				return rd_err(r, at, "unknown alias kind '%.*s'", (int)wn, w);
			al->kind_given = true;
		}
		if (!rd_expect(r, ')', "to end an alias"))
			return false;
		if (rd_accept(r, '}'))
			return true;
		if (!rd_expect(r, ',', "between aliases"))
			return false;
	}
}

static bool entry_layout_attr(nx_rd *r, nx_module *m)
{
	if (!rd_expect(r, '{', "to start entry_computation_layout") ||
	    !rd_expect(r, '(', "to start the parameter layouts"))
		return false;
	nx_shape **v = NULL;
	int n = 0;
	if (!rd_accept(r, ')')) {
		for (;;) {
			if ((n & (n - 1)) == 0)
				v = nx_arena_grow(&r->scratch, v, (size_t)n, (size_t)(n ? 2 * n : 4),
				                  sizeof(nx_shape *));
			if (!rd_shape(r, &v[n++]))
				return false;
			if (rd_accept(r, ')'))
				break;
			if (!rd_expect(r, ',', "between parameter layouts"))
				return false;
		}
	}
	if (!rd_ws(r))
		return false;
	if (!rd_expect_arrow(r, "before the result layout"))
		return false;
	nx_shape *res;
	if (!rd_shape(r, &res))
		return false;
	if (!rd_expect(r, '}', "to end entry_computation_layout"))
		return false;
	v = nx_arena_grow(&r->scratch, v, (size_t)n, (size_t)n + 1, sizeof(nx_shape *));
	v[n] = res;
	m->entry_layout = nx_shape_tuple(r->a, n + 1, v);
	m->entry_layout_nparams = n;
	return true;
}

bool rd_module_attr(nx_rd *r, nx_module *m, const char *k, size_t kn, size_t keypos)
{
	(void)keypos;
	if (key_is(k, kn, "input_output_alias"))
		return alias_attr(r, m);
	if (key_is(k, kn, "entry_computation_layout"))
		return entry_layout_attr(r, m);
	if (key_is(k, kn, "replica_count"))
		return rd_int(r, &m->replica_count, "as replica_count");
	if (key_is(k, kn, "num_partitions"))
		return rd_int(r, &m->num_partitions, "as num_partitions");
	if (key_is(k, kn, "is_scheduled"))
		return rd_bool(r, &m->is_scheduled, "for is_scheduled");
	if (key_is(k, kn, "frontend_attributes"))
		return rd_kv_list(r, &m->frontend_attributes, &m->nfrontend_attributes, true);
	const char *raw;
	if (!rd_raw_value(r, &raw))
		return false;
	kv_push(r, &m->unknown, &m->nunknown, rd_strndup(r, k, kn), raw);
	return true;
}
