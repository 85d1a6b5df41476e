/*
 * test_fuse_siblings.c — fusion's "siblings" rule (fuse.h): reductions of one
 * input with the same parameters in one region, computed in its root's loops
 * (each of the lowering's loop forms), against a double reference and the
 * no_fuse program; reductions over other axes, with other keepdims, or whose
 * epilogue reads what is not ready before the root, stay apart.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/program.h"
#include "fuse/fuse.h"
#include "graph/passes.h"
#include "lower/lower.h"
#include "place/target.h"
#include "test.h"
#include "fuse_cases.h"

static int reduce(ir_graph *g, const char *name, op_id id, int x, int n_axes, const int64_t *axes, int keep)
{
    int y = op1(g, name, id, x);
    if (n_axes) attr_ints(g, g->n_nodes - 1, "axes", n_axes, axes);
    attr_int(g, g->n_nodes - 1, "keepdims", keep);
    return y;
}

/* x * sigmoid(x): the producer DynamicQuantizeLinear's min and max share in ddddocr_ocr_quant. */
static int silu(ir_graph *g, int x) { return op2(g, "mul", OP_Mul, x, op1(g, "sig", OP_Sigmoid, x)); }

/* Reduction `op` (an OP_Reduce*) of silu(x) over `mask` of x's dims, in double. */
static void reference(op_id op, const float *x, int rank, const int64_t *dim, uint32_t mask, double *out, int64_t n_out)
{
    int64_t n = 1, cnt = 1;
    for (int d = 0; d < rank; d++) {
        n *= dim[d];
        if (mask & (1u << d)) cnt *= dim[d];
    }
    for (int64_t o = 0; o < n_out; o++)
        out[o] = op == OP_ReduceMax ? -INFINITY : op == OP_ReduceMin ? INFINITY : op == OP_ReduceProd ? 1 : 0;
    for (int64_t k = 0; k < n; k++) {
        int64_t rest = k, o = 0, m = 1;
        for (int d = rank - 1; d >= 0; d--) {
            int64_t i = rest % dim[d];
            rest /= dim[d];
            if (!(mask & (1u << d))) o += i * m, m *= dim[d];
        }
        double v = x[k] / (1.0 + exp(-(double)x[k]));
        switch (op) {
        case OP_ReduceMax: out[o] = fmax(out[o], v); break;
        case OP_ReduceMin: out[o] = fmin(out[o], v); break;
        case OP_ReduceProd: out[o] *= v; break;
        case OP_ReduceSumSquare: case OP_ReduceL2: out[o] += v * v; break;
        default: out[o] += v; break;
        }
    }
    for (int64_t o = 0; o < n_out; o++) {
        if (op == OP_ReduceMean) out[o] /= (double)cnt;
        if (op == OP_ReduceL2) out[o] = sqrt(out[o]);
    }
}

/* The exps a program of reduction `a` alone (of silu(x), keepdims 1) builds. */
static int single_exps(op_id a, int rank, const int64_t *dim, int n_axes, const int64_t *axes)
{
    ir_graph *g = ir_graph_new();
    g->opset = 11;
    ir_shape s = {.rank = rank};
    for (int d = 0; d < rank; d++) s.dim[d] = dim[d];
    int x = input(g, "x", s), y = reduce(g, "a", a, silu(g, x), n_axes, axes, 1);
    ir_graph_set_io(g, 1, &x, 1, &y);
    smelt_program *p = compile(g, 0);
    int n = p ? kernel_op_count(p, KIR_EXP) : -1;
    smelt_program_free(p);
    ir_graph_free(g);
    return n;
}

/* Both outputs of p (reductions a and b of silu(x) over mask) against the
 * double reference, and silu's exp built as often as for `a` alone (`exps`:
 * a vector loop and its tail each evaluate it). */
