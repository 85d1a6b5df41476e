/*
 * device.h — one interface over every device kind: the CPU (system compiler,
 * dlopen, thread pool), OpenCL (ICD loader) and CUDA (driver API + NVRTC).
 *
 * A device runs *modules* (one translation unit of emitted source, built once
 * and cached on disk) whose *kernels* are dispatched over a number of
 * workgroups of `wg_size` threads each. Memory is a handle (rt_mem) plus a
 * byte offset: a host pointer on the CPU, a cl_mem on OpenCL, a CUdeviceptr
 * on CUDA. The program (api/program.c) drives every device the same way:
 *
 *     open → build(source) → kernel(name)... → alloc + upload(constants)
 *     per run: the command list of plan/commands.h — copy (upload/download),
 *              dispatch and barrier (barrier, or finish where the host waits)
 *
 * On a device with `host_memory` (the CPU) an rt_mem is a host pointer, so
 * the program binds constants and inputs in place instead of copying them.
 *
 * Names (from `--device`): "cpu", "opencl" (the first OpenCL device of the
 * first platform that has one), "opencl:N" (the N-th over all platforms),
 * "cuda", "cuda:N". OpenCL and CUDA are loaded with dlopen at run time
 * (libOpenCL.so.1; libcuda.so.1 and libnvrtc.so), so smelt never links
 * against them; a missing library, platform or device is SMELT_ERR_DEVICE
 * naming the device and what is missing.
 *
 * Program builds are cached in the compile cache directory of rt.h, keyed by
 * a hash of the source, the build options and the device's identity (name,
 * driver version): OpenCL keeps program binaries, CUDA keeps PTX/cubins.
 */
#ifndef SMELT_RT_DEVICE_H
#define SMELT_RT_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "smelt.h"

typedef struct rt_device rt_device;
typedef struct rt_module rt_module;
typedef struct rt_kernel rt_kernel;
typedef uint64_t rt_mem; /* 0 is "no memory" */

/* Which source dialect a device compiles (the emit_lang of target/emit.h). */
typedef enum rt_lang { RT_LANG_C, RT_LANG_OPENCL, RT_LANG_CUDA } rt_lang;

/* One buffer argument of a dispatch. */
typedef struct rt_arg {
    rt_mem mem;
    int64_t offset; /* bytes; a multiple of the element size */
} rt_arg;

typedef struct rt_device_ops {
    const char *kind;   /* "cpu", "opencl", "cuda" */
    rt_lang lang;
    bool host_memory;   /* rt_mem is a host pointer: bind host data, no copies */
    /* index: the N of "kind:N" (0 for plain "kind"); threads: CPU workers. */
    smelt_status (*open)(int index, int threads, rt_device **out);
    /* Build (or load from the cache) a module; *cached says which (may be NULL). */
    smelt_status (*build)(rt_device *d, const char *source, rt_module **out, bool *cached);
    smelt_status (*kernel)(rt_device *d, rt_module *m, const char *name, rt_kernel **out);
    smelt_status (*alloc)(rt_device *d, size_t bytes, rt_mem *out);
    smelt_status (*upload)(rt_device *d, rt_mem dst, size_t offset, const void *src, size_t bytes);
    smelt_status (*download)(rt_device *d, rt_mem src, size_t offset, void *dst, size_t bytes);
    /* Enqueue kernel k over n_workgroups x wg_size threads with buffer i at
     * args[i]. May return before the kernel ran; finish() waits. Dispatches
     * with no barrier between them may run at the same time. */
    smelt_status (*dispatch)(rt_device *d, rt_kernel *k, int n_args, const rt_arg *args,
                             int64_t n_workgroups, int wg_size);
    /* Later dispatches see everything earlier ones wrote (and write nothing
     * they still read). NULL: dispatches already run one after another (an
     * in-order queue). */
    smelt_status (*barrier)(rt_device *d);
    smelt_status (*finish)(rt_device *d);
    void (*mem_free)(rt_device *d, rt_mem m);
    void (*module_free)(rt_device *d, rt_module *m); /* its kernels die with it */
    void (*close)(rt_device *d);
} rt_device_ops;

/* Every device starts with this header. */
struct rt_device {
    const rt_device_ops *ops;
    char name[160];     /* "opencl:0 (pthread-skylake...)": for messages */
    char ident[256];    /* what decides compiled code: part of the cache key */
    int64_t smem_bytes; /* workgroup (local/shared) memory one workgroup may use; 0: not applicable */
    int max_wg;         /* threads one workgroup may have; 0: not applicable (the CPU's workgroups are loops) */
};

extern const rt_device_ops rt_cpu_ops, rt_opencl_ops, rt_cuda_ops;

/* A CPU module from the compiled object cached under object_key
 * (rt_cc_object_key) whose bytes hash to digest (rt_cc_object_digest),
 * without its source; SMELT_ERR_IO when it is not in the cache or fails the
 * check (the caller builds from source). */
smelt_status rt_cpu_module_load(const char *object_key, const uint64_t digest[2], rt_module **out);

/* Open the device named by `spec` ("cpu", "opencl:1", ...; see above).
 * The name must be exactly one device, no list. */
smelt_status rt_device_open(const char *spec, int threads, rt_device **out);
static inline void rt_device_close(rt_device *d)
{
    if (d) d->ops->close(d);
}

/* Whether `spec` names a device kind smelt knows (without opening it). */
bool rt_device_name_ok(const char *spec, size_t len);

/* The on-disk cache for device builds: the file <cache dir>/<key><suffix>,
 * where key hashes the parts given. rt_cache_read returns malloc'd bytes
 * (NULL when absent); rt_cache_write is atomic (temporary + rename) and
 * failures to write are ignored (the cache is an optimisation). */
void rt_cache_key(char key[33], const char *const *parts, const size_t *lens, int n);
void *rt_cache_read(const char *key, const char *suffix, size_t *len);
void rt_cache_write(const char *key, const char *suffix, const void *data, size_t len);

#endif
