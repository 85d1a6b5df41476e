/*
 * test_gemm_small_k.c — the packed GEMM's forms for a short contraction: the
 * microkernel started from zero in place of its block's zeroing
 * (target/emit_c_gemm.c), and a conv's blocks stored one by one right after
 * their gemm loops, Y's plane written as one run where the epilogue allows it
 * (ops/gemm_packed.c store_each, ops/conv_gemm.c, lower_store_is_flat), on
 * AVX-512 from the microkernel's registers (emit_put_gemm_store).
 * Convolutions and MatMuls with K = 1 .. 300 (one K slice and several),
 * output channels and positions that leave tails, with bias + Clip and
 * residual Add epilogues (the residual whole, one plane for all channels, or
 * broadcast along the plane's rows, which must not be written as one run),
 * against a double reference and the --no-fuse compile.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit_compile.h"
#include "fuse_cases.h"
#include "rt/rt.h"
#include "test.h"

static int scalar(ir_graph *g, const char *name, float v) { return constant(g, name, shp(0), 0.0f, v); }

/* The calls of smelt_gemm_f32_<mr>x<nr> in src: how many start from zero (a
 * last argument other than the literal 0) and how many accumulate. */
static void gemm_calls(const char *src, int *zero, int *acc)
{
    *zero = *acc = 0;
    for (const char *p = src; (p = strstr(p, "smelt_gemm_f32_")); p++) {
        const char *q = p + strlen("smelt_gemm_f32_");
        if (q[0] < '0' || q[0] > '9' || (p > src + 12 && !strncmp(p - 12, "inline void ", 12))) continue;
        const char *end = strstr(q, ");");
        if (!end) break;
        if (end - q > 2 && !strncmp(end - 3, ", 0", 3)) ++*acc;
        else ++*zero;
    }
}

enum { EPI_CLIP, EPI_RES, EPI_RES_PLANE, EPI_RES_ROWS };

typedef struct small_conv {
    int64_t n, c, h, w, m, k, s, p;
    int epi;
    bool regs; /* at 16 lanes, blocks stored from the microkernel's registers (one K slice, whole panels, one run) */
} small_conv;

TEST(gemm_small_k_conv_blocks_match_a_reference)
{
    static const small_conv cases[] = {
        {1, 16, 8, 12, 96, 1, 1, 0, EPI_CLIP, true},       /* MobileNetV2's expand 16 -> 96, one K slice */
        {2, 8, 8, 8, 37, 1, 1, 0, EPI_CLIP, true},         /* K = 8, a tail of 5 channels, batch 2 */
        {1, 24, 4, 8, 40, 1, 1, 0, EPI_RES, true},         /* residual Add over the whole output */
        {1, 16, 8, 8, 32, 1, 1, 0, EPI_RES_PLANE, true},   /* residual [OH, OW]: the same for every channel */
        {1, 16, 8, 8, 32, 1, 1, 0, EPI_RES_ROWS, false},   /* residual [1, 1, 1, OW]: not one run */
        {1, 3, 16, 16, 32, 3, 2, 1, EPI_CLIP, true},       /* the 3x3 s2 stem, K = 27, through the im2col */
        {2, 3, 16, 16, 21, 3, 2, 1, EPI_RES, true},        /* K = 27 onto 21 channels, batch 2 */
        {1, 8, 17, 15, 40, 1, 1, 0, EPI_CLIP, false},      /* 255 positions: the last panel one short */
        {1, 300, 4, 8, 37, 1, 1, 0, EPI_CLIP, false},      /* K = 300, several slices: the unit stored once */
        {1, 131, 4, 8, 44, 1, 1, 0, EPI_RES_ROWS, false},  /* K = 131, the rows form */
    };
    for (int ci = 0; ci < (int)(sizeof cases / sizeof cases[0]); ci++) {
        const small_conv *cc = &cases[ci];
        int64_t oh = (cc->h + 2 * cc->p - cc->k) / cc->s + 1, ow = (cc->w + 2 * cc->p - cc->k) / cc->s + 1;
        ir_graph *g = ir_graph_new();
        int x = input(g, "x", shp(4, cc->n, cc->c, cc->h, cc->w));
        int wt = constant(g, "w", shp(4, cc->m, cc->c, cc->k, cc->k), 0.25f, -0.05f);
        int b = constant(g, "b", shp(1, cc->m), 0.5f, 0.1f);
        ir_shape rs = cc->epi == EPI_RES         ? shp(4, cc->n, cc->m, oh, ow)
                      : cc->epi == EPI_RES_PLANE ? shp(2, oh, ow)
                                                 : shp(4, (int64_t)1, (int64_t)1, (int64_t)1, ow);
        int res = constant(g, "res", rs, 0.75f, -0.2f);
        int y = op(g, "conv", OP_Conv, 3, (const int[]){x, wt, b});
        int nd = node_named(g, "conv");
        attr_ints(g, nd, "strides", 2, (const int64_t[]){cc->s, cc->s});
        attr_ints(g, nd, "pads", 4, (const int64_t[]){cc->p, cc->p, cc->p, cc->p});
        if (cc->epi == EPI_CLIP) y = op(g, "clip", OP_Clip, 3, (const int[]){y, scalar(g, "lo", 0.0f), scalar(g, "hi", 6.0f)});
        else y = op2(g, "add", OP_Add, y, res);
        ir_graph_set_io(g, 1, &x, 1, &y);
        smelt_program *p = compile(g, 0), *q = compile(g, 1);
        CHECK(p != NULL && q != NULL);
        if (!p || !q) {
            smelt_program_free(p);
            smelt_program_free(q);
            ir_graph_free(g);
            continue;
        }
        int zero, acc;
        gemm_calls(p->cls[0].source, &zero, &acc);
        if (!(zero > 0 && acc == 0)) fprintf(stderr, "  case %d: %d from zero, %d accumulating\n", ci, zero, acc);
        CHECK(zero > 0 && acc == 0);
        if (rt_cc_vector_width() == 16) CHECK((strstr(p->cls[0].source, "stored from registers") != NULL) == cc->regs);
        if ((ci == 1 || ci == 6) && have_cc()) check_compiles_for_isas(p->cls[0].source); /* both forms, warning-free */
        int64_t nx = cc->n * cc->c * cc->h * cc->w, ny = cc->n * cc->m * oh * ow;
        float *xd = malloc(sizeof(float) * (size_t)nx);
        double *want = malloc(sizeof(double) * (size_t)ny);
        for (int64_t i = 0; i < nx; i++) xd[i] = (float)((i * 13 + 5) % 17 - 8) / 8.0f;
        const float *wd = g->tensors[wt].data, *bd = g->tensors[b].data, *rd = g->tensors[res].data;
        for (int64_t n = 0; n < cc->n; n++)
            for (int64_t m = 0; m < cc->m; m++)
                for (int64_t i = 0; i < oh; i++)
                    for (int64_t j = 0; j < ow; j++) {
                        double s = bd[m];
                        for (int64_t c = 0; c < cc->c; c++)
                            for (int64_t kh = 0; kh < cc->k; kh++)
                                for (int64_t kw = 0; kw < cc->k; kw++) {
                                    int64_t ih = i * cc->s - cc->p + kh, iw = j * cc->s - cc->p + kw;
                                    if (ih < 0 || ih >= cc->h || iw < 0 || iw >= cc->w) continue;
                                    s += (double)xd[((n * cc->c + c) * cc->h + ih) * cc->w + iw] *
                                         wd[((m * cc->c + c) * cc->k + kh) * cc->k + kw];
                                }
                        int64_t at = ((n * cc->m + m) * oh + i) * ow + j;
                        if (cc->epi == EPI_CLIP) s = fmin(fmax(s, 0.0), 6.0);
                        else s += rd[cc->epi == EPI_RES ? at : cc->epi == EPI_RES_PLANE ? i * ow + j : j];
                        want[at] = s;
                    }
        const int64_t xs[4] = {cc->n, cc->c, cc->h, cc->w};
        CHECK_EQ_INT(count_far(run_x(p, xd, 4, xs, NULL), want, ny, 1e-4, ci), 0);
        CHECK_EQ_INT(count_far(run_x(q, xd, 4, xs, NULL), want, ny, 1e-4, ci), 0);
        free(want);
        free(xd);
        smelt_program_free(p);
        smelt_program_free(q);
        ir_graph_free(g);
    }
}

