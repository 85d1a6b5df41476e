/*
 * test_fuse_rules.c — region formation (fuse.h), one small hand-built graph per
 * rule: which producers are inlined or recomputed, which consumers become
 * epilogues, and what a region reads and writes (fuse_cases.h builds and
 * checks the graphs).
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

/* ---- 2. eight elementwise ops with broadcast constants: one kernel ------------------------ */

static void plan_eight(const ir_graph *g, const fuse_plan *fp)
{
    CHECK(region_is(g, fp, "e8", "e1:i e2:i e3:i e4:i e5:i e6:i e7:i e8:r", "x b1 b3 b5 b7", "e8"));
}

TEST(fuse_eight_op_chain_with_broadcast_constants_is_one_kernel)
{
    ir_graph *g = ir_graph_new();
    int x = input(g, "x", shp(2, 6, 10));
    int t = op2(g, "e1", OP_Add, x, constant(g, "b1", shp(1, 10), 0.5f, 0.1f));
    t = op1(g, "e2", OP_Tanh, t);
    t = op2(g, "e3", OP_Mul, t, constant(g, "b3", shp(1, 10), 1.0f, 1.5f));
    t = op1(g, "e4", OP_Sigmoid, t);
    t = op2(g, "e5", OP_Sub, constant(g, "b5", shp(1, 10), 0.25f, 0.0f), t);
    t = op1(g, "e6", OP_Exp, t);
    t = op2(g, "e7", OP_Div, t, constant(g, "b7", shp(2, 1, 10), 0.5f, 2.0f));
    t = op1(g, "e8", OP_Neg, t);
    ir_graph_set_io(g, 1, &x, 1, &t);
    check_case(g, plan_eight, 1, 1, 1e-6);
}

/* ---- 3. several consumers: cheap producers are recomputed, costly ones stored ------------- */

/* The two adds are regions over different shapes (add2 broadcasts over a
 * leading dim), so neither is merged into the other (fuse.h "shared";
 * test_fuse_dag.c has them over one shape). */

static void plan_cheap_shared(const ir_graph *g, const fuse_plan *fp)
{
    /* exp costs 1 <= FUSE_RECOMPUTE_MAX: both adds recompute it. */
    CHECK(region_is(g, fp, "add1", "exp:i add1:r", "x", "add1"));
    CHECK(region_is(g, fp, "add2", "exp:i add2:r", "x y", "add2"));
}

TEST(fuse_cheap_producer_with_two_consumers_is_recomputed)
{
    ir_graph *g = ir_graph_new();
    int x = input(g, "x", shp(2, 6, 10)), y = input(g, "y", shp(3, 2, 6, 10));
    int t = op1(g, "exp", OP_Exp, x);
    int outs[] = {op2(g, "add1", OP_Add, t, x), op2(g, "add2", OP_Add, y, t)};
    int ins[] = {x, y};
    ir_graph_set_io(g, 2, ins, 2, outs);
    check_case(g, plan_cheap_shared, 2, 2, 1e-6);
}

static void plan_costly_shared(const ir_graph *g, const fuse_plan *fp)
{
    /* The chain's cone costs 4 > FUSE_RECOMPUTE_MAX: its last node is stored once,
     * its first three are inline in that store; the adds read it from memory. */
    CHECK(region_is(g, fp, "c4", "c1:i c2:i c3:i c4:r", "x", "c4"));
    CHECK(region_is(g, fp, "add1", "add1:r", "c4 x", "add1"));
    CHECK(region_is(g, fp, "add2", "add2:r", "y c4", "add2"));
}

TEST(fuse_costly_chain_with_two_consumers_is_materialized)
{
    ir_graph *g = ir_graph_new();
    int x = input(g, "x", shp(2, 6, 10)), y = input(g, "y", shp(3, 2, 6, 10));
    int t = op1(g, "c4", OP_Cos, op1(g, "c3", OP_Sin, op1(g, "c2", OP_Neg, op1(g, "c1", OP_Exp, x))));
    int outs[] = {op2(g, "add1", OP_Add, t, x), op2(g, "add2", OP_Add, y, t)};
    int ins[] = {x, y};
    ir_graph_set_io(g, 2, ins, 2, outs);
    check_case(g, plan_costly_shared, 3, 3, 1e-6);
}

/* ---- 4. broadcast expansion: a costly [1,10] row is stored, a cheap one recomputed -------- */

