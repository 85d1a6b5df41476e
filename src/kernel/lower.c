/*
 * lower.c — the lowering context: loads, stores, loop nests, and the driver
 * that turns one graph node into verified kernels.
 *
 * requires: a graph with inferred shapes and dtypes.
 * guarantees: every kernel appended to the program passes kir_verify; every
 *             buffer of a kernel names the graph tensor (or scratch) it binds.
 */
#include "kernel/lower.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fuse/fuse.h"

/* An inlined element already computed in this kernel. */
typedef struct memo_entry {
    int tensor, rank, scope;
    kir_val idx[IR_MAX_RANK];
    kir_val val;
} memo_entry;

struct lower_state {
    lower_program *p;
    const fuse_plan *fp;  /* NULL: no fusion */
    const fuse_region *region;
    int *tensor_buf;      /* per tensor (and scratch): buffer index in c->k, or -1 */
    int n_slots;
    memo_entry *memo;
    int n_memo, cap_memo;
    bool fill_only;       /* an insert's fill kernel: its inserted inputs are never read */
};

/* Elements per workgroup that amortize a thread-pool hand-off. */
#define LOWER_WG_WORK 16384

void lower_program_init(lower_program *p, arena *a)
{
    memset(p, 0, sizeof *p);
    p->arena = a;
}

void lower_program_free(lower_program *p)
{
    free(p->kernels);
    free(p->kernel_node);
    free(p->scratch_type);
    free(p->scratch_numel);
    memset(p, 0, sizeof *p);
}

static int slot_count(const lower_ctx *c) { return c->g->n_tensors + c->st->p->n_scratch; }

static int ensure_slots(lower_ctx *c)
{
    int need = slot_count(c);
    if (need <= c->st->n_slots) return 1;
    int *m = realloc(c->st->tensor_buf, sizeof(int) * (size_t)need);
    if (!m) return 0;
    for (int i = c->st->n_slots; i < need; i++) m[i] = -1;
    c->st->tensor_buf = m;
    c->st->n_slots = need;
    return 1;
}

/* "Conv 'conv1' + Relu 'relu1'": the region's materialized nodes. */
static void kernel_comment(const lower_ctx *c, char *buf, size_t cap)
{
    const fuse_region *r = c->st->region;
    size_t len = (size_t)snprintf(buf, cap, "%s '%s'", op_get(c->n->op)->name, c->n->name);
    for (int i = 0; r && i < r->n_nodes && len < cap; i++) {
        const ir_node *n = &c->g->nodes[r->nodes[i]];
        if (n == c->n) continue;
        len += (size_t)snprintf(buf + len, cap - len, " + %s", op_get(n->op)->name);
    }
}

kir_kernel *lower_kernel_begin(lower_ctx *c, int64_t n_workgroups)
{
    lower_program *p = c->st->p;
    char comment[256];
    kernel_comment(c, comment, sizeof comment);
    kir_kernel *k = kir_kernel_new(p->arena, p->n_kernels, n_workgroups, comment);
    if (!k || !ensure_slots(c)) return NULL;
    if (p->n_kernels == p->cap_kernels) {
        int cap = p->cap_kernels ? p->cap_kernels * 2 : 64;
        kir_kernel **ks = realloc(p->kernels, sizeof(*ks) * (size_t)cap);
        if (!ks) return NULL;
        p->kernels = ks;
        int *kn = realloc(p->kernel_node, sizeof(int) * (size_t)cap);
        if (!kn) return NULL;
        p->kernel_node = kn;
        p->cap_kernels = cap;
    }
    p->kernels[p->n_kernels] = k;
    p->kernel_node[p->n_kernels] = (int)(c->n - c->g->nodes);
    p->n_kernels++;
    for (int i = 0; i < c->st->n_slots; i++) c->st->tensor_buf[i] = -1;
    c->st->n_memo = 0;
    c->k = k;
    return k;
}

static int buffer_for(lower_ctx *c, int slot, smelt_dtype type, int64_t numel, bool write)
{
    int b = c->st->tensor_buf[slot];
    if (b < 0) {
        b = kir_buffer_add(c->k, type, numel, slot, !write, write);
        c->st->tensor_buf[slot] = b;
    } else if (write) {
        c->k->bufs[b].written = true;
    } else {
        c->k->bufs[b].read = true;
    }
    return b;
}

kir_val lower_linear(kir_kernel *k, const ir_shape *s, const kir_val *idx)
{
    kir_val lin = kir_idx(k, 0);
    int64_t stride = 1;
    for (int d = s->rank - 1; d >= 0; d--) {
        if (s->dim[d] != 1) lin = kir_add(k, kir_mul(k, idx[d], kir_idx(k, stride)), lin);
        stride *= s->dim[d];
    }
    return lin;
}

void lower_unravel(kir_kernel *k, const ir_shape *s, kir_val linear, kir_val *idx)
{
    int outer = 0; /* the outermost dim that is not 1 takes what is left (no dead division) */
    while (outer < s->rank - 1 && s->dim[outer] == 1) outer++;
    for (int d = s->rank - 1; d >= 0; d--) {
        if (s->dim[d] == 1) {
            idx[d] = kir_idx(k, 0);
        } else if (d == outer) {
            idx[d] = linear;
        } else {
            idx[d] = kir_binary(k, KIR_MOD, linear, kir_idx(k, s->dim[d]));
            linear = kir_binary(k, KIR_DIV, linear, kir_idx(k, s->dim[d]));
        }
    }
}

kir_val lower_clamp(kir_kernel *k, kir_val v, int64_t hi)
{
    v = kir_binary(k, KIR_MIN, v, kir_idx(k, hi > 0 ? hi - 1 : 0));
    return kir_binary(k, KIR_MAX, v, kir_idx(k, 0));
}

