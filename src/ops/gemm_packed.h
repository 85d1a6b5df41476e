/*
 * gemm_packed.h — the C target's packed GEMM as a lowering that ops share
 * (MatMul, Gemm, Conv): C[i][j] = sum over k of A[i][k] * B[k][j] with B in
 * panels [N/NR][K][NR] (ir.h, IR_ENC_PANELS) and A read through a callback.
 *
 * Each unit of work is an MC x NC block of C (MC = MB row blocks of MR) of
 * one batch index. Over K in slices of KC the unit's rows of A are packed into
 * workgroup memory as [MB][KC][MR] by the caller's A pack (or, by default,
 * element by element through load_a), so an op supplies its own index map:
 * MatMul its fused producers and transA, Conv its implicit im2col with pads
 * as zeros. For each NR panel and row block one gemm loop (kir.h, "Microkernel
 * loops") adds the MR x NR product into accumulators in workgroup memory
 * (zeroed just before the first slice's call); the C target runs it as a
 * register-blocked microkernel (target/emit_c_gemm.c).
 * The caller's store writes each finished element where the op's output keeps
 * it, through the region's fused epilogue (lower_store).
 *
 * Defined in ops/gemm_packed.c.
 */
#ifndef SMELT_OPS_GEMM_PACKED_H
#define SMELT_OPS_GEMM_PACKED_H

#include "lower/lower.h"
#include "ops/matmul.h"

typedef struct gemm_packed gemm_packed;

/* The default unit shape (the measurements are in ops/gemm_packed.c): up to
 * MM_MB row blocks by up to MM_NC_P columns where A is packed, and at least
 * MM_MIN_UNITS units; ops/matmul.c reads them to tell when a producer-fed A
 * would be packed by more than one column unit. */
#define MM_MB 24
#define MM_NC_P 512
#define MM_MIN_UNITS 4

/* One KC slice of a unit's rows of A, for an A pack: element (i0 + t, kb + kk)
 * with t = q*MR + r goes to workgroup buffer ap at gemm_packed_a_at (row-major
 * per block: q*KCAP*MR + r*KCAP + kk, so a pack is a copy the compiler
 * vectorizes and the microkernel's MR broadcasts read at constant offsets), for
 * kk < kc and the unit's `rows` rows t (the last row block may be short:
 * the microkernel then runs on that many rows, so the rest of the block is
 * never read; writing clamped rows up to nblk*MR is harmless). */
typedef struct gemm_a_slice {
    int ap;
    int64_t kcap, mr;
    kir_val i0, rows, nblk, kb, kc;
} gemm_a_slice;

/* A unit's finished block, for a store of one's own: C[i0 + t][j0 + u] is
 * workgroup buffer acc at at + t*ld + u, for t < rows, u < cols (at 0 for
 * the unit's whole block; an MR x NR block's first element with store_each). */
typedef struct gemm_c_block {
    int acc;
    int64_t ld;
    kir_val at, i0, rows, j0, cols;
} gemm_c_block;

