/*
 * recurrent_lower.c — RNN, GRU and LSTM (packed forms, DynamicQuantizeLSTM): lowering.
 *
 * requires: a node of one of those ops, shapes inferred by infer_Recurrent
 *           (ops/recurrent.c).
 * guarantees: the attributes as rnn_parse reads them (recurrent_params.h).
 *             The lowering is four kernels:
 *               1. WT[d][k][n] = W[d][n][k]        (input weights, transposed)
 *               2. RT[d][k][n] = R[d][n][k]        (recurrent weights, transposed)
 *               3. P[d][row][n] = bias[n] + sum_k X[row][k] * WT[d][k][n], the
 *                  input projection of every time step at once (MR rows of X a
 *                  unit on the CPU; a thread per (MR rows, n) on GPU targets)
 *               4. the recurrence, looping over time: a workgroup per (direction,
 *                  group of batch entries) on the CPU (lower_Recurrent says why),
 *                  per (direction, entry) on a GPU; per step gates[n] = P[row][n]
 *                  + sum_k H[k] * RT[k][n] (unit-stride over n), a barrier, then
 *                  the state update per hidden unit, which also stores Y.
 *             Steps at or past a batch entry's sequence length are skipped and
 *             their Y is zero; Y_h/Y_c hold the state after its last valid
 *             step (reverse: time runs from length-1 to 0), zero for an entry of
 *             length 0 (as onnxruntime does). Each output element is stored once.
 *             PackedRNN/GRU/LSTM: constant W and R stored [D, K, N] at compile
 *             time (graph_fold_gemm_transpose), so no kernels 1 and 2; on the CPU
 *             3 is the packed GEMM over W's panels, packed at compile time
 *             (graph_pack_recurrent_w; the quantized W's 8-bit), its A X's rows
 *             written once as float32 by a kernel of their own and read in place.
 *             Constant 8-bit W, R of DynamicQuantizeLSTM: less the zero point
 *             (graph/fold_gemm.c), read in place: int8 where that fits (W only:
 *             the GEMM widens it in registers), float32 otherwise. An int8 R read
 *             by rows in the recurrence measured slower (ddddocr_ocr_quant's
 *             512-hidden recurrence 4.5 -> 7.3 ms: the C compiler's per-element
 *             widening costs more than the bytes it saves); on the C target R is
 *             8-bit panels instead (graph_pack_recurrent_r), read by the int8
 *             microkernel (gemv_panels), or int16 k-pair panels where their
 *             sums stay exact, read with h_q - h_zp as int16 by the k-pair
 *             microkernel (gemv_pairs: ddddocr_ocr_quant's recurrence 2.21-2.24
 *             -> 1.25 ms, 1 thread: the float32 widening of 8-bit R cost more
 *             than the k-pair panels' twice as many bytes).
 *             DynamicQuantizeLSTM (com.microsoft, imported by onnx/contrib.c with
 *             X already quantized to uint8 and its scale and zero point as inputs
 *             12 and 13) is the LSTM as onnxruntime computes it: W [D, input, 4H]
 *             and R [D, H, 4H] are already in the packed order (kernels 1, 2
 *             copy them less their zero points), the projection is the exact
 *             integer sum of (x - x_zp)(w - w_zp) times x_scale * w_scale, and
 *             every step quantizes h to uint8 as DynamicQuantizeLinear does
 *             (per direction and batch entry; onnxruntime quantizes the rows
 *             its thread holds, the same for batch 1), then gates = P +
 *             sum (h_q - h_zp)(r - r_zp) * h_scale * r_scale + bias.
 */
#include <stdint.h>
#include <string.h>

#include "lower/lower.h"
#include "ops/gemm_packed.h"
#include "ops/recurrent.h"
#include "ops/recurrent_params.h"

static kir_val bin(kir_kernel *K, kir_op op, kir_val a, kir_val b) { return kir_binary(K, op, a, b); }
static kir_val fc(kir_kernel *K, smelt_dtype dt, double v) { return kir_const_f(K, dt, v); }

static kir_val activate(kir_kernel *K, smelt_dtype dt, const rnn_fn *f, kir_val x)
{
    kir_val zero = fc(K, dt, 0), one = fc(K, dt, 1), a = fc(K, dt, f->alpha), b = fc(K, dt, f->beta);
    switch (f->act) {
    case ACT_RELU: return bin(K, KIR_MAX, x, zero);
    case ACT_TANH: return kir_unary(K, KIR_TANH, x);
    case ACT_SIGMOID: return bin(K, KIR_DIV, one, bin(K, KIR_ADD, one, kir_unary(K, KIR_EXP, kir_unary(K, KIR_NEG, x))));
    case ACT_AFFINE: return bin(K, KIR_ADD, bin(K, KIR_MUL, a, x), b);
    case ACT_LEAKYRELU: return kir_select(K, bin(K, KIR_GE, x, zero), x, bin(K, KIR_MUL, a, x));
    case ACT_THRESHOLDEDRELU: return kir_select(K, bin(K, KIR_GT, x, a), x, zero);
    case ACT_SCALEDTANH: return bin(K, KIR_MUL, a, kir_unary(K, KIR_TANH, bin(K, KIR_MUL, b, x)));
    case ACT_HARDSIGMOID: return bin(K, KIR_MAX, zero, bin(K, KIR_MIN, one, bin(K, KIR_ADD, bin(K, KIR_MUL, a, x), b)));
    case ACT_ELU:
        return kir_select(K, bin(K, KIR_GE, x, zero), x, bin(K, KIR_MUL, a, bin(K, KIR_SUB, kir_unary(K, KIR_EXP, x), one)));
    case ACT_SOFTSIGN: return bin(K, KIR_DIV, x, bin(K, KIR_ADD, one, kir_unary(K, KIR_ABS, x)));
    case ACT_SOFTPLUS: return kir_unary(K, KIR_LOG, bin(K, KIR_ADD, one, kir_unary(K, KIR_EXP, x)));
    case ACT_COUNT: break;
    }
    return x;
}

/* Rows of X per projection unit: each WT element loaded feeds MR products. */
#define RNN_MR 4
/* Rows of RT per pass over the gates in the recurrence: 8 ran the bench LSTM
 * (hidden 128, 1 thread, a loaded 2-core host) 15-30% slower than 4. */
#define RNN_KU 4
/* Workgroup memory the CPU recurrence may keep on its stack. */
#define RNN_CPU_STACK_BYTES (64 * 1024)

typedef struct rnn_job {
    rnn_params p;
    int64_t n;         /* G * H */
    int64_t rows;      /* seq * batch, in X's own order */
    int64_t rows_pad;  /* rows rounded up to RNN_MR */
    int wt, rt, proj;  /* scratch: WT, RT, P */
    int xrows;         /* scratch: X as [rows, input] float rows (proj_gemm's A), or -1 */
    int state;         /* scratch for the recurrence's vectors, or -1: workgroup memory */
    int64_t group;     /* the recurrence's batch entries per workgroup (the last group may hold fewer) */
    bool batched;      /* group > 1: each workgroup loops over its group's entries */
} rnn_job;

/* ---- kernels 1, 2: transposed weights ---- */

typedef struct pack_job {
    int in, scratch;
    int64_t n, k;
    int zp;            /* quantized weights (already [D, K, N]): their zero point input, or -1 */
    bool quant;
} pack_job;

/* Element [d] or [d][n] of a per-direction or per-column scale or zero point, as float32 (0 for
 * an omitted zero point). */
