/* The C emitter's vector loops (target/emit_c_simd.c): a parallel loop over
 * AVX2 and AVX-512 lanes and the interleaved staged-tile loops, compiled for
 * each vector ISA without a warning and run against the interpreter, bit for
 * bit. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emit_compile.h"
#include "kir/kir.h"
#include "kir/smem.h"
#include "kir/locals.h"
#include "rt/rt.h"
#include "target/emit.h"
#include "test.h"

/* Loops of 16 (8) f32 lanes are emitted as AVX-512 (AVX2) intrinsics as well
 * as scalar C (emit_c_simd.c): on a host with that ISA the vector code runs,
 * and it must give the interpreter's bits for every input, NaN and
 * infinities and subnormals included. 64 workgroups x 19 blocks x `lanes`
 * lanes of inputs: a few special values, then random bit patterns, small
 * magnitudes and exp's range; the second operand of the two-vector min/max
 * is the next element, so NaN meets numbers, NaN and signed zeros. The source must
 * compile for every ISA, whichever runs here. */
static void check_vector_loops(int lanes)
{
    if (!have_cc()) return;
    enum { WG = 64, BLOCKS = 19 }; /* 19 blocks: 2 x 8 interleaved, 3 after */
    const int N = WG * BLOCKS * lanes, copies = 8;
    arena a;
    arena_init(&a);
    kir_kernel *k = kir_kernel_new(&a, 0, WG, "vector loop");
    int xb = kir_buffer_add(k, SMELT_F32, N + 1, 0, true, false);
    enum { OUTS = 24 };
    int ob[OUTS];
    for (int o = 0; o < OUTS; o++) ob[o] = kir_buffer_add(k, SMELT_F32, N, 1 + o, false, true);
    kir_val blk = kir_loop_begin(k, kir_idx(k, 0), kir_idx(k, BLOCKS), kir_idx(k, 1));
    kir_val base = kir_mul(k, kir_add(k, kir_mul(k, kir_wg(k), kir_idx(k, BLOCKS)), blk), kir_idx(k, lanes));
    kir_val first = kir_load(k, xb, base); /* one element for all lanes */
    kir_val q = kir_loop_begin_parallel(k, kir_idx(k, 0), kir_idx(k, lanes));
    kir_val i = kir_add(k, base, q);
    kir_val x = kir_load(k, xb, i);
    kir_val x2 = kir_load(k, xb, kir_add(k, i, kir_idx(k, 1))); /* the next element: NaN next to NaN and numbers */
    kir_val zero = kir_const_f(k, SMELT_F32, 0), c = kir_const_f(k, SMELT_F32, -2.5);
    kir_val out[OUTS] = {
        kir_unary(k, KIR_EXP, x),
        kir_unary(k, KIR_NEG, x),
        kir_unary(k, KIR_ABS, x),
        kir_unary(k, KIR_SQRT, x),
        kir_binary(k, KIR_MAX, x, zero),
        kir_binary(k, KIR_MIN, x, c),
        kir_binary(k, KIR_MAX, c, x),
        kir_binary(k, KIR_MIN, zero, x),
        kir_binary(k, KIR_DIV, kir_const_f(k, SMELT_F32, 1), kir_binary(k, KIR_ADD, kir_const_f(k, SMELT_F32, 1), x)),
        kir_binary(k, KIR_SUB, x, first),
        kir_binary(k, KIR_MUL, x, x),
        kir_unary(k, KIR_EXP, kir_unary(k, KIR_NEG, kir_unary(k, KIR_ABS, x))),
        kir_binary(k, KIR_DIV, x, kir_const_f(k, SMELT_F32, 3)),
        kir_binary(k, KIR_DIV, x, kir_const_f(k, SMELT_F32, -0x1p-126)), /* a multiply by -2^126 */
        kir_binary(k, KIR_DIV, x, kir_const_f(k, SMELT_F32, 0x1p127)),   /* by 2^-127, a subnormal */
        kir_unary(k, KIR_EXP, kir_binary(k, KIR_MUL, x, kir_const_f(k, SMELT_F32, 0.001))),
        kir_unary(k, KIR_NEG, kir_binary(k, KIR_MUL, x, kir_const_f(k, SMELT_F32, -3))), /* one fnmadd */
        kir_unary(k, KIR_TANH, x),
        kir_unary(k, KIR_ERF, x),
        kir_binary(k, KIR_MAX, x, x2),
        kir_binary(k, KIR_MIN, x, x2),
        kir_unary(k, KIR_TANH, kir_binary(k, KIR_MUL, x, kir_const_f(k, SMELT_F32, 0.01))),
        kir_unary(k, KIR_ERF, kir_binary(k, KIR_MUL, x, kir_const_f(k, SMELT_F32, 0.01))),
        kir_binary(k, KIR_DIV, kir_const_f(k, SMELT_F32, 1), /* a sigmoid of x2 - x: e^-y as smelt_expf_v*_neg(y) */
                   kir_binary(k, KIR_ADD, kir_const_f(k, SMELT_F32, 1),
                              kir_unary(k, KIR_EXP, kir_unary(k, KIR_NEG, kir_binary(k, KIR_SUB, x2, x))))),
    };
    for (int o = 0; o < OUTS; o++) kir_store(k, ob[o], i, out[o]);
    kir_loop_end(k);
    kir_loop_end(k);
    CHECK_EQ_INT(kir_verify(k), SMELT_OK);

    float *in = malloc(sizeof(float) * (size_t)(N + 1));
    static const float special[] = {0.0f, -0.0f, 1.0f, -1.0f, INFINITY, -INFINITY, NAN, -NAN, 1e-45f, -1e-45f,
                                    1e-40f, 88.72f, 88.73f, -87.4f, -103.9f, -104.1f, 89.5f, 1e30f, -1e30f};
    uint32_t r = 12345;
    for (int n = 0; n < N + 1; n++) {
        r = r * 1664525u + 1013904223u;
        uint32_t bits = r;
        if (n % 3 == 1) bits = (bits & 0x807fffffu) | ((uint32_t)(100 + (r >> 27)) << 23); /* |x| in [2^-27, 2^5) */
        memcpy(&in[n], &bits, 4);
        if (n % 3 == 2) in[n] = -104.5f + 194.0f * (float)(r >> 8) / 16777216.0f; /* exp's whole range */
        if (n < (int)(sizeof special / sizeof special[0])) in[n] = special[n];
    }
    void *want[1 + OUTS], *got[1 + OUTS];
    want[0] = got[0] = in;
    for (int o = 0; o < OUTS; o++) {
        want[1 + o] = calloc(N, sizeof(float));
        got[1 + o] = calloc(N, sizeof(float));
    }
    CHECK_EQ_INT(kir_interpret(k, want), SMELT_OK);
    char *src = NULL;
    CHECK_EQ_INT(emit_program(&k, 1, EMIT_C, LOCALS_HYBRID, NULL, &src), SMELT_OK);
    char want_s[4][64];
    snprintf(want_s[0], sizeof want_s[0], "smelt_expf_v%d(", lanes);
    snprintf(want_s[1], sizeof want_s[1], "for (; i0 + %d < 19; i0 += %d) {", copies - 1, copies);
    snprintf(want_s[2], sizeof want_s[2], "smelt_v%d_nabs(x", lanes);
    snprintf(want_s[3], sizeof want_s[3], ", _mm%d_set1_ps(-0.0f))", lanes * 32);
    for (int w = 0; w < 4; w++) CHECK(src && strstr(src, want_s[w]));
    CHECK(src && strstr(src, "set1_ps(-0x1p+126f))") && strstr(src, "set1_ps(0x1p-127f))"));
    CHECK(src && strstr(src, lanes == 16 ? "#if defined(__AVX512F__)" : "#if defined(__AVX2__) && defined(__FMA__)"));
    CHECK(src && strstr(src, "_le0(") && strstr(src, "smelt_tanhf_v") && strstr(src, "smelt_erff_v"));
    snprintf(want_s[0], sizeof want_s[0], "smelt_expf_v%d_neg(x", lanes);
    CHECK(src && strstr(src, want_s[0]));
    if (src) check_compiles_for_isas(src);
    rt_so *so = NULL;
    CHECK_EQ_INT(rt_cc_load(src, &so, NULL), SMELT_OK);
    rt_kernel_fn fn = so ? (rt_kernel_fn)rt_so_sym(so, "smelt_k0") : NULL;
    CHECK(fn != NULL);
    for (int wg = 0; fn && wg < WG; wg++) fn(wg, got);
    int bad = 0;
    for (int o = 0; fn && o < OUTS; o++)
        for (int n = 0; n < N; n++) {
            float w = ((float *)want[1 + o])[n], g = ((float *)got[1 + o])[n];
            if (!(memcmp(&w, &g, 4) == 0 || (w != w && g != g)) && bad++ < 5)
                fprintf(stderr, "  output %d element %d (x = %a): %a, want %a\n", o, n, in[n], g, w);
        }
    CHECK_EQ_INT(bad, 0);
    rt_so_close(so);
    free(src);
    for (int o = 0; o < OUTS; o++) {
        free(want[1 + o]);
        free(got[1 + o]);
    }
    free(in);
    arena_free(&a);
}

