/*
 * conv_depthwise.c — 2-D depthwise convolution on the CPU: group == C == M,
 * one filter per channel (MobileNet's 3x3 s1/s2 layers, EfficientNet's 5x5),
 *     y[n][c][oh][ow] = B[c] + sum over kh, kw of W[c][0][kh][kw] * X[n][c][oh*sh + kh*dh - ph][ow*sw + kw*dw - pw]
 * (zero outside X).
 *
 * requires: shapes inferred by infer_Conv; one thread per workgroup.
 * guarantees: one kernel; each output element summed over all its taps in
 *             registers, from a zero-padded copy of the input rows it reads,
 *             and stored once, through lower_store (the region's epilogue).
 *
 * Planes whose rows would fill half a vector or less take the lanes form
 * (dwl_body, below): channels across the vector instead of a row's outputs.
 *
 * A unit is RB output rows of one channel. Its input rows, padded with zeros
 * to Wp = pw + W + pw' columns, are copied once into a tile of workgroup
 * memory (each element of a fused producer computed once), with the columns
 * of a stride sw dealt into sw phase planes: padded column φ + sw*q goes to
 * plane φ at q, each plane Wq = ceil(Wp / sw) wide. Output (r, ow), tap
 * (kh, kw) then reads tile row r*sh + kh*dh, plane (kw*dw) % sw, column
 * ow + (kw*dw) / sw: one loop over a row's outputs reads every tap
 * unit-stride, with no bound test, and sums them in one register before the
 * store. The KH*KW weights are loaded once per unit.
 *
 * Measured against the generic flat form (ops/conv.c: the same kind of tile,
 * but accumulators in workgroup memory, a pass over the block's positions
 * per group of taps, then a copy out), min of 200 runs, 1 thread, 3x3 pad 1
 * with a fused Clip: 144 ch at 56x56 0.252 -> 0.222 ms, 96 ch 112 -> 56 s2
 * 0.370 -> 0.316, 144 ch 56 -> 28 s2 0.13-0.145 -> 0.125, 32 ch at 112x112
 * 0.216 -> 0.205, 192 ch at 28x28 a tie (0.086-0.107 either way). Rows of
 * fewer than DW_MIN_ROW outputs lose (384 ch at 14x14 0.066 -> 0.13, 960 ch
 * at 7x7 0.090 -> 0.10-0.15, 192 ch 28 -> 14 s2 0.058 -> 0.084): a loop over
 * 7 or 14 outputs is mostly its scalar remainder, where the flat form runs
 * one loop over a whole block of rows; those stay there (so did a form for
 * them that runs all of a unit's rows as one loop over r*wq + ow, dropping
 * the wq - OW columns past each row: 256 ch 5x5 at 14x14 0.085 -> 0.11 ms,
 * 128 ch 28 -> 14 s2 a tie at 0.042). Where vectors have 16 lanes, a row of
 * 4 to 16 outputs of a window up to 3 wide (5 wide at stride 1, rows of 11
 * or more) is one masked vector instead (kir.h, "Masked loops"), and those
 * rows come here after all (numbers at masked_row); so do the last 4 to 15
 * outputs of a longer row, and with them stride-1 rows of 17 to 27 (numbers
 * at dw_body and tail_row). At stride 1 a step computes two output rows,
 * whose taps share all but one tile row (dw_body). A first version
 * without the tile (taps read from X with the edge columns and rows guarded)
 * was 1.5-2x slower than the flat form on all of these. Filling all sw planes
 * in one loop over their common interior columns (one stride-sw group of
 * loads, which the C compiler vectorizes with permutes and blends) instead of
 * a loop per plane was slower: 96 ch 112 -> 56 s2 0.315 -> 0.340 ms, 144 ch
 * 56 -> 28 s2 0.125 -> 0.141 (min of 300 runs, 1 thread, three rounds each;
 * 0.271 -> 0.291 again in session 15). At stride 2 that loop is now a
 * deinterleave loop (kir.h; dw_fill has its numbers), which the C emitter
 * writes as shuffles.
 *
 * The expanding 1x1 conv that feeds these layers (16 -> 96 at 112x112, 24 ->
 * 144 at 56x56) is not computed while filling the tile, though its wide
 * output would then never go to memory: both ways tried lost to the packed
 * GEMM (ops/conv_gemm.c) followed by this kernel (min of 200 runs, 1 thread,
 * 1x1 + Clip + 3x3 depthwise + Clip, against 0.55 ms for 24 -> 144 at 56x56 s1
 * and 1.00 for 16 -> 96 at 112x112 s2). As an inlined producer, each tile
 * element its K-term dot product, 4 channels a unit: 1.0 and 3.3 ms (the C
 * loop over the tile row holds 4K weights and runs at ~6 multiply-adds a
 * cycle; stride 2 reads X two apart). With the rows of 6 channels computed
 * by the gemm microkernel (6x16, ~17 multiply-adds a cycle) into a row
 * buffer, bias and Clip applied on the copy into the phase planes: 0.59 and
 * 1.14 ms, MobileNetV2 10-20% more user CPU time. What remains is the copy
 * (a quarter of the s2 kernel: strided reads per phase plane) and the halo
 * rows computed twice (25% at 8 rows a unit, stride 1); the GEMM's output
 * stays in L2/L3 at these sizes, so the traffic saved is small.
 */
#include "lower/lower.h"
#include "ops/conv.h"

