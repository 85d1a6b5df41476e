/* Shape rules of MatMul/Gemm, Conv, the pools, reductions, Softmax and the normalizations
 * (ops/matmul.c, conv.c, pool.c, reduce.c, norm.c): shapes, dtypes and error messages. */
#include "ir/ir.h"
#include "fuse_cases.h"
#include "test.h"

static int tensor(ir_graph *g, const char *name, smelt_dtype dt, int rank, const int64_t *dims)
{
    ir_shape s = {.rank = rank};
    for (int i = 0; i < rank; i++) s.dim[i] = dims[i];
    return ir_tensor_add(g, name, dt, &s);
}

#define T(g, name, dt, ...) tensor(g, name, dt, (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__})

/* A node of `op` named `name` reading `in` and writing fresh outputs. */
static int node(ir_graph *g, const char *name, op_id op, int n_in, const int *in, int n_out)
{
    int out[4];
    for (int i = 0; i < n_out; i++) {
        char nm[64];
        snprintf(nm, sizeof nm, "%s_out%d", name, i);
        out[i] = ir_tensor_add(g, nm, SMELT_UNDEFINED, NULL);
    }
    return ir_node_add(g, name, op, n_in, in, n_out, out);
}

static smelt_status infer(ir_graph *g, int n) { return op_get(g->nodes[n].op)->infer(g, n); }

static void check_shape(const ir_tensor *t, int rank, const int64_t *dims)
{
    CHECK_EQ_INT(t->shape.rank, rank);
    for (int i = 0; i < rank && i < t->shape.rank; i++) CHECK_EQ_INT(t->shape.dim[i], dims[i]);
}

#define CHECK_SHAPE(t, ...) check_shape(t, (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__})

TEST(infer_matmul_batch_broadcast_and_vectors)
{
    ir_graph *g = ir_graph_new();
    g->opset = 17;
    int a = T(g, "a", SMELT_F32, 2, 1, 3, 4), b = T(g, "b", SMELT_F32, 5, 4, 6);
    int n = node(g, "mm", OP_MatMul, 2, (int[]){a, b}, 1);
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK_SHAPE(ir_out(g, &g->nodes[n], 0), 2, 5, 3, 6);
    CHECK_EQ_INT(ir_out(g, &g->nodes[n], 0)->dtype, SMELT_F32);
    int v = T(g, "v", SMELT_F32, 4);
    n = node(g, "mv", OP_MatMul, 2, (int[]){a, v}, 1);
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK_SHAPE(ir_out(g, &g->nodes[n], 0), 2, 1, 3);
    n = node(g, "vm", OP_MatMul, 2, (int[]){v, b}, 1);
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK_SHAPE(ir_out(g, &g->nodes[n], 0), 5, 6);
    n = node(g, "vv", OP_MatMul, 2, (int[]){v, v}, 1);
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK_EQ_INT(ir_out(g, &g->nodes[n], 0)->shape.rank, 0);
    ir_graph_free(g);
}

TEST(infer_matmul_errors)
{
    ir_graph *g = ir_graph_new();
    int a = T(g, "a", SMELT_F32, 3, 4), b = T(g, "b", SMELT_F32, 5, 6), c = T(g, "c", SMELT_F64, 4, 6);
    int d = T(g, "d", SMELT_F32, 2, 3, 4), e = T(g, "e", SMELT_F32, 3, 4, 2);
    int h = T(g, "h", (smelt_dtype)14, 3, 4);
    int n = node(g, "mm1", OP_MatMul, 2, (int[]){a, b}, 1);
    CHECK_EQ_INT(infer(g, n), SMELT_ERR_SHAPE);
    CHECK_STR_HAS(smelt_last_error(), "node 'mm1' (MatMul): inner dimensions differ");
    n = node(g, "mm2", OP_MatMul, 2, (int[]){a, c}, 1);
    CHECK_EQ_INT(infer(g, n), SMELT_ERR_SHAPE);
    CHECK_STR_HAS(smelt_last_error(), "same dtype");
    n = node(g, "mm3", OP_MatMul, 2, (int[]){d, e}, 1);
    CHECK_EQ_INT(infer(g, n), SMELT_ERR_SHAPE);
    CHECK_STR_HAS(smelt_last_error(), "do not broadcast");
    n = node(g, "mm4", OP_MatMul, 2, (int[]){h, h}, 1);
    CHECK_EQ_INT(infer(g, n), SMELT_ERR_UNSUPPORTED);
    CHECK_STR_HAS(smelt_last_error(), "input 'h' has dtype");
    ir_graph_free(g);
}

