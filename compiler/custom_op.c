/* compiler/custom_op.c — `--custom-op NAME=kernel.c|.ll|.bc`: user GpSimd
 * kernels (docs/gpsimd.md). C and LLVM assembly go through clang-16
 * (`clang-16 -O2 -emit-llvm -c`; its diagnostics, with file:line:col, reach
 * stderr unchanged); bitcode is read as is. The kernels are registered with
 * the backend (a custom-call with custom_call_target="NAME" becomes a GpSimd
 * call) and with the evaluator, which runs the same bitcode on the host
 * through the runtime's JIT, so `nxcc check` compares like with like.
 * The compile cache is bypassed when custom operators are given: its key
 * sees the flag, not the kernel's contents. */
#include "backend/gpsimd/gpsimd.h"
#include "compiler/custom_op.h"
#include "ir/eval/eval.h"
#include "passes/pass.h"
#include "runtime-stub/gpsimd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_OPS 16

static nx_custom_op ops[MAX_OPS];
static nx_gs_prog *progs[MAX_OPS]; /* host JIT for the evaluator, on first use */
static int nops;

static uint8_t *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 1 << 16, n = 0, k;
	uint8_t *b = malloc(cap);
	while ((k = fread(b + n, 1, cap - n, f)) > 0)
		if ((n += k) == cap)
			b = realloc(b, cap *= 2);
	fclose(f);
	*len = n;
	return b;
}

/* clang-16 -O2 -emit-llvm -c FILE -o OUT; 0 on success */
static int run_clang(const char *file, const char *out)
{
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		execlp("clang-16", "clang-16", "-O2", "-emit-llvm", "-c", "-fno-stack-protector", file, "-o", out, (char *)NULL);
		perror("nxcc: cannot run clang-16 (Debian package clang-16; make deps)");
		_exit(127);
	}
	int st;
	if (waitpid(pid, &st, 0) < 0)
		return -1;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

static bool host_type_ok(nx_type t)
{
	int d = nx_lower_dtype(t);
	return d >= 0 && nx_dtype_bytes[d] == nx_type_bytes(t);
}

static nx_status eval_custom(nx_eval *ev, const nx_inst *i, nx_literal *const *lits, nx_literal **out, bool *handled)
{
	int k = 0;
	while (k < nops && (!i->a.custom_call_target || strcmp(ops[k].name, i->a.custom_call_target)))
		k++;
	*handled = k < nops;
	if (!*handled)
		return NX_OK;
	if (i->noperands > 3 || !nx_shape_is_array(i->shape) || !host_type_ok(i->shape->type))
		return nx_eval_error(ev, i, "custom operator '%s': at most 3 operands and one array result of a device type",
		                     ops[k].name);
	char err[320];
	if (!progs[k]) {
		const char *nm = ops[k].name;
		progs[k] = nx_gs_prog_load(1, &nm, &ops[k].bc, &ops[k].len, err, sizeof err);
		if (!progs[k])
			return nx_eval_error(ev, i, "%s", err);
	}
	nx_literal *res = nx_eval_alloc(ev, i->shape);
	if (!res)
		return ev->diag->status;
	nx_gs_tensor t[4];
	nx_gs_region r[4];
	const nx_shape *rs = i->shape;
	int64_t R = rs->rank ? rs->dims[rs->rank - 1] : 1, O = R ? nx_shape_elems(rs) / R : 0;
	for (int j = 0; j <= i->noperands; j++) {
		nx_literal *l = j == 0 ? res : lits[j - 1];
		const nx_shape *s = l->shape;
		int64_t Rj = s->rank ? s->dims[s->rank - 1] : 1;
		if (!nx_shape_is_array(s) || !host_type_ok(s->type) || (Rj ? nx_shape_elems(s) / Rj : 0) != O)
			return nx_eval_error(ev, i, "custom operator '%s': operand %d must be a device-type array with the "
			                            "result's rows", ops[k].name, j - 1);
		memset(&t[j], 0, sizeof t[j]);
		t[j] = (nx_gs_tensor){l->data, nx_lower_dtype(s->type), 3, {1, O, Rj}, {O * Rj, Rj, 1}};
		r[j] = (nx_gs_region){l->data, 0, 1, 0, l->nbytes, j == 0};
	}
	*out = res;
	if (O == 0)
		return NX_OK;
	uint64_t insts;
	if (nx_gs_run(progs[k], 0, t, i->noperands + 1, r, i->noperands + 1, &insts, err, sizeof err) != 0)
		return nx_eval_error(ev, i, "custom operator '%s' on the host: %s", ops[k].name, err);
	return NX_OK;
}

