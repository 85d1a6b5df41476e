/*
 * layout.c — element functions (index maps) of the injective ops: an
 * output element at a multi-index, read from inputs through lower_load.
 *
 * requires: a node whose shape rule succeeded (output shapes are consistent
 *           with the inputs and the constant value inputs).
 * guarantees: every index computed into an input lies inside that input for
 *             every output index, whatever the run-time data (gathered indices
 *             are clamped, padded borders read a clamped index and select).
 */
#include "ir/ir.h"
#include "lower/lower.h"

static const ir_shape *in_shape(const lower_ctx *c, int i) { return &ir_in(c->g, c->n, i)->shape; }
static const ir_shape *out_shape(const lower_ctx *c, int o) { return &c->g->tensors[c->n->out[o]].shape; }
static smelt_dtype out_type(const lower_ctx *c, int o) { return c->g->tensors[c->n->out[o]].dtype; }

static int norm_axis(int64_t a, int rank) { return (int)(a < 0 ? a + rank : a); }

/* Reshape, Flatten, Squeeze, Unsqueeze: same elements in row-major order. */
kir_val elem_Reshape(lower_ctx *c, int out, const kir_val *idx)
{
    kir_val lin = lower_linear(c->k, out_shape(c, out), idx);
    kir_val in_idx[IR_MAX_RANK];
    lower_unravel(c->k, in_shape(c, 0), lin, in_idx);
    return lower_load(c, 0, in_idx);
}

