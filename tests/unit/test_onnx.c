/* test_onnx.c — the ONNX importer and tensor files, on models built in memory. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "graph/passes.h"
#include "lower/lower.h"
#include "onnx/onnx.h"
#include "onnx/onnx.pb-c.h"
#include "test.h"

/* ---- building models ----------------------------------------------------- */

/* Everything a test model allocates, freed by mb_free. */
static void *pool[4096];
static int n_pool;

static void *palloc(size_t n)
{
    void *p = calloc(1, n ? n : 1);
    if (n_pool < (int)(sizeof pool / sizeof pool[0])) pool[n_pool++] = p;
    return p;
}

static void pool_free(void)
{
    while (n_pool) free(pool[--n_pool]);
}

/* Split "a,b,,c" into strings; "" gives none. */
static char **split(const char *list, size_t *n)
{
    *n = 0;
    if (!*list) return NULL;
    char **v = palloc(sizeof(char *) * (strlen(list) + 1));
    char *s = palloc(strlen(list) + 1);
    strcpy(s, list);
    for (char *p = s;;) {
        v[(*n)++] = p;
        char *c = strchr(p, ',');
        if (!c) break;
        *c = 0;
        p = c + 1;
    }
    return v;
}

#define APPEND(arr, n, x)                                                      \
    do {                                                                       \
        void **na_ = palloc(sizeof(void *) * ((n) + 1));                       \
        if ((n)) memcpy(na_, (arr), sizeof(void *) * (n));                     \
        na_[(n)++] = (x);                                                      \
        (arr) = (void *)na_;                                                   \
    } while (0)

static Onnx__NodeProto *node_new(Onnx__GraphProto *g, const char *op, const char *name, const char *ins,
                                 const char *outs)
{
    Onnx__NodeProto *n = palloc(sizeof *n);
    onnx__node_proto__init(n);
    n->op_type = (char *)op;
    n->name = (char *)name;
    n->input = split(ins, &n->n_input);
    n->output = split(outs, &n->n_output);
    if (g) APPEND(g->node, g->n_node, n);
    return n;
}

static Onnx__AttributeProto *attr_new(Onnx__NodeProto *n, const char *name, int type)
{
    Onnx__AttributeProto *a = palloc(sizeof *a);
    onnx__attribute_proto__init(a);
    a->name = (char *)name;
    a->has_type = type != 0;
    a->type = type;
    if (n) APPEND(n->attribute, n->n_attribute, a);
    return a;
}

