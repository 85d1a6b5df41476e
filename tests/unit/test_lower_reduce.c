/*
 * test_lower_reduce.c — the reduction family's CPU forms on compiled programs
 * against double references: rows in vector lanes (Softmax, one and several
 * reduced dims, a global pool's plane), the column form (a reduction or a softmax that keeps the
 * last dim), and LayerNormalization's row sums.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/program.h"
#include "test.h"
#include "fuse_cases.h"

static const float *run_2d(smelt_program *p, float *xd, int64_t d0, int64_t d1)
{
    return run_x(p, xd, 2, (const int64_t[]){d0, d1}, NULL);
}

/* A Softmax row of one dim reduces (max, then sum of exp) in vector lanes on
 * the CPU: lane q takes the elements i % V == q of the whole vectors, the
 * rest of the row runs serially; the sum pass keeps each exp for the store
 * pass, its exps vector code where the lanes are a vector ISA's. Rows shorter than two vectors, with a tail,
 * and exactly whole, for V = 4 and 16, against a double-precision softmax. */
TEST(softmax_rows_reduce_in_vector_lanes)
{
    static const char *const widths[] = {"4", "16"};
    static const int64_t lens[] = {7, 37, 64, 200};
    for (int wi = 0; wi < 2; wi++) {
        setenv("SMELT_VECTOR_WIDTH", widths[wi], 1);
        for (int li = 0; li < 4; li++) {
            int64_t L = lens[li], rows = 3;
            ir_graph *g = ir_graph_new();
            int x = input(g, "x", shp(2, (int)rows, (int)L));
            int y = op1(g, "sm", OP_Softmax, x);
            attr_int(g, node_named(g, "sm"), "axis", -1);
            ir_graph_set_io(g, 1, &x, 1, &y);
            smelt_program *p = compile(g, 0);
            if (p) {
                int64_t v = atoi(widths[wi]);
                /* the max's lanes and the sum's, and the row of exps kept for the store pass */
                CHECK_EQ_INT(workgroup_tiles(p), (L >= 2 * v ? 2 : 0) + 1);
                /* with lanes of a vector ISA (16: AVX-512's row), the sum pass's exps
                 * are vector code (the max read before its loop, not in it) */
                if (v == 16 && L >= 2 * v)
                    CHECK(p->cls[0].source && strstr(p->cls[0].source, "smelt_expf_v16(x") != NULL);
                float *xd = malloc(sizeof(float) * (size_t)(rows * L));
                for (int64_t k = 0; k < rows * L; k++) xd[k] = (float)((k * 37) % 19 - 9) / 2.0f;
                xd[L + L / 2] = 80.0f; /* a row whose exp would overflow without the max */
                const float *yd = run_2d(p, xd, rows, L);
                int bad = 0;
                for (int64_t r = 0; r < rows; r++) {
                    double mx = -INFINITY, sum = 0;
                    for (int64_t i = 0; i < L; i++) mx = fmax(mx, xd[r * L + i]);
                    for (int64_t i = 0; i < L; i++) sum += exp(xd[r * L + i] - mx);
                    for (int64_t i = 0; i < L && bad < 3; i++) {
                        double want = exp(xd[r * L + i] - mx) / sum, got = yd[r * L + i];
                        if (fabs(got - want) > 1e-6 * (1 + want) + 1e-5 * want) {
                            fprintf(stderr, "  V=%s L=%lld [%lld][%lld]: %g, want %g\n", widths[wi], (long long)L,
                                    (long long)r, (long long)i, got, want);
                            bad++;
                        }
                    }
                }
                CHECK(bad == 0);
                free(xd);
            }
            smelt_program_free(p);
            ir_graph_free(g);
        }
    }
    unsetenv("SMELT_VECTOR_WIDTH");
}

/* Reductions of one float dim use the same lanes (ReduceMean, ReduceMax,
 * ReduceL2, ReduceLogSumExp over rows of 7 and 37), also over a leading dim,
 * whose elements are a row apart; against double-precision references. */
