/*
 * program.h — a compiled program: the pipeline that builds it and the
 * command list that runs it. The public smelt_program is this struct.
 *
 *   compile: clone model graph → bind inputs → infer + fold → DCE →
 *            regions (fuse) → lower for the device's target (view nodes skipped:
 *            plan_node_is_view) → workgroup memory (smem) → plan (aliases,
 *            in-place: the plan's in_place_of table, given to the emitter) → command list → emit → build on the device
 *            → constants to the device
 *   run:     bind inputs → execute the command list plan/ built (copies,
 *            dispatches with their buffer tables, barriers; commands.h) →
 *            outputs. On the CPU (host memory) the list has no copies:
 *            inputs and constants are bound in place and outputs are views
 *            into the arena.
 */
#ifndef SMELT_API_PROGRAM_H
#define SMELT_API_PROGRAM_H

#include "fuse/fuse.h"
#include "ir/ir.h"
#include "kir/locals.h"
#include "lower/lower.h"
#include "plan/commands.h"
#include "plan/plan.h"
#include "rt/device.h"

/* A weight packed for a target's microkernels (graph_pack_weights), made
 * once and shared by every program of the model. */
typedef struct packed_weight {
    const void *src;              /* the constant's data in the model's graph */
    int64_t nr;
    bool trans;
    void *data;
    struct packed_weight *next;
} packed_weight;

struct smelt_model {
    ir_graph *g;
    _Atomic(packed_weight *) packed; /* pushed lock-free: programs may compile at once */
};

typedef struct program_stats {
    double t_frontend_ms;  /* bind, infer, fold, dce */
    double t_lower_ms;     /* regions + lowering + emit */
    double t_cc_ms;        /* device build (system compiler, OpenCL, NVRTC) or cache load */
    bool cc_cached;
    int64_t bytes_moved;   /* bytes all kernels read + write once */
} program_stats;

/* One graph input of the model, as a caller names it at run time (by name, or
 * by its position among the model's inputs). An input whose values decide
 * shapes (a Reshape target fed by it) was folded into the program when it was
 * compiled: its values are kept so that a run with other values is refused,
 * never answered with outputs computed from the compile-time values. */
typedef struct program_input {
    const char *name;
    bool folded;
    smelt_dtype dtype;       /* folded only: the compile-time tensor */
    ir_shape shape;
    const void *values;
    size_t bytes;
} program_input;

struct smelt_program {
    ir_graph *g;
    program_input *inputs; /* the model's inputs, in its order */
    int n_inputs;
    arena arena;
    fuse_plan fp;
    lower_program lp;
    mem_plan plan;
    plan_commands cmds;    /* what a run executes (plan/commands.h) */
    locals_strategy locals;
    target_info target;    /* what the kernels were lowered for, limits read off the device */
    int lang;              /* emit_lang of source */
    char *source;
    rt_device *dev;        /* the device that runs every kernel */
    rt_module *module;
    rt_kernel **fns;       /* per kernel */
    rt_arg *slot_mem;      /* per plan slot: its device memory during a run */
    void **slot_ptr;       /* per plan slot: its bytes as the host sees them (outputs) */
    void **host_copy;      /* per plan slot: host memory a copy command downloads it into, or NULL */
    rt_arg *buf_table;     /* all dispatches' buffer tables, back to back (cmds.args order) */
    rt_mem mem;            /* the activation arena */
    double *prof_ms;       /* per kernel, while profiling is on; else NULL */
    int64_t *prof_calls;
    program_stats stats;
    smelt_stage stage;     /* the last stage compiled (SMELT_STAGE_ALL: all of them) */
};

#endif