TEST(infer_gemm_transposes_and_c)
{
    ir_graph *g = ir_graph_new();
    int a = T(g, "a", SMELT_F32, 4, 3), b = T(g, "b", SMELT_F32, 5, 4), c = T(g, "c", SMELT_F32, 5);
    int n = node(g, "fc", OP_Gemm, 3, (int[]){a, b, c}, 1);
    attr_int(g, n, "transA", 1);
    attr_int(g, n, "transB", 1);
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK_SHAPE(ir_out(g, &g->nodes[n], 0), 3, 5);
    int bad_c = T(g, "bc", SMELT_F32, 4);
    n = node(g, "fc2", OP_Gemm, 3, (int[]){a, b, bad_c}, 1);
    attr_int(g, n, "transA", 1);
    attr_int(g, n, "transB", 1);
    CHECK_EQ_INT(infer(g, n), SMELT_ERR_SHAPE);
    CHECK_STR_HAS(smelt_last_error(), "node 'fc2' (Gemm): C [4] does not broadcast to the result shape [3,5]");
    n = node(g, "fc3", OP_Gemm, 2, (int[]){a, b}, 1);
    CHECK_EQ_INT(infer(g, n), SMELT_ERR_SHAPE);
    CHECK_STR_HAS(smelt_last_error(), "transA=0");
    ir_graph_free(g);
}

TEST(infer_conv_pads_strides_groups)
{
    ir_graph *g = ir_graph_new();
    int x = T(g, "x", SMELT_F32, 1, 32, 28, 28), w = T(g, "w", SMELT_F32, 64, 32, 3, 3), b = T(g, "b", SMELT_F32, 64);
    int n = node(g, "conv1", OP_Conv, 3, (int[]){x, w, b}, 1);
    attr_ints(g, n, "pads", 4, (int64_t[]){1, 1, 1, 1});
    attr_ints(g, n, "strides", 2, (int64_t[]){2, 2});
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK_SHAPE(ir_out(g, &g->nodes[n], 0), 1, 64, 14, 14);
    /* depthwise, SAME_UPPER, dilation 2 */
    int wd = T(g, "wd", SMELT_F32, 32, 1, 3, 3);
    n = node(g, "dw", OP_Conv, 2, (int[]){x, wd}, 1);
    attr_int(g, n, "group", 32);
    attr_str(g, n, "auto_pad", "SAME_UPPER");
    attr_ints(g, n, "dilations", 2, (int64_t[]){2, 2});
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK_SHAPE(ir_out(g, &g->nodes[n], 0), 1, 32, 28, 28);
    /* 1-D, VALID */
    int x1 = T(g, "x1", SMELT_F64, 2, 4, 10), w1 = T(g, "w1", SMELT_F64, 6, 4, 4);
    n = node(g, "c1d", OP_Conv, 2, (int[]){x1, w1}, 1);
    attr_str(g, n, "auto_pad", "VALID");
    attr_ints(g, n, "strides", 1, (int64_t[]){3});
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK_SHAPE(ir_out(g, &g->nodes[n], 0), 2, 6, 3);
    CHECK_EQ_INT(ir_out(g, &g->nodes[n], 0)->dtype, SMELT_F64);
    ir_graph_free(g);
}