static void check_pair(ir_graph *g, op_id a, op_id b, int rank, const int64_t *dim, uint32_t mask, int exps)
{
    smelt_program *p = compile(g, 0);
    if (!p) return;
    CHECK(exps > 0);
    CHECK_EQ_INT(kernel_op_count(p, KIR_EXP), exps);
    int64_t n = 1, n_out = 1;
    for (int d = 0; d < rank; d++) {
        n *= dim[d];
        if (!(mask & (1u << d))) n_out *= dim[d];
    }
    float *x = malloc(sizeof(float) * (size_t)n);
    double *ref = malloc(sizeof(double) * (size_t)n_out);
    for (int64_t k = 0; k < n; k++) x[k] = (float)((k * 29) % 31 - 15) / 9.0f;
    run_x(p, x, rank, dim, NULL);
    const op_id ops[2] = {a, b};
    for (int o = 0; o < 2; o++) {
        smelt_tensor t;
        CHECK(smelt_program_output(p, o, &t) == SMELT_OK);
        CHECK_EQ_INT(smelt_tensor_numel(&t), n_out);
        reference(ops[o], x, rank, dim, mask, ref, n_out);
        CHECK(count_far(t.data, ref, n_out, 1e-5, o) == 0);
    }
    free(x);
    free(ref);
    smelt_program_free(p);
}

/* ---- DynamicQuantizeLinear's range: min and max of a whole tensor, each with its epilogue ---- */

static void plan_min_max(const ir_graph *g, const fuse_plan *fp)
{
    CHECK(region_is(g, fp, "lo", "sig:i mul:i lo:r lo0:e hi:s hi0:e", "x zero", "lo0 hi0"));
}

static ir_graph *min_max_graph(void)
{
    ir_graph *g = ir_graph_new();
    g->opset = 11;
    int x = input(g, "x", shp(3, 3, 5, 37)), y = silu(g, x);
    int zero = constant(g, "zero", shp(0), 0.0f, 0.0f);
    int lo = op2(g, "lo0", OP_Min, reduce(g, "lo", OP_ReduceMin, y, 0, NULL, 0), zero);
    int hi = op2(g, "hi0", OP_Max, reduce(g, "hi", OP_ReduceMax, y, 0, NULL, 0), zero);
    int outs[] = {lo, hi};
    ir_graph_set_io(g, 1, &x, 2, outs);
    return g;
}

TEST(fuse_siblings_min_and_max_of_a_tensor_share_one_loop)
{
    check_case(min_max_graph(), plan_min_max, 1, 1, 0);
    /* without the epilogues, against a double reference */
    ir_graph *g = ir_graph_new();
    g->opset = 11;
    int x = input(g, "x", shp(3, 3, 5, 37)), y = silu(g, x);
    int outs[] = {reduce(g, "lo", OP_ReduceMin, y, 0, NULL, 0), reduce(g, "hi", OP_ReduceMax, y, 0, NULL, 0)};
    ir_graph_set_io(g, 1, &x, 2, outs);
    check_pair(g, OP_ReduceMin, OP_ReduceMax, 3, (const int64_t[]){3, 5, 37}, 7,
               single_exps(OP_ReduceMin, 3, (const int64_t[]){3, 5, 37}, 3, (const int64_t[]){0, 1, 2}));
    ir_graph_free(g);
}

/* ---- the lowering's other loop forms: one long row, columns, serial -------------------------- */

static const char *want_plan;

static void plan_pair(const ir_graph *g, const fuse_plan *fp) { CHECK(region_is(g, fp, "a", want_plan, "x", "a b")); }

static ir_graph *pair_graph(op_id a, op_id b, int rank, const int64_t *dim, int n_axes, const int64_t *axes)
{
    ir_graph *g = ir_graph_new();
    g->opset = 11;
    ir_shape s = {.rank = rank};
    for (int d = 0; d < rank; d++) s.dim[d] = dim[d];
    int x = input(g, "x", s), y = silu(g, x);
    int outs[] = {reduce(g, "a", a, y, n_axes, axes, 1), reduce(g, "b", b, y, n_axes, axes, 1)};
    ir_graph_set_io(g, 1, &x, 2, outs);
    return g;
}

