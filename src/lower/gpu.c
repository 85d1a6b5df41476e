/*
 * gpu.c — lower_parallel_for on GPU targets (the GPU lowerings of
 * single ops are op_gpu_lower, ops/op_table.c).
 *
 * requires: c->target->wg_size > 1 (lower.c calls in only then).
 * guarantees: lower_parallel_for_gpu flattens the iteration space: each
 *             workgroup takes a chunk of consecutive linear indices and its
 *             threads share them in a parallel loop (thread t takes lo + t,
 *             lo + t + W, ..., so neighbouring threads touch neighbouring
 *             elements); body() sees the unravelled index.
 */
#include "lower/lower.h"

void lower_parallel_for_gpu(lower_ctx *c, const ir_shape *shape, int64_t work_per_elem, lower_body_fn body,
                            void *user)
{
    int64_t numel = ir_shape_numel(shape);
    if (shape->rank == 0) {
        if (lower_kernel_begin(c, 1)) body(c, NULL, user);
        return;
    }
    if (numel == 0) {
        lower_kernel_begin(c, 0);
        return;
    }
    int w = c->target->wg_size;
    /* Cheap elements: several per thread, so a workgroup amortizes its launch. */
    int64_t per_thread = work_per_elem >= 64 ? 1 : 4;
    int64_t chunk = w * per_thread;
    if (numel <= w) chunk = numel;
    int64_t n_wg = (numel + chunk - 1) / chunk;
    kir_kernel *k = lower_kernel_begin(c, n_wg);
    if (!k) return;
    k->wg_size = numel < w ? (int)numel : w;
    kir_val lo = kir_mul(k, kir_wg(k), kir_idx(k, chunk));
    kir_val hi = n_wg == 1 ? kir_idx(k, numel)
                           : kir_binary(k, KIR_MIN, kir_add(k, lo, kir_idx(k, chunk)), kir_idx(k, numel));
    kir_val i = kir_loop_begin_parallel(k, lo, hi);
    kir_val idx[IR_MAX_RANK];
    lower_unravel(k, shape, i, idx);
    body(c, idx, user);
    kir_loop_end(k);
}
