/*
 * place_measure.c — measured speeds for the `cost` placement (place/cost.h,
 * "Speeds"): per target class, the whole model compiled once more with every
 * region on the class's first device (`*=DEVICE`: a region it cannot run
 * still falls back), run on zero inputs with a clock around each dispatch
 * (smelt_program_set_profiling): one warm run, then per region the best of
 * three. The calibration programs see the device list the program does, so
 * their graph passes and fusion are the program's own: region r there is
 * region r here (checked by root).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/program.h"

#define MEASURE_RUNS 3

/* Zero inputs (folded ones with their compile-time values) in the shapes p
 * was compiled for; *n of them. False (nothing measured) when a shape is
 * not known. */
static smelt_status zero_inputs(const smelt_program *p, smelt_tensor **out, int *n, bool *known)
{
    *known = true;
    *n = 0;
    *out = calloc((size_t)p->n_inputs + 1, sizeof(smelt_tensor));
    if (!*out) return diag_fail(SMELT_ERR_NOMEM, "out of memory");
    for (int i = 0; i < p->n_inputs; i++) {
        const program_input *x = &p->inputs[i];
        smelt_tensor *t = &(*out)[(*n)++];
        *t = (smelt_tensor){.name = x->name, .dtype = x->dtype, .rank = x->shape.rank};
        int64_t numel = 1;
        for (int d = 0; d < x->shape.rank; d++) {
            t->shape[d] = x->shape.dim[d];
            if (x->shape.dim[d] < 0) *known = false;
            numel *= x->shape.dim[d] > 0 ? x->shape.dim[d] : 0;
        }
        if (x->folded) {
            t->data = (void *)(uintptr_t)x->values;
            continue;
        }
        if (!*known || x->shape.rank < 0) break;
        t->data = calloc((size_t)numel * smelt_dtype_size(x->dtype) + 1, 1);
        if (!t->data) return diag_fail(SMELT_ERR_NOMEM, "out of memory");
    }
    return SMELT_OK;
}

/* Per region of q (as p numbers them), its kernels' milliseconds in the
 * last profiled run; `elsewhere`: a kernel of it ran on another device than d. */
static smelt_status region_times(const smelt_program *p, const smelt_program *q, int d, double *ms, bool *elsewhere)
{
    int nr = p->fp.n_regions;
    if (q->fp.n_regions != nr) return diag_fail(SMELT_ERR_INTERNAL, "cost: the calibration program has %d regions, not %d", q->fp.n_regions, nr);
    int *region_of = malloc(sizeof(int) * ((size_t)q->g->n_nodes + 1));
    if (!region_of) return diag_fail(SMELT_ERR_NOMEM, "out of memory");
    for (int i = 0; i < q->g->n_nodes; i++) region_of[i] = -1;
    smelt_status st = SMELT_OK;
    for (int r = 0; r < nr; r++) {
        ms[r] = 0;
        elsewhere[r] = false;
        if (q->fp.regions[r].root != p->fp.regions[r].root)
            st = diag_fail(SMELT_ERR_INTERNAL, "cost: region %d of the calibration program has another root", r);
        for (int k = 0; k < q->fp.regions[r].n_nodes; k++) region_of[q->fp.regions[r].nodes[k]] = r;
    }
    for (int k = 0; k < q->lp.n_kernels && !st; k++) {
        int node = q->lp.kernel_node[k], r = node >= 0 && node < q->g->n_nodes ? region_of[node] : -1;
        if (r < 0) continue;
        ms[r] += q->prof_ms[k];
        if (q->kernel_device[k] != d) elsewhere[r] = true;
    }
    free(region_of);
    return st;
}

smelt_status program_cost_measure(smelt_program *p, const smelt_options *opt, double *ms, bool *can, bool *measured)
{
    int nr = p->fp.n_regions, nd = p->devs.n;
    *measured = false;
    smelt_tensor *in = NULL;
    int n_in = 0;
    bool known = false;
    double *best = malloc(sizeof(double) * ((size_t)nr + 1)), *run = malloc(sizeof(double) * ((size_t)nr + 1));
    bool *away = malloc(sizeof(bool) * ((size_t)nr + 1));
    smelt_status st = best && run && away ? zero_inputs(p, &in, &n_in, &known) : diag_fail(SMELT_ERR_NOMEM, "out of memory");
    for (int c = 0; c < p->devs.n_classes && !st && known; c++) {
        int d0 = p->devs.class_first[c];
        char place[40];
        snprintf(place, sizeof place, "*=%s", p->devs.dev[d0].spec);
        smelt_options o = *opt;
        o.placement = place;
        o.verbose = 0;
        smelt_program *q = NULL;
        st = smelt_program_compile(p->model, &o, n_in, in, &q);
        for (int r = 0; r < nr; r++) best[r] = 1e300;
        if (!st) st = smelt_program_run(q, n_in, in); /* warm: first-touch pages, device builds loaded */
        for (int k = 0; k < MEASURE_RUNS && !st; k++) {
            st = smelt_program_set_profiling(q, 1); /* zeroes the clocks */
            if (!st) st = smelt_program_run(q, n_in, in);
            if (!st) st = region_times(p, q, d0, run, away);
            for (int r = 0; r < nr && !st; r++)
                if (run[r] < best[r]) best[r] = run[r];
        }
        for (int d = 0; d < nd && !st; d++) {
            if (p->devs.dev[d].cls != c) continue;
            for (int r = 0; r < nr; r++) {
                ms[(size_t)r * (size_t)nd + (size_t)d] = best[r];
                if (away[r]) can[(size_t)r * (size_t)nd + (size_t)d] = false; /* over its limits: it fell back */
            }
        }
        smelt_program_free(q);
    }
    *measured = !st && known;
    for (int i = 0; in && i < n_in; i++)
        if (!p->inputs[i].folded) free(in[i].data);
    free(in);
    free(best);
    free(run);
    free(away);
    return st;
}