static bool is_custom_target(const char *t)
{
	return nx_gpsimd_custom_op(t) != NULL;
}

int nx_custom_ops_setup(nx_compile_flags *f, nx_log *log)
{
	for (int k = 0; k < f->n_custom_op; k++) {
		const char *spec = f->custom_op[k], *eq = strchr(spec, '=');
		if (!eq || eq == spec || !eq[1]) {
			fprintf(stderr, "nxcc: error: --custom-op '%s': expected NAME=kernel.c|.ll|.bc\n", spec);
			return 1;
		}
		if (nops == MAX_OPS) {
			fprintf(stderr, "nxcc: error: more than %d custom operators\n", MAX_OPS);
			return 1;
		}
		char *name = strndup(spec, (size_t)(eq - spec));
		const char *file = eq + 1;
		size_t fl = strlen(file), len = 0;
		uint8_t *bc = NULL;
		if (access(file, R_OK) != 0) {
			fprintf(stderr, "nxcc: error: --custom-op %s: cannot read '%s'\n", name, file);
			free(name);
			return 1;
		}
		if (fl > 3 && !strcmp(file + fl - 3, ".bc")) {
			bc = read_all(file, &len);
		} else if ((fl > 2 && !strcmp(file + fl - 2, ".c")) || (fl > 3 && !strcmp(file + fl - 3, ".ll"))) {
			char tmp[] = "/tmp/nxcc-custom-XXXXXX";
			int fd = mkstemp(tmp);
			if (fd >= 0)
				close(fd);
			if (fd < 0 || run_clang(file, tmp) != 0) {
				fprintf(stderr, "nxcc: error: --custom-op %s: clang-16 could not compile '%s'\n", name, file);
				if (fd >= 0)
					unlink(tmp);
				free(name);
				return 1;
			}
			bc = read_all(tmp, &len);
			unlink(tmp);
		} else {
			fprintf(stderr, "nxcc: error: --custom-op %s: '%s' is not .c, .ll or .bc\n", name, file);
			free(name);
			return 1;
		}
		if (!bc) {
			fprintf(stderr, "nxcc: error: --custom-op %s: cannot read '%s'\n", name, file);
			free(name);
			return 1;
		}
		ops[nops++] = (nx_custom_op){name, bc, len};
		nx_logf(log, NX_LOG_INFO, "custom operator %s: %zu bytes of bitcode from %s", name, len, file);
	}
	if (f->n_custom_op) {
		nx_gpsimd_set_custom_ops(ops, nops);
		nx_eval_custom_hook = eval_custom;
		nx_custom_target_hook = is_custom_target;
		if (!f->no_cache)
			nx_logf(log, NX_LOG_INFO, "--custom-op: compile cache not used (its key does not see kernel contents)");
		f->no_cache = true;
	}
	return 0;
}

static void jit_stats(void)
{
	int64_t cl, in;
	int k;
	double ms;
	nx_eval_jit_stats(&cl, &in);
	nx_gpsimd_eval_jit_stats(&k, &ms);
	fprintf(stderr, "nxcc: eval JIT: %lld clusters run covering %lld instructions, %d kernels compiled in %.0f ms\n",
	        (long long)cl, (long long)in, k, ms);
}

static void *plan_only(const nx_eval_cluster *c)
{
	return (void *)c; /* any non-NULL: the cluster is kept */
}

void nx_eval_jit_setup(void)
{
	const char *on = getenv("NX_EVAL_JIT"), *min = getenv("NX_EVAL_JIT_MIN"), *st = getenv("NX_EVAL_JIT_STATS");
	if (on && strcmp(on, "0") == 0)
		return;
	long long m = min && *min ? atoll(min) : 65536;
	nx_eval_jit_hook = nx_gpsimd_eval_jit(m > 0 ? m : 1);
	if (on && strcmp(on, "plan") == 0) { /* clusters planned, members interpreted at the root */
		static nx_eval_jit_ops plan;
		plan = *nx_eval_jit_hook;
		plan.compile = plan_only;
		plan.run = NULL;
		nx_eval_jit_hook = &plan;
	}
	if (st && strcmp(st, "1") == 0)
		atexit(jit_stats);
}
