/*
 * program.c — smelt_program_compile and smelt_program_run: the pipeline of
 * DESIGN.md called in order, with a verifier after each stage.
 */
#include "api/program.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

static smelt_status fuse_all(smelt_program *p, const smelt_options *opt)
{
    fuse_options fo = {.no_fuse = opt->no_fuse != 0,
                       .pad = opt->fuse_pad == 1 ? FUSE_PAD_NEVER : opt->fuse_pad == 2 ? FUSE_PAD_ALWAYS : FUSE_PAD_AUTO};
    return fuse_build(p->g, &fo, &p->fp);
}

/* Kernels [first, n) of lp, just lowered for `t`: workgroup memory, spans,
 * and the target's limit on workgroup memory. */
static smelt_status finish_kernels(lower_program *lp, int first, const target_info *t)
{
    for (int i = first; i < lp->n_kernels; i++) {
        kir_kernel *k = lp->kernels[i];
        TRY(smem_assign(k, NULL));
        TRY(kir_spans(k));
        if (t->smem_limit > 0 && k->smem_bytes > t->smem_limit)
            return diag_fail(SMELT_ERR_UNSUPPORTED, "kernel %d needs %lld bytes of workgroup memory, over %s's %lld", k->id,
                             (long long)k->smem_bytes, t->name, (long long)t->smem_limit);
        if (t->max_wg > 0 && k->wg_size > t->max_wg)
            return diag_fail(SMELT_ERR_UNSUPPORTED, "kernel %d runs %d threads per workgroup, over %s's %d", k->id, k->wg_size,
                             t->name, t->max_wg);
    }
    return SMELT_OK;
}

/* Every region lowered for the target of the device placement gives it:
 * the candidates in order, the first that lowers within its limits (an
 * UNSUPPORTED lowering or limit moves on to the next; the last one's error
 * is the region's). A matmul's constant B is read in the encoding of the
 * candidate's target: packed panels on a CPU, plain elsewhere. */
static smelt_status lower_all(smelt_program *p, const place_policy *pol)
{
    lower_program *lp = &p->lp;
    lower_program_init(lp, &p->arena);
    p->region_device = arena_alloc(&p->arena, sizeof(int) * ((size_t)p->fp.n_regions + 1));
    int cap = 64;
    p->kernel_device = malloc(sizeof(int) * (size_t)cap);
    if (!p->region_device || !p->kernel_device) return diag_fail(SMELT_ERR_NOMEM, "out of memory");
    for (int r = 0; r < p->fp.n_regions; r++) {
        const fuse_region *x = &p->fp.regions[r];
        p->region_device[r] = -1;
        bool views = true; /* a view (or a chain of them) aliases its input: no copy */
        for (int i = 0; i < x->n_nodes && views; i++) views = plan_node_is_view(p->g, x->nodes[i]);
        if (views) continue;
        int cand[PLACE_MAX_DEVICES];
        int n_cand = place_region_candidates(pol, &p->devs, p->g, x, r, cand);
        int first = lp->n_kernels, first_scratch = lp->n_scratch;
        smelt_status st = SMELT_ERR_INTERNAL;
        for (int c = 0; c < n_cand; c++) {
            const place_device *d = &p->devs.dev[cand[c]];
            lp->target = &p->devs.dev[p->devs.class_first[d->cls]].target;
            st = SMELT_OK;
            for (int i = 0; i < x->n_nodes && !st; i++) st = graph_matmul_encoding(p->g, x->nodes[i], d->kind == PLACE_CPU);
            if (!st) st = lower_region(lp, p->g, &p->fp, r);
            if (!st) st = finish_kernels(lp, first, lp->target);
            if (!st) {
                p->region_device[r] = cand[c];
                break;
            }
            if (st != SMELT_ERR_UNSUPPORTED || c + 1 == n_cand) return st;
            diag_clear(); /* the next device may run it */
            lp->n_kernels = first;
            lp->n_scratch = first_scratch;
        }
        if (lp->n_kernels > cap) {
            while (cap < lp->n_kernels) cap *= 2;
            int *v = realloc(p->kernel_device, sizeof(int) * (size_t)cap);
            if (!v) return diag_fail(SMELT_ERR_NOMEM, "out of memory");
            p->kernel_device = v;
        }
        for (int i = first; i < lp->n_kernels; i++) p->kernel_device[i] = p->region_device[r];
        p->cls[p->devs.dev[p->region_device[r]].cls].n_regions++;
    }
    lp->target = &p->devs.dev[p->devs.class_first[0]].target;
    return SMELT_OK;
}

/* The cost placement: the program lowered by fallback gives each region's
 * work and the sub-ranges crossing (api/place_cost.c); lowered again with
 * each region's chosen device first. */
