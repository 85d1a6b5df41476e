/*
 * reduce.c — row reductions: Reduce*, ArgMax/ArgMin and the global pools:
 * shape rules and lowerings, and the loop forms the family shares
 * (ops/reduce_forms.h). Softmax/LogSoftmax/Hardmax are in ops/softmax.c, the
 * GPU forms in reduce_gpu.c.
 *
 * requires: shapes inferred by infer_Reduce / infer_ArgMax / infer_GlobalPool.
 * guarantees: one kernel per node, one output element per iteration of
 *             lower_parallel_for (or, in the column form, one tile of
 *             columns per workgroup); the reduced dims are inner loops,
 *             accumulating in a variable of the input's dtype.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuse/fuse.h"
#include "lower/lower.h"
#include "ops/reduce.h"
#include "ops/reduce_forms.h"
#include "ops/shape.h"

/* Loops over the dims of `shape` in `mask`; the other dims take their index
 * from `fixed`. Calls fn with the full index inside the innermost loop. */
void reduce_loops(lower_ctx *c, const ir_shape *shape, uint32_t mask, const kir_val *fixed, reduce_fn fn,
                         void *user)
{
    kir_kernel *K = c->k;
    kir_val idx[IR_MAX_RANK] = {0};
    int open = 0;
    for (int d = 0; d < shape->rank; d++) {
        if (mask & (1u << d)) {
            idx[d] = shape->dim[d] == 1 ? kir_idx(K, 0)
                                         : kir_loop_begin(K, kir_idx(K, 0), kir_idx(K, shape->dim[d]), kir_idx(K, 1));
            open += shape->dim[d] != 1;
        } else {
            idx[d] = fixed[d];
        }
    }
    fn(c, idx, user);
    while (open--) kir_loop_end(K);
}

int64_t reduce_masked_numel(const ir_shape *s, uint32_t mask)
{
    int64_t n = 1;
    for (int d = 0; d < s->rank; d++)
        if (mask & (1u << d)) n *= s->dim[d];
    return n;
}

/* The most negative (or positive) value of dtype dt, as a constant. */
kir_val reduce_extreme(kir_kernel *K, smelt_dtype dt, bool lowest)
{
    switch (dt) {
    case SMELT_F32: case SMELT_F64: case SMELT_F16: case SMELT_BF16: return kir_const_f(K, dt, lowest ? -INFINITY : INFINITY);
    case SMELT_I64: return kir_const_i(K, dt, lowest ? INT64_MIN : INT64_MAX);
    case SMELT_I32: return kir_const_i(K, dt, lowest ? INT32_MIN : INT32_MAX);
    case SMELT_I16: return kir_const_i(K, dt, lowest ? INT16_MIN : INT16_MAX);
    case SMELT_I8: return kir_const_i(K, dt, lowest ? INT8_MIN : INT8_MAX);
    case SMELT_U8: return kir_const_i(K, dt, lowest ? 0 : UINT8_MAX);
    case SMELT_U16: return kir_const_i(K, dt, lowest ? 0 : UINT16_MAX);
    case SMELT_U32: return kir_const_i(K, dt, lowest ? 0 : UINT32_MAX);
    case SMELT_U64: return kir_const_i(K, dt, lowest ? 0 : -1);
    case SMELT_BOOL: return kir_const_i(K, dt, lowest ? 0 : 1);
    default: return kir_const_i(K, dt, 0);
    }
}

/* ---- Reduce* and global pools -------------------------------------------- */

typedef enum red_kind {
    RED_SUM, RED_MEAN, RED_MAX, RED_MIN, RED_PROD, RED_L1, RED_L2, RED_SUMSQ, RED_LOGSUM, RED_LOGSUMEXP
} red_kind;

typedef struct red_job {
    red_kind kind;
    uint32_t mask;
    bool keep;
    const ir_shape *in;
    smelt_dtype dt;
    int var;
    kir_val max; /* LogSumExp: the row's maximum, subtracted before exp */
    /* the reductions of the same input and axes computed in the same loops
     * (fuse.h "siblings"): their kinds, accumulators and nodes */
    int n_sib;
    red_kind sib_kind[FUSE_SIBLINGS_MAX];
    int sib_var[FUSE_SIBLINGS_MAX];
    const ir_node *sib_node[FUSE_SIBLINGS_MAX];
} red_job;

/* Part k of job j: k 0 is the root's own reduction, k > 0 its siblings. */
static red_kind part_kind(const red_job *j, int k) { return k ? j->sib_kind[k - 1] : j->kind; }
static int part_var(const red_job *j, int k) { return k ? j->sib_var[k - 1] : j->var; }
static kir_op part_op(const red_job *j, int k)
{
    red_kind r = part_kind(j, k);
    return r == RED_MAX ? KIR_MAX : r == RED_MIN ? KIR_MIN : r == RED_PROD ? KIR_MUL : KIR_ADD;
}

static void red_step(lower_ctx *c, const kir_val *idx, void *user)
{
    const red_job *j = user;
    kir_kernel *K = c->k;
    kir_val x = lower_load(c, 0, idx);
    bool b = j->dt == SMELT_BOOL;
    for (int k = 0; k <= j->n_sib; k++) {
        kir_val a = kir_var_get(K, part_var(j, k)), v;
        switch (part_kind(j, k)) {
        case RED_MAX: v = kir_binary(K, b ? KIR_OR : KIR_MAX, a, x); break;
        case RED_MIN: v = kir_binary(K, b ? KIR_AND : KIR_MIN, a, x); break;
        case RED_PROD: v = kir_binary(K, KIR_MUL, a, x); break;
        case RED_L1: v = kir_binary(K, KIR_ADD, a, kir_unary(K, KIR_ABS, x)); break;
        case RED_L2: case RED_SUMSQ: v = kir_binary(K, KIR_ADD, a, kir_binary(K, KIR_MUL, x, x)); break;
        case RED_LOGSUMEXP:
            v = kir_binary(K, KIR_ADD, a, kir_unary(K, KIR_EXP, kir_binary(K, KIR_SUB, x, j->max)));
            break;
        default: v = kir_binary(K, KIR_ADD, a, x); break;
        }
        kir_var_set(K, part_var(j, k), v);
    }
}

