/* Attribute parsing (ir/ops.h op_params): each family's parse writes its
 * defaults once and refuses a bad value with a message naming the node, the
 * attribute and the rule; the shape rule and the lowerings read the result. */
#include <string.h>

#include "ir/ir.h"
#include "ir/ops.h"
#include "ir/op_params.h"
#include "ops/attention.h"
#include "ops/conv.h"
#include "ops/einsum.h"
#include "ops/elementwise.h"
#include "ops/gather_scatter.h"
#include "ops/generate.h"
#include "ops/layout.h"
#include "ops/loss.h"
#include "ops/norm.h"
#include "ops/quantize.h"
#include "ops/recurrent.h"
#include "ops/recurrent_params.h"
#include "ops/reduce.h"
#include "ops/resize.h"
#include "ops/shape.h"
#include "fuse_cases.h"
#include "test.h"

/* A node of `op` with one fresh input and output (parse reads only attributes). */
static int bare_node(ir_graph *g, const char *name, op_id op)
{
    int x = ir_tensor_add(g, "x", SMELT_F32, NULL), y = ir_tensor_add(g, "y", SMELT_UNDEFINED, NULL);
    return ir_node_add(g, name, op, 1, (int[]){x}, 1, (int[]){y});
}

/* Node n's params, parsed (ir_node_parse_params); NULL when the parse failed. */
static const void *parsed(ir_graph *g, int n, smelt_status want)
{
    CHECK_EQ_INT(ir_node_parse_params(g, n), want);
    return g->nodes[n].params;
}

TEST(params_window_defaults_and_errors)
{
    ir_graph *g = ir_graph_new();
    int n = bare_node(g, "c", OP_Conv);
    const window_params *p = parsed(g, n, SMELT_OK);
    CHECK(p != NULL);
    if (p) {
        CHECK_EQ_INT(p->n_kernel, -1);
        CHECK_EQ_INT(p->n_strides, -1);
        CHECK_EQ_INT(p->n_pads, -1);
        CHECK_EQ_INT(p->group, 1);
        CHECK_EQ_INT(p->auto_pad, PAD_NOTSET);
        CHECK_EQ_INT(p->ceil_mode, 0);
        for (int i = 0; i < WINDOW_MAX_SPATIAL; i++) {
            CHECK_EQ_INT(p->strides[i], 1);
            CHECK_EQ_INT(p->dilations[i], 1);
            CHECK_EQ_INT(p->pads[i], 0);
            CHECK_EQ_INT(p->output_padding[i], 0);
        }
    }
    n = bare_node(g, "c2", OP_ConvTranspose);
    attr_ints(g, n, "strides", 2, (int64_t[]){2, 3});
    attr_str(g, n, "auto_pad", "SAME_LOWER");
    attr_int(g, n, "group", 4);
    p = parsed(g, n, SMELT_OK);
    CHECK(p != NULL);
    if (p) {
        CHECK_EQ_INT(p->n_strides, 2);
        CHECK_EQ_INT(p->strides[1], 3);
        CHECK_EQ_INT(p->strides[2], 1);
        CHECK_EQ_INT(p->auto_pad, PAD_SAME_LOWER);
        CHECK_EQ_INT(p->group, 4);
    }
    n = bare_node(g, "c3", OP_Conv);
    attr_int(g, n, "group", 0);
    CHECK(parsed(g, n, SMELT_ERR_MODEL) == NULL);
    CHECK_STR_HAS(smelt_last_error(), "node 'c3' (Conv): group 0 must be >= 1");
    n = bare_node(g, "mp", OP_MaxPool);
    attr_ints(g, n, "strides", 2, (int64_t[]){1, 0});
    CHECK(parsed(g, n, SMELT_ERR_MODEL) == NULL);
    CHECK_STR_HAS(smelt_last_error(), "node 'mp' (MaxPool): attribute strides[1] = 0 must be in 1..2^40");
    n = bare_node(g, "ap", OP_AveragePool);
    attr_ints(g, n, "pads", 2, (int64_t[]){-1, 0});
    CHECK(parsed(g, n, SMELT_ERR_MODEL) == NULL);
    CHECK_STR_HAS(smelt_last_error(), "node 'ap' (AveragePool): attribute pads[0] = -1 must be in 0..2^40");
    n = bare_node(g, "lp", OP_LpPool);
    attr_str(g, n, "auto_pad", "SAME");
    CHECK(parsed(g, n, SMELT_ERR_MODEL) == NULL);
    CHECK_STR_HAS(smelt_last_error(), "node 'lp' (LpPool): auto_pad 'SAME' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID");
    n = bare_node(g, "c4", OP_Conv);
    attr_ints(g, n, "dilations", 7, (int64_t[]){1, 1, 1, 1, 1, 1, 1});
    CHECK(parsed(g, n, SMELT_ERR_MODEL) == NULL);
    CHECK_STR_HAS(smelt_last_error(), "node 'c4' (Conv): attribute dilations has 7 values, at most 6");
    ir_graph_free(g);
}

