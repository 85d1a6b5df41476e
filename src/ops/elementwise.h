/*
 * elementwise.h — elementwise and broadcast ops: shape rules and scalar functions (the output
 * element from the input elements; numpy broadcasting is the caller's).
 *
 * The functions the op table's rows name for this family (ir/ops.h gives the
 * columns; ops/op_table.c fills the table) and what the family shares between
 * its shape rules and its lowerings. Defined in ops/elementwise.c.
 */
#ifndef SMELT_OPS_ELEMENTWISE_H
#define SMELT_OPS_ELEMENTWISE_H

#include "lower/lower.h"

/* The attributes of the elementwise ops that have any, parsed once (ir/ops.h
 * op_params): the scalar functions read them from the node's params. */
typedef struct elementwise_params {
    float alpha;            /* LeakyRelu 0.01, Elu/Celu/ThresholdedRelu/Swish 1, Selu 1.67326, HardSigmoid 0.2 */
    float beta;             /* HardSigmoid 0.5 */
    float gamma;            /* Selu 1.0507 */
    float lambd, bias;      /* Shrink: 0.5, 0 */
    bool has_min, has_max;  /* Clip before opset 11: min, max attributes */
    float min, max;
    smelt_dtype to;         /* Cast: required, an ONNX dtype number */
    bool fmod;              /* Mod, default 0 */
    bool gelu_tanh;         /* Gelu approximate: "tanh" (else "none", the default) */
    bool detect_positive, detect_negative; /* IsInf, default 1 */
    bool shift_left;        /* BitShift direction: LEFT (the default) or RIGHT */
} elementwise_params;
smelt_status parse_elementwise(const struct ir_graph *g, const struct ir_node *n, void *params);

/* Shape rules shared by many rows. */
smelt_status infer_same(struct ir_graph *g, int node); /* output = input 0 (any dtype) */
smelt_status infer_float(struct ir_graph *g, int node); /* output = input 0, float inputs only */
smelt_status infer_numeric(struct ir_graph *g, int node); /* output = input 0, numeric (not bool) */
smelt_status infer_int_unary(struct ir_graph *g, int node); /* output = input 0, integers only */
smelt_status infer_float_test(struct ir_graph *g, int node); /* float input, bool output of its shape (IsNaN...) */
smelt_status infer_broadcast(struct ir_graph *g, int node); /* numpy broadcast of all inputs, one numeric dtype */
smelt_status infer_float_broadcast(struct ir_graph *g, int node); /* numpy broadcast, one float dtype */
smelt_status infer_int_broadcast(struct ir_graph *g, int node); /* numpy broadcast, one integer dtype */
smelt_status infer_compare(struct ir_graph *g, int node); /* broadcast, one dtype, bool output */
smelt_status infer_logical(struct ir_graph *g, int node); /* bool inputs, broadcast, bool output */
smelt_status infer_Cast(struct ir_graph *g, int node);
smelt_status infer_Where(struct ir_graph *g, int node);
smelt_status infer_Pow(struct ir_graph *g, int node);
smelt_status infer_PRelu(struct ir_graph *g, int node);
smelt_status infer_Clip(struct ir_graph *g, int node);

/* Scalar functions of elementwise/broadcast ops: the output element from the
 * input elements (broadcast and loaded; an omitted optional input is 0). */
kir_val scalar_Identity(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_Cast(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_Where(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_Add(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_Sub(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_Mul(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_Div(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_Mod(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_Pow(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_Sum(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_Mean(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_Min(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_Max(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_PRelu(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_Sqrt(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_Reciprocal(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_Neg(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_Abs(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_Sign(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_Exp(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_Log(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_Sin(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_Cos(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_Tan(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_Asin(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_Acos(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_Atan(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_Sinh(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_Cosh(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_Asinh(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_Acosh(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_Atanh(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_Tanh(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_Sigmoid(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_Erf(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_Relu(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_LeakyRelu(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_Elu(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_Selu(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_Celu(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_ThresholdedRelu(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_Shrink(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_Softsign(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_Mish(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_Clip(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_HardSigmoid(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_HardSwish(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_Softplus(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_Gelu(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_Floor(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_Ceil(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_Round(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_IsNaN(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_IsInf(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_Equal(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_Less(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_Greater(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_LessOrEqual(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_GreaterOrEqual(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_Not(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_And(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_Or(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_Xor(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_BitShift(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_BitwiseNot(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_BitwiseAnd(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_BitwiseOr(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val scalar_BitwiseXor(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
smelt_status infer_Swish(struct ir_graph *g, int node);
kir_val scalar_Swish(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);

#endif
