/*
 * quantized.c — ONNX's integer ops as int32 contractions (expand.h):
 *
 *   MatMulInteger    MatMul(int32(A) - int32(a_zp), int32(B) - int32(b_zp))
 *   ConvInteger      Conv of the same shifted operands (a padded element reads
 *                    0 after the shift, as onnxruntime's padding with x_zp does)
 *   QLinearMatMul    that MatMul, requantized:
 *   QLinearConv        y = saturate(round(float(acc) * (a_s * b_s / y_s)) + y_zp)
 *                    (QLinearConv adds its int32 bias to acc first); the
 *                    multiplier is computed in float32 in onnxruntime's order
 *                    and rounding is half to even, so results are exact
 *   DynamicQuantizeLinear  min/max reductions, then QuantizeLinear.
 * Constant weights are shifted at compile time; a computed operand's shift is
 * its own elementwise kernel (fusion inlines only free index maps into a
 * contraction's loads), then the int32 MatMul/Conv kernel runs with the
 * requantization's float ops as its epilogue.
 */
#include "onnx/expand.h"

#include <stdint.h>

smelt_status ex_need_8bit(expand_ctx *x, int t, const char *what)
{
    if (x->st) return x->st;
    if (t < 0) return x->st = ex_fail(x, SMELT_ERR_MODEL, "input %s is required", what);
    const ir_tensor *v = &x->g->tensors[t];
    if (v->dtype != SMELT_UNDEFINED && v->dtype != SMELT_U8 && v->dtype != SMELT_I8)
        return x->st = ex_fail(x, SMELT_ERR_MODEL, "%s must be int8 or uint8, not %s", what, smelt_dtype_name(v->dtype));
    return SMELT_OK;
}

int ex_shifted(expand_ctx *x, int t, int zp)
{
    int v = ex_cast(x, t, SMELT_I32);
    return zp < 0 ? v : ex_binary(x, OP_Sub, v, ex_cast(x, zp, SMELT_I32));
}

int ex_int_matmul(expand_ctx *x, int a, int a_zp, int b, int b_zp, int out)
{
    int in[2] = {ex_shifted(x, a, ex_align(x, a_zp, 0, 2)), ex_shifted(x, b, b_zp)};
    return ex_node(x, OP_MatMul, out, 2, in);
}

int ex_dequantize_acc(expand_ctx *x, int acc, int scale, int bias, int out)
{
    int v = ex_binary(x, OP_Mul, ex_cast(x, acc, SMELT_F32), scale);
    if (bias < 0) return ex_node(x, OP_Identity, out, 1, &v);
    int in[2] = {v, bias};
    return ex_node(x, OP_Add, out, 2, in);
}

int ex_round_saturate(expand_ctx *x, int v, int zp, smelt_dtype dt, bool zp_first, int out)
{
    if (ex_is_vector(x, zp)) {
        x->st = ex_fail(x, SMELT_ERR_UNSUPPORTED, "a per-channel output zero point is not supported (only per-tensor)");
        return -1;
    }
    if (zp >= 0 && x->g->tensors[zp].dtype != SMELT_UNDEFINED) dt = x->g->tensors[zp].dtype;
    int zf = zp >= 0 ? ex_cast(x, zp, SMELT_F32) : -1;
    if (zp_first && zf >= 0) v = ex_binary(x, OP_Add, v, zf);
    v = ex_unary(x, OP_Round, v);
    if (!zp_first && zf >= 0) v = ex_binary(x, OP_Add, v, zf);
    v = ex_binary(x, OP_Max, v, ex_const_f32(x, dt == SMELT_I8 ? INT8_MIN : 0));
    v = ex_binary(x, OP_Min, v, ex_const_f32(x, dt == SMELT_I8 ? INT8_MAX : UINT8_MAX));
    int r = ex_node(x, OP_Cast, out, 1, &v);
    ex_attr_int(x, "to", dt);
    return r;
}

int ex_requantize_acc(expand_ctx *x, int acc, int scale, int y_zp, int out)
{
    /* float16 scales (QLinearMatMul-21): their ratio in float16, as the spec's reference, then
     * widened; a cast of a float32 scale is an identity that folding removes. */
    int v = ex_binary(x, OP_Mul, ex_cast(x, acc, SMELT_F32), ex_cast(x, scale, SMELT_F32));
    return ex_round_saturate(x, v, y_zp, SMELT_U8, false, out);
}

void ex_dynamic_quantize(expand_ctx *x, int t, int out[3])
{
    int zero = ex_const_f32(x, 0.0f);
    int lo = ex_unary(x, OP_ReduceMin, t);
    ex_attr_int(x, "keepdims", 0);
    int hi = ex_unary(x, OP_ReduceMax, t);
    ex_attr_int(x, "keepdims", 0);
    lo = ex_binary(x, OP_Min, lo, zero);
    hi = ex_binary(x, OP_Max, hi, zero);
    /* onnxruntime takes scale 1 for an all-zero input (the spec divides 0 by 0). */
    int range = ex_binary(x, OP_Sub, hi, lo);
    int in[3] = {ex_binary(x, OP_Equal, range, zero), ex_const_f32(x, 1.0f),
                 ex_binary(x, OP_Div, range, ex_const_f32(x, 255.0f))};
    out[1] = ex_node(x, OP_Where, out[1], 3, in);
    uint8_t z0 = 0;
    int zq[3] = {ex_unary(x, OP_Neg, lo), out[1], ex_const(x, SMELT_U8, &(ir_shape){.rank = 0}, &z0)};
    out[2] = ex_node(x, OP_QuantizeLinear, out[2], 3, zq);
    int q[3] = {t, out[1], out[2]};
    out[0] = ex_node(x, OP_QuantizeLinear, out[0], 3, q);
}

