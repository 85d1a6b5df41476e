#include "core/diag.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define DIAG_CAP 2048

static _Thread_local char diag_msg[DIAG_CAP];

smelt_status diag_fail(smelt_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(diag_msg, sizeof diag_msg, fmt, ap);
    va_end(ap);
    return st;
}

smelt_status diag_context(smelt_status st, const char *fmt, ...)
{
    char prefix[512], old[DIAG_CAP];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, diag_msg, sizeof old);
    size_t n = strlen(prefix);
    if (n + 2 >= DIAG_CAP) return st;
    memcpy(diag_msg, prefix, n);
    memcpy(diag_msg + n, ": ", 2);
    size_t rest = strlen(old);
    if (rest > DIAG_CAP - n - 3) rest = DIAG_CAP - n - 3;
    memcpy(diag_msg + n + 2, old, rest);
    diag_msg[n + 2 + rest] = 0;
    return st;
}

void diag_clear(void) { diag_msg[0] = 0; }

const char *smelt_last_error(void) { return diag_msg; }

const char *smelt_status_name(smelt_status st)
{
    static const char *const names[] = {
        "ok", "invalid argument", "malformed model", "unsupported", "shape error",
        "i/o error", "out of memory", "compile error", "device error", "internal error",
    };
    if ((unsigned)st < sizeof names / sizeof names[0]) return names[st];
    return "unknown status";
}
