/*
 * op_params.h — the params structs (ir/ops.h op_params) of ops whose
 * attributes a graph pass reads or edits before ops/ exists in the pipeline:
 * graph/fold_bn.c reads BatchNormalization's epsilon, graph/fold_gemm.c and
 * graph/pack_weights.c read and clear Gemm's transposes. Every other family
 * declares its params in its own header (ops/<family>.h). A pass that edits a
 * node's attributes re-parses it (ir_node_parse_params) so that the shape rule
 * and the lowerings see the edit.
 */
#ifndef SMELT_IR_OP_PARAMS_H
#define SMELT_IR_OP_PARAMS_H

#include <stdbool.h>

/* BatchNormalization (inference form: training_mode=1 and spatial=0 are
 * refused when parsed). */
typedef struct batchnorm_params {
    float epsilon; /* default 1e-5 */
} batchnorm_params;

/* Gemm: Y = alpha * op(A) op(B) + beta * C. graph/fold_gemm.c and
 * graph/pack_weights.c store a constant operand transposed and clear its flag
 * (then re-parse). */
typedef struct gemm_params {
    bool trans_a, trans_b; /* transA, transB: default 0 */
    float alpha, beta;     /* default 1 */
} gemm_params;

#endif
