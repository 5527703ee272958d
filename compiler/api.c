/* compiler/api.c — the public library interface (include/nxcc.h) over the
 * driver, the compile cache and the runtime stub. */
#include "include/nxcc.h"

#include "compiler/cache.h"
#include "compiler/compile_cached.h"
#include "ir/file_atomic.h"
#include "runtime-stub/rt.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct nxcc_compile_result {
	int status;
	uint8_t *neff;
	size_t len;
	int cache_hit;
	int ndiag;
	nxcc_diagnostic diag[1];
	char *strings[4]; /* owned strings of diag[0] */
};

struct nxcc_program {
	nx_neff *n;
};

const char *nxcc_version(void) { return NX_VERSION; }
int nxcc_api_version(void) { return NXCC_API_VERSION; }

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

/* diag from d; a file named tmp is reported as name */
static void take_diag(nxcc_diagnostic *out, char **own, const nx_diag *d, const char *tmp, const char *name)
{
	const char *file = d->file && tmp && !strcmp(d->file, tmp) ? name : d->file;
	own[0] = dup_or_null(file);
	own[1] = dup_or_null(d->inst);
	own[2] = dup_or_null(d->msg ? d->msg : "failed");
	*out = (nxcc_diagnostic){"error", d->status == NX_ERR_INTERNAL ? NXCC_ERR_INTERNAL : NXCC_ERR_INPUT, own[0],
	                         d->line, d->col, own[1], own[2]};
}

static int status_of(nx_status st)
{
	return st == NX_OK ? NXCC_OK : st == NX_ERR_INTERNAL ? NXCC_ERR_INTERNAL : NXCC_ERR_INPUT;
}

/* The cached path of nxcc compile (compiler/compile_cached.c), without its
 * console output: lookup, lock, look again, compile, store. */
static nx_status compile_via_cache(const char *path, const nx_compile_flags *f, nx_compile_opts *o, nx_log *log,
                                   nxcc_compile_result *r, nx_diag *d)
{
	nx_module *m = nx_read_file(path, d);
	if (!m)
		return d->status;
	char fp[33], fh[17];
	nx_fingerprint(m, fp);
	nx_flags_hash(f, fh);
	nx_cache_key k;
	nx_cache *c = NULL;
	nx_status st = nx_cache_key_make(fp, fh, &k, d);
	if (st == NX_OK && nx_cache_open(nx_cache_location(f->cache_dir), &c, d) != NX_OK) {
		nx_diag_clear(d); /* an unusable cache never stops a compile */
		c = NULL;
	}
	nx_cache_lock lk = {-1};
	nx_cache_result cr = NX_CACHE_MISS;
	char *flog = NULL;
	if (st == NX_OK && c) {
		bool waited;
		cr = nx_cache_lookup(c, &k, f->retry_failed, &r->neff, &r->len, &flog);
		if (cr == NX_CACHE_MISS) {
			if (nx_cache_lock_key(c, &k, &lk, &waited, d) != NX_OK)
				nx_diag_clear(d);
			cr = nx_cache_lookup(c, &k, f->retry_failed, &r->neff, &r->len, &flog);
		}
	}
	if (st != NX_OK) {
	} else if (cr == NX_CACHE_HIT) {
		r->cache_hit = 1;
	} else if (cr == NX_CACHE_FAILED) {
		st = nx_diag_set(d, NX_ERR_INPUT, NULL, 0, 0,
		                 "a previous compile of this module with these flags failed (cached): %s; pass "
		                 "--retry-failed to compile again", flog ? flog : "");
	} else {
		nx_compile_result cres = {0};
		st = nx_compile_logged(path, f, o, log, false, &cres, d);
		if (c) {
			size_t pb_len = 0;
			nx_diag pd = {0};
			void *pb = nx_write_proto(m, &pb_len, &pd);
			char *fj = nx_flags_canonical_json(f);
			if (st == NX_OK)
				nx_cache_store(c, &k, pb, pb_len, fj, cres.neff, cres.len, &pd);
			else {
				char *msg = nx_diag_format(d);
				nx_cache_store_failure(c, &k, pb, pb_len, fj, msg, &pd);
				free(msg);
			}
			nx_diag_clear(&pd); /* a store that fails leaves the compile's result standing */
			free(fj);
			free(pb);
		}
		r->neff = cres.neff, r->len = cres.len;
	}
	nx_cache_unlock(&lk);
	nx_cache_close(c);
	free(flog);
	nx_module_free(m);
	return st;
}

