/*
 * fuse.c — region formation by op kinds (the rules are in fuse.h).
 */
#include "fuse/fuse.h"

#include <stdlib.h>
#include <string.h>

#include "fuse/uses.h"

bool uses_build(const ir_graph *g, uses *u)
{
    u->start = calloc((size_t)g->n_tensors + 2, sizeof(int));
    int total = 0;
    for (int i = 0; i < g->n_nodes; i++) total += g->nodes[i].n_in;
    u->cons = calloc((size_t)total + 1, sizeof(int));
    if (!u->start || !u->cons) return false;
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_in; k++)
            if (g->nodes[i].in[k] >= 0) u->start[g->nodes[i].in[k] + 1]++;
    for (int t = 0; t < g->n_tensors; t++) u->start[t + 1] += u->start[t];
    int *fill = calloc((size_t)g->n_tensors + 1, sizeof(int));
    if (!fill) return false;
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_in; k++) {
            int t = g->nodes[i].in[k];
            if (t >= 0) u->cons[u->start[t] + fill[t]++] = i;
        }
    free(fill);
    return true;
}

void uses_free(uses *u)
{
    free(u->start);
    free(u->cons);
}

static bool is_elementwise_kind(op_kind k) { return k == OPK_ELEMENTWISE || k == OPK_BROADCAST; }

/* Arithmetic a node adds per element: index-only ops (views, transposes,
 * slices, pads, gathers) cost nothing beyond address computation. */
int fuse_node_cost(const ir_node *n)
{
    const op_info *oi = op_get(n->op);
    /* A row reduction is computed once per row, before the row's elements. */
    if (oi->flags & OPF_VIEW || oi->kind == OPK_INJECTIVE || oi->kind == OPK_REDUCTION) return 0;
    return 1;
}

/* Trailing dims a reduction's output collapses to 1 while its input keeps the
 * leading dims: its "row" split (0: not a row reduction). */
int fuse_row_dims(const ir_graph *g, const ir_node *n)
{
    if (op_get(n->op)->kind != OPK_REDUCTION || !op_get(n->op)->elem || n->n_out != 1 || n->out[0] < 0) return 0;
    const ir_shape *in = &g->tensors[n->in[0]].shape, *out = &g->tensors[n->out[0]].shape;
    if (in->rank != out->rank) return 0;
    int k = 0;
    while (k < in->rank && out->dim[in->rank - 1 - k] == 1) k++;
    for (int d = 0; d < in->rank - k; d++)
        if (in->dim[d] != out->dim[d]) return 0;
    return k;
}

/* Row rule: a reduction over trailing dims whose consumers are all
 * elementwise over its input's shape (or over its own, per-row shape: a
 * variance's + epsilon) is evaluated in their kernel. */
static bool can_inline_row(const ir_graph *g, const uses *u, int node, int t)
{
    const ir_node *n = &g->nodes[node];
    if (g->tensors[t].is_output || u->start[t] == u->start[t + 1] || fuse_row_dims(g, n) == 0) return false;
    const ir_shape *row = &g->tensors[n->in[0]].shape;
    for (int j = u->start[t]; j < u->start[t + 1]; j++) {
        const ir_node *c = &g->nodes[u->cons[j]];
        if (!is_elementwise_kind(op_get(c->op)->kind) || c->n_out != 1 || c->out[0] < 0) return false;
        const ir_shape *cs = &g->tensors[c->out[0]].shape;
        if (!ir_shape_eq(cs, row) && !ir_shape_eq(cs, &g->tensors[t].shape)) return false;
    }
    return true;
}

bool fuse_insert(const ir_graph *g, const ir_node *n, int i, int64_t *offset)
{
    const op_info *oi = op_get(n->op);
    if (!oi->insert || i >= n->n_in || n->in[i] < 0 || n->n_out != 1 || n->out[0] < 0) return false;
    if (g->tensors[n->in[i]].dtype != g->tensors[n->out[0]].dtype) return false;
    return oi->insert(g, n, i, offset);
}

bool fuse_insert_fills(const ir_graph *g, const ir_node *n)
{
    int64_t off[IR_MAX_RANK], covered = 0;
    for (int i = 0; i < n->n_in; i++)
        if (fuse_insert(g, n, i, off)) covered += ir_tensor_numel(&g->tensors[n->in[i]]);
    return covered < ir_tensor_numel(&g->tensors[n->out[0]]);
}

