/*
 * test_conv_pairs.c — integer convolutions on int16 k-pairs (ir.h
 * IR_ENC_KPAIRS, IR_ATTR_INT_AMAX; graph/pack_weights.c, ops/conv_gemm.c,
 * target/emit_c_gemm_pairs.c): ConvInteger against an int64 reference,
 * exactly, with uint8 and int8 operands, zero points 0, 128, 255, -128 and
 * 127, odd K (the last pair's partner zero), M off the row block, strides
 * and pads; the weight's k-pair rows as packed; and the float Convs that
 * must not take the pairs (no bound, a bound the weight breaks, a weight
 * that is not integral), with their results.
 * Where the target has 8-bit dot products (rt_cc_int8_dot: 16 lanes and a
 * compiler targeting AVX512-VNNI) a ConvInteger whose weight leaves int8 by
 * at most 16 elements takes uint8 x int8 k-quads instead (ir.h
 * IR_ENC_KQUADS): the same exact results, at K not a multiple of 4, with
 * those residual elements, and x and w at the extremes of the quads' range.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/program.h"
#include "rt/rt.h"
#include "onnx/onnx.h"
#include "onnx_models.h"
#include "test.h"
#include "fuse_cases.h"

typedef struct ci_case {
    int64_t c, h, w, m, k, stride, pad;
    smelt_dtype xt, wt;
    int x_zp, w_zp;
    bool pairs; /* the program runs it on smelt_gemm_s16p_ (or smelt_gemm_u8q_: quads_expected) */
    int x_fill, w_fill; /* 0: the pattern q8; FILL_LO, FILL_HI: the type's least, largest value everywhere */
} ci_case;

#define FILL_LO 1
#define FILL_HI 2

static int q8(smelt_dtype dt, int64_t i, int64_t seed)
{
    int v = (int)((i * 2654435761u + (uint64_t)seed * 40503u) % 256u);
    return dt == SMELT_I8 ? v - 128 : v;
}

static int fill8(smelt_dtype dt, int f, int64_t i, int64_t seed)
{
    if (f == FILL_LO) return dt == SMELT_I8 ? -128 : 0;
    if (f == FILL_HI) return dt == SMELT_I8 ? 127 : 255;
    return q8(dt, i, seed);
}

static void put8(void *d, smelt_dtype dt, int64_t i, int v)
{
    if (dt == SMELT_I8) ((int8_t *)d)[i] = (int8_t)v;
    else ((uint8_t *)d)[i] = (uint8_t)v;
}

/* The program's k-pair weights: their number; one of the whole K (not cut into
 * chunks by onnx/quantized.c) is rows [M][K rounded up to even] of w - w_zp, the pad 0. */
static int check_kpairs(const smelt_program *p, const ci_case *t)
{
    int64_t kk = t->c * t->k * t->k, kp = (kk + 1) / 2 * 2, found = 0;
    for (int i = 0; i < p->g->n_tensors; i++) {
        const ir_tensor *x = &p->g->tensors[i];
        if (x->enc.kind != IR_ENC_KPAIRS) continue;
        found++;
        if (x->enc.k != kk) continue;
        CHECK(x->dtype == SMELT_I16 && x->shape.rank == 2 && x->shape.dim[0] == t->m && x->shape.dim[1] == kp);
        CHECK(x->enc.k == kk && x->enc.n == t->m && x->enc.logical.rank == 4);
        const int16_t *d = x->data;
        int bad = 0;
        for (int64_t r = 0; r < t->m && d; r++)
            for (int64_t e = 0; e < kp; e++)
                bad += d[r * kp + e] != (e < kk ? fill8(t->wt, t->w_fill, r * kk + e, 2) - t->w_zp : 0);
        CHECK_EQ_INT(bad, 0);
    }
    return (int)found;
}

/* Whether case t, which takes the k-pairs, takes the k-quads instead: 8-bit
 * dot products on this target, at most 16 elements of w - w_zp outside int8
 * and 255 times each channel's sum of |w - w_zp| within 2^24. */
