/*
 * control.c — If, Loop and Scan expanded into the graph at compile time, or
 * kept for run time (control_rt.c; the rule is in passes.h).
 *
 * Shape inference meets a control-flow node once its inputs are inferred
 * (graph_infer calls the op table's `infer`, which is control_expand here for
 * the ops flagged OPF_CONTROL). A node the rule keeps stays one node that the
 * program runs on the host over child programs compiled once each; any other
 * is replaced, in place, by the nodes it runs, and inference goes on with the
 * first of them:
 *   - If: with a known condition (a constant, folded, or computed from small
 *     graph inputs whose values the program is specialised on: the op table
 *     marks `cond` as value_in, so graph_bind_inputs records and guards
 *     those inputs) the chosen branch is inlined; the other is never
 *     compiled. A run-time condition keeps the node: only the taken branch
 *     runs.
 *   - Loop (kept when its trip count is unknown or over CONTROL_UNROLL_MAX):
 *     with a known trip count and condition, one iteration of the body
 *     is inlined, followed by a Loop node for the remaining iterations (an
 *     internal `smelt_iter` attribute counts them; the scan outputs gathered
 *     so far travel as extra inputs). The body's condition output becomes the
 *     next node's condition, so a loop whose condition folds ends where it
 *     should; one computed from run-time data is an error naming the node.
 *   - Scan (kept when longer than CONTROL_UNROLL_MAX and over axis 0): the
 *     sequence length is a dimension, known once shapes are bound, so every
 *     iteration is inlined: the body reads its slice (Gather) and
 *     its scan outputs are joined with Unsqueeze + Concat.
 * A subgraph's inputs are its formal inputs followed by the outer-scope values
 * it reads (ir_attr.cap says which inputs of the node feed them), so inlining
 * maps them like any other input. Tensors of an inlined body are named
 * "<node>/<iteration>/<name>".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/passes.h"

/* Growth bounds: a model whose control flow unrolls into more is refused. */
#define CONTROL_NODES_MAX (1 << 20)
#define CONTROL_ITERS_MAX 10000

static smelt_status oom(const char *node)
{
    return diag_fail(SMELT_ERR_NOMEM, "out of memory expanding node '%s'", node);
}

/* A new int64 constant of `n` elements (a scalar when rank is 0). */
static int const_i64(ir_graph *g, const char *name, int rank, int n, const int64_t *v)
{
    ir_shape s = {.rank = rank, .dim = {n}};
    int t = ir_tensor_add(g, name, SMELT_I64, &s);
    if (t < 0 || !ir_tensor_alloc_data(g, t)) return -1;
    memcpy(g->tensors[t].data, v, sizeof(int64_t) * (size_t)n);
    return t;
}

static int const_bool(ir_graph *g, const char *name, bool v)
{
    int t = ir_tensor_add(g, name, SMELT_BOOL, NULL);
    if (t < 0 || !ir_tensor_alloc_data(g, t)) return -1;
    *(uint8_t *)g->tensors[t].data = v;
    return t;
}

/* Append node `op`(in) → out with one optional int/ints attribute. */
static int add_node(ir_graph *g, const char *name, op_id op, int n_in, const int *in, int out, const ir_attr *a)
{
    int n = ir_node_add(g, name, op, n_in, in, 1, &out);
    if (n >= 0 && a && !ir_node_attr_add(g, n, a)) return -1;
    return n;
}

/* Make `dst` (an output of the node being expanded) hold `src`: readers of
 * dst read src instead, and a graph output gets an Identity (it needs a node
 * of its own). Fewer copies, and no chains of views for the planner. */
static smelt_status set_output(ir_graph *g, const char *node, const char *name, int src, int dst)
{
    if (dst < 0 || src == dst) return SMELT_OK;
    if (g->tensors[dst].is_output)
        return add_node(g, name, OP_Identity, 1, &src, dst, NULL) < 0 ? oom(node) : SMELT_OK;
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_in; k++)
            if (g->nodes[i].in[k] == dst) g->nodes[i].in[k] = src;
    return SMELT_OK;
}

