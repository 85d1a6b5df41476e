/*
 * einsum.c — Einsum as one kernel: each output element is the sum,
 * over the labels that do not appear in the output, of the product of the
 * inputs at their labelled indices.
 *
 * requires: infer_Einsum succeeded (parse_Einsum accepts the equation,
 *           einsum_spec_of fits it to the inputs and label sizes agree,
 *           size-1 dims broadcasting).
 * guarantees: a size-1 input dim reads index 0 whatever its label's size;
 *             the summed labels are inner loops accumulating in the dtype.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lower/lower.h"
#include "ops/einsum.h"
#include "ops/shape.h"

typedef struct es_job {
    einsum_spec e;
    smelt_dtype dt;
} es_job;

static void es_body(lower_ctx *c, const kir_val *oidx, void *user)
{
    const es_job *j = user;
    const einsum_spec *e = &j->e;
    kir_kernel *K = c->k;
    kir_val lab[EINSUM_MAX_LABELS] = {0};
    bool in_out[EINSUM_MAX_LABELS] = {0};
    for (int d = 0; d < e->out_rank; d++) {
        lab[e->out_lab[d]] = oidx[d];
        in_out[e->out_lab[d]] = true;
    }
    int acc = -1, open = 0;
    for (int l = 0; l < e->n_labels; l++) {
        if (in_out[l]) continue;
        if (acc < 0) acc = kir_var_new(K, j->dt, kir_const_f(K, j->dt, 0));
        if (e->size[l] == 1) {
            lab[l] = kir_idx(K, 0);
        } else {
            lab[l] = kir_loop_begin(K, kir_idx(K, 0), kir_idx(K, e->size[l]), kir_idx(K, 1));
            open++;
        }
    }
    kir_val prod = 0;
    for (int i = 0; i < e->n_in; i++) {
        const ir_shape *s = &ir_in(c->g, c->n, i)->shape;
        kir_val ii[IR_MAX_RANK];
        for (int d = 0; d < e->in_rank[i]; d++) ii[d] = s->dim[d] == 1 ? kir_idx(K, 0) : lab[e->lab[i][d]];
        kir_val v = lower_load(c, i, ii);
        prod = prod ? kir_binary(K, KIR_MUL, prod, v) : v;
    }
    if (acc >= 0) {
        kir_var_set(K, acc, kir_binary(K, KIR_ADD, kir_var_get(K, acc), prod));
        while (open--) kir_loop_end(K);
        prod = kir_var_get(K, acc);
    }
    lower_store(c, 0, oidx, prod);
}

smelt_status lower_Einsum(lower_ctx *c)
{
    es_job j;
    TRY(einsum_spec_of(c->g, c->n, &j.e));
    j.dt = ir_in(c->g, c->n, 0)->dtype;
    const ir_shape *os = &c->g->tensors[c->n->out[0]].shape;
    int64_t work = 1;
    for (int l = 0; l < j.e.n_labels; l++) work *= j.e.size[l];
    int64_t on = ir_shape_numel(os);
    if (on == 0) return SMELT_OK;
    lower_parallel_for(c, os, on ? work / on + 1 : 1, es_body, &j);
    return c->k ? SMELT_OK : ir_node_fail(c->n, SMELT_ERR_NOMEM, "out of memory");
}

/* ---- Einsum ------------------------------------------------------------- */

/* One term's items into p_items (letter ids 0..51, EINSUM_ELL for '...'):
 * the count of items, or -1 on a malformed term (a character that is not a
 * letter, a space or a whole '...'; two ellipses; more than 8 letters). */
static int einsum_term(const char *s, const char *e, signed char *items, bool *has_ell)
{
    int r = 0, letters = 0;
    *has_ell = false;
    for (const char *p = s; p < e; p++) {
        if (*p == ' ') continue;
        if (*p == '.') {
            if (p + 2 >= e || p[1] != '.' || p[2] != '.' || *has_ell) return -1;
            *has_ell = true;
            items[r++] = EINSUM_ELL;
            p += 2;
            continue;
        }
        int ch = (unsigned char)*p;
        int li = ch >= 'a' && ch <= 'z' ? ch - 'a' : ch >= 'A' && ch <= 'Z' ? 26 + ch - 'A' : -1;
        if (li < 0 || letters >= 8) return -1;
        letters++;
        items[r++] = (signed char)li;
    }
    return r;
}

