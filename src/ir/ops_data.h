/*
 * ops_data.h — rows of the op table for elementwise, broadcast, injective and
 * shape ops (see ops.h for the columns). Shape rules live in
 * graph/infer_data.c, scalar and element functions in kernel/ops_data.c.
 */
#ifndef SMELT_IR_OPS_DATA_H
#define SMELT_IR_OPS_DATA_H

struct ir_graph;
struct ir_node;
struct lower_ctx;
struct kir_kernel;

/* Shape rules. */
smelt_status infer_same(struct ir_graph *g, int node);      /* output = input 0 */
smelt_status infer_broadcast(struct ir_graph *g, int node); /* numpy broadcast of all inputs */
smelt_status infer_compare(struct ir_graph *g, int node);   /* broadcast, bool output */
smelt_status infer_logical(struct ir_graph *g, int node);   /* bool inputs, bool output */
smelt_status infer_Cast(struct ir_graph *g, int node) OP_FN;
smelt_status infer_Clip(struct ir_graph *g, int node) OP_FN;
smelt_status infer_Where(struct ir_graph *g, int node) OP_FN;
smelt_status infer_Constant(struct ir_graph *g, int node) OP_FN;
smelt_status infer_ConstantOfShape(struct ir_graph *g, int node) OP_FN;
smelt_status infer_Shape(struct ir_graph *g, int node) OP_FN;
smelt_status infer_Size(struct ir_graph *g, int node) OP_FN;
smelt_status infer_Reshape(struct ir_graph *g, int node) OP_FN;
smelt_status infer_Flatten(struct ir_graph *g, int node) OP_FN;
smelt_status infer_Squeeze(struct ir_graph *g, int node) OP_FN;
smelt_status infer_Unsqueeze(struct ir_graph *g, int node) OP_FN;
smelt_status infer_Transpose(struct ir_graph *g, int node) OP_FN;
smelt_status infer_Expand(struct ir_graph *g, int node) OP_FN;
smelt_status infer_Concat(struct ir_graph *g, int node) OP_FN;
smelt_status infer_Split(struct ir_graph *g, int node) OP_FN;
smelt_status infer_Slice(struct ir_graph *g, int node) OP_FN;
smelt_status infer_Gather(struct ir_graph *g, int node) OP_FN;
smelt_status infer_Range(struct ir_graph *g, int node) OP_FN;
smelt_status infer_Tile(struct ir_graph *g, int node) OP_FN;
smelt_status infer_Pad(struct ir_graph *g, int node) OP_FN;

