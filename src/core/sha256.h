/*
 * sha256.h — SHA-256 (FIPS 180-4), for the compile cache's content digests.
 *
 * The cache records the digest of every object it writes and checks it before
 * loading the object again, so a truncated, bit-flipped or swapped file is
 * rebuilt instead of loaded. A collision-resistant hash is used (not FNV) so
 * that matching a recorded digest means "the bytes we wrote", not merely
 * "probably not corrupted".
 *
 *     sha256_ctx c;
 *     sha256_init(&c);
 *     sha256_update(&c, data, len);   // any number of times
 *     uint8_t digest[SHA256_BYTES];
 *     sha256_final(&c, digest);
 */
#ifndef SMELT_CORE_SHA256_H
#define SMELT_CORE_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_BYTES 32

typedef struct sha256_ctx {
    uint32_t state[8];
    uint64_t total;       /* bytes hashed so far */
    uint8_t block[64];    /* a partial block of total % 64 bytes */
} sha256_ctx;

void sha256_init(sha256_ctx *c);
void sha256_update(sha256_ctx *c, const void *data, size_t len);
/* Writes the digest; c must be initialised again before reuse. */
void sha256_final(sha256_ctx *c, uint8_t digest[SHA256_BYTES]);
/* The digest as 64 lowercase hex digits and a NUL. */
void sha256_hex(const uint8_t digest[SHA256_BYTES], char hex[2 * SHA256_BYTES + 1]);

#endif
