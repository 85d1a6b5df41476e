/*
 * passes.h — graph passes: Graph in, Graph out, in pipeline order.
 *
 *   graph_bind_inputs  fix symbolic input dims from the shapes the caller gives,
 *                      and turn graph inputs whose values decide shapes (inputs
 *                      in an op's value_in mask) into constants when given.
 *   graph_infer        shape and dtype inference for every node, in order,
 *                      folding each node whose inputs are all constant through
 *                      an evaluator the caller gives (graph/ uses no later
 *                      stage; api/ passes lower_eval_node, which lowers the
 *                      node and runs the Kernel IR interpreter, so folding
 *                      shares the kernels' semantics exactly).
 *   graph_dce          drop nodes whose outputs nobody reads, then compact.
 *
 * Each pass ends with ir_verify in debug and test builds.
 */
#ifndef SMELT_GRAPH_PASSES_H
#define SMELT_GRAPH_PASSES_H

#include "ir/ir.h"

/* requires: an imported graph. guarantees: every input has a concrete shape,
 * or the error names the input and the unbound dim. */
smelt_status graph_bind_inputs(ir_graph *g, int n, const smelt_tensor *inputs);

/* Largest tensor (elements) graph_infer folds at compile time; larger constant
 * expressions are left to run-time kernels. */
#define GRAPH_FOLD_MAX_ELEMS (16 * 1024 * 1024)

/* Computes node `node`'s outputs from its constant inputs into the outputs'
 * data, which graph_infer has allocated; returns an error naming the node on
 * failure. */
typedef smelt_status (*graph_eval_fn)(const ir_graph *g, int node);

/* requires: bound inputs. guarantees: every live tensor has dtype and shape;
 * with `eval`, nodes with all-constant inputs are folded (dead) and their
 * outputs hold data; with NULL, only shape rules that compute values (Shape,
 * Size, Constant...) fold. */
smelt_status graph_infer(ir_graph *g, graph_eval_fn eval);

/* requires: inferred graph. guarantees: no dead node, no unreachable tensor. */
smelt_status graph_dce(ir_graph *g);

/* Algebraic simplification: a Conv whose only consumer is an inference-mode
 * BatchNormalization with constant parameters (and constant Conv weights)
 * absorbs it: W' = W * s, B' = (B - mean) * s + bias with
 * s = scale / sqrt(var + epsilon), computed in double at compile time.
 * requires: inferred graph. guarantees: the graph computes the same values;
 * folded BatchNormalization nodes are dead (run graph_dce after). */
smelt_status graph_fold_batchnorm(ir_graph *g);

/* A Gemm with transA or transB set on a constant operand reads a copy of it
 * transposed at compile time instead, and the flag is cleared: the kernel
 * then reads it row by row with no transposing pass on every run. Likewise an
 * RNN/GRU/LSTM with constant W and R reads copies in the [D, K, N] order its
 * lowering works in, as PackedRNN/PackedGRU/PackedLSTM (ir/ops.h).
 * requires: inferred graph. guarantees: the graph computes the same values;
 * the original constant is left for graph_dce when nothing else reads it. */
smelt_status graph_fold_gemm_transpose(ir_graph *g);

/* DynamicQuantizeLSTM's R after graph_fold_gemm_transpose (float32 [D, H, N]
 * less its zero point, which is gone) held as 8-bit panels where its values
 * allow (graph_int8_range) and N is whole panels: ir.h IR_ENC_PANELS of `cols`
 * columns, [D * N / cols, H, cols], logically [D, H, N]; or, where also 255
 * times each column's sum of |r| is within 2^24, int16 k-pair panels
 * [D * N / cols, ceil(H / 2), cols * 2] (rows 2kp and 2kp + 1 of each column
 * side by side, 0 past H) for the k-pair microkernel. For the C target
 * alone (its recurrence reads them with the int8 microkernel,
 * ops/recurrent_lower.c); defined in graph/fold_gemm.c.
 * requires: inferred graph. guarantees: the graph computes the same values. */
smelt_status graph_pack_recurrent_r(ir_graph *g, int64_t cols);
/* The panel width: 32 float32 lanes, four AVX2 accumulators a column block,
 * so a one-row product is not bound by one FMA chain's latency. */
