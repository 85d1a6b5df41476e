/*
 * test_fuse_dag.c — fusion over DAGs (fuse.h "shared"): a value with several
 * consumers in one iteration space computed once in one kernel, regions with
 * several outputs, and the recompute-versus-store rule on both of its sides.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/program.h"
#include "fuse/fuse.h"
#include "test.h"
#include "fuse_cases.h"

TEST(fuse_recompute_rule_pins_its_bound)
{
    int f32 = 4, f16 = 2;
    CHECK(fuse_recompute_pays(0, f32));
    CHECK(fuse_recompute_pays(FUSE_RECOMPUTE_OPS_PER_BYTE * 2 * f32, f32));
    CHECK(!fuse_recompute_pays(FUSE_RECOMPUTE_OPS_PER_BYTE * 2 * f32 + 1, f32));
    CHECK(!fuse_recompute_pays(FUSE_RECOMPUTE_OPS_PER_BYTE * 2 * f32, f16)); /* fewer bytes saved */
}

/* ---- a costly value read twice at the same index: one kernel, computed once ---------------- */

static void plan_shared_once(const ir_graph *g, const fuse_plan *fp)
{
    /* v costs 3 > FUSE_RECOMPUTE_MAX, so each consumer region used to read it
     * from memory; both consumers are in out's region, at out's index. */
    CHECK(region_is(g, fp, "out", "t1:i t2:i v:i a:i b:i out:r", "x y", "out"));
}

TEST(fuse_shared_value_in_one_space_is_computed_once)
{
    ir_graph *g = ir_graph_new();
    int x = input(g, "x", shp(2, 6, 10)), y = input(g, "y", shp(2, 6, 10));
    int v = op1(g, "v", OP_Exp, op1(g, "t2", OP_Sin, op1(g, "t1", OP_Tanh, x)));
    int out = op2(g, "out", OP_Sub, op2(g, "a", OP_Add, v, x), op2(g, "b", OP_Mul, v, y));
    int ins[] = {x, y};
    ir_graph_set_io(g, 2, ins, 1, &out);
    smelt_program *p = compile(g, 0);
    CHECK(p && kernel_op_count(p, KIR_EXP) == 1 && kernel_op_count(p, KIR_TANH) == 1); /* once per element */
    smelt_program_free(p);
    check_case(g, plan_shared_once, 1, 1, 1e-6);
}

/* ---- two graph outputs from one loop ------------------------------------------------------- */

static void plan_two_outputs(const ir_graph *g, const fuse_plan *fp)
{
    /* y1 (an output) is read by z and y2; n (shared, not an output) by y1 and z. */
    CHECK(region_is(g, fp, "y2", "n1:i n:i y1:i z:i y2:r", "x", "y2 y1"));
}

TEST(fuse_region_writes_two_outputs_from_one_loop)
{
    ir_graph *g = ir_graph_new();
    int x = input(g, "x", shp(2, 40, 50));
    int n = op1(g, "n", OP_Sigmoid, op1(g, "n1", OP_Cos, x));
    int y1 = op2(g, "y1", OP_Mul, n, n);
    int z = op2(g, "z", OP_Add, y1, n);
    int y2 = op2(g, "y2", OP_Sub, z, y1);
    int outs[] = {y1, y2};
    ir_graph_set_io(g, 1, &x, 2, outs);
    smelt_program *p = compile(g, 0);
    CHECK(p && kernel_op_count(p, KIR_COS) == 1);
    int stores = 0;
    for (int s = 0; p && s < p->lp.kernels[0]->n_stmts; s++) stores += p->lp.kernels[0]->stmts[s].kind == KS_STORE;
    CHECK_EQ_INT(stores, 2);
    smelt_program_free(p);
    check_case(g, plan_two_outputs, 1, 1, 1e-6);
}

/* ---- two outputs nobody reads that share a costly value: one loop -------------------------- */

static void plan_siblings(const ir_graph *g, const fuse_plan *fp)
{
    /* add1 is merged into add2's region (they share c4's cone), and then c4,
     * whose readers are all there: c4 is computed once, both adds stored. */
    CHECK(region_is(g, fp, "add2", "c1:i c2:i c3:i c4:i add1:i add2:r", "x y", "add2 add1"));
}

