/*
 * test_lower_forms.c — lowering details checked on compiled programs: small
 * constant powers multiplied out, constant Gemm operands transposed at compile
 * time (Gemm operands, recurrent weights), and the special forms (flat and row convolutions, the pool row
 * form, nearest resize, rows split by the inner dim) against direct references. The reductions' forms are in
 * test_lower_reduce.c.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/program.h"
#include "graph/passes.h"
#include "target/emit.h"
#include "test.h"
#include "fuse_cases.h"

/* ---- lowering details --------------------------------------------------------------------- */

static bool has_kir_op(const smelt_program *p, kir_op op)
{
    for (int i = 0; i < p->lp.n_kernels; i++)
        for (int v = 1; v < p->lp.kernels[i]->n_vals; v++)
            if (p->lp.kernels[i]->vals[v].op == op) return true;
    return false;
}

/* Pow by a constant 1..4 is multiplications (within an ulp or two of powf);
 * any other exponent stays a pow. */
TEST(pow_by_a_small_constant_is_multiplied_out)
{
    static const float exps[] = {1, 2, 3, 4, 2.5f, -2};
    for (int e = 0; e < (int)(sizeof exps / sizeof exps[0]); e++) {
        ir_graph *g = ir_graph_new();
        int x = input(g, "x", shp(2, 5, 7));
        int y = op2(g, "pow", OP_Pow, x, constant(g, "e", shp(0), 0.0f, exps[e]));
        ir_graph_set_io(g, 1, &x, 1, &y);
        smelt_program *p = compile(g, 0);
        if (p) {
            bool small = exps[e] >= 1 && exps[e] <= 4 && exps[e] == (int)exps[e];
            CHECK(has_kir_op(p, KIR_POW) == !small);
            float data[35];
            for (int i = 0; i < 35; i++) data[i] = (float)(i - 17) / 3.0f;
            smelt_tensor in = {.name = "x", .dtype = SMELT_F32, .rank = 2, .shape = {5, 7}, .data = data};
            CHECK(smelt_program_run(p, 1, &in) == SMELT_OK);
            smelt_tensor out;
            CHECK(smelt_program_output(p, 0, &out) == SMELT_OK);
            for (int i = 0; i < 35; i++) {
                double want = pow(data[i], exps[e]), got = ((const float *)out.data)[i];
                CHECK(isnan(want) ? isnan(got) : got == want || fabs(got - want) <= 1e-6 * fabs(want));
            }
        }
        smelt_program_free(p);
        ir_graph_free(g);
    }
}

/* A Gemm's constant transB operand is transposed at compile time: the flag is
 * cleared, the node reads a new [K, N] constant, the old one is left to DCE,
 * and the product is unchanged. A transposed model input is left alone. */
TEST(gemm_constant_transposed_operand_is_folded)
{
    for (int const_b = 1; const_b >= 0; const_b--) {
        ir_graph *g = ir_graph_new();
        int x = input(g, "x", shp(2, 3, 5));
        int b = const_b ? constant(g, "b", shp(2, 4, 5), 1.0f, 0.25f) : input(g, "b", shp(2, 4, 5));
        int bias = constant(g, "c", shp(1, 4), 0.5f, 0.0f);
        int y = op(g, "gemm", OP_Gemm, 3, (const int[]){x, b, bias});
        attr_int(g, node_named(g, "gemm"), "transB", 1);
        int ins[2] = {x, b};
        ir_graph_set_io(g, const_b ? 1 : 2, ins, 1, &y);
        ir_graph *h = ir_graph_clone(g);
        CHECK(h && graph_infer(h, lower_eval_node) == SMELT_OK && graph_fold_gemm_transpose(h) == SMELT_OK);
        const ir_node *n = &h->nodes[node_named(h, "gemm")];
        CHECK_EQ_INT(ir_attr_int(n, "transB", 0), !const_b);
        CHECK_EQ_INT(n->in[1] != b, const_b);
        if (const_b) {
            const ir_tensor *bt = &h->tensors[n->in[1]];
            CHECK(bt->shape.rank == 2 && bt->shape.dim[0] == 5 && bt->shape.dim[1] == 4);
            for (int k = 0; k < 5; k++)
                for (int j = 0; j < 4; j++)
                    CHECK(((const float *)bt->data)[k * 4 + j] == ((const float *)g->tensors[b].data)[j * 5 + k]);
            CHECK(graph_dce(h) == SMELT_OK);
            for (int t = 0; t < h->n_tensors; t++) CHECK(strcmp(h->tensors[t].name, "b") != 0);
        }
        ir_graph_free(h);
        smelt_program *p = compile(g, 0);
        if (p) {
            float xd[15], bd[20];
            for (int i = 0; i < 15; i++) xd[i] = (float)(i % 7) - 3.0f;
            const float *bv = const_b ? g->tensors[b].data : bd;
            for (int i = 0; i < 20; i++) bd[i] = (float)(i % 5) * 0.5f - 1.0f;
            smelt_tensor in[2] = {{.name = "x", .dtype = SMELT_F32, .rank = 2, .shape = {3, 5}, .data = xd},
                                  {.name = "b", .dtype = SMELT_F32, .rank = 2, .shape = {4, 5}, .data = bd}};
            CHECK(smelt_program_run(p, const_b ? 1 : 2, in) == SMELT_OK);
            smelt_tensor out;
            CHECK(smelt_program_output(p, 0, &out) == SMELT_OK);
            const float *c = g->tensors[bias].data;
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 4; j++) {
                    double want = c[j];
                    for (int k = 0; k < 5; k++) want += (double)xd[i * 5 + k] * bv[j * 5 + k];
                    CHECK_NEAR(((const float *)out.data)[i * 4 + j], want, 1e-5);
                }
        }
        smelt_program_free(p);
        ir_graph_free(g);
    }
}