static kir_val qparam(lower_ctx *c, int in, kir_val d, kir_val nn)
{
    const ir_tensor *t = ir_in(c->g, c->n, in);
    if (!t) return kir_const_f(c->k, SMELT_F32, 0);
    kir_val idx[2] = {d, nn};
    return kir_cast(c->k, SMELT_F32, lower_load(c, in, idx));
}

static kir_val load_scalar_f32(lower_ctx *c, int in)
{
    kir_val none = 0;
    return kir_cast(c->k, SMELT_F32, lower_load(c, in, &none));
}

/* Element idx of W or R read where it is: DynamicQuantizeLSTM's 8-bit weights
 * without a zero point (graph/fold_gemm.c) widened to float32, exact. */
static kir_val in_place_load(lower_ctx *c, int in, const kir_val *idx)
{
    kir_val v = lower_load(c, in, idx);
    return c->k->vals[v].type == SMELT_F32 ? v : kir_cast(c->k, SMELT_F32, v);
}

/* Whether W or R (input in) is read in place: stored packed, and float32 or
 * 8-bit without a zero point. */
static bool in_place(const lower_ctx *c, const rnn_params *p, int in)
{
    return p->packed && (ir_in(c->g, c->n, in)->dtype == SMELT_F32 || (p->quant && !ir_in(c->g, c->n, in == IN_W ? IN_WZ : IN_RZ)));
}

/* Visits the packed [D, K, N] order: stores run unit-stride and the
 * transposed reads are left to lower_parallel_for's tiles. */
static void pack_body(lower_ctx *c, const kir_val *idx, void *user)
{
    const pack_job *j = user;
    kir_kernel *K = c->k;
    kir_val src[3] = {idx[0], idx[2], idx[1]};
    kir_val at = kir_add(K, kir_mul(K, kir_add(K, kir_mul(K, idx[0], kir_idx(K, j->k)), idx[1]), kir_idx(K, j->n)), idx[2]);
    if (!j->quant) {
        lower_scratch_store(c, j->scratch, at, lower_load(c, j->in, src));
        return;
    }
    /* w - w_zp: an integer of at most 9 bits, exact in float32, as are the projection's sums of
     * their products while below 2^24. */
    kir_val w = kir_cast(K, SMELT_F32, lower_load(c, j->in, idx));
    lower_scratch_store(c, j->scratch, at, bin(K, KIR_SUB, w, qparam(c, j->zp, idx[0], idx[2])));
}

/* Element [d][k][n] of packed W or R (input `in`): its scratch copy (flat index `at`), or the
 * input itself where it is stored packed (scratch < 0). */
static kir_val packed_load(lower_ctx *c, int in, int scratch, kir_val d, kir_val k, kir_val nn, kir_val at)
{
    if (scratch >= 0) return lower_scratch_load(c, scratch, at);
    kir_val idx[3] = {d, k, nn};
    return in_place_load(c, in, idx);
}

/* ---- kernel 3: the input projection ---- */

/* Projection bias of gate row n of direction d: Wb + Rb, except GRU's hidden
 * gate, whose Rb joins the recurrent part (it is scaled by r there when
 * linear_before_reset). */
static kir_val proj_bias(lower_ctx *c, const rnn_job *j, kir_val d, kir_val nn)
{
    kir_kernel *K = c->k;
    if (!ir_in(c->g, c->n, IN_B)) return fc(K, j->p.dt, 0);
    kir_val wi[2] = {d, nn}, ri[2] = {d, kir_add(K, nn, kir_idx(K, j->n))};
    kir_val wb = lower_load(c, IN_B, wi), rb = lower_load(c, IN_B, ri);
    if (j->p.cell != CELL_GRU) return bin(K, KIR_ADD, wb, rb);
    kir_val is_h = bin(K, KIR_GE, nn, kir_idx(K, 2 * j->p.hidden));
    return kir_select(K, is_h, wb, bin(K, KIR_ADD, wb, rb));
}

/* Element [i][k] of X seen as [rows, input], rows in X's own order; rows past
 * the last (final block) read the last row, into P's padding. */
static kir_val x_row_load(lower_ctx *c, const rnn_job *j, kir_val i, kir_val k)
{
    kir_kernel *K = c->k;
    const ir_shape *xs = &ir_in(c->g, c->n, IN_X)->shape;
    ir_shape rs = {.rank = 2, .dim = {xs->dim[0], xs->dim[1]}};
    if (j->rows % RNN_MR) i = bin(K, KIR_MIN, i, kir_idx(K, j->rows - 1));
    kir_val xi[3];
    lower_unravel(K, &rs, i, xi);
    xi[2] = k;
    if (!j->p.quant) return lower_load(c, IN_X, xi);
    return bin(K, KIR_SUB, kir_cast(K, SMELT_F32, lower_load(c, IN_X, xi)), load_scalar_f32(c, IN_XZ));
}

/* CPU: one unit is MR rows of P; the k-loop is outside, the loop over n
 * inside runs unit-stride and vectorizes. */
static void proj_body(lower_ctx *c, const kir_val *idx, void *user)
{
    const rnn_job *j = user;
    kir_kernel *K = c->k;
    kir_val d = idx[0], i0 = kir_mul(K, idx[1], kir_idx(K, RNN_MR)), one = kir_idx(K, 1);
    kir_val base = kir_mul(K, kir_add(K, kir_mul(K, d, kir_idx(K, j->rows_pad)), i0), kir_idx(K, j->n));
    kir_val rowbase[RNN_MR];
    for (int q = 0; q < RNN_MR; q++) rowbase[q] = kir_add(K, base, kir_idx(K, q * j->n));
    kir_val nn = kir_loop_begin(K, kir_idx(K, 0), kir_idx(K, j->n), one);
    kir_val bias = j->p.quant ? fc(K, j->p.dt, 0) : proj_bias(c, j, d, nn);
    for (int q = 0; q < RNN_MR; q++) lower_scratch_store(c, j->proj, kir_add(K, rowbase[q], nn), bias);
    kir_loop_end(K);

    if (j->p.input == 0) return;
    kir_val k = kir_loop_begin(K, kir_idx(K, 0), kir_idx(K, j->p.input), one);
    kir_val a[RNN_MR];
    for (int q = 0; q < RNN_MR; q++) a[q] = x_row_load(c, j, kir_add(K, i0, kir_idx(K, q)), k);
    kir_val wrow = kir_mul(K, kir_add(K, kir_mul(K, d, kir_idx(K, j->p.input)), k), kir_idx(K, j->n));
    nn = kir_loop_begin(K, kir_idx(K, 0), kir_idx(K, j->n), one);
    kir_val w = packed_load(c, IN_W, j->wt, d, k, nn, kir_add(K, wrow, nn));
    for (int q = 0; q < RNN_MR; q++) {
        kir_val at = kir_add(K, rowbase[q], nn);
        kir_val s = lower_scratch_load(c, j->proj, at);
        lower_scratch_store(c, j->proj, at, bin(K, KIR_ADD, s, bin(K, KIR_MUL, a[q], w)));
    }
    kir_loop_end(K);
    kir_loop_end(K);
    if (!j->p.quant) return;
    /* onnxruntime: float(sum) * (x_scale * w_scale); the bias joins at each step */
    nn = kir_loop_begin(K, kir_idx(K, 0), kir_idx(K, j->n), one);
    kir_val m = bin(K, KIR_MUL, load_scalar_f32(c, IN_XS), qparam(c, IN_WS, d, nn));
    for (int q = 0; q < RNN_MR; q++) {
        kir_val at = kir_add(K, rowbase[q], nn);
        lower_scratch_store(c, j->proj, at, bin(K, KIR_MUL, lower_scratch_load(c, j->proj, at), m));
    }
    kir_loop_end(K);
}

