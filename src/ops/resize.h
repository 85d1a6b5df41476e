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

/* Resize's and Upsample's attributes, parsed once (ir/ops.h op_params): every
 * spelling checked against the opset; the strings point at smelt's own
 * tables, never at the model's text. */
typedef struct resize_params {
    int kind;                /* mode: 0 nearest (default), 1 linear (Upsample's bilinear), 2 cubic */
    const char *coord;       /* coordinate_transformation_mode (default half_pixel); asymmetric where the
                                opset or op has none (Resize 10, Upsample) */
    const char *nearest;     /* nearest_mode, default round_prefer_floor */
    double cubic_coeff_a;    /* default -0.75 */
    bool exclude_outside, antialias;
    double extrapolation_value;
    int keep_aspect;         /* keep_aspect_ratio_policy: 0 stretch (default), 1 not_larger, 2 not_smaller */
    int n_axes;              /* -1 when absent (every axis); checked against the rank by resize_geom_get */
    int64_t axes[IR_MAX_RANK];
    int n_scales;            /* Upsample 7's scales attribute: -1 when absent */
    double scales[IR_MAX_RANK];
} resize_params;
smelt_status parse_Resize(const struct ir_graph *g, const struct ir_node *n, void *params);

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
