/*
 * elementwise.c — the elementwise and broadcast ops: shape rules (dtype
 * classes, numpy broadcasting) and scalar functions, one output element from
 * the input elements, following ONNX semantics.
 *
 * requires: inputs loaded with their dtypes (the shape rule checked them).
 * guarantees: the result has the output's dtype; integer division, modulo and
 *             shifts never trap, whatever the data.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"
#include "kir/kir.h"
#include "lower/lower.h"
#include "ops/elementwise.h"
#include "ops/shape.h"

static smelt_dtype type_of(kir_kernel *k, kir_val v) { return kir_v(k, v)->type; }
static kir_val cf(kir_kernel *k, kir_val like, double v) { return kir_const_f(k, type_of(k, like), v); }
static kir_val un(kir_kernel *k, kir_op op, kir_val a) { return kir_unary(k, op, a); }
static kir_val bin(kir_kernel *k, kir_op op, kir_val a, kir_val b) { return kir_binary(k, op, a, b); }
static kir_val add(kir_kernel *k, kir_val a, kir_val b) { return kir_binary(k, KIR_ADD, a, b); }
static kir_val sub(kir_kernel *k, kir_val a, kir_val b) { return kir_binary(k, KIR_SUB, a, b); }
static kir_val mul(kir_kernel *k, kir_val a, kir_val b) { return kir_binary(k, KIR_MUL, a, b); }
static kir_val fdiv(kir_kernel *k, kir_val a, kir_val b) { return kir_binary(k, KIR_DIV, a, b); }
static bool is_unsigned(smelt_dtype t)
{
    return t == SMELT_U8 || t == SMELT_U16 || t == SMELT_U32 || t == SMELT_U64;
}
smelt_status parse_elementwise(const ir_graph *g, const ir_node *n, void *params)
{
    (void)g;
    elementwise_params *p = params;
    float alpha = 1.0f;
    if (n->op == OP_LeakyRelu) alpha = 0.01f;
    else if (n->op == OP_Selu) alpha = 1.67326319217681884765625f;
    else if (n->op == OP_HardSigmoid) alpha = 0.2f;
    p->alpha = ir_attr_float(n, "alpha", alpha);
    p->beta = ir_attr_float(n, "beta", 0.5f);
    p->gamma = ir_attr_float(n, "gamma", 1.05070102214813232421875f);
    p->lambd = ir_attr_float(n, "lambd", 0.5f);
    p->bias = ir_attr_float(n, "bias", 0.0f);
    p->has_min = ir_attr_find(n, "min") != NULL;
    p->has_max = ir_attr_find(n, "max") != NULL;
    p->min = ir_attr_float(n, "min", 0.0f);
    p->max = ir_attr_float(n, "max", 0.0f);
    if (n->op == OP_Cast) {
        const ir_attr *a = ir_attr_find(n, "to");
        if (!a || a->type != IR_ATTR_INT) return ir_node_fail(n, SMELT_ERR_MODEL, "attribute 'to' is required");
        p->to = (smelt_dtype)a->i;
    }
    p->fmod = ir_attr_int(n, "fmod", 0) != 0;
    const char *approx = ir_attr_string(n, "approximate", "none");
    if (n->op == OP_Gelu && strcmp(approx, "none") && strcmp(approx, "tanh"))
        return ir_node_fail(n, SMELT_ERR_MODEL, "approximate '%.40s' must be none or tanh", approx);
    p->gelu_tanh = approx[0] == 't';
    p->detect_positive = ir_attr_int(n, "detect_positive", 1) != 0;
    p->detect_negative = ir_attr_int(n, "detect_negative", 1) != 0;
    const char *dir = ir_attr_string(n, "direction", "LEFT");
    if (n->op == OP_BitShift && strcmp(dir, "LEFT") && strcmp(dir, "RIGHT"))
        return ir_node_fail(n, SMELT_ERR_MODEL, "direction '%.40s' must be LEFT or RIGHT", dir);
    p->shift_left = dir[0] == 'L';
    return SMELT_OK;
}

/* Node n's params in a scalar function, which has no graph: parse_elementwise
 * reads none, so a node added after inference is parsed with none. NULL only
 * where the parse fails, which shape inference reported first. */