typedef struct red_row {
    const red_job *j;
    const kir_val *fixed;
    int dim;        /* the row's dim, or -1: the reduced dims from `flat` on as one row */
    int flat;
    ir_shape sub;   /* the dims from `flat` on */
} red_row;

/* Element x as part k of j adds it: x, |x|, x*x or exp(x - max). */
static kir_val red_term(lower_ctx *c, const red_job *j, int k, kir_val x)
{
    kir_kernel *K = c->k;
    switch (part_kind(j, k)) {
    case RED_L1: return kir_unary(K, KIR_ABS, x);
    case RED_L2: case RED_SUMSQ: return kir_binary(K, KIR_MUL, x, x);
    case RED_LOGSUMEXP: return kir_unary(K, KIR_EXP, kir_binary(K, KIR_SUB, x, j->max));
    default: return x;
    }
}

/* Element i of the row as each part of the job adds it. */
static void red_row_elem(lower_ctx *c, kir_val i, void *user, kir_val *out)
{
    const red_row *r = user;
    kir_kernel *K = c->k;
    kir_val idx[IR_MAX_RANK];
    for (int d = 0; d < r->j->in->rank; d++)
        idx[d] = d == r->dim ? i : (r->j->mask & (1u << d)) ? kir_idx(K, 0) : r->fixed[d];
    if (r->dim < 0) lower_unravel(K, &r->sub, i, idx + r->flat);
    kir_val x = lower_load(c, 0, idx);
    for (int k = 0; k <= r->j->n_sib; k++) out[k] = red_term(c, r->j, k, x);
}

/* Several reduced dims (a whole tensor's min and max, say): vector lanes over
 * the innermost reduced dim, kept across the loops of the other reduced dims
 * and added into j->var once at the end, so the row's loads and the fused
 * producers' math (a sigmoid's exp) vectorize as in a one-dim row. */
typedef struct red_lanes {
    red_job *j;
    int dim;
    int lanes[FUSE_SIBLINGS_MAX];
    int64_t v;
} red_lanes;

static void red_lanes_elem(lower_ctx *c, const kir_val *idx, int dim, kir_val i, const red_job *j, kir_val *out)
{
    kir_val at[IR_MAX_RANK];
    for (int d = 0; d < j->in->rank; d++) at[d] = d == dim ? i : idx[d];
    kir_val x = lower_load(c, 0, at);
    for (int k = 0; k <= j->n_sib; k++) out[k] = red_term(c, j, k, x);
}

static void red_lanes_body(lower_ctx *c, const kir_val *idx, void *user)
{
    const red_lanes *l = user;
    const red_job *j = l->j;
    kir_kernel *K = c->k;
    kir_val e[FUSE_SIBLINGS_MAX];
    int64_t n = j->in->dim[l->dim], nv = n / l->v * l->v;
    kir_val i0 = kir_loop_begin(K, kir_idx(K, 0), kir_idx(K, nv), kir_idx(K, l->v));
    kir_val q = kir_loop_begin_parallel(K, kir_idx(K, 0), kir_idx(K, l->v));
    red_lanes_elem(c, idx, l->dim, kir_add(K, i0, q), j, e);
    for (int k = 0; k <= j->n_sib; k++)
        kir_store(K, l->lanes[k], q, kir_binary(K, part_op(j, k), kir_load(K, l->lanes[k], q), e[k]));
    kir_loop_end(K);
    kir_loop_end(K);
    if (nv == n) return;
    kir_val i = kir_loop_begin(K, kir_idx(K, nv), kir_idx(K, n), kir_idx(K, 1));
    red_lanes_elem(c, idx, l->dim, i, j, e);
    for (int k = 0; k <= j->n_sib; k++)
        kir_var_set(K, part_var(j, k), kir_binary(K, part_op(j, k), kir_var_get(K, part_var(j, k)), e[k]));
    kir_loop_end(K);
}

static bool red_lanes_loops(lower_ctx *c, const kir_val *fixed, red_job *j)
{
    kir_kernel *K = c->k;
    int64_t v = c->target->wg_size == 1 ? c->target->vector_width : 0;
    int dim = -1;
    for (int d = j->in->rank - 1; d >= 0 && dim < 0; d--)
        if ((j->mask & (1u << d)) && j->in->dim[d] > 1) dim = d;
    if (v < 2 || dim < 0 || j->in->dim[dim] < v) return false;
    red_lanes l = {.j = j, .dim = dim, .v = v};
    for (int k = 0; k <= j->n_sib; k++) {
        kir_op op = part_op(j, k);
        l.lanes[k] = kir_smem_add(K, j->dt, v);
        kir_val id = kir_const_f(K, j->dt, op == KIR_ADD ? 0.0 : op == KIR_MAX ? -INFINITY : INFINITY);
        kir_val q = kir_loop_begin_parallel(K, kir_idx(K, 0), kir_idx(K, v));
        kir_store(K, l.lanes[k], q, id);
        kir_loop_end(K);
    }
    reduce_loops(c, j->in, j->mask & ~(1u << dim), fixed, red_lanes_body, &l);
    for (int k = 0; k <= j->n_sib; k++) {
        kir_val q = kir_loop_begin(K, kir_idx(K, 0), kir_idx(K, v), kir_idx(K, 1));
        kir_var_set(K, part_var(j, k), kir_binary(K, part_op(j, k), kir_var_get(K, part_var(j, k)), kir_load(K, l.lanes[k], q)));
        kir_loop_end(K);
    }
    return true;
}

