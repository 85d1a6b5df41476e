/*
 * program.c — smelt_program_compile and smelt_program_run: the pipeline of
 * DESIGN.md called in order, with a verifier after each stage.
 */
#include "api/program.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "graph/passes.h"
#include "kir/smem.h"
#include "ops/matmul.h"
#include "rt/rt.h"
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

/* Every name in the list must be a device smelt knows; the first runs the
 * program (placement over several devices is later work). */
static smelt_status check_devices(const char *list, char *first, size_t cap)
{
    const char *p = list && *list ? list : "cpu";
    first[0] = 0;
    while (*p) {
        size_t n = strcspn(p, ",");
        if (!rt_device_name_ok(p, n))
            return diag_fail(SMELT_ERR_DEVICE, "device '%.*s' is not known (devices: cpu, opencl, opencl:N, cuda, cuda:N)",
                             (int)(n < 64 ? n : 64), p);
        if (!first[0]) snprintf(first, cap, "%.*s", (int)n, p);
        p += n;
        if (*p == ',') p++;
    }
    if (!first[0]) snprintf(first, cap, "cpu");
    return SMELT_OK;
}

static smelt_status fuse_all(smelt_program *p, const smelt_options *opt)
{
    fuse_options fo = {.no_fuse = opt->no_fuse != 0,
                       .pad = opt->fuse_pad == 1 ? FUSE_PAD_NEVER : opt->fuse_pad == 2 ? FUSE_PAD_ALWAYS : FUSE_PAD_AUTO};
    return fuse_build(p->g, &fo, &p->fp);
}

static smelt_status lower_all(smelt_program *p, const target_info *target)
{
    lower_program_init(&p->lp, &p->arena);
    p->lp.target = target;
    for (int r = 0; r < p->fp.n_regions; r++) {
        const fuse_region *x = &p->fp.regions[r];
        bool views = true; /* a view (or a chain of them) aliases its input: no copy */
        for (int i = 0; i < x->n_nodes && views; i++) views = plan_node_is_view(p->g, x->nodes[i]);
        if (views) continue;
        TRY(lower_region(&p->lp, p->g, &p->fp, r));
    }
    for (int i = 0; i < p->lp.n_kernels; i++) {
        kir_kernel *k = p->lp.kernels[i];
        TRY(smem_assign(k, NULL));
        TRY(kir_spans(k));
        if (target->smem_limit > 0 && k->smem_bytes > target->smem_limit)
            return diag_fail(SMELT_ERR_UNSUPPORTED, "kernel %d needs %lld bytes of workgroup memory, over %s's %lld",
                             k->id, (long long)k->smem_bytes, target->name, (long long)target->smem_limit);
    }
    return SMELT_OK;
}

static int total_args(const plan_commands *c)
{
    int n = 0;
    for (int i = 0; i < c->n_cmds; i++)
        if (c->cmds[i].kind == PLAN_CMD_DISPATCH) n += c->cmds[i].n_args;
    return n;
}

/* Device memory for every plan slot: the arena, and constants (bound in
 * place on host memory, else copied once). An alias shares its root's. */