static smelt_status lower_by_cost(smelt_program *p, const place_policy *pol, const smelt_options *opt)
{
    place_policy by_cost = *pol;
    int *assign = NULL;
    TRY(program_cost_assign(p, opt, pol, &assign));
    by_cost.assign = assign;
    lower_program_free(&p->lp);
    free(p->kernel_device);
    p->kernel_device = NULL;
    for (int c = 0; c < PLACE_MAX_DEVICES; c++) p->cls[c].n_regions = 0;
    return lower_all(p, &by_cost);
}

/* One source per target class that runs a region: the kernels placed on its
 * devices, in command-list order. */
static smelt_status emit_classes(smelt_program *p, const smelt_options *opt)
{
    const lower_program *lp = &p->lp;
    kir_kernel **ks = malloc(sizeof(kir_kernel *) * ((size_t)lp->n_kernels + 1));
    const int **alias = malloc(sizeof(int *) * ((size_t)lp->n_kernels + 1));
    smelt_status st = ks && alias ? SMELT_OK : diag_fail(SMELT_ERR_NOMEM, "out of memory");
    for (int c = 0; c < p->devs.n_classes && !st; c++) {
        const place_device *d = &p->devs.dev[p->devs.class_first[c]];
        program_class *x = &p->cls[c];
        x->lang = d->kind == PLACE_OPENCL ? EMIT_OPENCL : d->kind == PLACE_CUDA ? EMIT_CUDA : EMIT_C;
        x->n_kernels = 0;
        for (int i = 0; i < lp->n_kernels; i++)
            if (p->devs.dev[p->kernel_device[i]].cls == c) {
                alias[x->n_kernels] = p->plan.in_place_of[i];
                ks[x->n_kernels++] = lp->kernels[i];
            }
        bool none = true; /* a program with no kernel at all still has class 0's (empty) source */
        for (int e = 0; e < p->devs.n_classes; e++) none &= p->cls[e].n_regions == 0;
        if (x->n_regions == 0 && !(none && c == 0)) continue;
        locals_strategy locals = opt->locals == SMELT_LOCALS_REUSE ? LOCALS_REUSE
                               : opt->locals == SMELT_LOCALS_HYBRID ? LOCALS_HYBRID : d->target.locals;
        st = emit_program(ks, x->n_kernels, (emit_lang)x->lang, locals, alias, &x->source);
    }
    free(ks);
    free(alias);
    return st;
}

/* Whether a dispatch (or an if/loop command) on device d binds slot s (a root's alias included). */
static bool device_binds(const smelt_program *p, int d, int root)
{
    const plan_commands *c = &p->cmds;
    for (int ci = 0; ci < c->n_cmds; ci++) {
        const plan_cmd *x = &c->cmds[ci];
        if ((x->kind != PLAN_CMD_DISPATCH && x->kind != PLAN_CMD_IF && x->kind != PLAN_CMD_LOOP) || x->device != d) continue;
        for (int b = 0; b < x->n_args; b++)
            if (c->args[x->first_arg + b] >= 0 && plan_root(&p->plan, c->args[x->first_arg + b]) == root) return true;
    }
    return false;
}

/* Device memory for every plan slot on every device: its arena (its own
 * plan's offsets, plan_device_arenas, or the one plan's), constants its dispatches read
 * (bound in place on host memory, else uploaded once to it), inputs its
 * dispatches read; an alias shares its root's. */