struct gemm_packed {
    /* the problem: batch dims (the units' leading index, bidx below), M, N, K */
    int nb;
    int64_t batch[IR_MAX_RANK];
    int64_t m, n, k;
    smelt_dtype dt;      /* SMELT_F32 */
    mm_tiles tl;         /* the target's tiles (mm_tiles_for); B's panels are tl.nr wide */
    /* B: node input b_input holding the panels [ceil(N/NR)][K][NR] (a constant
     * packed at compile time), or, when b_input < 0, scratch b_scratch holding
     * them per batch, batch b_index(bidx) at b * ceil(N/NR)*K*NR (b_index NULL: 0) */
    int b_input, b_scratch;
    kir_val (*b_index)(lower_ctx *c, const gemm_packed *g, const kir_val *bidx);
    /* a batched GEMM's constant B: input b_input holds every batch's panels,
     * batch b_index(bidx)'s from panel b * ceil(N/NR) on ([batch * ceil(N/NR)]
     * [K][NR], ir.h IR_ENC_PANELS with a logical [batch, K, N]); false: one
     * B shared by all batch indices */
    bool b_batched;
    /* A[i][k] for i < M (the default A pack's read), or a pack of one's own */
    kir_val (*load_a)(lower_ctx *c, const gemm_packed *g, const kir_val *bidx, kir_val i, kir_val k);
    void (*pack_a)(lower_ctx *c, const gemm_packed *g, const kir_val *bidx, const gemm_a_slice *s);
    /* or no pack at all: A[i][k] read in place by the microkernel, where it is
     * a plain input at an address affine in i and k (a 1x1 conv's X: i + k*P,
     * a MatMul's plain A: i*K + k; such units are at most 256 columns wide).
     * The pack is a transposing copy repeated by every column block of the same
     * rows; reading in place costs nothing (ops/gemm_packed.c says what it
     * measured). NULL: pack_a or load_a. */
    kir_val (*read_a)(lower_ctx *c, const gemm_packed *g, const kir_val *bidx, kir_val i, kir_val k);
    /* B[k][j] read in place instead of panels (b_input and b_scratch unused),
     * where it is at an address affine in k and j, unit stride in j, and
     * readable for j up to whole panels (N a multiple of NR, or rows padded):
     * a conv's X or im2col with the positions on N (ops/conv_gemm.c). NULL: panels. */
    kir_val (*read_b)(lower_ctx *c, const gemm_packed *g, const kir_val *bidx, kir_val k, kir_val j);
    /* k-groups of kgroup (2 or 4) elements (an integer convolution,
     * ops/conv_gemm.c): K counts groups of the contraction's k and each step
     * of the gemm loop adds A[i][G*k + h] * B[G*k + h][j] over h < G, read_a
     * called with the element's k (G*k + h) and this with the group k and h;
     * needs read_a. The C target runs pairs on int16 and quads on uint8 B
     * and int8 A (target/emit_c_gemm_pairs.c). NULL: one k a step. */
    kir_val (*read_b_group)(lower_ctx *c, const gemm_packed *g, const kir_val *bidx, kir_val k, int h, kir_val j);
    int kgroup;
    /* C[i][j] = v, i < M, j < N, in a loop with j innermost; or the loops over
     * a whole block written by the caller (store_block, when set) */
    void (*store)(lower_ctx *c, const gemm_packed *g, const kir_val *bidx, kir_val i, kir_val j, kir_val v);
    void (*store_block)(lower_ctx *c, const gemm_packed *g, const kir_val *bidx, const gemm_c_block *b);
    /* store_block takes any block and, where K is one slice, is called for
     * each MR x NR block right after its gemm loop rather than once for the
     * unit: the block is then read back while it is in L1, and the
     * epilogue's stores spread among the multiply-adds */
    bool store_each;
    /* columns per unit at least this many (0: no floor): an A pack dearer than
     * a copy (an implicit im2col) is repeated per column block, so splitting
     * columns to spread a small M over the threads would multiply it */
    int64_t nc_min;
    int64_t mb_max, nc_max; /* row blocks and columns per unit at most (0: the defaults) */
    /* K slice at most this deep (0: the target's KC): where read_a reads A
     * down k a cache line apart (a conv's X, i + k*P), a slice touches one line
     * of A per k beside its KC x NR floats of B (ops/conv_gemm.c says what
     * that cost) */
    int64_t kc_max;
    void *user;          /* the caller's, for its callbacks */
    /* filled by gemm_packed_lower */
    int64_t mr, mb, nc;
};

/* Row i of the unit clamped into [0, M) (rows of the last block past M). */
kir_val gemm_packed_clamp_row(kir_kernel *K, const gemm_packed *g, kir_val i);
/* Where element (block q, row r, k kk) of a KC slice of A goes in ap ([MB][MR][KCAP]). */
kir_val gemm_packed_a_at(kir_kernel *K, int64_t kcap, int64_t mr, kir_val q, kir_val r, kir_val kk);

/* An element v of 8-bit panels (ir.h) as the float dt it stands for:
 * float(v) + offset, the form the C target's microkernels take
 * (target/emit_c_gemm_int8.c). Defined in ops/gemm_int8.c. */
kir_val gemm_int8_widen(kir_kernel *K, smelt_dtype dt, kir_val v, int32_t offset);

/* Panels of B: ceil(N / NR). */
int64_t gemm_packed_panels(const gemm_packed *g);

/* The two-core span of a GEMM's units, in block-panels (MR rows by NR
 * columns): rb row blocks in units of mb, np panels in units of npu (the last
 * of each smaller), batch times, each unit whole to one core, the largest
 * first to the less loaded core; 0 where there are more than 64 units.
 * gemm_packed_lower evens the units out by it. */
int64_t gemm_packed_two_core_span(int64_t batch, int64_t rb, int64_t mb, int64_t np, int64_t npu);

/* The kernel: units over batch x row blocks x column blocks, spread over the
 * threads (columns split until there are enough units at small M). */
smelt_status gemm_packed_lower(lower_ctx *c, gemm_packed *g);

#endif