/* GPU: one thread per (MR rows, n): MR sums in registers, reads of WT
 * coalesced over the threads' n, X's elements the same for every thread. */
static void proj_col_body(lower_ctx *c, const kir_val *idx, void *user)
{
    const rnn_job *j = user;
    kir_kernel *K = c->k;
    kir_val d = idx[0], i0 = kir_mul(K, idx[1], kir_idx(K, RNN_MR)), nn = idx[2];
    kir_val bias = j->p.quant ? fc(K, j->p.dt, 0) : proj_bias(c, j, d, nn);
    int acc[RNN_MR];
    for (int q = 0; q < RNN_MR; q++) acc[q] = kir_var_new(K, j->p.dt, bias);
    if (j->p.input > 0) {
        kir_val k = kir_loop_begin(K, kir_idx(K, 0), kir_idx(K, j->p.input), kir_idx(K, 1));
        kir_val wrow = kir_mul(K, kir_add(K, kir_mul(K, d, kir_idx(K, j->p.input)), k), kir_idx(K, j->n));
        kir_val w = packed_load(c, IN_W, j->wt, d, k, nn, kir_add(K, wrow, nn));
        for (int q = 0; q < RNN_MR; q++) {
            kir_val a = x_row_load(c, j, kir_add(K, i0, kir_idx(K, q)), k);
            kir_var_set(K, acc[q], bin(K, KIR_ADD, kir_var_get(K, acc[q]), bin(K, KIR_MUL, a, w)));
        }
        kir_loop_end(K);
    }
    kir_val base = kir_mul(K, kir_add(K, kir_mul(K, d, kir_idx(K, j->rows_pad)), i0), kir_idx(K, j->n));
    kir_val m = j->p.quant ? bin(K, KIR_MUL, load_scalar_f32(c, IN_XS), qparam(c, IN_WS, d, nn)) : 0;
    for (int q = 0; q < RNN_MR; q++) {
        kir_val v = kir_var_get(K, acc[q]);
        if (j->p.quant) v = bin(K, KIR_MUL, v, m);
        lower_scratch_store(c, j->proj, kir_add(K, base, kir_add(K, kir_idx(K, q * j->n), nn)), v);
    }
}

static smelt_status no_mem(lower_ctx *c) { return ir_node_fail(c->n, SMELT_ERR_NOMEM, "out of memory"); }

/* CPU: the projection is the packed GEMM (ops/gemm_packed.h), batch D, M the
 * rows, with the bias or the quantized scales applied as each element is
 * stored. A is X's rows as float32 (x - x_zp for DynamicQuantizeLSTM), written
 * once into scratch (x_rows_body) and read in place: packed by each unit, A was
 * read through the region's fused producers once per unit. B is W's panels
 * packed at compile time where W is constant (graph_pack_recurrent_w, the C
 * target alone): W read in place as [D, K, N] took each k's NR columns from
 * rows 4*G*H bytes apart, all in the same L1 sets (ddddocr_ocr's 20 x 512 x
 * 2 x 2048: 1.95 -> 1.09 ms, 44 -> 77 GFLOP/s, 1 thread, loaded host). The
 * quantized W's panels are 8-bit and A, a read-only float32 parameter of
 * integers within 255, takes the int16-pair microkernel
 * (target/emit_c_gemm_int8.c; ddddocr_ocr_quant's projection 2.10 -> ~0.65
 * ms). W stored packed [D, K, N] otherwise (a program for several devices)
 * with N a whole number of panels is B read in place; otherwise kernel 1
 * writes WT as the GEMM's panels [D][ceil(N/NR)][I][NR] (zero past N).
 * The constant-weight projection was the MR-row loop (proj_body), 85% of
 * anr_encoder's kernel time (two bidirectional GRUs, 52 rows, K 256 and 256,
 * N 384); as the GEMM over W in place the model went 1.47-1.50 -> 1.11-1.18
 * ms (min of 200 runs, 3 interleaved rounds, 1 thread, host at load ~5). */
typedef struct panel_job {
    const rnn_job *j;
    int64_t np, nr;
} panel_job;

static void panel_pack_body(lower_ctx *c, const kir_val *idx, void *user)
{
    const panel_job *pj = user;
    const rnn_job *j = pj->j;
    kir_kernel *K = c->k;
    kir_val col = kir_add(K, kir_mul(K, idx[1], kir_idx(K, pj->nr)), idx[3]);
    kir_val nn = j->n % pj->nr ? bin(K, KIR_MIN, col, kir_idx(K, j->n - 1)) : col;
    kir_val v;
    if (j->p.quant) {
        kir_val src[3] = {idx[0], idx[2], nn};
        v = bin(K, KIR_SUB, kir_cast(K, SMELT_F32, lower_load(c, IN_W, src)), qparam(c, IN_WZ, idx[0], nn));
    } else if (j->p.packed) {
        kir_val src[3] = {idx[0], idx[2], nn};
        v = lower_load(c, IN_W, src);
    } else {
        kir_val src[3] = {idx[0], nn, idx[2]};
        v = lower_load(c, IN_W, src);
    }
    if (j->n % pj->nr) v = kir_select(K, bin(K, KIR_LT, col, kir_idx(K, j->n)), v, fc(K, j->p.dt, 0));
    ir_shape ps = {.rank = 4, .dim = {j->p.dirs, pj->np, j->p.input, pj->nr}};
    lower_scratch_store(c, j->wt, lower_linear(K, &ps, idx), v);
}

static kir_val proj_gemm_b(lower_ctx *c, const gemm_packed *g, const kir_val *bidx)
{
    (void)c, (void)g;
    return bidx[0];
}

/* B[k][n] of direction d read in place from W stored packed [D, K, N]. */
static kir_val proj_gemm_read_w(lower_ctx *c, const gemm_packed *g, const kir_val *bidx, kir_val k, kir_val nn)
{
    (void)g;
    kir_val idx[3] = {bidx[0], k, nn};
    return in_place_load(c, IN_W, idx);
}

/* A[i][k] (i < M: gemm_packed runs the last rows on a microkernel of that many): X's row i,
 * element k, read in place from its float rows (x_rows_body). */
static kir_val proj_gemm_a(lower_ctx *c, const gemm_packed *g, const kir_val *bidx, kir_val i, kir_val k)
{
    (void)bidx;
    const rnn_job *j = ((const panel_job *)g->user)->j;
    kir_kernel *K = c->k;
    return lower_scratch_load(c, j->xrows, kir_add(K, kir_mul(K, i, kir_idx(K, j->p.input)), k));
}

/* X's rows, each element as the projection reads it (through the region's fused producers;
 * DynamicQuantizeLSTM's x - x_zp as float32), into scratch xrows once: every unit of the GEMM
 * packs all of A, and each element loaded through a fused QuantizeLinear (ddddocr_ocr_quant)
 * is a division and a rounding, repeated by each of the GEMM's 8 units. */
static void x_rows_body(lower_ctx *c, const kir_val *idx, void *user)
{
    const rnn_job *j = user;
    kir_kernel *K = c->k;
    kir_val at = kir_add(K, kir_mul(K, idx[0], kir_idx(K, j->p.input)), idx[1]);
    lower_scratch_store(c, j->xrows, at, x_row_load(c, j, idx[0], idx[1]));
}