#define DW_MAX_TAPS 64        /* unrolled taps (8x8); larger windows take the generic form */
#define DW_STACK_BYTES (64 * 1024)
/* Stride 2: the tile's phase planes (and so its rows) start a multiple of this many floats apart,
 * 64 bytes, so a row's vectors load the planes' taps at kw = 0 and 1 aligned (the third, one
 * column on, is not) instead of across cache lines at the 2 * ceil(wp / 2) stride: 3x3 s2 pad 1 +
 * Clip, the emitted kernel alone in a harness, min of 2000 runs, 1 thread, three rounds: 144 ch
 * 56 -> 28 (planes 29 -> 32) 77.6-80.4 -> 73.4-74.0 us, 96 ch 112 -> 56 (57 -> 64) 169.7-173.9
 * -> 155.4-168.4; inside MobileNetV2 (each kernel's fastest of 150 runs, three rounds, where
 * its input comes from L3) less: 78-82 -> 77-79, 168-171 -> 167-169, 192 ch 28 -> 14 29-30 -> 28 */
#define DW_PLANE_ALIGN 16
#define DW_ROW_OUTPUTS 512    /* outputs per unit, about */
#define DW_MIN_ROW 28         /* narrower output rows take the flat form (measured above), */
#define DW_MASKED_ROW 4       /* unless a row of DW_MASKED_ROW to 16 outputs is one masked vector */

typedef struct dw_job {
    window_geom w;
    int64_t rb, hr;       /* output rows per unit; tile rows ((rb - 1)*sh + (kh - 1)*dh + 1) */
    int64_t wq, ws, plane; /* phase plane width; its stride in a tile row (DW_PLANE_ALIGN); a tile row (sw planes) */
    smelt_dtype dt;
    bool bias;
    bool masked;          /* a row of outputs (and a span of the fill) is one masked loop (kir.h) */
    bool masked_tail;     /* a row's outputs past its last whole vector are one masked loop (dw_body) */
} dw_job;

/* Columns [lo, hi) of plane phi in tile row t (at trow): X's input columns
 * q*sw + phi - pl (x), or zeros. */
static void dw_fill_span(lower_ctx *c, const dw_job *j, int tile, kir_val trow, int64_t phi, const kir_val *nci,
                         int64_t lo, int64_t hi, bool x)
{
    kir_kernel *K = c->k;
    if (lo >= hi) return;
    /* a masked loop runs from 0 */
    kir_val q = j->masked ? kir_add(K, kir_loop_begin_masked(K, hi - lo), kir_idx(K, lo))
                          : kir_loop_begin_parallel(K, kir_idx(K, lo), kir_idx(K, hi));
    kir_val v = kir_const_f(K, j->dt, 0);
    if (x) {
        kir_val xi[4] = {nci[0], nci[1], nci[2], kir_add(K, kir_mul(K, q, kir_idx(K, j->w.stride[1])), kir_idx(K, phi - j->w.pad_lo[1]))};
        v = lower_load(c, 0, xi);
    }
    kir_store(K, tile, kir_add(K, kir_add(K, trow, kir_idx(K, phi * j->ws)), q), v);
    kir_loop_end(K);
}

/* The unit's tile: rows oh0*sh - ph + t for t < hr, zero outside X. At
 * stride 2 the columns where both planes read X are one deinterleave loop
 * (kir.h): 96 ch 112 -> 56 s2 + Relu 0.271 -> 0.229 ms, 64 ch 56 -> 28
 * 0.0626 -> 0.0583, 32 ch 112 -> 56 0.1175 -> 0.100 (min of 1000 runs, three
 * interleaved rounds, 1 thread); as a plain loop of two stride-2 loads (the
 * compiler's permutes and blends) it lost, 0.271 -> 0.291, against a loop per
 * plane. */
