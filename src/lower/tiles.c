/*
 * tiles.c — lower_parallel_for for a body that reads across rows: the
 * iteration space in 2-D tiles, and, where an element body reads a source
 * transposed, that source staged through workgroup memory tile by tile.
 *
 * requires: a CPU target (one thread per workgroup); lower.c has rolled back
 *           the row-order kernel it built first.
 * guarantees: exactly the kernel lower_parallel_for would build (same
 *             elements, same stores), in an order that reads and writes
 *             memory contiguously.
 */
#include "lower/lower.h"

#include <string.h>


/* A kernel over the last two dims in th x tw tiles, one row of tiles (th rows)
 * per workgroup: rows [i0, i1) of the workgroup, and the open loop over column
 * tiles [j0, j1). The leading dims of idx are set; the caller opens the loops
 * of the tile (i, j: set by parallel_tiles) and closes all of them. */
typedef struct tile_grid {
    int64_t th, tw;
    kir_val i0, i1, j0, j1;
    kir_val i, j;
} tile_grid;

static kir_kernel *tiles_begin(lower_ctx *c, const ir_shape *shape, kir_val *idx, tile_grid *t)
{
    int r = shape->rank;
    int64_t h = shape->dim[r - 2], w = shape->dim[r - 1];
    int64_t hb = (h + t->th - 1) / t->th, outer = ir_shape_numel(shape) / (h * w);
    kir_kernel *k = lower_kernel_begin(c, outer * hb);
    if (!k) return NULL;
    ir_shape outer_shape = *shape;
    outer_shape.rank = r - 2;
    kir_val wg = kir_wg(k);
    lower_unravel(k, &outer_shape, kir_binary(k, KIR_DIV, wg, kir_idx(k, hb)), idx);
    t->i0 = kir_mul(k, kir_binary(k, KIR_MOD, wg, kir_idx(k, hb)), kir_idx(k, t->th));
    t->i1 = kir_binary(k, KIR_MIN, kir_add(k, t->i0, kir_idx(k, t->th)), kir_idx(k, h));
    t->j0 = kir_loop_begin(k, kir_idx(k, 0), kir_idx(k, w), kir_idx(k, t->tw));
    t->j1 = kir_binary(k, KIR_MIN, kir_add(k, t->j0, kir_idx(k, t->tw)), kir_idx(k, w));
    return k;
}

/* Tiles, rows then elements: a transposed read then reuses each cache line it fetches. */
static void parallel_tiles(lower_ctx *c, const ir_shape *shape, lower_body_fn body, void *user, tile_grid *t)
{
    int r = shape->rank;
    kir_val idx[IR_MAX_RANK];
    t->th = t->tw = LOWER_TILE;
    kir_kernel *k = tiles_begin(c, shape, idx, t);
    if (!k) return;
    idx[r - 2] = t->i = kir_loop_begin(k, t->i0, t->i1, kir_idx(k, 1));
    idx[r - 1] = t->j = kir_loop_begin_parallel(k, t->j0, t->j1);
    body(c, idx, user);
    kir_loop_end(k);
    kir_loop_end(k);
    kir_loop_end(k);
}

/* Whether some load of the tiled kernel walks memory with stride 1 along the
 * row loop `i` but not along the element loop `j`: it reads the source
 * transposed, so computing the tile column by column reads it contiguously. */
static bool reads_transposed(const kir_kernel *k, kir_val i, kir_val j)
{
    for (int s = 0; s < k->n_stmts; s++) {
        const kir_stmt *st = &k->stmts[s];
        if (st->kind != KS_DEF || k->vals[st->val].op != KIR_LOAD || k->bufs[k->vals[st->val].buf].workgroup)
            continue;
        kir_val at = k->vals[st->val].a;
        int64_t sj = kir_stride(k, at, j);
        if (sj != 0 && sj != 1 && kir_stride(k, at, i) == 1) return true;
    }
    return false;
}

