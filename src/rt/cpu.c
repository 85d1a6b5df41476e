/*
 * cpu.c — the CPU device: the system compiler and dlopen (cc.c) and the
 * thread pool (pool.c) behind rt/device.h.
 *
 * needs: a C compiler (rt_cc_load). gives: host-memory buffers (an rt_mem is
 *        the pointer itself). Dispatches are held until the next barrier or
 *        finish, which runs all of them as one pool run (rt_pool_run_jobs):
 *        kernels with no barrier between them share the threads.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/diag.h"
#include "rt/device.h"
#include "rt/rt.h"

typedef struct cpu_device {
    rt_device base;
    rt_pool *pool;
    rt_job *jobs;    /* dispatched since the last barrier; bufs set when they run */
    int *buf_start;  /* per job: where its buffer table starts in bufs */
    int n_jobs, cap_jobs;
    void **bufs;     /* the held dispatches' buffer tables, one after another */
    int n_bufs, cap_bufs;
} cpu_device;

struct rt_module {
    rt_so *so;
};

/* cpu:N is the N-th of as many CPU devices as there are online cores, each
 * with its own thread pool (`threads` workers). */
static smelt_status cpu_open(int index, int threads, rt_device **out)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 1) cores = 1;
    if (index < 0 || index >= cores)
        return diag_fail(SMELT_ERR_DEVICE, "device 'cpu:%d' is not available (%ld online cores: cpu:0 to cpu:%ld)", index, cores,
                         cores - 1);
    cpu_device *d = calloc(1, sizeof *d);
    if (!d) return diag_fail(SMELT_ERR_NOMEM, "out of memory");
    d->base.ops = &rt_cpu_ops;
    d->pool = rt_pool_new(threads);
    if (!d->pool) {
        free(d);
        return diag_fail(SMELT_ERR_DEVICE, "could not start %d worker threads", threads);
    }
    char isa[200];
    rt_cc_cpu_isa(isa, sizeof isa);
    snprintf(d->base.name, sizeof d->base.name, "cpu:%d (%d threads)", index, rt_pool_threads(d->pool));
    snprintf(d->base.ident, sizeof d->base.ident, "cpu|%s", isa);
    *out = &d->base;
    return SMELT_OK;
}

static smelt_status cpu_build(rt_device *d, const char *source, rt_module **out, bool *cached)
{
    (void)d;
    rt_module *m = calloc(1, sizeof *m);
    if (!m) return diag_fail(SMELT_ERR_NOMEM, "out of memory");
    smelt_status st = rt_cc_load(source, &m->so, cached);
    if (st) {
        free(m);
        return st;
    }
    *out = m;
    return SMELT_OK;
}

smelt_status rt_cpu_module_load(const char *object_key, const uint64_t digest[2], rt_module **out)
{
    rt_module *m = calloc(1, sizeof *m);
    if (!m) return diag_fail(SMELT_ERR_NOMEM, "out of memory");
    smelt_status st = rt_cc_load_key(object_key, digest, &m->so);
    if (st) {
        free(m);
        return st;
    }
    *out = m;
    return SMELT_OK;
}

/* A kernel handle is the function itself. */
static smelt_status cpu_kernel(rt_device *d, rt_module *m, const char *name, rt_kernel **out)
{
    (void)d;
    void *fn = rt_so_sym(m->so, name);
    if (!fn) return diag_fail(SMELT_ERR_INTERNAL, "kernel %s missing from the compiled object", name);
    *out = fn;
    return SMELT_OK;
}

/* Buffers of a huge page or more are aligned to it and, where the kernel
 * hands out transparent huge pages on request, ask for them: a kernel reading
 * a tensor transposed touches one page per row, and 4 KiB pages make that a
 * TLB miss every few cache lines. */
#define CPU_HUGE_PAGE ((size_t)2 << 20)

