/*
 * cost.c — the cost placement's model and assignment (place/cost.h).
 */
#include "place/cost.h"

#include <stdlib.h>
#include <string.h>

static double xfer_ms(const cost_device *a, const cost_device *b, int64_t bytes)
{
    /* a copy between two devices passes through host memory: each end's link */
    double t = 0;
    if (a) t += a->link_ms + (double)bytes / a->link_bytes_per_ms;
    if (b) t += b->link_ms + (double)bytes / b->link_bytes_per_ms;
    return t;
}

/* Region r on device index di: measured, else the table's estimate. */
static double run_ms(const cost_graph *g, int r, int di)
{
    if (g->ms) return g->ms[(size_t)r * (size_t)g->n_dev + (size_t)di];
    const cost_device *d = &g->dev[di];
    double c = g->flops[r] / d->flops_per_ms, m = g->bytes[r] / d->bytes_per_ms;
    return d->launch_ms + (c > m ? c : m);
}

/* Edges grouped by consumer: first_in[r]..first_in[r+1] index `order`. */
typedef struct cost_work {
    double *finish;
    int *first_in, *order;
} cost_work;

static smelt_status work_init(const cost_graph *g, cost_work *w)
{
    int nr = g->n_regions;
    w->finish = calloc((size_t)nr + 1, sizeof(double));
    w->first_in = calloc((size_t)nr + 2, sizeof(int));
    w->order = calloc((size_t)g->n_edges + 1, sizeof(int));
    int *fill = calloc((size_t)nr + 1, sizeof(int));
    smelt_status st = w->finish && w->first_in && w->order && fill ? SMELT_OK : diag_fail(SMELT_ERR_NOMEM, "out of memory");
    for (int e = 0; e < g->n_edges && !st; e++) {
        const cost_edge *x = &g->edges[e];
        if (x->from < 0 || x->to >= nr || x->from >= x->to)
            st = diag_fail(SMELT_ERR_INVALID_ARG, "cost: edge %d goes from region %d to %d, not forwards", e, x->from, x->to);
        else
            w->first_in[x->to + 1]++;
    }
    for (int r = 0; r < nr && !st; r++) w->first_in[r + 1] += w->first_in[r];
    for (int e = 0; e < g->n_edges && !st; e++) w->order[w->first_in[g->edges[e].to] + fill[g->edges[e].to]++] = e;
    free(fill);
    return st;
}

static void work_free(cost_work *w)
{
    free(w->finish);
    free(w->first_in);
    free(w->order);
}

static bool can_run(const cost_graph *g, int r, int d) { return !g->can || g->can[(size_t)r * (size_t)g->n_dev + (size_t)d]; }

/* When region r would finish on device d, given the regions before it. */
static double finish_on(const cost_graph *g, const cost_work *w, const double *avail, const int *dev, int r, int d)
{
    const cost_device *x = &g->dev[d];
    double ready = avail[d];
    for (int k = w->first_in[r]; k < w->first_in[r + 1]; k++) {
        const cost_edge *e = &g->edges[w->order[k]];
        double at = w->finish[e->from] + (dev[e->from] == d ? 0 : xfer_ms(&g->dev[dev[e->from]], x, e->bytes));
        if (at > ready) ready = at;
    }
    if (g->host_bytes && !x->host_memory && g->host_bytes[r] > 0) ready += xfer_ms(NULL, x, g->host_bytes[r]);
    return ready + run_ms(g, r, d);
}

/* Region r placed on d at time t. */
static void commit(const cost_graph *g, cost_work *w, double *avail, int r, int d, double t)
{
    w->finish[r] = t;
    avail[d] = t;
    if (g->dev[d].sync) /* the host thread was busy: nothing else started meanwhile */
        for (int e = 0; e < g->n_dev; e++)
            if (avail[e] < t) avail[e] = t;
}

/* The makespan of a fixed assignment (infinite if a region is where it cannot run). */
static double simulate(const cost_graph *g, cost_work *w, const int *dev)
{
    double avail[PLACE_MAX_DEVICES] = {0}, end = 0;
    for (int r = 0; r < g->n_regions; r++) {
        if (!can_run(g, r, dev[r])) return 1e300;
        double t = finish_on(g, w, avail, dev, r, dev[r]);
        commit(g, w, avail, r, dev[r], t);
        if (t > end) end = t;
    }
    return end;
}

smelt_status cost_assign(const cost_graph *g, int *out, double *makespan)
{
    int nd = g->n_dev, nr = g->n_regions;
    cost_work w;
    smelt_status st = work_init(g, &w);
    int *alt = calloc((size_t)nr + 1, sizeof(int));
    if (!st && !alt) st = diag_fail(SMELT_ERR_NOMEM, "out of memory");
    /* 1. list scheduling by earliest finish time */
    double avail[PLACE_MAX_DEVICES] = {0};
    for (int r = 0; r < nr && !st; r++) {
        int best = -1;
        double best_t = 0;
        for (int d = 0; d < nd; d++) {
            if (!can_run(g, r, d)) continue;
            double t = finish_on(g, &w, avail, out, r, d);
            if (best < 0 || t < best_t * (1 - 1e-12)) best = d, best_t = t; /* a tie keeps the earlier device */
        }
        if (best < 0) {
            st = diag_fail(SMELT_ERR_INVALID_ARG, "cost: region %d can run on no device", r);
            break;
        }
        out[r] = best;
        commit(g, &w, avail, r, best, best_t);
    }
    double best = st ? 0 : simulate(g, &w, out);
    /* 2. greedy is myopic (a fast device early can strand the chain behind a
     * region it cannot run): every region on one device, where that is
     * allowed, when that is as soon or sooner */
    bool single = false; /* out already has every region on one device */
    for (int d = 0; d < nd && !st; d++) {
        for (int r = 0; r < nr; r++) alt[r] = d;
        double t = simulate(g, &w, alt);
        /* a tie: no copies at all, on the earliest such device of the list */
        if (t < best * (1 - 1e-12) || (!single && t <= best * (1 + 1e-12))) {
            best = t, single = true;
            memcpy(out, alt, sizeof(int) * (size_t)nr);
        }
    }
    /* 3. single moves that shorten the run, a few passes */
    for (int pass = 0; pass < 3 && !st; pass++) {
        bool moved = false;
        for (int r = 0; r < nr; r++)
            for (int d = 0; d < nd; d++) {
                if (d == out[r] || !can_run(g, r, d)) continue;
                int was = out[r];
                out[r] = d;
                double t = simulate(g, &w, out);
                if (t < best * (1 - 1e-9)) best = t, moved = true;
                else out[r] = was;
            }
        if (!moved) break;
    }
    if (makespan) *makespan = best;
    work_free(&w);
    free(alt);
    return st;
}

