/*
 * norm.h — normalizations (Batch, Layer, Instance, Lp, RMS, Group, MeanVariance, LRN)
 * and the classification losses built on the same row statistics.
 *
 * The functions the op table's rows name for this family (ir/ops.h gives the
 * columns; ops/op_table.c fills the table) and what the family shares between
 * its shape rules and its lowerings. Defined in ops/norm.c.
 */
#ifndef SMELT_OPS_NORM_H
#define SMELT_OPS_NORM_H

#include "lower/lower.h"

smelt_status infer_BatchNormalization(struct ir_graph *g, int node);
smelt_status infer_LayerNormalization(struct ir_graph *g, int node);
smelt_status infer_InstanceNormalization(struct ir_graph *g, int node);
smelt_status infer_LpNormalization(struct ir_graph *g, int node);
smelt_status lower_BatchNormalization(struct lower_ctx *c);
smelt_status lower_LayerNormalization(struct lower_ctx *c);
smelt_status lower_InstanceNormalization(struct lower_ctx *c);
smelt_status lower_LpNormalization(struct lower_ctx *c);
smelt_status infer_RMSNormalization(struct ir_graph *g, int node);
smelt_status infer_GroupNormalization(struct ir_graph *g, int node);
smelt_status infer_MeanVarianceNormalization(struct ir_graph *g, int node);
smelt_status infer_LRN(struct ir_graph *g, int node);
smelt_status infer_NegativeLogLikelihoodLoss(struct ir_graph *g, int node); /* also SoftmaxCrossEntropyLoss */
smelt_status lower_RMSNormalization(struct lower_ctx *c);
smelt_status lower_GroupNormalization(struct lower_ctx *c);
smelt_status lower_MeanVarianceNormalization(struct lower_ctx *c);
smelt_status lower_LRN(struct lower_ctx *c);
smelt_status lower_NegativeLogLikelihoodLoss(struct lower_ctx *c); /* also SoftmaxCrossEntropyLoss */

smelt_status lower_gpu_LayerNormalization(struct lower_ctx *c); /* GPU form, in ops/reduce_gpu.c */

#endif
