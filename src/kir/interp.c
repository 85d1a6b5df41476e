/*
 * interp.c — kir_interpret: run a kernel on the host, one workgroup after another.
 *
 * requires: a kernel that passes kir_verify (checked here).
 * guarantees: the semantics of the generated C (target/emit_c.c): float32 math
 *             in float with the same libm calls, integers wrap to their dtype at
 *             every definition, division by zero gives 0, float → int casts
 *             saturate through int64. Every load and store is bounds-checked.
 *
 * Values live in one flat array of unions indexed by value id; blocks jump
 * through a table of matching markers built once, so executing a statement
 * allocates nothing. Used for constant folding of weights, so it must be quick.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kir/kir.h"

/* The float32 exp, tanh and erf the C emitter puts in its kernels. */
#define SMELT_FN static inline
#include "kir/mathf.inc"

typedef union cell {
    float f;
    double d;
    int64_t i; /* every integer type and bool, sign- or zero-extended */
} cell;

/* How a value's bits are held and operated on. */
typedef enum vclass { VC_F32, VC_F64, VC_INT, VC_U64 } vclass;

static vclass class_of(smelt_dtype t)
{
    return t == SMELT_F32 || kir_is_half(t) ? VC_F32 : t == SMELT_F64 ? VC_F64 : t == SMELT_U64 ? VC_U64 : VC_INT;
}

static bool type_ok(smelt_dtype t)
{
    switch (t) {
    case SMELT_F32: case SMELT_F64: case SMELT_I8: case SMELT_U8: case SMELT_I16: case SMELT_U16:
    case SMELT_I32: case SMELT_U32: case SMELT_I64: case SMELT_U64: case SMELT_BOOL: case SMELT_F16:
    case SMELT_BF16: return true;
    default: return false;
    }
}

static bool is_unsigned(smelt_dtype t)
{
    return t == SMELT_U8 || t == SMELT_U16 || t == SMELT_U32 || t == SMELT_U64 || t == SMELT_BOOL;
}

static int64_t wrap(smelt_dtype t, int64_t x)
{
    switch (t) {
    case SMELT_I8: return (int8_t)x;
    case SMELT_U8: case SMELT_BOOL: return (uint8_t)x;
    case SMELT_I16: return (int16_t)x;
    case SMELT_U16: return (uint16_t)x;
    case SMELT_I32: return (int32_t)x;
    case SMELT_U32: return (uint32_t)x;
    default: return x;
    }
}

/* The helpers of the generated code's prelude (target/emit_c.c), same bodies. */
static inline float minf_(float a, float b) { return a != a ? a : (b != b ? b : (b < a ? b : a)); }
static inline float maxf_(float a, float b) { return a != a ? a : (b != b ? b : (b > a ? b : a)); }
static inline double mind_(double a, double b) { return a != a ? a : (b != b ? b : (b < a ? b : a)); }
static inline double maxd_(double a, double b) { return a != a ? a : (b != b ? b : (b > a ? b : a)); }
static inline int64_t div_i64(int64_t a, int64_t b)
{
    return b == 0 ? 0 : b == -1 ? (int64_t)(0 - (uint64_t)a) : a / b;
}
static inline int64_t mod_i64(int64_t a, int64_t b) { return b == 0 || b == -1 ? 0 : a % b; }
static inline uint64_t div_u64(uint64_t a, uint64_t b) { return b == 0 ? 0 : a / b; }
static inline uint64_t mod_u64(uint64_t a, uint64_t b) { return b == 0 ? 0 : a % b; }
static inline uint64_t pow_u64(uint64_t a, uint64_t b)
{
    uint64_t r = 1;
    for (; b; b >>= 1, a *= a)
        if (b & 1) r *= a;
    return r;
}
static inline int64_t pow_i64(int64_t a, int64_t b)
{
    if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
    return (int64_t)pow_u64((uint64_t)a, (uint64_t)b);
}
static inline uint64_t shl_(uint64_t a, uint64_t b) { return b >= 64 ? 0 : a << b; }
static inline uint64_t shr_u(uint64_t a, uint64_t b) { return b >= 64 ? 0 : a >> b; }
static inline int64_t shr_s(int64_t a, uint64_t b) { return a >> (b >= 64 ? 63 : b); }
static inline int64_t f2i64(double x)
{
    return x != x ? 0 : x >= 9223372036854775808.0 ? INT64_MAX : x < -9223372036854775808.0 ? INT64_MIN : (int64_t)x;
}
static inline uint64_t f2u64(double x)
{
    return x != x ? 0 : x >= 18446744073709551616.0 ? UINT64_MAX : x < 0 ? (uint64_t)f2i64(x) : (uint64_t)x;
}

