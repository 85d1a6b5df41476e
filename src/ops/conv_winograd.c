/*
 * conv_winograd.c — WinogradInput and WinogradOutput (ops/conv_winograd.h):
 * shape rules and lowerings.
 *
 * requires: nodes written by graph/winograd.c (attributes m, pads, out_hw,
 *           shape), shapes set by these rules.
 * guarantees: one kernel per node over [N, TH, TW, channels]; each element
 *             does one tile of one channel: T*T loads, the two 1-D transforms
 *             as sums with the constant coefficients (zero terms skipped),
 *             T*T (input) or up to m*m (output) stores.
 */
#include <stdlib.h>

#include "lower/lower.h"
#include "ops/conv_winograd.h"
#include "ops/shape.h"

#define WINO_T_MAX 6

/* B^T (T x T) and A^T (m x T) of F(m x m, 3 x 3) for the interpolation points
 * 0, -1, 1 (m = 2) and 0, +-1, +-2 (m = 4), and infinity. */
static const double bt4[6][6] = {
    {4, 0, -5, 0, 1, 0}, {0, -4, -4, 1, 1, 0}, {0, 4, -4, -1, 1, 0},
    {0, -2, -1, 2, 1, 0}, {0, 2, -1, -2, 1, 0}, {0, 4, 0, -5, 0, 1},
};
static const double at4[4][6] = {
    {1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 0}, {0, 1, -1, 8, -8, 1},
};
static const double bt2[4][4] = {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}};
static const double at2[2][4] = {{1, 1, 1, 0}, {0, 1, -1, -1}};

static double bt(int m, int r, int col) { return m == 4 ? bt4[r][col] : bt2[r][col]; }
static double at(int m, int r, int col) { return m == 4 ? at4[r][col] : at2[r][col]; }

typedef struct wino_geom {
    int m, t;                 /* output tile edge, input tile edge (m + 2) */
    int64_t pad[2], out[2];   /* top and left pads; OH, OW */
    int64_t tiles_h, tiles_w; /* TH, TW */
} wino_geom;

static smelt_status wino_geom_get(const ir_node *n, const int64_t *hw_attr, wino_geom *w)
{
    w->m = (int)ir_attr_int(n, "m", 0);
    if (w->m != 2 && w->m != 4) return ir_node_fail(n, SMELT_ERR_MODEL, "attribute m is %d, must be 2 or 4", w->m);
    w->t = w->m + 2;
    w->out[0] = hw_attr[0], w->out[1] = hw_attr[1];
    if (w->out[0] < 1 || w->out[1] < 1)
        return ir_node_fail(n, SMELT_ERR_MODEL, "output size %lldx%lld must be positive", (long long)w->out[0],
                            (long long)w->out[1]);
    w->tiles_h = (w->out[0] + w->m - 1) / w->m;
    w->tiles_w = (w->out[1] + w->m - 1) / w->m;
    return SMELT_OK;
}

/* The ints attribute `name` of exactly `count` values, each at least `min`. */
static smelt_status ints_exact(const ir_node *n, const char *name, int count, int64_t min, const int64_t **v)
{
    if (ir_attr_ints(n, name, v) != count)
        return ir_node_fail(n, SMELT_ERR_MODEL, "attribute %s must list %d values", name, count);
    for (int i = 0; i < count; i++)
        if ((*v)[i] < min || (*v)[i] > SMELT_MAX_ELEMS)
            return ir_node_fail(n, SMELT_ERR_MODEL, "attribute %s value %lld is out of range", name, (long long)(*v)[i]);
    return SMELT_OK;
}

static smelt_status input_geom(const ir_node *n, wino_geom *w)
{
    const int64_t *pads, *hw;
    TRY(ints_exact(n, "pads", 2, 0, &pads));
    TRY(ints_exact(n, "out_hw", 2, 1, &hw));
    TRY(wino_geom_get(n, hw, w));
    w->pad[0] = pads[0], w->pad[1] = pads[1];
    return SMELT_OK;
}

static smelt_status output_geom(const ir_node *n, wino_geom *w, const int64_t **shape)
{
    TRY(ints_exact(n, "shape", 4, 1, shape));
    TRY(wino_geom_get(n, *shape + 2, w));
    w->pad[0] = w->pad[1] = 0;
    return SMELT_OK;
}

