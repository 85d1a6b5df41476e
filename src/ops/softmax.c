/*
 * softmax.c — Softmax, LogSoftmax and Hardmax: the shape rule and the CPU
 * lowerings (the GPU forms are in reduce_gpu.c), on the reduction family's
 * loop forms (ops/reduce_forms.h).
 *
 * requires: shapes inferred by infer_Softmax.
 * guarantees: one kernel per node; a row per iteration of lower_parallel_for,
 *             or a tile of columns per workgroup where the row's dim is not
 *             the last (the column form). Softmax makes three passes over its
 *             row (max, sum of exp(x - max), store), so it is stable for large
 *             inputs; over one dim of at most SM_KEEP_MAX it keeps the exps
 *             of the second pass in workgroup memory for the third.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lower/lower.h"
#include "ops/reduce.h"
#include "ops/reduce_forms.h"
#include "ops/shape.h"

/* ---- Softmax / LogSoftmax ----------------------------------------------- */

/* The longest row whose exps are kept (16 KiB of workgroup memory). */
#define SM_KEEP_MAX 4096

typedef struct sm_job {
    uint32_t mask;
    bool log;
    const ir_shape *in;
    smelt_dtype dt;
    int max, sum;
    kir_val max_v;                /* the row's max, read once after the max pass (one-dim rows) */
    int kept;                     /* workgroup memory holding the row's exp(x - max), or -1 */
    int axis;                     /* the one dim of the row longer than 1, or -1 */
    kir_val row_idx[IR_MAX_RANK]; /* sm_body's row index, for the element builders */
} sm_job;

static void sm_max(lower_ctx *c, const kir_val *idx, void *user)
{
    const sm_job *j = user;
    kir_val x = lower_load(c, 0, idx);
    kir_var_set(c->k, j->max, kir_binary(c->k, KIR_MAX, kir_var_get(c->k, j->max), x));
}

static void sm_sum(lower_ctx *c, const kir_val *idx, void *user)
{
    const sm_job *j = user;
    kir_kernel *K = c->k;
    kir_val e = kir_unary(K, KIR_EXP, kir_binary(K, KIR_SUB, lower_load(c, 0, idx), kir_var_get(K, j->max)));
    kir_var_set(K, j->sum, kir_binary(K, KIR_ADD, kir_var_get(K, j->sum), e));
}

typedef struct sm_out {
    const sm_job *j;
    kir_val max, scale; /* softmax: 1/sum; log-softmax: log(sum) */
} sm_out;

static void sm_store(lower_ctx *c, const kir_val *idx, void *user)
{
    const sm_out *s = user;
    kir_kernel *K = c->k;
    kir_val d = kir_binary(K, KIR_SUB, lower_load(c, 0, idx), s->max);
    kir_val v = s->j->log ? kir_binary(K, KIR_SUB, d, s->scale) : kir_binary(K, KIR_MUL, kir_unary(K, KIR_EXP, d), s->scale);
    lower_store(c, 0, idx, v);
}

/* The row is one dim (`axis` of j->row_idx) : its element i. */
static kir_val sm_row_x(lower_ctx *c, kir_val i, void *user)
{
    sm_job *j = user;
    kir_val idx[IR_MAX_RANK];
    memcpy(idx, j->row_idx, sizeof idx);
    idx[j->axis] = i;
    return lower_load(c, 0, idx);
}

static kir_val sm_row_exp(lower_ctx *c, kir_val i, void *user)
{
    sm_job *j = user;
    return kir_unary(c->k, KIR_EXP, kir_binary(c->k, KIR_SUB, sm_row_x(c, i, user), j->max_v));
}

/* exp(x - max) of element i, also kept for the store pass (sm_store_kept). */
static kir_val sm_row_exp_kept(lower_ctx *c, kir_val i, void *user)
{
    sm_job *j = user;
    kir_val e = sm_row_exp(c, i, user);
    kir_store(c->k, j->kept, i, e);
    return e;
}

static void sm_store_kept(lower_ctx *c, const kir_val *idx, void *user)
{
    const sm_out *s = user;
    lower_store(c, 0, idx, kir_binary(c->k, KIR_MUL, kir_load(c->k, s->j->kept, idx[s->j->axis]), s->scale));
}

