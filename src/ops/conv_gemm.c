/*
 * conv_gemm.c — 2-D convolution as a GEMM on the packed microkernel
 * (ops/gemm_packed.h): per image n,
 *     Y^T[i][m] = sum over k of A[i][k] * W^T[k][m],   i = oh*OW + ow,
 *     A[i][k] = X[n][c][oh*sh - ph + kh*dh][ow*sw - pw + kw*dw],  k = (c*KH + kh)*KW + kw
 * (zero where the row or column falls in the padding). The weight [M, C, KH,
 * KW] is packed at compile time as B = W^T in panels (graph/pack_weights.c);
 * the store writes Y in NCHW, bias first, through the region's epilogue. This
 * orientation keeps the constant on the packed side and puts the long
 * dimension, the output positions, on M, where the units split over the threads.
 *
 * A, the im2col matrix, is read in one of three ways:
 *  - flat (1x1, stride 1, no pads, a plain X): A[i][k] is X[n][k][i], read
 *    in place by the microkernel (gemm_packed's read_a, conv_read_a), no pack;
 *  - im2col (every other shape whose image fits GRAPH_IM2COL_MAX_BYTES): a
 *    kernel of its own writes A^T for as many images as fit into scratch
 *    (conv_im2col_body: runs along the output rows, copies and zero fills, X's
 *    fused producers computed once per element), then the GEMM's microkernel
 *    reads it in place (gemm_packed's read_a, conv_read_im2col), shared by all units and
 *    column blocks; a batch larger than the scratch holds is lowered a chunk
 *    of images at a time (a kernel pair each);
 *  - otherwise (a 1x1 conv whose image is too large for the scratch) the per-KC
 *    slice A pack of conv_pack_a, a table of window corners and a bound test
 *    per element, repeated per column block.
 * Before the im2col (per-slice pack for all), ResNet-18's 3x3 s1 512 -> 512
 * conv at 7x7 ran ~38 GFLOP/s: its four 128-column units each packed the same
 * 49 x 4608 slices with a division, table load and select per element.
 *
 * Which convolutions come here is decided where their weights are packed
 * (graph/pack_weights.c, conv_wants_gemm, with the measurements): 1x1 convs
 * with C >= 64 input and M >= 32 output channels, larger kernels with
 * C*KH*KW >= 27 and M >= 32 whose im2col fits; group 1 only (grouped and
 * depthwise stay direct); 3x3 stride 1 convs with tiles enough go to
 * Winograd's pass first.
 *
 * The other orientation (conv_cols_lower), where OH*OW is a multiple of the
 * panel width, or an expanding 1x1's is nearly one (graph_conv_on_cols, with
 * its measurements; X then through the im2col, whose rows are padded): per image
 *     Y[m][i] = sum over k of W[m][k] * A^T[k][i],
 * the weight plain (not packed) read in place as the microkernel's A (MR
 * channels broadcast per k), and X itself (flat) or the im2col as its B, read
 * in place along the positions (gemm_packed's read_b). The block's rows are
 * then channels and its columns positions, so the store copies unit-stride
 * runs of it into Y's rows; the panel form's block is transposed on the way
 * out (a read ld apart per element), which cost about half of MobileNetV2's
 * 3x3 s2 stem and 5-30% of its 1x1 convs at 28x28 and above.
 *
 * An integer convolution (IR_ATTR_INT_AMAX) whose weight graph/pack_weights.c
 * made int16 k-pair rows (IR_ENC_KPAIRS) takes this orientation on k-pairs:
 * the im2col written as int16 pairs (conv_pairs_body), K counted in pairs,
 * each gemm step two products (gemm_packed.h, read_b_pair), which the C target
 * runs with vpmaddwd into int32 (target/emit_c_gemm_pairs.c). On
 * ddddocr_ocr_quant (AVX-512 host, 1 thread, min of 5 loaded rounds of 20
 * runs, im2col and GEMM kernels together): 3x3 48 -> 192 at 16x40 1.30-1.61
 * -> 0.91 ms (41 -> 59 GMAC/s), 64 -> 256 at 8x20 0.48 -> 0.32 (49 -> 74), 3x3 s2
 * 48 -> 192 0.29 -> 0.19 (45 -> 68), 1x1 192 -> 48 0.123 -> 0.103 (48 -> 57).
 * Where the target has 8-bit dot products (AVX512-VNNI) and the weight is
 * int8 but for a few elements (IR_ENC_KQUADS, graph/pack_weights.c), k-quads
 * instead: the im2col writes X + s, the 8-bit input itself, as uint8 quads
 * (the padding s), each gemm step four products (vpdpbusd), and the store
 * adds the residuals of the weight's elements outside int8 to their
 * channels' accumulators and subtracts s * rowsum per channel (ir.h,
 * IR_ATTR_INT_AMAX, conv_quad_residuals).
 *
 * requires: a Conv node whose weight has the IR_ENC_PANELS encoding (or, for
 *           conv_cols_lower, a plain constant weight and conv_cols_wanted, or
 *           an IR_ENC_KPAIRS or IR_ENC_KQUADS one); the C target.
 * guarantees: the Conv computed, bias included: one kernel (flat, per-slice
 *             pack) or an im2col kernel and a GEMM kernel per batch chunk.
 */
#include <stdlib.h>
#include <stdlib.h>

#include "graph/passes.h"
#include "ops/conv.h"
#include "ops/gemm_packed.h"

/* Columns (output channels) per unit at least, when A is the per-slice pack
 * of conv_pack_a (neither flat nor im2col): a 3x3 s2 conv of 128 -> 256 channels at 10x10 outputs split into 64
 * columns per unit for the threads packed A four times and cost more than
 * the direct form (nudenet_320n). */
#define CONV_GEMM_NC_MIN 128

