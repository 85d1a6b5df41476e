/*
 * test_arena.c — the bump allocator (core/arena.h): detached blocks made
 * before their arena is known, adopted by one or freed alone.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "test.h"

TEST(arena_detached_blocks_are_aligned_padded_and_adopted)
{
    static const size_t sizes[] = {1, 100, 64 * 1024 + 3, ((size_t)3 << 20) + 5};
    arena a;
    arena_init(&a);
    size_t adopted = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t n = sizes[i], cap = (n + 63) / 64 * 64;
        unsigned char *p = arena_detached_alloc(n);
        CHECK(p != NULL);
        if (!p) continue;
        CHECK(((uintptr_t)p & 63) == 0);
        int bad = 0;
        for (size_t j = n; j < cap; j++) bad += p[j] != 0; /* the padding a vector load may read */
        CHECK_EQ_INT(bad, 0);
        memset(p, 0xab, n); /* all of it is ours (ASan) */
        if (i % 2) {
            arena_detached_free(p);
        } else {
            arena_adopt(&a, p);
            adopted += cap;
        }
    }
    /* adopted blocks go behind the head, which stays the one bump allocations use */
    char *s = arena_strdup(&a, "after");
    CHECK(s && strcmp(s, "after") == 0);
    CHECK(a.bytes == adopted + 64);
    unsigned char *big = arena_detached_alloc(((size_t)2 << 20) + 1);
    CHECK(big != NULL);
    if (big) {
        big[0] = 1;
        big[(size_t)2 << 20] = 2;
        arena_adopt(&a, big);
    }
    arena_free(&a); /* frees adopted blocks with the rest (ASan: no leak, no bad free) */
    arena_detached_free(NULL);
}
