/*
 * clean.c — the cleanup passes of kir/clean.h and their order.
 *
 * requires: a kernel that passes kir_verify (the lowering's output).
 * guarantees: the same stores of the same values; kir_verify passes after
 *             every pass (checked unless NDEBUG).
 */
#include "kir/clean.h"

#include <stdlib.h>
#include <string.h>

static smelt_status nomem(const kir_kernel *k) { return diag_fail(SMELT_ERR_NOMEM, "kernel %d: out of memory cleaning", k->id); }

/* Operands of value v, as pointers so a pass can rewrite them. */
static int operands(kir_kernel *k, kir_val v, kir_val *ops[3])
{
    kir_value *x = &k->vals[v];
    ops[0] = &x->a;
    ops[1] = &x->b;
    ops[2] = &x->c;
    return kir_op_arity(x->op);
}

/* Keep the statements with keep[i] set, then drop loops and ifs left empty
 * (cascading outwards); the defining statement of every value is renumbered,
 * and a value whose statement is gone gets def -1. Returns 1 when a block
 * was dropped (its bounds or condition may now be dead), -1 without memory. */
static int compact(kir_kernel *k, const char *keep)
{
    int *open = malloc(sizeof(int) * ((size_t)k->n_stmts + 1)); /* output position of each open block's start */
    if (!open) return -1;
    int top = 0, n = 0;
    int dropped = 0;
    for (int i = 0; i < k->n_stmts; i++) {
        if (!keep[i]) continue;
        kir_stmt s = k->stmts[i];
        if (s.kind == KS_LOOP_END || s.kind == KS_IF_END) {
            int b = open[--top];
            if (k->stmts[n - 1].kind == KS_ELSE) n--; /* `} else { }` */
            if (n == b + 1) {                        /* nothing left inside: drop the block */
                n = b;
                dropped = 1;
                continue;
            }
        }
        if (s.kind == KS_LOOP_BEGIN || s.kind == KS_IF_BEGIN) open[top++] = n;
        k->stmts[n++] = s;
    }
    free(open);
    k->n_stmts = n;
    for (int v = 1; v < k->n_vals; v++)
        if (k->vals[v].op != KIR_CONST && k->vals[v].op != KIR_WG && k->vals[v].op != KIR_LID) k->vals[v].def = -1;
    for (int i = 0; i < n; i++)
        if (k->stmts[i].kind == KS_DEF || k->stmts[i].kind == KS_LOOP_BEGIN) k->vals[k->stmts[i].val].def = i;
    return dropped;
}

smelt_status kir_clean_dead(kir_kernel *k)
{
    for (;;) {
        char *live = calloc((size_t)k->n_vals + 1, 1);
        char *read = calloc((size_t)k->n_vars + 1, 1);
        char *keep = calloc((size_t)k->n_stmts + 1, 1);
        if (!live || !read || !keep) {
            free(live), free(read), free(keep);
            return nomem(k);
        }
        /* Backwards, uses come before definitions; a variable read before
         * its set (a loop's accumulator) needs another round. */
        for (bool changed = true; changed;) {
            changed = false;
            for (int i = k->n_stmts - 1; i >= 0; i--) {
                const kir_stmt *s = &k->stmts[i];
                switch (s->kind) {
                case KS_DEF: {
                    if (!live[s->val] || keep[i]) break;
                    keep[i] = 1;
                    kir_val *ops[3];
                    int ar = operands(k, s->val, ops);
                    for (int j = 0; j < ar; j++) live[*ops[j]] = 1;
                    if (k->vals[s->val].op == KIR_VARGET && !read[k->vals[s->val].var])
                        read[k->vals[s->val].var] = 1, changed = true;
                    break;
                }
                case KS_VAR_SET:
                    if (read[s->var] && !keep[i]) keep[i] = 1, live[s->val] = 1;
                    break;
                case KS_STORE: keep[i] = 1, live[s->idx] = live[s->val] = 1; break;
                case KS_PREFETCH: keep[i] = 1, live[s->idx] = 1; break;
                case KS_LOOP_BEGIN: keep[i] = 1, live[s->lo] = live[s->hi] = live[s->step] = 1; break;
                case KS_IF_BEGIN: keep[i] = 1, live[s->cond] = 1; break;
                default: keep[i] = 1; break;
                }
            }
        }
        int again = compact(k, keep);
        free(live), free(read), free(keep);
        if (again < 0) return nomem(k);
        if (!again) return SMELT_OK;
    }
}