TEST(emit_vector_loops_match_interpreter_avx512) { check_vector_loops(16); }
TEST(emit_vector_loops_match_interpreter_avx2) { check_vector_loops(8); }

/* One unit in the last place of the float nearest ref (subnormals: the smallest step). */
static double ulp_of(double ref)
{
    float r = fabsf((float)ref);
    if (r < 1.17549435e-38f) return ldexp(1.0, -149);
    int e;
    frexpf(r, &e);
    return ldexp(1.0, e - 24);
}

/* Error of got in ulps of ref; 0 where both are the same infinity or NaN,
 * INFINITY where only one is. */
static double ulps_off(float got, double ref)
{
    if (ref != ref || got != got) return ref != ref && got != got ? 0 : INFINITY;
    if (isinf((float)ref) || isinf(got)) return (float)ref == got ? 0 : INFINITY;
    return fabs((double)got - ref) / ulp_of(ref);
}

/* The vector exp (2^n by vscalefps or exponent bits), tanh and a sigmoid
 * (e^-x folded into the exp) against double-precision libm, not the
 * interpreter: a dense sweep of exp's range (2^20 steps, both reduction ends
 * many times), random bit patterns (subnormals, huge, NaN) and the edges, at
 * `lanes` lanes. Bounds: exp 1 ulp (mathf.inc's 0.99), tanh 2.5, the sigmoid
 * 3 where e^-x is finite (beyond, 1 / (1 + inf) is 0 where it is subnormal). */
