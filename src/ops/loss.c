/*
 * loss.c — the classification losses, NegativeLogLikelihoodLoss and
 * SoftmaxCrossEntropyLoss (the log-softmax over the classes first):
 * attributes, shape rule and lowering.
 *
 * requires: shapes inferred by the rule here.
 * guarantees: one iteration of lower_parallel_for per loss element (reduction
 *             none) or one for the whole sum (sum, mean); class indices read at
 *             run time are clamped before any load, and an ignored target
 *             weighs 0.
 */
#include <math.h>
#include <string.h>

#include "lower/lower.h"
#include "ops/loss.h"
#include "ops/shape.h"

smelt_status parse_loss(const ir_graph *g, const ir_node *n, void *params)
{
    (void)g;
    loss_params *p = params;
    const char *red = ir_attr_string(n, "reduction", "mean");
    if (!strcmp(red, "none")) p->reduction = LOSS_NONE;
    else if (!strcmp(red, "sum")) p->reduction = LOSS_SUM;
    else if (!strcmp(red, "mean")) p->reduction = LOSS_MEAN;
    else return ir_node_fail(n, SMELT_ERR_MODEL, "reduction '%.40s' must be none, sum or mean", red);
    p->has_ignore = ir_attr_find(n, "ignore_index") != NULL;
    p->ignore_index = ir_attr_int(n, "ignore_index", 0);
    return SMELT_OK;
}

/* n's loss_params (ir_node_params_get). */
static smelt_status loss_params_of(const ir_graph *g, const ir_node *n, loss_params *scratch, const loss_params **p)
{
    const void *v;
    TRY(ir_node_params_get(g, n, scratch, &v));
    *p = v;
    return SMELT_OK;
}

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
    loss_params scratch;
    const loss_params *p;
    TRY(loss_params_of(g, n, &scratch, &p));
    ir_shape out = {.rank = 0};
    if (p->reduction == LOSS_NONE) out = t->shape;
    TRY(infer_set_out(g, n, 0, x->dtype, &out));
    return infer_set_out(g, n, 1, x->dtype, &x->shape);
}

static kir_val fc(kir_kernel *K, smelt_dtype dt, double v) { return kir_const_f(K, dt, v); }

static kir_val bin(kir_kernel *K, kir_op op, kir_val a, kir_val b) { return kir_binary(K, op, a, b); }

typedef struct loss_job {
    const ir_shape *x;   /* [N, C, d...] */
    smelt_dtype dt;
    bool softmax;        /* SoftmaxCrossEntropyLoss: log-softmax over C first */
    bool has_ii;
    int64_t ii;          /* ignore_index */
    int red;             /* 0 none, 1 sum, 2 mean */
} loss_job;

/* max_c x[n, c, d...] and log(sum_c exp(x - max)): the log-softmax of row xi. */
static void row_lse(lower_ctx *c, const loss_job *j, const kir_val *xi, kir_val *max, kir_val *lse)
{
    kir_kernel *K = c->k;
    kir_val ri[IR_MAX_RANK];
    memcpy(ri, xi, sizeof(kir_val) * (size_t)j->x->rank);
    int m = kir_var_new(K, j->dt, fc(K, j->dt, -INFINITY));
    ri[1] = kir_loop_begin(K, kir_idx(K, 0), kir_idx(K, j->x->dim[1]), kir_idx(K, 1));
    kir_var_set(K, m, bin(K, KIR_MAX, kir_var_get(K, m), lower_load(c, 0, ri)));
    kir_loop_end(K);
    *max = kir_var_get(K, m);
    int s = kir_var_new(K, j->dt, fc(K, j->dt, 0));
    ri[1] = kir_loop_begin(K, kir_idx(K, 0), kir_idx(K, j->x->dim[1]), kir_idx(K, 1));
    kir_val e = kir_unary(K, KIR_EXP, bin(K, KIR_SUB, lower_load(c, 0, ri), *max));
    kir_var_set(K, s, bin(K, KIR_ADD, kir_var_get(K, s), e));
    kir_loop_end(K);
    *lse = kir_unary(K, KIR_LOG, kir_var_get(K, s));
}

