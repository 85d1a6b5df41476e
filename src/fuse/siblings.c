/*
 * siblings.c — the "siblings" rule of fuse.h: reductions of one input with
 * the same parameters become one region, whose root's loops compute them
 * all, reading the input (and evaluating its inlined producers) once.
 *
 * requires: fuse_build's decisions after the shared rule (roles, inline_of,
 *           epilogue_of, insert_into, region_root).
 * guarantees: a merged reduction has role FUSE_SIBLING and, with its
 *             epilogue, the region_root of the earlier reduction it joined;
 *             everything its region reads is ready before that root runs; at
 *             most FUSE_SIBLINGS_MAX reductions share a region.
 */
#include <string.h>

#include "fuse/fuse.h"
#include "fuse/uses.h"

/* A region root whose lowering can take siblings. */
static bool candidate(const ir_graph *g, const fuse_plan *p, int i)
{
    const ir_node *n = &g->nodes[i];
    return p->role[i] == FUSE_ROOT && (op_get(n->op)->flags & OPF_SIBLINGS) && n->params && n->n_in >= 1 &&
           n->in[0] >= 0 && n->n_out == 1 && n->out[0] >= 0 && p->insert_into[n->out[0]] < 0;
}

/* The same parsed attributes (axes, keepdims) and the same further inputs
 * (an axes input: one tensor, or constants of equal value). */
static bool same_params(const ir_graph *g, const ir_node *a, const ir_node *b)
{
    const op_params_info *pa = &op_params[a->op], *pb = &op_params[b->op];
    if (pa->parse != pb->parse || pa->size != pb->size || memcmp(a->params, b->params, pa->size) != 0) return false;
    if (a->n_in != b->n_in) return false;
    for (int k = 1; k < a->n_in; k++) {
        if (a->in[k] == b->in[k]) continue;
        if (a->in[k] < 0 || b->in[k] < 0) return false;
        const ir_tensor *x = &g->tensors[a->in[k]], *y = &g->tensors[b->in[k]];
        if (!x->data || !y->data || x->dtype != y->dtype || !ir_shape_eq(&x->shape, &y->shape) ||
            memcmp(x->data, y->data, (size_t)ir_tensor_numel(x) * smelt_dtype_size(x->dtype)) != 0)
            return false;
    }
    return true;
}

/* Whether tensor t, read in region b, is ready when region a (a < b) starts:
 * computed in b's region itself, in memory before a, or inline over such. */
static bool ready(const ir_graph *g, const fuse_plan *p, const int *region_root, int t, int a, int b, int depth)
{
    const ir_tensor *x = &g->tensors[t];
    if (x->data || x->producer < 0) return true;
    int q = x->producer;
    if (p->role[q] != FUSE_INLINE && region_root[q] == b) return true;
    if (p->inline_of[t] < 0) return q < a;
    if (depth > FUSE_INLINE_DEPTH_MAX) return false;
    const ir_node *n = &g->nodes[q];
    for (int k = 0; k < n->n_in; k++)
        if (n->in[k] >= 0 && !ready(g, p, region_root, n->in[k], a, b, depth + 1)) return false;
    return true;
}

static bool region_ready(const ir_graph *g, const fuse_plan *p, const int *region_root, int a, int b)
{
    for (int i = b; i < g->n_nodes; i++) {
        if (region_root[i] != b || p->role[i] == FUSE_INLINE) continue;
        const ir_node *n = &g->nodes[i];
        for (int k = 0; k < n->n_in; k++)
            if (n->in[k] >= 0 && !ready(g, p, region_root, n->in[k], a, b, 0)) return false;
    }
    return true;
}

void fuse_siblings(const ir_graph *g, const uses *u, fuse_plan *p, int *region_root)
{
    for (int b = 0; b < g->n_nodes; b++) {
        if (!candidate(g, p, b)) continue;
        const ir_node *nb = &g->nodes[b];
        int x = nb->in[0];
        for (int j = u->start[x]; j < u->start[x + 1]; j++) {
            int a = u->cons[j];
            if (a >= b || !candidate(g, p, a)) continue;
            const ir_node *na = &g->nodes[a];
            if (na->in[0] != x || !ir_shape_eq(&g->tensors[na->out[0]].shape, &g->tensors[nb->out[0]].shape) ||
                !same_params(g, na, nb))
                continue;
            int members = 1;
            for (int i = a + 1; i < b; i++) members += p->role[i] == FUSE_SIBLING && region_root[i] == a;
            if (members >= FUSE_SIBLINGS_MAX || !region_ready(g, p, region_root, a, b)) continue;
            for (int i = b; i < g->n_nodes; i++)
                if (region_root[i] == b && p->role[i] != FUSE_INLINE) region_root[i] = a;
            p->role[b] = FUSE_SIBLING;
            break;
        }
    }
}