static void dw_fill(lower_ctx *c, const dw_job *j, int tile, kir_val n, kir_val ch, kir_val oh0)
{
    const window_geom *w = &j->w;
    kir_kernel *K = c->k;
    kir_val zero_i = kir_idx(K, 0), fzero = kir_const_f(K, j->dt, 0), one = kir_idx(K, 1);
    int64_t sw = w->stride[1], pl = w->pad_lo[1], in_w = w->in[1];
    kir_val t = kir_loop_begin(K, zero_i, kir_idx(K, j->hr), one);
    kir_val ih = kir_add(K, kir_add(K, kir_mul(K, oh0, kir_idx(K, w->stride[0])), t), kir_idx(K, -w->pad_lo[0]));
    kir_val row_ok = kir_binary(K, KIR_AND, kir_binary(K, KIR_GE, ih, zero_i), kir_binary(K, KIR_LT, ih, kir_idx(K, w->in[0])));
    kir_val trow = kir_mul(K, t, kir_idx(K, j->plane)), nci[3] = {n, ch, ih};
    kir_if_begin(K, row_ok);
    /* plane phi's column q holds input column q*sw + phi - pl: zeros in [0, q0), X in [q0, q1), zeros after */
    int64_t q0[2], q1[2], c0 = 0, c1 = j->wq;
    for (int64_t phi = 0; phi < sw && sw == 2; phi++) {
        int64_t a = pl - phi <= 0 ? 0 : (pl - phi + 1) / 2, b = pl + in_w - phi <= 0 ? 0 : (pl + in_w - phi + 1) / 2;
        q0[phi] = a < j->wq ? a : j->wq;
        q1[phi] = b < j->wq ? b : j->wq;
        c0 = q0[phi] > c0 ? q0[phi] : c0;
        c1 = q1[phi] < c1 ? q1[phi] : c1;
    }
    if (sw == 2 && c0 < c1) {
        kir_val q = kir_loop_begin_deint(K, kir_idx(K, c0), kir_idx(K, c1));
        for (int64_t phi = 0; phi < 2; phi++) {
            kir_val xi[4] = {n, ch, ih, kir_add(K, kir_mul(K, q, kir_idx(K, 2)), kir_idx(K, phi - pl))};
            kir_store(K, tile, kir_add(K, kir_add(K, trow, kir_idx(K, phi * j->ws)), q), lower_load(c, 0, xi));
        }
        kir_loop_end(K);
        for (int64_t phi = 0; phi < 2; phi++) {
            dw_fill_span(c, j, tile, trow, phi, nci, 0, q0[phi], false);
            dw_fill_span(c, j, tile, trow, phi, nci, q0[phi], c0, true);
            dw_fill_span(c, j, tile, trow, phi, nci, c1, q1[phi], true);
            dw_fill_span(c, j, tile, trow, phi, nci, q1[phi], j->wq, false);
        }
    } else {
        for (int64_t phi = 0; phi < sw; phi++) {
            int64_t a = pl - phi <= 0 ? 0 : (pl - phi + sw - 1) / sw, b = pl + in_w - phi <= 0 ? 0 : (pl + in_w - phi + sw - 1) / sw;
            a = a < j->wq ? a : j->wq;
            b = b < j->wq ? b : j->wq;
            dw_fill_span(c, j, tile, trow, phi, nci, 0, a, false);
            dw_fill_span(c, j, tile, trow, phi, nci, a, b, true);
            dw_fill_span(c, j, tile, trow, phi, nci, b, j->wq, false);
        }
    }
    kir_else(K);
    kir_val q = kir_loop_begin_parallel(K, zero_i, kir_idx(K, j->plane));
    kir_store(K, tile, kir_add(K, trow, q), fzero);
    kir_loop_end(K);
    kir_if_end(K);
    kir_loop_end(K);
}

/* Outputs [lo, hi) of `rows` output rows from row oh, whose tile row starts
 * at rbase: one parallel loop, or a masked one (kir.h) of hi - lo lanes. */
static void dw_row_span(lower_ctx *c, const dw_job *j, int tile, kir_val bias, const kir_val *wv, const int64_t *off,
                        kir_val n, kir_val ch, kir_val oh, kir_val rbase, int64_t lo, int64_t hi, bool masked, int rows)
{
    kir_kernel *K = c->k;
    if (lo >= hi) return;
    /* Whole vectors as a loop over pairs of them around a parallel loop of one vector's lanes, which
     * the C emitter writes as intrinsics, the pair interleaved (emit_c_simd.c): a fused Clip is then
     * one max and one min per vector, where the compiler's vectorization of the plain loop compares
     * and blends (four compares, two blends). 3x3 pad 1, min of 3 rounds of 300 runs, 1 thread,
     * plain loop -> pairs: 64 ch 80 -> 40 s2 + Clip 0.062 -> 0.054-0.058 ms, 32 ch 112 -> 56 s2 +
     * HardSwish 0.062-0.065 -> 0.059-0.062, 128 ch at 40x40 + Clip 0.067 -> 0.060-0.063, 144 ch at
     * 56x56 0.148-0.157 -> 0.135-0.144, 16 ch at 112x112 + HardSwish 0.075-0.079 -> 0.066-0.068;
     * 32 ch at 80x80 + Clip 0.069-0.074 either way, 64 ch 56 -> 28 s2 and 144 ch 56 -> 28 s2 ties.
     * One vector a step lost (16 ch at 112x112 0.105 ms: HardSwish's chain alone), and so did the
     * whole row of 7 vectors as one loop of vectors (the emitter interleaves all 7: 0.104). Only
     * where vectors have 16 lanes: on AVX2 hosts it is unmeasured. */
    int64_t vw = c->target->vector_width, nb = masked || vw < 16 ? 0 : (hi - lo) / vw;
    int64_t per = nb >= 2 ? 2 : 1, ng = nb / per, run = ng * per * vw;
    kir_val ow;
    if (ng > 0) {
        kir_val g = kir_loop_begin(K, kir_idx(K, lo), kir_idx(K, lo + run), kir_idx(K, per * vw));
        kir_val b = kir_loop_begin(K, kir_idx(K, 0), kir_idx(K, per * vw), kir_idx(K, vw));
        ow = kir_add(K, kir_add(K, g, b), kir_loop_begin_parallel(K, kir_idx(K, 0), kir_idx(K, vw)));
    } else
        ow = masked ? kir_add(K, kir_loop_begin_masked(K, hi - lo), kir_idx(K, lo))
                    : kir_loop_begin_parallel(K, kir_idx(K, lo), kir_idx(K, hi));
    /* One sum per window row, then those added pairwise: the chain of dependent adds per output is
     * a row's taps long, not the window's (3x3 + HardSwish, min of 3 rounds of 500 runs, 1 thread:
     * 128 ch at 28x28 0.0430 -> 0.0407 ms, 144 ch at 56x56 0.172 -> 0.165, 64 ch 56 -> 28 s2
     * 0.0366 -> 0.0351). */
    kir_val at = kir_add(K, rbase, ow), part[DW_MAX_TAPS];
    for (int rr = 0; rr < rows; rr++) {
        int64_t np = 0, kn = j->w.kernel[1], roff = rr * j->w.stride[0] * j->plane;
        for (int64_t t = 0, taps = j->w.kernel[0] * kn; t < taps; t++) {
            kir_val prod = kir_binary(K, KIR_MUL, wv[t], kir_load(K, tile, kir_add(K, at, kir_idx(K, off[t] + roff))));
            if (t % kn) part[np - 1] = kir_binary(K, KIR_ADD, part[np - 1], prod);
            else part[np++] = t ? prod : kir_binary(K, KIR_ADD, bias, prod);
        }
        while (np > 1) {
            int64_t h = 0;
            for (int64_t i = 0; i + 1 < np; i += 2) part[h++] = kir_binary(K, KIR_ADD, part[i], part[i + 1]);
            if (np % 2) part[h++] = part[np - 1];
            np = h;
        }
        kir_val yi[4] = {n, ch, kir_add(K, oh, kir_idx(K, rr)), ow};
        lower_store(c, 0, yi, part[0]);
    }
    kir_loop_end(K);
    if (ng > 0) {
        kir_loop_end(K);
        kir_loop_end(K);
        dw_row_span(c, j, tile, bias, wv, off, n, ch, oh, rbase, lo + run, hi, false, rows);
    }
}

