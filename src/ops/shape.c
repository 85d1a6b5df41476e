/*
 * shape.c — shape rules of the elementwise, broadcast, injective and
 * shape ops (the rows of ir/ops_data.h).
 *
 * requires: input tensors with dtypes and shapes; the inputs an op's row marks
 *           value_in carry constant data.
 * guarantees: every present output gets a supported dtype and a shape; an
 *             input that breaks an op's rule fails naming the node and the rule.
 *             Shape, Size and Constant also write their output's value.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/shape.h"

bool dtype_supported(smelt_dtype dt)
{
    switch (dt) {
    case SMELT_F32: case SMELT_F64: case SMELT_BOOL:
    case SMELT_I8: case SMELT_I16: case SMELT_I32: case SMELT_I64:
    case SMELT_U8: case SMELT_U16: case SMELT_U32: case SMELT_U64:
        return true;
    default:
        return false;
    }
}

const char *infer_dtype_str(smelt_dtype dt)
{
    /* ONNX types smelt cannot hold still deserve their name in a message. */
    switch ((int)dt) {
    case 16: return "bfloat16";
    case 14: return "complex64";
    case 15: return "complex128";
    case 17: case 18: case 19: case 20: case 23: case 24: case 25: return "float8/float4";
    case 21: return "uint4";
    case 22: return "int4";
    default: return smelt_dtype_name(dt);
    }
}

bool infer_is_float(smelt_dtype dt) { return dt == SMELT_F32 || dt == SMELT_F64; }
bool infer_is_int(smelt_dtype dt) { return dtype_supported(dt) && !infer_is_float(dt) && dt != SMELT_BOOL; }

smelt_status infer_check_dtypes(const ir_graph *g, const ir_node *n)
{
    for (int i = 0; i < n->n_in; i++) {
        const ir_tensor *t = ir_in(g, n, i);
        if (t && !dtype_supported(t->dtype))
            return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "input '%s' has dtype %s, which smelt does not compute",
                                t->name, infer_dtype_str(t->dtype));
    }
    return SMELT_OK;
}

smelt_status infer_set_out(ir_graph *g, const ir_node *n, int i, smelt_dtype dt, const ir_shape *s)
{
    if (i >= n->n_out || n->out[i] < 0) return SMELT_OK;
    if (!dtype_supported(dt))
        return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "output dtype %s is not supported", infer_dtype_str(dt));
    ir_tensor *t = ir_out(g, n, i);
    t->dtype = dt;
    t->shape = *s;
    return SMELT_OK;
}

bool infer_shape_known(const ir_shape *s)
{
    for (int i = 0; i < s->rank; i++)
        if (s->dim[i] < 0) return false;
    return true;
}

const char *infer_shp(const ir_shape *s, char *buf) { return ir_shape_str(s, buf, 160); }

/* The constant tensor of value input i, or NULL with a diagnostic recorded. */
const ir_tensor *infer_value_input(const ir_graph *g, const ir_node *n, int i, const char *what, smelt_status *st)
{
    const ir_tensor *t = ir_in(g, n, i);
    if (!t) return NULL;
    if (!t->data) {
        *st = ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "input '%s' (%s) must be known at compile time", t->name, what);
        return NULL;
    }
    return t;
}

/* Read a constant 1-D (or scalar) integer list from value input i. Returns the
 * count, -1 when the input is absent, -2 on failure (diagnostic recorded). */
int infer_read_int_input(const ir_graph *g, const ir_node *n, int i, const char *what, int64_t *vals, int cap,
                          smelt_status *st)
{
    *st = SMELT_OK;
    const ir_tensor *t = infer_value_input(g, n, i, what, st);
    if (*st) return -2;
    if (!t) return -1;
    if (!infer_is_int(t->dtype)) {
        *st = ir_node_fail(n, SMELT_ERR_SHAPE, "input '%s' (%s) must be an integer tensor, got %s", t->name, what,
                           infer_dtype_str(t->dtype));
        return -2;
    }
    if (t->shape.rank > 1) {
        *st = ir_node_fail(n, SMELT_ERR_SHAPE, "input '%s' (%s) must be 1-D, got rank %d", t->name, what, t->shape.rank);
        return -2;
    }
    int64_t cnt = ir_tensor_numel(t);
    if (cnt > cap) {
        *st = ir_node_fail(n, SMELT_ERR_SHAPE, "input '%s' (%s) has %lld values, more than the %d supported", t->name,
                           what, (long long)cnt, cap);
        return -2;
    }
    for (int64_t k = 0; k < cnt; k++) vals[k] = ir_const_int(t, k);
    return (int)cnt;
}

