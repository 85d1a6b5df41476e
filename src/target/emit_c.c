/*
 * emit_c.c — the C-like emitter (target/emit.h).
 *
 * requires: a kernel that passes kir_verify (checked again here).
 * guarantees: every identifier in the output is made here; model text reaches
 *             the output only through sanitize_comment.
 *
 * Semantics the generated code shares with the interpreter (kir/interp.c;
 * the unit tests compare the two bit for bit): float32 arithmetic in float,
 * integer division and modulo by zero give 0, narrow integers wrap, float →
 * integer casts saturate through int64 (NaN → 0) instead of being undefined.
 * int64 add/sub/mul/neg are plain C, so their overflow stays undefined in the
 * generated code (indices never overflow; the interpreter wraps).
 */
#include "target/emit.h"
#include "target/emit_c_impl.h"

#include "kir/smem.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char opencl_prelude[] =
    "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    "typedef char int8_t;\ntypedef uchar uint8_t;\ntypedef short int16_t;\ntypedef ushort uint16_t;\n"
    "typedef int int32_t;\ntypedef uint uint32_t;\ntypedef long int64_t;\ntypedef ulong uint64_t;\n"
    "#define INT32_MIN INT_MIN\n#define INT64_MIN LONG_MIN\n#define INT64_MAX LONG_MAX\n#define UINT64_MAX ULONG_MAX\n";

/* GCC turns short copy and fill loops (a staged tile's rows) into memcpy and
 * memset calls, which cost more than the vector loop they replace. Helpers
 * that only a vector form's scalar #else branch calls are unused where the
 * vector form is compiled, which clang (unlike gcc) warns about for static
 * inline functions. */
static const char c_prelude[] =
    "#include <math.h>\n#include <stdint.h>\n"
    "#if defined(__GNUC__) && !defined(__clang__)\n"
    "#pragma GCC optimize(\"no-tree-loop-distribute-patterns\")\n"
    "#elif defined(__clang__)\n"
    "#pragma clang diagnostic ignored \"-Wunused-function\"\n"
    "#endif\n";

static const char cuda_prelude[] =
    "typedef signed char int8_t;\ntypedef unsigned char uint8_t;\ntypedef short int16_t;\n"
    "typedef unsigned short uint16_t;\ntypedef int int32_t;\ntypedef unsigned int uint32_t;\n"
    "typedef long long int64_t;\ntypedef unsigned long long uint64_t;\n"
    "#define INT32_MIN (-2147483647 - 1)\n#define INT64_MAX 9223372036854775807ll\n"
    "#define INT64_MIN (-INT64_MAX - 1)\n#define UINT64_MAX 18446744073709551615ull\n"
    "#define INFINITY __int_as_float(0x7f800000)\n#define NAN __int_as_float(0x7fffffff)\n";

static const dialect dialects[] = {
    [EMIT_C] = {"C", c_prelude, "static inline", "", "restrict", "", "",
                "_Alignas(64) unsigned char smem[%lld];", NULL, "0", NULL, {"__builtin_prefetch(&", ");"}, "f", "ll",
                PARAMS_TABLE, true, true},
    [EMIT_OPENCL] = {"OpenCL C", opencl_prelude, "static inline", "__kernel ", "restrict", "__global ", "__local ",
                     "__local uchar smem[%lld] __attribute__((aligned(16)));", "get_group_id(0)", "get_local_id(0)",
                     "barrier(CLK_LOCAL_MEM_FENCE);", {"prefetch(&", ", 1);"}, "", "L", PARAMS_OFFSET, false, false},
    [EMIT_CUDA] = {"CUDA C", cuda_prelude, "__device__ __forceinline__", "extern \"C\" __global__ ",
                   "__restrict__", "", "", "__shared__ __align__(16) unsigned char smem[%lld];", "blockIdx.x",
                   "threadIdx.x", "__syncthreads();", {"(void)&", ";"}, "f", "ll", PARAMS_PLAIN, false, false},
};
_Static_assert(sizeof dialects / sizeof dialects[0] == EMIT_LANG_COUNT, "one dialect per emit_lang");

static const struct {
    const char *name;
    const char *prefix; /* of slot names: f3, l7, ... (loop values are i<depth>) */
} ctypes[] = { /* slot prefixes: never x or y, the shadows' (kir/locals.h) */
    [SMELT_F32] = {"float", "f"},   [SMELT_F64] = {"double", "d"}, [SMELT_I8] = {"int8_t", "c"},
    [SMELT_U8] = {"uint8_t", "u"},  [SMELT_I16] = {"int16_t", "h"}, [SMELT_U16] = {"uint16_t", "w"},
    [SMELT_I32] = {"int32_t", "n"}, [SMELT_U32] = {"uint32_t", "m"}, [SMELT_I64] = {"int64_t", "l"},
    [SMELT_U64] = {"uint64_t", "q"}, [SMELT_BOOL] = {"uint8_t", "p"}, [SMELT_F16] = {"float", "f"},
    [SMELT_BF16] = {"float", "f"},
};
#define N_CTYPES ((int)(sizeof ctypes / sizeof ctypes[0]))

static bool type_ok(smelt_dtype t) { return (int)t >= 0 && (int)t < N_CTYPES && ctypes[t].name; }
/* A buffer's element type: float16 / bfloat16 buffers hold their bits, except
 * workgroup ones, which hold float (kir_buffer_elem_bytes). */