/* parallel_tiles for an element body that reads a source transposed (stride 1
 * down the output's rows): the transposition moves into a copy of its own.
 * Each th x tw tile first copies every transposed source into
 * workgroup memory (pass A: the source read along its rows, so contiguously),
 * then computes the tile in output order from those copies (pass B: the
 * arithmetic, the other loads and the store all walk memory contiguously).
 * Columns go in panels of p = the target's vector width: a tile copy holds
 * element (i, j) at (j - j0 - q) * (th + pad) + (i - i0) * p + q for the
 * panel's q (pad: see tile_at), so pass A writes and pass B reads p consecutive elements per step, which a
 * C compiler turns into a register transpose and full-width vector code. Pass A's row loop is a
 * transpose loop (kir.h, "Transposing copies"): GCC vectorizes the copy of one staged source itself
 * but leaves that of two or more scalar, and the C emitter writes those as in-register transposes.
 * Tiles are larger than plain ones (STAGED_TILE_H x STAGED_TILE_W): each
 * source row then yields STAGED_TILE_H elements per visit, and measured on a
 * 4096x4096 transpose chain 128x128 runs ~25% faster than 64x64.
 * Built as pass B then pass A (the addresses pass A reads are those pass B's
 * loads computed, rebuilt over pass A's loops), then pass A is moved ahead.
 * Returns false when there is nothing to stage or an address cannot be
 * rebuilt; the caller then drops the half-built kernel. */
#define STAGED_TILE_H 128
#define STAGED_TILE_W 128
#define LOWER_CACHE_LINE 64
#define LOWER_MAX_STAGED 4

/* Loads of pass B that read transposed, the copies for how many (buffer,
 * address) pairs they hold at most: a DAG reads one source transposed in
 * several places (a Transpose of an input, and of values computed from it),
 * the same elements, and those loads share one copy. */
#define LOWER_MAX_STAGED_LOADS 64

typedef struct staged_load {
    kir_val load;       /* the (first) transposed load of pass B of this buffer and address */
    int tile;           /* its copy in workgroup memory */
} staged_load;

/* Whether index values a and b are the same expression (built twice). */
static bool same_index_expr(const kir_kernel *k, kir_val a, kir_val b, int depth)
{
    if (a == b) return true;
    if (!a || !b || depth > 32) return false;
    const kir_value *x = &k->vals[a], *y = &k->vals[b];
    if (x->op != y->op || x->type != y->type) return false;
    if (x->op == KIR_CONST) return kir_is_float(x->type) ? x->imm.f == y->imm.f : x->imm.i == y->imm.i;
    if (x->op == KIR_WG) return true;
    if (x->op == KIR_LOAD || x->op == KIR_VARGET || x->op == KIR_LOOPVAR || x->op == KIR_LID) return false;
    int n = kir_op_arity(x->op);
    return (n < 1 || same_index_expr(k, x->a, y->a, depth + 1)) && (n < 2 || same_index_expr(k, x->b, y->b, depth + 1)) &&
           (n < 3 || same_index_expr(k, x->c, y->c, depth + 1));
}

/* Value v of pass B, rebuilt in pass A: pass B's loop values (from[0..n))
 * become pass A's (to[]), values defined before pass B (statement < first) are
 * shared, and index arithmetic is rebuilt. 0 where v depends on anything else
 * (a load, a variable). With first = 0 and the workgroup index among from[],
 * the same address in another workgroup. */
#define REBUILD_MAX_MAP 5
static kir_val rebuild(kir_kernel *k, kir_val v, int first, int n, const kir_val *from, const kir_val *to, int depth)
{
    const kir_value *x = &k->vals[v];
    for (int i = 0; i < n; i++)
        if (v == from[i]) return to[i];
    if (x->op == KIR_CONST || x->op == KIR_WG || x->def < first) return v;
    if (depth > 64 || x->op == KIR_LOAD || x->op == KIR_VARGET || x->op == KIR_LOOPVAR || x->op == KIR_LID) return 0;
    kir_op op = x->op;
    smelt_dtype type = x->type;
    int arity = kir_op_arity(op);
    kir_val a = rebuild(k, x->a, first, n, from, to, depth + 1);
    kir_val b = arity > 1 ? rebuild(k, k->vals[v].b, first, n, from, to, depth + 1) : 0;
    kir_val cc = arity > 2 ? rebuild(k, k->vals[v].c, first, n, from, to, depth + 1) : 0;
    if (!a || (arity > 1 && !b) || (arity > 2 && !cc)) return 0;
    if (op == KIR_CAST) return kir_cast(k, type, a);
    if (op == KIR_SELECT) return kir_select(k, a, b, cc);
    return arity == 1 ? kir_unary(k, op, a) : kir_binary(k, op, a, b);
}