/* An integer list given by attribute `attr` (older opsets) or by input `in`. */
int infer_read_ints(const ir_graph *g, const ir_node *n, const char *attr, int in, const char *what, int64_t *vals,
                     int cap, smelt_status *st)
{
    const int64_t *a;
    int cnt = attr ? ir_attr_ints(n, attr, &a) : -1;
    *st = SMELT_OK;
    if (cnt >= 0) {
        if (cnt > cap) {
            *st = ir_node_fail(n, SMELT_ERR_SHAPE, "attribute '%s' has %d values, more than the %d supported", attr, cnt, cap);
            return -2;
        }
        memcpy(vals, a, sizeof(int64_t) * (size_t)cnt);
        return cnt;
    }
    return in >= 0 ? infer_read_int_input(g, n, in, what, vals, cap, st) : -1;
}

/* Normalize axis `a` of a rank-`r` tensor (negative counts from the end). */
smelt_status infer_norm_axis(const ir_node *n, int64_t a, int r, const char *what, int *out)
{
    *out = 0;
    if (a < -r || a >= r)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "%s %lld is out of range for rank %d (valid: %d..%d)", what, (long long)a,
                            r, -r, r - 1);
    *out = (int)(a < 0 ? a + r : a);
    return SMELT_OK;
}

/* Numpy broadcasting over shapes, where -1 (unknown) matches anything. */
bool infer_broadcast2(const ir_shape *a, const ir_shape *b, ir_shape *out)
{
    int r = a->rank > b->rank ? a->rank : b->rank;
    ir_shape o = {.rank = r};
    for (int i = 0; i < r; i++) {
        int ia = i - (r - a->rank), ib = i - (r - b->rank);
        int64_t da = ia >= 0 ? a->dim[ia] : 1, db = ib >= 0 ? b->dim[ib] : 1;
        if (da == db || db == 1) o.dim[i] = da;
        else if (da == 1) o.dim[i] = db;
        else if (da < 0) o.dim[i] = db;
        else if (db < 0) o.dim[i] = da;
        else return false;
    }
    *out = o;
    return true;
}

smelt_status infer_broadcast_inputs(const ir_graph *g, const ir_node *n, int first, ir_shape *out)
{
    char b1[160], b2[160];
    ir_shape s = {.rank = 0};
    for (int i = first; i < n->n_in; i++) {
        const ir_tensor *t = ir_in(g, n, i);
        if (!t) continue;
        ir_shape r;
        if (!infer_broadcast2(&s, &t->shape, &r))
            return ir_node_fail(n, SMELT_ERR_SHAPE, "cannot broadcast %s with input '%s' of shape %s", infer_shp(&s, b1),
                                t->name, infer_shp(&t->shape, b2));
        s = r;
    }
    *out = s;
    return SMELT_OK;
}

smelt_status infer_same_dtype(const ir_graph *g, const ir_node *n, int first, int last)
{
    const ir_tensor *a = ir_in(g, n, first);
    for (int i = first + 1; i <= last && i < n->n_in; i++) {
        const ir_tensor *b = ir_in(g, n, i);
        if (a && b && a->dtype != b->dtype)
            return ir_node_fail(n, SMELT_ERR_SHAPE, "inputs '%s' (%s) and '%s' (%s) must have the same dtype", a->name,
                                infer_dtype_str(a->dtype), b->name, infer_dtype_str(b->dtype));
    }
    return SMELT_OK;
}

smelt_status infer_require_class(const ir_node *n, const ir_tensor *t, bool ok, const char *cls)
{
    if (ok) return SMELT_OK;
    return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "input '%s' has dtype %s, but the op takes %s tensors", t->name,
                        infer_dtype_str(t->dtype), cls);
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
        const ir_attr *a = ir_attr_find(n, "to");
        if (!a || a->type != IR_ATTR_INT) return ir_node_fail(n, SMELT_ERR_MODEL, "attribute 'to' is required");
        to = (smelt_dtype)a->i;
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

