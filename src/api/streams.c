/*
 * streams.c — a program over several devices runs one command stream per
 * device at once (plan/commands.h): each device's commands in list order on
 * a host thread of its own, ordered across devices only by the list's
 * signals and waits, so a device never idles while another computes unless
 * it reads what that one produced.
 *
 * Runs are queued in order (program_run: the memory a run uses, its events,
 * its failure). A worker thread per device that has commands lives as long
 * as the program, takes the queued runs in order and sleeps when there is
 * none: device d starts run i+1 as soon as it is done with run i, while the
 * others may still work on run i (pipelined runs, api/pipeline.c, each in
 * memory of its own). smelt_program_run's run is run by the caller's thread
 * for the first device (no hand-over on the path of a single run); its
 * worker then skips it. One mutex and condition variable carry everything:
 * the queue, each event's run (set by a signal, read by a wait, so events
 * need no reset between runs), the streams finishing a run, and a failure
 * (the first stream that fails records its message, which is per-thread
 * (core/diag.c), and the others stop at their next wait of that run instead
 * of waiting for an event that will not come).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/program.h"
#include "core/diag.h"

/* Runs queued and not yet done by every stream are at most a pipeline's
 * depth plus smelt_program_run's own. */
#define QUEUE_RING (2 * PIPELINE_MAX_DEPTH + 2)

typedef struct worker {
    struct program_streams *s;
    int device;
    int64_t next;              /* the next run it takes */
    pthread_t thread;
} worker;

struct program_streams {
    smelt_program *p;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int first;                 /* the device smelt_program_run's caller runs */
    worker w[PLAN_MAX_DEVICES];
    int n_workers;
    bool first_worker;         /* w[n_workers - 1] runs the first device's pipelined runs */
    int64_t queued;            /* runs queued so far */
    program_run *ring[QUEUE_RING]; /* run seq at [seq % QUEUE_RING] */
    program_run own;           /* smelt_program_run's */
    bool quit;
};

static void stream_fail(struct program_streams *s, program_run *r, smelt_status st)
{
    pthread_mutex_lock(&s->lock);
    if (!r->failed) {
        r->failed = true;
        r->status = st;
        snprintf(r->message, sizeof r->message, "%s", smelt_last_error());
    }
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
}

/* Device d's commands of run r. */
static void stream_run(struct program_streams *s, int d, program_run *r)
{
    smelt_program *p = s->p;
    for (int i = 0; i < p->cmds.n_cmds; i++) {
        const plan_cmd *c = &p->cmds.cmds[i];
        if (c->device != d) continue;
        if (c->kind == PLAN_CMD_WAIT) {
            pthread_mutex_lock(&s->lock);
            while (r->event_run[c->event] != r->seq && !r->failed) pthread_cond_wait(&s->cond, &s->lock);
            bool failed = r->failed;
            pthread_mutex_unlock(&s->lock);
            if (failed) break;
            continue;
        }
        smelt_status st = program_run_command_in(p, &r->ctx, c);
        if (st) {
            stream_fail(s, r, st);
            break;
        }
        if (c->kind == PLAN_CMD_SIGNAL) {
            pthread_mutex_lock(&s->lock);
            r->event_run[c->event] = r->seq;
            pthread_cond_broadcast(&s->cond);
            pthread_mutex_unlock(&s->lock);
        }
    }
    (void)p->dev[d]->ops->finish(p->dev[d]); /* after a failure: no held dispatch may run in the next run */
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    struct program_streams *s = w->s;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        while (!s->quit && s->queued < w->next) pthread_cond_wait(&s->cond, &s->lock);
        if (s->quit) break;
        program_run *r = s->ring[w->next % QUEUE_RING];
        w->next++;
        if (r->first_on_caller && w->device == s->first) continue; /* the caller runs it */
        pthread_mutex_unlock(&s->lock);
        stream_run(s, w->device, r);
        pthread_mutex_lock(&s->lock);
        r->done++;
        pthread_cond_broadcast(&s->cond);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

static smelt_status start_worker(struct program_streams *s, int d)
{
    worker *w = &s->w[s->n_workers];
    w->s = s;
    w->device = d;
    w->next = s->queued + 1;
    if (pthread_create(&w->thread, NULL, worker_main, w) != 0)
        return diag_fail(SMELT_ERR_DEVICE, "could not start a host thread for device %s", s->p->devs.dev[d].spec);
    s->n_workers++;
    return SMELT_OK;
}

smelt_status program_streams_init(smelt_program *p)
{
    bool has[PLAN_MAX_DEVICES] = {false};
    int n = 0;
    for (int i = 0; i < p->cmds.n_cmds; i++) {
        int d = p->cmds.cmds[i].device;
        if (!has[d]) n++;
        has[d] = true;
    }
    if (n < 2) return SMELT_OK; /* one stream: run on the caller's thread, in order */
    struct program_streams *s = calloc(1, sizeof *s);
    if (!s) return diag_fail(SMELT_ERR_NOMEM, "out of memory");
    s->p = p;
    s->own.event_run = calloc((size_t)p->cmds.n_events + 1, sizeof(int64_t));
    if (!s->own.event_run) {
        free(s);
        return diag_fail(SMELT_ERR_NOMEM, "out of memory");
    }
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cond, NULL);
    p->streams = s;
    s->first = -1;
    for (int d = 0; d < p->devs.n; d++) {
        if (!has[d]) continue;
        if (s->first < 0) s->first = d;
        else TRY(start_worker(s, d));
    }
    return SMELT_OK;
}

