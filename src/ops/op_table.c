/*
 * op_table.c — the op table: ir/ops.h's rows expanded with the functions of
 * each family (ops/<family>.h), and the GPU lowerings beside it.
 *
 * The rows live in ir/ops.h because graph/ and fuse/, which come before ops/,
 * read the table's kinds and shape rules through it; only this file needs the
 * functions' prototypes, so no earlier stage includes ops/.
 */
#include "graph/passes.h"
#include "ir/ops.h"

#include "ops/attention.h"
#include "ops/control.h"
#include "ops/conv.h"
#include "ops/conv_winograd.h"
#include "ops/einsum.h"
#include "ops/elementwise.h"
#include "ops/gather_scatter.h"
#include "ops/generate.h"
#include "ops/layout.h"
#include "ops/loss.h"
#include "ops/matmul.h"
#include "ops/norm.h"
#include "ops/pool.h"
#include "ops/quantize.h"
#include "ops/recurrent.h"
#include "ops/recurrent_params.h"
#include "ops/reduce.h"
#include "ops/resize.h"
#include "ops/scan_topk.h"

const op_info op_table[] = {
#define X(name, kind, mi, xi, mo, xo, vin, infer, scalar, elem, lower, flags, insert) \
    [OP_##name] = {#name, OPK_##kind, mi, xi, mo, xo, vin, infer, scalar, elem, lower, flags, insert},
    SMELT_OPS(X)
#undef X
};
_Static_assert(sizeof op_table / sizeof op_table[0] == OP_COUNT, "one op_table row per op_id");

/* Row reductions and tiled contractions have a workgroup-cooperative form on
 * targets with wg_size > 1; every other op is lowered the same on all targets
 * (lower_parallel_for spreads its elements over the workgroup's threads). */
const op_lower_fn op_gpu_lower[OP_COUNT] = {
    [OP_ReduceSum] = lower_gpu_Reduce, [OP_ReduceMean] = lower_gpu_Reduce, [OP_ReduceMax] = lower_gpu_Reduce,
    [OP_ReduceMin] = lower_gpu_Reduce, [OP_ReduceL1] = lower_gpu_Reduce, [OP_ReduceL2] = lower_gpu_Reduce,
    [OP_ReduceSumSquare] = lower_gpu_Reduce, [OP_ReduceLogSum] = lower_gpu_Reduce,
    [OP_Softmax] = lower_gpu_Softmax, [OP_LogSoftmax] = lower_gpu_Softmax,
    [OP_LayerNormalization] = lower_gpu_LayerNormalization,
    [OP_MatMul] = lower_gpu_MatMul, [OP_Gemm] = lower_gpu_Gemm, [OP_Conv] = lower_gpu_Conv,
};

/* Ops whose kernel comments name their parameters (ir/ops.h op_describe). */
const op_describe_fn op_describe[OP_COUNT] = {
    [OP_Conv] = describe_window, [OP_ConvTranspose] = describe_window, [OP_MaxPool] = describe_window,
    [OP_AveragePool] = describe_window, [OP_LpPool] = describe_window,
    [OP_Softmax] = describe_reduce, [OP_LogSoftmax] = describe_reduce, [OP_Hardmax] = describe_reduce,
    [OP_ReduceSum] = describe_reduce, [OP_ReduceMean] = describe_reduce, [OP_ReduceMax] = describe_reduce,
    [OP_ReduceMin] = describe_reduce, [OP_ReduceProd] = describe_reduce, [OP_ReduceSumSquare] = describe_reduce,
    [OP_ReduceLogSum] = describe_reduce, [OP_ReduceLogSumExp] = describe_reduce, [OP_ArgMax] = describe_reduce,
    [OP_ArgMin] = describe_reduce,
};

/* Ops whose attributes are parsed once into a params struct (ir/ops.h). */
const op_params_info op_params[OP_COUNT] = {
    [OP_TopK] = {parse_TopK, sizeof(topk_params)},
    [OP_CumSum] = {parse_scan, sizeof(scan_params)},
    [OP_CumProd] = {parse_scan, sizeof(scan_params)},
    [OP_Conv] = {parse_window, sizeof(window_params)},
    [OP_ConvTranspose] = {parse_window, sizeof(window_params)},
    [OP_MaxPool] = {parse_window, sizeof(window_params)},
    [OP_AveragePool] = {parse_window, sizeof(window_params)},
    [OP_LpPool] = {parse_window, sizeof(window_params)},
    [OP_BatchNormalization] = {parse_BatchNormalization, sizeof(batchnorm_params)},
    [OP_LayerNormalization] = {parse_norm, sizeof(norm_params)},
    [OP_InstanceNormalization] = {parse_norm, sizeof(norm_params)},
    [OP_LpNormalization] = {parse_norm, sizeof(norm_params)},
    [OP_RMSNormalization] = {parse_norm, sizeof(norm_params)},
    [OP_GroupNormalization] = {parse_norm, sizeof(norm_params)},
    [OP_MeanVarianceNormalization] = {parse_norm, sizeof(norm_params)},
    [OP_LRN] = {parse_norm, sizeof(norm_params)},
    [OP_NegativeLogLikelihoodLoss] = {parse_loss, sizeof(loss_params)},
    [OP_SoftmaxCrossEntropyLoss] = {parse_loss, sizeof(loss_params)},
    [OP_Gemm] = {parse_Gemm, sizeof(gemm_params)},
    [OP_Einsum] = {parse_Einsum, sizeof(einsum_params)},
    [OP_OneHot] = {parse_generate, sizeof(generate_params)},
    [OP_EyeLike] = {parse_generate, sizeof(generate_params)},
    [OP_HannWindow] = {parse_generate, sizeof(generate_params)},
    [OP_HammingWindow] = {parse_generate, sizeof(generate_params)},
    [OP_BlackmanWindow] = {parse_generate, sizeof(generate_params)},
    [OP_ConstantOfShape] = {parse_generate, sizeof(generate_params)},
    [OP_Shape] = {parse_generate, sizeof(generate_params)},
    [OP_Attention] = {parse_attention, sizeof(attention_params)},
    [OP_RotaryEmbedding] = {parse_attention, sizeof(attention_params)},
    [OP_QuantizeLinear] = {parse_quantize, sizeof(quantize_params)},
    [OP_DequantizeLinear] = {parse_quantize, sizeof(quantize_params)},
    [OP_Resize] = {parse_Resize, sizeof(resize_params)},
    [OP_Upsample] = {parse_Resize, sizeof(resize_params)},
    [OP_Cast] = {parse_elementwise, sizeof(elementwise_params)},
    [OP_Mod] = {parse_elementwise, sizeof(elementwise_params)},
    [OP_LeakyRelu] = {parse_elementwise, sizeof(elementwise_params)},
    [OP_Elu] = {parse_elementwise, sizeof(elementwise_params)},
    [OP_Selu] = {parse_elementwise, sizeof(elementwise_params)},
    [OP_Celu] = {parse_elementwise, sizeof(elementwise_params)},
    [OP_ThresholdedRelu] = {parse_elementwise, sizeof(elementwise_params)},
    [OP_Shrink] = {parse_elementwise, sizeof(elementwise_params)},
    [OP_Clip] = {parse_elementwise, sizeof(elementwise_params)},
    [OP_HardSigmoid] = {parse_elementwise, sizeof(elementwise_params)},
    [OP_Gelu] = {parse_elementwise, sizeof(elementwise_params)},
    [OP_IsInf] = {parse_elementwise, sizeof(elementwise_params)},
    [OP_BitShift] = {parse_elementwise, sizeof(elementwise_params)},
    [OP_Swish] = {parse_elementwise, sizeof(elementwise_params)},
    [OP_Reshape] = {parse_layout, sizeof(layout_params)},
    [OP_Flatten] = {parse_layout, sizeof(layout_params)},
    [OP_Transpose] = {parse_layout, sizeof(layout_params)},
    [OP_Concat] = {parse_layout, sizeof(layout_params)},
    [OP_Split] = {parse_layout, sizeof(layout_params)},
    [OP_Squeeze] = {parse_layout, sizeof(layout_params)},
    [OP_Unsqueeze] = {parse_layout, sizeof(layout_params)},
    [OP_DepthToSpace] = {parse_layout, sizeof(layout_params)},
    [OP_SpaceToDepth] = {parse_layout, sizeof(layout_params)},
    [OP_Pad] = {parse_layout, sizeof(layout_params)},
    [OP_Slice] = {parse_layout, sizeof(layout_params)},
    [OP_Trilu] = {parse_layout, sizeof(layout_params)},
    [OP_CenterCropPad] = {parse_layout, sizeof(layout_params)},
    [OP_Gather] = {parse_gather, sizeof(gather_params)},
    [OP_GatherElements] = {parse_gather, sizeof(gather_params)},
    [OP_GatherND] = {parse_gather, sizeof(gather_params)},
    [OP_ScatterElements] = {parse_gather, sizeof(gather_params)},
    [OP_Scatter] = {parse_gather, sizeof(gather_params)},
    [OP_ScatterND] = {parse_gather, sizeof(gather_params)},
    [OP_Softmax] = {parse_reduce, sizeof(reduce_params)},
    [OP_LogSoftmax] = {parse_reduce, sizeof(reduce_params)},
    [OP_Hardmax] = {parse_reduce, sizeof(reduce_params)},
    [OP_ReduceSum] = {parse_reduce, sizeof(reduce_params)},
    [OP_ReduceMean] = {parse_reduce, sizeof(reduce_params)},
    [OP_ReduceMax] = {parse_reduce, sizeof(reduce_params)},
    [OP_ReduceMin] = {parse_reduce, sizeof(reduce_params)},
    [OP_ReduceProd] = {parse_reduce, sizeof(reduce_params)},
    [OP_ReduceL1] = {parse_reduce, sizeof(reduce_params)},
    [OP_ReduceL2] = {parse_reduce, sizeof(reduce_params)},
    [OP_ReduceSumSquare] = {parse_reduce, sizeof(reduce_params)},
    [OP_ReduceLogSum] = {parse_reduce, sizeof(reduce_params)},
    [OP_ReduceLogSumExp] = {parse_reduce, sizeof(reduce_params)},
    [OP_ArgMax] = {parse_reduce, sizeof(reduce_params)},
    [OP_ArgMin] = {parse_reduce, sizeof(reduce_params)},
    [OP_RNN] = {parse_recurrent, sizeof(rnn_params)},
    [OP_GRU] = {parse_recurrent, sizeof(rnn_params)},
    [OP_LSTM] = {parse_recurrent, sizeof(rnn_params)},
    [OP_PackedRNN] = {parse_recurrent, sizeof(rnn_params)},
    [OP_PackedGRU] = {parse_recurrent, sizeof(rnn_params)},
    [OP_PackedLSTM] = {parse_recurrent, sizeof(rnn_params)},
    [OP_DynamicQuantizeLSTM] = {parse_recurrent, sizeof(rnn_params)},
};
