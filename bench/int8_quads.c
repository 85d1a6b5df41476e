/*
 * int8_quads.c — would uint8 x int8 k-quads (vpdpbusd) beat the int16
 * k-pairs (vpdpwssd) for ConvInteger on an AVX512-VNNI host? One thread, the
 * shape of ddddocr_ocr_quant's 3x3 48 -> 192 convs at 16x40 (cols
 * orientation, ops/conv_gemm.c: M 192 channels x K 432 x N 640 positions),
 * the im2col and the GEMM timed apart and together, two ways:
 *
 *   pairs  what smelt runs today: the im2col writes X (float, x - x_zp) as
 *          int16 k-pairs [K/2][NP][2] (pad 0), the weight is int16 rows
 *          [M][K] (even K), an 8x32 block broadcasts W's pair and runs
 *          vpdpwssd over slices of 192 pairs (emit_c_gemm_pairs.c's helper);
 *   quads  the im2col writes x itself, u = X + x_zp in [0, 255], as uint8
 *          k-quads [K/4][NP][4] (pad x_zp, so the padding still adds 0
 *          after the correction), the weight int8 quads (w - w_zp, which
 *          fits int8 for that model's weights, 121..178 about their zero
 *          point), an 8x32 block broadcasts W's quad and runs vpdpbusd, and
 *          the store subtracts x_zp * rowsum(w) per channel.
 *
 * Both must give the same int32 outputs as an int64 reference (checked: exit
 * 1 and DIFFERS where not). Times: the thread's CPU time, best of ROUNDS of
 * REPS runs, the forms alternating.
 *
 * Session 17, Zen 4 (AVX-512 VNNI), loaded machine, two runs each, ms:
 *   48 -> 192 at 16x40: pairs im2col 0.092 + gemm 0.472-0.474 (112 GMAC/s) = 0.564-0.565,
 *                       quads im2col 0.115-0.116 + gemm 0.242-0.243 (219) = 0.357;
 *   64 -> 256 at 8x20:  pairs 0.035 + 0.206 (114-115) = 0.241,
 *                       quads 0.039 + 0.105 (224-225) = 0.144-0.145.
 * smelt's own kernels on ddddocr_ocr_quant at the time (bench --profile, 1
 * thread): the 48 -> 192 pair GEMM 0.54 ms and its im2col 0.10 ms a run, so
 * the harness's pairs stand for what smelt runs. The quads' GEMM runs at
 * twice the rate (vpdpbusd: 64 products an instruction, vpdpwssd 32); the
 * uint8 im2col costs a little more here (byte stores).
 *
 *     cc -O3 -march=native -std=gnu11 bench/int8_quads.c -o int8_quads && ./int8_quads
 *
 * GCC builtins, as the C emitter's helpers use; GCC + AVX512-VNNI only.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if !defined(__GNUC__) || defined(__clang__) || !defined(__AVX512VNNI__) || !defined(__AVX512BW__)
int main(void)
{
    puts("int8_quads: needs GCC with -march supporting AVX512BW and AVX512-VNNI");
    return 0;
}
#else

typedef float v16f __attribute__((vector_size(64), aligned(4)));
typedef int v16i __attribute__((vector_size(64), aligned(4)));

/* The shape: -DSHAPE_C=64 -DSHAPE_H=8 -DSHAPE_W=20 -DSHAPE_M=256 for the 64 -> 256 convs at 8x20. */
#ifndef SHAPE_C
#define SHAPE_C 48
#define SHAPE_H 16
#define SHAPE_W 40
#define SHAPE_M 192
#endif
enum { C = SHAPE_C, H = SHAPE_H, W = SHAPE_W, M = SHAPE_M, KH = 3, KW = 3, K = C * KH * KW, N = H * W, NP = N + 16 };
enum { ROUNDS = 40, REPS = 20 };
enum { KP = K / 2, KQ = K / 4, NB = 160, SLICE = 192 };
_Static_assert(N % NB == 0 && K % 4 == 0, "N a multiple of NB, K of 4");

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static float X[C * H * W];
static int16_t w16[M * K], col16[KP * NP * 2];
static int8_t w8[M * K];
static uint8_t col8[KQ * NP * 4];
static int32_t rowsum[M], y_pairs[M * N], y_quads[M * N];
static float acc[M * NB];
static int XZP = 131;

