/*
 * fold_bn.c — BatchNormalization folded into the preceding Conv's weights.
 *
 * requires: graph_infer (the BatchNormalization's params parsed: its parse
 *           refuses training_mode=1, so every one seen here is the inference form).
 * guarantees: the Conv's attributes are unchanged (only its W and B inputs
 *             are new), so its params stay valid.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/passes.h"
#include "ir/op_params.h"

static bool all_const(const ir_graph *g, const ir_node *n, int from, int to)
{
    for (int k = from; k < to; k++)
        if (k >= n->n_in || n->in[k] < 0 || !g->tensors[n->in[k]].data) return false;
    return true;
}

static int consumers(const ir_graph *g, int t, int *only)
{
    int count = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *n = &g->nodes[i];
        if (n->dead) continue;
        for (int k = 0; k < n->n_in; k++)
            if (n->in[k] == t) {
                count++;
                *only = i;
            }
    }
    return count;
}

static double get(const ir_tensor *t, int64_t i) { return ir_const_double(t, i); }

static void put(ir_tensor *t, int64_t i, double v)
{
    if (t->dtype == SMELT_F32) ((float *)t->data)[i] = (float)v;
    else ((double *)t->data)[i] = v;
}

static smelt_status fold_one(ir_graph *g, int ci, int bi)
{
    const ir_node *conv = &g->nodes[ci], *bn = &g->nodes[bi];
    const ir_tensor *w = &g->tensors[conv->in[0 + 1]];
    int64_t cout = w->shape.dim[0], per = ir_tensor_numel(w) / (cout ? cout : 1);
    const void *bp;
    TRY(ir_node_params(g, bi, &bp));
    conv = &g->nodes[ci];
    bn = &g->nodes[bi];
    double eps = ((const batchnorm_params *)bp)->epsilon;
    const ir_tensor *scale = &g->tensors[bn->in[1]], *bias = &g->tensors[bn->in[2]];
    const ir_tensor *mean = &g->tensors[bn->in[3]], *var = &g->tensors[bn->in[4]];
    if (ir_tensor_numel(scale) != cout || ir_tensor_numel(bias) != cout || ir_tensor_numel(mean) != cout ||
        ir_tensor_numel(var) != cout)
        return SMELT_OK; /* shapes the rewrite does not cover: leave both nodes */
    char name[256];
    snprintf(name, sizeof name, "%s/folded_w", conv->name);
    int nw = ir_tensor_add(g, name, w->dtype, &w->shape);
    snprintf(name, sizeof name, "%s/folded_b", conv->name);
    ir_shape bs = {.rank = 1, .dim = {cout}};
    int nb = ir_tensor_add(g, name, w->dtype, &bs);
    if (nw < 0 || nb < 0 || !ir_tensor_alloc_data(g, nw) || !ir_tensor_alloc_data(g, nb))
        return diag_fail(SMELT_ERR_NOMEM, "out of memory folding '%s' into '%s'", g->nodes[bi].name, g->nodes[ci].name);
    /* Pointers again: adding tensors may move the arrays. */
    conv = &g->nodes[ci];
    bn = &g->nodes[bi];
    w = &g->tensors[conv->in[1]];
    scale = &g->tensors[bn->in[1]];
    bias = &g->tensors[bn->in[2]];
    mean = &g->tensors[bn->in[3]];
    var = &g->tensors[bn->in[4]];
    const ir_tensor *b = conv->n_in > 2 && conv->in[2] >= 0 ? &g->tensors[conv->in[2]] : NULL;
    ir_tensor *wt = &g->tensors[nw], *bt = &g->tensors[nb];
    for (int64_t o = 0; o < cout; o++) {
        double s = get(scale, o) / sqrt(get(var, o) + eps);
        for (int64_t j = 0; j < per; j++) put(wt, o * per + j, get(w, o * per + j) * s);
        put(bt, o, ((b ? get(b, o) : 0.0) - get(mean, o)) * s + get(bias, o));
    }
    int in[3] = {conv->in[0], nw, nb};
    int out = bn->out[0];
    ir_node *c = &g->nodes[ci];
    int *ins = arena_alloc(&g->arena, sizeof in);
    if (!ins) return diag_fail(SMELT_ERR_NOMEM, "out of memory folding batch normalization");
    memcpy(ins, in, sizeof in);
    c->in = ins;
    c->n_in = 3;
    c->out[0] = out;
    g->tensors[out].producer = ci;
    g->nodes[bi].dead = true;
    return SMELT_OK;
}

smelt_status graph_fold_batchnorm(ir_graph *g)
{
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *conv = &g->nodes[i];
        if (conv->dead || conv->op != OP_Conv || !all_const(g, conv, 1, conv->n_in)) continue;
        int t = conv->out[0], bi = -1;
        if (g->tensors[t].is_output || consumers(g, t, &bi) != 1) continue;
        const ir_node *bn = &g->nodes[bi];
        if (bn->op != OP_BatchNormalization || bn->in[0] != t || bn->n_out != 1 || !all_const(g, bn, 1, 5)) continue;
        smelt_dtype dt = g->tensors[t].dtype;
        if (dt != SMELT_F32 && dt != SMELT_F64) continue;
        TRY(fold_one(g, i, bi));
    }
    return ir_verify(g);
}
