/*
 * test_conv_depthwise.c — the depthwise kernel (ops/conv_depthwise.c) against
 * a direct reference in double: pads on every side (different on each), stride
 * 2 (and uneven strides), dilation 2, a 5x5 kernel, batch 2, with and without
 * bias, a Clip fused after and a Pad of 0.5 fused before (read once per element
 * into the tile; one kernel either way);
 * rows of more than 16 outputs whose last 4 to 15 are one masked vector (at
 * stride 1 from 17 outputs, where vectors have 16 lanes);
 * rows of 4 to 16 outputs (MobileNet's 14x14 and 7x7 layers), which it takes
 * where each is one masked 16-lane vector (emit_c_simd.c; windows up to 3
 * wide, at stride 2 from 8 outputs; 5 wide at stride 1 from 11 outputs);
 * two rows a step at stride 1, with an odd last row alone, and 5 to 7 a step
 * for windows 5 wide on rows of one masked vector;
 * a row's whole vectors as AVX-512 intrinsics in pairs (and those compiled
 * without AVX-512 and without AVX);
 * and the convolutions it leaves to the generic flat form: a channel
 * multiplier of 2 (M = 2C), a grouping with two channels per group, rows of
 * 3, and the narrow rows on hosts with narrower vectors;
 * and its lanes form for narrow planes where C is a multiple of 8 (channels
 * across the vector, transposing copies in and out, the unit's output planes
 * stored as one run).
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/program.h"
#include "rt/rt.h"
#include "target/emit.h"
#include "test.h"
#include "fuse_cases.h"

typedef struct dw_case {
    int64_t n, c, h, w, m, k[2], s[2], d[2], pads[4]; /* pads: top, left, bottom, right */
    int64_t group;
    bool bias, clip, pad_in;  /* Clip(0, 6) after; X padded before (PAD_IN, value 0.5) */
    int dw;                   /* expected on the depthwise kernel (one tile, no accumulators in workgroup memory):
                               * 1 always, 2 where a row is one masked vector (16-lane vectors), 0 never */
} dw_case;

static int scalar(ir_graph *g, const char *name, float v)
{
    int t = ir_tensor_add(g, name, SMELT_F32, &(ir_shape){.rank = 0});
    *(float *)ir_tensor_alloc_data(g, t) = v;
    return t;
}

/* The Pad before the conv when pad_in: [top, left, bottom, right] of value 0.5. */
static const int64_t PAD_IN[4] = {1, 0, 0, 2};

/* x as the conv sees it, [n, c, h, w] (padded when pad_in). */
static double dw_ref(const dw_case *cc, const float *x, int64_t h, int64_t w_, const float *w, const float *b, int64_t n,
                     int64_t m, int64_t i, int64_t j)
{
    int64_t cg = cc->c / cc->group, mg = cc->m / cc->group;
    double s = cc->bias ? b[m] : 0.0;
    for (int64_t ci = 0; ci < cg; ci++)
        for (int64_t kh = 0; kh < cc->k[0]; kh++)
            for (int64_t kw = 0; kw < cc->k[1]; kw++) {
                int64_t ih = i * cc->s[0] - cc->pads[0] + kh * cc->d[0], iw = j * cc->s[1] - cc->pads[1] + kw * cc->d[1];
                if (ih < 0 || ih >= h || iw < 0 || iw >= w_) continue;
                s += (double)x[((n * cc->c + m / mg * cg + ci) * h + ih) * w_ + iw] * w[((m * cg + ci) * cc->k[0] + kh) * cc->k[1] + kw];
            }
    return cc->clip ? fmin(fmax(s, 0.0), 6.0) : s;
}

