/*
 * emit_c_gemm_int8.c — the C emitter's microkernels for 8-bit panels of B
 * (ir.h, IR_ENC_PANELS; ops/gemm_int8.c): a gemm loop whose B operand is
 * float(load) + offset of a uint8 or int8 buffer becomes one call of
 * smelt_gemm_f32u8_<mr>x<nr> / smelt_gemm_f32i8_<mr>x<nr>, which runs one of
 * three register blocks:
 *
 *   uint8 quads   (32-column helpers, where the C compiler targets AVX512-VNNI
 *                 and VBMI: SMELT_GEMM_VNNI) A as uint8 in memory (A's int16
 *                 copy less its least value, when its values span at most
 *                 255: smelt_a8), B's rows k..k+3 interleaved by vpermt2b and
 *                 made int8 (uint8 B: b ^ 0x80, i.e. b - 128), vpdpbusd into
 *                 int32 accumulators: 4 products a lane an instruction, twice
 *                 vpmaddwd's, with no widening of B; the offsets come back
 *                 exactly at the end (put_quad_block) from A's row sums and
 *                 B's column sums (one vpdpbusd against ones per B vector),
 *                 under the same bound as the int16 pairs, so the call adds
 *                 the same integers;
 *   int16 pairs   A as int16 in memory, B's rows k and k+1 interleaved and
 *                 widened to int16 in registers (vpunpck*bw via a shuffle,
 *                 vpmovzxbw / vpmovsxbw, vpaddw for the offset), vpmaddwd
 *                 into int32 accumulators, converted to float and added to
 *                 C at the end of the call;
 *   float32       each 8 bytes of a panel row widened to a float32 vector
 *                 (vpmovzxbd or vpmovsxbd, vcvtdq2ps), emit_c_gemm.c's FMAs.
 *
 * The int16 copy of A: where A is a float32 parameter of at most A16_MAX
 * elements that the kernel only reads, the kernel converts all of it once at
 * its start (once per work-group: each unit reads all of A, so that is once
 * per unit and K slice) with smelt_a16, which gives the largest |a|, or -1
 * where some element is not an integer of magnitude at most 32767 (then every
 * call takes the float32 block). A call takes the int16 block when A's k
 * stride is 1 and amax * bmax * kc <= 2^24 (bmax: the largest |b + offset|
 * the 8-bit type allows): then each int32 sum of the call is an integer of
 * magnitude at most 2^24, no pair sum or partial sum overflows, and its
 * float32 conversion is exact, so the call adds to C what the float32 block
 * adds (whose partial sums are those integers too, exactly). For
 * ddddocr_ocr_quant's MatMulInteger (A uint8 less a uint8 zero point, so
 * |a| <= 255; B uint8 panels less 119, |b| <= 136; kc 256) that is
 * 255 * 136 * 256 = 8.9e6.
 * Why pairs (bench/int16_pairs.c, onnx/quantized.c's note): on AVX2 without
 * VNNI, vpmaddwd does 16 exact products an instruction against 8 FMAs.
 *
 * Why GCC's builtins and not a vector conversion: GCC 12 turns
 * __builtin_convertvector of 8 bytes into byte-by-byte inserts (25
 * instructions against 2); <immintrin.h> costs more compile time than a
 * model's kernels (emit_c_gemm.c). Other compilers get the plain loops.
 *
 * requires: emit_c_gemm.c's match of the loop. guarantees: the helper adds
 * the same sums as the loop as written, with FMAs where the CPU has them.
 */
#include "target/emit_c_impl.h"

#include <string.h>

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

/* One k pair of the int16-pair block, AVX2 (wide false: 16 columns a group,
 * 8 int32 lanes a vector) or AVX-512BW (wide: 32 and 16); tail: k is the
 * last row, its partner 0. Each group's rows k and k + 1 are interleaved in
 * two halves, widened to int16 plus the offset o, and multiplied by each
 * row's broadcast A pair. */
