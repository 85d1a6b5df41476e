/*
 * infer_layout.c — shape rules of the layout ops: reshapes, transpose, expand,
 * concat/split, slice, gather, range, tile and pad.
 *
 * requires: input tensors with dtypes and shapes; the inputs an op's row marks
 *           value_in carry constant data.
 * guarantees: every output gets a dtype and a shape; an input that breaks an
 *             op's rule fails naming the node and the rule.
 */
#include <math.h>
#include <string.h>

#include "ops/shape.h"

smelt_status infer_Reshape(ir_graph *g, int node)
{
    char b1[160], b2[160];
    const ir_node *n = &g->nodes[node];
    TRY(infer_check_dtypes(g, n));
    const ir_tensor *x = ir_in(g, n, 0);
    smelt_status st;
    int64_t want[MAX_LIST];
    int cnt = infer_read_int_input(g, n, 1, "shape", want, MAX_LIST, &st);
    if (cnt < 0) return st ? st : ir_node_fail(n, SMELT_ERR_MODEL, "input 'shape' is required");
    if (cnt > IR_MAX_RANK)
        return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "target rank %d exceeds the maximum %d", cnt, IR_MAX_RANK);
    if (!infer_shape_known(&x->shape))
        return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "shape %s of input '%s' is not known at compile time",
                            infer_shp(&x->shape, b1), x->name);
    bool allowzero = ir_attr_int(n, "allowzero", 0) != 0;
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
        known *= d;
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
    int64_t axis = ir_attr_int(n, "axis", 1);
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
    int cnt = infer_read_ints(g, n, "axes", 1, "axes", axes, MAX_LIST, &st);
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
    int cnt = infer_read_ints(g, n, "axes", 1, "axes", axes, MAX_LIST, &st);
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
int transpose_perm(const ir_node *n, int rank, int *perm)
{
    const int64_t *p;
    int cnt = ir_attr_ints(n, "perm", &p);
    if (cnt < 0) {
        for (int i = 0; i < rank; i++) perm[i] = rank - 1 - i;
        return rank;
    }
    for (int i = 0; i < cnt && i < IR_MAX_RANK; i++) perm[i] = (int)p[i];
    return cnt;
}

smelt_status infer_Transpose(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_check_dtypes(g, n));
    const ir_tensor *x = ir_in(g, n, 0);
    int r = x->shape.rank, perm[IR_MAX_RANK];
    int cnt = transpose_perm(n, r, perm);
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
    smelt_status st;
    int64_t want[MAX_LIST];
    int cnt = infer_read_int_input(g, n, 1, "shape", want, MAX_LIST, &st);
    if (cnt < 0) return st ? st : ir_node_fail(n, SMELT_ERR_MODEL, "input 'shape' is required");
    if (cnt > IR_MAX_RANK)
        return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "target rank %d exceeds the maximum %d", cnt, IR_MAX_RANK);
    ir_shape t = {.rank = cnt}, s;
    for (int i = 0; i < cnt; i++) {
        if (want[i] < 0) return ir_node_fail(n, SMELT_ERR_SHAPE, "invalid target dimension %lld", (long long)want[i]);
        t.dim[i] = want[i];
    }
    if (!ir_shape_broadcast(&x->shape, &t, &s))
        return ir_node_fail(n, SMELT_ERR_SHAPE, "cannot expand %s to %s", infer_shp(&x->shape, b1), infer_shp(&t, b2));
    return infer_set_out(g, n, 0, x->dtype, &s);
}

smelt_status infer_Concat(ir_graph *g, int node)
{
    char b1[160], b2[160];
    const ir_node *n = &g->nodes[node];
    TRY(infer_check_dtypes(g, n));
    TRY(infer_same_dtype(g, n, 0, n->n_in - 1));
    const ir_tensor *x = ir_in(g, n, 0);
    if (!x) return ir_node_fail(n, SMELT_ERR_MODEL, "input 0 is required");
    const ir_attr *aa = ir_attr_find(n, "axis");
    if (!aa) return ir_node_fail(n, SMELT_ERR_MODEL, "attribute 'axis' is required");
    int r = x->shape.rank, axis;
    TRY(infer_norm_axis(n, aa->i, r, "axis", &axis));
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
        s.dim[axis] += t->shape.dim[axis];
    }
    return infer_set_out(g, n, 0, x->dtype, &s);
}

