#include "plan/plan.h"

#include <stdlib.h>
#include <string.h>

static int64_t align_up(int64_t x) { return (x + PLAN_ALIGN - 1) / PLAN_ALIGN * PLAN_ALIGN; }

static bool overlap_time(const plan_slot *a, const plan_slot *b) { return a->first <= b->last && b->first <= a->last; }


bool plan_node_is_view(const ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    if (!(op_get(n->op)->flags & OPF_VIEW) || n->n_in < 1 || n->n_out < 1 || n->in[0] < 0 || n->out[0] < 0) return false;
    const ir_tensor *x = &g->tensors[n->in[0]], *y = &g->tensors[n->out[0]];
    return x->dtype == y->dtype && !y->data && ir_tensor_numel(x) == ir_tensor_numel(y);
}

/* ---- in-place: the Kernel IR check ------------------------------------------------------ */

/* Structural equality of two index expressions (same pure ops on the same leaves). */
static bool same_expr(const kir_kernel *k, kir_val a, kir_val b, int *budget)
{
    if (a == b) return true;
    if (!a || !b || --*budget < 0) return false;
    const kir_value *x = &k->vals[a], *y = &k->vals[b];
    if (x->op != y->op || x->type != y->type) return false;
    switch (x->op) {
    case KIR_CONST: return kir_is_float(x->type) ? x->imm.f == y->imm.f : x->imm.i == y->imm.i;
    case KIR_WG: case KIR_LID: return true;
    case KIR_LOOPVAR: case KIR_VARGET: case KIR_LOAD: return false; /* distinct ids are distinct values */
    default: break;
    }
    int n = kir_op_arity(x->op);
    return (n < 1 || same_expr(k, x->a, y->a, budget)) && (n < 2 || same_expr(k, x->b, y->b, budget)) &&
           (n < 3 || same_expr(k, x->c, y->c, budget));
}

/* Does value v depend on `on` (through operands, and a loop value through its bounds)? */
static bool depends_on(const kir_kernel *k, kir_val v, kir_val on, int *budget)
{
    if (v == on) return true;
    if (!v || --*budget < 0) return false;
    const kir_value *x = &k->vals[v];
    if (x->op == KIR_LOOPVAR && x->def >= 0) {
        const kir_stmt *s = &k->stmts[x->def];
        return depends_on(k, s->lo, on, budget) || depends_on(k, s->hi, on, budget);
    }
    if (x->op == KIR_LOAD) return depends_on(k, x->a, on, budget);
    int n = kir_op_arity(x->op);
    return (n >= 1 && depends_on(k, x->a, on, budget)) || (n >= 2 && depends_on(k, x->b, on, budget)) ||
           (n >= 3 && depends_on(k, x->c, on, budget));
}

static bool is_structural(kir_stmt_kind s) { return s != KS_DEF && s != KS_STORE && s != KS_VAR_SET; }

/* The statement index of buffer w's only store, or -1 when it has none or several,
 * or when its index does not vary with every enclosing loop and the workgroup. */
static int single_store(const kir_kernel *k, int w)
{
    int st = -1;
    for (int i = 0; i < k->n_stmts; i++)
        if (k->stmts[i].kind == KS_STORE && k->stmts[i].buf == w) {
            if (st >= 0) return -1;
            st = i;
        }
    if (st < 0) return -1;
    kir_val idx = k->stmts[st].idx;
    int depth = 0;
    for (int i = st - 1; i >= 0; i--) {
        const kir_stmt *s = &k->stmts[i];
        if (s->kind == KS_LOOP_END || s->kind == KS_IF_END) depth++;
        else if ((s->kind == KS_LOOP_BEGIN || s->kind == KS_IF_BEGIN) && depth > 0) depth--;
        else if (s->kind == KS_LOOP_BEGIN) {
            int budget = 4096;
            if (!depends_on(k, idx, s->val, &budget)) return -1;
        }
    }
    if (k->n_workgroups > 1) {
        kir_val wg = 0;
        for (kir_val v = 1; v < k->n_vals && !wg; v++)
            if (k->vals[v].op == KIR_WG) wg = v;
        int budget = 4096;
        if (!wg || !depends_on(k, idx, wg, &budget)) return -1;
    }
    return st;
}

