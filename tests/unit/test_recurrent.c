/*
 * test_recurrent.c — RNN, GRU (both linear_before_reset forms) and LSTM
 * against a double-precision reference of the ONNX definitions, on the shapes
 * that reach each CPU form of the input projection (ops/recurrent_lower.c):
 * constant weights (the packed form; gate columns G*H a multiple of the GEMM's
 * panel width, read in place, or not, copied into panels per call) and weights
 * given as inputs; forward, reverse and bidirectional; sequence lengths 1, 5
 * and 7; batch 1 (a workgroup per direction and entry) and 2 to 5 (the CPU's
 * batched recurrence, a workgroup per direction and group of entries); input
 * and hidden sizes that are not multiples of a tile.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/program.h"
#include "graph/passes.h"
#include "test.h"
#include "fuse_cases.h"

typedef struct rnn_case {
    op_id op;
    int gates;        /* 1, 3, 4 */
    int64_t s, b, i, h;
    int dir;          /* 0 forward, 1 reverse, 2 bidirectional */
    bool lbr;         /* GRU linear_before_reset */
    bool const_w;     /* W, R, B constants (PackedGRU...) or graph inputs */
} rnn_case;

static double sig(double x) { return 1 / (1 + exp(-x)); }

static void fill(float *d, int64_t n, uint32_t seed, float scale)
{
    for (int64_t k = 0; k < n; k++) {
        seed = seed * 1664525u + 1013904223u;
        d[k] = scale * ((float)(seed >> 8) / (float)(1u << 24) - 0.5f);
    }
}

/* y [S, D, B, H] and yh [D, B, H] by the ONNX definitions (default activations, no clip). */
static void rnn_ref(const rnn_case *t, const float *x, const float *w, const float *r, const float *bias, double *y, double *yh)
{
    int64_t D = t->dir == 2 ? 2 : 1, S = t->s, B = t->b, I = t->i, H = t->h, G = t->gates;
    double *hs = calloc((size_t)H, sizeof(double)), *cs = calloc((size_t)H, sizeof(double));
    double *rh = calloc((size_t)H, sizeof(double)), *hn = calloc((size_t)H, sizeof(double));
    double *gx = calloc((size_t)(G * H), sizeof(double)), *gh = calloc((size_t)(G * H), sizeof(double));
    for (int64_t d = 0; d < D; d++)
        for (int64_t b = 0; b < B; b++) {
            memset(hs, 0, sizeof(double) * (size_t)H);
            memset(cs, 0, sizeof(double) * (size_t)H);
            const float *wd = w + d * G * H * I, *rd = r + d * G * H * H, *wb = bias + d * 2 * G * H, *rb = wb + G * H;
            for (int64_t step = 0; step < S; step++) {
                int64_t tt = t->dir == 1 || d == 1 ? S - 1 - step : step;
                /* gx = x W^T + Wb; gh = h R^T + Rb */
                for (int64_t n = 0; n < G * H; n++) {
                    gx[n] = wb[n], gh[n] = rb[n];
                    for (int64_t k = 0; k < I; k++) gx[n] += (double)x[(tt * B + b) * I + k] * wd[n * I + k];
                    for (int64_t k = 0; k < H; k++) gh[n] += hs[k] * rd[n * H + k];
                }
                for (int64_t j = 0; j < H; j++) {
                    if (t->op == OP_RNN) {
                        hn[j] = tanh(gx[j] + gh[j]);
                    } else if (t->op == OP_LSTM) { /* gate blocks i, o, f, c */
                        double i = sig(gx[j] + gh[j]), o = sig(gx[H + j] + gh[H + j]), f = sig(gx[2 * H + j] + gh[2 * H + j]);
                        cs[j] = f * cs[j] + i * tanh(gx[3 * H + j] + gh[3 * H + j]);
                        hn[j] = o * tanh(cs[j]);
                    } else { /* GRU: z, r, h */
                        double z = sig(gx[j] + gh[j]), rr = sig(gx[H + j] + gh[H + j]), hh;
                        if (t->lbr) {
                            hh = tanh(gx[2 * H + j] + rr * gh[2 * H + j]);
                        } else {
                            for (int64_t k = 0; k < H; k++) rh[k] = sig(gx[H + k] + gh[H + k]) * hs[k];
                            double s = gx[2 * H + j] + rb[2 * H + j];
                            for (int64_t k = 0; k < H; k++) s += rh[k] * rd[(2 * H + j) * H + k];
                            hh = tanh(s);
                        }
                        hn[j] = (1 - z) * hh + z * hs[j];
                    }
                }
                for (int64_t j = 0; j < H; j++) y[((tt * D + d) * B + b) * H + j] = hs[j] = hn[j];
            }
            for (int64_t j = 0; j < H; j++) yh[(d * B + b) * H + j] = hs[j];
        }
    free(hs);
    free(cs);
    free(rh);
    free(hn);
    free(gx);
    free(gh);
}