static smelt_status cpu_alloc(rt_device *d, size_t bytes, rt_mem *out)
{
    (void)d;
    size_t align = bytes >= CPU_HUGE_PAGE ? CPU_HUGE_PAGE : 64;
    void *p = aligned_alloc(align, (bytes + align - 1) / align * align + align);
    if (!p) return diag_fail(SMELT_ERR_NOMEM, "out of memory: %zu bytes of device memory", bytes);
#ifdef MADV_HUGEPAGE
    if (align == CPU_HUGE_PAGE) (void)madvise(p, (bytes + align - 1) / align * align, MADV_HUGEPAGE);
#endif
    *out = (rt_mem)(uintptr_t)p;
    return SMELT_OK;
}

static smelt_status cpu_upload(rt_device *d, rt_mem dst, size_t offset, const void *src, size_t bytes)
{
    (void)d;
    if (bytes) memcpy((char *)(uintptr_t)dst + offset, src, bytes);
    return SMELT_OK;
}

static smelt_status cpu_download(rt_device *d, rt_mem src, size_t offset, void *dst, size_t bytes)
{
    (void)d;
    if (bytes) memcpy(dst, (const char *)(uintptr_t)src + offset, bytes);
    return SMELT_OK;
}

static smelt_status cpu_dispatch(rt_device *dev, rt_kernel *k, int n_args, const rt_arg *args, int64_t n_wg,
                                 int wg_size)
{
    cpu_device *d = (cpu_device *)dev;
    if (wg_size != 1)
        return diag_fail(SMELT_ERR_INTERNAL, "cpu kernels run one thread per workgroup, not %d", wg_size);
    if (d->n_jobs == d->cap_jobs) {
        int cap = d->cap_jobs ? 2 * d->cap_jobs : 16;
        rt_job *j = realloc(d->jobs, sizeof *j * (size_t)cap);
        if (j) d->jobs = j;
        int *b = j ? realloc(d->buf_start, sizeof *b * (size_t)cap) : NULL;
        if (b) d->buf_start = b;
        if (!j || !b) return diag_fail(SMELT_ERR_NOMEM, "out of memory");
        d->cap_jobs = cap;
    }
    if (d->n_bufs + n_args > d->cap_bufs) {
        int cap = 2 * (d->n_bufs + n_args);
        void **b = realloc(d->bufs, sizeof(void *) * (size_t)cap);
        if (!b) return diag_fail(SMELT_ERR_NOMEM, "out of memory");
        d->bufs = b;
        d->cap_bufs = cap;
    }
    for (int i = 0; i < n_args; i++)
        d->bufs[d->n_bufs + i] = args[i].mem ? (char *)(uintptr_t)args[i].mem + args[i].offset : NULL;
    d->buf_start[d->n_jobs] = d->n_bufs;
    d->jobs[d->n_jobs++] = (rt_job){(rt_kernel_fn)(void *)k, NULL, n_wg};
    d->n_bufs += n_args;
    return SMELT_OK;
}

/* Run the held dispatches together. */
static smelt_status cpu_finish(rt_device *dev)
{
    cpu_device *d = (cpu_device *)dev;
    for (int j = 0; j < d->n_jobs; j++) d->jobs[j].bufs = d->bufs + d->buf_start[j];
    rt_pool_run_jobs(d->pool, d->jobs, d->n_jobs);
    d->n_jobs = d->n_bufs = 0;
    return SMELT_OK;
}

static void cpu_mem_free(rt_device *d, rt_mem m)
{
    (void)d;
    free((void *)(uintptr_t)m);
}

static void cpu_module_free(rt_device *d, rt_module *m)
{
    (void)d;
    if (!m) return;
    rt_so_close(m->so);
    free(m);
}

static void cpu_close(rt_device *dev)
{
    cpu_device *d = (cpu_device *)dev;
    rt_pool_free(d->pool);
    free(d->jobs);
    free(d->buf_start);
    free(d->bufs);
    free(d);
}

const rt_device_ops rt_cpu_ops = {
    "cpu", RT_LANG_C, true, cpu_open, cpu_build, cpu_kernel, cpu_alloc, cpu_upload, cpu_download,
    cpu_dispatch, cpu_finish, cpu_finish, cpu_mem_free, cpu_module_free, cpu_close,
};