/* `rows` output rows of the unit from its row r (oh0 + r), each a loop over
 * its outputs and a masked loop over its last `tail`. */
static void dw_rows(lower_ctx *c, const dw_job *j, int tile, kir_val bias, const kir_val *wv, const int64_t *off,
                    kir_val n, kir_val ch, kir_val oh0, kir_val r, int rows, int64_t tail)
{
    kir_kernel *K = c->k;
    int64_t ow = j->w.out[1];
    kir_val rbase = kir_mul(K, r, kir_idx(K, j->w.stride[0] * j->plane)), oh = kir_add(K, oh0, r);
    dw_row_span(c, j, tile, bias, wv, off, n, ch, oh, rbase, 0, ow - tail, j->masked, rows);
    dw_row_span(c, j, tile, bias, wv, off, n, ch, oh, rbase, ow - tail, ow, true, rows);
}

/* Output rows a step at stride 1 where the unit's row count is fixed: two
 * (dw_body), or for windows 5 wide over rows of one masked vector, the unit's
 * rows in 5 to 7 equal steps where they divide it: each step's rows + 4 tile
 * rows, 5 masked loads each, read once for all its rows. 5x5 pad 2 +
 * HardSwish, --profile kernel time, 3 rounds of 500 runs, 1 thread, 2 rows ->
 * this: 256 ch at 14x14 (7 a step) 58.6-59.0 -> 47.4-47.7 us, 128 ch at 15x15
 * (5) 32.4-35.1 -> 26.7-27.8, 96 ch at 12x12 (6) 18.5-19.6 -> 15.6-16.9; 4 a
 * step lost at 16x16 (19.6-20.2 -> 21.5-21.8), 7 and 6 at 13x13 were noise
 * (a prime count stays at 2), and 3x3 windows at 14x14, 7 a step, gained
 * under 10% (384 ch 31.8-32.2 -> 29.5). */
static int dw_rows_a_step(const dw_job *j)
{
    if (j->masked && j->w.kernel[1] == 5 && j->w.stride[0] == 1)
        for (int d = 7; d >= 5; d--)
            if (j->rb % d == 0 && j->rb > d) return d;
    return 2;
}

static void dw_body(lower_ctx *c, const kir_val *idx, void *user)
{
    const dw_job *j = user;
    const window_geom *w = &j->w;
    kir_kernel *K = c->k;
    kir_val zero_i = kir_idx(K, 0), one = kir_idx(K, 1);
    kir_val n = idx[0], ch = idx[1], oh0 = kir_mul(K, idx[2], kir_idx(K, j->rb));
    int tile = kir_smem_add(K, j->dt, j->hr * j->plane);
    dw_fill(c, j, tile, n, ch, oh0);
    kir_val bias = j->bias ? lower_load(c, 2, &ch) : kir_const_f(K, j->dt, 0);
    kir_val wv[DW_MAX_TAPS];
    int64_t off[DW_MAX_TAPS], kn = w->kernel[1], taps = w->kernel[0] * kn;
    for (int64_t t = 0; t < taps; t++) {
        int64_t kh = t / kn, kw = t % kn, cw = kw * w->dilation[1];
        kir_val wi[4] = {ch, zero_i, kir_idx(K, kh), kir_idx(K, kw)};
        wv[t] = lower_load(c, 1, wi);
        off[t] = kh * w->dilation[0] * j->plane + cw % w->stride[1] * j->ws + cw / w->stride[1];
    }
    kir_val nrows = w->out[0] % j->rb
                        ? kir_binary(K, KIR_MIN, kir_idx(K, j->rb), kir_binary(K, KIR_SUB, kir_idx(K, w->out[0]), oh0))
                        : kir_idx(K, j->rb);
    /* Where vectors have 16 lanes, a longer row's last 4 to 15 outputs are one masked vector, not
     * the compiler's 8-, 4- and 1-lane remainder: 3x3 pad 1 + HardSwish, --profile kernel time, best
     * of 4-5 rounds of 300 runs, 1 thread: 128 ch at 28x28 0.082 -> 0.044 ms, 192 ch at 28x28 0.181
     * -> 0.069, 64 ch 56 -> 28 s2 0.056 -> 0.037; 144 ch at 56x56 (48 + 8) 0.187 -> 0.179, 32 ch
     * 112 -> 56 s2 a tie. */
    int64_t tail = j->masked_tail ? w->out[1] % c->target->vector_width : 0;
    if (tail < DW_MASKED_ROW) tail = 0;
    /* At stride 1, two rows a step where the unit's row count is fixed (an odd last row alone): the
     * second row's taps read the tile rows of the first's but one, which the C compiler loads once.
     * 3x3 + HardSwish, min of 3 rounds of 500 runs, 1 thread: 128 ch at 28x28 0.0409 -> 0.0370 ms,
     * 384 ch at 14x14 0.0297 -> 0.0265, 960 ch at 7x7 0.0431 -> 0.0390, 144 ch at 56x56 a tie; at
     * stride 2 (3 of 9 taps shared) it lost, 64 ch 56 -> 28 0.0358 -> 0.0372. */
    int step = w->out[0] % j->rb == 0 && j->rb >= 2 && w->stride[0] == 1 ? 2 : 1;
    if (step == 2) step = dw_rows_a_step(j);
    kir_val r = kir_loop_begin(K, zero_i, step >= 2 ? kir_idx(K, j->rb / step) : nrows, one);
    dw_rows(c, j, tile, bias, wv, off, n, ch, oh0, kir_mul(K, r, kir_idx(K, step)), step, tail);
    kir_loop_end(K);
    if (step >= 2 && j->rb % step) dw_rows(c, j, tile, bias, wv, off, n, ch, oh0, kir_idx(K, j->rb / step * step), (int)(j->rb % step), tail);
}

