/* Shape rules of the elementwise, broadcast, data-movement and shape ops (ops/elementwise.c,
 * layout.c, generate.c, gather_scatter.c, with the toolkit of ops/shape.c). */
#include <stdarg.h>
#include <stdlib.h>

#include "ir/ir.h"
#include "ops/layout.h"
#include "test.h"

static ir_shape S(int rank, ...)
{
    ir_shape s = {.rank = rank};
    va_list ap;
    va_start(ap, rank);
    for (int i = 0; i < rank; i++) s.dim[i] = va_arg(ap, int);
    va_end(ap);
    return s;
}

static int input(ir_graph *g, const char *name, smelt_dtype dt, ir_shape s)
{
    return ir_tensor_add(g, name, dt, &s);
}

/* A constant int64 1-D tensor. */
static int ints(ir_graph *g, const char *name, int n, const int64_t *v)
{
    ir_shape s = {.rank = 1, .dim = {n}};
    int t = ir_tensor_add(g, name, SMELT_I64, &s);
    int64_t *d = ir_tensor_alloc_data(g, t);
    for (int i = 0; i < n; i++) d[i] = v[i];
    return t;
}

static int scalar_const(ir_graph *g, const char *name, smelt_dtype dt, double v)
{
    int t = ir_tensor_add(g, name, dt, NULL);
    void *d = ir_tensor_alloc_data(g, t);
    if (dt == SMELT_F32) *(float *)d = (float)v;
    else if (dt == SMELT_I64) *(int64_t *)d = (int64_t)v;
    else if (dt == SMELT_I32) *(int32_t *)d = (int32_t)v;
    return t;
}

/* Add node `op` named `name` with inputs in[0..n_in) and n_out fresh outputs;
 * returns the node index. */
static int node(ir_graph *g, const char *name, op_id op, int n_in, const int *in, int n_out)
{
    int out[8];
    for (int i = 0; i < n_out; i++) {
        char nm[64];
        snprintf(nm, sizeof nm, "%s_out%d", name, i);
        out[i] = ir_tensor_add(g, nm, SMELT_UNDEFINED, NULL);
    }
    return ir_node_add(g, name, op, n_in, in, n_out, out);
}

static void attr_int(ir_graph *g, int n, const char *name, int64_t v)
{
    ir_attr a = {.name = name, .type = IR_ATTR_INT, .i = v};
    ir_node_attr_add(g, n, &a);
}

static void attr_ints(ir_graph *g, int n, const char *name, int cnt, const int64_t *v)
{
    ir_attr a = {.name = name, .type = IR_ATTR_INTS, .n = cnt, .ints = (int64_t *)v};
    ir_node_attr_add(g, n, &a);
}

static void attr_str(ir_graph *g, int n, const char *name, const char *v)
{
    ir_attr a = {.name = name, .type = IR_ATTR_STRING, .s = v};
    ir_node_attr_add(g, n, &a);
}

static smelt_status infer(ir_graph *g, int n) { return op_get(g->nodes[n].op)->infer(g, n); }
static const ir_tensor *out0(ir_graph *g, int n) { return ir_out(g, &g->nodes[n], 0); }
static const ir_tensor *outi(ir_graph *g, int n, int i) { return ir_out(g, &g->nodes[n], i); }

static bool shape_is(const ir_tensor *t, ir_shape s) { return ir_shape_eq(&t->shape, &s); }

TEST(infer_broadcast_shapes)
{
    ir_graph *g = ir_graph_new();
    int a = input(g, "a", SMELT_F32, S(3, 2, 1, 4));
    int b = input(g, "b", SMELT_F32, S(2, 3, 1));
    int n = node(g, "add1", OP_Add, 2, (int[]){a, b}, 1);
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK(shape_is(out0(g, n), S(3, 2, 3, 4)));
    CHECK_EQ_INT(out0(g, n)->dtype, SMELT_F32);

    int c = input(g, "c", SMELT_F32, S(2, 3, 5));
    n = node(g, "add2", OP_Add, 2, (int[]){a, c}, 1);
    CHECK_EQ_INT(infer(g, n), SMELT_ERR_SHAPE);
    CHECK_STR_HAS(smelt_last_error(), "node 'add2' (Add): cannot broadcast");

    int d = input(g, "d", SMELT_I32, S(1, 4));
    n = node(g, "add3", OP_Add, 2, (int[]){a, d}, 1);
    CHECK_EQ_INT(infer(g, n), SMELT_ERR_SHAPE);
    CHECK_STR_HAS(smelt_last_error(), "same dtype");

    n = node(g, "cmp", OP_Less, 2, (int[]){a, b}, 1);
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK_EQ_INT(out0(g, n)->dtype, SMELT_BOOL);

    n = node(g, "max3", OP_Max, 3, (int[]){a, b, c}, 1);
    CHECK_EQ_INT(infer(g, n), SMELT_ERR_SHAPE);

    n = node(g, "pow", OP_Pow, 2, (int[]){a, d}, 1);
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK_EQ_INT(out0(g, n)->dtype, SMELT_F32);
    ir_graph_free(g);
}