static void check_vector_exp_accuracy(int lanes)
{
    if (!have_cc()) return;
    enum { WG = 64, N = 1 << 20 };
    const int blocks = N / (WG * lanes);
    arena a;
    arena_init(&a);
    kir_kernel *k = kir_kernel_new(&a, 0, WG, "vector exp accuracy");
    int xb = kir_buffer_add(k, SMELT_F32, N, 0, true, false);
    int ob[3];
    for (int o = 0; o < 3; o++) ob[o] = kir_buffer_add(k, SMELT_F32, N, 1 + o, false, true);
    kir_val blk = kir_loop_begin(k, kir_idx(k, 0), kir_idx(k, blocks), kir_idx(k, 1));
    kir_val base = kir_mul(k, kir_add(k, kir_mul(k, kir_wg(k), kir_idx(k, blocks)), blk), kir_idx(k, lanes));
    kir_val q = kir_loop_begin_parallel(k, kir_idx(k, 0), kir_idx(k, lanes));
    kir_val i = kir_add(k, base, q);
    kir_val x = kir_load(k, xb, i), one = kir_const_f(k, SMELT_F32, 1);
    kir_store(k, ob[0], i, kir_unary(k, KIR_EXP, x));
    kir_store(k, ob[1], i, kir_unary(k, KIR_TANH, kir_binary(k, KIR_MUL, x, kir_const_f(k, SMELT_F32, 0.125))));
    kir_store(k, ob[2], i, kir_binary(k, KIR_DIV, one, kir_binary(k, KIR_ADD, one, kir_unary(k, KIR_EXP, kir_unary(k, KIR_NEG, x)))));
    kir_loop_end(k);
    kir_loop_end(k);
    CHECK_EQ_INT(kir_verify(k), SMELT_OK);

    float *in = malloc(sizeof(float) * N);
    static const float edge[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, 1e-45f, -1e-45f, 1e-40f, -1e-40f,
                                 88.72f, 88.7228394f, 88.7228470f, 89.0f, 89.5f, -87.33654f, -87.3365479f, -103.278931f,
                                 -103.972084f, -104.0f, -104.5f, 1e30f, -1e30f, 0x1p-24f, -0x1p-24f, 0.0433216f,
                                 -0.0433216f, 0.0866434f, 0.693147182f, -0.693147182f, 3.4e38f, -3.4e38f};
    const int n_edge = (int)(sizeof edge / sizeof edge[0]);
    uint32_t r = 4242;
    for (int n = 0; n < N; n++) {
        r = r * 1664525u + 1013904223u;
        if (n % 8 == 7) memcpy(&in[n], &r, 4); /* any float */
        else in[n] = -105.0f + 195.0f * (float)n / (float)N;
        if (n < n_edge) in[n] = edge[n];
    }
    void *got[4] = {in, calloc(N, sizeof(float)), calloc(N, sizeof(float)), calloc(N, sizeof(float))};
    char *src = NULL, want_s[64];
    CHECK_EQ_INT(emit_program(&k, 1, EMIT_C, LOCALS_HYBRID, NULL, &src), SMELT_OK);
    snprintf(want_s, sizeof want_s, "smelt_expf_v%d_neg(x", lanes);
    CHECK(src && strstr(src, want_s));
    rt_so *so = NULL;
    CHECK_EQ_INT(rt_cc_load(src, &so, NULL), SMELT_OK);
    rt_kernel_fn fn = so ? (rt_kernel_fn)rt_so_sym(so, "smelt_k0") : NULL;
    CHECK(fn != NULL);
    for (int wg = 0; fn && wg < WG; wg++) fn(wg, got);
    double worst[3] = {0, 0, 0};
    float at[3] = {0, 0, 0};
    for (int n = 0; fn && n < N; n++) {
        double xd = in[n], e[3];
        e[0] = ulps_off(((float *)got[1])[n], exp(xd));
        e[1] = ulps_off(((float *)got[2])[n], tanh((double)(in[n] * 0.125f)));
        e[2] = xd >= -88.0 || xd != xd ? ulps_off(((float *)got[3])[n], 1.0 / (1.0 + exp(-xd))) : 0;
        for (int o = 0; o < 3; o++)
            if (!(e[o] <= worst[o])) worst[o] = e[o], at[o] = in[n];
    }
    if (!(worst[0] <= 1.0 && worst[1] <= 2.5 && worst[2] <= 3.0))
        fprintf(stderr, "  %d lanes: exp %.3f ulp (x = %a), tanh %.3f (%a), sigmoid %.3f (%a)\n", lanes, worst[0],
                at[0], worst[1], at[1], worst[2], at[2]);
    CHECK(fn && worst[0] <= 1.0);
    CHECK(fn && worst[1] <= 2.5);
    CHECK(fn && worst[2] <= 3.0);
    rt_so_close(so);
    free(src);
    for (int o = 1; o < 4; o++) free(got[o]);
    free(in);
    arena_free(&a);
}

TEST(emit_vector_exp_tanh_sigmoid_accuracy_avx512) { check_vector_exp_accuracy(16); }
TEST(emit_vector_exp_tanh_sigmoid_accuracy_avx2) { check_vector_exp_accuracy(8); }

/* A parallel loop that computes exp, tanh or erf over [lo, hi) with variable
 * bounds (a conv's SiLU epilogue over a tile's columns), or over a constant
 * count that is no row's lanes, is a strip of whole vectors with the vector
 * helpers, then the scalar loop for the rest (emit_c_simd.c, emit_vec_loop):
 * the interpreter's bits in every element, nothing stored outside [lo, hi).
 * Row b runs [b, 4b + 1): lengths 1, 4, ..., 52, every remainder mod 16 and
 * mod 8, starts unaligned. The constant loop runs 37 lanes (a masked rest on
 * AVX-512). Run as compiled here and with AVX-512 off (the AVX2 strip). */
