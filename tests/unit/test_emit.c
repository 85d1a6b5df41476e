/* The C emitter (target/emit_c.c): emitted text, and compiled kernels against
 * the interpreter, bit for bit, with both local strategies, for every op and
 * dtype. The vector loops are in test_emit_vector.c. */
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

/* ---- kernels ------------------------------------------------------------ */

/* out[i] = max(in[i] * 2 + 1, 0); workgroups of 7 (odd on purpose). */
static kir_kernel *k_elementwise(arena *a, int id, const char *comment)
{
    kir_kernel *k = kir_kernel_new(a, id, 3, comment);
    int in = kir_buffer_add(k, SMELT_F32, 21, 0, true, false);
    int out = kir_buffer_add(k, SMELT_F32, 21, 1, false, true);
    kir_val base = kir_mul(k, kir_wg(k), kir_idx(k, 7));
    kir_val j = kir_loop_begin(k, kir_idx(k, 0), kir_idx(k, 7), kir_idx(k, 1));
    kir_val i = kir_add(k, base, j);
    kir_val x = kir_load(k, in, i);
    kir_val y = kir_binary(k, KIR_ADD, kir_binary(k, KIR_MUL, x, kir_const_f(k, SMELT_F32, 2)),
                           kir_const_f(k, SMELT_F32, 1));
    kir_store(k, out, i, kir_binary(k, KIR_MAX, y, kir_const_f(k, SMELT_F32, 0)));
    kir_loop_end(k);
    return k;
}

/* for i < 16: out[i] = sqrt(-exp(in[i]) * -exp(in[i])): five values in a chain. */
static kir_kernel *k_chain(arena *a, int id)
{
    kir_kernel *k = kir_kernel_new(a, id, 1, "chain");
    int in = kir_buffer_add(k, SMELT_F32, 16, 0, true, false);
    int out = kir_buffer_add(k, SMELT_F32, 16, 1, false, true);
    kir_val i = kir_loop_begin(k, kir_idx(k, 0), kir_idx(k, 16), kir_idx(k, 1));
    kir_val n = kir_unary(k, KIR_NEG, kir_unary(k, KIR_EXP, kir_load(k, in, i)));
    kir_store(k, out, i, kir_unary(k, KIR_SQRT, kir_binary(k, KIR_MUL, n, n)));
    kir_loop_end(k);
    return k;
}

/* Row sums and row maxima of a 3x5 matrix, one row per workgroup. */
static kir_kernel *k_reduce(arena *a, int id)
{
    kir_kernel *k = kir_kernel_new(a, id, 3, "sum and max");
    int in = kir_buffer_add(k, SMELT_F32, 15, 0, true, false);
    int out = kir_buffer_add(k, SMELT_F32, 6, 1, false, true);
    for (int r = 0; r < 2; r++) {
        int acc = kir_var_new(k, SMELT_F32, kir_const_f(k, SMELT_F32, r ? -INFINITY : 0.0));
        kir_val j = kir_loop_begin(k, kir_idx(k, 0), kir_idx(k, 5), kir_idx(k, 1));
        kir_val x = kir_load(k, in, kir_add(k, kir_mul(k, kir_wg(k), kir_idx(k, 5)), j));
        kir_var_set(k, acc, kir_binary(k, r ? KIR_MAX : KIR_ADD, kir_var_get(k, acc), x));
        kir_loop_end(k);
        kir_store(k, out, kir_add(k, kir_mul(k, kir_wg(k), kir_idx(k, 2)), kir_idx(k, r)), kir_var_get(k, acc));
    }
    return k;
}

/* Pad by one on each side with a guard; a value read before the loop is used
 * in every iteration, and a var is set on both branches of an if. */