/* Conv on the CPU against a direct reference: 2-D convolutions take the flat
 * form (an accumulator block and a zero-padded input tile in workgroup
 * memory: 2 buffers), with batch, groups, asymmetric pads, dilation, 1x1 and
 * row blocks that do not divide the output, and strided ones with the tile in
 * phase planes (all four for a 3x3 stride 2, one for a 1x1, four of nine for
 * a 2x2 stride 3, unequal strides with dilation); 1-D ones the row form (1 buffer). */
typedef struct conv_case {
    int rank;               /* of x */
    int64_t x[4], w[4];
    int64_t group, pads[4], stride[2], dil[2];
    bool bias, flat;
} conv_case;

static void conv_ref(const conv_case *cc, const float *x, const float *w, const float *b, const int64_t *yd, double *y)
{
    int ns = cc->rank - 2;
    int64_t mg = cc->w[0] / cc->group, cg = cc->w[1];
    int64_t H = ns == 2 ? cc->x[2] : 1, W = cc->x[ns + 1], KH = ns == 2 ? cc->w[2] : 1, KW = cc->w[ns + 1];
    int64_t OH = ns == 2 ? yd[2] : 1, OW = yd[ns + 1];
    int64_t sh = ns == 2 ? cc->stride[0] : 1, sw = cc->stride[ns - 1], dh = ns == 2 ? cc->dil[0] : 1, dw = cc->dil[ns - 1];
    int64_t ph = ns == 2 ? cc->pads[0] : 0, pw = cc->pads[ns - 1];
    for (int64_t n = 0; n < cc->x[0]; n++)
        for (int64_t m = 0; m < cc->w[0]; m++)
            for (int64_t oh = 0; oh < OH; oh++)
                for (int64_t ow = 0; ow < OW; ow++) {
                    double acc = cc->bias ? b[m] : 0;
                    for (int64_t c = 0; c < cg; c++)
                        for (int64_t kh = 0; kh < KH; kh++)
                            for (int64_t kw = 0; kw < KW; kw++) {
                                int64_t ih = oh * sh + kh * dh - ph, iw = ow * sw + kw * dw - pw;
                                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                                int64_t ci = m / mg * cg + c;
                                acc += (double)x[((n * cc->x[1] + ci) * H + ih) * W + iw] * w[((m * cg + c) * KH + kh) * KW + kw];
                            }
                    y[((n * cc->w[0] + m) * OH + oh) * OW + ow] = acc;
                }
}

