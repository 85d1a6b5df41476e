/*
 * conv.c — Conv, and the shapes of Conv and ConvTranspose: the sliding-window geometry (which the
 * pools share), shape rules, and direct convolution (1-D/2-D/3-D..., groups,
 * strides, dilations, pads, auto_pad, bias).
 *
 * requires: shapes inferred by infer_Conv (window_geom_get gives the pads).
 * guarantees: one kernel whose work unit is one output row (all of the last
 *             spatial dim) for MB output channels of one group. Per input
 *             channel and kernel tap, the innermost loop runs unit-stride over
 *             the output width,
 *                 acc[r][ow] += W[m0+r][c][kh][kw] * X[n][c][ih][ow*s + kw*d - p]
 *             over exactly the ow range whose input is in bounds (computed at
 *             compile time for each unrolled kw), so it needs no per-element
 *             guard and vectorizes; an out-of-range row ih skips the tap with
 *             one branch. Depthwise convolution is the Cg == 1 case of the same
 *             loop nest. 2-D convolutions on the CPU use the flat form
 *             instead (conv_body_flat): a unit of MB channels by several output
 *             rows computes each tap as one loop over all its positions, from a
 *             zero-padded copy of the input rows in workgroup memory (split
 *             into phase planes when strided).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower/lower.h"
#include "ops/conv.h"
#include "ops/shape.h"

#define CONV_MB 8       /* output channels per unit: each X element feeds MB FMAs */
#define CONV_KW_UNROLL 16
#define CONV_STACK_BYTES (32 * 1024)
#define CONV_VEC 8      /* accumulator rows: whole vectors of this many elements */
#define CONV_TAP_GROUP 3 /* flat form: (channel, tap) pairs added per pass over the accumulators */
#define CONV_DW_TAP_GROUP 9 /* the same for one output channel per unit (depthwise): a 3x3 in one pass */
#define CONV_STEP_PAIRS 8 /* flat form: small kernels take input channels in steps of about this many pairs */

typedef struct conv_job {
    window_geom w;
    int ns;
    int64_t cg, mg, mb, ow, units;
    int acc;                /* scratch accumulators, or -1: MB x OW of workgroup memory */
    smelt_dtype dt;
    bool bias;
} conv_job;

/* Element (r, ow) of a unit's accumulators: the scratch rows at rowbase[r],
 * or row r of the stack block `smem`. */
typedef struct conv_acc {
    int scratch, smem;
    int64_t ow;
    const kir_val *rowbase;
} conv_acc;

static kir_val acc_load(lower_ctx *c, const conv_acc *a, int r, kir_val ow)
{
    if (a->scratch >= 0) return lower_scratch_load(c, a->scratch, kir_add(c->k, a->rowbase[r], ow));
    return kir_load(c->k, a->smem, kir_add(c->k, kir_idx(c->k, r * a->ow), ow));
}

static void acc_store(lower_ctx *c, const conv_acc *a, int r, kir_val ow, kir_val v)
{
    if (a->scratch >= 0) lower_scratch_store(c, a->scratch, kir_add(c->k, a->rowbase[r], ow), v);
    else kir_store(c->k, a->smem, kir_add(c->k, kir_idx(c->k, r * a->ow), ow), v);
}

static int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

