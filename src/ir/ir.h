/*
 * ir.h — the graph IR: tensors with static dtypes and shapes, nodes, attributes.
 *
 * A graph owns everything it points to (except the constant data of a copy
 * made by ir_graph_clone_sharing_data): names, attributes and constant data
 * live in its arena; the tensor and node arrays grow with realloc. Tensors and
 * nodes are named by index (`int`), never by pointer, because the arrays move.
 *
 * A tensor is one of:
 *   - a graph input              (is_input, producer == -1, data == NULL)
 *   - a constant                 (data != NULL: initializer, Constant, folded)
 *   - a node output              (producer >= 0)
 * Shapes are concrete once the compiler has bound the model's inputs; an
 * imported model's inputs may carry symbolic dims (dim == -1, dim_param set).
 *
 * Ops are identified by `op_id` from ops.h; the importer rejects op types that
 * are not in the table, so every node of a graph has a known op.
 */
#ifndef SMELT_IR_IR_H
#define SMELT_IR_IR_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "core/arena.h"
#include "core/diag.h"
#include "core/size.h"
#include "ir/ops.h"
#include "smelt.h"

#define IR_MAX_RANK SMELT_MAX_RANK

typedef struct ir_shape {
    int rank;
    int64_t dim[IR_MAX_RANK]; /* -1: unknown (symbolic) */
} ir_shape;

/* A constant's layout when it is not row-major over its shape (DESIGN.md,
 * "Encodings"). IR_ENC_PANELS: a matmul's B operand, logically [k, n], held
 * as ceil(n / nr) panels of nr columns, shape [ceil(n / nr), k, nr], the
 * columns past n zero (graph/pack_weights.c makes them, for the C target's
 * microkernels, ops/gemm_packed.h). A Conv's weight [M, C, k...] is packed the
 * same way as B[k][n] = W[n][k] over its rows flattened (k = C * k..., n = M).
 * `logical` is the shape the reading op sees ([k, n], or the Conv weight's).
 * A batched GEMM's B, logically [batch, k, n] (Winograd's transformed
 * filters, ops/conv_winograd.h), is each batch's panels one after the other:
 * [batch * ceil(n / nr), k, nr].
 * Panels of a float32 B whose values are all integers within 255 of each
 * other may be held 8-bit (graph/pack_int8.c): the tensor's dtype is then
 * uint8 or int8 and each element's value is the stored one plus `offset`
 * (0 for the float panels). DynamicQuantizeLSTM's R may be int16 k-pair panels
 * instead, [ceil(n / nr) per direction, ceil(k / 2), 2 * nr] (graph/fold_gemm.c).
 * IR_ENC_KPAIRS: an integer convolution's constant weight [M, C, k...] (its
 * values integers within int16) as int16 rows [n = M][K rounded up to even],
 * k = C * k... and the padding column zero, so each row's k-pairs are one
 * 32-bit word: the operand the C target's k-pair microkernel broadcasts
 * (graph/pack_weights.c, ops/conv_gemm.c, target/emit_c_gemm_pairs.c).
 * IR_ENC_KQUADS: the same weight (its values within int8) as int8 rows [n =
 * M][K rounded up to a multiple of 4], each row's k-quads one 32-bit word,
 * for the uint8 x int8 k-quad microkernel. */
typedef enum ir_enc_kind { IR_ENC_NONE, IR_ENC_PANELS, IR_ENC_KPAIRS, IR_ENC_KQUADS } ir_enc_kind;
typedef struct ir_encoding {
    ir_enc_kind kind;
    int64_t k, n, nr;
    ir_shape logical;
    int32_t offset;
} ir_encoding;

typedef struct ir_tensor {
    const char *name;
    smelt_dtype dtype;
    ir_shape shape;
    const char *dim_param[IR_MAX_RANK]; /* symbolic dim names (inputs only) */
    void *data;                         /* constant value, row-major (or as `enc` says); else NULL */
    ir_encoding enc;                    /* layout of `data`; kind IR_ENC_NONE: row-major */
    int producer;                       /* node index, or -1 */
    bool is_input, is_output;
} ir_tensor;

/* The shape an op reads t as: its own, or the logical shape of its encoding. */
static inline ir_shape ir_tensor_logical_shape(const ir_tensor *t)
{
    return t->enc.kind == IR_ENC_NONE ? t->shape : t->enc.logical;
}

