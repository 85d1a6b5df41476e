/*
 * norm.h — normalizations (Batch, Layer, Instance, Lp, RMS, Group, MeanVariance, LRN).
 *
 * The functions the op table's rows name for this family (ir/ops.h gives the
 * columns; ops/op_table.c fills the table) and what the family shares between
 * its shape rules and its lowerings. Defined in ops/norm.c.
 */
#ifndef SMELT_OPS_NORM_H
#define SMELT_OPS_NORM_H

#include "ir/op_params.h"
#include "lower/lower.h"

/* The attributes of the normalizations but BatchNormalization
 * (ir/op_params.h), parsed once (ir/ops.h op_params) with their defaults and
 * the checks that need no shapes; the shape rules check axes against the rank. */
typedef struct norm_params {
    int64_t axis;           /* Layer, Lp, RMS: as written, default -1 */
    float epsilon;          /* default 1e-5 */
    int64_t p;              /* LpNormalization: 1 or 2, default 2 */
    smelt_dtype stash;      /* LayerNormalization stash_type: F32 (1, the default) or F64 */
    int64_t num_groups;     /* GroupNormalization: required, >= 1 */
    int n_axes;             /* MeanVarianceNormalization: -1 when absent (then [0,2,3]) */
    int64_t axes[IR_MAX_RANK];
    int64_t size;           /* LRN: required, 1..2^40 */
    float alpha, beta, bias; /* LRN: defaults 1e-4, 0.75, 1 */
} norm_params;
smelt_status parse_norm(const struct ir_graph *g, const struct ir_node *n, void *params);
smelt_status parse_BatchNormalization(const struct ir_graph *g, const struct ir_node *n, void *params);

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
smelt_status lower_RMSNormalization(struct lower_ctx *c);
smelt_status lower_GroupNormalization(struct lower_ctx *c);
smelt_status lower_MeanVarianceNormalization(struct lower_ctx *c);
smelt_status lower_LRN(struct lower_ctx *c);

smelt_status lower_gpu_LayerNormalization(struct lower_ctx *c); /* GPU form, in ops/reduce_gpu.c */

#endif
