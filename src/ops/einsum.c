/*
 * einsum.c — Einsum as one kernel: each output element is the sum,
 * over the labels that do not appear in the output, of the product of the
 * inputs at their labelled indices.
 *
 * requires: infer_Einsum succeeded (einsum_parse accepts the equation and
 *           label sizes agree, size-1 dims broadcasting).
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
    TRY(einsum_parse(c->g, c->n, &j.e));
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

/* Labels of one term into lab[]; '...' expands to `ell` dims labelled
 * 0..ell-1 (right-aligned, so the last ellipsis dim is ell-1). Returns the
 * term's rank, or -1 on a malformed term. */
static int einsum_term(const char *s, const char *e, int ell, int *lab, int *letter_id, bool *has_ell)
{
    int r = 0;
    *has_ell = false;
    for (const char *p = s; p < e; p++) {
        if (*p == ' ') continue;
        if (*p == '.') {
            if (p + 2 >= e || p[1] != '.' || p[2] != '.' || *has_ell) return -1;
            *has_ell = true;
            for (int i = 0; i < ell; i++) {
                if (r >= 8) return -1;
                lab[r++] = i;
            }
            p += 2;
            continue;
        }
        int ch = (unsigned char)*p;
        int li = ch >= 'a' && ch <= 'z' ? ch - 'a' : ch >= 'A' && ch <= 'Z' ? 26 + ch - 'A' : -1;
        if (li < 0 || r >= 8) return -1;
        lab[r++] = -2 - li; /* letters: renumbered after the ellipsis labels below */
        letter_id[li] = 1;
    }
    return r;
}

smelt_status einsum_parse(const ir_graph *g, const ir_node *n, einsum_spec *e)
{
    const char *eq = ir_attr_string(n, "equation", NULL);
    if (!eq) return ir_node_fail(n, SMELT_ERR_MODEL, "missing attribute 'equation'");
    memset(e, 0, sizeof *e);
    e->n_in = n->n_in;
    if (e->n_in > EINSUM_MAX_IN) return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "more than %d inputs", EINSUM_MAX_IN);
    const char *arrow = strstr(eq, "->");
    const char *lhs_end = arrow ? arrow : eq + strlen(eq);
    /* The ellipsis covers the dims not named by letters; the widest input decides its rank. */
    const char *starts[EINSUM_MAX_IN + 1], *ends[EINSUM_MAX_IN + 1];
    int terms = 0;
    for (const char *p = eq;;) {
        const char *c = memchr(p, ',', (size_t)(lhs_end - p));
        if (terms >= EINSUM_MAX_IN) return ir_node_fail(n, SMELT_ERR_MODEL, "equation '%s' has too many terms", eq);
        starts[terms] = p;
        ends[terms] = c ? c : lhs_end;
        terms++;
        if (!c) break;
        p = c + 1;
    }
    if (terms != e->n_in)
        return ir_node_fail(n, SMELT_ERR_MODEL, "equation '%s' has %d input terms for %d inputs", eq, terms, e->n_in);
    int ell = 0;
    int letter_used[52] = {0};
    for (int i = 0; i < terms; i++) {
        const ir_tensor *t = ir_in(g, n, i);
        if (!t) return ir_node_fail(n, SMELT_ERR_MODEL, "input %d is missing", i);
        int letters = 0;
        bool has = false;
        for (const char *p = starts[i]; p < ends[i]; p++) {
            if (*p == '.') has = true;
            else if (*p != ' ') letters++;
        }
        int er = t->shape.rank - letters;
        if (has && er > ell) ell = er;
    }
    int tmp[8];
    for (int i = 0; i < terms; i++) {
        bool has;
        const ir_tensor *t = ir_in(g, n, i);
        int letters = 0;
        for (const char *p = starts[i]; p < ends[i]; p++)
            if (*p != '.' && *p != ' ') letters++;
        int er = t->shape.rank - letters; /* this input's own ellipsis dims, right-aligned in [0, ell) */
        int r = einsum_term(starts[i], ends[i], ell, tmp, letter_used, &has);
        if (r < 0 || (has && er < 0) || (!has && letters != t->shape.rank))
            return ir_node_fail(n, SMELT_ERR_MODEL, "equation term %d of '%s' does not match input %d of rank %d", i, eq, i,
                                t->shape.rank);
        int k = 0;
        for (int j = 0; j < r; j++) {
            if (tmp[j] >= 0 && tmp[j] < ell - er) continue; /* ellipsis dims this input lacks */
            e->lab[i][k++] = tmp[j];
        }
        e->in_rank[i] = k;
    }
    /* Renumber letters after the ellipsis labels, in alphabetical order. */
    int letter_lab[52];
    e->n_labels = ell;
    for (int li = 0; li < 52; li++) letter_lab[li] = letter_used[li] ? e->n_labels++ : -1;
    if (e->n_labels > EINSUM_MAX_LABELS) return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "too many labels");
    int count[EINSUM_MAX_LABELS] = {0};
    for (int l = 0; l < EINSUM_MAX_LABELS; l++) e->size[l] = 1;
    for (int i = 0; i < terms; i++)
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
    if (arrow) {
        bool has;
        int used2[52] = {0};
        int r = einsum_term(arrow + 2, eq + strlen(eq), ell, tmp, used2, &has);
        if (r < 0) return ir_node_fail(n, SMELT_ERR_MODEL, "malformed output term in '%s'", eq);
        for (int j = 0; j < r; j++) {
            int l = tmp[j] >= 0 ? tmp[j] : letter_lab[-2 - tmp[j]];
            if (l < 0) return ir_node_fail(n, SMELT_ERR_MODEL, "output label in '%s' appears in no input", eq);
            for (int m = 0; m < j; m++)
                if (e->out_lab[m] == l) return ir_node_fail(n, SMELT_ERR_MODEL, "output label repeated in '%s'", eq);
            e->out_lab[j] = l;
        }
        e->out_rank = r;
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
    TRY(einsum_parse(g, n, &e));
    ir_shape out = {.rank = e.out_rank};
    for (int d = 0; d < e.out_rank; d++) out.dim[d] = e.size[e.out_lab[d]];
    return infer_set_out(g, n, 0, x->dtype, &out);
}
