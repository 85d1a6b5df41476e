/*
 * ops.h — the op table: one row per ONNX op smelt implements.
 *
 * The rows are SMELT_OPS below; their functions live in ops/, one file per
 * op family (ops/elementwise.c, layout.c, generate.c, gather_scatter.c,
 * reduce.c, scan_topk.c, norm.c, pool.c, conv.c, matmul.c, resize.c,
 * einsum.c, attention.c, quantize.c), each with a header of its prototypes.
 * ops/op_table.c expands the rows into op_table; this header names the
 * functions only as tokens, so graph/ and fuse/ read the table without
 * including ops/. Each row is
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
 * Adding an op: add its row here, write its functions in its family's file and
 * declare them in the family's header; the arrays indexed by op_id are sized
 * by OP_COUNT and checked with _Static_assert. An op with a workgroup-
 * cooperative GPU form also gets an op_gpu_lower entry (ops/op_table.c).
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
typedef smelt_status (*op_parse_fn)(const struct ir_graph *g, const struct ir_node *n, void *params);

#define OP_NONE 0

/* Op flags. */
#define OPF_VIEW 0x1       /* output 0 is input 0's bytes reinterpreted (Reshape...): no copy needed */
#define OPF_SHAPE_ONLY 0x2 /* reads only its inputs' shapes and dtypes, never their values (Shape, Size):
                              a value it produces never makes its input's values shape-deciding */
#define OPF_CONTROL 0x4    /* If/Loop/Scan: `infer` expands the node into the graph (graph/control.c), and
                              shape inference goes on with the nodes it put in its place, or keeps it as
                              one node run on the host (graph/control_rt.c; `lower` is its placeholder) */
#define OPF_INTERNAL 0x8   /* written into the graph only by smelt, with inputs it prepared: a com.microsoft
                              op's expansion (onnx/expand.h) or a compile-time pass (graph/passes.h); a
                              model's node of its name is refused */
#define OPF_SIBLINGS 0x10  /* a reduction whose lowering also computes, in the same loops, other such
                              reductions of the same input with the same parameters (fuse.h "siblings") */
#define OPF_PASSES 0x20    /* a lowering that reads each input element in several passes (Softmax: max, sum
                              of exps, store): fusion materializes a select (Concat) it would otherwise
                              evaluate again in every pass (fuse.h "passes") */

