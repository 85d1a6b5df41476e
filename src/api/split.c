/*
 * split.c — the `split` placement (issue 18): data parallel over a device
 * list. The batch dimension (axis 0) of the model's inputs is divided into
 * one share of rows per device, each share runs as its own child program on
 * its device, all at once (one thread per device beyond the caller's), and
 * the outputs are gathered into full-batch output tensors.
 *
 *   legality  The model is compiled up to the IR stage at the full batch B
 *             (program `ir`). Splitting is legal when every tensor computed
 *             from the inputs carries the batch at axis 0 and no node mixes
 *             rows: B >= 2 and at least one row per device; every non-constant
 *             input and node output has dim 0 == B; no node works along axis
 *             0 of a batch tensor (`axis` 0, `axes` containing 0 — a Reduce, a
 *             Softmax, a Gather, a Slice that is not the whole of axis 0 —, a
 *             Transpose moving axis 0, a MatMul/Gemm whose right operand is a
 *             batch matrix); no run-time control flow. Otherwise compiling is
 *             SMELT_ERR_UNSUPPORTED naming the node and the rule (no silent
 *             fallback: the caller asked for split). A Reshape that keeps dim
 *             0 keeps each row's elements (row-major), so it is legal; one
 *             whose constant target shape names the full batch fails when the
 *             share is compiled, and the share's output shapes are checked
 *             against the full batch's (dim 0 the share, the rest equal).
 *   shares    Weights per device: `split:W0:W1:...` by hand, else measured
 *             once at compile time — every child is compiled at an equal
 *             share, one child per group of identical devices (same target
 *             identity, same thread count) runs a zero input once to warm up
 *             and three times timed, and its rows per millisecond (the best
 *             of three) is the group's weight. Shares are B * w / sum(w)
 *             rounded by largest remainder (split_shares); a child whose
 *             share changed is compiled again, and a device whose share
 *             rounds to no row is left idle (named by `smelt info`): PoCL's
 *             CPU device, 40x slower than the C here, gets no row of 8.
 *   executables  A child is a complete program for one device and one share:
 *             devices of one target class with equal shares produce the same
 *             source and load one build (the compile cache: the second build
 *             is a cache hit, and on the CPU the same shared object), so the
 *             executables are the distinct (class, share) pairs, reported by
 *             `smelt info`.
 *   run       Inputs are sliced in place (a share's rows are contiguous in a
 *             row-major tensor: no copy), each child runs on its own thread
 *             (the caller's for one of them: a CUDA device's, whose context
 *             is current on the thread that opened it; two CUDA devices in
 *             one split would need rt/cuda.c to make its context current per
 *             call — not tried: no GPU here), and writes its rows of every
 *             output into the full output buffers the program owns.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api/program.h"

typedef struct split_child {
    smelt_program *prog;
    char spec[24];
    int64_t row0, rows;
    int group;              /* identical devices share a measurement */
    int cls;                /* its target class among the children */
    smelt_tensor *in;       /* the run's inputs as this child sees them */
    smelt_status st;
    char err[512];
    pthread_t thread;
    bool started;
} split_child;

struct program_split {
    smelt_program *ir;      /* the full batch, compiled up to the IR stage: shapes, constants */
    smelt_model *model;     /* the model with dim 0 of the split inputs left open */
    int n;
    split_child ch[PLACE_MAX_DEVICES];
    int64_t batch;
    bool *split_in;         /* per model input: sliced along the batch */
    int n_model_inputs;
    double weight[PLACE_MAX_DEVICES];
    bool by_hand;
    char idle[200];         /* devices whose share rounded to no row (not run) */
    int n_exe;
    void **out;             /* per output: the full tensor (NULL: a constant of ir) */
    /* the workers */
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    bool sync_ready;
    int generation, pending;
    bool quit;
    int run_n;
    int caller;             /* the child the calling thread runs: a CUDA device's (its context is
                             * current on the thread that opened it), else the first */
};

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void split_shares(int64_t batch, int n, const double *weight, int64_t *share)
{
    double sum = 0, frac[PLACE_MAX_DEVICES];
    for (int i = 0; i < n; i++) sum += weight[i] > 0 ? weight[i] : 0;
    int64_t given = 0;
    for (int i = 0; i < n; i++) {
        double want = sum > 0 ? (double)batch * (weight[i] > 0 ? weight[i] : 0) / sum : (double)batch / n;
        share[i] = (int64_t)want;
        frac[i] = want - (double)share[i];
        given += share[i];
    }
    while (given < batch) { /* largest remainder first (the first of equals) */
        int best = 0;
        for (int i = 1; i < n; i++)
            if (frac[i] > frac[best]) best = i;
        share[best]++;
        frac[best] = -1;
        given++;
    }
}

/* ---- legality -------------------------------------------------------------- */

