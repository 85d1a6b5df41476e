/*
 * infer_more.c — shape rules of the ops in ir/ops_more.h: further
 * normalizations, losses, resampling, scatter, sorting, quantization, Einsum.
 *
 * requires: every input's dtype and shape known; value_in inputs constant.
 * guarantees: each present output gets a supported dtype and a shape, or a
 *             diagnostic names the node and the violated rule. Whatever a
 *             lowering later reads back (resize geometry, einsum labels) is
 *             validated here, so lowerings never see an inconsistent node.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/shape.h"

/* A present input that holds no elements counts as omitted (Resize's roi...). */
static const ir_tensor *in_nonempty(const ir_graph *g, const ir_node *n, int i)
{
    const ir_tensor *t = ir_in(g, n, i);
    return t && ir_tensor_numel(t) > 0 ? t : NULL;
}

/* ---- normalizations ------------------------------------------------------- */

smelt_status infer_RMSNormalization(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_need_input(g, n, 0, "X"));
    TRY(infer_need_input(g, n, 1, "scale"));
    const ir_tensor *x = ir_in(g, n, 0), *s = ir_in(g, n, 1);
    TRY(infer_need_float(n, x));
    TRY(infer_same_dtype(g, n, 0, 1));
    int axis;
    TRY(infer_norm_axis(n, ir_attr_int(n, "axis", -1), x->shape.rank, "axis", &axis));
    ir_shape bc;
    char b1[160], b2[160];
    if (!infer_broadcast2(&x->shape, &s->shape, &bc) || !ir_shape_eq(&bc, &x->shape))
        return ir_node_fail(n, SMELT_ERR_SHAPE, "scale %s must broadcast to X %s", infer_shp(&s->shape, b1),
                            infer_shp(&x->shape, b2));
    return infer_set_out(g, n, 0, x->dtype, &x->shape);
}

smelt_status infer_GroupNormalization(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    static const char *const names[] = {"X", "scale", "bias"};
    for (int i = 0; i < 3; i++) TRY(infer_need_input(g, n, i, names[i]));
    const ir_tensor *x = ir_in(g, n, 0);
    TRY(infer_need_float(n, x));
    TRY(infer_same_dtype(g, n, 0, 2));
    char b1[160], b2[160];
    if (x->shape.rank < 2)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "X %s must have rank >= 2 ([N, C, ...])", infer_shp(&x->shape, b1));
    int64_t groups = ir_attr_int(n, "num_groups", 0), ch = x->shape.dim[1];
    if (groups <= 0 || ch % groups != 0)
        return ir_node_fail(n, SMELT_ERR_MODEL, "num_groups %lld must be positive and divide the %lld channels",
                            (long long)groups, (long long)ch);
    for (int i = 1; i < 3; i++) {
        const ir_tensor *p = ir_in(g, n, i);
        bool ok = p->shape.rank == 1 && (p->shape.dim[0] == ch || (g->opset < 21 && p->shape.dim[0] == groups));
        if (!ok)
            return ir_node_fail(n, SMELT_ERR_SHAPE, "%s %s must have shape [C] (or [num_groups] before opset 21) for X %s",
                                names[i], infer_shp(&p->shape, b1), infer_shp(&x->shape, b2));
    }
    return infer_set_out(g, n, 0, x->dtype, &x->shape);
}

smelt_status infer_MeanVarianceNormalization(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_need_input(g, n, 0, "X"));
    const ir_tensor *x = ir_in(g, n, 0);
    TRY(infer_need_float(n, x));
    const int64_t *axes;
    int cnt = ir_attr_ints(n, "axes", &axes);
    for (int i = 0; i < cnt; i++) {
        int a;
        TRY(infer_norm_axis(n, axes[i], x->shape.rank, "axis", &a));
    }
    if (cnt < 0 && x->shape.rank < 4)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "the default axes [0,2,3] need X of rank >= 4, got rank %d",
                            x->shape.rank);
    return infer_set_out(g, n, 0, x->dtype, &x->shape);
}

smelt_status infer_LRN(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_need_input(g, n, 0, "X"));
    const ir_tensor *x = ir_in(g, n, 0);
    TRY(infer_need_float(n, x));
    char b1[160];
    if (x->shape.rank < 2)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "X %s must have rank >= 2 ([N, C, ...])", infer_shp(&x->shape, b1));
    if (ir_attr_int(n, "size", 0) <= 0) return ir_node_fail(n, SMELT_ERR_MODEL, "attribute 'size' must be positive");
    return infer_set_out(g, n, 0, x->dtype, &x->shape);
}

smelt_status infer_Swish(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_need_input(g, n, 0, "X"));
    const ir_tensor *x = ir_in(g, n, 0);
    TRY(infer_need_float(n, x));
    return infer_set_out(g, n, 0, x->dtype, &x->shape);
}

/* ---- losses --------------------------------------------------------------- */

