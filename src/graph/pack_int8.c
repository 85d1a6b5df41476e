/*
 * pack_int8.c — 8-bit panels (ir.h, IR_ENC_PANELS with an 8-bit dtype) of a
 * float32 constant B whose values are all integers within 255 of each other:
 * what an integer contraction's constant operand less its zero point becomes
 * (onnx/quantized.c: MatMulInteger's B - b_zp, folded to float32 constants).
 * A GEMM with few rows of A reads B's panels once per call from memory, so
 * a quarter of the bytes is up to a quarter of the time; the microkernel
 * widens them back to float32 in registers (target/emit_c_gemm_int8.c), so
 * the products and sums are the float panels' ones exactly.
 */
#include <math.h>

#include "graph/passes.h"

bool graph_int8_range(const float *v, int64_t n, smelt_dtype *dt, int32_t *offset)
{
    if (n <= 0) return false;
    float lo = v[0], hi = v[0];
    for (int64_t i = 0; i < n; i++) {
        if (!(fabsf(v[i]) <= 65536.0f) || v[i] != (float)(int32_t)v[i]) return false; /* NaN, huge or not an integer */
        lo = v[i] < lo ? v[i] : lo;
        hi = v[i] > hi ? v[i] : hi;
    }
    if (lo >= -128.0f && hi <= 127.0f) {
        *dt = SMELT_I8, *offset = 0;
        return true;
    }
    if (hi - lo > 255.0f) return false;
    *dt = SMELT_U8, *offset = (int32_t)lo;
    return true;
}

void graph_pack_int8(const float *from, void *to, int64_t k, int64_t n, int64_t nr, bool trans, smelt_dtype dt,
                     int32_t offset)
{
    int64_t np = (n + nr - 1) / nr;
    for (int64_t p = 0; p < np; p++)
        for (int64_t kk = 0; kk < k; kk++)
            for (int64_t j = 0; j < nr; j++) {
                int64_t col = p * nr + j, at = (p * k + kk) * nr + j;
                /* columns past n hold the offset's value: they are summed but never stored */
                int32_t v = col >= n ? 0 : (int32_t)(trans ? from[col * k + kk] : from[kk * n + col]) - offset;
                if (dt == SMELT_I8) ((int8_t *)to)[at] = (int8_t)v;
                else ((uint8_t *)to)[at] = (uint8_t)v;
            }
}
