/* tests/fuzz/fuzz_defjson.c — libFuzzer target; the body is nx_fuzz_defjson in harness.h. */
#include "tests/fuzz/harness.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	return nx_fuzz_defjson(data, len);
}
