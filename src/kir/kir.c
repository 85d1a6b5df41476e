#include "kir/kir.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    int arity;
} op_props[] = {
    [KIR_CONST] = {"const", 0}, [KIR_WG] = {"wg", 0}, [KIR_LID] = {"lid", 0}, [KIR_LOOPVAR] = {"loopvar", 0},
    [KIR_VARGET] = {"varget", 0}, [KIR_LOAD] = {"load", 1},
    [KIR_NEG] = {"neg", 1}, [KIR_ABS] = {"abs", 1}, [KIR_NOT] = {"not", 1}, [KIR_EXP] = {"exp", 1},
    [KIR_LOG] = {"log", 1}, [KIR_SQRT] = {"sqrt", 1}, [KIR_SIN] = {"sin", 1}, [KIR_COS] = {"cos", 1},
    [KIR_TAN] = {"tan", 1}, [KIR_TANH] = {"tanh", 1}, [KIR_ERF] = {"erf", 1}, [KIR_FLOOR] = {"floor", 1},
    [KIR_CEIL] = {"ceil", 1}, [KIR_ROUND] = {"round", 1}, [KIR_ASIN] = {"asin", 1}, [KIR_ACOS] = {"acos", 1},
    [KIR_ATAN] = {"atan", 1}, [KIR_SINH] = {"sinh", 1}, [KIR_COSH] = {"cosh", 1}, [KIR_ASINH] = {"asinh", 1},
    [KIR_ACOSH] = {"acosh", 1}, [KIR_ATANH] = {"atanh", 1}, [KIR_ISNAN] = {"isnan", 1},
    [KIR_ISINF] = {"isinf", 1}, [KIR_CAST] = {"cast", 1},
    [KIR_ADD] = {"add", 2}, [KIR_SUB] = {"sub", 2}, [KIR_MUL] = {"mul", 2}, [KIR_DIV] = {"div", 2},
    [KIR_MOD] = {"mod", 2}, [KIR_POW] = {"pow", 2}, [KIR_MIN] = {"min", 2}, [KIR_MAX] = {"max", 2},
    [KIR_AND] = {"and", 2}, [KIR_OR] = {"or", 2}, [KIR_XOR] = {"xor", 2}, [KIR_SHL] = {"shl", 2},
    [KIR_SHR] = {"shr", 2}, [KIR_EQ] = {"eq", 2}, [KIR_NE] = {"ne", 2}, [KIR_LT] = {"lt", 2},
    [KIR_LE] = {"le", 2}, [KIR_GT] = {"gt", 2}, [KIR_GE] = {"ge", 2}, [KIR_SELECT] = {"select", 3},
};
/* Unsized, so an op added at the end of kir_op without a row here fails to compile
 * (one added in the middle leaves a NULL name: the kir unit tests check every row). */
_Static_assert(sizeof op_props / sizeof op_props[0] == KIR_OP_COUNT, "one op_props row per kir_op");

const char *kir_op_name(kir_op op) { return (unsigned)op < KIR_OP_COUNT ? op_props[op].name : "?"; }
int kir_op_arity(kir_op op) { return (unsigned)op < KIR_OP_COUNT ? op_props[op].arity : 0; }

bool kir_is_float(smelt_dtype t) { return t == SMELT_F32 || t == SMELT_F64 || kir_is_half(t); }
bool kir_is_half(smelt_dtype t) { return t == SMELT_F16 || t == SMELT_BF16; }

int64_t kir_buffer_elem_bytes(const kir_buffer *b)
{
    return b->workgroup && kir_is_half(b->type) ? 4 : (int64_t)smelt_dtype_size(b->type);
}

static bool is_compare(kir_op op) { return op >= KIR_EQ && op <= KIR_GE; }

static int grow(kir_kernel *k, void **arr, int *cap, int need, size_t elem)
{
    if (need <= *cap) return 1;
    int c = *cap ? *cap * 2 : 64;
    while (c < need) c *= 2;
    void *p = arena_alloc(k->arena, (size_t)c * elem);
    if (!p) {
        k->oom = true;
        return 0;
    }
    if (*cap) memcpy(p, *arr, (size_t)*cap * elem);
    *arr = p;
    *cap = c;
    return 1;
}

kir_kernel *kir_kernel_new(arena *a, int id, int64_t n_workgroups, const char *comment)
{
    kir_kernel *k = arena_alloc(a, sizeof *k);
    if (!k) return NULL;
    k->arena = a;
    k->id = id;
    k->n_workgroups = n_workgroups;
    k->wg_size = 1;
    k->comment = arena_strdup(a, comment ? comment : "");
    k->n_vals = 1; /* value 0 is "none" */
    if (!grow(k, (void **)&k->vals, &k->cap_vals, 1, sizeof(kir_value))) return NULL;
    return k;
}