static bool is_batch(const ir_graph *g, int t, int64_t batch)
{
    return t >= 0 && !g->tensors[t].data && g->tensors[t].shape.rank >= 1 && g->tensors[t].shape.dim[0] == batch;
}

/* Whether the int64 constant tensor t (or attribute values) holds axis 0 of rank `rank`. */
static bool holds_axis0(const int64_t *v, int64_t n, int rank)
{
    for (int64_t i = 0; i < n; i++)
        if (v[i] == 0 || v[i] == -rank) return true;
    return false;
}

static bool const_ints(const ir_graph *g, const ir_node *n, int k, const int64_t **v, int64_t *len)
{
    if (k >= n->n_in || n->in[k] < 0) return false;
    const ir_tensor *t = &g->tensors[n->in[k]];
    if (!t->data || t->dtype != SMELT_I64) return false;
    *v = t->data;
    *len = ir_tensor_numel(t);
    return true;
}

/* A Slice of x that takes all of axis 0 (or does not name it). */
static bool slice_keeps_axis0(const ir_graph *g, const ir_node *n, int64_t batch)
{
    const int64_t *starts, *ends, *axes = NULL, *steps = NULL;
    int64_t ns, ne, na = 0, nst = 0;
    if (!const_ints(g, n, 1, &starts, &ns) || !const_ints(g, n, 2, &ends, &ne)) return false;
    int rank = g->tensors[n->in[0]].shape.rank;
    bool has_axes = const_ints(g, n, 3, &axes, &na);
    (void)const_ints(g, n, 4, &steps, &nst);
    for (int64_t j = 0; j < ns && j < ne; j++) {
        int64_t a = has_axes ? (j < na ? axes[j] : -1) : j;
        if (a < 0) a += rank;
        if (a != 0) continue;
        int64_t s = starts[j] < 0 ? starts[j] + batch : starts[j];
        return s <= 0 && ends[j] >= batch && (!steps || j >= nst || steps[j] == 1);
    }
    return true;
}

/* The rule node n breaks when its rows are computed apart, or NULL. */
static const char *mixes_rows(const ir_graph *g, const ir_node *n, int64_t batch)
{
    const char *op = op_get(n->op)->name;
    bool x_batch = n->n_in > 0 && is_batch(g, n->in[0], batch);
    int rank = n->n_in > 0 && n->in[0] >= 0 ? g->tensors[n->in[0]].shape.rank : 0;
    if (op_get(n->op)->flags & OPF_CONTROL) return "run-time control flow runs the whole batch at once";
    if (strcmp(op, "Transpose") == 0 && x_batch) {
        const int64_t *perm;
        if (ir_attr_ints(n, "perm", &perm) > 0 && perm[0] != 0) return "a Transpose that moves the batch axis (perm[0] is not 0)";
    }
    if ((strcmp(op, "MatMul") == 0 || strcmp(op, "Gemm") == 0) && n->n_in > 1 && n->in[1] >= 0 && !g->tensors[n->in[1]].data &&
        (strcmp(op, "Gemm") == 0 || g->tensors[n->in[1]].shape.rank <= 2))
        return "a product whose right operand is computed from the batch (rows would be summed together)";
    if (!x_batch) return NULL;
    const ir_attr *a = ir_attr_find(n, "axis");
    if (a && (ir_attr_int(n, "axis", 1) == 0 || ir_attr_int(n, "axis", 1) == -rank)) return "it works along axis 0, the batch axis";
    const int64_t *v;
    int64_t len;
    int na = ir_attr_ints(n, "axes", &v);
    if (strcmp(op, "Slice") == 0) return slice_keeps_axis0(g, n, batch) ? NULL : "a Slice of the batch axis";
    if (na > 0 && holds_axis0(v, na, rank)) return "its axes include axis 0, the batch axis";
    if (na <= 0 && const_ints(g, n, 1, &v, &len) &&
        (strncmp(op, "Reduce", 6) == 0 || strcmp(op, "Squeeze") == 0 || strcmp(op, "Unsqueeze") == 0) && holds_axis0(v, len, rank))
        return "its axes include axis 0, the batch axis";
    return NULL;
}

