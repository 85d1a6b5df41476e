#include "plan/plan.h"

#include <stdlib.h>
#include <string.h>

static int64_t align_up(int64_t x) { return (x + PLAN_ALIGN - 1) / PLAN_ALIGN * PLAN_ALIGN; }

static bool overlap_time(const plan_slot *a, const plan_slot *b) { return a->first <= b->last && b->first <= a->last; }

static const plan_slot *sort_base;
static int by_size_desc(const void *x, const void *y)
{
    const plan_slot *a = &sort_base[*(const int *)x], *b = &sort_base[*(const int *)y];
    if (a->bytes != b->bytes) return a->bytes < b->bytes ? 1 : -1;
    return a->first - b->first;
}

smelt_status plan_build(const ir_graph *g, const lower_program *p, mem_plan *out)
{
    memset(out, 0, sizeof *out);
    int n = g->n_tensors + p->n_scratch;
    out->n_slots = n;
    out->slots = calloc((size_t)n + 1, sizeof(plan_slot));
    int *order = malloc(sizeof(int) * ((size_t)n + 1));
    if (!out->slots || !order) {
        free(order);
        plan_free(out);
        return diag_fail(SMELT_ERR_NOMEM, "out of memory planning memory");
    }
    for (int s = 0; s < n; s++) {
        out->slots[s].first = p->n_kernels;
        out->slots[s].last = -1;
    }
    for (int ki = 0; ki < p->n_kernels; ki++) {
        const kir_kernel *k = p->kernels[ki];
        for (int b = 0; b < k->n_bufs; b++) {
            if (k->bufs[b].workgroup) continue; /* workgroup memory: the kernel's own */
            plan_slot *s = &out->slots[k->bufs[b].tensor];
            if (ki < s->first) s->first = ki;
            if (ki > s->last) s->last = ki;
        }
    }
    for (int s = 0; s < n; s++) {
        plan_slot *x = &out->slots[s];
        if (s < g->n_tensors) {
            const ir_tensor *t = &g->tensors[s];
            x->bytes = ir_tensor_numel(t) * (int64_t)smelt_dtype_size(t->dtype);
            if (t->is_output && x->last >= 0) x->last = p->n_kernels;
            if (t->data) x->kind = x->last >= 0 || t->is_output ? PLAN_CONST : PLAN_NONE;
            else if (t->is_input) x->kind = PLAN_INPUT;
            else x->kind = x->last >= 0 ? PLAN_ARENA : PLAN_NONE;
            if (x->kind == PLAN_CONST) out->weight_bytes += x->bytes;
        } else {
            int sc = s - g->n_tensors;
            x->bytes = p->scratch_numel[sc] * (int64_t)smelt_dtype_size(p->scratch_type[sc]);
            x->kind = x->last >= 0 ? PLAN_ARENA : PLAN_NONE;
        }
    }
    int m = 0;
    for (int s = 0; s < n; s++)
        if (out->slots[s].kind == PLAN_ARENA) {
            order[m++] = s;
            out->total_bytes += align_up(out->slots[s].bytes);
        }
    sort_base = out->slots;
    qsort(order, (size_t)m, sizeof(int), by_size_desc);
    for (int i = 0; i < m; i++) {
        plan_slot *x = &out->slots[order[i]];
        int64_t off = 0;
        /* Retry from just past each conflict until a gap fits; placed slots are few. */
        for (bool moved = true; moved;) {
            moved = false;
            for (int j = 0; j < i; j++) {
                const plan_slot *y = &out->slots[order[j]];
                if (overlap_time(x, y) && off < y->offset + align_up(y->bytes) && y->offset < off + align_up(x->bytes)) {
                    off = y->offset + align_up(y->bytes);
                    moved = true;
                }
            }
        }
        x->offset = off;
        if (off + align_up(x->bytes) > out->arena_bytes) out->arena_bytes = off + align_up(x->bytes);
    }
    free(order);
    return plan_verify(out);
}

void plan_free(mem_plan *m)
{
    free(m->slots);
    memset(m, 0, sizeof *m);
}

smelt_status plan_verify(const mem_plan *m)
{
    for (int a = 0; a < m->n_slots; a++) {
        const plan_slot *x = &m->slots[a];
        if (x->kind != PLAN_ARENA) continue;
        if (x->offset < 0 || x->offset % PLAN_ALIGN || x->offset + x->bytes > m->arena_bytes)
            return diag_fail(SMELT_ERR_INTERNAL, "plan: slot %d [%lld,+%lld) outside the arena of %lld bytes", a,
                             (long long)x->offset, (long long)x->bytes, (long long)m->arena_bytes);
        for (int b = a + 1; b < m->n_slots; b++) {
            const plan_slot *y = &m->slots[b];
            if (y->kind == PLAN_ARENA && overlap_time(x, y) && x->offset < y->offset + y->bytes &&
                y->offset < x->offset + x->bytes && x->bytes && y->bytes)
                return diag_fail(SMELT_ERR_INTERNAL, "plan: slots %d and %d are live together and overlap", a, b);
        }
    }
    return SMELT_OK;
}

void plan_dump(const ir_graph *g, const mem_plan *m, FILE *f)
{
    static const char *const kinds[] = {"none", "input", "const", "arena"};
    fprintf(f, "plan: arena %lld bytes (unplanned sum %lld), weights %lld bytes\n", (long long)m->arena_bytes,
            (long long)m->total_bytes, (long long)m->weight_bytes);
    for (int s = 0; s < m->n_slots; s++) {
        const plan_slot *x = &m->slots[s];
        if (x->kind == PLAN_NONE) continue;
        fprintf(f, "  %-6s %-32s offset %10lld size %10lld live k%d..k%d\n", kinds[x->kind],
                s < g->n_tensors ? g->tensors[s].name : "(scratch)", (long long)(x->kind == PLAN_ARENA ? x->offset : -1),
                (long long)x->bytes, x->first, x->last);
    }
}