static smelt_status link_program(smelt_program *p)
{
    const lower_program *lp = &p->lp;
    const mem_plan *m = &p->plan;
    size_t ns = (size_t)m->n_slots;
    int nd = p->devs.n;
    p->fns = calloc((size_t)lp->n_kernels + 1, sizeof(rt_kernel *));
    p->buf_table = calloc((size_t)plan_commands_n_args(&p->cmds) + 1, sizeof(rt_arg));
    p->slot_mem = calloc((size_t)nd * ns + 1, sizeof(rt_arg));
    p->slot_ptr = calloc(ns + 1, sizeof(void *));
    p->host_copy = calloc(ns + 1, sizeof(void *));
    if (!p->fns || !p->buf_table || !p->slot_mem || !p->slot_ptr || !p->host_copy)
        return diag_fail(SMELT_ERR_NOMEM, "out of memory");
    int64_t staging = p->cmds.stage_bytes;
    for (int ci = 0; ci < p->cmds.n_cmds; ci++) {
        const plan_cmd *c = &p->cmds.cmds[ci];
        if (c->kind != PLAN_CMD_COPY || c->stage >= 0) continue;
        if (c->dst_device == PLAN_HOST && !p->host_copy[c->dst.slot] &&
            !(p->host_copy[c->dst.slot] = malloc((size_t)m->slots[c->dst.slot].bytes + 1)))
            return diag_fail(SMELT_ERR_NOMEM, "out of memory");
    }
    if (staging > 0 && !(p->staging = malloc((size_t)staging))) return diag_fail(SMELT_ERR_NOMEM, "out of memory");
    p->staging_bytes = (size_t)staging;
    for (int d = 0; d < nd; d++) {
        rt_device *dev = p->dev[d];
        const rt_device_ops *ops = dev->ops;
        rt_arg *row = p->slot_mem + (size_t)d * ns;
        if (p->cmds.arena_bytes[d] > 0) TRY(ops->alloc(dev, (size_t)p->cmds.arena_bytes[d] + PLAN_ALIGN, &p->mem[d]));
        for (int s = 0; s < m->n_slots; s++) {
            const plan_slot *x = &m->slots[s];
            if (x->alias >= 0 || x->bytes <= 0) continue;
            int64_t at = x->kind == PLAN_ARENA ? plan_offset(m, d, s) : -1;
            if (x->kind == PLAN_ARENA && p->mem[d] && at >= 0 && at + x->bytes <= p->cmds.arena_bytes[d]) {
                row[s] = (rt_arg){p->mem[d], at};
                if (p->cmds.home[s] == d) p->slot_ptr[s] = (char *)(uintptr_t)p->mem[d] + at;
            } else if (x->kind == PLAN_CONST) {
                void *data = p->g->tensors[s].data;
                p->slot_ptr[s] = data;
                if (ops->host_memory) {
                    row[s].mem = (rt_mem)(uintptr_t)data;
                } else if (device_binds(p, d, s)) {
                    TRY(ops->alloc(dev, (size_t)x->bytes, &row[s].mem));
                    TRY(ops->upload(dev, row[s].mem, 0, data, (size_t)x->bytes));
                }
            } else if (x->kind == PLAN_INPUT && !ops->host_memory && !p->bound && device_binds(p, d, s)) {
                TRY(ops->alloc(dev, (size_t)x->bytes, &row[s].mem));
            }
        }
    }
    for (int s = 0; s < m->n_slots; s++) {
        if (m->slots[s].alias < 0 && p->host_copy[s]) p->slot_ptr[s] = p->host_copy[s];
    }
    for (int s = 0; s < m->n_slots; s++)
        if (m->slots[s].alias >= 0) {
            for (int d = 0; d < nd; d++) p->slot_mem[(size_t)d * ns + (size_t)s] = p->slot_mem[(size_t)d * ns + (size_t)m->slots[s].alias];
            p->slot_ptr[s] = p->slot_ptr[m->slots[s].alias];
        }
    for (int i = 0; i < lp->n_kernels; i++) {
        char name[64];
        int d = p->kernel_device[i];
        emit_kernel_name(lp->kernels[i], name, sizeof name);
        TRY(p->dev[d]->ops->kernel(p->dev[d], p->module[d], name, &p->fns[i]));
        const kir_kernel *k = lp->kernels[i];
        for (int b = 0; b < k->n_bufs; b++)
            if (!k->bufs[b].workgroup) p->stats.bytes_moved += kir_touched(&k->bufs[b]) * (int64_t)smelt_dtype_size(k->bufs[b].type);
    }
    return SMELT_OK;
}

/* Open every device of the list and read its target off it: workgroup
 * memory, the host compiler's vector width for C, and its identity; then the
 * classes again. CPU devices share the cores when no thread count is given. */
static smelt_status open_devices(smelt_program *p, const smelt_options *opt)
{
    int n_cpu = 0;
    for (int d = 0; d < p->devs.n; d++) n_cpu += p->devs.dev[d].kind == PLACE_CPU;
    int threads = opt->threads;
    if (threads <= 0 && n_cpu > 1) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        threads = cores / n_cpu > 0 ? (int)(cores / n_cpu) : 1;
    }
    for (int d = 0; d < p->devs.n; d++) {
        place_device *x = &p->devs.dev[d];
        TRY(rt_device_open(x->spec, threads, &p->dev[d]));
        if (p->dev[d]->smem_bytes > 0 && x->target.smem_limit > 0) x->target.smem_limit = p->dev[d]->smem_bytes;
        if (x->target.max_wg > 0) place_device_fit_wg(x, p->dev[d]->max_wg);
        x->target.host_memory = p->dev[d]->ops->host_memory;
        snprintf(x->ident, sizeof x->ident, "%s", p->dev[d]->ident);
    }
    TRY(place_devices_limit_smem(&p->devs, getenv("SMELT_DEVICE_SMEM")));
    TRY(place_devices_limit_wg(&p->devs, getenv("SMELT_DEVICE_WG")));
    place_classes(&p->devs);
    return SMELT_OK;
}

