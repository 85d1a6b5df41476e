/* The Kernel IR interpreter (kir/interp.c) on hand-built kernels. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kir/kir.h"
#include "test.h"

/* out[i] = max(in[i] * 2 + 1, 0) over 3 workgroups of 7 (odd sizes on purpose). */
TEST(interp_elementwise_chain)
{
    arena a;
    arena_init(&a);
    kir_kernel *k = kir_kernel_new(&a, 1, 3, "relu(2x+1)");
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
    CHECK_EQ_INT(kir_verify(k), SMELT_OK);
    float xin[21], xout[21];
    for (int t = 0; t < 21; t++) xin[t] = (float)(t - 10) * 0.37f;
    void *bufs[] = {xin, xout};
    CHECK_EQ_INT(kir_interpret(k, bufs), SMELT_OK);
    for (int t = 0; t < 21; t++) {
        float e = xin[t] * 2.0f + 1.0f;
        CHECK(xout[t] == (e > 0 ? e : 0.0f));
    }
    arena_free(&a);
}

/* PREFETCH is a hint: the interpreter runs past it, verify wants an index
 * into a parameter buffer (not workgroup memory), and the dump names it. */
TEST(interp_prefetch_is_a_hint)
{
    arena a;
    arena_init(&a);
    kir_kernel *k = kir_kernel_new(&a, 1, 1, "copy, fetching ahead");
    int in = kir_buffer_add(k, SMELT_F32, 9, 0, true, false);
    int out = kir_buffer_add(k, SMELT_F32, 9, 1, false, true);
    kir_val i = kir_loop_begin(k, kir_idx(k, 0), kir_idx(k, 9), kir_idx(k, 1));
    kir_prefetch(k, in, kir_binary(k, KIR_MIN, kir_add(k, i, kir_idx(k, 4)), kir_idx(k, 8)));
    kir_store(k, out, i, kir_load(k, in, i));
    kir_loop_end(k);
    CHECK_EQ_INT(kir_verify(k), SMELT_OK);
    float xin[9], xout[9];
    for (int t = 0; t < 9; t++) xin[t] = (float)t * 1.5f;
    void *bufs[] = {xin, xout};
    CHECK_EQ_INT(kir_interpret(k, bufs), SMELT_OK);
    for (int t = 0; t < 9; t++) CHECK(xout[t] == xin[t]);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    kir_dump(k, f);
    fclose(f);
    CHECK(text && strstr(text, "prefetch buf0["));
    free(text);

    kir_kernel *w = kir_kernel_new(&a, 2, 1, "prefetch of workgroup memory");
    int tile = kir_smem_add(w, SMELT_F32, 4);
    kir_prefetch(w, tile, kir_idx(w, 0));
    CHECK(kir_verify(w) != SMELT_OK);
    arena_free(&a);
}

/* Row sums of a 4x5 matrix, one row per workgroup, with a var accumulator. */
TEST(interp_sum_accumulator)
{
    arena a;
    arena_init(&a);
    kir_kernel *k = kir_kernel_new(&a, 2, 4, "row sum");
    int in = kir_buffer_add(k, SMELT_F32, 20, 0, true, false);
    int out = kir_buffer_add(k, SMELT_F32, 4, 1, false, true);
    int acc = kir_var_new(k, SMELT_F32, kir_const_f(k, SMELT_F32, 0));
    kir_val j = kir_loop_begin(k, kir_idx(k, 0), kir_idx(k, 5), kir_idx(k, 1));
    kir_val x = kir_load(k, in, kir_add(k, kir_mul(k, kir_wg(k), kir_idx(k, 5)), j));
    kir_var_set(k, acc, kir_binary(k, KIR_ADD, kir_var_get(k, acc), x));
    kir_loop_end(k);
    kir_store(k, out, kir_wg(k), kir_var_get(k, acc));
    CHECK_EQ_INT(kir_verify(k), SMELT_OK);
    float xin[20], xout[4];
    for (int t = 0; t < 20; t++) xin[t] = (float)t;
    void *bufs[] = {xin, xout};
    CHECK_EQ_INT(kir_interpret(k, bufs), SMELT_OK);
    for (int r = 0; r < 4; r++) CHECK_EQ_INT(xout[r], 25 * r + 10);
    arena_free(&a);
}

