/* The C emitter (target/emit_c.c): emitted text, and compiled kernels against
 * the interpreter, bit for bit, with both local strategies. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* ---- compiling ---------------------------------------------------------- */

/* A scratch directory that also serves as the compile cache. */
static bool scratch_begin(char *dir, size_t cap)
{
    snprintf(dir, cap, "/tmp/smelt-emit-test-XXXXXX");
    if (!mkdtemp(dir)) return false;
    setenv("SMELT_CACHE_DIR", dir, 1);
    return true;
}

static void scratch_end(const char *dir)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK_EQ_INT(system(cmd), 0);
    unsetenv("SMELT_CACHE_DIR");
}

static bool have_cc(void) { return system("cc --version >/dev/null 2>&1") == 0; }

/* Compile src as a strict compiler would see it: no warning allowed. Returns
 * the compiler's output (malloc'd) if it complained, else NULL. With vec_report,
 * gcc's vectorizer notes are returned instead. */
static char *compile_strict_with(const char *dir, const char *src, bool vec_report, const char *cc, const char *flags)
{
    char path[512], cmd[1536];
    snprintf(path, sizeof path, "%s/k.c", dir);
    FILE *f = fopen(path, "w");
    if (!f) return strdup("cannot write source");
    fputs(src, f);
    fclose(f);
    snprintf(cmd, sizeof cmd,
             "%s -std=c11 -O3 -Wall -Wextra -Werror %s %s -c -o '%s/k.o' '%s' > '%s/log' 2>&1", cc,
             vec_report ? "-fno-math-errno -fopt-info-vec-optimized" : "", flags, dir, path, dir);
    int rc = system(cmd);
    snprintf(path, sizeof path, "%s/log", dir);
    f = fopen(path, "r");
    char *log = calloc(1, 1 << 16);
    if (f && log) {
        size_t n = fread(log, 1, (1 << 16) - 1, f);
        log[n] = 0;
    }
    if (f) fclose(f);
    if (rc == 0 && !vec_report) {
        free(log);
        return NULL;
    }
    return log;
}

static char *compile_strict(const char *dir, const char *src, bool vec_report)
{
    return compile_strict_with(dir, src, vec_report, "cc", "");
}

/* Whether src compiles without a warning for each vector ISA the emitter
 * writes, whichever this host has (-m flags that define their macros), with
 * cc and, where it is installed, clang. */
static void check_compiles_for_isas(const char *src)
{
    static const char *const isas[] = {"-mavx512f -mfma", "-mavx2 -mfma", "-mno-avx"};
    bool clang = system("clang --version >/dev/null 2>&1") == 0;
    char dir[64];
    if (!scratch_begin(dir, sizeof dir)) return;
    for (int c = 0; c < (clang ? 2 : 1); c++)
        for (int q = 0; q < COUNT(isas); q++) {
            char *log = compile_strict_with(dir, src, false, c ? "clang" : "cc", isas[q]);
            if (log) fprintf(stderr, "  %s %s:\n%s\n", c ? "clang" : "cc", isas[q], log);
            CHECK(log == NULL);
            free(log);
        }
    scratch_end(dir);
}

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
    enum { OUTS = 23 };
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
    for (int c = 0; c < COUNT(cases); c++) {
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
