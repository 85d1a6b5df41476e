/*
 * attention.c — Attention (scaled dot-product, with masks, causal
 * masking, KV cache, grouped-query heads and softcap) and RotaryEmbedding.
 *
 * requires: shapes inferred by infer_Attention / infer_RotaryEmbedding.
 * guarantees: Attention is one kernel per present_key / present_value output
 *             plus one kernel with a query row (b, head, s) per iteration:
 *             the row's scores go to a scratch buffer once, then softmax
 *             (max-subtracted) and the weighted sum of V read them back. The
 *             past and new parts of K/V are separate loops, so no load ever
 *             reads outside either tensor. RotaryEmbedding is an index map
 *             with clamped position ids.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lower/lower.h"
#include "ops/attention.h"
#include "ops/shape.h"

static kir_val bin(kir_kernel *K, kir_op op, kir_val a, kir_val b) { return kir_binary(K, op, a, b); }
static kir_val idx_c(kir_kernel *K, int64_t v) { return kir_idx(K, v); }

typedef struct att_job {
    attention_geom a;
    smelt_dtype dt;
    double scale, softcap;
    int mode;           /* qk_matmul_output_mode */
    bool causal, qk_out;
    int scratch;
} att_job;

/* Q (input 0) at head h, position s, component d. */
static kir_val q_at(lower_ctx *c, const att_job *j, kir_val b, kir_val h, kir_val s, kir_val d)
{
    kir_kernel *K = c->k;
    if (!j->a.rank3) return lower_load(c, 0, (kir_val[]){b, h, s, d});
    return lower_load(c, 0, (kir_val[]){b, s, kir_add(K, kir_mul(K, h, idx_c(K, j->a.d)), d)});
}

/* K (value: V) at kv head hk, position pos of the past cache (part 0) or of
 * the new keys (part 1), component d. */
static kir_val kv_at(lower_ctx *c, const att_job *j, bool value, int part, kir_val b, kir_val hk, kir_val pos, kir_val d)
{
    kir_kernel *K = c->k;
    if (part == 0) return lower_load(c, value ? 5 : 4, (kir_val[]){b, hk, pos, d});
    int in = value ? 2 : 1;
    if (!j->a.rank3) return lower_load(c, in, (kir_val[]){b, hk, pos, d});
    int64_t hs = value ? j->a.dv : j->a.d;
    return lower_load(c, in, (kir_val[]){b, pos, kir_add(K, kir_mul(K, hk, idx_c(K, hs)), d)});
}

typedef struct present_job {
    const att_job *j;
    bool value;
} present_job;

static void present_body(lower_ctx *c, const kir_val *idx, void *user)
{
    const present_job *p = user;
    const att_job *j = p->j;
    kir_kernel *K = c->k;
    kir_val pos = idx[2], v;
    if (j->a.p == 0) {
        v = kv_at(c, j, p->value, 1, idx[0], idx[1], pos, idx[3]);
    } else if (j->a.l == 0) {
        v = kv_at(c, j, p->value, 0, idx[0], idx[1], pos, idx[3]);
    } else {
        kir_val past = kv_at(c, j, p->value, 0, idx[0], idx[1], lower_clamp(K, pos, j->a.p), idx[3]);
        kir_val cur = kv_at(c, j, p->value, 1, idx[0], idx[1],
                            lower_clamp(K, bin(K, KIR_SUB, pos, idx_c(K, j->a.p)), j->a.l), idx[3]);
        v = kir_select(K, bin(K, KIR_LT, pos, idx_c(K, j->a.p)), past, cur);
    }
    lower_store(c, p->value ? 2 : 1, idx, v);
}

/* The additive bias of column col: attn_mask (bool: 0 / -inf; padded with
 * -inf past its length), causal masking and padded kv lengths. */
static kir_val with_bias(lower_ctx *c, const att_job *j, const kir_val *row, kir_val col, kir_val sc)
{
    kir_kernel *K = c->k;
    kir_val ninf = kir_const_f(K, j->dt, -INFINITY);
    const ir_tensor *m = ir_in(c->g, c->n, 3);
    if (m) {
        int64_t tm = m->shape.dim[m->shape.rank - 1];
        kir_val mi[4] = {row[0], row[1], row[2], tm < j->a.t ? lower_clamp(K, col, tm) : col};
        kir_val mv = lower_load_bcast(c, 3, 4, mi);
        if (m->dtype == SMELT_BOOL) sc = kir_select(K, mv, sc, ninf);
        else sc = bin(K, KIR_ADD, sc, mv);
        if (tm < j->a.t) sc = kir_select(K, bin(K, KIR_LT, col, idx_c(K, tm)), sc, ninf);
    }
    if (j->causal) sc = kir_select(K, bin(K, KIR_GT, col, kir_add(K, row[2], idx_c(K, j->a.p))), ninf, sc);
    if (ir_in(c->g, c->n, 6)) {
        kir_val len = lower_load(c, 6, &row[0]);
        sc = kir_select(K, bin(K, KIR_GE, col, len), ninf, sc);
    }
    return sc;
}