cost_device cost_device_table(const place_device *d, int threads)
{
    int lanes = d->target.vector_width > 0 ? d->target.vector_width : 1;
    if (threads < 1) threads = 1;
    switch (d->kind) {
    case PLACE_CPU: /* an FMA per lane per cycle at ~2 GHz, half of it reached; copies are memcpy; its own
                     * stream thread (api/streams.c), so it overlaps the other devices */
        return (cost_device){.flops_per_ms = 2e6 * lanes * threads, .bytes_per_ms = 8e6, .launch_ms = 0.002,
                             .link_bytes_per_ms = 8e6, .link_ms = 0.002, .host_memory = true};
    case PLACE_OPENCL:
        if (strstr(d->ident, "Portable Computing Language") && !strstr(d->ident, "cuda")) /* PoCL on this CPU */
            return (cost_device){.flops_per_ms = 2e5, .bytes_per_ms = 2e6, .launch_ms = 0.03, .link_bytes_per_ms = 4e6,
                                 .link_ms = 0.02};
        return (cost_device){.flops_per_ms = 2e8, .bytes_per_ms = 2e8, .launch_ms = 0.01, .link_bytes_per_ms = 1e7,
                             .link_ms = 0.02};
    case PLACE_CUDA:
        return (cost_device){.flops_per_ms = 1e9, .bytes_per_ms = 1e9, .launch_ms = 0.005, .link_bytes_per_ms = 2e7,
                             .link_ms = 0.01};
    case PLACE_KIND_COUNT: break;
    }
    return (cost_device){.flops_per_ms = 1e6, .bytes_per_ms = 1e6, .launch_ms = 0.01, .link_bytes_per_ms = 1e6, .link_ms = 0.01};
}

static double numel(const ir_graph *g, int t) { return t >= 0 ? (double)ir_tensor_numel(&g->tensors[t]) : 0; }

double cost_region_flops(const ir_graph *g, const fuse_region *r)
{
    double f = 0;
    for (int i = 0; i < r->n_nodes; i++) {
        const ir_node *n = &g->nodes[r->nodes[i]];
        const ir_tensor *a = n->n_in > 0 && n->in[0] >= 0 ? &g->tensors[n->in[0]] : NULL;
        const ir_tensor *w = n->n_in > 1 && n->in[1] >= 0 ? &g->tensors[n->in[1]] : NULL;
        double outs = n->n_out > 0 ? numel(g, n->out[0]) : 0;
        if (n->op == OP_MatMul && a && a->shape.rank >= 1) {
            f += 2 * outs * (double)a->shape.dim[a->shape.rank - 1];
        } else if (n->op == OP_Gemm && a && a->shape.rank == 2) {
            f += 2 * outs * (double)a->shape.dim[ir_attr_int(n, "transA", 0) ? 0 : 1];
        } else if (n->op == OP_Conv && w && ir_tensor_logical_shape(w).rank >= 1 && ir_tensor_logical_shape(w).dim[0] > 0) {
            /* through the logical shape: a weight packed for conv_gemm is [N/NR][K][NR] */
            ir_shape ws = ir_tensor_logical_shape(w);
            double per = 1;
            for (int d = 1; d < ws.rank; d++) per *= (double)ws.dim[d];
            f += 2 * outs * per;
        } else if (n->op == OP_ConvTranspose && a && w && w->shape.rank >= 1 && w->shape.dim[0] > 0) {
            f += 2 * numel(g, n->in[0]) * (numel(g, n->in[1]) / (double)w->shape.dim[0]);
        } else {
            double ins = a ? numel(g, n->in[0]) : 0;
            f += ins > outs ? ins : outs; /* elementwise: one per output; a reduction: one per input */
        }
    }
    return f;
}

double cost_period(const cost_graph *g, const int *assign)
{
    double busy[PLACE_MAX_DEVICES] = {0}, most = 0;
    for (int r = 0; r < g->n_regions; r++) busy[assign[r]] += run_ms(g, r, assign[r]);
    for (int e = 0; e < g->n_edges; e++) {
        int a = assign[g->edges[e].from], b = assign[g->edges[e].to];
        if (a == b) continue;
        busy[a] += xfer_ms(&g->dev[a], NULL, g->edges[e].bytes); /* each half on its own device's stream */
        busy[b] += xfer_ms(NULL, &g->dev[b], g->edges[e].bytes);
    }
    for (int d = 0; d < g->n_dev; d++)
        if (busy[d] > most) most = busy[d];
    return most;
}
