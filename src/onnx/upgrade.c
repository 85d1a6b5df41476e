/*
 * upgrade.c — nodes of opsets 1..6 rewritten into the opset-7 form the rest of
 * smelt implements.
 *
 * requires: a node just imported from a model (or function body) of default-
 *           domain opset < ONNX_OPSET_NATIVE, its attributes converted, the
 *           last node of the graph.
 * guarantees: the node, and the helper nodes placed right before it, compute
 *           what the old schema said in the form of that op at opset 7;
 *           attributes the old schemas had and opset 7 dropped are gone.
 *
 * Also here: the experimental ops of opsets 1..9 that onnxruntime still runs
 * (ImageScaler, Crop, Affine, ScaledTanh, ParametricSoftplus), expanded into
 * ops of the table: rows of onnx/expand.c's table, whose form and walker they
 * share with the quantized and com.microsoft compositions.
 *
 * The upgrade rows below are a table of their own on purpose: a row rewrites
 * the node in place (it keeps its op, outputs and most attributes, and gains
 * helper nodes before it), is keyed by op id and the opset that changed the
 * schema, and several rows may apply to one node in order; an expansion
 * replaces a node that is not in the op table, keyed by domain and name, and
 * exactly one applies. Forcing both into one row type would give every row
 * fields only half of them read.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "onnx/expand.h"
#include "onnx/onnx.h"

typedef struct upgrade {
    const onnx_upgrade_ctx *cx;
    ir_graph *g;
    int node;   /* index of the node being upgraded; moves when helpers are added */
    int opset;  /* the opset the node was written for */
    int first;  /* index the node had before any helper was added */
} upgrade;

static ir_node *node_of(upgrade *u) { return &u->g->nodes[u->node]; }

static smelt_status fail(upgrade *u, smelt_status st, const char *rule)
{
    return ir_node_fail(node_of(u), st, "%s (opset %d)", rule, u->opset);
}

static smelt_status oom(upgrade *u) { return fail(u, SMELT_ERR_NOMEM, "out of memory upgrading the node"); }

/* ---- attributes ---------------------------------------------------------- */

static void attr_remove(ir_node *n, const char *name)
{
    int m = 0;
    for (int i = 0; i < n->n_attr; i++)
        if (strcmp(n->attr[i].name, name) != 0) n->attr[m++] = n->attr[i];
    n->n_attr = m;
}

static smelt_status attr_set(upgrade *u, const ir_attr *a)
{
    attr_remove(node_of(u), a->name);
    ir_attr c = *a;
    c.tensor = a->type == IR_ATTR_TENSOR ? a->tensor : -1;
    return ir_node_attr_add(u->g, u->node, &c) ? SMELT_OK : oom(u);
}

/* ---- helper nodes -------------------------------------------------------- */

/* A fresh tensor named "<node>/<what>". */
static int tensor_fresh(upgrade *u, const char *what)
{
    char name[512];
    snprintf(name, sizeof name, "%s/%s", node_of(u)->name, what);
    return u->cx->tensor_new(u->cx->importer, name);
}

/* A constant int64 tensor of rank 0 (n == 1, scalar) or 1. */
static int const_i64(upgrade *u, const char *what, int rank, int n, const int64_t *vals)
{
    int t = tensor_fresh(u, what);
    if (t < 0) return -1;
    ir_tensor *x = &u->g->tensors[t];
    x->dtype = SMELT_I64;
    x->shape = (ir_shape){.rank = rank, .dim = {n}};
    if (!ir_tensor_alloc_data(u->g, t)) return -1;
    memcpy(x->data, vals, sizeof(int64_t) * (size_t)n);
    return t;
}

/* Add a helper node before the node being upgraded; returns its one output,
 * or -1 (out of memory). The upgraded node stays last, so the graph stays in
 * topological order. */