/* The im2col value of row k, position i, as X (0 in the padding). */
static inline float xval(int k, int i, int *pad)
{
    int c = k / 9, t = k % 9, kh = t / 3, kw = t % 3, oh = i / W, ow = i % W;
    int ih = oh - 1 + kh, iw = ow - 1 + kw;
    *pad = ih < 0 || ih >= H || iw < 0 || iw >= W;
    return *pad ? 0.0f : X[(c * H + ih) * W + iw];
}

/* Per k row, along the output rows: a copy of X's row shifted by the tap, the
 * edges filled, as the emitted im2col does; g elements of k interleaved. */
#define IM2COL(T, out, g, conv, padv)                                                                   \
    for (int k = 0; k < K; k++) {                                                                       \
        int c = k / 9, t = k % 9, kh = t / 3, kw = t % 3, q = k / (g), r = k % (g);                     \
        T *o = out + (int64_t)q * NP * (g) + r;                                                         \
        for (int oh = 0; oh < H; oh++) {                                                                \
            int ih = oh - 1 + kh;                                                                       \
            T *orow = o + oh * W * (g);                                                                 \
            if (ih < 0 || ih >= H) {                                                                    \
                for (int ow = 0; ow < W; ow++) orow[ow * (g)] = (padv);                                 \
                continue;                                                                               \
            }                                                                                           \
            const float *xr = X + (c * H + ih) * W;                                                     \
            int lo = kw == 0 ? 1 : 0, hi = kw == 2 ? W - 1 : W;                                         \
            if (lo) orow[0] = (padv);                                                                   \
            if (hi < W) orow[(W - 1) * (g)] = (padv);                                                   \
            for (int ow = lo; ow < hi; ow++) orow[ow * (g)] = (T)(conv(xr[ow - 1 + kw]));               \
        }                                                                                               \
    }

#define ID(v) (v)
#define PLUS_ZP(v) ((v) + (float)XZP)

static void im2col_pairs(void) { IM2COL(int16_t, col16, 2, ID, 0) }
static void im2col_quads(void) { IM2COL(uint8_t, col8, 4, PLUS_ZP, (uint8_t)XZP) }

static inline void block_pairs(float *c, int64_t cr, const int16_t *a, int64_t ar, const int16_t *b, int64_t bk, int64_t kc)
{
    v16i s[8][2] = {{{0}}};
    for (int64_t k = 0; k < kc; k++) {
        const int16_t *bp = b + k * bk;
        v16i b0, b1;
        memcpy(&b0, bp, 64);
        memcpy(&b1, bp + 32, 64);
        for (int r = 0; r < 8; r++) {
            int32_t p;
            memcpy(&p, a + r * ar + 2 * k, 4);
            v16i x = {p, p, p, p, p, p, p, p, p, p, p, p, p, p, p, p};
            s[r][0] = __builtin_ia32_vpdpwssd_v16si(s[r][0], x, b0);
            s[r][1] = __builtin_ia32_vpdpwssd_v16si(s[r][1], x, b1);
        }
    }
    for (int r = 0; r < 8; r++)
        for (int v = 0; v < 2; v++) *(v16f *)(c + r * cr + 16 * v) += __builtin_convertvector(s[r][v], v16f);
}

static inline void block_quads(float *c, int64_t cr, const int8_t *a, int64_t ar, const uint8_t *b, int64_t bk, int64_t kc)
{
    v16i s[8][2] = {{{0}}};
    for (int64_t k = 0; k < kc; k++) {
        const uint8_t *bp = b + k * bk;
        v16i b0, b1;
        memcpy(&b0, bp, 64);
        memcpy(&b1, bp + 64, 64);
        for (int r = 0; r < 8; r++) {
            int32_t p;
            memcpy(&p, a + r * ar + 4 * k, 4);
            v16i x = {p, p, p, p, p, p, p, p, p, p, p, p, p, p, p, p};
            /* vpdpbusd: the first multiplicand's bytes unsigned, the second's signed */
            s[r][0] = __builtin_ia32_vpdpbusd_v16si(s[r][0], b0, x);
            s[r][1] = __builtin_ia32_vpdpbusd_v16si(s[r][1], b1, x);
        }
    }
    for (int r = 0; r < 8; r++)
        for (int v = 0; v < 2; v++) *(v16f *)(c + r * cr + 16 * v) += __builtin_convertvector(s[r][v], v16f);
}

