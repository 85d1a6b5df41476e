/*
 * control.c — the placeholder kernel of a run-time If/Loop/Scan (control.h).
 */
#include "ops/control.h"

#include "graph/passes.h"

static bool has_buffer(const kir_kernel *k, int t)
{
    for (int b = 0; b < k->n_bufs; b++)
        if (k->bufs[b].tensor == t) return true;
    return false;
}

smelt_status lower_control_host(lower_ctx *c)
{
    const ir_node *n = c->n;
    if (!control_is_runtime(n))
        return ir_node_fail(n, SMELT_ERR_INTERNAL, "control flow reached lowering without being expanded or kept");
    kir_kernel *k = lower_kernel_begin(c, 0);
    if (!k) return ir_node_fail(n, SMELT_ERR_NOMEM, "out of memory lowering it");
    for (int io = 0; io < 2; io++)
        for (int i = 0; i < (io ? n->n_out : n->n_in); i++) {
            int t = io ? n->out[i] : n->in[i];
            if (t < 0 || has_buffer(k, t)) continue;
            const ir_tensor *x = &c->g->tensors[t];
            if (kir_buffer_add(k, x->dtype, ir_tensor_numel(x), t, !io, io) < 0) k->oom = true;
        }
    return SMELT_OK;
}
