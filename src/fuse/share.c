/*
 * share.c — the "shared" rule of fuse.h: an elementwise region is merged into
 * the one elementwise region that reads its output, which then computes a
 * value with several consumers once per element (in a register, not through
 * memory) and writes every graph output among them from the same loop.
 *
 * requires: fuse_build's decisions (roles, inline_of, epilogue_of,
 *           insert_into) and its per-node cost and depth arrays.
 * guarantees: a merged root becomes inline in the region that reads it; its
 *             output is stored by that region (stored_by) when it is a graph
 *             output; no inline chain grows past FUSE_INLINE_DEPTH_MAX; a
 *             value read through another index map is recomputed only where
 *             fuse_recompute_pays.
 */
#include <stdlib.h>
#include <string.h>

#include "fuse/fuse.h"
#include "fuse/uses.h"

/* The rule and its reasoning are in fuse.h (FUSE_RECOMPUTE_OPS_PER_BYTE):
 * recompute when the ops repeated per element cost at most what a store and
 * a load of the element cost. */
bool fuse_recompute_pays(int ops, int elem_bytes) { return ops <= FUSE_RECOMPUTE_OPS_PER_BYTE * 2 * elem_bytes; }

enum { AT_ID = 1, OFF_ID = 2 }; /* evaluated at the region's own index / at another one */

typedef struct share_state {
    const ir_graph *g;
    const uses *u;
    fuse_plan *p;
    int *region_root, *cost, *depth;
    int *home;           /* per node: the root of the one region evaluating it; -2 several, -1 none */
    int *seen;
    unsigned char *flag; /* per node: AT_ID | OFF_ID in the region aligned last */
    unsigned char *cone; /* per node: in the inline cone being compared (sibling) */
    unsigned char *read; /* per tensor: read from memory by that cone */
} share_state;

static void home_mark(share_state *s, int node, int root)
{
    const ir_node *n = &s->g->nodes[node];
    for (int k = 0; k < n->n_in; k++) {
        int t = n->in[k];
        if (t < 0 || s->p->inline_of[t] < 0) continue;
        int q = s->p->inline_of[t];
        if (s->seen[q] == root) continue;
        s->seen[q] = root;
        s->home[q] = s->home[q] == -1 || s->home[q] == root ? root : -2;
        home_mark(s, q, root); /* as deep as the inline chain: at most FUSE_INLINE_DEPTH_MAX */
    }
}

static void homes(share_state *s)
{
    for (int i = 0; i < s->g->n_nodes; i++) {
        s->home[i] = s->p->role[i] == FUSE_INLINE ? -1 : s->region_root[i];
        s->seen[i] = -1;
    }
    for (int i = 0; i < s->g->n_nodes; i++)
        if (s->p->role[i] != FUSE_INLINE) home_mark(s, i, s->region_root[i]);
    /* a side output nothing reads is evaluated where it is stored */
    for (int t = 0; t < s->g->n_tensors; t++) {
        int q = s->p->inline_of[t], root = s->p->stored_by[t];
        if (q < 0 || root < 0) continue;
        s->home[q] = s->home[q] == -1 || s->home[q] == root ? root : -2;
        home_mark(s, q, root);
    }
}

/* Cone cost and inline depth of every node, after a role changed (fuse.c's rule). */
static void recount(share_state *s)
{
    for (int i = 0; i < s->g->n_nodes; i++) {
        const ir_node *n = &s->g->nodes[i];
        bool reduction = op_get(n->op)->kind == OPK_REDUCTION;
        s->cost[i] = fuse_node_cost(n);
        s->depth[i] = 1;
        for (int k = 0; k < n->n_in; k++) {
            int q = n->in[k] >= 0 ? s->p->inline_of[n->in[k]] : -1;
            if (q < 0) continue;
            if (!reduction) s->cost[i] += s->cost[q];
            if (s->depth[q] + 1 > s->depth[i]) s->depth[i] = s->depth[q] + 1;
        }
    }
}

/* Whether consumer c reads input tensor t at the index it computes: an
 * elementwise op on an operand of its own shape (no broadcast, no index map). */