static int tensor_with(ir_graph *g, const char *name, ir_shape s, const float *data, bool is_const)
{
    if (!is_const) return input(g, name, s);
    int t = ir_tensor_add(g, name, SMELT_F32, &s);
    float *d = ir_tensor_alloc_data(g, t);
    memcpy(d, data, sizeof(float) * (size_t)ir_shape_numel(&s));
    return t;
}

/* Whether run_case's last compiled program read W as the GEMM's panels (graph_pack_recurrent_w). */
static bool last_w_panels;

static void run_case(const rnn_case *t, int which)
{
    int64_t D = t->dir == 2 ? 2 : 1, S = t->s, B = t->b, I = t->i, H = t->h, N = t->gates * H;
    int64_t nx = S * B * I, nw = D * N * I, nr = D * N * H, nb = D * 2 * N, ny = S * D * B * H;
    float *x = malloc(sizeof(float) * (size_t)nx), *w = malloc(sizeof(float) * (size_t)nw);
    float *r = malloc(sizeof(float) * (size_t)nr), *bias = malloc(sizeof(float) * (size_t)nb);
    double *y = malloc(sizeof(double) * (size_t)ny), *yh = malloc(sizeof(double) * (size_t)(D * B * H));
    fill(x, nx, 11u + (uint32_t)which, 2.0f);
    fill(w, nw, 23u, 1.2f / sqrtf((float)I));
    fill(r, nr, 37u, 1.6f / sqrtf((float)H));
    fill(bias, nb, 41u, 0.6f);
    rnn_ref(t, x, w, r, bias, y, yh);

    ir_graph *g = ir_graph_new();
    int xi = input(g, "x", shp(3, S, B, I));
    int wi = tensor_with(g, "w", shp(3, D, N, I), w, t->const_w), ri = tensor_with(g, "r", shp(3, D, N, H), r, t->const_w);
    int bi = tensor_with(g, "b", shp(2, D, 2 * N), bias, t->const_w);
    int yt = ir_tensor_add(g, "y", SMELT_F32, NULL), yht = ir_tensor_add(g, "y_h", SMELT_F32, NULL);
    int outs[2] = {yt, yht};
    int node = ir_node_add(g, "cell", t->op, 4, (const int[]){xi, wi, ri, bi}, 2, outs);
    static const char *const dirs[3] = {"forward", "reverse", "bidirectional"};
    attr_str(g, node, "direction", dirs[t->dir]);
    attr_int(g, node, "hidden_size", H);
    if (t->op == OP_GRU) attr_int(g, node, "linear_before_reset", t->lbr);
    int ins[4] = {xi, wi, ri, bi};
    ir_graph_set_io(g, t->const_w ? 1 : 4, ins, 2, outs);
    smelt_program *p = compile(g, 0);
    CHECK(p != NULL);
    last_w_panels = false;
    if (p) {
        last_w_panels = ir_in(p->g, &p->g->nodes[node_named(p->g, "cell")], 1)->enc.kind == IR_ENC_PANELS;
        smelt_tensor in[4] = {{.name = "x", .dtype = SMELT_F32, .rank = 3, .shape = {S, B, I}, .data = x},
                              {.name = "w", .dtype = SMELT_F32, .rank = 3, .shape = {D, N, I}, .data = w},
                              {.name = "r", .dtype = SMELT_F32, .rank = 3, .shape = {D, N, H}, .data = r},
                              {.name = "b", .dtype = SMELT_F32, .rank = 2, .shape = {D, 2 * N}, .data = bias}};
        CHECK(smelt_program_run(p, t->const_w ? 1 : 4, in) == SMELT_OK);
        smelt_tensor o, oh;
        CHECK(smelt_program_output(p, 0, &o) == SMELT_OK && smelt_program_output(p, 1, &oh) == SMELT_OK);
        CHECK_EQ_INT(smelt_tensor_numel(&o), ny);
        if (smelt_tensor_numel(&o) == ny) {
            CHECK(count_far(o.data, y, ny, 2e-5, which) == 0);
            CHECK(count_far(oh.data, yh, D * B * H, 2e-5, which) == 0);
        }
        smelt_program_free(p);
    }
    ir_graph_free(g);
    free(x), free(w), free(r), free(bias), free(y), free(yh);
}

