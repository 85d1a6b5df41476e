/*
 * test_sizes.c — the size limit (core/size.h): checked arithmetic, and the
 * checks graph_bind_inputs and graph_infer make against it.
 */
#include "core/size.h"
#include "graph/passes.h"
#include "ir/ir.h"
#include "lower/lower.h"
#include "test.h"

TEST(size_checked_arithmetic)
{
    int64_t r;
    CHECK(size_add(1, 2, &r) && r == 3);
    CHECK(!size_add(INT64_MAX, 1, &r));
    CHECK(!size_sub(INT64_MIN, 1, &r));
    CHECK(size_mul((int64_t)1 << 31, (int64_t)1 << 31, &r) && r == (int64_t)1 << 62);
    CHECK(!size_mul((int64_t)1 << 62, 4, &r));
    const int64_t ok[] = {1 << 20, 1 << 20}, big[] = {1 << 20, (1 << 20) + 1}, neg[] = {-3, 64},
                  empty[] = {0, (int64_t)1 << 40}, empty_big[] = {0, (int64_t)1 << 40, 2};
    CHECK(size_numel(ok, 2, &r) && r == SMELT_MAX_ELEMS);
    CHECK(!size_numel(big, 2, &r));
    CHECK(!size_numel(neg, 2, &r));
    CHECK(size_numel(empty, 2, &r) && r == 0);
    CHECK(!size_numel(empty_big, 3, &r)); /* its strides would pass the limit */
    ir_shape s = {.rank = 2, .dim = {(int64_t)1 << 62, 8}};
    CHECK(ir_shape_numel(&s) == INT64_MAX && !ir_shape_ok(&s));
}

/* x (symbolic [N,3]) -> Relu -> y */
static ir_graph *relu_graph(void)
{
    ir_graph *g = ir_graph_new();
    ir_shape sx = {.rank = 2, .dim = {-1, 3}};
    int x = ir_tensor_add(g, "x", SMELT_F32, &sx), y = ir_tensor_add(g, "y", SMELT_F32, NULL);
    ir_node_add(g, "relu_s", OP_Relu, 1, &x, 1, &y);
    g->tensors[x].is_input = true;
    ir_graph_set_io(g, 1, &x, 1, &y);
    return g;
}

TEST(size_bind_rejects_bad_given_shapes)
{
    const int64_t dims[][2] = {{((int64_t)1 << 40) + 1, 3}, {-3, 3}, {INT64_MIN, 3}};
    for (int i = 0; i < 3; i++) {
        ir_graph *g = relu_graph();
        smelt_tensor t = {.name = "x", .dtype = SMELT_F32, .rank = 2, .shape = {dims[i][0], dims[i][1]}};
        CHECK_EQ_INT(graph_bind_inputs(g, 1, &t), SMELT_ERR_SHAPE);
        CHECK_STR_HAS(smelt_last_error(), "input 'x' has shape");
        CHECK_STR_HAS(smelt_last_error(), "every dim must be >= 0 and a tensor may hold at most 2^40 elements");
        ir_graph_free(g);
    }
    ir_graph *g = relu_graph();
    smelt_tensor t = {.name = "x", .dtype = SMELT_F32, .rank = 2, .shape = {5, 3}};
    CHECK_EQ_INT(graph_bind_inputs(g, 1, &t), SMELT_OK);
    CHECK_EQ_INT(graph_infer(g, lower_eval_node), SMELT_OK);
    ir_graph_free(g);
}

TEST(size_bind_rejects_huge_declared_shapes)
{
    ir_graph *g = relu_graph();
    g->tensors[g->inputs[0]].shape.dim[0] = (int64_t)1 << 39; /* [2^39, 3] */
    CHECK_EQ_INT(graph_bind_inputs(g, 0, NULL), SMELT_ERR_SHAPE);
    CHECK_STR_HAS(smelt_last_error(), "input 'x' is declared with shape [549755813888,3]");
    ir_graph_free(g);
}
