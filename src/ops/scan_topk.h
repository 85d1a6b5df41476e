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

/* TopK's attributes, parsed once (ir/ops.h op_params): axis as written
 * (negative counts from the end; the shape rule checks it), largest, and
 * TopK 1's k attribute (-1 when absent; an input from opset 10). */
typedef struct topk_params {
    int64_t axis;
    bool largest;
    int64_t k;
} topk_params;
smelt_status parse_TopK(const struct ir_graph *g, const struct ir_node *n, void *params);

/* CumSum's and CumProd's attributes. */
typedef struct scan_params {
    bool exclusive, reverse;
} scan_params;
smelt_status parse_scan(const struct ir_graph *g, const struct ir_node *n, void *params);

smelt_status infer_CumSum(struct ir_graph *g, int node);
smelt_status lower_CumSum(struct lower_ctx *c);
smelt_status infer_CumProd(struct ir_graph *g, int node);
smelt_status infer_TopK(struct ir_graph *g, int node);
smelt_status lower_CumProd(struct lower_ctx *c);
smelt_status lower_TopK(struct lower_ctx *c);

#endif
