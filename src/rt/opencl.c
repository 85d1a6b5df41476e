/*
 * opencl.c — the OpenCL device (rt/device.h), through the ICD loader
 * libOpenCL.so.1 opened with dlopen: smelt does not link against OpenCL.
 *
 * needs: an ICD loader with at least one platform (e.g. PoCL on the CPU).
 * gives: one context and in-order queue per device; buffers are cl_mem; a
 *        kernel's buffer i is the argument pair (cl_mem, byte offset), so the
 *        activation arena is one cl_mem. Program binaries are cached on disk
 *        keyed by (source, options, platform, device, driver version).
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/diag.h"
#include "rt/device.h"

/* The entry points we use, typed after the declarations in CL/cl.h. */
#define CL_FUNCS(X)                                                                                  \
    X(clGetPlatformIDs) X(clGetPlatformInfo) X(clGetDeviceIDs) X(clGetDeviceInfo) X(clCreateContext)   \
    X(clCreateCommandQueue) X(clCreateProgramWithSource) X(clCreateProgramWithBinary) X(clBuildProgram) \
    X(clGetProgramBuildInfo) X(clGetProgramInfo) X(clCreateKernel) X(clSetKernelArg)                   \
    X(clEnqueueNDRangeKernel) X(clFinish) X(clCreateBuffer) X(clEnqueueWriteBuffer)                    \
    X(clEnqueueReadBuffer) X(clReleaseMemObject) X(clReleaseKernel) X(clReleaseProgram)                \
    X(clReleaseCommandQueue) X(clReleaseContext)

static struct {
#define X(f) __typeof__(&f) f;
    CL_FUNCS(X)
#undef X
} cl;
static void *cl_lib;
static pthread_once_t cl_once = PTHREAD_ONCE_INIT;
static char cl_load_error[256];

static void cl_load(void)
{
    cl_lib = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!cl_lib) cl_lib = dlopen("libOpenCL.so", RTLD_NOW | RTLD_LOCAL);
    if (!cl_lib) {
        const char *e = dlerror();
        snprintf(cl_load_error, sizeof cl_load_error, "no OpenCL ICD loader (libOpenCL.so.1): %s", e ? e : "?");
        return;
    }