TEST(infer_dtype_rejections)
{
    ir_graph *g = ir_graph_new();
    int h = input(g, "h", (smelt_dtype)14, S(1, 4));
    int n = node(g, "relu_h", OP_Relu, 1, (int[]){h}, 1);
    CHECK_EQ_INT(infer(g, n), SMELT_ERR_UNSUPPORTED);
    CHECK_STR_HAS(smelt_last_error(), "node 'relu_h' (Relu): input 'h' has dtype complex64");

    int i = input(g, "i", SMELT_I32, S(1, 4));
    n = node(g, "sq", OP_Sqrt, 1, (int[]){i}, 1);
    CHECK_EQ_INT(infer(g, n), SMELT_ERR_UNSUPPORTED);
    CHECK_STR_HAS(smelt_last_error(), "takes float tensors");

    n = node(g, "cast", OP_Cast, 1, (int[]){i}, 1);
    attr_int(g, n, "to", 17);
    CHECK_EQ_INT(infer(g, n), SMELT_ERR_UNSUPPORTED);
    CHECK_STR_HAS(smelt_last_error(), "float8");

    n = node(g, "cast2", OP_Cast, 1, (int[]){i}, 1);
    attr_int(g, n, "to", SMELT_BOOL);
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK_EQ_INT(out0(g, n)->dtype, SMELT_BOOL);

    n = node(g, "and", OP_And, 2, (int[]){i, i}, 1);
    CHECK_EQ_INT(infer(g, n), SMELT_ERR_UNSUPPORTED);
    ir_graph_free(g);
}

TEST(infer_reshape)
{
    ir_graph *g = ir_graph_new();
    int x = input(g, "x", SMELT_F32, S(3, 2, 3, 4));
    int n = node(g, "r0", OP_Reshape, 2, (int[]){x, ints(g, "s0", 2, (int64_t[]){0, -1})}, 1);
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK(shape_is(out0(g, n), S(2, 2, 12)));

    n = node(g, "r1", OP_Reshape, 2, (int[]){x, ints(g, "s1", 2, (int64_t[]){5, 5})}, 1);
    CHECK_EQ_INT(infer(g, n), SMELT_ERR_SHAPE);
    CHECK_STR_HAS(smelt_last_error(), "node 'r1' (Reshape): cannot reshape [2,3,4] (24 elements) to [5,5]");

    n = node(g, "r2", OP_Reshape, 2, (int[]){x, ints(g, "s2", 2, (int64_t[]){-1, -1})}, 1);
    CHECK_EQ_INT(infer(g, n), SMELT_ERR_SHAPE);

    int dyn = input(g, "dyn", SMELT_I64, S(1, 2));
    n = node(g, "r3", OP_Reshape, 2, (int[]){x, dyn}, 1);
    CHECK_EQ_INT(infer(g, n), SMELT_ERR_UNSUPPORTED);
    CHECK_STR_HAS(smelt_last_error(), "input 'dyn' (shape) must be known at compile time");

    int z = input(g, "z", SMELT_F32, S(2, 0, 3));
    n = node(g, "r4", OP_Reshape, 2, (int[]){z, ints(g, "s4", 2, (int64_t[]){0, 3})}, 1);
    attr_int(g, n, "allowzero", 1);
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK(shape_is(out0(g, n), S(2, 0, 3)));

    n = node(g, "f", OP_Flatten, 1, (int[]){x}, 1);
    attr_int(g, n, "axis", -1);
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK(shape_is(out0(g, n), S(2, 6, 4)));
    n = node(g, "f0", OP_Flatten, 1, (int[]){x}, 1);
    attr_int(g, n, "axis", 0);
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK(shape_is(out0(g, n), S(2, 1, 24)));
    ir_graph_free(g);
}