/* The model's inputs as the run sees them: folded ones keep their values. */
smelt_status program_record_inputs(smelt_program *p, const ir_graph *model)
{
    p->n_inputs = model->n_inputs;
    p->inputs = arena_alloc(&p->arena, sizeof(program_input) * (size_t)(model->n_inputs + 1));
    if (!p->inputs) return diag_fail(SMELT_ERR_NOMEM, "out of memory");
    for (int i = 0; i < model->n_inputs; i++) {
        const ir_tensor *t = &p->g->tensors[model->inputs[i]];
        program_input *x = &p->inputs[i];
        memset(x, 0, sizeof *x);
        if (!(x->name = arena_strdup(&p->arena, t->name))) return diag_fail(SMELT_ERR_NOMEM, "out of memory");
        x->dtype = t->dtype;
        x->shape = t->shape; /* as compiled (the cost placement's calibration runs it so) */
        if (!t->data) continue;
        x->folded = true;
        x->bytes = (size_t)ir_tensor_numel(t) * smelt_dtype_size(t->dtype);
        void *v = arena_alloc(&p->arena, x->bytes + 1);
        if (!v) return diag_fail(SMELT_ERR_NOMEM, "out of memory");
        memcpy(v, t->data, x->bytes);
        x->values = v;
    }
    return SMELT_OK;
}

/* The model's packed weights (graph_pack_cache): a list only ever pushed to. */
static void *pack_find(void *user, const void *src, int64_t nr, int form)
{
    smelt_model *m = user;
    for (packed_weight *w = atomic_load(&m->packed); w; w = w->next)
        if (w->src == src && w->nr == nr && w->form == form) return w->data;
    return NULL;
}

static void *pack_keep(void *user, const void *src, int64_t nr, int form, void *data, size_t bytes)
{
    (void)bytes;
    smelt_model *m = user;
    packed_weight *w = malloc(sizeof *w);
    if (!w) {
        free(data);
        return NULL;
    }
    *w = (packed_weight){.src = src, .nr = nr, .form = form, .data = data};
    packed_weight *head = atomic_load(&m->packed);
    do {
        for (packed_weight *q = head; q; q = q->next)
            if (q->src == src && q->nr == nr && q->form == form) { /* another program packed it first */
                free(w);
                free(data);
                return q->data;
            }
        w->next = head;
    } while (!atomic_compare_exchange_weak(&m->packed, &head, w));
    return data;
}

static smelt_status compile_graph(smelt_program *p, const smelt_options *opt, const place_policy *pol, double t0);

/* A program the program cache gave: linked as compile_graph links one. */
static smelt_status link_cached(smelt_program *p, const smelt_options *opt, double t0)
{
    double t1 = now_ms();
    int64_t moved = p->stats.bytes_moved; /* its kernels carry no buffers to count again */
    TRY(link_program(p));
    TRY(program_streams_init(p));
    p->stats.bytes_moved = moved;
    p->stats.cc_cached = true;
    p->stats.t_frontend_ms = t1 - t0;
    p->stats.t_cc_ms = now_ms() - t1;
    if (opt->verbose)
        fprintf(stderr, "smelt: %s: program cache: entry %.1f ms, link %.1f ms, %d kernels\n", p->dev[0]->name, t1 - t0,
                now_ms() - t1, p->lp.n_kernels);
    return SMELT_OK;
}

static smelt_status compile_program(smelt_program *p, const smelt_model *m, const smelt_options *opt, int n_inputs,
                                    const smelt_tensor *inputs, bool use_cache)
{
    double t0 = now_ms();
    TRY(place_devices_parse(opt->devices, &p->devs));
    TRY(place_devices_limit_smem(&p->devs, getenv("SMELT_DEVICE_SMEM"))); /* for tests: a device that cannot run a kernel */
    TRY(place_devices_limit_wg(&p->devs, getenv("SMELT_DEVICE_WG")));
    place_classes(&p->devs);
    place_policy pol;
    TRY(place_policy_parse(opt->placement, &p->devs, &pol));
    if (pol.kind == PLACE_SPLIT) return program_split_compile(p, m, opt, &pol, n_inputs, inputs);
    /* C is compiled here for this CPU (-march=native): its vectors are this host's. */
    for (int d = 0; d < p->devs.n; d++)
        if (p->devs.dev[d].kind == PLACE_CPU) {
            p->devs.dev[d].target.vector_width = rt_cc_vector_width();
            p->devs.dev[d].target.stream_min_bytes = rt_cc_stream_min_bytes();
        }
    p->stage = opt->stop_after;
    /* A program stopped before the end needs no device, so source can be
     * emitted for absent devices (with the targets' portable limits). */
    if (p->stage == SMELT_STAGE_ALL) TRY(open_devices(p, opt));
    p->model = m;
    char key[33];
    bool keyed = use_cache && program_cache_key(p, opt, n_inputs, inputs, key);
    if (keyed) {
        bool hit = false;
        TRY(program_cache_load(p, opt, n_inputs, inputs, key, &hit));
        if (hit) return link_cached(p, opt, t0);
    }
    p->g = ir_graph_clone_sharing_data(m->g); /* weights stay the model's: the model outlives its programs (smelt.h) */
    if (!p->g) return diag_fail(SMELT_ERR_NOMEM, "out of memory copying the model");
    TRY(graph_bind_inputs(p->g, n_inputs, inputs));
    TRY(program_record_inputs(p, m->g));
    TRY(compile_graph(p, opt, &pol, t0));
    if (keyed) program_cache_store(p, key);
    return SMELT_OK;
}

