/* test_onnx_errors.c — the importer on hostile and malformed models: garbage,
 * truncation, deep nesting, unknown, internal and foreign ops, bad opsets,
 * dtypes and data sizes, dangling tensors: each a clean error naming the rule. */
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

/* ---- errors -------------------------------------------------------------- */

TEST(onnx_import_rejects_garbage)
{
    static const uint8_t junk[] = {0xff, 0xff, 0xff, 0xff, 0x0f, 0x12, 0x99, 0x01};
    ir_graph *g = (ir_graph *)1;
    CHECK_EQ_INT(onnx_load_memory(junk, sizeof junk, NULL, &g), SMELT_ERR_MODEL);
    CHECK(g == NULL);
    CHECK_STR_HAS(smelt_last_error(), "not a valid ONNX model");
    CHECK_EQ_INT(onnx_load_memory("", 0, NULL, &g), SMELT_ERR_MODEL);
    CHECK_STR_HAS(smelt_last_error(), "no graph");
    CHECK_EQ_INT(onnx_load_file("/nonexistent/model.onnx", &g), SMELT_ERR_IO);
}

/* Every prefix and many single-byte corruptions of a valid model must fail
 * cleanly or load, never crash (run under ASan to mean something). */
TEST(onnx_import_survives_truncation_and_corruption)
{
    mb b;
    mb_init(&b, 13);
    static const float w[6] = {1, 2, 3, 4, 5, 6};
    APPEND(b.g.initializer, b.g.n_initializer, tensor_raw("w", SMELT_F32, 2, D2x3, w, sizeof w));
    mb_input(&b, "x", SMELT_F32, 2, D2x3);
    Onnx__NodeProto *n = node_new(&b.g, "Add", "add", "x,w", "y");
    pb_attr_int(n, "dummy", 1);
    node_new(&b.g, "Relu", "relu", "y", "z");
    mb_output(&b, "z");
    size_t size;
    uint8_t *buf = mb_pack(&b, &size);
    uint8_t *copy = malloc(size);
    int ok = 0;
    for (size_t len = 0; len < size; len++) {
        ir_graph *g;
        if (onnx_load_memory(buf, len, NULL, &g) == SMELT_OK) ok++;
        ir_graph_free(g);
    }
    uint32_t seed = 12345;
    for (int iter = 0; iter < 3000; iter++) {
        memcpy(copy, buf, size);
        for (int k = 0; k < 3; k++) {
            seed = seed * 1103515245u + 12345u;
            copy[(seed >> 8) % size] = (uint8_t)(seed >> 24);
        }
        ir_graph *g;
        if (onnx_load_memory(copy, size, NULL, &g) == SMELT_OK) ir_graph_free(g);
    }
    ir_graph *g;
    CHECK_EQ_INT(onnx_load_memory(buf, size, NULL, &g), SMELT_OK);
    ir_graph_free(g);
    CHECK(ok < (int)size);
    free(copy);
    pool_free();
}

TEST(onnx_import_rejects_deep_nesting)
{
    mb b;
    mb_init(&b, 13);
    Onnx__GraphProto *outer = &b.g;
    for (int i = 0; i < 60; i++) {
        Onnx__NodeProto *n = node_new(outer, "If", "if", "", "");
        Onnx__GraphProto *sub = palloc(sizeof *sub);
        onnx__graph_proto__init(sub);
        pb_attr_new(n, "then_branch", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH)->g = sub;
        outer = sub;
    }
    ir_graph *g;
    CHECK_EQ_INT(mb_load(&b, NULL, &g), SMELT_ERR_MODEL);
    CHECK_STR_HAS(smelt_last_error(), "nest deeper");
    pool_free();
}

TEST(onnx_import_rejects_unknown_op)
{
    mb b;
    mb_init(&b, 13);
    mb_input(&b, "x", SMELT_F32, 1, D3);
    node_new(&b.g, "FooBar", "n1", "x", "y");
    mb_output(&b, "y");
    check_error(&b, SMELT_ERR_UNSUPPORTED, "node 'n1' (FooBar): unsupported op type 'FooBar'", NULL);
}

/* smelt's internal ops (packed recurrent forms, the table op behind com.microsoft
 * DynamicQuantizeLSTM) are not ONNX ops: a model naming one in the default domain is refused. */
TEST(onnx_import_rejects_internal_ops)
{
    static const char *const ops[] = {"PackedLSTM", "PackedGRU", "PackedRNN", "DynamicQuantizeLSTM"};
    for (int i = 0; i < 4; i++) {
        mb b;
        mb_init(&b, 13);
        mb_input(&b, "x", SMELT_F32, 1, D3);
        node_new(&b.g, ops[i], "n1", "x,x,x", "y");
        mb_output(&b, "y");
        check_error(&b, SMELT_ERR_UNSUPPORTED, "node 'n1'", "not an ONNX op");
    }
}