int kir_buffer_add(kir_kernel *k, smelt_dtype type, int64_t numel, int tensor, bool read, bool written)
{
    if (!grow(k, (void **)&k->bufs, &k->cap_bufs, k->n_bufs + 1, sizeof(kir_buffer))) return 0;
    k->bufs[k->n_bufs] = (kir_buffer){.type = type, .numel = numel, .tensor = tensor, .read = read, .written = written,
                                      .span_hi = numel};
    return k->n_bufs++;
}

void kir_note_access(kir_kernel *k, int buf, kir_val at, int rank, const int64_t *dim, const kir_val *idx)
{
    if (rank < 1 || rank > KIR_BOX_RANK || !at) return;
    if (!grow(k, (void **)&k->accesses, &k->cap_accesses, k->n_accesses + 1, sizeof(kir_access))) return;
    kir_access *a = &k->accesses[k->n_accesses++];
    *a = (kir_access){.buf = buf, .at = at, .rank = rank};
    for (int d = 0; d < rank; d++) {
        a->dim[d] = dim[d];
        a->idx[d] = idx[d];
    }
}

int kir_smem_add(kir_kernel *k, smelt_dtype type, int64_t numel)
{
    int b = kir_buffer_add(k, type, numel, -1, true, true);
    k->bufs[b].workgroup = true;
    return b;
}



static kir_val new_value(kir_kernel *k, kir_op op, smelt_dtype type)
{
    if (!grow(k, (void **)&k->vals, &k->cap_vals, k->n_vals + 1, sizeof(kir_value))) return 0;
    kir_value *v = &k->vals[k->n_vals];
    memset(v, 0, sizeof *v);
    v->op = op;
    v->type = type;
    v->def = -1;
    return k->n_vals++;
}

static int add_stmt(kir_kernel *k, kir_stmt s)
{
    if (!grow(k, (void **)&k->stmts, &k->cap_stmts, k->n_stmts + 1, sizeof(kir_stmt))) return -1;
    k->stmts[k->n_stmts] = s;
    return k->n_stmts++;
}

/* A value computed by a statement at the current point. */
static kir_val def_value(kir_kernel *k, kir_op op, smelt_dtype type, kir_val a, kir_val b, kir_val c)
{
    kir_val v = new_value(k, op, type);
    if (!v) return 0;
    k->vals[v].a = a;
    k->vals[v].b = b;
    k->vals[v].c = c;
    int s = add_stmt(k, (kir_stmt){.kind = KS_DEF, .val = v});
    k->vals[v].def = s;
    return v;
}

/* Reuse an identical constant so the emitted code and folding stay small: the
 * last one made with these bits (a table by hash, checked on use: a value may
 * since have been rewritten), else one among the newest values. A walk over
 * every value of a big kernel for each new constant was 8% of a ResNet-18
 * compile. */
#define KIR_CONST_WALK 256

static unsigned const_hash(smelt_dtype type, uint64_t bits)
{
    uint64_t h = (bits ^ ((uint64_t)type << 56)) * 0x9E3779B97F4A7C15u;
    return (unsigned)(h >> 56) % KIR_CONST_CACHE;
}

static kir_val const_find(kir_kernel *k, smelt_dtype type, uint64_t bits, bool is_float)
{
    kir_val c = k->const_seen[const_hash(type, bits)];
    for (int j = k->n_vals - 1, walked = 0; walked <= KIR_CONST_WALK; j--, walked++) {
        kir_val v = walked == 0 ? c : j;
        if (v <= 0 || v >= k->n_vals) {
            if (walked) break;
            continue;
        }
        const kir_value *x = &k->vals[v];
        uint64_t xb;
        if (is_float) memcpy(&xb, &x->imm.f, sizeof xb);
        else xb = (uint64_t)x->imm.i;
        if (x->op == KIR_CONST && x->type == type && xb == bits) return v;
    }
    return 0;
}

static kir_val const_new(kir_kernel *k, smelt_dtype type, uint64_t bits)
{
    kir_val v = new_value(k, KIR_CONST, type);
    if (v) k->const_seen[const_hash(type, bits)] = v;
    return v;
}

kir_val kir_const_f(kir_kernel *k, smelt_dtype type, double f)
{
    if (!kir_is_float(type)) return kir_const_i(k, type, (int64_t)f);
    if (type == SMELT_F32) f = (double)(float)f;
    uint64_t bits;
    memcpy(&bits, &f, sizeof bits);
    kir_val v = const_find(k, type, bits, true);
    if (v) return v;
    if ((v = const_new(k, type, bits))) k->vals[v].imm.f = f;
    return v;
}

