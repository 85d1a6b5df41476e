/*
 * resize.c — Resize and Upsample as an index map: each output
 * element is a weighted sum of input elements around its source coordinate
 * (1 tap per axis for nearest, 2 for linear, 4 for cubic), so Resize fuses
 * like any injective op.
 *
 * requires: infer_Resize succeeded (modes valid, geometry consistent,
 *           antialias rejected, at most 4 interpolated axes).
 * guarantees: taps outside the input read the clamped edge element (the
 *             reference's edge padding); coordinates are computed in float64
 *             as the reference does, weights cast to the data's dtype.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lower/lower.h"
#include "ops/resize.h"
#include "ops/shape.h"

static kir_val bin(kir_kernel *K, kir_op op, kir_val a, kir_val b) { return kir_binary(K, op, a, b); }
static kir_val f64(kir_kernel *K, double v) { return kir_const_f(K, SMELT_F64, v); }

#define RESIZE_MAX_TAPS 16

typedef struct taps {
    int n;
    kir_val at[RESIZE_MAX_TAPS]; /* clamped input indices */
    kir_val w[RESIZE_MAX_TAPS];  /* weights (f64), 0 when n == 1 */
} taps;

/* Antialiased filter value at distance x (already scaled). */
static kir_val aa_kernel(kir_kernel *K, int kind, kir_val x, double A)
{
    x = kir_unary(K, KIR_ABS, x);
    if (kind == 1) return bin(K, KIR_MAX, bin(K, KIR_SUB, f64(K, 1), x), f64(K, 0));
    kir_val x2 = bin(K, KIR_MUL, x, x), x3 = bin(K, KIR_MUL, x2, x);
    kir_val near = bin(K, KIR_ADD, bin(K, KIR_SUB, bin(K, KIR_MUL, f64(K, A + 2), x3), bin(K, KIR_MUL, f64(K, A + 3), x2)),
                       f64(K, 1));
    kir_val far = bin(K, KIR_SUB,
                      bin(K, KIR_ADD, bin(K, KIR_SUB, bin(K, KIR_MUL, f64(K, A), x3), bin(K, KIR_MUL, f64(K, 5 * A), x2)),
                          bin(K, KIR_MUL, f64(K, 8 * A), x)),
                      f64(K, 4 * A));
    kir_val v = kir_select(K, bin(K, KIR_LT, x, f64(K, 2)), far, f64(K, 0));
    return kir_select(K, bin(K, KIR_LE, x, f64(K, 1)), near, v);
}

int resize_antialias_taps(int kind, double scale)
{
    double s = scale < 1 ? scale : 1;
    int64_t start = (int64_t)floor((kind == 2 ? -2.0 : -1.0) / s) + 1;
    return (int)(2 - 2 * start);
}

/* Antialiased taps: n = resize_antialias_taps() neighbours around x, each
 * weighted by the filter stretched by 1/scale, normalized to sum 1. */
static void aa_taps(kir_kernel *K, taps *t, int kind, kir_val xo, double scale, int64_t in, double A)
{
    double s = scale < 1 ? scale : 1;
    t->n = resize_antialias_taps(kind, scale);
    kir_val base = kir_cast(K, SMELT_I64, kir_unary(K, KIR_FLOOR, xo)), sum = 0;
    for (int m = 0; m < t->n; m++) {
        kir_val p = kir_add(K, base, kir_idx(K, 1 - t->n / 2 + m));
        kir_val dist = bin(K, KIR_MUL, bin(K, KIR_SUB, kir_cast(K, SMELT_F64, p), xo), f64(K, s));
        t->w[m] = aa_kernel(K, kind, dist, A);
        t->at[m] = lower_clamp(K, p, in);
        sum = sum ? bin(K, KIR_ADD, sum, t->w[m]) : t->w[m];
    }
    for (int m = 0; m < t->n; m++) t->w[m] = bin(K, KIR_DIV, t->w[m], sum);
}

/* Source coordinate of output index y along one axis; *extra is set to a
 * "falls outside" predicate for tf_crop_and_resize. */
