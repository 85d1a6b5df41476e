/* test_onnx.c — importing ONNX models built in memory: graphs, initializers,
 * Constant nodes, attributes, optional inputs, model-local functions, and
 * values that decide shapes. Malformed models are in test_onnx_errors.c,
 * weights in files in test_onnx_data.c, old opsets in test_onnx_upgrade.c. */
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

/* ---- importing ----------------------------------------------------------- */

TEST(onnx_import_add_with_symbolic_dims)
{
    mb b;
    mb_init(&b, 13);
    const int64_t dx[] = {-1, 3}, dy[] = {-1, 3};
    const char *px[] = {"N", NULL};
    APPEND(b.g.input, b.g.n_input, value_info("x", SMELT_F32, 2, dx, px));
    mb_input(&b, "y", SMELT_F32, 2, dy);
    node_new(&b.g, "Add", "add0", "x,y", "z");
    node_new(&b.g, "Relu", "", "z", "r");
    mb_output(&b, "r");
    ir_graph *g;
    CHECK_EQ_INT(mb_load(&b, NULL, &g), SMELT_OK);
    if (g) {
        CHECK_EQ_INT(g->opset, 13);
        CHECK_EQ_INT(g->n_inputs, 2);
        CHECK_EQ_INT(g->n_outputs, 1);
        CHECK_EQ_INT(g->n_nodes, 2);
        const ir_tensor *x = &g->tensors[g->inputs[0]], *y = &g->tensors[g->inputs[1]];
        CHECK(strcmp(x->name, "x") == 0 && x->is_input && x->dtype == SMELT_F32);
        CHECK_EQ_INT(x->shape.rank, 2);
        CHECK_EQ_INT(x->shape.dim[0], -1);
        CHECK_EQ_INT(x->shape.dim[1], 3);
        CHECK(x->dim_param[0] && strcmp(x->dim_param[0], "N") == 0);
        CHECK(x->dim_param[1] == NULL);
        CHECK(y->shape.dim[0] == -1 && y->dim_param[0] == NULL);
        CHECK(g->nodes[0].op == OP_Add && strcmp(g->nodes[0].name, "add0") == 0);
        CHECK(g->nodes[1].op == OP_Relu && strcmp(g->nodes[1].name, "Relu_1") == 0);
        const ir_tensor *z = &g->tensors[g->nodes[0].out[0]];
        CHECK(z->dtype == SMELT_UNDEFINED && z->shape.rank == 0 && z->producer == 0);
        CHECK(g->tensors[g->outputs[0]].is_output);
        ir_graph_free(g);
    }
    pool_free();
}

