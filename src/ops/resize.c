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
#include <string.h>

#include "lower/lower.h"

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

kir_val elem_Resize(lower_ctx *c, int out, const kir_val *idx)
{
    (void)out;
    kir_kernel *K = c->k;
    resize_geom rg;
    if (resize_geom_get(c->g, c->n, &rg)) return 0;
    const ir_tensor *x = ir_in(c->g, c->n, 0);
    bool legacy = c->n->op == OP_Upsample || c->g->opset < 11;
    const char *mode = ir_attr_string(c->n, "mode", "nearest");
    int kind = !strcmp(mode, "nearest") ? 0 : !strcmp(mode, "cubic") ? 2 : 1;
    const char *ct = legacy ? "asymmetric" : ir_attr_string(c->n, "coordinate_transformation_mode", "half_pixel");
    const char *nm = legacy ? "floor" : ir_attr_string(c->n, "nearest_mode", "round_prefer_floor");
    double A = ir_attr_float(c->n, "cubic_coeff_a", -0.75f);
    bool exclude = ir_attr_int(c->n, "exclude_outside", 0) != 0;
    bool antialias = ir_attr_int(c->n, "antialias", 0) != 0;
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
        kir_val extra = 0;
        kir_val xo = source_coord(K, ct, idx[d], in, rg.out[d], rg.scale[d], rg.roi_lo[d], rg.roi_hi[d], &extra);
        if (extra) outside = outside ? bin(K, KIR_OR, outside, extra) : extra;
        if (in == 1) continue;
        kir_val fl = kir_unary(K, KIR_FLOOR, xo), r = bin(K, KIR_SUB, xo, fl), i0 = kir_cast(K, SMELT_I64, fl);
        if (antialias && kind != 0) {
            aa_taps(K, t, kind, xo, rg.scale[d], in, A);
        } else if (kind == 0) {
            kir_val i;
            if (!strcmp(nm, "floor")) i = i0;
            else if (!strcmp(nm, "ceil")) i = kir_cast(K, SMELT_I64, kir_unary(K, KIR_CEIL, xo));
            else {
                kir_val up = bin(K, !strcmp(nm, "round_prefer_ceil") ? KIR_GE : KIR_GT, r, f64(K, 0.5));
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
        kir_val ev = kir_const_f(K, x->dtype, ir_attr_float(c->n, "extrapolation_value", 0.0f));
        acc = kir_select(K, outside, ev, acc);
    }
    return acc;
}
