/*
 * trilu.c — Trilu's element function: keep the upper (or lower)
 * triangle of the last two dims, above (below) diagonal k, zero the rest.
 *
 * requires: shapes inferred by infer_Trilu (k, if given, a constant).
 * guarantees: an injective index map, so Trilu fuses like any data op.
 */
#include "lower/lower.h"

kir_val elem_Trilu(lower_ctx *c, int out, const kir_val *idx)
{
    (void)out;
    kir_kernel *K = c->k;
    const ir_tensor *x = ir_in(c->g, c->n, 0), *kt = ir_in(c->g, c->n, 1);
    int r = x->shape.rank;
    int64_t k = kt ? ir_const_int(kt, 0) : 0;
    bool upper = ir_attr_int(c->n, "upper", 1) != 0;
    /* upper: keep j - i >= k; lower: keep j - i <= k */
    kir_val diff = kir_binary(K, KIR_SUB, idx[r - 1], idx[r - 2]);
    kir_val keep = kir_binary(K, upper ? KIR_GE : KIR_LE, diff, kir_idx(K, k));
    kir_val zero = kir_is_float(x->dtype) ? kir_const_f(K, x->dtype, 0) : kir_const_i(K, x->dtype, 0);
    return kir_select(K, keep, lower_load(c, 0, idx), zero);
}
