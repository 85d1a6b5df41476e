/*
 * strbuf.h — a growable string for emitters and dumps.
 *
 * Appending never fails visibly: on allocation failure the buffer remembers it
 * (`oom`) and further appends are ignored, so emitters check once at the end.
 */
#ifndef SMELT_CORE_STRBUF_H
#define SMELT_CORE_STRBUF_H

#include <stddef.h>

#include "core/diag.h"

typedef struct strbuf {
    char *s;
    size_t len, cap;
    int oom;
} strbuf;

void sb_init(strbuf *b);
void sb_free(strbuf *b);
void sb_puts(strbuf *b, const char *s);
void sb_printf(strbuf *b, const char *fmt, ...) DIAG_PRINTF(2, 3);
/* Append `n` spaces (indentation). */
void sb_indent(strbuf *b, int n);
/* Hand the string to the caller (malloc'd; "" if empty) and reset b. */
char *sb_take(strbuf *b);

#endif