/* --fuse-pad: may t's producer be inlined into consumer c (an insert with fill)? */
static bool pad_fusion_allowed(const ir_graph *g, const fuse_options *opt, const ir_node *c, int t)
{
    int64_t off[IR_MAX_RANK];
    bool inserted = false;
    for (int i = 0; i < c->n_in; i++)
        if (c->in[i] == t && fuse_insert(g, c, i, off)) inserted = true;
    if (!inserted || !fuse_insert_fills(g, c)) return true;
    if (opt->pad == FUSE_PAD_ALWAYS) return true;
    if (opt->pad == FUSE_PAD_NEVER) return false;
    const ir_tensor *y = &g->tensors[c->out[0]];
    return ir_tensor_numel(y) * (int64_t)smelt_dtype_size(y->dtype) <= FUSE_PAD_SMALL;
}

static bool can_inline(const ir_graph *g, const fuse_options *opt, const uses *u, const int *cost, int node, int t)
{
    const ir_node *n = &g->nodes[node];
    const op_info *oi = op_get(n->op);
    const ir_tensor *x = &g->tensors[t];
    if (oi->kind == OPK_REDUCTION) return can_inline_row(g, u, node, t);
    if (!(oi->scalar || oi->elem) || !(is_elementwise_kind(oi->kind) || oi->kind == OPK_INJECTIVE)) return false;
    if (x->is_output || u->start[t] == u->start[t + 1]) return false;
    bool cheap = cost[node] <= FUSE_RECOMPUTE_MAX;
    /* One consuming node reading t twice (x * x) reads the same element: memoized. */
    bool single = true;
    for (int j = u->start[t] + 1; j < u->start[t + 1]; j++) single &= u->cons[j] == u->cons[u->start[t]];
    for (int j = u->start[t]; j < u->start[t + 1]; j++) {
        const ir_node *c = &g->nodes[u->cons[j]];
        op_kind ck = op_get(c->op)->kind;
        if (!pad_fusion_allowed(g, opt, c, t)) return false;
        if (op_get(c->op)->flags & OPF_CONTROL) return false; /* a run-time If/Loop/Scan binds whole buffers */
        if (ck == OPK_CONTRACTION || ck == OPK_OPAQUE) {
            /* a one-element operand of a contraction (a ConvInteger's shift,
             * ops/conv_gemm.c) is read once a block or at most once an
             * output element: recompute its cone there where that pays */
            bool scalar = ck == OPK_CONTRACTION && ir_tensor_numel(x) == 1 &&
                          fuse_recompute_pays(cost[node], (int)smelt_dtype_size(x->dtype));
            if (cost[node] != 0 && !scalar) return false;
            continue;
        }
        bool expands = false;
        if (ck != OPK_REDUCTION)
            for (int o = 0; o < c->n_out; o++)
                if (c->out[o] >= 0 && ir_tensor_numel(&g->tensors[c->out[o]]) > ir_tensor_numel(x)) expands = true;
        if ((!single || expands) && !cheap) return false;
    }
    return true;
}

/* Whether tensor t can be read at the start of region `root_node`: it is
 * ready in memory, or inline with every materialized input ready. */
static bool ready_before(const ir_graph *g, const fuse_plan *p, int t, int root_node)
{
    const ir_tensor *x = &g->tensors[t];
    if (x->data || x->producer < 0) return true;
    if (p->inline_of[t] < 0) return x->producer < root_node;
    const ir_node *n = &g->nodes[p->inline_of[t]];
    for (int k = 0; k < n->n_in; k++)
        if (n->in[k] >= 0 && !ready_before(g, p, n->in[k], root_node)) return false;
    return true;
}

/* The root of the region that computes tensor t (t not inline). */
static int root_of(const ir_graph *g, const fuse_plan *p, const int *region_root, int t)
{
    return region_root[g->tensors[t].producer];
    (void)p;
}

