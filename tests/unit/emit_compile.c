/* emit_compile.c — compiling emitted C in the emitter's tests (emit_compile.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit_compile.h"
#include "test.h"

/* A scratch directory that also serves as the compile cache. */
bool scratch_begin(char *dir, size_t cap)
{
    snprintf(dir, cap, "/tmp/smelt-emit-test-XXXXXX");
    if (!mkdtemp(dir)) return false;
    setenv("SMELT_CACHE_DIR", dir, 1);
    return true;
}

void scratch_end(const char *dir)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK_EQ_INT(system(cmd), 0);
    unsetenv("SMELT_CACHE_DIR");
}

bool have_cc(void) { return system("cc --version >/dev/null 2>&1") == 0; }

/* Compile src as a strict compiler would see it: no warning allowed. Returns
 * the compiler's output (malloc'd) if it complained, else NULL. With vec_report,
 * gcc's vectorizer notes are returned instead. */
char *compile_strict_with(const char *dir, const char *src, bool vec_report, const char *cc, const char *flags)
{
    char path[512], cmd[1536];
    snprintf(path, sizeof path, "%s/k.c", dir);
    FILE *f = fopen(path, "w");
    if (!f) return strdup("cannot write source");
    fputs(src, f);
    fclose(f);
    snprintf(cmd, sizeof cmd,
             "%s -std=c11 -O3 -Wall -Wextra -Werror %s %s -c -o '%s/k.o' '%s' > '%s/log' 2>&1", cc,
             vec_report ? "-fno-math-errno -fopt-info-vec-optimized" : "", flags, dir, path, dir);
    int rc = system(cmd);
    snprintf(path, sizeof path, "%s/log", dir);
    f = fopen(path, "r");
    char *log = calloc(1, 1 << 16);
    if (f && log) {
        size_t n = fread(log, 1, (1 << 16) - 1, f);
        log[n] = 0;
    }
    if (f) fclose(f);
    if (rc == 0 && !vec_report) {
        free(log);
        return NULL;
    }
    return log;
}

char *compile_strict(const char *dir, const char *src, bool vec_report)
{
    return compile_strict_with(dir, src, vec_report, "cc", "");
}

/* Whether src compiles without a warning for each vector ISA the emitter
 * writes, whichever this host has (-m flags that define their macros), with
 * cc and, where it is installed, clang. */
void check_compiles_for_isas(const char *src)
{
    static const char *const isas[] = {"-mavx512f -mfma", "-mavx2 -mfma", "-mno-avx"};
    bool clang = system("clang --version >/dev/null 2>&1") == 0;
    char dir[64];
    if (!scratch_begin(dir, sizeof dir)) return;
    for (int c = 0; c < (clang ? 2 : 1); c++)
        for (size_t q = 0; q < sizeof isas / sizeof isas[0]; q++) {
            char *log = compile_strict_with(dir, src, false, c ? "clang" : "cc", isas[q]);
            if (log) fprintf(stderr, "  %s %s:\n%s\n", c ? "clang" : "cc", isas[q], log);
            CHECK(log == NULL);
            free(log);
        }
    scratch_end(dir);
}