static smelt_status link_program(smelt_program *p)
{
    const lower_program *lp = &p->lp;
    const rt_device_ops *ops = p->dev->ops;
    p->fns = calloc((size_t)lp->n_kernels + 1, sizeof(rt_kernel *));
    p->buf_table = calloc((size_t)total_args(&p->cmds) + 1, sizeof(rt_arg));
    p->slot_mem = calloc((size_t)p->plan.n_slots + 1, sizeof(rt_arg));
    p->slot_ptr = calloc((size_t)p->plan.n_slots + 1, sizeof(void *));
    p->host_copy = calloc((size_t)p->plan.n_slots + 1, sizeof(void *));
    if (!p->fns || !p->buf_table || !p->slot_mem || !p->slot_ptr || !p->host_copy)
        return diag_fail(SMELT_ERR_NOMEM, "out of memory");
    TRY(ops->alloc(p->dev, (size_t)p->plan.arena_bytes + PLAN_ALIGN, &p->mem));
    for (int s = 0; s < p->plan.n_slots; s++) {
        const plan_slot *x = &p->plan.slots[s];
        if (x->alias >= 0) continue;
        if (x->kind == PLAN_ARENA) {
            p->slot_mem[s] = (rt_arg){p->mem, x->offset};
            if (ops->host_memory) p->slot_ptr[s] = (char *)(uintptr_t)p->mem + x->offset;
        } else if (x->kind == PLAN_CONST) {
            void *data = p->g->tensors[s].data;
            p->slot_ptr[s] = data;
            if (ops->host_memory) {
                p->slot_mem[s].mem = (rt_mem)(uintptr_t)data;
            } else if (x->bytes > 0) {
                TRY(ops->alloc(p->dev, (size_t)x->bytes, &p->slot_mem[s].mem));
                TRY(ops->upload(p->dev, p->slot_mem[s].mem, 0, data, (size_t)x->bytes));
            }
        } else if (x->kind == PLAN_INPUT && !ops->host_memory && x->bytes > 0) {
            TRY(ops->alloc(p->dev, (size_t)x->bytes, &p->slot_mem[s].mem));
        }
    }
    for (int s = 0; s < p->plan.n_slots; s++)
        if (p->plan.slots[s].alias >= 0) {
            p->slot_mem[s] = p->slot_mem[p->plan.slots[s].alias];
            p->slot_ptr[s] = p->slot_ptr[p->plan.slots[s].alias];
        }
    for (int ci = 0; ci < p->cmds.n_cmds; ci++) { /* host memory for what copies bring back */
        const plan_cmd *c = &p->cmds.cmds[ci];
        if (c->kind != PLAN_CMD_COPY || c->dst_device != PLAN_HOST || p->host_copy[c->dst.slot]) continue;
        if (!(p->host_copy[c->dst.slot] = malloc((size_t)p->plan.slots[c->dst.slot].bytes + 1)))
            return diag_fail(SMELT_ERR_NOMEM, "out of memory");
    }
    for (int i = 0; i < lp->n_kernels; i++) {
        char name[64];
        emit_kernel_name(lp->kernels[i], name, sizeof name);
        TRY(ops->kernel(p->dev, p->module, name, &p->fns[i]));
        const kir_kernel *k = lp->kernels[i];
        for (int b = 0; b < k->n_bufs; b++)
            if (!k->bufs[b].workgroup) p->stats.bytes_moved += kir_touched(&k->bufs[b]) * (int64_t)smelt_dtype_size(k->bufs[b].type);
    }
    return SMELT_OK;
}

/* The model's inputs as the run sees them: folded ones keep their values. */
static smelt_status record_inputs(smelt_program *p, const ir_graph *model)
{
    p->n_inputs = model->n_inputs;
    p->inputs = arena_alloc(&p->arena, sizeof(program_input) * (size_t)(model->n_inputs + 1));
    if (!p->inputs) return diag_fail(SMELT_ERR_NOMEM, "out of memory");
    for (int i = 0; i < model->n_inputs; i++) {
        const ir_tensor *t = &p->g->tensors[model->inputs[i]];
        program_input *x = &p->inputs[i];
        memset(x, 0, sizeof *x);
        if (!(x->name = arena_strdup(&p->arena, t->name))) return diag_fail(SMELT_ERR_NOMEM, "out of memory");
        if (!t->data) continue;
        x->folded = true;
        x->dtype = t->dtype;
        x->shape = t->shape;
        x->bytes = (size_t)ir_tensor_numel(t) * smelt_dtype_size(t->dtype);
        void *v = arena_alloc(&p->arena, x->bytes + 1);
        if (!v) return diag_fail(SMELT_ERR_NOMEM, "out of memory");
        memcpy(v, t->data, x->bytes);
        x->values = v;
    }
    return SMELT_OK;
}

/* The model's packed weights (graph_pack_cache): a list only ever pushed to. */
static void *pack_find(void *user, const void *src, int64_t nr, bool trans)
{
    smelt_model *m = user;
    for (packed_weight *w = atomic_load(&m->packed); w; w = w->next)
        if (w->src == src && w->nr == nr && w->trans == trans) return w->data;
    return NULL;
}

static void *pack_keep(void *user, const void *src, int64_t nr, bool trans, void *data, size_t bytes)
{
    (void)bytes;
    smelt_model *m = user;
    packed_weight *w = malloc(sizeof *w);
    if (!w) {
        free(data);
        return NULL;
    }
    *w = (packed_weight){.src = src, .nr = nr, .trans = trans, .data = data};
    packed_weight *head = atomic_load(&m->packed);
    do {
        for (packed_weight *q = head; q; q = q->next)
            if (q->src == src && q->nr == nr && q->trans == trans) { /* another program packed it first */
                free(w);
                free(data);
                return q->data;
            }
        w->next = head;
    } while (!atomic_compare_exchange_weak(&m->packed, &head, w));
    return data;
}

