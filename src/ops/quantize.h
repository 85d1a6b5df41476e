/*
 * quantize.h — QuantizeLinear and DequantizeLinear.
 *
 * The functions the op table's rows name for this family (ir/ops.h gives the
 * columns; ops/op_table.c fills the table) and what the family shares between
 * its shape rules and its lowerings. Defined in ops/quantize.c.
 */
#ifndef SMELT_OPS_QUANTIZE_H
#define SMELT_OPS_QUANTIZE_H

#include "lower/lower.h"

smelt_status infer_QuantizeLinear(struct ir_graph *g, int node);
smelt_status infer_DequantizeLinear(struct ir_graph *g, int node);
kir_val elem_QuantizeLinear(struct lower_ctx *c, int out, const kir_val *idx);
kir_val elem_DequantizeLinear(struct lower_ctx *c, int out, const kir_val *idx);

#endif
