/* Workgroup-memory stack allocation and promote_reuse barriers (kir/smem.c). */
#include "kir/smem.h"
#include "test.h"

/* buf[i] = i for i < n, in a loop. */
static void fill(kir_kernel *k, int buf, int64_t n)
{
    kir_val i = kir_loop_begin(k, kir_idx(k, 0), kir_idx(k, n), kir_idx(k, 1));
    kir_store(k, buf, i, kir_cast(k, SMELT_F32, i));
    kir_loop_end(k);
}

/* out[slot] = sum of buf[0..n). */
static void sum_into(kir_kernel *k, int buf, int64_t n, int out, int64_t slot)
{
    int acc = kir_var_new(k, SMELT_F32, kir_const_f(k, SMELT_F32, 0));
    kir_val i = kir_loop_begin(k, kir_idx(k, 0), kir_idx(k, n), kir_idx(k, 1));
    kir_var_set(k, acc, kir_binary(k, KIR_ADD, kir_var_get(k, acc), kir_load(k, buf, i)));
    kir_loop_end(k);
    kir_store(k, out, kir_idx(k, slot), kir_var_get(k, acc));
}

static int count_barriers(const kir_kernel *k)
{
    int n = 0;
    for (int i = 0; i < k->n_stmts; i++) n += k->stmts[i].kind == KS_BARRIER;
    return n;
}

TEST(smem_overlapping_lives_never_share)
{
    arena a;
    arena_init(&a);
    kir_kernel *k = kir_kernel_new(&a, 0, 1, "overlap");
    int out = kir_buffer_add(k, SMELT_F32, 2, 0, false, true);
    int x = kir_smem_add(k, SMELT_F32, 64), y = kir_smem_add(k, SMELT_F32, 32);
    fill(k, x, 64);
    fill(k, y, 32);
    kir_barrier(k);
    sum_into(k, x, 64, out, 0);
    sum_into(k, y, 32, out, 1);
    smem_report r;
    CHECK_EQ_INT(smem_assign(k, &r), SMELT_OK);
    CHECK(k->bufs[x].smem_offset != k->bufs[y].smem_offset);
    CHECK_EQ_INT(r.peak, 256 + 128);
    CHECK_EQ_INT(r.total, 256 + 128);
    CHECK_EQ_INT(r.barriers_inserted, 0);
    arena_free(&a);
}

/* x written and read, then y: reuse iff a barrier separates them. */
static kir_kernel *sequential(arena *a, bool barrier, bool promote, int *x, int *y)
{
    kir_kernel *k = kir_kernel_new(a, 0, 1, "seq");
    int out = kir_buffer_add(k, SMELT_F32, 2, 0, false, true);
    *x = kir_smem_add(k, SMELT_F32, 64);
    *y = kir_smem_add(k, SMELT_F32, 32);
    k->bufs[*x].promote_reuse = promote;
    fill(k, *x, 64);
    kir_barrier(k);
    sum_into(k, *x, 64, out, 0);
    if (barrier) kir_barrier(k);
    fill(k, *y, 32);
    kir_barrier(k);
    sum_into(k, *y, 32, out, 1);
    return k;
}

TEST(smem_reuse_exactly_where_a_barrier_allows)
{
    arena a;
    arena_init(&a);
    int x, y;
    kir_kernel *k = sequential(&a, true, false, &x, &y);
    smem_report r;
    CHECK_EQ_INT(smem_assign(k, &r), SMELT_OK);
    CHECK_EQ_INT(k->bufs[y].smem_offset, k->bufs[x].smem_offset);
    CHECK_EQ_INT(r.peak, 256);
    CHECK_EQ_INT(r.total, 384);
    k = sequential(&a, false, false, &x, &y);
    CHECK_EQ_INT(smem_assign(k, &r), SMELT_OK);
    CHECK_EQ_INT(k->bufs[x].smem_offset, 0);
    CHECK_EQ_INT(k->bufs[y].smem_offset, 256);
    CHECK_EQ_INT(r.peak, 384);
    CHECK_EQ_INT(r.barriers_inserted, 0);
    arena_free(&a);
}