static smelt_status compile_program(smelt_program *p, const smelt_model *m, const smelt_options *opt, int n_inputs,
                                    const smelt_tensor *inputs)
{
    double t0 = now_ms();
    char dev_name[64];
    TRY(check_devices(opt->devices, dev_name, sizeof dev_name));
    /* The target follows from the device's kind; a program stopped before
     * the end needs no device, so source can be emitted for absent devices. */
    const target_info *target = place_target_for_device(dev_name);
    emit_lang lang = target == &target_opencl ? EMIT_OPENCL : target == &target_cuda ? EMIT_CUDA : EMIT_C;
    p->lang = lang;
    p->stage = opt->stop_after;
    if (p->stage == SMELT_STAGE_ALL) TRY(rt_device_open(dev_name, opt->threads, &p->dev));
    /* The device's own workgroup-memory size replaces the target's portable default. */
    p->target = *target;
    if (p->dev && p->dev->smem_bytes > 0 && target->smem_limit > 0) p->target.smem_limit = p->dev->smem_bytes;
    /* C is compiled here for this CPU (-march=native): its vectors are this host's. */
    if (target == &target_cpu) {
        p->target.vector_width = rt_cc_vector_width();
        p->target.stream_min_bytes = rt_cc_stream_min_bytes();
    }
    target = &p->target;
    p->g = ir_graph_clone_sharing_data(m->g); /* weights stay the model's: the model outlives its programs (smelt.h) */
    if (!p->g) return diag_fail(SMELT_ERR_NOMEM, "out of memory copying the model");
    TRY(graph_bind_inputs(p->g, n_inputs, inputs));
    TRY(record_inputs(p, m->g));
    TRY(graph_infer(p->g, lower_eval_node));
    TRY(graph_fold_batchnorm(p->g));
    /* The C target's microkernels read constant matmul weights as panels (ops/matmul.c). */
    if (target->wg_size == 1 && !getenv("SMELT_NO_PACKED_GEMM")) {
        graph_pack_cache cache = {pack_find, pack_keep, (void *)m}; /* the model's cache is its one mutable part */
        TRY(graph_pack_weights(p->g, mm_tiles_for(target->vector_width).nr, &cache));
    }
    TRY(graph_fold_gemm_transpose(p->g));
    TRY(graph_dce(p->g));
    if (p->stage == SMELT_STAGE_IR) return SMELT_OK;
    double t1 = now_ms();
    TRY(fuse_all(p, opt));
    if (p->stage == SMELT_STAGE_REGIONS) return SMELT_OK;
    TRY(lower_all(p, target));
    if (p->stage == SMELT_STAGE_KIR) return SMELT_OK;
    p->locals = opt->locals == SMELT_LOCALS_REUSE ? LOCALS_REUSE
              : opt->locals == SMELT_LOCALS_HYBRID ? LOCALS_HYBRID : target->locals;
    TRY(plan_build(p->g, &p->lp, &p->plan)); /* before emitting: the emitter binds in-place buffers (plan.in_place_of) */
    TRY(plan_barriers(p->g, &p->fp, &p->lp, &p->plan));
    TRY(plan_commands_build(p->g, &p->fp, &p->lp, &p->plan, p->dev ? p->dev->ops->host_memory : target->host_memory, &p->cmds));
    if (opt->max_memory > 0 && p->plan.arena_bytes > opt->max_memory)
        return diag_fail(SMELT_ERR_NOMEM, "the memory plan needs %lld bytes of activations, over the limit of %lld bytes",
                         (long long)p->plan.arena_bytes, (long long)opt->max_memory);
    if (p->stage == SMELT_STAGE_PLAN) return SMELT_OK;
    TRY(emit_program(p->lp.kernels, p->lp.n_kernels, lang, p->locals, (const int *const *)p->plan.in_place_of, &p->source));
    double t2 = now_ms();
    if (p->stage == SMELT_STAGE_SOURCE) return SMELT_OK;
    TRY(p->dev->ops->build(p->dev, p->source, &p->module, &p->stats.cc_cached));
    double t3 = now_ms();
    TRY(link_program(p));
    p->stats.t_frontend_ms = t1 - t0;
    p->stats.t_lower_ms = t2 - t1;
    p->stats.t_cc_ms = t3 - t2;
    if (opt->verbose)
        fprintf(stderr, "smelt: %s: frontend %.1f ms, lower+emit %.1f ms, build %.1f ms (%s), %d kernels\n",
                p->dev->name, t1 - t0, t2 - t1, t3 - t2, p->stats.cc_cached ? "cached" : "compiled", p->lp.n_kernels);
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
    if (p->dev) {
        const rt_device_ops *ops = p->dev->ops;
        if (!ops->host_memory && p->slot_mem)
            for (int s = 0; s < p->plan.n_slots; s++)
                if (p->plan.slots[s].kind != PLAN_ARENA && p->plan.slots[s].alias < 0 && p->slot_mem[s].mem)
                    ops->mem_free(p->dev, p->slot_mem[s].mem);
        if (p->mem) ops->mem_free(p->dev, p->mem);
        if (p->module) ops->module_free(p->dev, p->module);
        rt_device_close(p->dev);
    }
    for (int s = 0; p->host_copy && s < p->plan.n_slots; s++) free(p->host_copy[s]);
    free(p->host_copy);
    free(p->slot_mem);
    free(p->source);
    free(p->fns);
    free(p->buf_table);
    free(p->slot_ptr);
    free(p->prof_ms);
    free(p->prof_calls);
    plan_commands_free(&p->cmds);
    plan_free(&p->plan);
    fuse_free(&p->fp);
    lower_program_free(&p->lp);
    arena_free(&p->arena);
    ir_graph_free(p->g);
    free(p);
}

