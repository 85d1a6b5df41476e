/*
 * test_gemm_packed.c — the C target's packed GEMM: constant B packed into
 * panels at compile time (graph_pack_weights), and MatMul / Gemm through the
 * microkernel path on odd sizes (N not a multiple of NR, K = 1, M = 1, K
 * past one KC slice, batched MatMul with broadcast, B packed per call),
 * against a double reference.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/program.h"
#include "graph/passes.h"
#include "ops/gemm_packed.h"
#include "ops/matmul.h"
#include "test.h"
#include "fuse_cases.h"

/* The packed copy holds B's columns in panels of nr, the tail zero, with the
 * encoding set; a transB Gemm's weight is packed transposed and the flag cleared;
 * a weight two MatMuls share is packed once. */
TEST(gemm_pack_weights_lays_out_panels)
{
    for (int trans = 0; trans < 2; trans++) {
        ir_graph *g = ir_graph_new();
        int64_t k = 3, n = 37, nr = 16;
        int x = input(g, "x", shp(2, 4, 3));
        int b = constant(g, "b", trans ? shp(2, n, k) : shp(2, k, n), 1.0f, 0.0f);
        int y = trans ? op(g, "mm", OP_Gemm, 2, (const int[]){x, b}) : op2(g, "mm", OP_MatMul, x, b);
        if (trans) attr_int(g, node_named(g, "mm"), "transB", 1);
        int y2 = trans ? y : op2(g, "mm2", OP_MatMul, x, b);
        int outs[2] = {y, y2};
        ir_graph_set_io(g, 1, &x, trans ? 1 : 2, outs);
        CHECK(graph_infer(g, lower_eval_node) == SMELT_OK);
        CHECK(graph_pack_weights(g, nr, NULL, NULL, false) == SMELT_OK);
        const ir_node *nd = &g->nodes[node_named(g, "mm")];
        const ir_tensor *p = &g->tensors[nd->in[1]];
        CHECK(nd->in[1] != b && p->enc.kind == IR_ENC_PANELS && p->enc.k == k && p->enc.n == n && p->enc.nr == nr);
        CHECK(p->shape.rank == 3 && p->shape.dim[0] == 3 && p->shape.dim[1] == k && p->shape.dim[2] == nr);
        CHECK_EQ_INT(ir_attr_int(nd, "transB", 0), 0);
        if (!trans) CHECK_EQ_INT(g->nodes[node_named(g, "mm2")].in[1], nd->in[1]);
        /* shape inference reads the packed operand by its logical [k, n] */
        CHECK(graph_infer(g, lower_eval_node) == SMELT_OK);
        CHECK(g->tensors[y].shape.rank == 2 && g->tensors[y].shape.dim[0] == 4 && g->tensors[y].shape.dim[1] == n);
        nd = &g->nodes[node_named(g, "mm")];
        const float *src = g->tensors[b].data, *pk = p->data;
        for (int64_t q = 0; q < 3; q++)
            for (int64_t kk = 0; kk < k; kk++)
                for (int64_t j = 0; j < nr; j++) {
                    int64_t col = q * nr + j;
                    float want = col >= n ? 0.0f : trans ? src[col * k + kk] : src[kk * n + col];
                    CHECK(pk[(q * k + kk) * nr + j] == want);
                }
        ir_graph_free(g);
    }
}

/* Two programs of one model (other input shapes) read one packed copy of a
 * weight, made once: the model keeps it, not each program. */
TEST(gemm_packed_weight_is_shared_by_programs)
{
    ir_graph *g = ir_graph_new();
    int x = input(g, "x", shp(2, -1, 24));
    g->tensors[x].dim_param[0] = "batch";
    int b = constant(g, "b", shp(2, 24, 40), 0.5f, 0.0f);
    int y = op2(g, "mm", OP_MatMul, x, b);
    ir_graph_set_io(g, 1, &x, 1, &y);
    struct smelt_model model = {.g = g};
    smelt_options opt;
    smelt_options_init(&opt);
    opt.threads = 1;
    smelt_program *p[2] = {NULL, NULL};
    const void *data[2] = {NULL, NULL};
    for (int i = 0; i < 2; i++) {
        smelt_tensor in = {.name = "x", .dtype = SMELT_F32, .rank = 2, .shape = {3 + 20 * i, 24}};
        CHECK(smelt_program_compile(&model, &opt, 1, &in, &p[i]) == SMELT_OK);
        if (!p[i]) continue;
        const ir_node *n = &p[i]->g->nodes[node_named(p[i]->g, "mm")];
        CHECK(p[i]->g->tensors[n->in[1]].enc.kind == IR_ENC_PANELS);
        data[i] = p[i]->g->tensors[n->in[1]].data;
    }
    CHECK(data[0] && data[0] == data[1] && data[0] != g->tensors[b].data);
    int kept = 0;
    for (packed_weight *w = atomic_load(&model.packed); w; w = w->next) kept++;
    CHECK_EQ_INT(kept, 1);
    smelt_program_free(p[0]);
    smelt_program_free(p[1]);
    for (packed_weight *w = atomic_load(&model.packed), *next; w; w = next) { /* what smelt_model_free does */
        next = w->next;
        free(w->data);
        free(w);
    }
    ir_graph_free(g);
}

/* p's kernels run by the interpreter (every load and store bounds-checked, the
 * gemm loops as written) with input 0 = x (and input 1 = b when given): the
 * first output's data (caller frees), or NULL when a kernel fails. */
