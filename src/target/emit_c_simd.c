/*
 * emit_c_simd.c — the C emitter's vector forms: stream loops as non-temporal
 * stores, loops of 16 f32 lanes as AVX-512 intrinsics beside their scalar
 * loop, and loops around those with several iterations interleaved. All are
 * guarded by the compiler's target macros, so the same source still compiles
 * for any CPU.
 *
 * requires: a kernel that passes kir_verify; the C dialect.
 * guarantees: the same results as the scalar code, bit for bit (the unit
 *             tests run both against the interpreter).
 */
#include "target/emit_c_impl.h"

#include <ctype.h>
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

/* The vector loops' helpers (see put_vec_loop): exp is mathf.inc's smelt_expf
 * op for op, 16 lanes at a time, so it gives the same bits. Its clamp is two
 * float compares where mathf.inc has two integer mins on the bits: the same
 * result for every number, and MINPS(89, x) returns x when x is NaN, so a
 * NaN runs through the polynomial and comes out as itself (quieted), as
 * smelt_expf returns it, without the compare and blend it took before. */
const char emit_vec_helpers[] =
    "\n#if defined(__AVX512F__)\n#include <immintrin.h>\n"
    "static inline __m512 smelt_v16_neg(__m512 a)\n"
    "{\n    return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(a), _mm512_set1_epi32((int)0x80000000u)));\n}\n"
    "static inline __m512 smelt_v16_nabs(__m512 a)\n"
    "{\n    return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(a), _mm512_set1_epi32((int)0x80000000u)));\n}\n"
    "static inline void smelt_stream_v16(float *d, __m512 v)\n"
    "{\n    if (((uintptr_t)d & 63) == 0) _mm512_stream_ps(d, v);\n    else _mm512_storeu_ps(d, v);\n}\n"
    "static inline __m512 smelt_v16_abs(__m512 a)\n"
    "{\n    return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(a), _mm512_set1_epi32(0x7fffffff)));\n}\n"
    "static inline __m512 smelt_expf_v16_in(__m512 xc) /* xc in [-104, 89], or NaN */\n"
    "{\n"
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
    "    return _mm512_scalef_ps(p, n); /* p * 2^n, rounded once: as (p * s1) * s2 */\n"
    "}\n"
    "static inline __m512 smelt_expf_v16(__m512 x)\n"
    "{\n"
    "    return smelt_expf_v16_in(_mm512_max_ps(_mm512_set1_ps(-104.0f), _mm512_min_ps(_mm512_set1_ps(89.0f), x)));\n"
    "}\n"
    "static inline __m512 smelt_expf_v16_le0(__m512 x) /* x <= 0, or NaN */\n"
    "{\n"
    "    return smelt_expf_v16_in(_mm512_max_ps(_mm512_set1_ps(-104.0f), x));\n"
    "}\n#endif\n";

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
    sb_puts(e->sb, "_mm512_set1_ps(");
    emit_put_val(e, v);
    sb_puts(e->sb, ")");
}

/* Whether f32 value v is folded into the NEG that is its one use: -|x| is
 * one OR of the sign bit (smelt_v16_nabs), -(a * b) one fnmadd(a, b, -0)
 * (rounded once, as the product, whose negation is exact; -0 keeps a zero
 * product's sign). Such a value is not written itself. */
static bool vec_folded(const emitter *e, kir_val v)
{
    const kir_kernel *k = e->k;
    if ((k->vals[v].op != KIR_ABS && k->vals[v].op != KIR_MUL) || e->uses[v] != 1) return false;
    for (int j = k->vals[v].def + 1; j < k->n_stmts; j++) {
        const kir_stmt *t = &k->stmts[j];
        if (t->kind == KS_DEF && k->vals[t->val].op == KIR_NEG && k->vals[t->val].a == v) return true;
    }
    return false;
}

