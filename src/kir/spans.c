/*
 * spans.c — which elements of each buffer a kernel may touch: interval
 * arithmetic over the index expressions of its loads and stores.
 *
 * Every integer value gets an interval [lo, hi] holding it in every
 * execution: a constant is a point, the workgroup index spans
 * [0, n_workgroups), a thread index [0, wg_size), a loop value [least lo,
 * greatest hi - 1] of its bounds (empty when the loop cannot run), and + - *,
 * division and remainder by a positive constant, min, max and select combine
 * their operands' intervals. Anything else (an index loaded from memory, a
 * variable, a shift) is unbounded, and so is a result that would overflow.
 * Values are visited in creation order, in which operands come first; an
 * operand created later (none are today) counts as unbounded.
 *
 * A buffer's span is the hull of the intervals of every index it is loaded
 * or stored at, clipped to the buffer, or the whole buffer when one of them
 * is unbounded. A load under a bounds guard (a Pad's if) counts as if it ran
 * unguarded, so a span may be wider than what runs, never narrower.
 * Prefetches are hints and touch nothing.
 *
 * Boxes. Where the lowering built every load and store of a buffer from
 * per-dim indices of its tensor (kir_note_access), each dim's index gets an
 * interval the same way, and the buffer's box is their hull per dim: a Slice
 * of columns read inside its consumer is a box of those columns, where its
 * span would run from the first row's first column to the last row's last.
 * The box is only as good as the decomposition, so every dim's interval must
 * lie inside the dim (then the linear index names exactly that element); an
 * index that may leave its dim (a Pad's guarded read, a conv that walks the
 * flat pixels through its last dim), any access without a note (a conv's
 * packed index, a staged copy) or an unbounded dim leaves the buffer without
 * a box (box_rank 0), with its span.
 *
 * guarantees: span_lo/span_hi of every buffer of k, 0 <= lo <= hi <= numel
 *             (lo == hi: the kernel touches none of it); a box, where set,
 *             holds every element the kernel may touch.
 */
#include <stdlib.h>

#include "core/diag.h"
#include "kir/kir.h"

typedef struct interval {
    int64_t lo, hi;
    bool known; /* false: unbounded */
} interval;

static const interval UNBOUNDED = {0, 0, false};

static bool is_empty(interval a) { return a.known && a.lo > a.hi; }

static interval point(int64_t v) { return (interval){v, v, true}; }

static interval add(interval a, interval b, int sign)
{
    if (!a.known || !b.known) return UNBOUNDED;
    if (is_empty(a) || is_empty(b)) return (interval){1, 0, true};
    interval r = {0, 0, true};
    bool o = sign > 0 ? __builtin_add_overflow(a.lo, b.lo, &r.lo) || __builtin_add_overflow(a.hi, b.hi, &r.hi)
                      : __builtin_sub_overflow(a.lo, b.hi, &r.lo) || __builtin_sub_overflow(a.hi, b.lo, &r.hi);
    return o ? UNBOUNDED : r;
}

static interval mul(interval a, interval b)
{
    if (!a.known || !b.known) return UNBOUNDED;
    if (is_empty(a) || is_empty(b)) return (interval){1, 0, true};
    int64_t p[4];
    if (__builtin_mul_overflow(a.lo, b.lo, &p[0]) || __builtin_mul_overflow(a.lo, b.hi, &p[1]) ||
        __builtin_mul_overflow(a.hi, b.lo, &p[2]) || __builtin_mul_overflow(a.hi, b.hi, &p[3]))
        return UNBOUNDED;
    interval r = {p[0], p[0], true};
    for (int i = 1; i < 4; i++) {
        if (p[i] < r.lo) r.lo = p[i];
        if (p[i] > r.hi) r.hi = p[i];
    }
    return r;
}

/* Truncating division and C remainder by a positive constant, of a non-negative interval. */
static interval divmod(interval a, interval b, bool mod)
{
    if (!a.known || !b.known || is_empty(a) || b.lo != b.hi || b.lo <= 0 || a.lo < 0) return UNBOUNDED;
    int64_t c = b.lo;
    if (!mod) return (interval){a.lo / c, a.hi / c, true};
    if (a.hi / c == a.lo / c) return (interval){a.lo % c, a.hi % c, true};
    return (interval){0, a.hi < c - 1 ? a.hi : c - 1, true};
}

