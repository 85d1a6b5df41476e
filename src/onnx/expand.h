/*
 * expand.h — ops imported as small graphs of table ops.
 *
 * Some ONNX ops and the com.microsoft ops that onnxruntime's tools write are
 * compositions of ops smelt already lowers: MatMulInteger is an int32 MatMul
 * of zero-point-shifted operands, QLinearConv an int32 Conv followed by a
 * requantization, SkipLayerNormalization an Add and a LayerNormalization. The
 * importer replaces such a node by that composition; fusion then builds the
 * same kernels it builds for the spelled-out graph (constant weights are shifted
 * once at compile time, the requantization is the contraction's epilogue).
 *
 * requires: the node's inputs and outputs resolved by the importer (omitted
 *           optional inputs are -1), its attributes converted.
 * guarantees: nodes of the op table that write the node's outputs; every
 *           intermediate tensor is fresh and named "<node>/<k>"; new nodes
 *           are named "<node>/<Op>_<k>". Shapes are inferred later, so an
 *           expansion decides only from what is known at import: dtypes and
 *           shapes of constants and graph inputs.
 * Errors name the node, the op and the rule (SMELT_ERR_MODEL for a node the
 * spec forbids, SMELT_ERR_UNSUPPORTED for a form smelt does not handle).
 */
#ifndef SMELT_ONNX_EXPAND_H
#define SMELT_ONNX_EXPAND_H

#include <stdarg.h>

#include "ir/ir.h"

typedef struct expand_ctx {
    ir_graph *g;
    const ir_node *n;   /* the model's node: name, in, out, attributes (op is OP_INVALID) */
    const char *op;     /* its op type */
    const char *domain; /* "" for the default domain */
    int (*tensor_new)(void *user, const char *name); /* a fresh tensor (name made unique) or -1 */
    void *user;
    int counter;        /* numbers the tensors and nodes added */
    smelt_status st;    /* first failure of a builder below; builders do nothing after it */
} expand_ctx;

typedef smelt_status (*expand_fn)(expand_ctx *x);

typedef struct expand_rule {
    const char *domain, *op;
    expand_fn fn;
    int min_in, max_in, min_out, max_out;
    int before_opset; /* > 0: unknown from this default-domain opset on (ops dropped from the standard) */
} expand_rule;

/* The expansion of op `op` of `domain` ("" or "ai.onnx" for ONNX's) for a
 * node written for default-domain `opset`, or NULL. */
const expand_rule *expand_find(const char *domain, const char *op, int opset);
/* Expand x->n by r after checking its input and output counts against the op's. */
smelt_status expand_node(const expand_rule *r, expand_ctx *x);

/* ---- builders used by the expansions (expand.c) ------------------------- */

/* Input i of the node, or -1 when omitted. */
int ex_in(const expand_ctx *x, int i);
/* Output i of the node, or -1 when it has fewer. */
int ex_out(const expand_ctx *x, int i);
/* Rank of t where import knows it (constants, graph inputs), else -1. */
int ex_rank(const expand_ctx *x, int t);

/* Add node `op` with inputs in[0..n_in) (-1: omitted) writing `out` (-1: a
 * fresh tensor); returns the output tensor, -1 after a failure. */
int ex_node(expand_ctx *x, op_id op, int out, int n_in, const int *in);
/* The same with n_out outputs; out[o] < 0 is replaced by a fresh tensor. */
int ex_node_n(expand_ctx *x, op_id op, int n_out, int *out, int n_in, const int *in);
int ex_unary(expand_ctx *x, op_id op, int a);
int ex_binary(expand_ctx *x, op_id op, int a, int b);
/* Attributes of the node just added. */
void ex_attr_int(expand_ctx *x, const char *name, int64_t v);
void ex_attr_float(expand_ctx *x, const char *name, float v);
void ex_attr_string(expand_ctx *x, const char *name, const char *s);
void ex_attr_copy(expand_ctx *x, const ir_attr *a);
/* Cast t to dtype dt. */
int ex_cast(expand_ctx *x, int t, smelt_dtype dt);
/* Constant tensors. */
int ex_const(expand_ctx *x, smelt_dtype dt, const ir_shape *shape, const void *data);
int ex_const_f32(expand_ctx *x, float v);
int ex_const_i64s(expand_ctx *x, int n, const int64_t *v);
/* t reshaped so that its one dim (a 1-D tensor) lines up with dim `axis` of
 * a tensor of rank `rank` under numpy broadcasting: [n] -> [n, 1, ..., 1]. A
 * t that is not known to be 1-D with more than one element is returned as is
 * (a scalar or a one-element tensor broadcasts anywhere). */
