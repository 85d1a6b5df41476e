/* kir/spans.c: the elements of each buffer a hand-built kernel may touch. */
#include <stdio.h>

#include "core/arena.h"
#include "kir/kir.h"
#include "test.h"

/* Workgroup w of 4 reads rows w/2 (of 2) in blocks of 6, and column (w % 2)*3 + j of them;
 * a second load walks a loop that cannot run; a third is a gather through a loaded index. */
TEST(spans_bound_every_index_by_its_loops_and_the_workgroup)
{
    arena a;
    arena_init(&a);
    kir_kernel *k = kir_kernel_new(&a, 1, 4, "spans");
    int src = kir_buffer_add(k, SMELT_F32, 100, 0, true, false);
    int none = kir_buffer_add(k, SMELT_F32, 50, 1, true, false);
    int idx = kir_buffer_add(k, SMELT_I64, 10, 2, true, false);
    int gat = kir_buffer_add(k, SMELT_F32, 40, 3, true, false);
    int dst = kir_buffer_add(k, SMELT_F32, 100, 4, false, true);
    int unused = kir_buffer_add(k, SMELT_F32, 7, 5, true, false);
    kir_val wg = kir_wg(k);
    kir_val row = kir_binary(k, KIR_DIV, wg, kir_idx(k, 2));              /* [0, 1] */
    kir_val col0 = kir_mul(k, kir_binary(k, KIR_MOD, wg, kir_idx(k, 2)), kir_idx(k, 3)); /* [0, 3] */
    kir_val j = kir_loop_begin(k, kir_idx(k, 0), kir_idx(k, 3), kir_idx(k, 1));        /* [0, 2] */
    kir_val at = kir_add(k, kir_add(k, kir_mul(k, row, kir_idx(k, 6)), col0), j);       /* [0, 11] */
    at = kir_add(k, at, kir_idx(k, 10));                                                /* [10, 21] */
    kir_val v = kir_load(k, src, at);
    kir_val e = kir_loop_begin(k, kir_idx(k, 5), kir_binary(k, KIR_MIN, kir_idx(k, 5), j), kir_idx(k, 1));
    kir_store(k, dst, kir_idx(k, 91), kir_load(k, none, e));
    kir_loop_end(k);
    kir_val g = kir_load(k, idx, j);
    v = kir_binary(k, KIR_ADD, v, kir_load(k, gat, g));
    kir_val sel = kir_select(k, kir_binary(k, KIR_LT, j, kir_idx(k, 1)), kir_idx(k, 90), kir_idx(k, 95));
    kir_store(k, dst, kir_binary(k, KIR_MAX, sel, kir_add(k, at, kir_idx(k, 70))), v);  /* [90, 95] */
    kir_loop_end(k);
    smelt_status st = kir_verify(k);
    if (st) fprintf(stderr, "  %s\n", smelt_last_error());
    CHECK_EQ_INT(st, SMELT_OK);
    CHECK_EQ_INT(kir_spans(k), SMELT_OK);
    CHECK(k->bufs[src].span_lo == 10 && k->bufs[src].span_hi == 22);
    CHECK(k->bufs[none].span_lo == 0 && k->bufs[none].span_hi == 0);  /* its loop never runs */
    CHECK(k->bufs[idx].span_lo == 0 && k->bufs[idx].span_hi == 3);
    CHECK(k->bufs[gat].span_lo == 0 && k->bufs[gat].span_hi == 40);   /* a gather: all of it */
    CHECK(k->bufs[dst].span_lo == 90 && k->bufs[dst].span_hi == 96);
    CHECK(k->bufs[unused].span_lo == 0 && k->bufs[unused].span_hi == 0);
    arena_free(&a);
}

/* Indices past the buffer are clipped to it; an overflowing product counts as unbounded. */
TEST(spans_clip_to_the_buffer_and_give_up_on_overflow)
{
    arena a;
    arena_init(&a);
    kir_kernel *k = kir_kernel_new(&a, 1, 1, "spans");
    int b = kir_buffer_add(k, SMELT_F32, 16, 0, true, false);
    int c = kir_buffer_add(k, SMELT_F32, 16, 1, true, false);
    int d = kir_buffer_add(k, SMELT_F32, 16, 2, false, true);
    kir_val i = kir_loop_begin(k, kir_idx(k, -4), kir_idx(k, 40), kir_idx(k, 1));
    kir_val big = kir_mul(k, i, kir_idx(k, INT64_MAX / 8));
    kir_val v = kir_binary(k, KIR_ADD, kir_load(k, b, kir_add(k, i, kir_idx(k, 8))), kir_load(k, c, big));
    kir_store(k, d, kir_binary(k, KIR_MIN, i, kir_idx(k, 3)), v);
    kir_loop_end(k);
    CHECK_EQ_INT(kir_spans(k), SMELT_OK);
    CHECK(k->bufs[b].span_lo == 4 && k->bufs[b].span_hi == 16);
    CHECK(k->bufs[c].span_lo == 0 && k->bufs[c].span_hi == 16);
    CHECK(k->bufs[d].span_lo == 0 && k->bufs[d].span_hi == 4);
    arena_free(&a);
}

