/*
 * smelt.h — the one public header of smelt, a tensor compiler and runtime.
 *
 * A short tour:
 *
 *     smelt_model *m;
 *     if (smelt_model_load_file("model.onnx", &m) != SMELT_OK)
 *         fprintf(stderr, "%s\n", smelt_last_error());
 *
 *     smelt_options opt;
 *     smelt_options_init(&opt);           // devices "cpu", threads = online cores
 *     smelt_tensor x = { .name = "x", .dtype = SMELT_F32, .rank = 2,
 *                        .shape = {1, 64}, .data = pixels };
 *     smelt_program *p;
 *     smelt_program_compile(m, &opt, 1, &x, &p);   // binds symbolic dims from x
 *     smelt_program_run(p, 1, &x);
 *     smelt_tensor y;
 *     smelt_program_output(p, 0, &y);              // view, valid until the next run
 *     smelt_program_free(p);
 *     smelt_model_free(m);
 *
 * Every function that can fail returns a smelt_status; on failure the message
 * (naming the model node and the rule it broke) is read with smelt_last_error(),
 * which is per thread.
 *
 * Runs may also be submitted without waiting (smelt_program_submit below):
 * over several devices consecutive runs then overlap.
 *
 * Thread safety: models are immutable after loading and may be shared between
 * threads. A smelt_program is NOT safe for concurrent smelt_program_run calls
 * (it owns one activation arena); compile one program per thread instead — the
 * compiled kernels are shared through the on-disk compile cache, so the second
 * compile costs no compiler invocation.
 */
#ifndef SMELT_H
#define SMELT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library's version: SMELT_VERSION_* are the header's, smelt_version() the
 * loaded library's ("MAJOR.MINOR.PATCH"); a program may compare them. The shared
 * library's soname carries the major version. */
#define SMELT_VERSION_MAJOR 0
#define SMELT_VERSION_MINOR 1
#define SMELT_VERSION_PATCH 0

/* Marks the public functions: libsmelt.so is built with hidden visibility and
 * exports exactly these. */
#if defined(__GNUC__)
#define SMELT_API __attribute__((visibility("default")))
#else
#define SMELT_API
#endif

/* Status codes. SMELT_OK is zero so `if (st)` tests for failure. */
typedef enum smelt_status {
    SMELT_OK = 0,
    SMELT_ERR_INVALID_ARG,  /* a caller passed something malformed            */
    SMELT_ERR_MODEL,        /* the model file is malformed or inconsistent    */
    SMELT_ERR_UNSUPPORTED,  /* valid ONNX that smelt does not implement       */
    SMELT_ERR_SHAPE,        /* shapes or dtypes that do not fit together      */
    SMELT_ERR_IO,           /* a file could not be read or written            */
    SMELT_ERR_NOMEM,        /* an allocation failed                           */
    SMELT_ERR_COMPILE,      /* the system compiler rejected generated code    */
    SMELT_ERR_DEVICE,       /* a device is missing or failed                  */
    SMELT_ERR_INTERNAL      /* a bug in smelt: please report it               */
} smelt_status;

SMELT_API const char *smelt_version(void);

/* A short name for a status ("model", "unsupported", ...). */
SMELT_API const char *smelt_status_name(smelt_status st);

/* The message of the last failing call made by this thread ("" if none). */
SMELT_API const char *smelt_last_error(void);

/* Element types; the numbers are ONNX's TensorProto.DataType values. */
typedef enum smelt_dtype {
    SMELT_UNDEFINED = 0,
    SMELT_F32 = 1,
    SMELT_U8 = 2,
    SMELT_I8 = 3,
    SMELT_U16 = 4,
    SMELT_I16 = 5,
    SMELT_I32 = 6,
    SMELT_I64 = 7,
    SMELT_STRING = 8, /* import only: rejected by every op */
    SMELT_BOOL = 9,   /* one byte per element, 0 or 1 */
    SMELT_F16 = 10,   /* IEEE binary16 as uint16_t bits; computed in float32 */
    SMELT_F64 = 11,
    SMELT_U32 = 12,
    SMELT_U64 = 13,
    SMELT_BF16 = 16   /* bfloat16 (top half of a float32) as uint16_t bits */
} smelt_dtype;