TEST(fuse_siblings_in_each_reduction_form)
{
    static const struct {
        op_id a, b;
        int rank;
        int64_t dim[3];
        int n_axes;
        int64_t axes[2];
        uint32_t mask;
    } cases[] = {
        {OP_ReduceSum, OP_ReduceSumSquare, 3, {4, 6, 37}, 1, {-1}, 4}, /* one long dim: lanes of a row */
        {OP_ReduceMean, OP_ReduceL2, 3, {5, 9, 32}, 1, {1}, 2},        /* the last dim kept: columns */
        {OP_ReduceProd, OP_ReduceSum, 3, {2, 3, 7}, 2, {1, 2}, 6},     /* a product: the serial loops */
        {OP_ReduceMax, OP_ReduceMean, 3, {2, 6, 40}, 2, {0, 2}, 5},    /* several dims: lanes kept across */
    };
    want_plan = "sig:i mul:i a:r b:s";
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        check_case(pair_graph(cases[i].a, cases[i].b, cases[i].rank, cases[i].dim, cases[i].n_axes, cases[i].axes),
                   plan_pair, 1, 1, 1e-6);
        ir_graph *g = pair_graph(cases[i].a, cases[i].b, cases[i].rank, cases[i].dim, cases[i].n_axes, cases[i].axes);
        check_pair(g, cases[i].a, cases[i].b, cases[i].rank, cases[i].dim, cases[i].mask,
                   single_exps(cases[i].a, cases[i].rank, cases[i].dim, cases[i].n_axes, cases[i].axes));
        ir_graph_free(g);
    }
}

/* ---- what must not merge ---------------------------------------------------------------------- */

static void plan_apart(const ir_graph *g, const fuse_plan *fp)
{
    CHECK(role_of(g, fp, "a") == FUSE_ROOT && role_of(g, fp, "b") == FUSE_ROOT);
}

TEST(fuse_siblings_over_other_axes_or_keepdims_stay_apart)
{
    /* [6, 6] over dim 0 and over dim 1: the same output shape [6], other elements */
    ir_graph *g = ir_graph_new();
    g->opset = 11;
    int x = input(g, "x", shp(2, 6, 6)), y = silu(g, x);
    int outs[] = {reduce(g, "a", OP_ReduceSum, y, 1, (const int64_t[]){0}, 0),
                  reduce(g, "b", OP_ReduceSum, y, 1, (const int64_t[]){1}, 0)};
    ir_graph_set_io(g, 1, &x, 2, outs);
    check_case(g, plan_apart, 2, 2, 1e-6);

    g = ir_graph_new();
    g->opset = 11;
    x = input(g, "x", shp(2, 6, 7));
    y = silu(g, x);
    int kept[] = {reduce(g, "a", OP_ReduceMax, y, 1, (const int64_t[]){1}, 1),
                  reduce(g, "b", OP_ReduceMax, y, 1, (const int64_t[]){1}, 0)};
    ir_graph_set_io(g, 1, &x, 2, kept);
    check_case(g, plan_apart, 2, 2, 1e-6);
}

/* b's epilogue reads w, computed after a: b's region cannot run where a's does. */
static void plan_not_ready(const ir_graph *g, const fuse_plan *fp)
{
    CHECK(role_of(g, fp, "a") == FUSE_ROOT && role_of(g, fp, "b") == FUSE_ROOT);
    CHECK(region_is(g, fp, "b", "b:r add:e", "x w", "add"));
}