/* Whether (op, operand type) has a meaning; mirrors what the emitter accepts. */
static bool op_ok(kir_op op, smelt_dtype ta)
{
    bool f = kir_is_float(ta), b = ta == SMELT_BOOL;
    switch (op) {
    case KIR_CONST: case KIR_WG: case KIR_LID: case KIR_LOOPVAR: case KIR_VARGET: case KIR_LOAD: case KIR_CAST:
    case KIR_SELECT: case KIR_ABS: case KIR_FLOOR: case KIR_CEIL: case KIR_ROUND: case KIR_ISNAN:
    case KIR_ISINF: case KIR_MIN: case KIR_MAX: case KIR_EQ: case KIR_NE: case KIR_LT: case KIR_LE:
    case KIR_GT: case KIR_GE:
        return true;
    case KIR_NEG: case KIR_ADD: case KIR_SUB: case KIR_MUL: case KIR_DIV: case KIR_MOD: case KIR_POW:
        return !b;
    case KIR_NOT: case KIR_AND: case KIR_OR: case KIR_XOR: case KIR_SHL: case KIR_SHR:
        return !f && !(b && (op == KIR_SHL || op == KIR_SHR));
    default:
        return f; /* transcendental */
    }
}

static cell eval_f32(kir_op op, float a, float b)
{
    cell r;
    switch (op) {
    case KIR_NEG: r.f = -a; break;
    case KIR_ABS: r.f = fabsf(a); break;
    case KIR_EXP: r.f = smelt_expf(a); break;
    case KIR_LOG: r.f = logf(a); break;
    case KIR_SQRT: r.f = sqrtf(a); break;
    case KIR_SIN: r.f = sinf(a); break;
    case KIR_COS: r.f = cosf(a); break;
    case KIR_TAN: r.f = tanf(a); break;
    case KIR_TANH: r.f = smelt_tanhf(a); break;
    case KIR_ERF: r.f = smelt_erff(a); break;
    case KIR_FLOOR: r.f = floorf(a); break;
    case KIR_CEIL: r.f = ceilf(a); break;
    case KIR_ROUND: r.f = rintf(a); break;
    case KIR_ASIN: r.f = asinf(a); break;
    case KIR_ACOS: r.f = acosf(a); break;
    case KIR_ATAN: r.f = atanf(a); break;
    case KIR_SINH: r.f = sinhf(a); break;
    case KIR_COSH: r.f = coshf(a); break;
    case KIR_ASINH: r.f = asinhf(a); break;
    case KIR_ACOSH: r.f = acoshf(a); break;
    case KIR_ATANH: r.f = atanhf(a); break;
    case KIR_ISNAN: r.i = a != a; break;
    case KIR_ISINF: r.i = fabsf(a) == INFINITY; break;
    case KIR_ADD: r.f = a + b; break;
    case KIR_SUB: r.f = a - b; break;
    case KIR_MUL: r.f = a * b; break;
    case KIR_DIV: r.f = a / b; break;
    case KIR_MOD: r.f = fmodf(a, b); break;
    case KIR_POW: r.f = powf(a, b); break;
    case KIR_MIN: r.f = minf_(a, b); break;
    case KIR_MAX: r.f = maxf_(a, b); break;
    case KIR_EQ: r.i = a == b; break;
    case KIR_NE: r.i = a != b; break;
    case KIR_LT: r.i = a < b; break;
    case KIR_LE: r.i = a <= b; break;
    case KIR_GT: r.i = a > b; break;
    case KIR_GE: r.i = a >= b; break;
    default: r.i = 0; break;
    }
    return r;
}

