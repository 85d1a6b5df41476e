/*
 * gather_scatter.c — Gather, GatherElements and GatherND (index maps) and
 * ScatterElements, Scatter and ScatterND (whole kernels: their writes depend
 * on data): shape rules and lowerings.
 *
 * requires: shapes inferred by the rules here.
 * guarantees: a scatter is three kernels — copy data into a scratch buffer,
 *             apply the updates in order in one workgroup (later updates win,
 *             as the spec's loop does), copy the scratch to the output — so
 *             each output element is stored exactly once and an epilogue
 *             fused into lower_store sees final values. Every index read
 *             from a tensor is wrapped (negative) and clamped into range;
 *             constant indices out of range are an error naming the node.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"
#include "lower/lower.h"
#include "ops/gather_scatter.h"
#include "ops/shape.h"

static kir_val bin(kir_kernel *K, kir_op op, kir_val a, kir_val b) { return kir_binary(K, op, a, b); }

static smelt_status done(lower_ctx *c)
{
    return c->k ? SMELT_OK : ir_node_fail(c->n, SMELT_ERR_NOMEM, "out of memory");
}

/* Negative indices count from the end; then clamp into [0, dim). */
static kir_val wrap_clamp(kir_kernel *K, kir_val v, int64_t dim)
{
    v = kir_cast(K, SMELT_I64, v);
    v = kir_select(K, bin(K, KIR_LT, v, kir_idx(K, 0)), kir_add(K, v, kir_idx(K, dim)), v);
    return lower_clamp(K, v, dim);
}

/* ---- ScatterElements, Scatter, ScatterND --------------------------------- */

smelt_status parse_gather(const ir_graph *g, const ir_node *n, void *params)
{
    (void)g;
    gather_params *p = params;
    p->axis = ir_attr_int(n, "axis", 0);
    p->batch_dims = ir_attr_int(n, "batch_dims", 0);
    const char *red = ir_attr_string(n, "reduction", "none");
    if (!strcmp(red, "none")) p->reduction = SC_NONE;
    else if (!strcmp(red, "add")) p->reduction = SC_ADD;
    else if (!strcmp(red, "mul")) p->reduction = SC_MUL;
    else if (!strcmp(red, "max")) p->reduction = SC_MAX;
    else if (!strcmp(red, "min")) p->reduction = SC_MIN;
    else return ir_node_fail(n, SMELT_ERR_MODEL, "reduction '%.40s' must be none, add, mul, max or min", red);
    return SMELT_OK;
}

/* n's gather_params (ir_node_params_get). */
static smelt_status gather_params_of(const ir_graph *g, const ir_node *n, gather_params *scratch, const gather_params **p)
{
    const void *v;
    TRY(ir_node_params_get(g, n, scratch, &v));
    *p = v;
    return SMELT_OK;
}

typedef struct sc_job {
    int scratch;
    const ir_shape *data;
    scatter_reduction red;
    int axis; /* ScatterElements */
} sc_job;

static void sc_copy_in(lower_ctx *c, const kir_val *idx, void *user)
{
    const sc_job *j = user;
    lower_scratch_store(c, j->scratch, lower_linear(c->k, j->data, idx), lower_load(c, 0, idx));
}

static void sc_copy_out(lower_ctx *c, const kir_val *idx, void *user)
{
    const sc_job *j = user;
    lower_store(c, 0, idx, lower_scratch_load(c, j->scratch, lower_linear(c->k, j->data, idx)));
}

static void sc_apply(lower_ctx *c, const sc_job *j, const kir_val *didx, kir_val u)
{
    kir_kernel *K = c->k;
    kir_val lin = lower_linear(K, j->data, didx), v = u;
    bool b = kir_v(K, u)->type == SMELT_BOOL;
    if (j->red != SC_NONE) {
        kir_val old = lower_scratch_load(c, j->scratch, lin);
        switch (j->red) {
        case SC_ADD: v = bin(K, b ? KIR_OR : KIR_ADD, old, u); break;
        case SC_MUL: v = bin(K, b ? KIR_AND : KIR_MUL, old, u); break;
        case SC_MAX: v = bin(K, b ? KIR_OR : KIR_MAX, old, u); break;
        default: v = bin(K, b ? KIR_AND : KIR_MIN, old, u); break;
        }
    }
    lower_scratch_store(c, j->scratch, lin, v);
}