TEST(params_pool_defaults_and_errors)
{
    ir_graph *g = ir_graph_new();
    int n = bare_node(g, "mp", OP_MaxPool);
    const window_params *p = parsed(g, n, SMELT_OK);
    CHECK(p != NULL);
    if (p) {
        CHECK_EQ_INT(p->storage_order, 0);
        CHECK_EQ_INT(p->count_include_pad, 0);
        CHECK_EQ_INT(p->p, 2);
    }
    n = bare_node(g, "ap", OP_AveragePool);
    attr_int(g, n, "count_include_pad", 1);
    attr_int(g, n, "ceil_mode", 1);
    p = parsed(g, n, SMELT_OK);
    CHECK(p && p->count_include_pad && p->ceil_mode);
    n = bare_node(g, "lp", OP_LpPool);
    attr_int(g, n, "p", 0);
    CHECK(parsed(g, n, SMELT_ERR_MODEL) == NULL);
    CHECK_STR_HAS(smelt_last_error(), "node 'lp' (LpPool): attribute p = 0 must be >= 1");
    ir_graph_free(g);
}

TEST(params_norm_defaults_and_errors)
{
    ir_graph *g = ir_graph_new();
    int n = bare_node(g, "ln", OP_LayerNormalization);
    const norm_params *p = parsed(g, n, SMELT_OK);
    CHECK(p != NULL);
    if (p) {
        CHECK_EQ_INT(p->axis, -1);
        CHECK_NEAR(p->epsilon, 1e-5, 1e-12);
        CHECK_EQ_INT(p->stash, SMELT_F32);
        CHECK_EQ_INT(p->n_axes, -1);
    }
    n = bare_node(g, "lrn", OP_LRN);
    attr_int(g, n, "size", 5);
    p = parsed(g, n, SMELT_OK);
    CHECK(p != NULL);
    if (p) {
        CHECK_EQ_INT(p->size, 5);
        CHECK_NEAR(p->alpha, 1e-4, 1e-10);
        CHECK_NEAR(p->beta, 0.75, 1e-7);
        CHECK_NEAR(p->bias, 1.0, 1e-7);
    }
    n = bare_node(g, "bn", OP_BatchNormalization);
    const batchnorm_params *bp = parsed(g, n, SMELT_OK);
    CHECK(bp && bp->epsilon > 0.99e-5f && bp->epsilon < 1.01e-5f);
    n = bare_node(g, "bn2", OP_BatchNormalization);
    attr_int(g, n, "training_mode", 1);
    CHECK(parsed(g, n, SMELT_ERR_UNSUPPORTED) == NULL);
    CHECK_STR_HAS(smelt_last_error(), "node 'bn2' (BatchNormalization): training_mode=1 is not supported");
    n = bare_node(g, "gn", OP_GroupNormalization);
    CHECK(parsed(g, n, SMELT_ERR_MODEL) == NULL);
    CHECK_STR_HAS(smelt_last_error(), "node 'gn' (GroupNormalization): attribute num_groups = 0 must be >= 1 (it is required)");
    n = bare_node(g, "lrn2", OP_LRN);
    CHECK(parsed(g, n, SMELT_ERR_MODEL) == NULL);
    CHECK_STR_HAS(smelt_last_error(), "node 'lrn2' (LRN): attribute 'size' = 0 must be in 1..2^40");
    n = bare_node(g, "lpn", OP_LpNormalization);
    attr_int(g, n, "p", 3);
    CHECK(parsed(g, n, SMELT_ERR_MODEL) == NULL);
    CHECK_STR_HAS(smelt_last_error(), "node 'lpn' (LpNormalization): p = 3 must be 1 or 2");
    n = bare_node(g, "ln2", OP_LayerNormalization);
    attr_int(g, n, "stash_type", 10);
    CHECK(parsed(g, n, SMELT_ERR_UNSUPPORTED) == NULL);
    CHECK_STR_HAS(smelt_last_error(), "node 'ln2' (LayerNormalization): stash_type 10 is not supported");
    ir_graph_free(g);
}