/* Batch B of g's inputs and whether model input i is split; the rule broken. */
static smelt_status check_split(struct program_split *s, const ir_graph *g, int n_dev)
{
    char shp[128];
    s->batch = -1;
    for (int i = 0; i < g->n_inputs; i++) {
        const ir_tensor *t = &g->tensors[g->inputs[i]];
        if (t->data) continue;
        if (t->shape.rank < 1)
            return diag_fail(SMELT_ERR_UNSUPPORTED, "split: input '%s' is a scalar: no batch axis to divide", t->name);
        if (s->batch < 0) s->batch = t->shape.dim[0];
        if (t->shape.dim[0] != s->batch)
            return diag_fail(SMELT_ERR_UNSUPPORTED, "split: input '%s' has shape %s, but the batch (dim 0 of the first input) is %lld",
                             t->name, ir_shape_str(&t->shape, shp, sizeof shp), (long long)s->batch);
    }
    if (s->batch < 0) return diag_fail(SMELT_ERR_UNSUPPORTED, "split: the model has no input computed at run time to divide");
    if (s->batch < 2 || s->batch < n_dev)
        return diag_fail(SMELT_ERR_UNSUPPORTED, "split: the batch is %lld, fewer rows than the %d devices: give a batch of %d or more "
                         "(--shape), or one device", (long long)s->batch, n_dev, n_dev > 2 ? n_dev : 2);
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *n = &g->nodes[i];
        if (n->dead) continue;
        bool reads_batch = false;
        for (int k = 0; k < n->n_in; k++) reads_batch |= n->in[k] >= 0 && !g->tensors[n->in[k]].data;
        if (!reads_batch) continue;
        const char *why = mixes_rows(g, n, s->batch);
        if (why) return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "split: the batch cannot be divided here: %s", why);
        for (int o = 0; o < n->n_out; o++) {
            int t = n->out[o];
            if (t < 0 || g->tensors[t].data || is_batch(g, t, s->batch)) continue;
            return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "split: the batch cannot be divided here: output '%s' has shape %s, "
                                "where dim 0 is not the batch %lld (the op moves or folds the batch axis)",
                                g->tensors[t].name, ir_shape_str(&g->tensors[t].shape, shp, sizeof shp), (long long)s->batch);
        }
    }
    return SMELT_OK;
}

/* ---- children ------------------------------------------------------------- */

/* The model input a caller's tensor k names (by name, or by position), or -1. */
static int model_input(const smelt_model *m, int k, const smelt_tensor *in)
{
    for (int i = 0; i < m->g->n_inputs; i++)
        if (in[k].name && strcmp(in[k].name, m->g->tensors[m->g->inputs[i]].name) == 0) return i;
    return !in[k].name && k < m->g->n_inputs ? k : -1;
}

/* Child c compiled for its share: the caller's compile inputs, the split
 * ones with dim 0 the share (every split input given, so that its shape is
 * known). The share's outputs must be the full ones with dim 0 the share. */
static smelt_status compile_child(struct program_split *s, int c, const smelt_options *opt, int threads, int n_inputs,
                                  const smelt_tensor *inputs)
{
    split_child *x = &s->ch[c];
    const ir_graph *mg = s->model->g;
    smelt_tensor *in = calloc((size_t)mg->n_inputs + (size_t)n_inputs + 1, sizeof *in);
    if (!in) return diag_fail(SMELT_ERR_NOMEM, "out of memory");
    int n = 0;
    bool *given = calloc((size_t)mg->n_inputs + 1, 1);
    for (int k = 0; k < n_inputs && given; k++) {
        int i = model_input(s->model, k, inputs);
        in[n] = inputs[k];
        if (i >= 0) {
            given[i] = true;
            in[n].name = mg->tensors[mg->inputs[i]].name;
            if (s->split_in[i]) in[n].shape[0] = x->rows, in[n].data = NULL;
        }
        n++;
    }
    for (int i = 0; i < mg->n_inputs && given; i++) {
        if (given[i] || !s->split_in[i]) continue;
        const ir_tensor *t = &s->ir->g->tensors[s->ir->g->inputs[i]];
        in[n] = (smelt_tensor){.name = t->name, .dtype = t->dtype, .rank = t->shape.rank};
        memcpy(in[n].shape, t->shape.dim, sizeof(int64_t) * (size_t)t->shape.rank);
        in[n++].shape[0] = x->rows;
    }
    smelt_options o = *opt;
    o.devices = x->spec;
    o.placement = NULL;
    o.threads = threads;
    smelt_program_free(x->prog);
    x->prog = NULL;
    smelt_status st = given ? smelt_program_compile(s->model, &o, n, in, &x->prog) : diag_fail(SMELT_ERR_NOMEM, "out of memory");
    free(in);
    free(given);
    if (st) {
        char why[512]; /* the message is rewritten below: keep a copy */
        snprintf(why, sizeof why, "%s", smelt_last_error());
        return diag_fail(st, "split: compiling the share of %lld rows for %s%s: %s", (long long)x->rows, x->spec,
                         st == SMELT_ERR_SHAPE ? " (a constant shape in the model naming the batch, as a Reshape target, cannot be divided)"
                                               : "", why);
    }
    const ir_graph *full = s->ir->g, *part = x->prog->g;
    for (int i = 0; i < full->n_outputs; i++) {
        const ir_tensor *a = &full->tensors[full->outputs[i]], *b = &part->tensors[part->outputs[i]];
        bool same = a->shape.rank == b->shape.rank && (a->data ? a->shape.dim[0] == b->shape.dim[0] : b->shape.dim[0] == x->rows);
        for (int d = 1; same && d < a->shape.rank; d++) same = a->shape.dim[d] == b->shape.dim[d];
        if (!same) {
            char sa[128], sb[128];
            return diag_fail(SMELT_ERR_UNSUPPORTED, "split: output '%s' is %s for the batch %lld but %s for a share of %lld rows: "
                             "a constant shape in the model names the batch (a Reshape target?)", a->name,
                             ir_shape_str(&a->shape, sa, sizeof sa), (long long)s->batch, ir_shape_str(&b->shape, sb, sizeof sb),
                             (long long)x->rows);
        }
    }
    return SMELT_OK;
}

