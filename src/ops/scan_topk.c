/*
 * scan_topk.c — scans along one axis (CumSum, CumProd) and TopK: ops whose
 * output element depends on earlier elements of its row.
 *
 * requires: a node whose shape rule here succeeded (axis constant and in range).
 * guarantees: one kernel per node, one iteration of lower_parallel_for per row;
 *             the row is walked in order inside it. TopK selects the k best of
 *             each row by repeated selection in the order (value, then lower
 *             index first).
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lower/lower.h"
#include "ops/scan_topk.h"
#include "ops/shape.h"

/* The constant axis of a CumSum node, normalized. */
static smelt_status cumsum_axis(const ir_graph *g, const ir_node *n, int *axis)
{
    const ir_tensor *x = ir_in(g, n, 0), *a = ir_in(g, n, 1);
    if (!a->data) return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "axis input '%s' must be a compile-time constant", a->name);
    if (ir_tensor_numel(a) != 1 || a->shape.rank > 1)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "axis input '%s' must hold one value", a->name);
    if (a->dtype != SMELT_I64 && a->dtype != SMELT_I32)
        return ir_node_fail(n, SMELT_ERR_MODEL, "axis input '%s' must be int32 or int64", a->name);
    return infer_axis(n, "axis", ir_const_int(a, 0), x->shape.rank, axis);
}

smelt_status infer_CumSum(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_need_input(g, n, 0, "x"));
    TRY(infer_need_input(g, n, 1, "axis"));
    const ir_tensor *x = ir_in(g, n, 0);
    TRY(infer_need_dtype(n, x, "input", DT_ARITH));
    int axis = 0;
    TRY(cumsum_axis(g, n, &axis));
    infer_put_out(g, n, 0, x->dtype, &x->shape);
    return SMELT_OK;
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
    const void *p;
    TRY(ir_node_params(g, node, &p));
    TRY(infer_norm_axis(n, ((const topk_params *)p)->axis, x->shape.rank, "axis", &axis));
    int64_t k;
    if (kt) {
        TRY(infer_need_int(n, kt));
        if (!infer_is_one_value(kt)) return ir_node_fail(n, SMELT_ERR_SHAPE, "K must hold one value");
        k = ir_const_int(kt, 0);
    } else {
        k = ((const topk_params *)p)->k;
    }
    if (k < 0 || k > x->shape.dim[axis])
        return ir_node_fail(n, SMELT_ERR_SHAPE, "k = %lld must be in [0, %lld] (the size of axis %d)", (long long)k,
                            (long long)x->shape.dim[axis], axis);
    ir_shape out = x->shape;
    out.dim[axis] = k;
    TRY(infer_set_out(g, n, 0, x->dtype, &out));
    return infer_set_out(g, n, 1, SMELT_I64, &out);
}

/* ---- attributes, parsed once (ir/ops.h op_params) ------------------------ */

smelt_status parse_TopK(const ir_graph *g, const ir_node *n, void *params)
{
    (void)g;
    *(topk_params *)params = (topk_params){.axis = ir_attr_int(n, "axis", -1),
                                           .largest = ir_attr_int(n, "largest", 1) != 0,
                                           .k = ir_attr_int(n, "k", -1)};
    return SMELT_OK;
}

smelt_status parse_scan(const ir_graph *g, const ir_node *n, void *params)
{
    (void)g;
    *(scan_params *)params = (scan_params){.exclusive = ir_attr_int(n, "exclusive", 0) != 0,
                                           .reverse = ir_attr_int(n, "reverse", 0) != 0};
    return SMELT_OK;
}

static const void *params_of(const lower_ctx *c) { return c->n->params; }

/* A node lowered without having been through shape inference (a bug). */
static smelt_status params_missing(const lower_ctx *c)
{
    return ir_node_fail(c->n, SMELT_ERR_INTERNAL, "its attributes were not parsed before lowering");
}

static kir_val bin(kir_kernel *K, kir_op op, kir_val a, kir_val b) { return kir_binary(K, op, a, b); }