TEST(params_recurrent_defaults_and_errors)
{
    ir_graph *g = ir_graph_new();
    int n = bare_node(g, "lstm", OP_LSTM);
    const rnn_params *p = parsed(g, n, SMELT_OK);
    CHECK(p != NULL);
    if (p) {
        CHECK(p->cell == CELL_LSTM && p->gates == 4 && p->n_fn == 3 && p->dirs == 1 && !p->reverse[0]);
        CHECK(p->layout == 0 && !p->has_clip && !p->input_forget && !p->packed && p->hidden_size == -1);
        CHECK(p->fn[0][0].act == ACT_SIGMOID && p->fn[0][1].act == ACT_TANH && p->fn[0][2].act == ACT_TANH);
    }
    n = bare_node(g, "gru", OP_PackedGRU);
    attr_str(g, n, "direction", "bidirectional");
    attr_int(g, n, "linear_before_reset", 1);
    attr_int(g, n, "hidden_size", 7);
    p = parsed(g, n, SMELT_OK);
    CHECK(p && p->cell == CELL_GRU && p->packed && p->dirs == 2 && p->reverse[1] && p->lbr && p->hidden_size == 7);
    n = bare_node(g, "rnn", OP_RNN);
    attr_str(g, n, "direction", "sideways");
    CHECK(parsed(g, n, SMELT_ERR_MODEL) == NULL);
    CHECK_STR_HAS(smelt_last_error(), "node 'rnn' (RNN): direction 'sideways' must be forward, reverse or bidirectional");
    n = bare_node(g, "rnn2", OP_RNN);
    attr_int(g, n, "layout", 2);
    CHECK(parsed(g, n, SMELT_ERR_MODEL) == NULL);
    CHECK_STR_HAS(smelt_last_error(), "node 'rnn2' (RNN): layout 2 must be 0 or 1");
    ir_graph_free(g);
}

TEST(params_loss_defaults_and_errors)
{
    ir_graph *g = ir_graph_new();
    int n = bare_node(g, "sce", OP_SoftmaxCrossEntropyLoss);
    const loss_params *p = parsed(g, n, SMELT_OK);
    CHECK(p && p->reduction == LOSS_MEAN && !p->has_ignore);
    n = bare_node(g, "nll0", OP_NegativeLogLikelihoodLoss);
    attr_str(g, n, "reduction", "none");
    attr_int(g, n, "ignore_index", -1);
    p = parsed(g, n, SMELT_OK);
    CHECK(p && p->reduction == LOSS_NONE && p->has_ignore && p->ignore_index == -1);
    n = bare_node(g, "nll", OP_NegativeLogLikelihoodLoss);
    attr_str(g, n, "reduction", "max");
    CHECK(parsed(g, n, SMELT_ERR_MODEL) == NULL);
    CHECK_STR_HAS(smelt_last_error(), "node 'nll' (NegativeLogLikelihoodLoss): reduction 'max' must be none, sum or mean");
    ir_graph_free(g);
}

