/*
 * layout.c — data movement that keeps every element: the reshapes (Reshape,
 * Flatten, Squeeze, Unsqueeze), Transpose, Expand, Tile,
 * DepthToSpace/SpaceToDepth, Trilu, CastLike and Dropout: shape rules and
 * index maps (an output element at a multi-index, read from inputs through
 * lower_load); and the attributes of the whole layout family, parsed once
 * (Concat, Split, Slice, Pad and CenterCropPad are in slice_pad.c).
 *
 * requires: a node whose shape rule succeeded (output shapes are consistent
 *           with the inputs and the constant value inputs).
 * guarantees: every index computed into an input lies inside that input for
 *             every output index, whatever the run-time data (gathered indices
 *             are clamped, padded borders read a clamped index and select).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/size.h"
#include "ir/ir.h"
#include "lower/lower.h"
#include "ops/layout.h"
#include "ops/shape.h"

static const ir_shape *in_shape(const lower_ctx *c, int i) { return &ir_in(c->g, c->n, i)->shape; }
static const ir_shape *out_shape(const lower_ctx *c, int o) { return &c->g->tensors[c->n->out[o]].shape; }
static smelt_dtype out_type(const lower_ctx *c, int o) { return c->g->tensors[c->n->out[o]].dtype; }

/* Reshape, Flatten, Squeeze, Unsqueeze: same elements in row-major order. */
kir_val elem_Reshape(lower_ctx *c, int out, const kir_val *idx)
{
    kir_val lin = lower_linear(c->k, out_shape(c, out), idx);
    kir_val in_idx[IR_MAX_RANK];
    lower_unravel(c->k, in_shape(c, 0), lin, in_idx);
    return lower_load(c, 0, in_idx);
}

/* ---- attributes, parsed once (ir/ops.h op_params) ------------------------ */

const char *const pad_mode_names[PAD_MODE_COUNT] = {"constant", "reflect", "edge", "wrap"};

smelt_status parse_layout(const ir_graph *g, const ir_node *n, void *params)
{
    (void)g;
    layout_params *p = params;
    const ir_attr *aa = ir_attr_find(n, "axis");
    if (n->op == OP_Concat && !aa) return ir_node_fail(n, SMELT_ERR_MODEL, "attribute 'axis' is required");
    p->axis = ir_attr_int(n, "axis", n->op == OP_Flatten ? 1 : 0);
    p->has_num_outputs = ir_attr_find(n, "num_outputs") != NULL;
    p->num_outputs = ir_attr_int(n, "num_outputs", n->n_out);
    const int64_t *v;
    p->n_perm = ir_attr_ints(n, "perm", &v);
    for (int i = 0; i < p->n_perm && i < IR_MAX_RANK; i++) p->perm[i] = v[i] < -1 || v[i] > IR_MAX_RANK ? -1 : (int)v[i];
    if (n->op == OP_DepthToSpace || n->op == OP_SpaceToDepth) {
        const ir_attr *ba = ir_attr_find(n, "blocksize");
        if (!ba || ba->type != IR_ATTR_INT || ba->i < 1 || ba->i > (1 << 20))
            return ir_node_fail(n, SMELT_ERR_MODEL, "attribute 'blocksize' (1..2^20) is required");
        p->blocksize = ba->i;
    }
    const char *mode = ir_attr_string(n, "mode", n->op == OP_Pad ? "constant" : "DCR");
    if (n->op == OP_DepthToSpace) {
        if (strcmp(mode, "DCR") != 0 && strcmp(mode, "CRD") != 0)
            return ir_node_fail(n, SMELT_ERR_MODEL, "mode '%.40s' is neither DCR nor CRD", mode);
        p->crd = mode[0] == 'C';
    }
    if (n->op == OP_Pad) {
        int m = -1;
        for (int i = 0; i < PAD_MODE_COUNT; i++)
            if (strcmp(mode, pad_mode_names[i]) == 0) m = i;
        if (m < 0) return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "pad mode '%.40s' is not supported", mode);
        p->mode = (pad_mode)m;
    }
    p->value = ir_attr_float(n, "value", 0.0f);
    p->allowzero = ir_attr_int(n, "allowzero", 0) != 0;
    p->upper = ir_attr_int(n, "upper", 1) != 0;
    p->n_axes = n->op == OP_CenterCropPad ? ir_attr_ints(n, "axes", &v) : -1;
    if (p->n_axes > IR_MAX_RANK)
        return ir_node_fail(n, SMELT_ERR_MODEL, "attribute axes has %d values, at most %d", p->n_axes, IR_MAX_RANK);
    for (int i = 0; i < p->n_axes; i++) p->axes[i] = v[i];
    p->lists_are_attrs = ir_attr_find(n, n->op == OP_Pad ? "pads" : "starts") != NULL;
    static const char *const slice_lists[LIST_N] = {"starts", "ends", "axes"};
    for (int i = 0; i < LIST_N; i++) {
        const char *name = n->op == OP_Slice ? slice_lists[i]
                           : i > 0           ? NULL
                           : n->op == OP_Pad ? "pads"
                           : n->op == OP_Split ? "split"
                           : n->op == OP_Squeeze || n->op == OP_Unsqueeze ? "axes"
                                                                          : NULL;
        p->n_list[i] = name ? ir_attr_ints(n, name, &p->list[i]) : -1;
        int cap = n->op == OP_Pad ? 2 * MAX_LIST : MAX_LIST;
        if (p->n_list[i] > cap)
            return ir_node_fail(n, SMELT_ERR_SHAPE, "attribute '%s' has %d values, more than the %d supported", name,
                                p->n_list[i], cap);
    }
    return SMELT_OK;
}

