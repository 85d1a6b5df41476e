/*
 * einsum.h — Einsum: the parsed equation and its one-kernel lowering.
 *
 * The functions the op table's rows name for this family (ir/ops.h gives the
 * columns; ops/op_table.c fills the table) and what the family shares between
 * its shape rules and its lowerings. Defined in ops/einsum.c.
 */
#ifndef SMELT_OPS_EINSUM_H
#define SMELT_OPS_EINSUM_H

#include "lower/lower.h"

smelt_status infer_Einsum(struct ir_graph *g, int node);

/* Einsum: the parsed equation. Labels are numbered 0..n_labels-1; an input's
 * `lab[i][d]` is the label of its dim d; the output's labels come first in
 * label order, the summed ones after. */
#define EINSUM_MAX_IN 8
#define EINSUM_MAX_LABELS 32
typedef struct einsum_spec {
    int n_in;
    int in_rank[EINSUM_MAX_IN];
    int lab[EINSUM_MAX_IN][8];
    int out_rank;
    int out_lab[8];
    int n_labels;
    int64_t size[EINSUM_MAX_LABELS];
} einsum_spec;
/* Einsum's params (op_params): the equation's text parsed once, before any
 * shape is known. A term is its items in order: letter ids 0..51 ('a'..'z',
 * then 'A'..'Z') and EINSUM_ELL where '...' stands; spaces are dropped. */
#define EINSUM_ELL (-1)
typedef struct einsum_params {
    const char *eq; /* the node's 'equation' attribute, for messages */
    int n_terms;    /* the input terms, one per input */
    signed char item[EINSUM_MAX_IN][9], n_item[EINSUM_MAX_IN];
    bool has_ell[EINSUM_MAX_IN];
    bool has_arrow; /* an explicit output term (else the implicit form) */
    signed char out_item[9], n_out_item;
    bool out_has_ell;
    bool letter_used[52]; /* the letters the input terms name */
} einsum_params;
smelt_status parse_Einsum(const struct ir_graph *g, const struct ir_node *n, void *params);
/* The equation fitted to n's input shapes: the ellipsis's width (the widest
 * input decides it), the labels numbered, their sizes. */
smelt_status einsum_spec_of(const struct ir_graph *g, const struct ir_node *n, einsum_spec *e);
smelt_status lower_Einsum(struct lower_ctx *c);

#endif
