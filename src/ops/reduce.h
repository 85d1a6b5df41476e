/*
 * reduce.h — row reductions: Reduce*, ArgMax/ArgMin, Softmax/LogSoftmax/Hardmax and the
 * global pools (their GPU forms are in ops/reduce_gpu.c).
 *
 * The functions the op table's rows name for this family (ir/ops.h gives the
 * columns; ops/op_table.c fills the table) and what the family shares between
 * its shape rules and its lowerings. Defined in ops/reduce.c (Softmax,
 * LogSoftmax and Hardmax in ops/softmax.c).
 */
#ifndef SMELT_OPS_REDUCE_H
#define SMELT_OPS_REDUCE_H

#include "lower/lower.h"

/* The attributes of Reduce*, ArgMax/ArgMin and Softmax/LogSoftmax/Hardmax,
 * parsed once (ir/ops.h op_params); the shape rules check axes against the
 * rank. */
typedef struct reduce_params {
    int64_t axis;              /* ArgMax/ArgMin: default 0; the softmaxes: -1 from opset 13, 1 before */
    bool keepdims;             /* default 1 */
    bool select_last_index;    /* ArgMax/ArgMin, default 0 */
    bool noop_with_empty_axes; /* Reduce* with the axes input, default 0 */
    int n_axes;                /* Reduce*'s axes attribute (before the input form), -1 when absent */
    int64_t axes[IR_MAX_RANK * 2];
    bool has_axis;             /* the axis attribute is given (a kernel's comment names it) */
} reduce_params;
smelt_status parse_reduce(const struct ir_graph *g, const struct ir_node *n, void *params);
/* The reductions and softmaxes in a kernel's comment (op_describe): the axes
 * attribute, or the axis attribute, as given. */
void describe_reduce(const struct ir_graph *g, const struct ir_node *n, char *buf, size_t cap);
/* n's reduce_params (ir_node_params_get: into *scratch for a node added after inference). */
smelt_status reduce_params_of(const struct ir_graph *g, const struct ir_node *n, reduce_params *scratch,
                              const reduce_params **p);

/* The axes a Reduce* node reduces, as a bitmask over its input's dims (from
 * the `axes` attribute or, from opset 13/18, the constant `axes` input; empty
 * means all, or none with noop_with_empty_axes). */
smelt_status reduce_axes_get(const struct ir_graph *g, const struct ir_node *n, uint32_t *mask);
smelt_status infer_GlobalPool(struct ir_graph *g, int node); /* GlobalAverage/MaxPool */
smelt_status infer_Softmax(struct ir_graph *g, int node);    /* also LogSoftmax, Hardmax */
smelt_status infer_Reduce(struct ir_graph *g, int node);     /* every Reduce* */
smelt_status infer_ArgMax(struct ir_graph *g, int node);           /* also ArgMin */
smelt_status lower_GlobalAveragePool(struct lower_ctx *c);
smelt_status lower_GlobalMaxPool(struct lower_ctx *c);
smelt_status lower_Softmax(struct lower_ctx *c);
smelt_status lower_LogSoftmax(struct lower_ctx *c);
smelt_status lower_Reduce(struct lower_ctx *c);

/* One output element of a Reduce* op, with its reduction loop: fusion uses it
 * to compute a row's reductions inside the kernel that consumes them. */
kir_val elem_Reduce(struct lower_ctx *c, int out, const kir_val *idx);
smelt_status lower_ArgMax(struct lower_ctx *c);                 /* also ArgMin */
smelt_status lower_Hardmax(struct lower_ctx *c);

smelt_status lower_gpu_Reduce(struct lower_ctx *c); /* GPU forms, in ops/reduce_gpu.c */
smelt_status lower_gpu_Softmax(struct lower_ctx *c);

#endif