TEST(reductions_of_one_dim_use_vector_lanes)
{
    static const op_id ops[] = {OP_ReduceMean, OP_ReduceMax, OP_ReduceL2, OP_ReduceLogSumExp};
    static const char *const widths[] = {"4", "16"};
    for (int wi = 0; wi < 2; wi++) {
        setenv("SMELT_VECTOR_WIDTH", widths[wi], 1);
        for (int oi = 0; oi < 4; oi++)
            for (int axis = 0; axis < 2; axis++)
                for (int64_t L = 7; L <= 37; L += 30) {
                    int64_t R = 3, d0 = axis == 1 ? R : L, d1 = axis == 1 ? L : R;
                    ir_graph *g = ir_graph_new();
                    int x = input(g, "x", shp(2, (int)d0, (int)d1));
                    int y = op1(g, "red", ops[oi], x);
                    attr_ints(g, g->n_nodes - 1, "axes", 1, (const int64_t[]){axis});
                    attr_int(g, g->n_nodes - 1, "keepdims", 0);
                    ir_graph_set_io(g, 1, &x, 1, &y);
                    smelt_program *p = compile(g, 0);
                    if (p) {
                        CHECK((workgroup_tiles(p) > 0) == (L >= 2 * atoi(widths[wi]))); /* lanes: a row of 2 vectors */
                        float *xd = malloc(sizeof(float) * (size_t)(d0 * d1));
                        for (int64_t k = 0; k < d0 * d1; k++) xd[k] = (float)((k * 29) % 17 - 8) / 3.0f;
                        const float *yd = run_2d(p, xd, d0, d1);
                        for (int64_t r = 0; r < R; r++) {
                            double acc = ops[oi] == OP_ReduceMax ? -INFINITY : 0, mx = -INFINITY;
                            for (int64_t i = 0; i < L; i++) mx = fmax(mx, xd[axis == 1 ? r * L + i : i * R + r]);
                            for (int64_t i = 0; i < L; i++) {
                                double v = xd[axis == 1 ? r * L + i : i * R + r];
                                acc = ops[oi] == OP_ReduceMax ? fmax(acc, v)
                                    : ops[oi] == OP_ReduceL2 ? acc + v * v
                                    : ops[oi] == OP_ReduceLogSumExp ? acc + exp(v - mx) : acc + v;
                            }
                            double want = ops[oi] == OP_ReduceMean ? acc / (double)L
                                        : ops[oi] == OP_ReduceL2 ? sqrt(acc)
                                        : ops[oi] == OP_ReduceLogSumExp ? log(acc) + mx : acc;
                            double got = yd[r];
                            if (fabs(got - want) > 1e-5 * (1 + fabs(want)))
                                fprintf(stderr, "  V=%s op %d axis %d L=%lld row %lld: %g, want %g\n", widths[wi], oi,
                                        axis, (long long)L, (long long)r, got, want);
                            CHECK(fabs(got - want) <= 1e-5 * (1 + fabs(want)));
                        }
                        free(xd);
                    }
                    smelt_program_free(p);
                    ir_graph_free(g);
                }
    }
    unsetenv("SMELT_VECTOR_WIDTH");
}

/* Reductions over several dims keep lanes over the innermost reduced dim
 * across the others' loops (ReduceMin, ReduceMax, ReduceSum, ReduceL1,
 * ReduceLogSumExp of x * sigmoid(x), fused, over [2, 3, 5, L] along {1, 3},
 * {2, 3} and all dims, L = 7 and 37 with tails), for V = 4 and 16, against
 * double; a NaN reaches Min's and Max's results through the lanes. */