#define GRAPH_RNN_PANEL_COLS 32

/* W of PackedRNN/PackedGRU/PackedLSTM (float32 [D, K, N]) and of DynamicQuantizeLSTM after
 * graph_fold_gemm_transpose (int8, or float32, less its zero point, which is gone) held as the
 * packed GEMM's panels of nr columns (ir.h IR_ENC_PANELS, batched: [D * ceil(N / nr), K, nr],
 * logically [D, K, N]; the quantized one's 8-bit where its values allow, graph_int8_range), so
 * the input projection's GEMM reads B contiguously (ops/recurrent_lower.c). For the C target
 * alone; defined in graph/fold_gemm.c.
 * requires: inferred graph. guarantees: the graph computes the same values. */
smelt_status graph_pack_recurrent_w(ir_graph *g, int64_t nr);

/* Where packed weights live when several graphs share them (the model's
 * programs): find returns the packed copy of constant data `src` for (nr,
 * form) made earlier, or NULL; keep takes over `data` (malloc'd, `bytes`
 * long) as that copy and returns the copy to use (another thread's, when it
 * kept one first; NULL on OOM, `data` then freed). Both may be called from
 * several threads at once. `form`: GRAPH_PACK_TRANS (src is [n, k]) and
 * GRAPH_PACK_INT8 (8-bit panels, graph_pack_int8) or'ed. */
#define GRAPH_PACK_TRANS 1
#define GRAPH_PACK_INT8 2
#define GRAPH_PACK_KPAIRS 4 /* an integer Conv's weight as int16 k-pair rows (ir.h IR_ENC_KPAIRS; nr 0) */
#define GRAPH_PACK_KQUADS 8 /* as int8 k-quad rows (ir.h IR_ENC_KQUADS; nr 0) */
#define GRAPH_PACK_ROWSUMS 16 /* and those rows' sums (float32 [M]) */
typedef struct graph_pack_cache {
    void *(*find)(void *user, const void *src, int64_t nr, int form);
    void *(*keep)(void *user, const void *src, int64_t nr, int form, void *data, size_t bytes);
    void *user;
} graph_pack_cache;

/* 8-bit panels (graph/pack_int8.c; ir.h, IR_ENC_PANELS): whether the n
 * float32 values v are all integers that 8 bits hold after subtracting one
 * offset: int8 with offset 0 where they are within [-128, 127], else uint8
 * with offset min(v) where max - min <= 255. */
bool graph_int8_range(const float *v, int64_t n, smelt_dtype *dt, int32_t *offset);
/* The panels [ceil(n/nr)][k][nr] of from ([k, n], or [n, k] when trans) as
 * dt (graph_int8_range's choice) less offset; columns past n store 0. */
void graph_pack_int8(const float *from, void *to, int64_t k, int64_t n, int64_t nr, bool trans, smelt_dtype dt,
                     int32_t offset);
/* MatMuls with at most this many rows of A get 8-bit panels where the values
 * allow: ddddocr_ocr_quant's 20 x 1024 x 8210 MatMulInteger reads its 33.6 MB
 * of float panels from memory on every call (README, "Quantized models"). */
#define GRAPH_INT8_MAX_M 64

/* MatMul / Gemm whose B is a float32 constant matrix (and A is not constant)
 * read a copy of it packed into panels of nr columns instead (ir.h,
 * IR_ENC_PANELS; a Gemm's transB is applied in the packing and cleared). For
 * the C target, whose microkernels read such panels (ops/matmul.c); nr comes
 * from its tile table (mm_tiles_for). A weight two nodes share is packed
 * once; with a cache (may be NULL: the copies go in g's arena), once for all
 * graphs that use the cache.
 * `keep_plain` (a device list where some devices do not run C): each
 * rewritten node also keeps its plain B and the packed one as tensor
 * attributes (GRAPH_PLAIN_B, GRAPH_PACKED_B; and GRAPH_PLAIN_TRANS_B, a
 * Gemm's transB before packing), so graph_matmul_encoding can give a region
 * placed on such a device the plain weight back: one graph, each constant in
 * each encoding some device reads.
 * A Conv with IR_ATTR_INT_AMAX (an integer convolution in float32,
 * onnx/quantized.c) whose weight holds integers within the bound gets int16
 * k-pair rows instead (ir.h IR_ENC_KPAIRS), without `keep_plain`; where
 * `int8_dot` (NULL: never) answers true and its weights fit int8, int8 k-quad
 * rows (IR_ENC_KQUADS) and a fifth input, their sums (ir.h). `int8_dot` is
 * asked only where a Conv could take the quads (at most once a call): the C
 * target's answer runs the compiler (rt_cc_int8_dot), which a model without
 * integer convolutions, or a cached program, should not wait for.
 * requires: inferred graph. guarantees: the graph computes the same values;
 * the original constant is left for graph_dce when nothing else reads it. */