static bool quads_expected(const ci_case *t)
{
    if (!t->pairs || !rt_cc_int8_dot()) return false;
    int64_t kk = t->c * t->k * t->k, out = 0;
    for (int64_t r = 0; r < t->m; r++) {
        int64_t sum = 0;
        for (int64_t e = 0; e < kk; e++) {
            int v = fill8(t->wt, t->w_fill, r * kk + e, 2) - t->w_zp;
            out += v < -128 || v > 127;
            sum += v < 0 ? -v : v;
        }
        if (255 * sum > (1 << 24)) return false;
    }
    return out <= 16;
}

/* The program's k-quad weights: their number; one of the whole K is rows
 * [M][K rounded up to a multiple of 4] of w - w_zp clamped to int8, the pad 0,
 * beside float32 [M + 3R]: the rows' sums, then (channel, k, w - w_zp less its
 * clamped value) of each of the R elements outside int8. */
static int check_kquads(const smelt_program *p, const ci_case *t)
{
    int64_t kk = t->c * t->k * t->k, kq = (kk + 3) / 4 * 4, found = 0;
    for (int i = 0; i < p->g->n_nodes; i++) {
        const ir_node *n = &p->g->nodes[i];
        const ir_tensor *x = n->n_in > 1 && n->in[1] >= 0 ? &p->g->tensors[n->in[1]] : NULL;
        if (n->dead || n->op != OP_Conv || !x || x->enc.kind != IR_ENC_KQUADS) continue;
        found++;
        const ir_tensor *sums = n->n_in == 5 && n->in[4] >= 0 ? &p->g->tensors[n->in[4]] : NULL;
        CHECK(sums != NULL && n->in[3] >= 0);
        if (x->enc.k != kk || !sums) continue;
        CHECK(x->dtype == SMELT_I8 && x->shape.rank == 2 && x->shape.dim[0] == t->m && x->shape.dim[1] == kq);
        CHECK(sums->dtype == SMELT_F32 && sums->shape.rank == 1 && (sums->shape.dim[0] - t->m) % 3 == 0);
        const int8_t *d = x->data;
        const float *sd = sums->data;
        int bad = 0;
        int64_t n_res = 0;
        for (int64_t r = 0; r < t->m && d && sd; r++) {
            int64_t sum = 0;
            for (int64_t e = 0; e < kq; e++) {
                int v = e < kk ? fill8(t->wt, t->w_fill, r * kk + e, 2) - t->w_zp : 0, c = v < -128 ? -128 : v > 127 ? 127 : v;
                bad += d[r * kq + e] != c;
                sum += c;
                if (c != v) {
                    const float *q = sd + t->m + 3 * n_res++;
                    bad += n_res * 3 + t->m > sums->shape.dim[0] || q[0] != (float)r || q[1] != (float)e || q[2] != (float)(v - c);
                }
            }
            bad += sd[r] != (float)sum;
        }
        CHECK_EQ_INT(bad, 0);
        CHECK(n_res * 3 + t->m == sums->shape.dim[0]);
    }
    return (int)found;
}

/* ConvInteger(x, w, x_zp, w_zp) with a constant w, run compiled, equal to
 * int64's result; without `zps` ConvInteger(x, w), its zero points 0 (t's
 * must be 0). */