smelt_status infer_WinogradInput(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_need_input(g, n, 0, "X"));
    const ir_tensor *x = ir_in(g, n, 0);
    TRY(infer_need_dtype(n, x, "X", DT(F32)));
    char s[160];
    if (x->shape.rank != 4) return ir_node_fail(n, SMELT_ERR_SHAPE, "X %s must have rank 4", infer_shp(&x->shape, s));
    wino_geom w;
    TRY(input_geom(n, &w));
    if (n->n_out != w.t * w.t) return ir_node_fail(n, SMELT_ERR_MODEL, "F(%d,3) needs %d outputs, not %d", w.m, w.t * w.t, n->n_out);
    ir_shape out = {.rank = 2, .dim = {x->shape.dim[1], x->shape.dim[0] * w.tiles_h * w.tiles_w}};
    for (int o = 0; o < n->n_out; o++) infer_put_out(g, n, o, x->dtype, &out);
    return SMELT_OK;
}

smelt_status infer_WinogradOutput(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    wino_geom w;
    const int64_t *shape;
    TRY(output_geom(n, &w, &shape));
    int p = w.t * w.t;
    if (n->n_in != p && n->n_in != p + 1)
        return ir_node_fail(n, SMELT_ERR_MODEL, "F(%d,3) takes %d products and an optional bias, not %d inputs", w.m, p, n->n_in);
    int64_t tiles = shape[0] * w.tiles_h * w.tiles_w;
    char s[160];
    for (int i = 0; i < p; i++) {
        TRY(infer_need_input(g, n, i, "M"));
        const ir_tensor *m = ir_in(g, n, i);
        TRY(infer_need_dtype(n, m, "M", DT(F32)));
        if (m->shape.rank != 2 || m->shape.dim[0] != tiles || m->shape.dim[1] != shape[1])
            return ir_node_fail(n, SMELT_ERR_SHAPE, "product %d %s must be [%lld, %lld]", i, infer_shp(&m->shape, s),
                                (long long)tiles, (long long)shape[1]);
    }
    const ir_tensor *b = ir_in(g, n, p);
    if (b && (b->dtype != SMELT_F32 || b->shape.rank != 1 || b->shape.dim[0] != shape[1]))
        return ir_node_fail(n, SMELT_ERR_SHAPE, "bias %s must be float32 [%lld]", infer_shp(&b->shape, s), (long long)shape[1]);
    ir_shape out = {.rank = 4, .dim = {shape[0], shape[1], shape[2], shape[3]}};
    infer_put_out(g, n, 0, SMELT_F32, &out);
    return SMELT_OK;
}

/* sum_j coef[j] * v[j] over the nonzero coefficients (a +-1 is an add or a
 * subtraction; all coefficients zero cannot happen for B^T and A^T rows). */
static kir_val combine(kir_kernel *K, const kir_val *v, const double *coef, int len)
{
    kir_val s = 0;
    for (int j = 0; j < len; j++) {
        double cf = coef[j];
        if (cf == 0) continue;
        kir_val term = v[j];
        if (cf != 1 && cf != -1) term = kir_mul(K, v[j], kir_const_f(K, SMELT_F32, cf < 0 && s ? -cf : cf));
        if (!s) s = cf == -1 ? kir_unary(K, KIR_NEG, term) : term;
        else s = kir_binary(K, cf < 0 ? KIR_SUB : KIR_ADD, s, term);
    }
    return s;
}

/* Row r of B^T or A^T as a coefficient array. */
static void coef_row(int m, bool out, int r, double *coef)
{
    for (int j = 0; j < m + 2; j++) coef[j] = out ? at(m, r, j) : bt(m, r, j);
}

/* (n * TH + th) * TW + tw */
static kir_val tile_index(kir_kernel *K, const wino_geom *w, kir_val n, kir_val th, kir_val tw)
{
    kir_val nt = kir_add(K, kir_mul(K, n, kir_idx(K, w->tiles_h)), th);
    return kir_add(K, kir_mul(K, nt, kir_idx(K, w->tiles_w)), tw);
}

typedef struct wino_row {
    kir_val y_ok[WINO_T_MAX], y_at[WINO_T_MAX]; /* per patch row: inside X, and the clamped row */
} wino_row;