static float *interpret(const smelt_program *p, const float *x, const float *b, int out)
{
    int nt = p->g->n_tensors + 64;
    void **mem = calloc((size_t)nt, sizeof(void *));
    bool ok = mem != NULL;
    for (int i = 0; ok && i < p->lp.n_kernels; i++) {
        const kir_kernel *k = p->lp.kernels[i];
        void *bufs[64] = {0};
        for (int q = 0; q < k->n_bufs && q < 64; q++) {
            const kir_buffer *kb = &k->bufs[q];
            int t = kb->tensor;
            if (kb->workgroup || t < 0 || t >= nt) continue;
            if (t < p->g->n_tensors && p->g->tensors[t].data) bufs[q] = p->g->tensors[t].data;
            else if (t == p->g->inputs[0]) bufs[q] = (void *)x;
            else if (b && p->g->n_inputs > 1 && t == p->g->inputs[1]) bufs[q] = (void *)b;
            else {
                if (!mem[t]) mem[t] = calloc((size_t)kb->numel + 1, (size_t)kir_buffer_elem_bytes(kb));
                bufs[q] = mem[t];
            }
        }
        ok = kir_interpret(k, bufs) == SMELT_OK;
    }
    float *r = ok ? mem[out] : NULL;
    for (int t = 0; mem && t < nt; t++)
        if (t != out || !ok) free(mem[t]);
    free(mem);
    return r;
}

typedef struct mm_case {
    int ra, rb;                    /* ranks of A and B */
    int64_t a[4], b[4];            /* their shapes */
    bool const_b, bias_relu;       /* B a constant; + bias then Relu fused */
} mm_case;

/* Element [..., i, k] of a batched operand of rank r (batch dims broadcast
 * against the result's `ob` batch dims `od`). */
static double at(const float *x, int r, const int64_t *s, int nb, const int64_t *bi, int64_t i, int64_t k)
{
    int64_t lin = 0;
    for (int d = 0; d < r - 2; d++) {
        int od = d + nb - (r - 2);
        lin = lin * s[d] + (s[d] == 1 ? 0 : bi[od]);
    }
    return x[(lin * s[r - 2] + i) * s[r - 1] + k];
}

TEST(gemm_packed_matmul_matches_a_reference_on_odd_sizes)
{
    static const mm_case cases[] = {
        {2, 2, {1, 5}, {5, 37}, true, false},            /* M = 1, N past a panel */
        {2, 2, {7, 1}, {1, 20}, true, true},             /* K = 1 */
        {2, 2, {13, 9}, {9, 37}, true, true},            /* odd everything */
        {2, 2, {50, 300}, {300, 33}, true, true},        /* K past one KC slice, M tail */
        {4, 3, {2, 3, 13, 9}, {3, 9, 21}, false, false}, /* batched, B per call, broadcast */
        {2, 3, {13, 9}, {2, 9, 21}, false, true},        /* A broadcast over B's batch */
        {3, 2, {2, 20, 17}, {17, 40}, true, false},      /* batched A, constant B */
        {2, 2, {128, 70}, {70, 300}, true, true},        /* units of full blocks beside the one with the tail */
        {2, 2, {299, 270}, {270, 100}, true, true},      /* blocks and panels spread evenly over the units (17 +
                                                            17 + 16 row blocks, 4 + 3 panels), K past a KC slice */
        {2, 2, {7, 5}, {5, 2304}, true, false},          /* 9 column units made 10 (of 15 panels) for 2 cores */
        {3, 2, {48, 1, 19}, {19, 37}, true, true},       /* batch folded into M: 48 one-row products */
        {4, 2, {2, 3, 4, 13}, {13, 21}, true, false},    /* batch [2, 3] folded, 4 rows each (row i % 4 of i / 4) */
        {4, 2, {3, 1, 5, 7}, {7, 9}, true, true},        /* batch [3, 1] folded, 5 rows each */
    };
    for (int c = 0; c < (int)(sizeof cases / sizeof cases[0]); c++) {
        const mm_case *mc = &cases[c];
        ir_graph *g = ir_graph_new();
        ir_shape sa = {.rank = mc->ra}, sb = {.rank = mc->rb};
        memcpy(sa.dim, mc->a, sizeof mc->a);
        memcpy(sb.dim, mc->b, sizeof mc->b);
        int x = input(g, "x", sa);
        int b = mc->const_b ? constant(g, "b", sb, 0.5f, 0.125f) : input(g, "b", sb);
        int y = op2(g, "mm", OP_MatMul, x, b);
        int64_t n = sb.dim[sb.rank - 1], k = sa.dim[sa.rank - 1], m = sa.dim[sa.rank - 2];
        int bias = constant(g, "c", shp(1, n), 0.25f, -0.1f);
        if (mc->bias_relu) y = op1(g, "relu", OP_Relu, op2(g, "bias", OP_Add, y, bias));
        int ins[2] = {x, b};
        ir_graph_set_io(g, mc->const_b ? 1 : 2, ins, 1, &y);
        smelt_program *p = compile(g, 0);
        if (!p) {
            ir_graph_free(g);
            continue;
        }
        /* the microkernel runs it (a B packed per call: where A has two row blocks) */
        bool packed = mc->const_b || m >= 2 * mm_tiles_for(p->devs.dev[0].target.vector_width).mr;
        CHECK(p->cls[0].source && (strstr(p->cls[0].source, "smelt_gemm_f32_") != NULL) == packed);
        int64_t na = ir_shape_numel(&sa), nbn = ir_shape_numel(&sb);
        float *xd = malloc(sizeof(float) * (size_t)na), *bd = malloc(sizeof(float) * (size_t)nbn);
        for (int64_t i = 0; i < na; i++) xd[i] = (float)((i * 13 + 5) % 17 - 8) / 8.0f;
        for (int64_t i = 0; i < nbn; i++) bd[i] = (float)((i * 5 + 1) % 9 - 4) / 4.0f;
        const float *bv = mc->const_b ? g->tensors[b].data : bd;
        smelt_tensor in[2] = {{.name = "x", .dtype = SMELT_F32, .rank = sa.rank}, {.name = "b", .dtype = SMELT_F32, .rank = sb.rank}};
        memcpy(in[0].shape, sa.dim, sizeof sa.dim);
        memcpy(in[1].shape, sb.dim, sizeof sb.dim);
        in[0].data = xd, in[1].data = bd;
        CHECK(smelt_program_run(p, mc->const_b ? 1 : 2, in) == SMELT_OK);
        smelt_tensor out;
        CHECK(smelt_program_output(p, 0, &out) == SMELT_OK);
        int nb = out.rank - 2;
        int64_t batch = 1, bi[4] = {0};
        for (int d = 0; d < nb; d++) batch *= out.shape[d];
        int bad = 0;
        for (int64_t q = 0; q < batch; q++) {
            for (int d = nb - 1, r = (int)q; d >= 0; d--) bi[d] = r % out.shape[d], r /= (int)out.shape[d];
            for (int64_t i = 0; i < m; i++)
                for (int64_t j = 0; j < n; j++) {
                    double want = 0;
                    for (int64_t kk = 0; kk < k; kk++)
                        want += at(xd, sa.rank, sa.dim, nb, bi, i, kk) * at(bv, sb.rank, sb.dim, nb, bi, kk, j);
                    if (mc->bias_relu) want = fmax(0.0, want + ((const float *)g->tensors[bias].data)[j]);
                    double got = ((const float *)out.data)[(q * m + i) * n + j];
                    if (fabs(got - want) > 1e-4 * (1 + fabs(want)) && bad++ < 3)
                        fprintf(stderr, "  case %d [%lld][%lld][%lld]: %.7g, want %.7g\n", c, (long long)q, (long long)i,
                                (long long)j, got, want);
                }
        }
        CHECK_EQ_INT(bad, 0);
        /* the same kernels interpreted: in bounds, and the same sums up to rounding */
        float *iy = interpret(p, xd, bd, p->g->outputs[0]);
        CHECK(iy != NULL);
        for (int64_t i = 0; iy && i < smelt_tensor_numel(&out); i++)
            if (fabs(iy[i] - ((const float *)out.data)[i]) > 1e-4 * (1 + fabs(iy[i])) && bad++ < 3)
                fprintf(stderr, "  case %d [%lld]: interpreted %.7g, compiled %.7g\n", c, (long long)i, iy[i],
                        ((const float *)out.data)[i]);
        CHECK_EQ_INT(bad, 0);
        free(iy);
        free(xd), free(bd);
        smelt_program_free(p);
        ir_graph_free(g);
    }
}