static const char *buf_ctype(const kir_buffer *b)
{
    return kir_is_half(b->type) && !b->workgroup ? "uint16_t" : ctypes[b->type].name;
}
/* The conversion a load from / store to buffer b goes through, or NULL. */
static const char *load_conv(const kir_buffer *b)
{
    return b->workgroup ? NULL : b->type == SMELT_F16 ? "smelt_h2f(" : b->type == SMELT_BF16 ? "smelt_bf2f(" : NULL;
}
static const char *store_conv(const kir_buffer *b)
{
    return b->workgroup ? NULL : b->type == SMELT_F16 ? "smelt_f2h(" : b->type == SMELT_BF16 ? "smelt_f2bf(" : NULL;
}
/* Values computed in float32: float, and float16 / bfloat16 widened. */
static bool is_f32(smelt_dtype t) { return t == SMELT_F32 || kir_is_half(t); }
static bool is_unsigned(smelt_dtype t)
{
    return t == SMELT_U8 || t == SMELT_U16 || t == SMELT_U32 || t == SMELT_U64 || t == SMELT_BOOL;
}
/* Integer types narrower than 64 bits: their arithmetic goes through uint32_t
 * so that it wraps instead of overflowing `int`. */
static bool is_narrow(smelt_dtype t) { return !kir_is_float(t) && t != SMELT_I64 && t != SMELT_U64 && t != SMELT_BOOL; }

/* ---- names and literals ------------------------------------------------- */

static void put_float(strbuf *sb, double x, bool f32)
{
    if (isnan(x)) {
        sb_puts(sb, f32 ? "NAN" : "(double)NAN");
        return;
    }
    if (isinf(x)) {
        sb_puts(sb, x < 0 ? (f32 ? "(-INFINITY)" : "(-(double)INFINITY)") : (f32 ? "INFINITY" : "(double)INFINITY"));
        return;
    }
    char buf[64];
    snprintf(buf, sizeof buf, f32 ? "%.9g" : "%.17g", x);
    bool neg = buf[0] == '-';
    sb_puts(sb, neg ? "(" : "");
    sb_puts(sb, buf);
    if (!strpbrk(buf, ".e")) sb_puts(sb, ".0");
    sb_puts(sb, f32 ? "f" : "");
    sb_puts(sb, neg ? ")" : "");
}

/* An integer constant as the dtype holds it (the builder keeps the raw int64). */
int64_t emit_const_int(const kir_value *v)
{
    switch (v->type) {
    case SMELT_I8: return (int8_t)v->imm.i;
    case SMELT_U8: case SMELT_BOOL: return (uint8_t)v->imm.i;
    case SMELT_I16: return (int16_t)v->imm.i;
    case SMELT_U16: return (uint16_t)v->imm.i;
    case SMELT_I32: return (int32_t)v->imm.i;
    case SMELT_U32: return (uint32_t)v->imm.i;
    default: return v->imm.i;
    }
}

static void put_int(strbuf *sb, const dialect *d, smelt_dtype t, int64_t i)
{
    if (t == SMELT_U64 || t == SMELT_U32) {
        uint64_t u = t == SMELT_U32 ? (uint32_t)i : (uint64_t)i;
        if (u <= INT32_MAX) sb_printf(sb, "%llu", (unsigned long long)u);
        else sb_printf(sb, "%lluu%s", (unsigned long long)u, t == SMELT_U64 ? d->ll_sfx : "");
    } else if (i == INT64_MIN) {
        sb_puts(sb, "INT64_MIN");
    } else if (i < INT32_MIN || i > INT32_MAX) {
        sb_printf(sb, "((int64_t)%lld%s)", (long long)i, d->ll_sfx);
    } else if (i == INT32_MIN) {
        sb_puts(sb, "INT32_MIN");
    } else {
        sb_printf(sb, i < 0 ? "(%lld)" : "%lld", (long long)i);
    }
}

static void put_slot(emitter *e, int slot)
{
    sb_printf(e->sb, "%s%d", e->loc.slot_at_top[slot] ? ctypes[e->loc.slot_type[slot]].prefix : "v", slot);
}

/* Inside a copy of an interleaved loop's body: its loop value, offset to the
 * copy's iteration, and the body's own values, suffixed with the copy. */
static bool put_copy_val(emitter *e, kir_val v)
{
    const kir_value *x = &e->k->vals[v];
    kir_val outer = e->k->stmts[e->copy_begin].val;
    if (v == outer) {
        if (e->copy) sb_printf(e->sb, "(i%d + %lld)", e->loop_depth[v], (long long)(e->copy * e->copy_step));
        else sb_printf(e->sb, "i%d", e->loop_depth[v]);
        return true;
    }
    if (x->op == KIR_CONST || x->op == KIR_WG || x->op == KIR_LID || x->op == KIR_LOOPVAR ||
        x->def <= e->copy_begin || x->def >= e->copy_end)
        return false;
    char name[32];
    sb_puts(e->sb, kir_locals_shadow(v, false, emit_copy_of(e, v), name, sizeof name));
    return true;
}

void emit_put_val(emitter *e, kir_val v)
{
    const kir_value *x = &e->k->vals[v];
    if (e->copy >= 0 && put_copy_val(e, v)) return;
    switch (x->op) {
    case KIR_CONST:
        if (kir_is_float(x->type)) put_float(e->sb, x->imm.f, is_f32(x->type));
        else put_int(e->sb, e->d, x->type, emit_const_int(x));
        break;
    case KIR_WG: sb_puts(e->sb, "wg"); break;
    case KIR_LID: sb_puts(e->sb, e->d->group_id ? "lid" : "0"); break; /* C: one thread per workgroup */
    case KIR_LOOPVAR: sb_printf(e->sb, "i%d", e->loop_depth[v]); break;
    default: put_slot(e, e->loc.val_slot[v]); break;
    }
}