static void conv_body(lower_ctx *c, const kir_val *idx, void *user)
{
    const conv_job *j = user;
    kir_kernel *K = c->k;
    const window_geom *w = &j->w;
    int ns = j->ns, last = ns - 1;
    kir_val one = kir_idx(K, 1), zero_i = kir_idx(K, 0);
    kir_val n = idx[0], m0 = kir_mul(K, idx[1], kir_idx(K, j->mb));
    kir_val cbase = kir_mul(K, kir_binary(K, KIR_DIV, m0, kir_idx(K, j->mg)), kir_idx(K, j->cg));
    /* unit id over [N, M/MB, out spatial dims but the last] */
    ir_shape ushape = {.rank = ns + 1};
    ushape.dim[0] = c->g->tensors[c->n->in[0]].shape.dim[0];
    ushape.dim[1] = j->units;
    for (int d = 0; d < last; d++) ushape.dim[2 + d] = w->out[d];
    kir_val unit = lower_linear(K, &ushape, idx);
    kir_val base = kir_mul(K, unit, kir_idx(K, j->mb * j->ow));
    kir_val rowbase[CONV_MB], m[CONV_MB];
    for (int r = 0; r < j->mb; r++) {
        rowbase[r] = kir_add(K, base, kir_idx(K, r * j->ow));
        m[r] = kir_add(K, m0, kir_idx(K, r));
    }
    kir_val fzero = kir_const_f(K, j->dt, 0);
    conv_acc acc = {j->acc, j->acc < 0 ? kir_smem_add(K, j->dt, j->mb * j->ow) : -1, j->ow, rowbase};
    kir_val init[CONV_MB];
    for (int r = 0; r < j->mb; r++) init[r] = j->bias ? lower_load(c, 2, &m[r]) : fzero;
    kir_val ow = kir_loop_begin(K, zero_i, kir_idx(K, j->ow), one);
    for (int r = 0; r < j->mb; r++) acc_store(c, &acc, r, ow, init[r]);
    kir_loop_end(K);

    kir_val ci = kir_loop_begin(K, zero_i, kir_idx(K, j->cg), one);
    kir_val xi[IR_MAX_RANK], wi[IR_MAX_RANK];
    xi[0] = n;
    xi[1] = kir_add(K, cbase, ci);
    wi[1] = ci;
    /* outer kernel taps: loops, with one in-bounds test per input row */
    kir_val inb = 0;
    for (int d = 0; d < last; d++) {
        kir_val kd = kir_loop_begin(K, zero_i, kir_idx(K, w->kernel[d]), one);
        wi[2 + d] = kd;
        kir_val pos = kir_add(K, kir_mul(K, idx[2 + d], kir_idx(K, w->stride[d])),
                              kir_binary(K, KIR_SUB, kir_mul(K, kd, kir_idx(K, w->dilation[d])), kir_idx(K, w->pad_lo[d])));
        xi[2 + d] = pos;
        if (w->pad_lo[d] || w->pad_hi[d]) {
            kir_val ok = kir_binary(K, KIR_AND, kir_binary(K, KIR_GE, pos, zero_i), kir_binary(K, KIR_LT, pos, kir_idx(K, w->in[d])));
            inb = inb ? kir_binary(K, KIR_AND, inb, ok) : ok;
        }
    }
    if (inb) kir_if_begin(K, inb);
    int64_t s = w->stride[last], dl = w->dilation[last], pl = w->pad_lo[last], in_w = w->in[last];
    if (w->kernel[last] <= CONV_KW_UNROLL) {
        for (int64_t kw = 0; kw < w->kernel[last]; kw++) {
            /* ow with 0 <= ow*s + kw*dl - pl < in_w */
            int64_t lo = -floor_div(-(pl - kw * dl), s), hi = floor_div(in_w - 1 + pl - kw * dl, s) + 1;
            if (lo < 0) lo = 0;
            if (hi > j->ow) hi = j->ow;
            if (lo >= hi) continue;
            wi[2 + last] = kir_idx(K, kw);
            kir_val wv[CONV_MB];
            for (int r = 0; r < j->mb; r++) {
                wi[0] = m[r];
                wv[r] = lower_load(c, 1, wi);
            }
            ow = kir_loop_begin(K, kir_idx(K, lo), kir_idx(K, hi), one);
            xi[2 + last] = kir_add(K, kir_mul(K, ow, kir_idx(K, s)), kir_idx(K, kw * dl - pl));
            kir_val x = lower_load(c, 0, xi);
            for (int r = 0; r < j->mb; r++)
                acc_store(c, &acc, r, ow, kir_binary(K, KIR_ADD, acc_load(c, &acc, r, ow), kir_binary(K, KIR_MUL, wv[r], x)));
            kir_loop_end(K);
        }
    } else {
        kir_val kw = kir_loop_begin(K, zero_i, kir_idx(K, w->kernel[last]), one);
        wi[2 + last] = kw;
        kir_val wv[CONV_MB];
        for (int r = 0; r < j->mb; r++) {
            wi[0] = m[r];
            wv[r] = lower_load(c, 1, wi);
        }
        ow = kir_loop_begin(K, zero_i, kir_idx(K, j->ow), one);
        kir_val pos = kir_add(K, kir_mul(K, ow, kir_idx(K, s)), kir_binary(K, KIR_SUB, kir_mul(K, kw, kir_idx(K, dl)), kir_idx(K, pl)));
        kir_val ok = kir_binary(K, KIR_AND, kir_binary(K, KIR_GE, pos, zero_i), kir_binary(K, KIR_LT, pos, kir_idx(K, in_w)));
        xi[2 + last] = lower_clamp(K, pos, in_w);
        kir_val x = kir_select(K, ok, lower_load(c, 0, xi), fzero);
        for (int r = 0; r < j->mb; r++)
            acc_store(c, &acc, r, ow, kir_binary(K, KIR_ADD, acc_load(c, &acc, r, ow), kir_binary(K, KIR_MUL, wv[r], x)));
        kir_loop_end(K);
        kir_loop_end(K);
    }
    if (inb) kir_if_end(K);
    for (int d = 0; d < last; d++) kir_loop_end(K);
    kir_loop_end(K); /* ci */

    kir_val yi[IR_MAX_RANK];
    yi[0] = n;
    for (int d = 0; d < last; d++) yi[2 + d] = idx[2 + d];
    for (int r = 0; r < j->mb; r++) {
        yi[1] = m[r];
        ow = kir_loop_begin(K, zero_i, kir_idx(K, j->ow), one);
        yi[2 + last] = ow;
        lower_store(c, 0, yi, acc_load(c, &acc, r, ow));
        kir_loop_end(K);
    }
}

/* ---- 2-D on the CPU: rows of the plane as one flat loop -------------------
 * A unit is MB output channels by RB output rows. Per input channel, the rows
 * it reads are copied into a zero-padded tile of workgroup memory. With
 * stride 1 the tile is the padded rows, Wp = W + pads wide, so output (r, c)
 * of tap (kh, kw) reads it at
 *     (r + kh*dh) * Wp + c + kw*dw  =  p + kh*dh*Wp + kw*dw,   p = r*Wp + c:
 * every tap is one unit-stride loop over all RB*Wp positions of the unit, with
 * no bound test and no short rows. Accumulators are Wp wide too; the columns
 * past OW are computed from the padding and never stored.
 * With strides (sh, sw) the tile is split into phase planes: padded row
 * ρ + sh*q and column φ + sw*c go to plane (ρ, φ) at row q, column c, each
 * plane Wq = ceil(Wp / sw) wide, so tap (kh, kw) reads plane
 * ((kh*dh) % sh, (kw*dw) % sw) at p + (kh*dh / sh)*Wq + kw*dw / sw, p = r*Wq + c:
 * unit-stride again, over RB*Wq positions. Only planes some tap reads are
 * kept (a 1x1 stride-2 conv copies one plane of four).
 * Small kernels (1x1, 2x2) take several input channels per step, a tile each,
 * up to CONV_STEP_PAIRS (channel, tap) pairs; the pairs are added in groups of
 * CONV_TAP_GROUP per pass over the positions, so the accumulators are loaded
 * and stored once per group, not once per tap. 3 per pass (a 3x3's row of
 * taps: 24 weights and 8 accumulators stay in 32 vector registers) measured
 * best against 4, 8 and 9 (ResNet's 3x3 convs ~1.6x, MobileNet ~1.6x faster
 * than one tap per pass). A depthwise unit has one output channel, so its
 * pass holds one accumulator and can take all nine taps of a 3x3
 * (CONV_DW_TAP_GROUP): 4-7% faster than three passes on MobileNetV2's
 * depthwise layers (144 ch at 56x56 0.268 -> 0.251 ms, 96 ch 112->56 s2 0.381
 * -> 0.363, 384 ch at 14x14 0.068 -> 0.065, min of 200 runs, 1 thread).
 * Depthwise convs with output rows of 28 or more take their own kernel
 * (ops/conv_depthwise.c); the narrower ones stay here. */
#define CONV_FLAT_PIXELS 256 /* positions per unit, about */
#define CONV_MAX_PLANES 16   /* phase planes of a strided tile (sh * sw at most) */

