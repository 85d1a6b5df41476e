/*
 * emit_c_gemm_pairs.c — the C emitter's k-pair microkernels: a gemm loop whose
 * body adds a0 * b0 + a1 * b1 of int16 loads cast to float (ops/gemm_packed.h,
 * read_b_pair: an integer convolution, ops/conv_gemm.c) becomes one call of
 *
 *   smelt_gemm_s16p_<mr>x<nr>(c, cr, a, ar, b, bk, kc):
 *       c[r*cr + j] += sum over k < kc of a[r*ar + 2k] * b[k*bk + 2j]
 *                                         + a[r*ar + 2k + 1] * b[k*bk + 2j + 1]
 *
 * A's k-pair is one 32-bit word, broadcast; B's row k holds the pairs of nr
 * columns one after the other, so a vector of 2W int16 is W columns' pairs
 * and vpmaddwd multiplies and adds each pair into W int32 lanes (AVX-512BW:
 * 32 products an instruction, AVX2: 16; a float32 FMA does 16 or 8). Where
 * the C compiler targets AVX512-VNNI the AVX-512 block's vpdpwssd does the
 * multiply, the pair sum and the accumulate in one instruction (vpmaddwd +
 * vpaddd, the same wrapping int32 sums). The int32 block is converted to
 * float and added to c at the end of the call.
 *
 * The k-quads (an integer convolution whose weight is int8, ops/conv_gemm.c,
 * where the C compiler targets 8-bit dot products, rt_cc_int8_dot) likewise:
 *
 *   smelt_gemm_u8q_<mr>x<nr>(c, cr, a, ar, b, bk, kc):
 *       c[r*cr + j] += sum over k < kc, h < 4 of a[r*ar + 4k + h] * b[k*bk + 4j + h]
 *
 * with A int8 and B uint8: A's quad one 32-bit word, broadcast, B's row k 16
 * columns' quads a vector, and vpdpbusd (AVX512-VNNI) multiplies the unsigned
 * bytes of B by the signed bytes of A and adds each quad's four products into
 * an int32 lane (64 products an instruction). Without VNNI the helper is the
 * plain loops (the lowering does not choose quads there).
 *
 * Exactness: the lowering takes this form only where the operands are
 * integers and max|a| times every column's sum of |b| is at most 2^24
 * (ir.h, IR_ATTR_INT_AMAX; graph/pack_weights.c checks it against the
 * weight), so no pair sum or int32 partial sum overflows, each call's sum
 * converts to float exactly and c + sum is the float sum the loop as
 * written forms, in any order.
 *
 * GCC's builtins, not <immintrin.h> (compile time, emit_c_gemm.c); other
 * compilers and CPUs get the plain loops (int32 sums, the same result).
 *
 * requires: emit_c_gemm.c's match of the loop (match_pairs).
 * guarantees: the helper adds the loop's sums exactly.
 */
#include "target/emit_c_impl.h"

#include <string.h>

/* The register block for w int32 lanes (8: AVX2, 16: AVX-512BW). */
static void put_block(strbuf *sb, int mr, int nr, int w)
{
    int nv = nr / w;
    for (int r = 0; r < mr; r++)
        for (int v = 0; v < nv; v++) sb_printf(sb, "    smelt_pi%d s%d_%d = {0};\n", w, r, v);
    sb_puts(sb, "    for (int64_t k = 0; k < kc; k++) {\n        const int16_t *bp = b + k * bk;\n");
    for (int v = 0; v < nv; v++) sb_printf(sb, "        smelt_ph%d b%d = *(const smelt_ph%d *)(bp + %d);\n", 2 * w, v, 2 * w, 2 * w * v);
    for (int r = 0; r < mr; r++) {
        sb_printf(sb, "        { int32_t p; __builtin_memcpy(&p, a + %d * ar + 2 * k, 4); smelt_pi%d x = {p", r, w);
        for (int l = 1; l < w; l++) sb_puts(sb, ", p");
        sb_puts(sb, "};");
        for (int v = 0; v < nv; v++) {
            if (w == 16)
                sb_printf(sb, " s%d_%d = SMELT_PAIRS_DOT16(s%d_%d, x, b%d);", r, v, r, v, v);
            else
                sb_printf(sb, " s%d_%d += (smelt_pi8)__builtin_ia32_pmaddwd256((smelt_ph16)x, b%d);", r, v, v);
        }
        sb_puts(sb, " }\n");
    }
    sb_puts(sb, "    }\n");
    for (int r = 0; r < mr; r++)
        for (int v = 0; v < nv; v++)
            sb_printf(sb, "    *(smelt_pf%d *)(c + %d * cr + %d) += __builtin_convertvector(s%d_%d, smelt_pf%d);\n", w, r, v * w,
                      r, v, w);
}