/* Compile case cc, check the form it took, run it and compare with dw_ref. */
static void dw_check(int ci, const dw_case *cc)
{
    /* the conv's input: h x w, after the Pad when pad_in */
    int64_t h0 = cc->h - (cc->pad_in ? PAD_IN[0] + PAD_IN[2] : 0), w0 = cc->w - (cc->pad_in ? PAD_IN[1] + PAD_IN[3] : 0);
    int64_t oh = (cc->h + cc->pads[0] + cc->pads[2] - (cc->k[0] - 1) * cc->d[0] - 1) / cc->s[0] + 1;
    int64_t ow = (cc->w + cc->pads[1] + cc->pads[3] - (cc->k[1] - 1) * cc->d[1] - 1) / cc->s[1] + 1;
    ir_graph *g = ir_graph_new();
    int x = input(g, "x", shp(4, cc->n, cc->c, h0, w0)), xin = x;
    if (cc->pad_in) {
        int pads = ir_tensor_add(g, "pads", SMELT_I64, &(ir_shape){.rank = 1, .dim = {8}});
        const int64_t pv[8] = {0, 0, PAD_IN[0], PAD_IN[1], 0, 0, PAD_IN[2], PAD_IN[3]};
        memcpy(ir_tensor_alloc_data(g, pads), pv, sizeof pv);
        xin = op(g, "pad", OP_Pad, 3, (const int[]){x, pads, scalar(g, "pad_value", 0.5f)});
    }
    int wt = constant(g, "w", shp(4, cc->m, cc->c / cc->group, cc->k[0], cc->k[1]), 0.25f, -0.05f);
    int b = constant(g, "b", shp(1, cc->m), 0.5f, 0.1f);
    int y = op(g, "conv", OP_Conv, cc->bias ? 3 : 2, (const int[]){xin, wt, b});
    int nd = node_named(g, "conv");
    attr_ints(g, nd, "strides", 2, cc->s);
    attr_ints(g, nd, "dilations", 2, cc->d);
    attr_ints(g, nd, "pads", 4, (const int64_t[]){cc->pads[0], cc->pads[1], cc->pads[2], cc->pads[3]});
    attr_int(g, nd, "group", cc->group);
    if (cc->clip) y = op(g, "clip", OP_Clip, 3, (const int[]){y, scalar(g, "lo", 0.0f), scalar(g, "hi", 6.0f)});
    ir_graph_set_io(g, 1, &x, 1, &y);
    smelt_program *p = compile(g, 0);
    CHECK(p != NULL);
    if (!p) {
        ir_graph_free(g);
        return;
    }
    CHECK_EQ_INT(p->lp.n_kernels, 1); /* Pad and Clip fused */
    bool wide = rt_cc_vector_width() >= 16;
    bool lanes = cc->dw == 3 || (cc->dw == 4 && !wide);
    bool dw = !lanes && (cc->dw == 1 || ((cc->dw == 2 || cc->dw == 4) && wide));
    /* the lanes form: tile, weights, transposed X, accumulators and their transpose */
    CHECK_EQ_INT(workgroup_tiles(p), lanes ? 5 : dw ? 1 : 2);
    /* at stride 2 the tile's phase planes start 16 floats apart (DW_PLANE_ALIGN): its hr rows (odd
     * for an odd window) of two planes each are a multiple of 32 floats only so */
    if (dw && cc->s[1] == 2)
        for (int b = 0; b < p->lp.kernels[0]->n_bufs; b++)
            if (p->lp.kernels[0]->bufs[b].workgroup) {
                if (p->lp.kernels[0]->bufs[b].numel % 32)
                    fprintf(stderr, "  depthwise case %d: tile of %lld floats\n", ci,
                            (long long)p->lp.kernels[0]->bufs[b].numel);
                CHECK_EQ_INT(p->lp.kernels[0]->bufs[b].numel % 32, 0);
            }
    /* a stride-2 depthwise conv reading X itself (no producer fused) deinterleaves its columns */
    char *src = NULL;
    CHECK(emit_program(p->lp.kernels, p->lp.n_kernels, EMIT_C, LOCALS_HYBRID, (const int *const *)p->plan.in_place_of,
                       &src) == SMELT_OK);
    CHECK_EQ_INT(src && strstr(src, "smelt_deint2_f32(&b") != NULL, dw && cc->s[1] == 2 && !cc->pad_in);
    /* the lanes form's copy of a plain X (no producer fused) and of its accumulators: transposes */
    if (lanes && (h0 * w0 > 1 || oh * ow >= 8)) {
        if (!src || !strstr(src, "smelt_trans_f32(&b")) fprintf(stderr, "  depthwise case %d: no transposes\n", ci);
        CHECK(src && strstr(src, "smelt_trans_f32(&b"));
    }
    /* where vectors have 16 lanes, a row's whole vectors (before a masked tail) are a loop of one
     * vector's lanes, which the C emitter writes as AVX-512 intrinsics (dw_row_span) */
    int64_t tail = wide && ow > 16 && ow % 16 >= 4 ? ow % 16 : 0;
    if (dw && wide && ow > 16 && ow - tail >= 16) {
        if (!src || !strstr(src, "_mm512_storeu_ps(&b")) fprintf(stderr, "  depthwise case %d: no vector rows\n", ci);
        CHECK(src && strstr(src, "_mm512_storeu_ps(&b"));
    }
    /* the lanes form stores its unit's output planes (contiguous in Y) in one loop, not one per row */
    if (lanes) {
        char run[48];
        snprintf(run, sizeof run, "< %lld; ++i", (long long)((cc->m % 16 == 0 ? 16 : 8) * oh * ow));
        if (!src || !strstr(src, run)) fprintf(stderr, "  depthwise case %d: no store loop '%s'\n", ci, run);
        CHECK(src && strstr(src, run));
    }
    /* a row of 4 to 16 (not 8) outputs is one masked vector, and so are the last 4 to 15 (not 8) of a longer one */
    if (dw && cc->dw >= 2 && ow < 16 && ow != 8) CHECK(src && strstr(src, "_mm512_mask_storeu_ps(&b"));
    if (dw && ow > 16 && ow % 16 >= 4 && ow % 16 != 8 && rt_cc_vector_width() >= 16)
        CHECK(src && strstr(src, "_mm512_mask_storeu_ps(&b"));
    free(src);
    int64_t nx = cc->n * cc->c * h0 * w0, nxp = cc->n * cc->c * cc->h * cc->w;
    float *xd = malloc(sizeof(float) * (size_t)nx), *xp = malloc(sizeof(float) * (size_t)nxp);
    for (int64_t i = 0; i < nx; i++) xd[i] = (float)((i * 13 + 5) % 17 - 8) / 2.0f;
    for (int64_t r = 0; r < cc->n * cc->c; r++)
        for (int64_t i = 0; i < cc->h; i++)
            for (int64_t j = 0; j < cc->w; j++) {
                int64_t si = i - (cc->pad_in ? PAD_IN[0] : 0), sj = j - (cc->pad_in ? PAD_IN[1] : 0);
                bool in = si >= 0 && si < h0 && sj >= 0 && sj < w0;
                xp[(r * cc->h + i) * cc->w + j] = in ? xd[(r * h0 + si) * w0 + sj] : 0.5f;
            }
    smelt_tensor in = {.name = "x", .dtype = SMELT_F32, .rank = 4, .shape = {cc->n, cc->c, h0, w0}, .data = xd};
    CHECK(smelt_program_run(p, 1, &in) == SMELT_OK);
    smelt_tensor out;
    CHECK(smelt_program_output(p, 0, &out) == SMELT_OK);
    CHECK(out.rank == 4 && out.shape[1] == cc->m && out.shape[2] == oh && out.shape[3] == ow);
    const float *wd = g->tensors[wt].data, *bd = g->tensors[b].data, *yd = out.data;
    int bad = 0;
    for (int64_t n = 0; n < cc->n; n++)
        for (int64_t m = 0; m < cc->m; m++)
            for (int64_t i = 0; i < oh; i++)
                for (int64_t j = 0; j < ow; j++) {
                    double want = dw_ref(cc, xp, cc->h, cc->w, wd, bd, n, m, i, j);
                    double got = yd[((n * cc->m + m) * oh + i) * ow + j];
                    if (fabs(got - want) > 1e-4 * (1 + fabs(want)) && bad++ < 3)
                        fprintf(stderr, "  depthwise case %d [%lld][%lld][%lld][%lld]: %.7g, want %.7g\n", ci,
                                (long long)n, (long long)m, (long long)i, (long long)j, got, want);
                }
    CHECK_EQ_INT(bad, 0);
    /* the same program with dead locals recycled (--locals reuse): the same values (up to the
     * contraction of a product and a sum into an FMA, which depends on the form). The lanes form's
     * transpose loops are emitted as calls after their bodies, so what a body computes must stay
     * live to the loop's end (kir/locals.c use_end) */
    smelt_program *pr = compile_locals(g, 0, 2, SMELT_LOCALS_REUSE);
    CHECK(pr != NULL);
    if (pr) {
        smelt_tensor outr;
        CHECK(smelt_program_run(pr, 1, &in) == SMELT_OK);
        CHECK(smelt_program_output(pr, 0, &outr) == SMELT_OK);
        int64_t ny = cc->n * cc->m * oh * ow, diff = 0;
        for (int64_t i = 0; i < ny; i++) {
            double r = ((const float *)outr.data)[i];
            if (fabs(r - yd[i]) > 1e-5 * (1 + fabs(yd[i])) && diff++ < 3)
                fprintf(stderr, "  depthwise case %d, reuse: [%lld] %.7g, hybrid %.7g\n", ci, (long long)i, r, yd[i]);
        }
        if (diff) fprintf(stderr, "  depthwise case %d: %lld outputs differ with --locals reuse\n", ci, (long long)diff);
        CHECK_EQ_INT(diff, 0);
        smelt_program_free(pr);
    }
    free(xp);
    free(xd);
    smelt_program_free(p);
    ir_graph_free(g);
}