/* A one-element constant is printed inline instead of being loaded. */
static kir_val inline_scalar(kir_kernel *k, const ir_tensor *t)
{
    if (kir_is_float(t->dtype)) return kir_const_f(k, t->dtype, ir_const_double(t, 0));
    return kir_const_i(k, t->dtype, ir_const_int(t, 0));
}

static kir_val element_of(lower_ctx *c, int out, const kir_val *idx);

static memo_entry *memo_find(lower_ctx *c, int t, int rank, const kir_val *idx)
{
    struct lower_state *st = c->st;
    for (int i = st->n_memo - 1; i >= 0; i--) {
        memo_entry *m = &st->memo[i];
        if (m->tensor != t || m->rank != rank || !kir_scope_open(c->k, m->scope)) continue;
        if (rank == 0 || memcmp(m->idx, idx, sizeof(kir_val) * (size_t)rank) == 0) return m;
    }
    return NULL;
}

static void memo_add(lower_ctx *c, int t, int rank, const kir_val *idx, kir_val v)
{
    struct lower_state *st = c->st;
    if (st->n_memo == st->cap_memo) {
        int cap = st->cap_memo ? st->cap_memo * 2 : 64;
        memo_entry *m = realloc(st->memo, sizeof(*m) * (size_t)cap);
        if (!m) return; /* memoization is an optimization: skip it */
        st->memo = m;
        st->cap_memo = cap;
    }
    memo_entry *m = &st->memo[st->n_memo++];
    memset(m, 0, sizeof *m);
    m->tensor = t;
    m->rank = rank;
    m->scope = kir_scope(c->k);
    if (rank) memcpy(m->idx, idx, sizeof(kir_val) * (size_t)rank);
    m->val = v;
}

/* Element idx of tensor t, computed by its (inlined) producer. */
static kir_val load_inline(lower_ctx *c, int t, const kir_val *idx)
{
    int rank = c->g->tensors[t].shape.rank;
    memo_entry *m = memo_find(c, t, rank, idx);
    if (m) return m->val;
    const ir_node *saved = c->n;
    c->n = &c->g->nodes[c->st->fp->inline_of[t]];
    int out = 0;
    while (c->n->out[out] != t) out++;
    kir_val v = element_of(c, out, idx);
    c->n = saved;
    memo_add(c, t, rank, idx, v);
    return v;
}

kir_val lower_load(lower_ctx *c, int i, const kir_val *idx)
{
    if (i >= c->n->n_in || c->n->in[i] < 0) return 0;
    int t = c->n->in[i];
    const ir_tensor *x = &c->g->tensors[t];
    if (c->st->fp && c->st->fp->inline_of[t] >= 0) return load_inline(c, t, idx);
    int64_t off[IR_MAX_RANK];
    if (c->st->fill_only && fuse_insert(c->g, c->n, i, off)) /* only selected where the fill is taken */
        return kir_is_float(x->dtype) ? kir_const_f(c->k, x->dtype, 0) : kir_const_i(c->k, x->dtype, 0);
    if (x->data && ir_tensor_numel(x) == 1) return inline_scalar(c->k, x);
    int b = buffer_for(c, t, x->dtype, ir_tensor_numel(x), false);
    return kir_load(c->k, b, lower_linear(c->k, &x->shape, idx));
}

bool lower_input_is_plain(const lower_ctx *c, int i)
{
    if (i >= c->n->n_in || c->n->in[i] < 0) return false;
    int t = c->n->in[i];
    int64_t off[IR_MAX_RANK];
    if (c->st->fp && c->st->fp->inline_of[t] >= 0) return false;
    if (c->st->fill_only && fuse_insert(c->g, c->n, i, off)) return false;
    return !(c->g->tensors[t].data && ir_tensor_numel(&c->g->tensors[t]) == 1);
}

kir_val lower_load_bcast(lower_ctx *c, int i, int rank, const kir_val *idx)
{
    if (i >= c->n->n_in || c->n->in[i] < 0) return 0;
    const ir_tensor *x = &c->g->tensors[c->n->in[i]];
    kir_val in_idx[IR_MAX_RANK];
    for (int d = 0; d < x->shape.rank; d++) {
        int od = d + rank - x->shape.rank;
        in_idx[d] = (x->shape.dim[d] == 1 || od < 0) ? kir_idx(c->k, 0) : idx[od];
    }
    return lower_load(c, i, in_idx);
}

void lower_store(lower_ctx *c, int o, const kir_val *idx, kir_val v)
{
    int t = c->n->out[o];
    const ir_tensor *x = &c->g->tensors[t];
    const fuse_plan *fp = c->st->fp;
    if (fp && fp->inline_of[t] >= 0) return; /* consumers recompute it */
    if (fp && fp->insert_into[t] >= 0) {
        /* Written straight into its block of the insert's output. */
        const ir_node *saved = c->n;
        const ir_node *ins = &c->g->nodes[fp->insert_into[t]];
        int i = 0;
        while (ins->in[i] != t) i++;
        int64_t off[IR_MAX_RANK];
        fuse_insert(c->g, ins, i, off);
        kir_val at[IR_MAX_RANK];
        for (int d = 0; d < x->shape.rank; d++) at[d] = kir_add(c->k, idx[d], kir_idx(c->k, off[d]));
        c->n = ins;
        lower_store(c, 0, at, v);
        c->n = saved;
        return;
    }
    if (fp && fp->epilogue_of[t] >= 0) {
        /* Continue into the epilogue node, with t's element in hand. */
        const ir_node *saved = c->n;
        const ir_node *e = &c->g->nodes[fp->epilogue_of[t]];
        kir_val in[64] = {0};
        c->n = e;
        for (int j = 0; j < e->n_in && j < 64; j++)
            in[j] = e->in[j] == t ? v : lower_load_bcast(c, j, x->shape.rank, idx);
        kir_val r = op_get(e->op)->scalar(c->k, e, in);
        lower_store(c, 0, idx, r);
        c->n = saved;
        return;
    }
    int b = buffer_for(c, t, x->dtype, ir_tensor_numel(x), true);
    kir_store(c->k, b, lower_linear(c->k, &x->shape, idx), v);
}

