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

#include "core/hash.h"
#include "mathf_src.h" /* generated from kir/mathf.inc by the Makefile */

#include <stdlib.h>
#include <string.h>


/* One function of a block: text[start, end) defines `name`. */
typedef struct helper_fn {
    const char *text;
    size_t start, end;
    char name[48];
    bool used;
} helper_fn;

#define MAX_FNS 128

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

static bool ident_char(char c)
{
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* Mark the helpers the kernels call: what calls() says of each, in one pass
 * over the kernels' text (every identifier followed by '(' looked up in a
 * table of the helpers' names) rather than one search of all of it per
 * helper, which was 7% of compiling ResNet-18's 560 KB of C to C. */
static void mark_called(const char *body, helper_fn *fns, int n)
{
    enum { SLOTS = 4 * MAX_FNS }; /* a power of two, at most a quarter full */
    int slot[SLOTS];
    for (int i = 0; i < SLOTS; i++) slot[i] = -1;
    for (int i = 0; i < n; i++) {
        unsigned h = (unsigned)hash_bytes(HASH_SEED, fns[i].name, strlen(fns[i].name)) & (SLOTS - 1);
        while (slot[h] >= 0) h = (h + 1) & (SLOTS - 1);
        slot[h] = i;
    }
    for (const char *p = body; *p;) {
        if (!ident_char(*p)) {
            p++;
            continue;
        }
        const char *q = p;
        while (ident_char(*q)) q++;
        if (*q == '(' && (size_t)(q - p) < sizeof fns[0].name)
            for (unsigned h = (unsigned)hash_bytes(HASH_SEED, p, (size_t)(q - p)) & (SLOTS - 1); slot[h] >= 0; h = (h + 1) & (SLOTS - 1)) {
                helper_fn *f = &fns[slot[h]];
                if (!strncmp(f->name, p, (size_t)(q - p)) && !f->name[q - p]) f->used = true;
            }
        p = q;
    }
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
    /* emit_prelude.c's helpers (kir/interp.c implements the same functions), the
     * float16/bfloat16 conversions, then the dialect's own math and vector forms. */
    enum { HELPERS, HALVES, MATH, STREAM, DEINT, TRANS, VECS, N_BLOCKS };
    strbuf vecs;
    sb_init(&vecs);
    if (d->host_simd) emit_put_vec_helpers(&vecs);
    const char *blocks[N_BLOCKS] = {emit_prelude_helpers, emit_half_helpers, d->own_math ? mathf_src : NULL,
                                    d->host_simd ? emit_stream_helper : NULL, d->host_simd ? emit_deint_helper : NULL,
                                    d->host_simd ? emit_trans_helper : NULL, d->host_simd ? vecs.s : NULL};
    if (vecs.oom) sb->oom = 1;
    helper_fn fns[MAX_FNS];
    int n = 0;
    for (int b = 0; b < N_BLOCKS; b++)
        if (blocks[b]) n = split_fns(blocks[b], fns, n);
    mark_called(body, fns, n);
    for (bool changed = true; changed;) { /* helpers that kept helpers call */
        changed = false;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n && !fns[i].used; j++)
                if (fns[j].used && calls(fns[j].text + fns[j].start, fns[j].end - fns[j].start, fns[i].name))
                    fns[i].used = changed = true;
    }
    /* A stream loop's sfence needs the stream helper's <immintrin.h>, vector
     * loops (intrinsics of 8 or 16 lanes) the vector helpers'. */
    bool sfence = strstr(body, "_mm_sfence") != NULL;
    bool vec = strstr(body, "_mm256_") || strstr(body, "_mm512_");
    for (int b = 0; b < N_BLOCKS; b++) {
        if (!blocks[b]) continue;
        bool any = (b == STREAM && sfence) || (b == VECS && vec);
        for (int i = 0; i < n; i++) any |= fns[i].text == blocks[b] && fns[i].used;
        if (!any) continue;
        if (blocks[b] == mathf_src)
            sb_printf(sb, "\n/* float32 exp, tanh and erf, as the interpreter computes them (kir/mathf.inc) */\n"
                          "#define SMELT_FN %s\n", d->fn_qual);
        else if (b == HELPERS || b == HALVES)
            sb_puts(sb, "\n");
        put_block(sb, blocks[b], fns, n, d->fn_qual);
    }
    sb_free(&vecs);
}