TEST(smem_promote_reuse_inserts_one_barrier)
{
    arena a;
    arena_init(&a);
    int x, y;
    kir_kernel *k = sequential(&a, false, true, &x, &y);
    int before = count_barriers(k);
    smem_report r;
    CHECK_EQ_INT(smem_assign(k, &r), SMELT_OK);
    CHECK_EQ_INT(r.barriers_inserted, 1);
    CHECK_EQ_INT(count_barriers(k), before + 1);
    CHECK_EQ_INT(k->bufs[y].smem_offset, k->bufs[x].smem_offset);
    CHECK_EQ_INT(r.peak, 256);
    /* The barrier sits after x's last read (the summing loop's end), at top level. */
    int last_read = -1, bar = -1;
    for (int i = 0; i < k->n_stmts; i++) {
        const kir_stmt *s = &k->stmts[i];
        if (s->kind == KS_DEF && k->vals[s->val].op == KIR_LOAD && k->vals[s->val].buf == x) last_read = i;
    }
    for (int i = last_read; i < k->n_stmts && bar < 0; i++)
        if (k->stmts[i].kind == KS_BARRIER) bar = i;
    CHECK(bar > last_read);
    CHECK_EQ_INT(k->stmts[bar - 1].kind, KS_LOOP_END);
    /* Again: the barrier is there now, nothing more is inserted. */
    CHECK_EQ_INT(smem_assign(k, &r), SMELT_OK);
    CHECK_EQ_INT(r.barriers_inserted, 0);
    CHECK_EQ_INT(count_barriers(k), before + 1);
    /* Where a barrier already separates them, promote_reuse adds none. */
    k = sequential(&a, true, true, &x, &y);
    before = count_barriers(k);
    CHECK_EQ_INT(smem_assign(k, &r), SMELT_OK);
    CHECK_EQ_INT(r.barriers_inserted, 0);
    CHECK_EQ_INT(count_barriers(k), before);
    arena_free(&a);
}

/* Inside a loop, reuse also needs a barrier around the back edge. */
TEST(smem_loop_back_edge)
{
    arena a;
    arena_init(&a);
    for (int back = 0; back < 2; back++) {
        kir_kernel *k = kir_kernel_new(&a, 0, 1, "loop");
        int out = kir_buffer_add(k, SMELT_F32, 2, 0, false, true);
        int x = kir_smem_add(k, SMELT_F32, 16), y = kir_smem_add(k, SMELT_F32, 16);
        kir_loop_begin(k, kir_idx(k, 0), kir_idx(k, 3), kir_idx(k, 1));
        fill(k, x, 16);
        sum_into(k, x, 16, out, 0);
        kir_barrier(k);
        fill(k, y, 16);
        sum_into(k, y, 16, out, 1);
        if (back) kir_barrier(k);
        kir_loop_end(k);
        smem_report r;
        CHECK_EQ_INT(smem_assign(k, &r), SMELT_OK);
        CHECK_EQ_INT(k->bufs[x].smem_offset == k->bufs[y].smem_offset, back);
        CHECK_EQ_INT(r.peak, back ? 64 : 128);
    }
    arena_free(&a);
}

/* Three stages, the middle one long-lived: peak = what the stack discipline gives. */
TEST(smem_peak_figure)
{
    arena a;
    arena_init(&a);
    kir_kernel *k = kir_kernel_new(&a, 0, 1, "peak");
    int out = kir_buffer_add(k, SMELT_F32, 4, 0, false, true);
    int p = kir_smem_add(k, SMELT_F32, 100); /* 400 bytes */
    int q = kir_smem_add(k, SMELT_F32, 10);  /* 40 -> 48 */
    int s = kir_smem_add(k, SMELT_F32, 50);  /* 200 -> 208 */
    int t = kir_smem_add(k, SMELT_F32, 20);  /* 80 */
    fill(k, p, 100);
    sum_into(k, p, 100, out, 0);
    kir_barrier(k);
    fill(k, q, 10);  /* takes p's place */
    kir_barrier(k);
    fill(k, s, 50);  /* above q: q is still live */
    sum_into(k, s, 50, out, 1);
    kir_barrier(k);
    fill(k, t, 20);  /* takes s's place above q */
    sum_into(k, t, 20, out, 2);
    sum_into(k, q, 10, out, 3);
    smem_report r;
    CHECK_EQ_INT(smem_assign(k, &r), SMELT_OK);
    CHECK_EQ_INT(k->bufs[q].smem_offset, 0);
    CHECK_EQ_INT(k->bufs[s].smem_offset, 48);
    CHECK_EQ_INT(k->bufs[t].smem_offset, 48);
    CHECK_EQ_INT(r.peak, 400);
    CHECK_EQ_INT(r.total, 400 + 48 + 208 + 80);
    CHECK_EQ_INT(k->smem_bytes, 400);
    /* The interpreter gives workgroup memory to one-thread kernels. */
    float o[4] = {0};
    void *bufs[5] = {o, NULL, NULL, NULL, NULL};
    CHECK_EQ_INT(kir_interpret(k, bufs), SMELT_OK);
    CHECK_NEAR(o[0], 4950, 0);
    CHECK_NEAR(o[1], 1225, 0);
    CHECK_NEAR(o[2], 190, 0);
    CHECK_NEAR(o[3], 45, 0);
    arena_free(&a);
}