smelt_status infer_NegativeLogLikelihoodLoss(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_need_input(g, n, 0, "input"));
    TRY(infer_need_input(g, n, 1, "target"));
    const ir_tensor *x = ir_in(g, n, 0), *t = ir_in(g, n, 1), *w = ir_in(g, n, 2);
    TRY(infer_need_float(n, x));
    TRY(infer_need_int(n, t));
    char b1[160], b2[160];
    int r = x->shape.rank;
    bool ok = r >= 2 && t->shape.rank == r - 1 && t->shape.dim[0] == x->shape.dim[0];
    for (int d = 2; ok && d < r; d++) ok = t->shape.dim[d - 1] == x->shape.dim[d];
    if (!ok)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "input %s must be [N, C, d...] and target %s [N, d...]",
                            infer_shp(&x->shape, b1), infer_shp(&t->shape, b2));
    if (w) {
        TRY(infer_same_dtype(g, n, 0, 0));
        if (w->dtype != x->dtype || w->shape.rank != 1 || w->shape.dim[0] != x->shape.dim[1])
            return ir_node_fail(n, SMELT_ERR_SHAPE, "weight %s must be [C] = [%lld] of the input's dtype",
                                infer_shp(&w->shape, b1), (long long)x->shape.dim[1]);
    }
    if (x->shape.dim[1] == 0) return ir_node_fail(n, SMELT_ERR_SHAPE, "input has no classes (C = 0)");
    const char *red = ir_attr_string(n, "reduction", "mean");
    ir_shape out = {.rank = 0};
    if (!strcmp(red, "none")) out = t->shape;
    else if (strcmp(red, "sum") && strcmp(red, "mean"))
        return ir_node_fail(n, SMELT_ERR_MODEL, "reduction '%s' must be none, sum or mean", red);
    TRY(infer_set_out(g, n, 0, x->dtype, &out));
    return infer_set_out(g, n, 1, x->dtype, &x->shape);
}

/* ---- index maps ----------------------------------------------------------- */

smelt_status infer_OneHot(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    static const char *const names[] = {"indices", "depth", "values"};
    for (int i = 0; i < 3; i++) TRY(infer_need_input(g, n, i, names[i]));
    TRY(infer_check_dtypes(g, n));
    const ir_tensor *ind = ir_in(g, n, 0), *dep = ir_in(g, n, 1), *val = ir_in(g, n, 2);
    if (!infer_is_one_value(dep)) return ir_node_fail(n, SMELT_ERR_SHAPE, "depth must hold one value");
    if (val->shape.rank != 1 || val->shape.dim[0] != 2)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "values must be [off_value, on_value] (shape [2])");
    if (ind->dtype == SMELT_BOOL || dep->dtype == SMELT_BOOL)
        return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "indices and depth must be numeric");
    double d = ir_const_double(dep, 0);
    if (!(d >= 1 && d < 1e12)) return ir_node_fail(n, SMELT_ERR_SHAPE, "depth %g must be >= 1", d);
    int q = ind->shape.rank, axis;
    if (q + 1 > IR_MAX_RANK) return ir_node_fail(n, SMELT_ERR_SHAPE, "output rank %d exceeds %d", q + 1, IR_MAX_RANK);
    TRY(infer_norm_axis(n, ir_attr_int(n, "axis", -1), q + 1, "axis", &axis));
    ir_shape out = {.rank = q + 1};
    for (int i = 0, j = 0; i <= q; i++) out.dim[i] = i == axis ? (int64_t)d : ind->shape.dim[j++];
    return infer_set_out(g, n, 0, val->dtype, &out);
}

smelt_status infer_EyeLike(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_need_input(g, n, 0, "input"));
    const ir_tensor *x = ir_in(g, n, 0);
    TRY(infer_check_dtypes(g, n));
    char b1[160];
    if (x->shape.rank != 2) return ir_node_fail(n, SMELT_ERR_SHAPE, "input %s must be 2-D", infer_shp(&x->shape, b1));
    smelt_dtype dt = (smelt_dtype)ir_attr_int(n, "dtype", x->dtype);
    if (!dtype_supported(dt))
        return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "dtype %s is not supported", infer_dtype_str(dt));
    return infer_set_out(g, n, 0, dt, &x->shape);
}

smelt_status infer_Window(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_need_input(g, n, 0, "size"));
    const ir_tensor *s = ir_in(g, n, 0);
    TRY(infer_need_int(n, s));
    if (!infer_is_one_value(s)) return ir_node_fail(n, SMELT_ERR_SHAPE, "size must hold one value");
    int64_t len = ir_const_int(s, 0);
    if (len < 0) return ir_node_fail(n, SMELT_ERR_SHAPE, "size %lld must be >= 0", (long long)len);
    smelt_dtype dt = (smelt_dtype)ir_attr_int(n, "output_datatype", SMELT_F32);
    if (!dtype_supported(dt) || dt == SMELT_BOOL)
        return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "output_datatype %s is not supported", infer_dtype_str(dt));
    ir_shape out = {.rank = 1, .dim = {len}};
    return infer_set_out(g, n, 0, dt, &out);
}

/* CenterCropPad's target size per axis of the input (the input's own size for
 * axes not listed). */
static smelt_status ccp_target(const ir_graph *g, const ir_node *n, ir_shape *out)
{
    const ir_tensor *x = ir_in(g, n, 0);
    int r = x->shape.rank;
    int64_t sz[IR_MAX_RANK];
    smelt_status st;
    int cnt = infer_read_int_input(g, n, 1, "shape", sz, IR_MAX_RANK, &st);
    if (cnt < 0) return st ? st : ir_node_fail(n, SMELT_ERR_MODEL, "missing input 'shape'");
    const int64_t *axes;
    int na = ir_attr_ints(n, "axes", &axes);
    *out = x->shape;
    if (na < 0 && cnt != r)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "shape has %d values for an input of rank %d", cnt, r);
    if (na >= 0 && cnt != na)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "shape has %d values for %d axes", cnt, na);
    for (int i = 0; i < cnt; i++) {
        int a = i;
        if (na >= 0) TRY(infer_norm_axis(n, axes[i], r, "axis", &a));
        if (sz[i] < 0) return ir_node_fail(n, SMELT_ERR_SHAPE, "shape value %lld must be >= 0", (long long)sz[i]);
        out->dim[a] = sz[i];
    }
    return SMELT_OK;
}