typedef struct flat_job {
    const conv_job *j;
    int64_t rb, wp, pos;      /* rows per unit, padded width, positions computed (>= rb * wq) */
    int64_t sh, sw, wq, hq;   /* strides; a phase plane's width and rows (stride 1: wp and all rows) */
    int64_t tile, ld;         /* tile elements (one channel), accumulator row stride */
    int64_t cgrp;             /* input channels per step, each with its own tile */
    int plane[CONV_MAX_PLANES]; /* per phase ρ*sw + φ: its plane in the tile, or -1 if no tap reads it */
    int n_planes;
    bool direct;              /* 1x1, stride 1, no pads, plain input: positions read straight from X, no tile */
} flat_job;

/* Tile offset of tap (kh, kw) for output position 0. */
static int64_t tap_offset(const flat_job *f, int64_t kh, int64_t kw)
{
    const window_geom *w = &f->j->w;
    int64_t rh = kh * w->dilation[0], rw = kw * w->dilation[1];
    int64_t plane = f->plane[rh % f->sh * f->sw + rw % f->sw];
    return plane * f->hq * f->wq + rh / f->sh * f->wq + rw / f->sw;
}

/* The tiles of input channels cbase .. cbase + cgrp - 1: per kept plane
 * (ρ, φ), padded rows ρ + sh*q from input row oh0*sh - pad on (zero outside
 * the input) and their columns φ + sw*c, then a zero tail. */
static void fill_tiles(lower_ctx *c, const flat_job *f, int tile, kir_val n, kir_val cbase, kir_val oh0)
{
    const window_geom *w = &f->j->w;
    kir_kernel *K = c->k;
    kir_val one = kir_idx(K, 1), zero_i = kir_idx(K, 0), fzero = kir_const_f(K, f->j->dt, 0);
    kir_val cgl = f->cgrp > 1 ? kir_loop_begin(K, zero_i, kir_idx(K, f->cgrp), one) : zero_i;
    kir_val xi[4] = {n, kir_add(K, cbase, cgl)};
    kir_val tbase = kir_mul(K, cgl, kir_idx(K, f->tile));
    kir_val q = kir_loop_begin(K, zero_i, kir_idx(K, f->hq), one);
    kir_val row0 = kir_binary(K, KIR_SUB, kir_add(K, kir_mul(K, oh0, kir_idx(K, f->sh)), kir_mul(K, q, kir_idx(K, f->sh))),
                              kir_idx(K, w->pad_lo[0]));
    int64_t pl = w->pad_lo[1], iwn = w->in[1];
    for (int64_t rho = 0; rho < f->sh; rho++) {
        kir_val ih = kir_add(K, row0, kir_idx(K, rho));
        kir_val row_ok = kir_binary(K, KIR_AND, kir_binary(K, KIR_GE, ih, zero_i), kir_binary(K, KIR_LT, ih, kir_idx(K, w->in[0])));
        xi[2] = ih;
        for (int64_t phi = 0; phi < f->sw; phi++) {
            int pi = f->plane[rho * f->sw + phi];
            if (pi < 0) continue;
            kir_val trow = kir_add(K, tbase, kir_add(K, kir_idx(K, pi * f->hq * f->wq), kir_mul(K, q, kir_idx(K, f->wq))));
            /* in-range rows: zeros, the input columns phi - pl + sw*c, zeros; other rows: zeros */
            int64_t c0 = pl - phi <= 0 ? 0 : (pl - phi + f->sw - 1) / f->sw;
            int64_t c1 = pl + iwn - phi <= 0 ? 0 : (pl + iwn - phi + f->sw - 1) / f->sw;
            c0 = c0 < f->wq ? c0 : f->wq;
            c1 = c1 < f->wq ? c1 : f->wq;
            const int64_t span[3][2] = {{0, c0}, {c0, c1}, {c1, f->wq}};
            kir_if_begin(K, row_ok);
            for (int part = 0; part < 3; part++) {
                if (span[part][0] >= span[part][1]) continue;
                kir_val tc = kir_loop_begin_parallel(K, kir_idx(K, span[part][0]), kir_idx(K, span[part][1]));
                xi[3] = kir_binary(K, KIR_SUB, kir_add(K, kir_mul(K, tc, kir_idx(K, f->sw)), kir_idx(K, phi)), kir_idx(K, pl));
                kir_store(K, tile, kir_add(K, trow, tc), part == 1 ? lower_load(c, 0, xi) : fzero);
                kir_loop_end(K);
            }
            kir_else(K);
            kir_val tc = kir_loop_begin_parallel(K, zero_i, kir_idx(K, f->wq));
            kir_store(K, tile, kir_add(K, trow, tc), fzero);
            kir_loop_end(K);
            kir_if_end(K);
        }
    }
    kir_loop_end(K);
    kir_val t = kir_loop_begin_parallel(K, kir_idx(K, f->n_planes * f->hq * f->wq), kir_idx(K, f->tile));
    kir_store(K, tile, kir_add(K, tbase, t), fzero);
    kir_loop_end(K);
    if (f->cgrp > 1) kir_loop_end(K); /* cgl */
}