TEST(reductions_of_several_dims_use_vector_lanes)
{
    static const op_id ops[] = {OP_ReduceMin, OP_ReduceMax, OP_ReduceSum, OP_ReduceL1, OP_ReduceLogSumExp};
    static const char *const widths[] = {"4", "16"};
    static const uint32_t masks[] = {0xa, 0xc, 0xf};
    for (int wi = 0; wi < 2; wi++) {
        setenv("SMELT_VECTOR_WIDTH", widths[wi], 1);
        for (int oi = 0; oi < 5; oi++)
            for (int mi = 0; mi < 3; mi++)
                for (int64_t L = 7; L <= 37; L += 30)
                    for (int nan = 0; nan < 1 + (oi < 2); nan++) {
                        const int64_t dims[4] = {2, 3, 5, L};
                        int64_t axes[4], na = 0, n = 2 * 3 * 5 * L;
                        for (int d = 0; d < 4; d++)
                            if (masks[mi] & (1u << d)) axes[na++] = d;
                        ir_graph *g = ir_graph_new();
                        int x = input(g, "x", shp(4, 2, 3, 5, (int)L));
                        int s = op2(g, "silu", OP_Mul, x, op1(g, "sig", OP_Sigmoid, x));
                        int y = op1(g, "red", ops[oi], s);
                        attr_ints(g, g->n_nodes - 1, "axes", (int)na, axes);
                        attr_int(g, g->n_nodes - 1, "keepdims", 0);
                        ir_graph_set_io(g, 1, &x, 1, &y);
                        smelt_program *p = compile(g, 0);
                        if (!p) {
                            CHECK(p != NULL);
                            ir_graph_free(g);
                            continue;
                        }
                        /* a whole tensor's min or max: lanes over its flat run (the split form); the
                         * last dims as one contiguous row of two vectors or more (red_flat_from), or
                         * lanes over the innermost reduced dim of at least one vector */
                        int64_t v = atoi(widths[wi]);
                        bool split = masks[mi] == 0xf && oi < 2, trailing = masks[mi] != 0xa;
                        int64_t row = masks[mi] == 0xc ? 5 * L : 2 * 3 * 5 * L;
                        CHECK((workgroup_tiles(p) > 0) == (split || (trailing ? row >= 2 * v : L >= v)));
                        float *xd = malloc(sizeof(float) * (size_t)n);
                        for (int64_t k = 0; k < n; k++) xd[k] = (float)((k * 29) % 23 - 11) / 3.0f;
                        if (nan) xd[n / 2 + 1] = NAN;
                        smelt_tensor out;
                        const float *yd = run_x(p, xd, 4, dims, &out);
                        int64_t no = smelt_tensor_numel(&out), bad = 0;
                        for (int64_t o = 0; o < no; o++) {
                            double acc = oi == 0 ? INFINITY : oi == 1 ? -INFINITY : 0, mx = -INFINITY;
                            for (int pass = 0; pass < 2; pass++)
                                for (int64_t k = 0; k < n; k++) {
                                    int64_t idx[4] = {k / (3 * 5 * L), k / (5 * L) % 3, k / L % 5, k % L}, ok = 0, m = 1;
                                    for (int d = 3; d >= 0; d--)
                                        if (!(masks[mi] & (1u << d))) ok += idx[d] * m, m *= dims[d];
                                    if (ok != o) continue;
                                    double v = xd[k] / (1.0 + exp(-(double)xd[k]));
                                    if (pass == 0) mx = isnan(v) || isnan(mx) ? NAN : fmax(mx, v);
                                    else acc = isnan(v) || isnan(acc) ? NAN
                                             : oi == 0 ? fmin(acc, v) : oi == 1 ? fmax(acc, v)
                                             : oi == 3 ? acc + fabs(v) : oi == 4 ? acc + exp(v - mx) : acc + v;
                                }
                            double want = oi == 4 ? log(acc) + mx : acc, got = yd[o];
                            bad += isnan(want) ? !isnan(got) : !(fabs(got - want) <= 1e-5 * (1 + fabs(want)));
                        }
                        if (bad)
                            fprintf(stderr, "  V=%s op %d mask %x L=%lld nan %d: %lld wrong\n", widths[wi], oi, masks[mi],
                                    (long long)L, nan, (long long)bad);
                        CHECK(bad == 0);
                        free(xd);
                        smelt_program_free(p);
                        ir_graph_free(g);
                    }
    }
    unsetenv("SMELT_VECTOR_WIDTH");
}

