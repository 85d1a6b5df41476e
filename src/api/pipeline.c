/*
 * pipeline.c — runs submitted without waiting (smelt_program_submit, _wait,
 * _run_output, _release): up to `depth` runs held at once, each in memory of
 * its own (program_ctx: arenas, host copies, staging, buffer tables, and the
 * caller's inputs copied in at submit), so run i+1 writes nothing run i
 * still reads or has yet to hand back.
 *
 * Over several devices the runs go to the device streams (api/streams.c):
 * each device takes them in order, so where the placement puts a model's
 * first regions on one device and the rest on another, run i+1's first
 * stage runs while run i's second does. On one device a submit runs before
 * it returns (there is nothing to overlap with). A program with run-time
 * control flow or a split placement keeps its state in the program itself
 * (loop buffers, child programs): it runs in its own memory, one held run
 * at a time.
 *
 * The contexts are allocated when the pipeline is made (the first submit,
 * or smelt_program_set_pipeline), before any run is in flight, so no device
 * allocates while its stream works. Constants are the program's, shared.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/program.h"

#define PIPELINE_DEFAULT_DEPTH 2

typedef struct pipe_run {
    program_run run;         /* its memory (run.ctx) and, over streams, its state */
    smelt_ticket ticket;     /* 0: free */
    bool waited;             /* smelt_program_wait returned: outputs readable */
    bool failed;             /* without streams: the run's failure, kept for its wait */
    smelt_status status;
    char message[1024];
    void **stage;            /* per model input: the caller's bytes copied at submit */
    size_t *stage_bytes;
} pipe_run;

struct program_pipeline {
    int depth;
    bool own;                /* runs in the program's own memory, one at a time */
    smelt_ticket last;       /* the last ticket given */
    pipe_run runs[PIPELINE_MAX_DEPTH];
};

/* The program's own memory less what x got for itself (free_ctx frees it). */
static void free_ctx(smelt_program *p, program_ctx *x)
{
    size_t ns = (size_t)p->plan.n_slots;
    for (int d = 0; d < p->devs.n; d++) {
        rt_device *dev = p->dev[d];
        for (size_t s = 0; x->slot_mem && s < ns; s++) {
            rt_mem m = x->slot_mem[(size_t)d * ns + s].mem;
            if (p->plan.slots[s].kind == PLAN_INPUT && p->plan.slots[s].alias < 0 && !dev->ops->host_memory && m &&
                m != p->slot_mem[(size_t)d * ns + s].mem)
                dev->ops->mem_free(dev, m);
        }
        if (x->mem[d]) dev->ops->mem_free(dev, x->mem[d]);
    }
    for (size_t s = 0; x->host_copy && s < ns; s++) free(x->host_copy[s]);
    free(x->host_copy);
    free(x->slot_mem);
    free(x->slot_ptr);
    free(x->staging);
    free(x->buf_table);
    memset(x, 0, sizeof *x);
}

/* A context like the program's own (api/program.c link_program): its own
 * arena per device, device memory for inputs where a device has its own,
 * host copies, staging; constants bound as the program binds them. */
static smelt_status make_ctx(smelt_program *p, program_ctx *x)
{
    const mem_plan *m = &p->plan;
    size_t ns = (size_t)m->n_slots, nd = (size_t)p->devs.n;
    x->slot_mem = malloc(sizeof(rt_arg) * (nd * ns + 1));
    x->slot_ptr = malloc(sizeof(void *) * (ns + 1));
    x->host_copy = calloc(ns + 1, sizeof(void *));
    x->buf_table = calloc((size_t)plan_commands_n_args(&p->cmds) + 1, sizeof(rt_arg));
    if (p->staging_bytes > 0) x->staging = malloc(p->staging_bytes);
    if (!x->slot_mem || !x->slot_ptr || !x->host_copy || !x->buf_table || (p->staging_bytes > 0 && !x->staging))
        return diag_fail(SMELT_ERR_NOMEM, "out of memory");
    memcpy(x->slot_mem, p->slot_mem, sizeof(rt_arg) * nd * ns);
    memcpy(x->slot_ptr, p->slot_ptr, sizeof(void *) * ns);
    for (int d = 0; d < p->devs.n; d++)
        if (p->mem[d]) TRY(p->dev[d]->ops->alloc(p->dev[d], (size_t)p->cmds.arena_bytes[d] + PLAN_ALIGN, &x->mem[d]));
    for (size_t s = 0; s < ns; s++) {
        const plan_slot *sl = &m->slots[s];
        if (sl->alias >= 0) continue;
        for (int d = 0; d < p->devs.n; d++) {
            const rt_arg *o = &p->slot_mem[(size_t)d * ns + s];
            rt_arg *n = &x->slot_mem[(size_t)d * ns + s];
            if (sl->kind == PLAN_ARENA && p->mem[d] && o->mem == p->mem[d]) {
                n->mem = x->mem[d];
                if (p->slot_ptr[s] == (char *)(uintptr_t)p->mem[d] + o->offset) x->slot_ptr[s] = (char *)(uintptr_t)x->mem[d] + o->offset;
            } else if (sl->kind == PLAN_INPUT && !p->dev[d]->ops->host_memory && o->mem) {
                n->mem = 0;
                TRY(p->dev[d]->ops->alloc(p->dev[d], (size_t)sl->bytes, &n->mem));
            }
        }
        if (p->host_copy[s]) {
            if (!(x->host_copy[s] = malloc((size_t)sl->bytes + 1))) return diag_fail(SMELT_ERR_NOMEM, "out of memory");
            x->slot_ptr[s] = x->host_copy[s];
        }
    }
    for (size_t s = 0; s < ns; s++)
        if (m->slots[s].alias >= 0) {
            for (size_t d = 0; d < nd; d++) x->slot_mem[d * ns + s] = x->slot_mem[d * ns + (size_t)m->slots[s].alias];
            x->slot_ptr[s] = x->slot_ptr[m->slots[s].alias];
        }
    return SMELT_OK;
}

