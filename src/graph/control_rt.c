/*
 * control_rt.c — If, Loop and Scan kept as one node that runs at run time:
 * the unroll-or-keep rule, the kept node's outputs (the memory its loop
 * needs included) and the child graphs api/ compiles once each. The rule and
 * the node layout are in passes.h.
 *
 * requires: the node's inputs inferred.
 * guarantees: a kept node carries `smelt_rt`, and its outputs have dtypes and
 * shapes; its subgraphs, typed from the parent, infer.
 */
#include <stdlib.h>
#include <string.h>

#include "graph/passes.h"

bool control_is_runtime(const ir_node *n) { return (op_get(n->op)->flags & OPF_CONTROL) && ir_attr_int(n, "smelt_rt", 0); }

static smelt_status oom(const ir_node *n) { return ir_node_fail(n, SMELT_ERR_NOMEM, "out of memory keeping it for run time"); }

/* Scan's state count N and scan-input count S. */
static void scan_counts(const ir_node *n, const ir_attr *body, int *N, int *S)
{
    *S = (int)ir_attr_int(n, "num_scan_inputs", -1);
    *N = n->n_in - body->n_cap - *S;
}

smelt_status control_child_graph(const ir_graph *g, const ir_node *n, const char *attr, ir_graph **out, int **child_in)
{
    *out = NULL;
    *child_in = NULL;
    const ir_attr *a = ir_attr_find(n, attr);
    if (!a || a->type != IR_ATTR_GRAPH) return ir_node_fail(n, SMELT_ERR_MODEL, "attribute '%s' (a graph) is missing", attr);
    const ir_graph *sub = a->graph;
    int n_formal = sub->n_inputs - a->n_cap, N = 0, S = 0;
    if (n->op == OP_Scan) scan_counts(n, a, &N, &S);
    if (n_formal < 0 || (n->op == OP_If && n_formal != 0) || (n->op == OP_Loop && n_formal != n->n_in - a->n_cap) ||
        (n->op == OP_Scan && (S < 1 || n_formal != N + S)))
        return ir_node_fail(n, SMELT_ERR_MODEL, "'%s' takes %d inputs, which do not match the node's", attr, n_formal);
    ir_graph *c = ir_graph_clone_sharing_data(sub);
    int *map = malloc(sizeof(int) * ((size_t)sub->n_inputs + 1));
    if (!c || !map) {
        ir_graph_free(c);
        free(map);
        return oom(n);
    }
    int kept = 0;
    for (int i = 0; i < c->n_inputs; i++) {
        int t = c->inputs[i];
        ir_tensor *x = &c->tensors[t];
        int src = i >= n_formal ? a->cap[i - n_formal] : n->op == OP_Loop && i < 2 ? -1 - i : i;
        memset(x->dim_param, 0, sizeof x->dim_param);
        if (src < 0) {
            x->dtype = src == -1 ? SMELT_I64 : SMELT_BOOL;
            x->shape.rank = 0;
        } else {
            const ir_tensor *p = &g->tensors[n->in[src]];
            x->dtype = p->dtype;
            x->shape = p->shape;
            if (n->op == OP_Scan && i >= N && i < n_formal) { /* one element of the sequence (axis 0) */
                x->shape.rank--;
                memmove(x->shape.dim, x->shape.dim + 1, sizeof(int64_t) * (size_t)x->shape.rank);
            }
            if (i >= n_formal && p->data) { /* a constant of the parent: a constant of the child, folded there */
                size_t bytes = (size_t)ir_tensor_numel(p) * smelt_dtype_size(p->dtype);
                if (!ir_tensor_alloc_data(c, t)) {
                    ir_graph_free(c);
                    free(map);
                    return oom(n);
                }
                x = &c->tensors[t];
                if (bytes) memcpy(x->data, p->data, bytes);
                x->is_input = false;
                continue;
            }
        }
        c->inputs[kept] = t;
        map[kept++] = src;
    }
    c->n_inputs = kept;
    *out = c;
    *child_in = map;
    return SMELT_OK;
}