/* Bytes per element (0 for types smelt cannot hold in memory). */
SMELT_API size_t smelt_dtype_size(smelt_dtype dt);
/* "float32", "int64", ... */
SMELT_API const char *smelt_dtype_name(smelt_dtype dt);
/* float16 / bfloat16 (dt) element bits to float32, exactly; and float32 to
 * them with round-to-nearest-even (overflow gives infinity, NaN stays NaN).
 * Any other dt: 0. */
SMELT_API float smelt_half_to_float(smelt_dtype dt, uint16_t bits);
SMELT_API uint16_t smelt_float_to_half(smelt_dtype dt, float x);

#define SMELT_MAX_RANK 8

/* A tensor as the caller sees it: dense, row-major, caller- or program-owned. */
typedef struct smelt_tensor {
    const char *name;            /* graph input/output name (NULL: by position) */
    smelt_dtype dtype;
    int rank;
    int64_t shape[SMELT_MAX_RANK];
    void *data;
} smelt_tensor;

/* Number of elements of t (1 for a scalar). */
SMELT_API int64_t smelt_tensor_numel(const smelt_tensor *t);

/* ---- models ------------------------------------------------------------- */

typedef struct smelt_model smelt_model;

/* Load an ONNX model. External data files are resolved next to `path`. */
SMELT_API smelt_status smelt_model_load_file(const char *path, smelt_model **out);

/* Load from memory; `base_dir` (may be NULL) is where external data lives. */
SMELT_API smelt_status smelt_model_load_memory(const void *data, size_t size,
                                     const char *base_dir, smelt_model **out);
/* Free a model. Programs compiled from it read its weights in place (they
 * are not copied: compiling a model twice does not double its weight memory),
 * so free every program compiled from a model before the model. */
SMELT_API void smelt_model_free(smelt_model *m);

/* Graph inputs (initializers excluded) and outputs. In `info`, a symbolic
 * dimension has shape[i] == -1 and its name in dim_names[i]. */
typedef struct smelt_value_info {
    const char *name;
    smelt_dtype dtype;
    int rank;
    int64_t shape[SMELT_MAX_RANK];
    const char *dim_names[SMELT_MAX_RANK];
} smelt_value_info;

SMELT_API int smelt_model_input_count(const smelt_model *m);
SMELT_API int smelt_model_output_count(const smelt_model *m);
SMELT_API smelt_status smelt_model_input_info(const smelt_model *m, int i, smelt_value_info *out);
SMELT_API smelt_status smelt_model_output_info(const smelt_model *m, int i, smelt_value_info *out);

/* ---- compiling ---------------------------------------------------------- */

/* How kernel SSA values become locals in emitted source (see kernel/locals.h). */
typedef enum smelt_locals {
    SMELT_LOCALS_DEFAULT = 0, /* the target's choice */
    SMELT_LOCALS_REUSE,       /* recycle dead locals */
    SMELT_LOCALS_HYBRID       /* const single-assignment intermediates */
} smelt_locals;

/* The pipeline's stages, in order: smelt_options.stop_after ends compilation
 * after one of them, for smelt_program_dump of that stage (`--emit STAGE`).
 * A program stopped before SMELT_STAGE_ALL opens no device, runs no system
 * compiler and cannot run. */
typedef enum smelt_stage {
    SMELT_STAGE_ALL = 0,  /* everything: built for the device, ready to run     */
    SMELT_STAGE_IR,       /* graph passes: bound, inferred, folded ("ir")       */
    SMELT_STAGE_REGIONS,  /* fusion regions ("regions" without kernels, "dot")  */
    SMELT_STAGE_KIR,      /* kernels lowered for the first device's target ("kir", "regions") */
    SMELT_STAGE_PLAN,     /* the memory plan and barriers ("plan")              */
    SMELT_STAGE_SOURCE    /* source for the target ("c", "opencl", "cuda")      */
} smelt_stage;

