/*
 * program.h — a compiled program: the pipeline that builds it and the
 * command list that runs it. The public smelt_program is this struct.
 *
 *   compile: clone model graph → bind inputs → infer + fold → DCE →
 *            regions (fuse) → lower (view nodes skipped: plan_node_is_view) →
 *            plan (aliases, in-place: sets kir_buffer.alias_of) → emit →
 *            cc + dlopen
 *   run:     bind caller's inputs → for each kernel: fill its buffer table
 *            from the plan, hand its workgroups to the pool → outputs are
 *            views into the arena (or constants / inputs).
 */
#ifndef SMELT_API_PROGRAM_H
#define SMELT_API_PROGRAM_H

#include "fuse/fuse.h"
#include "ir/ir.h"
#include "kernel/locals.h"
#include "kernel/lower.h"
#include "plan/plan.h"
#include "rt/rt.h"

struct smelt_model {
    ir_graph *g;
};

typedef struct program_stats {
    double t_frontend_ms;  /* bind, infer, fold, dce */
    double t_lower_ms;     /* regions + lowering + emit */
    double t_cc_ms;        /* system compiler or cache load */
    bool cc_cached;
    int64_t bytes_moved;   /* bytes all kernels read + write once */
} program_stats;

struct smelt_program {
    ir_graph *g;
    arena arena;
    fuse_plan fp;
    lower_program lp;
    mem_plan plan;
    locals_strategy locals;
    char *source;
    rt_so *so;
    rt_pool *pool;
    rt_kernel_fn *fns;
    void **slot_ptr;       /* per plan slot: where its bytes are during a run */
    void **buf_table;      /* all kernels' buffer tables, back to back */
    int *buf_start;        /* per kernel: its first entry in buf_table */
    unsigned char *mem;    /* the activation arena */
    double *prof_ms;       /* per kernel, while profiling is on; else NULL */
    int64_t *prof_calls;
    program_stats stats;
};

#endif
