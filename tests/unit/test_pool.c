/* The thread pool (rt/pool.c): every workgroup of every job runs once, at
 * every thread count; tiny kernels stay on the caller; sleeping workers are
 * woken; a worker that never joins a run is not waited for; pools are run
 * from several threads; a program computes the same at 1, 2 and 3 threads. */
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "fuse_cases.h"
#include "rt/rt.h"
#include "test.h"

static double seconds_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + 1e-9 * (double)(t.tv_nsec - t0->tv_nsec);
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static _Atomic int64_t hits[5000];

static void count_hit(int64_t wg, void *const *bufs)
{
    (void)bufs;
    atomic_fetch_add(&hits[wg], 1);
}

TEST(rt_pool_runs_every_workgroup_once)
{
    rt_pool *def = rt_pool_new(0);
    CHECK(def && rt_pool_threads(def) >= 1);
    rt_pool_free(def);

    for (int round = 0; round < 20; round++) {
        int threads = 1 + round % 5;
        rt_pool *p = rt_pool_new(threads);
        CHECK(p != NULL);
        if (!p) continue;
        static const int64_t sizes[] = {0, 1, 2, 7, 64, 4999};
        for (int s = 0; s < 6; s++) {
            for (int i = 0; i < 5000; i++) atomic_store(&hits[i], 0);
            rt_pool_run(p, count_hit, sizes[s], NULL);
            int bad = 0;
            for (int64_t i = 0; i < 5000; i++) bad += atomic_load(&hits[i]) != (i < sizes[s]);
            CHECK_EQ_INT(bad, 0);
        }
        rt_pool_free(p);
    }
}

/* Each job counts into its own block of hits (bufs[0] holds the block's start). */
static void count_job_hit(int64_t wg, void *const *bufs)
{
    atomic_fetch_add(&hits[(int64_t)(intptr_t)bufs[0] + wg], 1);
}

TEST(rt_pool_runs_every_workgroup_of_every_job_once)
{
    for (int round = 0; round < 12; round++) {
        int threads = 1 + round % 4;
        rt_pool *p = rt_pool_new(threads);
        CHECK(p != NULL);
        if (!p) continue;
        /* 20 jobs (more than the 16 kept on the stack) of 0..97 workgroups, some empty. */
        int n_jobs = round % 2 ? 20 : 3;
        rt_job jobs[20];
        void *starts[20];
        int64_t total = 0;
        for (int j = 0; j < n_jobs; j++) {
            int64_t n = (j * 37 + round * 11) % 98;
            if (j % 5 == 2) n = 0;
            starts[j] = (void *)(intptr_t)total;
            jobs[j] = (rt_job){count_job_hit, &starts[j], n};
            total += n;
        }
        CHECK(total < 5000);
        for (int i = 0; i < 5000; i++) atomic_store(&hits[i], 0);
        rt_pool_run_jobs(p, jobs, n_jobs);
        int bad = 0;
        for (int64_t i = 0; i < 5000; i++) bad += atomic_load(&hits[i]) != (i < total);
        CHECK_EQ_INT(bad, 0);
        rt_pool_free(p);
    }
}

/* Where workgroups ran: which thread ran each (0 the caller, 1 another), and
 * in wait mode workgroup 0 waits (up to 2 s) until another thread has run one,
 * which only a spread run can give it. */
static pthread_t caller_thread;
static _Atomic int ran_elsewhere;
static _Atomic int wait_mode, waited_out;

static void note_thread(int64_t wg, void *const *bufs)
{
    (void)bufs;
    if (!pthread_equal(pthread_self(), caller_thread)) atomic_store(&ran_elsewhere, 1);
    if (wg != 0 || !atomic_load(&wait_mode)) return;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        if (atomic_load(&ran_elsewhere)) return;
    } while (seconds_since(&t0) < 2.0);
    atomic_store(&waited_out, 1);
}

