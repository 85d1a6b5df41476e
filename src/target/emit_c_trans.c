/*
 * emit_c_trans.c — the C emitter's form of a transpose loop (kir.h,
 * "Transposing copies"): rows in blocks of 16, each block one call of
 * smelt_trans_f32 per store, which copies a 16x16 block as 16 vector loads,
 * an in-register transpose (unpacks, in-lane shuffles, then 128-bit lane
 * shuffles) and 16 vector stores (AVX-512), or 8x8 blocks the same way with
 * 8-lane vectors (AVX), where the loop as written is a scalar load and store
 * per element that the C compiler does not vectorize (the loads step S along
 * the inner loop). Blocks that are not whole (a tail of rows or of the inner
 * loop) and hosts without AVX copy element by element. On elementwise_dag
 * (bench/models.py: a staged tile of two sources per 128x128 tile, tiles.c)
 * at 1 thread, the kernel by hand, min of 6 rounds of 20 runs: 6.02 ms with
 * the loop as written (scalar), 5.89 with the loop split into one loop per
 * store (which GCC vectorizes), 5.35 with these calls. A loop of one store
 * is left as written (match_trans).
 *
 * requires: a kernel that passes kir_verify; the C dialect for this host.
 * guarantees: the same copy as the loop (it moves floats, no arithmetic).
 */
#include "target/emit_c_impl.h"

const char emit_trans_helper[] =
    "\n#if defined(__AVX__)\n#include <immintrin.h>\n#endif\n"
    "#if defined(__AVX512F__)\n"
    "static inline void smelt_trans16_f32(float *restrict d, int64_t ds, const float *restrict s, int64_t ss)\n"
    "{\n"
    "    __m512 r[16], t[16];\n"
    "    for (int i = 0; i < 16; i++) r[i] = _mm512_loadu_ps(s + i * ss);\n"
    "    for (int i = 0; i < 16; i += 2) {\n"
    "        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);\n"
    "        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);\n"
    "    }\n"
    "    for (int i = 0; i < 16; i += 4) { /* r[4g + c], lane l: column 4l + c of rows 4g .. 4g + 3 */\n"
    "        r[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);\n"
    "        r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xee);\n"
    "        r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);\n"
    "        r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xee);\n"
    "    }\n"
    "    for (int c = 0; c < 4; c++) {\n"
    "        t[c] = _mm512_shuffle_f32x4(r[c], r[c + 4], 0x88);\n"
    "        t[c + 4] = _mm512_shuffle_f32x4(r[c], r[c + 4], 0xdd);\n"
    "        t[c + 8] = _mm512_shuffle_f32x4(r[c + 8], r[c + 12], 0x88);\n"
    "        t[c + 12] = _mm512_shuffle_f32x4(r[c + 8], r[c + 12], 0xdd);\n"
    "    }\n"
    "    for (int c = 0; c < 4; c++) { /* column 4l + c: lane l of r[c + 4l] */\n"
    "        r[c] = _mm512_shuffle_f32x4(t[c], t[c + 8], 0x88);\n"
    "        r[c + 4] = _mm512_shuffle_f32x4(t[c + 4], t[c + 12], 0x88);\n"
    "        r[c + 8] = _mm512_shuffle_f32x4(t[c], t[c + 8], 0xdd);\n"
    "        r[c + 12] = _mm512_shuffle_f32x4(t[c + 4], t[c + 12], 0xdd);\n"
    "    }\n"
    "    for (int i = 0; i < 16; i++) _mm512_storeu_ps(d + i * ds, r[i]);\n"
    "}\n"
    "#endif\n"
    "#if defined(__AVX__)\n"
    "static inline void smelt_trans8_f32(float *restrict d, int64_t ds, const float *restrict s, int64_t ss)\n"
    "{\n"
    "    __m256 r[8], t[8];\n"
    "    for (int i = 0; i < 8; i++) r[i] = _mm256_loadu_ps(s + i * ss);\n"
    "    for (int i = 0; i < 8; i += 2) {\n"
    "        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);\n"
    "        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);\n"
    "    }\n"
    "    for (int i = 0; i < 8; i += 4) {\n"
    "        r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);\n"
    "        r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);\n"
    "        r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);\n"
    "        r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);\n"
    "    }\n"
    "    for (int c = 0; c < 4; c++) {\n"
    "        _mm256_storeu_ps(d + c * ds, _mm256_permute2f128_ps(r[c], r[c + 4], 0x20));\n"
    "        _mm256_storeu_ps(d + (c + 4) * ds, _mm256_permute2f128_ps(r[c], r[c + 4], 0x31));\n"
    "    }\n"
    "}\n"
    "#endif\n"
    "/* d[r * ds + q] = s[r + q * ss] for r < nr, q < nq */\n"
    "static inline void smelt_trans_f32(float *restrict d, int64_t ds, const float *restrict s, int64_t ss, int64_t nr,\n"
    "                                   int64_t nq)\n"
    "{\n"
    "#if defined(__AVX512F__)\n"
    "    if (nr == 16 && nq == 16) {\n"
    "        smelt_trans16_f32(d, ds, s, ss);\n"
    "        return;\n"
    "    }\n"
    "#endif\n"
    "#if defined(__AVX__)\n"
    "    if (nr % 8 == 0 && nq % 8 == 0) {\n"
    "        for (int64_t r = 0; r < nr; r += 8)\n"
    "            for (int64_t q = 0; q < nq; q += 8) smelt_trans8_f32(d + r * ds + q, ds, s + r + q * ss, ss);\n"
    "        return;\n"
    "    }\n"
    "#endif\n"
    "    for (int64_t r = 0; r < nr; r++)\n"
    "        for (int64_t q = 0; q < nq; q++) d[r * ds + q] = s[r + q * ss];\n"
    "}\n";

