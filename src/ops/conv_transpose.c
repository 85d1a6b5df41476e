/*
 * conv_transpose.c — ConvTranspose lowerings: the phase form (1-D and 2-D on
 * the CPU) and the gather form (everything else: 3-D and up, GPU targets).
 *
 * requires: shapes inferred by infer_ConvTranspose (convtranspose_geom_get
 *           gives the pads, also after auto_pad / output_shape).
 * guarantees: the output equals
 *     y[n][m][o] = B[m] + sum over c in m's group, taps k with
 *                  o + pad_lo = i*s + k*d, 0 <= i < in, of x[n][c][i] * W[c][m % Mg][k]
 *           per spatial dim; epilogues fused into the node run on every
 *           output element exactly once.
 *
 * Phase form. Along one dim, write the output index o = ρ + s*q (ρ in [0, s),
 * the output phase). Then o + pad_lo - k*d = s*(q + e) with
 *     e = (ρ + pad_lo - k*d) / s
 * exactly when s divides ρ + pad_lo - k*d, which depends on ρ and k only: each
 * output phase is an ordinary correlation of the input with the sub-filter of
 * its taps, y_ρ[q] += W[k] * x[q + e_k], with no divisibility test and no
 * zero multiplies (col2im's scatter and the gather form's 1 - 1/s of wasted
 * taps both vanish). The phases and their taps are known at compile time; the
 * kernel branches once per unit on its row phase, and per row phase unrolls
 * the column phases. A unit is MB output channels of one output row: per
 * column phase, the MB accumulator rows (Qw wide, unit stride) live in
 * workgroup memory; input channels are taken CONVT_CGROUP at a time so each
 * pass over the accumulators adds CONVT_CGROUP * MB multiply-adds per load
 * and store. Each (channel, tap) pair's column loop runs only over the q whose
 * input is in bounds (computed at compile time), so it has no guard and
 * vectorizes; a tap whose input row is out of bounds is skipped by one branch.
 * The row is stored once, column phases interleaved back into unit-stride
 * order, through lower_store (so fused epilogues apply).
 */
#include <stdlib.h>
#include <string.h>

#include "lower/lower.h"
#include "ops/conv.h"

#define CONVT_MB 8          /* output channels per unit */
#define CONVT_CGROUP 4      /* input channels per pass over the accumulators */
#define CONVT_VEC 8         /* accumulator rows start on whole vectors of this many elements */
#define CONVT_STACK_BYTES (64 * 1024)
#define CONVT_MAX_PHASES 16 /* per dim: strides above this take the gather form */
#define CONVT_MAX_TAPS 32   /* per dim: larger kernels take the gather form */

/* A tap of one output phase: kernel index k, input offset e (i = q + e). */
typedef struct convt_tap {
    int64_t k, e;
} convt_tap;

/* One spatial dim of the phase form: per phase its output count and taps. */
typedef struct convt_dim {
    int64_t in, out, s;
    int64_t q[CONVT_MAX_PHASES];   /* outputs of phase ρ: ceil((out - ρ) / s), 0 if out <= ρ */
    int ntaps[CONVT_MAX_PHASES];
    convt_tap taps[CONVT_MAX_PHASES][CONVT_MAX_TAPS];
} convt_dim;

typedef struct convt_phase_job {
    convt_dim h, w;              /* a 1-D ConvTranspose has h = {in 1, out 1, s 1, one tap e 0} */
    int ns;                      /* spatial dims of X: 1 or 2 */
    int64_t cg, mg, mb, qh_max;
    int64_t qws, ld;             /* accumulator stride of a column phase, and of a channel row */
    smelt_dtype dt;
    bool bias;
} convt_phase_job;

static int64_t floor_mod(int64_t a, int64_t b) { return (a % b + b) % b; }

/* Phases and taps of one dim (kernel k, dilation d, pad_lo p). */
static void convt_dim_init(convt_dim *D, int64_t in, int64_t out, int64_t s, int64_t kernel, int64_t d, int64_t p)
{
    D->in = in;
    D->out = out;
    D->s = s;
    for (int64_t r = 0; r < s; r++) {
        D->q[r] = out > r ? (out - r + s - 1) / s : 0;
        D->ntaps[r] = 0;
        for (int64_t k = 0; k < kernel; k++) {
            int64_t t = r + p - k * d;
            if (floor_mod(t, s)) continue;
            int64_t e = t / s; /* exact */
            /* q in [0, Q) reads i = q + e: drop taps that never land in the input */
            if (D->q[r] == 0 || e >= in || D->q[r] - 1 + e < 0) continue;
            D->taps[r][D->ntaps[r]++] = (convt_tap){k, e};
        }
    }
}