/* Scalar functions of elementwise/broadcast ops. */
kir_val scalar_Identity(struct kir_kernel *k, const struct ir_node *n, const kir_val *in) OP_FN;
kir_val scalar_Cast(struct kir_kernel *k, const struct ir_node *n, const kir_val *in) OP_FN;
kir_val scalar_Add(struct kir_kernel *k, const struct ir_node *n, const kir_val *in) OP_FN;
kir_val scalar_Sub(struct kir_kernel *k, const struct ir_node *n, const kir_val *in) OP_FN;
kir_val scalar_Mul(struct kir_kernel *k, const struct ir_node *n, const kir_val *in) OP_FN;
kir_val scalar_Div(struct kir_kernel *k, const struct ir_node *n, const kir_val *in) OP_FN;
kir_val scalar_Pow(struct kir_kernel *k, const struct ir_node *n, const kir_val *in) OP_FN;
kir_val scalar_Sqrt(struct kir_kernel *k, const struct ir_node *n, const kir_val *in) OP_FN;
kir_val scalar_Reciprocal(struct kir_kernel *k, const struct ir_node *n, const kir_val *in) OP_FN;
kir_val scalar_Neg(struct kir_kernel *k, const struct ir_node *n, const kir_val *in) OP_FN;
kir_val scalar_Abs(struct kir_kernel *k, const struct ir_node *n, const kir_val *in) OP_FN;
kir_val scalar_Exp(struct kir_kernel *k, const struct ir_node *n, const kir_val *in) OP_FN;
kir_val scalar_Log(struct kir_kernel *k, const struct ir_node *n, const kir_val *in) OP_FN;
kir_val scalar_Sin(struct kir_kernel *k, const struct ir_node *n, const kir_val *in) OP_FN;
kir_val scalar_Cos(struct kir_kernel *k, const struct ir_node *n, const kir_val *in) OP_FN;
kir_val scalar_Tanh(struct kir_kernel *k, const struct ir_node *n, const kir_val *in) OP_FN;
kir_val scalar_Sigmoid(struct kir_kernel *k, const struct ir_node *n, const kir_val *in) OP_FN;
kir_val scalar_Erf(struct kir_kernel *k, const struct ir_node *n, const kir_val *in) OP_FN;
kir_val scalar_Relu(struct kir_kernel *k, const struct ir_node *n, const kir_val *in) OP_FN;
kir_val scalar_LeakyRelu(struct kir_kernel *k, const struct ir_node *n, const kir_val *in) OP_FN;
kir_val scalar_Elu(struct kir_kernel *k, const struct ir_node *n, const kir_val *in) OP_FN;
kir_val scalar_Clip(struct kir_kernel *k, const struct ir_node *n, const kir_val *in) OP_FN;
kir_val scalar_HardSigmoid(struct kir_kernel *k, const struct ir_node *n, const kir_val *in) OP_FN;
kir_val scalar_HardSwish(struct kir_kernel *k, const struct ir_node *n, const kir_val *in) OP_FN;
kir_val scalar_Softplus(struct kir_kernel *k, const struct ir_node *n, const kir_val *in) OP_FN;
kir_val scalar_Gelu(struct kir_kernel *k, const struct ir_node *n, const kir_val *in) OP_FN;
kir_val scalar_Min(struct kir_kernel *k, const struct ir_node *n, const kir_val *in) OP_FN;
kir_val scalar_Max(struct kir_kernel *k, const struct ir_node *n, const kir_val *in) OP_FN;
kir_val scalar_Floor(struct kir_kernel *k, const struct ir_node *n, const kir_val *in) OP_FN;
kir_val scalar_Ceil(struct kir_kernel *k, const struct ir_node *n, const kir_val *in) OP_FN;
kir_val scalar_Round(struct kir_kernel *k, const struct ir_node *n, const kir_val *in) OP_FN;
kir_val scalar_Equal(struct kir_kernel *k, const struct ir_node *n, const kir_val *in) OP_FN;
kir_val scalar_Less(struct kir_kernel *k, const struct ir_node *n, const kir_val *in) OP_FN;
kir_val scalar_Greater(struct kir_kernel *k, const struct ir_node *n, const kir_val *in) OP_FN;
kir_val scalar_LessOrEqual(struct kir_kernel *k, const struct ir_node *n, const kir_val *in) OP_FN;
kir_val scalar_GreaterOrEqual(struct kir_kernel *k, const struct ir_node *n, const kir_val *in) OP_FN;
kir_val scalar_Not(struct kir_kernel *k, const struct ir_node *n, const kir_val *in) OP_FN;
kir_val scalar_And(struct kir_kernel *k, const struct ir_node *n, const kir_val *in) OP_FN;
kir_val scalar_Or(struct kir_kernel *k, const struct ir_node *n, const kir_val *in) OP_FN;
kir_val scalar_Where(struct kir_kernel *k, const struct ir_node *n, const kir_val *in) OP_FN;

/* Element functions (index maps) of injective ops. */
kir_val elem_Reshape(struct lower_ctx *c, int out, const kir_val *idx) OP_FN; /* also Flatten/Squeeze/Unsqueeze */
kir_val elem_Transpose(struct lower_ctx *c, int out, const kir_val *idx) OP_FN;
kir_val elem_Expand(struct lower_ctx *c, int out, const kir_val *idx) OP_FN;
kir_val elem_Concat(struct lower_ctx *c, int out, const kir_val *idx) OP_FN;
kir_val elem_Split(struct lower_ctx *c, int out, const kir_val *idx) OP_FN;
kir_val elem_Slice(struct lower_ctx *c, int out, const kir_val *idx) OP_FN;
kir_val elem_Gather(struct lower_ctx *c, int out, const kir_val *idx) OP_FN;
kir_val elem_Range(struct lower_ctx *c, int out, const kir_val *idx) OP_FN;
kir_val elem_Tile(struct lower_ctx *c, int out, const kir_val *idx) OP_FN;
kir_val elem_Pad(struct lower_ctx *c, int out, const kir_val *idx) OP_FN;
kir_val elem_ConstantOfShape(struct lower_ctx *c, int out, const kir_val *idx) OP_FN;