TEST(params_reduce_defaults_and_errors)
{
    ir_graph *g = ir_graph_new();
    g->opset = 11;
    int n = bare_node(g, "sm11", OP_Softmax);
    const reduce_params *p = parsed(g, n, SMELT_OK);
    CHECK(p && p->axis == 1); /* coerced to 2-D at axis 1 before opset 13 */
    n = bare_node(g, "rs", OP_ReduceSum);
    attr_ints(g, n, "axes", 2, (int64_t[]){0, -1});
    p = parsed(g, n, SMELT_OK);
    CHECK(p != NULL);
    if (p) {
        CHECK_EQ_INT(p->keepdims, 1);
        CHECK_EQ_INT(p->n_axes, 2);
        CHECK_EQ_INT(p->axes[1], -1);
        CHECK_EQ_INT(p->noop_with_empty_axes, 0);
    }
    n = bare_node(g, "rm", OP_ReduceMean);
    int64_t many[IR_MAX_RANK * 2 + 1] = {0};
    attr_ints(g, n, "axes", IR_MAX_RANK * 2 + 1, many);
    CHECK(parsed(g, n, SMELT_ERR_MODEL) == NULL);
    CHECK_STR_HAS(smelt_last_error(), "node 'rm' (ReduceMean): too many axes");
    g->opset = 18;
    n = bare_node(g, "sm18", OP_LogSoftmax);
    p = parsed(g, n, SMELT_OK);
    CHECK(p && p->axis == -1);
    n = bare_node(g, "am", OP_ArgMin);
    attr_int(g, n, "keepdims", 0);
    attr_int(g, n, "select_last_index", 1);
    p = parsed(g, n, SMELT_OK);
    CHECK(p && p->axis == 0 && !p->keepdims && p->select_last_index);
    n = bare_node(g, "rmax", OP_ReduceMax);
    attr_ints(g, n, "axes", 1, (int64_t[]){1}); /* an input from opset 18: the attribute is not read */
    p = parsed(g, n, SMELT_OK);
    CHECK(p && p->n_axes == -1);
    ir_graph_free(g);
}

TEST(params_gemm_defaults)
{
    ir_graph *g = ir_graph_new();
    int n = bare_node(g, "gemm", OP_Gemm);
    const gemm_params *p = parsed(g, n, SMELT_OK);
    CHECK(p && !p->trans_a && !p->trans_b && p->alpha == 1.0f && p->beta == 1.0f);
    n = bare_node(g, "gemm2", OP_Gemm);
    attr_int(g, n, "transB", 1);
    ir_attr al = {.name = "alpha", .type = IR_ATTR_FLOAT, .f = 0.5f};
    ir_node_attr_add(g, n, &al);
    p = parsed(g, n, SMELT_OK);
    CHECK(p && !p->trans_a && p->trans_b && p->alpha == 0.5f && p->beta == 1.0f);
    ir_graph_free(g);
}

TEST(params_gather_defaults_and_errors)
{
    ir_graph *g = ir_graph_new();
    int n = bare_node(g, "ga", OP_Gather);
    const gather_params *p = parsed(g, n, SMELT_OK);
    CHECK(p && p->axis == 0 && p->batch_dims == 0 && p->reduction == SC_NONE);
    n = bare_node(g, "snd", OP_ScatterND);
    attr_str(g, n, "reduction", "max");
    p = parsed(g, n, SMELT_OK);
    CHECK(p && p->reduction == SC_MAX);
    n = bare_node(g, "se", OP_ScatterElements);
    attr_str(g, n, "reduction", "avg");
    CHECK(parsed(g, n, SMELT_ERR_MODEL) == NULL);
    CHECK_STR_HAS(smelt_last_error(), "node 'se' (ScatterElements): reduction 'avg' must be none, add, mul, max or min");
    ir_graph_free(g);
}