smelt_status layout_params_of(const ir_graph *g, const ir_node *n, layout_params *scratch, const layout_params **p)
{
    const void *v;
    TRY(ir_node_params_get(g, n, scratch, &v));
    *p = v;
    return SMELT_OK;
}

const layout_params *layout_elem_params(const lower_ctx *c, layout_params *scratch)
{
    const layout_params *p;
    return layout_params_of(c->g, c->n, scratch, &p) == SMELT_OK ? p : NULL;
}

kir_val elem_Transpose(lower_ctx *c, int out, const kir_val *idx)
{
    (void)out;
    int r = in_shape(c, 0)->rank, perm[IR_MAX_RANK];
    if (transpose_perm(c->g, c->n, r, perm) != r) return 0; /* shape inference checked it */
    kir_val in_idx[IR_MAX_RANK];
    for (int i = 0; i < r; i++) in_idx[perm[i]] = idx[i];
    return lower_load(c, 0, in_idx);
}

kir_val elem_Expand(lower_ctx *c, int out, const kir_val *idx)
{
    return lower_load_bcast(c, 0, out_shape(c, out)->rank, idx);
}

kir_val elem_CastLike(lower_ctx *c, int out, const kir_val *idx)
{
    return kir_cast(c->k, out_type(c, out), lower_load(c, 0, idx));
}

/* Inference-mode dropout: the identity, and a mask of ones (nothing dropped; true, or 1.0 where
 * opsets 7..9 give the mask the input's type). onnxruntime writes zeros for opsets 7..11; the
 * ONNX reference implementation and opset 12's definition write ones. */
kir_val elem_Dropout(lower_ctx *c, int out, const kir_val *idx)
{
    if (out == 1) return kir_cast(c->k, out_type(c, 1), kir_const_i(c->k, SMELT_BOOL, 1));
    return lower_load(c, 0, idx);
}

static kir_val idiv(kir_kernel *k, kir_val a, int64_t b) { return kir_binary(k, KIR_DIV, a, kir_idx(k, b)); }
static kir_val imod(kir_kernel *k, kir_val a, int64_t b) { return kir_binary(k, KIR_MOD, a, kir_idx(k, b)); }

/* out[n, c, h, w] = in[n, ch, h / b, w / b] where the channel ch holds the
 * block offset (h % b, w % b) before (DCR) or after (CRD) c. */
