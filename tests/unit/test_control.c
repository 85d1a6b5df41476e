/* test_control.c — If/Loop/Scan: subgraph import with outer-scope captures,
 * cloning, and expansion by graph_infer (specialised or selected at run time). */
#include <stdlib.h>
#include <string.h>

#include "graph/passes.h"
#include "lower/lower.h"
#include "onnx/onnx.h"
#include "onnx/onnx.pb-c.h"
#include "test.h"

static void *pool[256];
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

static char **names(int n, const char *a, const char *b)
{
    char **v = palloc(sizeof(char *) * 2);
    v[0] = (char *)a;
    v[1] = (char *)b;
    (void)n;
    return v;
}

static Onnx__NodeProto *node(const char *op, const char *name, int n_in, const char *i0, const char *i1, const char *out)
{
    Onnx__NodeProto *n = palloc(sizeof *n);
    onnx__node_proto__init(n);
    n->op_type = (char *)op;
    n->name = (char *)name;
    n->n_input = (size_t)n_in;
    n->input = names(n_in, i0, i1);
    n->n_output = 1;
    n->output = names(1, out, NULL);
    return n;
}

static Onnx__ValueInfoProto *vinfo(const char *name, int elem, int rank)
{
    static const int64_t dims[2] = {2, 3};
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
    sh->n_dim = (size_t)rank;
    sh->dim = palloc(sizeof(void *) * 2);
    for (int i = 0; i < rank; i++) {
        Onnx__TensorShapeProto__Dimension *d = palloc(sizeof *d);
        onnx__tensor_shape_proto__dimension__init(d);
        d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        d->dim_value = dims[i];
        sh->dim[i] = d;
    }
    return v;
}

/* A branch graph of one node computing `out`. */
static Onnx__GraphProto *branch(Onnx__NodeProto *n, const char *out)
{
    Onnx__GraphProto *g = palloc(sizeof *g);
    onnx__graph_proto__init(g);
    g->name = (char *)out;
    g->n_node = 1;
    g->node = palloc(sizeof(void *));
    g->node[0] = n;
    g->n_output = 1;
    g->output = palloc(sizeof(void *));
    g->output[0] = vinfo(out, SMELT_F32, 2);
    return g;
}

/* y = If(flag) { Neg(x) } else { Add(x, w) }: x an outer input, w an outer
 * initializer, `hole` (when set) a name the else branch reads that no scope defines. */
static smelt_status load(const char *hole, ir_graph **out)
{
    static const int64_t d2x3[2] = {2, 3};
    static const float wv[6] = {1, 2, 3, 4, 5, 6};
    Onnx__ModelProto m;
    Onnx__GraphProto g;
    Onnx__OperatorSetIdProto op;
    onnx__model_proto__init(&m);
    onnx__graph_proto__init(&g);
    onnx__operator_set_id_proto__init(&op);
    m.has_ir_version = 1;
    m.ir_version = 8;
    m.graph = &g;
    op.has_version = 1;
    op.version = 17;
    op.domain = "";
    Onnx__OperatorSetIdProto *ops[1] = {&op};
    m.n_opset_import = 1;
    m.opset_import = ops;
    Onnx__TensorProto *w = palloc(sizeof *w);
    onnx__tensor_proto__init(w);
    w->name = "w";
    w->has_data_type = 1;
    w->data_type = SMELT_F32;
    w->n_dims = 2;
    w->dims = (int64_t *)d2x3;
    w->has_raw_data = 1;
    w->raw_data.len = sizeof wv;
    w->raw_data.data = (uint8_t *)wv;
    Onnx__NodeProto *iff = node("If", "if1", 1, "flag", NULL, "y");
    Onnx__AttributeProto *at[2];
    for (int i = 0; i < 2; i++) {
        at[i] = palloc(sizeof *at[i]);
        onnx__attribute_proto__init(at[i]);
        at[i]->has_type = 1;
        at[i]->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
    }
    at[0]->name = "then_branch";
    at[0]->g = branch(node("Neg", "neg1", 1, "x", NULL, "t"), "t");
    at[1]->name = "else_branch";
    at[1]->g = branch(node("Add", "add1", 2, "x", hole ? hole : "w", "e"), "e");
    iff->n_attribute = 2;
    iff->attribute = at;
    Onnx__NodeProto *nodes[1] = {iff};
    Onnx__ValueInfoProto *ins[2] = {vinfo("x", SMELT_F32, 2), vinfo("flag", SMELT_BOOL, 0)};
    Onnx__ValueInfoProto *outs[1] = {vinfo("y", SMELT_F32, 2)};
    Onnx__TensorProto *inits[1] = {w};
    g.name = "control";
    g.n_node = 1, g.node = nodes;
    g.n_input = 2, g.input = ins;
    g.n_output = 1, g.output = outs;
    g.n_initializer = 1, g.initializer = inits;
    size_t size = onnx__model_proto__get_packed_size(&m);
    uint8_t *buf = palloc(size);
    onnx__model_proto__pack(&m, buf);
    return onnx_load_memory(buf, size, NULL, out);
}