smelt_status infer_CenterCropPad(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_need_input(g, n, 0, "input"));
    TRY(infer_need_input(g, n, 1, "shape"));
    TRY(infer_check_dtypes(g, n));
    ir_shape out;
    TRY(ccp_target(g, n, &out));
    return infer_set_out(g, n, 0, ir_in(g, n, 0)->dtype, &out);
}

/* ---- quantization ------------------------------------------------------- */

/* Scale (and zero point) of a quantize/dequantize node: one value, one per
 * slice along `axis`, or one per block of `block_size` along it. */
static smelt_status quant_params(const ir_graph *g, const ir_node *n)
{
    const ir_tensor *x = ir_in(g, n, 0), *s = ir_in(g, n, 1), *z = ir_in(g, n, 2);
    char b1[160], b2[160];
    int r = x->shape.rank;
    int64_t block = ir_attr_int(n, "block_size", 0);
    if (z && !ir_shape_eq(&z->shape, &s->shape))
        return ir_node_fail(n, SMELT_ERR_SHAPE, "zero point %s must have the scale's shape %s", infer_shp(&z->shape, b1),
                            infer_shp(&s->shape, b2));
    if (infer_is_one_value(s) && block == 0) return SMELT_OK;
    int axis;
    TRY(infer_norm_axis(n, ir_attr_int(n, "axis", 1), r, "axis", &axis));
    if (block == 0) {
        if (s->shape.rank != 1 || s->shape.dim[0] != x->shape.dim[axis])
            return ir_node_fail(n, SMELT_ERR_SHAPE, "per-axis scale %s must be [%lld] (the size of axis %d of %s)",
                                infer_shp(&s->shape, b1), (long long)x->shape.dim[axis], axis, infer_shp(&x->shape, b2));
        return SMELT_OK;
    }
    if (block < 0) return ir_node_fail(n, SMELT_ERR_MODEL, "block_size must be >= 0");
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
    smelt_dtype out = z ? z->dtype : (smelt_dtype)ir_attr_int(n, "output_dtype", 0);
    if (out == SMELT_UNDEFINED) out = SMELT_U8;
    if (!quant_type_ok(out))
        return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "quantized dtype %s is not supported (uint8/int8/uint16/int16)",
                            infer_dtype_str(out));
    TRY(quant_params(g, n));
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
    TRY(quant_params(g, n));
    smelt_dtype out = (smelt_dtype)ir_attr_int(n, "output_dtype", 0);
    if (out == SMELT_UNDEFINED) out = s->dtype;
    if (out != s->dtype)
        return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "output_dtype %s differs from the scale's %s",
                            infer_dtype_str(out), infer_dtype_str(s->dtype));
    return infer_set_out(g, n, 0, out, &x->shape);
}

/* ---- scans, sorting, scatter ---------------------------------------------- */

smelt_status infer_CumProd(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_need_input(g, n, 0, "x"));
    TRY(infer_need_input(g, n, 1, "axis"));
    const ir_tensor *x = ir_in(g, n, 0), *a = ir_in(g, n, 1);
    TRY(infer_check_dtypes(g, n));
    TRY(infer_require_class(n, x, x->dtype != SMELT_BOOL, "numeric"));
    TRY(infer_need_int(n, a));
    if (!infer_is_one_value(a)) return ir_node_fail(n, SMELT_ERR_SHAPE, "axis must hold one value");
    int axis;
    TRY(infer_norm_axis(n, ir_const_int(a, 0), x->shape.rank, "axis", &axis));
    return infer_set_out(g, n, 0, x->dtype, &x->shape);
}

smelt_status infer_TopK(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_need_input(g, n, 0, "X"));
    const ir_tensor *x = ir_in(g, n, 0), *kt = ir_in(g, n, 1);
    TRY(infer_check_dtypes(g, n));
    TRY(infer_require_class(n, x, x->dtype != SMELT_BOOL, "numeric"));
    int axis;
    TRY(infer_norm_axis(n, ir_attr_int(n, "axis", -1), x->shape.rank, "axis", &axis));
    int64_t k;
    if (kt) {
        TRY(infer_need_int(n, kt));
        if (!infer_is_one_value(kt)) return ir_node_fail(n, SMELT_ERR_SHAPE, "K must hold one value");
        k = ir_const_int(kt, 0);
    } else {
        k = ir_attr_int(n, "k", -1);
    }
    if (k < 0 || k > x->shape.dim[axis])
        return ir_node_fail(n, SMELT_ERR_SHAPE, "k = %lld must be in [0, %lld] (the size of axis %d)", (long long)k,
                            (long long)x->shape.dim[axis], axis);
    ir_shape out = x->shape;
    out.dim[axis] = k;
    TRY(infer_set_out(g, n, 0, x->dtype, &out));
    return infer_set_out(g, n, 1, SMELT_I64, &out);
}

static smelt_status scatter_reduction(const ir_node *n)
{
    const char *red = ir_attr_string(n, "reduction", "none");
    if (strcmp(red, "none") && strcmp(red, "add") && strcmp(red, "mul") && strcmp(red, "max") && strcmp(red, "min"))
        return ir_node_fail(n, SMELT_ERR_MODEL, "reduction '%s' must be none, add, mul, max or min", red);
    return SMELT_OK;
}