/* The caller's tensor for the model's input i: by name, else by position. */
static const smelt_tensor *run_input(const smelt_program *p, int i, int n, const smelt_tensor *inputs)
{
    for (int k = 0; k < n; k++)
        if (inputs[k].name && strcmp(inputs[k].name, p->inputs[i].name) == 0) return &inputs[k];
    return i < n && !inputs[i].name ? &inputs[i] : NULL;
}

/* A folded input given again must carry the values the program was compiled
 * with: other values would need another program (they decide shapes). */
static smelt_status check_folded(const program_input *x, const smelt_tensor *in)
{
    bool same = in->dtype == x->dtype && in->rank == x->shape.rank;
    for (int d = 0; same && d < in->rank; d++) same = in->shape[d] == x->shape.dim[d];
    if (same && x->bytes > 0) same = in->data && memcmp(in->data, x->values, x->bytes) == 0;
    if (same) return SMELT_OK;
    return diag_fail(SMELT_ERR_SHAPE,
                     "input '%s': its values decide shapes or control flow, and the program was compiled for other values; "
                     "compile again with these",
                     x->name);
}

static smelt_status bind_run_inputs(smelt_program *p, int n, const smelt_tensor *inputs)
{
    const ir_graph *g = p->g;
    for (int k = 0; k < n; k++) {
        bool known = !inputs[k].name && k < p->n_inputs;
        for (int i = 0; i < p->n_inputs && !known; i++) known = inputs[k].name && strcmp(inputs[k].name, p->inputs[i].name) == 0;
        if (!known) {
            if (inputs[k].name) return diag_fail(SMELT_ERR_INVALID_ARG, "the model has no input named '%s'", inputs[k].name);
            return diag_fail(SMELT_ERR_INVALID_ARG, "input %d is given by position, but the model has %d inputs", k, p->n_inputs);
        }
    }
    for (int i = 0; i < p->n_inputs; i++) {
        const smelt_tensor *in = run_input(p, i, n, inputs);
        if (p->inputs[i].folded) {
            if (in) TRY(check_folded(&p->inputs[i], in));
            continue;
        }
        int t = -1;
        for (int gi = 0; gi < g->n_inputs && t < 0; gi++)
            if (strcmp(g->tensors[g->inputs[gi]].name, p->inputs[i].name) == 0) t = g->inputs[gi];
        if (t < 0) continue; /* read by no kernel (only its shape was used) */
        const ir_tensor *x = &g->tensors[t];
        if (!in || !in->data) return diag_fail(SMELT_ERR_INVALID_ARG, "input '%s' is not given", x->name);
        bool same = in->rank == x->shape.rank && in->dtype == x->dtype;
        for (int d = 0; same && d < in->rank; d++) same = in->shape[d] == x->shape.dim[d];
        if (!same) {
            char a[128];
            return diag_fail(SMELT_ERR_SHAPE, "input '%s': the program was compiled for %s%s; compile again for other shapes",
                             x->name, smelt_dtype_name(x->dtype), ir_shape_str(&x->shape, a, sizeof a));
        }
        p->slot_ptr[t] = in->data; /* a copy command uploads it where the device has its own memory */
        if (p->dev->ops->host_memory) p->slot_mem[t].mem = (rt_mem)(uintptr_t)in->data;
    }
    for (int s = 0; s < p->plan.n_slots; s++) /* views of inputs are the caller's memory too */
        if (p->plan.slots[s].alias >= 0 && p->plan.slots[s].kind == PLAN_INPUT) {
            p->slot_ptr[s] = p->slot_ptr[p->plan.slots[s].alias];
            p->slot_mem[s] = p->slot_mem[p->plan.slots[s].alias];
        }
    return SMELT_OK;
}

