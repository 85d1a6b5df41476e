/*
 * recurrent.c — RNN, GRU and LSTM (and their packed forms, and
 * DynamicQuantizeLSTM): attributes and shape rule; the kernels are in
 * recurrent_lower.c.
 *
 * requires: a node of one of those ops.
 * guarantees: the attributes are parsed once (parse_recurrent, ir/ops.h
 *             op_params) and checked against the input shapes (rnn_parse) with
 *             a diagnostic naming the node and the rule.
 */
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "ops/recurrent.h"
#include "ops/recurrent_params.h"
#include "ops/shape.h"

/* Which of alpha/beta each activation takes from activation_alpha/beta (in
 * order, skipping activations that take none), and their defaults. */
static const struct {
    const char *name;
    bool uses_alpha, uses_beta;
    float alpha, beta;
} act_info[] = {
    [ACT_RELU] = {"Relu", false, false, 0, 0},
    [ACT_TANH] = {"Tanh", false, false, 0, 0},
    [ACT_SIGMOID] = {"Sigmoid", false, false, 0, 0},
    [ACT_AFFINE] = {"Affine", true, true, 1.0f, 0.0f},
    [ACT_LEAKYRELU] = {"LeakyRelu", true, false, 0.01f, 0},
    [ACT_THRESHOLDEDRELU] = {"ThresholdedRelu", true, false, 1.0f, 0},
    [ACT_SCALEDTANH] = {"ScaledTanh", true, true, 1.0f, 1.0f},
    [ACT_HARDSIGMOID] = {"HardSigmoid", true, true, 0.2f, 0.5f},
    [ACT_ELU] = {"Elu", true, false, 1.0f, 0},
    [ACT_SOFTSIGN] = {"Softsign", false, false, 0, 0},
    [ACT_SOFTPLUS] = {"Softplus", false, false, 0, 0},
};
_Static_assert(sizeof act_info / sizeof act_info[0] == ACT_COUNT, "act_info needs a row per rnn_act");

static smelt_status parse_activations(const ir_node *n, rnn_params *p)
{
    static const rnn_act defaults[3][3] = {
        [CELL_RNN] = {ACT_TANH},
        [CELL_GRU] = {ACT_SIGMOID, ACT_TANH},
        [CELL_LSTM] = {ACT_SIGMOID, ACT_TANH, ACT_TANH},
    };
    const ir_attr *names = ir_attr_find(n, "activations");
    int want = p->n_fn * p->dirs;
    if (names && (names->type != IR_ATTR_STRINGS || names->n != want))
        return ir_node_fail(n, SMELT_ERR_MODEL, "activations must list %d functions (%d per direction), not %d",
                            want, p->n_fn, names->type == IR_ATTR_STRINGS ? names->n : 1);
    const float *alphas = NULL, *betas = NULL;
    int n_alpha = ir_attr_floats(n, "activation_alpha", &alphas);
    int n_beta = ir_attr_floats(n, "activation_beta", &betas);
    int ai = 0, bi = 0;
    for (int f = 0; f < want; f++) {
        rnn_fn *fn = &p->fn[f / p->n_fn][f % p->n_fn];
        fn->act = defaults[p->cell][f % p->n_fn];
        if (names) {
            int a = 0;
            while (a < ACT_COUNT && strcasecmp(names->strings[f], act_info[a].name)) a++;
            if (a == ACT_COUNT)
                return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "activation '%s' is not one of the ONNX RNN functions",
                                    names->strings[f]);
            fn->act = (rnn_act)a;
        }
        fn->alpha = act_info[fn->act].alpha;
        fn->beta = act_info[fn->act].beta;
        if (act_info[fn->act].uses_alpha && ai < n_alpha) fn->alpha = alphas[ai++];
        if (act_info[fn->act].uses_beta && bi < n_beta) fn->beta = betas[bi++];
    }
    return SMELT_OK;
}

