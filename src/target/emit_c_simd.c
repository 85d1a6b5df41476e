/*
 * emit_c_simd.c — the C emitter's vector forms: stream loops as non-temporal
 * stores, loops of 16 (8) f32 lanes as AVX-512 (AVX2+FMA) intrinsics beside
 * their scalar loop, written from one table row per vector ISA, and loops
 * around those with several iterations interleaved. All are
 * guarded by the compiler's target macros, so the same source still compiles
 * for any CPU.
 *
 * requires: a kernel that passes kir_verify; the C dialect.
 * guarantees: the same results as the scalar code, bit for bit (the unit
 *             tests run both against the interpreter).
 */
#include "target/emit_c_impl.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* Stream loops' copies (kir.h, "Streaming"), for C programs that have one:
 * non-temporal vector stores where the destination is aligned for them (the
 * widest vectors the compiler was asked for), a plain copy for the rest and on
 * other CPUs. Kernels that call it end with an sfence, so their stores are
 * visible before the thread pool reports the workgroup done. */
const char emit_stream_helper[] =
    "\n#if defined(__SSE__)\n#include <immintrin.h>\n#endif\n"
    "static inline void smelt_stream_f32(float *restrict d, const float *restrict s, int64_t n)\n"
    "{\n"
    "    int64_t i = 0;\n"
    "#if defined(__AVX512F__)\n"
    "    if (((uintptr_t)d & 63) == 0)\n"
    "        for (; i + 16 <= n; i += 16) _mm512_stream_ps(d + i, _mm512_loadu_ps(s + i));\n"
    "#elif defined(__AVX__)\n"
    "    if (((uintptr_t)d & 31) == 0)\n"
    "        for (; i + 8 <= n; i += 8) _mm256_stream_ps(d + i, _mm256_loadu_ps(s + i));\n"
    "#elif defined(__SSE__)\n"
    "    if (((uintptr_t)d & 15) == 0)\n"
    "        for (; i + 4 <= n; i += 4) _mm_stream_ps(d + i, _mm_loadu_ps(s + i));\n"
    "#endif\n"
    "    for (; i < n; i++) d[i] = s[i];\n"
    "}\n";

/* ---- vector ISAs ----------------------------------------------------------
 * The vector loops (below) and their helpers are written from one
 * description per vector ISA: a row of this table names its lanes, the
 * compiler macros that have it, its types and intrinsic spellings, and the
 * few lines that differ (a compare's mask and the blend it drives, exp's
 * final 2^n). A loop of `lanes` f32 lanes (the lowering makes panels of the
 * host's vector width: 16 on AVX-512, 8 on AVX2) is emitted with the row of
 * those lanes, under its guard. */
typedef struct vec_isa {
    int lanes;
    const char *guard;        /* preprocessor condition that has the ISA */
    const char *vt, *mt;      /* float vector and compare mask types */
    const char *p, *si;       /* intrinsic prefix ("_mm512_") and integer vector suffix ("si512") */
    const char *cmp;          /* compare into a mask: cmp(a, b, _CMP_..) */
    const char *blend;        /* m ? t : f, for mask m */
    const char *pow2n;        /* exp's last step: return p * 2^n, rounded as the scalar (p * s1) * s2 */
    const char *round;        /* round to nearest even, as rintf in the default rounding mode: round(a, mode) */
    const char *two_n;        /* tanh's 2^n for n in [0, 58], from t (bits 0x4b400000 + n) or n */
    const char *minmax;       /* smelt_vW_max/min: smelt_maxf/minf in two compares and a blend (and an AND) */
    int ilv_copies;           /* interleaved iterations (see "interleaved loops") */
} vec_isa;

static const vec_isa vec_isas[] = {
    /* p * 2^n as one vscalefps, rounded once: the scalar's first product p * s1 is exact */
    {16, "defined(__AVX512F__)", "__m512", "__mmask16", "_mm512_", "si512", "_mm512_cmp_ps_mask",
     "_mm512_mask_blend_ps(m, f, t)", "    return _mm512_scalef_ps(p, n);\n", "_mm512_roundscale_ps",
     "_mm512_scalef_ps(_mm512_set1_ps(1.0f), n)",
     "static inline __m512 smelt_v16_max(__m512 a, __m512 b)\n"
     "{\n    return _mm512_mask_blend_ps(_mm512_mask_cmp_ps_mask(_mm512_cmp_ps_mask(a, a, _CMP_ORD_Q), b, a, _CMP_NLE_UQ), a, b);\n}\n"
     "static inline __m512 smelt_v16_min(__m512 a, __m512 b)\n"
     "{\n    return _mm512_mask_blend_ps(_mm512_mask_cmp_ps_mask(_mm512_cmp_ps_mask(a, a, _CMP_ORD_Q), b, a, _CMP_NGE_UQ), a, b);\n}\n",
     8},
    /* AVX2 has no scalef: the scalar's six integer ops on t's bits and its two multiplies */
    {8, "defined(__AVX2__) && defined(__FMA__)", "__m256", "__m256", "_mm256_", "si256", "_mm256_cmp_ps",
     "_mm256_blendv_ps(f, t, m)",
     "    const __m256i bt = _mm256_castps_si256(t), bias = _mm256_set1_epi32((int)(254u - 0x4b400000u));\n"
     "    const __m256i s1 = _mm256_slli_epi32(_mm256_srli_epi32(_mm256_add_epi32(bt, bias), 1), 23);\n"
     "    const __m256i s2 = _mm256_sub_epi32(_mm256_add_epi32(_mm256_slli_epi32(bt, 23), _mm256_slli_epi32(bias, 23)), s1);\n"
     "    return _mm256_mul_ps(_mm256_mul_ps(p, _mm256_castsi256_ps(s1)), _mm256_castsi256_ps(s2));\n", "_mm256_round_ps",
     "_mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_castps_si256(t), _mm256_set1_epi32(127)), 23))",
     "static inline __m256 smelt_v8_max(__m256 a, __m256 b)\n"
     "{\n    return _mm256_blendv_ps(a, b, _mm256_and_ps(_mm256_cmp_ps(a, a, _CMP_ORD_Q), _mm256_cmp_ps(b, a, _CMP_NLE_UQ)));\n}\n"
     "static inline __m256 smelt_v8_min(__m256 a, __m256 b)\n"
     "{\n    return _mm256_blendv_ps(a, b, _mm256_and_ps(_mm256_cmp_ps(a, a, _CMP_ORD_Q), _mm256_cmp_ps(b, a, _CMP_NGE_UQ)));\n}\n",
     8},
};
#define N_VEC_ISAS ((int)(sizeof vec_isas / sizeof vec_isas[0]))

/* The row for loops of `lanes` lanes, or NULL. */
static const vec_isa *vec_isa_for(int64_t lanes)
{
    for (int r = 0; r < N_VEC_ISAS; r++)
        if (vec_isas[r].lanes == lanes) return &vec_isas[r];
    return NULL;
}