/* Append `fmt` with %a %b %c replaced by operands and %T by the result's C type. */
static void put_pattern(emitter *e, const char *fmt, const kir_value *x)
{
    for (const char *p = fmt; *p; p++) {
        if (*p != '%') {
            char c[2] = {*p, 0};
            sb_puts(e->sb, c);
            continue;
        }
        switch (*++p) {
        case 'a': emit_put_val(e, x->a); break;
        case 'b': emit_put_val(e, x->b); break;
        case 'c': emit_put_val(e, x->c); break;
        case 'T': sb_puts(e->sb, ctypes[x->type].name); break;
        default: break;
        }
    }
}

/* Comment text: only [A-Za-z0-9_ .,:'+-*()=[]] survives ('/' does not), so
 * no model string can close the comment or form a trigraph or line splice. */
static void put_comment(strbuf *sb, const char *s)
{
    static const char ok[] = "_ .,:'+-*()=[]";
    char buf[321];
    size_t n = 0;
    for (; s && *s && n < sizeof buf - 1; s++) {
        unsigned char c = (unsigned char)*s;
        bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    (c && strchr(ok, c));
        buf[n++] = keep ? (char)c : '_';
    }
    buf[n] = 0;
    sb_puts(sb, buf);
}

/* ---- expressions -------------------------------------------------------- */

static const char *const libm[KIR_OP_COUNT] = {
    [KIR_ABS] = "fabs", [KIR_EXP] = "exp", [KIR_LOG] = "log", [KIR_SQRT] = "sqrt", [KIR_SIN] = "sin",
    [KIR_COS] = "cos", [KIR_TAN] = "tan", [KIR_TANH] = "tanh", [KIR_ERF] = "erf", [KIR_FLOOR] = "floor",
    [KIR_CEIL] = "ceil", [KIR_ROUND] = "rint", [KIR_ASIN] = "asin", [KIR_ACOS] = "acos",
    [KIR_ATAN] = "atan", [KIR_SINH] = "sinh", [KIR_COSH] = "cosh", [KIR_ASINH] = "asinh",
    [KIR_ACOSH] = "acosh", [KIR_ATANH] = "atanh", [KIR_MOD] = "fmod", [KIR_POW] = "pow",
};

static const char *const c_binop[KIR_OP_COUNT] = {
    [KIR_ADD] = "+", [KIR_SUB] = "-", [KIR_MUL] = "*", [KIR_DIV] = "/", [KIR_AND] = "&",
    [KIR_OR] = "|", [KIR_XOR] = "^", [KIR_EQ] = "==", [KIR_NE] = "!=", [KIR_LT] = "<",
    [KIR_LE] = "<=", [KIR_GT] = ">", [KIR_GE] = ">=",
};

static smelt_status unsupported(const emitter *e, const kir_value *x, smelt_dtype t)
{
    return diag_fail(SMELT_ERR_UNSUPPORTED, "kernel %d: %s on %s has no %s form", e->k->id,
                     kir_op_name(x->op), smelt_dtype_name(t), e->d->name);
}

static smelt_status put_float_expr(emitter *e, const kir_value *x, smelt_dtype ta)
{
    strbuf *sb = e->sb;
    const char *sfx = is_f32(ta) ? e->d->f32_sfx : "";
    bool own = is_f32(ta) && e->d->own_math && (x->op == KIR_EXP || x->op == KIR_TANH || x->op == KIR_ERF);
    if (own) {
        sb_printf(sb, "smelt_%sf(", libm[x->op]);
        put_pattern(e, "%a)", x);
        return SMELT_OK;
    }
    if (libm[x->op]) {
        sb_printf(sb, "%s%s(", libm[x->op], sfx);
        put_pattern(e, kir_op_arity(x->op) == 2 ? "%a, %b)" : "%a)", x);
        return SMELT_OK;
    }
    switch (x->op) {
    case KIR_NEG: put_pattern(e, "-%a", x); return SMELT_OK;
    case KIR_ISNAN: put_pattern(e, "(%a != %a)", x); return SMELT_OK;
    case KIR_ISINF:
        sb_printf(sb, "(fabs%s(", sfx);
        put_pattern(e, "%a) == INFINITY)", x);
        return SMELT_OK;
    case KIR_MIN:
    case KIR_MAX: {
        /* Against a constant that is not NaN, smelt_min/max reduce to one
         * comparison (the NaN and tie cases agree), which C compilers map to
         * the vector min/max instructions. */
        const kir_value *va = &e->k->vals[x->a], *vb = &e->k->vals[x->b];
        bool max = x->op == KIR_MAX;
        if (vb->op == KIR_CONST && vb->imm.f == vb->imm.f) {
            put_pattern(e, max ? "(%b > %a ? %b : %a)" : "(%b < %a ? %b : %a)", x);
            return SMELT_OK;
        }
        if (va->op == KIR_CONST && va->imm.f == va->imm.f) {
            put_pattern(e, max ? "(%a >= %b ? %a : %b)" : "(%a <= %b ? %a : %b)", x);
            return SMELT_OK;
        }
        sb_printf(sb, "smelt_%s%s(", x->op == KIR_MIN ? "min" : "max", is_f32(ta) ? "f" : "");
        put_pattern(e, "%a, %b)", x);
        return SMELT_OK;
    }
    case KIR_ADD: case KIR_SUB: case KIR_MUL: case KIR_DIV:
    case KIR_EQ: case KIR_NE: case KIR_LT: case KIR_LE: case KIR_GT: case KIR_GE:
        emit_put_val(e, x->a);
        sb_printf(sb, " %s ", c_binop[x->op]);
        emit_put_val(e, x->b);
        return SMELT_OK;
    default: return unsupported(e, x, ta);
    }
}

