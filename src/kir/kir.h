/*
 * kir/kir.h — Kernel IR: the target-neutral form of one kernel.
 *
 * A kernel is a function over one workgroup index `wg` in [0, n_workgroups).
 * Its body is a flat list of statements with structured begin/end markers:
 *
 *     DEF v            define SSA value v (loads, arithmetic, var reads)
 *     STORE buf[i] = v
 *     LOOP_BEGIN v lo hi step   ... LOOP_END    (v: the i64 induction value)
 *     IF_BEGIN c  ... [ELSE ...] IF_END
 *     VAR_SET var = v           mutable variables, for accumulators
 *     BARRIER                   workgroup barrier: every thread of the workgroup
 *                               arrives before any continues (orders workgroup memory)
 *     PREFETCH buf[i]           a hint that buf[i] is read soon (no effect on results;
 *                               i must lie in the buffer)
 *
 * Streaming. A *stream* loop (kir_loop_begin_stream) is a plain copy loop,
 *     for (q = 0; q < n; q++) dst[base + q] = src[q]
 * with base defined outside it and src workgroup memory: its stores are not
 * read again soon, so a target may write them around its caches
 * (non-temporal stores). Run as written it is the same copy.
 *
 * Deinterleaving. A *deinterleave* loop (kir_loop_begin_deint) copies the
 * even and odd elements of a run of memory into two buffers,
 *     for (q = lo; q < hi; q++) { d0[a0 + q] = s[b0 + 2q]; d1[a1 + q] = s[b1 + 2q]; }
 * (two loads at stride 2, each stored at stride 1; the index parts a0, a1,
 * b0, b1 may be computed in the body). A target may run it as one shuffle
 * per pair of vectors where b1 = b0 + 1 (the C emitter, emit_c_deint.c); run
 * as written it is the same copy.
 *
 * Transposing copies. A *transpose* loop (kir_loop_begin_transpose) over rows
 * r in [lo, hi) whose body is one inner loop over q, step 1, with bounds that
 * do not depend on r, copying blocks across:
 *     for (r = lo; r < hi; r++) for (q = qlo; q < qhi; q++) { d[a + D r + q] = s[b + r + S q]; ... }
 * (each store's value a load in the inner body, read at stride 1 along r and
 * S along q and stored at stride 1 along q and D along r, into another
 * buffer; the index parts may be computed in the bodies). A target may copy
 * 16 rows at a time as in-register transposes of 16x16 or 8x8 blocks (the C
 * emitter, emit_c_trans.c, where the loop has two stores or more); run as
 * written it is the same copy.
 *
 * Masked loops. A *masked* loop (kir_loop_begin_masked) is a parallel loop
 * over [0, n) that a target with vectors of more than n lanes may run as one
 * vector under a mask of its first n lanes (the C emitter on AVX-512 for
 * 4 <= n < 16, emit_c_simd.c). Opt-in, where the lowering measured that it
 * pays (ops/conv_depthwise.c): masked stores are slow on some CPUs, and
 * short elementwise loops lost. Run as written it is the same loop.
 *
 * Microkernel loops. A *gemm* loop (kir_loop_begin_gemm) is a multiply-add
 * over a packed block, as ops/matmul.c builds it:
 *     for (k = 0; k < kc; k++) for (r = 0; r < MR; r++) for (j = 0; j < NR; j++)
 *         acc[ca + r*cr + j] += A[aa + r*ar + k*ak] * B[ba + k*bk + j]
 * (the r loop absent when MR is 1) with acc workgroup memory, the bases
 * defined before the loop and MR, NR constant. A target may run it as one
 * register-blocked microkernel, with its multiply-adds contracted (fused, one
 * rounding): the results then differ from the loop's by rounding only. Run as
 * written it is the same sum.
 *
 * Threads. A kernel runs `wg_size` threads per workgroup (1 on the CPU, where
 * a workgroup is one call). A *parallel* loop promises independent iterations:
 * on the CPU it is an ordinary (vectorizable) loop; on a GPU its iterations are
 * spread over the workgroup's threads (i = lo + lid; i < hi; i += wg_size).
 * Code outside parallel loops runs in every thread, redundantly, and must only
 * compute uniform values or store what every thread agrees on.
 *
 * Workgroup memory. A buffer with `workgroup` set is not a parameter but
 * memory shared by the threads of one workgroup (OpenCL __local, CUDA
 * __shared__, a stack array on the CPU). kir/smem.c lays such buffers out on
 * a stack and inserts barriers for `promote_reuse`; `smem_offset` is its result.
 *
 * Values are SSA: each is defined once (constants and the workgroup index are
 * not in the statement list — they are printed inline). Every value has a
 * dtype from smelt.h (indices are SMELT_I64, predicates SMELT_BOOL). A value
 * may be used only after its definition and inside the block that defines it
 * (or a nested one); kir_verify checks this.
 *
 * Buffers are the kernel's parameters: each names a graph tensor (or a scratch
 * buffer) and says whether the kernel reads and/or writes it. Loads and stores
 * index a buffer with a linear element index. Parameter buffers do not overlap
 * (they are `restrict`), except where the memory plan makes a read buffer
 * share a written one's memory (in place): the plan's table says which, and
 * the emitter is given it (emit_program's `alias`).
 *
 * Building: kir_* functions append to the kernel being built. Arithmetic on
 * constants folds (x*1, x+0, c1+c2), so index expressions stay readable.
 * Builders never fail: kernels live in an arena and an allocation failure sets
 * k->oom, checked once by the lowering driver.
 */