static void check_math_strips(bool variable)
{
    if (!have_cc()) return;
    enum { ROWS = 18, STRIDE = 128, N = ROWS * STRIDE };
    arena a;
    arena_init(&a);
    kir_kernel *k = kir_kernel_new(&a, 0, 1, "math strip");
    int xb = kir_buffer_add(k, SMELT_F32, N, 0, true, false);
    int ob[3];
    for (int o = 0; o < 3; o++) ob[o] = kir_buffer_add(k, SMELT_F32, N, 1 + o, false, true);
    kir_val row = kir_loop_begin(k, kir_idx(k, 0), kir_idx(k, ROWS), kir_idx(k, 1));
    kir_val lo = variable ? row : kir_idx(k, 0);
    kir_val hi = variable ? kir_add(k, kir_mul(k, row, kir_idx(k, 4)), kir_idx(k, 1)) : kir_idx(k, 37);
    kir_val q = kir_loop_begin_parallel(k, lo, hi);
    kir_val i = kir_add(k, kir_mul(k, row, kir_idx(k, STRIDE)), q);
    kir_val x = kir_load(k, xb, i), one = kir_const_f(k, SMELT_F32, 1);
    kir_val sig = kir_binary(k, KIR_DIV, one, kir_binary(k, KIR_ADD, one, kir_unary(k, KIR_EXP, kir_unary(k, KIR_NEG, x))));
    kir_store(k, ob[0], i, kir_binary(k, KIR_MUL, x, sig));
    kir_store(k, ob[1], i, kir_unary(k, KIR_TANH, x));
    kir_store(k, ob[2], i, kir_unary(k, KIR_ERF, x));
    kir_loop_end(k);
    kir_loop_end(k);
    CHECK_EQ_INT(kir_verify(k), SMELT_OK);

    float *in = malloc(sizeof(float) * N);
    uint32_t r = 99;
    for (int n = 0; n < N; n++) {
        r = r * 1664525u + 1013904223u;
        in[n] = -100.0f + 190.0f * (float)(r >> 8) / 16777216.0f;
        if (n % 7 == 3) in[n] *= 0.01f;
    }
    in[STRIDE + 1] = NAN;
    in[2 * STRIDE + 3] = -INFINITY;
    void *want[4] = {in}, *got[4] = {in};
    for (int o = 1; o < 4; o++) {
        want[o] = malloc(sizeof(float) * N);
        got[o] = malloc(sizeof(float) * N);
        for (int n = 0; n < N; n++) ((float *)want[o])[n] = ((float *)got[o])[n] = 1234.5f;
    }
    CHECK_EQ_INT(kir_interpret(k, want), SMELT_OK);
    char *src = NULL;
    CHECK_EQ_INT(emit_program(&k, 1, EMIT_C, LOCALS_HYBRID, NULL, &src), SMELT_OK);
    CHECK(src && strstr(src, "smelt_expf_v16_neg(") && strstr(src, "smelt_expf_v8_neg(") &&
          strstr(src, "smelt_tanhf_v16(") && strstr(src, "smelt_erff_v8("));
    CHECK(src && strstr(src, variable ? "s1 + 16 <= v" : "s1 + 16 <= 37;"));
    CHECK(src && (!variable || strstr(src, "const __mmask16 sm1 = (__mmask16)((1u << (unsigned)(v")));
    if (src) check_compiles_for_isas(src);
    const char *old = getenv("SMELT_CC");
    char *saved = old ? strdup(old) : NULL;
    for (int pass = 0; pass < 2; pass++) { /* pass 1 with AVX-512 off: the AVX2 strip, where the host has AVX2 */
        if (pass == 1) setenv("SMELT_CC", "cc -mno-avx512f", 1);
        rt_so *so = NULL;
        CHECK_EQ_INT(rt_cc_load(src, &so, NULL), SMELT_OK);
        rt_kernel_fn fn = so ? (rt_kernel_fn)rt_so_sym(so, "smelt_k0") : NULL;
        CHECK(fn != NULL);
        for (int o = 1; o < 4; o++)
            for (int n = 0; n < N; n++) ((float *)got[o])[n] = 1234.5f;
        if (fn) fn(0, got);
        int bad = 0;
        for (int o = 1; fn && o < 4; o++)
            for (int n = 0; n < N; n++) {
                float w = ((float *)want[o])[n], g = ((float *)got[o])[n];
                if (!(memcmp(&w, &g, 4) == 0 || (w != w && g != g)) && bad++ < 5)
                    fprintf(stderr, "  pass %d output %d element %d (x = %a): %a, want %a\n", pass, o, n, in[n], g, w);
            }
        CHECK_EQ_INT(bad, 0);
        rt_so_close(so);
    }
    if (saved) setenv("SMELT_CC", saved, 1);
    else unsetenv("SMELT_CC");
    free(saved);
    free(src);
    for (int o = 1; o < 4; o++) {
        free(want[o]);
        free(got[o]);
    }
    free(in);
    arena_free(&a);
}

TEST(emit_math_strips_variable_bounds_match_interpreter) { check_math_strips(true); }
TEST(emit_math_strips_of_37_match_interpreter) { check_math_strips(false); }

/* A masked loop (kir.h) of fewer lanes than 16 (not 8) is one AVX-512 vector
 * under a mask of its first n lanes (emit_c_simd.c, "Masked vector loops"):
 * the interpreter's bits in those lanes, and nothing stored past them. Blocks
 * are n + 3 apart, so the gaps between them (a sentinel) show a store of a
 * masked-off lane; the input ends at the last block's last element, read by
 * a masked load. A plain parallel loop of n is not masked (opt-in). */
static void check_masked_loops(int n, bool masked)
{
    if (!have_cc()) return;
    enum { WG = 8, BLOCKS = 5 };
    const int gap = 3, stride = n + gap, N = WG * BLOCKS * stride;
    arena a;
    arena_init(&a);
    kir_kernel *k = kir_kernel_new(&a, 0, WG, "masked vector loop");
    int xb = kir_buffer_add(k, SMELT_F32, N - gap, 0, true, false);
    int ob = kir_buffer_add(k, SMELT_F32, N, 1, false, true);
    kir_val blk = kir_loop_begin(k, kir_idx(k, 0), kir_idx(k, BLOCKS), kir_idx(k, 1));
    kir_val base = kir_mul(k, kir_add(k, kir_mul(k, kir_wg(k), kir_idx(k, BLOCKS)), blk), kir_idx(k, stride));
    kir_val first = kir_load(k, xb, base);
    kir_val q = masked ? kir_loop_begin_masked(k, n) : kir_loop_begin_parallel(k, kir_idx(k, 0), kir_idx(k, n));
    kir_val i = kir_add(k, base, q);
    kir_val x = kir_load(k, xb, i);
    kir_val y = kir_binary(k, KIR_ADD, kir_binary(k, KIR_MUL, x, first), kir_unary(k, KIR_EXP, x));
    y = kir_binary(k, KIR_MIN, kir_const_f(k, SMELT_F32, 6), kir_binary(k, KIR_MAX, kir_const_f(k, SMELT_F32, 0), y));
    kir_store(k, ob, i, kir_binary(k, KIR_DIV, y, kir_binary(k, KIR_SUB, x, first)));
    kir_loop_end(k);
    kir_loop_end(k);
    CHECK_EQ_INT(kir_verify(k), SMELT_OK);

    float *in = malloc(sizeof(float) * (size_t)(N - gap));
    uint32_t r = 777;
    for (int e = 0; e < N - gap; e++) {
        r = r * 1664525u + 1013904223u;
        in[e] = (float)(int32_t)(r >> 8) / 1048576.0f;
    }
    void *want[2] = {in, malloc(sizeof(float) * (size_t)N)}, *got[2] = {in, malloc(sizeof(float) * (size_t)N)};
    for (int e = 0; e < N; e++) ((float *)want[1])[e] = ((float *)got[1])[e] = 1234.5f;
    CHECK_EQ_INT(kir_interpret(k, want), SMELT_OK);
    char *src = NULL, mask[64];
    CHECK_EQ_INT(emit_program(&k, 1, EMIT_C, LOCALS_HYBRID, NULL, &src), SMELT_OK);
    snprintf(mask, sizeof mask, "_mm512_maskz_loadu_ps((__mmask16)0x%x, &b", (1u << n) - 1);
    CHECK_EQ_INT(src && strstr(src, mask) && strstr(src, "_mm512_mask_storeu_ps(&b") && strstr(src, "smelt_expf_v16("),
                 masked);
    if (src) check_compiles_for_isas(src);
    rt_so *so = NULL;
    CHECK_EQ_INT(rt_cc_load(src, &so, NULL), SMELT_OK);
    rt_kernel_fn fn = so ? (rt_kernel_fn)rt_so_sym(so, "smelt_k0") : NULL;
    CHECK(fn != NULL);
    for (int wg = 0; fn && wg < WG; wg++) fn(wg, got);
    int bad = 0;
    for (int e = 0; fn && e < N; e++) {
        float w = ((float *)want[1])[e], g = ((float *)got[1])[e];
        if (!(memcmp(&w, &g, 4) == 0 || (w != w && g != g)) && bad++ < 5)
            fprintf(stderr, "  masked loop of %d, element %d: %a, want %a\n", n, e, g, w);
    }
    CHECK_EQ_INT(bad, 0);
    rt_so_close(so);
    free(src);
    free(want[1]);
    free(got[1]);
    free(in);
    arena_free(&a);
}