smelt_status infer_Dropout(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_check_dtypes(g, n));
    const ir_tensor *x = ir_in(g, n, 0), *train = ir_in(g, n, 2);
    TRY(infer_require_class(n, x, infer_is_float(x->dtype), "float"));
    if (train) {
        if (!train->data)
            return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "input '%s' (training_mode) must be known at compile time", train->name);
        if (ir_const_int(train, 0))
            return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "training mode (random dropout) is not supported");
    }
    TRY(infer_set_out(g, n, 0, x->dtype, &x->shape));
    return infer_set_out(g, n, 1, SMELT_BOOL, &x->shape);
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
    smelt_dtype dt = SMELT_F32;
    const ir_attr *a = ir_attr_find(n, "value");
    if (a) {
        if (a->type != IR_ATTR_TENSOR) return ir_node_fail(n, SMELT_ERR_MODEL, "attribute 'value' must be a tensor");
        const ir_tensor *v = &g->tensors[a->tensor];
        if (!dtype_supported(v->dtype))
            return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "value of dtype %s is not supported", infer_dtype_str(v->dtype));
        if (ir_tensor_numel(v) != 1 || !v->data)
            return ir_node_fail(n, SMELT_ERR_MODEL, "attribute 'value' must hold one element, got %lld",
                                (long long)ir_tensor_numel(v));
        dt = v->dtype;
    }
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
    int r = x->shape.rank;
    int64_t start = ir_attr_int(n, "start", 0), end = ir_attr_int(n, "end", r);
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

/* ---- checks shared by the shape rules of the op families ---------------------- */


bool infer_dim_eq(int64_t a, int64_t b) { return a < 0 || b < 0 || a == b; }

/* Dtype of input i must be in `mask`; float16 and friends are unsupported,
 * other mismatches are model errors. */
smelt_status infer_need_dtype(const ir_node *n, const ir_tensor *t, const char *what, unsigned mask)
{
    if ((unsigned)t->dtype < 32 && (mask & (1u << t->dtype))) return SMELT_OK;
    char allowed[256] = "";
    size_t len = 0;
    for (int d = 0; d < 32; d++)
        if (mask & (1u << d))
            len += (size_t)snprintf(allowed + len, sizeof allowed - len, "%s%s", len ? ", " : "",
                                    smelt_dtype_name((smelt_dtype)d));
    return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "%s '%s' has dtype %s; supported: %s", what, t->name,
                        smelt_dtype_name(t->dtype), allowed);
}

smelt_status infer_need_same_dtype(const ir_node *n, const ir_tensor *a, const ir_tensor *b)
{
    if (a->dtype == b->dtype) return SMELT_OK;
    return ir_node_fail(n, SMELT_ERR_SHAPE, "inputs '%s' (%s) and '%s' (%s) must have the same dtype", a->name,
                        smelt_dtype_name(a->dtype), b->name, smelt_dtype_name(b->dtype));
}

smelt_status infer_need_input(const ir_graph *g, const ir_node *n, int i, const char *what)
{
    if (ir_in(g, n, i)) return SMELT_OK;
    return ir_node_fail(n, SMELT_ERR_MODEL, "missing required input %d (%s)", i, what);
}

void infer_put_out(ir_graph *g, const ir_node *n, int i, smelt_dtype dt, const ir_shape *s)
{
    if (i >= n->n_out || n->out[i] < 0) return;
    ir_tensor *t = ir_out(g, n, i);
    t->dtype = dt;
    t->shape = *s;
}

bool infer_has_out(const ir_node *n, int i) { return i < n->n_out && n->out[i] >= 0; }

/* Normalize axis `a` of a rank-r tensor into [0, r). */
smelt_status infer_axis(const ir_node *n, const char *what, int64_t a, int r, int *out)
{
    if (a < -r || a >= r || r == 0)
        return ir_node_fail(n, SMELT_ERR_MODEL, "%s %lld is out of range for rank %d", what, (long long)a, r);
    *out = (int)(a < 0 ? a + r : a);
    return SMELT_OK;
}

smelt_status infer_need_float(const ir_node *n, const ir_tensor *t)
{
    return infer_require_class(n, t, infer_is_float(t->dtype), "float32/float64");
}

smelt_status infer_need_int(const ir_node *n, const ir_tensor *t)
{
    return infer_require_class(n, t, infer_is_int(t->dtype), "integer");
}

bool infer_is_one_value(const ir_tensor *t) { return t->shape.rank <= 1 && ir_tensor_numel(t) == 1; }
