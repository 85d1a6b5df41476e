/*
 * pool_lp.c — LpPool: the p-norm of each window, (sum |x|^p)^(1/p).
 *
 * requires: shapes inferred by infer_Pool (window_geom_get resolves pads,
 *           auto_pad, dilations and ceil_mode as for the other pools).
 * guarantees: one output element per iteration of lower_parallel_for, the
 *             window as inner loops; taps in the padding read a clamped index
 *             and count as zero.
 */
#include "lower/lower.h"

typedef struct lp_pool_job {
    window_geom w;
    smelt_dtype dt;
    double p;
} lp_pool_job;

static void lp_pool_body(lower_ctx *c, const kir_val *oidx, void *user)
{
    const lp_pool_job *j = user;
    const window_geom *w = &j->w;
    kir_kernel *K = c->k;
    kir_val zero = kir_idx(K, 0), fzero = kir_const_f(K, j->dt, 0);
    int acc = kir_var_new(K, j->dt, fzero);
    kir_val idx[IR_MAX_RANK], valid = 0;
    idx[0] = oidx[0];
    idx[1] = oidx[1];
    for (int d = 0; d < w->nsp; d++) {
        kir_val kd = kir_loop_begin(K, zero, kir_idx(K, w->kernel[d]), kir_idx(K, 1));
        kir_val pos = kir_add(K, kir_mul(K, oidx[2 + d], kir_idx(K, w->stride[d])),
                              kir_binary(K, KIR_SUB, kir_mul(K, kd, kir_idx(K, w->dilation[d])), kir_idx(K, w->pad_lo[d])));
        kir_val ok = kir_binary(K, KIR_AND, kir_binary(K, KIR_GE, pos, zero), kir_binary(K, KIR_LT, pos, kir_idx(K, w->in[d])));
        valid = valid ? kir_binary(K, KIR_AND, valid, ok) : ok;
        idx[2 + d] = lower_clamp(K, pos, w->in[d]);
    }
    kir_val x = kir_unary(K, KIR_ABS, lower_load(c, 0, idx));
    kir_val t = j->p == 2 ? kir_binary(K, KIR_MUL, x, x) : j->p == 1 ? x : kir_binary(K, KIR_POW, x, kir_const_f(K, j->dt, j->p));
    kir_var_set(K, acc, kir_binary(K, KIR_ADD, kir_var_get(K, acc), kir_select(K, valid, t, fzero)));
    for (int d = 0; d < w->nsp; d++) kir_loop_end(K);
    kir_val v = kir_var_get(K, acc);
    if (j->p == 2) v = kir_unary(K, KIR_SQRT, v);
    else if (j->p != 1) v = kir_binary(K, KIR_POW, v, kir_const_f(K, j->dt, 1.0 / j->p));
    lower_store(c, 0, oidx, v);
}

smelt_status lower_LpPool(lower_ctx *c)
{
    lp_pool_job j = {.dt = ir_in(c->g, c->n, 0)->dtype, .p = (double)ir_attr_int(c->n, "p", 2)};
    TRY(window_geom_get(c->g, c->n, &j.w));
    const ir_shape *os = &c->g->tensors[c->n->out[0]].shape;
    if (ir_shape_numel(os) == 0) return SMELT_OK;
    int64_t taps = 1;
    for (int d = 0; d < j.w.nsp; d++) taps *= j.w.kernel[d];
    lower_parallel_for(c, os, taps, lp_pool_body, &j);
    return c->k ? SMELT_OK : ir_node_fail(c->n, SMELT_ERR_NOMEM, "out of memory");
}
