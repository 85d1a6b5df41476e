/*
 * place_measure.c — measured speeds for the `cost` placement (place/cost.h,
 * "Speeds"): per target class, the whole model compiled once more with every
 * region on the class's first device (`*=DEVICE`: a region it cannot run
 * still falls back), run on zero inputs with a clock around each dispatch
 * (smelt_program_set_profiling): one warm run, then per region the best of
 * three. The calibration programs see the device list the program does, so
 * their graph passes and fusion are the program's own: region r there is
 * region r here (checked by root). Then each device's link (a copy to it
 * and back, at a few sizes). What was measured is kept in the compile cache
 * (api/place_calib.c) under the model, options, devices, shapes and regions:
 * the next compile with the same key measures nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api/program.h"

#define MEASURE_RUNS 3

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static smelt_status measure_regions(smelt_program *p, const smelt_options *opt, double *ms, bool *fell, bool *measured);

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

/* Per device a copy to it and back through host memory, at a few sizes
 * (the best of three each): the fixed part and the speed, fitted through
 * the smallest and the largest (place/cost.h's link_ms, link_bytes_per_ms). */
static const size_t link_size[] = {64 << 10, 1 << 20, 4 << 20};
#define LINK_SIZES (sizeof link_size / sizeof link_size[0])

static smelt_status measure_links(smelt_program *p)
{
    size_t most = link_size[LINK_SIZES - 1];
    char *host = calloc(most, 1);
    if (!host) return diag_fail(SMELT_ERR_NOMEM, "out of memory");
    smelt_status st = SMELT_OK;
    for (int d = 0; d < p->devs.n && !st; d++) {
        rt_device *dev = p->dev[d];
        rt_mem m = 0;
        double t[LINK_SIZES];
        st = dev->ops->alloc(dev, most, &m);
        for (size_t k = 0; k < LINK_SIZES && !st; k++) {
            t[k] = 1e300;
            for (int r = 0; r < MEASURE_RUNS && !st; r++) {
                double t0 = now_ms();
                st = dev->ops->upload(dev, m, 0, host, link_size[k]);
                if (!st) st = dev->ops->download(dev, m, 0, host, link_size[k]);
                if (!st) st = dev->ops->finish(dev);
                double one = (now_ms() - t0) / 2;
                if (one < t[k]) t[k] = one;
            }
        }
        if (m) dev->ops->mem_free(dev, m);
        if (st) break;
        double span = t[LINK_SIZES - 1] - t[0];
        p->link_bytes_per_ms[d] = (double)(link_size[LINK_SIZES - 1] - link_size[0]) / (span > 1e-6 ? span : 1e-6);
        double fixed = t[0] - (double)link_size[0] / p->link_bytes_per_ms[d];
        p->link_ms[d] = fixed > 0 ? fixed : 0;
    }
    free(host);
    p->link_measured = !st;
    return st;
}

/* The calibration's key: beside the model, options and build
 * (calib_begin), the devices as opened, the shapes p was compiled for and
 * its regions (by root: another fusion is another calibration). */
static void measure_key(const smelt_program *p, const smelt_options *opt, calib_key *k)
{
    calib_begin(k, p->model, opt, "cost");
    int64_t n[4] = {p->devs.n, p->fp.n_regions, p->n_inputs, sysconf(_SC_NPROCESSORS_ONLN)}; /* threads: opt's, else the cores shared */
    calib_add(k, n, sizeof n);
    for (int d = 0; d < p->devs.n; d++) {
        const place_device *x = &p->devs.dev[d];
        calib_add_str(k, x->spec);
        calib_add_str(k, x->ident);
        int64_t t[3] = {x->target.vector_width, x->target.smem_limit, x->target.max_wg};
        calib_add(k, t, sizeof t);
    }
    for (int i = 0; i < p->n_inputs; i++) {
        const program_input *x = &p->inputs[i];
        calib_add_str(k, x->name);
        int64_t t[2] = {x->dtype, x->shape.rank};
        calib_add(k, t, sizeof t);
        if (x->shape.rank > 0) calib_add(k, x->shape.dim, sizeof(int64_t) * (size_t)x->shape.rank);
        if (x->folded) calib_add(k, x->values, x->bytes);
    }
    for (int r = 0; r < p->fp.n_regions; r++) calib_add(k, &p->fp.regions[r].root, sizeof p->fp.regions[r].root);
}

