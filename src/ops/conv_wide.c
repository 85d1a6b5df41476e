/*
 * conv_wide.c — 1-D convolutions the row form does badly, on the CPU: wide
 * kernels (the framed STFT / filter-bank front ends of audio models: kernel
 * 256..512, stride a hop of 128..160, one input channel, a few hundred output
 * channels), and short rows (fewer than CONVW_SHORT_ROW outputs, where the
 * row form's vector loop over the outputs has nothing to run over: silero's
 * k3 convs over 5 frames and 129 channels).
 *
 * requires: shapes inferred by infer_Conv; one thread per workgroup.
 * guarantees: y[n][m][o] = B[m] + sum over c, k of W[m][c][k] * X[n][c][o*s + k - p]
 *           (zero outside X), every output stored once through lower_store.
 *
 * The row form runs its unit-stride loop over the outputs, which here are a
 * hop apart in X and few per row, and loops over the taps with a bound test
 * each: about 0.1 GFLOP/s. This form runs the unit-stride loop over the taps
 * instead, where both W[m][c][k] and X[..][o*s + k - p] are contiguous. A
 * unit is MB output channels by OB outputs; its MB * OB dot products are kept
 * as V partial sums each (lane kk takes the taps k with k % V == kk), in
 * workgroup memory that the compiler holds in registers across the tap loop.
 * Per step of V taps: MB loads of W, OB loads of X, MB * OB vector
 * multiply-adds. The lanes are folded in order at the end (a fixed order: the
 * interpreter and the compiled code agree). A plain X is read in place:
 * units whose windows lie inside it take a path with no bound test, the
 * others (pads) clamp and select. An X computed inline (a fused producer such
 * as silero's reflection Pad) is evaluated once per element into a copy of
 * the unit's window, (OB - 1)*s + k elements with zeros outside X, per input
 * channel; the tap loop then reads the copy. (Reading X in place is about
 * 2.5x faster on oww_melspec than the copy, whose loop the C compiler
 * vectorizes only behind an aliasing test between the two workgroup arrays.)
 * Patch form (short rows, group 1, a plain W): the same dot products, over
 * all cg*k (channel, tap) pairs at once: each of the unit's OB outputs gets
 * its patch X[n][c][o*s + t*d - p] copied to workgroup memory as one row of
 * cg*k (zeros outside X), W is read as the [M, cg*k] matrix it is in memory,
 * and the unit loops over every block of output channels with the patches
 * copied once.
 */
#include "lower/lower.h"
#include "ops/conv.h"

#define CONVW_V 8    /* partial sums per dot product (one vector of floats on AVX2) */
#define CONVW_MB 4   /* output channels per unit */
#define CONVW_OB 4   /* outputs per unit */
#define CONVW_MIN_KERNEL 17 /* narrower kernels take the row form, which unrolls them */
#define CONVW_STACK_BYTES (64 * 1024)
#define CONVW_SHORT_ROW 16  /* patch form: rows of fewer outputs than this */

typedef struct convw_job {
    int64_t in, out, k, s, d, p, cg, mg, m, mb, ob;
    bool patch;          /* the patch form: the tile holds each output's (channel, tap) patch */
    int64_t red, tstride; /* taps summed per channel step (k, or cg*k for patches); patch stride in the tile */
    int64_t tile;        /* X not plain: its copied window, (OB - 1)*s + k; else 0 */
    int64_t olo, ohi;    /* outputs whose window lies inside X, [olo, ohi] */
    bool hoist;          /* copied window of the only input channel, shared by all output channels */
    kir_val kk;          /* the tap loop of the unguarded path reading X in place, once built */
    smelt_dtype dt;
    bool bias;
} convw_job;

/* Where a unit's taps read X: a copy of its window (tile >= 0), or X itself
 * at start[o] + k, guarded (zero outside X) or not. */
typedef struct convw_src {
    int tile;
    bool guarded;
    kir_val n, cin;
    const kir_val *start;
} convw_src;

