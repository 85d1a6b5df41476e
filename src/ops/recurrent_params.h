/*
 * recurrent_params.h — what ops/recurrent.c (attributes, shape rule) and
 * ops/recurrent_lower.c (kernels) share about RNN, GRU, LSTM, their packed
 * forms and DynamicQuantizeLSTM: the node's attributes and sizes, parsed once;
 * and the params struct the op table (ops/op_table.c) sizes.
 */
#ifndef SMELT_OPS_RECURRENT_PARAMS_H
#define SMELT_OPS_RECURRENT_PARAMS_H

#include <stdbool.h>
#include <stdint.h>

#include "ir/ir.h"

typedef enum rnn_cell { CELL_RNN, CELL_GRU, CELL_LSTM } rnn_cell;

typedef enum rnn_act {
    ACT_RELU, ACT_TANH, ACT_SIGMOID, ACT_AFFINE, ACT_LEAKYRELU, ACT_THRESHOLDEDRELU,
    ACT_SCALEDTANH, ACT_HARDSIGMOID, ACT_ELU, ACT_SOFTSIGN, ACT_SOFTPLUS, ACT_COUNT
} rnn_act;

typedef struct rnn_fn {
    rnn_act act;
    float alpha, beta;
} rnn_fn;

/* Inputs and outputs by position (ONNX order). */
enum { IN_X, IN_W, IN_R, IN_B, IN_LENS, IN_H0, IN_C0, IN_P, IN_WS, IN_WZ, IN_RS, IN_RZ, IN_XS, IN_XZ };
enum { OUT_Y, OUT_YH, OUT_YC };

typedef struct rnn_params {
    rnn_cell cell;
    int gates;         /* G: 1, 3 or 4 blocks of H rows in W and R */
    int n_fn;          /* activations per direction: 1, 2 or 3 */
    int dirs;          /* 1 or 2 */
    bool reverse[2];   /* per direction: time runs backwards */
    int layout;        /* 0: [seq, batch, ...]; 1: [batch, seq, ...] */
    bool has_clip;
    float clip;
    bool input_forget; /* LSTM: f = 1 - i */
    bool lbr;          /* GRU linear_before_reset */
    bool packed;       /* W [D, input, G*H] and R [D, H, G*H]: the packed order */
    bool quant;        /* DynamicQuantizeLSTM (packed): 8-bit W and R, uint8 X */
    int64_t hidden_size; /* the attribute: -1 when absent (R's shape decides) */
    /* Sizes from the input shapes (rnn_parse); 0 in the parsed params. */
    int64_t seq, batch, input, hidden;
    rnn_fn fn[2][3];
    smelt_dtype dt;
} rnn_params;


/* Node n's attributes (parse_recurrent, recurrent.h) and sizes, checked
 * against its input shapes; errors name the node and the rule. */
smelt_status rnn_parse(const ir_graph *g, const ir_node *n, rnn_params *p);

#endif