TEST(onnx_import_rejects_foreign_domain)
{
    mb b;
    mb_init(&b, 13);
    mb_input(&b, "x", SMELT_F32, 1, D3);
    node_new(&b.g, "FusedGemm", "fg", "x", "y")->domain = "com.microsoft";
    mb_output(&b, "y");
    check_error(&b, SMELT_ERR_UNSUPPORTED, "node 'fg' (FusedGemm)", "'com.microsoft'");
}

/* com.microsoft ops smelt implements import as table ops writing the node's outputs. */
TEST(onnx_import_expands_contrib_and_integer_ops)
{
    mb b;
    mb_init(&b, 13);
    mb_input(&b, "x", SMELT_F32, 1, D3);
    mb_input(&b, "skip", SMELT_F32, 1, D3);
    mb_input(&b, "gamma", SMELT_F32, 1, D3);
    node_new(&b.g, "Gelu", "g", "x", "y")->domain = "com.microsoft";
    node_new(&b.g, "SkipLayerNormalization", "sln", "y,skip,gamma", "z,,,sum")->domain = "com.microsoft";
    node_new(&b.g, "DynamicQuantizeLinear", "dql", "z", "q,qs,qz");
    mb_output(&b, "sum");
    mb_output(&b, "q");
    ir_graph *g;
    CHECK_EQ_INT(mb_load(&b, NULL, &g), SMELT_OK);
    if (g) {
        int ops[OP_COUNT] = {0};
        for (int i = 0; i < g->n_nodes; i++) ops[g->nodes[i].op]++;
        CHECK_EQ_INT(ops[OP_Gelu], 1);
        CHECK_EQ_INT(ops[OP_LayerNormalization], 1);
        CHECK_EQ_INT(ops[OP_QuantizeLinear], 2);
        CHECK_EQ_INT(ops[OP_ReduceMin], 1);
        int sum = tensor_named(g, "sum"), q = tensor_named(g, "q");
        CHECK(sum >= 0 && g->tensors[sum].producer >= 0 && g->nodes[g->tensors[sum].producer].op == OP_Identity);
        CHECK(q >= 0 && g->tensors[q].producer >= 0 && g->nodes[g->tensors[q].producer].op == OP_QuantizeLinear);
        ir_graph_free(g);
    }
    pool_free();
}