/* One DEF or STORE of the vector loop that begins at statement `begin`. */
static smelt_status put_vec_stmt(emitter *e, const kir_stmt *t, int begin, int ind)
{
    const kir_kernel *k = e->k;
    strbuf *sb = e->sb;
    if (t->kind == KS_STORE) {
        sb_indent(sb, ind);
        sb_printf(sb, "_mm512_storeu_ps(&b%d[", t->buf);
        emit_put_val(e, t->idx);
        sb_puts(sb, "], ");
        put_vec_operand(e, t->val, begin);
        sb_puts(sb, ");\n");
        return SMELT_OK;
    }
    const kir_value *x = &k->vals[t->val];
    if (x->type != SMELT_F32) return emit_put_def(e, t, ind);
    if (vec_folded(e, t->val)) return SMELT_OK;
    sb_indent(sb, ind);
    char name[32];
    sb_printf(sb, "const __m512 %s = ", kir_locals_shadow(t->val, true, e->copy, name, sizeof name));
    const char *bin = x->op == KIR_ADD ? "add" : x->op == KIR_SUB ? "sub" : x->op == KIR_MUL ? "mul" : "div";
    switch (x->op) {
    case KIR_LOAD:
        sb_printf(sb, kir_stride(k, x->a, k->stmts[begin].val) == 1 ? "_mm512_loadu_ps(&b%d[" : "_mm512_set1_ps(b%d[",
                  x->buf);
        emit_put_val(e, x->a);
        sb_puts(sb, "])");
        break;
    case KIR_ADD: case KIR_SUB: case KIR_MUL: case KIR_DIV:
        sb_printf(sb, "_mm512_%s_ps(", bin);
        put_vec_operand(e, x->a, begin);
        sb_puts(sb, ", ");
        put_vec_operand(e, x->b, begin);
        sb_puts(sb, ")");
        break;
    case KIR_NEG: case KIR_ABS: case KIR_EXP: case KIR_SQRT: {
        kir_val a = x->a;
        if (x->op == KIR_NEG && k->vals[a].op == KIR_MUL && k->vals[a].def > begin && vec_folded(e, a)) {
            sb_puts(sb, "_mm512_fnmadd_ps(");
            put_vec_operand(e, k->vals[a].a, begin);
            sb_puts(sb, ", ");
            put_vec_operand(e, k->vals[a].b, begin);
            sb_puts(sb, ", _mm512_set1_ps(-0.0f))");
            break;
        }
        bool nabs = x->op == KIR_NEG && k->vals[a].op == KIR_ABS && k->vals[a].def > begin;
        if (nabs) a = k->vals[a].a;
        /* exp(-|y|): the argument is <= 0 (or NaN), so only the lower clamp can bite */
        bool le0 = x->op == KIR_EXP && k->vals[a].op == KIR_NEG && k->vals[k->vals[a].a].op == KIR_ABS;
        sb_puts(sb, nabs ? "smelt_v16_nabs(" : x->op == KIR_NEG ? "smelt_v16_neg(" : x->op == KIR_ABS ? "smelt_v16_abs("
                    : le0 ? "smelt_expf_v16_le0(" : x->op == KIR_EXP ? "smelt_expf_v16(" : "_mm512_sqrt_ps(");
        put_vec_operand(e, a, begin);
        sb_puts(sb, ")");
        break;
    }
    default: { /* MIN/MAX against a constant, as put_float_expr writes them */
        bool max = x->op == KIR_MAX, b_const = vec_plain_const(&k->vals[x->b]);
        kir_val c = b_const ? x->b : x->a, v = b_const ? x->a : x->b;
        if (b_const) { /* (c > v ? c : v) is MAXPS(c, v); MINPS likewise */
            sb_printf(sb, "_mm512_%s_ps(", max ? "max" : "min");
            put_vec_operand(e, c, begin);
            sb_puts(sb, ", ");
            put_vec_operand(e, v, begin);
            sb_puts(sb, ")");
        } else { /* (c >= v ? c : v): a compare that keeps c on ties and NaN v */
            sb_puts(sb, "_mm512_mask_blend_ps(_mm512_cmp_ps_mask(");
            put_vec_operand(e, c, begin);
            sb_puts(sb, ", ");
            put_vec_operand(e, v, begin);
            sb_printf(sb, ", %s), ", max ? "_CMP_GE_OQ" : "_CMP_LE_OQ");
            put_vec_operand(e, v, begin);
            sb_puts(sb, ", ");
            put_vec_operand(e, c, begin);
            sb_puts(sb, ")");
        }
        break;
    }
    }
    sb_puts(sb, ";\n");
    return SMELT_OK;
}

