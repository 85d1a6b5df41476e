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

/* QuantizeLinear's and DequantizeLinear's attributes, parsed once (ir/ops.h
 * op_params). */
typedef struct quantize_params {
    int64_t axis;              /* per-axis and blocked scales: as written, default 1 */
    int64_t block_size;        /* >= 0, default 0 (not blocked) */
    smelt_dtype output_dtype;  /* default SMELT_UNDEFINED: the zero point's (uint8 without one), or the scale's */
} quantize_params;
smelt_status parse_quantize(const struct ir_graph *g, const struct ir_node *n, void *params);

smelt_status infer_QuantizeLinear(struct ir_graph *g, int node);
smelt_status infer_DequantizeLinear(struct ir_graph *g, int node);
kir_val elem_QuantizeLinear(struct lower_ctx *c, int out, const kir_val *idx);
kir_val elem_DequantizeLinear(struct lower_ctx *c, int out, const kir_val *idx);

#endif