static void sm_body(lower_ctx *c, const kir_val *idx, void *user)
{
    sm_job *j = user;
    kir_kernel *K = c->k;
    j->max = kir_var_new(K, j->dt, reduce_extreme(K, j->dt, true));
    if (j->axis >= 0) { /* one dim: vectorized partial max and sum (lower_reduce_var) */
        int64_t n = j->in->dim[j->axis];
        memcpy(j->row_idx, idx, sizeof(kir_val) * (size_t)j->in->rank);
        lower_reduce_var(c, j->max, j->dt, KIR_MAX, n, sm_row_x, j);
        /* the max read once, before the sum pass: a variable read inside
         * its loop kept the C emitter from making it a vector loop, so each
         * exp ran scalar (BERT's 12 x 128 x 128 alone, 1 thread, medians of
         * 2000 runs, three interleaved rounds: 0.206-0.213 -> 0.161-0.162
         * ms; onnxruntime 0.151-0.159 timed from Python) */
        j->max_v = kir_var_get(K, j->max);
        j->sum = kir_var_new(K, j->dt, kir_const_f(K, j->dt, 0));
        /* Softmax keeps each exp(x - max) of the sum pass in a row of workgroup
         * memory, so the store pass scales it instead of computing it again
         * (BERT's 12 x 128 x 128 at 1 thread, interleaved A/B, 300 runs x 3
         * rounds on a loaded host: min 0.287-0.290 -> 0.204-0.252 ms, median
         * 0.29-0.37 -> 0.26-0.27; onnxruntime 0.14). */
        j->kept = !j->log && j->dt == SMELT_F32 && n <= SM_KEEP_MAX ? kir_smem_add(K, j->dt, n) : -1;
        lower_reduce_var(c, j->sum, j->dt, KIR_ADD, n, j->kept >= 0 ? sm_row_exp_kept : sm_row_exp, j);
        if (j->kept >= 0) {
            sm_out s = {j, j->max_v, kir_binary(K, KIR_DIV, kir_const_f(K, j->dt, 1), kir_var_get(K, j->sum))};
            reduce_loops(c, j->in, j->mask, idx, sm_store_kept, &s);
            return;
        }
    } else {
        reduce_loops(c, j->in, j->mask, idx, sm_max, j);
        j->sum = kir_var_new(K, j->dt, kir_const_f(K, j->dt, 0));
        reduce_loops(c, j->in, j->mask, idx, sm_sum, j);
    }
    kir_val sum = kir_var_get(K, j->sum);
    sm_out s = {j, kir_var_get(K, j->max),
                j->log ? kir_unary(K, KIR_LOG, sum) : kir_binary(K, KIR_DIV, kir_const_f(K, j->dt, 1), sum)};
    reduce_loops(c, j->in, j->mask, idx, sm_store, &s);
}

/* Softmax over dims that keep the last one (a DFL head's softmax over 16
 * bins of [1, 16, 4, 2100]): the column form's three passes (max, sum of
 * exp(x - max), store) over a tile of columns, the maxima and sums in
 * workgroup memory, every load along the last dim. */
static void col_softmax(lower_ctx *c, const sm_job *j, const reduce_col_form *f)
{
    const ir_shape *in = j->in;
    kir_val fixed[IR_MAX_RANK], idx[IR_MAX_RANK], j0, t;
    kir_kernel *K = reduce_col_begin(c, in, j->mask, f, fixed, &j0);
    if (!K) return;
    int mx = kir_smem_add(K, j->dt, f->tile), sum = kir_smem_add(K, j->dt, f->tile);
    kir_val q = kir_loop_begin_parallel(K, kir_idx(K, 0), kir_idx(K, f->tile));
    kir_store(K, mx, q, reduce_extreme(K, j->dt, true));
    kir_store(K, sum, q, kir_const_f(K, j->dt, 0));
    kir_loop_end(K);
    int open = reduce_col_loops_begin(K, in, j->mask, f, fixed, j0, idx, &t);
    kir_store(K, mx, t, kir_binary(K, KIR_MAX, kir_load(K, mx, t), lower_load(c, 0, idx)));
    reduce_col_loops_end(K, open);
    open = reduce_col_loops_begin(K, in, j->mask, f, fixed, j0, idx, &t);
    kir_val e = kir_unary(K, KIR_EXP, kir_binary(K, KIR_SUB, lower_load(c, 0, idx), kir_load(K, mx, t)));
    kir_store(K, sum, t, kir_binary(K, KIR_ADD, kir_load(K, sum, t), e));
    reduce_col_loops_end(K, open);
    /* 1 / sum, or log(sum) */
    q = kir_loop_begin_parallel(K, kir_idx(K, 0), kir_idx(K, f->tile));
    kir_val s = kir_load(K, sum, q);
    kir_store(K, sum, q, j->log ? kir_unary(K, KIR_LOG, s) : kir_binary(K, KIR_DIV, kir_const_f(K, j->dt, 1), s));
    kir_loop_end(K);
    open = reduce_col_loops_begin(K, in, j->mask, f, fixed, j0, idx, &t);
    kir_val d = kir_binary(K, KIR_SUB, lower_load(c, 0, idx), kir_load(K, mx, t));
    kir_val sc = kir_load(K, sum, t);
    lower_store(c, 0, idx, j->log ? kir_binary(K, KIR_SUB, d, sc) : kir_binary(K, KIR_MUL, kir_unary(K, KIR_EXP, d), sc));
    reduce_col_loops_end(K, open);
}

