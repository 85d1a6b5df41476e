/*
 * infer_compute.c — shape rules of reductions, contractions, normalizations
 * and pooling (the rows of ir/ops_compute.h).
 *
 * requires: every input's dtype and shape known (value_in inputs folded to
 *           constants); dims may be -1 (symbolic) and then propagate as -1.
 * guarantees: each output's dtype and shape set, or a diagnostic naming the
 *           node, op and violated rule.
 */
#include <stdlib.h>
#include <string.h>

#include "ops/shape.h"

/* ---- contractions ------------------------------------------------------- */

smelt_status infer_MatMul(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    const ir_tensor *a = ir_in(g, n, 0), *b = ir_in(g, n, 1);
    TRY(infer_need_input(g, n, 0, "A"));
    TRY(infer_need_input(g, n, 1, "B"));
    TRY(infer_need_dtype(n, a, "input", DT_ARITH));
    TRY(infer_need_same_dtype(n, a, b));
    char s1[160], s2[160];
    if (a->shape.rank < 1 || b->shape.rank < 1)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "operands must have rank >= 1, got %s and %s",
                            infer_shp(&a->shape, s1), infer_shp(&b->shape, s2));
    ir_shape sa = a->shape, sb = b->shape;
    if (sa.rank == 1) sa = (ir_shape){.rank = 2, .dim = {1, a->shape.dim[0]}};
    if (sb.rank == 1) sb = (ir_shape){.rank = 2, .dim = {b->shape.dim[0], 1}};
    int64_t ka = sa.dim[sa.rank - 1], kb = sb.dim[sb.rank - 2];
    if (!infer_dim_eq(ka, kb))
        return ir_node_fail(n, SMELT_ERR_SHAPE, "inner dimensions differ: A %s has K=%lld, B %s has K=%lld",
                            infer_shp(&a->shape, s1), (long long)ka, infer_shp(&b->shape, s2), (long long)kb);
    ir_shape ba = {.rank = sa.rank - 2}, bb = {.rank = sb.rank - 2}, out;
    memcpy(ba.dim, sa.dim, sizeof(int64_t) * (size_t)ba.rank);
    memcpy(bb.dim, sb.dim, sizeof(int64_t) * (size_t)bb.rank);
    if (!ir_shape_broadcast(&ba, &bb, &out))
        return ir_node_fail(n, SMELT_ERR_SHAPE, "batch dimensions of A %s and B %s do not broadcast",
                            infer_shp(&a->shape, s1), infer_shp(&b->shape, s2));
    if (a->shape.rank > 1) out.dim[out.rank++] = sa.dim[sa.rank - 2];
    if (b->shape.rank > 1) out.dim[out.rank++] = sb.dim[sb.rank - 1];
    if (out.rank > IR_MAX_RANK) return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "result rank exceeds %d", IR_MAX_RANK);
    infer_put_out(g, n, 0, a->dtype, &out);
    return SMELT_OK;
}

smelt_status infer_Gemm(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_need_input(g, n, 0, "A"));
    TRY(infer_need_input(g, n, 1, "B"));
    const ir_tensor *a = ir_in(g, n, 0), *b = ir_in(g, n, 1), *c = ir_in(g, n, 2);
    TRY(infer_need_dtype(n, a, "input", DT_ARITH));
    TRY(infer_need_same_dtype(n, a, b));
    if (c) TRY(infer_need_same_dtype(n, a, c));
    char s1[160], s2[160];
    if (a->shape.rank != 2 || b->shape.rank != 2)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "A and B must be matrices, got %s and %s", infer_shp(&a->shape, s1),
                            infer_shp(&b->shape, s2));
    bool ta = ir_attr_int(n, "transA", 0) != 0, tb = ir_attr_int(n, "transB", 0) != 0;
    int64_t m = a->shape.dim[ta ? 1 : 0], ka = a->shape.dim[ta ? 0 : 1];
    int64_t kb = b->shape.dim[tb ? 1 : 0], nn = b->shape.dim[tb ? 0 : 1];
    if (!infer_dim_eq(ka, kb))
        return ir_node_fail(n, SMELT_ERR_SHAPE, "inner dimensions differ: A %s (transA=%d) has K=%lld, B %s (transB=%d) has K=%lld",
                            infer_shp(&a->shape, s1), ta, (long long)ka, infer_shp(&b->shape, s2), tb, (long long)kb);
    ir_shape out = {.rank = 2, .dim = {m, nn}};
    if (c) {
        ir_shape bc;
        if (c->shape.rank > 2 || !ir_shape_broadcast(&c->shape, &out, &bc) || !ir_shape_eq(&bc, &out))
            return ir_node_fail(n, SMELT_ERR_SHAPE, "C %s does not broadcast to the result shape %s",
                                infer_shp(&c->shape, s1), infer_shp(&out, s2));
    }
    infer_put_out(g, n, 0, a->dtype, &out);
    return SMELT_OK;
}