/* X or W index of rank ns + 2 from (a, b, row, col): a 1-D op drops the row. */
static void convt_index(const convt_phase_job *j, kir_val *out, kir_val a, kir_val b, kir_val row, kir_val col)
{
    out[0] = a;
    out[1] = b;
    if (j->ns == 2) {
        out[2] = row;
        out[3] = col;
    } else {
        out[2] = col;
    }
}

/* The (channel, tap) passes of row phase ρh for input channels
 * cin .. cin + cgrp - 1 into output channels mloc[0..mb) of their group. */
static void convt_pass(lower_ctx *c, const convt_phase_job *j, int acc, int rh, kir_val n, kir_val qh, kir_val cin,
                       int64_t cgrp, const kir_val *mloc)
{
    kir_kernel *K = c->k;
    kir_val zero_i = kir_idx(K, 0);
    for (int th = 0; th < j->h.ntaps[rh]; th++) {
        convt_tap tap_h = j->h.taps[rh][th];
        kir_val ih = kir_add(K, qh, kir_idx(K, tap_h.e));
        /* rows q in [0, Q) read q + e: test only where that can leave the input */
        bool test = tap_h.e < 0 || j->h.q[rh] - 1 + tap_h.e >= j->h.in;
        if (test)
            kir_if_begin(K, kir_binary(K, KIR_AND, kir_binary(K, KIR_GE, ih, zero_i),
                                       kir_binary(K, KIR_LT, ih, kir_idx(K, j->h.in))));
        for (int rw = 0; rw < j->w.s; rw++)
            for (int tw = 0; tw < j->w.ntaps[rw]; tw++) {
                convt_tap tap_w = j->w.taps[rw][tw];
                int64_t lo = tap_w.e < 0 ? -tap_w.e : 0, hi = j->w.in - tap_w.e;
                if (hi > j->w.q[rw]) hi = j->w.q[rw];
                if (lo >= hi) continue;
                kir_val wv[CONVT_CGROUP][CONVT_MB], wi[4], xi[4];
                for (int64_t g = 0; g < cgrp; g++)
                    for (int r = 0; r < j->mb; r++) {
                        convt_index(j, wi, kir_add(K, cin, kir_idx(K, g)), mloc[r], kir_idx(K, tap_h.k), kir_idx(K, tap_w.k));
                        wv[g][r] = lower_load(c, 1, wi);
                    }
                kir_val q = kir_loop_begin_parallel(K, kir_idx(K, lo), kir_idx(K, hi));
                kir_val sum[CONVT_MB], at[CONVT_MB];
                for (int r = 0; r < j->mb; r++) {
                    at[r] = kir_add(K, kir_idx(K, r * j->ld + rw * j->qws), q);
                    sum[r] = kir_load(K, acc, at[r]);
                }
                for (int64_t g = 0; g < cgrp; g++) {
                    convt_index(j, xi, n, kir_add(K, cin, kir_idx(K, g)), ih, kir_add(K, q, kir_idx(K, tap_w.e)));
                    kir_val x = lower_load(c, 0, xi);
                    for (int r = 0; r < j->mb; r++)
                        sum[r] = kir_binary(K, KIR_ADD, sum[r], kir_binary(K, KIR_MUL, wv[g][r], x));
                }
                for (int r = 0; r < j->mb; r++) kir_store(K, acc, at[r], sum[r]);
                kir_loop_end(K);
            }
        if (test) kir_if_end(K);
    }
}

