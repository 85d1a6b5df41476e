/*
 * program.c — smelt_program_compile and smelt_program_run: the pipeline of
 * DESIGN.md called in order, with a verifier after each stage.
 */
#include "api/program.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "graph/passes.h"
#include "target/emit.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void smelt_options_init(smelt_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->devices = "cpu";
}

static smelt_status check_devices(const char *list)
{
    const char *p = list && *list ? list : "cpu";
    while (*p) {
        size_t n = strcspn(p, ",");
        if (!(n == 3 && strncmp(p, "cpu", 3) == 0))
            return diag_fail(SMELT_ERR_DEVICE, "device '%.*s' is not available (this build runs on: cpu)", (int)n, p);
        p += n;
        if (*p == ',') p++;
    }
    return SMELT_OK;
}

static smelt_status lower_all(smelt_program *p, const smelt_options *opt)
{
    fuse_options fo = {.no_fuse = opt->no_fuse != 0,
                       .pad = opt->fuse_pad == 1 ? FUSE_PAD_NEVER : opt->fuse_pad == 2 ? FUSE_PAD_ALWAYS : FUSE_PAD_AUTO};
    TRY(fuse_build(p->g, &fo, &p->fp));
    lower_program_init(&p->lp, &p->arena);
    for (int r = 0; r < p->fp.n_regions; r++) {
        const fuse_region *x = &p->fp.regions[r];
        if (x->n_nodes == 1 && plan_node_is_view(p->g, x->root)) continue; /* a view aliases its input: no copy */
        TRY(lower_region(&p->lp, p->g, &p->fp, r));
    }
    return SMELT_OK;
}

static smelt_status link_program(smelt_program *p)
{
    const lower_program *lp = &p->lp;
    int total = 0;
    p->fns = calloc((size_t)lp->n_kernels + 1, sizeof(rt_kernel_fn));
    p->buf_start = calloc((size_t)lp->n_kernels + 1, sizeof(int));
    for (int i = 0; i < lp->n_kernels; i++) {
        p->buf_start[i] = total;
        total += lp->kernels[i]->n_bufs;
    }
    p->buf_table = calloc((size_t)total + 1, sizeof(void *));
    p->slot_ptr = calloc((size_t)p->plan.n_slots + 1, sizeof(void *));
    p->mem = aligned_alloc(PLAN_ALIGN, (size_t)p->plan.arena_bytes + PLAN_ALIGN);
    if (!p->fns || !p->buf_start || !p->buf_table || !p->slot_ptr || !p->mem)
        return diag_fail(SMELT_ERR_NOMEM, "out of memory: the activation arena needs %lld bytes",
                         (long long)p->plan.arena_bytes);
    for (int s = 0; s < p->plan.n_slots; s++) {
        const plan_slot *x = &p->plan.slots[s];
        if (x->kind == PLAN_ARENA) p->slot_ptr[s] = p->mem + x->offset;
        else if (x->kind == PLAN_CONST) p->slot_ptr[s] = p->g->tensors[x->alias >= 0 ? x->alias : s].data;
    }
    for (int i = 0; i < lp->n_kernels; i++) {
        char name[64];
        emit_kernel_name(lp->kernels[i], name, sizeof name);
        p->fns[i] = (rt_kernel_fn)rt_so_sym(p->so, name);
        if (!p->fns[i]) return diag_fail(SMELT_ERR_INTERNAL, "kernel %s missing from the compiled object", name);
        const kir_kernel *k = lp->kernels[i];
        for (int b = 0; b < k->n_bufs; b++)
            p->stats.bytes_moved += k->bufs[b].numel * (int64_t)smelt_dtype_size(k->bufs[b].type);
    }
    return SMELT_OK;
}

