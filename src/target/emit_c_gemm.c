/*
 * emit_c_gemm.c — the C emitter's microkernels: a gemm loop (kir.h,
 * "Microkernel loops") as one call of a register-blocked MR x NR helper, and
 * the helpers themselves, written per (MR, NR) for the programs that call them.
 *
 * Why a helper and not the vector loops of emit_c_simd.c: the microkernel's
 * point is MR x NR accumulators that stay in registers across the whole k
 * range, MR broadcasts and NR/W vector loads per k. Kernel IR has no vector
 * values, and the C compiler does not keep an accumulator block of workgroup
 * memory in registers, so the emitter writes the block itself, in GCC/clang
 * vector types sized for AVX-512 or AVX2+FMA (guarded by the compiler's
 * target macros) and as plain loops for any other CPU. Only the C dialect for this host uses it;
 * the interpreter and other targets run the loop as written.
 *
 * Two forms look past the loop. An if just before it that only zeroes its
 * block (ops/gemm_packed.c's first K slice) is not written: the helper's
 * registers start at zero under the if's condition instead (emit_gemm_zero_if).
 * And a store of the block right after it (a conv's store_each) is written, on
 * AVX-512, from the registers themselves: the loop inline, the store per row
 * and vector with the block's read replaced (emit_put_gemm_store), the helper
 * call and the loops as written under #else. At K = 16 the zeroing, the
 * block's load and store and its read back cost as much as the multiply-adds.
 *
 * requires: a kernel that passes kir_verify; the C dialect (host_simd).
 * guarantees: the helper computes the loop's sum with each multiply-add
 *             contracted into an FMA where the CPU has one (kir.h allows it);
 *             the two forms store the same values as the statements they replace.
 */
#include "target/emit_c_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define GEMM_MAX_TERMS 8

/* An index as a sum of terms defined before the loop (coef * value; value 0:
 * the constant coef), plus multiples of the loop values. */
typedef struct gemm_index {
    int n;
    kir_val val[GEMM_MAX_TERMS];
    int64_t coef[GEMM_MAX_TERMS];
} gemm_index;

typedef struct gemm_match {
    int end;             /* the gemm loop's LOOP_END */
    int mr, nr;
    kir_val kc;
    int acc, a, b;       /* buffers */
    smelt_dtype b8;      /* B's 8-bit dtype (emit_c_gemm_int8.c), or SMELT_F32 */
    int32_t b_off;       /* and its offset */
    int kg;              /* k-groups: 2, pairs of int16 A and B; 4, quads of int8 A and uint8 B
                          * (emit_c_gemm_pairs.c); 0: one k a step */
    gemm_index ca, aa, ba;
    int64_t cr, ar, ak, bk;
    int store;           /* the accumulator's store */
    kir_val lv[3];       /* the loop values: k, r (0 when MR is 1), j */
} gemm_match;

static bool is_loopvar(const kir_val *lv, kir_val v) { return v && (v == lv[0] || v == lv[1] || v == lv[2]); }

/* Splits v (times coef) into terms defined before statement `first`; the
 * loop values lv contribute nothing (their strides come from kir_stride). */
static bool split_index(const kir_kernel *k, kir_val v, int64_t coef, int first, const kir_val *lv, gemm_index *x)
{
    const kir_value *p = &k->vals[v];
    if (is_loopvar(lv, v)) return true;
    if (p->op == KIR_CONST || p->def < first) {
        if (p->type != SMELT_I64 || x->n == GEMM_MAX_TERMS) return false;
        x->val[x->n] = p->op == KIR_CONST ? 0 : v;
        x->coef[x->n++] = p->op == KIR_CONST ? coef * p->imm.i : coef;
        return true;
    }
    switch (p->op) {
    case KIR_ADD: return split_index(k, p->a, coef, first, lv, x) && split_index(k, p->b, coef, first, lv, x);
    case KIR_SUB: return split_index(k, p->a, coef, first, lv, x) && split_index(k, p->b, -coef, first, lv, x);
    case KIR_MUL:
        if (kir_is_const(k, p->b)) return split_index(k, p->a, coef * k->vals[p->b].imm.i, first, lv, x);
        if (kir_is_const(k, p->a)) return split_index(k, p->b, coef * k->vals[p->a].imm.i, first, lv, x);
        return false;
    default: return false;
    }
}

/* Stride of index v along loop value lv (0 when absent: MR is 1). */
static int64_t stride(const kir_kernel *k, kir_val v, kir_val lv) { return lv ? kir_stride(k, v, lv) : 0; }

/* A constant loop [0, n) with step 1: n, else 0. */
static int64_t const_trip(const kir_kernel *k, const kir_stmt *s)
{
    if (!kir_is_const(k, s->lo) || !kir_is_const(k, s->hi) || !kir_is_const(k, s->step)) return 0;
    if (k->vals[s->lo].imm.i != 0 || k->vals[s->step].imm.i != 1) return 0;
    return k->vals[s->hi].imm.i;
}