/* A global pool's plane is one contiguous row (red_flat_from): vector lanes
 * over H*W where it holds two vectors, though neither H nor W does (3x3, 7x7,
 * 10x10, 5x13 and 1x37 planes, with tails; GlobalAveragePool and
 * GlobalMaxPool of a fused HardSwish, 3 channels, batch 2), for V = 8 and 16,
 * against double. */
TEST(global_pools_reduce_the_plane_as_one_row)
{
    static const char *const widths[] = {"8", "16"};
    static const int64_t planes[][2] = {{3, 3}, {7, 7}, {10, 10}, {5, 13}, {1, 37}};
    for (int wi = 0; wi < 2; wi++) {
        setenv("SMELT_VECTOR_WIDTH", widths[wi], 1);
        for (int pi = 0; pi < 5; pi++)
            for (int mean = 0; mean < 2; mean++) {
                int64_t h = planes[pi][0], w = planes[pi][1], hw = h * w, n = 2 * 3 * hw;
                ir_graph *g = ir_graph_new();
                int x = input(g, "x", shp(4, 2, 3, (int)h, (int)w));
                int y = op1(g, "pool", mean ? OP_GlobalAveragePool : OP_GlobalMaxPool, op1(g, "hs", OP_HardSwish, x));
                ir_graph_set_io(g, 1, &x, 1, &y);
                smelt_program *p = compile(g, 0);
                if (!p) {
                    CHECK(p != NULL);
                    ir_graph_free(g);
                    continue;
                }
                CHECK((workgroup_tiles(p) > 0) == (hw >= 2 * atoi(widths[wi])));
                float *xd = malloc(sizeof(float) * (size_t)n);
                for (int64_t k = 0; k < n; k++) xd[k] = (float)((k * 37) % 29 - 14) / 4.0f;
                smelt_tensor out;
                const float *yd = run_x(p, xd, 4, (const int64_t[]){2, 3, h, w}, &out);
                int64_t bad = 0;
                CHECK(smelt_tensor_numel(&out) == 6);
                for (int64_t o = 0; o < 6; o++) {
                    double acc = mean ? 0 : -INFINITY;
                    for (int64_t k = o * hw; k < (o + 1) * hw; k++) {
                        double v = xd[k] * fmin(fmax(xd[k] / 6.0 + 0.5, 0.0), 1.0);
                        acc = mean ? acc + v : fmax(acc, v);
                    }
                    double want = mean ? acc / (double)hw : acc;
                    bad += !(fabs(yd[o] - want) <= 1e-5 * (1 + fabs(want)));
                }
                if (bad)
                    fprintf(stderr, "  V=%s %lldx%lld mean %d: %lld wrong\n", widths[wi], (long long)h, (long long)w, mean,
                            (long long)bad);
                CHECK(bad == 0);
                free(xd);
                smelt_program_free(p);
                ir_graph_free(g);
            }
    }
    unsetenv("SMELT_VECTOR_WIDTH");
}

/* A float reduction that keeps the last dim (ReduceMean over the rows of
 * [2, L, C], a max over the first two dims, and the rest of the family, of an
 * Erf fused in) accumulates a tile of columns in workgroup memory with
 * contiguous loads: a workgroup buffer wider than the lanes where C is
 * whole vectors, none where it is not (the row form); keepdims 0 and 1,
 * against double. */