/* One command of the list (plan/commands.h). Profiling reads a clock
 * around each dispatch and waits for it. */
static smelt_status run_command(smelt_program *p, const plan_cmd *c, rt_arg *bufs)
{
    const rt_device_ops *ops = p->dev->ops;
    switch (c->kind) {
    case PLAN_CMD_DISPATCH: {
        for (int b = 0; b < c->n_args; b++) {
            int s = p->cmds.args[c->first_arg + b];
            bufs[b] = s < 0 ? (rt_arg){0, -1} : p->slot_mem[s];
        }
        double t0 = p->prof_ms ? now_ms() : 0;
        TRY(ops->dispatch(p->dev, p->fns[c->kernel], c->n_args, bufs, c->n_workgroups, c->wg_size));
        if (p->prof_ms) {
            TRY(ops->finish(p->dev));
            p->prof_ms[c->kernel] += now_ms() - t0;
            p->prof_calls[c->kernel]++;
        }
        return SMELT_OK;
    }
    case PLAN_CMD_COPY: {
        size_t bytes = (size_t)(c->dst.hi - c->dst.lo);
        if (c->src_device == PLAN_HOST && c->dst_device >= 0) {
            const rt_arg *d = &p->slot_mem[c->dst.slot];
            return ops->upload(p->dev, d->mem, (size_t)(d->offset + c->dst.lo), (const char *)p->slot_ptr[c->src.slot] + c->src.lo, bytes);
        }
        if (c->src_device >= 0 && c->dst_device == PLAN_HOST) {
            const rt_arg *s = &p->slot_mem[c->src.slot];
            TRY(ops->download(p->dev, s->mem, (size_t)(s->offset + c->src.lo), (char *)p->host_copy[c->dst.slot] + c->dst.lo, bytes));
            p->slot_ptr[c->dst.slot] = p->host_copy[c->dst.slot];
            return SMELT_OK;
        }
        return diag_fail(SMELT_ERR_INTERNAL, "copy between devices %d and %d: this runtime drives one device", c->src_device,
                         c->dst_device);
    }
    case PLAN_CMD_BARRIER:
        if (c->host) return ops->finish(p->dev);
        return ops->barrier ? ops->barrier(p->dev) : SMELT_OK;
    case PLAN_CMD_KIND_COUNT: break;
    }
    return diag_fail(SMELT_ERR_INTERNAL, "command of no kind");
}

/* Bind inputs → execute the command list → outputs (read by smelt_program_output). */
smelt_status smelt_program_run(smelt_program *p, int n_inputs, const smelt_tensor *inputs)
{
    if (!p) return diag_fail(SMELT_ERR_INVALID_ARG, "smelt_program_run: no program");
    if (!p->dev) return diag_fail(SMELT_ERR_INVALID_ARG, "smelt_program_run: the program was compiled only up to a stage (stop_after)");
    TRY(bind_run_inputs(p, n_inputs, inputs));
    rt_arg *bufs = p->buf_table;
    for (int i = 0; i < p->cmds.n_cmds; i++) {
        const plan_cmd *c = &p->cmds.cmds[i];
        smelt_status st = run_command(p, c, bufs);
        if (st) {
            (void)p->dev->ops->finish(p->dev); /* no held dispatch may run in the next run */
            return st;
        }
        if (c->kind == PLAN_CMD_DISPATCH) bufs += c->n_args;
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