/* x and y the same index but for y's constant being x's plus d. */
static bool index_plus(const gemm_index *x, const gemm_index *y, int64_t d)
{
    int64_t cx = 0, cy = 0;
    for (int t = 0; t < x->n; t++) cx += x->val[t] ? 0 : x->coef[t];
    for (int t = 0; t < y->n; t++) cy += y->val[t] ? 0 : y->coef[t];
    if (cy - cx != d) return false;
    for (int pass = 0; pass < 2; pass++) { /* every value's total coefficient equal, each way */
        const gemm_index *p = pass ? y : x, *q = pass ? x : y;
        for (int t = 0; t < p->n; t++) {
            if (!p->val[t]) continue;
            int64_t sp = 0, sq = 0;
            for (int u = 0; u < p->n; u++) sp += p->val[u] == p->val[t] ? p->coef[u] : 0;
            for (int u = 0; u < q->n; u++) sq += q->val[u] == p->val[t] ? q->coef[u] : 0;
            if (sp != sq) return false;
        }
    }
    return true;
}

/* The load of dtype dt under a cast to float32, or NULL. */
static const kir_value *cast_load(const kir_kernel *k, kir_val v, smelt_dtype dt)
{
    const kir_value *p = &k->vals[v];
    if (p->op != KIR_CAST || p->type != SMELT_F32) return NULL;
    const kir_value *ld = &k->vals[p->a];
    return ld->op == KIR_LOAD && ld->type == dt ? ld : NULL;
}

/* The k-group body (ops/gemm_packed.h, read_b_group): prod = a0 * b0 + ... +
 * a(G-1) * b(G-1) added left to right, each a float32 cast of a load (pairs:
 * int16 both; quads: A int8, B uint8), ah and bh h elements past a0 and b0, A
 * moving with k G elements a step and B with j G elements a column. */
static bool match_groups(const kir_kernel *k, const kir_value *prod, int first, const kir_val *lv, gemm_match *m)
{
    const kir_value *mul[4], *la[4], *lb[4];
    int g = 0;
    const kir_value *p = prod;
    while (p->op == KIR_ADD && g < 3) { /* ((m0 + m1) + m2) + m3 */
        mul[3 - g++] = &k->vals[p->b];
        p = &k->vals[p->a];
    }
    mul[3 - g++] = p;
    if (g != 2 && g != 4) return false;
    for (int h = 0; h < g; h++) mul[h] = mul[4 - g + h];
    smelt_dtype ta = g == 2 ? SMELT_I16 : SMELT_I8, tb = g == 2 ? SMELT_I16 : SMELT_U8;
    for (int h = 0; h < g; h++) {
        if (mul[h]->op != KIR_MUL) return false;
        la[h] = cast_load(k, mul[h]->a, ta), lb[h] = cast_load(k, mul[h]->b, tb);
        if (g == 4 && (!la[h] || !lb[h])) la[h] = cast_load(k, mul[h]->b, ta), lb[h] = cast_load(k, mul[h]->a, tb);
        if (!la[h] || !lb[h]) return false;
        if (g == 2 && stride(k, la[h]->a, lv[2]) != 0) {
            const kir_value *t = la[h];
            la[h] = lb[h], lb[h] = t;
        }
    }
    m->a = la[0]->buf, m->b = lb[0]->buf;
    if (!split_index(k, la[0]->a, 1, first, lv, &m->aa) || !split_index(k, lb[0]->a, 1, first, lv, &m->ba)) return false;
    for (int h = 1; h < g; h++) {
        gemm_index ah = {0}, bh = {0};
        if (la[h]->buf != m->a || lb[h]->buf != m->b || !split_index(k, la[h]->a, 1, first, lv, &ah) ||
            !split_index(k, lb[h]->a, 1, first, lv, &bh) || !index_plus(&m->aa, &ah, h) || !index_plus(&m->ba, &bh, h))
            return false;
    }
    for (int h = 0; h < g; h++) /* the loop values' strides, which split_index leaves out */
        if (stride(k, la[h]->a, lv[0]) != g || stride(k, la[h]->a, lv[2]) != 0 || stride(k, lb[h]->a, lv[2]) != g ||
            stride(k, lb[h]->a, lv[1]) != 0 || stride(k, la[h]->a, lv[1]) != stride(k, la[0]->a, lv[1]) ||
            stride(k, lb[h]->a, lv[0]) != stride(k, lb[0]->a, lv[0]))
            return false;
    m->ar = stride(k, la[0]->a, lv[1]), m->ak = g, m->bk = stride(k, lb[0]->a, lv[0]);
    m->kg = g;
    return m->ar != KIR_STRIDE_UNKNOWN && m->bk != KIR_STRIDE_UNKNOWN;
}