static void conv_body_flat(lower_ctx *c, const kir_val *idx, void *user)
{
    const flat_job *f = user;
    const conv_job *j = f->j;
    const window_geom *w = &j->w;
    kir_kernel *K = c->k;
    kir_val one = kir_idx(K, 1), zero_i = kir_idx(K, 0), fzero = kir_const_f(K, j->dt, 0);
    kir_val n = idx[0], m0 = kir_mul(K, idx[1], kir_idx(K, j->mb));
    kir_val oh0 = kir_mul(K, idx[2], kir_idx(K, f->rb));
    kir_val cbase = kir_mul(K, kir_binary(K, KIR_DIV, m0, kir_idx(K, j->mg)), kir_idx(K, j->cg));
    int64_t pos = f->pos;
    int acc = kir_smem_add(K, j->dt, j->mb * f->ld), tile = f->direct ? -1 : kir_smem_add(K, j->dt, f->tile * f->cgrp);
    kir_val nrows = w->out[0] % f->rb
                        ? kir_binary(K, KIR_MIN, kir_idx(K, f->rb), kir_binary(K, KIR_SUB, kir_idx(K, w->out[0]), oh0))
                        : kir_idx(K, f->rb);
    /* direct: exactly the unit's positions, which are consecutive in each input plane */
    kir_val npos = f->direct ? kir_mul(K, nrows, kir_idx(K, f->wp)) : kir_idx(K, pos);
    kir_val m[CONV_MB];
    for (int r = 0; r < j->mb; r++) {
        m[r] = kir_add(K, m0, kir_idx(K, r));
        kir_val init = j->bias ? lower_load(c, 2, &m[r]) : fzero;
        kir_val p = kir_loop_begin_parallel(K, zero_i, kir_idx(K, pos));
        kir_store(K, acc, kir_add(K, kir_idx(K, r * f->ld), p), init);
        kir_loop_end(K);
    }

    kir_val ci = kir_loop_begin(K, zero_i, kir_idx(K, j->cg), kir_idx(K, f->cgrp));
    if (!f->direct) fill_tiles(c, f, tile, n, kir_add(K, cbase, ci), oh0);

    /* The (channel, tap) pairs of the step in groups of up to CONV_TAP_GROUP,
     * each group one loop over the positions that loads the MB accumulators
     * once, adds every pair of the group (MB weights each, loaded before the
     * loop) and stores them once: per vector of positions MB loads and stores
     * for MB * group multiply-adds. Each accumulator still sums channel by
     * channel, tap by tap, in order. */
    kir_val wi[4];
    int64_t taps = w->kernel[0] * w->kernel[1], pairs = taps * f->cgrp;
    int64_t group = j->mb == 1 ? CONV_DW_TAP_GROUP : CONV_TAP_GROUP;
    for (int64_t g0 = 0; g0 < pairs; g0 += group) {
        int64_t g1 = g0 + group < pairs ? g0 + group : pairs;
        kir_val wv[CONV_DW_TAP_GROUP][CONV_MB];
        int64_t off[CONV_DW_TAP_GROUP], chan[CONV_DW_TAP_GROUP];
        for (int64_t t = g0; t < g1; t++) {
            int64_t ch = t / taps, kh = t % taps / w->kernel[1], kw = t % w->kernel[1];
            wi[1] = kir_add(K, ci, kir_idx(K, ch));
            wi[2] = kir_idx(K, kh);
            wi[3] = kir_idx(K, kw);
            for (int r = 0; r < j->mb; r++) {
                wi[0] = m[r];
                wv[t - g0][r] = lower_load(c, 1, wi);
            }
            off[t - g0] = ch * f->tile + tap_offset(f, kh, kw);
            chan[t - g0] = ch;
        }
        kir_val p = kir_loop_begin_parallel(K, zero_i, npos);
        kir_val sum[CONV_MB];
        for (int r = 0; r < j->mb; r++) sum[r] = kir_load(K, acc, kir_add(K, kir_idx(K, r * f->ld), p));
        for (int64_t t = g0; t < g1; t++) {
            kir_val x;
            if (f->direct) {
                kir_val xi[4] = {n, kir_add(K, cbase, kir_add(K, ci, kir_idx(K, chan[t - g0]))), oh0, p};
                x = lower_load(c, 0, xi);
            } else {
                x = kir_load(K, tile, kir_add(K, p, kir_idx(K, off[t - g0])));
            }
            for (int r = 0; r < j->mb; r++) sum[r] = kir_binary(K, KIR_ADD, sum[r], kir_binary(K, KIR_MUL, wv[t - g0][r], x));
        }
        for (int r = 0; r < j->mb; r++) kir_store(K, acc, kir_add(K, kir_idx(K, r * f->ld), p), sum[r]);
        kir_loop_end(K);
    }
    kir_loop_end(K); /* ci */

    kir_val yi[4] = {n};
    for (int r = 0; r < j->mb; r++) {
        yi[1] = m[r];
        kir_val row = kir_loop_begin(K, zero_i, nrows, one);
        yi[2] = kir_add(K, oh0, row);
        kir_val ow = kir_loop_begin_parallel(K, zero_i, kir_idx(K, j->ow));
        yi[3] = ow;
        kir_val at = kir_add(K, kir_idx(K, r * f->ld), kir_add(K, kir_mul(K, row, kir_idx(K, f->wq)), ow));
        lower_store(c, 0, yi, kir_load(K, acc, at));
        kir_loop_end(K);
        kir_loop_end(K);
    }
}

/* The flat form where it applies (2-D, one thread per workgroup, at most
 * CONV_MAX_PLANES phases) and its workgroup memory fits; false to use the row form. */
static bool conv_flat(lower_ctx *c, const conv_job *j, int64_t batch)
{
    const window_geom *w = &j->w;
    if (c->target->wg_size > 1 || w->nsp != 2 || w->stride[0] * w->stride[1] > CONV_MAX_PLANES) return false;
    flat_job f = {.j = j, .sh = w->stride[0], .sw = w->stride[1]};
    f.wp = w->in[1] + w->pad_lo[1] + w->pad_hi[1];
    f.wq = (f.wp + f.sw - 1) / f.sw;
    if (f.wp < (w->kernel[1] - 1) * w->dilation[1] + 1 || (f.wp - (w->kernel[1] - 1) * w->dilation[1] - 1) / f.sw + 1 != j->ow)
        return false;
    for (int i = 0; i < CONV_MAX_PLANES; i++) f.plane[i] = -1;
    for (int64_t kh = 0; kh < w->kernel[0]; kh++)
        for (int64_t kw = 0; kw < w->kernel[1]; kw++) {
            int ph = (int)(kh * w->dilation[0] % f.sh * f.sw + kw * w->dilation[1] % f.sw);
            if (f.plane[ph] < 0) f.plane[ph] = f.n_planes++;
        }
    /* rows per unit: about CONV_FLAT_PIXELS positions, split evenly over the rows */
    int64_t blocks = (w->out[0] * f.wq + CONV_FLAT_PIXELS - 1) / CONV_FLAT_PIXELS;
    f.rb = (w->out[0] + blocks - 1) / blocks;
    /* tile rows: padded rows (rb - 1)*sh + (kh - 1)*dh + 1, per row phase */
    f.hq = ((f.rb - 1) * f.sh + (w->kernel[0] - 1) * w->dilation[0] + 1 + f.sh - 1) / f.sh;
    /* positions rounded up to whole vectors (the extra ones read the zero
     * tail); accumulator rows vector-aligned and not 4 KiB apart */
    f.pos = (f.rb * f.wq + CONV_VEC - 1) / CONV_VEC * CONV_VEC;
    f.ld = f.pos + CONV_VEC;
    for (int64_t d = 1; d < j->mb; d++)
        if (d * f.ld * (int64_t)smelt_dtype_size(j->dt) % 4096 == 0) {
            f.ld += CONV_VEC;
            d = 0;
        }
    /* the last plane's reads end (kw*dw / sw) + (pos - rb*wq) past the planes */
    f.tile = f.n_planes * f.hq * f.wq + (w->kernel[1] - 1) * w->dilation[1] / f.sw + f.pos - f.rb * f.wq;
    /* channels per step: as many as fill a group of (channel, tap) pairs */
    int64_t taps = w->kernel[0] * w->kernel[1];
    f.direct = taps == 1 && f.sh == 1 && f.sw == 1 && !w->pad_lo[0] && !w->pad_hi[0] && !w->pad_lo[1] &&
               !w->pad_hi[1] && lower_input_is_plain(c, 0);
    if (f.direct) f.tile = 0;
    f.cgrp = 1;
    while (f.cgrp * 2 * taps <= CONV_STEP_PAIRS && j->cg % (f.cgrp * 2) == 0) f.cgrp *= 2;
    int64_t es = (int64_t)smelt_dtype_size(j->dt);
    if ((j->mb * f.ld + f.tile * f.cgrp) * es > CONV_STACK_BYTES * 2) f.cgrp = 1;
    if ((j->mb * f.ld + f.tile * f.cgrp) * es > CONV_STACK_BYTES * 2) return false;
    ir_shape units = {.rank = 4, .dim = {batch, j->units, (w->out[0] + f.rb - 1) / f.rb, 1}};
    lower_parallel_for(c, &units, 2 * j->mb * f.rb * f.wq * j->cg * w->kernel[0] * w->kernel[1], conv_body_flat, &f);
    return true;
}