/*  name            kind         in     out  value_in infer                scalar                  elem                lower */
#define OPS_DATA(X) \
    X(Identity,       ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_same,           scalar_Identity,       OP_NONE,            OP_NONE) \
    X(Constant,       OPAQUE,      0, 0,  1, 1,  0x0,  infer_Constant,       OP_NONE,               OP_NONE,            OP_NONE) \
    X(ConstantOfShape,INJECTIVE,   1, 1,  1, 1,  0x1,  infer_ConstantOfShape,OP_NONE,               elem_ConstantOfShape,OP_NONE) \
    X(Shape,          OPAQUE,      1, 1,  1, 1,  0x0,  infer_Shape,          OP_NONE,               OP_NONE,            OP_NONE) \
    X(Size,           OPAQUE,      1, 1,  1, 1,  0x0,  infer_Size,           OP_NONE,               OP_NONE,            OP_NONE) \
    X(Cast,           ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_Cast,           scalar_Cast,           OP_NONE,            OP_NONE) \
    X(Reshape,        INJECTIVE,   2, 2,  1, 1,  0x2,  infer_Reshape,        OP_NONE,               elem_Reshape,       OP_NONE) \
    X(Flatten,        INJECTIVE,   1, 1,  1, 1,  0x0,  infer_Flatten,        OP_NONE,               elem_Reshape,       OP_NONE) \
    X(Squeeze,        INJECTIVE,   1, 2,  1, 1,  0x2,  infer_Squeeze,        OP_NONE,               elem_Reshape,       OP_NONE) \
    X(Unsqueeze,      INJECTIVE,   1, 2,  1, 1,  0x2,  infer_Unsqueeze,      OP_NONE,               elem_Reshape,       OP_NONE) \
    X(Transpose,      INJECTIVE,   1, 1,  1, 1,  0x0,  infer_Transpose,      OP_NONE,               elem_Transpose,     OP_NONE) \
    X(Expand,         INJECTIVE,   2, 2,  1, 1,  0x2,  infer_Expand,         OP_NONE,               elem_Expand,        OP_NONE) \
    X(Concat,         INJECTIVE,   1, 64, 1, 1,  0x0,  infer_Concat,         OP_NONE,               elem_Concat,        OP_NONE) \
    X(Split,          INJECTIVE,   1, 2,  1, 64, 0x2,  infer_Split,          OP_NONE,               elem_Split,         OP_NONE) \
    X(Slice,          INJECTIVE,   3, 5,  1, 1,  0x1e, infer_Slice,          OP_NONE,               elem_Slice,         OP_NONE) \
    X(Gather,         INJECTIVE,   2, 2,  1, 1,  0x0,  infer_Gather,         OP_NONE,               elem_Gather,        OP_NONE) \
    X(Where,          BROADCAST,   3, 3,  1, 1,  0x0,  infer_Where,          scalar_Where,          OP_NONE,            OP_NONE) \
    X(Range,          INJECTIVE,   3, 3,  1, 1,  0x7,  infer_Range,          OP_NONE,               elem_Range,         OP_NONE) \
    X(Tile,           INJECTIVE,   2, 2,  1, 1,  0x2,  infer_Tile,           OP_NONE,               elem_Tile,          OP_NONE) \
    X(Pad,            INJECTIVE,   1, 4,  1, 1,  0xa,  infer_Pad,            OP_NONE,               elem_Pad,           OP_NONE) \
    X(Add,            BROADCAST,   2, 2,  1, 1,  0x0,  infer_broadcast,      scalar_Add,            OP_NONE,            OP_NONE) \
    X(Sub,            BROADCAST,   2, 2,  1, 1,  0x0,  infer_broadcast,      scalar_Sub,            OP_NONE,            OP_NONE) \
    X(Mul,            BROADCAST,   2, 2,  1, 1,  0x0,  infer_broadcast,      scalar_Mul,            OP_NONE,            OP_NONE) \
    X(Div,            BROADCAST,   2, 2,  1, 1,  0x0,  infer_broadcast,      scalar_Div,            OP_NONE,            OP_NONE) \
    X(Pow,            BROADCAST,   2, 2,  1, 1,  0x0,  infer_broadcast,      scalar_Pow,            OP_NONE,            OP_NONE) \
    X(Sqrt,           ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_same,           scalar_Sqrt,           OP_NONE,            OP_NONE) \
    X(Reciprocal,     ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_same,           scalar_Reciprocal,     OP_NONE,            OP_NONE) \
    X(Neg,            ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_same,           scalar_Neg,            OP_NONE,            OP_NONE) \
    X(Abs,            ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_same,           scalar_Abs,            OP_NONE,            OP_NONE) \
    X(Exp,            ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_same,           scalar_Exp,            OP_NONE,            OP_NONE) \
    X(Log,            ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_same,           scalar_Log,            OP_NONE,            OP_NONE) \
    X(Sin,            ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_same,           scalar_Sin,            OP_NONE,            OP_NONE) \
    X(Cos,            ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_same,           scalar_Cos,            OP_NONE,            OP_NONE) \
    X(Tanh,           ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_same,           scalar_Tanh,           OP_NONE,            OP_NONE) \
    X(Sigmoid,        ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_same,           scalar_Sigmoid,        OP_NONE,            OP_NONE) \
    X(Erf,            ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_same,           scalar_Erf,            OP_NONE,            OP_NONE) \
    X(Relu,           ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_same,           scalar_Relu,           OP_NONE,            OP_NONE) \
    X(LeakyRelu,      ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_same,           scalar_LeakyRelu,      OP_NONE,            OP_NONE) \
    X(Elu,            ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_same,           scalar_Elu,            OP_NONE,            OP_NONE) \
    X(Clip,           BROADCAST,   1, 3,  1, 1,  0x0,  infer_Clip,           scalar_Clip,           OP_NONE,            OP_NONE) \
    X(HardSigmoid,    ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_same,           scalar_HardSigmoid,    OP_NONE,            OP_NONE) \
    X(HardSwish,      ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_same,           scalar_HardSwish,      OP_NONE,            OP_NONE) \
    X(Softplus,       ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_same,           scalar_Softplus,       OP_NONE,            OP_NONE) \
    X(Gelu,           ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_same,           scalar_Gelu,           OP_NONE,            OP_NONE) \
    X(Min,            BROADCAST,   1, 64, 1, 1,  0x0,  infer_broadcast,      scalar_Min,            OP_NONE,            OP_NONE) \
    X(Max,            BROADCAST,   1, 64, 1, 1,  0x0,  infer_broadcast,      scalar_Max,            OP_NONE,            OP_NONE) \
    X(Floor,          ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_same,           scalar_Floor,          OP_NONE,            OP_NONE) \
    X(Ceil,           ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_same,           scalar_Ceil,           OP_NONE,            OP_NONE) \
    X(Round,          ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_same,           scalar_Round,          OP_NONE,            OP_NONE) \
    X(Equal,          BROADCAST,   2, 2,  1, 1,  0x0,  infer_compare,        scalar_Equal,          OP_NONE,            OP_NONE) \
    X(Less,           BROADCAST,   2, 2,  1, 1,  0x0,  infer_compare,        scalar_Less,           OP_NONE,            OP_NONE) \
    X(Greater,        BROADCAST,   2, 2,  1, 1,  0x0,  infer_compare,        scalar_Greater,        OP_NONE,            OP_NONE) \
    X(LessOrEqual,    BROADCAST,   2, 2,  1, 1,  0x0,  infer_compare,        scalar_LessOrEqual,    OP_NONE,            OP_NONE) \
    X(GreaterOrEqual, BROADCAST,   2, 2,  1, 1,  0x0,  infer_compare,        scalar_GreaterOrEqual, OP_NONE,            OP_NONE) \
    X(Not,            ELEMENTWISE, 1, 1,  1, 1,  0x0,  infer_logical,        scalar_Not,            OP_NONE,            OP_NONE) \
    X(And,            BROADCAST,   2, 2,  1, 1,  0x0,  infer_logical,        scalar_And,            OP_NONE,            OP_NONE) \
    X(Or,             BROADCAST,   2, 2,  1, 1,  0x0,  infer_logical,        scalar_Or,             OP_NONE,            OP_NONE)

#endif
