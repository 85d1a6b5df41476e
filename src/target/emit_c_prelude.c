/*
 * emit_c_prelude.c — the helper functions a C-like program starts with,
 * pruned to those its kernels call.
 *
 * requires: the program's kernels, already emitted (their text is searched
 *           for each helper's name followed by '(').
 * guarantees: every helper a kernel or a kept helper calls is defined before
 *             the kernels, and no other; text between helpers in a block
 *             (includes, #if, typedefs, comments) is kept with the block.
 */
#include "target/emit_c_impl.h"

#include "mathf_src.h" /* generated from kir/mathf.inc by the Makefile */

#include <stdlib.h>
#include <string.h>

/* Helpers the kernels call; kir/interp.c implements the same functions. */
static const char prelude_helpers[] =
    "static inline float smelt_minf(float a, float b) { return a != a ? a : (b != b ? b : (b < a ? b : a)); }\n"
    "static inline float smelt_maxf(float a, float b) { return a != a ? a : (b != b ? b : (b > a ? b : a)); }\n"
    "static inline double smelt_min(double a, double b) { return a != a ? a : (b != b ? b : (b < a ? b : a)); }\n"
    "static inline double smelt_max(double a, double b) { return a != a ? a : (b != b ? b : (b > a ? b : a)); }\n"
    "static inline int64_t smelt_div_i64(int64_t a, int64_t b)\n"
    "{\n"
    "    return b == 0 ? 0 : b == -1 ? (int64_t)(0 - (uint64_t)a) : a / b;\n"
    "}\n"
    "static inline int64_t smelt_mod_i64(int64_t a, int64_t b) { return b == 0 || b == -1 ? 0 : a % b; }\n"
    "static inline uint64_t smelt_div_u64(uint64_t a, uint64_t b) { return b == 0 ? 0 : a / b; }\n"
    "static inline uint64_t smelt_mod_u64(uint64_t a, uint64_t b) { return b == 0 ? 0 : a % b; }\n"
    "static inline uint64_t smelt_pow_u64(uint64_t a, uint64_t b)\n"
    "{\n"
    "    uint64_t r = 1;\n"
    "    for (; b; b >>= 1, a *= a)\n"
    "        if (b & 1) r *= a;\n"
    "    return r;\n"
    "}\n"
    "static inline int64_t smelt_pow_i64(int64_t a, int64_t b)\n"
    "{\n"
    "    if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;\n"
    "    return (int64_t)smelt_pow_u64((uint64_t)a, (uint64_t)b);\n"
    "}\n"
    "static inline uint64_t smelt_shl(uint64_t a, uint64_t b) { return b >= 64 ? 0 : a << b; }\n"
    "static inline uint64_t smelt_shr_u(uint64_t a, uint64_t b) { return b >= 64 ? 0 : a >> b; }\n"
    "static inline int64_t smelt_shr_s(int64_t a, uint64_t b) { return a >> (b >= 64 ? 63 : b); }\n"
    "static inline int64_t smelt_f2i64(double x)\n"
    "{\n"
    "    return x != x ? 0 : x >= 9223372036854775808.0 ? INT64_MAX\n"
    "         : x < -9223372036854775808.0 ? INT64_MIN : (int64_t)x;\n"
    "}\n"
    "static inline uint64_t smelt_f2u64(double x)\n"
    "{\n"
    "    return x != x ? 0 : x >= 18446744073709551616.0 ? UINT64_MAX\n"
    "         : x < 0 ? (uint64_t)smelt_f2i64(x) : (uint64_t)x;\n"
    "}\n";

/* One function of a block: text[start, end) defines `name`. */
typedef struct helper_fn {
    const char *text;
    size_t start, end;
    char name[48];
    bool used;
} helper_fn;

#define MAX_FNS 64

/* Lines that open a helper: its return type follows one of these. */
static bool opens_fn(const char *line) { return !strncmp(line, "static inline ", 14) || !strncmp(line, "SMELT_FN ", 9); }

/* Cut text into functions (appended to fns); returns the new count. A
 * function is its opening line, through that line when it closes its own
 * braces, else through the next line that is a lone "}". */