TEST(column_reductions_keep_the_last_dim_in_vector_lanes)
{
    static const op_id ops[] = {OP_ReduceMean, OP_ReduceMax, OP_ReduceMin, OP_ReduceSum,
                                OP_ReduceL1,   OP_ReduceL2,  OP_ReduceSumSquare, OP_ReduceProd};
    static const char *const widths[] = {"4", "16"};
    static const int64_t cols[] = {48, 13};
    for (int wi = 0; wi < 2; wi++) {
        setenv("SMELT_VECTOR_WIDTH", widths[wi], 1);
        for (int oi = 0; oi < 8; oi++)
            for (int ci = 0; ci < 2; ci++)
                for (int both = 0; both < 2; both++) {
                    int64_t B = 2, L = oi == 7 ? 5 : 37, C = cols[ci];
                    ir_graph *g = ir_graph_new();
                    int x = input(g, "x", shp(3, (int)B, (int)L, (int)C));
                    int e = op1(g, "erf", OP_Erf, x);
                    int y = op1(g, "red", ops[oi], e);
                    attr_ints(g, g->n_nodes - 1, "axes", both ? 2 : 1, (const int64_t[]){both ? 0 : 1, 1});
                    attr_int(g, g->n_nodes - 1, "keepdims", both);
                    ir_graph_set_io(g, 1, &x, 1, &y);
                    smelt_program *p = compile(g, 0);
                    if (p) {
                        /* the column form's accumulators: a workgroup buffer wider than the lanes */
                        int wide = 0;
                        for (int i = 0; i < p->lp.n_kernels; i++)
                            for (int bi = 0; bi < p->lp.kernels[i]->n_bufs; bi++)
                                wide += p->lp.kernels[i]->bufs[bi].workgroup &&
                                        p->lp.kernels[i]->bufs[bi].numel > atoi(widths[wi]);
                        CHECK_EQ_INT(wide, C % atoi(widths[wi]) == 0);
                        float *xd = malloc(sizeof(float) * (size_t)(B * L * C));
                        for (int64_t k = 0; k < B * L * C; k++) xd[k] = (float)((k * 29) % 17 - 8) / 5.0f;
                        smelt_tensor out;
                        const float *yd = run_x(p, xd, 3, (const int64_t[]){B, L, C}, &out);
                        CHECK_EQ_INT(smelt_tensor_numel(&out), (both ? 1 : B) * C);
                        CHECK_EQ_INT(out.rank, both ? 3 : 2);
                        int bad = 0;
                        for (int64_t b = 0; b < (both ? 1 : B); b++)
                            for (int64_t c = 0; c < C; c++) {
                                double acc = oi == 1 ? -INFINITY : oi == 2 ? INFINITY : oi == 7 ? 1 : 0;
                                int64_t n = 0;
                                for (int64_t bb = both ? 0 : b; bb < (both ? B : b + 1); bb++)
                                    for (int64_t l = 0; l < L; l++, n++) {
                                        double v = erf((double)xd[(bb * L + l) * C + c]);
                                        acc = oi == 1 ? fmax(acc, v) : oi == 2 ? fmin(acc, v) : oi == 4 ? acc + fabs(v)
                                            : oi == 5 || oi == 6 ? acc + v * v : oi == 7 ? acc * v : acc + v;
                                    }
                                double want = oi == 0 ? acc / (double)n : oi == 5 ? sqrt(acc) : acc;
                                double got = yd[b * C + c];
                                if (fabs(got - want) > 1e-5 * (1 + fabs(want)) && bad++ < 3)
                                    fprintf(stderr, "  V=%s op %d C=%lld both %d [%lld][%lld]: %g, want %g\n", widths[wi],
                                            oi, (long long)C, both, (long long)b, (long long)c, got, want);
                            }
                        CHECK_EQ_INT(bad, 0);
                        free(xd);
                    }
                    smelt_program_free(p);
                    ir_graph_free(g);
                }
    }
    unsetenv("SMELT_VECTOR_WIDTH");
}