TEST(infer_conv_errors)
{
    ir_graph *g = ir_graph_new();
    int x = T(g, "x", SMELT_F32, 1, 32, 28, 28), w5 = T(g, "w5", SMELT_F32, 64, 32, 5, 5);
    int n = node(g, "conv3", OP_Conv, 2, (int[]){x, w5}, 1);
    attr_ints(g, n, "kernel_shape", 2, (int64_t[]){3, 3});
    CHECK_EQ_INT(infer(g, n), SMELT_ERR_SHAPE);
    CHECK_STR_HAS(smelt_last_error(), "node 'conv3' (Conv): kernel_shape [3,3] does not match weight shape [64,32,5,5]");
    int w = T(g, "w", SMELT_F32, 64, 16, 3, 3);
    n = node(g, "conv4", OP_Conv, 2, (int[]){x, w}, 1);
    CHECK_EQ_INT(infer(g, n), SMELT_ERR_SHAPE);
    CHECK_STR_HAS(smelt_last_error(), "32 channels but W [64,16,3,3] with group 1 expects 16");
    n = node(g, "conv5", OP_Conv, 2, (int[]){x, w}, 1);
    attr_int(g, n, "group", 3);
    CHECK_EQ_INT(infer(g, n), SMELT_ERR_SHAPE);
    CHECK_STR_HAS(smelt_last_error(), "group 3 does not divide the 32 input channels");
    n = node(g, "conv6", OP_Conv, 2, (int[]){x, w5}, 1);
    attr_ints(g, n, "pads", 2, (int64_t[]){1, 1});
    CHECK_EQ_INT(infer(g, n), SMELT_ERR_MODEL);
    CHECK_STR_HAS(smelt_last_error(), "attribute pads has 2 values, expected 4");
    n = node(g, "conv7", OP_Conv, 2, (int[]){x, w5}, 1);
    attr_str(g, n, "auto_pad", "SAME");
    CHECK_EQ_INT(infer(g, n), SMELT_ERR_MODEL);
    CHECK_STR_HAS(smelt_last_error(), "auto_pad 'SAME'");
    int small = T(g, "s", SMELT_F32, 1, 32, 3, 3);
    n = node(g, "conv8", OP_Conv, 2, (int[]){small, w5}, 1);
    CHECK_EQ_INT(infer(g, n), SMELT_ERR_SHAPE);
    CHECK_STR_HAS(smelt_last_error(), "larger than padded input");
    ir_graph_free(g);
}

TEST(infer_pool_ceil_and_same_lower)
{
    ir_graph *g = ir_graph_new();
    int x = T(g, "x", SMELT_F32, 1, 3, 32, 32);
    int n = node(g, "mp", OP_MaxPool, 1, (int[]){x}, 2);
    attr_ints(g, n, "kernel_shape", 2, (int64_t[]){3, 3});
    attr_ints(g, n, "strides", 2, (int64_t[]){2, 2});
    attr_int(g, n, "ceil_mode", 1);
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK_SHAPE(ir_out(g, &g->nodes[n], 0), 1, 3, 16, 16);
    CHECK_EQ_INT(ir_out(g, &g->nodes[n], 1)->dtype, SMELT_I64);
    n = node(g, "ap", OP_AveragePool, 1, (int[]){x}, 1);
    attr_ints(g, n, "kernel_shape", 2, (int64_t[]){2, 2});
    attr_str(g, n, "auto_pad", "SAME_LOWER");
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK_SHAPE(ir_out(g, &g->nodes[n], 0), 1, 3, 32, 32);
    n = node(g, "ap2", OP_AveragePool, 1, (int[]){x}, 1);
    CHECK_EQ_INT(infer(g, n), SMELT_ERR_MODEL);
    CHECK_STR_HAS(smelt_last_error(), "node 'ap2' (AveragePool): attribute kernel_shape is required");
    n = node(g, "gap", OP_GlobalAveragePool, 1, (int[]){x}, 1);
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK_SHAPE(ir_out(g, &g->nodes[n], 0), 1, 3, 1, 1);
    ir_graph_free(g);
}