/* ---- Small planes: channels across the vector ------------------------------
 * A unit is DW_LANES channels (8 where C is not a multiple of 16) of one
 * image, all of its output plane. The channels' input planes are copied,
 * transposed, into a zero-padded tile of workgroup memory, element (row,
 * column, lane), and the window's weights into DW_LANES-wide rows; then each
 * output position is one loop over the lanes (one vector) summing its taps
 * from whole tile vectors (any stride, no phase planes), into an accumulator
 * plane of the same layout that the epilogue reads back transposed. Rows of 7
 * or 14 outputs no longer leave most of a vector empty or run as a scalar
 * remainder: the cost is the two transposing copies, one per element of X
 * and Y against the window's taps per element of Y. */
#define DW_LANES 16
#define DWL_ROW_BLOCK 8     /* outputs of a row a step, at most */

typedef struct dwl_job {
    window_geom w;
    int64_t lanes;          /* channels per unit */
    int64_t hr, wr;         /* tile rows and columns: those the windows read */
    smelt_dtype dt;
    bool bias;
} dwl_job;

/* Outputs ow0 .. ow0 + u - 1 of output row oh, each one vector of lanes: the
 * window's weights loaded once for the u, the u sums stored after all are
 * computed, so that the C compiler loads each tile vector the u windows share
 * (at stride 1, u + KW - 1 a window row, not u*KW) once. Each sum adds its
 * taps in order, from the bias; the u sums are u independent chains. */
static void dwl_outputs(lower_ctx *c, const dwl_job *j, int tile, int wts, int acc, kir_val c0, kir_val oh, kir_val ow0,
                        int64_t u)
{
    const window_geom *w = &j->w;
    kir_kernel *K = c->k;
    kir_val lanes = kir_idx(K, j->lanes);
    int64_t kw_n = w->kernel[1], taps = w->kernel[0] * kw_n;
    kir_val lo = kir_loop_begin_parallel(K, kir_idx(K, 0), lanes);
    kir_val ch = kir_add(K, c0, lo);
    kir_val base = kir_add(K, kir_mul(K, kir_add(K, kir_mul(K, oh, kir_idx(K, w->stride[0] * j->wr)),
                                                 kir_mul(K, ow0, kir_idx(K, w->stride[1]))), lanes), lo);
    kir_val wv[DW_MAX_TAPS], sum[DWL_ROW_BLOCK];
    for (int64_t t = 0; t < taps; t++) wv[t] = kir_load(K, wts, kir_add(K, kir_idx(K, t * j->lanes), lo));
    kir_val init = j->bias ? lower_load(c, 2, &ch) : kir_const_f(K, j->dt, 0);
    for (int64_t i = 0; i < u; i++) {
        sum[i] = init;
        for (int64_t t = 0; t < taps; t++) {
            int64_t off = ((t / kw_n) * w->dilation[0] * j->wr + i * w->stride[1] + (t % kw_n) * w->dilation[1]) * j->lanes;
            kir_val x = kir_load(K, tile, kir_add(K, base, kir_idx(K, off)));
            sum[i] = kir_binary(K, KIR_ADD, sum[i], kir_binary(K, KIR_MUL, wv[t], x));
        }
    }
    kir_val at = kir_add(K, kir_mul(K, kir_add(K, kir_mul(K, oh, kir_idx(K, w->out[1])), ow0), lanes), lo);
    for (int64_t i = 0; i < u; i++) kir_store(K, acc, kir_add(K, at, kir_idx(K, i * j->lanes)), sum[i]);
    kir_loop_end(K);
}