smelt_status program_compile_graph(smelt_program *p, const smelt_options *opt)
{
    place_policy pol;
    TRY(place_policy_parse(NULL, &p->devs, &pol));
    return compile_graph(p, opt, &pol, now_ms());
}

/* From inference on; t0: when compiling started. */
static smelt_status compile_graph(smelt_program *p, const smelt_options *opt, const place_policy *pol, double t0)
{
    p->max_iters = opt->max_loop_iterations > 0 ? opt->max_loop_iterations : CONTROL_RT_ITERS_MAX;
    TRY(graph_infer(p->g, lower_eval_node));
    TRY(graph_fold_batchnorm(p->g));
    /* The C target's microkernels read constant matmul weights as panels
     * (ops/matmul.c); packed where a CPU device is listed, the plain weight
     * kept beside for the other devices (lower_all picks per region). */
    int cpu = -1, other = 0;
    for (int d = p->devs.n - 1; d >= 0; d--) {
        if (p->devs.dev[d].kind == PLACE_CPU) cpu = d;
        else other++;
    }
    int64_t nr = cpu >= 0 && !getenv("SMELT_NO_PACKED_GEMM") ? mm_tiles_for(p->devs.dev[cpu].target.vector_width).nr : 0;
    /* 3x3 stride-1 convolutions as Winograd GEMMs over those panels, on one
     * CPU device (the transformed filters exist only as panels, and a list's
     * overrides name Conv nodes and the Conv op, which the rewrite replaces;
     * a split's shares are single-device programs and get it);
     * SMELT_NO_WINOGRAD=1: direct, for A/B */
    graph_winograd_rule wr = {GRAPH_WINOGRAD_M, GRAPH_WINOGRAD_MIN_CHANNELS, GRAPH_WINOGRAD_MIN_TILES, nr,
                              GRAPH_WINOGRAD_MIN_TILES_2X2};
    if (nr > 0 && p->devs.n == 1 && !getenv("SMELT_NO_WINOGRAD")) TRY(graph_winograd(p->g, &wr));
    if (nr > 0) {
        graph_pack_cache cache = {pack_find, pack_keep, (void *)p->model}; /* the model's cache is its one mutable part */
        TRY(graph_pack_weights(p->g, nr, rt_cc_int8_dot, p->model ? &cache : NULL, other > 0));
    }
    TRY(graph_fold_gemm_transpose(p->g));
    if (nr > 0 && other == 0) TRY(graph_pack_recurrent_r(p->g, GRAPH_RNN_PANEL_COLS));
    if (nr > 0 && other == 0) TRY(graph_pack_recurrent_w(p->g, nr));
    TRY(graph_dce(p->g));
    TRY(place_policy_check(pol, p->g));
    if (p->stage == SMELT_STAGE_IR) return SMELT_OK;
    double t1 = now_ms();
    TRY(fuse_all(p, opt));
    if (p->stage == SMELT_STAGE_REGIONS) return SMELT_OK;
    TRY(lower_all(p, pol));
    if (pol->kind == PLACE_COST) TRY(lower_by_cost(p, pol, opt));
    if (p->stage == SMELT_STAGE_KIR) return SMELT_OK;
    TRY(plan_build(p->g, &p->lp, &p->plan)); /* before emitting: the emitter binds in-place buffers (plan.in_place_of) */
    p->plan.kernel_device = p->kernel_device;
    TRY(plan_barriers(p->g, &p->fp, &p->lp, &p->plan));
    plan_devices pd = {.n = p->devs.n, .kernel_device = p->kernel_device};
    for (int d = 0; d < p->devs.n; d++) pd.host_memory[d] = p->bound || p->devs.dev[d].target.host_memory; /* a child: no copies, its inputs are the parent's memory */
    TRY(plan_commands_place(p->g, &p->fp, &p->lp, &p->plan, &pd, &p->cmds));
    if (p->devs.n > 1) { /* an arena per device, holding what it reads and writes; barriers and commands for its offsets */
        TRY(plan_device_arenas(&p->plan, p->devs.n, p->cmds.held));
        TRY(plan_barriers(p->g, &p->fp, &p->lp, &p->plan));
        plan_commands_free(&p->cmds);
        TRY(plan_commands_place(p->g, &p->fp, &p->lp, &p->plan, &pd, &p->cmds));
    }
    if (opt->max_memory > 0 && p->plan.arena_bytes > opt->max_memory)
        return diag_fail(SMELT_ERR_NOMEM, "the memory plan needs %lld bytes of activations, over the limit of %lld bytes",
                         (long long)p->plan.arena_bytes, (long long)opt->max_memory);
    if (p->stage == SMELT_STAGE_PLAN) return SMELT_OK;
    TRY(emit_classes(p, opt));
    double t2 = now_ms();
    if (p->stage == SMELT_STAGE_SOURCE) return SMELT_OK;
    bool all_cached = true;
    for (int d = 0; d < p->devs.n; d++) {
        const program_class *x = &p->cls[p->devs.dev[d].cls];
        if (!x->source) continue;
        bool cached = false;
        TRY(p->dev[d]->ops->build(p->dev[d], x->source, &p->module[d], &cached));
        all_cached &= cached;
    }
    p->stats.cc_cached = all_cached;
    double t3 = now_ms();
    TRY(link_program(p));
    TRY(program_control_link(p, opt));
    TRY(program_streams_init(p));
    p->stats.t_frontend_ms = t1 - t0;
    p->stats.t_lower_ms = t2 - t1;
    p->stats.t_cc_ms = t3 - t2;
    if (opt->verbose)
        fprintf(stderr, "smelt: %s%s: frontend %.1f ms, lower+emit %.1f ms, build %.1f ms (%s), %d kernels\n", p->dev[0]->name,
                p->devs.n > 1 ? " and more" : "", t1 - t0, t2 - t1, t3 - t2, p->stats.cc_cached ? "cached" : "compiled",
                p->lp.n_kernels);
    return SMELT_OK;
}

