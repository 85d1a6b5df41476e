/*
 * recurrent.h — RNN, GRU and LSTM: one shape rule and one lowering for the
 * three.
 *
 * The functions the op table's rows name for this family (ir/ops.h gives the
 * columns; ops/op_table.c fills the table). Defined in ops/recurrent.c.
 */
#ifndef SMELT_OPS_RECURRENT_H
#define SMELT_OPS_RECURRENT_H

#include "lower/lower.h"

/* The attributes of RNN, GRU, LSTM, their packed forms and DynamicQuantizeLSTM
 * into an rnn_params (recurrent_params.h), parsed once (ir/ops.h op_params)
 * with their defaults and the checks that need no shape: direction, layout,
 * clip, the activations and their alpha/beta. */
smelt_status parse_recurrent(const struct ir_graph *g, const struct ir_node *n, void *params);

smelt_status infer_Recurrent(struct ir_graph *g, int node); /* RNN, GRU, LSTM */
smelt_status lower_Recurrent(struct lower_ctx *c);          /* RNN, GRU, LSTM */

#endif
