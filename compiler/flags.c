/* compiler/flags.c — neuronx-cc compile flags, NEURON_CC_FLAGS, canonical form. */
#include "compiler/flags.h"
#include "compiler/errors.h"
#include "nx_build_id.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* How a flag takes its value. */
enum { F_BOOL, F_VALUE, F_LIST };

/* What a flag means. NOEFFECT flags are accepted and listed, nothing more. */
typedef enum {
	K_FRAMEWORK, K_TARGET, K_MODEL_TYPE, K_AUTO_CAST, K_AUTO_CAST_TYPE, K_OPTLEVEL, K_LNC,
	K_SATURATE_INF, K_MIXED_ACC_ON, K_MIXED_ACC_OFF, K_EXPERIMENTAL_O1, K_DISABLE_PASS, K_CUSTOM_OP,
	K_OUTPUT, K_LOGFILE, K_VERBOSE, K_WORKDIR, K_CACHE_DIR, K_NO_CACHE, K_RETRY_FAILED,
	K_DUMP_AFTER, K_DUMP_DIR, K_DUMP_FORMAT, K_VERIFY_EACH, K_TIME_PASSES, K_STRICT_FLAGS, K_NOEFFECT,
} flag_kind;

typedef struct {
	const char *name; /* as written, with its dashes */
	int arity; /* F_LIST: one value, then more words up to the next flag or file */
	flag_kind kind;
} flag_spec;

/* The flags of `neuronx-cc compile` (public CLI reference, Neuron SDK 2.x),
 * the spellings torch-neuronx puts in NEURON_CC_FLAGS, and nxcc's own. */
static const flag_spec specs[] = {
	{"--framework", F_VALUE, K_FRAMEWORK},
	{"--target", F_VALUE, K_TARGET},
	{"--model-type", F_VALUE, K_MODEL_TYPE},
	{"--auto-cast", F_VALUE, K_AUTO_CAST},
	{"--auto-cast-type", F_VALUE, K_AUTO_CAST_TYPE},
	{"--optlevel", F_VALUE, K_OPTLEVEL},
	{"-O", F_VALUE, K_OPTLEVEL},
	{"--logical-nc-config", F_VALUE, K_LNC},
	{"-lnc", F_VALUE, K_LNC},
	{"--lnc", F_VALUE, K_LNC},
	{"--enable-saturate-infinity", F_BOOL, K_SATURATE_INF},
	{"--enable-mixed-precision-accumulation", F_BOOL, K_MIXED_ACC_ON},
	{"--disable-mixed-precision-accumulation", F_BOOL, K_MIXED_ACC_OFF},
	{"--enable-experimental-O1", F_BOOL, K_EXPERIMENTAL_O1},
	{"--disable-pass", F_VALUE, K_DISABLE_PASS},
	{"--custom-op", F_VALUE, K_CUSTOM_OP},
	{"--output", F_VALUE, K_OUTPUT},
	{"-o", F_VALUE, K_OUTPUT},
	{"--logfile", F_VALUE, K_LOGFILE},
	{"--verbose", F_VALUE, K_VERBOSE},
	{"--workdir", F_VALUE, K_WORKDIR},
	{"--compile_workdir", F_VALUE, K_WORKDIR},
	{"--log_level", F_VALUE, K_VERBOSE},
	{"--cache-dir", F_VALUE, K_CACHE_DIR},
	{"--cache_dir", F_VALUE, K_CACHE_DIR},
	{"--no-cache", F_BOOL, K_NO_CACHE},
	{"--no_cache", F_BOOL, K_NO_CACHE},
	{"--retry-failed", F_BOOL, K_RETRY_FAILED},
	{"--retry_failed_compilation", F_BOOL, K_RETRY_FAILED},
	{"--dump-after", F_VALUE, K_DUMP_AFTER},
	{"--dump-dir", F_VALUE, K_DUMP_DIR},
	{"--dump-format", F_VALUE, K_DUMP_FORMAT},
	{"--verify-each", F_BOOL, K_VERIFY_EACH},
	{"--time-passes", F_BOOL, K_TIME_PASSES},
	{"--strict-flags", F_BOOL, K_STRICT_FLAGS},
	/* Accepted for compatibility; nxcc's output does not depend on them. */
	{"--enable-fast-loading-neuron-binaries", F_BOOL, K_NOEFFECT},
	{"--enable-fast-context-switch", F_BOOL, K_NOEFFECT},
	{"--distribution-strategy", F_VALUE, K_NOEFFECT},
	{"--native-int64", F_VALUE, K_NOEFFECT},
	{"--implicit-integer-downcast", F_VALUE, K_NOEFFECT},
	{"--pipeline", F_LIST, K_NOEFFECT},
	{"--execute-repetition", F_VALUE, K_NOEFFECT},
	{"--enable-dge", F_BOOL, K_NOEFFECT},
	{"--disable-dge", F_BOOL, K_NOEFFECT},
	{"--neuroncore-pipeline-cores", F_VALUE, K_NOEFFECT},
	{"--tensorizer-options", F_VALUE, K_NOEFFECT},
	{"--internal-hlo2tensorizer-options", F_VALUE, K_NOEFFECT},
	{"--internal-backend-options", F_VALUE, K_NOEFFECT},
	{"--internal-compiler-debug-mode", F_VALUE, K_NOEFFECT},
	{"--internal-max-instruction-limit", F_VALUE, K_NOEFFECT},
	{"--enable-internal-neff-wrapper", F_BOOL, K_NOEFFECT},
};

