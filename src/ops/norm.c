/*
 * norm.c — normalizations: BatchNormalization (inference), Layer-, Instance-,
 * Lp-, RMS-, Group- and MeanVarianceNormalization and LRN: attributes, shape
 * rules and lowerings (the classification losses are in loss.c).
 *
 * requires: shapes inferred by the rules here (training mode already rejected).
 * guarantees: BatchNormalization is one elementwise kernel over X; each
 *             LayerNormalization row is one iteration of lower_parallel_for
 *             with three passes (mean, variance around the mean, normalize):
 *             the two-pass variance avoids the cancellation of E[x^2]-E[x]^2.
 *             The other normalizations: one iteration per normalized group,
 *             reductions as inner loops in the input's dtype, variances
 *             two-pass.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lower/lower.h"
#include "ops/norm.h"
#include "ops/shape.h"

/* ---- attributes, parsed once (ir/ops.h op_params) ------------------------ */

smelt_status parse_BatchNormalization(const ir_graph *g, const ir_node *n, void *params)
{
    (void)g;
    batchnorm_params *p = params;
    p->epsilon = ir_attr_float(n, "epsilon", 1e-5f);
    if (ir_attr_int(n, "training_mode", 0))
        return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "training_mode=1 is not supported (inference only)");
    if (ir_attr_int(n, "spatial", 1) != 1) return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "spatial=0 is not supported");
    return SMELT_OK;
}

smelt_status parse_norm(const ir_graph *g, const ir_node *n, void *params)
{
    (void)g;
    norm_params *p = params;
    p->axis = ir_attr_int(n, "axis", -1);
    p->epsilon = ir_attr_float(n, "epsilon", 1e-5f);
    p->p = ir_attr_int(n, "p", 2);
    if (n->op == OP_LpNormalization && p->p != 1 && p->p != 2)
        return ir_node_fail(n, SMELT_ERR_MODEL, "p = %lld must be 1 or 2", (long long)p->p);
    int64_t stash = ir_attr_int(n, "stash_type", 1);
    if (n->op == OP_LayerNormalization && stash != 1 && stash != SMELT_F64)
        return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "stash_type %lld is not supported", (long long)stash);
    p->stash = stash == SMELT_F64 ? SMELT_F64 : SMELT_F32;
    p->num_groups = ir_attr_int(n, "num_groups", 0);
    if (n->op == OP_GroupNormalization && p->num_groups < 1)
        return ir_node_fail(n, SMELT_ERR_MODEL, "attribute num_groups = %lld must be >= 1 (it is required)",
                            (long long)p->num_groups);
    const int64_t *axes;
    p->n_axes = ir_attr_ints(n, "axes", &axes);
    if (p->n_axes > IR_MAX_RANK)
        return ir_node_fail(n, SMELT_ERR_MODEL, "attribute axes has %d values, at most %d", p->n_axes, IR_MAX_RANK);
    for (int i = 0; i < p->n_axes; i++) p->axes[i] = axes[i];
    p->size = ir_attr_int(n, "size", 0);
    if (n->op == OP_LRN && (p->size <= 0 || p->size > SMELT_MAX_ELEMS))
        return ir_node_fail(n, SMELT_ERR_MODEL, "attribute 'size' = %lld must be in 1..2^40", (long long)p->size);
    p->alpha = ir_attr_float(n, "alpha", 1e-4f);
    p->beta = ir_attr_float(n, "beta", 0.75f);
    p->bias = ir_attr_float(n, "bias", 1.0f);
    return SMELT_OK;
}