kir_val kir_const_i(kir_kernel *k, smelt_dtype type, int64_t i)
{
    if (kir_is_float(type)) return kir_const_f(k, type, (double)i);
    if (type == SMELT_BOOL) i = i != 0;
    kir_val v = const_find(k, type, (uint64_t)i, false);
    if (v) return v;
    if ((v = const_new(k, type, (uint64_t)i))) k->vals[v].imm.i = i;
    return v;
}

kir_val kir_wg(kir_kernel *k)
{
    for (int i = 1; i < k->n_vals; i++)
        if (k->vals[i].op == KIR_WG) return i;
    return new_value(k, KIR_WG, SMELT_I64);
}

void kir_barrier(kir_kernel *k) { add_stmt(k, (kir_stmt){.kind = KS_BARRIER}); }

kir_val kir_lid(kir_kernel *k)
{
    for (int i = 1; i < k->n_vals; i++)
        if (k->vals[i].op == KIR_LID) return i;
    return new_value(k, KIR_LID, SMELT_I64);
}

kir_val kir_load(kir_kernel *k, int buf, kir_val idx)
{
    kir_val v = def_value(k, KIR_LOAD, k->bufs[buf].type, idx, 0, 0);
    if (v) k->vals[v].buf = buf;
    return v;
}

void kir_prefetch(kir_kernel *k, int buf, kir_val idx)
{
    add_stmt(k, (kir_stmt){.kind = KS_PREFETCH, .buf = buf, .idx = idx});
}

void kir_store(kir_kernel *k, int buf, kir_val idx, kir_val v)
{
    add_stmt(k, (kir_stmt){.kind = KS_STORE, .buf = buf, .idx = idx, .val = v});
}

static double fold_f(kir_op op, double a)
{
    switch (op) {
    case KIR_NEG: return -a;
    case KIR_ABS: return fabs(a);
    case KIR_EXP: return exp(a);
    case KIR_LOG: return log(a);
    case KIR_SQRT: return sqrt(a);
    case KIR_FLOOR: return floor(a);
    case KIR_CEIL: return ceil(a);
    default: return NAN;
    }
}

kir_val kir_unary(kir_kernel *k, kir_op op, kir_val a)
{
    const kir_value *va = &k->vals[a];
    smelt_dtype t = op == KIR_ISNAN || op == KIR_ISINF ? SMELT_BOOL : va->type;
    if (va->op == KIR_CONST) {
        if (kir_is_float(t) && (op == KIR_NEG || op == KIR_ABS || op == KIR_FLOOR || op == KIR_CEIL))
            return kir_const_f(k, t, fold_f(op, va->imm.f));
        if (!kir_is_float(t) && op == KIR_NEG) return kir_const_i(k, t, -va->imm.i);
        if (t == SMELT_BOOL && op == KIR_NOT) return kir_const_i(k, t, !va->imm.i);
    }
    return def_value(k, op, t, a, 0, 0);
}

static bool is_int_const(const kir_kernel *k, kir_val v, int64_t c)
{
    const kir_value *x = &k->vals[v];
    return x->op == KIR_CONST && !kir_is_float(x->type) && x->imm.i == c;
}

/* x where a is (x / c) * c (either operand order) and b is x % c, for one
 * value x and one constant c, else 0: then a + b is x, for every x (C's division
 * truncates, and its remainder takes the sign that makes this exact). A
 * reshape's index is a linear index unravelled over one shape and read
 * through another (lower_unravel, lower_linear); where the shapes share a
 * dim this gives the linear index back, which kir_stride can follow. */
static bool range_of(const kir_kernel *k, kir_val v, int depth, int64_t *lo, int64_t *hi);
static kir_val strip_multiples(const kir_kernel *k, kir_val x, int64_t n);

/* The same pair after kir_binary split the division: a is (p + y / n) * n
 * (either operand order) and b is y % n, for a constant n > 0; then a + b is
 * p * n + y. Returns n (p and y set), else 0. */
static int64_t split_div_mod_pair(const kir_kernel *k, kir_val a, kir_val b, kir_val *p, kir_val *y)
{
    const kir_value *m = &k->vals[a], *r = &k->vals[b];
    if (m->op != KIR_MUL || r->op != KIR_MOD || !kir_is_const(k, r->b)) return 0;
    int64_t n = k->vals[r->b].imm.i;
    kir_val s = kir_is_const(k, m->b) ? m->a : m->b, c = s == m->a ? m->b : m->a;
    if (n < 1 || !kir_is_const(k, c) || k->vals[c].imm.i != n || k->vals[s].op != KIR_ADD) return 0;
    for (int side = 0; side < 2; side++) {
        kir_val d = side ? k->vals[s].a : k->vals[s].b, o = side ? k->vals[s].b : k->vals[s].a;
        const kir_value *dv = &k->vals[d];
        if (dv->op == KIR_DIV && dv->a == r->a && kir_is_const(k, dv->b) && k->vals[dv->b].imm.i == n) {
            *p = o, *y = r->a;
            return n;
        }
    }
    return 0;
}