static cell eval_f64(kir_op op, double a, double b)
{
    cell r;
    switch (op) {
    case KIR_NEG: r.d = -a; break;
    case KIR_ABS: r.d = fabs(a); break;
    case KIR_EXP: r.d = exp(a); break;
    case KIR_LOG: r.d = log(a); break;
    case KIR_SQRT: r.d = sqrt(a); break;
    case KIR_SIN: r.d = sin(a); break;
    case KIR_COS: r.d = cos(a); break;
    case KIR_TAN: r.d = tan(a); break;
    case KIR_TANH: r.d = tanh(a); break;
    case KIR_ERF: r.d = erf(a); break;
    case KIR_FLOOR: r.d = floor(a); break;
    case KIR_CEIL: r.d = ceil(a); break;
    case KIR_ROUND: r.d = rint(a); break;
    case KIR_ASIN: r.d = asin(a); break;
    case KIR_ACOS: r.d = acos(a); break;
    case KIR_ATAN: r.d = atan(a); break;
    case KIR_SINH: r.d = sinh(a); break;
    case KIR_COSH: r.d = cosh(a); break;
    case KIR_ASINH: r.d = asinh(a); break;
    case KIR_ACOSH: r.d = acosh(a); break;
    case KIR_ATANH: r.d = atanh(a); break;
    case KIR_ISNAN: r.i = a != a; break;
    case KIR_ISINF: r.i = fabs(a) == INFINITY; break;
    case KIR_ADD: r.d = a + b; break;
    case KIR_SUB: r.d = a - b; break;
    case KIR_MUL: r.d = a * b; break;
    case KIR_DIV: r.d = a / b; break;
    case KIR_MOD: r.d = fmod(a, b); break;
    case KIR_POW: r.d = pow(a, b); break;
    case KIR_MIN: r.d = mind_(a, b); break;
    case KIR_MAX: r.d = maxd_(a, b); break;
    case KIR_EQ: r.i = a == b; break;
    case KIR_NE: r.i = a != b; break;
    case KIR_LT: r.i = a < b; break;
    case KIR_LE: r.i = a <= b; break;
    case KIR_GT: r.i = a > b; break;
    case KIR_GE: r.i = a >= b; break;
    default: r.i = 0; break;
    }
    return r;
}

/* Integers: `t` is the operand type; the caller wraps results to the value's type. */
static int64_t eval_int(kir_op op, smelt_dtype t, int64_t a, int64_t b)
{
    bool u64 = t == SMELT_U64;
    uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
    switch (op) {
    case KIR_NEG: return (int64_t)(0 - ua);
    case KIR_ABS: return is_unsigned(t) || a >= 0 ? a : (int64_t)(0 - ua);
    case KIR_NOT: return t == SMELT_BOOL ? !a : ~a;
    case KIR_FLOOR: case KIR_CEIL: case KIR_ROUND: return a;
    case KIR_ISNAN: case KIR_ISINF: return 0;
    case KIR_ADD: return (int64_t)(ua + ub);
    case KIR_SUB: return (int64_t)(ua - ub);
    case KIR_MUL: return (int64_t)(ua * ub);
    case KIR_DIV: return u64 ? (int64_t)div_u64(ua, ub) : div_i64(a, b);
    case KIR_MOD: return u64 ? (int64_t)mod_u64(ua, ub) : mod_i64(a, b);
    case KIR_POW: return u64 ? (int64_t)pow_u64(ua, ub) : pow_i64(a, b);
    case KIR_MIN: return (u64 ? ua < ub : a < b) ? a : b;
    case KIR_MAX: return (u64 ? ua > ub : a > b) ? a : b;
    case KIR_AND: return a & b;
    case KIR_OR: return a | b;
    case KIR_XOR: return a ^ b;
    case KIR_SHL: return (int64_t)shl_(ua, ub);
    case KIR_SHR: return is_unsigned(t) ? (int64_t)shr_u(ua, ub) : shr_s(a, ub);
    case KIR_EQ: return a == b;
    case KIR_NE: return a != b;
    case KIR_LT: return u64 ? ua < ub : a < b;
    case KIR_LE: return u64 ? ua <= ub : a <= b;
    case KIR_GT: return u64 ? ua > ub : a > b;
    case KIR_GE: return u64 ? ua >= ub : a >= b;
    default: return 0;
    }
}