/* Units of a flat conv with the positions on N and K <= 32 (one short K
 * slice: the unit's accumulator traffic, zeroing, the microkernel's load and
 * store, the copy out, costs as much as its FMAs): 4 row blocks by 128
 * columns, so the block (24 x 144 floats, 14 KiB) stays in L1, not the
 * default's 96 x 528 (203 KiB, L2). Measured as user CPU time per run (the
 * machine was loaded; min of 3-4 rounds of 1000 runs, conv + relu alone, 1
 * thread): 16 -> 96 at 112x112 0.98 -> 0.82 ms (0.85 -> 0.78 with 64 columns,
 * 0.84 -> 0.82 with 8 row blocks), 24 -> 144 at 56x56 0.38 -> 0.35, 32 -> 192
 * at 28x28 0.15 -> 0.14; at larger K a tie or worse (144 -> 24 at 56x56 0.29
 * both, 256 -> 64 1.54 -> 1.66, the 3x3 s2 64 -> 128 im2col 1.52 -> 1.61). */
#define CONV_COLS_SMALL_K 32

/* K slice of the positions-on-M forms that read A in place (flat X, the
 * im2col): A[i][k] is at i + k*P, so a microkernel call over a slice touches
 * a cache line of A per k beside its KC x 16 floats of B, 32 KiB at KC 256,
 * all of Zen 3's L1. At 128 both fit: conv + Clip alone, 1 thread, min of
 * 300-500 runs (loaded machine, two rounds): 960 -> 320 at 7x7 0.418 -> 0.332
 * ms (onnxruntime 0.342), 320 -> 1280 at 7x7 0.588 -> 0.503, 960 -> 160 at
 * 7x7 0.206 -> 0.167, 512 -> 512 at 7x7 0.376 -> 0.302-0.321, 3x3 256 -> 256
 * at 14x14 (im2col) 1.58-1.68 -> 1.29-1.47; 64 the same as 128, 576 -> 96
 * at 14x14 and 3x3 512 -> 512 at 7x7 a tie. The positions-on-N form, whose B
 * (X or the im2col) is read down k the same way, gained nothing from it: 1x1
 * 256 -> 64 at 56x56 1.12 -> 1.14-1.15 ms, 512 -> 128 at 28x28 1.08 -> 1.11,
 * 256 -> 256 at 16x16 0.357 -> 0.360-0.372, 3x3 s2 64 -> 128 at 56 1.30 ->
 * 1.34-1.65 (min of 200 runs, two rounds), so it keeps the target's KC. */
#define CONV_READ_A_KC 128
#define CONV_COLS_SMALL_MB 4
#define CONV_COLS_SMALL_NC 128

typedef struct conv_gemm_job {
    const window_geom *w;
    int64_t c, taps;   /* input channels; KH * KW */
    bool flat;         /* 1x1, stride 1, no pads, plain X: row i is X's element i of the plane */
    bool bias;
    int a;             /* im2col: scratch holding A^T (conv_im2col_body), or -1 */
    int64_t k, ld;     /* its K (C * KH * KW) and row length */
    int64_t n0;        /* the first image of the batch chunk being lowered (im2col) */
    bool cols;         /* the positions on N, the channels on M (conv_cols_lower) */
    int kg;            /* k-groups: 2, int16 weight rows (ir.h IR_ENC_KPAIRS) and an int16 im2col in
                        * pairs; 4, int8 rows (IR_ENC_KQUADS) and a uint8 im2col of X + s in quads;
                        * 0: neither */
    int aq;            /* with kg: scratch holding the im2col in k-groups (conv_groups_body), not a */
    int64_t kreal;     /* C * KH * KW (k, with kg, is that rounded up to a multiple of kg) */
} conv_gemm_job;

/* The A pack. Flat: k outer, the unit's rows inner, read straight along X's
 * plane. Otherwise, first each row's window corner (oh*sh - ph, ow*sw - pw)
 * into a table in workgroup memory (a division per row, not per element),
 * then per k (its channel and tap split once) every row reads its corner
 * plus the tap's offset, zero where that falls in the padding. */
static void conv_pack_a(lower_ctx *c, const gemm_packed *g, const kir_val *bidx, const gemm_a_slice *s)
{
    const conv_gemm_job *j = g->user;
    const window_geom *w = j->w;
    kir_kernel *K = c->k;
    kir_val z = kir_idx(K, 0), one = kir_idx(K, 1);
    int64_t cap = g->mb * s->mr;
    bool pad[2] = {w->pad_lo[0] || w->pad_hi[0], w->pad_lo[1] || w->pad_hi[1]};
    int tab = -1;
    if (!j->flat) {
        tab = kir_smem_add(K, SMELT_I64, 2 * cap);
        kir_val t = kir_loop_begin(K, z, kir_mul(K, s->nblk, kir_idx(K, s->mr)), one);
        kir_val i = gemm_packed_clamp_row(K, g, kir_add(K, s->i0, t));
        kir_val oh = kir_binary(K, KIR_DIV, i, kir_idx(K, w->out[1]));
        kir_val ow = kir_binary(K, KIR_SUB, i, kir_mul(K, oh, kir_idx(K, w->out[1])));
        const kir_val o[2] = {oh, ow};
        for (int d = 0; d < 2; d++)
            kir_store(K, tab, kir_add(K, t, kir_idx(K, d * cap)),
                      kir_binary(K, KIR_SUB, kir_mul(K, o[d], kir_idx(K, w->stride[d])), kir_idx(K, w->pad_lo[d])));
        kir_loop_end(K);
    }
    kir_val kk = kir_loop_begin(K, z, s->kc, one);
    kir_val k = kir_add(K, s->kb, kk);
    kir_val ch = j->taps > 1 ? kir_binary(K, KIR_DIV, k, kir_idx(K, j->taps)) : k;
    kir_val tap = kir_binary(K, KIR_SUB, k, kir_mul(K, ch, kir_idx(K, j->taps)));
    kir_val kh = kir_binary(K, KIR_DIV, tap, kir_idx(K, w->kernel[1]));
    kir_val kw = kir_binary(K, KIR_SUB, tap, kir_mul(K, kh, kir_idx(K, w->kernel[1])));
    const kir_val off[2] = {kir_mul(K, kh, kir_idx(K, w->dilation[0])), kir_mul(K, kw, kir_idx(K, w->dilation[1]))};
    kir_val q = kir_loop_begin(K, z, s->nblk, one);
    kir_val r = kir_loop_begin(K, z, kir_idx(K, s->mr), one);
    kir_val t = kir_add(K, kir_mul(K, q, kir_idx(K, s->mr)), r);
    kir_val v;
    if (j->flat) {
        kir_val xi[4] = {bidx[0], ch, z, gemm_packed_clamp_row(K, g, kir_add(K, s->i0, t))};
        v = lower_load(c, 0, xi);
    } else {
        kir_val xi[4] = {bidx[0], ch}, ok = 0;
        for (int d = 0; d < 2; d++) {
            kir_val pos = kir_add(K, kir_load(K, tab, kir_add(K, t, kir_idx(K, d * cap))), off[d]);
            xi[2 + d] = pos;
            if (!pad[d]) continue;
            kir_val in = kir_binary(K, KIR_AND, kir_binary(K, KIR_GE, pos, z), kir_binary(K, KIR_LT, pos, kir_idx(K, w->in[d])));
            ok = ok ? kir_binary(K, KIR_AND, ok, in) : in;
            xi[2 + d] = lower_clamp(K, pos, w->in[d]);
        }
        v = lower_load(c, 0, xi);
        if (ok) v = kir_select(K, ok, v, kir_const_f(K, g->dt, 0));
    }
    kir_val at = gemm_packed_a_at(K, s->kcap, s->mr, q, r, kk);
    kir_store(K, s->ap, at, v);
    kir_loop_end(K);
    kir_loop_end(K);
    kir_loop_end(K);
}

