/*
 * conv_window.c — the sliding-window geometry of Conv and ConvTranspose (which
 * the pools share: window_geom_get, parse_window, describe_window) and their
 * shape rules (infer_Conv, infer_ConvTranspose). Split from ops/conv.c, which
 * lowers Conv.
 *
 * requires: a node with the window attributes (kernel_shape, strides, pads,
 *           dilations, auto_pad, group) and its inputs' shapes.
 * guarantees: the geometry checked against the ONNX rules, each violation a
 *             diag naming the node and the attribute.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "lower/lower.h"
#include "ops/conv.h"
#include "ops/shape.h"

/* ---- sliding windows ---------------------------------------------------- */

/* List attribute `name` into out[0..cap) (`def` in every slot when absent) and its count into *cnt
 * (-1 when absent); with `checked`, each value in min..2^40. */
static smelt_status list_attr(const ir_node *n, const char *name, int cap, int64_t def, bool checked, int64_t min,
                              int64_t *out, int *cnt)
{
    const int64_t *v;
    int c = *cnt = ir_attr_ints(n, name, &v);
    for (int i = 0; i < cap; i++) out[i] = def;
    if (c < 0) return SMELT_OK;
    if (c > cap) return ir_node_fail(n, SMELT_ERR_MODEL, "attribute %s has %d values, at most %d", name, c, cap);
    for (int i = 0; i < c; i++) {
        if (checked && (v[i] < min || v[i] > SMELT_MAX_ELEMS))
            return ir_node_fail(n, SMELT_ERR_MODEL, "attribute %s[%d] = %lld must be in %lld..2^40", name, i,
                                (long long)v[i], (long long)min);
        out[i] = v[i];
    }
    return SMELT_OK;
}

smelt_status parse_window(const ir_graph *g, const ir_node *n, void *params)
{
    (void)g;
    window_params *p = params;
    TRY(list_attr(n, "kernel_shape", WINDOW_MAX_SPATIAL, 0, false, 0, p->kernel, &p->n_kernel));
    TRY(list_attr(n, "strides", WINDOW_MAX_SPATIAL, 1, true, 1, p->strides, &p->n_strides));
    TRY(list_attr(n, "dilations", WINDOW_MAX_SPATIAL, 1, true, 1, p->dilations, &p->n_dilations));
    TRY(list_attr(n, "pads", 2 * WINDOW_MAX_SPATIAL, 0, true, 0, p->pads, &p->n_pads));
    TRY(list_attr(n, "output_padding", WINDOW_MAX_SPATIAL, 0, true, 0, p->output_padding, &p->n_output_padding));
    TRY(list_attr(n, "output_shape", WINDOW_MAX_SPATIAL + 2, 0, false, 0, p->output_shape, &p->n_output_shape));
    const char *ap = ir_attr_string(n, "auto_pad", "NOTSET");
    if (!strcmp(ap, "NOTSET") || !*ap) p->auto_pad = PAD_NOTSET;
    else if (!strcmp(ap, "SAME_UPPER")) p->auto_pad = PAD_SAME_UPPER;
    else if (!strcmp(ap, "SAME_LOWER")) p->auto_pad = PAD_SAME_LOWER;
    else if (!strcmp(ap, "VALID")) p->auto_pad = PAD_VALID;
    else return ir_node_fail(n, SMELT_ERR_MODEL, "auto_pad '%.40s' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID", ap);
    p->ceil_mode = ir_attr_int(n, "ceil_mode", 0) != 0;
    p->group = ir_attr_int(n, "group", 1);
    if (p->group < 1) return ir_node_fail(n, SMELT_ERR_MODEL, "group %lld must be >= 1", (long long)p->group);
    p->storage_order = ir_attr_int(n, "storage_order", 0) != 0;
    p->count_include_pad = ir_attr_int(n, "count_include_pad", 0) != 0;
    p->p = ir_attr_int(n, "p", 2);
    if (p->p < 1) return ir_node_fail(n, SMELT_ERR_MODEL, "attribute p = %lld must be >= 1", (long long)p->p);
    return SMELT_OK;
}

smelt_status window_params_of(const ir_graph *g, const ir_node *n, window_params *scratch, const window_params **p)
{
    const void *v;
    TRY(ir_node_params_get(g, n, scratch, &v));
    *p = v;
    return SMELT_OK;
}

/* describe_window's output: appended at *len, within cap (NUL kept). */
static void dw_printf(char *buf, size_t cap, size_t *len, const char *fmt, ...) DIAG_PRINTF(4, 5);
static void dw_printf(char *buf, size_t cap, size_t *len, const char *fmt, ...)
{
    if (*len + 1 >= cap) return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(buf + *len, cap - *len, fmt, ap);
    va_end(ap);
    *len = k < 0 ? cap - 1 : *len + (size_t)k;
    if (*len > cap - 1) *len = cap - 1;
}

