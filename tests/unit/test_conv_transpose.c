/*
 * test_conv_transpose.c — ConvTranspose's phase form (1-D and 2-D on the CPU)
 * and gather form against a direct scatter reference, on the odd shapes that
 * break a phase decomposition: strides that do not divide the kernel, pads
 * (asymmetric, and negative from an output_shape past the full result),
 * output_padding, dilations that leave a phase without taps, groups, output
 * channels not a multiple of the block, input channels not a multiple of the
 * channel group, batch 2, a fused Relu.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/program.h"
#include "test.h"
#include "fuse_cases.h"

typedef struct convt_case {
    int rank;              /* of x: 3 or 4 */
    int64_t x[4], w[4];    /* w: [C, M / group, k...] */
    int64_t group, pads[4], stride[2], dil[2], opad[2];
    int64_t oshape[2];     /* output_shape (spatial), or 0: none */
    int64_t pad_lo[2];     /* with output_shape: the begin pads it implies */
    bool bias, relu, phase;
} convt_case;

/* The full scatter result y_full[i*s + k*d] += x[i] * W[k], cropped by
 * pad_lo into the output (zero where the crop runs past it), plus bias. */
static void convt_ref(const convt_case *cc, const float *x, const float *w, const float *b, const int64_t *yd, double *y)
{
    int ns = cc->rank - 2;
    int64_t C = cc->x[1], cg = C / cc->group, mg = cc->w[1], M = mg * cc->group;
    int64_t H = ns == 2 ? cc->x[2] : 1, W = cc->x[ns + 1], KH = ns == 2 ? cc->w[2] : 1, KW = cc->w[ns + 1];
    int64_t OH = ns == 2 ? yd[2] : 1, OW = yd[ns + 1];
    int64_t sh = ns == 2 ? cc->stride[0] : 1, sw = cc->stride[ns - 1], dh = ns == 2 ? cc->dil[0] : 1, dw = cc->dil[ns - 1];
    int64_t ph, pw;
    if (cc->oshape[0]) {
        ph = ns == 2 ? cc->pad_lo[0] : 0;
        pw = cc->pad_lo[ns - 1];
    } else {
        ph = ns == 2 ? cc->pads[0] : 0;
        pw = cc->pads[ns - 1];
    }
    for (int64_t k = 0; k < cc->x[0] * M * OH * OW; k++) y[k] = cc->bias ? b[k / (OH * OW) % M] : 0;
    for (int64_t n = 0; n < cc->x[0]; n++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t ih = 0; ih < H; ih++)
                for (int64_t iw = 0; iw < W; iw++)
                    for (int64_t ml = 0; ml < mg; ml++)
                        for (int64_t kh = 0; kh < KH; kh++)
                            for (int64_t kw = 0; kw < KW; kw++) {
                                int64_t oh = ih * sh + kh * dh - ph, ow = iw * sw + kw * dw - pw;
                                if (oh < 0 || oh >= OH || ow < 0 || ow >= OW) continue;
                                int64_t m = c / cg * mg + ml;
                                y[((n * M + m) * OH + oh) * OW + ow] += (double)x[((n * C + c) * H + ih) * W + iw] *
                                                                        w[((c * mg + ml) * KH + kh) * KW + kw];
                            }
    if (cc->relu)
        for (int64_t k = 0; k < cc->x[0] * M * OH * OW; k++) y[k] = y[k] > 0 ? y[k] : 0;
}