static void proj_gemm_store(lower_ctx *c, const gemm_packed *g, const kir_val *bidx, kir_val i, kir_val nn, kir_val v)
{
    const rnn_job *j = ((const panel_job *)g->user)->j;
    kir_kernel *K = c->k;
    kir_val d = bidx[0];
    if (j->p.quant) v = bin(K, KIR_MUL, v, bin(K, KIR_MUL, load_scalar_f32(c, IN_XS), qparam(c, IN_WS, d, nn)));
    else v = bin(K, KIR_ADD, v, proj_bias(c, j, d, nn));
    kir_val at = kir_add(K, kir_mul(K, kir_add(K, kir_mul(K, d, kir_idx(K, j->rows_pad)), i), kir_idx(K, j->n)), nn);
    lower_scratch_store(c, j->proj, at, v);
}

/* Whether kernels 1 and 3 are panels and the packed GEMM (proj_gemm). */
static bool proj_gemm_ok(const lower_ctx *c, const rnn_job *j)
{
    const rnn_params *p = &j->p;
    return c->target->wg_size == 1 && p->dt == SMELT_F32 && j->rows > 0 && p->input > 0;
}

static smelt_status proj_gemm(lower_ctx *c, rnn_job *j)
{
    const rnn_params *p = &j->p;
    mm_tiles tl = mm_tiles_for(c->target->vector_width);
    panel_job pj = {j, (j->n + tl.nr - 1) / tl.nr, tl.nr};
    gemm_packed g = {.nb = 1, .batch = {p->dirs}, .m = j->rows, .n = j->n, .k = p->input, .dt = p->dt, .tl = tl,
                     .b_input = -1, .b_scratch = -1, .b_index = proj_gemm_b, .read_a = proj_gemm_a,
                     .store = proj_gemm_store, .user = &pj};
    int64_t xn;
    if (__builtin_mul_overflow(j->rows, p->input, &xn))
        return ir_node_fail(c->n, SMELT_ERR_SHAPE, "the sizes (seq, batch, input, hidden) overflow int64");
    j->xrows = lower_scratch(c, p->dt, xn);
    if (j->xrows < 0) return no_mem(c);
    ir_shape xs = {.rank = 2, .dim = {j->rows, p->input}};
    lower_parallel_for(c, &xs, 1, x_rows_body, j);
    if (!c->k) return no_mem(c);
    const ir_tensor *w = ir_in(c->g, c->n, IN_W);
    if (w->enc.kind == IR_ENC_PANELS) { /* packed at compile time (graph_pack_recurrent_w) */
        if (w->enc.nr != tl.nr)
            return ir_node_fail(c->n, SMELT_ERR_INTERNAL, "W's panels are %lld wide, the GEMM's %lld", (long long)w->enc.nr,
                                (long long)tl.nr);
        g.b_input = IN_W;
        g.b_batched = true;
        TRY(gemm_packed_lower(c, &g));
        return c->k ? SMELT_OK : no_mem(c);
    }
    if (in_place(c, p, IN_W) && j->n % tl.nr == 0) { /* whole panels: in place */
        g.read_b = proj_gemm_read_w;
        TRY(gemm_packed_lower(c, &g));
        return c->k ? SMELT_OK : no_mem(c);
    }
    int64_t numel;
    if (__builtin_mul_overflow(p->dirs * pj.np, p->input * tl.nr, &numel))
        return ir_node_fail(c->n, SMELT_ERR_SHAPE, "the sizes (seq, batch, input, hidden) overflow int64");
    j->wt = lower_scratch(c, p->dt, numel);
    if (j->wt < 0) return no_mem(c);
    ir_shape ps = {.rank = 4, .dim = {p->dirs, pj.np, p->input, tl.nr}};
    lower_parallel_for(c, &ps, 1, panel_pack_body, &pj);
    if (!c->k) return no_mem(c);
    g.b_scratch = j->wt;
    TRY(gemm_packed_lower(c, &g));
    return c->k ? SMELT_OK : no_mem(c);
}

/* ---- kernel 4: the recurrence ---- */

/* A vector of the recurrence's state: workgroup memory, or a slice of the
 * state scratch, at `base` (0: none). */
typedef struct rvec {
    int smem, scratch;
    kir_val base;
} rvec;

typedef struct rstate {
    const rnn_job *j;
    kir_val d, b, len;         /* this workgroup's direction and batch entry (batched: its group's
                                * first entry; in an entry loop, the entry); its length */
    kir_val cnt, l;            /* batched: the group's entries; in an entry loop, b's place in the group */
    kir_val dirrev;            /* bool: this direction runs backwards in time */
    kir_val valid;             /* masked time loop: whether step t is inside len (else 0) */
    rvec h, cst, gates, rh;
    int rh16;                  /* DynamicQuantizeLSTM with R as int16 k-pair panels: h_q - h_zp as int16
                                * (workgroup memory, H rounded up to even, the pad 0), else -1 */
} rstate;

static kir_val rv_load(lower_ctx *c, const rvec *v, kir_val i)
{
    if (v->smem >= 0) return kir_load(c->k, v->smem, v->base ? kir_add(c->k, v->base, i) : i);
    return lower_scratch_load(c, v->scratch, kir_add(c->k, v->base, i));
}

static void rv_store(lower_ctx *c, const rvec *v, kir_val i, kir_val x)
{
    if (v->smem >= 0) kir_store(c->k, v->smem, v->base ? kir_add(c->k, v->base, i) : i, x);
    else lower_scratch_store(c, v->scratch, kir_add(c->k, v->base, i), x);
}

/* Vector v of batch entry b, entries `len` apart. */
static rvec rv_entry(kir_kernel *K, rvec v, kir_val b, int64_t len)
{
    kir_val at = kir_mul(K, b, kir_idx(K, len));
    v.base = v.base ? kir_add(K, v.base, at) : at;
    return v;
}

/* Batched (j->batched): opens a loop over the group's entries and returns the
 * state of its l-th entry, batch entry b (its vectors at l times their
 * length); else s itself. */
static rstate entry_begin(lower_ctx *c, const rstate *s)
{
    rstate e = *s;
    if (!s->j->batched) return e;
    kir_kernel *K = c->k;
    e.l = kir_loop_begin(K, kir_idx(K, 0), s->cnt, kir_idx(K, 1));
    e.b = kir_add(K, s->b, e.l);
    int64_t H = s->j->p.hidden;
    e.h = rv_entry(K, s->h, e.l, H);
    e.cst = rv_entry(K, s->cst, e.l, H);
    e.gates = rv_entry(K, s->gates, e.l, s->j->n);
    e.rh = rv_entry(K, s->rh, e.l, H);
    return e;
}

static void entry_end(lower_ctx *c, const rstate *s)
{
    if (s->j->batched) kir_loop_end(c->k);
}

static kir_val clipped(kir_kernel *K, const rnn_params *p, kir_val x)
{
    if (!p->has_clip) return x;
    return bin(K, KIR_MIN, bin(K, KIR_MAX, x, fc(K, p->dt, -p->clip)), fc(K, p->dt, p->clip));
}

/* f_i(clip(x)) for activation i of direction d (a uniform value: both
 * directions' functions are built and the direction picks one). */
static kir_val act_dir(kir_kernel *K, const rstate *s, int i, kir_val x)
{
    const rnn_params *p = &s->j->p;
    x = clipped(K, p, x);
    kir_val f0 = activate(K, p->dt, &p->fn[0][i], x);
    if (p->dirs == 1 || !memcmp(&p->fn[0][i], &p->fn[1][i], sizeof p->fn[0][i])) return f0;
    return kir_select(K, bin(K, KIR_EQ, s->d, kir_idx(K, 0)), f0, activate(K, p->dt, &p->fn[1][i], x));
}

