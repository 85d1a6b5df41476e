/*
 * conv.h — Conv and ConvTranspose, and the sliding-window geometry the pools share.
 *
 * The functions the op table's rows name for this family (ir/ops.h gives the
 * columns; ops/op_table.c fills the table) and what the family shares between
 * its shape rules and its lowerings. Defined in ops/conv.c (lower_ConvTranspose
 * in ops/conv_transpose.c).
 */
#ifndef SMELT_OPS_CONV_H
#define SMELT_OPS_CONV_H

#include "lower/lower.h"

/* Sliding-window geometry shared by Conv, MaxPool and AveragePool: the shape
 * rule computes it and the lowerings read it back, so both agree on pads after
 * auto_pad and on ceil_mode. Spatial dims are those after [N, C]. */
#define WINDOW_MAX_SPATIAL 6
typedef struct window_geom {
    int nsp;                                   /* spatial dims (1..6)        */
    int64_t in[WINDOW_MAX_SPATIAL];            /* input spatial sizes         */
    int64_t out[WINDOW_MAX_SPATIAL];           /* output spatial sizes        */
    int64_t kernel[WINDOW_MAX_SPATIAL];
    int64_t stride[WINDOW_MAX_SPATIAL];
    int64_t dilation[WINDOW_MAX_SPATIAL];
    int64_t pad_lo[WINDOW_MAX_SPATIAL];        /* after auto_pad resolution   */
    int64_t pad_hi[WINDOW_MAX_SPATIAL];
} window_geom;


/* Window geometry of a Conv/MaxPool/AveragePool node from its input shapes
 * and attributes; validates them, failing with a message naming the node. */
smelt_status window_geom_get(const struct ir_graph *g, const struct ir_node *n, window_geom *w);

/* Output shape [N, channels, out...] of a window op over input x. */
struct ir_shape window_out_shape(const struct ir_shape *x, int64_t channels, const window_geom *w);

/* The same for ConvTranspose: `in` and `out` are its input and output
 * spatial sizes, pads from pads/auto_pad/output_shape/output_padding. */
smelt_status convtranspose_geom_get(const struct ir_graph *g, const struct ir_node *n, window_geom *w);
smelt_status infer_Conv(struct ir_graph *g, int node);
smelt_status infer_ConvTranspose(struct ir_graph *g, int node);
smelt_status lower_Conv(struct lower_ctx *c);
smelt_status lower_ConvTranspose(struct lower_ctx *c);

/* 1-D Conv with a wide kernel on the CPU (ops/conv_wide.c): the unit-stride
 * loop over the taps. False (nothing built) where it does not apply. */
bool conv_wide_1d(struct lower_ctx *c, const window_geom *w, int64_t batch, int64_t cg, int64_t m, int64_t group,
                  smelt_dtype dt, bool bias);

/* Conv whose weight was packed into panels at compile time (graph/pack_weights.c
 * decides which): per image, Y^T[OH*OW, M] = im2col(X)^T [OH*OW, C*k...] x W^T
 * on the packed GEMM (ops/gemm_packed.h), im2col read implicitly. In ops/conv_gemm.c. */
smelt_status conv_gemm_lower(struct lower_ctx *c, const window_geom *w);

smelt_status lower_gpu_Conv(struct lower_ctx *c); /* GPU form, in ops/gemm_gpu.c */

#endif