static kir_val div_mod_pair(const kir_kernel *k, kir_val a, kir_val b)
{
    const kir_value *m = &k->vals[a];
    if (m->op != KIR_MUL) return 0;
    kir_val d = k->vals[m->a].op == KIR_DIV ? m->a : m->b, c = d == m->a ? m->b : m->a;
    const kir_value *dv = &k->vals[d], *r = &k->vals[b];
    if (dv->op != KIR_DIV || !kir_is_const(k, c) || !kir_is_const(k, dv->b) || k->vals[c].imm.i != k->vals[dv->b].imm.i)
        return 0;
    int64_t n = k->vals[c].imm.i, lo, hi;
    if (r->op == KIR_MOD && kir_is_const(k, r->b) && k->vals[r->b].imm.i == n && n != 0 && r->a == dv->a) return dv->a;
    /* x % n as kir_binary folded it: the multiples of n taken out of x (n > 0) */
    if (n < 1) return 0;
    kir_val y = strip_multiples(k, dv->a, n);
    if (y == dv->a) return 0;
    if (r->op == KIR_MOD) return kir_is_const(k, r->b) && k->vals[r->b].imm.i == n && r->a == y ? dv->a : 0;
    return b == y && range_of(k, y, 0, &lo, &hi) && lo >= 0 && hi < n ? dv->a : 0;
}

/* An interval [*lo, *hi] that integer value v lies in on every execution, as
 * far as a short walk of its operands shows (constants, loop values by their
 * bounds, the workgroup index, + - and * of bounded values, min, max, and division
 * and remainder by a positive constant); false when unknown. Loop bounds are
 * fixed when the loop opens, and a loop value is only used inside it. The
 * bounds stay far from overflow (|x| < 2^40). The walk goes 12 deep: the
 * per-head packs of K and V for attention (Q K^T, then softmax V) read the
 * split's (row*768 + col) % 768 and / 768 with col bounded only through three
 * divisions of the loop value and that loop's min bound (test_clean.c), past
 * the 8 it had; the % and / per element went. gpt2_block at 1 thread, V's pack,
 * three interleaved rounds of 20 runs on a loaded host: 0.17, 0.19, 0.59 ->
 * 0.07, 0.08, 0.07 ms per run; emitting C for resnet18 and gpt2_block took
 * about the same CPU time. */
#define KIR_RANGE_MAX ((int64_t)1 << 40)
static bool range_of(const kir_kernel *k, kir_val v, int depth, int64_t *lo, int64_t *hi)
{
    const kir_value *x = &k->vals[v];
    if (depth > 12 || kir_is_float(x->type)) return false;
    int64_t al, ah, bl, bh;
    switch (x->op) {
    case KIR_CONST: *lo = *hi = x->imm.i; break;
    case KIR_WG:
        if (k->n_workgroups < 1) return false;
        *lo = 0, *hi = k->n_workgroups - 1;
        break;
    case KIR_LOOPVAR: {
        const kir_stmt *s = &k->stmts[x->def];
        if (!kir_is_const(k, s->step) || k->vals[s->step].imm.i < 1 || !range_of(k, s->lo, depth + 1, &al, &ah) ||
            !range_of(k, s->hi, depth + 1, &bl, &bh))
            return false;
        /* a constant start: the last value the step reaches below hi */
        int64_t st = k->vals[s->step].imm.i;
        *lo = al, *hi = al == ah && bh - 1 >= al ? al + (bh - 1 - al) / st * st : bh - 1;
        break;
    }
    case KIR_ADD: case KIR_SUB: case KIR_MUL: case KIR_MIN: case KIR_MAX: case KIR_DIV: case KIR_MOD:
        if (!range_of(k, x->a, depth + 1, &al, &ah) || !range_of(k, x->b, depth + 1, &bl, &bh)) return false;
        if (x->op == KIR_MUL && al == ah && bl != bh) { /* the constant factor second */
            int64_t t = al;
            al = bl, ah = bh, bl = bh = t;
        }
        if (x->op == KIR_ADD) *lo = al + bl, *hi = ah + bh;
        else if (x->op == KIR_SUB) *lo = al - bh, *hi = ah - bl;
        else if (x->op == KIR_MIN) *lo = al < bl ? al : bl, *hi = ah < bh ? ah : bh;
        else if (x->op == KIR_MAX) *lo = al > bl ? al : bl, *hi = ah > bh ? ah : bh;
        else if (bl != bh || bl < 1 || al < 0) return false; /* the rest: a >= 0 by a positive constant */
        else if (x->op == KIR_MUL) *lo = al * bl, *hi = ah * bl;
        else if (x->op == KIR_DIV) *lo = al / bl, *hi = ah / bl;
        else *lo = ah < bl ? al : 0, *hi = ah < bl ? ah : bl - 1;
        break;
    default: return false;
    }
    return *lo > -KIR_RANGE_MAX && *hi < KIR_RANGE_MAX && *lo <= *hi;
}