smelt_status smelt_program_compile(const smelt_model *m, const smelt_options *opt, int n_inputs, const smelt_tensor *inputs,
                                   smelt_program **out)
{
    return program_compile(m, opt, n_inputs, inputs, true, out);
}

smelt_status program_compile(const smelt_model *m, const smelt_options *opt_in, int n_inputs, const smelt_tensor *inputs,
                             bool use_cache, smelt_program **out)
{
    *out = NULL;
    if (!m || (n_inputs > 0 && !inputs)) return diag_fail(SMELT_ERR_INVALID_ARG, "smelt_program_compile: no model");
    smelt_options def;
    smelt_options_init(&def);
    const smelt_options *opt = opt_in ? opt_in : &def;
    smelt_program *p = calloc(1, sizeof *p);
    if (!p) return diag_fail(SMELT_ERR_NOMEM, "out of memory");
    arena_init(&p->arena);
    smelt_status st = compile_program(p, m, opt, n_inputs, inputs, use_cache);
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
    program_pipeline_free(p); /* waits for the runs in flight: they use the streams and the devices */
    program_split_free(p);
    program_control_free(p); /* children first: they use p's device */
    program_streams_free(p);
    size_t ns = (size_t)p->plan.n_slots;
    for (int d = 0; d < p->devs.n; d++) {
        rt_device *dev = p->dev[d];
        if (!dev) continue;
        const rt_device_ops *ops = dev->ops;
        if (!ops->host_memory && p->slot_mem)
            for (size_t s = 0; s < ns; s++)
                if (p->plan.slots[s].kind != PLAN_ARENA && p->plan.slots[s].alias < 0 && p->slot_mem[(size_t)d * ns + s].mem &&
                    !(p->bound && p->plan.slots[s].kind == PLAN_INPUT)) /* a child's inputs are its parent's memory */
                    ops->mem_free(dev, p->slot_mem[(size_t)d * ns + s].mem);
        if (p->mem[d]) ops->mem_free(dev, p->mem[d]);
        if (p->module[d]) ops->module_free(dev, p->module[d]);
        if (!p->bound) rt_device_close(dev);
    }
    for (size_t s = 0; p->host_copy && s < ns; s++) free(p->host_copy[s]);
    for (int c = 0; c < PLACE_MAX_DEVICES; c++) free(p->cls[c].source);
    free(p->host_copy);
    free(p->staging);
    free(p->ctl_staging);
    free(p->slot_mem);
    free(p->fns);
    free(p->buf_table);
    free(p->slot_ptr);
    free(p->kernel_device);
    free(p->prof_ms);
    free(p->prof_calls);
    plan_commands_free(&p->cmds);
    plan_free(&p->plan);
    fuse_free(&p->fp);
    lower_program_free(&p->lp);
    arena_free(&p->arena);
    ir_graph_free(p->g);
    program_cache_free(p); /* last: the constants of a loaded program are in its entry */
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

void program_own_ctx(const smelt_program *p, program_ctx *ctx)
{
    memcpy(ctx->mem, p->mem, sizeof ctx->mem);
    ctx->slot_mem = p->slot_mem;
    ctx->slot_ptr = p->slot_ptr;
    ctx->host_copy = p->host_copy;
    ctx->staging = p->staging;
    ctx->buf_table = p->buf_table;
}

/* The caller's bytes of an input, in stage[i] when staging (grown to fit). */
static smelt_status stage_input(const smelt_tensor *in, size_t bytes, void **stage, size_t *stage_bytes, void **data)
{
    if (bytes > *stage_bytes) {
        free(*stage);
        *stage_bytes = 0;
        if (!(*stage = aligned_alloc(PLAN_ALIGN, (bytes + PLAN_ALIGN - 1) / PLAN_ALIGN * PLAN_ALIGN)))
            return diag_fail(SMELT_ERR_NOMEM, "out of memory");
        *stage_bytes = bytes;
    }
    memcpy(*stage, in->data, bytes);
    *data = *stage;
    return SMELT_OK;
}

smelt_status program_bind_inputs(smelt_program *p, const program_ctx *ctx, int n, const smelt_tensor *inputs, void **stage,
                                 size_t *stage_bytes)
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
        void *data = in->data;
        if (stage) TRY(stage_input(in, (size_t)ir_tensor_numel(x) * smelt_dtype_size(x->dtype), &stage[i], &stage_bytes[i], &data));
        ctx->slot_ptr[t] = data; /* a copy command uploads it where a device has its own memory */
        for (int d = 0; d < p->devs.n; d++)
            if (p->dev[d]->ops->host_memory) ctx->slot_mem[(size_t)d * (size_t)p->plan.n_slots + (size_t)t].mem = (rt_mem)(uintptr_t)data;
    }
    size_t ns = (size_t)p->plan.n_slots;
    for (int s = 0; s < p->plan.n_slots; s++) /* views of inputs are the caller's memory too */
        if (p->plan.slots[s].alias >= 0 && p->plan.slots[s].kind == PLAN_INPUT) {
            ctx->slot_ptr[s] = ctx->slot_ptr[p->plan.slots[s].alias];
            for (int d = 0; d < p->devs.n; d++) ctx->slot_mem[(size_t)d * ns + (size_t)s] = ctx->slot_mem[(size_t)d * ns + (size_t)p->plan.slots[s].alias];
        }
    return SMELT_OK;
}

