/* The Kernel IR cleanup passes (kir/clean.c) on hand-built kernels: what
 * each removes or merges, and that the interpreter computes the same before
 * and after. */
#include <stdlib.h>
#include <string.h>

#include "kir/clean.h"
#include "test.h"

static int count_defs(const kir_kernel *k, kir_op op)
{
    int n = 0;
    for (int i = 0; i < k->n_stmts; i++)
        if (k->stmts[i].kind == KS_DEF && k->vals[k->stmts[i].val].op == op) n++;
    return n;
}

static int count_kind(const kir_kernel *k, kir_stmt_kind kind)
{
    int n = 0;
    for (int i = 0; i < k->n_stmts; i++) n += k->stmts[i].kind == kind;
    return n;
}

/* Every value a statement defines is used by a later statement. */
static bool no_dead_values(const kir_kernel *k)
{
    for (int i = 0; i < k->n_stmts; i++) {
        if (k->stmts[i].kind != KS_DEF) continue;
        kir_val v = k->stmts[i].val;
        bool used = false;
        for (int j = i + 1; j < k->n_stmts && !used; j++) {
            const kir_stmt *s = &k->stmts[j];
            const kir_value *x = &k->vals[s->val];
            used = s->idx == v || s->lo == v || s->hi == v || s->step == v || s->cond == v ||
                   (s->kind != KS_DEF && s->kind != KS_LOOP_BEGIN && s->val == v) ||
                   (s->kind == KS_DEF && (x->a == v || (kir_op_arity(x->op) > 1 && x->b == v) ||
                                          (kir_op_arity(x->op) > 2 && x->c == v)));
        }
        if (!used) return false;
    }
    return true;
}

/* out[wg*5 + j] = in[...] * 2, with an unused load, unused index arithmetic,
 * a variable set and never read, and a loop whose body is all dead. */
TEST(clean_dead_values)
{
    arena a;
    arena_init(&a);
    kir_kernel *k = kir_kernel_new(&a, 1, 4, "dead");
    int in = kir_buffer_add(k, SMELT_F32, 20, 0, true, false);
    int out = kir_buffer_add(k, SMELT_F32, 20, 1, false, true);
    int unread = kir_var_new(k, SMELT_F32, kir_const_f(k, SMELT_F32, 0));
    kir_val base = kir_mul(k, kir_wg(k), kir_idx(k, 5));
    kir_val j = kir_loop_begin(k, kir_idx(k, 0), kir_idx(k, 5), kir_idx(k, 1));
    kir_val i = kir_add(k, base, j);
    kir_val x = kir_load(k, in, i);
    kir_val dead = kir_load(k, in, kir_mul(k, j, kir_idx(k, 3)));
    kir_var_set(k, unread, kir_binary(k, KIR_ADD, kir_var_get(k, unread), dead));
    kir_store(k, out, i, kir_binary(k, KIR_MUL, x, kir_const_f(k, SMELT_F32, 2)));
    kir_loop_end(k);
    kir_val q = kir_loop_begin(k, kir_idx(k, 0), kir_idx(k, 3), kir_idx(k, 1));
    (void)kir_load(k, in, q);
    kir_loop_end(k);
    CHECK_EQ_INT(kir_verify(k), SMELT_OK);
    CHECK(!no_dead_values(k));
    float xin[20], before[20], after[20];
    for (int t = 0; t < 20; t++) xin[t] = (float)t - 7.5f;
    void *b0[] = {xin, before}, *b1[] = {xin, after};
    CHECK_EQ_INT(kir_interpret(k, b0), SMELT_OK);
    CHECK_EQ_INT(kir_clean(k), SMELT_OK);
    CHECK(no_dead_values(k));
    CHECK_EQ_INT(count_defs(k, KIR_LOAD), 1);
    CHECK_EQ_INT(count_defs(k, KIR_VARGET), 0);
    CHECK_EQ_INT(count_kind(k, KS_VAR_SET), 0);
    CHECK_EQ_INT(count_kind(k, KS_LOOP_BEGIN), 1); /* the all-dead loop is gone */
    CHECK_EQ_INT(kir_interpret(k, b1), SMELT_OK);
    CHECK(!memcmp(before, after, sizeof before));
    arena_free(&a);
}

