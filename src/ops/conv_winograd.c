/*
 * conv_winograd.c — WinogradInput, WinogradGemm and WinogradOutput
 * (ops/conv_winograd.h): shape rules and lowerings.
 *
 * requires: nodes written by graph/winograd.c (attributes m, pads, out_hw,
 *           shape), shapes set by these rules; a WinogradGemm's panels made
 *           with the C target's NR (mm_tiles_for).
 * guarantees: one kernel per node. The transforms run over [N, C, TH] (input;
 *             on the C target [N, C, TH / R], R rows of tiles an element) and
 *             [N, TH, TW, K] (output); each tile of each channel costs T*T
 *             loads (input: T per column on the C target), the two 1-D
 *             transforms as sums with the constant coefficients (zero terms
 *             skipped), T*T (input) or up to m*m (output) stores. The GEMM is the packed GEMM's kernel with
 *             the products as its batch (C target), else one element of M per
 *             element of a plain loop nest.
 */
#include <stdlib.h>

#include "lower/lower.h"
#include "ops/conv_winograd.h"
#include "ops/gemm_packed.h"
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
    ir_shape out = {.rank = 3, .dim = {w.t * w.t, x->shape.dim[1], x->shape.dim[0] * w.tiles_h * w.tiles_w}};
    infer_put_out(g, n, 0, x->dtype, &out);
    return SMELT_OK;
}

