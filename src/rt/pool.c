/*
 * pool.c — the thread pool that runs a kernel's workgroups.
 *
 * needs: pthreads, C11 atomics.
 * gives: rt_pool_run(fn, n) == `for wg in [0, n): fn(wg, bufs)`, spread over the
 *        workers and the calling thread; one run at a time per pool.
 *        rt_pool_run_jobs runs several such loops as one: their workgroups are
 *        numbered one after another and handed out together.
 *
 * A run is one word, `run`: a generation, a closed bit and the number of
 * workers inside. The caller writes the job, then a new generation (open, no
 * one inside); a worker that sees it joins by raising the count (a
 * compare-and-swap that fails once the run is closed or replaced), takes
 * chunks of workgroup indices until they run out, and leaves by lowering the
 * count. The caller works too; when the workgroups run out it closes the run
 * and waits only for the workers inside, so none can still be reading the job
 * when the next run replaces it.
 *
 * The workgroups are cut into one contiguous share per thread (the caller's
 * first), each with its own counter on its own cache line. A thread takes
 * chunks from its own share, then from the others' in turn. So where every
 * thread comes, each runs the same workgroups run after run, and the weights
 * and rows they read stay in its own core's cache; one shared counter handed
 * them out in whatever order the threads got there, and moved its cache line
 * between the cores at every chunk. At 2 threads: silero_encoder_v5 0.095 ->
 * 0.088 ms, oww_melspec 0.0485 -> 0.0440, gpt 1.50 -> 1.41.
 *
 * A worker that is late, asleep or preempted (this machine is shared, and a
 * woken thread may wait a scheduler tick for a core) never joins: its share
 * was taken by the caller, who does not wait for it. Two threads are then
 * never much slower than one. The earlier scheme had every worker check in,
 * and a run on a loaded machine waited milliseconds for a worker that had
 * nothing left to do.
 *
 * Idle workers spin (a pause, now and then a yield) while the run they left
 * is still open, and for POOL_SPIN_NS after it closes, as runs come back to
 * back within a model's run and between runs, then sleep on `wake`; the
 * caller takes the mutex to wake them only when one sleeps (`sleepers`).
 * The clock starts at the close, not when the worker ran out of workgroups: a
 * worker whose last workgroup ended more than POOL_SPIN_NS before the caller's
 * (a 64-row GEMM is 4 units of ~0.25 ms; a late join leaves the caller a unit
 * behind) slept before the next run and joined it a wake late. Runs with 3 ms
 * of caller work and none for the worker, back to back, with no other program
 * competing for the cores (nice -20): 21 sleeps in 21 runs before, 0 after.
 *
 * Waking sleeping workers costs tens of microseconds (a futex wake and a trip
 * through the scheduler, more on a loaded machine). A run worth less than that
 * is faster on the caller alone, so the pool learns what each kernel costs:
 * every thread times the workgroups it runs, the caller adds them up after the
 * run into a small table keyed by the kernel's function, and a run whose
 * predicted serial time is under POOL_INLINE_NS runs inline. A kernel not yet
 * timed is spread: a wrong guess that way costs one wake, the other way a lost
 * speed-up. Where no worker sleeps (they spin for the next run, as within a
 * model's run) a hand-off costs no wake, only a few shared cache lines and the
 * wait for the last workgroup (0.35-0.4 us here: 4 workgroups of 0.25-1 us
 * took 0.89-2.35 us spread against 1.1-4.1 us inline), so the bar is then
 * POOL_INLINE_AWAKE_NS. silero_encoder_v5's three small convolutions (4
 * workgroups, 8-15 us) were inline at 2 threads; spread, its run went 0.111
 * -> 0.095 ms.
 */
#include "rt/rt.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define POOL_MAX_THREADS 1024
/* How long an idle worker spins for the next run before it sleeps, and how
 * long the caller spins for the workers inside a run before it sleeps. */
#define POOL_SPIN_NS 200000.0
#define POOL_WAIT_SPIN_NS 500000.0
/* Chunks per thread: enough to balance uneven workgroups, few enough that the
 * shared counter stays cold for many tiny ones. */
#define POOL_CHUNKS_PER_THREAD 8
/* Runs predicted to take less than this on one thread run inline: about twice
 * a wake of sleeping workers, so inlining costs at most half of it. */
#define POOL_INLINE_NS 20000.0
/* The same while every worker is awake: about ten hand-offs, so spreading
 * such a run costs at most a tenth of it where the worker does not come. */