static kir_val source_coord(kir_kernel *K, const char *ct, kir_val y, int64_t in, int64_t out, double scale, double lo,
                            double hi, kir_val *extra)
{
    double outw = scale * (double)in;
    kir_val yf = kir_cast(K, SMELT_F64, y);
    kir_val half = bin(K, KIR_SUB, bin(K, KIR_DIV, bin(K, KIR_ADD, yf, f64(K, 0.5)), f64(K, scale)), f64(K, 0.5));
    if (!strcmp(ct, "align_corners"))
        return outw == 1 ? f64(K, 0) : bin(K, KIR_DIV, bin(K, KIR_MUL, yf, f64(K, (double)(in - 1))), f64(K, outw - 1));
    if (!strcmp(ct, "asymmetric")) return bin(K, KIR_DIV, yf, f64(K, scale));
    if (!strcmp(ct, "tf_half_pixel_for_nn")) return bin(K, KIR_DIV, bin(K, KIR_ADD, yf, f64(K, 0.5)), f64(K, scale));
    if (!strcmp(ct, "pytorch_half_pixel")) return outw == 1 ? f64(K, -0.5) : half;
    if (!strcmp(ct, "half_pixel_symmetric")) {
        double adj = (double)out / outw, offset = (double)in / 2 * (1 - adj);
        return bin(K, KIR_ADD, f64(K, offset), half);
    }
    if (!strcmp(ct, "tf_crop_and_resize")) {
        kir_val x = outw == 1 ? f64(K, (hi - lo) * (double)(in - 1) / 2)
                              : bin(K, KIR_DIV, bin(K, KIR_MUL, yf, f64(K, (hi - lo) * (double)(in - 1))), f64(K, outw - 1));
        x = bin(K, KIR_ADD, x, f64(K, lo * (double)(in - 1)));
        *extra = bin(K, KIR_OR, bin(K, KIR_LT, x, f64(K, 0)), bin(K, KIR_GT, x, f64(K, (double)(in - 1))));
        return x;
    }
    return half;
}

static void cubic_weights(kir_kernel *K, kir_val t, double A, kir_val *w)
{
    /* distances 1 + t, t, 1 - t, 2 - t from the four taps */
    kir_val d[4] = {bin(K, KIR_ADD, t, f64(K, 1)), t, bin(K, KIR_SUB, f64(K, 1), t), bin(K, KIR_SUB, f64(K, 2), t)};
    for (int i = 0; i < 4; i++) {
        kir_val x = d[i], x2 = bin(K, KIR_MUL, x, x), x3 = bin(K, KIR_MUL, x2, x);
        if (i == 1 || i == 2) /* |x| <= 1: (A+2)x^3 - (A+3)x^2 + 1 */
            w[i] = bin(K, KIR_ADD, bin(K, KIR_SUB, bin(K, KIR_MUL, f64(K, A + 2), x3), bin(K, KIR_MUL, f64(K, A + 3), x2)),
                       f64(K, 1));
        else /* 1 < |x| < 2: A x^3 - 5A x^2 + 8A x - 4A */
            w[i] = bin(K, KIR_SUB,
                       bin(K, KIR_ADD, bin(K, KIR_SUB, bin(K, KIR_MUL, f64(K, A), x3), bin(K, KIR_MUL, f64(K, 5 * A), x2)),
                           bin(K, KIR_MUL, f64(K, 8 * A), x)),
                       f64(K, 4 * A));
    }
}

static smelt_status resize_params_of(const ir_graph *g, const ir_node *n, resize_params *scratch,
                                     const resize_params **p);