TEST(onnx_import_rejects_bad_integer_ops)
{
    mb b;
    mb_init(&b, 13);
    mb_input(&b, "a", SMELT_F32, 1, D3);
    mb_input(&b, "b", SMELT_U8, 1, D3);
    node_new(&b.g, "MatMulInteger", "mmi", "a,b", "y");
    mb_output(&b, "y");
    check_error(&b, SMELT_ERR_MODEL, "node 'mmi' (MatMulInteger): A must be int8 or uint8, not float32", NULL);
    mb_init(&b, 13);
    mb_input(&b, "x", SMELT_F32, 1, D3);
    Onnx__NodeProto *n = node_new(&b.g, "FusedConv", "fc", "x,x", "y");
    n->domain = "com.microsoft";
    Onnx__AttributeProto *a = pb_attr_new(n, "activation", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    a->has_s = 1, a->s.data = (uint8_t *)"Softmax";
    a->s.len = 7;
    mb_output(&b, "y");
    check_error(&b, SMELT_ERR_UNSUPPORTED, "node 'fc' (FusedConv, domain com.microsoft): activation 'Softmax'", NULL);
    mb_init(&b, 13);
    mb_input(&b, "x", SMELT_U8, 1, D3);
    node_new(&b.g, "QLinearMatMul", "ql", "x,,x,x,x,x,x,x", "y");
    mb_output(&b, "y");
    check_error(&b, SMELT_ERR_MODEL, "node 'ql' (QLinearMatMul): input 1 (a scale or zero point) is required", NULL);
    mb_init(&b, 13);
    mb_input(&b, "x", SMELT_F32, 1, D3);
    node_new(&b.g, "BiasGelu", "bg", "x", "y")->domain = "com.microsoft";
    mb_output(&b, "y");
    check_error(&b, SMELT_ERR_MODEL, "node 'bg' (BiasGelu, domain com.microsoft): 1 inputs and 1 outputs, but the op takes 2..2",
                NULL);
}

TEST(onnx_import_rejects_bad_opset)
{
    mb b;
    mb_init(&b, 0);
    mb_input(&b, "x", SMELT_F32, 1, D3);
    node_new(&b.g, "Relu", "r", "x", "y");
    mb_output(&b, "y");
    check_error(&b, SMELT_ERR_UNSUPPORTED, "opset 0", "1..27");
    mb_init(&b, 28);
    check_error(&b, SMELT_ERR_UNSUPPORTED, "opset 28", NULL);
    mb_init(&b, 27);
    b.opset.domain = "ai.onnx.ml";
    mb_input(&b, "x", SMELT_F32, 1, D3);
    node_new(&b.g, "Relu", "r", "x", "y");
    mb_output(&b, "y");
    check_error(&b, SMELT_ERR_UNSUPPORTED, "node 'r' (Relu): the model imports no opset of the default", NULL);
}

TEST(onnx_import_rejects_unsupported_dtypes)
{
    mb b;
    mb_init(&b, 13);
    mb_input(&b, "half", (smelt_dtype)17, 1, D3);
    mb_output(&b, "half");
    check_error(&b, SMELT_ERR_UNSUPPORTED, "'half'", "float8e4m3fn");

    mb_init(&b, 13);
    static const uint16_t bf[3];
    APPEND(b.g.initializer, b.g.n_initializer, tensor_raw("wbf", 14, 1, D3, bf, sizeof bf));
    check_error(&b, SMELT_ERR_UNSUPPORTED, "initializer 'wbf'", "complex64");

    mb_init(&b, 13);
    Onnx__AttributeProto *a = pb_attr_new(node_new(&b.g, "Constant", "cs", "", "s"), "value_string",
                                       ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    a->has_s = 1;
    mb_output(&b, "s");
    check_error(&b, SMELT_ERR_UNSUPPORTED, "node 'cs' (Constant)", "value_string");

    mb_init(&b, 13);
    Onnx__NodeProto *n = node_new(&b.g, "Constant", "c8", "", "s");
    pb_attr_new(n, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR)->t = tensor_raw("", 17, 1, D3, bf, 3);
    mb_output(&b, "s");
    check_error(&b, SMELT_ERR_UNSUPPORTED, "node 'c8' (Constant)", "float8e4m3fn");
}

TEST(onnx_import_rejects_bad_data_sizes)
{
    mb b;
    mb_init(&b, 13);
    static const float w[5];
    APPEND(b.g.initializer, b.g.n_initializer, tensor_raw("short_w", SMELT_F32, 2, D2x3, w, sizeof w));
    check_error(&b, SMELT_ERR_MODEL, "initializer 'short_w'", "raw_data holds 20 bytes");

    mb_init(&b, 13);
    Onnx__TensorProto *t = tensor_raw("typed", SMELT_I64, 1, D3, NULL, 0);
    static int64_t two[2];
    t->n_int64_data = 2, t->int64_data = two;
    APPEND(b.g.initializer, b.g.n_initializer, t);
    check_error(&b, SMELT_ERR_MODEL, "initializer 'typed'", "int64_data holds 2");

    mb_init(&b, 13);
    static const int64_t neg[] = {-2};
    APPEND(b.g.initializer, b.g.n_initializer, tensor_raw("neg", SMELT_F32, 1, neg, w, sizeof w));
    check_error(&b, SMELT_ERR_MODEL, "initializer 'neg'", "negative");

    mb_init(&b, 13);
    static const int64_t huge[] = {1LL << 40, 1LL << 40};
    APPEND(b.g.initializer, b.g.n_initializer, tensor_raw("huge", SMELT_F32, 2, huge, w, sizeof w));
    check_error(&b, SMELT_ERR_MODEL, "initializer 'huge'", "too large");
}

TEST(onnx_import_rejects_dangling_and_duplicate_tensors)
{
    mb b;
    mb_init(&b, 13);
    mb_input(&b, "x", SMELT_F32, 1, D3);
    node_new(&b.g, "Add", "late", "x,later", "y");
    node_new(&b.g, "Relu", "r", "x", "later");
    mb_output(&b, "y");
    check_error(&b, SMELT_ERR_MODEL, "node 'late' (Add)", "'later' is not defined");

    mb_init(&b, 13);
    mb_input(&b, "x", SMELT_F32, 1, D3);
    node_new(&b.g, "Relu", "r1", "x", "y");
    node_new(&b.g, "Relu", "r2", "x", "y");
    mb_output(&b, "y");
    check_error(&b, SMELT_ERR_MODEL, "node 'r2' (Relu)", "'y' is already defined");

    mb_init(&b, 13);
    mb_input(&b, "x", SMELT_F32, 1, D3);
    node_new(&b.g, "Relu", "r", "x", "y");
    mb_output(&b, "nowhere");
    check_error(&b, SMELT_ERR_MODEL, "graph output 'nowhere'", NULL);

    mb_init(&b, 13);
    mb_input(&b, "x", SMELT_F32, 1, D3);
    node_new(&b.g, "Relu", "r", "x,x", "y");
    mb_output(&b, "y");
    check_error(&b, SMELT_ERR_MODEL, "node 'r' (Relu)", "2 inputs");
}
