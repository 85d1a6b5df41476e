/*
 * slice_pad.c — the ops that cut a tensor into pieces, join pieces or move its
 * borders: Concat, Split, Slice, Pad and CenterCropPad: shape rules, index
 * maps and the inserts of Concat and Pad (their attributes are parsed with the
 * rest of the layout family's, ops/layout.c).
 *
 * requires: a node whose shape rule succeeded.
 * guarantees: every index computed into an input lies inside that input for
 *             every output index: Concat reads each input at an index clamped
 *             into its range, padded borders read a clamped index and select
 *             the fill value.
 */
#include <stdint.h>
#include <string.h>

#include "ir/ir.h"
#include "lower/lower.h"
#include "ops/layout.h"
#include "ops/shape.h"

static const ir_shape *in_shape(const lower_ctx *c, int i) { return &ir_in(c->g, c->n, i)->shape; }
static const ir_shape *out_shape(const lower_ctx *c, int o) { return &c->g->tensors[c->n->out[o]].shape; }
static smelt_dtype out_type(const lower_ctx *c, int o) { return c->g->tensors[c->n->out[o]].dtype; }

static int norm_axis(int64_t a, int rank) { return (int)(a < 0 ? a + rank : a); }

/* Each input covers a range of the axis; every input is read at an index
 * clamped into its own range and the one whose range holds the coordinate is
 * selected. */
kir_val elem_Concat(lower_ctx *c, int out, const kir_val *idx)
{
    kir_kernel *k = c->k;
    layout_params scratch;
    const layout_params *p = layout_elem_params(c, &scratch);
    if (!p) return 0;
    int r = out_shape(c, out)->rank;
    int axis = norm_axis(p->axis, r);
    int64_t off[64];
    int64_t o = 0;
    int last = -1;
    for (int i = 0; i < c->n->n_in; i++) {
        off[i] = o;
        o += in_shape(c, i)->dim[axis];
        if (in_shape(c, i)->dim[axis] > 0) last = i;
    }
    kir_val result = 0;
    kir_val in_idx[IR_MAX_RANK];
    for (int i = last; i >= 0; i--) {
        int64_t d = in_shape(c, i)->dim[axis];
        if (d == 0) continue;
        for (int j = 0; j < r; j++) in_idx[j] = idx[j];
        kir_val p = kir_binary(k, KIR_SUB, idx[axis], kir_idx(k, off[i]));
        in_idx[axis] = i == last && off[i] == 0 ? p : lower_clamp(k, p, d);
        kir_val v = lower_load(c, i, in_idx);
        result = !result ? v : kir_select(k, kir_binary(k, KIR_LT, idx[axis], kir_idx(k, off[i] + d)), v, result);
    }
    return result;
}

kir_val elem_Split(lower_ctx *c, int out, const kir_val *idx)
{
    layout_params scratch;
    const layout_params *p = layout_elem_params(c, &scratch);
    if (!p) return 0;
    int r = in_shape(c, 0)->rank;
    int axis = norm_axis(p->axis, r);
    int64_t off = 0;
    for (int o = 0; o < out; o++)
        if (c->n->out[o] >= 0) off += out_shape(c, o)->dim[axis];
        else return 0;
    kir_val in_idx[IR_MAX_RANK];
    for (int j = 0; j < r; j++) in_idx[j] = idx[j];
    in_idx[axis] = kir_add(c->k, idx[axis], kir_idx(c->k, off));
    return lower_load(c, 0, in_idx);
}

kir_val elem_Slice(lower_ctx *c, int out, const kir_val *idx)
{
    (void)out;
    int64_t start[IR_MAX_RANK], step[IR_MAX_RANK];
    ir_shape s;
    if (slice_resolve(c->g, c->n, start, step, &s)) return 0;
    kir_val in_idx[IR_MAX_RANK];
    for (int j = 0; j < s.rank; j++)
        in_idx[j] = kir_add(c->k, kir_mul(c->k, idx[j], kir_idx(c->k, step[j])), kir_idx(c->k, start[j]));
    return lower_load(c, 0, in_idx);
}