/* Move statements [mid, end) ahead of [first, mid) and re-point the
 * definitions of the values they define. */
static bool rotate_stmts(kir_kernel *k, int first, int mid, int end)
{
    int n = end - first, n_tail = end - mid;
    kir_stmt *tmp = arena_alloc(k->arena, (size_t)n * sizeof *tmp);
    if (!tmp) return false;
    memcpy(tmp, k->stmts + mid, (size_t)n_tail * sizeof *tmp);
    memcpy(tmp + n_tail, k->stmts + first, (size_t)(mid - first) * sizeof *tmp);
    memcpy(k->stmts + first, tmp, (size_t)n * sizeof *tmp);
    for (int s = first; s < end; s++)
        if (k->stmts[s].kind == KS_DEF || k->stmts[s].kind == KS_LOOP_BEGIN) k->vals[k->stmts[s].val].def = s;
    return true;
}

/* Panel loops over the tile: rows, panels of p columns from j0 to j1, and the
 * column q within the panel (all p of it when the width is a multiple of p).
 * tile_at is element (row, jp + q)'s address in the tile copy. */
typedef struct panel_loops {
    kir_val row, jp, q;
} panel_loops;

/* Panels lie tile_panel_stride elements apart: th * p plus one cache line of
 * padding (LOWER_TILE_PAD elements). Unpadded, a 128-row tile's panels are
 * 4 KiB apart, so pass B's loads of one row (one per panel, in every copy)
 * all fall into the same L1 set and miss: on elementwise_dag's memory
 * skeleton (its loads and stores, no arithmetic) with cached inputs, 4.7 ->
 * 3.4 ms at 1 thread. */
#define LOWER_TILE_PAD 16

static int64_t tile_col_stride(const tile_grid *t, int64_t p)
{
    return t->th + (LOWER_TILE_PAD + p - 1) / p;
}

/* Elements of a tile copy: every panel, padded. */
static int64_t tile_numel(const tile_grid *t, int64_t p)
{
    return (t->tw + p - 1) / p * p * tile_col_stride(t, p);
}

static kir_val tile_at(kir_kernel *k, const tile_grid *t, const panel_loops *l, int64_t p)
{
    kir_val col = kir_add(k, kir_mul(k, kir_binary(k, KIR_SUB, l->jp, t->j0), kir_idx(k, tile_col_stride(t, p))), l->q);
    return kir_add(k, col, kir_mul(k, kir_binary(k, KIR_SUB, l->row, t->i0), kir_idx(k, p)));
}

static kir_val panel_width(kir_kernel *k, const tile_grid *t, kir_val jp, int64_t w, int64_t p)
{
    if (w % p == 0) return kir_idx(k, p);
    return kir_binary(k, KIR_MIN, kir_idx(k, p), kir_binary(k, KIR_SUB, t->j1, jp));
}

/* Pass B's stores, when their outputs are large (TargetInfo.stream_min_bytes):
 * each store's p elements go to a row in workgroup memory and a stream loop
 * copies the row out (kir.h, "Streaming"), which a C target writes with
 * non-temporal stores. A write-once output larger than the cache then costs
 * no read for ownership: on the 4096x4096 transpose chain, ~5% at one thread
 * and ~15% at two; a region with several outputs (fuse.h "shared") saves it
 * on each. Taken where pass B's stores are all outside any if, stepping 1
 * along the panel, and panels are whole (w % p == 0): each copy is one
 * vector. Called with the panel loop just closed, inside the panels' loop. */
#define LOWER_MAX_STREAMED 8

