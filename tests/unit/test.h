/*
 * test.h — a tiny unit-test harness. Each C file in tests/unit/ defines tests
 *
 *     TEST(arena_grows) { CHECK(x == 1); CHECK_EQ_INT(a, b); }
 *
 * which register themselves before main() runs; main.c runs them all (or those
 * whose name contains argv[1]) and prints `N passed, M failed`.
 */
#ifndef SMELT_TEST_H
#define SMELT_TEST_H

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef void (*test_fn)(void);
void test_register(const char *name, test_fn fn);
extern int test_failures; /* failures in the running test */

#define TEST(name)                                                             \
    static void test_##name(void);                                             \
    __attribute__((constructor)) static void test_reg_##name(void)             \
    {                                                                          \
        test_register(#name, test_##name);                                     \
    }                                                                          \
    static void test_##name(void)

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "  %s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
            test_failures++;                                                   \
        }                                                                      \
    } while (0)

#define CHECK_EQ_INT(a, b)                                                     \
    do {                                                                       \
        long long a_ = (long long)(a), b_ = (long long)(b);                    \
        if (a_ != b_) {                                                        \
            fprintf(stderr, "  %s:%d: %s == %s failed: %lld != %lld\n", __FILE__, __LINE__, \
                    #a, #b, a_, b_);                                           \
            test_failures++;                                                   \
        }                                                                      \
    } while (0)

#define CHECK_NEAR(a, b, tol)                                                  \
    do {                                                                       \
        double a_ = (double)(a), b_ = (double)(b);                             \
        if (!(fabs(a_ - b_) <= (tol))) {                                       \
            fprintf(stderr, "  %s:%d: %s ~= %s failed: %g vs %g\n", __FILE__, __LINE__, #a, \
                    #b, a_, b_);                                               \
            test_failures++;                                                   \
        }                                                                      \
    } while (0)

#define CHECK_STR_HAS(hay, needle)                                             \
    do {                                                                       \
        const char *h_ = (hay);                                                \
        if (!h_ || !strstr(h_, (needle))) {                                    \
            fprintf(stderr, "  %s:%d: \"%s\" not found in: %s\n", __FILE__, __LINE__, (needle), \
                    h_ ? h_ : "(null)");                                       \
            test_failures++;                                                   \
        }                                                                      \
    } while (0)

#endif