static int split_fns(const char *text, helper_fn *fns, int n)
{
    for (const char *p = text; *p && n < MAX_FNS;) {
        const char *eol = strchr(p, '\n');
        const char *next = eol ? eol + 1 : p + strlen(p);
        if (!opens_fn(p)) {
            p = next;
            continue;
        }
        const char *q = p;
        while (q < next && (strncmp(q, "smelt_", 6) || q[-1] == '_')) q++;
        const char *paren = q < next ? memchr(q, '(', (size_t)(next - q)) : NULL;
        if (!paren || paren - q >= (long)sizeof fns[n].name) {
            p = next;
            continue;
        }
        const char *end = next;
        if (!(memchr(p, '{', (size_t)(next - p)) && next - p >= 2 && next[-2] == '}'))
            for (const char *r = next; *r; r = strchr(r, '\n') ? strchr(r, '\n') + 1 : r + strlen(r))
                if (!strncmp(r, "}\n", 2)) {
                    end = r + 2;
                    break;
                }
        helper_fn *f = &fns[n++];
        *f = (helper_fn){.text = text, .start = (size_t)(p - text), .end = (size_t)(end - text)};
        memcpy(f->name, q, (size_t)(paren - q));
        f->name[paren - q] = 0;
        p = end;
    }
    return n;
}

/* Whether s[0, len) calls `name` ("name(" not preceded by an identifier
 * character). */
static bool calls(const char *s, size_t len, const char *name)
{
    size_t nl = strlen(name);
    for (const char *p = s; (p = strstr(p, name)) && (size_t)(p - s) + nl < len; p += nl) {
        bool ident_before = p > s && (p[-1] == '_' || (p[-1] >= 'a' && p[-1] <= 'z') || (p[-1] >= 'A' && p[-1] <= 'Z') ||
                                      (p[-1] >= '0' && p[-1] <= '9'));
        if (p[nl] == '(' && !ident_before) return true;
    }
    return false;
}

/* The block's text with only its used functions, "static inline" replaced
 * by qual. */
static void put_block(strbuf *sb, const char *text, const helper_fn *fns, int n, const char *qual)
{
    static const char tok[] = "static inline";
    size_t len = strlen(text);
    strbuf t;
    sb_init(&t);
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        if (fns[i].text != text) continue;
        sb_printf(&t, "%.*s", (int)(fns[i].start - at), text + at);
        if (fns[i].used) sb_printf(&t, "%.*s", (int)(fns[i].end - fns[i].start), text + fns[i].start);
        at = fns[i].end;
    }
    sb_printf(&t, "%.*s", (int)(len - at), text + at);
    if (t.s) { /* a dropped function leaves its blank lines: keep one */
        char *w = t.s;
        for (const char *r = t.s; *r; r++)
            if (!(r[0] == '\n' && r[1] == '\n' && r[2] == '\n')) *w++ = *r;
        *w = 0;
    }
    for (const char *p = t.s ? t.s : "", *q; *p; p = q + sizeof tok - 1) {
        q = strstr(p, tok);
        if (!q) {
            sb_puts(sb, p);
            break;
        }
        sb_printf(sb, "%.*s%s", (int)(q - p), p, qual);
    }
    if (t.oom) sb->oom = 1;
    sb_free(&t);
}

void emit_put_prelude(strbuf *sb, const dialect *d, const char *body)
{
    const char *blocks[4] = {prelude_helpers, d->own_math ? mathf_src : NULL, d->host_simd ? emit_stream_helper : NULL,
                             d->host_simd ? emit_vec_helpers : NULL};
    helper_fn fns[MAX_FNS];
    int n = 0;
    for (int b = 0; b < 4; b++)
        if (blocks[b]) n = split_fns(blocks[b], fns, n);
    for (int i = 0; i < n; i++) fns[i].used = calls(body, strlen(body), fns[i].name);
    for (bool changed = true; changed;) { /* helpers that kept helpers call */
        changed = false;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n && !fns[i].used; j++)
                if (fns[j].used && calls(fns[j].text + fns[j].start, fns[j].end - fns[j].start, fns[i].name))
                    fns[i].used = changed = true;
    }
    /* A stream loop's sfence needs the stream helper's <immintrin.h>. */
    bool sfence = strstr(body, "_mm_sfence") != NULL;
    for (int b = 0; b < 4; b++) {
        if (!blocks[b]) continue;
        bool any = b == 2 && sfence;
        for (int i = 0; i < n; i++) any |= fns[i].text == blocks[b] && fns[i].used;
        if (!any) continue;
        if (blocks[b] == mathf_src)
            sb_printf(sb, "\n/* float32 exp, tanh and erf, as the interpreter computes them (kir/mathf.inc) */\n"
                          "#define SMELT_FN %s\n", d->fn_qual);
        else if (b == 0)
            sb_puts(sb, "\n");
        put_block(sb, blocks[b], fns, n, d->fn_qual);
    }
}
