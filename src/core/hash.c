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
