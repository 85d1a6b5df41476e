/*
 * ops_data.h — rows of the op table for elementwise, broadcast, injective and
 * shape ops (see ops.h for the columns). Shape rules live in
 * graph/infer_data.c and graph/infer_layout.c, scalar functions in
 * ops/elementwise.c and element functions (index maps) in
 * ops/layout.c.
 *
 * Dtypes: smelt computes float32/float64, int8..int64, uint8..uint64 and bool.
 * A shape rule rejects any other dtype naming it, and each op's dtype class
 * (float only, numeric, integer, bool) is checked by its shape rule.
 */
#ifndef SMELT_IR_OPS_DATA_H
#define SMELT_IR_OPS_DATA_H

#include <stdbool.h>

struct ir_graph;
struct ir_node;
struct ir_shape;
struct lower_ctx;
struct kir_kernel;

/* Shape rules shared by many rows. */
smelt_status infer_same(struct ir_graph *g, int node); /* output = input 0 (any dtype) */
smelt_status infer_float(struct ir_graph *g, int node); /* output = input 0, float inputs only */
smelt_status infer_numeric(struct ir_graph *g, int node); /* output = input 0, numeric (not bool) */
smelt_status infer_int_unary(struct ir_graph *g, int node); /* output = input 0, integers only */
smelt_status infer_float_test(struct ir_graph *g, int node); /* float input, bool output of its shape (IsNaN...) */
smelt_status infer_broadcast(struct ir_graph *g, int node); /* numpy broadcast of all inputs, one numeric dtype */
smelt_status infer_float_broadcast(struct ir_graph *g, int node); /* numpy broadcast, one float dtype */
smelt_status infer_int_broadcast(struct ir_graph *g, int node); /* numpy broadcast, one integer dtype */
smelt_status infer_compare(struct ir_graph *g, int node); /* broadcast, one dtype, bool output */
smelt_status infer_logical(struct ir_graph *g, int node); /* bool inputs, broadcast, bool output */

/* Shape rules of single ops. */
smelt_status infer_Constant(struct ir_graph *g, int node);
smelt_status infer_ConstantOfShape(struct ir_graph *g, int node);
smelt_status infer_Shape(struct ir_graph *g, int node);
smelt_status infer_Size(struct ir_graph *g, int node);
smelt_status infer_Cast(struct ir_graph *g, int node);
smelt_status infer_Reshape(struct ir_graph *g, int node);
smelt_status infer_Flatten(struct ir_graph *g, int node);
smelt_status infer_Squeeze(struct ir_graph *g, int node);
smelt_status infer_Unsqueeze(struct ir_graph *g, int node);
smelt_status infer_Transpose(struct ir_graph *g, int node);
smelt_status infer_Expand(struct ir_graph *g, int node);
smelt_status infer_Concat(struct ir_graph *g, int node);
smelt_status infer_Split(struct ir_graph *g, int node);
smelt_status infer_Slice(struct ir_graph *g, int node);
smelt_status infer_Gather(struct ir_graph *g, int node);
smelt_status infer_GatherElements(struct ir_graph *g, int node);
smelt_status infer_GatherND(struct ir_graph *g, int node);
smelt_status infer_DepthToSpace(struct ir_graph *g, int node); /* also SpaceToDepth */
smelt_status infer_Where(struct ir_graph *g, int node);
smelt_status infer_Range(struct ir_graph *g, int node);
smelt_status infer_Tile(struct ir_graph *g, int node);
smelt_status infer_Pad(struct ir_graph *g, int node);
smelt_status infer_Dropout(struct ir_graph *g, int node);
smelt_status infer_Pow(struct ir_graph *g, int node);
smelt_status infer_PRelu(struct ir_graph *g, int node);
smelt_status infer_Clip(struct ir_graph *g, int node);

/* Helpers shared by shape rules and index maps. */
/* True for the dtypes smelt computes with. */
bool dtype_supported(smelt_dtype dt);
/* Slice: per input axis, the first element read and the step (0 and 1 for
 * axes not sliced), and the output shape; starts/ends clamped per the spec. */
smelt_status slice_resolve(const struct ir_graph *g, const struct ir_node *n, int64_t *start, int64_t *step,
                           struct ir_shape *out);
/* Pad: per input axis, the padding before it; mode 0..3 = constant, reflect,
 * edge, wrap; and the output shape. */
smelt_status pad_resolve(const struct ir_graph *g, const struct ir_node *n, int64_t *begin, int *mode,
                         struct ir_shape *out);
/* Transpose: its permutation (`perm`, or reversed axes); returns its length. */
int transpose_perm(const struct ir_node *n, int rank, int *perm);

/* Scalar functions of elementwise/broadcast ops: the output element from the
 * input elements (broadcast and loaded; an omitted optional input is 0). */