/* Workgroup buffers of the program's kernels (the GEMM's accumulators, and
 * its A pack where it has one), and the largest one's elements. */
static int workgroup_buffers(const smelt_program *p, int64_t *largest)
{
    int n = 0;
    *largest = 0;
    for (int i = 0; i < p->lp.n_kernels; i++)
        for (int q = 0; q < p->lp.kernels[i]->n_bufs; q++) {
            const kir_buffer *b = &p->lp.kernels[i]->bufs[q];
            if (!b->workgroup) continue;
            n++;
            if (b->numel > *largest) *largest = b->numel;
        }
    return n;
}

/* Runs p on x [m, k] (x [k, m] where tr) of a fixed pattern and checks its
 * output [m, n] against a double-precision x (x^T) times the constant b. */
static void check_matmul_run(smelt_program *p, const ir_graph *g, int b, int64_t m, int64_t k, int64_t n, int tr)
{
    float *xd = malloc(sizeof(float) * (size_t)(m * k));
    for (int64_t i = 0; i < m * k; i++) xd[i] = (float)((i * 13 + 5) % 17 - 8) / 8.0f;
    smelt_tensor in = {.name = "x", .dtype = SMELT_F32, .rank = 2, .shape = {tr ? k : m, tr ? m : k}, .data = xd}, out;
    CHECK(smelt_program_run(p, 1, &in) == SMELT_OK);
    CHECK(smelt_program_output(p, 0, &out) == SMELT_OK);
    const float *bv = g->tensors[b].data;
    int bad = 0;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double want = 0;
            for (int64_t kk = 0; kk < k; kk++) want += (double)xd[tr ? kk * m + i : i * k + kk] * bv[kk * n + j];
            bad += fabs(((const float *)out.data)[i * n + j] - want) > 1e-4 * (1 + fabs(want));
        }
    CHECK_EQ_INT(bad, 0);
    free(xd);
}

/* A plain A (a model input) is read in place by the microkernel, no pack in
 * workgroup memory, in units of at most 256 columns; so is an A through a
 * fused producer (a Transpose) that the column units would each pack again,
 * once copied out by a kernel of its own (ops/matmul.c, mm_copy_a; the pack
 * per KC slice is in test_matmul_copy_a.c). Both against a reference, M
 * with a tail row block, K past a slice. M 149 is 25 row blocks of 6, two
 * units of 13 blocks: 78 accumulator rows of 256 + 16 columns (AVX2's 6 x 16
 * tiles; other tiles are not checked for the sizes). */
TEST(gemm_packed_reads_a_plain_a_in_place)
{
    int64_t m = 149, k = 300, n = 1024;
    for (int tr = 0; tr < 2; tr++) {
        ir_graph *g = ir_graph_new();
        int x = input(g, "x", tr ? shp(2, k, m) : shp(2, m, k));
        int a = tr ? op1(g, "t", OP_Transpose, x) : x;
        int b = constant(g, "b", shp(2, k, n), 0.5f, 0.125f);
        int y = op2(g, "mm", OP_MatMul, a, b);
        ir_graph_set_io(g, 1, &x, 1, &y);
        smelt_program *p = compile(g, 0);
        CHECK(p != NULL);
        if (!p) {
            ir_graph_free(g);
            continue;
        }
        CHECK(p->cls[0].source && strstr(p->cls[0].source, "smelt_gemm_f32_") != NULL);
        int64_t acc = 0;
        CHECK_EQ_INT(workgroup_buffers(p, &acc), 1);
        CHECK_EQ_INT(p->lp.n_kernels, tr ? 2 : 1);
        mm_tiles tl = mm_tiles_for(p->devs.dev[0].target.vector_width);
        if (tl.mr == 6 && tl.nr == 16) CHECK_EQ_INT((int)acc, 78 * (256 + 16));
        check_matmul_run(p, g, b, m, k, n, tr);
        smelt_program_free(p);
        ir_graph_free(g);
    }
}

