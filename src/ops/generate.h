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

/* The attributes of OneHot, EyeLike, the windows, ConstantOfShape and Shape,
 * parsed once (ir/ops.h op_params). Constant's value attributes are read by
 * its shape rule alone, which computes it. */
typedef struct generate_params {
    int64_t axis;          /* OneHot: as written, default -1 */
    int64_t k;             /* EyeLike: the diagonal, default 0 */
    bool has_dtype;        /* EyeLike: dtype given (else the input's) */
    smelt_dtype dtype;     /* EyeLike's dtype; the windows' output_datatype (default float) */
    bool periodic;         /* the windows, default 1 */
    int value;             /* ConstantOfShape: the one-element tensor of its value attribute, or -1 (float 0) */
    int64_t start;         /* Shape: default 0 */
    bool has_end;          /* Shape: end given (else the rank) */
    int64_t end;
} generate_params;
smelt_status parse_generate(const struct ir_graph *g, const struct ir_node *n, void *params);

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