static int helper(upgrade *u, const char *what, op_id op, int n_in, const int *in, int n_attr, const ir_attr *attr)
{
    int out = tensor_fresh(u, what);
    char name[512];
    snprintf(name, sizeof name, "%s/%s", node_of(u)->name, what);
    if (out < 0) return -1;
    int h = ir_node_add(u->g, name, op, n_in, in, 1, &out);
    if (h < 0) return -1;
    for (int i = 0; i < n_attr; i++) {
        ir_attr c = attr[i];
        c.tensor = c.type == IR_ATTR_TENSOR ? c.tensor : -1;
        if (!ir_node_attr_add(u->g, h, &c)) return -1;
    }
    /* Rotate: helper h goes where the node was, the node moves to the end. */
    ir_graph *g = u->g;
    ir_node moved = g->nodes[u->node];
    memmove(&g->nodes[u->node], &g->nodes[u->node + 1], sizeof(ir_node) * (size_t)(g->n_nodes - 1 - u->node));
    g->nodes[g->n_nodes - 1] = moved;
    u->node = g->n_nodes - 1;
    for (int i = u->first; i < g->n_nodes; i++)
        for (int o = 0; o < g->nodes[i].n_out; o++)
            if (g->nodes[i].out[o] >= 0) g->tensors[g->nodes[i].out[o]].producer = i;
    return out;
}

static int helper1(upgrade *u, const char *what, op_id op, int a)
{
    return helper(u, what, op, 1, &a, 0, NULL);
}

static int helper2(upgrade *u, const char *what, op_id op, int a, int b)
{
    int in[2] = {a, b};
    return helper(u, what, op, 2, in, 0, NULL);
}

/* [1, 1, ...] of length `len` (a 1-D int64 tensor holding one count). */
static int ones_of_length(upgrade *u, const char *what, int len)
{
    int64_t one = 1;
    int v = const_i64(u, "one", 1, 1, &one);
    if (v < 0) return -1;
    ir_attr value = {.name = "value", .type = IR_ATTR_TENSOR, .tensor = v};
    return helper(u, what, OP_ConstantOfShape, 1, &len, 1, &value);
}

/* ---- rewrites ------------------------------------------------------------ */

/* Input 1 (B) reshaped to shape(B) ++ [1] * k with k = rank(A) - axis - rank(B),
 * so that numpy broadcasting aligns B's dims with A's from `axis` on. Where
 * both ranks are known at import (graph inputs and constants) that is one
 * Reshape to a constant [0, ..., 0, 1, ..., 1] (0 keeps B's dim); else the
 * count comes from shape arithmetic, which folds at compile time. */
static smelt_status align_b(upgrade *u, int64_t axis)
{
    ir_node *n = node_of(u);
    if (n->n_in != 2 || n->in[0] < 0 || n->in[1] < 0) return fail(u, SMELT_ERR_MODEL, "needs two inputs");
    int a = n->in[0], b = n->in[1];
    const ir_tensor *ta = &u->g->tensors[a], *tb = &u->g->tensors[b];
    if (ta->producer < 0 && tb->producer < 0) {
        int ra = ta->shape.rank, rb = tb->shape.rank;
        if (axis + rb > ra)
            return ir_node_fail(n, SMELT_ERR_SHAPE, "B of rank %d does not fit A of rank %d from broadcast axis %lld "
                                "(opset %d)", rb, ra, (long long)axis, u->opset);
        if (axis + rb == ra) return SMELT_OK;
        int64_t dims[IR_MAX_RANK];
        for (int i = 0; i < ra - (int)axis; i++) dims[i] = i < rb ? 0 : 1;
        int shape = const_i64(u, "b_shape", 1, ra - (int)axis, dims);
        int b2 = shape < 0 ? -1 : helper2(u, "b_aligned", OP_Reshape, b, shape);
        if (b2 < 0) return oom(u);
        node_of(u)->in[1] = b2;
        return SMELT_OK;
    }
    int sa = helper1(u, "shape_a", OP_Shape, a);
    int ra = sa < 0 ? -1 : helper1(u, "rank_a", OP_Shape, sa);
    int sb = ra < 0 ? -1 : helper1(u, "shape_b", OP_Shape, b);
    int rb = sb < 0 ? -1 : helper1(u, "rank_b", OP_Shape, sb);
    int c = rb < 0 ? -1 : const_i64(u, "axis", 1, 1, &axis);
    int d = c < 0 ? -1 : helper2(u, "trailing_dims", OP_Sub, ra, c);
    int k = d < 0 ? -1 : helper2(u, "trailing_ones_count", OP_Sub, d, rb);
    int ones = k < 0 ? -1 : ones_of_length(u, "trailing_ones", k);
    ir_attr cat_axis = {.name = "axis", .type = IR_ATTR_INT, .i = 0};
    int parts[2] = {sb, ones};
    int target = ones < 0 ? -1 : helper(u, "b_shape", OP_Concat, 2, parts, 1, &cat_axis);
    int b2 = target < 0 ? -1 : helper2(u, "b_aligned", OP_Reshape, b, target);
    if (b2 < 0) return oom(u);
    node_of(u)->in[1] = b2;
    return SMELT_OK;
}

