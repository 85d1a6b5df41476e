/*
 * ops.h — the op table: one row per ONNX op smelt implements.
 *
 * Rows live in three files, expanded here with X-macros:
 *   ops_data.h     elementwise, broadcast, injective and shape ops
 *   ops_compute.h  reductions, contractions, normalizations, pooling
 *   ops_more.h     everything else (resampling, scatter, sorting, ...)
 * Each row is
 *   X(Name, KIND, min_in, max_in, min_out, max_out, value_in, infer, scalar, elem, lower, flags, insert)
 * where
 *   KIND      op_kind below; fusion reasons about kinds, never about names.
 *   value_in  bitmask of inputs whose *values* must be known at compile time
 *             (Reshape's shape, Slice's starts...): the compiler folds them to
 *             constants or binds them from given graph inputs, else it fails
 *             naming the node.
 *   infer     shape rule: sets dtype and shape of every output (required).
 *   scalar    elementwise/broadcast ops: output from the input scalars,
 *             with numpy broadcasting applied by the caller (or OP_NONE).
 *   elem      injective ops: output element at a multi-index, reading inputs
 *             through lower_load (this is the op's index map; or OP_NONE).
 *             Reductions may set it too, beside `lower`: one output element
 *             with its own reduction loop, which fusion evaluates once per row
 *             inside the kernel that consumes it (fuse.h, "row").
 *   lower     reduction/contraction/opaque ops: builds whole kernels (or OP_NONE).
 *   flags     OPF_* bits below.
 *   insert    ops that place inputs unchanged into a larger output (Concat,
 *             constant Pad): whether input i is such a block, and where it
 *             starts. Fusion lets the input's producer write straight into
 *             that block (or OP_NONE).
 * One of scalar/elem/lower is set (elem may join lower, above), except for ops always folded at
 * compile time (Shape, Size, Constant...), which set none and have KIND OPAQUE.
 *
 * Adding an op: add its row, write its functions; the arrays indexed by op_id
 * are sized by OP_COUNT and checked with _Static_assert.
 */
#ifndef SMELT_IR_OPS_H
#define SMELT_IR_OPS_H

#include <stdbool.h>
#include <stdint.h>

#include "smelt.h"

typedef enum op_kind {
    OPK_ELEMENTWISE, /* same-shape inputs, one output element per input element */
    OPK_BROADCAST,   /* elementwise with numpy broadcasting                     */
    OPK_INJECTIVE,   /* each output element reads inputs at computed indices    */
    OPK_REDUCTION,   /* output element folds a range of input elements          */
    OPK_CONTRACTION, /* matmul/conv: sums of products, tiled                    */
    OPK_OPAQUE,      /* anything else: lowered whole, never fused through       */
    OPK_COUNT
} op_kind;

struct ir_graph;
struct ir_node;
struct lower_ctx;
struct kir_kernel;
typedef int32_t kir_val;

typedef smelt_status (*op_infer_fn)(struct ir_graph *g, int node);
typedef kir_val (*op_scalar_fn)(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
typedef kir_val (*op_elem_fn)(struct lower_ctx *c, int out, const kir_val *idx);
typedef smelt_status (*op_lower_fn)(struct lower_ctx *c);
typedef bool (*op_insert_fn)(const struct ir_graph *g, const struct ir_node *n, int input, int64_t *offset);

#define OP_NONE 0

/* Op flags. */
#define OPF_VIEW 0x1       /* output 0 is input 0's bytes reinterpreted (Reshape...): no copy needed */
#define OPF_SHAPE_ONLY 0x2 /* reads only its inputs' shapes and dtypes, never their values (Shape, Size):
                              a value it produces never makes its input's values shape-deciding */
#define OPF_CONTROL 0x4    /* If/Loop/Scan: `infer` expands the node into the graph (graph/control.c), and
                              shape inference goes on with the nodes it put in its place */

#include "ir/ops_compute.h"
#include "ir/ops_data.h"
#include "ir/ops_more.h"

#define SMELT_OPS(X) OPS_DATA(X) OPS_COMPUTE(X) OPS_MORE(X)

typedef enum op_id {
    OP_INVALID = -1,
#define X(name, ...) OP_##name,
    SMELT_OPS(X)
#undef X
    OP_COUNT
} op_id;

typedef struct op_info {
    const char *name;
    op_kind kind;
    int min_in, max_in, min_out, max_out;
    uint32_t value_in;
    op_infer_fn infer;
    op_scalar_fn scalar;
    op_elem_fn elem;
    op_lower_fn lower;
    unsigned flags;
    op_insert_fn insert;
} op_info;

extern const op_info op_table[OP_COUNT];

/* The op named `op_type` in the default ONNX domain, or OP_INVALID. */
op_id op_lookup(const char *op_type);
const char *op_kind_name(op_kind k);

static inline const op_info *op_get(op_id op) { return &op_table[op]; }

#endif