#define TRANS_ROWS 16     /* rows per call */
#define TRANS_MAX_STORES 8

/* The parts of transpose loop i (kir.h): its inner loop's LOOP_BEGIN, its
 * LOOP_END, and each store's strides. */
typedef struct trans_loop {
    int inner, end;
    int st[TRANS_MAX_STORES], n;
    int64_t ds[TRANS_MAX_STORES], ss[TRANS_MAX_STORES];
} trans_loop;

static bool reads(const kir_value *v, kir_val x) { return v->a == x || v->b == x || v->c == x; }

/* Transpose loop i in the form kir.h gives, into *t; false for any other. */
static bool match_trans(const kir_kernel *k, int i, trans_loop *t)
{
    const kir_stmt *s = &k->stmts[i];
    kir_val r = s->val;
    int j = i + 1;
    for (; j < k->n_stmts && k->stmts[j].kind == KS_DEF; j++) /* the row's index arithmetic */
        if (k->vals[k->stmts[j].val].op == KIR_LOAD || k->vals[k->stmts[j].val].type != SMELT_I64) return false;
    if (j >= k->n_stmts || k->stmts[j].kind != KS_LOOP_BEGIN) return false;
    const kir_stmt *in = &k->stmts[j];
    const kir_value *step = &k->vals[in->step];
    if (step->op != KIR_CONST || step->imm.i != 1 || kir_stride(k, in->lo, r) != 0 || kir_stride(k, in->hi, r) != 0)
        return false;
    kir_val q = in->val;
    t->inner = j;
    t->n = 0;
    for (j++; j < k->n_stmts && k->stmts[j].kind != KS_LOOP_END; j++) {
        const kir_stmt *b = &k->stmts[j];
        if (b->kind == KS_STORE) {
            if (t->n == TRANS_MAX_STORES) return false;
            t->st[t->n++] = j;
        } else if (b->kind != KS_DEF) {
            return false;
        } else if (k->vals[b->val].op != KIR_LOAD && k->vals[b->val].type != SMELT_I64) {
            return false;
        }
    }
    /* One store is left to the C compiler: GCC vectorizes that loop itself (a network of
     * two-source permutes), and on elementwise_chain (one staged source, rows 16 KiB apart) that
     * ran faster than these calls, min of 6 rounds at 1 thread 9.11 ms against 11.10; with two
     * stores it leaves the loop scalar (elementwise_dag, above). */
    if (j + 1 >= k->n_stmts || k->stmts[j + 1].kind != KS_LOOP_END || t->n < 2) return false;
    t->end = j + 1;
    for (int a = 0; a < t->n; a++) {
        const kir_stmt *st = &k->stmts[t->st[a]];
        const kir_value *v = &k->vals[st->val];
        if (v->op != KIR_LOAD || v->type != SMELT_F32 || k->vals[st->val].def <= t->inner || st->buf == v->buf ||
            k->bufs[st->buf].type != SMELT_F32 || k->bufs[v->buf].type != SMELT_F32 || kir_stride(k, st->idx, q) != 1 ||
            kir_stride(k, v->a, r) != 1)
            return false;
        t->ds[a] = kir_stride(k, st->idx, r);
        t->ss[a] = kir_stride(k, v->a, q);
        if (t->ds[a] == KIR_STRIDE_UNKNOWN || t->ds[a] <= 0 || t->ss[a] == KIR_STRIDE_UNKNOWN) return false;
        /* no other store writes the buffer this one reads */
        for (int b = 0; b < t->n; b++)
            if (k->stmts[t->st[b]].buf == v->buf) return false;
    }
    /* the loads feed only the stores: no DEF in the body reads them */
    for (int j2 = t->inner + 1; j2 < t->end - 1; j2++) {
        const kir_value *v = &k->vals[k->stmts[j2].val];
        if (k->stmts[j2].kind == KS_DEF && v->op != KIR_LOAD)
            for (int a = 0; a < t->n; a++)
                if (reads(v, k->stmts[t->st[a]].val)) return false;
    }
    return true;
}