/* Where the reduced dims longer than 1 are all the input's last dims longer
 * than 1 (a global pool's H and W), the first of them: they lie in memory as
 * one contiguous row, which lower_reduce_vars takes in vector lanes (a 7x7 or
 * 10x10 plane is no dim of two vectors for red_lanes_loops); else -1.
 * GlobalAveragePool alone, --profile kernel time over 300 runs, 1 thread,
 * serial sum -> this: 512 ch at 10x10 22.9 -> 3.9 us, at 7x7 10.9 -> 2.8. */
static int red_flat_from(const red_job *j)
{
    int first = -1;
    for (int d = 0; d < j->in->rank; d++) {
        if (j->in->dim[d] == 1) continue;
        bool red = j->mask & (1u << d);
        if (red && first < 0) first = d;
        if (!red && first >= 0) return -1;
    }
    return first;
}

/* Each part's variable op= every element of the row: vector lanes where the
 * parts are float and none is a product. */
static void red_row_loops(lower_ctx *c, const kir_val *fixed, red_job *j)
{
    /* lower_reduce_vars: float sums, means, norms, max and min of one dim */
    bool lanes_ok = kir_is_float(j->dt);
    for (int k = 0; k <= j->n_sib; k++) lanes_ok &= part_kind(j, k) != RED_PROD;
    int dim = lanes_ok ? lower_one_long_dim(j->in, j->mask) : -1;
    int flat = dim < 0 && lanes_ok ? red_flat_from(j) : -1;
    if (dim < 0 && flat < 0) {
        if (!lanes_ok || !red_lanes_loops(c, fixed, j)) reduce_loops(c, j->in, j->mask, fixed, red_step, j);
        return;
    }
    red_row r = {j, fixed, dim, flat, {.rank = 0}};
    int64_t n = 1;
    if (dim < 0) {
        r.sub.rank = j->in->rank - flat;
        for (int d = flat; d < j->in->rank; d++) n *= r.sub.dim[d - flat] = j->in->dim[d];
    } else {
        n = j->in->dim[dim];
    }
    int var[FUSE_SIBLINGS_MAX];
    kir_op op[FUSE_SIBLINGS_MAX];
    for (int k = 0; k <= j->n_sib; k++) {
        var[k] = part_var(j, k);
        op[k] = part_op(j, k);
    }
    lower_reduce_vars(c, j->n_sib + 1, var, op, j->dt, n, red_row_elem, &r);
}

/* Part k's output from its accumulated value v. */
static kir_val red_final(lower_ctx *c, const red_job *j, int k, kir_val v)
{
    kir_kernel *K = c->k;
    red_kind r = part_kind(j, k);
    int64_t cnt = reduce_masked_numel(j->in, j->mask);
    if (r == RED_MEAN && cnt != 1) v = kir_binary(K, KIR_DIV, v, kir_const_f(K, j->dt, (double)cnt));
    if (r == RED_L2) v = kir_unary(K, KIR_SQRT, v);
    if (r == RED_LOGSUM) v = kir_unary(K, KIR_LOG, v);
    if (r == RED_LOGSUMEXP) v = kir_binary(K, KIR_ADD, kir_unary(K, KIR_LOG, v), j->max);
    return v;
}

/* Output element oidx of the reduction (and its siblings' accumulators),
 * its loops emitted here. */
static kir_val red_value(lower_ctx *c, const kir_val *oidx, red_job *j)
{
    kir_kernel *K = c->k;
    kir_val fixed[IR_MAX_RANK];
    int o = 0;
    for (int d = 0; d < j->in->rank; d++) {
        bool red = j->mask & (1u << d);
        fixed[d] = red ? 0 : oidx[o];
        if (!red || j->keep) o++;
    }
    if (j->kind == RED_LOGSUMEXP) {
        red_job mx = *j;
        mx.kind = RED_MAX;
        mx.var = kir_var_new(K, j->dt, reduce_extreme(K, j->dt, true));
        red_row_loops(c, fixed, &mx);
        /* an all -inf (or empty) row would give inf - inf: subtract 0 instead */
        kir_val m = kir_var_get(K, mx.var);
        j->max = kir_select(K, kir_unary(K, KIR_ISINF, m), kir_const_f(K, j->dt, 0), m);
    }
    for (int k = 0; k <= j->n_sib; k++) {
        red_kind r = part_kind(j, k);
        kir_val init = r == RED_MAX ? reduce_extreme(K, j->dt, true)
                     : r == RED_MIN ? reduce_extreme(K, j->dt, false)
                     : r == RED_PROD ? kir_const_f(K, j->dt, 1)
                                     : kir_const_f(K, j->dt, 0);
        int var = kir_var_new(K, j->dt, init);
        if (k) j->sib_var[k - 1] = var;
        else j->var = var;
    }
    red_row_loops(c, fixed, j);
    return red_final(c, j, 0, kir_var_get(K, j->var));
}

/* Part k's output element, sibling's stored through its own node (its
 * epilogue follows). */
static void red_store(lower_ctx *c, const red_job *j, int k, const kir_val *oidx, kir_val v)
{
    const ir_node *saved = c->n;
    if (k) c->n = j->sib_node[k - 1];
    lower_store(c, 0, oidx, v);
    c->n = saved;
}

static void red_body(lower_ctx *c, const kir_val *oidx, void *user)
{
    red_job *j = user;
    lower_store(c, 0, oidx, red_value(c, oidx, j));
    for (int k = 1; k <= j->n_sib; k++) red_store(c, j, k, oidx, red_final(c, j, k, kir_var_get(c->k, j->sib_var[k - 1])));
}