static bool is_plain_divisor(const kir_kernel *k, kir_val b)
{
    const kir_value *v = &k->vals[b];
    return v->op == KIR_CONST && emit_const_int(v) != 0 && emit_const_int(v) != -1;
}

static smelt_status put_int_expr(emitter *e, const kir_value *x, smelt_dtype ta)
{
    bool u = is_unsigned(ta), narrow = is_narrow(ta), boolean = ta == SMELT_BOOL;
    const char *sx = u ? "u64" : "i64";
    switch (x->op) {
    case KIR_ABS:
        if (u) put_pattern(e, "%a", x);
        else if (narrow) put_pattern(e, "(%T)(%a < 0 ? 0u - (uint32_t)%a : (uint32_t)%a)", x);
        else put_pattern(e, "(%a < 0 ? -%a : %a)", x);
        return SMELT_OK;
    case KIR_FLOOR: case KIR_CEIL: case KIR_ROUND: put_pattern(e, "%a", x); return SMELT_OK;
    case KIR_ISNAN: case KIR_ISINF: put_pattern(e, "((void)%a, 0)", x); return SMELT_OK;
    case KIR_NOT: put_pattern(e, boolean ? "!%a" : "(%T)~%a", x); return SMELT_OK;
    case KIR_AND: case KIR_OR: case KIR_XOR:
        put_pattern(e, boolean ? "%a" : "(%T)(%a", x);
        sb_printf(e->sb, " %s ", c_binop[x->op]);
        put_pattern(e, boolean ? "%b" : "%b)", x);
        return SMELT_OK;
    case KIR_EQ: case KIR_NE: case KIR_LT: case KIR_LE: case KIR_GT: case KIR_GE:
        emit_put_val(e, x->a);
        sb_printf(e->sb, " %s ", c_binop[x->op]);
        emit_put_val(e, x->b);
        return SMELT_OK;
    case KIR_MIN: put_pattern(e, "(%a < %b ? %a : %b)", x); return SMELT_OK;
    case KIR_MAX: put_pattern(e, "(%a > %b ? %a : %b)", x); return SMELT_OK;
    default: break;
    }
    if (boolean) return unsupported(e, x, ta);
    switch (x->op) {
    case KIR_NEG: put_pattern(e, narrow ? "(%T)(0u - (uint32_t)%a)" : "-%a", x); return SMELT_OK;
    case KIR_ADD: case KIR_SUB: case KIR_MUL:
        if (narrow) {
            put_pattern(e, "(%T)((uint32_t)%a", x);
            sb_printf(e->sb, " %s ", c_binop[x->op]);
            put_pattern(e, "(uint32_t)%b)", x);
        } else {
            emit_put_val(e, x->a);
            sb_printf(e->sb, " %s ", c_binop[x->op]);
            emit_put_val(e, x->b);
        }
        return SMELT_OK;
    case KIR_DIV:
    case KIR_MOD:
        if (is_plain_divisor(e->k, x->b)) {
            put_pattern(e, narrow ? "(%T)(%a" : "%a", x);
            sb_puts(e->sb, x->op == KIR_DIV ? " / " : " % ");
            put_pattern(e, narrow ? "%b)" : "%b", x);
        } else {
            put_pattern(e, narrow ? "(%T)" : "", x);
            sb_printf(e->sb, "smelt_%s_%s(", x->op == KIR_DIV ? "div" : "mod", sx);
            put_pattern(e, "%a, %b)", x);
        }
        return SMELT_OK;
    case KIR_POW:
        put_pattern(e, "(%T)", x);
        sb_printf(e->sb, "smelt_pow_%s(", sx);
        put_pattern(e, "%a, %b)", x);
        return SMELT_OK;
    case KIR_SHL: put_pattern(e, "(%T)smelt_shl((uint64_t)%a, (uint64_t)%b)", x); return SMELT_OK;
    case KIR_SHR:
        put_pattern(e, u ? "(%T)smelt_shr_u((uint64_t)%a, (uint64_t)%b)"
                         : "(%T)smelt_shr_s((int64_t)%a, (uint64_t)%b)", x);
        return SMELT_OK;
    default: return unsupported(e, x, ta);
    }
}

/* Whether float v is clamped into int32's range by constant MIN and MAX (a
 * saturation before a cast to a narrow integer): its cast then needs no
 * 64-bit path, smelt_f2i32 gives smelt_f2i64's result (NaN 0, else truncated)
 * in a form the compiler vectorizes (3x faster on k-pair im2col runs,
 * ops/conv_gemm.c). */
static bool clamped_i32(const kir_kernel *k, kir_val v)
{
    bool lo = false, hi = false;
    for (int d = 0; d < 2; d++) {
        const kir_value *p = &k->vals[v];
        if ((p->op != KIR_MIN && p->op != KIR_MAX) || p->type != SMELT_F32) return false;
        kir_val c = kir_is_const(k, p->b) ? p->b : kir_is_const(k, p->a) ? p->a : 0;
        if (!c) return false;
        double f = k->vals[c].imm.f;
        if (p->op == KIR_MIN) hi |= f <= 2147483520.0; /* the largest float below 2^31 */
        else lo |= f >= -2147483648.0;
        v = c == p->b ? p->a : p->b;
    }
    return lo && hi;
}