TEST(conv_depthwise_matches_a_direct_reference)
{
    static const dw_case cases[] = {
        /* 3x3, pads 1, 2, 0, 1 (top, left, bottom, right), batch 2, bias, Clip after */
        {2, 5, 9, 40, 5, {3, 3}, {1, 1}, {1, 1}, {1, 2, 0, 1}, 5, true, true, false, 1},
        /* 3x3 stride 2 pad 1 on odd sizes (MobileNet's downsampling), Pad before, Clip after */
        {1, 7, 13, 61, 7, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, 7, true, true, true, 1},
        /* dilation 2, pads 2, no bias */
        {1, 3, 11, 33, 3, {3, 3}, {1, 1}, {2, 2}, {2, 2, 2, 2}, 3, false, false, false, 1},
        /* 5x5 pad 2, batch 2, Pad before */
        {2, 4, 8, 30, 4, {5, 5}, {1, 1}, {1, 1}, {2, 2, 2, 2}, 4, true, false, true, 1},
        /* uneven strides (2, 3), 3x2 kernel, dilation (1, 2), pads on one side only */
        {1, 2, 10, 95, 2, {3, 2}, {2, 3}, {1, 2}, {0, 0, 2, 1}, 2, true, true, false, 1},
        /* stride 2 pad 1, batch 2, 5 channels, odd width 67: the columns both phase planes read
         * as one deinterleave loop (smelt_deint2_f32 in the C), the rest per plane */
        {2, 5, 12, 67, 5, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, 5, true, true, false, 1},
        /* stride 2 pad 1 on planes of 33 columns (65 -> 32: stored 48 apart, the most padding) and
         * of 32 (64 -> 31 + a tail of 15: none), batch 2 */
        {2, 3, 9, 63, 3, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, 3, true, true, false, 1},
        {2, 3, 8, 62, 3, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, 3, true, true, false, 1},
        /* stride 2 with pads 0 left, 2 right and a 5x5 window, no bias */
        {1, 3, 11, 72, 3, {5, 5}, {2, 2}, {1, 1}, {2, 0, 1, 2}, 3, false, false, false, 1},
        /* rows of more than 16 outputs whose last 4 to 15 are one masked vector where vectors have 16
         * lanes: 17 channels at 28x28 (16 + 12), one channel 5x5 on rows of 37 (32 + 5), 3 channels
         * 61 -> 31 at stride 2 with a Pad before (16 + 15), 5x5 stride 2 59 -> 30 (16 + 14) */
        {1, 17, 28, 28, 17, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, 17, true, true, false, 1},
        {1, 1, 9, 37, 1, {5, 5}, {1, 1}, {1, 1}, {2, 2, 2, 2}, 1, true, false, false, 1},
        {1, 3, 11, 61, 3, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, 3, true, true, true, 1},
        {1, 3, 10, 59, 3, {5, 5}, {2, 2}, {1, 1}, {2, 2, 2, 2}, 3, false, true, false, 1},
        /* rows of whole vectors in pairs and one alone, then a masked tail where vectors have 16
         * lanes: 53 = 2*16 + 16 + 5; stride 2, 82 -> 41 = 2*16 + 9 */
        {1, 3, 6, 53, 3, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, 3, true, true, false, 1},
        {2, 2, 9, 82, 2, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, 2, true, true, false, 1},
        /* two rows a step at stride 1: 23 rows in units of 12 and 11 (one row a step there), 5x5 on
         * rows of 14 (one masked vector each on 16-lane hosts, else flat), and of 13 (an odd last row) */
        {1, 2, 23, 40, 2, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, 2, true, true, false, 1},
        {1, 3, 14, 14, 3, {5, 5}, {1, 1}, {1, 1}, {2, 2, 2, 2}, 3, true, true, false, 2},
        {1, 17, 13, 13, 17, {5, 5}, {1, 1}, {1, 1}, {2, 2, 2, 2}, 17, false, false, true, 2},
        /* windows 5 wide on rows of one masked vector, 5 to 7 rows a step where they divide the
         * unit's rows (dw_rows_a_step; 2 a step elsewhere): 12x12 (6) batch 2 with a Pad before, 15x15
         * (5) with uneven pads, 60 rows of 14 in units of 30 (6), a 7x5 window dilated (2, 1) on rows
         * of 11 (none: 2 a step), 3x5 on 14 rows of 13 (7) without bias */
        {2, 5, 12, 12, 5, {5, 5}, {1, 1}, {1, 1}, {2, 2, 2, 2}, 5, true, true, true, 2},
        {1, 4, 15, 15, 4, {5, 5}, {1, 1}, {1, 1}, {1, 2, 3, 2}, 4, true, false, false, 2},
        {1, 3, 60, 14, 3, {5, 5}, {1, 1}, {1, 1}, {2, 2, 2, 2}, 3, true, true, false, 2},
        {1, 2, 11, 11, 2, {7, 5}, {1, 1}, {2, 1}, {6, 2, 6, 2}, 2, true, false, false, 2},
        {1, 3, 14, 13, 3, {3, 5}, {1, 1}, {1, 1}, {1, 2, 1, 2}, 3, false, true, false, 2},
        /* rows of 17 to 27 at stride 1, a vector and a masked one where vectors have 16 lanes (else
         * the flat form): 17 channels at 24x24, 3 channels on rows of 21 with pads 0 and 2 */
        {1, 17, 9, 24, 17, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, 17, true, true, false, 2},
        {1, 3, 7, 21, 3, {3, 3}, {1, 1}, {1, 1}, {1, 0, 1, 2}, 3, true, false, false, 2},
        /* rows of 4 to 16 outputs, each one masked vector where vectors have 16 lanes (else the flat
         * form): MobileNet's 14x14 and 7x7 layers, 27 -> 14 at stride 2, an odd width of 5 with pads
         * 0 and 2, rows of exactly 16 and 8 lanes (Pad before), and of 4 */
        {1, 6, 14, 14, 6, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, 6, true, true, false, 2},
        {2, 5, 7, 7, 5, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, 5, false, true, false, 2},
        {1, 9, 13, 27, 9, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, 9, true, true, false, 2},
        {1, 3, 6, 5, 3, {3, 3}, {1, 1}, {1, 1}, {1, 0, 1, 2}, 3, true, false, false, 2},
        {1, 4, 10, 16, 4, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, 4, true, true, true, 2},
        {1, 3, 9, 10, 3, {3, 3}, {1, 1}, {1, 1}, {1, 0, 1, 0}, 3, true, true, false, 2},
        {1, 2, 5, 4, 2, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, 2, true, true, false, 2},
        /* left to the flat form: multiplier 2, two channels per group, rows of 3, 14 -> 7 at
         * stride 2 (fewer than 8 outputs a row), and a 5x5 window on rows of 7 */
        {1, 4, 9, 40, 8, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, 4, true, true, false, 0},
        {1, 6, 9, 40, 6, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, 3, true, false, false, 0},
        {1, 4, 6, 3, 4, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, 4, true, true, false, 0},
        {1, 9, 14, 14, 9, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, 9, true, true, false, 0},
        {1, 5, 7, 7, 5, {5, 5}, {1, 1}, {1, 1}, {2, 2, 2, 2}, 5, true, true, false, 0},
    };
    for (int ci = 0; ci < (int)(sizeof cases / sizeof cases[0]); ci++) dw_check(ci, &cases[ci]);
}

