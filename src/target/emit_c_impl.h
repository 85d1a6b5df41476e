/*
 * emit_c_impl.h — what the C-like emitter's files share (private to target/):
 * the dialect table's row, the emitter state, and the helpers the vector
 * forms (emit_c_simd.c) call back into emit_c.c for.
 */
#ifndef SMELT_TARGET_EMIT_C_IMPL_H
#define SMELT_TARGET_EMIT_C_IMPL_H

#include "core/strbuf.h"
#include "kir/kir.h"
#include "kir/locals.h"
#include "target/emit.h"

/* What differs between C-like targets. */
typedef enum param_style {
    PARAMS_TABLE,  /* (int64_t wg, void *const *bufs): the CPU runtime's buffer table */
    PARAMS_OFFSET, /* per buffer (base, byte offset): OpenCL, one cl_mem arena */
    PARAMS_PLAIN,  /* per buffer a pointer: CUDA device pointers */
} param_style;

typedef struct dialect {
    const char *name;
    const char *prelude;      /* includes, types, limits */
    const char *fn_qual;      /* helpers: "static inline" */
    const char *kernel_qual;  /* before the return type */
    const char *restrict_kw;
    const char *global_space; /* address space of parameter buffers */
    const char *local_space;  /* address space of workgroup memory */
    const char *smem_decl;    /* the workgroup stack; %lld: its bytes */
    const char *group_id;     /* the workgroup index; NULL: a parameter */
    const char *local_id;     /* the thread index in the workgroup */
    const char *barrier;      /* NULL: one thread per workgroup, nothing to wait for */
    const char *prefetch[2];  /* around "b<buf>[<idx>]" for a PREFETCH */
    const char *f32_sfx;      /* of libm names for float: expf vs overloaded exp */
    const char *ll_sfx;       /* of 64-bit integer literals */
    param_style params;
    bool own_math;            /* float32 exp/tanh/erf from kir/mathf.inc, not the target's */
    bool host_simd;           /* C for this host: stream loops as smelt_stream_f32 calls, and the
                               * vector and interleaved forms (emit_c_simd.c) */
} dialect;

typedef struct emitter {
    strbuf *sb;
    const kir_kernel *k;
    const int *alias; /* per buffer: the written buffer it shares memory with, or -1; NULL: none (emit_kernel) */
    const dialect *d;
    kir_locals loc;
    int *loop_depth; /* per LOOPVAR value: nesting depth of its loop */
    int *uses;       /* per value: number of uses */
    int *var_reads;  /* per var: number of VARGETs */
    /* Set while writing copy `copy` (>= 0) of an interleaved loop's body
     * (emit_c_simd.c): values defined between its LOOP_BEGIN copy_begin and
     * LOOP_END copy_end are named per copy, and its loop value reads as the
     * copy's own, copy * copy_step further on. */
    int copy, copy_begin, copy_end;
    int vec_lanes; /* > 0 while writing a strip's vector body (emit_c_simd.c) with that row */
    const char *vec_mask; /* set while writing a strip's masked last vector: its lanes' mask */
    int64_t copy_step;
    unsigned char *varies; /* per value: differs between copies (else all read copy 0's) */
    /* The gemm loop whose accumulator block the if just skipped would have
     * zeroed (emit_gemm_zero_if), and that if's condition: its microkernel
     * starts from zero where the condition holds. -1: none. */
    int zero_gemm;
    kir_val zero_cond;
    /* A gemm loop's block stored from its registers (emit_put_gemm_store):
     * the store loop's statement, the gemm loop's, and the store loop's
     * LOOP_END, after which the plain form's #endif goes; -1: none. */
    int fused_store, fused_gemm, fused_end;
    unsigned char *fused_dead; /* per value: only the block's read address, which that form leaves out (malloc'd) */
    /* While writing a vector body: the load written as the named vector
     * instead (0: none). */
    kir_val vec_sub;
    const char *vec_sub_name;
} emitter;

/* The copy whose name value v of an interleaved loop's body goes by. */
static inline int emit_copy_of(const emitter *e, kir_val v) { return e->varies[v] ? e->copy : 0; }

/* emit_c.c */
int64_t emit_const_int(const kir_value *v);
void emit_put_val(emitter *e, kir_val v);                         /* a value's name or literal */
smelt_status emit_put_def(emitter *e, const kir_stmt *s, int ind); /* one DEF statement, as scalar C */

/* emit_c_simd.c */
/* The prelude's helpers (emit_prelude.c): min/max, integer division, shifts,
 * float to integer; and the float16 / bfloat16 conversions, emitted only for
 * programs with such buffers or values. */
extern const char emit_prelude_helpers[];
extern const char emit_half_helpers[];
extern const char emit_stream_helper[]; /* smelt_stream_f32, for programs with stream loops */
/* The vector loops' helpers (exp, tanh, erf, neg, abs, min/max, selects) for
 * every vector ISA, each under its guard, for programs with vector loops. */
void emit_put_vec_helpers(strbuf *sb);

/* After the dialect's prelude: the helpers (min/max, integer division, float
 * conversions, mathf.inc, stream and vector helpers) that `body`, the
 * emitted kernels, calls, and those they call (emit_c_prelude.c). */
void emit_put_prelude(strbuf *sb, const dialect *d, const char *body);
/* Whether workgroup buffer b is the row a stream loop copies out (which an
 * interleaved loop's vector form skips: the C declaring it marks it used). */
