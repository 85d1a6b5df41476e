/*
 * matmul.h — MatMul and Gemm (their GPU forms are in ops/gemm_gpu.c).
 *
 * The functions the op table's rows name for this family (ir/ops.h gives the
 * columns; ops/op_table.c fills the table) and what the family shares between
 * its shape rules and its lowerings. Defined in ops/matmul.c.
 */
#ifndef SMELT_OPS_MATMUL_H
#define SMELT_OPS_MATMUL_H

#include "ir/op_params.h"
#include "lower/lower.h"

/* Gemm's attributes into gemm_params (ir/op_params.h), parsed once (ir/ops.h op_params). */
smelt_status parse_Gemm(const struct ir_graph *g, const struct ir_node *n, void *params);

smelt_status infer_MatMul(struct ir_graph *g, int node);
smelt_status infer_Gemm(struct ir_graph *g, int node);
smelt_status lower_MatMul(struct lower_ctx *c);
smelt_status lower_Gemm(struct lower_ctx *c);

/* The C target's GEMM tiles for a vector width (f32 lanes): a microkernel of
 * MR x NR accumulators over KC-deep slices; B operands packed for it are
 * [N/NR][K][NR] panels (ir.h's IR_ENC_PANELS). */
typedef struct mm_tiles {
    int lanes;      /* the row applies from this vector width up */
    int mr, nr, kc;
} mm_tiles;
mm_tiles mm_tiles_for(int vector_width);

smelt_status lower_gpu_MatMul(struct lower_ctx *c); /* GPU forms, in ops/gemm_gpu.c */
smelt_status lower_gpu_Gemm(struct lower_ctx *c);

#endif