TEST(params_layout_defaults_and_errors)
{
    ir_graph *g = ir_graph_new();
    int n = bare_node(g, "fl", OP_Flatten);
    const layout_params *p = parsed(g, n, SMELT_OK);
    CHECK(p && p->axis == 1 && !p->allowzero && p->upper && p->n_perm == -1 && p->n_axes == -1);
    n = bare_node(g, "sp", OP_Split);
    p = parsed(g, n, SMELT_OK);
    CHECK(p && p->axis == 0 && p->num_outputs == 1 && !p->has_num_outputs);
    n = bare_node(g, "pad", OP_Pad);
    p = parsed(g, n, SMELT_OK);
    CHECK(p && p->mode == PAD_CONSTANT && p->value == 0.0f && !p->lists_are_attrs);
    n = bare_node(g, "tr", OP_Transpose);
    attr_ints(g, n, "perm", 3, (int64_t[]){2, 0, 1});
    p = parsed(g, n, SMELT_OK);
    CHECK(p && p->n_perm == 3 && p->perm[0] == 2 && p->perm[2] == 1);
    n = bare_node(g, "cat", OP_Concat);
    CHECK(parsed(g, n, SMELT_ERR_MODEL) == NULL);
    CHECK_STR_HAS(smelt_last_error(), "node 'cat' (Concat): attribute 'axis' is required");
    n = bare_node(g, "d2s", OP_DepthToSpace);
    attr_int(g, n, "blocksize", 2);
    attr_str(g, n, "mode", "RDC");
    CHECK(parsed(g, n, SMELT_ERR_MODEL) == NULL);
    CHECK_STR_HAS(smelt_last_error(), "node 'd2s' (DepthToSpace): mode 'RDC' is neither DCR nor CRD");
    n = bare_node(g, "s2d", OP_SpaceToDepth);
    CHECK(parsed(g, n, SMELT_ERR_MODEL) == NULL);
    CHECK_STR_HAS(smelt_last_error(), "node 's2d' (SpaceToDepth): attribute 'blocksize' (1..2^20) is required");
    n = bare_node(g, "pad2", OP_Pad);
    attr_str(g, n, "mode", "mirror");
    CHECK(parsed(g, n, SMELT_ERR_UNSUPPORTED) == NULL);
    CHECK_STR_HAS(smelt_last_error(), "node 'pad2' (Pad): pad mode 'mirror' is not supported");
    ir_graph_free(g);
}

TEST(params_elementwise_defaults_and_errors)
{
    ir_graph *g = ir_graph_new();
    int n = bare_node(g, "lr", OP_LeakyRelu);
    const elementwise_params *p = parsed(g, n, SMELT_OK);
    CHECK(p && p->alpha == 0.01f);
    n = bare_node(g, "selu", OP_Selu);
    p = parsed(g, n, SMELT_OK);
    CHECK(p && p->alpha == 1.67326319217681884765625f && p->gamma == 1.05070102214813232421875f);
    n = bare_node(g, "hs", OP_HardSigmoid);
    p = parsed(g, n, SMELT_OK);
    CHECK(p && p->alpha == 0.2f && p->beta == 0.5f);
    n = bare_node(g, "elu", OP_Elu);
    p = parsed(g, n, SMELT_OK);
    CHECK(p && p->alpha == 1.0f);
    n = bare_node(g, "clip", OP_Clip);
    ir_attr lo = {.name = "min", .type = IR_ATTR_FLOAT, .f = -1.5f};
    ir_node_attr_add(g, n, &lo);
    p = parsed(g, n, SMELT_OK);
    CHECK(p && p->has_min && p->min == -1.5f && !p->has_max);
    n = bare_node(g, "isinf", OP_IsInf);
    p = parsed(g, n, SMELT_OK);
    CHECK(p && p->detect_positive && p->detect_negative && !p->fmod && !p->gelu_tanh && p->shift_left);
    n = bare_node(g, "cast", OP_Cast);
    CHECK(parsed(g, n, SMELT_ERR_MODEL) == NULL);
    CHECK_STR_HAS(smelt_last_error(), "node 'cast' (Cast): attribute 'to' is required");
    n = bare_node(g, "gelu", OP_Gelu);
    attr_str(g, n, "approximate", "fast");
    CHECK(parsed(g, n, SMELT_ERR_MODEL) == NULL);
    CHECK_STR_HAS(smelt_last_error(), "node 'gelu' (Gelu): approximate 'fast' must be none or tanh");
    n = bare_node(g, "shift", OP_BitShift);
    attr_str(g, n, "direction", "UP");
    CHECK(parsed(g, n, SMELT_ERR_MODEL) == NULL);
    CHECK_STR_HAS(smelt_last_error(), "node 'shift' (BitShift): direction 'UP' must be LEFT or RIGHT");
    ir_graph_free(g);
}