static kir_kernel *k_pad(arena *a, int id)
{
    kir_kernel *k = kir_kernel_new(a, id, 1, "pad");
    int in = kir_buffer_add(k, SMELT_F32, 5, 0, true, false);
    int out = kir_buffer_add(k, SMELT_F32, 7, 1, false, true);
    int n = kir_buffer_add(k, SMELT_I64, 1, 2, true, false);
    kir_val hi = kir_load(k, n, kir_idx(k, 0)); /* 7: a loop bound held in a local */
    kir_val scale = kir_load(k, in, kir_idx(k, 4));
    kir_val i = kir_loop_begin(k, kir_idx(k, 0), hi, kir_idx(k, 1));
    kir_val inside = kir_binary(k, KIR_AND, kir_binary(k, KIR_GE, i, kir_idx(k, 1)),
                                kir_binary(k, KIR_LT, i, kir_idx(k, 6)));
    kir_if_begin(k, inside);
    kir_val x = kir_load(k, in, kir_binary(k, KIR_SUB, i, kir_idx(k, 1)));
    int v = kir_var_new(k, SMELT_F32, kir_binary(k, KIR_MUL, x, scale));
    kir_else(k);
    kir_var_set(k, v, kir_const_f(k, SMELT_F32, -1));
    kir_if_end(k);
    kir_store(k, out, i, kir_var_get(k, v));
    kir_loop_end(k);
    return k;
}

/* ---- every op, per dtype ------------------------------------------------ */

#define N_ELEMS 24
static const kir_op float_unary[] = {
    KIR_NEG, KIR_ABS, KIR_EXP, KIR_LOG, KIR_SQRT, KIR_SIN, KIR_COS, KIR_TAN, KIR_TANH, KIR_ERF,
    KIR_FLOOR, KIR_CEIL, KIR_ROUND, KIR_ASIN, KIR_ACOS, KIR_ATAN, KIR_SINH, KIR_COSH, KIR_ASINH,
    KIR_ACOSH, KIR_ATANH, KIR_ISNAN, KIR_ISINF};
static const kir_op float_binary[] = {KIR_ADD, KIR_SUB, KIR_MUL, KIR_DIV, KIR_MOD, KIR_POW, KIR_MIN,
                                      KIR_MAX, KIR_EQ, KIR_NE, KIR_LT, KIR_LE, KIR_GT, KIR_GE};
static const kir_op int_unary[] = {KIR_NEG, KIR_ABS, KIR_NOT, KIR_FLOOR, KIR_CEIL, KIR_ROUND,
                                   KIR_ISNAN, KIR_ISINF};
static const kir_op int_binary[] = {KIR_ADD, KIR_SUB, KIR_MUL, KIR_DIV, KIR_MOD, KIR_POW, KIR_MIN,
                                    KIR_MAX, KIR_AND, KIR_OR, KIR_XOR, KIR_SHL, KIR_SHR, KIR_EQ,
                                    KIR_NE, KIR_LT, KIR_LE, KIR_GT, KIR_GE};
static const kir_op bool_unary[] = {KIR_NOT, KIR_ABS, KIR_FLOOR, KIR_CEIL, KIR_ROUND, KIR_ISNAN, KIR_ISINF};
static const kir_op bool_binary[] = {KIR_AND, KIR_OR, KIR_XOR, KIR_MIN, KIR_MAX, KIR_EQ,
                                     KIR_NE, KIR_LT, KIR_LE, KIR_GT, KIR_GE};
static const smelt_dtype all_types[] = {SMELT_F32, SMELT_F64, SMELT_I64, SMELT_I32, SMELT_I16, SMELT_I8,
                                        SMELT_U8, SMELT_U16, SMELT_U32, SMELT_U64, SMELT_BOOL, SMELT_F16,
                                        SMELT_BF16};
#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

static bool is_cmp(kir_op op)
{
    return op == KIR_EQ || op == KIR_NE || op == KIR_LT || op == KIR_LE || op == KIR_GT || op == KIR_GE ||
           op == KIR_ISNAN || op == KIR_ISINF;
}

static void store_result(kir_kernel *k, smelt_dtype t, kir_val i, kir_val r)
{
    int o = kir_buffer_add(k, t, N_ELEMS, -1, false, true);
    kir_store(k, o, i, r);
}

/* Loads x[i], y[i] of dtype t and stores every op on them (and on constants) to
 * its own output buffer; two workgroups of N_ELEMS / 2. */