/* Index idx[from..4) of a 4-D tensor of shape s addressing element `lin` of
 * its trailing dims: lin in the innermost dim that is not 1, zeros before it
 * (lower_linear's address is linear in the index but skips dims of size 1). */
static void trailing_index(kir_kernel *K, const ir_shape *s, int from, kir_val lin, kir_val *idx)
{
    int d = 3;
    while (d > from && s->dim[d] == 1) d--;
    for (int e = from; e < 4; e++) idx[e] = e == d ? lin : kir_idx(K, 0);
}

/* A flat conv's A[i][k] in place: X[n][k][0][i], i + k*OH*OW past the image's start. */
static kir_val conv_read_a(lower_ctx *c, const gemm_packed *g, const kir_val *bidx, kir_val i, kir_val k)
{
    (void)g;
    kir_val xi[4] = {bidx[0], k};
    trailing_index(c->k, &ir_in(c->g, c->n, 0)->shape, 2, i, xi);
    return lower_load(c, 0, xi);
}

/* The im2col's A[i][k] in place: A^T[n][k][i] in scratch j->a, n the image
 * within the chunk. */
static kir_val conv_read_im2col(lower_ctx *c, const gemm_packed *g, const kir_val *bidx, kir_val i, kir_val k)
{
    const conv_gemm_job *j = g->user;
    kir_kernel *K = c->k;
    kir_val row = kir_add(K, kir_mul(K, bidx[0], kir_idx(K, j->k)), k);
    return lower_scratch_load(c, j->a, kir_add(K, kir_mul(K, row, kir_idx(K, j->ld)), i));
}

/* Positions on N (conv_cols_lower): A is the weight, plain [M][C][KH][KW],
 * A[m][k] at m*K + k (the last index carries k whole: lower_load's address is
 * linear in the index), and B is X in place (flat) or the im2col. */
static kir_val cols_read_w(lower_ctx *c, const gemm_packed *g, const kir_val *bidx, kir_val i, kir_val k)
{
    const conv_gemm_job *j = g->user;
    (void)bidx;
    if (j->kg) { /* int16 or int8 rows [M][K rounded up to a multiple of kg] */
        kir_val wi[2] = {i, k};
        return kir_cast(c->k, SMELT_F32, lower_load(c, 1, wi));
    }
    kir_val wi[4] = {i};
    trailing_index(c->k, &ir_in(c->g, c->n, 1)->shape, 1, k, wi);
    return lower_load(c, 1, wi);
}

static kir_val cols_read_x(lower_ctx *c, const gemm_packed *g, const kir_val *bidx, kir_val k, kir_val p)
{
    return conv_read_a(c, g, bidx, p, k);
}

static kir_val cols_read_im2col(lower_ctx *c, const gemm_packed *g, const kir_val *bidx, kir_val k, kir_val p)
{
    return conv_read_im2col(c, g, bidx, p, k);
}

/* The im2col in k-groups (int16 pairs, uint8 quads): element h of group kp
 * at position p of image n at ((n*KG + kp)*ld + p)*kg + h (conv_groups_body). */
static kir_val cols_read_im2col_group(lower_ctx *c, const gemm_packed *g, const kir_val *bidx, kir_val kp, int h, kir_val p)
{
    const conv_gemm_job *j = g->user;
    kir_kernel *K = c->k;
    kir_val row = kir_add(K, kir_mul(K, bidx[0], kir_idx(K, g->k)), kp);
    kir_val at = kir_add(K, kir_mul(K, kir_add(K, kir_mul(K, row, kir_idx(K, j->ld)), p), kir_idx(K, j->kg)), kir_idx(K, h));
    return kir_cast(K, SMELT_F32, lower_scratch_load(c, j->aq, at));
}

/* The shift s of an integer conv (ir.h, IR_ATTR_INT_AMAX): its fourth input's one element. */
static kir_val conv_shift(lower_ctx *c)
{
    kir_val zi[IR_MAX_RANK];
    for (int d = 0; d < IR_MAX_RANK; d++) zi[d] = kir_idx(c->k, 0);
    return lower_load(c, 3, zi);
}

/* The first i in [0, n) with i*s + a0 >= 0, and the first with i*s + a0 >= lim
 * (clamped to at least the former): the range where a window row or column,
 * offset a0 and stepping s, lies inside [0, lim). A truncating division rounds
 * a negative quotient up, which the clamp to 0 then makes right. */
