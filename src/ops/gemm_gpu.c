/*
 * gemm_gpu.c — the tiled GEMM of GPU targets, through workgroup memory: MatMul,
 * Gemm, and Conv as an implicit GEMM over the same kernel.
 *
 * requires: shapes inferred by infer_MatMul / infer_Gemm / infer_Conv.
 * guarantees: one kernel; a workgroup of TS x TS threads computes a TS x TS
 *             tile of the result (thread (ty, tx) one element). For each
 *             TS-wide slice of K it stages the A and B tiles in workgroup
 *             memory (one element per thread, zero outside the matrices),
 *             waits at a barrier, accumulates TS products from the tiles and
 *             waits again before the next slice overwrites them. Rows and
 *             columns past the edges are computed on zeros and never stored.
 *             Conv is the same kernel as an implicit GEMM per (image, group):
 *             A = the group's filters [M/group, C/group * taps], B = the input
 *             patches [C/group * taps, output pixels] gathered while staging
 *             (zero where a tap falls in the padding), bias added at the store.
 */
#include "lower/lower.h"
#include "ops/conv.h"
#include "ops/matmul.h"

#define TS 16

typedef struct gmm gmm;
/* A[row][k] and B[k][col] at in-range (clamped) indices, for batch index bidx. */
typedef kir_val (*gmm_load_fn)(lower_ctx *c, const gmm *j, const kir_val *bidx, kir_val x, kir_val y);
/* Store accumulated element (row, col) of batch bidx (only in range). */
typedef void (*gmm_store_fn)(lower_ctx *c, const gmm *j, const kir_val *bidx, kir_val row, kir_val col, kir_val v);

struct gmm {
    const ir_shape *batch;  /* the batch dims the workgroups iterate (rank nb) */
    int nb;
    int64_t m, n, kk;
    gmm_load_fn load_a, load_b;
    gmm_store_fn store;
    bool a_vec, b_vec, gemm, ta, tb; /* MatMul / Gemm */
    double alpha, beta;
    window_geom w;                   /* Conv */
    int64_t cg, mg;
    bool bias;
    smelt_dtype dt;
};

/* Input `in` at the result's batch index, then two trailing indices. */
static kir_val load2(lower_ctx *c, int in, const gmm *j, const kir_val *bidx, kir_val x, kir_val y)
{
    const ir_tensor *t = &c->g->tensors[c->n->in[in]];
    int r = t->shape.rank;
    if (r == 1) return lower_load(c, in, in == 0 ? &y : &x);
    kir_val idx[IR_MAX_RANK];
    for (int d = 0; d < r - 2; d++) {
        int od = d + j->nb - (r - 2);
        idx[d] = t->shape.dim[d] == 1 ? kir_idx(c->k, 0) : bidx[od];
    }
    idx[r - 2] = x;
    idx[r - 1] = y;
    return lower_load(c, in, idx);
}

/* v where cond holds, else 0 (the load itself reads a clamped, valid index). */
static kir_val guarded(kir_kernel *K, kir_val cond, kir_val v, smelt_dtype dt)
{
    return kir_select(K, cond, v, kir_const_f(K, dt, 0));
}