/* v mod m, in [0, m) for any sign of v. */
static kir_val pos_mod(kir_kernel *k, kir_val v, int64_t m)
{
    kir_val mm = kir_idx(k, m);
    return kir_binary(k, KIR_MOD, kir_add(k, kir_binary(k, KIR_MOD, v, mm), mm), mm);
}

kir_val elem_Pad(lower_ctx *c, int out, const kir_val *idx)
{
    kir_kernel *k = c->k;
    int64_t begin[IR_MAX_RANK];
    int mode;
    ir_shape os;
    if (pad_resolve(c->g, c->n, begin, &mode, &os)) return 0;
    const ir_shape *xs = in_shape(c, 0);
    smelt_dtype t = out_type(c, out);
    kir_val fill = 0;
    if (mode == 0) {
        const ir_tensor *v = ir_in(c->g, c->n, 2);
        if (v) {
            kir_val zeros[IR_MAX_RANK];
            for (int j = 0; j < v->shape.rank; j++) zeros[j] = kir_idx(k, 0);
            fill = lower_load(c, 2, zeros);
        } else {
            layout_params scratch;
            const layout_params *p = layout_elem_params(c, &scratch);
            if (!p) return 0;
            fill = kir_const_f(k, t, p->value);
        }
        if (ir_shape_numel(xs) == 0) return fill;
    }
    kir_val inside = 0, in_idx[IR_MAX_RANK];
    for (int j = 0; j < xs->rank; j++) {
        int64_t d = xs->dim[j];
        kir_val p = kir_binary(k, KIR_SUB, idx[j], kir_idx(k, begin[j]));
        bool grows = begin[j] > 0 || os.dim[j] - begin[j] > d;
        if (!grows) {
            in_idx[j] = p;
            continue;
        }
        switch (mode) {
        case 0: {
            kir_val ok = kir_binary(k, KIR_AND, kir_binary(k, KIR_GE, p, kir_idx(k, 0)),
                                    kir_binary(k, KIR_LT, p, kir_idx(k, d)));
            inside = inside ? kir_binary(k, KIR_AND, inside, ok) : ok;
            in_idx[j] = lower_clamp(k, p, d);
            break;
        }
        case 1: /* reflect: period 2(d-1), mirrored without repeating the edge */
            if (d == 1) {
                in_idx[j] = kir_idx(k, 0);
            } else {
                kir_val m = pos_mod(k, p, 2 * (d - 1));
                kir_val back = kir_binary(k, KIR_SUB, kir_idx(k, 2 * (d - 1)), m);
                in_idx[j] = kir_select(k, kir_binary(k, KIR_LT, m, kir_idx(k, d)), m, back);
            }
            break;
        case 2: in_idx[j] = lower_clamp(k, p, d); break;
        default: in_idx[j] = pos_mod(k, p, d); break;
        }
    }
    kir_val v = lower_load(c, 0, in_idx);
    return inside ? kir_select(k, inside, v, fill) : v;
}

bool insert_Concat(const ir_graph *g, const ir_node *n, int input, int64_t *offset)
{
    const ir_tensor *x = ir_in(g, n, input);
    layout_params scratch;
    const layout_params *p;
    if (!x || layout_params_of(g, n, &scratch, &p) != SMELT_OK) return false;
    int r = x->shape.rank, axis = norm_axis(p->axis, r);
    for (int d = 0; d < r; d++) offset[d] = 0;
    for (int i = 0; i < input; i++)
        if (ir_in(g, n, i)) offset[axis] += ir_in(g, n, i)->shape.dim[axis];
    return true;
}

