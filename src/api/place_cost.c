/*
 * place_cost.c — the `cost` placement's inputs, read off a program lowered
 * once by fallback (place/cost.h has the model and the assignment): per
 * region its FLOPs (from the graph) and the bytes its kernels touch, the
 * graph inputs and outputs it touches, and per tensor crossing regions the
 * sub-range the consumer's kernels read (their spans, kir_touched: what
 * plan/transfers.c would copy). The program then lowers again with each
 * region's chosen device first (api/program.c).
 */
#include <stdlib.h>
#include <unistd.h>

#include "api/program.h"
#include "place/cost.h"

static int64_t touched_bytes(const kir_buffer *b) { return kir_touched(b) * (int64_t)smelt_dtype_size(b->type); }

typedef struct edge_list {
    cost_edge *v;
    int n, cap;
} edge_list;

/* Tensor t, produced in an earlier region than r, read by r: `bytes` of it cross. */
static smelt_status add_edge(edge_list *e, const ir_graph *g, const int *region_of, int t, int r, int64_t bytes)
{
    int q = g->tensors[t].producer >= 0 ? region_of[g->tensors[t].producer] : -1;
    if (q < 0 || q >= r) return SMELT_OK;
    if (e->n == e->cap) {
        cost_edge *v = realloc(e->v, sizeof(cost_edge) * (size_t)(e->cap * 2));
        if (!v) return diag_fail(SMELT_ERR_NOMEM, "out of memory");
        e->v = v;
        e->cap *= 2;
    }
    e->v[e->n++] = (cost_edge){q, r, bytes};
    return SMELT_OK;
}

smelt_status program_cost_assign(smelt_program *p, const smelt_options *opt, const place_policy *pol, int **assign)
{
    const ir_graph *g = p->g;
    const fuse_plan *fp = &p->fp;
    int nr = fp->n_regions, nd = p->devs.n;
    int *region_of = calloc((size_t)g->n_nodes + 1, sizeof(int));
    double *flops = calloc((size_t)nr + 1, sizeof(double)), *bytes = calloc((size_t)nr + 1, sizeof(double));
    int64_t *host = calloc((size_t)nr + 1, sizeof(int64_t));
    bool *can = calloc((size_t)nr * (size_t)nd + 1, sizeof(bool)); /* an override pins its regions (`cost,Conv=opencl`) */
    edge_list e = {.cap = 64, .v = malloc(sizeof(cost_edge) * 64)};
    *assign = arena_alloc(&p->arena, sizeof(int) * ((size_t)nr + 1));
    smelt_status st = region_of && flops && bytes && host && can && e.v && *assign ? SMELT_OK : diag_fail(SMELT_ERR_NOMEM, "out of memory");
    for (int n = 0; n < g->n_nodes && !st; n++) region_of[n] = -1;
    for (int r = 0; r < nr && !st; r++) {
        for (int i = 0; i < fp->regions[r].n_nodes; i++) region_of[fp->regions[r].nodes[i]] = r;
        flops[r] = cost_region_flops(g, &fp->regions[r]);
        int pin = place_region_override(pol, g, &fp->regions[r]);
        for (int d = 0; d < nd; d++) can[(size_t)r * (size_t)nd + (size_t)d] = pin < 0 || d == pin;
    }
    for (int k = 0; k < p->lp.n_kernels && !st; k++) {
        int node = p->lp.kernel_node[k], r = node >= 0 ? region_of[node] : -1;
        if (r < 0) continue;
        const kir_kernel *kk = p->lp.kernels[k];
        for (int b = 0; b < kk->n_bufs && !st; b++) {
            const kir_buffer *x = &kk->bufs[b];
            if (x->workgroup || x->tensor < 0 || x->tensor >= g->n_tensors) continue;
            int64_t nb = touched_bytes(x);
            bytes[r] += (double)nb;
            const ir_tensor *t = &g->tensors[x->tensor];
            if ((t->is_input && !t->data) || t->is_output) host[r] += nb;
            if (x->read) st = add_edge(&e, g, region_of, x->tensor, r, nb);
        }
    }
    for (int r = 0; r < nr && !st; r++) /* a view region: its input, whole, to wherever it is placed */
        if (p->region_device[r] < 0)
            for (int i = 0; i < fp->regions[r].n_nodes && !st; i++) {
                const ir_node *n = &g->nodes[fp->regions[r].nodes[i]];
                for (int k = 0; k < n->n_in && !st; k++)
                    if (n->in[k] >= 0 && !g->tensors[n->in[k]].data)
                        st = add_edge(&e, g, region_of, n->in[k], r,
                                      ir_tensor_numel(&g->tensors[n->in[k]]) * (int64_t)smelt_dtype_size(g->tensors[n->in[k]].dtype));
            }
    cost_graph cg = {.n_regions = nr, .flops = flops, .bytes = bytes, .host_bytes = host, .can = can, .edges = e.v, .n_edges = e.n, .n_dev = nd};
    int n_cpu = 0;
    for (int d = 0; d < nd; d++) n_cpu += p->devs.dev[d].kind == PLACE_CPU;
    int threads = opt->threads > 0 ? opt->threads : (int)(sysconf(_SC_NPROCESSORS_ONLN) / (n_cpu > 0 ? n_cpu : 1));
    for (int d = 0; d < nd; d++) cg.dev[d] = cost_device_table(&p->devs.dev[d], threads);
    double *ms = NULL; /* measured where the devices are open (place/cost.h "Speeds"), else the table */
    if (!st && !pol->cost_table && p->stage == SMELT_STAGE_ALL) {
        ms = calloc((size_t)nr * (size_t)nd + 1, sizeof(double));
        st = ms ? program_cost_measure(p, opt, ms, can, &p->cost_measured) : diag_fail(SMELT_ERR_NOMEM, "out of memory");
        if (p->cost_measured) cg.ms = ms;
        for (int d = 0; d < nd && p->link_measured; d++) {
            cg.dev[d].link_ms = p->link_ms[d];
            cg.dev[d].link_bytes_per_ms = p->link_bytes_per_ms[d];
        }
        for (int d = 0; d < nd && p->cost_measured; d++)
            for (int r = 0; r < nr; r++)
                if (can[(size_t)r * (size_t)nd + (size_t)d]) p->cost_dev_ms[d] += ms[(size_t)r * (size_t)nd + (size_t)d];
    }
    if (!st) st = cost_assign(&cg, *assign, &p->cost_ms);
    if (!st) p->cost_period_ms = cost_period(&cg, *assign);
    free(ms);
    free(region_of);
    free(flops);
    free(bytes);
    free(host);
    free(can);
    free(e.v);
    return st;
}