/* Pad by one on each side: out[i] = 1 <= i < 6 ? in[i - 1] : -1, via if/else. */
TEST(interp_if_else_pad)
{
    arena a;
    arena_init(&a);
    kir_kernel *k = kir_kernel_new(&a, 3, 1, "pad");
    int in = kir_buffer_add(k, SMELT_F32, 5, 0, true, false);
    int out = kir_buffer_add(k, SMELT_F32, 7, 1, false, true);
    kir_val i = kir_loop_begin(k, kir_idx(k, 0), kir_idx(k, 7), kir_idx(k, 1));
    kir_val inside = kir_binary(k, KIR_AND, kir_binary(k, KIR_GE, i, kir_idx(k, 1)),
                                kir_binary(k, KIR_LT, i, kir_idx(k, 6)));
    kir_if_begin(k, inside);
    kir_store(k, out, i, kir_load(k, in, kir_binary(k, KIR_SUB, i, kir_idx(k, 1))));
    kir_else(k);
    kir_store(k, out, i, kir_const_f(k, SMELT_F32, -1));
    kir_if_end(k);
    kir_loop_end(k);
    CHECK_EQ_INT(kir_verify(k), SMELT_OK);
    float xin[5] = {1, 2, 3, 4, 5}, xout[7];
    void *bufs[] = {xin, xout};
    CHECK_EQ_INT(kir_interpret(k, bufs), SMELT_OK);
    float want[7] = {-1, 1, 2, 3, 4, 5, -1};
    for (int t = 0; t < 7; t++) CHECK(xout[t] == want[t]);
    arena_free(&a);
}

TEST(interp_out_of_bounds_is_an_error)
{
    arena a;
    arena_init(&a);
    kir_kernel *k = kir_kernel_new(&a, 7, 2, "oob");
    int in = kir_buffer_add(k, SMELT_F32, 4, 0, true, false);
    int out = kir_buffer_add(k, SMELT_F32, 8, 1, false, true);
    kir_val i = kir_loop_begin(k, kir_idx(k, 0), kir_idx(k, 4), kir_idx(k, 1));
    kir_val g = kir_add(k, kir_mul(k, kir_wg(k), kir_idx(k, 4)), i);
    kir_store(k, out, g, kir_load(k, in, g)); /* in has 4 elements: wg 1 reads past it */
    kir_loop_end(k);
    float xin[4] = {0}, xout[8];
    void *bufs[] = {xin, xout};
    CHECK_EQ_INT(kir_interpret(k, bufs), SMELT_ERR_INTERNAL);
    CHECK_STR_HAS(smelt_last_error(), "kernel 7");
    CHECK_STR_HAS(smelt_last_error(), "index 4");

    kir_kernel *s = kir_kernel_new(&a, 8, 1, "oob store");
    int o = kir_buffer_add(s, SMELT_I32, 3, 0, false, true);
    kir_store(s, o, kir_idx(s, -1), kir_const_i(s, SMELT_I32, 5));
    void *b2[] = {xout};
    CHECK_EQ_INT(kir_interpret(s, b2), SMELT_ERR_INTERNAL);
    CHECK_STR_HAS(smelt_last_error(), "store");
    arena_free(&a);
}

/* out[j] = op(x[j], y[j]) for one op and one dtype, over n elements. */
static kir_kernel *binop_kernel(arena *a, kir_op op, smelt_dtype t, smelt_dtype out_t, int n)
{
    kir_kernel *k = kir_kernel_new(a, 0, 1, kir_op_name(op));
    int x = kir_buffer_add(k, t, n, 0, true, false);
    int y = kir_buffer_add(k, t, n, 1, true, false);
    int o = kir_buffer_add(k, out_t, n, 2, false, true);
    kir_val i = kir_loop_begin(k, kir_idx(k, 0), kir_idx(k, n), kir_idx(k, 1));
    kir_val r = kir_binary(k, op, kir_load(k, x, i), kir_load(k, y, i));
    kir_store(k, o, i, r);
    kir_loop_end(k);
    return k;
}