static smelt_status gmm_lower(lower_ctx *c, gmm *j)
{
    int64_t batch = 1;
    for (int d = 0; d < j->nb; d++) batch *= j->batch->dim[d];
    if (batch == 0 || j->m == 0 || j->n == 0) return SMELT_OK;
    int64_t tm = (j->m + TS - 1) / TS, tn = (j->n + TS - 1) / TS;
    kir_kernel *K = lower_kernel_begin(c, batch * tm * tn);
    if (!K) return ir_node_fail(c->n, SMELT_ERR_NOMEM, "out of memory");
    K->wg_size = TS * TS;
    smelt_dtype dt = j->dt;
    kir_val wg = kir_wg(K), lid = kir_lid(K), ts = kir_idx(K, TS);
    kir_val tiles = kir_idx(K, tm * tn);
    kir_val b = kir_binary(K, KIR_DIV, wg, tiles), rem = kir_binary(K, KIR_MOD, wg, tiles);
    kir_val ti = kir_binary(K, KIR_DIV, rem, kir_idx(K, tn)), tj = kir_binary(K, KIR_MOD, rem, kir_idx(K, tn));
    kir_val ty = kir_binary(K, KIR_DIV, lid, ts), tx = kir_binary(K, KIR_MOD, lid, ts);
    kir_val row = kir_add(K, kir_mul(K, ti, ts), ty), col = kir_add(K, kir_mul(K, tj, ts), tx);
    kir_val bidx[IR_MAX_RANK];
    ir_shape bshape = {.rank = j->nb};
    for (int d = 0; d < j->nb; d++) bshape.dim[d] = j->batch->dim[d];
    lower_unravel(K, &bshape, b, bidx);
    kir_val row_ok = kir_binary(K, KIR_LT, row, kir_idx(K, j->m));
    kir_val col_ok = kir_binary(K, KIR_LT, col, kir_idx(K, j->n));
    kir_val row_c = lower_clamp(K, row, j->m), col_c = lower_clamp(K, col, j->n);

    int as = kir_smem_add(K, dt, TS * TS), bs = kir_smem_add(K, dt, TS * TS);
    int acc = kir_var_new(K, dt, kir_const_f(K, dt, 0));
    kir_val k0 = kir_loop_begin(K, kir_idx(K, 0), kir_idx(K, j->kk), ts);
    kir_val ka = kir_add(K, k0, tx), kb = kir_add(K, k0, ty);
    kir_val ka_c = lower_clamp(K, ka, j->kk), kb_c = lower_clamp(K, kb, j->kk);
    kir_val av = j->load_a(c, j, bidx, row_c, ka_c);
    av = guarded(K, kir_binary(K, KIR_AND, row_ok, kir_binary(K, KIR_LT, ka, kir_idx(K, j->kk))), av, dt);
    kir_val bv = j->load_b(c, j, bidx, kb_c, col_c);
    bv = guarded(K, kir_binary(K, KIR_AND, col_ok, kir_binary(K, KIR_LT, kb, kir_idx(K, j->kk))), bv, dt);
    kir_store(K, as, lid, av);
    kir_store(K, bs, lid, bv);
    kir_barrier(K);
    kir_val kk = kir_loop_begin(K, kir_idx(K, 0), ts, kir_idx(K, 1));
    kir_val x = kir_load(K, as, kir_add(K, kir_mul(K, ty, ts), kk));
    kir_val y = kir_load(K, bs, kir_add(K, kir_mul(K, kk, ts), tx));
    kir_var_set(K, acc, kir_binary(K, KIR_ADD, kir_var_get(K, acc), kir_binary(K, KIR_MUL, x, y)));
    kir_loop_end(K);
    kir_barrier(K);
    kir_loop_end(K);

    kir_if_begin(K, kir_binary(K, KIR_AND, row_ok, col_ok));
    j->store(c, j, bidx, row, col, kir_var_get(K, acc));
    kir_if_end(K);
    return SMELT_OK;
}

/* ---- MatMul and Gemm ------------------------------------------------------ */

static kir_val mm_load_a(lower_ctx *c, const gmm *j, const kir_val *bidx, kir_val row, kir_val k)
{
    return j->ta ? load2(c, 0, j, bidx, k, row) : load2(c, 0, j, bidx, row, k);
}

static kir_val mm_load_b(lower_ctx *c, const gmm *j, const kir_val *bidx, kir_val k, kir_val col)
{
    return j->tb ? load2(c, 1, j, bidx, col, k) : load2(c, 1, j, bidx, k, col);
}

static void mm_store(lower_ctx *c, const gmm *j, const kir_val *bidx, kir_val row, kir_val col, kir_val v)
{
    kir_kernel *K = c->k;
    smelt_dtype dt = j->dt;
    kir_val oidx[IR_MAX_RANK];
    int r = 0;
    for (int d = 0; d < j->nb; d++) oidx[r++] = bidx[d];
    if (j->gemm) {
        if (j->alpha != 1.0) v = kir_binary(K, KIR_MUL, v, kir_const_f(K, dt, j->alpha));
        kir_val ij[2] = {row, col};
        kir_val cv = lower_load_bcast(c, 2, 2, ij);
        if (cv && j->beta != 0.0) {
            if (j->beta != 1.0) cv = kir_binary(K, KIR_MUL, cv, kir_const_f(K, dt, j->beta));
            v = kir_binary(K, KIR_ADD, v, cv);
        }
    }
    if (j->gemm || !j->a_vec) oidx[r++] = row;
    if (j->gemm || !j->b_vec) oidx[r++] = col;
    lower_store(c, 0, oidx, v);
}

smelt_status lower_gpu_MatMul(lower_ctx *c)
{
    const ir_tensor *a = ir_in(c->g, c->n, 0), *b = ir_in(c->g, c->n, 1);
    const ir_shape *out = &c->g->tensors[c->n->out[0]].shape;
    gmm j = {.batch = out, .dt = a->dtype, .load_a = mm_load_a, .load_b = mm_load_b, .store = mm_store};
    j.a_vec = a->shape.rank == 1;
    j.b_vec = b->shape.rank == 1;
    j.nb = out->rank - (j.a_vec ? 0 : 1) - (j.b_vec ? 0 : 1);
    j.m = j.a_vec ? 1 : a->shape.dim[a->shape.rank - 2];
    j.kk = a->shape.dim[a->shape.rank - 1];
    j.n = j.b_vec ? 1 : b->shape.dim[b->shape.rank - 1];
    return gmm_lower(c, &j);
}