/* A list as "3x3", or one number when every entry is the same. */
static void dw_ints(char *buf, size_t cap, size_t *len, const char *label, const int64_t *v, int n, const char *sep)
{
    bool same = true;
    for (int i = 1; i < n; i++) same &= v[i] == v[0];
    dw_printf(buf, cap, len, "%s", label);
    for (int i = 0; i < (same ? (n > 0) : n); i++) dw_printf(buf, cap, len, "%s%lld", i ? sep : "", (long long)v[i]);
}

void describe_window(const ir_graph *g, const ir_node *n, char *buf, size_t cap)
{
    size_t len = 0;
    if (!cap) return;
    buf[0] = 0;
    window_params scratch;
    const window_params *p;
    if (window_params_of(g, n, &scratch, &p) != SMELT_OK) return;
    bool conv = n->op == OP_Conv || n->op == OP_ConvTranspose;
    if (!conv && p->n_kernel < 0) return; /* no window to describe */
    ir_shape ws = conv && n->n_in > 1 ? ir_tensor_logical_shape(&g->tensors[n->in[1]]) : (ir_shape){0};
    const ir_shape *w = conv && n->n_in > 1 ? &ws : NULL;
    if (p->n_kernel > 0) {
        for (int i = 0; i < p->n_kernel; i++) dw_printf(buf, cap, &len, "%s%lld", i ? "x" : ": ", (long long)p->kernel[i]);
    } else if (w && w->rank > 2) {
        for (int i = 2; i < w->rank; i++) dw_printf(buf, cap, &len, "%s%lld", i > 2 ? "x" : ": ", (long long)w->dim[i]);
    }
    if (len == 0) dw_printf(buf, cap, &len, ":");
    if (p->n_strides > 0) dw_ints(buf, cap, &len, " stride ", p->strides, p->n_strides, "x");
    else dw_printf(buf, cap, &len, " stride 1");
    if (p->n_pads > 0) dw_ints(buf, cap, &len, " pad ", p->pads, p->n_pads, ",");
    if (p->n_dilations > 0 && (p->dilations[0] != 1 || p->n_dilations > 1)) {
        bool ones = true;
        for (int i = 0; i < p->n_dilations; i++) ones &= p->dilations[i] == 1;
        if (!ones) dw_ints(buf, cap, &len, " dilation ", p->dilations, p->n_dilations, "x");
    }
    if (p->group != 1) dw_printf(buf, cap, &len, " group %lld", (long long)p->group);
    const ir_shape *x = &g->tensors[n->in[0]].shape, *y = &g->tensors[n->out[0]].shape;
    if (conv && x->rank > 1 && y->rank > 1)
        dw_printf(buf, cap, &len, ", %lld to %lld channels", (long long)x->dim[1], (long long)y->dim[1]);
}

/* A list attribute given for each of `want` values (spatial dims, or twice that for pads). */
static smelt_status list_count(const ir_node *n, const char *name, int cnt, int want)
{
    if (cnt >= 0 && cnt != want)
        return ir_node_fail(n, SMELT_ERR_MODEL, "attribute %s has %d values, expected %d", name, cnt, want);
    return SMELT_OK;
}

/* Strides, dilations and pads of params p checked against ns spatial dims, into w. */
static smelt_status window_lists(const ir_node *n, const window_params *p, int ns, window_geom *w, int64_t *pads)
{
    TRY(list_count(n, "strides", p->n_strides, ns));
    TRY(list_count(n, "dilations", p->n_dilations, ns));
    TRY(list_count(n, "pads", p->n_pads, 2 * ns));
    for (int i = 0; i < ns; i++) {
        w->stride[i] = p->strides[i];
        w->dilation[i] = p->dilations[i];
        pads[i] = p->n_pads < 0 ? 0 : p->pads[i];
        pads[ns + i] = p->n_pads < 0 ? 0 : p->pads[ns + i];
    }
    w->group = p->group;
    return SMELT_OK;
}

/* The dilated window (k - 1) * d + 1 of spatial dim i, within the size limit. */
static smelt_status dilated_window(const ir_node *n, int64_t k, int64_t d, int i, int64_t *out)
{
    if (k < 1 || k > SMELT_MAX_ELEMS || !size_mul(k - 1, d, out) || *out >= SMELT_MAX_ELEMS)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "kernel %lld dilated by %lld in spatial dim %d exceeds 2^40 elements",
                            (long long)k, (long long)d, i);
    ++*out;
    return SMELT_OK;
}