/* Loop i as the gemm loop kir.h describes: fills *m; false for any other body. */
static bool match_gemm(const kir_kernel *k, int i, gemm_match *m)
{
    const kir_stmt *s = &k->stmts[i];
    if (!s->gemm || !kir_is_const(k, s->lo) || k->vals[s->lo].imm.i != 0 || !kir_is_const(k, s->step) ||
        k->vals[s->step].imm.i != 1)
        return false;
    int loops[2], n_loops = 0, store = -1, j = i + 1;
    for (; j < k->n_stmts && k->stmts[j].kind != KS_LOOP_END; j++) {
        const kir_stmt *t = &k->stmts[j];
        if (t->kind == KS_LOOP_BEGIN && n_loops < 2 && store < 0) loops[n_loops++] = j;
        else if (t->kind == KS_STORE && store < 0 && n_loops > 0) store = j;
        else if (t->kind != KS_DEF) return false;
    }
    /* the inner loops' ends, then the gemm loop's, with nothing in between */
    for (int e = 0; e < n_loops; e++, j++)
        if (j >= k->n_stmts || k->stmts[j].kind != KS_LOOP_END) return false;
    if (store < 0 || j >= k->n_stmts || k->stmts[j].kind != KS_LOOP_END) return false;
    kir_val lv[3] = {s->val, n_loops == 2 ? k->stmts[loops[0]].val : 0, k->stmts[loops[n_loops - 1]].val};
    *m = (gemm_match){.end = j, .mr = 1, .kc = s->hi, .store = store, .lv = {lv[0], lv[1], lv[2]}};
    int64_t nr = const_trip(k, &k->stmts[loops[n_loops - 1]]), mr = n_loops == 2 ? const_trip(k, &k->stmts[loops[0]]) : 1;
    if (nr < 1 || nr > 64 || mr < 1 || mr > 16) return false;
    m->mr = (int)mr, m->nr = (int)nr;

    const kir_stmt *st = &k->stmts[store];
    const kir_value *sum = &k->vals[st->val];
    if (sum->op != KIR_ADD || sum->type != SMELT_F32) return false;
    const kir_value *old = &k->vals[sum->a], *prod = &k->vals[sum->b];
    if (old->op != KIR_LOAD) old = &k->vals[sum->b], prod = &k->vals[sum->a];
    if (old->op != KIR_LOAD || old->buf != st->buf || old->a != st->idx) return false;
    if (prod->op == KIR_ADD) {
        m->b8 = SMELT_F32;
        const kir_buffer *bc = &k->bufs[st->buf];
        if (!bc->workgroup || bc->type != SMELT_F32 || !match_groups(k, prod, i, lv, m) || m->a == st->buf ||
            m->b == st->buf || !split_index(k, st->idx, 1, i, lv, &m->ca))
            return false;
        m->acc = st->buf;
        m->cr = stride(k, st->idx, lv[1]);
        return stride(k, st->idx, lv[2]) == 1 && stride(k, st->idx, lv[0]) == 0 && m->cr != KIR_STRIDE_UNKNOWN;
    }
    if (prod->op != KIR_MUL) return false;
    kir_val pa = prod->a, pb = prod->b;
    m->b8 = SMELT_F32;
    if (emit_gemm_int8_operand(k, &pa, &m->b8, &m->b_off)) pa = prod->b, pb = prod->a; /* B widened from 8 bits */
    else emit_gemm_int8_operand(k, &pb, &m->b8, &m->b_off);
    const kir_value *la = &k->vals[pa], *lb = &k->vals[pb];
    if (la->op != KIR_LOAD || lb->op != KIR_LOAD) return false;
    if (m->b8 == SMELT_F32 && stride(k, la->a, lv[2]) != 0) { /* A is the operand that does not move with j */
        const kir_value *t = la;
        la = lb, lb = t;
    }
    m->acc = st->buf, m->a = la->buf, m->b = lb->buf;
    const kir_buffer *bc = &k->bufs[m->acc];
    if (!bc->workgroup || bc->type != SMELT_F32 || k->bufs[m->a].type != SMELT_F32 || k->bufs[m->b].type != m->b8 ||
        m->a == m->acc || m->b == m->acc)
        return false;
    if (!split_index(k, st->idx, 1, i, lv, &m->ca) || !split_index(k, la->a, 1, i, lv, &m->aa) ||
        !split_index(k, lb->a, 1, i, lv, &m->ba))
        return false;
    /* strides: acc moves with r and j only, A with r and k, B with k and j */
    m->cr = stride(k, st->idx, lv[1]);
    m->ar = stride(k, la->a, lv[1]), m->ak = stride(k, la->a, lv[0]);
    m->bk = stride(k, lb->a, lv[0]);
    if (stride(k, st->idx, lv[2]) != 1 || stride(k, st->idx, lv[0]) != 0 || stride(k, la->a, lv[2]) != 0 ||
        stride(k, lb->a, lv[2]) != 1 || stride(k, lb->a, lv[1]) != 0)
        return false;
    return m->cr != KIR_STRIDE_UNKNOWN && m->ar != KIR_STRIDE_UNKNOWN && m->ak != KIR_STRIDE_UNKNOWN &&
           m->bk != KIR_STRIDE_UNKNOWN;
}

