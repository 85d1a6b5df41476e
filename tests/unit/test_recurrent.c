/*
 * test_recurrent.c — RNN, GRU (both linear_before_reset forms) and LSTM
 * against a double-precision reference of the ONNX definitions, on the shapes
 * that reach each CPU form of the input projection (ops/recurrent_lower.c):
 * constant weights (the packed form; gate columns G*H a multiple of the GEMM's
 * panel width, read in place, or not, copied into panels per call) and weights
 * given as inputs; forward, reverse and bidirectional; sequence lengths 1 and
 * 7; batch 1 and 3; input and hidden sizes that are not multiples of a tile.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/program.h"
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
    if (p) {
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
 * 16 (16, 48, 64: whole panels, W read in place when constant), input 11; sequence length 1 with
 * batch 3 and 7 with batch 1, and constant or given weights, alternating over the cases so each
 * cell meets each (24 compiles, not 96). */
TEST(recurrent_cells_match_reference)
{
    static const struct {
        op_id op;
        int gates;
        bool lbr;
    } cells[] = {{OP_RNN, 1, false}, {OP_GRU, 3, false}, {OP_GRU, 3, true}, {OP_LSTM, 4, false}};
    static const int64_t hs[2] = {5, 16}, seqs[2][2] = {{1, 3}, {7, 1}};
    int which = 0;
    for (int c = 0; c < 4; c++)
        for (int dir = 0; dir < 3; dir++)
            for (int h = 0; h < 2; h++) {
                int sb = (dir + h) % 2, cw = (dir + h + c) % 2;
                rnn_case t = {cells[c].op, cells[c].gates, seqs[sb][0], seqs[sb][1], 11, hs[h], dir, cells[c].lbr, cw};
                run_case(&t, which++);
            }
}
