#include "core/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sb_init(strbuf *b) { memset(b, 0, sizeof *b); }

void sb_free(strbuf *b)
{
    free(b->s);
    sb_init(b);
}

static int sb_reserve(strbuf *b, size_t extra)
{
    if (b->oom) return 0;
    if (b->len + extra + 1 <= b->cap) return 1;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1) cap *= 2;
    char *s = realloc(b->s, cap);
    if (!s) {
        b->oom = 1;
        return 0;
    }
    b->s = s;
    b->cap = cap;
    return 1;
}

void sb_puts(strbuf *b, const char *s)
{
    size_t n = strlen(s);
    if (!sb_reserve(b, n)) return;
    memcpy(b->s + b->len, s, n + 1);
    b->len += n;
}

void sb_printf(strbuf *b, const char *fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n > 0 && sb_reserve(b, (size_t)n)) {
        vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap2);
        b->len += (size_t)n;
    }
    va_end(ap2);
}

void sb_indent(strbuf *b, int n)
{
    if (n <= 0 || !sb_reserve(b, (size_t)n)) return;
    memset(b->s + b->len, ' ', (size_t)n);
    b->len += (size_t)n;
    b->s[b->len] = 0;
}

char *sb_take(strbuf *b)
{
    char *s = b->s;
    if (!s) s = calloc(1, 1);
    sb_init(b);
    return s;
}