/* ---- sliding windows ---------------------------------------------------- */

static smelt_status ints_attr(const ir_node *n, const char *name, int want, int64_t def, int64_t *out, int64_t min)
{
    const int64_t *v;
    int cnt = ir_attr_ints(n, name, &v);
    for (int i = 0; i < want; i++) out[i] = def;
    if (cnt < 0) return SMELT_OK;
    if (cnt != want)
        return ir_node_fail(n, SMELT_ERR_MODEL, "attribute %s has %d values, expected %d", name, cnt, want);
    for (int i = 0; i < want; i++) {
        if (v[i] < min)
            return ir_node_fail(n, SMELT_ERR_MODEL, "attribute %s[%d] = %lld must be >= %lld", name, i,
                                (long long)v[i], (long long)min);
        out[i] = v[i];
    }
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
    memset(w, 0, sizeof *w);
    int ns = w->nsp = r - 2;
    for (int i = 0; i < ns; i++) w->in[i] = x->shape.dim[i + 2];
    bool is_conv = n->op == OP_Conv;
    int64_t ks[WINDOW_MAX_SPATIAL];
    const int64_t *kv;
    int kn = ir_attr_ints(n, "kernel_shape", &kv);
    if (is_conv) {
        const ir_tensor *wt = ir_in(g, n, 1);
        if (!wt) return ir_node_fail(n, SMELT_ERR_MODEL, "missing required input 1 (W)");
        if (wt->shape.rank != r)
            return ir_node_fail(n, SMELT_ERR_SHAPE, "weight W %s must have the rank of X %s",
                                infer_shp(&wt->shape, s1), infer_shp(&x->shape, s2));
        for (int i = 0; i < ns; i++) ks[i] = wt->shape.dim[i + 2];
        if (kn >= 0) {
            bool ok = kn == ns;
            for (int i = 0; ok && i < ns; i++) ok = infer_dim_eq(kv[i], ks[i]);
            if (!ok) {
                ir_shape kshape = {.rank = kn > IR_MAX_RANK ? IR_MAX_RANK : kn};
                for (int i = 0; i < kshape.rank; i++) kshape.dim[i] = kv[i];
                return ir_node_fail(n, SMELT_ERR_SHAPE, "kernel_shape %s does not match weight shape %s",
                                    infer_shp(&kshape, s1), infer_shp(&wt->shape, s2));
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
    TRY(ints_attr(n, "strides", ns, 1, w->stride, 1));
    TRY(ints_attr(n, "dilations", ns, 1, w->dilation, 1));
    int64_t pads[2 * WINDOW_MAX_SPATIAL];
    TRY(ints_attr(n, "pads", 2 * ns, 0, pads, 0));
    int64_t ceil_mode = ir_attr_int(n, "ceil_mode", 0);
    const char *ap = ir_attr_string(n, "auto_pad", "NOTSET");
    enum { NOTSET, SAME_UPPER, SAME_LOWER, VALID } mode;
    if (!strcmp(ap, "NOTSET") || !*ap) mode = NOTSET;
    else if (!strcmp(ap, "SAME_UPPER")) mode = SAME_UPPER;
    else if (!strcmp(ap, "SAME_LOWER")) mode = SAME_LOWER;
    else if (!strcmp(ap, "VALID")) mode = VALID;
    else return ir_node_fail(n, SMELT_ERR_MODEL, "auto_pad '%.40s' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID", ap);
    for (int i = 0; i < ns; i++) {
        int64_t in = w->in[i], s = w->stride[i], dk = (w->kernel[i] - 1) * w->dilation[i] + 1;
        if (in < 0) {
            w->out[i] = -1;
            continue;
        }
        if (mode == NOTSET) {
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
        } else if (mode == VALID) {
            if (in < dk)
                return ir_node_fail(n, SMELT_ERR_SHAPE, "window %lld is larger than input %lld in spatial dim %d (auto_pad VALID)",
                                    (long long)dk, (long long)in, i);
            w->out[i] = (in - dk) / s + 1;
        } else {
            w->out[i] = (in + s - 1) / s;
            int64_t total = (w->out[i] - 1) * s + dk - in;
            if (total < 0) total = 0;
            w->pad_lo[i] = mode == SAME_UPPER ? total / 2 : total - total / 2;
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

/* X and W present, float, and W (and the optional bias) of X's dtype. */
static smelt_status conv_operands(const ir_graph *g, const ir_node *n)
{
    TRY(infer_need_input(g, n, 0, "X"));
    TRY(infer_need_input(g, n, 1, "W"));
    const ir_tensor *x = ir_in(g, n, 0), *b = ir_in(g, n, 2);
    TRY(infer_need_dtype(n, x, "input", DT_FLOAT));
    TRY(infer_need_same_dtype(n, x, ir_in(g, n, 1)));
    if (b) TRY(infer_need_same_dtype(n, x, b));
    return SMELT_OK;
}

smelt_status infer_Conv(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(conv_operands(g, n));
    const ir_tensor *x = ir_in(g, n, 0), *wt = ir_in(g, n, 1), *b = ir_in(g, n, 2);
    window_geom w;
    TRY(window_geom_get(g, n, &w));
    char s1[160], s2[160];
    int64_t group = ir_attr_int(n, "group", 1);
    int64_t c = x->shape.dim[1], m = wt->shape.dim[0];
    if (group < 1) return ir_node_fail(n, SMELT_ERR_MODEL, "group %lld must be >= 1", (long long)group);
    if (c >= 0 && c % group)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "group %lld does not divide the %lld input channels", (long long)group, (long long)c);
    if (m % group)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "group %lld does not divide the %lld output channels of W %s",
                            (long long)group, (long long)m, infer_shp(&wt->shape, s1));
    if (c >= 0 && wt->shape.dim[1] * group != c)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "X %s has %lld channels but W %s with group %lld expects %lld",
                            infer_shp(&x->shape, s1), (long long)c, infer_shp(&wt->shape, s2), (long long)group,
                            (long long)(wt->shape.dim[1] * group));
    if (b && (b->shape.rank != 1 || b->shape.dim[0] != m))
        return ir_node_fail(n, SMELT_ERR_SHAPE, "bias B %s must have shape [%lld]", infer_shp(&b->shape, s1), (long long)m);
    ir_shape out = window_out_shape(&x->shape, m, &w);
    infer_put_out(g, n, 0, x->dtype, &out);
    return SMELT_OK;
}

smelt_status infer_Pool(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_need_input(g, n, 0, "X"));
    const ir_tensor *x = ir_in(g, n, 0);
    bool is_max = n->op == OP_MaxPool;
    TRY(infer_need_dtype(n, x, "input", is_max ? DT_FLOAT | DT(I8) | DT(U8) : DT_FLOAT));
    window_geom w;
    TRY(window_geom_get(g, n, &w));
    if (is_max && ir_attr_int(n, "storage_order", 0) && infer_has_out(n, 1) && w.nsp != 2)
        return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "storage_order=1 is defined for 2-D pooling only");
    ir_shape out = window_out_shape(&x->shape, x->shape.dim[1], &w);
    infer_put_out(g, n, 0, x->dtype, &out);
    infer_put_out(g, n, 1, SMELT_I64, &out);
    return SMELT_OK;
}

smelt_status infer_GlobalPool(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_need_input(g, n, 0, "X"));
    const ir_tensor *x = ir_in(g, n, 0);
    TRY(infer_need_dtype(n, x, "input", DT_FLOAT));
    char s1[160];
    if (x->shape.rank < 3)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "input X %s must have rank >= 3 ([N, C, spatial...])", infer_shp(&x->shape, s1));
    ir_shape out = x->shape;
    for (int i = 2; i < out.rank; i++) out.dim[i] = 1;
    infer_put_out(g, n, 0, x->dtype, &out);
    return SMELT_OK;
}