int lower_scratch(lower_ctx *c, smelt_dtype type, int64_t numel)
{
    lower_program *p = c->st->p;
    if (p->n_scratch == p->cap_scratch) {
        int cap = p->cap_scratch ? p->cap_scratch * 2 : 16;
        smelt_dtype *t = realloc(p->scratch_type, sizeof(*t) * (size_t)cap);
        if (!t) return -1;
        p->scratch_type = t;
        int64_t *n = realloc(p->scratch_numel, sizeof(*n) * (size_t)cap);
        if (!n) return -1;
        p->scratch_numel = n;
        p->cap_scratch = cap;
    }
    p->scratch_type[p->n_scratch] = type;
    p->scratch_numel[p->n_scratch] = numel;
    return p->n_scratch++;
}

kir_val lower_scratch_load(lower_ctx *c, int s, kir_val linear)
{
    lower_program *p = c->st->p;
    if (!ensure_slots(c)) return 0;
    int b = buffer_for(c, c->g->n_tensors + s, p->scratch_type[s], p->scratch_numel[s], false);
    return kir_load(c->k, b, linear);
}

void lower_scratch_store(lower_ctx *c, int s, kir_val linear, kir_val v)
{
    lower_program *p = c->st->p;
    if (!ensure_slots(c)) return;
    int b = buffer_for(c, c->g->n_tensors + s, p->scratch_type[s], p->scratch_numel[s], true);
    kir_store(c->k, b, linear, v);
}

static void parallel_rows(lower_ctx *c, const ir_shape *shape, int64_t work_per_elem, lower_body_fn body,
                          void *user)
{
    int r = shape->rank;
    int64_t numel = ir_shape_numel(shape);
    if (r == 0) {
        if (!lower_kernel_begin(c, 1)) return;
        body(c, NULL, user);
        return;
    }
    int64_t inner = shape->dim[r - 1];
    if (numel == 0) {
        lower_kernel_begin(c, 0); /* nothing to compute: an empty tensor */
        return;
    }
    int64_t outer = numel / inner;
    int64_t per_row = inner * (work_per_elem > 0 ? work_per_elem : 1);
    int64_t rows = per_row >= LOWER_WG_WORK ? 1 : (LOWER_WG_WORK + per_row - 1) / per_row;
    if (rows > outer) rows = outer > 0 ? outer : 1;
    int64_t n_wg = outer ? (outer + rows - 1) / rows : 0;
    kir_kernel *k = lower_kernel_begin(c, n_wg);
    if (!k) return;
    kir_val idx[IR_MAX_RANK];
    ir_shape outer_shape = *shape;
    outer_shape.rank = r - 1;
    bool row_loop = rows > 1;
    kir_val row;
    if (n_wg == 1 && rows >= outer) {
        row = row_loop ? kir_loop_begin(k, kir_idx(k, 0), kir_idx(k, outer), kir_idx(k, 1)) : kir_idx(k, 0);
    } else if (row_loop) {
        kir_val lo = kir_mul(k, kir_wg(k), kir_idx(k, rows));
        kir_val hi = kir_binary(k, KIR_MIN, kir_add(k, lo, kir_idx(k, rows)), kir_idx(k, outer));
        row = kir_loop_begin(k, lo, hi, kir_idx(k, 1));
    } else {
        row = kir_wg(k);
    }
    lower_unravel(k, &outer_shape, row, idx);
    idx[r - 1] = kir_loop_begin_parallel(k, kir_idx(k, 0), kir_idx(k, inner));
    body(c, idx, user);
    kir_loop_end(k);
    if (row_loop) kir_loop_end(k);
}

/* Stride of index value v per step of loop value `var`: 0 when v does not
 * depend on it, STRIDE_UNKNOWN when not affine (gathers, div/mod). */
#define STRIDE_UNKNOWN INT64_MIN

static int64_t stride_of(const kir_kernel *k, kir_val v, kir_val var, int depth)
{
    const kir_value *x = &k->vals[v];
    if (v == var) return 1;
    if (x->op == KIR_CONST || x->op == KIR_WG || x->op == KIR_LID || x->op == KIR_LOOPVAR || x->op == KIR_VARGET)
        return 0;
    if (depth > 64) return STRIDE_UNKNOWN;
    int64_t a = x->a ? stride_of(k, x->a, var, depth + 1) : 0;
    int64_t b = kir_op_arity(x->op) > 1 && x->b ? stride_of(k, x->b, var, depth + 1) : 0;
    int64_t cc = kir_op_arity(x->op) > 2 && x->c ? stride_of(k, x->c, var, depth + 1) : 0;
    if (a == STRIDE_UNKNOWN || b == STRIDE_UNKNOWN || cc == STRIDE_UNKNOWN) return STRIDE_UNKNOWN;
    switch (x->op) {
    case KIR_ADD: return a + b;
    case KIR_SUB: return a - b;
    case KIR_CAST: return a;
    case KIR_MUL:
        if (!a && !b) return 0;
        if (k->vals[x->a].op == KIR_CONST && !a) return k->vals[x->a].imm.i * b;
        if (k->vals[x->b].op == KIR_CONST && !b) return a * k->vals[x->b].imm.i;
        return STRIDE_UNKNOWN;
    default: return a || b || cc ? STRIDE_UNKNOWN : 0;
    }
}

/* Whether some load of the kernel walks memory with a stride other than 0
 * or 1 along the loop of `var`, i.e. the loop nest reads across rows. */
bool lower_reads_across(const kir_kernel *k, kir_val var)
{
    for (int i = 0; i < k->n_stmts; i++) {
        const kir_stmt *s = &k->stmts[i];
        if (s->kind != KS_DEF || k->vals[s->val].op != KIR_LOAD || k->bufs[k->vals[s->val].buf].workgroup) continue;
        int64_t st = stride_of(k, k->vals[s->val].a, var, 0);
        if (st != 0 && st != 1) return true;
    }
    return false;
}

