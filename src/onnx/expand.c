/* expand.c — the table of expanded ops and the builders their expansions use (expand.h). */
#include "onnx/expand.h"

#include <stdio.h>
#include <string.h>

/* domain, name, its expansion, inputs min..max, outputs min..max (the op's
 * schema), and for ops that left the standard the default-domain opset from
 * which they are unknown (0: none). */
static const expand_rule expansions[] = {
    {"", "DynamicQuantizeLinear", expand_DynamicQuantizeLinear, 1, 1, 3, 3, 0},
    {"", "MatMulInteger", expand_MatMulInteger, 2, 4, 1, 1, 0},
    {"", "ConvInteger", expand_ConvInteger, 2, 4, 1, 1, 0},
    {"", "QLinearMatMul", expand_QLinearMatMul, 8, 8, 1, 1, 0},
    {"", "QLinearConv", expand_QLinearConv, 8, 9, 1, 1, 0},
    {"com.microsoft", "DynamicQuantizeMatMul", expand_DynamicQuantizeMatMul, 3, 5, 1, 1, 0},
    {"com.microsoft", "MatMulIntegerToFloat", expand_MatMulIntegerToFloat, 4, 7, 1, 1, 0},
    {"com.microsoft", "QGemm", expand_QGemm, 6, 9, 1, 1, 0},
    {"com.microsoft", "Gelu", expand_Gelu, 1, 1, 1, 1, 0},
    {"com.microsoft", "BiasGelu", expand_BiasGelu, 2, 2, 1, 1, 0},
    {"com.microsoft", "FastGelu", expand_FastGelu, 1, 2, 1, 1, 0},
    {"com.microsoft", "SkipLayerNormalization", expand_SkipLayerNormalization, 3, 5, 1, 4, 0},
    {"com.microsoft", "FusedConv", expand_FusedConv, 2, 4, 1, 1, 0},
    {"com.microsoft", "Attention", expand_MsAttention, 2, 7, 1, 2, 0},
    {"com.microsoft", "DynamicQuantizeLSTM", expand_DynamicQuantizeLSTM, 3, 12, 0, 3, 0},
    {"com.microsoft", "QuantizeLinear", expand_QuantizeLinear, 2, 3, 1, 1, 0},
    {"com.microsoft", "DequantizeLinear", expand_QuantizeLinear, 2, 3, 1, 1, 0},
    {"com.microsoft", "QLinearAdd", expand_QLinearBinary, 7, 8, 1, 1, 0},
    {"com.microsoft", "QLinearMul", expand_QLinearBinary, 7, 8, 1, 1, 0},
    {"com.microsoft", "QLinearSigmoid", expand_QLinearUnary, 4, 5, 1, 1, 0},
    {"com.microsoft", "QLinearLeakyRelu", expand_QLinearUnary, 4, 5, 1, 1, 0},
    {"com.microsoft", "QLinearGlobalAveragePool", expand_QLinearGlobalAveragePool, 4, 5, 1, 1, 0},
    /* experimental ops of opsets 1..9 (onnx/upgrade.c) */
    {"", "ImageScaler", expand_ImageScaler, 1, 1, 1, 1, 10},
    {"", "Affine", expand_Affine, 1, 1, 1, 1, 10},
    {"", "ScaledTanh", expand_ScaledTanh, 1, 1, 1, 1, 10},
    {"", "ParametricSoftplus", expand_ParametricSoftplus, 1, 1, 1, 1, 10},
    {"", "Crop", expand_Crop, 1, 1, 1, 1, 10},
};

const expand_rule *expand_find(const char *domain, const char *op, int opset)
{
    if (strcmp(domain, "ai.onnx") == 0) domain = "";
    for (size_t i = 0; i < sizeof expansions / sizeof expansions[0]; i++) {
        const expand_rule *r = &expansions[i];
        if (strcmp(r->domain, domain) == 0 && strcmp(r->op, op) == 0)
            return r->before_opset && opset >= r->before_opset ? NULL : r;
    }
    return NULL;
}

smelt_status expand_node(const expand_rule *r, expand_ctx *x)
{
    const ir_node *n = x->n;
    if (n->n_in < r->min_in || n->n_in > r->max_in || n->n_out < r->min_out || n->n_out > r->max_out)
        return ex_fail(x, SMELT_ERR_MODEL, "%d inputs and %d outputs, but the op takes %d..%d inputs and %d..%d outputs",
                       n->n_in, n->n_out, r->min_in, r->max_in, r->min_out, r->max_out);
    TRY(r->fn(x));
    return x->st;
}

smelt_status ex_fail(expand_ctx *x, smelt_status st, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (*x->domain) return diag_fail(st, "node '%s' (%s, domain %s): %s", x->n->name, x->op, x->domain, msg);
    return diag_fail(st, "node '%s' (%s): %s", x->n->name, x->op, msg);
}