smelt_status lower_Conv(lower_ctx *c)
{
    conv_job j = {.acc = -1};
    TRY(window_geom_get(c->g, c->n, &j.w));
    const ir_tensor *x = ir_in(c->g, c->n, 0), *wt = ir_in(c->g, c->n, 1);
    const ir_tensor *y = &c->g->tensors[c->n->out[0]];
    int64_t group = j.w.group;
    if (wt->enc.kind == IR_ENC_PANELS) return conv_gemm_lower(c, &j.w);
    if (conv_cols_wanted(c, &j.w)) return conv_cols_lower(c, &j.w);
    ir_shape ws = wt->shape;
    j.ns = j.w.nsp;
    j.dt = x->dtype;
    j.bias = ir_in(c->g, c->n, 2) != NULL;
    j.cg = ws.dim[1];
    int64_t m = ws.dim[0];
    j.mg = m / group;
    j.mb = j.mg % 8 == 0 ? 8 : j.mg % 4 == 0 ? 4 : j.mg % 2 == 0 ? 2 : 1;
    j.units = m / j.mb;
    j.ow = j.w.out[j.ns - 1];
    if (ir_tensor_numel(y) == 0) return SMELT_OK;
    if (conv_depthwise_2d(c, &j.w, x->shape.dim[0], j.cg, m, group, j.dt, j.bias) || conv_flat(c, &j, x->shape.dim[0]) ||
        conv_wide_1d(c, &j.w, x->shape.dim[0], j.cg, m, group, j.dt, j.bias))
        return c->k ? SMELT_OK : ir_node_fail(c->n, SMELT_ERR_NOMEM, "out of memory");
    /* One thread per workgroup: the unit's accumulators on the stack, in L1 */
    if (c->target->wg_size > 1 || j.mb * j.ow * (int64_t)smelt_dtype_size(j.dt) > CONV_STACK_BYTES) {
        j.acc = lower_scratch(c, j.dt, ir_tensor_numel(y));
        if (j.acc < 0) return ir_node_fail(c->n, SMELT_ERR_NOMEM, "out of memory");
    }
    ir_shape units = {.rank = j.ns + 2};
    units.dim[0] = x->shape.dim[0];
    units.dim[1] = j.units;
    for (int d = 0; d < j.ns - 1; d++) units.dim[2 + d] = j.w.out[d];
    units.dim[j.ns + 1] = 1;
    int64_t taps = 1;
    for (int d = 0; d < j.ns; d++) taps *= j.w.kernel[d];
    lower_parallel_for(c, &units, 2 * j.mb * j.ow * j.cg * taps, conv_body, &j);
    return c->k ? SMELT_OK : ir_node_fail(c->n, SMELT_ERR_NOMEM, "out of memory");
}

/* ---- sliding windows ---------------------------------------------------- */

/* List attribute `name` into out[0..cap) (`def` in every slot when absent) and its count into *cnt
 * (-1 when absent); with `checked`, each value in min..2^40. */
static smelt_status list_attr(const ir_node *n, const char *name, int cap, int64_t def, bool checked, int64_t min,
                              int64_t *out, int *cnt)
{
    const int64_t *v;
    int c = *cnt = ir_attr_ints(n, name, &v);
    for (int i = 0; i < cap; i++) out[i] = def;
    if (c < 0) return SMELT_OK;
    if (c > cap) return ir_node_fail(n, SMELT_ERR_MODEL, "attribute %s has %d values, at most %d", name, c, cap);
    for (int i = 0; i < c; i++) {
        if (checked && (v[i] < min || v[i] > SMELT_MAX_ELEMS))
            return ir_node_fail(n, SMELT_ERR_MODEL, "attribute %s[%d] = %lld must be in %lld..2^40", name, i,
                                (long long)v[i], (long long)min);
        out[i] = v[i];
    }
    return SMELT_OK;
}