/* n's norm_params (ir_node_params_get). */
static smelt_status norm_params_of(const ir_graph *g, const ir_node *n, norm_params *scratch, const norm_params **p)
{
    const void *v;
    TRY(ir_node_params_get(g, n, scratch, &v));
    *p = v;
    return SMELT_OK;
}

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
    batchnorm_params scratch;
    const void *p;
    TRY(ir_node_params_get(c->g, c->n, &scratch, &p));
    bn_job j = {x->dtype, ((const batchnorm_params *)p)->epsilon};
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
    norm_params scratch;
    const norm_params *p;
    TRY(norm_params_of(c->g, c->n, &scratch, &p));
    int64_t a = p->axis;
    ln_job j = {(int)(a < 0 ? a + r : a), r, 1, &x->shape, x->dtype, p->epsilon, ir_in(c->g, c->n, 2) != NULL};
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
    norm_params scratch;
    const norm_params *p;
    TRY(norm_params_of(c->g, c->n, &scratch, &p));
    ln_job j = {2, r, 1, &x->shape, x->dtype, p->epsilon, true};
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
    norm_params scratch;
    const norm_params *p;
    TRY(norm_params_of(c->g, c->n, &scratch, &p));
    int64_t a = p->axis;
    lp_job j = {(int)(a < 0 ? a + r : a), 0, p->p, x->dtype};
    j.len = x->shape.dim[j.axis];
    if (ir_tensor_numel(x) == 0) return SMELT_OK;
    ir_shape rows = x->shape;
    rows.dim[j.axis] = 1;
    lower_parallel_for(c, &rows, 2 * j.len, lp_body, &j);
    return c->k ? SMELT_OK : ir_node_fail(c->n, SMELT_ERR_NOMEM, "out of memory");
}

/* ---- normalizations ----------------------------------------------------- */

smelt_status infer_BatchNormalization(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    static const char *const names[] = {"X", "scale", "B", "input_mean", "input_var"};
    for (int i = 0; i < 5; i++) TRY(infer_need_input(g, n, i, names[i]));
    const ir_tensor *x = ir_in(g, n, 0);
    TRY(infer_need_dtype(n, x, "input", DT_FLOAT));
    batchnorm_params scratch;
    const void *bp;
    TRY(ir_node_params_get(g, n, &scratch, &bp)); /* its checks: training_mode, spatial */
    for (int i = 1; i < n->n_out; i++)
        if (infer_has_out(n, i))
            return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "output %d (running/saved statistics) exists only in training mode, which is not supported", i);
    char s1[160], s2[160];
    if (x->shape.rank < 2)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "input X %s must have rank >= 2 ([N, C, ...])", infer_shp(&x->shape, s1));
    int64_t c = x->shape.dim[1];
    for (int i = 1; i < 5; i++) {
        const ir_tensor *p = ir_in(g, n, i);
        TRY(infer_need_dtype(n, p, names[i], DT_FLOAT));
        if (p->shape.rank != 1 || !infer_dim_eq(p->shape.dim[0], c))
            return ir_node_fail(n, SMELT_ERR_SHAPE, "%s %s must have shape [C] = [%lld] for X %s", names[i],
                                infer_shp(&p->shape, s1), (long long)c, infer_shp(&x->shape, s2));
    }
    infer_put_out(g, n, 0, x->dtype, &x->shape);
    return SMELT_OK;
}

smelt_status infer_LayerNormalization(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_need_input(g, n, 0, "X"));
    TRY(infer_need_input(g, n, 1, "Scale"));
    const ir_tensor *x = ir_in(g, n, 0);
    TRY(infer_need_dtype(n, x, "input", DT_FLOAT));
    norm_params scratch;
    const norm_params *p;
    TRY(norm_params_of(g, n, &scratch, &p));
    int r = x->shape.rank, axis = 0;
    TRY(infer_axis(n, "axis", p->axis, r, &axis));
    ir_shape norm = {.rank = r - axis};
    for (int i = axis; i < r; i++) norm.dim[i - axis] = x->shape.dim[i];
    char s1[160], s2[160];
    for (int i = 1; i < 3; i++) {
        const ir_tensor *p = ir_in(g, n, i);
        if (!p) continue;
        TRY(infer_need_same_dtype(n, x, p));
        ir_shape bc;
        if (!ir_shape_broadcast(&p->shape, &norm, &bc) || !ir_shape_eq(&bc, &norm))
            return ir_node_fail(n, SMELT_ERR_SHAPE, "%s %s does not broadcast to the normalized shape %s",
                                i == 1 ? "Scale" : "B", infer_shp(&p->shape, s1), infer_shp(&norm, s2));
    }
    infer_put_out(g, n, 0, x->dtype, &x->shape);
    ir_shape st = x->shape;
    for (int i = axis; i < r; i++) st.dim[i] = 1;
    smelt_dtype sdt = p->stash;
    infer_put_out(g, n, 1, sdt, &st);
    infer_put_out(g, n, 2, sdt, &st);
    return SMELT_OK;
}

