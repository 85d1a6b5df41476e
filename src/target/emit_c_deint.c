/*
 * emit_c_deint.c — the C emitter's form of a deinterleave loop (kir.h,
 * "Deinterleaving"): one call of smelt_deint2_f32, which splits the even and
 * odd floats of a run with two shuffles and a lane permute per eight outputs
 * of each (AVX2), where the compiler's own vectorization of the two stride-2
 * loads, two permutes and a blend per vector, or a loop per plane that reads
 * the run twice, cost about a third of a stride-2 depthwise conv (ops/conv_depthwise.c).
 * A run that is no multiple of 8 ends with one more vector step over its last
 * 8 outputs, rewriting a few with the same values (the destinations are never
 * the source: match_deint), not a scalar loop: a 3x3 s2 pad 1 conv's run is
 * OW - 1 long (55 at 112 -> 56, where the scalar tail of 7 was as long as the
 * six vector steps). Conv + HardSwish alone, min (median) of 5 interleaved
 * rounds of 500 runs, 1 thread: 32 ch 112 -> 56 0.0997 (0.1024) -> 0.0951
 * (0.0961) ms, 64 ch 56 -> 28 0.0577 (0.0583) -> 0.0552 (0.0566).
 *
 * requires: a kernel that passes kir_verify; the C dialect for this host.
 * guarantees: the same copy as the loop (it moves floats, no arithmetic).
 */
#include "target/emit_c_impl.h"

const char emit_deint_helper[] =
    "\n#if defined(__AVX2__)\n#include <immintrin.h>\n#endif\n"
    "static inline void smelt_deint2_f32(float *restrict d0, float *restrict d1, const float *s0, const float *s1,\n"
    "                                    int64_t n)\n"
    "{\n"
    "    int64_t q = 0;\n"
    "#if defined(__AVX2__)\n"
    "    if (s1 == s0 + 1)\n"
    "        for (; q + 8 <= n; q += 8) {\n"
    "            __m256 a = _mm256_loadu_ps(s0 + 2 * q), b = _mm256_loadu_ps(s0 + 2 * q + 8);\n"
    "            __m256d e = _mm256_castps_pd(_mm256_shuffle_ps(a, b, 0x88)), o = _mm256_castps_pd(_mm256_shuffle_ps(a, b, 0xdd));\n"
    "            _mm256_storeu_ps(d0 + q, _mm256_castpd_ps(_mm256_permute4x64_pd(e, 0xd8)));\n"
    "            _mm256_storeu_ps(d1 + q, _mm256_castpd_ps(_mm256_permute4x64_pd(o, 0xd8)));\n"
    "            if (q + 8 < n && q + 16 > n) q = n - 16;\n"
    "        }\n"
    "#endif\n"
    "    for (; q < n; q++) {\n"
    "        d0[q] = s0[2 * q];\n"
    "        d1[q] = s1[2 * q];\n"
    "    }\n"
    "}\n";

/* Deinterleave loop i in the form kir.h gives: its LOOP_END, its two stores
 * in *st (each an f32 load at stride 2 of one f32 buffer, stored at stride
 * 1), every other statement an integer DEF; -1 for any other body. */
static int match_deint(const kir_kernel *k, int i, int st[2])
{
    const kir_stmt *s = &k->stmts[i];
    kir_val q = s->val;
    int n = 0, end = -1, src = -1;
    for (int j = i + 1; j < k->n_stmts && end < 0; j++) {
        const kir_stmt *t = &k->stmts[j];
        if (t->kind == KS_LOOP_END) end = j;
        else if (t->kind == KS_STORE && n < 2) st[n++] = j;
        else if (t->kind != KS_DEF) return -1;
        else if (k->vals[t->val].op != KIR_LOAD && k->vals[t->val].type != SMELT_I64) return -1;
    }
    if (end < 0 || n != 2) return -1;
    for (int a = 0; a < 2; a++) {
        const kir_stmt *t = &k->stmts[st[a]];
        const kir_value *v = &k->vals[t->val];
        if (v->op != KIR_LOAD || v->type != SMELT_F32 || k->bufs[t->buf].type != SMELT_F32 || t->buf == v->buf ||
            k->bufs[v->buf].type != SMELT_F32 || (src >= 0 && v->buf != src) || kir_stride(k, t->idx, q) != 1 ||
            kir_stride(k, v->a, q) != 2)
            return -1;
        src = v->buf;
    }
    /* the loads feed only the stores: no DEF in the body reads them */
    for (int j = i + 1; j < end; j++) {
        const kir_value *v = &k->vals[k->stmts[j].val];
        if (k->stmts[j].kind == KS_DEF && v->op != KIR_LOAD)
            for (int a = 0; a < 2; a++)
                if (v->a == k->stmts[st[a]].val || v->b == k->stmts[st[a]].val || v->c == k->stmts[st[a]].val) return -1;
    }
    return end;
}

int emit_put_deint(emitter *e, int i, int ind, int depth)
{
    const kir_kernel *k = e->k;
    const kir_stmt *s = &k->stmts[i];
    int st[2];
    int end = match_deint(k, i, st);
    if (end < 0) return -1;
    strbuf *sb = e->sb;
    e->loop_depth[s->val] = depth;
    sb_indent(sb, ind);
    sb_puts(sb, "{\n");
    sb_indent(sb, ind + 4);
    sb_printf(sb, "const int64_t i%d = ", depth);
    emit_put_val(e, s->lo);
    sb_puts(sb, ";\n");
    /* the index values at q = lo (the loads are the helper's) */
    for (int j = i + 1; j < end; j++)
        if (k->stmts[j].kind == KS_DEF && k->vals[k->stmts[j].val].op != KIR_LOAD &&
            emit_put_def(e, &k->stmts[j], ind + 4) != SMELT_OK)
            return -1;
    sb_indent(sb, ind + 4);
    sb_puts(sb, "smelt_deint2_f32(");
    for (int a = 0; a < 2; a++) {
        sb_printf(sb, "&b%d[", k->stmts[st[a]].buf);
        emit_put_val(e, k->stmts[st[a]].idx);
        sb_puts(sb, "], ");
    }
    for (int a = 0; a < 2; a++) {
        const kir_value *v = &k->vals[k->stmts[st[a]].val];
        sb_printf(sb, "&b%d[", v->buf);
        emit_put_val(e, v->a);
        sb_puts(sb, "], ");
    }
    emit_put_val(e, s->hi);
    sb_printf(sb, " - i%d);\n", depth);
    sb_indent(sb, ind);
    sb_puts(sb, "}\n");
    return end;
}