/* The child graph of `attr`, inferred: NULL with *st set when it does not infer. */
static ir_graph *child_inferred(const ir_graph *g, const ir_node *n, const char *attr, int **map, smelt_status *st)
{
    ir_graph *c;
    if ((*st = control_child_graph(g, n, attr, &c, map))) return NULL;
    if ((*st = graph_infer(c, graph_infer_evaluator()))) {
        *st = diag_context(*st, "in '%s' of node '%s'", attr, n->name);
        ir_graph_free(c);
        free(*map);
        *map = NULL;
        return NULL;
    }
    return c;
}

/* Whether tensor t is read by a live node of g. */
static bool is_read(const ir_graph *g, int t)
{
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; !g->nodes[i].dead && k < g->nodes[i].n_in; k++)
            if (g->nodes[i].in[k] == t) return true;
    return false;
}

/* Output k (tensor t) of n gets a shape known only after the run: allowed
 * where nothing compiled needs it (a graph output no node reads). */
static smelt_status dyn_ok(const ir_graph *g, const ir_node *n, int k, int t, const char *why)
{
    if (t < 0 || (g->tensors[t].is_output && !is_read(g, t))) return SMELT_OK;
    return ir_node_fail(n, SMELT_ERR_UNSUPPORTED,
                        "output %d ('%s') %s, so its shape is known only at run time; smelt allows that for a graph output "
                        "no other node reads, and here a later node needs a static shape",
                        k, g->tensors[t].name, why);
}

/* Replace node ni by a copy with outputs outs[0..n_out) and the run-time
 * attributes; the old node is left dead at the end of the node list. */
static smelt_status replace_node(ir_graph *g, int ni, int n_out, const int *outs, int64_t n_model_out, int64_t dyn,
                                 int64_t grow)
{
    const ir_node *n = &g->nodes[ni];
    int e = ir_node_add(g, n->name, n->op, n->n_in, n->in, n_out, outs);
    if (e < 0) return oom(&g->nodes[ni]);
    for (int a = 0; a < g->nodes[ni].n_attr; a++)
        if (!ir_node_attr_add(g, e, &g->nodes[ni].attr[a])) return oom(&g->nodes[ni]);
    ir_attr rt = {.name = "smelt_rt", .type = IR_ATTR_INT, .i = 1, .tensor = -1};
    ir_attr no = {.name = "smelt_nout", .type = IR_ATTR_INT, .i = n_model_out, .tensor = -1};
    ir_attr dy = {.name = "smelt_dyn", .type = IR_ATTR_INT, .i = dyn, .tensor = -1};
    ir_attr gr = {.name = "smelt_grow", .type = IR_ATTR_INT, .i = grow, .tensor = -1};
    if (!ir_node_attr_add(g, e, &rt) || !ir_node_attr_add(g, e, &no) || !ir_node_attr_add(g, e, &dy) ||
        !ir_node_attr_add(g, e, &gr))
        return oom(&g->nodes[ni]);
    ir_node tmp = g->nodes[ni];
    g->nodes[ni] = g->nodes[e];
    g->nodes[e] = tmp;
    g->nodes[e].dead = true;
    for (int k = 0; k < n_out; k++)
        if (outs[k] >= 0) g->tensors[outs[k]].producer = ni;
    return SMELT_OK;
}

/* A new tensor "<node>/<what><k>" of t's dtype and shape. */
static int like(ir_graph *g, const char *node, const char *what, int k, smelt_dtype dt, const ir_shape *s)
{
    char name[600];
    snprintf(name, sizeof name, "%.500s/%s%d", node, what, k);
    return ir_tensor_add(g, name, dt, s);
}

static bool scalar_of(const ir_tensor *t, smelt_dtype dt) { return t->dtype == dt && ir_tensor_numel(t) == 1; }