static smelt_status put_cast(emitter *e, const kir_value *x, smelt_dtype from)
{
    smelt_dtype to = x->type;
    if (to == SMELT_F16) put_pattern(e, "smelt_h2f(smelt_f2h((float)%a))", x);
    else if (to == SMELT_BF16) put_pattern(e, "smelt_bf2f(smelt_f2bf((float)%a))", x);
    else if (to == SMELT_BOOL) put_pattern(e, "(%a != 0)", x);
    else if (kir_is_float(to) || !kir_is_float(from)) put_pattern(e, "(%T)%a", x);
    else if (to == SMELT_U64) put_pattern(e, "smelt_f2u64(%a)", x);
    else if (to == SMELT_I64) put_pattern(e, "smelt_f2i64(%a)", x);
    else if (from == SMELT_F32 && smelt_dtype_size(to) <= 4 && clamped_i32(e->k, x->a)) put_pattern(e, "(%T)smelt_f2i32(%a)", x);
    else put_pattern(e, "(%T)smelt_f2i64(%a)", x);
    return SMELT_OK;
}

static smelt_status put_expr(emitter *e, const kir_value *x)
{
    switch (x->op) {
    case KIR_LOAD: {
        const char *conv = load_conv(&e->k->bufs[x->buf]);
        sb_printf(e->sb, "%sb%d[", conv ? conv : "", x->buf);
        put_pattern(e, conv ? "%a])" : "%a]", x);
        return SMELT_OK;
    }
    case KIR_VARGET: put_slot(e, e->loc.var_slot[x->var]); return SMELT_OK;
    case KIR_SELECT: put_pattern(e, "%a ? %b : %c", x); return SMELT_OK;
    case KIR_CAST: return put_cast(e, x, e->k->vals[x->a].type);
    default: break;
    }
    smelt_dtype ta = e->k->vals[x->a].type;
    if (!type_ok(ta)) return unsupported(e, x, ta);
    return kir_is_float(ta) ? put_float_expr(e, x, ta) : put_int_expr(e, x, ta);
}

/* ---- statements --------------------------------------------------------- */

static void count_uses(emitter *e)
{
    const kir_kernel *k = e->k;
    for (int i = 0; i < k->n_stmts; i++) {
        const kir_stmt *s = &k->stmts[i];
        switch (s->kind) {
        case KS_DEF: {
            const kir_value *x = &k->vals[s->val];
            kir_val ops[3] = {x->a, x->b, x->c};
            for (int j = 0; j < kir_op_arity(x->op); j++) e->uses[ops[j]]++;
            if (x->op == KIR_VARGET) e->var_reads[x->var]++;
            break;
        }
        case KS_STORE: e->uses[s->idx]++; e->uses[s->val]++; break;
        case KS_PREFETCH: e->uses[s->idx]++; break;
        case KS_LOOP_BEGIN: e->uses[s->lo]++; e->uses[s->hi]++; e->uses[s->step]++; break;
        case KS_IF_BEGIN: e->uses[s->cond]++; break;
        case KS_VAR_SET: e->uses[s->val]++; break;
        default: break;
        }
    }
}

static bool buffer_used(const kir_kernel *k, int b)
{
    for (int i = 0; i < k->n_stmts; i++) {
        const kir_stmt *s = &k->stmts[i];
        if (((s->kind == KS_STORE || s->kind == KS_PREFETCH) && s->buf == b) ||
            (s->kind == KS_DEF && k->vals[s->val].op == KIR_LOAD && k->vals[s->val].buf == b))
            return true;
    }
    return false;
}

static bool val_used(const emitter *e, kir_op op)
{
    for (int v = 1; v < e->k->n_vals; v++)
        if (e->k->vals[v].op == op && e->uses[v]) return true;
    return false;
}

/* Threads of a workgroup share its parallel loops (GPU dialects only). */
static bool threaded(const emitter *e) { return e->d->group_id && e->k->wg_size > 1; }

/* The written buffer whose memory buffer b shares (the plan's in-place table), or -1. */
static int alias_of(const emitter *e, int b) { return e->alias ? e->alias[b] : -1; }

static void emit_params(emitter *e)
{
    const kir_kernel *k = e->k;
    strbuf *sb = e->sb;
    if (e->d->params == PARAMS_TABLE) {
        sb_printf(sb, "%svoid smelt_k%d(int64_t wg, void *const *bufs)\n{\n", e->d->kernel_qual, k->id);
        return;
    }
    sb_printf(sb, "%svoid smelt_k%d(", e->d->kernel_qual, k->id);
    int n = 0;
    for (int b = 0; b < k->n_bufs; b++) {
        if (k->bufs[b].workgroup) continue;
        const char *q = k->bufs[b].written ? "" : "const ";
        const char *t = buf_ctype(&k->bufs[b]);
        if (n++) sb_puts(sb, ", ");
        if (e->d->params == PARAMS_OFFSET)
            sb_printf(sb, "%s%s%s *g%d, long o%d", e->d->global_space, q, t, b, b);
        else
            sb_printf(sb, "%s%s *a%d", q, t, b); /* a: no slot prefix */
    }
    sb_puts(sb, n ? ")\n{\n" : "void)\n{\n");
}