smelt_status parse_window(const ir_graph *g, const ir_node *n, void *params)
{
    (void)g;
    window_params *p = params;
    TRY(list_attr(n, "kernel_shape", WINDOW_MAX_SPATIAL, 0, false, 0, p->kernel, &p->n_kernel));
    TRY(list_attr(n, "strides", WINDOW_MAX_SPATIAL, 1, true, 1, p->strides, &p->n_strides));
    TRY(list_attr(n, "dilations", WINDOW_MAX_SPATIAL, 1, true, 1, p->dilations, &p->n_dilations));
    TRY(list_attr(n, "pads", 2 * WINDOW_MAX_SPATIAL, 0, true, 0, p->pads, &p->n_pads));
    TRY(list_attr(n, "output_padding", WINDOW_MAX_SPATIAL, 0, true, 0, p->output_padding, &p->n_output_padding));
    TRY(list_attr(n, "output_shape", WINDOW_MAX_SPATIAL + 2, 0, false, 0, p->output_shape, &p->n_output_shape));
    const char *ap = ir_attr_string(n, "auto_pad", "NOTSET");
    if (!strcmp(ap, "NOTSET") || !*ap) p->auto_pad = PAD_NOTSET;
    else if (!strcmp(ap, "SAME_UPPER")) p->auto_pad = PAD_SAME_UPPER;
    else if (!strcmp(ap, "SAME_LOWER")) p->auto_pad = PAD_SAME_LOWER;
    else if (!strcmp(ap, "VALID")) p->auto_pad = PAD_VALID;
    else return ir_node_fail(n, SMELT_ERR_MODEL, "auto_pad '%.40s' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID", ap);
    p->ceil_mode = ir_attr_int(n, "ceil_mode", 0) != 0;
    p->group = ir_attr_int(n, "group", 1);
    if (p->group < 1) return ir_node_fail(n, SMELT_ERR_MODEL, "group %lld must be >= 1", (long long)p->group);
    p->storage_order = ir_attr_int(n, "storage_order", 0) != 0;
    p->count_include_pad = ir_attr_int(n, "count_include_pad", 0) != 0;
    p->p = ir_attr_int(n, "p", 2);
    if (p->p < 1) return ir_node_fail(n, SMELT_ERR_MODEL, "attribute p = %lld must be >= 1", (long long)p->p);
    return SMELT_OK;
}

smelt_status window_params_of(const ir_graph *g, const ir_node *n, window_params *scratch, const window_params **p)
{
    const void *v;
    TRY(ir_node_params_get(g, n, scratch, &v));
    *p = v;
    return SMELT_OK;
}

/* describe_window's output: appended at *len, within cap (NUL kept). */
static void dw_printf(char *buf, size_t cap, size_t *len, const char *fmt, ...) DIAG_PRINTF(4, 5);
static void dw_printf(char *buf, size_t cap, size_t *len, const char *fmt, ...)
{
    if (*len + 1 >= cap) return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(buf + *len, cap - *len, fmt, ap);
    va_end(ap);
    *len = k < 0 ? cap - 1 : *len + (size_t)k;
    if (*len > cap - 1) *len = cap - 1;
}

/* A list as "3x3", or one number when every entry is the same. */
static void dw_ints(char *buf, size_t cap, size_t *len, const char *label, const int64_t *v, int n, const char *sep)
{
    bool same = true;
    for (int i = 1; i < n; i++) same &= v[i] == v[0];
    dw_printf(buf, cap, len, "%s", label);
    for (int i = 0; i < (same ? (n > 0) : n); i++) dw_printf(buf, cap, len, "%s%lld", i ? sep : "", (long long)v[i]);
}

void describe_window(const ir_graph *g, const ir_node *n, char *buf, size_t cap)
{
    size_t len = 0;
    if (!cap) return;
    buf[0] = 0;
    window_params scratch;
    const window_params *p;
    if (window_params_of(g, n, &scratch, &p) != SMELT_OK) return;
    bool conv = n->op == OP_Conv || n->op == OP_ConvTranspose;
    if (!conv && p->n_kernel < 0) return; /* no window to describe */
    ir_shape ws = conv && n->n_in > 1 ? ir_tensor_logical_shape(&g->tensors[n->in[1]]) : (ir_shape){0};
    const ir_shape *w = conv && n->n_in > 1 ? &ws : NULL;
    if (p->n_kernel > 0) {
        for (int i = 0; i < p->n_kernel; i++) dw_printf(buf, cap, &len, "%s%lld", i ? "x" : ": ", (long long)p->kernel[i]);
    } else if (w && w->rank > 2) {
        for (int i = 2; i < w->rank; i++) dw_printf(buf, cap, &len, "%s%lld", i > 2 ? "x" : ": ", (long long)w->dim[i]);
    }
    if (len == 0) dw_printf(buf, cap, &len, ":");
    if (p->n_strides > 0) dw_ints(buf, cap, &len, " stride ", p->strides, p->n_strides, "x");
    else dw_printf(buf, cap, &len, " stride 1");
    if (p->n_pads > 0) dw_ints(buf, cap, &len, " pad ", p->pads, p->n_pads, ",");
    if (p->n_dilations > 0 && (p->dilations[0] != 1 || p->n_dilations > 1)) {
        bool ones = true;
        for (int i = 0; i < p->n_dilations; i++) ones &= p->dilations[i] == 1;
        if (!ones) dw_ints(buf, cap, &len, " dilation ", p->dilations, p->n_dilations, "x");
    }
    if (p->group != 1) dw_printf(buf, cap, &len, " group %lld", (long long)p->group);
    const ir_shape *x = &g->tensors[n->in[0]].shape, *y = &g->tensors[n->out[0]].shape;
    if (conv && x->rank > 1 && y->rank > 1)
        dw_printf(buf, cap, &len, ", %lld to %lld channels", (long long)x->dim[1], (long long)y->dim[1]);
}

/* A list attribute given for each of `want` values (spatial dims, or twice that for pads). */
static smelt_status list_count(const ir_node *n, const char *name, int cnt, int want)
{
    if (cnt >= 0 && cnt != want)
        return ir_node_fail(n, SMELT_ERR_MODEL, "attribute %s has %d values, expected %d", name, cnt, want);
    return SMELT_OK;
}

/* Strides, dilations and pads of params p checked against ns spatial dims, into w. */
static smelt_status window_lists(const ir_node *n, const window_params *p, int ns, window_geom *w, int64_t *pads)
{
    TRY(list_count(n, "strides", p->n_strides, ns));
    TRY(list_count(n, "dilations", p->n_dilations, ns));
    TRY(list_count(n, "pads", p->n_pads, 2 * ns));
    for (int i = 0; i < ns; i++) {
        w->stride[i] = p->strides[i];
        w->dilation[i] = p->dilations[i];
        pads[i] = p->n_pads < 0 ? 0 : p->pads[i];
        pads[ns + i] = p->n_pads < 0 ? 0 : p->pads[ns + i];
    }
    w->group = p->group;
    return SMELT_OK;
}

/* The dilated window (k - 1) * d + 1 of spatial dim i, within the size limit. */
static smelt_status dilated_window(const ir_node *n, int64_t k, int64_t d, int i, int64_t *out)
{
    if (k < 1 || k > SMELT_MAX_ELEMS || !size_mul(k - 1, d, out) || *out >= SMELT_MAX_ELEMS)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "kernel %lld dilated by %lld in spatial dim %d exceeds 2^40 elements",
                            (long long)k, (long long)d, i);
    ++*out;
    return SMELT_OK;
}

