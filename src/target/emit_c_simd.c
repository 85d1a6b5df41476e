/*
 * emit_c_simd.c — the C emitter's vector forms: stream loops as non-temporal
 * stores, and loops of 16 f32 lanes as AVX-512 intrinsics beside their scalar
 * loop. Both are guarded by the compiler's target macros, so the same source
 * still compiles for any CPU.
 *
 * requires: a kernel that passes kir_verify; the C dialect.
 * guarantees: the same results as the scalar code, bit for bit (the unit
 *             tests run both against the interpreter).
 */
#include "target/emit_c_impl.h"

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

/* The vector loops' helpers (see put_vec_loop): exp is mathf.inc's smelt_expf
 * op for op, 16 lanes at a time, so it gives the same bits. */
const char emit_vec_helpers[] =
    "\n#if defined(__AVX512F__)\n#include <immintrin.h>\n"
    "static inline __m512 smelt_v16_neg(__m512 a)\n"
    "{\n    return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(a), _mm512_set1_epi32((int)0x80000000u)));\n}\n"
    "static inline __m512 smelt_v16_abs(__m512 a)\n"
    "{\n    return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(a), _mm512_set1_epi32(0x7fffffff)));\n}\n"
    "static inline __m512 smelt_expf_v16(__m512 x)\n"
    "{\n"
    "    __m512i xi = _mm512_min_epi32(_mm512_castps_si512(x), _mm512_set1_epi32(0x42b20000));\n"
    "    xi = _mm512_min_epu32(xi, _mm512_set1_epi32((int)0xc2d00000u));\n"
    "    __m512 xc = _mm512_castsi512_ps(xi);\n"
    "    __m512 t = _mm512_fmadd_ps(xc, _mm512_set1_ps(1.44269504088896341f), _mm512_set1_ps(12582912.0f));\n"
    "    __m512 n = _mm512_sub_ps(t, _mm512_set1_ps(12582912.0f));\n"
    "    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), xc);\n"
    "    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.428606765330187045e-06f), r);\n"
    "    __m512 p = _mm512_set1_ps(1.9857784413684985e-4f);\n"
    "    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.393360437224704e-3f));\n"
    "    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.333360749251768e-3f));\n"
    "    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.166646546668734e-2f));\n"
    "    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666666532226573e-1f));\n"
    "    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.000000013385602e-1f));\n"
    "    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r);\n"
    "    p = _mm512_add_ps(p, _mm512_set1_ps(1.0f));\n"
    "    __m512 y = _mm512_scalef_ps(p, n); /* p * 2^n, rounded once: as (p * s1) * s2 */\n"
    "    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), y, x);\n"
    "}\n#endif\n";

/* Stream loop i as kir_loop_begin_stream's contract builds it, over [0, n):
 * loads of one workgroup f32 buffer at the loop value, one store of such a
 * load to an f32 buffer at the loop value plus a value from outside the loop.
 * Emits the copy as one smelt_stream_f32 call and returns the loop's end
 * statement; -1 (nothing emitted) for any other body. */
int emit_put_stream(emitter *e, int i, int ind)
{
    const kir_kernel *k = e->k;
    const kir_stmt *s = &k->stmts[i];
    kir_val q = s->val;
    if (!kir_is_const(k, s->lo) || k->vals[s->lo].imm.i != 0 || !kir_is_const(k, s->hi)) return -1;
    int store = -1, end = -1;
    for (int j = i + 1; j < k->n_stmts && end < 0; j++) {
        const kir_stmt *t = &k->stmts[j];
        if (t->kind == KS_LOOP_END) end = j;
        else if (t->kind == KS_STORE && store < 0) store = j;
        else if (t->kind != KS_DEF) return -1;
    }
    if (end < 0 || store < 0) return -1;
    const kir_stmt *st = &k->stmts[store];
    const kir_value *v = &k->vals[st->val], *at = &k->vals[st->idx];
    if (v->op != KIR_LOAD || v->a != q || !k->bufs[v->buf].workgroup || v->type != SMELT_F32 ||
        k->bufs[st->buf].type != SMELT_F32)
        return -1;
    kir_val base = 0;
    if (st->idx != q) {
        if (at->op != KIR_ADD || (at->a != q && at->b != q)) return -1;
        base = at->a == q ? at->b : at->a;
        if (k->vals[base].def > i) return -1;
    }
    sb_indent(e->sb, ind);
    sb_printf(e->sb, "smelt_stream_f32(&b%d[", st->buf);
    if (base) emit_put_val(e, base);
    else sb_puts(e->sb, "0");
    sb_printf(e->sb, "], b%d, %lld);\n", v->buf, (long long)k->vals[s->hi].imm.i);
    return end;
}