/* Queue r, under the lock. The ring holds every run not done by all streams:
 * smelt_program_submit bounds them (PIPELINE_MAX_DEPTH). */
static void queue_locked(struct program_streams *s, program_run *r)
{
    r->seq = ++s->queued;
    r->done = 0;
    r->failed = false;
    s->ring[r->seq % QUEUE_RING] = r;
    pthread_cond_broadcast(&s->cond);
}

static int n_streams(const struct program_streams *s) { return s->n_workers + (s->first_worker ? 0 : 1); }

smelt_status program_streams_run(smelt_program *p)
{
    struct program_streams *s = p->streams;
    program_run *r = &s->own;
    program_own_ctx(p, &r->ctx);
    r->first_on_caller = true;
    pthread_mutex_lock(&s->lock);
    queue_locked(s, r);
    pthread_mutex_unlock(&s->lock);
    stream_run(s, s->first, r);
    pthread_mutex_lock(&s->lock);
    r->done++;
    while (r->done < n_streams(s)) pthread_cond_wait(&s->cond, &s->lock);
    pthread_mutex_unlock(&s->lock);
    if (r->failed) return diag_fail(r->status, "%s", r->message);
    return SMELT_OK;
}

smelt_status program_streams_queue(smelt_program *p, program_run *r)
{
    struct program_streams *s = p->streams;
    pthread_mutex_lock(&s->lock);
    smelt_status st = SMELT_OK;
    if (!s->first_worker) { /* the first device's pipelined runs get a thread of their own, from the first */
        st = start_worker(s, s->first);
        s->first_worker = !st;
    }
    r->first_on_caller = false;
    if (!st) queue_locked(s, r);
    pthread_mutex_unlock(&s->lock);
    return st;
}

smelt_status program_streams_wait(smelt_program *p, program_run *r)
{
    struct program_streams *s = p->streams;
    pthread_mutex_lock(&s->lock);
    while (r->done < n_streams(s)) pthread_cond_wait(&s->cond, &s->lock);
    pthread_mutex_unlock(&s->lock);
    if (r->failed) return diag_fail(r->status, "%s", r->message);
    return SMELT_OK;
}

void program_streams_free(smelt_program *p)
{
    struct program_streams *s = p->streams;
    if (!s) return;
    pthread_mutex_lock(&s->lock);
    s->quit = true;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
    for (int i = 0; i < s->n_workers; i++) pthread_join(s->w[i].thread, NULL);
    pthread_cond_destroy(&s->cond);
    pthread_mutex_destroy(&s->lock);
    free(s->own.event_run);
    free(s);
    p->streams = NULL;
}