static void emit_header(emitter *e)
{
    const kir_kernel *k = e->k;
    strbuf *sb = e->sb;
    sb_printf(sb, "/* k%d%s", k->id, k->comment && *k->comment ? ": " : "");
    put_comment(sb, k->comment);
    sb_puts(sb, " */\n");
    if (k->smem_bytes > 0 || smem_total_bytes(k) > 0) {
        sb_puts(sb, "/* workgroup memory:");
        for (int b = 0; b < k->n_bufs; b++)
            if (k->bufs[b].workgroup)
                sb_printf(sb, " b%d %s[%lld] at +%lld;", b, buf_ctype(&k->bufs[b]), (long long)k->bufs[b].numel,
                          (long long)k->bufs[b].smem_offset);
        sb_printf(sb, " peak %lld bytes, %lld without reuse */\n", (long long)k->smem_bytes,
                  (long long)smem_total_bytes(k));
    }
    emit_params(e);
    int n_bound = 0;
    for (int b = 0; b < k->n_bufs; b++) {
        if (k->bufs[b].workgroup || !buffer_used(k, b) || alias_of(e, b) >= 0) continue;
        n_bound++;
        const char *q = k->bufs[b].written ? "" : "const ";
        const char *t = buf_ctype(&k->bufs[b]);
        const char *gs = e->d->global_space;
        if (e->d->params == PARAMS_TABLE)
            sb_printf(sb, "    %s%s%s *%s b%d = (%s%s%s *)bufs[%d];\n", gs, q, t, e->d->restrict_kw, b, gs, q, t, b);
        else if (e->d->params == PARAMS_OFFSET)
            sb_printf(sb, "    %s%s%s *%s b%d = (%s%s%s *)((%s%schar *)g%d + o%d);\n", gs, q, t, e->d->restrict_kw, b, gs,
                      q, t, gs, q, b, b);
        else
            sb_printf(sb, "    %s%s *%s b%d = a%d;\n", q, t, e->d->restrict_kw, b, b);
    }
    if (k->smem_bytes > 0) {
        sb_puts(sb, "    ");
        sb_printf(sb, e->d->smem_decl, (long long)k->smem_bytes);
        sb_puts(sb, "\n");
        for (int b = 0; b < k->n_bufs; b++) {
            if (!k->bufs[b].workgroup || !buffer_used(k, b)) continue;
            const char *t = buf_ctype(&k->bufs[b]), *ls = e->d->local_space;
            sb_printf(sb, "    %s%s *b%d = (%s%s *)(smem + %lld);\n", ls, t, b, ls, t, (long long)k->bufs[b].smem_offset);
            if (e->d->host_simd && emit_row_streamed(k, b)) sb_printf(sb, "    (void)b%d;\n", b);
        }
    }
    /* In-place: a pointer based on the written buffer's, so one object has one restrict pointer. */
    for (int b = 0; b < k->n_bufs; b++) {
        if (!buffer_used(k, b) || alias_of(e, b) < 0) continue;
        n_bound++;
        const char *t = buf_ctype(&k->bufs[b]);
        int w = alias_of(e, b);
        const char *gs = e->d->global_space;
        if (!buffer_used(k, w) && e->d->params == PARAMS_TABLE)
            sb_printf(sb, "    %sconst %s *b%d = (%sconst %s *)bufs[%d];\n", gs, t, b, gs, t, b);
        else if (!buffer_used(k, w) && e->d->params == PARAMS_OFFSET)
            sb_printf(sb, "    %sconst %s *b%d = (%sconst %s *)((%sconst char *)g%d + o%d);\n", gs, t, b, gs, t, gs, b, b);
        else if (!buffer_used(k, w))
            sb_printf(sb, "    const %s *b%d = a%d;\n", t, b, b);
        else
            sb_printf(sb, "    %sconst %s *b%d = b%d; /* in place */\n", e->d->global_space, t, b, w);
    }
    emit_put_gemm_int8_scratch(e); /* emit_c_gemm_int8.c: int16 copies of 8-bit gemms' A */
    /* Slots declared at the top, grouped by type in slot order. */
    for (int q = 0; q < e->loc.n_slots; q++) {
        if (!e->loc.slot_at_top[q]) continue;
        smelt_dtype t = e->loc.slot_type[q];
        bool first = true;
        for (int r = 0; r < q; r++) first &= !(e->loc.slot_at_top[r] && !strcmp(ctypes[e->loc.slot_type[r]].name, ctypes[t].name));
        if (!first) continue;
        sb_printf(sb, "    %s ", ctypes[t].name);
        for (int r = q; r < e->loc.n_slots; r++) {
            if (!e->loc.slot_at_top[r] || strcmp(ctypes[e->loc.slot_type[r]].name, ctypes[t].name)) continue;
            if (r != q) sb_puts(sb, ", ");
            put_slot(e, r);
        }
        sb_puts(sb, ";\n");
    }
    bool wg_used = val_used(e, KIR_WG);
    if (!e->d->group_id) {
        if (!wg_used) sb_puts(sb, "    (void)wg;\n");
        if (!n_bound) sb_puts(sb, "    (void)bufs;\n");
        return;
    }
    if (wg_used) sb_printf(sb, "    const int64_t wg = %s;\n", e->d->group_id);
    if (val_used(e, KIR_LID) || threaded(e)) sb_printf(sb, "    const int64_t lid = %s;\n", e->d->local_id);
}