/* ------------------------------------------------------------ string lists */

static void push(char ***v, int *n, const char *s)
{
	char **nv = realloc(*v, sizeof(char *) * (size_t)(*n + 1));
	if (!nv)
		abort();
	nv[*n] = nx_xstrdup(s);
	*v = nv;
	++*n;
}

/* Appends each comma-separated item of s. */
static void push_list(char ***v, int *n, const char *s)
{
	const char *p = s;
	while (*p) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		if (len) {
			char *item = malloc(len + 1);
			if (!item)
				abort();
			memcpy(item, p, len);
			item[len] = 0;
			push(v, n, item);
			free(item);
		}
		p += len + (e ? 1 : 0);
	}
}

static void free_list(char **v, int n)
{
	for (int i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static void set_str(char **dst, const char *s)
{
	free(*dst);
	*dst = nx_xstrdup(s);
}

void nx_flags_free(nx_compile_flags *f)
{
	if (!f)
		return;
	free(f->framework);
	free_list(f->disable_pass, f->n_disable_pass);
	free_list(f->custom_op, f->n_custom_op);
	free_list(f->inputs, f->n_inputs);
	free(f->output);
	free(f->logfile);
	free(f->workdir);
	free(f->cache_dir);
	free_list(f->dump_after, f->n_dump_after);
	free(f->dump_dir);
	free(f->dump_format);
	free_list(f->accepted_no_effect, f->n_accepted_no_effect);
	free_list(f->unknown_env, f->n_unknown_env);
	memset(f, 0, sizeof(*f));
}

/* ------------------------------------------------------------- shell split */

int nx_flags_split(const char *s, char ***words, nx_diag *d)
{
	char **v = NULL;
	int n = 0;
	size_t cap = strlen(s) + 1;
	char *w = malloc(cap);
	if (!w)
		abort();
	const char *p = s;
	for (;;) {
		while (*p && isspace((unsigned char)*p))
			p++;
		if (!*p)
			break;
		size_t k = 0;
		while (*p && !isspace((unsigned char)*p)) {
			if (*p == '\'') {
				const char *e = strchr(p + 1, '\'');
				if (!e)
					goto unbalanced;
				memcpy(w + k, p + 1, (size_t)(e - p - 1));
				k += (size_t)(e - p - 1);
				p = e + 1;
			} else if (*p == '"') {
				p++;
				while (*p && *p != '"') {
					/* inside double quotes a backslash escapes only these */
					if (*p == '\\' && p[1] && strchr("\"\\$`", p[1]))
						p++;
					w[k++] = *p++;
				}
				if (*p != '"')
					goto unbalanced;
				p++;
			} else if (*p == '\\' && p[1]) {
				w[k++] = p[1];
				p += 2;
			} else {
				w[k++] = *p++;
			}
		}
		w[k] = 0;
		push(&v, &n, w);
	}
	free(w);
	char **nv = realloc(v, sizeof(char *) * (size_t)(n + 1));
	if (!nv)
		abort();
	nv[n] = NULL;
	*words = nv;
	return n;
unbalanced:
	free(w);
	free_list(v, n);
	nx_diag_set(d, NX_ERR_INPUT, NULL, 0, 0, NX_E_ARG_ENV ": NEURON_CC_FLAGS: unbalanced quote in '%s'", s);
	*words = NULL;
	return -1;
}

/* ----------------------------------------------------------------- values */

typedef struct {
	const char *name;
	int value;
} enum_name;

static const enum_name target_names[] = {
	{"trn1", NX_TARGET_TRN1}, {"trn1n", NX_TARGET_TRN1N}, {"inf2", NX_TARGET_INF2},
	{"trn2", NX_TARGET_TRN2}, {NULL, 0}};
static const enum_name model_names[] = {
	{"generic", NX_MODEL_GENERIC}, {"transformer", NX_MODEL_TRANSFORMER},
	{"unet-inference", NX_MODEL_UNET_INFERENCE},
	/* neuronx-cc's CNN pattern set: nxcc has none of its own, so it compiles
	 * (and keys) as generic */
	{"cnn-training", NX_MODEL_GENERIC}, {NULL, 0}};
static const enum_name cast_names[] = {
	{"none", NX_AUTOCAST_NONE}, {"matmult", NX_AUTOCAST_MATMULT}, {"all", NX_AUTOCAST_ALL},
	{"matmul", NX_AUTOCAST_MATMULT}, /* the CLI reference's spelling */
	{NULL, 0}};
static const enum_name cast_type_names[] = {
	{"bf16", NX_CASTTYPE_BF16}, {"fp16", NX_CASTTYPE_FP16}, {"tf32", NX_CASTTYPE_TF32},
	{"fp8_e4m3", NX_CASTTYPE_FP8_E4M3}, {"fp8_e5m2", NX_CASTTYPE_FP8_E5M2}, {NULL, 0}};
static const enum_name dump_format_names[] = {{"hlo", 0}, {"dot", 1}, {"html", 2}, {NULL, 0}};
static const enum_name level_names[] = {
	{"debug", NX_LOG_DEBUG}, {"info", NX_LOG_INFO}, {"warning", NX_LOG_WARNING},
	{"warn", NX_LOG_WARNING}, {"error", NX_LOG_ERROR}, {"critical", NX_LOG_CRITICAL}, {NULL, 0}};

static const char *enum_str(const enum_name *t, int v)
{
	for (; t->name; t++)
		if (t->value == v)
			return t->name;
	NX_UNREACHABLE();
}

const char *nx_target_name(nx_target_kind t) { return enum_str(target_names, (int)t); }
const char *nx_log_level_name(nx_log_level l) { return enum_str(level_names, (int)l); }

/* Names are matched case-insensitively: NEURON_CC_FLAGS in the wild has
 * "--verbose INFO" and "--target TRN1". */
static nx_status parse_enum(const enum_name *t, const char *flag, const char *val, int *out, nx_diag *d)
{
	for (const enum_name *e = t; e->name; e++)
		if (strcasecmp(e->name, val) == 0) {
			*out = e->value;
			return NX_OK;
		}
	char allowed[256] = "";
	for (const enum_name *e = t; e->name; e++) {
		strncat(allowed, e->name, sizeof(allowed) - strlen(allowed) - 1);
		if (e[1].name)
			strncat(allowed, "|", sizeof(allowed) - strlen(allowed) - 1);
	}
	return nx_diag_set(d, NX_ERR_INPUT, NULL, 0, 0, NX_E_ARG_VALUE ": invalid value '%s' for %s (expected %s)", val,
	                   flag, allowed);
}

static nx_status parse_int_range(const char *flag, const char *val, int lo, int hi, int *out, nx_diag *d)
{
	const char *p = val;
	/* --optlevel O2 and -O O2 are common spellings */
	if (strcmp(flag, "--optlevel") == 0 || strcmp(flag, "-O") == 0)
		if (*p == 'O' || *p == 'o')
			p++;
	char *end;
	long v = strtol(p, &end, 10);
	if (!*p || *end || v < lo || v > hi)
		return nx_diag_set(d, NX_ERR_INPUT, NULL, 0, 0, NX_E_ARG_VALUE ": invalid value '%s' for %s (expected %d..%d)",
		                   val, flag, lo, hi);
	*out = (int)v;
	return NX_OK;
}

/* --verbose N: neuron-cc took a verbosity count (`--verbose 2`), neuronx-cc
 * runs on Python logging, whose levels are 10, 20, ... 50. */
static bool parse_level_number(const char *val, nx_log_level *out)
{
	char *end;
	long v = strtol(val, &end, 10);
	if (!*val || *end || v < 0)
		return false;
	if (v == 0)
		*out = NX_LOG_WARNING;
	else if (v == 1)
		*out = NX_LOG_INFO;
	else if (v <= 10)
		*out = NX_LOG_DEBUG;
	else if (v <= 20)
		*out = NX_LOG_INFO;
	else if (v <= 30)
		*out = NX_LOG_WARNING;
	else if (v <= 40)
		*out = NX_LOG_ERROR;
	else
		*out = NX_LOG_CRITICAL;
	return true;
}

/* ------------------------------------------------------------------ parse */

static nx_status apply(nx_compile_flags *f, const flag_spec *s, const char *written, const char *val,
                       nx_diag *d)
{
	int v = 0;
	nx_status st = NX_OK;
	switch (s->kind) {
	case K_FRAMEWORK:
		if (strcasecmp(val, "XLA") != 0)
			return nx_diag_set(d, NX_ERR_INPUT, NULL, 0, 0,
			                   NX_E_ARG_VALUE ": unsupported --framework '%s' (nxcc compiles XLA HLO only)", val);
		set_str(&f->framework, "XLA");
		break;
	case K_TARGET:
		if ((st = parse_enum(target_names, s->name, val, &v, d)) == NX_OK) {
			f->target = (nx_target_kind)v;
			f->target_set = true;
		}
		break;
	case K_MODEL_TYPE:
		if ((st = parse_enum(model_names, s->name, val, &v, d)) == NX_OK)
			f->model_type = (nx_model_type)v;
		break;
	case K_AUTO_CAST:
		if ((st = parse_enum(cast_names, s->name, val, &v, d)) == NX_OK)
			f->auto_cast = (nx_auto_cast)v;
		break;
	case K_AUTO_CAST_TYPE:
		if ((st = parse_enum(cast_type_names, s->name, val, &v, d)) == NX_OK)
			f->auto_cast_type = (nx_auto_cast_type)v;
		break;
	case K_OPTLEVEL:
		st = parse_int_range(s->name, val, 1, 3, &f->optlevel, d);
		break;
	case K_LNC:
		st = parse_int_range(s->name, val, 1, 2, &f->lnc, d);
		break;
	case K_SATURATE_INF: f->saturate_infinity = true; break;
	case K_MIXED_ACC_ON: f->mixed_precision_accumulation = true; break;
	case K_MIXED_ACC_OFF: f->mixed_precision_accumulation = false; break;
	case K_EXPERIMENTAL_O1: f->optlevel = 1; break;
	case K_DISABLE_PASS: push_list(&f->disable_pass, &f->n_disable_pass, val); break;
	case K_CUSTOM_OP: push(&f->custom_op, &f->n_custom_op, val); break;
	case K_OUTPUT: set_str(&f->output, val); break;
	case K_LOGFILE: set_str(&f->logfile, val); break;
	case K_VERBOSE:
		if (parse_level_number(val, &f->verbose))
			break;
		if ((st = parse_enum(level_names, s->name, val, &v, d)) == NX_OK)
			f->verbose = (nx_log_level)v;
		break;
	case K_WORKDIR: set_str(&f->workdir, val); break;
	case K_CACHE_DIR: set_str(&f->cache_dir, val); break;
	case K_NO_CACHE: f->no_cache = true; break;
	case K_RETRY_FAILED: f->retry_failed = true; break;
	case K_DUMP_AFTER: push_list(&f->dump_after, &f->n_dump_after, val); break;
	case K_DUMP_DIR: set_str(&f->dump_dir, val); break;
	case K_DUMP_FORMAT:
		if ((st = parse_enum(dump_format_names, s->name, val, &v, d)) == NX_OK)
			set_str(&f->dump_format, dump_format_names[v].name);
		break;
	case K_VERIFY_EACH: f->verify_each = true; break;
	case K_TIME_PASSES: f->time_passes = true; break;
	case K_STRICT_FLAGS: f->strict_flags = true; break;
	case K_NOEFFECT: push(&f->accepted_no_effect, &f->n_accepted_no_effect, written); break;
	}
	return st;
}

/* A word that --pipeline's list may take: a stage name, not a flag or file. */
static bool list_word(const char *w)
{
	return w[0] != '-' && !strchr(w, '/') && !strchr(w, '.');
}

/* Finds the spec for argv[*i], extracting its value (advancing *i over a
 * separate value; an F_LIST flag also over the further words of its list,
 * which are dropped: only no-effect flags take lists). Returns NULL when
 * the flag is unknown. */
static const flag_spec *match(int argc, char **argv, int *i, const char **val, bool *missing)
{
	const char *a = argv[*i];
	*missing = false;
	*val = NULL;
	/* -O1, -O2, -O3 written as one word */
	if (a[0] == '-' && a[1] == 'O' && a[2] && a[2] != '=') {
		*val = a + 2;
		for (size_t k = 0; k < sizeof(specs) / sizeof(specs[0]); k++)
			if (strcmp(specs[k].name, "-O") == 0)
				return &specs[k];
		NX_UNREACHABLE();
	}
	for (size_t k = 0; k < sizeof(specs) / sizeof(specs[0]); k++) {
		const flag_spec *s = &specs[k];
		size_t n = strlen(s->name);
		if (strncmp(a, s->name, n) != 0 || (a[n] != 0 && a[n] != '='))
			continue;
		if (s->arity == F_BOOL) {
			if (a[n] == '=') {
				/* --enable-x=true is accepted; any other value is a mistake */
				if (strcasecmp(a + n + 1, "true") != 0 && strcmp(a + n + 1, "1") != 0)
					*missing = true;
			}
			return s;
		}
		if (a[n] == '=')
			*val = a + n + 1;
		else if (*i + 1 < argc)
			*val = argv[++*i];
		else
			*missing = true;
		if (s->arity == F_LIST && !*missing)
			while (*i + 1 < argc && list_word(argv[*i + 1]))
				++*i;
		return s;
	}
	return NULL;
}

/* Edit distance (insert, delete, substitute), for "did you mean". Dashes
 * and underscores count as equal: --cache_dir is --cache-dir. */
static int edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > 63 || lb > 63)
		return 99;
	int row[64];
	for (size_t j = 0; j <= lb; j++)
		row[j] = (int)j;
	for (size_t i = 1; i <= la; i++) {
		int diag = row[0];
		row[0] = (int)i;
		for (size_t j = 1; j <= lb; j++) {
			char x = a[i - 1] == '_' ? '-' : (char)tolower((unsigned char)a[i - 1]);
			char y = b[j - 1] == '_' ? '-' : (char)tolower((unsigned char)b[j - 1]);
			int best = diag + (x != y);
			if (row[j] + 1 < best)
				best = row[j] + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			diag = row[j];
			row[j] = best;
		}
	}
	return row[lb];
}