/* Copy `sub`'s nodes to the end of g: its input i reads g's tensor in_map[i];
 * out[k] receives the g tensor holding its output k. */
static smelt_status inline_graph(ir_graph *g, const char *node, const ir_graph *sub, const int *in_map,
                                 const char *prefix, int *out)
{
    if (g->n_nodes + sub->n_nodes > CONTROL_NODES_MAX)
        return diag_fail(SMELT_ERR_UNSUPPORTED, "node '%s': control flow unrolls into more than %d nodes", node,
                         CONTROL_NODES_MAX);
    int *tmap = malloc(sizeof(int) * ((size_t)sub->n_tensors + 1));
    int *buf = malloc(sizeof(int) * 64);
    if (!tmap || !buf) {
        free(tmap);
        free(buf);
        return oom(node);
    }
    int cap = 64;
    smelt_status st = SMELT_OK;
    char name[1024];
    for (int t = 0; t < sub->n_tensors; t++) tmap[t] = -1;
    for (int i = 0; i < sub->n_inputs; i++) tmap[sub->inputs[i]] = in_map[i];
    for (int t = 0; !st && t < sub->n_tensors; t++) {
        const ir_tensor *x = &sub->tensors[t];
        if (!x->data || tmap[t] >= 0) continue;
        snprintf(name, sizeof name, "%s%s", prefix, x->name);
        size_t bytes = (size_t)ir_tensor_numel(x) * smelt_dtype_size(x->dtype);
        int c = ir_tensor_add(g, name, x->dtype, &x->shape);
        if (c < 0 || !ir_tensor_alloc_data(g, c)) st = oom(node);
        else if (bytes) memcpy(g->tensors[c].data, x->data, bytes);
        tmap[t] = c;
    }
    for (int i = 0; !st && i < sub->n_nodes; i++) {
        const ir_node *s = &sub->nodes[i];
        if (s->dead) continue;
        if (s->op == OP_Identity && s->in[0] >= 0 && s->out[0] >= 0) { /* no copy: the name stands for its input */
            tmap[s->out[0]] = tmap[s->in[0]];
            continue;
        }
        if (s->n_in + s->n_out > cap) {
            cap = s->n_in + s->n_out;
            int *b = realloc(buf, sizeof(int) * (size_t)cap);
            if (!b) {
                st = oom(node);
                break;
            }
            buf = b;
        }
        for (int k = 0; k < s->n_in; k++) buf[k] = s->in[k] >= 0 ? tmap[s->in[k]] : -1;
        for (int k = 0; !st && k < s->n_out; k++) {
            if (s->out[k] < 0) {
                buf[s->n_in + k] = -1;
                continue;
            }
            const ir_tensor *x = &sub->tensors[s->out[k]];
            snprintf(name, sizeof name, "%s%s", prefix, x->name);
            if ((tmap[s->out[k]] = buf[s->n_in + k] = ir_tensor_add(g, name, x->dtype, NULL)) < 0) st = oom(node);
        }
        snprintf(name, sizeof name, "%s%s", prefix, s->name);
        int n = st ? -1 : ir_node_add(g, name, s->op, s->n_in, buf, s->n_out, buf + s->n_in);
        if (!st && n < 0) st = oom(node);
        for (int a = 0; !st && a < s->n_attr; a++) {
            ir_attr at = s->attr[a];
            if (at.type == IR_ATTR_TENSOR) at.tensor = tmap[at.tensor];
            if (at.type == IR_ATTR_GRAPH && (!(at.graph = ir_graph_clone(at.graph)) || !ir_graph_adopt(g, at.graph)))
                st = oom(node);
            if (!st && !ir_node_attr_add(g, n, &at)) st = oom(node);
        }
    }
    for (int k = 0; !st && k < sub->n_outputs; k++) out[k] = tmap[sub->outputs[k]];
    free(tmap);
    free(buf);
    return st;
}

/* Move the nodes appended since `first` to position `at` (just before the
 * control node, which is marked dead), renumbering producers. */