static const elementwise_params *scalar_params(const ir_node *n, elementwise_params *scratch)
{
    const void *v;
    return ir_node_params_get(NULL, n, scratch, &v) == SMELT_OK ? v : NULL;
}

/* Clamp to [0, 1]. */
static kir_val saturate(kir_kernel *k, kir_val x)
{
    return bin(k, KIR_MAX, bin(k, KIR_MIN, x, cf(k, x, 1.0)), cf(k, x, 0.0));
}

/* log(1 + u) accurate for small u: log(w) * u / (w - 1) with w = 1 + u. */
static kir_val log1p_of(kir_kernel *k, kir_val u)
{
    kir_val w = add(k, cf(k, u, 1.0), u);
    kir_val wm1 = sub(k, w, cf(k, u, 1.0));
    kir_val r = fdiv(k, mul(k, un(k, KIR_LOG, w), u), wm1);
    return kir_select(k, bin(k, KIR_EQ, wm1, cf(k, u, 0.0)), u, r);
}

/* max(x, 0) + log1p(exp(-|x|)): no overflow for large x. */
static kir_val softplus(kir_kernel *k, kir_val x)
{
    kir_val e = un(k, KIR_EXP, un(k, KIR_NEG, un(k, KIR_ABS, x)));
    return add(k, bin(k, KIR_MAX, x, cf(k, x, 0.0)), log1p_of(k, e));
}

kir_val scalar_Identity(kir_kernel *k, const ir_node *n, const kir_val *in)
{
    (void)k, (void)n;
    return in[0];
}

kir_val scalar_Cast(kir_kernel *k, const ir_node *n, const kir_val *in)
{
    elementwise_params scratch;
    const elementwise_params *p = scalar_params(n, &scratch);
    if (!p) return 0;
    return kir_cast(k, p->to, in[0]);
}

kir_val scalar_Where(kir_kernel *k, const ir_node *n, const kir_val *in)
{
    (void)n;
    return kir_select(k, in[0], in[1], in[2]);
}

kir_val scalar_Add(kir_kernel *k, const ir_node *n, const kir_val *in)
{
    (void)n;
    return add(k, in[0], in[1]);
}

kir_val scalar_Sub(kir_kernel *k, const ir_node *n, const kir_val *in)
{
    (void)n;
    return sub(k, in[0], in[1]);
}

kir_val scalar_Mul(kir_kernel *k, const ir_node *n, const kir_val *in)
{
    (void)n;
    return mul(k, in[0], in[1]);
}

/* Integer division truncates toward zero (ONNX casts the true quotient back
 * to the integer type); x / 0 yields 0 instead of trapping, and so does the
 * overflowing INT_MIN / -1 of signed types (it wraps to INT_MIN). */
static kir_val int_div(kir_kernel *k, kir_val a, kir_val b, bool mod)
{
    smelt_dtype t = type_of(k, a);
    kir_val zero = kir_const_i(k, t, 0), one = kir_const_i(k, t, 1);
    kir_val bad = bin(k, KIR_EQ, b, zero);
    if (!is_unsigned(t)) bad = bin(k, KIR_OR, bad, bin(k, KIR_EQ, b, kir_const_i(k, t, -1)));
    kir_val safe_b = kir_select(k, bad, one, b);
    kir_val q = bin(k, mod ? KIR_MOD : KIR_DIV, a, safe_b);
    if (mod) return kir_select(k, bad, zero, q);
    /* b == -1: the quotient is -a (wrapping), computed as 0 - a. */
    kir_val neg = is_unsigned(t) ? zero : sub(k, zero, a);
    return kir_select(k, bin(k, KIR_EQ, b, zero), zero, kir_select(k, bad, neg, q));
}

kir_val scalar_Div(kir_kernel *k, const ir_node *n, const kir_val *in)
{
    (void)n;
    if (kir_is_float(type_of(k, in[0]))) return fdiv(k, in[0], in[1]);
    return int_div(k, in[0], in[1], false);
}