smelt_status infer_ScatterElements(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    static const char *const names[] = {"data", "indices", "updates"};
    for (int i = 0; i < 3; i++) TRY(infer_need_input(g, n, i, names[i]));
    TRY(infer_check_dtypes(g, n));
    const ir_tensor *x = ir_in(g, n, 0), *ind = ir_in(g, n, 1), *u = ir_in(g, n, 2);
    TRY(infer_need_int(n, ind));
    if (u->dtype != x->dtype) return ir_node_fail(n, SMELT_ERR_SHAPE, "updates must have the data's dtype");
    char b1[160], b2[160], b3[160];
    bool ok = ind->shape.rank == x->shape.rank && ir_shape_eq(&ind->shape, &u->shape);
    int axis;
    TRY(infer_norm_axis(n, ir_attr_int(n, "axis", 0), x->shape.rank, "axis", &axis));
    for (int d = 0; ok && d < x->shape.rank; d++) ok = d == axis || ind->shape.dim[d] <= x->shape.dim[d];
    if (!ok)
        return ir_node_fail(n, SMELT_ERR_SHAPE,
                            "indices %s and updates %s must have one shape, of data %s's rank and within its size",
                            infer_shp(&ind->shape, b1), infer_shp(&u->shape, b2), infer_shp(&x->shape, b3));
    if (x->shape.dim[axis] == 0 && ir_tensor_numel(ind) > 0)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "axis %d of data is empty", axis);
    TRY(scatter_reduction(n));
    return infer_set_out(g, n, 0, x->dtype, &x->shape);
}

smelt_status infer_ScatterND(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    static const char *const names[] = {"data", "indices", "updates"};
    for (int i = 0; i < 3; i++) TRY(infer_need_input(g, n, i, names[i]));
    TRY(infer_check_dtypes(g, n));
    const ir_tensor *x = ir_in(g, n, 0), *ind = ir_in(g, n, 1), *u = ir_in(g, n, 2);
    TRY(infer_need_int(n, ind));
    if (u->dtype != x->dtype) return ir_node_fail(n, SMELT_ERR_SHAPE, "updates must have the data's dtype");
    char b1[160], b2[160], b3[160];
    int r = x->shape.rank, q = ind->shape.rank;
    int64_t k = q ? ind->shape.dim[q - 1] : -1;
    bool ok = q >= 1 && k >= 1 && k <= r && u->shape.rank == q - 1 + r - k;
    for (int d = 0; ok && d < q - 1; d++) ok = u->shape.dim[d] == ind->shape.dim[d];
    for (int d = (int)k; ok && d < r; d++) ok = u->shape.dim[q - 1 + d - k] == x->shape.dim[d];
    for (int d = 0; ok && d < k; d++) ok = x->shape.dim[d] > 0 || ir_tensor_numel(u) == 0;
    if (!ok)
        return ir_node_fail(n, SMELT_ERR_SHAPE,
                            "updates %s must be indices.shape[:-1] + data.shape[k:] for indices %s, data %s",
                            infer_shp(&u->shape, b1), infer_shp(&ind->shape, b2), infer_shp(&x->shape, b3));
    TRY(scatter_reduction(n));
    return infer_set_out(g, n, 0, x->dtype, &x->shape);
}

/* ---- Resize / Upsample ---------------------------------------------------- */

static bool str_in(const char *s, const char *const *set)
{
    for (; *set; set++)
        if (!strcmp(s, *set)) return true;
    return false;
}

smelt_status resize_geom_get(const ir_graph *g, const ir_node *n, resize_geom *rg)
{
    const ir_tensor *x = ir_in(g, n, 0), *roi = NULL, *scales = NULL, *sizes = NULL;
    int r = x->shape.rank;
    double attr_scales[IR_MAX_RANK];
    int n_attr_scales = -1;
    if (n->op == OP_Upsample) {
        scales = in_nonempty(g, n, 1);
        if (!scales) {
            const float *f;
            n_attr_scales = ir_attr_floats(n, "scales", &f);
            for (int i = 0; i < n_attr_scales && i < IR_MAX_RANK; i++) attr_scales[i] = f[i];
        }
    } else if (g->opset < 11) {
        scales = in_nonempty(g, n, 1);
    } else {
        roi = in_nonempty(g, n, 1);
        scales = in_nonempty(g, n, 2);
        sizes = in_nonempty(g, n, 3);
    }
    int axes[IR_MAX_RANK], na = r;
    const int64_t *av;
    int cnt = ir_attr_ints(n, "axes", &av);
    if (cnt > r) return ir_node_fail(n, SMELT_ERR_SHAPE, "%d axes for an input of rank %d", cnt, r);
    if (cnt >= 0) {
        na = cnt;
        for (int i = 0; i < cnt; i++) {
            TRY(infer_norm_axis(n, av[i], r, "axis", &axes[i]));
            for (int j = 0; j < i; j++)
                if (axes[j] == axes[i]) return ir_node_fail(n, SMELT_ERR_MODEL, "axis %d is listed twice", axes[i]);
        }
    } else {
        for (int i = 0; i < r; i++) axes[i] = i;
    }
    rg->rank = r;
    for (int d = 0; d < r; d++) {
        rg->out[d] = x->shape.dim[d];
        rg->scale[d] = 1.0;
        rg->roi_lo[d] = 0.0;
        rg->roi_hi[d] = 1.0;
    }
    if ((scales || n_attr_scales >= 0) == (sizes != NULL))
        return ir_node_fail(n, SMELT_ERR_MODEL, "exactly one of 'scales' and 'sizes' must be given");
    int given = scales ? (int)ir_tensor_numel(scales) : sizes ? (int)ir_tensor_numel(sizes) : n_attr_scales;
    if (given != na) return ir_node_fail(n, SMELT_ERR_SHAPE, "%d scales/sizes for %d axes", given, na);
    if (scales && !infer_is_float(scales->dtype))
        return ir_node_fail(n, SMELT_ERR_MODEL, "scales must be a float tensor");
    if (sizes && sizes->dtype != SMELT_I64) return ir_node_fail(n, SMELT_ERR_MODEL, "sizes must be an int64 tensor");
    for (int i = 0; i < na; i++)
        if (x->shape.dim[axes[i]] <= 0)
            return ir_node_fail(n, SMELT_ERR_SHAPE, "axis %d to resize is empty", axes[i]);
    if (!sizes) {
        for (int i = 0; i < na; i++) {
            double s = scales ? ir_const_double(scales, i) : attr_scales[i];
            if (!(s > 0 && s < 1e9)) return ir_node_fail(n, SMELT_ERR_MODEL, "scale %g must be positive", s);
            rg->scale[axes[i]] = s;
            rg->out[axes[i]] = (int64_t)(s * (double)x->shape.dim[axes[i]]);
        }
    } else {
        const char *pol = ir_attr_string(n, "keep_aspect_ratio_policy", "stretch");
        bool larger = !strcmp(pol, "not_larger"), smaller = !strcmp(pol, "not_smaller");
        if (!larger && !smaller && strcmp(pol, "stretch"))
            return ir_node_fail(n, SMELT_ERR_MODEL, "keep_aspect_ratio_policy '%s' is not stretch, not_larger or not_smaller", pol);
        double pick = larger ? INFINITY : 0;
        for (int i = 0; i < na; i++) {
            int64_t v = ir_const_int(sizes, i);
            if (v < 0 || v > ((int64_t)1 << 40)) return ir_node_fail(n, SMELT_ERR_SHAPE, "size %lld is out of range", (long long)v);
            double s = (double)v / (double)x->shape.dim[axes[i]];
            rg->scale[axes[i]] = s;
            rg->out[axes[i]] = v;
            pick = larger ? fmin(pick, s) : fmax(pick, s);
        }
        if (larger || smaller)
            for (int i = 0; i < na; i++) {
                rg->scale[axes[i]] = pick;
                rg->out[axes[i]] = (int64_t)(pick * (double)x->shape.dim[axes[i]] + 0.5);
            }
    }
    if (roi) {
        if (ir_tensor_numel(roi) != 2 * na || !infer_is_float(roi->dtype))
            return ir_node_fail(n, SMELT_ERR_SHAPE, "roi must hold 2 x %d float values", na);
        for (int i = 0; i < na; i++) {
            rg->roi_lo[axes[i]] = ir_const_double(roi, i);
            rg->roi_hi[axes[i]] = ir_const_double(roi, na + i);
        }
    }
    return SMELT_OK;
}