TEST(conv_flat_and_row_forms_match_a_direct_reference)
{
    static const conv_case cases[] = {
        {4, {2, 3, 9, 11}, {8, 3, 3, 3}, 1, {1, 1, 1, 1}, {1, 1}, {1, 1}, true, true},
        {4, {1, 4, 30, 23}, {4, 2, 3, 2}, 2, {0, 2, 1, 0}, {1, 1}, {2, 1}, false, true},
        /* depthwise on rows of 3: rows of 17 to 27 at stride 1 take the depthwise kernel on 16-lane
         * hosts (test_conv_depthwise.c) */
        {4, {1, 6, 17, 3}, {6, 1, 3, 3}, 6, {1, 1, 1, 1}, {1, 1}, {1, 1}, true, true},
        {4, {1, 16, 20, 20}, {24, 16, 1, 1}, 1, {0, 0, 0, 0}, {1, 1}, {1, 1}, true, true},
        /* flat form, several input channels per step: 1x1 over 6 channels (2 per step), 2x2 over 4 */
        {4, {1, 6, 13, 10}, {8, 6, 1, 1}, 1, {0, 0, 0, 0}, {1, 1}, {1, 1}, true, true},
        /* 1x1 read directly, rows split 11 + 11 + 9: a short last unit, batch 2 */
        {4, {2, 8, 31, 17}, {8, 8, 1, 1}, 1, {0, 0, 0, 0}, {1, 1}, {1, 1}, false, true},
        {4, {1, 4, 12, 14}, {8, 4, 2, 2}, 1, {1, 0, 0, 1}, {1, 1}, {1, 1}, false, true},
        {4, {1, 3, 9, 9}, {5, 3, 3, 3}, 1, {1, 1, 1, 1}, {2, 2}, {1, 1}, true, true},
        /* strided: depthwise 3x3 stride 2 on odd sizes (rows of 18 outputs: narrower ones of at most
         * 16 take the depthwise kernel on 16-lane hosts, test_conv_depthwise.c), a 1x1 stride-2 downsample
         * (batch 2), a 7x7 stride-2 stem, a 2x2 stride 3, strides (1, 3) with dilation 2 */
        {4, {1, 8, 15, 35}, {8, 1, 3, 3}, 8, {1, 1, 1, 1}, {2, 2}, {1, 1}, true, true},
        {4, {2, 6, 14, 11}, {8, 6, 1, 1}, 1, {0, 0, 0, 0}, {2, 2}, {1, 1}, false, true},
        {4, {1, 3, 23, 21}, {8, 3, 7, 7}, 1, {3, 3, 3, 3}, {2, 2}, {1, 1}, true, true},
        {4, {1, 2, 17, 17}, {4, 2, 2, 2}, 1, {0, 1, 1, 0}, {3, 3}, {1, 1}, false, true},
        {4, {1, 4, 16, 19}, {4, 4, 3, 3}, 1, {2, 1, 0, 2}, {1, 3}, {2, 2}, true, true},
        {3, {2, 3, 40}, {4, 3, 5}, 1, {2, 2}, {1}, {1}, false, false},
    };
    for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
        const conv_case *cc = &cases[i];
        int ns = cc->rank - 2;
        ir_graph *g = ir_graph_new();
        ir_shape xs = {.rank = cc->rank}, ws = {.rank = cc->rank};
        for (int d = 0; d < cc->rank; d++) {
            xs.dim[d] = cc->x[d];
            ws.dim[d] = cc->w[d];
        }
        int x = input(g, "x", xs);
        int w = constant(g, "w", ws, 0.5f, 0.1f);
        int b = constant(g, "b", shp(1, (int)cc->w[0]), 0.3f, 0.2f);
        int ins[3] = {x, w, b};
        int y = op(g, "conv", OP_Conv, cc->bias ? 3 : 2, ins);
        int node = node_named(g, "conv");
        attr_ints(g, node, "pads", 2 * ns, cc->pads);
        attr_ints(g, node, "strides", ns, cc->stride);
        attr_ints(g, node, "dilations", ns, cc->dil);
        attr_int(g, node, "group", cc->group);
        ir_graph_set_io(g, 1, &x, 1, &y);
        /* the direct forms: group-1 1x1 and strided convs otherwise run on the
         * packed GEMM (ops/conv_gemm.c, tested in test_gemm_packed.c) */
        setenv("SMELT_NO_PACKED_GEMM", "1", 1);
        smelt_program *p = compile(g, 0);
        unsetenv("SMELT_NO_PACKED_GEMM");
        if (p) {
            /* flat: accumulators and a tile, but a 1x1 without pads reads its input directly */
            bool direct = cc->rank == 4 && cc->w[2] == 1 && cc->w[3] == 1 && !cc->pads[0] && !cc->pads[1] &&
                          !cc->pads[2] && !cc->pads[3] && cc->stride[0] == 1 && cc->stride[1] == 1;
            CHECK_EQ_INT(workgroup_tiles(p), cc->flat && !direct ? 2 : 1);
            int64_t nx = ir_shape_numel(&xs);
            float *xd = malloc(sizeof(float) * (size_t)nx);
            for (int64_t k = 0; k < nx; k++) xd[k] = (float)((k * 37) % 19 - 9) / 4.0f;
            smelt_tensor out;
            const float *y = run_x(p, xd, cc->rank, cc->x, &out);
            int64_t ny = smelt_tensor_numel(&out);
            double *ref = calloc((size_t)ny, sizeof(double));
            conv_ref(cc, xd, g->tensors[w].data, g->tensors[b].data, out.shape, ref);
            CHECK(count_far(y, ref, ny, 1e-4, i) == 0);
            free(ref);
            free(xd);
        }
        smelt_program_free(p);
        ir_graph_free(g);
    }
}