static cell eval_cast(smelt_dtype to, smelt_dtype from, cell a)
{
    cell r;
    vclass cf = class_of(from);
    switch (to) {
    case SMELT_F32: case SMELT_F16: case SMELT_BF16:
        r.f = cf == VC_F32 ? a.f : cf == VC_F64 ? (float)a.d : cf == VC_U64 ? (float)(uint64_t)a.i : (float)a.i;
        if (to != SMELT_F32) r.f = smelt_half_to_float(to, smelt_float_to_half(to, r.f));
        break;
    case SMELT_F64:
        r.d = cf == VC_F32 ? (double)a.f : cf == VC_U64 ? (double)(uint64_t)a.i : (double)a.i;
        break;
    case SMELT_BOOL:
        r.i = cf == VC_F32 ? a.f != 0 : cf == VC_F64 ? a.d != 0 : a.i != 0;
        break;
    default:
        if (cf == VC_F32 || cf == VC_F64) {
            double x = cf == VC_F32 ? (double)a.f : a.d;
            r.i = wrap(to, to == SMELT_U64 ? (int64_t)f2u64(x) : f2i64(x));
        } else {
            r.i = wrap(to, a.i);
        }
        break;
    }
    return r;
}

/* The element type buffer b holds in memory (see kir_buffer_elem_bytes). */
static smelt_dtype mem_type(const kir_buffer *b)
{
    return b->workgroup && kir_is_half(b->type) ? SMELT_F32 : b->type;
}

static cell load(smelt_dtype t, const void *p, int64_t i)
{
    cell r;
    switch (t) {
    case SMELT_F32: r.f = ((const float *)p)[i]; break;
    case SMELT_F64: r.d = ((const double *)p)[i]; break;
    case SMELT_F16: case SMELT_BF16: r.f = smelt_half_to_float(t, ((const uint16_t *)p)[i]); break;
    case SMELT_I8: r.i = ((const int8_t *)p)[i]; break;
    case SMELT_U8: case SMELT_BOOL: r.i = ((const uint8_t *)p)[i]; break;
    case SMELT_I16: r.i = ((const int16_t *)p)[i]; break;
    case SMELT_U16: r.i = ((const uint16_t *)p)[i]; break;
    case SMELT_I32: r.i = ((const int32_t *)p)[i]; break;
    case SMELT_U32: r.i = ((const uint32_t *)p)[i]; break;
    default: r.i = ((const int64_t *)p)[i]; break;
    }
    return r;
}

static void store(smelt_dtype t, void *p, int64_t i, cell v)
{
    switch (t) {
    case SMELT_F32: ((float *)p)[i] = v.f; break;
    case SMELT_F64: ((double *)p)[i] = v.d; break;
    case SMELT_F16: case SMELT_BF16: ((uint16_t *)p)[i] = smelt_float_to_half(t, v.f); break;
    case SMELT_I8: ((int8_t *)p)[i] = (int8_t)v.i; break;
    case SMELT_U8: case SMELT_BOOL: ((uint8_t *)p)[i] = (uint8_t)v.i; break;
    case SMELT_I16: ((int16_t *)p)[i] = (int16_t)v.i; break;
    case SMELT_U16: ((uint16_t *)p)[i] = (uint16_t)v.i; break;
    case SMELT_I32: ((int32_t *)p)[i] = (int32_t)v.i; break;
    case SMELT_U32: ((uint32_t *)p)[i] = (uint32_t)v.i; break;
    default: ((int64_t *)p)[i] = v.i; break;
    }
}

/* Type checks and the jump table: match[i] for LOOP_BEGIN/LOOP_END (each other),
 * IF_BEGIN (its ELSE, else its IF_END) and ELSE (its IF_END). */