/* Units two cores share evenly (ops/gemm_packed.c): the span counts whole
 * units; MobileNetV2's 960 -> 160 and 960 -> 320 at 7x7 (M 49) as MatMuls
 * with a plain A, against a double reference, take units whose span is
 * within 10% of half the block-panels at the host's tiles. */
TEST(gemm_packed_units_share_evenly_over_two_cores)
{
    CHECK_EQ_INT(gemm_packed_two_core_span(1, 7, 7, 5, 1), 21);  /* 5 units of 7: 3 and 2 */
    CHECK_EQ_INT(gemm_packed_two_core_span(1, 7, 4, 5, 1), 18);  /* rows 4 and 3 by 5: 18 and 17 */
    CHECK_EQ_INT(gemm_packed_two_core_span(1, 1, 1, 10, 3), 6);  /* panels 3, 3, 3, 1: 6 and 4 */
    CHECK_EQ_INT(gemm_packed_two_core_span(2, 1, 1, 3, 3), 3);   /* two batches of one unit */
    CHECK_EQ_INT(gemm_packed_two_core_span(1, 65, 1, 1, 1), 0);  /* more than 64 units */
    static const int64_t ns[2] = {160, 320};
    for (int c = 0; c < 2; c++) {
        int64_t m = 49, k = 96, n = ns[c];
        ir_graph *g = ir_graph_new();
        int x = input(g, "x", shp(2, m, k));
        int b = constant(g, "b", shp(2, k, n), 0.5f, 0.125f);
        int y = op2(g, "mm", OP_MatMul, x, b);
        ir_graph_set_io(g, 1, &x, 1, &y);
        smelt_program *p = compile(g, 0);
        CHECK(p != NULL);
        if (!p) {
            ir_graph_free(g);
            continue;
        }
        mm_tiles tl = mm_tiles_for(p->devs.dev[0].target.vector_width);
        int64_t rb = (m + tl.mr - 1) / tl.mr, np = (n + tl.nr - 1) / tl.nr, units = p->lp.kernels[p->lp.n_kernels - 1]->n_workgroups;
        /* some split of rows (mu) by columns (cu) into that many units is even */
        bool even = false;
        for (int64_t mu = 1; mu <= rb; mu++)
            for (int64_t cu = 1; cu <= np; cu++) {
                int64_t mb = (rb + mu - 1) / mu, npu = (np + cu - 1) / cu;
                if (((rb + mb - 1) / mb) * ((np + npu - 1) / npu) != units) continue;
                int64_t span = gemm_packed_two_core_span(1, rb, mb, np, npu);
                even |= span && span * 10 <= (rb * np + 1) / 2 * 11;
            }
        CHECK(even);
        check_matmul_run(p, g, b, m, k, n, 0);
        smelt_program_free(p);
        ir_graph_free(g);
    }
}

/* Small M spreads over the threads by N in the widest units that make four
 * (ops/gemm_packed.c, MM_MIN_UNITS): 768 columns at M 128 are 4 units of 192,
 * not 6 of 128 (each unit packs or reads all of A); 80 columns (5 panels) at
 * M 3 and K 400 are 5 units, one panel each, as ceil(5 / 4) panels would
 * make only 3.
 * A plain and through a fused Transpose, against a double reference. The
 * counts hold for AVX2's 6 x 16 tiles; other tiles check the sums only. */
TEST(gemm_packed_splits_columns_into_the_widest_units_that_make_four)
{
    static const struct { int64_t m, k, n, units; } cases[] = {{128, 40, 768, 4}, {3, 400, 80, 5}, {64, 33, 1024, 4}};
    for (int c = 0; c < 3; c++)
        for (int tr = 0; tr < 2; tr++) {
            int64_t m = cases[c].m, k = cases[c].k, n = cases[c].n;
            ir_graph *g = ir_graph_new();
            int x = input(g, "x", tr ? shp(2, k, m) : shp(2, m, k));
            int a = tr ? op1(g, "t", OP_Transpose, x) : x;
            int b = constant(g, "b", shp(2, k, n), 0.5f, 0.125f);
            int y = op2(g, "mm", OP_MatMul, a, b);
            ir_graph_set_io(g, 1, &x, 1, &y);
            smelt_program *p = compile(g, 0);
            CHECK(p != NULL);
            if (!p) {
                ir_graph_free(g);
                continue;
            }
            /* through the Transpose: A copied out first, by a kernel of its own */
            int nk = p->lp.n_kernels;
            CHECK_EQ_INT(nk, tr ? 2 : 1);
            mm_tiles tl = mm_tiles_for(p->devs.dev[0].target.vector_width);
            if (tl.mr == 6 && tl.nr == 16 && nk == (tr ? 2 : 1))
                CHECK_EQ_INT((int)p->lp.kernels[nk - 1]->n_workgroups, (int)cases[c].units);
            check_matmul_run(p, g, b, m, k, n, tr);
            smelt_program_free(p);
            ir_graph_free(g);
        }
}

/* Gemm with transB on a model input (packed per call), alpha, beta and a
 * row of C; and the same with transA. */