/* QuantizeLinear then a Cast back to float (DequantizeLinear's and the
 * float integer contractions' read of a quantized value) stays in float:
 * kir_cast takes the clamped, rounded value itself, so no cast to the 8-bit
 * type is left in the kernel. Results against a double reference for uint8
 * and int8 with zero points, half-way cases (ties to even), saturation both
 * ways, infinities and NaN (0, as the float-to-integer cast gives). */
TEST(quantize_then_cast_to_float_stays_in_float)
{
    static const float xs[] = {0.25f, 0.75f, -0.25f, 1.25f, -1.25f, 3.7f, -3.7f, 1000.0f, -1000.0f,
                               INFINITY, -INFINITY, NAN, 63.3f, -64.9f, 0.0f, 127.4f, -0.75f};
    enum { N = sizeof xs / sizeof xs[0] };
    for (int s8 = 0; s8 < 2; s8++) {
        ir_graph *g = ir_graph_new();
        int x = input(g, "x", shp(1, N));
        int sc = constant(g, "s", shp(0), 0.0f, 0.5f);
        int zp = ir_tensor_add(g, "zp", s8 ? SMELT_I8 : SMELT_U8, &(ir_shape){.rank = 0});
        void *zd = ir_tensor_alloc_data(g, zp);
        if (s8) *(int8_t *)zd = -2;
        else *(uint8_t *)zd = 3;
        int q = ir_tensor_add(g, "q", s8 ? SMELT_I8 : SMELT_U8, NULL);
        ir_node_add(g, "quant", OP_QuantizeLinear, 3, (const int[]){x, sc, zp}, 1, &q);
        int y = op1(g, "back", OP_Cast, q);
        attr_int(g, node_named(g, "back"), "to", SMELT_F32);
        ir_graph_set_io(g, 1, &x, 1, &y);
        smelt_program *p = compile(g, 0);
        CHECK(p != NULL);
        if (p) {
            /* a cast to the 8-bit type that some value or statement still reads */
            bool int_cast = false;
            for (int i = 0; i < p->lp.n_kernels; i++) {
                const kir_kernel *k = p->lp.kernels[i];
                for (int v = 1; v < k->n_vals; v++) {
                    const kir_value *u = &k->vals[v];
                    for (int o = 0; o < 3; o++) {
                        kir_val a = o == 0 ? u->a : o == 1 ? u->b : u->c;
                        int_cast |= a > 0 && a < k->n_vals && kir_op_arity(u->op) > o && k->vals[a].op == KIR_CAST &&
                                    k->vals[a].type == (s8 ? SMELT_I8 : SMELT_U8);
                    }
                }
                for (int st = 0; st < k->n_stmts; st++)
                    int_cast |= k->stmts[st].kind != KS_DEF && k->stmts[st].val > 0 &&
                                k->vals[k->stmts[st].val].op == KIR_CAST &&
                                k->vals[k->stmts[st].val].type == (s8 ? SMELT_I8 : SMELT_U8);
            }
            CHECK(!int_cast);
            float xd[N];
            memcpy(xd, xs, sizeof xd);
            const float *yd = run_x(p, xd, 1, (const int64_t[]){N}, NULL);
            for (int i = 0; i < N; i++) {
                double lo = s8 ? -128 : 0, hi = s8 ? 127 : 255, z = s8 ? -2 : 3;
                double want = isnan(xs[i]) ? 0 : fmin(fmax(nearbyint(xs[i] / 0.5) + z, lo), hi);
                if (yd[i] != want) fprintf(stderr, "  s8 %d x %g: %g, want %g\n", s8, xs[i], yd[i], want);
                CHECK(yd[i] == want);
            }
        }
        smelt_program_free(p);
        ir_graph_free(g);
    }
}

/* A bias added before a Reshape that merges rows (Erf(x + b) of [2, 4F, W]
 * read as [2, F, 4W]) is read at (column % W) of the merged row: the element
 * loop goes in blocks of W (a parallel loop of W), for W of 96 and 24; W = 6
 * is under a vector and keeps its %. Against double. */