static void put_index(emitter *e, const gemm_index *x)
{
    int64_t c = 0;
    int put = 0;
    for (int t = 0; t < x->n; t++) {
        if (!x->val[t]) {
            c += x->coef[t];
            continue;
        }
        if (put++) sb_puts(e->sb, " + ");
        if (x->coef[t] != 1) sb_printf(e->sb, "%lld * ", (long long)x->coef[t]);
        emit_put_val(e, x->val[t]);
    }
    if (c || !put) sb_printf(e->sb, "%s%lld", put ? " + " : "", (long long)c);
}

int emit_gemm_int8_a(const kir_kernel *k, int i)
{
    gemm_match m;
    return k->stmts[i].kind == KS_LOOP_BEGIN && match_gemm(k, i, &m) && m.b8 != SMELT_F32 ? m.a : -1;
}

/* A float 0 that is not -0 (a block so zeroed and then added to is the sum itself). */
static bool is_plus_zero(const kir_kernel *k, kir_val v)
{
    const kir_value *x = &k->vals[v];
    return x->op == KIR_CONST && x->type == SMELT_F32 && x->imm.f == 0 && !signbit(x->imm.f);
}

int emit_gemm_zero_if(const kir_kernel *k, int i)
{
    /* if { DEF* loop zr < R { DEF* loop zj < NR { DEF* acc[ca + zr*cr + zj] = 0 } } } DEF* gemm,
     * the zr loop absent where R is 1 (a loop of one trip is folded away) */
    int s = i + 1, loops[2], n_loops = 0;
    if (k->stmts[i].kind != KS_IF_BEGIN) return -1;
    for (; s < k->n_stmts && n_loops < 3; s++) {
        if (k->stmts[s].kind == KS_LOOP_BEGIN && n_loops < 2) loops[n_loops++] = s;
        else if (k->stmts[s].kind != KS_DEF) break;
    }
    if (!n_loops || s + n_loops + 1 >= k->n_stmts || k->stmts[s].kind != KS_STORE) return -1;
    for (int e = 1; e <= n_loops; e++)
        if (k->stmts[s + e].kind != KS_LOOP_END) return -1;
    if (k->stmts[s + n_loops + 1].kind != KS_IF_END) return -1;
    const kir_stmt *zr = n_loops == 2 ? &k->stmts[loops[0]] : NULL, *zj = &k->stmts[loops[n_loops - 1]];
    int64_t rows = zr ? const_trip(k, zr) : 1, cols = const_trip(k, zj);
    const kir_stmt *zs = &k->stmts[s];
    if (rows < 1 || cols < 1 || !is_plus_zero(k, zs->val)) return -1;
    int g = s + n_loops + 2;
    for (; g < k->n_stmts && k->stmts[g].kind == KS_DEF; g++) { /* nothing between reads the block */
        const kir_value *d = &k->vals[k->stmts[g].val];
        if (d->op == KIR_LOAD && d->buf == zs->buf) return -1;
    }
    gemm_match m;
    if (g >= k->n_stmts || k->stmts[g].kind != KS_LOOP_BEGIN || !match_gemm(k, g, &m) || m.kg || m.b8 != SMELT_F32 ||
        m.acc != zs->buf || m.mr != rows || m.nr != cols)
        return -1;
    /* the same block: both indices over the values defined before the if */
    const kir_val zl[3] = {0, zr ? zr->val : 0, zj->val};
    gemm_index zx = {0}, gx = {0};
    if (!split_index(k, zs->idx, 1, i, zl, &zx) || !split_index(k, k->stmts[m.store].idx, 1, i, m.lv, &gx) ||
        !index_plus(&zx, &gx, 0) || stride(k, zs->idx, zj->val) != 1 || (zr && rows > 1 && stride(k, zs->idx, zr->val) != m.cr))
        return -1;
    return g;
}

/* The store of a gemm loop's block that follows it (ops/gemm_packed.h
 * store_each, ops/conv_gemm.c's runs of the plane), in the form the C target
 * can feed from the microkernel's registers:
 *     DEF* loop u < MR { DEF* [loop t0 < NR step 16] { loop q < 16 (parallel) {
 *         .. acc[ca + u*cr + t0 + q] .. (the one read of the block) } } }
 * with DEFs between that do not read the block, and the vector loop's body
 * one emit_vec_loop takes. Only for AVX-512 helpers (NR a multiple of 16). */
typedef struct fused_store {
    int u, t0, q, q_end, u_end;
    kir_val load;
} fused_store;

#define FUSED_LANES 16