TEST(params_resize_defaults_and_errors)
{
    ir_graph *g = ir_graph_new();
    g->opset = 19;
    int n = bare_node(g, "rs", OP_Resize);
    const resize_params *p = parsed(g, n, SMELT_OK);
    CHECK(p != NULL);
    if (p) {
        CHECK_EQ_INT(p->kind, 0);
        CHECK_STR_HAS(p->coord, "half_pixel");
        CHECK_STR_HAS(p->nearest, "round_prefer_floor");
        CHECK_NEAR(p->cubic_coeff_a, -0.75, 1e-9);
        CHECK(!p->exclude_outside && !p->antialias && p->extrapolation_value == 0.0);
        CHECK_EQ_INT(p->keep_aspect, 0);
        CHECK_EQ_INT(p->n_axes, -1);
        CHECK_EQ_INT(p->n_scales, -1);
    }
    n = bare_node(g, "rs2", OP_Resize);
    attr_str(g, n, "mode", "cubic");
    attr_str(g, n, "keep_aspect_ratio_policy", "not_smaller");
    p = parsed(g, n, SMELT_OK);
    CHECK(p && p->kind == 2 && p->keep_aspect == 2);
    n = bare_node(g, "rs3", OP_Resize);
    attr_str(g, n, "coordinate_transformation_mode", "tf_half_pixel_for_nn");
    CHECK(parsed(g, n, SMELT_ERR_MODEL) == NULL);
    CHECK_STR_HAS(smelt_last_error(), "node 'rs3' (Resize): coordinate_transformation_mode 'tf_half_pixel_for_nn' is unknown at opset 19");
    n = bare_node(g, "rs4", OP_Resize);
    attr_str(g, n, "mode", "area");
    CHECK(parsed(g, n, SMELT_ERR_MODEL) == NULL);
    CHECK_STR_HAS(smelt_last_error(), "node 'rs4' (Resize): mode 'area' is not nearest, linear or cubic");
    g->opset = 9;
    n = bare_node(g, "up", OP_Upsample);
    attr_str(g, n, "mode", "bilinear");
    p = parsed(g, n, SMELT_OK);
    CHECK(p && p->kind == 1 && !strcmp(p->coord, "asymmetric"));
    ir_graph_free(g);
}

TEST(params_quantize_defaults_and_errors)
{
    ir_graph *g = ir_graph_new();
    int n = bare_node(g, "q", OP_QuantizeLinear);
    const quantize_params *p = parsed(g, n, SMELT_OK);
    CHECK(p && p->axis == 1 && p->block_size == 0 && p->output_dtype == SMELT_UNDEFINED);
    n = bare_node(g, "dq", OP_DequantizeLinear);
    attr_int(g, n, "block_size", -2);
    CHECK(parsed(g, n, SMELT_ERR_MODEL) == NULL);
    CHECK_STR_HAS(smelt_last_error(), "node 'dq' (DequantizeLinear): block_size must be >= 0");
    ir_graph_free(g);
}