/* The row form's vector loops compiled without AVX-512 and without AVX (their
 * scalar loops): the cases of whole vectors in pairs, one alone and a tail. */
TEST(conv_depthwise_rows_match_without_avx512)
{
    static const dw_case cases[] = {
        {1, 3, 6, 53, 3, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, 3, true, true, false, 1},
        {2, 2, 9, 82, 2, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, 2, true, true, false, 1},
    };
    static const char *const ccs[] = {"cc -mno-avx512f", "cc -mno-avx"};
    const char *old = getenv("SMELT_CC");
    char *saved = old ? strdup(old) : NULL;
    for (int k = 0; k < 2; k++) {
        setenv("SMELT_CC", ccs[k], 1);
        for (int ci = 0; ci < (int)(sizeof cases / sizeof cases[0]); ci++) dw_check(ci, &cases[ci]);
    }
    if (saved) setenv("SMELT_CC", saved, 1);
    else unsetenv("SMELT_CC");
    free(saved);
}

/* The lanes form (channels across the vector, rows of up to 8 outputs; up to
 * 16 where vectors have fewer than 16 lanes): 16 channels a unit, or 8 where
 * C is a multiple of 8 only; widths 1 to 8 (and 9 to 16 on narrower hosts),
 * 3x3 and 5x5, strides 1 and 2, pads uneven or none, dilation 2, batch 2,
 * with and without bias, Clip after, a Pad fused before (then the copy of X
 * is not a plain transpose). */
