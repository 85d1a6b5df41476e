/*
 * smem.c — the workgroup-memory stack allocator and promote_reuse barriers
 * (kir/smem.h).
 *
 * requires: a verified kernel. guarantees: see smem.h.
 */
#include "kir/smem.h"

#include <stdlib.h>
#include <string.h>

typedef struct blocks {
    int *parent; /* per stmt: innermost LOOP_BEGIN/IF_BEGIN strictly enclosing it, or -1 */
    int *end;    /* per LOOP_BEGIN/IF_BEGIN: its matching end */
    int n;
} blocks;

static bool blocks_build(const kir_kernel *k, blocks *b)
{
    b->n = k->n_stmts;
    b->parent = malloc(sizeof(int) * ((size_t)b->n + 1));
    b->end = malloc(sizeof(int) * ((size_t)b->n + 1));
    int *stack = malloc(sizeof(int) * ((size_t)b->n + 1));
    if (!b->parent || !b->end || !stack) {
        free(stack);
        return false;
    }
    int depth = 0;
    for (int i = 0; i < b->n; i++) {
        kir_stmt_kind kind = k->stmts[i].kind;
        if (kind == KS_LOOP_END || kind == KS_IF_END) b->end[stack[--depth]] = i;
        b->parent[i] = depth ? stack[depth - 1] : -1;
        b->end[i] = -1;
        if (kind == KS_LOOP_BEGIN || kind == KS_IF_BEGIN) stack[depth++] = i;
    }
    free(stack);
    return true;
}

static void blocks_free(blocks *b)
{
    free(b->parent);
    free(b->end);
}

static int buf_of(const kir_kernel *k, const kir_stmt *s)
{
    if (s->kind == KS_STORE) return s->buf;
    if (s->kind == KS_DEF && k->vals[s->val].op == KIR_LOAD) return k->vals[s->val].buf;
    return -1;
}

/* Life [s, e] of buffer b, stretched over loops it crosses; false if unused. */
static bool life(const kir_kernel *k, const blocks *bl, int b, int *s, int *e)
{
    *s = -1;
    *e = -1;
    for (int i = 0; i < k->n_stmts; i++)
        if (buf_of(k, &k->stmts[i]) == b) {
            if (*s < 0) *s = i;
            *e = i;
        }
    if (*s < 0) return false;
    for (bool changed = true; changed;) {
        changed = false;
        for (int l = 0; l < k->n_stmts; l++) {
            if (k->stmts[l].kind != KS_LOOP_BEGIN) continue;
            int le = bl->end[l];
            bool in_s = l < *s && *s < le, in_e = l < *e && *e < le;
            if (in_e && !in_s) *e = le, changed = true;
            if (in_s && !in_e) *s = l, changed = true;
        }
    }
    return true;
}

/* A barrier strictly between x and y that runs whenever both do. */
static bool barrier_between(const kir_kernel *k, const blocks *bl, int x, int y)
{
    for (int p = x + 1; p < y; p++) {
        if (k->stmts[p].kind != KS_BARRIER) continue;
        int blk = bl->parent[p];
        if (blk < 0 || (blk <= x && bl->end[blk] >= y)) return true;
    }
    return false;
}

/* May b (life [sb, eb]) take the bytes of a (life [sa, ea])? */
static bool may_reuse(const kir_kernel *k, const blocks *bl, int sa, int ea, int sb, int eb)
{
    if (ea >= sb || !barrier_between(k, bl, ea, sb)) return false;
    /* Inside a loop holding both lives, the next iteration writes a again
     * after b's last read: a barrier must separate them around the back edge. */
    for (int l = 0; l < k->n_stmts; l++) {
        if (k->stmts[l].kind != KS_LOOP_BEGIN || !(l < sa && eb < bl->end[l])) continue;
        if (!barrier_between(k, bl, eb, bl->end[l]) && !barrier_between(k, bl, l, sa)) return false;
    }
    return true;
}

static int64_t aligned_size(const kir_buffer *b)
{
    int64_t n = b->numel * kir_buffer_elem_bytes(b);
    return (n + SMEM_ALIGN - 1) / SMEM_ALIGN * SMEM_ALIGN;
}

int64_t smem_total_bytes(const kir_kernel *k)
{
    int64_t t = 0;
    for (int b = 0; b < k->n_bufs; b++)
        if (k->bufs[b].workgroup) t += aligned_size(&k->bufs[b]);
    return t;
}