smelt_status infer_InstanceNormalization(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    static const char *const names[] = {"input", "scale", "B"};
    for (int i = 0; i < 3; i++) TRY(infer_need_input(g, n, i, names[i]));
    const ir_tensor *x = ir_in(g, n, 0);
    TRY(infer_need_dtype(n, x, "input", DT_FLOAT));
    char s1[160], s2[160];
    if (x->shape.rank < 3)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "input %s must have rank >= 3 ([N, C, spatial...])", infer_shp(&x->shape, s1));
    for (int i = 1; i < 3; i++) {
        const ir_tensor *p = ir_in(g, n, i);
        TRY(infer_need_same_dtype(n, x, p));
        if (p->shape.rank != 1 || !infer_dim_eq(p->shape.dim[0], x->shape.dim[1]))
            return ir_node_fail(n, SMELT_ERR_SHAPE, "%s %s must have shape [C] for input %s", names[i],
                                infer_shp(&p->shape, s1), infer_shp(&x->shape, s2));
    }
    infer_put_out(g, n, 0, x->dtype, &x->shape);
    return SMELT_OK;
}

smelt_status infer_LpNormalization(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_need_input(g, n, 0, "input"));
    const ir_tensor *x = ir_in(g, n, 0);
    TRY(infer_need_dtype(n, x, "input", DT_FLOAT));
    norm_params scratch;
    const norm_params *p;
    TRY(norm_params_of(g, n, &scratch, &p));
    int axis = 0;
    TRY(infer_axis(n, "axis", p->axis, x->shape.rank, &axis));
    infer_put_out(g, n, 0, x->dtype, &x->shape);
    return SMELT_OK;
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
    norm_params scratch;
    const norm_params *p;
    TRY(norm_params_of(g, n, &scratch, &p));
    int axis;
    TRY(infer_norm_axis(n, p->axis, x->shape.rank, "axis", &axis));
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
    norm_params scratch;
    const norm_params *p;
    TRY(norm_params_of(g, n, &scratch, &p));
    int64_t groups = p->num_groups, ch = x->shape.dim[1];
    if (ch % groups != 0)
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
    norm_params scratch;
    const norm_params *p;
    TRY(norm_params_of(g, n, &scratch, &p));
    int cnt = p->n_axes;
    for (int i = 0; i < cnt; i++) {
        int a;
        TRY(infer_norm_axis(n, p->axes[i], x->shape.rank, "axis", &a));
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
    norm_params scratch;
    const norm_params *p;
    TRY(norm_params_of(g, n, &scratch, &p));
    (void)p; /* its check: size */
    return infer_set_out(g, n, 0, x->dtype, &x->shape);
}

static kir_val fc(kir_kernel *K, smelt_dtype dt, double v) { return kir_const_f(K, dt, v); }

static kir_val bin(kir_kernel *K, kir_op op, kir_val a, kir_val b) { return kir_binary(K, op, a, b); }

static smelt_status done(lower_ctx *c)
{
    return c->k ? SMELT_OK : ir_node_fail(c->n, SMELT_ERR_NOMEM, "out of memory");
}