static void dwl_body(lower_ctx *c, const kir_val *idx, void *user)
{
    const dwl_job *j = user;
    const window_geom *w = &j->w;
    kir_kernel *K = c->k;
    kir_val zero_i = kir_idx(K, 0), one = kir_idx(K, 1), fzero = kir_const_f(K, j->dt, 0);
    kir_val lanes = kir_idx(K, j->lanes), n = idx[0], c0 = kir_mul(K, idx[1], lanes);
    int64_t kh_n = w->kernel[0], kw_n = w->kernel[1], taps = kh_n * kw_n, oh_n = w->out[0], ow_n = w->out[1];
    int tile = kir_smem_add(K, j->dt, j->hr * j->wr * j->lanes);
    int acc = kir_smem_add(K, j->dt, oh_n * ow_n * j->lanes);
    int wts = kir_smem_add(K, j->dt, taps * j->lanes);
    /* zeros where the windows read the padding: the tile around X's rows and columns */
    int64_t pt = w->pad_lo[0], pl = w->pad_lo[1];
    int64_t h1 = w->in[0] < j->hr - pt ? w->in[0] : j->hr - pt, w1 = w->in[1] < j->wr - pl ? w->in[1] : j->wr - pl;
    int64_t row = j->wr * j->lanes;
    const int64_t span[2][2] = {{0, pt * row}, {(pt + h1) * row, j->hr * row}}; /* rows above and below X's */
    for (int sp = 0; sp < 2; sp++)
        if (span[sp][0] < span[sp][1]) {
            kir_val e = kir_loop_begin_parallel(K, kir_idx(K, span[sp][0]), kir_idx(K, span[sp][1]));
            kir_store(K, tile, e, fzero);
            kir_loop_end(K);
        }
    if (pl > 0 || w1 + pl < j->wr) { /* the columns left and right of X's */
        kir_val r = kir_loop_begin(K, kir_idx(K, pt), kir_idx(K, pt + h1), one);
        kir_val rb = kir_mul(K, r, kir_idx(K, row));
        const int64_t cols[2][2] = {{0, pl * j->lanes}, {(pl + w1) * j->lanes, row}};
        for (int sp = 0; sp < 2; sp++)
            if (cols[sp][0] < cols[sp][1]) {
                kir_val e = kir_loop_begin_parallel(K, kir_idx(K, cols[sp][0]), kir_idx(K, cols[sp][1]));
                kir_store(K, tile, kir_add(K, rb, e), fzero);
                kir_loop_end(K);
            }
        kir_loop_end(K);
    }
    /* X's planes transposed into xt (position, lane), 16x8 blocks a call where the C emitter
     * has vectors (a transpose loop, kir.h: the lanes in two halves, two stores), then each
     * input row copied into the padded tile as one unit-stride span */
    int64_t hw = w->in[0] * w->in[1], half = j->lanes / 2;
    int xt = kir_smem_add(K, j->dt, hw * j->lanes);
    kir_val p = kir_loop_begin_transpose(K, zero_i, kir_idx(K, hw));
    kir_val l = kir_loop_begin(K, zero_i, kir_idx(K, half), one);
    for (int64_t hf = 0; hf < 2; hf++) {
        kir_val lh = kir_add(K, l, kir_idx(K, hf * half));
        kir_val xi[4] = {n, kir_add(K, c0, lh), kir_binary(K, KIR_DIV, p, kir_idx(K, w->in[1])),
                         kir_binary(K, KIR_MOD, p, kir_idx(K, w->in[1]))};
        kir_store(K, xt, kir_add(K, kir_mul(K, p, lanes), lh), lower_load(c, 0, xi));
    }
    kir_loop_end(K);
    kir_loop_end(K);
    kir_val ih = kir_loop_begin(K, zero_i, kir_idx(K, h1), one);
    kir_val e = kir_loop_begin_parallel(K, zero_i, kir_idx(K, w1 * j->lanes));
    kir_val to = kir_add(K, kir_mul(K, kir_add(K, kir_mul(K, kir_add(K, ih, kir_idx(K, pt)), kir_idx(K, j->wr)), kir_idx(K, pl)), lanes), e);
    kir_store(K, tile, to, kir_load(K, xt, kir_add(K, kir_mul(K, ih, kir_idx(K, w->in[1] * j->lanes)), e)));
    kir_loop_end(K);
    kir_loop_end(K);
    for (int64_t t = 0; t < taps; t++) {
        kir_val wl = kir_loop_begin_parallel(K, zero_i, lanes);
        kir_val wi[4] = {kir_add(K, c0, wl), zero_i, kir_idx(K, t / kw_n), kir_idx(K, t % kw_n)};
        kir_store(K, wts, kir_add(K, kir_idx(K, t * j->lanes), wl), lower_load(c, 1, wi));
        kir_loop_end(K);
    }
    int64_t u = ow_n % DWL_ROW_BLOCK == 0 || ow_n > DWL_ROW_BLOCK ? DWL_ROW_BLOCK : ow_n;
    for (int64_t d = DWL_ROW_BLOCK; d >= DWL_ROW_BLOCK / 2 && ow_n > DWL_ROW_BLOCK; d--)
        if (ow_n % d == 0) {
            u = d;
            break;
        }
    kir_val oh = kir_loop_begin(K, zero_i, kir_idx(K, oh_n), one);
    if (ow_n / u > 0) {
        kir_val ow0 = kir_loop_begin(K, zero_i, kir_idx(K, ow_n / u * u), kir_idx(K, u));
        dwl_outputs(c, j, tile, wts, acc, c0, oh, ow0, u);
        kir_loop_end(K);
    }
    if (ow_n % u) dwl_outputs(c, j, tile, wts, acc, c0, oh, kir_idx(K, ow_n / u * u), ow_n % u);
    kir_loop_end(K);
    /* the accumulators transposed into (lane, position) the same way, whole blocks of 8
     * positions, then stored through the epilogue one lane's plane at a time */
    int64_t np_ = oh_n * ow_n, n8 = np_ / 8 * 8;
    int acc_t = kir_smem_add(K, j->dt, np_ * j->lanes);
    for (int part_i = 0; part_i < 2; part_i++) {
        int64_t q0 = part_i ? n8 : 0, q1 = part_i ? np_ : n8;
        if (q0 >= q1) continue;
        kir_val tl = part_i ? kir_loop_begin(K, zero_i, kir_idx(K, half), one) : kir_loop_begin_transpose(K, zero_i, kir_idx(K, half));
        kir_val q = kir_loop_begin(K, kir_idx(K, q0), kir_idx(K, q1), one);
        for (int64_t hf = 0; hf < 2; hf++) {
            kir_val lh = kir_add(K, tl, kir_idx(K, hf * half));
            kir_store(K, acc_t, kir_add(K, kir_mul(K, lh, kir_idx(K, np_)), q), kir_load(K, acc, kir_add(K, kir_mul(K, q, lanes), lh)));
        }
        kir_loop_end(K);
        kir_loop_end(K);
    }
    /* the unit's output planes lie in Y as one run, as in acc_t: one loop over it (its index
     * unravelled, which kir folds back into a stride-1 address), not a loop over rows of ow, whose
     * 7 outputs the compiler ran as a scalar loop. + HardSwish, min of 3 rounds of 500 runs, 1
     * thread: 512 ch 5x5 at 7x7 0.0367-0.0469 -> 0.0267-0.0365 ms (0.0366 -> 0.0267 by hand on an
     * idle core), 256 ch 5x5 14 -> 7 s2 0.0267-0.0292 -> 0.0221-0.0230. */
    kir_val e_y = kir_loop_begin_parallel(K, zero_i, kir_idx(K, j->lanes * np_));
    ir_shape planes = {.rank = 3, .dim = {j->lanes, oh_n, ow_n}};
    kir_val yi[4] = {n};
    lower_unravel(K, &planes, e_y, yi + 1);
    yi[1] = kir_add(K, c0, yi[1]);
    lower_store(c, 0, yi, kir_load(K, acc_t, e_y));
    kir_loop_end(K);
}