TEST(merged_rows_split_the_element_loop_by_the_inner_dim)
{
    static const int64_t widths[] = {96, 24, 6};
    for (int wi = 0; wi < 3; wi++) {
        int64_t W = widths[wi], F = 5, N = 2 * 4 * F * W;
        ir_graph *g = ir_graph_new();
        int x = input(g, "x", shp(3, 2, (int)(4 * F), (int)W));
        int b = constant(g, "b", shp(1, (int)W), 1.0f, 0.25f);
        int shape = ir_tensor_add(g, "shape", SMELT_I64, &(ir_shape){.rank = 1, .dim = {3}});
        int64_t *sd = ir_tensor_alloc_data(g, shape);
        sd[0] = 2, sd[1] = F, sd[2] = 4 * W;
        int y = op2(g, "reshape", OP_Reshape, op1(g, "erf", OP_Erf, op2(g, "add", OP_Add, x, b)), shape);
        ir_graph_set_io(g, 1, &x, 1, &y);
        smelt_program *p = compile(g, 0);
        if (p) {
            int blocks = 0; /* parallel loops over one block of W */
            for (int i = 0; i < p->lp.n_kernels; i++) {
                const kir_kernel *k = p->lp.kernels[i];
                for (int st = 0; st < k->n_stmts; st++)
                    blocks += k->stmts[st].kind == KS_LOOP_BEGIN && k->stmts[st].parallel &&
                              kir_is_const(k, k->stmts[st].hi) && k->vals[k->stmts[st].hi].imm.i == W;
            }
            CHECK_EQ_INT(blocks, W >= 8);
            const float *bd = g->tensors[b].data;
            float *xd = malloc(sizeof(float) * (size_t)N);
            for (int64_t k = 0; k < N; k++) xd[k] = (float)((k * 37) % 23 - 11) / 7.0f;
            smelt_tensor out;
            const float *yd = run_x(p, xd, 3, (const int64_t[]){2, 4 * F, W}, &out);
            CHECK_EQ_INT(smelt_tensor_numel(&out), N);
            CHECK_EQ_INT(out.shape[2], 4 * W);
            double *ref = malloc(sizeof(double) * (size_t)N);
            for (int64_t k = 0; k < N; k++) ref[k] = erf((double)xd[k] + (double)bd[k % W]);
            CHECK(count_far(yd, ref, N, 1e-6, wi) == 0);
            free(ref);
            free(xd);
        }
        smelt_program_free(p);
        ir_graph_free(g);
    }
}

/* Resize nearest, asymmetric, floor, by whole factors (2 and 3 of a Sigmoid
 * fused in, batch 2, 5x7 to 10x21) reads x[y / s] in integers: no floor in
 * any kernel; round_prefer_floor keeps the float coordinate. Against a
 * direct reference. */
TEST(resize_nearest_by_whole_factors_divides_in_integers)
{
    for (int mode = 0; mode < 2; mode++) {
        ir_graph *g = ir_graph_new();
        g->opset = 19;
        int x = input(g, "x", shp(4, 2, 3, 5, 7));
        int sc = ir_tensor_add(g, "scales", SMELT_F32, &(ir_shape){.rank = 1, .dim = {4}});
        memcpy(ir_tensor_alloc_data(g, sc), (const float[]){1, 1, 2, 3}, sizeof(float) * 4);
        int sig = op1(g, "sig", OP_Sigmoid, x);
        int y = op(g, "rs", OP_Resize, 3, (const int[]){sig, -1, sc});
        attr_str(g, node_named(g, "rs"), "mode", "nearest");
        attr_str(g, node_named(g, "rs"), "coordinate_transformation_mode", "asymmetric");
        attr_str(g, node_named(g, "rs"), "nearest_mode", mode ? "round_prefer_floor" : "floor");
        ir_graph_set_io(g, 1, &x, 1, &y);
        smelt_program *p = compile(g, 0);
        if (p) {
            CHECK(has_kir_op(p, KIR_FLOOR) == (mode == 1));
            float xd[2 * 3 * 5 * 7];
            for (int k = 0; k < 2 * 3 * 5 * 7; k++) xd[k] = (float)((k * 37) % 23 - 11) / 4.0f;
            smelt_tensor out;
            const float *yd = run_x(p, xd, 4, (const int64_t[]){2, 3, 5, 7}, &out);
            CHECK_EQ_INT(smelt_tensor_numel(&out), 2 * 3 * 10 * 21);
            double ref[2 * 3 * 10 * 21];
            for (int nc = 0; nc < 6; nc++)
                for (int h = 0; h < 10; h++)
                    for (int w = 0; w < 21; w++) {
                        /* round_prefer_floor of h/2 and w/3: up where the fraction is over 0.5 (w % 3 == 2) */
                        int sh = h / 2, sw = mode && w % 3 == 2 ? w / 3 + 1 : w / 3;
                        sw = sw > 6 ? 6 : sw;
                        ref[(nc * 10 + h) * 21 + w] = 1 / (1 + exp(-(double)xd[(nc * 5 + sh) * 7 + sw]));
                    }
            CHECK(count_far(yd, ref, 2 * 3 * 10 * 21, 1e-6, mode) == 0);
        }
        smelt_program_free(p);
        ir_graph_free(g);
    }
}

