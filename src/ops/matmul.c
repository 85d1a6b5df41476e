/*
 * matmul.c — MatMul and Gemm: shape rules, and lowerings as blocked matrix
 * products (the GPU forms are in gemm_gpu.c).
 *
 * requires: shapes inferred by infer_MatMul / infer_Gemm.
 * guarantees: one kernel (two for Gemm with transB) whose work unit is an
 *             MR x NC block of the result: the k-loop is outside, and the
 *             innermost loop runs unit-stride over N,
 *                 acc[r][j] += A[i0+r][k] * B[k][j]      (r unrolled)
 *             so the target compiler vectorizes it and each B element loaded
 *             feeds MR multiply-adds. Accumulators live apart from the output
 *             (which may carry a fused epilogue and cannot be read back): on
 *             the CPU in an MR x (NC + MM_PAD) block of workgroup memory, a
 *             stack array that stays in L1, its rows MM_PAD elements longer
 *             than the block so they do not sit a multiple of 4 KiB apart
 *             (a load of one row would wait on the store to another that
 *             matches it in the low address bits); with threads per
 *             workgroup, in a scratch buffer (one MR x N panel per unit).
 */
#include <stdlib.h>
#include <string.h>

#include "lower/lower.h"
#include "ops/gemm_packed.h"
#include "ops/matmul.h"
#include "ops/shape.h"

/* Rows per block; columns per block once N is large enough that an MR x N
 * accumulator panel would no longer stay in L1/L2. 512 columns (a 16 KiB
 * panel) ran the bench MLP ~10% faster than 256 (AVX-512 host, 1 and 2
 * threads). */
#define MM_MR 8
#define MM_NC 512
#define MM_NC_SPLIT 512
#define MM_PAD 16

typedef struct mm_job {
    const ir_shape *out;
    int nb;                  /* batch dims of the result          */
    int64_t m, n, kk;        /* problem size                      */
    int64_t mr, nc, nblk, ncb;
    bool a_vec, b_vec;       /* MatMul 1-D operands               */
    bool gemm, ta, tb;       /* Gemm: transA, transB              */
    bool b_enc;              /* B is a constant packed into panels (its encoding) */
    mm_tiles tl;             /* packed path: the target's tiles   */
    int64_t np;              /* packed path: B's panels */
    int b_packed;            /* scratch holding B as [K, N] (Gemm) or in B's own order (MatMul), or -1 */
    int a_copy;              /* packed path: scratch holding A as [batch][M][K], or -1 */
    int acc;                 /* scratch accumulators, or -1: on the stack */
    smelt_dtype dt;
    double alpha, beta;
    kir_val col_loop;        /* set by mm_body: the k-loop's inner loop over columns */
} mm_job;

static bool mm_packed_ok(const lower_ctx *c, const mm_job *j);
static smelt_status mm_lower_packed(lower_ctx *c, mm_job *j);

/* Index of input `in` (rank `r`, batch dims right-aligned to the result's)
 * at the result's batch index, followed by two trailing indices. */
static kir_val load_batched(lower_ctx *c, int in, const mm_job *j, const kir_val *bidx, kir_val x, kir_val y)
{
    const ir_tensor *t = &c->g->tensors[c->n->in[in]];
    int r = t->shape.rank;
    kir_val idx[IR_MAX_RANK];
    for (int d = 0; d < r - 2; d++) {
        int od = d + j->nb - (r - 2);
        idx[d] = t->shape.dim[d] == 1 ? kir_idx(c->k, 0) : bidx[od];
    }
    idx[r - 2] = x;
    idx[r - 1] = y;
    return lower_load(c, in, idx);
}

static kir_val load_a(lower_ctx *c, const mm_job *j, const kir_val *bidx, kir_val i, kir_val k)
{
    if (j->gemm) return j->ta ? load_batched(c, 0, j, bidx, k, i) : load_batched(c, 0, j, bidx, i, k);
    if (j->a_vec) return lower_load(c, 0, &k);
    return load_batched(c, 0, j, bidx, i, k);
}