kir_val elem_Resize(lower_ctx *c, int out, const kir_val *idx)
{
    (void)out;
    kir_kernel *K = c->k;
    resize_geom rg;
    resize_params scratch;
    const resize_params *p;
    /* shape inference accepted both */
    if (resize_geom_get(c->g, c->n, &rg) || resize_params_of(c->g, c->n, &scratch, &p)) return 0;
    const ir_tensor *x = ir_in(c->g, c->n, 0);
    bool legacy = c->n->op == OP_Upsample || c->g->opset < 11;
    int kind = p->kind;
    const char *ct = p->coord, *nm = p->nearest;
    double A = p->cubic_coeff_a;
    bool exclude = p->exclude_outside, antialias = p->antialias;
    bool tf_crop = !strcmp(ct, "tf_crop_and_resize");
    taps tp[IR_MAX_RANK];
    kir_val outside = 0;
    for (int d = 0; d < rg.rank; d++) {
        int64_t in = x->shape.dim[d];
        taps *t = &tp[d];
        bool identity = rg.out[d] == in && rg.scale[d] == 1.0 && (!tf_crop || (rg.roi_lo[d] == 0 && rg.roi_hi[d] == 1));
        if (identity || in == 1) {
            t->n = 1;
            t->at[0] = identity ? idx[d] : kir_idx(K, 0);
            t->w[0] = 0;
            if (identity || !tf_crop) continue;
        }
        /* nearest, floored, asymmetric, by a whole factor s (YOLO's and
         * U-Net's 2x upsampling): the source index is y / s in integers, the
         * same as floor(y / (double)s) for every y, without the double
         * arithmetic per element */
        int64_t s = rg.out[d] / in;
        const char *floor_mode = !legacy ? nm : rg.scale[d] < 1 ? "ceil" : "floor";
        if (kind == 0 && !antialias && !tf_crop && s >= 1 && rg.out[d] == s * in && rg.scale[d] == (double)s &&
            !strcmp(ct, "asymmetric") && !strcmp(floor_mode, "floor")) {
            t->n = 1;
            t->at[0] = bin(K, KIR_DIV, idx[d], kir_idx(K, s));
            t->w[0] = 0;
            continue;
        }
        kir_val extra = 0;
        kir_val xo = source_coord(K, ct, idx[d], in, rg.out[d], rg.scale[d], rg.roi_lo[d], rg.roi_hi[d], &extra);
        if (extra) outside = outside ? bin(K, KIR_OR, outside, extra) : extra;
        if (in == 1) continue;
        kir_val fl = kir_unary(K, KIR_FLOOR, xo), r = bin(K, KIR_SUB, xo, fl), i0 = kir_cast(K, SMELT_I64, fl);
        if (antialias && kind != 0) {
            aa_taps(K, t, kind, xo, rg.scale[d], in, A);
        } else if (kind == 0) {
            /* Resize 10 and Upsample name no rounding; onnxruntime (the reference users
             * compare with) floors when upsampling an axis and takes the ceiling when
             * downsampling it. */
            const char *nm_d = !legacy ? nm : rg.scale[d] < 1 ? "ceil" : "floor";
            kir_val i;
            if (!strcmp(nm_d, "floor")) i = i0;
            else if (!strcmp(nm_d, "ceil")) i = kir_cast(K, SMELT_I64, kir_unary(K, KIR_CEIL, xo));
            else {
                kir_val up = bin(K, !strcmp(nm_d, "round_prefer_ceil") ? KIR_GE : KIR_GT, r, f64(K, 0.5));
                i = kir_add(K, i0, kir_cast(K, SMELT_I64, up));
            }
            t->n = 1;
            t->at[0] = lower_clamp(K, i, in);
            t->w[0] = 0;
        } else if (kind == 1) {
            t->n = 2;
            t->at[0] = lower_clamp(K, i0, in);
            t->at[1] = lower_clamp(K, kir_add(K, i0, kir_idx(K, 1)), in);
            t->w[0] = bin(K, KIR_SUB, f64(K, 1), r);
            t->w[1] = r;
        } else {
            t->n = 4;
            cubic_weights(K, r, A, t->w);
            kir_val sum = 0;
            for (int m = 0; m < 4; m++) {
                kir_val p = kir_add(K, i0, kir_idx(K, m - 1));
                t->at[m] = lower_clamp(K, p, in);
                if (exclude) {
                    kir_val ok = bin(K, KIR_AND, bin(K, KIR_GE, p, kir_idx(K, 0)), bin(K, KIR_LT, p, kir_idx(K, in)));
                    t->w[m] = kir_select(K, ok, t->w[m], f64(K, 0));
                    sum = sum ? bin(K, KIR_ADD, sum, t->w[m]) : t->w[m];
                }
            }
            if (exclude) {
                sum = kir_select(K, bin(K, KIR_EQ, sum, f64(K, 0)), f64(K, 1), sum);
                for (int m = 0; m < 4; m++) t->w[m] = bin(K, KIR_DIV, t->w[m], sum);
            }
        }
    }
    /* Sum over every combination of taps (an odometer over the axes). */
    int pos[IR_MAX_RANK] = {0};
    kir_val acc = 0, ii[IR_MAX_RANK];
    for (;;) {
        kir_val w = 0;
        for (int d = 0; d < rg.rank; d++) {
            ii[d] = tp[d].at[pos[d]];
            if (tp[d].w[0]) w = w ? bin(K, KIR_MUL, w, tp[d].w[pos[d]]) : tp[d].w[pos[d]];
        }
        kir_val v = lower_load(c, 0, ii);
        if (w) v = bin(K, KIR_MUL, v, kir_cast(K, x->dtype, w));
        acc = acc ? bin(K, KIR_ADD, acc, v) : v;
        int d = rg.rank - 1;
        while (d >= 0 && ++pos[d] == tp[d].n) pos[d--] = 0;
        if (d < 0) break;
    }
    if (outside) {
        kir_val ev = kir_const_f(K, x->dtype, p->extrapolation_value);
        acc = kir_select(K, outside, ev, acc);
    }
    return acc;
}