/* Per NB positions (a workgroup), all M channels, as the emitted kernel: the
 * float block zeroed, k slices outer, 32-column blocks, 8-row blocks. */
static void gemm_pairs(void)
{
    for (int n0 = 0; n0 < N; n0 += NB) {
        memset(acc, 0, sizeof acc);
        for (int k0 = 0; k0 < KP; k0 += SLICE) {
            int kc = KP - k0 < SLICE ? KP - k0 : SLICE;
            for (int j = 0; j < NB; j += 32)
                for (int r = 0; r < M; r += 8)
                    block_pairs(acc + r * NB + j, NB, w16 + r * K + 2 * k0, K, col16 + (int64_t)k0 * NP * 2 + 2 * (n0 + j), NP * 2, kc);
        }
        for (int m = 0; m < M; m++)
            for (int i = 0; i < NB; i++) y_pairs[m * N + n0 + i] = (int32_t)acc[m * NB + i];
    }
}

static void gemm_quads(void)
{
    for (int n0 = 0; n0 < N; n0 += NB) {
        memset(acc, 0, sizeof acc);
        for (int j = 0; j < NB; j += 32)
            for (int r = 0; r < M; r += 8)
                block_quads(acc + r * NB + j, NB, w8 + r * K, K, col8 + 4 * (n0 + j), NP * 4, KQ);
        for (int m = 0; m < M; m++) {
            int32_t off = XZP * rowsum[m];
            for (int i = 0; i < NB; i++) y_quads[m * N + n0 + i] = (int32_t)acc[m * NB + i] - off;
        }
    }
}

int main(void)
{
    srand(17);
    for (int i = 0; i < C * H * W; i++) X[i] = (float)(rand() % 256 - XZP); /* x - x_zp, x in [0, 255] */
    X[0] = (float)(255 - XZP), X[1] = (float)-XZP;
    for (int m = 0; m < M; m++) {
        rowsum[m] = 0;
        for (int k = 0; k < K; k++) {
            int w = rand() % 58 - 7; /* w - w_zp: 121..178 about a zero point of 128 */
            if (k == 0) w = m & 1 ? -128 : 127;
            w16[m * K + k] = (int16_t)w, w8[m * K + k] = (int8_t)w, rowsum[m] += w;
        }
    }
    im2col_pairs(), im2col_quads(), gemm_pairs(), gemm_quads();
    for (int m = 0; m < M; m++)
        for (int i = 0; i < N; i++) {
            int pad;
            int64_t ref = 0;
            for (int k = 0; k < K; k++) ref += (int64_t)w16[m * K + k] * (int64_t)xval(k, i, &pad);
            if (ref != y_pairs[m * N + i] || ref != y_quads[m * N + i]) {
                printf("DIFFERS at m %d i %d: ref %lld pairs %d quads %d\n", m, i, (long long)ref, y_pairs[m * N + i],
                       y_quads[m * N + i]);
                return 1;
            }
        }
    double best[6] = {1e9, 1e9, 1e9, 1e9, 1e9, 1e9};
    for (int round = 0; round < ROUNDS; round++) {
        double t[7];
        t[0] = now();
        for (int r = 0; r < REPS; r++) im2col_pairs();
        t[1] = now();
        for (int r = 0; r < REPS; r++) gemm_pairs();
        t[2] = now();
        for (int r = 0; r < REPS; r++) im2col_quads();
        t[3] = now();
        for (int r = 0; r < REPS; r++) gemm_quads();
        t[4] = now();
        for (int i = 0; i < 4; i++)
            if ((t[i + 1] - t[i]) / REPS < best[i]) best[i] = (t[i + 1] - t[i]) / REPS;
    }
    double macs = (double)M * K * N;
    printf("shape M %d K %d N %d, 1 thread, best of %d rounds of %d (ms)\n", M, K, N, ROUNDS, REPS);
    printf("pairs: im2col %.3f  gemm %.3f (%.0f GMAC/s)  total %.3f\n", best[0] * 1e3, best[1] * 1e3, macs / best[1] * 1e-9,
           (best[0] + best[1]) * 1e3);
    printf("quads: im2col %.3f  gemm %.3f (%.0f GMAC/s)  total %.3f\n", best[2] * 1e3, best[3] * 1e3, macs / best[3] * 1e-9,
           (best[2] + best[3]) * 1e3);
    return 0;
}
#endif