/* The vector loops' helpers, written once for every row (@ marks a row's
 * spelling: @T vector type, @M mask type, @P prefix, @S integer suffix, @W
 * lanes, @A alignment mask, @C compare, @B blend, @E exp's 2^n, @N tanh's
 * 2^n, @X max and min). exp, tanh and erf are mathf.inc's op for op, so they
 * give the same bits as the scalar code (tanh's 2^n, an exact power of two,
 * is one vscalefps on AVX-512 where the scalar has two integer ops). exp's
 * clamp is two float compares where mathf.inc has two integer mins on the
 * bits: the same result for every number, and MINPS(89, x) returns x when x
 * is NaN, so a NaN runs through the polynomial and comes out as itself
 * (quieted), as smelt_expf returns it. smelt_v@W_max/min are
 * smelt_maxf/minf, which take b exactly where a is a number and b > a
 * (b < a) or b is NaN: !(b <= a) (!(b >= a)) is that where a is a number,
 * so one compare under a's ordered mask and a blend, which keep a on ties
 * (signed zeros agree) and a NaN a. Three vector operations (four on AVX2,
 * whose compares give vectors to AND) where MAXPS with both NaN cases
 * blended in took five: elementwise_dag's kernel with its inputs in cache,
 * 4.65 -> 4.50 ms at 1 thread (min of 60 runs, A/B interleaved; from DRAM
 * 5.41 -> 5.34). */
static const char vec_helper_template[] =
    "\n#if @G\n#include <immintrin.h>\n"
    "static inline @T smelt_v@W_neg(@T a)\n"
    "{\n    return @Pcast@S_ps(@Pxor_@S(@Pcastps_@S(a), @Pset1_epi32((int)0x80000000u)));\n}\n"
    "static inline @T smelt_v@W_nabs(@T a)\n"
    "{\n    return @Pcast@S_ps(@Por_@S(@Pcastps_@S(a), @Pset1_epi32((int)0x80000000u)));\n}\n"
    "static inline @T smelt_v@W_abs(@T a)\n"
    "{\n    return @Pcast@S_ps(@Pand_@S(@Pcastps_@S(a), @Pset1_epi32(0x7fffffff)));\n}\n"
    "static inline void smelt_stream_v@W(float *d, @T v)\n"
    "{\n    if (((uintptr_t)d & @A) == 0) @Pstream_ps(d, v);\n    else @Pstoreu_ps(d, v);\n}\n"
    "static inline @T smelt_v@W_if(@M m, @T t, @T f) { return @B; }\n"
    "@X"
    "static inline @T smelt_expf_v@W_in(@T xc) /* xc in [-104, 89], or NaN */\n"
    "{\n"
    "    @T t = @Pfmadd_ps(xc, @Pset1_ps(1.44269504088896341f), @Pset1_ps(12582912.0f));\n"
    "    @T n = @Psub_ps(t, @Pset1_ps(12582912.0f));\n"
    "    @T r = @Pfnmadd_ps(n, @Pset1_ps(0.693145751953125f), xc);\n"
    "    r = @Pfnmadd_ps(n, @Pset1_ps(1.428606765330187045e-06f), r);\n"
    "    @T p = @Pset1_ps(1.9857784413684985e-4f);\n"
    "    p = @Pfmadd_ps(p, r, @Pset1_ps(1.393360437224704e-3f));\n"
    "    p = @Pfmadd_ps(p, r, @Pset1_ps(8.333360749251768e-3f));\n"
    "    p = @Pfmadd_ps(p, r, @Pset1_ps(4.166646546668734e-2f));\n"
    "    p = @Pfmadd_ps(p, r, @Pset1_ps(1.6666666532226573e-1f));\n"
    "    p = @Pfmadd_ps(p, r, @Pset1_ps(5.000000013385602e-1f));\n"
    "    p = @Pfmadd_ps(p, @Pmul_ps(r, r), r);\n"
    "    p = @Padd_ps(p, @Pset1_ps(1.0f));\n"
    "@E"
    "}\n"
    "static inline @T smelt_expf_v@W(@T x)\n"
    "{\n"
    "    return smelt_expf_v@W_in(@Pmax_ps(@Pset1_ps(-104.0f), @Pmin_ps(@Pset1_ps(89.0f), x)));\n"
    "}\n"
    "static inline @T smelt_expf_v@W_neg(@T y) /* e^-y: smelt_expf_v@W(-y) with r negated, the same bits */\n"
    "{\n"
    "    @T yc = @Pmin_ps(@Pset1_ps(104.0f), @Pmax_ps(@Pset1_ps(-89.0f), y));\n"
    "    @T t = @Pfnmadd_ps(yc, @Pset1_ps(1.44269504088896341f), @Pset1_ps(12582912.0f));\n"
    "    @T n = @Psub_ps(t, @Pset1_ps(12582912.0f));\n"
    "    @T r = @Pfmadd_ps(n, @Pset1_ps(0.693145751953125f), yc);\n"
    "    r = @Pfmadd_ps(n, @Pset1_ps(1.428606765330187045e-06f), r);\n"
    "    @T p = @Pset1_ps(1.9857784413684985e-4f);\n"
    "    p = @Pfnmadd_ps(p, r, @Pset1_ps(1.393360437224704e-3f));\n"
    "    p = @Pfnmadd_ps(p, r, @Pset1_ps(8.333360749251768e-3f));\n"
    "    p = @Pfnmadd_ps(p, r, @Pset1_ps(4.166646546668734e-2f));\n"
    "    p = @Pfnmadd_ps(p, r, @Pset1_ps(1.6666666532226573e-1f));\n"
    "    p = @Pfnmadd_ps(p, r, @Pset1_ps(5.000000013385602e-1f));\n"
    "    p = @Pfmsub_ps(p, @Pmul_ps(r, r), r);\n"
    "    p = @Padd_ps(p, @Pset1_ps(1.0f));\n"
    "@E"
    "}\n"
    "static inline @T smelt_expf_v@W_le0(@T x) /* x <= 0, or NaN */\n"
    "{\n"
    "    return smelt_expf_v@W_in(@Pmax_ps(@Pset1_ps(-104.0f), x));\n"
    "}\n"
    "static inline @T smelt_tanhf_v@W(@T x)\n"
    "{\n"
    "    @T u = @Pmin_ps(@Pset1_ps(40.0f), @Padd_ps(smelt_v@W_abs(x), smelt_v@W_abs(x)));\n"
    "    @T t = @Pfmadd_ps(u, @Pset1_ps(1.44269504088896341f), @Pset1_ps(12582912.0f));\n"
    "    @T n = @Psub_ps(t, @Pset1_ps(12582912.0f));\n"
    "    @T r = @Pfnmadd_ps(n, @Pset1_ps(0.693147182464599609375f), u);\n"
    "    @T p = @Pset1_ps(1.9857784413684985e-4f);\n"
    "    p = @Pfmadd_ps(p, r, @Pset1_ps(1.393360437224704e-3f));\n"
    "    p = @Pfmadd_ps(p, r, @Pset1_ps(8.333360749251768e-3f));\n"
    "    p = @Pfmadd_ps(p, r, @Pset1_ps(4.166646546668734e-2f));\n"
    "    p = @Pfmadd_ps(p, r, @Pset1_ps(1.6666666532226573e-1f));\n"
    "    p = @Pfmadd_ps(p, r, @Pset1_ps(5.000000013385602e-1f));\n"
    "    p = @Pfmadd_ps(p, @Pmul_ps(r, r), r);\n"
    "    @T s = @N;\n"
    "    @T em = @Pfmadd_ps(s, p, @Psub_ps(s, @Pset1_ps(1.0f)));\n"
    "    @T th = @Pdiv_ps(em, @Padd_ps(em, @Pset1_ps(2.0f)));\n"
    "    return @Pcast@S_ps(@Por_@S(@Pcastps_@S(th), @Pand_@S(@Pcastps_@S(x), @Pset1_epi32((int)0x80000000u))));\n"
    "}\n"
    "static inline @T smelt_erff_v@W(@T x)\n"
    "{\n"
    "    @T a = smelt_v@W_abs(x), z = @Pmul_ps(x, x), one = @Pset1_ps(1.0f);\n"
    "    @T p = @Pset1_ps(-5.63140933747569e-4f);\n"
    "    p = @Pfmadd_ps(p, z, @Pset1_ps(4.917548171464156e-3f));\n"
    "    p = @Pfmadd_ps(p, z, @Pset1_ps(-2.6711308421730598e-2f));\n"
    "    p = @Pfmadd_ps(p, z, @Pset1_ps(1.1280180006609522e-1f));\n"
    "    p = @Pfmadd_ps(p, z, @Pset1_ps(-3.761232617307032e-1f));\n"
    "    p = @Pfmadd_ps(p, z, @Pset1_ps(1.128379122491034f));\n"
    "    @T small = @Pmul_ps(x, p);\n"
    "    @T u = @Pdiv_ps(one, smelt_v@W_if(@C(a, one, _CMP_LT_OQ), one, a));\n"
    "    @T q = @Pset1_ps(-1.1371758018593345e-2f);\n"
    "    q = @Pfmadd_ps(q, u, @Pset1_ps(3.7985083020984516e-2f));\n"
    "    q = @Pfmadd_ps(q, u, @Pset1_ps(4.057449341991745e-3f));\n"
    "    q = @Pfmadd_ps(q, u, @Pset1_ps(-2.1910439328319703e-1f));\n"
    "    q = @Pfmadd_ps(q, u, @Pset1_ps(4.809638119828691e-1f));\n"
    "    q = @Pfmadd_ps(q, u, @Pset1_ps(-4.6467758662815456e-1f));\n"
    "    q = @Pfmadd_ps(q, u, @Pset1_ps(4.01624060924507e-2f));\n"
    "    q = @Pfmadd_ps(q, u, @Pset1_ps(5.593154179694997e-1f));\n"
    "    q = @Pfmadd_ps(q, u, @Pset1_ps(2.531177489760654e-4f));\n"
    "    @T big = @Psub_ps(one, @Pmul_ps(smelt_expf_v@W_le0(smelt_v@W_neg(z)), q));\n"
    "    big = smelt_v@W_if(@C(a, @Pset1_ps(4.0f), _CMP_LT_OQ), big, one);\n"
    "    big = smelt_v@W_if(@C(x, @Psetzero_ps(), _CMP_LT_OQ), smelt_v@W_neg(big), big);\n"
    "    return smelt_v@W_if(@C(a, one, _CMP_GE_OQ), big, small);\n"
    "}\n#endif\n";