/* The same, under another address: a kernel the pool has not timed. */
static void note_thread_untimed(int64_t wg, void *const *bufs) { note_thread(wg, bufs); }

/* A run worth less than a wake of the workers stays on the caller (pool.c
 * times each kernel); a kernel not yet timed, and one whose run grew costly,
 * is spread over the threads. */
TEST(rt_pool_runs_tiny_kernels_inline_and_spreads_costly_runs)
{
    caller_thread = pthread_self();
    rt_pool *p = rt_pool_new(2);
    CHECK(p != NULL);
    if (!p) return;
    /* not timed yet: spread, so the waiting workgroup sees the worker's */
    atomic_store(&wait_mode, 1);
    atomic_store(&ran_elsewhere, 0);
    atomic_store(&waited_out, 0);
    rt_pool_run(p, note_thread_untimed, 64, NULL);
    CHECK(!atomic_load(&waited_out));
    CHECK_EQ_INT(rt_pool_spread_runs(p), 1);
    /* timed tiny: after its first run, 8 workgroups of nothing run inline */
    atomic_store(&wait_mode, 0);
    rt_pool_run(p, note_thread, 8, NULL);
    atomic_store(&ran_elsewhere, 0);
    int64_t spread = rt_pool_spread_runs(p);
    for (int i = 0; i < 200; i++) rt_pool_run(p, note_thread, 8, NULL);
    CHECK(!atomic_load(&ran_elsewhere));
    CHECK_EQ_INT(rt_pool_spread_runs(p), spread);
    /* the same kernel over 200000 workgroups is worth far more than a wake */
    atomic_store(&wait_mode, 1);
    atomic_store(&ran_elsewhere, 0);
    rt_pool_run(p, note_thread, 200000, NULL);
    CHECK(!atomic_load(&waited_out));
    CHECK_EQ_INT(rt_pool_spread_runs(p), spread + 1);
    CHECK(atomic_load(&ran_elsewhere));
    atomic_store(&wait_mode, 0);
    rt_pool_free(p);
}


/* The first workgroup a thread other than the caller ran; workgroup 0 (the
 * caller's first) waits for it, up to 2 s. */
static _Atomic int64_t first_elsewhere;

static void note_first_elsewhere(int64_t wg, void *const *bufs)
{
    if (!pthread_equal(pthread_self(), caller_thread)) {
        int64_t none = -1;
        atomic_compare_exchange_strong(&first_elsewhere, &none, wg);
    }
    note_thread(wg, bufs);
    atomic_fetch_add(&hits[wg], 1);
}

/* Each thread starts on its own contiguous share (so it runs the same
 * workgroups run after run): while the caller holds workgroup 0, a worker's
 * first workgroup is the first of its share, not the next after the
 * caller's. Shares differ by at most one workgroup, the larger first. */
TEST(rt_pool_threads_start_on_their_own_shares)
{
    caller_thread = pthread_self();
    static const int threads[] = {2, 3};
    static const int64_t sizes[] = {2, 9, 10, 64};
    for (int t = 0; t < 2; t++)
        for (int s = 0; s < 4; s++) {
            rt_pool *p = rt_pool_new(threads[t]); /* a new pool: the kernel is not timed, so spread */
            CHECK(p != NULL);
            if (!p) continue;
            int64_t n = sizes[s];
            for (int i = 0; i < 5000; i++) atomic_store(&hits[i], 0);
            atomic_store(&first_elsewhere, -1);
            atomic_store(&ran_elsewhere, 0);
            atomic_store(&waited_out, 0);
            atomic_store(&wait_mode, 1);
            rt_pool_run(p, note_first_elsewhere, n, NULL);
            atomic_store(&wait_mode, 0);
            CHECK(!atomic_load(&waited_out));
            int64_t first = atomic_load(&first_elsewhere), start = 0;
            bool at_start = false;
            for (int i = 1; i < threads[t]; i++) {
                start += n / threads[t] + (i - 1 < n % threads[t]);
                at_start |= first == start;
            }
            CHECK(at_start);
            int bad = 0;
            for (int64_t i = 0; i < 5000; i++) bad += atomic_load(&hits[i]) != (i < n);
            CHECK_EQ_INT(bad, 0);
            rt_pool_free(p);
        }
}