/* An accumulator read in a loop before its set stays: its set is live. */
TEST(clean_keeps_loop_carried_variable)
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
    int n = k->n_stmts;
    CHECK_EQ_INT(kir_clean(k), SMELT_OK);
    CHECK_EQ_INT(k->n_stmts, n);
    float xin[20], xout[4];
    for (int t = 0; t < 20; t++) xin[t] = (float)t;
    void *bufs[] = {xin, xout};
    CHECK_EQ_INT(kir_interpret(k, bufs), SMELT_OK);
    for (int r = 0; r < 4; r++) CHECK_EQ_INT(xout[r], 25 * r + 10);
    arena_free(&a);
}

/* Two loads of in[i] and the index built twice merge; a load of out[i]
 * after a store to it does not merge with the one before; a load before a
 * loop does not merge with one in the loop when the loop stores there. */
TEST(clean_common_subexpressions)
{
    arena a;
    arena_init(&a);
    kir_kernel *k = kir_kernel_new(&a, 3, 2, "cse");
    int in = kir_buffer_add(k, SMELT_F32, 8, 0, true, false);
    int out = kir_buffer_add(k, SMELT_F32, 8, 1, true, true);
    kir_val j = kir_loop_begin(k, kir_idx(k, 0), kir_idx(k, 4), kir_idx(k, 1));
    kir_val i1 = kir_add(k, kir_mul(k, kir_wg(k), kir_idx(k, 4)), j);
    kir_val i2 = kir_add(k, kir_mul(k, kir_wg(k), kir_idx(k, 4)), j);
    kir_val x1 = kir_load(k, in, i1), x2 = kir_load(k, in, i2);
    kir_store(k, out, i1, kir_binary(k, KIR_ADD, x1, x2));
    kir_val y1 = kir_load(k, out, i1);
    kir_store(k, out, i2, kir_binary(k, KIR_MUL, y1, y1));
    kir_val y2 = kir_load(k, out, i2);
    kir_val r = kir_loop_begin(k, kir_idx(k, 0), kir_idx(k, 3), kir_idx(k, 1));
    (void)r;
    kir_val y3 = kir_load(k, out, i1);
    kir_store(k, out, i1, kir_binary(k, KIR_ADD, y3, y2));
    kir_loop_end(k);
    kir_loop_end(k);
    CHECK_EQ_INT(kir_verify(k), SMELT_OK);
    float xin[8], before[8], after[8];
    for (int t = 0; t < 8; t++) xin[t] = (float)t * 0.5f - 1.0f;
    memset(before, 0, sizeof before);
    memset(after, 0, sizeof after);
    void *b0[] = {xin, before}, *b1[] = {xin, after};
    CHECK_EQ_INT(kir_interpret(k, b0), SMELT_OK);
    CHECK_EQ_INT(count_defs(k, KIR_MUL), 3);
    CHECK_EQ_INT(kir_clean(k), SMELT_OK);
    CHECK_EQ_INT(count_defs(k, KIR_LOAD), 4); /* in once, out after each store and in the loop */
    CHECK_EQ_INT(count_defs(k, KIR_MUL), 2);  /* wg*4 once, y1*y1 */
    CHECK_EQ_INT(count_defs(k, KIR_ADD), 3);  /* the index once, x1+x2, y3+y2 */
    CHECK_EQ_INT(kir_interpret(k, b1), SMELT_OK);
    CHECK(!memcmp(before, after, sizeof before));
    arena_free(&a);
}