smelt_status infer_Resize(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_need_input(g, n, 0, "X"));
    const ir_tensor *x = ir_in(g, n, 0);
    TRY(infer_check_dtypes(g, n));
    static const char *const modes[] = {"nearest", "linear", "cubic", NULL};
    static const char *const coords[] = {"half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel",
                                         "tf_crop_and_resize", "half_pixel_symmetric", NULL};
    static const char *const nearest[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil", NULL};
    const char *mode = ir_attr_string(n, "mode", "nearest");
    if (n->op == OP_Upsample && !strcmp(mode, "bilinear")) mode = "linear";
    if (!str_in(mode, modes)) return ir_node_fail(n, SMELT_ERR_MODEL, "mode '%s' is not nearest, linear or cubic", mode);
    const char *ct = ir_attr_string(n, "coordinate_transformation_mode", "half_pixel");
    if (!str_in(ct, coords)) return ir_node_fail(n, SMELT_ERR_MODEL, "coordinate_transformation_mode '%s' is unknown", ct);
    const char *nm = ir_attr_string(n, "nearest_mode", "round_prefer_floor");
    if (!str_in(nm, nearest)) return ir_node_fail(n, SMELT_ERR_MODEL, "nearest_mode '%s' is unknown", nm);
    if (strcmp(mode, "nearest")) TRY(infer_need_float(n, x));
    if (x->shape.rank > 8) return ir_node_fail(n, SMELT_ERR_SHAPE, "rank %d is too large", x->shape.rank);
    resize_geom rg;
    TRY(resize_geom_get(g, n, &rg));
    int interp = 0;
    for (int d = 0; d < rg.rank; d++)
        if (rg.out[d] != x->shape.dim[d] || rg.scale[d] != 1.0) interp++;
    if (interp > 4 && strcmp(mode, "nearest"))
        return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "%s interpolation over %d axes (at most 4)", mode, interp);
    int64_t loads = 1;
    int kind = !strcmp(mode, "linear") ? 1 : 2;
    if (ir_attr_int(n, "antialias", 0) != 0 && strcmp(mode, "nearest"))
        for (int d = 0; d < rg.rank; d++) {
            if (rg.out[d] == x->shape.dim[d] && rg.scale[d] == 1.0) continue;
            int taps = resize_antialias_taps(kind, rg.scale[d]);
            if (taps > 16)
                return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "antialiased scale %g on axis %d needs %d taps (at most 16)",
                                    rg.scale[d], d, taps);
            loads *= taps;
        }
    if (loads > 256)
        return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "antialiased resize reads %lld inputs per output (at most 256)",
                            (long long)loads);
    ir_shape out = {.rank = rg.rank};
    for (int d = 0; d < rg.rank; d++) out.dim[d] = rg.out[d];
    return infer_set_out(g, n, 0, x->dtype, &out);
}

/* ---- Einsum ------------------------------------------------------------- */

/* Labels of one term into lab[]; '...' expands to `ell` dims labelled
 * 0..ell-1 (right-aligned, so the last ellipsis dim is ell-1). Returns the
 * term's rank, or -1 on a malformed term. */