TEST(infer_reduce_axes_attr_and_input)
{
    ir_graph *g = ir_graph_new();
    g->opset = 13;
    int x = T(g, "x", SMELT_F32, 2, 3, 4);
    int n = node(g, "rm", OP_ReduceMean, 1, (int[]){x}, 1);
    attr_ints(g, n, "axes", 2, (int64_t[]){-1, 0});
    attr_int(g, n, "keepdims", 0);
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK_SHAPE(ir_out(g, &g->nodes[n], 0), 3);
    n = node(g, "rmax", OP_ReduceMax, 1, (int[]){x}, 1);
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK_SHAPE(ir_out(g, &g->nodes[n], 0), 1, 1, 1);
    /* ReduceSum takes axes as an input from opset 13 */
    int ax = T(g, "axes", SMELT_I64, 1);
    int64_t *axv = ir_tensor_alloc_data(g, ax);
    axv[0] = 1;
    n = node(g, "rs", OP_ReduceSum, 2, (int[]){x, ax}, 1);
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK_SHAPE(ir_out(g, &g->nodes[n], 0), 2, 1, 4);
    int empty = T(g, "empty", SMELT_I64, 0);
    ir_tensor_alloc_data(g, empty);
    n = node(g, "rs_noop", OP_ReduceSum, 2, (int[]){x, empty}, 1);
    attr_int(g, n, "noop_with_empty_axes", 1);
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK_SHAPE(ir_out(g, &g->nodes[n], 0), 2, 3, 4);
    int dyn = T(g, "dyn", SMELT_I64, 1);
    n = node(g, "rs_dyn", OP_ReduceSum, 2, (int[]){x, dyn}, 1);
    CHECK_EQ_INT(infer(g, n), SMELT_ERR_UNSUPPORTED);
    CHECK_STR_HAS(smelt_last_error(), "node 'rs_dyn' (ReduceSum): axes input 'dyn' must be a compile-time constant");
    n = node(g, "rm_bad", OP_ReduceMin, 1, (int[]){x}, 1);
    attr_ints(g, n, "axes", 1, (int64_t[]){3});
    CHECK_EQ_INT(infer(g, n), SMELT_ERR_MODEL);
    CHECK_STR_HAS(smelt_last_error(), "axis 3 is out of range for rank 3");
    ir_graph_free(g);
}

TEST(infer_argmax_softmax_norms)
{
    ir_graph *g = ir_graph_new();
    g->opset = 17;
    int x = T(g, "x", SMELT_F32, 2, 3, 4);
    int n = node(g, "am", OP_ArgMax, 1, (int[]){x}, 1);
    attr_int(g, n, "axis", -2);
    attr_int(g, n, "keepdims", 0);
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK_SHAPE(ir_out(g, &g->nodes[n], 0), 2, 4);
    CHECK_EQ_INT(ir_out(g, &g->nodes[n], 0)->dtype, SMELT_I64);
    n = node(g, "sm", OP_Softmax, 1, (int[]){x}, 1);
    attr_int(g, n, "axis", 3);
    CHECK_EQ_INT(infer(g, n), SMELT_ERR_MODEL);
    CHECK_STR_HAS(smelt_last_error(), "node 'sm' (Softmax): axis 3 is out of range for rank 3");
    int s = T(g, "scale", SMELT_F32, 4), b = T(g, "bias", SMELT_F32, 3, 4);
    n = node(g, "ln", OP_LayerNormalization, 3, (int[]){x, s, b}, 3);
    attr_int(g, n, "axis", 1);
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK_SHAPE(ir_out(g, &g->nodes[n], 0), 2, 3, 4);
    CHECK_SHAPE(ir_out(g, &g->nodes[n], 1), 2, 1, 1);
    int c3 = T(g, "c3", SMELT_F32, 3), c4 = T(g, "c4", SMELT_F32, 4);
    n = node(g, "bn", OP_BatchNormalization, 5, (int[]){x, c3, c3, c3, c3}, 1);
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    n = node(g, "bn2", OP_BatchNormalization, 5, (int[]){x, c3, c4, c3, c3}, 1);
    CHECK_EQ_INT(infer(g, n), SMELT_ERR_SHAPE);
    CHECK_STR_HAS(smelt_last_error(), "node 'bn2' (BatchNormalization): B [4] must have shape [C] = [3]");
    n = node(g, "bn3", OP_BatchNormalization, 5, (int[]){x, c3, c3, c3, c3}, 1);
    attr_int(g, n, "training_mode", 1);
    CHECK_EQ_INT(infer(g, n), SMELT_ERR_UNSUPPORTED);
    CHECK_STR_HAS(smelt_last_error(), "training_mode=1 is not supported");
    ir_graph_free(g);
}