/* Loss and weight of the target element at tidx ([N, d...]). */
static void loss_at(lower_ctx *c, const loss_job *j, const kir_val *tidx, kir_val *loss, kir_val *weight)
{
    kir_kernel *K = c->k;
    smelt_dtype dt = j->dt;
    kir_val t = kir_cast(K, SMELT_I64, lower_load(c, 1, tidx));
    kir_val cls = lower_clamp(K, t, j->x->dim[1]);
    kir_val w = ir_in(c->g, c->n, 2) ? lower_load(c, 2, &cls) : fc(K, dt, 1);
    if (j->has_ii) w = kir_select(K, bin(K, KIR_EQ, t, kir_idx(K, j->ii)), fc(K, dt, 0), w);
    kir_val xi[IR_MAX_RANK];
    xi[0] = tidx[0];
    for (int d = 2; d < j->x->rank; d++) xi[d] = tidx[d - 1];
    xi[1] = cls;
    kir_val v = lower_load(c, 0, xi);
    if (j->softmax) {
        kir_val max, lse;
        row_lse(c, j, xi, &max, &lse);
        v = bin(K, KIR_SUB, bin(K, KIR_SUB, v, max), lse);
    }
    *loss = bin(K, KIR_MUL, kir_unary(K, KIR_NEG, v), w);
    if (j->has_ii) *loss = kir_select(K, bin(K, KIR_EQ, t, kir_idx(K, j->ii)), fc(K, dt, 0), *loss);
    *weight = w;
}

static void loss_none_body(lower_ctx *c, const kir_val *tidx, void *user)
{
    kir_val loss, w;
    loss_at(c, user, tidx, &loss, &w);
    lower_store(c, 0, tidx, loss);
}

static void loss_reduce_body(lower_ctx *c, const kir_val *unused, void *user)
{
    (void)unused;
    const loss_job *j = user;
    kir_kernel *K = c->k;
    const ir_shape *ts = &ir_in(c->g, c->n, 1)->shape;
    int sl = kir_var_new(K, j->dt, fc(K, j->dt, 0)), sw = kir_var_new(K, j->dt, fc(K, j->dt, 0));
    kir_val tidx[IR_MAX_RANK];
    for (int d = 0; d < ts->rank; d++) tidx[d] = kir_loop_begin(K, kir_idx(K, 0), kir_idx(K, ts->dim[d]), kir_idx(K, 1));
    kir_val loss, w;
    loss_at(c, j, tidx, &loss, &w);
    kir_var_set(K, sl, bin(K, KIR_ADD, kir_var_get(K, sl), loss));
    kir_var_set(K, sw, bin(K, KIR_ADD, kir_var_get(K, sw), w));
    for (int d = 0; d < ts->rank; d++) kir_loop_end(K);
    kir_val v = kir_var_get(K, sl);
    if (j->red == 2) v = bin(K, KIR_DIV, v, kir_var_get(K, sw));
    lower_store(c, 0, NULL, v);
}

static void logprob_body(lower_ctx *c, const kir_val *row, void *user)
{
    const loss_job *j = user;
    kir_kernel *K = c->k;
    kir_val max, lse, xi[IR_MAX_RANK];
    row_lse(c, j, row, &max, &lse);
    memcpy(xi, row, sizeof(kir_val) * (size_t)j->x->rank);
    xi[1] = kir_loop_begin(K, kir_idx(K, 0), kir_idx(K, j->x->dim[1]), kir_idx(K, 1));
    lower_store(c, 1, xi, bin(K, KIR_SUB, bin(K, KIR_SUB, lower_load(c, 0, xi), max), lse));
    kir_loop_end(K);
}

smelt_status lower_NegativeLogLikelihoodLoss(lower_ctx *c)
{
    const ir_tensor *x = ir_in(c->g, c->n, 0), *t = ir_in(c->g, c->n, 1);
    loss_params scratch;
    const loss_params *p;
    TRY(loss_params_of(c->g, c->n, &scratch, &p));
    loss_job j = {&x->shape, x->dtype, c->n->op == OP_SoftmaxCrossEntropyLoss, p->has_ignore, p->ignore_index,
                  p->reduction == LOSS_NONE ? 0 : p->reduction == LOSS_SUM ? 1 : 2};
    int64_t cls = x->shape.dim[1];
    if (j.red == 0) {
        if (ir_tensor_numel(t) > 0) lower_parallel_for(c, &t->shape, j.softmax ? 3 * cls : 1, loss_none_body, &j);
    } else {
        ir_shape scalar = {.rank = 0};
        lower_parallel_for(c, &scalar, 1, loss_reduce_body, &j);
    }
    if (j.softmax && c->n->n_out > 1 && c->n->out[1] >= 0 && ir_tensor_numel(x) > 0) {
        ir_shape rows = x->shape;
        rows.dim[1] = 1;
        lower_parallel_for(c, &rows, 3 * cls, logprob_body, &j);
    }
    return c->k ? SMELT_OK : ir_node_fail(c->n, SMELT_ERR_NOMEM, "out of memory");
}