#define X(f)                                                                                      \
    if (!(*(void **)&cl.f = dlsym(cl_lib, #f))) {                                                \
        snprintf(cl_load_error, sizeof cl_load_error, "libOpenCL.so.1 lacks %s", #f);            \
        return;                                                                                   \
    }
    CL_FUNCS(X)
#undef X
}

typedef struct cl_dev {
    rt_device base;
    cl_device_id id;
    cl_context ctx;
    cl_command_queue q;
} cl_dev;

struct rt_kernel {
    cl_kernel k;
    rt_kernel *next;
};

struct rt_module {
    cl_program prog;
    rt_kernel *kernels;
};

static smelt_status cl_fail(const char *what, cl_int err)
{
    return diag_fail(SMELT_ERR_DEVICE, "opencl: %s failed (error %d)", what, (int)err);
}

static smelt_status ocl_open(int index, int threads, rt_device **out)
{
    (void)threads;
    pthread_once(&cl_once, cl_load);
    if (cl_load_error[0]) return diag_fail(SMELT_ERR_DEVICE, "device 'opencl:%d': %s", index, cl_load_error);
    cl_platform_id plats[16];
    cl_uint n_plat = 0;
    cl_int err = cl.clGetPlatformIDs(16, plats, &n_plat);
    if (err != CL_SUCCESS || n_plat == 0)
        return diag_fail(SMELT_ERR_DEVICE, "device 'opencl:%d': no OpenCL platform is installed (an ICD such as pocl-opencl-icd)", index);
    int seen = 0;
    for (cl_uint p = 0; p < n_plat && p < 16; p++) {
        cl_device_id ids[64];
        cl_uint n = 0;
        if (cl.clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 64, ids, &n) != CL_SUCCESS) continue;
        if (index >= seen + (int)n) {
            seen += (int)n;
            continue;
        }
        cl_dev *d = calloc(1, sizeof *d);
        if (!d) return diag_fail(SMELT_ERR_NOMEM, "out of memory");
        d->base.ops = &rt_opencl_ops;
        d->id = ids[index - seen];
        char pname[128] = "", dname[128] = "", drv[64] = "", ver[64] = "";
        cl.clGetPlatformInfo(plats[p], CL_PLATFORM_NAME, sizeof pname - 1, pname, NULL);
        cl.clGetDeviceInfo(d->id, CL_DEVICE_NAME, sizeof dname - 1, dname, NULL);
        cl.clGetDeviceInfo(d->id, CL_DRIVER_VERSION, sizeof drv - 1, drv, NULL);
        cl.clGetDeviceInfo(d->id, CL_DEVICE_VERSION, sizeof ver - 1, ver, NULL);
        cl_ulong local_mem = 0;
        if (cl.clGetDeviceInfo(d->id, CL_DEVICE_LOCAL_MEM_SIZE, sizeof local_mem, &local_mem, NULL) == CL_SUCCESS)
            d->base.smem_bytes = (int64_t)local_mem;
        size_t max_wg = 0;
        if (cl.clGetDeviceInfo(d->id, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof max_wg, &max_wg, NULL) == CL_SUCCESS)
            d->base.max_wg = max_wg > 1u << 20 ? 1 << 20 : (int)max_wg;
        snprintf(d->base.name, sizeof d->base.name, "opencl:%d (%.100s)", index, dname);
        snprintf(d->base.ident, sizeof d->base.ident, "opencl|%.60s|%.80s|%.50s|%.50s", pname, dname, drv, ver);
        d->ctx = cl.clCreateContext(NULL, 1, &d->id, NULL, NULL, &err);
        if (err == CL_SUCCESS) d->q = cl.clCreateCommandQueue(d->ctx, d->id, 0, &err);
        if (err != CL_SUCCESS) {
            if (d->ctx) cl.clReleaseContext(d->ctx);
            free(d);
            return cl_fail("creating a context and queue", err);
        }
        *out = &d->base;
        return SMELT_OK;
    }
    return diag_fail(SMELT_ERR_DEVICE, "device 'opencl:%d' is not available (%d OpenCL device%s found)", index, seen,
                     seen == 1 ? "" : "s");
}

static const char build_options[] = "";

/* The first lines of the build log, for the error message. */
static smelt_status build_error(cl_dev *d, cl_program prog, cl_int err, const char *key)
{
    size_t n = 0;
    cl.clGetProgramBuildInfo(prog, d->id, CL_PROGRAM_BUILD_LOG, 0, NULL, &n);
    char *log = malloc(n + 1);
    if (log) {
        log[0] = 0;
        cl.clGetProgramBuildInfo(prog, d->id, CL_PROGRAM_BUILD_LOG, n, log, NULL);
        log[n] = 0;
        char *p = log;
        for (int i = 0; i < 20 && (p = strchr(p, '\n')); i++) p++;
        if (p) *p = 0;
    }
    smelt_status st = diag_fail(SMELT_ERR_COMPILE, "opencl: building the program failed (error %d; source kept as %s.cl in the cache):\n%s",
                                (int)err, key, log ? log : "");
    free(log);
    return st;
}

static smelt_status ocl_build(rt_device *dev, const char *source, rt_module **out, bool *cached)
{
    cl_dev *d = (cl_dev *)dev;
    if (cached) *cached = false;
    const char *parts[] = {source, build_options, d->base.ident};
    size_t lens[] = {strlen(source), strlen(build_options), strlen(d->base.ident)};
    char key[33];
    rt_cache_key(key, parts, lens, 3);
    cl_int err = CL_SUCCESS;
    cl_program prog = NULL;
    size_t bin_len = 0;
    unsigned char *bin = rt_cache_read(key, ".clbin", &bin_len);
    if (bin) {
        cl_int bst;
        prog = cl.clCreateProgramWithBinary(d->ctx, 1, &d->id, &bin_len, (const unsigned char **)&bin, &bst, &err);
        free(bin);
        if (err == CL_SUCCESS && bst == CL_SUCCESS && cl.clBuildProgram(prog, 1, &d->id, build_options, NULL, NULL) == CL_SUCCESS) {
            if (cached) *cached = true;
        } else {
            if (prog) cl.clReleaseProgram(prog);
            prog = NULL;
        }
    }
    if (!prog) {
        prog = cl.clCreateProgramWithSource(d->ctx, 1, &source, NULL, &err);
        if (err != CL_SUCCESS) return cl_fail("creating a program", err);
        err = cl.clBuildProgram(prog, 1, &d->id, build_options, NULL, NULL);
        if (err != CL_SUCCESS) {
            rt_cache_write(key, ".cl", source, strlen(source));
            smelt_status st = build_error(d, prog, err, key);
            cl.clReleaseProgram(prog);
            return st;
        }
        size_t n = 0;
        if (cl.clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof n, &n, NULL) == CL_SUCCESS && n > 0 &&
            (bin = malloc(n))) {
            if (cl.clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL) == CL_SUCCESS)
                rt_cache_write(key, ".clbin", bin, n);
            free(bin);
        }
    }
    rt_module *m = calloc(1, sizeof *m);
    if (!m) {
        cl.clReleaseProgram(prog);
        return diag_fail(SMELT_ERR_NOMEM, "out of memory");
    }
    m->prog = prog;
    *out = m;
    return SMELT_OK;
}