/* note_thread, then 2 us of work: 1000 workgroups are always worth a wake. */
static void note_thread_costly(int64_t wg, void *const *bufs)
{
    note_thread(wg, bufs);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (seconds_since(&t0) < 2e-6) {
    }
}

/* note_thread, then 1 us of work: 6 workgroups (6 us, up to ~15 where
 * sanitizers slow the clock and the atomics) are worth more than a hand-off
 * to a spinning worker and less than a wake of a sleeping one. */
static void note_thread_mid(int64_t wg, void *const *bufs)
{
    note_thread(wg, bufs);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (seconds_since(&t0) < 1e-6) {
    }
}

/* Such a run is spread right after a run the worker joined (it spins for the
 * next) and stays on the caller once the worker sleeps. Each side is tried
 * up to 50 times: the scheduler may hold the caller past the worker's spin,
 * or stretch a timed workgroup (the pool's mean forgets a quarter of it per
 * spread run). */
TEST(rt_pool_spreads_mid_runs_to_spinning_workers_only)
{
    caller_thread = pthread_self();
    rt_pool *p = rt_pool_new(2);
    CHECK(p != NULL);
    if (!p) return;
    atomic_store(&wait_mode, 0);
    for (int i = 0; i < 4; i++) rt_pool_run(p, note_thread_mid, 6, NULL);
    bool spread_awake = false, inline_asleep = false;
    for (int a = 0; a < 50 && !spread_awake; a++) {
        atomic_store(&wait_mode, 1); /* the worker joins this one */
        atomic_store(&ran_elsewhere, 0);
        atomic_store(&waited_out, 0);
        rt_pool_run(p, note_thread_costly, 1000, NULL);
        CHECK(!atomic_load(&waited_out));
        atomic_store(&wait_mode, 0);
        int64_t before = rt_pool_spread_runs(p);
        rt_pool_run(p, note_thread_mid, 6, NULL);
        spread_awake = rt_pool_spread_runs(p) > before;
    }
    CHECK(spread_awake);
    for (int a = 0; a < 50 && !inline_asleep; a++) {
        int64_t sleeps = rt_pool_sleeps(p);
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        while (rt_pool_sleeps(p) == sleeps && seconds_since(&t0) < 2.0) sleep_ms(1);
        int64_t before = rt_pool_spread_runs(p);
        atomic_store(&ran_elsewhere, 0);
        rt_pool_run(p, note_thread_mid, 6, NULL);
        inline_asleep = rt_pool_spread_runs(p) == before && !atomic_load(&ran_elsewhere);
    }
    CHECK(inline_asleep);
    rt_pool_free(p);
}

/* Workers that have slept (idle longer than they spin) are woken by the next
 * run: each run waits in workgroup 0 until another thread has run one. */
TEST(rt_pool_wakes_parked_workers)
{
    caller_thread = pthread_self();
    static const int threads[] = {2, 3};
    for (int t = 0; t < 2; t++) {
        rt_pool *p = rt_pool_new(threads[t]);
        CHECK(p != NULL);
        if (!p) continue;
        atomic_store(&wait_mode, 1);
        for (int round = 0; round < 4; round++) {
            sleep_ms(20); /* far longer than a worker spins */
            atomic_store(&ran_elsewhere, 0);
            atomic_store(&waited_out, 0);
            rt_pool_run(p, note_thread_costly, 1000, NULL);
            CHECK(!atomic_load(&waited_out));
            CHECK(atomic_load(&ran_elsewhere));
        }
        atomic_store(&wait_mode, 0);
        rt_pool_free(p);
    }
}