int lower_one_long_dim(const ir_shape *s, uint32_t mask)
{
    int dim = -1;
    for (int d = 0; d < s->rank; d++) {
        if (!(mask & (1u << d)) || s->dim[d] == 1) continue;
        if (dim >= 0) return -1;
        dim = d;
    }
    return dim;
}

void lower_reduce_var(lower_ctx *c, int var, smelt_dtype dt, kir_op op, int64_t n, lower_elem_fn elem, void *user)
{
    kir_kernel *K = c->k;
    int64_t v = c->target->wg_size == 1 && kir_is_float(dt) ? c->target->vector_width : 0;
    int64_t nv = v >= 2 && n >= 2 * v ? n / v * v : 0;
    if (nv) {
        int lanes = kir_smem_add(K, dt, v);
        kir_val id = kir_const_f(K, dt, op == KIR_ADD ? 0.0 : op == KIR_MAX ? -INFINITY : INFINITY);
        kir_val q = kir_loop_begin_parallel(K, kir_idx(K, 0), kir_idx(K, v));
        kir_store(K, lanes, q, id);
        kir_loop_end(K);
        kir_val i0 = kir_loop_begin(K, kir_idx(K, 0), kir_idx(K, nv), kir_idx(K, v));
        q = kir_loop_begin_parallel(K, kir_idx(K, 0), kir_idx(K, v));
        kir_val e = elem(c, kir_add(K, i0, q), user);
        kir_store(K, lanes, q, kir_binary(K, op, kir_load(K, lanes, q), e));
        kir_loop_end(K);
        kir_loop_end(K);
        q = kir_loop_begin(K, kir_idx(K, 0), kir_idx(K, v), kir_idx(K, 1));
        kir_var_set(K, var, kir_binary(K, op, kir_var_get(K, var), kir_load(K, lanes, q)));
        kir_loop_end(K);
    }
    if (nv < n) {
        kir_val i = kir_loop_begin(K, kir_idx(K, nv), kir_idx(K, n), kir_idx(K, 1));
        kir_var_set(K, var, kir_binary(K, op, kir_var_get(K, var), elem(c, i, user)));
        kir_loop_end(K);
    }
}

int lower_mark(lower_ctx *c) { return c->st->p->n_kernels; }

void lower_rollback(lower_ctx *c, int mark)
{
    if (mark >= 0 && mark <= c->st->p->n_kernels) c->st->p->n_kernels = mark;
}

#define LOWER_TILE 64

/* A kernel over the last two dims in th x tw tiles, one row of tiles (th rows)
 * per workgroup: rows [i0, i1) of the workgroup, and the open loop over column
 * tiles [j0, j1). The leading dims of idx are set; the caller opens the loops
 * of the tile (i, j: set by parallel_tiles) and closes all of them. */
typedef struct tile_grid {
    int64_t th, tw;
    kir_val i0, i1, j0, j1;
    kir_val i, j;
} tile_grid;

static kir_kernel *tiles_begin(lower_ctx *c, const ir_shape *shape, kir_val *idx, tile_grid *t)
{
    int r = shape->rank;
    int64_t h = shape->dim[r - 2], w = shape->dim[r - 1];
    int64_t hb = (h + t->th - 1) / t->th, outer = ir_shape_numel(shape) / (h * w);
    kir_kernel *k = lower_kernel_begin(c, outer * hb);
    if (!k) return NULL;
    ir_shape outer_shape = *shape;
    outer_shape.rank = r - 2;
    kir_val wg = kir_wg(k);
    lower_unravel(k, &outer_shape, kir_binary(k, KIR_DIV, wg, kir_idx(k, hb)), idx);
    t->i0 = kir_mul(k, kir_binary(k, KIR_MOD, wg, kir_idx(k, hb)), kir_idx(k, t->th));
    t->i1 = kir_binary(k, KIR_MIN, kir_add(k, t->i0, kir_idx(k, t->th)), kir_idx(k, h));
    t->j0 = kir_loop_begin(k, kir_idx(k, 0), kir_idx(k, w), kir_idx(k, t->tw));
    t->j1 = kir_binary(k, KIR_MIN, kir_add(k, t->j0, kir_idx(k, t->tw)), kir_idx(k, w));
    return k;
}

/* Tiles, rows then elements: a transposed read then reuses each cache line it fetches. */
static void parallel_tiles(lower_ctx *c, const ir_shape *shape, lower_body_fn body, void *user, tile_grid *t)
{
    int r = shape->rank;
    kir_val idx[IR_MAX_RANK];
    t->th = t->tw = LOWER_TILE;
    kir_kernel *k = tiles_begin(c, shape, idx, t);
    if (!k) return;
    idx[r - 2] = t->i = kir_loop_begin(k, t->i0, t->i1, kir_idx(k, 1));
    idx[r - 1] = t->j = kir_loop_begin_parallel(k, t->j0, t->j1);
    body(c, idx, user);
    kir_loop_end(k);
    kir_loop_end(k);
    kir_loop_end(k);
}

/* Whether some load of the tiled kernel walks memory with stride 1 along the
 * row loop `i` but not along the element loop `j`: it reads the source
 * transposed, so computing the tile column by column reads it contiguously. */
static bool reads_transposed(const kir_kernel *k, kir_val i, kir_val j)
{
    for (int s = 0; s < k->n_stmts; s++) {
        const kir_stmt *st = &k->stmts[s];
        if (st->kind != KS_DEF || k->vals[st->val].op != KIR_LOAD || k->bufs[k->vals[st->val].buf].workgroup)
            continue;
        kir_val at = k->vals[st->val].a;
        int64_t sj = stride_of(k, at, j, 0);
        if (sj != 0 && sj != 1 && stride_of(k, at, i, 0) == 1) return true;
    }
    return false;
}

typedef struct elem_job {
    int out;
} elem_job;