static void att_body(lower_ctx *c, const kir_val *row, void *user)
{
    const att_job *j = user;
    const attention_geom *a = &j->a;
    kir_kernel *K = c->k;
    smelt_dtype dt = j->dt;
    kir_val b = row[0], h = row[1], s = row[2];
    kir_val hk = bin(K, KIR_DIV, h, idx_c(K, a->hq / a->hk));
    kir_val base = kir_mul(K, kir_add(K, kir_mul(K, kir_add(K, kir_mul(K, b, idx_c(K, a->hq)), h), idx_c(K, a->s)), s),
                           idx_c(K, a->t));
    int mx = kir_var_new(K, dt, kir_const_f(K, dt, -INFINITY));
    for (int part = 0; part < 2; part++) {
        int64_t len = part ? a->l : a->p, off = part ? a->p : 0;
        if (len == 0) continue;
        kir_val t = kir_loop_begin(K, idx_c(K, 0), idx_c(K, len), idx_c(K, 1));
        kir_val col = kir_add(K, t, idx_c(K, off));
        int dot = kir_var_new(K, dt, kir_const_f(K, dt, 0));
        kir_val d = kir_loop_begin(K, idx_c(K, 0), idx_c(K, a->d), idx_c(K, 1));
        kir_val p = bin(K, KIR_MUL, q_at(c, j, b, h, s, d), kv_at(c, j, false, part, b, hk, t, d));
        kir_var_set(K, dot, bin(K, KIR_ADD, kir_var_get(K, dot), p));
        kir_loop_end(K);
        kir_val sc = bin(K, KIR_MUL, kir_var_get(K, dot), kir_const_f(K, dt, j->scale));
        if (j->softcap > 0) {
            kir_val cap = kir_const_f(K, dt, j->softcap);
            sc = bin(K, KIR_MUL, kir_unary(K, KIR_TANH, bin(K, KIR_DIV, sc, cap)), cap);
        }
        kir_val qi[4] = {b, h, s, col};
        if (j->qk_out && j->mode <= 1) lower_store(c, 3, qi, sc);
        sc = with_bias(c, j, row, col, sc);
        if (j->qk_out && j->mode == 2) lower_store(c, 3, qi, sc);
        lower_scratch_store(c, j->scratch, kir_add(K, base, col), sc);
        kir_var_set(K, mx, bin(K, KIR_MAX, kir_var_get(K, mx), sc));
        kir_loop_end(K);
    }
    kir_val m = kir_var_get(K, mx);
    int sum = kir_var_new(K, dt, kir_const_f(K, dt, 0));
    kir_val col = kir_loop_begin(K, idx_c(K, 0), idx_c(K, a->t), idx_c(K, 1));
    kir_val e = kir_unary(K, KIR_EXP, bin(K, KIR_SUB, lower_scratch_load(c, j->scratch, kir_add(K, base, col)), m));
    lower_scratch_store(c, j->scratch, kir_add(K, base, col), e);
    kir_var_set(K, sum, bin(K, KIR_ADD, kir_var_get(K, sum), e));
    kir_loop_end(K);
    kir_val inv = bin(K, KIR_DIV, kir_const_f(K, dt, 1), kir_var_get(K, sum));
    if (j->qk_out && j->mode == 3) {
        col = kir_loop_begin(K, idx_c(K, 0), idx_c(K, a->t), idx_c(K, 1));
        kir_val pr = bin(K, KIR_MUL, lower_scratch_load(c, j->scratch, kir_add(K, base, col)), inv);
        lower_store(c, 3, (kir_val[]){b, h, s, col}, pr);
        kir_loop_end(K);
    }
    kir_val dv = kir_loop_begin(K, idx_c(K, 0), idx_c(K, a->dv), idx_c(K, 1));
    int acc = kir_var_new(K, dt, kir_const_f(K, dt, 0));
    for (int part = 0; part < 2; part++) {
        int64_t len = part ? a->l : a->p, off = part ? a->p : 0;
        if (len == 0) continue;
        kir_val t = kir_loop_begin(K, idx_c(K, 0), idx_c(K, len), idx_c(K, 1));
        kir_val w = lower_scratch_load(c, j->scratch, kir_add(K, base, kir_add(K, t, idx_c(K, off))));
        kir_val p = bin(K, KIR_MUL, w, kv_at(c, j, true, part, b, hk, t, dv));
        kir_var_set(K, acc, bin(K, KIR_ADD, kir_var_get(K, acc), p));
        kir_loop_end(K);
    }
    kir_val y = bin(K, KIR_MUL, kir_var_get(K, acc), inv);
    if (a->rank3) lower_store(c, 0, (kir_val[]){b, s, kir_add(K, kir_mul(K, h, idx_c(K, a->dv)), dv)}, y);
    else lower_store(c, 0, (kir_val[]){b, h, s, dv}, y);
    kir_loop_end(K);
}

