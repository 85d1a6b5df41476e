/*
 * lower_pool.c — MaxPool (with optional Indices) and AveragePool.
 *
 * requires: shapes inferred by infer_Pool (window_geom_get gives the pads,
 *           auto_pad and ceil_mode resolved).
 * guarantees: one kernel per node, one output element per iteration of
 *             lower_parallel_for, the window as inner loops. Taps outside the
 *             input read a clamped (in-bounds) index and are masked out with a
 *             select, so every read is memory safe.
 */
#include "kernel/lower.h"

typedef struct pool_job {
    window_geom w;
    const ir_shape *in;
    smelt_dtype dt;
    bool is_max, indices, col_major, include_pad;
} pool_job;

static void pool_body(lower_ctx *c, const kir_val *oidx, void *user)
{
    const pool_job *j = user;
    kir_kernel *K = c->k;
    const window_geom *w = &j->w;
    kir_val zero = kir_idx(K, 0), one = kir_idx(K, 1);
    kir_val fzero = kir_const_f(K, j->dt, 0);
    int acc, cnt = 0, at = 0;
    if (j->is_max) {
        kir_val lowest = kir_is_float(j->dt) ? kir_const_f(K, j->dt, -__builtin_inf())
                       : kir_const_i(K, j->dt, j->dt == SMELT_I8 ? -128 : 0);
        acc = kir_var_new(K, j->dt, lowest);
        if (j->indices) at = kir_var_new(K, SMELT_I64, zero);
    } else {
        acc = kir_var_new(K, j->dt, fzero);
        cnt = kir_var_new(K, j->dt, fzero);
    }
    kir_val idx[IR_MAX_RANK], pos[IR_MAX_RANK];
    idx[0] = oidx[0];
    idx[1] = oidx[1];
    kir_val valid = 0, counted = 0;
    for (int d = 0; d < w->nsp; d++) {
        kir_val kd = kir_loop_begin(K, zero, kir_idx(K, w->kernel[d]), one);
        pos[d] = kir_add(K, kir_mul(K, oidx[2 + d], kir_idx(K, w->stride[d])),
                         kir_binary(K, KIR_SUB, kir_mul(K, kd, kir_idx(K, w->dilation[d])), kir_idx(K, w->pad_lo[d])));
        kir_val ok = kir_binary(K, KIR_AND, kir_binary(K, KIR_GE, pos[d], zero), kir_binary(K, KIR_LT, pos[d], kir_idx(K, w->in[d])));
        valid = valid ? kir_binary(K, KIR_AND, valid, ok) : ok;
        if (!j->is_max && j->include_pad) {
            kir_val in_pad = kir_binary(K, KIR_LT, pos[d], kir_idx(K, w->in[d] + w->pad_hi[d]));
            counted = counted ? kir_binary(K, KIR_AND, counted, in_pad) : in_pad;
        }
        idx[2 + d] = lower_clamp(K, pos[d], w->in[d]);
    }
    kir_val x = lower_load(c, 0, idx);
    kir_val a = kir_var_get(K, acc);
    if (j->is_max) {
        kir_val better = kir_binary(K, KIR_AND, valid, kir_binary(K, KIR_GT, x, a));
        kir_var_set(K, acc, kir_select(K, better, x, a));
        if (j->indices) {
            kir_val lin;
            if (j->col_major) {
                /* storage_order=1: column-major within each (n, c) image */
                int64_t h = w->in[0], wd = w->in[1];
                kir_val nc = kir_add(K, kir_mul(K, idx[0], kir_idx(K, j->in->dim[1])), idx[1]);
                lin = kir_add(K, kir_mul(K, nc, kir_idx(K, h * wd)), kir_add(K, kir_mul(K, idx[3], kir_idx(K, h)), idx[2]));
            } else {
                lin = lower_linear(K, j->in, idx);
            }
            kir_var_set(K, at, kir_select(K, better, lin, kir_var_get(K, at)));
        }
    } else {
        kir_var_set(K, acc, kir_binary(K, KIR_ADD, a, kir_select(K, valid, x, fzero)));
        kir_val cv = kir_var_get(K, cnt);
        kir_val inc = kir_select(K, j->include_pad ? counted : valid, kir_const_f(K, j->dt, 1), fzero);
        kir_var_set(K, cnt, kir_binary(K, KIR_ADD, cv, inc));
    }
    for (int d = 0; d < w->nsp; d++) kir_loop_end(K);
    kir_val v = kir_var_get(K, acc);
    if (!j->is_max) v = kir_binary(K, KIR_DIV, v, kir_var_get(K, cnt));
    lower_store(c, 0, oidx, v);
    if (j->indices) lower_store(c, 1, oidx, kir_var_get(K, at));
}

static smelt_status pool_lower(lower_ctx *c, bool is_max)
{
    pool_job j = {.is_max = is_max};
    TRY(window_geom_get(c->g, c->n, &j.w));
    const ir_tensor *x = ir_in(c->g, c->n, 0);
    const ir_shape *out = &c->g->tensors[c->n->out[0]].shape;
    j.in = &x->shape;
    j.dt = x->dtype;
    j.indices = is_max && c->n->n_out > 1 && c->n->out[1] >= 0;
    j.col_major = ir_attr_int(c->n, "storage_order", 0) != 0;
    j.include_pad = ir_attr_int(c->n, "count_include_pad", 0) != 0;
    if (ir_shape_numel(out) == 0) return SMELT_OK;
    int64_t taps = 1;
    for (int d = 0; d < j.w.nsp; d++) taps *= j.w.kernel[d];
    lower_parallel_for(c, out, taps, pool_body, &j);
    return c->k ? SMELT_OK : ir_node_fail(c->n, SMELT_ERR_NOMEM, "out of memory");
}

smelt_status lower_MaxPool(lower_ctx *c) { return pool_lower(c, true); }
smelt_status lower_AveragePool(lower_ctx *c) { return pool_lower(c, false); }