/* One command of the list (plan/commands.h), on its device. Profiling
 * reads a clock around each dispatch and waits for it. Half of a copy
 * between two devices moves bytes between one device and the staging
 * buffer. Run in list order on one thread, a signal only finishes its
 * device and a wait has nothing to wait for (api/streams.c runs them
 * across threads). */
smelt_status program_run_command_in(smelt_program *p, const program_ctx *ctx, const plan_cmd *c)
{
    size_t ns = (size_t)p->plan.n_slots;
    switch (c->kind) {
    case PLAN_CMD_DISPATCH: {
        rt_device *dev = p->dev[c->device];
        const rt_arg *row = ctx->slot_mem + (size_t)c->device * ns;
        rt_arg *bufs = ctx->buf_table + c->first_arg;
        for (int b = 0; b < c->n_args; b++) {
            int s = p->cmds.args[c->first_arg + b];
            bufs[b] = s < 0 ? (rt_arg){0, -1} : row[s];
        }
        double t0 = p->prof_ms ? now_ms() : 0;
        TRY(dev->ops->dispatch(dev, p->fns[c->kernel], c->n_args, bufs, c->n_workgroups, c->wg_size));
        if (p->prof_ms) {
            TRY(dev->ops->finish(dev));
            p->prof_ms[c->kernel] += now_ms() - t0;
            p->prof_calls[c->kernel]++;
        }
        return SMELT_OK;
    }
    case PLAN_CMD_COPY: {
        size_t bytes = (size_t)(c->dst.hi - c->dst.lo);
        rt_device *dev = p->dev[c->device];
        if (c->src_device == PLAN_HOST) {
            const rt_arg *d = &ctx->slot_mem[(size_t)c->dst_device * ns + (size_t)c->dst.slot];
            const char *from = c->stage >= 0 ? (const char *)ctx->staging + c->stage : (const char *)ctx->slot_ptr[c->src.slot] + c->src.lo;
            return dev->ops->upload(dev, d->mem, (size_t)(d->offset + c->dst.lo), from, bytes);
        }
        const rt_arg *s = &ctx->slot_mem[(size_t)c->src_device * ns + (size_t)c->src.slot];
        char *host = c->stage >= 0 ? (char *)ctx->staging + c->stage : (char *)ctx->host_copy[c->dst.slot] + c->dst.lo;
        return dev->ops->download(dev, s->mem, (size_t)(s->offset + c->src.lo), host, bytes);
    }
    case PLAN_CMD_SIGNAL:
    case PLAN_CMD_BARRIER: {
        rt_device *dev = p->dev[c->device];
        if (c->host || c->kind == PLAN_CMD_SIGNAL) return dev->ops->finish(dev);
        return dev->ops->barrier ? dev->ops->barrier(dev) : SMELT_OK;
    }
    case PLAN_CMD_WAIT: return SMELT_OK;
    case PLAN_CMD_IF:
    case PLAN_CMD_LOOP: return program_control_run(p, c);
    case PLAN_CMD_KIND_COUNT: break;
    }
    return diag_fail(SMELT_ERR_INTERNAL, "command of no kind");
}

