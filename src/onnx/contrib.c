/*
 * contrib.c — the com.microsoft ops that onnxruntime's quantizer and optimizer
 * write into models, as compositions of table ops (expand.h), with the
 * semantics of onnxruntime's ContribOperators.md:
 *
 *   MatMulIntegerToFloat   float(MatMulInteger) * (a_scale * b_scale) + bias
 *   DynamicQuantizeMatMul  the same after DynamicQuantizeLinear of A (uint8)
 *   QGemm                  alpha * (A - a_zp)(B - b_zp) + C in int32, scaled by
 *                          alpha * a_scale * b_scale; requantized when y_scale is given
 *   Gelu, BiasGelu         Gelu (erf form) of X, of A + B
 *   FastGelu               Gelu (tanh form) of X [+ bias]
 *   SkipLayerNormalization LayerNormalization(input + skip [+ bias]) over the last
 *                          axis, with mean, inverse std dev and the sum as outputs
 *   FusedConv              activation(Conv(X, W, B) [+ Z])
 *   Attention              input · weights + bias split into Q, K, V (qkv_hidden_sizes or
 *                          thirds), then ONNX Attention over num_heads heads with scale,
 *                          unidirectional as causal, a 2-D mask_index [B, T] (0: masked)
 *                          as mask_filter_value added to the scores, attention_bias added
 *   DynamicQuantizeLSTM    LSTM with 8-bit W [D, input, 4H] and R [D, H, 4H] (scales and
 *                          zero points per direction or per gate column); X is quantized
 *                          here (DynamicQuantizeLinear), the hidden state at every step by
 *                          the table op of the same name (ops/recurrent.c)
 *   QuantizeLinear,        ONNX's ops of the same name (what the quantizer writes with
 *   DequantizeLinear       UseQDQContribOps, e.g. for 16-bit types)
 *   QLinearAdd, QLinearMul, QLinearSigmoid, QLinearLeakyRelu
 *                          the float op between DequantizeLinear and QuantizeLinear
 *                          (onnxruntime's kernels round the same float32 values)
 *   QLinearGlobalAveragePool  the int32 sum of x - x_zp over the window, requantized
 *                          with x_scale / (y_scale * count)
 */
#include "onnx/expand.h"

#include <string.h>

smelt_status expand_MatMulIntegerToFloat(expand_ctx *x)
{
    TRY(ex_need_8bit(x, ex_in(x, 0), "A"));
    TRY(ex_need_8bit(x, ex_in(x, 1), "B"));
    if (ex_in(x, 2) < 0 || ex_in(x, 3) < 0) return ex_fail(x, SMELT_ERR_MODEL, "inputs a_scale and b_scale are required");
    int acc = ex_int_matmul(x, ex_in(x, 0), ex_in(x, 4), ex_in(x, 1), ex_in(x, 5), -1);
    int scale = ex_binary(x, OP_Mul, ex_align(x, ex_in(x, 2), 0, 2), ex_in(x, 3));
    ex_dequantize_acc(x, acc, scale, ex_in(x, 6), ex_out(x, 0));
    return x->st;
}

smelt_status expand_DynamicQuantizeMatMul(expand_ctx *x)
{
    TRY(ex_need_8bit(x, ex_in(x, 1), "B"));
    if (ex_in(x, 0) < 0 || ex_in(x, 2) < 0) return ex_fail(x, SMELT_ERR_MODEL, "inputs A and b_scale are required");
    int q[3] = {-1, -1, -1};
    ex_dynamic_quantize(x, ex_in(x, 0), q);
    int acc = ex_int_matmul(x, q[0], q[2], ex_in(x, 1), ex_in(x, 3), -1);
    ex_dequantize_acc(x, acc, ex_binary(x, OP_Mul, q[1], ex_in(x, 2)), ex_in(x, 4), ex_out(x, 0));
    return x->st;
}

