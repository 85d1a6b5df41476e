/*
 * winograd.c — 3x3 stride-1 convolutions rewritten as Winograd F(m x m, 3 x 3)
 * (graph/passes.h, graph_winograd; the ops in ops/conv_winograd.h):
 *
 *   Conv(X, W, B) -> WinogradInput(X) -> V [P, C, tiles]          P = T*T
 *                    WinogradGemm(V, U) -> M [P, tiles, K]        U constant [P, C, K]
 *                    WinogradOutput(M, B) -> Y [N, K, OH, OW]
 *
 * with U[p][c][k] = (G W[k][c] G^T)[a][b], p = a*T + b, computed here in
 * double. The P products are one batched GEMM with a constant B (packed here
 * for the microkernels when nr > 0: the panels of product p after those of
 * p - 1), so the GEMM microkernels do the work in one kernel whose units
 * range over the products: 9 m^2 / (m+2)^2 times fewer multiplications than
 * the direct convolution (4 for m = 4, 2.25 for m = 2), plus the transforms
 * of X and of the products. Three kernels a convolution (there were P + 2,
 * one MatMul per product, when each product was its own dispatch).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/passes.h"

/* G (T x 3) of F(m x m, 3 x 3), the points of conv_winograd.c's B^T and A^T. */
static const double g4[6][3] = {
    {1.0 / 4, 0, 0},           {-1.0 / 6, -1.0 / 6, -1.0 / 6}, {-1.0 / 6, 1.0 / 6, -1.0 / 6},
    {1.0 / 24, 1.0 / 12, 1.0 / 6}, {1.0 / 24, -1.0 / 12, 1.0 / 6}, {0, 0, 1},
};
static const double g2[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};

static double gm(int m, int r, int col) { return m == 4 ? g4[r][col] : g2[r][col]; }

/* A Conv's geometry, read here from its attributes (this pass runs on the
 * imported attributes, before any op-family parsing); false: not a candidate. */
typedef struct wino_conv {
    int64_t n, c, k, h, w, oh, ow, pad_top, pad_left;
} wino_conv;

static bool ints_all(const ir_node *n, const char *name, int count, int64_t want)
{
    const int64_t *v;
    int got = ir_attr_ints(n, name, &v);
    if (got < 0) return true;
    if (got != count) return false;
    for (int i = 0; i < count; i++)
        if (v[i] != want) return false;
    return true;
}

/* Whether every use of tensor t is a Cast to an integer type: the float Conv
 * of integers that onnx/quantized.c makes of a ConvInteger, whose sums are
 * exact only without Winograd's fractional transforms. */
static bool only_int_casts(const ir_graph *g, int t)
{
    if (g->tensors[t].is_output) return false;
    int uses = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *u = &g->nodes[i];
        for (int j = 0; j < u->n_in && !u->dead; j++) {
            if (u->in[j] != t) continue;
            smelt_dtype to = (smelt_dtype)ir_attr_int(u, "to", SMELT_F32);
            if (u->op != OP_Cast || (to != SMELT_I32 && to != SMELT_I64)) return false;
            uses++;
        }
    }
    return uses > 0;
}

static bool conv_candidate(const ir_graph *g, const ir_node *n, wino_conv *cv)
{
    if (n->dead || n->op != OP_Conv || n->n_in < 2 || n->n_out != 1 || n->out[0] < 0) return false;
    const ir_tensor *x = ir_in(g, n, 0), *w = ir_in(g, n, 1), *b = ir_in(g, n, 2), *y = &g->tensors[n->out[0]];
    if (!x || !w || x->data || !w->data || w->enc.kind != IR_ENC_NONE) return false;
    if (x->dtype != SMELT_F32 || w->dtype != SMELT_F32 || y->dtype != SMELT_F32) return false;
    if (only_int_casts(g, n->out[0])) return false;
    if (x->shape.rank != 4 || w->shape.rank != 4 || y->shape.rank != 4) return false;
    if (w->shape.dim[2] != 3 || w->shape.dim[3] != 3 || w->shape.dim[1] != x->shape.dim[1]) return false;
    if (b && (b->dtype != SMELT_F32 || b->shape.rank != 1)) return false;
    if (ir_attr_int(n, "group", 1) != 1 || !ints_all(n, "strides", 2, 1) || !ints_all(n, "dilations", 2, 1)) return false;
    if (strcmp(ir_attr_string(n, "auto_pad", "NOTSET"), "NOTSET")) return false;
    const int64_t *ks, *pads;
    int nk = ir_attr_ints(n, "kernel_shape", &ks);
    if (nk >= 0 && (nk != 2 || ks[0] != 3 || ks[1] != 3)) return false;
    int np = ir_attr_ints(n, "pads", &pads);
    if (np >= 0 && np != 4) return false;
    for (int i = 0; i < np; i++)
        if (pads[i] < 0) return false;
    *cv = (wino_conv){.n = x->shape.dim[0], .c = x->shape.dim[1], .k = w->shape.dim[0], .h = x->shape.dim[2],
                      .w = x->shape.dim[3], .oh = y->shape.dim[2], .ow = y->shape.dim[3],
                      .pad_top = np > 0 ? pads[0] : 0, .pad_left = np > 0 ? pads[1] : 0};
    return cv->oh >= 1 && cv->ow >= 1 && cv->n >= 1;
}