static smelt_status softmax_lower(lower_ctx *c, bool log)
{
    const ir_tensor *x = ir_in(c->g, c->n, 0);
    int r = x->shape.rank;
    reduce_params scratch;
    const reduce_params *p;
    TRY(reduce_params_of(c->g, c->n, &scratch, &p));
    int64_t a = p->axis;
    int axis = (int)(a < 0 ? a + r : a);
    /* Before opset 13 the input is coerced to 2-D at `axis`: the row is every dim from it on. */
    uint32_t mask = c->g->opset >= 13 ? 1u << axis : (uint32_t)((1u << r) - 1) & ~((1u << axis) - 1);
    if (ir_tensor_numel(x) == 0) return SMELT_OK;
    ir_shape rows = x->shape;
    for (int d = 0; d < r; d++)
        if (mask & (1u << d)) rows.dim[d] = 1;
    sm_job j = {mask, log, &x->shape, x->dtype, 0, 0, 0, -1, lower_one_long_dim(&x->shape, mask), {0}};
    reduce_col_form f;
    if (x->dtype == SMELT_F32 && reduce_col_form_of(c, &x->shape, mask, true, 4096, &f)) {
        /* Panels narrower than a vector (the widest power of two dividing
         * 2100 is 4) ran scalar: one strip over the tile instead, which the C
         * compiler vectorizes with its own tail (nudenet_320n's DFL softmax
         * over [1, 16, 4, 2100] at 1 thread: 0.27 -> 0.12 ms). */
        if (f.p < c->target->vector_width) f.p = f.tile;
        col_softmax(c, &j, &f);
        return c->k ? SMELT_OK : ir_node_fail(c->n, SMELT_ERR_NOMEM, "out of memory");
    }
    lower_parallel_for(c, &rows, 3 * reduce_masked_numel(&x->shape, mask), sm_body, &j);
    return c->k ? SMELT_OK : ir_node_fail(c->n, SMELT_ERR_NOMEM, "out of memory");
}

smelt_status lower_Softmax(lower_ctx *c) { return softmax_lower(c, false); }
smelt_status lower_LogSoftmax(lower_ctx *c) { return softmax_lower(c, true); }

/* ---- Hardmax: one-hot of the first maximum of each row ------------------ */

typedef struct hm_job {
    sm_job sm;
    kir_val max;
    int found;
} hm_job;

static void hm_store(lower_ctx *c, const kir_val *idx, void *user)
{
    hm_job *h = user;
    kir_kernel *K = c->k;
    kir_val found = kir_var_get(K, h->found);
    kir_val hit = kir_binary(K, KIR_AND, kir_binary(K, KIR_EQ, lower_load(c, 0, idx), h->max), kir_unary(K, KIR_NOT, found));
    lower_store(c, 0, idx, kir_select(K, hit, kir_const_f(K, h->sm.dt, 1), kir_const_f(K, h->sm.dt, 0)));
    kir_var_set(K, h->found, kir_binary(K, KIR_OR, found, hit));
}

static void hm_body(lower_ctx *c, const kir_val *idx, void *user)
{
    hm_job *h = user;
    kir_kernel *K = c->k;
    h->sm.max = kir_var_new(K, h->sm.dt, reduce_extreme(K, h->sm.dt, true));
    reduce_loops(c, h->sm.in, h->sm.mask, idx, sm_max, &h->sm);
    h->max = kir_var_get(K, h->sm.max);
    h->found = kir_var_new(K, SMELT_BOOL, kir_const_i(K, SMELT_BOOL, 0));
    reduce_loops(c, h->sm.in, h->sm.mask, idx, hm_store, h);
}

smelt_status lower_Hardmax(lower_ctx *c)
{
    const ir_tensor *x = ir_in(c->g, c->n, 0);
    int r = x->shape.rank;
    reduce_params scratch;
    const reduce_params *p;
    TRY(reduce_params_of(c->g, c->n, &scratch, &p));
    int64_t a = p->axis;
    int axis = (int)(a < 0 ? a + r : a);
    uint32_t mask = c->g->opset >= 13 ? 1u << axis : (uint32_t)((1u << r) - 1) & ~((1u << axis) - 1);
    if (ir_tensor_numel(x) == 0) return SMELT_OK;
    ir_shape rows = x->shape;
    for (int d = 0; d < r; d++)
        if (mask & (1u << d)) rows.dim[d] = 1;
    hm_job h = {.sm = {mask, false, &x->shape, x->dtype, 0, 0}};
    lower_parallel_for(c, &rows, 2 * reduce_masked_numel(&x->shape, mask), hm_body, &h);
    return c->k ? SMELT_OK : ir_node_fail(c->n, SMELT_ERR_NOMEM, "out of memory");
}

smelt_status infer_Softmax(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_need_input(g, n, 0, "input"));
    const ir_tensor *x = ir_in(g, n, 0);
    TRY(infer_need_dtype(n, x, "input", DT_FLOAT));
    reduce_params scratch;
    const reduce_params *p;
    TRY(reduce_params_of(g, n, &scratch, &p));
    int axis = 0;
    TRY(infer_axis(n, "axis", p->axis, x->shape.rank, &axis));
    infer_put_out(g, n, 0, x->dtype, &x->shape);
    return SMELT_OK;
}