static bool reads_buf(const kir_kernel *k, int from, int to, int buf, kir_val except)
{
    for (int j = from; j < to; j++) {
        const kir_stmt *t = &k->stmts[j];
        if (t->kind == KS_DEF && k->vals[t->val].op == KIR_LOAD && k->vals[t->val].buf == buf && t->val != except)
            return true;
        if (t->kind == KS_STORE && t->buf == buf) return true;
    }
    return false;
}

static bool match_fused_store(const kir_kernel *k, int g, const gemm_match *m, fused_store *f)
{
    int w = FUSED_LANES;
    if (m->kg || m->b8 != SMELT_F32 || m->mr < 2 || m->nr % w || !(m->mr * (m->nr / w) + m->nr / w < 31)) return false;
    int s = m->end + 1;
    while (s < k->n_stmts && k->stmts[s].kind == KS_DEF) s++;
    if (s >= k->n_stmts || k->stmts[s].kind != KS_LOOP_BEGIN || const_trip(k, &k->stmts[s]) != m->mr ||
        reads_buf(k, m->end + 1, s, m->acc, 0))
        return false;
    f->u = s++;
    while (s < k->n_stmts && k->stmts[s].kind == KS_DEF) s++;
    if (s >= k->n_stmts || k->stmts[s].kind != KS_LOOP_BEGIN) return false;
    f->t0 = -1;
    const kir_stmt *l = &k->stmts[s];
    if (m->nr > w) { /* the columns in vectors: [0, NR) step 16 */
        if (!kir_is_const(k, l->lo) || k->vals[l->lo].imm.i != 0 || !kir_is_const(k, l->hi) ||
            k->vals[l->hi].imm.i != m->nr || !kir_is_const(k, l->step) || k->vals[l->step].imm.i != w)
            return false;
        f->t0 = s++;
        if (s >= k->n_stmts || k->stmts[s].kind != KS_LOOP_BEGIN) return false;
        l = &k->stmts[s];
    }
    if (!l->parallel || const_trip(k, l) != w) return false;
    f->q = s;
    f->q_end = emit_vec_loop(k, s);
    if (f->q_end < 0) return false;
    f->u_end = f->q_end + 1 + (f->t0 >= 0);
    for (int j = f->q_end + 1; j <= f->u_end; j++)
        if (j >= k->n_stmts || k->stmts[j].kind != KS_LOOP_END) return false;
    /* the block's one read: acc at the gemm's block index, row u, column t0 + q */
    f->load = 0;
    for (int j = f->q + 1; j < f->q_end; j++) {
        const kir_stmt *t = &k->stmts[j];
        if (t->kind == KS_DEF && k->vals[t->val].op == KIR_LOAD && k->vals[t->val].buf == m->acc) {
            if (f->load) return false;
            f->load = t->val;
        }
    }
    if (!f->load || reads_buf(k, f->u, f->u_end, m->acc, f->load)) return false;
    kir_val at = k->vals[f->load].a, u = k->stmts[f->u].val, q = k->stmts[f->q].val, t0 = f->t0 >= 0 ? k->stmts[f->t0].val : 0;
    const kir_val lv[3] = {u, t0, q};
    gemm_index lx = {0}, gx = {0};
    return split_index(k, at, 1, g, lv, &lx) && split_index(k, k->stmts[m->store].idx, 1, g, m->lv, &gx) &&
           index_plus(&lx, &gx, 0) && stride(k, at, u) == m->cr && stride(k, at, q) == 1 && (!t0 || stride(k, at, t0) == 1);
}

/* The microkernel's loop into registers g<i>_c<r>_<v> declared here (the
 * store writes them out), with explicit FMAs: kernels are compiled without
 * contraction, and the helper's x * b + c contracts to the same one rounding. */
