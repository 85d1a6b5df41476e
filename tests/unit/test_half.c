/* core/half.h: float16 / bfloat16 conversions at the edges IEEE names:
 * ties to even, overflow, denormals, signed zero, NaN. */
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/half.h"
#include "test.h"

TEST(half_f16_round_trip_every_pattern)
{
    int bad = 0;
    for (uint32_t h = 0; h <= 0xffff; h++) {
        float f = half_f16_to_f32((uint16_t)h);
        bool nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
        if (nan ? !isnan(f) || !(half_f32_to_f16(f) & 0x3ff) : half_f32_to_f16(f) != h) bad++;
    }
    CHECK_EQ_INT(bad, 0);
    CHECK(half_f16_to_f32(0x0001) == ldexpf(1, -24));
    CHECK(half_f16_to_f32(0x7bff) == 65504.0f);
    CHECK(signbit(half_f16_to_f32(0x8000)));
}

TEST(half_f16_rounding)
{
    CHECK_EQ_INT(half_f32_to_f16(1.0f + ldexpf(1, -11)), 0x3c00);     /* tie: to even (down) */
    CHECK_EQ_INT(half_f32_to_f16(1.0f + 3 * ldexpf(1, -11)), 0x3c02); /* tie: to even (up) */
    CHECK_EQ_INT(half_f32_to_f16(1.0f + ldexpf(1, -11) + ldexpf(1, -20)), 0x3c01);
    CHECK_EQ_INT(half_f32_to_f16(65519.0f), 0x7bff);
    CHECK_EQ_INT(half_f32_to_f16(65520.0f), 0x7c00); /* halfway past the largest: infinity */
    CHECK_EQ_INT(half_f32_to_f16(-FLT_MAX), 0xfc00);
    CHECK_EQ_INT(half_f32_to_f16(INFINITY), 0x7c00);
    CHECK_EQ_INT(half_f32_to_f16(ldexpf(1, -24)), 0x0001);        /* smallest denormal */
    CHECK_EQ_INT(half_f32_to_f16(ldexpf(1, -25)), 0x0000);        /* tie with zero: even */
    CHECK_EQ_INT(half_f32_to_f16(ldexpf(1.5f, -25)), 0x0001);
    CHECK_EQ_INT(half_f32_to_f16(ldexpf(3, -25)), 0x0002);        /* tie: to even (up) */
    CHECK_EQ_INT(half_f32_to_f16(ldexpf(1023.5f, -24)), 0x0400);  /* denormal rounds to the smallest normal */
    CHECK_EQ_INT(half_f32_to_f16(-0.0f), 0x8000);
    CHECK_EQ_INT(half_f32_to_f16(FLT_MIN), 0x0000);
    CHECK_EQ_INT(half_f32_to_f16(-NAN) & 0xfe00, 0xfe00);
}

TEST(half_bf16_rounding)
{
    CHECK(half_bf16_to_f32(0x3f80) == 1.0f);
    CHECK_EQ_INT(half_f32_to_bf16(1.0f + ldexpf(1, -8)), 0x3f80);     /* tie: to even (down) */
    CHECK_EQ_INT(half_f32_to_bf16(1.0f + 3 * ldexpf(1, -8)), 0x3f82); /* tie: to even (up) */
    CHECK_EQ_INT(half_f32_to_bf16(1.0f + ldexpf(1, -8) + ldexpf(1, -20)), 0x3f81);
    CHECK_EQ_INT(half_f32_to_bf16(FLT_MAX), 0x7f80); /* rounds past the largest: infinity */
    CHECK_EQ_INT(half_f32_to_bf16(-0.0f), 0x8000);
    CHECK_EQ_INT(half_f32_to_bf16(ldexpf(1, -140)), 0x0000);  /* a float denormal below bfloat16's step */
    uint16_t n = half_f32_to_bf16(half_bits_to_f32(0x7f800001u)); /* NaN with only low payload bits */
    CHECK((n & 0x7f80) == 0x7f80 && (n & 0x7f));
}
