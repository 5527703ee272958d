/* compiler/cmd_list_operators.c — `nxcc list-operators --framework XLA`. */
#include "compiler/cli.h"

#include "backend/backend.h"

#include <stdbool.h>
#include <string.h>

int nx_cmd_list_operators(int argc, char **argv)
{
	const char *v;
	for (int i = 1; i < argc; i++) {
		int r;
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			printf("usage: nxcc list-operators --framework XLA\n\n"
			       "Prints the HLO ops the backend lowers and the custom-call targets it\n"
			       "lowers (one name a line), then the ops and targets the passes rewrite\n"
			       "into those (with how), then every other HLO op, marked\n"
			       "\"(not lowered yet)\": a compile refuses them by name.\n");
			return 0;
		}
		if ((r = nx_cli_flag(argc, argv, &i, "--framework", &v)) != 0) {
			if (r < 0)
				return NX_EXIT_USER;
			if (strcmp(v, "XLA") != 0)
				return nx_cli_usage_error("list-operators", "--framework '%s' is not supported (XLA)", v);
			continue;
		}
		return nx_cli_usage_error("list-operators", "unknown argument '%s'", argv[i]);
	}
	/* 1. what the backend lowers, one name a line (scripts grep -x these) */
	for (int op = 0; op < NX_OP_COUNT; op++)
		if (nx_lower_supports((nx_opcode)op))
			printf("%s\n", nx_opcode_name((nx_opcode)op));
	/* lowered by the backend outside backend/lower.def's table: while
	 * (backend/lower_while.c, a device loop), topk (a GpSimd kernel,
	 * backend/gpsimd/gs_lower.c) */
	static const char *const lowered_outside[] = {"topk", "while"};
	for (size_t k = 0; k < sizeof lowered_outside / sizeof lowered_outside[0]; k++)
		printf("%s\n", lowered_outside[k]);
	for (int k = 0; nx_lower_custom_calls[k]; k++)
		printf("custom-call:%s\n", nx_lower_custom_calls[k]);
	/* 2. what the passes turn into the above (passes/, docs/passes.md) */
	static const char *const by_passes[] = {
		"call (inlined)",
		"conditional (every branch computed, the result selected: conditional-select)",
		"batch-norm-training (expanded into reduce and elementwise ops)",
		"batch-norm-inference (expanded into reduce and elementwise ops)",
		"batch-norm-grad (expanded into reduce and elementwise ops)",
		"convolution (float: pad, slices, dots and adds, conv-to-dot)",
		"is-finite (compare(abs(x), inf), op-expand)",
		"complex (c64 values as (re, im) pairs of f32: complex-split)",
		"real (the re part of the pair, complex-split)",
		"imag (the im part of the pair, complex-split)",
		"tan (sine / cosine; f32, bf16/f16 through f32: math-expand)",
		"atan2 (atan of min/max and quadrant selects, C's atan2f on signed zeros and infinities; math-expand)",
		"cbrt (sign(x) * |x|^(1/3), math-expand)",
		"sinh (expm1 form, exp(|x|/2)^2/2 beyond 88; math-expand)",
		"cosh ((e^|x| + e^-|x|)/2, exp(|x|/2)^2/2 beyond 88; math-expand)",
		"asinh (log1p form, log(|x|) + ln 2 beyond 2^13; math-expand)",
		"acosh (log1p(t + sqrt(2t + t^2)), t = x - 1; math-expand)",
		"atanh (log1p(2|x|/(1 - |x|))/2, math-expand)",
		"asin (atan2(x, sqrt((1-x)(1+x))), math-expand)",
		"acos (atan2(sqrt((1-x)(1+x)), x), math-expand)",
		"popcnt (shift/and/add bit tricks, 8 to 64 bits; math-expand)",
		"count-leading-zeros (bits smeared right, W - popcnt; math-expand)",
		"all-reduce-start (all-reduce, async-collectives)",
		"all-reduce-done (async-collectives)",
		"all-gather-start (all-gather, async-collectives)",
		"all-gather-done (async-collectives)",
		"collective-permute-start (collective-permute, async-collectives)",
		"collective-permute-done (async-collectives)",
		"copy-start (copy, async-collectives)",
		"copy-done (async-collectives)",
		"async-start (the wrapped computation, async-collectives)",
		"async-update (async-collectives)",
		"async-done (async-collectives)",
		"all-to-all (all-gather and a dynamic-slice at the group position, all-to-all-expand)",
		"custom-call:AwsNeuronRmsNorm (rewritten into plain HLO)",
		"custom-call:AwsNeuronGeluApprxTanh (rewritten into plain HLO)",
		"custom-call:AwsNeuronSilu (rewritten into plain HLO)",
		"custom-call:AwsNeuronSiluBackward (rewritten into plain HLO)",
		"custom-call:AwsNeuronErf (rewritten into plain HLO)",
		"custom-call:AwsNeuronTransferWithStaticRing (identity)",
		"custom-call:Sharding (identity on one device)",
		"custom-call:SPMDFullToShardShape (identity on one device)",
		"custom-call:SPMDShardToFullShape (identity on one device)",
		"custom-call:xla.sdy.* (identity on one device)",
	};
	for (size_t k = 0; k < sizeof by_passes / sizeof by_passes[0]; k++) {
		/* a backend row above wins over the pass row */
		const char *sp = strchr(by_passes[k], ' ');
		size_t n = sp ? (size_t)(sp - by_passes[k]) : strlen(by_passes[k]);
		bool lowered = false;
		for (int op = 0; op < NX_OP_COUNT && !lowered; op++)
			lowered = nx_lower_supports((nx_opcode)op) && strlen(nx_opcode_name((nx_opcode)op)) == n &&
			          !strncmp(nx_opcode_name((nx_opcode)op), by_passes[k], n);
		for (int c = 0; nx_lower_custom_calls[c] && !lowered; c++)
			lowered = n > 12 && strlen(nx_lower_custom_calls[c]) == n - 12 &&
			          !strncmp(nx_lower_custom_calls[c], by_passes[k] + 12, n - 12);
		if (!lowered)
			printf("%s\n", by_passes[k]);
	}
	/* 3. every other HLO opcode: read, verified, optimized and evaluated,
	 * but a compile refuses it with an error naming the instruction */
	for (int op = 0; op < NX_OP_COUNT; op++) {
		const char *name = nx_opcode_name((nx_opcode)op);
		bool by_pass = false;
		for (size_t k = 0; k < sizeof by_passes / sizeof by_passes[0] && !by_pass; k++) {
			size_t n = strlen(name);
			by_pass = !strncmp(by_passes[k], name, n) && by_passes[k][n] == ' ';
		}
		for (size_t k = 0; k < sizeof lowered_outside / sizeof lowered_outside[0] && !by_pass; k++)
			by_pass = !strcmp(lowered_outside[k], name);
		if (nx_lower_supports((nx_opcode)op) || by_pass)
			continue;
		printf("%s (not lowered yet)\n", name);
	}
	return 0;
}