static void oom(expand_ctx *x)
{
    if (!x->st) x->st = ex_fail(x, SMELT_ERR_NOMEM, "out of memory expanding the node");
}

int ex_in(const expand_ctx *x, int i) { return i < x->n->n_in ? x->n->in[i] : -1; }
int ex_out(const expand_ctx *x, int i) { return i < x->n->n_out ? x->n->out[i] : -1; }

int ex_rank(const expand_ctx *x, int t)
{
    if (t < 0) return -1;
    /* Node outputs get their dtype (and shape) from shape inference, later. */
    const ir_tensor *v = &x->g->tensors[t];
    return v->dtype != SMELT_UNDEFINED ? v->shape.rank : -1;
}

bool ex_is_vector(const expand_ctx *x, int t)
{
    if (ex_rank(x, t) < 0) return false;
    int64_t numel = ir_shape_numel(&x->g->tensors[t].shape);
    return numel != 1;
}

static int tmp(expand_ctx *x)
{
    char name[512];
    snprintf(name, sizeof name, "%s/%d", x->n->name, x->counter++);
    int t = x->tensor_new(x->user, name);
    if (t < 0) oom(x);
    return t;
}

int ex_node_n(expand_ctx *x, op_id op, int n_out, int *out, int n_in, const int *in)
{
    if (x->st) return -1;
    for (int o = 0; o < n_out; o++)
        if (out[o] < 0 && (out[o] = tmp(x)) < 0) return -1;
    char name[512];
    snprintf(name, sizeof name, "%s/%s_%d", x->n->name, op_get(op)->name, x->counter++);
    if (ir_node_add(x->g, name, op, n_in, in, n_out, out) < 0) {
        oom(x);
        return -1;
    }
    return out[0];
}

int ex_node(expand_ctx *x, op_id op, int out, int n_in, const int *in) { return ex_node_n(x, op, 1, &out, n_in, in); }

int ex_unary(expand_ctx *x, op_id op, int a) { return ex_node(x, op, -1, 1, &a); }

int ex_binary(expand_ctx *x, op_id op, int a, int b)
{
    int in[2] = {a, b};
    return ex_node(x, op, -1, 2, in);
}

void ex_attr_copy(expand_ctx *x, const ir_attr *a)
{
    if (!x->st && !ir_node_attr_add(x->g, x->g->n_nodes - 1, a)) oom(x);
}

void ex_attr_int(expand_ctx *x, const char *name, int64_t v)
{
    ex_attr_copy(x, &(ir_attr){.name = name, .type = IR_ATTR_INT, .i = v, .tensor = -1});
}

void ex_attr_float(expand_ctx *x, const char *name, float v)
{
    ex_attr_copy(x, &(ir_attr){.name = name, .type = IR_ATTR_FLOAT, .f = v, .tensor = -1});
}

void ex_attr_string(expand_ctx *x, const char *name, const char *s)
{
    ex_attr_copy(x, &(ir_attr){.name = name, .type = IR_ATTR_STRING, .s = s, .tensor = -1});
}

int ex_cast(expand_ctx *x, int t, smelt_dtype dt)
{
    int r = ex_unary(x, OP_Cast, t);
    ex_attr_int(x, "to", dt);
    return r;
}

int ex_const(expand_ctx *x, smelt_dtype dt, const ir_shape *shape, const void *data)
{
    if (x->st) return -1;
    int t = tmp(x);
    if (t < 0) return -1;
    ir_tensor *v = &x->g->tensors[t];
    v->dtype = dt;
    v->shape = *shape;
    if (!ir_tensor_alloc_data(x->g, t)) {
        oom(x);
        return -1;
    }
    memcpy(v->data, data, (size_t)ir_shape_numel(shape) * smelt_dtype_size(dt));
    return t;
}

int ex_const_f32(expand_ctx *x, float v) { return ex_const(x, SMELT_F32, &(ir_shape){.rank = 0}, &v); }

int ex_const_i64s(expand_ctx *x, int n, const int64_t *v)
{
    return ex_const(x, SMELT_I64, &(ir_shape){.rank = 1, .dim = {n}}, v);
}

int ex_align(expand_ctx *x, int t, int axis, int rank)
{
    if (t < 0 || !ex_is_vector(x, t) || ex_rank(x, t) != 1 || axis == rank - 1) return t;
    int64_t shape[IR_MAX_RANK];
    int n = 0;
    shape[n++] = -1;
    for (int d = axis + 1; d < rank && n < IR_MAX_RANK; d++) shape[n++] = 1;
    int in[2] = {t, ex_const_i64s(x, n, shape)};
    return ex_node(x, OP_Reshape, -1, 2, in);
}
