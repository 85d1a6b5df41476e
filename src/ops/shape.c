/*
 * shape.c — the shape-rule toolkit (ops/shape.h): dtype classes, constant
 * inputs read as lists, axes, broadcasting and the checks every family's
 * shape rules are written with.
 *
 * requires: input tensors with dtypes and shapes; the inputs an op's row marks
 *           value_in carry constant data.
 * guarantees: every check that fails records a diagnostic naming the node and
 *             the rule, and returns its status.
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
    case SMELT_U8: case SMELT_U16: case SMELT_U32: case SMELT_U64: case SMELT_F16: case SMELT_BF16:
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

bool infer_is_float(smelt_dtype dt)
{
    return dt == SMELT_F32 || dt == SMELT_F64 || dt == SMELT_F16 || dt == SMELT_BF16;
}
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

/* An integer list given as an attribute (older opsets; a, acnt from the
 * op's params, acnt -1 when absent) or by input `in`. */
int infer_read_list(const ir_graph *g, const ir_node *n, const int64_t *a, int acnt, int in, const char *what,
                    int64_t *vals, int cap, smelt_status *st)
{
    *st = SMELT_OK;
    if (acnt >= 0) {
        if (acnt > cap) {
            *st = ir_node_fail(n, SMELT_ERR_SHAPE, "attribute '%s' has %d values, more than the %d supported", what, acnt,
                               cap);
            return -2;
        }
        if (acnt) memcpy(vals, a, sizeof(int64_t) * (size_t)acnt);
        return acnt;
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
