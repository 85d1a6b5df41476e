/*
 * quantize.c — QuantizeLinear and DequantizeLinear: shape rules and index maps
 * (per-tensor, per-axis and blocked scales and zero points).
 *
 * requires: a node whose shape rule here succeeded (parameter shapes checked).
 * guarantees: an injective index map; quantized values saturate to the output
 *             type's range.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lower/lower.h"
#include "ops/quantize.h"
#include "ops/shape.h"

/* ---- quantization ------------------------------------------------------- */

smelt_status parse_quantize(const ir_graph *g, const ir_node *n, void *params)
{
    (void)g;
    quantize_params *p = params;
    p->axis = ir_attr_int(n, "axis", 1);
    p->block_size = ir_attr_int(n, "block_size", 0);
    if (p->block_size < 0) return ir_node_fail(n, SMELT_ERR_MODEL, "block_size must be >= 0");
    p->output_dtype = (smelt_dtype)ir_attr_int(n, "output_dtype", SMELT_UNDEFINED);
    return SMELT_OK;
}

/* n's quantize_params (ir_node_params_get). */
static smelt_status quantize_params_of(const ir_graph *g, const ir_node *n, quantize_params *scratch,
                                       const quantize_params **p)
{
    const void *v;
    TRY(ir_node_params_get(g, n, scratch, &v));
    *p = v;
    return SMELT_OK;
}

/* Scale (and zero point) of a quantize/dequantize node: one value, one per
 * slice along `axis`, or one per block of `block_size` along it. */
static smelt_status quant_params(const ir_graph *g, const ir_node *n, const quantize_params *p)
{
    const ir_tensor *x = ir_in(g, n, 0), *s = ir_in(g, n, 1), *z = ir_in(g, n, 2);
    char b1[160], b2[160];
    int r = x->shape.rank;
    int64_t block = p->block_size;
    /* A one-element scale with a one-element zero point is per-tensor whatever their ranks
     * (onnxruntime's quantizer writes a [1] scale beside a scalar zero point). */
    if (z && !ir_shape_eq(&z->shape, &s->shape) && !(infer_is_one_value(s) && infer_is_one_value(z)))
        return ir_node_fail(n, SMELT_ERR_SHAPE, "zero point %s must have the scale's shape %s", infer_shp(&z->shape, b1),
                            infer_shp(&s->shape, b2));
    if (infer_is_one_value(s) && block == 0) return SMELT_OK;
    int axis;
    TRY(infer_norm_axis(n, p->axis, r, "axis", &axis));
    if (block == 0) {
        if (s->shape.rank != 1 || s->shape.dim[0] != x->shape.dim[axis])
            return ir_node_fail(n, SMELT_ERR_SHAPE, "per-axis scale %s must be [%lld] (the size of axis %d of %s)",
                                infer_shp(&s->shape, b1), (long long)x->shape.dim[axis], axis, infer_shp(&x->shape, b2));
        return SMELT_OK;
    }
    bool ok = s->shape.rank == r;
    for (int d = 0; ok && d < r; d++)
        ok = d == axis ? s->shape.dim[d] == (x->shape.dim[d] + block - 1) / block : s->shape.dim[d] == x->shape.dim[d];
    if (!ok)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "blocked scale %s does not match input %s with block_size %lld on axis %d",
                            infer_shp(&s->shape, b1), infer_shp(&x->shape, b2), (long long)block, axis);
    return SMELT_OK;
}

static bool quant_type_ok(smelt_dtype dt)
{
    return dt == SMELT_U8 || dt == SMELT_I8 || dt == SMELT_U16 || dt == SMELT_I16;
}

smelt_status infer_QuantizeLinear(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_need_input(g, n, 0, "x"));
    TRY(infer_need_input(g, n, 1, "y_scale"));
    const ir_tensor *x = ir_in(g, n, 0), *s = ir_in(g, n, 1), *z = ir_in(g, n, 2);
    TRY(infer_check_dtypes(g, n));
    TRY(infer_require_class(n, x, infer_is_float(x->dtype) || x->dtype == SMELT_I32, "float or int32"));
    TRY(infer_need_float(n, s));
    quantize_params scratch;
    const quantize_params *p;
    TRY(quantize_params_of(g, n, &scratch, &p));
    smelt_dtype out = z ? z->dtype : p->output_dtype;
    if (out == SMELT_UNDEFINED) out = SMELT_U8;
    if (!quant_type_ok(out))
        return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "quantized dtype %s is not supported (uint8/int8/uint16/int16)",
                            infer_dtype_str(out));
    TRY(quant_params(g, n, p));
    return infer_set_out(g, n, 0, out, &x->shape);
}

smelt_status infer_DequantizeLinear(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_need_input(g, n, 0, "x"));
    TRY(infer_need_input(g, n, 1, "x_scale"));
    const ir_tensor *x = ir_in(g, n, 0), *s = ir_in(g, n, 1), *z = ir_in(g, n, 2);
    TRY(infer_check_dtypes(g, n));
    if (!quant_type_ok(x->dtype) && x->dtype != SMELT_I32)
        return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "quantized dtype %s is not supported (uint8/int8/uint16/int16/int32)",
                            infer_dtype_str(x->dtype));
    TRY(infer_need_float(n, s));
    if (z && z->dtype != x->dtype)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "zero point dtype %s must be the input's %s", infer_dtype_str(z->dtype),
                            infer_dtype_str(x->dtype));
    quantize_params scratch;
    const quantize_params *p;
    TRY(quantize_params_of(g, n, &scratch, &p));
    TRY(quant_params(g, n, p));
    smelt_dtype out = p->output_dtype;
    if (out == SMELT_UNDEFINED) out = s->dtype;
    if (out != s->dtype)
        return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "output_dtype %s differs from the scale's %s",
                            infer_dtype_str(out), infer_dtype_str(s->dtype));
    return infer_set_out(g, n, 0, out, &x->shape);
}

static smelt_dtype out_type(const lower_ctx *c, int o) { return c->g->tensors[c->n->out[o]].dtype; }

static kir_val bin(kir_kernel *K, kir_op op, kir_val a, kir_val b) { return kir_binary(K, op, a, b); }

/* Scale or zero point (input i) for element idx: one value, one per slice of
 * `axis`, or one per block along it. */
static kir_val quant_param(lower_ctx *c, int i, const kir_val *idx)
{
    kir_kernel *K = c->k;
    const ir_tensor *p = ir_in(c->g, c->n, i), *x = ir_in(c->g, c->n, 0);
    kir_val pi[IR_MAX_RANK];
    quantize_params scratch;
    const quantize_params *qp;
    if (quantize_params_of(c->g, c->n, &scratch, &qp) != SMELT_OK) return 0; /* shape inference parsed them */
    int64_t block = qp->block_size;
    if (p->shape.rank <= 1 && ir_tensor_numel(p) == 1 && block == 0) {
        for (int d = 0; d < p->shape.rank; d++) pi[d] = kir_idx(K, 0);
        return lower_load(c, i, pi);
    }
    int r = x->shape.rank;
    int64_t a = qp->axis;
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
