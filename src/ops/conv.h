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
    int64_t group;                             /* Conv, ConvTranspose; 1 for the pools */
} window_geom;

typedef enum window_pad { PAD_NOTSET, PAD_SAME_UPPER, PAD_SAME_LOWER, PAD_VALID } window_pad;

/* The attributes of Conv, ConvTranspose, MaxPool, AveragePool and LpPool,
 * parsed once (ir/ops.h op_params) with their defaults and value checks; the
 * geometry helpers below check their counts against the input's rank. A list
 * attribute keeps its count (n_*, -1 when absent) and its values, or the
 * default in every slot when absent. */
typedef struct window_params {
    int n_kernel, n_strides, n_dilations, n_pads, n_output_padding, n_output_shape;
    int64_t kernel[WINDOW_MAX_SPATIAL];             /* kernel_shape (values >= 1 checked by the geometry) */
    int64_t strides[WINDOW_MAX_SPATIAL];            /* default 1 */
    int64_t dilations[WINDOW_MAX_SPATIAL];          /* default 1 */
    int64_t pads[2 * WINDOW_MAX_SPATIAL];           /* [lo..., hi...], default 0 */
    int64_t output_padding[WINDOW_MAX_SPATIAL];     /* ConvTranspose, default 0 */
    int64_t output_shape[WINDOW_MAX_SPATIAL + 2];   /* ConvTranspose: spatial dims, or all of them */
    window_pad auto_pad;                            /* default NOTSET */
    bool ceil_mode;                                 /* the pools */
    int64_t group;                                  /* Conv, ConvTranspose: >= 1, default 1 */
    bool storage_order;                             /* MaxPool: indices column-major, default 0 */
    bool count_include_pad;                         /* AveragePool, default 0 */
    int64_t p;                                      /* LpPool: the norm's order, >= 1, default 2 */
} window_params;
smelt_status parse_window(const struct ir_graph *g, const struct ir_node *n, void *params);
/* n's window_params (ir_node_params_get: parsed now into *scratch for a node
 * a pass added after inference). */
/* Conv, ConvTranspose and the pools in a kernel's comment (op_describe):
 * the window, strides, pads, dilations and group as given, and the channels. */
void describe_window(const struct ir_graph *g, const struct ir_node *n, char *buf, size_t cap);
smelt_status window_params_of(const struct ir_graph *g, const struct ir_node *n, window_params *scratch,
                              const window_params **p);


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

/* 2-D depthwise Conv (group == C == M) on the CPU (ops/conv_depthwise.c): all
 * taps of an output summed in registers from a zero-padded tile of its
 * channel's rows. False (nothing built) where it does not apply: other
 * groupings or a channel multiplier above 1, windows over 64 taps, GPU targets. */
bool conv_depthwise_2d(struct lower_ctx *c, const window_geom *w, int64_t batch, int64_t cg, int64_t m, int64_t group,
                       smelt_dtype dt, bool bias);

/* Conv whose weight was packed into panels at compile time (graph/pack_weights.c
 * decides which): per image, Y^T[OH*OW, M] = im2col(X)^T [OH*OW, C*k...] x W^T
 * on the packed GEMM (ops/gemm_packed.h), the im2col written once into scratch
 * (or read implicitly per KC slice). In ops/conv_gemm.c. */
smelt_status conv_gemm_lower(struct lower_ctx *c, const window_geom *w);
/* The same GEMM with the output positions on N and the channels on M, the
 * weight plain (graph_conv_on_cols says which); conv_cols_wanted: whether this
 * node on this target takes it. */
bool conv_cols_wanted(struct lower_ctx *c, const window_geom *w);
smelt_status conv_cols_lower(struct lower_ctx *c, const window_geom *w);

smelt_status lower_gpu_Conv(struct lower_ctx *c); /* GPU form, in ops/gemm_gpu.c */

#endif