smelt_status window_geom_get(const ir_graph *g, const ir_node *n, window_geom *w)
{
    const ir_tensor *x = ir_in(g, n, 0);
    char s1[160], s2[160];
    if (!x) return ir_node_fail(n, SMELT_ERR_MODEL, "missing required input 0 (X)");
    int r = x->shape.rank;
    if (r < 3 || r - 2 > WINDOW_MAX_SPATIAL)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "input X %s must have rank 3..%d ([N, C, spatial...])",
                            infer_shp(&x->shape, s1), WINDOW_MAX_SPATIAL + 2);
    window_params scratch;
    const window_params *p;
    TRY(window_params_of(g, n, &scratch, &p));
    memset(w, 0, sizeof *w);
    int ns = w->nsp = r - 2;
    for (int i = 0; i < ns; i++) w->in[i] = x->shape.dim[i + 2];
    bool is_conv = n->op == OP_Conv;
    int64_t ks[WINDOW_MAX_SPATIAL];
    const int64_t *kv = p->kernel;
    int kn = p->n_kernel;
    if (is_conv) {
        const ir_tensor *wt = ir_in(g, n, 1);
        if (!wt) return ir_node_fail(n, SMELT_ERR_MODEL, "missing required input 1 (W)");
        ir_shape ws = ir_tensor_logical_shape(wt); /* a weight packed for conv_gemm: its [M, C, k...] */
        if (ws.rank != r)
            return ir_node_fail(n, SMELT_ERR_SHAPE, "weight W %s must have the rank of X %s",
                                infer_shp(&ws, s1), infer_shp(&x->shape, s2));
        for (int i = 0; i < ns; i++) ks[i] = ws.dim[i + 2];
        if (kn >= 0) {
            bool ok = kn == ns;
            for (int i = 0; ok && i < ns; i++) ok = infer_dim_eq(kv[i], ks[i]);
            if (!ok) {
                ir_shape kshape = {.rank = kn > IR_MAX_RANK ? IR_MAX_RANK : kn};
                for (int i = 0; i < kshape.rank; i++) kshape.dim[i] = kv[i];
                return ir_node_fail(n, SMELT_ERR_SHAPE, "kernel_shape %s does not match weight shape %s",
                                    infer_shp(&kshape, s1), infer_shp(&ws, s2));
            }
        }
    } else {
        if (kn < 0) return ir_node_fail(n, SMELT_ERR_MODEL, "attribute kernel_shape is required");
        if (kn != ns)
            return ir_node_fail(n, SMELT_ERR_SHAPE, "kernel_shape has %d values but X %s has %d spatial dims", kn,
                                infer_shp(&x->shape, s1), ns);
        for (int i = 0; i < ns; i++) ks[i] = kv[i];
    }
    for (int i = 0; i < ns; i++) {
        if (ks[i] < 1) return ir_node_fail(n, SMELT_ERR_SHAPE, "kernel size %lld in spatial dim %d must be >= 1", (long long)ks[i], i);
        w->kernel[i] = ks[i];
    }
    int64_t pads[2 * WINDOW_MAX_SPATIAL];
    TRY(window_lists(n, p, ns, w, pads));
    if (!is_conv) w->group = 1;
    bool ceil_mode = p->ceil_mode;
    window_pad mode = p->auto_pad;
    for (int i = 0; i < ns; i++) {
        int64_t in = w->in[i], s = w->stride[i], dk = 0;
        TRY(dilated_window(n, w->kernel[i], w->dilation[i], i, &dk));
        if (in < 0) {
            w->out[i] = -1;
            continue;
        }
        if (mode == PAD_NOTSET) {
            w->pad_lo[i] = pads[i];
            w->pad_hi[i] = pads[ns + i];
            int64_t span = in + w->pad_lo[i] + w->pad_hi[i] - dk;
            if (span < 0)
                return ir_node_fail(n, SMELT_ERR_SHAPE, "window %lld (dilated) is larger than padded input %lld in spatial dim %d",
                                    (long long)dk, (long long)(in + w->pad_lo[i] + w->pad_hi[i]), i);
            if (ceil_mode) {
                w->out[i] = (span + s - 1) / s + 1;
                if ((w->out[i] - 1) * s >= in + w->pad_lo[i]) w->out[i]--;
            } else {
                w->out[i] = span / s + 1;
            }
        } else if (mode == PAD_VALID) {
            if (in < dk)
                return ir_node_fail(n, SMELT_ERR_SHAPE, "window %lld is larger than input %lld in spatial dim %d (auto_pad VALID)",
                                    (long long)dk, (long long)in, i);
            w->out[i] = (in - dk) / s + 1;
        } else {
            w->out[i] = (in + s - 1) / s;
            int64_t total = (w->out[i] - 1) * s + dk - in;
            if (total < 0) total = 0;
            w->pad_lo[i] = mode == PAD_SAME_UPPER ? total / 2 : total - total / 2;
            w->pad_hi[i] = total - w->pad_lo[i];
        }
    }
    return SMELT_OK;
}