/* fmod = 1: C's fmod / %, sign of the dividend. fmod = 0: Python's %, the
 * sign of the divisor. */
kir_val scalar_Mod(kir_kernel *k, const ir_node *n, const kir_val *in)
{
    elementwise_params scratch;
    const elementwise_params *p = scalar_params(n, &scratch);
    if (!p) return 0;
    kir_val a = in[0], b = in[1];
    smelt_dtype t = type_of(k, a);
    bool fl = kir_is_float(t);
    kir_val r = fl ? bin(k, KIR_MOD, a, b) : int_div(k, a, b, true);
    if (p->fmod || is_unsigned(t)) return r;
    kir_val zero = kir_const_i(k, t, 0);
    kir_val fix = bin(k, KIR_AND, bin(k, KIR_NE, r, zero),
                      bin(k, KIR_NE, bin(k, KIR_LT, r, zero), bin(k, KIR_LT, b, zero)));
    return kir_select(k, fix, add(k, r, b), r);
}

/* The exponent may have another dtype: integer bases are raised in float64
 * and converted back, float bases use the exponent converted to their type.
 * A constant float exponent of 1 to 4 becomes multiplications, which
 * vectorize where pow is a library call per element (the tanh-GELU's x^3):
 * exact for 1 and 2, within an ulp or two of pow for 3 and 4, and the same for
 * NaN, infinities and overflow. */
kir_val scalar_Pow(kir_kernel *k, const ir_node *n, const kir_val *in)
{
    (void)n;
    smelt_dtype t = type_of(k, in[0]);
    if (kir_is_float(t)) {
        kir_val x = in[0], e = kir_cast(k, t, in[1]);
        double c = kir_is_const(k, e) ? kir_v(k, e)->imm.f : 0;
        if (c == 1) return x;
        if (c == 2) return bin(k, KIR_MUL, x, x);
        if (c == 3) return bin(k, KIR_MUL, bin(k, KIR_MUL, x, x), x);
        if (c == 4) {
            kir_val sq = bin(k, KIR_MUL, x, x);
            return bin(k, KIR_MUL, sq, sq);
        }
        return bin(k, KIR_POW, x, e);
    }
    kir_val r = bin(k, KIR_POW, kir_cast(k, SMELT_F64, in[0]), kir_cast(k, SMELT_F64, in[1]));
    return kir_cast(k, t, r);
}

static kir_val fold(kir_kernel *k, const ir_node *n, const kir_val *in, kir_op op)
{
    kir_val r = in[0];
    for (int i = 1; i < n->n_in; i++)
        if (in[i]) r = bin(k, op, r, in[i]);
    return r;
}

kir_val scalar_Sum(kir_kernel *k, const ir_node *n, const kir_val *in) { return fold(k, n, in, KIR_ADD); }
kir_val scalar_Min(kir_kernel *k, const ir_node *n, const kir_val *in) { return fold(k, n, in, KIR_MIN); }
kir_val scalar_Max(kir_kernel *k, const ir_node *n, const kir_val *in) { return fold(k, n, in, KIR_MAX); }

kir_val scalar_Mean(kir_kernel *k, const ir_node *n, const kir_val *in)
{
    kir_val s = fold(k, n, in, KIR_ADD);
    return fdiv(k, s, cf(k, s, (double)n->n_in));
}

kir_val scalar_PRelu(kir_kernel *k, const ir_node *n, const kir_val *in)
{
    (void)n;
    kir_val x = in[0];
    return kir_select(k, bin(k, KIR_LT, x, kir_const_i(k, type_of(k, x), 0)), mul(k, in[1], x), x);
}

#define UNARY(name, op)                                                          \
    kir_val scalar_##name(kir_kernel *k, const ir_node *n, const kir_val *in)  \
    {                                                                            \
        (void)n;                                                                 \
        return un(k, op, in[0]);                                                 \
    }