/* ---- common subexpressions ---------------------------------------------- */

/* An available expression: the value `val` that defined it, valid while the
 * block it was defined in is open and, for a load or variable read, while the
 * generation of its buffer or variable is the one it was read at. */
typedef struct avail {
    kir_val val;
    int block;
    int64_t gen;
} avail;

typedef struct cse {
    kir_kernel *k;
    avail *tab;
    size_t mask;
    char *open;      /* per block id */
    int64_t *gen;    /* per buffer, then per variable at n_bufs + var */
    int64_t next_gen;
} cse;

static bool same_expr(const kir_kernel *k, kir_val x, kir_val y)
{
    const kir_value *a = &k->vals[x], *b = &k->vals[y];
    if (a->op != b->op || a->type != b->type || a->a != b->a || a->b != b->b || a->c != b->c) return false;
    if (a->op == KIR_LOAD && a->buf != b->buf) return false;
    if (a->op == KIR_VARGET && a->var != b->var) return false;
    return true;
}

static size_t hash_expr(const kir_value *x)
{
    uint64_t h = (uint64_t)x->op * 0x9e3779b97f4a7c15ull;
    h ^= (uint64_t)(uint32_t)x->a + 0x85ebca6bull + (h << 6) + (h >> 2);
    h ^= (uint64_t)(uint32_t)x->b + 0xc2b2ae35ull + (h << 6) + (h >> 2);
    h ^= (uint64_t)(uint32_t)x->c + 0x27d4eb2full + (h << 6) + (h >> 2);
    h ^= (uint64_t)(uint32_t)(x->op == KIR_LOAD ? x->buf : x->op == KIR_VARGET ? x->var : 0) * 0x165667b1ull;
    h ^= (uint64_t)x->type << 40;
    return (size_t)(h ^ (h >> 29));
}

/* The generation slot a value's result depends on: its buffer, its
 * variable, or none (-1) for arithmetic. */
static int mem_slot(const kir_kernel *k, const kir_value *x)
{
    if (x->op == KIR_LOAD) return x->buf;
    if (x->op == KIR_VARGET) return k->n_bufs + x->var;
    return -1;
}

/* A store to buffer b changes what loads of b read. Buffers are distinct
 * here: cleaning runs at lowering, before the plan lets an output share an
 * input's memory (plan/plan.c in-place), and it does so only where each
 * element is read before the same element is written. */
static void clobber_buf(cse *c, int b) { c->gen[b] = ++c->next_gen; }

static void clobber_stmt(cse *c, const kir_stmt *s)
{
    if (s->kind == KS_STORE) clobber_buf(c, s->buf);
    else if (s->kind == KS_VAR_SET) c->gen[c->k->n_bufs + s->var] = ++c->next_gen;
    else if (s->kind == KS_BARRIER) /* other threads' stores become visible */
        for (int b = 0; b < c->k->n_bufs; b++) c->gen[b] = ++c->next_gen;
}

