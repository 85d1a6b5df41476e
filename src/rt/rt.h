/*
 * rt.h — the CPU runtime: the system compiler, the compile cache, and the
 * thread pool that runs a kernel's workgroups.
 *
 * Compiling: rt_cc_load() writes the source to the cache directory and runs
 *     $SMELT_CC (default "cc") -march=native [-mprefer-vector-width=512] -O3 -fPIC -shared -std=c11 ...
 * producing a shared object named by a hash of (source, flags, compiler
 * version string, user); a later call with the same source finds the object,
 * checks its recorded SHA-256 and only dlopens it. The cache lives in
 * $SMELT_CACHE_DIR, else $XDG_CACHE_HOME/smelt, else ~/.cache/smelt; see
 * rt_cache_open below for what it trusts. Writes are atomic (temporary name +
 * rename), so concurrent processes sharing a cache are safe.
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
/* The cache key rt_cc_load files source's object under (32 hex digits), for
 * the program cache (api/program_cache.c) to find the object again without
 * the source. */
smelt_status rt_cc_object_key(const char *source, char key[33]);
/* The cached object's bytes under hash_wide (rt_cache_wide_digest). */
smelt_status rt_cc_object_digest(const char *key, uint64_t digest[2]);
/* dlopen the cached object of that key if it is there and its bytes hash to
 * digest; SMELT_ERR_IO when not: the caller compiles. */
smelt_status rt_cc_load_key(const char *key, const uint64_t digest[2], rt_so **out);
/* f32 lanes of the vectors kernels compiled by rt_cc_load use on this host:
 * 16 where the CPU has AVX-512F (the flags ask for 512-bit vectors), 8 with
 * AVX, else 4; $SMELT_VECTOR_WIDTH (4, 8 or 16) overrides it, for a SMELT_CC
 * that targets another CPU. Lowerings size register-wide steps by it (TargetInfo). */
int rt_cc_vector_width(void);
/* What -march=native compiles kernels for on this CPU, as text: the ISA and
 * the extensions that change generated code by name (x86: avx, avx2, fma,
 * avx512f, avx512bw, avx512vnni, avx512vbmi, avx512bf16, ...), then every
 * CPUID feature word the compiler's native target is read from, in hex (x86:
 * leaf 1 ECX/EDX, leaf 7 subleaf 0 EBX/ECX/EDX and subleaf 1 EAX, leaf
 * 0x80000001 ECX/EDX, and XCR0, the register state the OS enables). Part of
 * the compiled object's cache key (rt_cc_object_key) and of the CPU device's
 * identity (the program cache's key): code compiled for one CPU may use
 * instructions another of the same vector width lacks (the int16 k-pair and
 * 8-bit GEMM helpers use vpdpwssd and vpdpbusd where the compiler targets
 * AVX512-VNNI), so a cache shared between hosts must not hand it over. */
void rt_cc_cpu_isa(char *buf, size_t cap);
/* Whether kernels compiled by rt_cc_load have 8-bit dot products at 16 lanes:
 * the vector width is 16 and the compiler, given the native flags, targets
 * AVX512BW and AVX512-VNNI (vpdpbusd: uint8 x int8 quads into int32), asked of
 * the compiler itself (its predefined macros, once per $SMELT_CC), so a
 * SMELT_CC that turns VNNI off gets false. Lowerings choose the k-quad form
 * of integer convolutions by it (graph_pack_weights asks it lazily). */
bool rt_cc_int8_dot(void);
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
/* The directory named for the cache (for messages and tests), written to buf;
 * returns buf, or NULL if no variable names one or it does not fit in cap. */
const char *rt_cache_dir(char *buf, size_t cap);

/* The compile cache trusts nothing it did not write (rt/cache.c):
 *  - the directory (created 0700 where missing) must be owned by this user
 *    and writable by no one else; a directory that is not (another user's, or
 *    a shared one like /tmp) is not used itself: the cache goes to its private
 *    subdirectory smelt-<uid>, which must pass the same rule, else an error;
 *  - every entry is written 0600 under a temporary name, its SHA-256 recorded
 *    in <entry>.sha256, and both renamed into place (atomic for concurrent
 *    processes);
 *  - an entry is believed only if it is a regular file of ours, writable by
 *    no one else, opened without following links, whose bytes hash to the
 *    recorded digest. Anything else (absent, truncated, bit-flipped, planted,
 *    a link, a FIFO) reads as a miss and is rebuilt; it is never loaded.
 * The ownership rule is what keeps other users out; the digest is what
 * catches corruption (a crash mid-write on another file system, a disk error,
 * an edit) before a broken object is mapped and run. */