/* parallel_tiles for an element body that reads a source transposed (stride 1
 * down the output's rows): the transposition moves into a copy of its own.
 * Each th x tw tile first copies every transposed source into
 * workgroup memory (pass A: the source read along its rows, so contiguously),
 * then computes the tile in output order from those copies (pass B: the
 * arithmetic, the other loads and the store all walk memory contiguously).
 * Columns go in panels of p = the target's vector width: a tile copy holds
 * element (i, j) at (j - j0 - q) * th + (i - i0) * p + q for the panel's q,
 * so pass A writes and pass B reads p consecutive elements per step, which a
 * C compiler turns into a register transpose and full-width vector code.
 * Tiles are larger than plain ones (STAGED_TILE_H x STAGED_TILE_W): each
 * source row then yields STAGED_TILE_H elements per visit, and measured on a
 * 4096x4096 transpose chain 128x128 runs ~25% faster than 64x64.
 * Built as pass B then pass A (the addresses pass A reads are those pass B's
 * loads computed, rebuilt over pass A's loops), then pass A is moved ahead.
 * Returns false when there is nothing to stage or an address cannot be
 * rebuilt; the caller then drops the half-built kernel. */
#define STAGED_TILE_H 128
#define STAGED_TILE_W 128
#define LOWER_CACHE_LINE 64
#define LOWER_MAX_STAGED 4

typedef struct staged_load {
    kir_val load;       /* the transposed load of pass B */
    int tile;           /* its copy in workgroup memory */
} staged_load;

/* Value v of pass B, rebuilt in pass A: pass B's loop values (from[]) become
 * pass A's (to[]), values defined before pass B (statement < first) are
 * shared, and index arithmetic is rebuilt. 0 where v depends on anything else
 * (a load, a variable). */
static kir_val rebuild(kir_kernel *k, kir_val v, int first, const kir_val *from, const kir_val *to, int depth)
{
    const kir_value *x = &k->vals[v];
    for (int i = 0; i < 3; i++)
        if (v == from[i]) return to[i];
    if (x->op == KIR_CONST || x->op == KIR_WG || x->def < first) return v;
    if (depth > 64 || x->op == KIR_LOAD || x->op == KIR_VARGET || x->op == KIR_LOOPVAR || x->op == KIR_LID) return 0;
    kir_op op = x->op;
    smelt_dtype type = x->type;
    int arity = kir_op_arity(op);
    kir_val a = rebuild(k, x->a, first, from, to, depth + 1);
    kir_val b = arity > 1 ? rebuild(k, k->vals[v].b, first, from, to, depth + 1) : 0;
    kir_val cc = arity > 2 ? rebuild(k, k->vals[v].c, first, from, to, depth + 1) : 0;
    if (!a || (arity > 1 && !b) || (arity > 2 && !cc)) return 0;
    if (op == KIR_CAST) return kir_cast(k, type, a);
    if (op == KIR_SELECT) return kir_select(k, a, b, cc);
    return arity == 1 ? kir_unary(k, op, a) : kir_binary(k, op, a, b);
}

/* Move statements [mid, end) ahead of [first, mid) and re-point the
 * definitions of the values they define. */
static bool rotate_stmts(kir_kernel *k, int first, int mid, int end)
{
    int n = end - first, n_tail = end - mid;
    kir_stmt *tmp = arena_alloc(k->arena, (size_t)n * sizeof *tmp);
    if (!tmp) return false;
    memcpy(tmp, k->stmts + mid, (size_t)n_tail * sizeof *tmp);
    memcpy(tmp + n_tail, k->stmts + first, (size_t)(mid - first) * sizeof *tmp);
    memcpy(k->stmts + first, tmp, (size_t)n * sizeof *tmp);
    for (int s = first; s < end; s++)
        if (k->stmts[s].kind == KS_DEF || k->stmts[s].kind == KS_LOOP_BEGIN) k->vals[k->stmts[s].val].def = s;
    return true;
}

/* Panel loops over the tile: rows, panels of p columns from j0 to j1, and the
 * column q within the panel (all p of it when the width is a multiple of p).
 * tile_at is element (row, jp + q)'s address in the tile copy. */
typedef struct panel_loops {
    kir_val row, jp, q;
} panel_loops;

static kir_val tile_at(kir_kernel *k, const tile_grid *t, const panel_loops *l, int64_t p)
{
    kir_val col = kir_add(k, kir_mul(k, kir_binary(k, KIR_SUB, l->jp, t->j0), kir_idx(k, t->th)), l->q);
    return kir_add(k, col, kir_mul(k, kir_binary(k, KIR_SUB, l->row, t->i0), kir_idx(k, p)));
}

static kir_val panel_width(kir_kernel *k, const tile_grid *t, kir_val jp, int64_t w, int64_t p)
{
    if (w % p == 0) return kir_idx(k, p);
    return kir_binary(k, KIR_MIN, kir_idx(k, p), kir_binary(k, KIR_SUB, t->j1, jp));
}

/* Pass B's store, when its output is large (TargetInfo.stream_min_bytes):
 * the panel's p elements go to a row in workgroup memory and a stream loop
 * copies the row out (kir.h, "Streaming"), which a C target writes with
 * non-temporal stores. A write-once output larger than the cache then costs
 * no read for ownership: on the 4096x4096 transpose chain, ~5% at one thread
 * and ~15% at two. Taken where pass B has one store, outside any if, stepping
 * 1 along the panel, and panels are whole (w % p == 0): each copy is one
 * vector. Called with the panel loop just closed, inside the panels' loop. */
