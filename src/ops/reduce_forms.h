/*
 * reduce_forms.h — the loop forms the reduction family shares between its two
 * files: ops/reduce.c (Reduce*, ArgMax/ArgMin, the global pools) and
 * ops/softmax.c (Softmax/LogSoftmax/Hardmax). Defined in ops/reduce.c; not for
 * other families.
 */
#ifndef SMELT_OPS_REDUCE_FORMS_H
#define SMELT_OPS_REDUCE_FORMS_H

#include "lower/lower.h"

typedef void (*reduce_fn)(lower_ctx *c, const kir_val *in_idx, void *user);

/* Loops over the dims of `shape` in `mask`; the other dims take their index
 * from `fixed`. Calls fn with the full index inside the innermost loop. */
void reduce_loops(lower_ctx *c, const ir_shape *shape, uint32_t mask, const kir_val *fixed, reduce_fn fn, void *user);
/* The number of elements of the dims of s in mask. */
int64_t reduce_masked_numel(const ir_shape *s, uint32_t mask);
/* The most negative (or positive) value of dtype dt, as a constant. */
kir_val reduce_extreme(kir_kernel *K, smelt_dtype dt, bool lowest);

/* The column form of a reduction that keeps the input's last dim (described
 * in ops/reduce.c): a workgroup takes one row of kept outer dims and a tile
 * of `tile` columns, accumulating in workgroup memory over panels of p. */
typedef struct reduce_col_form {
    int64_t inner, rows, tile, p; /* last dim, outer kept elements, columns per workgroup, panel */
} reduce_col_form;

/* The column form of reducing `mask` of `in` (rank >= 2, the last dim kept):
 * panels of the vector width where it divides the last dim, else (any_panel)
 * of the widest power of two that does; at most `cap` columns a workgroup. */
bool reduce_col_form_of(const lower_ctx *c, const ir_shape *in, uint32_t mask, bool any_panel, int64_t cap,
                        reduce_col_form *f);
/* Opens the column form's kernel: its row's fixed indices (reduced dims 0)
 * and the tile's first column j0. NULL when out of memory. */
kir_kernel *reduce_col_begin(lower_ctx *c, const ir_shape *in, uint32_t mask, const reduce_col_form *f,
                             kir_val *fixed, kir_val *j0);
/* Loops over the reduced dims (outermost first) and the tile's panels: idx
 * gets the element's index; *t the column within the tile. Closed by
 * reduce_col_loops_end with the count returned. */
int reduce_col_loops_begin(kir_kernel *K, const ir_shape *in, uint32_t mask, const reduce_col_form *f,
                           const kir_val *fixed, kir_val j0, kir_val *idx, kir_val *t);
void reduce_col_loops_end(kir_kernel *K, int open);

#endif