smelt_status parse_Einsum(const ir_graph *g, const ir_node *n, void *params)
{
    einsum_params *p = params;
    const char *eq = ir_attr_string(n, "equation", NULL);
    if (!eq) return ir_node_fail(n, SMELT_ERR_MODEL, "missing attribute 'equation'");
    memset(p, 0, sizeof *p);
    p->eq = eq;
    if (n->n_in > EINSUM_MAX_IN) return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "more than %d inputs", EINSUM_MAX_IN);
    const char *arrow = strstr(eq, "->");
    const char *lhs_end = arrow ? arrow : eq + strlen(eq);
    for (const char *s = eq;;) {
        const char *c = memchr(s, ',', (size_t)(lhs_end - s));
        if (p->n_terms >= EINSUM_MAX_IN)
            return ir_node_fail(n, SMELT_ERR_MODEL, "equation '%s' has too many terms", eq);
        int i = p->n_terms++;
        int r = einsum_term(s, c ? c : lhs_end, p->item[i], &p->has_ell[i]);
        if (r < 0) {
            /* the message of a term that does not fit its input (einsum_spec_of) */
            const ir_tensor *t = g && i < n->n_in ? ir_in(g, n, i) : NULL;
            return ir_node_fail(n, SMELT_ERR_MODEL, "equation term %d of '%s' does not match input %d of rank %d", i,
                                eq, i, t ? t->shape.rank : 0);
        }
        p->n_item[i] = (signed char)r;
        for (int k = 0; k < r; k++)
            if (p->item[i][k] != EINSUM_ELL) p->letter_used[p->item[i][k]] = true;
        if (!c) break;
        s = c + 1;
    }
    if (p->n_terms != n->n_in)
        return ir_node_fail(n, SMELT_ERR_MODEL, "equation '%s' has %d input terms for %d inputs", eq, p->n_terms,
                            n->n_in);
    p->has_arrow = arrow != NULL;
    if (arrow) {
        int r = einsum_term(arrow + 2, eq + strlen(eq), p->out_item, &p->out_has_ell);
        if (r < 0) return ir_node_fail(n, SMELT_ERR_MODEL, "malformed output term in '%s'", eq);
        for (int j = 0; j < r; j++) {
            int li = p->out_item[j];
            if (li == EINSUM_ELL) continue;
            if (!p->letter_used[li]) return ir_node_fail(n, SMELT_ERR_MODEL, "output label in '%s' appears in no input", eq);
            for (int m = 0; m < j; m++)
                if (p->out_item[m] == li) return ir_node_fail(n, SMELT_ERR_MODEL, "output label repeated in '%s'", eq);
        }
        p->n_out_item = (signed char)r;
    }
    return SMELT_OK;
}

/* The letters of term items[0..r) (its items less its ellipsis). */
static int einsum_letters(const signed char *items, int r)
{
    int letters = 0;
    for (int k = 0; k < r; k++) letters += items[k] != EINSUM_ELL;
    return letters;
}