smelt_status emit_put_def(emitter *e, const kir_stmt *s, int ind)
{
    const kir_value *x = &e->k->vals[s->val];
    sb_indent(e->sb, ind);
    if (e->loc.val_const[s->val] || e->copy >= 0) sb_printf(e->sb, "const %s ", ctypes[x->type].name);
    emit_put_val(e, s->val);
    sb_puts(e->sb, " = ");
    TRY(put_expr(e, x));
    sb_puts(e->sb, ";\n");
    if (!e->uses[s->val]) {
        sb_indent(e->sb, ind);
        sb_puts(e->sb, "(void)");
        emit_put_val(e, s->val);
        sb_puts(e->sb, ";\n");
    }
    return SMELT_OK;
}

static smelt_status emit_body(emitter *e)
{
    const kir_kernel *k = e->k;
    strbuf *sb = e->sb;
    int depth = 0, vec_end = -1, strip_end = -1, plain_until = -1; /* no vector forms inside an interleaved loop's plain form */
    bool streamed = false;
    for (int i = 0; i < k->n_stmts; i++) {
        const kir_stmt *s = &k->stmts[i];
        if (s->kind == KS_LOOP_END || s->kind == KS_IF_END || s->kind == KS_ELSE) depth--;
        int ind = 4 * (depth + 1);
        switch (s->kind) {
        case KS_DEF:
            if (e->fused_dead && e->fused_store > i && e->fused_dead[s->val]) { /* the plain form's alone */
                sb_puts(sb, "#if !(defined(__GNUC__) && defined(__AVX512F__))\n");
                TRY(emit_put_def(e, s, ind));
                sb_puts(sb, "#endif\n");
                break;
            }
            TRY(emit_put_def(e, s, ind));
            break;
        case KS_STORE:
            sb_indent(sb, ind);
            sb_printf(sb, "b%d[", s->buf);
            emit_put_val(e, s->idx);
            const char *conv = store_conv(&k->bufs[s->buf]);
            sb_printf(sb, "] = %s", conv ? conv : "");
            emit_put_val(e, s->val);
            sb_puts(sb, conv ? ");\n" : ";\n");
            break;
        case KS_LOOP_BEGIN: {
            if (i == e->fused_store) TRY(emit_put_gemm_store(e, i, ind, depth));
            int end = s->gemm && e->d->host_simd ? emit_put_gemm(e, i, ind) : -1;
            if (end >= 0) {
                i = end;
                break;
            }
            end = s->deint && e->d->host_simd ? emit_put_deint(e, i, ind, depth) : -1;
            if (end >= 0) {
                i = end;
                break;
            }
            end = s->transpose && e->d->host_simd && !threaded(e) ? emit_put_trans(e, i, ind, depth) : -1;
            if (end >= 0) {
                i = end;
                break;
            }
            end = s->stream && e->d->host_simd ? emit_put_stream(e, i, ind) : -1;
            if (end >= 0) {
                i = end;
                streamed = true;
                break;
            }
            ilv_loop il;
            if (e->d->host_simd && i > plain_until && emit_ilv_loop(k, e->alias, i, &il)) {
                TRY(emit_put_ilv_loop(e, i, &il, ind, depth));
                streamed |= il.n_streams > 0;
                vec_end = plain_until = il.end;
            }
            int vend = e->d->host_simd && i > plain_until ? emit_vec_loop(k, i) : -1;
            bool strip = vend >= 0 && emit_vec_strip(k, i);
            if (vend >= 0) {
                TRY(emit_put_vec_loop(e, i, vend, ind, depth));
                if (strip) strip_end = vend;
                else vec_end = vend;
            }
            e->loop_depth[s->val] = depth;
            sb_indent(sb, ind);
            sb_printf(sb, "for (int64_t i%d = ", depth);
            if (strip) sb_printf(sb, "s%d", depth);
            else emit_put_val(e, s->lo);
            bool spread = s->parallel && threaded(e);
            if (spread) sb_puts(sb, " + lid");
            sb_printf(sb, "; i%d < ", depth);
            emit_put_val(e, s->hi);
            const kir_value *st = &k->vals[s->step];
            if (spread) {
                sb_printf(sb, "; i%d += %d) {\n", depth, k->wg_size);
            } else if (st->op == KIR_CONST && st->imm.i == 1) {
                sb_printf(sb, "; ++i%d) {\n", depth);
            } else {
                sb_printf(sb, "; i%d += ", depth);
                emit_put_val(e, s->step);
                sb_puts(sb, ") {\n");
            }
            depth++;
            break;
        }
        case KS_IF_BEGIN:
            if (e->d->host_simd && (e->zero_gemm = emit_gemm_zero_if(k, i)) >= 0) {
                e->zero_cond = s->cond;
                while (k->stmts[i].kind != KS_IF_END) i++; /* the zeroing has no if or loop but its own */
                break;
            }
            sb_indent(sb, ind);
            sb_puts(sb, "if (");
            emit_put_val(e, s->cond);
            sb_puts(sb, ") {\n");
            depth++;
            break;
        case KS_ELSE:
            sb_indent(sb, ind);
            sb_puts(sb, "} else {\n");
            depth++;
            break;
        case KS_LOOP_END:
        case KS_IF_END:
            sb_indent(sb, ind);
            sb_puts(sb, "}\n");
            if (i == vec_end) sb_puts(sb, "#endif\n");
            if (i == strip_end) {
                sb_indent(sb, ind);
                sb_puts(sb, "}\n");
            }
            if (i == e->fused_end) {
                sb_puts(sb, "#endif\n");
                e->fused_store = e->fused_end = -1;
            }
            break;
        case KS_VAR_SET:
            sb_indent(sb, ind);
            put_slot(e, e->loc.var_slot[s->var]);
            sb_puts(sb, " = ");
            emit_put_val(e, s->val);
            sb_puts(sb, ";\n");
            if (!e->var_reads[s->var]) {
                sb_indent(sb, ind);
                sb_puts(sb, "(void)");
                put_slot(e, e->loc.var_slot[s->var]);
                sb_puts(sb, ";\n");
            }
            break;
        case KS_PREFETCH:
            sb_indent(sb, ind);
            sb_printf(sb, "%sb%d[", e->d->prefetch[0], s->buf);
            emit_put_val(e, s->idx);
            sb_printf(sb, "]%s\n", e->d->prefetch[1]);
            break;
        case KS_BARRIER:
            if (e->d->barrier) {
                sb_indent(sb, ind);
                sb_printf(sb, "%s\n", e->d->barrier);
            }
            break;
        case KS_COUNT: break;
        }
    }
    if (streamed) sb_puts(sb, "#if defined(__SSE__)\n    _mm_sfence();\n#endif\n");
    sb_puts(sb, "}\n");
    return SMELT_OK;
}