TEST(fuse_sibling_outputs_sharing_a_value_are_one_region)
{
    ir_graph *g = ir_graph_new();
    int x = input(g, "x", shp(2, 6, 10)), y = input(g, "y", shp(2, 6, 10));
    int t = op1(g, "c4", OP_Cos, op1(g, "c3", OP_Sin, op1(g, "c2", OP_Neg, op1(g, "c1", OP_Exp, x))));
    int outs[] = {op2(g, "add1", OP_Add, t, x), op2(g, "add2", OP_Add, y, t)};
    int ins[] = {x, y};
    ir_graph_set_io(g, 2, ins, 2, outs);
    smelt_program *p = compile(g, 0);
    CHECK(p && kernel_op_count(p, KIR_EXP) == 1 && kernel_op_count(p, KIR_SIN) == 1);
    smelt_program_free(p);
    check_case(g, plan_siblings, 1, 1, 1e-6);
}

/* Outputs with nothing in common stay separate kernels. */
TEST(fuse_unrelated_outputs_stay_apart)
{
    ir_graph *g = ir_graph_new();
    int x = input(g, "x", shp(2, 6, 10)), y = input(g, "y", shp(2, 6, 10));
    int outs[] = {op1(g, "ex", OP_Exp, x), op1(g, "ey", OP_Exp, y)};
    int ins[] = {x, y};
    ir_graph_set_io(g, 2, ins, 2, outs);
    check_case(g, plan_any, 2, 2, 1e-6);
}

/* ---- read through a Transpose: recompute when cheap, store when not ------------------------ */

/* v = a chain of `ops` elementwise ops on x; out = v + Transpose(v). */
static ir_graph *transposed_shared(int ops)
{
    ir_graph *g = ir_graph_new();
    int x = input(g, "x", shp(3, 2, 12, 12));
    int v = x;
    for (int i = 0; i < ops; i++) {
        char name[16];
        snprintf(name, sizeof name, "%s%d", i + 1 == ops ? "v" : "c", i);
        v = op1(g, i + 1 == ops ? "v" : name, i % 2 ? OP_Cos : OP_Tanh, v);
    }
    int t = op1(g, "tr", OP_Transpose, v);
    attr_ints(g, node_named(g, "tr"), "perm", 3, (const int64_t[]){0, 2, 1});
    int out = op2(g, "out", OP_Add, v, t);
    ir_graph_set_io(g, 1, &x, 1, &out);
    return g;
}

static void plan_recomputed(const ir_graph *g, const fuse_plan *fp)
{
    CHECK(role_of(g, fp, "v") == FUSE_INLINE && role_of(g, fp, "tr") == FUSE_INLINE);
    CHECK(region_rooted(g, fp, "out") != NULL);
}

static void plan_stored(const ir_graph *g, const fuse_plan *fp)
{
    CHECK(role_of(g, fp, "v") == FUSE_ROOT);
    CHECK(region_is(g, fp, "out", "tr:i out:r", "v", "out"));
}

TEST(fuse_transposed_read_of_a_cheap_shared_value_recomputes_it)
{
    int ops = FUSE_RECOMPUTE_OPS_PER_BYTE * 2 * 4; /* float32: the most ops the rule recomputes */
    ir_graph *g = transposed_shared(ops);
    smelt_program *p = compile(g, 0);
    /* at the output's index and at the transposed one: each op twice */
    CHECK(p && kernel_op_count(p, KIR_TANH) + kernel_op_count(p, KIR_COS) == 2 * ops);
    smelt_program_free(p);
    check_case(g, plan_recomputed, 1, 1, 1e-5);
}

TEST(fuse_transposed_read_of_a_costly_shared_value_stores_it)
{
    int ops = FUSE_RECOMPUTE_OPS_PER_BYTE * 2 * 4 + 1;
    ir_graph *g = transposed_shared(ops);
    smelt_program *p = compile(g, 0);
    CHECK(p && kernel_op_count(p, KIR_TANH) + kernel_op_count(p, KIR_COS) == ops); /* computed once, stored */
    smelt_program_free(p);
    check_case(g, plan_stored, 2, 2, 1e-5);
}

