/*
 * generate.c — element functions of the injective ops in
 * ir/ops_more.h (OneHot, EyeLike, the spectral windows, CenterCropPad,
 * QuantizeLinear, DequantizeLinear) and Swish's scalar function.
 *
 * requires: shapes inferred by graph/infer_more.c (parameter shapes checked).
 * guarantees: every index read lies inside its input whatever the data:
 *             padded borders read a clamped index and select the fill value.
 */
#include <math.h>
#include <stdint.h>

#include "lower/lower.h"

static const ir_shape *in_shape(const lower_ctx *c, int i) { return &ir_in(c->g, c->n, i)->shape; }
static const ir_shape *out_shape(const lower_ctx *c, int o) { return &c->g->tensors[c->n->out[o]].shape; }
static smelt_dtype out_type(const lower_ctx *c, int o) { return c->g->tensors[c->n->out[o]].dtype; }
static kir_val bin(kir_kernel *K, kir_op op, kir_val a, kir_val b) { return kir_binary(K, op, a, b); }

kir_val scalar_Swish(kir_kernel *k, const ir_node *n, const kir_val *in)
{
    smelt_dtype dt = kir_v(k, in[0])->type;
    kir_val ax = bin(k, KIR_MUL, kir_const_f(k, dt, ir_attr_float(n, "alpha", 1.0f)), in[0]);
    kir_val e = kir_unary(k, KIR_EXP, kir_unary(k, KIR_NEG, ax));
    return bin(k, KIR_DIV, in[0], bin(k, KIR_ADD, kir_const_f(k, dt, 1), e));
}

kir_val elem_OneHot(lower_ctx *c, int out, const kir_val *idx)
{
    kir_kernel *K = c->k;
    int r = out_shape(c, out)->rank;
    int64_t a = ir_attr_int(c->n, "axis", -1);
    int axis = (int)(a < 0 ? a + r : a);
    int64_t depth = (int64_t)ir_const_double(ir_in(c->g, c->n, 1), 0);
    kir_val ii[IR_MAX_RANK];
    for (int d = 0, j = 0; d < r; d++)
        if (d != axis) ii[j++] = idx[d];
    kir_val v = kir_cast(K, SMELT_I64, lower_load(c, 0, ii));
    v = kir_select(K, bin(K, KIR_LT, v, kir_idx(K, 0)), kir_add(K, v, kir_idx(K, depth)), v);
    kir_val off = kir_idx(K, 0), on = kir_idx(K, 1);
    return kir_select(K, bin(K, KIR_EQ, v, idx[axis]), lower_load(c, 2, &on), lower_load(c, 2, &off));
}

kir_val elem_EyeLike(lower_ctx *c, int out, const kir_val *idx)
{
    kir_kernel *K = c->k;
    smelt_dtype t = out_type(c, out);
    kir_val diag = bin(K, KIR_EQ, bin(K, KIR_SUB, idx[1], idx[0]), kir_idx(K, ir_attr_int(c->n, "k", 0)));
    return kir_select(K, diag, kir_const_f(K, t, 1), kir_const_f(K, t, 0));
}

kir_val elem_Window(lower_ctx *c, int out, const kir_val *idx)
{
    kir_kernel *K = c->k;
    int64_t size = ir_const_int(ir_in(c->g, c->n, 0), 0);
    double len = (double)(ir_attr_int(c->n, "periodic", 1) ? size : size - 1);
    kir_val x = bin(K, KIR_DIV, bin(K, KIR_MUL, kir_cast(K, SMELT_F64, idx[0]), kir_const_f(K, SMELT_F64, M_PI)),
                    kir_const_f(K, SMELT_F64, len));
    kir_val v;
    if (c->n->op == OP_HannWindow) {
        kir_val s = kir_unary(K, KIR_SIN, x);
        v = bin(K, KIR_MUL, s, s);
    } else if (c->n->op == OP_HammingWindow) {
        double alpha = 25.0 / 46.0;
        kir_val cs = kir_unary(K, KIR_COS, bin(K, KIR_MUL, x, kir_const_f(K, SMELT_F64, 2)));
        v = bin(K, KIR_SUB, kir_const_f(K, SMELT_F64, alpha), bin(K, KIR_MUL, cs, kir_const_f(K, SMELT_F64, 1 - alpha)));
    } else {
        kir_val c2 = kir_unary(K, KIR_COS, bin(K, KIR_MUL, x, kir_const_f(K, SMELT_F64, 2)));
        kir_val c4 = kir_unary(K, KIR_COS, bin(K, KIR_MUL, x, kir_const_f(K, SMELT_F64, 4)));
        v = bin(K, KIR_ADD, bin(K, KIR_MUL, c2, kir_const_f(K, SMELT_F64, -0.5)),
                bin(K, KIR_MUL, c4, kir_const_f(K, SMELT_F64, 0.08)));
        v = bin(K, KIR_ADD, v, kir_const_f(K, SMELT_F64, 0.42));
    }
    return kir_cast(K, out_type(c, out), v);
}

