/*
 * locals.c — live ranges over the flat statement list and slot assignment by
 * linear scan (kir/locals.h).
 *
 * requires: a kernel that passes kir_verify.
 * guarantees: intervals that overlap get distinct slots; a slot holds one dtype.
 *
 * An interval [start, end] runs from the defining statement to the last use.
 * A use inside a loop that began after the definition extends the end to that
 * loop's LOOP_END, because the use reads the value on every iteration; a loop's
 * `hi` and `step` are re-read by every iteration, so they are used at LOOP_END.
 * An interval ending at statement s may hand its slot to one starting at s:
 * operands are read before the result is written (`f0 = f0 * f1;`).
 */
#include "kir/locals.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct interval {
    int start, end;
    smelt_dtype type;
    int val; /* value id, or 0 for a var */
    int var;
} interval;

typedef struct structure {
    int *loop_of;  /* innermost LOOP_BEGIN strictly enclosing stmt i, or -1 */
    int *loop_end; /* LOOP_BEGIN i: its LOOP_END */
    int *block_of; /* innermost LOOP_BEGIN/IF_BEGIN strictly enclosing stmt i, or -1 */
    int *trans_of; /* outermost transpose or deinterleave LOOP_BEGIN enclosing stmt i, or -1 */
} structure;

static bool is_inline(const kir_value *v)
{
    return v->op == KIR_CONST || v->op == KIR_WG || v->op == KIR_LID || v->op == KIR_LOOPVAR;
}

static smelt_status structure_build(const kir_kernel *k, structure *st)
{
    int n = k->n_stmts;
    st->loop_of = malloc(((size_t)n + 1) * sizeof(int));
    st->loop_end = malloc(((size_t)n + 1) * sizeof(int));
    st->block_of = malloc(((size_t)n + 1) * sizeof(int));
    st->trans_of = malloc(((size_t)n + 1) * sizeof(int));
    int *stack = malloc(((size_t)n + 1) * sizeof(int));
    if (!st->loop_of || !st->loop_end || !st->block_of || !st->trans_of || !stack) {
        free(stack);
        return diag_fail(SMELT_ERR_NOMEM, "kernel %d: out of memory in local allocation", k->id);
    }
    int depth = 0, loop = -1, trans = -1;
    for (int i = 0; i < n; i++) {
        kir_stmt_kind kind = k->stmts[i].kind;
        if (kind == KS_LOOP_END || kind == KS_IF_END) {
            int b = stack[--depth];
            if (kind == KS_LOOP_END) {
                st->loop_end[b] = i;
                loop = st->loop_of[b];
                if (b == trans) trans = -1;
            }
        }
        st->loop_of[i] = loop;
        st->block_of[i] = depth ? stack[depth - 1] : -1;
        st->trans_of[i] = trans;
        st->loop_end[i] = -1;
        if (kind == KS_LOOP_BEGIN || kind == KS_IF_BEGIN) stack[depth++] = i;
        if (kind == KS_LOOP_BEGIN) loop = i;
        if (kind == KS_LOOP_BEGIN && (k->stmts[i].transpose || k->stmts[i].deint) && trans < 0) trans = i;
    }
    free(stack);
    return SMELT_OK;
}

static void structure_free(structure *st)
{
    free(st->loop_of);
    free(st->loop_end);
    free(st->block_of);
    free(st->trans_of);
}

/* Where a use at `u` of something that came into being at `d` stops being
 * live. Inside a transpose or deinterleave loop (kir.h "Transposing copies",
 * "Deinterleaving") a target may emit the body's copies as calls after all of
 * the body's statements (the C emitter's in-register transposes and
 * deinterleaves, emit_c_trans.c, emit_c_deint.c), so what the body uses lives
 * to the loop's end (with `--locals reuse` a slot freed earlier was written
 * again before the call read it: stride-2 depthwise convs and the lanes form
 * computed wrong values). */
static int use_end(const structure *st, int d, int u)
{
    int e = u;
    for (int l = st->loop_of[u]; l >= 0 && l > d; l = st->loop_of[l]) e = st->loop_end[l];
    if (st->trans_of[u] >= 0 && st->loop_end[st->trans_of[u]] > e) e = st->loop_end[st->trans_of[u]];
    return e;
}

static int max_int(int a, int b) { return a > b ? a : b; }

static int by_start(const void *pa, const void *pb)
{
    const interval *a = pa, *b = pb;
    if (a->start != b->start) return a->start < b->start ? -1 : 1;
    if (a->val != b->val) return a->val < b->val ? -1 : 1;
    return a->var < b->var ? -1 : a->var > b->var;
}