static void put_register_block(emitter *e, int i, const gemm_match *m, int ind)
{
    strbuf *sb = e->sb;
    int nv = m->nr / FUSED_LANES;
    sb_indent(sb, ind);
    sb_printf(sb, "smelt_v16 ");
    for (int r = 0; r < m->mr; r++)
        for (int v = 0; v < nv; v++) sb_printf(sb, "%sg%d_c%d_%d = {0}", r || v ? ", " : "", i, r, v);
    sb_puts(sb, ";\n");
    sb_indent(sb, ind);
    sb_puts(sb, "{\n");
    sb_indent(sb, ind + 4);
    sb_printf(sb, "const float *restrict c = &b%d[", m->acc);
    put_index(e, &m->ca);
    sb_printf(sb, "], *restrict a = &b%d[", m->a);
    put_index(e, &m->aa);
    sb_printf(sb, "], *restrict b = &b%d[", m->b);
    put_index(e, &m->ba);
    sb_puts(sb, "];\n");
    sb_indent(sb, ind + 4);
    sb_printf(sb, "const int64_t kc = ");
    emit_put_val(e, m->kc);
    sb_puts(sb, ";\n");
    sb_indent(sb, ind + 4);
    sb_puts(sb, "if (!(");
    if (e->zero_gemm == i) emit_put_val(e, e->zero_cond);
    else sb_puts(sb, "0");
    sb_puts(sb, ")) {\n");
    for (int r = 0; r < m->mr; r++)
        for (int v = 0; v < nv; v++) {
            sb_indent(sb, ind + 8);
            sb_printf(sb, "g%d_c%d_%d = *(const smelt_v16 *)(c + %lld);\n", i, r, v, (long long)(r * m->cr + v * FUSED_LANES));
        }
    sb_indent(sb, ind + 4);
    sb_puts(sb, "}\n");
    sb_indent(sb, ind + 4);
    sb_printf(sb, "for (int64_t k = 0; k < kc; k++) {\n");
    sb_indent(sb, ind + 8);
    sb_printf(sb, "const float *bp = b + k * %lld, *ap = a + k * %lld;\n", (long long)m->bk, (long long)m->ak);
    for (int v = 0; v < nv; v++) {
        sb_indent(sb, ind + 8);
        sb_printf(sb, "const __m512 b%d = _mm512_loadu_ps(bp + %d);\n", v, v * FUSED_LANES);
    }
    for (int r = 0; r < m->mr; r++) {
        sb_indent(sb, ind + 8);
        sb_printf(sb, "{ const __m512 x = _mm512_set1_ps(ap[%lld]);", (long long)(r * m->ar));
        for (int v = 0; v < nv; v++)
            sb_printf(sb, " g%d_c%d_%d = (smelt_v16)_mm512_fmadd_ps(x, b%d, (__m512)g%d_c%d_%d);", i, r, v, v, i, r, v);
        sb_puts(sb, " }\n");
    }
    sb_indent(sb, ind + 4);
    sb_puts(sb, "}\n");
    sb_indent(sb, ind);
    sb_puts(sb, "}\n");
}

static smelt_status put_fused_store(emitter *e, const gemm_match *mp, const fused_store *fp, const unsigned char *dead, int ind,
                                    int depth);

/* Marks in dead[] the values after the gemm loop that only compute the
 * block's read address in its store (the read becomes a register): v and,
 * down its operands, each defined there with no other use. */
static void mark_address(const emitter *e, int gemm_end, const fused_store *f, kir_val v, unsigned char *dead)
{
    const kir_value *x = &e->k->vals[v];
    if (x->op == KIR_CONST || x->op == KIR_LOOPVAR || x->def <= gemm_end || x->def >= f->u_end || e->uses[v] != 1) return;
    dead[v] = 1;
    int n = x->op == KIR_LOAD ? 0 : kir_op_arity(x->op);
    const kir_val ops[3] = {x->a, x->b, x->c};
    for (int o = 0; o < n; o++) mark_address(e, gemm_end, f, ops[o], dead);
}

smelt_status emit_put_gemm_store(emitter *e, int i, int ind, int depth)
{
    const kir_kernel *k = e->k;
    gemm_match m;
    fused_store f;
    if (e->fused_gemm < 0 || !match_gemm(k, e->fused_gemm, &m) || !match_fused_store(k, e->fused_gemm, &m, &f) || f.u != i)
        return diag_fail(SMELT_ERR_INTERNAL, "kernel %d: a gemm block's store changed under the emitter", k->id);
    return put_fused_store(e, &m, &f, e->fused_dead, ind, depth);
}

static smelt_status put_fused_store(emitter *e, const gemm_match *mp, const fused_store *fp, const unsigned char *dead, int ind,
                                    int depth)
{
    const kir_kernel *k = e->k;
    const gemm_match m = *mp;
    const fused_store f = *fp;
    strbuf *sb = e->sb;
    int nv = m.nr / FUSED_LANES, dt = depth + 1, dq = depth + 1 + (f.t0 >= 0);
    e->loop_depth[k->stmts[f.u].val] = depth;
    if (f.t0 >= 0) e->loop_depth[k->stmts[f.t0].val] = dt;
    e->loop_depth[k->stmts[f.q].val] = dq;
    sb_puts(sb, "#if defined(__GNUC__) && defined(__AVX512F__)\n");
    for (int r = 0; r < m.mr; r++) {
        sb_indent(sb, ind);
        sb_printf(sb, "{\n");
        sb_indent(sb, ind + 4);
        sb_printf(sb, "const int64_t i%d = %d;\n", depth, r);
        for (int j = f.u + 1; j < (f.t0 >= 0 ? f.t0 : f.q); j++)
            if (!dead[k->stmts[j].val]) TRY(emit_put_def(e, &k->stmts[j], ind + 4));
        for (int v = 0; v < nv; v++) {
            char name[48];
            snprintf(name, sizeof name, "g%d_c%d_%d", e->fused_gemm, r, v);
            sb_indent(sb, ind + 4);
            sb_puts(sb, "{\n");
            if (f.t0 >= 0) {
                sb_indent(sb, ind + 8);
                sb_printf(sb, "const int64_t i%d = %d;\n", dt, v * FUSED_LANES);
            }
            sb_indent(sb, ind + 8);
            sb_printf(sb, "const int64_t i%d = 0; /* lane 0 of %d */\n", dq, FUSED_LANES);
            e->vec_sub = f.load, e->vec_sub_name = name;
            smelt_status st = emit_put_vec_body(e, f.q, f.q_end, FUSED_LANES, dead, ind + 8);
            e->vec_sub = 0, e->vec_sub_name = NULL;
            TRY(st);
            sb_indent(sb, ind + 4);
            sb_puts(sb, "}\n");
        }
        sb_indent(sb, ind);
        sb_puts(sb, "}\n");
    }
    sb_puts(sb, "#else\n");
    e->fused_end = f.u_end;
    e->fused_gemm = -1;
    return SMELT_OK;
}

