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
 * contraction's loads), then the MatMul/Conv kernel runs with the
 * requantization's float ops as its epilogue.
 *
 * The contraction runs in float32 where that is exact (ex_int_matmul, int_conv):
 * every partial sum of integers of magnitude at most 2^24 is an integer float32
 * holds exactly, in any order of summation, so a float MatMul/Conv (the packed
 * GEMM's kernels) gives int32's result when max|a - a_zp| times the largest
 * column sum of |b - b_zp| stays within 2^24. Where it does not, K (a MatMul's
 * rows of B, a Conv's input channels) is cut into chunks that each keep it,
 * each chunk's float result is cast to int32 and the chunks are added as
 * int32. A bound known only from the dtypes (a computed B) gives chunks of
 * 2^24 / (255 * 255) = 258 rows.
 * A constant B - b_zp is folded to a float32 constant; where A has few rows,
 * the C target packs it back into 8-bit panels (graph/pack_int8.c: int8, or
 * uint8 plus one offset per tensor where the values span at most 255, so
 * uint8 less a zero point of 119 is uint8 again) and widens them in
 * registers; each widened value is the same integer, so the rule above holds
 * unchanged.
 *
 * Integer SIMD instead (AVX2 without VNNI; bench/int16_pairs.c, a 6x16
 * register block at 1 thread on the EPYC of session 15, best of 15 rounds,
 * GMAC/s): int16 pairs with vpmaddwd (16 products an instruction, exact here)
 * reach 63-74 on ddddocr_ocr_quant's conv shapes against float32 FMA's 31-43,
 * but only when B is already stored in k-pairs ([k/2][16][2]); pairing int16
 * rows in registers (vpunpck*wd) gives 38-47, no better than float; for the
 * 20 x 1024 x 8210 MatMulInteger, u8 panels paired and widened in registers
 * with an int16 A give 41-47 against the u8 panels widened to float32's 30-38.
 * Both need A as int16 in memory (a pair is one 32-bit broadcast): converting
 * float A inside the microkernel, once per call, gives 31-34, slower.
 * So what pays is a typed integer GEMM (int16 operands, int32 block) whose
 * im2col writes k-pairs and whose A is packed once per unit, not a helper
 * behind the float GEMM's loop. The MatMulInteger form is in place
 * (target/emit_c_gemm_int8.c: a kernel converts its float A to int16 once
 * at its start, checked to be integers, and the u8/i8 panel helpers run
 * int16 pairs where max|a| * max|b| * kc <= 2^24). So is the conv form: a
 * ConvInteger's float Convs carry IR_ATTR_INT_AMAX (X's bound, the chunks'
 * guarantee), where their positions go on N the weight becomes int16 k-pair
 * rows (graph/pack_weights.c), the im2col is written as int16 k-pairs and the
 * GEMM runs vpmaddwd (ops/conv_gemm.c, target/emit_c_gemm_pairs.c, with
 * what it measured). vpmaddubsw (u8 x s8, 32 products) is exact
 * only while a pair's sum fits int16, |w - w_zp| <= 64 for x up to 255;
 * every weight of that model spans 121 to 178, so it never applies there.
 * vpdpbusd (AVX512-VNNI: u8 x s8 quads into int32, 64 products) has no such
 * limit: each chunk's Conv gets the shift s that makes X + s the 8-bit input
 * again (ir.h, input 3), and where the C target has it the weight becomes
 * int8 k-quads (graph/pack_weights.c, ops/conv_gemm.c).
 */
#include "onnx/expand.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

/* ---- integer contractions in float32 ------------------------------------ */

#define EXACT_F32 16777216.0 /* 2^24: float32 holds every integer up to it */
#define MAX_CHUNKS 64

/* The largest |v - zp| of an 8-bit operand t (zp -1: none). */
static double max_shifted(const expand_ctx *x, int t, int zp)
{
    return zp < 0 && x->g->tensors[t].dtype == SMELT_I8 ? 128.0 : 255.0;
}

/* Element i of a constant 8-bit tensor as an int. */
static int q8_at(const ir_tensor *t, int64_t i)
{
    return t->dtype == SMELT_I8 ? ((const int8_t *)t->data)[i] : ((const uint8_t *)t->data)[i];
}

static bool const_8bit(const expand_ctx *x, int t)
{
    const ir_tensor *v = &x->g->tensors[t];
    return v->data && v->enc.kind == IR_ENC_NONE && (v->dtype == SMELT_U8 || v->dtype == SMELT_I8);
}

/* B's rows of the contraction as [outer][k][inner] columns: a MatMul's B
 * [batch.., K, N] (outer = batch, inner = N, zp per N) or a Conv's W
 * [Cout, C, kh, kw] (outer = Cout with its zp, inner = kh*kw summed into one
 * column per Cout). */
typedef struct k_rows {
    int64_t outer, k, inner;
    bool zp_outer;   /* zp indexed by outer (Conv) rather than inner (MatMul) */
    bool sum_inner;  /* the inner elements of a row add into one column (Conv) */
} k_rows;

/* Where K is cut so that amax * (sum over each chunk of |b - zp|) <= 2^24 for
 * every column: cut[0] = 0 < cut[1] < ... < cut[n] = K; returns n, or 0 when
 * a chunk cannot be formed (more than MAX_CHUNKS, or out of memory). B (and
 * its zero point) not constant: the dtypes' bound, 255 per element. */
static int k_chunks(const expand_ctx *x, int b, int b_zp, double amax, const k_rows *r, int64_t cut[MAX_CHUNKS + 1])
{
    double lim = EXACT_F32 / amax;
    int n = 0;
    cut[0] = 0;
    if (!const_8bit(x, b) || (b_zp >= 0 && !const_8bit(x, b_zp))) {
        int64_t per = (int64_t)(lim / (255.0 * (r->sum_inner ? (double)r->inner : 1.0)));
        if (per < 1) return 0;
        for (int64_t k = per; k < r->k; k += per) {
            if (n + 1 >= MAX_CHUNKS) return 0;
            cut[++n] = k;
        }
        cut[++n] = r->k;
        return n;
    }
    const ir_tensor *bt = &x->g->tensors[b], *zt = b_zp >= 0 ? &x->g->tensors[b_zp] : NULL;
    int64_t zn = zt ? ir_shape_numel(&zt->shape) : 0;
    int64_t cols = r->outer * (r->sum_inner ? 1 : r->inner);
    double *sum = calloc((size_t)cols, sizeof(double)), *row = malloc(sizeof(double) * (size_t)cols);
    if (!sum || !row) {
        free(sum);
        free(row);
        return 0;
    }
    for (int64_t k = 0; k < r->k && n >= 0; k++) {
        bool over = false;
        for (int64_t o = 0; o < r->outer; o++)
            for (int64_t i = 0; i < r->inner; i++) {
                int64_t col = r->sum_inner ? o : o * r->inner + i;
                int64_t zi = zn <= 1 ? 0 : r->zp_outer ? o : i;
                int z = zt ? q8_at(zt, zi) : 0;
                double v = abs(q8_at(bt, (o * r->k + k) * r->inner + i) - z);
                row[col] = (r->sum_inner && i ? row[col] : 0.0) + v;
            }
        for (int64_t c = 0; c < cols; c++) over |= sum[c] + row[c] > lim;
        if (over && k > cut[n]) {
            if (n + 1 >= MAX_CHUNKS) n = -1;
            else cut[++n] = k, memset(sum, 0, sizeof(double) * (size_t)cols);
        }
        for (int64_t c = 0; c < cols && n >= 0; c++) {
            sum[c] += row[c];
            if (sum[c] > lim) n = -1; /* one row alone over: 255 * 255 * inner > 2^24 */
        }
    }
    free(sum);
    free(row);
    if (n < 0) return 0;
    cut[++n] = r->k;
    return n;
}

/* t[k0:k1] along axis (negative: from the end), in the node's opset's form. */
static int ex_slice(expand_ctx *x, int t, int64_t axis, int64_t k0, int64_t k1)
{
    if (x->g->opset >= 10) {
        int in[4] = {t, ex_const_i64s(x, 1, &k0), ex_const_i64s(x, 1, &k1), ex_const_i64s(x, 1, &axis)};
        return ex_node(x, OP_Slice, -1, 4, in);
    }
    int r = ex_node(x, OP_Slice, -1, 1, &t);
    ex_attr_copy(x, &(ir_attr){.name = "starts", .type = IR_ATTR_INTS, .n = 1, .ints = &k0, .tensor = -1});
    ex_attr_copy(x, &(ir_attr){.name = "ends", .type = IR_ATTR_INTS, .n = 1, .ints = &k1, .tensor = -1});
    ex_attr_copy(x, &(ir_attr){.name = "axes", .type = IR_ATTR_INTS, .n = 1, .ints = &axis, .tensor = -1});
    return r;
}

static int ex_shifted_f32(expand_ctx *x, int t, int zp)
{
    int v = ex_cast(x, t, SMELT_F32);
    return zp < 0 ? v : ex_binary(x, OP_Sub, v, ex_cast(x, zp, SMELT_F32));
}

/* The int32 sum over chunks of cut of contraction op (MatMul or Conv, with the
 * node's attributes for Conv) of float a and b sliced along their K axes; a
 * Conv's input 3 is `shift` (ir.h, IR_ATTR_INT_AMAX). */
static int chunked(expand_ctx *x, op_id op, int af, int64_t a_axis, int bf, int64_t b_axis, int n,
                   const int64_t *cut, double amax, int shift, int out)
{
    int acc = -1;
    for (int c = 0; c < n; c++) {
        int in[4] = {n > 1 ? ex_slice(x, af, a_axis, cut[c], cut[c + 1]) : af,
                     n > 1 ? ex_slice(x, bf, b_axis, cut[c], cut[c + 1]) : bf, -1, shift};
        int y = ex_node(x, op, -1, op == OP_Conv ? 4 : 2, in);
        if (op == OP_Conv) {
            for (int a = 0; a < x->n->n_attr; a++) ex_attr_copy(x, &x->n->attr[a]);
            ex_attr_int(x, IR_ATTR_INT_AMAX, (int64_t)amax); /* k_chunks kept amax * column sums <= 2^24 */
        }
        int yi = ex_node(x, OP_Cast, c == n - 1 && acc < 0 ? out : -1, 1, &y);
        ex_attr_int(x, "to", SMELT_I32);
        if (acc < 0) {
            acc = yi;
            continue;
        }
        int sum[2] = {acc, yi};
        acc = ex_node(x, OP_Add, c == n - 1 ? out : -1, 2, sum);
    }
    return acc;
}

int ex_int_matmul(expand_ctx *x, int a, int a_zp, int b, int b_zp, int out)
{
    a_zp = ex_align(x, a_zp, 0, 2);
    const ir_tensor *bt = &x->g->tensors[b];
    int64_t cut[MAX_CHUNKS + 1];
    int n = 0;
    if (!x->st && ex_rank(x, b) >= 2) {
        const ir_shape *s = &bt->shape;
        k_rows r = {ir_shape_numel(s) / (s->dim[s->rank - 2] * s->dim[s->rank - 1]), s->dim[s->rank - 2],
                    s->dim[s->rank - 1], false, false};
        /* a per-column zero point is [N]; any other shape is left to the int32 form's broadcasting */
        bool zp_ok = b_zp < 0 || ir_shape_numel(&x->g->tensors[b_zp].shape) == 1 ||
                     (ex_rank(x, b_zp) == 1 && x->g->tensors[b_zp].shape.dim[0] == r.inner);
        if (zp_ok && r.k > 0) n = k_chunks(x, b, b_zp, max_shifted(x, a, a_zp), &r, cut);
    }
    if (!n) {
        int in[2] = {ex_shifted(x, a, a_zp), ex_shifted(x, b, b_zp)};
        return ex_node(x, OP_MatMul, out, 2, in);
    }
    return chunked(x, OP_MatMul, ex_shifted_f32(x, a, a_zp), -1, ex_shifted_f32(x, b, b_zp), -2, n, cut, 0.0, -1, out);
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
    int wz = conv_align(x, w_zp, xin, win, true);
    int64_t cut[MAX_CHUNKS + 1];
    int n = 0;
    const ir_tensor *w = &x->g->tensors[win];
    /* float32 chunks of input channels: group 1 only (a chunk must hold whole groups) */
    if (!x->st && bias < 0 && ex_rank(x, win) >= 3 && ir_attr_int(x->n, "group", 1) == 1) {
        int64_t inner = 1;
        for (int d = 2; d < w->shape.rank; d++) inner *= w->shape.dim[d];
        k_rows r = {w->shape.dim[0], w->shape.dim[1], inner, true, true};
        bool zp_ok = w_zp < 0 || ir_shape_numel(&x->g->tensors[w_zp].shape) == 1 ||
                     ir_shape_numel(&x->g->tensors[w_zp].shape) == r.outer;
        if (zp_ok && r.k > 0 && inner > 0) n = k_chunks(x, win, w_zp, max_shifted(x, xin, x_zp), &r, cut);
    }
    if (n) {
        /* x - x_zp + shift is x itself as uint8: x_zp for uint8 x, x_zp + 128 for int8 */
        bool i8 = x->g->tensors[xin].dtype == SMELT_I8;
        int shift = x_zp < 0 ? ex_const_f32(x, i8 ? 128.0f : 0.0f) : ex_cast(x, x_zp, SMELT_F32);
        if (x_zp >= 0 && i8) shift = ex_binary(x, OP_Add, shift, ex_const_f32(x, 128.0f));
        return chunked(x, OP_Conv, ex_shifted_f32(x, xin, x_zp), 1, ex_shifted_f32(x, win, wz), 1, n, cut,
                       max_shifted(x, xin, x_zp), shift, out);
    }
    int in[3] = {ex_shifted(x, xin, x_zp), ex_shifted(x, win, wz), bias};
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