/* Every cell in every direction with hidden 5 (G*H 5, 15, 20: not a whole number of panels) and
 * 16 (16, 48, 64: whole panels, W read in place when constant), input 11; (sequence length,
 * batch) (1, 3), (7, 2) and (5, 1), and constant or given weights, rotating over the cases (24
 * compiles, not 144). */
TEST(recurrent_cells_match_reference)
{
    static const struct {
        op_id op;
        int gates;
        bool lbr;
    } cells[] = {{OP_RNN, 1, false}, {OP_GRU, 3, false}, {OP_GRU, 3, true}, {OP_LSTM, 4, false}};
    static const int64_t hs[2] = {5, 16}, seqs[3][2] = {{1, 3}, {7, 2}, {5, 1}};
    int which = 0;
    for (int c = 0; c < 4; c++)
        for (int dir = 0; dir < 3; dir++)
            for (int h = 0; h < 2; h++) {
                int sb = (dir + h) % 3, cw = (dir + h + c) % 2;
                rnn_case t = {cells[c].op, cells[c].gates, seqs[sb][0], seqs[sb][1], 11, hs[h], dir, cells[c].lbr, cw};
                run_case(&t, which++);
                CHECK_EQ_INT(last_w_panels, cw); /* constant W: the projection's B as panels */
            }
}

/* Constant W as the projection GEMM's panels (graph_pack_recurrent_w) at the edges: one time
 * step, a single input feature, odd inputs and hidden sizes (G*H 7, 21, 28, 36: the last panel
 * partly past N), one to three rows of X (fewer than a row block, a short last block), and a
 * sequence of 9 x batch 3 (27 rows: full row blocks and a tail); every cell, every direction. */
TEST(recurrent_w_panels_edges_match_reference)
{
    static const struct {
        op_id op;
        int gates;
        bool lbr;
    } cells[] = {{OP_RNN, 1, false}, {OP_GRU, 3, false}, {OP_GRU, 3, true}, {OP_LSTM, 4, false}};
    static const int64_t shapes[][4] = {{1, 1, 1, 7}, {1, 3, 5, 7}, {9, 3, 3, 9}, {2, 1, 13, 7}}; /* s, b, i, h */
    int which = 100;
    for (int c = 0; c < 4; c++)
        for (int sh = 0; sh < 4; sh++) {
            int dir = (c + sh) % 3;
            rnn_case t = {cells[c].op, cells[c].gates, shapes[sh][0], shapes[sh][1], shapes[sh][2], shapes[sh][3], dir,
                          cells[c].lbr, true};
            run_case(&t, which++);
            CHECK(last_w_panels);
        }
}