TEST(gemm_packed_gemm_transposes_and_scales)
{
    for (int ta = 0; ta < 2; ta++) {
        int64_t m = 14, k = 19, n = 23;
        ir_graph *g = ir_graph_new();
        int x = input(g, "x", ta ? shp(2, k, m) : shp(2, m, k)), b = input(g, "b", shp(2, n, k));
        int cc = constant(g, "c", shp(1, n), 0.5f, 0.25f);
        int y = op(g, "gemm", OP_Gemm, 3, (const int[]){x, b, cc});
        int nd = node_named(g, "gemm");
        attr_int(g, nd, "transB", 1);
        attr_int(g, nd, "transA", ta);
        ir_attr al = {.name = "alpha", .type = IR_ATTR_FLOAT, .f = 0.5f}, be = {.name = "beta", .type = IR_ATTR_FLOAT, .f = 2.0f};
        CHECK(ir_node_attr_add(g, nd, &al) && ir_node_attr_add(g, nd, &be));
        int ins[2] = {x, b};
        ir_graph_set_io(g, 2, ins, 1, &y);
        smelt_program *p = compile(g, 0);
        if (p) {
            CHECK(strstr(p->cls[0].source, "smelt_gemm_f32_") != NULL);
            float xd[14 * 19], bd[23 * 19];
            for (int i = 0; i < 14 * 19; i++) xd[i] = (float)((i * 7) % 11 - 5) / 4.0f;
            for (int i = 0; i < 23 * 19; i++) bd[i] = (float)((i * 3) % 13 - 6) / 5.0f;
            smelt_tensor in[2] = {{.name = "x", .dtype = SMELT_F32, .rank = 2, .shape = {ta ? k : m, ta ? m : k}, .data = xd},
                                  {.name = "b", .dtype = SMELT_F32, .rank = 2, .shape = {n, k}, .data = bd}};
            CHECK(smelt_program_run(p, 2, in) == SMELT_OK);
            smelt_tensor out;
            CHECK(smelt_program_output(p, 0, &out) == SMELT_OK);
            const float *cv = g->tensors[cc].data;
            for (int64_t i = 0; i < m; i++)
                for (int64_t j = 0; j < n; j++) {
                    double want = 0;
                    for (int64_t kk = 0; kk < k; kk++) want += (double)xd[ta ? kk * m + i : i * k + kk] * bd[j * k + kk];
                    CHECK_NEAR(((const float *)out.data)[i * n + j], 0.5 * want + 2.0 * cv[j], 1e-4);
                }
        }
        smelt_program_free(p);
        ir_graph_free(g);
    }
}

/* A pass that edits an attribute re-parses the node (ir_node_parse_params):
 * graph_fold_gemm_transpose stores a constant A read under transA transposed
 * and clears the flag, graph_pack_weights does the same for a constant B under
 * transB; the lowering then reads the cleared flag from the node's params (a
 * stale flag would transpose the stored operand a second time). */
TEST(gemm_rewritten_transposes_are_seen_by_the_lowering)
{
    for (int which = 0; which < 2; which++) {
        int64_t m = 6, k = 5, n = 7;
        ir_graph *g = ir_graph_new();
        int a = which == 0 ? constant(g, "a", shp(2, k, m), 0.25f, -0.5f) : input(g, "a", shp(2, m, k));
        int b = which == 0 ? input(g, "b", shp(2, k, n)) : constant(g, "b", shp(2, n, k), 0.5f, 0.125f);
        int y = op(g, "gemm", OP_Gemm, 2, (const int[]){a, b});
        attr_int(g, node_named(g, "gemm"), which == 0 ? "transA" : "transB", 1);
        int in = which == 0 ? b : a;
        ir_graph_set_io(g, 1, &in, 1, &y);
        smelt_program *p = compile(g, 0);
        CHECK(p != NULL);
        if (p) {
            const ir_node *nd = &p->g->nodes[node_named(p->g, "gemm")];
            const gemm_params *gp = nd->params;
            CHECK(gp && !gp->trans_a && !gp->trans_b); /* the pass cleared the flag and re-parsed */
            float xd[64];
            for (int i = 0; i < 64; i++) xd[i] = (float)((i * 7) % 11 - 5) / 4.0f;
            smelt_tensor t = {.name = which == 0 ? "b" : "a", .dtype = SMELT_F32, .rank = 2,
                              .shape = {which == 0 ? k : m, which == 0 ? n : k}, .data = xd};
            CHECK(smelt_program_run(p, 1, &t) == SMELT_OK);
            smelt_tensor out;
            CHECK(smelt_program_output(p, 0, &out) == SMELT_OK);
            const float *cv = g->tensors[which == 0 ? a : b].data;
            for (int64_t i = 0; i < m; i++)
                for (int64_t j = 0; j < n; j++) {
                    double want = 0;
                    for (int64_t kk = 0; kk < k; kk++)
                        want += which == 0 ? (double)cv[kk * m + i] * xd[kk * n + j] : (double)xd[i * k + kk] * cv[j * k + kk];
                    CHECK_NEAR(((const float *)out.data)[i * n + j], want, 1e-4);
                }
        }
        smelt_program_free(p);
        ir_graph_free(g);
    }
}

/* ---- convolution on the packed GEMM (ops/conv_gemm.c) ------------------- */

typedef struct conv_case {
    int64_t n, c, h, w, m, k[2], s[2], p[2], d[2];
    int group;
    bool bias, epilogue; /* + bias; then Relu and a residual Add fused into the store */
    bool gemm;           /* expected to run on the microkernel */
    int64_t pe[2];       /* end pads beyond p (pads p0, p1, p0 + pe0, p1 + pe1) */
    bool pre;            /* X given NHWC, through a Transpose fused in front of the conv */
    int kernels;         /* kernels expected (0: not checked); the big cases skip the interpreter */
    bool cols;           /* on the microkernel with the positions on N, the weight plain (conv_cols_lower) */
} conv_case;