/* A value defined inside an if is not reused after the if closes. */
TEST(clean_cse_respects_scope)
{
    arena a;
    arena_init(&a);
    kir_kernel *k = kir_kernel_new(&a, 4, 3, "scope");
    int in = kir_buffer_add(k, SMELT_F32, 3, 0, true, false);
    int out = kir_buffer_add(k, SMELT_F32, 6, 1, false, true);
    kir_val w = kir_wg(k);
    kir_if_begin(k, kir_binary(k, KIR_GT, w, kir_idx(k, 0)));
    kir_store(k, out, w, kir_load(k, in, w));
    kir_if_end(k);
    kir_store(k, out, kir_add(k, w, kir_idx(k, 3)), kir_load(k, in, w));
    CHECK_EQ_INT(kir_clean(k), SMELT_OK);
    CHECK_EQ_INT(kir_verify(k), SMELT_OK);
    CHECK_EQ_INT(count_defs(k, KIR_LOAD), 2);
    float xin[3] = {1, 2, 3}, xout[6] = {0};
    void *bufs[] = {xin, xout};
    CHECK_EQ_INT(kir_interpret(k, bufs), SMELT_OK);
    CHECK(xout[0] == 0 && xout[1] == 2 && xout[2] == 3 && xout[3] == 1 && xout[4] == 2 && xout[5] == 3);
    arena_free(&a);
}

/* A loop of one iteration becomes its body with the loop value a constant,
 * and the index arithmetic on it folds; a parallel one spread over threads
 * stays (only one thread runs it). */
TEST(clean_one_trip_loops)
{
    arena a;
    arena_init(&a);
    kir_kernel *k = kir_kernel_new(&a, 5, 2, "one trip");
    int in = kir_buffer_add(k, SMELT_F32, 8, 0, true, false);
    int out = kir_buffer_add(k, SMELT_F32, 8, 1, false, true);
    kir_val r = kir_loop_begin(k, kir_idx(k, 2), kir_idx(k, 3), kir_idx(k, 4));
    kir_val j = kir_loop_begin(k, kir_idx(k, 0), kir_idx(k, 2), kir_idx(k, 1));
    kir_val i = kir_add(k, kir_add(k, kir_mul(k, r, kir_idx(k, 2)), kir_mul(k, kir_wg(k), kir_idx(k, 2))), j);
    kir_store(k, out, i, kir_load(k, in, kir_binary(k, KIR_SUB, i, kir_idx(k, 4))));
    kir_loop_end(k);
    kir_loop_end(k);
    float xin[8], before[8] = {0}, after[8] = {0};
    for (int t = 0; t < 8; t++) xin[t] = (float)t + 0.25f;
    void *b0[] = {xin, before}, *b1[] = {xin, after};
    CHECK_EQ_INT(kir_interpret(k, b0), SMELT_OK);
    CHECK_EQ_INT(kir_clean(k), SMELT_OK);
    CHECK_EQ_INT(count_kind(k, KS_LOOP_BEGIN), 1);
    CHECK_EQ_INT(count_defs(k, KIR_MUL), 1); /* r * 2 folded to 4 */
    CHECK_EQ_INT(kir_interpret(k, b1), SMELT_OK);
    CHECK(!memcmp(before, after, sizeof before));

    kir_kernel *g = kir_kernel_new(&a, 6, 1, "threads");
    int o = kir_buffer_add(g, SMELT_F32, 1, 0, false, true);
    g->wg_size = 4;
    kir_val p = kir_loop_begin_parallel(g, kir_idx(g, 0), kir_idx(g, 1));
    kir_store(g, o, p, kir_const_f(g, SMELT_F32, 1));
    kir_loop_end(g);
    CHECK_EQ_INT(kir_clean(g), SMELT_OK);
    CHECK_EQ_INT(count_kind(g, KS_LOOP_BEGIN), 1);
    arena_free(&a);
}

/* Blocks open at the statement defining v (0: the kernel's top level). */
static int def_depth(const kir_kernel *k, kir_val v)
{
    int d = 0;
    for (int i = 0; i < k->vals[v].def; i++) {
        kir_stmt_kind kd = k->stmts[i].kind;
        d += (kd == KS_LOOP_BEGIN || kd == KS_IF_BEGIN) - (kd == KS_LOOP_END || kd == KS_IF_END);
    }
    return d;
}