static void plan_costly_row(const ir_graph *g, const fuse_plan *fp)
{
    CHECK(region_is(g, fp, "r3", "r1:i r2:i r3:r", "s", "r3"));
    CHECK(region_is(g, fp, "add", "add:r", "x r3", "add"));
}

TEST(fuse_costly_broadcast_row_is_materialized)
{
    ir_graph *g = ir_graph_new();
    int x = input(g, "x", shp(2, 6, 10)), s = input(g, "s", shp(2, 1, 10));
    int row = op1(g, "r3", OP_Cos, op1(g, "r2", OP_Sin, op1(g, "r1", OP_Exp, s)));
    int y = op2(g, "add", OP_Add, x, row);
    int ins[] = {x, s};
    ir_graph_set_io(g, 2, ins, 1, &y);
    check_case(g, plan_costly_row, 2, 2, 1e-6);
}

static void plan_cheap_row(const ir_graph *g, const fuse_plan *fp)
{
    CHECK(region_is(g, fp, "add", "r1:i add:r", "x s", "add"));
}

TEST(fuse_cheap_broadcast_row_is_inlined)
{
    ir_graph *g = ir_graph_new();
    int x = input(g, "x", shp(2, 6, 10)), s = input(g, "s", shp(2, 1, 10));
    int y = op2(g, "add", OP_Add, x, op1(g, "r1", OP_Exp, s));
    int ins[] = {x, s};
    ir_graph_set_io(g, 2, ins, 1, &y);
    check_case(g, plan_cheap_row, 1, 1, 1e-6);
}

/* ---- 5. a reduction's elementwise producer is inline ------------------------------------- */

static void plan_reduce(const ir_graph *g, const fuse_plan *fp)
{
    CHECK(region_is(g, fp, "sum", "exp:i sum:r", "x", "sum"));
}

TEST(fuse_exp_is_inline_in_reduce_sum)
{
    ir_graph *g = ir_graph_new();
    g->opset = 11; /* axes as an attribute */
    int x = input(g, "x", shp(2, 6, 10));
    int y = op1(g, "sum", OP_ReduceSum, op1(g, "exp", OP_Exp, x));
    static const int64_t axes[] = {1};
    attr_ints(g, g->n_nodes - 1, "axes", 1, axes);
    attr_int(g, g->n_nodes - 1, "keepdims", 1);
    ir_graph_set_io(g, 1, &x, 1, &y);
    check_case(g, plan_reduce, 1, 1, 1e-6);
}

/* ---- 6. contractions: epilogues after, only data movement inline before ------------------- */

static void plan_matmul_epilogue(const ir_graph *g, const fuse_plan *fp)
{
    CHECK(region_is(g, fp, "mm", "mm:r bias:e relu:e", "a b c", "relu"));
}

TEST(fuse_matmul_bias_relu_is_one_region)
{
    ir_graph *g = ir_graph_new();
    int a = input(g, "a", shp(2, 6, 8)), b = input(g, "b", shp(2, 8, 5));
    int y = op1(g, "relu", OP_Relu, op2(g, "bias", OP_Add, op2(g, "mm", OP_MatMul, a, b), constant(g, "c", shp(1, 5), 1.0f, 0.0f)));
    int ins[] = {a, b};
    ir_graph_set_io(g, 2, ins, 1, &y);
    check_case(g, plan_matmul_epilogue, 1, 1, 1e-6);
}

static void plan_matmul_transposed_b(const ir_graph *g, const fuse_plan *fp)
{
    CHECK(region_is(g, fp, "mm", "bt:i mm:r bias:e relu:e", "a b c", "relu"));
}

TEST(fuse_transpose_is_inline_in_matmul)
{
    ir_graph *g = ir_graph_new();
    int a = input(g, "a", shp(2, 6, 8)), b = input(g, "b", shp(2, 5, 8));
    int m = op2(g, "mm", OP_MatMul, a, op1(g, "bt", OP_Transpose, b));
    int y = op1(g, "relu", OP_Relu, op2(g, "bias", OP_Add, m, constant(g, "c", shp(1, 5), 1.0f, 0.0f)));
    int ins[] = {a, b};
    ir_graph_set_io(g, 2, ins, 1, &y);
    /* One region; lowered, the inlined transpose reads B across its rows in the
     * column loop, so B is first copied out in its own order (a second kernel)
     * and the product reads the copy unit-stride. */
    check_case(g, plan_matmul_transposed_b, 1, 2, 1e-6);
}