/* ---- a reader that is not an elementwise loop keeps its operand in memory ----------------- */

static void plan_reduction_reader(const ir_graph *g, const fuse_plan *fp)
{
    CHECK(role_of(g, fp, "v") == FUSE_ROOT);
}

TEST(fuse_shared_value_read_by_a_row_reduction_stays_stored)
{
    ir_graph *g = ir_graph_new();
    int x = input(g, "x", shp(2, 6, 10));
    int v = op1(g, "v", OP_Exp, op1(g, "t2", OP_Sin, op1(g, "t1", OP_Tanh, x)));
    int s = op1(g, "sum", OP_ReduceSum, v);
    attr_ints(g, node_named(g, "sum"), "axes", 1, (const int64_t[]){-1});
    int out = op2(g, "out", OP_Div, v, s);
    ir_graph_set_io(g, 1, &x, 1, &out);
    check_case(g, plan_reduction_reader, 2, 2, 1e-6);
}

/* ---- one source read transposed by several inline paths: one staged copy ------------------- */

TEST(fuse_repeated_transposed_reads_share_one_tile)
{
    ir_graph *g = ir_graph_new();
    int x = input(g, "x", shp(2, 140, 130)), y = input(g, "y", shp(2, 130, 140));
    /* x is read transposed through five Transposes (five loads before cleanup) */
    int t = y;
    for (int i = 0; i < 5; i++) {
        char name[16];
        snprintf(name, sizeof name, "tr%d", i);
        int tr = op1(g, name, OP_Transpose, x);
        snprintf(name, sizeof name, "op%d", i);
        t = op2(g, name, i % 2 ? OP_Mul : OP_Add, t, tr);
    }
    int ins[] = {x, y};
    ir_graph_set_io(g, 2, ins, 1, &t);
    smelt_program *p = compile(g, 0);
    CHECK(p && workgroup_tiles(p) == 1);
    smelt_program_free(p);
    check_case(g, plan_any, 1, 1, 1e-5);
}

/* ---- epilogue DAGs (fuse.h "epilogue"): a contraction's output read several times ----------- */

enum { DM = 37, DK = 53, DN = 71 }; /* no multiple of a tile in any dim */

/* x[DM, DK] times a constant w[DK, DN] plus a constant bias c[DN]; returns the
 * sum and, in ref, its double value for x = xd. */
static int biased_matmul(ir_graph *g, const float *xd, double *ref, int *x_out)
{
    int x = *x_out = input(g, "x", shp(2, DM, DK)), w = constant(g, "w", shp(2, DK, DN), 0.5f, 0.1f);
    int c = constant(g, "c", shp(1, DN), 0.3f, -0.2f);
    const float *wd = g->tensors[w].data, *cd = g->tensors[c].data;
    for (int i = 0; i < DM; i++)
        for (int j = 0; j < DN; j++) {
            double s = cd[j];
            for (int k = 0; k < DK; k++) s += (double)xd[i * DK + k] * wd[k * DN + j];
            ref[i * DN + j] = s;
        }
    return op2(g, "bias", OP_Add, op2(g, "mm", OP_MatMul, x, w), c);
}

/* The compiled graph reads w in panels (its encoding: "w/packed16" with AVX2's
 * 16-column panels, "w/packed32" with AVX-512's), fuse_build's the plain w.
 * The region's expected reads "x W rest" with W that name; in a buffer of
 * the caller's. */
static const char *reads_with_w(const ir_graph *g, const char *rest, char *buf, size_t cap)
{
    const char *w = "w";
    for (int t = 0; t < g->n_tensors; t++)
        if (g->tensors[t].name && strncmp(g->tensors[t].name, "w/packed", 8) == 0) w = g->tensors[t].name;
    snprintf(buf, cap, "x %s %s", w, rest);
    return buf;
}

static int scalar(ir_graph *g, const char *name, float v) { return constant(g, name, shp(0), 0.0f, v); }

static void dag_x(float *xd)
{
    for (int i = 0; i < DM * DK; i++) xd[i] = (float)((i * 17 + 3) % 29 - 14) / 9.0f;
}