static smelt_status splice(ir_graph *g, const char *node, int at, int first)
{
    int cnt = g->n_nodes - first;
    ir_node *tmp = malloc(sizeof(ir_node) * ((size_t)cnt + 1));
    if (!tmp) return oom(node);
    memcpy(tmp, g->nodes + first, sizeof(ir_node) * (size_t)cnt);
    memmove(g->nodes + at + cnt, g->nodes + at, sizeof(ir_node) * (size_t)(first - at));
    memcpy(g->nodes + at, tmp, sizeof(ir_node) * (size_t)cnt);
    free(tmp);
    for (int t = 0; t < g->n_tensors; t++) {
        int p = g->tensors[t].producer;
        if (p >= first) g->tensors[t].producer = p - first + at;
        else if (p >= at) g->tensors[t].producer = p + cnt;
    }
    g->nodes[at + cnt].dead = true;
    return SMELT_OK;
}

static const ir_attr *graph_attr(const ir_node *n, const char *name, int n_formal, int n_out, smelt_status *st)
{
    const ir_attr *a = ir_attr_find(n, name);
    *st = SMELT_OK;
    if (!a || a->type != IR_ATTR_GRAPH)
        *st = ir_node_fail(n, SMELT_ERR_MODEL, "attribute '%s' (a graph) is missing", name);
    else if (a->graph->n_inputs != n_formal + a->n_cap)
        *st = ir_node_fail(n, SMELT_ERR_MODEL, "'%s' takes %d inputs, the op gives it %d", name,
                           a->graph->n_inputs - a->n_cap, n_formal);
    else if (n_out >= 0 && a->graph->n_outputs != n_out)
        *st = ir_node_fail(n, SMELT_ERR_MODEL, "'%s' has %d outputs, the node %d", name, a->graph->n_outputs, n_out);
    return *st ? NULL : a;
}

/* The boolean value of a condition input that must be known now. */
static smelt_status known_cond(const ir_graph *g, const ir_node *n, int k, bool *v)
{
    const ir_tensor *c = &g->tensors[n->in[k]];
    if (!c->data)
        return ir_node_fail(n, SMELT_ERR_UNSUPPORTED,
                            "condition '%s' is computed from run-time data; smelt runs control flow on conditions "
                            "known when compiling (constants, or values of graph inputs given at compile time)",
                            c->name);
    if (ir_tensor_numel(c) != 1)
        return ir_node_fail(n, SMELT_ERR_MODEL, "condition '%s' has %lld elements, not one", c->name,
                            (long long)ir_tensor_numel(c));
    *v = ir_const_double(c, 0) != 0;
    return SMELT_OK;
}

static smelt_status expand_if(ir_graph *g, int ni)
{
    const ir_node *n = &g->nodes[ni];
    if (!g->tensors[n->in[0]].data) {
        bool kept;
        return control_keep(g, ni, &kept); /* a run-time condition: only the taken branch runs */
    }
    bool c;
    TRY(known_cond(g, n, 0, &c));
    smelt_status st;
    const ir_attr *a = graph_attr(n, c ? "then_branch" : "else_branch", 0, n->n_out, &st);
    if (!a) return st;
    const char *name = n->name;
    int n_out = n->n_out, *outs = n->out, first = g->n_nodes;
    int *map = malloc(sizeof(int) * ((size_t)a->n_cap + (size_t)n_out + 1));
    if (!map) return oom(name);
    int *res = map + a->n_cap;
    for (int i = 0; i < a->n_cap; i++) map[i] = n->in[a->cap[i]];
    char prefix[512];
    snprintf(prefix, sizeof prefix, "%s/%s/", name, c ? "then" : "else");
    st = inline_graph(g, name, a->graph, map, prefix, res);
    for (int k = 0; !st && k < n_out; k++) {
        snprintf(prefix, sizeof prefix, "%s/out%d", name, k);
        st = set_output(g, name, prefix, res[k], outs[k]);
    }
    free(map);
    return st ? st : splice(g, name, ni, first);
}

/* Loop inputs: M, cond, N carried values, the body's captures, then (once an
 * iteration has run) the K scan outputs gathered so far. */