static void stream_panel_store(lower_ctx *c, kir_kernel *k, int body, int end_b, int first, const panel_loops *b,
                               int64_t w, int64_t p)
{
    int64_t min = c->target->stream_min_bytes;
    if (min <= 0 || w % p) return;
    int st = -1, in_if = 0;
    for (int s = body; s < end_b; s++) {
        const kir_stmt *ks = &k->stmts[s];
        in_if += ks->kind == KS_IF_BEGIN ? 1 : ks->kind == KS_IF_END ? -1 : 0;
        if (ks->kind != KS_STORE || k->bufs[ks->buf].workgroup) continue;
        if (st >= 0 || in_if) return;
        st = s;
    }
    if (st < 0) return;
    int dst = k->stmts[st].buf;
    if (k->bufs[dst].type != SMELT_F32 || k->bufs[dst].numel < min / 4 ||
        stride_of(k, k->stmts[st].idx, b->q, 0) != 1)
        return;
    const kir_val from[3] = {b->row, b->jp, b->q}, to[3] = {b->row, b->jp, kir_idx(k, 0)};
    kir_val base = rebuild(k, k->stmts[st].idx, first, from, to, 0);
    if (!base) return;
    int row = kir_smem_add(k, SMELT_F32, p);
    k->stmts[st].buf = row;
    k->stmts[st].idx = b->q;
    kir_val q = kir_loop_begin_stream(k, p);
    kir_val v = kir_load(k, row, q);
    kir_val at = kir_add(k, base, q);
    kir_store(k, dst, at, v);
    kir_loop_end(k);
}

static bool parallel_tiles_staged(lower_ctx *c, const ir_shape *shape, const elem_job *job)
{
    int r = shape->rank;
    int64_t w = shape->dim[r - 1];
    kir_val idx[IR_MAX_RANK];
    tile_grid t = {.th = STAGED_TILE_H, .tw = STAGED_TILE_W};
    /* p: the vector width, at least 4 lanes, at most 16 (a panel is one register) */
    int64_t p = c->target->vector_width < 4 ? 4 : c->target->vector_width > 16 ? 16 : c->target->vector_width;
    kir_kernel *k = tiles_begin(c, shape, idx, &t);
    if (!k) return false;
    /* pass B: rows, then panels of columns */
    int first = k->n_stmts;
    panel_loops b;
    b.row = kir_loop_begin(k, t.i0, t.i1, kir_idx(k, 1));
    b.jp = kir_loop_begin(k, t.j0, t.j1, kir_idx(k, p));
    b.q = kir_loop_begin_parallel(k, kir_idx(k, 0), panel_width(k, &t, b.jp, w, p));
    kir_val at = tile_at(k, &t, &b, p);
    idx[r - 2] = b.row;
    idx[r - 1] = kir_add(k, b.jp, b.q);
    int body = k->n_stmts;
    kir_val v = element_of(c, job->out, idx);
    if (v) lower_store(c, job->out, idx, v);
    int end_b = k->n_stmts;
    kir_loop_end(k);
    stream_panel_store(c, k, body, end_b, first, &b, w, p);
    kir_loop_end(k);
    if (k->oom) return false;

    staged_load st[LOWER_MAX_STAGED];
    int n = 0;
    int64_t smem = 0;
    int in_if = 0; /* a load under an if may be out of range where the if is false: not staged */
    for (int s = body; s < end_b; s++) {
        const kir_stmt *ks = &k->stmts[s];
        in_if += ks->kind == KS_IF_BEGIN ? 1 : ks->kind == KS_IF_END ? -1 : 0;
        if (in_if || ks->kind != KS_DEF || k->vals[ks->val].op != KIR_LOAD || k->bufs[k->vals[ks->val].buf].workgroup) continue;
        kir_val a = k->vals[ks->val].a;
        int64_t sj = stride_of(k, a, b.q, 0);
        if (sj == 0 || sj == 1 || stride_of(k, a, b.row, 0) != 1) continue;
        smem += t.th * t.tw * (int64_t)smelt_dtype_size(k->vals[ks->val].type);
        if (n == LOWER_MAX_STAGED || (c->target->smem_limit > 0 && smem > c->target->smem_limit)) return false;
        st[n++] = (staged_load){.load = ks->val, .tile = kir_smem_add(k, k->vals[ks->val].type, t.th * t.tw)};
    }
    if (!n) return false;
    const kir_val from[3] = {b.row, b.jp, b.q};
    /* Each row of pass B prefetches one source row of the next column tile
     * (clamped into the tensor), so pass A finds it in cache: the copy is
     * latency-bound, the arithmetic is not, and this overlaps them. There are
     * th rows for tw source rows: th >= tw covers them all. */
    kir_val line = kir_idx(k, LOWER_CACHE_LINE / (int64_t)smelt_dtype_size(k->vals[st[0].load].type));
    kir_val last = kir_binary(k, KIR_SUB, t.i1, kir_idx(k, 1));
    kir_val rel = kir_binary(k, KIR_SUB, b.row, t.i0);
    if (t.th > t.tw) rel = kir_binary(k, KIR_MOD, rel, kir_idx(k, t.tw));
    kir_val next_j = kir_add(k, kir_add(k, t.j0, kir_idx(k, t.tw)), rel);
    next_j = kir_binary(k, KIR_MIN, next_j, kir_idx(k, shape->dim[r - 1] - 1));
    kir_val m = kir_loop_begin(k, t.i0, kir_add(k, t.i1, line), line);
    const kir_val ahead[3] = {kir_binary(k, KIR_MIN, m, last), next_j, kir_idx(k, 0)};
    for (int i = 0; i < n; i++) {
        kir_val src = rebuild(k, k->vals[st[i].load].a, first, from, ahead, 0);
        if (!src) return false;
        kir_prefetch(k, k->vals[st[i].load].buf, src);
    }
    kir_loop_end(k);
    kir_loop_end(k); /* pass B's rows */

    /* pass A: panels of columns, then rows (the source's contiguous walk), then the panel */
    int mid = k->n_stmts;
    panel_loops a;
    a.jp = kir_loop_begin(k, t.j0, t.j1, kir_idx(k, p));
    a.row = kir_loop_begin_parallel(k, t.i0, t.i1);
    a.q = kir_loop_begin(k, kir_idx(k, 0), panel_width(k, &t, a.jp, w, p), kir_idx(k, 1));
    kir_val to_at = tile_at(k, &t, &a, p);
    const kir_val to[3] = {a.row, a.jp, a.q};
    for (int i = 0; i < n; i++) {
        kir_value *ld = &k->vals[st[i].load];
        kir_val src = rebuild(k, ld->a, first, from, to, 0);
        if (!src) return false;
        ld = &k->vals[st[i].load]; /* rebuild may have grown vals */
        kir_store(k, st[i].tile, to_at, kir_load(k, ld->buf, src));
    }
    for (int i = 0; i < 3; i++) kir_loop_end(k);
    /* pass B's transposed loads read the copies */
    for (int i = 0; i < n; i++) {
        k->vals[st[i].load].buf = st[i].tile;
        k->vals[st[i].load].a = at;
    }
    int end = k->n_stmts;
    kir_loop_end(k); /* the loop over column tiles */
    return !k->oom && rotate_stmts(k, first, mid, end);
}