TEST(fuse_siblings_wait_for_what_their_epilogue_reads)
{
    ir_graph *g = ir_graph_new();
    g->opset = 11;
    int x = input(g, "x", shp(2, 4, 8)), u = input(g, "u", shp(2, 4, 3));
    int a = reduce(g, "a", OP_ReduceMax, x, 1, (const int64_t[]){-1}, 1);
    int w = op2(g, "w", OP_MatMul, u, constant(g, "k", shp(2, 3, 1), 0.5f, 0.25f));
    int b = op2(g, "add", OP_Add, reduce(g, "b", OP_ReduceMin, x, 1, (const int64_t[]){-1}, 1), w);
    int ins[] = {x, u}, outs[] = {a, b};
    ir_graph_set_io(g, 2, ins, 2, outs);
    check_case(g, plan_not_ready, 3, 3, 1e-6);
}

/* On a GPU target each sibling gets its own cooperative kernel; every kernel of the region is
 * recorded under the region's root (the command list finds its region, and its write boxes,
 * by that node), and the two kernels write lo0 and hi0 between them. */
TEST(fuse_siblings_on_a_gpu_target_keep_their_region)
{
    ir_graph *g = min_max_graph();
    CHECK(graph_infer(g, lower_eval_node) == SMELT_OK);
    fuse_plan fp;
    fuse_options fo = {.no_fuse = false};
    CHECK(fuse_build(g, &fo, &fp) == SMELT_OK);
    const fuse_region *r = region_rooted(g, &fp, "lo");
    CHECK(fp.n_regions == 1 && r != NULL);
    if (!test_failures) {
        arena a;
        arena_init(&a);
        lower_program lp;
        lower_program_init(&lp, &a);
        lp.target = &target_cuda;
        CHECK(lower_region(&lp, g, &fp, 0) == SMELT_OK);
        CHECK_EQ_INT(lp.n_kernels, 2);
        int lo = g->nodes[node_named(g, "lo0")].out[0], hi = g->nodes[node_named(g, "hi0")].out[0];
        bool wrote_lo = false, wrote_hi = false;
        for (int i = 0; i < lp.n_kernels; i++) {
            CHECK_EQ_INT(lp.kernel_node[i], r->root);
            for (int b = 0; b < lp.kernels[i]->n_bufs; b++) {
                const kir_buffer *buf = &lp.kernels[i]->bufs[b];
                wrote_lo |= buf->written && buf->tensor == lo;
                wrote_hi |= buf->written && buf->tensor == hi;
            }
        }
        CHECK(wrote_lo && wrote_hi);
        lower_program_free(&lp);
        arena_free(&a);
    }
    fuse_free(&fp);
    ir_graph_free(g);
}

/* ---- a whole tensor's min and max split over workgroups ---------------------------------------- */

/* min(reducemin(silu(x)), 0) and max(reducemax(silu(x)), 0) over all of x (DynamicQuantizeLinear's
 * range) at sizes of one workgroup, two that split evenly, three with a short last one, and eight
 * with a vector tail; with 1 and 2 threads, against a double reference and no_fuse, and with a NaN
 * in the middle of a workgroup's run or as the last (tail) element: both results are NaN. */
