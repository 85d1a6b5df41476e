/*
 * norm.c — BatchNormalization (inference) and LayerNormalization.
 *
 * requires: shapes inferred by infer_BatchNormalization /
 *           infer_LayerNormalization (training mode already rejected).
 * guarantees: BatchNormalization is one elementwise kernel over X; each
 *             LayerNormalization row is one iteration of lower_parallel_for
 *             with three passes (mean, variance around the mean, normalize):
 *             the two-pass variance avoids the cancellation of E[x^2]-E[x]^2.
 */
#include <math.h>

#include "lower/lower.h"

typedef struct bn_job {
    smelt_dtype dt;
    double eps;
} bn_job;

static void bn_body(lower_ctx *c, const kir_val *idx, void *user)
{
    const bn_job *j = user;
    kir_kernel *K = c->k;
    kir_val ch = idx[1];
    kir_val x = lower_load(c, 0, idx);
    kir_val scale = kir_cast(K, j->dt, lower_load(c, 1, &ch));
    kir_val bias = kir_cast(K, j->dt, lower_load(c, 2, &ch));
    kir_val mean = kir_cast(K, j->dt, lower_load(c, 3, &ch));
    kir_val var = kir_cast(K, j->dt, lower_load(c, 4, &ch));
    kir_val sd = kir_unary(K, KIR_SQRT, kir_binary(K, KIR_ADD, var, kir_const_f(K, j->dt, j->eps)));
    kir_val y = kir_binary(K, KIR_DIV, kir_binary(K, KIR_SUB, x, mean), sd);
    lower_store(c, 0, idx, kir_binary(K, KIR_ADD, kir_binary(K, KIR_MUL, y, scale), bias));
}

smelt_status lower_BatchNormalization(lower_ctx *c)
{
    const ir_tensor *x = ir_in(c->g, c->n, 0);
    bn_job j = {x->dtype, ir_attr_float(c->n, "epsilon", 1e-5f)};
    if (ir_tensor_numel(x) == 0) return SMELT_OK;
    lower_parallel_for(c, &x->shape, 4, bn_body, &j);
    return c->k ? SMELT_OK : ir_node_fail(c->n, SMELT_ERR_NOMEM, "out of memory");
}

typedef struct ln_job {
    int axis, rank;
    int64_t cnt;
    const ir_shape *in;
    smelt_dtype dt;
    double eps;
    bool bias;
} ln_job;

/* Nested loops over the normalized dims [axis, rank); idx holds the row. */
static int ln_loops(kir_kernel *K, const ln_job *j, const kir_val *row, kir_val *idx)
{
    int open = 0;
    for (int d = 0; d < j->rank; d++) {
        if (d < j->axis) {
            idx[d] = row[d];
        } else if (j->in->dim[d] == 1) {
            idx[d] = kir_idx(K, 0);
        } else {
            idx[d] = kir_loop_begin(K, kir_idx(K, 0), kir_idx(K, j->in->dim[d]), kir_idx(K, 1));
            open++;
        }
    }
    return open;
}

typedef struct ln_row {
    const ln_job *j;
    const kir_val *row;
    int dim;
    kir_val mean; /* 0 for the sum, else the squared deviations */
} ln_row;

static kir_val ln_row_elem(lower_ctx *c, kir_val i, void *user)
{
    const ln_row *r = user;
    kir_kernel *K = c->k;
    kir_val idx[IR_MAX_RANK];
    for (int d = 0; d < r->j->rank; d++) idx[d] = d < r->j->axis ? r->row[d] : d == r->dim ? i : kir_idx(K, 0);
    kir_val x = lower_load(c, 0, idx);
    if (!r->mean) return x;
    kir_val d = kir_binary(K, KIR_SUB, x, r->mean);
    return kir_binary(K, KIR_MUL, d, d);
}