void emit_put_vec_helpers(strbuf *sb)
{
    for (int r = 0; r < N_VEC_ISAS; r++) {
        const vec_isa *v = &vec_isas[r];
        for (const char *c = vec_helper_template; *c; c++) {
            size_t run = strcspn(c, "@");
            sb_printf(sb, "%.*s", (int)run, c);
            c += run;
            if (!*c || !c[1]) break;
            switch (*++c) {
            case 'G': sb_puts(sb, v->guard); break;
            case 'T': sb_puts(sb, v->vt); break;
            case 'M': sb_puts(sb, v->mt); break;
            case 'P': sb_puts(sb, v->p); break;
            case 'S': sb_puts(sb, v->si); break;
            case 'W': sb_printf(sb, "%d", v->lanes); break;
            case 'A': sb_printf(sb, "%d", v->lanes * 4 - 1); break;
            case 'C': sb_puts(sb, v->cmp); break;
            case 'B': sb_puts(sb, v->blend); break;
            case 'E': sb_puts(sb, v->pow2n); break;
            case 'N': sb_puts(sb, v->two_n); break;
            case 'X': sb_puts(sb, v->minmax); break;
            default: sb_printf(sb, "@%c", *c); break;
            }
        }
    }
}

/* Stream loop i as kir_loop_begin_stream's contract builds it, over [0, n)
 * (kir.h, "Streaming"): loads of one f32 workgroup row at the loop value, one
 * store of such a load to an f32 buffer at the loop value plus `base` (0:
 * none), a value defined before the loop. Fills *m; false for any other body. */
static bool match_stream(const kir_kernel *k, int i, stream_copy *m)
{
    const kir_stmt *s = &k->stmts[i];
    kir_val q = s->val;
    if (!kir_is_const(k, s->lo) || k->vals[s->lo].imm.i != 0 || !kir_is_const(k, s->hi)) return false;
    *m = (stream_copy){.end = -1, .store = -1, .n = k->vals[s->hi].imm.i};
    for (int j = i + 1; j < k->n_stmts && m->end < 0; j++) {
        const kir_stmt *t = &k->stmts[j];
        if (t->kind == KS_LOOP_END) m->end = j;
        else if (t->kind == KS_STORE && m->store < 0) m->store = j;
        else if (t->kind != KS_DEF) return false;
    }
    if (m->end < 0 || m->store < 0) return false;
    const kir_stmt *st = &k->stmts[m->store];
    const kir_value *v = &k->vals[st->val], *at = &k->vals[st->idx];
    if (v->op != KIR_LOAD || v->a != q || !k->bufs[v->buf].workgroup || v->type != SMELT_F32 ||
        k->bufs[st->buf].type != SMELT_F32)
        return false;
    m->row = v->buf;
    if (st->idx == q) return true;
    if (at->op != KIR_ADD || (at->a != q && at->b != q)) return false;
    m->base = at->a == q ? at->b : at->a;
    return k->vals[m->base].def < i;
}

/* The stream loop's destination, dst[base], as C (the copy's base inside
 * interleaved copies). */
static void put_stream_dst(emitter *e, const stream_copy *m)
{
    sb_printf(e->sb, "&b%d[", e->k->stmts[m->store].buf);
    if (m->base) emit_put_val(e, m->base);
    else sb_puts(e->sb, "0");
    sb_puts(e->sb, "]");
}

bool emit_row_streamed(const kir_kernel *k, int b)
{
    stream_copy m;
    for (int i = 0; i < k->n_stmts; i++)
        if (k->stmts[i].kind == KS_LOOP_BEGIN && k->stmts[i].stream && match_stream(k, i, &m) && m.row == b) return true;
    return false;
}

int emit_put_stream(emitter *e, int i, int ind)
{
    stream_copy m;
    if (!match_stream(e->k, i, &m)) return -1;
    sb_indent(e->sb, ind);
    sb_puts(e->sb, "smelt_stream_f32(");
    put_stream_dst(e, &m);
    sb_printf(e->sb, ", b%d, %lld);\n", m.row, (long long)m.n);
    return m.end;
}