/* dim == want, where an unknown (-1) dim matches anything. */
static bool dim_ok(int64_t dim, int64_t want) { return dim < 0 || want < 0 || dim == want; }

static smelt_status check_shape(const ir_node *n, const ir_tensor *t, const char *what, int rank, const int64_t *want)
{
    if (!t) return SMELT_OK;
    bool ok = t->shape.rank == rank;
    for (int d = 0; ok && d < rank; d++) ok = dim_ok(t->shape.dim[d], want[d]);
    if (ok) return SMELT_OK;
    ir_shape w = {.rank = rank};
    for (int d = 0; d < rank; d++) w.dim[d] = want[d];
    char a[160], b[160];
    return ir_node_fail(n, SMELT_ERR_SHAPE, "%s '%s' has shape %s, expected %s", what, t->name, infer_shp(&t->shape, a),
                        infer_shp(&w, b));
}

/* Attributes and sizes of node n, checked against its input shapes. */
/* A scale [D] or [D, N] (per direction or per gate column) and its zero point, [D] or [D, N]
 * too, of the quantized tensor's dtype. */
static smelt_status check_qparams(const ir_graph *g, const ir_node *n, int scale, int zp, const ir_tensor *q,
                                  int64_t D, int64_t N)
{
    const ir_tensor *t[2] = {ir_in(g, n, scale), ir_in(g, n, zp)};
    int64_t want[2] = {D, N};
    for (int i = 0; i < 2; i++) {
        if (!t[i]) continue;
        bool ok = t[i]->dtype == (i ? q->dtype : SMELT_F32) && (t[i]->shape.rank == 1 || t[i]->shape.rank == 2);
        for (int d = 0; ok && d < t[i]->shape.rank; d++) ok = dim_ok(t[i]->shape.dim[d], want[d]);
        if (!ok)
            return ir_node_fail(n, SMELT_ERR_MODEL, "%s '%s' must be %s of shape [%lld] or [%lld, %lld]",
                                i ? "zero point" : "scale", t[i]->name, infer_dtype_str(i ? q->dtype : SMELT_F32),
                                (long long)D, (long long)D, (long long)N);
    }
    return SMELT_OK;
}

/* DynamicQuantizeLSTM's dtypes: uint8 X with a float32 scale and uint8 zero point (inputs 12,
 * 13), 8-bit W and R, float32 for the rest. */
static smelt_status check_quant_dtypes(const ir_graph *g, const ir_node *n)
{
    const ir_tensor *x = ir_in(g, n, IN_X), *xs = ir_in(g, n, IN_XS), *xz = ir_in(g, n, IN_XZ);
    if (x->dtype != SMELT_U8 || !xs || !xz || xs->dtype != SMELT_F32 || xz->dtype != SMELT_U8)
        return ir_node_fail(n, SMELT_ERR_MODEL, "X must be uint8 with a float32 scale and a uint8 zero point");
    for (int i = IN_W; i <= IN_R; i++) {
        const ir_tensor *t = ir_in(g, n, i);
        /* float32: the 8-bit values less their zero point, which is then omitted (graph/fold_gemm.c
         * makes constant weights so) */
        bool folded = t->dtype == SMELT_F32 && !ir_in(g, n, i == IN_W ? IN_WZ : IN_RZ);
        /* int16: R's k-pair panels (graph_pack_recurrent_r) */
        bool pairs = i == IN_R && t->dtype == SMELT_I16 && t->enc.kind == IR_ENC_PANELS;
        if (t->dtype != SMELT_I8 && t->dtype != SMELT_U8 && !folded && !pairs)
            return ir_node_fail(n, SMELT_ERR_MODEL, "input '%s' must be int8 or uint8", t->name);
    }
    static const int floats[] = {IN_B, IN_H0, IN_C0, IN_P};
    for (int i = 0; i < 4; i++) {
        const ir_tensor *t = ir_in(g, n, floats[i]);
        if (t && t->dtype != SMELT_F32) return ir_node_fail(n, SMELT_ERR_MODEL, "input '%s' must be float32", t->name);
    }
    if (!ir_in(g, n, IN_WS) || !ir_in(g, n, IN_RS)) return ir_node_fail(n, SMELT_ERR_MODEL, "W_scale and R_scale are required");
    return SMELT_OK;
}

