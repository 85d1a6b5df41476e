/*
 * ops_compute.h — rows of the op table for reductions, contractions,
 * normalizations and pooling (see ops.h for the columns). Shape rules live in
 * graph/infer_compute.c, lowerings in ops/.
 */
#ifndef SMELT_IR_OPS_COMPUTE_H
#define SMELT_IR_OPS_COMPUTE_H

struct ir_graph;
struct ir_node;
struct lower_ctx;

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

/* The axes a Reduce* node reduces, as a bitmask over its input's dims (from
 * the `axes` attribute or, from opset 13/18, the constant `axes` input; empty
 * means all, or none with noop_with_empty_axes). */
smelt_status reduce_axes_get(const struct ir_graph *g, const struct ir_node *n, uint32_t *mask);

smelt_status infer_MatMul(struct ir_graph *g, int node);
smelt_status infer_Gemm(struct ir_graph *g, int node);
smelt_status infer_Conv(struct ir_graph *g, int node);
smelt_status infer_ConvTranspose(struct ir_graph *g, int node);
smelt_status infer_Pool(struct ir_graph *g, int node);       /* MaxPool, AveragePool */
smelt_status infer_GlobalPool(struct ir_graph *g, int node); /* GlobalAverage/MaxPool */
smelt_status infer_BatchNormalization(struct ir_graph *g, int node);
smelt_status infer_LayerNormalization(struct ir_graph *g, int node);
smelt_status infer_Softmax(struct ir_graph *g, int node);    /* also LogSoftmax, Hardmax */
smelt_status infer_Reduce(struct ir_graph *g, int node);     /* every Reduce* */
smelt_status infer_ArgMax(struct ir_graph *g, int node);           /* also ArgMin */
smelt_status infer_InstanceNormalization(struct ir_graph *g, int node);
smelt_status infer_LpNormalization(struct ir_graph *g, int node);
smelt_status infer_CumSum(struct ir_graph *g, int node);
smelt_status infer_Trilu(struct ir_graph *g, int node);

smelt_status lower_MatMul(struct lower_ctx *c);
smelt_status lower_Gemm(struct lower_ctx *c);
smelt_status lower_Conv(struct lower_ctx *c);
smelt_status lower_ConvTranspose(struct lower_ctx *c);
smelt_status lower_MaxPool(struct lower_ctx *c);
smelt_status lower_AveragePool(struct lower_ctx *c);
smelt_status lower_GlobalAveragePool(struct lower_ctx *c);
smelt_status lower_GlobalMaxPool(struct lower_ctx *c);
smelt_status lower_BatchNormalization(struct lower_ctx *c);
smelt_status lower_LayerNormalization(struct lower_ctx *c);
smelt_status lower_Softmax(struct lower_ctx *c);
smelt_status lower_LogSoftmax(struct lower_ctx *c);
smelt_status lower_Reduce(struct lower_ctx *c);
/* One output element of a Reduce* op, with its reduction loop: fusion uses it
 * to compute a row's reductions inside the kernel that consumes them. */
kir_val elem_Reduce(struct lower_ctx *c, int out, const kir_val *idx);
smelt_status lower_ArgMax(struct lower_ctx *c);                 /* also ArgMin */
smelt_status lower_Hardmax(struct lower_ctx *c);
smelt_status lower_InstanceNormalization(struct lower_ctx *c);
smelt_status lower_LpNormalization(struct lower_ctx *c);
smelt_status lower_CumSum(struct lower_ctx *c);
kir_val elem_Trilu(struct lower_ctx *c, int out, const kir_val *idx);

