/*
 * test_conv_winograd.c — the Winograd rewrite of 3x3 stride-1 convolutions
 * (graph/winograd.c, ops/conv_winograd.c) against a direct reference computed
 * here in double: F(4x4) and F(2x2), odd H and W that are no multiple of the
 * tile (partial tiles at the right and bottom), pads 0 and 1, batch 2, channel
 * counts that are no multiple of the GEMM tiles, no bias, and a Relu or a
 * residual Add + Relu epilogue that fusion must put into WinogradOutput's
 * kernel; each case with its filters as the C target's panels (the batched
 * packed GEMM) compiled fused and --no-fuse, with row-major filters (the plain
 * loop), and on OpenCL where a device opens (the pass runs for the C target
 * only; a graph rewritten beforehand must still lower on a GPU target). One
 * case goes through the default pipeline only (the C target's rule). And the
 * batched GEMM alone (WinogradGemm) on hand-made products against a reference.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/program.h"
#include "fuse_cases.h"
#include "graph/passes.h"
#include "ops/matmul.h"
#include "rt/device.h"
#include "rt/rt.h"
#include "test.h"

typedef struct wino_case {
    int64_t n, c, k, h, w, pad;
    int m;      /* 2 or 4; 0: the default pipeline decides */
    int epi;    /* 0 none, 1 Relu, 2 Add of a second input, then Relu */
    bool bias;
    bool opencl; /* also on OpenCL (PoCL builds slowly: two cases) */
} wino_case;