smelt_status expand_QGemm(expand_ctx *x)
{
    const ir_node *n = x->n;
    int a = ex_in(x, 0), b = ex_in(x, 3);
    TRY(ex_need_8bit(x, a, "A"));
    TRY(ex_need_8bit(x, b, "B"));
    if (ex_in(x, 1) < 0 || ex_in(x, 2) < 0 || ex_in(x, 4) < 0 || ex_in(x, 5) < 0)
        return ex_fail(x, SMELT_ERR_MODEL, "inputs a_scale, a_zero_point, b_scale and b_zero_point are required");
    if (ex_is_vector(x, ex_in(x, 1)) || ex_is_vector(x, ex_in(x, 2)))
        return ex_fail(x, SMELT_ERR_MODEL, "A's scale and zero point must be scalars (per-tensor)");
    if (ir_attr_int(n, "transA", 0)) a = ex_unary(x, OP_Transpose, a);
    if (ir_attr_int(n, "transB", 0)) b = ex_unary(x, OP_Transpose, b);
    int acc = ex_int_matmul(x, a, ex_in(x, 2), b, ex_in(x, 5), -1);
    if (ex_in(x, 6) >= 0) acc = ex_binary(x, OP_Add, acc, ex_in(x, 6));
    /* onnxruntime's order: alpha * a_scale * b_scale [/ y_scale], in float32. */
    int alpha = ex_const_f32(x, ir_attr_float(n, "alpha", 1.0f));
    int scale = ex_binary(x, OP_Mul, ex_binary(x, OP_Mul, alpha, ex_in(x, 1)), ex_in(x, 4));
    if (ex_in(x, 7) < 0) {
        ex_dequantize_acc(x, acc, scale, -1, ex_out(x, 0));
        return x->st;
    }
    ex_requantize_acc(x, acc, ex_binary(x, OP_Div, scale, ex_in(x, 7)), ex_in(x, 8), ex_out(x, 0));
    return x->st;
}

static smelt_status gelu(expand_ctx *x, int in, int bias, const char *approximate)
{
    if (in < 0) return ex_fail(x, SMELT_ERR_MODEL, "input 0 is required");
    if (bias >= 0) in = ex_binary(x, OP_Add, in, bias);
    ex_node(x, OP_Gelu, ex_out(x, 0), 1, &in);
    ex_attr_string(x, "approximate", approximate);
    return x->st;
}

smelt_status expand_Gelu(expand_ctx *x) { return gelu(x, ex_in(x, 0), -1, "none"); }

smelt_status expand_BiasGelu(expand_ctx *x)
{
    if (ex_in(x, 1) < 0) return ex_fail(x, SMELT_ERR_MODEL, "input B is required");
    return gelu(x, ex_in(x, 0), ex_in(x, 1), "none");
}

smelt_status expand_FastGelu(expand_ctx *x) { return gelu(x, ex_in(x, 0), ex_in(x, 1), "tanh"); }

smelt_status expand_SkipLayerNormalization(expand_ctx *x)
{
    if (ex_in(x, 0) < 0 || ex_in(x, 1) < 0 || ex_in(x, 2) < 0)
        return ex_fail(x, SMELT_ERR_MODEL, "inputs input, skip and gamma are required");
    int sum = ex_binary(x, OP_Add, ex_in(x, 0), ex_in(x, 1));
    int sum_out = ex_out(x, 3);
    if (ex_in(x, 4) >= 0) {
        int in[2] = {sum, ex_in(x, 4)};
        sum = ex_node(x, OP_Add, sum_out, 2, in);
    } else if (sum_out >= 0) {
        sum = ex_node(x, OP_Identity, sum_out, 1, &sum);
    }
    int in[3] = {sum, ex_in(x, 2), ex_in(x, 3)};
    int out[3] = {ex_out(x, 0), ex_out(x, 1), ex_out(x, 2)};
    int n_out = out[2] >= 0 ? 3 : out[1] >= 0 ? 2 : 1;
    ex_node_n(x, OP_LayerNormalization, n_out, out, in[2] >= 0 ? 3 : 2, in);
    ex_attr_int(x, "axis", -1);
    ex_attr_float(x, "epsilon", ir_attr_float(x->n, "epsilon", 1e-12f));
    return x->st;
}