#define POOL_INLINE_AWAKE_NS 4000.0
/* Kernels timed, direct-mapped by function address (a collision forgets the
 * older one: it is timed again, spread). */
#define POOL_COSTS 256
#define POOL_RETIME 64

/* The run word: generation << 32 | RUN_CLOSED | workers inside. */
#define RUN_CLOSED ((uint64_t)1 << 31)
#define RUN_INSIDE (RUN_CLOSED - 1)
#define RUN_GEN(w) ((w) >> 32)

/* What the threads spent on one job of a run (summed over them). */
typedef struct run_time {
    _Atomic int64_t ns, wgs;
} run_time;

/* One thread's share of a run: workgroups [next, end) not yet taken. */
typedef struct pool_share {
    _Alignas(64) _Atomic int64_t next;
    int64_t end;
} pool_share;

typedef struct pool_cost {
    rt_kernel_fn fn;
    double ns_per_wg; /* running mean, the latest sample weighted 1/4 */
} pool_cost;

typedef struct pool_worker {
    rt_pool *p;
    int index; /* its share; the caller's is 0 */
} pool_worker;

struct rt_pool {
    int n_threads; /* workers + the calling thread */
    pthread_t *workers;
    pool_worker *worker_args;
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    _Atomic uint64_t run;
    _Atomic int stop;
    _Atomic int sleepers; /* workers asleep on wake, or about to be */
    _Atomic int64_t sleeps; /* times a worker went to sleep */
    /* The current run, written before its generation is published and read
     * only by workers inside it. */
    const rt_job *jobs; /* those with workgroups */
    run_time *times;    /* per job */
    int64_t chunk;
    pool_share *shares; /* n_threads, covering the workgroups of all jobs */
    /* Read and written by the calling thread only (runs are serialized). */
    pool_cost costs[POOL_COSTS];
    uint64_t gen, inline_runs, spread_runs;
};

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static pool_cost *cost_slot(rt_pool *p, rt_kernel_fn fn)
{
    uintptr_t h = (uintptr_t)(void *)fn;
    h ^= h >> 17;
    h *= (uintptr_t)0x9E3779B97F4A7C15u;
    return &p->costs[(h >> 24) % POOL_COSTS];
}

static void cost_note(rt_pool *p, rt_kernel_fn fn, int64_t n_wg, double ns)
{
    if (n_wg <= 0) return;
    pool_cost *c = cost_slot(p, fn);
    double x = ns / (double)n_wg;
    if (c->fn != fn) *c = (pool_cost){fn, x};
    else c->ns_per_wg = 0.75 * c->ns_per_wg + 0.25 * x;
}

/* Whether every job has been timed and together they are worth less than
 * handing them to the workers: a wake where one sleeps, else a hand-off. */
static bool cheap_run(rt_pool *p, const rt_job *jobs, int n_jobs)
{
    double limit = atomic_load_explicit(&p->sleepers, memory_order_relaxed) > 0 ? POOL_INLINE_NS : POOL_INLINE_AWAKE_NS;
    double ns = 0;
    for (int j = 0; j < n_jobs; j++) {
        if (jobs[j].n_workgroups <= 0) continue;
        const pool_cost *c = cost_slot(p, jobs[j].fn);
        if (c->fn != jobs[j].fn) return false;
        ns += c->ns_per_wg * (double)jobs[j].n_workgroups;
        if (ns >= limit) return false;
    }
    return true;
}

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

/* Workgroups [lo, hi) of the run, numbered job after job; each job's share
 * timed into its run_time. */
static void run_range(run_time *times, const rt_job *jobs, int64_t lo, int64_t hi)
{
    int j = 0;
    int64_t base = 0;
    while (lo < hi) {
        while (lo >= base + jobs[j].n_workgroups) base += jobs[j++].n_workgroups;
        int64_t end = base + jobs[j].n_workgroups < hi ? base + jobs[j].n_workgroups : hi;
        double t0 = now_ns();
        for (int64_t wg = lo; wg < end; wg++) jobs[j].fn(wg - base, jobs[j].bufs);
        atomic_fetch_add_explicit(&times[j].ns, (int64_t)(now_ns() - t0), memory_order_relaxed);
        atomic_fetch_add_explicit(&times[j].wgs, end - lo, memory_order_relaxed);
        lo = end;
    }
}

/* Thread `self` takes chunks of its own share, then of the others'. A take
 * past a share's end finds it empty (its counter only grows, by at most one
 * chunk per thread beyond the end). */