smelt_status kir_locals_assign(const kir_kernel *k, locals_strategy s, arena *a, kir_locals *out)
{
    memset(out, 0, sizeof *out);
    out->strategy = s;
    int nv = k->n_vals, nvar = k->n_vars, cap = nv + nvar + 1;
    out->val_slot = arena_alloc(a, (size_t)cap * sizeof(int));
    out->val_const = arena_alloc(a, (size_t)cap * sizeof(bool));
    out->var_slot = arena_alloc(a, (size_t)cap * sizeof(int));
    out->slot_type = arena_alloc(a, (size_t)cap * sizeof(smelt_dtype));
    out->slot_at_top = arena_alloc(a, (size_t)cap * sizeof(bool));
    if (!out->val_slot || !out->val_const || !out->var_slot || !out->slot_type || !out->slot_at_top)
        return diag_fail(SMELT_ERR_NOMEM, "kernel %d: out of memory in local allocation", k->id);

    structure st;
    TRY(structure_build(k, &st));
    int *end = malloc((size_t)cap * sizeof(int));      /* per value, then per var at nv + var */
    int *var_start = malloc((size_t)cap * sizeof(int));
    int *var_ref = malloc((size_t)cap * sizeof(int));  /* `d` for use_end of a var */
    interval *iv = malloc((size_t)cap * sizeof(interval));
    int *slot_end = malloc((size_t)cap * sizeof(int));
    smelt_status status = SMELT_OK;
    if (!end || !var_start || !var_ref || !iv || !slot_end) {
        status = diag_fail(SMELT_ERR_NOMEM, "kernel %d: out of memory in local allocation", k->id);
        goto done;
    }
    for (int v = 0; v < nv; v++) end[v] = k->vals[v].def;
    for (int x = 0; x < nvar; x++) var_start[x] = -1;

#define USE(v, at)                                                                   \
    do {                                                                             \
        kir_val u_ = (v);                                                            \
        if (u_ > 0 && !is_inline(&k->vals[u_]))                                      \
            end[u_] = max_int(end[u_], use_end(&st, k->vals[u_].def, (at)));         \
    } while (0)
#define VAR_USE(x, at) (end[nv + (x)] = max_int(end[nv + (x)], use_end(&st, var_ref[x], (at))))

    for (int i = 0; i < k->n_stmts; i++) {
        const kir_stmt *t = &k->stmts[i];
        switch (t->kind) {
        case KS_DEF: {
            const kir_value *v = &k->vals[t->val];
            int ar = kir_op_arity(v->op);
            if (ar > 0) USE(v->a, i);
            if (ar > 1) USE(v->b, i);
            if (ar > 2) USE(v->c, i);
            if (v->op == KIR_VARGET) VAR_USE(v->var, i);
            break;
        }
        case KS_STORE:
            USE(t->idx, i);
            USE(t->val, i);
            break;
        case KS_PREFETCH: USE(t->idx, i); break;
        case KS_LOOP_BEGIN:
            USE(t->lo, i);
            USE(t->hi, st.loop_end[i]);
            USE(t->step, st.loop_end[i]);
            break;
        case KS_IF_BEGIN: USE(t->cond, i); break;
        case KS_VAR_SET:
            USE(t->val, i);
            if (var_start[t->var] < 0) {
                /* A first set inside an if need not run on every path, so the var
                 * may carry a value across iterations of any enclosing loop: make
                 * it live from the top-level statement that contains it. */
                int top = i, in_if = 0;
                for (int b = st.block_of[i]; b >= 0; b = st.block_of[b]) {
                    if (k->stmts[b].kind == KS_IF_BEGIN) in_if = 1;
                    top = b;
                }
                var_start[t->var] = in_if ? top : i;
                var_ref[t->var] = in_if ? top - 1 : i;
                end[nv + t->var] = i;
            }
            VAR_USE(t->var, i);
            break;
        case KS_LOOP_END:
        case KS_ELSE:
        case KS_IF_END:
        case KS_BARRIER:
        case KS_COUNT:
            break;
        }
    }
#undef USE
#undef VAR_USE

    int n = 0;
    out->val_slot[0] = -1;
    for (int v = 1; v < nv; v++) {
        out->val_slot[v] = -1;
        if (!is_inline(&k->vals[v]) && k->vals[v].def >= 0)
            iv[n++] = (interval){k->vals[v].def, end[v], k->vals[v].type, v, -1};
    }
    for (int x = 0; x < nvar; x++) {
        out->var_slot[x] = -1;
        if (var_start[x] >= 0) iv[n++] = (interval){var_start[x], end[nv + x], k->vars[x].type, 0, x};
    }
    qsort(iv, (size_t)n, sizeof *iv, by_start);

    for (int j = 0; j < n; j++) {
        const interval *x = &iv[j];
        bool shared = s == LOCALS_REUSE || x->val == 0;
        int slot = -1;
        if (shared)
            for (int q = 0; q < out->n_slots && slot < 0; q++)
                if (out->slot_at_top[q] && out->slot_type[q] == x->type && slot_end[q] <= x->start) slot = q;
        if (slot < 0) {
            slot = out->n_slots++;
            out->slot_type[slot] = x->type;
            out->slot_at_top[slot] = shared;
        }
        slot_end[slot] = x->end;
        if (x->val) {
            out->val_slot[x->val] = slot;
            out->val_const[x->val] = !shared;
        } else {
            out->var_slot[x->var] = slot;
        }
    }

done:
    structure_free(&st);
    free(end);
    free(var_start);
    free(var_ref);
    free(iv);
    free(slot_end);
    return status;
}

int kir_locals_declared(const kir_locals *l) { return l->n_slots; }

const char *kir_locals_shadow(kir_val v, bool vector, int copy, char *buf, size_t cap)
{
    if (copy >= 0) snprintf(buf, cap, "%c%d_%d", vector ? 'x' : 'y', v, copy);
    else snprintf(buf, cap, "%c%d", vector ? 'x' : 'y', v);
    return buf;
}