static kir_kernel *unop_kernel(arena *a, kir_op op, smelt_dtype t, smelt_dtype out_t, int n)
{
    kir_kernel *k = kir_kernel_new(a, 0, 1, kir_op_name(op));
    int x = kir_buffer_add(k, t, n, 0, true, false);
    int o = kir_buffer_add(k, out_t, n, 1, false, true);
    kir_val i = kir_loop_begin(k, kir_idx(k, 0), kir_idx(k, n), kir_idx(k, 1));
    kir_val v = kir_load(k, x, i);
    kir_val r = op == KIR_CAST ? kir_cast(k, out_t, v) : kir_unary(k, op, v);
    kir_store(k, o, i, r);
    kir_loop_end(k);
    return k;
}

TEST(interp_integer_semantics)
{
    arena a;
    arena_init(&a);
    /* int8 wraps at every definition */
    int8_t x8[3] = {100, -128, 7}, y8[3] = {100, -1, 0}, o8[3];
    void *b8[] = {x8, y8, o8};
    CHECK_EQ_INT(kir_interpret(binop_kernel(&a, KIR_ADD, SMELT_I8, SMELT_I8, 3), b8), SMELT_OK);
    CHECK_EQ_INT(o8[0], -56);
    CHECK_EQ_INT(o8[1], 127);
    CHECK_EQ_INT(kir_interpret(binop_kernel(&a, KIR_DIV, SMELT_I8, SMELT_I8, 3), b8), SMELT_OK);
    CHECK_EQ_INT(o8[0], 1);
    CHECK_EQ_INT(o8[1], -128); /* -128 / -1 wraps */
    CHECK_EQ_INT(o8[2], 0);    /* division by zero gives 0 */
    /* int64: truncating division and C remainder; MIN / -1 wraps */
    int64_t x[4] = {-7, 7, INT64_MIN, 5}, y[4] = {2, -2, -1, 0}, o[4];
    void *b64[] = {x, y, o};
    CHECK_EQ_INT(kir_interpret(binop_kernel(&a, KIR_DIV, SMELT_I64, SMELT_I64, 4), b64), SMELT_OK);
    CHECK_EQ_INT(o[0], -3);
    CHECK_EQ_INT(o[1], -3);
    CHECK(o[2] == INT64_MIN);
    CHECK_EQ_INT(o[3], 0);
    CHECK_EQ_INT(kir_interpret(binop_kernel(&a, KIR_MOD, SMELT_I64, SMELT_I64, 4), b64), SMELT_OK);
    CHECK_EQ_INT(o[0], -1);
    CHECK_EQ_INT(o[1], 1);
    CHECK_EQ_INT(o[2], 0);
    CHECK_EQ_INT(o[3], 0);
    int64_t px[4] = {3, 2, -2, 2}, py[4] = {4, 63, 3, -1};
    void *bp[] = {px, py, o};
    CHECK_EQ_INT(kir_interpret(binop_kernel(&a, KIR_POW, SMELT_I64, SMELT_I64, 4), bp), SMELT_OK);
    CHECK_EQ_INT(o[0], 81);
    CHECK(o[1] == INT64_MIN); /* 2^63 wraps */
    CHECK_EQ_INT(o[2], -8);
    CHECK_EQ_INT(o[3], 0);
    /* uint64 compares unsigned */
    uint64_t ux[2] = {UINT64_MAX, 1}, uy[2] = {1, 2};
    uint8_t ob[2];
    void *bu[] = {ux, uy, ob};
    CHECK_EQ_INT(kir_interpret(binop_kernel(&a, KIR_GT, SMELT_U64, SMELT_BOOL, 2), bu), SMELT_OK);
    CHECK_EQ_INT(ob[0], 1);
    CHECK_EQ_INT(ob[1], 0);
    /* shifts past the width give 0 */
    uint8_t sx[3] = {1, 0x80, 0xff}, sy[3] = {7, 1, 8}, so[3];
    void *bs[] = {sx, sy, so};
    CHECK_EQ_INT(kir_interpret(binop_kernel(&a, KIR_SHL, SMELT_U8, SMELT_U8, 3), bs), SMELT_OK);
    CHECK_EQ_INT(so[0], 0x80);
    CHECK_EQ_INT(so[1], 0);
    CHECK_EQ_INT(so[2], 0);
    arena_free(&a);
}