static int run_ci_mode(const ci_case *t, bool zps, bool xz_input)
{
    int kernels = -1;
    int64_t c = t->c, h = t->h, w = t->w, m = t->m, k = t->k, kk = c * k * k;
    int64_t oh = (h + 2 * t->pad - k) / t->stride + 1, ow = (w + 2 * t->pad - k) / t->stride + 1;
    uint8_t *x = malloc((size_t)(c * h * w)), *wd = malloc((size_t)(m * kk)), xz, wz;
    for (int64_t i = 0; i < c * h * w; i++) put8(x, t->xt, i, fill8(t->xt, t->x_fill, i, 1));
    for (int64_t i = 0; i < m * kk; i++) put8(wd, t->wt, i, fill8(t->wt, t->w_fill, i, 2));
    put8(&xz, t->xt, 0, t->x_zp);
    put8(&wz, t->wt, 0, t->w_zp);
    mb mbd;
    mb_init(&mbd, 13);
    int64_t dx[4] = {1, c, h, w}, dw[4] = {m, c, k, k}, pads[4] = {t->pad, t->pad, t->pad, t->pad},
            st[2] = {t->stride, t->stride};
    mb_input(&mbd, "x", t->xt, 4, dx);
    if (xz_input) mb_input(&mbd, "xz", t->xt, 0, NULL);
    APPEND(mbd.g.initializer, mbd.g.n_initializer, tensor_raw("w", t->wt, 4, dw, wd, (size_t)(m * kk)));
    if (zps) {
        if (!xz_input) APPEND(mbd.g.initializer, mbd.g.n_initializer, tensor_raw("xz", t->xt, 0, NULL, &xz, 1));
        APPEND(mbd.g.initializer, mbd.g.n_initializer, tensor_raw("wz", t->wt, 0, NULL, &wz, 1));
    }
    Onnx__NodeProto *n = node_new(&mbd.g, "ConvInteger", "ci", zps ? "x,w,xz,wz" : "x,w", "y");
    pb_attr_ints(n, "pads", 4, pads);
    pb_attr_ints(n, "strides", 2, st);
    mb_output(&mbd, "y");
    ir_graph *g = NULL;
    CHECK_EQ_INT(mb_load(&mbd, NULL, &g), SMELT_OK);
    smelt_program *p = g ? compile(g, 0) : NULL;
    CHECK(p != NULL);
    if (p) {
        bool quads = quads_expected(t);
        bool has = p->cls[0].source && strstr(p->cls[0].source, "smelt_gemm_s16p_") != NULL;
        bool has_q = p->cls[0].source && strstr(p->cls[0].source, "smelt_gemm_u8q_") != NULL;
        if (has != (t->pairs && !quads) || has_q != quads)
            fprintf(stderr, "  %lldx%lld %lld -> %lld: k-pair microkernel %d, k-quad %d\n", (long long)h, (long long)w,
                    (long long)c, (long long)m, has, has_q);
        CHECK(has == (t->pairs && !quads));
        CHECK(has_q == quads);
        /* the AVX512-VNNI block in the helper exactly where quads are */
        CHECK((p->cls[0].source && strstr(p->cls[0].source, "__builtin_ia32_vpdpbusd_v16si") != NULL) == quads);
        int kp = check_kpairs(p, t), kq = check_kquads(p, t);
        CHECK(t->pairs && !quads ? kp >= 1 : kp == 0);
        CHECK(quads ? kq >= 1 : kq == 0);
        smelt_tensor in[2] = {{.name = "x", .dtype = t->xt, .rank = 4, .shape = {1, c, h, w}, .data = x},
                              {.name = "xz", .dtype = t->xt, .rank = 0, .data = &xz}};
        CHECK(smelt_program_run(p, xz_input ? 2 : 1, in) == SMELT_OK);
        smelt_tensor o;
        CHECK(smelt_program_output(p, 0, &o) == SMELT_OK);
        CHECK(o.dtype == SMELT_I32 && smelt_tensor_numel(&o) == m * oh * ow);
        int bad = 0;
        for (int64_t r = 0; r < m && o.dtype == SMELT_I32; r++)
            for (int64_t i = 0; i < oh; i++)
                for (int64_t j = 0; j < ow; j++) {
                    int64_t want = 0;
                    for (int64_t ch = 0; ch < c; ch++)
                        for (int64_t a = 0; a < k; a++)
                            for (int64_t b = 0; b < k; b++) {
                                int64_t ih = i * t->stride - t->pad + a, iw = j * t->stride - t->pad + b;
                                if (ih < 0 || ih >= h || iw < 0 || iw >= w) continue;
                                want += (int64_t)(fill8(t->xt, t->x_fill, (ch * h + ih) * w + iw, 1) - t->x_zp) *
                                        (fill8(t->wt, t->w_fill, ((r * c + ch) * k + a) * k + b, 2) - t->w_zp);
                            }
                    int32_t got = ((const int32_t *)o.data)[(r * oh + i) * ow + j];
                    if (got != want && bad++ < 3)
                        fprintf(stderr, "  %lld -> %lld [%lld][%lld][%lld]: %d, want %lld\n", (long long)c, (long long)m,
                                (long long)r, (long long)i, (long long)j, got, (long long)want);
                }
        CHECK_EQ_INT(bad, 0);
        kernels = p->lp.n_kernels;
        smelt_program_free(p);
    }
    ir_graph_free(g);
    pool_free();
    free(x), free(wd);
    return kernels;
}

