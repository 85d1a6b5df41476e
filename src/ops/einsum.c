/*
 * einsum.c — Einsum as one kernel: each output element is the sum,
 * over the labels that do not appear in the output, of the product of the
 * inputs at their labelled indices.
 *
 * requires: infer_Einsum succeeded (einsum_parse accepts the equation and
 *           label sizes agree, size-1 dims broadcasting).
 * guarantees: a size-1 input dim reads index 0 whatever its label's size;
 *             the summed labels are inner loops accumulating in the dtype.
 */
#include "lower/lower.h"

typedef struct es_job {
    einsum_spec e;
    smelt_dtype dt;
} es_job;

static void es_body(lower_ctx *c, const kir_val *oidx, void *user)
{
    const es_job *j = user;
    const einsum_spec *e = &j->e;
    kir_kernel *K = c->k;
    kir_val lab[EINSUM_MAX_LABELS] = {0};
    bool in_out[EINSUM_MAX_LABELS] = {0};
    for (int d = 0; d < e->out_rank; d++) {
        lab[e->out_lab[d]] = oidx[d];
        in_out[e->out_lab[d]] = true;
    }
    int acc = -1, open = 0;
    for (int l = 0; l < e->n_labels; l++) {
        if (in_out[l]) continue;
        if (acc < 0) acc = kir_var_new(K, j->dt, kir_const_f(K, j->dt, 0));
        if (e->size[l] == 1) {
            lab[l] = kir_idx(K, 0);
        } else {
            lab[l] = kir_loop_begin(K, kir_idx(K, 0), kir_idx(K, e->size[l]), kir_idx(K, 1));
            open++;
        }
    }
    kir_val prod = 0;
    for (int i = 0; i < e->n_in; i++) {
        const ir_shape *s = &ir_in(c->g, c->n, i)->shape;
        kir_val ii[IR_MAX_RANK];
        for (int d = 0; d < e->in_rank[i]; d++) ii[d] = s->dim[d] == 1 ? kir_idx(K, 0) : lab[e->lab[i][d]];
        kir_val v = lower_load(c, i, ii);
        prod = prod ? kir_binary(K, KIR_MUL, prod, v) : v;
    }
    if (acc >= 0) {
        kir_var_set(K, acc, kir_binary(K, KIR_ADD, kir_var_get(K, acc), prod));
        while (open--) kir_loop_end(K);
        prod = kir_var_get(K, acc);
    }
    lower_store(c, 0, oidx, prod);
}

smelt_status lower_Einsum(lower_ctx *c)
{
    es_job j;
    TRY(einsum_parse(c->g, c->n, &j.e));
    j.dt = ir_in(c->g, c->n, 0)->dtype;
    const ir_shape *os = &c->g->tensors[c->n->out[0]].shape;
    int64_t work = 1;
    for (int l = 0; l < j.e.n_labels; l++) work *= j.e.size[l];
    int64_t on = ir_shape_numel(os);
    if (on == 0) return SMELT_OK;
    lower_parallel_for(c, os, on ? work / on + 1 : 1, es_body, &j);
    return c->k ? SMELT_OK : ir_node_fail(c->n, SMELT_ERR_NOMEM, "out of memory");
}