/* The batched recurrence's groups of entries (a workgroup per direction and group,
 * ops/recurrent_lower.c): batch 3 and 5 split unevenly, batch 4 evenly, forward and
 * reverse (one direction: two groups), and bidirectional batch 5 (one group a
 * direction); hidden 5 and 13 (G*H not a whole number of panels, and the recurrent
 * product's RNN_KU remainder), sequence length 6, rotating over constant and given
 * weights (every cell, 28 compiles). Entry offsets within a group or of a group's first
 * entry gone wrong put another entry's state or rows in these outputs. */
TEST(recurrent_grouped_batch_matches_reference)
{
    static const struct {
        op_id op;
        int gates;
        bool lbr;
    } cells[] = {{OP_RNN, 1, false}, {OP_GRU, 3, false}, {OP_GRU, 3, true}, {OP_LSTM, 4, false}};
    static const struct {
        int dir;
        int64_t b, h;
    } shapes[] = {{0, 3, 5}, {1, 3, 13}, {0, 5, 13}, {1, 5, 5}, {0, 4, 13}, {1, 4, 5}, {2, 5, 13}};
    int which = 100;
    for (int c = 0; c < 4; c++)
        for (int k = 0; k < 7; k++) {
            rnn_case t = {cells[c].op, cells[c].gates, 6, shapes[k].b, 9, shapes[k].h, shapes[k].dir, cells[c].lbr, (c + k) % 2};
            run_case(&t, which++);
        }
}

/* A tensor of dtype dt, constant (data copied from `data`, elements of that dtype) or an input. */
static int typed(ir_graph *g, const char *name, smelt_dtype dt, ir_shape s, const void *data, bool is_const)
{
    int t = ir_tensor_add(g, name, dt, &s);
    if (is_const) memcpy(ir_tensor_alloc_data(g, t), data, (size_t)ir_shape_numel(&s) * smelt_dtype_size(dt));
    return t;
}

/* DynamicQuantizeLSTM with constant int8 W and R and zero points (per direction for W, per gate
 * column for R): graph_fold_gemm_transpose stores both less their zero points and drops the zero
 * points, W as int8 where every difference fits (W's zero points 0, at H 12), else float32, and
 * the program computes what the same node with W and R given as inputs (converted per call) does,
 * bidirectional, seq 5, batch 2, G*H 4*12 = 48 and 4*5 = 20 (the last panel partly past N); the
 * constant W becomes 8-bit panels (graph_pack_recurrent_w), read by the int8 microkernel with X's
 * rows as its int16 A, the given one is copied into float panels per call. */