/* Whether an mr x nr block of w lanes fits the vector registers (regs of them):
 * the accumulators, a row of B and the broadcast. */
static bool block_fits(int mr, int nr, int w, int regs) { return nr % w == 0 && mr * (nr / w) + nr / w + 1 <= regs; }

static void put_helper(strbuf *sb, int mr, int nr)
{
    sb_printf(sb,
              "static inline void smelt_gemm_s16p_%dx%d(float *restrict c, int64_t cr, const int16_t *restrict a, int64_t ar,\n"
              "    const int16_t *restrict b, int64_t bk, int64_t kc)\n{\n",
              mr, nr);
    const char *open = "#if";
    if (block_fits(mr, nr, 16, 32)) {
        sb_puts(sb, "#if defined(__GNUC__) && !defined(__clang__) && defined(__AVX512BW__)\n");
        put_block(sb, mr, nr, 16);
        open = "#elif";
    }
    if (block_fits(mr, nr, 8, 16)) {
        sb_printf(sb, "%s defined(__GNUC__) && !defined(__clang__) && defined(__AVX2__)\n", open);
        put_block(sb, mr, nr, 8);
        open = "#elif";
    }
    if (strcmp(open, "#if")) sb_puts(sb, "#else\n");
    sb_printf(sb, "    smelt_gemm_s16p_loops(c, cr, a, ar, b, bk, kc, %d, %d);\n", mr, nr);
    if (strcmp(open, "#if")) sb_puts(sb, "#endif\n");
    sb_puts(sb, "}\n");
}

/* The k-quad helper: the AVX512-VNNI block of 16 lanes where the compiler
 * targets it and the block fits (ops/conv_gemm.c chooses quads only there),
 * else the plain loops. */
static void put_quad_helper(strbuf *sb, int mr, int nr)
{
    sb_printf(sb,
              "static inline void smelt_gemm_u8q_%dx%d(float *restrict c, int64_t cr, const int8_t *restrict a, int64_t ar,\n"
              "    const uint8_t *restrict b, int64_t bk, int64_t kc)\n{\n",
              mr, nr);
    bool vec = block_fits(mr, nr, 16, 32);
    if (vec) {
        int nv = nr / 16;
        sb_puts(sb, "#if defined(__GNUC__) && !defined(__clang__) && defined(__AVX512BW__) && defined(__AVX512VNNI__)\n");
        for (int r = 0; r < mr; r++)
            for (int v = 0; v < nv; v++) sb_printf(sb, "    smelt_pi16 s%d_%d = {0};\n", r, v);
        sb_puts(sb, "    for (int64_t k = 0; k < kc; k++) {\n        const uint8_t *bp = b + k * bk;\n");
        for (int v = 0; v < nv; v++) sb_printf(sb, "        smelt_pi16 b%d; __builtin_memcpy(&b%d, bp + %d, 64);\n", v, v, 64 * v);
        for (int r = 0; r < mr; r++) {
            sb_printf(sb, "        { int32_t p; __builtin_memcpy(&p, a + %d * ar + 4 * k, 4); smelt_pi16 x = {p", r);
            for (int l = 1; l < 16; l++) sb_puts(sb, ", p");
            sb_puts(sb, "};");
            for (int v = 0; v < nv; v++)
                sb_printf(sb, " s%d_%d = (smelt_pi16)__builtin_ia32_vpdpbusd_v16si(s%d_%d, b%d, x);", r, v, r, v, v);
            sb_puts(sb, " }\n");
        }
        sb_puts(sb, "    }\n");
        for (int r = 0; r < mr; r++)
            for (int v = 0; v < nv; v++)
                sb_printf(sb, "    *(smelt_pf16 *)(c + %d * cr + %d) += __builtin_convertvector(s%d_%d, smelt_pf16);\n", r, v * 16, r, v);
        sb_puts(sb, "#else\n");
    }
    sb_printf(sb, "    smelt_gemm_u8q_loops(c, cr, a, ar, b, bk, kc, %d, %d);\n", mr, nr);
    if (vec) sb_puts(sb, "#endif\n");
    sb_puts(sb, "}\n");
}