static smelt_status done(lower_ctx *c)
{
    return c->k ? SMELT_OK : ir_node_fail(c->n, SMELT_ERR_NOMEM, "out of memory");
}

/* ---- CumProd ------------------------------------------------------------ */

typedef struct cp_job {
    int axis;
    int64_t len;
    bool exclusive, reverse;
    smelt_dtype dt;
} cp_job;

static void cp_body(lower_ctx *c, const kir_val *row, void *user)
{
    const cp_job *j = user;
    kir_kernel *K = c->k;
    int rank = ir_in(c->g, c->n, 0)->shape.rank;
    kir_val idx[IR_MAX_RANK];
    for (int d = 0; d < rank; d++) idx[d] = row[d];
    int acc = kir_var_new(K, j->dt, kir_const_f(K, j->dt, 1));
    kir_val i = kir_loop_begin(K, kir_idx(K, 0), kir_idx(K, j->len), kir_idx(K, 1));
    idx[j->axis] = j->reverse ? bin(K, KIR_SUB, kir_idx(K, j->len - 1), i) : i;
    kir_val a = kir_var_get(K, acc), p = bin(K, KIR_MUL, a, lower_load(c, 0, idx));
    lower_store(c, 0, idx, j->exclusive ? a : p);
    kir_var_set(K, acc, p);
    kir_loop_end(K);
}

smelt_status lower_CumProd(lower_ctx *c)
{
    const ir_tensor *x = ir_in(c->g, c->n, 0);
    int r = x->shape.rank;
    int64_t ax = ir_const_int(ir_in(c->g, c->n, 1), 0);
    const scan_params *p = params_of(c);
    if (!p) return params_missing(c);
    cp_job j = {(int)(ax < 0 ? ax + r : ax), 0, p->exclusive, p->reverse, x->dtype};
    j.len = x->shape.dim[j.axis];
    if (ir_tensor_numel(x) == 0) return SMELT_OK;
    ir_shape rows = x->shape;
    rows.dim[j.axis] = 1;
    lower_parallel_for(c, &rows, j.len, cp_body, &j);
    return done(c);
}

/* ---- TopK --------------------------------------------------------------- */

typedef struct topk_job {
    int axis;
    int64_t n, k;
    bool largest;
    smelt_dtype dt;
} topk_job;

/* (va, ia) comes before (vb, ib): a better value, or the same at a lower index. */
static kir_val topk_before(kir_kernel *K, const topk_job *j, kir_val va, kir_val ia, kir_val vb, kir_val ib)
{
    kir_val better = bin(K, j->largest ? KIR_GT : KIR_LT, va, vb);
    kir_val tie = bin(K, KIR_AND, bin(K, KIR_EQ, va, vb), bin(K, KIR_LT, ia, ib));
    return bin(K, KIR_OR, better, tie);
}

static void topk_body(lower_ctx *c, const kir_val *row, void *user)
{
    const topk_job *j = user;
    kir_kernel *K = c->k;
    int rank = ir_in(c->g, c->n, 0)->shape.rank;
    kir_val idx[IR_MAX_RANK], oi[IR_MAX_RANK];
    for (int d = 0; d < rank; d++) idx[d] = oi[d] = row[d];
    kir_val zero = kir_const_f(K, j->dt, 0);
    int pv = kir_var_new(K, j->dt, zero), pi = kir_var_new(K, SMELT_I64, kir_idx(K, -1));
    oi[j->axis] = kir_loop_begin(K, kir_idx(K, 0), kir_idx(K, j->k), kir_idx(K, 1));
    int bv = kir_var_new(K, j->dt, zero), bi = kir_var_new(K, SMELT_I64, kir_idx(K, -1));
    kir_val prev_v = kir_var_get(K, pv), prev_i = kir_var_get(K, pi);
    idx[j->axis] = kir_loop_begin(K, kir_idx(K, 0), kir_idx(K, j->n), kir_idx(K, 1));
    kir_val x = lower_load(c, 0, idx), at = idx[j->axis];
    kir_val cur_v = kir_var_get(K, bv), cur_i = kir_var_get(K, bi);
    kir_val after = bin(K, KIR_OR, bin(K, KIR_LT, prev_i, kir_idx(K, 0)), topk_before(K, j, prev_v, prev_i, x, at));
    kir_val beats = bin(K, KIR_OR, bin(K, KIR_LT, cur_i, kir_idx(K, 0)), topk_before(K, j, x, at, cur_v, cur_i));
    kir_val take = bin(K, KIR_AND, after, beats);
    kir_var_set(K, bv, kir_select(K, take, x, cur_v));
    kir_var_set(K, bi, kir_select(K, take, at, cur_i));
    kir_loop_end(K);
    kir_val best_v = kir_var_get(K, bv), best_i = kir_var_get(K, bi);
    lower_store(c, 0, oi, best_v);
    lower_store(c, 1, oi, best_i);
    kir_var_set(K, pv, best_v);
    kir_var_set(K, pi, best_i);
    kir_loop_end(K);
}