smelt_status infer_Split(ir_graph *g, int node)
{
    char b[160];
    const ir_node *n = &g->nodes[node];
    TRY(infer_check_dtypes(g, n));
    const ir_tensor *x = ir_in(g, n, 0);
    int r = x->shape.rank, axis;
    TRY(infer_norm_axis(n, ir_attr_int(n, "axis", 0), r, "axis", &axis));
    int64_t dim = x->shape.dim[axis];
    smelt_status st;
    int64_t sizes[MAX_LIST];
    int cnt = infer_read_ints(g, n, "split", 1, "split", sizes, MAX_LIST, &st);
    if (cnt == -2) return st;
    if (cnt >= 0) {
        if (cnt != n->n_out)
            return ir_node_fail(n, SMELT_ERR_SHAPE, "split has %d sizes for %d outputs", cnt, n->n_out);
        int64_t sum = 0;
        for (int i = 0; i < cnt; i++) {
            if (sizes[i] < 0) return ir_node_fail(n, SMELT_ERR_SHAPE, "split size %lld is negative", (long long)sizes[i]);
            sum += sizes[i];
        }
        if (sum != dim)
            return ir_node_fail(n, SMELT_ERR_SHAPE, "split sizes sum to %lld, but axis %d of %s has size %lld",
                                (long long)sum, axis, infer_shp(&x->shape, b), (long long)dim);
    } else {
        int64_t parts = ir_attr_int(n, "num_outputs", n->n_out);
        if (parts != n->n_out)
            return ir_node_fail(n, SMELT_ERR_SHAPE, "num_outputs is %lld, but the node has %d outputs", (long long)parts,
                                n->n_out);
        if (!ir_attr_find(n, "num_outputs") && dim % parts != 0)
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
    bool old = ir_attr_find(n, "starts") != NULL;
    int ns = infer_read_ints(g, n, old ? "starts" : NULL, old ? -1 : 1, "starts", starts, MAX_LIST, &st);
    if (ns == -2) return st;
    int ne = infer_read_ints(g, n, old ? "ends" : NULL, old ? -1 : 2, "ends", ends, MAX_LIST, &st);
    if (ne == -2) return st;
    int na = infer_read_ints(g, n, old ? "axes" : NULL, old ? -1 : 3, "axes", axes, MAX_LIST, &st);
    if (na == -2) return st;
    int nst = old ? -1 : infer_read_ints(g, n, NULL, 4, "steps", steps, MAX_LIST, &st);
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

smelt_status infer_Gather(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_check_dtypes(g, n));
    const ir_tensor *x = ir_in(g, n, 0), *ind = ir_in(g, n, 1);
    if (ind->dtype != SMELT_I32 && ind->dtype != SMELT_I64)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "indices '%s' must be int32 or int64, got %s", ind->name,
                            infer_dtype_str(ind->dtype));
    int r = x->shape.rank, q = ind->shape.rank, axis;
    if (r == 0) return ir_node_fail(n, SMELT_ERR_SHAPE, "data must have rank >= 1");
    TRY(infer_norm_axis(n, ir_attr_int(n, "axis", 0), r, "axis", &axis));
    if (r - 1 + q > IR_MAX_RANK)
        return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "output rank %d exceeds the maximum %d", r - 1 + q, IR_MAX_RANK);
    ir_shape s = {.rank = r - 1 + q};
    for (int i = 0; i < axis; i++) s.dim[i] = x->shape.dim[i];
    for (int i = 0; i < q; i++) s.dim[axis + i] = ind->shape.dim[i];
    for (int i = axis + 1; i < r; i++) s.dim[q + i - 1] = x->shape.dim[i];
    if (x->shape.dim[axis] == 0 && ir_shape_numel(&s) > 0)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "cannot gather from axis %d of size 0", axis);
    if (ind->data) {
        int64_t dim = x->shape.dim[axis];
        for (int64_t i = 0; i < ir_tensor_numel(ind); i++) {
            int64_t v = ir_const_int(ind, i);
            if (v < -dim || v >= dim)
                return ir_node_fail(n, SMELT_ERR_SHAPE, "index %lld is out of range for axis %d of size %lld",
                                    (long long)v, axis, (long long)dim);
        }
    }
    return infer_set_out(g, n, 0, x->dtype, &s);
}