smelt_status parse_recurrent(const ir_graph *g, const ir_node *n, void *params)
{
    (void)g;
    rnn_params *p = params;
    p->quant = n->op == OP_DynamicQuantizeLSTM;
    p->packed = p->quant || n->op == OP_PackedRNN || n->op == OP_PackedGRU || n->op == OP_PackedLSTM;
    p->cell = n->op == OP_LSTM || n->op == OP_PackedLSTM || p->quant ? CELL_LSTM
              : n->op == OP_GRU || n->op == OP_PackedGRU ? CELL_GRU
                                                         : CELL_RNN;
    p->gates = p->cell == CELL_LSTM ? 4 : p->cell == CELL_GRU ? 3 : 1;
    p->n_fn = p->cell == CELL_LSTM ? 3 : p->cell == CELL_GRU ? 2 : 1;
    const char *dir = ir_attr_string(n, "direction", "forward");
    if (!strcmp(dir, "forward")) {
        p->dirs = 1;
    } else if (!strcmp(dir, "reverse")) {
        p->dirs = 1;
        p->reverse[0] = true;
    } else if (!strcmp(dir, "bidirectional")) {
        p->dirs = 2;
        p->reverse[1] = true;
    } else {
        return ir_node_fail(n, SMELT_ERR_MODEL, "direction '%s' must be forward, reverse or bidirectional", dir);
    }
    int64_t layout = ir_attr_int(n, "layout", 0);
    if (layout != 0 && layout != 1) return ir_node_fail(n, SMELT_ERR_MODEL, "layout %lld must be 0 or 1", (long long)layout);
    p->layout = (int)layout;
    const ir_attr *clip = ir_attr_find(n, "clip");
    if (clip) {
        p->has_clip = true;
        p->clip = ir_attr_float(n, "clip", 0);
        if (!(p->clip >= 0)) return ir_node_fail(n, SMELT_ERR_MODEL, "clip %g must be a non-negative threshold", p->clip);
    }
    p->input_forget = p->cell == CELL_LSTM && ir_attr_int(n, "input_forget", 0) != 0;
    p->lbr = p->cell == CELL_GRU && ir_attr_int(n, "linear_before_reset", 0) != 0;
    TRY(parse_activations(n, p));
    p->hidden_size = ir_attr_int(n, "hidden_size", -1);
    return SMELT_OK;
}