/* ---- vector loops -------------------------------------------------------
 * A parallel loop over [0, lanes) of a vec_isas row (or a masked loop over
 * fewer lanes of the widest row: below) whose body is f32
 * arithmetic the emitter can write as that ISA's intrinsics, with loads and
 * stores at one step per iteration (or loads of one element), is emitted
 * twice: as vector code under the row's guard (the integer index values
 * computed once, for lane 0) and as the scalar loop otherwise. The vector
 * code runs the scalar code's IEEE operations in the same order (exp, tanh
 * and erf as mathf.inc spells them, min/max as the comparisons the scalar
 * code writes), so both give the same bits. What it gains over the
 * compiler's own vectorization of the scalar loop: exp's 2^n as one
 * vscalefps on AVX-512 (the sigmoid chain at 1 thread ran 6.39 -> 5.80 ms),
 * and on any row the interleaving and the direct non-temporal stores below
 * (the 30-op elementwise DAG on AVX2, one thread: 29 -> 19 ms of CPU).
 *
 * Strips. A quantize (round(x / s) + zp, clamped, NaN to 0) the C compiler
 * leaves scalar: its rintf, x != x and selects. The vector body takes them
 * (round as roundscale/round_ps to nearest even, as rintf in the default
 * mode; compares as lane masks that only selects read), and a parallel loop
 * of more lanes than any row's whose body rounds is a strip: whole vectors
 * of 16 (AVX-512) or 8 (AVX2) lanes, the rest in its scalar loop.
 * On AVX-512 a rest of 4 or more lanes is one more vector under a mask.
 * Best of 3 --profile runs of 40 at 1 thread: ddddocr_ocr_quant's quantize
 * kernels 0.87 -> 0.82 ms per run (the compiler had vectorized part of
 * them); smart_turn_v3 (QDQ) 90.8 -> 87.0 ms (ab.sh min of 4 rounds).
 * A parallel loop whose body computes exp, tanh or erf is a strip too, over
 * a constant count or over [lo, hi) with variable bounds (a conv's SiLU
 * epilogue over a tile's columns), the rest under a runtime mask of its
 * lanes on AVX-512: the compiler vectorizes mathf.inc's scalar form, but
 * without vscalefps or the e^-y fold (its exp 0.25 ns an element at 16
 * lanes, the helper's 0.19). nudenet_320n's 13 kernels so changed, sum of
 * per-kernel minimums of 6 interleaved --profile rounds of 20 runs at 1
 * thread: 87.2 -> 81.7 ms (83.4 -> 76.9 with SMELT_VECTOR_WIDTH=8). */

/* Masked vector loops. A masked loop (kir.h) over [0, n) with VEC_MASKED_MIN
 * <= n < 16 and n not a row's lanes is emitted as one vector of the 16-lane
 * row under a mask of its first n lanes: masked loads (the other lanes read
 * nothing and hold zeros) and a masked store. A row of a 14x14 depthwise
 * conv (ops/conv_depthwise.c) is one such loop: 384 ch 3x3 at 14x14 + Clip
 * 0.058 -> 0.033 ms (min of 5 rounds of 200 runs, 1 thread), where the
 * compiler's own code for the loop of 14 runs in 8-, 4- and 1-lane parts.
 * Only where asked: every parallel loop of 4 to 15 lanes so emitted lost
 * elsewhere (ppocr4_det's x0 * x1 at 8x12 0.0075 -> 0.0128 ms, ddddocr_det's
 * 13x13 MaxPools 0.11 -> 0.19 and 0.47 -> 0.84). Interleaved loops (below)
 * take no masked loop. */
#define VEC_MASKED_MIN 4

/* Whether a float operand of the vector body is a constant that is not NaN. */
static bool vec_plain_const(const kir_value *v) { return v->op == KIR_CONST && v->imm.f == v->imm.f; }

/* Lanes of loop i as a masked vector loop, or 0 when it is none. */
static int64_t vec_masked_lanes(const kir_kernel *k, int i)
{
    const kir_stmt *s = &k->stmts[i];
    int64_t n = kir_is_const(k, s->hi) ? k->vals[s->hi].imm.i : 0;
    return s->masked && n >= VEC_MASKED_MIN && n < vec_isas[0].lanes && !vec_isa_for(n) ? n : 0;
}

/* The row of vector loop i (one emit_vec_loop accepts). */
static const vec_isa *vec_isa_of(const kir_kernel *k, int i)
{
    kir_val hi = k->stmts[i].hi;
    const vec_isa *r = kir_is_const(k, hi) ? vec_isa_for(k->vals[hi].imm.i) : NULL;
    return vec_masked_lanes(k, i) || !r ? &vec_isas[0] : r;
}

bool emit_vec_strip(const kir_kernel *k, int i)
{
    kir_val hi = k->stmts[i].hi;
    return !vec_masked_lanes(k, i) && (!kir_is_const(k, hi) || !vec_isa_for(k->vals[hi].imm.i));
}

/* The mask of vector loop i's lanes as C, or NULL when it runs all of them. */
static const char *vec_mask_of(const kir_kernel *k, int i, char *buf, size_t cap)
{
    int64_t n = vec_masked_lanes(k, i);
    if (!n) return NULL;
    snprintf(buf, cap, "(__mmask16)0x%llx", (unsigned long long)((1ull << n) - 1));
    return buf;
}

/* Whether value v is a lane mask of the vector body that begins at
 * statement i: a compare of f32 values (or isnan) defined in it. */
static bool vec_mask_val(const kir_kernel *k, kir_val v, int i)
{
    const kir_value *x = &k->vals[v];
    return x->type == SMELT_BOOL && x->op != KIR_CONST && x->def > i;
}

/* Loop i as a vector loop: its LOOP_END, or -1. A parallel loop of more
 * lanes than a row's that is no masked loop, or over [lo, hi) with either
 * bound a variable (a strip: emit_vec_strip), is taken only where its body
 * rounds (a quantize), which the C compiler does not vectorize itself, or
 * computes exp, tanh or erf, which it vectorizes from mathf.inc's scalar
 * form without vscalefps or the e^-y fold (a conv's SiLU epilogue over a
 * tile's columns); others it does, and are left to it. */
int emit_vec_loop(const kir_kernel *k, int i)
{
    const kir_stmt *s = &k->stmts[i];
    bool fixed = kir_is_const(k, s->lo) && kir_is_const(k, s->hi);
    if (s->kind != KS_LOOP_BEGIN || !s->parallel || s->stream || k->wg_size != 1 ||
        (fixed && (k->vals[s->lo].imm.i != 0 || k->vals[s->hi].imm.i < 1)) || !kir_is_const(k, s->step) ||
        k->vals[s->step].imm.i != 1)
        return -1;
    bool strip = emit_vec_strip(k, i), rounds = false, math = false;
    if (strip && fixed && k->vals[s->hi].imm.i < vec_isas[0].lanes) return -1;
    int end = -1, f32 = 0;
    for (int j = i + 1; j < k->n_stmts && end < 0; j++) {
        const kir_stmt *t = &k->stmts[j];
        if (t->kind == KS_LOOP_END) {
            end = j;
        } else if (t->kind == KS_STORE) {
            if (k->bufs[t->buf].type != SMELT_F32 || k->vals[t->val].type != SMELT_F32 ||
                kir_stride(k, t->idx, s->val) != 1)
                return -1;
        } else if (t->kind == KS_DEF) {
            const kir_value *x = &k->vals[t->val];
            int n = x->op == KIR_LOAD ? 0 : kir_op_arity(x->op);
            kir_val ops[3] = {x->a, x->b, x->c};
            if (x->type == SMELT_BOOL) { /* a lane mask: a compare of f32 values, read only by selects */
                bool cmp = x->op == KIR_ISNAN || (x->op >= KIR_EQ && x->op <= KIR_GE);
                if (!cmp) return -1;
                for (int o = 0; o < n; o++)
                    if (k->vals[ops[o]].type != SMELT_F32) return -1;
                continue;
            }
            if (x->type != SMELT_F32) {
                if (kir_is_float(x->type)) return -1;
                for (int o = 0; o < n; o++)
                    if (vec_mask_val(k, ops[o], i)) return -1;
                continue; /* an index value: emitted as is, for lane 0 */
            }
            f32++;
            for (int o = 0; o < n; o++) {
                bool cond = x->op == KIR_SELECT && o == 0;
                if (cond ? !vec_mask_val(k, ops[o], i) : k->vals[ops[o]].type != SMELT_F32) return -1;
            }
            switch (x->op) {
            case KIR_LOAD: {
                int64_t st = kir_stride(k, x->a, s->val);
                if (k->bufs[x->buf].type != SMELT_F32 || (st != 0 && st != 1)) return -1;
                break;
            }
            case KIR_ROUND:
                rounds = true;
                break;
            case KIR_EXP: case KIR_TANH: case KIR_ERF:
                math = true;
                break;
            case KIR_ADD: case KIR_SUB: case KIR_MUL: case KIR_DIV: case KIR_NEG: case KIR_ABS:
            case KIR_SQRT: case KIR_MIN: case KIR_MAX: case KIR_SELECT:
                break;
            default: return -1;
            }
        } else {
            return -1;
        }
    }
    return f32 && (!strip || rounds || math) ? end : -1;
}