static kir_val load_b(lower_ctx *c, const mm_job *j, const kir_val *bidx, kir_val k, kir_val col)
{
    kir_kernel *K = c->k;
    if (j->b_packed >= 0 && j->gemm)
        return lower_scratch_load(c, j->b_packed, kir_add(K, kir_mul(K, k, kir_idx(K, j->n)), col));
    if (j->b_packed >= 0) { /* MatMul: B copied out in its own row-major order */
        const ir_shape *s = &ir_in(c->g, c->n, 1)->shape;
        kir_val idx[IR_MAX_RANK];
        for (int d = 0; d < s->rank - 2; d++)
            idx[d] = s->dim[d] == 1 ? kir_idx(K, 0) : bidx[d + j->nb - (s->rank - 2)];
        idx[s->rank - 2] = k;
        idx[s->rank - 1] = col;
        return lower_scratch_load(c, j->b_packed, lower_linear(K, s, idx));
    }
    if (j->b_vec) return lower_load(c, 1, &k);
    return load_batched(c, 1, j, bidx, k, col);
}

static void store_c(lower_ctx *c, const mm_job *j, const kir_val *bidx, kir_val i, kir_val col, kir_val v)
{
    kir_kernel *K = c->k;
    kir_val idx[IR_MAX_RANK];
    int r = 0;
    for (int d = 0; d < j->nb; d++) idx[r++] = bidx[d];
    if (j->gemm) {
        if (j->alpha != 1.0) v = kir_binary(K, KIR_MUL, v, kir_const_f(K, j->dt, j->alpha));
        kir_val ij[2] = {i, col};
        kir_val cv = lower_load_bcast(c, 2, 2, ij);
        if (cv && j->beta != 0.0) {
            if (j->beta != 1.0) cv = kir_binary(K, KIR_MUL, cv, kir_const_f(K, j->dt, j->beta));
            v = kir_binary(K, KIR_ADD, v, cv);
        }
    }
    if (j->gemm || !j->a_vec) idx[r++] = i;
    if (j->gemm || !j->b_vec) idx[r++] = col;
    lower_store(c, 0, idx, v);
}

/* The accumulators: scratch panel `scratch` (element rowbase + col), or
 * workgroup memory `smem` (element row * ld + col - j0). */
typedef struct acc_block {
    int scratch, smem;
    int64_t ld;
    kir_val j0;
} acc_block;

static kir_val acc_index(kir_kernel *K, const acc_block *a, kir_val rowbase, kir_val row, kir_val col)
{
    if (a->scratch >= 0) return kir_add(K, rowbase, col);
    return kir_add(K, kir_mul(K, row, kir_idx(K, a->ld)), kir_binary(K, KIR_SUB, col, a->j0));
}

static kir_val acc_load(lower_ctx *c, const acc_block *a, kir_val rowbase, kir_val row, kir_val col)
{
    kir_val at = acc_index(c->k, a, rowbase, row, col);
    return a->scratch >= 0 ? lower_scratch_load(c, a->scratch, at) : kir_load(c->k, a->smem, at);
}

static void acc_store(lower_ctx *c, const acc_block *a, kir_val rowbase, kir_val row, kir_val col, kir_val v)
{
    kir_val at = acc_index(c->k, a, rowbase, row, col);
    if (a->scratch >= 0) lower_scratch_store(c, a->scratch, at, v);
    else kir_store(c->k, a->smem, at, v);
}

