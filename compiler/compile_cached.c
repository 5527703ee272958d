/* compiler/compile_cached.c — the compile cache around the compile driver
 * (compiler/compile_cached.h). */
#include "compiler/compile_cached.h"
#include "compiler/cache.h"
#include "compiler/cli.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void nx_compile_opts_from_flags(const nx_compile_flags *f, nx_compile_opts *o)
{
	static const char *const cast[] = {"none", "matmult", "all"};
	static const char *const cast_type[] = {"bf16", "fp16", "tf32", "fp8_e4m3", "fp8_e5m2"};
	static const char *const model[] = {"generic", "transformer", "unet-inference"};
	nx_compile_opts_init(o);
	o->target = nx_target_name(f->target);
	o->opt_level = f->optlevel;
	o->auto_cast = cast[f->auto_cast];
	o->auto_cast_type = cast_type[f->auto_cast_type];
	o->model_type = model[f->model_type];
	o->framework = "XLA";
	o->output = f->output ? f->output : "file.neff";
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void cache_log(void *ud, int level, const char *msg)
{
	const nx_compile_flags *f = ud;
	if (level > 0)
		fprintf(stderr, "nxcc: warning: %s\n", msg);
	else if (f->verbose <= NX_LOG_INFO)
		fprintf(stderr, "nxcc: info: %s\n", msg);
}

/* Test hooks (NXCC_TEST_HOOKS=1 only): NXCC_TEST_HANG_ON=<file name> makes
 * the compile of that file hang (timeouts); NXCC_TEST_STALL_BEFORE_DONE=S
 * stalls S seconds between model.neff and model.done (crash safety, lock
 * waiting). */
static double stall_s;
static void stall(void)
{
	struct timespec ts = {(time_t)stall_s, (long)((stall_s - (double)(time_t)stall_s) * 1e9)};
	nanosleep(&ts, NULL);
}

static void test_hooks(const char *file)
{
	const char *on = getenv("NXCC_TEST_HOOKS");
	if (!on || strcmp(on, "1") != 0)
		return;
	const char *hang = getenv("NXCC_TEST_HANG_ON");
	const char *base = strrchr(file, '/');
	if (hang && strcmp(hang, base ? base + 1 : file) == 0)
		for (;;)
			pause();
	const char *s = getenv("NXCC_TEST_STALL_BEFORE_DONE");
	if (s && *s) {
		stall_s = atof(s);
		nx_cache_test_before_done = stall;
	}
}

static void print_stats(const nx_compile_result *r, const char *target)
{
	printf("compile time: %.3f s\nneff: %zu bytes\nkernels: %d\n", r->seconds, r->len, r->st.kernels);
	for (int e = 0; e < NX_ENG_COUNT; e++)
		printf("instructions %s: %zu\n", nx_engine_names[e], r->st.insns[e]);
	printf("hbm: %lld bytes\nsbuf peak: %lld bytes per partition\n", (long long)r->st.hbm_bytes,
	       (long long)r->st.sbuf_peak);
	/* roofline: FLOPs at the fp32 TensorE peak vs the minimal HBM traffic */
	const nx_target *t = nx_target_get(target);
	double fns = r->st.flops / (t->pe_tflops_fp32 * 1e3), bns = (double)r->st.io_bytes / t->hbm_gbps;
	printf("flops: %.0f\nminimal hbm bytes: %lld\nroofline bound: %.3f ns (compute %.3f ns, memory %.3f ns)\n",
	       r->st.flops, (long long)r->st.io_bytes, fns > bns ? fns : bns, fns, bns);
}

int nx_compile_cached(const nx_compile_flags *f, bool stats)
{
	const char *file = f->inputs[0];
	nx_compile_opts o;
	nx_compile_opts_from_flags(f, &o);
	for (int i = 0; i < f->n_accepted_no_effect; i++)
		if (f->verbose <= NX_LOG_INFO)
			fprintf(stderr, "nxcc: info: %s accepted; it does not change nxcc's output\n",
			        f->accepted_no_effect[i]);
	test_hooks(file);
	double t0 = now_s();
	nx_diag d = {0};
	nx_compile_result r = {0};
	int rc = 0;
	if (f->no_cache) {
		if (nx_driver_compile(file, &o, false, &r, &d) != NX_OK ||
		    nx_cli_write_file(o.output, r.neff, r.len, &d) != NX_OK)
			rc = nx_cli_report(&d);
		else if (stats)
			print_stats(&r, o.target);
		nx_diag_clear(&d);
		free(r.neff);
		return rc;
	}

	/* The key is the module as read, before any pass: what the framework
	 * hands over is all a later lookup will have. */
	nx_module *m = nx_read_file(file, &d);
	if (!m)
		return nx_cli_report(&d);
	char fp[33], fh[17];
	nx_fingerprint(m, fp);
	nx_flags_hash(f, fh);
	nx_cache_key k;
	if (nx_cache_key_make(fp, fh, &k, &d) != NX_OK) {
		nx_module_free(m);
		return nx_cli_report(&d);
	}
	nx_cache *c = NULL;
	if (nx_cache_open(nx_cache_location(f->cache_dir), &c, &d) != NX_OK) {
		/* a cache that cannot be opened never stops a compile */
		fprintf(stderr, "nxcc: warning: compile cache unusable: %s\n", d.msg);
		nx_diag_clear(&d);
		c = NULL;
	}
	if (c)
		nx_cache_set_log(c, cache_log, (void *)f);
	char *where = c ? nx_cache_where(c, &k) : NULL;
	uint8_t *neff = NULL;
	size_t len = 0;
	char *flog = NULL;
	nx_cache_lock lk = {-1};
	bool waited = false;
	nx_cache_result cr = c ? nx_cache_lookup(c, &k, f->retry_failed, &neff, &len, &flog) : NX_CACHE_MISS;
	if (cr == NX_CACHE_MISS && c) {
		if (nx_cache_lock_key(c, &k, &lk, &waited, &d) != NX_OK) {
			fprintf(stderr, "nxcc: warning: %s; compiling without the lock\n", d.msg);
			nx_diag_clear(&d);
		}
		if (waited)
			fprintf(stderr, "nxcc: waited for another compile of %s\n", k.name);
		cr = nx_cache_lookup(c, &k, f->retry_failed, &neff, &len, &flog);
	}
	char *flags_json = nx_flags_canonical_json(f);
	if (cr == NX_CACHE_HIT) {
		if (nx_cli_write_file(o.output, neff, len, &d) != NX_OK) {
			rc = nx_cli_report(&d);
		} else {
			printf("cache hit (%s)%s: %s in %.3f s\n", where, waited ? " after waiting for another compile" : "",
			       o.output, now_s() - t0);
			if (stats)
				printf("neff: %zu bytes (from the cache)\n", len);
		}
	} else if (cr == NX_CACHE_FAILED) {
		fprintf(stderr, "%snxcc: error: a previous compile of %s failed (cached in %s/model.log); "
		                "pass --retry-failed to compile again\n",
		        flog, file, where);
		rc = NX_EXIT_USER;
	} else {
		nx_status st = nx_driver_compile(file, &o, false, &r, &d);
		size_t pb_len = 0;
		nx_diag pd = {0};
		void *pb = c ? nx_write_proto(m, &pb_len, &pd) : NULL;
		nx_diag_clear(&pd); /* a module we cannot serialize is stored without its proto */
		if (st != NX_OK) {
			char *msg = nx_diag_format(&d);
			if (c && nx_cache_store_failure(c, &k, pb, pb_len, flags_json, msg, &pd) != NX_OK)
				nx_diag_clear(&pd);
			free(msg);
			rc = nx_cli_report(&d);
		} else {
			if (c && nx_cache_store(c, &k, pb, pb_len, flags_json, r.neff, r.len, &pd) != NX_OK) {
				fprintf(stderr, "nxcc: warning: not cached: %s\n", pd.msg);
				nx_diag_clear(&pd);
			}
			if (nx_cli_write_file(o.output, r.neff, r.len, &d) != NX_OK) {
				rc = nx_cli_report(&d);
			} else {
				if (c)
					printf("cache miss: compiled %s in %.3f s, stored in %s\n", file, now_s() - t0, where);
				else
					printf("cache miss (cache unusable): compiled %s in %.3f s\n", file, now_s() - t0);
				if (stats)
					print_stats(&r, o.target);
			}
		}
		free(pb);
	}
	nx_cache_unlock(&lk);
	nx_diag_clear(&d);
	free(flags_json);
	free(r.neff);
	free(neff);
	free(flog);
	free(where);
	nx_cache_close(c);
	nx_module_free(m);
	return rc;
}