/* Loops over every index of shape s; returns the loops opened. */
static int all_loops(kir_kernel *K, const ir_shape *s, kir_val *idx)
{
    int open = 0;
    for (int d = 0; d < s->rank; d++) {
        if (s->dim[d] == 1) {
            idx[d] = kir_idx(K, 0);
        } else {
            idx[d] = kir_loop_begin(K, kir_idx(K, 0), kir_idx(K, s->dim[d]), kir_idx(K, 1));
            open++;
        }
    }
    return open;
}

static void se_body(lower_ctx *c, const kir_val *unused, void *user)
{
    (void)unused;
    const sc_job *j = user;
    kir_kernel *K = c->k;
    kir_val idx[IR_MAX_RANK], didx[IR_MAX_RANK];
    int open = all_loops(K, &ir_in(c->g, c->n, 1)->shape, idx);
    for (int d = 0; d < j->data->rank; d++) didx[d] = idx[d];
    didx[j->axis] = wrap_clamp(K, lower_load(c, 1, idx), j->data->dim[j->axis]);
    sc_apply(c, j, didx, lower_load(c, 2, idx));
    while (open--) kir_loop_end(K);
}

static void snd_body(lower_ctx *c, const kir_val *unused, void *user)
{
    (void)unused;
    const sc_job *j = user;
    kir_kernel *K = c->k;
    const ir_shape *is = &ir_in(c->g, c->n, 1)->shape;
    int q = is->rank, r = j->data->rank;
    int64_t kk = is->dim[q - 1];
    kir_val uidx[IR_MAX_RANK], iidx[IR_MAX_RANK], didx[IR_MAX_RANK];
    int open = all_loops(K, &ir_in(c->g, c->n, 2)->shape, uidx);
    for (int d = 0; d < q - 1; d++) iidx[d] = uidx[d];
    for (int m = 0; m < kk; m++) {
        iidx[q - 1] = kir_idx(K, m);
        didx[m] = wrap_clamp(K, lower_load(c, 1, iidx), j->data->dim[m]);
    }
    for (int d = (int)kk; d < r; d++) didx[d] = uidx[q - 1 + d - kk];
    sc_apply(c, j, didx, lower_load(c, 2, uidx));
    while (open--) kir_loop_end(K);
}

static smelt_status scatter_lower(lower_ctx *c, lower_body_fn body, int axis)
{
    const ir_tensor *x = ir_in(c->g, c->n, 0);
    gather_params scratch;
    const gather_params *p;
    TRY(gather_params_of(c->g, c->n, &scratch, &p));
    sc_job j = {0, &x->shape, p->reduction, axis};
    if (ir_tensor_numel(x) == 0) return SMELT_OK;
    j.scratch = lower_scratch(c, x->dtype, ir_tensor_numel(x));
    if (j.scratch < 0) return ir_node_fail(c->n, SMELT_ERR_NOMEM, "out of memory");
    lower_parallel_for(c, &x->shape, 1, sc_copy_in, &j);
    if (!c->k) return done(c);
    ir_shape scalar = {.rank = 0};
    lower_parallel_for(c, &scalar, 1, body, &j);
    if (!c->k) return done(c);
    lower_parallel_for(c, &x->shape, 1, sc_copy_out, &j);
    return done(c);
}

smelt_status lower_ScatterElements(lower_ctx *c)
{
    int r = ir_in(c->g, c->n, 0)->shape.rank;
    gather_params scratch;
    const gather_params *p;
    TRY(gather_params_of(c->g, c->n, &scratch, &p));
    int64_t a = p->axis;
    return scatter_lower(c, se_body, (int)(a < 0 ? a + r : a));
}

smelt_status lower_ScatterND(lower_ctx *c) { return scatter_lower(c, snd_body, 0); }