#ifndef SMELT_KIR_KIR_H
#define SMELT_KIR_KIR_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "core/arena.h"
#include "core/diag.h"
#include "smelt.h"

typedef int32_t kir_val; /* value id; 0 means "no value" */

typedef enum kir_op {
    KIR_CONST,   /* imm                                       */
    KIR_WG,      /* workgroup index (i64)                     */
    KIR_LID,     /* thread index within the workgroup (i64)   */
    KIR_LOOPVAR, /* induction value of a LOOP_BEGIN           */
    KIR_VARGET,  /* current value of mutable var `var`        */
    KIR_LOAD,    /* buf[a]                                    */
    /* unary: a */
    KIR_NEG, KIR_ABS, KIR_NOT, KIR_EXP, KIR_LOG, KIR_SQRT, KIR_SIN, KIR_COS,
    KIR_TAN, KIR_TANH, KIR_ERF, KIR_FLOOR, KIR_CEIL, KIR_ROUND /* half to even */,
    KIR_ASIN, KIR_ACOS, KIR_ATAN, KIR_SINH, KIR_COSH, KIR_ASINH, KIR_ACOSH, KIR_ATANH,
    KIR_ISNAN, KIR_ISINF,
    KIR_CAST,    /* a converted to the value's dtype (bool: a != 0)   */
    /* binary: a, b (same dtype; comparisons yield bool) */
    KIR_ADD, KIR_SUB, KIR_MUL, KIR_DIV /* ints: truncating */, KIR_MOD /* C % / fmod */,
    KIR_POW, KIR_MIN, KIR_MAX, KIR_AND, KIR_OR, KIR_XOR /* bitwise on ints, logical on bool */,
    KIR_SHL, KIR_SHR,
    KIR_EQ, KIR_NE, KIR_LT, KIR_LE, KIR_GT, KIR_GE,
    /* ternary */
    KIR_SELECT,  /* a ? b : c */
    KIR_OP_COUNT
} kir_op;

typedef enum kir_stmt_kind {
    KS_DEF,
    KS_STORE,
    KS_LOOP_BEGIN,
    KS_LOOP_END,
    KS_IF_BEGIN,
    KS_ELSE,
    KS_IF_END,
    KS_VAR_SET,
    KS_BARRIER,
    KS_PREFETCH,
    KS_COUNT
} kir_stmt_kind;

typedef struct kir_value {
    kir_op op;
    smelt_dtype type;
    kir_val a, b, c;  /* operands */
    int buf;          /* LOAD */
    int var;          /* VARGET */
    int def;          /* index of the defining statement; -1 for CONST/WG */
    union {
        double f;
        int64_t i;
    } imm;            /* CONST: f for float types, i otherwise */
} kir_value;

typedef struct kir_stmt {
    kir_stmt_kind kind;
    kir_val val;          /* DEF: the value; LOOP_BEGIN: induction value; STORE/VAR_SET: value */
    kir_val idx;          /* STORE, PREFETCH: index */
    kir_val lo, hi, step; /* LOOP_BEGIN */
    kir_val cond;         /* IF_BEGIN */
    int buf;              /* STORE, PREFETCH */
    int var;              /* VAR_SET */
    bool parallel;        /* LOOP_BEGIN: iterations are independent */
    bool stream;          /* LOOP_BEGIN: a stream loop (see "Streaming" above) */
    bool gemm;            /* LOOP_BEGIN: a gemm loop (see "Microkernel loops" above) */
    bool deint;           /* LOOP_BEGIN: a deinterleave loop (see "Deinterleaving" above) */
    bool masked;          /* LOOP_BEGIN: a masked loop (see "Masked loops" above) */
    bool transpose;       /* LOOP_BEGIN: a transpose loop (see "Transposing copies" above) */
} kir_stmt;

#define KIR_BOX_RANK 8 /* = SMELT_MAX_RANK */