/* Rows per millisecond of child c on a zero input: the best of three runs after one. */
static smelt_status measure(struct program_split *s, int c, double *rows_per_ms)
{
    split_child *x = &s->ch[c];
    const ir_graph *g = x->prog->g;
    int n = 0;
    smelt_tensor *in = calloc((size_t)g->n_inputs + 1, sizeof *in);
    if (!in) return diag_fail(SMELT_ERR_NOMEM, "out of memory");
    smelt_status st = SMELT_OK;
    for (int i = 0; i < g->n_inputs && !st; i++) {
        const ir_tensor *t = &g->tensors[g->inputs[i]];
        if (t->data) continue; /* folded: its values are in the program */
        in[n] = (smelt_tensor){.name = t->name, .dtype = t->dtype, .rank = t->shape.rank};
        memcpy(in[n].shape, t->shape.dim, sizeof(int64_t) * (size_t)t->shape.rank);
        in[n].data = smelt_alloc((size_t)ir_tensor_numel(t) * smelt_dtype_size(t->dtype) + 1);
        if (!in[n++].data) st = diag_fail(SMELT_ERR_NOMEM, "out of memory");
    }
    double best = 1e300;
    for (int r = 0; r < 4 && !st; r++) {
        double t0 = now_ms();
        st = smelt_program_run(x->prog, n, in);
        if (r > 0 && now_ms() - t0 < best) best = now_ms() - t0;
    }
    for (int i = 0; i < n; i++) smelt_free(in[i].data);
    free(in);
    *rows_per_ms = (double)x->rows / (best > 1e-6 ? best : 1e-6);
    return st;
}

/* The speeds' key in the compile cache (api/place_calib.c): beside the
 * model, options and build, each child's device as opened and its rows,
 * and the shapes given to the compile. */
static void speeds_key(const struct program_split *s, const smelt_model *m, const smelt_options *opt, int n_inputs,
                       const smelt_tensor *inputs, calib_key *k)
{
    calib_begin(k, m, opt, "split");
    int64_t n[3] = {s->n, n_inputs, s->batch};
    calib_add(k, n, sizeof n);
    for (int c = 0; c < s->n; c++) {
        const split_child *x = &s->ch[c];
        calib_add_str(k, x->spec);
        calib_add_str(k, x->prog && x->prog->dev[0] ? x->prog->dev[0]->ident : "");
        calib_add(k, &x->rows, sizeof x->rows);
    }
    for (int i = 0; i < n_inputs; i++) {
        int64_t t[3] = {inputs[i].dtype, inputs[i].rank, inputs[i].data != NULL};
        calib_add_str(k, inputs[i].name);
        calib_add(k, t, sizeof t);
        if (inputs[i].rank > 0 && inputs[i].rank <= SMELT_MAX_RANK) calib_add(k, inputs[i].shape, sizeof(int64_t) * (size_t)inputs[i].rank);
    }
}

/* Groups of identical devices, target classes among the children, and the
 * executables (distinct class and share). */
static void count_executables(struct program_split *s)
{
    int n_cls = 0;
    for (int c = 0; c < s->n; c++) {
        const place_device *d = &s->ch[c].prog->devs.dev[0];
        s->ch[c].cls = s->ch[c].group = -1;
        for (int e = 0; e < c && s->ch[c].cls < 0; e++) {
            const place_device *o = &s->ch[e].prog->devs.dev[0];
            if (o->kind == d->kind && strcmp(o->ident, d->ident) == 0) s->ch[c].cls = s->ch[e].cls, s->ch[c].group = s->ch[e].group;
        }
        if (s->ch[c].cls < 0) s->ch[c].cls = s->ch[c].group = n_cls++;
    }
    s->n_exe = 0;
    for (int c = 0; c < s->n; c++) {
        bool seen = false;
        for (int e = 0; e < c && !seen; e++) seen = s->ch[e].cls == s->ch[c].cls && s->ch[e].rows == s->ch[c].rows;
        s->n_exe += !seen;
    }
}

static void place_rows(struct program_split *s, const int64_t *share)
{
    int64_t row = 0;
    for (int c = 0; c < s->n; c++) {
        s->ch[c].row0 = row;
        s->ch[c].rows = share[c];
        row += share[c];
    }
}