smelt_status graph_pack_weights(ir_graph *g, int64_t nr, bool (*int8_dot)(void), const graph_pack_cache *cache,
                                bool keep_plain);

/* The most bytes of im2col scratch a Conv on the packed GEMM takes
 * (ops/conv_gemm.c: A^T of as many images as fit, KH*KW/(sh*sw) times X's
 * size each); a kernel larger than 1x1 whose one image needs more stays on the
 * direct form. 16 MiB: a 3x3 32 -> 32 conv at 112x112 (14 MiB) ran 1.5x faster
 * than direct, at 224x224 (56 MiB, written and read back from DRAM) 1.3x slower. */
#define GRAPH_IM2COL_MAX_BYTES ((int64_t)16 << 20)
/* That scratch's row length: K = C*KH*KW rows of M = OH*OW output positions
 * per image, each row M rounded up to an odd number of 64-byte lines (the
 * microkernel reads down a column of it, rows apart; an odd number of lines
 * spreads those reads over all of L1's sets). */
static inline int64_t graph_im2col_ld(int64_t m) { return ((m + 15) / 16 | 1) * 16; }
/* Whether the im2col of one image of such a conv fits the scratch. */
static inline bool graph_im2col_fits(int64_t m, int64_t k)
{
    int64_t lim = GRAPH_IM2COL_MAX_BYTES / 4; /* floats; the tests keep k * ld from overflowing */
    return m >= 1 && k >= 1 && m <= lim && k <= lim / graph_im2col_ld(m);
}