/* Bind inputs → execute the command list → outputs (read by smelt_program_output). */
smelt_status smelt_program_run(smelt_program *p, int n_inputs, const smelt_tensor *inputs)
{
    if (!p) return diag_fail(SMELT_ERR_INVALID_ARG, "smelt_program_run: no program");
    if (p->split) return program_split_run(p, n_inputs, inputs);
    if (!p->dev[0]) return diag_fail(SMELT_ERR_INVALID_ARG, "smelt_program_run: the program was compiled only up to a stage (stop_after)");
    TRY(program_pipeline_drain(p)); /* submitted runs first: the caller's thread may run the first device's stream */
    program_ctx own;
    program_own_ctx(p, &own);
    TRY(program_bind_inputs(p, &own, n_inputs, inputs, NULL, NULL));
    return program_run_commands(p);
}

smelt_status program_run_commands(smelt_program *p)
{
    if (p->streams) return program_streams_run(p);
    program_ctx own;
    program_own_ctx(p, &own);
    return program_run_commands_in(p, &own);
}

smelt_status program_run_commands_in(smelt_program *p, const program_ctx *ctx)
{
    for (int i = 0; i < p->cmds.n_cmds; i++) {
        smelt_status st = program_run_command_in(p, ctx, &p->cmds.cmds[i]);
        if (st) {
            for (int d = 0; d < p->devs.n; d++) (void)p->dev[d]->ops->finish(p->dev[d]); /* no held dispatch may run in the next run */
            return st;
        }
    }
    return SMELT_OK;
}

int smelt_program_output_count(const smelt_program *p) { return !p ? 0 : p->split ? program_split_output_count(p) : p->g->n_outputs; }

smelt_status smelt_program_output(const smelt_program *p, int i, smelt_tensor *out)
{
    if (p && p->split) return program_split_output(p, i, out);
    if (!p) return diag_fail(SMELT_ERR_INVALID_ARG, "smelt_program_output: no program");
    program_ctx own;
    program_own_ctx(p, &own);
    return program_output_in(p, &own, i, out);
}

smelt_status program_output_in(const smelt_program *p, const program_ctx *ctx, int i, smelt_tensor *out)
{
    if (i < 0 || i >= p->g->n_outputs) return diag_fail(SMELT_ERR_INVALID_ARG, "smelt_program_output: no output %d", i);
    int t = p->g->outputs[i];
    const ir_tensor *x = &p->g->tensors[t];
    memset(out, 0, sizeof *out);
    out->name = x->name;
    out->dtype = x->dtype;
    out->rank = x->shape.rank;
    memcpy(out->shape, x->shape.dim, sizeof(int64_t) * (size_t)x->shape.rank);
    if (p->dyn_set && p->dyn_set[t]) { /* its shape is known only after the run (graph/control_rt.c) */
        out->rank = p->run_shape[t].rank;
        memcpy(out->shape, p->run_shape[t].dim, sizeof(int64_t) * (size_t)out->rank);
    }
    out->data = x->data ? x->data : ctx->slot_ptr[plan_root(&p->plan, t)];
    if (!out->data && ir_tensor_numel(x) > 0)
        return diag_fail(SMELT_ERR_INVALID_ARG, "output '%s' is not computed yet: run the program first", x->name);
    return SMELT_OK;
}

smelt_status smelt_program_set_profiling(smelt_program *p, int on)
{
    if (!p) return diag_fail(SMELT_ERR_INVALID_ARG, "smelt_program_set_profiling: no program");
    if (p->split) return program_split_set_profiling(p, on);
    TRY(program_pipeline_drain(p)); /* runs in flight add to the clocks */
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

int smelt_program_kernel_count(const smelt_program *p) { return !p ? 0 : p->split ? program_split_kernel_count(p) : p->lp.n_kernels; }

smelt_status smelt_program_profile(const smelt_program *p, int i, smelt_kernel_profile *out)
{
    if (p && p->split && out) return program_split_profile(p, i, out);
    if (!p || !out || i < 0 || i >= p->lp.n_kernels)
        return diag_fail(SMELT_ERR_INVALID_ARG, "smelt_program_profile: no kernel %d", i);
    const kir_kernel *k = p->lp.kernels[i];
    out->id = k->id;
    out->what = k->comment;
    out->workgroups = k->n_workgroups;
    out->dispatches = p->prof_calls ? p->prof_calls[i] : 0;
    out->total_ms = p->prof_ms ? p->prof_ms[i] : 0;
    out->device = p->kernel_device ? p->devs.dev[p->kernel_device[i]].spec : p->devs.dev[0].spec;
    return SMELT_OK;
}