/* 3 ms of work on the caller, nothing on the worker: the worker runs out of
 * workgroups and then waits far longer than it spins after a run closes. */
static void long_on_caller(int64_t wg, void *const *bufs)
{
    (void)wg;
    (void)bufs;
    if (!pthread_equal(pthread_self(), caller_thread)) return;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (seconds_since(&t0) < 3e-3) {
    }
}

/* A worker that runs out of workgroups while the caller still works stays
 * awake for the next run (it comes as soon as this one ends): it spins while
 * the run is open, not only for a fixed time after its own last workgroup.
 * Back-to-back runs then never wait for a wake. */
TEST(rt_pool_workers_stay_awake_while_a_run_is_open)
{
    caller_thread = pthread_self();
    rt_pool *p = rt_pool_new(2);
    CHECK(p != NULL);
    if (!p) return;
    rt_pool_run(p, long_on_caller, 4, NULL);
    int64_t before = rt_pool_sleeps(p);
    for (int r = 0; r < 20; r++) rt_pool_run(p, long_on_caller, 4, NULL);
    /* one or two sleeps where the scheduler held the caller between runs; a
     * worker that slept after each run's caller share sleeps about 20 times
     * (where other programs keep both cores busy, a spinning worker's yield
     * can take longer than the caller's share, and it does not get to sleep) */
    CHECK(rt_pool_sleeps(p) - before <= 3);
    sleep_ms(20); /* idle far past the spin: it sleeps, and wakes for the next */
    CHECK(rt_pool_sleeps(p) - before >= 1);
    rt_pool_run(p, long_on_caller, 4, NULL);
    rt_pool_free(p);
}

/* A worker held elsewhere (here: in a signal handler, standing for a thread
 * the scheduler has not run) is not waited for: the caller runs every
 * workgroup itself and returns. The handler holds the worker for 2 s; a pool
 * that waited for every worker to check in would take that long. */
static _Atomic int held, holding;

static void hold_worker(int sig)
{
    (void)sig;
    atomic_store(&holding, 1);
    while (atomic_load(&held)) {
    }
    atomic_store(&holding, 0);
}

/* The largest thread id of this process not in `skip` (the threads that
 * existed before), or -1. */
static long new_thread(const long *skip, int n_skip)
{
    long found = -1;
    DIR *d = opendir("/proc/self/task");
    if (!d) return -1;
    for (struct dirent *e; (e = readdir(d));) {
        long tid = strtol(e->d_name, NULL, 10);
        bool old = tid <= 0;
        for (int i = 0; i < n_skip && !old; i++) old = skip[i] == tid;
        if (!old && tid > found) found = tid;
    }
    closedir(d);
    return found;
}

static int list_threads(long *out, int cap)
{
    int n = 0;
    DIR *d = opendir("/proc/self/task");
    if (!d) return 0;
    for (struct dirent *e; (e = readdir(d)) && n < cap;) {
        long tid = strtol(e->d_name, NULL, 10);
        if (tid > 0) out[n++] = tid;
    }
    closedir(d);
    return n;
}

static void *release_after_2s(void *arg)
{
    (void)arg;
    sleep_ms(2000);
    atomic_store(&held, 0);
    return NULL;
}