smelt_status lower_gpu_Gemm(lower_ctx *c)
{
    const ir_tensor *a = ir_in(c->g, c->n, 0);
    const ir_shape *out = &c->g->tensors[c->n->out[0]].shape;
    gmm j = {.batch = out, .dt = a->dtype, .gemm = true, .load_a = mm_load_a, .load_b = mm_load_b, .store = mm_store};
    gemm_params scratch;
    const void *pv;
    TRY(ir_node_params_get(c->g, c->n, &scratch, &pv));
    const gemm_params *p = pv;
    j.ta = p->trans_a;
    j.tb = p->trans_b;
    j.alpha = p->alpha;
    j.beta = p->beta;
    j.m = out->dim[0];
    j.n = out->dim[1];
    j.kk = a->shape.dim[j.ta ? 0 : 1];
    return gmm_lower(c, &j);
}

/* ---- Conv as an implicit GEMM ---------------------------------------------- */

/* Filter row `row` of group bidx[1], column k = (input channel, taps...). */
static kir_val conv_load_a(lower_ctx *c, const gmm *j, const kir_val *bidx, kir_val row, kir_val k)
{
    kir_kernel *K = c->k;
    ir_shape ks = {.rank = j->w.nsp + 1};
    ks.dim[0] = j->cg;
    for (int d = 0; d < j->w.nsp; d++) ks.dim[1 + d] = j->w.kernel[d];
    kir_val wi[IR_MAX_RANK];
    lower_unravel(K, &ks, k, wi + 1);
    wi[0] = kir_add(K, kir_mul(K, bidx[1], kir_idx(K, j->mg)), row);
    return lower_load(c, 1, wi);
}

/* The input under tap k of output pixel col, 0 in the padding. */
static kir_val conv_load_b(lower_ctx *c, const gmm *j, const kir_val *bidx, kir_val k, kir_val col)
{
    kir_kernel *K = c->k;
    const window_geom *w = &j->w;
    ir_shape ks = {.rank = w->nsp + 1}, os = {.rank = w->nsp};
    ks.dim[0] = j->cg;
    for (int d = 0; d < w->nsp; d++) {
        ks.dim[1 + d] = w->kernel[d];
        os.dim[d] = w->out[d];
    }
    kir_val ki[IR_MAX_RANK], oi[IR_MAX_RANK], xi[IR_MAX_RANK];
    lower_unravel(K, &ks, k, ki);
    lower_unravel(K, &os, col, oi);
    xi[0] = bidx[0];
    xi[1] = kir_add(K, kir_mul(K, bidx[1], kir_idx(K, j->cg)), ki[0]);
    kir_val ok = 0;
    for (int d = 0; d < w->nsp; d++) {
        kir_val pos = kir_add(K, kir_mul(K, oi[d], kir_idx(K, w->stride[d])),
                              kir_binary(K, KIR_SUB, kir_mul(K, ki[1 + d], kir_idx(K, w->dilation[d])),
                                         kir_idx(K, w->pad_lo[d])));
        xi[2 + d] = lower_clamp(K, pos, w->in[d]);
        if (!w->pad_lo[d] && !w->pad_hi[d]) continue;
        kir_val in = kir_binary(K, KIR_AND, kir_binary(K, KIR_GE, pos, kir_idx(K, 0)),
                                kir_binary(K, KIR_LT, pos, kir_idx(K, w->in[d])));
        ok = ok ? kir_binary(K, KIR_AND, ok, in) : in;
    }
    kir_val x = lower_load(c, 0, xi);
    return ok ? guarded(K, ok, x, j->dt) : x;
}

static void conv_store(lower_ctx *c, const gmm *j, const kir_val *bidx, kir_val row, kir_val col, kir_val v)
{
    kir_kernel *K = c->k;
    ir_shape os = {.rank = j->w.nsp};
    for (int d = 0; d < j->w.nsp; d++) os.dim[d] = j->w.out[d];
    kir_val yi[IR_MAX_RANK];
    yi[0] = bidx[0];
    yi[1] = kir_add(K, kir_mul(K, bidx[1], kir_idx(K, j->mg)), row);
    lower_unravel(K, &os, col, yi + 2);
    if (j->bias) v = kir_binary(K, KIR_ADD, v, lower_load(c, 2, &yi[1]));
    lower_store(c, 0, yi, v);
}

smelt_status lower_gpu_Conv(lower_ctx *c)
{
    const ir_tensor *x = ir_in(c->g, c->n, 0), *wt = ir_in(c->g, c->n, 1);
    gmm j = {.dt = x->dtype, .load_a = conv_load_a, .load_b = conv_load_b, .store = conv_store};
    TRY(window_geom_get(c->g, c->n, &j.w));
    int64_t group = j.w.group;
    ir_shape batch = {.rank = 2, .dim = {x->shape.dim[0], group}};
    j.batch = &batch;
    j.nb = 2;
    j.bias = ir_in(c->g, c->n, 2) != NULL;
    j.cg = wt->shape.dim[1];
    j.mg = wt->shape.dim[0] / group;
    j.m = j.mg;
    j.n = 1;
    j.kk = j.cg;
    for (int d = 0; d < j.w.nsp; d++) {
        j.n *= j.w.out[d];
        j.kk *= j.w.kernel[d];
    }
    return gmm_lower(c, &j);
}