static int count_op(const ir_graph *g, op_id op)
{
    int c = 0;
    for (int i = 0; i < g->n_nodes; i++) c += !g->nodes[i].dead && g->nodes[i].op == op;
    return c;
}

TEST(control_if_captures_outer_values)
{
    ir_graph *g = NULL;
    CHECK_EQ_INT(load(NULL, &g), SMELT_OK);
    if (g) {
        CHECK_EQ_INT(g->n_nodes, 1);
        const ir_node *n = &g->nodes[0];
        CHECK(n->op == OP_If);
        CHECK_EQ_INT(n->n_in, 3); /* flag, then x and w as implicit inputs */
        const ir_attr *t = ir_attr_find(n, "then_branch"), *e = ir_attr_find(n, "else_branch");
        CHECK(t && t->type == IR_ATTR_GRAPH && e && e->type == IR_ATTR_GRAPH);
        if (t && e && t->type == IR_ATTR_GRAPH && e->type == IR_ATTR_GRAPH) {
            CHECK_EQ_INT(t->n_cap, 1);
            CHECK_EQ_INT(e->n_cap, 2);
            CHECK_EQ_INT(t->graph->n_inputs, 1);
            CHECK(strcmp(g->tensors[n->in[t->cap[0]]].name, "x") == 0);
            CHECK(strcmp(g->tensors[n->in[e->cap[1]]].name, "w") == 0);
            CHECK(g->tensors[n->in[e->cap[1]]].data != NULL);
            ir_graph *c = ir_graph_clone(g);
            CHECK(c != NULL);
            if (c) {
                const ir_attr *ct = ir_attr_find(&c->nodes[0], "then_branch");
                CHECK(ct && ct->graph != t->graph && ct->graph->n_nodes == t->graph->n_nodes);
                ir_graph_free(c);
            }
        }
        ir_graph_free(g);
    }
    pool_free();
}

TEST(control_if_known_condition_inlines_one_branch)
{
    for (int flag = 0; flag < 2; flag++) {
        ir_graph *g = NULL;
        CHECK_EQ_INT(load(NULL, &g), SMELT_OK);
        if (!g) continue;
        uint8_t fv = (uint8_t)flag;
        float xv[6] = {0};
        smelt_tensor in[2] = {{.name = "x", .dtype = SMELT_F32, .rank = 2, .shape = {2, 3}, .data = xv},
                              {.name = "flag", .dtype = SMELT_BOOL, .rank = 0, .data = &fv}};
        CHECK_EQ_INT(graph_bind_inputs(g, 2, in), SMELT_OK);
        CHECK_EQ_INT(graph_infer(g, lower_eval_node), SMELT_OK);
        CHECK_EQ_INT(count_op(g, OP_If), 0);
        CHECK_EQ_INT(count_op(g, OP_Neg), flag);
        CHECK_EQ_INT(count_op(g, OP_Add), 1 - flag);
        CHECK_EQ_INT(count_op(g, OP_Where), 0);
        ir_graph_free(g);
    }
    pool_free();
}

TEST(control_if_run_time_condition_selects)
{
    ir_graph *g = NULL;
    CHECK_EQ_INT(load(NULL, &g), SMELT_OK);
    if (g) {
        smelt_tensor in[1] = {{.name = "x", .dtype = SMELT_F32, .rank = 2, .shape = {2, 3}}};
        CHECK_EQ_INT(graph_bind_inputs(g, 1, in), SMELT_OK); /* flag's value not given */
        CHECK_EQ_INT(graph_infer(g, lower_eval_node), SMELT_OK);
        CHECK_EQ_INT(count_op(g, OP_If), 0);
        CHECK_EQ_INT(count_op(g, OP_Neg), 1);
        CHECK_EQ_INT(count_op(g, OP_Add), 1);
        CHECK_EQ_INT(count_op(g, OP_Where), 1);
        ir_graph_free(g);
    }
    pool_free();
}

TEST(control_if_undefined_name_is_an_error)
{
    ir_graph *g = NULL;
    CHECK_EQ_INT(load("nowhere", &g), SMELT_ERR_MODEL);
    CHECK(g == NULL);
    pool_free();
}