/*  name            kind         in     out  value_in infer                scalar                  elem                lower  flags  insert */
#define SMELT_OPS(X) \
    X(Identity,       ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_same,           scalar_Identity,        OP_NONE,             OP_NONE, OPF_VIEW, OP_NONE) \
    X(Constant,       OPAQUE,      0, 0,  1, 1,  0x0,  infer_Constant,       OP_NONE,                OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(ConstantOfShape,INJECTIVE,   1, 1,  1, 1,  0x1,  infer_ConstantOfShape,OP_NONE,                elem_ConstantOfShape,OP_NONE, 0, OP_NONE) \
    X(Shape,          OPAQUE,      1, 1,  1, 1,  0x0,  infer_Shape,          OP_NONE,                OP_NONE,             OP_NONE, OPF_SHAPE_ONLY, OP_NONE) \
    X(Size,           OPAQUE,      1, 1,  1, 1,  0x0,  infer_Size,           OP_NONE,                OP_NONE,             OP_NONE, OPF_SHAPE_ONLY, OP_NONE) \
    X(Cast,           ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_Cast,           scalar_Cast,            OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(CastLike,       INJECTIVE,   2, 2,  1, 1,  0x0,  infer_Cast,           OP_NONE,                elem_CastLike,       OP_NONE, 0, OP_NONE) \
    X(Reshape,        INJECTIVE,   2, 2,  1, 1,  0x2,  infer_Reshape,        OP_NONE,                elem_Reshape,        OP_NONE, OPF_VIEW, OP_NONE) \
    X(Flatten,        INJECTIVE,   1, 1,  1, 1,  0x0,  infer_Flatten,        OP_NONE,                elem_Reshape,        OP_NONE, OPF_VIEW, OP_NONE) \
    X(Squeeze,        INJECTIVE,   1, 2,  1, 1,  0x2,  infer_Squeeze,        OP_NONE,                elem_Reshape,        OP_NONE, OPF_VIEW, OP_NONE) \
    X(Unsqueeze,      INJECTIVE,   1, 2,  1, 1,  0x2,  infer_Unsqueeze,      OP_NONE,                elem_Reshape,        OP_NONE, OPF_VIEW, OP_NONE) \
    X(Transpose,      INJECTIVE,   1, 1,  1, 1,  0x0,  infer_Transpose,      OP_NONE,                elem_Transpose,      OP_NONE, 0, OP_NONE) \
    X(Expand,         INJECTIVE,   2, 2,  1, 1,  0x2,  infer_Expand,         OP_NONE,                elem_Expand,         OP_NONE, 0, OP_NONE) \
    X(Concat,         INJECTIVE,   1, 64, 1, 1,  0x0,  infer_Concat,         OP_NONE,                elem_Concat,         OP_NONE, 0, insert_Concat) \
    X(Split,          INJECTIVE,   1, 2,  1, 64,  0x2,  infer_Split,          OP_NONE,                elem_Split,          OP_NONE, 0, OP_NONE) \
    X(Slice,          INJECTIVE,   1, 5,  1, 1,  0x1e, infer_Slice,          OP_NONE,                elem_Slice,          OP_NONE, 0, OP_NONE) \
    X(Gather,         INJECTIVE,   2, 2,  1, 1,  0x0,  infer_Gather,         OP_NONE,                elem_Gather,         OP_NONE, 0, OP_NONE) \
    X(GatherElements, INJECTIVE,   2, 2,  1, 1,  0x0,  infer_GatherElements,  OP_NONE,                elem_GatherElements, OP_NONE, 0, OP_NONE) \
    X(GatherND,       INJECTIVE,   2, 2,  1, 1,  0x0,  infer_GatherND,        OP_NONE,                elem_GatherND,       OP_NONE, 0, OP_NONE) \
    X(DepthToSpace,   INJECTIVE,   1, 1,  1, 1,  0x0,  infer_DepthToSpace,    OP_NONE,                elem_DepthToSpace,   OP_NONE, 0, OP_NONE) \
    X(SpaceToDepth,   INJECTIVE,   1, 1,  1, 1,  0x0,  infer_DepthToSpace,    OP_NONE,                elem_SpaceToDepth,   OP_NONE, 0, OP_NONE) \
    X(Where,          BROADCAST,   3, 3,  1, 1,  0x0,  infer_Where,          scalar_Where,           OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(Range,          INJECTIVE,   3, 3,  1, 1,  0x7,  infer_Range,          OP_NONE,                elem_Range,          OP_NONE, 0, OP_NONE) \
    X(Tile,           INJECTIVE,   2, 2,  1, 1,  0x2,  infer_Tile,           OP_NONE,                elem_Tile,           OP_NONE, 0, OP_NONE) \
    X(Pad,            INJECTIVE,   1, 4,  1, 1,  0xa,  infer_Pad,            OP_NONE,                elem_Pad,            OP_NONE, 0, insert_Pad) \
    X(Dropout,        INJECTIVE,   1, 3,  1, 2,  0x0,  infer_Dropout,        OP_NONE,                elem_Dropout,        OP_NONE, 0, OP_NONE) \
    X(Add,            BROADCAST,   2, 2,  1, 1,  0x0,  infer_broadcast,      scalar_Add,             OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(Sub,            BROADCAST,   2, 2,  1, 1,  0x0,  infer_broadcast,      scalar_Sub,             OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(Mul,            BROADCAST,   2, 2,  1, 1,  0x0,  infer_broadcast,      scalar_Mul,             OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(Div,            BROADCAST,   2, 2,  1, 1,  0x0,  infer_broadcast,      scalar_Div,             OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(Mod,            BROADCAST,   2, 2,  1, 1,  0x0,  infer_broadcast,      scalar_Mod,             OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(Pow,            BROADCAST,   2, 2,  1, 1,  0x0,  infer_Pow,            scalar_Pow,             OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(Sum,            BROADCAST,   1, 64, 1, 1,  0x0,  infer_broadcast,      scalar_Sum,             OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(Mean,           BROADCAST,   1, 64, 1, 1,  0x0,  infer_float_broadcast,scalar_Mean,            OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(Min,            BROADCAST,   1, 64, 1, 1,  0x0,  infer_broadcast,      scalar_Min,             OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(Max,            BROADCAST,   1, 64, 1, 1,  0x0,  infer_broadcast,      scalar_Max,             OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(PRelu,          BROADCAST,   2, 2,  1, 1,  0x0,  infer_PRelu,          scalar_PRelu,           OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(Sqrt,           ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_float,          scalar_Sqrt,            OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(Reciprocal,     ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_float,          scalar_Reciprocal,      OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(Neg,            ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_numeric,        scalar_Neg,             OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(Abs,            ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_numeric,        scalar_Abs,             OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(Sign,           ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_numeric,        scalar_Sign,            OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(Exp,            ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_float,          scalar_Exp,             OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(Log,            ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_float,          scalar_Log,             OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(Sin,            ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_float,          scalar_Sin,             OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(Cos,            ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_float,          scalar_Cos,             OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(Tan,            ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_float,          scalar_Tan,             OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(Asin,           ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_float,          scalar_Asin,            OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(Acos,           ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_float,          scalar_Acos,            OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(Atan,           ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_float,          scalar_Atan,            OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(Sinh,           ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_float,          scalar_Sinh,            OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(Cosh,           ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_float,          scalar_Cosh,            OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(Asinh,          ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_float,          scalar_Asinh,           OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(Acosh,          ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_float,          scalar_Acosh,           OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(Atanh,          ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_float,          scalar_Atanh,           OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(Tanh,           ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_float,          scalar_Tanh,            OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(Sigmoid,        ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_float,          scalar_Sigmoid,         OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(Erf,            ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_float,          scalar_Erf,             OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(Relu,           ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_numeric,        scalar_Relu,            OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(LeakyRelu,      ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_float,          scalar_LeakyRelu,       OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(Elu,            ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_float,          scalar_Elu,             OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(Selu,           ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_float,          scalar_Selu,            OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(Celu,           ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_float,          scalar_Celu,            OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(ThresholdedRelu,ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_float,          scalar_ThresholdedRelu, OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(Shrink,         ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_numeric,        scalar_Shrink,          OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(Softsign,       ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_float,          scalar_Softsign,        OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(Mish,           ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_float,          scalar_Mish,            OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(Clip,           BROADCAST,   1, 3,  1, 1,  0x0,  infer_Clip,           scalar_Clip,            OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(HardSigmoid,    ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_float,          scalar_HardSigmoid,     OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(HardSwish,      ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_float,          scalar_HardSwish,       OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(Softplus,       ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_float,          scalar_Softplus,        OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(Gelu,           ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_float,          scalar_Gelu,            OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(Floor,          ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_float,          scalar_Floor,           OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(Ceil,           ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_float,          scalar_Ceil,            OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(Round,          ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_float,          scalar_Round,           OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(IsNaN,          ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_float_test,     scalar_IsNaN,           OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(IsInf,          ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_float_test,     scalar_IsInf,           OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(Equal,          BROADCAST,   2, 2,  1, 1,  0x0,  infer_compare,        scalar_Equal,           OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(Less,           BROADCAST,   2, 2,  1, 1,  0x0,  infer_compare,        scalar_Less,            OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(Greater,        BROADCAST,   2, 2,  1, 1,  0x0,  infer_compare,        scalar_Greater,         OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(LessOrEqual,    BROADCAST,   2, 2,  1, 1,  0x0,  infer_compare,        scalar_LessOrEqual,     OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(GreaterOrEqual, BROADCAST,   2, 2,  1, 1,  0x0,  infer_compare,        scalar_GreaterOrEqual,  OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(Not,            ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_logical,        scalar_Not,             OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(And,            BROADCAST,   2, 2,  1, 1,  0x0,  infer_logical,        scalar_And,             OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(Or,             BROADCAST,   2, 2,  1, 1,  0x0,  infer_logical,        scalar_Or,              OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(Xor,            BROADCAST,   2, 2,  1, 1,  0x0,  infer_logical,        scalar_Xor,             OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(BitShift,       BROADCAST,   2, 2,  1, 1,  0x0,  infer_int_broadcast,  scalar_BitShift,        OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(BitwiseNot,     ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_int_unary,       scalar_BitwiseNot,       OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(BitwiseAnd,     BROADCAST,   2, 2,  1, 1,  0x0,  infer_int_broadcast,  scalar_BitwiseAnd,      OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(BitwiseOr,      BROADCAST,   2, 2,  1, 1,  0x0,  infer_int_broadcast,  scalar_BitwiseOr,       OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(BitwiseXor,     BROADCAST,   2, 2,  1, 1,  0x0,  infer_int_broadcast,  scalar_BitwiseXor,      OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(MatMul,             CONTRACTION, 2, 2, 1, 1, 0x0, infer_MatMul,             OP_NONE, OP_NONE, lower_MatMul, 0, OP_NONE) \
    X(Gemm,               CONTRACTION, 2, 3, 1, 1, 0x0, infer_Gemm,               OP_NONE, OP_NONE, lower_Gemm, 0, OP_NONE) \
    X(Conv,               CONTRACTION, 2, 5, 1, 1, 0x0, infer_Conv,               OP_NONE, OP_NONE, lower_Conv, 0, OP_NONE) \
    X(ConvTranspose,      CONTRACTION, 2, 3, 1, 1, 0x0, infer_ConvTranspose,      OP_NONE, OP_NONE, lower_ConvTranspose, 0, OP_NONE) \
    X(MaxPool,            REDUCTION,   1, 1, 1, 2, 0x0, infer_Pool,               OP_NONE, OP_NONE, lower_MaxPool, 0, OP_NONE) \
    X(AveragePool,        REDUCTION,   1, 1, 1, 1, 0x0, infer_Pool,               OP_NONE, OP_NONE, lower_AveragePool, 0, OP_NONE) \
    X(GlobalAveragePool,  REDUCTION,   1, 1, 1, 1, 0x0, infer_GlobalPool,         OP_NONE, OP_NONE, lower_GlobalAveragePool, 0, OP_NONE) \
    X(GlobalMaxPool,      REDUCTION,   1, 1, 1, 1, 0x0, infer_GlobalPool,         OP_NONE, OP_NONE, lower_GlobalMaxPool, 0, OP_NONE) \
    X(BatchNormalization, OPAQUE,      5, 5, 1, 3, 0x0, infer_BatchNormalization, OP_NONE, OP_NONE, lower_BatchNormalization, 0, OP_NONE) \
    X(LayerNormalization, REDUCTION,   2, 3, 1, 3, 0x0, infer_LayerNormalization, OP_NONE, OP_NONE, lower_LayerNormalization, 0, OP_NONE) \
    X(Softmax,            REDUCTION,   1, 1, 1, 1, 0x0, infer_Softmax,            OP_NONE, OP_NONE, lower_Softmax, OPF_PASSES, OP_NONE) \
    X(LogSoftmax,         REDUCTION,   1, 1, 1, 1, 0x0, infer_Softmax,            OP_NONE, OP_NONE, lower_LogSoftmax, OPF_PASSES, OP_NONE) \
    X(ReduceSum,          REDUCTION,   1, 2, 1, 1, 0x2, infer_Reduce,             OP_NONE, elem_Reduce, lower_Reduce, OPF_SIBLINGS, OP_NONE) \
    X(ReduceMean,         REDUCTION,   1, 2, 1, 1, 0x2, infer_Reduce,             OP_NONE, elem_Reduce, lower_Reduce, OPF_SIBLINGS, OP_NONE) \
    X(ReduceMax,          REDUCTION,   1, 2, 1, 1, 0x2, infer_Reduce,             OP_NONE, elem_Reduce, lower_Reduce, OPF_SIBLINGS, OP_NONE) \
    X(ReduceMin,          REDUCTION,   1, 2, 1, 1, 0x2, infer_Reduce,             OP_NONE, elem_Reduce, lower_Reduce, OPF_SIBLINGS, OP_NONE) \
    X(ReduceProd,         REDUCTION,   1, 2, 1, 1, 0x2, infer_Reduce,             OP_NONE, elem_Reduce, lower_Reduce, OPF_SIBLINGS, OP_NONE) \
    X(ReduceL1,           REDUCTION,   1, 2, 1, 1, 0x2, infer_Reduce,             OP_NONE, elem_Reduce, lower_Reduce, OPF_SIBLINGS, OP_NONE) \
    X(ReduceL2,           REDUCTION,   1, 2, 1, 1, 0x2, infer_Reduce,             OP_NONE, elem_Reduce, lower_Reduce, OPF_SIBLINGS, OP_NONE) \
    X(ReduceSumSquare,    REDUCTION,   1, 2, 1, 1, 0x2, infer_Reduce,             OP_NONE, elem_Reduce, lower_Reduce, OPF_SIBLINGS, OP_NONE) \
    X(ReduceLogSum,       REDUCTION,   1, 2, 1, 1, 0x2, infer_Reduce,             OP_NONE, elem_Reduce, lower_Reduce, OPF_SIBLINGS, OP_NONE) \
    X(ReduceLogSumExp,    REDUCTION,   1, 2, 1, 1, 0x2, infer_Reduce,             OP_NONE, elem_Reduce, lower_Reduce, 0, OP_NONE) \
    X(ArgMax,             REDUCTION,   1, 1, 1, 1, 0x0, infer_ArgMax,             OP_NONE, OP_NONE, lower_ArgMax, 0, OP_NONE) \
    X(ArgMin,             REDUCTION,   1, 1, 1, 1, 0x0, infer_ArgMax,             OP_NONE, OP_NONE, lower_ArgMax, 0, OP_NONE) \
    X(Hardmax,            REDUCTION,   1, 1, 1, 1, 0x0, infer_Softmax,            OP_NONE, OP_NONE, lower_Hardmax, OPF_PASSES, OP_NONE) \
    X(InstanceNormalization, REDUCTION, 3, 3, 1, 1, 0x0, infer_InstanceNormalization, OP_NONE, OP_NONE, lower_InstanceNormalization, 0, OP_NONE) \
    X(LpNormalization,    REDUCTION,   1, 1, 1, 1, 0x0, infer_LpNormalization,    OP_NONE, OP_NONE, lower_LpNormalization, 0, OP_NONE) \
    X(CumSum,             OPAQUE,      2, 2, 1, 1, 0x2, infer_CumSum,             OP_NONE, OP_NONE, lower_CumSum, 0, OP_NONE) \
    X(Trilu,              INJECTIVE,   1, 2, 1, 1, 0x2, infer_Trilu,              OP_NONE, elem_Trilu, OP_NONE, 0, OP_NONE) \
    X(RMSNormalization,         REDUCTION,   2, 2, 1, 1, 0x0, infer_RMSNormalization,         OP_NONE,      OP_NONE,             lower_RMSNormalization,          0, OP_NONE) \
    X(GroupNormalization,       REDUCTION,   3, 3, 1, 1, 0x0, infer_GroupNormalization,       OP_NONE,      OP_NONE,             lower_GroupNormalization,        0, OP_NONE) \
    X(MeanVarianceNormalization,REDUCTION,   1, 1, 1, 1, 0x0, infer_MeanVarianceNormalization,OP_NONE,      OP_NONE,             lower_MeanVarianceNormalization, 0, OP_NONE) \
    X(LRN,                      REDUCTION,   1, 1, 1, 1, 0x0, infer_LRN,                      OP_NONE,      OP_NONE,             lower_LRN,                       0, OP_NONE) \
    X(Swish,                    ELEMENTWISE, 1, 1, 1, 1, 0x0, infer_Swish,                    scalar_Swish, OP_NONE,             OP_NONE,                         0, OP_NONE) \
    X(NegativeLogLikelihoodLoss,OPAQUE,      2, 3, 1, 1, 0x0, infer_NegativeLogLikelihoodLoss,OP_NONE,      OP_NONE,             lower_NegativeLogLikelihoodLoss, 0, OP_NONE) \
    X(SoftmaxCrossEntropyLoss,  OPAQUE,      2, 3, 1, 2, 0x0, infer_NegativeLogLikelihoodLoss,OP_NONE,      OP_NONE,             lower_NegativeLogLikelihoodLoss, 0, OP_NONE) \
    X(OneHot,                   INJECTIVE,   3, 3, 1, 1, 0x2, infer_OneHot,                   OP_NONE,      elem_OneHot,         OP_NONE,                         0, OP_NONE) \
    X(EyeLike,                  INJECTIVE,   1, 1, 1, 1, 0x0, infer_EyeLike,                  OP_NONE,      elem_EyeLike,        OP_NONE,                         0, OP_NONE) \
    X(HannWindow,               INJECTIVE,   1, 1, 1, 1, 0x1, infer_Window,                   OP_NONE,      elem_Window,         OP_NONE,                         0, OP_NONE) \
    X(HammingWindow,            INJECTIVE,   1, 1, 1, 1, 0x1, infer_Window,                   OP_NONE,      elem_Window,         OP_NONE,                         0, OP_NONE) \
    X(BlackmanWindow,           INJECTIVE,   1, 1, 1, 1, 0x1, infer_Window,                   OP_NONE,      elem_Window,         OP_NONE,                         0, OP_NONE) \
    X(CenterCropPad,            INJECTIVE,   2, 2, 1, 1, 0x2, infer_CenterCropPad,            OP_NONE,      elem_CenterCropPad,  OP_NONE,                         0, OP_NONE) \
    X(QuantizeLinear,           INJECTIVE,   2, 3, 1, 1, 0x0, infer_QuantizeLinear,           OP_NONE,      elem_QuantizeLinear, OP_NONE,                         0, OP_NONE) \
    X(DequantizeLinear,         INJECTIVE,   2, 3, 1, 1, 0x0, infer_DequantizeLinear,         OP_NONE,      elem_DequantizeLinear,OP_NONE,                        0, OP_NONE) \
    X(CumProd,                  OPAQUE,      2, 2, 1, 1, 0x2, infer_CumProd,                  OP_NONE,      OP_NONE,             lower_CumProd,                   0, OP_NONE) \
    X(TopK,                     OPAQUE,      1, 2, 2, 2, 0x2, infer_TopK,                     OP_NONE,      OP_NONE,             lower_TopK,                      0, OP_NONE) \
    X(ScatterElements,          OPAQUE,      3, 3, 1, 1, 0x0, infer_ScatterElements,          OP_NONE,      OP_NONE,             lower_ScatterElements,           0, OP_NONE) \
    X(Scatter,                  OPAQUE,      3, 3, 1, 1, 0x0, infer_ScatterElements,          OP_NONE,      OP_NONE,             lower_ScatterElements,           0, OP_NONE) \
    X(ScatterND,                OPAQUE,      3, 3, 1, 1, 0x0, infer_ScatterND,                OP_NONE,      OP_NONE,             lower_ScatterND,                 0, OP_NONE) \
    X(Resize,                   INJECTIVE,   1, 4, 1, 1, 0xe, infer_Resize,                   OP_NONE,      elem_Resize,         OP_NONE,                         0, OP_NONE) \
    X(Upsample,                 INJECTIVE,   1, 2, 1, 1, 0x2, infer_Resize,                   OP_NONE,      elem_Resize,         OP_NONE,                         0, OP_NONE) \
    X(Einsum,                   OPAQUE,      1, 8, 1, 1, 0x0, infer_Einsum,                   OP_NONE,      OP_NONE,             lower_Einsum,                    0, OP_NONE) \
    X(Attention,                OPAQUE,      3, 7, 1, 4, 0x0, infer_Attention,                OP_NONE,      OP_NONE,             lower_Attention,                 0, OP_NONE) \
    X(LpPool,                   REDUCTION,   1, 1, 1, 1, 0x0, infer_Pool,                     OP_NONE,      OP_NONE,             lower_LpPool,                    0, OP_NONE) \
    X(RotaryEmbedding,          INJECTIVE,   3, 4, 1, 1, 0x0, infer_RotaryEmbedding,          OP_NONE,      elem_RotaryEmbedding,OP_NONE,                         0, OP_NONE) \
    X(RNN,                      OPAQUE,      3, 6, 0, 2, 0x0, infer_Recurrent,                OP_NONE,      OP_NONE,             lower_Recurrent,                 0, OP_NONE) \
    X(GRU,                      OPAQUE,      3, 6, 0, 2, 0x0, infer_Recurrent,                OP_NONE,      OP_NONE,             lower_Recurrent,                 0, OP_NONE) \
    X(LSTM,                     OPAQUE,      3, 8, 0, 3, 0x0, infer_Recurrent,                OP_NONE,      OP_NONE,             lower_Recurrent,                 0, OP_NONE) \
    X(DynamicQuantizeLSTM,      OPAQUE,      3,14, 0, 3, 0x0, infer_Recurrent,                OP_NONE,      OP_NONE,             lower_Recurrent,                 OPF_INTERNAL, OP_NONE) \
    X(PackedRNN,                OPAQUE,      3, 6, 0, 2, 0x0, infer_Recurrent,                OP_NONE,      OP_NONE,             lower_Recurrent,                 OPF_INTERNAL, OP_NONE) \
    X(PackedGRU,                OPAQUE,      3, 6, 0, 2, 0x0, infer_Recurrent,                OP_NONE,      OP_NONE,             lower_Recurrent,                 OPF_INTERNAL, OP_NONE) \
    X(PackedLSTM,               OPAQUE,      3, 8, 0, 3, 0x0, infer_Recurrent,                OP_NONE,      OP_NONE,             lower_Recurrent,                 OPF_INTERNAL, OP_NONE) \
    X(WinogradInput,            OPAQUE,      1, 1, 1, 1, 0x0, infer_WinogradInput,            OP_NONE,      OP_NONE,             lower_WinogradInput,             OPF_INTERNAL, OP_NONE) \
    X(WinogradGemm,             OPAQUE,      2, 2, 1, 1, 0x0, infer_WinogradGemm,             OP_NONE,      OP_NONE,             lower_WinogradGemm,              OPF_INTERNAL, OP_NONE) \
    X(WinogradOutput,           OPAQUE,      1, 2, 1, 1, 0x0, infer_WinogradOutput,           OP_NONE,      OP_NONE,             lower_WinogradOutput,            OPF_INTERNAL, OP_NONE) \
    X(If,                       OPAQUE,      1, 1 << 20, 1, 1 << 20, 0x1, control_expand,  OP_NONE,      OP_NONE,             lower_control_host,              OPF_CONTROL, OP_NONE) \
    X(Loop,                     OPAQUE,      2, 1 << 20, 1, 1 << 20, 0x3, control_expand,  OP_NONE,      OP_NONE,             lower_control_host,              OPF_CONTROL, OP_NONE) \
    X(Scan,                     OPAQUE,      1, 1 << 20, 1, 1 << 20, 0x0, control_expand,  OP_NONE,      OP_NONE,             lower_control_host,              OPF_CONTROL, OP_NONE)

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

/* The op's workgroup-cooperative lowering, used instead of `lower` on targets
 * with wg_size > 1 (NULL: the op has none). */
extern const op_lower_fn op_gpu_lower[OP_COUNT];

/* Per-node parameters: an op may parse its attributes once, with their
 * defaults and checks, into a params struct of its family (ops/<family>.h).
 * op_params[op] names the parser and the struct's size (ops/op_table.c);
 * graph_infer runs it before the shape rule, on every run so that a pass that
 * edits attributes is seen, and keeps the result in ir_node.params, which the
 * shape rule and the lowering read. An op without an entry (parse NULL) has
 * no params struct and reads its attributes by name. */
typedef struct op_params_info {
    op_parse_fn parse;
    size_t size;
} op_params_info;
extern const op_params_info op_params[OP_COUNT];

/* An op's parameters for a kernel's comment (lower/comment.c), written from
 * its params into buf (cap bytes, NUL-terminated), e.g. ": 3x3 stride 1 pad 1,
 * 64 to 64 channels"; NULL: the comment names no parameters of its own for
 * the op (ops/op_table.c). */
typedef void (*op_describe_fn)(const struct ir_graph *g, const struct ir_node *n, char *buf, size_t cap);
extern const op_describe_fn op_describe[OP_COUNT];

/* The op named `op_type` in the default ONNX domain, or OP_INVALID. */
op_id op_lookup(const char *op_type);
const char *op_kind_name(op_kind k);

static inline const op_info *op_get(op_id op) { return &op_table[op]; }

#endif