static void put_pair_step(strbuf *sb, int mr, int ng, bool sgn, bool tail, bool wide)
{
    int w = wide ? 32 : 16; /* bytes of a group's row */
    const char *bv = wide ? "smelt_b32" : "smelt_b16", *hv = wide ? "smelt_h32" : "smelt_h16", *iv = wide ? "smelt_i16" : "smelt_i8";
    char x = sgn ? 's' : 'z';
    if (tail) sb_printf(sb, "            %s z = {0};\n", bv);
    for (int g = 0; g < ng; g++) {
        sb_printf(sb, "            %s r%d = *(const %s *)(b + k * bk + %d), t%d = ", bv, g, bv, g * w, g);
        if (tail) sb_puts(sb, "z;\n");
        else sb_printf(sb, "*(const %s *)(b + (k + 1) * bk + %d);\n", bv, g * w);
        for (int half = 0; half < 2; half++) {
            sb_printf(sb, "            %s l%d_%d = __builtin_shufflevector(r%d, t%d", bv, g, half, g, g);
            for (int j = 0; j < w / 2; j++) sb_printf(sb, ", %d, %d", half * w / 2 + j, w + half * w / 2 + j);
            sb_puts(sb, ");\n");
            if (wide)
                sb_printf(sb, "            %s w%d = (%s)__builtin_ia32_pmov%cxbw512_mask(l%d_%d, (%s){0}, 0xffffffffu) + o;\n", hv,
                          2 * g + half, hv, x, g, half, hv);
            else
                sb_printf(sb, "            %s w%d = (%s)__builtin_ia32_pmov%cxbw256(l%d_%d) + o;\n", hv, 2 * g + half, hv, x, g, half);
        }
    }
    for (int r = 0; r < mr; r++) {
        if (tail) sb_printf(sb, "            { int32_t p = (uint16_t)q[%d * ar + k];", r);
        else sb_printf(sb, "            { int32_t p; __builtin_memcpy(&p, q + %d * ar + k, 4);", r);
        sb_printf(sb, " %s x = {p", iv);
        for (int l = 1; l < w / 2; l++) sb_puts(sb, ", p");
        sb_puts(sb, "};");
        for (int v = 0; v < 2 * ng; v++) {
            if (wide)
                sb_printf(sb, " s%d_%d += (%s)__builtin_ia32_pmaddwd512_mask((%s)x, w%d, (%s){0}, 0xffff);", r, v, iv, hv, v, iv);
            else
                sb_printf(sb, " s%d_%d += (%s)__builtin_ia32_pmaddwd256((%s)x, w%d);", r, v, iv, hv, v);
        }
        sb_puts(sb, " }\n");
    }
}

/* The AVX-512 VNNI block (see the header), inside the pair block's bound:
 * vpdpbusd of A's uint8 copy (a + as) and B's k quads as int8 (uint8 B
 * less 128: b ^ 0x80), each group's four rows interleaved by one vpermt2b a
 * half; then the sums as the pair block's: dot + d * rowsum(a + as)
 * - as * colsum(b8) - as * d * kc, d = off (+ 128 for uint8), in uint32
 * lanes (modulo 2^32; the sum itself is within 2^24). tail: rows k.. kc-1,
 * the others zero. */