/* x % (c * d) where a is ((x / c) % d) * c (either operand order of the
 * product) and b is x % c, for positive constants c and d, else 0: a linear
 * index unravelled over three or more dims and put together again gives its
 * inner dims back as one remainder (x / c / d is x / (c * d) for truncating
 * division, so the identity holds for every x). */
static kir_val div_mod_mod(kir_kernel *k, kir_val a, kir_val b)
{
    const kir_value *m = &k->vals[a], *r = &k->vals[b];
    if (m->op != KIR_MUL || r->op != KIR_MOD || !kir_is_const(k, r->b)) return 0;
    int64_t c = k->vals[r->b].imm.i;
    kir_val md = kir_is_const(k, m->b) ? m->a : m->b, cv = md == m->a ? m->b : m->a;
    if (c < 1 || !kir_is_const(k, cv) || k->vals[cv].imm.i != c || k->vals[md].op != KIR_MOD) return 0;
    const kir_value *o = &k->vals[md], *dv = &k->vals[o->a];
    if (!kir_is_const(k, o->b) || dv->op != KIR_DIV || dv->a != r->a || !kir_is_const(k, dv->b) ||
        k->vals[dv->b].imm.i != c)
        return 0;
    int64_t d = k->vals[o->b].imm.i;
    if (d < 1 || d > KIR_RANGE_MAX / c) return 0;
    return kir_binary(k, KIR_MOD, r->a, kir_const_i(k, r->type, c * d));
}

static bool nonneg(const kir_kernel *k, kir_val v)
{
    int64_t lo, hi;
    return range_of(k, v, 0, &lo, &hi) && lo >= 0;
}

/* Whether v is a multiple of the positive constant n: a constant, or a
 * product with a constant factor, that n divides, or a loop value whose
 * constant start and step n divides. */
static bool multiple_of(const kir_kernel *k, kir_val v, int64_t n)
{
    const kir_value *x = &k->vals[v];
    if (x->op == KIR_CONST) return x->imm.i % n == 0;
    if (x->op == KIR_LOOPVAR) { /* a loop from a multiple of n in steps of a multiple of n */
        const kir_stmt *s = &k->stmts[x->def];
        return kir_is_const(k, s->lo) && k->vals[s->lo].imm.i % n == 0 && kir_is_const(k, s->step) &&
               k->vals[s->step].imm.i % n == 0;
    }
    if (x->op != KIR_MUL) return false;
    return (kir_is_const(k, x->a) && k->vals[x->a].imm.i % n == 0) ||
           (kir_is_const(k, x->b) && k->vals[x->b].imm.i % n == 0);
}

static kir_val div_multiple(kir_kernel *k, kir_val m, int64_t n);

