/* tests/fuzz/fuzz_npy.c — libFuzzer target; the body is nx_fuzz_npy in harness.h. */
#include "tests/fuzz/harness.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	return nx_fuzz_npy(data, len);
}