static void put_quad_step(strbuf *sb, int mr, int ng, bool sgn, bool tail)
{
    for (int g = 0; g < ng; g++) {
        for (int i = 0; i < 4; i++) {
            sb_printf(sb, "            smelt_b32 r%d_%d = ", g, i);
            if (tail && i) sb_printf(sb, "k + %d < kc ? *(const smelt_b32 *)(b + (k + %d) * bk + %d) : z;\n", i, i, g * 32);
            else sb_printf(sb, "*(const smelt_b32 *)(b + (k + %d) * bk + %d);\n", i, g * 32);
            if (tail && !sgn) sb_printf(sb, "            if (k + %d < kc) r%d_%d ^= (smelt_b32)x32;\n", i, g, i);
        }
        sb_printf(sb, "            smelt_b64 p%d_0 = __builtin_shufflevector(r%d_0, r%d_1", g, g, g);
        for (int j = 0; j < 64; j++) sb_printf(sb, ", %d", j);
        sb_printf(sb, "), p%d_1 = __builtin_shufflevector(r%d_2, r%d_3", g, g, g);
        for (int j = 0; j < 64; j++) sb_printf(sb, ", %d", j);
        sb_puts(sb, ");\n");
        for (int half = 0; half < 2; half++) {
            sb_printf(sb, "            smelt_b64 w%d = __builtin_shufflevector(p%d_0, p%d_1", 2 * g + half, g, g);
            for (int j = 0; j < 16; j++) {
                int c = half * 16 + j;
                sb_printf(sb, ", %d, %d, %d, %d", c, 32 + c, 64 + c, 96 + c);
            }
            sb_printf(sb, ")%s;\n", !tail && !sgn ? " ^ x80" : "");
            sb_printf(sb, "            cs%d = (smelt_i16)__builtin_ia32_vpdpbusd_v16si(cs%d, (smelt_i16)ones, (smelt_i16)w%d);\n",
                      2 * g + half, 2 * g + half, 2 * g + half);
        }
    }
    for (int r = 0; r < mr; r++) {
        if (tail) sb_printf(sb, "            { int32_t p = 0; __builtin_memcpy(&p, q8 + %d * ar + k, kc - k);", r);
        else sb_printf(sb, "            { int32_t p; __builtin_memcpy(&p, q8 + %d * ar + k, 4);", r);
        sb_puts(sb, " smelt_i16 x = {p, p, p, p, p, p, p, p, p, p, p, p, p, p, p, p};");
        for (int v = 0; v < 2 * ng; v++)
            sb_printf(sb, " s%d_%d = (smelt_i16)__builtin_ia32_vpdpbusd_v16si(s%d_%d, x, (smelt_i16)w%d);", r, v, r, v, v);
        sb_puts(sb, " }\n");
    }
}

static void put_quad_block(strbuf *sb, int mr, int nr, bool sgn)
{
    int ng = nr / 32;
    sb_puts(sb, "#if SMELT_GEMM_VNNI\n"
                "        if (as != SMELT_A8_NONE) {\n"
                "            const uint8_t *q8 = a8 + (a - a0);\n");
    sb_puts(sb, "            const smelt_b64 ones = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,\n"
                "                                    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};\n");
    if (!sgn) {
        sb_puts(sb, "            const smelt_b64 x80 = ones * (char)-128;\n            const smelt_b32 x32 = {");
        for (int j = 0; j < 32; j++) sb_puts(sb, j ? ", -128" : "-128");
        sb_puts(sb, "};\n");
    }
    for (int r = 0; r < mr; r++)
        for (int v = 0; v < 2 * ng; v++) sb_printf(sb, "            smelt_i16 s%d_%d = {0};\n", r, v);
    for (int v = 0; v < 2 * ng; v++) sb_printf(sb, "            smelt_i16 cs%d = {0};\n", v);
    sb_puts(sb, "            int64_t k = 0;\n            for (; k + 3 < kc; k += 4) {\n");
    put_quad_step(sb, mr, ng, sgn, false);
    sb_puts(sb, "            }\n            if (k < kc) {\n                const smelt_b32 z = {0};\n");
    put_quad_step(sb, mr, ng, sgn, true);
    sb_printf(sb, "            }\n"
                  "            const int64_t d = ob%s;\n"
                  "            const unsigned su = (unsigned)as;\n", sgn ? "" : " + 128");
    for (int r = 0; r < mr; r++) {
        sb_printf(sb, "            { const unsigned t = (unsigned)(d * smelt_rowsum8(q8 + %d * ar, kc) - (int64_t)as * d * kc);\n", r);
        for (int v = 0; v < 2 * ng; v++)
            sb_printf(sb,
                      "              *(smelt_f16 *)(c + %d * cr + %d) += __builtin_convertvector((smelt_i16)((smelt_u16)s%d_%d + t - su * "
                      "(smelt_u16)cs%d), smelt_f16);\n",
                      r, v * 16, r, v, v);
        sb_puts(sb, "            }\n");
    }
    sb_puts(sb, "            return;\n        }\n#else\n        (void)a8, (void)as;\n#endif\n");
}

/* The int16-pair register block, taken when the call's bound allows (see
 * the header), else what follows it runs: AVX2 (wide false: 16 columns a
 * group, 8 int32 lanes a vector) or AVX-512BW (wide: the AVX2 block twice
 * as wide, for the target's 8 x 32 tiles, whose AVX2 blocks do not fit 16
 * registers and ran the plain loops). */