const char *nx_flags_suggest(const char *name)
{
	const char *best = NULL;
	int bd = 99;
	for (size_t k = 0; k < sizeof(specs) / sizeof(specs[0]); k++) {
		int dist = edit_distance(name, specs[k].name);
		if (dist < bd) {
			bd = dist;
			best = specs[k].name;
		}
	}
	/* a third of the name may be wrong, at least 2 characters */
	int limit = (int)strlen(name) / 3;
	return bd <= (limit < 2 ? 2 : limit) ? best : NULL;
}

void nx_flags_print_list(FILE *out)
{
	for (size_t k = 0; k < sizeof(specs) / sizeof(specs[0]); k++)
		fprintf(out, "%s%s\n", specs[k].name,
		        specs[k].arity == F_BOOL ? "" : specs[k].arity == F_LIST ? " VALUE..." : " VALUE");
}

static nx_status parse_words(nx_compile_flags *f, int argc, char **argv, bool from_env, nx_diag *d)
{
	const char *where = from_env ? " (from NEURON_CC_FLAGS)" : "";
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		if (a[0] != '-' || a[1] == 0) {
			if (from_env)
				return nx_diag_set(d, NX_ERR_INPUT, NULL, 0, 0,
				                   NX_E_ARG_ENV ": NEURON_CC_FLAGS holds a non-flag word '%s'", a);
			push(&f->inputs, &f->n_inputs, a);
			continue;
		}
		const char *val;
		bool missing;
		const flag_spec *s = match(argc, argv, &i, &val, &missing);
		if (!s) {
			/* Neuron's undocumented internal knobs: accept, record, ignore.
			 * Their value, if any, must be attached with '='. */
			if (strncmp(a, "--internal-", 11) == 0 || strncmp(a, "--enable-internal-", 18) == 0) {
				push(&f->accepted_no_effect, &f->n_accepted_no_effect, a);
				continue;
			}
			char name[128];
			snprintf(name, sizeof(name), "%.*s", (int)strcspn(a, "="), a);
			if (from_env) {
				/* NEURON_CC_FLAGS reaches every rank of a job, and holds
				 * flags of other Neuron versions: ignored (the caller warns
				 * once), unless --strict-flags. It holds flags only, so a
				 * word after an unknown flag that is not one is its value. */
				push(&f->unknown_env, &f->n_unknown_env, name);
				if (!strchr(a, '=') && i + 1 < argc && argv[i + 1][0] != '-')
					i++;
				continue;
			}
			const char *sug = nx_flags_suggest(name);
			return nx_diag_set(d, NX_ERR_INPUT, NULL, 0, 0, NX_E_ARG_UNKNOWN ": unknown flag '%s'%s%s%s",
			                   name, sug ? " (did you mean '" : "", sug ? sug : "", sug ? "'?)" : "");
		}
		if (missing)
			return nx_diag_set(d, NX_ERR_INPUT, NULL, 0, 0,
			                   s->arity == F_BOOL ? NX_E_ARG_VALUE ": %s takes no value%s"
			                                      : NX_E_ARG_VALUE ": %s needs a value%s",
			                   s->name, where);
		char written[512];
		if (val)
			snprintf(written, sizeof(written), "%s=%s", s->name, val);
		else
			snprintf(written, sizeof(written), "%s", s->name);
		nx_status st = apply(f, s, written, val, d);
		if (st != NX_OK) {
			if (from_env && d && d->msg) {
				size_t n = strlen(d->msg) + 32;
				char *m = malloc(n);
				if (!m)
					abort();
				snprintf(m, n, "%s%s", d->msg, where);
				free(d->msg);
				d->msg = m;
			}
			return st;
		}
	}
	return NX_OK;
}