smelt_status emit_put_vec_loop(emitter *e, int i, int end, int ind, int depth)
{
    strbuf *sb = e->sb;
    e->loop_depth[e->k->stmts[i].val] = depth;
    sb_printf(sb, "#if defined(__AVX512F__)\n");
    sb_indent(sb, ind);
    sb_printf(sb, "{\n");
    sb_indent(sb, ind + 4);
    sb_printf(sb, "const int64_t i%d = 0; /* lane 0 of 16 */\n", depth);
    for (int j = i + 1; j < end; j++) TRY(put_vec_stmt(e, &e->k->stmts[j], i, ind + 4));
    sb_indent(sb, ind);
    sb_puts(sb, "}\n#else\n");
    return SMELT_OK;
}

/* ---- interleaved loops (C on AVX-512) -------------------------------------
 * A vector loop's 16 lanes are one dependent chain of operations: exp alone
 * is ~20 of them, each waiting for the last, and the out-of-order core finds
 * too few independent ones to keep its vector units busy. A loop around a
 * vector loop whose iterations are independent is therefore written with
 * ILV_COPIES of its iterations at once, statement by statement (each
 * statement for copy 0, 1, ..., then the next), then one at a time for the
 * rest. Its body may hold index and scalar DEFs, the vector loop, and a
 * stream loop that copies the vector loop's row out (kir.h, "Streaming"):
 * then each copy's vector goes straight to its destination with one
 * non-temporal store (smelt_stream_v16), with no row in between.
 *
 * The iterations are independent when no buffer the body stores to (or that
 * aliases one) is loaded in it, each is stored once per iteration, and an
 * iteration's 16 elements and the next's do not overlap (the store index
 * moves by at least 16 per iteration). Each copy then does what its
 * iteration did, in the same order, so the results are the same bits; only
 * the order of independent stores changes. Measured on the 4096x4096
 * transpose-and-sigmoid chain at 1 thread: 5.5 -> 4.3 ms with 8 copies
 * (4 copies: 4.7). */
#define ILV_COPIES 8
#define ILV_MAX_STORED 16

/* Whether index `at` of a store that steps 1 per lane moves by at least a
 * vector's lanes per iteration of loop i. */
static bool ilv_apart(const kir_kernel *k, kir_val at, int i)
{
    const kir_stmt *s = &k->stmts[i];
    int64_t d = kir_stride(k, at, s->val), step = k->vals[s->step].imm.i;
    if (d == KIR_STRIDE_UNKNOWN || d > INT32_MAX || d < -INT32_MAX) return false;
    d *= step;
    return d >= VEC_LANES || d <= -VEC_LANES;
}

/* Whether buffer b is one of the n stored buffers st[] or aliases one. */
static bool ilv_stored(const int *alias, const int *st, int n, int b)
{
    for (int x = 0; x < n; x++)
        if (st[x] == b || (alias && alias[b] == st[x])) return true;
    return false;
}