/* Every load from buffer r reads at the store's index, just before the store. */
static bool loads_match_store(const kir_kernel *k, int r, int st)
{
    kir_val idx = k->stmts[st].idx;
    for (kir_val v = 1; v < k->n_vals; v++) {
        const kir_value *x = &k->vals[v];
        /* def < 0: a load the Kernel-IR cleanup removed (a duplicate CSE merged, or dead) */
        if (x->op != KIR_LOAD || x->buf != r || x->def < 0) continue;
        int budget = 4096;
        if (x->def >= st || !same_expr(k, x->a, idx, &budget)) return false;
        for (int i = x->def + 1; i < st; i++)
            if (is_structural(k->stmts[i].kind)) return false;
    }
    return true;
}

/* Make written buffer w of kernel ki (slot t) share the memory of root r, if allowed. */
static bool try_in_place(mem_plan *m, const kir_kernel *k, int ki, int w, int r)
{
    plan_slot *R = &m->slots[r], *T = &m->slots[k->bufs[w].tensor];
    if (R->kind != PLAN_ARENA || R->last != ki || R->bytes != T->bytes) return false;
    int st = single_store(k, w);
    if (st < 0) return false;
    for (int b = 0; b < k->n_bufs; b++) {
        const kir_buffer *x = &k->bufs[b];
        if (x->workgroup || plan_root(m, x->tensor) != r) continue;
        if (x->written || x->type != k->bufs[w].type || x->numel != k->bufs[w].numel || !loads_match_store(k, b, st))
            return false;
    }
    for (int b = 0; b < k->n_bufs; b++)
        if (!k->bufs[b].workgroup && plan_root(m, k->bufs[b].tensor) == r) m->in_place_of[ki][b] = w;
    int t = k->bufs[w].tensor;
    for (int s = 0; s < m->n_slots; s++)
        if (s == t || m->slots[s].alias == t) {
            m->slots[s].alias = r;
            m->slots[s].in_place = m->slots[s].in_place || s == t;
        }
    if (T->last > R->last) R->last = T->last;
    return true;
}

static void plan_in_place(mem_plan *m, const lower_program *p)
{
    for (int ki = 0; ki < p->n_kernels; ki++) {
        const kir_kernel *k = p->kernels[ki];
        for (int w = 0; w < k->n_bufs; w++) {
            const kir_buffer *bw = &k->bufs[w];
            const plan_slot *T = &m->slots[bw->tensor];
            if (bw->workgroup || !bw->written || T->alias >= 0 || T->kind != PLAN_ARENA || T->first != ki) continue;
            for (int b = 0; b < k->n_bufs; b++) {
                const kir_buffer *br = &k->bufs[b];
                if (br->workgroup || br->written || plan_root(m, br->tensor) == bw->tensor) continue;
                if (try_in_place(m, k, ki, w, plan_root(m, br->tensor))) {
                    m->n_in_place++;
                    break;
                }
            }
        }
    }
}

/* ---- placement ------------------------------------------------------------------------- */

/* A sort key that carries what it compares, so the comparator needs no global
 * context (two threads may plan at once). */
typedef struct slot_key {
    int64_t bytes;
    int first, slot;
} slot_key;

static int by_size_desc(const void *x, const void *y)
{
    const slot_key *a = x, *b = y;
    if (a->bytes != b->bytes) return a->bytes < b->bytes ? 1 : -1;
    if (a->first != b->first) return a->first < b->first ? -1 : 1;
    return a->slot - b->slot;
}

static int by_offset(const void *x, const void *y)
{
    const int64_t *a = x, *b = y;
    return a[0] < b[0] ? -1 : a[0] > b[0];
}

/* Place order[0..n) in that order; offsets into off[slot]; returns the arena size.
 * `spans` is scratch for 2 * n int64. */
