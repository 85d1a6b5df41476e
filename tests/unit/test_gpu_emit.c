/* OpenCL C and CUDA C from the shared emitter, run on an OpenCL device when
 * one exists (PoCL in CI) and compiled by NVRTC when it is installed. */
#include <math.h>
#include <stdlib.h>

#include "kir/smem.h"
#include "rt/cuda.h"
#include "rt/device.h"
#include "target/emit.h"
#include "test.h"

#define W 64
#define N 100

/* Tree reduction of each thread's partial through a fresh promote_reuse buffer. */
static kir_val tree_sum(kir_kernel *k, kir_val partial)
{
    int s = kir_smem_add(k, SMELT_F32, W);
    k->bufs[s].promote_reuse = true;
    kir_val lid = kir_lid(k);
    kir_store(k, s, lid, partial);
    kir_barrier(k);
    for (int h = W / 2; h >= 1; h /= 2) {
        kir_if_begin(k, kir_binary(k, KIR_LT, lid, kir_idx(k, h)));
        kir_store(k, s, lid, kir_binary(k, KIR_ADD, kir_load(k, s, lid), kir_load(k, s, kir_add(k, lid, kir_idx(k, h)))));
        kir_if_end(k);
        kir_barrier(k);
    }
    return kir_load(k, s, kir_idx(k, 0));
}

/* Per row of x[2][N]: y = x - mean(x), stats = {mean, sum((x - mean)^2)}: two
 * chained row reductions staged in workgroup memory, then a parallel loop
 * (which prefetches x ahead, so both dialects' prefetch compiles). */
static kir_kernel *two_reductions(arena *a)
{
    kir_kernel *k = kir_kernel_new(a, 7, 2, "two chained row reductions");
    k->wg_size = W;
    int x = kir_buffer_add(k, SMELT_F32, 2 * N, 0, true, false);
    int y = kir_buffer_add(k, SMELT_F32, 2 * N, 1, false, true);
    int st = kir_buffer_add(k, SMELT_F32, 4, 2, false, true);
    kir_val base = kir_mul(k, kir_wg(k), kir_idx(k, N));
    int acc = kir_var_new(k, SMELT_F32, kir_const_f(k, SMELT_F32, 0));
    kir_val j = kir_loop_begin(k, kir_lid(k), kir_idx(k, N), kir_idx(k, W));
    kir_var_set(k, acc, kir_binary(k, KIR_ADD, kir_var_get(k, acc), kir_load(k, x, kir_add(k, base, j))));
    kir_loop_end(k);
    kir_val mean = kir_binary(k, KIR_DIV, tree_sum(k, kir_var_get(k, acc)), kir_const_f(k, SMELT_F32, N));
    int sq = kir_var_new(k, SMELT_F32, kir_const_f(k, SMELT_F32, 0));
    j = kir_loop_begin(k, kir_lid(k), kir_idx(k, N), kir_idx(k, W));
    kir_val d = kir_binary(k, KIR_SUB, kir_load(k, x, kir_add(k, base, j)), mean);
    kir_var_set(k, sq, kir_binary(k, KIR_ADD, kir_var_get(k, sq), kir_binary(k, KIR_MUL, d, d)));
    kir_loop_end(k);
    kir_val ss = tree_sum(k, kir_var_get(k, sq));
    j = kir_loop_begin_parallel(k, kir_idx(k, 0), kir_idx(k, N));
    kir_val at = kir_add(k, base, j);
    kir_prefetch(k, x, kir_binary(k, KIR_MIN, kir_add(k, at, kir_idx(k, 16)), kir_idx(k, 2 * N - 1)));
    kir_store(k, y, at, kir_binary(k, KIR_SUB, kir_load(k, x, at), mean));
    kir_loop_end(k);
    kir_if_begin(k, kir_binary(k, KIR_EQ, kir_lid(k), kir_idx(k, 0)));
    kir_store(k, st, kir_mul(k, kir_wg(k), kir_idx(k, 2)), mean);
    kir_store(k, st, kir_add(k, kir_mul(k, kir_wg(k), kir_idx(k, 2)), kir_idx(k, 1)), ss);
    kir_if_end(k);
    return k;
}