/* The lanes form for output rows of `ow` on vectors of `vw` lanes: where the
 * row forms below would leave at least half of each vector empty. With 16
 * lanes a row of up to 16 is one masked vector, so rows of 8 or fewer; with
 * fewer lanes the narrow rows run in the flat form (ops/conv.c), whose rows
 * of ow outputs in a padded row are mostly remainder, so rows of up to 16.
 * Min of 300 runs, 1 thread, + HardSwish, the row forms -> this one, 16
 * lanes: 512 ch 5x5 at 7x7 0.054 -> 0.037 ms, 960 ch 3x3 at 7x7 0.046-0.056
 * -> 0.044, 256 ch 5x5 14 -> 7 s2 0.036 -> 0.029, 672 ch 5x5 14 -> 7 s2
 * 0.094 -> 0.077, 576 ch 3x3 14 -> 7 s2 0.048 -> 0.042; rows of 14 lost
 * (256 ch 5x5 0.059 -> 0.063, 576 ch 3x3 0.046 -> 0.072), and so did 72 ch
 * 5x5 at 10x10 (0.011 -> 0.014) and 96 ch 3x3 at 13x13 (0.007 -> 0.013).
 * 8 lanes: 576 ch 3x3 at 14x14 0.092 -> 0.074, 256 ch 5x5 0.066 -> 0.063,
 * 96 ch 3x3 at 13x13 0.016 -> 0.013, 72 ch 5x5 at 10x10 a tie (0.011). */
static bool dw_lanes_wanted(int64_t ow, int vw)
{
    return vw >= 16 ? ow * 2 <= vw : ow <= 16;
}

/* The lanes form where it applies: see conv_depthwise_2d. */
static bool conv_depthwise_lanes(lower_ctx *c, const window_geom *w, int64_t batch, int64_t m, smelt_dtype dt, bool bias)
{
    dwl_job j = {.w = *w, .dt = dt, .bias = bias};
    j.lanes = m % DW_LANES == 0 ? DW_LANES : m % 8 == 0 ? 8 : 0;
    if (!j.lanes) return false;
    j.hr = (w->out[0] - 1) * w->stride[0] + (w->kernel[0] - 1) * w->dilation[0] + 1;
    j.wr = (w->out[1] - 1) * w->stride[1] + (w->kernel[1] - 1) * w->dilation[1] + 1;
    int64_t elems = (j.hr * j.wr + w->in[0] * w->in[1] + 2 * w->out[0] * w->out[1] + w->kernel[0] * w->kernel[1]) * j.lanes;
    if (elems * (int64_t)smelt_dtype_size(dt) > DW_STACK_BYTES) return false;
    ir_shape units = {.rank = 4, .dim = {batch, m / j.lanes, 1, 1}};
    lower_parallel_for(c, &units, 2 * j.lanes * w->out[0] * w->out[1] * w->kernel[0] * w->kernel[1], dwl_body, &j);
    return true;
}

