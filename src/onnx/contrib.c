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
 *   QuantizeLinear,        ONNX's ops of the same name (what the quantizer writes with
 *   DequantizeLinear       UseQDQContribOps, e.g. for 16-bit types)
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

smelt_status expand_QuantizeLinear(expand_ctx *x)
{
    const ir_node *n = x->n;
    if (n->n_in < 2 || n->n_in > 3 || n->n_out != 1)
        return ex_fail(x, SMELT_ERR_MODEL, "takes 2..3 inputs and 1 output, got %d and %d", n->n_in, n->n_out);
    op_id op = strcmp(x->op, "QuantizeLinear") == 0 ? OP_QuantizeLinear : OP_DequantizeLinear;
    ex_node(x, op, ex_out(x, 0), n->n_in, n->in);
    for (int a = 0; a < n->n_attr; a++) ex_attr_copy(x, &n->attr[a]);
    return x->st;
}
