/*
 * cc_units.c — identical kernels once, the rest dealt to units by estimated
 * compile cost (rt/cc_units.h).
 *
 * needs: a source as target/emit_c.c writes it (kernel lines, signatures).
 * gives: per unit, the prelude and its kernels; a kernel that cannot be
 *        recognised (another signature) is compiled as written.
 */
#include "rt/cc_units.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/diag.h"
#include "core/hash.h"

#define WRAPPER_CAP 96

typedef struct cc_kernel {
    size_t at, bytes;  /* its text in the source */
    long id;           /* -1: no signature we know; compiled as it is */
    char *norm;        /* from its signature on, its own name read as "smelt_k" */
    size_t norm_len;
    uint64_t h[2];
    int rep;           /* the kernel whose body it shares (itself when first) */
    int owner;         /* the unit its body (or its representative's) goes to */
    size_t cost;
} cc_kernel;

struct cc_units {
    const char *source;
    size_t pre;
    cc_kernel *k;
    int n_k, jobs, distinct;
    size_t max_bytes;
};

/* The signature line of kernel x (after its comment lines), if it is the
 * one emit_c writes for id; the offset of the line, or (size_t)-1. */
static size_t signature(const char *text, size_t len, long *id)
{
    size_t at = 0;
    while (at < len && !strncmp(text + at, "/*", 2)) {
        const char *nl = memchr(text + at, '\n', len - at);
        if (!nl) return (size_t)-1;
        at = (size_t)(nl - text) + 1;
    }
    char want[80];
    if (sscanf(text, "/* k%ld", id) != 1 || *id < 0) return (size_t)-1;
    int n = snprintf(want, sizeof want, "void smelt_k%ld(int64_t wg, void *const *bufs)\n", *id);
    return at + (size_t)n <= len && !strncmp(text + at, want, (size_t)n) ? at : (size_t)-1;
}

/* text[0, len) with "smelt_k<id>" (not followed by a digit) as "smelt_k", trailing blanks dropped. */
static char *normalise(const char *text, size_t len, long id, size_t *out_len)
{
    char name[32];
    int nl = snprintf(name, sizeof name, "smelt_k%ld", id);
    char *out = malloc(len + 1);
    if (!out) return NULL;
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        if (i + (size_t)nl <= len && !memcmp(text + i, name, (size_t)nl) &&
            !(i + (size_t)nl < len && text[i + nl] >= '0' && text[i + nl] <= '9')) {
            memcpy(out + o, "smelt_k", 7);
            o += 7;
            i += (size_t)nl;
        } else {
            out[o++] = text[i++];
        }
    }
    while (o > 0 && (out[o - 1] == '\n' || out[o - 1] == ' ')) o--; /* the last kernel has no blank line after it */
    out[o] = 0;
    *out_len = o;
    return out;
}

static size_t loops(const char *text, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i + 5 <= len; i++) n += text[i] == 'f' && !memcmp(text + i, "for (", 5);
    return n;
}

/* Insertion sort by descending cost, ties in source order (a few hundred kernels at most). */
static void sort_by_cost(int *order, int n, const cc_kernel *ks)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && ks[order[j]].cost > ks[order[j - 1]].cost; j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
}

void cc_units_free(cc_units *u)
{
    if (!u) return;
    for (int i = 0; u->k && i < u->n_k; i++) free(u->k[i].norm);
    free(u->k);
    free(u);
}

smelt_status cc_units_plan(const char *source, const size_t *starts, int n_k, int jobs, cc_units **out)
{
    *out = NULL;
    size_t len = strlen(source);
    cc_units *u = calloc(1, sizeof *u);
    int *order = malloc(sizeof(int) * ((size_t)n_k + 1));
    size_t *load = calloc((size_t)jobs + 1, sizeof(size_t));
    if (u) u->k = calloc((size_t)n_k + 1, sizeof(cc_kernel));
    if (!u || !u->k || !order || !load) {
        cc_units_free(u);
        free(order);
        free(load);
        return diag_fail(SMELT_ERR_NOMEM, "out of memory compiling kernels");
    }
    u->source = source;
    u->pre = starts[0];
    u->n_k = n_k;
    u->jobs = jobs;
    u->max_bytes = len + 1;
    for (int i = 0; i < n_k; i++) {
        cc_kernel *x = &u->k[i];
        x->at = starts[i];
        x->bytes = (i + 1 < n_k ? starts[i + 1] : len) - starts[i];
        x->rep = i;
        x->cost = x->bytes + CC_LOOP_BYTES * loops(source + x->at, x->bytes);
        size_t sig = signature(source + x->at, x->bytes, &x->id);
        if (sig == (size_t)-1) {
            x->id = -1;
            continue;
        }
        x->norm = normalise(source + x->at + sig, x->bytes - sig, x->id, &x->norm_len);
        if (!x->norm) {
            x->id = -1;
            continue;
        }
        hash_wide(x->norm, x->norm_len, HASH_SEED, x->h);
        for (int j = 0; j < i; j++) { /* the first kernel with this body */
            const cc_kernel *y = &u->k[j];
            if (y->rep == j && y->id >= 0 && y->h[0] == x->h[0] && y->h[1] == x->h[1] && y->norm_len == x->norm_len &&
                !memcmp(y->norm, x->norm, x->norm_len)) {
                x->rep = j;
                break;
            }
        }
        if (x->rep != i) u->max_bytes += WRAPPER_CAP;
    }
    int n = 0;
    for (int i = 0; i < n_k; i++)
        if (u->k[i].rep == i) order[n++] = i;
    u->distinct = n;
    sort_by_cost(order, n, u->k);
    for (int i = 0; i < n; i++) {
        int best = 0;
        for (int j = 1; j < jobs; j++)
            if (load[j] < load[best]) best = j;
        u->k[order[i]].owner = best;
        load[best] += u->k[order[i]].cost;
    }
    for (int i = 0; i < n_k; i++) u->k[i].owner = u->k[u->k[i].rep].owner;
    free(order);
    free(load);
    *out = u;
    return SMELT_OK;
}

size_t cc_units_text(const cc_units *u, int j, char *buf)
{
    size_t at = u->pre;
    memcpy(buf, u->source, u->pre);
    for (int i = 0; i < u->n_k; i++) { /* the bodies, in source order */
        const cc_kernel *x = &u->k[i];
        if (x->owner != j || x->rep != i) continue;
        memcpy(buf + at, u->source + x->at, x->bytes);
        at += x->bytes;
    }
    for (int i = 0; i < u->n_k; i++) { /* then the kernels that share one, after it */
        const cc_kernel *x = &u->k[i];
        if (x->owner != j || x->rep == i) continue;
        int n = snprintf(buf + at, WRAPPER_CAP, "void smelt_k%ld(int64_t wg, void *const *bufs) { smelt_k%ld(wg, bufs); }\n",
                         x->id, u->k[x->rep].id);
        at += (size_t)n;
    }
    buf[at] = 0;
    return at;
}

size_t cc_units_max_bytes(const cc_units *u) { return u->max_bytes; }
int cc_units_distinct(const cc_units *u) { return u->distinct; }
