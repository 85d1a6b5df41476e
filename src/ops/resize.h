/*
 * resize.h — Resize and Upsample: the resampling geometry and its index map.
 *
 * The functions the op table's rows name for this family (ir/ops.h gives the
 * columns; ops/op_table.c fills the table) and what the family shares between
 * its shape rules and its lowerings. Defined in ops/resize.c.
 */
#ifndef SMELT_OPS_RESIZE_H
#define SMELT_OPS_RESIZE_H

#include "lower/lower.h"

smelt_status infer_Resize(struct ir_graph *g, int node); /* also Upsample */

/* Resize/Upsample geometry, shared by the shape rule and the index map: per
 * axis the output size and the scale used by the coordinate transform. */
typedef struct resize_geom {
    int rank;
    int64_t out[8];
    double scale[8];
    double roi_lo[8], roi_hi[8]; /* tf_crop_and_resize: the region, in [0, 1] */
} resize_geom;
smelt_status resize_geom_get(const struct ir_graph *g, const struct ir_node *n, resize_geom *rg);

/* Taps per axis of antialiased linear (kind 1) or cubic (kind 2) resampling. */
int resize_antialias_taps(int kind, double scale);
kir_val elem_Resize(struct lower_ctx *c, int out, const kir_val *idx);

#endif
