/*
 * shape.h — the toolkit every op family's shape rules are written with
 * (ops/shape.c): dtype classes, constant inputs read as lists, axes,
 * broadcasting, and checks of inputs and outputs.
 *
 * Every helper that can fail records a diagnostic naming the node and returns
 * its status, so a shape rule reads as a list of TRY(...) checks.
 */
#ifndef SMELT_OPS_SHAPE_H
#define SMELT_OPS_SHAPE_H

#include "ir/ir.h"

#define MAX_LIST 64 /* longest constant list an op reads (split sizes, pads...) */

/* True for the dtypes smelt computes with. */
bool dtype_supported(smelt_dtype dt);
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
/* The list given as an attribute (older opsets: the acnt values at a, from
 * the op's params; acnt -1 when absent), else from input `in` (-1: none).
 * Same returns as infer_read_int_input. */
int infer_read_list(const ir_graph *g, const ir_node *n, const int64_t *a, int acnt, int in, const char *what,
                    int64_t *vals, int cap, smelt_status *st);
/* Axis a of a rank-r tensor, negative counting from the end, into *out. */
smelt_status infer_norm_axis(const ir_node *n, int64_t a, int r, const char *what, int *out);

/* Numpy broadcast where an unknown dim (-1) matches anything. */
bool infer_broadcast2(const ir_shape *a, const ir_shape *b, ir_shape *out);
/* Broadcast of inputs first.. (those present). */
smelt_status infer_broadcast_inputs(const ir_graph *g, const ir_node *n, int first, ir_shape *out);

/* Dtype masks for infer_need_dtype. */
#define DT(x) (1u << SMELT_##x)
#define DT_FLOAT (DT(F32) | DT(F64) | DT(F16) | DT(BF16))
#define DT_INT_WIDE (DT(I32) | DT(I64) | DT(U32) | DT(U64))
#define DT_ARITH (DT_FLOAT | DT_INT_WIDE)
#define DT_ALL_NUM (DT_ARITH | DT(I8) | DT(U8) | DT(I16) | DT(U16))

/* Unknown dims (-1) match anything. */
bool infer_dim_eq(int64_t a, int64_t b);
/* The dtype of t (named `what`) must be in `mask`; float16 and friends are
 * unsupported, other mismatches are model errors. */
smelt_status infer_need_dtype(const ir_node *n, const ir_tensor *t, const char *what, unsigned mask);
/* a and b have one dtype. */
smelt_status infer_need_same_dtype(const ir_node *n, const ir_tensor *a, const ir_tensor *b);
/* Input i (described as `what`) is present. */
smelt_status infer_need_input(const ir_graph *g, const ir_node *n, int i, const char *what);
/* t is float32/float64, or an integer dtype. */
smelt_status infer_need_float(const ir_node *n, const ir_tensor *t);
smelt_status infer_need_int(const ir_node *n, const ir_tensor *t);
/* Output i, if present, gets dtype dt and shape s (no dtype check: the rule chose dt). */
void infer_put_out(ir_graph *g, const ir_node *n, int i, smelt_dtype dt, const ir_shape *s);
/* Whether output i is present. */
bool infer_has_out(const ir_node *n, int i);
/* Axis a of a rank-r tensor into [0, r), a model error naming `what` otherwise
 * (also for r == 0; infer_norm_axis is the same with a shape error). */
smelt_status infer_axis(const ir_node *n, const char *what, int64_t a, int r, int *out);
/* t holds exactly one element (a scalar or a 1-element list). */
bool infer_is_one_value(const ir_tensor *t);

#endif