static bool has_out(const lower_ctx *c, int o) { return o < c->n->n_out && c->n->out[o] >= 0; }

smelt_status parse_attention(const ir_graph *g, const ir_node *n, void *params)
{
    (void)g;
    attention_params *p = params;
    p->has_scale = ir_attr_find(n, "scale") != NULL;
    p->scale = ir_attr_float(n, "scale", 1.0f);
    p->softcap = ir_attr_float(n, "softcap", 0.0f);
    int64_t mode = ir_attr_int(n, "qk_matmul_output_mode", 0);
    if (mode < 0 || mode > 3) return ir_node_fail(n, SMELT_ERR_MODEL, "qk_matmul_output_mode %lld must be 0..3", (long long)mode);
    p->qk_mode = (int)mode;
    p->is_causal = ir_attr_int(n, "is_causal", 0) != 0;
    p->q_num_heads = ir_attr_int(n, "q_num_heads", 0);
    p->kv_num_heads = ir_attr_int(n, "kv_num_heads", 0);
    p->num_heads = ir_attr_int(n, "num_heads", 0);
    p->rotary_embedding_dim = ir_attr_int(n, "rotary_embedding_dim", 0);
    p->interleaved = ir_attr_int(n, "interleaved", 0) != 0;
    return SMELT_OK;
}

/* n's attention_params (ir_node_params_get). */
static smelt_status attention_params_of(const ir_graph *g, const ir_node *n, attention_params *scratch,
                                        const attention_params **p)
{
    const void *v;
    TRY(ir_node_params_get(g, n, scratch, &v));
    *p = v;
    return SMELT_OK;
}

smelt_status lower_Attention(lower_ctx *c)
{
    att_job j = {.dt = ir_in(c->g, c->n, 0)->dtype};
    TRY(attention_geom_get(c->g, c->n, &j.a));
    attention_params scratch;
    const attention_params *p;
    TRY(attention_params_of(c->g, c->n, &scratch, &p));
    j.scale = p->has_scale ? p->scale : 1.0 / sqrt((double)j.a.d);
    j.softcap = p->softcap;
    j.mode = p->qk_mode;
    j.causal = p->is_causal;
    j.qk_out = has_out(c, 3);
    for (int o = 1; o <= 2; o++) {
        if (!has_out(c, o)) continue;
        present_job p = {&j, o == 2};
        const ir_shape *ps = &c->g->tensors[c->n->out[o]].shape;
        lower_parallel_for(c, ps, 1, present_body, &p);
        if (!c->k) return ir_node_fail(c->n, SMELT_ERR_NOMEM, "out of memory");
    }
    if (j.a.batch * j.a.hq * j.a.s == 0) return SMELT_OK;
    if (j.a.t == 0) return ir_node_fail(c->n, SMELT_ERR_UNSUPPORTED, "attention over an empty key sequence");
    j.scratch = lower_scratch(c, j.dt, j.a.batch * j.a.hq * j.a.s * j.a.t);
    if (j.scratch < 0) return ir_node_fail(c->n, SMELT_ERR_NOMEM, "out of memory");
    ir_shape rows = {.rank = 3, .dim = {j.a.batch, j.a.hq, j.a.s}};
    lower_parallel_for(c, &rows, j.a.t * (j.a.d + j.a.dv + 2), att_body, &j);
    return c->k ? SMELT_OK : ir_node_fail(c->n, SMELT_ERR_NOMEM, "out of memory");
}