/* Before opset 7, Add, Sub, Mul, Div, Pow, the comparisons and the logical ops
 * broadcast only when `broadcast` is 1, and then B to A: by suffix (numpy's
 * rule restricted to B) or, with `axis`, B's dims aligned with A's from
 * `axis` on. Numpy broadcasting covers every form once B has the trailing
 * ones that `axis` implies. axis -1 is the old default (suffix). */
static smelt_status legacy_broadcast(upgrade *u)
{
    ir_node *n = node_of(u);
    bool bcast = ir_attr_int(n, "broadcast", 0) != 0;
    int64_t axis = ir_attr_int(n, "axis", -1);
    attr_remove(n, "broadcast");
    attr_remove(n, "axis");
    if (!bcast || axis == -1) return SMELT_OK;
    if (axis < 0) return fail(u, SMELT_ERR_MODEL, "broadcast axis must be -1 or at least 0");
    return align_b(u, axis);
}

/* PRelu 1 and 6: a slope of one element is shared, a 1-D slope of C elements
 * applies per channel (dim 1) — the Caffe2 rule that the old PyTorch exports
 * rely on; from 7 the slope broadcasts numpy-style. A slope whose declared
 * rank is not 1 is taken as already laid out for broadcasting. */
static smelt_status prelu_channels(upgrade *u)
{
    ir_node *n = node_of(u);
    const ir_tensor *s = ir_in(u->g, n, 1);
    if (!s) return fail(u, SMELT_ERR_MODEL, "input 'slope' is required");
    bool rank_known = s->producer < 0; /* a graph input or a constant */
    if (rank_known && (s->shape.rank != 1 || s->shape.dim[0] == 1)) return SMELT_OK;
    return align_b(u, 1);
}

/* A hint for in-place memory reuse in opset 1 schemas; it never changed results. */
static smelt_status drop_consumed_inputs(upgrade *u)
{
    attr_remove(node_of(u), "consumed_inputs");
    return SMELT_OK;
}

/* Gemm 1..6: `broadcast` let C broadcast to [M, N]; from 7 C always broadcasts
 * unidirectionally, which covers both settings. */
static smelt_status gemm_broadcast(upgrade *u)
{
    attr_remove(node_of(u), "broadcast");
    return SMELT_OK;
}

/* BatchNormalization and Dropout 1..6: `is_test` chose inference mode; from 7
 * that is the only mode of a node asking for one output (the converter in
 * onnx drops the attribute the same way). */
static smelt_status drop_is_test(upgrade *u)
{
    ir_node *n = node_of(u);
    if (n->op == OP_BatchNormalization && n->n_out > 1 && !ir_attr_int(n, "is_test", 0))
        return fail(u, SMELT_ERR_UNSUPPORTED, "training mode (is_test=0 with the running statistics as outputs) "
                                              "is not supported");
    attr_remove(n, "is_test");
    return SMELT_OK;
}

/* Concat 1..3: `axis` was optional, default 1. */
static smelt_status concat_axis(upgrade *u)
{
    if (ir_attr_find(node_of(u), "axis")) return SMELT_OK;
    ir_attr a = {.name = "axis", .type = IR_ATTR_INT, .i = 1};
    return attr_set(u, &a);
}

/* Reshape 1..4: the target shape was attribute `shape`; from 5 it is input 1. */
static smelt_status reshape_shape(upgrade *u)
{
    ir_node *n = node_of(u);
    const int64_t *dims;
    int cnt = ir_attr_ints(n, "shape", &dims);
    if (cnt < 0) return fail(u, SMELT_ERR_MODEL, "attribute 'shape' is required");
    if (n->n_in != 1) return fail(u, SMELT_ERR_MODEL, "takes one input, the shape is an attribute");
    int t = const_i64(u, "shape", 1, cnt, dims);
    int *in = arena_alloc(&u->g->arena, sizeof(int) * 2);
    if (t < 0 || !in) return oom(u);
    n = node_of(u);
    in[0] = n->in[0];
    in[1] = t;
    n->in = in;
    n->n_in = 2;
    attr_remove(n, "shape");
    return SMELT_OK;
}