static smelt_status compile_program(smelt_program *p, const smelt_model *m, const smelt_options *opt, int n_inputs,
                                    const smelt_tensor *inputs)
{
    double t0 = now_ms();
    TRY(check_devices(opt->devices));
    p->g = ir_graph_clone(m->g);
    if (!p->g) return diag_fail(SMELT_ERR_NOMEM, "out of memory copying the model");
    TRY(graph_bind_inputs(p->g, n_inputs, inputs));
    TRY(graph_infer(p->g));
    TRY(graph_fold_batchnorm(p->g));
    TRY(graph_dce(p->g));
    double t1 = now_ms();
    TRY(lower_all(p, opt));
    p->locals = opt->locals == SMELT_LOCALS_REUSE ? LOCALS_REUSE : LOCALS_HYBRID;
    TRY(plan_build(p->g, &p->lp, &p->plan)); /* before emitting: in-place sets kir_buffer.alias_of */
    TRY(emit_program(p->lp.kernels, p->lp.n_kernels, EMIT_C, p->locals, &p->source));
    if (opt->max_memory > 0 && p->plan.arena_bytes > opt->max_memory)
        return diag_fail(SMELT_ERR_NOMEM, "the memory plan needs %lld bytes of activations, over the limit of %lld bytes",
                         (long long)p->plan.arena_bytes, (long long)opt->max_memory);
    double t2 = now_ms();
    TRY(rt_cc_load(p->source, &p->so, &p->stats.cc_cached));
    double t3 = now_ms();
    p->pool = rt_pool_new(opt->threads);
    if (!p->pool) return diag_fail(SMELT_ERR_DEVICE, "could not start %d worker threads", opt->threads);
    TRY(link_program(p));
    p->stats.t_frontend_ms = t1 - t0;
    p->stats.t_lower_ms = t2 - t1;
    p->stats.t_cc_ms = t3 - t2;
    if (opt->verbose)
        fprintf(stderr, "smelt: frontend %.1f ms, lower+emit %.1f ms, cc %.1f ms (%s), %d kernels\n", t1 - t0, t2 - t1,
                t3 - t2, p->stats.cc_cached ? "cached" : "compiled", p->lp.n_kernels);
    return SMELT_OK;
}

smelt_status smelt_program_compile(const smelt_model *m, const smelt_options *opt_in, int n_inputs,
                                   const smelt_tensor *inputs, smelt_program **out)
{
    *out = NULL;
    if (!m || (n_inputs > 0 && !inputs)) return diag_fail(SMELT_ERR_INVALID_ARG, "smelt_program_compile: no model");
    smelt_options def;
    smelt_options_init(&def);
    const smelt_options *opt = opt_in ? opt_in : &def;
    smelt_program *p = calloc(1, sizeof *p);
    if (!p) return diag_fail(SMELT_ERR_NOMEM, "out of memory");
    arena_init(&p->arena);
    smelt_status st = compile_program(p, m, opt, n_inputs, inputs);
    if (st) {
        smelt_program_free(p);
        return st;
    }
    *out = p;
    return SMELT_OK;
}

void smelt_program_free(smelt_program *p)
{
    if (!p) return;
    if (p->pool) rt_pool_free(p->pool);
    if (p->so) rt_so_close(p->so);
    free(p->source);
    free(p->fns);
    free(p->buf_table);
    free(p->buf_start);
    free(p->slot_ptr);
    free(p->mem);
    free(p->prof_ms);
    free(p->prof_calls);
    plan_free(&p->plan);
    fuse_free(&p->fp);
    lower_program_free(&p->lp);
    arena_free(&p->arena);
    ir_graph_free(p->g);
    free(p);
}

static smelt_status bind_run_inputs(smelt_program *p, int n, const smelt_tensor *inputs)
{
    const ir_graph *g = p->g;
    for (int gi = 0; gi < g->n_inputs; gi++) {
        int t = g->inputs[gi];
        const ir_tensor *x = &g->tensors[t];
        const smelt_tensor *in = NULL;
        for (int i = 0; i < n && !in; i++)
            if (inputs[i].name && strcmp(inputs[i].name, x->name) == 0) in = &inputs[i];
        if (!in && gi < n && !inputs[gi].name) in = &inputs[gi];
        if (!in || !in->data) return diag_fail(SMELT_ERR_INVALID_ARG, "input '%s' is not given", x->name);
        bool same = in->rank == x->shape.rank && in->dtype == x->dtype;
        for (int d = 0; same && d < in->rank; d++) same = in->shape[d] == x->shape.dim[d];
        if (!same) {
            char a[128];
            return diag_fail(SMELT_ERR_SHAPE, "input '%s': the program was compiled for %s%s; compile again for other shapes",
                             x->name, smelt_dtype_name(x->dtype), ir_shape_str(&x->shape, a, sizeof a));
        }
        p->slot_ptr[t] = in->data;
    }
    for (int s = 0; s < p->plan.n_slots; s++) /* views of inputs are the caller's memory too */
        if (p->plan.slots[s].alias >= 0 && p->plan.slots[s].kind == PLAN_INPUT)
            p->slot_ptr[s] = p->slot_ptr[p->plan.slots[s].alias];
    return SMELT_OK;
}