static smelt_status expand_loop(ir_graph *g, int ni)
{
    const ir_node *n = &g->nodes[ni];
    const ir_attr *body0 = ir_attr_find(n, "body");
    if (!body0 || body0->type != IR_ATTR_GRAPH) return ir_node_fail(n, SMELT_ERR_MODEL, "attribute 'body' (a graph) is missing");
    int64_t iter = ir_attr_int(n, "smelt_iter", 0);
    if (iter == 0) {
        bool kept;
        TRY(control_keep(g, ni, &kept));
        if (kept) return SMELT_OK;
        n = &g->nodes[ni];
        body0 = ir_attr_find(n, "body");
    }
    int C = body0->n_cap, K = body0->graph->n_outputs - 1 - (body0->graph->n_inputs - C - 2);
    int N = n->n_out - K;
    smelt_status st;
    const ir_attr *body = graph_attr(n, "body", 2 + N, 1 + N + K, &st);
    if (!body) return st;
    if (N < 0 || K < 0 || n->n_in != 2 + N + C + (iter > 0 ? K : 0))
        return ir_node_fail(n, SMELT_ERR_MODEL, "%d inputs and %d outputs do not match its body's %d and %d", n->n_in,
                            n->n_out, body->graph->n_inputs - C, body->graph->n_outputs);
    int64_t m = INT64_MAX;
    if (n->in[0] >= 0) {
        const ir_tensor *t = &g->tensors[n->in[0]];
        if (!t->data || ir_tensor_numel(t) != 1)
            return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "trip count '%s' must be a scalar known when compiling", t->name);
        m = ir_const_int(t, 0);
    }
    bool c = true;
    if (n->in[1] >= 0) TRY(known_cond(g, n, 1, &c));
    const char *name = n->name;
    int first = g->n_nodes, n_in = n->n_in, n_out = n->n_out;
    int *buf = malloc(sizeof(int) * ((size_t)n_in + (size_t)body->graph->n_inputs + (size_t)body->graph->n_outputs + 2 * (size_t)K + 4));
    if (!buf) return oom(name);
    int *ins = buf, *bin = buf + n_in + K + 2, *bout = bin + body->graph->n_inputs;
    memcpy(ins, n->in, sizeof(int) * (size_t)n_in);
    int *outs = n->out;
    char tn[512];
    st = SMELT_OK;
    if (iter >= m || !c) { /* done: carried values and gathered scan outputs are the results */
        for (int k = 0; !st && k < K; k++)
            if (iter == 0)
                st = ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "runs no iteration, so its scan output %d has no element "
                                  "shape (empty scan outputs are not supported)", k);
        for (int j = 0; !st && j < n_out; j++) {
            int src = j < N ? ins[2 + j] : ins[2 + N + C + (j - N)];
            snprintf(tn, sizeof tn, "%s/out%d", name, j);
            st = set_output(g, name, tn, src, outs[j]);
        }
        free(buf);
        return st ? st : splice(g, name, ni, first);
    }
    if (iter >= CONTROL_ITERS_MAX) {
        free(buf);
        return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "runs more than %d iterations at compile time", CONTROL_ITERS_MAX);
    }
    ir_attr body_attr = *body, iter_attr = {.name = "smelt_iter", .type = IR_ATTR_INT, .i = iter + 1, .tensor = -1};
    snprintf(tn, sizeof tn, "%s/%lld/iter", name, (long long)iter);
    bin[0] = const_i64(g, tn, 0, 1, &iter);
    snprintf(tn, sizeof tn, "%s/%lld/cond", name, (long long)iter);
    bin[1] = ins[1] >= 0 ? ins[1] : const_bool(g, tn, true);
    if (bin[0] < 0 || bin[1] < 0) st = oom(name);
    for (int j = 0; j < N; j++) bin[2 + j] = ins[2 + j];
    for (int i = 0; i < C; i++) bin[2 + N + i] = ins[body->cap[i]];
    snprintf(tn, sizeof tn, "%s/%lld/", name, (long long)iter);
    if (!st) st = inline_graph(g, name, body->graph, bin, tn, bout);
    /* The next Loop node: the body's condition and carried values, scan outputs so far. */
    if (ins[1] >= 0) ins[1] = bout[0];
    for (int j = 0; j < N; j++) ins[2 + j] = bout[1 + j];
    for (int k = 0; !st && k < K; k++) {
        const int64_t zero = 0;
        ir_attr axes = {.name = "axes", .type = IR_ATTR_INTS, .n = 1, .ints = (int64_t *)&zero, .tensor = -1};
        ir_attr axis = {.name = "axis", .type = IR_ATTR_INT, .i = 0, .tensor = -1};
        snprintf(tn, sizeof tn, "%s/%lld/scan%d", name, (long long)iter, k);
        int u = ir_tensor_add(g, tn, SMELT_UNDEFINED, NULL);
        if (u < 0 || add_node(g, tn, OP_Unsqueeze, 1, &bout[1 + N + k], u, &axes) < 0) {
            st = oom(name);
            break;
        }
        int acc = u;
        if (iter > 0) {
            int cat[2] = {ins[2 + N + C + k], u};
            snprintf(tn, sizeof tn, "%s/%lld/gathered%d", name, (long long)iter, k);
            if ((acc = ir_tensor_add(g, tn, SMELT_UNDEFINED, NULL)) < 0 || add_node(g, tn, OP_Concat, 2, cat, acc, &axis) < 0)
                st = oom(name);
        }
        ins[2 + N + C + k] = acc;
    }
    snprintf(tn, sizeof tn, "%s/%lld", name, (long long)(iter + 1));
    int nn = st ? -1 : ir_node_add(g, tn, OP_Loop, 2 + N + C + K, ins, n_out, outs);
    if (!st && (nn < 0 || !ir_node_attr_add(g, nn, &body_attr) || !ir_node_attr_add(g, nn, &iter_attr))) st = oom(name);
    free(buf);
    return st ? st : splice(g, name, ni, first);
}

