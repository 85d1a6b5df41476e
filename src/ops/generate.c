/*
 * generate.c — tensors computed from their indices or from the graph:
 * Constant, ConstantOfShape, Shape, Size, Range, OneHot, EyeLike and the
 * spectral windows: shape rules (Shape, Size and Constant write their value
 * there) and index maps.
 *
 * requires: shapes inferred by the rules here (parameter shapes checked).
 * guarantees: every index read lies inside its input whatever the data:
 *             padded borders read a clamped index and select the fill value.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"
#include "lower/lower.h"
#include "ops/generate.h"
#include "ops/shape.h"
static const ir_shape *out_shape(const lower_ctx *c, int o) { return &c->g->tensors[c->n->out[o]].shape; }
static smelt_dtype out_type(const lower_ctx *c, int o) { return c->g->tensors[c->n->out[o]].dtype; }
static kir_val bin(kir_kernel *K, kir_op op, kir_val a, kir_val b) { return kir_binary(K, op, a, b); }

smelt_status parse_generate(const ir_graph *g, const ir_node *n, void *params)
{
    generate_params *p = params;
    p->axis = ir_attr_int(n, "axis", -1);
    p->k = ir_attr_int(n, "k", 0);
    p->has_dtype = ir_attr_find(n, "dtype") != NULL;
    p->dtype = (smelt_dtype)ir_attr_int(n, n->op == OP_EyeLike ? "dtype" : "output_datatype", SMELT_F32);
    p->periodic = ir_attr_int(n, "periodic", 1) != 0;
    p->value = -1;
    const ir_attr *a = ir_attr_find(n, "value");
    if (n->op == OP_ConstantOfShape && a) {
        if (a->type != IR_ATTR_TENSOR) return ir_node_fail(n, SMELT_ERR_MODEL, "attribute 'value' must be a tensor");
        const ir_tensor *v = &g->tensors[a->tensor];
        if (!dtype_supported(v->dtype))
            return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "value of dtype %s is not supported", infer_dtype_str(v->dtype));
        if (ir_tensor_numel(v) != 1 || !v->data)
            return ir_node_fail(n, SMELT_ERR_MODEL, "attribute 'value' must hold one element, got %lld",
                                (long long)ir_tensor_numel(v));
        p->value = a->tensor;
    }
    p->start = ir_attr_int(n, "start", 0);
    p->has_end = ir_attr_find(n, "end") != NULL;
    p->end = ir_attr_int(n, "end", 0);
    return SMELT_OK;
}

/* n's generate_params (ir_node_params_get). */
static smelt_status generate_params_of(const ir_graph *g, const ir_node *n, generate_params *scratch,
                                       const generate_params **p)
{
    const void *v;
    TRY(ir_node_params_get(g, n, scratch, &v));
    *p = v;
    return SMELT_OK;
}

kir_val elem_OneHot(lower_ctx *c, int out, const kir_val *idx)
{
    kir_kernel *K = c->k;
    int r = out_shape(c, out)->rank;
    generate_params scratch;
    const generate_params *p;
    if (generate_params_of(c->g, c->n, &scratch, &p) != SMELT_OK) return 0; /* shape inference parsed them */
    int64_t a = p->axis;
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
    generate_params scratch;
    const generate_params *p;
    if (generate_params_of(c->g, c->n, &scratch, &p) != SMELT_OK) return 0; /* shape inference parsed them */
    kir_val diag = bin(K, KIR_EQ, bin(K, KIR_SUB, idx[1], idx[0]), kir_idx(K, p->k));
    return kir_select(K, diag, kir_const_f(K, t, 1), kir_const_f(K, t, 0));
}