smelt_status rnn_parse(const ir_graph *g, const ir_node *n, rnn_params *p)
{
    const void *v;
    TRY(ir_node_params_get(g, n, p, &v));
    if (v != p) memcpy(p, v, sizeof *p);
    const ir_tensor *x = ir_in(g, n, IN_X), *w = ir_in(g, n, IN_W), *r = ir_in(g, n, IN_R);
    if (!x || !w || !r) return ir_node_fail(n, SMELT_ERR_MODEL, "inputs X, W and R are required");
    ir_tensor rl = *r, wl = *w; /* R and W as the op reads them: their panels (graph_pack_recurrent_r, _w) by the logical shape */
    rl.shape = ir_tensor_logical_shape(r);
    wl.shape = ir_tensor_logical_shape(w);
    r = &rl;
    w = &wl;
    TRY(infer_check_dtypes(g, n));
    if (p->quant) TRY(check_quant_dtypes(g, n));
    else TRY(infer_require_class(n, x, infer_is_float(x->dtype), "float"));
    p->dt = p->quant ? SMELT_F32 : x->dtype;
    for (int i = IN_W; i < n->n_in && !p->quant; i++) {
        const ir_tensor *t = ir_in(g, n, i);
        if (!t || i == IN_LENS) continue;
        if (t->dtype != p->dt)
            return ir_node_fail(n, SMELT_ERR_MODEL, "input '%s' must have X's dtype %s", t->name, infer_dtype_str(p->dt));
    }
    const ir_tensor *lens = ir_in(g, n, IN_LENS);
    if (lens) TRY(infer_require_class(n, lens, infer_is_int(lens->dtype), "integer (sequence_lens)"));
    if (x->shape.rank != 3 || w->shape.rank != 3 || r->shape.rank != 3)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "X, W and R must have rank 3 (ranks %d, %d, %d)", x->shape.rank,
                            w->shape.rank, r->shape.rank);
    p->seq = x->shape.dim[p->layout ? 1 : 0];
    p->batch = x->shape.dim[p->layout ? 0 : 1];
    p->input = x->shape.dim[2];
    p->hidden = r->shape.dim[p->packed ? 1 : 2];
    int64_t hs = p->hidden_size;
    if (hs >= 0 && !dim_ok(p->hidden, hs))
        return ir_node_fail(n, SMELT_ERR_SHAPE, "hidden_size %lld does not match R's last dim %lld", (long long)hs,
                            (long long)p->hidden);
    if (p->hidden < 0) p->hidden = hs;
    int64_t D = p->dirs, H = p->hidden, N = p->gates * (H < 0 ? -1 : H), B = p->batch;
    int64_t ws[3] = {D, N, p->input}, rs[3] = {D, N, H}, bs[2] = {D, 2 * N}, ls[1] = {B}, ps[2] = {D, 3 * H};
    int64_t hs0[3] = {D, B, H}, hs1[3] = {B, D, H};
    if (p->packed) { /* [D, K, N] */
        ws[1] = p->input, ws[2] = N, rs[1] = H, rs[2] = N;
    }
    if (p->quant) {
        TRY(check_qparams(g, n, IN_WS, IN_WZ, w, D, N));
        TRY(check_qparams(g, n, IN_RS, IN_RZ, r, D, N));
    }
    TRY(check_shape(n, w, "W", 3, ws));
    TRY(check_shape(n, r, "R", 3, rs));
    TRY(check_shape(n, ir_in(g, n, IN_B), "B", 2, bs));
    TRY(check_shape(n, lens, "sequence_lens", 1, ls));
    TRY(check_shape(n, ir_in(g, n, IN_H0), "initial_h", 3, p->layout ? hs1 : hs0));
    if (p->cell == CELL_LSTM) {
        TRY(check_shape(n, ir_in(g, n, IN_C0), "initial_c", 3, p->layout ? hs1 : hs0));
        TRY(check_shape(n, ir_in(g, n, IN_P), "P", 2, ps));
    }
    return SMELT_OK;
}

smelt_status infer_Recurrent(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    rnn_params p;
    TRY(rnn_parse(g, n, &p));
    ir_shape y = {.rank = 4}, yh = {.rank = 3};
    if (p.layout) {
        int64_t ys[4] = {p.batch, p.seq, p.dirs, p.hidden}, hs[3] = {p.batch, p.dirs, p.hidden};
        memcpy(y.dim, ys, sizeof ys);
        memcpy(yh.dim, hs, sizeof hs);
    } else {
        int64_t ys[4] = {p.seq, p.dirs, p.batch, p.hidden}, hs[3] = {p.dirs, p.batch, p.hidden};
        memcpy(y.dim, ys, sizeof ys);
        memcpy(yh.dim, hs, sizeof hs);
    }
    TRY(infer_set_out(g, n, OUT_Y, p.dt, &y));
    TRY(infer_set_out(g, n, OUT_YH, p.dt, &yh));
    return infer_set_out(g, n, OUT_YC, p.dt, &yh);
}