static bool insert_barrier(kir_kernel *k, int at)
{
    kir_stmt *s = arena_alloc(k->arena, sizeof(kir_stmt) * ((size_t)k->n_stmts + 1));
    if (!s) return false;
    memcpy(s, k->stmts, sizeof(kir_stmt) * (size_t)at);
    s[at] = (kir_stmt){.kind = KS_BARRIER};
    memcpy(s + at + 1, k->stmts + at, sizeof(kir_stmt) * (size_t)(k->n_stmts - at));
    k->stmts = s;
    k->n_stmts++;
    k->cap_stmts = k->n_stmts;
    for (int v = 1; v < k->n_vals; v++)
        if (k->vals[v].def >= at) k->vals[v].def++;
    return true;
}

/* One promote_reuse pass for buffer a; returns 1 if it inserted a barrier, -1 on OOM. */
static int promote(kir_kernel *k, int a)
{
    blocks bl;
    if (!blocks_build(k, &bl)) return -1;
    int sa, ea, next = -1;
    if (life(k, &bl, a, &sa, &ea)) {
        for (int b = 0; b < k->n_bufs; b++) {
            int sb, eb;
            if (b != a && k->bufs[b].workgroup && life(k, &bl, b, &sb, &eb) && sb > ea && (next < 0 || sb < next))
                next = sb;
        }
    }
    int done = 0;
    if (next >= 0 && !barrier_between(k, &bl, ea, next)) {
        int at = ea + 1;
        for (int blk = bl.parent[ea]; blk >= 0 && !(blk < next && next < bl.end[blk]); blk = bl.parent[blk])
            at = bl.end[blk] + 1;
        done = insert_barrier(k, at) ? 1 : -1;
    }
    blocks_free(&bl);
    return done;
}

typedef struct alloc {
    int buf, s, e;
} alloc;

static int by_start(const void *x, const void *y)
{
    const alloc *a = x, *b = y;
    return a->s != b->s ? a->s - b->s : a->buf - b->buf;
}

smelt_status smem_assign(kir_kernel *k, smem_report *report)
{
    smem_report r = {0};
    for (int b = 0; b < k->n_bufs; b++) {
        if (!k->bufs[b].workgroup) continue;
        r.n_buffers++;
        if (!k->bufs[b].promote_reuse) continue;
        int d = promote(k, b);
        if (d < 0) return diag_fail(SMELT_ERR_NOMEM, "kernel %d: out of memory placing workgroup memory", k->id);
        r.barriers_inserted += d;
    }
    blocks bl;
    alloc *al = malloc(sizeof(alloc) * ((size_t)k->n_bufs + 1));
    int *stack = malloc(sizeof(int) * ((size_t)k->n_bufs + 1));
    if (!al || !stack || !blocks_build(k, &bl)) {
        free(al);
        free(stack);
        return diag_fail(SMELT_ERR_NOMEM, "kernel %d: out of memory placing workgroup memory", k->id);
    }
    int n = 0;
    for (int b = 0; b < k->n_bufs; b++) {
        if (!k->bufs[b].workgroup) continue;
        k->bufs[b].smem_offset = 0;
        if (life(k, &bl, b, &al[n].s, &al[n].e)) al[n++].buf = b;
    }
    qsort(al, (size_t)n, sizeof *al, by_start);
    int top = 0;
    for (int i = 0; i < n; i++) {
        while (top > 0) {
            const alloc *a = &al[stack[top - 1]];
            if (!may_reuse(k, &bl, a->s, a->e, al[i].s, al[i].e)) break;
            top--;
        }
        int64_t off = 0;
        if (top > 0) {
            const kir_buffer *below = &k->bufs[al[stack[top - 1]].buf];
            off = below->smem_offset + aligned_size(below);
        }
        k->bufs[al[i].buf].smem_offset = off;
        int64_t end = off + aligned_size(&k->bufs[al[i].buf]);
        if (end > r.peak) r.peak = end;
        stack[top++] = i;
    }
    blocks_free(&bl);
    free(al);
    free(stack);
    k->smem_bytes = r.peak;
    r.total = smem_total_bytes(k);
    if (report) *report = r;
    return kir_verify(k);
}