/* 2-D float pools take the row form (one output row in workgroup memory, a
 * guard-free loop per tap over the columns it reaches); against a direct
 * reference: strides, asymmetric pads, dilation, ceil_mode, and AveragePool
 * with and without count_include_pad. */
typedef struct pool_case {
    bool max;
    int64_t x[4], k[2], s[2], d[2], pads[4];
    int ceil, include_pad;
} pool_case;

static void pool_ref(const pool_case *pc, const float *x, const int64_t *yd, double *y)
{
    int64_t H = pc->x[2], W = pc->x[3];
    for (int64_t nc = 0; nc < pc->x[0] * pc->x[1]; nc++)
        for (int64_t oh = 0; oh < yd[2]; oh++)
            for (int64_t ow = 0; ow < yd[3]; ow++) {
                double acc = pc->max ? -INFINITY : 0, cnt = 0;
                for (int64_t kh = 0; kh < pc->k[0]; kh++)
                    for (int64_t kw = 0; kw < pc->k[1]; kw++) {
                        int64_t ih = oh * pc->s[0] + kh * pc->d[0] - pc->pads[0];
                        int64_t iw = ow * pc->s[1] + kw * pc->d[1] - pc->pads[1];
                        bool in = ih >= 0 && ih < H && iw >= 0 && iw < W;
                        if (pc->include_pad ? ih < H + pc->pads[2] && iw < W + pc->pads[3] : in) cnt++;
                        if (!in) continue;
                        double v = x[(nc * H + ih) * W + iw];
                        acc = pc->max ? (v > acc ? v : acc) : acc + v;
                    }
                y[(nc * yd[2] + oh) * yd[3] + ow] = pc->max ? acc : acc / cnt;
            }
}

TEST(pool_row_form_matches_a_direct_reference)
{
    static const pool_case cases[] = {
        {true, {1, 3, 17, 15}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, 0, 0},
        {true, {2, 2, 9, 11}, {2, 3}, {1, 2}, {1, 1}, {0, 1, 1, 0}, 1, 0},
        {true, {1, 2, 12, 13}, {3, 2}, {2, 1}, {2, 2}, {2, 0, 0, 1}, 0, 0},
        {false, {1, 3, 10, 9}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, 0, 0},
        {false, {1, 3, 10, 9}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, 0, 1},
        {false, {2, 1, 11, 7}, {2, 3}, {3, 2}, {1, 1}, {0, 2, 1, 0}, 1, 1},
    };
    for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
        const pool_case *pc = &cases[i];
        ir_graph *g = ir_graph_new();
        int x = input(g, "x", shp(4, pc->x[0], pc->x[1], pc->x[2], pc->x[3]));
        int y = op1(g, "pool", pc->max ? OP_MaxPool : OP_AveragePool, x);
        int node = node_named(g, "pool");
        attr_ints(g, node, "kernel_shape", 2, pc->k);
        attr_ints(g, node, "strides", 2, pc->s);
        attr_ints(g, node, "pads", 4, pc->pads);
        if (pc->max) attr_ints(g, node, "dilations", 2, pc->d);
        attr_int(g, node, "ceil_mode", pc->ceil);
        if (!pc->max) attr_int(g, node, "count_include_pad", pc->include_pad);
        ir_graph_set_io(g, 1, &x, 1, &y);
        smelt_program *p = compile(g, 0);
        if (p) {
            CHECK_EQ_INT(workgroup_tiles(p), pc->max ? 1 : 2); /* the row (and its counts) */
            int64_t nx = pc->x[0] * pc->x[1] * pc->x[2] * pc->x[3];
            float *xd = malloc(sizeof(float) * (size_t)nx);
            for (int64_t k = 0; k < nx; k++) xd[k] = (float)((k * 29) % 23 - 11) / 3.0f;
            smelt_tensor out;
            const float *y = run_x(p, xd, 4, pc->x, &out);
            int64_t ny = smelt_tensor_numel(&out);
            double *ref = calloc((size_t)ny, sizeof(double));
            pool_ref(pc, xd, out.shape, ref);
            CHECK(count_far(y, ref, ny, 1e-5, i) == 0);
            free(ref);
            free(xd);
        }
        smelt_program_free(p);
        ir_graph_free(g);
    }
}

