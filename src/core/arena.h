/*
 * arena.h — a bump allocator whose memory is freed all at once.
 *
 * Each stage owns one arena (graph, program, kernel) and frees it whole, the way
 * QBE frees a per-function pool. Large requests get a block of their own, so an
 * arena holds weights as comfortably as node names. Allocation never returns
 * NULL silently: on failure it returns NULL and the caller reports
 * SMELT_ERR_NOMEM.
 */
#ifndef SMELT_CORE_ARENA_H
#define SMELT_CORE_ARENA_H

#include <stddef.h>

typedef struct arena_block arena_block;
typedef struct arena {
    arena_block *head;
    size_t bytes; /* total handed out, for reports */
} arena;

void arena_init(arena *a);
void arena_free(arena *a);

/* 64-byte aligned, zero-filled memory that lives until arena_free. */
void *arena_alloc(arena *a, size_t size);
/* Copy of a NUL-terminated string (NULL stays NULL). */
char *arena_strdup(arena *a, const char *s);
/* Copy of `size` bytes. */
void *arena_memdup(arena *a, const void *p, size_t size);

/* A big buffer made before the arena that will keep it is known (the model
 * loader's protobuf allocator, whose weight bytes become tensor data without
 * a copy): 64-byte aligned, bytes past `size` up to the alignment zeroed, the
 * rest not initialised. arena_adopt hands it to an arena (freed with it);
 * arena_detached_free frees one never adopted. */
void *arena_detached_alloc(size_t size);
void arena_detached_free(void *p);
void arena_adopt(arena *a, void *p);

#endif