kir_val elem_Window(lower_ctx *c, int out, const kir_val *idx)
{
    kir_kernel *K = c->k;
    generate_params scratch;
    const generate_params *p;
    if (generate_params_of(c->g, c->n, &scratch, &p) != SMELT_OK) return 0; /* shape inference parsed them */
    int64_t size = ir_const_int(ir_in(c->g, c->n, 0), 0);
    double len = (double)(p->periodic ? size : size - 1);
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

smelt_status infer_Range(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_check_dtypes(g, n));
    TRY(infer_same_dtype(g, n, 0, 2));
    smelt_status st = SMELT_OK;
    const char *names[3] = {"start", "limit", "delta"};
    const ir_tensor *t[3];
    for (int i = 0; i < 3; i++) {
        t[i] = infer_value_input(g, n, i, names[i], &st);
        if (st) return st;
        if (!t[i]) return ir_node_fail(n, SMELT_ERR_MODEL, "input '%s' is required", names[i]);
        if (ir_tensor_numel(t[i]) != 1)
            return ir_node_fail(n, SMELT_ERR_SHAPE, "input '%s' (%s) must be a scalar", t[i]->name, names[i]);
    }
    smelt_dtype dt = t[0]->dtype;
    TRY(infer_require_class(n, t[0], dt != SMELT_BOOL, "numeric"));
    int64_t len;
    if (infer_is_float(dt)) {
        double s = ir_const_double(t[0], 0), l = ir_const_double(t[1], 0), d = ir_const_double(t[2], 0);
        if (d == 0 || !isfinite(s) || !isfinite(l) || !isfinite(d))
            return ir_node_fail(n, SMELT_ERR_SHAPE, "range needs finite start/limit and a nonzero delta");
        double c = ceil((l - s) / d);
        if (c > (double)INT32_MAX) return ir_node_fail(n, SMELT_ERR_SHAPE, "range of %g elements is too long", c);
        len = c > 0 ? (int64_t)c : 0;
    } else {
        int64_t s = ir_const_int(t[0], 0), l = ir_const_int(t[1], 0), d = ir_const_int(t[2], 0);
        if (d == 0) return ir_node_fail(n, SMELT_ERR_SHAPE, "range delta is 0");
        double c = ceil(((double)l - (double)s) / (double)d);
        if (c > (double)INT32_MAX) return ir_node_fail(n, SMELT_ERR_SHAPE, "range of %g elements is too long", c);
        len = c > 0 ? (int64_t)c : 0;
    }
    ir_shape sh = {.rank = 1, .dim = {len}};
    return infer_set_out(g, n, 0, dt, &sh);
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
    generate_params scratch;
    const generate_params *p;
    TRY(generate_params_of(g, n, &scratch, &p));
    TRY(infer_norm_axis(n, p->axis, q + 1, "axis", &axis));
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
    generate_params scratch;
    const generate_params *p;
    TRY(generate_params_of(g, n, &scratch, &p));
    smelt_dtype dt = p->has_dtype ? p->dtype : x->dtype;
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
    generate_params scratch;
    const generate_params *p;
    TRY(generate_params_of(g, n, &scratch, &p));
    smelt_dtype dt = p->dtype;
    if (!dtype_supported(dt) || dt == SMELT_BOOL)
        return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "output_datatype %s is not supported", infer_dtype_str(dt));
    ir_shape out = {.rank = 1, .dim = {len}};
    return infer_set_out(g, n, 0, dt, &out);
}

kir_val elem_Range(lower_ctx *c, int out, const kir_val *idx)
{
    kir_kernel *k = c->k;
    smelt_dtype t = out_type(c, out);
    const ir_tensor *start = ir_in(c->g, c->n, 0), *delta = ir_in(c->g, c->n, 2);
    kir_val s, d;
    if (kir_is_float(t)) {
        s = kir_const_f(k, t, ir_const_double(start, 0));
        d = kir_const_f(k, t, ir_const_double(delta, 0));
    } else {
        s = kir_const_i(k, t, ir_const_int(start, 0));
        d = kir_const_i(k, t, ir_const_int(delta, 0));
    }
    return kir_add(k, s, kir_mul(k, kir_cast(k, t, idx[0]), d));
}

kir_val elem_ConstantOfShape(lower_ctx *c, int out, const kir_val *idx)
{
    (void)idx;
    smelt_dtype t = out_type(c, out);
    generate_params scratch;
    const generate_params *p;
    if (generate_params_of(c->g, c->n, &scratch, &p) != SMELT_OK) return 0; /* shape inference parsed them */
    if (p->value < 0) return kir_const_f(c->k, t, 0.0);
    const ir_tensor *v = &c->g->tensors[p->value];
    if (kir_is_float(t)) return kir_const_f(c->k, t, ir_const_double(v, 0));
    return kir_const_i(c->k, t, ir_const_int(v, 0));
}

/* ---- constants and shapes ------------------------------------------------ */