/*  name                kind         in    out  value_in infer                     scalar   elem     lower  flags  insert */
#define OPS_COMPUTE(X) \
    X(MatMul,             CONTRACTION, 2, 2, 1, 1, 0x0, infer_MatMul,             OP_NONE, OP_NONE, lower_MatMul, 0, OP_NONE) \
    X(Gemm,               CONTRACTION, 2, 3, 1, 1, 0x0, infer_Gemm,               OP_NONE, OP_NONE, lower_Gemm, 0, OP_NONE) \
    X(Conv,               CONTRACTION, 2, 3, 1, 1, 0x0, infer_Conv,               OP_NONE, OP_NONE, lower_Conv, 0, OP_NONE) \
    X(ConvTranspose,      CONTRACTION, 2, 3, 1, 1, 0x0, infer_ConvTranspose,      OP_NONE, OP_NONE, lower_ConvTranspose, 0, OP_NONE) \
    X(MaxPool,            REDUCTION,   1, 1, 1, 2, 0x0, infer_Pool,               OP_NONE, OP_NONE, lower_MaxPool, 0, OP_NONE) \
    X(AveragePool,        REDUCTION,   1, 1, 1, 1, 0x0, infer_Pool,               OP_NONE, OP_NONE, lower_AveragePool, 0, OP_NONE) \
    X(GlobalAveragePool,  REDUCTION,   1, 1, 1, 1, 0x0, infer_GlobalPool,         OP_NONE, OP_NONE, lower_GlobalAveragePool, 0, OP_NONE) \
    X(GlobalMaxPool,      REDUCTION,   1, 1, 1, 1, 0x0, infer_GlobalPool,         OP_NONE, OP_NONE, lower_GlobalMaxPool, 0, OP_NONE) \
    X(BatchNormalization, OPAQUE,      5, 5, 1, 3, 0x0, infer_BatchNormalization, OP_NONE, OP_NONE, lower_BatchNormalization, 0, OP_NONE) \
    X(LayerNormalization, REDUCTION,   2, 3, 1, 3, 0x0, infer_LayerNormalization, OP_NONE, OP_NONE, lower_LayerNormalization, 0, OP_NONE) \
    X(Softmax,            REDUCTION,   1, 1, 1, 1, 0x0, infer_Softmax,            OP_NONE, OP_NONE, lower_Softmax, 0, OP_NONE) \
    X(LogSoftmax,         REDUCTION,   1, 1, 1, 1, 0x0, infer_Softmax,            OP_NONE, OP_NONE, lower_LogSoftmax, 0, OP_NONE) \
    X(ReduceSum,          REDUCTION,   1, 2, 1, 1, 0x2, infer_Reduce,             OP_NONE, elem_Reduce, lower_Reduce, 0, OP_NONE) \
    X(ReduceMean,         REDUCTION,   1, 2, 1, 1, 0x2, infer_Reduce,             OP_NONE, elem_Reduce, lower_Reduce, 0, OP_NONE) \
    X(ReduceMax,          REDUCTION,   1, 2, 1, 1, 0x2, infer_Reduce,             OP_NONE, elem_Reduce, lower_Reduce, 0, OP_NONE) \
    X(ReduceMin,          REDUCTION,   1, 2, 1, 1, 0x2, infer_Reduce,             OP_NONE, elem_Reduce, lower_Reduce, 0, OP_NONE) \
    X(ReduceProd,         REDUCTION,   1, 2, 1, 1, 0x2, infer_Reduce,             OP_NONE, elem_Reduce, lower_Reduce, 0, OP_NONE) \
    X(ReduceL1,           REDUCTION,   1, 2, 1, 1, 0x2, infer_Reduce,             OP_NONE, elem_Reduce, lower_Reduce, 0, OP_NONE) \
    X(ReduceL2,           REDUCTION,   1, 2, 1, 1, 0x2, infer_Reduce,             OP_NONE, elem_Reduce, lower_Reduce, 0, OP_NONE) \
    X(ReduceSumSquare,    REDUCTION,   1, 2, 1, 1, 0x2, infer_Reduce,             OP_NONE, elem_Reduce, lower_Reduce, 0, OP_NONE) \
    X(ReduceLogSum,       REDUCTION,   1, 2, 1, 1, 0x2, infer_Reduce,             OP_NONE, elem_Reduce, lower_Reduce, 0, OP_NONE) \
    X(ReduceLogSumExp,    REDUCTION,   1, 2, 1, 1, 0x2, infer_Reduce,             OP_NONE, elem_Reduce, lower_Reduce, 0, OP_NONE) \
    X(ArgMax,             REDUCTION,   1, 1, 1, 1, 0x0, infer_ArgMax,             OP_NONE, OP_NONE, lower_ArgMax, 0, OP_NONE) \
    X(ArgMin,             REDUCTION,   1, 1, 1, 1, 0x0, infer_ArgMax,             OP_NONE, OP_NONE, lower_ArgMax, 0, OP_NONE) \
    X(Hardmax,            REDUCTION,   1, 1, 1, 1, 0x0, infer_Softmax,            OP_NONE, OP_NONE, lower_Hardmax, 0, OP_NONE) \
    X(InstanceNormalization, REDUCTION, 3, 3, 1, 1, 0x0, infer_InstanceNormalization, OP_NONE, OP_NONE, lower_InstanceNormalization, 0, OP_NONE) \
    X(LpNormalization,    REDUCTION,   1, 1, 1, 1, 0x0, infer_LpNormalization,    OP_NONE, OP_NONE, lower_LpNormalization, 0, OP_NONE) \
    X(CumSum,             OPAQUE,      2, 2, 1, 1, 0x2, infer_CumSum,             OP_NONE, OP_NONE, lower_CumSum, 0, OP_NONE) \
    X(Trilu,              INJECTIVE,   1, 2, 1, 1, 0x2, infer_Trilu,              OP_NONE, elem_Trilu, OP_NONE, 0, OP_NONE)

#endif