/* Node e can be an epilogue on input t: see fuse.h. */
static bool epilogue_input(const ir_graph *g, const uses *u, const fuse_plan *p, const int *region_root, int e, int t)
{
    const ir_node *n = &g->nodes[e];
    const ir_tensor *x = &g->tensors[t];
    if (x->producer < 0 || x->data || x->is_output || p->inline_of[t] >= 0) return false;
    if (op_get(g->nodes[x->producer].op)->flags & OPF_CONTROL) return false; /* run on the host, no kernel to extend */
    if (u->start[t + 1] - u->start[t] != 1) return false;
    if (!ir_shape_eq(&x->shape, &g->tensors[n->out[0]].shape)) return false;
    int root = root_of(g, p, region_root, t);
    for (int k = 0; k < n->n_in; k++)
        if (n->in[k] >= 0 && n->in[k] != t && !ready_before(g, p, n->in[k], root)) return false;
    return true;
}

/* Epilogue DAG (fuse.h "epilogue", several uses): the elementwise nodes
 * reached from t, walked in graph order from its first consumer `first`,
 * until every value they made (t included) has been read for the last time
 * but the newest node's: that node is the DAG's sink. Members are scalar
 * elementwise nodes over t's shape whose other inputs are ready before t's
 * root runs; a value read by anything else keeps the walk open until
 * FUSE_EPILOGUE_DAG_SCAN nodes have gone by, and then nothing fuses. Returns
 * the sink and fills members (in graph order), or -1. */
static int epilogue_dag(const ir_graph *g, const uses *u, const fuse_plan *p, int root, int first, int t, int *members,
                        int *n_members)
{
    const ir_tensor *x = &g->tensors[t];
    int n = 0;
    for (int j = first; j < g->n_nodes && j < first + FUSE_EPILOGUE_DAG_SCAN; j++) {
        const ir_node *e = &g->nodes[j];
        bool reads = false, ok = true;
        for (int k = 0; k < e->n_in; k++) {
            int v = e->in[k];
            if (v < 0) continue;
            bool dag = v == t;
            for (int m = 0; m < n && !dag; m++) dag = g->nodes[members[m]].out[0] == v;
            reads |= dag;
            if (!dag && !ready_before(g, p, v, root)) ok = false;
        }
        if (!reads) continue;
        const op_info *oi = op_get(e->op);
        if (!ok || n == FUSE_EPILOGUE_DAG_MAX || !is_elementwise_kind(oi->kind) || !oi->scalar || e->n_out != 1 ||
            e->out[0] < 0 || !ir_shape_eq(&g->tensors[e->out[0]].shape, &x->shape))
            return -1;
        members[n++] = j;
        /* values still read later (or graph outputs): only the newest may be */
        int live = 0;
        for (int m = -1; m < n; m++) {
            int v = m < 0 ? t : g->nodes[members[m]].out[0];
            bool later = g->tensors[v].is_output && v != t;
            for (int q = u->start[v]; q < u->start[v + 1] && !later; q++) later = u->cons[q] > j;
            if (later && v != e->out[0]) live = 2;
            live += later;
        }
        if (live <= 1) {
            *n_members = n;
            return j;
        }
    }
    return -1;
}

/* The epilogue DAG rule for node i, the first reader of one of its inputs t:
 * where t's region has a root with a lowering of its own (a contraction, a
 * convolution, a row reduction; an elementwise root already keeps a shared
 * value in a register, see "shared") and t has several reads, the DAG's sink
 * becomes t's epilogue and the other members are evaluated inside it. */
static bool take_epilogue_dag(const ir_graph *g, const uses *u, fuse_plan *p, int *region_root, int i, int *members,
                              char *in_dag)
{
    const ir_node *n = &g->nodes[i];
    for (int k = 0; k < n->n_in; k++) {
        int t = n->in[k], nm = 0;
        if (t < 0) continue;
        const ir_tensor *x = &g->tensors[t];
        if (x->producer < 0 || x->data || x->is_output || p->inline_of[t] >= 0 || p->epilogue_of[t] >= 0) continue;
        if (u->start[t + 1] - u->start[t] < 2 || u->cons[u->start[t]] != i || p->role[x->producer] == FUSE_INLINE) continue;
        if (op_get(g->nodes[x->producer].op)->flags & OPF_CONTROL) continue;
        int root = root_of(g, p, region_root, t);
        if (!op_get(g->nodes[root].op)->lower || p->role[root] != FUSE_ROOT) continue;
        int sink = epilogue_dag(g, u, p, root, i, t, members, &nm);
        if (sink < 0) continue;
        for (int m = 0; m < nm; m++) {
            int q = members[m];
            in_dag[q] = 1;
            p->role[q] = FUSE_EPILOGUE;
            region_root[q] = root;
            if (q != sink) p->inline_of[g->nodes[q].out[0]] = q;
        }
        p->epilogue_of[t] = sink;
        return true;
    }
    return false;
}