static int64_t place(const plan_slot *s, const slot_key *order, int n, bool best_fit, int64_t *off, int64_t *spans)
{
    int64_t top = 0;
    for (int i = 0; i < n; i++) {
        const plan_slot *x = &s[order[i].slot];
        int64_t size = align_up(x->bytes);
        int m = 0;
        for (int j = 0; j < i; j++) {
            const plan_slot *y = &s[order[j].slot];
            if (!overlap_time(x, y)) continue;
            spans[2 * m] = off[order[j].slot];
            spans[2 * m + 1] = off[order[j].slot] + align_up(y->bytes);
            m++;
        }
        qsort(spans, (size_t)m, 2 * sizeof(int64_t), by_offset);
        int64_t end = 0, pos = -1, pos_gap = INT64_MAX;
        for (int j = 0; j < m; j++) {
            int64_t gap = spans[2 * j] - end;
            if (gap >= size && gap < pos_gap) {
                pos = end;
                pos_gap = gap;
                if (!best_fit) break;
            }
            if (spans[2 * j + 1] > end) end = spans[2 * j + 1];
        }
        if (pos < 0) pos = end;
        off[order[i].slot] = pos;
        if (pos + size > top) top = pos + size;
    }
    return top;
}

static smelt_status place_arena(mem_plan *m)
{
    int n = m->n_slots, cnt = 0;
    slot_key *keys = malloc(sizeof(slot_key) * ((size_t)n + 1));
    int64_t *ff = malloc(sizeof(int64_t) * ((size_t)n + 1)), *bf = malloc(sizeof(int64_t) * ((size_t)n + 1));
    int64_t *spans = malloc(sizeof(int64_t) * 2 * ((size_t)n + 1));
    if (!keys || !ff || !bf || !spans) {
        free(keys), free(ff), free(bf), free(spans);
        return diag_fail(SMELT_ERR_NOMEM, "out of memory planning memory");
    }
    for (int s = 0; s < n; s++)
        if (m->slots[s].kind == PLAN_ARENA && m->slots[s].alias < 0)
            keys[cnt++] = (slot_key){m->slots[s].bytes, m->slots[s].first, s};
    qsort(keys, (size_t)cnt, sizeof(slot_key), by_size_desc);
    m->first_fit_bytes = place(m->slots, keys, cnt, false, ff, spans);
    m->best_fit_bytes = place(m->slots, keys, cnt, true, bf, spans);
    const int64_t *off = m->best_fit_bytes < m->first_fit_bytes ? bf : ff;
    m->arena_bytes = m->best_fit_bytes < m->first_fit_bytes ? m->best_fit_bytes : m->first_fit_bytes;
    for (int s = 0; s < n; s++) {
        plan_slot *x = &m->slots[s];
        if (x->kind == PLAN_ARENA) x->offset = off[plan_root(m, s)];
    }
    free(keys), free(ff), free(bf), free(spans);
    return SMELT_OK;
}

/* ---- building -------------------------------------------------------------------------- */