static bool same_index(const ir_graph *g, const ir_node *c, int t)
{
    const op_info *oi = op_get(c->op);
    return (oi->kind == OPK_ELEMENTWISE || oi->kind == OPK_BROADCAST) && oi->scalar && c->n_out == 1 && c->out[0] >= 0 &&
           ir_shape_eq(&g->tensors[t].shape, &g->tensors[c->out[0]].shape);
}

/* flag[] for the region of `root`: which nodes it evaluates at its own index
 * (memoized: once per element) and which at other indices (recomputed). */
static void align(share_state *s, int root)
{
    const fuse_plan *p = s->p;
    memset(s->flag, 0, (size_t)s->g->n_nodes);
    for (int i = 0; i < s->g->n_nodes; i++)
        if (p->role[i] != FUSE_INLINE && s->region_root[i] == root) s->flag[i] = AT_ID;
    for (int t = 0; t < s->g->n_tensors; t++) /* side outputs are evaluated at the root's index */
        if (p->stored_by[t] == root && p->inline_of[t] >= 0) s->flag[p->inline_of[t]] |= AT_ID;
    for (int i = s->g->n_nodes - 1; i >= 0; i--) { /* consumers come after their producers */
        if (!s->flag[i]) continue;
        const ir_node *n = &s->g->nodes[i];
        for (int k = 0; k < n->n_in; k++) {
            int q = n->in[k] >= 0 ? p->inline_of[n->in[k]] : -1;
            if (q < 0) continue;
            if (s->flag[i] & OFF_ID) s->flag[q] |= OFF_ID;
            if (s->flag[i] & AT_ID) s->flag[q] |= same_index(s->g, n, n->in[k]) ? AT_ID : OFF_ID;
        }
    }
}

/* A root lowered by the generic elementwise lowering, one output. */
static bool elementwise_root(const ir_graph *g, const fuse_plan *p, int i)
{
    const ir_node *n = &g->nodes[i];
    const op_info *oi = op_get(n->op);
    bool kind = oi->kind == OPK_ELEMENTWISE || oi->kind == OPK_BROADCAST || oi->kind == OPK_INJECTIVE;
    return p->role[i] == FUSE_ROOT && kind && !oi->lower && !oi->insert && (oi->scalar || oi->elem) && n->n_out == 1 &&
           n->out[0] >= 0;
}

/* Every tensor the cone of inline node `node` reads from memory is written by
 * a region that runs before region `root`. */
static bool cone_ready(const share_state *s, int node, int root)
{
    const ir_node *n = &s->g->nodes[node];
    for (int k = 0; k < n->n_in; k++) {
        int t = n->in[k];
        if (t < 0) continue;
        const ir_tensor *x = &s->g->tensors[t];
        if (s->p->inline_of[t] >= 0) {
            if (!cone_ready(s, s->p->inline_of[t], root)) return false;
        } else if (!x->data && x->producer >= 0 && s->region_root[x->producer] >= root) {
            return false;
        }
    }
    return true;
}

static void cone_mark(share_state *s, int node)
{
    const ir_node *n = &s->g->nodes[node];
    for (int k = 0; k < n->n_in; k++) {
        int t = n->in[k];
        if (t < 0) continue;
        int q = s->p->inline_of[t];
        if (q < 0) {
            s->read[t] = 1;
        } else if (!s->cone[q]) {
            s->cone[q] = 1;
            cone_mark(s, q);
        }
    }
}

/* How many later regions a graph output that nothing reads looks at for a sibling. */
#define SHARE_SIBLING_SCAN 16

/* For a graph output nobody reads (root a): the first later elementwise
 * region over its shape that evaluates a node of a's inline cone or reads a
 * tensor a reads, so that one loop computes what both share once (and reads
 * it once); -1 when there is none. */