static int einsum_term(const char *s, const char *e, int ell, int *lab, int *letter_id, bool *has_ell)
{
    int r = 0;
    *has_ell = false;
    for (const char *p = s; p < e; p++) {
        if (*p == ' ') continue;
        if (*p == '.') {
            if (p + 2 >= e || p[1] != '.' || p[2] != '.' || *has_ell) return -1;
            *has_ell = true;
            for (int i = 0; i < ell; i++) {
                if (r >= 8) return -1;
                lab[r++] = i;
            }
            p += 2;
            continue;
        }
        int ch = (unsigned char)*p;
        int li = ch >= 'a' && ch <= 'z' ? ch - 'a' : ch >= 'A' && ch <= 'Z' ? 26 + ch - 'A' : -1;
        if (li < 0 || r >= 8) return -1;
        lab[r++] = -2 - li; /* letters: renumbered after the ellipsis labels below */
        letter_id[li] = 1;
    }
    return r;
}

smelt_status einsum_parse(const ir_graph *g, const ir_node *n, einsum_spec *e)
{
    const char *eq = ir_attr_string(n, "equation", NULL);
    if (!eq) return ir_node_fail(n, SMELT_ERR_MODEL, "missing attribute 'equation'");
    memset(e, 0, sizeof *e);
    e->n_in = n->n_in;
    if (e->n_in > EINSUM_MAX_IN) return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "more than %d inputs", EINSUM_MAX_IN);
    const char *arrow = strstr(eq, "->");
    const char *lhs_end = arrow ? arrow : eq + strlen(eq);
    /* The ellipsis covers the dims not named by letters; the widest input decides its rank. */
    const char *starts[EINSUM_MAX_IN + 1], *ends[EINSUM_MAX_IN + 1];
    int terms = 0;
    for (const char *p = eq;;) {
        const char *c = memchr(p, ',', (size_t)(lhs_end - p));
        if (terms >= EINSUM_MAX_IN) return ir_node_fail(n, SMELT_ERR_MODEL, "equation '%s' has too many terms", eq);
        starts[terms] = p;
        ends[terms] = c ? c : lhs_end;
        terms++;
        if (!c) break;
        p = c + 1;
    }
    if (terms != e->n_in)
        return ir_node_fail(n, SMELT_ERR_MODEL, "equation '%s' has %d input terms for %d inputs", eq, terms, e->n_in);
    int ell = 0;
    int letter_used[52] = {0};
    for (int i = 0; i < terms; i++) {
        const ir_tensor *t = ir_in(g, n, i);
        if (!t) return ir_node_fail(n, SMELT_ERR_MODEL, "input %d is missing", i);
        int letters = 0;
        bool has = false;
        for (const char *p = starts[i]; p < ends[i]; p++) {
            if (*p == '.') has = true;
            else if (*p != ' ') letters++;
        }
        int er = t->shape.rank - letters;
        if (has && er > ell) ell = er;
    }
    int tmp[8];
    for (int i = 0; i < terms; i++) {
        bool has;
        const ir_tensor *t = ir_in(g, n, i);
        int letters = 0;
        for (const char *p = starts[i]; p < ends[i]; p++)
            if (*p != '.' && *p != ' ') letters++;
        int er = t->shape.rank - letters; /* this input's own ellipsis dims, right-aligned in [0, ell) */
        int r = einsum_term(starts[i], ends[i], ell, tmp, letter_used, &has);
        if (r < 0 || (has && er < 0) || (!has && letters != t->shape.rank))
            return ir_node_fail(n, SMELT_ERR_MODEL, "equation term %d of '%s' does not match input %d of rank %d", i, eq, i,
                                t->shape.rank);
        int k = 0;
        for (int j = 0; j < r; j++) {
            if (tmp[j] >= 0 && tmp[j] < ell - er) continue; /* ellipsis dims this input lacks */
            e->lab[i][k++] = tmp[j];
        }
        e->in_rank[i] = k;
    }
    /* Renumber letters after the ellipsis labels, in alphabetical order. */
    int letter_lab[52];
    e->n_labels = ell;
    for (int li = 0; li < 52; li++) letter_lab[li] = letter_used[li] ? e->n_labels++ : -1;
    if (e->n_labels > EINSUM_MAX_LABELS) return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "too many labels");
    int count[EINSUM_MAX_LABELS] = {0};
    for (int l = 0; l < EINSUM_MAX_LABELS; l++) e->size[l] = 1;
    for (int i = 0; i < terms; i++)
        for (int d = 0; d < e->in_rank[i]; d++) {
            int l = e->lab[i][d];
            if (l < 0) l = e->lab[i][d] = letter_lab[-2 - l];
            count[l]++;
            int64_t sz = ir_in(g, n, i)->shape.dim[d];
            if (sz != 1 && e->size[l] != 1 && e->size[l] != sz)
                return ir_node_fail(n, SMELT_ERR_SHAPE, "equation '%s': dim %d of input %d has size %lld, elsewhere %lld",
                                    eq, d, i, (long long)sz, (long long)e->size[l]);
            if (sz != 1) e->size[l] = sz;
        }
    if (arrow) {
        bool has;
        int used2[52] = {0};
        int r = einsum_term(arrow + 2, eq + strlen(eq), ell, tmp, used2, &has);
        if (r < 0) return ir_node_fail(n, SMELT_ERR_MODEL, "malformed output term in '%s'", eq);
        for (int j = 0; j < r; j++) {
            int l = tmp[j] >= 0 ? tmp[j] : letter_lab[-2 - tmp[j]];
            if (l < 0) return ir_node_fail(n, SMELT_ERR_MODEL, "output label in '%s' appears in no input", eq);
            for (int m = 0; m < j; m++)
                if (e->out_lab[m] == l) return ir_node_fail(n, SMELT_ERR_MODEL, "output label repeated in '%s'", eq);
            e->out_lab[j] = l;
        }
        e->out_rank = r;
    } else {
        for (int l = 0; l < ell; l++) e->out_lab[e->out_rank++] = l;
        for (int l = ell; l < e->n_labels; l++)
            if (count[l] == 1) {
                if (e->out_rank >= 8) return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "output rank too large");
                e->out_lab[e->out_rank++] = l;
            }
    }
    return SMELT_OK;
}