/* Y = conv(X, W) (+ bias) in double, NCHW, pads as zeros; then relu(y) + res. */
static double conv_ref(const conv_case *cc, const float *x, const float *wt, const float *b, const float *res, int64_t oh,
                       int64_t ow, int64_t n, int64_t m, int64_t i, int64_t j)
{
    int64_t cg = cc->c / cc->group, mg = cc->m / cc->group, g0 = m / mg * cg;
    double s = cc->bias ? b[m] : 0.0;
    for (int64_t ci = 0; ci < cg; ci++)
        for (int64_t kh = 0; kh < cc->k[0]; kh++)
            for (int64_t kw = 0; kw < cc->k[1]; kw++) {
                int64_t ih = i * cc->s[0] - cc->p[0] + kh * cc->d[0], iw = j * cc->s[1] - cc->p[1] + kw * cc->d[1];
                if (ih < 0 || ih >= cc->h || iw < 0 || iw >= cc->w) continue;
                double xv = cc->pre ? x[((n * cc->h + ih) * cc->w + iw) * cc->c + g0 + ci]
                                    : x[((n * cc->c + g0 + ci) * cc->h + ih) * cc->w + iw];
                s += xv * wt[((m * cg + ci) * cc->k[0] + kh) * cc->k[1] + kw];
            }
    if (cc->epilogue) s = fmax(s, 0.0) + res[((n * cc->m + m) * oh + i) * ow + j];
    return s;
}