static bool push(int **arr, int *n, int v)
{
    for (int i = 0; i < *n; i++)
        if ((*arr)[i] == v) return true;
    int *a = realloc(*arr, sizeof(int) * (size_t)(*n + 1));
    if (!a) return false;
    a[(*n)++] = v;
    *arr = a;
    return true;
}

/* Collect the nodes and memory reads reached from node i's inputs. */
static bool collect_reads(const ir_graph *g, const fuse_plan *p, fuse_region *r, int node)
{
    const ir_node *n = &g->nodes[node];
    for (int k = 0; k < n->n_in; k++) {
        int t = n->in[k];
        if (t < 0) continue;
        if (p->inline_of[t] >= 0) {
            if (!push(&r->nodes, &r->n_nodes, p->inline_of[t]) || !collect_reads(g, p, r, p->inline_of[t])) return false;
        } else if (p->epilogue_of[t] < 0 && p->insert_into[t] != node) { /* an epilogue's t is in a register */
            if (!push(&r->reads, &r->n_reads, t)) return false;
        }
    }
    return true;
}

/* Marks (in `hit`) the inline row reductions in the cone of node i's inputs. */
static void row_cone(const ir_graph *g, const fuse_plan *p, int i, char *hit)
{
    const ir_node *n = &g->nodes[i];
    for (int k = 0; k < n->n_in; k++) {
        int t = n->in[k];
        if (t < 0 || p->inline_of[t] < 0) continue;
        int q = p->inline_of[t];
        if (op_get(g->nodes[q].op)->kind == OPK_REDUCTION) hit[q] = 1;
        row_cone(g, p, q, hit);
    }
}

static bool ban_misplaced_rows(const ir_graph *g, const fuse_plan *p, char *banned)
{
    bool changed = false;
    char *hit = calloc((size_t)g->n_nodes + 1, 1);
    if (!hit) return false;
    for (int i = 0; i < g->n_nodes; i++) {
        if (p->role[i] == FUSE_INLINE) continue;
        memset(hit, 0, (size_t)g->n_nodes);
        row_cone(g, p, i, hit);
        const ir_node *n = &g->nodes[i];
        const op_info *oi = op_get(n->op);
        bool rows_ok = p->role[i] == FUSE_ROOT && !oi->lower && (oi->scalar || oi->elem);
        for (int q = 0; q < g->n_nodes; q++) {
            if (!hit[q]) continue;
            const ir_shape *row = &g->tensors[g->nodes[q].in[0]].shape;
            if (!rows_ok || n->out[0] < 0 || !ir_shape_eq(&g->tensors[n->out[0]].shape, row)) {
                banned[q] = 1;
                changed = true;
            }
        }
    }
    free(hit);
    return changed;
}

/* Marks (in `hit`) the inline nodes of node i's cone that select among
 * several inputs per element (an insert op of more than one input: Concat). */
static void select_cone(const ir_graph *g, const fuse_plan *p, int i, char *hit)
{
    const ir_node *n = &g->nodes[i];
    for (int k = 0; k < n->n_in; k++) {
        int t = n->in[k];
        if (t < 0 || p->inline_of[t] < 0) continue;
        int q = p->inline_of[t];
        if (op_get(g->nodes[q].op)->insert && g->nodes[q].n_in > 1) hit[q] = 1;
        select_cone(g, p, q, hit);
    }
}

/* Passes rule (fuse.h): a root that reads its input in several passes
 * materializes the selects of its inline cone. */