static smelt_status prepare(const kir_kernel *k, void *const *bufs, int *match, int *stack)
{
    for (int b = 0; b < k->n_bufs; b++) {
        if (!type_ok(k->bufs[b].type))
            return diag_fail(SMELT_ERR_UNSUPPORTED, "kernel %d: buffer %d of type %s", k->id, b,
                             smelt_dtype_name(k->bufs[b].type));
    }
    /* A buffer the kernel touches must be bound (empty tensors may have no storage). */
    for (int i = 0; k->n_workgroups > 0 && i < k->n_stmts; i++) {
        const kir_stmt *s = &k->stmts[i];
        int b = s->kind == KS_STORE ? s->buf
              : s->kind == KS_DEF && k->vals[s->val].op == KIR_LOAD ? k->vals[s->val].buf : -1;
        if (b >= 0 && !bufs[b] && k->bufs[b].numel > 0)
            return diag_fail(SMELT_ERR_INTERNAL, "kernel %d: buffer %d is not bound", k->id, b);
    }
    for (int v = 1; v < k->n_vals; v++) {
        const kir_value *x = &k->vals[v];
        smelt_dtype ta = kir_op_arity(x->op) > 0 && x->op != KIR_LOAD && x->op != KIR_SELECT
                             ? k->vals[x->a].type : x->type;
        if (!type_ok(x->type) || !type_ok(ta) || !op_ok(x->op, ta))
            return diag_fail(SMELT_ERR_UNSUPPORTED, "kernel %d: %s on %s cannot be interpreted", k->id,
                             kir_op_name(x->op), smelt_dtype_name(ta));
    }
    for (int x = 0; x < k->n_vars; x++)
        if (!type_ok(k->vars[x].type))
            return diag_fail(SMELT_ERR_UNSUPPORTED, "kernel %d: variable of type %s", k->id,
                             smelt_dtype_name(k->vars[x].type));
    int depth = 0;
    for (int i = 0; i < k->n_stmts; i++) {
        match[i] = -1;
        switch (k->stmts[i].kind) {
        case KS_LOOP_BEGIN: case KS_IF_BEGIN: stack[depth++] = i; break;
        case KS_ELSE: match[stack[depth - 1]] = i; stack[depth - 1] = i; break;
        case KS_LOOP_END: case KS_IF_END: {
            int b = stack[--depth];
            match[b] = i;
            if (k->stmts[i].kind == KS_LOOP_END) match[i] = b;
            break;
        }
        default: break;
        }
    }
    return SMELT_OK;
}

/* An access (`what`: "load from", "store to", "prefetch of") of buffer buf at
 * element i, in workgroup wg, must lie inside the buffer. */
static smelt_status index_in(const kir_kernel *k, int64_t wg, const char *what, int buf, int64_t i)
{
    if (i >= 0 && i < k->bufs[buf].numel) return SMELT_OK;
    return diag_fail(SMELT_ERR_INTERNAL, "kernel %d, workgroup %lld: %s buffer %d at index %lld outside [0, %lld)", k->id,
                     (long long)wg, what, buf, (long long)i, (long long)k->bufs[buf].numel);
}