static void inside(kir_kernel *K, kir_val a0, int64_t s, int64_t lim, int64_t n, kir_val *lo, kir_val *hi)
{
    kir_val z = kir_idx(K, 0), nn = kir_idx(K, n), s1 = kir_idx(K, s - 1), sv = kir_idx(K, s);
    kir_val l = kir_binary(K, KIR_DIV, kir_add(K, kir_binary(K, KIR_SUB, z, a0), s1), sv);
    *lo = kir_binary(K, KIR_MIN, kir_binary(K, KIR_MAX, l, z), nn);
    kir_val h = kir_binary(K, KIR_DIV, kir_add(K, kir_binary(K, KIR_SUB, kir_idx(K, lim), a0), s1), sv);
    *hi = kir_binary(K, KIR_MIN, kir_binary(K, KIR_MAX, h, *lo), nn);
}

static void zero_fill(lower_ctx *c, int a, kir_val base, kir_val from, kir_val to)
{
    kir_val t = kir_loop_begin_parallel(c->k, from, to);
    lower_scratch_store(c, a, kir_add(c->k, base, t), kir_const_f(c->k, SMELT_F32, 0));
    kir_loop_end(c->k);
}

/* The im2col matrix, transposed, into scratch: A^T[n][k][i] at (n*K + k)*ld + i
 * (ld: M rounded up to whole cache lines, an odd number of them, so the
 * microkernel's reads down k, ld apart, spread over all of L1's sets). One
 * kernel over (n, k): the tap's window column ow*sw - pw + kw*dw lies inside X
 * for ow in [lo, hi) and its row for oh in [oh_lo, oh_hi), both computed once
 * per k, so each output row's run is a zero fill, a copy (unit stride in both
 * when sw = 1: the compiler vectorizes it) and a zero fill, and the rows wholly
 * in the padding one zero fill, with no test per element. X's fused producers
 * are computed here, once per element of the im2col. */
static void conv_im2col_body(lower_ctx *c, const kir_val *idx, void *user)
{
    const conv_gemm_job *j = user;
    const window_geom *w = j->w;
    kir_kernel *K = c->k;
    int64_t oh_n = w->out[0], ow_n = w->out[1];
    kir_val z = kir_idx(K, 0), one = kir_idx(K, 1), own = kir_idx(K, ow_n);
    kir_val n = idx[0], k = idx[1];
    kir_val ch = j->taps > 1 ? kir_binary(K, KIR_DIV, k, kir_idx(K, j->taps)) : k;
    kir_val tap = kir_binary(K, KIR_SUB, k, kir_mul(K, ch, kir_idx(K, j->taps)));
    kir_val kh = kir_binary(K, KIR_DIV, tap, kir_idx(K, w->kernel[1]));
    kir_val kw = kir_binary(K, KIR_SUB, tap, kir_mul(K, kh, kir_idx(K, w->kernel[1])));
    /* ih = oh*sh + r0, iw = ow*sw + a0 */
    kir_val r0 = kir_binary(K, KIR_SUB, kir_mul(K, kh, kir_idx(K, w->dilation[0])), kir_idx(K, w->pad_lo[0]));
    kir_val a0 = kir_binary(K, KIR_SUB, kir_mul(K, kw, kir_idx(K, w->dilation[1])), kir_idx(K, w->pad_lo[1]));
    kir_val oh_lo, oh_hi, lo, hi;
    inside(K, r0, w->stride[0], w->in[0], oh_n, &oh_lo, &oh_hi);
    inside(K, a0, w->stride[1], w->in[1], ow_n, &lo, &hi);
    kir_val base = kir_mul(K, kir_add(K, kir_mul(K, n, kir_idx(K, j->k)), k), kir_idx(K, j->ld));
    zero_fill(c, j->a, base, z, kir_mul(K, oh_lo, own));
    kir_val oh = kir_loop_begin(K, oh_lo, oh_hi, one);
    kir_val row = kir_add(K, base, kir_mul(K, oh, own));
    zero_fill(c, j->a, row, z, lo);
    kir_val ow = kir_loop_begin_parallel(K, lo, hi);
    kir_val xi[4] = {kir_add(K, n, kir_idx(K, j->n0)), ch, kir_add(K, kir_mul(K, oh, kir_idx(K, w->stride[0])), r0),
                     kir_add(K, kir_mul(K, ow, kir_idx(K, w->stride[1])), a0)};
    lower_scratch_store(c, j->a, kir_add(K, row, ow), lower_load(c, 0, xi));
    kir_loop_end(K);
    zero_fill(c, j->a, row, hi, own);
    kir_loop_end(K);
    zero_fill(c, j->a, base, kir_mul(K, oh_hi, own), kir_idx(K, oh_n * ow_n));
}

/* One tap of a k-group (conv_groups_body): row k of the im2col reads X's
 * channel ch at (oh*sh + r0, ow*sw + a0), inside X for oh in [oh_lo, oh_hi)
 * and ow in [lo, hi) (none of it where k is past K: the last group's tail). */
typedef struct pair_tap {
    kir_val ch, r0, a0, oh_lo, oh_hi, lo, hi;
} pair_tap;

static pair_tap pair_tap_at(kir_kernel *K, const conv_gemm_job *j, kir_val k)
{
    const window_geom *w = j->w;
    pair_tap t;
    kir_val ch = kir_binary(K, KIR_DIV, k, kir_idx(K, j->taps));
    kir_val tap = kir_binary(K, KIR_SUB, k, kir_mul(K, ch, kir_idx(K, j->taps)));
    kir_val kh = kir_binary(K, KIR_DIV, tap, kir_idx(K, w->kernel[1]));
    kir_val kw = kir_binary(K, KIR_SUB, tap, kir_mul(K, kh, kir_idx(K, w->kernel[1])));
    t.ch = lower_clamp(K, ch, j->c);
    t.r0 = kir_binary(K, KIR_SUB, kir_mul(K, kh, kir_idx(K, w->dilation[0])), kir_idx(K, w->pad_lo[0]));
    t.a0 = kir_binary(K, KIR_SUB, kir_mul(K, kw, kir_idx(K, w->dilation[1])), kir_idx(K, w->pad_lo[1]));
    inside(K, t.r0, w->stride[0], w->in[0], w->out[0], &t.oh_lo, &t.oh_hi);
    inside(K, t.a0, w->stride[1], w->in[1], w->out[1], &t.lo, &t.hi);
    if (j->kreal % j->kg) { /* rows K and on: an empty range */
        kir_val past = kir_binary(K, KIR_GE, k, kir_idx(K, j->kreal));
        t.oh_hi = kir_select(K, past, t.oh_lo, t.oh_hi);
    }
    return t;
}