/* Devices whose share rounds to no row are left idle: named, not run. */
static void drop_idle(struct program_split *s)
{
    int n = 0;
    for (int c = 0; c < s->n; c++) {
        if (s->ch[c].rows > 0) {
            if (n != c) {
                s->ch[n] = s->ch[c];
                s->weight[n] = s->weight[c];
                memset(&s->ch[c], 0, sizeof s->ch[c]);
            }
            n++;
            continue;
        }
        size_t len = strlen(s->idle);
        snprintf(s->idle + len, sizeof s->idle - len, "%s%s (weight %.3g)", len ? ", " : "", s->ch[c].spec, s->weight[c]);
        smelt_program_free(s->ch[c].prog);
        memset(&s->ch[c], 0, sizeof s->ch[c]);
    }
    s->n = n;
}

static smelt_status split_build(smelt_program *p, struct program_split *s, const smelt_model *m, const smelt_options *opt,
                                const place_policy *pol, int n_inputs, const smelt_tensor *inputs)
{
    smelt_options o = *opt;
    o.placement = NULL;
    o.stop_after = SMELT_STAGE_IR;
    /* the whole list (fallback placement), as the graph the shares compile
     * from: no single-device rewrite (Winograd folds the batch into its
     * tiles, which the check below would refuse) */
    o.devices = opt->devices;
    TRY(smelt_program_compile(m, &o, n_inputs, inputs, &s->ir));
    const ir_graph *g = s->ir->g;
    TRY(check_split(s, g, p->devs.n));
    /* The model again, with dim 0 of every split input open. */
    ir_graph *mg = ir_graph_clone_sharing_data(m->g);
    if (!mg || !(s->model = calloc(1, sizeof *s->model))) {
        ir_graph_free(mg);
        return diag_fail(SMELT_ERR_NOMEM, "out of memory");
    }
    s->model->g = mg;
    s->n_model_inputs = mg->n_inputs;
    if (!(s->split_in = calloc((size_t)mg->n_inputs + 1, 1))) return diag_fail(SMELT_ERR_NOMEM, "out of memory");
    for (int i = 0; i < mg->n_inputs; i++) {
        ir_tensor *t = &mg->tensors[mg->inputs[i]];
        for (int k = 0; k < g->n_inputs; k++)
            if (strcmp(g->tensors[g->inputs[k]].name, t->name) == 0 && !g->tensors[g->inputs[k]].data) s->split_in[i] = true;
        if (s->split_in[i] && t->shape.rank >= 1) t->shape.dim[0] = -1;
    }
    int n_cpu = 0, threads = opt->threads;
    for (int d = 0; d < p->devs.n; d++) n_cpu += p->devs.dev[d].kind == PLACE_CPU;
    if (threads <= 0 && n_cpu > 1) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        threads = cores / n_cpu > 0 ? (int)(cores / n_cpu) : 1;
    }
    s->n = p->devs.n;
    int64_t share[PLACE_MAX_DEVICES];
    s->by_hand = pol->split_weight[0] > 0;
    for (int c = 0; c < s->n; c++) {
        snprintf(s->ch[c].spec, sizeof s->ch[c].spec, "%s", p->devs.dev[c].spec);
        s->weight[c] = s->by_hand ? pol->split_weight[c] : 1;
    }
    split_shares(s->batch, s->n, s->weight, share);
    place_rows(s, share);
    for (int c = 0; c < s->n; c++)
        if (s->ch[c].rows > 0) TRY(compile_child(s, c, opt, threads, n_inputs, inputs));
    if (!s->by_hand && opt->stop_after == SMELT_STAGE_ALL) { /* a program stopped early runs nothing: equal shares */
        count_executables(s);
        calib_key key;
        speeds_key(s, m, opt, n_inputs, inputs, &key);
        if (!calib_load(&key, s->weight, sizeof(double) * (size_t)s->n)) {
            double group_speed[PLACE_MAX_DEVICES];
            for (int c = 0; c < s->n; c++) {
                int gr = s->ch[c].group;
                bool first = true;
                for (int e = 0; e < c; e++) first &= s->ch[e].group != gr;
                if (first) TRY(measure(s, c, &group_speed[gr]));
                s->weight[c] = group_speed[gr];
            }
            calib_measured();
            calib_store(&key, s->weight, sizeof(double) * (size_t)s->n);
        }
        split_shares(s->batch, s->n, s->weight, share);
        for (int c = 0; c < s->n; c++) {
            bool moved = share[c] != s->ch[c].rows;
            s->ch[c].rows = share[c];
            if (moved && share[c] > 0) TRY(compile_child(s, c, opt, threads, n_inputs, inputs));
        }
        place_rows(s, share);
    }
    drop_idle(s);
    count_executables(s);
    for (int c = s->n - 1; c >= 0; c--)
        if (s->ch[c].prog->devs.dev[0].kind == PLACE_CUDA) s->caller = c;
    /* the full outputs */
    if (!(s->out = calloc((size_t)g->n_outputs + 1, sizeof(void *)))) return diag_fail(SMELT_ERR_NOMEM, "out of memory");
    for (int i = 0; i < g->n_outputs; i++) {
        const ir_tensor *t = &g->tensors[g->outputs[i]];
        if (!t->data && !(s->out[i] = smelt_alloc((size_t)ir_tensor_numel(t) * smelt_dtype_size(t->dtype) + 1)))
            return diag_fail(SMELT_ERR_NOMEM, "out of memory");
    }
    for (int c = 0; c < s->n; c++)
        if (!(s->ch[c].in = calloc((size_t)mg->n_inputs + 1, sizeof(smelt_tensor)))) return diag_fail(SMELT_ERR_NOMEM, "out of memory");
    return SMELT_OK;
}