/* The fused program's output for xd against the double reference (and the
 * no-fuse program against the same, so a wrong reference fails too). */
static void check_dag_against(ir_graph *g, const float *xd, const double *ref, double tol)
{
    int64_t shape[2] = {DM, DK};
    for (int no_fuse = 0; no_fuse < 2; no_fuse++) {
        smelt_program *p = compile(g, no_fuse);
        CHECK(p != NULL);
        const float *got = p ? run_x(p, (float *)xd, 2, shape, NULL) : NULL;
        CHECK(got && count_far(got, ref, DM * DN, tol, no_fuse) == 0);
        smelt_program_free(p);
    }
}

/* A DAG that fuses into mm's one kernel: `fn` evaluated once per element
 * there, the output right for xd, and the plan `plan` (one region, one kernel). */
static void check_fused_dag(ir_graph *g, const float *xd, const double *ref, kir_op fn, plan_check plan)
{
    smelt_program *p = compile(g, 0);
    CHECK(p && kernel_op_count(p, fn) == 1);
    smelt_program_free(p);
    check_dag_against(g, xd, ref, 1e-4);
    check_case(g, plan, 1, 1, 1e-5);
}

static void plan_gelu_erf(const ir_graph *g, const fuse_plan *fp)
{
    /* t (bias) is read by div and by mul: every node of the GELU is mm's epilogue, t stays in a register */
    const char *nodes = "mm:r bias:e div:e erf:e add1:e mul:e half:e";
    char rd[64];
    CHECK(region_is(g, fp, "mm", nodes, reads_with_w(g, "c r2 one h", rd, sizeof rd), "half"));
}

TEST(fuse_gelu_erf_is_a_matmul_epilogue)
{
    ir_graph *g = ir_graph_new();
    float xd[DM * DK];
    double ref[DM * DN];
    dag_x(xd);
    int x, t = biased_matmul(g, xd, ref, &x);
    int e = op1(g, "erf", OP_Erf, op2(g, "div", OP_Div, t, scalar(g, "r2", 1.41421356f)));
    int y = op2(g, "half", OP_Mul, op2(g, "mul", OP_Mul, t, op2(g, "add1", OP_Add, e, scalar(g, "one", 1.0f))),
                scalar(g, "h", 0.5f));
    ir_graph_set_io(g, 1, &x, 1, &y);
    for (int i = 0; i < DM * DN; i++) ref[i] = ref[i] * 0.5 * (1 + erf(ref[i] / sqrt(2.0)));
    check_fused_dag(g, xd, ref, KIR_ERF, plan_gelu_erf);
}

static void plan_gelu_tanh(const ir_graph *g, const fuse_plan *fp)
{
    /* t is read four times (sq reads it twice), sq and cube once each */
    const char *nodes = "mm:r bias:e sq:e cube:e k3:e inner:e kk:e th:e th1:e th2:e out:e";
    char rd[64];
    CHECK(region_is(g, fp, "mm", nodes, reads_with_w(g, "c a3 s2pi one h", rd, sizeof rd), "out"));
}

TEST(fuse_gelu_tanh_is_a_matmul_epilogue)
{
    ir_graph *g = ir_graph_new();
    float xd[DM * DK];
    double ref[DM * DN];
    dag_x(xd);
    int x, t = biased_matmul(g, xd, ref, &x);
    int cube = op2(g, "cube", OP_Mul, op2(g, "sq", OP_Mul, t, t), t);
    int inner = op2(g, "inner", OP_Add, t, op2(g, "k3", OP_Mul, cube, scalar(g, "a3", 0.044715f)));
    int th = op1(g, "th", OP_Tanh, op2(g, "kk", OP_Mul, inner, scalar(g, "s2pi", 0.7978845608f)));
    int y = op2(g, "out", OP_Mul, op2(g, "th2", OP_Mul, t, scalar(g, "h", 0.5f)), op2(g, "th1", OP_Add, th, scalar(g, "one", 1.0f)));
    ir_graph_set_io(g, 1, &x, 1, &y);
    for (int i = 0; i < DM * DN; i++) {
        double v = ref[i];
        ref[i] = 0.5 * v * (1 + tanh(0.7978845608 * (v + 0.044715 * v * v * v)));
    }
    check_fused_dag(g, xd, ref, KIR_TANH, plan_gelu_tanh);
}