/* An LSTM's constant W and R are stored in the packed [D, K, 4H] order at compile time: the node
 * becomes PackedLSTM reading the transposed copies, its program has no transposing kernels (fewer
 * kernels than with W and R given as inputs: two fewer where 4H = 16 is whole panels, AVX2's NR of
 * 16, and W is read in place; one fewer with AVX-512's NR of 32, where the input projection still
 * packs W's panels per call, recurrent_lower.c's proj_gemm), and both compute the same Y. */
TEST(recurrent_constant_weights_are_packed_once)
{
    enum { S = 3, B = 2, I = 5, H = 4 };
    float out[2][S * 2 * B * H];
    int kernels[2] = {0, 0};
    for (int const_w = 1; const_w >= 0; const_w--) {
        ir_graph *g = ir_graph_new();
        int x = input(g, "x", shp(3, S, B, I));
        int w = constant(g, "w", shp(3, 2, 4 * H, I), 0.4f, 0.0f), r = constant(g, "r", shp(3, 2, 4 * H, H), 0.3f, 0.1f);
        float wd[2 * 4 * H * I], rd[2 * 4 * H * H];
        memcpy(wd, g->tensors[w].data, sizeof wd);
        memcpy(rd, g->tensors[r].data, sizeof rd);
        if (!const_w) { /* the same values, as graph inputs */
            w = input(g, "wi", shp(3, 2, 4 * H, I));
            r = input(g, "ri", shp(3, 2, 4 * H, H));
        }
        int y = op(g, "lstm", OP_LSTM, 3, (const int[]){x, w, r});
        ir_node_attr_add(g, node_named(g, "lstm"),
                         &(ir_attr){.name = "direction", .type = IR_ATTR_STRING, .s = "bidirectional", .tensor = -1});
        int ins[3] = {x, w, r};
        ir_graph_set_io(g, const_w ? 1 : 3, ins, 1, &y);
        ir_graph *h = ir_graph_clone(g);
        CHECK(h && graph_infer(h, lower_eval_node) == SMELT_OK && graph_fold_gemm_transpose(h) == SMELT_OK);
        const ir_node *n = &h->nodes[node_named(h, "lstm")];
        CHECK_EQ_INT(n->op == OP_PackedLSTM, const_w);
        if (const_w) {
            const ir_tensor *wt = &h->tensors[n->in[1]];
            CHECK(wt->shape.rank == 3 && wt->shape.dim[1] == I && wt->shape.dim[2] == 4 * H);
            for (int d = 0; d < 2; d++)
                for (int k = 0; k < I; k++)
                    for (int j = 0; j < 4 * H; j++)
                        CHECK(((const float *)wt->data)[(d * I + k) * 4 * H + j] == wd[(d * 4 * H + j) * I + k]);
        }
        ir_graph_free(h);
        smelt_program *p = compile(g, 0);
        CHECK(p != NULL);
        if (p) {
            float xd[S * B * I];
            for (int i = 0; i < S * B * I; i++) xd[i] = (float)(i % 9) * 0.25f - 1.0f;
            smelt_tensor in[3] = {{.name = "x", .dtype = SMELT_F32, .rank = 3, .shape = {S, B, I}, .data = xd},
                                  {.name = "wi", .dtype = SMELT_F32, .rank = 3, .shape = {2, 4 * H, I}, .data = wd},
                                  {.name = "ri", .dtype = SMELT_F32, .rank = 3, .shape = {2, 4 * H, H}, .data = rd}};
            CHECK(smelt_program_run(p, const_w ? 1 : 3, in) == SMELT_OK);
            smelt_tensor o;
            CHECK(smelt_program_output(p, 0, &o) == SMELT_OK);
            memcpy(out[const_w], o.data, sizeof out[0]);
            kernels[const_w] = p->lp.n_kernels;
            smelt_program_free(p);
        }
        ir_graph_free(g);
    }
    CHECK(kernels[1] > 0 && kernels[1] < kernels[0]);
    for (int i = 0; i < S * 2 * B * H; i++) CHECK_NEAR(out[1][i], out[0][i], 1e-6);
}

/* Parallel loops of the program's kernels over [.., n) with a constant n. */
static int parallel_loops_of(const smelt_program *p, int64_t n)
{
    int count = 0;
    for (int i = 0; i < p->lp.n_kernels; i++) {
        const kir_kernel *k = p->lp.kernels[i];
        for (int st = 0; st < k->n_stmts; st++)
            count += k->stmts[st].kind == KS_LOOP_BEGIN && k->stmts[st].parallel && kir_is_const(k, k->stmts[st].hi) &&
                     k->vals[k->stmts[st].hi].imm.i == n;
    }
    return count;
}