static kir_kernel *k_all_ops(arena *a, int id, smelt_dtype t)
{
    kir_kernel *k = kir_kernel_new(a, id, 2, smelt_dtype_name(t));
    int xb = kir_buffer_add(k, t, N_ELEMS, 0, true, false);
    int yb = kir_buffer_add(k, t, N_ELEMS, 1, true, false);
    kir_val j = kir_loop_begin(k, kir_idx(k, 0), kir_idx(k, N_ELEMS / 2), kir_idx(k, 1));
    kir_val i = kir_add(k, kir_mul(k, kir_wg(k), kir_idx(k, N_ELEMS / 2)), j);
    kir_val x = kir_load(k, xb, i), y = kir_load(k, yb, i);
    const kir_op *un = kir_is_float(t) ? float_unary : t == SMELT_BOOL ? bool_unary : int_unary;
    const kir_op *bin = kir_is_float(t) ? float_binary : t == SMELT_BOOL ? bool_binary : int_binary;
    int n_un = kir_is_float(t) ? COUNT(float_unary) : t == SMELT_BOOL ? COUNT(bool_unary) : COUNT(int_unary);
    int n_bin = kir_is_float(t) ? COUNT(float_binary) : t == SMELT_BOOL ? COUNT(bool_binary) : COUNT(int_binary);
    for (int u = 0; u < n_un; u++) store_result(k, is_cmp(un[u]) ? SMELT_BOOL : t, i, kir_unary(k, un[u], x));
    for (int b = 0; b < n_bin; b++)
        store_result(k, is_cmp(bin[b]) ? SMELT_BOOL : t, i, kir_binary(k, bin[b], x, y));
    store_result(k, t, i, kir_select(k, kir_binary(k, KIR_LT, x, y), x, y));
    for (int c = 0; c < COUNT(all_types); c++)
        if (all_types[c] != t) store_result(k, all_types[c], i, kir_cast(k, all_types[c], x));
    /* constant operands: literals, and divisions the emitter may print plainly */
    if (kir_is_float(t)) {
        double cs[] = {0.1, -2.5, 3, NAN, INFINITY, -INFINITY, 1e-40, 123456789.0, 0.0, -0.0};
        for (int c = 0; c < COUNT(cs); c++) {
            kir_val cv = kir_const_f(k, t, cs[c]);
            store_result(k, t, i, kir_binary(k, KIR_ADD, x, cv));
            store_result(k, t, i, kir_binary(k, KIR_DIV, cv, x));
            /* min/max against a constant: the emitter's one-comparison forms (NaN, ±0 ties) */
            store_result(k, t, i, kir_binary(k, KIR_MIN, x, cv));
            store_result(k, t, i, kir_binary(k, KIR_MAX, x, cv));
            store_result(k, t, i, kir_binary(k, KIR_MIN, cv, x));
            store_result(k, t, i, kir_binary(k, KIR_MAX, cv, x));
        }
    } else if (t != SMELT_BOOL) {
        int64_t cs[] = {3, -1, 0, 1000000000000LL, INT64_MIN, INT32_MIN, -7, 255};
        for (int c = 0; c < COUNT(cs); c++) {
            kir_val cv = kir_const_i(k, t, cs[c]);
            if (k->vals[cv].imm.i == 1) continue; /* x / 1 folds away */
            store_result(k, t, i, kir_binary(k, KIR_DIV, x, cv));
            store_result(k, t, i, kir_binary(k, KIR_MOD, x, cv));
            store_result(k, t, i, kir_binary(k, KIR_ADD, x, cv));
        }
    }
    kir_loop_end(k);
    return k;
}

