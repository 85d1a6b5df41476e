/*
 * int16_pairs.c — does an integer GEMM microkernel pay on this CPU? One
 * thread, a 6x16 register block (smelt's float microkernel's shape) six ways
 * on the GEMM shapes of ddddocr_ocr_quant's ConvIntegers (cols orientation,
 * ops/conv_gemm.c: M output channels x K = C*KH*KW x N positions) and its
 * MatMulInteger (M 20 x K 1024 x N 8210, B 8-bit panels, graph/pack_int8.c):
 *
 *   f32     c += a * b, float32 FMAs (what smelt runs for ConvInteger today);
 *   f32u8   the same with B u8 panels [k][16] plus an offset widened to float
 *           in registers (vpmovzxbd, vcvtdq2ps: smelt's MatMulInteger kernel);
 *   s16p    int16 pairs with vpmaddwd, B already interleaved in pairs
 *           ([k/2][16][2], the layout an im2col would have to write);
 *   s16r    int16 pairs, B plain int16 rows [k][ld] paired in registers
 *           (vpunpck{l,h}wd within 128-bit lanes, lanes put back at the end);
 *   s16u8   int16 pairs, B u8 panels [k][16] plus an offset paired and
 *           widened in registers (vpunpck{l,h}bw, vpmovzxbw, vpaddw);
 *   s16u8c  s16u8 behind f32u8's signature: A float32, converted to int16 in
 *           each call (checked to be integers within 255, else f32u8), as a
 *           helper behind smelt's float GEMM loop would have to.
 * A is int16 for the other s16 forms, its pairs along k one 32-bit broadcast each.
 * Values are integers (|a| <= 255, |b| <= 255) whose sums stay below 2^24, so
 * every form must give the same floats: the program checks that (exit
 * status 1 and DIFFERS where one does not).
 *
 *     cc -O3 -march=native -std=gnu11 bench/int16_pairs.c -o int16_pairs && ./int16_pairs
 *
 * Times are the thread's CPU time, best of ROUNDS with the forms alternating
 * (other tenants only ever slow a run down). GCC builtins, as the C
 * emitter's helpers use (target/emit_c_gemm_int8.c); GCC + AVX2 only.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if !defined(__GNUC__) || defined(__clang__) || !defined(__AVX2__) || !defined(__FMA__)
int main(void)
{
    puts("int16_pairs: needs GCC with -march supporting AVX2 and FMA");
    return 0;
}
#else

typedef float v8f __attribute__((vector_size(32), aligned(4)));
typedef int v8i __attribute__((vector_size(32), aligned(4)));
typedef short v16h __attribute__((vector_size(32), aligned(2)));
typedef char v16b __attribute__((vector_size(16), aligned(1)));

enum { MR = 6, NR = 16, KC = 256, ROUNDS = 15 };

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#define ACC_DECL(T) T c00 = {0}, c01 = {0}, c10 = {0}, c11 = {0}, c20 = {0}, c21 = {0}, c30 = {0}, c31 = {0}, \
                      c40 = {0}, c41 = {0}, c50 = {0}, c51 = {0}
#define ALL_ROWS(R) R(0, c00, c01) R(1, c10, c11) R(2, c20, c21) R(3, c30, c31) R(4, c40, c41) R(5, c50, c51)

static void f32_6x16(float *c, long cr, const float *a, long ar, const float *b, long bk, long kc)
{
    ACC_DECL(v8f);
    for (long k = 0; k < kc; k++) {
        v8f b0 = *(const v8f *)(b + k * bk), b1 = *(const v8f *)(b + k * bk + 8);
#define F_ROW(r, x0, x1) { float s = a[(r) * ar + k]; v8f x = {s, s, s, s, s, s, s, s}; x0 = x * b0 + x0; x1 = x * b1 + x1; }
        ALL_ROWS(F_ROW)
    }
    v8f acc[MR][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
    for (int r = 0; r < MR; r++)
        for (int v = 0; v < 2; v++) *(v8f *)(c + r * cr + v * 8) += acc[r][v];
}

typedef long long v2q __attribute__((vector_size(16)));

static void f32u8_6x16(float *c, long cr, const float *a, long ar, const uint8_t *b, long kc, float off)
{
    ACC_DECL(v8f);
    v8f o = {off, off, off, off, off, off, off, off};
    for (long k = 0; k < kc; k++) {
        long long u0, u1;
        memcpy(&u0, b + k * NR, 8);
        memcpy(&u1, b + k * NR + 8, 8);
        v2q q0 = {u0, 0}, q1 = {u1, 0};
        v8f b0 = __builtin_convertvector(__builtin_ia32_pmovzxbd256((v16b)q0), v8f) + o;
        v8f b1 = __builtin_convertvector(__builtin_ia32_pmovzxbd256((v16b)q1), v8f) + o;
        ALL_ROWS(F_ROW)
    }
    v8f acc[MR][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
    for (int r = 0; r < MR; r++)
        for (int v = 0; v < 2; v++) *(v8f *)(c + r * cr + v * 8) += acc[r][v];
}

/* x0 += pairs of row r at k times b0 (and x1, b1): 16 products each, int32 sums */
#define S_ROW(r, x0, x1) { int32_t p; memcpy(&p, a + (r) * ar + k, 4); v8i x = {p, p, p, p, p, p, p, p}; \
        x0 += (v8i)__builtin_ia32_pmaddwd256((v16h)x, b0); x1 += (v8i)__builtin_ia32_pmaddwd256((v16h)x, b1); }

