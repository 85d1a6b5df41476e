/*
 * size.h — checked size arithmetic: the one way a shape becomes a size.
 *
 * Every tensor smelt compiles satisfies SMELT_MAX_ELEMS: each dim is in
 * [0, SMELT_MAX_ELEMS] and the product of the dims (the element count) is at
 * most SMELT_MAX_ELEMS = 2^40 (for an empty tensor, the product of its nonzero
 * dims). Its bytes are then at most 2^44 (16-byte elements), so a byte offset, a stride, the
 * sum of a few such sizes and the index arithmetic of a kernel over it all
 * fit in int64 with room to spare. graph_bind_inputs checks every graph
 * input's shape and graph_infer every inferred shape against the limit, and
 * names the node or input that breaks it; shape rules that compute dims from
 * attributes (Pad, Expand, Tile, Reshape, Range...) use size_add/size_mul so
 * that the computation itself never overflows before the check.
 */
#ifndef SMELT_CORE_SIZE_H
#define SMELT_CORE_SIZE_H

#include <stdbool.h>
#include <stdint.h>

#define SMELT_MAX_ELEMS ((int64_t)1 << 40)

/* *out = a + b; false (and *out unspecified) on int64 overflow. */
static inline bool size_add(int64_t a, int64_t b, int64_t *out) { return !__builtin_add_overflow(a, b, out); }
/* *out = a - b; false on int64 overflow. */
static inline bool size_sub(int64_t a, int64_t b, int64_t *out) { return !__builtin_sub_overflow(a, b, out); }
/* *out = a * b; false on int64 overflow. */
static inline bool size_mul(int64_t a, int64_t b, int64_t *out) { return !__builtin_mul_overflow(a, b, out); }

/* Whether a dim is a valid size: 0 <= d <= SMELT_MAX_ELEMS. */
static inline bool size_dim_ok(int64_t d) { return d >= 0 && d <= SMELT_MAX_ELEMS; }

/* Element count of `rank` dims into *out; false when a dim is negative or
 * the product of the nonzero dims exceeds SMELT_MAX_ELEMS (a tensor with a
 * zero dim is empty, but its strides are still products of its other dims,
 * so they must fit too). */
static inline bool size_numel(const int64_t *dim, int rank, int64_t *out)
{
    int64_t n = 1;
    bool empty = false;
    for (int i = 0; i < rank; i++) {
        if (!size_dim_ok(dim[i])) return false;
        if (dim[i] == 0) empty = true;
        else if (!size_mul(n, dim[i], &n) || n > SMELT_MAX_ELEMS) return false;
    }
    *out = empty ? 0 : n;
    return true;
}

#endif