void nx_flags_mark_inputs(int argc, char **argv, bool *is_input)
{
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		is_input[i] = a[0] != '-' || a[1] == 0;
		if (is_input[i])
			continue;
		const char *val;
		bool missing;
		int at = i;
		if (match(argc, argv, &i, &val, &missing))
			for (int k = at + 1; k <= i; k++)
				is_input[k] = false;
	}
}

nx_status nx_flags_parse(int argc, char **argv, const char *env_neuron_cc_flags, nx_compile_flags *out,
                         nx_diag *d)
{
	memset(out, 0, sizeof(*out));
	out->framework = nx_xstrdup("XLA");
	out->target = NX_TARGET_TRN1;
	out->model_type = NX_MODEL_GENERIC;
	out->auto_cast = NX_AUTOCAST_NONE;
	out->auto_cast_type = NX_CASTTYPE_BF16;
	out->optlevel = 2;
	out->mixed_precision_accumulation = true;
	out->verbose = NX_LOG_WARNING;
	if (env_neuron_cc_flags && *env_neuron_cc_flags) {
		char **w;
		int n = nx_flags_split(env_neuron_cc_flags, &w, d);
		if (n < 0)
			return NX_ERR_INPUT;
		nx_status st = parse_words(out, n, w, true, d);
		free_list(w, n);
		if (st != NX_OK)
			return st;
	}
	nx_status st = parse_words(out, argc, argv, false, d);
	if (st != NX_OK)
		return st;
	if (out->strict_flags && out->n_unknown_env) {
		const char *sug = nx_flags_suggest(out->unknown_env[0]);
		return nx_diag_set(d, NX_ERR_INPUT, NULL, 0, 0,
		                   NX_E_ARG_UNKNOWN ": unknown flag '%s' (from NEURON_CC_FLAGS; --strict-flags)%s%s%s",
		                   out->unknown_env[0], sug ? " (did you mean '" : "", sug ? sug : "", sug ? "'?)" : "");
	}
	/* neuronx-cc: a logical NeuronCore of 2 physical ones exists on trn2 only */
	if (out->lnc == 2 && out->target != NX_TARGET_TRN2)
		return nx_diag_set(d, NX_ERR_INPUT, NULL, 0, 0,
		                   NX_E_ARG_COMBO ": --lnc 2 is not supported on --target %s (trn2 only; use --lnc 1)",
		                   nx_target_name(out->target));
	return NX_OK;
}