/* ---- vector loops (C on AVX-512) ------------------------------------------
 * A parallel loop over [0, 16) whose body is f32 arithmetic the emitter can
 * write as AVX-512 intrinsics, with loads and stores at one step per
 * iteration (or loads of one element), is emitted twice: as 16-lane vector
 * code under `#if defined(__AVX512F__)` (the integer index values computed
 * once, for lane 0) and as the scalar loop otherwise. The vector code runs
 * the scalar code's IEEE operations in the same order (exp as mathf.inc
 * spells it, min/max with a constant as the comparisons the scalar code
 * writes), so both give the same bits. What it gains over the compiler's own
 * vectorization of the scalar loop is exp's 2^n as one vscalefps (p * 2^n
 * rounded once, as the scalar (p * s1) * s2, whose first product is exact)
 * in place of six integer ops and two multiplies: the sigmoid chain at 1
 * thread ran 6.39 -> 5.80 ms (AVX-512 host). */
#define VEC_LANES 16

/* Whether a float operand of the vector body is a constant that is not NaN. */
static bool vec_plain_const(const kir_value *v) { return v->op == KIR_CONST && v->imm.f == v->imm.f; }

/* Loop i as a vector loop: its LOOP_END, or -1. */
int emit_vec_loop(const kir_kernel *k, int i)
{
    const kir_stmt *s = &k->stmts[i];
    if (s->kind != KS_LOOP_BEGIN || !s->parallel || s->stream || k->wg_size != 1 || !kir_is_const(k, s->lo) ||
        k->vals[s->lo].imm.i != 0 || !kir_is_const(k, s->hi) || k->vals[s->hi].imm.i != VEC_LANES ||
        !kir_is_const(k, s->step) || k->vals[s->step].imm.i != 1)
        return -1;
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
            if (x->type != SMELT_F32) {
                if (kir_is_float(x->type) || x->type == SMELT_BOOL) return -1;
                continue; /* an index value: emitted as is, for lane 0 */
            }
            f32++;
            int n = x->op == KIR_LOAD ? 0 : kir_op_arity(x->op);
            kir_val ops[3] = {x->a, x->b, x->c};
            for (int o = 0; o < n; o++)
                if (k->vals[ops[o]].type != SMELT_F32) return -1;
            switch (x->op) {
            case KIR_LOAD: {
                int64_t st = kir_stride(k, x->a, s->val);
                if (k->bufs[x->buf].type != SMELT_F32 || (st != 0 && st != 1)) return -1;
                break;
            }
            case KIR_ADD: case KIR_SUB: case KIR_MUL: case KIR_DIV: case KIR_NEG: case KIR_ABS: case KIR_EXP:
            case KIR_SQRT:
                break;
            case KIR_MIN: case KIR_MAX:
                if (!vec_plain_const(&k->vals[x->a]) && !vec_plain_const(&k->vals[x->b])) return -1;
                break;
            default: return -1;
            }
        } else {
            return -1;
        }
    }
    return f32 ? end : -1;
}

/* Float operand v of the vector body: its vector, or a broadcast scalar. */
static void put_vec_operand(emitter *e, kir_val v, int begin)
{
    const kir_value *x = &e->k->vals[v];
    if (x->op != KIR_CONST && x->def > begin) {
        sb_printf(e->sb, "w%d", v);
        return;
    }
    sb_puts(e->sb, "_mm512_set1_ps(");
    emit_put_val(e, v);
    sb_puts(e->sb, ")");
}

