/*
 * test_matmul_copy_a.c — a packed MatMul whose A comes through a fused
 * producer that several column units would each pack again (the attention
 * output's Transpose + Reshape into the projection): A is copied out once per
 * call by a kernel of its own and read in place. Against a double reference
 * on odd sizes, heads 1, 3 and 12, batch 2, a bias + residual epilogue.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/program.h"
#include "ops/matmul.h"
#include "test.h"
#include "fuse_cases.h"

typedef struct proj_case {
    int64_t b, h, s, d, n;
    bool copied; /* whether the rule copies A (column units per row unit > 1) */
} proj_case;

/* y[b][s][j] = sum over (h, d) of x[b][h][s][d] * w[h*D + d][j] + bias[j] + r[b][s][j]. */
static int check_projection(const proj_case *pc)
{
    int64_t b = pc->b, h = pc->h, s = pc->s, d = pc->d, n = pc->n, k = h * d;
    ir_graph *g = ir_graph_new();
    int x = input(g, "x", shp(4, b, h, s, d)), r = input(g, "r", shp(3, b, s, n));
    int t = op1(g, "tr", OP_Transpose, x);
    attr_ints(g, node_named(g, "tr"), "perm", 4, (const int64_t[]){0, 2, 1, 3});
    int shape = ir_tensor_add(g, "shape", SMELT_I64, &(ir_shape){.rank = 1, .dim = {3}});
    int64_t *sd = ir_tensor_alloc_data(g, shape);
    sd[0] = b, sd[1] = s, sd[2] = k;
    int a = op2(g, "reshape", OP_Reshape, t, shape);
    int w = constant(g, "w", shp(2, k, n), 0.5f, 0.125f), bias = constant(g, "bias", shp(1, n), 0.25f, -0.1f);
    int y = op2(g, "res", OP_Add, r, op2(g, "bias", OP_Add, op2(g, "mm", OP_MatMul, a, w), bias));
    int ins[2] = {x, r};
    ir_graph_set_io(g, 2, ins, 1, &y);
    smelt_program *p = compile(g, 0);
    CHECK(p != NULL);
    if (!p) {
        ir_graph_free(g);
        return 1;
    }
    /* the microkernel runs it; a copy of A in a kernel of its own where the
     * rule takes it (the region's kernels: the copy, then the GEMM) */
    CHECK(p->cls[0].source && strstr(p->cls[0].source, "smelt_gemm_f32_") != NULL);
    CHECK_EQ_INT(p->lp.n_kernels, pc->copied ? 2 : 1);
    int64_t nx = b * h * s * d, nr = b * s * n;
    float *xd = malloc(sizeof(float) * (size_t)nx), *rd = malloc(sizeof(float) * (size_t)nr);
    for (int64_t i = 0; i < nx; i++) xd[i] = (float)((i * 13 + 5) % 17 - 8) / 8.0f;
    for (int64_t i = 0; i < nr; i++) rd[i] = (float)((i * 7 + 3) % 11 - 5) / 4.0f;
    smelt_tensor in[2] = {{.name = "x", .dtype = SMELT_F32, .rank = 4, .shape = {b, h, s, d}, .data = xd},
                          {.name = "r", .dtype = SMELT_F32, .rank = 3, .shape = {b, s, n}, .data = rd}},
                 out;
    CHECK(smelt_program_run(p, 2, in) == SMELT_OK);
    CHECK(smelt_program_output(p, 0, &out) == SMELT_OK);
    const float *wv = g->tensors[w].data, *bv = g->tensors[bias].data;
    int bad = 0;
    for (int64_t q = 0; q < b; q++)
        for (int64_t i = 0; i < s; i++)
            for (int64_t j = 0; j < n; j++) {
                double want = bv[j] + (double)rd[(q * s + i) * n + j];
                for (int64_t hh = 0; hh < h; hh++)
                    for (int64_t dd = 0; dd < d; dd++)
                        want += (double)xd[((q * h + hh) * s + i) * d + dd] * wv[(hh * d + dd) * n + j];
                double got = ((const float *)out.data)[(q * s + i) * n + j];
                if (fabs(got - want) > 1e-4 * (1 + fabs(want)) && bad++ < 3)
                    fprintf(stderr, "  [%lld][%lld][%lld]: %.7g, want %.7g\n", (long long)q, (long long)i, (long long)j, got, want);
            }
    CHECK_EQ_INT(bad, 0);
    free(xd), free(rd);
    smelt_program_free(p);
    ir_graph_free(g);
    return bad;
}

TEST(matmul_copies_a_transposed_a_once_for_its_column_units)
{
    static const proj_case cases[] = {
        {1, 1, 17, 5, 600, true},    /* one head, N past 512: column units of one row unit */
        {2, 3, 13, 5, 37, true},     /* batch 2, 3 heads: 2 row units, N split in 3 panels */
        {1, 12, 20, 8, 96, true},    /* 12 heads, M past a row block with a tail */
        {1, 4, 150, 16, 200, true},  /* M past a row unit of 24 blocks: 2 row units */
        {4, 2, 9, 3, 40, false},     /* batch 4 fills the units: one column unit each, packed in it */
    };
    for (int c = 0; c < (int)(sizeof cases / sizeof cases[0]); c++) check_projection(&cases[c]);
}
