/*
 * pool.c — MaxPool (with optional Indices), AveragePool and LpPool: the
 * shape rule and lowerings, over conv.c's window geometry.
 *
 * requires: shapes inferred by infer_Pool (window_geom_get gives the pads,
 *           auto_pad and ceil_mode resolved).
 *           auto_pad and ceil_mode resolved).
 * guarantees: one kernel per node. 2-D float pools without Indices on the
 *             CPU take the row form: a unit is one output row, kept in
 *             workgroup memory; per tap row inside the input and per tap
 *             column, one loop over exactly the output columns whose input is
 *             in bounds (their range is computed at compile time) folds that
 *             tap in, so the loop has no guard and vectorizes. Taps are folded
 *             in the same (kh, kw) order as the general form, so sums agree
 *             bit for bit. Everything else: one output element per iteration
 *             of lower_parallel_for, the window as inner loops; taps outside
 *             the input read a clamped (in-bounds) index and are masked out
 *             with a select, so every read is memory safe.
 */
#include <stdlib.h>
#include <string.h>

#include "lower/lower.h"
#include "ops/conv.h"
#include "ops/pool.h"
#include "ops/shape.h"

#define POOL_ROW_BYTES (64 * 1024) /* the row form's workgroup memory (a stack array on the CPU), at most */

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

/* Output columns [lo, hi) whose tap kw reads inside [0, w + extra) of the
 * input row (extra: the right pad, to count padded taps). */
static void tap_cols(const window_geom *w, int64_t kw, int64_t extra, int64_t *lo, int64_t *hi)
{
    int64_t off = kw * w->dilation[1] - w->pad_lo[1], s = w->stride[1], ow = w->out[1];
    int64_t a = off >= 0 ? 0 : (-off + s - 1) / s;                 /* ow*s + off >= 0 */
    int64_t last = w->in[1] + extra - 1 - off;                     /* ow*s <= last */
    int64_t b = last < 0 ? 0 : last / s + 1;
    *lo = a < ow ? a : ow;
    *hi = b < ow ? b : ow;
    if (*hi < *lo) *hi = *lo;
}

static void pool_row_body(lower_ctx *c, const kir_val *idx, void *user)
{
    const pool_job *j = user;
    const window_geom *w = &j->w;
    kir_kernel *K = c->k;
    kir_val zero = kir_idx(K, 0), one = kir_idx(K, 1), fzero = kir_const_f(K, j->dt, 0);
    int64_t ow = w->out[1];
    int acc = kir_smem_add(K, j->dt, ow), cnt = j->is_max ? -1 : kir_smem_add(K, j->dt, ow);
    kir_val o = kir_loop_begin_parallel(K, zero, kir_idx(K, ow));
    kir_store(K, acc, o, j->is_max ? kir_const_f(K, j->dt, -__builtin_inf()) : fzero);
    if (cnt >= 0) kir_store(K, cnt, o, fzero);
    kir_loop_end(K);
    kir_val kh = kir_loop_begin(K, zero, kir_idx(K, w->kernel[0]), one);
    kir_val ih = kir_add(K, kir_mul(K, idx[2], kir_idx(K, w->stride[0])),
                         kir_binary(K, KIR_SUB, kir_mul(K, kh, kir_idx(K, w->dilation[0])), kir_idx(K, w->pad_lo[0])));
    kir_val xi[4] = {idx[0], idx[1], ih};
    for (int pass = 0; pass < (j->include_pad ? 2 : 1); pass++) {
        /* pass 0: taps inside the input (values, and counts unless include_pad);
         * pass 1: the count of taps inside the padded input */
        int64_t extra = pass ? w->pad_hi[0] : 0;
        kir_val in = kir_binary(K, KIR_AND, kir_binary(K, KIR_GE, ih, pass ? kir_idx(K, -w->pad_lo[0]) : zero),
                                kir_binary(K, KIR_LT, ih, kir_idx(K, w->in[0] + extra)));
        kir_if_begin(K, in);
        for (int64_t kw = 0; kw < w->kernel[1]; kw++) {
            int64_t lo, hi;
            tap_cols(w, kw, pass ? w->pad_hi[1] : 0, &lo, &hi);
            if (pass) lo = 0; /* padded taps start at column -pad_lo: every column counts from 0 */
            if (lo >= hi) continue;
            o = kir_loop_begin_parallel(K, kir_idx(K, lo), kir_idx(K, hi));
            if (!pass) {
                xi[3] = kir_add(K, kir_mul(K, o, kir_idx(K, w->stride[1])), kir_idx(K, kw * w->dilation[1] - w->pad_lo[1]));
                kir_val x = lower_load(c, 0, xi), a = kir_load(K, acc, o);
                kir_store(K, acc, o, j->is_max ? kir_select(K, kir_binary(K, KIR_GT, x, a), x, a) : kir_binary(K, KIR_ADD, a, x));
            }
            if (cnt >= 0 && pass == (j->include_pad ? 1 : 0))
                kir_store(K, cnt, o, kir_binary(K, KIR_ADD, kir_load(K, cnt, o), kir_const_f(K, j->dt, 1)));
            kir_loop_end(K);
        }
        kir_if_end(K);
    }
    kir_loop_end(K);
    o = kir_loop_begin_parallel(K, zero, kir_idx(K, ow));
    kir_val v = kir_load(K, acc, o);
    if (cnt >= 0) v = kir_binary(K, KIR_DIV, v, kir_load(K, cnt, o));
    kir_val yi[4] = {idx[0], idx[1], idx[2], o};
    lower_store(c, 0, yi, v);
    kir_loop_end(K);
}