/* ---- normalizations ----------------------------------------------------- */

smelt_status infer_BatchNormalization(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    static const char *const names[] = {"X", "scale", "B", "input_mean", "input_var"};
    for (int i = 0; i < 5; i++) TRY(infer_need_input(g, n, i, names[i]));
    const ir_tensor *x = ir_in(g, n, 0);
    TRY(infer_need_dtype(n, x, "input", DT_FLOAT));
    if (ir_attr_int(n, "training_mode", 0))
        return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "training_mode=1 is not supported (inference only)");
    if (ir_attr_int(n, "spatial", 1) != 1)
        return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "spatial=0 is not supported");
    for (int i = 1; i < n->n_out; i++)
        if (infer_has_out(n, i))
            return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "output %d (running/saved statistics) exists only in training mode, which is not supported", i);
    char s1[160], s2[160];
    if (x->shape.rank < 2)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "input X %s must have rank >= 2 ([N, C, ...])", infer_shp(&x->shape, s1));
    int64_t c = x->shape.dim[1];
    for (int i = 1; i < 5; i++) {
        const ir_tensor *p = ir_in(g, n, i);
        TRY(infer_need_dtype(n, p, names[i], DT_FLOAT));
        if (p->shape.rank != 1 || !infer_dim_eq(p->shape.dim[0], c))
            return ir_node_fail(n, SMELT_ERR_SHAPE, "%s %s must have shape [C] = [%lld] for X %s", names[i],
                                infer_shp(&p->shape, s1), (long long)c, infer_shp(&x->shape, s2));
    }
    infer_put_out(g, n, 0, x->dtype, &x->shape);
    return SMELT_OK;
}

