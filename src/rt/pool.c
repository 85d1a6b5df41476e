/*
 * pool.c — the thread pool that runs a kernel's workgroups.
 *
 * needs: pthreads, C11 atomics.
 * gives: rt_pool_run(fn, n) == `for wg in [0, n): fn(wg, bufs)`, spread over the
 *        workers and the calling thread; one run at a time per pool.
 *        rt_pool_run_jobs runs several such loops as one: their workgroups are
 *        numbered one after another and handed out together.
 *
 * A run bumps `gen` under the mutex and wakes every worker; each worker takes
 * chunks of workgroup indices from the shared counter `next` until they run
 * out, then checks in by decrementing `pending`. The caller works too and
 * returns once every worker has checked in, so no worker can still be reading
 * the job when the next run replaces it. Idle workers spin briefly on `gen`
 * (runs often come back to back) and then sleep on `wake`.
 */
#include "rt/rt.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#define POOL_MAX_THREADS 1024
#define POOL_SPIN 512
/* Chunks per thread: enough to balance uneven workgroups, few enough that the
 * shared counter stays cold for many tiny ones. */
#define POOL_CHUNKS_PER_THREAD 8

struct rt_pool {
    int n_threads; /* workers + the calling thread */
    pthread_t *workers;
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    _Atomic uint64_t gen;
    _Atomic int stop;
    _Atomic int pending; /* workers yet to check in for the current run */
    /* The current run, written under mu before gen is bumped. */
    const rt_job *jobs;  /* with workgroups; they sum to n_wg */
    int64_t n_wg, chunk; /* workgroups of all jobs */
    _Atomic int64_t next;
};

/* Spin step i: a pause, and every 64th step a yield, so that a spinning
 * thread hands its core to one that has work when threads outnumber cores. */
static inline void cpu_relax(int i)
{
    if ((i & 63) == 63) {
        sched_yield();
        return;
    }
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Workgroups [lo, hi) of the run, numbered job after job. */
static void run_range(const rt_job *jobs, int64_t lo, int64_t hi)
{
    int j = 0;
    int64_t base = 0;
    while (lo < hi) {
        while (lo >= base + jobs[j].n_workgroups) base += jobs[j++].n_workgroups;
        int64_t end = base + jobs[j].n_workgroups < hi ? base + jobs[j].n_workgroups : hi;
        for (int64_t wg = lo; wg < end; wg++) jobs[j].fn(wg - base, jobs[j].bufs);
        lo = end;
    }
}

static void take_workgroups(rt_pool *p, const rt_job *jobs, int64_t n, int64_t chunk)
{
    for (;;) {
        int64_t lo = atomic_fetch_add_explicit(&p->next, chunk, memory_order_relaxed);
        if (lo >= n) return;
        run_range(jobs, lo, lo + chunk < n ? lo + chunk : n);
    }
}

static void *worker_main(void *arg)
{
    rt_pool *p = arg;
    uint64_t seen = 0;
    for (;;) {
        for (int i = 0; i < POOL_SPIN && atomic_load(&p->gen) == seen && !atomic_load(&p->stop); i++)
            cpu_relax(i);
        pthread_mutex_lock(&p->mu);
        while (atomic_load(&p->gen) == seen && !atomic_load(&p->stop))
            pthread_cond_wait(&p->wake, &p->mu);
        if (atomic_load(&p->stop)) {
            pthread_mutex_unlock(&p->mu);
            return NULL;
        }
        seen = atomic_load(&p->gen);
        const rt_job *jobs = p->jobs;
        int64_t n = p->n_wg, chunk = p->chunk;
        pthread_mutex_unlock(&p->mu);

        take_workgroups(p, jobs, n, chunk);
        if (atomic_fetch_sub(&p->pending, 1) == 1) {
            /* Signal under the mutex: the caller checks `pending` under it
             * before sleeping, so the wakeup cannot be lost. */
            pthread_mutex_lock(&p->mu);
            pthread_cond_signal(&p->done);
            pthread_mutex_unlock(&p->mu);
        }
    }
}

rt_pool *rt_pool_new(int n_threads)
{
    if (n_threads <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        n_threads = n > 0 ? (int)n : 1;
    }
    if (n_threads > POOL_MAX_THREADS) n_threads = POOL_MAX_THREADS;
    rt_pool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->n_threads = n_threads;
    if (n_threads > 1 && !(p->workers = calloc((size_t)n_threads - 1, sizeof(pthread_t)))) {
        free(p);
        return NULL;
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    for (int i = 0; i < n_threads - 1; i++)
        if (pthread_create(&p->workers[i], NULL, worker_main, p) != 0) {
            p->n_threads = i + 1; /* free exactly the workers that started */
            rt_pool_free(p);
            return NULL;
        }
    return p;
}

void rt_pool_free(rt_pool *p)
{
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->stop, 1);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->n_threads - 1; i++) pthread_join(p->workers[i], NULL);
    pthread_cond_destroy(&p->done);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->mu);
    free(p->workers);
    free(p);
}

int rt_pool_threads(const rt_pool *p) { return p ? p->n_threads : 1; }

void rt_pool_run(rt_pool *p, rt_kernel_fn fn, int64_t n_workgroups, void *const *bufs)
{
    rt_job job = {fn, bufs, n_workgroups};
    rt_pool_run_jobs(p, &job, 1);
}

void rt_pool_run_jobs(rt_pool *p, const rt_job *jobs, int n_jobs)
{
    int64_t n = 0;
    for (int j = 0; j < n_jobs; j++) n += jobs[j].n_workgroups > 0 ? jobs[j].n_workgroups : 0;
    if (n <= 0) return;
    if (!p || p->n_threads == 1 || n == 1) {
        for (int j = 0; j < n_jobs; j++)
            for (int64_t wg = 0; wg < jobs[j].n_workgroups; wg++) jobs[j].fn(wg, jobs[j].bufs);
        return;
    }
    /* run_range numbers only jobs with workgroups: drop the empty ones. */
    rt_job stack_jobs[16], *live = n_jobs <= 16 ? stack_jobs : malloc(sizeof *live * (size_t)n_jobs);
    if (!live) { /* no memory for the list: one run per job */
        for (int j = 0; j < n_jobs; j++) rt_pool_run_jobs(p, &jobs[j], 1);
        return;
    }
    int n_live = 0;
    for (int j = 0; j < n_jobs; j++)
        if (jobs[j].n_workgroups > 0) live[n_live++] = jobs[j];
    int64_t chunk = n / ((int64_t)p->n_threads * POOL_CHUNKS_PER_THREAD);
    if (chunk < 1) chunk = 1;

    pthread_mutex_lock(&p->mu);
    p->jobs = live;
    p->n_wg = n;
    p->chunk = chunk;
    atomic_store(&p->next, 0);
    atomic_store(&p->pending, p->n_threads - 1);
    atomic_fetch_add(&p->gen, 1);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);

    take_workgroups(p, live, n, chunk);

    for (int i = 0; i < POOL_SPIN && atomic_load(&p->pending) > 0; i++) cpu_relax(i);
    if (atomic_load(&p->pending) > 0) {
        pthread_mutex_lock(&p->mu);
        while (atomic_load(&p->pending) > 0) pthread_cond_wait(&p->done, &p->mu);
        pthread_mutex_unlock(&p->mu);
    }
    if (live != stack_jobs) free(live);
}