smelt_status kir_clean_cse(kir_kernel *k)
{
    size_t cap = 16;
    while (cap < 2 * (size_t)k->n_stmts + 2) cap *= 2;
    cse c = {.k = k, .mask = cap - 1};
    c.tab = calloc(cap, sizeof(avail));
    c.open = calloc((size_t)k->n_stmts + 2, 1);
    c.gen = calloc((size_t)(k->n_bufs + k->n_vars) + 1, sizeof(int64_t));
    kir_val *map = calloc((size_t)k->n_vals + 1, sizeof(kir_val));
    int *stack = calloc((size_t)k->n_stmts + 2, sizeof(int));
    int *loop_end = calloc((size_t)k->n_stmts + 1, sizeof(int));
    if (!c.tab || !c.open || !c.gen || !map || !stack || !loop_end) {
        free(c.tab), free(c.open), free(c.gen), free(map), free(stack), free(loop_end);
        return nomem(k);
    }
    for (kir_val v = 0; v < k->n_vals; v++) map[v] = v;
    /* The end of each loop, so a loop's entry can clobber what its body stores
     * (a load before the loop is not the same as one in its second iteration). */
    int top = 0;
    for (int i = 0; i < k->n_stmts; i++) {
        kir_stmt_kind kd = k->stmts[i].kind;
        if (kd == KS_LOOP_BEGIN || kd == KS_IF_BEGIN) stack[top++] = i;
        else if (kd == KS_LOOP_END || kd == KS_IF_END) loop_end[stack[--top]] = i;
    }
    int depth = 0, next_block = 1;
    stack[0] = 0;
    c.open[0] = 1;
#define MAP(v) ((v) = map[v])
    for (int i = 0; i < k->n_stmts; i++) {
        kir_stmt *s = &k->stmts[i];
        switch (s->kind) {
        case KS_DEF: {
            kir_val *ops[3];
            int ar = operands(k, s->val, ops);
            for (int j = 0; j < ar; j++) MAP(*ops[j]);
            const kir_value *x = &k->vals[s->val];
            int slot = mem_slot(k, x);
            int64_t g = slot < 0 ? 0 : c.gen[slot];
            size_t h = hash_expr(x) & c.mask;
            for (;; h = (h + 1) & c.mask) {
                avail *a = &c.tab[h];
                if (!a->val) {
                    *a = (avail){s->val, stack[depth], g};
                    break;
                }
                if (!same_expr(k, a->val, s->val)) continue;
                if (c.open[a->block] && a->gen == g) map[s->val] = a->val;
                else *a = (avail){s->val, stack[depth], g};
                break;
            }
            break;
        }
        case KS_STORE: MAP(s->idx), MAP(s->val); clobber_stmt(&c, s); break;
        case KS_PREFETCH: MAP(s->idx); break;
        case KS_VAR_SET: MAP(s->val); clobber_stmt(&c, s); break;
        case KS_BARRIER: clobber_stmt(&c, s); break;
        case KS_LOOP_BEGIN:
        case KS_IF_BEGIN:
            if (s->kind == KS_LOOP_BEGIN) {
                MAP(s->lo), MAP(s->hi), MAP(s->step);
                for (int j = i + 1; j < loop_end[i]; j++) clobber_stmt(&c, &k->stmts[j]);
            } else {
                MAP(s->cond);
            }
            stack[++depth] = next_block;
            c.open[next_block++] = 1;
            break;
        case KS_ELSE:
            c.open[stack[depth]] = 0;
            stack[depth] = next_block;
            c.open[next_block++] = 1;
            break;
        case KS_LOOP_END:
        case KS_IF_END: c.open[stack[depth--]] = 0; break;
        case KS_COUNT: break;
        }
    }
#undef MAP
    for (int i = 0; i < k->n_accesses; i++) {
        kir_access *a = &k->accesses[i];
        a->at = map[a->at];
        for (int d = 0; d < a->rank; d++) a->idx[d] = map[a->idx[d]];
    }
    free(c.tab), free(c.open), free(c.gen), free(map), free(stack), free(loop_end);
    return SMELT_OK;
}

/* ---- loops of one iteration --------------------------------------------- */

/* Whether loop statement i runs its body exactly once, on every thread. */
static bool one_trip(const kir_kernel *k, const kir_stmt *s)
{
    if (!kir_is_const(k, s->lo) || !kir_is_const(k, s->hi) || !kir_is_const(k, s->step) || s->stream || s->gemm) return false;
    if (s->parallel && k->wg_size > 1) return false; /* spread over threads: only one runs it */
    int64_t lo = k->vals[s->lo].imm.i, hi = k->vals[s->hi].imm.i, step = k->vals[s->step].imm.i;
    return step > 0 && lo < hi && hi - lo <= step;
}

/* Index arithmetic on constants, or x + 0, x * 1, x * 0: the value it
 * becomes (0: none), possibly turning v itself into a constant. */
static kir_val fold_index(kir_kernel *k, kir_val v)
{
    kir_value *x = &k->vals[v];
    if (x->type != SMELT_I64 || (x->op != KIR_ADD && x->op != KIR_SUB && x->op != KIR_MUL)) return 0;
    bool ca = kir_is_const(k, x->a), cb = kir_is_const(k, x->b);
    int64_t a = ca ? k->vals[x->a].imm.i : 0, b = cb ? k->vals[x->b].imm.i : 0;
    if (ca && cb) {
        /* wrapping, as the interpreter computes int64 */
        uint64_t r = x->op == KIR_ADD ? (uint64_t)a + (uint64_t)b : x->op == KIR_SUB ? (uint64_t)a - (uint64_t)b
                                                                                     : (uint64_t)a * (uint64_t)b;
        x->op = KIR_CONST;
        x->a = x->b = x->c = 0;
        x->imm.i = (int64_t)r;
        x->def = -1;
        return v;
    }
    if (x->op == KIR_MUL && ((ca && a == 0) || (cb && b == 0))) return ca && a == 0 ? x->a : x->b;
    if (x->op == KIR_MUL && ca && a == 1) return x->b;
    if ((x->op == KIR_MUL && cb && b == 1) || (x->op != KIR_MUL && cb && b == 0)) return x->a;
    if (x->op == KIR_ADD && ca && a == 0) return x->b;
    return 0;
}