UNARY(Sqrt, KIR_SQRT)
UNARY(Neg, KIR_NEG)
UNARY(Exp, KIR_EXP)
UNARY(Log, KIR_LOG)
UNARY(Sin, KIR_SIN)
UNARY(Cos, KIR_COS)
UNARY(Tan, KIR_TAN)
UNARY(Asin, KIR_ASIN)
UNARY(Acos, KIR_ACOS)
UNARY(Atan, KIR_ATAN)
UNARY(Sinh, KIR_SINH)
UNARY(Cosh, KIR_COSH)
UNARY(Asinh, KIR_ASINH)
UNARY(Acosh, KIR_ACOSH)
UNARY(Atanh, KIR_ATANH)
UNARY(Tanh, KIR_TANH)
UNARY(Erf, KIR_ERF)
UNARY(Floor, KIR_FLOOR)
UNARY(Ceil, KIR_CEIL)
UNARY(Round, KIR_ROUND)
UNARY(IsNaN, KIR_ISNAN)
UNARY(Not, KIR_NOT)
#undef UNARY

kir_val scalar_Abs(kir_kernel *k, const ir_node *n, const kir_val *in)
{
    (void)n;
    return is_unsigned(type_of(k, in[0])) ? in[0] : un(k, KIR_ABS, in[0]);
}

kir_val scalar_Reciprocal(kir_kernel *k, const ir_node *n, const kir_val *in)
{
    (void)n;
    return fdiv(k, cf(k, in[0], 1.0), in[0]);
}

kir_val scalar_Sign(kir_kernel *k, const ir_node *n, const kir_val *in)
{
    (void)n;
    kir_val x = in[0];
    smelt_dtype t = type_of(k, x);
    kir_val zero = kir_const_i(k, t, 0), one = kir_const_i(k, t, 1);
    if (is_unsigned(t)) return kir_select(k, bin(k, KIR_GT, x, zero), one, zero);
    kir_val r = kir_select(k, bin(k, KIR_GT, x, zero), one, kir_select(k, bin(k, KIR_LT, x, zero), kir_const_i(k, t, -1), zero));
    return kir_is_float(t) ? kir_select(k, un(k, KIR_ISNAN, x), x, r) : r;
}

/* 1 / (1 + exp(-x)): no cancellation anywhere (1 + e only grows), exp(-x)
 * overflowing to inf for x < -88.7 gives 0 where the true value is below
 * 3e-39, and x = +inf gives 1, NaN gives NaN. Four operations fewer than the
 * branch on the sign with exp(-|x|), and sigmoid sits in long fused chains. */
kir_val scalar_Sigmoid(kir_kernel *k, const ir_node *n, const kir_val *in)
{
    (void)n;
    kir_val x = in[0];
    kir_val e = un(k, KIR_EXP, un(k, KIR_NEG, x));
    return fdiv(k, cf(k, x, 1.0), add(k, cf(k, x, 1.0), e));
}

kir_val scalar_Relu(kir_kernel *k, const ir_node *n, const kir_val *in)
{
    (void)n;
    return bin(k, KIR_MAX, in[0], kir_const_i(k, type_of(k, in[0]), 0));
}

kir_val scalar_LeakyRelu(kir_kernel *k, const ir_node *n, const kir_val *in)
{
    elementwise_params scratch;
    const elementwise_params *p = scalar_params(n, &scratch);
    if (!p) return 0;
    kir_val x = in[0];
    return kir_select(k, bin(k, KIR_LT, x, cf(k, x, 0.0)), mul(k, cf(k, x, p->alpha), x), x);
}

kir_val scalar_Elu(kir_kernel *k, const ir_node *n, const kir_val *in)
{
    elementwise_params scratch;
    const elementwise_params *p = scalar_params(n, &scratch);
    if (!p) return 0;
    kir_val x = in[0];
    kir_val neg = mul(k, cf(k, x, p->alpha), sub(k, un(k, KIR_EXP, x), cf(k, x, 1.0)));
    return kir_select(k, bin(k, KIR_LT, x, cf(k, x, 0.0)), neg, x);
}