static void plan_matmul_exp_b(const ir_graph *g, const fuse_plan *fp)
{
    /* Exp costs 1: a contraction would evaluate it 6 times per element of b. */
    CHECK(region_is(g, fp, "be", "be:r", "b", "be"));
    CHECK(region_is(g, fp, "mm", "mm:r bias:e relu:e", "a be c", "relu"));
}

TEST(fuse_exp_is_not_inline_in_matmul)
{
    ir_graph *g = ir_graph_new();
    int a = input(g, "a", shp(2, 6, 8)), b = input(g, "b", shp(2, 8, 5));
    int m = op2(g, "mm", OP_MatMul, a, op1(g, "be", OP_Exp, b));
    int y = op1(g, "relu", OP_Relu, op2(g, "bias", OP_Add, m, constant(g, "c", shp(1, 5), 1.0f, 0.0f)));
    int ins[] = {a, b};
    ir_graph_set_io(g, 2, ins, 1, &y);
    check_case(g, plan_matmul_exp_b, 2, 2, 1e-6);
}

/* ---- 7. an epilogue's other inputs must be ready before the root runs --------------------- */

static void plan_late_operand(const ir_graph *g, const fuse_plan *fp)
{
    /* `late` is stored (it is a graph output) by a node after mm in graph
     * order, so it is not ready when mm runs: add cannot be mm's epilogue and
     * becomes its own root reading mm from memory. It computes `late` itself
     * and stores it beside its own output ("shared": late's only reader is
     * add's region). */
    CHECK(region_is(g, fp, "mm", "mm:r", "a b", "mm"));
    CHECK(region_is(g, fp, "add", "late:i add:r", "mm z", "add late"));
    CHECK(fp->regions[0].root == node_named(g, "mm") && fp->regions[1].root == node_named(g, "add"));
}

TEST(fuse_epilogue_waits_for_operands_stored_after_the_root)
{
    ir_graph *g = ir_graph_new();
    int a = input(g, "a", shp(2, 6, 8)), b = input(g, "b", shp(2, 8, 5)), z = input(g, "z", shp(2, 6, 5));
    int m = op2(g, "mm", OP_MatMul, a, b);
    int late = op1(g, "late", OP_Cos, z);
    int y = op2(g, "add", OP_Add, m, late);
    int ins[] = {a, b, z}, outs[] = {y, late};
    ir_graph_set_io(g, 3, ins, 2, outs);
    check_case(g, plan_late_operand, 2, 2, 1e-6);
}

static void plan_late_inline_operand(const ir_graph *g, const fuse_plan *fp)
{
    /* The same Add, but `late` is inline (one consumer, cost 1): it is computed
     * from z, which is ready before mm runs, so add is mm's epilogue even though
     * `late` comes after mm in graph order. */
    CHECK(region_is(g, fp, "mm", "mm:r late:i add:e", "a b z", "add"));
}

TEST(fuse_epilogue_may_use_inline_operands_defined_after_the_root)
{
    ir_graph *g = ir_graph_new();
    int a = input(g, "a", shp(2, 6, 8)), b = input(g, "b", shp(2, 8, 5)), z = input(g, "z", shp(2, 6, 5));
    int m = op2(g, "mm", OP_MatMul, a, b);
    int y = op2(g, "add", OP_Add, op1(g, "late", OP_Cos, z), m);
    int ins[] = {a, b, z};
    ir_graph_set_io(g, 3, ins, 1, &y);
    check_case(g, plan_late_inline_operand, 1, 1, 1e-6);
}

/* ---- 8. a graph output inside a chain is stored by the region that reads it --------------- */

static void plan_output_mid_chain(const ir_graph *g, const fuse_plan *fp)
{
    /* relu is a graph output read only by exp: exp's region computes it once
     * per element, keeps it in a register for exp and stores it (two outputs). */
    CHECK(region_is(g, fp, "exp", "neg:i relu:i exp:r", "x", "exp relu"));
    CHECK(fp->stored_by[g->nodes[node_named(g, "relu")].out[0]] == node_named(g, "exp"));
}

TEST(fuse_graph_output_mid_chain_is_a_second_output)
{
    ir_graph *g = ir_graph_new();
    int x = input(g, "x", shp(2, 6, 10));
    int r = op1(g, "relu", OP_Relu, op1(g, "neg", OP_Neg, x));
    int outs[] = {r, op1(g, "exp", OP_Exp, r)};
    ir_graph_set_io(g, 1, &x, 2, outs);
    check_case(g, plan_output_mid_chain, 1, 1, 1e-6);
}

