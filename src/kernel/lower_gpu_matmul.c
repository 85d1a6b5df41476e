/*
 * lower_gpu_matmul.c — MatMul and Gemm on GPU targets, tiled through
 * workgroup memory.
 *
 * requires: shapes inferred by infer_MatMul / infer_Gemm.
 * guarantees: one kernel; a workgroup of TS x TS threads computes a TS x TS
 *             tile of the result (thread (ty, tx) one element). For each
 *             TS-wide slice of K it stages the A and B tiles in workgroup
 *             memory (one element per thread, zero outside the matrices),
 *             waits at a barrier, accumulates TS products from the tiles and
 *             waits again before the next slice overwrites them. Rows and
 *             columns past the edges are computed on zeros and never stored.
 */
#include "kernel/lower.h"

#define TS 16

typedef struct gmm {
    const ir_shape *out;
    int nb;                 /* batch dims of the result */
    int64_t m, n, kk;
    bool a_vec, b_vec, gemm, ta, tb;
    double alpha, beta;
    smelt_dtype dt;
} gmm;

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
    for (int d = 0; d < j->nb; d++) batch *= j->out->dim[d];
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
    for (int d = 0; d < j->nb; d++) bshape.dim[d] = j->out->dim[d];
    lower_unravel(K, &bshape, b, bidx);
    kir_val row_ok = kir_binary(K, KIR_LT, row, kir_idx(K, j->m));
    kir_val col_ok = kir_binary(K, KIR_LT, col, kir_idx(K, j->n));
    kir_val row_c = lower_clamp(K, row, j->m), col_c = lower_clamp(K, col, j->n);

    int as = kir_smem_add(K, dt, TS * TS), bs = kir_smem_add(K, dt, TS * TS);
    int acc = kir_var_new(K, dt, kir_const_f(K, dt, 0));
    kir_val k0 = kir_loop_begin(K, kir_idx(K, 0), kir_idx(K, j->kk), ts);
    kir_val ka = kir_add(K, k0, tx), kb = kir_add(K, k0, ty);
    kir_val ka_c = lower_clamp(K, ka, j->kk), kb_c = lower_clamp(K, kb, j->kk);
    kir_val av = j->ta ? load2(c, 0, j, bidx, ka_c, row_c) : load2(c, 0, j, bidx, row_c, ka_c);
    av = guarded(K, kir_binary(K, KIR_AND, row_ok, kir_binary(K, KIR_LT, ka, kir_idx(K, j->kk))), av, dt);
    kir_val bv = j->tb ? load2(c, 1, j, bidx, col_c, kb_c) : load2(c, 1, j, bidx, kb_c, col_c);
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
    kir_val v = kir_var_get(K, acc);
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
    kir_if_end(K);
    return SMELT_OK;
}

smelt_status lower_gpu_MatMul(lower_ctx *c)
{
    const ir_tensor *a = ir_in(c->g, c->n, 0), *b = ir_in(c->g, c->n, 1);
    const ir_shape *out = &c->g->tensors[c->n->out[0]].shape;
    gmm j = {.out = out, .dt = a->dtype};
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
    gmm j = {.out = out, .dt = a->dtype, .gemm = true};
    j.ta = ir_attr_int(c->n, "transA", 0) != 0;
    j.tb = ir_attr_int(c->n, "transB", 0) != 0;
    j.alpha = ir_attr_float(c->n, "alpha", 1.0f);
    j.beta = ir_attr_float(c->n, "beta", 1.0f);
    j.m = out->dim[0];
    j.n = out->dim[1];
    j.kk = a->shape.dim[j.ta ? 0 : 1];
    return gmm_lower(c, &j);
}