smelt_status infer_WinogradOutput(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    wino_geom w;
    const int64_t *shape;
    TRY(output_geom(n, &w, &shape));
    int p = w.t * w.t;
    int64_t tiles = shape[0] * w.tiles_h * w.tiles_w;
    char s[160];
    TRY(infer_need_input(g, n, 0, "M"));
    const ir_tensor *m = ir_in(g, n, 0);
    TRY(infer_need_dtype(n, m, "M", DT(F32)));
    if (m->shape.rank != 3 || m->shape.dim[0] != p || m->shape.dim[1] != tiles || m->shape.dim[2] != shape[1])
        return ir_node_fail(n, SMELT_ERR_SHAPE, "F(%d,3) products M %s must be [%d, %lld, %lld]", w.m,
                            infer_shp(&m->shape, s), p, (long long)tiles, (long long)shape[1]);
    const ir_tensor *b = ir_in(g, n, 1);
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
            lower_store(c, 0, (kir_val[3]){kir_idx(K, a * t + b), idx[1], tile}, combine(K, col, coef, t));
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

/* Rows of tiles a C-target input element does: the fewest that divide TH and
 * give at least WINO_ROW_TILES tiles (else all TH), so the row transform's
 * loop over them is vectors long (a 28x28 output has 7 tiles a row). */
#define WINO_ROW_TILES 32
static int64_t rows_per_elem(const wino_geom *w)
{
    for (int64_t r = 1; r < w->tiles_h; r++)
        if (w->tiles_h % r == 0 && r * w->tiles_w >= WINO_ROW_TILES) return r;
    return w->tiles_h;
}

/* The C target's form of input_body (one thread a workgroup, so workgroup
 * memory is the element's own), in loops that each run unit-stride and
 * vectorize: where the per-tile form loads each tile's T x T patch at a
 * stride of m columns (no vectors: 28-50% of a conv's time in the profile,
 * the GEMM the rest), this takes, for each of the element's R rows of tiles,
 * the column transform of its T input rows for every input column x the row
 * reads (columns outside X read as 0, checked only in the edge loops):
 * s[a][x] = sum_i B^T[a][i] d[i][x]; then copies the columns each tile reads
 * into per-tile order, lo[a][j][r*TW + tw] = s[a][tw*m + j] for j < m and
 * hi[a][j - m][..] = s[a][(tw+1)*m + j - m] for the last two; then runs the
 * row transform over the element's R*TW tiles (contiguous in V) as one loop,
 * V[a*T + b][c][tile] = sum_j s[a][tw*m + j] B^T[b][j], unit-stride into each
 * of the T*T products. idx: n, c, block of R rows of tiles, 0. */
static void input_body_rows(lower_ctx *c, const kir_val *idx, void *user)
{
    const wino_geom *w = user;
    kir_kernel *K = c->k;
    const ir_shape *xs = &ir_in(c->g, c->n, 0)->shape;
    int t = w->t, m = w->m;
    int64_t width = xs->dim[3], tw_n = w->tiles_w, xw = (tw_n + 1) * m, rows = rows_per_elem(w), rt = rows * tw_n;
    kir_val zero = kir_idx(K, 0), one = kir_idx(K, 1), fzero = kir_const_f(K, SMELT_F32, 0);
    int s1 = kir_smem_add(K, SMELT_F32, t * xw), lo_buf = kir_smem_add(K, SMELT_F32, t * m * rt),
        hi_buf = kir_smem_add(K, SMELT_F32, t * 2 * rt);
    kir_val th0 = kir_mul(K, idx[2], kir_idx(K, rows));
    kir_val r = kir_loop_begin(K, zero, kir_idx(K, rows), one);
    wino_row row;
    kir_val y0 = kir_binary(K, KIR_SUB, kir_mul(K, kir_add(K, th0, r), kir_idx(K, m)), kir_idx(K, w->pad[0]));
    for (int i = 0; i < t; i++) {
        kir_val y = kir_add(K, y0, kir_idx(K, i));
        row.y_ok[i] = kir_binary(K, KIR_AND, kir_binary(K, KIR_GE, y, zero), kir_binary(K, KIR_LT, y, kir_idx(K, xs->dim[2])));
        row.y_at[i] = lower_clamp(K, y, xs->dim[2]);
    }
    /* columns: x - pad inside X for x in [lo, hi) */
    int64_t lo = w->pad[1] < xw ? w->pad[1] : xw, hi = w->pad[1] + width < xw ? w->pad[1] + width : xw;
    int64_t bounds[4] = {0, lo, hi, xw};
    double coef[WINO_T_MAX];
    for (int part = 0; part < 3; part++) {
        if (bounds[part] >= bounds[part + 1]) continue;
        kir_val x = kir_loop_begin(K, kir_idx(K, bounds[part]), kir_idx(K, bounds[part + 1]), one);
        kir_val xi = kir_binary(K, KIR_SUB, x, kir_idx(K, w->pad[1]));
        kir_val ok_x = part != 1 ? kir_binary(K, KIR_AND, kir_binary(K, KIR_GE, xi, zero), kir_binary(K, KIR_LT, xi, kir_idx(K, width))) : 0;
        kir_val xat = part != 1 ? lower_clamp(K, xi, width) : xi;
        kir_val d[WINO_T_MAX];
        for (int i = 0; i < t; i++) {
            kir_val ok = part != 1 ? kir_binary(K, KIR_AND, row.y_ok[i], ok_x) : row.y_ok[i];
            d[i] = kir_select(K, ok, lower_load(c, 0, (kir_val[4]){idx[0], idx[1], row.y_at[i], xat}), fzero);
        }
        for (int a = 0; a < t; a++) {
            coef_row(m, false, a, coef);
            kir_store(K, s1, kir_add(K, kir_idx(K, a * xw), x), combine(K, d, coef, t));
        }
        kir_loop_end(K);
    }
    /* lo[(a*m + j)*rt + r*TW + tw] = s[a][tw*m + j], hi[(a*2 + j - m)*rt + ..] = s[a][(tw+1)*m + j - m] */
    kir_val a = kir_loop_begin(K, zero, kir_idx(K, t), one);
    kir_val rbase = kir_mul(K, r, kir_idx(K, tw_n));
    for (int j = 0; j < t; j++) {
        int buf = j < m ? lo_buf : hi_buf;
        int64_t lanes = j < m ? m : 2, jj = j < m ? j : j - m;
        kir_val base = kir_add(K, kir_mul(K, kir_add(K, kir_mul(K, a, kir_idx(K, lanes)), kir_idx(K, jj)), kir_idx(K, rt)), rbase);
        kir_val src = kir_add(K, kir_mul(K, a, kir_idx(K, xw)), kir_idx(K, j));
        kir_val tw = kir_loop_begin(K, zero, kir_idx(K, tw_n), one);
        kir_store(K, buf, kir_add(K, base, tw), kir_load(K, s1, kir_add(K, src, kir_mul(K, tw, kir_idx(K, m)))));
        kir_loop_end(K);
    }
    kir_loop_end(K);
    kir_loop_end(K);
    /* the row transform over the block's tiles */
    kir_val f = kir_loop_begin(K, zero, kir_idx(K, rt), one);
    kir_val tile = kir_add(K, tile_index(K, w, idx[0], th0, zero), f);
    for (int ar = 0; ar < t; ar++) {
        kir_val sv[WINO_T_MAX];
        for (int j = 0; j < t; j++) {
            int64_t at = j < m ? (int64_t)(ar * m + j) * rt : (int64_t)(ar * 2 + j - m) * rt;
            sv[j] = kir_load(K, j < m ? lo_buf : hi_buf, kir_add(K, kir_idx(K, at), f));
        }
        for (int b = 0; b < t; b++) {
            coef_row(m, false, b, coef);
            lower_store(c, 0, (kir_val[3]){kir_idx(K, ar * t + b), idx[1], tile}, combine(K, sv, coef, t));
        }
    }
    kir_loop_end(K);
}

smelt_status lower_WinogradInput(lower_ctx *c)
{
    wino_geom w;
    TRY(input_geom(c->n, &w));
    const ir_shape *xs = &ir_in(c->g, c->n, 0)->shape;
    bool rows = c->target->wg_size == 1;
    int64_t per = rows ? rows_per_elem(&w) : 1;
    ir_shape space = {.rank = 4, .dim = {xs->dim[0], xs->dim[1], w.tiles_h / per, 1}};
    if (ir_shape_numel(&space) == 0) return SMELT_OK;
    lower_parallel_for(c, &space, 8 * w.t * w.t * w.tiles_w * per, rows ? input_body_rows : input_body, &w);
    return c->k ? SMELT_OK : ir_node_fail(c->n, SMELT_ERR_NOMEM, "out of memory");
}

/* idx: n, th, tw, k. */
static void output_body(lower_ctx *c, const kir_val *idx, void *user)
{
    const wino_geom *w = user;
    kir_kernel *K = c->k;
    int t = w->t, m = w->m;
    kir_val tile = tile_index(K, w, idx[0], idx[1], idx[2]);
    kir_val mv[WINO_T_MAX][WINO_T_MAX];
    for (int a = 0; a < t; a++)
        for (int b = 0; b < t; b++) mv[a][b] = lower_load(c, 0, (kir_val[3]){kir_idx(K, a * t + b), tile, idx[3]});
    /* rows: r[a][j] = sum_b M[a][b] A^T[j][b]; then Y[i][j] = sum_a A^T[i][a] r[a][j] */
    kir_val r[WINO_T_MAX][WINO_T_MAX], col[WINO_T_MAX];
    double coef[WINO_T_MAX];
    for (int j = 0; j < m; j++) {
        coef_row(m, true, j, coef);
        for (int a = 0; a < t; a++) r[a][j] = combine(K, mv[a], coef, t);
    }
    kir_val bias = c->n->n_in > 1 && c->n->in[1] >= 0 ? lower_load(c, 1, &idx[3]) : 0;
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

/* ---- the products: one batched GEMM ------------------------------------- */

/* V [P, C, tiles], U [P, C, K] as its logical shape (a row-major constant or
 * the panels of every product, ir.h IR_ENC_PANELS). */
smelt_status infer_WinogradGemm(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_need_input(g, n, 0, "V"));
    TRY(infer_need_input(g, n, 1, "U"));
    const ir_tensor *v = ir_in(g, n, 0), *u = ir_in(g, n, 1);
    TRY(infer_need_dtype(n, v, "V", DT(F32)));
    TRY(infer_need_dtype(n, u, "U", DT(F32)));
    ir_shape ul = ir_tensor_logical_shape(u);
    char s1[160], s2[160];
    if (v->shape.rank != 3 || (v->shape.dim[0] != 16 && v->shape.dim[0] != 36))
        return ir_node_fail(n, SMELT_ERR_SHAPE, "V %s must be [16 or 36 products, C, tiles]", infer_shp(&v->shape, s1));
    if (ul.rank != 3 || ul.dim[0] != v->shape.dim[0] || ul.dim[1] != v->shape.dim[1])
        return ir_node_fail(n, SMELT_ERR_SHAPE, "U %s must be [%lld, %lld, K] to multiply V %s", infer_shp(&ul, s1),
                            (long long)v->shape.dim[0], (long long)v->shape.dim[1], infer_shp(&v->shape, s2));
    if (u->enc.kind == IR_ENC_PANELS) {
        int64_t np = u->enc.nr > 0 ? (ul.dim[2] + u->enc.nr - 1) / u->enc.nr : 0;
        if (u->enc.k != ul.dim[1] || u->enc.n != ul.dim[2] || u->shape.rank != 3 || u->shape.dim[0] != ul.dim[0] * np ||
            u->shape.dim[1] != ul.dim[1] || u->shape.dim[2] != u->enc.nr)
            return ir_node_fail(n, SMELT_ERR_SHAPE, "U's panels %s are not those of %lld products of [%lld, %lld] by %lld columns",
                                infer_shp(&u->shape, s1), (long long)ul.dim[0], (long long)ul.dim[1], (long long)ul.dim[2],
                                (long long)u->enc.nr);
    }
    ir_shape out = {.rank = 3, .dim = {v->shape.dim[0], v->shape.dim[2], ul.dim[2]}};
    infer_put_out(g, n, 0, SMELT_F32, &out);
    return SMELT_OK;
}

/* A[tile][c] of product bidx[0] = V[p][c][tile], read in place (tile + c*tiles). */
static kir_val gemm_read_v(lower_ctx *c, const gemm_packed *g, const kir_val *bidx, kir_val i, kir_val k)
{
    (void)g;
    return lower_load(c, 0, (kir_val[3]){bidx[0], k, i});
}

static kir_val gemm_product(lower_ctx *c, const gemm_packed *g, const kir_val *bidx)
{
    (void)c, (void)g;
    return bidx[0];
}

static void gemm_store_m(lower_ctx *c, const gemm_packed *g, const kir_val *bidx, kir_val i, kir_val j, kir_val v)
{
    (void)g;
    lower_store(c, 0, (kir_val[3]){bidx[0], i, j}, v);
}

/* idx: p, tile, k; M[p][tile][k] = sum over c of V[p][c][tile] * U[p][c][k]. */
static void gemm_plain_body(lower_ctx *c, const kir_val *idx, void *user)
{
    const int64_t *channels = user;
    kir_kernel *K = c->k;
    int acc = kir_var_new(K, SMELT_F32, kir_const_f(K, SMELT_F32, 0));
    kir_val ch = kir_loop_begin(K, kir_idx(K, 0), kir_idx(K, *channels), kir_idx(K, 1));
    kir_val v = lower_load(c, 0, (kir_val[3]){idx[0], ch, idx[1]});
    kir_val u = lower_load(c, 1, (kir_val[3]){idx[0], ch, idx[2]});
    kir_var_set(K, acc, kir_add(K, kir_var_get(K, acc), kir_mul(K, v, u)));
    kir_loop_end(K);
    lower_store(c, 0, idx, kir_var_get(K, acc));
}

smelt_status lower_WinogradGemm(lower_ctx *c)
{
    const ir_tensor *v = ir_in(c->g, c->n, 0), *u = ir_in(c->g, c->n, 1);
    ir_shape ul = ir_tensor_logical_shape(u);
    int64_t p = v->shape.dim[0], channels = v->shape.dim[1], tiles = v->shape.dim[2], k = ul.dim[2];
    if (p * channels * tiles * k == 0) return SMELT_OK;
    if (u->enc.kind != IR_ENC_PANELS) {
        ir_shape space = {.rank = 3, .dim = {p, tiles, k}};
        lower_parallel_for(c, &space, 2 * channels, gemm_plain_body, &channels);
        return c->k ? SMELT_OK : ir_node_fail(c->n, SMELT_ERR_NOMEM, "out of memory");
    }
    mm_tiles tl = mm_tiles_for(c->target->vector_width);
    if (c->target->wg_size != 1)
        return ir_node_fail(c->n, SMELT_ERR_UNSUPPORTED, "filters packed into panels are read by the C target's packed GEMM only");
    if (u->enc.nr != tl.nr)
        return ir_node_fail(c->n, SMELT_ERR_UNSUPPORTED, "filter panels of %lld columns, but this target's GEMM reads panels of %d",
                            (long long)u->enc.nr, tl.nr);
    gemm_packed g = {.nb = 1, .batch = {p}, .m = tiles, .n = k, .k = channels, .dt = SMELT_F32, .tl = tl,
                     .b_input = 1, .b_scratch = -1, .b_index = gemm_product, .b_batched = true,
                     .read_a = gemm_read_v, .store = gemm_store_m};
    return gemm_packed_lower(c, &g);
}