kir_val elem_DepthToSpace(lower_ctx *c, int out, const kir_val *idx)
{
    kir_kernel *k = c->k;
    layout_params scratch;
    const layout_params *p = layout_elem_params(c, &scratch);
    if (!p) return 0;
    int64_t b = p->blocksize, oc = out_shape(c, out)->dim[1];
    kir_val off = kir_add(k, kir_mul(k, imod(k, idx[2], b), kir_idx(k, b)), imod(k, idx[3], b));
    kir_val ch = p->crd
                     ? kir_add(k, kir_mul(k, idx[1], kir_idx(k, b * b)), off)
                     : kir_add(k, kir_mul(k, off, kir_idx(k, oc)), idx[1]);
    kir_val in_idx[4] = {idx[0], ch, idiv(k, idx[2], b), idiv(k, idx[3], b)};
    return lower_load(c, 0, in_idx);
}

/* The inverse of DCR DepthToSpace. */
kir_val elem_SpaceToDepth(lower_ctx *c, int out, const kir_val *idx)
{
    (void)out;
    kir_kernel *k = c->k;
    layout_params scratch;
    const layout_params *p = layout_elem_params(c, &scratch);
    if (!p) return 0;
    int64_t b = p->blocksize, ic = in_shape(c, 0)->dim[1];
    kir_val blk = idiv(k, idx[1], ic);
    kir_val in_idx[4] = {idx[0], imod(k, idx[1], ic),
                         kir_add(k, kir_mul(k, idx[2], kir_idx(k, b)), idiv(k, blk, b)),
                         kir_add(k, kir_mul(k, idx[3], kir_idx(k, b)), imod(k, blk, b))};
    return lower_load(c, 0, in_idx);
}

kir_val elem_Tile(lower_ctx *c, int out, const kir_val *idx)
{
    (void)out;
    const ir_shape *xs = in_shape(c, 0);
    kir_val in_idx[IR_MAX_RANK];
    for (int j = 0; j < xs->rank; j++) {
        int64_t d = xs->dim[j] > 0 ? xs->dim[j] : 1;
        in_idx[j] = kir_binary(c->k, KIR_MOD, idx[j], kir_idx(c->k, d));
    }
    return lower_load(c, 0, in_idx);
}

smelt_status infer_Trilu(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_need_input(g, n, 0, "input"));
    const ir_tensor *x = ir_in(g, n, 0), *k = ir_in(g, n, 1);
    TRY(infer_need_dtype(n, x, "input", DT_ALL_NUM | DT(BOOL)));
    char s1[160];
    if (x->shape.rank < 2)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "input %s must have rank >= 2", infer_shp(&x->shape, s1));
    if (k && !k->data) return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "k input '%s' must be a compile-time constant", k->name);
    if (k && ir_tensor_numel(k) != 1) return ir_node_fail(n, SMELT_ERR_SHAPE, "k input '%s' must hold one value", k->name);
    infer_put_out(g, n, 0, x->dtype, &x->shape);
    return SMELT_OK;
}

/* Reshape's and Expand's input 1, `shape`: its values (at most IR_MAX_RANK of them). */
static smelt_status read_target_shape(ir_graph *g, const ir_node *n, int64_t *want, int *cnt)
{
    smelt_status st;
    *cnt = infer_read_int_input(g, n, 1, "shape", want, MAX_LIST, &st);
    if (*cnt < 0) return st ? st : ir_node_fail(n, SMELT_ERR_MODEL, "input 'shape' is required");
    if (*cnt > IR_MAX_RANK)
        return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "target rank %d exceeds the maximum %d", *cnt, IR_MAX_RANK);
    return SMELT_OK;
}