TEST(emit_masked_vector_loops_match_interpreter)
{
    static const int ns[] = {4, 5, 7, 9, 14, 15};
    for (int t = 0; t < (int)(sizeof ns / sizeof ns[0]); t++) {
        check_masked_loops(ns[t], true);
        check_masked_loops(ns[t], false);
    }
}

/* ---- interleaved loops ---------------------------------------------------- */

/* A staged-tile pass B in small (emit_c_simd.c, "interleaved loops"): rows of
 * cols columns per workgroup, panels of 16 whose lanes compute
 * -(sigmoid(-|1.5x + 0.25|))^2 into a workgroup row that a stream loop copies
 * out at dst[row * cols + panel]. Workgroup wg has its last wg % 3 panels cut
 * off, so the panel loop's end is known only at run time. in_place: the
 * lanes read y itself (its iterations are not independent); overlap: panels
 * step 8, so each one's 16 elements meet the next one's. */
static kir_kernel *k_panels(arena *a, int64_t rows, int64_t cols, bool in_place, bool overlap, int lanes)
{
    kir_kernel *k = kir_kernel_new(a, 0, 3, "panels");
    int64_t n = 3 * rows * cols;
    int x = kir_buffer_add(k, SMELT_F32, n, 0, true, false);
    int y = kir_buffer_add(k, SMELT_F32, n, 1, in_place, true);
    int row = kir_smem_add(k, SMELT_F32, lanes);
    kir_val r = kir_loop_begin(k, kir_idx(k, 0), kir_idx(k, rows), kir_idx(k, 1));
    kir_val start = kir_mul(k, kir_add(k, kir_mul(k, kir_wg(k), kir_idx(k, rows)), r), kir_idx(k, cols));
    kir_val hi = kir_binary(k, KIR_SUB, kir_idx(k, cols),
                            kir_mul(k, kir_binary(k, KIR_MOD, kir_wg(k), kir_idx(k, 3)), kir_idx(k, lanes)));
    if (overlap) hi = kir_binary(k, KIR_SUB, hi, kir_idx(k, lanes / 2)); /* the last panel still ends in the row */
    kir_val jp = kir_loop_begin(k, kir_idx(k, 0), hi, kir_idx(k, overlap ? lanes / 2 : lanes));
    kir_val base = kir_add(k, start, jp);
    kir_val q = kir_loop_begin_parallel(k, kir_idx(k, 0), kir_idx(k, lanes));
    kir_val i = kir_add(k, base, q);
    kir_val v = kir_load(k, in_place ? y : x, i);
    v = kir_binary(k, KIR_ADD, kir_binary(k, KIR_MUL, v, kir_const_f(k, SMELT_F32, 1.5)),
                   kir_const_f(k, SMELT_F32, 0.25));
    v = kir_unary(k, KIR_EXP, kir_unary(k, KIR_NEG, kir_unary(k, KIR_ABS, v)));
    v = kir_binary(k, KIR_DIV, kir_const_f(k, SMELT_F32, 1), kir_binary(k, KIR_ADD, kir_const_f(k, SMELT_F32, 1), v));
    v = kir_unary(k, KIR_NEG, kir_binary(k, KIR_MUL, v, v));
    kir_store(k, row, q, v);
    kir_loop_end(k);
    kir_val c = kir_loop_begin_stream(k, lanes);
    kir_store(k, y, kir_add(k, base, c), kir_load(k, row, c));
    kir_loop_end(k);
    kir_loop_end(k);
    kir_loop_end(k);
    return k;
}

/* Interleaved panels give the interpreter's bits, with the destination
 * aligned for non-temporal stores and not; panels whose iterations depend on
 * each other keep their plain loop. */