static float lcg(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static void fill(float *d, int64_t n, uint32_t seed)
{
    for (int64_t i = 0; i < n; i++) d[i] = lcg(&seed);
}

/* y[n][k][oy][ox] = epi(b[k] + sum_c,i,j W[k][c][i][j] x[n][c][oy+i-p][ox+j-p] (+ r)) */
static void conv_ref(const wino_case *wc, int64_t oh, int64_t ow, const float *x, const float *w, const float *b,
                     const float *r, double *y)
{
    for (int64_t n = 0; n < wc->n; n++)
        for (int64_t k = 0; k < wc->k; k++)
            for (int64_t oy = 0; oy < oh; oy++)
                for (int64_t ox = 0; ox < ow; ox++) {
                    double acc = wc->bias ? b[k] : 0;
                    for (int64_t c = 0; c < wc->c; c++)
                        for (int i = 0; i < 3; i++)
                            for (int j = 0; j < 3; j++) {
                                int64_t iy = oy + i - wc->pad, ix = ox + j - wc->pad;
                                if (iy < 0 || iy >= wc->h || ix < 0 || ix >= wc->w) continue;
                                acc += (double)w[((k * wc->c + c) * 3 + i) * 3 + j] * x[((n * wc->c + c) * wc->h + iy) * wc->w + ix];
                            }
                    int64_t at = ((n * wc->k + k) * oh + oy) * ow + ox;
                    if (wc->epi == 2) acc += r[at];
                    if (wc->epi) acc = acc > 0 ? acc : 0;
                    y[at] = acc;
                }
}

/* The graph compiled for OpenCL (NULL where no OpenCL device opens). */
static smelt_program *compile_opencl(ir_graph *g)
{
    rt_device *d = NULL;
    if (rt_device_open("opencl", 0, &d) != SMELT_OK) return NULL;
    rt_device_close(d);
    smelt_options opt;
    smelt_options_init(&opt);
    opt.devices = "opencl";
    struct smelt_model model = {.g = g};
    smelt_program *p = NULL;
    smelt_status st = smelt_program_compile(&model, &opt, 0, NULL, &p);
    if (st) fprintf(stderr, "  compile (opencl): %s\n", smelt_last_error());
    CHECK(st == SMELT_OK);
    return p;
}

static int count_op(const ir_graph *g, op_id op)
{
    int n = 0;
    for (int i = 0; i < g->n_nodes; i++) n += !g->nodes[i].dead && g->nodes[i].op == op;
    return n;
}

typedef struct wino_graph {
    ir_graph *g;
    int w, b;
} wino_graph;

/* The case's Conv (and epilogue); rewritten here with filters of nr-column
 * panels (0: row-major) when wc->m is set. */
static wino_graph build(const wino_case *wc, int ci, int64_t nr)
{
    int64_t oh = wc->h + 2 * wc->pad - 2, ow = wc->w + 2 * wc->pad - 2;
    ir_graph *g = ir_graph_new();
    int x = input(g, "x", (ir_shape){.rank = 4, .dim = {wc->n, wc->c, wc->h, wc->w}});
    int r = wc->epi == 2 ? input(g, "r", (ir_shape){.rank = 4, .dim = {wc->n, wc->k, oh, ow}}) : -1;
    int w = ir_tensor_add(g, "w", SMELT_F32, &(ir_shape){.rank = 4, .dim = {wc->k, wc->c, 3, 3}});
    int b = ir_tensor_add(g, "b", SMELT_F32, &(ir_shape){.rank = 1, .dim = {wc->k}});
    fill(ir_tensor_alloc_data(g, w), wc->k * wc->c * 9, 7u + (uint32_t)ci);
    fill(ir_tensor_alloc_data(g, b), wc->k, 11u + (uint32_t)ci);
    int y = op(g, "conv", OP_Conv, wc->bias ? 3 : 2, (const int[]){x, w, b});
    int node = node_named(g, "conv");
    int64_t pads[4] = {wc->pad, wc->pad, wc->pad, wc->pad};
    attr_ints(g, node, "pads", 4, pads);
    attr_ints(g, node, "kernel_shape", 2, (const int64_t[]){3, 3});
    if (wc->epi == 2) y = op2(g, "add", OP_Add, y, r);
    if (wc->epi) y = op1(g, "relu", OP_Relu, y);
    int ins[2] = {x, r};
    ir_graph_set_io(g, wc->epi == 2 ? 2 : 1, ins, 1, &y);
    if (wc->m) { /* rewritten here, whatever the default rule says */
        CHECK(graph_infer(g, NULL) == SMELT_OK);
        graph_winograd_rule rule = {wc->m, 1, 1, nr, 0};
        CHECK(graph_winograd(g, &rule) == SMELT_OK);
        CHECK_EQ_INT(count_op(g, OP_WinogradOutput), 1);
        CHECK_EQ_INT(count_op(g, OP_WinogradGemm), 1);
        CHECK_EQ_INT(count_op(g, OP_Conv), 0);
    }
    return (wino_graph){g, w, b};
}

static void run_case(int ci, const wino_case *wc)
{
    int64_t oh = wc->h + 2 * wc->pad - 2, ow = wc->w + 2 * wc->pad - 2;
    int64_t nr = mm_tiles_for(rt_cc_vector_width()).nr;
    wino_graph packed = build(wc, ci, nr), plain = {0};
    int64_t nx = wc->n * wc->c * wc->h * wc->w, ny = wc->n * wc->k * oh * ow;
    float *xd = malloc(sizeof(float) * (size_t)nx), *rd = malloc(sizeof(float) * (size_t)ny);
    double *ref = malloc(sizeof(double) * (size_t)ny);
    fill(xd, nx, 3u + (uint32_t)ci);
    fill(rd, ny, 5u + (uint32_t)ci);
    conv_ref(wc, oh, ow, xd, packed.g->tensors[packed.w].data, packed.g->tensors[packed.b].data, rd, ref);
    smelt_tensor in[2] = {{.name = "x", .dtype = SMELT_F32, .rank = 4, .shape = {wc->n, wc->c, wc->h, wc->w}, .data = xd},
                          {.name = "r", .dtype = SMELT_F32, .rank = 4, .shape = {wc->n, wc->k, oh, ow}, .data = rd}};
    /* panels fused, panels --no-fuse, row-major filters fused, row-major on OpenCL */
    for (int mode = 0; mode < 4; mode++) {
        if (mode >= 2 && !wc->m) break;
        if (mode == 3 && !wc->opencl) break;
        if (mode == 2) plain = build(wc, ci, 0);
        smelt_program *prog = mode == 3 ? compile_opencl(plain.g) : compile(mode >= 2 ? plain.g : packed.g, mode == 1);
        if (mode == 3 && !prog) break;
        CHECK(prog != NULL);
        if (!prog) continue;
        CHECK_EQ_INT(count_op(prog->g, OP_WinogradOutput), 1);
        /* fused: WinogradInput, the batched GEMM, WinogradOutput with the
         * Relu / Add+Relu as its epilogue */
        if (mode == 0 || mode == 2) CHECK_EQ_INT(prog->lp.n_kernels, 3);
        /* the products on the microkernel where the filters are panels */
        if (mode < 3) CHECK(prog->cls[0].source && (strstr(prog->cls[0].source, "smelt_gemm_f32_") != NULL) == (mode < 2));
        smelt_tensor out = {0};
        CHECK(smelt_program_run(prog, wc->epi == 2 ? 2 : 1, in) == SMELT_OK);
        CHECK(smelt_program_output(prog, 0, &out) == SMELT_OK);
        CHECK_EQ_INT(smelt_tensor_numel(&out), ny);
        const float *yd = out.data;
        int bad = 0;
        /* float rounding of a C*9-term sum grows with its square root: 1e-4 at 16 channels */
        double tol = 1e-4 * (wc->c > 16 ? sqrt((double)wc->c / 16) : 1);
        for (int64_t i = 0; yd && i < ny && bad < 3; i++)
            if (!(fabs(yd[i] - ref[i]) <= tol * (1 + fabs(ref[i])))) {
                fprintf(stderr, "  case %d (mode %d) [%lld]: %g, want %g\n", ci, mode, (long long)i, yd[i], ref[i]);
                bad++;
            }
        CHECK(bad == 0);
        smelt_program_free(prog);
    }
    free(ref);
    free(rd);
    free(xd);
    ir_graph_free(packed.g);
    if (plain.g) ir_graph_free(plain.g);
}

TEST(conv_winograd_matches_a_direct_reference)
{
    static const wino_case cases[] = {
        {1, 17, 19, 13, 11, 1, 4, 1, true, true},   /* partial tiles both ways, Relu */
        {2, 16, 21, 10, 9, 0, 4, 2, true, false},   /* pad 0, batch 2, residual Add + Relu */
        {1, 20, 18, 7, 15, 1, 4, 0, false, false},  /* no bias, no epilogue */
        {2, 17, 19, 13, 11, 1, 2, 2, true, true},   /* F(2x2) */
        {1, 18, 17, 8, 9, 0, 2, 1, false, false},   /* F(2x2), pad 0, no bias */
        {2, 64, 67, 45, 43, 1, 0, 2, true, false},  /* the default pipeline's rule and panels */
    };
    for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) run_case(i, &cases[i]);
}