smelt_status infer_Reshape(ir_graph *g, int node)
{
    char b1[160], b2[160];
    const ir_node *n = &g->nodes[node];
    TRY(infer_check_dtypes(g, n));
    const ir_tensor *x = ir_in(g, n, 0);
    int64_t want[MAX_LIST];
    int cnt;
    TRY(read_target_shape(g, n, want, &cnt));
    if (!infer_shape_known(&x->shape))
        return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "shape %s of input '%s' is not known at compile time",
                            infer_shp(&x->shape, b1), x->name);
    layout_params scratch;
    const layout_params *p;
    TRY(layout_params_of(g, n, &scratch, &p));
    bool allowzero = p->allowzero;
    ir_shape s = {.rank = cnt};
    int infer_at = -1;
    int64_t known = 1;
    for (int i = 0; i < cnt; i++) {
        int64_t d = want[i];
        if (d == 0 && !allowzero) {
            if (i >= x->shape.rank)
                return ir_node_fail(n, SMELT_ERR_SHAPE, "shape entry %d is 0 (copy the input dim), but the input %s has rank %d",
                                    i, infer_shp(&x->shape, b1), x->shape.rank);
            d = x->shape.dim[i];
        }
        if (d == -1) {
            if (infer_at >= 0) return ir_node_fail(n, SMELT_ERR_SHAPE, "more than one -1 in the target shape");
            infer_at = i;
            continue;
        }
        if (d < 0) return ir_node_fail(n, SMELT_ERR_SHAPE, "invalid target dimension %lld", (long long)d);
        s.dim[i] = d;
        if (!size_mul(known, d, &known) || known > SMELT_MAX_ELEMS)
            return ir_node_fail(n, SMELT_ERR_SHAPE,
                                "the target dims up to entry %d (%lld) multiply past 2^40 elements", i, (long long)d);
    }
    int64_t numel = ir_tensor_numel(x);
    if (infer_at >= 0) {
        if (known == 0 || numel % known != 0) {
            s.dim[infer_at] = -1;
            return ir_node_fail(n, SMELT_ERR_SHAPE, "cannot reshape %s (%lld elements) to %s", infer_shp(&x->shape, b1),
                                (long long)numel, infer_shp(&s, b2));
        }
        s.dim[infer_at] = numel / known;
    } else if (known != numel) {
        return ir_node_fail(n, SMELT_ERR_SHAPE, "cannot reshape %s (%lld elements) to %s", infer_shp(&x->shape, b1),
                            (long long)numel, infer_shp(&s, b2));
    }
    return infer_set_out(g, n, 0, x->dtype, &s);
}

smelt_status infer_Flatten(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_check_dtypes(g, n));
    const ir_tensor *x = ir_in(g, n, 0);
    int r = x->shape.rank;
    layout_params scratch;
    const layout_params *p;
    TRY(layout_params_of(g, n, &scratch, &p));
    int64_t axis = p->axis;
    if (axis < -r || axis > r)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "axis %lld is out of range for rank %d (valid: %d..%d)", (long long)axis, r,
                            -r, r);
    if (axis < 0) axis += r;
    ir_shape s = {.rank = 2, .dim = {1, 1}};
    for (int i = 0; i < r; i++) s.dim[i < axis ? 0 : 1] *= x->shape.dim[i];
    return infer_set_out(g, n, 0, x->dtype, &s);
}

smelt_status infer_Squeeze(ir_graph *g, int node)
{
    char b[160];
    const ir_node *n = &g->nodes[node];
    TRY(infer_check_dtypes(g, n));
    const ir_tensor *x = ir_in(g, n, 0);
    int r = x->shape.rank;
    smelt_status st;
    int64_t axes[MAX_LIST];
    layout_params scratch;
    const layout_params *p;
    TRY(layout_params_of(g, n, &scratch, &p));
    int cnt = infer_read_list(g, n, p->list[LIST_SQ_AXES], p->n_list[LIST_SQ_AXES], 1, "axes", axes, MAX_LIST, &st);
    if (cnt == -2) return st;
    bool drop[IR_MAX_RANK] = {false};
    if (cnt < 0) {
        for (int i = 0; i < r; i++) drop[i] = x->shape.dim[i] == 1;
    }
    for (int i = 0; i < cnt; i++) {
        int a;
        TRY(infer_norm_axis(n, axes[i], r, "axis", &a));
        if (drop[a]) return ir_node_fail(n, SMELT_ERR_SHAPE, "axis %lld is listed twice", (long long)axes[i]);
        if (x->shape.dim[a] != 1)
            return ir_node_fail(n, SMELT_ERR_SHAPE, "cannot squeeze axis %d of shape %s: its size is %lld, not 1", a,
                                infer_shp(&x->shape, b), (long long)x->shape.dim[a]);
        drop[a] = true;
    }
    ir_shape s = {.rank = 0};
    for (int i = 0; i < r; i++)
        if (!drop[i]) s.dim[s.rank++] = x->shape.dim[i];
    return infer_set_out(g, n, 0, x->dtype, &s);
}