/* out[wg*12 + r*4 + j] = in[...] * scale[r] + bias[wg]: r*4 and scale[r] do
 * not depend on j, wg*12 and bias[wg] on neither loop. */
TEST(clean_licm_hoists_invariants)
{
    arena a;
    arena_init(&a);
    kir_kernel *k = kir_kernel_new(&a, 7, 2, "licm");
    int in = kir_buffer_add(k, SMELT_F32, 24, 0, true, false);
    int scale = kir_buffer_add(k, SMELT_F32, 3, 1, true, false);
    int bias = kir_buffer_add(k, SMELT_F32, 2, 2, true, false);
    int out = kir_buffer_add(k, SMELT_F32, 24, 3, false, true);
    kir_val r = kir_loop_begin(k, kir_idx(k, 0), kir_idx(k, 3), kir_idx(k, 1));
    kir_val j = kir_loop_begin(k, kir_idx(k, 0), kir_idx(k, 4), kir_idx(k, 1));
    kir_val base = kir_mul(k, kir_wg(k), kir_idx(k, 12));
    kir_val row = kir_mul(k, r, kir_idx(k, 4));
    kir_val i = kir_add(k, kir_add(k, base, row), j);
    kir_val s = kir_load(k, scale, r);
    kir_val b = kir_load(k, bias, kir_wg(k));
    kir_val y = kir_binary(k, KIR_ADD, kir_binary(k, KIR_MUL, kir_load(k, in, i), s), b);
    kir_store(k, out, i, y);
    kir_loop_end(k);
    kir_loop_end(k);
    CHECK_EQ_INT(def_depth(k, row), 2);
    float xin[24], xs[3] = {0.5f, -2, 3}, xb[2] = {1, -1}, before[24], after[24];
    for (int t = 0; t < 24; t++) xin[t] = (float)t * 0.75f - 4;
    void *b0[] = {xin, xs, xb, before}, *b1[] = {xin, xs, xb, after};
    CHECK_EQ_INT(kir_interpret(k, b0), SMELT_OK);
    CHECK_EQ_INT(kir_clean(k), SMELT_OK);
    CHECK_EQ_INT(def_depth(k, base), 0);
    CHECK_EQ_INT(def_depth(k, b), 0);
    CHECK_EQ_INT(def_depth(k, row), 1);
    CHECK_EQ_INT(def_depth(k, s), 1);
    CHECK_EQ_INT(def_depth(k, i), 2);
    CHECK_EQ_INT(kir_interpret(k, b1), SMELT_OK);
    CHECK(!memcmp(before, after, sizeof before));
    arena_free(&a);
}

/* What must stay in its loop: a load of a buffer the loop stores to, a load
 * in a loop that may run no iteration, an integer division by a value that
 * may be 0 there, and anything inside an if. Index arithmetic still moves. */