static interval hull(interval a, interval b)
{
    if (!a.known || !b.known) return UNBOUNDED;
    if (is_empty(a)) return b;
    if (is_empty(b)) return a;
    return (interval){a.lo < b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi, true};
}

static interval minmax(interval a, interval b, bool max)
{
    if (!a.known || !b.known) return UNBOUNDED;
    if (is_empty(a) || is_empty(b)) return (interval){1, 0, true};
    if (max) return (interval){a.lo > b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi, true};
    return (interval){a.lo < b.lo ? a.lo : b.lo, a.hi < b.hi ? a.hi : b.hi, true};
}

static bool int_type(smelt_dtype t) { return !kir_is_float(t) && t != SMELT_BOOL; }

/* The interval of value v, from those of the values created before it. */
static interval value_interval(const kir_kernel *k, const interval *iv, kir_val v)
{
    const kir_value *x = &k->vals[v];
    if (!int_type(x->type)) return UNBOUNDED;
#define OPND(o) ((o) > 0 && (o) < v ? iv[o] : UNBOUNDED)
    switch (x->op) {
    case KIR_CONST: return point(x->imm.i);
    case KIR_WG: return (interval){0, k->n_workgroups - 1, true};
    case KIR_LID: return (interval){0, k->wg_size - 1, true};
    case KIR_LOOPVAR: {
        if (x->def < 0) return UNBOUNDED;
        const kir_stmt *s = &k->stmts[x->def];
        interval lo = OPND(s->lo), hi = OPND(s->hi);
        if (!lo.known || !hi.known) return UNBOUNDED;
        if (is_empty(lo) || is_empty(hi) || hi.hi <= lo.lo) return (interval){1, 0, true};
        return (interval){lo.lo, hi.hi - 1, true};
    }
    case KIR_ADD: return add(OPND(x->a), OPND(x->b), 1);
    case KIR_SUB: return add(OPND(x->a), OPND(x->b), -1);
    case KIR_MUL: return mul(OPND(x->a), OPND(x->b));
    case KIR_DIV: return divmod(OPND(x->a), OPND(x->b), false);
    case KIR_MOD: return divmod(OPND(x->a), OPND(x->b), true);
    case KIR_MIN: return minmax(OPND(x->a), OPND(x->b), false);
    case KIR_MAX: return minmax(OPND(x->a), OPND(x->b), true);
    case KIR_SELECT: return hull(OPND(x->b), OPND(x->c));
    case KIR_CAST: {
        interval a = OPND(x->a);
        if (!int_type(k->vals[x->a].type) || !int_type(x->type) || !a.known) return UNBOUNDED;
        int bits = 8 * smelt_dtype_size(x->type);
        if (bits < 64 && (a.lo < -((int64_t)1 << (bits - 1)) || a.hi >= ((int64_t)1 << (bits - 1)))) return UNBOUNDED;
        return a;
    }
    default: return UNBOUNDED;
    }
#undef OPND
}

/* The noted access of buffer b at linear index `at`, or NULL. */
static const kir_access *noted(const kir_kernel *k, int b, kir_val at)
{
    for (int i = 0; i < k->n_accesses; i++)
        if (k->accesses[i].buf == b && k->accesses[i].at == at) return &k->accesses[i];
    return NULL;
}

/* Each buffer's box (see "Boxes"): box_rank stays 0 where one access is not
 * noted or a dim is unbounded. */
