/*
 * streams.c — a program over several devices runs one command stream per
 * device at once (plan/commands.h): each device's commands in list order on
 * a host thread of its own, ordered across devices only by the list's
 * signals and waits, so a device never idles while another computes unless
 * it reads what that one produced.
 *
 * The caller's thread runs the first device's stream; a worker thread per
 * other device that has commands lives as long as the program and sleeps
 * between runs. One mutex and condition variable carry everything: the run
 * number (a new run wakes the workers), each event's run number (set by a
 * signal, read by a wait, so events need no reset between runs), the
 * workers finishing, and a failure (the first stream that fails records its
 * message, which is per-thread (core/diag.c), and the others stop at their
 * next wait instead of waiting for an event that will not come).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/program.h"
#include "core/diag.h"

typedef struct worker {
    struct program_streams *s;
    int device;
    pthread_t thread;
} worker;

struct program_streams {
    smelt_program *p;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int first;                 /* the device the caller's thread runs */
    worker w[PLAN_MAX_DEVICES];
    int n_workers;
    int64_t run;               /* the current run, from 1 */
    int64_t *event_run;        /* per event: the run that set it */
    int done;                  /* workers finished with the current run */
    bool quit, failed;
    smelt_status status;
    char message[1024];
};

static void stream_fail(struct program_streams *s, smelt_status st)
{
    pthread_mutex_lock(&s->lock);
    if (!s->failed) {
        s->failed = true;
        s->status = st;
        snprintf(s->message, sizeof s->message, "%s", smelt_last_error());
    }
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
}

/* Device d's commands of the current run. */
static void stream_run(struct program_streams *s, int d, int64_t run)
{
    smelt_program *p = s->p;
    for (int i = 0; i < p->cmds.n_cmds; i++) {
        const plan_cmd *c = &p->cmds.cmds[i];
        if (c->device != d) continue;
        if (c->kind == PLAN_CMD_WAIT) {
            pthread_mutex_lock(&s->lock);
            while (s->event_run[c->event] != run && !s->failed) pthread_cond_wait(&s->cond, &s->lock);
            bool failed = s->failed;
            pthread_mutex_unlock(&s->lock);
            if (failed) break;
            continue;
        }
        smelt_status st = program_run_command(p, c);
        if (st) {
            stream_fail(s, st);
            break;
        }
        if (c->kind == PLAN_CMD_SIGNAL) {
            pthread_mutex_lock(&s->lock);
            s->event_run[c->event] = run;
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
    int64_t seen = 0;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        while (!s->quit && s->run == seen) pthread_cond_wait(&s->cond, &s->lock);
        if (s->quit) break;
        seen = s->run;
        pthread_mutex_unlock(&s->lock);
        stream_run(s, w->device, seen);
        pthread_mutex_lock(&s->lock);
        s->done++;
        pthread_cond_broadcast(&s->cond);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
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
    s->event_run = calloc((size_t)p->cmds.n_events + 1, sizeof(int64_t));
    if (!s->event_run) {
        free(s);
        return diag_fail(SMELT_ERR_NOMEM, "out of memory");
    }
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cond, NULL);
    p->streams = s;
    s->first = -1;
    for (int d = 0; d < p->devs.n; d++) {
        if (!has[d]) continue;
        if (s->first < 0) {
            s->first = d;
            continue;
        }
        worker *w = &s->w[s->n_workers];
        w->s = s;
        w->device = d;
        if (pthread_create(&w->thread, NULL, worker_main, w) != 0)
            return diag_fail(SMELT_ERR_DEVICE, "could not start a host thread for device %s", p->devs.dev[d].spec);
        s->n_workers++;
    }
    return SMELT_OK;
}

smelt_status program_streams_run(smelt_program *p)
{
    struct program_streams *s = p->streams;
    pthread_mutex_lock(&s->lock);
    s->run++;
    s->done = 0;
    s->failed = false;
    int64_t run = s->run;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
    stream_run(s, s->first, run);
    pthread_mutex_lock(&s->lock);
    while (s->done < s->n_workers) pthread_cond_wait(&s->cond, &s->lock);
    bool failed = s->failed;
    smelt_status st = s->status;
    pthread_mutex_unlock(&s->lock);
    if (failed) return diag_fail(st, "%s", s->message);
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
    free(s->event_run);
    free(s);
    p->streams = NULL;
}