static smelt_status run(const kir_kernel *k, void *const *bufs, const int *match, cell *val, cell *var)
{
    const kir_stmt *stmts = k->stmts;
    const kir_value *vals = k->vals;
    kir_val wg_val = 0;
    for (int v = 1; v < k->n_vals; v++) {
        if (vals[v].op == KIR_CONST) {
            if (class_of(vals[v].type) == VC_F32) val[v].f = (float)vals[v].imm.f;
            else if (vals[v].type == SMELT_F64) val[v].d = vals[v].imm.f;
            else val[v].i = wrap(vals[v].type, vals[v].imm.i);
        } else if (vals[v].op == KIR_WG) {
            wg_val = v;
        } else if (vals[v].op == KIR_LID) {
            val[v].i = 0; /* one thread per workgroup */
        }
    }
    for (int64_t wg = 0; wg < k->n_workgroups; wg++) {
        if (wg_val) val[wg_val].i = wg;
        for (int pc = 0; pc < k->n_stmts; pc++) {
            const kir_stmt *s = &stmts[pc];
            switch (s->kind) {
            case KS_DEF: {
                const kir_value *x = &vals[s->val];
                cell *r = &val[s->val];
                switch (x->op) {
                case KIR_LOAD: {
                    int64_t i = val[x->a].i;
                    TRY(index_in(k, wg, "load from", x->buf, i));
                    *r = load(mem_type(&k->bufs[x->buf]), bufs[x->buf], i);
                    break;
                }
                case KIR_VARGET: *r = var[x->var]; break;
                case KIR_SELECT: *r = val[x->a].i ? val[x->b] : val[x->c]; break;
                case KIR_CAST: *r = eval_cast(x->type, vals[x->a].type, val[x->a]); break;
                default: {
                    smelt_dtype ta = vals[x->a].type;
                    cell a = val[x->a], b = x->b ? val[x->b] : (cell){.i = 0};
                    switch (class_of(ta)) {
                    case VC_F32: *r = eval_f32(x->op, a.f, b.f); break;
                    case VC_F64: *r = eval_f64(x->op, a.d, b.d); break;
                    default: r->i = wrap(x->type, eval_int(x->op, ta, a.i, b.i)); break;
                    }
                }
                }
                break;
            }
            case KS_STORE: {
                int64_t i = val[s->idx].i;
                TRY(index_in(k, wg, "store to", s->buf, i));
                store(mem_type(&k->bufs[s->buf]), bufs[s->buf], i, val[s->val]);
                break;
            }
            case KS_LOOP_BEGIN: {
                int64_t lo = val[s->lo].i, hi = val[s->hi].i, step = val[s->step].i;
                if (step <= 0)
                    return diag_fail(SMELT_ERR_INTERNAL, "kernel %d, stmt %d: loop step %lld is not positive",
                                     k->id, pc, (long long)step);
                val[s->val].i = lo;
                if (!(lo < hi)) pc = match[pc];
                break;
            }
            case KS_LOOP_END: {
                const kir_stmt *b = &stmts[match[pc]];
                int64_t i = val[b->val].i, hi = val[b->hi].i, step = val[b->step].i;
                /* Inside the body lo <= i < hi, so the unsigned distance is exact
                 * and i + step is computed only when it stays below hi. */
                if ((uint64_t)hi - (uint64_t)i > (uint64_t)step) {
                    val[b->val].i = i + step;
                    pc = match[pc];
                }
                break;
            }
            case KS_IF_BEGIN:
                if (!val[s->cond].i) pc = match[pc];
                break;
            case KS_ELSE: pc = match[pc]; break;
            case KS_VAR_SET: var[s->var] = val[s->val]; break;
            case KS_PREFETCH: {
                /* harmless on a CPU, but an address outside the buffer is a wrong one */
                TRY(index_in(k, wg, "prefetch of", s->buf, val[s->idx].i));
                break;
            }
            case KS_IF_END:
            case KS_BARRIER:
            case KS_COUNT:
                break;
            }
        }
    }
    return SMELT_OK;
}

smelt_status kir_interpret(const kir_kernel *k, void *const *caller_bufs)
{
    TRY(kir_verify(k));
    if (k->wg_size != 1)
        return diag_fail(SMELT_ERR_UNSUPPORTED, "kernel %d: the interpreter runs one thread per workgroup, not %d",
                         k->id, k->wg_size);
    /* Workgroup memory: one private array per buffer (one thread shares with nobody). */
    void **bufs = calloc((size_t)k->n_bufs + 1, sizeof(void *));
    if (!bufs) return diag_fail(SMELT_ERR_NOMEM, "kernel %d: out of memory interpreting", k->id);
    for (int b = 0; b < k->n_bufs; b++) {
        bufs[b] = k->bufs[b].workgroup ? calloc((size_t)k->bufs[b].numel + 1, (size_t)kir_buffer_elem_bytes(&k->bufs[b]) + 1)
                                       : caller_bufs[b];
        if (k->bufs[b].workgroup && !bufs[b]) {
            for (int q = 0; q < b; q++)
                if (k->bufs[q].workgroup) free(bufs[q]);
            free(bufs);
            return diag_fail(SMELT_ERR_NOMEM, "kernel %d: out of memory interpreting", k->id);
        }
    }
    int *match = malloc(((size_t)k->n_stmts + 1) * sizeof(int));
    int *stack = malloc(((size_t)k->n_stmts + 1) * sizeof(int));
    cell *val = calloc((size_t)k->n_vals + 1, sizeof(cell));
    cell *var = calloc((size_t)k->n_vars + 1, sizeof(cell));
    smelt_status st;
    if (!match || !stack || !val || !var)
        st = diag_fail(SMELT_ERR_NOMEM, "kernel %d: out of memory interpreting", k->id);
    else if (!(st = prepare(k, bufs, match, stack)))
        st = run(k, bufs, match, val, var);
    free(match);
    free(stack);
    free(val);
    free(var);
    for (int b = 0; b < k->n_bufs; b++)
        if (k->bufs[b].workgroup) free(bufs[b]);
    free(bufs);
    return st;
}