/* Parallel loops of the program's kernels with fewer than `lanes` iterations. */
static int narrow_parallel_loops(const smelt_program *p, int64_t lanes)
{
    int n = 0;
    for (int i = 0; i < p->lp.n_kernels; i++) {
        const kir_kernel *k = p->lp.kernels[i];
        for (int s = 0; s < k->n_stmts; s++) {
            const kir_stmt *t = &k->stmts[s];
            if (t->kind == KS_LOOP_BEGIN && t->parallel && kir_is_const(k, t->hi) && kir_is_const(k, t->lo) &&
                k->vals[t->hi].imm.i - k->vals[t->lo].imm.i < lanes)
                n++;
        }
    }
    return n;
}

/* Softmax and LogSoftmax (opset 13) over a dim that is not the last, of a
 * Sigmoid fused in ([2, 9, 3, C]: a DFL head's softmax over bins), take the
 * column form: the maxima and sums of a tile of columns in workgroup memory,
 * panels of the vector width where it divides C, else one strip over the
 * tile (20 and 13 at 16 lanes, 20 at 8, 13 at 4): no parallel loop narrower
 * than a vector (or than C) is left to run scalar. Against double. */
TEST(softmax_over_a_middle_dim_takes_the_column_form)
{
    static const char *const widths[] = {"4", "8", "16"};
    static const int64_t cols[] = {32, 20, 13, 1};
    for (int wi = 0; wi < 3; wi++) {
        setenv("SMELT_VECTOR_WIDTH", widths[wi], 1);
        for (int ci = 0; ci < 4; ci++)
            for (int lg = 0; lg < 2; lg++) {
                int64_t B = 2, A = 9, H = 3, C = cols[ci], N = B * A * H * C;
                ir_graph *g = ir_graph_new();
                g->opset = 17;
                int x = input(g, "x", shp(4, (int)B, (int)A, (int)H, (int)C));
                int y = op1(g, "sm", lg ? OP_LogSoftmax : OP_Softmax, op1(g, "sig", OP_Sigmoid, x));
                attr_int(g, node_named(g, "sm"), "axis", 1);
                ir_graph_set_io(g, 1, &x, 1, &y);
                smelt_program *p = compile(g, 0);
                if (p) {
                    int wide = 0;
                    for (int i = 0; i < p->lp.n_kernels; i++)
                        for (int bi = 0; bi < p->lp.kernels[i]->n_bufs; bi++)
                            wide += p->lp.kernels[i]->bufs[bi].workgroup && p->lp.kernels[i]->bufs[bi].numel >= C;
                    CHECK_EQ_INT(wide, 2); /* maxima and sums */
                    CHECK_EQ_INT(narrow_parallel_loops(p, atoi(widths[wi]) < C ? atoi(widths[wi]) : C), 0);
                    float *xd = malloc(sizeof(float) * (size_t)N);
                    for (int64_t k = 0; k < N; k++) xd[k] = (float)((k * 37) % 29 - 14) / 2.0f;
                    smelt_tensor out;
                    const float *yd = run_x(p, xd, 4, (const int64_t[]){B, A, H, C}, &out);
                    CHECK_EQ_INT(smelt_tensor_numel(&out), N);
                    double *ref = malloc(sizeof(double) * (size_t)N);
                    for (int64_t b = 0; b < B; b++)
                        for (int64_t hc = 0; hc < H * C; hc++) {
                            double mx = -INFINITY, sum = 0;
                            for (int64_t a = 0; a < A; a++) mx = fmax(mx, 1 / (1 + exp(-xd[(b * A + a) * H * C + hc])));
                            for (int64_t a = 0; a < A; a++) sum += exp(1 / (1 + exp(-xd[(b * A + a) * H * C + hc])) - mx);
                            for (int64_t a = 0; a < A; a++) {
                                double d = 1 / (1 + exp(-xd[(b * A + a) * H * C + hc])) - mx;
                                ref[(b * A + a) * H * C + hc] = lg ? d - log(sum) : exp(d) / sum;
                            }
                        }
                    CHECK(count_far(yd, ref, N, 1e-5, ci * 2 + lg) == 0);
                    free(ref);
                    free(xd);
                }
                smelt_program_free(p);
                ir_graph_free(g);
            }
    }
    unsetenv("SMELT_VECTOR_WIDTH");
}