static void elem_body(lower_ctx *c, const kir_val *idx, void *user);

void lower_parallel_for(lower_ctx *c, const ir_shape *shape, int64_t work_per_elem, lower_body_fn body, void *user)
{
    if (c->target->wg_size > 1) {
        lower_parallel_for_gpu(c, shape, work_per_elem, body, user);
        return;
    }
    lower_program *p = c->st->p;
    int first = p->n_kernels, r = shape->rank;
    parallel_rows(c, shape, work_per_elem, body, user);
    bool big = r >= 2 && shape->dim[r - 2] >= 2 * LOWER_TILE && shape->dim[r - 1] >= 2 * LOWER_TILE;
    if (!big || p->n_kernels != first + 1 || c->k->oom) return;
    /* The element loop is the first parallel loop (bodies may open serial loops of their own). */
    kir_val inner = 0;
    for (int i = 0; i < c->k->n_stmts && !inner; i++)
        if (c->k->stmts[i].kind == KS_LOOP_BEGIN && c->k->stmts[i].parallel) inner = c->k->stmts[i].val;
    if (!inner || !lower_reads_across(c->k, inner)) return;
    p->n_kernels = first; /* rebuild the kernel tiled; the first attempt stays unused in the arena */
    tile_grid t;
    parallel_tiles(c, shape, body, user, &t);
    if (body != elem_body || p->n_kernels != first + 1 || c->k->oom || !reads_transposed(c->k, t.i, t.j)) return;
    p->n_kernels = first; /* and once more, staged */
    if (parallel_tiles_staged(c, shape, user)) return;
    p->n_kernels = first; /* a source address could not be staged: plain tiles */
    parallel_tiles(c, shape, body, user, &t);
}

/* Element idx of output `out` of c->n, from its scalar or element function. */
static kir_val element_of(lower_ctx *c, int out, const kir_val *idx)
{
    const op_info *oi = op_get(c->n->op);
    if (!oi->scalar) return oi->elem(c, out, idx);
    kir_val in[64] = {0};
    int rank = c->g->tensors[c->n->out[out]].shape.rank;
    for (int i = 0; i < c->n->n_in && i < 64; i++) in[i] = lower_load_bcast(c, i, rank, idx);
    return oi->scalar(c->k, c->n, in);
}

static void elem_body(lower_ctx *c, const kir_val *idx, void *user)
{
    const elem_job *job = user;
    kir_val v = element_of(c, job->out, idx);
    if (v) lower_store(c, job->out, idx, v);
}

/* Row mode: the region's inlined reductions, computed once per row. */
typedef struct row_job {
    elem_job elem;
    const ir_shape *shape;
    int split;            /* trailing dims iterated inside a row */
} row_job;

static void row_body(lower_ctx *c, const kir_val *oidx, void *user)
{
    const row_job *j = user;
    const fuse_region *r = c->st->region;
    kir_kernel *k = c->k;
    int rank = j->shape->rank, lead = rank - j->split;
    /* Prologue: every inlined per-row value (the reductions and elementwise
     * math on their results) at this row, in graph order, so a later one
     * reading an earlier one (a variance its mean) finds it memoized. */
    for (int i = 0; i < r->n_nodes; i++) {
        const ir_node *n = &c->g->nodes[r->nodes[i]];
        if (c->st->fp->role[r->nodes[i]] != FUSE_INLINE || n->n_out != 1 || n->out[0] < 0) continue;
        const ir_shape *os = &c->g->tensors[n->out[0]].shape;
        bool per_row = os->rank == rank;
        for (int d = 0; per_row && d < rank; d++) per_row = d < lead ? os->dim[d] == j->shape->dim[d] : os->dim[d] == 1;
        if (!per_row) continue;
        kir_val idx[IR_MAX_RANK];
        for (int d = 0; d < rank; d++) idx[d] = d < lead && os->dim[d] != 1 ? oidx[d] : kir_idx(k, 0);
        load_inline(c, n->out[0], idx);
    }
    kir_val idx[IR_MAX_RANK];
    for (int d = 0; d < lead; d++) idx[d] = oidx[d];
    for (int d = lead; d < rank; d++)
        idx[d] = d == rank - 1 ? kir_loop_begin_parallel(k, kir_idx(k, 0), kir_idx(k, j->shape->dim[d]))
                               : kir_loop_begin(k, kir_idx(k, 0), kir_idx(k, j->shape->dim[d]), kir_idx(k, 1));
    elem_body(c, idx, (void *)&j->elem);
    for (int d = lead; d < rank; d++) kir_loop_end(k);
}

/* Trailing dims the region's row reductions share (0: no row reductions). */
static int region_row_split(const lower_ctx *c)
{
    const fuse_region *r = c->st->region;
    int split = 0;
    for (int i = 0; r && i < r->n_nodes; i++) {
        const ir_node *n = &c->g->nodes[r->nodes[i]];
        if (c->st->fp->role[r->nodes[i]] != FUSE_INLINE || op_get(n->op)->kind != OPK_REDUCTION) continue;
        int k = fuse_row_dims(c->g, n);
        if (k > 0 && (split == 0 || k < split)) split = k;
    }
    return split;
}