/* Index of an output or initial-state element [d][b][j] in the layout. */
static void state_index(const rstate *s, kir_val j, kir_val *idx)
{
    bool l1 = s->j->p.layout != 0;
    idx[0] = l1 ? s->b : s->d;
    idx[1] = l1 ? s->d : s->b;
    idx[2] = j;
}

static void y_index(const rstate *s, kir_val t, kir_val j, kir_val *idx)
{
    if (s->j->p.layout) {
        idx[0] = s->b, idx[1] = t, idx[2] = s->d, idx[3] = j;
    } else {
        idx[0] = t, idx[1] = s->d, idx[2] = s->b, idx[3] = j;
    }
}

static bool has_out(const lower_ctx *c, int o) { return o < c->n->n_out && c->n->out[o] >= 0; }

/* gemv over R held as 8-bit panels (graph_pack_recurrent_r: the C target, DynamicQuantizeLSTM):
 * each column block of n in [n0, n1) (whole blocks) as a gemm loop (kir.h, "Microkernel loops")
 * of one row, its sums in registers over all of k and the panel widened there
 * (target/emit_c_gemm_int8.c). ddddocr_ocr_quant's 512-hidden recurrence, read as float32 rows
 * (below), moved 4 MB of R a step and direction; as int8 panels it ran 22% faster (6.1-6.7 ->
 * 4.7-5.2 ms, 3 interleaved rounds on the loaded 2-core host, 1 thread). */
static void gemv_panels(lower_ctx *c, const rstate *s, const rvec *v, int64_t n0, int64_t n1)
{
    kir_kernel *K = c->k;
    const rnn_job *j = s->j;
    const ir_tensor *r = ir_in(c->g, c->n, IN_R);
    int64_t H = j->p.hidden, nr = r->enc.nr, nb = r->enc.n / nr;
    kir_val z = kir_idx(K, 0), one = kir_idx(K, 1);
    kir_val p = kir_loop_begin(K, kir_idx(K, n0 / nr), kir_idx(K, n1 / nr), one);
    kir_val pd = kir_add(K, kir_mul(K, s->d, kir_idx(K, nb)), p), col0 = kir_mul(K, p, kir_idx(K, nr));
    kir_val k = kir_loop_begin_gemm(K, kir_idx(K, H));
    kir_val a = rv_load(c, v, k);
    kir_val jj = kir_loop_begin(K, z, kir_idx(K, nr), one);
    kir_val gi = kir_add(K, col0, jj), ri[3] = {pd, k, jj};
    kir_val b = gemm_int8_widen(K, SMELT_F32, lower_load(c, IN_R, ri), r->enc.offset);
    rv_store(c, &s->gates, gi, bin(K, KIR_ADD, rv_load(c, &s->gates, gi), bin(K, KIR_MUL, a, b)));
    kir_loop_end(K);
    kir_loop_end(K);
    kir_loop_end(K);
}

/* gemv_panels over R as int16 k-pair panels (graph_pack_recurrent_r: [D * N/nr][ceil(H/2)][nr][2])
 * and h_q - h_zp as int16 (s->rh16): each step of the gemm loop adds a[2kp] * r[2kp][n] +
 * a[2kp+1] * r[2kp+1][n], the C target's k-pair microkernel (target/emit_c_gemm_pairs.c: vpmaddwd,
 * int32 sums, exact within the bound graph_pack_recurrent_r checked). */
static void gemv_pairs(lower_ctx *c, const rstate *s, int64_t n0, int64_t n1)
{
    kir_kernel *K = c->k;
    const rnn_job *j = s->j;
    const ir_tensor *r = ir_in(c->g, c->n, IN_R);
    int64_t H = j->p.hidden, nr = r->enc.nr, nb = r->enc.n / nr;
    kir_val z = kir_idx(K, 0), one = kir_idx(K, 1), two = kir_idx(K, 2);
    kir_val p = kir_loop_begin(K, kir_idx(K, n0 / nr), kir_idx(K, n1 / nr), one);
    kir_val pd = kir_add(K, kir_mul(K, s->d, kir_idx(K, nb)), p), col0 = kir_mul(K, p, kir_idx(K, nr));
    kir_val kp = kir_loop_begin_gemm(K, kir_idx(K, (H + 1) / 2));
    kir_val a[2];
    for (int h = 0; h < 2; h++) a[h] = kir_cast(K, SMELT_F32, kir_load(K, s->rh16, kir_add(K, kir_mul(K, kp, two), kir_idx(K, h))));
    kir_val jj = kir_loop_begin(K, z, kir_idx(K, nr), one);
    kir_val gi = kir_add(K, col0, jj), prod = 0;
    for (int h = 0; h < 2; h++) {
        kir_val ri[3] = {pd, kp, kir_add(K, kir_mul(K, jj, two), kir_idx(K, h))};
        kir_val t = bin(K, KIR_MUL, a[h], kir_cast(K, SMELT_F32, lower_load(c, IN_R, ri)));
        prod = h ? bin(K, KIR_ADD, prod, t) : t;
    }
    rv_store(c, &s->gates, gi, bin(K, KIR_ADD, rv_load(c, &s->gates, gi), prod));
    kir_loop_end(K);
    kir_loop_end(K);
    kir_loop_end(K);
}

/* gates[n] += sum_k v[k] * RT[d][k][n] for n in [n0, n1): k unrolled by
 * RNN_KU so each gates element is loaded and stored once per RNN_KU rows of RT. */
static void gemv(lower_ctx *c, const rstate *s, const rvec *v, int64_t n0, int64_t n1)
{
    kir_kernel *K = c->k;
    const rnn_job *j = s->j;
    if (s->rh16 >= 0) {
        gemv_pairs(c, s, n0, n1);
        return;
    }
    if (ir_in(c->g, c->n, IN_R)->enc.kind == IR_ENC_PANELS) {
        gemv_panels(c, s, v, n0, n1);
        return;
    }
    int64_t H = j->p.hidden, main = H - H % RNN_KU;
    kir_val rbase = kir_mul(K, s->d, kir_idx(K, H * j->n));
    for (int pass = 0; pass < 2; pass++) {
        int64_t lo = pass ? main : 0, hi = pass ? H : main, step = pass ? 1 : RNN_KU;
        if (lo >= hi) continue;
        kir_val k = kir_loop_begin(K, kir_idx(K, lo), kir_idx(K, hi), kir_idx(K, step));
        kir_val hv[RNN_KU], row[RNN_KU], ku[RNN_KU];
        for (int u = 0; u < step; u++) {
            ku[u] = kir_add(K, k, kir_idx(K, u));
            row[u] = kir_add(K, rbase, kir_mul(K, ku[u], kir_idx(K, j->n)));
        }
        /* batched: every entry's rows of the product while these RNN_KU rows of R are in L1 */
        rstate e = entry_begin(c, s);
        rvec ve = j->batched ? rv_entry(K, *v, e.l, H) : *v;
        for (int u = 0; u < step; u++) hv[u] = rv_load(c, &ve, ku[u]);
        kir_val nn = kir_loop_begin_parallel(K, kir_idx(K, n0), kir_idx(K, n1));
        kir_val acc = rv_load(c, &e.gates, nn);
        for (int u = 0; u < step; u++)
            acc = bin(K, KIR_ADD, acc, bin(K, KIR_MUL, hv[u], packed_load(c, IN_R, j->rt, s->d, ku[u], nn, kir_add(K, row[u], nn))));
        rv_store(c, &e.gates, nn, acc);
        kir_loop_end(K);
        entry_end(c, s);
        kir_loop_end(K);
    }
}