int nxcc_compile(const void *hlo, size_t hlo_len, const char *name, const char *flags, nxcc_compile_result **out)
{
	nxcc_compile_result *r = calloc(1, sizeof *r);
	*out = r;
	nx_diag d = {0};
	if (!hlo && hlo_len) {
		nx_diag_set(&d, NX_ERR_INPUT, NULL, 0, 0, "nxcc_compile: hlo is NULL");
		take_diag(&r->diag[0], r->strings, &d, NULL, NULL);
		r->diag[0].code = NXCC_ERR_API;
		r->ndiag = 1;
		nx_diag_clear(&d);
		return r->status = NXCC_ERR_API;
	}
	const char *tmpd = getenv("TMPDIR");
	char dir[4096];
	snprintf(dir, sizeof dir, "%s/nxcc-api-XXXXXX", tmpd && *tmpd ? tmpd : "/tmp");
	char *path = NULL;
	nx_compile_flags f;
	memset(&f, 0, sizeof f);
	bool parsed = false;
	nx_status st = NX_OK;
	if (!mkdtemp(dir)) {
		st = nx_diag_set(&d, NX_ERR_IO, dir, 0, 0, "cannot create a temporary directory");
	} else {
		path = nx_xasprintf("%s/module", dir);
		st = nx_write_file_atomic(path, hlo, hlo_len, false, &d);
	}
	if (st == NX_OK) {
		char *argv[] = {path, NULL};
		parsed = true;
		st = nx_flags_parse(1, argv, flags ? flags : "", &f, &d);
	}
	if (st == NX_OK) {
		nx_log log = {.console = NX_LOG_CRITICAL + 1, .file_level = NX_LOG_CRITICAL + 1};
		nx_compile_opts o;
		nx_pass_opts po;
		nx_compile_opts_from_flags(&f, &o, &po, NULL);
		if (f.cache_dir && !f.no_cache) {
			st = compile_via_cache(path, &f, &o, &log, r, &d);
		} else {
			nx_compile_result cres = {0};
			st = nx_compile_logged(path, &f, &o, &log, false, &cres, &d);
			r->neff = cres.neff, r->len = cres.len;
		}
	}
	if (parsed)
		nx_flags_free(&f);
	if (path)
		unlink(path);
	rmdir(dir);
	if (st != NX_OK) {
		take_diag(&r->diag[0], r->strings, &d, path, name);
		r->ndiag = 1;
		free(r->neff);
		r->neff = NULL, r->len = 0;
	}
	free(path);
	nx_diag_clear(&d);
	return r->status = status_of(st);
}

const void *nxcc_compile_neff(const nxcc_compile_result *r, size_t *len)
{
	if (len)
		*len = r && r->neff ? r->len : 0;
	return r ? r->neff : NULL;
}

int nxcc_compile_status(const nxcc_compile_result *r) { return r ? r->status : NXCC_ERR_API; }
int nxcc_compile_cache_hit(const nxcc_compile_result *r) { return r ? r->cache_hit : 0; }
int nxcc_compile_num_diagnostics(const nxcc_compile_result *r) { return r ? r->ndiag : 0; }

const nxcc_diagnostic *nxcc_compile_diagnostic(const nxcc_compile_result *r, int i)
{
	return r && i >= 0 && i < r->ndiag ? &r->diag[i] : NULL;
}

void nxcc_compile_result_free(nxcc_compile_result *r)
{
	if (!r)
		return;
	for (int i = 0; i < 4; i++)
		free(r->strings[i]);
	free(r->neff);
	free(r);
}