static bool ban_selects_in_passes(const ir_graph *g, const fuse_plan *p, char *banned)
{
    bool changed = false;
    char *hit = calloc((size_t)g->n_nodes + 1, 1);
    if (!hit) return false;
    for (int i = 0; i < g->n_nodes; i++) {
        if (p->role[i] != FUSE_ROOT || !(op_get(g->nodes[i].op)->flags & OPF_PASSES)) continue;
        memset(hit, 0, (size_t)g->n_nodes);
        select_cone(g, p, i, hit);
        for (int q = 0; q < g->n_nodes; q++)
            if (hit[q] && !banned[q]) {
                banned[q] = 1;
                changed = true;
            }
    }
    free(hit);
    return changed;
}

/* Producers that can write straight into an insert's output block. */
static void choose_inserts(const ir_graph *g, const uses *u, fuse_plan *p)
{
    for (int c = 0; c < g->n_nodes; c++) {
        const ir_node *n = &g->nodes[c];
        if (p->role[c] != FUSE_ROOT || !op_get(n->op)->insert || n->n_out != 1 || n->out[0] < 0) continue;
        int y = n->out[0];
        if (p->inline_of[y] >= 0 || p->epilogue_of[y] >= 0) continue;
        for (int i = 0; i < n->n_in; i++) {
            int64_t off[IR_MAX_RANK];
            int t = n->in[i];
            if (!fuse_insert(g, n, i, off)) continue;
            const ir_tensor *x = &g->tensors[t];
            if (x->producer < 0 || x->data || x->is_output || p->inline_of[t] >= 0 || p->epilogue_of[t] >= 0 ||
                p->insert_into[t] >= 0)
                continue;
            bool only_here = true;
            for (int j = u->start[t]; j < u->start[t + 1]; j++) only_here &= u->cons[j] == c;
            if (!only_here || u->start[t + 1] - u->start[t] != 1) continue;
            /* a view that is a region of its own makes no kernel to redirect */
            if (op_get(g->nodes[x->producer].op)->flags & OPF_VIEW) continue;
            p->insert_into[t] = c;
        }
    }
}

static bool add_range(fuse_region *r, int tensor, const int64_t *lo, const ir_shape *extent, bool border)
{
    fuse_range *a = realloc(r->ranges, sizeof(*a) * (size_t)(r->n_ranges + 1));
    if (!a) return false;
    r->ranges = a;
    fuse_range *x = &a[r->n_ranges++];
    memset(x, 0, sizeof *x);
    x->tensor = tensor;
    x->border = border;
    for (int d = 0; d < extent->rank; d++) {
        x->lo[d] = lo ? lo[d] : 0;
        x->hi[d] = x->lo[d] + extent->dim[d];
    }
    return true;
}

/* Where a stored tensor t really lands: its own buffer, or (redirected) a block of an insert's output. */
static bool record_store(const ir_graph *g, const fuse_plan *p, fuse_region *r, int t)
{
    int64_t off[IR_MAX_RANK] = {0}, total[IR_MAX_RANK] = {0};
    const ir_shape *extent = &g->tensors[t].shape;
    int dest = t;
    while (p->insert_into[dest] >= 0) {
        const ir_node *c = &g->nodes[p->insert_into[dest]];
        int i = 0;
        while (c->in[i] != dest) i++;
        fuse_insert(g, c, i, off);
        for (int d = 0; d < extent->rank; d++) total[d] += off[d];
        dest = c->out[0];
    }
    return push(&r->writes, &r->n_writes, dest) && add_range(r, dest, total, extent, false);
}

/* An insert root writes the blocks of inputs no producer wrote, and its fill. */
static bool record_insert(const ir_graph *g, const fuse_plan *p, fuse_region *r, int node)
{
    const ir_node *n = &g->nodes[node];
    int y = n->out[0];
    for (int i = 0; i < n->n_in; i++) {
        int64_t off[IR_MAX_RANK];
        if (!fuse_insert(g, n, i, off) || p->insert_into[n->in[i]] == node) continue;
        if (!push(&r->writes, &r->n_writes, y) || !add_range(r, y, off, &g->tensors[n->in[i]].shape, false)) return false;
    }
    if (fuse_insert_fills(g, n) && !add_range(r, y, NULL, &g->tensors[y].shape, true)) return false;
    return push(&r->writes, &r->n_writes, y);
}

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