/* ---- 9. no_fuse: one region per node, one kernel per non-view node ------------------------ */

static void plan_views_fused(const ir_graph *g, const fuse_plan *fp)
{
    /* Fused, the chain is one region: the view is inline like any cost-0 node.
     * The Reshape's constant shape input is listed as a read, though its
     * element function never loads it. */
    CHECK(region_is(g, fp, "mul", "relu:i reshape:i exp:i mul:r", "x shape y", "mul"));
}

TEST(fuse_no_fuse_is_one_region_per_node)
{
    ir_graph *g = ir_graph_new();
    int x = input(g, "x", shp(2, 6, 10)), y = input(g, "y", shp(1, 60));
    int shape = ir_tensor_add(g, "shape", SMELT_I64, &(ir_shape){.rank = 1, .dim = {1}});
    ((int64_t *)ir_tensor_alloc_data(g, shape))[0] = 60;
    int v = op2(g, "reshape", OP_Reshape, op1(g, "relu", OP_Relu, x), shape);
    int out = op2(g, "mul", OP_Mul, op1(g, "exp", OP_Exp, v), y);
    int ins[] = {x, y};
    ir_graph_set_io(g, 2, ins, 1, &out);

    char dir[] = "/tmp/smelt-test-fuse-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    setenv("SMELT_CACHE_DIR", dir, 1);
    smelt_program *p = compile(g, 1);
    if (p) {
        CHECK_EQ_INT(p->g->n_nodes, 4);
        CHECK_EQ_INT(p->fp.n_regions, 4);
        CHECK_EQ_INT(p->lp.n_kernels, 3); /* the Reshape is a view: no kernel */
        for (int i = 0; i < p->g->n_nodes; i++) {
            CHECK(p->fp.role[i] == FUSE_ROOT);
            CHECK(p->fp.regions[i].root == i && p->fp.regions[i].n_nodes == 1);
        }
        for (int t = 0; t < p->g->n_tensors; t++) CHECK(p->fp.inline_of[t] < 0 && p->fp.epilogue_of[t] < 0);
        CHECK(region_is(p->g, &p->fp, "relu", "relu:r", "x", "relu"));
        CHECK(region_is(p->g, &p->fp, "reshape", "reshape:r", "relu shape", "reshape"));
        CHECK(region_is(p->g, &p->fp, "exp", "exp:r", "reshape", "exp"));
        CHECK(region_is(p->g, &p->fp, "mul", "mul:r", "exp y", "mul"));
        smelt_program_free(p);
    }
    unsetenv("SMELT_CACHE_DIR");
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);

    check_case(g, plan_views_fused, 1, 1, 1e-6);
}

/* ---- 10. Conv -> BatchNormalization -> Relu: BN folded, Relu the epilogue ------------------ */

static void plan_conv_bn_relu(const ir_graph *g, const fuse_plan *fp)
{
    CHECK(node_named(g, "bn") < 0); /* folded into conv's weights and bias */
    CHECK(region_is(g, fp, "conv", "conv:r relu:e", "x conv/folded_w conv/folded_b", "relu"));
    CHECK(role_of(g, fp, "relu") == FUSE_EPILOGUE);
}

TEST(fuse_conv_batchnorm_relu_is_one_kernel)
{
    ir_graph *g = ir_graph_new();
    int x = input(g, "x", shp(4, 1, 3, 7, 9));
    int w = constant(g, "w", shp(4, 5, 3, 3, 3), 0.3f, 0.0f), bias = constant(g, "wb", shp(1, 5), 0.2f, 0.1f);
    int cin[] = {x, w, bias};
    int c = op(g, "conv", OP_Conv, 3, cin);
    static const int64_t pads[] = {1, 1, 1, 1};
    attr_ints(g, g->n_nodes - 1, "pads", 4, pads);
    int bin[] = {c, constant(g, "scale", shp(1, 5), 0.5f, 1.0f), constant(g, "beta", shp(1, 5), 0.3f, 0.0f),
                 constant(g, "mean", shp(1, 5), 0.2f, 0.05f), constant(g, "var", shp(1, 5), 0.4f, 1.0f)};
    int y = op1(g, "relu", OP_Relu, op(g, "bn", OP_BatchNormalization, 5, bin));
    ir_graph_set_io(g, 1, &x, 1, &y);
    check_case(g, plan_conv_bn_relu, 1, 1, 1e-5);
}