static void mm_body(lower_ctx *c, const kir_val *idx, void *user)
{
    mm_job *j = user;
    kir_kernel *K = c->k;
    const kir_val *bidx = idx;
    kir_val blk = idx[j->nb], cb = idx[j->nb + 1];
    int64_t mr = j->mr;
    kir_val i0 = kir_mul(K, blk, kir_idx(K, mr));
    kir_val j0 = kir_mul(K, cb, kir_idx(K, j->nc));
    kir_val j1 = j->ncb == 1 ? kir_idx(K, j->n) : kir_binary(K, KIR_MIN, kir_add(K, j0, kir_idx(K, j->nc)), kir_idx(K, j->n));
    ir_shape bshape = {.rank = j->nb};
    for (int d = 0; d < j->nb; d++) bshape.dim[d] = j->out->dim[d];
    kir_val unit = kir_add(K, kir_mul(K, lower_linear(K, &bshape, bidx), kir_idx(K, j->nblk)), blk);
    kir_val base = kir_mul(K, unit, kir_idx(K, mr * j->n));
    kir_val rowbase[MM_MR];
    for (int r = 0; r < mr; r++) rowbase[r] = kir_add(K, base, kir_idx(K, r * j->n));
    kir_val zero = kir_const_f(K, j->dt, 0);
    kir_val one = kir_idx(K, 1);
    acc_block acc = {j->acc, j->acc < 0 ? kir_smem_add(K, j->dt, mr * (j->nc + MM_PAD)) : -1, j->nc + MM_PAD, j0};

    kir_val col = kir_loop_begin(K, j0, j1, one);
    for (int r = 0; r < mr; r++) acc_store(c, &acc, rowbase[r], kir_idx(K, r), col, zero);
    kir_loop_end(K);

    kir_val k = kir_loop_begin(K, kir_idx(K, 0), kir_idx(K, j->kk), one);
    kir_val a[MM_MR];
    for (int r = 0; r < mr; r++) {
        /* Rows past M (last block) read a clamped row and are never stored. */
        kir_val i = kir_add(K, i0, kir_idx(K, r));
        if (j->m % mr) i = kir_binary(K, KIR_MIN, i, kir_idx(K, j->m - 1));
        a[r] = load_a(c, j, bidx, i, k);
    }
    col = j->col_loop = kir_loop_begin(K, j0, j1, one);
    kir_val b = load_b(c, j, bidx, k, col);
    for (int r = 0; r < mr; r++) {
        kir_val s = acc_load(c, &acc, rowbase[r], kir_idx(K, r), col);
        acc_store(c, &acc, rowbase[r], kir_idx(K, r), col, kir_binary(K, KIR_ADD, s, kir_binary(K, KIR_MUL, a[r], b)));
    }
    kir_loop_end(K);
    kir_loop_end(K);

    kir_val rows = j->m % mr ? kir_binary(K, KIR_MIN, kir_idx(K, mr), kir_binary(K, KIR_SUB, kir_idx(K, j->m), i0))
                             : kir_idx(K, mr);
    kir_val r = kir_loop_begin(K, kir_idx(K, 0), rows, one);
    kir_val rb = kir_add(K, base, kir_mul(K, r, kir_idx(K, j->n)));
    col = kir_loop_begin(K, j0, j1, one);
    kir_val v = acc_load(c, &acc, rb, r, col);
    store_c(c, j, bidx, kir_add(K, i0, r), col, v);
    kir_loop_end(K);
    kir_loop_end(K);
}

static smelt_status mm_lower(lower_ctx *c, mm_job *j)
{
    const ir_shape *out = j->out;
    j->mr = j->m < MM_MR ? (j->m > 0 ? j->m : 1) : MM_MR;
    j->nc = j->n > MM_NC_SPLIT ? MM_NC : (j->n > 0 ? j->n : 1);
    j->nblk = (j->m + j->mr - 1) / j->mr;
    j->ncb = (j->n + j->nc - 1) / j->nc;
    int64_t batch = 1;
    for (int d = 0; d < j->nb; d++) batch *= out->dim[d];
    if (batch == 0 || j->m == 0 || j->n == 0) return SMELT_OK;
    j->acc = -1;
    if (c->target->wg_size > 1) {
        j->acc = lower_scratch(c, j->dt, batch * j->nblk * j->mr * j->n);
        if (j->acc < 0) return ir_node_fail(c->n, SMELT_ERR_NOMEM, "out of memory");
    }
    ir_shape units = {.rank = j->nb + 3};
    for (int d = 0; d < j->nb; d++) units.dim[d] = out->dim[d];
    units.dim[j->nb] = j->nblk;
    units.dim[j->nb + 1] = j->ncb;
    units.dim[j->nb + 2] = 1;
    lower_parallel_for(c, &units, 2 * j->mr * j->nc * (j->kk > 0 ? j->kk : 1), mm_body, j);
    return c->k ? SMELT_OK : ir_node_fail(c->n, SMELT_ERR_NOMEM, "out of memory");
}

typedef struct pack_job {
    int scratch;
    int64_t n;
} pack_job;

/* packed[idx] = B[idx] in B's row-major order: B's fused index map read once. */
static void pack_nd_body(lower_ctx *c, const kir_val *idx, void *user)
{
    const pack_job *p = user;
    lower_scratch_store(c, p->scratch, lower_linear(c->k, &ir_in(c->g, c->n, 1)->shape, idx), lower_load(c, 1, idx));
}