TEST(conv_transpose_phase_and_gather_forms_match_a_scatter_reference)
{
    static const convt_case cases[] = {
        /* kernel = stride 2 (a text detector's upsampling), fused Relu */
        {4, {1, 8, 5, 6}, {8, 8, 2, 2}, 1, {0}, {2, 2}, {1, 1}, {0}, {0}, {0}, true, true, true},
        /* one output channel (block 1), 5 input channels (a group of 4 and a tail of 1) */
        {4, {1, 5, 4, 7}, {5, 1, 2, 2}, 1, {0}, {2, 2}, {1, 1}, {0}, {0}, {0}, true, false, true},
        /* 3x3 stride 2, pads 1, output_padding 1, batch 2, 6 output channels (block 2) */
        {4, {2, 4, 5, 5}, {4, 6, 3, 3}, 1, {1, 1, 1, 1}, {2, 2}, {1, 1}, {1, 1}, {0}, {0}, true, false, true},
        /* asymmetric pads, strides (3, 2), dilation (2, 1) */
        {4, {1, 3, 4, 5}, {3, 4, 3, 3}, 1, {2, 0, 1, 3}, {3, 2}, {2, 1}, {0}, {0}, {0}, false, false, true},
        /* groups of 3 channels, strides (2, 1) */
        {4, {1, 6, 5, 4}, {6, 3, 3, 2}, 2, {0, 1, 1, 0}, {2, 1}, {1, 1}, {0}, {0}, {0}, true, false, true},
        /* 1x1 stride 2 with output_padding: three of four phases have no tap, only the bias */
        {4, {1, 4, 3, 3}, {4, 4, 1, 1}, 1, {0}, {2, 2}, {1, 1}, {1, 1}, {0}, {0}, true, false, true},
        /* dilation 2, stride 2: every tap in phase 0 */
        {4, {1, 3, 5, 5}, {3, 8, 3, 3}, 1, {0}, {2, 2}, {2, 2}, {0}, {0}, {0}, false, false, true},
        /* output_shape past the full 9 x 9 result: begin pads -1 and -2 */
        {4, {1, 2, 4, 4}, {2, 4, 3, 3}, 1, {0}, {2, 2}, {1, 1}, {0}, {11, 13}, {-1, -2}, true, false, true},
        /* 1-D, stride 3, pads (1, 2), output_padding 2, batch 2 */
        {3, {2, 6, 9}, {6, 8, 5}, 1, {1, 2}, {3}, {1}, {2}, {0}, {0}, true, false, true},
        /* stride 17: the gather form */
        {4, {1, 2, 3, 3}, {2, 2, 2, 2}, 1, {0}, {17, 17}, {1, 1}, {0}, {0}, {0}, true, false, false},
    };
    for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
        const convt_case *cc = &cases[i];
        int ns = cc->rank - 2;
        ir_graph *g = ir_graph_new();
        ir_shape xs = {.rank = cc->rank}, ws = {.rank = cc->rank};
        for (int d = 0; d < cc->rank; d++) {
            xs.dim[d] = cc->x[d];
            ws.dim[d] = cc->w[d];
        }
        int x = input(g, "x", xs);
        int w = constant(g, "w", ws, 0.5f, 0.1f);
        int b = constant(g, "b", shp(1, (int)(cc->w[1] * cc->group)), 0.3f, 0.2f);
        int y = op(g, "convt", OP_ConvTranspose, cc->bias ? 3 : 2, (const int[]){x, w, b});
        int node = node_named(g, "convt");
        if (cc->oshape[0]) attr_ints(g, node, "output_shape", ns, cc->oshape);
        else attr_ints(g, node, "pads", 2 * ns, cc->pads);
        attr_ints(g, node, "strides", ns, cc->stride);
        attr_ints(g, node, "dilations", ns, cc->dil);
        attr_ints(g, node, "output_padding", ns, cc->opad);
        attr_int(g, node, "group", cc->group);
        if (cc->relu) y = op1(g, "relu", OP_Relu, y);
        ir_graph_set_io(g, 1, &x, 1, &y);
        smelt_program *p = compile(g, 0);
        CHECK(p != NULL);
        if (p) {
            CHECK_EQ_INT(p->lp.n_kernels, 1);         /* the Relu fused */
            CHECK_EQ_INT(workgroup_tiles(p), cc->phase); /* the phase form's accumulators */
            int64_t nx = ir_shape_numel(&xs);
            float *xd = malloc(sizeof(float) * (size_t)nx);
            for (int64_t k = 0; k < nx; k++) xd[k] = (float)((k * 37) % 19 - 9) / 4.0f;
            smelt_tensor in = {.name = "x", .dtype = SMELT_F32, .rank = cc->rank, .data = xd}, out = {0};
            memcpy(in.shape, cc->x, sizeof(int64_t) * (size_t)cc->rank);
            CHECK(smelt_program_run(p, 1, &in) == SMELT_OK);
            CHECK(smelt_program_output(p, 0, &out) == SMELT_OK);
            int64_t ny = smelt_tensor_numel(&out);
            double *ref = calloc((size_t)ny, sizeof(double));
            convt_ref(cc, xd, g->tensors[w].data, g->tensors[b].data, out.shape, ref);
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
        }
        smelt_program_free(p);
        ir_graph_free(g);
    }
}