/* Softmax and LogSoftmax over each axis of transpose(concat(a, b)) ([2,3,5,C]
 * ++ [2,3,4,C] on dim 2, perm 0,2,1,3: [2,9,3,C]), the concat stored first
 * (fuse.h "passes"), with C a vector, a power of two under one and odd, at 8
 * and 16 lanes, against a double softmax of the same elements. */
TEST(softmax_of_a_transposed_concat_over_every_axis)
{
    static const char *const widths[] = {"8", "16"};
    static const int64_t cols[] = {16, 20, 13};
    for (int wi = 0; wi < 2; wi++) {
        setenv("SMELT_VECTOR_WIDTH", widths[wi], 1);
        for (int ci = 0; ci < 3; ci++)
            for (int ax = 0; ax < 4; ax++)
                for (int lg = 0; lg < 2; lg++) {
                    int64_t C = cols[ci], dims[4] = {2, 9, 3, C}, N = 2 * 9 * 3 * C;
                    ir_graph *g = ir_graph_new();
                    g->opset = 13;
                    int io[2] = {input(g, "a", shp(4, 2, 3, 5, (int)C)), input(g, "b", shp(4, 2, 3, 4, (int)C))};
                    int cat = op2(g, "cat", OP_Concat, io[0], io[1]);
                    attr_int(g, g->n_nodes - 1, "axis", 2);
                    int t = op1(g, "tr", OP_Transpose, cat);
                    attr_ints(g, g->n_nodes - 1, "perm", 4, (const int64_t[]){0, 2, 1, 3});
                    int y = op1(g, "sm", lg ? OP_LogSoftmax : OP_Softmax, t);
                    attr_int(g, g->n_nodes - 1, "axis", ax);
                    ir_graph_set_io(g, 2, io, 1, &y);
                    smelt_program *p = compile(g, 0);
                    if (p) {
                        float *ad = malloc(sizeof(float) * (size_t)(2 * 3 * 5 * C));
                        float *bd = malloc(sizeof(float) * (size_t)(2 * 3 * 4 * C));
                        for (int64_t k = 0; k < 2 * 3 * 5 * C; k++) ad[k] = (float)((k * 37) % 29 - 14) / 2.0f;
                        for (int64_t k = 0; k < 2 * 3 * 4 * C; k++) bd[k] = (float)((k * 11) % 23 - 11) / 3.0f;
                        smelt_tensor in[2] = {{.name = "a", .dtype = SMELT_F32, .rank = 4, .shape = {2, 3, 5, C}, .data = ad},
                                              {.name = "b", .dtype = SMELT_F32, .rank = 4, .shape = {2, 3, 4, C}, .data = bd}};
                        smelt_tensor out = {0};
                        CHECK(smelt_program_run(p, 2, in) == SMELT_OK);
                        CHECK(smelt_program_output(p, 0, &out) == SMELT_OK);
                        CHECK_EQ_INT(smelt_tensor_numel(&out), N);
                        /* x[n][h][c][w] = cat[n][c][h][w]: a for h < 5, else b at h - 5 */
                        double *x = malloc(sizeof(double) * (size_t)N), *ref = malloc(sizeof(double) * (size_t)N);
                        for (int64_t n = 0; n < 2; n++)
                            for (int64_t h = 0; h < 9; h++)
                                for (int64_t c = 0; c < 3; c++)
                                    for (int64_t w = 0; w < C; w++)
                                        x[((n * 9 + h) * 3 + c) * C + w] =
                                            h < 5 ? ad[((n * 3 + c) * 5 + h) * C + w] : bd[((n * 3 + c) * 4 + h - 5) * C + w];
                        int64_t stride = 1;
                        for (int d = ax + 1; d < 4; d++) stride *= dims[d];
                        for (int64_t k = 0; k < N; k++) {
                            int64_t first = k - (k / stride) % dims[ax] * stride;
                            double mx = -INFINITY, sum = 0;
                            for (int64_t i = 0; i < dims[ax]; i++) mx = fmax(mx, x[first + i * stride]);
                            for (int64_t i = 0; i < dims[ax]; i++) sum += exp(x[first + i * stride] - mx);
                            ref[k] = lg ? x[k] - mx - log(sum) : exp(x[k] - mx) / sum;
                        }
                        CHECK(out.data && count_far(out.data, ref, N, 1e-5, (wi * 3 + ci) * 8 + ax * 2 + lg) == 0);
                        free(x);
                        free(ref);
                        free(ad);
                        free(bd);
                    }
                    smelt_program_free(p);
                    ir_graph_free(g);
                }
    }
    unsetenv("SMELT_VECTOR_WIDTH");
}