static smelt_status keep_if(ir_graph *g, int ni)
{
    const ir_node *n = &g->nodes[ni];
    const ir_tensor *cond = &g->tensors[n->in[0]];
    if (!scalar_of(cond, SMELT_BOOL))
        return ir_node_fail(n, SMELT_ERR_MODEL, "condition '%s' is %s with %lld elements; it must be one bool", cond->name,
                            smelt_dtype_name(cond->dtype), (long long)ir_tensor_numel(cond));
    smelt_status st;
    int *tm = NULL, *em = NULL;
    ir_graph *tg = child_inferred(g, n, "then_branch", &tm, &st), *eg = tg ? child_inferred(g, n, "else_branch", &em, &st) : NULL;
    int64_t dyn = 0;
    if (eg && (tg->n_outputs != n->n_out || eg->n_outputs != n->n_out))
        st = ir_node_fail(n, SMELT_ERR_MODEL, "its branches have %d and %d outputs, the node %d", tg->n_outputs, eg->n_outputs,
                          n->n_out);
    if (eg && !st && n->n_out > 62) st = ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "more than 62 outputs");
    for (int k = 0; eg && !st && k < n->n_out; k++) {
        const ir_tensor *t = &tg->tensors[tg->outputs[k]], *e = &eg->tensors[eg->outputs[k]];
        char a[128], b[128];
        if (t->dtype != e->dtype)
            st = ir_node_fail(n, SMELT_ERR_MODEL, "its branches give output %d as %s and %s", k, smelt_dtype_name(t->dtype),
                              smelt_dtype_name(e->dtype));
        if (st || n->out[k] < 0) continue;
        ir_tensor *o = &g->tensors[n->out[k]];
        o->dtype = t->dtype;
        o->shape = ir_tensor_numel(t) >= ir_tensor_numel(e) ? t->shape : e->shape;
        if (ir_shape_eq(&t->shape, &e->shape)) continue;
        char why[300];
        snprintf(why, sizeof why, "is %s in the then branch and %s in the else branch", ir_shape_str(&t->shape, a, sizeof a),
                 ir_shape_str(&e->shape, b, sizeof b));
        st = dyn_ok(g, n, k, n->out[k], why);
        dyn |= (int64_t)1 << k;
    }
    ir_graph_free(tg);
    ir_graph_free(eg);
    free(tm);
    free(em);
    if (st) return st;
    n = &g->nodes[ni];
    int n_out = n->n_out;
    int *outs = malloc(sizeof(int) * ((size_t)n_out + 1));
    if (!outs) return oom(n);
    memcpy(outs, n->out, sizeof(int) * (size_t)n_out);
    st = replace_node(g, ni, n_out, outs, n_out, dyn, 0);
    free(outs);
    return st;
}

/* Whether the body's condition output is its condition input passed through
 * (Identity chains): then only the node's condition input can stop it. */
static bool cond_passthrough(const ir_graph *c, const int *map)
{
    int t = c->outputs[0];
    while (c->tensors[t].producer >= 0 && c->nodes[c->tensors[t].producer].op == OP_Identity)
        t = c->nodes[c->tensors[t].producer].in[0];
    for (int i = 0; i < c->n_inputs; i++)
        if (c->inputs[i] == t) return map[i] == -2;
    return c->tensors[t].data && ir_const_double(&c->tensors[t], 0) != 0;
}