static void stream_panel_store(lower_ctx *c, kir_kernel *k, int body, int end_b, int first, const panel_loops *b,
                               int64_t w, int64_t p)
{
    int64_t min = c->target->stream_min_bytes;
    if (min <= 0 || w % p) return;
    int st[LOWER_MAX_STREAMED], n = 0, in_if = 0;
    for (int s = body; s < end_b; s++) {
        const kir_stmt *ks = &k->stmts[s];
        in_if += ks->kind == KS_IF_BEGIN ? 1 : ks->kind == KS_IF_END ? -1 : 0;
        if (ks->kind != KS_STORE || k->bufs[ks->buf].workgroup) continue;
        if (n == LOWER_MAX_STREAMED || in_if) return;
        int dst = ks->buf;
        if (k->bufs[dst].type != SMELT_F32 || k->bufs[dst].numel < min / 4 || kir_stride(k, ks->idx, b->q) != 1) return;
        st[n++] = s;
    }
    const kir_val from[3] = {b->row, b->jp, b->q}, to[3] = {b->row, b->jp, kir_idx(k, 0)};
    kir_val base[LOWER_MAX_STREAMED];
    for (int i = 0; i < n; i++) /* every store's row start first: none is redirected unless all are */
        if (!(base[i] = rebuild(k, k->stmts[st[i]].idx, first, 3, from, to, 0))) return;
    for (int i = 0; i < n; i++) {
        int dst = k->stmts[st[i]].buf;
        int row = kir_smem_add(k, SMELT_F32, p);
        k->stmts[st[i]].buf = row;
        k->stmts[st[i]].idx = b->q;
        kir_val q = kir_loop_begin_stream(k, p);
        kir_val v = kir_load(k, row, q);
        kir_val at = kir_add(k, base[i], q);
        kir_store(k, dst, at, v);
        kir_loop_end(k);
    }
}

/* Each row of pass B prefetches one source row of each staged source in the
 * next tile (clamped into the tensor), so pass A finds it in cache: the copy
 * is latency-bound, the arithmetic is not, and this overlaps them. There are
 * th rows for tw source rows: th >= tw covers them all. Each row also
 * prefetches its own row of the next tile for pass B's contiguous loads (up
 * to LOWER_MAX_STAGED of them): the hardware's stream prefetch starts late on
 * rows of one tile width. The next tile is the workgroup's next column tile,
 * or after its last one the next workgroup's first: the thread pool hands
 * each thread runs of consecutive workgroups, so that is most often the tile
 * this thread computes next. Measured on elementwise_dag at 1 thread (the
 * kernel by hand, best of 15 runs in 5 interleaved rounds): 16.8 -> 15.1 ms,
 * against 15.4 with its inputs already in cache. Built inside pass B's row
 * loop; false when an address cannot be rebuilt. */