smelt_status expand_FusedConv(expand_ctx *x)
{
    const ir_node *n = x->n;
    if (ex_in(x, 0) < 0 || ex_in(x, 1) < 0) return ex_fail(x, SMELT_ERR_MODEL, "inputs X and W are required");
    const char *act = ir_attr_string(n, "activation", "");
    const float *p = NULL;
    int np = ir_attr_floats(n, "activation_params", &p);
    if (np < 0) np = 0;
    static const struct {
        const char *name;
        op_id op;
        int n_params;
    } acts[] = {{"", OP_Identity, 0},       {"Relu", OP_Relu, 0},          {"Tanh", OP_Tanh, 0},
                {"Sigmoid", OP_Sigmoid, 0}, {"LeakyRelu", OP_LeakyRelu, 1}, {"HardSigmoid", OP_HardSigmoid, 2},
                {"Clip", OP_Clip, 2}};
    int k = -1;
    for (int i = 0; i < (int)(sizeof acts / sizeof acts[0]); i++)
        if (strcmp(acts[i].name, act) == 0) k = i;
    if (k < 0)
        return ex_fail(x, SMELT_ERR_UNSUPPORTED,
                       "activation '%s' is not supported (Relu, Tanh, Sigmoid, LeakyRelu, HardSigmoid, Clip)", act);
    if (np < acts[k].n_params)
        return ex_fail(x, SMELT_ERR_MODEL, "activation '%s' needs %d activation_params, got %d", act, acts[k].n_params, np);
    int in[3] = {ex_in(x, 0), ex_in(x, 1), ex_in(x, 2)};
    int y = ex_node(x, OP_Conv, -1, in[2] >= 0 ? 3 : 2, in);
    for (int a = 0; a < n->n_attr; a++)
        if (strcmp(n->attr[a].name, "activation") != 0 && strcmp(n->attr[a].name, "activation_params") != 0)
            ex_attr_copy(x, &n->attr[a]);
    if (ex_in(x, 3) >= 0) y = ex_binary(x, OP_Add, y, ex_in(x, 3));
    if (acts[k].op == OP_Clip) {
        /* Clip's bounds as Max/Min: the same at every opset (Clip's moved from attributes to inputs). */
        y = ex_binary(x, OP_Max, y, ex_const_f32(x, p[0]));
        ex_node(x, OP_Min, ex_out(x, 0), 2, (int[]){y, ex_const_f32(x, p[1])});
        return x->st;
    }
    ex_node(x, acts[k].op, ex_out(x, 0), 1, &y);
    if (acts[k].op == OP_LeakyRelu) ex_attr_float(x, "alpha", p[0]);
    if (acts[k].op == OP_HardSigmoid) {
        ex_attr_float(x, "alpha", p[0]);
        ex_attr_float(x, "beta", p[1]);
    }
    return x->st;
}

/* com.microsoft Attention: (input, weights, bias, mask_index, past, attention_bias,
 * past_sequence_length). */