/* Loop and Scan: the body as a child, the extra outputs, the node replaced. */
static smelt_status keep_loop(ir_graph *g, int ni, bool *kept)
{
    const ir_node *n = &g->nodes[ni];
    bool loop = n->op == OP_Loop;
    const ir_attr *body = ir_attr_find(n, "body");
    if (!body || body->type != IR_ATTR_GRAPH) return SMELT_OK; /* the unroller names the error */
    int C = body->n_cap, N, K, S = 0;
    int64_t m = -1; /* trip count known when compiling, else -1 */
    if (loop) {
        K = body->graph->n_outputs - 1 - (body->graph->n_inputs - C - 2);
        N = n->n_out - K;
        if (N < 0 || K < 0 || n->n_in != 2 + N + C) return SMELT_OK;
        if (n->in[0] >= 0) {
            const ir_tensor *t = &g->tensors[n->in[0]];
            if (!scalar_of(t, SMELT_I64))
                return ir_node_fail(n, SMELT_ERR_MODEL, "trip count '%s' is %s with %lld elements; it must be one int64",
                                    t->name, smelt_dtype_name(t->dtype), (long long)ir_tensor_numel(t));
            if (t->data) m = ir_const_int(t, 0);
        }
        if (n->in[1] >= 0) {
            const ir_tensor *t = &g->tensors[n->in[1]];
            if (!scalar_of(t, SMELT_BOOL))
                return ir_node_fail(n, SMELT_ERR_MODEL, "condition '%s' is %s with %lld elements; it must be one bool",
                                    t->name, smelt_dtype_name(t->dtype), (long long)ir_tensor_numel(t));
            if (t->data && ir_const_double(t, 0) == 0) return SMELT_OK; /* no iteration: the unroller says so */
        }
        if (m >= 0 && m <= CONTROL_UNROLL_MAX) return SMELT_OK;
        for (int k = 0; k < K && m < 0; k++) /* an unbounded scan output grows at run time: only as a graph output */
            if (n->out[N + k] >= 0 && (!g->tensors[n->out[N + k]].is_output || is_read(g, n->out[N + k]))) return SMELT_OK;
    } else {
        if (g->opset < 9 && !ir_attr_int(n, "smelt_scan9", 0)) return SMELT_OK;
        scan_counts(n, body, &N, &S);
        K = n->n_out - N;
        if (S < 1 || N < 0 || K < 0) return SMELT_OK;
        const char *lists[4] = {"scan_input_axes", "scan_input_directions", "scan_output_axes", "scan_output_directions"};
        for (int l = 0; l < 4; l++) {
            const int64_t *v;
            int cnt = ir_attr_ints(n, lists[l], &v);
            for (int i = 0; i < cnt; i++)
                if (v[i] != 0 && l != 1) return SMELT_OK; /* other axes and reversed outputs: unrolled */
        }
        const ir_tensor *x = &g->tensors[n->in[N]];
        if (x->shape.rank < 1) return SMELT_OK;
        m = x->shape.dim[0];
        for (int j = 1; j < S; j++)
            if (g->tensors[n->in[N + j]].shape.rank < 1 || g->tensors[n->in[N + j]].shape.dim[0] != m) return SMELT_OK;
        if (m <= CONTROL_UNROLL_MAX) return SMELT_OK;
    }
    smelt_status st;
    int *map = NULL;
    ir_graph *c = child_inferred(g, n, "body", &map, &st);
    if (!c) {
        if (m >= 0 && m <= 10000) { /* the unroller may still manage (a body whose shapes change per iteration) */
            diag_clear();
            return SMELT_OK;
        }
        return st;
    }
    int f = loop ? 1 : 0; /* body outputs before the carried values */
    if (c->n_outputs != f + N + K) st = ir_node_fail(n, SMELT_ERR_MODEL, "its body has %d outputs, not %d", c->n_outputs, f + N + K);
    if (!st && loop && !scalar_of(&c->tensors[c->outputs[0]], SMELT_BOOL)) {
        const ir_tensor *t = &c->tensors[c->outputs[0]];
        st = ir_node_fail(n, SMELT_ERR_MODEL, "its body's condition output '%s' is %s with %lld elements; it must be one bool",
                          t->name, smelt_dtype_name(t->dtype), (long long)ir_tensor_numel(t));
    }
    bool same = true;
    for (int j = 0; !st && j < N; j++) {
        const ir_tensor *o = &c->tensors[c->outputs[f + j]], *i0 = &g->tensors[n->in[(loop ? 2 : 0) + j]];
        same &= o->dtype == i0->dtype && ir_shape_eq(&o->shape, &i0->shape);
    }
    if (!st && !same) { /* a carried value that changes shape: only unrolling can follow it */
        if (m < 0 || m > 10000)
            st = ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "a carried value changes dtype or shape between iterations; smelt "
                              "unrolls such a loop, and this one's trip count is not known or over 10000");
        ir_graph_free(c);
        free(map);
        return st;
    }
    bool early = loop && (n->in[1] >= 0 ? !g->tensors[n->in[1]].data : false);
    if (loop && !st && !cond_passthrough(c, map)) early = true;
    int n_out = N + K + N + (loop ? 2 : 0);
    int *outs = malloc(sizeof(int) * ((size_t)n_out + 1));
    if (!outs) st = oom(n);
    int64_t dyn = 0, grow = 0;
    for (int j = 0; !st && j < N; j++) {
        const ir_tensor *s = &g->tensors[n->in[(loop ? 2 : 0) + j]];
        smelt_dtype dt = s->dtype;
        ir_shape sh = s->shape;
        outs[j] = n->out[j] >= 0 ? n->out[j] : like(g, n->name, "final", j, dt, &sh);
        outs[N + K + j] = like(g, g->nodes[ni].name, "carry", j, dt, &sh);
        n = &g->nodes[ni];
        if (outs[j] < 0 || outs[N + K + j] < 0) st = oom(n);
        else g->tensors[outs[j]].dtype = dt, g->tensors[outs[j]].shape = sh;
    }
    for (int k = 0; !st && k < K; k++) {
        const ir_tensor *e = &c->tensors[c->outputs[f + N + k]];
        outs[N + k] = n->out[N + k];
        if (outs[N + k] < 0) continue;
        if (e->shape.rank + 1 > IR_MAX_RANK) {
            st = ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "scan output %d would have rank %d, over %d", k, e->shape.rank + 1, IR_MAX_RANK);
            break;
        }
        ir_tensor *o = &g->tensors[outs[N + k]];
        o->dtype = e->dtype;
        o->shape.rank = e->shape.rank + 1;
        o->shape.dim[0] = m < 0 ? 0 : m; /* unbounded: no planned bytes, a buffer that grows (api/control.c) */
        memcpy(o->shape.dim + 1, e->shape.dim, sizeof(int64_t) * (size_t)e->shape.rank);
        if (m < 0) grow |= (int64_t)1 << ((N + k) & 63);
        if (early || m < 0) {
            st = dyn_ok(g, n, N + k, outs[N + k], "is a scan output of a loop its condition may end early");
            dyn |= (int64_t)1 << ((N + k) & 63);
        }
    }
    if (!st && loop) {
        outs[2 * N + K] = like(g, n->name, "iter", 0, SMELT_I64, NULL);
        outs[2 * N + K + 1] = like(g, g->nodes[ni].name, "cond", 0, SMELT_BOOL, NULL);
        if (outs[2 * N + K] < 0 || outs[2 * N + K + 1] < 0) st = oom(&g->nodes[ni]);
    }
    if (!st && (early || m < 0) && N + K > 62) st = ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "more than 62 outputs");
    ir_graph_free(c);
    free(map);
    if (!st) st = replace_node(g, ni, n_out, outs, N + K, dyn, grow);
    free(outs);
    if (!st) *kept = true;
    return st;
}

smelt_status control_keep(ir_graph *g, int node, bool *kept)
{
    *kept = false;
    switch (g->nodes[node].op) {
    case OP_If: {
        smelt_status st = keep_if(g, node);
        *kept = !st;
        return st;
    }
    case OP_Loop:
    case OP_Scan: return keep_loop(g, node, kept);
    default: return ir_node_fail(&g->nodes[node], SMELT_ERR_INTERNAL, "not a control-flow op");
    }
}
