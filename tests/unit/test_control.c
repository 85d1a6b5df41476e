/* test_control.c — If/Loop/Scan: subgraph import with outer-scope captures,
 * cloning, expansion by graph_infer, and run-time If kept as one node: its
 * child graphs and the if command of the program's command list. */
#include <stdlib.h>
#include <string.h>

#include "api/program.h"
#include "graph/passes.h"
#include "lower/lower.h"
#include "onnx/onnx.h"
#include "onnx/onnx.pb-c.h"
#include "onnx_models.h"
#include "test.h"

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

/* A float or bool value of shape 2x3 (rank 2) or a scalar (rank 0). */
static Onnx__ValueInfoProto *vinfo(const char *name, int elem, int rank)
{
    static const int64_t dims[2] = {2, 3};
    return value_info(name, elem, rank, dims, NULL);
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

TEST(control_if_run_time_condition_stays_one_node)
{
    ir_graph *g = NULL;
    CHECK_EQ_INT(load(NULL, &g), SMELT_OK);
    if (g) {
        smelt_tensor in[1] = {{.name = "x", .dtype = SMELT_F32, .rank = 2, .shape = {2, 3}}};
        CHECK_EQ_INT(graph_bind_inputs(g, 1, in), SMELT_OK); /* flag's value not given */
        CHECK_EQ_INT(graph_infer(g, lower_eval_node), SMELT_OK);
        CHECK_EQ_INT(count_op(g, OP_If), 1); /* neither branch inlined: they become child programs */
        CHECK_EQ_INT(count_op(g, OP_Neg), 0);
        CHECK_EQ_INT(count_op(g, OP_Add), 0);
        CHECK_EQ_INT(count_op(g, OP_Where), 0);
        for (int i = 0; i < g->n_nodes; i++)
            if (!g->nodes[i].dead && g->nodes[i].op == OP_If) CHECK(control_is_runtime(&g->nodes[i]));
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

TEST(control_child_graph_types_inputs_and_folds_constant_captures)
{
    ir_graph *g = NULL;
    CHECK_EQ_INT(load(NULL, &g), SMELT_OK);
    if (g) {
        smelt_tensor in[1] = {{.name = "x", .dtype = SMELT_F32, .rank = 2, .shape = {2, 3}}};
        CHECK_EQ_INT(graph_bind_inputs(g, 1, in), SMELT_OK);
        CHECK_EQ_INT(graph_infer(g, lower_eval_node), SMELT_OK);
        int ni = -1;
        for (int i = 0; i < g->n_nodes; i++)
            if (!g->nodes[i].dead && g->nodes[i].op == OP_If) ni = i;
        CHECK(ni >= 0);
        ir_graph *c = NULL;
        int *map = NULL;
        if (ni >= 0) CHECK_EQ_INT(control_child_graph(g, &g->nodes[ni], "else_branch", &c, &map), SMELT_OK);
        if (c) {
            /* x stays an input (a run-time value of the parent), typed from it; w, a constant, became the child's */
            CHECK_EQ_INT(c->n_inputs, 1);
            const ir_tensor *x = &c->tensors[c->inputs[0]];
            CHECK(strcmp(x->name, "x") == 0 && x->dtype == SMELT_F32 && x->shape.rank == 2 && x->shape.dim[1] == 3);
            CHECK(strcmp(g->tensors[g->nodes[ni].in[map[0]]].name, "x") == 0);
            int w = -1;
            for (int t = 0; t < c->n_tensors; t++)
                if (strcmp(c->tensors[t].name, "w") == 0) w = t;
            CHECK(w >= 0 && c->tensors[w].data && !c->tensors[w].is_input && ((const float *)c->tensors[w].data)[5] == 6);
            CHECK_EQ_INT(graph_infer(c, lower_eval_node), SMELT_OK);
            ir_graph_free(c);
        }
        free(map);
        if (ni >= 0) CHECK_EQ_INT(control_child_graph(g, &g->nodes[ni], "body", &c, &map), SMELT_ERR_MODEL);
        ir_graph_free(g);
    }
    pool_free();
}

TEST(control_commands_name_children_and_bind_parent_slots)
{
    ir_graph *g = NULL;
    CHECK_EQ_INT(load(NULL, &g), SMELT_OK);
    if (!g) return;
    struct smelt_model m = {.g = g};
    smelt_options opt;
    smelt_options_init(&opt);
    opt.stop_after = SMELT_STAGE_PLAN;
    smelt_tensor in[1] = {{.name = "x", .dtype = SMELT_F32, .rank = 2, .shape = {2, 3}}};
    smelt_program *p = NULL;
    CHECK_EQ_INT(smelt_program_compile(&m, &opt, 1, in, &p), SMELT_OK);
    if (p) {
        plan_commands *c = &p->cmds;
        CHECK_EQ_INT(c->count[PLAN_CMD_IF], 1);
        CHECK_EQ_INT(c->count[PLAN_CMD_LOOP], 0);
        CHECK_EQ_INT(c->count[PLAN_CMD_DISPATCH], 0); /* the branches' kernels are the children's */
        CHECK_EQ_INT(c->n_children, 2);
        int ci = -1;
        for (int i = 0; i < c->n_cmds; i++)
            if (c->cmds[i].kind == PLAN_CMD_IF) ci = i;
        CHECK(ci > 0);
        if (ci > 0) {
            plan_cmd *x = &c->cmds[ci];
            const ir_node *n = &p->g->nodes[x->node];
            CHECK(n->op == OP_If && control_is_runtime(n));
            CHECK(c->cmds[ci - 1].kind == PLAN_CMD_BARRIER && c->cmds[ci - 1].host);
            CHECK_EQ_INT(x->child, 0);
            CHECK_EQ_INT(x->n_args, n->n_in + n->n_out);
            CHECK_EQ_INT(c->args[x->first_arg], n->in[0]); /* the condition, read on the host */
            CHECK_EQ_INT(c->args[x->first_arg + n->n_in], n->out[0]);
            CHECK(p->plan.slots[n->out[0]].kind == PLAN_ARENA); /* the result lives in the parent's planned memory */
            bool writes_y = false;
            for (int r = 0; r < x->n_ranges; r++)
                writes_y |= c->ranges[x->first_range + r].slot == n->out[0] && c->ranges[x->first_range + r].write;
            CHECK(writes_y);
            CHECK_EQ_INT(plan_commands_verify(c, p->g, &p->lp, &p->plan, true), SMELT_OK);
            plan_cmd saved = *x;
            x->child = 1; /* names a child past the two there are */
            CHECK_EQ_INT(plan_commands_verify(c, p->g, &p->lp, &p->plan, true), SMELT_ERR_INTERNAL);
            *x = saved;
            c->cmds[ci - 1].host = false; /* the host would read the condition before the device wrote it */
            CHECK_EQ_INT(plan_commands_verify(c, p->g, &p->lp, &p->plan, true), SMELT_ERR_INTERNAL);
            c->cmds[ci - 1].host = true;
            x->kind = PLAN_CMD_LOOP;
            c->count[PLAN_CMD_IF]--, c->count[PLAN_CMD_LOOP]++;
            CHECK_EQ_INT(plan_commands_verify(c, p->g, &p->lp, &p->plan, true), SMELT_ERR_INTERNAL);
            x->kind = PLAN_CMD_IF;
            c->count[PLAN_CMD_IF]++, c->count[PLAN_CMD_LOOP]--;
        }
        smelt_program_free(p);
    }
    ir_graph_free(g);
    pool_free();
}

/* v = Loop(M = m, v0) { v + 1 } built by hand: the body reads v and a constant. */
static ir_graph *counting_loop(int64_t m)
{
    ir_graph *g = ir_graph_new(), *b = ir_graph_new();
    if (!g || !b) {
        ir_graph_free(g);
        ir_graph_free(b);
        return NULL;
    }
    ir_shape s4 = {.rank = 1, .dim = {4}};
    int bi = ir_tensor_add(b, "i", SMELT_I64, NULL), bc = ir_tensor_add(b, "cond", SMELT_BOOL, NULL);
    int bv = ir_tensor_add(b, "v", SMELT_F32, &s4), one = ir_tensor_add(b, "one", SMELT_F32, NULL);
    int bv2 = ir_tensor_add(b, "v2", SMELT_F32, NULL), bc2 = ir_tensor_add(b, "cond2", SMELT_BOOL, NULL);
    *(float *)ir_tensor_alloc_data(b, one) = 1;
    int add_in[2] = {bv, one};
    ir_node_add(b, "add", OP_Add, 2, add_in, 1, &bv2);
    ir_node_add(b, "keep", OP_Identity, 1, &bc, 1, &bc2);
    int b_in[3] = {bi, bc, bv}, b_out[2] = {bc2, bv2};
    ir_graph_set_io(b, 3, b_in, 2, b_out);
    int mt = ir_tensor_add(g, "M", SMELT_I64, NULL), v0 = ir_tensor_add(g, "v0", SMELT_F32, &s4);
    int vn = ir_tensor_add(g, "vN", SMELT_F32, NULL);
    *(int64_t *)ir_tensor_alloc_data(g, mt) = m;
    g->tensors[v0].is_input = true;
    int l_in[3] = {mt, -1, v0};
    int n = ir_node_add(g, "loop1", OP_Loop, 3, l_in, 1, &vn);
    ir_attr body = {.name = "body", .type = IR_ATTR_GRAPH, .graph = b, .tensor = -1};
    ir_node_attr_add(g, n, &body);
    ir_graph_adopt(g, b);
    ir_graph_set_io(g, 1, &v0, 1, &vn);
    g->opset = 17;
    return g;
}

TEST(control_loop_rule_unrolls_small_and_keeps_long_loops)
{
    for (int64_t m = 16; m <= 17; m++) {
        ir_graph *g = counting_loop(m);
        CHECK(g != NULL);
        if (!g) continue;
        CHECK_EQ_INT(graph_infer(g, lower_eval_node), SMELT_OK);
        /* at most CONTROL_UNROLL_MAX iterations: unrolled, one Add per iteration; more: one run-time node */
        CHECK_EQ_INT(count_op(g, OP_Add), m <= CONTROL_UNROLL_MAX ? (int)m : 0);
        CHECK_EQ_INT(count_op(g, OP_Loop), m <= CONTROL_UNROLL_MAX ? 0 : 1);
        for (int i = 0; i < g->n_nodes; i++) {
            const ir_node *n = &g->nodes[i];
            if (n->dead || n->op != OP_Loop) continue;
            CHECK(control_is_runtime(n));
            /* out: the carried value, its second set, the body's iteration number and condition */
            CHECK_EQ_INT(n->n_out, 4);
            CHECK_EQ_INT(ir_attr_int(n, "smelt_nout", -1), 1);
            CHECK(g->tensors[n->out[1]].dtype == SMELT_F32 && ir_shape_eq(&g->tensors[n->out[1]].shape, &g->tensors[n->out[0]].shape));
            CHECK(g->tensors[n->out[2]].dtype == SMELT_I64 && g->tensors[n->out[3]].dtype == SMELT_BOOL);
        }
        ir_graph_free(g);
    }
}

TEST(control_loop_command_binds_both_sets_in_planned_memory)
{
    ir_graph *g = counting_loop(1000);
    CHECK(g != NULL);
    if (!g) return;
    struct smelt_model m = {.g = g};
    smelt_options opt;
    smelt_options_init(&opt);
    opt.stop_after = SMELT_STAGE_PLAN;
    smelt_program *p = NULL;
    CHECK_EQ_INT(smelt_program_compile(&m, &opt, 0, NULL, &p), SMELT_OK);
    if (p) {
        const plan_commands *c = &p->cmds;
        CHECK_EQ_INT(c->count[PLAN_CMD_LOOP], 1);
        CHECK_EQ_INT(c->n_children, 1);
        for (int i = 0; i < c->n_cmds; i++) {
            const plan_cmd *x = &c->cmds[i];
            if (x->kind != PLAN_CMD_LOOP) continue;
            const ir_node *n = &p->g->nodes[x->node];
            CHECK_EQ_INT(x->n_args, 3 + 4);
            CHECK_EQ_INT(c->args[x->first_arg + 1], -1); /* no condition input */
            const mem_plan *mp = &p->plan;
            int a = c->args[x->first_arg + 3], b = c->args[x->first_arg + 4];
            CHECK(a == n->out[0] && b == n->out[1]);
            /* the two sets are arena slots live at once: no overlap */
            CHECK(mp->slots[a].kind == PLAN_ARENA && mp->slots[b].kind == PLAN_ARENA);
            CHECK(mp->slots[a].offset + mp->slots[a].bytes <= mp->slots[b].offset ||
                  mp->slots[b].offset + mp->slots[b].bytes <= mp->slots[a].offset);
        }
        smelt_program_free(p);
    }
    ir_graph_free(g);
}