/* -------------------------------------------------------------- canonical */

int nx_flags_lnc(const nx_compile_flags *f)
{
	if (f->lnc)
		return f->lnc;
	return f->target == NX_TARGET_TRN2 ? 2 : 1;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Appends s as a JSON string. */
static void json_str(char **buf, size_t *len, size_t *cap, const char *s);

static void append(char **buf, size_t *len, size_t *cap, const char *s)
{
	size_t n = strlen(s);
	while (*len + n + 1 > *cap) {
		*cap *= 2;
		char *nb = realloc(*buf, *cap);
		if (!nb)
			abort();
		*buf = nb;
	}
	memcpy(*buf + *len, s, n + 1);
	*len += n;
}

static void json_str(char **buf, size_t *len, size_t *cap, const char *s)
{
	append(buf, len, cap, "\"");
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		char e[8];
		if (*p == '"' || *p == '\\')
			snprintf(e, sizeof(e), "\\%c", *p);
		else if (*p < 0x20)
			snprintf(e, sizeof(e), "\\u%04x", *p);
		else
			snprintf(e, sizeof(e), "%c", *p);
		append(buf, len, cap, e);
	}
	append(buf, len, cap, "\"");
}

char *nx_flags_canonical_json(const nx_compile_flags *f)
{
	size_t cap = 512, len = 0;
	char *b = malloc(cap);
	if (!b)
		abort();
	b[0] = 0;
	char tmp[128];
	/* trn1n runs trn1's program, but its .neff names trn1n: one key per
	 * distinct output, so each target has its own key. */
	nx_target_kind t = f->target;
	/* The compiler build is part of the key: another build may emit other code. */
	append(&b, &len, &cap, "{\"compiler\":\"" NX_VERSION "+" NX_BUILD_ID "\",\"framework\":");
	json_str(&b, &len, &cap, f->framework ? f->framework : "XLA");
	snprintf(tmp, sizeof(tmp), ",\"target\":\"%s\",\"model_type\":\"%s\",\"auto_cast\":\"%s\",\"auto_cast_type\":",
	         nx_target_name(t), enum_str(model_names, (int)f->model_type), enum_str(cast_names, (int)f->auto_cast));
	append(&b, &len, &cap, tmp);
	if (f->auto_cast == NX_AUTOCAST_NONE)
		append(&b, &len, &cap, "null");
	else
		json_str(&b, &len, &cap, enum_str(cast_type_names, (int)f->auto_cast_type));
	/* --enable-saturate-infinity has no effect on trn2 (Neuron docs) */
	bool sat = f->saturate_infinity && t != NX_TARGET_TRN2;
	snprintf(tmp, sizeof(tmp),
	         ",\"optlevel\":%d,\"lnc\":%d,\"saturate_infinity\":%s,\"mixed_precision_accumulation\":%s",
	         f->optlevel, nx_flags_lnc(f), sat ? "true" : "false",
	         f->mixed_precision_accumulation ? "true" : "false");
	append(&b, &len, &cap, tmp);
	append(&b, &len, &cap, ",\"disable_pass\":[");
	char **dp = malloc(sizeof(char *) * (size_t)(f->n_disable_pass + 1));
	if (!dp)
		abort();
	if (f->n_disable_pass)
		memcpy(dp, f->disable_pass, sizeof(char *) * (size_t)f->n_disable_pass);
	qsort(dp, (size_t)f->n_disable_pass, sizeof(char *), cmp_str);
	for (int i = 0, first = 1; i < f->n_disable_pass; i++) {
		if (i > 0 && strcmp(dp[i], dp[i - 1]) == 0)
			continue;
		/* a name nxcc has no pass for disables nothing: the program, and
		 * so the key, is the same as without it (the driver warns) */
		if (!nx_pass_find(dp[i]))
			continue;
		if (!first)
			append(&b, &len, &cap, ",");
		json_str(&b, &len, &cap, dp[i]);
		first = 0;
	}
	free(dp);
	append(&b, &len, &cap, "]}");
	return b;
}

void nx_flags_hash(const nx_compile_flags *f, char out[17])
{
	char *j = nx_flags_canonical_json(f);
	char h[65];
	nx_sha256_hex(j, strlen(j), h);
	free(j);
	memcpy(out, h, 16);
	out[16] = 0;
}
