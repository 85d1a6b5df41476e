/*
 * eval.c — one node evaluated on the host: lowered on its own (lower_node) and
 * run by the Kernel IR interpreter. graph_infer folds constants through it, so
 * a folded value is exactly what the node's kernels would compute.
 *
 * requires: the node's shapes inferred, its inputs' data present and its
 *           outputs' data allocated.
 * guarantees: the outputs' data hold the node's result, or an error naming
 *             the node; no memory is kept.
 */
#include <stdlib.h>

#include "kir/kir.h"
#include "lower/lower.h"

smelt_status lower_eval_node(const ir_graph *g, int ni)
{
    const ir_node *n = &g->nodes[ni];
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
    return st;
}