static smelt_status pool_lower(lower_ctx *c, bool is_max)
{
    pool_job j = {.is_max = is_max};
    window_params scratch;
    const window_params *p;
    TRY(window_params_of(c->g, c->n, &scratch, &p));
    TRY(window_geom_get(c->g, c->n, &j.w));
    const ir_tensor *x = ir_in(c->g, c->n, 0);
    const ir_shape *out = &c->g->tensors[c->n->out[0]].shape;
    j.in = &x->shape;
    j.dt = x->dtype;
    j.indices = is_max && c->n->n_out > 1 && c->n->out[1] >= 0;
    j.col_major = p->storage_order;
    j.include_pad = p->count_include_pad;
    if (ir_shape_numel(out) == 0) return SMELT_OK;
    int64_t taps = 1;
    for (int d = 0; d < j.w.nsp; d++) taps *= j.w.kernel[d];
    if (c->target->wg_size == 1 && j.w.nsp == 2 && !j.indices && kir_is_float(j.dt) &&
        2 * out->dim[3] * (int64_t)smelt_dtype_size(j.dt) <= POOL_ROW_BYTES) {
        ir_shape rows = {.rank = 4, .dim = {out->dim[0], out->dim[1], out->dim[2], 1}};
        lower_parallel_for(c, &rows, taps * out->dim[3], pool_row_body, &j);
    } else {
        lower_parallel_for(c, out, taps, pool_body, &j);
    }
    return c->k ? SMELT_OK : ir_node_fail(c->n, SMELT_ERR_NOMEM, "out of memory");
}

smelt_status lower_MaxPool(lower_ctx *c) { return pool_lower(c, true); }
smelt_status lower_AveragePool(lower_ctx *c) { return pool_lower(c, false); }

smelt_status infer_Pool(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_need_input(g, n, 0, "X"));
    const ir_tensor *x = ir_in(g, n, 0);
    bool is_max = n->op == OP_MaxPool;
    TRY(infer_need_dtype(n, x, "input", is_max ? DT_FLOAT | DT(I8) | DT(U8) : DT_FLOAT));
    window_geom w;
    TRY(window_geom_get(g, n, &w));
    window_params scratch;
    const window_params *p;
    TRY(window_params_of(g, n, &scratch, &p));
    if (is_max && p->storage_order && infer_has_out(n, 1) && w.nsp != 2)
        return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "storage_order=1 is defined for 2-D pooling only");
    ir_shape out = window_out_shape(&x->shape, x->shape.dim[1], &w);
    infer_put_out(g, n, 0, x->dtype, &out);
    infer_put_out(g, n, 1, SMELT_I64, &out);
    return SMELT_OK;
}

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
    window_params scratch;
    const window_params *p;
    TRY(window_params_of(c->g, c->n, &scratch, &p));
    lp_pool_job j = {.dt = ir_in(c->g, c->n, 0)->dtype, .p = (double)p->p};
    TRY(window_geom_get(c->g, c->n, &j.w));
    const ir_shape *os = &c->g->tensors[c->n->out[0]].shape;
    if (ir_shape_numel(os) == 0) return SMELT_OK;
    int64_t taps = 1;
    for (int d = 0; d < j.w.nsp; d++) taps *= j.w.kernel[d];
    lower_parallel_for(c, os, taps, lp_pool_body, &j);
    return c->k ? SMELT_OK : ir_node_fail(c->n, SMELT_ERR_NOMEM, "out of memory");
}