/* Constant indices must be in range: index i of `ind` addresses a dim of
 * `dims[i % k]` and must lie in [-dim, dim). (Indices computed at run time are
 * wrapped and clamped by the kernel instead.) */
static smelt_status check_const_indices(const ir_node *n, const ir_tensor *ind, const int64_t *dims, int64_t k,
                                        int first_axis)
{
    if (!ind->data || k < 1) return SMELT_OK;
    int64_t count = ir_tensor_numel(ind);
    for (int64_t i = 0; i < count; i++) {
        int64_t v = ir_const_int(ind, i), dim = dims[i % k];
        if (v < -dim || v >= dim)
            return ir_node_fail(n, SMELT_ERR_SHAPE, "constant index %lld (element %lld of '%s') is out of range for axis %lld of size %lld",
                                (long long)v, (long long)i, ind->name, (long long)(first_axis + i % k), (long long)dim);
    }
    return SMELT_OK;
}

smelt_status infer_Gather(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_check_dtypes(g, n));
    const ir_tensor *x = ir_in(g, n, 0), *ind = ir_in(g, n, 1);
    if (ind->dtype != SMELT_I32 && ind->dtype != SMELT_I64)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "indices '%s' must be int32 or int64, got %s", ind->name,
                            infer_dtype_str(ind->dtype));
    int r = x->shape.rank, q = ind->shape.rank, axis;
    if (r == 0) return ir_node_fail(n, SMELT_ERR_SHAPE, "data must have rank >= 1");
    gather_params scratch;
    const gather_params *p;
    TRY(gather_params_of(g, n, &scratch, &p));
    TRY(infer_norm_axis(n, p->axis, r, "axis", &axis));
    if (r - 1 + q > IR_MAX_RANK)
        return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "output rank %d exceeds the maximum %d", r - 1 + q, IR_MAX_RANK);
    ir_shape s = {.rank = r - 1 + q};
    for (int i = 0; i < axis; i++) s.dim[i] = x->shape.dim[i];
    for (int i = 0; i < q; i++) s.dim[axis + i] = ind->shape.dim[i];
    for (int i = axis + 1; i < r; i++) s.dim[q + i - 1] = x->shape.dim[i];
    if (x->shape.dim[axis] == 0 && ir_shape_numel(&s) > 0)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "cannot gather from axis %d of size 0", axis);
    if (ind->data) {
        int64_t dim = x->shape.dim[axis];
        for (int64_t i = 0; i < ir_tensor_numel(ind); i++) {
            int64_t v = ir_const_int(ind, i);
            if (v < -dim || v >= dim)
                return ir_node_fail(n, SMELT_ERR_SHAPE, "index %lld is out of range for axis %d of size %lld",
                                    (long long)v, axis, (long long)dim);
        }
    }
    return infer_set_out(g, n, 0, x->dtype, &s);
}

smelt_status infer_GatherElements(ir_graph *g, int node)
{
    char b1[160], b2[160];
    const ir_node *n = &g->nodes[node];
    TRY(infer_check_dtypes(g, n));
    const ir_tensor *x = ir_in(g, n, 0), *ind = ir_in(g, n, 1);
    if (ind->dtype != SMELT_I32 && ind->dtype != SMELT_I64)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "indices '%s' must be int32 or int64, got %s", ind->name,
                            infer_dtype_str(ind->dtype));
    int r = x->shape.rank, axis;
    if (r == 0 || ind->shape.rank != r)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "data %s and indices %s must have the same rank >= 1",
                            infer_shp(&x->shape, b1), infer_shp(&ind->shape, b2));
    gather_params scratch;
    const gather_params *p;
    TRY(gather_params_of(g, n, &scratch, &p));
    TRY(infer_norm_axis(n, p->axis, r, "axis", &axis));
    for (int d = 0; d < r; d++)
        if (d != axis && ind->shape.dim[d] > x->shape.dim[d])
            return ir_node_fail(n, SMELT_ERR_SHAPE, "indices %s exceed data %s outside axis %d",
                                infer_shp(&ind->shape, b1), infer_shp(&x->shape, b2), axis);
    if (x->shape.dim[axis] == 0 && ir_tensor_numel(ind) > 0)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "cannot gather from axis %d of size 0", axis);
    TRY(check_const_indices(n, ind, &x->shape.dim[axis], 1, axis));
    return infer_set_out(g, n, 0, x->dtype, &ind->shape);
}