/* An entry: ms[nr * nd], fell[nr * nd] (1: the region fell back from that
 * device), link_ms[nd], link_bytes_per_ms[nd]. */
static size_t entry_bytes(int nr, int nd) { return (size_t)nr * (size_t)nd * (sizeof(double) + 1) + (size_t)nd * 2 * sizeof(double); }

static bool load_entry(smelt_program *p, const calib_key *k, double *ms, bool *can)
{
    int nr = p->fp.n_regions, nd = p->devs.n;
    size_t cells = (size_t)nr * (size_t)nd, len = entry_bytes(nr, nd);
    char *e = malloc(len + 1);
    bool hit = e && calib_load(k, e, len);
    if (hit) {
        memcpy(ms, e, cells * sizeof(double));
        for (size_t i = 0; i < cells; i++)
            if (e[cells * sizeof(double) + i]) can[i] = false;
        memcpy(p->link_ms, e + cells * (sizeof(double) + 1), (size_t)nd * sizeof(double));
        memcpy(p->link_bytes_per_ms, e + cells * (sizeof(double) + 1) + (size_t)nd * sizeof(double), (size_t)nd * sizeof(double));
        p->link_measured = p->cost_cached = true;
    }
    free(e);
    return hit;
}

static void store_entry(const smelt_program *p, const calib_key *k, const double *ms, const bool *fell)
{
    int nr = p->fp.n_regions, nd = p->devs.n;
    size_t cells = (size_t)nr * (size_t)nd, len = entry_bytes(nr, nd);
    char *e = malloc(len + 1);
    if (!e) return;
    memcpy(e, ms, cells * sizeof(double));
    for (size_t i = 0; i < cells; i++) e[cells * sizeof(double) + i] = fell[i];
    memcpy(e + cells * (sizeof(double) + 1), p->link_ms, (size_t)nd * sizeof(double));
    memcpy(e + cells * (sizeof(double) + 1) + (size_t)nd * sizeof(double), p->link_bytes_per_ms, (size_t)nd * sizeof(double));
    calib_store(k, e, len);
    free(e);
}

smelt_status program_cost_measure(smelt_program *p, const smelt_options *opt, double *ms, bool *can, bool *measured)
{
    calib_key key;
    measure_key(p, opt, &key);
    if (load_entry(p, &key, ms, can)) {
        *measured = true;
        return SMELT_OK;
    }
    size_t cells = (size_t)p->fp.n_regions * (size_t)p->devs.n;
    bool *fell = calloc(cells + 1, 1);
    if (!fell) return diag_fail(SMELT_ERR_NOMEM, "out of memory");
    smelt_status st = measure_regions(p, opt, ms, fell, measured);
    if (!st && *measured) st = measure_links(p);
    if (!st && *measured) {
        calib_measured();
        store_entry(p, &key, ms, fell);
        for (size_t i = 0; i < cells; i++)
            if (fell[i]) can[i] = false;
    }
    free(fell);
    return st;
}

/* Per region and device its time: the program compiled once more per
 * target class, with every region on the class's first device, and run.
 * fell[r * nd + d]: r fell back from d (over its limits). */
static smelt_status measure_regions(smelt_program *p, const smelt_options *opt, double *ms, bool *fell, bool *measured)
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
                fell[(size_t)r * (size_t)nd + (size_t)d] = away[r]; /* over its limits: it fell back */
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