TEST(clean_licm_keeps_unsafe_work)
{
    arena a;
    arena_init(&a);
    kir_kernel *k = kir_kernel_new(&a, 8, 1, "licm unsafe");
    int acc = kir_buffer_add(k, SMELT_F32, 2, 0, true, true);
    int in = kir_buffer_add(k, SMELT_F32, 8, 1, true, false);
    int n = kir_buffer_add(k, SMELT_I64, 2, 2, true, false);
    int out = kir_buffer_add(k, SMELT_I64, 1, 3, false, true);
    kir_val j = kir_loop_begin(k, kir_idx(k, 0), kir_idx(k, 4), kir_idx(k, 1));
    kir_val sum = kir_load(k, acc, kir_idx(k, 1)); /* read-modify-write of acc[1] */
    kir_store(k, acc, kir_idx(k, 1), kir_binary(k, KIR_ADD, sum, kir_load(k, in, j)));
    kir_if_begin(k, kir_binary(k, KIR_LT, j, kir_idx(k, 2)));
    kir_val inside = kir_load(k, in, kir_idx(k, 7));
    kir_store(k, acc, kir_idx(k, 0), inside);
    kir_if_end(k);
    kir_loop_end(k);
    kir_val cnt = kir_load(k, n, kir_idx(k, 0));
    kir_val den = kir_load(k, n, kir_idx(k, 1));
    kir_val q = kir_loop_begin(k, kir_idx(k, 0), cnt, kir_idx(k, 1)); /* may run 0 times */
    kir_val far = kir_load(k, in, kir_mul(k, den, kir_idx(k, 2)));
    kir_val quot = kir_binary(k, KIR_DIV, cnt, den);
    kir_val twice = kir_mul(k, den, kir_idx(k, 3));
    kir_store(k, out, kir_idx(k, 0), kir_binary(k, KIR_ADD, kir_binary(k, KIR_ADD, quot, twice),
                                                  kir_binary(k, KIR_ADD, q, kir_cast(k, SMELT_I64, far))));
    kir_loop_end(k);
    CHECK_EQ_INT(kir_verify(k), SMELT_OK);
    float xacc[2] = {0, 0.5f}, xin[8] = {1, 2, 3, 4, 5, 6, 7, 8}, yacc[2] = {0, 0.5f};
    int64_t xn[2] = {3, 1}, before = 0, after = 0;
    void *b0[] = {xacc, xin, xn, &before}, *b1[] = {yacc, xin, xn, &after};
    CHECK_EQ_INT(kir_interpret(k, b0), SMELT_OK);
    CHECK_EQ_INT(kir_clean(k), SMELT_OK);
    CHECK_EQ_INT(def_depth(k, sum), 1);
    CHECK_EQ_INT(def_depth(k, inside), 2);
    CHECK_EQ_INT(def_depth(k, far), 1);
    CHECK_EQ_INT(def_depth(k, quot), 1);
    CHECK_EQ_INT(def_depth(k, twice), 0); /* pure arithmetic: moves even out of a loop that may not run */
    CHECK_EQ_INT(kir_interpret(k, b1), SMELT_OK);
    CHECK(!memcmp(xacc, yacc, sizeof xacc));
    CHECK_EQ_INT(before, after);
    arena_free(&a);
}

/* Index arithmetic through a reshape folds back (kir_binary): a linear index
 * split by / and % and put together again is affine again (the linear index
 * itself, or its terms); % and / by n
 * of a value known to lie in [0, n) are the value and 0; a multiple of n
 * drops out of % n and out of / n beside a term in [0, n). A value that may
 * be negative, or may reach n, keeps its % and /. */