smelt_status expand_MsAttention(expand_ctx *x)
{
    const ir_node *n = x->n;
    if (ex_in(x, 4) >= 0 || ex_in(x, 6) >= 0)
        return ex_fail(x, SMELT_ERR_UNSUPPORTED, "past state (inputs past, past_sequence_length) is not supported");
    if (ir_attr_int(n, "do_rotary", 0)) return ex_fail(x, SMELT_ERR_UNSUPPORTED, "do_rotary is not supported");
    if (ex_out(x, 1) >= 0) return ex_fail(x, SMELT_ERR_UNSUPPORTED, "output present is not supported");
    int64_t heads = ir_attr_int(n, "num_heads", 0);
    if (heads <= 0) return ex_fail(x, SMELT_ERR_MODEL, "num_heads must be given and positive");
    int w = ex_in(x, 1);
    if (ex_rank(x, ex_in(x, 0)) >= 0 && ex_rank(x, ex_in(x, 0)) != 3)
        return ex_fail(x, SMELT_ERR_MODEL, "input must have rank 3 [batch, sequence, hidden]");
    if (ex_rank(x, w) != 2) return ex_fail(x, SMELT_ERR_UNSUPPORTED, "weights must be a 2-D tensor known at import");
    int64_t total = x->g->tensors[w].shape.dim[1], sizes[3];
    const int64_t *qkv = NULL;
    int nq = ir_attr_ints(n, "qkv_hidden_sizes", &qkv);
    if (nq > 0 && nq != 3) return ex_fail(x, SMELT_ERR_MODEL, "qkv_hidden_sizes must have 3 values, not %d", nq);
    for (int i = 0; i < 3; i++) sizes[i] = nq == 3 ? qkv[i] : total / 3;
    if (sizes[0] + sizes[1] + sizes[2] != total || sizes[0] != sizes[1] || sizes[0] % heads || sizes[2] % heads)
        return ex_fail(x, SMELT_ERR_MODEL,
                       "Q, K, V hidden sizes %lld, %lld, %lld must sum to weights' %lld columns, Q's equal K's, each a "
                       "multiple of num_heads %lld",
                       (long long)sizes[0], (long long)sizes[1], (long long)sizes[2], (long long)total, (long long)heads);
    int y = ex_binary(x, OP_MatMul, ex_in(x, 0), w);
    if (ex_in(x, 2) >= 0) y = ex_binary(x, OP_Add, y, ex_in(x, 2));
    int parts[3] = {-1, -1, -1}, in[2] = {y, -1};
    if (x->g->opset >= 13) in[1] = ex_const_i64s(x, 3, sizes); /* an attribute before */
    ex_node_n(x, OP_Split, 3, parts, x->g->opset >= 13 ? 2 : 1, in);
    ex_attr_int(x, "axis", -1);
    if (x->g->opset < 13) ex_attr_copy(x, &(ir_attr){.name = "split", .type = IR_ATTR_INTS, .n = 3, .ints = sizes, .tensor = -1});
    int mask = -1;
    if (ex_in(x, 3) >= 0) {
        if (ex_rank(x, ex_in(x, 3)) != 2)
            return ex_fail(x, SMELT_ERR_UNSUPPORTED, "only a 2-D mask_index [batch, total_sequence] known at import is supported");
        int keep = ex_binary(x, OP_Greater, ex_in(x, 3), ex_cast(x, ex_const_f32(x, 0.0f), x->g->tensors[ex_in(x, 3)].dtype));
        int sel[3] = {keep, ex_const_f32(x, 0.0f), ex_const_f32(x, ir_attr_float(n, "mask_filter_value", -10000.0f))};
        mask = ex_binary(x, OP_Reshape, ex_node(x, OP_Where, -1, 3, sel), ex_const_i64s(x, 4, (int64_t[]){0, 1, 1, -1}));
    }
    if (ex_in(x, 5) >= 0) mask = mask < 0 ? ex_in(x, 5) : ex_binary(x, OP_Add, mask, ex_in(x, 5));
    int att[4] = {parts[0], parts[1], parts[2], mask};
    ex_node(x, OP_Attention, ex_out(x, 0), mask >= 0 ? 4 : 3, att);
    ex_attr_int(x, "q_num_heads", heads);
    ex_attr_int(x, "kv_num_heads", heads);
    ex_attr_int(x, "is_causal", ir_attr_int(n, "unidirectional", 0) != 0);
    const ir_attr *scale = ir_attr_find(n, "scale");
    if (scale) ex_attr_float(x, "scale", ir_attr_float(n, "scale", 0.0f));
    return x->st;
}

/* X (float) becomes uint8 X, its scale and zero point: inputs 0, 12 and 13 of the table op,
 * whose 1..11 are the node's own (omitted ones -1). */