static bool prefetch_next_tile(kir_kernel *k, const ir_shape *shape, const tile_grid *t, const panel_loops *b,
                               int body, int end_b, const kir_val *from, const staged_load *st, int n)
{
    int r = shape->rank;
    int64_t h = shape->dim[r - 2], w = shape->dim[r - 1];
    int64_t n_wg = ir_shape_numel(shape) / (h * w) * ((h + t->th - 1) / t->th);
    kir_val more = kir_binary(k, KIR_LT, kir_add(k, t->j0, kir_idx(k, t->tw)), kir_idx(k, w));
    kir_val after = kir_binary(k, KIR_MIN, kir_add(k, from[3], kir_idx(k, 1)), kir_idx(k, n_wg - 1));
    kir_val next_wg = kir_select(k, more, from[3], after);
    kir_val next_j0 = kir_select(k, more, kir_add(k, t->j0, kir_idx(k, t->tw)), kir_idx(k, 0));
    kir_val next_i0 = rebuild(k, t->i0, 0, 1, &from[3], &next_wg, 0);
    if (!next_i0) return false;
    kir_val line = kir_idx(k, LOWER_CACHE_LINE / (int64_t)smelt_dtype_size(k->vals[st[0].load].type));
    kir_val last = kir_binary(k, KIR_SUB, t->i1, kir_idx(k, 1));
    kir_val rel = kir_binary(k, KIR_SUB, b->row, t->i0);
    kir_val last_row = kir_idx(k, h - 1), last_col = kir_idx(k, w - 1);
    /* this row's row in the next tile */
    kir_val row_next = kir_binary(k, KIR_MIN, kir_add(k, next_i0, rel), last_row);
    if (t->th > t->tw) rel = kir_binary(k, KIR_MOD, rel, kir_idx(k, t->tw));
    kir_val next_j = kir_binary(k, KIR_MIN, kir_add(k, next_j0, rel), last_col);
    kir_val m = kir_loop_begin(k, t->i0, kir_add(k, t->i1, line), line);
    kir_val m_next = kir_add(k, next_i0, kir_binary(k, KIR_SUB, kir_binary(k, KIR_MIN, m, last), t->i0));
    const kir_val ahead[REBUILD_MAX_MAP] = {kir_binary(k, KIR_MIN, m_next, last_row), next_j, kir_idx(k, 0), next_wg,
                                           next_j0};
    for (int i = 0; i < n; i++) {
        kir_val src = rebuild(k, k->vals[st[i].load].a, 0, REBUILD_MAX_MAP, from, ahead, 0);
        if (!src) return false;
        kir_prefetch(k, k->vals[st[i].load].buf, src);
    }
    kir_loop_end(k);
    /* pass B's contiguous loads (stride 1 along the panel), one per (buffer, address) */
    kir_val flat[LOWER_MAX_STAGED];
    int n_flat = 0, in_if = 0;
    for (int s = body; s < end_b && n_flat < LOWER_MAX_STAGED; s++) {
        const kir_stmt *ks = &k->stmts[s];
        in_if += ks->kind == KS_IF_BEGIN ? 1 : ks->kind == KS_IF_END ? -1 : 0;
        if (in_if || ks->kind != KS_DEF || k->vals[ks->val].op != KIR_LOAD || k->bufs[k->vals[ks->val].buf].workgroup ||
            kir_stride(k, k->vals[ks->val].a, b->q) != 1)
            continue;
        int f = 0;
        while (f < n_flat && !(k->vals[flat[f]].buf == k->vals[ks->val].buf &&
                               same_index_expr(k, k->vals[flat[f]].a, k->vals[ks->val].a, 0)))
            f++;
        if (f == n_flat) flat[n_flat++] = ks->val;
    }
    if (!n_flat) return true;
    kir_val col = kir_loop_begin(k, kir_idx(k, 0), kir_idx(k, t->tw), line);
    const kir_val along[REBUILD_MAX_MAP] = {row_next, kir_binary(k, KIR_MIN, kir_add(k, next_j0, col), last_col),
                                           kir_idx(k, 0), next_wg, next_j0};
    for (int f = 0; f < n_flat; f++) {
        kir_val src = rebuild(k, k->vals[flat[f]].a, 0, REBUILD_MAX_MAP, from, along, 0);
        if (!src) return false;
        kir_prefetch(k, k->vals[flat[f]].buf, src);
    }
    kir_loop_end(k);
    return true;
}

