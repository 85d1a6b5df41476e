/*
 * program.h — a compiled program: the pipeline that builds it and the
 * command list that runs it. The public smelt_program is this struct.
 *
 *   compile: device list (place/devices.h) → open the devices, their targets
 *            → target classes → clone model graph → bind inputs → infer +
 *            fold → DCE → regions (fuse) → each region lowered for the target
 *            of the device placement gives it (place/placement.h; view nodes
 *            skipped: plan_node_is_view) → workgroup memory (smem) → plan
 *            (aliases, in-place: the plan's in_place_of table, given to the
 *            emitter) → command list with its copies between devices
 *            (plan/transfers.c) → one source per target class that runs a
 *            region → built on each device of the class → arenas, constants
 *            to the devices that read them
 *   run:     bind inputs → execute the command list plan/ built (copies,
 *            dispatches with their buffer tables, barriers; commands.h) →
 *            outputs. On the CPU (host memory) the list has no copies:
 *            inputs and constants are bound in place and outputs are views
 *            into the arena of the CPU device that holds them whole.
 */
#ifndef SMELT_API_PROGRAM_H
#define SMELT_API_PROGRAM_H

#include "fuse/fuse.h"
#include "ir/ir.h"
#include "kir/locals.h"
#include "lower/lower.h"
#include "plan/commands.h"
#include "place/devices.h"
#include "place/placement.h"
#include "plan/plan.h"
#include "rt/device.h"

struct smelt_model {
    ir_graph *g;
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

/* Per target class: the executable built for it (one source, built on each
 * of its devices, where two identical devices load the second build from
 * the compile cache), or none when no region runs on the class. */
typedef struct program_class {
    char *source;
    int lang;              /* emit_lang */
    int n_kernels;         /* kernels in its source */
    int n_regions;         /* regions placed on its devices */
} program_class;

struct smelt_program {
    ir_graph *g;
    program_input *inputs; /* the model's inputs, in its order */
    int n_inputs;
    arena arena;
    fuse_plan fp;
    lower_program lp;
    mem_plan plan;
    plan_commands cmds;    /* what a run executes (plan/commands.h) */
    place_devices devs;    /* the device list, targets filled from the opened devices, classes */
    int *region_device;    /* per region: the device it runs on (-1: a view, not lowered) */
    int *kernel_device;    /* per kernel: its region's device */
    program_class cls[PLACE_MAX_DEVICES];
    rt_device *dev[PLACE_MAX_DEVICES]; /* opened devices (none when stopped before the end) */
    rt_module *module[PLACE_MAX_DEVICES]; /* per device: its class's executable */
    rt_mem mem[PLACE_MAX_DEVICES];        /* per device: its activation arena */
    rt_kernel **fns;       /* per kernel, on its device */
    rt_arg *slot_mem;      /* [device * n_slots + slot]: its memory on that device during a run */
    void **slot_ptr;       /* per plan slot: its bytes as the host sees them (inputs, constants, outputs) */
    void **host_copy;      /* per plan slot: host memory copies download it into, or NULL */
    void *staging;         /* host bytes a copy between two devices passes through */
    rt_arg *buf_table;     /* all dispatches' buffer tables, back to back (cmds.args order) */
    double *prof_ms;       /* per kernel, while profiling is on; else NULL */
    int64_t *prof_calls;
    program_stats stats;
    smelt_stage stage;     /* the last stage compiled (SMELT_STAGE_ALL: all of them) */
};

#endif
