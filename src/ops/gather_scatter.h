/*
 * gather_scatter.h — Gather, GatherElements, GatherND (index maps) and ScatterElements,
 * Scatter, ScatterND (whole-kernel lowerings: data-dependent writes).
 *
 * The functions the op table's rows name for this family (ir/ops.h gives the
 * columns; ops/op_table.c fills the table) and what the family shares between
 * its shape rules and its lowerings. Defined in ops/gather_scatter.c.
 */
#ifndef SMELT_OPS_GATHER_SCATTER_H
#define SMELT_OPS_GATHER_SCATTER_H

#include "lower/lower.h"

typedef enum scatter_reduction { SC_NONE, SC_ADD, SC_MUL, SC_MAX, SC_MIN } scatter_reduction;

/* The attributes of Gather, GatherElements, GatherND and the scatters, parsed
 * once (ir/ops.h op_params); the shape rules check axis and batch_dims
 * against the ranks. */
typedef struct gather_params {
    int64_t axis;                  /* as written, default 0 */
    int64_t batch_dims;            /* GatherND, default 0 */
    scatter_reduction reduction;   /* the scatters: default none */
} gather_params;
smelt_status parse_gather(const struct ir_graph *g, const struct ir_node *n, void *params);

smelt_status infer_Gather(struct ir_graph *g, int node);
smelt_status infer_GatherElements(struct ir_graph *g, int node);
smelt_status infer_GatherND(struct ir_graph *g, int node);
kir_val elem_Gather(struct lower_ctx *c, int out, const kir_val *idx);
kir_val elem_GatherElements(struct lower_ctx *c, int out, const kir_val *idx);
kir_val elem_GatherND(struct lower_ctx *c, int out, const kir_val *idx);
smelt_status infer_ScatterElements(struct ir_graph *g, int node); /* also Scatter */
smelt_status infer_ScatterND(struct ir_graph *g, int node);
smelt_status lower_ScatterElements(struct lower_ctx *c); /* also Scatter */
smelt_status lower_ScatterND(struct lower_ctx *c);

#endif