smelt_status lower_elementwise(lower_ctx *c)
{
    const fuse_plan *fp = c->st->fp;
    int split = region_row_split(c);
    for (int o = 0; o < c->n->n_out; o++) {
        if (c->n->out[o] < 0 || (fp && fp->inline_of[c->n->out[o]] >= 0)) continue;
        const ir_shape *shape = &c->g->tensors[c->n->out[o]].shape;
        if (split > 0 && split <= shape->rank && ir_shape_numel(shape) > 0) {
            row_job job = {{o}, shape, split};
            ir_shape lead = *shape;
            lead.rank = shape->rank - split;
            parallel_rows(c, &lead, ir_shape_numel(shape) / (ir_shape_numel(&lead) ? ir_shape_numel(&lead) : 1) * 4,
                          row_body, &job);
            continue;
        }
        elem_job job = {o};
        lower_parallel_for(c, &c->g->tensors[c->n->out[o]].shape, 1, elem_body, &job);
    }
    return SMELT_OK;
}

/* An insert op: a kernel per block no producer wrote, one for the fill. */
typedef struct insert_job {
    int input;
    int64_t off[IR_MAX_RANK];
} insert_job;

static void insert_block_body(lower_ctx *c, const kir_val *idx, void *user)
{
    const insert_job *j = user;
    kir_val v = lower_load(c, j->input, idx), at[IR_MAX_RANK];
    int rank = c->g->tensors[c->n->out[0]].shape.rank;
    for (int d = 0; d < rank; d++) at[d] = kir_add(c->k, idx[d], kir_idx(c->k, j->off[d]));
    lower_store(c, 0, at, v);
}

static void insert_fill_body(lower_ctx *c, const kir_val *idx, void *user)
{
    (void)user;
    kir_kernel *k = c->k;
    kir_val inside = 0;
    for (int i = 0; i < c->n->n_in; i++) {
        int64_t off[IR_MAX_RANK];
        if (!fuse_insert(c->g, c->n, i, off)) continue;
        const ir_shape *xs = &c->g->tensors[c->n->in[i]].shape;
        kir_val in = kir_const_i(k, SMELT_BOOL, 1);
        for (int d = 0; d < xs->rank; d++) {
            in = kir_binary(k, KIR_AND, in, kir_binary(k, KIR_GE, idx[d], kir_idx(k, off[d])));
            in = kir_binary(k, KIR_AND, in, kir_binary(k, KIR_LT, idx[d], kir_idx(k, off[d] + xs->dim[d])));
        }
        inside = inside ? kir_binary(k, KIR_OR, inside, in) : in;
    }
    if (inside) kir_if_begin(k, kir_unary(k, KIR_NOT, inside));
    kir_val v = element_of(c, 0, idx);
    if (v) lower_store(c, 0, idx, v);
    if (inside) kir_if_end(k);
}

static smelt_status lower_insert(lower_ctx *c)
{
    const fuse_plan *fp = c->st->fp;
    int node = (int)(c->n - c->g->nodes);
    for (int i = 0; i < c->n->n_in; i++) {
        insert_job j = {.input = i};
        if (!fuse_insert(c->g, c->n, i, j.off) || (fp && fp->insert_into[c->n->in[i]] == node)) continue;
        const ir_shape *xs = &c->g->tensors[c->n->in[i]].shape;
        if (ir_shape_numel(xs) == 0) continue;
        lower_parallel_for(c, xs, 1, insert_block_body, &j);
    }
    if (fuse_insert_fills(c->g, c->n)) {
        c->st->fill_only = true;
        lower_parallel_for(c, &c->g->tensors[c->n->out[0]].shape, 1, insert_fill_body, NULL);
        c->st->fill_only = false;
    }
    return SMELT_OK;
}

static smelt_status lower_root(lower_program *p, const ir_graph *g, const fuse_plan *fp, const fuse_region *r,
                               int node)
{
    struct lower_state st = {.p = p, .fp = fp, .region = r};
    lower_ctx c = {g, &g->nodes[node], NULL, &st, p->target ? p->target : &target_cpu};
    const op_info *oi = op_get(c.n->op);
    int first = p->n_kernels;
    smelt_status s;
    int64_t off[IR_MAX_RANK];
    bool insert = fp && oi->insert && fuse_insert(g, c.n, 0, off) && fp->inline_of[c.n->out[0]] < 0 &&
                  fp->epilogue_of[c.n->out[0]] < 0;
    lower_gpu_fn gpu = c.target->wg_size > 1 ? lower_gpu_for(c.n->op) : NULL;
    if (gpu) s = gpu(&c);
    else if (oi->lower) s = oi->lower(&c);
    else if (insert) s = lower_insert(&c);
    else if (oi->scalar || oi->elem) s = lower_elementwise(&c);
    else s = ir_node_fail(c.n, SMELT_ERR_UNSUPPORTED, "op has no lowering (only folded at compile time), but its inputs are not constant");
    free(st.tensor_buf);
    free(st.memo);
    if (s) return s;
    for (int i = first; i < p->n_kernels; i++) {
        if (p->kernels[i]->oom) return diag_fail(SMELT_ERR_NOMEM, "out of memory lowering node '%s'", c.n->name);
        s = kir_verify(p->kernels[i]);
        if (s) return diag_context(s, "lowering node '%s' (%s)", c.n->name, oi->name);
    }
    return SMELT_OK;
}

smelt_status lower_node(lower_program *p, const ir_graph *g, int node) { return lower_root(p, g, NULL, NULL, node); }

smelt_status lower_region(lower_program *p, const ir_graph *g, const fuse_plan *fp, int r)
{
    return lower_root(p, g, fp, &fp->regions[r], fp->regions[r].root);
}