typedef struct smelt_options {
    const char *devices;     /* comma list: "cpu", "cpu:1", "cpu,opencl", "opencl:0,opencl:1", "cuda:0,cuda:1" */
    int threads;             /* worker threads for cpu; 0 = online cores      */
    smelt_locals locals;
    int no_fuse;             /* 1: one kernel per op (for comparison/debug)   */
    int fuse_pad;            /* fusing a Pad into its producer: 0 auto, 1 never, 2 always */
    int64_t max_memory;      /* fail compilation if the plan exceeds it; 0=off */
    int verbose;             /* 1: print stage timings to stderr              */
    smelt_stage stop_after;  /* SMELT_STAGE_ALL, or the stage to stop after   */
    int64_t max_loop_iterations; /* a Loop run at run time that goes on longer fails
                                  * with an error naming it; 0 = 2^31     */
    const char *placement;   /* which device runs each region when `devices` lists several:
                              * NULL or "fallback" (each on the first device that can run it),
                              * overrides "Conv=opencl:0,MatMul=opencl:1,*=cpu" by op type or
                              * node name (the rest falls back), "split" (the batch divided across
                              * the devices by measured speed; "split:3:1" by hand), or "cost"
                              * (regions placed by estimated time) */
} smelt_options;

SMELT_API void smelt_options_init(smelt_options *opt);

typedef struct smelt_program smelt_program;

/* Compile `m` for the devices in `opt`. `inputs` (may be NULL) fixes the shapes
 * of inputs with symbolic dimensions; for inputs that decide shapes (e.g. the
 * `shape` operand of a Reshape fed by a graph input) their values are folded in
 * as constants too, so a program is specialised on them. Inputs with fully
 * static shapes need not be given; data pointers may be NULL when only the
 * shape is known, except for those shape-deciding inputs. The program reads
 * m's weights in place (constants no pass changes are not copied): m must
 * outlive it. */
SMELT_API smelt_status smelt_program_compile(const smelt_model *m, const smelt_options *opt,
                                   int n_inputs, const smelt_tensor *inputs,
                                   smelt_program **out);
SMELT_API void smelt_program_free(smelt_program *p);

/* Run once. Inputs are matched by name (or by position when name is NULL) and
 * must have the shapes the program was compiled for. */
SMELT_API smelt_status smelt_program_run(smelt_program *p, int n_inputs, const smelt_tensor *inputs);

/* A view of output i after a run, valid until the next run or free. An output
 * that is a view of a graph input (e.g. a Reshape or Identity of it) is the
 * caller's input memory itself, and a view of a constant points into the
 * model's weights: no copy is made. */
SMELT_API int smelt_program_output_count(const smelt_program *p);
SMELT_API smelt_status smelt_program_output(const smelt_program *p, int i, smelt_tensor *out);

/* ---- runs in flight ------------------------------------------------------- */

/* Consecutive runs without waiting for each: a submitted run is named by a
 * ticket (never 0), waited for, its outputs read, then released.
 *
 *     smelt_ticket t[2];
 *     smelt_program_submit(p, 1, &x0, &t[0]);   // returns before the run is done
 *     smelt_program_submit(p, 1, &x1, &t[1]);   // x0's buffer may be reused now
 *     smelt_program_wait(p, t[0]);              // run 0's failure, if any
 *     smelt_program_run_output(p, t[0], 0, &y); // intact whatever runs after it
 *     smelt_program_release(p, t[0]);           // now a third may be submitted
 *
 * Over several devices the runs overlap: each device takes them in order, so
 * where a placement (`cost`, overrides) puts the first regions on one device
 * and the rest on another, run i+1's first part runs while run i's second
 * does. On one device a submit runs before it returns. Each held run has
 * memory of its own (an activation arena per device, host copies, the
 * inputs copied at submit): the caller may reuse its input buffers as soon
 * as submit returns, and a run never writes over another's outputs. A
 * program with run-time control flow (If/Loop/Scan) or a split placement
 * holds one run at a time, in the memory smelt_program_run uses.
 *
 * Errors: a submit with wrong inputs fails at once and gives no ticket; a
 * failure while running is returned by the run's wait (and its outputs are
 * not readable); a ticket that is unknown or released is an error for
 * wait, run_output and release. smelt_program_run waits for the submitted
 * runs before it runs (their results stay held); smelt_program_free waits
 * for them too. Not thread safe: one thread submits, waits and releases. */
typedef uint64_t smelt_ticket;

/* How many runs may be held at once (submitted and not released): 1 to 8,
 * 2 by default. Each costs the program's activation memory once more; only
 * while no run is held. */