smelt_status expand_DynamicQuantizeLSTM(expand_ctx *x)
{
    if (ex_in(x, 0) < 0 || ex_in(x, 1) < 0 || ex_in(x, 2) < 0 || ex_in(x, 8) < 0 || ex_in(x, 10) < 0)
        return ex_fail(x, SMELT_ERR_MODEL, "inputs X, W, R, W_scale and R_scale are required");
    TRY(ex_need_8bit(x, ex_in(x, 1), "W"));
    TRY(ex_need_8bit(x, ex_in(x, 2), "R"));
    int q[3] = {-1, -1, -1};
    ex_dynamic_quantize(x, ex_in(x, 0), q);
    int in[14];
    for (int i = 0; i < 12; i++) in[i] = ex_in(x, i);
    in[0] = q[0], in[12] = q[1], in[13] = q[2];
    int out[3] = {ex_out(x, 0), ex_out(x, 1), ex_out(x, 2)};
    ex_node_n(x, OP_DynamicQuantizeLSTM, x->n->n_out, out, 14, in);
    for (int a = 0; a < x->n->n_attr; a++) ex_attr_copy(x, &x->n->attr[a]);
    return x->st;
}

smelt_status expand_QuantizeLinear(expand_ctx *x)
{
    const ir_node *n = x->n;
    op_id op = strcmp(x->op, "QuantizeLinear") == 0 ? OP_QuantizeLinear : OP_DequantizeLinear;
    ex_node(x, op, ex_out(x, 0), n->n_in, n->in);
    for (int a = 0; a < n->n_attr; a++) ex_attr_copy(x, &n->attr[a]);
    return x->st;
}

/* Input `zp` of the node, or a zero of the quantized input's dtype where it is omitted (so the
 * output keeps that dtype; uint8 when it is unknown at import). */
static int zero_point(expand_ctx *x, int zp, int like)
{
    if (ex_in(x, zp) >= 0) return ex_in(x, zp);
    smelt_dtype dt = x->g->tensors[ex_in(x, like)].dtype == SMELT_I8 ? SMELT_I8 : SMELT_U8;
    int8_t zero = 0;
    return ex_const(x, dt, &(ir_shape){.rank = 0}, &zero);
}

static int dequantize(expand_ctx *x, int in, int scale, int zp)
{
    int q[3] = {ex_in(x, in), ex_in(x, scale), zero_point(x, zp, in)};
    return ex_node(x, OP_DequantizeLinear, -1, 3, q);
}

/* QuantizeLinear's round(v / scale) + zp, saturated, as elementwise ops (an epilogue). */
static void quantize(expand_ctx *x, int v, int scale, int zp, int like)
{
    ex_round_saturate(x, ex_binary(x, OP_Div, v, ex_in(x, scale)), zero_point(x, zp, like), SMELT_U8, false, ex_out(x, 0));
}

static smelt_status need_inputs(expand_ctx *x, int n, const int *idx)
{
    for (int i = 0; i < n; i++)
        if (ex_in(x, idx[i]) < 0) return ex_fail(x, SMELT_ERR_MODEL, "input %d is required", idx[i]);
    return SMELT_OK;
}

/* QLinearAdd, QLinearMul: (A, A_scale, A_zp, B, B_scale, B_zp, C_scale, C_zp). Add is the
 * documented (A_s (A - A_zp) + B_s (B - B_zp)) / C_s + C_zp, rounded; onnxruntime's Mul
 * multiplies the exact int32 product (A - A_zp)(B - B_zp) by A_s * B_s / C_s in float32 and
 * adds C_zp before rounding, which decides ties differently. */
smelt_status expand_QLinearBinary(expand_ctx *x)
{
    TRY(need_inputs(x, 4, (int[]){0, 1, 3, 4}));
    TRY(need_inputs(x, 1, (int[]){6}));
    TRY(ex_need_8bit(x, ex_in(x, 0), "A"));
    TRY(ex_need_8bit(x, ex_in(x, 3), "B"));
    if (strcmp(x->op, "QLinearAdd") == 0) {
        quantize(x, ex_binary(x, OP_Add, dequantize(x, 0, 1, 2), dequantize(x, 3, 4, 5)), 6, 7, 0);
        return x->st;
    }
    int prod = ex_binary(x, OP_Mul, ex_shifted(x, ex_in(x, 0), ex_in(x, 2)), ex_shifted(x, ex_in(x, 3), ex_in(x, 5)));
    int ratio = ex_binary(x, OP_Div, ex_binary(x, OP_Mul, ex_in(x, 1), ex_in(x, 4)), ex_in(x, 6));
    int v = ex_binary(x, OP_Mul, ex_cast(x, prod, SMELT_F32), ratio);
    ex_round_saturate(x, v, zero_point(x, 7, 0), SMELT_U8, true, ex_out(x, 0));
    return x->st;
}