smelt_status fuse_build(const ir_graph *g, const fuse_options *opt, fuse_plan *p)
{
    memset(p, 0, sizeof *p);
    uses u = {0};
    int *cost = calloc((size_t)g->n_nodes + 1, sizeof(int));
    int *depth = calloc((size_t)g->n_nodes + 1, sizeof(int));
    int *region_root = calloc((size_t)g->n_nodes + 1, sizeof(int));
    p->role = calloc((size_t)g->n_nodes + 1, sizeof(fuse_role));
    p->inline_of = malloc(sizeof(int) * ((size_t)g->n_tensors + 1));
    p->epilogue_of = malloc(sizeof(int) * ((size_t)g->n_tensors + 1));
    p->insert_into = malloc(sizeof(int) * ((size_t)g->n_tensors + 1));
    p->stored_by = malloc(sizeof(int) * ((size_t)g->n_tensors + 1));
    p->regions = calloc((size_t)g->n_nodes + 1, sizeof(fuse_region));
    p->n_tensors = g->n_tensors;
    char *banned = calloc((size_t)g->n_nodes + 1, 1), *in_dag = calloc((size_t)g->n_nodes + 1, 1);
    int *dag = calloc(FUSE_EPILOGUE_DAG_MAX + 1, sizeof(int));
    smelt_status st = SMELT_OK;
    if (!banned || !in_dag || !dag || !cost || !depth || !region_root || !p->role || !p->inline_of || !p->epilogue_of || !p->insert_into || !p->stored_by || !p->regions || !uses_build(g, &u)) {
        st = diag_fail(SMELT_ERR_NOMEM, "out of memory forming regions");
        goto out;
    }
decide:
    for (int t = 0; t < g->n_tensors; t++) p->inline_of[t] = p->epilogue_of[t] = p->insert_into[t] = p->stored_by[t] = -1;
    /* One pass in graph order, so each decision sees its inputs' roles and a
     * node's cone cost includes its inlined inputs. Epilogue is tried first:
     * finishing a root's region saves a store and a load, while inlining into
     * the consumer would still leave the root's output in memory. */
    memset(in_dag, 0, (size_t)g->n_nodes);
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *n = &g->nodes[i];
        const op_info *oi = op_get(n->op);
        if (in_dag[i]) continue; /* decided with its epilogue DAG */
        region_root[i] = i;
        p->role[i] = FUSE_ROOT;
        if (opt->no_fuse) continue;
        cost[i] = fuse_node_cost(n);
        /* A row reduction's inputs are paid once per row, not per element. */
        for (int k = 0; k < n->n_in && oi->kind != OPK_REDUCTION; k++)
            if (n->in[k] >= 0 && p->inline_of[n->in[k]] >= 0) cost[i] += cost[p->inline_of[n->in[k]]];
        depth[i] = 1;
        for (int k = 0; k < n->n_in; k++)
            if (n->in[k] >= 0 && p->inline_of[n->in[k]] >= 0 && depth[p->inline_of[n->in[k]]] + 1 > depth[i])
                depth[i] = depth[p->inline_of[n->in[k]]] + 1;
        int via = -1;
        if (is_elementwise_kind(oi->kind) && oi->scalar && n->n_out == 1)
            for (int k = 0; k < n->n_in && via < 0; k++)
                if (n->in[k] >= 0 && epilogue_input(g, &u, p, region_root, i, n->in[k])) via = n->in[k];
        if (via >= 0) {
            p->role[i] = FUSE_EPILOGUE;
            p->epilogue_of[via] = i;
            region_root[i] = root_of(g, p, region_root, via);
            continue;
        }
        if (is_elementwise_kind(oi->kind) && oi->scalar && n->n_out == 1 && take_epilogue_dag(g, &u, p, region_root, i, dag, in_dag)) continue;
        bool all = n->n_out > 0;
        for (int o = 0; o < n->n_out; o++) {
            int t = n->out[o];
            if (t >= 0 && !banned[i] && depth[i] < FUSE_INLINE_DEPTH_MAX && can_inline(g, opt, &u, cost, i, t))
                p->inline_of[t] = i;
            else if (t >= 0) all = false;
        }
        if (all) p->role[i] = FUSE_INLINE;
    }

    /* A row reduction needs a root that iterates its rows with the elementwise
     * lowering; where a cone carries it elsewhere (a contraction's epilogue,
     * say), it is materialized instead and the decisions are made again. */
    if (ban_misplaced_rows(g, p, banned)) goto decide;
    if (ban_selects_in_passes(g, p, banned)) goto decide;
    if (!opt->no_fuse) choose_inserts(g, &u, p);
    if (!opt->no_fuse && !fuse_share(g, &u, p, region_root, cost, depth)) {
        st = diag_fail(SMELT_ERR_NOMEM, "out of memory forming regions");
        goto out;
    }
    if (!opt->no_fuse) fuse_siblings(g, &u, p, region_root);

    /* Regions: one per root, members gathered from the roles. */
    int *region_index = malloc(sizeof(int) * ((size_t)g->n_nodes + 1));
    if (!region_index) {
        st = diag_fail(SMELT_ERR_NOMEM, "out of memory forming regions");
        goto out;
    }
    for (int i = 0; i < g->n_nodes; i++) {
        if (p->role[i] == FUSE_ROOT) {
            region_index[i] = p->n_regions;
            p->regions[p->n_regions++].root = i;
        }
    }
    for (int i = 0; i < g->n_nodes && !st; i++) {
        if (p->role[i] == FUSE_INLINE) continue;
        fuse_region *r = &p->regions[region_index[region_root[i]]];
        const ir_node *n = &g->nodes[i];
        if (!push(&r->nodes, &r->n_nodes, i) || !collect_reads(g, p, r, i)) st = diag_fail(SMELT_ERR_NOMEM, "out of memory forming regions");
        bool insert_root = p->role[i] == FUSE_ROOT && op_get(n->op)->insert && fuse_insert(g, n, 0, (int64_t[IR_MAX_RANK]){0}) &&
                           p->epilogue_of[n->out[0]] < 0;
        if (!st && insert_root && !record_insert(g, p, r, i)) st = diag_fail(SMELT_ERR_NOMEM, "out of memory forming regions");
        for (int o = 0; o < n->n_out && !st && !insert_root; o++) {
            int t = n->out[o];
            if (t >= 0 && p->inline_of[t] < 0 && p->epilogue_of[t] < 0 && !record_store(g, p, r, t))
                st = diag_fail(SMELT_ERR_NOMEM, "out of memory forming regions");
        }
    }
    /* Side outputs (shared): inline tensors their reading region also stores. */
    for (int t = 0; t < g->n_tensors && !st; t++)
        if (p->stored_by[t] >= 0) {
            /* its producer may be read by nothing in the region (a sibling output): a member all the same */
            fuse_region *r = &p->regions[region_index[p->stored_by[t]]];
            int q = p->inline_of[t];
            if (!push(&r->nodes, &r->n_nodes, q) || !collect_reads(g, p, r, q) || !record_store(g, p, r, t))
                st = diag_fail(SMELT_ERR_NOMEM, "out of memory forming regions");
        }
    for (int r = 0; r < p->n_regions; r++) qsort(p->regions[r].nodes, (size_t)p->regions[r].n_nodes, sizeof(int), cmp_int);
    free(region_index);