/* A k-group element from its value: int16 for pairs, uint8 for quads (X + s
 * already added). The clamp is a no-op on these values; the C target casts a
 * clamped float without a 64-bit path (emit_c.c). */
static kir_val group_cast(kir_kernel *K, kir_val v, kir_val shift)
{
    float lo = shift ? 0.0f : INT16_MIN, hi = shift ? 255.0f : INT16_MAX;
    v = kir_binary(K, KIR_MIN, kir_binary(K, KIR_MAX, v, kir_const_f(K, SMELT_F32, lo)), kir_const_f(K, SMELT_F32, hi));
    return kir_cast(K, shift ? SMELT_U8 : SMELT_I16, v);
}

/* Tap t's element at (oh, ow) as int16: X's, or 0 in the padding; `row_in`
 * says oh is inside, and columns outside [lo, hi) read 0 unless `cols_in`.
 * With a shift s (quads), X + s as uint8. */
static kir_val pair_value(lower_ctx *c, const conv_gemm_job *j, const pair_tap *t, kir_val n, kir_val oh, kir_val ow,
                          kir_val row_in, bool cols_in, kir_val shift)
{
    kir_kernel *K = c->k;
    const window_geom *w = j->w;
    kir_val ih = lower_clamp(K, kir_add(K, kir_mul(K, oh, kir_idx(K, w->stride[0])), t->r0), w->in[0]);
    kir_val iw = kir_add(K, kir_mul(K, ow, kir_idx(K, w->stride[1])), t->a0), ok = row_in;
    if (!cols_in) {
        iw = lower_clamp(K, iw, w->in[1]);
        ok = kir_binary(K, KIR_AND, ok, kir_binary(K, KIR_AND, kir_binary(K, KIR_GE, ow, t->lo), kir_binary(K, KIR_LT, ow, t->hi)));
    }
    kir_val xi[4] = {kir_add(K, n, kir_idx(K, j->n0)), t->ch, ih, iw};
    kir_val v;
    if (shift) /* X times 0 or 1, not a select: GCC 12 vectorized no run of the select plus s (X is finite) */
        v = kir_binary(K, KIR_ADD, kir_binary(K, KIR_MUL, lower_load(c, 0, xi), kir_cast(K, SMELT_F32, ok)), shift);
    else
        v = kir_select(K, ok, lower_load(c, 0, xi), kir_const_f(K, SMELT_F32, 0));
    return group_cast(K, v, shift);
}

/* The im2col in k-groups: rows kg*kp + h (h < kg) of image n (conv_im2col_body's
 * rows) interleaved, element h of group kp at position i at
 * ((n*KG + kp)*ld + i)*kg + h, KG groups, the last group's rows past K 0 (or
 * s). Pairs are int16 of X (exact: integers within int16, IR_ATTR_INT_AMAX);
 * quads uint8 of X + s, its 8-bit input (ir.h), the padding s. All of a
 * group is written by one run, unit stride: a row alone writes every kg-th
 * element, which the compiler stores an element at a time, and a second
 * pass pairing the float im2col's rows cost as much as the im2col (on
 * ddddocr_ocr_quant's 24 -> 24 3x3 conv at 32x80 each made the conv slower
 * than the float GEMM). Per output row, the columns where every tap is
 * inside X read it with no test per element; the edges test each column. */
static void conv_groups_body(lower_ctx *c, const kir_val *idx, void *user)
{
    const conv_gemm_job *j = user;
    kir_kernel *K = c->k;
    int kg = j->kg;
    int64_t ow_n = j->w->out[1], kgs = (j->kreal + kg - 1) / kg;
    kir_val n = idx[0], kp = idx[1], z = kir_idx(K, 0), one = kir_idx(K, 1), own = kir_idx(K, ow_n);
    kir_val shift = kg == 4 ? conv_shift(c) : 0;
    kir_val k0 = kir_mul(K, kp, kir_idx(K, kg));
    pair_tap t[4];
    for (int h = 0; h < kg; h++) t[h] = pair_tap_at(K, j, kir_add(K, k0, kir_idx(K, h)));
    kir_val base = kir_mul(K, kir_add(K, kir_mul(K, n, kir_idx(K, kgs)), kp), kir_idx(K, kg * j->ld));
    kir_val lo = t[0].lo, hi = t[0].hi;
    for (int h = 1; h < kg; h++) lo = kir_binary(K, KIR_MAX, lo, t[h].lo), hi = kir_binary(K, KIR_MIN, hi, t[h].hi);
    hi = kir_binary(K, KIR_MAX, lo, hi);
    /* Stride 1 and output rows as long as X's: position p = oh*OW + ow of tap
     * h reads X's plane at p + r0*IW + a0, so the rows where every tap is
     * inside, [oh_lo, oh_hi), are one run of positions from column lo of the
     * first to column hi of the last, unit stride, without a test (a run per
     * row of ddddocr_ocr_quant's 40 columns left 8 of them to scalar
     * epilogues: its 3x3 48 -> 192 im2col 0.125 -> 0.068 ms in a harness).
     * The run's columns outside [lo, hi) read X's neighbouring row, inside
     * its plane; the rows' edge parts below write them after it. */
    const window_geom *w = j->w;
    bool flat = w->stride[0] == 1 && w->stride[1] == 1 && w->in[1] == ow_n && lower_input_is_plain(c, 0);
    kir_val ohlo = z, ohhi = z;
    if (flat) {
        ohlo = t[0].oh_lo, ohhi = t[0].oh_hi;
        for (int h = 1; h < kg; h++)
            ohlo = kir_binary(K, KIR_MAX, ohlo, t[h].oh_lo), ohhi = kir_binary(K, KIR_MIN, ohhi, t[h].oh_hi);
        ohhi = kir_binary(K, KIR_MAX, ohlo, ohhi);
        /* empty where no row is inside: (ohlo - 1)*OW + hi <= ohlo*OW + lo */
        kir_val p0 = kir_add(K, kir_mul(K, ohlo, own), lo);
        kir_val p1 = kir_add(K, kir_mul(K, kir_binary(K, KIR_SUB, ohhi, one), own), hi);
        kir_val p = kir_loop_begin_parallel(K, p0, p1);
        kir_val at = kir_add(K, base, kir_mul(K, p, kir_idx(K, kg)));
        for (int h = 0; h < kg; h++) {
            kir_val off = kir_add(K, kir_mul(K, t[h].r0, kir_idx(K, w->in[1])), t[h].a0);
            kir_val xi[4] = {kir_add(K, n, kir_idx(K, j->n0)), t[h].ch, z, kir_add(K, p, off)};
            kir_val v = lower_load(c, 0, xi);
            if (shift) v = kir_binary(K, KIR_ADD, v, shift);
            lower_scratch_store(c, j->aq, kir_add(K, at, kir_idx(K, h)), group_cast(K, v, shift));
        }
        kir_loop_end(K);
    }
    kir_val oh = kir_loop_begin(K, z, kir_idx(K, j->w->out[0]), one);
    kir_val row_in[4], row = kir_add(K, base, kir_mul(K, oh, kir_idx(K, kg * ow_n)));
    for (int h = 0; h < kg; h++)
        row_in[h] = kir_binary(K, KIR_AND, kir_binary(K, KIR_GE, oh, t[h].oh_lo), kir_binary(K, KIR_LT, oh, t[h].oh_hi));
    /* the run wrote the middles of the rows inside */
    kir_val mid_hi = flat ? kir_select(K, kir_binary(K, KIR_AND, kir_binary(K, KIR_GE, oh, ohlo), kir_binary(K, KIR_LT, oh, ohhi)), lo, hi) : hi;
    const kir_val from[3] = {z, lo, hi}, to[3] = {lo, mid_hi, own};
    for (int part = 0; part < 3; part++) {
        kir_val ow = kir_loop_begin_parallel(K, from[part], to[part]);
        kir_val at = kir_add(K, row, kir_mul(K, ow, kir_idx(K, kg)));
        for (int h = 0; h < kg; h++)
            lower_scratch_store(c, j->aq, kir_add(K, at, kir_idx(K, h)),
                                pair_value(c, j, &t[h], n, oh, ow, row_in[h], part == 1, shift));
        kir_loop_end(K);
    }
    kir_loop_end(K);
}