static void put_pair_block(strbuf *sb, int mr, int nr, bool sgn, bool wide)
{
    int ng = nr / (wide ? 32 : 16), lanes = wide ? 16 : 8;
    const char *h = wide ? "smelt_h32" : "smelt_h16", *acc = wide ? "smelt_i16" : "smelt_i8",
               *fv = wide ? "smelt_f16" : "smelt_v8";
    sb_printf(sb, "    int32_t ob = (int32_t)off, bm = %s;\n",
              sgn ? "(ob - 128 < 0 ? 128 - ob : ob - 128) > (ob + 127 < 0 ? -ob - 127 : ob + 127) ? "
                    "(ob - 128 < 0 ? 128 - ob : ob - 128) : (ob + 127 < 0 ? -ob - 127 : ob + 127)"
                  : "(ob < 0 ? -ob : ob) > (ob + 255 < 0 ? -ob - 255 : ob + 255) ? (ob < 0 ? -ob : ob) : "
                    "(ob + 255 < 0 ? -ob - 255 : ob + 255)");
    sb_puts(sb, "    if (am >= 0 && ak == 1 && bm <= 32767 && (int64_t)am * bm * kc <= 16777216) {\n"
                "        const int16_t *q = a16 + (a - a0);\n"
                "        short os = (short)ob;\n");
    if (nr % 32 == 0) put_quad_block(sb, mr, nr, sgn);
    else sb_puts(sb, "        (void)a8, (void)as;\n");
    sb_printf(sb, "        %s o = {os, os, os, os, os, os, os, os, os, os, os, os, os, os, os, os%s};\n", h,
              wide ? ",\n                       os, os, os, os, os, os, os, os, os, os, os, os, os, os, os, os" : "");
    for (int r = 0; r < mr; r++)
        for (int v = 0; v < 2 * ng; v++) sb_printf(sb, "        %s s%d_%d = {0};\n", acc, r, v);
    sb_puts(sb, "        int64_t k = 0;\n        for (; k + 1 < kc; k += 2) {\n");
    put_pair_step(sb, mr, ng, sgn, false, wide);
    sb_puts(sb, "        }\n        if (k < kc) {\n");
    put_pair_step(sb, mr, ng, sgn, true, wide);
    sb_puts(sb, "        }\n");
    for (int r = 0; r < mr; r++)
        for (int v = 0; v < 2 * ng; v++)
            sb_printf(sb, "        *(%s *)(c + %d * cr + %d) += __builtin_convertvector(s%d_%d, %s);\n", fv, r, v * lanes,
                      r, v, fv);
    sb_puts(sb, "        return;\n    }\n");
}

/* smelt_gemm_f32<u8|i8>_<mr>x<nr>: c[r*cr + j] += sum over k of a[r*ar + k*ak] * (b[k*bk + j] + off);
 * a16 (0: none) holds A as int16 at the same offsets from a0, am its
 * largest |value| (-1: not all integers within 32767); a8 A + as as uint8
 * (as SMELT_A8_NONE: none). */