/* DynamicQuantizeLSTM's recurrent part: h quantized to uint8 as onnxruntime's
 * DynamicQuantizeLinear does it (the range widened to hold 0; scale 1 for an all-zero h), then
 * gates = P's row + sum (h_q - h_zp) * (r - r_zp) * (h_scale * r_scale) + bias, in that order.
 * gates holds zeros on entry. Every thread computes the range itself (h is small, and it keeps
 * the code free of a workgroup reduction). */
static void quant_recurrent(lower_ctx *c, const rstate *s, kir_val prow)
{
    kir_kernel *K = c->k;
    const rnn_job *j = s->j;
    kir_val zero = kir_idx(K, 0), f0 = fc(K, SMELT_F32, 0), f255 = fc(K, SMELT_F32, 255);
    int lo = kir_var_new(K, SMELT_F32, f0), hi = kir_var_new(K, SMELT_F32, f0);
    kir_val k = kir_loop_begin(K, zero, kir_idx(K, j->p.hidden), kir_idx(K, 1));
    kir_val v = rv_load(c, &s->h, k);
    kir_var_set(K, lo, bin(K, KIR_MIN, kir_var_get(K, lo), v));
    kir_var_set(K, hi, bin(K, KIR_MAX, kir_var_get(K, hi), v));
    kir_loop_end(K);
    kir_val range = bin(K, KIR_SUB, kir_var_get(K, hi), kir_var_get(K, lo));
    kir_val scale = kir_select(K, bin(K, KIR_EQ, range, f0), fc(K, SMELT_F32, 1), bin(K, KIR_DIV, range, f255));
    kir_val zp = bin(K, KIR_SUB, f0, bin(K, KIR_DIV, kir_var_get(K, lo), scale));
    zp = kir_unary(K, KIR_ROUND, bin(K, KIR_MIN, bin(K, KIR_MAX, zp, f0), f255));
    kir_val jj = kir_loop_begin_parallel(K, zero, kir_idx(K, j->p.hidden));
    kir_val q = bin(K, KIR_ADD, kir_unary(K, KIR_ROUND, bin(K, KIR_DIV, rv_load(c, &s->h, jj), scale)), zp);
    q = bin(K, KIR_MIN, bin(K, KIR_MAX, q, f0), f255);
    if (s->rh16 >= 0) kir_store(K, s->rh16, jj, kir_cast(K, SMELT_I16, bin(K, KIR_SUB, q, zp)));
    else rv_store(c, &s->rh, jj, bin(K, KIR_SUB, q, zp));
    kir_loop_end(K);
    kir_barrier(K);
    gemv(c, s, &s->rh, 0, j->n);
    /* the same threads own the same gates as in gemv: no barrier needed before reading them */
    kir_val nn = kir_loop_begin_parallel(K, zero, kir_idx(K, j->n));
    kir_val m = bin(K, KIR_MUL, scale, qparam(c, IN_RS, s->d, nn));
    kir_val g = bin(K, KIR_ADD, lower_scratch_load(c, j->proj, kir_add(K, prow, nn)), bin(K, KIR_MUL, rv_load(c, &s->gates, nn), m));
    rv_store(c, &s->gates, nn, bin(K, KIR_ADD, g, proj_bias(c, j, s->d, nn)));
    kir_loop_end(K);
}

static kir_val load_in(lower_ctx *c, int in, kir_val a, kir_val b)
{
    kir_val idx[2] = {a, b};
    return lower_load(c, in, idx);
}

/* The state update of hidden unit jj at time tt: returns the new h (and
 * stores the new c for LSTM). gates holds the recurrent sums (plus P's row for
 * the gates that take it). */
static kir_val cell_update(lower_ctx *c, const rstate *s, kir_val prow, kir_val jj)
{
    kir_kernel *K = c->k;
    const rnn_job *j = s->j;
    const rnn_params *p = &j->p;
    smelt_dtype dt = p->dt;
    kir_val H = kir_idx(K, p->hidden), one = fc(K, dt, 1);
    if (p->cell == CELL_RNN) return act_dir(K, s, 0, rv_load(c, &s->gates, jj));
    if (p->cell == CELL_GRU) {
        kir_val hprev = rv_load(c, &s->h, jj);
        kir_val z = act_dir(K, s, 0, rv_load(c, &s->gates, jj));
        kir_val hpart = rv_load(c, &s->gates, kir_add(K, jj, kir_mul(K, H, kir_idx(K, 2))));
        if (p->lbr) hpart = bin(K, KIR_MUL, act_dir(K, s, 0, rv_load(c, &s->gates, kir_add(K, jj, H))), hpart);
        kir_val px = lower_scratch_load(c, j->proj, kir_add(K, prow, kir_add(K, jj, kir_idx(K, 2 * p->hidden))));
        kir_val hh = act_dir(K, s, 1, bin(K, KIR_ADD, px, hpart));
        return bin(K, KIR_ADD, bin(K, KIR_MUL, bin(K, KIR_SUB, one, z), hh), bin(K, KIR_MUL, z, hprev));
    }
    /* LSTM: gate blocks i, o, f, c; peepholes i, o, f. */
    bool peep = ir_in(c->g, c->n, IN_P) != NULL;
    kir_val cprev = rv_load(c, &s->cst, jj);
    kir_val gi = rv_load(c, &s->gates, jj), go = rv_load(c, &s->gates, kir_add(K, jj, H));
    kir_val gf = rv_load(c, &s->gates, kir_add(K, jj, kir_idx(K, 2 * p->hidden)));
    kir_val gc = rv_load(c, &s->gates, kir_add(K, jj, kir_idx(K, 3 * p->hidden)));
    if (peep) {
        gi = bin(K, KIR_ADD, gi, bin(K, KIR_MUL, load_in(c, IN_P, s->d, jj), cprev));
        gf = bin(K, KIR_ADD, gf, bin(K, KIR_MUL, load_in(c, IN_P, s->d, kir_add(K, jj, kir_idx(K, 2 * p->hidden))), cprev));
    }
    kir_val i = act_dir(K, s, 0, gi);
    kir_val f = p->input_forget ? bin(K, KIR_SUB, one, i) : act_dir(K, s, 0, gf);
    kir_val cc = act_dir(K, s, 1, gc);
    kir_val cnew = bin(K, KIR_ADD, bin(K, KIR_MUL, f, cprev), bin(K, KIR_MUL, i, cc));
    if (peep) go = bin(K, KIR_ADD, go, bin(K, KIR_MUL, load_in(c, IN_P, s->d, kir_add(K, jj, H)), cnew));
    kir_val o = act_dir(K, s, 0, go);
    rv_store(c, &s->cst, jj, s->valid ? kir_select(K, s->valid, cnew, cprev) : cnew);
    /* h(C) takes C unclipped: clip bounds the gates' inputs only. */
    const rnn_fn *h0 = &p->fn[0][2], *h1 = &p->fn[p->dirs - 1][2];
    kir_val hc = activate(K, dt, h0, cnew);
    if (memcmp(h0, h1, sizeof *h0)) hc = kir_select(K, bin(K, KIR_EQ, s->d, kir_idx(K, 0)), hc, activate(K, dt, h1, cnew));
    return bin(K, KIR_MUL, o, hc);
}

static kir_val init_state(lower_ctx *c, const rstate *s, int in, kir_val jj)
{
    if (!ir_in(c->g, c->n, in)) return fc(c->k, s->j->p.dt, 0);
    kir_val idx[3];
    state_index(s, jj, idx);
    return lower_load(c, in, idx);
}