/* Unit idx = {n, output channel block, row phase ρh, q of the row, 0}. */
static void convt_phase_body(lower_ctx *c, const kir_val *idx, void *user)
{
    const convt_phase_job *j = user;
    kir_kernel *K = c->k;
    kir_val zero_i = kir_idx(K, 0), fzero = kir_const_f(K, j->dt, 0);
    kir_val n = idx[0], m0 = kir_mul(K, idx[1], kir_idx(K, j->mb)), qh = idx[3];
    kir_val grp = kir_binary(K, KIR_DIV, m0, kir_idx(K, j->mg));
    kir_val cbase = kir_mul(K, grp, kir_idx(K, j->cg));
    kir_val mloc0 = kir_binary(K, KIR_MOD, m0, kir_idx(K, j->mg));
    kir_val m[CONVT_MB], mloc[CONVT_MB];
    for (int r = 0; r < j->mb; r++) {
        m[r] = kir_add(K, m0, kir_idx(K, r));
        mloc[r] = kir_add(K, mloc0, kir_idx(K, r));
    }
    int acc = kir_smem_add(K, j->dt, j->mb * j->ld);
    int64_t full = j->cg / CONVT_CGROUP * CONVT_CGROUP;
    for (int rh = 0; rh < j->h.s; rh++) {
        if (j->h.q[rh] == 0) continue;
        kir_val cond = kir_binary(K, KIR_EQ, idx[2], kir_idx(K, rh));
        if (j->h.q[rh] < j->qh_max) cond = kir_binary(K, KIR_AND, cond, kir_binary(K, KIR_LT, qh, kir_idx(K, j->h.q[rh])));
        kir_if_begin(K, cond);
        for (int r = 0; r < j->mb; r++) {
            kir_val init = j->bias ? lower_load(c, 2, &m[r]) : fzero;
            kir_val p = kir_loop_begin_parallel(K, zero_i, kir_idx(K, j->ld));
            kir_store(K, acc, kir_add(K, kir_idx(K, r * j->ld), p), init);
            kir_loop_end(K);
        }
        if (j->h.ntaps[rh] > 0) {
            if (full > 0) {
                kir_val ci = kir_loop_begin(K, zero_i, kir_idx(K, full), kir_idx(K, CONVT_CGROUP));
                convt_pass(c, j, acc, rh, n, qh, kir_add(K, cbase, ci), CONVT_CGROUP, mloc);
                kir_loop_end(K);
            }
            for (int64_t ci = full; ci < j->cg; ci++)
                convt_pass(c, j, acc, rh, n, qh, kir_add(K, cbase, kir_idx(K, ci)), 1, mloc);
        }
        /* the row, column phases interleaved back: ow = ρw + s*q */
        kir_val oh = kir_add(K, kir_idx(K, rh), kir_mul(K, qh, kir_idx(K, j->h.s)));
        int64_t qmin = j->w.q[j->w.s - 1]; /* the last phase has the fewest outputs */
        for (int r = 0; r < j->mb; r++) {
            kir_val yi[4];
            if (qmin > 0) {
                kir_val q = kir_loop_begin_parallel(K, zero_i, kir_idx(K, qmin));
                for (int rw = 0; rw < j->w.s; rw++) {
                    convt_index(j, yi, n, m[r], oh, kir_add(K, kir_mul(K, q, kir_idx(K, j->w.s)), kir_idx(K, rw)));
                    lower_store(c, 0, yi, kir_load(K, acc, kir_add(K, kir_idx(K, r * j->ld + rw * j->qws), q)));
                }
                kir_loop_end(K);
            }
            for (int rw = 0; rw < j->w.s; rw++)
                if (j->w.q[rw] > qmin) {
                    convt_index(j, yi, n, m[r], oh, kir_idx(K, qmin * j->w.s + rw));
                    lower_store(c, 0, yi, kir_load(K, acc, kir_idx(K, r * j->ld + rw * j->qws + qmin)));
                }
        }
        kir_if_end(K);
    }
}

/* The phase form where it applies: CPU, 1-D or 2-D, strides up to
 * CONVT_MAX_PHASES, accumulators within CONVT_STACK_BYTES. */
static bool convt_phase(lower_ctx *c, const window_geom *w, int64_t batch, int64_t cg, int64_t mg, int64_t group,
                        smelt_dtype dt, bool bias)
{
    if (c->target->wg_size > 1 || w->nsp > 2) return false;
    for (int d = 0; d < w->nsp; d++)
        if (w->stride[d] > CONVT_MAX_PHASES || w->kernel[d] > CONVT_MAX_TAPS) return false;
    int last = w->nsp - 1;
    convt_phase_job job, *j = &job;
    memset(j, 0, sizeof *j);
    j->ns = w->nsp;
    j->cg = cg;
    j->mg = mg;
    j->dt = dt;
    j->bias = bias;
    if (w->nsp == 2) convt_dim_init(&j->h, w->in[0], w->out[0], w->stride[0], w->kernel[0], w->dilation[0], w->pad_lo[0]);
    else convt_dim_init(&j->h, 1, 1, 1, 1, 1, 0);
    convt_dim_init(&j->w, w->in[last], w->out[last], w->stride[last], w->kernel[last], w->dilation[last], w->pad_lo[last]);
    j->qh_max = j->h.q[0];
    j->qws = (j->w.q[0] + CONVT_VEC - 1) / CONVT_VEC * CONVT_VEC;
    j->ld = j->qws * j->w.s;
    int64_t es = (int64_t)smelt_dtype_size(dt);
    j->mb = mg % 8 == 0 ? 8 : mg % 4 == 0 ? 4 : mg % 2 == 0 ? 2 : 1;
    while (j->mb > 1 && j->mb * j->ld * es > CONVT_STACK_BYTES) j->mb /= 2;
    if (j->mb * j->ld * es > CONVT_STACK_BYTES) return false;
    int64_t taps = 0;
    for (int r = 0; r < j->w.s; r++) taps += j->w.ntaps[r];
    ir_shape units = {.rank = 5, .dim = {batch, group * mg / j->mb, j->h.s, j->qh_max, 1}};
    lower_parallel_for(c, &units, 2 * j->mb * cg * (taps > 0 ? taps : 1) * j->qws, convt_phase_body, j);
    return true;
}