typedef enum ir_attr_type {
    IR_ATTR_FLOAT,
    IR_ATTR_INT,
    IR_ATTR_STRING,
    IR_ATTR_TENSOR, /* value in a constant tensor of the graph (`tensor`) */
    IR_ATTR_FLOATS,
    IR_ATTR_INTS,
    IR_ATTR_STRINGS,
    IR_ATTR_GRAPH, /* a subgraph of If/Loop/Scan (`graph`, owned by the enclosing graph) */
    IR_ATTR_OTHER /* sparse tensors, type protos: kept to be rejected by name */
} ir_attr_type;

typedef struct ir_attr {
    const char *name;
    ir_attr_type type;
    int64_t i;
    float f;
    const char *s;
    int n;                /* element count of ints/floats/strings */
    int64_t *ints;
    float *floats;
    const char **strings;
    int tensor;           /* IR_ATTR_TENSOR: tensor index */
    /* IR_ATTR_GRAPH: the subgraph; its inputs are its formal inputs followed by
     * n_cap outer-scope values it reads by name, the k-th of which is the
     * node's input cap[k] (an implicit input of the control-flow node). */
    struct ir_graph *graph;
    int n_cap;
    int *cap;
} ir_attr;

typedef struct ir_node {
    const char *name;     /* model's name, or a generated "<op>_<index>" */
    op_id op;
    int n_in, n_out;
    int *in;              /* tensor indices; -1 for an omitted optional input */
    int *out;
    int n_attr;
    ir_attr *attr;
    bool dead;            /* removed by a pass; compacted by ir_graph_compact */
    const void *params;   /* its attributes parsed (ir/ops.h op_params), or NULL */
} ir_node;

typedef struct ir_graph {
    arena arena;
    ir_tensor *tensors;
    int n_tensors, cap_tensors;
    ir_node *nodes;
    int n_nodes, cap_nodes;
    int *inputs, n_inputs;   /* graph inputs in model order (no initializers) */
    int *outputs, n_outputs; /* graph outputs in model order */
    int opset;               /* default-domain opset the model imports */
    struct ir_graph **subs;  /* subgraphs owned by this graph (IR_ATTR_GRAPH points here) */
    int n_subs, cap_subs;
} ir_graph;

ir_graph *ir_graph_new(void);
void ir_graph_free(ir_graph *g);
/* Deep copy (constant data and subgraphs included). NULL on OOM. */
ir_graph *ir_graph_clone(const ir_graph *g);
/* A copy whose constants point at g's data instead of copying it (what a
 * program compiled from a model does: the weights stay the model's, once, for
 * every program). g must outlive the copy, and nothing may write through a
 * shared constant's data: passes that change a constant give its tensor new
 * data (ir_tensor_alloc_data), as every pass does. NULL on OOM. */
ir_graph *ir_graph_clone_sharing_data(const ir_graph *g);
/* Make g own `sub` (freed with g). 0 on OOM (then sub is freed). */
int ir_graph_adopt(ir_graph *g, ir_graph *sub);

/* Add a tensor; returns its index or -1 on OOM. `shape` may be NULL (rank 0,
 * filled in later by shape inference). The name is copied. */
int ir_tensor_add(ir_graph *g, const char *name, smelt_dtype dt, const ir_shape *shape);
/* Allocate zeroed constant storage for tensor t from its dtype and shape. */
void *ir_tensor_alloc_data(ir_graph *g, int t);
/* Add a node; arrays and name are copied. Returns its index or -1 on OOM. */
int ir_node_add(ir_graph *g, const char *name, op_id op, int n_in, const int *in,
                int n_out, const int *out);
/* Append a copy of `a` (name/strings/arrays copied) to node n. 0 on OOM. */
int ir_node_attr_add(ir_graph *g, int n, const ir_attr *a);
/* Parse node n's attributes into its params struct (op_params; in g's arena),
 * replacing any parsed before; NULL params for an op without one. */
smelt_status ir_node_parse_params(ir_graph *g, int n);
/* Node n's params, parsed now if they were not (a shape rule run on its own). */
smelt_status ir_node_params(ir_graph *g, int n, const void **params);
/* Node n's params for a reader that holds it const (a lowering, a geometry
 * helper): those parsed (n->params), or, for a node a pass added after
 * inference, parsed now into `scratch` (op_params[n->op].size bytes, the op's
 * params struct). A pass that edits a node's attributes re-parses it
 * (ir_node_parse_params), so what is found here is never stale. */
