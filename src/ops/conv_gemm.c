/*
 * conv_gemm.c — 2-D convolution as a GEMM on the packed microkernel
 * (ops/gemm_packed.h): per image n,
 *     Y^T[i][m] = sum over k of A[i][k] * W^T[k][m],   i = oh*OW + ow,
 *     A[i][k] = X[n][c][oh*sh - ph + kh*dh][ow*sw - pw + kw*dw],  k = (c*KH + kh)*KW + kw
 * (zero where the row or column falls in the padding). The weight [M, C, KH,
 * KW] is packed at compile time as B = W^T in panels (graph/pack_weights.c);
 * A, the im2col matrix, exists only as the packed GEMM's per-KC slice of
 * workgroup memory, read straight from X (and its fused producers) by this
 * file's A pack (a flat 1x1 conv, stride 1 without pads over a plain X, has
 * no pack: A[i][k] is X[n][k][i], which the microkernel reads in place); the store writes Y in NCHW, bias first, through the region's
 * epilogue. This orientation keeps the constant on the packed side (no per-call
 * B pack, which would be the whole im2col matrix) and puts the long dimension,
 * the output positions, on M, where the units split over the threads.
 *
 * Which convolutions come here is decided where their weights are packed
 * (graph/pack_weights.c, conv_wants_gemm), by measurement against the direct
 * form per shape class: 1x1 convs of any stride with C >= 64 input and M >= 32
 * output channels, and strided convs with larger kernels where C*KH*KW >= 64
 * and M >= 128 (ResNet's 3x3 s2); group 1 only (grouped and depthwise stay
 * direct), 3x3 stride 1 is left to the direct form and Winograd.
 *
 * requires: a Conv node whose weight has the IR_ENC_PANELS encoding; the C target.
 * guarantees: one kernel computing the Conv (bias included).
 */
#include "ops/conv.h"
#include "ops/gemm_packed.h"

/* Columns (output channels) per unit at least, when A is an im2col read (not
 * flat): a 3x3 s2 conv of 128 -> 256 channels at 10x10 outputs split into 64
 * columns per unit for the threads packed A four times and cost more than
 * the direct form (nudenet_320n). */
#define CONV_GEMM_NC_MIN 128

typedef struct conv_gemm_job {
    const window_geom *w;
    int64_t c, taps;   /* input channels; KH * KW */
    bool flat;         /* 1x1, stride 1, no pads, plain X: row i is X's element i of the plane */
    bool bias;
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

/* A flat conv's A[i][k] in place: X[n][k][0][i], i + k*OH*OW past the image's start. */
static kir_val conv_read_a(lower_ctx *c, const gemm_packed *g, const kir_val *bidx, kir_val i, kir_val k)
{
    (void)g;
    kir_val xi[4] = {bidx[0], k, kir_idx(c->k, 0), i};
    return lower_load(c, 0, xi);
}

/* The block into Y[n][m][oh][ow]: per channel m, the unit's positions as
 * output rows oh and a unit-stride run of ow in each (no division per element). */
static void conv_store_block(lower_ctx *c, const gemm_packed *g, const kir_val *bidx, const gemm_c_block *b)
{
    const conv_gemm_job *j = g->user;
    kir_kernel *K = c->k;
    kir_val z = kir_idx(K, 0), one = kir_idx(K, 1), ow_n = kir_idx(K, j->w->out[1]);
    kir_val i1 = kir_add(K, b->i0, b->rows);
    kir_val oh0 = kir_binary(K, KIR_DIV, b->i0, ow_n);
    kir_val oh1 = kir_add(K, kir_binary(K, KIR_DIV, kir_binary(K, KIR_SUB, i1, one), ow_n), one);
    kir_val u = kir_loop_begin(K, z, b->cols, one);
    kir_val m = kir_add(K, b->j0, u);
    kir_val bias = j->bias ? lower_load(c, 2, &m) : 0;
    kir_val oh = kir_loop_begin(K, oh0, oh1, one);
    kir_val rowstart = kir_mul(K, oh, ow_n);
    kir_val lo = kir_binary(K, KIR_MAX, z, kir_binary(K, KIR_SUB, b->i0, rowstart));
    kir_val hi = kir_binary(K, KIR_MIN, ow_n, kir_binary(K, KIR_SUB, i1, rowstart));
    kir_val ow = kir_loop_begin(K, lo, hi, one);
    kir_val t = kir_binary(K, KIR_SUB, kir_add(K, rowstart, ow), b->i0);
    kir_val v = kir_load(K, b->acc, kir_add(K, kir_mul(K, t, kir_idx(K, b->ld)), u));
    if (bias) v = kir_binary(K, KIR_ADD, v, bias);
    kir_val yi[4] = {bidx[0], m, oh, ow};
    lower_store(c, 0, yi, v);
    kir_loop_end(K);
    kir_loop_end(K);
    kir_loop_end(K);
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
    j.flat = j.taps == 1 && w->stride[0] == 1 && w->stride[1] == 1 && !w->pad_lo[0] && !w->pad_hi[0] && !w->pad_lo[1] &&
             !w->pad_hi[1] && lower_input_is_plain(c, 0);
    mm_tiles tl = mm_tiles_for(c->target->vector_width);
    if (wt->enc.nr != tl.nr || wt->enc.k != j.c * j.taps)
        return ir_node_fail(c->n, SMELT_ERR_UNSUPPORTED, "weight packed in panels of %lld, the target's are %d",
                            (long long)wt->enc.nr, tl.nr);
    gemm_packed g = {.nb = 1, .batch = {x->shape.dim[0]}, .m = w->out[0] * w->out[1], .n = wt->enc.n, .k = wt->enc.k,
                     .dt = SMELT_F32, .tl = tl, .b_input = 1, .b_scratch = -1, .pack_a = conv_pack_a,
                     .store_block = conv_store_block, .nc_min = j.flat ? 0 : CONV_GEMM_NC_MIN, .user = &j};
    if (j.flat) g.read_a = conv_read_a;
    return gemm_packed_lower(c, &g);
}