out:
    uses_free(&u);
    free(banned);
    free(in_dag);
    free(dag);
    free(cost);
    free(depth);
    free(region_root);
    if (st) fuse_free(p);
    return st;
}

void fuse_free(fuse_plan *p)
{
    for (int r = 0; p->regions && r < p->n_regions; r++) {
        free(p->regions[r].nodes);
        free(p->regions[r].reads);
        free(p->regions[r].writes);
        free(p->regions[r].ranges);
    }
    free(p->regions);
    free(p->role);
    free(p->inline_of);
    free(p->epilogue_of);
    free(p->insert_into);
    free(p->stored_by);
    memset(p, 0, sizeof *p);
}

static const char *role_name(fuse_role r)
{
    return r == FUSE_ROOT ? "root" : r == FUSE_INLINE ? "inline" : r == FUSE_SIBLING ? "sibling" : "epilogue";
}

static void dump_tensor_list(const ir_graph *g, const int *ts, int n, FILE *f)
{
    char sb[128];
    for (int i = 0; i < n; i++) {
        const ir_tensor *x = &g->tensors[ts[i]];
        fprintf(f, " %%%d%s", ts[i], ir_shape_str(&x->shape, sb, sizeof sb));
    }
    fprintf(f, "\n");
}

void fuse_dump(const ir_graph *g, const fuse_plan *p, FILE *f)
{
    char sb[512]; /* a box of 8 dims of 20-digit bounds fits */
    fprintf(f, "%d regions for %d nodes\n", p->n_regions, g->n_nodes);
    for (int r = 0; r < p->n_regions; r++) {
        const fuse_region *x = &p->regions[r];
        const ir_node *root = &g->nodes[x->root];
        const ir_tensor *space = &g->tensors[root->out[0] >= 0 ? root->out[0] : 0];
        fprintf(f, "region %d: root %s '%s' (%s), space %s\n", r, op_get(root->op)->name, root->name,
                op_kind_name(op_get(root->op)->kind), ir_shape_str(&space->shape, sb, sizeof sb));
        for (int i = 0; i < x->n_nodes; i++) {
            const ir_node *n = &g->nodes[x->nodes[i]];
            bool stored = false; /* an inline node whose output this region also writes (a side output) */
            for (int o = 0; o < n->n_out; o++) stored |= n->out[o] >= 0 && p->stored_by[n->out[o]] == x->root;
            fprintf(f, "  %-8s %s '%s'%s\n", role_name(p->role[x->nodes[i]]), op_get(n->op)->name, n->name,
                    stored ? " (stored: an output of this region)" : "");
        }
        fprintf(f, "  reads: ");
        dump_tensor_list(g, x->reads, x->n_reads, f);
        fprintf(f, "  writes:");
        for (int i = 0; i < x->n_ranges; i++) {
            const fuse_range *w = &x->ranges[i];
            fprintf(f, " %%%d%s%s", w->tensor, ir_box_str(g->tensors[w->tensor].shape.rank, w->lo, w->hi, sb, sizeof sb),
                    w->border ? " border" : "");
        }
        fprintf(f, "\n");
    }
}