/* The row vector loop `begin` is being written with. */
static const vec_isa *vec_row(const emitter *e, int begin)
{
    return e->vec_lanes ? vec_isa_for(e->vec_lanes) : vec_isa_of(e->k, begin);
}

/* Float operand v of the vector body (the vector loop begins at statement
 * `begin`): its vector, or a broadcast scalar. */
static void put_vec_operand(emitter *e, kir_val v, int begin)
{
    const kir_value *x = &e->k->vals[v];
    if (x->op != KIR_CONST && x->def > begin) {
        char name[32];
        sb_puts(e->sb, kir_locals_shadow(v, true, e->copy >= 0 ? emit_copy_of(e, v) : -1, name, sizeof name));
        return;
    }
    sb_printf(e->sb, "%sset1_ps(", vec_row(e, begin)->p);
    emit_put_val(e, v);
    sb_puts(e->sb, ")");
}

/* f(a, b) of two vector operands: "<pre>a, b<post>". */
static void put_vec_call2(emitter *e, const char *pre, kir_val a, kir_val b, const char *post, int begin)
{
    sb_puts(e->sb, pre);
    put_vec_operand(e, a, begin);
    sb_puts(e->sb, ", ");
    put_vec_operand(e, b, begin);
    sb_puts(e->sb, post);
}

/* Whether constant v is a power of two whose reciprocal is a float: then
 * a / v and a * (1 / v) are the same exact scaling, rounded once, for every
 * a (gcc makes this change in scalar code, not in a vdivps intrinsic). */
static bool vec_pow2_divisor(const kir_value *v)
{
    if (v->op != KIR_CONST) return false;
    float c = (float)v->imm.f, r = 1.0f / c;
    int ex;
    return c == c && c != 0.0f && r - r == 0.0f && frexpf(c, &ex) == (c < 0 ? -0.5f : 0.5f) && r * c == 1.0f;
}

/* Whether f32 value v is folded into the NEG that is its one use: -|x| is
 * one OR of the sign bit (smelt_v*_nabs), -(a * b) one fnmadd(a, b, -0)
 * (rounded once, as the product, whose negation is exact; -0 keeps a zero
 * product's sign). Or v is a NEG (of neither) whose one use is an EXP, as in
 * a sigmoid: e^-y is smelt_expf_v*_neg(y), which runs exp's steps on -y's
 * clamp with r negated (fnmadd for fmadd and back: the same roundings, since
 * rounding to nearest is symmetric), so the XOR of the sign goes. Such a
 * value is not written itself. */
static bool vec_folded(const emitter *e, kir_val v)
{
    const kir_kernel *k = e->k;
    const kir_value *x = &k->vals[v];
    bool neg = x->op == KIR_NEG && x->type == SMELT_F32 && !vec_folded(e, x->a) && k->vals[x->a].op != KIR_ABS;
    if ((x->op != KIR_ABS && x->op != KIR_MUL && !neg) || e->uses[v] != 1) return false;
    for (int j = x->def + 1; j < k->n_stmts; j++) {
        const kir_stmt *t = &k->stmts[j];
        if (t->kind == KS_DEF && k->vals[t->val].op == (neg ? KIR_EXP : KIR_NEG) && k->vals[t->val].a == v) return true;
    }
    return false;
}