static rvec rv_new(kir_kernel *K, const rnn_job *j, int64_t numel, int64_t *offset, kir_val wg, int64_t per_wg)
{
    rvec v = {-1, j->state, 0};
    if (j->state < 0) {
        v.smem = kir_smem_add(K, j->p.dt, numel);
    } else {
        v.base = kir_add(K, kir_mul(K, wg, kir_idx(K, per_wg)), kir_idx(K, *offset));
        *offset += numel;
    }
    return v;
}

/* Where P's row for entry e at time tt starts. */
static kir_val proj_row(kir_kernel *K, const rstate *e, kir_val tt)
{
    const rnn_job *j = e->j;
    kir_val xrow = j->p.layout ? kir_add(K, kir_mul(K, e->b, kir_idx(K, j->p.seq)), tt)
                               : kir_add(K, kir_mul(K, tt, kir_idx(K, j->p.batch)), e->b);
    return kir_mul(K, kir_add(K, kir_mul(K, e->d, kir_idx(K, j->rows_pad)), xrow), kir_idx(K, j->n));
}

/* Elements of state per batch entry: h, c, gates, and r (.) h. */
static int64_t state_numel(const rnn_job *j) { return 3 * j->p.hidden + j->n; }

static smelt_status lower_recurrence(lower_ctx *c, rnn_job *j)
{
    const rnn_params *p = &j->p;
    int64_t H = p->hidden, N = j->n, S = p->seq, E = j->group, groups = (p->batch + E - 1) / E;
    kir_kernel *K = lower_kernel_begin(c, p->dirs * groups);
    if (!K) return ir_node_fail(c->n, SMELT_ERR_NOMEM, "out of memory");
    if (c->target->wg_size > 1) K->wg_size = c->target->wg_size;
    kir_val wg = kir_wg(K), zero = kir_idx(K, 0), one = kir_idx(K, 1);
    rstate s = {.j = j};
    if (j->batched) { /* each entry loop (entry_begin) sets b and l */
        s.d = p->dirs == 1 ? zero : groups == 1 ? wg : bin(K, KIR_DIV, wg, kir_idx(K, groups));
        kir_val g = groups == 1 ? zero : p->dirs == 1 ? wg : bin(K, KIR_MOD, wg, kir_idx(K, groups));
        s.b = kir_mul(K, g, kir_idx(K, E));
        s.cnt = p->batch % E == 0 ? kir_idx(K, E) : bin(K, KIR_MIN, kir_idx(K, E), bin(K, KIR_SUB, kir_idx(K, p->batch), s.b));
    } else {
        s.d = p->dirs == 1 ? zero : bin(K, KIR_DIV, wg, kir_idx(K, p->batch));
        s.b = p->dirs == 1 ? wg : bin(K, KIR_MOD, wg, kir_idx(K, p->batch));
    }
    int64_t off = 0, per = state_numel(j) * E;
    s.h = rv_new(K, j, H * E, &off, wg, per);
    s.cst = rv_new(K, j, H * E, &off, wg, per);
    s.gates = rv_new(K, j, N * E, &off, wg, per);
    s.rh = rv_new(K, j, H * E, &off, wg, per);
    s.rh16 = -1;
    const ir_tensor *rw = ir_in(c->g, c->n, IN_R);
    if (p->quant && rw->enc.kind == IR_ENC_PANELS && rw->dtype == SMELT_I16) {
        s.rh16 = kir_smem_add(K, SMELT_I16, (H + 1) / 2 * 2);
        if (H % 2) kir_store(K, s.rh16, kir_idx(K, H), kir_const_i(K, SMELT_I16, 0)); /* the last pair's partner */
    }
    if (p->dirs == 2) s.dirrev = bin(K, KIR_EQ, s.d, one);
    else s.dirrev = kir_const_i(K, SMELT_BOOL, p->reverse[0]);
    s.len = kir_idx(K, S);
    if (ir_in(c->g, c->n, IN_LENS)) {
        kir_val l = kir_cast(K, SMELT_I64, lower_load(c, IN_LENS, &s.b));
        s.len = bin(K, KIR_MIN, bin(K, KIR_MAX, l, zero), kir_idx(K, S));
    }

    rstate e = entry_begin(c, &s);
    kir_val jj = kir_loop_begin_parallel(K, zero, kir_idx(K, H));
    rv_store(c, &e.h, jj, init_state(c, &e, IN_H0, jj));
    if (p->cell == CELL_LSTM) rv_store(c, &e.cst, jj, init_state(c, &e, IN_C0, jj));
    kir_loop_end(K);
    entry_end(c, &s);
    kir_barrier(K);

    /* Time runs over the entry's own length: no step sits under a condition,
     * so every barrier is in straight-line code of the time loop. */
    /* On the CPU time runs over the entry's own length. With threads per
     * workgroup it runs over the whole sequence, steps past the length
     * computing but not committing, so no barrier sits under a data-dependent
     * trip count or condition (under either, PoCL's results for GRU's four
     * barriers a step went wrong from the second step on; LSTM's two did not). */
    bool masked = K->wg_size > 1 && ir_in(c->g, c->n, IN_LENS);
    kir_val t = kir_loop_begin(K, zero, masked ? kir_idx(K, S) : s.len, one);
    kir_val tt = t;
    if (p->dirs == 2 || p->reverse[0]) {
        kir_val back = bin(K, KIR_SUB, bin(K, KIR_SUB, s.len, one), t);
        tt = p->dirs == 2 ? kir_select(K, s.dirrev, back, t) : back;
    }
    if (masked) {
        s.valid = bin(K, KIR_LT, t, s.len);
        tt = bin(K, KIR_MAX, tt, zero);
    }
    /* gates = P's row (GRU's hidden gate: its recurrent bias only), then + H.R^T */
    int64_t n_first = p->cell == CELL_GRU ? 2 * H : N;
    e = entry_begin(c, &s);
    kir_val prow = proj_row(K, &e, tt);
    kir_val nn = kir_loop_begin_parallel(K, zero, kir_idx(K, N));
    kir_val px = p->quant ? fc(K, p->dt, 0) : lower_scratch_load(c, j->proj, kir_add(K, prow, nn));
    if (p->cell == CELL_GRU) {
        kir_val rb = fc(K, p->dt, 0);
        if (ir_in(c->g, c->n, IN_B)) rb = load_in(c, IN_B, s.d, kir_add(K, nn, kir_idx(K, N)));
        px = kir_select(K, bin(K, KIR_LT, nn, kir_idx(K, n_first)), px, rb);
    }
    rv_store(c, &e.gates, nn, px);
    kir_loop_end(K);
    entry_end(c, &s);
    if (p->cell == CELL_GRU && !p->lbr) {
        gemv(c, &s, &s.h, 0, n_first);
        kir_barrier(K);
        e = entry_begin(c, &s);
        jj = kir_loop_begin_parallel(K, zero, kir_idx(K, H));
        kir_val r = act_dir(K, &e, 0, rv_load(c, &e.gates, kir_add(K, jj, kir_idx(K, H))));
        rv_store(c, &e.rh, jj, bin(K, KIR_MUL, r, rv_load(c, &e.h, jj)));
        kir_loop_end(K);
        entry_end(c, &s);
        kir_barrier(K);
        gemv(c, &s, &s.rh, n_first, N);
    } else if (p->quant) {
        quant_recurrent(c, &s, proj_row(K, &s, tt));
    } else {
        gemv(c, &s, &s.h, 0, N);
    }
    kir_barrier(K);
    e = entry_begin(c, &s);
    prow = proj_row(K, &e, tt);
    jj = kir_loop_begin_parallel(K, zero, kir_idx(K, H));
    kir_val h = cell_update(c, &e, prow, jj);
    rv_store(c, &e.h, jj, masked ? kir_select(K, s.valid, h, rv_load(c, &e.h, jj)) : h);
    if (has_out(c, OUT_Y)) {
        kir_val yi[4];
        y_index(&e, tt, jj, yi);
        if (masked) kir_if_begin(K, s.valid);
        lower_store(c, OUT_Y, yi, h);
        if (masked) kir_if_end(K);
    }
    kir_loop_end(K);
    entry_end(c, &s);
    kir_barrier(K);
    kir_loop_end(K);

    if (has_out(c, OUT_Y) && ir_in(c->g, c->n, IN_LENS)) {
        t = kir_loop_begin(K, s.len, kir_idx(K, S), one);
        jj = kir_loop_begin_parallel(K, zero, kir_idx(K, H));
        kir_val yi[4];
        y_index(&s, t, jj, yi);
        lower_store(c, OUT_Y, yi, fc(K, p->dt, 0));
        kir_loop_end(K);
        kir_loop_end(K);
    }
    if (has_out(c, OUT_YH) || (p->cell == CELL_LSTM && has_out(c, OUT_YC))) {
        e = entry_begin(c, &s);
        jj = kir_loop_begin_parallel(K, zero, kir_idx(K, H));
        kir_val si[3];
        state_index(&e, jj, si);
        kir_val hl = rv_load(c, &e.h, jj), cl = p->cell == CELL_LSTM ? rv_load(c, &e.cst, jj) : 0;
        if (ir_in(c->g, c->n, IN_LENS)) { /* as onnxruntime: an empty sequence ends in zero states */
            kir_val empty = bin(K, KIR_EQ, s.len, zero), z = fc(K, p->dt, 0);
            hl = kir_select(K, empty, z, hl);
            if (cl) cl = kir_select(K, empty, z, cl);
        }
        if (has_out(c, OUT_YH)) lower_store(c, OUT_YH, si, hl);
        if (cl && has_out(c, OUT_YC)) lower_store(c, OUT_YC, si, cl);
        kir_loop_end(K);
        entry_end(c, &s);
    }
    return SMELT_OK;
}