kir_val kir_binary(kir_kernel *k, kir_op op, kir_val a, kir_val b)
{
    const kir_value *va = &k->vals[a], *vb = &k->vals[b];
    smelt_dtype t = is_compare(op) ? SMELT_BOOL : va->type;
    /* Fold integer index arithmetic; floats are left to the target compiler
     * so that rounding matches what the kernel would compute. */
    if (!kir_is_float(va->type)) {
        if (va->op == KIR_CONST && vb->op == KIR_CONST) {
            int64_t x = va->imm.i, y = vb->imm.i, r;
            switch (op) {
            case KIR_ADD: r = x + y; break;
            case KIR_SUB: r = x - y; break;
            case KIR_MUL: r = x * y; break;
            case KIR_DIV: if (!y) goto emit; r = x / y; break;
            case KIR_MOD: if (!y) goto emit; r = x % y; break;
            case KIR_MIN: r = x < y ? x : y; break;
            case KIR_MAX: r = x > y ? x : y; break;
            case KIR_EQ: r = x == y; break;
            case KIR_NE: r = x != y; break;
            case KIR_LT: r = x < y; break;
            case KIR_LE: r = x <= y; break;
            case KIR_GT: r = x > y; break;
            case KIR_GE: r = x >= y; break;
            default: goto emit;
            }
            return kir_const_i(k, t, r);
        }
        if (op == KIR_ADD && is_int_const(k, a, 0)) return b;
        if ((op == KIR_ADD || op == KIR_SUB) && is_int_const(k, b, 0)) return a;
        if (op == KIR_MUL && (is_int_const(k, a, 0) || is_int_const(k, b, 0))) return kir_const_i(k, t, 0);
        if (op == KIR_MUL && is_int_const(k, a, 1)) return b;
        if ((op == KIR_MUL || op == KIR_DIV) && is_int_const(k, b, 1)) return a;
        if (op == KIR_MOD && is_int_const(k, b, 1)) return kir_const_i(k, t, 0);
        /* x % n and x / n for x >= 0 and a positive constant n: x itself and
         * 0 where x < n; (y + m) % n is y % n where m is a multiple of n and
         * both are >= 0 (an index of an inner dim read through a reshape or a
         * broadcast, from the linear index of the whole element). */
        if ((op == KIR_MOD || op == KIR_DIV) && kir_is_const(k, b) && vb->imm.i > 0) {
            int64_t n = vb->imm.i, lo, hi;
            if (range_of(k, a, 0, &lo, &hi) && lo >= 0 && hi < n) return op == KIR_MOD ? a : kir_const_i(k, t, 0);
            if (va->op == KIR_ADD && nonneg(k, va->a) && nonneg(k, va->b)) {
                kir_val m = multiple_of(k, va->b, n) ? va->b : multiple_of(k, va->a, n) ? va->a : 0;
                kir_val y = m == va->b ? va->a : va->b;
                if (m && op == KIR_MOD) return kir_binary(k, KIR_MOD, y, b);
                /* (m + y) / n is m / n + y / n (and y / n is 0 where y < n) */
                if (m) return kir_add(k, div_multiple(k, m, n), kir_binary(k, KIR_DIV, y, b));
            }
        }
        /* (x / c) / d is x / (c * d) for positive constants (truncating division) */
        if (op == KIR_DIV && kir_is_const(k, b) && vb->imm.i > 0 && va->op == KIR_DIV && kir_is_const(k, va->b) &&
            k->vals[va->b].imm.i > 0 && vb->imm.i <= KIR_RANGE_MAX / k->vals[va->b].imm.i)
            return kir_binary(k, KIR_DIV, va->a, kir_const_i(k, t, vb->imm.i * k->vals[va->b].imm.i));
        if (op == KIR_ADD) {
            kir_val x = div_mod_pair(k, a, b);
            if (!x) x = div_mod_pair(k, b, a);
            if (!x) x = div_mod_mod(k, a, b);
            if (!x) x = div_mod_mod(k, b, a);
            if (x) return x;
            kir_val p = 0, y = 0;
            int64_t n = split_div_mod_pair(k, a, b, &p, &y);
            if (!n) n = split_div_mod_pair(k, b, a, &p, &y);
            if (n) return kir_add(k, kir_mul(k, p, kir_const_i(k, t, n)), y);
        }
    }
emit:
    return def_value(k, op, t, a, b, 0);
}

/* x with the terms that are multiples of n (n > 0) taken out of its sums,
 * where both parts are >= 0: (y + m) % n is y % n. */
static kir_val strip_multiples(const kir_kernel *k, kir_val x, int64_t n)
{
    for (int depth = 0; depth < 8; depth++) {
        const kir_value *v = &k->vals[x];
        if (v->op != KIR_ADD || !nonneg(k, v->a) || !nonneg(k, v->b)) break;
        if (multiple_of(k, v->b, n)) x = v->a;
        else if (multiple_of(k, v->a, n)) x = v->b;
        else break;
    }
    return x;
}

/* m / n for m >= 0 that multiple_of(m, n) accepted: the constant, the
 * product with its constant factor divided, or the loop value's division. */
static kir_val div_multiple(kir_kernel *k, kir_val m, int64_t n)
{
    kir_val a = k->vals[m].a, b = k->vals[m].b;
    smelt_dtype t = k->vals[m].type;
    if (k->vals[m].op == KIR_CONST) return kir_const_i(k, t, k->vals[m].imm.i / n);
    if (k->vals[m].op == KIR_LOOPVAR) return def_value(k, KIR_DIV, t, m, kir_const_i(k, t, n), 0); /* exact */
    if (kir_is_const(k, b) && k->vals[b].imm.i % n == 0) return kir_binary(k, KIR_MUL, a, kir_const_i(k, t, k->vals[b].imm.i / n));
    return kir_binary(k, KIR_MUL, kir_const_i(k, t, k->vals[a].imm.i / n), b);
}

kir_val kir_select(kir_kernel *k, kir_val cond, kir_val a, kir_val b)
{
    if (k->vals[cond].op == KIR_CONST) return k->vals[cond].imm.i ? a : b;
    if (a == b) return a;
    return def_value(k, KIR_SELECT, k->vals[a].type, cond, a, b);
}

/* Whether float value v is an integer (or NaN or inf): rounded, an integer
 * cast to float, an integral constant, or sums, differences, minima, maxima
 * and selects of those. */