smelt_status infer_Einsum(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_check_dtypes(g, n));
    TRY(infer_same_dtype(g, n, 0, n->n_in - 1));
    const ir_tensor *x = ir_in(g, n, 0);
    if (!x) return ir_node_fail(n, SMELT_ERR_MODEL, "missing input 0");
    TRY(infer_require_class(n, x, x->dtype != SMELT_BOOL, "numeric"));
    einsum_spec e;
    TRY(einsum_parse(g, n, &e));
    ir_shape out = {.rank = e.out_rank};
    for (int d = 0; d < e.out_rank; d++) out.dim[d] = e.size[e.out_lab[d]];
    return infer_set_out(g, n, 0, x->dtype, &out);
}

/* ---- Attention and RotaryEmbedding -------------------------------------- */

smelt_status attention_geom_get(const ir_graph *g, const ir_node *n, attention_geom *a)
{
    const ir_tensor *q = ir_in(g, n, 0), *k = ir_in(g, n, 1), *v = ir_in(g, n, 2);
    const ir_tensor *pk = ir_in(g, n, 4), *pv = ir_in(g, n, 5);
    char b1[160], b2[160], b3[160];
    int r = q->shape.rank;
    if ((r != 3 && r != 4) || k->shape.rank != r || v->shape.rank != r)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "Q %s, K %s and V %s must all be 3-D or all 4-D", infer_shp(&q->shape, b1),
                            infer_shp(&k->shape, b2), infer_shp(&v->shape, b3));
    memset(a, 0, sizeof *a);
    a->rank3 = r == 3;
    a->batch = q->shape.dim[0];
    if (a->rank3) {
        a->hq = ir_attr_int(n, "q_num_heads", 0);
        a->hk = ir_attr_int(n, "kv_num_heads", 0);
        if (a->hq <= 0 || a->hk <= 0)
            return ir_node_fail(n, SMELT_ERR_MODEL, "3-D inputs need positive q_num_heads and kv_num_heads");
        if (q->shape.dim[2] % a->hq || k->shape.dim[2] % a->hk || v->shape.dim[2] % a->hk)
            return ir_node_fail(n, SMELT_ERR_SHAPE, "hidden sizes of Q %s, K %s, V %s must divide by the head counts",
                                infer_shp(&q->shape, b1), infer_shp(&k->shape, b2), infer_shp(&v->shape, b3));
        a->s = q->shape.dim[1];
        a->d = q->shape.dim[2] / a->hq;
        a->l = k->shape.dim[1];
        a->dk = k->shape.dim[2] / a->hk;
        a->dv = v->shape.dim[2] / a->hk;
        a->lv = v->shape.dim[1];
    } else {
        a->hq = q->shape.dim[1];
        a->hk = k->shape.dim[1];
        a->s = q->shape.dim[2];
        a->d = q->shape.dim[3];
        a->l = k->shape.dim[2];
        a->dk = k->shape.dim[3];
        a->dv = v->shape.dim[3];
        a->lv = v->shape.dim[2];
        if (v->shape.dim[1] != a->hk)
            return ir_node_fail(n, SMELT_ERR_SHAPE, "K %s and V %s must have the same number of heads",
                                infer_shp(&k->shape, b1), infer_shp(&v->shape, b2));
    }
    if (k->shape.dim[0] != a->batch || v->shape.dim[0] != a->batch || a->dk != a->d || a->lv != a->l ||
        a->hk <= 0 || a->hq % a->hk)
        return ir_node_fail(n, SMELT_ERR_SHAPE,
                            "Q %s, K %s, V %s: batch, head size of Q and K, K/V length must agree and q heads divide by kv heads",
                            infer_shp(&q->shape, b1), infer_shp(&k->shape, b2), infer_shp(&v->shape, b3));
    if ((pk != NULL) != (pv != NULL))
        return ir_node_fail(n, SMELT_ERR_MODEL, "past_key and past_value must be given together");
    if (pk) {
        ir_shape ek = {.rank = 4, .dim = {a->batch, a->hk, pk->shape.dim[2], a->d}};
        ir_shape ev = {.rank = 4, .dim = {a->batch, a->hk, pk->shape.dim[2], a->dv}};
        if (pk->shape.rank != 4 || !ir_shape_eq(&pk->shape, &ek) || !ir_shape_eq(&pv->shape, &ev))
            return ir_node_fail(n, SMELT_ERR_SHAPE, "past_key %s / past_value %s must be [B, kv_heads, P, head_size]",
                                infer_shp(&pk->shape, b1), infer_shp(&pv->shape, b2));
        a->p = pk->shape.dim[2];
    }
    a->t = a->p + a->l;
    return SMELT_OK;
}

