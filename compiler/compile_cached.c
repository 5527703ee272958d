/* compiler/compile_cached.c — the compile cache around the compile driver
 * (compiler/compile_cached.h). */
#include "compiler/compile_cached.h"
#include "compiler/cache.h"
#include "compiler/cli.h"
#include "compiler/errors.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void nx_compile_opts_from_flags(const nx_compile_flags *f, nx_compile_opts *o, nx_pass_opts *po, nx_log *log)
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
	o->no_mixed_accumulation = !f->mixed_precision_accumulation;
	o->framework = "XLA";
	o->output = f->output ? f->output : "file.neff";
	o->dump_lower = f->dump_lower;
	if (!po)
		return;
	memset(po, 0, sizeof *po);
	po->time_passes = f->time_passes;
	po->verify_each = f->verify_each;
	po->dump_dir = f->dump_dir;
	po->dump_format = f->dump_format;
	/* the manager takes one name or "all": several names dump everything */
	if (f->n_dump_after == 1)
		po->dump_after = f->dump_after[0];
	else if (f->n_dump_after > 1)
		po->dump_after = "all";
	po->disabled = (const char **)f->disable_pass;
	po->ndisabled = f->n_disable_pass;
	for (int i = 0; i < f->n_disable_pass && log; i++)
		if (!nx_pass_find(f->disable_pass[i]))
			nx_logf(log, NX_LOG_WARNING, "--disable-pass=%s: nxcc has no pass of that name (see nxcc opt --list-passes)",
			        f->disable_pass[i]);
	o->passes = po;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void cache_log(void *ud, int level, const char *msg)
{
	nx_logf(ud, level > 0 ? NX_LOG_WARNING : NX_LOG_INFO, "%s", msg);
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
	printf("compile time: %.3f s\nneff: %zu bytes\nkernels: %d\nfusions: %d\n", r->seconds, r->len, r->st.kernels,
	       r->st.fusions);
	for (int e = 0; e < NX_ENG_COUNT; e++)
		printf("instructions %s: %zu\n", nx_engine_names[e], r->st.insns[e]);
	printf("hbm: %lld bytes\nsbuf peak: %lld bytes per partition\n", (long long)r->st.hbm_bytes,
	       (long long)r->st.sbuf_peak);
	/* roofline: FLOPs at the fp32 TensorE peak vs the minimal HBM traffic at
	 * the DMA engines' aggregate bandwidth capped by HBM (the simulator's
	 * numbers, backend/target/target.c) */
	const nx_target *t = nx_target_get(target);
	double fns = r->st.flops / (t->pe_tflops_fp32 * 1e3), bns = (double)r->st.io_bytes / nx_target_dma_peak_gbps(t);
	printf("flops: %.0f\nminimal hbm bytes: %lld\nroofline bound: %.3f ns (compute %.3f ns, memory %.3f ns)\n",
	       r->st.flops, (long long)r->st.io_bytes, fns > bns ? fns : bns, fns, bns);
	printf("hbm plan bound: %lld bytes\nlower stages: memory %.3f ms, kernels %.3f ms, check %.3f ms, encode %.3f ms\n",
	       (long long)r->st.hbm_lower_bound, 1e3 * r->st.t_memory, 1e3 * r->st.t_emit, 1e3 * r->st.t_check,
	       1e3 * r->st.t_encode);
	printf("compile phases: read %.3f ms, verify %.3f ms, passes %.3f ms, lower %.3f ms, total %.3f ms, cpu %.3f ms\n",
	       1e3 * r->t_read, 1e3 * r->t_verify, 1e3 * r->t_passes, 1e3 * r->t_lower, 1e3 * r->seconds,
	       1e3 * r->cpu_seconds);
}

/* Runs the driver with the pass manager's output captured, then hands it to
 * the log: the pass timing table and pass messages reach the --logfile
 * even when the console stays quiet. */
