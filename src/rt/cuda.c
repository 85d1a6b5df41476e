/*
 * cuda.c — the CUDA device (rt/device.h): the driver API (libcuda.so.1) and
 * NVRTC (libnvrtc.so), both opened with dlopen; the prototypes we use are
 * declared here, so building smelt needs no CUDA headers.
 *
 * needs: an NVIDIA driver and NVRTC at run time. gives: the device's primary
 *        context; buffers are CUdeviceptr (an argument is base + offset); the
 *        module is a CUBIN for the device's own sm_XY, cached on disk keyed by
 *        (source, options, NVRTC version, device, driver version).
 * rt_cuda_check() compiles without a GPU: the conformance sweep uses it to
 * prove every emitted kernel builds for sm_90 and sm_80 without warnings.
 */
#include "rt/cuda.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/diag.h"
#include "rt/device.h"

typedef int CUresult; /* 0: CUDA_SUCCESS */
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef unsigned long long CUdeviceptr;
enum { CU_ATTR_MAX_THREADS_PER_BLOCK = 1, CU_ATTR_SMEM_PER_BLOCK = 8, CU_ATTR_CC_MAJOR = 75, CU_ATTR_CC_MINOR = 76 };

typedef int nvrtcResult; /* 0: NVRTC_SUCCESS */
typedef struct _nvrtcProgram *nvrtcProgram;

#define CU_FUNCS(X)                                                                                       \
    X(cuInit, CUresult, (unsigned)) X(cuDeviceGetCount, CUresult, (int *))                                  \
    X(cuDeviceGet, CUresult, (CUdevice *, int)) X(cuDeviceGetName, CUresult, (char *, int, CUdevice))        \
    X(cuDeviceGetAttribute, CUresult, (int *, int, CUdevice)) X(cuDriverGetVersion, CUresult, (int *))      \
    X(cuDevicePrimaryCtxRetain, CUresult, (CUcontext *, CUdevice))                                          \
    X(cuDevicePrimaryCtxRelease_v2, CUresult, (CUdevice)) X(cuCtxSetCurrent, CUresult, (CUcontext))         \
    X(cuModuleLoadData, CUresult, (CUmodule *, const void *))                                               \
    X(cuModuleGetFunction, CUresult, (CUfunction *, CUmodule, const char *))                                \
    X(cuModuleUnload, CUresult, (CUmodule)) X(cuMemAlloc_v2, CUresult, (CUdeviceptr *, size_t))             \
    X(cuMemFree_v2, CUresult, (CUdeviceptr)) X(cuMemcpyHtoD_v2, CUresult, (CUdeviceptr, const void *, size_t)) \
    X(cuMemcpyDtoH_v2, CUresult, (void *, CUdeviceptr, size_t))                                             \
    X(cuLaunchKernel, CUresult, (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,    \
                                 unsigned, void *, void **, void **))                                       \
    X(cuCtxSynchronize, CUresult, (void)) X(cuGetErrorString, CUresult, (CUresult, const char **))

#define NVRTC_FUNCS(X)                                                                                    \
    X(nvrtcVersion, nvrtcResult, (int *, int *))                                                            \
    X(nvrtcCreateProgram, nvrtcResult, (nvrtcProgram *, const char *, const char *, int, const char *const *, \
                                        const char *const *))                                               \
    X(nvrtcCompileProgram, nvrtcResult, (nvrtcProgram, int, const char *const *))                           \
    X(nvrtcGetProgramLogSize, nvrtcResult, (nvrtcProgram, size_t *))                                        \
    X(nvrtcGetProgramLog, nvrtcResult, (nvrtcProgram, char *))                                              \
    X(nvrtcGetCUBINSize, nvrtcResult, (nvrtcProgram, size_t *))                                             \
    X(nvrtcGetCUBIN, nvrtcResult, (nvrtcProgram, char *))                                                   \
    X(nvrtcDestroyProgram, nvrtcResult, (nvrtcProgram *))

#define DECL(name, ret, args) ret(*name) args;
static struct {
    CU_FUNCS(DECL)
} cu;
static struct {
    NVRTC_FUNCS(DECL)
} nv;
#undef DECL

static pthread_once_t cu_once = PTHREAD_ONCE_INIT, nv_once = PTHREAD_ONCE_INIT;
static char cu_error[256], nv_error[256];