smelt_status lower_MatMul(lower_ctx *c)
{
    const ir_tensor *a = ir_in(c->g, c->n, 0), *b = ir_in(c->g, c->n, 1);
    const ir_shape *out = &c->g->tensors[c->n->out[0]].shape;
    mm_job j = {.out = out, .b_packed = -1, .a_copy = -1, .dt = a->dtype};
    j.a_vec = a->shape.rank == 1;
    j.b_vec = b->shape.rank == 1;
    j.nb = out->rank - (j.a_vec ? 0 : 1) - (j.b_vec ? 0 : 1);
    j.m = j.a_vec ? 1 : a->shape.dim[a->shape.rank - 2];
    j.kk = a->shape.dim[a->shape.rank - 1];
    j.n = j.b_vec ? 1 : b->shape.dim[b->shape.rank - 1];
    if (b->enc.kind == IR_ENC_PANELS) {
        j.b_enc = true;
        j.kk = b->enc.k;
        j.n = b->enc.n;
    }
    if (mm_packed_ok(c, &j)) return mm_lower_packed(c, &j);
    if (c->target->wg_size > 1 || j.b_vec) return mm_lower(c, &j);
    /* A B that reaches the matmul through a transposing index map (attention's
     * K^T, inlined Transposes) is read across its rows in the column loop: no
     * vectors, a cache line per element. Then B is copied out once in its own
     * order (K*N elements, against M*N*K multiply-adds) and the matmul reads
     * the copy unit-stride. */
    int mark = lower_mark(c);
    TRY(mm_lower(c, &j));
    if (!j.col_loop || j.kk == 0 || !c->k || !lower_reads_across(c->k, j.col_loop)) return SMELT_OK;
    lower_rollback(c, mark);
    pack_job p = {lower_scratch(c, b->dtype, ir_shape_numel(&b->shape)), 0};
    if (p.scratch < 0) return ir_node_fail(c->n, SMELT_ERR_NOMEM, "out of memory");
    lower_parallel_for(c, &b->shape, 1, pack_nd_body, &p);
    if (!c->k) return ir_node_fail(c->n, SMELT_ERR_NOMEM, "out of memory");
    j.b_packed = p.scratch;
    j.col_loop = 0;
    return mm_lower(c, &j);
}

/* packed[k][j] = B[j][k]: makes the inner loop of a transB Gemm unit-stride. */
static void pack_body(lower_ctx *c, const kir_val *idx, void *user)
{
    const pack_job *p = user;
    kir_kernel *K = c->k;
    kir_val src[2] = {idx[1], idx[0]};
    kir_val v = lower_load(c, 1, src);
    lower_scratch_store(c, p->scratch, kir_add(K, kir_mul(K, idx[0], kir_idx(K, p->n)), idx[1]), v);
}

smelt_status parse_Gemm(const ir_graph *g, const ir_node *n, void *params)
{
    (void)g;
    *(gemm_params *)params = (gemm_params){.trans_a = ir_attr_int(n, "transA", 0) != 0,
                                           .trans_b = ir_attr_int(n, "transB", 0) != 0,
                                           .alpha = ir_attr_float(n, "alpha", 1.0f),
                                           .beta = ir_attr_float(n, "beta", 1.0f)};
    return SMELT_OK;
}

smelt_status lower_Gemm(lower_ctx *c)
{
    const ir_tensor *a = ir_in(c->g, c->n, 0), *b = ir_in(c->g, c->n, 1);
    const ir_shape *out = &c->g->tensors[c->n->out[0]].shape;
    mm_job j = {.out = out, .b_packed = -1, .a_copy = -1, .dt = a->dtype, .gemm = true, .nb = 0};
    gemm_params scratch;
    const void *pv;
    TRY(ir_node_params_get(c->g, c->n, &scratch, &pv));
    const gemm_params *p = pv;
    j.ta = p->trans_a;
    bool tb = j.tb = p->trans_b;
    j.alpha = p->alpha;
    j.beta = p->beta;
    j.m = out->dim[0];
    j.n = out->dim[1];
    j.kk = a->shape.dim[j.ta ? 0 : 1];
    if (j.m == 0 || j.n == 0) return SMELT_OK;
    j.b_enc = b->enc.kind == IR_ENC_PANELS;
    if (mm_packed_ok(c, &j)) return mm_lower_packed(c, &j);
    if (tb && j.kk > 0) {
        pack_job p = {lower_scratch(c, b->dtype, j.kk * j.n), j.n};
        if (p.scratch < 0) return ir_node_fail(c->n, SMELT_ERR_NOMEM, "out of memory");
        ir_shape ps = {.rank = 2, .dim = {j.kk, j.n}};
        lower_parallel_for(c, &ps, 1, pack_body, &p);
        j.b_packed = p.scratch;
    }
    return mm_lower(c, &j);
}


/* ---- packed panels and microkernels (C target) --------------------------
 * B as panels of NR columns, [N/NR][K][NR] with the tail zero-padded: a
 * constant B packed at compile time (graph/pack_weights.c, the tensor's
 * encoding), any other packed per call into scratch by a kernel of its own;
 * then the shared packed GEMM (ops/gemm_packed.h) reads A through A's index
 * map (so fused producers and transA cost nothing extra) and stores through
 * the region's output map and fused ops. */