bool conv_depthwise_2d(lower_ctx *c, const window_geom *w, int64_t batch, int64_t cg, int64_t m, int64_t group,
                       smelt_dtype dt, bool bias)
{
    if (c->target->wg_size == 1 && w->nsp == 2 && cg == 1 && m == group && dt == SMELT_F32 &&
        w->kernel[0] * w->kernel[1] <= DW_MAX_TAPS && dw_lanes_wanted(w->out[1], c->target->vector_width) &&
        conv_depthwise_lanes(c, w, batch, m, dt, bias))
        return true;
    /* Rows of 4 to 16 outputs: one masked vector each where the vectors have 16 lanes (emit_c_simd.c).
     * Min of 5 rounds of 200 runs, 1 thread, 3x3 pad 1 + Clip, flat form -> this kernel: 384 ch at
     * 14x14 0.058 -> 0.033 ms, 576 ch 0.088 -> 0.050, 192 ch 28 -> 14 s2 0.045 -> 0.031, 960 ch at
     * 7x7 0.053 -> 0.047, 128 ch 28 -> 14 s2 + HardSwish 0.030 -> 0.022; but 576 ch 14 -> 7 s2
     * 0.043 -> 0.051 (a stride-2 row of fewer than 8 outputs fills its phase planes in the
     * deinterleave's scalar loop), and 5x5 windows lost: 256 ch at 14x14 + HardSwish 0.063 -> 0.073,
     * 512 ch at 7x7 0.052 -> 0.075 (25 masked loads a row, each reading tile rows just written by
     * masked stores). With two rows a step (dw_body) 5x5 windows at stride 1 win on rows of more
     * than 10: 256 ch at 14x14 + HardSwish 0.0648 -> 0.0555 ms, 96 ch at 13x13 0.0242 -> 0.0201, 96
     * ch at 10x10 a tie (0.0145 -> 0.0149), 512 ch at 7x7 0.0531 either way (min of 3 rounds of
     * 500 runs, 1 thread). Those of 10 or fewer, and strided ones, stay flat. */
    bool masked_row = w->out[1] >= DW_MASKED_ROW && w->out[1] <= 16 && c->target->vector_width >= 16 &&
                      (w->kernel[1] <= 3 || (w->kernel[1] <= 5 && w->stride[0] == 1 && w->stride[1] == 1 && w->out[1] > 10)) &&
                      (w->stride[1] == 1 || w->out[1] >= 8);
    /* Rows of 17 to 27 outputs at stride 1: a whole vector and a masked one (dw_body), against the
     * flat form: 96 ch 3x3 at 24x24 + Relu 0.0245 -> 0.0139 ms, 256 ch at 20x20 a tie (0.050); 128
     * ch 40 -> 20 at stride 2 lost, 0.040 -> 0.043 (min of 3 rounds of 500 runs, 1 thread). */
    bool tail_row = w->out[1] > 16 && c->target->vector_width >= 16 && w->kernel[1] <= 3 && w->stride[1] == 1;
    if (c->target->wg_size > 1 || w->nsp != 2 || cg != 1 || m != group || w->kernel[0] * w->kernel[1] > DW_MAX_TAPS ||
        (w->out[1] < DW_MIN_ROW && !masked_row && !tail_row))
        return false;
    dw_job j = {.w = *w, .dt = dt, .bias = bias, .masked = masked_row,
                .masked_tail = c->target->vector_width >= 16 && w->out[1] > 16};
    int64_t wp = w->pad_lo[1] + w->in[1] + w->pad_hi[1], sw = w->stride[1];
    j.wq = (wp + sw - 1) / sw;
    /* every tap's column lies in its plane: ow + (kw*dw)/sw < wq for ow < OW */
    if (w->out[1] - 1 + (w->kernel[1] - 1) * w->dilation[1] / sw >= j.wq) return false;
    int64_t blocks = (w->out[0] * w->out[1] + DW_ROW_OUTPUTS - 1) / DW_ROW_OUTPUTS;
    j.rb = (w->out[0] + blocks - 1) / blocks;
    j.hr = (j.rb - 1) * w->stride[0] + (w->kernel[0] - 1) * w->dilation[0] + 1;
    /* at stride 2 the phase planes start DW_PLANE_ALIGN floats apart (the columns between are never
     * read), unless that pushes the unit's tile past DW_STACK_BYTES */
    j.ws = sw == 2 ? (j.wq + DW_PLANE_ALIGN - 1) / DW_PLANE_ALIGN * DW_PLANE_ALIGN : j.wq;
    if (j.hr * sw * j.ws * (int64_t)smelt_dtype_size(dt) > DW_STACK_BYTES) j.ws = j.wq;
    j.plane = sw * j.ws;
    if (j.hr * j.plane * (int64_t)smelt_dtype_size(dt) > DW_STACK_BYTES) {
        j.rb = 1;
        j.hr = (w->kernel[0] - 1) * w->dilation[0] + 1;
        if (j.hr * j.plane * (int64_t)smelt_dtype_size(dt) > DW_STACK_BYTES) return false;
    }
    ir_shape units = {.rank = 4, .dim = {batch, m, (w->out[0] + j.rb - 1) / j.rb, 1}};
    lower_parallel_for(c, &units, 2 * j.rb * w->out[1] * w->kernel[0] * w->kernel[1], dw_body, &j);
    return true;
}