/* One DEF or STORE of the vector loop that begins at statement `begin`. */
static smelt_status put_vec_stmt(emitter *e, const kir_stmt *t, int begin, int ind)
{
    const kir_kernel *k = e->k;
    const vec_isa *isa = vec_row(e, begin);
    strbuf *sb = e->sb;
    char pre[64], mbuf[32];
    const char *mask = e->vec_mask ? e->vec_mask : vec_mask_of(k, begin, mbuf, sizeof mbuf);
    if (t->kind == KS_STORE) {
        sb_indent(sb, ind);
        sb_printf(sb, mask ? "%smask_storeu_ps(&b%d[" : "%sstoreu_ps(&b%d[", isa->p, t->buf);
        emit_put_val(e, t->idx);
        sb_puts(sb, "], ");
        if (mask) sb_printf(sb, "%s, ", mask);
        put_vec_operand(e, t->val, begin);
        sb_puts(sb, ");\n");
        return SMELT_OK;
    }
    const kir_value *x = &k->vals[t->val];
    char name[32];
    if (x->type == SMELT_BOOL) { /* a lane mask; C's != is true for NaN operands, the others false */
        static const char *const pred[] = {"_CMP_EQ_OQ", "_CMP_NEQ_UQ", "_CMP_LT_OQ", "_CMP_LE_OQ", "_CMP_GT_OQ", "_CMP_GE_OQ"};
        sb_indent(sb, ind);
        sb_printf(sb, "const %s %s = %s(", isa->mt, kir_locals_shadow(t->val, true, e->copy, name, sizeof name), isa->cmp);
        if (x->op == KIR_ISNAN) put_vec_call2(e, "", x->a, x->a, ", _CMP_UNORD_Q);\n", begin);
        else put_vec_call2(e, "", x->a, x->b, "", begin), sb_printf(sb, ", %s);\n", pred[x->op - KIR_EQ]);
        return SMELT_OK;
    }
    if (x->type != SMELT_F32) return emit_put_def(e, t, ind);
    if (vec_folded(e, t->val)) return SMELT_OK;
    sb_indent(sb, ind);
    sb_printf(sb, "const %s %s = ", isa->vt, kir_locals_shadow(t->val, true, e->copy, name, sizeof name));
    const char *bin = x->op == KIR_ADD ? "add" : x->op == KIR_SUB ? "sub" : x->op == KIR_MUL ? "mul" : "div";
    switch (x->op) {
    case KIR_LOAD:
        if (t->val == e->vec_sub) {
            sb_printf(sb, "(%s)%s", isa->vt, e->vec_sub_name);
            break;
        }
        if (kir_stride(k, x->a, k->stmts[begin].val) != 1) sb_printf(sb, "%sset1_ps(b%d[", isa->p, x->buf);
        else if (mask) sb_printf(sb, "%smaskz_loadu_ps(%s, &b%d[", isa->p, mask, x->buf);
        else sb_printf(sb, "%sloadu_ps(&b%d[", isa->p, x->buf);
        emit_put_val(e, x->a);
        sb_puts(sb, "])");
        break;
    case KIR_ADD: case KIR_SUB: case KIR_MUL: case KIR_DIV:
        if (x->op == KIR_DIV && vec_pow2_divisor(&k->vals[x->b])) {
            sb_printf(sb, "%smul_ps(", isa->p);
            put_vec_operand(e, x->a, begin);
            sb_printf(sb, ", %sset1_ps(%af))", isa->p, (double)(1.0f / (float)k->vals[x->b].imm.f));
            break;
        }
        snprintf(pre, sizeof pre, "%s%s_ps(", isa->p, bin);
        put_vec_call2(e, pre, x->a, x->b, ")", begin);
        break;
    case KIR_MIN: case KIR_MAX: {
        bool max = x->op == KIR_MAX, b_const = vec_plain_const(&k->vals[x->b]);
        kir_val c = b_const ? x->b : x->a, v = b_const ? x->a : x->b;
        if (b_const) { /* (c > v ? c : v) is MAXPS(c, v); MINPS likewise */
            snprintf(pre, sizeof pre, "%s%s_ps(", isa->p, max ? "max" : "min");
            put_vec_call2(e, pre, c, v, ")", begin);
        } else if (vec_plain_const(&k->vals[c])) { /* (c >= v ? c : v): a compare that keeps c on ties and NaN v */
            snprintf(pre, sizeof pre, "smelt_v%d_if(%s(", isa->lanes, isa->cmp);
            put_vec_call2(e, pre, c, v, max ? ", _CMP_GE_OQ), " : ", _CMP_LE_OQ), ", begin);
            put_vec_call2(e, "", c, v, ")", begin);
        } else { /* smelt_maxf / smelt_minf */
            snprintf(pre, sizeof pre, "smelt_v%d_%s(", isa->lanes, max ? "max" : "min");
            put_vec_call2(e, pre, x->a, x->b, ")", begin);
        }
        break;
    }
    case KIR_SELECT:
        sb_printf(sb, "smelt_v%d_if(", isa->lanes);
        put_vec_operand(e, x->a, begin);
        put_vec_call2(e, ", ", x->b, x->c, ")", begin);
        break;
    case KIR_ROUND: /* rintf: to nearest even, NaN quieted, no exceptions raised beyond rintf's */
        sb_printf(sb, "%s(", isa->round);
        put_vec_operand(e, x->a, begin);
        sb_puts(sb, ", _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)");
        break;
    default: { /* unary */
        kir_val a = x->a;
        if (x->op == KIR_NEG && k->vals[a].op == KIR_MUL && k->vals[a].def > begin && vec_folded(e, a)) {
            snprintf(pre, sizeof pre, "%sfnmadd_ps(", isa->p);
            put_vec_call2(e, pre, k->vals[a].a, k->vals[a].b, "", begin);
            sb_printf(sb, ", %sset1_ps(-0.0f))", isa->p);
            break;
        }
        bool nabs = x->op == KIR_NEG && k->vals[a].op == KIR_ABS && k->vals[a].def > begin;
        if (nabs) a = k->vals[a].a;
        /* exp(-|y|): the argument is <= 0 (or NaN), so only the lower clamp can bite */
        bool le0 = x->op == KIR_EXP && k->vals[a].op == KIR_NEG && k->vals[k->vals[a].a].op == KIR_ABS;
        if (x->op == KIR_EXP && k->vals[a].op == KIR_NEG && k->vals[a].def > begin && vec_folded(e, a)) {
            sb_printf(sb, "smelt_expf_v%d_neg(", isa->lanes);
            put_vec_operand(e, k->vals[a].a, begin);
            sb_puts(sb, ")");
            break;
        }
        if (x->op == KIR_SQRT) sb_printf(sb, "%ssqrt_ps(", isa->p);
        else if (x->op == KIR_NEG || x->op == KIR_ABS)
            sb_printf(sb, "smelt_v%d_%s(", isa->lanes, nabs ? "nabs" : x->op == KIR_NEG ? "neg" : "abs");
        else
            sb_printf(sb, "smelt_%sf_v%d%s(", x->op == KIR_EXP ? "exp" : x->op == KIR_TANH ? "tanh" : "erf",
                      isa->lanes, le0 ? "_le0" : "");
        put_vec_operand(e, a, begin);
        sb_puts(sb, ")");
        break;
    }
    }
    sb_puts(sb, ";\n");
    return SMELT_OK;
}

smelt_status emit_put_vec_body(emitter *e, int begin, int end, int lanes, const unsigned char *skip, int ind)
{
    e->vec_lanes = lanes;
    smelt_status st = SMELT_OK;
    for (int j = begin + 1; j < end && !st; j++) {
        const kir_stmt *t = &e->k->stmts[j];
        if (!(skip && t->kind == KS_DEF && skip[t->val])) st = put_vec_stmt(e, t, begin, ind);
    }
    e->vec_lanes = 0;
    return st;
}

/* The body of vector loop i (to `end`) once more at s<depth>, its lanes under
 * the mask named by C expression `mask`: a row's rest after its whole vectors. */
static smelt_status put_masked_rest(emitter *e, int i, int end, int ind, int depth, const char *mask)
{
    sb_indent(e->sb, ind);
    sb_printf(e->sb, "const int64_t i%d = s%d;\n", depth, depth);
    e->vec_mask = mask;
    smelt_status st = SMELT_OK;
    for (int j = i + 1; j < end && !st; j++) st = put_vec_stmt(e, &e->k->stmts[j], i, ind);
    e->vec_mask = NULL;
    return st;
}

