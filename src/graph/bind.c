/*
 * bind.c — binding the caller's inputs to the graph's symbolic dimensions and
 * shape-deciding values.
 */
#include <stdlib.h>
#include <string.h>

#include "graph/passes.h"

static const smelt_tensor *find_input(const ir_graph *g, int gi, int n, const smelt_tensor *inputs)
{
    const ir_tensor *t = &g->tensors[g->inputs[gi]];
    for (int i = 0; i < n; i++)
        if (inputs[i].name && strcmp(inputs[i].name, t->name) == 0) return &inputs[i];
    if (gi < n && !inputs[gi].name) return &inputs[gi];
    return NULL;
}

static char *need_in(const ir_graph *g, const char *seed);

/* Why a tensor's values are needed: NEED_SHAPE (they decide a shape) is the
 * stronger reason; NEED_CONTROL (they decide only an If branch or a Loop's
 * trip count). An input needed for control alone is specialised on when it
 * is small (a flag, a sample rate, a limit); a condition computed from large
 * data stays a run-time value, and expanding its node reports that. */
enum { NEED_SHAPE = 1, NEED_CONTROL = 2 };
#define BIND_CONTROL_MAX_ELEMS 64

static void mark(char *need, int t, char why)
{
    if (t >= 0 && why && (!need[t] || why < need[t])) need[t] = why;
}

/* A control-flow node's subgraph attribute `a`: mark the node's inputs that
 * feed values the subgraph needs. Its formal input i is the node's input i
 * (Loop: i >= 1, input 0 being the iteration number; Scan: states then scan
 * inputs; If has none); capture k is the node's input cap[k]. A Loop body's
 * condition output decides the trip count, and so do the carried values it
 * is computed from, through the outputs that become the next inputs. */
static bool need_sub(const ir_graph *g, const ir_node *n, const ir_attr *a, char out_needed, char *need)
{
    const ir_graph *sub = a->graph;
    int n_formal = sub->n_inputs - a->n_cap;
    char *seed = calloc((size_t)sub->n_outputs + 1, 1);
    if (!seed) return false;
    for (int o = 0; o < sub->n_outputs; o++) seed[o] = out_needed ? out_needed : n->op == OP_Loop && o == 0 ? NEED_CONTROL : 0;
    char *sn = NULL;
    for (bool again = true; again;) {
        free(sn);
        if (!(sn = need_in(sub, seed))) break;
        again = false;
        for (int i = 2; n->op == OP_Loop && i < n_formal && i - 1 < sub->n_outputs; i++)
            if (sn[sub->inputs[i]] && (!seed[i - 1] || sn[sub->inputs[i]] < seed[i - 1])) {
                seed[i - 1] = sn[sub->inputs[i]];
                again = true;
            }
    }
    free(seed);
    if (!sn) return false;
    for (int i = n->op == OP_Loop ? 1 : 0; i < n_formal && i < n->n_in; i++)
        mark(need, n->in[i], sn[sub->inputs[i]]);
    for (int k = 0; k < a->n_cap; k++) mark(need, n->in[a->cap[k]], sn[sub->inputs[n_formal + k]]);
    (void)g;
    free(sn);
    return true;
}

/* Mark the tensors whose values decide shapes: value_in operands, and
 * (backwards, transitively) everything those values are computed from,
 * subgraphs of control flow included. An op that reads only shapes (Shape,
 * Size) stops the walk: its input's shape is bound from the caller's tensor,
 * its values are not needed. `seed` (per graph output, or NULL) adds outputs
 * whose values are needed. */
static char *need_in(const ir_graph *g, const char *seed)
{
    char *need = calloc((size_t)g->n_tensors + 1, 1);
    if (!need) return NULL;
    for (int o = 0; seed && o < g->n_outputs; o++)
        mark(need, g->outputs[o], seed[o]);
    for (int i = g->n_nodes - 1; i >= 0; i--) {
        const ir_node *n = &g->nodes[i];
        uint32_t mask = op_get(n->op)->value_in;
        char out_needed = 0, why = op_get(n->op)->flags & OPF_CONTROL ? NEED_CONTROL : NEED_SHAPE;
        if (!(op_get(n->op)->flags & OPF_SHAPE_ONLY))
            for (int o = 0; o < n->n_out; o++)
                if (n->out[o] >= 0 && need[n->out[o]] && (!out_needed || need[n->out[o]] < out_needed))
                    out_needed = need[n->out[o]];
        for (int k = 0; k < n->n_in; k++) {
            mark(need, n->in[k], out_needed);
            if (k < 32 && (mask >> k & 1)) mark(need, n->in[k], why);
        }
        for (int a = 0; a < n->n_attr; a++)
            if (n->attr[a].type == IR_ATTR_GRAPH && !need_sub(g, n, &n->attr[a], out_needed, need)) {
                free(need);
                return NULL;
            }
    }
    return need;
}

