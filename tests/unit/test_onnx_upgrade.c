/* test_onnx_upgrade.c — nodes of old opsets upgraded to their opset-7 form
 * as they are imported (onnx/upgrade.c), checked by evaluating them. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "graph/passes.h"
#include "lower/lower.h"
#include "onnx/onnx.h"
#include "onnx/onnx.pb-c.h"
#include "onnx_models.h"
#include "test.h"

/* Import, bind no inputs and infer: a graph of constants folds completely, so
 * output 0 holds the values the kernels compute. NULL on failure. */
static ir_graph *upgrade_eval(mb *b)
{
    ir_graph *g = NULL;
    smelt_status st = mb_load(b, NULL, &g);
    if (!st) st = graph_bind_inputs(g, 0, NULL);
    if (!st) st = graph_infer(g, lower_eval_node);
    if (st) {
        fprintf(stderr, "  %s\n", smelt_last_error());
        ir_graph_free(g);
        return NULL;
    }
    return g;
}

static void check_out_f32(const ir_graph *g, int rank, const int64_t *dims, const float *want, int n)
{
    const ir_tensor *y = &g->tensors[g->outputs[0]];
    CHECK_EQ_INT(y->shape.rank, rank);
    for (int i = 0; i < rank && i < y->shape.rank; i++) CHECK_EQ_INT(y->shape.dim[i], dims[i]);
    CHECK(y->data != NULL);
    for (int i = 0; y->data && i < n; i++) CHECK_NEAR(((const float *)y->data)[i], want[i], 1e-6);
}

static const int64_t D2x3x2[] = {2, 3, 2};
static const float A12[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};

TEST(onnx_upgrade_broadcast_axis)
{
    /* opset 6 Add, broadcast=1 axis=1: B [3] aligns with A's dim 1 (numpy would align it with dim 2). */
    static const float bv[3] = {100, 200, 300};
    mb b;
    mb_init(&b, 6);
    init_f32(&b, "a", 3, D2x3x2, A12, 12);
    init_f32(&b, "b", 1, D3, bv, 3);
    Onnx__NodeProto *n = node_new(&b.g, "Add", "add", "a,b", "y");
    pb_attr_int(n, "broadcast", 1);
    pb_attr_int(n, "axis", 1);
    mb_output(&b, "y");
    ir_graph *g = upgrade_eval(&b);
    CHECK(g != NULL);
    if (g) {
        CHECK_EQ_INT(g->opset, ONNX_OPSET_NATIVE);
        const float want[12] = {100, 101, 202, 203, 304, 305, 106, 107, 208, 209, 310, 311};
        check_out_f32(g, 3, D2x3x2, want, 12);
        ir_graph_free(g);
    }
    pool_free();

    /* Ranks known at import (a graph input, a constant): one Reshape of B to [0, 1]. */
    mb_init(&b, 6);
    mb_input(&b, "a", SMELT_F32, 3, D2x3x2);
    init_f32(&b, "b", 1, D3, bv, 3);
    n = node_new(&b.g, "Add", "add", "a,b", "y");
    pb_attr_int(n, "broadcast", 1);
    pb_attr_int(n, "axis", 1);
    mb_output(&b, "y");
    CHECK_EQ_INT(mb_load(&b, NULL, &g), SMELT_OK);
    if (g) {
        CHECK_EQ_INT(g->n_nodes, 2);
        CHECK(g->nodes[0].op == OP_Reshape && g->nodes[1].op == OP_Add);
        const ir_tensor *shape = ir_in(g, &g->nodes[0], 1);
        CHECK(shape && shape->data && shape->shape.dim[0] == 2);
        if (shape && shape->data) CHECK(((int64_t *)shape->data)[0] == 0 && ((int64_t *)shape->data)[1] == 1);
        ir_graph_free(g);
    }
    pool_free();

    /* A computed by a node (rank unknown at import): shape arithmetic that folds leaves B as a
     * [3,1] operand of the Add. */
    mb_init(&b, 6);
    mb_input(&b, "x", SMELT_F32, 3, D2x3x2);
    init_f32(&b, "b", 1, D3, bv, 3);
    node_new(&b.g, "Relu", "relu", "x", "a");
    n = node_new(&b.g, "Add", "add", "a,b", "y");
    pb_attr_int(n, "broadcast", 1);
    pb_attr_int(n, "axis", 1);
    mb_output(&b, "y");
    CHECK_EQ_INT(mb_load(&b, NULL, &g), SMELT_OK);
    if (g) {
        CHECK(g->n_nodes > 3);
        const ir_node *add = &g->nodes[g->n_nodes - 1];
        CHECK(add->op == OP_Add && strcmp(add->name, "add") == 0 && add->n_attr == 0);
        CHECK_EQ_INT(g->tensors[add->out[0]].producer, g->n_nodes - 1);
        CHECK_EQ_INT(ir_verify(g), SMELT_OK);
        CHECK_EQ_INT(graph_bind_inputs(g, 0, NULL), SMELT_OK);
        CHECK_EQ_INT(graph_infer(g, lower_eval_node), SMELT_OK);
        const ir_tensor *bb = &g->tensors[g->nodes[g->n_nodes - 1].in[1]];
        CHECK(bb->shape.rank == 2 && bb->shape.dim[0] == 3 && bb->shape.dim[1] == 1);
        const ir_tensor *y = &g->tensors[g->outputs[0]];
        CHECK(y->shape.rank == 3 && y->shape.dim[1] == 3 && y->shape.dim[2] == 2);
        ir_graph_free(g);
    }
    pool_free();
}