static void boxes(kir_kernel *k, const interval *iv)
{
    for (int b = 0; b < k->n_bufs; b++) {
        k->bufs[b].box_rank = -1; /* -1: no access seen yet */
        for (int d = 0; d < KIR_BOX_RANK; d++) k->bufs[b].box_lo[d] = k->bufs[b].box_hi[d] = 0;
    }
    for (int i = 0; i < k->n_stmts; i++) {
        const kir_stmt *s = &k->stmts[i];
        int b = -1;
        kir_val at = 0;
        if (s->kind == KS_STORE) {
            b = s->buf;
            at = s->idx;
        } else if (s->kind == KS_DEF && k->vals[s->val].op == KIR_LOAD) {
            b = k->vals[s->val].buf;
            at = k->vals[s->val].a;
        }
        if (b < 0 || b >= k->n_bufs || k->bufs[b].box_rank == 0) continue;
        kir_buffer *x = &k->bufs[b];
        const kir_access *a = noted(k, b, at);
        if (!a || (x->box_rank > 0 && x->box_rank != a->rank)) {
            x->box_rank = 0;
            continue;
        }
        interval v[KIR_BOX_RANK];
        bool runs = true;
        for (int d = 0; d < a->rank; d++) {
            v[d] = a->dim[d] == 1 ? point(0) : a->idx[d] > 0 && a->idx[d] < k->n_vals ? iv[a->idx[d]] : UNBOUNDED;
            if (is_empty(v[d])) runs = false; /* never runs: adds nothing */
            else if (!v[d].known || v[d].lo < 0 || v[d].hi >= a->dim[d]) runs = false, x->box_rank = 0;
        }
        if (x->box_rank == 0) continue;
        if (!runs) continue;
        x->box_rank = a->rank;
        for (int d = 0; d < a->rank; d++) {
            int64_t lo = v[d].lo, hi = v[d].hi;
            if (x->box_hi[d] <= x->box_lo[d]) {
                x->box_lo[d] = lo;
                x->box_hi[d] = hi + 1;
            } else {
                if (lo < x->box_lo[d]) x->box_lo[d] = lo;
                if (hi + 1 > x->box_hi[d]) x->box_hi[d] = hi + 1;
            }
        }
    }
    for (int b = 0; b < k->n_bufs; b++)
        if (k->bufs[b].box_rank < 0) k->bufs[b].box_rank = 0;
}

smelt_status kir_spans(kir_kernel *k)
{
    interval *iv = malloc(sizeof *iv * ((size_t)k->n_vals + 1));
    interval *span = malloc(sizeof *span * ((size_t)k->n_bufs + 1));
    if (!iv || !span) {
        free(iv);
        free(span);
        return diag_fail(SMELT_ERR_NOMEM, "kernel %d: out of memory", k->id);
    }
    iv[0] = UNBOUNDED;
    for (kir_val v = 1; v < k->n_vals; v++) iv[v] = value_interval(k, iv, v);
    for (int b = 0; b < k->n_bufs; b++) span[b] = (interval){1, 0, true}; /* empty */
    for (int i = 0; i < k->n_stmts; i++) {
        const kir_stmt *s = &k->stmts[i];
        if (s->kind == KS_STORE && s->buf >= 0 && s->buf < k->n_bufs)
            span[s->buf] = hull(span[s->buf], s->idx > 0 ? iv[s->idx] : UNBOUNDED);
        if (s->kind == KS_DEF && k->vals[s->val].op == KIR_LOAD) {
            const kir_value *x = &k->vals[s->val];
            if (x->buf >= 0 && x->buf < k->n_bufs) span[x->buf] = hull(span[x->buf], x->a > 0 ? iv[x->a] : UNBOUNDED);
        }
    }
    boxes(k, iv);
    for (int b = 0; b < k->n_bufs; b++) {
        kir_buffer *x = &k->bufs[b];
        interval s = span[b];
        if (!s.known) s = (interval){0, x->numel - 1, true};
        int64_t lo = s.lo < 0 ? 0 : s.lo, hi = s.hi >= x->numel ? x->numel - 1 : s.hi;
        x->span_lo = lo <= hi ? lo : 0;
        x->span_hi = lo <= hi ? hi + 1 : 0;
    }
    free(iv);
    free(span);
    return SMELT_OK;
}

int64_t kir_touched(const kir_buffer *x)
{
    int64_t n = x->span_hi - x->span_lo;
    if (x->box_rank <= 0) return n;
    int64_t v = 1;
    for (int d = 0; d < x->box_rank; d++) v *= x->box_hi[d] > x->box_lo[d] ? x->box_hi[d] - x->box_lo[d] : 0;
    return v < n ? v : n;
}