/* Per vector width (f32 lanes, from the host's features): MR x NR keeps MR *
 * NR/W accumulators, NR/W loads of B and a broadcast of A in the registers
 * (AVX-512: 16 + 2 + 1 of 32, AVX2: 12 + 2 + 1 of 16); KC keeps a KC x NR
 * slice of the B panel in L1 across the unit's row blocks. */
static const mm_tiles mm_tile_table[] = {
    {16, 8, 32, 192}, /* AVX-512 */
    {8, 6, 16, 256},  /* AVX2 + FMA */
    {4, 4, 8, 256},   /* portable: plain loops */
};

mm_tiles mm_tiles_for(int vector_width)
{
    for (size_t i = 0; i < sizeof mm_tile_table / sizeof mm_tile_table[0]; i++)
        if (vector_width >= mm_tile_table[i].lanes) return mm_tile_table[i];
    return mm_tile_table[sizeof mm_tile_table / sizeof mm_tile_table[0] - 1];
}

/* The element B[k][col] (col < N) of the matmul's logical B, for batch index bidx. */
static kir_val logical_b(lower_ctx *c, const mm_job *j, const kir_val *bidx, kir_val k, kir_val col)
{
    if (j->gemm) {
        kir_val ij[2] = {j->tb ? col : k, j->tb ? k : col};
        return lower_load(c, 1, ij);
    }
    return load_batched(c, 1, j, bidx, k, col);
}

/* B's batch index (broadcast dims at 0) as a linear index over B's batch dims. */
static kir_val b_batch(lower_ctx *c, const mm_job *j, const kir_val *bidx)
{
    const ir_shape *s = &ir_in(c->g, c->n, 1)->shape;
    if (j->gemm || j->b_enc || s->rank <= 2) return kir_idx(c->k, 0);
    ir_shape bs = {.rank = s->rank - 2};
    kir_val idx[IR_MAX_RANK];
    for (int d = 0; d < bs.rank; d++) {
        bs.dim[d] = s->dim[d];
        idx[d] = s->dim[d] == 1 ? kir_idx(c->k, 0) : bidx[d + j->nb - bs.rank];
    }
    return lower_linear(c->k, &bs, idx);
}

/* Per call: packed[b][p][k][jj] = B[b][k][p*NR + jj], 0 past N. */
static void pack_panels_body(lower_ctx *c, const kir_val *idx, void *user)
{
    const mm_job *j = user;
    kir_kernel *K = c->k;
    const ir_shape *s = &ir_in(c->g, c->n, 1)->shape;
    int nbb = j->gemm ? 0 : s->rank - 2; /* idx: B's batch dims, p, k, jj */
    kir_val bidx[IR_MAX_RANK];
    for (int d = 0; d < j->nb; d++) bidx[d] = kir_idx(K, 0);
    for (int d = 0; d < nbb; d++) bidx[d + j->nb - nbb] = idx[d];
    kir_val col = kir_add(K, kir_mul(K, idx[nbb], kir_idx(K, j->tl.nr)), idx[nbb + 2]);
    kir_val v = logical_b(c, j, bidx, idx[nbb + 1], kir_binary(K, KIR_MIN, col, kir_idx(K, j->n - 1)));
    if (j->n % j->tl.nr) v = kir_select(K, kir_binary(K, KIR_LT, col, kir_idx(K, j->n)), v, kir_const_f(K, j->dt, 0));
    ir_shape ps = {.rank = nbb + 3};
    for (int d = 0; d < nbb; d++) ps.dim[d] = s->dim[d];
    ps.dim[nbb] = j->np, ps.dim[nbb + 1] = j->kk, ps.dim[nbb + 2] = j->tl.nr;
    lower_scratch_store(c, j->b_packed, lower_linear(K, &ps, idx), v);
}

static kir_val mmp_load_a(lower_ctx *c, const gemm_packed *g, const kir_val *bidx, kir_val i, kir_val k)
{
    return load_a(c, g->user, bidx, i, k);
}

static void mmp_store(lower_ctx *c, const gemm_packed *g, const kir_val *bidx, kir_val i, kir_val col, kir_val v)
{
    store_c(c, g->user, bidx, i, col, v);
}

static kir_val mmp_b_index(lower_ctx *c, const gemm_packed *g, const kir_val *bidx) { return b_batch(c, g->user, bidx); }

/* A MatMul whose B every batch index shares, with fewer rows per batch than
 * the microkernel's MR (attention's per-token projections, [48, 1, 192] x
 * [192, 576]): the batch folds into M, so one GEMM of batch * M rows fills the
 * microkernel's rows where each batch index alone would fill one. Row i of the
 * folded A is row i % M of batch index i / M. */
