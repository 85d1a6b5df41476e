/*
 * lower.c — the lowering context: loads, stores, loop nests, and the driver
 * that turns one graph node into verified kernels.
 *
 * requires: a graph with inferred shapes and dtypes.
 * guarantees: every kernel appended to the program passes kir_verify; every
 *             buffer of a kernel names the graph tensor (or scratch) it binds.
 */
#include "lower/lower.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fuse/fuse.h"
#include "kir/clean.h"

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
    int held_tensor;      /* the tensor whose element lower_store carries into its epilogue, or -1 */
    kir_val held_val;     /* that element (an epilogue DAG reads it several times) */
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

kir_kernel *lower_kernel_begin(lower_ctx *c, int64_t n_workgroups)
{
    lower_program *p = c->st->p;
    char comment[320];
    lower_kernel_comment(c->g, c->st->region, c->n, comment, sizeof comment);
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
    /* the region's root, also for a kernel a sibling's GPU form begins */
    p->kernel_node[p->n_kernels] = c->st->region ? c->st->region->root : (int)(c->n - c->g->nodes);
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
    kir_val v = lower_element(c, out, idx);
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
    /* inside an epilogue DAG every member reads t at the stored element's index */
    if (c->st->fp && t == c->st->held_tensor) return c->st->held_val;
    int64_t off[IR_MAX_RANK];
    if (c->st->fill_only && fuse_insert(c->g, c->n, i, off)) /* only selected where the fill is taken */
        return kir_is_float(x->dtype) ? kir_const_f(c->k, x->dtype, 0) : kir_const_i(c->k, x->dtype, 0);
    if (x->data && ir_tensor_numel(x) == 1) return inline_scalar(c->k, x);
    int b = buffer_for(c, t, x->dtype, ir_tensor_numel(x), false);
    kir_val at = lower_linear(c->k, &x->shape, idx);
    kir_note_access(c->k, b, at, x->shape.rank, x->shape.dim, idx);
    return kir_load(c->k, b, at);
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

/* A region with several outputs (fuse.h "shared"): each inline tensor it
 * also stores has the root's shape, so its element at the root's index idx
 * is stored next to the root's; the root's own computation has memoized it
 * where it reads it at that index. */
static void store_side_outputs(lower_ctx *c, const kir_val *idx)
{
    const fuse_region *r = c->st->region;
    for (int i = 0; i < r->n_nodes; i++) {
        const ir_node *n = &c->g->nodes[r->nodes[i]];
        for (int o = 0; o < n->n_out; o++) {
            int t = n->out[o];
            if (t < 0 || c->st->fp->stored_by[t] != r->root) continue;
            const ir_tensor *x = &c->g->tensors[t];
            kir_val v = load_inline(c, t, idx);
            int b = buffer_for(c, t, x->dtype, ir_tensor_numel(x), true);
            kir_val at = lower_linear(c->k, &x->shape, idx);
            kir_note_access(c->k, b, at, x->shape.rank, x->shape.dim, idx);
            kir_store(c->k, b, at, v);
        }
    }
}

/* A loop, not a recursion: a chain of epilogues (or inserts) is as long as the
 * model makes it. */
void lower_store(lower_ctx *c, int o, const kir_val *idx_in, kir_val v)
{
    const ir_node *saved = c->n;
    const fuse_plan *fp = c->st->fp;
    kir_val idx[IR_MAX_RANK];
    int rank = c->g->tensors[c->n->out[o]].shape.rank;
    if (rank) memcpy(idx, idx_in, sizeof(kir_val) * (size_t)rank);
    if (fp && c->st->region && c->n == &c->g->nodes[c->st->region->root]) store_side_outputs(c, idx);
    for (;;) {
        int t = c->n->out[o];
        const ir_tensor *x = &c->g->tensors[t];
        if (fp && fp->inline_of[t] >= 0) break; /* consumers recompute it */
        if (fp && fp->insert_into[t] >= 0) {
            /* Written straight into its block of the insert's output. */
            const ir_node *ins = &c->g->nodes[fp->insert_into[t]];
            int i = 0;
            while (ins->in[i] != t) i++;
            int64_t off[IR_MAX_RANK];
            fuse_insert(c->g, ins, i, off);
            for (int d = 0; d < x->shape.rank; d++) idx[d] = kir_add(c->k, idx[d], kir_idx(c->k, off[d]));
            c->n = ins;
            o = 0;
            continue;
        }
        if (fp && fp->epilogue_of[t] >= 0) {
            /* Continue into the epilogue node, with t's element in hand. */
            const ir_node *e = &c->g->nodes[fp->epilogue_of[t]];
            kir_val in[64] = {0};
            c->n = e;
            /* the DAG's members are memoized for this element only: another
             * store at the same index (another branch) carries another t */
            int memo_mark = c->st->n_memo;
            c->st->held_tensor = t;
            c->st->held_val = v;
            for (int j = 0; j < e->n_in && j < 64; j++)
                in[j] = e->in[j] == t ? v : lower_load_bcast(c, j, x->shape.rank, idx);
            v = op_get(e->op)->scalar(c->k, e, in);
            c->st->held_tensor = -1;
            c->st->n_memo = memo_mark;
            o = 0;
            continue;
        }
        int b = buffer_for(c, t, x->dtype, ir_tensor_numel(x), true);
        kir_val at = lower_linear(c->k, &x->shape, idx);
        kir_note_access(c->k, b, at, x->shape.rank, x->shape.dim, idx);
        kir_store(c->k, b, at, v);
        break;
    }
    c->n = saved;
}

/* Whether tensor x, read broadcast at an index of out's rank whose dims from
 * d0 on carry one linear position, reads the element the full index would:
 * it does not vary along those dims, or has them all as out has them and is
 * read from its own buffer (then its address is linear in the index). */
static bool reads_flat(const lower_ctx *c, int t, const ir_shape *out, int d0)
{
    const ir_tensor *x = &c->g->tensors[t];
    if (x->data && ir_tensor_numel(x) == 1) return true;
    bool ones = true, same = true;
    for (int od = d0; od < out->rank; od++) {
        int d = od - (out->rank - x->shape.rank);
        int64_t n = d < 0 ? 1 : x->shape.dim[d];
        ones &= n == 1;
        same &= d >= 0 && n == out->dim[od];
    }
    return ones || (same && !(c->st->fp && c->st->fp->inline_of[t] >= 0));
}

bool lower_store_is_flat(const lower_ctx *c, int o, int d0)
{
    const fuse_plan *fp = c->st->fp;
    const ir_node *n = c->n;
    if (fp && c->st->region && n == &c->g->nodes[c->st->region->root])
        for (int i = 0; i < c->st->region->n_nodes; i++) { /* side outputs are stored at the full index */
            const ir_node *m = &c->g->nodes[c->st->region->nodes[i]];
            for (int j = 0; j < m->n_out; j++)
                if (m->out[j] >= 0 && fp->stored_by[m->out[j]] == c->st->region->root) return false;
        }
    const ir_shape out = c->g->tensors[n->out[o]].shape;
    for (;;) {
        int t = n->out[o];
        const ir_tensor *x = &c->g->tensors[t];
        if (!fp) return true;
        if (fp->inline_of[t] >= 0) return false;
        if (fp->insert_into[t] >= 0) {
            const ir_node *ins = &c->g->nodes[fp->insert_into[t]];
            const ir_tensor *y = &c->g->tensors[ins->out[0]];
            int i = 0;
            while (ins->in[i] != t) i++;
            int64_t off[IR_MAX_RANK];
            fuse_insert(c->g, ins, i, off);
            if (y->shape.rank != x->shape.rank) return false;
            for (int d = d0; d < x->shape.rank; d++)
                if (off[d] || y->shape.dim[d] != x->shape.dim[d]) return false;
            n = ins, o = 0;
            continue;
        }
        if (fp->epilogue_of[t] >= 0) {
            const ir_node *e = &c->g->nodes[fp->epilogue_of[t]];
            for (int j = 0; j < e->n_in; j++)
                if (e->in[j] >= 0 && e->in[j] != t && !reads_flat(c, e->in[j], &out, d0)) return false;
            n = e, o = 0;
            continue;
        }
        return true;
    }
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

/* parallel_rows: the elements of `shape`, a workgroup per block of rows,
 * the last dim a parallel loop; with split > 0 (a divisor of the last dim)
 * that loop is a serial loop of blocks of `split` around a parallel loop of
 * one block, in the same order. */
static void parallel_rows(lower_ctx *c, const ir_shape *shape, int64_t work_per_elem, lower_body_fn body,
                          void *user, int64_t split)
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
    kir_val blk = split ? kir_loop_begin(k, kir_idx(k, 0), kir_idx(k, inner), kir_idx(k, split)) : 0;
    idx[r - 1] = kir_loop_begin_parallel(k, kir_idx(k, 0), kir_idx(k, split ? split : inner));
    if (split) idx[r - 1] = kir_add(k, blk, idx[r - 1]);
    body(c, idx, user);
    kir_loop_end(k);
    if (split) kir_loop_end(k);
    if (row_loop) kir_loop_end(k);
}

/* The block to split the element loop `var` of length n by: a load index
 * with a remainder by a constant m that divides n, of a value that walks
 * memory with stride 1 along var (an inner dim of a reshape that merged
 * dims, or a broadcast through one: a bias of 128 over rows of 512). Split in
 * blocks of m, the remainder is the block's own index (kir_binary) and the
 * loads are contiguous; 0 when there is none, or m is less than 8. */
static int64_t mod_split(const kir_kernel *k, kir_val var, int64_t n)
{
    for (int v = 1; v < k->n_vals; v++) {
        const kir_value *x = &k->vals[v];
        if (x->op != KIR_MOD || kir_is_float(x->type) || !kir_is_const(k, x->b)) continue;
        int64_t m = k->vals[x->b].imm.i;
        if (m >= 8 && m < n && n % m == 0 && kir_stride(k, x->a, var) == 1) return m;
    }
    return 0;
}


/* Whether some load of the kernel walks memory with a stride other than 0
 * or 1 along the loop of `var`, i.e. the loop nest reads across rows. */
bool lower_reads_across(const kir_kernel *k, kir_val var)
{
    for (int i = 0; i < k->n_stmts; i++) {
        const kir_stmt *s = &k->stmts[i];
        if (s->kind != KS_DEF || k->vals[s->val].op != KIR_LOAD || k->bufs[k->vals[s->val].buf].workgroup) continue;
        int64_t st = kir_stride(k, k->vals[s->val].a, var);
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

void lower_reduce_vars(lower_ctx *c, int n_vars, const int *var, const kir_op *op, smelt_dtype dt, int64_t n,
                       lower_elems_fn elem, void *user)
{
    kir_kernel *K = c->k;
    int64_t v = c->target->wg_size == 1 && kir_is_float(dt) ? c->target->vector_width : 0;
    int64_t nv = v >= 2 && n >= 2 * v ? n / v * v : 0;
    kir_val e[FUSE_SIBLINGS_MAX];
    if (n_vars > FUSE_SIBLINGS_MAX) n_vars = FUSE_SIBLINGS_MAX;
    if (nv) {
        int lanes[FUSE_SIBLINGS_MAX];
        for (int k = 0; k < n_vars; k++) {
            lanes[k] = kir_smem_add(K, dt, v);
            kir_val id = kir_const_f(K, dt, op[k] == KIR_ADD ? 0.0 : op[k] == KIR_MAX ? -INFINITY : INFINITY);
            kir_val q = kir_loop_begin_parallel(K, kir_idx(K, 0), kir_idx(K, v));
            kir_store(K, lanes[k], q, id);
            kir_loop_end(K);
        }
        kir_val i0 = kir_loop_begin(K, kir_idx(K, 0), kir_idx(K, nv), kir_idx(K, v));
        kir_val q = kir_loop_begin_parallel(K, kir_idx(K, 0), kir_idx(K, v));
        elem(c, kir_add(K, i0, q), user, e);
        for (int k = 0; k < n_vars; k++) kir_store(K, lanes[k], q, kir_binary(K, op[k], kir_load(K, lanes[k], q), e[k]));
        kir_loop_end(K);
        kir_loop_end(K);
        for (int k = 0; k < n_vars; k++) {
            q = kir_loop_begin(K, kir_idx(K, 0), kir_idx(K, v), kir_idx(K, 1));
            kir_var_set(K, var[k], kir_binary(K, op[k], kir_var_get(K, var[k]), kir_load(K, lanes[k], q)));
            kir_loop_end(K);
        }
    }
    if (nv < n) {
        kir_val i = kir_loop_begin(K, kir_idx(K, nv), kir_idx(K, n), kir_idx(K, 1));
        elem(c, i, user, e);
        for (int k = 0; k < n_vars; k++) kir_var_set(K, var[k], kir_binary(K, op[k], kir_var_get(K, var[k]), e[k]));
        kir_loop_end(K);
    }
}

typedef struct one_elem {
    lower_elem_fn elem;
    void *user;
} one_elem;

static void one_elem_fn(lower_ctx *c, kir_val i, void *user, kir_val *out)
{
    const one_elem *o = user;
    out[0] = o->elem(c, i, o->user);
}

void lower_reduce_var(lower_ctx *c, int var, smelt_dtype dt, kir_op op, int64_t n, lower_elem_fn elem, void *user)
{
    one_elem o = {elem, user};
    lower_reduce_vars(c, 1, &var, &op, dt, n, one_elem_fn, &o);
}

int lower_siblings(const lower_ctx *c, const ir_node **out)
{
    const fuse_region *r = c->st->region;
    int n = 0;
    for (int i = 0; r && i < r->n_nodes && n < FUSE_SIBLINGS_MAX - 1; i++)
        if (c->st->fp->role[r->nodes[i]] == FUSE_SIBLING) out[n++] = &c->g->nodes[r->nodes[i]];
    return n;
}

int lower_mark(lower_ctx *c) { return c->st->p->n_kernels; }

void lower_rollback(lower_ctx *c, int mark)
{
    if (mark >= 0 && mark <= c->st->p->n_kernels) c->st->p->n_kernels = mark;
}

typedef struct elem_job {
    int out;
} elem_job;

static void elem_body(lower_ctx *c, const kir_val *idx, void *user);

/* Flat trailing dims: the elements of `shape` as its leading dims and one
 * loop over the last `k` dims together, each element's per-dim indices
 * unravelled from that loop's value (x / 7, x % 7). Where every access
 * is contiguous in those dims or broadcast over them, its linear index
 * folds back to the flat value (kir_binary: (x / n) * n + x % n is x), so a
 * 7x7 plane is one run of 49 rather than seven runs of 7. */
typedef struct flat_job {
    const ir_shape *shape;
    int k;
    lower_body_fn body;
    void *user;
} flat_job;

static void flat_body(lower_ctx *c, const kir_val *fidx, void *user)
{
    const flat_job *j = user;
    int r = j->shape->rank, lead = r - j->k;
    kir_val idx[IR_MAX_RANK];
    for (int d = 0; d < lead; d++) idx[d] = fidx[d];
    ir_shape tail = {.rank = j->k};
    for (int d = 0; d < j->k; d++) tail.dim[d] = j->shape->dim[lead + d];
    lower_unravel(c->k, &tail, fidx[lead], idx + lead);
    j->body(c, idx, j->user);
}

/* Whether the kernel's flat loop `var` pays: no live value divides or
 * takes a remainder of something that depends on it (an access not
 * contiguous over the flat dims: a transpose, a slice with steps, a pad,
 * a broadcast over part of them), and every live load and store walks
 * memory with stride 0 or 1 along it. */
static bool flat_pays(const kir_kernel *k, kir_val var)
{
    bool *live = calloc((size_t)k->n_vals, sizeof *live);
    if (!live) return false;
    for (int i = 0; i < k->n_stmts; i++) {
        const kir_stmt *s = &k->stmts[i];
        kir_val seed[4] = {0};
        switch (s->kind) {
        case KS_STORE: seed[0] = s->val; seed[1] = s->idx; break;
        case KS_PREFETCH: seed[0] = s->idx; break;
        case KS_VAR_SET: seed[0] = s->val; break;
        case KS_IF_BEGIN: seed[0] = s->cond; break;
        case KS_LOOP_BEGIN: seed[0] = s->lo; seed[1] = s->hi; seed[2] = s->step; break;
        default: break;
        }
        for (int q = 0; q < 4; q++)
            if (seed[q] > 0 && seed[q] < k->n_vals) live[seed[q]] = true;
    }
    bool ok = true;
    for (int v = k->n_vals - 1; v > 0 && ok; v--) {
        if (!live[v]) continue;
        const kir_value *x = &k->vals[v];
        kir_val opnd[3] = {x->a, x->b, x->c};
        for (int q = 0; q < 3; q++)
            if (opnd[q] > 0 && opnd[q] < v) live[opnd[q]] = true;
        if ((x->op == KIR_DIV || x->op == KIR_MOD) && !kir_is_float(x->type))
            ok = kir_stride(k, v, var) == 0;
        else if (x->op == KIR_LOAD && !k->bufs[x->buf].workgroup) {
            int64_t st = kir_stride(k, x->a, var);
            ok = st == 0 || st == 1;
        }
    }
    for (int i = 0; i < k->n_stmts && ok; i++) {
        const kir_stmt *s = &k->stmts[i];
        if (s->kind != KS_STORE || k->bufs[s->buf].workgroup) continue;
        int64_t st = kir_stride(k, s->idx, var);
        ok = st == 0 || st == 1;
    }
    free(live);
    return ok;
}

/* The trailing dims to try as one flat loop, outermost first: where the
 * last dim is short (less than a tile), as many as fit one workgroup's work,
 * then just the last two; 0 where there is nothing to merge. */
static int flat_dims(const ir_shape *s, int tries[2])
{
    int r = s->rank, n = 0;
    if (r < 2 || s->dim[r - 1] >= LOWER_TILE || s->dim[r - 2] == 1 || ir_shape_numel(s) == 0) return 0;
    int k = 1;
    int64_t prod = s->dim[r - 1];
    while (k < r && prod * s->dim[r - 1 - k] <= LOWER_WG_WORK) prod *= s->dim[r - 1 - k++];
    while (k > 2 && s->dim[r - k] == 1) k--; /* leading dims of 1 merge for free: leave them */
    if (k >= 2) tries[n++] = k;
    if (k > 2) tries[n++] = 2;
    return n;
}

void lower_parallel_for(lower_ctx *c, const ir_shape *shape, int64_t work_per_elem, lower_body_fn body, void *user)
{
    if (c->target->wg_size > 1) {
        lower_parallel_for_gpu(c, shape, work_per_elem, body, user);
        return;
    }
    int first = lower_mark(c), r = shape->rank;
    int tries[2], n_tries = body == elem_body ? flat_dims(shape, tries) : 0; /* other bodies want their rows */
    for (int t = 0; t < n_tries; t++) {
        flat_job fj = {shape, tries[t], body, user};
        ir_shape flat = *shape;
        flat.rank = r - tries[t] + 1;
        for (int d = r - tries[t] + 1; d < r; d++) flat.dim[r - tries[t]] *= shape->dim[d];
        parallel_rows(c, &flat, work_per_elem, flat_body, &fj, 0);
        kir_val var = 0;
        for (int i = 0; lower_mark(c) == first + 1 && !c->k->oom && i < c->k->n_stmts && !var; i++)
            if (c->k->stmts[i].kind == KS_LOOP_BEGIN && c->k->stmts[i].parallel) var = c->k->stmts[i].val;
        if (var && flat_pays(c->k, var)) return;
        lower_rollback(c, first); /* rebuilt below as rows of the last dim */
    }
    parallel_rows(c, shape, work_per_elem, body, user, 0);
    if (r >= 1 && lower_mark(c) == first + 1 && !c->k->oom) {
        kir_val var = 0;
        for (int i = 0; i < c->k->n_stmts && !var; i++)
            if (c->k->stmts[i].kind == KS_LOOP_BEGIN && c->k->stmts[i].parallel) var = c->k->stmts[i].val;
        int64_t m = var ? mod_split(c->k, var, shape->dim[r - 1]) : 0;
        if (m) {
            lower_rollback(c, first); /* rebuilt with the last dim in blocks of m */
            parallel_rows(c, shape, work_per_elem, body, user, m);
        }
    }
    bool big = r >= 2 && shape->dim[r - 2] >= 2 * LOWER_TILE && shape->dim[r - 1] >= 2 * LOWER_TILE;
    if (!big || lower_mark(c) != first + 1 || c->k->oom) return;
    /* The element loop is the first parallel loop (bodies may open serial loops of their own). */
    kir_val inner = 0;
    for (int i = 0; i < c->k->n_stmts && !inner; i++)
        if (c->k->stmts[i].kind == KS_LOOP_BEGIN && c->k->stmts[i].parallel) inner = c->k->stmts[i].val;
    if (!inner || !lower_reads_across(c->k, inner)) return;
    lower_rollback(c, first); /* rebuild the kernel tiled; the first attempt stays unused in the arena */
    lower_tiles(c, shape, body, user, body == elem_body ? ((const elem_job *)user)->out : -1);
}

kir_val lower_element(lower_ctx *c, int out, const kir_val *idx)
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
    kir_val v = lower_element(c, job->out, idx);
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
                          row_body, &job, 0);
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
    kir_val v = lower_element(c, 0, idx);
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
    struct lower_state st = {.p = p, .fp = fp, .region = r, .held_tensor = -1};
    lower_ctx c = {g, &g->nodes[node], NULL, &st, p->target ? p->target : &target_cpu};
    const op_info *oi = op_get(c.n->op);
    int first = p->n_kernels;
    smelt_status s;
    int64_t off[IR_MAX_RANK];
    bool insert = fp && oi->insert && fuse_insert(g, c.n, 0, off) && fp->inline_of[c.n->out[0]] < 0 &&
                  fp->epilogue_of[c.n->out[0]] < 0;
    op_lower_fn gpu = c.target->wg_size > 1 ? op_gpu_lower[c.n->op] : NULL;
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
        if (!s) s = kir_clean(p->kernels[i]);
        if (s) return diag_context(s, "lowering node '%s' (%s)", c.n->name, oi->name);
    }
    return SMELT_OK;
}

smelt_status lower_node(lower_program *p, const ir_graph *g, int node) { return lower_root(p, g, NULL, NULL, node); }

smelt_status lower_region(lower_program *p, const ir_graph *g, const fuse_plan *fp, int r)
{
    return lower_root(p, g, fp, &fp->regions[r], fp->regions[r].root);
}