/* Pad 1: the attribute `paddings` (same layout) was renamed `pads` in 2. */
static smelt_status pad_paddings(upgrade *u)
{
    ir_node *n = node_of(u);
    for (int i = 0; i < n->n_attr; i++)
        if (strcmp(n->attr[i].name, "paddings") == 0) n->attr[i].name = "pads";
    return SMELT_OK;
}

/* LpPool 1: `p` was a float; from 2 an int. */
static smelt_status lppool_p(upgrade *u)
{
    const ir_attr *p = ir_attr_find(node_of(u), "p");
    if (!p || p->type != IR_ATTR_FLOAT) return SMELT_OK;
    float f = p->f;
    if (f != (float)(int64_t)f || f < 1) return fail(u, SMELT_ERR_UNSUPPORTED, "p must be a whole number of at least 1");
    ir_attr a = {.name = "p", .type = IR_ATTR_INT, .i = (int64_t)f};
    return attr_set(u, &a);
}

/* Selu 1 had defaults rounded to 4 decimals; 6 gave them to float precision. */
static smelt_status selu_defaults(upgrade *u)
{
    ir_node *n = node_of(u);
    ir_attr alpha = {.name = "alpha", .type = IR_ATTR_FLOAT, .f = 1.6732f};
    ir_attr gamma = {.name = "gamma", .type = IR_ATTR_FLOAT, .f = 1.0507f};
    if (!ir_attr_find(n, "alpha")) TRY(attr_set(u, &alpha));
    if (!ir_attr_find(node_of(u), "gamma")) TRY(attr_set(u, &gamma));
    return SMELT_OK;
}

/* Cast 1..5: `to` named the type ("FLOAT", "INT64"...); from 6 it is the enum. */
static smelt_status cast_to(upgrade *u)
{
    static const char *const names[] = {"UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16", "INT32", "INT64",
                                        "STRING", "BOOL", "FLOAT16", "DOUBLE", "UINT32", "UINT64"};
    const ir_attr *to = ir_attr_find(node_of(u), "to");
    if (!to || to->type != IR_ATTR_STRING) return SMELT_OK;
    for (int i = 1; i < (int)(sizeof names / sizeof names[0]); i++)
        if (strcasecmp(to->s, names[i]) == 0) {
            ir_attr a = {.name = "to", .type = IR_ATTR_INT, .i = i};
            return attr_set(u, &a);
        }
    return ir_node_fail(node_of(u), SMELT_ERR_UNSUPPORTED, "attribute 'to' names an unknown type '%s' (opset %d)",
                        to->s, u->opset);
}

/* Upsample 1: `height_scale` and `width_scale` of a 4-D NCHW input, mode
 * "nearest" or "bilinear"; from 7 `scales` per dim and mode "linear". */
static smelt_status upsample_scales(upgrade *u)
{
    ir_node *n = node_of(u);
    const ir_attr *h = ir_attr_find(n, "height_scale"), *w = ir_attr_find(n, "width_scale");
    if (!h || !w || h->type != IR_ATTR_FLOAT || w->type != IR_ATTR_FLOAT)
        return fail(u, SMELT_ERR_MODEL, "float attributes 'height_scale' and 'width_scale' are required");
    float scales[4] = {1, 1, h->f, w->f};
    const char *mode = ir_attr_string(n, "mode", "nearest");
    attr_remove(n, "height_scale");
    attr_remove(n, "width_scale");
    ir_attr s = {.name = "scales", .type = IR_ATTR_FLOATS, .n = 4, .floats = scales};
    TRY(attr_set(u, &s));
    if (strcmp(mode, "bilinear") == 0) {
        ir_attr m = {.name = "mode", .type = IR_ATTR_STRING, .s = "linear"};
        TRY(attr_set(u, &m));
    }
    return SMELT_OK;
}

/* Tile 1..5: inputs (input, tiles, axis) repeat along one axis; from 6 input
 * `repeats` has one count per dim. repeats = ones(rank) with `tiles` written
 * at `axis` (ScatterElements also takes a negative axis). */