nx_status nx_compile_logged(const char *file, const nx_compile_flags *f, nx_compile_opts *o, nx_log *log,
                            bool keep_module, nx_compile_result *r, nx_diag *d)
{
	nx_pass_opts po = *o->passes;
	nx_log_level want = log->console < log->file_level || !log->file ? log->console : log->file_level;
	o->pass_verbose = want == NX_LOG_DEBUG ? 2 : want == NX_LOG_INFO ? 1 : 0;
	po.time_passes = f->time_passes || log->file;
	char *text = NULL;
	size_t len = 0;
	FILE *cap = NULL;
	if (po.time_passes || o->pass_verbose) {
		cap = open_memstream(&text, &len);
		if (!cap)
			abort();
	}
	const nx_pass_opts *saved = o->passes;
	o->passes = &po;
	o->pass_log = cap;
	nx_logf(log, NX_LOG_INFO, "compiling %s: target %s, -O%d, auto-cast %s", file, o->target, o->opt_level,
	        o->auto_cast);
	nx_status st = nx_driver_compile(file, o, keep_module, r, d);
	if (r->nelided)
		nx_logf(log, NX_LOG_WARNING, "%s: %d constant%s elided in the dump (constant({...})) and filled with nxcc's deterministic stand-in values (docs/ir.md \"Elided constants\"): the program computes with them, not with the model's",
		        file, r->nelided, r->nelided == 1 ? " was" : "s were");
	o->passes = saved;
	o->pass_log = NULL;
	if (cap) {
		fclose(cap);
		nx_log_text(log, want, f->time_passes, text);
		free(text);
	}
	nx_logf(log, NX_LOG_INFO, "compile %s: read %.3f ms, verify %.3f ms, passes %.3f ms, lower %.3f ms, total %.3f ms",
	        st == NX_OK ? "done" : "failed", 1e3 * r->t_read, 1e3 * r->t_verify, 1e3 * r->t_passes,
	        1e3 * r->t_lower, 1e3 * r->seconds);
	if (st == NX_OK)
		nx_logf(log, NX_LOG_INFO, "neff: %zu bytes, %d kernels", r->len, r->st.kernels);
	return st;
}

/* The result line: stdout, or (neuronx-cc mode, which prints its own
 * status line) the log at info. */