typedef struct kir_buffer {
    smelt_dtype type;
    int64_t numel;
    int tensor;           /* graph tensor (or scratch slot) it binds to; -1 for workgroup memory */
    bool read, written;
    bool workgroup;       /* workgroup memory, not a parameter */
    bool promote_reuse;   /* smem: insert a barrier after the last read so the space can be reused */
    int64_t smem_offset;  /* smem: byte offset in the workgroup stack (set by kir/smem.c) */
    int64_t span_lo, span_hi; /* elements [lo, hi) the kernel may load or store (kir_spans) */
    int box_rank;         /* > 0: every access is a noted one (kir_note_access), and together they
                           * stay in the box [box_lo, box_hi) of the tensor's dims (kir_spans) */
    int64_t box_lo[KIR_BOX_RANK], box_hi[KIR_BOX_RANK];
} kir_buffer;

/* A load or store at linear index `at` that the lowering built from the
 * per-dim indices idx[] of a row-major tensor with dims dim[]. */
typedef struct kir_access {
    int buf;
    kir_val at;
    int rank;
    int64_t dim[KIR_BOX_RANK];
    kir_val idx[KIR_BOX_RANK];
} kir_access;

typedef struct kir_var {
    smelt_dtype type;
} kir_var;

#define KIR_MAX_DEPTH 64

#define KIR_CONST_CACHE 256

typedef struct kir_kernel {
    arena *arena;         /* owner of all arrays below */
    int id;               /* index in the program: the emitted name is smelt_k<id> */
    const char *comment;  /* what it computes, e.g. "Conv 'conv1' + Relu"; sanitized by emitters */
    int64_t n_workgroups;
    int wg_size;          /* threads per workgroup (1 unless a GPU lowering asks for more) */
    int64_t smem_bytes;   /* workgroup memory after stack allocation (kir/smem.c) */
    kir_buffer *bufs;
    int n_bufs, cap_bufs;
    kir_value *vals;      /* vals[0] unused: kir_val 0 is "none" */
    int n_vals, cap_vals;
    kir_stmt *stmts;
    int n_stmts, cap_stmts;
    kir_var *vars;
    int n_vars, cap_vars;
    kir_access *accesses; /* noted accesses (kir_note_access), for kir_spans' boxes */
    int n_accesses, cap_accesses;
    int depth;            /* open LOOP/IF blocks while building */
    int scope[KIR_MAX_DEPTH + 1]; /* statement that opened each open block */
    bool oom;             /* out of memory (or blocks nested deeper than KIR_MAX_DEPTH) */
    int const_seen[KIR_CONST_CACHE]; /* a constant made before, by hash of type and bits (kir_const_*) */
} kir_kernel;

/* ---- building ----------------------------------------------------------- */

kir_kernel *kir_kernel_new(arena *a, int id, int64_t n_workgroups, const char *comment);

/* Add a parameter buffer; returns its index. */
int kir_buffer_add(kir_kernel *k, smelt_dtype type, int64_t numel, int tensor, bool read, bool written);

kir_val kir_const_f(kir_kernel *k, smelt_dtype type, double v);
kir_val kir_const_i(kir_kernel *k, smelt_dtype type, int64_t v);
static inline kir_val kir_idx(kir_kernel *k, int64_t v) { return kir_const_i(k, SMELT_I64, v); }
kir_val kir_wg(kir_kernel *k);
kir_val kir_lid(kir_kernel *k);

/* Workgroup memory of `numel` elements; returns a buffer index usable with
 * kir_load/kir_store. */
int kir_smem_add(kir_kernel *k, smelt_dtype type, int64_t numel);
void kir_barrier(kir_kernel *k);

kir_val kir_load(kir_kernel *k, int buf, kir_val idx);
void kir_prefetch(kir_kernel *k, int buf, kir_val idx);
void kir_store(kir_kernel *k, int buf, kir_val idx, kir_val v);

kir_val kir_unary(kir_kernel *k, kir_op op, kir_val a);
kir_val kir_binary(kir_kernel *k, kir_op op, kir_val a, kir_val b);
kir_val kir_select(kir_kernel *k, kir_val cond, kir_val a, kir_val b);
kir_val kir_cast(kir_kernel *k, smelt_dtype to, kir_val a);

/* for (v = lo; v < hi; v += step): returns v; close with kir_loop_end. */
kir_val kir_loop_begin(kir_kernel *k, kir_val lo, kir_val hi, kir_val step);
/* A loop whose iterations are independent (step 1); see "Threads" above. */
kir_val kir_loop_begin_parallel(kir_kernel *k, kir_val lo, kir_val hi);
/* A stream loop over [0, n) (see "Streaming"): its body is built by the
 * caller as src's load at v, then dst's store at base + v. */
kir_val kir_loop_begin_stream(kir_kernel *k, int64_t n);
/* A deinterleave loop over [lo, hi) (see "Deinterleaving"): a parallel loop
 * whose body the caller builds in that form. */