static void take_workgroups(rt_pool *p, int self, run_time *times, const rt_job *jobs, int64_t chunk)
{
    for (int k = 0; k < p->n_threads; k++) {
        pool_share *s = &p->shares[(self + k) % p->n_threads];
        int64_t end = s->end;
        for (;;) {
            int64_t lo = atomic_fetch_add_explicit(&s->next, chunk, memory_order_relaxed);
            if (lo >= end) break;
            run_range(times, jobs, lo, lo + chunk < end ? lo + chunk : end);
        }
    }
}

/* Waits for a run newer than `seen`: spins while run `seen` is open and for
 * POOL_SPIN_NS after it closed, then sleeps. Returns the run word, or 0 when
 * the pool stops. */
static uint64_t await_run(rt_pool *p, uint64_t seen)
{
    double t0 = now_ns();
    for (int i = 0;; i++) {
        if (atomic_load_explicit(&p->stop, memory_order_relaxed)) return 0;
        uint64_t w = atomic_load_explicit(&p->run, memory_order_acquire);
        if (RUN_GEN(w) != seen) return w;
        if ((i & 63) == 63) {
            double t = now_ns();
            if (!(w & RUN_CLOSED)) t0 = t;
            else if (t - t0 > POOL_SPIN_NS) break;
        }
        cpu_relax(i);
    }
    /* sleepers is raised before run is read again, and the caller writes run
     * before it reads sleepers (all sequentially consistent): either this
     * thread sees the new run or the caller sees a sleeper and broadcasts
     * under the mutex, which this thread holds until it waits. */
    pthread_mutex_lock(&p->mu);
    atomic_fetch_add(&p->sleepers, 1);
    atomic_fetch_add_explicit(&p->sleeps, 1, memory_order_relaxed);
    uint64_t w;
    while (RUN_GEN(w = atomic_load(&p->run)) == seen && !atomic_load(&p->stop)) pthread_cond_wait(&p->wake, &p->mu);
    atomic_fetch_sub(&p->sleepers, 1);
    pthread_mutex_unlock(&p->mu);
    return atomic_load(&p->stop) ? 0 : w;
}