smelt_status infer_LayerNormalization(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_need_input(g, n, 0, "X"));
    TRY(infer_need_input(g, n, 1, "Scale"));
    const ir_tensor *x = ir_in(g, n, 0);
    TRY(infer_need_dtype(n, x, "input", DT_FLOAT));
    int r = x->shape.rank, axis = 0;
    TRY(infer_axis(n, "axis", ir_attr_int(n, "axis", -1), r, &axis));
    int64_t stash = ir_attr_int(n, "stash_type", 1);
    if (stash != 1 && stash != SMELT_F64)
        return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "stash_type %lld is not supported", (long long)stash);
    ir_shape norm = {.rank = r - axis};
    for (int i = axis; i < r; i++) norm.dim[i - axis] = x->shape.dim[i];
    char s1[160], s2[160];
    for (int i = 1; i < 3; i++) {
        const ir_tensor *p = ir_in(g, n, i);
        if (!p) continue;
        TRY(infer_need_same_dtype(n, x, p));
        ir_shape bc;
        if (!ir_shape_broadcast(&p->shape, &norm, &bc) || !ir_shape_eq(&bc, &norm))
            return ir_node_fail(n, SMELT_ERR_SHAPE, "%s %s does not broadcast to the normalized shape %s",
                                i == 1 ? "Scale" : "B", infer_shp(&p->shape, s1), infer_shp(&norm, s2));
    }
    infer_put_out(g, n, 0, x->dtype, &x->shape);
    ir_shape st = x->shape;
    for (int i = axis; i < r; i++) st.dim[i] = 1;
    smelt_dtype sdt = stash == 1 ? SMELT_F32 : SMELT_F64;
    infer_put_out(g, n, 1, sdt, &st);
    infer_put_out(g, n, 2, sdt, &st);
    return SMELT_OK;
}

