/*
 * ops_more.h — rows of the op table for ops beyond the core data and compute
 * sets (see ops.h for the columns): resampling, scatter/gather variants,
 * sorting, quantization, losses. Their functions live in graph/infer_more.c
 * and kernel/lower_more*.c:
 *   lower_more_norm.c      RMS/Group/MeanVariance normalization, LRN, losses
 *   lower_more_index.c     OneHot, EyeLike, windows, CenterCropPad, quantization
 *   lower_more_scatter.c   Scatter*, TopK, CumProd (multi-kernel, data-dependent writes)
 *   lower_more_resize.c    Resize, Upsample
 *   lower_more_einsum.c    Einsum
 *   lower_more_attention.c Attention, RotaryEmbedding
 *   lower_more_pool.c      LpPool (shape rule: infer_Pool of ops_compute.h)
 *   recurrent.c            RNN, GRU, LSTM (shape rule and lowering in one file)
 */
#ifndef SMELT_IR_OPS_MORE_H
#define SMELT_IR_OPS_MORE_H

struct ir_graph;
struct ir_node;
struct lower_ctx;
struct kir_kernel;

smelt_status infer_RMSNormalization(struct ir_graph *g, int node);
smelt_status infer_GroupNormalization(struct ir_graph *g, int node);
smelt_status infer_MeanVarianceNormalization(struct ir_graph *g, int node);
smelt_status infer_LRN(struct ir_graph *g, int node);
smelt_status infer_Swish(struct ir_graph *g, int node);
smelt_status infer_NegativeLogLikelihoodLoss(struct ir_graph *g, int node); /* also SoftmaxCrossEntropyLoss */
smelt_status infer_OneHot(struct ir_graph *g, int node);
smelt_status infer_EyeLike(struct ir_graph *g, int node);
smelt_status infer_Window(struct ir_graph *g, int node); /* Hann/Hamming/BlackmanWindow */
smelt_status infer_CenterCropPad(struct ir_graph *g, int node);
smelt_status infer_QuantizeLinear(struct ir_graph *g, int node);
smelt_status infer_DequantizeLinear(struct ir_graph *g, int node);
smelt_status infer_CumProd(struct ir_graph *g, int node);
smelt_status infer_TopK(struct ir_graph *g, int node);
smelt_status infer_ScatterElements(struct ir_graph *g, int node); /* also Scatter */
smelt_status infer_ScatterND(struct ir_graph *g, int node);
smelt_status infer_Resize(struct ir_graph *g, int node); /* also Upsample */
smelt_status infer_Einsum(struct ir_graph *g, int node);
smelt_status infer_Attention(struct ir_graph *g, int node);
smelt_status infer_RotaryEmbedding(struct ir_graph *g, int node);
smelt_status infer_Recurrent(struct ir_graph *g, int node); /* RNN, GRU, LSTM */

/* Resize/Upsample geometry, shared by the shape rule and the index map: per
 * axis the output size and the scale used by the coordinate transform. */
typedef struct resize_geom {
    int rank;
    int64_t out[8];
    double scale[8];
    double roi_lo[8], roi_hi[8]; /* tf_crop_and_resize: the region, in [0, 1] */
} resize_geom;
smelt_status resize_geom_get(const struct ir_graph *g, const struct ir_node *n, resize_geom *rg);
/* Taps per axis of antialiased linear (kind 1) or cubic (kind 2) resampling. */
int resize_antialias_taps(int kind, double scale);

/* Einsum: the parsed equation. Labels are numbered 0..n_labels-1; an input's
 * `lab[i][d]` is the label of its dim d; the output's labels come first in
 * label order, the summed ones after. */
#define EINSUM_MAX_IN 8
#define EINSUM_MAX_LABELS 32
typedef struct einsum_spec {
    int n_in;
    int in_rank[EINSUM_MAX_IN];
    int lab[EINSUM_MAX_IN][8];
    int out_rank;
    int out_lab[8];
    int n_labels;
    int64_t size[EINSUM_MAX_LABELS];
} einsum_spec;
smelt_status einsum_parse(const struct ir_graph *g, const struct ir_node *n, einsum_spec *e);

/* Attention sizes: batch, query/kv heads, query length S, new kv length L,
 * past length P, total T = P + L, head sizes of Q/K (d) and V (dv). */
typedef struct attention_geom {
    bool rank3; /* inputs [B, S, heads * head_size] */
    int64_t batch, hq, hk, s, l, lv, p, t, d, dk, dv;
} attention_geom;
smelt_status attention_geom_get(const struct ir_graph *g, const struct ir_node *n, attention_geom *a);