/* acc[(r*OB + o)*V + kk] += W[m_r][c][k0 + kk] * x(o, k0 + kk) for kk in [0, len). */
static void convw_taps(lower_ctx *c, convw_job *j, int acc, const convw_src *src, kir_val ci, const kir_val *m,
                       kir_val k0, int64_t len)
{
    kir_kernel *K = c->k;
    kir_val kk = kir_loop_begin_parallel(K, kir_idx(K, 0), kir_idx(K, len));
    if (src->tile < 0 && !src->guarded && !j->kk) j->kk = kk;
    kir_val k = kir_add(K, k0, kk);
    kir_val wv[CONVW_MB], xv[CONVW_OB];
    /* patches: W read as [M, cg*k], its rows being contiguous (W is plain),
     * the flat index on a dim longer than 1 (lower_load drops the others) */
    for (int r = 0; r < j->mb; r++) {
        kir_val wi[3] = {m[r], ci, k};
        if (j->patch && j->k == 1) {
            wi[1] = k;
            wi[2] = kir_idx(K, 0);
        } else if (j->patch) {
            wi[1] = kir_idx(K, 0);
        }
        wv[r] = lower_load(c, 1, wi);
    }
    for (int o = 0; o < j->ob; o++) {
        if (src->tile >= 0) {
            xv[o] = kir_load(K, src->tile, kir_add(K, kir_idx(K, j->patch ? o * j->tstride : o * j->s), k));
            continue;
        }
        kir_val pos = kir_add(K, src->start[o], k);
        if (!src->guarded) {
            xv[o] = lower_load(c, 0, (const kir_val[]){src->n, src->cin, pos});
            continue;
        }
        kir_val ok = kir_binary(K, KIR_AND, kir_binary(K, KIR_GE, pos, kir_idx(K, 0)), kir_binary(K, KIR_LT, pos, kir_idx(K, j->in)));
        xv[o] = kir_select(K, ok, lower_load(c, 0, (const kir_val[]){src->n, src->cin, lower_clamp(K, pos, j->in)}),
                           kir_const_f(K, j->dt, 0));
    }
    for (int r = 0; r < j->mb; r++)
        for (int o = 0; o < j->ob; o++) {
            kir_val at = kir_add(K, kir_idx(K, (r * j->ob + o) * CONVW_V), kk);
            kir_store(K, acc, at, kir_binary(K, KIR_ADD, kir_load(K, acc, at), kir_binary(K, KIR_MUL, wv[r], xv[o])));
        }
    kir_loop_end(K);
}

/* The window of channel cin from X position start on, zero outside X: the
 * input's producer (a fused Pad, say) runs once per element, and the taps
 * read the copy unguarded. */
static void convw_fill(lower_ctx *c, const convw_job *j, int tile, kir_val n, kir_val cin, kir_val start)
{
    kir_kernel *K = c->k;
    kir_val zero_i = kir_idx(K, 0);
    if (j->patch) {
        /* patch o: tile[o*tstride + ci*k + t] = X[n][ci][start + o*s + t*d] */
        for (int o = 0; o < j->ob; o++) {
            kir_val ci = kir_loop_begin(K, zero_i, kir_idx(K, j->cg), kir_idx(K, 1));
            kir_val t = kir_loop_begin_parallel(K, zero_i, kir_idx(K, j->k));
            kir_val pos = kir_add(K, kir_add(K, start, kir_idx(K, o * j->s)), kir_mul(K, t, kir_idx(K, j->d)));
            kir_val ok = kir_binary(K, KIR_AND, kir_binary(K, KIR_GE, pos, zero_i), kir_binary(K, KIR_LT, pos, kir_idx(K, j->in)));
            kir_val x = lower_load(c, 0, (const kir_val[]){n, ci, lower_clamp(K, pos, j->in)});
            kir_val at = kir_add(K, kir_idx(K, o * j->tstride), kir_add(K, kir_mul(K, ci, kir_idx(K, j->k)), t));
            kir_store(K, tile, at, kir_select(K, ok, x, kir_const_f(K, j->dt, 0)));
            kir_loop_end(K);
            kir_loop_end(K);
        }
        return;
    }
    kir_val t = kir_loop_begin_parallel(K, zero_i, kir_idx(K, j->tile));
    kir_val pos = kir_add(K, start, t);
    kir_val ok = kir_binary(K, KIR_AND, kir_binary(K, KIR_GE, pos, zero_i), kir_binary(K, KIR_LT, pos, kir_idx(K, j->in)));
    kir_val x = lower_load(c, 0, (const kir_val[]){n, cin, lower_clamp(K, pos, j->in)});
    kir_store(K, tile, t, kir_select(K, ok, x, kir_const_f(K, j->dt, 0)));
    kir_loop_end(K);
}

