/*
 * bind.c — binding the caller's inputs to the graph's symbolic dimensions and
 * shape-deciding values.
 */
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

/* Whether some node reads tensor t through a value_in operand. */
static bool decides_shape(const ir_graph *g, int t)
{
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *n = &g->nodes[i];
        uint32_t mask = op_get(n->op)->value_in;
        for (int k = 0; k < n->n_in && k < 32; k++)
            if (n->in[k] == t && (mask >> k & 1)) return true;
    }
    return false;
}

smelt_status graph_bind_inputs(ir_graph *g, int n, const smelt_tensor *inputs)
{
    char a[128], b[128];
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
            ir_shape given = {.rank = x->rank};
            memcpy(given.dim, x->shape, sizeof(int64_t) * (size_t)x->rank);
            if (t->shape.rank != x->rank)
                return diag_fail(SMELT_ERR_SHAPE, "input '%s' has shape %s but the model declares rank %d", t->name,
                                 ir_shape_str(&given, a, sizeof a), t->shape.rank);
            for (int d = 0; d < x->rank; d++)
                if (t->shape.dim[d] >= 0 && t->shape.dim[d] != x->shape[d])
                    return diag_fail(SMELT_ERR_SHAPE, "input '%s' has shape %s but the model declares %s", t->name,
                                     ir_shape_str(&given, a, sizeof a), ir_shape_str(&t->shape, b, sizeof b));
            t->shape = given;
            if (x->data && decides_shape(g, ti)) {
                size_t bytes = (size_t)ir_tensor_numel(t) * smelt_dtype_size(t->dtype);
                if (!ir_tensor_alloc_data(g, ti)) return diag_fail(SMELT_ERR_NOMEM, "out of memory binding input '%s'", t->name);
                memcpy(t->data, x->data, bytes);
            }
            continue;
        }
        for (int d = 0; d < t->shape.rank; d++)
            if (t->shape.dim[d] < 0)
                return diag_fail(SMELT_ERR_SHAPE, "input '%s' has symbolic dim %d ('%s'): give the input, or its shape with --shape %s=...",
                                 t->name, d, t->dim_param[d] ? t->dim_param[d] : "?", t->name);
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