static void fill(smelt_dtype t, void *p, int n, int salt)
{
    static const double fv[N_ELEMS] = {0, -0.0, 1, -1, 0.5, 1.5, 2.5, -2.5, NAN, INFINITY, -INFINITY, 1e30,
                                       -1e30, 3.7, -3.7, 1e-3, 100, 3e9, 1e20, 0.25, 2, 7, -7, 0.9};
    static const int64_t iv[N_ELEMS] = {0, 1, -1, 2, -2, 3, 7, -7, 63, 64, 100, 127, -128, 255, 32767,
                                        -32768, INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN, 5, -5,
                                        1000000007, 65};
    for (int e = 0; e < n; e++) {
        int s = (e * (salt ? 7 : 1) + salt * 3) % N_ELEMS;
        int64_t x = iv[s];
        switch (t) {
        case SMELT_F32: ((float *)p)[e] = (float)fv[s]; break;
        case SMELT_F64: ((double *)p)[e] = fv[s]; break;
        case SMELT_F16: case SMELT_BF16: ((uint16_t *)p)[e] = smelt_float_to_half(t, (float)fv[s]); break;
        case SMELT_I8: ((int8_t *)p)[e] = (int8_t)x; break;
        case SMELT_U8: ((uint8_t *)p)[e] = (uint8_t)x; break;
        case SMELT_I16: ((int16_t *)p)[e] = (int16_t)x; break;
        case SMELT_U16: ((uint16_t *)p)[e] = (uint16_t)x; break;
        case SMELT_I32: ((int32_t *)p)[e] = (int32_t)x; break;
        case SMELT_U32: ((uint32_t *)p)[e] = (uint32_t)x; break;
        case SMELT_BOOL: ((uint8_t *)p)[e] = (uint8_t)(x & 1); break;
        default: ((int64_t *)p)[e] = x; break;
        }
    }
}

/* ---- running ------------------------------------------------------------ */

/* Output buffers of a kernel, sized from its buffer table; inputs filled. */
typedef struct buffers {
    void *p[128];
    int n;
} buffers;

static void buffers_make(const kir_kernel *k, buffers *b, const int64_t *init_i64)
{
    b->n = k->n_bufs;
    for (int i = 0; i < k->n_bufs; i++) {
        size_t bytes = (size_t)k->bufs[i].numel * smelt_dtype_size(k->bufs[i].type);
        b->p[i] = calloc(1, bytes ? bytes : 1);
        if (k->bufs[i].read) {
            if (k->bufs[i].type == SMELT_I64 && init_i64) memcpy(b->p[i], init_i64, bytes);
            else fill(k->bufs[i].type, b->p[i], (int)k->bufs[i].numel, i);
        }
    }
}

static void buffers_free(buffers *b)
{
    for (int i = 0; i < b->n; i++) free(b->p[i]);
}

/* Same bits, or both NaN for float buffers. */
static bool same_contents(const kir_buffer *kb, const void *x, const void *y)
{
    for (int64_t e = 0; e < kb->numel; e++) {
        if (kb->type == SMELT_F32) {
            float a = ((const float *)x)[e], c = ((const float *)y)[e];
            if (!(isnan(a) && isnan(c)) && memcmp(&a, &c, sizeof a)) return false;
        } else if (kb->type == SMELT_F64) {
            double a = ((const double *)x)[e], c = ((const double *)y)[e];
            if (!(isnan(a) && isnan(c)) && memcmp(&a, &c, sizeof a)) return false;
        } else if (kir_is_half(kb->type)) {
            float a = smelt_half_to_float(kb->type, ((const uint16_t *)x)[e]);
            float c = smelt_half_to_float(kb->type, ((const uint16_t *)y)[e]);
            if (!(isnan(a) && isnan(c)) && ((const uint16_t *)x)[e] != ((const uint16_t *)y)[e]) return false;
        } else {
            size_t sz = smelt_dtype_size(kb->type);
            if (memcmp((const char *)x + e * sz, (const char *)y + e * sz, sz)) return false;
        }
    }
    return true;
}

/* Emit the kernels as one program with strategy s, compile without warnings,
 * run each kernel and compare every written buffer with the interpreter's. */