static smelt_status tile_axis(upgrade *u)
{
    ir_node *n = node_of(u);
    if (n->n_in != 3 || n->in[1] < 0 || n->in[2] < 0)
        return fail(u, SMELT_ERR_MODEL, "needs inputs input, tiles and axis");
    int x = n->in[0], tiles = n->in[1], axis = n->in[2];
    int64_t one = 1;
    int shape1 = const_i64(u, "shape1", 1, 1, &one);
    ir_attr to64 = {.name = "to", .type = IR_ATTR_INT, .i = SMELT_I64};
    int sx = shape1 < 0 ? -1 : helper1(u, "shape", OP_Shape, x);
    int rx = sx < 0 ? -1 : helper1(u, "rank", OP_Shape, sx);
    int ones = rx < 0 ? -1 : ones_of_length(u, "ones", rx);
    int ti = ones < 0 ? -1 : helper(u, "tiles_i64", OP_Cast, 1, &tiles, 1, &to64);
    int ai = ti < 0 ? -1 : helper(u, "axis_i64", OP_Cast, 1, &axis, 1, &to64);
    int t1 = ai < 0 ? -1 : helper2(u, "tiles_1d", OP_Reshape, ti, shape1);
    int a1 = t1 < 0 ? -1 : helper2(u, "axis_1d", OP_Reshape, ai, shape1);
    int sc[3] = {ones, a1, t1};
    int reps = a1 < 0 ? -1 : helper(u, "repeats", OP_ScatterElements, 3, sc, 0, NULL);
    if (reps < 0) return oom(u);
    n = node_of(u);
    n->in[1] = reps;
    n->n_in = 2;
    return SMELT_OK;
}

/* ---- the table ----------------------------------------------------------- */

/* A row applies to a node of `op` written for an opset below `until` (the
 * version that introduced the form smelt implements). Rows run in order. Ops
 * not listed here kept their semantics from their first version up to opset 7
 * (checked against onnx.defs.get_schema for every op of the table): Softmax,
 * LogSoftmax and Hardmax coerce to 2-D at `axis` until 13 (their lowering
 * follows g->opset), Clip's absent min/max meant no bound as the 6 defaults
 * do, Split 1's optional second input is read by the shape rule, AveragePool
 * 7's count_include_pad defaults to 1's behaviour, and Sum/Mean/Min/Max
 * inputs of equal shape (required until 8) are a case of later broadcasting. */
static const struct {
    op_id op;
    int until;
    smelt_status (*fn)(upgrade *u);
} rows[] = {
    {OP_Add, 7, legacy_broadcast},
    {OP_Sub, 7, legacy_broadcast},
    {OP_Mul, 7, legacy_broadcast},
    {OP_Div, 7, legacy_broadcast},
    {OP_Pow, 7, legacy_broadcast},
    {OP_Equal, 7, legacy_broadcast},
    {OP_Less, 7, legacy_broadcast},
    {OP_Greater, 7, legacy_broadcast},
    {OP_And, 7, legacy_broadcast},
    {OP_Or, 7, legacy_broadcast},
    {OP_Xor, 7, legacy_broadcast},
    {OP_PRelu, 7, prelu_channels},
    {OP_Gemm, 7, gemm_broadcast},
    {OP_BatchNormalization, 7, drop_is_test},
    {OP_Dropout, 7, drop_is_test},
    {OP_Upsample, 7, upsample_scales},
    {OP_Cast, 6, cast_to},
    {OP_Selu, 6, selu_defaults},
    {OP_Tile, 6, tile_axis},
    {OP_Reshape, 5, reshape_shape},
    {OP_Concat, 4, concat_axis},
    {OP_Pad, 2, pad_paddings},
    {OP_LpPool, 2, lppool_p},
};

smelt_status onnx_upgrade_node(const onnx_upgrade_ctx *cx, ir_graph *g, int node, int opset)
{
    upgrade u = {.cx = cx, .g = g, .node = node, .opset = opset, .first = node};
    if (opset < 6) TRY(drop_consumed_inputs(&u));
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (rows[i].op == g->nodes[u.node].op && opset < rows[i].until) TRY(rows[i].fn(&u));
    return SMELT_OK;
}

/* ---- experimental ops of opsets 1..9 --------------------------------------- */

/* These are rows of onnx/expand.c's table (before_opset 10): a node replaced
 * by table ops, built with expand.h's builders like the quantized and
 * com.microsoft compositions. */

static smelt_status exp_fail(expand_ctx *x, const char *rule)
{
    return ex_fail(x, SMELT_ERR_MODEL, "%s (an experimental op of opsets 1..9)", rule);
}

static const ir_attr *exp_attr(const expand_ctx *x, const char *name, ir_attr_type type)
{
    const ir_attr *a = ir_attr_find(x->n, name);
    return a && a->type == type ? a : NULL;
}