/* ---- a whole tensor's max and min, split over workgroups -------------------
 * A reduction to one element (DynamicQuantizeLinear's range: the min and max
 * of a whole activation) has one output element, so lower_parallel_for gives
 * it one workgroup, and red_lanes_loops takes vector lanes over the last dim
 * only (a row of 40 with 16 lanes: 8 elements a row, and the fused producer's
 * exp with them, in a scalar tail). Instead the input is read as one flat run
 * of its linear index (unravelled, which kir folds back into a stride-1
 * address): each of W workgroups takes `chunk` elements (a multiple of the
 * vector width) into vector lanes and writes its partial results to scratch,
 * and a one-workgroup kernel folds the W partials in order and stores each
 * part through its epilogue (W = 1: the first kernel stores them itself).
 * Only max and min take it: they give the same value in any order and a NaN
 * anywhere gives NaN either way, so the result does not depend on W; a sum
 * would. */
#define RED_SPLIT_WORK 16384 /* elements at least a workgroup (lower.c's LOWER_WG_WORK) */
#define RED_SPLIT_MAX_WG 8   /* workgroups at most: enough to balance a few threads */

typedef struct red_split {
    int64_t n, v, chunk, n_wg; /* input elements, vector width, elements per workgroup, workgroups */
} red_split;

static bool split_form_for(const lower_ctx *c, const red_job *j, const ir_shape *out, red_split *s)
{
    if (c->target->wg_size != 1 || !kir_is_float(j->dt) || ir_shape_numel(out) != 1) return false;
    for (int k = 0; k <= j->n_sib; k++)
        if (part_kind(j, k) != RED_MAX && part_kind(j, k) != RED_MIN) return false;
    s->n = ir_shape_numel(j->in);
    s->v = c->target->vector_width;
    if (s->v < 2 || s->n < 2 * s->v) return false;
    int64_t per = (s->n + RED_SPLIT_MAX_WG - 1) / RED_SPLIT_MAX_WG;
    if (per < RED_SPLIT_WORK) per = RED_SPLIT_WORK;
    s->chunk = (per + s->v - 1) / s->v * s->v;
    s->n_wg = (s->n + s->chunk - 1) / s->chunk;
    return true;
}

/* Element i (a linear index) of the input, as each part adds it. */
static void split_elem(lower_ctx *c, const red_job *j, kir_val i, kir_val *out)
{
    kir_val idx[IR_MAX_RANK];
    lower_unravel(c->k, j->in, i, idx);
    kir_val x = lower_load(c, 0, idx);
    for (int k = 0; k <= j->n_sib; k++) out[k] = x;
}

/* Every part's output element, through its epilogue, from its variable. */
static void split_store(lower_ctx *c, const red_job *j, const ir_shape *out)
{
    kir_val oidx[IR_MAX_RANK];
    for (int d = 0; d < out->rank; d++) oidx[d] = kir_idx(c->k, 0);
    for (int k = 0; k <= j->n_sib; k++) red_store(c, j, k, oidx, kir_var_get(c->k, part_var(j, k)));
}

/* The split form's kernels; false (nothing kept) when the flat run does not
 * read its input with stride 1 (a broadcast or transposed producer), where
 * the other forms vectorize better. */
static bool split_reduce(lower_ctx *c, red_job *j, const ir_shape *out, const red_split *s)
{
    int mark = lower_mark(c), np = j->n_sib + 1;
    kir_kernel *K = lower_kernel_begin(c, s->n_wg);
    if (!K) return true;
    kir_val e[FUSE_SIBLINGS_MAX];
    int lanes[FUSE_SIBLINGS_MAX];
    for (int k = 0; k < np; k++) {
        bool lowest = part_kind(j, k) == RED_MAX;
        int var = kir_var_new(K, j->dt, reduce_extreme(K, j->dt, lowest));
        if (k) j->sib_var[k - 1] = var;
        else j->var = var;
        lanes[k] = kir_smem_add(K, j->dt, s->v);
        kir_val q = kir_loop_begin_parallel(K, kir_idx(K, 0), kir_idx(K, s->v));
        kir_store(K, lanes[k], q, reduce_extreme(K, j->dt, lowest));
        kir_loop_end(K);
    }
    /* [lo, hi) of the run; the vector loop stops at the last whole vector nv,
     * which only the last workgroup's end passes (chunk is a multiple of v) */
    int64_t nv = s->n / s->v * s->v;
    kir_val lo = s->n_wg > 1 ? kir_mul(K, kir_wg(K), kir_idx(K, s->chunk)) : kir_idx(K, 0);
    kir_val end = kir_add(K, lo, kir_idx(K, s->chunk));
    kir_val i0 = kir_loop_begin(K, lo, kir_binary(K, KIR_MIN, end, kir_idx(K, nv)), kir_idx(K, s->v));
    kir_val q = kir_loop_begin_parallel(K, kir_idx(K, 0), kir_idx(K, s->v));
    split_elem(c, j, kir_add(K, i0, q), e);
    for (int k = 0; k < np; k++)
        kir_store(K, lanes[k], q, kir_binary(K, part_op(j, k), kir_load(K, lanes[k], q), e[k]));
    kir_loop_end(K);
    kir_loop_end(K);
    if (K->oom || lower_reads_across(K, q)) {
        lower_rollback(c, mark);
        return K->oom;
    }
    for (int k = 0; k < np; k++) {
        kir_val t = kir_loop_begin(K, kir_idx(K, 0), kir_idx(K, s->v), kir_idx(K, 1));
        kir_var_set(K, part_var(j, k), kir_binary(K, part_op(j, k), kir_var_get(K, part_var(j, k)), kir_load(K, lanes[k], t)));
        kir_loop_end(K);
    }
    if (nv < s->n) {
        kir_val i = kir_loop_begin(K, kir_binary(K, KIR_MAX, lo, kir_idx(K, nv)),
                                   kir_binary(K, KIR_MIN, end, kir_idx(K, s->n)), kir_idx(K, 1));
        split_elem(c, j, i, e);
        for (int k = 0; k < np; k++)
            kir_var_set(K, part_var(j, k), kir_binary(K, part_op(j, k), kir_var_get(K, part_var(j, k)), e[k]));
        kir_loop_end(K);
    }
    if (s->n_wg == 1) {
        split_store(c, j, out);
        return true;
    }
    int part = lower_scratch(c, j->dt, s->n_wg * np);
    if (part < 0) {
        K->oom = true;
        return true;
    }
    for (int k = 0; k < np; k++)
        lower_scratch_store(c, part, kir_add(K, kir_mul(K, kir_wg(K), kir_idx(K, np)), kir_idx(K, k)),
                            kir_var_get(K, part_var(j, k)));
    /* the partials folded in workgroup order */
    kir_kernel *first = K;
    K = lower_kernel_begin(c, 1);
    if (!K) {
        first->oom = true;
        return true;
    }
    for (int k = 0; k < np; k++) {
        int var = kir_var_new(K, j->dt, reduce_extreme(K, j->dt, part_kind(j, k) == RED_MAX));
        if (k) j->sib_var[k - 1] = var;
        else j->var = var;
    }
    kir_val w = kir_loop_begin(K, kir_idx(K, 0), kir_idx(K, s->n_wg), kir_idx(K, 1));
    for (int k = 0; k < np; k++) {
        kir_val p = lower_scratch_load(c, part, kir_add(K, kir_mul(K, w, kir_idx(K, np)), kir_idx(K, k)));
        kir_var_set(K, part_var(j, k), kir_binary(K, part_op(j, k), kir_var_get(K, part_var(j, k)), p));
    }
    kir_loop_end(K);
    split_store(c, j, out);
    return true;
}

