/*
 * test_gemm_int8.c — 8-bit panels of an integer-valued constant B
 * (graph/pack_int8.c, ops/gemm_int8.c, target/emit_c_gemm_int8.c): which
 * dtype and offset a B gets, and MatMulInteger through them against an int32
 * reference, exactly: uint8 and int8 operands, zero points 0, 128, 255, 119
 * and per column, M 1, 3, 20 (row tails), K and N off the tiles, K past a KC
 * slice, odd K (int16 pairs without a partner for the last row); and
 * DynamicQuantizeLSTM's W kept int8 where it fits.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/program.h"
#include "graph/passes.h"
#include "onnx/onnx.h"
#include "onnx_models.h"
#include "rt/rt.h"
#include "test.h"
#include "fuse_cases.h"

TEST(gemm_int8_range_picks_dtype_and_offset)
{
    smelt_dtype dt = SMELT_F32;
    int32_t off = 7;
    CHECK(graph_int8_range((const float[]){-128, 0, 127}, 3, &dt, &off) && dt == SMELT_I8 && off == 0);
    CHECK(graph_int8_range((const float[]){0, 200, 255}, 3, &dt, &off) && dt == SMELT_U8 && off == 0);
    CHECK(graph_int8_range((const float[]){-119, 3, 136}, 3, &dt, &off) && dt == SMELT_U8 && off == -119);
    CHECK(graph_int8_range((const float[]){-255, -1, 0}, 3, &dt, &off) && dt == SMELT_U8 && off == -255);
    CHECK(!graph_int8_range((const float[]){-128, 128}, 2, &dt, &off));  /* 256 apart */
    CHECK(!graph_int8_range((const float[]){1, 2.5f}, 2, &dt, &off));    /* not an integer */
    CHECK(!graph_int8_range((const float[]){1, NAN}, 2, &dt, &off));
    CHECK(!graph_int8_range((const float[]){1e9f, 1e9f}, 2, &dt, &off)); /* one value, but past 2^16 */
}

#define ZP_NONE 1000
#define ZP_COL 2000

typedef struct mmi_case {
    int64_t m, k, n;
    smelt_dtype at, bt;
    int a_zp, b_zp; /* ZP_NONE: omitted; b_zp ZP_COL: one per column */
    const char *form; /* the microkernel the program calls */
    bool pairs;       /* and with A's int16 copy (target/emit_c_gemm_int8.c) */
    int a_fill, b_fill; /* 0: the pattern q; FILL_LO, FILL_HI: the type's least, largest value everywhere */
} mmi_case;

#define FILL_LO 1
#define FILL_HI 2

static int q(smelt_dtype dt, int64_t i, int64_t seed)
{
    int v = (int)((i * 2654435761u + (uint64_t)seed * 40503u) % 256u);
    return dt == SMELT_I8 ? v - 128 : v;
}

static int fill(smelt_dtype dt, int f, int64_t i, int64_t seed)
{
    if (f == FILL_LO) return dt == SMELT_I8 ? -128 : 0;
    if (f == FILL_HI) return dt == SMELT_I8 ? 127 : 255;
    return q(dt, i, seed);
}

static void put8(void *d, smelt_dtype dt, int64_t i, int v)
{
    if (dt == SMELT_I8) ((int8_t *)d)[i] = (int8_t)v;
    else ((uint8_t *)d)[i] = (uint8_t)v;
}