/* Boxes: a buffer whose every access is noted with its per-dim indices gets
 * the hull of each dim's interval (a dim of size 1 is [0, 1) whatever its
 * index). An index that may leave its dim (here past the row, under a guard),
 * an access without a note, or a dim without a bound leaves the buffer only
 * its span. */
TEST(spans_boxes_bound_each_noted_dim)
{
    arena a;
    arena_init(&a);
    kir_kernel *k = kir_kernel_new(&a, 1, 3, "boxes");
    const int64_t dims[3] = {4, 1, 8};
    int in = kir_buffer_add(k, SMELT_F32, 32, 0, true, false);
    int guarded = kir_buffer_add(k, SMELT_F32, 32, 1, true, false);
    int part = kir_buffer_add(k, SMELT_F32, 32, 2, true, false);
    int idx = kir_buffer_add(k, SMELT_I64, 4, 3, true, false);
    int gat = kir_buffer_add(k, SMELT_F32, 32, 4, true, false);
    int dst = kir_buffer_add(k, SMELT_F32, 32, 5, false, true);
    kir_val row = kir_add(k, kir_wg(k), kir_idx(k, 1));                          /* [1, 3] */
    kir_val j = kir_loop_begin(k, kir_idx(k, 2), kir_idx(k, 10), kir_idx(k, 1)); /* [2, 9] */
    kir_val col = kir_binary(k, KIR_SUB, j, kir_idx(k, 2));                     /* [0, 7] */
    kir_val at_in[3] = {row, kir_idx(k, 5), col};                                 /* dim 1 has size 1 */
    kir_val lin_in = kir_add(k, kir_mul(k, row, kir_idx(k, 8)), col);
    kir_note_access(k, in, lin_in, 3, dims, at_in);
    kir_val v = kir_load(k, in, lin_in);
    int acc = kir_var_new(k, SMELT_F32, v);
    kir_val at_g[3] = {row, kir_idx(k, 0), j};
    kir_val lin_g = kir_add(k, kir_mul(k, row, kir_idx(k, 8)), j);
    kir_if_begin(k, kir_binary(k, KIR_LT, j, kir_idx(k, 8))); /* a bounds guard, as a Pad's */
    kir_note_access(k, guarded, lin_g, 3, dims, at_g);
    kir_var_set(k, acc, kir_binary(k, KIR_ADD, v, kir_load(k, guarded, lin_g)));
    kir_if_end(k);
    v = kir_var_get(k, acc);
    kir_val at_p[3] = {kir_idx(k, 0), kir_idx(k, 0), col};
    kir_note_access(k, part, col, 3, dims, at_p);
    v = kir_binary(k, KIR_ADD, v, kir_load(k, part, col));
    v = kir_binary(k, KIR_ADD, v, kir_load(k, part, kir_idx(k, 9))); /* not noted */
    kir_val g = kir_load(k, idx, kir_idx(k, 1));
    kir_val at_x[3] = {g, kir_idx(k, 0), col};
    kir_val lin_x = kir_add(k, kir_mul(k, g, kir_idx(k, 8)), col);
    kir_note_access(k, gat, lin_x, 3, dims, at_x); /* a loaded row: unbounded */
    v = kir_binary(k, KIR_ADD, v, kir_load(k, gat, lin_x));
    kir_val at_d[3] = {kir_idx(k, 0), kir_idx(k, 0), col};
    kir_note_access(k, dst, col, 3, dims, at_d);
    kir_store(k, dst, col, v);
    kir_loop_end(k);
    CHECK_EQ_INT(kir_verify(k), SMELT_OK);
    CHECK_EQ_INT(kir_spans(k), SMELT_OK);
    const kir_buffer *s = &k->bufs[in];
    CHECK(s->box_rank == 3);
    CHECK(s->box_lo[0] == 1 && s->box_hi[0] == 4 && s->box_lo[1] == 0 && s->box_hi[1] == 1);
    CHECK(s->box_lo[2] == 0 && s->box_hi[2] == 8);
    CHECK_EQ_INT(kir_touched(s), 3 * 8);
    CHECK_EQ_INT(k->bufs[guarded].box_rank, 0);
    CHECK_EQ_INT(kir_touched(&k->bufs[guarded]), 32 - 10); /* its span: elements 10..31 */
    CHECK_EQ_INT(k->bufs[part].box_rank, 0);
    CHECK_EQ_INT(k->bufs[gat].box_rank, 0);
    CHECK_EQ_INT(k->bufs[idx].box_rank, 0);
    CHECK(k->bufs[dst].box_rank == 3 && k->bufs[dst].box_lo[2] == 0 && k->bufs[dst].box_hi[2] == 8);
    CHECK_EQ_INT(kir_touched(&k->bufs[dst]), 8);
    arena_free(&a);
}