TEST(rt_pool_does_not_wait_for_a_worker_that_never_joined)
{
    caller_thread = pthread_self();
    struct sigaction sa = {0}, old_sa;
    sa.sa_handler = hold_worker;
    sigemptyset(&sa.sa_mask);
    CHECK(sigaction(SIGUSR1, &sa, &old_sa) == 0);
    /* The worker inherits an open SIGUSR1; this thread (and the releaser) block it. */
    sigset_t usr1, old_mask;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    /* The signal goes to the pool's worker by its thread id: earlier tests
     * may have left threads of their own (an OpenCL runtime's), and a
     * process-wide signal could land on one of those instead. */
    long before[256];
    int n_before = list_threads(before, 256);
    rt_pool *p = rt_pool_new(2);
    CHECK(p != NULL);
    long worker = new_thread(before, n_before);
    CHECK(worker > 0);
    pthread_sigmask(SIG_BLOCK, &usr1, &old_mask);
    pthread_t releaser;
    if (p && worker > 0) {
        atomic_store(&held, 1);
        CHECK(pthread_create(&releaser, NULL, release_after_2s, NULL) == 0);
        CHECK(syscall(SYS_tgkill, (long)getpid(), worker, SIGUSR1) == 0);
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        while (!atomic_load(&holding) && seconds_since(&t0) < 1.0) sleep_ms(1);
        CHECK(atomic_load(&holding));
        atomic_store(&wait_mode, 0);
        atomic_store(&ran_elsewhere, 0);
        clock_gettime(CLOCK_MONOTONIC, &t0);
        rt_pool_run(p, note_thread_untimed, 5000, NULL);
        double took = seconds_since(&t0);
        CHECK(took < 1.0);
        CHECK(!atomic_load(&ran_elsewhere));
        CHECK(atomic_load(&holding)); /* the worker was held throughout */
        pthread_join(releaser, NULL);
        rt_pool_free(p);
    }
    pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
    sigaction(SIGUSR1, &old_sa, NULL);
}

/* Programs run from several threads at once: each thread its own pool, and
 * one pool shared, its runs serialized by a lock (the caller is a different
 * thread from run to run). */
typedef struct pool_user {
    rt_pool *pool;
    pthread_mutex_t *lock; /* NULL: the pool is this thread's own */
    _Atomic int64_t *counts;
    int64_t n;
    int bad;
} pool_user;

static void count_into(int64_t wg, void *const *bufs) { atomic_fetch_add((_Atomic int64_t *)bufs[0] + wg, 1); }

static void *use_pool(void *arg)
{
    pool_user *u = arg;
    void *bufs[1] = {(void *)u->counts};
    for (int r = 0; r < 200; r++) {
        if (u->lock) pthread_mutex_lock(u->lock);
        for (int64_t i = 0; i < u->n; i++) atomic_store(&u->counts[i], 0);
        rt_pool_run(u->pool, count_into, u->n - r % 3, bufs);
        for (int64_t i = 0; i < u->n; i++) u->bad += atomic_load(&u->counts[i]) != (i < u->n - r % 3);
        if (u->lock) pthread_mutex_unlock(u->lock);
    }
    return NULL;
}

TEST(rt_pool_runs_from_several_threads)
{
    static _Atomic int64_t counts[4][300];
    rt_pool *own[2] = {rt_pool_new(2), rt_pool_new(3)};
    rt_pool *shared = rt_pool_new(2);
    CHECK(own[0] && own[1] && shared);
    if (!own[0] || !own[1] || !shared) return;
    pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    pool_user u[4] = {
        {own[0], NULL, counts[0], 300, 0},
        {own[1], NULL, counts[1], 7, 0},
        {shared, &lock, counts[2], 64, 0},
        {shared, &lock, counts[3], 3, 0},
    };
    pthread_t th[4];
    for (int i = 0; i < 4; i++) CHECK(pthread_create(&th[i], NULL, use_pool, &u[i]) == 0);
    for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < 4; i++) CHECK_EQ_INT(u[i].bad, 0);
    rt_pool_free(own[0]);
    rt_pool_free(own[1]);
    rt_pool_free(shared);
}

/* Relu(x @ W + b) -> Softmax over rows, and the sum of all of it: a packed
 * GEMM of a few column units, rows of a softmax (5, fewer than 3 threads
 * times 2), a reduction to one value (one workgroup). Each program runs 40
 * times, so the pool times its kernels and moves runs between inline and
 * spread; every run at every thread count gives the same bits, and they match
 * a double reference. */