smelt_status plan_build(const ir_graph *g, const lower_program *p, mem_plan *out)
{
    memset(out, 0, sizeof *out);
    int n = g->n_tensors + p->n_scratch;
    out->n_slots = n;
    out->n_kernels = p->n_kernels;
    out->slots = calloc((size_t)n + 1, sizeof(plan_slot));
    int n_bufs = 0;
    for (int ki = 0; ki < p->n_kernels; ki++) n_bufs += p->kernels[ki]->n_bufs;
    out->in_place_of = calloc((size_t)p->n_kernels + 1, sizeof(int *));
    out->in_place_table = malloc(sizeof(int) * ((size_t)n_bufs + 1));
    if (!out->slots || !out->in_place_of || !out->in_place_table) {
        plan_free(out);
        return diag_fail(SMELT_ERR_NOMEM, "out of memory planning memory");
    }
    for (int ki = 0, at = 0; ki < p->n_kernels; at += p->kernels[ki++]->n_bufs) {
        out->in_place_of[ki] = out->in_place_table + at;
        for (int b = 0; b < p->kernels[ki]->n_bufs; b++) out->in_place_of[ki][b] = -1;
    }
    plan_slot *sl = out->slots;
    for (int s = 0; s < n; s++) {
        sl[s].first = p->n_kernels;
        sl[s].last = -1;
        sl[s].alias = -1;
    }
    for (int ki = 0; ki < p->n_kernels; ki++) {
        const kir_kernel *k = p->kernels[ki];
        for (int b = 0; b < k->n_bufs; b++) {
            if (k->bufs[b].workgroup) continue;
            plan_slot *s = &sl[k->bufs[b].tensor];
            if (ki < s->first) s->first = ki;
            if (ki > s->last) s->last = ki;
        }
    }
    for (int s = 0; s < g->n_tensors; s++)
        if (g->tensors[s].is_output) sl[s].last = p->n_kernels;
    for (int i = 0; i < g->n_nodes; i++)
        if (plan_node_is_view(g, i)) {
            int src = g->nodes[i].in[0], dst = g->nodes[i].out[0];
            sl[dst].alias = plan_root(out, src);
            out->n_views++;
        }
    /* A root's interval covers its aliases'; then kinds, decided by the root. */
    for (int s = 0; s < n; s++) {
        plan_slot *x = &sl[s], *r = &sl[plan_root(out, s)];
        if (x->last < 0) continue;
        if (x->first < r->first) r->first = x->first;
        if (x->last > r->last) r->last = x->last;
    }
    for (int s = 0; s < n; s++) {
        plan_slot *x = &sl[s];
        if (x->alias >= 0) continue;
        if (s < g->n_tensors) {
            const ir_tensor *t = &g->tensors[s];
            x->bytes = ir_tensor_numel(t) * (int64_t)smelt_dtype_size(t->dtype);
            if (t->data) x->kind = x->last >= 0 ? PLAN_CONST : PLAN_NONE;
            else if (t->is_input) x->kind = PLAN_INPUT;
            else x->kind = x->last >= 0 ? PLAN_ARENA : PLAN_NONE;
            if (x->kind == PLAN_CONST) out->weight_bytes += x->bytes;
        } else {
            int sc = s - g->n_tensors;
            if (!size_mul(p->scratch_numel[sc], (int64_t)smelt_dtype_size(p->scratch_type[sc]), &x->bytes))
                x->bytes = -1; /* refused below */
            x->kind = x->last >= 0 ? PLAN_ARENA : PLAN_NONE;
        }
    }
    for (int s = 0; s < g->n_tensors; s++) {
        plan_slot *x = &sl[s];
        if (x->alias < 0) continue;
        x->kind = sl[x->alias].kind;
        x->bytes = ir_tensor_numel(&g->tensors[s]) * (int64_t)smelt_dtype_size(g->tensors[s].dtype);
        if (x->kind == PLAN_ARENA && x->last < 0) x->first = x->last = sl[x->alias].first; /* an unused view */
    }
    plan_in_place(out, p);
    /* Every offset place_arena picks is below the sum of the slots it places:
     * checked here once, so no offset or end can overflow. */
    for (int s = 0; s < n; s++)
        if (sl[s].kind == PLAN_ARENA &&
            (sl[s].bytes < 0 || sl[s].bytes > PLAN_MAX_BYTES ||
             !size_add(out->total_bytes, align_up(sl[s].bytes), &out->total_bytes) || out->total_bytes > PLAN_MAX_BYTES)) {
            plan_free(out);
            return diag_fail(SMELT_ERR_NOMEM, "plan: the intermediate tensors need more than 2^62 bytes");
        }
    for (int ki = 0; ki <= p->n_kernels; ki++) {
        int64_t live = 0;
        for (int s = 0; s < n; s++)
            if (sl[s].kind == PLAN_ARENA && sl[s].alias < 0 && sl[s].first <= ki && ki <= sl[s].last)
                live += align_up(sl[s].bytes);
        if (live > out->lower_bound) out->lower_bound = live;
    }
    smelt_status st = place_arena(out);
    if (!st) st = plan_verify(out, p);
    if (st) plan_free(out);
    return st;
}