TEST(gemm_packed_conv_matches_a_reference)
{
    static const conv_case cases[] = {
        /* 1x1 stride 2, M/C/positions not multiples of the tiles, batch 2, bias + Relu + residual Add */
        {2, 70, 9, 11, 67, {1, 1}, {2, 2}, {0, 0}, {1, 1}, 1, true, true, true, .pre = false},
        /* 1x1 stride 1: rows read straight from X's planes */
        {2, 69, 7, 9, 80, {1, 1}, {1, 1}, {0, 0}, {1, 1}, 1, false, false, true, .pre = false},
        /* MobileNet's small-N shapes: 49 positions, K = 300 past one KC slice, N = 96 over several units */
        {1, 300, 7, 7, 96, {1, 1}, {1, 1}, {0, 0}, {1, 1}, 1, true, true, true, .pre = false},
        /* K = 131 in slices of 128 and 3 (X read in place down k: CONV_READ_A_KC), batch 2, epilogue */
        {2, 131, 7, 7, 45, {1, 1}, {1, 1}, {0, 0}, {1, 1}, 1, true, true, true, .pre = false},
        /* 1x1 with 32..63 output channels on the GEMM (192 -> 32 at 28x28 1.5x faster) */
        {1, 96, 6, 5, 40, {1, 1}, {1, 1}, {0, 0}, {1, 1}, 1, true, false, true, .pre = false},
        /* ResNet's stem shape: 7x7 stride 2 pad 3 (with channels enough for the GEMM) */
        {1, 3, 19, 23, 130, {7, 7}, {2, 2}, {3, 3}, {1, 1}, 1, true, true, true, .pre = false},
        /* 3x3 stride 2 pad 1, K = 360 past one KC slice, batch 2 */
        {2, 40, 15, 14, 133, {3, 3}, {2, 2}, {1, 1}, {1, 1}, 1, true, false, true, .pre = false},
        /* 3x3 stride 2 pad 1 dilation 2, uneven strides */
        {1, 8, 12, 13, 129, {3, 3}, {2, 1}, {2, 1}, {2, 2}, 1, false, true, true, .pre = false},
        /* 3x3 stride 1 with too few tiles for Winograd (9 of 2x2; ResNet's layer4 at 7x7 has 16 and
         * takes it, graph/passes.h): the im2col into scratch, one kernel, then the GEMM */
        {1, 64, 6, 6, 128, {3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, true, false, true, .kernels = 2},
        /* the im2col's runs: pads on every side, each different (rows and
         * columns wholly in the padding at the ends), stride 2 by 3, batch 2 */
        {2, 5, 9, 10, 33, {3, 4}, {2, 3}, {2, 3}, {1, 1}, 1, true, true, true, .pe = {1, 2}, .kernels = 2},
        /* dilation 2 by 3 with pads, M past a panel; X NHWC, its Transpose read by the im2col's kernel */
        {2, 7, 11, 12, 40, {3, 3}, {1, 1}, {2, 1}, {2, 3}, 1, false, false, true, .pe = {0, 3}, .pre = true, .kernels = 2},
        /* one image's im2col past half the scratch cap: a kernel pair per image */
        {2, 3, 283, 283, 32, {3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, true, false, true, .kernels = 4},
        /* the positions on N (a multiple of the panels): MobileNetV2's expand 1x1 16 -> 96 with X
         * read in place, batch 2, bias + Relu + residual Add; K = 300 past one KC slice onto 37
         * channels (six row blocks and a tail); a plane of 32 x 1 (X's last dim 1, the positions in
         * its H); the 3x3 s2 stem 3 -> 32 through the im2col; X NHWC through a Transpose into a
         * 5x5 im2col; one image's im2col past half the scratch cap (a kernel pair per image);
         * a 1x1 whose X is computed in front of it (a Transpose from NHWC): through the im2col */
        {2, 16, 8, 8, 96, {1, 1}, {1, 1}, {0, 0}, {1, 1}, 1, true, true, true, .cols = true},
        {1, 300, 4, 8, 37, {1, 1}, {1, 1}, {0, 0}, {1, 1}, 1, true, false, true, .cols = true},
        {2, 24, 32, 1, 40, {1, 1}, {1, 1}, {0, 0}, {1, 1}, 1, true, true, true, .cols = true},
        {2, 3, 16, 16, 32, {3, 3}, {2, 2}, {1, 1}, {1, 1}, 1, true, true, true, .kernels = 2, .cols = true},
        {1, 8, 8, 4, 33, {5, 5}, {1, 1}, {2, 2}, {1, 1}, 1, false, true, true, .pre = true, .kernels = 2, .cols = true},
        {2, 3, 288, 288, 32, {3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, true, false, true, .kernels = 4, .cols = true},
        {2, 20, 4, 8, 24, {1, 1}, {1, 1}, {0, 0}, {1, 1}, 1, true, true, true, .pre = true, .kernels = 2, .cols = true},
        /* 16..31 output channels with a kernel larger than 1x1 (graph_conv_on_cols): PP-LCNet's 3x3
         * s2 stem 3 -> 16 (batch 2, bias + Relu + residual Add), and 16 -> 21 (three row blocks of 6
         * and a tail of 3) */
        {2, 3, 32, 32, 16, {3, 3}, {2, 2}, {1, 1}, {1, 1}, 1, true, true, true, .kernels = 2, .cols = true},
        {1, 16, 16, 16, 21, {3, 3}, {2, 2}, {1, 1}, {1, 1}, 1, true, false, true, .kernels = 2, .cols = true},
        /* an expanding 1x1 whose positions are no multiple of the panels (95 and 255, one column
         * short of whole panels of 16 or 32): on N all the same, X through the im2col */
        {2, 12, 19, 5, 50, {1, 1}, {1, 1}, {0, 0}, {1, 1}, 1, true, true, true, .kernels = 2, .cols = true},
        {1, 9, 17, 15, 37, {1, 1}, {1, 1}, {0, 0}, {1, 1}, 1, false, false, true, .kernels = 2, .cols = true},
        /* positions on M with X read in place from a plane of 20 x 1 */
        {1, 64, 20, 1, 40, {1, 1}, {1, 1}, {0, 0}, {1, 1}, 1, true, true, true, .pre = false},
        /* grouped, too few channels (1x1; 3x3 with M 16): the direct form */
        {1, 128, 9, 9, 128, {1, 1}, {2, 2}, {0, 0}, {1, 1}, 2, true, false, false, .pre = false},
        {1, 13, 9, 9, 37, {1, 1}, {2, 2}, {0, 0}, {1, 1}, 1, true, true, false, .pre = false},
        {1, 32, 9, 9, 16, {3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, true, false, false, .pre = false},
        {1, 144, 6, 6, 24, {1, 1}, {1, 1}, {0, 0}, {1, 1}, 1, true, false, false, .pre = false}, /* 24 channels: direct */
    };
    for (int ci = 0; ci < (int)(sizeof cases / sizeof cases[0]); ci++) {
        const conv_case *cc = &cases[ci];
        int64_t oh = (cc->h + 2 * cc->p[0] + cc->pe[0] - (cc->k[0] - 1) * cc->d[0] - 1) / cc->s[0] + 1;
        int64_t ow = (cc->w + 2 * cc->p[1] + cc->pe[1] - (cc->k[1] - 1) * cc->d[1] - 1) / cc->s[1] + 1;
        ir_graph *g = ir_graph_new();
        int x = cc->pre ? input(g, "x", shp(4, cc->n, cc->h, cc->w, cc->c)) : input(g, "x", shp(4, cc->n, cc->c, cc->h, cc->w));
        int xin = x;
        if (cc->pre) {
            xin = op1(g, "pre", OP_Transpose, x);
            attr_ints(g, node_named(g, "pre"), "perm", 4, (const int64_t[]){0, 3, 1, 2});
        }
        int wt = constant(g, "w", shp(4, cc->m, cc->c / cc->group, cc->k[0], cc->k[1]), 0.25f, -0.05f);
        int b = constant(g, "b", shp(1, cc->m), 0.5f, 0.1f);
        int res = constant(g, "res", shp(4, cc->n, cc->m, oh, ow), 0.75f, -0.2f);
        int ins[3] = {xin, wt, b};
        int y = op(g, "conv", OP_Conv, cc->bias ? 3 : 2, ins);
        int nd = node_named(g, "conv");
        attr_ints(g, nd, "strides", 2, cc->s);
        attr_ints(g, nd, "dilations", 2, cc->d);
        attr_ints(g, nd, "pads", 4, (const int64_t[]){cc->p[0], cc->p[1], cc->p[0] + cc->pe[0], cc->p[1] + cc->pe[1]});
        attr_int(g, nd, "group", cc->group);
        if (cc->epilogue) y = op2(g, "add", OP_Add, op1(g, "relu", OP_Relu, y), res);
        ir_graph_set_io(g, 1, &x, 1, &y);
        smelt_program *p = compile(g, 0);
        CHECK(p != NULL);
        if (!p) {
            ir_graph_free(g);
            continue;
        }
        const ir_tensor *pw = &p->g->tensors[p->g->nodes[node_named(p->g, "conv")].in[1]];
        CHECK((pw->enc.kind == IR_ENC_PANELS) == (cc->gemm && !cc->cols));
        CHECK((strstr(p->cls[0].source, "smelt_gemm_f32_") != NULL) == cc->gemm);
        /* A is read in place (X itself for a 1x1 stride 1 without pads, the
         * im2col's scratch otherwise): only each GEMM kernel's accumulators
         * are in workgroup memory (one GEMM, or one per im2col/GEMM pair) */
        if (cc->gemm) CHECK_EQ_INT(workgroup_tiles(p), cc->kernels ? cc->kernels / 2 : 1);
        if (cc->kernels && p->lp.n_kernels != cc->kernels) fprintf(stderr, "  conv case %d: %d kernels\n", ci, p->lp.n_kernels);
        if (cc->kernels) CHECK_EQ_INT(p->lp.n_kernels, cc->kernels);
        int64_t nx = cc->n * cc->c * cc->h * cc->w, ny = cc->n * cc->m * oh * ow;
        float *xd = malloc(sizeof(float) * (size_t)nx);
        for (int64_t i = 0; i < nx; i++) xd[i] = (float)((i * 13 + 5) % 17 - 8) / 8.0f;
        smelt_tensor in = {.name = "x", .dtype = SMELT_F32, .rank = 4, .shape = {cc->n, cc->c, cc->h, cc->w}, .data = xd};
        if (cc->pre) in.shape[1] = cc->h, in.shape[2] = cc->w, in.shape[3] = cc->c;
        CHECK(smelt_program_run(p, 1, &in) == SMELT_OK);
        smelt_tensor out;
        CHECK(smelt_program_output(p, 0, &out) == SMELT_OK);
        CHECK(out.rank == 4 && out.shape[1] == cc->m && out.shape[2] == oh && out.shape[3] == ow);
        const float *wd = g->tensors[wt].data, *bd = g->tensors[b].data, *rd = g->tensors[res].data, *yd = out.data;
        int bad = 0;
        for (int64_t n = 0; n < cc->n; n++)
            for (int64_t m = 0; m < cc->m; m++)
                for (int64_t i = 0; i < oh; i++)
                    for (int64_t j = 0; j < ow; j++) {
                        double want = conv_ref(cc, xd, wd, bd, rd, oh, ow, n, m, i, j);
                        double got = yd[((n * cc->m + m) * oh + i) * ow + j];
                        if (fabs(got - want) > 1e-4 * (1 + fabs(want)) && bad++ < 3)
                            fprintf(stderr, "  conv case %d [%lld][%lld][%lld][%lld]: %.7g, want %.7g\n", ci, (long long)n,
                                    (long long)m, (long long)i, (long long)j, got, want);
                    }
        CHECK_EQ_INT(bad, 0);
        float *iy = cc->kernels == 4 ? NULL : interpret(p, xd, NULL, p->g->outputs[0]);
        if (!iy && cc->kernels != 4) fprintf(stderr, "  conv case %d: not interpreted\n", ci);
        CHECK(iy != NULL || cc->kernels == 4);
        for (int64_t i = 0; iy && i < ny; i++)
            if (fabs(iy[i] - yd[i]) > 1e-4 * (1 + fabs(iy[i])) && bad++ < 3)
                fprintf(stderr, "  conv case %d [%lld]: interpreted %.7g, compiled %.7g\n", ci, (long long)i, iy[i], yd[i]);
        CHECK_EQ_INT(bad, 0);
        free(iy);
        free(xd);
        smelt_program_free(p);
        ir_graph_free(g);
    }
}

/* A Conv weight [M, C, KH, KW] packed as B[k][m] = W[m][k] (k over C, KH, KW),
 * its logical shape kept for the shape rule; a grouped Conv's weight is not
 * packed, nor one whose output positions go on N (a 1x1 over 8 x 8). */
TEST(gemm_pack_weights_packs_conv_weights)
{
    ir_graph *g = ir_graph_new();
    int64_t nr = 16;
    int x = input(g, "x", shp(4, 1, 8, 11, 11)); /* 5 x 5 out: 25 positions, no whole panels (graph_conv_on_cols) */
    int w = constant(g, "w", shp(4, 130, 8, 3, 3), 1.0f, 0.0f), w2 = constant(g, "w2", shp(4, 128, 4, 1, 1), 1.0f, 0.0f);
    int y = op2(g, "conv", OP_Conv, x, w);
    attr_ints(g, node_named(g, "conv"), "strides", 2, (const int64_t[]){2, 2});
    int y2 = op2(g, "gconv", OP_Conv, x, w2);
    attr_int(g, node_named(g, "gconv"), "group", 2);
    int x3 = input(g, "x3", shp(4, 1, 64, 8, 8)), w3 = constant(g, "w3", shp(4, 64, 64, 1, 1), 1.0f, 0.0f);
    int y3 = op2(g, "conv3", OP_Conv, x3, w3);
    int ins[2] = {x, x3}, outs[3] = {y, y2, y3};
    ir_graph_set_io(g, 2, ins, 3, outs);
    CHECK(graph_infer(g, lower_eval_node) == SMELT_OK);
    CHECK(graph_pack_weights(g, nr, NULL, NULL, false) == SMELT_OK);
    const ir_tensor *p = &g->tensors[g->nodes[node_named(g, "conv")].in[1]];
    CHECK(p->enc.kind == IR_ENC_PANELS && p->enc.k == 72 && p->enc.n == 130 && p->enc.nr == nr);
    CHECK(p->shape.rank == 3 && p->shape.dim[0] == 9 && p->shape.dim[1] == 72 && p->shape.dim[2] == nr);
    CHECK(p->enc.logical.rank == 4 && p->enc.logical.dim[0] == 130 && p->enc.logical.dim[3] == 3);
    CHECK_EQ_INT(g->nodes[node_named(g, "gconv")].in[1], w2);
    CHECK_EQ_INT(g->nodes[node_named(g, "conv3")].in[1], w3);
    const float *src = g->tensors[w].data, *pk = p->data;
    for (int64_t q = 0; q < 9; q++)
        for (int64_t kk = 0; kk < 72; kk++)
            for (int64_t j = 0; j < nr; j++) {
                int64_t col = q * nr + j;
                CHECK(pk[(q * 72 + kk) * nr + j] == (col >= 130 ? 0.0f : src[col * 72 + kk]));
            }
    CHECK(graph_infer(g, lower_eval_node) == SMELT_OK);
    CHECK(g->tensors[y].shape.rank == 4 && g->tensors[y].shape.dim[1] == 130 && g->tensors[y].shape.dim[2] == 5);
    ir_graph_free(g);
}