int ex_align(expand_ctx *x, int t, int axis, int rank);
/* Whether t is known to hold more than one element. */
bool ex_is_vector(const expand_ctx *x, int t);
/* Fails unless t, where its dtype is known, is int8 or uint8. */
smelt_status ex_need_8bit(expand_ctx *x, int t, const char *what);

/* Shared by the quantized expansions (quantized.c). */
/* int32 of t - zp (zp < 0: no zero point). */
int ex_shifted(expand_ctx *x, int t, int zp);
/* The int32 product of a - a_zp and b - b_zp (a_zp: scalar or one per row of
 * a; b_zp: scalar or one per column of b), written into `out` (-1: fresh). */
int ex_int_matmul(expand_ctx *x, int a, int a_zp, int b, int b_zp, int out);
/* DynamicQuantizeLinear of float t into uint8: out[0] the quantized tensor,
 * out[1] the scale, out[2] the zero point (-1: fresh tensors). */
void ex_dynamic_quantize(expand_ctx *x, int t, int out[3]);
/* float32(acc) * scale [+ bias]: the float result of an int32 accumulation. */
int ex_dequantize_acc(expand_ctx *x, int acc, int scale, int bias, int out);
/* round(v) + zp (zp_first: round(v + zp), the float addition deciding ties),
 * saturated and cast to zp's dtype (dt where it is unknown or zp < 0), all as
 * elementwise ops so that they fuse as an epilogue. */
int ex_round_saturate(expand_ctx *x, int v, int zp, smelt_dtype dt, bool zp_first, int out);
/* saturate(round(float32(acc) * scale) + y_zp) in y_zp's dtype (uint8 when
 * y_zp is omitted): the requantization of QLinearMatMul/QLinearConv/QGemm. */
int ex_requantize_acc(expand_ctx *x, int acc, int scale, int y_zp, int out);

smelt_status ex_fail(expand_ctx *x, smelt_status st, const char *fmt, ...) DIAG_PRINTF(3, 4);

/* The expansions, by family. */
/* Experimental ops of opsets 1..9 (upgrade.c). */
smelt_status expand_ImageScaler(expand_ctx *x);
smelt_status expand_Affine(expand_ctx *x);
smelt_status expand_ScaledTanh(expand_ctx *x);
smelt_status expand_ParametricSoftplus(expand_ctx *x);
smelt_status expand_Crop(expand_ctx *x);
smelt_status expand_DynamicQuantizeLinear(expand_ctx *x);
smelt_status expand_MatMulInteger(expand_ctx *x);
smelt_status expand_ConvInteger(expand_ctx *x);
smelt_status expand_QLinearMatMul(expand_ctx *x);
smelt_status expand_QLinearConv(expand_ctx *x);
smelt_status expand_DynamicQuantizeMatMul(expand_ctx *x);
smelt_status expand_MatMulIntegerToFloat(expand_ctx *x);
smelt_status expand_QGemm(expand_ctx *x);
smelt_status expand_Gelu(expand_ctx *x);
smelt_status expand_BiasGelu(expand_ctx *x);
smelt_status expand_FastGelu(expand_ctx *x);
smelt_status expand_SkipLayerNormalization(expand_ctx *x);
smelt_status expand_FusedConv(expand_ctx *x);
smelt_status expand_DynamicQuantizeLSTM(expand_ctx *x);
smelt_status expand_MsAttention(expand_ctx *x); /* com.microsoft Attention */
smelt_status expand_QuantizeLinear(expand_ctx *x); /* also DequantizeLinear */
smelt_status expand_QLinearBinary(expand_ctx *x);  /* QLinearAdd, QLinearMul */
smelt_status expand_QLinearUnary(expand_ctx *x);   /* QLinearSigmoid, QLinearLeakyRelu */
smelt_status expand_QLinearGlobalAveragePool(expand_ctx *x);

#endif
