/* Local-variable allocation (kir/locals.c) on hand-built kernels. */
#include "kir/locals.h"
#include "test.h"

/* for i in [0, 16): out[i] = sqrt(-exp(in[i]) * -exp(in[i])): five values in a chain */
static kir_kernel *chain_kernel(arena *a, kir_val *vals)
{
    kir_kernel *k = kir_kernel_new(a, 0, 1, "chain");
    int in = kir_buffer_add(k, SMELT_F32, 16, 0, true, false);
    int out = kir_buffer_add(k, SMELT_F32, 16, 1, false, true);
    kir_val i = kir_loop_begin(k, kir_idx(k, 0), kir_idx(k, 16), kir_idx(k, 1));
    vals[0] = kir_load(k, in, i);
    vals[1] = kir_unary(k, KIR_EXP, vals[0]);
    vals[2] = kir_unary(k, KIR_NEG, vals[1]);
    vals[3] = kir_binary(k, KIR_MUL, vals[2], vals[2]);
    vals[4] = kir_unary(k, KIR_SQRT, vals[3]);
    kir_store(k, out, i, vals[4]);
    kir_loop_end(k);
    return k;
}

TEST(locals_chain_reuse_vs_hybrid)
{
    arena a;
    arena_init(&a);
    kir_val v[5];
    kir_kernel *k = chain_kernel(&a, v);
    CHECK_EQ_INT(kir_verify(k), SMELT_OK);
    kir_locals r, h;
    CHECK_EQ_INT(kir_locals_assign(k, LOCALS_REUSE, &a, &r), SMELT_OK);
    CHECK_EQ_INT(kir_locals_assign(k, LOCALS_HYBRID, &a, &h), SMELT_OK);
    CHECK_EQ_INT(kir_locals_declared(&r), 1);
    CHECK_EQ_INT(kir_locals_declared(&h), 5);
    for (int j = 0; j < 5; j++) {
        CHECK(!r.val_const[v[j]]);
        CHECK(h.val_const[v[j]]);
        CHECK(r.slot_at_top[r.val_slot[v[j]]]);
        CHECK(!h.slot_at_top[h.val_slot[v[j]]]);
        CHECK_EQ_INT(h.slot_type[h.val_slot[v[j]]], SMELT_F32);
    }
    /* constants, the loop index: inline */
    for (int x = 1; x < k->n_vals; x++)
        if (k->vals[x].op == KIR_CONST || k->vals[x].op == KIR_LOOPVAR) {
            CHECK_EQ_INT(r.val_slot[x], -1);
            CHECK_EQ_INT(h.val_slot[x], -1);
        }
    arena_free(&a);
}

/* sum(in) into out[0], then max(in) into out[1]: two accumulators, disjoint. */
TEST(locals_disjoint_accumulators_share)
{
    arena a;
    arena_init(&a);
    kir_kernel *k = kir_kernel_new(&a, 0, 1, "two reductions");
    int in = kir_buffer_add(k, SMELT_F32, 7, 0, true, false);
    int out = kir_buffer_add(k, SMELT_F32, 2, 1, false, true);
    kir_val vals[8];
    int acc[2];
    for (int r = 0; r < 2; r++) {
        acc[r] = kir_var_new(k, SMELT_F32, kir_const_f(k, SMELT_F32, r ? -INFINITY : 0.0));
        kir_val i = kir_loop_begin(k, kir_idx(k, 0), kir_idx(k, 7), kir_idx(k, 1));
        vals[4 * r] = kir_load(k, in, i);
        vals[4 * r + 1] = kir_var_get(k, acc[r]);
        vals[4 * r + 2] = kir_binary(k, r ? KIR_MAX : KIR_ADD, vals[4 * r + 1], vals[4 * r]);
        kir_var_set(k, acc[r], vals[4 * r + 2]);
        kir_loop_end(k);
        vals[4 * r + 3] = kir_var_get(k, acc[r]);
        kir_store(k, out, kir_idx(k, r), vals[4 * r + 3]);
    }
    CHECK_EQ_INT(kir_verify(k), SMELT_OK);
    kir_locals r, h;
    CHECK_EQ_INT(kir_locals_assign(k, LOCALS_REUSE, &a, &r), SMELT_OK);
    CHECK_EQ_INT(kir_locals_assign(k, LOCALS_HYBRID, &a, &h), SMELT_OK);
    CHECK_EQ_INT(r.var_slot[acc[0]], r.var_slot[acc[1]]);
    CHECK_EQ_INT(h.var_slot[acc[0]], h.var_slot[acc[1]]);
    CHECK(h.slot_at_top[h.var_slot[acc[0]]]);
    /* reuse: the accumulator plus the load and the var read live together */
    CHECK_EQ_INT(kir_locals_declared(&r), 3);
    /* hybrid: 8 const values, 1 shared var slot */
    CHECK_EQ_INT(kir_locals_declared(&h), 9);
    /* the accumulator's slot is not handed to a value while it lives */
    for (int j = 0; j < 3; j++) CHECK(r.val_slot[vals[j]] != r.var_slot[acc[0]]);
    arena_free(&a);
}