/* Every channel and tap of the unit into acc. */
static void convw_dots(lower_ctx *c, convw_job *j, int acc, convw_src src, kir_val cbase, const kir_val *m)
{
    kir_kernel *K = c->k;
    kir_val zero_i = kir_idx(K, 0);
    kir_val ci = kir_loop_begin(K, zero_i, kir_idx(K, j->patch ? 1 : j->cg), kir_idx(K, 1));
    src.cin = kir_add(K, cbase, ci);
    if (src.tile >= 0 && !j->hoist) convw_fill(c, j, src.tile, src.n, src.cin, src.start[0]);
    int64_t full = j->red / CONVW_V * CONVW_V;
    kir_val k0 = kir_loop_begin(K, zero_i, kir_idx(K, full), kir_idx(K, CONVW_V));
    convw_taps(c, j, acc, &src, ci, m, k0, CONVW_V);
    kir_loop_end(K);
    if (full < j->red) convw_taps(c, j, acc, &src, ci, m, kir_idx(K, full), j->red - full);
    kir_loop_end(K); /* ci */
}

/* Unit idx = {n, channel block, output block, 0}; hoisted: {n, 0, output
 * block, 0}, the window copied once and every channel block in a loop. */
static void convw_body(lower_ctx *c, const kir_val *idx, void *user)
{
    convw_job *j = user;
    kir_kernel *K = c->k;
    kir_val zero_i = kir_idx(K, 0), fzero = kir_const_f(K, j->dt, 0);
    kir_val n = idx[0], o0 = kir_mul(K, idx[2], kir_idx(K, j->ob));
    int acc = kir_smem_add(K, j->dt, j->mb * j->ob * CONVW_V), tile = j->tile ? kir_smem_add(K, j->dt, j->tile) : -1;
    kir_val first = kir_binary(K, KIR_SUB, kir_mul(K, o0, kir_idx(K, j->s)), kir_idx(K, j->p));
    if (j->hoist) convw_fill(c, j, tile, n, zero_i, first);
    kir_val mblk = j->hoist ? kir_loop_begin(K, zero_i, kir_idx(K, (j->m + j->mb - 1) / j->mb), kir_idx(K, 1)) : idx[1];
    kir_val m0 = kir_mul(K, mblk, kir_idx(K, j->mb));
    kir_val cbase = kir_mul(K, kir_binary(K, KIR_DIV, m0, kir_idx(K, j->mg)), kir_idx(K, j->cg));
    kir_val p = kir_loop_begin_parallel(K, zero_i, kir_idx(K, j->mb * j->ob * CONVW_V));
    kir_store(K, acc, p, fzero);
    kir_loop_end(K);
    /* channels past M (MB does not divide it: one group only) compute channel M - 1 again, unstored */
    kir_val m[CONVW_MB];
    for (int r = 0; r < j->mb; r++) {
        m[r] = kir_add(K, m0, kir_idx(K, r));
        if (j->m % j->mb) m[r] = kir_binary(K, KIR_MIN, m[r], kir_idx(K, j->m - 1));
    }
    /* outputs past the last compute from the zeros or data after it, unstored */
    kir_val start[CONVW_OB];
    for (int b = 0; b < j->ob; b++)
        start[b] = kir_binary(K, KIR_SUB, kir_mul(K, kir_add(K, o0, kir_idx(K, b)), kir_idx(K, j->s)), kir_idx(K, j->p));
    convw_src src = {.tile = -1, .n = n, .start = start};
    if (j->tile) {
        src.tile = tile;
        convw_dots(c, j, acc, src, cbase, m);
    } else if (j->olo <= j->ohi) {
        /* the whole block's windows inside X: no bound tests */
        kir_val inside = kir_binary(K, KIR_AND, kir_binary(K, KIR_GE, o0, kir_idx(K, j->olo)),
                                    kir_binary(K, KIR_LE, kir_add(K, o0, kir_idx(K, j->ob - 1)), kir_idx(K, j->ohi)));
        kir_if_begin(K, inside);
        convw_dots(c, j, acc, src, cbase, m);
        kir_else(K);
        src.guarded = true;
        convw_dots(c, j, acc, src, cbase, m);
        kir_if_end(K);
    } else {
        src.guarded = true;
        convw_dots(c, j, acc, src, cbase, m);
    }
    for (int r = 0; r < j->mb; r++) {
        kir_val mr = kir_add(K, m0, kir_idx(K, r));
        if (j->m % j->mb) kir_if_begin(K, kir_binary(K, KIR_LT, mr, kir_idx(K, j->m)));
        kir_val init = j->bias ? lower_load(c, 2, &mr) : fzero;
        for (int b = 0; b < j->ob; b++) {
            kir_val ob = kir_add(K, o0, kir_idx(K, b));
            if (j->out % j->ob) kir_if_begin(K, kir_binary(K, KIR_LT, ob, kir_idx(K, j->out)));
            kir_val sum = init;
            for (int kk = 0; kk < CONVW_V; kk++)
                sum = kir_binary(K, KIR_ADD, sum, kir_load(K, acc, kir_idx(K, (r * j->ob + b) * CONVW_V + kk)));
            lower_store(c, 0, (const kir_val[]){n, mr, ob}, sum);
            if (j->out % j->ob) kir_if_end(K);
        }
        if (j->m % j->mb) kir_if_end(K);
    }
    if (j->hoist) kir_loop_end(K); /* mblk */
}