smelt_status plan_device_arenas(mem_plan *m, int n_devices, const bool *held)
{
    size_t n = (size_t)m->n_slots;
    if (n_devices < 1 || n_devices > PLAN_MAX_DEVICES) return diag_fail(SMELT_ERR_INTERNAL, "plan: %d devices", n_devices);
    free(m->dev_offset);
    m->dev_offset = malloc(sizeof(int64_t) * ((size_t)n_devices * n + 1));
    slot_key *keys = malloc(sizeof(slot_key) * (n + 1));
    int64_t *ff = malloc(sizeof(int64_t) * (n + 1)), *bf = malloc(sizeof(int64_t) * (n + 1));
    int64_t *spans = malloc(sizeof(int64_t) * 2 * (n + 1));
    smelt_status st = m->dev_offset && keys && ff && bf && spans ? SMELT_OK : diag_fail(SMELT_ERR_NOMEM, "out of memory planning memory");
    m->n_devices = n_devices;
    for (int d = 0; d < n_devices && !st; d++) {
        int64_t *row = m->dev_offset + (size_t)d * n;
        int cnt = 0;
        for (size_t s = 0; s < n; s++) {
            row[s] = -1;
            const plan_slot *x = &m->slots[s];
            if (x->kind == PLAN_ARENA && x->alias < 0 && held[(size_t)d * n + s]) keys[cnt++] = (slot_key){x->bytes, x->first, (int)s};
        }
        qsort(keys, (size_t)cnt, sizeof(slot_key), by_size_desc);
        int64_t f = place(m->slots, keys, cnt, false, ff, spans), b = place(m->slots, keys, cnt, true, bf, spans);
        const int64_t *off = b < f ? bf : ff;
        m->dev_arena[d] = b < f ? b : f;
        for (int i = 0; i < cnt; i++) row[keys[i].slot] = off[keys[i].slot];
        for (int i = 0; i < cnt && !st; i++) /* as plan_verify: no two roots live together overlap */
            for (int j = i + 1; j < cnt && !st; j++) {
                const plan_slot *x = &m->slots[keys[i].slot], *y = &m->slots[keys[j].slot];
                int64_t xo = row[keys[i].slot], yo = row[keys[j].slot];
                if (xo % PLAN_ALIGN || xo + x->bytes > m->dev_arena[d] ||
                    (overlap_time(x, y) && x->bytes && y->bytes && xo < yo + y->bytes && yo < xo + x->bytes))
                    st = diag_fail(SMELT_ERR_INTERNAL, "plan: device %d's arena: slots %d and %d are live together and overlap", d,
                                   keys[i].slot, keys[j].slot);
            }
    }
    free(keys), free(ff), free(bf), free(spans);
    return st;
}

void plan_free(mem_plan *m)
{
    free(m->dev_offset);
    free(m->slots);
    free(m->barrier_before);
    free(m->in_place_of);
    free(m->in_place_table);
    memset(m, 0, sizeof *m);
}

/* ---- checking -------------------------------------------------------------------------- */

static smelt_status verify_kernels(const mem_plan *m, const lower_program *p)
{
    for (int ki = 0; ki < p->n_kernels; ki++) {
        const kir_kernel *k = p->kernels[ki];
        for (int b = 0; b < k->n_bufs; b++) {
            const kir_buffer *x = &k->bufs[b];
            if (x->workgroup) continue;
            if (x->tensor < 0 || x->tensor >= m->n_slots)
                return diag_fail(SMELT_ERR_INTERNAL, "plan: kernel %d buffer %d binds no slot", ki, b);
            const plan_slot *s = &m->slots[x->tensor], *r = &m->slots[plan_root(m, x->tensor)];
            if (x->numel * (int64_t)smelt_dtype_size(x->type) > r->bytes)
                return diag_fail(SMELT_ERR_INTERNAL, "plan: kernel %d buffer %d (%lld elements) does not fit slot %d (%lld bytes)",
                                 ki, b, (long long)x->numel, x->tensor, (long long)r->bytes);
            if (s->kind == PLAN_ARENA && (ki < r->first || ki > r->last))
                return diag_fail(SMELT_ERR_INTERNAL, "plan: kernel %d uses slot %d outside its live interval k%d..k%d", ki,
                                 x->tensor, r->first, r->last);
            for (int c = 0; c < k->n_bufs; c++) {
                const kir_buffer *y = &k->bufs[c];
                if (c == b || y->workgroup || !y->written || x->written) continue;
                if (plan_root(m, y->tensor) == plan_root(m, x->tensor) && s->kind == PLAN_ARENA &&
                    (!m->in_place_of || m->in_place_of[ki][b] != c))
                    return diag_fail(SMELT_ERR_INTERNAL, "plan: kernel %d reads buffer %d and writes buffer %d, one memory, "
                                     "without an in-place entry", ki, b, c);
            }
        }
    }
    return SMELT_OK;
}

