/*
 * diag.h — statuses and diagnostics.
 *
 * Errors are values: a failing function returns a smelt_status and records a
 * message in a per-thread buffer with diag_fail(), which returns the status so
 * that `return diag_fail(SMELT_ERR_MODEL, "node '%s' (%s): ...", ...)` reads as
 * one statement. Messages name the model node, its op and the violated rule.
 * diag_context() prefixes the current message as an error travels up
 * ("compiling 'model.onnx': node 'conv3' (Conv): ...").
 */
#ifndef SMELT_CORE_DIAG_H
#define SMELT_CORE_DIAG_H

#include "smelt.h"

#if defined(__GNUC__)
#define DIAG_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define DIAG_PRINTF(a, b)
#endif

/* Record a message for `st` and return `st`. */
smelt_status diag_fail(smelt_status st, const char *fmt, ...) DIAG_PRINTF(2, 3);

/* Prefix the current message with context ("while X: <old message>"); returns st. */
smelt_status diag_context(smelt_status st, const char *fmt, ...) DIAG_PRINTF(2, 3);

/* Forget the current message (a function that recovers from an error). */
void diag_clear(void);

/* Propagate a failing status. */
#define TRY(expr)                                                              \
    do {                                                                       \
        smelt_status try_st_ = (expr);                                         \
        if (try_st_ != SMELT_OK) return try_st_;                               \
    } while (0)

#endif