TEST(params_attention_defaults_and_errors)
{
    ir_graph *g = ir_graph_new();
    int n = bare_node(g, "att", OP_Attention);
    const attention_params *p = parsed(g, n, SMELT_OK);
    CHECK(p && !p->has_scale && p->softcap == 0.0f && p->qk_mode == 0 && !p->is_causal && p->q_num_heads == 0);
    n = bare_node(g, "rope", OP_RotaryEmbedding);
    attr_int(g, n, "interleaved", 1);
    p = parsed(g, n, SMELT_OK);
    CHECK(p && p->interleaved && p->rotary_embedding_dim == 0 && p->num_heads == 0);
    n = bare_node(g, "att2", OP_Attention);
    attr_int(g, n, "qk_matmul_output_mode", 4);
    CHECK(parsed(g, n, SMELT_ERR_MODEL) == NULL);
    CHECK_STR_HAS(smelt_last_error(), "node 'att2' (Attention): qk_matmul_output_mode 4 must be 0..3");
    ir_graph_free(g);
}

TEST(params_generate_defaults_and_errors)
{
    ir_graph *g = ir_graph_new();
    int n = bare_node(g, "oh", OP_OneHot);
    const generate_params *p = parsed(g, n, SMELT_OK);
    CHECK(p && p->axis == -1 && p->value == -1);
    n = bare_node(g, "eye", OP_EyeLike);
    p = parsed(g, n, SMELT_OK);
    CHECK(p && p->k == 0 && !p->has_dtype);
    n = bare_node(g, "win", OP_HannWindow);
    p = parsed(g, n, SMELT_OK);
    CHECK(p && p->periodic && p->dtype == SMELT_F32);
    n = bare_node(g, "shape", OP_Shape);
    attr_int(g, n, "end", -1);
    p = parsed(g, n, SMELT_OK);
    CHECK(p && p->start == 0 && p->has_end && p->end == -1);
    n = bare_node(g, "cos", OP_ConstantOfShape);
    attr_int(g, n, "value", 3);
    CHECK(parsed(g, n, SMELT_ERR_MODEL) == NULL);
    CHECK_STR_HAS(smelt_last_error(), "node 'cos' (ConstantOfShape): attribute 'value' must be a tensor");
    ir_graph_free(g);
}