/* RotaryEmbedding: each rotated pair (x1, x2) of a head becomes
 * (cos x1 - sin x2, sin x1 + cos x2); dims past rotary_embedding_dim pass through. */
kir_val elem_RotaryEmbedding(lower_ctx *c, int out, const kir_val *idx)
{
    (void)out;
    kir_kernel *K = c->k;
    const ir_tensor *x = ir_in(c->g, c->n, 0), *cs = ir_in(c->g, c->n, 1), *pos = ir_in(c->g, c->n, 3);
    int r = x->shape.rank;
    attention_params scratch;
    const attention_params *p;
    if (attention_params_of(c->g, c->n, &scratch, &p) != SMELT_OK) return 0; /* shape inference parsed them */
    int64_t d_head = r == 4 ? x->shape.dim[3] : x->shape.dim[2] / p->num_heads; /* > 0 for 3-D X: the shape rule */
    int64_t rd = p->rotary_embedding_dim;
    if (rd == 0) rd = d_head;
    int64_t half = rd / 2;
    bool inter = p->interleaved;
    kir_val b = idx[0], s = r == 4 ? idx[2] : idx[1], d, hoff;
    if (r == 4) {
        d = idx[3];
        hoff = idx_c(K, 0);
    } else {
        d = bin(K, KIR_MOD, idx[2], idx_c(K, d_head));
        hoff = bin(K, KIR_SUB, idx[2], d);
    }
    kir_val jj, i1, i2, second;
    if (inter) {
        jj = bin(K, KIR_MIN, bin(K, KIR_DIV, d, idx_c(K, 2)), idx_c(K, half - 1));
        i1 = kir_mul(K, jj, idx_c(K, 2));
        i2 = kir_add(K, i1, idx_c(K, 1));
        second = bin(K, KIR_EQ, bin(K, KIR_MOD, d, idx_c(K, 2)), idx_c(K, 1));
    } else {
        jj = bin(K, KIR_MOD, d, idx_c(K, half));
        i1 = jj;
        i2 = kir_add(K, jj, idx_c(K, half));
        second = bin(K, KIR_GE, d, idx_c(K, half));
    }
    kir_val xi[IR_MAX_RANK];
    for (int k = 0; k < r; k++) xi[k] = idx[k];
    xi[r - 1] = kir_add(K, hoff, i1);
    kir_val x1 = lower_load(c, 0, xi);
    xi[r - 1] = kir_add(K, hoff, i2);
    kir_val x2 = lower_load(c, 0, xi);
    kir_val ci[3];
    if (pos) {
        kir_val p = kir_cast(K, SMELT_I64, lower_load(c, 3, (kir_val[]){b, s}));
        ci[0] = lower_clamp(K, p, cs->shape.dim[0]);
        ci[1] = jj;
    } else {
        ci[0] = b;
        ci[1] = s;
        ci[2] = jj;
    }
    kir_val co = lower_load(c, 1, ci), si = lower_load(c, 2, ci);
    kir_val real = bin(K, KIR_SUB, bin(K, KIR_MUL, co, x1), bin(K, KIR_MUL, si, x2));
    kir_val imag = bin(K, KIR_ADD, bin(K, KIR_MUL, si, x1), bin(K, KIR_MUL, co, x2));
    kir_val rot = kir_select(K, second, imag, real);
    if (rd == d_head) return rot;
    return kir_select(K, bin(K, KIR_LT, d, idx_c(K, rd)), rot, lower_load(c, 0, idx));
}

/* ---- Attention and RotaryEmbedding -------------------------------------- */