smelt_status infer_GatherElements(ir_graph *g, int node)
{
    char b1[160], b2[160];
    const ir_node *n = &g->nodes[node];
    TRY(infer_check_dtypes(g, n));
    const ir_tensor *x = ir_in(g, n, 0), *ind = ir_in(g, n, 1);
    if (ind->dtype != SMELT_I32 && ind->dtype != SMELT_I64)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "indices '%s' must be int32 or int64, got %s", ind->name,
                            infer_dtype_str(ind->dtype));
    int r = x->shape.rank, axis;
    if (r == 0 || ind->shape.rank != r)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "data %s and indices %s must have the same rank >= 1",
                            infer_shp(&x->shape, b1), infer_shp(&ind->shape, b2));
    TRY(infer_norm_axis(n, ir_attr_int(n, "axis", 0), r, "axis", &axis));
    for (int d = 0; d < r; d++)
        if (d != axis && ind->shape.dim[d] > x->shape.dim[d])
            return ir_node_fail(n, SMELT_ERR_SHAPE, "indices %s exceed data %s outside axis %d",
                                infer_shp(&ind->shape, b1), infer_shp(&x->shape, b2), axis);
    if (x->shape.dim[axis] == 0 && ir_tensor_numel(ind) > 0)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "cannot gather from axis %d of size 0", axis);
    return infer_set_out(g, n, 0, x->dtype, &ind->shape);
}

smelt_status infer_GatherND(ir_graph *g, int node)
{
    char b1[160], b2[160];
    const ir_node *n = &g->nodes[node];
    TRY(infer_check_dtypes(g, n));
    const ir_tensor *x = ir_in(g, n, 0), *ind = ir_in(g, n, 1);
    if (ind->dtype != SMELT_I64 && ind->dtype != SMELT_I32)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "indices '%s' must be int32 or int64, got %s", ind->name, infer_dtype_str(ind->dtype));
    int r = x->shape.rank, q = ind->shape.rank;
    int64_t b = ir_attr_int(n, "batch_dims", 0);
    if (q < 1 || r < 1) return ir_node_fail(n, SMELT_ERR_SHAPE, "data and indices must have rank >= 1");
    if (b < 0 || b >= q || b >= r)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "batch_dims %lld must be below the ranks of data (%d) and indices (%d)",
                            (long long)b, r, q);
    int64_t k = ind->shape.dim[q - 1];
    if (k < 1 || k > r - b)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "the last dim of indices %s must be in 1..%lld for data %s",
                            infer_shp(&ind->shape, b1), (long long)(r - b), infer_shp(&x->shape, b2));
    for (int d = 0; d < b; d++)
        if (ind->shape.dim[d] != x->shape.dim[d])
            return ir_node_fail(n, SMELT_ERR_SHAPE, "batch dims of indices %s and data %s differ",
                                infer_shp(&ind->shape, b1), infer_shp(&x->shape, b2));
    ir_shape s = {.rank = (int)(q - 1 + r - b - k)};
    if (s.rank > IR_MAX_RANK)
        return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "output rank %d exceeds the maximum %d", s.rank, IR_MAX_RANK);
    for (int d = 0; d < q - 1; d++) s.dim[d] = ind->shape.dim[d];
    for (int d = (int)(b + k); d < r; d++) s.dim[q - 1 + d - b - k] = x->shape.dim[d];
    for (int d = (int)b; d < b + k; d++)
        if (x->shape.dim[d] == 0 && ir_shape_numel(&s) > 0)
            return ir_node_fail(n, SMELT_ERR_SHAPE, "cannot gather from axis %d of size 0", d);
    return infer_set_out(g, n, 0, x->dtype, &s);
}