/* QLinearSigmoid, QLinearLeakyRelu: (X, X_scale, X_zp, Y_scale, Y_zp). */
smelt_status expand_QLinearUnary(expand_ctx *x)
{
    TRY(need_inputs(x, 3, (int[]){0, 1, 3}));
    TRY(ex_need_8bit(x, ex_in(x, 0), "X"));
    bool leaky = strcmp(x->op, "QLinearLeakyRelu") == 0;
    int v = ex_unary(x, leaky ? OP_LeakyRelu : OP_Sigmoid, dequantize(x, 0, 1, 2));
    if (leaky) ex_attr_float(x, "alpha", ir_attr_float(x->n, "alpha", 0.01f));
    quantize(x, v, 3, 4, 0);
    return x->st;
}

/* onnxruntime sums x - x_zp over the window in int32 and requantizes with x_scale / (y_scale *
 * count): the same here where X's rank (so the window) is known at import. Otherwise, without
 * it, the mean of the float values (exact integers) is requantized with x_scale / y_scale, which
 * may round an exact tie the other way. */
smelt_status expand_QLinearGlobalAveragePool(expand_ctx *x)
{
    TRY(need_inputs(x, 3, (int[]){0, 1, 3}));
    TRY(ex_need_8bit(x, ex_in(x, 0), "X"));
    bool last = ir_attr_int(x->n, "channels_last", 0) != 0;
    int r = ex_rank(x, ex_in(x, 0));
    int y_zp = zero_point(x, 4, 0);
    if (r < 0 && last)
        return ex_fail(x, SMELT_ERR_UNSUPPORTED, "channels_last needs X's rank known at import (a constant or graph input)");
    if (r < 0) {
        int v = ex_unary(x, OP_GlobalAveragePool, ex_cast(x, ex_shifted(x, ex_in(x, 0), ex_in(x, 2)), SMELT_F32));
        v = ex_binary(x, OP_Mul, v, ex_binary(x, OP_Div, ex_in(x, 1), ex_in(x, 3)));
        ex_round_saturate(x, v, y_zp, SMELT_U8, true, ex_out(x, 0));
        return x->st;
    }
    if (r < 3) return ex_fail(x, SMELT_ERR_MODEL, "X must have rank 3 or more, not %d", r);
    int64_t axes[IR_MAX_RANK], count = 1;
    const ir_shape *xs = &x->g->tensors[ex_in(x, 0)].shape;
    for (int d = 0; d < r - 2; d++) {
        axes[d] = last ? d + 1 : d + 2;
        if (xs->dim[axes[d]] < 0) return ex_fail(x, SMELT_ERR_UNSUPPORTED, "the pooling window must have known dims");
        count *= xs->dim[axes[d]];
    }
    int in[2] = {ex_shifted(x, ex_in(x, 0), ex_in(x, 2)), -1};
    if (x->g->opset >= 13) in[1] = ex_const_i64s(x, r - 2, axes); /* an attribute before */
    int acc = ex_node(x, OP_ReduceSum, -1, x->g->opset >= 13 ? 2 : 1, in);
    if (x->g->opset < 13) ex_attr_copy(x, &(ir_attr){.name = "axes", .type = IR_ATTR_INTS, .n = r - 2, .ints = axes, .tensor = -1});
    int yscale = ex_binary(x, OP_Mul, ex_in(x, 3), ex_const_f32(x, (float)count));
    ex_requantize_acc(x, acc, ex_binary(x, OP_Div, ex_in(x, 1), yscale), y_zp, ex_out(x, 0));
    return x->st;
}