/* ---- gather form -------------------------------------------------------------
 * Output o receives x[i] * W[k] wherever o + pad_lo = i*s + k*d. One output
 * element per iteration; each tap tests divisibility and bounds and reads a
 * clamped index under a select. */

typedef struct convt_job {
    window_geom w;
    int64_t cg, mg;
    smelt_dtype dt;
    bool bias;
} convt_job;

static void convt_body(lower_ctx *c, const kir_val *oidx, void *user)
{
    const convt_job *j = user;
    kir_kernel *K = c->k;
    const window_geom *w = &j->w;
    kir_val zero = kir_idx(K, 0), one = kir_idx(K, 1), fzero = kir_const_f(K, j->dt, 0);
    kir_val m = oidx[1];
    kir_val grp = kir_binary(K, KIR_DIV, m, kir_idx(K, j->mg));
    int acc = kir_var_new(K, j->dt, j->bias ? lower_load(c, 2, &m) : fzero);
    kir_val xi[IR_MAX_RANK], wi[IR_MAX_RANK];
    kir_val ci = kir_loop_begin(K, zero, kir_idx(K, j->cg), one);
    xi[0] = oidx[0];
    xi[1] = wi[0] = kir_add(K, kir_mul(K, grp, kir_idx(K, j->cg)), ci);
    wi[1] = kir_binary(K, KIR_MOD, m, kir_idx(K, j->mg));
    kir_val valid = 0;
    for (int d = 0; d < w->nsp; d++) {
        kir_val kd = kir_loop_begin(K, zero, kir_idx(K, w->kernel[d]), one);
        wi[2 + d] = kd;
        kir_val pos = kir_binary(K, KIR_SUB, kir_add(K, oidx[2 + d], kir_idx(K, w->pad_lo[d])), kir_mul(K, kd, kir_idx(K, w->dilation[d])));
        kir_val ok = kir_binary(K, KIR_GE, pos, zero);
        kir_val i = pos;
        if (w->stride[d] > 1) {
            ok = kir_binary(K, KIR_AND, ok, kir_binary(K, KIR_EQ, kir_binary(K, KIR_MOD, pos, kir_idx(K, w->stride[d])), zero));
            i = kir_binary(K, KIR_DIV, pos, kir_idx(K, w->stride[d]));
        }
        ok = kir_binary(K, KIR_AND, ok, kir_binary(K, KIR_LT, i, kir_idx(K, w->in[d])));
        valid = valid ? kir_binary(K, KIR_AND, valid, ok) : ok;
        xi[2 + d] = lower_clamp(K, i, w->in[d]);
    }
    kir_val prod = kir_binary(K, KIR_MUL, lower_load(c, 0, xi), lower_load(c, 1, wi));
    kir_var_set(K, acc, kir_binary(K, KIR_ADD, kir_var_get(K, acc), kir_select(K, valid, prod, fzero)));
    for (int d = 0; d < w->nsp; d++) kir_loop_end(K);
    kir_loop_end(K);
    lower_store(c, 0, oidx, kir_var_get(K, acc));
}

smelt_status lower_ConvTranspose(lower_ctx *c)
{
    convt_job j;
    TRY(convtranspose_geom_get(c->g, c->n, &j.w));
    const ir_tensor *x = ir_in(c->g, c->n, 0), *wt = ir_in(c->g, c->n, 1);
    const ir_tensor *y = &c->g->tensors[c->n->out[0]];
    int64_t group = j.w.group;
    j.cg = x->shape.dim[1] / group;
    j.mg = wt->shape.dim[1];
    j.dt = x->dtype;
    j.bias = ir_in(c->g, c->n, 2) != NULL;
    if (ir_tensor_numel(y) == 0) return SMELT_OK;
    if (!getenv("SMELT_CONVT_GATHER") && convt_phase(c, &j.w, x->shape.dim[0], j.cg, j.mg, group, j.dt, j.bias))
        return c->k ? SMELT_OK : ir_node_fail(c->n, SMELT_ERR_NOMEM, "out of memory");
    int64_t taps = 1;
    for (int d = 0; d < j.w.nsp; d++) taps *= j.w.kernel[d];
    lower_parallel_for(c, &y->shape, 2 * j.cg * taps, convt_body, &j);
    return c->k ? SMELT_OK : ir_node_fail(c->n, SMELT_ERR_NOMEM, "out of memory");
}