TEST(index_div_mod_fold_by_ranges)
{
    arena a;
    arena_init(&a);
    kir_kernel *k = kir_kernel_new(&a, 4, 2, "index folds");
    kir_val r = kir_loop_begin(k, kir_idx(k, 0), kir_idx(k, 7), kir_idx(k, 1));
    kir_val j = kir_loop_begin(k, kir_idx(k, 0), kir_idx(k, 32), kir_idx(k, 8)); /* 0, 8, 16, 24 */
    kir_val q = kir_loop_begin_parallel(k, kir_idx(k, 0), kir_idx(k, 8));
    kir_val c = kir_add(k, j, q); /* 0..31 */
    kir_val lin = kir_add(k, kir_mul(k, r, kir_idx(k, 32)), c);
    kir_val sixteen = kir_idx(k, 16), n32 = kir_idx(k, 32);
    kir_val back = kir_add(k, kir_mul(k, kir_binary(k, KIR_DIV, lin, sixteen), sixteen), kir_binary(k, KIR_MOD, lin, sixteen));
    CHECK_EQ_INT(kir_stride(k, back, q), 1);
    CHECK_EQ_INT(kir_stride(k, back, r), 32);
    CHECK_EQ_INT(kir_stride(k, back, j), 1);
    CHECK(kir_binary(k, KIR_MOD, lin, n32) == c);
    CHECK(kir_binary(k, KIR_DIV, lin, n32) == r);
    CHECK(kir_binary(k, KIR_DIV, c, n32) == kir_idx(k, 0));
    /* (r * 32 + c) / 16 is r * 2 + c / 16 */
    kir_val half = kir_binary(k, KIR_DIV, lin, sixteen);
    CHECK(k->vals[half].op == KIR_ADD && kir_stride(k, half, r) == 2);
    /* a clamp of c - 8 to [0, 10] (a concat's or a pad's index) is under 16 */
    kir_val cl = kir_binary(k, KIR_MAX, kir_binary(k, KIR_MIN, kir_binary(k, KIR_SUB, c, kir_idx(k, 8)), kir_idx(k, 10)), kir_idx(k, 0));
    CHECK(kir_binary(k, KIR_MOD, cl, sixteen) == cl);
    CHECK(k->vals[kir_binary(k, KIR_MOD, kir_binary(k, KIR_SUB, c, kir_idx(k, 8)), sixteen)].op == KIR_MOD);
    /* the workgroup index spans [0, 2): wg * 32 + c stays below 64 */
    kir_val w = kir_add(k, kir_mul(k, kir_wg(k), n32), c);
    CHECK(kir_binary(k, KIR_MOD, w, kir_idx(k, 64)) == w);
    CHECK(kir_binary(k, KIR_MOD, w, n32) == c);
    CHECK(kir_binary(k, KIR_DIV, w, n32) == kir_wg(k));
    /* c + 5 reaches 36: (c + 5) / 32 is not 0 */
    CHECK(k->vals[kir_binary(k, KIR_DIV, kir_add(k, c, kir_idx(k, 5)), n32)].op == KIR_DIV);
    /* a loop in steps of 16 from 0 is a multiple of 16 (the element loop in blocks, lower.c) */
    kir_val blk = kir_loop_begin(k, kir_idx(k, 0), kir_idx(k, 64), sixteen);
    kir_val q16 = kir_loop_begin_parallel(k, kir_idx(k, 0), sixteen);
    CHECK(kir_binary(k, KIR_MOD, kir_add(k, blk, q16), sixteen) == q16);
    CHECK(k->vals[kir_binary(k, KIR_MOD, kir_add(k, blk, q16), n32)].op == KIR_MOD);
    kir_loop_end(k);
    kir_loop_end(k);
    kir_val s = kir_loop_begin(k, kir_idx(k, -4), kir_idx(k, 4), kir_idx(k, 1));
    CHECK(k->vals[kir_binary(k, KIR_MOD, s, kir_idx(k, 4))].op == KIR_MOD);
    CHECK(k->vals[kir_binary(k, KIR_MOD, kir_add(k, s, kir_idx(k, 8)), kir_idx(k, 4))].op == KIR_MOD);
    CHECK(k->vals[kir_binary(k, KIR_MOD, kir_add(k, kir_mul(k, s, kir_idx(k, 8)), c), kir_idx(k, 4))].op == KIR_MOD);
    kir_loop_end(k);
    kir_loop_end(k);
    kir_loop_end(k);
    kir_loop_end(k);
    arena_free(&a);
}

/* A linear index unravelled over three or more dims ([192, 16, 40]: i % 40,
 * i / 40 % 16, i / 640) and put together again is the index itself:
 * (i / 40) / 16 is i / 640 and (i / 40 % 16) * 40 + i % 40 is i % 640, for
 * every i (the folds do not ask for i >= 0), so a flat run of a whole tensor
 * (reduce.c's split form) reads with stride 1. Divisors that do not match
 * keep their / and %. */