smelt_status einsum_spec_of(const ir_graph *g, const ir_node *n, einsum_spec *e)
{
    einsum_params scratch;
    const void *v;
    TRY(ir_node_params_get(g, n, &scratch, &v));
    const einsum_params *p = v;
    const char *eq = p->eq;
    memset(e, 0, sizeof *e);
    e->n_in = p->n_terms;
    /* The ellipsis covers the dims not named by letters; the widest input decides its rank. */
    int ell = 0;
    for (int i = 0; i < p->n_terms; i++) {
        const ir_tensor *t = ir_in(g, n, i);
        if (!t) return ir_node_fail(n, SMELT_ERR_MODEL, "input %d is missing", i);
        int er = t->shape.rank - einsum_letters(p->item[i], p->n_item[i]);
        if (p->has_ell[i] && er > ell) ell = er;
    }
    for (int i = 0; i < p->n_terms; i++) {
        const ir_tensor *t = ir_in(g, n, i);
        int letters = einsum_letters(p->item[i], p->n_item[i]);
        int er = t->shape.rank - letters; /* this input's own ellipsis dims, right-aligned in [0, ell) */
        bool has = p->has_ell[i];
        if ((has && (er < 0 || letters + ell > 8)) || (!has && letters != t->shape.rank))
            return ir_node_fail(n, SMELT_ERR_MODEL, "equation term %d of '%s' does not match input %d of rank %d", i, eq, i,
                                t->shape.rank);
        int k = 0;
        for (int j = 0; j < p->n_item[i]; j++) {
            if (p->item[i][j] != EINSUM_ELL) {
                e->lab[i][k++] = -2 - p->item[i][j]; /* letters: renumbered after the ellipsis labels below */
                continue;
            }
            for (int l = ell - er; l < ell; l++) e->lab[i][k++] = l; /* the ellipsis dims this input has */
        }
        e->in_rank[i] = k;
    }
    /* Renumber letters after the ellipsis labels, in alphabetical order. */
    int letter_lab[52];
    e->n_labels = ell;
    for (int li = 0; li < 52; li++) letter_lab[li] = p->letter_used[li] ? e->n_labels++ : -1;
    if (e->n_labels > EINSUM_MAX_LABELS) return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "too many labels");
    int count[EINSUM_MAX_LABELS] = {0};
    for (int l = 0; l < EINSUM_MAX_LABELS; l++) e->size[l] = 1;
    for (int i = 0; i < p->n_terms; i++)
        for (int d = 0; d < e->in_rank[i]; d++) {
            int l = e->lab[i][d];
            if (l < 0) l = e->lab[i][d] = letter_lab[-2 - l];
            count[l]++;
            int64_t sz = ir_in(g, n, i)->shape.dim[d];
            if (sz != 1 && e->size[l] != 1 && e->size[l] != sz)
                return ir_node_fail(n, SMELT_ERR_SHAPE, "equation '%s': dim %d of input %d has size %lld, elsewhere %lld",
                                    eq, d, i, (long long)sz, (long long)e->size[l]);
            if (sz != 1) e->size[l] = sz;
        }
    if (p->has_arrow) {
        if (einsum_letters(p->out_item, p->n_out_item) + (p->out_has_ell ? ell : 0) > 8)
            return ir_node_fail(n, SMELT_ERR_MODEL, "malformed output term in '%s'", eq);
        for (int j = 0; j < p->n_out_item; j++) {
            if (p->out_item[j] != EINSUM_ELL) {
                e->out_lab[e->out_rank++] = letter_lab[p->out_item[j]];
                continue;
            }
            for (int l = 0; l < ell; l++) e->out_lab[e->out_rank++] = l;
        }
    } else {
        for (int l = 0; l < ell; l++) e->out_lab[e->out_rank++] = l;
        for (int l = ell; l < e->n_labels; l++)
            if (count[l] == 1) {
                if (e->out_rank >= 8) return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "output rank too large");
                e->out_lab[e->out_rank++] = l;
            }
    }
    return SMELT_OK;
}

smelt_status infer_Einsum(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_check_dtypes(g, n));
    TRY(infer_same_dtype(g, n, 0, n->n_in - 1));
    const ir_tensor *x = ir_in(g, n, 0);
    if (!x) return ir_node_fail(n, SMELT_ERR_MODEL, "missing input 0");
    TRY(infer_require_class(n, x, x->dtype != SMELT_BOOL, "numeric"));
    einsum_spec e;
    TRY(einsum_spec_of(g, n, &e));
    ir_shape out = {.rank = e.out_rank};
    for (int d = 0; d < e.out_rank; d++) out.dim[d] = e.size[e.out_lab[d]];
    return infer_set_out(g, n, 0, x->dtype, &out);
}