TEST(interp_float_semantics)
{
    arena a;
    arena_init(&a);
    float x[6] = {NAN, 1, 2, -0.5f, 3, 1}, y[6] = {1, NAN, 3, 0.5f, 3, INFINITY}, o[6];
    void *b[] = {x, y, o};
    CHECK_EQ_INT(kir_interpret(binop_kernel(&a, KIR_MIN, SMELT_F32, SMELT_F32, 6), b), SMELT_OK);
    CHECK(isnan(o[0]) && isnan(o[1])); /* NaN propagates like numpy */
    CHECK(o[2] == 2 && o[3] == -0.5f && o[4] == 3 && o[5] == 1);
    CHECK_EQ_INT(kir_interpret(binop_kernel(&a, KIR_MAX, SMELT_F32, SMELT_F32, 6), b), SMELT_OK);
    CHECK(isnan(o[0]) && isnan(o[1]));
    CHECK(o[2] == 3 && o[5] == INFINITY);

    float r[8] = {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 2.4f, 2.6f}, ro[8];
    void *br[] = {r, ro};
    CHECK_EQ_INT(kir_interpret(unop_kernel(&a, KIR_ROUND, SMELT_F32, SMELT_F32, 8), br), SMELT_OK);
    float want[8] = {0, 2, 2, -0.0f, -2, -2, 2, 3}; /* half to even */
    for (int t = 0; t < 8; t++) CHECK(ro[t] == want[t]);

    float c[5] = {NAN, 1e30f, -1e30f, -3.7f, 3.7f};
    int32_t ci[5];
    void *bc[] = {c, ci};
    CHECK_EQ_INT(kir_interpret(unop_kernel(&a, KIR_CAST, SMELT_F32, SMELT_I32, 5), bc), SMELT_OK);
    CHECK_EQ_INT(ci[0], 0); /* NaN → 0, no trap */
    CHECK_EQ_INT(ci[3], -3);
    CHECK_EQ_INT(ci[4], 3);
    int64_t cl[5];
    void *bl[] = {c, cl};
    CHECK_EQ_INT(kir_interpret(unop_kernel(&a, KIR_CAST, SMELT_F32, SMELT_I64, 5), bl), SMELT_OK);
    CHECK(cl[0] == 0 && cl[1] == INT64_MAX && cl[2] == INT64_MIN); /* saturates */
    uint8_t cb[5];
    void *bb[] = {c, cb};
    CHECK_EQ_INT(kir_interpret(unop_kernel(&a, KIR_CAST, SMELT_F32, SMELT_BOOL, 5), bb), SMELT_OK);
    for (int t = 0; t < 5; t++) CHECK_EQ_INT(cb[t], 1);
    arena_free(&a);
}

/* A value defined before a loop and a var set in both branches of an if. */
TEST(interp_var_in_branches)
{
    arena a;
    arena_init(&a);
    kir_kernel *k = kir_kernel_new(&a, 0, 1, "branchy");
    int in = kir_buffer_add(k, SMELT_F32, 6, 0, true, false);
    int out = kir_buffer_add(k, SMELT_F32, 6, 1, false, true);
    kir_val first = kir_load(k, in, kir_idx(k, 0));
    kir_val i = kir_loop_begin(k, kir_idx(k, 0), kir_idx(k, 6), kir_idx(k, 1));
    kir_val x = kir_load(k, in, i);
    kir_if_begin(k, kir_binary(k, KIR_LT, i, kir_idx(k, 3)));
    int v = kir_var_new(k, SMELT_F32, kir_binary(k, KIR_MUL, x, first));
    kir_else(k);
    kir_var_set(k, v, kir_unary(k, KIR_NEG, x));
    kir_if_end(k);
    kir_store(k, out, i, kir_var_get(k, v));
    kir_loop_end(k);
    float xin[6] = {2, 3, 4, 5, 6, 7}, xout[6];
    void *bufs[] = {xin, xout};
    CHECK_EQ_INT(kir_interpret(k, bufs), SMELT_OK);
    float want[6] = {4, 6, 8, -5, -6, -7};
    for (int t = 0; t < 6; t++) CHECK(xout[t] == want[t]);
    arena_free(&a);
}