smelt_status infer_Attention(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    static const char *const names[] = {"Q", "K", "V"};
    for (int i = 0; i < 3; i++) TRY(infer_need_input(g, n, i, names[i]));
    TRY(infer_check_dtypes(g, n));
    const ir_tensor *q = ir_in(g, n, 0), *m = ir_in(g, n, 3), *np = ir_in(g, n, 6);
    TRY(infer_need_float(n, q));
    TRY(infer_same_dtype(g, n, 0, 2));
    TRY(infer_same_dtype(g, n, 4, 5));
    if (ir_in(g, n, 4) && ir_in(g, n, 4)->dtype != q->dtype)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "past_key must have Q's dtype");
    attention_geom a;
    TRY(attention_geom_get(g, n, &a));
    char b1[160];
    if (m) {
        if (m->dtype != SMELT_BOOL && m->dtype != q->dtype)
            return ir_node_fail(n, SMELT_ERR_SHAPE, "attn_mask must be bool or Q's dtype");
        ir_shape full = {.rank = 4, .dim = {a.batch, a.hq, a.s, m->shape.rank ? m->shape.dim[m->shape.rank - 1] : 1}}, bc;
        if (m->shape.rank < 1 || m->shape.rank > 4 || full.dim[3] > a.t || !infer_broadcast2(&full, &m->shape, &bc) ||
            !ir_shape_eq(&bc, &full))
            return ir_node_fail(n, SMELT_ERR_SHAPE, "attn_mask %s must broadcast to [B, q_heads, S, <=T] = [%lld,%lld,%lld,%lld]",
                                infer_shp(&m->shape, b1), (long long)a.batch, (long long)a.hq, (long long)a.s,
                                (long long)a.t);
    }
    if (np && (np->dtype != SMELT_I64 || np->shape.rank != 1 || np->shape.dim[0] != a.batch))
        return ir_node_fail(n, SMELT_ERR_SHAPE, "nonpad_kv_seqlen must be int64 [B]");
    int64_t mode = ir_attr_int(n, "qk_matmul_output_mode", 0);
    if (mode < 0 || mode > 3) return ir_node_fail(n, SMELT_ERR_MODEL, "qk_matmul_output_mode %lld must be 0..3", (long long)mode);
    ir_shape y = a.rank3 ? (ir_shape){.rank = 3, .dim = {a.batch, a.s, a.hq * a.dv}}
                         : (ir_shape){.rank = 4, .dim = {a.batch, a.hq, a.s, a.dv}};
    ir_shape pk = {.rank = 4, .dim = {a.batch, a.hk, a.t, a.d}}, pv = {.rank = 4, .dim = {a.batch, a.hk, a.t, a.dv}};
    ir_shape qk = {.rank = 4, .dim = {a.batch, a.hq, a.s, a.t}};
    TRY(infer_set_out(g, n, 0, q->dtype, &y));
    TRY(infer_set_out(g, n, 1, q->dtype, &pk));
    TRY(infer_set_out(g, n, 2, q->dtype, &pv));
    return infer_set_out(g, n, 3, q->dtype, &qk);
}

smelt_status infer_RotaryEmbedding(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    static const char *const names[] = {"X", "cos_cache", "sin_cache"};
    for (int i = 0; i < 3; i++) TRY(infer_need_input(g, n, i, names[i]));
    TRY(infer_check_dtypes(g, n));
    const ir_tensor *x = ir_in(g, n, 0), *cs = ir_in(g, n, 1), *sn = ir_in(g, n, 2), *pos = ir_in(g, n, 3);
    TRY(infer_need_float(n, x));
    TRY(infer_same_dtype(g, n, 0, 2));
    char b1[160], b2[160];
    int r = x->shape.rank;
    int64_t heads = ir_attr_int(n, "num_heads", 0), b, s, d;
    if (r == 4) {
        b = x->shape.dim[0];
        s = x->shape.dim[2];
        d = x->shape.dim[3];
    } else if (r == 3) {
        if (heads <= 0 || x->shape.dim[2] % heads)
            return ir_node_fail(n, SMELT_ERR_MODEL, "3-D X %s needs num_heads dividing its hidden size",
                                infer_shp(&x->shape, b1));
        b = x->shape.dim[0];
        s = x->shape.dim[1];
        d = x->shape.dim[2] / heads;
    } else {
        return ir_node_fail(n, SMELT_ERR_SHAPE, "X %s must be 3-D or 4-D", infer_shp(&x->shape, b1));
    }
    int64_t rd = ir_attr_int(n, "rotary_embedding_dim", 0);
    if (rd == 0) rd = d;
    if (rd < 2 || rd > d || rd % 2)
        return ir_node_fail(n, SMELT_ERR_MODEL, "rotary_embedding_dim %lld must be even and in [2, %lld]", (long long)rd,
                            (long long)d);
    if (!ir_shape_eq(&cs->shape, &sn->shape))
        return ir_node_fail(n, SMELT_ERR_SHAPE, "cos_cache %s and sin_cache %s must have one shape",
                            infer_shp(&cs->shape, b1), infer_shp(&sn->shape, b2));
    bool ok;
    if (pos) {
        TRY(infer_need_int(n, pos));
        ok = pos->shape.rank == 2 && pos->shape.dim[0] == b && pos->shape.dim[1] == s && cs->shape.rank == 2 &&
             cs->shape.dim[1] == rd / 2 && cs->shape.dim[0] > 0;
    } else {
        ok = cs->shape.rank == 3 && cs->shape.dim[0] == b && cs->shape.dim[1] == s && cs->shape.dim[2] == rd / 2;
    }
    if (!ok)
        return ir_node_fail(n, SMELT_ERR_SHAPE,
                            "cos_cache %s must be [max_pos, %lld] with position_ids [B, S], or [B, S, %lld] without",
                            infer_shp(&cs->shape, b1), (long long)rd / 2, (long long)rd / 2);
    return infer_set_out(g, n, 0, x->dtype, &x->shape);
}