/* y = a * x + bias, with scalars or (ImageScaler) a bias per channel. */
static smelt_status exp_scale_shift(expand_ctx *x, float a, int bias)
{
    if (ex_in(x, 0) < 0) return exp_fail(x, "input 'input' is required");
    int in[2] = {ex_binary(x, OP_Mul, ex_in(x, 0), ex_const_f32(x, a)), bias};
    ex_node(x, OP_Add, ex_out(x, 0), 2, in);
    return x->st;
}

/* ImageScaler: y = scale * x + bias[c] for NCHW x. */
smelt_status expand_ImageScaler(expand_ctx *x)
{
    const ir_attr *bias = exp_attr(x, "bias", IR_ATTR_FLOATS), *scale = exp_attr(x, "scale", IR_ATTR_FLOAT);
    if (!bias) return exp_fail(x, "attribute 'bias' (floats, one per channel) is required");
    ir_shape s = {.rank = 3, .dim = {bias->n, 1, 1}};
    int tb = ex_const(x, SMELT_F32, &s, bias->floats);
    return exp_scale_shift(x, scale ? scale->f : 1.0f, tb);
}

/* Affine: y = alpha * x + beta. */
smelt_status expand_Affine(expand_ctx *x)
{
    const ir_attr *alpha = exp_attr(x, "alpha", IR_ATTR_FLOAT), *beta = exp_attr(x, "beta", IR_ATTR_FLOAT);
    return exp_scale_shift(x, alpha ? alpha->f : 1.0f, ex_const_f32(x, beta ? beta->f : 0.0f));
}

/* ScaledTanh: alpha * tanh(beta * x); ParametricSoftplus: alpha * softplus(beta * x). */
static smelt_status expand_alpha_f_beta(expand_ctx *x, op_id f)
{
    const ir_attr *alpha = exp_attr(x, "alpha", IR_ATTR_FLOAT), *beta = exp_attr(x, "beta", IR_ATTR_FLOAT);
    if (!alpha || !beta) return exp_fail(x, "float attributes 'alpha' and 'beta' are required");
    if (ex_in(x, 0) < 0) return exp_fail(x, "input 'input' is required");
    int fx = ex_unary(x, f, ex_binary(x, OP_Mul, ex_in(x, 0), ex_const_f32(x, beta->f)));
    int in[2] = {fx, ex_const_f32(x, alpha->f)};
    ex_node(x, OP_Mul, ex_out(x, 0), 2, in);
    return x->st;
}

smelt_status expand_ScaledTanh(expand_ctx *x) { return expand_alpha_f_beta(x, OP_Tanh); }
smelt_status expand_ParametricSoftplus(expand_ctx *x) { return expand_alpha_f_beta(x, OP_Softplus); }

/* Crop of NCHW x: border [left, top, right, bottom]; with scale [h, w] the
 * output is h x w from (top, left), else what the border leaves. A Slice in
 * its opset-7 form (attributes; an end of INT64_MAX runs to the dim's end). */
smelt_status expand_Crop(expand_ctx *x)
{
    const ir_attr *border = exp_attr(x, "border", IR_ATTR_INTS), *scale = exp_attr(x, "scale", IR_ATTR_INTS);
    if (!border || border->n != 4) return exp_fail(x, "attribute 'border' must hold 4 ints");
    if (scale && scale->n != 2) return exp_fail(x, "attribute 'scale' must hold 2 ints");
    if (ex_in(x, 0) < 0) return exp_fail(x, "input 'input' is required");
    const int64_t *b = border->ints;
    for (int i = 0; i < 4; i++)
        if (b[i] < 0) return exp_fail(x, "attribute 'border' must not be negative");
    int64_t starts[2] = {b[1], b[0]}, ends[2], axes[2] = {2, 3};
    for (int i = 0; i < 2; i++) {
        int64_t cut = b[3 - i]; /* bottom, right */
        ends[i] = scale ? starts[i] + scale->ints[i] : cut ? -cut : INT64_MAX;
    }
    int in = ex_in(x, 0);
    ex_node(x, OP_Slice, ex_out(x, 0), 1, &in);
    ex_attr_copy(x, &(ir_attr){.name = "starts", .type = IR_ATTR_INTS, .n = 2, .ints = starts, .tensor = -1});
    ex_attr_copy(x, &(ir_attr){.name = "ends", .type = IR_ATTR_INTS, .n = 2, .ints = ends, .tensor = -1});
    ex_attr_copy(x, &(ir_attr){.name = "axes", .type = IR_ATTR_INTS, .n = 2, .ints = axes, .tensor = -1});
    return x->st;
}