smelt_status infer_GatherND(ir_graph *g, int node)
{
    char b1[160], b2[160];
    const ir_node *n = &g->nodes[node];
    TRY(infer_check_dtypes(g, n));
    const ir_tensor *x = ir_in(g, n, 0), *ind = ir_in(g, n, 1);
    if (ind->dtype != SMELT_I64 && ind->dtype != SMELT_I32)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "indices '%s' must be int32 or int64, got %s", ind->name, infer_dtype_str(ind->dtype));
    int r = x->shape.rank, q = ind->shape.rank;
    gather_params scratch;
    const gather_params *p;
    TRY(gather_params_of(g, n, &scratch, &p));
    int64_t b = p->batch_dims;
    if (q < 1 || r < 1) return ir_node_fail(n, SMELT_ERR_SHAPE, "data and indices must have rank >= 1");
    if (b < 0 || b >= q || b >= r)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "batch_dims %lld must be below the ranks of data (%d) and indices (%d)",
                            (long long)b, r, q);
    int64_t k = ind->shape.dim[q - 1];
    if (k < 1 || k > r - b)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "the last dim of indices %s must be in 1..%lld for data %s",
                            infer_shp(&ind->shape, b1), (long long)(r - b), infer_shp(&x->shape, b2));
    for (int d = 0; d < b; d++)
        if (ind->shape.dim[d] != x->shape.dim[d])
            return ir_node_fail(n, SMELT_ERR_SHAPE, "batch dims of indices %s and data %s differ",
                                infer_shp(&ind->shape, b1), infer_shp(&x->shape, b2));
    ir_shape s = {.rank = (int)(q - 1 + r - b - k)};
    if (s.rank > IR_MAX_RANK)
        return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "output rank %d exceeds the maximum %d", s.rank, IR_MAX_RANK);
    for (int d = 0; d < q - 1; d++) s.dim[d] = ind->shape.dim[d];
    for (int d = (int)(b + k); d < r; d++) s.dim[q - 1 + d - b - k] = x->shape.dim[d];
    for (int d = (int)b; d < b + k; d++)
        if (x->shape.dim[d] == 0 && ir_shape_numel(&s) > 0)
            return ir_node_fail(n, SMELT_ERR_SHAPE, "cannot gather from axis %d of size 0", d);
    TRY(check_const_indices(n, ind, &x->shape.dim[b], k, (int)b));
    return infer_set_out(g, n, 0, x->dtype, &s);
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
    gather_params scratch;
    const gather_params *p;
    TRY(gather_params_of(g, n, &scratch, &p));
    int axis;
    TRY(infer_norm_axis(n, p->axis, x->shape.rank, "axis", &axis));
    for (int d = 0; ok && d < x->shape.rank; d++) ok = d == axis || ind->shape.dim[d] <= x->shape.dim[d];
    if (!ok)
        return ir_node_fail(n, SMELT_ERR_SHAPE,
                            "indices %s and updates %s must have one shape, of data %s's rank and within its size",
                            infer_shp(&ind->shape, b1), infer_shp(&u->shape, b2), infer_shp(&x->shape, b3));
    if (x->shape.dim[axis] == 0 && ir_tensor_numel(ind) > 0)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "axis %d of data is empty", axis);
    TRY(check_const_indices(n, ind, &x->shape.dim[axis], 1, axis));
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
    TRY(check_const_indices(n, ind, x->shape.dim, k, 0));
    return infer_set_out(g, n, 0, x->dtype, &x->shape);
}

static const ir_shape *in_shape(const lower_ctx *c, int i) { return &ir_in(c->g, c->n, i)->shape; }

static int norm_axis(int64_t a, int rank) { return (int)(a < 0 ? a + rank : a); }