/* LayerNormalization over one dim sums (mean, then squared deviations) in
 * vector lanes too: rows of 7, 37 and 64 for V = 4 and 16, against double. */
TEST(layernorm_rows_sum_in_vector_lanes)
{
    static const char *const widths[] = {"4", "16"};
    static const int64_t lens[] = {7, 37, 64};
    for (int wi = 0; wi < 2; wi++) {
        setenv("SMELT_VECTOR_WIDTH", widths[wi], 1);
        for (int li = 0; li < 3; li++) {
            int64_t L = lens[li], R = 3;
            ir_graph *g = ir_graph_new();
            int x = input(g, "x", shp(2, (int)R, (int)L));
            int gam = constant(g, "gamma", shp(1, (int)L), 0.5f, 1.0f);
            int bet = constant(g, "beta", shp(1, (int)L), 0.25f, -0.5f);
            int in3[3] = {x, gam, bet};
            int y = op(g, "ln", OP_LayerNormalization, 3, in3);
            attr_int(g, g->n_nodes - 1, "axis", -1);
            ir_graph_set_io(g, 1, &x, 1, &y);
            smelt_program *p = compile(g, 0);
            if (p) {
                CHECK((workgroup_tiles(p) > 0) == (L >= 2 * atoi(widths[wi])));
                float *xd = malloc(sizeof(float) * (size_t)(R * L));
                for (int64_t k = 0; k < R * L; k++) xd[k] = (float)((k * 29) % 17 - 8) / 3.0f + 4.0f * (float)(k / L);
                const float *yd = run_2d(p, xd, R, L);
                const float *gd = g->tensors[gam].data, *bd = g->tensors[bet].data;
                int bad = 0;
                for (int64_t r = 0; r < R; r++) {
                    double mean = 0, var = 0;
                    for (int64_t i = 0; i < L; i++) mean += xd[r * L + i];
                    mean /= (double)L;
                    for (int64_t i = 0; i < L; i++) var += (xd[r * L + i] - mean) * (xd[r * L + i] - mean);
                    var /= (double)L;
                    for (int64_t i = 0; i < L && bad < 3; i++) {
                        double want = (xd[r * L + i] - mean) / sqrt(var + 1e-5) * gd[i] + bd[i];
                        double got = yd[r * L + i];
                        if (fabs(got - want) > 1e-5 * (1 + fabs(want))) {
                            fprintf(stderr, "  V=%s L=%lld [%lld][%lld]: %g, want %g\n", widths[wi], (long long)L,
                                    (long long)r, (long long)i, got, want);
                            bad++;
                        }
                    }
                }
                CHECK(bad == 0);
                free(xd);
            }
            smelt_program_free(p);
            ir_graph_free(g);
        }
    }
    unsetenv("SMELT_VECTOR_WIDTH");
}