kir_val scalar_Selu(kir_kernel *k, const ir_node *n, const kir_val *in)
{
    elementwise_params scratch;
    const elementwise_params *p = scalar_params(n, &scratch);
    if (!p) return 0;
    kir_val x = in[0];
    double alpha = p->alpha, gamma = p->gamma;
    kir_val neg = sub(k, mul(k, cf(k, x, alpha), un(k, KIR_EXP, x)), cf(k, x, alpha));
    kir_val r = kir_select(k, bin(k, KIR_GT, x, cf(k, x, 0.0)), x, neg);
    return mul(k, cf(k, x, gamma), r);
}

kir_val scalar_Celu(kir_kernel *k, const ir_node *n, const kir_val *in)
{
    elementwise_params scratch;
    const elementwise_params *p = scalar_params(n, &scratch);
    if (!p) return 0;
    kir_val x = in[0], a = cf(k, x, p->alpha), zero = cf(k, x, 0.0);
    kir_val neg = mul(k, a, sub(k, un(k, KIR_EXP, fdiv(k, x, a)), cf(k, x, 1.0)));
    return add(k, bin(k, KIR_MAX, x, zero), bin(k, KIR_MIN, neg, zero));
}

kir_val scalar_ThresholdedRelu(kir_kernel *k, const ir_node *n, const kir_val *in)
{
    elementwise_params scratch;
    const elementwise_params *p = scalar_params(n, &scratch);
    if (!p) return 0;
    kir_val x = in[0];
    return kir_select(k, bin(k, KIR_GT, x, cf(k, x, p->alpha)), x, cf(k, x, 0.0));
}

kir_val scalar_Shrink(kir_kernel *k, const ir_node *n, const kir_val *in)
{
    elementwise_params scratch;
    const elementwise_params *p = scalar_params(n, &scratch);
    if (!p) return 0;
    kir_val x = in[0];
    double lambd = p->lambd, bias = p->bias;
    smelt_dtype t = type_of(k, x);
    if (!kir_is_float(t)) {
        /* Integer inputs: compare and shift in float64, convert back. */
        kir_val xf = kir_cast(k, SMELT_F64, x);
        kir_val lo = kir_select(k, bin(k, KIR_LT, xf, cf(k, xf, -lambd)), add(k, xf, cf(k, xf, bias)), cf(k, xf, 0.0));
        kir_val r = kir_select(k, bin(k, KIR_GT, xf, cf(k, xf, lambd)), sub(k, xf, cf(k, xf, bias)), lo);
        return kir_cast(k, t, r);
    }
    kir_val lo = kir_select(k, bin(k, KIR_LT, x, cf(k, x, -lambd)), add(k, x, cf(k, x, bias)), cf(k, x, 0.0));
    return kir_select(k, bin(k, KIR_GT, x, cf(k, x, lambd)), sub(k, x, cf(k, x, bias)), lo);
}

kir_val scalar_Softsign(kir_kernel *k, const ir_node *n, const kir_val *in)
{
    (void)n;
    kir_val x = in[0];
    return fdiv(k, x, add(k, cf(k, x, 1.0), un(k, KIR_ABS, x)));
}

kir_val scalar_Softplus(kir_kernel *k, const ir_node *n, const kir_val *in)
{
    (void)n;
    return softplus(k, in[0]);
}

kir_val scalar_Mish(kir_kernel *k, const ir_node *n, const kir_val *in)
{
    (void)n;
    return mul(k, in[0], un(k, KIR_TANH, softplus(k, in[0])));
}

/* Opset < 11 gives min/max as attributes; later opsets as optional inputs. */
kir_val scalar_Clip(kir_kernel *k, const ir_node *n, const kir_val *in)
{
    elementwise_params scratch;
    const elementwise_params *p = scalar_params(n, &scratch);
    if (!p) return 0;
    kir_val x = in[0], lo = in[1], hi = in[2];
    if (p->has_min) lo = cf(k, x, p->min);
    if (p->has_max) hi = cf(k, x, p->max);
    if (lo) x = bin(k, KIR_MAX, x, lo);
    if (hi) x = bin(k, KIR_MIN, x, hi);
    return x;
}