/* MatMulInteger(a, B, a_zp, B_zp) with a constant B, run compiled, equal to int32's result. */
static void run_mmi(const mmi_case *t)
{
    int64_t m = t->m, k = t->k, n = t->n;
    uint8_t *a = malloc((size_t)(m * k)), *b = malloc((size_t)(k * n)), bz[64], az;
    int zb[64];
    for (int64_t i = 0; i < m * k; i++) put8(a, t->at, i, fill(t->at, t->a_fill, i, 1));
    for (int64_t i = 0; i < k * n; i++) put8(b, t->bt, i, fill(t->bt, t->b_fill, i, 2));
    int64_t nz = t->b_zp == ZP_COL ? n : 1;
    for (int64_t j = 0; j < nz; j++) {
        zb[j] = t->b_zp == ZP_COL ? q(t->bt, j, 3) : t->b_zp == ZP_NONE ? 0 : t->b_zp;
        put8(bz, t->bt, j, zb[j]);
    }
    int za = t->a_zp == ZP_NONE ? 0 : t->a_zp;
    put8(&az, t->at, 0, za);
    mb mbd;
    mb_init(&mbd, 13);
    int64_t da[2] = {m, k}, db[2] = {k, n}, dz[1] = {n};
    mb_input(&mbd, "a", t->at, 2, da);
    Onnx__TensorProto *tb = tensor_raw("b", t->bt, 2, db, b, (size_t)(k * n));
    APPEND(mbd.g.initializer, mbd.g.n_initializer, tb);
    char ins[32] = "a,b,,";
    if (t->a_zp != ZP_NONE) {
        APPEND(mbd.g.initializer, mbd.g.n_initializer, tensor_raw("az", t->at, 0, NULL, &az, 1));
        strcpy(ins, "a,b,az,");
    }
    if (t->b_zp != ZP_NONE) {
        APPEND(mbd.g.initializer, mbd.g.n_initializer, tensor_raw("bz", t->bt, t->b_zp == ZP_COL, dz, bz, (size_t)nz));
        strcat(ins, "bz");
    }
    node_new(&mbd.g, "MatMulInteger", "mmi", ins, "y");
    mb_output(&mbd, "y");
    ir_graph *g = NULL;
    CHECK_EQ_INT(mb_load(&mbd, NULL, &g), SMELT_OK);
    smelt_program *p = g ? compile(g, 0) : NULL;
    if (p) {
        bool has = p->cls[0].source && strstr(p->cls[0].source, t->form) != NULL;
        if (!has) fprintf(stderr, "  %lldx%lldx%lld: no %s\n", (long long)m, (long long)k, (long long)n, t->form);
        CHECK(has);
        bool pairs = p->cls[0].source && strstr(p->cls[0].source, "a16m_") != NULL;
        if (pairs != t->pairs) fprintf(stderr, "  %lldx%lldx%lld: int16 copy of A %d\n", (long long)m, (long long)k, (long long)n, pairs);
        CHECK(pairs == t->pairs);
        /* at 16 lanes the 32-column helpers carry the VNNI block (taken on a host with AVX512-VNNI and VBMI) */
        /* 16 lanes: the 32-column helpers, with the VNNI block (taken on a host with AVX512-VNNI and VBMI);
         * 8: 16-column helpers, the AVX2 int16 pairs */
        if (pairs) CHECK((strstr(p->cls[0].source, "__builtin_ia32_vpdpbusd_v16si") != NULL) == (rt_cc_vector_width() >= 16));
        smelt_tensor in = {.name = "a", .dtype = t->at, .rank = 2, .shape = {m, k}, .data = a};
        CHECK(smelt_program_run(p, 1, &in) == SMELT_OK);
        smelt_tensor o;
        CHECK(smelt_program_output(p, 0, &o) == SMELT_OK);
        CHECK(o.dtype == SMELT_I32 && smelt_tensor_numel(&o) == m * n);
        int bad = 0;
        for (int64_t i = 0; i < m && o.dtype == SMELT_I32; i++)
            for (int64_t j = 0; j < n; j++) {
                int64_t want = 0;
                for (int64_t kk = 0; kk < k; kk++)
                    want += (int64_t)(fill(t->at, t->a_fill, i * k + kk, 1) - za) *
                            (fill(t->bt, t->b_fill, kk * n + j, 2) - zb[nz > 1 ? j : 0]);
                int32_t got = ((const int32_t *)o.data)[i * n + j];
                if (got != want && bad++ < 3)
                    fprintf(stderr, "  %lldx%lldx%lld [%lld][%lld]: %d, want %lld\n", (long long)m, (long long)k,
                            (long long)n, (long long)i, (long long)j, got, (long long)want);
            }
        CHECK_EQ_INT(bad, 0);
        smelt_program_free(p);
    }
    ir_graph_free(g);
    pool_free();
    free(a), free(b);
}