/* ---- column reductions ---------------------------------------------------
 * A float reduction that keeps the input's last dim (a ReduceMean over the
 * rows of [1, 384, 512], a max over a sequence) read one output element at a
 * time walks its column with the stride of a row. Instead a workgroup takes
 * one row of kept outer dims and a tile of `tile` columns, keeps the tile's
 * accumulators in workgroup memory, and walks the reduced dims outside with
 * panels of p columns inside: every load is contiguous, and each panel is a
 * vector loop. The accumulation order per output element is the order of its
 * reduced elements, as the row form's scalar loop has it. */
/* The column form of reducing `mask` of `in` (rank >= 2, the last dim kept):
 * panels of the vector width where it divides the last dim, else (any_panel)
 * of the widest power of two that does; at most `cap` columns a workgroup. */
bool reduce_col_form_of(const lower_ctx *c, const ir_shape *in, uint32_t mask, bool any_panel, int64_t cap,
                        reduce_col_form *f)
{
    int r = in->rank;
    int64_t p = c->target->vector_width;
    if (c->target->wg_size != 1 || p < 4 || r < 2 || (mask & (1u << (r - 1)))) return false;
    f->inner = in->dim[r - 1];
    while (any_panel && p > 1 && f->inner % p != 0) p /= 2;
    f->p = p;
    if (f->inner % p != 0 || reduce_masked_numel(in, mask) < 2) return false;
    int64_t kept = 1;
    for (int d = 0; d < r; d++)
        if (!(mask & (1u << d))) kept *= in->dim[d];
    f->rows = kept / f->inner;
    /* split further while there are fewer than 4 workgroups and the halves
     * stay at least 4 panels wide */
    f->tile = f->inner;
    while (f->tile % (2 * p) == 0 && (f->tile > cap || (f->rows * (f->inner / f->tile) < 4 && f->tile >= 8 * p)))
        f->tile /= 2;
    return f->tile <= cap;
}

static bool col_form_for(const lower_ctx *c, const red_job *j, reduce_col_form *f)
{
    if (j->dt != SMELT_F32) return false;
    for (int k = 0; k <= j->n_sib; k++)
        if (part_kind(j, k) == RED_LOGSUMEXP || part_kind(j, k) == RED_LOGSUM) return false;
    return reduce_col_form_of(c, j->in, j->mask, false, 1024, f); /* at most 1024 accumulators */
}

/* Opens the column form's kernel: its row's fixed indices (reduced dims 0)
 * and the tile's first column j0. NULL when out of memory. */
kir_kernel *reduce_col_begin(lower_ctx *c, const ir_shape *in, uint32_t mask, const reduce_col_form *f, kir_val *fixed,
                             kir_val *j0)
{
    int r = in->rank;
    int64_t n_tiles = f->inner / f->tile;
    kir_kernel *K = lower_kernel_begin(c, f->rows * n_tiles);
    if (!K) return NULL;
    kir_val wg = kir_wg(K);
    kir_val row = kir_binary(K, KIR_DIV, wg, kir_idx(K, n_tiles));
    *j0 = kir_mul(K, kir_binary(K, KIR_MOD, wg, kir_idx(K, n_tiles)), kir_idx(K, f->tile));
    ir_shape kept = {0};
    for (int d = 0; d < r - 1; d++)
        if (!(mask & (1u << d))) kept.dim[kept.rank++] = in->dim[d];
    kir_val kidx[IR_MAX_RANK];
    lower_unravel(K, &kept, row, kidx);
    for (int d = 0, o = 0; d < r - 1; d++) fixed[d] = (mask & (1u << d)) ? kir_idx(K, 0) : kidx[o++];
    return K;
}

/* Loops over the reduced dims (outermost first) and the tile's panels:
 * idx gets the element's index; *t the column within the tile. Closed by
 * reduce_col_loops_end with the count returned. */
int reduce_col_loops_begin(kir_kernel *K, const ir_shape *in, uint32_t mask, const reduce_col_form *f, const kir_val *fixed,
                           kir_val j0, kir_val *idx, kir_val *t)
{
    int r = in->rank, open = 0;
    for (int d = 0; d < r - 1; d++) {
        idx[d] = fixed[d];
        if (!(mask & (1u << d)) || in->dim[d] == 1) continue;
        idx[d] = kir_loop_begin(K, kir_idx(K, 0), kir_idx(K, in->dim[d]), kir_idx(K, 1));
        open++;
    }
    kir_val jp = kir_loop_begin(K, kir_idx(K, 0), kir_idx(K, f->tile), kir_idx(K, f->p));
    kir_val q = kir_loop_begin_parallel(K, kir_idx(K, 0), kir_idx(K, f->p));
    *t = kir_add(K, jp, q);
    idx[r - 1] = kir_add(K, j0, *t);
    return open + 2;
}