/* The int attribute list `name` (default 0 each) into v[0..n). */
static smelt_status int_list(const ir_node *n, const char *name, int cnt, int64_t *v)
{
    const int64_t *a;
    int k = ir_attr_ints(n, name, &a);
    for (int i = 0; i < cnt; i++) v[i] = k < 0 ? 0 : i < k ? a[i] : 0;
    if (k >= 0 && k != cnt) return ir_node_fail(n, SMELT_ERR_MODEL, "'%s' has %d entries, expected %d", name, k, cnt);
    return SMELT_OK;
}

/* Join `cnt` tensors along `axis` into `out`, in groups Concat accepts. */
static smelt_status concat_many(ir_graph *g, const char *node, const char *prefix, int *t, int cnt, int64_t axis, int out)
{
    ir_attr a = {.name = "axis", .type = IR_ATTR_INT, .i = axis, .tensor = -1};
    char tn[600];
    while (cnt > 1) {
        int groups = 0;
        for (int i = 0; i < cnt; i += 64, groups++) {
            int len = cnt - i < 64 ? cnt - i : 64;
            int dst = cnt <= 64 ? out : -1;
            snprintf(tn, sizeof tn, "%.500s/cat%d_%d", prefix, cnt, groups);
            if (dst < 0 && (dst = ir_tensor_add(g, tn, SMELT_UNDEFINED, NULL)) < 0) return oom(node);
            if (add_node(g, tn, OP_Concat, len, t + i, dst, &a) < 0) return oom(node);
            t[groups] = dst;
        }
        if (cnt <= 64) return SMELT_OK;
        cnt = groups;
    }
    snprintf(tn, sizeof tn, "%.500s/only", prefix);
    return set_output(g, node, tn, t[0], out);
}

/* Scan of opset 8: inputs sequence_lens (optional), N states [B, ...], M
 * scan inputs [B, T, ...], captures; outputs N states [B, ...] and K scan
 * outputs [B, T, ...]. It becomes one opset-9 Scan per batch element (marked
 * `smelt_scan9`, expanded next), joined along axis 0. sequence_lens must be
 * absent or T for every batch element. */
