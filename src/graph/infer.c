/*
 * infer.c — shape inference with constant folding, one node at a time in
 * topological order (a node's value_in operands must be constant by the time
 * it is inferred, and folding makes them so).
 */
#include <stdlib.h>
#include <string.h>

#include "graph/passes.h"

static bool all_inputs_constant(const ir_graph *g, const ir_node *n)
{
    for (int i = 0; i < n->n_in; i++)
        if (n->in[i] >= 0 && !g->tensors[n->in[i]].data) return false;
    return true;
}

static bool foldable(const ir_graph *g, const ir_node *n)
{
    const op_info *oi = op_get(n->op);
    if (!(oi->lower || oi->scalar || oi->elem) || !all_inputs_constant(g, n)) return false;
    for (int o = 0; o < n->n_out; o++)
        if (n->out[o] >= 0 && ir_tensor_numel(&g->tensors[n->out[o]]) > GRAPH_FOLD_MAX_ELEMS) return false;
    return true;
}

/* Compute node `ni`'s outputs now, through the caller's evaluator. */
static smelt_status fold_node(ir_graph *g, int ni, graph_eval_fn eval)
{
    const ir_node *n = &g->nodes[ni];
    for (int o = 0; o < n->n_out; o++)
        if (n->out[o] >= 0 && !ir_tensor_alloc_data(g, n->out[o]))
            return diag_fail(SMELT_ERR_NOMEM, "out of memory folding node '%s'", n->name);
    smelt_status st = eval(g, ni);
    if (st) return diag_context(st, "folding node '%s'", g->nodes[ni].name);
    g->nodes[ni].dead = true;
    return SMELT_OK;
}

/* The checks every shape rule may rely on: the op's input and output counts,
 * and its required inputs (the first min_in) present, not omitted as "". */
static smelt_status check_arity(const ir_graph *g, const ir_node *n, const op_info *oi)
{
    if (n->n_in < oi->min_in || n->n_in > oi->max_in || n->n_out < oi->min_out || n->n_out > oi->max_out)
        return ir_node_fail(n, SMELT_ERR_MODEL, "%d inputs and %d outputs, but the op takes %d..%d inputs and %d..%d outputs",
                            n->n_in, n->n_out, oi->min_in, oi->max_in, oi->min_out, oi->max_out);
    /* Control-flow ops hold optional inputs before required ones (Loop's M and
     * cond, Scan-8's sequence_lens): control_expand checks each itself. */
    for (int k = 0; k < oi->min_in && !(oi->flags & OPF_CONTROL); k++)
        if (n->in[k] < 0)
            return ir_node_fail(n, SMELT_ERR_MODEL, "input %d is omitted (\"\") but the op requires its first %d input%s",
                                k, oi->min_in, oi->min_in == 1 ? "" : "s");
    (void)g;
    return SMELT_OK;
}

/* The size limit (core/size.h), checked once for every shape a rule infers. */
static smelt_status check_sizes(const ir_graph *g, const ir_node *n)
{
    char buf[160];
    for (int o = 0; o < n->n_out; o++) {
        if (n->out[o] < 0) continue;
        const ir_tensor *t = &g->tensors[n->out[o]];
        if (!ir_shape_ok(&t->shape))
            return ir_node_fail(n, SMELT_ERR_SHAPE,
                                "output '%s' has shape %s: every dim must be >= 0 and a tensor may hold at most 2^40 elements",
                                t->name, ir_shape_str(&t->shape, buf, sizeof buf));
    }
    return SMELT_OK;
}

static _Thread_local graph_eval_fn current_eval;

graph_eval_fn graph_infer_evaluator(void) { return current_eval; }

static smelt_status infer_all(ir_graph *g, graph_eval_fn eval);

smelt_status graph_infer(ir_graph *g, graph_eval_fn eval)
{
    graph_eval_fn outer = current_eval; /* subgraphs are inferred inside a parent's inference */
    current_eval = eval;
    smelt_status st = infer_all(g, eval);
    current_eval = outer;
    return st;
}

static smelt_status infer_all(ir_graph *g, graph_eval_fn eval)
{
    for (int i = 0; i < g->n_nodes; i++) {
        ir_node *n = &g->nodes[i];
        if (n->dead) continue;
        const op_info *oi = op_get(n->op);
        TRY(check_arity(g, n, oi));
        if (oi->flags & OPF_CONTROL) { /* replaced by the nodes it runs (infer those next), or kept for run time */
            if (control_is_runtime(n)) continue;
            TRY(oi->infer(g, i));
            if (!control_is_runtime(&g->nodes[i])) i--;
            else TRY(check_sizes(g, &g->nodes[i]));
            continue;
        }
        for (int k = 0; k < n->n_in && k < 32; k++)
            if ((oi->value_in >> k & 1) && n->in[k] >= 0 && !g->tensors[n->in[k]].data)
                return ir_node_fail(n, SMELT_ERR_UNSUPPORTED,
                                    "input %d ('%s') decides the output shape and must be known at compile time "
                                    "(a constant, or a graph input whose value is given when compiling)",
                                    k, g->tensors[n->in[k]].name);
        if (!oi->infer) return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "op is not implemented yet");
        TRY(ir_node_parse_params(g, i));
        TRY(oi->infer(g, i));
        n = &g->nodes[i];
        TRY(check_sizes(g, n));
        bool has_data = true;
        for (int o = 0; o < n->n_out; o++)
            if (n->out[o] >= 0 && !g->tensors[n->out[o]].data) has_data = false;
        if (has_data) {
            n->dead = true; /* the shape rule computed the value (Shape, Size...) */
            continue;
        }
        if (eval && foldable(g, n)) TRY(fold_node(g, i, eval));
    }
    return ir_verify(g);
}

smelt_status graph_dce(ir_graph *g)
{
    char *used = calloc((size_t)g->n_tensors + 1, 1);
    if (!used) return diag_fail(SMELT_ERR_NOMEM, "out of memory in dead-code elimination");
    for (int i = 0; i < g->n_outputs; i++) used[g->outputs[i]] = 1;
    for (int i = g->n_nodes - 1; i >= 0; i--) {
        ir_node *n = &g->nodes[i];
        if (n->dead) continue;
        bool live = false;
        for (int o = 0; o < n->n_out; o++)
            if (n->out[o] >= 0 && used[n->out[o]]) live = true;
        if (!live) {
            n->dead = true;
            continue;
        }
        for (int k = 0; k < n->n_in; k++)
            if (n->in[k] >= 0) used[n->in[k]] = 1;
    }
    free(used);
    TRY(ir_graph_compact(g));
    return ir_verify(g);
}