void reduce_col_loops_end(kir_kernel *K, int open)
{
    while (open--) kir_loop_end(K);
}

static void col_reduce(lower_ctx *c, red_job *j, const reduce_col_form *f)
{
    const ir_shape *in = j->in;
    int r = in->rank;
    kir_val fixed[IR_MAX_RANK], idx[IR_MAX_RANK], j0, t;
    kir_kernel *K = reduce_col_begin(c, in, j->mask, f, fixed, &j0);
    if (!K) return;
    int acc[FUSE_SIBLINGS_MAX];
    for (int k = 0; k <= j->n_sib; k++) {
        red_kind rk = part_kind(j, k);
        kir_val init = rk == RED_MAX ? reduce_extreme(K, j->dt, true)
                     : rk == RED_MIN ? reduce_extreme(K, j->dt, false)
                     : kir_const_f(K, j->dt, rk == RED_PROD ? 1 : 0);
        acc[k] = kir_smem_add(K, j->dt, f->tile);
        kir_val q = kir_loop_begin_parallel(K, kir_idx(K, 0), kir_idx(K, f->tile));
        kir_store(K, acc[k], q, init);
        kir_loop_end(K);
    }
    int open = reduce_col_loops_begin(K, in, j->mask, f, fixed, j0, idx, &t);
    kir_val x = lower_load(c, 0, idx);
    for (int k = 0; k <= j->n_sib; k++)
        kir_store(K, acc[k], t, kir_binary(K, part_op(j, k), kir_load(K, acc[k], t), red_term(c, j, k, x)));
    reduce_col_loops_end(K, open);
    /* the outputs: the kept dims in order, the reduced ones 0 where kept */
    kir_val q = kir_loop_begin_parallel(K, kir_idx(K, 0), kir_idx(K, f->tile));
    kir_val oidx[IR_MAX_RANK];
    int o = 0;
    for (int d = 0; d < r; d++) {
        bool red = j->mask & (1u << d);
        if (red && !j->keep) continue;
        oidx[o++] = d == r - 1 ? kir_add(K, j0, q) : red ? kir_idx(K, 0) : fixed[d];
    }
    for (int k = 0; k <= j->n_sib; k++) {
        kir_val v = kir_load(K, acc[k], q);
        red_kind rk = part_kind(j, k);
        if (rk == RED_MEAN) v = kir_binary(K, KIR_DIV, v, kir_const_f(K, j->dt, (double)reduce_masked_numel(in, j->mask)));
        if (rk == RED_L2) v = kir_unary(K, KIR_SQRT, v);
        red_store(c, j, k, oidx, v);
    }
    kir_loop_end(K);
}

static red_kind reduce_kind(op_id op);

static smelt_status reduce_lower(lower_ctx *c, red_kind kind, uint32_t mask, bool keep)
{
    const ir_tensor *x = ir_in(c->g, c->n, 0);
    const ir_shape *out = &c->g->tensors[c->n->out[0]].shape;
    if (ir_shape_numel(out) == 0) return SMELT_OK;
    red_job j = {kind, mask, keep, &x->shape, x->dtype, 0, 0, 0, {0}, {0}, {0}};
    const ir_node *sib[FUSE_SIBLINGS_MAX];
    j.n_sib = lower_siblings(c, sib);
    for (int k = 0; k < j.n_sib; k++) {
        /* fusion merged them for the same input, parameters and output shape */
        uint32_t m;
        TRY(reduce_axes_get(c->g, sib[k], &m));
        const ir_tensor *y = &c->g->tensors[sib[k]->out[0]];
        if (m != mask || sib[k]->in[0] != c->n->in[0] || !ir_shape_eq(&y->shape, out))
            return ir_node_fail(sib[k], SMELT_ERR_INTERNAL, "a sibling reduction of '%s' over other axes", c->n->name);
        j.sib_kind[k] = reduce_kind(sib[k]->op);
        j.sib_node[k] = sib[k];
    }
    red_split s;
    if (split_form_for(c, &j, out, &s) && split_reduce(c, &j, out, &s))
        return c->k && !c->k->oom ? SMELT_OK : ir_node_fail(c->n, SMELT_ERR_NOMEM, "out of memory");
    reduce_col_form f;
    if (col_form_for(c, &j, &f)) {
        col_reduce(c, &j, &f);
        return c->k ? SMELT_OK : ir_node_fail(c->n, SMELT_ERR_NOMEM, "out of memory");
    }
    lower_parallel_for(c, out, reduce_masked_numel(&x->shape, mask), red_body, &j);
    return c->k ? SMELT_OK : ir_node_fail(c->n, SMELT_ERR_NOMEM, "out of memory");
}

static red_kind reduce_kind(op_id op)
{
    switch (op) {
    case OP_ReduceMean: return RED_MEAN;
    case OP_ReduceMax: return RED_MAX;
    case OP_ReduceMin: return RED_MIN;
    case OP_ReduceProd: return RED_PROD;
    case OP_ReduceL1: return RED_L1;
    case OP_ReduceL2: return RED_L2;
    case OP_ReduceSumSquare: return RED_SUMSQ;
    case OP_ReduceLogSum: return RED_LOGSUM;
    case OP_ReduceLogSumExp: return RED_LOGSUMEXP;
    default: return RED_SUM;
    }
}