/* a * b * c, false on int64 overflow. */
static bool mul3(int64_t a, int64_t b, int64_t c, int64_t *out)
{
    return !__builtin_mul_overflow(a, b, out) && !__builtin_mul_overflow(*out, c, out);
}

smelt_status lower_Recurrent(lower_ctx *c)
{
    rnn_job j = {.state = -1, .wt = -1, .rt = -1, .xrows = -1};
    TRY(rnn_parse(c->g, c->n, &j.p));
    const rnn_params *p = &j.p;
    int64_t D = p->dirs, H = p->hidden, I = p->input, wt_n, rt_n, proj_n, state_n;
    /* The scratch sizes; Y's size is checked only where Y is an output. */
    bool ok = mul3(p->gates, H, 1, &j.n) && mul3(p->seq, p->batch, 1, &j.rows) && j.rows <= INT64_MAX - RNN_MR;
    j.rows_pad = ok ? (j.rows + RNN_MR - 1) / RNN_MR * RNN_MR : 0;
    ok = ok && mul3(D, I, j.n, &wt_n) && mul3(D, H, j.n, &rt_n) && mul3(D, j.rows_pad > 0 ? j.rows_pad : 1, j.n, &proj_n) &&
         mul3(D, p->batch, 1, &state_n) && mul3(state_n, 4, H + j.n, &state_n) && state_n <= INT64_MAX / 8;
    if (!ok) return ir_node_fail(c->n, SMELT_ERR_SHAPE, "the sizes (seq, batch, input, hidden) overflow int64");
    if (p->batch == 0 || H == 0) return SMELT_OK;
    /* weights stored packed are read as they are (DynamicQuantizeLSTM's too, where
     * graph/fold_gemm.c subtracted the zero points); others are copied, less their zero points */
    bool copy = !in_place(c, p, IN_W), copy_r = !in_place(c, p, IN_R);
    j.proj = lower_scratch(c, p->dt, proj_n);
    if (j.proj < 0) return no_mem(c);
    bool gemm = proj_gemm_ok(c, &j);
    if (gemm) TRY(proj_gemm(c, &j));
    if (j.rows > 0 && I > 0 && copy && !gemm) {
        j.wt = lower_scratch(c, p->dt, wt_n);
        if (j.wt < 0) return no_mem(c);
        pack_job pw = {IN_W, j.wt, j.n, I, IN_WZ, p->quant};
        ir_shape ws = {.rank = 3, .dim = {D, I, j.n}};
        lower_parallel_for(c, &ws, 1, pack_body, &pw);
        if (!c->k) return no_mem(c);
    }
    if (copy_r) {
        j.rt = lower_scratch(c, p->dt, rt_n);
        if (j.rt < 0) return no_mem(c);
        pack_job pr = {IN_R, j.rt, j.n, H, IN_RZ, p->quant};
        ir_shape rs = {.rank = 3, .dim = {D, H, j.n}};
        lower_parallel_for(c, &rs, 1, pack_body, &pr);
        if (!c->k) return no_mem(c);
    }
    if (j.rows > 0 && !gemm) {
        int64_t per_unit = RNN_MR * (2 * I + 1);
        if (c->target->wg_size > 1) {
            ir_shape cols = {.rank = 3, .dim = {D, j.rows_pad / RNN_MR, j.n}};
            lower_parallel_for(c, &cols, per_unit, proj_col_body, &j);
        } else {
            ir_shape units = {.rank = 3, .dim = {D, j.rows_pad / RNN_MR, 1}};
            lower_parallel_for(c, &units, per_unit * j.n, proj_body, &j);
        }
        if (!c->k) return no_mem(c);
    }
    /* CPU, every entry over the whole sequence: a workgroup per direction and
     * group of entries looping over them, so each step reads R from L2 once per
     * group, not once per entry (anr_encoder, batch 4, bidirectional: 1.11 ->
     * 0.93 ms at 1 thread). Kernels do not know the thread count, so one
     * direction is 2 groups. Forward GRU/LSTM b4-b8, min of 300 runs x 5 rounds,
     * one group / 2 groups / per entry: GRU b4 h256 1.29/1.46/2.05 ms at 1 thread,
     * 1.25/0.85/1.11 at 2; LSTM b8 h128 0.41/0.42/0.58, 0.41/0.24/0.33 (batch 2:
     * 2 groups = per entry, 35% behind one group at 1 thread, 29% ahead at 2). */
    j.group = 1;
    if (c->target->wg_size == 1 && p->batch > 1 && !p->quant && !ir_in(c->g, c->n, IN_LENS))
        j.group = D == 2 ? p->batch : (p->batch + 1) / 2;
    j.batched = j.group > 1;
    int64_t groups = (p->batch + j.group - 1) / j.group;
    int64_t bytes = state_numel(&j) * j.group * (int64_t)smelt_dtype_size(p->dt);
    int64_t limit = c->target->wg_size > 1 ? c->target->smem_limit : RNN_CPU_STACK_BYTES;
    if (bytes > limit) {
        j.state = lower_scratch(c, p->dt, D * groups * j.group * state_numel(&j));
        if (j.state < 0) return no_mem(c);
    }
    TRY(lower_recurrence(c, &j));
    return c->k ? SMELT_OK : no_mem(c);
}