static bool integral_float(const kir_kernel *k, kir_val v, int depth)
{
    const kir_value *x = &k->vals[v];
    switch (x->op) {
    case KIR_ROUND: case KIR_FLOOR: case KIR_CEIL: return true;
    case KIR_CAST: return !kir_is_float(k->vals[x->a].type);
    case KIR_CONST: return x->imm.f == floor(x->imm.f);
    case KIR_ADD: case KIR_SUB: case KIR_MIN: case KIR_MAX:
        return depth < 6 && integral_float(k, x->a, depth + 1) && integral_float(k, x->b, depth + 1);
    case KIR_SELECT: return depth < 6 && integral_float(k, x->b, depth + 1) && integral_float(k, x->c, depth + 1);
    default: return false;
    }
}

/* Whether v is clamp(y, lo, hi) (a min and a max by constants, either order)
 * with lo..hi inside the integer type t's range and y integral. */
static bool clamped_integral(const kir_kernel *k, kir_val v, smelt_dtype t)
{
    double tlo = t == SMELT_I8 ? INT8_MIN : t == SMELT_I16 ? INT16_MIN : 0;
    double thi = t == SMELT_U8 ? UINT8_MAX : t == SMELT_I8 ? INT8_MAX : t == SMELT_U16 ? UINT16_MAX : INT16_MAX;
    const kir_value *o = &k->vals[v];
    if ((o->op != KIR_MIN && o->op != KIR_MAX) || k->vals[o->b].op != KIR_CONST) return false;
    const kir_value *i = &k->vals[o->a];
    if ((i->op != KIR_MIN && i->op != KIR_MAX) || i->op == o->op || k->vals[i->b].op != KIR_CONST) return false;
    double c1 = k->vals[o->b].imm.f, c2 = k->vals[i->b].imm.f;
    return c1 >= tlo && c1 <= thi && c2 >= tlo && c2 <= thi && integral_float(k, i->a, 0);
}

kir_val kir_cast(kir_kernel *k, smelt_dtype to, kir_val a)
{
    const kir_value *va = &k->vals[a];
    if (va->type == to) return a;
    /* float x clamped into an 8/16-bit type's range and integral, cast to that
     * type and back: x itself (NaN casts to 0), with no integer between, so
     * the loop around it stays in float vector lanes */
    if (va->op == KIR_CAST && k->vals[va->a].type == to && kir_is_float(to) && !kir_is_half(to) &&
        (va->type == SMELT_U8 || va->type == SMELT_I8 || va->type == SMELT_U16 || va->type == SMELT_I16) &&
        clamped_integral(k, va->a, va->type)) {
        kir_val x = va->a;
        return kir_select(k, kir_unary(k, KIR_ISNAN, x), kir_const_f(k, to, 0.0), x);
    }
    if (va->op == KIR_CONST) {
        if (kir_is_float(va->type) && !kir_is_float(to)) {
            if (to == SMELT_BOOL) return kir_const_i(k, to, va->imm.f != 0);
        } else if (kir_is_half(to)) {
            float x = kir_is_float(va->type) ? (float)va->imm.f : (float)va->imm.i;
            return kir_const_f(k, to, smelt_half_to_float(to, smelt_float_to_half(to, x)));
        } else if (kir_is_float(va->type)) {
            return kir_const_f(k, to, va->imm.f);
        } else if (kir_is_float(to)) {
            return kir_const_f(k, to, (double)va->imm.i);
        } else if (to == SMELT_I64 || to == SMELT_BOOL) {
            return kir_const_i(k, to, va->imm.i);
        }
    }
    return def_value(k, KIR_CAST, to, a, 0, 0);
}

static void open_block(kir_kernel *k, int stmt)
{
    if (++k->depth > KIR_MAX_DEPTH) k->oom = true;
    else k->scope[k->depth] = stmt;
}

kir_val kir_loop_begin(kir_kernel *k, kir_val lo, kir_val hi, kir_val step)
{
    kir_val v = new_value(k, KIR_LOOPVAR, SMELT_I64);
    if (!v) return 0;
    int s = add_stmt(k, (kir_stmt){.kind = KS_LOOP_BEGIN, .val = v, .lo = lo, .hi = hi, .step = step});
    k->vals[v].def = s;
    open_block(k, s);
    return v;
}

kir_val kir_loop_begin_parallel(kir_kernel *k, kir_val lo, kir_val hi)
{
    kir_val v = kir_loop_begin(k, lo, hi, kir_idx(k, 1));
    if (v) k->stmts[k->vals[v].def].parallel = true;
    return v;
}

