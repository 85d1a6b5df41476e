/* kir/mathf.inc: the float32 exp, tanh and erf that interpreted and C
 * kernels share, against double-precision libm. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "test.h"

#define SMELT_FN static inline
#include "kir/mathf.inc"

/* One unit in the last place of the float nearest ref (subnormals: the smallest step). */
static double ulp_of(double ref)
{
    float r = fabsf((float)ref);
    if (r < 1.17549435e-38f) return ldexp(1.0, -149);
    int e;
    frexpf(r, &e);
    return ldexp(1.0, e - 24);
}

/* Largest error in ulps over every 1009th float in [lo, hi]; *count gets the points. */
static double max_ulps(float (*f)(float), double (*g)(double), float lo, float hi, long *count)
{
    double worst = 0;
    *count = 0;
    for (uint64_t bits = 0; bits <= 0xffffffffu; bits += 1009) {
        uint32_t b = (uint32_t)bits;
        float x;
        memcpy(&x, &b, sizeof x);
        if (!(x >= lo && x <= hi)) continue;
        double ref = g(x);
        float got = f(x);
        ++*count;
        if (isinf((float)ref) || isinf(got)) {
            if ((float)ref != got) return INFINITY;
            continue;
        }
        double u = fabs((double)got - ref) / ulp_of(ref);
        if (u > worst) worst = u;
    }
    return worst;
}

TEST(mathf_exp_within_one_ulp)
{
    long n;
    CHECK(max_ulps(smelt_expf, exp, -110.0f, 95.0f, &n) <= 1.0);
    CHECK(n > 1000000);
    CHECK(smelt_expf(0.0f) == 1.0f && smelt_expf(-0.0f) == 1.0f);
    CHECK(smelt_expf(INFINITY) == INFINITY && smelt_expf(-INFINITY) == 0.0f && isnan(smelt_expf(NAN)));
    CHECK(isnan(smelt_expf(-NAN)) && smelt_expf(1e30f) == INFINITY && smelt_expf(-1e30f) == 0.0f);
    CHECK(smelt_expf(88.8f) == INFINITY);          /* overflow */
    CHECK(smelt_expf(-100.0f) > 0.0f);              /* subnormal, not flushed */
    CHECK(smelt_expf(-100.0f) < 1.17549435e-38f);
}

/* One branch-free form for every |x| (mathf.inc): 2.42 ulp at worst over all floats. */
TEST(mathf_tanh_within_two_and_a_half_ulps)
{
    long n;
    CHECK(max_ulps(smelt_tanhf, tanh, -INFINITY, INFINITY, &n) <= 2.5);
    CHECK(n > 1000000);
    CHECK(smelt_tanhf(INFINITY) == 1.0f && smelt_tanhf(-INFINITY) == -1.0f && isnan(smelt_tanhf(NAN)));
    CHECK(signbit(smelt_tanhf(-0.0f)) && smelt_tanhf(-0.0f) == 0.0f);
    CHECK(smelt_tanhf(1e-30f) == 1e-30f);           /* tiny inputs: tanh x = x */
    CHECK(smelt_tanhf(-1e-40f) == -1e-40f);         /* subnormal */
    CHECK(smelt_tanhf(9.1f) == 1.0f && smelt_tanhf(-30.0f) == -1.0f && smelt_tanhf(1e30f) == 1.0f);
}

TEST(mathf_erf_within_three_ulps)
{
    long n;
    CHECK(max_ulps(smelt_erff, erf, -6.0f, 6.0f, &n) <= 3.0);
    CHECK(n > 1000000);
    CHECK(smelt_erff(INFINITY) == 1.0f && smelt_erff(-INFINITY) == -1.0f && isnan(smelt_erff(NAN)));
    CHECK(signbit(smelt_erff(-0.0f)) && smelt_erff(-0.0f) == 0.0f);
    CHECK(smelt_erff(100.0f) == 1.0f && smelt_erff(-4.5f) == -1.0f);
}