int emit_put_gemm(emitter *e, int i, int ind)
{
    gemm_match m;
    if (!match_gemm(e->k, i, &m)) return -1;
    fused_store f;
    bool fused = e->copy < 0 && match_fused_store(e->k, i, &m, &f);
    if (fused) {
        free(e->fused_dead);
        e->fused_dead = calloc((size_t)e->k->n_vals + 1, 1);
        fused = e->fused_dead != NULL;
        if (fused) mark_address(e, m.end, &f, e->k->vals[f.load].a, e->fused_dead);
    }
    if (fused) { /* the block stays in registers for the store that follows (emit_put_gemm_store) */
        sb_puts(e->sb, "#if defined(__GNUC__) && defined(__AVX512F__) /* the block stored from registers */\n");
        put_register_block(e, i, &m, ind);
        sb_puts(e->sb, "#else\n");
        e->fused_store = f.u, e->fused_gemm = i;
    }
    sb_indent(e->sb, ind);
    if (m.kg) sb_printf(e->sb, "smelt_gemm_%s_%dx%d(&b%d[", m.kg == 2 ? "s16p" : "u8q", m.mr, m.nr, m.acc);
    else sb_printf(e->sb, "smelt_gemm_f32%s_%dx%d(&b%d[", m.b8 == SMELT_F32 ? "" : m.b8 == SMELT_U8 ? "u8" : "i8", m.mr, m.nr, m.acc);
    put_index(e, &m.ca);
    sb_printf(e->sb, "], %lld, &b%d[", (long long)m.cr, m.a);
    put_index(e, &m.aa);
    if (m.kg) sb_printf(e->sb, "], %lld, &b%d[", (long long)m.ar, m.b); /* A's k stride is kg */
    else sb_printf(e->sb, "], %lld, %lld, &b%d[", (long long)m.ar, (long long)m.ak, m.b);
    put_index(e, &m.ba);
    sb_printf(e->sb, "], %lld, ", (long long)m.bk);
    emit_put_val(e, m.kc);
    if (m.b8 != SMELT_F32) emit_put_gemm_int8_tail(e, m.a, m.b_off);
    if (!m.kg && m.b8 == SMELT_F32) {
        sb_puts(e->sb, ", ");
        if (e->zero_gemm == i) emit_put_val(e, e->zero_cond);
        else sb_puts(e->sb, "0");
    }
    sb_puts(e->sb, ");\n");
    if (fused) sb_puts(e->sb, "#endif\n");
    e->zero_gemm = -1;
    return m.end;
}

/* The register block for one vector width: `w` lanes (NR a multiple of w),
 * in GCC/clang vector types (smelt_v<w>, unaligned) rather than intrinsics:
 * <immintrin.h> alone took longer to compile than a whole model's kernels
 * (1.5 s of 1.7 on this VM), and x * b + c contracts to an FMA (the
 * helpers' fp-contract setting). */
static void put_vector_block(strbuf *sb, int mr, int nr, int w)
{
    int nv = nr / w;
    for (int r = 0; r < mr; r++)
        for (int v = 0; v < nv; v++) sb_printf(sb, "    smelt_v%d c%d_%d = {0};\n", w, r, v);
    sb_puts(sb, "    if (!zero) {\n");
    for (int r = 0; r < mr; r++)
        for (int v = 0; v < nv; v++)
            sb_printf(sb, "        c%d_%d = *(const smelt_v%d *)(c + %d * cr + %d);\n", r, v, w, r, v * w);
    sb_puts(sb, "    }\n");
    sb_puts(sb, "    for (int64_t k = 0; k < kc; k++) {\n        const float *bp = b + k * bk, *ap = a + k * ak;\n");
    for (int v = 0; v < nv; v++) sb_printf(sb, "        smelt_v%d b%d = *(const smelt_v%d *)(bp + %d);\n", w, v, w, v * w);
    for (int r = 0; r < mr; r++) {
        sb_printf(sb, "        { float s = ap[%d * ar]; smelt_v%d x = {s", r, w);
        for (int l = 1; l < w; l++) sb_puts(sb, ", s");
        sb_puts(sb, "};");
        for (int v = 0; v < nv; v++) sb_printf(sb, " c%d_%d = x * b%d + c%d_%d;", r, v, v, r, v);
        sb_puts(sb, " }\n");
    }
    sb_puts(sb, "    }\n");
    for (int r = 0; r < mr; r++)
        for (int v = 0; v < nv; v++) sb_printf(sb, "    *(smelt_v%d *)(c + %d * cr + %d) = c%d_%d;\n", w, r, v * w, r, v);
}