static void check_interleaved_loops(int lanes)
{
    arena a;
    arena_init(&a);
    static const struct {
        int64_t cols;
        bool in_place, overlap, interleaved;
    } cases[] = {
        {11, false, false, true}, /* 8 panels at once, then 3 */
        {5, false, false, true},  /* 16 lanes: fewer panels than copies, only the loop of one runs */
        {11, true, false, false},
        {11, false, true, false},
    };
    for (int c = 0; c < (int)(sizeof cases / sizeof cases[0]); c++) {
        enum { ROWS = 5 };
        int64_t cols = cases[c].cols * lanes;
        kir_kernel *k = k_panels(&a, ROWS, cols, cases[c].in_place, cases[c].overlap, lanes);
        CHECK_EQ_INT(kir_verify(k), SMELT_OK);
        CHECK_EQ_INT(smem_assign(k, NULL), SMELT_OK);
        char *src = NULL;
        CHECK_EQ_INT(emit_program(&k, 1, EMIT_C, LOCALS_HYBRID, NULL, &src), SMELT_OK);
        CHECK(src != NULL);
        if (!src) continue;
        char stream[32], ilv[32];
        snprintf(stream, sizeof stream, "smelt_stream_v%d(&b1[", lanes);
        snprintf(ilv, sizeof ilv, "i1 + %d < ", 7 * lanes);
        CHECK(!!strstr(src, stream) == cases[c].interleaved);
        CHECK(!!strstr(src, ilv) == cases[c].interleaved);
        CHECK(strstr(src, "smelt_stream_f32(&b1[") != NULL); /* the plain form, for other CPUs */
        check_compiles_for_isas(src);
        if (!have_cc()) {
            free(src);
            continue;
        }
        int64_t n = 3 * ROWS * cols;
        float *in = malloc(sizeof(float) * (size_t)n), *want = calloc((size_t)n, sizeof(float));
        float *out = aligned_alloc(64, sizeof(float) * (size_t)((n + 31) / 16 * 16)); /* a multiple of 64 bytes */
        uint32_t r = 777;
        for (int64_t e = 0; e < n; e++) {
            r = r * 1664525u + 1013904223u;
            in[e] = e == 5 ? NAN : e == 6 ? INFINITY : -80.0f + 160.0f * (float)(r >> 8) / 16777216.0f;
            want[e] = in[e];
        }
        void *wb[2] = {in, want};
        CHECK_EQ_INT(kir_interpret(k, wb), SMELT_OK);
        rt_so *so = NULL;
        CHECK_EQ_INT(rt_cc_load(src, &so, NULL), SMELT_OK);
        rt_kernel_fn fn = so ? (rt_kernel_fn)rt_so_sym(so, "smelt_k0") : NULL;
        CHECK(fn != NULL);
        for (int shift = 0; fn && shift < 2; shift++) { /* y at a 64-byte boundary, then 4 bytes past one */
            float *y = out + shift;
            memcpy(y, in, sizeof(float) * (size_t)n);
            void *gb[2] = {in, y};
            for (int wg = 0; wg < 3; wg++) fn(wg, gb);
            int bad = 0;
            for (int64_t e = 0; e < n; e++)
                if (!(memcmp(&want[e], &y[e], 4) == 0 || (want[e] != want[e] && y[e] != y[e])) && bad++ < 3)
                    fprintf(stderr, "  case %d shift %d element %lld: %a, want %a\n", c, shift, (long long)e,
                            y[e], want[e]);
            CHECK_EQ_INT(bad, 0);
        }
        rt_so_close(so);
        free(in);
        free(want);
        free(out);
        free(src);
    }
    arena_free(&a);
}

TEST(emit_interleaved_loops_match_interpreter_avx512) { check_interleaved_loops(16); }
TEST(emit_interleaved_loops_match_interpreter_avx2) { check_interleaved_loops(8); }

/* ---- strips: quantize bodies ---------------------------------------------- */

/* A parallel loop of n lanes, not a row's, whose body rounds (a quantize:
 * y = select(isnan(q), 0, q) - zp with q = max(0, min(255, round(x / s) +
 * zp)), as the QuantizeLinear lowering writes it) is a strip (emit_c_simd.c):
 * whole vectors of 16 (AVX-512) or 8 (AVX2) lanes and the rest as the scalar
 * loop (on AVX-512 a rest of 4 or more lanes as one masked vector). Its
 * rounds, compares and selects give the interpreter's bits: halfway
 * cases, NaN, infinities, values past the clamp. Run as this host compiles it
 * and with AVX-512 off (the AVX2 strip, where the host has AVX2). A loop
 * that does not round is left to the C compiler (no strip). */
