/*
 * gemm_int8.c — 8-bit panels of B in the packed GEMM (ir.h, IR_ENC_PANELS;
 * graph/pack_int8.c makes them): each element is widened to float32 where
 * it is read, float(stored) + offset, an integer below 2^24 that float32
 * holds exactly, so the products and sums are those of the float panels.
 * The C target's microkernels recognise this form (target/emit_c_gemm_int8.c).
 */
#include "ops/gemm_packed.h"

kir_val gemm_int8_widen(kir_kernel *K, smelt_dtype dt, kir_val v, int32_t offset)
{
    kir_val f = kir_cast(K, dt, v);
    return offset ? kir_binary(K, KIR_ADD, f, kir_const_f(K, dt, (double)offset)) : f;
}
