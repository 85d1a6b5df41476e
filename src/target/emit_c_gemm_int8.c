/*
 * emit_c_gemm_int8.c — the C emitter's microkernels for 8-bit panels of B
 * (ir.h, IR_ENC_PANELS; ops/gemm_int8.c): a gemm loop whose B operand is
 * float(load) + offset of a uint8 or int8 buffer becomes one call of
 * smelt_gemm_f32u8_<mr>x<nr> / smelt_gemm_f32i8_<mr>x<nr>, which widens each
 * 8 bytes of a panel row into a float32 vector in registers (vpmovzxbd or
 * vpmovsxbd, vcvtdq2ps) and runs emit_c_gemm.c's register block on it.
 *
 * Exact: every widened element is an integer of magnitude below 2^24 that
 * float32 holds, so the products and sums are those of the float panels.
 * Why GCC's builtins and not a vector conversion: GCC 12 turns
 * __builtin_convertvector of 8 bytes into byte-by-byte inserts (25
 * instructions against 2); <immintrin.h> costs more compile time than a
 * model's kernels (emit_c_gemm.c). Other compilers get the plain loops.
 *
 * requires: emit_c_gemm.c's match of the loop. guarantees: the helper adds
 * the same sums as the loop as written, with FMAs where the CPU has them.
 */
#include "target/emit_c_impl.h"

bool emit_gemm_int8_operand(const kir_kernel *k, kir_val *v, smelt_dtype *dt, int32_t *offset)
{
    const kir_value *p = &k->vals[*v];
    int32_t off = 0;
    if (p->op == KIR_ADD && p->type == SMELT_F32) {
        kir_val cst = kir_is_const(k, p->b) ? p->b : kir_is_const(k, p->a) ? p->a : 0;
        if (!cst) return false;
        double f = k->vals[cst].imm.f;
        if (!(f >= -65536.0 && f <= 65536.0) || f != (double)(int32_t)f) return false;
        off = (int32_t)f;
        p = &k->vals[cst == p->b ? p->a : p->b];
    }
    if (p->op != KIR_CAST || p->type != SMELT_F32) return false;
    const kir_value *ld = &k->vals[p->a];
    if (ld->op != KIR_LOAD || (ld->type != SMELT_U8 && ld->type != SMELT_I8)) return false;
    *v = p->a, *dt = ld->type, *offset = off;
    return true;
}

/* The register block, AVX2 (8 lanes): c += a x (widened b + off). */
static void put_block(strbuf *sb, int mr, int nr, bool sgn)
{
    int nv = nr / 8;
    for (int r = 0; r < mr; r++)
        for (int v = 0; v < nv; v++)
            sb_printf(sb, "    smelt_v8 c%d_%d = *(const smelt_v8 *)(c + %d * cr + %d);\n", r, v, r, v * 8);
    sb_puts(sb, "    smelt_v8 o = {off, off, off, off, off, off, off, off};\n");
    sb_puts(sb, "    for (int64_t k = 0; k < kc; k++) {\n        const float *ap = a + k * ak;\n");
    for (int v = 0; v < nv; v++)
        sb_printf(sb,
                  "        long long u%d; __builtin_memcpy(&u%d, b + k * bk + %d, 8); smelt_q2 q%d = {u%d, 0};\n"
                  "        smelt_v8 b%d = __builtin_convertvector(__builtin_ia32_pmov%cxbd256((smelt_c16)q%d), smelt_v8) + o;\n",
                  v, v, v * 8, v, v, v, sgn ? 's' : 'z', v);
    for (int r = 0; r < mr; r++) {
        sb_printf(sb, "        { float s = ap[%d * ar]; smelt_v8 x = {s, s, s, s, s, s, s, s};", r);
        for (int v = 0; v < nv; v++) sb_printf(sb, " c%d_%d = x * b%d + c%d_%d;", r, v, v, r, v);
        sb_puts(sb, " }\n");
    }
    sb_puts(sb, "    }\n");
    for (int r = 0; r < mr; r++)
        for (int v = 0; v < nv; v++) sb_printf(sb, "    *(smelt_v8 *)(c + %d * cr + %d) = c%d_%d;\n", r, v * 8, r, v);
}

static void put_helper(strbuf *sb, int mr, int nr, bool sgn)
{
    const char *sfx = sgn ? "i8" : "u8", *ty = sgn ? "int8_t" : "uint8_t";
    sb_printf(sb,
              "static inline void smelt_gemm_f32%s_%dx%d(float *restrict c, int64_t cr, const float *restrict a, int64_t ar,\n"
              "    int64_t ak, const %s *restrict b, int64_t bk, int64_t kc, float off)\n{\n",
              sfx, mr, nr, ty);
    if (nr % 8 == 0 && mr * (nr / 8) + nr / 8 + 1 < 16) {
        sb_puts(sb, "#if defined(__GNUC__) && !defined(__clang__) && defined(__AVX2__) && defined(__FMA__)\n");
        put_block(sb, mr, nr, sgn);
        sb_puts(sb, "#else\n");
        sb_printf(sb, "    smelt_gemm_f32%s_loops(c, cr, a, ar, ak, b, bk, kc, off, %d, %d);\n#endif\n}\n", sfx, mr, nr);
    } else {
        sb_printf(sb, "    smelt_gemm_f32%s_loops(c, cr, a, ar, ak, b, bk, kc, off, %d, %d);\n}\n", sfx, mr, nr);
    }
}

static void put_loops(strbuf *sb, bool sgn)
{
    sb_printf(sb,
              "static inline void smelt_gemm_f32%s_loops(float *restrict c, int64_t cr, const float *restrict a, int64_t ar,\n"
              "    int64_t ak, const %s *restrict b, int64_t bk, int64_t kc, float off, int mr, int nr)\n"
              "{\n"
              "    for (int64_t k = 0; k < kc; k++)\n"
              "        for (int r = 0; r < mr; r++)\n"
              "            for (int j = 0; j < nr; j++) c[r * cr + j] += a[r * ar + k * ak] * ((float)b[k * bk + j] + off);\n"
              "}\n",
              sgn ? "i8" : "u8", sgn ? "int8_t" : "uint8_t");
}

void emit_put_gemm_int8_helpers(strbuf *sb, const char *body)
{
    int seen[2][64][2], n[2] = {emit_gemm_shapes(body, "smelt_gemm_f32u8_", seen[0], 64),
                                emit_gemm_shapes(body, "smelt_gemm_f32i8_", seen[1], 64)};
    if (!n[0] && !n[1]) return;
    sb_puts(sb, "\n#if defined(__GNUC__) && !defined(__clang__)\n#pragma GCC push_options\n"
                "#pragma GCC optimize(\"fp-contract=fast\")\n#endif\n"
                "#if defined(__GNUC__)\n"
                "typedef float smelt_v8 __attribute__((vector_size(32), aligned(4)));\n"
                "typedef long long smelt_q2 __attribute__((vector_size(16)));\n"
                "typedef char smelt_c16 __attribute__((vector_size(16)));\n#endif\n");
    for (int s = 0; s < 2; s++)
        if (n[s]) put_loops(sb, s == 1);
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < n[s]; i++) put_helper(sb, seen[s][i][0], seen[s][i][1], s == 1);
    sb_puts(sb, "#if defined(__GNUC__) && !defined(__clang__)\n#pragma GCC pop_options\n#endif\n");
}