TEST(infer_squeeze_unsqueeze_opsets)
{
    ir_graph *g = ir_graph_new();
    int x = input(g, "x", SMELT_F32, S(3, 1, 3, 1));
    g->opset = 11;
    int n = node(g, "sq11", OP_Squeeze, 1, (int[]){x}, 1);
    attr_ints(g, n, "axes", 1, (int64_t[]){-1});
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK(shape_is(out0(g, n), S(2, 1, 3)));

    g->opset = 13;
    n = node(g, "sq13", OP_Squeeze, 2, (int[]){x, ints(g, "ax", 1, (int64_t[]){0})}, 1);
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK(shape_is(out0(g, n), S(2, 3, 1)));

    n = node(g, "sqall", OP_Squeeze, 1, (int[]){x}, 1);
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK(shape_is(out0(g, n), S(1, 3)));

    n = node(g, "sqbad", OP_Squeeze, 2, (int[]){x, ints(g, "ax1", 1, (int64_t[]){1})}, 1);
    CHECK_EQ_INT(infer(g, n), SMELT_ERR_SHAPE);
    CHECK_STR_HAS(smelt_last_error(), "cannot squeeze axis 1");

    n = node(g, "un", OP_Unsqueeze, 2, (int[]){x, ints(g, "ax2", 2, (int64_t[]){0, -1})}, 1);
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK(shape_is(out0(g, n), S(5, 1, 1, 3, 1, 1)));

    n = node(g, "unbad", OP_Unsqueeze, 2, (int[]){x, ints(g, "ax3", 1, (int64_t[]){5})}, 1);
    CHECK_EQ_INT(infer(g, n), SMELT_ERR_SHAPE);
    CHECK_STR_HAS(smelt_last_error(), "axis 5 is out of range for rank 4");
    ir_graph_free(g);
}

TEST(infer_transpose_expand_concat)
{
    ir_graph *g = ir_graph_new();
    int x = input(g, "x", SMELT_F32, S(3, 2, 3, 4));
    int n = node(g, "t", OP_Transpose, 1, (int[]){x}, 1);
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK(shape_is(out0(g, n), S(3, 4, 3, 2)));
    n = node(g, "tbad", OP_Transpose, 1, (int[]){x}, 1);
    attr_ints(g, n, "perm", 3, (int64_t[]){0, 0, 1});
    CHECK_EQ_INT(infer(g, n), SMELT_ERR_SHAPE);

    int y = input(g, "y", SMELT_F32, S(2, 3, 1));
    n = node(g, "e", OP_Expand, 2, (int[]){y, ints(g, "es", 3, (int64_t[]){2, 1, 5})}, 1);
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK(shape_is(out0(g, n), S(3, 2, 3, 5)));
    n = node(g, "ebad", OP_Expand, 2, (int[]){y, ints(g, "es2", 2, (int64_t[]){2, 4})}, 1);
    CHECK_EQ_INT(infer(g, n), SMELT_ERR_SHAPE);
    CHECK_STR_HAS(smelt_last_error(), "cannot expand [3,1] to [2,4]");

    int z = input(g, "z", SMELT_F32, S(3, 2, 5, 4));
    n = node(g, "c", OP_Concat, 2, (int[]){x, z}, 1);
    attr_int(g, n, "axis", -2);
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK(shape_is(out0(g, n), S(3, 2, 8, 4)));
    n = node(g, "cbad", OP_Concat, 2, (int[]){x, z}, 1);
    attr_int(g, n, "axis", 0);
    CHECK_EQ_INT(infer(g, n), SMELT_ERR_SHAPE);
    ir_graph_free(g);
}

