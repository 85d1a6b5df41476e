/*
 * half.h — float16 and bfloat16 to and from float32, by bit operations.
 *
 * smelt stores float16 (IEEE binary16) and bfloat16 (the top 16 bits of a
 * float32) tensors in two bytes per element and computes on them in float32:
 * a load widens (exactly), a store narrows with round-to-nearest-even.
 * Narrowing follows IEEE: values past the largest finite half round to
 * infinity, small ones to half denormals or signed zero, NaN stays a (quiet)
 * NaN with its sign. The generated code's prelude (target/emit_c.c) carries
 * the same functions, so folding at compile time and kernels agree bit for bit.
 */
#ifndef SMELT_CORE_HALF_H
#define SMELT_CORE_HALF_H

#include <stdint.h>
#include <string.h>

static inline float half_bits_to_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline uint32_t half_f32_to_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float half_f16_to_f32(uint16_t h)
{
    uint32_t s = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff;
    if (e == 0x1f) return half_bits_to_f32(s | 0x7f800000u | (m << 13));
    if (e == 0) return (s ? -1.0f : 1.0f) * (float)m * 5.9604644775390625e-8f; /* m * 2^-24, exact */
    return half_bits_to_f32(s | ((e + 112) << 23) | (m << 13));
}

static inline uint16_t half_f32_to_f16(float f)
{
    uint32_t x = half_f32_to_bits(f), s = (x >> 16) & 0x8000, a = x & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(s | 0x7e00 | ((a >> 13) & 0x3ff));
    if (a >= 0x477ff000u) return (uint16_t)(s | 0x7c00); /* >= 65520: rounds past 65504 */
    if (a >= 0x38800000u) {                               /* a normal half */
        uint32_t r = a - 0x38000000u;
        r += 0xfff + ((r >> 13) & 1);
        return (uint16_t)(s | (r >> 13));
    }
    /* Denormal or zero: adding 0.5 leaves the float's ulp at 2^-24, the half
     * denormal step, so the FPU's own rounding (to nearest even) does the work. */
    return (uint16_t)(s | (half_f32_to_bits(half_bits_to_f32(a) + 0.5f) - 0x3f000000u));
}

static inline float half_bf16_to_f32(uint16_t h) { return half_bits_to_f32((uint32_t)h << 16); }

static inline uint16_t half_f32_to_bf16(float f)
{
    uint32_t x = half_f32_to_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40);
    return (uint16_t)((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

#endif