smelt_status program_split_compile(smelt_program *p, const smelt_model *m, const smelt_options *opt, const place_policy *pol,
                                   int n_inputs, const smelt_tensor *inputs)
{
    double t0 = now_ms();
    struct program_split *s = calloc(1, sizeof *s);
    if (!s) return diag_fail(SMELT_ERR_NOMEM, "out of memory");
    p->split = s;
    p->model = m;
    p->stage = SMELT_STAGE_ALL;
    TRY(split_build(p, s, m, opt, pol, n_inputs, inputs));
    p->stats.cc_cached = true;
    for (int c = 0; c < s->n; c++) p->stats.cc_cached &= s->ch[c].prog->stats.cc_cached;
    p->stats.t_cc_ms = now_ms() - t0;
    return SMELT_OK;
}

/* ---- run ------------------------------------------------------------------- */

/* Child c's inputs: the caller's, the split ones its rows (a view, no copy). */
static smelt_status child_inputs(struct program_split *s, int c, int n, const smelt_tensor *in)
{
    split_child *x = &s->ch[c];
    for (int k = 0; k < n; k++) {
        x->in[k] = in[k];
        int i = model_input(s->model, k, in);
        if (i < 0 || !s->split_in[i]) continue;
        if (in[k].rank < 1 || in[k].shape[0] != s->batch)
            return diag_fail(SMELT_ERR_SHAPE, "input '%s': the program was compiled for a batch of %lld (dim 0)",
                             s->model->g->tensors[s->model->g->inputs[i]].name, (long long)s->batch);
        int64_t row = smelt_tensor_numel(&in[k]) / s->batch * (int64_t)smelt_dtype_size(in[k].dtype);
        x->in[k].shape[0] = x->rows;
        x->in[k].data = in[k].data ? (char *)in[k].data + x->row0 * row : NULL;
    }
    return SMELT_OK;
}

/* Run child c on the current inputs and put its rows into the full outputs. */
static void run_child(struct program_split *s, int c)
{
    split_child *x = &s->ch[c];
    x->st = smelt_program_run(x->prog, s->run_n, x->in);
    const ir_graph *g = s->ir->g;
    for (int i = 0; i < g->n_outputs && !x->st; i++) {
        if (!s->out[i]) continue;
        smelt_tensor o;
        x->st = smelt_program_output(x->prog, i, &o);
        if (x->st) break;
        size_t row = (size_t)(smelt_tensor_numel(&o) / (o.shape[0] > 0 ? o.shape[0] : 1)) * smelt_dtype_size(o.dtype);
        memcpy((char *)s->out[i] + (size_t)x->row0 * row, o.data, (size_t)x->rows * row);
    }
    if (x->st) snprintf(x->err, sizeof x->err, "%s", smelt_last_error());
}

typedef struct worker_arg {
    struct program_split *s;
    int c;
} worker_arg;

/* A device's thread: one run of its child per generation. */
static void *worker(void *arg)
{
    worker_arg *w = arg;
    struct program_split *s = w->s;
    int seen = 0;
    for (;;) {
        pthread_mutex_lock(&s->mu);
        while (s->generation == seen && !s->quit) pthread_cond_wait(&s->go, &s->mu);
        bool quit = s->quit;
        seen = s->generation;
        pthread_mutex_unlock(&s->mu);
        if (quit) break;
        run_child(s, w->c);
        pthread_mutex_lock(&s->mu);
        if (--s->pending == 0) pthread_cond_signal(&s->done);
        pthread_mutex_unlock(&s->mu);
    }
    free(w);
    return NULL;
}