bool insert_Pad(const ir_graph *g, const ir_node *n, int input, int64_t *offset)
{
    int mode;
    ir_shape os;
    if (input != 0 || pad_resolve(g, n, offset, &mode, &os) != SMELT_OK || mode != 0) return false;
    const ir_shape *xs = &ir_in(g, n, 0)->shape;
    for (int d = 0; d < xs->rank; d++)
        if (offset[d] < 0 || offset[d] + xs->dim[d] > os.dim[d]) return false; /* a crop, not an insert */
    return true;
}

smelt_status infer_Concat(ir_graph *g, int node)
{
    char b1[160], b2[160];
    const ir_node *n = &g->nodes[node];
    TRY(infer_check_dtypes(g, n));
    TRY(infer_same_dtype(g, n, 0, n->n_in - 1));
    const ir_tensor *x = ir_in(g, n, 0);
    if (!x) return ir_node_fail(n, SMELT_ERR_MODEL, "input 0 is required");
    layout_params scratch;
    const layout_params *p;
    TRY(layout_params_of(g, n, &scratch, &p));
    int r = x->shape.rank, axis;
    TRY(infer_norm_axis(n, p->axis, r, "axis", &axis));
    ir_shape s = x->shape;
    s.dim[axis] = 0;
    for (int i = 0; i < n->n_in; i++) {
        const ir_tensor *t = ir_in(g, n, i);
        if (!t) return ir_node_fail(n, SMELT_ERR_MODEL, "input %d is missing", i);
        bool ok = t->shape.rank == r;
        for (int d = 0; ok && d < r; d++) ok = d == axis || t->shape.dim[d] == x->shape.dim[d];
        if (!ok)
            return ir_node_fail(n, SMELT_ERR_SHAPE, "input '%s' of shape %s does not match %s outside axis %d", t->name,
                                infer_shp(&t->shape, b1), infer_shp(&x->shape, b2), axis);
        if (!size_add(s.dim[axis], t->shape.dim[axis], &s.dim[axis]))
            return ir_node_fail(n, SMELT_ERR_SHAPE, "the sizes along axis %d overflow", axis);
    }
    return infer_set_out(g, n, 0, x->dtype, &s);
}

smelt_status infer_Split(ir_graph *g, int node)
{
    char b[160];
    const ir_node *n = &g->nodes[node];
    TRY(infer_check_dtypes(g, n));
    const ir_tensor *x = ir_in(g, n, 0);
    layout_params scratch;
    const layout_params *p;
    TRY(layout_params_of(g, n, &scratch, &p));
    int r = x->shape.rank, axis;
    TRY(infer_norm_axis(n, p->axis, r, "axis", &axis));
    int64_t dim = x->shape.dim[axis];
    smelt_status st;
    int64_t sizes[MAX_LIST];
    int cnt = infer_read_list(g, n, p->list[LIST_SPLIT], p->n_list[LIST_SPLIT], 1, "split", sizes, MAX_LIST, &st);
    if (cnt == -2) return st;
    if (cnt >= 0) {
        if (cnt != n->n_out)
            return ir_node_fail(n, SMELT_ERR_SHAPE, "split has %d sizes for %d outputs", cnt, n->n_out);
        int64_t sum = 0;
        for (int i = 0; i < cnt; i++) {
            if (sizes[i] < 0) return ir_node_fail(n, SMELT_ERR_SHAPE, "split size %lld is negative", (long long)sizes[i]);
            if (!size_add(sum, sizes[i], &sum) || sum > dim)
                return ir_node_fail(n, SMELT_ERR_SHAPE, "split sizes sum past axis %d's size %lld", axis, (long long)dim);
        }
        if (sum != dim)
            return ir_node_fail(n, SMELT_ERR_SHAPE, "split sizes sum to %lld, but axis %d of %s has size %lld",
                                (long long)sum, axis, infer_shp(&x->shape, b), (long long)dim);
    } else {
        int64_t parts = p->num_outputs;
        if (parts != n->n_out)
            return ir_node_fail(n, SMELT_ERR_SHAPE, "num_outputs is %lld, but the node has %d outputs", (long long)parts,
                                n->n_out);
        if (!p->has_num_outputs && dim % parts != 0)
            return ir_node_fail(n, SMELT_ERR_SHAPE, "axis %d of %s (size %lld) does not split evenly into %lld parts",
                                axis, infer_shp(&x->shape, b), (long long)dim, (long long)parts);
        /* Opset 18: chunks of ceil(dim / parts), the last one smaller. */
        int64_t chunk = (dim + parts - 1) / parts, left = dim;
        for (int i = 0; i < n->n_out; i++) {
            sizes[i] = left < chunk ? left : chunk;
            left -= sizes[i];
        }
    }
    for (int i = 0; i < n->n_out; i++) {
        ir_shape s = x->shape;
        s.dim[axis] = sizes[i];
        TRY(infer_set_out(g, n, i, x->dtype, &s));
    }
    return SMELT_OK;
}