kir_val elem_Transpose(lower_ctx *c, int out, const kir_val *idx)
{
    (void)out;
    int r = in_shape(c, 0)->rank, perm[IR_MAX_RANK];
    transpose_perm(c->n, r, perm);
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

/* Inference-mode dropout: the identity, and an all-true mask. */
kir_val elem_Dropout(lower_ctx *c, int out, const kir_val *idx)
{
    if (out == 1) return kir_const_i(c->k, SMELT_BOOL, 1);
    return lower_load(c, 0, idx);
}

/* Each input covers a range of the axis; every input is read at an index
 * clamped into its own range and the one whose range holds the coordinate is
 * selected. */
kir_val elem_Concat(lower_ctx *c, int out, const kir_val *idx)
{
    kir_kernel *k = c->k;
    int r = out_shape(c, out)->rank;
    int axis = norm_axis(ir_attr_int(c->n, "axis", 0), r);
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
    int r = in_shape(c, 0)->rank;
    int axis = norm_axis(ir_attr_int(c->n, "axis", 0), r);
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

/* The index is read at run time: negative counts from the end, and anything
 * still out of range is clamped so the load stays inside the data. */
kir_val elem_Gather(lower_ctx *c, int out, const kir_val *idx)
{
    (void)out;
    kir_kernel *k = c->k;
    const ir_shape *xs = in_shape(c, 0), *is = in_shape(c, 1);
    int r = xs->rank, q = is->rank;
    int axis = norm_axis(ir_attr_int(c->n, "axis", 0), r);
    kir_val ind = kir_cast(k, SMELT_I64, lower_load(c, 1, q ? idx + axis : NULL));
    int64_t dim = xs->dim[axis];
    kir_val neg = kir_binary(k, KIR_LT, ind, kir_idx(k, 0));
    ind = kir_select(k, neg, kir_add(k, ind, kir_idx(k, dim)), ind);
    kir_val in_idx[IR_MAX_RANK];
    for (int j = 0; j < axis; j++) in_idx[j] = idx[j];
    in_idx[axis] = lower_clamp(k, ind, dim);
    for (int j = axis + 1; j < r; j++) in_idx[j] = idx[j + q - 1];
    return lower_load(c, 0, in_idx);
}

kir_val elem_GatherElements(lower_ctx *c, int out, const kir_val *idx)
{
    (void)out;
    kir_kernel *k = c->k;
    const ir_shape *xs = in_shape(c, 0);
    int axis = norm_axis(ir_attr_int(c->n, "axis", 0), xs->rank);
    int64_t dim = xs->dim[axis];
    kir_val ind = kir_cast(k, SMELT_I64, lower_load(c, 1, idx));
    ind = kir_select(k, kir_binary(k, KIR_LT, ind, kir_idx(k, 0)), kir_add(k, ind, kir_idx(k, dim)), ind);
    kir_val in_idx[IR_MAX_RANK];
    for (int j = 0; j < xs->rank; j++) in_idx[j] = idx[j];
    in_idx[axis] = lower_clamp(k, ind, dim);
    return lower_load(c, 0, in_idx);
}

/* out[i.., j..] = data[batch.., indices[i.., 0..k), j..]: the leading output
 * dims walk the indices, each gathered coordinate wrapped and clamped. */
kir_val elem_GatherND(lower_ctx *c, int out, const kir_val *idx)
{
    (void)out;
    kir_kernel *k = c->k;
    const ir_shape *xs = in_shape(c, 0), *is = in_shape(c, 1);
    int r = xs->rank, q = is->rank, b = (int)ir_attr_int(c->n, "batch_dims", 0);
    int kk = (int)is->dim[q - 1];
    kir_val ind_idx[IR_MAX_RANK], in_idx[IR_MAX_RANK];
    for (int d = 0; d < q - 1; d++) ind_idx[d] = idx[d];
    for (int d = 0; d < b; d++) in_idx[d] = idx[d];
    for (int j = 0; j < kk; j++) {
        ind_idx[q - 1] = kir_idx(k, j);
        int64_t dim = xs->dim[b + j];
        kir_val v = kir_cast(k, SMELT_I64, lower_load(c, 1, ind_idx));
        v = kir_select(k, kir_binary(k, KIR_LT, v, kir_idx(k, 0)), kir_add(k, v, kir_idx(k, dim)), v);
        in_idx[b + j] = lower_clamp(k, v, dim);
    }
    for (int d = b + kk; d < r; d++) in_idx[d] = idx[q - 1 + d - b - kk];
    return lower_load(c, 0, in_idx);
}

static kir_val idiv(kir_kernel *k, kir_val a, int64_t b) { return kir_binary(k, KIR_DIV, a, kir_idx(k, b)); }
static kir_val imod(kir_kernel *k, kir_val a, int64_t b) { return kir_binary(k, KIR_MOD, a, kir_idx(k, b)); }

/* out[n, c, h, w] = in[n, ch, h / b, w / b] where the channel ch holds the
 * block offset (h % b, w % b) before (DCR) or after (CRD) c. */
kir_val elem_DepthToSpace(lower_ctx *c, int out, const kir_val *idx)
{
    kir_kernel *k = c->k;
    int64_t b = ir_attr_int(c->n, "blocksize", 1), oc = out_shape(c, out)->dim[1];
    kir_val off = kir_add(k, kir_mul(k, imod(k, idx[2], b), kir_idx(k, b)), imod(k, idx[3], b));
    kir_val ch = ir_attr_string(c->n, "mode", "DCR")[0] == 'C'
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
    int64_t b = ir_attr_int(c->n, "blocksize", 1), ic = in_shape(c, 0)->dim[1];
    kir_val blk = idiv(k, idx[1], ic);
    kir_val in_idx[4] = {idx[0], imod(k, idx[1], ic),
                         kir_add(k, kir_mul(k, idx[2], kir_idx(k, b)), idiv(k, blk, b)),
                         kir_add(k, kir_mul(k, idx[3], kir_idx(k, b)), imod(k, blk, b))};
    return lower_load(c, 0, in_idx);
}

kir_val elem_Range(lower_ctx *c, int out, const kir_val *idx)
{
    kir_kernel *k = c->k;
    smelt_dtype t = out_type(c, out);
    const ir_tensor *start = ir_in(c->g, c->n, 0), *delta = ir_in(c->g, c->n, 2);
    kir_val s, d;
    if (kir_is_float(t)) {
        s = kir_const_f(k, t, ir_const_double(start, 0));
        d = kir_const_f(k, t, ir_const_double(delta, 0));
    } else {
        s = kir_const_i(k, t, ir_const_int(start, 0));
        d = kir_const_i(k, t, ir_const_int(delta, 0));
    }
    return kir_add(k, s, kir_mul(k, kir_cast(k, t, idx[0]), d));
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
            fill = kir_const_f(k, t, ir_attr_float(c->n, "value", 0.0f));
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

kir_val elem_ConstantOfShape(lower_ctx *c, int out, const kir_val *idx)
{
    (void)idx;
    smelt_dtype t = out_type(c, out);
    const ir_attr *a = ir_attr_find(c->n, "value");
    if (!a) return kir_const_f(c->k, t, 0.0);
    const ir_tensor *v = &c->g->tensors[a->tensor];
    if (kir_is_float(t)) return kir_const_f(c->k, t, ir_const_double(v, 0));
    return kir_const_i(c->k, t, ir_const_int(v, 0));
}

bool insert_Concat(const ir_graph *g, const ir_node *n, int input, int64_t *offset)
{
    const ir_tensor *x = ir_in(g, n, input);
    if (!x) return false;
    int r = x->shape.rank, axis = norm_axis(ir_attr_int(n, "axis", 0), r);
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