smelt_status emit_put_vec_loop(emitter *e, int i, int end, int ind, int depth)
{
    const kir_kernel *k = e->k;
    strbuf *sb = e->sb;
    e->loop_depth[k->stmts[i].val] = depth;
    sb_printf(sb, "#if defined(__AVX512F__)\n");
    sb_indent(sb, ind);
    sb_printf(sb, "{\n");
    sb_indent(sb, ind + 4);
    sb_printf(sb, "const int64_t i%d = 0; /* lane 0 of 16 */\n", depth);
    for (int j = i + 1; j < end; j++) {
        const kir_stmt *t = &k->stmts[j];
        if (t->kind == KS_STORE) {
            sb_indent(sb, ind + 4);
            sb_printf(sb, "_mm512_storeu_ps(&b%d[", t->buf);
            emit_put_val(e, t->idx);
            sb_puts(sb, "], ");
            put_vec_operand(e, t->val, i);
            sb_puts(sb, ");\n");
            continue;
        }
        const kir_value *x = &k->vals[t->val];
        if (x->type != SMELT_F32) {
            TRY(emit_put_def(e, t, ind + 4));
            continue;
        }
        sb_indent(sb, ind + 4);
        sb_printf(sb, "const __m512 w%d = ", t->val);
        const char *bin = x->op == KIR_ADD ? "add" : x->op == KIR_SUB ? "sub" : x->op == KIR_MUL ? "mul" : "div";
        switch (x->op) {
        case KIR_LOAD:
            if (kir_stride(k, x->a, k->stmts[i].val) == 1) {
                sb_printf(sb, "_mm512_loadu_ps(&b%d[", x->buf);
                emit_put_val(e, x->a);
                sb_puts(sb, "])");
            } else {
                sb_printf(sb, "_mm512_set1_ps(b%d[", x->buf);
                emit_put_val(e, x->a);
                sb_puts(sb, "])");
            }
            break;
        case KIR_ADD: case KIR_SUB: case KIR_MUL: case KIR_DIV:
            sb_printf(sb, "_mm512_%s_ps(", bin);
            put_vec_operand(e, x->a, i);
            sb_puts(sb, ", ");
            put_vec_operand(e, x->b, i);
            sb_puts(sb, ")");
            break;
        case KIR_NEG: case KIR_ABS: case KIR_EXP: case KIR_SQRT:
            sb_puts(sb, x->op == KIR_NEG ? "smelt_v16_neg(" : x->op == KIR_ABS ? "smelt_v16_abs("
                        : x->op == KIR_EXP ? "smelt_expf_v16(" : "_mm512_sqrt_ps(");
            put_vec_operand(e, x->a, i);
            sb_puts(sb, ")");
            break;
        default: { /* MIN/MAX against a constant, as put_float_expr writes them */
            bool max = x->op == KIR_MAX, b_const = vec_plain_const(&k->vals[x->b]);
            kir_val c = b_const ? x->b : x->a, v = b_const ? x->a : x->b;
            if (b_const) { /* (c > v ? c : v) is MAXPS(c, v); MINPS likewise */
                sb_printf(sb, "_mm512_%s_ps(", max ? "max" : "min");
                put_vec_operand(e, c, i);
                sb_puts(sb, ", ");
                put_vec_operand(e, v, i);
                sb_puts(sb, ")");
            } else { /* (c >= v ? c : v): a compare that keeps c on ties and NaN v */
                sb_puts(sb, "_mm512_mask_blend_ps(_mm512_cmp_ps_mask(");
                put_vec_operand(e, c, i);
                sb_puts(sb, ", ");
                put_vec_operand(e, v, i);
                sb_printf(sb, ", %s), ", max ? "_CMP_GE_OQ" : "_CMP_LE_OQ");
                put_vec_operand(e, v, i);
                sb_puts(sb, ", ");
                put_vec_operand(e, c, i);
                sb_puts(sb, ")");
            }
            break;
        }
        }
        sb_puts(sb, ";\n");
    }
    sb_indent(sb, ind);
    sb_puts(sb, "}\n#else\n");
    return SMELT_OK;
}