smelt_status slice_resolve(const ir_graph *g, const ir_node *n, int64_t *start, int64_t *step, ir_shape *out)
{
    const ir_tensor *x = ir_in(g, n, 0);
    int r = x->shape.rank;
    smelt_status st;
    int64_t starts[MAX_LIST], ends[MAX_LIST], axes[MAX_LIST], steps[MAX_LIST];
    layout_params scratch;
    const layout_params *p;
    TRY(layout_params_of(g, n, &scratch, &p));
    bool old = p->lists_are_attrs;
    int ns = infer_read_list(g, n, p->list[LIST_STARTS], old ? p->n_list[LIST_STARTS] : -1, old ? -1 : 1, "starts",
                             starts, MAX_LIST, &st);
    if (ns == -2) return st;
    int ne = infer_read_list(g, n, p->list[LIST_ENDS], old ? p->n_list[LIST_ENDS] : -1, old ? -1 : 2, "ends", ends,
                             MAX_LIST, &st);
    if (ne == -2) return st;
    int na = infer_read_list(g, n, p->list[LIST_AXES], old ? p->n_list[LIST_AXES] : -1, old ? -1 : 3, "axes", axes,
                             MAX_LIST, &st);
    if (na == -2) return st;
    int nst = old ? -1 : infer_read_list(g, n, NULL, -1, 4, "steps", steps, MAX_LIST, &st);
    if (nst == -2) return st;
    if (ns < 0 || ne < 0) return ir_node_fail(n, SMELT_ERR_MODEL, "starts and ends are required");
    if (ns != ne || (na >= 0 && na != ns) || (nst >= 0 && nst != ns))
        return ir_node_fail(n, SMELT_ERR_SHAPE, "starts, ends, axes and steps must have the same length (%d, %d, %d, %d)",
                            ns, ne, na, nst);
    *out = x->shape;
    for (int d = 0; d < r; d++) {
        start[d] = 0;
        step[d] = 1;
    }
    bool seen[IR_MAX_RANK] = {false};
    for (int i = 0; i < ns; i++) {
        int a = i;
        if (na >= 0) TRY(infer_norm_axis(n, axes[i], r, "axis", &a));
        else if (i >= r) return ir_node_fail(n, SMELT_ERR_SHAPE, "%d starts for an input of rank %d", ns, r);
        if (seen[a]) return ir_node_fail(n, SMELT_ERR_SHAPE, "axis %d is sliced twice", a);
        seen[a] = true;
        int64_t d = x->shape.dim[a], s = starts[i], e = ends[i], k = nst >= 0 ? steps[i] : 1;
        if (k == 0) return ir_node_fail(n, SMELT_ERR_SHAPE, "step of axis %d is 0", a);
        /* A step of at least the dim takes one element: bound it so that no arithmetic overflows. */
        if (k > SMELT_MAX_ELEMS) k = SMELT_MAX_ELEMS;
        if (k < -SMELT_MAX_ELEMS) k = -SMELT_MAX_ELEMS;
        if (s < 0) s += d;
        if (e < 0) e += d;
        int64_t len;
        if (k > 0) {
            s = s < 0 ? 0 : s > d ? d : s;
            e = e < 0 ? 0 : e > d ? d : e;
            len = e > s ? (e - s + k - 1) / k : 0;
        } else {
            s = s < 0 ? 0 : s > d - 1 ? d - 1 : s;
            e = e < -1 ? -1 : e > d - 1 ? d - 1 : e;
            len = s > e ? (s - e + (-k) - 1) / (-k) : 0;
        }
        start[a] = s;
        step[a] = k;
        out->dim[a] = len;
    }
    return SMELT_OK;
}

