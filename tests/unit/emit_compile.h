/*
 * emit_compile.h — compiling emitted C in the emitter's tests (test_emit*.c):
 * a scratch directory that is also the compile cache, and strict compiles
 * (-Wall -Wextra -Werror) for each vector ISA the emitter writes.
 */
#ifndef SMELT_TEST_EMIT_COMPILE_H
#define SMELT_TEST_EMIT_COMPILE_H

#include <stdbool.h>
#include <stddef.h>

/* A scratch directory (dir, cap bytes) that also serves as the compile cache
 * (SMELT_CACHE_DIR); false when none could be made. scratch_end removes it. */
bool scratch_begin(char *dir, size_t cap);
void scratch_end(const char *dir);

/* Whether the system compiler (cc) runs here. */
bool have_cc(void);

/* Compile src as a strict compiler would see it: no warning allowed. Returns
 * the compiler's output (malloc'd) if it complained, else NULL. With vec_report,
 * gcc's vectorizer notes are returned instead. */
char *compile_strict_with(const char *dir, const char *src, bool vec_report, const char *cc, const char *flags);
char *compile_strict(const char *dir, const char *src, bool vec_report);

/* Whether src compiles without a warning for each vector ISA the emitter
 * writes, whichever this host has (-m flags that define their macros), with
 * cc and, where it is installed, clang. */
void check_compiles_for_isas(const char *src);

#endif