TEST(fuse_siblings_whole_tensor_min_max_split_over_workgroups)
{
    static const struct {
        int64_t dim[3];
        int kernels, workgroups;
    } cases[] = {
        {{3, 5, 37}, 1, 1},
        {{2, 128, 128}, 2, 2},
        {{3, 97, 113}, 2, 3},
        {{7, 129, 151}, 2, 8},
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
        for (int threads = 1; threads <= 2; threads++)
            for (int nan = 0; nan < 3; nan++) {
                const int64_t *dim = cases[ci].dim;
                int64_t n = dim[0] * dim[1] * dim[2];
                ir_graph *g = ir_graph_new();
                g->opset = 11;
                int x = input(g, "x", shp(3, (int)dim[0], (int)dim[1], (int)dim[2])), y = silu(g, x);
                int zero = constant(g, "zero", shp(0), 0.0f, 0.0f);
                int lo = op2(g, "lo0", OP_Min, reduce(g, "lo", OP_ReduceMin, y, 0, NULL, 0), zero);
                int hi = op2(g, "hi0", OP_Max, reduce(g, "hi", OP_ReduceMax, y, 0, NULL, 0), zero);
                int outs[] = {lo, hi};
                ir_graph_set_io(g, 1, &x, 2, outs);
                smelt_program *p = compile_threads(g, 0, threads), *q = compile_threads(g, 1, threads);
                if (!p || !q) {
                    smelt_program_free(p);
                    smelt_program_free(q);
                    ir_graph_free(g);
                    continue;
                }
                CHECK_EQ_INT(p->lp.n_kernels, cases[ci].kernels);
                CHECK_EQ_INT(p->lp.kernels[0]->n_workgroups, cases[ci].workgroups);
                float *xd = malloc(sizeof(float) * (size_t)n);
                for (int64_t k = 0; k < n; k++) xd[k] = (float)((k * 29) % 31 - 15) / 9.0f;
                /* the extremes where no workgroup boundary is: one in the last workgroup */
                xd[n - 2] = 6.5f;
                xd[n / 3 + 1] = -4.25f;
                if (nan == 1) xd[n / 2 + 3] = NAN;
                if (nan == 2) xd[n - 1] = NAN;
                double ref[2];
                reference(OP_ReduceMin, xd, 3, dim, 7, &ref[0], 1);
                reference(OP_ReduceMax, xd, 3, dim, 7, &ref[1], 1);
                ref[0] = fmin(ref[0], 0.0), ref[1] = fmax(ref[1], 0.0);
                run_x(p, xd, 3, dim, NULL);
                run_x(q, xd, 3, dim, NULL);
                for (int o = 0; o < 2; o++) {
                    smelt_tensor t, u;
                    CHECK(smelt_program_output(p, o, &t) == SMELT_OK);
                    CHECK(smelt_program_output(q, o, &u) == SMELT_OK);
                    CHECK_EQ_INT(smelt_tensor_numel(&t), 1);
                    float got = ((const float *)t.data)[0], unfused = ((const float *)u.data)[0];
                    if (nan) {
                        CHECK(isnan(got) && isnan(unfused));
                    } else {
                        CHECK(count_far(&got, &ref[o], 1, 1e-5, o) == 0);
                        CHECK(got == unfused);
                    }
                }
                free(xd);
                smelt_program_free(p);
                smelt_program_free(q);
                ir_graph_free(g);
            }
}

/* A whole tensor's max through a Transpose ([173, 211] read as [211, 173]): the flat run would read
 * across rows, so the split form (three workgroups and a combine at this size) steps back and the
 * lanes over the last dim take it, one kernel,
 * against a double reference, with a NaN or without. */
TEST(fuse_siblings_whole_tensor_max_through_a_transpose_keeps_the_row_form)
{
    for (int nan = 0; nan < 2; nan++) {
        ir_graph *g = ir_graph_new();
        g->opset = 11;
        int x = input(g, "x", shp(2, 173, 211));
        int t = op1(g, "t", OP_Transpose, x);
        attr_ints(g, g->n_nodes - 1, "perm", 2, (const int64_t[]){1, 0});
        int y = reduce(g, "hi", OP_ReduceMax, t, 0, NULL, 0);
        ir_graph_set_io(g, 1, &x, 1, &y);
        smelt_program *p = compile_threads(g, 0, 2);
        if (p) {
            CHECK_EQ_INT(p->lp.n_kernels, 1);
            float *xd = malloc(sizeof(float) * 173 * 211);
            double ref = -INFINITY;
            for (int k = 0; k < 173 * 211; k++) {
                xd[k] = (float)((k * 17) % 41 - 20) / 7.0f;
                ref = fmax(ref, xd[k]);
            }
            if (nan) xd[173 * 211 - 3] = NAN;
            const float *got = run_x(p, xd, 2, (const int64_t[]){173, 211}, NULL);
            if (nan) CHECK(isnan(got[0]));
            else CHECK(got[0] == (float)ref);
            free(xd);
        }
        smelt_program_free(p);
        ir_graph_free(g);
    }
}
