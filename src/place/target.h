/*
 * place/target.h — placement: which target a device is, and what lowerings
 * may assume about that target (DESIGN.md: TargetInfo).
 *
 * A target is a row of target_info: the lowerings size vector steps and
 * workgroups by it, kir/ allocates locals by its default strategy and the
 * emitters print the language the row names. place/devices.h keeps a row per device of a
 * list, with the opened device's limits, and joins equal rows into classes.
 *
 * On a target with wg_size > 1, lower_parallel_for spreads elements over the
 * threads of a workgroup and ops with a GPU lowering (ops/gemm_gpu.c, ops/reduce_gpu.c) use it.
 */
#ifndef SMELT_PLACE_TARGET_H
#define SMELT_PLACE_TARGET_H

#include <stdbool.h>
#include <stdint.h>

/* How kir_locals_assign turns a kernel's values into local variables
 * (kir/locals.h describes both); each target names its default. */
typedef enum locals_strategy {
    LOCALS_REUSE,
    LOCALS_HYBRID,
} locals_strategy;

typedef struct target_info {
    const char *name;        /* "cpu", "opencl", "cuda" */
    int vector_width;        /* f32 lanes the target compiler vectorizes to */
    int wg_size;             /* threads per workgroup of GPU lowerings; 1: CPU */
    int64_t smem_limit;      /* bytes of workgroup memory per workgroup */
    int max_wg;              /* threads a workgroup may have (a kernel's own wg_size, as the tiled
                              * GEMM's 256, must fit); 0: no limit (the CPU) */
    locals_strategy locals;  /* default local-variable allocator */
    int64_t stream_min_bytes; /* outputs this large may be written by stream loops (kir.h); 0: never */
    bool host_memory;        /* its buffers are host memory: inputs and constants are bound in place, no copies */
} target_info;

/* The rows, with portable defaults; the caller copies one and replaces the
 * limits it reads off the opened device (workgroup memory) or the host
 * compiler (vector width). */
extern const target_info target_cpu, target_opencl, target_cuda;


#endif