#define OP_SCALAR_FN(name) kir_val scalar_##name(struct kir_kernel *k, const struct ir_node *n, const kir_val *in);
OP_SCALAR_FN(Identity) OP_SCALAR_FN(Cast) OP_SCALAR_FN(Where) OP_SCALAR_FN(Add) OP_SCALAR_FN(Sub) OP_SCALAR_FN(Mul)
OP_SCALAR_FN(Div) OP_SCALAR_FN(Mod) OP_SCALAR_FN(Pow) OP_SCALAR_FN(Sum) OP_SCALAR_FN(Mean) OP_SCALAR_FN(Min)
OP_SCALAR_FN(Max) OP_SCALAR_FN(PRelu) OP_SCALAR_FN(Sqrt) OP_SCALAR_FN(Reciprocal) OP_SCALAR_FN(Neg) OP_SCALAR_FN(Abs)
OP_SCALAR_FN(Sign) OP_SCALAR_FN(Exp) OP_SCALAR_FN(Log) OP_SCALAR_FN(Sin) OP_SCALAR_FN(Cos) OP_SCALAR_FN(Tan)
OP_SCALAR_FN(Asin) OP_SCALAR_FN(Acos) OP_SCALAR_FN(Atan) OP_SCALAR_FN(Sinh) OP_SCALAR_FN(Cosh) OP_SCALAR_FN(Asinh)
OP_SCALAR_FN(Acosh) OP_SCALAR_FN(Atanh) OP_SCALAR_FN(Tanh) OP_SCALAR_FN(Sigmoid) OP_SCALAR_FN(Erf) OP_SCALAR_FN(Relu)
OP_SCALAR_FN(LeakyRelu) OP_SCALAR_FN(Elu) OP_SCALAR_FN(Selu) OP_SCALAR_FN(Celu) OP_SCALAR_FN(ThresholdedRelu) OP_SCALAR_FN(Shrink)
OP_SCALAR_FN(Softsign) OP_SCALAR_FN(Mish) OP_SCALAR_FN(Clip) OP_SCALAR_FN(HardSigmoid) OP_SCALAR_FN(HardSwish) OP_SCALAR_FN(Softplus)
OP_SCALAR_FN(Gelu) OP_SCALAR_FN(Floor) OP_SCALAR_FN(Ceil) OP_SCALAR_FN(Round) OP_SCALAR_FN(IsNaN) OP_SCALAR_FN(IsInf)
OP_SCALAR_FN(Equal) OP_SCALAR_FN(Less) OP_SCALAR_FN(Greater) OP_SCALAR_FN(LessOrEqual) OP_SCALAR_FN(GreaterOrEqual) OP_SCALAR_FN(Not)
OP_SCALAR_FN(And) OP_SCALAR_FN(Or) OP_SCALAR_FN(Xor) OP_SCALAR_FN(BitShift) OP_SCALAR_FN(BitwiseNot) OP_SCALAR_FN(BitwiseAnd) OP_SCALAR_FN(BitwiseOr)
OP_SCALAR_FN(BitwiseXor)
#undef OP_SCALAR_FN

/* Insert descriptions: the output holds input `input` unchanged at `offset`. */
bool insert_Concat(const struct ir_graph *g, const struct ir_node *n, int input, int64_t *offset);
bool insert_Pad(const struct ir_graph *g, const struct ir_node *n, int input, int64_t *offset);

/* Element functions (index maps) of injective ops. */
kir_val elem_ConstantOfShape(struct lower_ctx *c, int out, const kir_val *idx);
kir_val elem_CastLike(struct lower_ctx *c, int out, const kir_val *idx);
kir_val elem_Reshape(struct lower_ctx *c, int out, const kir_val *idx); /* also Flatten/Squeeze/Unsqueeze */
kir_val elem_Transpose(struct lower_ctx *c, int out, const kir_val *idx);
kir_val elem_Expand(struct lower_ctx *c, int out, const kir_val *idx);
kir_val elem_Concat(struct lower_ctx *c, int out, const kir_val *idx);
kir_val elem_Split(struct lower_ctx *c, int out, const kir_val *idx);
kir_val elem_Slice(struct lower_ctx *c, int out, const kir_val *idx);
kir_val elem_Gather(struct lower_ctx *c, int out, const kir_val *idx);
kir_val elem_GatherElements(struct lower_ctx *c, int out, const kir_val *idx);
kir_val elem_GatherND(struct lower_ctx *c, int out, const kir_val *idx);
kir_val elem_DepthToSpace(struct lower_ctx *c, int out, const kir_val *idx);
kir_val elem_SpaceToDepth(struct lower_ctx *c, int out, const kir_val *idx);
kir_val elem_Range(struct lower_ctx *c, int out, const kir_val *idx);
kir_val elem_Tile(struct lower_ctx *c, int out, const kir_val *idx);
kir_val elem_Pad(struct lower_ctx *c, int out, const kir_val *idx);
kir_val elem_Dropout(struct lower_ctx *c, int out, const kir_val *idx);

/*  name            kind         in     out  value_in infer                scalar                  elem                lower  flags  insert */
#define OPS_DATA(X) \
    X(Identity,       ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_same,           scalar_Identity,        OP_NONE,             OP_NONE, OPF_VIEW, OP_NONE) \
    X(Constant,       OPAQUE,      0, 0,  1, 1,  0x0,  infer_Constant,       OP_NONE,                OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(ConstantOfShape,INJECTIVE,   1, 1,  1, 1,  0x1,  infer_ConstantOfShape,OP_NONE,                elem_ConstantOfShape,OP_NONE, 0, OP_NONE) \
    X(Shape,          OPAQUE,      1, 1,  1, 1,  0x0,  infer_Shape,          OP_NONE,                OP_NONE,             OP_NONE, 0, OP_NONE) \
    X(Size,           OPAQUE,      1, 1,  1, 1,  0x0,  infer_Size,           OP_NONE,                OP_NONE,             OP_NONE, 0, OP_NONE) \
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
    X(BitwiseXor,     BROADCAST,   2, 2,  1, 1,  0x0,  infer_int_broadcast,  scalar_BitwiseXor,      OP_NONE,             OP_NONE, 0, OP_NONE)

#endif