static void *open_first(const char *const *names, char *err, size_t cap, const char *what)
{
    for (int i = 0; names[i]; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (h) return h;
    }
    snprintf(err, cap, "%s", what);
    return NULL;
}

#define LOAD(name, ret, args)                                                                   \
    if (!err[0] && !(*(void **)&tab.name = dlsym(h, #name))) snprintf(err, sizeof err, "%s lacks %s", lib, #name);

static void cu_load(void)
{
    static const char *const names[] = {"libcuda.so.1", "libcuda.so", NULL};
    void *h = open_first(names, cu_error, sizeof cu_error, "no NVIDIA driver (libcuda.so.1 not found)");
    if (!h) return;
#define tab cu
#define err cu_error
    const char *lib = "libcuda.so.1";
    CU_FUNCS(LOAD)
#undef tab
#undef err
    if (!cu_error[0] && cu.cuInit(0) != 0) snprintf(cu_error, sizeof cu_error, "the NVIDIA driver failed to initialise (cuInit)");
}

static void nv_load(void)
{
    static const char *const names[] = {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12",
                                        "/usr/local/cuda/lib64/libnvrtc.so", NULL};
    void *h = open_first(names, nv_error, sizeof nv_error, "no NVRTC (libnvrtc.so not found)");
    if (!h) return;
#define tab nv
#define err nv_error
    const char *lib = "libnvrtc.so";
    NVRTC_FUNCS(LOAD)
#undef tab
#undef err
}

bool rt_cuda_nvrtc_available(void)
{
    pthread_once(&nv_once, nv_load);
    return !nv_error[0];
}

/* Compile with NVRTC for `arch` ("sm_90"); *log gets NVRTC's messages
 * (malloc'd, "" when none) and *cubin the CUBIN when asked. */
static smelt_status nvrtc_build(const char *source, const char *arch, char **log, void **cubin, size_t *cubin_len)
{
    *log = NULL;
    pthread_once(&nv_once, nv_load);
    if (nv_error[0]) return diag_fail(SMELT_ERR_DEVICE, "cuda: %s", nv_error);
    char opt_arch[64];
    snprintf(opt_arch, sizeof opt_arch, "--gpu-architecture=%s", arch);
    const char *opts[] = {opt_arch, "--std=c++17"};
    nvrtcProgram prog;
    if (nv.nvrtcCreateProgram(&prog, source, "smelt.cu", 0, NULL, NULL) != 0)
        return diag_fail(SMELT_ERR_NOMEM, "cuda: nvrtcCreateProgram failed");
    nvrtcResult r = nv.nvrtcCompileProgram(prog, 2, opts);
    size_t n = 0;
    nv.nvrtcGetProgramLogSize(prog, &n);
    *log = calloc(n + 1, 1);
    if (*log && n) nv.nvrtcGetProgramLog(prog, *log);
    smelt_status st = SMELT_OK;
    if (r != 0) {
        st = diag_fail(SMELT_ERR_COMPILE, "cuda: NVRTC rejected the generated source for %s:\n%.2000s", arch,
                       *log ? *log : "");
    } else if (cubin) {
        nv.nvrtcGetCUBINSize(prog, cubin_len);
        *cubin = malloc(*cubin_len + 1);
        if (!*cubin || nv.nvrtcGetCUBIN(prog, *cubin) != 0) st = diag_fail(SMELT_ERR_NOMEM, "cuda: no CUBIN");
    }
    nv.nvrtcDestroyProgram(&prog);
    return st;
}

smelt_status rt_cuda_check(const char *source, const char *arch)
{
    char *log = NULL;
    smelt_status st = nvrtc_build(source, arch, &log, NULL, NULL);
    /* NVRTC's log holds only diagnostics: anything in it is a warning. */
    if (!st && log && strspn(log, " \t\r\n") != strlen(log))
        st = diag_fail(SMELT_ERR_COMPILE, "cuda: NVRTC warned on the generated source for %s:\n%.2000s", arch, log);
    free(log);
    return st;
}

typedef struct cu_dev {
    rt_device base;
    CUdevice dev;
    CUcontext ctx;
    char arch[16];
    void **params; /* kernel parameter slots of the running dispatch */
    CUdeviceptr *ptrs;
    int cap;
} cu_dev;

struct rt_module {
    CUmodule mod;
};

static smelt_status cu_fail(const char *what, CUresult r)
{
    const char *s = NULL;
    if (cu.cuGetErrorString) cu.cuGetErrorString(r, &s);
    return diag_fail(SMELT_ERR_DEVICE, "cuda: %s failed: %s (%d)", what, s ? s : "?", r);
}

static smelt_status cuda_open(int index, int threads, rt_device **out)
{
    (void)threads;
    pthread_once(&cu_once, cu_load);
    if (cu_error[0]) return diag_fail(SMELT_ERR_DEVICE, "device 'cuda:%d': %s", index, cu_error);
    if (!rt_cuda_nvrtc_available()) return diag_fail(SMELT_ERR_DEVICE, "device 'cuda:%d': %s", index, nv_error);
    int n = 0;
    if (cu.cuDeviceGetCount(&n) != 0 || index >= n)
        return diag_fail(SMELT_ERR_DEVICE, "device 'cuda:%d' is not available (%d CUDA device%s found)", index, n,
                         n == 1 ? "" : "s");
    cu_dev *d = calloc(1, sizeof *d);
    if (!d) return diag_fail(SMELT_ERR_NOMEM, "out of memory");
    d->base.ops = &rt_cuda_ops;
    CUresult r = cu.cuDeviceGet(&d->dev, index);
    if (!r) r = cu.cuDevicePrimaryCtxRetain(&d->ctx, d->dev);
    if (!r) r = cu.cuCtxSetCurrent(d->ctx);
    if (r) {
        free(d);
        return cu_fail("opening the device", r);
    }
    char name[128] = "";
    int major = 0, minor = 0, drv = 0, nvm = 0, nvn = 0;
    cu.cuDeviceGetName(name, sizeof name - 1, d->dev);
    cu.cuDeviceGetAttribute(&major, CU_ATTR_CC_MAJOR, d->dev);
    cu.cuDeviceGetAttribute(&minor, CU_ATTR_CC_MINOR, d->dev);
    int smem = 0; /* static __shared__ arrays: 48 KiB on every architecture so far */
    if (!cu.cuDeviceGetAttribute(&smem, CU_ATTR_SMEM_PER_BLOCK, d->dev)) d->base.smem_bytes = smem;
    int per_block = 0;
    if (!cu.cuDeviceGetAttribute(&per_block, CU_ATTR_MAX_THREADS_PER_BLOCK, d->dev)) d->base.max_wg = per_block;
    cu.cuDriverGetVersion(&drv);
    nv.nvrtcVersion(&nvm, &nvn);
    snprintf(d->arch, sizeof d->arch, "sm_%d%d", major, minor);
    snprintf(d->base.name, sizeof d->base.name, "cuda:%d (%.100s, %s)", index, name, d->arch);
    snprintf(d->base.ident, sizeof d->base.ident, "cuda|%.120s|%s|driver %d|nvrtc %d.%d", name, d->arch, drv, nvm, nvn);
    *out = &d->base;
    return SMELT_OK;
}

static smelt_status cuda_build(rt_device *dev, const char *source, rt_module **out, bool *cached)
{
    cu_dev *d = (cu_dev *)dev;
    if (cached) *cached = false;
    const char *parts[] = {source, d->arch, d->base.ident};
    size_t lens[] = {strlen(source), strlen(d->arch), strlen(d->base.ident)};
    char key[33];
    rt_cache_key(key, parts, lens, 3);
    size_t len = 0;
    void *cubin = rt_cache_read(key, ".cubin", &len);
    if (cubin && cached) *cached = true;
    if (!cubin) {
        char *log = NULL;
        smelt_status st = nvrtc_build(source, d->arch, &log, &cubin, &len);
        free(log);
        if (st) {
            rt_cache_write(key, ".cu", source, strlen(source));
            return st;
        }
        rt_cache_write(key, ".cubin", cubin, len);
    }
    rt_module *m = calloc(1, sizeof *m);
    CUresult r = m ? cu.cuModuleLoadData(&m->mod, cubin) : 0;
    free(cubin);
    if (!m) return diag_fail(SMELT_ERR_NOMEM, "out of memory");
    if (r) {
        free(m);
        return cu_fail("loading the module", r);
    }
    *out = m;
    return SMELT_OK;
}

static smelt_status cuda_kernel(rt_device *d, rt_module *m, const char *name, rt_kernel **out)
{
    (void)d;
    CUfunction f;
    CUresult r = cu.cuModuleGetFunction(&f, m->mod, name);
    if (r) return diag_fail(SMELT_ERR_INTERNAL, "cuda: kernel %s missing from the module (%d)", name, r);
    *out = (rt_kernel *)f;
    return SMELT_OK;
}

static smelt_status cuda_alloc(rt_device *d, size_t bytes, rt_mem *out)
{
    CUdeviceptr p;
    CUresult r = cu.cuMemAlloc_v2(&p, bytes ? bytes : 1);
    if (r) return diag_fail(SMELT_ERR_NOMEM, "cuda: cannot allocate %zu bytes on %s (%d)", bytes, d->name, r);
    *out = p;
    return SMELT_OK;
}

static smelt_status cuda_upload(rt_device *d, rt_mem dst, size_t offset, const void *src, size_t bytes)
{
    (void)d;
    CUresult r = bytes ? cu.cuMemcpyHtoD_v2(dst + offset, src, bytes) : 0;
    return r ? cu_fail("copying to the device", r) : SMELT_OK;
}

static smelt_status cuda_download(rt_device *d, rt_mem src, size_t offset, void *dst, size_t bytes)
{
    (void)d;
    CUresult r = bytes ? cu.cuMemcpyDtoH_v2(dst, src + offset, bytes) : 0;
    return r ? cu_fail("copying from the device", r) : SMELT_OK;
}

static smelt_status cuda_dispatch(rt_device *dev, rt_kernel *k, int n_args, const rt_arg *args, int64_t n_wg,
                                  int wg_size)
{
    cu_dev *d = (cu_dev *)dev;
    if (n_args > d->cap) {
        void **p = realloc(d->params, sizeof(void *) * (size_t)n_args);
        if (p) d->params = p;
        CUdeviceptr *q = realloc(d->ptrs, sizeof(CUdeviceptr) * (size_t)n_args);
        if (q) d->ptrs = q;
        if (!p || !q) return diag_fail(SMELT_ERR_NOMEM, "out of memory");
        d->cap = n_args;
    }
    int n = 0;
    for (int i = 0; i < n_args; i++) {
        if (args[i].offset < 0) continue; /* workgroup memory: not an argument */
        d->ptrs[n] = args[i].mem ? args[i].mem + (CUdeviceptr)args[i].offset : 0;
        d->params[n] = &d->ptrs[n];
        n++;
    }
    if (n_wg > 0x7fffffff) return diag_fail(SMELT_ERR_UNSUPPORTED, "cuda: %lld workgroups exceed the grid", (long long)n_wg);
    CUresult r = cu.cuLaunchKernel((CUfunction)k, (unsigned)n_wg, 1, 1, (unsigned)wg_size, 1, 1, 0, NULL, d->params, NULL);
    return r ? cu_fail("launching a kernel", r) : SMELT_OK;
}

static smelt_status cuda_finish(rt_device *d)
{
    (void)d;
    CUresult r = cu.cuCtxSynchronize();
    return r ? cu_fail("running the kernels", r) : SMELT_OK;
}

static void cuda_mem_free(rt_device *d, rt_mem m)
{
    (void)d;
    if (m) cu.cuMemFree_v2(m);
}

static void cuda_module_free(rt_device *d, rt_module *m)
{
    (void)d;
    if (!m) return;
    cu.cuModuleUnload(m->mod);
    free(m);
}

static void cuda_close(rt_device *dev)
{
    cu_dev *d = (cu_dev *)dev;
    cu.cuDevicePrimaryCtxRelease_v2(d->dev);
    free(d->params);
    free(d->ptrs);
    free(d);
}

const rt_device_ops rt_cuda_ops = {
    "cuda", RT_LANG_CUDA, false, cuda_open, cuda_build, cuda_kernel, cuda_alloc, cuda_upload, cuda_download,
    cuda_dispatch, NULL, cuda_finish, cuda_mem_free, cuda_module_free, cuda_close,
};
