/*
 * cc_units.h — a program's C source cut into translation units to compile at
 * once (rt/cc.c), the way that keeps the compilers busy for the least time.
 *
 * A source is one prelude followed by kernels, each from a line "/" "* k<id>"
 * on, defining `void smelt_k<id>(int64_t wg, void *const *bufs)`.
 *  - Kernels whose text is the same but for their name (ResNet-18 at 224,
 *    when each Winograd product was a MatMul of its own: 171 kernels, 23
 *    distinct bodies) are compiled once: the others become one-line functions calling it, in
 *    its unit.
 *  - The distinct bodies are dealt to the units largest cost first, each to
 *    the unit with the least cost so far. The cost estimates GCC 12's -O3
 *    time: bytes plus CC_LOOP_BYTES per loop (measured on ResNet-18's kernels:
 *    a 3x3 convolution of 24 KB and 32 loops takes 0.5 s, a 70 KB Winograd
 *    input transform of 2 loops 0.37 s, the 100 KB 7x7 stem of 56 loops 1.3 s).
 * The object's symbols and what each computes are those of the whole source.
 */
#ifndef SMELT_RT_CC_UNITS_H
#define SMELT_RT_CC_UNITS_H

#include <stddef.h>

#include "smelt.h"

#define CC_LOOP_BYTES 2400

typedef struct cc_units cc_units;

/* starts: the n_k kernels' offsets in source (the prelude ends at starts[0]). */
smelt_status cc_units_plan(const char *source, const size_t *starts, int n_k, int jobs, cc_units **out);
/* Unit j's text into buf (cc_units_max_bytes of room), NUL-terminated; its length. */
size_t cc_units_text(const cc_units *u, int j, char *buf);
size_t cc_units_max_bytes(const cc_units *u);
/* Kernels compiled from a body of their own (for tests and messages). */
int cc_units_distinct(const cc_units *u);
void cc_units_free(cc_units *u);

#endif