static void *worker_main(void *arg)
{
    rt_pool *p = ((pool_worker *)arg)->p;
    int self = ((pool_worker *)arg)->index;
    uint64_t seen = 0;
    for (;;) {
        uint64_t w = await_run(p, seen);
        if (!w) return NULL;
        seen = RUN_GEN(w);
        /* Join while the run is open; one that replaced it meanwhile is
         * newer than `seen`, so the next turn finds it at once. */
        bool joined = false;
        while (!(w & RUN_CLOSED) && RUN_GEN(w) == seen)
            if (atomic_compare_exchange_weak_explicit(&p->run, &w, w + 1, memory_order_acquire, memory_order_acquire)) {
                joined = true;
                break;
            }
        if (!joined) continue;
        take_workgroups(p, self, p->times, p->jobs, p->chunk);
        uint64_t left = atomic_fetch_sub_explicit(&p->run, 1, memory_order_release);
        if ((left & RUN_CLOSED) && (left & RUN_INSIDE) == 1) {
            /* The last one out of a closed run: the caller may be asleep on
             * done (it checks the count under the mutex before it waits). */
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
    p->shares = aligned_alloc(_Alignof(pool_share), sizeof(pool_share) * (size_t)n_threads);
    if (n_threads > 1) {
        p->workers = calloc((size_t)n_threads - 1, sizeof(pthread_t));
        p->worker_args = calloc((size_t)n_threads - 1, sizeof(pool_worker));
    }
    if (!p->shares || (n_threads > 1 && (!p->workers || !p->worker_args))) {
        free(p->shares);
        free(p->workers);
        free(p->worker_args);
        free(p);
        return NULL;
    }
    for (int i = 0; i < n_threads; i++) {
        atomic_init(&p->shares[i].next, 0);
        p->shares[i].end = 0;
    }
    /* generation 0, closed: a worker's first wait spins POOL_SPIN_NS, not for
     * as long as the pool goes unused */
    atomic_init(&p->run, RUN_CLOSED);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    for (int i = 0; i < n_threads - 1; i++) {
        p->worker_args[i] = (pool_worker){p, i + 1};
        if (pthread_create(&p->workers[i], NULL, worker_main, &p->worker_args[i]) != 0) {
            p->n_threads = i + 1; /* free exactly the workers that started */
            rt_pool_free(p);
            return NULL;
        }
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
    free(p->worker_args);
    free(p->shares);
    free(p);
}

int rt_pool_threads(const rt_pool *p) { return p ? p->n_threads : 1; }

int64_t rt_pool_spread_runs(const rt_pool *p) { return p ? (int64_t)p->spread_runs : 0; }

int64_t rt_pool_sleeps(rt_pool *p) { return p ? atomic_load_explicit(&p->sleeps, memory_order_relaxed) : 0; }

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
    if (cheap_run(p, jobs, n_jobs)) {
        /* Inline. One run in POOL_RETIME is timed again, so that a kernel
         * whose workgroups grew costly is spread again; not every run, as a
         * clock read (~65 ns here) is a good part of a tiny kernel. */
        bool timed = ++p->inline_runs % POOL_RETIME == 0;
        for (int j = 0; j < n_jobs; j++) {
            if (jobs[j].n_workgroups <= 0) continue;
            double t0 = timed ? now_ns() : 0;
            for (int64_t wg = 0; wg < jobs[j].n_workgroups; wg++) jobs[j].fn(wg, jobs[j].bufs);
            if (timed) cost_note(p, jobs[j].fn, jobs[j].n_workgroups, now_ns() - t0);
        }
        return;
    }
    /* run_range numbers only jobs with workgroups: drop the empty ones. */
    rt_job stack_jobs[16], *live = n_jobs <= 16 ? stack_jobs : malloc(sizeof *live * (size_t)n_jobs);
    run_time stack_times[16], *times = n_jobs <= 16 ? stack_times : calloc((size_t)n_jobs, sizeof *times);
    if (!live || !times) { /* no memory for the lists: one run per job */
        if (live != stack_jobs) free(live);
        if (times != stack_times) free(times);
        for (int j = 0; j < n_jobs; j++) rt_pool_run_jobs(p, &jobs[j], 1);
        return;
    }
    int n_live = 0;
    for (int j = 0; j < n_jobs; j++)
        if (jobs[j].n_workgroups > 0) {
            atomic_init(&times[n_live].ns, 0);
            atomic_init(&times[n_live].wgs, 0);
            live[n_live++] = jobs[j];
        }
    int64_t chunk = n / ((int64_t)p->n_threads * POOL_CHUNKS_PER_THREAD);
    if (chunk < 1) chunk = 1;

    p->spread_runs++;
    p->jobs = live;
    p->times = times;
    p->chunk = chunk;
    /* Shares as even as whole workgroups allow, the larger ones first: the
     * caller, who starts at once, has one of them. */
    int64_t base = n / p->n_threads, extra = n % p->n_threads, lo = 0;
    for (int t = 0; t < p->n_threads; t++) {
        int64_t size = base + (t < extra);
        atomic_store_explicit(&p->shares[t].next, lo, memory_order_relaxed);
        p->shares[t].end = lo + size;
        lo += size;
    }
    p->gen = (p->gen + 1) & 0xffffffffu;
    if (!p->gen) p->gen = 1; /* 0 is the generation workers start from */
    atomic_store(&p->run, p->gen << 32);
    if (atomic_load(&p->sleepers) > 0) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->mu);
    }

    take_workgroups(p, 0, times, live, chunk);

    /* Close the run: workers not inside now never join it. Wait for those inside. */
    if (atomic_fetch_or_explicit(&p->run, RUN_CLOSED, memory_order_acq_rel) & RUN_INSIDE) {
        double t0 = now_ns();
        for (int i = 0; atomic_load_explicit(&p->run, memory_order_acquire) & RUN_INSIDE; i++) {
            if ((i & 63) == 63 && now_ns() - t0 > POOL_WAIT_SPIN_NS) {
                pthread_mutex_lock(&p->mu);
                while (atomic_load(&p->run) & RUN_INSIDE) pthread_cond_wait(&p->done, &p->mu);
                pthread_mutex_unlock(&p->mu);
                break;
            }
            cpu_relax(i);
        }
    }
    /* Every worker that joined has left: their times are all added. */
    for (int j = 0; j < n_live; j++)
        cost_note(p, live[j].fn, atomic_load_explicit(&times[j].wgs, memory_order_relaxed),
                  (double)atomic_load_explicit(&times[j].ns, memory_order_relaxed));
    if (live != stack_jobs) free(live);
    if (times != stack_times) free(times);
}