static void check_against_interpreter(kir_kernel *const *ks, int n, locals_strategy s, const int64_t *init_i64)
{
    if (!have_cc()) {
        fprintf(stderr, "  (no system compiler: compiled-kernel checks skipped)\n");
        return;
    }
    char *src = NULL;
    CHECK_EQ_INT(emit_program(ks, n, EMIT_C, s, NULL, &src), SMELT_OK);
    if (!src) return;
    char dir[64];
    CHECK(scratch_begin(dir, sizeof dir));
    char *log = compile_strict(dir, src, false);
    if (log) {
        fprintf(stderr, "  generated code does not compile cleanly:\n%s\n%s\n", log, src);
        test_failures++;
        free(log);
    }
    rt_so *so = NULL;
    CHECK_EQ_INT(rt_cc_load(src, &so, NULL), SMELT_OK);
    for (int q = 0; so && q < n; q++) {
        const kir_kernel *k = ks[q];
        char name[32];
        rt_kernel_fn fn = (rt_kernel_fn)rt_so_sym(so, emit_kernel_name(k, name, sizeof name));
        CHECK(fn != NULL);
        if (!fn) continue;
        buffers want, got;
        buffers_make(k, &want, init_i64);
        buffers_make(k, &got, init_i64);
        CHECK_EQ_INT(kir_interpret(k, want.p), SMELT_OK);
        for (int64_t wg = 0; wg < k->n_workgroups; wg++) fn(wg, got.p);
        for (int b = 0; b < k->n_bufs; b++)
            if (k->bufs[b].written && !same_contents(&k->bufs[b], want.p[b], got.p[b])) {
                fprintf(stderr, "  kernel %d (%s) buffer %d differs (%s locals)\n", k->id, k->comment, b,
                        s == LOCALS_REUSE ? "reuse" : "hybrid");
                test_failures++;
            }
        buffers_free(&want);
        buffers_free(&got);
    }
    rt_so_close(so);
    scratch_end(dir);
    free(src);
}

/* ---- emitted text ------------------------------------------------------- */

static char *emit_one(const kir_kernel *k, locals_strategy s)
{
    strbuf sb;
    sb_init(&sb);
    CHECK_EQ_INT(emit_kernel(&sb, k, EMIT_C, s, NULL), SMELT_OK);
    return sb_take(&sb);
}