static void attr_int(Onnx__NodeProto *n, const char *name, int64_t v)
{
    Onnx__AttributeProto *a = attr_new(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    a->has_i = 1;
    a->i = v;
}

static void attr_float(Onnx__NodeProto *n, const char *name, float v)
{
    Onnx__AttributeProto *a = attr_new(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    a->has_f = 1;
    a->f = v;
}

static void attr_ref(Onnx__NodeProto *n, const char *name, int type, const char *ref)
{
    attr_new(n, name, type)->ref_attr_name = (char *)ref;
}

static Onnx__TensorProto *tensor_raw(const char *name, int dtype, int rank, const int64_t *dims, const void *data,
                                     size_t bytes)
{
    Onnx__TensorProto *t = palloc(sizeof *t);
    onnx__tensor_proto__init(t);
    t->name = (char *)name;
    t->has_data_type = 1;
    t->data_type = dtype;
    t->n_dims = (size_t)rank;
    t->dims = (int64_t *)dims;
    if (data) {
        t->has_raw_data = 1;
        t->raw_data.len = bytes;
        t->raw_data.data = (uint8_t *)data;
    }
    return t;
}

static Onnx__ValueInfoProto *value_info(const char *name, int elem, int rank, const int64_t *dims,
                                        const char *const *params)
{
    Onnx__ValueInfoProto *v = palloc(sizeof *v);
    Onnx__TypeProto *tp = palloc(sizeof *tp);
    Onnx__TypeProto__Tensor *tt = palloc(sizeof *tt);
    Onnx__TensorShapeProto *sh = palloc(sizeof *sh);
    onnx__value_info_proto__init(v);
    onnx__type_proto__init(tp);
    onnx__type_proto__tensor__init(tt);
    onnx__tensor_shape_proto__init(sh);
    v->name = (char *)name;
    v->type = tp;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    tt->has_elem_type = 1;
    tt->elem_type = elem;
    tt->shape = sh;
    for (int i = 0; i < rank; i++) {
        Onnx__TensorShapeProto__Dimension *d = palloc(sizeof *d);
        onnx__tensor_shape_proto__dimension__init(d);
        if (params && params[i]) {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            d->dim_param = (char *)params[i];
        } else if (dims[i] >= 0) {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            d->dim_value = dims[i];
        }
        APPEND(sh->dim, sh->n_dim, d);
    }
    return v;
}

typedef struct mb {
    Onnx__ModelProto m;
    Onnx__GraphProto g;
    Onnx__OperatorSetIdProto opset;
} mb;

static void mb_init(mb *b, int64_t opset)
{
    onnx__model_proto__init(&b->m);
    onnx__graph_proto__init(&b->g);
    onnx__operator_set_id_proto__init(&b->opset);
    b->m.has_ir_version = 1;
    b->m.ir_version = 8;
    b->m.graph = &b->g;
    b->g.name = "test";
    b->opset.domain = "";
    b->opset.has_version = 1;
    b->opset.version = opset;
    APPEND(b->m.opset_import, b->m.n_opset_import, &b->opset);
}

static void mb_input(mb *b, const char *name, int elem, int rank, const int64_t *dims)
{
    APPEND(b->g.input, b->g.n_input, value_info(name, elem, rank, dims, NULL));
}

static void mb_output(mb *b, const char *name)
{
    Onnx__ValueInfoProto *v = palloc(sizeof *v);
    onnx__value_info_proto__init(v);
    v->name = (char *)name;
    APPEND(b->g.output, b->g.n_output, v);
}

static uint8_t *mb_pack(mb *b, size_t *size)
{
    *size = onnx__model_proto__get_packed_size(&b->m);
    uint8_t *buf = palloc(*size);
    onnx__model_proto__pack(&b->m, buf);
    return buf;
}

static smelt_status mb_load(mb *b, const char *base_dir, ir_graph **g)
{
    size_t size;
    uint8_t *buf = mb_pack(b, &size);
    return onnx_load_memory(buf, size, base_dir, g);
}

static int tensor_named(const ir_graph *g, const char *name)
{
    for (int i = 0; i < g->n_tensors; i++)
        if (strcmp(g->tensors[i].name, name) == 0) return i;
    return -1;
}

static const int64_t D2x3[] = {2, 3}, D3[] = {3}, D2x2[] = {2, 2};

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
    attr_new(c, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR)->t =
        tensor_raw("", SMELT_I32, 1, D3, v, sizeof v);
    attr_float(node_new(&b.g, "Constant", "c_f", "", "cf"), "value_float", 2.5f);
    attr_int(node_new(&b.g, "Constant", "c_i", "", "ci"), "value_int", -7);
    Onnx__AttributeProto *a = attr_new(node_new(&b.g, "Constant", "c_fs", "", "cfs"), "value_floats",
                                       ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
    static float fs[2] = {1.5f, 3};
    a->n_floats = 2, a->floats = fs;
    a = attr_new(node_new(&b.g, "Constant", "c_is", "", "cis"), "value_ints", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
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
    attr_int(n, "i", 42);
    attr_float(n, "f", 0.25f);
    Onnx__AttributeProto *a = attr_new(n, "s", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    a->has_s = 1, a->s.data = (uint8_t *)"NOTSET", a->s.len = 6;
    a = attr_new(n, "is", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    static int64_t perm[2] = {1, 0};
    a->n_ints = 2, a->ints = perm;
    a = attr_new(n, "fs", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
    static float fl[3] = {1, 2, 3};
    a->n_floats = 3, a->floats = fl;
    a = attr_new(n, "ss", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS);
    static ProtobufCBinaryData strs[2] = {{2, (uint8_t *)"ab"}, {0, NULL}};
    a->n_strings = 2, a->strings = strs;
    static const float tv[3] = {9, 8, 7};
    attr_new(n, "t", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR)->t = tensor_raw("", SMELT_F32, 1, D3, tv, sizeof tv);
    a = attr_new(n, "g", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
    Onnx__GraphProto *sub = palloc(sizeof *sub);
    onnx__graph_proto__init(sub);
    a->g = sub;
    a = attr_new(n, "old_style", 0); /* pre-IR-v4 models leave the type out */
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

/* ---- model-local functions ----------------------------------------------- */

static Onnx__FunctionProto *function_new(mb *b, const char *domain, const char *name, const char *ins,
                                         const char *outs, const char *attrs)
{
    Onnx__FunctionProto *f = palloc(sizeof *f);
    onnx__function_proto__init(f);
    f->domain = (char *)domain;
    f->name = (char *)name;
    f->input = split(ins, &f->n_input);
    f->output = split(outs, &f->n_output);
    f->attribute = split(attrs, &f->n_attribute);
    APPEND(f->opset_import, f->n_opset_import, &b->opset);
    APPEND(b->m.functions, b->m.n_functions, f);
    return f;
}

static void function_node(Onnx__FunctionProto *f, Onnx__NodeProto *n) { APPEND(f->node, f->n_node, n); }

/* FunctionProto.attribute_proto (field 11) is newer than our onnx.proto, so the
 * test writes it the way a newer writer would: as a field protobuf-c does not know. */
static void function_default(Onnx__FunctionProto *f, Onnx__AttributeProto *a)
{
    size_t n = onnx__attribute_proto__get_packed_size(a);
    ProtobufCMessageUnknownField *u = palloc(sizeof *u * (f->base.n_unknown_fields + 1));
    if (f->base.n_unknown_fields) memcpy(u, f->base.unknown_fields, sizeof *u * f->base.n_unknown_fields);
    /* protobuf-c keeps an unknown field's length prefix in its data (n < 128 here). */
    uint8_t *data = palloc(n + 1);
    data[0] = (uint8_t)n;
    onnx__attribute_proto__pack(a, data + 1);
    u[f->base.n_unknown_fields] = (ProtobufCMessageUnknownField){11, PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED, n + 1, data};
    f->base.unknown_fields = u;
    f->base.n_unknown_fields++;
}

TEST(onnx_import_inlines_functions)
{
    mb b;
    mb_init(&b, 18);
    /* local.Scaled(a, opt) -> y: t = LeakyRelu(a, alpha=@alpha); c = Constant(@beta, default 2.5);
     * u = Mul(t, c); y = local.Pass(u), where Pass returns its input unchanged. */
    Onnx__FunctionProto *f = function_new(&b, "local", "Scaled", "a,opt", "y", "alpha,beta");
    Onnx__NodeProto *n = node_new(NULL, "LeakyRelu", "lr", "a", "t");
    attr_ref(n, "alpha", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT, "alpha");
    function_node(f, n);
    n = node_new(NULL, "Constant", "", "", "c");
    attr_ref(n, "value_float", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT, "beta");
    function_node(f, n);
    function_node(f, node_new(NULL, "Mul", "mul", "t,c", "u"));
    function_node(f, node_new(NULL, "Clip", "clip", "u,opt", "v"));
    n = node_new(NULL, "Pass", "pass", "v", "y");
    n->domain = "local";
    function_node(f, n);
    Onnx__AttributeProto *def = attr_new(NULL, "beta", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
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
    attr_float(n, "alpha", 0.1f);
    n = node_new(&b.g, "Scaled", "s2", "h", "out");
    n->domain = "local";
    attr_float(n, "alpha", 0.3f);
    attr_float(n, "beta", 1.0f);
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
    attr_int(n, "dummy", 1);
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
        attr_new(n, "then_branch", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH)->g = sub;
        outer = sub;
    }
    ir_graph *g;
    CHECK_EQ_INT(mb_load(&b, NULL, &g), SMELT_ERR_MODEL);
    CHECK_STR_HAS(smelt_last_error(), "nest deeper");
    pool_free();
}

static void check_error(mb *b, smelt_status want, const char *msg1, const char *msg2)
{
    ir_graph *g = (ir_graph *)1;
    CHECK_EQ_INT(mb_load(b, NULL, &g), want);
    CHECK(g == NULL);
    CHECK_STR_HAS(smelt_last_error(), msg1);
    if (msg2) CHECK_STR_HAS(smelt_last_error(), msg2);
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
    Onnx__AttributeProto *a = attr_new(n, "activation", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
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
    Onnx__AttributeProto *a = attr_new(node_new(&b.g, "Constant", "cs", "", "s"), "value_string",
                                       ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    a->has_s = 1;
    mb_output(&b, "s");
    check_error(&b, SMELT_ERR_UNSUPPORTED, "node 'cs' (Constant)", "value_string");

    mb_init(&b, 13);
    Onnx__NodeProto *n = node_new(&b.g, "Constant", "c8", "", "s");
    attr_new(n, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR)->t = tensor_raw("", 17, 1, D3, bf, 3);
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

/* ---- external data ------------------------------------------------------- */

static Onnx__TensorProto *tensor_external(const char *name, int rank, const int64_t *dims, const char *loc,
                                          const char *offset, const char *length)
{
    Onnx__TensorProto *t = tensor_raw(name, SMELT_F32, rank, dims, NULL, 0);
    t->has_data_location = 1;
    t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    const char *kv[3][2] = {{"location", loc}, {"offset", offset}, {"length", length}};
    for (int i = 0; i < 3; i++) {
        if (!kv[i][1]) continue;
        Onnx__StringStringEntryProto *e = palloc(sizeof *e);
        onnx__string_string_entry_proto__init(e);
        e->key = (char *)kv[i][0];
        e->value = (char *)kv[i][1];
        APPEND(t->external_data, t->n_external_data, e);
    }
    return t;
}

static void write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(data, 1, n, f);
        fclose(f);
    }
}

static void external_model(mb *b, const char *loc, const char *offset, const char *length)
{
    mb_init(b, 13);
    APPEND(b->g.initializer, b->g.n_initializer, tensor_external("wx", 2, D2x3, loc, offset, length));
    mb_input(b, "x", SMELT_F32, 2, D2x3);
    node_new(&b->g, "Add", "add", "x,wx", "y");
    mb_output(b, "y");
}

/* Weights of 64 KiB and more become tensor data without a copy (the
 * protobuf's own block, import.c): the values must be the file's, a bool's
 * bytes still normalised, a tensor proto decoded twice (a Constant inside a
 * function called twice) two tensors with the same values, a file loaded by
 * path (mapped) the same as from memory, and every cut of such a file a clean
 * error (ASan: nothing leaked, nothing read past the end). */
TEST(onnx_import_big_weights_without_a_copy)
{
    enum { N = 40000 }; /* 160 KB of float */
    static float w[N], c[N];
    static uint8_t flags[N * 4];
    for (int i = 0; i < N; i++) w[i] = (float)i * 0.25f - 7, c[i] = (float)(i % 97);
    for (int i = 0; i < N * 4; i++) flags[i] = (uint8_t)(i % 3); /* 2 is true too: read as 1 */
    static const int64_t DN[] = {N}, DF[] = {N * 4};
    mb b;
    mb_init(&b, 18);
    APPEND(b.g.initializer, b.g.n_initializer, tensor_raw("w", SMELT_F32, 1, DN, w, sizeof w));
    APPEND(b.g.initializer, b.g.n_initializer, tensor_raw("flags", SMELT_BOOL, 1, DF, flags, sizeof flags));
    Onnx__FunctionProto *f = function_new(&b, "local", "AddC", "a", "y", "");
    Onnx__NodeProto *n = node_new(NULL, "Constant", "k", "", "c");
    attr_new(n, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR)->t = tensor_raw("", SMELT_F32, 1, DN, c, sizeof c);
    function_node(f, n);
    function_node(f, node_new(NULL, "Add", "add", "a,c", "y"));
    Onnx__OperatorSetIdProto *local = palloc(sizeof *local);
    onnx__operator_set_id_proto__init(local);
    local->domain = "local", local->has_version = 1, local->version = 1;
    APPEND(b.m.opset_import, b.m.n_opset_import, local);
    mb_input(&b, "x", SMELT_F32, 1, DN);
    node_new(&b.g, "Add", "a0", "x,w", "h0");
    n = node_new(&b.g, "AddC", "s1", "h0", "h1");
    n->domain = "local";
    n = node_new(&b.g, "AddC", "s2", "h1", "h2");
    n->domain = "local";
    node_new(&b.g, "Cast", "cast", "flags", "fl");
    attr_int(b.g.node[b.g.n_node - 1], "to", 1);
    mb_output(&b, "h2");
    mb_output(&b, "fl");
    size_t size;
    uint8_t *buf = mb_pack(&b, &size);
    char dir[] = "/tmp/smelt_onnx_big_XXXXXX", path[300];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    write_file(path, buf, size);
    for (int by_path = 0; by_path < 2; by_path++) {
        ir_graph *g = NULL;
        CHECK_EQ_INT(by_path ? onnx_load_file(path, &g) : onnx_load_memory(buf, size, NULL, &g), SMELT_OK);
        if (!g) continue;
        int tw = tensor_named(g, "w"), tf = tensor_named(g, "flags"), k1 = tensor_named(g, "s1/c"), k2 = tensor_named(g, "s2/c");
        CHECK(tw >= 0 && tf >= 0 && k1 >= 0 && k2 >= 0);
        if (tw >= 0 && tf >= 0 && k1 >= 0 && k2 >= 0) {
            CHECK(memcmp(g->tensors[tw].data, w, sizeof w) == 0);
            CHECK(((uintptr_t)g->tensors[tw].data & 63) == 0);
            CHECK(g->tensors[k1].data != g->tensors[k2].data);
            CHECK(memcmp(g->tensors[k1].data, c, sizeof c) == 0 && memcmp(g->tensors[k2].data, c, sizeof c) == 0);
            int bad = 0;
            for (int i = 0; i < N * 4; i++) bad += ((const uint8_t *)g->tensors[tf].data)[i] != (i % 3 != 0);
            CHECK_EQ_INT(bad, 0);
        }
        ir_graph_free(g);
    }
    /* cuts: in the headers, inside each weight's bytes, one byte short */
    int loaded = 0;
    for (size_t len = 0; len < size; len += len < 256 ? 1 : 4093) {
        for (int by_path = 0; by_path < 2; by_path++) {
            ir_graph *g = NULL;
            smelt_status st;
            if (by_path) {
                write_file(path, buf, len);
                st = onnx_load_file(path, &g);
            } else {
                st = onnx_load_memory(buf, len, NULL, &g);
            }
            loaded += st == SMELT_OK;
            CHECK((st == SMELT_OK) == (g != NULL));
            ir_graph_free(g);
        }
    }
    ir_graph *g = NULL;
    CHECK(onnx_load_memory(buf, size - 1, NULL, &g) != SMELT_OK && g == NULL);
    CHECK_EQ_INT(loaded, 0);
    unlink(path);
    rmdir(dir);
    pool_free();
}

TEST(onnx_import_external_data)
{
    char dir[] = "/tmp/smelt_onnx_XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(!"mkdtemp");
        return;
    }
    char path[256], sub[256], model[256];
    snprintf(sub, sizeof sub, "%s/weights", dir);
    mkdir(sub, 0755);
    float data[8] = {-1, -1, 1, 2, 3, 4, 5, 6}; /* 8 bytes of padding first */
    snprintf(path, sizeof path, "%s/weights/w.bin", dir);
    write_file(path, data, sizeof data);

    mb b;
    external_model(&b, "weights/w.bin", "8", "24");
    size_t size;
    uint8_t *buf = mb_pack(&b, &size);
    snprintf(model, sizeof model, "%s/model.onnx", dir);
    write_file(model, buf, size);
    ir_graph *g;
    CHECK_EQ_INT(onnx_load_file(model, &g), SMELT_OK);
    if (g) {
        const ir_tensor *w = &g->tensors[tensor_named(g, "wx")];
        CHECK(w->data != NULL);
        if (w->data) {
            CHECK_NEAR(ir_const_double(w, 0), 1, 0);
            CHECK_NEAR(ir_const_double(w, 5), 6, 0);
        }
        ir_graph_free(g);
    }
    pool_free();

    external_model(&b, "weights/w.bin", "16", NULL);
    CHECK_EQ_INT(mb_load(&b, dir, &g), SMELT_ERR_MODEL);
    CHECK_STR_HAS(smelt_last_error(), "initializer 'wx'");
    CHECK_STR_HAS(smelt_last_error(), "too short");
    pool_free();

    external_model(&b, "weights/w.bin", "0", "12");
    CHECK_EQ_INT(mb_load(&b, dir, &g), SMELT_ERR_MODEL);
    CHECK_STR_HAS(smelt_last_error(), "length 12");
    pool_free();

    external_model(&b, "weights/../weights/w.bin", NULL, NULL);
    check_error(&b, SMELT_ERR_MODEL, "initializer 'wx'", "leaves the model's directory");
    external_model(&b, "..", NULL, NULL);
    check_error(&b, SMELT_ERR_MODEL, "initializer 'wx'", "leaves the model's directory");
    external_model(&b, path, NULL, NULL);
    check_error(&b, SMELT_ERR_MODEL, "initializer 'wx'", "is absolute");
    external_model(&b, "missing.bin", NULL, NULL);
    CHECK_EQ_INT(mb_load(&b, dir, &g), SMELT_ERR_IO);
    CHECK_STR_HAS(smelt_last_error(), "missing.bin");
    pool_free();
    external_model(&b, "weights/w.bin", "1x", NULL);
    CHECK_EQ_INT(mb_load(&b, dir, &g), SMELT_ERR_MODEL);
    CHECK_STR_HAS(smelt_last_error(), "not a number");
    pool_free();
    /* an offset past the end, and one whose sum with the length would overflow */
    external_model(&b, "weights/w.bin", "33", NULL);
    CHECK_EQ_INT(mb_load(&b, dir, &g), SMELT_ERR_MODEL);
    CHECK_STR_HAS(smelt_last_error(), "too short");
    pool_free();
    external_model(&b, "weights/w.bin", "9223372036854775807", NULL);
    CHECK_EQ_INT(mb_load(&b, dir, &g), SMELT_ERR_MODEL);
    CHECK_STR_HAS(smelt_last_error(), "too short");
    pool_free();
    external_model(&b, "weights/w.bin", "99999999999999999999", NULL);
    CHECK_EQ_INT(mb_load(&b, dir, &g), SMELT_ERR_MODEL);
    CHECK_STR_HAS(smelt_last_error(), "not a number");
    pool_free();

    /* Links are not followed: not to a file outside (/etc/passwd), not to one
     * inside, not through a linked directory. */
    char link1[300], link2[300], link3[300], fifo[300];
    snprintf(link1, sizeof link1, "%s/passwd", dir);
    CHECK(symlink("/etc/passwd", link1) == 0);
    external_model(&b, "passwd", NULL, NULL);
    CHECK_EQ_INT(mb_load(&b, dir, &g), SMELT_ERR_IO);
    CHECK_STR_HAS(smelt_last_error(), "links are not followed");
    pool_free();
    snprintf(link2, sizeof link2, "%s/w_link.bin", dir);
    CHECK(symlink("weights/w.bin", link2) == 0);
    external_model(&b, "w_link.bin", "8", NULL);
    CHECK_EQ_INT(mb_load(&b, dir, &g), SMELT_ERR_IO);
    CHECK_STR_HAS(smelt_last_error(), "links are not followed");
    pool_free();
    snprintf(link3, sizeof link3, "%s/etc", dir);
    CHECK(symlink("/etc", link3) == 0);
    external_model(&b, "etc/passwd", NULL, NULL);
    CHECK_EQ_INT(mb_load(&b, dir, &g), SMELT_ERR_IO);
    CHECK_STR_HAS(smelt_last_error(), "links are not followed");
    pool_free();
    /* A FIFO neither blocks the load nor is read. */
    snprintf(fifo, sizeof fifo, "%s/fifo.bin", dir);
    CHECK(mkfifo(fifo, 0600) == 0);
    external_model(&b, "fifo.bin", NULL, NULL);
    CHECK_EQ_INT(mb_load(&b, dir, &g), SMELT_ERR_IO);
    CHECK_STR_HAS(smelt_last_error(), "not a regular file");
    pool_free();
    /* A directory is not data either. */
    external_model(&b, "weights", NULL, NULL);
    CHECK_EQ_INT(mb_load(&b, dir, &g), SMELT_ERR_IO);
    CHECK_STR_HAS(smelt_last_error(), "not a regular file");
    pool_free();
    unlink(link1);
    unlink(link2);
    unlink(link3);
    unlink(fifo);

    unlink(path);
    unlink(model);
    rmdir(sub);
    rmdir(dir);
}

/* ---- tensor files -------------------------------------------------------- */

static bool tensors_equal(const smelt_tensor *a, const smelt_tensor *b)
{
    if (a->dtype != b->dtype || a->rank != b->rank) return false;
    for (int i = 0; i < a->rank; i++)
        if (a->shape[i] != b->shape[i]) return false;
    size_t n = (size_t)smelt_tensor_numel(a) * smelt_dtype_size(a->dtype);
    return n == 0 || memcmp(a->data, b->data, n) == 0;
}

TEST(onnx_tensor_files_round_trip)
{
    char dir[] = "/tmp/smelt_tf_XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(!"mkdtemp");
        return;
    }
    static float f[6] = {1, -2, 3.5f, 4, 5, 6};
    static int64_t l[3] = {1, -1, 1LL << 40};
    static uint8_t bo[4] = {1, 0, 0, 1};
    static uint16_t u[1] = {65535};
    static int8_t i8[5] = {-1, 2, -3, 4, -5};
    static double d[2] = {0.25, -1e200};
    smelt_tensor cases[] = {
        {.name = "x", .dtype = SMELT_F32, .rank = 2, .shape = {2, 3}, .data = f},
        {.name = "ids", .dtype = SMELT_I64, .rank = 1, .shape = {3}, .data = l},
        {.name = NULL, .dtype = SMELT_BOOL, .rank = 3, .shape = {1, 2, 2}, .data = bo},
        {.name = "scalar", .dtype = SMELT_U16, .rank = 0, .data = u},
        {.name = "i8", .dtype = SMELT_I8, .rank = 1, .shape = {5}, .data = i8},
        {.name = "d", .dtype = SMELT_F64, .rank = 2, .shape = {2, 1}, .data = d},
        {.name = "empty", .dtype = SMELT_F32, .rank = 2, .shape = {0, 4}, .data = NULL},
    };
    char path[256];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (int pb = 0; pb < 2; pb++) {
            snprintf(path, sizeof path, "%s/t%zu.%s", dir, i, pb ? "pb" : "npy");
            smelt_status st = pb ? tensor_file_write_pb(path, &cases[i]) : tensor_file_write_npy(path, &cases[i]);
            CHECK_EQ_INT(st, SMELT_OK);
            smelt_tensor back;
            CHECK_EQ_INT(tensor_file_read(path, &back), SMELT_OK);
            CHECK(tensors_equal(&cases[i], &back));
            if (pb && cases[i].name) CHECK(back.name && strcmp(back.name, cases[i].name) == 0);
            if (!pb) CHECK(back.name == NULL);
            tensor_file_free(&back);
            unlink(path);
        }
    }
    /* The content, not the name, decides the format. */
    snprintf(path, sizeof path, "%s/really_npy.pb", dir);
    CHECK_EQ_INT(tensor_file_write_npy(path, &cases[0]), SMELT_OK);
    smelt_tensor back;
    CHECK_EQ_INT(tensor_file_read(path, &back), SMELT_OK);
    CHECK(tensors_equal(&cases[0], &back));
    tensor_file_free(&back);
    unlink(path);
    /* A failed write leaves nothing behind. */
    snprintf(path, sizeof path, "%s/no/such/dir/x.npy", dir);
    CHECK_EQ_INT(tensor_file_write_npy(path, &cases[0]), SMELT_ERR_IO);
    smelt_tensor half = {.dtype = SMELT_BF16, .rank = 1, .shape = {1}, .data = u};
    snprintf(path, sizeof path, "%s/half.npy", dir);
    CHECK_EQ_INT(tensor_file_write_npy(path, &half), SMELT_ERR_UNSUPPORTED);
    CHECK(access(path, F_OK) != 0);
    rmdir(dir);
}

static smelt_status read_bytes(const char *path, const void *data, size_t n, smelt_tensor *t)
{
    write_file(path, data, n);
    smelt_status st = tensor_file_read(path, t);
    unlink(path);
    return st;
}

TEST(onnx_tensor_files_npy_variants_and_errors)
{
    char path[] = "/tmp/smelt_npy_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) {
        CHECK(!"mkstemp");
        return;
    }
    close(fd);
    /* Version 2.0 header, numpy spacing, int32 (2,). */
    char buf[256] = "\x93NUMPY\x02\x00";
    const char *hdr = "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }        \n";
    size_t hl = strlen(hdr);
    buf[8] = (char)hl, buf[9] = buf[10] = buf[11] = 0;
    memcpy(buf + 12, hdr, hl);
    int32_t v[2] = {7, -9};
    memcpy(buf + 12 + hl, v, sizeof v);
    smelt_tensor t;
    CHECK_EQ_INT(read_bytes(path, buf, 12 + hl + sizeof v, &t), SMELT_OK);
    CHECK(t.dtype == SMELT_I32 && t.rank == 1 && t.shape[0] == 2 && ((int32_t *)t.data)[1] == -9);
    tensor_file_free(&t);

    CHECK_EQ_INT(read_bytes(path, buf, 12 + hl + 4, &t), SMELT_ERR_IO); /* short data */
    CHECK_STR_HAS(smelt_last_error(), "short");
    CHECK(t.data == NULL);

    const char *bad[][2] = {
        {"{'descr': '>i4', 'fortran_order': False, 'shape': (2,), }", "big-endian"},
        {"{'descr': '<i4', 'fortran_order': True, 'shape': (2,), }", "Fortran"},
        {"{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", "'<c8'"},
        {"{'descr': '<i4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }", "rank"},
        {"{'descr': '<i4', 'fortran_order': False, 'shape': (2,x), }", "malformed"},
        {"{'descr': '<i4', 'fortran_order': False }", "malformed"},
        /* Empty, but its other dims multiply past int64 (found by tests/fuzz/fuzz_tensor). */
        {"{'descr': '<i4', 'fortran_order': False, 'shape': (0,4611686018427387904,4), }", "too large"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        hl = strlen(bad[i][0]);
        memcpy(buf, "\x93NUMPY\x01\x00", 8);
        buf[8] = (char)hl, buf[9] = 0;
        memcpy(buf + 10, bad[i][0], hl);
        memset(buf + 10 + hl, 0, 8);
        smelt_status st = read_bytes(path, buf, 10 + hl + 8, &t);
        CHECK(st == SMELT_ERR_UNSUPPORTED || st == SMELT_ERR_IO);
        CHECK_STR_HAS(smelt_last_error(), bad[i][1]);
    }
    CHECK_EQ_INT(read_bytes(path, "\x93NUMPY\x01\x00\xff\x00{", 11, &t), SMELT_ERR_IO);
    CHECK_EQ_INT(read_bytes(path, "\xff\xff\xff", 3, &t), SMELT_ERR_IO);
    CHECK_EQ_INT(read_bytes(path, "", 0, &t), SMELT_ERR_IO);
    CHECK_EQ_INT(tensor_file_read("/nonexistent/x.npy", &t), SMELT_ERR_IO);

    /* From memory: the same bytes give the same tensor; errors name the given name. */
    hl = strlen(hdr);
    memcpy(buf, "\x93NUMPY\x02\x00", 8);
    buf[8] = (char)hl, buf[9] = buf[10] = buf[11] = 0;
    memcpy(buf + 12, hdr, hl);
    memcpy(buf + 12 + hl, v, sizeof v);
    CHECK_EQ_INT(tensor_file_read_memory(buf, 12 + hl + sizeof v, "mem", NULL, &t), SMELT_OK);
    CHECK(t.dtype == SMELT_I32 && t.rank == 1 && t.shape[0] == 2 && ((int32_t *)t.data)[0] == 7);
    tensor_file_free(&t);
    CHECK_EQ_INT(tensor_file_read_memory(buf, 12 + hl, "mem", NULL, &t), SMELT_ERR_IO);
    CHECK_STR_HAS(smelt_last_error(), "'mem'");
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

/* ---- old opsets: nodes upgraded to their opset-7 form -------------------- */

static void attr_ints(Onnx__NodeProto *n, const char *name, int cnt, const int64_t *v)
{
    Onnx__AttributeProto *a = attr_new(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    a->n_ints = (size_t)cnt, a->ints = (int64_t *)v;
}

static void attr_str(Onnx__NodeProto *n, const char *name, const char *v)
{
    Onnx__AttributeProto *a = attr_new(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    a->has_s = 1, a->s.data = (uint8_t *)v, a->s.len = strlen(v);
}

static void init_f32(mb *b, const char *name, int rank, const int64_t *dims, const float *v, size_t n)
{
    APPEND(b->g.initializer, b->g.n_initializer, tensor_raw(name, SMELT_F32, rank, dims, v, n * sizeof(float)));
}

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
    attr_int(n, "broadcast", 1);
    attr_int(n, "axis", 1);
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
    attr_int(n, "broadcast", 1);
    attr_int(n, "axis", 1);
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
    attr_int(n, "broadcast", 1);
    attr_int(n, "axis", 1);
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
    attr_int(n, "broadcast", 1);
    attr_ints(n, "consumed_inputs", 2, consumed);
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
    attr_int(n, "broadcast", 1);
    attr_int(n, "axis", -2);
    mb_output(&b, "y");
    check_error(&b, SMELT_ERR_MODEL, "node 'sub' (Sub): broadcast axis", "(opset 6)");

    mb_init(&b, 6);
    mb_input(&b, "a", SMELT_F32, 3, D2x3x2);
    mb_input(&b, "b", SMELT_F32, 2, D2x3);
    n = node_new(&b.g, "Sub", "sub", "a,b", "y");
    attr_int(n, "broadcast", 1);
    attr_int(n, "axis", 2);
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
    attr_ints(node_new(&b.g, "Reshape", "rs", "a", "r"), "shape", 2, shape);
    node_new(&b.g, "Concat", "cat", "r,c", "k");
    Onnx__NodeProto *n = node_new(&b.g, "Pad", "pad", "k", "y");
    attr_ints(n, "paddings", 4, pads);
    attr_float(n, "value", 9);
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
    attr_str(node_new(&b.g, "Cast", "cast", "x", "xi"), "to", "INT32");
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
    attr_str(node_new(&b.g, "Cast", "cast", "x", "y"), "to", "QUATERNION");
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
    attr_float(n, "height_scale", 2);
    attr_float(n, "width_scale", 1);
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
    attr_float(n, "alpha", 2);
    attr_float(n, "beta", -1);
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
    attr_float(node_new(&b.g, "ImageScaler", "is", "x", "y"), "scale", 2);
    mb_output(&b, "y");
    check_error(&b, SMELT_ERR_MODEL, "node 'is' (ImageScaler): attribute 'bias'", "experimental");

    mb_init(&b, 10);
    mb_input(&b, "x", SMELT_F32, 1, D3);
    node_new(&b.g, "Affine", "aff", "x", "y");
    mb_output(&b, "y");
    check_error(&b, SMELT_ERR_UNSUPPORTED, "node 'aff' (Affine): unsupported op type 'Affine'", NULL);
}