TEST(gemm_int8_matmul_integer_is_exact)
{
    static const mmi_case cases[] = {
        {20, 37, 37, SMELT_U8, SMELT_U8, 128, 119, "smelt_gemm_f32u8_", true, 0, 0}, /* B - 119 in [-119, 136]: uint8, offset -119 */
        {1, 300, 21, SMELT_U8, SMELT_U8, 0, 255, "smelt_gemm_f32u8_", true, 0, 0},    /* M 1, K past a KC slice, offset -255 */
        {3, 9, 5, SMELT_I8, SMELT_I8, ZP_NONE, 0, "smelt_gemm_f32i8_", true, 0, 0},       /* int8 as it is, N under one panel */
        {20, 64, 40, SMELT_U8, SMELT_I8, 0, ZP_NONE, "smelt_gemm_f32i8_", true, 0, 0},    /* no zero point: int8 */
        {3, 20, 33, SMELT_I8, SMELT_U8, 5, 0, "smelt_gemm_f32u8_", true, 0, 0},      /* uint8 less 0: 0..255 */
        {20, 50, 37, SMELT_U8, SMELT_I8, 128, -128, "smelt_gemm_f32u8_", true, 0, 0},/* int8 less -128: 0..255 */
        {20, 40, 19, SMELT_U8, SMELT_U8, 128, ZP_COL, "smelt_gemm_f32_", false, 0, 0},    /* per column: more than 255 apart, float */
        /* int16 pairs: odd K (a last row without its pair) in the last KC slice and in a single one,
         * |a| and |b| up to 255 (255 * 255 * 256 within 2^24), N off the 16-column panel */
        {1, 1023, 50, SMELT_U8, SMELT_U8, 255, 128, "smelt_gemm_f32i8_", true, 0, 0}, /* uint8 less 128: int8 */
        {20, 515, 70, SMELT_U8, SMELT_U8, 0, 255, "smelt_gemm_f32u8_", true, 0, 0},
        {3, 17, 33, SMELT_I8, SMELT_I8, -128, ZP_NONE, "smelt_gemm_f32i8_", true, 0, 0},
        {20, 33, 53, SMELT_I8, SMELT_U8, 127, 119, "smelt_gemm_f32u8_", true, 0, 0},
        {20, 1, 16, SMELT_U8, SMELT_I8, 128, ZP_NONE, "smelt_gemm_f32i8_", true, 0, 0}, /* K 1: only the last row */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) run_mmi(&cases[c]);
}

/* The VNNI block (target/emit_c_gemm_int8.c, put_quad_block): A's uint8
 * copy against B's k quads, corrected by A's row sums and B's column sums;
 * zero points 0, 128, 255 with A and B at their extremes everywhere (the
 * corrections at their largest), K not a multiple of 4 (the quad without
 * all its rows) and K 1, 2, 3, M 1 and row tails, N off the 32 columns. */
TEST(gemm_int8_vnni_quads_are_exact)
{
    static const mmi_case cases[] = {
        {20, 1024, 70, SMELT_U8, SMELT_U8, 0, 255, "smelt_gemm_f32u8_", true, FILL_HI, FILL_LO},
        {20, 1023, 70, SMELT_U8, SMELT_U8, 255, 0, "smelt_gemm_f32u8_", true, FILL_LO, FILL_HI},
        {9, 257, 65, SMELT_U8, SMELT_U8, 0, 0, "smelt_gemm_f32u8_", true, FILL_HI, FILL_HI},
        {1, 6, 33, SMELT_U8, SMELT_U8, 255, 255, "smelt_gemm_f32u8_", true, FILL_LO, FILL_LO},
        {5, 7, 40, SMELT_U8, SMELT_U8, 128, 128, "smelt_gemm_f32i8_", true, FILL_HI, FILL_LO},
        {20, 2, 64, SMELT_U8, SMELT_U8, 128, 255, "smelt_gemm_f32u8_", true, 0, 0},
        {3, 3, 96, SMELT_I8, SMELT_I8, -128, 127, "smelt_gemm_f32u8_", true, FILL_HI, FILL_LO},
        {20, 513, 47, SMELT_I8, SMELT_I8, 127, ZP_NONE, "smelt_gemm_f32i8_", true, FILL_LO, FILL_LO},
        {17, 258, 100, SMELT_U8, SMELT_I8, 0, ZP_NONE, "smelt_gemm_f32i8_", true, FILL_HI, FILL_HI},
        {20, 385, 37, SMELT_U8, SMELT_U8, 128, 119, "smelt_gemm_f32u8_", true, 0, 0},
        {2, 1, 32, SMELT_U8, SMELT_U8, 255, 0, "smelt_gemm_f32u8_", true, FILL_LO, FILL_HI},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) run_mmi(&cases[c]);
}

/* Past GRAPH_INT8_MAX_M rows of A the float panels stay (the GEMM is not bound by B's bytes). */
TEST(gemm_int8_large_m_keeps_float_panels)
{
    mmi_case t = {GRAPH_INT8_MAX_M + 1, 24, 20, SMELT_U8, SMELT_U8, 3, 119, "smelt_gemm_f32_", false, 0, 0};
    run_mmi(&t);
}
