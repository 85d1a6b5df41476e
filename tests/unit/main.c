#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

extern char **environ;

#define MAX_TESTS 2048

static struct {
    const char *name;
    test_fn fn;
} tests[MAX_TESTS];
static int n_tests;
int test_failures;

void test_register(const char *name, test_fn fn)
{
    if (n_tests < MAX_TESTS) {
        tests[n_tests].name = name;
        tests[n_tests].fn = fn;
        n_tests++;
    }
}

/* The SMELT_* variables as the run began: a test that sets one (a vector width, a compiler) and
 * unsets it when done would otherwise leave every later test at smelt's defaults, not at what the
 * caller asked for (`SMELT_VECTOR_WIDTH=8 build/unit_tests` ran the tests after the first such one
 * at 16 lanes). main puts them back after each test. */
#define MAX_SAVED 64
static char *saved[MAX_SAVED];
static int n_saved;

static void env_save(void)
{
    for (char **e = environ; *e && n_saved < MAX_SAVED; e++) {
        if (strncmp(*e, "SMELT_", 6)) continue;
        if (!(saved[n_saved++] = strdup(*e))) abort();
    }
}

/* e's name (the text before '=') into name; false where it does not fit. */
static bool env_name(const char *e, char *name, size_t cap)
{
    size_t n = strcspn(e, "=");
    if (n >= cap) return false;
    memcpy(name, e, n);
    name[n] = 0;
    return true;
}

static bool was_saved(const char *name)
{
    size_t n = strlen(name);
    for (int i = 0; i < n_saved; i++)
        if (!strncmp(saved[i], name, n) && saved[i][n] == '=') return true;
    return false;
}

static void env_restore(void)
{
    char name[256];
    bool removed = true;
    while (removed) { /* unsetenv edits environ: scan again after each removal */
        removed = false;
        for (char **e = environ; *e && !removed; e++)
            if (!strncmp(*e, "SMELT_", 6) && env_name(*e, name, sizeof name) && !was_saved(name))
                removed = !unsetenv(name);
    }
    for (int i = 0; i < n_saved; i++)
        if (env_name(saved[i], name, sizeof name)) setenv(name, strchr(saved[i], '=') + 1, 1);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int main(int argc, char **argv)
{
    env_save();
    qsort(tests, (size_t)n_tests, sizeof tests[0], by_name);
    int passed = 0, failed = 0;
    for (int i = 0; i < n_tests; i++) {
        if (argc > 1 && !strstr(tests[i].name, argv[1])) continue;
        test_failures = 0;
        tests[i].fn();
        env_restore();
        if (test_failures) {
            printf("FAIL %s\n", tests[i].name);
            failed++;
        } else {
            passed++;
        }
    }
    printf("unit: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