smelt_status infer_Softmax(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_need_input(g, n, 0, "input"));
    const ir_tensor *x = ir_in(g, n, 0);
    TRY(infer_need_dtype(n, x, "input", DT_FLOAT));
    int axis = 0;
    TRY(infer_axis(n, "axis", ir_attr_int(n, "axis", g->opset >= 13 ? -1 : 1), x->shape.rank, &axis));
    infer_put_out(g, n, 0, x->dtype, &x->shape);
    return SMELT_OK;
}

/* ---- reductions --------------------------------------------------------- */

smelt_status reduce_axes_get(const ir_graph *g, const ir_node *n, uint32_t *mask)
{
    const ir_tensor *x = ir_in(g, n, 0);
    int r = x->shape.rank;
    int axes_input_since = n->op == OP_ReduceSum ? 13 : 18;
    int64_t axes[IR_MAX_RANK * 2];
    int cnt = 0;
    bool noop = false;
    if (g->opset >= axes_input_since) {
        const ir_tensor *a = ir_in(g, n, 1);
        noop = ir_attr_int(n, "noop_with_empty_axes", 0) != 0;
        if (a) {
            if (!a->data)
                return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "axes input '%s' must be a compile-time constant", a->name);
            if (a->dtype != SMELT_I64 && a->dtype != SMELT_I32)
                return ir_node_fail(n, SMELT_ERR_MODEL, "axes input '%s' must be int64", a->name);
            int64_t c = ir_tensor_numel(a);
            if (a->shape.rank > 1 || c > IR_MAX_RANK * 2)
                return ir_node_fail(n, SMELT_ERR_SHAPE, "axes input '%s' must be a 1-D list of at most %d axes", a->name, IR_MAX_RANK);
            for (int64_t i = 0; i < c; i++) axes[cnt++] = ir_const_int(a, i);
        }
    } else {
        if (n->n_in > 1 && n->in[1] >= 0)
            return ir_node_fail(n, SMELT_ERR_MODEL, "axes is an attribute before opset %d, not an input", axes_input_since);
        const int64_t *v;
        int c = ir_attr_ints(n, "axes", &v);
        if (c > IR_MAX_RANK * 2) return ir_node_fail(n, SMELT_ERR_MODEL, "too many axes (%d)", c);
        for (int i = 0; i < c; i++) axes[cnt++] = v[i];
    }
    *mask = 0;
    if (cnt == 0) {
        if (!noop) *mask = r ? (uint32_t)((1u << r) - 1) : 0;
        return SMELT_OK;
    }
    for (int i = 0; i < cnt; i++) {
        int ax = 0;
        TRY(infer_axis(n, "axis", axes[i], r, &ax));
        if (*mask & (1u << ax))
            return ir_node_fail(n, SMELT_ERR_MODEL, "axis %lld is listed twice", (long long)axes[i]);
        *mask |= 1u << ax;
    }
    return SMELT_OK;
}