/* Loops over the dims of `s` in `mask` (size-1 dims read index 0); the other
 * dims take their index from `fixed`. Returns the loops opened. */
static int mask_loops(kir_kernel *K, const ir_shape *s, uint32_t mask, const kir_val *fixed, kir_val *idx)
{
    int open = 0;
    for (int d = 0; d < s->rank; d++) {
        if (!(mask & (1u << d))) idx[d] = fixed[d];
        else if (s->dim[d] == 1) idx[d] = kir_idx(K, 0);
        else {
            idx[d] = kir_loop_begin(K, kir_idx(K, 0), kir_idx(K, s->dim[d]), kir_idx(K, 1));
            open++;
        }
    }
    return open;
}

static void close_loops(kir_kernel *K, int open)
{
    while (open--) kir_loop_end(K);
}

static int64_t mask_count(const ir_shape *s, uint32_t mask)
{
    int64_t n = 1;
    for (int d = 0; d < s->rank; d++)
        if (mask & (1u << d)) n *= s->dim[d];
    return n;
}

/* ---- RMSNormalization and MeanVarianceNormalization ------------------------ */

typedef struct rn_job {
    uint32_t mask;
    const ir_shape *in;
    smelt_dtype dt;
    double eps;
    bool rms; /* RMS: x * scale / sqrt(mean(x^2) + eps); else (x - mean) / (std + eps) */
} rn_job;

static void rn_body(lower_ctx *c, const kir_val *row, void *user)
{
    const rn_job *j = user;
    kir_kernel *K = c->k;
    smelt_dtype dt = j->dt;
    kir_val idx[IR_MAX_RANK], cnt = fc(K, dt, (double)mask_count(j->in, j->mask)), mean = 0;
    if (!j->rms) {
        int sum = kir_var_new(K, dt, fc(K, dt, 0));
        int open = mask_loops(K, j->in, j->mask, row, idx);
        kir_var_set(K, sum, bin(K, KIR_ADD, kir_var_get(K, sum), lower_load(c, 0, idx)));
        close_loops(K, open);
        mean = bin(K, KIR_DIV, kir_var_get(K, sum), cnt);
    }
    int sq = kir_var_new(K, dt, fc(K, dt, 0));
    int open = mask_loops(K, j->in, j->mask, row, idx);
    kir_val d = lower_load(c, 0, idx);
    if (mean) d = bin(K, KIR_SUB, d, mean);
    kir_var_set(K, sq, bin(K, KIR_ADD, kir_var_get(K, sq), bin(K, KIR_MUL, d, d)));
    close_loops(K, open);
    kir_val var = bin(K, KIR_DIV, kir_var_get(K, sq), cnt), inv;
    if (j->rms) inv = bin(K, KIR_DIV, fc(K, dt, 1), kir_unary(K, KIR_SQRT, bin(K, KIR_ADD, var, fc(K, dt, j->eps))));
    else inv = bin(K, KIR_DIV, fc(K, dt, 1), bin(K, KIR_ADD, kir_unary(K, KIR_SQRT, var), fc(K, dt, j->eps)));
    open = mask_loops(K, j->in, j->mask, row, idx);
    kir_val x = lower_load(c, 0, idx);
    kir_val y = j->rms ? bin(K, KIR_MUL, bin(K, KIR_MUL, x, inv), lower_load_bcast(c, 1, j->in->rank, idx))
                       : bin(K, KIR_MUL, bin(K, KIR_SUB, x, mean), inv);
    lower_store(c, 0, idx, y);
    close_loops(K, open);
}

static smelt_status rn_lower(lower_ctx *c, uint32_t mask, bool rms, double eps)
{
    const ir_tensor *x = ir_in(c->g, c->n, 0);
    rn_job j = {mask, &x->shape, x->dtype, eps, rms};
    if (ir_tensor_numel(x) == 0) return SMELT_OK;
    ir_shape rows = x->shape;
    for (int d = 0; d < rows.rank; d++)
        if (mask & (1u << d)) rows.dim[d] = 1;
    lower_parallel_for(c, &rows, 3 * mask_count(&x->shape, mask), rn_body, &j);
    return done(c);
}