#define MT_ROWS 5
#define MT_K 37
#define MT_N 29

TEST(rt_pool_programs_compute_the_same_at_1_2_and_3_threads)
{
    ir_graph *g = ir_graph_new();
    int x = input(g, "x", shp(2, MT_ROWS, MT_K));
    int w = constant(g, "w", shp(2, MT_K, MT_N), 0.125f, -0.02f), b = constant(g, "b", shp(1, MT_N), 0.5f, 0.05f);
    int h = op1(g, "h", OP_Relu, op2(g, "a", OP_Add, op2(g, "mm", OP_MatMul, x, w), b));
    int ys[2] = {op1(g, "softmax", OP_Softmax, h), op1(g, "sum", OP_ReduceSum, h)};
    ir_graph_set_io(g, 1, &x, 2, ys);
    const float *wv = g->tensors[w].data, *bv = g->tensors[b].data;
    float xd[MT_ROWS * MT_K];
    for (int i = 0; i < MT_ROWS * MT_K; i++) xd[i] = (float)((i * 31 + 7) % 29 - 14) / 9.0f;
    double ref[MT_ROWS * MT_N], ref_sum = 0;
    for (int r = 0; r < MT_ROWS; r++) {
        double hr[MT_N], mx = 0, z = 0;
        for (int j = 0; j < MT_N; j++) {
            double acc = bv[j];
            for (int k = 0; k < MT_K; k++) acc += (double)xd[r * MT_K + k] * wv[k * MT_N + j];
            hr[j] = acc > 0 ? acc : 0;
            ref_sum += hr[j];
            mx = hr[j] > mx ? hr[j] : mx;
        }
        for (int j = 0; j < MT_N; j++) z += exp(hr[j] - mx);
        for (int j = 0; j < MT_N; j++) ref[r * MT_N + j] = exp(hr[j] - mx) / z;
    }
    smelt_model *m = NULL;
    CHECK_EQ_INT(program_model_wrap(g, &m), SMELT_OK);
    if (!m) return;
    float first[MT_ROWS * MT_N + 1];
    bool have_first = false;
    for (int threads = 1; threads <= 3; threads++) {
        smelt_options opt;
        smelt_options_init(&opt);
        opt.threads = threads;
        smelt_program *p = NULL;
        CHECK_EQ_INT(smelt_program_compile(m, &opt, 0, NULL, &p), SMELT_OK);
        if (!p) continue;
        smelt_tensor in = {.name = "x", .dtype = SMELT_F32, .rank = 2, .shape = {MT_ROWS, MT_K}, .data = xd};
        int differ = 0, far = 0;
        for (int r = 0; r < 40; r++) {
            smelt_tensor y, s;
            CHECK_EQ_INT(smelt_program_run(p, 1, &in), SMELT_OK);
            CHECK_EQ_INT(smelt_program_output(p, 0, &y), SMELT_OK);
            CHECK_EQ_INT(smelt_program_output(p, 1, &s), SMELT_OK);
            if (!y.data || !s.data) break;
            float got[MT_ROWS * MT_N + 1];
            memcpy(got, y.data, sizeof(float) * MT_ROWS * MT_N);
            got[MT_ROWS * MT_N] = *(const float *)s.data;
            if (!have_first) {
                memcpy(first, got, sizeof got);
                have_first = true;
                far += count_far(got, ref, MT_ROWS * MT_N, 1e-5, threads);
                far += fabs(got[MT_ROWS * MT_N] - ref_sum) > 1e-5 * fabs(ref_sum);
            }
            differ += memcmp(got, first, sizeof got) != 0;
        }
        CHECK_EQ_INT(differ, 0);
        CHECK_EQ_INT(far, 0);
        smelt_program_free(p);
    }
    CHECK(have_first);
    smelt_model_free(m);
}