/* ---- 10b. a one-element operand of a contraction: its cheap cone is recomputed inside -------- */

static void plan_scalar_into_conv(const ir_graph *g, const fuse_plan *fp)
{
    /* the bias of a one-channel Conv, exp(neg(b)): inline in the conv (a
     * ConvInteger's run-time shift, whose own kernel cost a dispatch) */
    CHECK(region_is(g, fp, "conv", "bneg:i bexp:i conv:r", "x w b", "conv"));
}

static void plan_vector_into_conv(const ir_graph *g, const fuse_plan *fp)
{
    /* two channels: the bias is not one element, it is materialized */
    CHECK(region_is(g, fp, "bexp", "bneg:i bexp:r", "b", "bexp"));
    CHECK(region_is(g, fp, "conv", "conv:r", "x w bexp", "conv"));
}

static void scalar_operand_case(int64_t m, plan_check check, int kernels)
{
    ir_graph *g = ir_graph_new();
    int x = input(g, "x", shp(4, 1, 2, 6, 5)), b = input(g, "b", shp(1, m));
    int w = constant(g, "w", shp(4, m, 2, 3, 3), 0.3f, 0.0f);
    int cin[] = {x, w, op1(g, "bexp", OP_Exp, op1(g, "bneg", OP_Neg, b))};
    int c = op(g, "conv", OP_Conv, 3, cin);
    static const int64_t pads[] = {1, 1, 1, 1};
    attr_ints(g, g->n_nodes - 1, "pads", 4, pads);
    int ins[] = {x, b};
    ir_graph_set_io(g, 2, ins, 1, &c);
    check_case(g, check, kernels, kernels, 1e-5);
}

TEST(fuse_scalar_operand_of_a_contraction_is_inlined)
{
    scalar_operand_case(1, plan_scalar_into_conv, 1);
    scalar_operand_case(2, plan_vector_into_conv, 2);
}

/* ---- more edges: epilogues on reductions, dtype changes, views into contractions ---------- */

static void plan_reduce_epilogue(const ir_graph *g, const fuse_plan *fp)
{
    /* The reduction's [6,1] output has one same-shape elementwise consumer: a
     * chain of three epilogues, applied when the sum is stored. */
    CHECK(region_is(g, fp, "sum", "exp:i sum:r add:e abs:e sqrt:e", "x c", "sqrt"));
}

TEST(fuse_reduction_takes_an_epilogue_chain)
{
    ir_graph *g = ir_graph_new();
    g->opset = 11;
    int x = input(g, "x", shp(2, 7, 9));
    int r = op1(g, "sum", OP_ReduceSum, op1(g, "exp", OP_Exp, x));
    static const int64_t axes[] = {1};
    attr_ints(g, g->n_nodes - 1, "axes", 1, axes);
    int y = op2(g, "add", OP_Add, r, constant(g, "c", shp(2, 7, 1), 1.0f, 0.0f));
    y = op1(g, "sqrt", OP_Sqrt, op1(g, "abs", OP_Abs, y));
    ir_graph_set_io(g, 1, &x, 1, &y);
    check_case(g, plan_reduce_epilogue, 1, 1, 1e-6);
}

static void plan_softmax(const ir_graph *g, const fuse_plan *fp)
{
    /* Softmax is a reduction: the transpose and exp are inline (read once),
     * the broadcast Mul of a constant row is its epilogue. */
    CHECK(region_is(g, fp, "softmax", "transpose:i exp:i softmax:r mul:e", "x c", "mul"));
}

TEST(fuse_softmax_takes_inline_producers_and_an_epilogue)
{
    ir_graph *g = ir_graph_new();
    g->opset = 13;
    int x = input(g, "x", shp(2, 7, 9));
    int y = op1(g, "softmax", OP_Softmax, op1(g, "exp", OP_Exp, op1(g, "transpose", OP_Transpose, x)));
    y = op2(g, "mul", OP_Mul, y, constant(g, "c", shp(1, 7), 1.0f, 0.5f));
    ir_graph_set_io(g, 1, &x, 1, &y);
    check_case(g, plan_softmax, 1, 1, 1e-6);
}