/* The run loop with a clock read around each dispatch; the plain loop has none. */
static void run_profiled(smelt_program *p)
{
    for (int i = 0; i < p->lp.n_kernels; i++) {
        const kir_kernel *k = p->lp.kernels[i];
        void **bufs = p->buf_table + p->buf_start[i];
        for (int b = 0; b < k->n_bufs; b++) bufs[b] = p->slot_ptr[k->bufs[b].tensor];
        double t0 = now_ms();
        rt_pool_run(p->pool, p->fns[i], k->n_workgroups, bufs);
        p->prof_ms[i] += now_ms() - t0;
        p->prof_calls[i]++;
    }
}

smelt_status smelt_program_run(smelt_program *p, int n_inputs, const smelt_tensor *inputs)
{
    if (!p) return diag_fail(SMELT_ERR_INVALID_ARG, "smelt_program_run: no program");
    TRY(bind_run_inputs(p, n_inputs, inputs));
    if (p->prof_ms) {
        run_profiled(p);
        return SMELT_OK;
    }
    for (int i = 0; i < p->lp.n_kernels; i++) {
        const kir_kernel *k = p->lp.kernels[i];
        void **bufs = p->buf_table + p->buf_start[i];
        for (int b = 0; b < k->n_bufs; b++) bufs[b] = p->slot_ptr[k->bufs[b].tensor];
        rt_pool_run(p->pool, p->fns[i], k->n_workgroups, bufs);
    }
    return SMELT_OK;
}

int smelt_program_output_count(const smelt_program *p) { return p ? p->g->n_outputs : 0; }

smelt_status smelt_program_output(const smelt_program *p, int i, smelt_tensor *out)
{
    if (!p || i < 0 || i >= p->g->n_outputs)
        return diag_fail(SMELT_ERR_INVALID_ARG, "smelt_program_output: no output %d", i);
    int t = p->g->outputs[i];
    const ir_tensor *x = &p->g->tensors[t];
    memset(out, 0, sizeof *out);
    out->name = x->name;
    out->dtype = x->dtype;
    out->rank = x->shape.rank;
    memcpy(out->shape, x->shape.dim, sizeof(int64_t) * (size_t)x->shape.rank);
    out->data = x->data ? x->data : p->slot_ptr[t];
    if (!out->data && ir_tensor_numel(x) > 0)
        return diag_fail(SMELT_ERR_INVALID_ARG, "output '%s' is not computed yet: run the program first", x->name);
    return SMELT_OK;
}

smelt_status smelt_program_set_profiling(smelt_program *p, int on)
{
    if (!p) return diag_fail(SMELT_ERR_INVALID_ARG, "smelt_program_set_profiling: no program");
    free(p->prof_ms);
    free(p->prof_calls);
    p->prof_ms = NULL;
    p->prof_calls = NULL;
    if (!on) return SMELT_OK;
    p->prof_ms = calloc((size_t)p->lp.n_kernels + 1, sizeof(double));
    p->prof_calls = calloc((size_t)p->lp.n_kernels + 1, sizeof(int64_t));
    if (!p->prof_ms || !p->prof_calls) {
        free(p->prof_ms);
        free(p->prof_calls);
        p->prof_ms = NULL;
        p->prof_calls = NULL;
        return diag_fail(SMELT_ERR_NOMEM, "out of memory");
    }
    return SMELT_OK;
}

int smelt_program_kernel_count(const smelt_program *p) { return p ? p->lp.n_kernels : 0; }

smelt_status smelt_program_profile(const smelt_program *p, int i, smelt_kernel_profile *out)
{
    if (!p || !out || i < 0 || i >= p->lp.n_kernels)
        return diag_fail(SMELT_ERR_INVALID_ARG, "smelt_program_profile: no kernel %d", i);
    const kir_kernel *k = p->lp.kernels[i];
    out->id = k->id;
    out->what = k->comment;
    out->workgroups = k->n_workgroups;
    out->dispatches = p->prof_calls ? p->prof_calls[i] : 0;
    out->total_ms = p->prof_ms ? p->prof_ms[i] : 0;
    return SMELT_OK;
}
