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
 *   control: a run-time If/Loop/Scan (graph/control_rt.c) is an if/loop
 *            command; its subgraphs are compiled once each, when the parent
 *            links, into child programs (api/control.c) on the parent's
 *            device, for its target, sharing the model's weights. A child is
 *            `bound`: its inputs are the parent's memory (bound per run or
 *            iteration, no copies in its list) and its outputs are copied into
 *            the parent's slots by the host command.
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

/* A weight packed for a target's microkernels (graph_pack_weights), made
 * once and shared by every program of the model. */
typedef struct packed_weight {
    const void *src;              /* the constant's data in the model's graph */
    int64_t nr;
    int form;                     /* graph_pack_cache's: transposed, 8-bit */
    void *data;
    struct packed_weight *next;
} packed_weight;

struct smelt_model {
    ir_graph *g;
    _Atomic(packed_weight *) packed; /* pushed lock-free: programs may compile at once */
    uint64_t digest[2];    /* of everything the pipeline reads of g (model.c), for the program cache's key */
    bool digest_ok;        /* false: g holds what the digest cannot cover (string constants): no program cache */
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
    smelt_dtype dtype;       /* the compile-time tensor's (folded: with its values) */
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

/* What one run reads and writes beyond the program's constants: the
 * arenas, every slot's memory per device and as the host sees it, the host
 * copies downloads land in, the staging bytes of copies between devices,
 * the dispatches' buffer tables. A program's own run (smelt_program_run)
 * uses the program's fields (program_own_ctx); each run in flight of a
 * pipeline (api/pipeline.c) has a copy of its own, so consecutive runs
 * share nothing they write. */
typedef struct program_ctx {
    rt_mem mem[PLACE_MAX_DEVICES];
    rt_arg *slot_mem;
    void **slot_ptr;
    void **host_copy;
    void *staging;
    rt_arg *buf_table;
} program_ctx;

/* The most runs a pipeline holds at once (smelt_program_set_pipeline). */
#define PIPELINE_MAX_DEPTH 8

/* One run as the device streams see it (api/streams.c): the memory it uses,
 * its number in the streams' order, per event the run that last set it, how
 * many streams are done with it and the first failure's message. */
typedef struct program_run {
    program_ctx ctx;
    int64_t seq;           /* set when queued, from 1 */
    int64_t *event_run;    /* cmds.n_events */
    int done;              /* streams finished with it */
    bool first_on_caller;  /* smelt_program_run: the caller's thread runs the first stream */
    bool failed;
    smelt_status status;
    char message[1024];
} program_run;

struct smelt_program {
    const struct smelt_model *model; /* packed weights are cached in it (a child: its parent's model) */
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
    void *staging;         /* host bytes the copies between two devices pass through (cmds.stage_bytes, each
                            * copy its own) */
    size_t staging_bytes;
    rt_arg *buf_table;     /* all dispatches' buffer tables, each at its first_arg (cmds.args order) */
    struct program_streams *streams; /* a host thread per device running its commands, or NULL: in order on
                                      * the caller's thread (api/streams.c) */
    double *prof_ms;       /* per kernel, while profiling is on; else NULL */
    int64_t *prof_calls;
    program_stats stats;
    smelt_stage stage;     /* the last stage compiled (SMELT_STAGE_ALL: all of them) */
    /* run-time control flow (api/control.c) */
    struct smelt_program **children; /* cmds.n_children, in the order the if/loop commands name them */
    bool bound;            /* a child: inputs bound to the parent's memory, the parent's device */
    int *bind_from;        /* a child: per input, the node input it reads (-1: iteration, -2: condition) */
    int *bind_tensor;      /* a child: per input, its tensor in g after compiling (-1: unused) */
    bool *dyn_set;         /* per tensor: the last run produced run_shape for it (outputs of dynamic shape) */
    ir_shape *run_shape;
    rt_mem *grow_mem;      /* per tensor: the run-time buffer of an unbounded scan output (smelt_grow), or 0 */
    int64_t *grow_cap;     /* its bytes */
    void **grow_host;      /* on a device without host memory: its bytes brought back after the loop */
    int *grow_dev;         /* the device grow_mem is on */
    int ctl_dev;           /* the device of the if/loop command running now */
    void *ctl_staging;     /* host bytes its device-to-device copies pass through (grown on demand) */
    size_t ctl_staging_bytes;
    int64_t max_iters;     /* a run-time loop running longer fails (smelt_options.max_loop_iterations) */
    double cost_ms;        /* the cost placement: its estimate of one run (place/cost.h), else 0 */
    double cost_period_ms; /* ... and of the time between runs' ends when they overlap (cost_period) */
    bool cost_measured;    /* ... from measured region times (api/place_measure.c), not the table */
    double cost_dev_ms[PLACE_MAX_DEVICES]; /* measured: per device, its regions' times summed (those it can run) */
    bool cost_cached;      /* ... read back from the compile cache (api/place_calib.c), not measured now */
    bool link_measured;    /* the links below measured (api/place_measure.c), else the table's */
    double link_ms[PLACE_MAX_DEVICES];          /* per device: a copy to or from it, fixed part */
    double link_bytes_per_ms[PLACE_MAX_DEVICES]; /* ... and its speed */
    struct program_split *split; /* the split placement: child programs per share (api/split.c), else NULL */
    struct program_cached *cached; /* loaded from the program cache (api/program_cache.c), else NULL */
    struct program_pipeline *pipeline; /* runs submitted (smelt_program_submit; api/pipeline.c), else NULL */
};

/* api/control.c: compile the child programs the if/loop commands name (at
 * link time, on p's device), execute one such command, free the children. */
smelt_status program_control_link(smelt_program *p, const smelt_options *opt);
smelt_status program_control_run(smelt_program *p, const plan_cmd *c);
void program_control_free(smelt_program *p);
/* api/program.c: compile a graph the program already holds (p->g, typed),
 * from inference on; and execute its command list. */
smelt_status program_compile_graph(smelt_program *p, const smelt_options *opt);
smelt_status program_run_commands(smelt_program *p);
/* The same in the memory of one run (program_ctx), and one command of it;
 * program_own_ctx: the program's own fields as one. program_bind_inputs checks the caller's
 * inputs and binds them in ctx; with `stage` (per model input, grown as
 * needed, owned by the caller of this function) their bytes are copied
 * there first, so the caller may reuse its buffers. program_output_in: output
 * i as ctx holds it. */
void program_own_ctx(const smelt_program *p, program_ctx *ctx);
smelt_status program_run_command_in(smelt_program *p, const program_ctx *ctx, const plan_cmd *c);
smelt_status program_run_commands_in(smelt_program *p, const program_ctx *ctx);
smelt_status program_bind_inputs(smelt_program *p, const program_ctx *ctx, int n, const smelt_tensor *inputs, void **stage,
                                 size_t *stage_bytes);
smelt_status program_output_in(const smelt_program *p, const program_ctx *ctx, int i, smelt_tensor *out);
/* api/streams.c: where more than one device has commands, run each device's
 * commands on a thread of its own, ordered across devices by the list's
 * signals and waits; set up at link, freed with the program. */
smelt_status program_streams_init(smelt_program *p);
smelt_status program_streams_run(smelt_program *p);
void program_streams_free(smelt_program *p);
/* A pipelined run (api/pipeline.c): every stream, the first included, on a
 * worker thread; runs are taken in the order queued, each device's commands
 * of run i+1 starting as soon as that device is done with run i.
 * program_streams_queue returns at once; program_streams_wait until every
 * stream is done with r, then reports its failure. */
smelt_status program_streams_queue(smelt_program *p, program_run *r);
smelt_status program_streams_wait(smelt_program *p, program_run *r);
/* api/pipeline.c: wait for every submitted run (smelt_program_run does,
 * before using the program's own memory), and free the pipeline. */
smelt_status program_pipeline_drain(smelt_program *p);
void program_pipeline_free(smelt_program *p);
smelt_status program_record_inputs(smelt_program *p, const ir_graph *model);

/* api/place_cost.c: the cost placement's assignment (per region, in p's
 * arena) for a program lowered once by fallback. */
smelt_status program_cost_assign(smelt_program *p, const smelt_options *opt, const place_policy *pol, int **assign);
/* api/place_measure.c: per region and device its measured milliseconds
 * (ms[r * n_dev + d]; place/cost.h "Speeds"), can[] cleared where a device's
 * class could not run it; *measured false (nothing written) where an input's
 * shape is not known. */
smelt_status program_cost_measure(smelt_program *p, const smelt_options *opt, double *ms, bool *can, bool *measured);
/* api/place_calib.c: measurements kept in the compile cache under a key of
 * the model's digest, the options, the build (program_cache_identity) and
 * what the caller adds (devices, shapes, regions). calib_load: true when an
 * intact entry of exactly `len` bytes was read into data (never with
 * SMELT_RECALIBRATE=1); calib_store: failures are silent. calib_measured
 * counts a calibration that measured (for tests: calib_measurements). */
typedef struct calib_key {
    uint64_t h, digest[2];
    bool ok;               /* false: nothing is cached (no model digest, no build identity) */
} calib_key;
void calib_begin(calib_key *k, const smelt_model *m, const smelt_options *opt, const char *what);
void calib_add(calib_key *k, const void *data, size_t len);
void calib_add_str(calib_key *k, const char *s);
bool calib_load(const calib_key *k, void *data, size_t len);
void calib_store(const calib_key *k, const void *data, size_t len);
void calib_measured(void);
int64_t calib_measurements(void);
/* api/split.c: the split placement. A split program holds one child program
 * per device, each for its share of the batch; the public calls below
 * forward to these when p->split is set. */
smelt_status program_split_compile(smelt_program *p, const smelt_model *m, const smelt_options *opt, const place_policy *pol,
                                   int n_inputs, const smelt_tensor *inputs);
smelt_status program_split_run(smelt_program *p, int n_inputs, const smelt_tensor *inputs);
int program_split_output_count(const smelt_program *p);
smelt_status program_split_output(const smelt_program *p, int i, smelt_tensor *out);
smelt_status program_split_set_profiling(smelt_program *p, int on);
int program_split_kernel_count(const smelt_program *p);
smelt_status program_split_profile(const smelt_program *p, int i, smelt_kernel_profile *out);
smelt_status program_split_stats(const smelt_program *p, smelt_program_stats *out);
smelt_status program_split_dump(const smelt_program *p, const char *what, char **text);
void program_split_free(smelt_program *p);
/* api/program_cache.c: compiled CPU programs kept whole in the compile cache.
 * A program compiled to the end for one CPU device without run-time control
 * flow is written as one entry under a key of everything that decides it:
 * the model's digest, the options, the given inputs' names, types and shapes,
 * the device's identity and vector width, the SMELT_ variables of the
 * environment, this build of smelt, the user. The entry holds what a run
 * needs: the graph's tensors (names, shapes, constants: the model's own by
 * reference, the ones the passes made as bytes), the folded inputs' values,
 * the memory plan, the command list, the kernels' ids and descriptions, and
 * the key of the compiled object (rt_cc_object_key). A later compile with the
 * same key maps the entry, checks its header, size and digest, and skips the
 * pipeline and the compiler; any mismatch is a miss.
 *   program_cache_key:  false when p may not use the cache (not one CPU
 *                       device, not compiled to the end, no model digest);
 *   program_cache_load: *hit true: p holds the program (link it); false: p is
 *                       as it was (compile it). Fails only on OOM;
 *   program_cache_store: after a full compile; failures are silent;
 *   program_cache_full: the program compiled again through the pipeline with
 *                       the cache off, for dumps of a loaded one;
 *   program_cache_nodes/regions: the compiled graph's counts, either way. */
bool program_cache_key(const smelt_program *p, const smelt_options *opt, int n_inputs, const smelt_tensor *inputs,
                       char key[33]);
/* What every cache key built here starts from: the user, this build of
 * smelt, the SMELT_ variables that change programs. False: no key. */
bool program_cache_identity(uint64_t *h);
smelt_status program_cache_load(smelt_program *p, const smelt_options *opt, int n_inputs, const smelt_tensor *inputs,
                                const char key[33], bool *hit);
void program_cache_store(const smelt_program *p, const char key[33]);
smelt_status program_cache_full(const smelt_program *p, smelt_program **full);
void program_cache_free(smelt_program *p);
int program_cache_nodes(const smelt_program *p);
int program_cache_regions(const smelt_program *p);
/* api/model.c: a model of g (owned by it from now on, freed on failure), its digest taken. */
smelt_status program_model_wrap(ir_graph *g, smelt_model **out);
/* api/program.c: smelt_program_compile, with the program cache or without. */
smelt_status program_compile(const smelt_model *m, const smelt_options *opt, int n_inputs, const smelt_tensor *inputs,
                             bool use_cache, smelt_program **out);

/* Rows per device: batch * weight / sum rounded by largest remainder (a
 * device may get none). */
void split_shares(int64_t batch, int n, const double *weight, int64_t *share);

#endif