smelt_status window_geom_get(const ir_graph *g, const ir_node *n, window_geom *w)
{
    const ir_tensor *x = ir_in(g, n, 0);
    char s1[160], s2[160];
    if (!x) return ir_node_fail(n, SMELT_ERR_MODEL, "missing required input 0 (X)");
    int r = x->shape.rank;
    if (r < 3 || r - 2 > WINDOW_MAX_SPATIAL)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "input X %s must have rank 3..%d ([N, C, spatial...])",
                            infer_shp(&x->shape, s1), WINDOW_MAX_SPATIAL + 2);
    window_params scratch;
    const window_params *p;
    TRY(window_params_of(g, n, &scratch, &p));
    memset(w, 0, sizeof *w);
    int ns = w->nsp = r - 2;
    for (int i = 0; i < ns; i++) w->in[i] = x->shape.dim[i + 2];
    bool is_conv = n->op == OP_Conv;
    int64_t ks[WINDOW_MAX_SPATIAL];
    const int64_t *kv = p->kernel;
    int kn = p->n_kernel;
    if (is_conv) {
        const ir_tensor *wt = ir_in(g, n, 1);
        if (!wt) return ir_node_fail(n, SMELT_ERR_MODEL, "missing required input 1 (W)");
        ir_shape ws = ir_tensor_logical_shape(wt); /* a weight packed for conv_gemm: its [M, C, k...] */
        if (ws.rank != r)
            return ir_node_fail(n, SMELT_ERR_SHAPE, "weight W %s must have the rank of X %s",
                                infer_shp(&ws, s1), infer_shp(&x->shape, s2));
        for (int i = 0; i < ns; i++) ks[i] = ws.dim[i + 2];
        if (kn >= 0) {
            bool ok = kn == ns;
            for (int i = 0; ok && i < ns; i++) ok = infer_dim_eq(kv[i], ks[i]);
            if (!ok) {
                ir_shape kshape = {.rank = kn > IR_MAX_RANK ? IR_MAX_RANK : kn};
                for (int i = 0; i < kshape.rank; i++) kshape.dim[i] = kv[i];
                return ir_node_fail(n, SMELT_ERR_SHAPE, "kernel_shape %s does not match weight shape %s",
                                    infer_shp(&kshape, s1), infer_shp(&ws, s2));
            }
        }
    } else {
        if (kn < 0) return ir_node_fail(n, SMELT_ERR_MODEL, "attribute kernel_shape is required");
        if (kn != ns)
            return ir_node_fail(n, SMELT_ERR_SHAPE, "kernel_shape has %d values but X %s has %d spatial dims", kn,
                                infer_shp(&x->shape, s1), ns);
        for (int i = 0; i < ns; i++) ks[i] = kv[i];
    }
    for (int i = 0; i < ns; i++) {
        if (ks[i] < 1) return ir_node_fail(n, SMELT_ERR_SHAPE, "kernel size %lld in spatial dim %d must be >= 1", (long long)ks[i], i);
        w->kernel[i] = ks[i];
    }
    int64_t pads[2 * WINDOW_MAX_SPATIAL];
    TRY(window_lists(n, p, ns, w, pads));
    if (!is_conv) w->group = 1;
    bool ceil_mode = p->ceil_mode;
    window_pad mode = p->auto_pad;
    for (int i = 0; i < ns; i++) {
        int64_t in = w->in[i], s = w->stride[i], dk = 0;
        TRY(dilated_window(n, w->kernel[i], w->dilation[i], i, &dk));
        if (in < 0) {
            w->out[i] = -1;
            continue;
        }
        if (mode == PAD_NOTSET) {
            w->pad_lo[i] = pads[i];
            w->pad_hi[i] = pads[ns + i];
            int64_t span = in + w->pad_lo[i] + w->pad_hi[i] - dk;
            if (span < 0)
                return ir_node_fail(n, SMELT_ERR_SHAPE, "window %lld (dilated) is larger than padded input %lld in spatial dim %d",
                                    (long long)dk, (long long)(in + w->pad_lo[i] + w->pad_hi[i]), i);
            if (ceil_mode) {
                w->out[i] = (span + s - 1) / s + 1;
                if ((w->out[i] - 1) * s >= in + w->pad_lo[i]) w->out[i]--;
            } else {
                w->out[i] = span / s + 1;
            }
        } else if (mode == PAD_VALID) {
            if (in < dk)
                return ir_node_fail(n, SMELT_ERR_SHAPE, "window %lld is larger than input %lld in spatial dim %d (auto_pad VALID)",
                                    (long long)dk, (long long)in, i);
            w->out[i] = (in - dk) / s + 1;
        } else {
            w->out[i] = (in + s - 1) / s;
            int64_t total = (w->out[i] - 1) * s + dk - in;
            if (total < 0) total = 0;
            w->pad_lo[i] = mode == PAD_SAME_UPPER ? total / 2 : total - total / 2;
            w->pad_hi[i] = total - w->pad_lo[i];
        }
    }
    return SMELT_OK;
}

ir_shape window_out_shape(const ir_shape *x, int64_t channels, const window_geom *w)
{
    ir_shape s = {.rank = w->nsp + 2, .dim = {x->dim[0], channels}};
    for (int i = 0; i < w->nsp; i++) s.dim[i + 2] = w->out[i];
    return s;
}

/* X and W present, of a dtype in `types`, and W (and the optional bias) of X's dtype. */
static smelt_status conv_operands(const ir_graph *g, const ir_node *n, unsigned types)
{
    TRY(infer_need_input(g, n, 0, "X"));
    TRY(infer_need_input(g, n, 1, "W"));
    const ir_tensor *x = ir_in(g, n, 0), *b = ir_in(g, n, 2);
    TRY(infer_need_dtype(n, x, "input", types));
    TRY(infer_need_same_dtype(n, x, ir_in(g, n, 1)));
    if (b) TRY(infer_need_same_dtype(n, x, b));
    return SMELT_OK;
}