kir_val scalar_Swish(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
kir_val elem_OneHot(struct lower_ctx *c, int out, const kir_val *idx);
kir_val elem_EyeLike(struct lower_ctx *c, int out, const kir_val *idx);
kir_val elem_Window(struct lower_ctx *c, int out, const kir_val *idx);
kir_val elem_CenterCropPad(struct lower_ctx *c, int out, const kir_val *idx);
kir_val elem_QuantizeLinear(struct lower_ctx *c, int out, const kir_val *idx);
kir_val elem_DequantizeLinear(struct lower_ctx *c, int out, const kir_val *idx);
kir_val elem_Resize(struct lower_ctx *c, int out, const kir_val *idx);
kir_val elem_RotaryEmbedding(struct lower_ctx *c, int out, const kir_val *idx);

smelt_status lower_RMSNormalization(struct lower_ctx *c);
smelt_status lower_GroupNormalization(struct lower_ctx *c);
smelt_status lower_MeanVarianceNormalization(struct lower_ctx *c);
smelt_status lower_LRN(struct lower_ctx *c);
smelt_status lower_NegativeLogLikelihoodLoss(struct lower_ctx *c); /* also SoftmaxCrossEntropyLoss */
smelt_status lower_CumProd(struct lower_ctx *c);
smelt_status lower_TopK(struct lower_ctx *c);
smelt_status lower_ScatterElements(struct lower_ctx *c); /* also Scatter */
smelt_status lower_ScatterND(struct lower_ctx *c);
smelt_status lower_Einsum(struct lower_ctx *c);
smelt_status lower_Attention(struct lower_ctx *c);
smelt_status lower_LpPool(struct lower_ctx *c);
smelt_status lower_Recurrent(struct lower_ctx *c); /* RNN, GRU, LSTM */
/* If, Loop, Scan (graph/control.c): replace node `node` by the nodes it runs. */
smelt_status control_expand(struct ir_graph *g, int node);

/*  name                      kind         in    out  value_in infer                           scalar        elem                 lower                            flags */
#define OPS_MORE(X) \
    X(If,                       OPAQUE,      1, 1 << 20, 1, 1 << 20, 0x1, control_expand,  OP_NONE,      OP_NONE,             OP_NONE,                         OPF_CONTROL, OP_NONE) \
    X(Loop,                     OPAQUE,      2, 1 << 20, 1, 1 << 20, 0x3, control_expand,  OP_NONE,      OP_NONE,             OP_NONE,                         OPF_CONTROL, OP_NONE) \
    X(Scan,                     OPAQUE,      1, 1 << 20, 1, 1 << 20, 0x0, control_expand,  OP_NONE,      OP_NONE,             OP_NONE,                         OPF_CONTROL, OP_NONE) \
    X(RMSNormalization,         REDUCTION,   2, 2, 1, 1, 0x0, infer_RMSNormalization,         OP_NONE,      OP_NONE,             lower_RMSNormalization,          0, OP_NONE) \
    X(GroupNormalization,       REDUCTION,   3, 3, 1, 1, 0x0, infer_GroupNormalization,       OP_NONE,      OP_NONE,             lower_GroupNormalization,        0, OP_NONE) \
    X(MeanVarianceNormalization,REDUCTION,   1, 1, 1, 1, 0x0, infer_MeanVarianceNormalization,OP_NONE,      OP_NONE,             lower_MeanVarianceNormalization, 0, OP_NONE) \
    X(LRN,                      REDUCTION,   1, 1, 1, 1, 0x0, infer_LRN,                      OP_NONE,      OP_NONE,             lower_LRN,                       0, OP_NONE) \
    X(Swish,                    ELEMENTWISE, 1, 1, 1, 1, 0x0, infer_Swish,                    scalar_Swish, OP_NONE,             OP_NONE,                         0, OP_NONE) \
    X(NegativeLogLikelihoodLoss,OPAQUE,      2, 3, 1, 1, 0x0, infer_NegativeLogLikelihoodLoss,OP_NONE,      OP_NONE,             lower_NegativeLogLikelihoodLoss, 0, OP_NONE) \
    X(SoftmaxCrossEntropyLoss,  OPAQUE,      2, 3, 1, 2, 0x0, infer_NegativeLogLikelihoodLoss,OP_NONE,      OP_NONE,             lower_NegativeLogLikelihoodLoss, 0, OP_NONE) \
    X(OneHot,                   INJECTIVE,   3, 3, 1, 1, 0x2, infer_OneHot,                   OP_NONE,      elem_OneHot,         OP_NONE,                         0, OP_NONE) \
    X(EyeLike,                  INJECTIVE,   1, 1, 1, 1, 0x0, infer_EyeLike,                  OP_NONE,      elem_EyeLike,        OP_NONE,                         0, OP_NONE) \
    X(HannWindow,               INJECTIVE,   1, 1, 1, 1, 0x1, infer_Window,                   OP_NONE,      elem_Window,         OP_NONE,                         0, OP_NONE) \
    X(HammingWindow,            INJECTIVE,   1, 1, 1, 1, 0x1, infer_Window,                   OP_NONE,      elem_Window,         OP_NONE,                         0, OP_NONE) \
    X(BlackmanWindow,           INJECTIVE,   1, 1, 1, 1, 0x1, infer_Window,                   OP_NONE,      elem_Window,         OP_NONE,                         0, OP_NONE) \
    X(CenterCropPad,            INJECTIVE,   2, 2, 1, 1, 0x2, infer_CenterCropPad,            OP_NONE,      elem_CenterCropPad,  OP_NONE,                         0, OP_NONE) \
    X(QuantizeLinear,           INJECTIVE,   2, 3, 1, 1, 0x0, infer_QuantizeLinear,           OP_NONE,      elem_QuantizeLinear, OP_NONE,                         0, OP_NONE) \
    X(DequantizeLinear,         INJECTIVE,   2, 3, 1, 1, 0x0, infer_DequantizeLinear,         OP_NONE,      elem_DequantizeLinear,OP_NONE,                        0, OP_NONE) \
    X(CumProd,                  OPAQUE,      2, 2, 1, 1, 0x2, infer_CumProd,                  OP_NONE,      OP_NONE,             lower_CumProd,                   0, OP_NONE) \
    X(TopK,                     OPAQUE,      1, 2, 2, 2, 0x2, infer_TopK,                     OP_NONE,      OP_NONE,             lower_TopK,                      0, OP_NONE) \
    X(ScatterElements,          OPAQUE,      3, 3, 1, 1, 0x0, infer_ScatterElements,          OP_NONE,      OP_NONE,             lower_ScatterElements,           0, OP_NONE) \
    X(Scatter,                  OPAQUE,      3, 3, 1, 1, 0x0, infer_ScatterElements,          OP_NONE,      OP_NONE,             lower_ScatterElements,           0, OP_NONE) \
    X(ScatterND,                OPAQUE,      3, 3, 1, 1, 0x0, infer_ScatterND,                OP_NONE,      OP_NONE,             lower_ScatterND,                 0, OP_NONE) \
    X(Resize,                   INJECTIVE,   1, 4, 1, 1, 0xe, infer_Resize,                   OP_NONE,      elem_Resize,         OP_NONE,                         0, OP_NONE) \
    X(Upsample,                 INJECTIVE,   1, 2, 1, 1, 0x2, infer_Resize,                   OP_NONE,      elem_Resize,         OP_NONE,                         0, OP_NONE) \
    X(Einsum,                   OPAQUE,      1, 8, 1, 1, 0x0, infer_Einsum,                   OP_NONE,      OP_NONE,             lower_Einsum,                    0, OP_NONE) \
    X(Attention,                OPAQUE,      3, 7, 1, 4, 0x0, infer_Attention,                OP_NONE,      OP_NONE,             lower_Attention,                 0, OP_NONE) \
    X(LpPool,                   REDUCTION,   1, 1, 1, 1, 0x0, infer_Pool,                     OP_NONE,      OP_NONE,             lower_LpPool,                    0, OP_NONE) \
    X(RotaryEmbedding,          INJECTIVE,   3, 4, 1, 1, 0x0, infer_RotaryEmbedding,          OP_NONE,      elem_RotaryEmbedding,OP_NONE,                         0, OP_NONE) \
    X(RNN,                      OPAQUE,      3, 6, 0, 2, 0x0, infer_Recurrent,                OP_NONE,      OP_NONE,             lower_Recurrent,                 0, OP_NONE) \
    X(GRU,                      OPAQUE,      3, 6, 0, 2, 0x0, infer_Recurrent,                OP_NONE,      OP_NONE,             lower_Recurrent,                 0, OP_NONE) \
    X(LSTM,                     OPAQUE,      3, 8, 0, 3, 0x0, infer_Recurrent,                OP_NONE,      OP_NONE,             lower_Recurrent,                 0, OP_NONE)

#endif