static const char quads_loops[] =
    "static inline void smelt_gemm_u8q_loops(float *restrict c, int64_t cr, const int8_t *restrict a, int64_t ar,\n"
    "    const uint8_t *restrict b, int64_t bk, int64_t kc, int mr, int nr)\n"
    "{\n"
    "    for (int r = 0; r < mr; r++)\n"
    "        for (int j = 0; j < nr; j++) {\n"
    "            int32_t s = 0;\n"
    "            for (int64_t k = 0; k < kc; k++)\n"
    "                for (int h = 0; h < 4; h++) s += a[r * ar + 4 * k + h] * b[k * bk + 4 * j + h];\n"
    "            c[r * cr + j] += (float)s;\n"
    "        }\n"
    "}\n";

static const char pairs_loops[] =
    "static inline void smelt_gemm_s16p_loops(float *restrict c, int64_t cr, const int16_t *restrict a, int64_t ar,\n"
    "    const int16_t *restrict b, int64_t bk, int64_t kc, int mr, int nr)\n"
    "{\n"
    "    for (int r = 0; r < mr; r++)\n"
    "        for (int j = 0; j < nr; j++) {\n"
    "            int32_t s = 0;\n"
    "            for (int64_t k = 0; k < kc; k++)\n"
    "                s += a[r * ar + 2 * k] * b[k * bk + 2 * j] + a[r * ar + 2 * k + 1] * b[k * bk + 2 * j + 1];\n"
    "            c[r * cr + j] += (float)s;\n"
    "        }\n"
    "}\n";

void emit_put_gemm_pairs_helpers(strbuf *sb, const char *body)
{
    int seen[64][2], n = emit_gemm_shapes(body, "smelt_gemm_s16p_", seen, 64);
    int qseen[64][2], nq = emit_gemm_shapes(body, "smelt_gemm_u8q_", qseen, 64);
    if (!n && !nq) return;
    sb_puts(sb, "\n#if defined(__GNUC__)\n"
                "typedef float smelt_pf16 __attribute__((vector_size(64), aligned(4)));\n"
                "typedef int smelt_pi16 __attribute__((vector_size(64), aligned(4)));\n"
                "typedef short smelt_ph32 __attribute__((vector_size(64), aligned(2)));\n"
                "typedef float smelt_pf8 __attribute__((vector_size(32), aligned(4)));\n"
                "typedef int smelt_pi8 __attribute__((vector_size(32), aligned(4)));\n"
                "typedef short smelt_ph16 __attribute__((vector_size(32), aligned(2)));\n#endif\n"
                "#if defined(__GNUC__) && !defined(__clang__) && defined(__AVX512VNNI__)\n"
                "#define SMELT_PAIRS_DOT16(s, x, b) ((smelt_pi16)__builtin_ia32_vpdpwssd_v16si((s), (x), (smelt_pi16)(b)))\n"
                "#else\n"
                "#define SMELT_PAIRS_DOT16(s, x, b) \\\n"
                "    ((s) + (smelt_pi16)__builtin_ia32_pmaddwd512_mask((smelt_ph32)(x), (b), (smelt_pi16){0}, 0xffff))\n"
                "#endif\n");
    if (n) sb_puts(sb, pairs_loops);
    for (int i = 0; i < n; i++) put_helper(sb, seen[i][0], seen[i][1]);
    if (nq) sb_puts(sb, quads_loops);
    for (int i = 0; i < nq; i++) put_quad_helper(sb, qseen[i][0], qseen[i][1]);
}