TEST(infer_split_opsets)
{
    ir_graph *g = ir_graph_new();
    int x = input(g, "x", SMELT_F32, S(3, 2, 7, 2));
    g->opset = 11;
    int n = node(g, "s11", OP_Split, 1, (int[]){x}, 2);
    attr_int(g, n, "axis", 1);
    attr_ints(g, n, "split", 2, (int64_t[]){3, 4});
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK(shape_is(outi(g, n, 1), S(3, 2, 4, 2)));

    g->opset = 13;
    n = node(g, "s13", OP_Split, 2, (int[]){x, ints(g, "sp", 2, (int64_t[]){2, 4})}, 2);
    attr_int(g, n, "axis", 1);
    CHECK_EQ_INT(infer(g, n), SMELT_ERR_SHAPE);
    CHECK_STR_HAS(smelt_last_error(), "split sizes sum to 6");

    n = node(g, "s13e", OP_Split, 1, (int[]){x}, 2);
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK(shape_is(outi(g, n, 1), S(3, 1, 7, 2)));

    g->opset = 18;
    n = node(g, "s18", OP_Split, 1, (int[]){x}, 3);
    attr_int(g, n, "axis", 1);
    attr_int(g, n, "num_outputs", 3);
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK(shape_is(outi(g, n, 0), S(3, 2, 3, 2)));
    CHECK(shape_is(outi(g, n, 2), S(3, 2, 1, 2)));
    ir_graph_free(g);
}

TEST(infer_slice)
{
    ir_graph *g = ir_graph_new();
    int x = input(g, "x", SMELT_F32, S(3, 2, 20, 10));
    int n = node(g, "sl", OP_Slice, 5,
                 (int[]){x, ints(g, "st", 2, (int64_t[]){0, -1}), ints(g, "en", 2, (int64_t[]){INT64_MAX, INT64_MIN}),
                         ints(g, "ax", 2, (int64_t[]){0, 1}), ints(g, "sp", 2, (int64_t[]){1, -3})},
                 1);
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK(shape_is(out0(g, n), S(3, 2, 7, 10)));
    int64_t start[IR_MAX_RANK], step[IR_MAX_RANK];
    ir_shape s;
    CHECK_EQ_INT(slice_resolve(g, &g->nodes[n], start, step, &s), SMELT_OK);
    CHECK_EQ_INT(start[1], 19);
    CHECK_EQ_INT(step[1], -3);

    g->opset = 9;
    n = node(g, "sl9", OP_Slice, 1, (int[]){x}, 1);
    attr_ints(g, n, "starts", 1, (int64_t[]){2});
    attr_ints(g, n, "ends", 1, (int64_t[]){1000});
    attr_ints(g, n, "axes", 1, (int64_t[]){-1});
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK(shape_is(out0(g, n), S(3, 2, 20, 8)));

    n = node(g, "slz", OP_Slice, 5,
             (int[]){x, ints(g, "st2", 1, (int64_t[]){0}), ints(g, "en2", 1, (int64_t[]){1}), -1,
                     ints(g, "sp2", 1, (int64_t[]){0})},
             1);
    CHECK_EQ_INT(infer(g, n), SMELT_ERR_SHAPE);
    CHECK_STR_HAS(smelt_last_error(), "step of axis 0 is 0");
    ir_graph_free(g);
}

TEST(infer_gather_tile_pad_range)
{
    ir_graph *g = ir_graph_new();
    int x = input(g, "x", SMELT_F32, S(3, 5, 4, 3));
    int ind = input(g, "ind", SMELT_I64, S(2, 2, 6));
    int n = node(g, "ga", OP_Gather, 2, (int[]){x, ind}, 1);
    attr_int(g, n, "axis", 1);
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK(shape_is(out0(g, n), S(4, 5, 2, 6, 3)));
    int bad = ints(g, "badind", 1, (int64_t[]){7});
    n = node(g, "gb", OP_Gather, 2, (int[]){x, bad}, 1);
    CHECK_EQ_INT(infer(g, n), SMELT_ERR_SHAPE);
    CHECK_STR_HAS(smelt_last_error(), "index 7 is out of range");

    n = node(g, "ti", OP_Tile, 2, (int[]){x, ints(g, "rep", 3, (int64_t[]){2, 1, 3})}, 1);
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK(shape_is(out0(g, n), S(3, 10, 4, 9)));

    n = node(g, "pa", OP_Pad, 2, (int[]){x, ints(g, "pads", 6, (int64_t[]){1, 0, 2, 1, -1, 0})}, 1);
    attr_str(g, n, "mode", "reflect");
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK(shape_is(out0(g, n), S(3, 7, 3, 5)));
    g->opset = 2;
    n = node(g, "pa2", OP_Pad, 1, (int[]){x}, 1);
    attr_ints(g, n, "pads", 4, (int64_t[]){1, 1, 1, 1});
    CHECK_EQ_INT(infer(g, n), SMELT_ERR_SHAPE);
    CHECK_STR_HAS(smelt_last_error(), "4 pads for 3 axes");

    int st = scalar_const(g, "st", SMELT_F32, 1), li = scalar_const(g, "li", SMELT_F32, 2),
        de = scalar_const(g, "de", SMELT_F32, 0.3);
    n = node(g, "ra", OP_Range, 3, (int[]){st, li, de}, 1);
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK(shape_is(out0(g, n), S(1, 4)));
    int lim = scalar_const(g, "lim", SMELT_I32, -10), d = scalar_const(g, "d", SMELT_I32, -3),
        s0 = scalar_const(g, "s0", SMELT_I32, 10);
    n = node(g, "ri", OP_Range, 3, (int[]){s0, lim, d}, 1);
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK(shape_is(out0(g, n), S(1, 7)));
    CHECK_EQ_INT(out0(g, n)->dtype, SMELT_I32);
    ir_graph_free(g);
}