kir_val scalar_HardSigmoid(kir_kernel *k, const ir_node *n, const kir_val *in)
{
    elementwise_params scratch;
    const elementwise_params *p = scalar_params(n, &scratch);
    if (!p) return 0;
    kir_val x = in[0];
    kir_val y = add(k, mul(k, cf(k, x, p->alpha), x), cf(k, x, p->beta));
    return saturate(k, y);
}

kir_val scalar_HardSwish(kir_kernel *k, const ir_node *n, const kir_val *in)
{
    (void)n;
    kir_val x = in[0];
    kir_val y = add(k, mul(k, cf(k, x, 1.0 / 6.0), x), cf(k, x, 0.5));
    return mul(k, x, saturate(k, y));
}

kir_val scalar_Gelu(kir_kernel *k, const ir_node *n, const kir_val *in)
{
    elementwise_params scratch;
    const elementwise_params *p = scalar_params(n, &scratch);
    if (!p) return 0;
    kir_val x = in[0], half = cf(k, x, 0.5), one = cf(k, x, 1.0);
    kir_val t;
    if (p->gelu_tanh) {
        kir_val x3 = mul(k, mul(k, x, x), x);
        kir_val inner = mul(k, cf(k, x, sqrt(2.0 / M_PI)), add(k, x, mul(k, cf(k, x, 0.044715), x3)));
        t = un(k, KIR_TANH, inner);
    } else {
        t = un(k, KIR_ERF, mul(k, x, cf(k, x, M_SQRT1_2)));
    }
    return mul(k, mul(k, half, x), add(k, one, t));
}

kir_val scalar_IsInf(kir_kernel *k, const ir_node *n, const kir_val *in)
{
    elementwise_params scratch;
    const elementwise_params *p = scalar_params(n, &scratch);
    if (!p) return 0;
    kir_val x = in[0];
    kir_val inf = un(k, KIR_ISINF, x);
    bool pos = p->detect_positive, neg = p->detect_negative;
    if (pos && neg) return inf;
    if (!pos && !neg) return kir_const_i(k, SMELT_BOOL, 0);
    return bin(k, KIR_AND, inf, bin(k, pos ? KIR_GT : KIR_LT, x, cf(k, x, 0.0)));
}

#define BINARY(name, op)                                                         \
    kir_val scalar_##name(kir_kernel *k, const ir_node *n, const kir_val *in)  \
    {                                                                            \
        (void)n;                                                                 \
        return bin(k, op, in[0], in[1]);                                         \
    }
BINARY(Equal, KIR_EQ)
BINARY(Less, KIR_LT)
BINARY(Greater, KIR_GT)
BINARY(LessOrEqual, KIR_LE)
BINARY(GreaterOrEqual, KIR_GE)
BINARY(And, KIR_AND)
BINARY(Or, KIR_OR)
BINARY(Xor, KIR_XOR)
BINARY(BitwiseAnd, KIR_AND)
BINARY(BitwiseOr, KIR_OR)
BINARY(BitwiseXor, KIR_XOR)
#undef BINARY

/* ~x, as x ^ -1 (all ones in every integer type). */
kir_val scalar_BitwiseNot(kir_kernel *k, const ir_node *n, const kir_val *in)
{
    (void)n;
    return bin(k, KIR_XOR, in[0], kir_const_i(k, type_of(k, in[0]), -1));
}

/* Shifting by the type's width or more gives 0 (C leaves it undefined). */
kir_val scalar_BitShift(kir_kernel *k, const ir_node *n, const kir_val *in)
{
    elementwise_params scratch;
    const elementwise_params *p = scalar_params(n, &scratch);
    if (!p) return 0;
    kir_val x = in[0], s = in[1];
    smelt_dtype t = type_of(k, x);
    bool left = p->shift_left;
    kir_val width = kir_const_i(k, t, (int64_t)smelt_dtype_size(t) * 8);
    kir_val big = bin(k, KIR_GE, s, width);
    kir_val safe = kir_select(k, big, kir_const_i(k, t, 0), s);
    return kir_select(k, big, kir_const_i(k, t, 0), bin(k, left ? KIR_SHL : KIR_SHR, x, safe));
}