smelt_status expand_DynamicQuantizeLinear(expand_ctx *x)
{
    int out[3] = {ex_out(x, 0), ex_out(x, 1), ex_out(x, 2)};
    if (ex_in(x, 0) < 0) return ex_fail(x, SMELT_ERR_MODEL, "input x is required");
    ex_dynamic_quantize(x, ex_in(x, 0), out);
    return x->st;
}

smelt_status expand_MatMulInteger(expand_ctx *x)
{
    TRY(ex_need_8bit(x, ex_in(x, 0), "A"));
    TRY(ex_need_8bit(x, ex_in(x, 1), "B"));
    ex_int_matmul(x, ex_in(x, 0), ex_in(x, 2), ex_in(x, 1), ex_in(x, 3), ex_out(x, 0));
    return x->st;
}

/* QLinearMatMul and QLinearConv: inputs 1, 2, 4, 5, 6, 7 are scales and zero points. */
static smelt_status need_params(expand_ctx *x)
{
    static const int params[] = {1, 2, 4, 5, 6, 7};
    for (int i = 0; i < 6; i++)
        if (ex_in(x, params[i]) < 0) return ex_fail(x, SMELT_ERR_MODEL, "input %d (a scale or zero point) is required", params[i]);
    return SMELT_OK;
}

smelt_status expand_QLinearMatMul(expand_ctx *x)
{
    TRY(ex_need_8bit(x, ex_in(x, 0), "a"));
    TRY(ex_need_8bit(x, ex_in(x, 3), "b"));
    TRY(need_params(x));
    int acc = ex_int_matmul(x, ex_in(x, 0), ex_in(x, 2), ex_in(x, 3), ex_in(x, 5), -1);
    int ab = ex_binary(x, OP_Mul, ex_align(x, ex_in(x, 1), 0, 2), ex_in(x, 4));
    ex_requantize_acc(x, acc, ex_binary(x, OP_Div, ab, ex_in(x, 6)), ex_in(x, 7), ex_out(x, 0));
    return x->st;
}

/* A per-channel parameter t lined up with dim 0 of W (w_zp) or dim 1 of Y (scales), by the
 * rank of W or X, which import must know (a Shape-based reshape would make X's values decide
 * shapes). A parameter whose rank is unknown is taken as per-tensor: a per-channel one then
 * fails Sub's or Mul's broadcasting with a shape error. */
static int conv_align(expand_ctx *x, int t, int xin, int win, bool of_w)
{
    int r = ex_rank(x, win) >= 0 ? ex_rank(x, win) : ex_rank(x, xin);
    if (!ex_is_vector(x, t)) return t;
    if (r < 0) {
        x->st = ex_fail(x, SMELT_ERR_UNSUPPORTED,
                        "a per-channel weight %s needs the rank of X or W known at import (a constant or a graph input)",
                        of_w ? "zero point" : "scale");
        return -1;
    }
    return ex_align(x, t, of_w ? 0 : 1, r);
}

/* Conv of x - x_zp and w - w_zp (w_zp scalar or one per output channel) with
 * the node's attributes, plus an int32 bias. */
static int int_conv(expand_ctx *x, int xin, int x_zp, int win, int w_zp, int bias, int out)
{
    if (ex_is_vector(x, x_zp)) {
        x->st = ex_fail(x, SMELT_ERR_MODEL, "the input's zero point must be a scalar (per-tensor)");
        return -1;
    }
    int in[3] = {ex_shifted(x, xin, x_zp), ex_shifted(x, win, conv_align(x, w_zp, xin, win, true)), bias};
    int y = ex_node(x, OP_Conv, out, bias < 0 ? 2 : 3, in);
    for (int a = 0; a < x->n->n_attr; a++) ex_attr_copy(x, &x->n->attr[a]);
    return y;
}

smelt_status expand_ConvInteger(expand_ctx *x)
{
    TRY(ex_need_8bit(x, ex_in(x, 0), "x"));
    TRY(ex_need_8bit(x, ex_in(x, 1), "w"));
    int_conv(x, ex_in(x, 0), ex_in(x, 2), ex_in(x, 1), ex_in(x, 3), -1, ex_out(x, 0));
    return x->st;
}

smelt_status expand_QLinearConv(expand_ctx *x)
{
    TRY(ex_need_8bit(x, ex_in(x, 0), "x"));
    TRY(ex_need_8bit(x, ex_in(x, 3), "w"));
    TRY(need_params(x));
    int xin = ex_in(x, 0), win = ex_in(x, 3);
    int acc = int_conv(x, xin, ex_in(x, 2), win, ex_in(x, 5), ex_in(x, 8), -1);
    int xw = ex_binary(x, OP_Mul, ex_in(x, 1), conv_align(x, ex_in(x, 4), xin, win, false));
    ex_requantize_acc(x, acc, ex_binary(x, OP_Div, xw, ex_in(x, 6)), ex_in(x, 7), ex_out(x, 0));
    return x->st;
}
