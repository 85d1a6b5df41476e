/*
 * reduce_gpu.c — row reductions on GPU targets: Reduce*, Softmax,
 * LogSoftmax and LayerNormalization with one workgroup per row.
 *
 * requires: shapes inferred; c->target->wg_size a power of two > 1.
 * guarantees: each thread folds a strided part of the row (j = lid, lid + W,
 *             ...) into a private accumulator; the W partials meet in
 *             workgroup memory and a tree of log2(W) halving steps, each
 *             closed by a barrier, leaves the total in element 0. Every tree
 *             buffer is marked promote_reuse, so the next reduction of the
 *             same kernel (softmax's sum after its max, layernorm's variance
 *             after its mean) reuses its bytes (kir/smem.c).
 */
#include <math.h>
#include <stdint.h>

#include "fuse/fuse.h"
#include "lower/lower.h"
#include "ops/norm.h"
#include "ops/reduce.h"

/* The workgroup-wide `op` of each thread's `partial`; uniform result. */
static kir_val wg_reduce(kir_kernel *K, kir_val partial, kir_op op)
{
    int w = K->wg_size;
    int s = kir_smem_add(K, kir_v(K, partial)->type, w);
    K->bufs[s].promote_reuse = true;
    kir_val lid = kir_lid(K);
    kir_store(K, s, lid, partial);
    kir_barrier(K);
    for (int h = w / 2; h >= 1; h /= 2) {
        kir_if_begin(K, kir_binary(K, KIR_LT, lid, kir_idx(K, h)));
        kir_val a = kir_load(K, s, lid), b = kir_load(K, s, kir_add(K, lid, kir_idx(K, h)));
        kir_store(K, s, lid, kir_binary(K, op, a, b));
        kir_if_end(K);
        kir_barrier(K);
    }
    return kir_load(K, s, kir_idx(K, 0));
}

/* A row of `in` (the dims in mask) as seen by one workgroup. */
typedef struct row {
    const ir_shape *in;
    uint32_t mask;
    int64_t len;              /* elements in the row */
    kir_val fixed[IR_MAX_RANK]; /* the workgroup's index in the dims outside mask */
} row;

static void row_begin(kir_kernel *K, row *r, const ir_shape *in, uint32_t mask)
{
    r->in = in;
    r->mask = mask;
    ir_shape outer = *in;
    r->len = 1;
    for (int d = 0; d < in->rank; d++)
        if (mask & (1u << d)) {
            r->len *= in->dim[d];
            outer.dim[d] = 1;
        }
    lower_unravel(K, &outer, kir_wg(K), r->fixed);
}

/* The full input index of row element j. */
static void row_index(kir_kernel *K, const row *r, kir_val j, kir_val *idx)
{
    ir_shape red = *r->in;
    for (int d = 0; d < red.rank; d++)
        if (!(r->mask & (1u << d))) red.dim[d] = 1;
    kir_val ri[IR_MAX_RANK];
    lower_unravel(K, &red, j, ri);
    for (int d = 0; d < red.rank; d++) idx[d] = (r->mask & (1u << d)) ? ri[d] : r->fixed[d];
}

/* for (j = lid; j < len; j += W): the thread's share of a row. */
static kir_val row_strided(kir_kernel *K, const row *r)
{
    return kir_loop_begin(K, kir_lid(K), kir_idx(K, r->len), kir_idx(K, K->wg_size));
}

static kir_val lowest(kir_kernel *K, smelt_dtype dt, bool low)
{
    switch (dt) {
    case SMELT_F32: case SMELT_F64: case SMELT_F16: case SMELT_BF16: return kir_const_f(K, dt, low ? -INFINITY : INFINITY);
    case SMELT_I64: return kir_const_i(K, dt, low ? INT64_MIN : INT64_MAX);
    case SMELT_I32: return kir_const_i(K, dt, low ? INT32_MIN : INT32_MAX);
    case SMELT_U8: case SMELT_BOOL: return kir_const_i(K, dt, low ? 0 : (dt == SMELT_BOOL ? 1 : UINT8_MAX));
    default: return 0;
    }
}

static kir_kernel *begin(lower_ctx *c, int64_t rows)
{
    kir_kernel *K = lower_kernel_begin(c, rows);
    if (K) K->wg_size = c->target->wg_size;
    return K;
}

/* ---- Reduce* ------------------------------------------------------------- */

/* Max and min of integer widths other than these take the generic form. */
static bool generic_only(const ir_node *n, smelt_dtype dt)
{
    return (n->op == OP_ReduceMax || n->op == OP_ReduceMin) && !kir_is_float(dt) && dt != SMELT_I64 &&
           dt != SMELT_I32 && dt != SMELT_U8 && dt != SMELT_BOOL;
}

static smelt_status gpu_reduce_one(lower_ctx *c);

/* Siblings (fuse.h) get a cooperative kernel each here, reading the input
 * again: one thread's loop over a whole tensor would cost more. */