static void pipeline_free(smelt_program *p, struct program_pipeline *q)
{
    for (int i = 0; i < q->depth; i++) {
        pipe_run *r = &q->runs[i];
        if (r->ticket && !r->waited && p->streams && !q->own && program_streams_wait(p, &r->run)) diag_clear();
        if (!q->own) free_ctx(p, &r->run.ctx);
        free(r->run.event_run);
        for (int k = 0; r->stage && k < p->n_inputs; k++) free(r->stage[k]);
        free(r->stage);
        free(r->stage_bytes);
    }
    free(q);
}

static smelt_status pipeline_make(smelt_program *p, int depth)
{
    struct program_pipeline *q = calloc(1, sizeof *q);
    if (!q) return diag_fail(SMELT_ERR_NOMEM, "out of memory");
    q->own = p->split || p->cmds.n_children > 0 || p->bound;
    q->depth = q->own ? 1 : depth;
    smelt_status st = SMELT_OK;
    for (int i = 0; i < q->depth && !st; i++) {
        pipe_run *r = &q->runs[i];
        r->stage = calloc((size_t)p->n_inputs + 1, sizeof(void *));
        r->stage_bytes = calloc((size_t)p->n_inputs + 1, sizeof(size_t));
        r->run.event_run = calloc((size_t)p->cmds.n_events + 1, sizeof(int64_t));
        st = r->stage && r->stage_bytes && r->run.event_run ? SMELT_OK : diag_fail(SMELT_ERR_NOMEM, "out of memory");
        if (!st && !q->own) st = make_ctx(p, &r->run.ctx);
    }
    if (st) {
        pipeline_free(p, q);
        return st;
    }
    p->pipeline = q;
    return SMELT_OK;
}

static pipe_run *find_run(smelt_program *p, smelt_ticket ticket)
{
    struct program_pipeline *q = p ? p->pipeline : NULL;
    for (int i = 0; q && ticket && i < q->depth; i++)
        if (q->runs[i].ticket == ticket) return &q->runs[i];
    return NULL;
}

static smelt_status unknown_ticket(const char *fn, smelt_ticket ticket)
{
    return diag_fail(SMELT_ERR_INVALID_ARG, "%s: ticket %llu is not a run of this program in flight or held (unknown, or released)",
                     fn, (unsigned long long)ticket);
}

smelt_status smelt_program_set_pipeline(smelt_program *p, int depth)
{
    if (!p) return diag_fail(SMELT_ERR_INVALID_ARG, "smelt_program_set_pipeline: no program");
    if (depth < 1 || depth > PIPELINE_MAX_DEPTH)
        return diag_fail(SMELT_ERR_INVALID_ARG, "smelt_program_set_pipeline: depth %d is not between 1 and %d", depth, PIPELINE_MAX_DEPTH);
    if (!p->dev[0] && !p->split) return diag_fail(SMELT_ERR_INVALID_ARG, "smelt_program_set_pipeline: the program was compiled only up to a stage (stop_after)");
    struct program_pipeline *q = p->pipeline;
    for (int i = 0; q && i < q->depth; i++)
        if (q->runs[i].ticket)
            return diag_fail(SMELT_ERR_INVALID_ARG, "smelt_program_set_pipeline: ticket %llu is still held; release every run first",
                             (unsigned long long)q->runs[i].ticket);
    if (q) pipeline_free(p, q);
    p->pipeline = NULL;
    return pipeline_make(p, depth);
}