TEST(conv_depthwise_lanes_matches_a_direct_reference)
{
    static const dw_case cases[] = {
        /* MobileNet's 7x7 layers: 3x3 and 5x5 pad 1/2, 32 channels (two units), batch 2 */
        {2, 32, 7, 7, 32, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, 32, true, true, false, 3},
        {1, 16, 7, 7, 16, {5, 5}, {1, 1}, {1, 1}, {2, 2, 2, 2}, 16, true, false, false, 3},
        /* 14 -> 7 and 15 -> 8 at stride 2, 5x5 and 3x3; 24 channels (8 a unit) */
        {1, 24, 14, 14, 24, {5, 5}, {2, 2}, {1, 1}, {2, 2, 2, 2}, 24, true, true, false, 3},
        {1, 16, 15, 15, 16, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, 16, false, true, false, 3},
        /* widths 1 to 6: a 1x1 plane, 2x3, 5x3 with uneven pads, 3x6 without pads, a Pad before */
        {1, 8, 1, 1, 8, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, 8, true, false, false, 3},
        {1, 16, 2, 3, 16, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, 16, true, true, false, 3},
        {2, 8, 5, 3, 8, {5, 5}, {1, 1}, {1, 1}, {2, 0, 1, 2}, 8, false, false, false, 3},
        {1, 16, 5, 8, 16, {3, 3}, {1, 1}, {1, 1}, {0, 0, 0, 0}, 16, true, false, false, 3},
        {1, 32, 6, 5, 32, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, 32, true, true, true, 3},
        /* dilation 2 on rows of 4, stride 2 on 9 -> 5, uneven strides 2 and 1 */
        {1, 16, 8, 8, 16, {3, 3}, {1, 1}, {2, 2}, {0, 0, 0, 0}, 16, true, false, false, 3},
        {1, 8, 9, 9, 8, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, 8, true, true, false, 3},
        {1, 16, 9, 6, 16, {3, 3}, {2, 1}, {1, 1}, {1, 1, 1, 1}, 16, true, false, false, 3},
        /* rows of 9 to 16: masked vectors where vectors have 16 lanes, else this form (14x14 5x5, 13x13
         * with a Pad before, 20 -> 10 at stride 2 in units of 8 channels (16 would pass DW_STACK_BYTES),
         * rows of 16) */
        {1, 16, 14, 14, 16, {5, 5}, {1, 1}, {1, 1}, {2, 2, 2, 2}, 16, true, true, false, 4},
        {1, 8, 13, 13, 8, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, 8, true, false, true, 4},
        {1, 8, 20, 20, 8, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, 8, false, true, false, 4},
        {1, 8, 4, 16, 8, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, 8, true, true, false, 4},
    };
    for (int ci = 0; ci < (int)(sizeof cases / sizeof cases[0]); ci++) dw_check(ci, &cases[ci]);
}
