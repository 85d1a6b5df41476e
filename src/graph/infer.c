/*
 * infer.c — shape inference with constant folding, one node at a time in
 * topological order (a node's value_in operands must be constant by the time
 * it is inferred, and folding makes them so).
 */
#include <stdlib.h>
#include <string.h>

#include "graph/passes.h"
#include "kernel/lower.h"

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

/* Compute node `ni`'s outputs now: lower it and interpret its kernels. */
static smelt_status fold_node(ir_graph *g, int ni)
{
    const ir_node *n = &g->nodes[ni];
    for (int o = 0; o < n->n_out; o++)
        if (n->out[o] >= 0 && !ir_tensor_alloc_data(g, n->out[o]))
            return diag_fail(SMELT_ERR_NOMEM, "out of memory folding node '%s'", n->name);
    arena a;
    arena_init(&a);
    lower_program p;
    lower_program_init(&p, &a);
    smelt_status st = lower_node(&p, g, ni);
    void **scratch = calloc((size_t)p.n_scratch + 1, sizeof(void *));
    if (!st && !scratch) st = diag_fail(SMELT_ERR_NOMEM, "out of memory folding node '%s'", n->name);
    for (int s = 0; !st && s < p.n_scratch; s++) {
        scratch[s] = calloc((size_t)p.scratch_numel[s] + 1, smelt_dtype_size(p.scratch_type[s]));
        if (!scratch[s]) st = diag_fail(SMELT_ERR_NOMEM, "out of memory folding node '%s'", n->name);
    }
    for (int i = 0; !st && i < p.n_kernels; i++) {
        const kir_kernel *k = p.kernels[i];
        void **bufs = calloc((size_t)k->n_bufs + 1, sizeof(void *));
        if (!bufs) {
            st = diag_fail(SMELT_ERR_NOMEM, "out of memory folding node '%s'", n->name);
            break;
        }
        for (int b = 0; b < k->n_bufs; b++) {
            int t = k->bufs[b].tensor;
            bufs[b] = t < g->n_tensors ? g->tensors[t].data : scratch[t - g->n_tensors];
        }
        st = kir_interpret(k, bufs);
        free(bufs);
    }
    for (int s = 0; scratch && s < p.n_scratch; s++) free(scratch[s]);
    free(scratch);
    lower_program_free(&p);
    arena_free(&a);
    if (st) return diag_context(st, "folding node '%s'", n->name);
    g->nodes[ni].dead = true;
    return SMELT_OK;
}

smelt_status graph_infer(ir_graph *g)
{
    for (int i = 0; i < g->n_nodes; i++) {
        ir_node *n = &g->nodes[i];
        if (n->dead) continue;
        const op_info *oi = op_get(n->op);
        if (oi->flags & OPF_CONTROL) { /* replaced by the nodes it runs; infer those next */
            TRY(oi->infer(g, i));
            i--;
            continue;
        }
        for (int k = 0; k < n->n_in && k < 32; k++)
            if ((oi->value_in >> k & 1) && n->in[k] >= 0 && !g->tensors[n->in[k]].data)
                return ir_node_fail(n, SMELT_ERR_UNSUPPORTED,
                                    "input %d ('%s') decides the output shape and must be known at compile time "
                                    "(a constant, or a graph input whose value is given when compiling)",
                                    k, g->tensors[n->in[k]].name);
        if (!oi->infer) return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "op is not implemented yet");
        TRY(oi->infer(g, i));
        n = &g->nodes[i];
        bool has_data = true;
        for (int o = 0; o < n->n_out; o++)
            if (n->out[o] >= 0 && !g->tensors[n->out[o]].data) has_data = false;
        if (has_data) {
            n->dead = true; /* the shape rule computed the value (Shape, Size...) */
            continue;
        }
        if (foldable(g, n)) TRY(fold_node(g, i));
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