bool emit_ilv_loop(const kir_kernel *k, const int *alias, int i, ilv_loop *l)
{
    const kir_stmt *s = &k->stmts[i];
    if (s->kind != KS_LOOP_BEGIN || s->parallel || s->stream || k->wg_size != 1 || !kir_is_const(k, s->step) ||
        k->vals[s->step].imm.i <= 0)
        return false;
    *l = (ilv_loop){.end = -1, .lane = -1, .stream = -1, .row_store = -1};
    for (int j = i + 1; j < k->n_stmts && l->end < 0; j++) {
        const kir_stmt *t = &k->stmts[j];
        if (t->kind == KS_LOOP_END) {
            l->end = j;
        } else if (t->kind == KS_LOOP_BEGIN && l->lane < 0) {
            l->lane = j;
            l->lane_end = j = emit_vec_loop(k, j);
            if (j < 0) return false;
        } else if (t->kind == KS_LOOP_BEGIN && t->stream && l->stream < 0) {
            if (!match_stream(k, j, &l->copy_out) || l->copy_out.n != VEC_LANES) return false;
            l->stream = j;
            j = l->copy_out.end;
        } else if (t->kind != KS_DEF) {
            return false;
        }
    }
    if (l->end < 0 || l->lane < 0) return false;
    /* the stored buffers: the vector loop's, or for its row the stream loop's */
    int stored[ILV_MAX_STORED], n = 0;
    for (int j = l->lane + 1; j < l->lane_end; j++) {
        const kir_stmt *t = &k->stmts[j];
        if (t->kind != KS_STORE) continue;
        if (k->bufs[t->buf].workgroup) {
            if (l->row_store >= 0 || l->stream < 0 || t->idx != k->stmts[l->lane].val) return false;
            l->row_store = j;
            continue;
        }
        if (n == ILV_MAX_STORED || ilv_stored(alias, stored, n, t->buf) || !ilv_apart(k, t->idx, i)) return false;
        stored[n++] = t->buf;
    }
    if (l->stream >= 0) {
        if (l->row_store < 0) return false;
        int row = l->copy_out.row, st = l->copy_out.store;
        if (row != k->stmts[l->row_store].buf || n == ILV_MAX_STORED || ilv_stored(alias, stored, n, k->stmts[st].buf) ||
            !ilv_apart(k, k->stmts[st].idx, i))
            return false;
        stored[n++] = k->stmts[st].buf;
        /* the row holds nothing else: no other statement of the kernel touches it */
        for (int j = 0; j < k->n_stmts; j++) {
            const kir_stmt *t = &k->stmts[j];
            bool touches = (t->kind == KS_STORE || t->kind == KS_PREFETCH) && t->buf == row;
            touches |= t->kind == KS_DEF && k->vals[t->val].op == KIR_LOAD && k->vals[t->val].buf == row;
            if (touches && j != l->row_store && (j <= l->stream || j >= l->copy_out.end)) return false;
        }
    } else if (l->row_store >= 0) {
        return false;
    }
    /* and nothing the body loads is stored in it */
    for (int j = i + 1; j < l->end; j++) {
        if (j == l->stream) j = l->copy_out.end;
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
    sb_printf(sb, "const int64_t %s = 0; /* lane 0 of 16 */\n", lane);
    size_t body = sb->len;
    for (int j = i + 1; j < l->end; j++) {
        const kir_stmt *t = &k->stmts[j];
        if (j == l->lane || j == l->lane_end || j == l->row_store) continue;
        /* a DEF that is the same in every copy is written once */
        int n = t->kind == KS_DEF && !e->varies[t->val] ? 1 : copies;
        for (e->copy = 0; e->copy < n; e->copy++) {
            if (j == l->stream) {
                sb_indent(sb, ind);
                sb_puts(sb, "smelt_stream_v16(");
                put_stream_dst(e, &l->copy_out);
                sb_puts(sb, ", ");
                put_vec_operand(e, k->stmts[l->row_store].val, l->lane);
                sb_puts(sb, ");\n");
            } else if (j > l->lane && j < l->lane_end) {
                TRY(put_vec_stmt(e, t, l->lane, ind));
            } else {
                TRY(emit_put_def(e, t, ind));
            }
        }
        e->copy = -1;
        if (j == l->stream) j = l->copy_out.end;
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
    int copies = ILV_COPIES;
    bool known = kir_is_const(k, s->lo) && kir_is_const(k, s->hi);
    int64_t trip = known ? (k->vals[s->hi].imm.i - k->vals[s->lo].imm.i + step - 1) / step : 0;
    if (known && trip < copies) copies = trip < 1 ? 1 : (int)trip;
    bool rest = !known || trip % copies != 0;
    sb_puts(sb, "#if defined(__AVX512F__)\n");
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
