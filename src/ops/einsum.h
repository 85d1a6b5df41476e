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
smelt_status einsum_parse(const struct ir_graph *g, const struct ir_node *n, einsum_spec *e);
smelt_status lower_Einsum(struct lower_ctx *c);

#endif
