/*
 * gather_scatter.c — ops whose writes depend on data or on earlier
 * outputs: ScatterElements, Scatter, ScatterND, TopK, CumProd.
 *
 * requires: shapes inferred by graph/infer_more.c.
 * guarantees: a scatter is three kernels — copy data into a scratch buffer,
 *             apply the updates in order in one workgroup (later updates win,
 *             as the spec's loop does), copy the scratch to the output — so
 *             each output element is stored exactly once and an epilogue
 *             fused into lower_store sees final values. Every index read
 *             from a tensor is wrapped (negative) and clamped into range.
 *             TopK selects the k best of each row by repeated selection in
 *             the order (value, then lower index first).
 */
#include <string.h>

#include "lower/lower.h"

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
    cp_job j = {(int)(ax < 0 ? ax + r : ax), 0, ir_attr_int(c->n, "exclusive", 0) != 0,
                ir_attr_int(c->n, "reverse", 0) != 0, x->dtype};
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
    int64_t a = ir_attr_int(c->n, "axis", -1);
    topk_job j = {(int)(a < 0 ? a + r : a), 0, 0, ir_attr_int(c->n, "largest", 1) != 0, x->dtype};
    j.n = x->shape.dim[j.axis];
    j.k = os->dim[j.axis];
    if (ir_shape_numel(os) == 0) return SMELT_OK;
    ir_shape rows = x->shape;
    rows.dim[j.axis] = 1;
    lower_parallel_for(c, &rows, j.k * j.n, topk_body, &j);
    return done(c);
}

/* ---- ScatterElements, Scatter, ScatterND --------------------------------- */

typedef enum sc_red { SC_NONE, SC_ADD, SC_MUL, SC_MAX, SC_MIN } sc_red;

typedef struct sc_job {
    int scratch;
    const ir_shape *data;
    sc_red red;
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
    const char *red = ir_attr_string(c->n, "reduction", "none");
    sc_job j = {0, &x->shape, SC_NONE, axis};
    if (!strcmp(red, "add")) j.red = SC_ADD;
    else if (!strcmp(red, "mul")) j.red = SC_MUL;
    else if (!strcmp(red, "max")) j.red = SC_MAX;
    else if (!strcmp(red, "min")) j.red = SC_MIN;
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
    int64_t a = ir_attr_int(c->n, "axis", 0);
    return scatter_lower(c, se_body, (int)(a < 0 ? a + r : a));
}

smelt_status lower_ScatterND(lower_ctx *c) { return scatter_lower(c, snd_body, 0); }