static bool parallel_tiles_staged(lower_ctx *c, const ir_shape *shape, int out)
{
    int r = shape->rank;
    int64_t w = shape->dim[r - 1];
    kir_val idx[IR_MAX_RANK];
    tile_grid t = {.th = STAGED_TILE_H, .tw = STAGED_TILE_W};
    /* p: the vector width, at least 4 lanes, at most 16 (a panel is one register) */
    int64_t p = c->target->vector_width < 4 ? 4 : c->target->vector_width > 16 ? 16 : c->target->vector_width;
    kir_kernel *k = tiles_begin(c, shape, idx, &t);
    if (!k) return false;
    /* pass B: rows, then panels of columns */
    int first = k->n_stmts;
    panel_loops b;
    b.row = kir_loop_begin(k, t.i0, t.i1, kir_idx(k, 1));
    b.jp = kir_loop_begin(k, t.j0, t.j1, kir_idx(k, p));
    b.q = kir_loop_begin_parallel(k, kir_idx(k, 0), panel_width(k, &t, b.jp, w, p));
    kir_val at = tile_at(k, &t, &b, p);
    idx[r - 2] = b.row;
    idx[r - 1] = kir_add(k, b.jp, b.q);
    int body = k->n_stmts;
    kir_val v = lower_element(c, out, idx);
    if (v) lower_store(c, out, idx, v);
    int end_b = k->n_stmts;
    kir_loop_end(k);
    stream_panel_store(c, k, body, end_b, first, &b, w, p);
    kir_loop_end(k);
    if (k->oom) return false;

    staged_load st[LOWER_MAX_STAGED];
    kir_val loads[LOWER_MAX_STAGED_LOADS];
    int copy_of[LOWER_MAX_STAGED_LOADS];
    int n = 0, n_loads = 0;
    int64_t smem = 0;
    int in_if = 0; /* a load under an if may be out of range where the if is false: not staged */
    for (int s = body; s < end_b; s++) {
        const kir_stmt *ks = &k->stmts[s];
        in_if += ks->kind == KS_IF_BEGIN ? 1 : ks->kind == KS_IF_END ? -1 : 0;
        if (in_if || ks->kind != KS_DEF || k->vals[ks->val].op != KIR_LOAD || k->bufs[k->vals[ks->val].buf].workgroup) continue;
        kir_val a = k->vals[ks->val].a;
        int64_t sj = kir_stride(k, a, b.q);
        if (sj == 0 || sj == 1 || kir_stride(k, a, b.row) != 1) continue;
        if (n_loads == LOWER_MAX_STAGED_LOADS) return false;
        int m = 0;
        while (m < n && !(k->vals[st[m].load].buf == k->vals[ks->val].buf && k->vals[st[m].load].type == k->vals[ks->val].type &&
                          same_index_expr(k, k->vals[st[m].load].a, a, 0)))
            m++;
        if (m == n) {
            smem += tile_numel(&t, p) * (int64_t)smelt_dtype_size(k->vals[ks->val].type);
            if (n == LOWER_MAX_STAGED || (c->target->smem_limit > 0 && smem > c->target->smem_limit)) return false;
            st[n++] = (staged_load){.load = ks->val, .tile = kir_smem_add(k, k->vals[ks->val].type, tile_numel(&t, p))};
        }
        loads[n_loads] = ks->val;
        copy_of[n_loads++] = m;
    }
    if (!n) return false;
    const kir_val from[REBUILD_MAX_MAP] = {b.row, b.jp, b.q, kir_wg(k), t.j0};
    if (!prefetch_next_tile(k, shape, &t, &b, body, end_b, from, st, n)) return false;
    kir_loop_end(k); /* pass B's rows */

    /* pass A: panels of columns, then rows (the source's contiguous walk), then the panel */
    int mid = k->n_stmts;
    panel_loops a;
    a.jp = kir_loop_begin(k, t.j0, t.j1, kir_idx(k, p));
    a.row = kir_loop_begin_transpose(k, t.i0, t.i1); /* kir.h, "Transposing copies" */
    a.q = kir_loop_begin(k, kir_idx(k, 0), panel_width(k, &t, a.jp, w, p), kir_idx(k, 1));
    kir_val to_at = tile_at(k, &t, &a, p);
    const kir_val to[3] = {a.row, a.jp, a.q};
    for (int i = 0; i < n; i++) {
        kir_value *ld = &k->vals[st[i].load];
        kir_val src = rebuild(k, ld->a, first, 3, from, to, 0);
        if (!src) return false;
        ld = &k->vals[st[i].load]; /* rebuild may have grown vals */
        kir_store(k, st[i].tile, to_at, kir_load(k, ld->buf, src));
    }
    for (int i = 0; i < 3; i++) kir_loop_end(k);
    /* pass B's transposed loads read the copies */
    for (int i = 0; i < n_loads; i++) {
        k->vals[loads[i]].buf = st[copy_of[i]].tile;
        k->vals[loads[i]].a = at;
    }
    int end = k->n_stmts;
    kir_loop_end(k); /* the loop over column tiles */
    return !k->oom && rotate_stmts(k, first, mid, end);
}

void lower_tiles(lower_ctx *c, const ir_shape *shape, lower_body_fn body, void *user, int elem_out)
{
    int first = lower_mark(c);
    tile_grid t;
    parallel_tiles(c, shape, body, user, &t);
    if (elem_out < 0 || lower_mark(c) != first + 1 || c->k->oom || !reads_transposed(c->k, t.i, t.j)) return;
    lower_rollback(c, first); /* and once more, staged */
    if (parallel_tiles_staged(c, shape, elem_out)) return;
    lower_rollback(c, first); /* a source address could not be staged: plain tiles */
    parallel_tiles(c, shape, body, user, &t);
}
