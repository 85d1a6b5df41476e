/*
 * conv_gemm.c — 2-D convolution as a GEMM on the packed microkernel
 * (ops/gemm_packed.h): per image n,
 *     Y^T[i][m] = sum over k of A[i][k] * W^T[k][m],   i = oh*OW + ow,
 *     A[i][k] = X[n][c][oh*sh - ph + kh*dh][ow*sw - pw + kw*dw],  k = (c*KH + kh)*KW + kw
 * (zero where the row or column falls in the padding). The weight [M, C, KH,
 * KW] is packed at compile time as B = W^T in panels (graph/pack_weights.c);
 * A, the im2col matrix, exists only as the packed GEMM's per-KC slice of
 * workgroup memory, read straight from X (and its fused producers) by this
 * file's A pack; the store writes Y in NCHW, bias first, through the region's
 * epilogue. This orientation keeps the constant on the packed side (no per-call
 * B pack, which would be the whole im2col matrix) and puts the long dimension,
 * the output positions, on M, where the units split over the threads.
 *
 * Which convolutions come here (graph/pack_weights.c, conv_wants_gemm), by
 * measurement against the direct form (ops/conv.c), README "Benchmarks":
 * 1x1 of any stride, and any kernel with a stride over 1 (ResNet's 7x7 s2 stem
 * and 3x3 s2); group 1 only (grouped and depthwise stay direct), and 3x3
 * stride 1 is left to the direct form and Winograd.
 *
 * requires: a Conv node whose weight has the IR_ENC_PANELS encoding; the C target.
 * guarantees: one kernel computing the Conv (bias included).
 */
#include "ops/conv.h"
#include "ops/gemm_packed.h"

typedef struct conv_gemm_job {
    const window_geom *w;
    int64_t c, taps;   /* input channels; KH * KW */
    bool flat;         /* 1x1, stride 1, no pads, plain X: row i is X's element i of the plane */
    bool bias;
} conv_gemm_job;

/* The A pack: k outer (its channel and tap split once per k), the unit's rows
 * inner, so consecutive rows read X along a row of the plane. */
static void conv_pack_a(lower_ctx *c, const gemm_packed *g, const kir_val *bidx, const gemm_a_slice *s)
{
    const conv_gemm_job *j = g->user;
    const window_geom *w = j->w;
    kir_kernel *K = c->k;
    kir_val z = kir_idx(K, 0), one = kir_idx(K, 1);
    kir_val kk = kir_loop_begin(K, z, s->kc, one);
    kir_val k = kir_add(K, s->kb, kk);
    kir_val ch = j->taps > 1 ? kir_binary(K, KIR_DIV, k, kir_idx(K, j->taps)) : k;
    kir_val tap = kir_binary(K, KIR_SUB, k, kir_mul(K, ch, kir_idx(K, j->taps)));
    kir_val kh = kir_binary(K, KIR_DIV, tap, kir_idx(K, w->kernel[1]));
    kir_val kw = kir_binary(K, KIR_SUB, tap, kir_mul(K, kh, kir_idx(K, w->kernel[1])));
    kir_val q = kir_loop_begin(K, z, s->nblk, one);
    kir_val r = kir_loop_begin(K, z, kir_idx(K, s->mr), one);
    kir_val i = gemm_packed_clamp_row(K, g, kir_add(K, kir_add(K, s->i0, kir_mul(K, q, kir_idx(K, s->mr))), r));
    kir_val v;
    if (j->flat) {
        kir_val xi[4] = {bidx[0], ch, z, i};
        v = lower_load(c, 0, xi);
    } else {
        kir_val oh = kir_binary(K, KIR_DIV, i, kir_idx(K, w->out[1]));
        kir_val ow = kir_binary(K, KIR_SUB, i, kir_mul(K, oh, kir_idx(K, w->out[1])));
        kir_val pos[2], ok = 0;
        const kir_val o[2] = {oh, ow}, t[2] = {kh, kw};
        for (int d = 0; d < 2; d++) {
            pos[d] = kir_add(K, kir_mul(K, o[d], kir_idx(K, w->stride[d])),
                             kir_binary(K, KIR_SUB, kir_mul(K, t[d], kir_idx(K, w->dilation[d])), kir_idx(K, w->pad_lo[d])));
            if (!w->pad_lo[d] && !w->pad_hi[d]) continue;
            kir_val in = kir_binary(K, KIR_AND, kir_binary(K, KIR_GE, pos[d], z), kir_binary(K, KIR_LT, pos[d], kir_idx(K, w->in[d])));
            ok = ok ? kir_binary(K, KIR_AND, ok, in) : in;
            pos[d] = lower_clamp(K, pos[d], w->in[d]);
        }
        kir_val xi[4] = {bidx[0], ch, pos[0], pos[1]};
        v = lower_load(c, 0, xi);
        if (ok) v = kir_select(K, ok, v, kir_const_f(K, g->dt, 0));
    }
    kir_val at = kir_add(K, kir_add(K, kir_mul(K, q, kir_idx(K, s->kcap * s->mr)), kir_mul(K, kk, kir_idx(K, s->mr))), r);
    kir_store(K, s->ap, at, v);
    kir_loop_end(K);
    kir_loop_end(K);
    kir_loop_end(K);
}

static void conv_store(lower_ctx *c, const gemm_packed *g, const kir_val *bidx, kir_val i, kir_val m, kir_val v)
{
    const conv_gemm_job *j = g->user;
    kir_kernel *K = c->k;
    if (j->bias) v = kir_binary(K, KIR_ADD, v, lower_load(c, 2, &m));
    kir_val oh = kir_binary(K, KIR_DIV, i, kir_idx(K, j->w->out[1]));
    kir_val yi[4] = {bidx[0], m, oh, kir_binary(K, KIR_SUB, i, kir_mul(K, oh, kir_idx(K, j->w->out[1])))};
    lower_store(c, 0, yi, v);
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
                     .store = conv_store, .cols_outer = true, .user = &j};
    return gemm_packed_lower(c, &g);
}