smelt_status smelt_program_submit(smelt_program *p, int n_inputs, const smelt_tensor *inputs, smelt_ticket *ticket)
{
    if (!p || !ticket || (n_inputs > 0 && !inputs)) return diag_fail(SMELT_ERR_INVALID_ARG, "smelt_program_submit: no program, inputs or ticket");
    *ticket = 0;
    if (!p->dev[0] && !p->split)
        return diag_fail(SMELT_ERR_INVALID_ARG, "smelt_program_submit: the program was compiled only up to a stage (stop_after)");
    if (!p->pipeline) TRY(pipeline_make(p, PIPELINE_DEFAULT_DEPTH));
    struct program_pipeline *q = p->pipeline;
    pipe_run *r = NULL;
    for (int i = 0; i < q->depth && !r; i++)
        if (!q->runs[i].ticket) r = &q->runs[i];
    if (!r && q->own)
        return diag_fail(SMELT_ERR_INVALID_ARG, "smelt_program_submit: a program with run-time control flow or a split placement "
                                                "holds one run at a time; wait for it and release it first");
    if (!r)
        return diag_fail(SMELT_ERR_INVALID_ARG,
                         "smelt_program_submit: %d runs are held (the pipeline's depth); wait for one and release it first", q->depth);
    r->waited = r->failed = false;
    if (q->own) { /* in the program's own memory, before returning */
        if (p->split) TRY(program_split_run(p, n_inputs, inputs));
        else {
            program_ctx own;
            program_own_ctx(p, &own);
            TRY(program_bind_inputs(p, &own, n_inputs, inputs, NULL, NULL));
            r->status = program_run_commands(p);
        }
    } else {
        TRY(program_bind_inputs(p, &r->run.ctx, n_inputs, inputs, r->stage, r->stage_bytes));
        if (p->streams) TRY(program_streams_queue(p, &r->run));
        else r->status = program_run_commands_in(p, &r->run.ctx);
    }
    if (!p->streams || q->own) {
        r->failed = r->status != SMELT_OK;
        if (r->failed) snprintf(r->message, sizeof r->message, "%s", smelt_last_error());
    }
    r->ticket = *ticket = ++q->last;
    return SMELT_OK;
}

smelt_status smelt_program_wait(smelt_program *p, smelt_ticket ticket)
{
    pipe_run *r = find_run(p, ticket);
    if (!r) return unknown_ticket("smelt_program_wait", ticket);
    r->waited = true;
    if (p->streams && !p->pipeline->own) return program_streams_wait(p, &r->run);
    if (r->failed) return diag_fail(r->status, "%s", r->message);
    return SMELT_OK;
}

smelt_status smelt_program_run_output(smelt_program *p, smelt_ticket ticket, int i, smelt_tensor *out)
{
    pipe_run *r = find_run(p, ticket);
    if (!r) return unknown_ticket("smelt_program_run_output", ticket);
    if (!out) return diag_fail(SMELT_ERR_INVALID_ARG, "smelt_program_run_output: no tensor to fill");
    if (!r->waited)
        return diag_fail(SMELT_ERR_INVALID_ARG, "smelt_program_run_output: run %llu is not waited for: call smelt_program_wait first",
                         (unsigned long long)ticket);
    if (r->failed || r->run.failed)
        return diag_fail(SMELT_ERR_INVALID_ARG, "smelt_program_run_output: run %llu failed and has no outputs", (unsigned long long)ticket);
    if (p->pipeline->own) return smelt_program_output(p, i, out);
    return program_output_in(p, &r->run.ctx, i, out);
}

smelt_status smelt_program_release(smelt_program *p, smelt_ticket ticket)
{
    pipe_run *r = find_run(p, ticket);
    if (!r) return unknown_ticket("smelt_program_release", ticket);
    if (!r->waited && p->streams && !p->pipeline->own && program_streams_wait(p, &r->run)) diag_clear(); /* its failure goes unread */
    r->ticket = 0;
    return SMELT_OK;
}

smelt_status program_pipeline_drain(smelt_program *p)
{
    struct program_pipeline *q = p->pipeline;
    if (!q || q->own || !p->streams) return SMELT_OK;
    for (int i = 0; i < q->depth; i++) {
        pipe_run *r = &q->runs[i];
        if (r->ticket && !r->waited && program_streams_wait(p, &r->run)) diag_clear(); /* reported by its own wait */
    }
    return SMELT_OK;
}

void program_pipeline_free(smelt_program *p)
{
    if (p->pipeline) pipeline_free(p, p->pipeline);
    p->pipeline = NULL;
}