smelt_status infer_Swish(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_need_input(g, n, 0, "X"));
    const ir_tensor *x = ir_in(g, n, 0);
    TRY(infer_need_float(n, x));
    return infer_set_out(g, n, 0, x->dtype, &x->shape);
}

kir_val scalar_Swish(kir_kernel *k, const ir_node *n, const kir_val *in)
{
    elementwise_params scratch;
    const elementwise_params *p = scalar_params(n, &scratch);
    if (!p) return 0;
    smelt_dtype dt = kir_v(k, in[0])->type;
    kir_val ax = bin(k, KIR_MUL, kir_const_f(k, dt, p->alpha), in[0]);
    kir_val e = kir_unary(k, KIR_EXP, kir_unary(k, KIR_NEG, ax));
    return bin(k, KIR_DIV, in[0], bin(k, KIR_ADD, kir_const_f(k, dt, 1), e));
}

/* ---- elementwise and broadcast ------------------------------------------ */

smelt_status infer_same(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_check_dtypes(g, n));
    const ir_tensor *x = ir_in(g, n, 0);
    for (int o = 0; o < n->n_out; o++) TRY(infer_set_out(g, n, o, x->dtype, &x->shape));
    return SMELT_OK;
}

smelt_status infer_float(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_check_dtypes(g, n));
    const ir_tensor *x = ir_in(g, n, 0);
    TRY(infer_require_class(n, x, infer_is_float(x->dtype), "float"));
    return infer_set_out(g, n, 0, x->dtype, &x->shape);
}

smelt_status infer_numeric(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_check_dtypes(g, n));
    const ir_tensor *x = ir_in(g, n, 0);
    TRY(infer_require_class(n, x, x->dtype != SMELT_BOOL, "numeric"));
    return infer_set_out(g, n, 0, x->dtype, &x->shape);
}

smelt_status infer_int_unary(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_check_dtypes(g, n));
    const ir_tensor *x = ir_in(g, n, 0);
    TRY(infer_require_class(n, x, infer_is_int(x->dtype), "integer"));
    return infer_set_out(g, n, 0, x->dtype, &x->shape);
}

smelt_status infer_float_test(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_check_dtypes(g, n));
    const ir_tensor *x = ir_in(g, n, 0);
    TRY(infer_require_class(n, x, infer_is_float(x->dtype), "float"));
    return infer_set_out(g, n, 0, SMELT_BOOL, &x->shape);
}

/* Inputs of one dtype, of the class `is_class` accepts, broadcast to the output. */
static smelt_status broadcast_of_class(ir_graph *g, int node, bool (*is_class)(smelt_dtype), const char *cls)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_check_dtypes(g, n));
    TRY(infer_same_dtype(g, n, 0, n->n_in - 1));
    const ir_tensor *x = ir_in(g, n, 0);
    TRY(infer_require_class(n, x, is_class(x->dtype), cls));
    ir_shape s;
    TRY(infer_broadcast_inputs(g, n, 0, &s));
    return infer_set_out(g, n, 0, x->dtype, &s);
}

static bool is_numeric(smelt_dtype t) { return t != SMELT_BOOL; }

smelt_status infer_broadcast(ir_graph *g, int node) { return broadcast_of_class(g, node, is_numeric, "numeric"); }

smelt_status infer_float_broadcast(ir_graph *g, int node)
{
    return broadcast_of_class(g, node, infer_is_float, "float");
}

smelt_status infer_int_broadcast(ir_graph *g, int node) { return broadcast_of_class(g, node, infer_is_int, "integer"); }