/* smelt_gemm_f32_<mr>x<nr>: c[r*cr + j] += sum over k of a[r*ar + k*ak] *
 * b[k*bk + j], or, with zero set, = that sum (c only written: its zeroing
 * and the load of zeros back cost as much as the multiply-adds at K = 16). */
static void put_helper(strbuf *sb, int mr, int nr)
{
    sb_printf(sb,
              "static inline void smelt_gemm_f32_%dx%d(float *restrict c, int64_t cr, const float *restrict a, int64_t ar,\n"
              "    int64_t ak, const float *restrict b, int64_t bk, int64_t kc, int zero)\n{\n",
              mr, nr);
    sb_puts(sb, "#if defined(__clang__)\n#pragma clang fp contract(fast)\n#endif\n");
    if (nr % 16 == 0 && mr * (nr / 16) + nr / 16 < 31) {
        sb_puts(sb, "#if defined(__GNUC__) && defined(__AVX512F__)\n");
        put_vector_block(sb, mr, nr, 16);
        sb_puts(sb, "#elif defined(__GNUC__) && defined(__AVX2__) && defined(__FMA__)\n");
    } else {
        sb_puts(sb, "#if defined(__GNUC__) && defined(__AVX2__) && defined(__FMA__)\n");
    }
    if (nr % 8 == 0 && mr * (nr / 8) + nr / 8 < 16)
        put_vector_block(sb, mr, nr, 8);
    else
        sb_printf(sb, "    smelt_gemm_f32_loops(c, cr, a, ar, ak, b, bk, kc, %d, %d, zero);\n", mr, nr);
    sb_puts(sb, "#else\n");
    sb_printf(sb, "    smelt_gemm_f32_loops(c, cr, a, ar, ak, b, bk, kc, %d, %d, zero);\n", mr, nr);
    sb_puts(sb, "#endif\n}\n");
}

/* The plain form, for CPUs without the vector forms (and blocks too large for
 * their registers). */
static const char gemm_loops[] =
    "static inline void smelt_gemm_f32_loops(float *restrict c, int64_t cr, const float *restrict a, int64_t ar,\n"
    "    int64_t ak, const float *restrict b, int64_t bk, int64_t kc, int mr, int nr, int zero)\n"
    "{\n"
    "    if (zero)\n"
    "        for (int r = 0; r < mr; r++)\n"
    "            for (int j = 0; j < nr; j++) c[r * cr + j] = 0.0f;\n"
    "    for (int64_t k = 0; k < kc; k++)\n"
    "        for (int r = 0; r < mr; r++)\n"
    "            for (int j = 0; j < nr; j++) c[r * cr + j] += a[r * ar + k * ak] * b[k * bk + j];\n"
    "}\n";

int emit_gemm_shapes(const char *body, const char *tok, int seen[][2], int max)
{
    int n = 0;
    size_t len = strlen(tok);
    for (const char *p = body; (p = strstr(p, tok)); p += len) {
        int mr, nr;
        if (sscanf(p + len, "%dx%d(", &mr, &nr) != 2) continue;
        bool dup = false;
        for (int i = 0; i < n; i++) dup |= seen[i][0] == mr && seen[i][1] == nr;
        if (dup || n == max) continue;
        seen[n][0] = mr, seen[n][1] = nr;
        n++;
    }
    return n;
}

void emit_put_gemm_helpers(strbuf *sb, const char *body)
{
    emit_put_gemm_int8_helpers(sb, body);
    emit_put_gemm_pairs_helpers(sb, body);
    int seen[64][2], n = emit_gemm_shapes(body, "smelt_gemm_f32_", seen, 64);
    if (!n) return;
    sb_puts(sb, "\n#if defined(__GNUC__) && !defined(__clang__)\n#pragma GCC push_options\n"
                "#pragma GCC optimize(\"fp-contract=fast\")\n#endif\n"
                "#if defined(__GNUC__)\n"
                "typedef float smelt_v16 __attribute__((vector_size(64), aligned(4)));\n"
                "typedef float smelt_v8 __attribute__((vector_size(32), aligned(4)));\n#endif\n");
    sb_puts(sb, gemm_loops);
    for (int i = 0; i < n; i++) put_helper(sb, seen[i][0], seen[i][1]);
    sb_puts(sb, "#if defined(__GNUC__) && !defined(__clang__)\n#pragma GCC pop_options\n#endif\n");
}