/* The default rule's choice of m by tiles: F(4x4) with 4x4 tiles enough,
 * F(2x2) where only 2x2 ones are, a Conv where neither (ResNet-18's layer2,
 * layer3 and layer4 shapes, and a 5x5 output: 9 tiles of 2x2). */
TEST(conv_winograd_picks_m_by_tiles)
{
    static const struct { int64_t hw; int m; } cases[] = {{28, 4}, {14, 2}, {7, 2}, {5, 0}};
    for (int i = 0; i < 4; i++) {
        ir_graph *g = ir_graph_new();
        int x = input(g, "x", (ir_shape){.rank = 4, .dim = {1, 64, cases[i].hw, cases[i].hw}});
        int w = constant(g, "w", (ir_shape){.rank = 4, .dim = {64, 64, 3, 3}}, 0.1f, 0);
        int y = op(g, "conv", OP_Conv, 2, (const int[]){x, w});
        attr_ints(g, node_named(g, "conv"), "pads", 4, (const int64_t[]){1, 1, 1, 1});
        ir_graph_set_io(g, 1, &x, 1, &y);
        CHECK(graph_infer(g, NULL) == SMELT_OK);
        graph_winograd_rule rule = {GRAPH_WINOGRAD_M, GRAPH_WINOGRAD_MIN_CHANNELS, GRAPH_WINOGRAD_MIN_TILES, 0,
                                    GRAPH_WINOGRAD_MIN_TILES_2X2};
        CHECK(graph_winograd(g, &rule) == SMELT_OK);
        CHECK_EQ_INT(count_op(g, OP_Conv), cases[i].m ? 0 : 1);
        int wi = node_named(g, "conv/winograd_in");
        CHECK((wi >= 0) == (cases[i].m != 0));
        if (wi >= 0) CHECK_EQ_INT(ir_attr_int(&g->nodes[wi], "m", 0), cases[i].m);
        ir_graph_free(g);
    }
}

TEST(conv_winograd_leaves_other_convs_direct)
{
    /* stride 2, a 5x5 kernel, a group of 2 and too few channels stay Convs */
    static const struct { int64_t k, c, ks, stride, group; } cases[] = {
        {32, 32, 3, 2, 1}, {32, 32, 5, 1, 1}, {32, 32, 3, 1, 2}, {8, 32, 3, 1, 1},
    };
    for (int i = 0; i < 4; i++) {
        ir_graph *g = ir_graph_new();
        int x = input(g, "x", (ir_shape){.rank = 4, .dim = {1, cases[i].c, 64, 64}});
        int w = constant(g, "w", (ir_shape){.rank = 4, .dim = {cases[i].k, cases[i].c / cases[i].group, cases[i].ks, cases[i].ks}}, 0.1f, 0);
        int y = op(g, "conv", OP_Conv, 2, (const int[]){x, w});
        int node = node_named(g, "conv");
        attr_ints(g, node, "strides", 2, (const int64_t[]){cases[i].stride, cases[i].stride});
        attr_int(g, node, "group", cases[i].group);
        ir_graph_set_io(g, 1, &x, 1, &y);
        CHECK(graph_infer(g, NULL) == SMELT_OK);
        graph_winograd_rule rule = {4, GRAPH_WINOGRAD_MIN_CHANNELS, 1, 0, 0};
        CHECK(graph_winograd(g, &rule) == SMELT_OK);
        CHECK_EQ_INT(count_op(g, OP_Conv), 1);
        CHECK_EQ_INT(count_op(g, OP_WinogradInput), 0);
        ir_graph_free(g);
    }
}