smelt_status lower_TopK(lower_ctx *c)
{
    const ir_tensor *x = ir_in(c->g, c->n, 0);
    const ir_shape *os = &c->g->tensors[c->n->out[0]].shape;
    int r = x->shape.rank;
    const topk_params *p = params_of(c);
    if (!p) return params_missing(c);
    topk_job j = {(int)(p->axis < 0 ? p->axis + r : p->axis), 0, 0, p->largest, x->dtype};
    j.n = x->shape.dim[j.axis];
    j.k = os->dim[j.axis];
    if (ir_shape_numel(os) == 0) return SMELT_OK;
    ir_shape rows = x->shape;
    rows.dim[j.axis] = 1;
    lower_parallel_for(c, &rows, j.k * j.n, topk_body, &j);
    return done(c);
}

/* ---- CumSum: a running sum along one axis --------------------------------- */

typedef struct cs_job {
    int axis;
    int64_t len;
    bool exclusive, reverse;
    smelt_dtype dt;
} cs_job;

static void cs_body(lower_ctx *c, const kir_val *row, void *user)
{
    const cs_job *j = user;
    kir_kernel *K = c->k;
    int rank = c->g->tensors[c->n->in[0]].shape.rank;
    kir_val idx[IR_MAX_RANK];
    for (int d = 0; d < rank; d++) idx[d] = row[d];
    int acc = kir_var_new(K, j->dt, kir_const_f(K, j->dt, 0));
    kir_val i = kir_loop_begin(K, kir_idx(K, 0), kir_idx(K, j->len), kir_idx(K, 1));
    idx[j->axis] = j->reverse ? kir_binary(K, KIR_SUB, kir_idx(K, j->len - 1), i) : i;
    kir_val x = lower_load(c, 0, idx), a = kir_var_get(K, acc), s = kir_binary(K, KIR_ADD, a, x);
    lower_store(c, 0, idx, j->exclusive ? a : s);
    kir_var_set(K, acc, s);
    kir_loop_end(K);
}

smelt_status lower_CumSum(lower_ctx *c)
{
    const ir_tensor *x = ir_in(c->g, c->n, 0), *a = ir_in(c->g, c->n, 1);
    int r = x->shape.rank;
    int64_t ax = ir_const_int(a, 0);
    const scan_params *p = params_of(c);
    if (!p) return params_missing(c);
    cs_job j = {(int)(ax < 0 ? ax + r : ax), 0, p->exclusive, p->reverse, x->dtype};
    j.len = x->shape.dim[j.axis];
    if (ir_tensor_numel(x) == 0) return SMELT_OK;
    ir_shape rows = x->shape;
    rows.dim[j.axis] = 1;
    lower_parallel_for(c, &rows, j.len, cs_body, &j);
    return c->k ? SMELT_OK : ir_node_fail(c->n, SMELT_ERR_NOMEM, "out of memory");
}
