/*
 * recurrent.h — RNN, GRU and LSTM: one shape rule and one lowering for the
 * three (the attributes parsed once into a params struct inside recurrent.c).
 *
 * The functions the op table's rows name for this family (ir/ops.h gives the
 * columns; ops/op_table.c fills the table). Defined in ops/recurrent.c.
 */
#ifndef SMELT_OPS_RECURRENT_H
#define SMELT_OPS_RECURRENT_H

#include "lower/lower.h"

smelt_status infer_Recurrent(struct ir_graph *g, int node); /* RNN, GRU, LSTM */
smelt_status lower_Recurrent(struct lower_ctx *c);          /* RNN, GRU, LSTM */

#endif