TEST(onnx_upgrade_broadcast_suffix_and_consumed_inputs)
{
    /* opset 1 Mul with broadcast=1 and no axis: suffix matching; consumed_inputs dropped. */
    static const float bv[2] = {10, -1};
    static const int64_t consumed[2] = {0, 0}, D2[] = {2};
    mb b;
    mb_init(&b, 1);
    init_f32(&b, "a", 3, D2x3x2, A12, 12);
    init_f32(&b, "b", 1, D2, bv, 2);
    Onnx__NodeProto *n = node_new(&b.g, "Mul", "mul", "a,b", "y");
    pb_attr_int(n, "broadcast", 1);
    pb_attr_ints(n, "consumed_inputs", 2, consumed);
    mb_output(&b, "y");
    ir_graph *g;
    CHECK_EQ_INT(mb_load(&b, NULL, &g), SMELT_OK);
    if (g) {
        CHECK_EQ_INT(g->n_nodes, 1);
        CHECK_EQ_INT(g->nodes[0].n_attr, 0);
        ir_graph_free(g);
    }
    g = upgrade_eval(&b);
    CHECK(g != NULL);
    if (g) {
        const float want[12] = {0, -1, 20, -3, 40, -5, 60, -7, 80, -9, 100, -11};
        check_out_f32(g, 3, D2x3x2, want, 12);
        ir_graph_free(g);
    }
    pool_free();
}

TEST(onnx_upgrade_broadcast_bad_axis)
{
    mb b;
    mb_init(&b, 6);
    mb_input(&b, "a", SMELT_F32, 3, D2x3x2);
    mb_input(&b, "b", SMELT_F32, 1, D3);
    Onnx__NodeProto *n = node_new(&b.g, "Sub", "sub", "a,b", "y");
    pb_attr_int(n, "broadcast", 1);
    pb_attr_int(n, "axis", -2);
    mb_output(&b, "y");
    check_error(&b, SMELT_ERR_MODEL, "node 'sub' (Sub): broadcast axis", "(opset 6)");

    mb_init(&b, 6);
    mb_input(&b, "a", SMELT_F32, 3, D2x3x2);
    mb_input(&b, "b", SMELT_F32, 2, D2x3);
    n = node_new(&b.g, "Sub", "sub", "a,b", "y");
    pb_attr_int(n, "broadcast", 1);
    pb_attr_int(n, "axis", 2);
    mb_output(&b, "y");
    check_error(&b, SMELT_ERR_SHAPE, "node 'sub' (Sub): B of rank 2 does not fit A of rank 3", "axis 2");
}