smelt_status kir_clean_one_trip(kir_kernel *k)
{
    char *keep = malloc((size_t)k->n_stmts + 1);
    int *stack = malloc(sizeof(int) * ((size_t)k->n_stmts + 1));
    kir_val *map = malloc(sizeof(kir_val) * ((size_t)k->n_vals + 1));
    if (!keep || !stack || !map) {
        free(keep), free(stack), free(map);
        return nomem(k);
    }
    for (kir_val v = 0; v < k->n_vals; v++) map[v] = v;
    int top = 0;
    for (int i = 0; i < k->n_stmts; i++) {
        kir_stmt *s = &k->stmts[i];
        keep[i] = 1;
#define MAP(v) ((v) = map[v])
        switch (s->kind) {
        case KS_DEF: {
            kir_val *ops[3];
            int ar = operands(k, s->val, ops);
            for (int j = 0; j < ar; j++) MAP(*ops[j]);
            kir_val f = fold_index(k, s->val);
            if (f) {
                map[s->val] = f;
                keep[i] = 0;
            }
            break;
        }
        case KS_STORE: MAP(s->idx), MAP(s->val); break;
        case KS_PREFETCH: MAP(s->idx); break;
        case KS_VAR_SET: MAP(s->val); break;
        case KS_IF_BEGIN: MAP(s->cond), stack[top++] = i; break;
        case KS_LOOP_BEGIN:
            MAP(s->lo), MAP(s->hi), MAP(s->step);
            stack[top++] = i;
            if (one_trip(k, s)) { /* the loop value is its first value */
                kir_value *x = &k->vals[s->val];
                *x = (kir_value){.op = KIR_CONST, .type = SMELT_I64, .def = -1, .imm.i = k->vals[s->lo].imm.i};
                keep[i] = 0;
            }
            break;
        case KS_LOOP_END:
        case KS_IF_END: keep[i] = keep[stack[--top]]; break;
        default: break;
        }
#undef MAP
    }
    for (int i = 0; i < k->n_accesses; i++) {
        kir_access *a = &k->accesses[i];
        a->at = map[a->at];
        for (int d = 0; d < a->rank; d++) a->idx[d] = map[a->idx[d]];
    }
    int r = compact(k, keep);
    free(keep), free(stack), free(map);
    return r < 0 ? nomem(k) : SMELT_OK;
}

/* ---- loop-invariant code motion ----------------------------------------- */

/* Whether computing x may fault or be undefined for operands the loop would
 * never have used: a load (its index may lie outside the buffer when the loop
 * runs no iteration), integer division and remainder, shifts, conversions. */
static bool may_trap(const kir_kernel *k, const kir_value *x)
{
    switch (x->op) {
    case KIR_LOAD: case KIR_SHL: case KIR_SHR: case KIR_CAST: return true;
    case KIR_DIV: case KIR_MOD:
        if (kir_is_float(x->type)) return false;
        return !kir_is_const(k, x->b) || k->vals[x->b].imm.i == 0 || k->vals[x->b].imm.i == -1;
    default: return false;
    }
}

/* Whether loop statement b runs its body at least once. */
static bool runs(const kir_kernel *k, const kir_stmt *b)
{
    if (!kir_is_const(k, b->lo) || !kir_is_const(k, b->hi) || !kir_is_const(k, b->step)) return false;
    return k->vals[b->step].imm.i > 0 && k->vals[b->lo].imm.i < k->vals[b->hi].imm.i;
}

/* Whether DEF of x may move from inside the block opened at statement b
 * (closed at `end`) to just before it. */
static bool may_leave(const kir_kernel *k, int b, int end, const kir_value *x)
{
    const kir_stmt *s = &k->stmts[b];
    if (s->kind != KS_LOOP_BEGIN || s->stream) return false; /* not out of ifs, nor stream copies */
    if (x->op == KIR_VARGET) return false;
    if (may_trap(k, x) && !runs(k, s)) return false;
    if (x->op != KIR_LOAD) return true;
    for (int j = b + 1; j < end; j++) { /* the loop must not change what the load reads */
        const kir_stmt *t = &k->stmts[j];
        if (t->kind == KS_BARRIER || (t->kind == KS_STORE && t->buf == x->buf)) return false;
    }
    return true;
}