static smelt_status ocl_kernel(rt_device *d, rt_module *m, const char *name, rt_kernel **out)
{
    (void)d;
    cl_int err;
    rt_kernel *k = calloc(1, sizeof *k);
    if (!k) return diag_fail(SMELT_ERR_NOMEM, "out of memory");
    k->k = cl.clCreateKernel(m->prog, name, &err);
    if (err != CL_SUCCESS) {
        free(k);
        return diag_fail(SMELT_ERR_INTERNAL, "opencl: kernel %s missing from the program (error %d)", name, (int)err);
    }
    k->next = m->kernels;
    m->kernels = k;
    *out = k;
    return SMELT_OK;
}

static smelt_status ocl_alloc(rt_device *dev, size_t bytes, rt_mem *out)
{
    cl_dev *d = (cl_dev *)dev;
    cl_int err;
    cl_mem m = cl.clCreateBuffer(d->ctx, CL_MEM_READ_WRITE, bytes ? bytes : 1, NULL, &err);
    if (err != CL_SUCCESS)
        return diag_fail(SMELT_ERR_NOMEM, "opencl: cannot allocate %zu bytes on %s (error %d)", bytes, d->base.name, (int)err);
    *out = (rt_mem)(uintptr_t)m;
    return SMELT_OK;
}

static smelt_status ocl_upload(rt_device *dev, rt_mem dst, size_t offset, const void *src, size_t bytes)
{
    cl_dev *d = (cl_dev *)dev;
    if (!bytes) return SMELT_OK;
    cl_int err = cl.clEnqueueWriteBuffer(d->q, (cl_mem)(uintptr_t)dst, CL_TRUE, offset, bytes, src, 0, NULL, NULL);
    return err == CL_SUCCESS ? SMELT_OK : cl_fail("writing a buffer", err);
}

static smelt_status ocl_download(rt_device *dev, rt_mem src, size_t offset, void *dst, size_t bytes)
{
    cl_dev *d = (cl_dev *)dev;
    if (!bytes) return SMELT_OK;
    cl_int err = cl.clEnqueueReadBuffer(d->q, (cl_mem)(uintptr_t)src, CL_TRUE, offset, bytes, dst, 0, NULL, NULL);
    return err == CL_SUCCESS ? SMELT_OK : cl_fail("reading a buffer", err);
}

static smelt_status ocl_dispatch(rt_device *dev, rt_kernel *k, int n_args, const rt_arg *args, int64_t n_wg,
                                 int wg_size)
{
    cl_dev *d = (cl_dev *)dev;
    cl_uint a = 0;
    for (int i = 0; i < n_args; i++) {
        if (args[i].offset < 0) continue; /* workgroup memory: not an argument */
        cl_mem m = (cl_mem)(uintptr_t)args[i].mem;
        cl_long off = args[i].offset;
        cl_int err = cl.clSetKernelArg(k->k, a++, sizeof m, &m);
        if (err == CL_SUCCESS) err = cl.clSetKernelArg(k->k, a++, sizeof off, &off);
        if (err != CL_SUCCESS) return cl_fail("setting a kernel argument", err);
    }
    size_t local = (size_t)wg_size, global = (size_t)n_wg * local;
    cl_int err = cl.clEnqueueNDRangeKernel(d->q, k->k, 1, NULL, &global, &local, 0, NULL, NULL);
    return err == CL_SUCCESS ? SMELT_OK : cl_fail("launching a kernel", err);
}

static smelt_status ocl_finish(rt_device *dev)
{
    cl_int err = cl.clFinish(((cl_dev *)dev)->q);
    return err == CL_SUCCESS ? SMELT_OK : cl_fail("running the kernels", err);
}

static void ocl_mem_free(rt_device *d, rt_mem m)
{
    (void)d;
    if (m) cl.clReleaseMemObject((cl_mem)(uintptr_t)m);
}

static void ocl_module_free(rt_device *d, rt_module *m)
{
    (void)d;
    if (!m) return;
    for (rt_kernel *k = m->kernels, *next; k; k = next) {
        next = k->next;
        cl.clReleaseKernel(k->k);
        free(k);
    }
    cl.clReleaseProgram(m->prog);
    free(m);
}

static void ocl_close(rt_device *dev)
{
    cl_dev *d = (cl_dev *)dev;
    cl.clReleaseCommandQueue(d->q);
    cl.clReleaseContext(d->ctx);
    free(d);
}

const rt_device_ops rt_opencl_ops = {
    "opencl", RT_LANG_OPENCL, false, ocl_open, ocl_build, ocl_kernel, ocl_alloc, ocl_upload, ocl_download,
    ocl_dispatch, NULL, ocl_finish, ocl_mem_free, ocl_module_free, ocl_close,
};