/* Whether a group-1 2-D float32 Conv runs as the packed GEMM with its output
 * positions on N and its plain weight on A (ops/conv_gemm.c, conv_cols_lower),
 * taps = KH*KW, k = C*taps, m output channels, where its shape allows it (a
 * 1x1 stride-1 unpadded conv, X read in place, or any im2col shape) and its
 * OH*OW is a multiple of the panel width nr: at 7x7 the four panels of 16 for
 * 49 positions made ResNet-18's 3x3 512 -> 512 convs 6-9% slower. The
 * block is then stored to NCHW along unit-stride rows of both the
 * accumulators and Y; with the positions on M (the panel form) the store read
 * the accumulators a row apart per element, about half of a 3x3 s2 3 -> 32
 * conv at 112x112 (MobileNetV2's stem: its GEMM kernel 0.60 -> 0.30 ms with the
 * store cut to one channel). Measured against the form each shape had before
 * (conv + relu alone, min of 3-5 interleaved rounds of 30-50 runs, 1 thread):
 * 1x1 at 112x112 16 -> 96 0.714 -> 0.699 ms, 32 -> 16 0.215 -> 0.191; at 56x56
 * 24 -> 144 0.377 -> 0.339, 144 -> 24 0.340 -> 0.242, 96 -> 24 0.225 -> 0.164
 * (those were direct), 64 -> 256 1.49 -> 1.41, 256 -> 64 1.21 -> 1.18, 64 -> 64
 * 0.332 -> 0.314; 32 -> 192 at 28x28 0.169 -> 0.134, 128 -> 512 1.24 -> 1.18,
 * 512 -> 128 1.17 -> 1.13; 256 -> 256 at 16x16 0.382 -> 0.358; 64 -> 32 at
 * 64x48 0.192 both; with the im2col 3x3 s2 3 -> 32 at 224 in 0.431 -> 0.377,
 * 7x7 s2 3 -> 64 4.16 -> 3.76, 3x3 s2 64 -> 128 at 56 in 1.40 -> 1.33, 5x5
 * 32 -> 64 at 32x32 1.35 -> 1.27, 3x3 s1 16 -> 32 at 64x64 0.500 -> 0.505.
 * Tiny 1x1s stay direct: 3 -> 16 at 112x112 0.045 -> 0.046, 16 -> 4 0.032 ->
 * 0.035 (K = 16 rows of 4: the block's bookkeeping outweighs 4 channels).
 * Where OH*OW is no multiple of nr, the last panel would read past X's
 * plane, so X is read through the im2col (its rows padded); a 1x1 that
 * expands (M >= 4K) with at most 1/16 of the panel columns past OH*OW still
 * wins: MobileNetV2's 96 -> 576 at 14x14 0.347 -> 0.261 ms, 64 -> 384 0.145 ->
 * 0.135 (conv + Clip alone, min of 500 runs, 3 interleaved rounds, 1 thread).
 * Those that contract stay on the panels (576 -> 96 at 14x14 0.242 -> 0.257,
 * 384 -> 64 0.106 -> 0.117), as do the 7x7 planes, 15 of 64 columns wasted
 * (160 -> 960 0.236 -> 0.243, 320 -> 1280 0.589 -> 0.711, 960 -> 320 0.417 ->
 * 0.511). Convs with a kernel larger than 1x1 take this form from M = 16
 * output channels (the panel form wants 32): the channels are the
 * microkernel's rows, so 16 of them are two and a half row blocks, where the
 * panel form had too few columns per packed A element. Against the direct
 * form (conv + HardSwish alone, min of 200-300 runs, 2-3 interleaved rounds, 1
 * thread, load average 4 on the 2-core VM): 3x3 s2 stems 3 -> 16 at 224 in
 * 0.296 -> 0.242 ms (PP-LCNet's, onnxruntime 0.245), 3 -> 16 at 320 0.602 ->
 * 0.506, 3 -> 24 at 224 0.443 -> 0.310; 3x3 s2 16 -> 24 at 56 in 0.124 ->
 * 0.083; 3x3 s1 16 -> 16 at 56x56 0.26-0.28 -> 0.245; a near tie left in,
 * 5x5 8 -> 16 at 28x28 0.0896 -> 0.0922. Re-measured on session 15's build
 * (min of 400-1000 runs, three interleaved rounds, 1 thread): the stem 3 -> 16
 * at 224 0.295 -> 0.243, 3x3 s2 16 -> 24 at 56 0.120 -> 0.081, 3x3 s1 8 -> 16 at
 * 16x16 0.0120 -> 0.0108, and even 8 -> 16 3x3 s2 at 8x8 (the test model cnn's
 * n70, one panel of positions, now two kernels) 0.0017 -> 0.0013. */
static inline bool graph_conv_on_cols(int64_t taps, int64_t k, int64_t m, int64_t p, int64_t nr)
{
    if (p % nr) return taps == 1 && m >= 4 * k && k >= 8 && (p + nr - 1) / nr * nr - p <= p / 16;
    if (taps == 1) return k >= 8 && m >= 8;
    return k >= 27 && m >= 16;
}

#define GRAPH_PLAIN_B "smelt.plain_b"
#define GRAPH_PACKED_B "smelt.packed_b"
#define GRAPH_PLAIN_TRANS_B "smelt.plain_trans_b"

/* Node `node` (a MatMul or Gemm that graph_pack_weights rewrote keeping the
 * plain B) reads its B packed (`packed`) or plain; other nodes are left. */
smelt_status graph_matmul_encoding(ir_graph *g, int node, bool packed);

