/*
 * plan.h — the memory plan: where every run-time tensor lives.
 *
 * Graph inputs are read from the caller's memory and constants from the
 * graph; every other tensor (and every scratch buffer) gets an offset in one
 * activation arena. Two tensors share bytes only when their live ranges over
 * the kernel list are disjoint. Placement is greedy, largest first, at the
 * lowest 64-byte-aligned offset that conflicts with nothing placed already
 * (the approach of TFLite's arena planner): big buffers settle first and small
 * ones fill the holes between them.
 *
 * requires: a lowered program. guarantees: plan_verify passes.
 */
#ifndef SMELT_PLAN_PLAN_H
#define SMELT_PLAN_PLAN_H

#include "ir/ir.h"
#include "kernel/lower.h"

#define PLAN_ALIGN 64

typedef enum plan_kind {
    PLAN_NONE,     /* not used at run time */
    PLAN_INPUT,    /* caller's memory */
    PLAN_CONST,    /* graph constant data */
    PLAN_ARENA     /* activation arena at `offset` */
} plan_kind;

typedef struct plan_slot {
    plan_kind kind;
    int64_t offset, bytes;
    int first, last;  /* kernels that first write / last read it */
} plan_slot;

typedef struct mem_plan {
    plan_slot *slots;     /* graph tensors, then scratch buffers */
    int n_slots;
    int64_t arena_bytes;  /* planned peak */
    int64_t total_bytes;  /* sum of all arena tensors: no planning at all */
    int64_t weight_bytes; /* constants read by kernels */
} mem_plan;

smelt_status plan_build(const ir_graph *g, const lower_program *p, mem_plan *out);
void plan_free(mem_plan *m);
/* No two arena slots live at the same time overlap; every slot fits the arena. */
smelt_status plan_verify(const mem_plan *m);
void plan_dump(const ir_graph *g, const mem_plan *m, FILE *f);

#endif