smelt_status infer_Unsqueeze(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_check_dtypes(g, n));
    const ir_tensor *x = ir_in(g, n, 0);
    smelt_status st;
    int64_t axes[MAX_LIST];
    layout_params scratch;
    const layout_params *p;
    TRY(layout_params_of(g, n, &scratch, &p));
    int cnt = infer_read_list(g, n, p->list[LIST_SQ_AXES], p->n_list[LIST_SQ_AXES], 1, "axes", axes, MAX_LIST, &st);
    if (cnt == -2) return st;
    if (cnt < 0) return ir_node_fail(n, SMELT_ERR_MODEL, "axes are required");
    int r = x->shape.rank + cnt;
    if (r > IR_MAX_RANK)
        return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "output rank %d exceeds the maximum %d", r, IR_MAX_RANK);
    bool ins[IR_MAX_RANK] = {false};
    for (int i = 0; i < cnt; i++) {
        int a;
        TRY(infer_norm_axis(n, axes[i], r, "axis", &a));
        if (ins[a]) return ir_node_fail(n, SMELT_ERR_SHAPE, "axis %lld is listed twice", (long long)axes[i]);
        ins[a] = true;
    }
    ir_shape s = {.rank = r};
    for (int i = 0, j = 0; i < r; i++) s.dim[i] = ins[i] ? 1 : x->shape.dim[j++];
    return infer_set_out(g, n, 0, x->dtype, &s);
}

/* Transpose's permutation: the `perm` attribute, or the reversed axes. */
int transpose_perm(const ir_graph *g, const ir_node *n, int rank, int *perm)
{
    layout_params scratch;
    const layout_params *p;
    if (layout_params_of(g, n, &scratch, &p) != SMELT_OK) return -1;
    int cnt = p->n_perm;
    if (cnt < 0) {
        for (int i = 0; i < rank; i++) perm[i] = rank - 1 - i;
        return rank;
    }
    for (int i = 0; i < cnt && i < IR_MAX_RANK; i++) perm[i] = p->perm[i];
    return cnt;
}

smelt_status infer_Transpose(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_check_dtypes(g, n));
    const ir_tensor *x = ir_in(g, n, 0);
    int r = x->shape.rank, perm[IR_MAX_RANK];
    layout_params scratch;
    const layout_params *p;
    TRY(layout_params_of(g, n, &scratch, &p)); /* then transpose_perm finds them */
    (void)p;
    int cnt = transpose_perm(g, n, r, perm);
    if (cnt != r) return ir_node_fail(n, SMELT_ERR_SHAPE, "perm has %d entries for an input of rank %d", cnt, r);
    bool seen[IR_MAX_RANK] = {false};
    ir_shape s = {.rank = r};
    for (int i = 0; i < r; i++) {
        if (perm[i] < 0 || perm[i] >= r || seen[perm[i]])
            return ir_node_fail(n, SMELT_ERR_SHAPE, "perm is not a permutation of 0..%d", r - 1);
        seen[perm[i]] = true;
        s.dim[i] = x->shape.dim[perm[i]];
    }
    return infer_set_out(g, n, 0, x->dtype, &s);
}

smelt_status infer_Expand(ir_graph *g, int node)
{
    char b1[160], b2[160];
    const ir_node *n = &g->nodes[node];
    TRY(infer_check_dtypes(g, n));
    const ir_tensor *x = ir_in(g, n, 0);
    int64_t want[MAX_LIST];
    int cnt;
    TRY(read_target_shape(g, n, want, &cnt));
    ir_shape t = {.rank = cnt}, s;
    for (int i = 0; i < cnt; i++) {
        if (want[i] < 0) return ir_node_fail(n, SMELT_ERR_SHAPE, "invalid target dimension %lld", (long long)want[i]);
        t.dim[i] = want[i];
    }
    if (!ir_shape_broadcast(&x->shape, &t, &s))
        return ir_node_fail(n, SMELT_ERR_SHAPE, "cannot expand %s to %s", infer_shp(&x->shape, b1), infer_shp(&t, b2));
    return infer_set_out(g, n, 0, x->dtype, &s);
}