/* Crop takes the centred window (the odd element dropped at the end); pad
 * centres the input the same way and fills zeros. */
kir_val elem_CenterCropPad(lower_ctx *c, int out, const kir_val *idx)
{
    kir_kernel *K = c->k;
    const ir_shape *xs = in_shape(c, 0), *os = out_shape(c, out);
    smelt_dtype t = out_type(c, out);
    kir_val inside = 0, ii[IR_MAX_RANK];
    for (int d = 0; d < xs->rank; d++) {
        int64_t in = xs->dim[d], o = os->dim[d];
        if (o <= in) {
            ii[d] = kir_add(K, idx[d], kir_idx(K, (in - o) / 2));
            continue;
        }
        kir_val p = bin(K, KIR_SUB, idx[d], kir_idx(K, (o - in) / 2));
        kir_val ok = bin(K, KIR_AND, bin(K, KIR_GE, p, kir_idx(K, 0)), bin(K, KIR_LT, p, kir_idx(K, in)));
        inside = inside ? bin(K, KIR_AND, inside, ok) : ok;
        ii[d] = lower_clamp(K, p, in);
    }
    if (inside && ir_shape_numel(xs) == 0) return kir_const_f(K, t, 0);
    kir_val v = lower_load(c, 0, ii);
    return inside ? kir_select(K, inside, v, kir_const_f(K, t, 0)) : v;
}

/* Scale or zero point (input i) for element idx: one value, one per slice of
 * `axis`, or one per block along it. */
static kir_val quant_param(lower_ctx *c, int i, const kir_val *idx)
{
    kir_kernel *K = c->k;
    const ir_tensor *p = ir_in(c->g, c->n, i), *x = ir_in(c->g, c->n, 0);
    kir_val pi[IR_MAX_RANK];
    int64_t block = ir_attr_int(c->n, "block_size", 0);
    if (p->shape.rank <= 1 && ir_tensor_numel(p) == 1 && block == 0) {
        for (int d = 0; d < p->shape.rank; d++) pi[d] = kir_idx(K, 0);
        return lower_load(c, i, pi);
    }
    int r = x->shape.rank;
    int64_t a = ir_attr_int(c->n, "axis", 1);
    int axis = (int)(a < 0 ? a + r : a);
    if (block == 0) return lower_load(c, i, &idx[axis]);
    for (int d = 0; d < r; d++) pi[d] = idx[d];
    pi[axis] = bin(K, KIR_DIV, idx[axis], kir_idx(K, block));
    return lower_load(c, i, pi);
}

kir_val elem_QuantizeLinear(lower_ctx *c, int out, const kir_val *idx)
{
    kir_kernel *K = c->k;
    smelt_dtype t = out_type(c, out);
    kir_val s = quant_param(c, 1, idx);
    smelt_dtype ft = kir_v(K, s)->type;
    kir_val v = kir_unary(K, KIR_ROUND, bin(K, KIR_DIV, kir_cast(K, ft, lower_load(c, 0, idx)), s));
    if (ir_in(c->g, c->n, 2)) v = bin(K, KIR_ADD, v, kir_cast(K, ft, quant_param(c, 2, idx)));
    double lo = t == SMELT_U8 ? 0 : t == SMELT_I8 ? INT8_MIN : t == SMELT_U16 ? 0 : INT16_MIN;
    double hi = t == SMELT_U8 ? UINT8_MAX : t == SMELT_I8 ? INT8_MAX : t == SMELT_U16 ? UINT16_MAX : INT16_MAX;
    v = bin(K, KIR_MAX, bin(K, KIR_MIN, v, kir_const_f(K, ft, hi)), kir_const_f(K, ft, lo));
    return kir_cast(K, t, v);
}

kir_val elem_DequantizeLinear(lower_ctx *c, int out, const kir_val *idx)
{
    kir_kernel *K = c->k;
    smelt_dtype ft = out_type(c, out);
    kir_val v = kir_cast(K, ft, lower_load(c, 0, idx));
    if (ir_in(c->g, c->n, 2)) v = bin(K, KIR_SUB, v, kir_cast(K, ft, quant_param(c, 2, idx)));
    return bin(K, KIR_MUL, v, quant_param(c, 1, idx));
}