TEST(locals_overlapping_accumulators_never_share)
{
    arena a;
    arena_init(&a);
    kir_kernel *k = kir_kernel_new(&a, 0, 1, "sum and sum of squares");
    int in = kir_buffer_add(k, SMELT_F32, 9, 0, true, false);
    int out = kir_buffer_add(k, SMELT_F32, 2, 1, false, true);
    kir_val zero = kir_const_f(k, SMELT_F32, 0);
    int s = kir_var_new(k, SMELT_F32, zero), q = kir_var_new(k, SMELT_F32, zero);
    kir_val i = kir_loop_begin(k, kir_idx(k, 0), kir_idx(k, 9), kir_idx(k, 1));
    kir_val x = kir_load(k, in, i);
    kir_var_set(k, s, kir_binary(k, KIR_ADD, kir_var_get(k, s), x));
    kir_var_set(k, q, kir_binary(k, KIR_ADD, kir_var_get(k, q), kir_binary(k, KIR_MUL, x, x)));
    kir_loop_end(k);
    kir_store(k, out, kir_idx(k, 0), kir_var_get(k, s));
    kir_store(k, out, kir_idx(k, 1), kir_var_get(k, q));
    CHECK_EQ_INT(kir_verify(k), SMELT_OK);
    for (int strat = 0; strat < 2; strat++) {
        kir_locals l;
        CHECK_EQ_INT(kir_locals_assign(k, strat ? LOCALS_HYBRID : LOCALS_REUSE, &a, &l), SMELT_OK);
        CHECK(l.var_slot[s] != l.var_slot[q]);
        CHECK(l.val_slot[x] != l.var_slot[s] && l.val_slot[x] != l.var_slot[q]);
    }
    arena_free(&a);
}

/* c = in[0] before the loop, read in every iteration: its slot must survive
 * the loop even though its last textual use comes early in the body. */
TEST(locals_value_live_across_loop)
{
    arena a;
    arena_init(&a);
    kir_kernel *k = kir_kernel_new(&a, 0, 1, "scale by first");
    int in = kir_buffer_add(k, SMELT_F32, 8, 0, true, false);
    int out = kir_buffer_add(k, SMELT_F32, 8, 1, false, true);
    kir_val c = kir_load(k, in, kir_idx(k, 0));
    kir_val i = kir_loop_begin(k, kir_idx(k, 0), kir_idx(k, 8), kir_idx(k, 1));
    kir_val x = kir_load(k, in, i);
    kir_val y = kir_binary(k, KIR_MUL, x, c);
    kir_val z = kir_unary(k, KIR_EXP, y);
    kir_store(k, out, i, z);
    kir_loop_end(k);
    CHECK_EQ_INT(kir_verify(k), SMELT_OK);
    kir_locals r;
    CHECK_EQ_INT(kir_locals_assign(k, LOCALS_REUSE, &a, &r), SMELT_OK);
    CHECK_EQ_INT(kir_locals_declared(&r), 2);
    CHECK(r.val_slot[c] != r.val_slot[x]);
    CHECK(r.val_slot[c] != r.val_slot[y]);
    CHECK(r.val_slot[c] != r.val_slot[z]);
    arena_free(&a);
}