int emit_put_trans(emitter *e, int i, int ind, int depth)
{
    const kir_kernel *k = e->k;
    const kir_stmt *s = &k->stmts[i];
    trans_loop t;
    if (!match_trans(k, i, &t)) return -1;
    const kir_stmt *in = &k->stmts[t.inner];
    strbuf *sb = e->sb;
    e->loop_depth[s->val] = depth;
    e->loop_depth[in->val] = depth + 1;
    sb_indent(sb, ind);
    sb_printf(sb, "for (int64_t i%d = ", depth);
    emit_put_val(e, s->lo);
    sb_printf(sb, "; i%d < ", depth);
    emit_put_val(e, s->hi);
    sb_printf(sb, "; i%d += %d) {\n", depth, TRANS_ROWS);
    for (int j = i + 1; j < t.inner; j++)
        if (emit_put_def(e, &k->stmts[j], ind + 4) != SMELT_OK) return -1;
    sb_indent(sb, ind + 4);
    sb_printf(sb, "const int64_t tr%d = ", depth);
    emit_put_val(e, s->hi);
    sb_printf(sb, " - i%d < %d ? ", depth, TRANS_ROWS);
    emit_put_val(e, s->hi);
    sb_printf(sb, " - i%d : %d;\n", depth, TRANS_ROWS);
    sb_indent(sb, ind + 4);
    sb_printf(sb, "const int64_t i%d = ", depth + 1);
    emit_put_val(e, in->lo);
    sb_puts(sb, ";\n");
    /* the index values at q = lo (the loads are the helper's) */
    for (int j = t.inner + 1; j < t.end - 1; j++)
        if (k->stmts[j].kind == KS_DEF && k->vals[k->stmts[j].val].op != KIR_LOAD &&
            emit_put_def(e, &k->stmts[j], ind + 4) != SMELT_OK)
            return -1;
    for (int a = 0; a < t.n; a++) {
        const kir_stmt *st = &k->stmts[t.st[a]];
        const kir_value *v = &k->vals[st->val];
        sb_indent(sb, ind + 4);
        sb_printf(sb, "smelt_trans_f32(&b%d[", st->buf);
        emit_put_val(e, st->idx);
        sb_printf(sb, "], %lld, &b%d[", (long long)t.ds[a], v->buf);
        emit_put_val(e, v->a);
        sb_printf(sb, "], %lld, tr%d, ", (long long)t.ss[a], depth);
        emit_put_val(e, in->hi);
        sb_printf(sb, " - i%d);\n", depth + 1);
    }
    sb_indent(sb, ind);
    sb_puts(sb, "}\n");
    return t.end;
}