TEST(params_einsum_parse_and_errors)
{
    ir_graph *g = ir_graph_new();
    int n = bare_node(g, "es", OP_Einsum);
    attr_str(g, n, "equation", "...i j->j...");
    const einsum_params *p = parsed(g, n, SMELT_OK);
    CHECK(p && p->n_terms == 1 && p->n_item[0] == 3 && p->item[0][0] == EINSUM_ELL && p->item[0][1] == 8 &&
          p->item[0][2] == 9 && p->has_ell[0] && p->has_arrow && p->n_out_item == 2 && p->out_item[0] == 9 &&
          p->out_item[1] == EINSUM_ELL && p->letter_used[8] && !p->letter_used[0]);
    n = bare_node(g, "es2", OP_Einsum);
    attr_str(g, n, "equation", "Ab");
    p = parsed(g, n, SMELT_OK);
    CHECK(p && !p->has_arrow && p->item[0][0] == 26 && p->item[0][1] == 1);
    const struct {
        const char *eq, *msg;
    } bad[] = {
        {"i..j->ij", "equation term 0 of 'i..j->ij' does not match input 0 of rank 0"},
        {"...i...->i", "equation term 0 of '...i...->i' does not match input 0"},
        {"abcdefghi", "equation term 0 of 'abcdefghi' does not match input 0"},
        {"i1->i", "equation term 0 of 'i1->i' does not match input 0"},
        {"ij,jk->ik", "equation 'ij,jk->ik' has 2 input terms for 1 inputs"},
        {"ij->i-", "malformed output term in 'ij->i-'"},
        {"ij->ik", "output label in 'ij->ik' appears in no input"},
        {"ij->ii", "output label repeated in 'ij->ii'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        n = bare_node(g, "bad", OP_Einsum);
        attr_str(g, n, "equation", bad[i].eq);
        CHECK(parsed(g, n, SMELT_ERR_MODEL) == NULL);
        CHECK_STR_HAS(smelt_last_error(), "node 'bad' (Einsum): ");
        CHECK_STR_HAS(smelt_last_error(), bad[i].msg);
    }
    n = bare_node(g, "none", OP_Einsum);
    CHECK(parsed(g, n, SMELT_ERR_MODEL) == NULL);
    CHECK_STR_HAS(smelt_last_error(), "node 'none' (Einsum): missing attribute 'equation'");
    ir_graph_free(g);
}

TEST(params_layout_attribute_lists)
{
    ir_graph *g = ir_graph_new();
    int n = bare_node(g, "sl", OP_Slice);
    attr_ints(g, n, "starts", 2, (int64_t[]){1, 2});
    attr_ints(g, n, "ends", 2, (int64_t[]){3, 4});
    const layout_params *p = parsed(g, n, SMELT_OK);
    CHECK(p && p->lists_are_attrs && p->n_list[LIST_STARTS] == 2 && p->list[LIST_STARTS][1] == 2 &&
          p->n_list[LIST_ENDS] == 2 && p->list[LIST_ENDS][0] == 3 && p->n_list[LIST_AXES] == -1);
    n = bare_node(g, "sq", OP_Squeeze);
    attr_ints(g, n, "axes", 1, (int64_t[]){-1});
    p = parsed(g, n, SMELT_OK);
    CHECK(p && p->n_list[LIST_SQ_AXES] == 1 && p->list[LIST_SQ_AXES][0] == -1);
    n = bare_node(g, "sp", OP_Split);
    p = parsed(g, n, SMELT_OK);
    CHECK(p && p->n_list[LIST_SPLIT] == -1);
    int64_t many[2 * MAX_LIST + 1] = {0};
    n = bare_node(g, "pad", OP_Pad);
    attr_ints(g, n, "pads", 2 * MAX_LIST + 1, many);
    CHECK(parsed(g, n, SMELT_ERR_SHAPE) == NULL);
    CHECK_STR_HAS(smelt_last_error(), "node 'pad' (Pad): attribute 'pads' has 129 values, more than the 128 supported");
    ir_graph_free(g);
}

/* The kernel comments' parameters (op_describe) come from the params. */
TEST(params_describe_window_and_reduce)
{
    ir_graph *g = ir_graph_new();
    g->opset = 11;
    char d[128];
    int n = bare_node(g, "mp", OP_MaxPool);
    attr_ints(g, n, "kernel_shape", 2, (int64_t[]){3, 3});
    attr_ints(g, n, "strides", 2, (int64_t[]){2, 1});
    attr_ints(g, n, "pads", 4, (int64_t[]){1, 1, 1, 1});
    attr_ints(g, n, "dilations", 2, (int64_t[]){1, 1});
    CHECK(parsed(g, n, SMELT_OK) != NULL);
    op_describe[OP_MaxPool](g, &g->nodes[n], d, sizeof d);
    CHECK(strcmp(d, ": 3x3 stride 2x1 pad 1") == 0);
    n = bare_node(g, "rs", OP_ReduceSum);
    attr_ints(g, n, "axes", 2, (int64_t[]){1, -1});
    CHECK(parsed(g, n, SMELT_OK) != NULL);
    op_describe[OP_ReduceSum](g, &g->nodes[n], d, sizeof d);
    CHECK(strcmp(d, ": axes 1,-1") == 0);
    n = bare_node(g, "sm", OP_Softmax);
    op_describe[OP_Softmax](g, &g->nodes[n], d, sizeof d); /* unparsed: parsed into scratch */
    CHECK(strcmp(d, "") == 0);
    attr_int(g, n, "axis", 2);
    CHECK(parsed(g, n, SMELT_OK) != NULL);
    op_describe[OP_Softmax](g, &g->nodes[n], d, sizeof d);
    CHECK(strcmp(d, ": axis 2") == 0);
    CHECK(op_describe[OP_Relu] == NULL);
    ir_graph_free(g);
}