TEST(recurrent_quantized_constant_weights_fold)
{
    enum { S = 5, B = 2, I = 7, D = 2 };
    for (int hi = 0; hi < 2; hi++) {
        int64_t H = hi ? 12 : 5, N = 4 * H;
        int8_t *w = malloc((size_t)(D * I * N)), *r = malloc((size_t)(D * H * N)), *rz = malloc((size_t)(D * N));
        for (int64_t k = 0; k < D * I * N; k++) w[k] = (int8_t)((k * 37 + 11) % 255 - 127);
        for (int64_t k = 0; k < D * H * N; k++) r[k] = (int8_t)((k * 53 + 5) % 255 - 127);
        for (int64_t k = 0; k < D * N; k++) rz[k] = (int8_t)(k % 7 - 3);
        int8_t wz[D] = {hi ? 0 : 3, hi ? 0 : -2};
        float ws[D] = {0.004f, 0.006f}, rs[D] = {0.005f, 0.003f}, xs = 0.02f;
        uint8_t xz = 120, x[S * B * I];
        for (int k = 0; k < S * B * I; k++) x[k] = (uint8_t)((k * 29 + 7) % 256);
        float *bias = malloc(sizeof(float) * (size_t)(D * 2 * N));
        fill(bias, D * 2 * N, 5u, 0.4f);
        float *out[2] = {NULL, NULL};
        int64_t ny = S * D * B * H;
        for (int cw = 1; cw >= 0; cw--) {
            ir_graph *g = ir_graph_new();
            int ins[14];
            for (int k = 0; k < 14; k++) ins[k] = -1;
            ins[0] = typed(g, "x", SMELT_U8, shp(3, S, B, I), x, false);
            ins[1] = typed(g, "w", SMELT_I8, shp(3, D, I, N), w, cw);
            ins[2] = typed(g, "r", SMELT_I8, shp(3, D, H, N), r, cw);
            ins[3] = typed(g, "b", SMELT_F32, shp(2, D, 2 * N), bias, true);
            ins[8] = typed(g, "ws", SMELT_F32, shp(1, D), ws, true);
            ins[9] = typed(g, "wz", SMELT_I8, shp(1, D), wz, true);
            ins[10] = typed(g, "rs", SMELT_F32, shp(1, D), rs, true);
            ins[11] = typed(g, "rz", SMELT_I8, shp(2, D, N), rz, true);
            ins[12] = typed(g, "xs", SMELT_F32, shp(0), &xs, true);
            ins[13] = typed(g, "xz", SMELT_U8, shp(0), &xz, true);
            int yt = ir_tensor_add(g, "y", SMELT_F32, NULL);
            int node = ir_node_add(g, "qlstm", OP_DynamicQuantizeLSTM, 14, ins, 1, &yt);
            attr_str(g, node, "direction", "bidirectional");
            attr_int(g, node, "hidden_size", H);
            int gin[3] = {ins[0], ins[1], ins[2]};
            ir_graph_set_io(g, cw ? 1 : 3, gin, 1, &yt);
            ir_graph *h = ir_graph_clone(g);
            CHECK(h && graph_infer(h, lower_eval_node) == SMELT_OK && graph_fold_gemm_transpose(h) == SMELT_OK);
            if (h) {
                const ir_node *n = &h->nodes[node_named(h, "qlstm")];
                CHECK_EQ_INT(ir_in(h, n, 1)->dtype, cw ? (hi ? SMELT_I8 : SMELT_F32) : SMELT_I8);
                CHECK_EQ_INT(ir_in(h, n, 2)->dtype == SMELT_F32, cw);
                CHECK_EQ_INT(ir_in(h, n, 9) == NULL && ir_in(h, n, 11) == NULL, cw);
                if (cw) {
                    const float *wf = ir_in(h, n, 1)->data, *rf = ir_in(h, n, 2)->data;
                    const int8_t *w8 = ir_in(h, n, 1)->data;
                    if (hi) CHECK(w8[0] == w[0] && w8[D * I * N - 1] == w[D * I * N - 1]);
                    else CHECK(wf[0] == (float)(w[0] - wz[0]) && wf[D * I * N - 1] == (float)(w[D * I * N - 1] - wz[1]));
                    CHECK(rf[N + 3] == (float)(r[N + 3] - rz[3]) && rf[H * N + 1] == (float)(r[H * N + 1] - rz[N + 1]));
                }
            }
            ir_graph_free(h);
            smelt_program *p = compile(g, 0);
            CHECK(p != NULL);
            if (p) {
                /* constant W: panels of the projection's GEMM (graph_pack_recurrent_w), int8 at H 12;
                 * at H 5 w - w_zp spans 259 values, so float32 */
                const ir_tensor *wp = ir_in(p->g, &p->g->nodes[node_named(p->g, "qlstm")], 1);
                CHECK_EQ_INT(wp->enc.kind == IR_ENC_PANELS, cw);
                if (cw) CHECK_EQ_INT(wp->dtype, hi ? SMELT_I8 : SMELT_F32);
                smelt_tensor in[3] = {{.name = "x", .dtype = SMELT_U8, .rank = 3, .shape = {S, B, I}, .data = x},
                                      {.name = "w", .dtype = SMELT_I8, .rank = 3, .shape = {D, I, N}, .data = w},
                                      {.name = "r", .dtype = SMELT_I8, .rank = 3, .shape = {D, H, N}, .data = r}};
                CHECK(smelt_program_run(p, cw ? 1 : 3, in) == SMELT_OK);
                smelt_tensor o;
                CHECK(smelt_program_output(p, 0, &o) == SMELT_OK);
                if (smelt_tensor_numel(&o) == ny) {
                    out[cw] = malloc(sizeof(float) * (size_t)ny);
                    memcpy(out[cw], o.data, sizeof(float) * (size_t)ny);
                }
                smelt_program_free(p);
            }
            ir_graph_free(g);
        }
        CHECK(out[0] && out[1]);
        if (out[0] && out[1]) {
            int bad = 0;
            for (int64_t k = 0; k < ny && bad < 3; k++)
                if (fabsf(out[0][k] - out[1][k]) > 1e-5f * (1 + fabsf(out[0][k]))) {
                    fprintf(stderr, "  H %lld [%lld]: folded %g, per call %g\n", (long long)H, (long long)k, out[1][k], out[0][k]);
                    bad++;
                }
            CHECK(bad == 0);
        }
        free(out[0]), free(out[1]), free(w), free(r), free(rz), free(bias);
    }
}