/* MatMul by a constant B (panels, the unit stored element by element) with a
 * short K and an odd N, + bias and Clip fused: every block starts from zero. */
TEST(gemm_small_k_matmul_starts_from_zero)
{
    static const int64_t ks[] = {1, 3, 16, 27};
    const int64_t m = 13, n = 37;
    for (int ki = 0; ki < (int)(sizeof ks / sizeof ks[0]); ki++) {
        int64_t k = ks[ki];
        ir_graph *g = ir_graph_new();
        int a = input(g, "x", shp(2, m, k));
        int bw = constant(g, "b", shp(2, k, n), 0.5f, 0.125f), bias = constant(g, "bias", shp(1, n), 0.25f, 0.5f);
        int y = op2(g, "add", OP_Add, op2(g, "mm", OP_MatMul, a, bw), bias);
        y = op(g, "clip", OP_Clip, 3, (const int[]){y, scalar(g, "lo", 0.0f), scalar(g, "hi", 1.5f)});
        ir_graph_set_io(g, 1, &a, 1, &y);
        smelt_program *p = compile(g, 0);
        CHECK(p != NULL);
        if (!p) {
            ir_graph_free(g);
            continue;
        }
        int zero, acc;
        gemm_calls(p->cls[0].source, &zero, &acc);
        if (!(zero > 0 && acc == 0)) fprintf(stderr, "  case %d: %d from zero, %d accumulating\n", (int)ki, zero, acc);
        CHECK(zero > 0 && acc == 0);
        float xd[13 * 27];
        double want[13 * 37];
        for (int64_t i = 0; i < m * k; i++) xd[i] = (float)((i * 7) % 11 - 5) / 4.0f;
        const float *bd = g->tensors[bw].data, *cd = g->tensors[bias].data;
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double s = cd[j];
                for (int64_t kk = 0; kk < k; kk++) s += (double)xd[i * k + kk] * bd[kk * n + j];
                want[i * n + j] = fmin(fmax(s, 0.0), 1.5);
            }
        const int64_t xs[2] = {m, k};
        CHECK_EQ_INT(count_far(run_x(p, xd, 2, xs, NULL), want, m * n, 1e-4, ki), 0);
        smelt_program_free(p);
        ir_graph_free(g);
    }
}