TEST(infer_folded_shape_ops)
{
    ir_graph *g = ir_graph_new();
    int x = input(g, "x", SMELT_F32, S(4, 2, 3, 4, 5));
    int n = node(g, "sh", OP_Shape, 1, (int[]){x}, 1);
    attr_int(g, n, "start", -3);
    attr_int(g, n, "end", -1);
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    const ir_tensor *o = out0(g, n);
    CHECK(shape_is(o, S(1, 2)));
    CHECK(o->data && ((int64_t *)o->data)[0] == 3 && ((int64_t *)o->data)[1] == 4);

    n = node(g, "sz", OP_Size, 1, (int[]){x}, 1);
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK_EQ_INT(ir_const_int(out0(g, n), 0), 120);

    n = node(g, "k", OP_Constant, 0, (int[]){-1}, 1);
    attr_ints(g, n, "value_ints", 3, (int64_t[]){7, 8, 9});
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK(shape_is(out0(g, n), S(1, 3)));
    CHECK_EQ_INT(ir_const_int(out0(g, n), 2), 9);

    int v = ir_tensor_add(g, "v", SMELT_I32, &(ir_shape){.rank = 1, .dim = {1}});
    *(int32_t *)ir_tensor_alloc_data(g, v) = 5;
    n = node(g, "cos", OP_ConstantOfShape, 1, (int[]){ints(g, "cs", 2, (int64_t[]){2, 3})}, 1);
    ir_attr a = {.name = "value", .type = IR_ATTR_TENSOR, .tensor = v};
    ir_node_attr_add(g, n, &a);
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK(shape_is(out0(g, n), S(2, 2, 3)));
    CHECK_EQ_INT(out0(g, n)->dtype, SMELT_I32);
    ir_graph_free(g);
}

TEST(infer_where_clip)
{
    ir_graph *g = ir_graph_new();
    int c = input(g, "c", SMELT_BOOL, S(2, 2, 1));
    int x = input(g, "x", SMELT_F32, S(1, 3));
    int y = input(g, "y", SMELT_F32, S(0));
    int n = node(g, "w", OP_Where, 3, (int[]){c, x, y}, 1);
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK(shape_is(out0(g, n), S(2, 2, 3)));
    n = node(g, "wbad", OP_Where, 3, (int[]){x, x, y}, 1);
    CHECK_EQ_INT(infer(g, n), SMELT_ERR_UNSUPPORTED);

    int lo = scalar_const(g, "lo", SMELT_F32, -1);
    n = node(g, "cl", OP_Clip, 3, (int[]){x, lo, -1}, 1);
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK(shape_is(out0(g, n), S(1, 3)));
    n = node(g, "clbad", OP_Clip, 2, (int[]){x, x}, 1);
    CHECK_EQ_INT(infer(g, n), SMELT_ERR_SHAPE);
    ir_graph_free(g);
}

/* The list operands given as attributes (old opsets, parsed into layout_params)
 * resolve as the same lists given as constant inputs. */
