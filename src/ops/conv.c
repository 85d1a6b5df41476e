/*
 * conv.c — Conv on any target: which form each convolution takes (lower_Conv:
 * the packed GEMM of ops/conv_gemm.c, the depthwise kernel, the flat 2-D form,
 * the wide 1-D form, else the direct loop nest below) and the direct forms
 * themselves (1-D/2-D/3-D..., groups, strides, dilations, pads, bias). The
 * sliding-window geometry and the shape rules of Conv and ConvTranspose are in
 * ops/conv_window.c.
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
    if (wt->enc.kind == IR_ENC_KPAIRS || wt->enc.kind == IR_ENC_KQUADS)
        return conv_cols_lower(c, &j.w); /* an integer conv on int16 pairs or uint8 x int8 quads */
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