/* Runs DynamicQuantizeLSTM (bidirectional, seq 4, batch 1, input 6, hidden h) with 8-bit R of
 * dtype rt less zero point rz (one per direction), constant or given per call (cw), and returns
 * Y (malloc'd) and whether the compiled program read R as panels. */
static float *qlstm_run(int64_t h, smelt_dtype rt, int rz, bool cw, bool *panels, smelt_dtype *rdt, int rmag)
{
    enum { S = 4, B = 1, I = 6, D = 2 };
    int64_t N = 4 * h, ny = S * D * B * h;
    uint8_t *w = malloc((size_t)(D * I * N)), *r = malloc((size_t)(D * h * N)), x[S * B * I];
    for (int64_t k = 0; k < D * I * N; k++) w[k] = (uint8_t)((k * 37 + 11) % 251);
    /* rmag (int8 R): every |r| that large, so columns' sums of |r| grow with h */
    for (int64_t k = 0; k < D * h * N; k++) r[k] = rmag ? (uint8_t)(int8_t)((k * 7 / 3) % 2 ? rmag : -rmag) : (uint8_t)((k * 53 + 5) % 256);
    for (int k = 0; k < S * B * I; k++) x[k] = (uint8_t)((k * 29 + 7) % 256);
    uint8_t wz[D] = {0, 0}, rzs[D] = {(uint8_t)rz, (uint8_t)rz}, xz = 120;
    float ws[D] = {0.004f, 0.006f}, rs[D] = {0.005f, 0.003f}, xs = 0.02f;
    float *bias = malloc(sizeof(float) * (size_t)(D * 2 * N)), *out = NULL;
    fill(bias, D * 2 * N, 9u, 0.4f);
    ir_graph *g = ir_graph_new();
    int ins[14];
    for (int k = 0; k < 14; k++) ins[k] = -1;
    ins[0] = typed(g, "x", SMELT_U8, shp(3, S, B, I), x, false);
    ins[1] = typed(g, "w", SMELT_I8, shp(3, D, I, N), w, true);
    ins[2] = typed(g, "r", rt, shp(3, D, h, N), r, cw);
    ins[3] = typed(g, "b", SMELT_F32, shp(2, D, 2 * N), bias, true);
    ins[8] = typed(g, "ws", SMELT_F32, shp(1, D), ws, true);
    ins[9] = typed(g, "wz", SMELT_I8, shp(1, D), wz, true);
    ins[10] = typed(g, "rs", SMELT_F32, shp(1, D), rs, true);
    ins[11] = typed(g, "rz", rt, shp(1, D), rzs, true);
    ins[12] = typed(g, "xs", SMELT_F32, shp(0), &xs, true);
    ins[13] = typed(g, "xz", SMELT_U8, shp(0), &xz, true);
    int yt = ir_tensor_add(g, "y", SMELT_F32, NULL);
    int node = ir_node_add(g, "qlstm", OP_DynamicQuantizeLSTM, 14, ins, 1, &yt);
    attr_str(g, node, "direction", "bidirectional");
    attr_int(g, node, "hidden_size", h);
    int gin[2] = {ins[0], ins[2]};
    ir_graph_set_io(g, cw ? 1 : 2, gin, 1, &yt);
    smelt_program *p = compile(g, 0);
    CHECK(p != NULL);
    if (p) {
        const ir_tensor *rp = ir_in(p->g, &p->g->nodes[node_named(p->g, "qlstm")], 2);
        *panels = rp->enc.kind == IR_ENC_PANELS;
        *rdt = rp->dtype;
        smelt_tensor in[2] = {{.name = "x", .dtype = SMELT_U8, .rank = 3, .shape = {S, B, I}, .data = x},
                              {.name = "r", .dtype = rt, .rank = 3, .shape = {D, h, N}, .data = r}};
        CHECK(smelt_program_run(p, cw ? 1 : 2, in) == SMELT_OK);
        smelt_tensor o;
        CHECK(smelt_program_output(p, 0, &o) == SMELT_OK);
        if (smelt_tensor_numel(&o) == ny) {
            out = malloc(sizeof(float) * (size_t)ny);
            memcpy(out, o.data, sizeof(float) * (size_t)ny);
        }
        smelt_program_free(p);
    }
    ir_graph_free(g);
    free(w), free(r), free(bias);
    return out;
}