smelt_status infer_Reduce(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_need_input(g, n, 0, "data"));
    const ir_tensor *x = ir_in(g, n, 0);
    unsigned ok = DT_ARITH;
    if (n->op == OP_ReduceMax || n->op == OP_ReduceMin) ok |= DT(I8) | DT(U8) | DT(BOOL);
    if (n->op == OP_ReduceL2 || n->op == OP_ReduceLogSum || n->op == OP_ReduceLogSumExp) ok = DT_FLOAT;
    TRY(infer_need_dtype(n, x, "input", ok));
    uint32_t mask;
    TRY(reduce_axes_get(g, n, &mask));
    bool keep = ir_attr_int(n, "keepdims", 1) != 0;
    ir_shape out = {.rank = 0};
    for (int i = 0; i < x->shape.rank; i++) {
        if (!(mask & (1u << i))) out.dim[out.rank++] = x->shape.dim[i];
        else if (keep) out.dim[out.rank++] = 1;
    }
    infer_put_out(g, n, 0, x->dtype, &out);
    return SMELT_OK;
}

smelt_status infer_ArgMax(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_need_input(g, n, 0, "data"));
    const ir_tensor *x = ir_in(g, n, 0);
    TRY(infer_need_dtype(n, x, "input", DT_ALL_NUM));
    int axis = 0;
    TRY(infer_axis(n, "axis", ir_attr_int(n, "axis", 0), x->shape.rank, &axis));
    if (x->shape.dim[axis] == 0)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "axis %d has size 0: there is no maximum", axis);
    bool keep = ir_attr_int(n, "keepdims", 1) != 0;
    ir_shape out = {.rank = 0};
    for (int i = 0; i < x->shape.rank; i++) {
        if (i != axis) out.dim[out.rank++] = x->shape.dim[i];
        else if (keep) out.dim[out.rank++] = 1;
    }
    infer_put_out(g, n, 0, SMELT_I64, &out);
    return SMELT_OK;
}

smelt_status infer_InstanceNormalization(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    static const char *const names[] = {"input", "scale", "B"};
    for (int i = 0; i < 3; i++) TRY(infer_need_input(g, n, i, names[i]));
    const ir_tensor *x = ir_in(g, n, 0);
    TRY(infer_need_dtype(n, x, "input", DT_FLOAT));
    char s1[160], s2[160];
    if (x->shape.rank < 3)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "input %s must have rank >= 3 ([N, C, spatial...])", infer_shp(&x->shape, s1));
    for (int i = 1; i < 3; i++) {
        const ir_tensor *p = ir_in(g, n, i);
        TRY(infer_need_same_dtype(n, x, p));
        if (p->shape.rank != 1 || !infer_dim_eq(p->shape.dim[0], x->shape.dim[1]))
            return ir_node_fail(n, SMELT_ERR_SHAPE, "%s %s must have shape [C] for input %s", names[i],
                                infer_shp(&p->shape, s1), infer_shp(&x->shape, s2));
    }
    infer_put_out(g, n, 0, x->dtype, &x->shape);
    return SMELT_OK;
}

smelt_status infer_LpNormalization(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_need_input(g, n, 0, "input"));
    const ir_tensor *x = ir_in(g, n, 0);
    TRY(infer_need_dtype(n, x, "input", DT_FLOAT));
    int axis = 0;
    TRY(infer_axis(n, "axis", ir_attr_int(n, "axis", -1), x->shape.rank, &axis));
    int64_t p = ir_attr_int(n, "p", 2);
    if (p != 1 && p != 2) return ir_node_fail(n, SMELT_ERR_MODEL, "p = %lld must be 1 or 2", (long long)p);
    infer_put_out(g, n, 0, x->dtype, &x->shape);
    return SMELT_OK;
}

/* The constant axis of a CumSum node, normalized. */
static smelt_status cumsum_axis(const ir_graph *g, const ir_node *n, int *axis)
{
    const ir_tensor *x = ir_in(g, n, 0), *a = ir_in(g, n, 1);
    if (!a->data) return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "axis input '%s' must be a compile-time constant", a->name);
    if (ir_tensor_numel(a) != 1 || a->shape.rank > 1)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "axis input '%s' must hold one value", a->name);
    if (a->dtype != SMELT_I64 && a->dtype != SMELT_I32)
        return ir_node_fail(n, SMELT_ERR_MODEL, "axis input '%s' must be int32 or int64", a->name);
    return infer_axis(n, "axis", ir_const_int(a, 0), x->shape.rank, axis);
}