bool emit_row_streamed(const kir_kernel *k, int b);
/* Stream loop i as one smelt_stream_f32 call: its LOOP_END, or -1 (nothing emitted). */
int emit_put_stream(emitter *e, int i, int ind);
/* emit_c_gemm.c: gemm loop i (kir.h, "Microkernel loops") as one call of a
 * register-blocked helper: its LOOP_END, or -1 (nothing emitted); and the
 * helpers `body` calls, with what they need. */
int emit_put_gemm(emitter *e, int i, int ind);
/* The if at statement i, where it only zeroes the accumulator block of the
 * gemm loop that follows it (ops/gemm_packed.c's first K slice; DEFs may lie
 * between): that loop's statement, else -1. The C target then writes no
 * zeroing but starts the loop's microkernel from zero under the if's
 * condition. */
int emit_gemm_zero_if(const kir_kernel *k, int i);
/* At the store loop a gemm loop's call marked (e->fused_store): the
 * AVX-512 form that stores the block from the microkernel's registers, the
 * epilogue written per row and vector, and the `#else` before the plain loop
 * (emit_c.c writes it and, at e->fused_end, the `#endif`). */
smelt_status emit_put_gemm_store(emitter *e, int i, int ind, int depth);
void emit_put_gemm_helpers(strbuf *sb, const char *body);
/* The distinct <mr>x<nr> shapes (at most max) of the calls tok<mr>x<nr>( in body. */
int emit_gemm_shapes(const char *body, const char *tok, int seen[][2], int max);
/* The A buffer of the gemm loop at statement i when its B is 8-bit panels, else -1. */
int emit_gemm_int8_a(const kir_kernel *k, int i);
/* emit_c_gemm_int8.c: whether gemm operand *v is float(load) + offset of an
 * 8-bit buffer (8-bit panels, ops/gemm_int8.c): then *v becomes the load, with
 * its dtype and the offset; and the helpers for those loops `body` calls. */
bool emit_gemm_int8_operand(const kir_kernel *k, kir_val *v, smelt_dtype *dt, int32_t *offset);
void emit_put_gemm_int8_helpers(strbuf *sb, const char *body);
/* emit_c_gemm_pairs.c: the smelt_gemm_s16p_<mr>x<nr> helpers that body calls. */
void emit_put_gemm_pairs_helpers(strbuf *sb, const char *body);
/* At a kernel's start: the int16 copies of the A operands of its 8-bit gemm
 * loops; at each such call, the arguments after B's (its offset, the copy). */
void emit_put_gemm_int8_scratch(emitter *e);
void emit_put_gemm_int8_tail(emitter *e, int a, int32_t offset);
/* Loop i as a vector loop (see emit_c_simd.c): its LOOP_END, or -1. */
int emit_vec_loop(const kir_kernel *k, int i);
/* Whether vector loop i is a strip: more lanes than a row's, run as whole
 * vectors of the widest row and the rest as its scalar loop, which then
 * begins at s<depth> (emit_c.c closes the extra block after it). */
bool emit_vec_strip(const kir_kernel *k, int i);
/* Loop i's vector form and the `#else` before its scalar form (emit_c.c writes
 * the scalar loop and the `#endif`). */
smelt_status emit_put_vec_loop(emitter *e, int i, int end, int ind, int depth);
/* Statements (begin, end) of vector loop `begin` (one emit_vec_loop accepts)
 * as one vector of `lanes` lanes, its loop value read as lane 0's, but for
 * the DEFs of values marked in skip (NULL: none). */
smelt_status emit_put_vec_body(emitter *e, int begin, int end, int lanes, const unsigned char *skip, int ind);

/* emit_c_deint.c: smelt_deint2_f32, for programs with deinterleave loops; and
 * deinterleave loop i (at nesting depth `depth`) as one call of it: its
 * LOOP_END, or -1 (nothing emitted; the loop is written as it is). */
extern const char emit_deint_helper[];
int emit_put_deint(emitter *e, int i, int ind, int depth);

/* emit_c_trans.c: smelt_trans_f32, for programs with transpose loops; and
 * transpose loop i (at nesting depth `depth`) as calls of it, 16 rows at a
 * time: its LOOP_END, or -1 (nothing emitted; the loop is written as it is). */
extern const char emit_trans_helper[];
int emit_put_trans(emitter *e, int i, int ind, int depth);

/* A stream loop's parts (emit_c_simd.c, match_stream). */
typedef struct stream_copy {
    int end, store; /* the loop's LOOP_END and its store */
    int row;        /* the workgroup row it copies out */
    kir_val base;   /* the store's index is the loop value plus base (0: none) */
    int64_t n;      /* trip count */
} stream_copy;

/* An interleaved loop (see emit_c_simd.c): the statements of loop i that the
 * interleaved form needs. */
#define ILV_MAX_STREAMS 4
typedef struct ilv_loop {
    int end;                              /* the loop's LOOP_END */
    int lane, lane_end;                   /* the vector loop in its body */
    int n_streams;                        /* stream loops fed by it */
    int stream[ILV_MAX_STREAMS];          /* their LOOP_BEGINs */
    stream_copy copy_out[ILV_MAX_STREAMS]; /* their parts */
    int row_store[ILV_MAX_STREAMS];       /* the vector loop's store each copies out */
} ilv_loop;
/* Whether loop i is an interleaved loop (fills *l). */
bool emit_ilv_loop(const kir_kernel *k, const int *alias, int i, ilv_loop *l);
/* Loop i's interleaved form and the `#else` before its plain form (emit_c.c
 * writes the plain loop, without vector forms inside, and the `#endif`). */
smelt_status emit_put_ilv_loop(emitter *e, int i, const ilv_loop *l, int ind, int depth);

#endif