smelt_status infer_DepthToSpace(ir_graph *g, int node)
{
    char b[160];
    const ir_node *n = &g->nodes[node];
    TRY(infer_check_dtypes(g, n));
    const ir_tensor *x = ir_in(g, n, 0);
    layout_params scratch;
    const layout_params *p;
    TRY(layout_params_of(g, n, &scratch, &p));
    int64_t bs = p->blocksize;
    if (x->shape.rank != 4)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "input %s must have rank 4 (N,C,H,W)", infer_shp(&x->shape, b));
    ir_shape s = x->shape;
    if (n->op == OP_DepthToSpace) {
        if (s.dim[1] % (bs * bs) != 0)
            return ir_node_fail(n, SMELT_ERR_SHAPE, "channels of %s are not divisible by blocksize^2 = %lld",
                                infer_shp(&x->shape, b), (long long)(bs * bs));
        s.dim[1] /= bs * bs;
        s.dim[2] *= bs;
        s.dim[3] *= bs;
    } else {
        if (s.dim[2] % bs != 0 || s.dim[3] % bs != 0)
            return ir_node_fail(n, SMELT_ERR_SHAPE, "height and width of %s are not divisible by blocksize %lld",
                                infer_shp(&x->shape, b), (long long)bs);
        s.dim[1] *= bs * bs;
        s.dim[2] /= bs;
        s.dim[3] /= bs;
    }
    return infer_set_out(g, n, 0, x->dtype, &s);
}

smelt_status infer_Tile(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_check_dtypes(g, n));
    const ir_tensor *x = ir_in(g, n, 0);
    smelt_status st;
    int64_t rep[MAX_LIST];
    int cnt = infer_read_int_input(g, n, 1, "repeats", rep, MAX_LIST, &st);
    if (cnt < 0) return st ? st : ir_node_fail(n, SMELT_ERR_MODEL, "input 'repeats' is required");
    if (cnt != x->shape.rank)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "repeats has %d entries for an input of rank %d", cnt, x->shape.rank);
    ir_shape s = x->shape;
    for (int i = 0; i < cnt; i++) {
        if (rep[i] < 0) return ir_node_fail(n, SMELT_ERR_SHAPE, "repeat %lld of axis %d is negative", (long long)rep[i], i);
        if (!size_mul(s.dim[i], rep[i], &s.dim[i]))
            return ir_node_fail(n, SMELT_ERR_SHAPE, "repeat %lld of axis %d overflows its size", (long long)rep[i], i);
    }
    return infer_set_out(g, n, 0, x->dtype, &s);
}

smelt_status infer_Dropout(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_check_dtypes(g, n));
    const ir_tensor *x = ir_in(g, n, 0), *train = ir_in(g, n, 2);
    TRY(infer_require_class(n, x, infer_is_float(x->dtype), "float"));
    if (train) {
        if (!train->data)
            return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "input '%s' (training_mode) must be known at compile time", train->name);
        if (ir_const_int(train, 0))
            return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "training mode (random dropout) is not supported");
    }
    TRY(infer_set_out(g, n, 0, x->dtype, &x->shape));
    return infer_set_out(g, n, 1, g->opset < 10 ? x->dtype : SMELT_BOOL, &x->shape); /* 7..9: mask of type T */
}

kir_val elem_Trilu(lower_ctx *c, int out, const kir_val *idx)
{
    (void)out;
    kir_kernel *K = c->k;
    const ir_tensor *x = ir_in(c->g, c->n, 0), *kt = ir_in(c->g, c->n, 1);
    int r = x->shape.rank;
    int64_t k = kt ? ir_const_int(kt, 0) : 0;
    layout_params scratch;
    const layout_params *p = layout_elem_params(c, &scratch);
    if (!p) return 0;
    bool upper = p->upper;
    /* upper: keep j - i >= k; lower: keep j - i <= k */
    kir_val diff = kir_binary(K, KIR_SUB, idx[r - 1], idx[r - 2]);
    kir_val keep = kir_binary(K, upper ? KIR_GE : KIR_LE, diff, kir_idx(K, k));
    kir_val zero = kir_is_float(x->dtype) ? kir_const_f(K, x->dtype, 0) : kir_const_i(K, x->dtype, 0);
    return kir_select(K, keep, lower_load(c, 0, idx), zero);
}
