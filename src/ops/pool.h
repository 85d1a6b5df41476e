/*
 * pool.h — MaxPool, AveragePool and LpPool over the window geometry of ops/conv.h.
 *
 * The functions the op table's rows name for this family (ir/ops.h gives the
 * columns; ops/op_table.c fills the table) and what the family shares between
 * its shape rules and its lowerings. Defined in ops/pool.c.
 */
#ifndef SMELT_OPS_POOL_H
#define SMELT_OPS_POOL_H

#include "lower/lower.h"
#include "ops/conv.h" /* window_geom */

smelt_status infer_Pool(struct ir_graph *g, int node);       /* MaxPool, AveragePool */
smelt_status lower_MaxPool(struct lower_ctx *c);
smelt_status lower_AveragePool(struct lower_ctx *c);
smelt_status lower_LpPool(struct lower_ctx *c);

#endif