smelt_status infer_Conv(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(conv_operands(g, n, DT_FLOAT | DT(I32)) /* int32: ConvInteger, QLinearConv (onnx/quantized.c) */);
    const ir_tensor *x = ir_in(g, n, 0), *wt = ir_in(g, n, 1), *b = ir_in(g, n, 2);
    ir_shape ws = ir_tensor_logical_shape(wt);
    window_geom w;
    TRY(window_geom_get(g, n, &w));
    char s1[160], s2[160];
    int64_t group = w.group;
    int64_t c = x->shape.dim[1], m = ws.dim[0];
    if (c >= 0 && c % group)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "group %lld does not divide the %lld input channels", (long long)group, (long long)c);
    if (m % group)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "group %lld does not divide the %lld output channels of W %s",
                            (long long)group, (long long)m, infer_shp(&ws, s1));
    if (c >= 0 && ws.dim[1] * group != c)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "X %s has %lld channels but W %s with group %lld expects %lld",
                            infer_shp(&x->shape, s1), (long long)c, infer_shp(&ws, s2), (long long)group,
                            (long long)(ws.dim[1] * group));
    if (b && (b->shape.rank != 1 || b->shape.dim[0] != m))
        return ir_node_fail(n, SMELT_ERR_SHAPE, "bias B %s must have shape [%lld]", infer_shp(&b->shape, s1), (long long)m);
    ir_shape out = window_out_shape(&x->shape, m, &w);
    infer_put_out(g, n, 0, x->dtype, &out);
    return SMELT_OK;
}

smelt_status convtranspose_geom_get(const ir_graph *g, const ir_node *n, window_geom *w)
{
    const ir_tensor *x = ir_in(g, n, 0), *wt = ir_in(g, n, 1);
    char s1[160], s2[160];
    int r = x->shape.rank;
    if (r < 3 || r - 2 > WINDOW_MAX_SPATIAL)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "input X %s must have rank 3..%d ([N, C, spatial...])",
                            infer_shp(&x->shape, s1), WINDOW_MAX_SPATIAL + 2);
    if (wt->shape.rank != r)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "weight W %s must have the rank of X %s", infer_shp(&wt->shape, s1),
                            infer_shp(&x->shape, s2));
    window_params scratch;
    const window_params *p;
    TRY(window_params_of(g, n, &scratch, &p));
    memset(w, 0, sizeof *w);
    int ns = w->nsp = r - 2;
    for (int i = 0; i < ns; i++) {
        w->in[i] = x->shape.dim[i + 2];
        w->kernel[i] = wt->shape.dim[i + 2];
    }
    int kn = p->n_kernel;
    if (kn >= 0) {
        bool ok = kn == ns;
        for (int i = 0; ok && i < ns; i++) ok = p->kernel[i] == w->kernel[i];
        if (!ok) return ir_node_fail(n, SMELT_ERR_SHAPE, "kernel_shape does not match weight shape %s", infer_shp(&wt->shape, s1));
    }
    int64_t pads[2 * WINDOW_MAX_SPATIAL], oshape[WINDOW_MAX_SPATIAL];
    const int64_t *opad = p->output_padding;
    TRY(window_lists(n, p, ns, w, pads));
    TRY(list_count(n, "output_padding", p->n_output_padding, ns));
    int osn = p->n_output_shape;
    if (osn >= 0) {
        /* output_shape may list only the spatial dims, or all of them */
        if (osn != ns && osn != r)
            return ir_node_fail(n, SMELT_ERR_MODEL, "attribute output_shape has %d values, expected %d", osn, ns);
        for (int i = 0; i < ns; i++) oshape[i] = p->output_shape[osn - ns + i];
    }
    bool same = p->auto_pad == PAD_SAME_UPPER || p->auto_pad == PAD_SAME_LOWER;
    for (int i = 0; i < ns; i++) {
        int64_t dk = 0, full;
        TRY(dilated_window(n, w->kernel[i], w->dilation[i], i, &dk));
        if (!size_mul(w->stride[i], w->in[i] - 1, &full) || full > SMELT_MAX_ELEMS)
            return ir_node_fail(n, SMELT_ERR_SHAPE, "stride %lld times input %lld in spatial dim %d exceeds 2^40 elements",
                                (long long)w->stride[i], (long long)w->in[i], i);
        full += opad[i] + dk;
        if (osn >= 0 || same) {
            int64_t target = oshape[i];
            if (osn < 0 && !size_mul(w->in[i], w->stride[i], &target)) target = -1;
            if (target < 1 || target > SMELT_MAX_ELEMS)
                return ir_node_fail(n, SMELT_ERR_SHAPE, "output size %lld of spatial dim %d must be in 1..2^40",
                                    (long long)target, i);
            /* may be negative: the output then extends past the full result */
            int64_t total = full - target, half = total >= 0 ? total / 2 : -((-total + 1) / 2);
            bool upper = p->auto_pad == PAD_SAME_UPPER;
            w->pad_lo[i] = upper ? half : total - half;
            w->pad_hi[i] = total - w->pad_lo[i];
            w->out[i] = target;
        } else {
            if (p->auto_pad != PAD_VALID) {
                w->pad_lo[i] = pads[i];
                w->pad_hi[i] = pads[ns + i];
            }
            w->out[i] = full - w->pad_lo[i] - w->pad_hi[i];
            if (w->out[i] < 1) return ir_node_fail(n, SMELT_ERR_SHAPE, "pads leave no output in spatial dim %d", i);
        }
    }
    return SMELT_OK;
}

smelt_status infer_ConvTranspose(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(conv_operands(g, n, DT_FLOAT));
    const ir_tensor *x = ir_in(g, n, 0), *wt = ir_in(g, n, 1), *b = ir_in(g, n, 2);
    window_geom w;
    TRY(convtranspose_geom_get(g, n, &w));
    char s1[160], s2[160];
    int64_t group = w.group;
    int64_t c = x->shape.dim[1], m = wt->shape.dim[1] * group;
    if (!infer_dim_eq(wt->shape.dim[0], c) || c % group)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "X %s has %lld channels but W %s has %lld input channels (group %lld)",
                            infer_shp(&x->shape, s1), (long long)c, infer_shp(&wt->shape, s2), (long long)wt->shape.dim[0], (long long)group);
    if (b && (b->shape.rank != 1 || b->shape.dim[0] != m))
        return ir_node_fail(n, SMELT_ERR_SHAPE, "bias B %s must have shape [%lld]", infer_shp(&b->shape, s1), (long long)m);
    ir_shape out = window_out_shape(&x->shape, m, &w);
    infer_put_out(g, n, 0, x->dtype, &out);
    return SMELT_OK;
}