smelt_status infer_DepthToSpace(ir_graph *g, int node)
{
    char b[160];
    const ir_node *n = &g->nodes[node];
    TRY(infer_check_dtypes(g, n));
    const ir_tensor *x = ir_in(g, n, 0);
    const ir_attr *ba = ir_attr_find(n, "blocksize");
    if (!ba || ba->type != IR_ATTR_INT || ba->i < 1)
        return ir_node_fail(n, SMELT_ERR_MODEL, "attribute 'blocksize' (>= 1) is required");
    int64_t bs = ba->i;
    if (x->shape.rank != 4)
        return ir_node_fail(n, SMELT_ERR_SHAPE, "input %s must have rank 4 (N,C,H,W)", infer_shp(&x->shape, b));
    ir_shape s = x->shape;
    if (n->op == OP_DepthToSpace) {
        const char *mode = ir_attr_string(n, "mode", "DCR");
        if (strcmp(mode, "DCR") != 0 && strcmp(mode, "CRD") != 0)
            return ir_node_fail(n, SMELT_ERR_MODEL, "mode '%s' is neither DCR nor CRD", mode);
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

smelt_status infer_Range(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_check_dtypes(g, n));
    TRY(infer_same_dtype(g, n, 0, 2));
    smelt_status st = SMELT_OK;
    const char *names[3] = {"start", "limit", "delta"};
    const ir_tensor *t[3];
    for (int i = 0; i < 3; i++) {
        t[i] = infer_value_input(g, n, i, names[i], &st);
        if (st) return st;
        if (!t[i]) return ir_node_fail(n, SMELT_ERR_MODEL, "input '%s' is required", names[i]);
        if (ir_tensor_numel(t[i]) != 1)
            return ir_node_fail(n, SMELT_ERR_SHAPE, "input '%s' (%s) must be a scalar", t[i]->name, names[i]);
    }
    smelt_dtype dt = t[0]->dtype;
    TRY(infer_require_class(n, t[0], dt != SMELT_BOOL, "numeric"));
    int64_t len;
    if (infer_is_float(dt)) {
        double s = ir_const_double(t[0], 0), l = ir_const_double(t[1], 0), d = ir_const_double(t[2], 0);
        if (d == 0 || !isfinite(s) || !isfinite(l) || !isfinite(d))
            return ir_node_fail(n, SMELT_ERR_SHAPE, "range needs finite start/limit and a nonzero delta");
        double c = ceil((l - s) / d);
        if (c > (double)INT32_MAX) return ir_node_fail(n, SMELT_ERR_SHAPE, "range of %g elements is too long", c);
        len = c > 0 ? (int64_t)c : 0;
    } else {
        int64_t s = ir_const_int(t[0], 0), l = ir_const_int(t[1], 0), d = ir_const_int(t[2], 0);
        if (d == 0) return ir_node_fail(n, SMELT_ERR_SHAPE, "range delta is 0");
        double c = ceil(((double)l - (double)s) / (double)d);
        if (c > (double)INT32_MAX) return ir_node_fail(n, SMELT_ERR_SHAPE, "range of %g elements is too long", c);
        len = c > 0 ? (int64_t)c : 0;
    }
    ir_shape sh = {.rank = 1, .dim = {len}};
    return infer_set_out(g, n, 0, dt, &sh);
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
        s.dim[i] *= rep[i];
    }
    return infer_set_out(g, n, 0, x->dtype, &s);
}

static const char *pad_modes[] = {"constant", "reflect", "edge", "wrap"};

smelt_status pad_resolve(const ir_graph *g, const ir_node *n, int64_t *begin, int *mode, ir_shape *out)
{
    char b[160];
    const ir_tensor *x = ir_in(g, n, 0);
    int r = x->shape.rank;
    const char *m = ir_attr_string(n, "mode", "constant");
    *mode = -1;
    for (int i = 0; i < 4; i++)
        if (strcmp(m, pad_modes[i]) == 0) *mode = i;
    if (*mode < 0) return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "pad mode '%s' is not supported", m);
    smelt_status st;
    int64_t pads[2 * MAX_LIST], axes[MAX_LIST];
    bool old = ir_attr_find(n, "pads") != NULL;
    int np = infer_read_ints(g, n, old ? "pads" : NULL, old ? -1 : 1, "pads", pads, 2 * MAX_LIST, &st);
    if (np == -2) return st;
    if (np < 0) return ir_node_fail(n, SMELT_ERR_MODEL, "pads are required");
    int na = old ? -1 : infer_read_ints(g, n, NULL, 3, "axes", axes, MAX_LIST, &st);
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
        out->dim[a] = d + begin[a] + end[a];
        if (out->dim[a] < 0)
            return ir_node_fail(n, SMELT_ERR_SHAPE, "pads %lld,%lld crop axis %d of %s below size 0", (long long)begin[a],
                                (long long)end[a], a, infer_shp(&x->shape, b));
        bool pads_out = begin[a] > 0 || end[a] > 0;
        if (*mode != 0 && pads_out && d == 0)
            return ir_node_fail(n, SMELT_ERR_SHAPE, "%s padding of axis %d needs a non-empty axis", m, a);
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