/* The quads' residuals (ir.h, IR_ATTR_INT_AMAX): for each weight element
 * outside int8, where this block holds its channel, r * ((X + s)[k] - s) added
 * to the channel's accumulators, (X + s)[k] read from the im2col at the
 * block's positions. */
static void conv_quad_residuals(lower_ctx *c, const gemm_packed *g, const kir_val *bidx, const gemm_c_block *b, kir_val shift)
{
    const ir_tensor *sums = ir_in(c->g, c->n, 4);
    int64_t m = ir_in(c->g, c->n, 1)->shape.dim[0], n_res = (sums->shape.dim[0] - m) / 3;
    const float *res = (const float *)sums->data + m;
    kir_kernel *K = c->k;
    for (int64_t q = 0; q < n_res; q++) {
        int64_t ch = (int64_t)res[3 * q], k = (int64_t)res[3 * q + 1];
        kir_val u = kir_binary(K, KIR_SUB, kir_idx(K, ch), b->i0);
        kir_if_begin(K, kir_binary(K, KIR_AND, kir_binary(K, KIR_GE, u, kir_idx(K, 0)), kir_binary(K, KIR_LT, u, b->rows)));
        kir_val t = kir_loop_begin_parallel(K, kir_idx(K, 0), b->cols);
        kir_val xs = cols_read_im2col_group(c, g, bidx, kir_idx(K, k / 4), (int)(k % 4), kir_add(K, b->j0, t));
        kir_val add = kir_binary(K, KIR_MUL, kir_const_f(K, SMELT_F32, res[3 * q + 2]), kir_binary(K, KIR_SUB, xs, shift));
        kir_val at = kir_add(K, kir_mul(K, u, kir_idx(K, b->ld)), t);
        kir_store(K, b->acc, at, kir_binary(K, KIR_ADD, kir_load(K, b->acc, at), add));
        kir_loop_end(K);
        kir_if_end(K);
    }
}

/* The block into Y[n][m][oh][ow], the unit's positions as output rows oh and
 * runs of ow in each (no division per element). On N (conv_cols_lower):
 * block element (channel u, position t) at u*ld + t, per channel a run of ow
 * unit stride in both, a copy the compiler vectorizes. On M (conv_gemm_lower):
 * at t*ld + u, so per position the channels inner, a unit-stride read of the
 * block (and of the bias) and a store OH*OW apart. Channels outer there read
 * the block ld apart per element: a third more time for the copy out, 320 ->
 * 1280 at 7x7 (+ bias + Clip) 0.501 -> 0.460 ms where the GEMM alone took
 * 0.436 (its kernel in a harness, min of 1000 runs, two rounds). */