static void plan_matmul_view_cast(const ir_graph *g, const fuse_plan *fp)
{
    /* A Reshape (view, cost 0) of B is inline in the contraction; Greater
     * (to bool) and Cast (back to float) are epilogues: the stored dtype
     * is the last epilogue's. The reshape's shape constant is listed as read. */
    CHECK(region_is(g, fp, "mm", "reshape:i mm:r gt:e cast:e", "a b shape c", "cast"));
}

TEST(fuse_view_inline_in_matmul_and_dtype_changing_epilogues)
{
    ir_graph *g = ir_graph_new();
    int a = input(g, "a", shp(2, 6, 8)), b = input(g, "b", shp(1, 40));
    int shape = ir_tensor_add(g, "shape", SMELT_I64, &(ir_shape){.rank = 1, .dim = {2}});
    int64_t *sd = ir_tensor_alloc_data(g, shape);
    sd[0] = 8, sd[1] = 5;
    int m = op2(g, "mm", OP_MatMul, a, op2(g, "reshape", OP_Reshape, b, shape));
    int gt = ir_tensor_add(g, "gt", SMELT_BOOL, NULL);
    int gin[] = {m, constant(g, "c", shp(1, 5), 1.0f, 0.0f)};
    ir_node_add(g, "gt", OP_Greater, 2, gin, 1, &gt);
    int y = op1(g, "cast", OP_Cast, gt);
    attr_int(g, g->n_nodes - 1, "to", 1); /* ONNX FLOAT */
    int ins[] = {a, b};
    ir_graph_set_io(g, 2, ins, 1, &y);
    check_case(g, plan_matmul_view_cast, 1, 1, 1e-6);
}

static void plan_two_matmuls(const ir_graph *g, const fuse_plan *fp)
{
    /* add reads mm1 (stored by an earlier region) and mm2: it becomes the
     * epilogue of mm2, its first input that is ready for it. */
    CHECK(region_is(g, fp, "mm1", "mm1:r", "a b", "mm1"));
    CHECK(region_is(g, fp, "mm2", "mm2:r add:e relu:e", "a c mm1", "relu"));
}

TEST(fuse_residual_add_of_two_matmuls_is_the_later_ones_epilogue)
{
    ir_graph *g = ir_graph_new();
    int a = input(g, "a", shp(2, 7, 8)), b = input(g, "b", shp(2, 8, 5)), c = input(g, "c", shp(2, 8, 5));
    int m1 = op2(g, "mm1", OP_MatMul, a, b), m2 = op2(g, "mm2", OP_MatMul, a, c);
    int y = op1(g, "relu", OP_Relu, op2(g, "add", OP_Add, m1, m2));
    int ins[] = {a, b, c};
    ir_graph_set_io(g, 3, ins, 1, &y);
    check_case(g, plan_two_matmuls, 2, 2, 1e-6);
}

static void plan_split(const ir_graph *g, const fuse_plan *fp)
{
    /* Inlining is decided per output tensor, roles per node: s0 is a graph
     * output (stored by split's own region), s1 is inline in exp. So split is
     * a member of exp's region too, evaluated inline for s1 (inline_of[s1]),
     * yet its role says FUSE_ROOT — the role of a node with several outputs
     * is not enough to tell how a region uses it; read inline_of. */
    CHECK(region_is(g, fp, "split", "split:r", "x", "s0"));
    CHECK(region_is(g, fp, "exp", "split:r exp:r", "x", "exp"));
    int s1 = -1;
    for (int t = 0; t < g->n_tensors; t++)
        if (strcmp(g->tensors[t].name, "s1") == 0) s1 = t;
    CHECK(s1 >= 0 && fp->inline_of[s1] == node_named(g, "split"));
}

TEST(fuse_split_with_one_output_stored_and_one_inline)
{
    ir_graph *g = ir_graph_new();
    g->opset = 11;
    int x = input(g, "x", shp(2, 7, 10));
    int s[2] = {ir_tensor_add(g, "s0", SMELT_F32, NULL), ir_tensor_add(g, "s1", SMELT_F32, NULL)};
    ir_node_add(g, "split", OP_Split, 1, &x, 2, s);
    attr_int(g, 0, "axis", 1);
    int outs[] = {s[0], op1(g, "exp", OP_Exp, s[1])};
    ir_graph_set_io(g, 1, &x, 2, outs);
    check_case(g, plan_split, 2, 2, 1e-6);
}

/* ---- rows: several reductions over the same rows in one kernel ----------------------------- */