static smelt_status expand_scan8(ir_graph *g, int ni)
{
    const ir_node *n = &g->nodes[ni];
    const ir_attr *b0 = ir_attr_find(n, "body");
    if (!b0 || b0->type != IR_ATTR_GRAPH) return ir_node_fail(n, SMELT_ERR_MODEL, "attribute 'body' (a graph) is missing");
    int M = (int)ir_attr_int(n, "num_scan_inputs", -1), C = b0->n_cap, N = n->n_in - 1 - C - M, K = n->n_out - N;
    if (M < 1 || N < 0 || K < 0)
        return ir_node_fail(n, SMELT_ERR_MODEL, "num_scan_inputs %d does not fit its %d inputs", M, n->n_in - C - 1);
    const ir_tensor *x = &g->tensors[n->in[1 + N]];
    if (x->shape.rank < 2) return ir_node_fail(n, SMELT_ERR_SHAPE, "scan input 0 needs a batch and a sequence axis");
    int64_t batch = x->shape.dim[0], len = x->shape.dim[1];
    if (batch < 1 || batch > CONTROL_ITERS_MAX)
        return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "batch %lld is not supported", (long long)batch);
    if (n->in[0] >= 0) {
        const ir_tensor *sl = &g->tensors[n->in[0]];
        bool full = sl->data && ir_tensor_numel(sl) == batch;
        for (int64_t b = 0; full && b < batch; b++) full = ir_const_int(sl, b) == len;
        if (!full)
            return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "sequence_lens must be a constant equal to the sequence "
                                "length (%lld) for every batch element", (long long)len);
    }
    const int64_t *dirs;
    int nd = ir_attr_ints(n, "directions", &dirs);
    const char *name = n->name;
    int first = g->n_nodes, n_in = n->n_in, n_out = n->n_out, *in = n->in, *outs = n->out;
    ir_attr body = *b0, m_attr = {.name = "num_scan_inputs", .type = IR_ATTR_INT, .i = M, .tensor = -1};
    ir_attr mark = {.name = "smelt_scan9", .type = IR_ATTR_INT, .i = 1, .tensor = -1};
    ir_attr dir_attr = {.name = "scan_input_directions", .type = IR_ATTR_INTS, .n = nd, .ints = (int64_t *)dirs, .tensor = -1};
    int *buf = malloc(sizeof(int) * ((size_t)n_in + (size_t)C + (size_t)n_out * (size_t)(batch + 1) + 1));
    if (!buf) return oom(name);
    int *bin = buf, *cap = bin + n_in, *res = cap + C + 1;
    for (int i = 0; i < C; i++) cap[i] = b0->cap[i] - 1; /* sequence_lens is gone */
    body.cap = cap;
    smelt_status st = SMELT_OK;
    char tn[600];
    for (int64_t b = 0; !st && b < batch; b++) {
        snprintf(tn, sizeof tn, "%s/b%lld", name, (long long)b);
        int idx = const_i64(g, tn, 0, 1, &b);
        ir_attr axis = {.name = "axis", .type = IR_ATTR_INT, .i = 0, .tensor = -1};
        for (int j = 0; !st && j < N + M; j++) {
            int gi[2] = {in[1 + j], idx};
            snprintf(tn, sizeof tn, "%s/b%lld/in%d", name, (long long)b, j);
            if (idx < 0 || (bin[j] = ir_tensor_add(g, tn, SMELT_UNDEFINED, NULL)) < 0 ||
                add_node(g, tn, OP_Gather, 2, gi, bin[j], &axis) < 0)
                st = oom(name);
        }
        for (int i = 0; i < C; i++) bin[N + M + i] = in[1 + N + M + i];
        int *o = res + (size_t)b * (size_t)n_out;
        for (int k = 0; !st && k < n_out; k++) {
            snprintf(tn, sizeof tn, "%s/b%lld/out%d", name, (long long)b, k);
            if ((o[k] = ir_tensor_add(g, tn, SMELT_UNDEFINED, NULL)) < 0) st = oom(name);
        }
        snprintf(tn, sizeof tn, "%s/b%lld", name, (long long)b);
        int nn = st ? -1 : ir_node_add(g, tn, OP_Scan, N + M + C, bin, n_out, o);
        if (!st && (nn < 0 || !ir_node_attr_add(g, nn, &body) || !ir_node_attr_add(g, nn, &m_attr) ||
                    !ir_node_attr_add(g, nn, &mark) || (nd > 0 && !ir_node_attr_add(g, nn, &dir_attr))))
            st = oom(name);
    }
    int *col = malloc(sizeof(int) * ((size_t)batch + 1));
    if (!st && !col) st = oom(name);
    for (int k = 0; !st && k < n_out; k++) {
        const int64_t zero = 0;
        ir_attr axes = {.name = "axes", .type = IR_ATTR_INTS, .n = 1, .ints = (int64_t *)&zero, .tensor = -1};
        for (int64_t b = 0; !st && b < batch; b++) {
            snprintf(tn, sizeof tn, "%s/b%lld/stack%d", name, (long long)b, k);
            int src = res[(size_t)b * (size_t)n_out + (size_t)k];
            if ((col[b] = ir_tensor_add(g, tn, SMELT_UNDEFINED, NULL)) < 0 ||
                add_node(g, tn, OP_Unsqueeze, 1, &src, col[b], &axes) < 0)
                st = oom(name);
        }
        snprintf(tn, sizeof tn, "%s/out%d", name, k);
        if (!st && outs[k] >= 0) st = concat_many(g, name, tn, col, (int)batch, 0, outs[k]);
    }
    free(col);
    free(buf);
    return st ? st : splice(g, name, ni, first);
}