smelt_status lower_RMSNormalization(lower_ctx *c)
{
    int r = ir_in(c->g, c->n, 0)->shape.rank;
    norm_params scratch;
    const norm_params *p;
    TRY(norm_params_of(c->g, c->n, &scratch, &p));
    int64_t a = p->axis;
    int axis = (int)(a < 0 ? a + r : a);
    uint32_t mask = (uint32_t)((1u << r) - 1) & ~((1u << axis) - 1);
    return rn_lower(c, mask, true, p->epsilon);
}

smelt_status lower_MeanVarianceNormalization(lower_ctx *c)
{
    int r = ir_in(c->g, c->n, 0)->shape.rank;
    norm_params scratch;
    const norm_params *p;
    TRY(norm_params_of(c->g, c->n, &scratch, &p));
    const int64_t *axes = p->axes;
    int cnt = p->n_axes;
    uint32_t mask = cnt < 0 ? 0xdu : 0;
    for (int i = 0; i < cnt; i++) mask |= 1u << (axes[i] < 0 ? axes[i] + r : axes[i]);
    return rn_lower(c, mask, false, 1e-9);
}

/* ---- GroupNormalization --------------------------------------------------- */

typedef struct gn_job {
    const ir_shape *in;
    smelt_dtype dt;
    int64_t per_group; /* channels per group */
    bool group_params; /* scale/bias per group (opset 18 form) */
    double eps;
} gn_job;

/* Loops over the channels of group `grp` and all spatial dims. */
static int gn_loops(kir_kernel *K, const gn_job *j, const kir_val *row, kir_val *idx)
{
    int open = 0;
    idx[0] = row[0];
    kir_val cl = j->per_group == 1 ? kir_idx(K, 0) : kir_loop_begin(K, kir_idx(K, 0), kir_idx(K, j->per_group), kir_idx(K, 1));
    open += j->per_group != 1;
    idx[1] = kir_add(K, kir_mul(K, row[1], kir_idx(K, j->per_group)), cl);
    kir_val zero[IR_MAX_RANK] = {0};
    kir_val sp[IR_MAX_RANK];
    uint32_t mask = (uint32_t)((1u << j->in->rank) - 1) & ~3u;
    open += mask_loops(K, j->in, mask, zero, sp);
    for (int d = 2; d < j->in->rank; d++) idx[d] = sp[d];
    return open;
}

static void gn_body(lower_ctx *c, const kir_val *row, void *user)
{
    const gn_job *j = user;
    kir_kernel *K = c->k;
    smelt_dtype dt = j->dt;
    int64_t n = j->per_group;
    for (int d = 2; d < j->in->rank; d++) n *= j->in->dim[d];
    kir_val cnt = fc(K, dt, (double)n), idx[IR_MAX_RANK];
    int sum = kir_var_new(K, dt, fc(K, dt, 0));
    int open = gn_loops(K, j, row, idx);
    kir_var_set(K, sum, bin(K, KIR_ADD, kir_var_get(K, sum), lower_load(c, 0, idx)));
    close_loops(K, open);
    kir_val mean = bin(K, KIR_DIV, kir_var_get(K, sum), cnt);
    int sq = kir_var_new(K, dt, fc(K, dt, 0));
    open = gn_loops(K, j, row, idx);
    kir_val d = bin(K, KIR_SUB, lower_load(c, 0, idx), mean);
    kir_var_set(K, sq, bin(K, KIR_ADD, kir_var_get(K, sq), bin(K, KIR_MUL, d, d)));
    close_loops(K, open);
    kir_val var = bin(K, KIR_DIV, kir_var_get(K, sq), cnt);
    kir_val inv = bin(K, KIR_DIV, fc(K, dt, 1), kir_unary(K, KIR_SQRT, bin(K, KIR_ADD, var, fc(K, dt, j->eps))));
    open = gn_loops(K, j, row, idx);
    kir_val p = j->group_params ? row[1] : idx[1];
    d = bin(K, KIR_MUL, bin(K, KIR_SUB, lower_load(c, 0, idx), mean), inv);
    lower_store(c, 0, idx, bin(K, KIR_ADD, bin(K, KIR_MUL, d, lower_load(c, 1, &p)), lower_load(c, 2, &p)));
    close_loops(K, open);
}