/* The T*T products are GEMMs of `tiles` rows by C deep by K wide: with few
 * channels the transforms cost more than the multiplications saved, and with
 * few tiles the GEMMs stream T*T/9 times the direct weights for few rows. The
 * rule's m from min_tiles m x m tiles, else F(2x2) (16 products, not 36)
 * from min_tiles_2x2 2 x 2 tiles (0: min_tiles); 0: neither pays. */
static int conv_m(const wino_conv *cv, const graph_winograd_rule *rule)
{
    if (cv->c < rule->min_channels || cv->k < rule->min_channels) return 0;
    for (int m = rule->m; m >= 2; m -= 2) {
        int64_t tiles = cv->n * ((cv->oh + m - 1) / m) * ((cv->ow + m - 1) / m);
        int64_t need = m == 2 && m != rule->m && rule->min_tiles_2x2 > 0 ? rule->min_tiles_2x2 : rule->min_tiles;
        if (tiles >= need) return m;
    }
    return 0;
}

/* The T*T transformed filters U as one constant, logically [P, C, K]: the
 * panels of nr columns of each product one after the other when nr > 0
 * ([P * ceil(K/nr), C, nr], ir.h IR_ENC_PANELS), else row-major; -1: out of
 * memory. */
static int filter_const(ir_graph *g, int wt, const wino_conv *cv, int m, int64_t nr, const char *base)
{
    int t = m + 2, p = t * t;
    int64_t np = nr > 0 ? (cv->k + nr - 1) / nr : 0;
    char name[300];
    snprintf(name, sizeof name, "%s/winograd%d_u", base, m);
    ir_shape logical = {.rank = 3, .dim = {p, cv->c, cv->k}};
    ir_shape s = nr > 0 ? (ir_shape){.rank = 3, .dim = {p * np, cv->c, nr}} : logical;
    int u = ir_tensor_add(g, name, SMELT_F32, &s);
    if (u < 0 || !ir_tensor_alloc_data(g, u)) return -1;
    if (nr > 0) g->tensors[u].enc = (ir_encoding){.kind = IR_ENC_PANELS, .k = cv->c, .n = cv->k, .nr = nr, .logical = logical};
    float *ud = g->tensors[u].data; /* zeroed: the last panel's columns past K stay 0 */
    int64_t per = nr > 0 ? np * cv->c * nr : cv->c * cv->k; /* one product's elements */
    const float *w = g->tensors[wt].data;
    for (int64_t k = 0; k < cv->k; k++)
        for (int64_t c = 0; c < cv->c; c++) {
            const float *f = w + (k * cv->c + c) * 9;
            double gf[6][3]; /* G f */
            for (int a = 0; a < t; a++)
                for (int j = 0; j < 3; j++) gf[a][j] = gm(m, a, 0) * f[j] + gm(m, a, 1) * f[3 + j] + gm(m, a, 2) * f[6 + j];
            int64_t at = nr > 0 ? ((k / nr) * cv->c + c) * nr + k % nr : c * cv->k + k;
            for (int a = 0; a < t; a++)
                for (int b = 0; b < t; b++) {
                    double v = gf[a][0] * gm(m, b, 0) + gf[a][1] * gm(m, b, 1) + gf[a][2] * gm(m, b, 2);
                    ud[(a * t + b) * per + at] = (float)v;
                }
        }
    return u;
}

static bool attr_ints_add(ir_graph *g, int node, const char *name, int n, int64_t *v)
{
    ir_attr a = {.name = name, .type = IR_ATTR_INTS, .n = n, .ints = v, .tensor = -1};
    return ir_node_attr_add(g, node, &a);
}