/* Winograd F(m x m, 3 x 3) (graph/winograd.c, ops/conv_winograd.h): a
 * float32 Conv with a constant 3x3 weight, stride 1, dilation 1, group 1,
 * explicit pads (auto_pad NOTSET), at least `min_channels` input and output
 * channels and `min_tiles` output tiles of m x m (else, for m = 4, F(2x2, 3x3)
 * from `min_tiles_2x2` tiles of 2 x 2; 0: min_tiles) becomes WinogradInput ->
 * WinogradGemm (the (m+2)^2 products as one batched GEMM with constant,
 * compile-time transformed filters) -> WinogradOutput (bias added there):
 * three kernels. With nr > 0 the filters are made as each product's panels of
 * nr columns one after the other (IR_ENC_PANELS with the logical shape
 * [(m+2)^2, C, K]) for the C target's microkernels; else row-major
 * [(m+2)^2, C, K].
 * requires: inferred graph. guarantees: the graph computes the same values up
 * to the transforms' rounding; rewritten Convs are dead (run graph_dce after);
 * nodes stay in topological order. */
typedef struct graph_winograd_rule {
    int m;                           /* 2 or 4 */
    int64_t min_channels, min_tiles; /* the rule of when it pays */
    int64_t nr;                      /* panel width, or 0 */
    int64_t min_tiles_2x2;           /* F(2x2)'s own floor where m = 4 does not pay (0: min_tiles) */
} graph_winograd_rule;
/* The C target's rule, measured (README, "Benchmarks"). */
#define GRAPH_WINOGRAD_M 4
/* C and K at least 32 (K = C per GEMM). Single 3x3 convs C -> K, pads 1, bias
 * + SiLU, batch 1, ms at 1 thread, direct (im2col GEMM) / Winograd, the
 * median of 30 runs, three interleaved rounds, session 18 (Zen 4 VM, loaded):
 *               16 lanes        8 lanes (SMELT_VECTOR_WIDTH=8)
 *   16->16  80x80   0.40 / 0.57     0.39 / 0.48
 *   16->64  80x80   1.33 / 3.2-4.2
 *   24->24  32x80   0.31 / 0.24     0.30 / 0.23
 *   32->32  20x20   0.099 / 0.074   0.107 / 0.071
 *   32->32  40x40   0.36 / 0.20     0.37 / 0.20
 *   32->128 40x40   1.23 / 0.61
 *   48->48  16x40   0.29 / 0.23     0.29 / 0.19
 *   48->192 16x40   1.09 / 0.66     1.03-1.09 / 0.63-0.65
 *   48->96  32x32   0.88 / 0.56
 *   64->64  28x28   0.65-0.71 / 0.24
 * At 16 channels the GEMMs are too shallow for the transforms (bench cnn8 was
 * 1.5x slower); from 24 Winograd wins at both widths alone, but in
 * ddddocr_det the 24-channel convs at 104x104 (residual add in the output
 * transform) lost: that model ran 61 -> 66 ms at 1 thread with the floor at
 * 24, 59-60 with it at 32 or 48 (and with 24 a later, unchanged 96-channel
 * output transform took 1.7 ms a run instead of 0.35, for a reason not found:
 * the same code at the same arena offsets). So the floor is 32. (It was 64,
 * from AVX2-era measurements at 64 channels and up only.) */
#define GRAPH_WINOGRAD_MIN_CHANNELS 32
/* Tiles at least: 49 of 4x4 for F(4x4), else 16 of 2x2 for F(2x2), else the
 * im2col GEMM (ops/conv_gemm.c). Measured with the three-kernel form (one
 * batched GEMM, the vectorized input transform): single-conv models C -> C
 * with bias + ReLU, pads 1, batch 1; ms, min of 3 interleaved rounds of 100
 * runs, on the loaded 2-core AVX2 VM (its second core is mostly busy: the
 * 2-thread column is noisier, spread up to 1.6):
 *                      1 thread                 2 threads
 *   C    HxW   F(4x4)  F(2x2)  im2col    F(4x4)  F(2x2)  im2col   tiles 4x4/2x2
 *   64   56    1.23    1.92    2.96      1.22    1.79    2.02     196 / 784
 *   64   28    0.34    0.43    0.73      0.34    0.43    0.73      49 / 196
 *   128  28    1.01    1.44    2.77      1.02    1.47    1.94      49 / 196
 *   64   14    0.22    0.11    0.19      0.22    0.11    0.19      16 / 49
 *   128  14    0.55    0.36    0.69      0.55    0.37    0.69      16 / 49
 *   256  14    1.62    1.63    2.65      1.64    1.62    2.65      16 / 49
 *   256  7     0.49    0.51    0.74      0.50    0.51    0.59       4 / 16
 *   512  7     2.97    2.41    2.91      1.94    1.57    2.32       4 / 16
 * F(4x4) from 49 tiles; below it F(2x2), now also at 16 tiles (7x7, ResNet-18's
 * layer4, which the 16 separate GEMMs had left to im2col: 3.16 ms against 3.4).
 * At 4 tiles of 4x4 F(4x4) is no better than F(2x2) at 512 channels (its 36
 * transformed filters, 2.25x the direct weights, stream for 4 rows). */