smelt_status infer_CumSum(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_need_input(g, n, 0, "x"));
    TRY(infer_need_input(g, n, 1, "axis"));
    const ir_tensor *x = ir_in(g, n, 0);
    TRY(infer_need_dtype(n, x, "input", DT_ARITH));
    int axis = 0;
    TRY(cumsum_axis(g, n, &axis));
    infer_put_out(g, n, 0, x->dtype, &x->shape);
    return SMELT_OK;
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
    memset(w, 0, sizeof *w);
    int ns = w->nsp = r - 2;
    for (int i = 0; i < ns; i++) {
        w->in[i] = x->shape.dim[i + 2];
        w->kernel[i] = wt->shape.dim[i + 2];
    }
    const int64_t *kv;
    int kn = ir_attr_ints(n, "kernel_shape", &kv);
    if (kn >= 0) {
        bool ok = kn == ns;
        for (int i = 0; ok && i < ns; i++) ok = kv[i] == w->kernel[i];
        if (!ok) return ir_node_fail(n, SMELT_ERR_SHAPE, "kernel_shape does not match weight shape %s", infer_shp(&wt->shape, s1));
    }
    int64_t pads[2 * WINDOW_MAX_SPATIAL], opad[WINDOW_MAX_SPATIAL], oshape[WINDOW_MAX_SPATIAL];
    TRY(ints_attr(n, "strides", ns, 1, w->stride, 1));
    TRY(ints_attr(n, "dilations", ns, 1, w->dilation, 1));
    TRY(ints_attr(n, "pads", 2 * ns, 0, pads, 0));
    TRY(ints_attr(n, "output_padding", ns, 0, opad, 0));
    const int64_t *osv;
    int osn = ir_attr_ints(n, "output_shape", &osv);
    if (osn >= 0) {
        /* output_shape may list only the spatial dims, or all of them */
        if (osn != ns && osn != r)
            return ir_node_fail(n, SMELT_ERR_MODEL, "attribute output_shape has %d values, expected %d", osn, ns);
        for (int i = 0; i < ns; i++) oshape[i] = osv[osn - ns + i];
    }
    const char *ap = ir_attr_string(n, "auto_pad", "NOTSET");
    bool same = !strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER");
    if (!same && strcmp(ap, "NOTSET") && strcmp(ap, "VALID") && *ap)
        return ir_node_fail(n, SMELT_ERR_MODEL, "auto_pad '%.40s' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID", ap);
    for (int i = 0; i < ns; i++) {
        int64_t dk = (w->kernel[i] - 1) * w->dilation[i] + 1;
        int64_t full = w->stride[i] * (w->in[i] - 1) + opad[i] + dk;
        if (osn >= 0 || same) {
            int64_t target = osn >= 0 ? oshape[i] : w->in[i] * w->stride[i];
            /* may be negative: the output then extends past the full result */
            int64_t total = full - target, half = total >= 0 ? total / 2 : -((-total + 1) / 2);
            if (target < 1) return ir_node_fail(n, SMELT_ERR_SHAPE, "output_shape %lld must be >= 1", (long long)target);
            bool upper = !strcmp(ap, "SAME_UPPER");
            w->pad_lo[i] = upper ? half : total - half;
            w->pad_hi[i] = total - w->pad_lo[i];
            w->out[i] = target;
        } else {
            if (strcmp(ap, "VALID")) {
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
    TRY(conv_operands(g, n));
    const ir_tensor *x = ir_in(g, n, 0), *wt = ir_in(g, n, 1), *b = ir_in(g, n, 2);
    window_geom w;
    TRY(convtranspose_geom_get(g, n, &w));
    char s1[160], s2[160];
    int64_t group = ir_attr_int(n, "group", 1);
    if (group < 1) return ir_node_fail(n, SMELT_ERR_MODEL, "group %lld must be >= 1", (long long)group);
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