TEST(onnx_upgrade_refuses_training_batchnorm)
{
    static const float one3[3] = {1, 1, 1};
    mb b;
    mb_init(&b, 6);
    mb_input(&b, "x", SMELT_F32, 3, D2x3x2);
    init_f32(&b, "s", 1, D3, one3, 3);
    node_new(&b.g, "BatchNormalization", "bn", "x,s,s,s,s", "y,mean,var,sm,sv"); /* is_test defaults to 0 */
    mb_output(&b, "y");
    check_error(&b, SMELT_ERR_UNSUPPORTED, "node 'bn' (BatchNormalization): training mode", "(opset 6)");
}

TEST(onnx_upgrade_prelu_per_channel)
{
    /* PRelu 6: slope [C] applies along dim 1. */
    static const float xv[12] = {-1, -2, -3, -4, -5, -6, 1, -1, 2, -2, 3, -3}, sv[3] = {0.5f, 2, -1};
    mb b;
    mb_init(&b, 6);
    init_f32(&b, "x", 3, D2x3x2, xv, 12);
    init_f32(&b, "s", 1, D3, sv, 3);
    node_new(&b.g, "PRelu", "pr", "x,s", "y");
    mb_output(&b, "y");
    ir_graph *g = upgrade_eval(&b);
    CHECK(g != NULL);
    if (g) {
        const float want[12] = {-0.5f, -1, -6, -8, 5, 6, 1, -0.5f, 2, -4, 3, 3};
        check_out_f32(g, 3, D2x3x2, want, 12);
        ir_graph_free(g);
    }
    pool_free();
}

TEST(onnx_upgrade_attributes_to_opset7)
{
    /* Reshape 4 (shape attribute) -> Concat 3 (default axis 1) -> Pad 1 (paddings). */
    static const int64_t shape[2] = {3, 2}, pads[4] = {0, 1, 0, 0}, D3x2[] = {3, 2};
    static const float one6[6] = {1, 1, 1, 1, 1, 1};
    mb b;
    mb_init(&b, 1);
    init_f32(&b, "a", 1, (const int64_t[]){6}, A12, 6);
    init_f32(&b, "c", 2, D3x2, one6, 6);
    pb_attr_ints(node_new(&b.g, "Reshape", "rs", "a", "r"), "shape", 2, shape);
    node_new(&b.g, "Concat", "cat", "r,c", "k");
    Onnx__NodeProto *n = node_new(&b.g, "Pad", "pad", "k", "y");
    pb_attr_ints(n, "paddings", 4, pads);
    pb_attr_float(n, "value", 9);
    mb_output(&b, "y");
    ir_graph *g = upgrade_eval(&b);
    CHECK(g != NULL);
    if (g) {
        const float want[15] = {9, 0, 1, 1, 1, 9, 2, 3, 1, 1, 9, 4, 5, 1, 1};
        check_out_f32(g, 2, (const int64_t[]){3, 5}, want, 15);
        ir_graph_free(g);
    }
    pool_free();
}