static void conv_store_block(lower_ctx *c, const gemm_packed *g, const kir_val *bidx, const gemm_c_block *b)
{
    const conv_gemm_job *j = g->user;
    kir_kernel *K = c->k;
    kir_val z = kir_idx(K, 0), one = kir_idx(K, 1), ow_n = kir_idx(K, j->w->out[1]);
    if (j->cols && !j->kg && lower_store_is_flat(c, 0, 2)) {
        /* per channel one run of positions, Y's plane written as one row */
        kir_val u = kir_loop_begin(K, z, b->rows, one), m = kir_add(K, b->i0, u);
        kir_val bias = j->bias ? lower_load(c, 2, &m) : 0;
        /* whole vectors where the block's columns are (a loop of the vector
         * width, which the C target writes with its intrinsics) */
        int64_t vw = c->target->vector_width, nc = kir_is_const(K, b->cols) ? K->vals[b->cols].imm.i : 0;
        bool vec = vw > 1 && nc > vw && nc % vw == 0;
        kir_val t0 = vec ? kir_loop_begin(K, z, b->cols, kir_idx(K, vw)) : z;
        kir_val t = kir_add(K, t0, kir_loop_begin_parallel(K, z, vec ? kir_idx(K, vw) : b->cols));
        kir_val v = kir_load(K, b->acc, kir_add(K, b->at, kir_add(K, kir_mul(K, u, kir_idx(K, b->ld)), t)));
        if (bias) v = kir_binary(K, KIR_ADD, v, bias);
        kir_val yi[4] = {kir_add(K, bidx[0], kir_idx(K, j->n0)), m};
        trailing_index(K, &c->g->tensors[c->n->out[0]].shape, 2, kir_add(K, b->j0, t), yi);
        lower_store(c, 0, yi, v);
        kir_loop_end(K);
        if (vec) kir_loop_end(K);
        kir_loop_end(K);
        return;
    }
    kir_val p0 = j->cols ? b->j0 : b->i0, np = j->cols ? b->cols : b->rows;
    kir_val i1 = kir_add(K, p0, np);
    kir_val oh0 = kir_binary(K, KIR_DIV, p0, ow_n);
    kir_val oh1 = kir_add(K, kir_binary(K, KIR_DIV, kir_binary(K, KIR_SUB, i1, one), ow_n), one);
    kir_val u = 0, m = 0, bias = 0, corr = 0;
    /* quads: the GEMM summed w * (X + s); s * rowsum(w) off, both exact (ir.h) */
    kir_val shift = j->kg == 4 ? conv_shift(c) : 0;
    if (shift) conv_quad_residuals(c, g, bidx, b, shift);
    if (j->cols) {
        u = kir_loop_begin(K, z, b->rows, one);
        m = kir_add(K, b->i0, u);
        bias = j->bias ? lower_load(c, 2, &m) : 0;
        if (shift) corr = kir_binary(K, KIR_MUL, shift, lower_load(c, 4, &m));
    }
    kir_val oh = kir_loop_begin(K, oh0, oh1, one);
    kir_val rowstart = kir_mul(K, oh, ow_n);
    kir_val lo = kir_binary(K, KIR_MAX, z, kir_binary(K, KIR_SUB, p0, rowstart));
    kir_val hi = kir_binary(K, KIR_MIN, ow_n, kir_binary(K, KIR_SUB, i1, rowstart));
    kir_val ow = j->cols ? kir_loop_begin_parallel(K, lo, hi) : kir_loop_begin(K, lo, hi, one);
    kir_val t = kir_binary(K, KIR_SUB, kir_add(K, rowstart, ow), p0);
    if (!j->cols) {
        u = kir_loop_begin_parallel(K, z, b->cols);
        m = kir_add(K, b->j0, u);
        bias = j->bias ? lower_load(c, 2, &m) : 0;
    }
    kir_val at = j->cols ? kir_add(K, kir_mul(K, u, kir_idx(K, b->ld)), t) : kir_add(K, kir_mul(K, t, kir_idx(K, b->ld)), u);
    at = kir_add(K, b->at, at);
    kir_val v = kir_load(K, b->acc, at);
    if (corr) v = kir_binary(K, KIR_SUB, v, corr);
    if (bias) v = kir_binary(K, KIR_ADD, v, bias);
    kir_val yi[4] = {kir_add(K, bidx[0], kir_idx(K, j->n0)), m, oh, ow};
    lower_store(c, 0, yi, v);
    kir_loop_end(K);
    kir_loop_end(K);
    kir_loop_end(K);
}

/* The GEMM g, after the im2col where the shape needs one: `chunk` images at a
 * time into scratch, then the GEMM over them reading it (positions on M: as
 * A, conv_read_im2col; on N: as B, cols_read_im2col). */
static smelt_status conv_gemm_run(lower_ctx *c, gemm_packed *g, conv_gemm_job *j)
{
    const window_geom *w = j->w;
    j->a = -1;
    j->ld = graph_im2col_ld(w->out[0] * w->out[1]);
    bool fits = !j->flat && graph_im2col_fits(w->out[0] * w->out[1], j->kreal);
    /* bytes per image: the float im2col, or its int16 k-pairs or uint8 k-quads */
    smelt_dtype qt = j->kg == 4 ? SMELT_U8 : SMELT_I16;
    int64_t bytes = (j->kg ? g->k * j->kg * (int64_t)smelt_dtype_size(qt) : j->kreal * 4) * j->ld;
    int64_t chunk = fits ? GRAPH_IM2COL_MAX_BYTES / bytes : 0;
    if (chunk < 1 && j->kg) /* graph/pack_weights.c packs the groups only where it fits */
        return ir_node_fail(c->n, SMELT_ERR_INTERNAL, "k-group weight for a convolution whose im2col does not fit");
    if (chunk < 1) return gemm_packed_lower(c, g);
    int64_t batch = g->batch[0];
    if (chunk > batch) chunk = batch;
    j->k = j->kreal;
    if (j->kg ? (j->aq = lower_scratch(c, qt, chunk * j->kg * g->k * j->ld)) < 0
                 : (j->a = lower_scratch(c, SMELT_F32, chunk * j->k * j->ld)) < 0)
        return ir_node_fail(c->n, SMELT_ERR_NOMEM, "out of memory");
    if (j->cols && j->kg) g->read_b_group = cols_read_im2col_group, g->kgroup = j->kg;
    else if (j->cols) g->read_b = cols_read_im2col;
    else g->read_a = conv_read_im2col, g->nc_min = 0, g->kc_max = CONV_READ_A_KC;
    for (j->n0 = 0; j->n0 < batch; j->n0 += chunk) {
        int64_t nb = batch - j->n0 < chunk ? batch - j->n0 : chunk;
        ir_shape fill = {.rank = 3, .dim = {nb, j->k, 1}};
        if (j->kg) {
            ir_shape groups = {.rank = 3, .dim = {nb, g->k, 1}};
            lower_parallel_for(c, &groups, j->kg * w->out[0] * w->out[1], conv_groups_body, j);
        } else {
            lower_parallel_for(c, &fill, w->out[0] * w->out[1], conv_im2col_body, j);
        }
        if (!c->k) return ir_node_fail(c->n, SMELT_ERR_NOMEM, "out of memory");
        g->batch[0] = nb;
        TRY(gemm_packed_lower(c, g));
    }
    return SMELT_OK;
}