static char *shape_deciding(const ir_graph *g) { return need_in(g, NULL); }

static smelt_status bind_each(ir_graph *g, int n, const smelt_tensor *inputs, const char *need, char *a, char *b,
                              size_t cap);

smelt_status graph_bind_inputs(ir_graph *g, int n, const smelt_tensor *inputs)
{
    char a[128], b[128];
    char *need = shape_deciding(g);
    if (!need) return diag_fail(SMELT_ERR_NOMEM, "out of memory binding inputs");
    smelt_status st = bind_each(g, n, inputs, need, a, b, sizeof a);
    free(need);
    return st;
}

static smelt_status bind_each(ir_graph *g, int n, const smelt_tensor *inputs, const char *need, char *a, char *b,
                              size_t cap)
{
    for (int i = 0; i < n; i++) {
        if (!inputs[i].name) continue;
        bool found = false;
        for (int j = 0; j < g->n_inputs && !found; j++)
            found = strcmp(g->tensors[g->inputs[j]].name, inputs[i].name) == 0;
        if (!found) return diag_fail(SMELT_ERR_INVALID_ARG, "the model has no input named '%s'", inputs[i].name);
    }
    for (int gi = 0; gi < g->n_inputs; gi++) {
        int ti = g->inputs[gi];
        ir_tensor *t = &g->tensors[ti];
        const smelt_tensor *x = find_input(g, gi, n, inputs);
        if (x) {
            if (x->dtype != t->dtype)
                return diag_fail(SMELT_ERR_SHAPE, "input '%s' is %s but the model declares %s", t->name,
                                 smelt_dtype_name(x->dtype), smelt_dtype_name(t->dtype));
            if (x->rank < 0 || x->rank > IR_MAX_RANK)
                return diag_fail(SMELT_ERR_SHAPE, "input '%s' has rank %d; the rank must be 0..%d", t->name, x->rank,
                                 IR_MAX_RANK);
            ir_shape given = {.rank = x->rank};
            memcpy(given.dim, x->shape, sizeof(int64_t) * (size_t)x->rank);
            if (!ir_shape_ok(&given))
                return diag_fail(SMELT_ERR_SHAPE,
                                 "input '%s' has shape %s: every dim must be >= 0 and a tensor may hold at most 2^40 elements",
                                 t->name, ir_shape_str(&given, a, cap));
            if (t->shape.rank != x->rank)
                return diag_fail(SMELT_ERR_SHAPE, "input '%s' has shape %s but the model declares rank %d", t->name,
                                 ir_shape_str(&given, a, cap), t->shape.rank);
            for (int d = 0; d < x->rank; d++)
                if (t->shape.dim[d] >= 0 && t->shape.dim[d] != x->shape[d])
                    return diag_fail(SMELT_ERR_SHAPE, "input '%s' has shape %s but the model declares %s", t->name,
                                     ir_shape_str(&given, a, cap), ir_shape_str(&t->shape, b, cap));
            t->shape = given;
            bool small = ir_tensor_numel(t) <= BIND_CONTROL_MAX_ELEMS;
            if (x->data && (need[ti] == NEED_SHAPE || (need[ti] == NEED_CONTROL && small))) {
                size_t bytes = (size_t)ir_tensor_numel(t) * smelt_dtype_size(t->dtype);
                if (!ir_tensor_alloc_data(g, ti)) return diag_fail(SMELT_ERR_NOMEM, "out of memory binding input '%s'", t->name);
                memcpy(t->data, x->data, bytes);
            }
            continue;
        }
        for (int d = 0; d < t->shape.rank; d++)
            if (t->shape.dim[d] < 0 && t->dim_param[d])
                return diag_fail(SMELT_ERR_SHAPE, "input '%s' has symbolic dim %d ('%s'): give the input, or its shape with --shape %s=...",
                                 t->name, d, t->dim_param[d], t->name);
            else if (t->shape.dim[d] < 0)
                return diag_fail(SMELT_ERR_SHAPE, "input '%s' has unknown dim %d (no size in the model): give the input, or its shape with --shape %s=...",
                                 t->name, d, t->name);
        if (!ir_shape_ok(&t->shape))
            return diag_fail(SMELT_ERR_SHAPE,
                             "input '%s' is declared with shape %s: a tensor may hold at most 2^40 elements", t->name,
                             ir_shape_str(&t->shape, a, cap));
    }
    /* Inputs made constant are inputs no more. */
    int m = 0;
    for (int gi = 0; gi < g->n_inputs; gi++) {
        ir_tensor *t = &g->tensors[g->inputs[gi]];
        if (t->data) t->is_input = false;
        else g->inputs[m++] = g->inputs[gi];
    }
    g->n_inputs = m;
    return SMELT_OK;
}
