/*
 * generate.h — tensors computed from their indices or the graph: Constant, ConstantOfShape,
 * Shape, Size, Range, OneHot, EyeLike and the spectral windows.
 *
 * The functions the op table's rows name for this family (ir/ops.h gives the
 * columns; ops/op_table.c fills the table) and what the family shares between
 * its shape rules and its lowerings. Defined in ops/generate.c.
 */
#ifndef SMELT_OPS_GENERATE_H
#define SMELT_OPS_GENERATE_H

#include "lower/lower.h"

/* Shape rules of single ops. */
smelt_status infer_Constant(struct ir_graph *g, int node);
smelt_status infer_ConstantOfShape(struct ir_graph *g, int node);
smelt_status infer_Shape(struct ir_graph *g, int node);
smelt_status infer_Size(struct ir_graph *g, int node);
smelt_status infer_Range(struct ir_graph *g, int node);

/* Element functions (index maps) of injective ops. */
kir_val elem_ConstantOfShape(struct lower_ctx *c, int out, const kir_val *idx);
kir_val elem_Range(struct lower_ctx *c, int out, const kir_val *idx);
smelt_status infer_OneHot(struct ir_graph *g, int node);
smelt_status infer_EyeLike(struct ir_graph *g, int node);
smelt_status infer_Window(struct ir_graph *g, int node); /* Hann/Hamming/BlackmanWindow */
kir_val elem_OneHot(struct lower_ctx *c, int out, const kir_val *idx);
kir_val elem_EyeLike(struct lower_ctx *c, int out, const kir_val *idx);
kir_val elem_Window(struct lower_ctx *c, int out, const kir_val *idx);

#endif