smelt_status infer_Constant(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    ir_shape s = {.rank = 0};
    const ir_attr *a;
    if ((a = ir_attr_find(n, "value")) && a->type == IR_ATTR_TENSOR) {
        const ir_tensor *src = &g->tensors[a->tensor];
        if (!dtype_supported(src->dtype))
            return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "constant of dtype %s is not supported", infer_dtype_str(src->dtype));
        if (!src->data) return ir_node_fail(n, SMELT_ERR_MODEL, "attribute 'value' has no data");
        smelt_dtype dt = src->dtype;
        ir_shape ss = src->shape;
        void *data = src->data;
        TRY(infer_set_out(g, n, 0, dt, &ss));
        void *d = ir_tensor_alloc_data(g, n->out[0]);
        if (!d) return diag_fail(SMELT_ERR_NOMEM, "out of memory folding Constant '%s'", n->name);
        memcpy(d, data, (size_t)ir_shape_numel(&ss) * smelt_dtype_size(dt));
        return SMELT_OK;
    }
    if ((a = ir_attr_find(n, "value_float")) || (a = ir_attr_find(n, "value_int"))) {
        bool f = strcmp(a->name, "value_float") == 0;
        TRY(infer_set_out(g, n, 0, f ? SMELT_F32 : SMELT_I64, &s));
        void *d = ir_tensor_alloc_data(g, n->out[0]);
        if (!d) return diag_fail(SMELT_ERR_NOMEM, "out of memory folding Constant '%s'", n->name);
        if (f) *(float *)d = a->f;
        else *(int64_t *)d = a->i;
        return SMELT_OK;
    }
    if ((a = ir_attr_find(n, "value_floats")) || (a = ir_attr_find(n, "value_ints"))) {
        bool f = strcmp(a->name, "value_floats") == 0;
        s.rank = 1;
        s.dim[0] = a->n;
        TRY(infer_set_out(g, n, 0, f ? SMELT_F32 : SMELT_I64, &s));
        void *d = ir_tensor_alloc_data(g, n->out[0]);
        if (!d) return diag_fail(SMELT_ERR_NOMEM, "out of memory folding Constant '%s'", n->name);
        for (int i = 0; i < a->n; i++) {
            if (f) ((float *)d)[i] = a->floats ? a->floats[i] : 0.0f;
            else ((int64_t *)d)[i] = a->ints ? a->ints[i] : 0;
        }
        return SMELT_OK;
    }
    if (n->n_attr > 0)
        return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "constant given by attribute '%s' is not supported", n->attr[0].name);
    return ir_node_fail(n, SMELT_ERR_MODEL, "no value attribute");
}

smelt_status infer_ConstantOfShape(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    smelt_status st;
    int64_t dims[IR_MAX_RANK + 1];
    int cnt = infer_read_int_input(g, n, 0, "shape", dims, IR_MAX_RANK, &st);
    if (cnt < 0) return st ? st : ir_node_fail(n, SMELT_ERR_MODEL, "input 'shape' is required");
    ir_shape s = {.rank = cnt};
    for (int i = 0; i < cnt; i++) {
        if (dims[i] < 0)
            return ir_node_fail(n, SMELT_ERR_SHAPE, "shape dimension %d is negative (%lld)", i, (long long)dims[i]);
        s.dim[i] = dims[i];
    }
    generate_params scratch;
    const generate_params *p;
    TRY(generate_params_of(g, n, &scratch, &p));
    smelt_dtype dt = p->value < 0 ? SMELT_F32 : g->tensors[p->value].dtype;
    return infer_set_out(g, n, 0, dt, &s);
}

smelt_status infer_Shape(ir_graph *g, int node)
{
    char b[160];
    const ir_node *n = &g->nodes[node];
    const ir_tensor *x = ir_in(g, n, 0);
    if (!infer_shape_known(&x->shape))
        return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "shape %s of input '%s' is not known at compile time",
                            infer_shp(&x->shape, b), x->name);
    generate_params scratch;
    const generate_params *p;
    TRY(generate_params_of(g, n, &scratch, &p));
    int r = x->shape.rank;
    int64_t start = p->start, end = p->has_end ? p->end : r;
    if (start < 0) start += r;
    if (end < 0) end += r;
    start = start < 0 ? 0 : start > r ? r : start;
    end = end < 0 ? 0 : end > r ? r : end;
    int64_t len = end > start ? end - start : 0;
    int64_t dims[IR_MAX_RANK];
    memcpy(dims, x->shape.dim, sizeof dims);
    ir_shape s = {.rank = 1, .dim = {len}};
    TRY(infer_set_out(g, n, 0, SMELT_I64, &s));
    int64_t *d = ir_tensor_alloc_data(g, n->out[0]);
    if (!d) return diag_fail(SMELT_ERR_NOMEM, "out of memory folding Shape '%s'", n->name);
    for (int64_t i = 0; i < len; i++) d[i] = dims[start + i];
    return SMELT_OK;
}

smelt_status infer_Size(ir_graph *g, int node)
{
    char b[160];
    const ir_node *n = &g->nodes[node];
    const ir_tensor *x = ir_in(g, n, 0);
    if (!infer_shape_known(&x->shape))
        return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "shape %s of input '%s' is not known at compile time",
                            infer_shp(&x->shape, b), x->name);
    int64_t numel = ir_tensor_numel(x);
    ir_shape s = {.rank = 0};
    TRY(infer_set_out(g, n, 0, SMELT_I64, &s));
    int64_t *d = ir_tensor_alloc_data(g, n->out[0]);
    if (!d) return diag_fail(SMELT_ERR_NOMEM, "out of memory folding Size '%s'", n->name);
    *d = numel;
    return SMELT_OK;
}