static bool conv_is_flat(lower_ctx *c, const window_geom *w)
{
    return w->kernel[0] * w->kernel[1] == 1 && w->stride[0] == 1 && w->stride[1] == 1 && !w->pad_lo[0] && !w->pad_hi[0] &&
           !w->pad_lo[1] && !w->pad_hi[1] && lower_input_is_plain(c, 0);
}

smelt_status conv_gemm_lower(lower_ctx *c, const window_geom *w)
{
    const ir_tensor *x = ir_in(c->g, c->n, 0), *wt = ir_in(c->g, c->n, 1);
    const ir_tensor *y = &c->g->tensors[c->n->out[0]];
    if (c->target->wg_size != 1 || w->nsp != 2 || x->dtype != SMELT_F32 || ir_attr_int(c->n, "group", 1) != 1 ||
        wt->enc.n != wt->enc.logical.dim[0])
        return ir_node_fail(c->n, SMELT_ERR_UNSUPPORTED,
                            "a weight packed into panels needs a 2-D float32 convolution of group 1 on the C target");
    if (ir_tensor_numel(y) == 0) return SMELT_OK;
    conv_gemm_job j = {.w = w, .c = x->shape.dim[1], .taps = w->kernel[0] * w->kernel[1], .bias = ir_in(c->g, c->n, 2) != NULL};
    j.kreal = j.c * j.taps;
    j.flat = conv_is_flat(c, w);
    mm_tiles tl = mm_tiles_for(c->target->vector_width);
    if (wt->enc.nr != tl.nr || wt->enc.k != j.c * j.taps)
        return ir_node_fail(c->n, SMELT_ERR_UNSUPPORTED, "weight packed in panels of %lld, the target's are %d",
                            (long long)wt->enc.nr, tl.nr);
    gemm_packed g = {.nb = 1, .batch = {x->shape.dim[0]}, .m = w->out[0] * w->out[1], .n = wt->enc.n, .k = wt->enc.k,
                     .dt = SMELT_F32, .tl = tl, .b_input = 1, .b_scratch = -1, .pack_a = conv_pack_a,
                     .store_block = conv_store_block, .nc_min = j.flat ? 0 : CONV_GEMM_NC_MIN, .user = &j};
    if (j.flat) g.read_a = conv_read_a, g.kc_max = CONV_READ_A_KC;
    return conv_gemm_run(c, &g, &j);
}

bool conv_cols_wanted(lower_ctx *c, const window_geom *w)
{
    const ir_tensor *x = ir_in(c->g, c->n, 0), *wt = ir_in(c->g, c->n, 1), *y = &c->g->tensors[c->n->out[0]];
    if (getenv("SMELT_NO_PACKED_GEMM")) return false; /* as for MatMul (ops/matmul.c) and the packing: direct, for A/B */
    if (c->target->wg_size != 1 || w->nsp != 2 || x->dtype != SMELT_F32 || ir_attr_int(c->n, "group", 1) != 1 ||
        !wt->data || wt->enc.kind != IR_ENC_NONE || wt->dtype != SMELT_F32 || x->shape.rank != 4 ||
        ir_tensor_numel(y) == 0 || ir_tensor_numel(x) == 0)
        return false;
    int64_t p = w->out[0] * w->out[1], taps = w->kernel[0] * w->kernel[1], k = x->shape.dim[1] * taps, m = wt->shape.dim[0];
    int64_t nr = mm_tiles_for(c->target->vector_width).nr;
    if (!graph_conv_on_cols(taps, k, m, p, nr)) return false;
    /* a 1x1 reading a fused producer, or whose last panel would read past the plane: through the im2col */
    return (conv_is_flat(c, w) && p % nr == 0) || graph_im2col_fits(p, k);
}

smelt_status conv_cols_lower(lower_ctx *c, const window_geom *w)
{
    const ir_tensor *x = ir_in(c->g, c->n, 0), *wt = ir_in(c->g, c->n, 1);
    conv_gemm_job j = {.w = w, .c = x->shape.dim[1], .taps = w->kernel[0] * w->kernel[1], .bias = ir_in(c->g, c->n, 2) != NULL,
                       .cols = true, .kg = wt->enc.kind == IR_ENC_KPAIRS ? 2 : wt->enc.kind == IR_ENC_KQUADS ? 4 : 0};
    j.kreal = j.c * j.taps;
    if (j.kg && (c->target->wg_size != 1 || w->nsp != 2 || x->dtype != SMELT_F32 || wt->enc.k != j.kreal ||
                 wt->enc.n != wt->shape.dim[0] || (j.kg == 4 && (!ir_in(c->g, c->n, 3) || !ir_in(c->g, c->n, 4)))))
        return ir_node_fail(c->n, SMELT_ERR_UNSUPPORTED,
                            "a weight in int16 k-pairs or int8 k-quads needs a 2-D float32 convolution of group 1 on the C target"
                            " (and quads its shift and weight sums)");
    /* k-groups read X through the im2col, which writes the groups */
    j.flat = !j.kg && conv_is_flat(c, w) && w->out[0] * w->out[1] % mm_tiles_for(c->target->vector_width).nr == 0;
    gemm_packed g = {.nb = 1, .batch = {x->shape.dim[0]}, .m = wt->shape.dim[0], .n = w->out[0] * w->out[1],
                     .k = j.kg ? (j.kreal + j.kg - 1) / j.kg : j.kreal, .dt = SMELT_F32, .tl = mm_tiles_for(c->target->vector_width), .b_input = -1,
                     .b_scratch = -1, .read_a = cols_read_w, .read_b = j.flat ? cols_read_x : NULL,
                     .store_block = conv_store_block, .store_each = !j.kg, .user = &j};
    if (j.flat && g.k <= CONV_COLS_SMALL_K) g.mb_max = CONV_COLS_SMALL_MB, g.nc_max = CONV_COLS_SMALL_NC;
    return conv_gemm_run(c, &g, &j);
}