static void fill_diag(nxcc_diagnostic *out, const nx_diag *d, int code)
{
	if (!out)
		return;
	char *own[4] = {0};
	take_diag(out, own, d, NULL, NULL);
	if (code)
		out->code = code;
}

void nxcc_diagnostic_clear(nxcc_diagnostic *d)
{
	if (!d)
		return;
	free((char *)d->file);
	free((char *)d->instruction);
	free((char *)d->message);
	memset(d, 0, sizeof *d);
}

int nxcc_program_load(const void *neff, size_t len, nxcc_program **out, nxcc_diagnostic *diag)
{
	nx_diag d = {0};
	*out = NULL;
	if (!neff) {
		nx_diag_set(&d, NX_ERR_INPUT, NULL, 0, 0, "nxcc_program_load: neff is NULL");
		fill_diag(diag, &d, NXCC_ERR_API);
		nx_diag_clear(&d);
		return NXCC_ERR_API;
	}
	nx_neff *n = nx_rt_load_bytes(neff, len, "program.neff", NULL, &d);
	if (!n) {
		int st = status_of(d.status ? d.status : NX_ERR_INPUT);
		fill_diag(diag, &d, 0);
		nx_diag_clear(&d);
		return st;
	}
	*out = calloc(1, sizeof **out);
	(*out)->n = n;
	return NXCC_OK;
}

void nxcc_program_free(nxcc_program *p)
{
	if (!p)
		return;
	nx_neff_free(p->n);
	free(p);
}

int nxcc_program_num_inputs(const nxcc_program *p) { return p ? p->n->ninputs : -1; }
int nxcc_program_num_outputs(const nxcc_program *p) { return p ? p->n->noutputs : -1; }

static const nx_rt_tensor *tensor(const nxcc_program *p, int is_output, int i)
{
	if (!p || i < 0 || i >= (is_output ? p->n->noutputs : p->n->ninputs))
		return NULL;
	return is_output ? &p->n->outputs[i] : &p->n->inputs[i];
}

const char *nxcc_program_tensor_name(const nxcc_program *p, int is_output, int i)
{
	const nx_rt_tensor *t = tensor(p, is_output, i);
	return t ? t->name : NULL;
}

const char *nxcc_program_tensor_dtype(const nxcc_program *p, int is_output, int i)
{
	const nx_rt_tensor *t = tensor(p, is_output, i);
	return t ? nx_dtype_names[t->dtype] : NULL;
}

int nxcc_program_tensor_rank(const nxcc_program *p, int is_output, int i)
{
	const nx_rt_tensor *t = tensor(p, is_output, i);
	return t ? t->rank : -1;
}

int64_t nxcc_program_tensor_dim(const nxcc_program *p, int is_output, int i, int dim)
{
	const nx_rt_tensor *t = tensor(p, is_output, i);
	return t && dim >= 0 && dim < t->rank ? t->dims[dim] : -1;
}

int64_t nxcc_program_tensor_bytes(const nxcc_program *p, int is_output, int i)
{
	const nx_rt_tensor *t = tensor(p, is_output, i);
	return t ? t->bytes : -1;
}

int nxcc_run(const nxcc_program *p, const void *const *inputs, void *const *outputs, double *sim_ns,
             nxcc_diagnostic *diag)
{
	nx_diag d = {0};
	if (!p || (!inputs && p->n->ninputs) || (!outputs && p->n->noutputs)) {
		nx_diag_set(&d, NX_ERR_INPUT, NULL, 0, 0, "nxcc_run: a NULL program, inputs or outputs array");
		fill_diag(diag, &d, NXCC_ERR_API);
		nx_diag_clear(&d);
		return NXCC_ERR_API;
	}
	nx_rt_opts o = nx_rt_opts_default();
	nx_rt_stats st;
	memset(&st, 0, sizeof st);
	nx_status rc = nx_rt_run(p->n, inputs, outputs, &o, &st, &d);
	if (rc != NX_OK) {
		fill_diag(diag, &d, 0);
		nx_diag_clear(&d);
		return status_of(rc);
	}
	if (sim_ns)
		*sim_ns = st.total_ns;
	return NXCC_OK;
}