static void check_strips(int n, bool rounds)
{
    if (!have_cc()) return;
    enum { WG = 6, BLOCKS = 3, OUTS = 11 };
    const int N = WG * BLOCKS * n;
    arena a;
    arena_init(&a);
    kir_kernel *k = kir_kernel_new(&a, 0, WG, "strip");
    int xb = kir_buffer_add(k, SMELT_F32, N + 1, 0, true, false);
    int ob[OUTS];
    for (int o = 0; o < OUTS; o++) ob[o] = kir_buffer_add(k, SMELT_F32, N, 1 + o, false, true);
    kir_val blk = kir_loop_begin(k, kir_idx(k, 0), kir_idx(k, BLOCKS), kir_idx(k, 1));
    kir_val base = kir_mul(k, kir_add(k, kir_mul(k, kir_wg(k), kir_idx(k, BLOCKS)), blk), kir_idx(k, n));
    kir_val scale = kir_load(k, xb, base), zp = kir_const_f(k, SMELT_F32, 3);
    kir_val q = kir_loop_begin_parallel(k, kir_idx(k, 0), kir_idx(k, n));
    kir_val i = kir_add(k, base, q);
    kir_val x = kir_load(k, xb, i);
    kir_val x2 = kir_load(k, xb, kir_add(k, i, kir_idx(k, 1)));
    kir_val zero = kir_const_f(k, SMELT_F32, 0);
    kir_val r = rounds ? kir_unary(k, KIR_ROUND, x) : kir_unary(k, KIR_NEG, x);
    kir_val qv = kir_binary(k, KIR_ADD, kir_unary(k, rounds ? KIR_ROUND : KIR_ABS, kir_binary(k, KIR_DIV, x, scale)), zp);
    qv = kir_binary(k, KIR_MAX, kir_binary(k, KIR_MIN, qv, kir_const_f(k, SMELT_F32, 255)), zero);
    qv = kir_binary(k, KIR_SUB, kir_select(k, kir_unary(k, KIR_ISNAN, qv), zero, qv), zp);
    kir_val out[OUTS] = {
        r,
        qv,
        kir_select(k, kir_unary(k, KIR_ISNAN, x), zero, x),
        kir_select(k, kir_binary(k, KIR_EQ, x, x2), x, x2),
        kir_select(k, kir_binary(k, KIR_NE, x, x2), x, x2),
        kir_select(k, kir_binary(k, KIR_LT, x, x2), x, x2),
        kir_select(k, kir_binary(k, KIR_LE, x, x2), x, x2),
        kir_select(k, kir_binary(k, KIR_GT, x, zero), x2, x),
        kir_select(k, kir_binary(k, KIR_GE, kir_const_f(k, SMELT_F32, 1.5), x), x2, zero),
        kir_unary(k, rounds ? KIR_ROUND : KIR_ABS, kir_binary(k, KIR_MUL, x, kir_const_f(k, SMELT_F32, 0.5))),
        kir_unary(k, rounds ? KIR_ROUND : KIR_ABS, kir_binary(k, KIR_ADD, x2, kir_const_f(k, SMELT_F32, 0.5))),
    };
    for (int o = 0; o < OUTS; o++) kir_store(k, ob[o], i, out[o]);
    kir_loop_end(k);
    kir_loop_end(k);
    CHECK_EQ_INT(kir_verify(k), SMELT_OK);

    float *in = malloc(sizeof(float) * (size_t)(N + 1));
    static const float special[] = {0.5f, 1.5f, 2.5f, -0.5f, -2.5f, -1.5f, 3.5f, NAN, -NAN, INFINITY, -INFINITY,
                                    0.0f, -0.0f, 1e30f, -1e30f, 255.5f, 256.0f, 252.5f, -3.5f, -300.0f, 0.49999997f,
                                    -0.49999997f, 8388607.5f, 4194303.5f, 1e-45f, -1e-45f, 300.0f, 0.5f, 0.5f};
    uint32_t rs = 4242;
    for (int e = 0; e < N + 1; e++) {
        rs = rs * 1664525u + 1013904223u;
        uint32_t bits = rs;
        memcpy(&in[e], &bits, 4);
        if (e % 4 == 1) in[e] = (float)((int)(rs >> 20) - 2048) * 0.25f; /* quarters: halfway cases */
        if (e % 4 == 2) in[e] = (float)(int32_t)(rs >> 4) / 65536.0f * 0.01f;
        if (e % 4 == 3) in[e] = (float)((int)(rs >> 22) - 512) + 0.5f;
        if (e < (int)(sizeof special / sizeof special[0])) in[e] = special[e];
    }
    for (int w = 0; w < WG * BLOCKS; w++) in[w * n] = w % 3 == 0 ? 0.5f : w % 3 == 1 ? 0.25f : 2.0f; /* the scales */
    void *want[1 + OUTS], *got[1 + OUTS];
    want[0] = got[0] = in;
    for (int o = 0; o < OUTS; o++) {
        want[1 + o] = calloc(N, sizeof(float));
        got[1 + o] = calloc(N, sizeof(float));
    }
    CHECK_EQ_INT(kir_interpret(k, want), SMELT_OK);
    char *src = NULL, strip16[64], strip8[64];
    CHECK_EQ_INT(emit_program(&k, 1, EMIT_C, LOCALS_HYBRID, NULL, &src), SMELT_OK);
    snprintf(strip16, sizeof strip16, "for (; s1 + 16 <= %d; s1 += 16) {", n);
    snprintf(strip8, sizeof strip8, "for (; s1 + 8 <= %d; s1 += 8) {", n);
    CHECK_EQ_INT(src && strstr(src, strip16) && strstr(src, strip8) && strstr(src, "_mm512_roundscale_ps(") &&
                 strstr(src, "_mm256_round_ps(") && strstr(src, "_CMP_NEQ_UQ") && strstr(src, "smelt_v16_if("),
                 rounds);
    CHECK_EQ_INT(src && strstr(src, "_mm512_mask_storeu_ps(&b") && strstr(src, "_mm512_maskz_loadu_ps("),
                 rounds && n % 16 >= 4);
    if (src) check_compiles_for_isas(src);
    const char *old = getenv("SMELT_CC");
    char *saved = old ? strdup(old) : NULL;
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) setenv("SMELT_CC", "cc -mno-avx512f", 1);
        rt_so *so = NULL;
        CHECK_EQ_INT(rt_cc_load(src, &so, NULL), SMELT_OK);
        rt_kernel_fn fn = so ? (rt_kernel_fn)rt_so_sym(so, "smelt_k0") : NULL;
        CHECK(fn != NULL);
        for (int o = 0; o < OUTS; o++) memset(got[1 + o], 0, sizeof(float) * (size_t)N);
        for (int wg = 0; fn && wg < WG; wg++) fn(wg, got);
        int bad = 0;
        for (int o = 0; fn && o < OUTS; o++)
            for (int e = 0; e < N; e++) {
                float w = ((float *)want[1 + o])[e], g = ((float *)got[1 + o])[e];
                if (memcmp(&w, &g, 4) != 0 && !(w != w && g != g) && bad++ < 5)
                    fprintf(stderr, "  strip of %d pass %d output %d element %d (x = %a): %a, want %a\n", n, pass,
                            o, e, in[e], g, w);
            }
        CHECK_EQ_INT(bad, 0);
        rt_so_close(so);
    }
    if (saved) setenv("SMELT_CC", saved, 1);
    else unsetenv("SMELT_CC");
    free(saved);
    free(src);
    for (int o = 0; o < OUTS; o++) {
        free(want[1 + o]);
        free(got[1 + o]);
    }
    free(in);
    arena_free(&a);
}

TEST(emit_strips_match_interpreter)
{
    static const int ns[] = {17, 20, 24, 40, 46, 80, 33};
    for (int t = 0; t < (int)(sizeof ns / sizeof ns[0]); t++) check_strips(ns[t], true);
    check_strips(40, false);
}

/* ---- transpose loops ------------------------------------------------------ */

/* A staged-tile pass A in small (tiles.c, kir.h "Transposing copies"): per
 * workgroup, panels of p of the c source rows, and in each the transpose loop
 * over rows [lo, rows) of the copy, whose inner loop over the panel's
 * columns (p, or fewer in the last panel) stores two sources at
 * dst[jp * rows + r * p + q] = src[(wg * c + jp + q) * rows + r] (the second
 * at an offset of 3). scaled: the value stored is the load times 2, which is
 * no copy; one: only the first store (the C compiler's loop); in either case
 * the loop stays as written. */