/* Appends the rewrite of Conv node i (left dead) at the end of the nodes. */
static bool rewrite(ir_graph *g, int i, const wino_conv *cv, int m, int64_t nr)
{
    int t = m + 2, p = t * t;
    int64_t tiles = cv->n * ((cv->oh + m - 1) / m) * ((cv->ow + m - 1) / m);
    char base[256], name[300];
    snprintf(base, sizeof base, "%s", g->nodes[i].name);
    int x = g->nodes[i].in[0], wt = g->nodes[i].in[1], y = g->nodes[i].out[0];
    int bias = g->nodes[i].n_in > 2 ? g->nodes[i].in[2] : -1;
    int u = filter_const(g, wt, cv, m, nr, base);
    if (u < 0) return false;
    snprintf(name, sizeof name, "%s/winograd_v", base);
    int v = ir_tensor_add(g, name, SMELT_F32, &(ir_shape){.rank = 3, .dim = {p, cv->c, tiles}});
    snprintf(name, sizeof name, "%s/winograd_m", base);
    int mm = ir_tensor_add(g, name, SMELT_F32, &(ir_shape){.rank = 3, .dim = {p, tiles, cv->k}});
    if (v < 0 || mm < 0) return false;
    snprintf(name, sizeof name, "%s/winograd_in", base);
    int ni = ir_node_add(g, name, OP_WinogradInput, 1, &x, 1, &v);
    int64_t pads[2] = {cv->pad_top, cv->pad_left}, hw[2] = {cv->oh, cv->ow}, shape[4] = {cv->n, cv->k, cv->oh, cv->ow};
    ir_attr am = {.name = "m", .type = IR_ATTR_INT, .i = m, .tensor = -1};
    if (ni < 0 || !ir_node_attr_add(g, ni, &am) || !attr_ints_add(g, ni, "pads", 2, pads) || !attr_ints_add(g, ni, "out_hw", 2, hw))
        return false;
    snprintf(name, sizeof name, "%s/winograd_gemm", base);
    if (ir_node_add(g, name, OP_WinogradGemm, 2, (int[2]){v, u}, 1, &mm) < 0) return false;
    snprintf(name, sizeof name, "%s/winograd_out", base);
    int no = ir_node_add(g, name, OP_WinogradOutput, bias >= 0 ? 2 : 1, (int[2]){mm, bias}, 1, &y);
    if (no < 0 || !ir_node_attr_add(g, no, &am) || !attr_ints_add(g, no, "shape", 4, shape)) return false;
    g->nodes[i].dead = true;
    return true;
}

smelt_status graph_winograd(ir_graph *g, const graph_winograd_rule *rule)
{
    if (rule->m != 2 && rule->m != 4) return diag_fail(SMELT_ERR_INTERNAL, "graph_winograd: m is %d, must be 2 or 4", rule->m);
    int n0 = g->n_nodes;
    int *first = malloc(sizeof(int) * ((size_t)n0 + 1));
    if (!first) return diag_fail(SMELT_ERR_NOMEM, "out of memory rewriting convolutions");
    int rewritten = 0;
    for (int i = 0; i < n0; i++) {
        wino_conv cv;
        first[i] = -1;
        int m = conv_candidate(g, &g->nodes[i], &cv) ? conv_m(&cv, rule) : 0;
        if (!m) continue;
        first[i] = g->n_nodes;
        if (!rewrite(g, i, &cv, m, rule->nr)) {
            free(first);
            return diag_fail(SMELT_ERR_NOMEM, "out of memory rewriting convolution '%s'", g->nodes[i].name);
        }
        rewritten++;
    }
    first[n0] = g->n_nodes;
    if (rewritten) {
        /* Each rewrite's nodes go where its Conv was: the order stays topological. */
        ir_node *order = malloc(sizeof(ir_node) * (size_t)g->n_nodes);
        if (!order) {
            free(first);
            return diag_fail(SMELT_ERR_NOMEM, "out of memory rewriting convolutions");
        }
        int at = 0;
        for (int i = 0; i < n0; i++) {
            order[at++] = g->nodes[i];
            if (first[i] < 0) continue;
            int end = g->n_nodes;
            for (int j = i + 1; j < n0; j++)
                if (first[j] >= 0) {
                    end = first[j];
                    break;
                }
            for (int j = first[i]; j < end; j++) order[at++] = g->nodes[j];
        }
        memcpy(g->nodes, order, sizeof(ir_node) * (size_t)g->n_nodes);
        free(order);
        /* producers renumbered: dead nodes first, so a live node (WinogradOutput
         * in place of its dead Conv) wins the tensor they share */
        for (int pass = 0; pass < 2; pass++)
            for (int i = 0; i < g->n_nodes; i++)
                for (int o = 0; o < g->nodes[i].n_out && g->nodes[i].dead == (pass == 0); o++)
                    if (g->nodes[i].out[o] >= 0) g->tensors[g->nodes[i].out[o]].producer = i;
    }
    free(first);
    return ir_verify(g);
}