smelt_status infer_Slice(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_check_dtypes(g, n));
    int64_t start[IR_MAX_RANK], step[IR_MAX_RANK];
    ir_shape s;
    TRY(slice_resolve(g, n, start, step, &s));
    return infer_set_out(g, n, 0, ir_in(g, n, 0)->dtype, &s);
}

smelt_status pad_resolve(const ir_graph *g, const ir_node *n, int64_t *begin, int *mode, ir_shape *out)
{
    char b[160];
    const ir_tensor *x = ir_in(g, n, 0);
    int r = x->shape.rank;
    layout_params scratch;
    const layout_params *p;
    TRY(layout_params_of(g, n, &scratch, &p));
    *mode = (int)p->mode;
    smelt_status st;
    int64_t pads[2 * MAX_LIST], axes[MAX_LIST];
    bool old = p->lists_are_attrs;
    int np = infer_read_list(g, n, p->list[LIST_PADS], old ? p->n_list[LIST_PADS] : -1, old ? -1 : 1, "pads", pads,
                             2 * MAX_LIST, &st);
    if (np == -2) return st;
    if (np < 0) return ir_node_fail(n, SMELT_ERR_MODEL, "pads are required");
    int na = old ? -1 : infer_read_list(g, n, NULL, -1, 3, "axes", axes, MAX_LIST, &st);
    if (na == -2) return st;
    if (na < 0) {
        na = r;
        for (int i = 0; i < r; i++) axes[i] = i;
    }
    if (np != 2 * na) return ir_node_fail(n, SMELT_ERR_SHAPE, "%d pads for %d axes (need 2 per axis)", np, na);
    int64_t end[IR_MAX_RANK] = {0};
    for (int i = 0; i < r; i++) begin[i] = 0;
    for (int i = 0; i < na; i++) {
        int a;
        TRY(infer_norm_axis(n, axes[i], r, "axis", &a));
        begin[a] = pads[i];
        end[a] = pads[na + i];
    }
    *out = x->shape;
    for (int a = 0; a < r; a++) {
        int64_t d = x->shape.dim[a];
        if (begin[a] < -SMELT_MAX_ELEMS || begin[a] > SMELT_MAX_ELEMS || end[a] < -SMELT_MAX_ELEMS || end[a] > SMELT_MAX_ELEMS)
            return ir_node_fail(n, SMELT_ERR_SHAPE, "pads %lld,%lld of axis %d exceed the size limit of 2^40 elements",
                                (long long)begin[a], (long long)end[a], a);
        out->dim[a] = d + begin[a] + end[a];
        if (out->dim[a] < 0)
            return ir_node_fail(n, SMELT_ERR_SHAPE, "pads %lld,%lld crop axis %d of %s below size 0", (long long)begin[a],
                                (long long)end[a], a, infer_shp(&x->shape, b));
        bool pads_out = begin[a] > 0 || end[a] > 0;
        if (*mode != 0 && pads_out && d == 0)
            return ir_node_fail(n, SMELT_ERR_SHAPE, "%s padding of axis %d needs a non-empty axis", pad_mode_names[*mode], a);
    }
    return SMELT_OK;
}