smelt_status ir_node_params_get(const ir_graph *g, const ir_node *n, void *scratch, const void **params);
/* Record graph inputs/outputs (copied). 0 on OOM. */
int ir_graph_set_io(ir_graph *g, int n_in, const int *in, int n_out, const int *out);
/* Drop dead nodes and unreferenced tensors, renumbering everything. */
smelt_status ir_graph_compact(ir_graph *g);

/* A Conv that computes an integer convolution in float32 (onnx/quantized.c,
 * ConvInteger's chunks) carries this attribute: every element of its input X
 * is an integer of magnitude at most its value, and that value times any
 * output channel's sum of |weight| is at most 2^24, so every partial sum of
 * the convolution is an integer float32 holds exactly, in any order. */
#define IR_ATTR_INT_AMAX "smelt.int_amax"
/* Such a Conv has a fourth input, its shift s (float32, one element): X + s is
 * the 8-bit input itself as uint8 ([0, 255]; x - x_zp + x_zp, or + 128 for
 * int8), so a padded element (X = 0) is s. Only the uint8 k-quad form reads it
 * (ops/conv_gemm.c); every other form computes the conv of X and ignores it.
 * Where graph/pack_weights.c takes the quads (the weight w clamped to int8,
 * w8, IR_ENC_KQUADS) it adds a fifth input, float32 [M + 3R]: per output
 * channel the sum of w8's integers, then for each of the R elements of w
 * outside int8 its channel, its k and its residual w - w8; the conv is
 *     sum w8 (X + s) + sum of residuals r ((X + s)[k] - s) - s * rowsum(w8)
 * (each step exact: graph/pack_weights.c, ops/conv_gemm.c). */

/* Attribute lookup; the typed getters return `def` when absent. */
const ir_attr *ir_attr_find(const ir_node *n, const char *name);
int64_t ir_attr_int(const ir_node *n, const char *name, int64_t def);
float ir_attr_float(const ir_node *n, const char *name, float def);
const char *ir_attr_string(const ir_node *n, const char *name, const char *def);
/* Returns the count (or -1 when absent) and the array through `vals`. */
int ir_attr_ints(const ir_node *n, const char *name, const int64_t **vals);
int ir_attr_floats(const ir_node *n, const char *name, const float **vals);

/* Shapes. */
int64_t ir_shape_numel(const ir_shape *s);
/* Whether every dim is a size and the element count is within
 * SMELT_MAX_ELEMS (core/size.h): true of every shape after graph_bind_inputs
 * and graph_infer, which check it. */
bool ir_shape_ok(const ir_shape *s);
bool ir_shape_eq(const ir_shape *a, const ir_shape *b);
/* "[1,3,224,224]" into buf (returns buf). */
const char *ir_shape_str(const ir_shape *s, char *buf, size_t cap);
/* "[lo0:hi0,lo1:hi1,...]": a box of `rank` dims, for dumps. */
const char *ir_box_str(int rank, const int64_t *lo, const int64_t *hi, char *buf, size_t cap);
/* Row-major strides in elements. */
void ir_shape_strides(const ir_shape *s, int64_t *strides);
/* Numpy-style broadcast of a and b into out; false if incompatible. */
bool ir_shape_broadcast(const ir_shape *a, const ir_shape *b, ir_shape *out);

static inline const ir_tensor *ir_in(const ir_graph *g, const ir_node *n, int i)
{
    return (i < n->n_in && n->in[i] >= 0) ? &g->tensors[n->in[i]] : NULL;
}
static inline ir_tensor *ir_out(ir_graph *g, const ir_node *n, int i)
{
    return &g->tensors[n->out[i]];
}
static inline int64_t ir_tensor_numel(const ir_tensor *t) { return ir_shape_numel(&t->shape); }

/* Read element i of a constant int tensor (int32/int64/bool/uint8...) as int64;
 * or of any numeric constant as double. */
int64_t ir_const_int(const ir_tensor *t, int64_t i);
double ir_const_double(const ir_tensor *t, int64_t i);

/* Structural checks: indices in range, every non-input tensor has one producer
 * or data, nodes topologically ordered, arities within the op table's. */
smelt_status ir_verify(const ir_graph *g);

/* Human-readable listing (`smelt compile --emit ir`). */
void ir_dump(const ir_graph *g, FILE *f);

/* A diagnostic naming node n: "node 'conv3' (Conv): <message>". */
smelt_status ir_node_fail(const ir_node *n, smelt_status st, const char *fmt, ...) DIAG_PRINTF(3, 4);

#endif