TEST(onnx_import_initializers_raw_and_typed)
{
    mb b;
    mb_init(&b, 17);
    static const float wf[4] = {1, 2, 3, 4};
    Onnx__TensorProto *raw = tensor_raw("w_raw", SMELT_F32, 2, D2x2, wf, sizeof wf);
    Onnx__TensorProto *tf = tensor_raw("w_f", SMELT_F32, 1, D3, NULL, 0);
    static float f3[3] = {0.5f, -1, 7};
    tf->n_float_data = 3, tf->float_data = f3;
    Onnx__TensorProto *ti8 = tensor_raw("w_i8", SMELT_I8, 1, D3, NULL, 0);
    static int32_t i3[3] = {-128, 5, 127};
    ti8->n_int32_data = 3, ti8->int32_data = i3;
    Onnx__TensorProto *tb = tensor_raw("w_b", SMELT_BOOL, 1, D3, NULL, 0);
    static int32_t b3[3] = {1, 0, 1};
    tb->n_int32_data = 3, tb->int32_data = b3;
    Onnx__TensorProto *ti64 = tensor_raw("w_i64", SMELT_I64, 0, NULL, NULL, 0);
    static int64_t i1[1] = {-5000000000LL};
    ti64->n_int64_data = 1, ti64->int64_data = i1;
    Onnx__TensorProto *tu32 = tensor_raw("w_u32", SMELT_U32, 1, D3, NULL, 0);
    static uint64_t u3[3] = {0, 4000000000u, 7};
    tu32->n_uint64_data = 3, tu32->uint64_data = u3;
    Onnx__TensorProto *td = tensor_raw("w_f64", SMELT_F64, 1, D3, NULL, 0);
    static double d3[3] = {1e300, 2, -3};
    td->n_double_data = 3, td->double_data = d3;
    Onnx__TensorProto *tu16 = tensor_raw("w_u16", SMELT_U16, 1, D3, NULL, 0);
    static int32_t u16[3] = {65535, 1, 2};
    tu16->n_int32_data = 3, tu16->int32_data = u16;
    Onnx__TensorProto *all[] = {raw, tf, ti8, tb, ti64, tu32, td, tu16};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) APPEND(b.g.initializer, b.g.n_initializer, all[i]);
    /* An input that is also an initializer is a constant. */
    mb_input(&b, "w_raw", SMELT_F32, 2, D2x2);
    mb_input(&b, "x", SMELT_F32, 2, D2x2);
    node_new(&b.g, "Add", "a", "x,w_raw", "y");
    mb_output(&b, "y");
    ir_graph *g;
    CHECK_EQ_INT(mb_load(&b, NULL, &g), SMELT_OK);
    if (g) {
        CHECK_EQ_INT(g->n_inputs, 1);
        CHECK(strcmp(g->tensors[g->inputs[0]].name, "x") == 0);
        const ir_tensor *w = &g->tensors[tensor_named(g, "w_raw")];
        CHECK(w->data && !w->is_input && w->producer == -1 && w->shape.rank == 2);
        CHECK_NEAR(ir_const_double(w, 3), 4, 0);
        const ir_tensor *t = &g->tensors[tensor_named(g, "w_f")];
        CHECK_NEAR(ir_const_double(t, 0), 0.5, 0);
        t = &g->tensors[tensor_named(g, "w_i8")];
        CHECK(t->dtype == SMELT_I8 && ir_const_int(t, 0) == -128 && ir_const_int(t, 2) == 127);
        t = &g->tensors[tensor_named(g, "w_b")];
        CHECK(t->dtype == SMELT_BOOL && ir_const_int(t, 0) == 1 && ir_const_int(t, 1) == 0);
        t = &g->tensors[tensor_named(g, "w_i64")];
        CHECK(t->shape.rank == 0 && ir_const_int(t, 0) == -5000000000LL);
        t = &g->tensors[tensor_named(g, "w_u32")];
        CHECK(t->dtype == SMELT_U32 && ir_const_int(t, 1) == 4000000000LL);
        t = &g->tensors[tensor_named(g, "w_f64")];
        CHECK_NEAR(ir_const_double(t, 0), 1e300, 0);
        t = &g->tensors[tensor_named(g, "w_u16")];
        CHECK_EQ_INT(ir_const_int(t, 0), 65535);
        ir_graph_free(g);
    }
    pool_free();
}