/* Tile tw of the row of tiles idx = (n, c, th): V_p[c][tile] for every p.
 * Columns are checked only where `guard_x` (edge tiles); rows always (the
 * checks do not depend on tw: the loop keeps them as invariant masks). */
static void input_tile(lower_ctx *c, const wino_geom *w, const kir_val *idx, const wino_row *row, kir_val tw, bool guard_x)
{
    kir_kernel *K = c->k;
    int64_t width = ir_in(c->g, c->n, 0)->shape.dim[3];
    int t = w->t;
    kir_val zero = kir_idx(K, 0), fzero = kir_const_f(K, SMELT_F32, 0);
    kir_val x0 = kir_binary(K, KIR_SUB, kir_mul(K, tw, kir_idx(K, w->m)), kir_idx(K, w->pad[1]));
    kir_val d[WINO_T_MAX][WINO_T_MAX], ok_x[WINO_T_MAX], xat[WINO_T_MAX];
    for (int j = 0; j < t; j++) {
        kir_val x = kir_add(K, x0, kir_idx(K, j));
        ok_x[j] = guard_x ? kir_binary(K, KIR_AND, kir_binary(K, KIR_GE, x, zero), kir_binary(K, KIR_LT, x, kir_idx(K, width))) : 0;
        xat[j] = guard_x ? lower_clamp(K, x, width) : x;
    }
    for (int i = 0; i < t; i++)
        for (int j = 0; j < t; j++) {
            kir_val ok = guard_x ? kir_binary(K, KIR_AND, row->y_ok[i], ok_x[j]) : row->y_ok[i];
            d[i][j] = kir_select(K, ok, lower_load(c, 0, (kir_val[4]){idx[0], idx[1], row->y_at[i], xat[j]}), fzero);
        }
    /* rows: r[i][b] = sum_j d[i][j] B^T[b][j]; then V[a][b] = sum_i B^T[a][i] r[i][b] */
    kir_val r[WINO_T_MAX][WINO_T_MAX], col[WINO_T_MAX];
    double coef[WINO_T_MAX];
    for (int b = 0; b < t; b++) {
        coef_row(w->m, false, b, coef);
        for (int i = 0; i < t; i++) r[i][b] = combine(K, d[i], coef, t);
    }
    kir_val tile = tile_index(K, w, idx[0], idx[2], tw);
    for (int a = 0; a < t; a++) {
        coef_row(w->m, false, a, coef);
        for (int b = 0; b < t; b++) {
            for (int i = 0; i < t; i++) col[i] = r[i][b];
            lower_store(c, a * t + b, (kir_val[2]){idx[1], tile}, combine(K, col, coef, t));
        }
    }
}

/* idx: n, c, th, 0: one row of tiles of one channel, read from T rows of X
 * and stored unit-stride into each V_p. The tiles whose columns all lie
 * inside X (known when compiling) run in a loop without column checks, the
 * edge tiles before and after it with them. */
static void input_body(lower_ctx *c, const kir_val *idx, void *user)
{
    const wino_geom *w = user;
    kir_kernel *K = c->k;
    const ir_shape *xs = &ir_in(c->g, c->n, 0)->shape;
    kir_val zero = kir_idx(K, 0), one = kir_idx(K, 1);
    wino_row row;
    kir_val y0 = kir_binary(K, KIR_SUB, kir_mul(K, idx[2], kir_idx(K, w->m)), kir_idx(K, w->pad[0]));
    for (int i = 0; i < w->t; i++) {
        kir_val y = kir_add(K, y0, kir_idx(K, i));
        row.y_ok[i] = kir_binary(K, KIR_AND, kir_binary(K, KIR_GE, y, zero), kir_binary(K, KIR_LT, y, kir_idx(K, xs->dim[2])));
        row.y_at[i] = lower_clamp(K, y, xs->dim[2]);
    }
    /* interior: tw*m - pad >= 0 and tw*m - pad + T <= W */
    int64_t lo = (w->pad[1] + w->m - 1) / w->m, hi = xs->dim[3] - w->t + w->pad[1] >= 0 ? (xs->dim[3] - w->t + w->pad[1]) / w->m + 1 : 0;
    if (hi > w->tiles_w) hi = w->tiles_w;
    if (lo > hi) lo = hi;
    int64_t bounds[4] = {0, lo, hi, w->tiles_w};
    for (int part = 0; part < 3; part++) {
        if (bounds[part] >= bounds[part + 1]) continue;
        kir_val tw = kir_loop_begin(K, kir_idx(K, bounds[part]), kir_idx(K, bounds[part + 1]), one);
        input_tile(c, w, idx, &row, tw, part != 1);
        kir_loop_end(K);
    }
}