/* A constant R whose values less the zero point fit 8 bits, with 4H whole panels of
 * GRAPH_RNN_PANEL_COLS, is read as panels (graph_pack_recurrent_r): int16 k-pairs where 255
 * times each column's sum of |r| is within 2^24 (int8 less 0, uint8 less 119: one and two
 * panels a direction), else 8-bit (H 520 with every |r| 127: sums of 66040); uint8 less 0 at
 * H 12 (48 columns: no whole panels) stays float. Y equals the same node's with R given per
 * call (converted in its kernels) to rounding. */
TEST(recurrent_quantized_r_panels)
{
    static const struct {
        int64_t h;
        smelt_dtype rt;
        int rz, rmag;
        bool panels;
        smelt_dtype stored;
    } cases[] = {{8, SMELT_I8, 0, 0, true, SMELT_I16},
                 {16, SMELT_U8, 119, 0, true, SMELT_I16},
                 {520, SMELT_I8, 0, 127, true, SMELT_I8},
                 {12, SMELT_U8, 0, 0, false, SMELT_F32}};
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        bool pk = false, pk_call = true;
        smelt_dtype dt = SMELT_F32, dt_call;
        float *got = qlstm_run(cases[t].h, cases[t].rt, cases[t].rz, true, &pk, &dt, cases[t].rmag);
        float *want = qlstm_run(cases[t].h, cases[t].rt, cases[t].rz, false, &pk_call, &dt_call, cases[t].rmag);
        CHECK_EQ_INT(pk, cases[t].panels);
        CHECK_EQ_INT(dt, cases[t].stored);
        CHECK(!pk_call);
        CHECK(got && want);
        int64_t ny = 4 * 2 * cases[t].h;
        int bad = 0;
        for (int64_t k = 0; got && want && k < ny; k++)
            if (fabsf(got[k] - want[k]) > 1e-5f * (1 + fabsf(want[k])) && bad++ < 3)
                fprintf(stderr, "  case %zu [%lld]: panels %g, per call %g\n", t, (long long)k, got[k], want[k]);
        CHECK_EQ_INT(bad, 0);
        free(got), free(want);
    }
}