static int count_of(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

TEST(emit_signature_buffers_and_loops)
{
    arena a;
    arena_init(&a);
    kir_kernel *k = k_elementwise(&a, 4, "relu");
    char *src = emit_one(k, LOCALS_REUSE);
    CHECK_STR_HAS(src, "/* k4: relu */\nvoid smelt_k4(int64_t wg, void *const *bufs)\n{\n");
    CHECK_STR_HAS(src, "    const float *restrict b0 = (const float *)bufs[0];\n");
    CHECK_STR_HAS(src, "    float *restrict b1 = (float *)bufs[1];\n");
    CHECK_STR_HAS(src, "for (int64_t i0 = 0; i0 < 7; ++i0) {");
    CHECK_STR_HAS(src, "* 2.0f");
    CHECK_STR_HAS(src, "(0.0f > f2 ? 0.0f : f2)"); /* max against a constant: one comparison */
    char name[16];
    CHECK(!strcmp(emit_kernel_name(k, name, sizeof name), "smelt_k4"));
    free(src);
    arena_free(&a);
}

TEST(emit_hybrid_is_const_reuse_is_not)
{
    arena a;
    arena_init(&a);
    kir_kernel *k = k_chain(&a, 0);
    char *h = emit_one(k, LOCALS_HYBRID), *r = emit_one(k, LOCALS_REUSE);
    kir_locals lh, lr;
    CHECK_EQ_INT(kir_locals_assign(k, LOCALS_HYBRID, &a, &lh), SMELT_OK);
    CHECK_EQ_INT(kir_locals_assign(k, LOCALS_REUSE, &a, &lr), SMELT_OK);
    CHECK_EQ_INT(count_of(h, "const float v"), kir_locals_declared(&lh));
    CHECK_EQ_INT(count_of(h, "const float v"), 5);
    CHECK_EQ_INT(count_of(r, "const float v"), 0);
    CHECK_EQ_INT(kir_locals_declared(&lr), 1);
    CHECK_STR_HAS(r, "    float f0;\n");
    CHECK_STR_HAS(r, "f0 = smelt_expf(f0);");
    CHECK_STR_HAS(h, "const float v1 = smelt_expf(v0);");
    free(h);
    free(r);
    arena_free(&a);
}

TEST(emit_constants_exact)
{
    arena a;
    arena_init(&a);
    kir_kernel *k = kir_kernel_new(&a, 0, 1, "constants");
    int f = kir_buffer_add(k, SMELT_F32, 6, 0, false, true);
    int d = kir_buffer_add(k, SMELT_F64, 2, 1, false, true);
    int l = kir_buffer_add(k, SMELT_I64, 3, 2, false, true);
    int u = kir_buffer_add(k, SMELT_U64, 1, 3, false, true);
    kir_store(k, f, kir_idx(k, 0), kir_const_f(k, SMELT_F32, 0.1));
    kir_store(k, f, kir_idx(k, 1), kir_const_f(k, SMELT_F32, 1.0));
    kir_store(k, f, kir_idx(k, 2), kir_const_f(k, SMELT_F32, INFINITY));
    kir_store(k, f, kir_idx(k, 3), kir_const_f(k, SMELT_F32, -INFINITY));
    kir_store(k, f, kir_idx(k, 4), kir_const_f(k, SMELT_F32, NAN));
    kir_store(k, f, kir_idx(k, 5), kir_const_f(k, SMELT_F32, -2.5e-20));
    kir_store(k, d, kir_idx(k, 0), kir_const_f(k, SMELT_F64, 0.1));
    kir_store(k, d, kir_idx(k, 1), kir_const_f(k, SMELT_F64, 1e300));
    kir_store(k, l, kir_idx(k, 0), kir_const_i(k, SMELT_I64, 1000000000000LL));
    kir_store(k, l, kir_idx(k, 1), kir_const_i(k, SMELT_I64, INT64_MIN));
    kir_store(k, l, kir_idx(k, 2), kir_const_i(k, SMELT_I64, -5));
    kir_store(k, u, kir_idx(k, 0), kir_const_i(k, SMELT_U64, -1));
    char *src = emit_one(k, LOCALS_HYBRID);
    CHECK_STR_HAS(src, "b0[0] = 0.100000001f;");
    CHECK_STR_HAS(src, "b0[1] = 1.0f;");
    CHECK_STR_HAS(src, "b0[2] = INFINITY;");
    CHECK_STR_HAS(src, "b0[3] = (-INFINITY);");
    CHECK_STR_HAS(src, "b0[4] = NAN;");
    CHECK_STR_HAS(src, "b0[5] = (-2.49999992e-20f);");
    CHECK_STR_HAS(src, "b1[0] = 0.10000000000000001;");
    CHECK_STR_HAS(src, "b1[1] = 1.0000000000000001e+300;");
    CHECK_STR_HAS(src, "b2[0] = ((int64_t)1000000000000ll);");
    CHECK_STR_HAS(src, "b2[1] = INT64_MIN;");
    CHECK_STR_HAS(src, "b2[2] = (-5);");
    CHECK_STR_HAS(src, "b3[0] = 18446744073709551615ull;");
    free(src);
    arena_free(&a);
}

TEST(emit_comment_is_sanitized)
{
    arena a;
    arena_init(&a);
    kir_kernel *k = k_elementwise(&a, 0, "Conv 'c1' */ system(\"rm -rf\"); /*\n#include <evil.h>\\");
    char *src = emit_one(k, LOCALS_REUSE);
    CHECK_STR_HAS(src, "/* k0: Conv 'c1' *_ system(_rm -rf_)_ _*__include _evil.h__ */\n");
    CHECK(!strstr(src, "\"rm"));
    CHECK(!strstr(src, "#include"));
    CHECK_EQ_INT(count_of(src, "*/"), 1);
    free(src);
    arena_free(&a);
}

TEST(emit_c_refuses_threads)
{
    arena a;
    arena_init(&a);
    kir_kernel *k = k_chain(&a, 0);
    k->wg_size = 64;
    strbuf sb;
    sb_init(&sb);
    CHECK_EQ_INT(emit_kernel(&sb, k, EMIT_C, LOCALS_REUSE, NULL), SMELT_ERR_UNSUPPORTED);
    sb_free(&sb);
    char *out = NULL;
    CHECK_EQ_INT(emit_program(&k, 1, EMIT_C, LOCALS_REUSE, NULL, &out), SMELT_ERR_UNSUPPORTED);
    CHECK(out == NULL);
    arena_free(&a);
}

/* A kernel with nothing to do (an empty tensor) still compiles cleanly. */
TEST(emit_empty_kernel)
{
    arena a;
    arena_init(&a);
    kir_kernel *k = kir_kernel_new(&a, 9, 0, "");
    kir_buffer_add(k, SMELT_F32, 0, 0, false, true);
    char *src = emit_one(k, LOCALS_HYBRID);
    CHECK_STR_HAS(src, "/* k9 */\nvoid smelt_k9(int64_t wg, void *const *bufs)\n{\n    (void)wg;\n    (void)bufs;\n}\n");
    free(src);
    check_against_interpreter(&k, 1, LOCALS_REUSE, NULL);
    arena_free(&a);
}

TEST(emit_program_prelude)
{
    arena a;
    arena_init(&a);
    kir_kernel *ks[2] = {k_chain(&a, 0), k_reduce(&a, 1)};
    char *src = NULL;
    CHECK_EQ_INT(emit_program(ks, 2, EMIT_C, LOCALS_REUSE, NULL, &src), SMELT_OK);
    CHECK_STR_HAS(src, "#include <math.h>\n#include <stdint.h>\n");
    CHECK_STR_HAS(src, "static inline float smelt_maxf(float a, float b)");
    CHECK_STR_HAS(src, "SMELT_FN float smelt_expf(float x)");
    CHECK(!strstr(src, "smelt_minf")); /* only the helpers the kernels call */
    CHECK(!strstr(src, "smelt_div_i64"));
    CHECK(!strstr(src, "smelt_erff"));
    CHECK_STR_HAS(src, "void smelt_k0(");
    CHECK_STR_HAS(src, "void smelt_k1(");
    free(src);
    arena_free(&a);
}

/* ---- compiled against interpreted --------------------------------------- */

TEST(emit_compiled_matches_interpreter)
{
    arena a;
    arena_init(&a);
    kir_kernel *ks[] = {k_elementwise(&a, 0, "relu"), k_chain(&a, 1), k_reduce(&a, 2), k_pad(&a, 3)};
    for (int q = 0; q < COUNT(ks); q++) CHECK_EQ_INT(kir_verify(ks[q]), SMELT_OK);
    int64_t seven[1] = {7};
    check_against_interpreter(ks, COUNT(ks), LOCALS_REUSE, seven);
    check_against_interpreter(ks, COUNT(ks), LOCALS_HYBRID, seven);
    arena_free(&a);
}

TEST(emit_every_op_matches_interpreter)
{
    arena a;
    arena_init(&a);
    kir_kernel *ks[COUNT(all_types)];
    for (int q = 0; q < COUNT(all_types); q++) {
        ks[q] = k_all_ops(&a, q, all_types[q]);
        CHECK_EQ_INT(kir_verify(ks[q]), SMELT_OK);
        CHECK(ks[q]->n_bufs <= 128);
    }
    check_against_interpreter(ks, COUNT(ks), LOCALS_REUSE, NULL);
    check_against_interpreter(ks, COUNT(ks), LOCALS_HYBRID, NULL);
    arena_free(&a);
}

/* gcc vectorizes the inner loop of an elementwise kernel in both strategies. */
TEST(emit_inner_loop_vectorizes)
{
    if (!have_cc() || system("cc --version 2>/dev/null | grep -qi gcc") != 0) return;
    arena a;
    arena_init(&a);
    kir_kernel *k = k_elementwise(&a, 0, "relu");
    for (int s = 0; s < 2; s++) {
        char *src = NULL;
        CHECK_EQ_INT(emit_program(&k, 1, EMIT_C, s ? LOCALS_HYBRID : LOCALS_REUSE, NULL, &src), SMELT_OK);
        char dir[64];
        CHECK(scratch_begin(dir, sizeof dir));
        char *log = compile_strict(dir, src, true);
        CHECK_STR_HAS(log, "loop vectorized");
        free(log);
        scratch_end(dir);
        free(src);
    }
    arena_free(&a);
}