smelt_status lower_WinogradInput(lower_ctx *c)
{
    wino_geom w;
    TRY(input_geom(c->n, &w));
    const ir_shape *xs = &ir_in(c->g, c->n, 0)->shape;
    ir_shape space = {.rank = 4, .dim = {xs->dim[0], xs->dim[1], w.tiles_h, 1}};
    if (ir_shape_numel(&space) == 0) return SMELT_OK;
    lower_parallel_for(c, &space, 8 * w.t * w.t * w.tiles_w, input_body, &w);
    return c->k ? SMELT_OK : ir_node_fail(c->n, SMELT_ERR_NOMEM, "out of memory");
}

/* idx: n, th, tw, k. */
static void output_body(lower_ctx *c, const kir_val *idx, void *user)
{
    const wino_geom *w = user;
    kir_kernel *K = c->k;
    int t = w->t, m = w->m, p = t * t;
    kir_val tile = tile_index(K, w, idx[0], idx[1], idx[2]);
    kir_val mv[WINO_T_MAX][WINO_T_MAX];
    for (int a = 0; a < t; a++)
        for (int b = 0; b < t; b++) mv[a][b] = lower_load(c, a * t + b, (kir_val[2]){tile, idx[3]});
    /* rows: r[a][j] = sum_b M[a][b] A^T[j][b]; then Y[i][j] = sum_a A^T[i][a] r[a][j] */
    kir_val r[WINO_T_MAX][WINO_T_MAX], col[WINO_T_MAX];
    double coef[WINO_T_MAX];
    for (int j = 0; j < m; j++) {
        coef_row(m, true, j, coef);
        for (int a = 0; a < t; a++) r[a][j] = combine(K, mv[a], coef, t);
    }
    kir_val bias = c->n->n_in > p && c->n->in[p] >= 0 ? lower_load(c, p, &idx[3]) : 0;
    kir_val y0 = kir_mul(K, idx[1], kir_idx(K, m)), x0 = kir_mul(K, idx[2], kir_idx(K, m));
    for (int i = 0; i < m; i++) {
        coef_row(m, true, i, coef);
        kir_val y = kir_add(K, y0, kir_idx(K, i));
        /* the last tile row or column may be partial: guard only the offsets that can fall past the edge */
        bool guard_y = i >= w->out[0] % m && w->out[0] % m;
        if (guard_y) kir_if_begin(K, kir_binary(K, KIR_LT, y, kir_idx(K, w->out[0])));
        for (int j = 0; j < m; j++) {
            for (int a = 0; a < t; a++) col[a] = r[a][j];
            kir_val v = combine(K, col, coef, t);
            if (bias) v = kir_add(K, v, bias);
            kir_val x = kir_add(K, x0, kir_idx(K, j));
            bool guard_x = j >= w->out[1] % m && w->out[1] % m;
            if (guard_x) kir_if_begin(K, kir_binary(K, KIR_LT, x, kir_idx(K, w->out[1])));
            lower_store(c, 0, (kir_val[4]){idx[0], idx[3], y, x}, v);
            if (guard_x) kir_if_end(K);
        }
        if (guard_y) kir_if_end(K);
    }
}

smelt_status lower_WinogradOutput(lower_ctx *c)
{
    wino_geom w;
    const int64_t *shape;
    TRY(output_geom(c->n, &w, &shape));
    ir_shape space = {.rank = 4, .dim = {shape[0], w.tiles_h, w.tiles_w, shape[1]}};
    if (ir_shape_numel(&space) == 0) return SMELT_OK;
    lower_parallel_for(c, &space, 8 * w.t * w.t, output_body, &w);
    return c->k ? SMELT_OK : ir_node_fail(c->n, SMELT_ERR_NOMEM, "out of memory");
}