static int sibling(share_state *s, int a)
{
    const ir_graph *g = s->g;
    const ir_shape *shape = &g->tensors[g->nodes[a].out[0]].shape;
    memset(s->cone, 0, (size_t)g->n_nodes);
    memset(s->read, 0, (size_t)g->n_tensors);
    cone_mark(s, a);
    int scanned = 0;
    for (int b = a + 1; b < g->n_nodes && scanned < SHARE_SIBLING_SCAN; b++) {
        if (!elementwise_root(g, s->p, b) || !ir_shape_eq(shape, &g->tensors[g->nodes[b].out[0]].shape)) continue;
        scanned++;
        align(s, b);
        for (int i = 0; i < g->n_nodes; i++) {
            if (!s->flag[i]) continue;
            if (s->cone[i]) return b;
            const ir_node *n = &g->nodes[i];
            for (int k = 0; k < n->n_in; k++)
                if (n->in[k] >= 0 && s->p->inline_of[n->in[k]] < 0 && s->read[n->in[k]] && !g->tensors[n->in[k]].data)
                    return b;
        }
    }
    return -1;
}

/* Merge the region of root `a` into the region reading its output (or, for
 * an output nobody reads, into a sibling region), if the rule allows. */
static bool try_merge(share_state *s, int a)
{
    const ir_graph *g = s->g;
    fuse_plan *p = s->p;
    if (!elementwise_root(g, p, a)) return false;
    int t = g->nodes[a].out[0];
    const ir_tensor *x = &g->tensors[t];
    if (x->data || p->epilogue_of[t] >= 0 || p->insert_into[t] >= 0) return false;
    bool unread = s->u->start[t] == s->u->start[t + 1];
    if (unread && !x->is_output) return false;
    int b = unread ? sibling(s, a) : -1;
    for (int j = s->u->start[t]; j < s->u->start[t + 1]; j++) {
        int h = s->home[s->u->cons[j]];
        if (h < 0 || (b >= 0 && h != b)) return false;
        b = h;
    }
    if (b <= a || !elementwise_root(g, p, b) || !ir_shape_eq(&x->shape, &g->tensors[g->nodes[b].out[0]].shape))
        return false;
    /* a's cone (itself inline now) must read only what is ready before b runs */
    p->role[a] = FUSE_INLINE;
    p->inline_of[t] = a;
    bool ok = cone_ready(s, a, b);
    recount(s);
    align(s, b);
    for (int i = 0; i < g->n_nodes && ok; i++) {
        if (!s->flag[i]) continue;
        if (op_get(g->nodes[i].op)->kind == OPK_REDUCTION || s->depth[i] >= FUSE_INLINE_DEPTH_MAX) ok = false;
    }
    /* read at another index than b's own: recomputed there, or else stored */
    if (ok && (s->flag[a] & OFF_ID)) ok = fuse_recompute_pays(s->cost[a], (int)smelt_dtype_size(x->dtype));
    if (!ok) {
        p->role[a] = FUSE_ROOT;
        p->inline_of[t] = -1;
        recount(s);
        return false;
    }
    s->region_root[a] = b;
    for (int q = 0; q < g->n_tensors; q++)
        if (p->stored_by[q] == a) p->stored_by[q] = b; /* a's own side outputs move along */
    if (x->is_output) p->stored_by[t] = b;
    homes(s);
    return true;
}

bool fuse_share(const ir_graph *g, const uses *u, fuse_plan *p, int *region_root, int *cost, int *depth)
{
    share_state s = {g, u, p, region_root, cost, depth, NULL, NULL, NULL, NULL, NULL};
    s.home = malloc(sizeof(int) * ((size_t)g->n_nodes + 1));
    s.seen = malloc(sizeof(int) * ((size_t)g->n_nodes + 1));
    s.flag = malloc((size_t)g->n_nodes + 1);
    s.cone = malloc((size_t)g->n_nodes + 1);
    s.read = malloc((size_t)g->n_tensors + 1);
    bool ok = s.home && s.seen && s.flag && s.cone && s.read;
    if (ok) {
        homes(&s);
        /* Latest roots first: a region merged into its reader makes the
         * regions feeding it candidates for the same reader. */
        for (bool changed = true; changed;) {
            changed = false;
            for (int a = g->n_nodes - 1; a >= 0; a--) changed |= try_merge(&s, a);
        }
    }
    free(s.home);
    free(s.seen);
    free(s.flag);
    free(s.cone);
    free(s.read);
    return ok;
}
