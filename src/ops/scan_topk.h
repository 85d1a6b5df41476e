/*
 * scan_topk.h — scans along an axis (CumSum, CumProd) and TopK.
 *
 * The functions the op table's rows name for this family (ir/ops.h gives the
 * columns; ops/op_table.c fills the table) and what the family shares between
 * its shape rules and its lowerings. Defined in ops/scan_topk.c.
 */
#ifndef SMELT_OPS_SCAN_TOPK_H
#define SMELT_OPS_SCAN_TOPK_H

#include "lower/lower.h"

smelt_status infer_CumSum(struct ir_graph *g, int node);
smelt_status lower_CumSum(struct lower_ctx *c);
smelt_status infer_CumProd(struct ir_graph *g, int node);
smelt_status infer_TopK(struct ir_graph *g, int node);
smelt_status lower_CumProd(struct lower_ctx *c);
smelt_status lower_TopK(struct lower_ctx *c);

#endif