static void plan_three_reads(const ir_graph *g, const fuse_plan *fp)
{
    /* s = tanh(t) is read three times (by ts and, twice, by ss), t twice */
    const char *nodes = "mm:r bias:e s:e ts:e ss:e sum:e";
    char rd[64];
    CHECK(region_is(g, fp, "mm", nodes, reads_with_w(g, "c", rd, sizeof rd), "sum"));
}

TEST(fuse_epilogue_value_read_three_times_is_computed_once)
{
    ir_graph *g = ir_graph_new();
    float xd[DM * DK];
    double ref[DM * DN];
    dag_x(xd);
    int x, t = biased_matmul(g, xd, ref, &x);
    int s = op1(g, "s", OP_Tanh, t);
    int y = op2(g, "sum", OP_Add, op2(g, "ts", OP_Mul, t, s), op2(g, "ss", OP_Mul, s, s));
    ir_graph_set_io(g, 1, &x, 1, &y);
    for (int i = 0; i < DM * DN; i++) ref[i] = ref[i] * tanh(ref[i]) + tanh(ref[i]) * tanh(ref[i]);
    check_fused_dag(g, xd, ref, KIR_TANH, plan_three_reads);
}

static void plan_read_outside(const ir_graph *g, const fuse_plan *fp)
{
    /* e = erf(t) is also read by mm2 (another contraction, outside any
     * epilogue): the DAG never closes, so t is stored, e is a region of its
     * own (stored for mm2) and mul a region reading both. */
    CHECK(role_of(g, fp, "mul") != FUSE_EPILOGUE && role_of(g, fp, "e") != FUSE_EPILOGUE);
    const fuse_region *r = region_rooted(g, fp, "mm");
    bool stores_t = false;
    for (int i = 0; r && i < r->n_writes; i++) stores_t |= strcmp(g->tensors[r->writes[i]].name, "bias") == 0;
    CHECK(stores_t);
}

TEST(fuse_epilogue_dag_read_outside_is_not_fused)
{
    ir_graph *g = ir_graph_new();
    float xd[DM * DK];
    double ref[DM * DN];
    dag_x(xd);
    int x, t = biased_matmul(g, xd, ref, &x);
    int e = op1(g, "e", OP_Erf, t);
    int y1 = op2(g, "mul", OP_Mul, t, e);
    int y2 = op2(g, "mm2", OP_MatMul, e, constant(g, "w2", shp(2, DN, 9), 0.5f, 0.0f));
    int outs[] = {y1, y2};
    ir_graph_set_io(g, 1, &x, 2, outs);
    for (int i = 0; i < DM * DN; i++) ref[i] = ref[i] * erf(ref[i]);
    check_dag_against(g, xd, ref, 1e-4);
    check_case(g, plan_read_outside, 4, 4, 1e-5);
}

static void plan_inner_output(const ir_graph *g, const fuse_plan *fp)
{
    /* e is a graph output inside the DAG: it must reach memory, so no DAG */
    CHECK(role_of(g, fp, "mul") != FUSE_EPILOGUE && role_of(g, fp, "e") != FUSE_EPILOGUE);
}

TEST(fuse_epilogue_dag_with_an_inner_graph_output_is_not_fused)
{
    ir_graph *g = ir_graph_new();
    float xd[DM * DK];
    double ref[DM * DN];
    dag_x(xd);
    int x, t = biased_matmul(g, xd, ref, &x);
    int e = op1(g, "e", OP_Erf, t);
    int y1 = op2(g, "mul", OP_Mul, t, e);
    int outs[] = {y1, e};
    ir_graph_set_io(g, 1, &x, 2, outs);
    for (int i = 0; i < DM * DN; i++) ref[i] = ref[i] * erf(ref[i]);
    check_dag_against(g, xd, ref, 1e-4);
    check_case(g, plan_inner_output, 2, 2, 1e-5);
}