/* The node's params in an index map (which cannot fail: shape inference parsed them). */
static const gather_params *elem_params(const lower_ctx *c, gather_params *scratch)
{
    const gather_params *p;
    return gather_params_of(c->g, c->n, scratch, &p) == SMELT_OK ? p : NULL;
}

/* The index is read at run time: negative counts from the end, and anything
 * still out of range is clamped so the load stays inside the data. */
kir_val elem_Gather(lower_ctx *c, int out, const kir_val *idx)
{
    (void)out;
    kir_kernel *k = c->k;
    const ir_shape *xs = in_shape(c, 0), *is = in_shape(c, 1);
    int r = xs->rank, q = is->rank;
    gather_params scratch;
    const gather_params *p = elem_params(c, &scratch);
    if (!p) return 0;
    int axis = norm_axis(p->axis, r);
    kir_val ind = kir_cast(k, SMELT_I64, lower_load(c, 1, q ? idx + axis : NULL));
    int64_t dim = xs->dim[axis];
    kir_val neg = kir_binary(k, KIR_LT, ind, kir_idx(k, 0));
    ind = kir_select(k, neg, kir_add(k, ind, kir_idx(k, dim)), ind);
    kir_val in_idx[IR_MAX_RANK];
    for (int j = 0; j < axis; j++) in_idx[j] = idx[j];
    in_idx[axis] = lower_clamp(k, ind, dim);
    for (int j = axis + 1; j < r; j++) in_idx[j] = idx[j + q - 1];
    return lower_load(c, 0, in_idx);
}

kir_val elem_GatherElements(lower_ctx *c, int out, const kir_val *idx)
{
    (void)out;
    kir_kernel *k = c->k;
    const ir_shape *xs = in_shape(c, 0);
    gather_params scratch;
    const gather_params *p = elem_params(c, &scratch);
    if (!p) return 0;
    int axis = norm_axis(p->axis, xs->rank);
    int64_t dim = xs->dim[axis];
    kir_val ind = kir_cast(k, SMELT_I64, lower_load(c, 1, idx));
    ind = kir_select(k, kir_binary(k, KIR_LT, ind, kir_idx(k, 0)), kir_add(k, ind, kir_idx(k, dim)), ind);
    kir_val in_idx[IR_MAX_RANK];
    for (int j = 0; j < xs->rank; j++) in_idx[j] = idx[j];
    in_idx[axis] = lower_clamp(k, ind, dim);
    return lower_load(c, 0, in_idx);
}

/* out[i.., j..] = data[batch.., indices[i.., 0..k), j..]: the leading output
 * dims walk the indices, each gathered coordinate wrapped and clamped. */
kir_val elem_GatherND(lower_ctx *c, int out, const kir_val *idx)
{
    (void)out;
    kir_kernel *k = c->k;
    const ir_shape *xs = in_shape(c, 0), *is = in_shape(c, 1);
    gather_params scratch;
    const gather_params *p = elem_params(c, &scratch);
    if (!p) return 0;
    int r = xs->rank, q = is->rank, b = (int)p->batch_dims;
    int kk = (int)is->dim[q - 1];
    kir_val ind_idx[IR_MAX_RANK], in_idx[IR_MAX_RANK];
    for (int d = 0; d < q - 1; d++) ind_idx[d] = idx[d];
    for (int d = 0; d < b; d++) in_idx[d] = idx[d];
    for (int j = 0; j < kk; j++) {
        ind_idx[q - 1] = kir_idx(k, j);
        int64_t dim = xs->dim[b + j];
        kir_val v = kir_cast(k, SMELT_I64, lower_load(c, 1, ind_idx));
        v = kir_select(k, kir_binary(k, KIR_LT, v, kir_idx(k, 0)), kir_add(k, v, kir_idx(k, dim)), v);
        in_idx[b + j] = lower_clamp(k, v, dim);
    }
    for (int d = b + kk; d < r; d++) in_idx[d] = idx[q - 1 + d - b - kk];
    return lower_load(c, 0, in_idx);
}