/* A loop bound computed in a slot is re-read by every iteration's test. */
TEST(locals_loop_bound_stays_live)
{
    arena a;
    arena_init(&a);
    kir_kernel *k = kir_kernel_new(&a, 0, 1, "dynamic bound");
    int n = kir_buffer_add(k, SMELT_I64, 1, 0, true, false);
    int out = kir_buffer_add(k, SMELT_I64, 8, 1, false, true);
    kir_val hi = kir_load(k, n, kir_idx(k, 0));
    kir_val i = kir_loop_begin(k, kir_idx(k, 0), hi, kir_idx(k, 1));
    kir_val t = kir_mul(k, i, kir_idx(k, 3));
    kir_val u = kir_add(k, t, kir_idx(k, 1));
    kir_store(k, out, i, u);
    kir_loop_end(k);
    CHECK_EQ_INT(kir_verify(k), SMELT_OK);
    kir_locals r;
    CHECK_EQ_INT(kir_locals_assign(k, LOCALS_REUSE, &a, &r), SMELT_OK);
    CHECK(r.val_slot[hi] != r.val_slot[t] && r.val_slot[hi] != r.val_slot[u]);
    CHECK_EQ_INT(kir_locals_declared(&r), 2);
    arena_free(&a);
}

/* Slots hold one dtype: an index value and a float value never share. */
TEST(locals_slots_are_typed)
{
    arena a;
    arena_init(&a);
    kir_kernel *k = kir_kernel_new(&a, 0, 4, "typed");
    int in = kir_buffer_add(k, SMELT_F32, 8, 0, true, false);
    int out = kir_buffer_add(k, SMELT_F32, 8, 1, false, true);
    kir_val idx = kir_mul(k, kir_wg(k), kir_idx(k, 2));
    kir_val x = kir_load(k, in, idx);
    kir_val idx2 = kir_add(k, idx, kir_idx(k, 1));
    kir_val y = kir_unary(k, KIR_NEG, x);
    kir_store(k, out, idx2, y);
    CHECK_EQ_INT(kir_verify(k), SMELT_OK);
    kir_locals r;
    CHECK_EQ_INT(kir_locals_assign(k, LOCALS_REUSE, &a, &r), SMELT_OK);
    CHECK_EQ_INT(r.slot_type[r.val_slot[idx]], SMELT_I64);
    CHECK_EQ_INT(r.slot_type[r.val_slot[x]], SMELT_F32);
    CHECK_EQ_INT(r.slot_type[r.val_slot[y]], SMELT_F32);
    CHECK_EQ_INT(r.val_slot[x], r.val_slot[y]);
    CHECK_EQ_INT(r.val_slot[idx], r.val_slot[idx2]); /* idx dies where idx2 is defined */
    CHECK_EQ_INT(kir_locals_declared(&r), 2);
    arena_free(&a);
}

/* A var first set inside an if may carry its value across loop iterations, so
 * a value defined earlier in the loop body must not take its slot. */
TEST(locals_var_set_in_branch_is_conservative)
{
    arena a;
    arena_init(&a);
    kir_kernel *k = kir_kernel_new(&a, 0, 1, "branchy var");
    int in = kir_buffer_add(k, SMELT_F32, 6, 0, true, false);
    int out = kir_buffer_add(k, SMELT_F32, 6, 1, false, true);
    kir_val i = kir_loop_begin(k, kir_idx(k, 0), kir_idx(k, 6), kir_idx(k, 1));
    kir_val x = kir_load(k, in, i);
    kir_val y = kir_unary(k, KIR_EXP, x);
    kir_if_begin(k, kir_binary(k, KIR_LT, i, kir_idx(k, 3)));
    int v = kir_var_new(k, SMELT_F32, y);
    kir_else(k);
    kir_var_set(k, v, kir_const_f(k, SMELT_F32, 1.0));
    kir_if_end(k);
    kir_store(k, out, i, kir_var_get(k, v));
    kir_loop_end(k);
    CHECK_EQ_INT(kir_verify(k), SMELT_OK);
    kir_locals r;
    CHECK_EQ_INT(kir_locals_assign(k, LOCALS_REUSE, &a, &r), SMELT_OK);
    CHECK(r.val_slot[x] != r.var_slot[v]);
    CHECK(r.val_slot[y] != r.var_slot[v]);
    arena_free(&a);
}