smelt_status plan_verify(const mem_plan *m, const lower_program *p)
{
    for (int a = 0; a < m->n_slots; a++) {
        const plan_slot *x = &m->slots[a];
        if (x->alias >= 0) {
            const plan_slot *r = x->alias < m->n_slots ? &m->slots[x->alias] : NULL;
            if (!r || r->alias >= 0 || r->kind != x->kind || (x->kind == PLAN_ARENA && r->offset != x->offset) ||
                x->bytes > r->bytes || (x->last >= 0 && (x->first < r->first || x->last > r->last)))
                return diag_fail(SMELT_ERR_INTERNAL, "plan: slot %d is not a well-formed alias of slot %d", a, x->alias);
            continue;
        }
        if (x->kind != PLAN_ARENA) continue;
        if (x->offset < 0 || x->offset % PLAN_ALIGN || x->offset + x->bytes > m->arena_bytes)
            return diag_fail(SMELT_ERR_INTERNAL, "plan: slot %d [%lld,+%lld) outside the arena of %lld bytes", a,
                             (long long)x->offset, (long long)x->bytes, (long long)m->arena_bytes);
        for (int b = a + 1; b < m->n_slots; b++) {
            const plan_slot *y = &m->slots[b];
            if (y->kind == PLAN_ARENA && y->alias < 0 && overlap_time(x, y) && x->offset < y->offset + y->bytes &&
                y->offset < x->offset + x->bytes && x->bytes && y->bytes)
                return diag_fail(SMELT_ERR_INTERNAL, "plan: slots %d and %d are live together and overlap", a, b);
        }
    }
    return p ? verify_kernels(m, p) : SMELT_OK;
}

void plan_dump(const ir_graph *g, const mem_plan *m, FILE *f)
{
    static const char *const kinds[] = {"none", "input", "const", "arena"};
    fprintf(f, "plan: arena %lld bytes (lower bound %lld, unplanned sum %lld; first-fit %lld, best-fit %lld), "
               "weights %lld bytes, %d views, %d in-place\n",
            (long long)m->arena_bytes, (long long)m->lower_bound, (long long)m->total_bytes,
            (long long)m->first_fit_bytes, (long long)m->best_fit_bytes, (long long)m->weight_bytes, m->n_views,
            m->n_in_place);
    if (m->barrier_before)
        fprintf(f, "barriers: %d between %d kernels (kernels between two barriers may run together)\n", m->n_barriers,
                m->n_kernels);
    for (int s = 0; s < m->n_slots; s++) {
        const plan_slot *x = &m->slots[s];
        if (x->kind == PLAN_NONE) continue;
        fprintf(f, "  %-6s %-32s offset %10lld size %10lld live k%d..k%d", kinds[x->kind],
                s < g->n_tensors ? g->tensors[s].name : "(scratch)", (long long)(x->kind == PLAN_ARENA ? x->offset : -1),
                (long long)x->bytes, x->first, x->last);
        if (x->alias >= 0)
            fprintf(f, "  = %s of %s", x->in_place ? "in-place" : "view",
                    x->alias < g->n_tensors ? g->tensors[x->alias].name : "(scratch)");
        fprintf(f, "\n");
    }
}