smelt_status emit_put_vec_loop(emitter *e, int i, int end, int ind, int depth)
{
    strbuf *sb = e->sb;
    const vec_isa *isa = vec_isa_of(e->k, i);
    e->loop_depth[e->k->stmts[i].val] = depth;
    sb_printf(sb, "#if %s\n", isa->guard);
    sb_indent(sb, ind);
    sb_printf(sb, "{\n");
    if (emit_vec_strip(e->k, i)) {
        const kir_stmt *lp = &e->k->stmts[i];
        /* whole vectors of each row's lanes from s<depth> under its guard, then
         * the scalar loop from where they end */
        for (int r = 0; r < N_VEC_ISAS; r++) {
            const vec_isa *v = &vec_isas[r];
            if (r > 0) {
                sb_printf(sb, "#elif %s\n", v->guard);
                sb_indent(sb, ind);
                sb_printf(sb, "{\n");
            }
            sb_indent(sb, ind + 4);
            sb_printf(sb, "int64_t s%d = ", depth);
            emit_put_val(e, lp->lo);
            sb_printf(sb, ";\n");
            sb_indent(sb, ind + 4);
            sb_printf(sb, "for (; s%d + %d <= ", depth, v->lanes);
            emit_put_val(e, lp->hi);
            sb_printf(sb, "; s%d += %d) {\n", depth, v->lanes);
            sb_indent(sb, ind + 8);
            sb_printf(sb, "const int64_t i%d = s%d;\n", depth, depth);
            e->vec_lanes = v->lanes;
            for (int j = i + 1; j < end; j++) {
                smelt_status st = put_vec_stmt(e, &e->k->stmts[j], i, ind + 8);
                if (st) {
                    e->vec_lanes = 0;
                    return st;
                }
            }
            sb_indent(sb, ind + 4);
            sb_printf(sb, "}\n");
            bool fixed = kir_is_const(e->k, lp->hi) && kir_is_const(e->k, lp->lo);
            int64_t tail = fixed ? e->k->vals[lp->hi].imm.i % v->lanes : 0; /* lo is 0 where both are fixed */
            if (r == 0 && tail >= VEC_MASKED_MIN) { /* the rest as one vector under a mask of its lanes */
                char mbuf[32];
                snprintf(mbuf, sizeof mbuf, "(__mmask16)0x%llx", (unsigned long long)((1ull << tail) - 1));
                sb_indent(sb, ind + 4);
                sb_printf(sb, "{\n");
                smelt_status st = put_masked_rest(e, i, end, ind + 8, depth, mbuf);
                if (st) {
                    e->vec_lanes = 0;
                    return st;
                }
                sb_indent(sb, ind + 8);
                sb_printf(sb, "s%d += %lld;\n", depth, (long long)tail);
                sb_indent(sb, ind + 4);
                sb_printf(sb, "}\n");
            } else if (r == 0 && !fixed) { /* the rest (1 to 15 lanes, if any) under a mask of them */
                char mbuf[32];
                snprintf(mbuf, sizeof mbuf, "sm%d", depth);
                sb_indent(sb, ind + 4);
                sb_printf(sb, "if (s%d < ", depth);
                emit_put_val(e, lp->hi);
                sb_puts(sb, ") {\n");
                sb_indent(sb, ind + 8);
                sb_printf(sb, "const __mmask16 sm%d = (__mmask16)((1u << (unsigned)(", depth);
                emit_put_val(e, lp->hi);
                sb_printf(sb, " - s%d)) - 1u);\n", depth);
                smelt_status st = put_masked_rest(e, i, end, ind + 8, depth, mbuf);
                if (st) {
                    e->vec_lanes = 0;
                    return st;
                }
                sb_indent(sb, ind + 8);
                sb_printf(sb, "s%d = ", depth);
                emit_put_val(e, lp->hi);
                sb_puts(sb, ";\n");
                sb_indent(sb, ind + 4);
                sb_printf(sb, "}\n");
            }
            e->vec_lanes = 0;
        }
        sb_puts(sb, "#else\n");
        sb_indent(sb, ind);
        sb_printf(sb, "{\n");
        sb_indent(sb, ind + 4);
        sb_printf(sb, "const int64_t s%d = ", depth);
        emit_put_val(e, lp->lo);
        sb_puts(sb, ";\n#endif\n");
        return SMELT_OK;
    }
    sb_indent(sb, ind + 4);
    sb_printf(sb, "const int64_t i%d = 0; /* lane 0 of %d */\n", depth, isa->lanes);
    for (int j = i + 1; j < end; j++) TRY(put_vec_stmt(e, &e->k->stmts[j], i, ind + 4));
    sb_indent(sb, ind);
    sb_puts(sb, "}\n#else\n");
    return SMELT_OK;
}

/* ---- interleaved loops ---------------------------------------------------
 * A vector loop's lanes are one dependent chain of operations: exp alone is
 * ~20 of them, each waiting for the last, and the out-of-order core finds
 * too few independent ones to keep its vector units busy. A loop around a
 * vector loop whose iterations are independent is therefore written with
 * its row's ilv_copies of its iterations at once, statement by statement
 * (each statement for copy 0, 1, ..., then the next), then one at a time for
 * the rest. Its body may hold index and scalar DEFs, the vector loop, and
 * stream loops that copy the vector loop's rows out (kir.h, "Streaming"):
 * then each copy's vector goes straight to its destination with one
 * non-temporal store (smelt_stream_v*), with no row in between.
 *
 * The iterations are independent when no buffer the body stores to (or that
 * aliases one) is loaded in it, each is stored once per iteration, and an
 * iteration's elements and the next's do not overlap (the store index moves
 * by at least the lanes per iteration). Each copy then does what its
 * iteration did, in the same order, so the results are the same bits; only
 * the order of independent stores changes. Measured on the 4096x4096
 * transpose-and-sigmoid chain at 1 thread: 5.5 -> 4.3 ms with 8 copies of
 * 16 lanes (4 copies: 4.7). AVX2 has half the vector registers, but 8 copies
 * of 8 lanes still pay where the body is long, though the C compiler spills:
 * elementwise_dag's ~100 vector operations per element (two exps, three
 * divisions; the kernel by hand, best of 15 runs in 5 interleaved rounds at
 * 1 thread) 14.8 -> 13.5 ms, and that chain 16.6 -> 15.7 ms on a loaded
 * machine. */
#define ILV_MAX_STORED 32

/* Whether index `at` of a store that steps 1 per lane moves by at least
 * `lanes` per iteration of loop i. */
static bool ilv_apart(const kir_kernel *k, kir_val at, int i, int64_t lanes)
{
    const kir_stmt *s = &k->stmts[i];
    int64_t d = kir_stride(k, at, s->val), step = k->vals[s->step].imm.i;
    if (d == KIR_STRIDE_UNKNOWN || d > INT32_MAX || d < -INT32_MAX) return false;
    d *= step;
    return d >= lanes || d <= -lanes;
}

/* Whether buffer b is one of the n stored buffers st[] or aliases one. */
static bool ilv_stored(const int *alias, const int *st, int n, int b)
{
    for (int x = 0; x < n; x++)
        if (st[x] == b || (alias && alias[b] == st[x])) return true;
    return false;
}

/* The stream loop of l that begins at statement j, or -1. */
static int ilv_stream_at(const ilv_loop *l, int j)
{
    for (int s = 0; s < l->n_streams; s++)
        if (l->stream[s] == j) return s;
    return -1;
}

bool emit_ilv_loop(const kir_kernel *k, const int *alias, int i, ilv_loop *l)
{
    const kir_stmt *s = &k->stmts[i];
    if (s->kind != KS_LOOP_BEGIN || s->parallel || s->stream || k->wg_size != 1 || !kir_is_const(k, s->step) ||
        k->vals[s->step].imm.i <= 0)
        return false;
    *l = (ilv_loop){.end = -1, .lane = -1};
    for (int j = i + 1; j < k->n_stmts && l->end < 0; j++) {
        const kir_stmt *t = &k->stmts[j];
        if (t->kind == KS_LOOP_END) {
            l->end = j;
        } else if (t->kind == KS_LOOP_BEGIN && l->lane < 0) {
            l->lane = j;
            l->lane_end = j = emit_vec_loop(k, j);
            if (j < 0 || vec_masked_lanes(k, l->lane) || emit_vec_strip(k, l->lane)) return false;
        } else if (t->kind == KS_LOOP_BEGIN && t->stream && l->lane >= 0 && l->n_streams < ILV_MAX_STREAMS) {
            stream_copy *m = &l->copy_out[l->n_streams];
            if (!match_stream(k, j, m) || m->n != vec_isa_of(k, l->lane)->lanes) return false;
            l->row_store[l->n_streams] = -1;
            l->stream[l->n_streams++] = j;
            j = m->end;
        } else if (t->kind != KS_DEF) {
            return false;
        }
    }
    if (l->end < 0 || l->lane < 0) return false;
    int64_t lanes = vec_isa_of(k, l->lane)->lanes;
    /* the stored buffers: the vector loop's, or for its rows the stream loops' */
    int stored[ILV_MAX_STORED], n = 0;
    for (int j = l->lane + 1; j < l->lane_end; j++) {
        const kir_stmt *t = &k->stmts[j];
        if (t->kind != KS_STORE) continue;
        if (k->bufs[t->buf].workgroup) {
            int r = 0;
            while (r < l->n_streams && l->copy_out[r].row != t->buf) r++;
            if (r == l->n_streams || l->row_store[r] >= 0 || t->idx != k->stmts[l->lane].val) return false;
            l->row_store[r] = j;
            continue;
        }
        if (n == ILV_MAX_STORED || ilv_stored(alias, stored, n, t->buf) || !ilv_apart(k, t->idx, i, lanes)) return false;
        stored[n++] = t->buf;
    }
    for (int r = 0; r < l->n_streams; r++) {
        int row = l->copy_out[r].row, st = l->copy_out[r].store;
        if (l->row_store[r] < 0 || n == ILV_MAX_STORED || ilv_stored(alias, stored, n, k->stmts[st].buf) ||
            !ilv_apart(k, k->stmts[st].idx, i, lanes))
            return false;
        stored[n++] = k->stmts[st].buf;
        /* the row holds nothing else: no other statement of the kernel touches it */
        for (int j = 0; j < k->n_stmts; j++) {
            const kir_stmt *t = &k->stmts[j];
            bool touches = (t->kind == KS_STORE || t->kind == KS_PREFETCH) && t->buf == row;
            touches |= t->kind == KS_DEF && k->vals[t->val].op == KIR_LOAD && k->vals[t->val].buf == row;
            if (touches && j != l->row_store[r] && (j <= l->stream[r] || j >= l->copy_out[r].end)) return false;
        }
    }
    /* and nothing the body loads is stored in it */
    for (int j = i + 1; j < l->end; j++) {
        int r = ilv_stream_at(l, j);
        if (r >= 0) j = l->copy_out[r].end;
        const kir_stmt *t = &k->stmts[j];
        if (t->kind == KS_DEF && k->vals[t->val].op == KIR_LOAD && ilv_stored(alias, stored, n, k->vals[t->val].buf))
            return false;
    }
    return n > 0;
}