TEST(gpu_emit_two_reductions_reuse)
{
    arena a;
    arena_init(&a);
    kir_kernel *k = two_reductions(&a);
    smem_report r;
    CHECK_EQ_INT(smem_assign(k, &r), SMELT_OK);
    CHECK_EQ_INT(r.peak, W * 4);
    CHECK_EQ_INT(r.total, 2 * W * 4);
    CHECK_EQ_INT(r.barriers_inserted, 1);
    char *cl = NULL, *cu = NULL;
    CHECK_EQ_INT(emit_program(&k, 1, EMIT_OPENCL, LOCALS_HYBRID, NULL, &cl), SMELT_OK);
    CHECK_EQ_INT(emit_program(&k, 1, EMIT_CUDA, LOCALS_REUSE, NULL, &cu), SMELT_OK);
    if (cl && cu) {
        CHECK_STR_HAS(cl, "__kernel void smelt_k7(__global const float *g0, long o0, __global float *g1, long o1");
        CHECK_STR_HAS(cl, "__local uchar smem[256]");
        CHECK_STR_HAS(cl, "peak 256 bytes, 512 without reuse");
        CHECK_STR_HAS(cl, "barrier(CLK_LOCAL_MEM_FENCE);");
        CHECK_STR_HAS(cl, "const int64_t lid = get_local_id(0);");
        CHECK_STR_HAS(cl, "const int64_t wg = get_group_id(0);");
        CHECK_STR_HAS(cl, "for (int64_t i0 = 0 + lid; i0 < 100; i0 += 64)");
        CHECK_STR_HAS(cl, "for (int64_t i0 = lid; i0 < 100; i0 += 64)");
        CHECK_STR_HAS(cu, "extern \"C\" __global__ void smelt_k7(const float *a0, float *a1, float *a2)");
        CHECK_STR_HAS(cu, "const float *__restrict__ b0 = a0;");
        CHECK_STR_HAS(cu, "__shared__ __align__(16) unsigned char smem[256];");
        CHECK_STR_HAS(cu, "__syncthreads();");
        CHECK_STR_HAS(cu, "threadIdx.x");
        CHECK_STR_HAS(cu, "blockIdx.x");
        CHECK_STR_HAS(cl, "prefetch(&b0[");
        CHECK_STR_HAS(cu, "(void)&b0[");
        CHECK(!strstr(cl, "expf") && !strstr(cl, "#include"));
    }
    if (cu && rt_cuda_nvrtc_available()) {
        smelt_status s = rt_cuda_check(cu, "sm_90");
        if (s) printf("  %s\n", smelt_last_error());
        CHECK_EQ_INT(s, SMELT_OK);
        CHECK_EQ_INT(rt_cuda_check(cu, "sm_80"), SMELT_OK);
    }
    /* On an OpenCL device (skipped where none exists). */
    rt_device *d = NULL;
    if (cl && rt_device_open("opencl", 0, &d) == SMELT_OK) {
        const rt_device_ops *ops = d->ops;
        rt_module *m = NULL;
        rt_kernel *fn = NULL;
        rt_mem bx = 0, by = 0, bs = 0;
        float x[2 * N], y[2 * N], st[4];
        for (int i = 0; i < 2 * N; i++) x[i] = (float)((i * 37) % 23) - 7.0f;
        smelt_status s = ops->build(d, cl, &m, NULL);
        if (s) printf("  %s\n", smelt_last_error());
        CHECK_EQ_INT(s, SMELT_OK);
        if (!s) {
            CHECK_EQ_INT(ops->kernel(d, m, "smelt_k7", &fn), SMELT_OK);
            CHECK_EQ_INT(ops->alloc(d, sizeof x + 64, &bx), SMELT_OK);
            CHECK_EQ_INT(ops->alloc(d, sizeof y, &by), SMELT_OK);
            CHECK_EQ_INT(ops->alloc(d, sizeof st, &bs), SMELT_OK);
            CHECK_EQ_INT(ops->upload(d, bx, 64, x, sizeof x), SMELT_OK);
            rt_arg args[5] = {{bx, 64}, {by, 0}, {bs, 0}, {0, -1}, {0, -1}};
            CHECK_EQ_INT(ops->dispatch(d, fn, 5, args, 2, W), SMELT_OK);
            CHECK_EQ_INT(ops->finish(d), SMELT_OK);
            CHECK_EQ_INT(ops->download(d, by, 0, y, sizeof y), SMELT_OK);
            CHECK_EQ_INT(ops->download(d, bs, 0, st, sizeof st), SMELT_OK);
            for (int row = 0; row < 2; row++) {
                double mean = 0, ss = 0;
                for (int i = 0; i < N; i++) mean += x[row * N + i];
                mean /= N;
                for (int i = 0; i < N; i++) ss += (x[row * N + i] - mean) * (x[row * N + i] - mean);
                CHECK_NEAR(st[2 * row], mean, 1e-4);
                CHECK_NEAR(st[2 * row + 1], ss, 1e-2);
                CHECK_NEAR(y[row * N + 5], x[row * N + 5] - mean, 1e-4);
            }
            ops->mem_free(d, bx);
            ops->mem_free(d, by);
            ops->mem_free(d, bs);
        }
        ops->module_free(d, m);
        rt_device_close(d);
    }
    free(cl);
    free(cu);
    arena_free(&a);
}

TEST(gpu_device_names)
{
    CHECK(rt_device_name_ok("cpu", 3));
    CHECK(rt_device_name_ok("opencl:12", 9));
    CHECK(rt_device_name_ok("cuda", 4));
    CHECK(!rt_device_name_ok("cuda:", 5));
    CHECK(!rt_device_name_ok("gpu", 3));
    CHECK(!rt_device_name_ok("opencl:x", 8));
    rt_device *d = NULL;
    CHECK_EQ_INT(rt_device_open("opencl:999", 0, &d), SMELT_ERR_DEVICE);
    CHECK(d == NULL);
    CHECK_STR_HAS(smelt_last_error(), "opencl:999");
    /* No GPU here, or one: either way a missing device is a clear error, never a crash. */
    if (rt_device_open("cuda:99", 0, &d) == SMELT_OK) rt_device_close(d);
    else CHECK_STR_HAS(smelt_last_error(), "cuda:99");
}