TEST(index_div_mod_fold_of_nested_divisions)
{
    arena a;
    arena_init(&a);
    kir_kernel *k = kir_kernel_new(&a, 6, 1, "nested folds");
    kir_val i = kir_loop_begin(k, kir_idx(k, -1300), kir_idx(k, 1301), kir_idx(k, 1));
    kir_val d40 = kir_binary(k, KIR_DIV, i, kir_idx(k, 40));
    kir_val d640 = kir_binary(k, KIR_DIV, d40, kir_idx(k, 16));
    CHECK(k->vals[d640].op == KIR_DIV && k->vals[d640].a == i && kir_is_const(k, k->vals[d640].b) &&
          k->vals[k->vals[d640].b].imm.i == 640);
    kir_val inner = kir_add(k, kir_mul(k, kir_binary(k, KIR_MOD, d40, kir_idx(k, 16)), kir_idx(k, 40)),
                            kir_binary(k, KIR_MOD, i, kir_idx(k, 40)));
    CHECK(k->vals[inner].op == KIR_MOD && k->vals[inner].a == i && k->vals[k->vals[inner].b].imm.i == 640);
    kir_val back = kir_add(k, kir_mul(k, d640, kir_idx(k, 640)), inner);
    CHECK(back == i);
    CHECK_EQ_INT(kir_stride(k, back, i), 1);
    /* the operands in the other order */
    kir_val swapped = kir_add(k, kir_binary(k, KIR_MOD, i, kir_idx(k, 40)),
                              kir_mul(k, kir_idx(k, 40), kir_binary(k, KIR_MOD, d40, kir_idx(k, 16))));
    CHECK(k->vals[swapped].op == KIR_MOD && k->vals[swapped].a == i);
    /* (i / 40 % 16) * 8 + i % 40 is not a remainder of i */
    kir_val other = kir_add(k, kir_mul(k, kir_binary(k, KIR_MOD, d40, kir_idx(k, 16)), kir_idx(k, 8)),
                            kir_binary(k, KIR_MOD, i, kir_idx(k, 40)));
    CHECK(k->vals[other].op == KIR_ADD);
    kir_loop_end(k);
    arena_free(&a);
}

/* The per-head pack of K for Q K^T (attention over a fused QKV projection's
 * output, 12 heads of 64): element i0 of the workgroup's 1024 is column
 * head*64 + i0 % 64 of row min(blk*16 + t, 127) of the [128, 768] K slice, and
 * the split's index map reads it back as (row*768 + col) % 768 and / 768. The
 * column's range comes through the element loop's bounds (wg*1024 to
 * min(wg*1024 + 1024, 6144)) and three divisions, deeper than a walk of 8: the
 * % and / fold to the column and the row. */
TEST(index_div_mod_fold_through_a_deep_range)
{
    arena a;
    arena_init(&a);
    kir_kernel *k = kir_kernel_new(&a, 5, 6, "kt pack");
    kir_val lo = kir_mul(k, kir_wg(k), kir_idx(k, 1024));
    kir_val i0 = kir_loop_begin(k, lo, kir_binary(k, KIR_MIN, kir_add(k, lo, kir_idx(k, 1024)), kir_idx(k, 6144)), kir_idx(k, 1));
    kir_val d = kir_binary(k, KIR_MOD, i0, kir_idx(k, 64)), rest = kir_binary(k, KIR_DIV, i0, kir_idx(k, 64));
    kir_val blk = kir_binary(k, KIR_MOD, rest, kir_idx(k, 8)), head = kir_binary(k, KIR_DIV, rest, kir_idx(k, 8));
    kir_val col = kir_add(k, kir_mul(k, head, kir_idx(k, 64)), d);
    kir_val t = kir_loop_begin(k, kir_idx(k, 0), kir_idx(k, 16), kir_idx(k, 1));
    kir_val row = kir_binary(k, KIR_MIN, kir_add(k, kir_mul(k, blk, kir_idx(k, 16)), t), kir_idx(k, 127));
    kir_val lin = kir_add(k, kir_mul(k, row, kir_idx(k, 768)), col);
    CHECK(kir_binary(k, KIR_MOD, lin, kir_idx(k, 768)) == col);
    CHECK(kir_binary(k, KIR_DIV, lin, kir_idx(k, 768)) == row);
    kir_loop_end(k);
    kir_loop_end(k);
    arena_free(&a);
}