TEST(onnx_upgrade_cast_tile_selu_upsample)
{
    /* Cast 5 names its type; Tile 5 takes (input, tiles, axis). */
    static const float xv[3] = {1.7f, -2.2f, 3};
    static const int64_t tiles = 2, axis = 1, D1x3[] = {1, 3};
    mb b;
    mb_init(&b, 5);
    init_f32(&b, "x", 2, D1x3, xv, 3);
    APPEND(b.g.initializer, b.g.n_initializer, tensor_raw("tiles", SMELT_I64, 0, NULL, &tiles, 8));
    APPEND(b.g.initializer, b.g.n_initializer, tensor_raw("axis", SMELT_I64, 0, NULL, &axis, 8));
    pb_attr_str(node_new(&b.g, "Cast", "cast", "x", "xi"), "to", "INT32");
    node_new(&b.g, "Tile", "tile", "xi,tiles,axis", "y");
    mb_output(&b, "y");
    ir_graph *g = upgrade_eval(&b);
    CHECK(g != NULL);
    if (g) {
        const ir_tensor *y = &g->tensors[g->outputs[0]];
        CHECK(y->dtype == SMELT_I32 && y->shape.rank == 2 && y->shape.dim[0] == 1 && y->shape.dim[1] == 6);
        const int32_t want[6] = {1, -2, 3, 1, -2, 3};
        for (int i = 0; y->data && i < 6; i++) CHECK_EQ_INT(((const int32_t *)y->data)[i], want[i]);
        ir_graph_free(g);
    }
    pool_free();

    mb_init(&b, 5);
    mb_input(&b, "x", SMELT_F32, 1, D3);
    pb_attr_str(node_new(&b.g, "Cast", "cast", "x", "y"), "to", "QUATERNION");
    mb_output(&b, "y");
    check_error(&b, SMELT_ERR_UNSUPPORTED, "node 'cast' (Cast)", "'QUATERNION'");

    /* Selu 1's defaults were 1.6732 and 1.0507; Upsample 1 scales H and W. */
    static const float sv[2] = {-1, 2}, uv[4] = {1, 2, 3, 4};
    static const int64_t D2[] = {2}, D1x1x2x2[] = {1, 1, 2, 2};
    mb_init(&b, 1);
    init_f32(&b, "s", 1, D2, sv, 2);
    node_new(&b.g, "Selu", "selu", "s", "y");
    mb_output(&b, "y");
    g = upgrade_eval(&b);
    CHECK(g != NULL);
    if (g) {
        const float want[2] = {1.0507f * 1.6732f * (expf(-1) - 1), 1.0507f * 2};
        check_out_f32(g, 1, D2, want, 2);
        ir_graph_free(g);
    }
    pool_free();

    mb_init(&b, 1);
    init_f32(&b, "u", 4, D1x1x2x2, uv, 4);
    Onnx__NodeProto *n = node_new(&b.g, "Upsample", "up", "u", "y");
    pb_attr_float(n, "height_scale", 2);
    pb_attr_float(n, "width_scale", 1);
    mb_output(&b, "y");
    g = upgrade_eval(&b);
    CHECK(g != NULL);
    if (g) {
        const float want[8] = {1, 2, 1, 2, 3, 4, 3, 4};
        check_out_f32(g, 4, (const int64_t[]){1, 1, 4, 2}, want, 8);
        ir_graph_free(g);
    }
    pool_free();
}

TEST(onnx_import_unknown_dims)
{
    /* dim_value -1 (older exporters) and a dim with no value are unknown; 0 stays 0. */
    const int64_t dx[] = {-1, 0, 3};
    mb b;
    mb_init(&b, 13);
    Onnx__ValueInfoProto *v = value_info("x", SMELT_F32, 3, dx, NULL);
    v->type->tensor_type->shape->dim[0]->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
    v->type->tensor_type->shape->dim[0]->dim_value = -1;
    APPEND(b.g.input, b.g.n_input, v);
    mb_input(&b, "z", SMELT_F32, 1, (const int64_t[]){-1}); /* no dim_value, no dim_param */
    node_new(&b.g, "Relu", "r", "x", "y");
    mb_output(&b, "y");
    ir_graph *g;
    CHECK_EQ_INT(mb_load(&b, NULL, &g), SMELT_OK);
    if (g) {
        const ir_tensor *x = &g->tensors[g->inputs[0]];
        CHECK(x->shape.dim[0] == -1 && x->dim_param[0] == NULL);
        CHECK_EQ_INT(x->shape.dim[1], 0);
        CHECK_EQ_INT(x->shape.dim[2], 3);
        CHECK_EQ_INT(g->tensors[g->inputs[1]].shape.dim[0], -1);
        CHECK_EQ_INT(graph_bind_inputs(g, 0, NULL), SMELT_ERR_SHAPE);
        CHECK_STR_HAS(smelt_last_error(), "input 'x' has unknown dim 0");
        CHECK_STR_HAS(smelt_last_error(), "--shape x=");
        ir_graph_free(g);
    }
    CHECK_EQ_INT(mb_load(&b, NULL, &g), SMELT_OK);
    if (g) {
        int64_t xs[3] = {4, 0, 3}, zs[1] = {5};
        smelt_tensor in[2] = {{.name = "x", .dtype = SMELT_F32, .rank = 3}, {.name = "z", .dtype = SMELT_F32, .rank = 1}};
        memcpy(in[0].shape, xs, sizeof xs);
        memcpy(in[1].shape, zs, sizeof zs);
        CHECK_EQ_INT(graph_bind_inputs(g, 2, in), SMELT_OK);
        CHECK_EQ_INT(g->tensors[g->inputs[0]].shape.dim[0], 4);
        CHECK_EQ_INT(g->tensors[g->inputs[1]].shape.dim[0], 5);
        in[0].shape[1] = 2; /* a declared 0 is a size, not a wildcard */
        ir_graph_free(g);
        CHECK_EQ_INT(mb_load(&b, NULL, &g), SMELT_OK);
        if (g) CHECK_EQ_INT(graph_bind_inputs(g, 2, in), SMELT_ERR_SHAPE);
        ir_graph_free(g);
    }
    pool_free();
}