typedef struct licm_key {
    int anchor, self, index;
} licm_key;

static int licm_cmp(const void *pa, const void *pb)
{
    const licm_key *a = pa, *b = pb;
    if (a->anchor != b->anchor) return a->anchor < b->anchor ? -1 : 1;
    if (a->self != b->self) return a->self - b->self;
    return (a->index > b->index) - (a->index < b->index);
}

smelt_status kir_clean_licm(kir_kernel *k)
{
    int n = k->n_stmts;
    int *level = calloc((size_t)k->n_vals + 1, sizeof(int)); /* nesting depth a value is available at */
    int *open = malloc(sizeof(int) * ((size_t)n + 1));       /* statement opening each enclosing block */
    int *end = malloc(sizeof(int) * ((size_t)n + 1));        /* per block opener: its closing statement */
    licm_key *key = malloc(sizeof(licm_key) * ((size_t)n + 1));
    kir_stmt *copy = malloc(sizeof(kir_stmt) * ((size_t)n + 1));
    if (!level || !open || !end || !key || !copy) {
        free(level), free(open), free(end), free(key), free(copy);
        return nomem(k);
    }
    int depth = 0;
    for (int i = 0; i < n; i++) {
        kir_stmt_kind kd = k->stmts[i].kind;
        if (kd == KS_LOOP_BEGIN || kd == KS_IF_BEGIN) open[depth++] = i;
        else if (kd == KS_LOOP_END || kd == KS_IF_END) end[open[--depth]] = i;
    }
    bool moved = false;
    for (int i = 0; i < n; i++) {
        const kir_stmt *s = &k->stmts[i];
        key[i] = (licm_key){i, 1, i};
        switch (s->kind) {
        case KS_LOOP_BEGIN:
        case KS_IF_BEGIN:
            open[depth++] = i;
            if (s->kind == KS_LOOP_BEGIN) level[s->val] = depth;
            break;
        case KS_LOOP_END:
        case KS_IF_END: depth--; break;
        case KS_DEF: {
            const kir_value *x = &k->vals[s->val];
            kir_val ops[3] = {x->a, x->b, x->c};
            int t = 0, ar = x->op == KIR_LOAD ? 1 : kir_op_arity(x->op);
            for (int j = 0; j < ar; j++)
                if (level[ops[j]] > t) t = level[ops[j]];
            int to = depth; /* out of the blocks at depths to..depth-1 of open[], innermost first */
            while (to > t && may_leave(k, open[to - 1], end[open[to - 1]], x)) to--;
            level[s->val] = to;
            if (to < depth) {
                key[i] = (licm_key){open[to], 0, i};
                moved = true;
            }
            break;
        }
        default: break;
        }
    }
    if (moved) {
        qsort(key, (size_t)n, sizeof *key, licm_cmp);
        memcpy(copy, k->stmts, sizeof(kir_stmt) * (size_t)n);
        for (int i = 0; i < n; i++) k->stmts[i] = copy[key[i].index];
        for (int i = 0; i < n; i++)
            if (k->stmts[i].kind == KS_DEF || k->stmts[i].kind == KS_LOOP_BEGIN) k->vals[k->stmts[i].val].def = i;
    }
    free(level), free(open), free(end), free(key), free(copy);
    return SMELT_OK;
}

/* ---- the order ---------------------------------------------------------- */

typedef smelt_status (*clean_pass)(kir_kernel *k);

static const struct {
    const char *name;
    clean_pass run;
} passes[] = {
    {"one-trip", kir_clean_one_trip}, /* first: the constants it makes let cse merge more */
    {"cse", kir_clean_cse},           /* leaves the duplicates dead */
    {"licm", kir_clean_licm},         /* after cse: one copy of each invariant to move */
    {"dead", kir_clean_dead},         /* last: removes what the others left unused */
};

smelt_status kir_clean(kir_kernel *k)
{
    if (k->oom) return kir_verify(k);
    for (size_t p = 0; p < sizeof passes / sizeof passes[0]; p++) {
        TRY(passes[p].run(k));
#ifndef NDEBUG
        smelt_status s = kir_verify(k);
        if (s) return diag_context(s, "after kernel cleanup pass '%s'", passes[p].name);
#endif
    }
    return SMELT_OK;
}
