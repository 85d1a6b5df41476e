/*
 * infer_data.h — helpers shared by the shape rules of the data ops
 * (infer_data.c: elementwise, broadcast, constants and shape queries;
 * infer_layout.c: reshapes, movement, gather, pad...).
 *
 * Every helper that can fail records a diagnostic naming the node and returns
 * its status, so a shape rule reads as a list of TRY(...) checks.
 */
#ifndef SMELT_GRAPH_INFER_DATA_H
#define SMELT_GRAPH_INFER_DATA_H

#include "ir/ir.h"

#define MAX_LIST 64 /* longest constant list an op reads (split sizes, pads...) */

/* Name of an ONNX dtype, including those smelt cannot hold (bfloat16...). */
const char *infer_dtype_str(smelt_dtype dt);
bool infer_is_float(smelt_dtype dt);
bool infer_is_int(smelt_dtype dt); /* signed or unsigned integer, not bool */
/* "[2,3]" into buf (160 bytes). */
const char *infer_shp(const ir_shape *s, char *buf);
/* False if any dim is unknown (-1). */
bool infer_shape_known(const ir_shape *s);

/* Every present input has a dtype smelt computes with. */
smelt_status infer_check_dtypes(const ir_graph *g, const ir_node *n);
/* Inputs first..last (those present) share one dtype. */
smelt_status infer_same_dtype(const ir_graph *g, const ir_node *n, int first, int last);
/* Fails naming t and the dtype class `cls` the op takes unless ok. */
smelt_status infer_require_class(const ir_node *n, const ir_tensor *t, bool ok, const char *cls);
/* Set output i (if present) to dt and shape s. */
smelt_status infer_set_out(ir_graph *g, const ir_node *n, int i, smelt_dtype dt, const ir_shape *s);

/* The constant tensor of value input i; NULL if absent (st OK) or not constant
 * (st set). */
const ir_tensor *infer_value_input(const ir_graph *g, const ir_node *n, int i, const char *what, smelt_status *st);
/* A constant 1-D integer list from input i: the count, -1 when the input is
 * absent, -2 on failure (st set). */
int infer_read_int_input(const ir_graph *g, const ir_node *n, int i, const char *what, int64_t *vals, int cap,
                         smelt_status *st);
/* The list from attribute `attr` when present (older opsets), else from input
 * `in` (-1: none). Same returns as infer_read_int_input. */
int infer_read_ints(const ir_graph *g, const ir_node *n, const char *attr, int in, const char *what, int64_t *vals,
                    int cap, smelt_status *st);
/* Axis a of a rank-r tensor, negative counting from the end, into *out. */
smelt_status infer_norm_axis(const ir_node *n, int64_t a, int r, const char *what, int *out);

/* Numpy broadcast where an unknown dim (-1) matches anything. */
bool infer_broadcast2(const ir_shape *a, const ir_shape *b, ir_shape *out);
/* Broadcast of inputs first.. (those present). */
smelt_status infer_broadcast_inputs(const ir_graph *g, const ir_node *n, int first, ir_shape *out);

#endif