TEST(onnx_import_constant_nodes_fold)
{
    mb b;
    mb_init(&b, 13);
    static const int32_t v[3] = {1, 2, 3};
    Onnx__NodeProto *c = node_new(&b.g, "Constant", "c_tensor", "", "ct");
    pb_attr_new(c, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR)->t =
        tensor_raw("", SMELT_I32, 1, D3, v, sizeof v);
    pb_attr_float(node_new(&b.g, "Constant", "c_f", "", "cf"), "value_float", 2.5f);
    pb_attr_int(node_new(&b.g, "Constant", "c_i", "", "ci"), "value_int", -7);
    Onnx__AttributeProto *a = pb_attr_new(node_new(&b.g, "Constant", "c_fs", "", "cfs"), "value_floats",
                                       ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
    static float fs[2] = {1.5f, 3};
    a->n_floats = 2, a->floats = fs;
    a = pb_attr_new(node_new(&b.g, "Constant", "c_is", "", "cis"), "value_ints", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    static int64_t is[3] = {4, 5, 6};
    a->n_ints = 3, a->ints = is;
    node_new(&b.g, "Add", "sum", "ct,ci", "y");
    mb_output(&b, "y");
    mb_output(&b, "cfs");
    ir_graph *g;
    CHECK_EQ_INT(mb_load(&b, NULL, &g), SMELT_OK);
    if (g) {
        CHECK_EQ_INT(g->n_nodes, 1);
        CHECK_EQ_INT(g->n_inputs, 0);
        const ir_tensor *t = &g->tensors[tensor_named(g, "ct")];
        CHECK(t->data && t->dtype == SMELT_I32 && t->shape.rank == 1 && ir_const_int(t, 2) == 3);
        t = &g->tensors[tensor_named(g, "cf")];
        CHECK(t->dtype == SMELT_F32 && t->shape.rank == 0);
        CHECK_NEAR(ir_const_double(t, 0), 2.5, 0);
        t = &g->tensors[tensor_named(g, "ci")];
        CHECK(t->dtype == SMELT_I64 && t->shape.rank == 0 && ir_const_int(t, 0) == -7);
        t = &g->tensors[tensor_named(g, "cfs")];
        CHECK(t->dtype == SMELT_F32 && t->shape.rank == 1 && t->shape.dim[0] == 2 && t->is_output);
        t = &g->tensors[tensor_named(g, "cis")];
        CHECK(t->dtype == SMELT_I64 && t->shape.dim[0] == 3 && ir_const_int(t, 1) == 5);
        ir_graph_free(g);
    }
    pool_free();
}

TEST(onnx_import_attributes)
{
    mb b;
    mb_init(&b, 13);
    mb_input(&b, "x", SMELT_F32, 2, D2x3);
    Onnx__NodeProto *n = node_new(&b.g, "Transpose", "t", "x", "y");
    pb_attr_int(n, "i", 42);
    pb_attr_float(n, "f", 0.25f);
    Onnx__AttributeProto *a = pb_attr_new(n, "s", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    a->has_s = 1, a->s.data = (uint8_t *)"NOTSET", a->s.len = 6;
    a = pb_attr_new(n, "is", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    static int64_t perm[2] = {1, 0};
    a->n_ints = 2, a->ints = perm;
    a = pb_attr_new(n, "fs", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
    static float fl[3] = {1, 2, 3};
    a->n_floats = 3, a->floats = fl;
    a = pb_attr_new(n, "ss", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS);
    static ProtobufCBinaryData strs[2] = {{2, (uint8_t *)"ab"}, {0, NULL}};
    a->n_strings = 2, a->strings = strs;
    static const float tv[3] = {9, 8, 7};
    pb_attr_new(n, "t", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR)->t = tensor_raw("", SMELT_F32, 1, D3, tv, sizeof tv);
    a = pb_attr_new(n, "g", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
    Onnx__GraphProto *sub = palloc(sizeof *sub);
    onnx__graph_proto__init(sub);
    a->g = sub;
    a = pb_attr_new(n, "old_style", 0); /* pre-IR-v4 models leave the type out */
    a->has_i = 1, a->i = 3;
    mb_output(&b, "y");
    ir_graph *g;
    CHECK_EQ_INT(mb_load(&b, NULL, &g), SMELT_OK);
    if (g) {
        const ir_node *nd = &g->nodes[0];
        CHECK_EQ_INT(nd->n_attr, 9);
        CHECK_EQ_INT(ir_attr_int(nd, "i", 0), 42);
        CHECK_NEAR(ir_attr_float(nd, "f", 0), 0.25, 0);
        CHECK(strcmp(ir_attr_string(nd, "s", ""), "NOTSET") == 0);
        const int64_t *p;
        CHECK_EQ_INT(ir_attr_ints(nd, "is", &p), 2);
        CHECK_EQ_INT(p[0], 1);
        const float *fp;
        CHECK_EQ_INT(ir_attr_floats(nd, "fs", &fp), 3);
        CHECK_NEAR(fp[2], 3, 0);
        const ir_attr *sa = ir_attr_find(nd, "ss");
        CHECK(sa && sa->type == IR_ATTR_STRINGS && sa->n == 2 && !strcmp(sa->strings[0], "ab") && !*sa->strings[1]);
        const ir_attr *ta = ir_attr_find(nd, "t");
        CHECK(ta && ta->type == IR_ATTR_TENSOR && ta->tensor >= 0);
        if (ta && ta->tensor >= 0) {
            const ir_tensor *t = &g->tensors[ta->tensor];
            CHECK(t->data && t->shape.dim[0] == 3);
            CHECK_NEAR(ir_const_double(t, 0), 9, 0);
        }
        CHECK(ir_attr_find(nd, "g") && ir_attr_find(nd, "g")->type == IR_ATTR_OTHER);
        CHECK_EQ_INT(ir_attr_int(nd, "old_style", 0), 3);
        ir_graph_free(g);
    }
    pool_free();
}

TEST(onnx_import_optional_inputs_and_outputs)
{
    mb b;
    mb_init(&b, 13);
    mb_input(&b, "x", SMELT_F32, 2, D2x3);
    node_new(&b.g, "Clip", "clip", "x,,", "y");
    node_new(&b.g, "Split", "split", "y", "a,");
    mb_output(&b, "a");
    ir_graph *g;
    CHECK_EQ_INT(mb_load(&b, NULL, &g), SMELT_OK);
    if (g) {
        CHECK_EQ_INT(g->nodes[0].n_in, 3);
        CHECK(g->nodes[0].in[1] == -1 && g->nodes[0].in[2] == -1);
        CHECK_EQ_INT(g->nodes[1].n_out, 2);
        CHECK(g->nodes[1].out[1] >= 0 && g->tensors[g->nodes[1].out[1]].name[0] == 0);
        ir_graph_free(g);
    }
    pool_free();
}

TEST(onnx_import_inlines_functions)
{
    mb b;
    mb_init(&b, 18);
    /* local.Scaled(a, opt) -> y: t = LeakyRelu(a, alpha=@alpha); c = Constant(@beta, default 2.5);
     * u = Mul(t, c); y = local.Pass(u), where Pass returns its input unchanged. */
    Onnx__FunctionProto *f = function_new(&b, "local", "Scaled", "a,opt", "y", "alpha,beta");
    Onnx__NodeProto *n = node_new(NULL, "LeakyRelu", "lr", "a", "t");
    pb_attr_ref(n, "alpha", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT, "alpha");
    function_node(f, n);
    n = node_new(NULL, "Constant", "", "", "c");
    pb_attr_ref(n, "value_float", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT, "beta");
    function_node(f, n);
    function_node(f, node_new(NULL, "Mul", "mul", "t,c", "u"));
    function_node(f, node_new(NULL, "Clip", "clip", "u,opt", "v"));
    n = node_new(NULL, "Pass", "pass", "v", "y");
    n->domain = "local";
    function_node(f, n);
    Onnx__AttributeProto *def = pb_attr_new(NULL, "beta", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    def->has_f = 1, def->f = 2.5f;
    function_default(f, def);
    function_new(&b, "local", "Pass", "p", "p", "");

    Onnx__OperatorSetIdProto *local = palloc(sizeof *local);
    onnx__operator_set_id_proto__init(local);
    local->domain = "local", local->has_version = 1, local->version = 1;
    APPEND(b.m.opset_import, b.m.n_opset_import, local);
    mb_input(&b, "x", SMELT_F32, 2, D2x3);
    n = node_new(&b.g, "Scaled", "s1", "x", "h");
    n->domain = "local";
    pb_attr_float(n, "alpha", 0.1f);
    n = node_new(&b.g, "Scaled", "s2", "h", "out");
    n->domain = "local";
    pb_attr_float(n, "alpha", 0.3f);
    pb_attr_float(n, "beta", 1.0f);
    mb_output(&b, "out");
    ir_graph *g;
    CHECK_EQ_INT(mb_load(&b, NULL, &g), SMELT_OK);
    if (g) {
        /* Per call: LeakyRelu, Mul, Clip, Identity (from Pass). */
        CHECK_EQ_INT(g->n_nodes, 8);
        const ir_node *lr1 = &g->nodes[0], *lr2 = &g->nodes[4];
        CHECK(lr1->op == OP_LeakyRelu && strcmp(lr1->name, "s1/lr") == 0);
        CHECK_NEAR(ir_attr_float(lr1, "alpha", 0), 0.1f, 0);
        CHECK(lr2->op == OP_LeakyRelu && strcmp(lr2->name, "s2/lr") == 0);
        CHECK_NEAR(ir_attr_float(lr2, "alpha", 0), 0.3f, 0);
        CHECK(g->nodes[2].op == OP_Clip && g->nodes[2].in[1] == -1);
        CHECK(g->nodes[3].op == OP_Identity);
        int c1 = tensor_named(g, "s1/c"), c2 = tensor_named(g, "s2/c");
        CHECK(c1 >= 0 && c2 >= 0);
        if (c1 >= 0 && c2 >= 0) {
            CHECK_NEAR(ir_const_double(&g->tensors[c1], 0), 2.5, 0);
            CHECK_NEAR(ir_const_double(&g->tensors[c2], 0), 1.0, 0);
        }
        int h = tensor_named(g, "h");
        CHECK(h >= 0 && g->tensors[h].producer == 3 && g->nodes[4].in[0] == h);
        CHECK(g->tensors[g->outputs[0]].producer == 7);
        CHECK(tensor_named(g, "s1/t") >= 0 && tensor_named(g, "s2/t") >= 0);
        ir_graph_free(g);
    }
    pool_free();
}

TEST(onnx_import_rejects_recursive_functions)
{
    mb b;
    mb_init(&b, 13);
    Onnx__FunctionProto *f = function_new(&b, "local", "Loop", "a", "y", "");
    Onnx__NodeProto *n = node_new(NULL, "Loop", "again", "a", "y");
    n->domain = "local";
    function_node(f, n);
    mb_input(&b, "x", SMELT_F32, 1, D3);
    n = node_new(&b.g, "Loop", "call", "x", "y");
    n->domain = "local";
    mb_output(&b, "y");
    ir_graph *g;
    CHECK_EQ_INT(mb_load(&b, NULL, &g), SMELT_ERR_UNSUPPORTED);
    CHECK(g == NULL);
    CHECK_STR_HAS(smelt_last_error(), "nest deeper");
    pool_free();
}

/* ---- values vs shapes: a compiled program never answers with the values it was compiled with ---- */

static smelt_model *mb_model(mb *b)
{
    size_t size;
    uint8_t *buf = mb_pack(b, &size);
    smelt_model *m = NULL;
    CHECK_EQ_INT(smelt_model_load_memory(buf, size, NULL, &m), SMELT_OK);
    return m;
}

/* PyTorch's export pattern Shape -> Gather -> Reshape reads only x's shape: the
 * program must compute from the run's values, not fold in the compile-time ones. */
TEST(values_shape_only_reads_do_not_fold_the_input)
{
    mb b;
    mb_init(&b, 14);
    static const int64_t xd[2] = {2, 3}, id[1] = {2}, idx[2] = {1, 0};
    mb_input(&b, "x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 2, xd);
    APPEND(b.g.initializer, b.g.n_initializer, tensor_raw("perm", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 1, id, idx, sizeof idx));
    node_new(&b.g, "Shape", "shape", "x", "s");
    node_new(&b.g, "Gather", "gather", "s,perm", "t");
    node_new(&b.g, "Neg", "neg", "x", "n");
    node_new(&b.g, "Reshape", "reshape", "n,t", "y");
    mb_output(&b, "y");
    smelt_model *m = mb_model(&b);
    if (!m) return;
    float a[6] = {1, 2, 3, 4, 5, 6}, c[6] = {-7, 8.5f, 0, 10, 11, -12};
    smelt_tensor x = {.name = "x", .dtype = SMELT_F32, .rank = 2, .shape = {2, 3}, .data = a};
    smelt_program *p = NULL;
    CHECK_EQ_INT(smelt_program_compile(m, NULL, 1, &x, &p), SMELT_OK);
    if (p) {
        CHECK(smelt_program_kernel_count(p) > 0);
        x.data = c;
        CHECK_EQ_INT(smelt_program_run(p, 1, &x), SMELT_OK);
        smelt_tensor y;
        CHECK_EQ_INT(smelt_program_output(p, 0, &y), SMELT_OK);
        CHECK(y.rank == 2 && y.shape[0] == 3 && y.shape[1] == 2);
        for (int i = 0; i < 6; i++) CHECK_NEAR(((float *)y.data)[i], -c[i], 0);
        x.data = a; /* and back: still the run's values */
        CHECK_EQ_INT(smelt_program_run(p, 1, &x), SMELT_OK);
        CHECK_EQ_INT(smelt_program_output(p, 0, &y), SMELT_OK);
        for (int i = 0; i < 6; i++) CHECK_NEAR(((float *)y.data)[i], -a[i], 0);
        smelt_program_free(p);
    }
    smelt_model_free(m);
}

/* A Reshape target fed by a graph input: the program is specialised on its
 * values, and a run with other values is refused naming the input. */
TEST(values_that_decide_shapes_are_guarded_at_run_time)
{
    mb b;
    mb_init(&b, 14);
    static const int64_t xd[1] = {6}, sd[1] = {2};
    mb_input(&b, "x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, xd);
    mb_input(&b, "s", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 1, sd);
    node_new(&b.g, "Relu", "relu", "x", "r");
    node_new(&b.g, "Reshape", "reshape", "r,s", "y");
    mb_output(&b, "y");
    smelt_model *m = mb_model(&b);
    if (!m) return;
    float a[6] = {1, -2, 3, -4, 5, -6};
    int64_t s23[2] = {2, 3}, s32[2] = {3, 2};
    smelt_tensor in[2] = {{.name = "x", .dtype = SMELT_F32, .rank = 1, .shape = {6}, .data = a},
                          {.name = "s", .dtype = SMELT_I64, .rank = 1, .shape = {2}, .data = s23}};
    smelt_program *p = NULL;
    CHECK_EQ_INT(smelt_program_compile(m, NULL, 2, in, &p), SMELT_OK);
    if (p) {
        CHECK_EQ_INT(smelt_program_run(p, 2, in), SMELT_OK);
        smelt_tensor y;
        CHECK_EQ_INT(smelt_program_output(p, 0, &y), SMELT_OK);
        CHECK(y.rank == 2 && y.shape[0] == 2 && y.shape[1] == 3 && ((float *)y.data)[2] == 3);
        CHECK_EQ_INT(smelt_program_run(p, 1, in), SMELT_OK); /* the folded input may be left out */
        in[1].data = s32;
        CHECK_EQ_INT(smelt_program_run(p, 2, in), SMELT_ERR_SHAPE);
        CHECK_STR_HAS(smelt_last_error(), "input 's'");
        in[1].data = s23;
        smelt_tensor extra[3] = {in[0], in[1], {.name = "zz", .dtype = SMELT_F32, .rank = 1, .shape = {1}, .data = a}};
        CHECK_EQ_INT(smelt_program_run(p, 3, extra), SMELT_ERR_INVALID_ARG);
        CHECK_STR_HAS(smelt_last_error(), "no input named 'zz'");
        smelt_program_free(p);
    }
    smelt_model_free(m);
}