ir_shape window_out_shape(const ir_shape *x, int64_t channels, const window_geom *w)
{
    ir_shape s = {.rank = w->nsp + 2, .dim = {x->dim[0], channels}};
    for (int i = 0; i < w->nsp; i++) s.dim[i + 2] = w->out[i];
    return s;
}

/* X and W present, of a dtype in `types`, and W (and the optional bias) of X's dtype. */
static smelt_status conv_operands(const ir_graph *g, const ir_node *n, unsigned types)
{
    TRY(infer_need_input(g, n, 0, "X"));
    TRY(infer_need_input(g, n, 1, "W"));
    const ir_tensor *x = ir_in(g, n, 0), *b = ir_in(g, n, 2);
    TRY(infer_need_dtype(n, x, "input", types));
    TRY(infer_need_same_dtype(n, x, ir_in(g, n, 1)));
    if (b) TRY(infer_need_same_dtype(n, x, b));
    return SMELT_OK;
}

smelt_status infer_Conv(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(conv_operands(g, n, DT_FLOAT | DT(I32)) /* int32: ConvInteger, QLinearConv (onnx/quantized.c) */);
    const ir_tensor *x = ir_in(g, n, 0), *wt = ir_in(g, n, 1), *b = ir_in(g, n, 2);
    ir_shape ws = ir_tensor_logical_shape(wt);
    window_geom w;
    TRY(window_geom_get(g, n, &w));
    char s1[160], s2[160];
    int64_t group = w.group;
    int64_t c = x->shape.dim[1], m = ws.dim[0];
    if (c >= 0 && c % group)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "group %lld does not divide the %lld input channels", (long long)group, (long long)c);
    if (m % group)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "group %lld does not divide the %lld output channels of W %s",
                            (long long)group, (long long)m, infer_shp(&ws, s1));
    if (c >= 0 && ws.dim[1] * group != c)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "X %s has %lld channels but W %s with group %lld expects %lld",
                            infer_shp(&x->shape, s1), (long long)c, infer_shp(&ws, s2), (long long)group,
                            (long long)(ws.dim[1] * group));
    if (b && (b->shape.rank != 1 || b->shape.dim[0] != m))
        return ir_node_fail(n, SMELT_ERR_SHAPE, "bias B %s must have shape [%lld]", infer_shp(&b->shape, s1), (long long)m);
    /* an integer conv's shift and the k-quads' weight sums (ir.h, IR_ATTR_INT_AMAX) */
    const ir_tensor *shift = ir_in(g, n, 3), *sums = ir_in(g, n, 4);
    if ((shift || sums) && (!ir_attr_find(n, IR_ATTR_INT_AMAX) || !shift || x->dtype != SMELT_F32))
        return ir_node_fail(n, SMELT_ERR_MODEL, "Conv takes at most 3 inputs");
    if (shift && (shift->dtype != SMELT_F32 || ir_shape_numel(&shift->shape) != 1))
        return ir_node_fail(n, SMELT_ERR_SHAPE, "an integer conv's shift must be one float32");
    if (sums && (sums->dtype != SMELT_F32 || sums->shape.rank != 1 || sums->shape.dim[0] < m || (sums->shape.dim[0] - m) % 3))
        return ir_node_fail(n, SMELT_ERR_SHAPE, "an integer conv's weight sums must have shape [%lld + 3R]", (long long)m);
    ir_shape out = window_out_shape(&x->shape, m, &w);
    infer_put_out(g, n, 0, x->dtype, &out);
    return SMELT_OK;
}