TEST(interp_loop_with_step_and_empty_range)
{
    arena a;
    arena_init(&a);
    kir_kernel *k = kir_kernel_new(&a, 0, 1, "strided");
    int out = kir_buffer_add(k, SMELT_I64, 10, 0, false, true);
    kir_val i = kir_loop_begin(k, kir_idx(k, 1), kir_idx(k, 10), kir_idx(k, 3));
    kir_store(k, out, i, kir_mul(k, i, i));
    kir_loop_end(k);
    kir_val j = kir_loop_begin(k, kir_idx(k, 5), kir_idx(k, 5), kir_idx(k, 1));
    kir_store(k, out, j, kir_idx(k, -1)); /* never runs */
    kir_loop_end(k);
    int64_t o[10] = {0};
    void *bufs[] = {o};
    CHECK_EQ_INT(kir_interpret(k, bufs), SMELT_OK);
    int64_t want[10] = {0, 1, 0, 0, 16, 0, 0, 49, 0, 0};
    for (int t = 0; t < 10; t++) CHECK_EQ_INT(o[t], want[t]);
    arena_free(&a);
}

/* Constant folding of weights runs the interpreter over millions of elements. */
TEST(interp_is_quick_enough)
{
    enum { N = 1 << 21 };
    arena a;
    arena_init(&a);
    kir_kernel *k = kir_kernel_new(&a, 0, N / 1024, "scale and shift");
    int in = kir_buffer_add(k, SMELT_F32, N, 0, true, false);
    int out = kir_buffer_add(k, SMELT_F32, N, 1, false, true);
    kir_val j = kir_loop_begin(k, kir_idx(k, 0), kir_idx(k, 1024), kir_idx(k, 1));
    kir_val i = kir_add(k, kir_mul(k, kir_wg(k), kir_idx(k, 1024)), j);
    kir_val x = kir_load(k, in, i);
    kir_val y = kir_binary(k, KIR_MUL, x, kir_const_f(k, SMELT_F32, 0.5));
    kir_store(k, out, i, kir_binary(k, KIR_SUB, y, kir_const_f(k, SMELT_F32, 1)));
    kir_loop_end(k);
    float *xin = malloc(N * sizeof(float)), *xout = malloc(N * sizeof(float));
    CHECK(xin && xout);
    for (int t = 0; t < N; t++) xin[t] = (float)t;
    void *bufs[] = {xin, xout};
    clock_t c0 = clock();
    CHECK_EQ_INT(kir_interpret(k, bufs), SMELT_OK);
    double secs = (double)(clock() - c0) / CLOCKS_PER_SEC;
    CHECK(xout[N - 1] == (float)(N - 1) * 0.5f - 1.0f);
    CHECK(secs < 5.0); /* ~10 statements per element; generous even under sanitizers */
    free(xin);
    free(xout);
    arena_free(&a);
}

/* Every Kernel IR op has a row in kir.c's property table: a name and an arity
 * of 0..3 (an op inserted into kir_op without its row reads as NULL / 0). */
TEST(kir_op_table_complete)
{
    for (int op = 0; op < KIR_OP_COUNT; op++) {
        const char *name = kir_op_name((kir_op)op);
        CHECK(name && name[0] && strcmp(name, "?") != 0);
        CHECK(kir_op_arity((kir_op)op) >= 0 && kir_op_arity((kir_op)op) <= 3);
    }
    CHECK(strcmp(kir_op_name(KIR_OP_COUNT), "?") == 0);
}