kir_val kir_loop_begin_deint(kir_kernel *k, kir_val lo, kir_val hi);
/* A transpose loop over [lo, hi) (see "Transposing copies"): a parallel loop
 * whose body the caller builds in that form. */
kir_val kir_loop_begin_transpose(kir_kernel *k, kir_val lo, kir_val hi);
/* A masked loop over [0, n) (see "Masked loops"): a parallel loop. */
kir_val kir_loop_begin_masked(kir_kernel *k, int64_t n);
/* A gemm loop over [0, kc) (see "Microkernel loops"): its body is built by the
 * caller in that form. */
kir_val kir_loop_begin_gemm(kir_kernel *k, kir_val kc);
void kir_loop_end(kir_kernel *k);
void kir_if_begin(kir_kernel *k, kir_val cond);
void kir_else(kir_kernel *k);
void kir_if_end(kir_kernel *k);

/* Stride of index value v per step of loop value `var`: 0 when v does not
 * depend on it (other loop values, variables and loads at indices that do not
 * depend on it count as fixed), KIR_STRIDE_UNKNOWN when it is not affine in it
 * (a gather, div/mod). */
#define KIR_STRIDE_UNKNOWN INT64_MIN
int64_t kir_stride(const kir_kernel *k, kir_val v, kir_val var);

/* Elements of buffer x the kernel may touch: its box's volume where it has
 * one, else its span's length (after kir_spans). */
int64_t kir_touched(const kir_buffer *x);

/* Note that linear index `at` of buffer buf is idx[] in a row-major tensor
 * of dims dim[] (rank <= KIR_BOX_RANK): kir_spans then bounds each dim. The
 * caller promises idx[d] in [0, dim[d]) wherever the access runs (a Pad's
 * read past the edge sits under its guard). */
void kir_note_access(kir_kernel *k, int buf, kir_val at, int rank, const int64_t *dim, const kir_val *idx);

/* Set span_lo/span_hi of every buffer of k from its load and store indices,
 * and its box where every access is noted (kir/spans.c). Fails only for
 * lack of memory. */
smelt_status kir_spans(kir_kernel *k);

/* The innermost open block (-1: the kernel body), and whether a block is still
 * open. A value defined while scope s is innermost may be reused while
 * kir_scope_open(k, s): builders that memoize values check this. */
int kir_scope(const kir_kernel *k);
bool kir_scope_open(const kir_kernel *k, int scope);

/* Mutable variable initialised to `init` at this point; returns its index. */
int kir_var_new(kir_kernel *k, smelt_dtype type, kir_val init);
kir_val kir_var_get(kir_kernel *k, int var);
void kir_var_set(kir_kernel *k, int var, kir_val v);

/* Shorthands for index arithmetic (i64). */
static inline kir_val kir_add(kir_kernel *k, kir_val a, kir_val b) { return kir_binary(k, KIR_ADD, a, b); }
static inline kir_val kir_mul(kir_kernel *k, kir_val a, kir_val b) { return kir_binary(k, KIR_MUL, a, b); }

/* ---- inspecting --------------------------------------------------------- */

static inline const kir_value *kir_v(const kir_kernel *k, kir_val v) { return &k->vals[v]; }
static inline bool kir_is_const(const kir_kernel *k, kir_val v) { return k->vals[v].op == KIR_CONST; }
bool kir_is_float(smelt_dtype t);
/* float16 and bfloat16: two bytes in buffers, held as float32 in values (a
 * load widens, a store and a CAST to them round to nearest even); every
 * other op computes on them as on float32. kir_is_float is true for them. */
bool kir_is_half(smelt_dtype t);
/* Bytes per element of buffer b in memory: workgroup buffers of float16 /
 * bfloat16 (accumulators, staged tiles) hold float32, so a kernel that
 * accumulates in one does not round at every step; other buffers their dtype's size. */
int64_t kir_buffer_elem_bytes(const kir_buffer *b);
int kir_op_arity(kir_op op);        /* operands among a, b, c */
const char *kir_op_name(kir_op op); /* "add", "exp", ... */

/* Well-formedness: SSA (use after def, in scope), types of operands, blocks
 * balanced, buffer indices in range, stores only to written buffers. */
smelt_status kir_verify(const kir_kernel *k);

/* A textual dump for tests and `--emit kir`. */
void kir_dump(const kir_kernel *k, FILE *f);

/* ---- executing ---------------------------------------------------------- */

/* Run every workgroup of k on the host, interpreting the IR. bufs[i] points to
 * buffer i's storage. Used for constant folding and as the reference backend. */
smelt_status kir_interpret(const kir_kernel *k, void *const *bufs);

#endif