static int reduce_last(ir_graph *g, const char *name, op_id id, int x)
{
    int y = op1(g, name, id, x);
    static const int64_t axes[] = {-1};
    attr_ints(g, g->n_nodes - 1, "axes", 1, axes);
    attr_int(g, g->n_nodes - 1, "keepdims", 1);
    return y;
}

static void plan_softmax_rows(const ir_graph *g, const fuse_plan *fp)
{
    CHECK(region_is(g, fp, "div", "max:i sub:i exp:i sum:i div:r", "x", "div"));
}

TEST(fuse_decomposed_softmax_is_one_kernel)
{
    ir_graph *g = ir_graph_new();
    g->opset = 11;
    int x = input(g, "x", shp(3, 3, 5, 37));
    int m = reduce_last(g, "max", OP_ReduceMax, x);
    int e = op1(g, "exp", OP_Exp, op2(g, "sub", OP_Sub, x, m));
    int y = op2(g, "div", OP_Div, e, reduce_last(g, "sum", OP_ReduceSum, e));
    ir_graph_set_io(g, 1, &x, 1, &y);
    check_case(g, plan_softmax_rows, 1, 1, 1e-6);
}

static void plan_layernorm_rows(const ir_graph *g, const fuse_plan *fp)
{
    CHECK(region_is(g, fp, "shift", "mean:i centre:i square:i var:i eps:i sd:i norm:i scale:i shift:r", "x e g b",
                    "shift"));
}

TEST(fuse_decomposed_layernorm_is_one_kernel)
{
    ir_graph *g = ir_graph_new();
    g->opset = 11;
    int x = input(g, "x", shp(3, 4, 3, 29));
    int c = op2(g, "centre", OP_Sub, x, reduce_last(g, "mean", OP_ReduceMean, x));
    int v = reduce_last(g, "var", OP_ReduceMean, op2(g, "square", OP_Mul, c, c));
    int sd = op1(g, "sd", OP_Sqrt, op2(g, "eps", OP_Add, v, constant(g, "e", shp(0), 0.0f, 1e-5f)));
    int n = op2(g, "norm", OP_Div, c, sd);
    int y = op2(g, "shift", OP_Add, op2(g, "scale", OP_Mul, n, constant(g, "g", shp(1, 29), 0.1f, 0.5f)),
                constant(g, "b", shp(1, 29), 0.05f, -0.2f));
    ir_graph_set_io(g, 1, &x, 1, &y);
    check_case(g, plan_layernorm_rows, 1, 1, 1e-5);
}

/* ---- passes: a multi-pass root materializes the selects of its cone ---------------------- */

/* exp(a) and b concatenated on the last dim, moved by a transpose to the
 * front of the reduced dim: [2,3,5,4] ++ [2,3,5,7] -> [2,11,3,5]; the
 * inputs in io. */
static int concat_transposed(ir_graph *g, int *io)
{
    io[0] = input(g, "a", shp(4, 2, 3, 5, 4));
    io[1] = input(g, "b", shp(4, 2, 3, 5, 7));
    int cat = op2(g, "cat", OP_Concat, op1(g, "expa", OP_Exp, io[0]), io[1]);
    attr_int(g, g->n_nodes - 1, "axis", 3);
    int y = op1(g, "tr", OP_Transpose, cat);
    static const int64_t perm[] = {0, 3, 1, 2};
    attr_ints(g, g->n_nodes - 1, "perm", 4, perm);
    return y;
}

static void plan_softmax_of_concat(const ir_graph *g, const fuse_plan *fp)
{
    /* Softmax reads its input in three passes: the concat's select between
     * a and b is stored once, not made again in each pass */
    CHECK(region_is(g, fp, "cat", "expa:i cat:r", "a b", "cat"));
    CHECK(region_is(g, fp, "sm", "tr:i sm:r", "cat", "sm"));
}

TEST(fuse_softmax_materializes_a_concat_in_its_cone)
{
    static const op_id ops[] = {OP_Softmax, OP_LogSoftmax, OP_Hardmax};
    for (int oi = 0; oi < 3; oi++) {
        ir_graph *g = ir_graph_new();
        g->opset = 13;
        int io[2];
        int y = op1(g, "sm", ops[oi], concat_transposed(g, io));
        attr_int(g, g->n_nodes - 1, "axis", 1);
        ir_graph_set_io(g, 2, io, 1, &y);
        check_case(g, plan_softmax_of_concat, 2, 3, 1e-5);
    }
}