smelt_status lower_GroupNormalization(lower_ctx *c)
{
    const ir_tensor *x = ir_in(c->g, c->n, 0), *s = ir_in(c->g, c->n, 1);
    norm_params scratch;
    const norm_params *p;
    TRY(norm_params_of(c->g, c->n, &scratch, &p));
    int64_t groups = p->num_groups, ch = x->shape.dim[1];
    gn_job j = {&x->shape, x->dtype, ch / groups, s->shape.dim[0] != ch, p->epsilon};
    if (ir_tensor_numel(x) == 0) return SMELT_OK;
    ir_shape rows = {.rank = 2, .dim = {x->shape.dim[0], groups}};
    lower_parallel_for(c, &rows, 3 * ir_tensor_numel(x) / (x->shape.dim[0] * groups), gn_body, &j);
    return done(c);
}

/* ---- LRN: x / (bias + alpha/size * sum of x^2 over neighbouring channels)^beta */

typedef struct lrn_job {
    int64_t channels, before, after;
    double alpha, beta, bias;
    int64_t size;
    smelt_dtype dt;
} lrn_job;

static void lrn_body(lower_ctx *c, const kir_val *idx, void *user)
{
    const lrn_job *j = user;
    kir_kernel *K = c->k;
    int r = ir_in(c->g, c->n, 0)->shape.rank;
    kir_val lo = bin(K, KIR_MAX, bin(K, KIR_SUB, idx[1], kir_idx(K, j->before)), kir_idx(K, 0));
    kir_val hi = bin(K, KIR_MIN, kir_add(K, idx[1], kir_idx(K, j->after + 1)), kir_idx(K, j->channels));
    int sum = kir_var_new(K, j->dt, fc(K, j->dt, 0));
    kir_val ni[IR_MAX_RANK];
    for (int d = 0; d < r; d++) ni[d] = idx[d];
    ni[1] = kir_loop_begin(K, lo, hi, kir_idx(K, 1));
    kir_val v = lower_load(c, 0, ni);
    kir_var_set(K, sum, bin(K, KIR_ADD, kir_var_get(K, sum), bin(K, KIR_MUL, v, v)));
    kir_loop_end(K);
    kir_val base = bin(K, KIR_ADD, fc(K, j->dt, j->bias),
                       bin(K, KIR_MUL, fc(K, j->dt, j->alpha / (double)j->size), kir_var_get(K, sum)));
    kir_val den = bin(K, KIR_POW, base, fc(K, j->dt, j->beta));
    lower_store(c, 0, idx, bin(K, KIR_DIV, lower_load(c, 0, idx), den));
}

smelt_status lower_LRN(lower_ctx *c)
{
    const ir_tensor *x = ir_in(c->g, c->n, 0);
    norm_params scratch;
    const norm_params *p;
    TRY(norm_params_of(c->g, c->n, &scratch, &p));
    int64_t size = p->size;
    lrn_job j = {x->shape.dim[1], (size - 1) / 2, size / 2, p->alpha, p->beta, p->bias, size, x->dtype};
    if (ir_tensor_numel(x) == 0) return SMELT_OK;
    lower_parallel_for(c, &x->shape, 2 * size, lrn_body, &j);
    return done(c);
}