static bool mm_fold_batch(const lower_ctx *c, const mm_job *j)
{
    if (j->gemm || j->nb == 0 || j->a_vec || j->m >= mm_tiles_for(c->target->vector_width).mr) return false;
    const ir_shape *s = &ir_in(c->g, c->n, 1)->shape;
    if (j->b_enc) return true;
    for (int d = 0; d < s->rank - 2; d++)
        if (s->dim[d] != 1) return false;
    return true;
}

static void mmf_index(lower_ctx *c, const mm_job *j, kir_val i, kir_val *bidx, kir_val *row)
{
    kir_kernel *K = c->k;
    ir_shape bs = {.rank = j->nb};
    for (int d = 0; d < j->nb; d++) bs.dim[d] = j->out->dim[d];
    lower_unravel(K, &bs, j->m == 1 ? i : kir_binary(K, KIR_DIV, i, kir_idx(K, j->m)), bidx);
    *row = j->m == 1 ? kir_idx(K, 0) : kir_binary(K, KIR_MOD, i, kir_idx(K, j->m));
}

static kir_val mmf_load_a(lower_ctx *c, const gemm_packed *g, const kir_val *unused, kir_val i, kir_val k)
{
    (void)unused;
    kir_val bidx[IR_MAX_RANK], row;
    mmf_index(c, g->user, i, bidx, &row);
    return load_a(c, g->user, bidx, row, k);
}

static void mmf_store(lower_ctx *c, const gemm_packed *g, const kir_val *unused, kir_val i, kir_val col, kir_val v)
{
    (void)unused;
    kir_val bidx[IR_MAX_RANK], row;
    mmf_index(c, g->user, i, bidx, &row);
    store_c(c, g->user, bidx, row, col, v);
}

/* A's copy: [out batch dims][M][K], row-major. */
static ir_shape a_copy_shape(const mm_job *j)
{
    ir_shape s = {.rank = j->nb + 2};
    for (int d = 0; d < j->nb; d++) s.dim[d] = j->out->dim[d];
    s.dim[j->nb] = j->m, s.dim[j->nb + 1] = j->kk;
    return s;
}

/* Per call: copy[b][i][k] = A[b][i][k] through A's fused index map, once. */
static void a_copy_body(lower_ctx *c, const kir_val *idx, void *user)
{
    const mm_job *j = user;
    ir_shape s = a_copy_shape(j);
    lower_scratch_store(c, j->a_copy, lower_linear(c->k, &s, idx), load_a(c, j, idx, idx[j->nb], idx[j->nb + 1]));
}

static kir_val a_copy_read(lower_ctx *c, const gemm_packed *g, const kir_val *bidx, kir_val i, kir_val k)
{
    const mm_job *j = g->user;
    ir_shape s = a_copy_shape(j);
    kir_val idx[IR_MAX_RANK];
    for (int d = 0; d < j->nb; d++) idx[d] = bidx[d];
    idx[j->nb] = i, idx[j->nb + 1] = k;
    return lower_scratch_load(c, j->a_copy, lower_linear(c->k, &s, idx));
}

/* Whether an A that is not a plain matrix (a fused producer, transA) is
 * worth copying out once per call: where gemm_packed_lower splits one
 * unit's rows over two or more column units, each of them packs all of
 * those rows again through A's index map. It does so where a row unit's
 * columns exceed MM_NC_P (512), or where batch x row units fall short of
 * MM_MIN_UNITS (4) and N has two panels to split (ops/gemm_packed.c; row
 * units of up to MM_MB = 24 row blocks). */
static bool mm_copy_a(const mm_job *j)
{
    int64_t mr = j->m < j->tl.mr ? j->m : j->tl.mr, units = (j->m + mr * MM_MB - 1) / (mr * MM_MB);
    for (int d = 0; d < j->nb; d++) units *= j->out->dim[d];
    int64_t np = (j->n + j->tl.nr - 1) / j->tl.nr;
    return j->n > MM_NC_P || (units < MM_MIN_UNITS && np >= 2);
}

/* Whether the packed path takes this matmul: the C target, float32, B a
 * matrix; a B not packed at compile time is packed per call (K x N copies),
 * which pays where A has rows enough to reuse it (two row blocks), or where
 * the blocked path would copy B anyway (transB). */
