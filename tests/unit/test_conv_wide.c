/*
 * test_conv_wide.c — the wide-kernel 1-D convolution form (ops/conv_wide.c)
 * against a direct reference: an STFT-like frame bank (kernel 256, hop 128),
 * pads (the guarded path), output channels not a multiple of the block (the
 * clamped ones), outputs not a multiple of the block, kernels not a multiple
 * of the lane count (the tail), several input channels, groups, and an input
 * computed inline by a fused reflection Pad (the copied window shared by all
 * output channels, as in silero's feature extractor); and the patch form of
 * short rows (each output's channel-by-tap patch copied, dotted with W's
 * rows), with pads, stride and dilation.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/program.h"
#include "test.h"
#include "fuse_cases.h"

typedef struct convw_case {
    int64_t x[3], w[3];   /* x: [N, C, L] as given to the Conv (after the Pad, if any) */
    int64_t group, pads[2], stride, dil;
    int64_t reflect;      /* > 0: x is a reflection Pad of this many on each side of a model input */
    bool bias;
    int tiles;            /* workgroup arrays: the accumulators, and a copied window */
} convw_case;

/* y[n][m][o] = b[m] + sum_c,k W[m][c][k] * x[n][g*cg + c][o*s + k - p] */
static void convw_ref(const convw_case *cc, const float *x, const float *w, const float *b, int64_t out, double *y)
{
    int64_t N = cc->x[0], C = cc->x[1], L = cc->x[2], M = cc->w[0], cg = cc->w[1], K = cc->w[2], mg = M / cc->group;
    for (int64_t n = 0; n < N; n++)
        for (int64_t m = 0; m < M; m++)
            for (int64_t o = 0; o < out; o++) {
                double acc = cc->bias ? b[m] : 0;
                for (int64_t c = 0; c < cg; c++)
                    for (int64_t k = 0; k < K; k++) {
                        int64_t i = o * cc->stride + k * cc->dil - cc->pads[0];
                        if (i < 0 || i >= L) continue;
                        acc += (double)w[(m * cg + c) * K + k] * x[(n * C + m / mg * cg + c) * L + i];
                    }
                y[(n * M + m) * out + o] = acc;
            }
}

TEST(conv_wide_and_patch_1d_forms_match_a_direct_reference)
{
    static const convw_case cases[] = {
        {{1, 1, 700}, {258, 1, 256}, 1, {0, 0}, 128, 1, 0, true, 1},
        {{2, 3, 100}, {6, 3, 21}, 1, {5, 7}, 3, 1, 0, true, 1},
        {{1, 4, 90}, {6, 2, 20}, 2, {0, 3}, 2, 1, 0, false, 1},
        {{2, 1, 380}, {10, 1, 64}, 1, {0, 0}, 32, 1, 40, true, 2},
        /* short rows, the patch form: silero's k3 convs (5 outputs), stride 2, dilation 2 */
        {{2, 129, 5}, {128, 129, 3}, 1, {1, 1}, 1, 1, 0, true, 2},
        {{2, 5, 9}, {6, 5, 3}, 1, {1, 1}, 2, 1, 0, true, 2},
        {{1, 3, 12}, {5, 3, 3}, 1, {2, 1}, 1, 2, 0, false, 2},
        /* kernel 1 over one frame, one output channel (silero's decoder head): W's flat index on the channel dim */
        {{3, 16, 1}, {1, 16, 1}, 1, {0, 0}, 1, 1, 0, true, 2},
    };
    for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
        const convw_case *cc = &cases[i];
        int64_t N = cc->x[0], C = cc->x[1], L = cc->x[2], R = cc->reflect, L0 = L - 2 * R;
        ir_graph *g = ir_graph_new();
        int x = input(g, "x", (ir_shape){.rank = 3, .dim = {N, C, L0}}), xin = x;
        if (R) {
            int pads = ir_tensor_add(g, "pads", SMELT_I64, &(ir_shape){.rank = 1, .dim = {6}});
            const int64_t pv[6] = {0, 0, R, 0, 0, R};
            memcpy(ir_tensor_alloc_data(g, pads), pv, sizeof pv);
            xin = op(g, "pad", OP_Pad, 2, (const int[]){x, pads});
            ir_attr mode = {.name = "mode", .type = IR_ATTR_STRING, .s = "reflect"};
            ir_node_attr_add(g, node_named(g, "pad"), &mode);
        }
        int w = constant(g, "w", (ir_shape){.rank = 3, .dim = {cc->w[0], cc->w[1], cc->w[2]}}, 0.05f, 0.01f);
        int b = constant(g, "b", shp(1, (int)cc->w[0]), 0.3f, 0.2f);
        int y = op(g, "conv", OP_Conv, cc->bias ? 3 : 2, (const int[]){xin, w, b});
        int node = node_named(g, "conv");
        attr_ints(g, node, "pads", 2, cc->pads);
        attr_ints(g, node, "strides", 1, &cc->stride);
        attr_ints(g, node, "dilations", 1, &cc->dil);
        attr_int(g, node, "group", cc->group);
        ir_graph_set_io(g, 1, &x, 1, &y);
        smelt_program *p = compile(g, 0);
        CHECK(p != NULL);
        if (p) {
            CHECK_EQ_INT(p->lp.n_kernels, 1);
            CHECK_EQ_INT(workgroup_tiles(p), cc->tiles);
            float *x0 = malloc(sizeof(float) * (size_t)(N * C * L0)), *xd = malloc(sizeof(float) * (size_t)(N * C * L));
            for (int64_t k = 0; k < N * C * L0; k++) x0[k] = (float)((k * 37) % 19 - 9) / 4.0f;
            for (int64_t r = 0; r < N * C; r++)
                for (int64_t t = 0; t < L; t++) {
                    int64_t s = t - R;
                    s = s < 0 ? -s : s >= L0 ? 2 * (L0 - 1) - s : s;
                    xd[r * L + t] = x0[r * L0 + s];
                }
            smelt_tensor in = {.name = "x", .dtype = SMELT_F32, .rank = 3, .shape = {N, C, L0}, .data = x0}, out = {0};
            CHECK(smelt_program_run(p, 1, &in) == SMELT_OK);
            CHECK(smelt_program_output(p, 0, &out) == SMELT_OK);
            int64_t ny = smelt_tensor_numel(&out), ol = out.shape[2];
            CHECK_EQ_INT(ol, (L + cc->pads[0] + cc->pads[1] - (cc->w[2] - 1) * cc->dil - 1) / cc->stride + 1);
            double *ref = calloc((size_t)ny, sizeof(double));
            convw_ref(cc, xd, g->tensors[w].data, g->tensors[b].data, ol, ref);
            const float *yd = out.data;
            int bad = 0;
            for (int64_t k = 0; k < ny && bad < 3; k++)
                if (fabs(yd[k] - ref[k]) > 1e-4 * (1 + fabs(ref[k]))) {
                    fprintf(stderr, "  case %d [%lld]: %g, want %g\n", i, (long long)k, yd[k], ref[k]);
                    bad++;
                }
            CHECK(bad == 0);
            free(ref);
            free(xd);
            free(x0);
        }
        smelt_program_free(p);
        ir_graph_free(g);
    }
}