#define RT_CACHE_PATH_CAP 4096
typedef struct rt_cache {
    int dfd;                     /* the checked directory; entries are opened relative to it */
    char dir[RT_CACHE_PATH_CAP]; /* its path, for the compiler and for messages */
} rt_cache;
/* Finds, creates if needed and checks the directory; SMELT_ERR_IO naming it
 * and the rule when no private directory can be had. */
smelt_status rt_cache_open(rt_cache *c);
void rt_cache_close(rt_cache *c);
/* An fd at offset 0 on the verified entry `name` (its size in *size, may be
 * NULL), or -1 when it is absent or fails any check above. */
int rt_cache_open_verified(const rt_cache *c, const char *name, size_t *size);
/* A verified entry's bytes under hash_wide (core/hash.h), for a record that
 * is itself verified (a program cache entry) to name the entry by; and the
 * entry opened if it is a file of ours whose bytes hash to `want` (-1 if
 * not): the SHA-256 check's equal at a tenth of its cost. */
bool rt_cache_wide_digest(const rt_cache *c, const char *name, uint64_t out[2]);
int rt_cache_open_wide(const rt_cache *c, const char *name, const uint64_t want[2]);
/* Publishes `tmp` (a file of ours in the directory) as `name`: made 0600, its
 * digest recorded, renamed into place. *fd_out: an fd on the published bytes
 * (the caller closes it), so the caller uses exactly what it hashed. */
smelt_status rt_cache_publish(const rt_cache *c, const char *tmp, const char *name, int *fd_out);

/* Entries that carry their own digest (the program cache's, api/program_cache.c).
 * rt_cache_map: the entry `name` mapped read-only and private (its size in
 * *size; munmap it), if it is a regular file of ours writable by no one else,
 * else NULL; the caller checks the bytes before believing any. Entries are
 * only ever replaced by rename, so a mapping keeps the bytes it was checked on.
 * rt_cache_put: the parts written 0600 under a temporary name and renamed to
 * `name` (atomic for concurrent processes).
 * rt_cache_prune: entries ending in `suffix` beyond max_bytes in all are
 * deleted, oldest first (by modification time), never `keep`. */
struct iovec;
void *rt_cache_map(const rt_cache *c, const char *name, size_t *size);
smelt_status rt_cache_put(const rt_cache *c, const char *name, const struct iovec *parts, int n_parts);
void rt_cache_prune(const rt_cache *c, const char *suffix, int64_t max_bytes, const char *keep);

typedef void (*rt_kernel_fn)(int64_t wg, void *const *bufs);

typedef struct rt_pool rt_pool;

/* n_threads <= 0: one per online core. The pool starts n_threads - 1 workers;
 * the thread calling rt_pool_run is the last one. Idle workers spin while the
 * run they left is open and briefly after, then sleep. Returns NULL on failure. */
rt_pool *rt_pool_new(int n_threads);
void rt_pool_free(rt_pool *p);
int rt_pool_threads(const rt_pool *p);
/* How many runs have woken the workers (the others ran inline on the caller:
 * one thread, one workgroup, or a kernel timed as cheaper than a wake). */
int64_t rt_pool_spread_runs(const rt_pool *p);
/* How many times a worker has gone to sleep (idle past its spin after a run
 * closed); a run that finds one asleep waits for a wake. */
int64_t rt_pool_sleeps(rt_pool *p);
/* Workgroups are handed out dynamically in chunks: each thread takes from a
 * contiguous share of its own first (the caller's the lowest), then from the
 * others'; in no order across threads.
 * With one thread or one workgroup, or when the pool has timed the kernels
 * and they are worth less than a wake of the workers (where one sleeps) or a
 * hand-off to them (where all spin), runs inline in the caller. Not reentrant:
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