static kir_kernel *k_transpose(arena *a, int64_t rows, int64_t lo, int64_t c, int64_t p, bool scaled, bool one)
{
    kir_kernel *k = kir_kernel_new(a, 0, 3, "transpose");
    int64_t cp = (c + p - 1) / p * p;
    int s0 = kir_buffer_add(k, SMELT_F32, 3 * c * rows, 0, true, false);
    int s1 = kir_buffer_add(k, SMELT_F32, 3 * c * rows + 3, 1, true, false);
    int d0 = kir_buffer_add(k, SMELT_F32, 3 * cp * rows, 2, false, true);
    int d1 = kir_buffer_add(k, SMELT_F32, 3 * cp * rows, 3, false, true);
    kir_val jp = kir_loop_begin(k, kir_idx(k, 0), kir_idx(k, c), kir_idx(k, p));
    kir_val width = kir_binary(k, KIR_MIN, kir_idx(k, p), kir_binary(k, KIR_SUB, kir_idx(k, c), jp));
    kir_val r = kir_loop_begin_transpose(k, kir_idx(k, lo), kir_idx(k, rows));
    kir_val panel = kir_add(k, kir_mul(k, kir_wg(k), kir_idx(k, cp * rows)), kir_mul(k, jp, kir_idx(k, rows)));
    kir_val row_at = kir_add(k, panel, kir_mul(k, r, kir_idx(k, p)));
    kir_val q = kir_loop_begin(k, kir_idx(k, 0), width, kir_idx(k, 1));
    kir_val at = kir_add(k, row_at, q);
    kir_val src_row = kir_add(k, kir_add(k, kir_mul(k, kir_wg(k), kir_idx(k, c)), jp), q);
    kir_val from = kir_add(k, kir_mul(k, src_row, kir_idx(k, rows)), r);
    kir_val v0 = kir_load(k, s0, from);
    if (scaled) v0 = kir_binary(k, KIR_MUL, v0, kir_const_f(k, SMELT_F32, 2));
    kir_store(k, d0, at, v0);
    if (!one) kir_store(k, d1, at, kir_load(k, s1, kir_add(k, from, kir_idx(k, 3))));
    kir_loop_end(k);
    kir_loop_end(k);
    kir_loop_end(k);
    return k;
}

/* Transpose loops give the interpreter's bits (every float moved, NaN
 * payloads included) for whole 16x16 and 8x8 blocks and for tails of rows and
 * of columns, and are calls of smelt_trans_f32 in the C; a loop whose stores
 * are not plain copies, or that has one store, stays a loop. */
TEST(emit_transpose_loops_match_interpreter)
{
    arena a;
    arena_init(&a);
    static const struct {
        int64_t rows, lo, c, p;
        bool scaled, one;
    } cases[] = {
        {32, 0, 32, 16, false, false}, /* whole 16x16 blocks */
        {32, 0, 32, 8, false, false},  /* whole 8x8 blocks, two per call */
        {37, 3, 40, 16, false, false}, /* rows from 3 to 37: a tail of 2; panels of 16, 16 and 8 */
        {21, 0, 13, 8, false, false},  /* a tail of 5 rows, panels of 8 and 5 */
        {1, 0, 7, 8, false, false},    /* one row */
        {24, 0, 16, 16, true, false},  /* no copy: the loop as written */
        {24, 0, 16, 16, false, true},  /* one store: the loop as written */
    };
    for (int t = 0; t < (int)(sizeof cases / sizeof cases[0]); t++) {
        int64_t rows = cases[t].rows, c = cases[t].c, p = cases[t].p;
        kir_kernel *k = k_transpose(&a, rows, cases[t].lo, c, p, cases[t].scaled, cases[t].one);
        CHECK_EQ_INT(kir_verify(k), SMELT_OK);
        char *src = NULL;
        CHECK_EQ_INT(emit_program(&k, 1, EMIT_C, LOCALS_HYBRID, NULL, &src), SMELT_OK);
        CHECK(src != NULL);
        if (!src) continue;
        bool trans = !cases[t].scaled && !cases[t].one;
        CHECK(!!strstr(src, "smelt_trans_f32(&b2[") == trans);
        CHECK(!!strstr(src, "smelt_trans_f32(&b3[") == trans);
        check_compiles_for_isas(src);
        if (!have_cc()) {
            free(src);
            continue;
        }
        int64_t ns = 3 * c * rows + 3, nd = 3 * (c + p - 1) / p * p * rows;
        float *in0 = malloc(sizeof(float) * (size_t)ns), *in1 = malloc(sizeof(float) * (size_t)ns);
        float *want0 = malloc(sizeof(float) * (size_t)nd), *want1 = malloc(sizeof(float) * (size_t)nd);
        float *got0 = malloc(sizeof(float) * (size_t)nd), *got1 = malloc(sizeof(float) * (size_t)nd);
        uint32_t r = 4242;
        for (int64_t e = 0; e < ns; e++) {
            r = r * 1664525u + 1013904223u;
            uint32_t bits = r ^ (r >> 13);
            memcpy(&in0[e], &bits, 4); /* any bit pattern: NaN payloads, subnormals */
            in1[e] = (float)e;
        }
        for (int64_t e = 0; e < nd; e++) want0[e] = want1[e] = got0[e] = got1[e] = -1.0f; /* unwritten */
        void *wb[4] = {in0, in1, want0, want1};
        CHECK_EQ_INT(kir_interpret(k, wb), SMELT_OK);
        rt_so *so = NULL;
        CHECK_EQ_INT(rt_cc_load(src, &so, NULL), SMELT_OK);
        rt_kernel_fn fn = so ? (rt_kernel_fn)rt_so_sym(so, "smelt_k0") : NULL;
        CHECK(fn != NULL);
        if (fn) {
            void *gb[4] = {in0, in1, got0, got1};
            for (int wg = 0; wg < 3; wg++) fn(wg, gb);
            CHECK(memcmp(want0, got0, sizeof(float) * (size_t)nd) == 0);
            CHECK(memcmp(want1, got1, sizeof(float) * (size_t)nd) == 0);
        }
        rt_so_close(so);
        free(in0);
        free(in1);
        free(want0);
        free(want1);
        free(got0);
        free(got1);
        free(src);
    }
    arena_free(&a);
}