static bool mm_packed_ok(const lower_ctx *c, const mm_job *j)
{
    if (c->target->wg_size != 1 || j->dt != SMELT_F32 || j->b_vec || j->m <= 0 || j->n <= 0 || j->kk <= 0) return false;
    if (getenv("SMELT_NO_PACKED_GEMM")) return false;
    return j->b_enc || j->tb || j->m >= 2 * mm_tiles_for(c->target->vector_width).mr;
}

static smelt_status mm_lower_packed(lower_ctx *c, mm_job *j)
{
    const ir_shape *out = j->out;
    gemm_packed g = {.nb = j->nb, .m = j->m, .n = j->n, .k = j->kk, .dt = j->dt, .b_input = j->b_enc ? 1 : -1,
                     .b_scratch = -1, .b_index = mmp_b_index, .load_a = mmp_load_a, .store = mmp_store, .user = j};
    for (int d = 0; d < j->nb; d++) g.batch[d] = out->dim[d];
    g.tl = j->tl = mm_tiles_for(c->target->vector_width);
    if (mm_fold_batch(c, j)) {
        g.nb = 0;
        g.m = ir_shape_numel(out) / (j->m * j->n) * j->m;
        g.b_index = NULL, g.load_a = mmf_load_a, g.store = mmf_store;
    } else if (!j->a_vec && !(j->gemm && j->ta) && lower_input_is_plain(c, 0)) {
        /* A a plain row-major matrix (no fused producer, not transposed): the
         * microkernel reads its rows in place (stride K), no per-unit pack. The
         * pack was a copy of the unit's rows repeated by every column block: at
         * 1 thread, interleaved with OpenBLAS, best of 60-100 runs (bench/gemm.c's
         * sizes), in place ran 128 x 3072 x 768 85 -> 89-90 GFLOP/s (its 6
         * column units each packed all of A's 1.5 MB), 512^3 91-92 -> 94, 1024^3
         * and 128 x 768 x 3072 level (within 1%). */
        g.read_a = mmp_load_a;
    } else if (!j->a_vec && mm_copy_a(j)) {
        /* A through a fused producer (the attention output's transpose into
         * the projection, a CRNN's transposed features into its classifier):
         * copied out once by a kernel of its own, then read in place, where
         * each column unit packed it again through the index map. The bench
         * gpt's projection (128 x 256 x 256, 4 column units) at 1 thread,
         * two interleaved rounds of 100 runs: 0.281-0.284 -> 0.214-0.233 ms
         * with the copy (0.004 ms of it). ddddocr_ocr's classifier (20 x 1024
         * x 8210, 17 units) did not move beyond the noise: it streams 33.6 MB
         * of panels, and the packs were a small part of that. */
        ir_shape as = a_copy_shape(j);
        j->a_copy = lower_scratch(c, j->dt, ir_shape_numel(&as));
        if (j->a_copy < 0) return ir_node_fail(c->n, SMELT_ERR_NOMEM, "out of memory");
        lower_parallel_for(c, &as, 1, a_copy_body, j);
        if (!c->k) return ir_node_fail(c->n, SMELT_ERR_NOMEM, "out of memory");
        g.read_a = a_copy_read;
    }
    j->np = gemm_packed_panels(&g);
    if (!j->b_enc) {
        const ir_shape *s = &ir_in(c->g, c->n, 1)->shape;
        int nbb = j->gemm ? 0 : s->rank - 2;
        ir_shape ps = {.rank = nbb + 3};
        for (int d = 0; d < nbb; d++) ps.dim[d] = s->dim[d];
        ps.dim[nbb] = j->np, ps.dim[nbb + 1] = j->kk, ps.dim[nbb + 2] = j->tl.nr;
        g.b_scratch = j->b_packed = lower_scratch(c, j->dt, ir_shape_numel(&ps));
        if (j->b_packed < 0) return ir_node_fail(c->n, SMELT_ERR_NOMEM, "out of memory");
        lower_parallel_for(c, &ps, 1, pack_panels_body, j);
        if (!c->k) return ir_node_fail(c->n, SMELT_ERR_NOMEM, "out of memory");
    }
    return gemm_packed_lower(c, &g);
}

/* ---- contractions ------------------------------------------------------- */

/* B's shape as the op sees it: [k, n] for a B packed into panels (ir.h). */
static ir_shape logical_shape(const ir_tensor *b)
{
    if (b->enc.kind == IR_ENC_PANELS) return (ir_shape){.rank = 2, .dim = {b->enc.k, b->enc.n}};
    return b->shape;
}