static void ln_body(lower_ctx *c, const kir_val *row, void *user)
{
    const ln_job *j = user;
    kir_kernel *K = c->k;
    kir_val idx[IR_MAX_RANK];
    smelt_dtype dt = j->dt;
    kir_val n = kir_const_f(K, dt, (double)j->cnt);

    uint32_t normalized = (uint32_t)((1u << j->rank) - 1) & ~(uint32_t)((1u << j->axis) - 1);
    int dim = kir_is_float(dt) ? lower_one_long_dim(j->in, normalized) : -1;
    ln_row lr = {j, row, dim, 0};
    int sum = kir_var_new(K, dt, kir_const_f(K, dt, 0));
    int open;
    if (dim >= 0) { /* one dim: sums in vector lanes (lower_reduce_var) */
        lower_reduce_var(c, sum, dt, KIR_ADD, j->in->dim[dim], ln_row_elem, &lr);
    } else {
        open = ln_loops(K, j, row, idx);
        kir_var_set(K, sum, kir_binary(K, KIR_ADD, kir_var_get(K, sum), lower_load(c, 0, idx)));
        while (open--) kir_loop_end(K);
    }
    kir_val mean = kir_binary(K, KIR_DIV, kir_var_get(K, sum), n);

    int sq = kir_var_new(K, dt, kir_const_f(K, dt, 0));
    kir_val d;
    if (dim >= 0) {
        lr.mean = mean;
        lower_reduce_var(c, sq, dt, KIR_ADD, j->in->dim[dim], ln_row_elem, &lr);
    } else {
        open = ln_loops(K, j, row, idx);
        d = kir_binary(K, KIR_SUB, lower_load(c, 0, idx), mean);
        kir_var_set(K, sq, kir_binary(K, KIR_ADD, kir_var_get(K, sq), kir_binary(K, KIR_MUL, d, d)));
        while (open--) kir_loop_end(K);
    }
    kir_val var = kir_binary(K, KIR_DIV, kir_var_get(K, sq), n);
    kir_val inv = kir_binary(K, KIR_DIV, kir_const_f(K, dt, 1),
                             kir_unary(K, KIR_SQRT, kir_binary(K, KIR_ADD, var, kir_const_f(K, dt, j->eps))));

    open = ln_loops(K, j, row, idx);
    d = kir_binary(K, KIR_SUB, lower_load(c, 0, idx), mean);
    int nr = j->rank - j->axis;
    kir_val y = kir_binary(K, KIR_MUL, kir_binary(K, KIR_MUL, d, inv), lower_load_bcast(c, 1, nr, idx + j->axis));
    if (j->bias) y = kir_binary(K, KIR_ADD, y, lower_load_bcast(c, 2, nr, idx + j->axis));
    lower_store(c, 0, idx, y);
    while (open--) kir_loop_end(K);

    for (int o = 1; o < 3; o++) {
        if (o >= c->n->n_out || c->n->out[o] < 0) continue;
        smelt_dtype odt = c->g->tensors[c->n->out[o]].dtype;
        lower_store(c, o, row, kir_cast(K, odt, o == 1 ? mean : inv));
    }
}

smelt_status lower_LayerNormalization(lower_ctx *c)
{
    const ir_tensor *x = ir_in(c->g, c->n, 0);
    int r = x->shape.rank;
    int64_t a = ir_attr_int(c->n, "axis", -1);
    ln_job j = {(int)(a < 0 ? a + r : a), r, 1, &x->shape, x->dtype, ir_attr_float(c->n, "epsilon", 1e-5f),
                ir_in(c->g, c->n, 2) != NULL};
    ir_shape rows = x->shape;
    for (int d = j.axis; d < r; d++) {
        j.cnt *= x->shape.dim[d];
        rows.dim[d] = 1;
    }
    if (ir_tensor_numel(x) == 0) return SMELT_OK;
    lower_parallel_for(c, &rows, 3 * j.cnt, ln_body, &j);
    return c->k ? SMELT_OK : ir_node_fail(c->n, SMELT_ERR_NOMEM, "out of memory");
}

/* InstanceNormalization: LayerNormalization over the spatial dims of each
 * (n, c) image, with per-channel scale and bias. */