static void result(nx_log *log, bool to_log, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void result(nx_log *log, bool to_log, const char *fmt, ...)
{
	char buf[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (to_log)
		nx_logf(log, NX_LOG_INFO, "%s", buf);
	else
		printf("%s\n", buf);
}

int nx_compile_cached(const nx_compile_flags *f, bool stats, bool result_to_log, nx_log *log)
{
	const char *file = f->inputs[0];
	nx_compile_opts o;
	nx_pass_opts po;
	nx_compile_opts_from_flags(f, &o, &po, log);
	test_hooks(file);
	double t0 = now_s();
	nx_diag d = {0};
	nx_compile_result r = {0};
	int rc = 0;
	/* a pipe or terminal (/dev/stdin) can be read only once: the cache key
	 * would consume what the compile then needs */
	struct stat sb;
	bool stream = stat(file, &sb) == 0 && !S_ISREG(sb.st_mode);
	if (f->no_cache || f->dump_lower || stream) {
		nx_logf(log, NX_LOG_INFO, "compile cache off (%s)",
		        f->no_cache ? "--no-cache" : f->dump_lower ? "--dump-lower" : "the input is not a regular file");
		if (nx_compile_logged(file, f, &o, log, false, &r, &d) != NX_OK || nx_cli_write_file(o.output, r.neff, r.len, &d) != NX_OK)
			rc = nx_log_report(log, &d);
		else if (stats)
			print_stats(&r, o.target);
		if (rc == 0 && r.st.dump_text)
			fputs(r.st.dump_text, stdout);
		free(r.st.dump_text);
		nx_diag_clear(&d);
		free(r.neff);
		return rc;
	}

	/* The key is the module as read, before any pass: what the framework
	 * hands over is all a later lookup will have. A hit needs nothing else:
	 * no verifier, no passes. */
	nx_module *m = nx_read_file(file, &d);
	if (!m)
		return nx_log_report(log, &d);
	char fp[33], fh[17];
	nx_fingerprint(m, fp);
	nx_flags_hash(f, fh);
	nx_cache_key k;
	if (nx_cache_key_make(fp, fh, &k, &d) != NX_OK) {
		nx_module_free(m);
		return nx_log_report(log, &d);
	}
	nx_cache *c = NULL;
	char *no_cache_why = NULL; /* the cache could not be opened: why */
	if (nx_cache_open(nx_cache_location(f->cache_dir), &c, &d) != NX_OK) {
		/* a cache that cannot be opened never stops a compile */
		nx_logf(log, NX_LOG_WARNING, "compile cache unusable: %s", d.msg);
		no_cache_why = nx_xstrdup(d.msg ? d.msg : "cannot open the compile cache");
		nx_diag_clear(&d);
		c = NULL;
	}
	if (c)
		nx_cache_set_log(c, cache_log, log);
	char *where = c ? nx_cache_where(c, &k) : NULL;
	nx_logf(log, NX_LOG_INFO, "cache key %s (module fingerprint %s, flags %s)%s%s", k.name, fp, fh,
	        where ? " at " : "", where ? where : "");
	uint8_t *neff = NULL;
	size_t len = 0;
	char *flog = NULL;
	nx_cache_lock lk = {-1};
	bool waited = false;
	nx_cache_result cr = c ? nx_cache_lookup(c, &k, f->retry_failed, &neff, &len, &flog) : NX_CACHE_MISS;
	if (cr == NX_CACHE_MISS && c) {
		if (nx_cache_lock_key(c, &k, &lk, &waited, &d) != NX_OK) {
			/* an unusable cache has said so once already */
			if (nx_cache_usable(c))
				nx_logf(log, NX_LOG_WARNING, "%s; compiling without the lock", d.msg);
			nx_diag_clear(&d);
		}
		if (waited)
			nx_logf(log, NX_LOG_WARNING, "waited for another compile of %s", k.name);
		cr = nx_cache_lookup(c, &k, f->retry_failed, &neff, &len, &flog);
	}
	char *flags_json = nx_flags_canonical_json(f);
	if (cr == NX_CACHE_HIT) {
		nx_logf(log, NX_LOG_INFO, "cache hit: %zu bytes of .neff from %s", len, where);
		/* the entry is durable already: the output copy skips the fsync,
		 * which was most of a hit's time on a busy disk */
		if (nx_cli_write_file_nosync(o.output, neff, len, &d) != NX_OK) {
			rc = nx_log_report(log, &d);
		} else {
			result(log, result_to_log, "cache hit (%s)%s: %s in %.3f s", where,
			       waited ? " after waiting for another compile" : "", o.output, now_s() - t0);
			if (stats)
				printf("neff: %zu bytes (from the cache)\n", len);
		}
	} else if (cr == NX_CACHE_FAILED) {
		nx_logf(log, NX_LOG_INFO, "cache: a failed compile is cached for this key");
		nx_log_text(log, NX_LOG_ERROR, false, flog);
		nx_logf(log, NX_LOG_ERROR,
		        NX_E_CACHED_FAILURE ": a previous compile of %s failed (cached in %s/model.log); pass --retry-failed to compile again",
		        file, where);
		rc = NX_EXIT_USER;
	} else {
		nx_logf(log, NX_LOG_INFO, "cache miss%s", c ? "" : " (no cache)");
		nx_status st = nx_compile_logged(file, f, &o, log, false, &r, &d);
		size_t pb_len = 0;
		nx_diag pd = {0};
		void *pb = c ? nx_write_proto(m, &pb_len, &pd) : NULL;
		nx_diag_clear(&pd); /* a module we cannot serialize is stored without its proto */
		if (st != NX_OK) {
			char *msg = nx_diag_format(&d);
			if (c && nx_cache_store_failure(c, &k, pb, pb_len, flags_json, msg, &pd) != NX_OK)
				nx_logf(log, NX_LOG_INFO, "cache: failure not stored: %s", pd.msg);
			else if (c)
				nx_logf(log, NX_LOG_INFO, "cache: stored the failure in %s", where);
			nx_diag_clear(&pd);
			free(msg);
			rc = nx_log_report(log, &d);
		} else {
			/* The result line says what happened to the entry; the one
			 * warning of a failed store came from the cache itself. */
			char *not_stored = NULL;
			if (!c)
				not_stored = nx_xstrdup(no_cache_why);
			else if (nx_cache_store(c, &k, pb, pb_len, flags_json, r.neff, r.len, &pd) != NX_OK)
				not_stored = nx_xstrdup(pd.msg ? pd.msg : "store failed");
			nx_diag_clear(&pd);
			if (not_stored)
				nx_logf(log, NX_LOG_INFO, "cache: not stored: %s", not_stored);
			else
				nx_logf(log, NX_LOG_INFO, "cache: stored in %s", where);
			if (nx_cli_write_file(o.output, r.neff, r.len, &d) != NX_OK) {
				rc = nx_log_report(log, &d);
			} else {
				if (!not_stored)
					result(log, result_to_log, "cache miss: compiled %s in %.3f s, stored in %s", file, now_s() - t0, where);
				else
					result(log, result_to_log, "cache miss: compiled %s in %.3f s, not stored: %s", file, now_s() - t0,
					       not_stored);
				if (stats)
					print_stats(&r, o.target);
			}
			free(not_stored);
		}
		free(pb);
	}
	if (rc == 0)
		nx_logf(log, NX_LOG_INFO, "wrote %s in %.3f s", o.output, now_s() - t0);
	nx_cache_unlock(&lk);
	nx_diag_clear(&d);
	free(flags_json);
	free(r.neff);
	free(neff);
	free(flog);
	free(where);
	free(no_cache_why);
	nx_cache_close(c);
	nx_module_free(m);
	return rc;
}