/* Threads for the children but the caller's. */
static smelt_status start_workers(struct program_split *s)
{
    if (!s->sync_ready) {
        if (pthread_mutex_init(&s->mu, NULL)) return diag_fail(SMELT_ERR_NOMEM, "split: no mutex");
        if (pthread_cond_init(&s->go, NULL) || pthread_cond_init(&s->done, NULL)) return diag_fail(SMELT_ERR_NOMEM, "split: no condition variable");
        s->sync_ready = true;
    }
    for (int c = 0; c < s->n; c++) {
        if (c == s->caller || s->ch[c].started) continue;
        worker_arg *w = malloc(sizeof *w);
        if (!w) return diag_fail(SMELT_ERR_NOMEM, "out of memory");
        *w = (worker_arg){s, c};
        if (pthread_create(&s->ch[c].thread, NULL, worker, w)) {
            free(w);
            return diag_fail(SMELT_ERR_NOMEM, "split: could not start a thread for %s", s->ch[c].spec);
        }
        s->ch[c].started = true;
    }
    return SMELT_OK;
}

smelt_status program_split_run(smelt_program *p, int n_inputs, const smelt_tensor *inputs)
{
    struct program_split *s = p->split;
    if (n_inputs > s->n_model_inputs)
        return diag_fail(SMELT_ERR_INVALID_ARG, "%d inputs given, but the model has %d", n_inputs, s->n_model_inputs);
    if (n_inputs > 0 && !inputs) return diag_fail(SMELT_ERR_INVALID_ARG, "smelt_program_run: no inputs");
    for (int c = 0; c < s->n; c++) TRY(child_inputs(s, c, n_inputs, inputs));
    TRY(start_workers(s));
    s->run_n = n_inputs;
    pthread_mutex_lock(&s->mu);
    s->pending = s->n - 1;
    s->generation++;
    pthread_cond_broadcast(&s->go);
    pthread_mutex_unlock(&s->mu);
    run_child(s, s->caller);
    pthread_mutex_lock(&s->mu);
    while (s->pending > 0) pthread_cond_wait(&s->done, &s->mu);
    pthread_mutex_unlock(&s->mu);
    for (int c = 0; c < s->n; c++)
        if (s->ch[c].st) return diag_fail(s->ch[c].st, "split: %s (rows %lld..%lld): %s", s->ch[c].spec, (long long)s->ch[c].row0,
                                          (long long)(s->ch[c].row0 + s->ch[c].rows), s->ch[c].err);
    return SMELT_OK;
}

int program_split_output_count(const smelt_program *p) { return p->split->ir->g->n_outputs; }

smelt_status program_split_output(const smelt_program *p, int i, smelt_tensor *out)
{
    const struct program_split *s = p->split;
    const ir_graph *g = s->ir->g;
    if (i < 0 || i >= g->n_outputs) return diag_fail(SMELT_ERR_INVALID_ARG, "smelt_program_output: no output %d", i);
    const ir_tensor *x = &g->tensors[g->outputs[i]];
    memset(out, 0, sizeof *out);
    out->name = x->name;
    out->dtype = x->dtype;
    out->rank = x->shape.rank;
    memcpy(out->shape, x->shape.dim, sizeof(int64_t) * (size_t)x->shape.rank);
    out->data = x->data ? x->data : s->out[i];
    return SMELT_OK;
}

/* ---- profiling: the children's kernels, one after another ------------------- */

smelt_status program_split_set_profiling(smelt_program *p, int on)
{
    for (int c = 0; c < p->split->n; c++) TRY(smelt_program_set_profiling(p->split->ch[c].prog, on));
    return SMELT_OK;
}

int program_split_kernel_count(const smelt_program *p)
{
    int n = 0;
    for (int c = 0; c < p->split->n; c++) n += smelt_program_kernel_count(p->split->ch[c].prog);
    return n;
}

smelt_status program_split_profile(const smelt_program *p, int i, smelt_kernel_profile *out)
{
    for (int c = 0; c < p->split->n; c++) {
        int k = smelt_program_kernel_count(p->split->ch[c].prog);
        if (i < k) return smelt_program_profile(p->split->ch[c].prog, i, out);
        i -= k;
    }
    return diag_fail(SMELT_ERR_INVALID_ARG, "smelt_program_profile: no kernel %d", i);
}

smelt_status program_split_stats(const smelt_program *p, smelt_program_stats *out)
{
    smelt_program_stats one;
    memset(out, 0, sizeof *out);
    for (int c = 0; c < p->split->n; c++) { /* every share's kernels run each run */
        TRY(smelt_program_get_stats(p->split->ch[c].prog, &one));
        out->nodes = one.nodes;
        out->regions = one.regions;
        out->kernels += one.kernels;
        out->bytes_moved += one.bytes_moved;
        out->arena_bytes += one.arena_bytes;
        out->weight_bytes = one.weight_bytes;
    }
    return SMELT_OK;
}

/* ---- smelt info ------------------------------------------------------------ */

