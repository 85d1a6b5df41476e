/*
 * loss.h — the classification losses: NegativeLogLikelihoodLoss and
 * SoftmaxCrossEntropyLoss (one shape rule and one lowering for the two).
 *
 * The functions the op table's rows name for this family (ir/ops.h gives the
 * columns; ops/op_table.c fills the table). Defined in ops/loss.c.
 */
#ifndef SMELT_OPS_LOSS_H
#define SMELT_OPS_LOSS_H

#include "lower/lower.h"

/* The losses' attributes, parsed once (ir/ops.h op_params) with their
 * defaults; a reduction other than none, sum or mean is refused there. */
typedef enum loss_reduction { LOSS_NONE, LOSS_SUM, LOSS_MEAN } loss_reduction;
typedef struct loss_params {
    loss_reduction reduction; /* default mean */
    bool has_ignore;          /* ignore_index given: targets equal to it weigh 0 */
    int64_t ignore_index;
} loss_params;
smelt_status parse_loss(const struct ir_graph *g, const struct ir_node *n, void *params);

smelt_status infer_NegativeLogLikelihoodLoss(struct ir_graph *g, int node); /* also SoftmaxCrossEntropyLoss */
smelt_status lower_NegativeLogLikelihoodLoss(struct lower_ctx *c);          /* also SoftmaxCrossEntropyLoss */

#endif