smelt_status emit_kernel(strbuf *sb, const kir_kernel *k, emit_lang lang, locals_strategy s, const int *alias)
{
    if ((unsigned)lang >= EMIT_LANG_COUNT)
        return diag_fail(SMELT_ERR_UNSUPPORTED, "kernel %d: no emitter for this language", k->id);
    if (lang == EMIT_C && k->wg_size != 1)
        return diag_fail(SMELT_ERR_UNSUPPORTED, "kernel %d: %d threads per workgroup have no C form", k->id, k->wg_size);
    TRY(kir_verify(k));
    for (int b = 0; b < k->n_bufs; b++)
        if (!type_ok(k->bufs[b].type))
            return diag_fail(SMELT_ERR_UNSUPPORTED, "kernel %d: buffer %d of type %s", k->id, b,
                             smelt_dtype_name(k->bufs[b].type));
    for (int v = 1; v < k->n_vals; v++)
        if (!type_ok(k->vals[v].type))
            return diag_fail(SMELT_ERR_UNSUPPORTED, "kernel %d: value of type %s", k->id,
                             smelt_dtype_name(k->vals[v].type));
    for (int x = 0; x < k->n_vars; x++)
        if (!type_ok(k->vars[x].type))
            return diag_fail(SMELT_ERR_UNSUPPORTED, "kernel %d: variable of type %s", k->id,
                             smelt_dtype_name(k->vars[x].type));

    arena a;
    arena_init(&a);
    emitter e = {.sb = sb, .k = k, .alias = alias, .d = &dialects[lang], .copy = -1, .zero_gemm = -1,
                 .fused_store = -1, .fused_gemm = -1, .fused_end = -1};
    smelt_status st = kir_locals_assign(k, s, &a, &e.loc);
    e.loop_depth = arena_alloc(&a, ((size_t)k->n_vals + 1) * sizeof(int));
    e.uses = arena_alloc(&a, ((size_t)k->n_vals + 1) * sizeof(int));
    e.var_reads = arena_alloc(&a, ((size_t)k->n_vars + 1) * sizeof(int));
    e.varies = arena_alloc(&a, (size_t)k->n_vals + 1);
    if (!st && (!e.loop_depth || !e.uses || !e.var_reads || !e.varies))
        st = diag_fail(SMELT_ERR_NOMEM, "kernel %d: out of memory while emitting", k->id);
    if (!st) {
        count_uses(&e);
        emit_header(&e);
        st = emit_body(&e);
    }
    free(e.fused_dead);
    arena_free(&a);
    if (!st && sb->oom) st = diag_fail(SMELT_ERR_NOMEM, "kernel %d: out of memory while emitting", k->id);
    return st;
}

smelt_status emit_program(kir_kernel *const *kernels, int n, emit_lang lang, locals_strategy s, const int *const *alias,
                          char **out)
{
    *out = NULL;
    if ((unsigned)lang >= EMIT_LANG_COUNT) return diag_fail(SMELT_ERR_UNSUPPORTED, "no emitter for this language");
    /* The kernels first: the prelude holds only the helpers they call. */
    strbuf body;
    sb_init(&body);
    for (int i = 0; i < n; i++) {
        sb_puts(&body, "\n");
        smelt_status st = emit_kernel(&body, kernels[i], lang, s, alias ? alias[i] : NULL);
        if (st) {
            sb_free(&body);
            return st;
        }
    }
    strbuf sb;
    sb_init(&sb);
    sb_printf(&sb, "/* generated by smelt (%s, %s locals) */\n", dialects[lang].name,
              s == LOCALS_REUSE ? "reuse" : "hybrid");
    sb_puts(&sb, dialects[lang].prelude);
    emit_put_prelude(&sb, &dialects[lang], body.s ? body.s : "");
    if (dialects[lang].host_simd) emit_put_gemm_helpers(&sb, body.s ? body.s : "");
    sb_puts(&sb, body.s ? body.s : "");
    if (body.oom) sb.oom = 1;
    sb_free(&body);
    if (sb.oom) {
        sb_free(&sb);
        return diag_fail(SMELT_ERR_NOMEM, "out of memory while emitting");
    }
    *out = sb_take(&sb);
    return *out ? SMELT_OK : diag_fail(SMELT_ERR_NOMEM, "out of memory while emitting");
}

const char *emit_kernel_name(const kir_kernel *k, char *buf, size_t cap)
{
    snprintf(buf, cap, "smelt_k%d", k->id);
    return buf;
}