static void dump_info(const smelt_program *p, FILE *f)
{
    const struct program_split *s = p->split;
    static const char *const langs[] = {"c", "opencl", "cuda"};
    if (s->ch[0].prog->stage != SMELT_STAGE_ALL) return; /* stopped early: the first share's dump only */
    fprintf(f, "placement:    split, batch %lld over %d devices, weights %s:", (long long)s->batch, s->n,
            s->by_hand ? "by hand" : "measured (rows per ms)");
    for (int c = 0; c < s->n; c++) fprintf(f, " %s %.3g", s->ch[c].spec, s->weight[c]);
    if (s->idle[0]) fprintf(f, "; idle, their share rounds to no row: %s", s->idle);
    fprintf(f, "\ndevices: %d\n", s->n);
    int n_cls = 0;
    for (int c = 0; c < s->n; c++) {
        const smelt_program *q = s->ch[c].prog;
        const place_device *d = &q->devs.dev[0];
        fprintf(f, "  d%d %s: %s, target %s [%s], class %d, rows %lld..%lld (%lld of %lld)\n", c, s->ch[c].spec,
                q->dev[0] ? q->dev[0]->name : "(not opened)", d->target.name, d->ident, s->ch[c].cls, (long long)s->ch[c].row0,
                (long long)(s->ch[c].row0 + s->ch[c].rows), (long long)s->ch[c].rows, (long long)s->batch);
        if (s->ch[c].cls + 1 > n_cls) n_cls = s->ch[c].cls + 1;
    }
    fprintf(f, "target classes: %d\nexecutables: %d\n", n_cls, s->n_exe);
    for (int c = 0; c < s->n; c++) {
        bool seen = false;
        for (int e = 0; e < c && !seen; e++) seen = s->ch[e].cls == s->ch[c].cls && s->ch[e].rows == s->ch[c].rows;
        if (seen) continue;
        const smelt_program *q = s->ch[c].prog;
        fprintf(f, "  class %d (%s): devices", s->ch[c].cls, langs[q->cls[0].lang]);
        for (int e = 0; e < s->n; e++)
            if (s->ch[e].cls == s->ch[c].cls && s->ch[e].rows == s->ch[c].rows) fprintf(f, " %s", s->ch[e].spec);
        fprintf(f, "; batch share %lld; %d regions, %d kernels\n", (long long)s->ch[c].rows, q->cls[0].n_regions, q->cls[0].n_kernels);
    }
    int64_t gathered = 0;
    for (int i = 0; i < s->ir->g->n_outputs; i++)
        if (s->out[i]) gathered += ir_tensor_numel(&s->ir->g->tensors[s->ir->g->outputs[i]]) *
                                   (int64_t)smelt_dtype_size(s->ir->g->tensors[s->ir->g->outputs[i]].dtype);
    fprintf(f, "transfers: 0 per run, 0 bytes (inputs sliced in place; outputs gathered on the host: %lld bytes)\n", (long long)gathered);
    for (int c = 0; c < s->n; c++)
        fprintf(f, "arena %s: %lld bytes, %d dispatches\n", s->ch[c].spec, (long long)s->ch[c].prog->cmds.arena_bytes[0],
                s->ch[c].prog->cmds.dispatches[0]);
}

smelt_status program_split_dump(const smelt_program *p, const char *what, char **text)
{
    if (strcmp(what, "info") != 0) return smelt_program_dump(p->split->ch[0].prog, what, text); /* the first share's */
    char *head = NULL, *buf = NULL;
    size_t len = 0;
    TRY(smelt_program_dump(p->split->ch[0].prog, "info", &head));
    FILE *f = open_memstream(&buf, &len);
    if (!f) {
        free(head);
        return diag_fail(SMELT_ERR_NOMEM, "out of memory");
    }
    /* the first share's program, up to its device lines; then the split's */
    char *cut = strstr(head, "devices: ");
    if (cut) *cut = 0;
    fputs(head, f);
    dump_info(p, f);
    char *ops = cut ? strstr(cut + 1, "\nops:") : NULL;
    if (ops) fputs(ops + 1, f);
    fclose(f);
    free(head);
    *text = buf;
    return SMELT_OK;
}

void program_split_free(smelt_program *p)
{
    struct program_split *s = p->split;
    if (!s) return;
    if (s->sync_ready) {
        pthread_mutex_lock(&s->mu);
        s->quit = true;
        pthread_cond_broadcast(&s->go);
        pthread_mutex_unlock(&s->mu);
    }
    for (int c = 0; c < s->n; c++)
        if (s->ch[c].started) pthread_join(s->ch[c].thread, NULL);
    if (s->sync_ready) {
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->go);
        pthread_cond_destroy(&s->done);
    }
    for (int c = 0; c < PLACE_MAX_DEVICES; c++) {
        smelt_program_free(s->ch[c].prog);
        free(s->ch[c].in);
    }
    for (int i = 0; s->out && s->ir && i < s->ir->g->n_outputs; i++) smelt_free(s->out[i]);
    free(s->out);
    smelt_program_free(s->ir);
    smelt_model_free(s->model);
    free(s->split_in);
    free(s);
    p->split = NULL;
}