static int64_t stride_of(const kir_kernel *k, kir_val v, kir_val var, int depth)
{
    const kir_value *x = &k->vals[v];
    if (v == var) return 1;
    if (x->op == KIR_CONST || x->op == KIR_WG || x->op == KIR_LID || x->op == KIR_LOOPVAR || x->op == KIR_VARGET)
        return 0;
    if (depth > 64) return KIR_STRIDE_UNKNOWN;
    int64_t a = x->a ? stride_of(k, x->a, var, depth + 1) : 0;
    int64_t b = kir_op_arity(x->op) > 1 && x->b ? stride_of(k, x->b, var, depth + 1) : 0;
    int64_t cc = kir_op_arity(x->op) > 2 && x->c ? stride_of(k, x->c, var, depth + 1) : 0;
    if (a == KIR_STRIDE_UNKNOWN || b == KIR_STRIDE_UNKNOWN || cc == KIR_STRIDE_UNKNOWN) return KIR_STRIDE_UNKNOWN;
    switch (x->op) {
    case KIR_ADD: return a + b;
    case KIR_SUB: return a - b;
    case KIR_CAST: return a;
    case KIR_MUL:
        if (!a && !b) return 0;
        if (k->vals[x->a].op == KIR_CONST && !a) return k->vals[x->a].imm.i * b;
        if (k->vals[x->b].op == KIR_CONST && !b) return a * k->vals[x->b].imm.i;
        return KIR_STRIDE_UNKNOWN;
    default: return a || b || cc ? KIR_STRIDE_UNKNOWN : 0;
    }
}

int64_t kir_stride(const kir_kernel *k, kir_val v, kir_val var) { return stride_of(k, v, var, 0); }

kir_val kir_loop_begin_stream(kir_kernel *k, int64_t n)
{
    kir_val v = kir_loop_begin_parallel(k, kir_idx(k, 0), kir_idx(k, n));
    if (v) k->stmts[k->vals[v].def].stream = true;
    return v;
}

kir_val kir_loop_begin_deint(kir_kernel *k, kir_val lo, kir_val hi)
{
    kir_val v = kir_loop_begin_parallel(k, lo, hi);
    if (v) k->stmts[k->vals[v].def].deint = true;
    return v;
}

kir_val kir_loop_begin_transpose(kir_kernel *k, kir_val lo, kir_val hi)
{
    kir_val v = kir_loop_begin_parallel(k, lo, hi);
    if (v) k->stmts[k->vals[v].def].transpose = true;
    return v;
}

kir_val kir_loop_begin_masked(kir_kernel *k, int64_t n)
{
    kir_val v = kir_loop_begin_parallel(k, kir_idx(k, 0), kir_idx(k, n));
    if (v) k->stmts[k->vals[v].def].masked = true;
    return v;
}

kir_val kir_loop_begin_gemm(kir_kernel *k, kir_val kc)
{
    kir_val v = kir_loop_begin(k, kir_idx(k, 0), kc, kir_idx(k, 1));
    if (v) k->stmts[k->vals[v].def].gemm = true;
    return v;
}

void kir_loop_end(kir_kernel *k)
{
    add_stmt(k, (kir_stmt){.kind = KS_LOOP_END});
    if (k->depth > 0) k->depth--;
}

void kir_if_begin(kir_kernel *k, kir_val cond)
{
    open_block(k, add_stmt(k, (kir_stmt){.kind = KS_IF_BEGIN, .cond = cond}));
}

void kir_else(kir_kernel *k)
{
    int s = add_stmt(k, (kir_stmt){.kind = KS_ELSE});
    if (k->depth > 0 && k->depth <= KIR_MAX_DEPTH) k->scope[k->depth] = s;
}

void kir_if_end(kir_kernel *k)
{
    add_stmt(k, (kir_stmt){.kind = KS_IF_END});
    if (k->depth > 0) k->depth--;
}

int kir_scope(const kir_kernel *k) { return k->depth == 0 || k->depth > KIR_MAX_DEPTH ? -1 : k->scope[k->depth]; }

bool kir_scope_open(const kir_kernel *k, int scope)
{
    if (scope < 0) return true;
    for (int d = 1; d <= k->depth && d <= KIR_MAX_DEPTH; d++)
        if (k->scope[d] == scope) return true;
    return false;
}

int kir_var_new(kir_kernel *k, smelt_dtype type, kir_val init)
{
    if (!grow(k, (void **)&k->vars, &k->cap_vars, k->n_vars + 1, sizeof(kir_var))) return 0;
    k->vars[k->n_vars].type = type;
    int var = k->n_vars++;
    add_stmt(k, (kir_stmt){.kind = KS_VAR_SET, .var = var, .val = init});
    return var;
}

kir_val kir_var_get(kir_kernel *k, int var)
{
    kir_val v = def_value(k, KIR_VARGET, k->vars[var].type, 0, 0, 0);
    if (v) k->vals[v].var = var;
    return v;
}

void kir_var_set(kir_kernel *k, int var, kir_val v)
{
    add_stmt(k, (kir_stmt){.kind = KS_VAR_SET, .var = var, .val = v});
}