static void put_helper(strbuf *sb, int mr, int nr, bool sgn)
{
    const char *sfx = sgn ? "i8" : "u8", *ty = sgn ? "int8_t" : "uint8_t";
    sb_printf(sb,
              "static inline void smelt_gemm_f32%s_%dx%d(float *restrict c, int64_t cr, const float *restrict a, int64_t ar,\n"
              "    int64_t ak, const %s *restrict b, int64_t bk, int64_t kc, float off, const int16_t *restrict a16,\n"
              "    const float *a0, int32_t am, const uint8_t *restrict a8, int32_t as)\n{\n",
              sfx, mr, nr, ty);
    if (nr % 32 == 0 && mr * (nr / 16) + nr / 16 + 2 <= 32 && !(nr % 8 == 0 && mr * (nr / 8) + nr / 8 + 1 < 16)) {
        /* AVX-512BW: the pair block, else (past its bound) the loops */
        sb_puts(sb, "#if defined(__GNUC__) && !defined(__clang__) && defined(__AVX512BW__)\n");
        put_pair_block(sb, mr, nr, sgn, true);
        sb_puts(sb, "#else\n    (void)a16, (void)a0, (void)am, (void)a8, (void)as;\n#endif\n");
        sb_printf(sb, "    smelt_gemm_f32%s_loops(c, cr, a, ar, ak, b, bk, kc, off, %d, %d);\n}\n", sfx, mr, nr);
    } else if (nr % 8 == 0 && mr * (nr / 8) + nr / 8 + 1 < 16) {
        sb_puts(sb, "#if defined(__GNUC__) && !defined(__clang__) && defined(__AVX2__) && defined(__FMA__)\n");
        if (nr % 16 == 0 && mr * (nr / 8) + nr / 8 + 2 <= 16) put_pair_block(sb, mr, nr, sgn, false);
        else sb_puts(sb, "    (void)a16, (void)a0, (void)am, (void)a8, (void)as;\n");
        put_block(sb, mr, nr, sgn);
        sb_puts(sb, "#else\n    (void)a16, (void)a0, (void)am, (void)a8, (void)as;\n");
        sb_printf(sb, "    smelt_gemm_f32%s_loops(c, cr, a, ar, ak, b, bk, kc, off, %d, %d);\n#endif\n}\n", sfx, mr, nr);
    } else {
        sb_puts(sb, "    (void)a16, (void)a0, (void)am, (void)a8, (void)as;\n");
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

/* The int16 copy of A (see the header): n floats to int16, the largest |value|,
 * or -1 where one is not an integer of magnitude at most 32767. */
static const char a16_helper[] =
    "static int32_t smelt_a16(int16_t *restrict q, const float *restrict a, int64_t n)\n"
    "{\n"
    "    int32_t m = 0, bad = 0;\n"
    "    for (int64_t i = 0; i < n; i++) {\n"
    "        float x = a[i];\n"
    "        int32_t t = (int32_t)(x >= -32767.0f && x <= 32767.0f ? x : 0.0f);\n"
    "        bad |= (float)t != x;\n"
    "        int32_t u = t < 0 ? -t : t;\n"
    "        m = u > m ? u : m;\n"
    "        q[i] = (int16_t)t;\n"
    "    }\n"
    "    return bad ? -1 : m;\n"
    "}\n";

/* The uint8 copy of A for the VNNI block (see put_quad_block): the int16
 * copy less its least value, and the shift (SMELT_A8_NONE: no int16 copy, or
 * its values more than 255 apart); and the sum of n bytes. */
static const char a8_helper[] =
    "#if SMELT_GEMM_VNNI\n"
    "static int32_t smelt_a8(uint8_t *restrict q8, const int16_t *restrict q, int64_t n, int32_t am)\n"
    "{\n"
    "    if (am < 0) return SMELT_A8_NONE;\n"
    "    int32_t lo = 32767, hi = -32768;\n"
    "    for (int64_t i = 0; i < n; i++) {\n"
    "        lo = q[i] < lo ? q[i] : lo;\n"
    "        hi = q[i] > hi ? q[i] : hi;\n"
    "    }\n"
    "    if (hi - lo > 255) return SMELT_A8_NONE;\n"
    "    for (int64_t i = 0; i < n; i++) q8[i] = (uint8_t)(q[i] - lo);\n"
    "    return -lo;\n"
    "}\n"
    "static inline int64_t smelt_rowsum8(const uint8_t *q, int64_t n)\n"
    "{\n"
    "    smelt_l8 s = {0};\n"
    "    int64_t i = 0, t = 0;\n"
    "    for (; i + 64 <= n; i += 64)\n"
    "        s += (smelt_l8)__builtin_ia32_psadbw512(*(const smelt_b64u *)(q + i), (smelt_b64){0});\n"
    "    for (; i < n; i++) t += q[i];\n"
    "    return t + s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];\n"
    "}\n"
    "#endif\n";

#define A16_MAX 32768 /* elements: 64 KiB of int16 on the kernel's stack */

/* Whether the kernel keeps an int16 copy of buffer b (a16_<b>, its bound a16m_<b>). */
static bool has_a16(const emitter *e, int b)
{
    const kir_kernel *k = e->k;
    if (b < 0) return false;
    const kir_buffer *kb = &k->bufs[b];
    if (kb->type != SMELT_F32 || kb->workgroup || kb->written || kb->numel < 1 || kb->numel > A16_MAX ||
        (e->alias && e->alias[b] >= 0))
        return false;
    for (int i = 0; i < k->n_stmts; i++)
        if (k->stmts[i].kind == KS_LOOP_BEGIN && k->stmts[i].gemm && emit_gemm_int8_a(k, i) == b) return true;
    return false;
}

void emit_put_gemm_int8_scratch(emitter *e)
{
    if (!e->d->host_simd) return;
    for (int b = 0; b < e->k->n_bufs; b++)
        if (has_a16(e, b))
        {
            long long n = (long long)e->k->bufs[b].numel;
            sb_printf(e->sb, "    int16_t a16_%d[%lld];\n    const int32_t a16m_%d = smelt_a16(a16_%d, b%d, %lld);\n", b, n, b,
                      b, b, n);
            sb_printf(e->sb,
                      "#if SMELT_GEMM_VNNI\n    uint8_t a8_%d[%lld];\n    const int32_t a8s_%d = smelt_a8(a8_%d, a16_%d, %lld, a16m_%d);\n"
                      "#else\n    const uint8_t *const a8_%d = 0;\n    const int32_t a8s_%d = SMELT_A8_NONE;\n#endif\n",
                      b, n, b, b, b, n, b, b, b);
        }
}

void emit_put_gemm_int8_tail(emitter *e, int a, int32_t offset)
{
    if (has_a16(e, a)) sb_printf(e->sb, ", %d.0f, a16_%d, b%d, a16m_%d, a8_%d, a8s_%d", (int)offset, a, a, a, a, a);
    else sb_printf(e->sb, ", %d.0f, 0, 0, -1, 0, SMELT_A8_NONE", (int)offset);
}

void emit_put_gemm_int8_helpers(strbuf *sb, const char *body)
{
    int seen[2][64][2], n[2] = {emit_gemm_shapes(body, "smelt_gemm_f32u8_", seen[0], 64),
                                emit_gemm_shapes(body, "smelt_gemm_f32i8_", seen[1], 64)};
    bool a16 = strstr(body, "smelt_a16(") != NULL;
    if (!n[0] && !n[1] && !a16) return;
    sb_puts(sb, "\n#if defined(__GNUC__) && !defined(__clang__)\n#pragma GCC push_options\n"
                "#pragma GCC optimize(\"fp-contract=fast\")\n#endif\n"
                "#if defined(__GNUC__)\n"
                "typedef float smelt_v8 __attribute__((vector_size(32), aligned(4)));\n"
                "typedef long long smelt_q2 __attribute__((vector_size(16)));\n"
                "typedef char smelt_c16 __attribute__((vector_size(16)));\n"
                "typedef char smelt_b16 __attribute__((vector_size(16), aligned(1)));\n"
                "typedef short smelt_h16 __attribute__((vector_size(32), aligned(2)));\n"
                "typedef int smelt_i8 __attribute__((vector_size(32), aligned(4)));\n"
                "typedef char smelt_b32 __attribute__((vector_size(32), aligned(1)));\n"
                "typedef short smelt_h32 __attribute__((vector_size(64), aligned(2)));\n"
                "typedef int smelt_i16 __attribute__((vector_size(64), aligned(4)));\n"
                "typedef float smelt_f16 __attribute__((vector_size(64), aligned(4)));\n"
                "typedef char smelt_b64 __attribute__((vector_size(64)));\n"
                "typedef char smelt_b64u __attribute__((vector_size(64), aligned(1)));\n"
                "typedef unsigned smelt_u16 __attribute__((vector_size(64)));\n"
                "typedef long long smelt_l8 __attribute__((vector_size(64)));\n#endif\n"
                "#if defined(__GNUC__) && !defined(__clang__) && defined(__AVX512BW__) && defined(__AVX512VNNI__) && \\\n"
                "    defined(__AVX512VBMI__)\n#define SMELT_GEMM_VNNI 1\n#else\n#define SMELT_GEMM_VNNI 0\n#endif\n");
    sb_puts(sb, "#define SMELT_A8_NONE (-2147483647 - 1)\n");
    if (a16) sb_puts(sb, a16_helper), sb_puts(sb, a8_helper);
    for (int s = 0; s < 2; s++)
        if (n[s]) put_loops(sb, s == 1);
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < n[s]; i++) put_helper(sb, seen[s][i][0], seen[s][i][1], s == 1);
    sb_puts(sb, "#if defined(__GNUC__) && !defined(__clang__)\n#pragma GCC pop_options\n#endif\n");
}