/* Graphviz identifiers and labels are made by smelt; model names are
 * reduced to a safe alphabet before they appear in a label. */
static void dot_label(const char *s, FILE *f)
{
    for (int i = 0; s[i] && i < 48; i++) {
        char c = s[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
                  c == '-' || c == '/' || c == ':';
        fputc(ok ? c : '_', f);
    }
}

void fuse_dot(const ir_graph *g, const fuse_plan *p, FILE *f)
{
    fprintf(f, "digraph smelt {\n  rankdir=TB;\n  node [shape=box, fontsize=10];\n");
    for (int r = 0; r < p->n_regions; r++) {
        const fuse_region *x = &p->regions[r];
        fprintf(f, "  subgraph cluster_%d {\n    label=\"region %d\";\n    style=rounded;\n", r, r);
        for (int i = 0; i < x->n_nodes; i++) {
            int ni = x->nodes[i];
            const ir_node *n = &g->nodes[ni];
            /* An inline node may be recomputed by several regions: draw it in each. */
            fprintf(f, "    r%d_n%d [label=\"%s\\n", r, ni, op_get(n->op)->name);
            dot_label(n->name, f);
            fprintf(f, "\"%s];\n", p->role[ni] == FUSE_INLINE ? ", style=dashed" : "");
        }
        fprintf(f, "  }\n");
    }
    /* Edges between node instances inside a region, and region to region through memory. */
    for (int r = 0; r < p->n_regions; r++) {
        const fuse_region *x = &p->regions[r];
        for (int i = 0; i < x->n_nodes; i++) {
            const ir_node *n = &g->nodes[x->nodes[i]];
            for (int k = 0; k < n->n_in; k++) {
                int t = n->in[k];
                if (t < 0 || g->tensors[t].producer < 0) continue;
                int prod = g->tensors[t].producer;
                bool local = false;
                for (int j = 0; j < x->n_nodes; j++) local |= x->nodes[j] == prod;
                if (local) {
                    fprintf(f, "  r%d_n%d -> r%d_n%d;\n", r, prod, r, x->nodes[i]);
                } else {
                    for (int q = 0; q < p->n_regions; q++)
                        for (int j = 0; j < p->regions[q].n_writes; j++)
                            if (p->regions[q].writes[j] == t)
                                fprintf(f, "  r%d_n%d -> r%d_n%d [style=bold];\n", q, prod, r, x->nodes[i]);
                }
            }
        }
    }
    fprintf(f, "}\n");
}