kir_val elem_Reduce(lower_ctx *c, int out, const kir_val *idx)
{
    (void)out;
    uint32_t mask = 0;
    reduce_params scratch;
    const reduce_params *p;
    /* shape inference accepted the axes and the attributes */
    if (reduce_axes_get(c->g, c->n, &mask) != SMELT_OK || reduce_params_of(c->g, c->n, &scratch, &p) != SMELT_OK) return 0;
    const ir_tensor *x = ir_in(c->g, c->n, 0);
    red_job j = {reduce_kind(c->n->op), mask, p->keepdims, &x->shape, x->dtype, 0, 0, 0, {0}, {0}, {0}};
    return red_value(c, idx, &j);
}

smelt_status lower_Reduce(lower_ctx *c)
{
    uint32_t mask;
    TRY(reduce_axes_get(c->g, c->n, &mask));
    reduce_params scratch;
    const reduce_params *p;
    TRY(reduce_params_of(c->g, c->n, &scratch, &p));
    red_kind kind;
    switch (c->n->op) {
    case OP_ReduceSum: kind = RED_SUM; break;
    case OP_ReduceMean: kind = RED_MEAN; break;
    case OP_ReduceMax: kind = RED_MAX; break;
    case OP_ReduceMin: kind = RED_MIN; break;
    case OP_ReduceProd: kind = RED_PROD; break;
    case OP_ReduceL1: kind = RED_L1; break;
    case OP_ReduceL2: kind = RED_L2; break;
    case OP_ReduceSumSquare: kind = RED_SUMSQ; break;
    case OP_ReduceLogSum: kind = RED_LOGSUM; break;
    case OP_ReduceLogSumExp: kind = RED_LOGSUMEXP; break;
    default: return ir_node_fail(c->n, SMELT_ERR_INTERNAL, "lower_Reduce on a non-reduce op");
    }
    return reduce_lower(c, kind, mask, p->keepdims);
}

static uint32_t spatial_mask(const lower_ctx *c)
{
    int r = ir_in(c->g, c->n, 0)->shape.rank;
    return (uint32_t)((1u << r) - 1) & ~3u;
}

smelt_status lower_GlobalAveragePool(lower_ctx *c) { return reduce_lower(c, RED_MEAN, spatial_mask(c), true); }
smelt_status lower_GlobalMaxPool(lower_ctx *c) { return reduce_lower(c, RED_MAX, spatial_mask(c), true); }

/* ---- ArgMax / ArgMin ------------------------------------------------------ */

typedef struct arg_job {
    int axis;
    bool keep, last, min;
    const ir_shape *in;
} arg_job;

static void arg_body(lower_ctx *c, const kir_val *oidx, void *user)
{
    const arg_job *j = user;
    kir_kernel *K = c->k;
    kir_val idx[IR_MAX_RANK];
    int o = 0;
    for (int d = 0; d < j->in->rank; d++) {
        if (d == j->axis) {
            idx[d] = kir_idx(K, 0);
            if (j->keep) o++;
        } else {
            idx[d] = oidx[o++];
        }
    }
    int best = kir_var_new(K, c->g->tensors[c->n->in[0]].dtype, lower_load(c, 0, idx));
    int at = kir_var_new(K, SMELT_I64, kir_idx(K, 0));
    idx[j->axis] = kir_loop_begin(K, kir_idx(K, 1), kir_idx(K, j->in->dim[j->axis]), kir_idx(K, 1));
    kir_val x = lower_load(c, 0, idx), b = kir_var_get(K, best);
    kir_op cmp = j->min ? (j->last ? KIR_LE : KIR_LT) : (j->last ? KIR_GE : KIR_GT);
    kir_val better = kir_binary(K, cmp, x, b);
    kir_var_set(K, best, kir_select(K, better, x, b));
    kir_var_set(K, at, kir_select(K, better, idx[j->axis], kir_var_get(K, at)));
    kir_loop_end(K);
    lower_store(c, 0, oidx, kir_var_get(K, at));
}

smelt_status lower_ArgMax(lower_ctx *c)
{
    const ir_tensor *x = ir_in(c->g, c->n, 0);
    const ir_shape *out = &c->g->tensors[c->n->out[0]].shape;
    int r = x->shape.rank;
    reduce_params scratch;
    const reduce_params *p;
    TRY(reduce_params_of(c->g, c->n, &scratch, &p));
    int64_t a = p->axis;
    arg_job j = {(int)(a < 0 ? a + r : a), p->keepdims, p->select_last_index, c->n->op == OP_ArgMin, &x->shape};
    if (ir_shape_numel(out) == 0) return SMELT_OK;
    lower_parallel_for(c, out, x->shape.dim[j.axis], arg_body, &j);
    return c->k ? SMELT_OK : ir_node_fail(c->n, SMELT_ERR_NOMEM, "out of memory");
}

smelt_status infer_GlobalPool(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_need_input(g, n, 0, "X"));
    const ir_tensor *x = ir_in(g, n, 0);
    TRY(infer_need_dtype(n, x, "input", DT_FLOAT));
    char s1[160];
    if (x->shape.rank < 3)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "input X %s must have rank >= 3 ([N, C, spatial...])", infer_shp(&x->shape, s1));
    ir_shape out = x->shape;
    for (int i = 2; i < out.rank; i++) out.dim[i] = 1;
    infer_put_out(g, n, 0, x->dtype, &out);
    return SMELT_OK;
}

/* ---- reductions --------------------------------------------------------- */

/* The opset from which a Reduce* op takes its axes as an input. */
static int axes_input_since(op_id op) { return op == OP_ReduceSum ? 13 : 18; }