smelt_status attention_geom_get(const ir_graph *g, const ir_node *n, attention_geom *a)
{
    const ir_tensor *q = ir_in(g, n, 0), *k = ir_in(g, n, 1), *v = ir_in(g, n, 2);
    const ir_tensor *pk = ir_in(g, n, 4), *pv = ir_in(g, n, 5);
    char b1[160], b2[160], b3[160];
    int r = q->shape.rank;
    if ((r != 3 && r != 4) || k->shape.rank != r || v->shape.rank != r)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "Q %s, K %s and V %s must all be 3-D or all 4-D", infer_shp(&q->shape, b1),
                            infer_shp(&k->shape, b2), infer_shp(&v->shape, b3));
    memset(a, 0, sizeof *a);
    a->rank3 = r == 3;
    a->batch = q->shape.dim[0];
    if (a->rank3) {
        attention_params scratch;
        const attention_params *p;
        TRY(attention_params_of(g, n, &scratch, &p));
        a->hq = p->q_num_heads;
        a->hk = p->kv_num_heads;
        if (a->hq <= 0 || a->hk <= 0)
            return ir_node_fail(n, SMELT_ERR_MODEL, "3-D inputs need positive q_num_heads and kv_num_heads");
        if (q->shape.dim[2] % a->hq || k->shape.dim[2] % a->hk || v->shape.dim[2] % a->hk)
            return ir_node_fail(n, SMELT_ERR_SHAPE, "hidden sizes of Q %s, K %s, V %s must divide by the head counts",
                                infer_shp(&q->shape, b1), infer_shp(&k->shape, b2), infer_shp(&v->shape, b3));
        a->s = q->shape.dim[1];
        a->d = q->shape.dim[2] / a->hq;
        a->l = k->shape.dim[1];
        a->dk = k->shape.dim[2] / a->hk;
        a->dv = v->shape.dim[2] / a->hk;
        a->lv = v->shape.dim[1];
    } else {
        a->hq = q->shape.dim[1];
        a->hk = k->shape.dim[1];
        a->s = q->shape.dim[2];
        a->d = q->shape.dim[3];
        a->l = k->shape.dim[2];
        a->dk = k->shape.dim[3];
        a->dv = v->shape.dim[3];
        a->lv = v->shape.dim[2];
        if (v->shape.dim[1] != a->hk)
            return ir_node_fail(n, SMELT_ERR_SHAPE, "K %s and V %s must have the same number of heads",
                                infer_shp(&k->shape, b1), infer_shp(&v->shape, b2));
    }
    if (k->shape.dim[0] != a->batch || v->shape.dim[0] != a->batch || a->dk != a->d || a->lv != a->l ||
        a->hk <= 0 || a->hq % a->hk)
        return ir_node_fail(n, SMELT_ERR_SHAPE,
                            "Q %s, K %s, V %s: batch, head size of Q and K, K/V length must agree and q heads divide by kv heads",
                            infer_shp(&q->shape, b1), infer_shp(&k->shape, b2), infer_shp(&v->shape, b3));
    if ((pk != NULL) != (pv != NULL))
        return ir_node_fail(n, SMELT_ERR_MODEL, "past_key and past_value must be given together");
    if (pk) {
        ir_shape ek = {.rank = 4, .dim = {a->batch, a->hk, pk->shape.dim[2], a->d}};
        ir_shape ev = {.rank = 4, .dim = {a->batch, a->hk, pk->shape.dim[2], a->dv}};
        if (pk->shape.rank != 4 || !ir_shape_eq(&pk->shape, &ek) || !ir_shape_eq(&pv->shape, &ev))
            return ir_node_fail(n, SMELT_ERR_SHAPE, "past_key %s / past_value %s must be [B, kv_heads, P, head_size]",
                                infer_shp(&pk->shape, b1), infer_shp(&pv->shape, b2));
        a->p = pk->shape.dim[2];
    }
    a->t = a->p + a->l;
    return SMELT_OK;
}