smelt_status convtranspose_geom_get(const ir_graph *g, const ir_node *n, window_geom *w)
{
    const ir_tensor *x = ir_in(g, n, 0), *wt = ir_in(g, n, 1);
    char s1[160], s2[160];
    int r = x->shape.rank;
    if (r < 3 || r - 2 > WINDOW_MAX_SPATIAL)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "input X %s must have rank 3..%d ([N, C, spatial...])",
                            infer_shp(&x->shape, s1), WINDOW_MAX_SPATIAL + 2);
    if (wt->shape.rank != r)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "weight W %s must have the rank of X %s", infer_shp(&wt->shape, s1),
                            infer_shp(&x->shape, s2));
    window_params scratch;
    const window_params *p;
    TRY(window_params_of(g, n, &scratch, &p));
    memset(w, 0, sizeof *w);
    int ns = w->nsp = r - 2;
    for (int i = 0; i < ns; i++) {
        w->in[i] = x->shape.dim[i + 2];
        w->kernel[i] = wt->shape.dim[i + 2];
    }
    int kn = p->n_kernel;
    if (kn >= 0) {
        bool ok = kn == ns;
        for (int i = 0; ok && i < ns; i++) ok = p->kernel[i] == w->kernel[i];
        if (!ok) return ir_node_fail(n, SMELT_ERR_SHAPE, "kernel_shape does not match weight shape %s", infer_shp(&wt->shape, s1));
    }
    int64_t pads[2 * WINDOW_MAX_SPATIAL], oshape[WINDOW_MAX_SPATIAL];
    const int64_t *opad = p->output_padding;
    TRY(window_lists(n, p, ns, w, pads));
    TRY(list_count(n, "output_padding", p->n_output_padding, ns));
    int osn = p->n_output_shape;
    if (osn >= 0) {
        /* output_shape may list only the spatial dims, or all of them */
        if (osn != ns && osn != r)
            return ir_node_fail(n, SMELT_ERR_MODEL, "attribute output_shape has %d values, expected %d", osn, ns);
        for (int i = 0; i < ns; i++) oshape[i] = p->output_shape[osn - ns + i];
    }
    bool same = p->auto_pad == PAD_SAME_UPPER || p->auto_pad == PAD_SAME_LOWER;
    for (int i = 0; i < ns; i++) {
        int64_t dk = 0, full;
        TRY(dilated_window(n, w->kernel[i], w->dilation[i], i, &dk));
        if (!size_mul(w->stride[i], w->in[i] - 1, &full) || full > SMELT_MAX_ELEMS)
            return ir_node_fail(n, SMELT_ERR_SHAPE, "stride %lld times input %lld in spatial dim %d exceeds 2^40 elements",
                                (long long)w->stride[i], (long long)w->in[i], i);
        full += opad[i] + dk;
        if (osn >= 0 || same) {
            int64_t target = oshape[i];
            if (osn < 0 && !size_mul(w->in[i], w->stride[i], &target)) target = -1;
            if (target < 1 || target > SMELT_MAX_ELEMS)
                return ir_node_fail(n, SMELT_ERR_SHAPE, "output size %lld of spatial dim %d must be in 1..2^40",
                                    (long long)target, i);
            /* may be negative: the output then extends past the full result */
            int64_t total = full - target, half = total >= 0 ? total / 2 : -((-total + 1) / 2);
            bool upper = p->auto_pad == PAD_SAME_UPPER;
            w->pad_lo[i] = upper ? half : total - half;
            w->pad_hi[i] = total - w->pad_lo[i];
            w->out[i] = target;
        } else {
            if (p->auto_pad != PAD_VALID) {
                w->pad_lo[i] = pads[i];
                w->pad_hi[i] = pads[ns + i];
            }
            w->out[i] = full - w->pad_lo[i] - w->pad_hi[i];
            if (w->out[i] < 1) return ir_node_fail(n, SMELT_ERR_SHAPE, "pads leave no output in spatial dim %d", i);
        }
    }
    return SMELT_OK;
}

smelt_status infer_ConvTranspose(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(conv_operands(g, n, DT_FLOAT));
    const ir_tensor *x = ir_in(g, n, 0), *wt = ir_in(g, n, 1), *b = ir_in(g, n, 2);
    window_geom w;
    TRY(convtranspose_geom_get(g, n, &w));
    char s1[160], s2[160];
    int64_t group = w.group;
    int64_t c = x->shape.dim[1], m = wt->shape.dim[1] * group;
    if (!infer_dim_eq(wt->shape.dim[0], c) || c % group)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "X %s has %lld channels but W %s has %lld input channels (group %lld)",
                            infer_shp(&x->shape, s1), (long long)c, infer_shp(&wt->shape, s2), (long long)wt->shape.dim[0], (long long)group);
    if (b && (b->shape.rank != 1 || b->shape.dim[0] != m))
        return ir_node_fail(n, SMELT_ERR_SHAPE, "bias B %s must have shape [%lld]", infer_shp(&b->shape, s1), (long long)m);
    ir_shape out = window_out_shape(&x->shape, m, &w);
    infer_put_out(g, n, 0, x->dtype, &out);
    return SMELT_OK;
}