/* WinogradGemm alone: P products M[p] = V[p]^T U[p] with U made here as the
 * C target's panels (each product's after the previous one's, the last panel's
 * columns past K zero), tiles and channels no multiple of the tiles, against
 * a reference in double from the unpacked U: a product that read another's
 * panels (a wrong batch offset) would fail, each U[p] being different. */
TEST(conv_winograd_batched_gemm_matches_a_reference)
{
    static const struct { int64_t p, c, tiles, k; } cases[] = {
        {16, 19, 13, 21}, {36, 33, 50, 70}, {36, 64, 49, 64}, {16, 7, 5, 3},
    };
    int64_t nr = mm_tiles_for(rt_cc_vector_width()).nr;
    for (int ci = 0; ci < 4; ci++) {
        int64_t p = cases[ci].p, ch = cases[ci].c, tiles = cases[ci].tiles, k = cases[ci].k, np = (k + nr - 1) / nr;
        ir_graph *g = ir_graph_new();
        int v = input(g, "v", (ir_shape){.rank = 3, .dim = {p, ch, tiles}});
        int u = ir_tensor_add(g, "u", SMELT_F32, &(ir_shape){.rank = 3, .dim = {p * np, ch, nr}});
        float *ud = ir_tensor_alloc_data(g, u), *plain = malloc(sizeof(float) * (size_t)(p * ch * k));
        fill(plain, p * ch * k, 17u + (uint32_t)ci);
        for (int64_t q = 0; q < p; q++)
            for (int64_t c = 0; c < ch; c++)
                for (int64_t j = 0; j < k; j++) ud[((q * np + j / nr) * ch + c) * nr + j % nr] = plain[(q * ch + c) * k + j];
        g->tensors[u].enc = (ir_encoding){.kind = IR_ENC_PANELS, .k = ch, .n = k, .nr = nr,
                                          .logical = {.rank = 3, .dim = {p, ch, k}}};
        int m = op2(g, "gemm", OP_WinogradGemm, v, u);
        ir_graph_set_io(g, 1, &v, 1, &m);
        int64_t nv = p * ch * tiles, nm = p * tiles * k;
        float *vd = malloc(sizeof(float) * (size_t)nv);
        fill(vd, nv, 23u + (uint32_t)ci);
        smelt_program *prog = compile(g, 0);
        CHECK(prog != NULL);
        if (prog) {
            CHECK_EQ_INT(prog->lp.n_kernels, 1);
            CHECK(prog->cls[0].source && strstr(prog->cls[0].source, "smelt_gemm_f32_") != NULL);
            smelt_tensor in = {.name = "v", .dtype = SMELT_F32, .rank = 3, .shape = {p, ch, tiles}, .data = vd}, out = {0};
            CHECK(smelt_program_run(prog, 1, &in) == SMELT_OK);
            CHECK(smelt_program_output(prog, 0, &out) == SMELT_OK);
            CHECK_EQ_INT(smelt_tensor_numel(&out), nm);
            const float *md = out.data;
            int bad = 0;
            for (int64_t q = 0; md && q < p; q++)
                for (int64_t t = 0; t < tiles; t++)
                    for (int64_t j = 0; j < k && bad < 3; j++) {
                        double want = 0;
                        for (int64_t c = 0; c < ch; c++) want += (double)vd[(q * ch + c) * tiles + t] * plain[(q * ch + c) * k + j];
                        double got = md[(q * tiles + t) * k + j];
                        if (!(fabs(got - want) <= 1e-5 * (1 + fabs(want)) * sqrt((double)ch))) {
                            fprintf(stderr, "  case %d M[%lld][%lld][%lld]: %g, want %g\n", ci, (long long)q, (long long)t,
                                    (long long)j, got, want);
                            bad++;
                        }
                    }
            CHECK(bad == 0);
            smelt_program_free(prog);
        }
        free(vd);
        free(plain);
        ir_graph_free(g);
    }
}