smelt_status infer_Pow(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_check_dtypes(g, n));
    const ir_tensor *x = ir_in(g, n, 0), *y = ir_in(g, n, 1);
    TRY(infer_require_class(n, x, x->dtype != SMELT_BOOL, "numeric"));
    TRY(infer_require_class(n, y, y->dtype != SMELT_BOOL, "numeric"));
    ir_shape s;
    TRY(infer_broadcast_inputs(g, n, 0, &s));
    return infer_set_out(g, n, 0, x->dtype, &s);
}

smelt_status infer_compare(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_check_dtypes(g, n));
    TRY(infer_same_dtype(g, n, 0, n->n_in - 1));
    const ir_tensor *x = ir_in(g, n, 0);
    if (n->op != OP_Equal) TRY(infer_require_class(n, x, x->dtype != SMELT_BOOL, "numeric"));
    ir_shape s;
    TRY(infer_broadcast_inputs(g, n, 0, &s));
    return infer_set_out(g, n, 0, SMELT_BOOL, &s);
}

smelt_status infer_logical(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_check_dtypes(g, n));
    for (int i = 0; i < n->n_in; i++) {
        const ir_tensor *t = ir_in(g, n, i);
        if (t) TRY(infer_require_class(n, t, t->dtype == SMELT_BOOL, "bool"));
    }
    ir_shape s;
    TRY(infer_broadcast_inputs(g, n, 0, &s));
    return infer_set_out(g, n, 0, SMELT_BOOL, &s);
}

smelt_status infer_Cast(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_check_dtypes(g, n));
    const ir_tensor *x = ir_in(g, n, 0);
    smelt_dtype to;
    if (n->op == OP_CastLike) {
        to = ir_in(g, n, 1)->dtype;
    } else {
        elementwise_params scratch;
        const void *p;
        TRY(ir_node_params_get(g, n, &scratch, &p)); /* checked 'to' is given */
        to = ((const elementwise_params *)p)->to;
    }
    if (!dtype_supported(to))
        return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "cast to %s is not supported", infer_dtype_str(to));
    return infer_set_out(g, n, 0, to, &x->shape);
}

smelt_status infer_Clip(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_check_dtypes(g, n));
    TRY(infer_same_dtype(g, n, 0, 2));
    const ir_tensor *x = ir_in(g, n, 0);
    TRY(infer_require_class(n, x, x->dtype != SMELT_BOOL, "numeric"));
    for (int i = 1; i < n->n_in; i++) {
        const ir_tensor *t = ir_in(g, n, i);
        if (t && ir_tensor_numel(t) != 1)
            return ir_node_fail(n, SMELT_ERR_SHAPE, "input '%s' (%s) must be a scalar, got %lld elements", t->name,
                                i == 1 ? "min" : "max", (long long)ir_tensor_numel(t));
    }
    return infer_set_out(g, n, 0, x->dtype, &x->shape);
}

smelt_status infer_Where(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_check_dtypes(g, n));
    const ir_tensor *c = ir_in(g, n, 0);
    TRY(infer_require_class(n, c, c->dtype == SMELT_BOOL, "bool condition"));
    TRY(infer_same_dtype(g, n, 1, 2));
    ir_shape s;
    TRY(infer_broadcast_inputs(g, n, 0, &s));
    return infer_set_out(g, n, 0, ir_in(g, n, 1)->dtype, &s);
}

smelt_status infer_PRelu(ir_graph *g, int node)
{
    char b1[160], b2[160];
    const ir_node *n = &g->nodes[node];
    TRY(infer_check_dtypes(g, n));
    TRY(infer_same_dtype(g, n, 0, 1));
    const ir_tensor *x = ir_in(g, n, 0), *s = ir_in(g, n, 1);
    TRY(infer_require_class(n, x, x->dtype != SMELT_BOOL, "numeric"));
    ir_shape o;
    if (!infer_broadcast2(&x->shape, &s->shape, &o) || !ir_shape_eq(&o, &x->shape))
        return ir_node_fail(n, SMELT_ERR_SHAPE, "slope of shape %s does not broadcast to input shape %s",
                            infer_shp(&s->shape, b1), infer_shp(&x->shape, b2));
    return infer_set_out(g, n, 0, x->dtype, &x->shape);
}