/* Scan (opset 9+) inputs: N initial states, M scan inputs, captures. */
static smelt_status expand_scan(ir_graph *g, int ni)
{
    const ir_node *n = &g->nodes[ni];
    if (g->opset < 9 && !ir_attr_int(n, "smelt_scan9", 0)) return expand_scan8(g, ni);
    bool kept;
    TRY(control_keep(g, ni, &kept));
    if (kept) return SMELT_OK;
    n = &g->nodes[ni];
    const ir_attr *b0 = ir_attr_find(n, "body");
    if (!b0 || b0->type != IR_ATTR_GRAPH) return ir_node_fail(n, SMELT_ERR_MODEL, "attribute 'body' (a graph) is missing");
    int M = (int)ir_attr_int(n, "num_scan_inputs", -1), C = b0->n_cap, N = n->n_in - C - M, K = n->n_out - N;
    if (M < 1 || N < 0 || K < 0 || M > IR_MAX_RANK * 64)
        return ir_node_fail(n, SMELT_ERR_MODEL, "num_scan_inputs %d does not fit its %d inputs", M, n->n_in - C);
    smelt_status st;
    const ir_attr *body = graph_attr(n, "body", N + M, N + K, &st);
    if (!body) return st;
    int64_t *ax = malloc(sizeof(int64_t) * (size_t)(2 * (M + K) + 1));
    if (!ax) return oom(n->name);
    int64_t *dir = ax + M, *oax = dir + M, *odir = oax + K;
    st = int_list(n, "scan_input_axes", M, ax);
    if (!st) st = int_list(n, "scan_input_directions", M, dir);
    if (!st) st = int_list(n, "scan_output_axes", K, oax);
    if (!st) st = int_list(n, "scan_output_directions", K, odir);
    int64_t len = -1;
    for (int j = 0; !st && j < M; j++) {
        const ir_tensor *x = &g->tensors[n->in[N + j]];
        int r = x->shape.rank;
        if (ax[j] < -r || ax[j] >= r) st = ir_node_fail(n, SMELT_ERR_MODEL, "scan input %d: axis %lld is out of range", j, (long long)ax[j]);
        else if (ax[j] < 0) ax[j] += r;
        if (!st && len >= 0 && x->shape.dim[ax[j]] != len)
            st = ir_node_fail(n, SMELT_ERR_SHAPE, "scan inputs have different sequence lengths");
        if (!st) len = x->shape.dim[ax[j]];
    }
    if (!st && len < 1) st = ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "a sequence of length 0 is not supported");
    if (!st && len > CONTROL_ITERS_MAX)
        st = ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "runs more than %d iterations at compile time", CONTROL_ITERS_MAX);
    if (st) {
        free(ax);
        return st;
    }
    const char *name = n->name;
    int first = g->n_nodes, *outs = n->out;
    int nb = body->graph->n_inputs;
    int *bin = malloc(sizeof(int) * ((size_t)nb + (size_t)(N + K) + (size_t)K * (size_t)len + 1));
    if (!bin) {
        free(ax);
        return oom(name);
    }
    int *bout = bin + nb, *scans = bout + N + K;
    memcpy(bin, n->in, sizeof(int) * (size_t)(N + M));
    int *state = malloc(sizeof(int) * ((size_t)N + (size_t)M + 1));
    if (!state) st = oom(name);
    for (int j = 0; !st && j < N; j++) state[j] = n->in[j];
    int *seq = state ? state + N : NULL;
    for (int j = 0; !st && j < M; j++) seq[j] = n->in[N + j];
    for (int i = 0; !st && i < C; i++) bin[N + M + i] = n->in[body->cap[i]];
    char tn[600];
    for (int64_t t = 0; !st && t < len; t++) {
        for (int j = 0; j < N; j++) bin[j] = state[j];
        for (int j = 0; !st && j < M; j++) {
            int64_t idx = dir[j] ? len - 1 - t : t;
            ir_attr axis = {.name = "axis", .type = IR_ATTR_INT, .i = ax[j], .tensor = -1};
            snprintf(tn, sizeof tn, "%s/%lld/in%d", name, (long long)t, j);
            int gi[2] = {seq[j], const_i64(g, tn, 0, 1, &idx)};
            int e = ir_tensor_add(g, tn, SMELT_UNDEFINED, NULL);
            if (gi[1] < 0 || e < 0 || add_node(g, tn, OP_Gather, 2, gi, e, &axis) < 0) st = oom(name);
            bin[N + j] = e;
        }
        snprintf(tn, sizeof tn, "%s/%lld/", name, (long long)t);
        if (!st) st = inline_graph(g, name, body->graph, bin, tn, bout);
        for (int j = 0; !st && j < N; j++) state[j] = bout[j];
        for (int k = 0; !st && k < K; k++) scans[(size_t)k * (size_t)len + (size_t)t] = bout[N + k];
    }
    for (int j = 0; !st && j < N; j++) {
        snprintf(tn, sizeof tn, "%s/out%d", name, j);
        st = set_output(g, name, tn, state[j], outs[j]);
    }
    for (int k = 0; !st && k < K; k++) {
        int *s = scans + (size_t)k * (size_t)len;
        for (int64_t t = 0; !st && t < len; t++) {
            int64_t a = oax[k];
            ir_attr axes = {.name = "axes", .type = IR_ATTR_INTS, .n = 1, .ints = &a, .tensor = -1};
            snprintf(tn, sizeof tn, "%s/%lld/out%d", name, (long long)t, k);
            int u = ir_tensor_add(g, tn, SMELT_UNDEFINED, NULL);
            if (u < 0 || add_node(g, tn, OP_Unsqueeze, 1, &s[t], u, &axes) < 0) st = oom(name);
            s[t] = u;
        }
        if (!st && odir[k])
            for (int64_t t = 0; t < len / 2; t++) {
                int x = s[t];
                s[t] = s[len - 1 - t];
                s[len - 1 - t] = x;
            }
        snprintf(tn, sizeof tn, "%s/out%d", name, N + k);
        if (!st && outs[N + k] >= 0) st = concat_many(g, name, tn, s, (int)len, oax[k], outs[N + k]);
    }
    free(state);
    free(bin);
    free(ax);
    return st ? st : splice(g, name, ni, first);
}

smelt_status control_expand(ir_graph *g, int node)
{
    switch (g->nodes[node].op) {
    case OP_If: return expand_if(g, node);
    case OP_Loop: return expand_loop(g, node);
    case OP_Scan: return expand_scan(g, node);
    default: return ir_node_fail(&g->nodes[node], SMELT_ERR_INTERNAL, "not a control-flow op");
    }
}