/* A present input that holds no elements counts as omitted (Resize's roi...). */
static const ir_tensor *in_nonempty(const ir_graph *g, const ir_node *n, int i)
{
    const ir_tensor *t = ir_in(g, n, i);
    return t && ir_tensor_numel(t) > 0 ? t : NULL;
}

/* ---- Resize / Upsample ---------------------------------------------------- */

/* s's entry in the NULL-ended `set` (smelt's own copy of the spelling), or NULL. */
static const char *str_in(const char *s, const char *const *set)
{
    for (; *set; set++)
        if (!strcmp(s, *set)) return *set;
    return NULL;
}

smelt_status parse_Resize(const ir_graph *g, const ir_node *n, void *params)
{
    static const char *const modes[] = {"nearest", "linear", "cubic", NULL};
    static const char *const coords[] = {"half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel",
                                         "tf_crop_and_resize", "half_pixel_symmetric", "tf_half_pixel_for_nn", NULL};
    static const char *const nearest[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil", NULL};
    static const char *const policies[] = {"stretch", "not_larger", "not_smaller", NULL};
    resize_params *p = params;
    const char *mode = ir_attr_string(n, "mode", "nearest");
    if (n->op == OP_Upsample && !strcmp(mode, "bilinear")) mode = "linear";
    if (!str_in(mode, modes)) return ir_node_fail(n, SMELT_ERR_MODEL, "mode '%.40s' is not nearest, linear or cubic", mode);
    p->kind = !strcmp(mode, "nearest") ? 0 : !strcmp(mode, "cubic") ? 2 : 1;
    const char *ct = ir_attr_string(n, "coordinate_transformation_mode", "half_pixel");
    if (!str_in(ct, coords) || (!strcmp(ct, "tf_half_pixel_for_nn") && g->opset >= 13)) /* Resize 11 only */
        return ir_node_fail(n, SMELT_ERR_MODEL, "coordinate_transformation_mode '%.40s' is unknown at opset %d", ct, g->opset);
    p->coord = n->op == OP_Upsample || g->opset < 11 ? "asymmetric" : str_in(ct, coords);
    const char *nm = ir_attr_string(n, "nearest_mode", "round_prefer_floor");
    if (!(p->nearest = str_in(nm, nearest))) return ir_node_fail(n, SMELT_ERR_MODEL, "nearest_mode '%.40s' is unknown", nm);
    p->cubic_coeff_a = ir_attr_float(n, "cubic_coeff_a", -0.75f);
    p->exclude_outside = ir_attr_int(n, "exclude_outside", 0) != 0;
    p->antialias = ir_attr_int(n, "antialias", 0) != 0;
    p->extrapolation_value = ir_attr_float(n, "extrapolation_value", 0.0f);
    const char *pol = ir_attr_string(n, "keep_aspect_ratio_policy", "stretch"), *known = str_in(pol, policies);
    if (!known)
        return ir_node_fail(n, SMELT_ERR_MODEL, "keep_aspect_ratio_policy '%.40s' is not stretch, not_larger or not_smaller", pol);
    p->keep_aspect = known == policies[0] ? 0 : known == policies[1] ? 1 : 2;
    const int64_t *av;
    p->n_axes = ir_attr_ints(n, "axes", &av);
    if (p->n_axes > IR_MAX_RANK) return ir_node_fail(n, SMELT_ERR_SHAPE, "%d axes for an input of rank at most %d", p->n_axes, IR_MAX_RANK);
    for (int i = 0; i < p->n_axes; i++) p->axes[i] = av[i];
    const float *f;
    p->n_scales = n->op == OP_Upsample ? ir_attr_floats(n, "scales", &f) : -1;
    for (int i = 0; i < p->n_scales && i < IR_MAX_RANK; i++) p->scales[i] = f[i];
    return SMELT_OK;
}

static smelt_status resize_params_of(const ir_graph *g, const ir_node *n, resize_params *scratch, const resize_params **p)
{
    const void *v;
    TRY(ir_node_params_get(g, n, scratch, &v));
    *p = v;
    return SMELT_OK;
}

smelt_status resize_geom_get(const ir_graph *g, const ir_node *n, resize_geom *rg)
{
    const ir_tensor *x = ir_in(g, n, 0), *roi = NULL, *scales = NULL, *sizes = NULL;
    int r = x->shape.rank;
    resize_params scratch;
    const resize_params *p;
    TRY(resize_params_of(g, n, &scratch, &p));
    const double *attr_scales = p->scales;
    int n_attr_scales = -1;
    if (n->op == OP_Upsample) {
        scales = in_nonempty(g, n, 1);
        if (!scales) n_attr_scales = p->n_scales;
    } else if (g->opset < 11) {
        scales = in_nonempty(g, n, 1);
    } else {
        roi = in_nonempty(g, n, 1);
        scales = in_nonempty(g, n, 2);
        sizes = in_nonempty(g, n, 3);
    }
    int axes[IR_MAX_RANK], na = r;
    const int64_t *av = p->axes;
    int cnt = p->n_axes;
    if (cnt > r) return ir_node_fail(n, SMELT_ERR_SHAPE, "%d axes for an input of rank %d", cnt, r);
    if (cnt >= 0) {
        na = cnt;
        for (int i = 0; i < cnt; i++) {
            TRY(infer_norm_axis(n, av[i], r, "axis", &axes[i]));
            for (int j = 0; j < i; j++)
                if (axes[j] == axes[i]) return ir_node_fail(n, SMELT_ERR_MODEL, "axis %d is listed twice", axes[i]);
        }
    } else {
        for (int i = 0; i < r; i++) axes[i] = i;
    }
    rg->rank = r;
    for (int d = 0; d < r; d++) {
        rg->out[d] = x->shape.dim[d];
        rg->scale[d] = 1.0;
        rg->roi_lo[d] = 0.0;
        rg->roi_hi[d] = 1.0;
    }
    if ((scales || n_attr_scales >= 0) == (sizes != NULL))
        return ir_node_fail(n, SMELT_ERR_MODEL, "exactly one of 'scales' and 'sizes' must be given");
    int given = scales ? (int)ir_tensor_numel(scales) : sizes ? (int)ir_tensor_numel(sizes) : n_attr_scales;
    if (given != na) return ir_node_fail(n, SMELT_ERR_SHAPE, "%d scales/sizes for %d axes", given, na);
    if (scales && !infer_is_float(scales->dtype))
        return ir_node_fail(n, SMELT_ERR_MODEL, "scales must be a float tensor");
    if (sizes && sizes->dtype != SMELT_I64) return ir_node_fail(n, SMELT_ERR_MODEL, "sizes must be an int64 tensor");
    for (int i = 0; i < na; i++)
        if (x->shape.dim[axes[i]] <= 0)
            return ir_node_fail(n, SMELT_ERR_SHAPE, "axis %d to resize is empty", axes[i]);
    if (!sizes) {
        for (int i = 0; i < na; i++) {
            double s = scales ? ir_const_double(scales, i) : attr_scales[i];
            if (!(s > 0 && s < 1e9)) return ir_node_fail(n, SMELT_ERR_MODEL, "scale %g must be positive", s);
            rg->scale[axes[i]] = s;
            rg->out[axes[i]] = (int64_t)(s * (double)x->shape.dim[axes[i]]);
        }
    } else {
        bool larger = p->keep_aspect == 1, smaller = p->keep_aspect == 2;
        double pick = larger ? INFINITY : 0;
        for (int i = 0; i < na; i++) {
            int64_t v = ir_const_int(sizes, i);
            if (v < 0 || v > ((int64_t)1 << 40)) return ir_node_fail(n, SMELT_ERR_SHAPE, "size %lld is out of range", (long long)v);
            double s = (double)v / (double)x->shape.dim[axes[i]];
            rg->scale[axes[i]] = s;
            rg->out[axes[i]] = v;
            pick = larger ? fmin(pick, s) : fmax(pick, s);
        }
        if (larger || smaller)
            for (int i = 0; i < na; i++) {
                rg->scale[axes[i]] = pick;
                rg->out[axes[i]] = (int64_t)(pick * (double)x->shape.dim[axes[i]] + 0.5);
            }
    }
    if (roi) {
        if (ir_tensor_numel(roi) != 2 * na || !infer_is_float(roi->dtype))
            return ir_node_fail(n, SMELT_ERR_SHAPE, "roi must hold 2 x %d float values", na);
        for (int i = 0; i < na; i++) {
            rg->roi_lo[axes[i]] = ir_const_double(roi, i);
            rg->roi_hi[axes[i]] = ir_const_double(roi, na + i);
        }
    }
    return SMELT_OK;
}

smelt_status infer_Resize(ir_graph *g, int node)
{
    const ir_node *n = &g->nodes[node];
    TRY(infer_need_input(g, n, 0, "X"));
    const ir_tensor *x = ir_in(g, n, 0);
    TRY(infer_check_dtypes(g, n));
    resize_params scratch;
    const resize_params *p;
    TRY(resize_params_of(g, n, &scratch, &p));
    static const char *const kinds[] = {"nearest", "linear", "cubic"};
    const char *mode = kinds[p->kind];
    if (p->kind != 0) TRY(infer_need_float(n, x));
    if (x->shape.rank > 8) return ir_node_fail(n, SMELT_ERR_SHAPE, "rank %d is too large", x->shape.rank);
    resize_geom rg;
    TRY(resize_geom_get(g, n, &rg));
    int interp = 0;
    for (int d = 0; d < rg.rank; d++)
        if (rg.out[d] != x->shape.dim[d] || rg.scale[d] != 1.0) interp++;
    if (interp > 4 && strcmp(mode, "nearest"))
        return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "%s interpolation over %d axes (at most 4)", mode, interp);
    int64_t loads = 1;
    int kind = !strcmp(mode, "linear") ? 1 : 2;
    if (p->antialias && p->kind != 0)
        for (int d = 0; d < rg.rank; d++) {
            if (rg.out[d] == x->shape.dim[d] && rg.scale[d] == 1.0) continue;
            int taps = resize_antialias_taps(kind, rg.scale[d]);
            if (taps > 16)
                return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "antialiased scale %g on axis %d needs %d taps (at most 16)",
                                    rg.scale[d], d, taps);
            loads *= taps;
        }
    if (loads > 256)
        return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "antialiased resize reads %lld inputs per output (at most 256)",
                            (long long)loads);
    ir_shape out = {.rank = rg.rank};
    for (int d = 0; d < rg.rank; d++) out.dim[d] = rg.out[d];
    return infer_set_out(g, n, 0, x->dtype, &out);
}