TEST(infer_attr_lists_match_input_lists)
{
    ir_graph *g = ir_graph_new();
    int x = input(g, "x", SMELT_F32, S(4, 3, 1, 6, 1));
    int64_t st_a[IR_MAX_RANK], sp_a[IR_MAX_RANK], st_b[IR_MAX_RANK], sp_b[IR_MAX_RANK];
    ir_shape sa, sb;

    g->opset = 9;
    int a = node(g, "sl9", OP_Slice, 1, (int[]){x}, 1);
    attr_ints(g, a, "starts", 2, (int64_t[]){1, -4});
    attr_ints(g, a, "ends", 2, (int64_t[]){3, 1000});
    attr_ints(g, a, "axes", 2, (int64_t[]){0, -2});
    CHECK_EQ_INT(infer(g, a), SMELT_OK);
    g->opset = 13;
    int b = node(g, "sl13", OP_Slice, 4,
                 (int[]){x, ints(g, "st", 2, (int64_t[]){1, -4}), ints(g, "en", 2, (int64_t[]){3, 1000}),
                         ints(g, "ax", 2, (int64_t[]){0, -2})},
                 1);
    CHECK_EQ_INT(infer(g, b), SMELT_OK);
    CHECK(ir_shape_eq(&out0(g, a)->shape, &out0(g, b)->shape));
    CHECK(shape_is(out0(g, a), S(4, 2, 1, 4, 1)));
    CHECK_EQ_INT(slice_resolve(g, &g->nodes[a], st_a, sp_a, &sa), SMELT_OK);
    CHECK_EQ_INT(slice_resolve(g, &g->nodes[b], st_b, sp_b, &sb), SMELT_OK);
    for (int i = 0; i < 4; i++) CHECK(st_a[i] == st_b[i] && sp_a[i] == sp_b[i]);

    g->opset = 2;
    int mode_a, mode_b;
    a = node(g, "pa2", OP_Pad, 1, (int[]){x}, 1);
    attr_ints(g, a, "pads", 8, (int64_t[]){1, 0, 0, 2, 0, 1, 0, 0});
    CHECK_EQ_INT(infer(g, a), SMELT_OK);
    g->opset = 13;
    b = node(g, "pa13", OP_Pad, 2, (int[]){x, ints(g, "pads", 8, (int64_t[]){1, 0, 0, 2, 0, 1, 0, 0})}, 1);
    CHECK_EQ_INT(infer(g, b), SMELT_OK);
    CHECK(shape_is(out0(g, a), S(4, 4, 2, 6, 3)));
    CHECK(ir_shape_eq(&out0(g, a)->shape, &out0(g, b)->shape));
    CHECK_EQ_INT(pad_resolve(g, &g->nodes[a], st_a, &mode_a, &sa), SMELT_OK);
    CHECK_EQ_INT(pad_resolve(g, &g->nodes[b], st_b, &mode_b, &sb), SMELT_OK);
    for (int i = 0; i < 4; i++) CHECK(st_a[i] == st_b[i]);

    g->opset = 11;
    a = node(g, "sp11", OP_Split, 1, (int[]){x}, 2);
    attr_int(g, a, "axis", 2);
    attr_ints(g, a, "split", 2, (int64_t[]){5, 1});
    CHECK_EQ_INT(infer(g, a), SMELT_OK);
    g->opset = 13;
    b = node(g, "sp13", OP_Split, 2, (int[]){x, ints(g, "sp", 2, (int64_t[]){5, 1})}, 2);
    attr_int(g, b, "axis", 2);
    CHECK_EQ_INT(infer(g, b), SMELT_OK);
    CHECK(shape_is(outi(g, a, 0), S(4, 3, 1, 5, 1)) && shape_is(outi(g, b, 0), S(4, 3, 1, 5, 1)));
    CHECK(shape_is(outi(g, a, 1), S(4, 3, 1, 1, 1)) && shape_is(outi(g, b, 1), S(4, 3, 1, 1, 1)));

    g->opset = 11;
    a = node(g, "sq11", OP_Squeeze, 1, (int[]){x}, 1);
    attr_ints(g, a, "axes", 1, (int64_t[]){-1});
    CHECK_EQ_INT(infer(g, a), SMELT_OK);
    b = node(g, "un11", OP_Unsqueeze, 1, (int[]){x}, 1);
    attr_ints(g, b, "axes", 1, (int64_t[]){0});
    CHECK_EQ_INT(infer(g, b), SMELT_OK);
    CHECK(shape_is(out0(g, a), S(3, 3, 1, 6)) && shape_is(out0(g, b), S(5, 1, 3, 1, 6, 1)));
    g->opset = 13;
    a = node(g, "sq13", OP_Squeeze, 2, (int[]){x, ints(g, "sqa", 1, (int64_t[]){-1})}, 1);
    CHECK_EQ_INT(infer(g, a), SMELT_OK);
    CHECK(shape_is(out0(g, a), S(3, 3, 1, 6)));
    ir_graph_free(g);
}