bool conv_wide_1d(lower_ctx *c, const window_geom *w, int64_t batch, int64_t cg, int64_t m, int64_t group, smelt_dtype dt,
                  bool bias)
{
    if (c->target->wg_size > 1 || w->nsp != 1) return false;
    convw_job j = {.in = w->in[0], .out = w->out[0], .k = w->kernel[0], .s = w->stride[0], .d = w->dilation[0],
                   .p = w->pad_lo[0], .cg = cg, .mg = m / group, .m = m, .ob = CONVW_OB, .dt = dt, .bias = bias};
    int64_t es = (int64_t)smelt_dtype_size(dt);
    if (j.d == 1 && j.k >= CONVW_MIN_KERNEL) {
        j.red = j.k;
    } else {
        /* short rows: the patch form, or the row form */
        j.tstride = (cg * j.k + CONVW_V - 1) / CONVW_V * CONVW_V;
        if (group != 1 || j.out >= CONVW_SHORT_ROW || !lower_input_is_plain(c, 1) ||
            (j.ob * j.tstride + CONVW_MB * j.ob * CONVW_V) * es > CONVW_STACK_BYTES)
            return false;
        j.patch = j.hoist = true;
        j.mb = CONVW_MB;
        j.red = cg * j.k;
        j.tile = j.ob * j.tstride;
        ir_shape units = {.rank = 4, .dim = {batch, 1, (j.out + j.ob - 1) / j.ob, 1}};
        lower_parallel_for(c, &units, 2 * m * j.ob * j.red, convw_body, &j);
        return true;
    }
    if (group == 1) j.mb = CONVW_MB;
    else j.mb = j.mg % 4 == 0 ? 4 : j.mg % 2 == 0 ? 2 : 1;
    /* o*s - p >= 0 and o*s + k - 1 - p < in */
    j.olo = (j.p + j.s - 1) / j.s;
    j.ohi = j.in - j.k + j.p >= 0 ? (j.in - j.k + j.p) / j.s : -1;
    if (j.ohi > j.out - 1) j.ohi = j.out - 1;
    int64_t tile = (j.ob - 1) * j.s + j.k;
    bool tile_fits = (tile + j.mb * j.ob * CONVW_V) * es <= CONVW_STACK_BYTES;
    ir_shape units = {.rank = 4, .dim = {batch, (m + j.mb - 1) / j.mb, (j.out + j.ob - 1) / j.ob, 1}};
    int64_t work = 2 * j.mb * j.ob * cg * j.k;
    /* X in place where its elements are a unit-stride walk along the taps
     * (plain, or a fused reshape); else the copied window */
    int mark = lower_mark(c);
    if (lower_input_is_plain(c, 0) || !tile_fits) {
        lower_parallel_for(c, &units, work, convw_body, &j);
        return true;
    }
    if (j.olo <= j.ohi) {
        lower_parallel_for(c, &units, work, convw_body, &j);
        if (!c->k || (j.kk && !lower_reads_across(c->k, j.kk))) return true;
        lower_rollback(c, mark);
    }
    j.tile = tile;
    j.hoist = cg == 1 && group == 1;
    if (j.hoist) {
        units.dim[1] = 1;
        work *= (m + j.mb - 1) / j.mb;
    }
    lower_parallel_for(c, &units, work, convw_body, &j);
    return true;
}