SMELT_API smelt_status smelt_program_set_pipeline(smelt_program *p, int depth);
/* Start a run; fails, with no ticket, when the inputs do not fit (as
 * smelt_program_run) or when `depth` runs are held. */
SMELT_API smelt_status smelt_program_submit(smelt_program *p, int n_inputs, const smelt_tensor *inputs, smelt_ticket *ticket);
/* Until the run is done; its status. May be called again. */
SMELT_API smelt_status smelt_program_wait(smelt_program *p, smelt_ticket ticket);
/* A view of output i of a waited-for run, valid until its ticket is released. */
SMELT_API smelt_status smelt_program_run_output(smelt_program *p, smelt_ticket ticket, int i, smelt_tensor *out);
/* The run's memory back for another submit (waiting for it first if need be). */
SMELT_API smelt_status smelt_program_release(smelt_program *p, smelt_ticket ticket);

/* ---- profiling ------------------------------------------------------------ */

/* One kernel's share of the profiled runs. */
typedef struct smelt_kernel_profile {
    int id;                 /* position in the program's command list          */
    const char *what;       /* what it computes, e.g. "Conv 'conv1'" (program-owned) */
    int64_t workgroups;     /* workgroups per dispatch                          */
    int64_t dispatches;     /* how many times it ran while profiling was on     */
    double total_ms;        /* wall time of those dispatches, summed            */
    const char *device;     /* the device that runs it, e.g. "opencl:1" (program-owned) */
} smelt_kernel_profile;

/* Turn per-kernel timing on (1) or off (0); turning it on clears the totals.
 * While on, every smelt_program_run times each kernel's dispatch (two clock
 * reads per kernel); while off, runs make no timing calls at all. */
SMELT_API smelt_status smelt_program_set_profiling(smelt_program *p, int on);
/* Number of kernels in p's command list. */
SMELT_API int smelt_program_kernel_count(const smelt_program *p);
/* Totals of kernel i (0 <= i < smelt_program_kernel_count) since profiling was
 * turned on. */
SMELT_API smelt_status smelt_program_profile(const smelt_program *p, int i, smelt_kernel_profile *out);

/* ---- tensor files -------------------------------------------------------- */

/* Read a .npy file or a serialized ONNX TensorProto (.pb), chosen by content.
 * out->data (and out->name, which may be NULL) are owned by the caller: free
 * them with smelt_tensor_free. */
SMELT_API smelt_status smelt_tensor_load(const char *path, smelt_tensor *out);
/* Write t as .pb when path ends in ".pb", else as .npy; never leaves a partial file. */
SMELT_API smelt_status smelt_tensor_save(const char *path, const smelt_tensor *t);
SMELT_API void smelt_tensor_free(smelt_tensor *t);

/* What a compiled program costs, for reports and comparisons (fused against
 * --no-fuse). bytes_moved counts every kernel's buffers once per run. */
typedef struct smelt_program_stats {
    int nodes;               /* graph nodes after folding and simplification */
    int regions;             /* fusion regions */
    int kernels;             /* kernels dispatched per run */
    int64_t bytes_moved;     /* bytes all kernels read and write per run */
    int64_t arena_bytes;     /* planned activation arena */
    int64_t weight_bytes;    /* constants the kernels read */
} smelt_program_stats;

SMELT_API smelt_status smelt_program_get_stats(const smelt_program *p, smelt_program_stats *out);

/* Text of one stage for `smelt compile --emit KIND` and `smelt info`: "ir",
 * "regions", "kir", "c", "plan", "info". Free *text with smelt_free. */
SMELT_API smelt_status smelt_program_dump(const smelt_program *p, const char *what, char **text);
/* Free a string returned by smelt. */
SMELT_API void smelt_free(void *ptr);
/* `bytes` of zeroed memory aligned to SMELT_ALIGN bytes (free with smelt_free), for
 * tensor data: CPU kernels read inputs with full-width vector loads and run
 * fastest (a 4096x4096 transpose chain ~25% faster) on inputs aligned like this.
 * smelt_tensor_load's data is allocated so. NULL when out of memory. */
#define SMELT_ALIGN 64
SMELT_API void *smelt_alloc(size_t bytes);

#ifdef __cplusplus
}
#endif
#endif
