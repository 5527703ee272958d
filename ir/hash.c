/* ir/hash.c — SHA-256 through OpenSSL's libcrypto (a libcurl dependency). */
#include "ir/ir.h"

#include <openssl/evp.h>
#include <stdio.h>

void nx_sha256(const void *data, size_t len, uint8_t out[32])
{
	unsigned int n = 32;
	if (!EVP_Digest(data, len, out, &n, EVP_sha256(), NULL))
		nx_ice(__FILE__, __LINE__, "EVP_Digest(sha256) failed");
}

void nx_sha256_hex(const void *data, size_t len, char out[65])
{
	uint8_t h[32];
	nx_sha256(data, len, h);
	for (int i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", h[i]);
}