smelt_status infer_Pad(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_check_dtypes(g, n));
    const ir_tensor *x = ir_in(g, n, 0), *v = ir_in(g, n, 2);
    if (v && v->dtype != x->dtype)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "constant_value '%s' (%s) must have the input's dtype %s", v->name,
                            infer_dtype_str(v->dtype), infer_dtype_str(x->dtype));
    if (v && ir_tensor_numel(v) != 1)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "constant_value '%s' must be a scalar", v->name);
    int64_t begin[IR_MAX_RANK];
    int mode;
    ir_shape s;
    TRY(pad_resolve(g, n, begin, &mode, &s));
    return infer_set_out(g, n, 0, x->dtype, &s);
}

/* CenterCropPad's target size per axis of the input (the input's own size for
 * axes not listed). */
static smelt_status ccp_target(const ir_graph *g, const ir_node *n, ir_shape *out)
{
    const ir_tensor *x = ir_in(g, n, 0);
    int r = x->shape.rank;
    int64_t sz[IR_MAX_RANK];
    smelt_status st;
    int cnt = infer_read_int_input(g, n, 1, "shape", sz, IR_MAX_RANK, &st);
    if (cnt < 0) return st ? st : ir_node_fail(n, SMELT_ERR_MODEL, "missing input 'shape'");
    layout_params scratch;
    const layout_params *p;
    TRY(layout_params_of(g, n, &scratch, &p));
    const int64_t *axes = p->axes;
    int na = p->n_axes;
    *out = x->shape;
    if (na < 0 && cnt != r)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "shape has %d values for an input of rank %d", cnt, r);
    if (na >= 0 && cnt != na)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "shape has %d values for %d axes", cnt, na);
    for (int i = 0; i < cnt; i++) {
        int a = i;
        if (na >= 0) TRY(infer_norm_axis(n, axes[i], r, "axis", &a));
        if (sz[i] < 0) return ir_node_fail(n, SMELT_ERR_SHAPE, "shape value %lld must be >= 0", (long long)sz[i]);
        out->dim[a] = sz[i];
    }
    return SMELT_OK;
}

smelt_status infer_CenterCropPad(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_need_input(g, n, 0, "input"));
    TRY(infer_need_input(g, n, 1, "shape"));
    TRY(infer_check_dtypes(g, n));
    ir_shape out;
    TRY(ccp_target(g, n, &out));
    return infer_set_out(g, n, 0, ir_in(g, n, 0)->dtype, &out);
}

static kir_val bin(kir_kernel *K, kir_op op, kir_val a, kir_val b) { return kir_binary(K, op, a, b); }

/* Crop takes the centred window (the odd element dropped at the end); pad
 * centres the input the same way and fills zeros. */
kir_val elem_CenterCropPad(lower_ctx *c, int out, const kir_val *idx)
{
    kir_kernel *K = c->k;
    const ir_shape *xs = in_shape(c, 0), *os = out_shape(c, out);
    smelt_dtype t = out_type(c, out);
    kir_val inside = 0, ii[IR_MAX_RANK];
    for (int d = 0; d < xs->rank; d++) {
        int64_t in = xs->dim[d], o = os->dim[d];
        if (o <= in) {
            ii[d] = kir_add(K, idx[d], kir_idx(K, (in - o) / 2));
            continue;
        }
        kir_val p = bin(K, KIR_SUB, idx[d], kir_idx(K, (o - in) / 2));
        kir_val ok = bin(K, KIR_AND, bin(K, KIR_GE, p, kir_idx(K, 0)), bin(K, KIR_LT, p, kir_idx(K, in)));
        inside = inside ? bin(K, KIR_AND, inside, ok) : ok;
        ii[d] = lower_clamp(K, p, in);
    }
    if (inside && ir_shape_numel(xs) == 0) return kir_const_f(K, t, 0);
    kir_val v = lower_load(c, 0, ii);
    return inside ? kir_select(K, inside, v, kir_const_f(K, t, 0)) : v;
}
