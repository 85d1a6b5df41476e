/*
 * rt.h — the CPU runtime: the system compiler, the compile cache, and the
 * thread pool that runs a kernel's workgroups.
 *
 * Compiling: rt_cc_load() writes the source to the cache directory and runs
 *     $SMELT_CC (default "cc") -march=native [-mprefer-vector-width=512] -O3 -fPIC -shared -std=c11 ...
 * producing a shared object named by a hash of (source, flags, compiler
 * version string); a later call with the same source finds the object and
 * only dlopens it. The cache lives in $SMELT_CACHE_DIR, else
 * $XDG_CACHE_HOME/smelt, else ~/.cache/smelt. Writes are atomic (temporary
 * name + rename), so concurrent processes sharing a cache are safe.
 *
 * Running: kernels have the signature of target/emit.h; rt_pool_run calls
 * fn(wg, bufs) for every wg in [0, n) across the pool's threads and returns
 * when all are done. A pool runs one kernel at a time (callers serialize).
 */
#ifndef SMELT_RT_RT_H
#define SMELT_RT_RT_H

#include <stdbool.h>
#include <stdint.h>

#include "smelt.h"

typedef struct rt_so rt_so;

/* Compile (or find in the cache) and dlopen. *cached tells which (may be NULL).
 * Safe to call from several threads and processes at once.
 * Returns SMELT_OK with *out set, or *out == NULL and:
 *   SMELT_ERR_COMPILE  the compiler rejected the source; the message holds the
 *                      first 20 lines of its output and the path of the kept
 *                      <hash>.c in the cache directory;
 *   SMELT_ERR_DEVICE   no usable compiler (SMELT_CC missing or failing on
 *                      --version) or the object would not load;
 *   SMELT_ERR_IO       the cache directory cannot be found, created or written.
 * A compiler that rejects the -march/-mprefer flags is retried without them. */
smelt_status rt_cc_load(const char *source, rt_so **out, bool *cached);
/* f32 lanes of the vectors kernels compiled by rt_cc_load use on this host:
 * 16 where the CPU has AVX-512F (the flags ask for 512-bit vectors), 8 with
 * AVX, else 4; $SMELT_VECTOR_WIDTH (4, 8 or 16) overrides it, for a SMELT_CC
 * that targets another CPU. Lowerings size register-wide steps by it (TargetInfo). */
int rt_cc_vector_width(void);
/* Outputs of at least this many bytes are written around the cache by C
 * kernels that can (KIR stream loops, TargetInfo.stream_min_bytes): 16 MiB,
 * more than a core's share of the last-level cache on most CPUs, so such an
 * output would not be found in cache by its consumer anyway.
 * $SMELT_STREAM_MIN_BYTES overrides it (0: never). */
int64_t rt_cc_stream_min_bytes(void);
/* A symbol of the object (NULL if absent). */
void *rt_so_sym(rt_so *so, const char *name);
/* dlclose and free; NULL is a no-op. Symbols taken from so die with it. */
void rt_so_close(rt_so *so);
/* The directory used for the cache (for messages and tests), written to buf;
 * returns buf, or NULL if no variable names one or it does not fit in cap. */
const char *rt_cache_dir(char *buf, size_t cap);

typedef void (*rt_kernel_fn)(int64_t wg, void *const *bufs);

typedef struct rt_pool rt_pool;

/* n_threads <= 0: one per online core. The pool starts n_threads - 1 workers;
 * the thread calling rt_pool_run is the last one. Idle workers spin briefly,
 * then sleep. Returns NULL on failure. */
rt_pool *rt_pool_new(int n_threads);
void rt_pool_free(rt_pool *p);
int rt_pool_threads(const rt_pool *p);
/* Workgroups are handed out dynamically in chunks, in no particular order.
 * With one thread or one workgroup, runs inline in the caller. Not reentrant:
 * callers serialize runs on one pool (fn must not call rt_pool_run on it). */
void rt_pool_run(rt_pool *p, rt_kernel_fn fn, int64_t n_workgroups, void *const *bufs);
/* Several kernels' workgroups in one run: the workgroups of all jobs are
 * handed out together (a thread done with one job's share moves on to the
 * next job's), for kernels that touch no memory another of them writes. */
typedef struct rt_job {
    rt_kernel_fn fn;
    void *const *bufs;
    int64_t n_workgroups;
} rt_job;
void rt_pool_run_jobs(rt_pool *p, const rt_job *jobs, int n_jobs);

#endif