smelt_status infer_MatMul(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    const ir_tensor *a = ir_in(g, n, 0), *b = ir_in(g, n, 1);
    TRY(infer_need_input(g, n, 0, "A"));
    TRY(infer_need_input(g, n, 1, "B"));
    TRY(infer_need_dtype(n, a, "input", DT_ARITH));
    if (b->enc.kind != IR_ENC_PANELS || b->dtype == SMELT_F32) /* 8-bit panels hold float values (ir.h) */
        TRY(infer_need_same_dtype(n, a, b));
    char s1[160], s2[160];
    ir_shape bl = logical_shape(b);
    if (a->shape.rank < 1 || bl.rank < 1)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "operands must have rank >= 1, got %s and %s",
                            infer_shp(&a->shape, s1), infer_shp(&bl, s2));
    ir_shape sa = a->shape, sb = bl;
    if (sa.rank == 1) sa = (ir_shape){.rank = 2, .dim = {1, a->shape.dim[0]}};
    if (sb.rank == 1) sb = (ir_shape){.rank = 2, .dim = {bl.dim[0], 1}};
    int64_t ka = sa.dim[sa.rank - 1], kb = sb.dim[sb.rank - 2];
    if (!infer_dim_eq(ka, kb))
        return ir_node_fail(n, SMELT_ERR_SHAPE, "inner dimensions differ: A %s has K=%lld, B %s has K=%lld",
                            infer_shp(&a->shape, s1), (long long)ka, infer_shp(&bl, s2), (long long)kb);
    ir_shape ba = {.rank = sa.rank - 2}, bb = {.rank = sb.rank - 2}, out;
    memcpy(ba.dim, sa.dim, sizeof(int64_t) * (size_t)ba.rank);
    memcpy(bb.dim, sb.dim, sizeof(int64_t) * (size_t)bb.rank);
    if (!ir_shape_broadcast(&ba, &bb, &out))
        return ir_node_fail(n, SMELT_ERR_SHAPE, "batch dimensions of A %s and B %s do not broadcast",
                            infer_shp(&a->shape, s1), infer_shp(&bl, s2));
    if (a->shape.rank > 1) out.dim[out.rank++] = sa.dim[sa.rank - 2];
    if (bl.rank > 1) out.dim[out.rank++] = sb.dim[sb.rank - 1];
    if (out.rank > IR_MAX_RANK) return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "result rank exceeds %d", IR_MAX_RANK);
    infer_put_out(g, n, 0, a->dtype, &out);
    return SMELT_OK;
}

smelt_status infer_Gemm(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_need_input(g, n, 0, "A"));
    TRY(infer_need_input(g, n, 1, "B"));
    const ir_tensor *a = ir_in(g, n, 0), *b = ir_in(g, n, 1), *c = ir_in(g, n, 2);
    TRY(infer_need_dtype(n, a, "input", DT_ARITH));
    TRY(infer_need_same_dtype(n, a, b));
    if (c) TRY(infer_need_same_dtype(n, a, c));
    char s1[160], s2[160];
    ir_shape bl = logical_shape(b);
    if (a->shape.rank != 2 || bl.rank != 2)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "A and B must be matrices, got %s and %s", infer_shp(&a->shape, s1),
                            infer_shp(&bl, s2));
    gemm_params scratch;
    const void *pv;
    TRY(ir_node_params_get(g, n, &scratch, &pv));
    bool ta = ((const gemm_params *)pv)->trans_a, tb = ((const gemm_params *)pv)->trans_b;
    int64_t m = a->shape.dim[ta ? 1 : 0], ka = a->shape.dim[ta ? 0 : 1];
    int64_t kb = bl.dim[tb ? 1 : 0], nn = bl.dim[tb ? 0 : 1];
    if (!infer_dim_eq(ka, kb))
        return ir_node_fail(n, SMELT_ERR_SHAPE, "inner dimensions differ: A %s (transA=%d) has K=%lld, B %s (transB=%d) has K=%lld",
                            infer_shp(&a->shape, s1), ta, (long long)ka, infer_shp(&bl, s2), tb, (long long)kb);
    ir_shape out = {.rank = 2, .dim = {m, nn}};
    if (c) {
        ir_shape bc;
        if (c->shape.rank > 2 || !ir_shape_broadcast(&c->shape, &out, &bc) || !ir_shape_eq(&bc, &out))
            return ir_node_fail(n, SMELT_ERR_SHAPE, "C %s does not broadcast to the result shape %s",
                                infer_shp(&c->shape, s1), infer_shp(&out, s2));
    }
    infer_put_out(g, n, 0, a->dtype, &out);
    return SMELT_OK;
}
