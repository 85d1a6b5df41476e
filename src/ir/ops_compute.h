/*
 * ops_compute.h — rows of the op table for reductions, contractions,
 * normalizations and pooling (see ops.h for the columns). Shape rules live in
 * graph/infer_compute.c, lowerings in kernel/lower_*.c.
 */
#ifndef SMELT_IR_OPS_COMPUTE_H
#define SMELT_IR_OPS_COMPUTE_H

struct ir_graph;
struct lower_ctx;

smelt_status infer_MatMul(struct ir_graph *g, int node) OP_FN;
smelt_status infer_Gemm(struct ir_graph *g, int node) OP_FN;
smelt_status infer_Conv(struct ir_graph *g, int node) OP_FN;
smelt_status infer_Pool(struct ir_graph *g, int node);       /* MaxPool, AveragePool */
smelt_status infer_GlobalPool(struct ir_graph *g, int node); /* GlobalAverage/MaxPool */
smelt_status infer_BatchNormalization(struct ir_graph *g, int node) OP_FN;
smelt_status infer_LayerNormalization(struct ir_graph *g, int node) OP_FN;
smelt_status infer_Softmax(struct ir_graph *g, int node);    /* also LogSoftmax */
smelt_status infer_Reduce(struct ir_graph *g, int node);     /* ReduceSum/Mean/Max/Min */
smelt_status infer_ArgMax(struct ir_graph *g, int node) OP_FN;

smelt_status lower_MatMul(struct lower_ctx *c) OP_FN;
smelt_status lower_Gemm(struct lower_ctx *c) OP_FN;
smelt_status lower_Conv(struct lower_ctx *c) OP_FN;
smelt_status lower_MaxPool(struct lower_ctx *c) OP_FN;
smelt_status lower_AveragePool(struct lower_ctx *c) OP_FN;
smelt_status lower_GlobalAveragePool(struct lower_ctx *c) OP_FN;
smelt_status lower_GlobalMaxPool(struct lower_ctx *c) OP_FN;
smelt_status lower_BatchNormalization(struct lower_ctx *c) OP_FN;
smelt_status lower_LayerNormalization(struct lower_ctx *c) OP_FN;
smelt_status lower_Softmax(struct lower_ctx *c) OP_FN;
smelt_status lower_LogSoftmax(struct lower_ctx *c) OP_FN;
smelt_status lower_Reduce(struct lower_ctx *c) OP_FN;
smelt_status lower_ArgMax(struct lower_ctx *c) OP_FN;

/*  name                kind         in    out  value_in infer                     scalar   elem     lower */
#define OPS_COMPUTE(X) \
    X(MatMul,             CONTRACTION, 2, 2, 1, 1, 0x0, infer_MatMul,             OP_NONE, OP_NONE, lower_MatMul) \
    X(Gemm,               CONTRACTION, 2, 3, 1, 1, 0x0, infer_Gemm,               OP_NONE, OP_NONE, lower_Gemm) \
    X(Conv,               CONTRACTION, 2, 3, 1, 1, 0x0, infer_Conv,               OP_NONE, OP_NONE, lower_Conv) \
    X(MaxPool,            REDUCTION,   1, 1, 1, 2, 0x0, infer_Pool,               OP_NONE, OP_NONE, lower_MaxPool) \
    X(AveragePool,        REDUCTION,   1, 1, 1, 1, 0x0, infer_Pool,               OP_NONE, OP_NONE, lower_AveragePool) \
    X(GlobalAveragePool,  REDUCTION,   1, 1, 1, 1, 0x0, infer_GlobalPool,         OP_NONE, OP_NONE, lower_GlobalAveragePool) \
    X(GlobalMaxPool,      REDUCTION,   1, 1, 1, 1, 0x0, infer_GlobalPool,         OP_NONE, OP_NONE, lower_GlobalMaxPool) \
    X(BatchNormalization, OPAQUE,      5, 5, 1, 3, 0x0, infer_BatchNormalization, OP_NONE, OP_NONE, lower_BatchNormalization) \
    X(LayerNormalization, REDUCTION,   2, 3, 1, 3, 0x0, infer_LayerNormalization, OP_NONE, OP_NONE, lower_LayerNormalization) \
    X(Softmax,            REDUCTION,   1, 1, 1, 1, 0x0, infer_Softmax,            OP_NONE, OP_NONE, lower_Softmax) \
    X(LogSoftmax,         REDUCTION,   1, 1, 1, 1, 0x0, infer_Softmax,            OP_NONE, OP_NONE, lower_LogSoftmax) \
    X(ReduceSum,          REDUCTION,   1, 2, 1, 1, 0x2, infer_Reduce,             OP_NONE, OP_NONE, lower_Reduce) \
    X(ReduceMean,         REDUCTION,   1, 2, 1, 1, 0x2, infer_Reduce,             OP_NONE, OP_NONE, lower_Reduce) \
    X(ReduceMax,          REDUCTION,   1, 2, 1, 1, 0x2, infer_Reduce,             OP_NONE, OP_NONE, lower_Reduce) \
    X(ReduceMin,          REDUCTION,   1, 2, 1, 1, 0x2, infer_Reduce,             OP_NONE, OP_NONE, lower_Reduce) \
    X(ArgMax,             REDUCTION,   1, 1, 1, 1, 0x0, infer_ArgMax,             OP_NONE, OP_NONE, lower_ArgMax)

#endif