smelt_status parse_reduce(const ir_graph *g, const ir_node *n, void *params)
{
    reduce_params *p = params;
    bool softmax = n->op == OP_Softmax || n->op == OP_LogSoftmax || n->op == OP_Hardmax;
    p->axis = ir_attr_int(n, "axis", !softmax ? 0 : g->opset >= 13 ? -1 : 1);
    p->keepdims = ir_attr_int(n, "keepdims", 1) != 0;
    p->select_last_index = ir_attr_int(n, "select_last_index", 0) != 0;
    p->noop_with_empty_axes = ir_attr_int(n, "noop_with_empty_axes", 0) != 0;
    p->has_axis = ir_attr_find(n, "axis") != NULL;
    p->n_axes = -1;
    bool arg = n->op == OP_ArgMax || n->op == OP_ArgMin;
    if (!softmax && !arg && g->opset < axes_input_since(n->op)) {
        const int64_t *v;
        int c = p->n_axes = ir_attr_ints(n, "axes", &v);
        if (c > IR_MAX_RANK * 2) return ir_node_fail(n, SMELT_ERR_MODEL, "too many axes (%d)", c);
        for (int i = 0; i < c; i++) p->axes[i] = v[i];
    }
    return SMELT_OK;
}

void describe_reduce(const ir_graph *g, const ir_node *n, char *buf, size_t cap)
{
    if (!cap) return;
    buf[0] = 0;
    reduce_params scratch;
    const reduce_params *p;
    if (reduce_params_of(g, n, &scratch, &p) != SMELT_OK) return;
    size_t len = 0;
    if (p->n_axes > 0) {
        for (int i = 0; i < p->n_axes && len + 1 < cap; i++) {
            int k = snprintf(buf + len, cap - len, "%s%lld", i ? "," : ": axes ", (long long)p->axes[i]);
            len = k < 0 ? cap - 1 : len + (size_t)k;
        }
    } else if (p->has_axis) {
        snprintf(buf, cap, ": axis %lld", (long long)p->axis);
    }
}

smelt_status reduce_params_of(const ir_graph *g, const ir_node *n, reduce_params *scratch, const reduce_params **p)
{
    const void *v;
    TRY(ir_node_params_get(g, n, scratch, &v));
    *p = v;
    return SMELT_OK;
}

smelt_status reduce_axes_get(const ir_graph *g, const ir_node *n, uint32_t *mask)
{
    const ir_tensor *x = ir_in(g, n, 0);
    int r = x->shape.rank;
    int since = axes_input_since(n->op);
    int64_t axes[IR_MAX_RANK * 2];
    int cnt = 0;
    bool noop = false;
    reduce_params scratch;
    const reduce_params *p;
    TRY(reduce_params_of(g, n, &scratch, &p));
    if (g->opset >= since) {
        const ir_tensor *a = ir_in(g, n, 1);
        noop = p->noop_with_empty_axes;
        if (a) {
            if (!a->data)
                return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "axes input '%s' must be a compile-time constant", a->name);
            if (a->dtype != SMELT_I64 && a->dtype != SMELT_I32)
                return ir_node_fail(n, SMELT_ERR_MODEL, "axes input '%s' must be int64", a->name);
            int64_t c = ir_tensor_numel(a);
            if (a->shape.rank > 1 || c > IR_MAX_RANK * 2)
                return ir_node_fail(n, SMELT_ERR_SHAPE, "axes input '%s' must be a 1-D list of at most %d axes", a->name, IR_MAX_RANK);
            for (int64_t i = 0; i < c; i++) axes[cnt++] = ir_const_int(a, i);
        }
    } else {
        if (n->n_in > 1 && n->in[1] >= 0)
            return ir_node_fail(n, SMELT_ERR_MODEL, "axes is an attribute before opset %d, not an input", since);
        for (int i = 0; i < p->n_axes; i++) axes[cnt++] = p->axes[i];
    }
    *mask = 0;
    if (cnt == 0) {
        if (!noop) *mask = r ? (uint32_t)((1u << r) - 1) : 0;
        return SMELT_OK;
    }
    for (int i = 0; i < cnt; i++) {
        int ax = 0;
        TRY(infer_axis(n, "axis", axes[i], r, &ax));
        if (*mask & (1u << ax))
            return ir_node_fail(n, SMELT_ERR_MODEL, "axis %lld is listed twice", (long long)axes[i]);
        *mask |= 1u << ax;
    }
    return SMELT_OK;
}

smelt_status infer_Reduce(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_need_input(g, n, 0, "data"));
    const ir_tensor *x = ir_in(g, n, 0);
    unsigned ok = DT_ARITH;
    if (n->op == OP_ReduceMax || n->op == OP_ReduceMin) ok |= DT(I8) | DT(U8) | DT(BOOL);
    if (n->op == OP_ReduceL2 || n->op == OP_ReduceLogSum || n->op == OP_ReduceLogSumExp) ok = DT_FLOAT;
    TRY(infer_need_dtype(n, x, "input", ok));
    uint32_t mask;
    TRY(reduce_axes_get(g, n, &mask));
    reduce_params scratch;
    const reduce_params *p;
    TRY(reduce_params_of(g, n, &scratch, &p));
    bool keep = p->keepdims;
    ir_shape out = {.rank = 0};
    for (int i = 0; i < x->shape.rank; i++) {
        if (!(mask & (1u << i))) out.dim[out.rank++] = x->shape.dim[i];
        else if (keep) out.dim[out.rank++] = 1;
    }
    infer_put_out(g, n, 0, x->dtype, &out);
    return SMELT_OK;
}

smelt_status infer_ArgMax(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_need_input(g, n, 0, "data"));
    const ir_tensor *x = ir_in(g, n, 0);
    TRY(infer_need_dtype(n, x, "input", DT_ALL_NUM));
    reduce_params scratch;
    const reduce_params *p;
    TRY(reduce_params_of(g, n, &scratch, &p));
    int axis = 0;
    TRY(infer_axis(n, "axis", p->axis, x->shape.rank, &axis));
    if (x->shape.dim[axis] == 0)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "axis %d has size 0: there is no maximum", axis);
    bool keep = p->keepdims;
    ir_shape out = {.rank = 0};
    for (int i = 0; i < x->shape.rank; i++) {
        if (i != axis) out.dim[out.rank++] = x->shape.dim[i];
        else if (keep) out.dim[out.rank++] = 1;
    }
    infer_put_out(g, n, 0, SMELT_I64, &out);
    return SMELT_OK;
}
