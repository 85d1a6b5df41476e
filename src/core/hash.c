#include "core/hash.h"

#include <stdlib.h>
#include <string.h>

uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

uint64_t hash_str(uint64_t h, const char *s) { return hash_bytes(h, s, strlen(s) + 1); }

#define WIDE_P1 0x9e3779b185ebca87ull
#define WIDE_P2 0xc2b2ae3d27d4eb4full
#define WIDE_P3 0x165667b19e3779f9ull
#define WIDE_LANES 8
#define WIDE_STRIPE (8 * WIDE_LANES)
#define WIDE_BLOCK (16 * WIDE_STRIPE) /* stripes between two scrambles of the lanes */

static inline uint64_t rotl64(uint64_t x, int r) { return x << r | x >> (64 - r); }

/* Every input bit reaches every output bit (xorshift-multiply rounds). */
static inline uint64_t wide_mix(uint64_t h)
{
    h ^= h >> 33;
    h *= WIDE_P2;
    h ^= h >> 29;
    h *= WIDE_P3;
    h ^= h >> 32;
    return h;
}

/* One stripe into the lanes: each lane adds the product of its word's
 * halves (keyed per lane) and its neighbour's word, so a change to any bit
 * of a word changes a lane. Independent lanes of 32x32-bit products, in
 * pairs of vector registers where the compiler has them (pmuludq). */
static const uint64_t wide_key[WIDE_LANES] = {WIDE_P1, WIDE_P2, WIDE_P3, WIDE_P1 ^ WIDE_P2,
                                              WIDE_P2 ^ WIDE_P3, WIDE_P1 + WIDE_P3, ~WIDE_P1, ~WIDE_P2};
#if defined(__GNUC__)
typedef uint64_t wide_v __attribute__((vector_size(16)));
static inline void wide_stripe(uint64_t *a, const unsigned char *b)
{
    for (int l = 0; l < WIDE_LANES; l += 2) {
        wide_v w, k, acc;
        memcpy(&w, b + 8 * l, sizeof w);
        memcpy(&k, wide_key + l, sizeof k);
        memcpy(&acc, a + l, sizeof acc);
        wide_v x = w ^ k, swapped = {w[1], w[0]};
        acc += (x & 0xffffffffu) * (x >> 32) + swapped;
        memcpy(a + l, &acc, sizeof acc);
    }
}
#else
static inline void wide_stripe(uint64_t *a, const unsigned char *b)
{
    uint64_t w[WIDE_LANES];
    memcpy(w, b, sizeof w);
    for (int l = 0; l < WIDE_LANES; l++) {
        uint64_t x = w[l] ^ wide_key[l];
        a[l] += (x & 0xffffffffu) * (x >> 32) + w[l ^ 1];
    }
}
#endif

static inline void wide_scramble(uint64_t *a)
{
    for (int l = 0; l < WIDE_LANES; l++) a[l] = (a[l] ^ a[l] >> 47 ^ WIDE_P3) * 0x9e3779b1u;
}

void hash_wide(const void *p, size_t n, uint64_t seed, uint64_t out[2])
{
    const unsigned char *b = p;
    uint64_t a[WIDE_LANES];
    for (int l = 0; l < WIDE_LANES; l++) a[l] = wide_mix(seed + (uint64_t)l * WIDE_P1);
    size_t i = 0;
    for (; i + WIDE_BLOCK <= n; i += WIDE_BLOCK) {
        for (size_t s = 0; s < WIDE_BLOCK; s += WIDE_STRIPE) wide_stripe(a, b + i + s);
        wide_scramble(a);
    }
    for (; i + WIDE_STRIPE <= n; i += WIDE_STRIPE) wide_stripe(a, b + i);
    /* the tail, zero-padded to a stripe, and its length */
    unsigned char last[WIDE_STRIPE] = {0};
    if (n > i) memcpy(last, b + i, n - i);
    last[WIDE_STRIPE - 1] ^= (unsigned char)(n - i);
    wide_stripe(a, last);
    wide_scramble(a);
    uint64_t h0 = (uint64_t)n * WIDE_P1, h1 = seed ^ WIDE_P3;
    for (int l = 0; l < WIDE_LANES; l++) {
        h0 = wide_mix(h0 ^ a[l]);
        h1 = rotl64(h1 ^ a[l] * WIDE_P2, 27) * WIDE_P1;
    }
    out[0] = h0;
    out[1] = wide_mix(h1 ^ h0);
}

void strmap_init(strmap *m) { memset(m, 0, sizeof *m); }

void strmap_free(strmap *m)
{
    free(m->keys);
    free(m->vals);
    strmap_init(m);
}

static size_t slot_of(const strmap *m, const char *key)
{
    size_t i = hash_str(HASH_SEED, key) & (m->cap - 1);
    while (m->keys[i] && strcmp(m->keys[i], key) != 0) i = (i + 1) & (m->cap - 1);
    return i;
}

int strmap_put(strmap *m, const char *key, int val)
{
    if ((m->len + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 64;
        strmap bigger = {calloc(cap, sizeof(char *)), calloc(cap, sizeof(int)), cap, 0};
        if (!bigger.keys || !bigger.vals) {
            free(bigger.keys);
            free(bigger.vals);
            return 0;
        }
        for (size_t i = 0; i < m->cap; i++)
            if (m->keys[i]) {
                size_t s = slot_of(&bigger, m->keys[i]);
                bigger.keys[s] = m->keys[i];
                bigger.vals[s] = m->vals[i];
                bigger.len++;
            }
        strmap_free(m);
        *m = bigger;
    }
    size_t s = slot_of(m, key);
    if (!m->keys[s]) m->len++;
    m->keys[s] = key;
    m->vals[s] = val;
    return 1;
}

int strmap_get(const strmap *m, const char *key)
{
    if (!m->cap) return -1;
    size_t s = slot_of(m, key);
    return m->keys[s] ? m->vals[s] : -1;
}