static void in_body(lower_ctx *c, const kir_val *row, void *user)
{
    const ln_job *j = user;
    kir_kernel *K = c->k;
    kir_val idx[IR_MAX_RANK];
    smelt_dtype dt = j->dt;
    kir_val n = kir_const_f(K, dt, (double)j->cnt);
    int sum = kir_var_new(K, dt, kir_const_f(K, dt, 0));
    int open = ln_loops(K, j, row, idx);
    kir_var_set(K, sum, kir_binary(K, KIR_ADD, kir_var_get(K, sum), lower_load(c, 0, idx)));
    while (open--) kir_loop_end(K);
    kir_val mean = kir_binary(K, KIR_DIV, kir_var_get(K, sum), n);
    int sq = kir_var_new(K, dt, kir_const_f(K, dt, 0));
    open = ln_loops(K, j, row, idx);
    kir_val d = kir_binary(K, KIR_SUB, lower_load(c, 0, idx), mean);
    kir_var_set(K, sq, kir_binary(K, KIR_ADD, kir_var_get(K, sq), kir_binary(K, KIR_MUL, d, d)));
    while (open--) kir_loop_end(K);
    kir_val var = kir_binary(K, KIR_DIV, kir_var_get(K, sq), n);
    kir_val sd = kir_unary(K, KIR_SQRT, kir_binary(K, KIR_ADD, var, kir_const_f(K, dt, j->eps)));
    kir_val ch = row[1];
    kir_val scale = kir_binary(K, KIR_DIV, lower_load(c, 1, &ch), sd), bias = lower_load(c, 2, &ch);
    open = ln_loops(K, j, row, idx);
    d = kir_binary(K, KIR_SUB, lower_load(c, 0, idx), mean);
    lower_store(c, 0, idx, kir_binary(K, KIR_ADD, kir_binary(K, KIR_MUL, d, scale), bias));
    while (open--) kir_loop_end(K);
}

smelt_status lower_InstanceNormalization(lower_ctx *c)
{
    const ir_tensor *x = ir_in(c->g, c->n, 0);
    int r = x->shape.rank;
    ln_job j = {2, r, 1, &x->shape, x->dtype, ir_attr_float(c->n, "epsilon", 1e-5f), true};
    ir_shape rows = x->shape;
    for (int d = 2; d < r; d++) {
        j.cnt *= x->shape.dim[d];
        rows.dim[d] = 1;
    }
    if (ir_tensor_numel(x) == 0) return SMELT_OK;
    lower_parallel_for(c, &rows, 3 * j.cnt, in_body, &j);
    return c->k ? SMELT_OK : ir_node_fail(c->n, SMELT_ERR_NOMEM, "out of memory");
}

/* LpNormalization: x / ||row||_p along one axis (p = 1 or 2). */
typedef struct lp_job {
    int axis;
    int64_t len, p;
    smelt_dtype dt;
} lp_job;

static void lp_body(lower_ctx *c, const kir_val *row, void *user)
{
    const lp_job *j = user;
    kir_kernel *K = c->k;
    int rank = c->g->tensors[c->n->in[0]].shape.rank;
    kir_val idx[IR_MAX_RANK];
    for (int d = 0; d < rank; d++) idx[d] = row[d];
    int acc = kir_var_new(K, j->dt, kir_const_f(K, j->dt, 0));
    idx[j->axis] = kir_loop_begin(K, kir_idx(K, 0), kir_idx(K, j->len), kir_idx(K, 1));
    kir_val x = lower_load(c, 0, idx);
    kir_val t = j->p == 1 ? kir_unary(K, KIR_ABS, x) : kir_binary(K, KIR_MUL, x, x);
    kir_var_set(K, acc, kir_binary(K, KIR_ADD, kir_var_get(K, acc), t));
    kir_loop_end(K);
    kir_val norm = kir_var_get(K, acc);
    if (j->p == 2) norm = kir_unary(K, KIR_SQRT, norm);
    norm = kir_select(K, kir_binary(K, KIR_EQ, norm, kir_const_f(K, j->dt, 0)), kir_const_f(K, j->dt, 1), norm); /* 0/0 -> 0 */
    idx[j->axis] = kir_loop_begin(K, kir_idx(K, 0), kir_idx(K, j->len), kir_idx(K, 1));
    lower_store(c, 0, idx, kir_binary(K, KIR_DIV, lower_load(c, 0, idx), norm));
    kir_loop_end(K);
}

smelt_status lower_LpNormalization(lower_ctx *c)
{
    const ir_tensor *x = ir_in(c->g, c->n, 0);
    int r = x->shape.rank;
    int64_t a = ir_attr_int(c->n, "axis", -1);
    lp_job j = {(int)(a < 0 ? a + r : a), 0, ir_attr_int(c->n, "p", 2), x->dtype};
    j.len = x->shape.dim[j.axis];
    if (ir_tensor_numel(x) == 0) return SMELT_OK;
    ir_shape rows = x->shape;
    rows.dim[j.axis] = 1;
    lower_parallel_for(c, &rows, 2 * j.len, lp_body, &j);
    return c->k ? SMELT_OK : ir_node_fail(c->n, SMELT_ERR_NOMEM, "out of memory");
}