static void s16p_6x16(float *c, long cr, const int16_t *a, long ar, const int16_t *b, long kc)
{
    ACC_DECL(v8i);
    for (long k = 0; k < kc; k += 2) {
        v16h b0 = *(const v16h *)(b + k * NR), b1 = *(const v16h *)(b + k * NR + 16);
        ALL_ROWS(S_ROW)
    }
    v8i acc[MR][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
    for (int r = 0; r < MR; r++)
        for (int v = 0; v < 2; v++) *(v8f *)(c + r * cr + v * 8) += __builtin_convertvector(acc[r][v], v8f);
}

/* b0 holds columns 0-3 | 8-11 and b1 columns 4-7 | 12-15 (unpacks stay in 128-bit lanes) */
static void put_lanes(float *c, long cr, v8i acc[MR][2])
{
    for (int r = 0; r < MR; r++) {
        v8i lo = __builtin_shufflevector(acc[r][0], acc[r][1], 0, 1, 2, 3, 8, 9, 10, 11);
        v8i hi = __builtin_shufflevector(acc[r][0], acc[r][1], 4, 5, 6, 7, 12, 13, 14, 15);
        *(v8f *)(c + r * cr) += __builtin_convertvector(lo, v8f);
        *(v8f *)(c + r * cr + 8) += __builtin_convertvector(hi, v8f);
    }
}

static void s16r_6x16(float *c, long cr, const int16_t *a, long ar, const int16_t *b, long bk, long kc)
{
    ACC_DECL(v8i);
    for (long k = 0; k < kc; k += 2) {
        v16h r0 = *(const v16h *)(b + k * bk), r1 = *(const v16h *)(b + (k + 1) * bk);
        v16h b0 = __builtin_shufflevector(r0, r1, 0, 16, 1, 17, 2, 18, 3, 19, 8, 24, 9, 25, 10, 26, 11, 27);
        v16h b1 = __builtin_shufflevector(r0, r1, 4, 20, 5, 21, 6, 22, 7, 23, 12, 28, 13, 29, 14, 30, 15, 31);
        ALL_ROWS(S_ROW)
    }
    v8i acc[MR][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
    put_lanes(c, cr, acc);
}

static void s16u8_6x16(float *c, long cr, const int16_t *a, long ar, const uint8_t *b, long kc, short off)
{
    ACC_DECL(v8i);
    v16h o = {off, off, off, off, off, off, off, off, off, off, off, off, off, off, off, off};
    for (long k = 0; k < kc; k += 2) {
        v16b q0 = *(const v16b *)(b + k * NR), q1 = *(const v16b *)(b + (k + 1) * NR);
        v16b lo = __builtin_shufflevector(q0, q1, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
        v16b hi = __builtin_shufflevector(q0, q1, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
        v16h b0 = (v16h)__builtin_ia32_pmovzxbw256(lo) + o, b1 = (v16h)__builtin_ia32_pmovzxbw256(hi) + o;
        ALL_ROWS(S_ROW)
    }
    v8i acc[MR][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
    for (int r = 0; r < MR; r++)
        for (int v = 0; v < 2; v++) *(v8f *)(c + r * cr + v * 8) += __builtin_convertvector(acc[r][v], v8f);
}

typedef short v8s __attribute__((vector_size(16), aligned(2)));
/* A's block to int16 when every element is an integer within 255; 0 otherwise */
static int a_to_s16(int16_t *a16, long lda16, const float *a, long ar, long kc)
{
    v8i bad = {0};
    const v8f lo = {-255, -255, -255, -255, -255, -255, -255, -255}, hi = {255, 255, 255, 255, 255, 255, 255, 255};
    for (int r = 0; r < MR; r++) {
        long k = 0;
        for (; k + 8 <= kc; k += 8) {
            v8f x = *(const v8f *)(a + r * ar + k);
            v8f cl = __builtin_ia32_minps256(__builtin_ia32_maxps256(x, lo), hi);
            v8i i = __builtin_convertvector(cl, v8i);
            bad |= (v8i)(__builtin_convertvector(i, v8f) != x);
            *(v8s *)(a16 + r * lda16 + k) = __builtin_convertvector(i, v8s);
        }
        for (; k < kc; k++) {
            float x = a[r * ar + k], cl = x < -255 ? -255 : x > 255 ? 255 : x;
            if ((float)(int)cl != x) return 0;
            a16[r * lda16 + k] = (int16_t)cl;
        }
        a16[r * lda16 + kc] = 0;
    }
    for (int l = 0; l < 8; l++) if (bad[l]) return 0;
    return 1;
}

static void s16u8c_6x16(float *c, long cr, const float *a, long ar, const uint8_t *b, long kc, short off)
{
    int16_t a16[MR * 264] __attribute__((aligned(32)));
    if (kc > 256 || !a_to_s16(a16, 264, a, ar, kc)) { f32u8_6x16(c, cr, a, ar, b, kc, off); return; }
    s16u8_6x16(c, cr, a16, 264, b, kc, off);
}

typedef struct operands {
    long m, k, n;
    float *af, *bf, *c;
    int16_t *a16, *b16, *b16p;
    uint8_t *bu8; /* panels [n/16][k][16] of b + 119 */
} operands;

static void run_form(const operands *o, int form)
{
    memset(o->c, 0, sizeof(float) * (size_t)(o->m * o->n));
    for (long k0 = 0; k0 < o->k; k0 += KC) {
        long kc = o->k - k0 < KC ? o->k - k0 : KC;
        for (long p = 0; p < o->n / NR; p++)
            for (long r = 0; r < o->m; r += MR) {
                float *c = o->c + r * o->n + p * NR;
                if (form == 0) f32_6x16(c, o->n, o->af + r * o->k + k0, o->k, o->bf + k0 * o->n + p * NR, o->n, kc);
                else if (form == 1) s16p_6x16(c, o->n, o->a16 + r * o->k + k0, o->k, o->b16p + (p * o->k + k0) * NR, kc);
                else if (form == 2) s16r_6x16(c, o->n, o->a16 + r * o->k + k0, o->k, o->b16 + k0 * o->n + p * NR, o->n, kc);
                else if (form == 3) f32u8_6x16(c, o->n, o->af + r * o->k + k0, o->k, o->bu8 + (p * o->k + k0) * NR, kc, -119.0f);
                else if (form == 5) s16u8c_6x16(c, o->n, o->af + r * o->k + k0, o->k, o->bu8 + (p * o->k + k0) * NR, kc, -119);
                else s16u8_6x16(c, o->n, o->a16 + r * o->k + k0, o->k, o->bu8 + (p * o->k + k0) * NR, kc, -119);
            }
    }
}

/* 1 when a form's result differed from f32's: main's exit status */
static int any_differs;

static void bench_shape(long m, long k, long n, const char *what)
{
    operands o = {.m = m, .k = k, .n = n};
    o.af = malloc(sizeof(float) * (size_t)(m * k));
    o.bf = malloc(sizeof(float) * (size_t)(k * n));
    o.c = malloc(sizeof(float) * (size_t)(m * n));
    o.a16 = malloc(sizeof(int16_t) * (size_t)(m * k));
    o.b16 = malloc(sizeof(int16_t) * (size_t)(k * n));
    o.b16p = malloc(sizeof(int16_t) * (size_t)(k * n));
    o.bu8 = malloc((size_t)(k * n));
    float *ref = malloc(sizeof(float) * (size_t)(m * n));
    srand(7);
    for (long i = 0; i < m * k; i++) o.a16[i] = (int16_t)(rand() % 511 - 255), o.af[i] = o.a16[i];
    for (long i = 0; i < k * n; i++) o.b16[i] = (int16_t)(rand() % 256 - 119), o.bf[i] = o.b16[i];
    for (long kk = 0; kk < k; kk++)
        for (long j = 0; j < n; j++) {
            int16_t v = o.b16[kk * n + j];
            o.b16p[((j / NR) * k + kk / 2 * 2) * NR + (j % NR) * 2 + kk % 2] = v;
            o.bu8[((j / NR) * k + kk) * NR + j % NR] = (uint8_t)(v + 119);
        }
    enum { FORMS = 6 };
    static const char *names[FORMS] = {"f32", "s16p", "s16r", "f32u8", "s16u8", "s16u8c"};
    double best[FORMS] = {1e30, 1e30, 1e30, 1e30, 1e30, 1e30};
    int same[FORMS] = {1, 1, 1, 1, 1, 1};
    for (int round = 0; round < ROUNDS; round++)
        for (int f = 0; f < FORMS; f++) {
            double t0 = now();
            run_form(&o, f);
            double t = now() - t0;
            best[f] = t < best[f] ? t : best[f];
            if (round == 0 && f == 0) memcpy(ref, o.c, sizeof(float) * (size_t)(m * n));
            if (round == 0 && memcmp(ref, o.c, sizeof(float) * (size_t)(m * n))) same[f] = 0;
        }
    printf("%-28s %ldx%ldx%ld (ms, GMAC/s):", what, m, k, n);
    for (int f = 0; f < FORMS; f++)
        printf("  %s %.3f ms %.1f%s", names[f], best[f] * 1e3, (double)(m * k * n) / best[f] * 1e-9,
               same[f] ? "" : " (DIFFERS)");
    for (int f = 0; f < FORMS; f++) any_differs |= !same[f];
    putchar('\n');
    free(o.af), free(o.bf), free(o.c), free(o.a16), free(o.b16), free(o.b16p), free(o.bu8), free(ref);
}

int main(void)
{
    /* M rounded to the 6-row block and N to the 16-column panel */
    bench_shape(192, 432, 640, "3x3 48->192 at 16x40");
    bench_shape(258, 576, 160, "3x3 64->256 at 8x20");
    bench_shape(24, 216, 2560, "3x3 24->24 at 32x80");
    bench_shape(48, 192, 640, "1x1 192->48 at 16x40");
    bench_shape(18, 1024, 8208, "MatMulInteger 18 of 20 rows");
    return any_differs;
}
#endif