smelt_status lower_gpu_Reduce(lower_ctx *c)
{
    const ir_node *sib[FUSE_SIBLINGS_MAX], *root = c->n;
    int n = lower_siblings(c, sib);
    smelt_dtype dt = ir_in(c->g, c->n, 0)->dtype;
    bool generic = generic_only(c->n, dt);
    for (int k = 0; k < n; k++) generic |= generic_only(sib[k], dt);
    if (generic) return lower_Reduce(c); /* the generic form computes the siblings too */
    TRY(gpu_reduce_one(c));
    smelt_status s = SMELT_OK;
    for (int k = 0; k < n && !s; k++) {
        c->n = sib[k];
        s = gpu_reduce_one(c);
    }
    c->n = root;
    return s;
}

static smelt_status gpu_reduce_one(lower_ctx *c)
{
    uint32_t mask;
    TRY(reduce_axes_get(c->g, c->n, &mask));
    const ir_tensor *x = ir_in(c->g, c->n, 0);
    const ir_tensor *y = &c->g->tensors[c->n->out[0]];
    int64_t rows = ir_tensor_numel(y);
    if (rows == 0) return SMELT_OK;
    smelt_dtype dt = x->dtype;
    int op_id = c->n->op;
    bool is_max = op_id == OP_ReduceMax, is_min = op_id == OP_ReduceMin;
    kir_kernel *K = begin(c, rows);
    if (!K) return ir_node_fail(c->n, SMELT_ERR_NOMEM, "out of memory");
    bool b = dt == SMELT_BOOL;
    kir_op comb = is_max ? (b ? KIR_OR : KIR_MAX) : is_min ? (b ? KIR_AND : KIR_MIN) : KIR_ADD;
    row r;
    row_begin(K, &r, &x->shape, mask);
    kir_val init = is_max ? lowest(K, dt, true) : is_min ? lowest(K, dt, false) : kir_const_f(K, dt, 0);
    int acc = kir_var_new(K, dt, init);
    kir_val j = row_strided(K, &r);
    kir_val idx[IR_MAX_RANK];
    row_index(K, &r, j, idx);
    kir_val v = lower_load(c, 0, idx);
    if (op_id == OP_ReduceL1) v = kir_unary(K, KIR_ABS, v);
    if (op_id == OP_ReduceL2 || op_id == OP_ReduceSumSquare) v = kir_binary(K, KIR_MUL, v, v);
    kir_var_set(K, acc, kir_binary(K, comb, kir_var_get(K, acc), v));
    kir_loop_end(K);
    kir_val t = wg_reduce(K, kir_var_get(K, acc), comb);
    if (op_id == OP_ReduceMean && r.len != 1) t = kir_binary(K, KIR_DIV, t, kir_const_f(K, dt, (double)r.len));
    if (op_id == OP_ReduceL2) t = kir_unary(K, KIR_SQRT, t);
    if (op_id == OP_ReduceLogSum) t = kir_unary(K, KIR_LOG, t);
    /* The output index: the row's fixed dims, with or without the reduced ones. */
    reduce_params scratch;
    const reduce_params *p;
    TRY(reduce_params_of(c->g, c->n, &scratch, &p));
    bool keep = p->keepdims;
    kir_val oidx[IR_MAX_RANK];
    int o = 0;
    for (int d = 0; d < x->shape.rank; d++) {
        bool red = mask & (1u << d);
        if (!red) oidx[o++] = r.fixed[d];
        else if (keep) oidx[o++] = kir_idx(K, 0);
    }
    kir_if_begin(K, kir_binary(K, KIR_EQ, kir_lid(K), kir_idx(K, 0)));
    lower_store(c, 0, oidx, t);
    kir_if_end(K);
    return SMELT_OK;
}

/* ---- Softmax / LogSoftmax ------------------------------------------------- */

smelt_status lower_gpu_Softmax(lower_ctx *c)
{
    const ir_tensor *x = ir_in(c->g, c->n, 0);
    int rank = x->shape.rank;
    reduce_params scratch;
    const reduce_params *p;
    TRY(reduce_params_of(c->g, c->n, &scratch, &p));
    int64_t a = p->axis;
    int axis = (int)(a < 0 ? a + rank : a);
    uint32_t mask = c->g->opset >= 13 ? 1u << axis : (uint32_t)((1u << rank) - 1) & ~((1u << axis) - 1);
    if (ir_tensor_numel(x) == 0) return SMELT_OK;
    bool log = c->n->op == OP_LogSoftmax;
    smelt_dtype dt = x->dtype;
    int64_t len = 1;
    for (int d = 0; d < rank; d++)
        if (mask & (1u << d)) len *= x->shape.dim[d];
    kir_kernel *K = begin(c, ir_tensor_numel(x) / len);
    if (!K) return ir_node_fail(c->n, SMELT_ERR_NOMEM, "out of memory");
    row r;
    row_begin(K, &r, &x->shape, mask);
    kir_val idx[IR_MAX_RANK];

    int mx = kir_var_new(K, dt, lowest(K, dt, true));
    row_index(K, &r, row_strided(K, &r), idx);
    kir_var_set(K, mx, kir_binary(K, KIR_MAX, kir_var_get(K, mx), lower_load(c, 0, idx)));
    kir_loop_end(K);
    kir_val m = wg_reduce(K, kir_var_get(K, mx), KIR_MAX);

    int sum = kir_var_new(K, dt, kir_const_f(K, dt, 0));
    row_index(K, &r, row_strided(K, &r), idx);
    kir_val e = kir_unary(K, KIR_EXP, kir_binary(K, KIR_SUB, lower_load(c, 0, idx), m));
    kir_var_set(K, sum, kir_binary(K, KIR_ADD, kir_var_get(K, sum), e));
    kir_loop_end(K);
    kir_val s = wg_reduce(K, kir_var_get(K, sum), KIR_ADD);
    kir_val scale = log ? kir_unary(K, KIR_LOG, s) : kir_binary(K, KIR_DIV, kir_const_f(K, dt, 1), s);

    row_index(K, &r, kir_loop_begin_parallel(K, kir_idx(K, 0), kir_idx(K, r.len)), idx);
    kir_val d = kir_binary(K, KIR_SUB, lower_load(c, 0, idx), m);
    lower_store(c, 0, idx, log ? kir_binary(K, KIR_SUB, d, scale) : kir_binary(K, KIR_MUL, kir_unary(K, KIR_EXP, d), scale));
    kir_loop_end(K);
    return SMELT_OK;
}

