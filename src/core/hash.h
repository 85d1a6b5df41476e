/*
 * hash.h — 64-bit FNV-1a, used for compile-cache keys and name tables.
 */
#ifndef SMELT_CORE_HASH_H
#define SMELT_CORE_HASH_H

#include <stddef.h>
#include <stdint.h>

#define HASH_SEED 0xcbf29ce484222325ull

uint64_t hash_bytes(uint64_t h, const void *p, size_t n);
uint64_t hash_str(uint64_t h, const char *s);
/* A 128-bit hash of n bytes, eight bytes at a time in four independent
 * multiply-rotate lanes: several GB/s, for digests of weights and cache
 * entries where FNV-1a (a byte per step) would take longer than the work it
 * guards. Not cryptographic: it catches corruption, not an adversary. */
void hash_wide(const void *p, size_t n, uint64_t seed, uint64_t out[2]);

/* A string → int map with open addressing (names to tensor ids). */
typedef struct strmap {
    const char **keys;
    int *vals;
    size_t cap, len;
} strmap;

void strmap_init(strmap *m);
void strmap_free(strmap *m);
/* Keys are not copied: they must outlive the map. Returns 0 on OOM. */
int strmap_put(strmap *m, const char *key, int val);
/* Returns the value or -1. */
int strmap_get(const strmap *m, const char *key);

#endif