/* A program with Winograd convolutions (the default rule: F(4x4), the
 * transformed filters as batched panels, constants the pass made) stored in
 * the program cache and loaded again computes what the compiled one does. */
TEST(conv_winograd_program_cache_round_trips)
{
    static const wino_case wc = {1, 64, 64, 28, 28, 1, 0, 1, true, false};
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/smelt-test-wino-XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
    setenv("SMELT_CACHE_DIR", dir, 1);
    wino_graph wg = build(&wc, 9, 0);
    int64_t nx = wc.n * wc.c * wc.h * wc.w, ny = wc.n * wc.k * wc.h * wc.w;
    float *xd = malloc(sizeof(float) * (size_t)nx), *first = calloc((size_t)ny, sizeof(float));
    double *ref = malloc(sizeof(double) * (size_t)ny);
    fill(xd, nx, 31u);
    conv_ref(&wc, wc.h, wc.w, xd, wg.g->tensors[wg.w].data, wg.g->tensors[wg.b].data, NULL, ref);
    smelt_model *m = NULL;
    CHECK_EQ_INT(program_model_wrap(wg.g, &m), SMELT_OK);
    smelt_tensor in = {.name = "x", .dtype = SMELT_F32, .rank = 4, .shape = {wc.n, wc.c, wc.h, wc.w}, .data = xd};
    for (int pass = 0; pass < 2 && m; pass++) { /* compiled and stored, then loaded */
        smelt_options opt;
        smelt_options_init(&opt);
        opt.threads = 2;
        smelt_program *p = NULL;
        CHECK_EQ_INT(program_compile(m, &opt, 0, NULL, true, &p), SMELT_OK);
        if (!p) continue;
        CHECK((p->cached != NULL) == (pass == 1));
        if (pass == 0) CHECK_EQ_INT(count_op(p->g, OP_WinogradGemm), 1);
        smelt_tensor out = {0};
        CHECK_EQ_INT(smelt_program_run(p, 1, &in), SMELT_OK);
        CHECK_EQ_INT(smelt_program_output(p, 0, &out), SMELT_OK);
        CHECK_EQ_INT(smelt_tensor_numel(&out), ny);
        const float *yd = out.data;
        if (yd && pass == 0) memcpy(first, yd, sizeof(float) * (size_t)ny);
        if (yd && pass == 1) CHECK(memcmp(first, yd, sizeof(float) * (size_t)ny) == 0);
        int bad = 0;
        for (int64_t i = 0; yd && i < ny; i++) bad += !(fabs(yd[i] - ref[i]) <= 2e-4 * (1 + fabs(ref[i])));
        CHECK_EQ_INT(bad, 0);
        smelt_program_free(p);
    }
    smelt_model_free(m);
    unsetenv("SMELT_CACHE_DIR");
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
    free(ref);
    free(first);
    free(xd);
}

/* Panels of another width than the C target's GEMM reads fail to compile,
 * naming the node and the widths, not a crash or a wrong read. */
TEST(conv_winograd_gemm_rejects_foreign_panels)
{
    int64_t nr = mm_tiles_for(rt_cc_vector_width()).nr + 1, p = 16, ch = 8, tiles = 9, k = 20, np = (k + nr - 1) / nr;
    ir_graph *g = ir_graph_new();
    int v = input(g, "v", (ir_shape){.rank = 3, .dim = {p, ch, tiles}});
    int u = ir_tensor_add(g, "u", SMELT_F32, &(ir_shape){.rank = 3, .dim = {p * np, ch, nr}});
    ir_tensor_alloc_data(g, u);
    g->tensors[u].enc = (ir_encoding){.kind = IR_ENC_PANELS, .k = ch, .n = k, .nr = nr, .logical = {.rank = 3, .dim = {p, ch, k}}};
    int m = op2(g, "gemm", OP_WinogradGemm, v, u);
    ir_graph_set_io(g, 1, &v, 1, &m);
    smelt_options opt;
    smelt_options_init(&opt);
    struct smelt_model model = {.g = g};
    smelt_program *prog = NULL;
    CHECK(smelt_program_compile(&model, &opt, 0, NULL, &prog) != SMELT_OK);
    CHECK_STR_HAS(smelt_last_error(), "gemm");
    CHECK_STR_HAS(smelt_last_error(), "panels of");
    if (prog) smelt_program_free(prog);
    ir_graph_free(g);
}