static void plan_sum_of_concat(const ir_graph *g, const fuse_plan *fp)
{
    CHECK(region_is(g, fp, "sum", "expa:i cat:i tr:i sum:r", "a b", "sum"));
}

/* A reduction that reads each element once keeps the concat inline. */
TEST(fuse_single_pass_reduction_keeps_a_concat_inline)
{
    ir_graph *g = ir_graph_new();
    g->opset = 11;
    int io[2];
    int y = op1(g, "sum", OP_ReduceSum, concat_transposed(g, io));
    static const int64_t axes[] = {1};
    attr_ints(g, g->n_nodes - 1, "axes", 1, axes);
    ir_graph_set_io(g, 2, io, 1, &y);
    check_case(g, plan_sum_of_concat, 1, 1, 1e-5);
}

/* ---- inserts: producers write into their block of a Concat's output ------------------------ */

static void plan_concat_blocks(const ir_graph *g, const fuse_plan *fp)
{
    const fuse_region *r = region_rooted(g, fp, "mm2");
    CHECK(r && r->n_ranges == 1);
    if (r && r->n_ranges == 1) {
        /* mm2 is the second input: columns 5..12 of the concatenation */
        CHECK_EQ_INT(r->ranges[0].lo[1], 5);
        CHECK_EQ_INT(r->ranges[0].hi[1], 12);
        CHECK_EQ_INT(r->ranges[0].hi[0], 6);
    }
    const fuse_region *c = region_rooted(g, fp, "cat");
    CHECK(c && c->n_ranges == 0); /* every block was written by its producer */
}

TEST(fuse_concat_producers_write_their_own_blocks)
{
    ir_graph *g = ir_graph_new();
    int a = input(g, "a", shp(2, 6, 8));
    int m1 = op2(g, "mm1", OP_MatMul, a, constant(g, "w1", shp(2, 8, 5), 0.1f, 0.0f));
    int m2 = op2(g, "mm2", OP_MatMul, a, constant(g, "w2", shp(2, 8, 7), 0.2f, 0.0f));
    int y = op2(g, "cat", OP_Concat, m1, m2);
    attr_int(g, g->n_nodes - 1, "axis", 1);
    ir_graph_set_io(g, 1, &a, 1, &y);
    smelt_program *p = compile(g, 0);
    /* the blocks interleave in memory (columns 0..4 and 5..11 of each row), but their boxes
     * are apart: the two products share a batch */
    if (p && p->lp.n_kernels == 2) CHECK(!p->plan.barrier_before[1]);
    smelt_program_free(p);
    check_case(g, plan_concat_blocks, 3, 2, 1e-6);
}

/* A padded model output: its producer writes the interior, the Pad's own
 * dispatch only the border (ranges recorded apart), so the two run in one
 * batch; a consumer of the padded tensor waits for both. 160 x 130 floats:
 * over FUSE_PAD_SMALL, so the Pad is not fused into its producer. */
TEST(fuse_pad_border_and_interior_run_together)
{
    ir_graph *g = ir_graph_new();
    int x = input(g, "x", shp(2, 158, 127));
    int e = op1(g, "exp", OP_Exp, x);
    int pads = ir_tensor_add(g, "pads", SMELT_I64, &(ir_shape){.rank = 1, .dim = {4}});
    const int64_t pv[4] = {1, 2, 1, 1};
    for (int i = 0; i < 4; i++) ((int64_t *)ir_tensor_alloc_data(g, pads))[i] = pv[i];
    int in[2] = {e, pads};
    int y = op(g, "pad", OP_Pad, 2, in);
    int z = op2(g, "mul", OP_Mul, y, y);
    int outs[2] = {y, z};
    ir_graph_set_io(g, 1, &x, 2, outs);
    smelt_program *p = compile(g, 0);
    CHECK(p && p->lp.n_kernels == 3);
    if (p && p->lp.n_kernels == 3) {
        const fuse_region *border = region_rooted(p->g, &p->fp, "pad");
        CHECK(border && border->n_ranges == 1 && border->ranges[0].border);
        CHECK(!p->plan.barrier_before[1]); /* the interior and the border */
        CHECK(p->plan.barrier_before[2]);  /* the Mul reads both */
    }
    smelt_program_free(p);
    check_case(g, plan_any, 3, 3, 1e-6);
}