/* ---- LayerNormalization ----------------------------------------------------- */

smelt_status lower_gpu_LayerNormalization(lower_ctx *c)
{
    const ir_tensor *x = ir_in(c->g, c->n, 0);
    int rank = x->shape.rank;
    norm_params scratch;
    const void *pv;
    TRY(ir_node_params_get(c->g, c->n, &scratch, &pv));
    const norm_params *p = pv;
    int64_t a = p->axis;
    int axis = (int)(a < 0 ? a + rank : a);
    uint32_t mask = (uint32_t)((1u << rank) - 1) & ~((1u << axis) - 1);
    if (ir_tensor_numel(x) == 0) return SMELT_OK;
    smelt_dtype dt = x->dtype;
    bool bias = ir_in(c->g, c->n, 2) != NULL;
    double eps = p->epsilon;
    int64_t len = 1;
    for (int d = axis; d < rank; d++) len *= x->shape.dim[d];
    kir_kernel *K = begin(c, ir_tensor_numel(x) / len);
    if (!K) return ir_node_fail(c->n, SMELT_ERR_NOMEM, "out of memory");
    row r;
    row_begin(K, &r, &x->shape, mask);
    kir_val idx[IR_MAX_RANK];
    kir_val n = kir_const_f(K, dt, (double)len);

    int sum = kir_var_new(K, dt, kir_const_f(K, dt, 0));
    row_index(K, &r, row_strided(K, &r), idx);
    kir_var_set(K, sum, kir_binary(K, KIR_ADD, kir_var_get(K, sum), lower_load(c, 0, idx)));
    kir_loop_end(K);
    kir_val mean = kir_binary(K, KIR_DIV, wg_reduce(K, kir_var_get(K, sum), KIR_ADD), n);

    int sq = kir_var_new(K, dt, kir_const_f(K, dt, 0));
    row_index(K, &r, row_strided(K, &r), idx);
    kir_val d = kir_binary(K, KIR_SUB, lower_load(c, 0, idx), mean);
    kir_var_set(K, sq, kir_binary(K, KIR_ADD, kir_var_get(K, sq), kir_binary(K, KIR_MUL, d, d)));
    kir_loop_end(K);
    kir_val var = kir_binary(K, KIR_DIV, wg_reduce(K, kir_var_get(K, sq), KIR_ADD), n);
    kir_val inv = kir_binary(K, KIR_DIV, kir_const_f(K, dt, 1),
                             kir_unary(K, KIR_SQRT, kir_binary(K, KIR_ADD, var, kir_const_f(K, dt, eps))));

    row_index(K, &r, kir_loop_begin_parallel(K, kir_idx(K, 0), kir_idx(K, r.len)), idx);
    d = kir_binary(K, KIR_SUB, lower_load(c, 0, idx), mean);
    int nr = rank - axis;
    kir_val y = kir_binary(K, KIR_MUL, kir_binary(K, KIR_MUL, d, inv), lower_load_bcast(c, 1, nr, idx + axis));
    if (bias) y = kir_binary(K, KIR_ADD, y, lower_load_bcast(c, 2, nr, idx + axis));
    lower_store(c, 0, idx, y);
    kir_loop_end(K);

    kir_if_begin(K, kir_binary(K, KIR_EQ, kir_lid(K), kir_idx(K, 0)));
    for (int o = 1; o < 3; o++) {
        if (o >= c->n->n_out || c->n->out[o] < 0) continue;
        smelt_dtype odt = c->g->tensors[c->n->out[o]].dtype;
        kir_val ridx[IR_MAX_RANK];
        for (int q = 0; q < rank; q++) ridx[q] = q < axis ? r.fixed[q] : kir_idx(K, 0);
        lower_store(c, o, ridx, kir_cast(K, odt, o == 1 ? mean : inv));
    }
    kir_if_end(K);
    return SMELT_OK;
}