#define GRAPH_WINOGRAD_MIN_TILES 49
#define GRAPH_WINOGRAD_MIN_TILES_2X2 16
smelt_status graph_winograd(ir_graph *g, const graph_winograd_rule *rule);

/* If, Loop, Scan (graph/control.c), the op table's shape rule for them (OPF_CONTROL):
 * replaces node `node` by the nodes it runs, which graph_infer infers next, or
 * keeps it as one run-time node (graph/control_rt.c), which it then skips. */
smelt_status control_expand(ir_graph *g, int node);

/* The evaluator of the graph_infer now running on this thread (NULL outside
 * one): control flow infers its subgraphs with the same folding. */
graph_eval_fn graph_infer_evaluator(void);

/* ---- run-time control flow (graph/control_rt.c) ----------------------------
 * The rule: an If whose condition is known when compiling inlines its branch;
 * a Loop whose trip count is known and at most CONTROL_UNROLL_MAX, and a Scan
 * at most that long, are unrolled (small loops still fuse across iterations).
 * Everything else stays one node marked `smelt_rt` that the program runs on the
 * host: its subgraphs are compiled once each into child programs (api/) and
 * its outputs are extended with the parent memory the loop needs, so a run
 * allocates nothing per iteration:
 *   If    in:  cond, captures                 out: results (unchanged)
 *   Loop  in:  M, cond, N carried, captures   out: N carried, K scan outputs,
 *                                                  N carried (second set: the two
 *                                                  swap each iteration), iter (i64),
 *                                                  cond (bool): the body's inputs
 *   Scan  in:  N states, S scan inputs, caps   out: N states, K scan outputs,
 *                                                  N states (second set)
 * (attribute smelt_nout: N + K, the model's outputs). Scan outputs are
 * preallocated for the whole trip count and written at offset i x slice. An
 * output whose shape is known only after the run (If branches of different
 * shapes, a Loop stopped early by its condition) is allowed only as a graph
 * output read by no other node: its buffer is sized for the largest case,
 * bit k of attribute smelt_dyn marks output k, and the run reports the shape
 * it produced. A scan output of a Loop with no trip count known when compiling
 * has no bound: it is planned with 0 slices (bit k of smelt_grow) and written
 * into a run-time buffer that doubles when full (a few allocations in a run,
 * none once it is large enough); allowed only as such a graph output too,
 * else the Loop is unrolled (its condition must then fold). */
#define CONTROL_UNROLL_MAX 16
#define CONTROL_RT_ITERS_MAX ((int64_t)1 << 31) /* run-time guard: a loop running longer is an error, not a hang */

/* Whether node n is a control node kept for run time. */
bool control_is_runtime(const ir_node *n);
/* Try to keep node `node` (If with a run-time condition, Loop, Scan) as a
 * run-time node; *kept false (and the graph unchanged) when the rule says
 * unroll or the body cannot run as one program (a carried value changing
 * shape, a scan over an axis other than 0). */
smelt_status control_keep(ir_graph *g, int node, bool *kept);
/* The child graph of subgraph attribute `attr` of run-time node n of g, ready
 * to compile: inputs typed from the parent (Loop: iter i64 and cond bool
 * scalars; Scan inputs without their sequence axis), constant captures turned
 * into constants of the child (so they fold), other captures kept as inputs
 * after the formal ones. *child_in[i] (malloc'd, one per child input) is the
 * node input it reads: >= 0 a node input index, -1 the iteration number,
 * -2 the condition. */
smelt_status control_child_graph(const ir_graph *g, const ir_node *n, const char *attr, ir_graph **out, int **child_in);

#endif