/* Elementwise kernels over short last dims run their trailing dims as one
 * flat loop where every access is contiguous over them or broadcast across
 * them: x * s + z (s [1,C,1,1], z [1,1,H,W]) is a loop of H*W per channel;
 * x + w of one shape a loop of C*H*W. Where an access is not (x * r with r
 * [1,C,H,1], a transposed x) the rows of W stay. 7x7 and 3x5 planes, C = 5,
 * against double and the --no-fuse compile. */
TEST(short_trailing_dims_run_as_one_flat_loop)
{
    static const int64_t planes[][2] = {{7, 7}, {3, 5}};
    for (int pi = 0; pi < 2; pi++)
        for (int cs = 0; cs < 4; cs++) {
            int64_t C = 5, H = planes[pi][0], W = planes[pi][1], N = C * H * W;
            ir_graph *g = ir_graph_new();
            bool tr = cs == 3;
            int x = input(g, "x", tr ? shp(4, 1, (int)C, (int)W, (int)H) : shp(4, 1, (int)C, (int)H, (int)W));
            int s = constant(g, "s", shp(4, 1, (int)C, 1, 1), 0.5f, -1.0f);
            int z = constant(g, "z", shp(4, 1, 1, (int)H, (int)W), 0.25f, 0.5f);
            int w = constant(g, "w", shp(4, 1, (int)C, (int)H, (int)W), 0.125f, -2.0f);
            int r = constant(g, "r", shp(4, 1, (int)C, (int)H, 1), 0.75f, 0.25f);
            int y;
            if (cs == 0) y = op2(g, "add", OP_Add, op2(g, "mul", OP_Mul, x, s), z);
            else if (cs == 1) y = op2(g, "add", OP_Add, x, w);
            else if (cs == 2) y = op2(g, "mul", OP_Mul, x, r);
            else {
                int t = op1(g, "tr", OP_Transpose, x);
                attr_ints(g, node_named(g, "tr"), "perm", 4, (const int64_t[]){0, 1, 3, 2});
                y = op2(g, "mul", OP_Mul, op1(g, "sig", OP_Sigmoid, t), s);
            }
            ir_graph_set_io(g, 1, &x, 1, &y);
            smelt_program *p = compile(g, 0), *q = compile(g, 1);
            if (p && q) {
                int64_t flat = cs == 0 ? H * W : cs == 1 ? N : 0;
                if (flat) {
                    CHECK(parallel_loops_of(p, flat) >= 1);
                    CHECK_EQ_INT(parallel_loops_of(p, W), 0);
                } else {
                    CHECK(parallel_loops_of(p, W) >= 1);
                    CHECK_EQ_INT(parallel_loops_of(p, H * W), 0);
                }
                const float *sd = g->tensors[s].data, *zd = g->tensors[z].data, *wd = g->tensors[w].data,
                            *rd = g->tensors[r].data;
                float *xd = malloc(sizeof(float) * (size_t)N);
                double *ref = malloc(sizeof(double) * (size_t)N);
                for (int64_t k = 0; k < N; k++) xd[k] = (float)((k * 37) % 23 - 11) / 7.0f;
                for (int64_t c = 0; c < C; c++)
                    for (int64_t h = 0; h < H; h++)
                        for (int64_t v = 0; v < W; v++) {
                            int64_t k = (c * H + h) * W + v;
                            double xv = xd[k];
                            ref[k] = cs == 0   ? xv * sd[c] + zd[h * W + v]
                                     : cs == 1 ? xv + wd[k]
                                     : cs == 2 ? xv * rd[c * H + h]
                                               : sd[c] / (1.0 + exp(-(double)xd[(c * W + v) * H + h]));
                        }
                int64_t shape[4] = {1, C, tr ? W : H, tr ? H : W};
                smelt_tensor out;
                const float *yd = run_x(p, xd, 4, shape, &out);
                CHECK_EQ_INT(smelt_tensor_numel(&out), N);
                CHECK(count_far(yd, ref, N, 1e-6, pi * 4 + cs) == 0);
                const float *yq = run_x(q, xd, 4, shape, NULL);
                CHECK(count_far(yq, ref, N, 1e-6, pi * 4 + cs) == 0);
                free(ref);
                free(xd);
            }
            smelt_program_free(p);
            smelt_program_free(q);
            ir_graph_free(g);
        }
}