TEST(onnx_opset7_dropout_mask_has_the_input_type)
{
    /* Dropout 7..9: mask of type T (float here), from 10 bool; ones in inference either way. */
    static const float xv[3] = {1, -2, 3};
    for (int opset = 7; opset <= 10; opset += 3) {
        mb b;
        mb_init(&b, opset);
        init_f32(&b, "x", 1, D3, xv, 3);
        node_new(&b.g, "Dropout", "drop", "x", "y,mask");
        mb_output(&b, "mask");
        ir_graph *g = upgrade_eval(&b);
        CHECK(g != NULL);
        if (g) {
            const ir_tensor *m = &g->tensors[g->outputs[0]];
            CHECK_EQ_INT(m->dtype, opset < 10 ? SMELT_F32 : SMELT_BOOL);
            for (int i = 0; m->data && i < 3; i++)
                CHECK(opset < 10 ? ((const float *)m->data)[i] == 1 : ((const uint8_t *)m->data)[i] == 1);
            ir_graph_free(g);
        }
        pool_free();
    }
}

TEST(onnx_experimental_ops_expand_before_opset_10)
{
    /* Affine 8: 2x - 1 on constants folds to values; ImageScaler without bias is refused by
     * name; from opset 10 the experimental ops are unknown. */
    static const float xv[3] = {0, 1, 2};
    mb b;
    mb_init(&b, 8);
    init_f32(&b, "x", 1, D3, xv, 3);
    Onnx__NodeProto *n = node_new(&b.g, "Affine", "aff", "x", "y");
    pb_attr_float(n, "alpha", 2);
    pb_attr_float(n, "beta", -1);
    mb_output(&b, "y");
    ir_graph *g = upgrade_eval(&b);
    CHECK(g != NULL);
    if (g) {
        const float want[3] = {-1, 1, 3};
        check_out_f32(g, 1, D3, want, 3);
        ir_graph_free(g);
    }
    pool_free();

    mb_init(&b, 8);
    mb_input(&b, "x", SMELT_F32, 3, D2x3x2);
    pb_attr_float(node_new(&b.g, "ImageScaler", "is", "x", "y"), "scale", 2);
    mb_output(&b, "y");
    check_error(&b, SMELT_ERR_MODEL, "node 'is' (ImageScaler): attribute 'bias'", "experimental");

    mb_init(&b, 10);
    mb_input(&b, "x", SMELT_F32, 1, D3);
    node_new(&b.g, "Affine", "aff", "x", "y");
    mb_output(&b, "y");
    check_error(&b, SMELT_ERR_UNSUPPORTED, "node 'aff' (Affine): unsupported op type 'Affine'", NULL);
}