/* Whether identifier `id` occurs as a whole token in s[0..n). */
static bool ident_in(const char *s, size_t n, const char *id)
{
    size_t m = strlen(id);
    for (size_t p = 0; p + m <= n; p++) {
        if (memcmp(s + p, id, m)) continue;
        bool before = p > 0 && (isalnum((unsigned char)s[p - 1]) || s[p - 1] == '_');
        bool after = p + m < n && (isalnum((unsigned char)s[p + m]) || s[p + m] == '_');
        if (!before && !after) return true;
    }
    return false;
}

/* `copies` copies of loop i's body, statement by statement. */
static smelt_status put_ilv_body(emitter *e, int i, const ilv_loop *l, int copies, int ind)
{
    const kir_kernel *k = e->k;
    strbuf *sb = e->sb;
    /* The lane loop's value is 0 in the scalar statements; declared only when one reads it. */
    char lane[24];
    snprintf(lane, sizeof lane, "i%d", e->loop_depth[k->stmts[l->lane].val]);
    size_t decl = sb->len;
    sb_indent(sb, ind);
    sb_printf(sb, "const int64_t %s = 0; /* lane 0 of %d */\n", lane, vec_isa_of(k, l->lane)->lanes);
    size_t body = sb->len;
    for (int j = i + 1; j < l->end; j++) {
        const kir_stmt *t = &k->stmts[j];
        int r = ilv_stream_at(l, j), w = 0;
        while (w < l->n_streams && l->row_store[w] != j) w++;
        if (j == l->lane || j == l->lane_end || w < l->n_streams) continue;
        /* a DEF that is the same in every copy is written once */
        int n = t->kind == KS_DEF && !e->varies[t->val] ? 1 : copies;
        for (e->copy = 0; e->copy < n; e->copy++) {
            if (r >= 0) {
                sb_indent(sb, ind);
                sb_printf(sb, "smelt_stream_v%d(", vec_isa_of(k, l->lane)->lanes);
                put_stream_dst(e, &l->copy_out[r]);
                sb_puts(sb, ", ");
                put_vec_operand(e, k->stmts[l->row_store[r]].val, l->lane);
                sb_puts(sb, ");\n");
            } else if (j > l->lane && j < l->lane_end) {
                TRY(put_vec_stmt(e, t, l->lane, ind));
            } else {
                TRY(emit_put_def(e, t, ind));
            }
        }
        e->copy = -1;
        if (r >= 0) j = l->copy_out[r].end;
    }
    if (!sb->oom && sb->s && !ident_in(sb->s + body, sb->len - body, lane)) {
        memmove(sb->s + decl, sb->s + body, sb->len - body + 1);
        sb->len -= body - decl;
    }
    return SMELT_OK;
}

smelt_status emit_put_ilv_loop(emitter *e, int i, const ilv_loop *l, int ind, int depth)
{
    const kir_kernel *k = e->k;
    const kir_stmt *s = &k->stmts[i];
    strbuf *sb = e->sb;
    int64_t step = k->vals[s->step].imm.i;
    e->loop_depth[s->val] = depth;
    e->loop_depth[k->stmts[l->lane].val] = depth + 1;
    e->copy_begin = i;
    e->copy_end = l->end;
    e->copy_step = step;
    /* which of the body's values differ between copies: those computed from the loop value */
    memset(e->varies, 0, (size_t)k->n_vals + 1);
    e->varies[s->val] = 1;
    for (int j = i + 1; j < l->end; j++) {
        const kir_stmt *t = &k->stmts[j];
        if (t->kind != KS_DEF) continue;
        const kir_value *x = &k->vals[t->val];
        int n = x->op == KIR_LOAD ? 1 : kir_op_arity(x->op);
        kir_val ops[3] = {x->a, x->b, x->c};
        e->varies[t->val] = 0;
        for (int o = 0; o < n; o++) e->varies[t->val] |= e->varies[ops[o]];
    }
    /* With a known trip count: no more copies than iterations, and only the loops that run. */
    const vec_isa *isa = vec_isa_of(k, l->lane);
    int copies = isa->ilv_copies;
    bool known = kir_is_const(k, s->lo) && kir_is_const(k, s->hi);
    int64_t trip = known ? (k->vals[s->hi].imm.i - k->vals[s->lo].imm.i + step - 1) / step : 0;
    if (known && trip < copies) copies = trip < 1 ? 1 : (int)trip;
    bool rest = !known || trip % copies != 0;
    sb_printf(sb, "#if %s\n", isa->guard);
    sb_indent(sb, ind);
    sb_puts(sb, "{\n");
    ind += 4;
    sb_indent(sb, ind);
    sb_printf(sb, "int64_t i%d = ", depth);
    emit_put_val(e, s->lo);
    sb_puts(sb, ";\n");
    sb_indent(sb, ind);
    sb_printf(sb, "for (; i%d + %lld < ", depth, (long long)(step * (copies - 1)));
    emit_put_val(e, s->hi);
    sb_printf(sb, "; i%d += %lld) {\n", depth, (long long)(step * copies));
    TRY(put_ilv_body(e, i, l, copies, ind + 4));
    sb_indent(sb, ind);
    sb_printf(sb, "}\n");
    if (rest) {
        sb_indent(sb, ind);
        sb_printf(sb, "for (; i%d < ", depth);
        emit_put_val(e, s->hi);
        sb_printf(sb, "; i%d += %lld) {\n", depth, (long long)step);
        TRY(put_ilv_body(e, i, l, 1, ind + 4));
        sb_indent(sb, ind);
        sb_puts(sb, "}\n");
    }
    sb_indent(sb, ind - 4);
    sb_puts(sb, "}\n#else\n");
    return SMELT_OK;
}