static void run_ci_zp(const ci_case *t, bool zps) { (void)run_ci_mode(t, zps, false); }
static void run_ci(const ci_case *t) { (void)run_ci_mode(t, true, false); }

/* Output planes of 32 and 64 positions: a whole number of panels on either ISA's
 * tiles (16 or 32), so the positions go on N (graph_conv_on_cols). */
TEST(conv_pairs_conv_integer_is_exact)
{
    static const ci_case cases[] = {
        {3, 8, 8, 32, 3, 1, 1, SMELT_U8, SMELT_U8, 128, 119, true, 0, 0},  /* K 27: odd, the last partner 0 */
        {4, 16, 8, 35, 3, 2, 1, SMELT_I8, SMELT_I8, -128, 127, true, 0, 0}, /* stride 2, M 35 off the row block */
        {9, 8, 8, 37, 1, 1, 0, SMELT_U8, SMELT_U8, 255, 0, true, 0, 0},    /* 1x1 K 9 through the pair im2col */
        {60, 8, 4, 42, 3, 1, 1, SMELT_U8, SMELT_I8, 0, -128, true, 0, 0},  /* K 540: 270 pairs, two KC slices */
        {8, 8, 8, 33, 1, 1, 0, SMELT_I8, SMELT_U8, 127, 255, true, 0, 0},  /* 1x1, M 33: a one-row tail */
        {3, 8, 8, 24, 3, 1, 1, SMELT_U8, SMELT_U8, 128, 119, false, 0, 0}, /* M 24: the float GEMM (KPAIRS_MIN_M) */
        {3, 8, 8, 8, 3, 1, 1, SMELT_U8, SMELT_U8, 128, 119, false, 0, 0},  /* M 8: stays direct */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_ci(&cases[i]);
}

/* x and w at their extremes everywhere (every product at its largest, one
 * sign), with zero points 0, 255, 128, -128 and 127: the AVX-512 block's
 * vpdpwssd (where the C compiler targets AVX512-VNNI) or vpmaddwd + vpaddd,
 * K even and odd, M off the row block. */
TEST(conv_pairs_extremes_are_exact)
{
    static const ci_case cases[] = {
        {3, 8, 8, 32, 3, 1, 1, SMELT_U8, SMELT_U8, 0, 255, true, FILL_HI, FILL_LO},  /* K 27: 255 * -255 */
        {4, 8, 8, 35, 3, 1, 1, SMELT_U8, SMELT_U8, 255, 0, true, FILL_LO, FILL_HI},  /* K 36: -255 * 255 */
        {9, 8, 8, 33, 1, 1, 0, SMELT_U8, SMELT_U8, 255, 255, true, FILL_LO, FILL_LO}, /* 1x1, K 9: -255 * -255 */
        {8, 8, 8, 40, 3, 1, 1, SMELT_I8, SMELT_I8, -128, 127, true, FILL_HI, FILL_LO}, /* K 72: 255 * -255 */
        {6, 16, 8, 37, 3, 2, 1, SMELT_U8, SMELT_I8, 128, -128, true, FILL_HI, FILL_HI}, /* stride 2: 127 * 255 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_ci(&cases[i]);
}

/* The k-quads where this target has them (else the same cases on the pairs):
 * w - w_zp within int8 (w_zp 128 for uint8, 0 for int8) or leaving it by a
 * few elements (w_zp 127: w = 255 gives 128; 0 with int8 x: a shift of 255),
 * K 27, 26, 9 and 540 (not multiples of 4, the last quad's rows past K; 135
 * quads, two KC slices), M off the row block, stride 2, x_zp 0, 128, 255. */
TEST(conv_quads_conv_integer_is_exact)
{
    static const ci_case cases[] = {
        {3, 8, 8, 32, 3, 1, 1, SMELT_U8, SMELT_U8, 128, 128, true, 0, 0},  /* K 27, no residual */
        {26, 8, 8, 32, 1, 1, 0, SMELT_U8, SMELT_U8, 0, 127, true, 0, 0},   /* K 26, residuals (w 255) */
        {4, 16, 8, 35, 3, 2, 1, SMELT_I8, SMELT_I8, -128, 0, true, 0, 0},  /* stride 2, M 35, shift 0 */
        {9, 8, 8, 37, 1, 1, 0, SMELT_U8, SMELT_U8, 255, 127, true, 0, 0},  /* 1x1 K 9, x_zp 255, residuals */
        {60, 8, 4, 42, 3, 1, 1, SMELT_U8, SMELT_U8, 0, 128, true, 0, 0},   /* K 540 */
        {8, 8, 8, 33, 1, 1, 0, SMELT_I8, SMELT_U8, 127, 127, true, 0, 0},  /* int8 x, shift 255; M 33 */
        {4, 8, 8, 32, 3, 1, 1, SMELT_U8, SMELT_U8, 0, 0, true, 0, 0},      /* w - 0 > 127 everywhere: pairs */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_ci(&cases[i]);
}

/* No zero points: the shift a constant, 0 for uint8 x, 128 for int8 x
 * (whose padding then reads 128 in the quads' im2col); int8 weights fit the
 * quads, uint8 ones above 127 leave them for the pairs. */
TEST(conv_quads_without_zero_points_are_exact)
{
    static const ci_case cases[] = {
        {3, 8, 8, 32, 3, 1, 1, SMELT_U8, SMELT_I8, 0, 0, true, 0, 0},  /* K 27 */
        {5, 8, 8, 33, 3, 1, 1, SMELT_I8, SMELT_I8, 0, 0, true, 0, 0},  /* K 45, shift 128 */
        {4, 8, 8, 32, 3, 1, 1, SMELT_I8, SMELT_U8, 0, 0, true, 0, 0},  /* uint8 w: pairs */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_ci_zp(&cases[i], false);
}

/* x_zp a run-time input (DynamicQuantizeLinear's, in ddddocr_ocr_quant): the
 * quads' shift is Cast(x_zp) (+ 128 for int8 x), computed inside the conv's
 * kernels (fuse.h: a one-element operand of a contraction), as many kernels
 * as with a constant x_zp; uint8 and int8 x, K 27 and 36, the padding s. */
TEST(conv_quads_with_a_run_time_zero_point_are_exact)
{
    static const ci_case cases[] = {
        {3, 8, 8, 32, 3, 1, 1, SMELT_U8, SMELT_U8, 77, 128, true, 0, 0},  /* K 27 */
        {4, 8, 8, 35, 3, 1, 1, SMELT_I8, SMELT_I8, -9, 0, true, 0, 0},    /* K 36, int8 x: shift 119 */
        {4, 8, 8, 32, 3, 1, 1, SMELT_U8, SMELT_U8, 0, 128, true, FILL_HI, FILL_LO}, /* 255 * -128 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int run_time = run_ci_mode(&cases[i], true, true), constant = run_ci_mode(&cases[i], true, false);
        CHECK(run_time > 0);
        CHECK_EQ_INT(run_time, constant); /* the cast is no kernel of its own */
    }
}

/* x and w at the ends of the quads' range everywhere: X + s = 255 or 0 times
 * w - w_zp = -128 or 127 (uint8 x with x_zp 0 or 255, int8 x at 127 with
 * x_zp -128, whose shift is 0), the padding s, K 27, 36, 72. */
TEST(conv_quads_extremes_are_exact)
{
    static const ci_case cases[] = {
        {3, 8, 8, 32, 3, 1, 1, SMELT_U8, SMELT_U8, 0, 128, true, FILL_HI, FILL_LO},    /* 255 * -128 */
        {4, 8, 8, 35, 3, 1, 1, SMELT_U8, SMELT_U8, 255, 128, true, FILL_LO, FILL_HI},  /* -255 * 127 */
        {8, 8, 8, 40, 3, 1, 1, SMELT_I8, SMELT_I8, -128, 0, true, FILL_HI, FILL_LO},   /* 255 * -128 */
        {8, 8, 8, 32, 3, 1, 1, SMELT_I8, SMELT_U8, -128, 128, true, FILL_HI, FILL_HI}, /* 255 * 127 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_ci(&cases[i]);
}

/* Stride 1 with pad k/2 (output rows as long as X's): the im2col writes the
 * rows where every tap of a group is inside as one run of positions, the
 * edge columns after it (conv_groups_body). Kernels as tall as the plane or
 * taller, so that some groups have no row inside (an empty run) and others
 * a run of one row, 5x5 (two edge columns a side), one-row planes, K 50, 75
 * and 27 (the last group's tail); pairs (uint8 w, w_zp 0) and quads (w_zp
 * 128, or int8 w) on each shape. */
TEST(conv_groups_flat_run_is_exact)
{
    static const ci_case cases[] = {
        {2, 2, 16, 32, 5, 1, 2, SMELT_U8, SMELT_U8, 3, 0, true, 0, 0},     /* K 50, 2 rows, 5x5: pairs */
        {2, 2, 16, 32, 5, 1, 2, SMELT_U8, SMELT_U8, 3, 128, true, 0, 0},   /* the same on quads */
        {3, 4, 16, 33, 5, 1, 2, SMELT_I8, SMELT_I8, -7, 0, true, 0, 0},    /* K 75, 4 rows */
        {3, 4, 16, 33, 5, 1, 2, SMELT_U8, SMELT_U8, 200, 0, true, 0, 0},   /* the same on pairs */
        {3, 1, 32, 32, 3, 1, 1, SMELT_U8, SMELT_U8, 255, 128, true, 0, 0}, /* one row: no run for kh 0, 2 */
        {3, 1, 32, 32, 3, 1, 1, SMELT_U8, SMELT_U8, 255, 0, true, 0, 0},   /* the same on pairs */
        {5, 2, 32, 36, 3, 1, 1, SMELT_U8, SMELT_I8, 0, -128, true, FILL_HI, FILL_LO}, /* extremes, K 45 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_ci(&cases[i]);
}

/* A float Conv (3x3, 6 -> 37 channels at 8x8, pad 1) with weight values wv(i)
 * and, amax > 0, IR_ATTR_INT_AMAX: whether it runs on the k-pairs, and its
 * result against a double reference (exact where the values are integers). */
static void run_float_conv(int64_t amax, float (*wv)(int64_t), bool pairs)
{
    enum { C = 6, H = 8, W = 8, M = 37, K = C * 9 };
    ir_graph *g = ir_graph_new();
    int x = input(g, "x", shp(4, 1, C, H, W));
    int w = constant(g, "w", shp(4, M, C, 3, 3), 1.0f, 0.0f);
    float *wd = g->tensors[w].data;
    for (int64_t i = 0; i < M * K; i++) wd[i] = wv(i);
    int y = op2(g, "conv", OP_Conv, x, w);
    int node = node_named(g, "conv");
    const int64_t pads[4] = {1, 1, 1, 1};
    attr_ints(g, node, "pads", 4, pads);
    if (amax > 0) attr_int(g, node, IR_ATTR_INT_AMAX, amax);
    ir_graph_set_io(g, 1, &x, 1, &y);
    smelt_program *p = compile(g, 0);
    CHECK(p != NULL);
    if (p) {
        bool has = p->cls[0].source && strstr(p->cls[0].source, "smelt_gemm_s16p_") != NULL;
        CHECK(has == pairs);
        float *xd = malloc(sizeof(float) * C * H * W);
        for (int64_t i = 0; i < C * H * W; i++) xd[i] = (float)((i * 37) % 511 - 255); /* integers within 255 */
        smelt_tensor in = {.name = "x", .dtype = SMELT_F32, .rank = 4, .shape = {1, C, H, W}, .data = xd}, out = {0};
        CHECK(smelt_program_run(p, 1, &in) == SMELT_OK);
        CHECK(smelt_program_output(p, 0, &out) == SMELT_OK);
        const float *yd = out.data;
        int bad = 0;
        for (int64_t r = 0; r < M && yd; r++)
            for (int64_t i = 0; i < H; i++)
                for (int64_t j = 0; j < W; j++) {
                    double want = 0;
                    for (int64_t ch = 0; ch < C; ch++)
                        for (int64_t a = 0; a < 3; a++)
                            for (int64_t b = 0; b < 3; b++) {
                                int64_t ih = i - 1 + a, iw = j - 1 + b;
                                if (ih >= 0 && ih < H && iw >= 0 && iw < W)
                                    want += (double)xd[(ch * H + ih) * W + iw] * wd[((r * C + ch) * 3 + a) * 3 + b];
                            }
                    double got = yd[(r * H + i) * W + j];
                    bool ok = pairs ? got == want : fabs(got - want) <= 1e-5 * (1 + fabs(want));
                    if (!ok && bad++ < 3) fprintf(stderr, "  [%lld][%lld][%lld]: %g, want %g\n", (long long)r, (long long)i, (long long)j, got, want);
                }
        CHECK_EQ_INT(bad, 0);
        free(xd);
        smelt_program_free(p);
    }
    ir_graph_free(g);
}

static float w_small(int64_t i) { return (float)((i * 13) % 61 - 30); }     /* 255 * 54 * 30 < 2^24 */
static float w_large(int64_t i) { return (float)(2000 + (i * 13) % 61); }   /* 255 * 54 * 2000 > 2^24 */
static float w_frac(int64_t i) { return (float)((i * 13) % 61 - 30) + 0.5f; }

/* A model file's own "smelt.int_amax" on a float Conv is dropped at import: X
 * here holds fractions, which the k-pairs would truncate. */
TEST(conv_pairs_not_claimed_by_a_model)
{
    mb mbd;
    mb_init(&mbd, 13);
    int64_t dx[4] = {1, 8, 8, 8}, dw[4] = {40, 8, 3, 3}, pads[4] = {1, 1, 1, 1};
    float *w = malloc(sizeof(float) * 40 * 72);
    for (int i = 0; i < 40 * 72; i++) w[i] = (float)((i * 7) % 11 - 5);
    mb_input(&mbd, "x", SMELT_F32, 4, dx);
    init_f32(&mbd, "w", 4, dw, w, 40 * 72);
    Onnx__NodeProto *n = node_new(&mbd.g, "Conv", "conv", "x,w", "y");
    pb_attr_ints(n, "pads", 4, pads);
    pb_attr_int(n, IR_ATTR_INT_AMAX, 255);
    mb_output(&mbd, "y");
    ir_graph *g = NULL;
    CHECK_EQ_INT(mb_load(&mbd, NULL, &g), SMELT_OK);
    for (int i = 0; g && i < g->n_nodes; i++) CHECK(ir_attr_int(&g->nodes[i], IR_ATTR_INT_AMAX, 0) == 0);
    smelt_program *p = g ? compile(g, 0) : NULL;
    CHECK(p != NULL);
    if (p) CHECK(p->cls[0].source && !strstr(p->cls[0].source, "smelt_gemm_s16p_"));
    smelt_program_free(p);
    ir_graph_free(g);
    pool_free();
    free(w);
}

TEST(conv_pairs_only_within_the_bound)
{
    run_float_conv(255, w_small, true);
    run_float_conv(0, w_small, false);      /* no IR_ATTR_INT_AMAX: X may hold any float */
    run_float_conv(255, w_large, false);    /* amax * column sum past 2^24 */
    run_float_conv(40000, w_small, false);  /* amax past int16 */
    run_float_conv(255, w_frac, false);     /* a weight that is not an integer */
}