smelt_status infer_Attention(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    static const char *const names[] = {"Q", "K", "V"};
    for (int i = 0; i < 3; i++) TRY(infer_need_input(g, n, i, names[i]));
    TRY(infer_check_dtypes(g, n));
    const ir_tensor *q = ir_in(g, n, 0), *m = ir_in(g, n, 3), *np = ir_in(g, n, 6);
    TRY(infer_need_float(n, q));
    TRY(infer_same_dtype(g, n, 0, 2));
    TRY(infer_same_dtype(g, n, 4, 5));
    if (ir_in(g, n, 4) && ir_in(g, n, 4)->dtype != q->dtype)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "past_key must have Q's dtype");
    attention_geom a;
    TRY(attention_geom_get(g, n, &a));
    char b1[160];
    if (m) {
        if (m->dtype != SMELT_BOOL && m->dtype != q->dtype)
            return ir_node_fail(n, SMELT_ERR_SHAPE, "attn_mask must be bool or Q's dtype");
        ir_shape full = {.rank = 4, .dim = {a.batch, a.hq, a.s, m->shape.rank ? m->shape.dim[m->shape.rank - 1] : 1}}, bc;
        if (m->shape.rank < 1 || m->shape.rank > 4 || full.dim[3] > a.t || !infer_broadcast2(&full, &m->shape, &bc) ||
            !ir_shape_eq(&bc, &full))
            return ir_node_fail(n, SMELT_ERR_SHAPE, "attn_mask %s must broadcast to [B, q_heads, S, <=T] = [%lld,%lld,%lld,%lld]",
                                infer_shp(&m->shape, b1), (long long)a.batch, (long long)a.hq, (long long)a.s,
                                (long long)a.t);
    }
    if (np && (np->dtype != SMELT_I64 || np->shape.rank != 1 || np->shape.dim[0] != a.batch))
        return ir_node_fail(n, SMELT_ERR_SHAPE, "nonpad_kv_seqlen must be int64 [B]");
    ir_shape y = a.rank3 ? (ir_shape){.rank = 3, .dim = {a.batch, a.s, a.hq * a.dv}}
                         : (ir_shape){.rank = 4, .dim = {a.batch, a.hq, a.s, a.dv}};
    ir_shape pk = {.rank = 4, .dim = {a.batch, a.hk, a.t, a.d}}, pv = {.rank = 4, .dim = {a.batch, a.hk, a.t, a.dv}};
    ir_shape qk = {.rank = 4, .dim = {a.batch, a.hq, a.s, a.t}};
    TRY(infer_set_out(g, n, 0, q->dtype, &y));
    TRY(infer_set_out(g, n, 1, q->dtype, &pk));
    TRY(infer_set_out(g, n, 2, q->dtype, &pv));
    return infer_set_out(g, n, 3, q->dtype, &qk);
}

smelt_status infer_RotaryEmbedding(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    static const char *const names[] = {"X", "cos_cache", "sin_cache"};
    for (int i = 0; i < 3; i++) TRY(infer_need_input(g, n, i, names[i]));
    TRY(infer_check_dtypes(g, n));
    const ir_tensor *x = ir_in(g, n, 0), *cs = ir_in(g, n, 1), *sn = ir_in(g, n, 2), *pos = ir_in(g, n, 3);
    TRY(infer_need_float(n, x));
    TRY(infer_same_dtype(g, n, 0, 2));
    char b1[160], b2[160];
    attention_params scratch;
    const attention_params *p;
    TRY(attention_params_of(g, n, &scratch, &p));
    int r = x->shape.rank;
    int64_t heads = p->num_heads, b, s, d;
    if (r == 4) {
        b = x->shape.dim[0];
        s = x->shape.dim[2];
        d = x->shape.dim[3];
    } else if (r == 3) {
        if (heads <= 0 || x->shape.dim[2] % heads)
            return ir_node_fail(n, SMELT_ERR_MODEL, "3-D X %s needs num_heads dividing its hidden size",
                                infer_shp(&x->shape, b1));
        b = x->shape.dim[0];
        s = x->shape.dim[1];
        d = x->shape.dim[2] / heads;
    } else {
        return ir_node_fail(n, SMELT_ERR_SHAPE, "X %s must be 3-D or 4-D", infer_shp(&x->shape, b1));
    }
    int64_t rd = p->rotary_embedding_dim;
    if (rd == 0) rd = d;
    if (rd < 2 || rd > d || rd % 2)
        return ir_node_fail(n, SMELT_ERR_MODEL, "rotary_embedding_dim %lld must be even and in [2, %lld]", (long long)rd,
                            (long long)d);
    if (!ir_shape_eq(&cs->shape, &sn->shape))
        return ir_node_fail(n, SMELT_ERR_SHAPE, "cos_cache %s and sin_cache %s must have one shape",
                            infer_shp(&cs->shape, b1), infer_shp(&sn->shape, b2));
    bool ok;
    if (pos) {
        TRY(infer_need_int(n, pos));
        ok = pos->shape.rank == 2 && pos->shape.dim[0] == b && pos->shape.dim[1] == s && cs->shape.rank == 2 &&
             cs->shape.dim[1] == rd / 2 && cs->shape.dim[0] > 0;
    } else {
        ok = cs->shape.rank == 3 && cs->shape.dim[0] == b && cs->shape.dim[1] == s && cs->shape.dim[2] == rd / 2;
    }
    if (!ok)
        return ir_node_fail(n, SMELT_ERR_SHAPE,
                            "cos_cache %s must be [max_pos, %lld] with position_ids [B, S], or [B, S, %lld] without",
                            infer_shp(&cs->shape, b1), (long long)rd / 2, (long long)rd / 2);
    return infer_set_out(g, n, 0, x->dtype, &x->shape);
}
