/*
 * program_cache.c — the program cache: a compiled CPU program (what a run
 * needs of the graph, the memory plan, the command list, the kernel list, the
 * constants the graph passes made: packed panels, Winograd-transformed
 * filters, folded values) in one file of the compile cache, so that compiling
 * the same model with the same options again maps it instead of running the
 * pipeline and the system compiler (api/program.h).
 *
 * needs: a program compiled to the end for one CPU device, without run-time
 *        control flow (program_cache_store); the model's digest (model.c).
 * gives: on a hit, a program that runs as the compiled one did, its
 *        constants read in place from the mapped entry; on anything else
 *        (absent, another version or build, a digest or size mismatch, a
 *        folded input with other values, the object gone) a miss, and the
 *        caller compiles.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "api/program.h"
#include "core/hash.h"
#include "rt/rt.h"

/* The entry stores mem_plan and plan_commands byte for byte and the loader
 * clears every pointer in them: a field added to either must be looked at
 * here (a new pointer left as stored was a double free once). The sizes are
 * those of LP64; elsewhere the check is skipped. */
#if UINTPTR_MAX == 0xffffffffffffffffu
_Static_assert(sizeof(mem_plan) == 192, "mem_plan changed: check what the program cache stores and clears");
_Static_assert(sizeof(plan_commands) == 232, "plan_commands changed: check what the program cache stores and clears");
#endif
#include "target/emit.h"

#define ENTRY_MAGIC "smeltprg"
#define ENTRY_VERSION 2u
#define ENTRY_SUFFIX ".prog"
#define ENTRY_ALIGN 64
/* All program entries together: beyond this the oldest are deleted. */
#define ENTRY_MAX_TOTAL_BYTES ((int64_t)4 << 30)

typedef struct entry_header {
    char magic[8];
    uint32_t version, header_bytes;
    uint64_t total_bytes;  /* the file's size */
    uint64_t meta_bytes;   /* the description follows the header */
    uint64_t blob_offset;  /* constants from here to the end */
    uint64_t digest[2];    /* hash_wide of bytes [header_bytes, total_bytes), seeded by the header */
    char key[40];          /* the program key the entry was written under */
} entry_header;

struct program_cached {
    void *map;             /* the entry, mapped; constants point into it */
    size_t map_bytes;
    int n_nodes, n_regions; /* of the compiled graph, for smelt_program_get_stats */
    smelt_options opt;     /* what it was compiled with, for program_cache_full */
    char *devices, *placement;
    int n_given;
    smelt_tensor *given;   /* the inputs given to the compile: names, types, shapes (no data) */
    bool *had_data;        /* per given input: it came with values */
};

/* ---- the key ---------------------------------------------------------------------------------- */

static int by_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* Which build of smelt wrote an entry: the binary holding this code, by
 * identity and modification time (a rebuild changes the generated programs). */
static bool build_identity(uint64_t *h)
{
    Dl_info info;
    struct stat st;
    bool ok = dladdr((void *)build_identity, &info) && info.dli_fname && stat(info.dli_fname, &st) == 0;
    if (!ok) ok = stat("/proc/self/exe", &st) == 0;
    if (!ok) return false;
    int64_t id[5] = {(int64_t)st.st_dev, (int64_t)st.st_ino, (int64_t)st.st_size, (int64_t)st.st_mtim.tv_sec,
                     (int64_t)st.st_mtim.tv_nsec};
    *h = hash_bytes(*h, id, sizeof id);
    return true;
}

bool program_cache_identity(uint64_t *h)
{
    unsigned long uid = (unsigned long)geteuid();
    *h = hash_bytes(*h, &uid, sizeof uid);
    if (!build_identity(h)) return false;
    /* Every SMELT_ knob of the environment (sorted), but where the cache is
     * and how many compilers run at once, which change no program. */
    int n_env = 0;
    for (char **e = environ; e && *e; e++) n_env++;
    const char **env = malloc(sizeof(char *) * ((size_t)n_env + 1));
    if (!env) return false;
    int n = 0;
    for (char **e = environ; e && *e; e++)
        if (!strncmp(*e, "SMELT_", 6) && strncmp(*e, "SMELT_CACHE_DIR=", 16) && strncmp(*e, "SMELT_CC_JOBS=", 14)) env[n++] = *e;
    qsort(env, (size_t)n, sizeof *env, by_str);
    for (int i = 0; i < n; i++) *h = hash_str(*h, env[i]);
    free(env);
    return true;
}

bool program_cache_key(const smelt_program *p, const smelt_options *opt, int n_inputs, const smelt_tensor *inputs,
                       char key[33])
{
    const smelt_model *m = p->model;
    if (!m || !m->digest_ok || p->devs.n != 1 || p->devs.dev[0].kind != PLACE_CPU || !p->dev[0] ||
        opt->stop_after != SMELT_STAGE_ALL)
        return false;
    uint64_t h = HASH_SEED;
    uint32_t version = ENTRY_VERSION;
    h = hash_bytes(h, &version, sizeof version);
    if (!program_cache_identity(&h)) return false;
    h = hash_bytes(h, m->digest, sizeof m->digest);
    h = hash_str(h, opt->devices ? opt->devices : "");
    h = hash_str(h, opt->placement ? opt->placement : "");
    int64_t o[7] = {opt->threads, opt->locals, opt->no_fuse, opt->fuse_pad, opt->max_memory, opt->max_loop_iterations,
                    opt->stop_after};
    h = hash_bytes(h, o, sizeof o);
    h = hash_str(h, p->dev[0]->name);
    h = hash_str(h, p->dev[0]->ident);
    const target_info *t = &p->devs.dev[0].target;
    /* rt_cc_int8_dot's answer follows from the CPU (the device's ident) and
     * SMELT_CC (the environment), both in the key already */
    int64_t tv[2] = {t->vector_width, t->stream_min_bytes};
    h = hash_bytes(h, tv, sizeof tv);
    h = hash_bytes(h, &n_inputs, sizeof n_inputs);
    for (int i = 0; i < n_inputs; i++) {
        const smelt_tensor *x = &inputs[i];
        int64_t d[3] = {x->dtype, x->rank, x->data != NULL};
        h = hash_str(h, x->name ? x->name : "");
        h = hash_bytes(h, d, sizeof d);
        if (x->rank > 0 && x->rank <= SMELT_MAX_RANK) h = hash_bytes(h, x->shape, sizeof(int64_t) * (size_t)x->rank);
    }
    uint64_t h2 = hash_bytes(h ^ 0x9e3779b97f4a7c15ull, m->digest, sizeof m->digest);
    snprintf(key, 33, "%016llx%016llx", (unsigned long long)h, (unsigned long long)h2);
    return true;
}

/* ---- writing ---------------------------------------------------------------------------------- */

typedef struct wbuf {
    char *p;
    size_t len, cap;
    bool oom;
} wbuf;

static void put(wbuf *w, const void *data, size_t n)
{
    if (w->oom) return;
    if (w->len + n > w->cap) {
        size_t cap = w->cap ? w->cap : 4096;
        while (cap < w->len + n) cap *= 2;
        char *q = realloc(w->p, cap);
        if (!q) {
            w->oom = true;
            return;
        }
        w->p = q;
        w->cap = cap;
    }
    if (n) memcpy(w->p + w->len, data, n);
    w->len += n;
}

static void put_i64(wbuf *w, int64_t v) { put(w, &v, sizeof v); }

static void put_str(wbuf *w, const char *s)
{
    s = s ? s : "";
    put_i64(w, (int64_t)strlen(s) + 1);
    put(w, s, strlen(s) + 1);
}

/* Where constant bytes live: in one of the model's tensors (-1: not). */
static int model_tensor_of(const ir_graph *mg, const void *data, size_t bytes, int64_t *offset)
{
    const char *d = data;
    for (int k = 0; k < mg->n_tensors; k++) {
        const ir_tensor *x = &mg->tensors[k];
        if (!x->data || x->dtype == SMELT_STRING) continue;
        const char *lo = x->data;
        size_t n = (size_t)ir_tensor_numel(x) * smelt_dtype_size(x->dtype);
        if (d >= lo && d + bytes <= lo + n) {
            *offset = d - lo;
            return k;
        }
    }
    return -1;
}

static size_t tensor_bytes(const ir_tensor *x) { return (size_t)ir_tensor_numel(x) * smelt_dtype_size(x->dtype); }

/* What a run reads of tensor t's data: a constant a kernel reads, or a constant output. */
static bool data_needed(const smelt_program *p, int t)
{
    const ir_tensor *x = &p->g->tensors[t];
    return x->data && ((t < p->plan.n_slots && p->plan.slots[t].kind == PLAN_CONST) || x->is_output);
}

static int max_end(const plan_commands *c, bool ranges)
{
    int n = 0;
    for (int i = 0; i < c->n_cmds; i++) {
        const plan_cmd *x = &c->cmds[i];
        int end = ranges ? x->first_range + x->n_ranges : x->first_arg + x->n_args;
        if ((x->kind == PLAN_CMD_DISPATCH || x->kind == PLAN_CMD_IF || x->kind == PLAN_CMD_LOOP) && end > n) n = end;
    }
    return n;
}

static bool storable(const smelt_program *p)
{
    if (p->stage != SMELT_STAGE_ALL || p->split || p->streams || p->cmds.n_children || p->devs.n != 1 || !p->cls[0].source ||
        p->plan.n_slots < p->g->n_tensors)
        return false;
    for (int t = 0; t < p->g->n_tensors; t++)
        if (p->g->tensors[t].dtype == SMELT_STRING && p->g->tensors[t].data) return false;
    return true;
}

void program_cache_store(const smelt_program *p, const char key[33])
{
    if (!storable(p)) return;
    char object[33];
    uint64_t object_digest[2];
    if (rt_cc_object_key(p->cls[0].source, object) || rt_cc_object_digest(object, object_digest)) {
        diag_clear();
        return;
    }
    const ir_graph *g = p->g, *mg = p->model->g;
    wbuf w = {0}, blob = {0};
    put_str(&w, object);
    put(&w, object_digest, sizeof object_digest);
    put_i64(&w, g->n_nodes);
    put_i64(&w, p->fp.n_regions);
    put_i64(&w, p->stats.bytes_moved);
    put_i64(&w, g->n_tensors);
    for (int t = 0; t < g->n_tensors; t++) {
        const ir_tensor *x = &g->tensors[t];
        put_str(&w, x->name);
        put_i64(&w, x->dtype);
        put(&w, &x->shape, sizeof x->shape);
        int64_t off = 0;
        size_t bytes = tensor_bytes(x);
        int k = data_needed(p, t) ? model_tensor_of(mg, x->data, bytes, &off) : -2;
        put_i64(&w, k); /* -2: no data; -1: in the blob at off; else model tensor k at off */
        if (k == -1) {
            static const char zeros[ENTRY_ALIGN];
            put(&blob, zeros, (ENTRY_ALIGN - blob.len % ENTRY_ALIGN) % ENTRY_ALIGN);
            off = (int64_t)blob.len;
            put(&blob, x->data, bytes);
        }
        put_i64(&w, off);
        put_i64(&w, (int64_t)bytes);
    }
    put_i64(&w, g->n_inputs);
    put(&w, g->inputs, sizeof(int) * (size_t)g->n_inputs);
    put_i64(&w, g->n_outputs);
    put(&w, g->outputs, sizeof(int) * (size_t)g->n_outputs);
    put_i64(&w, p->n_inputs);
    for (int i = 0; i < p->n_inputs; i++) {
        const program_input *x = &p->inputs[i];
        put_str(&w, x->name);
        put_i64(&w, x->folded);
        put_i64(&w, x->dtype);
        put(&w, &x->shape, sizeof x->shape);
        put_i64(&w, (int64_t)x->bytes);
        put(&w, x->values, x->folded ? x->bytes : 0);
    }
    put(&w, &p->plan, sizeof p->plan);
    put(&w, p->plan.slots, sizeof(plan_slot) * (size_t)p->plan.n_slots);
    int n_args = max_end(&p->cmds, false), n_ranges = max_end(&p->cmds, true);
    put(&w, &p->cmds, sizeof p->cmds);
    put(&w, p->cmds.cmds, sizeof(plan_cmd) * (size_t)p->cmds.n_cmds);
    put_i64(&w, n_args);
    put(&w, p->cmds.args, sizeof(int) * (size_t)n_args);
    put_i64(&w, n_ranges);
    put(&w, p->cmds.ranges, sizeof(plan_range) * (size_t)n_ranges);
    put(&w, p->cmds.home, sizeof(int) * (size_t)p->plan.n_slots);
    put_i64(&w, p->lp.n_kernels);
    for (int i = 0; i < p->lp.n_kernels; i++) {
        const kir_kernel *k = p->lp.kernels[i];
        put_i64(&w, k->id);
        put_i64(&w, k->n_workgroups);
        put_i64(&w, k->wg_size);
        put_str(&w, k->comment);
    }
    if (w.oom || blob.oom) goto out;
    entry_header hd;
    memset(&hd, 0, sizeof hd);
    memcpy(hd.magic, ENTRY_MAGIC, 8);
    hd.version = ENTRY_VERSION;
    hd.header_bytes = sizeof hd;
    hd.meta_bytes = w.len;
    size_t pad = (ENTRY_ALIGN - (sizeof hd + w.len) % ENTRY_ALIGN) % ENTRY_ALIGN;
    static const char zeros[ENTRY_ALIGN];
    put(&w, zeros, pad);
    if (w.oom) goto out;
    hd.blob_offset = sizeof hd + w.len;
    hd.total_bytes = hd.blob_offset + blob.len;
    snprintf(hd.key, sizeof hd.key, "%s", key);
    /* the digest: of the body, seeded by the header (digest field zero) */
    uint64_t d[2], seed = hash_bytes(HASH_SEED, &hd, sizeof hd);
    hash_wide(w.p, w.len, seed, d);
    hash_wide(blob.p, blob.len, d[0] ^ d[1], hd.digest);
    struct iovec parts[3] = {{&hd, sizeof hd}, {w.p, w.len}, {blob.p, blob.len}};
    rt_cache c;
    if (rt_cache_open(&c) == SMELT_OK) {
        char name[64];
        snprintf(name, sizeof name, "%s%s", key, ENTRY_SUFFIX);
        if (rt_cache_put(&c, name, parts, 3) == SMELT_OK) rt_cache_prune(&c, ENTRY_SUFFIX, ENTRY_MAX_TOTAL_BYTES, name);
        rt_cache_close(&c);
    }
    diag_clear(); /* the cache is an optimisation: a failed write is not an error */
out:
    free(w.p);
    free(blob.p);
}

/* ---- reading ---------------------------------------------------------------------------------- */

typedef struct rbuf {
    const char *p;
    size_t at, len;
    bool bad;
} rbuf;

static const void *get(rbuf *r, size_t n)
{
    if (r->bad || n > r->len - r->at) {
        r->bad = true;
        return NULL;
    }
    const void *q = r->p + r->at;
    r->at += n;
    return q;
}

static bool get_into(rbuf *r, void *dst, size_t n)
{
    const void *q = get(r, n);
    if (q && n) memcpy(dst, q, n);
    return q != NULL;
}

static int64_t get_i64(rbuf *r)
{
    int64_t v = 0;
    get_into(r, &v, sizeof v);
    return v;
}

/* A count of items of `size` bytes that the rest of the buffer can hold. */
static int get_count(rbuf *r, size_t size)
{
    int64_t n = get_i64(r);
    if (n < 0 || n > INT32_MAX || (size && (uint64_t)n > (r->len - r->at) / size)) r->bad = true;
    return r->bad ? 0 : (int)n;
}

static const char *get_str(rbuf *r)
{
    int64_t n = get_i64(r);
    const char *s = n > 0 && n <= (int64_t)(r->len - r->at) ? get(r, (size_t)n) : NULL;
    if (!s || s[n - 1] != 0) {
        r->bad = true;
        return "";
    }
    return s;
}

static void *dup_array(rbuf *r, size_t n, size_t size)
{
    void *v = malloc(n * size + 1);
    if (!v) r->bad = true;
    if (v && !get_into(r, v, n * size)) {
        free(v);
        v = NULL;
    }
    return v;
}

/* The mapped entry, if its header, size and digest are the ones written under key. */
static const entry_header *entry_check(const void *map, size_t size, const char key[33])
{
    const entry_header *hd = map;
    if (size < sizeof *hd || memcmp(hd->magic, ENTRY_MAGIC, 8) != 0 || hd->version != ENTRY_VERSION ||
        hd->header_bytes != sizeof *hd || hd->total_bytes != size || hd->meta_bytes > size - sizeof *hd ||
        hd->blob_offset < sizeof *hd + hd->meta_bytes || hd->blob_offset > size || strncmp(hd->key, key, sizeof hd->key) != 0)
        return NULL;
    entry_header z = *hd;
    memset(z.digest, 0, sizeof z.digest);
    uint64_t d[2], got[2], seed = hash_bytes(HASH_SEED, &z, sizeof z);
    hash_wide((const char *)map + sizeof *hd, hd->blob_offset - sizeof *hd, seed, d);
    hash_wide((const char *)map + hd->blob_offset, size - hd->blob_offset, d[0] ^ d[1], got);
    return got[0] == hd->digest[0] && got[1] == hd->digest[1] ? hd : NULL;
}

static bool shape_ok(const ir_shape *s)
{
    if (s->rank < 0 || s->rank > IR_MAX_RANK) return false;
    for (int d = 0; d < s->rank; d++)
        if (s->dim[d] < 0) return false;
    return true;
}

/* The given tensor for program input x (by name, else by position), as the run binds it. */
static const smelt_tensor *given_for(const smelt_program *p, int i, int n, const smelt_tensor *inputs)
{
    for (int k = 0; k < n; k++)
        if (inputs[k].name && strcmp(inputs[k].name, p->inputs[i].name) == 0) return &inputs[k];
    return i < n && !inputs[i].name ? &inputs[i] : NULL;
}

/* p's run-time state from the entry's description; false on anything out of range. */
static bool read_program(smelt_program *p, rbuf *r, const char *blob, size_t blob_bytes, const char **object,
                         uint64_t object_digest[2])
{
    const ir_graph *mg = p->model->g;
    struct program_cached *pc = p->cached;
    *object = get_str(r);
    get_into(r, object_digest, sizeof(uint64_t) * 2);
    pc->n_nodes = get_count(r, 0);
    pc->n_regions = get_count(r, 0);
    int64_t bytes_moved = get_i64(r);
    ir_graph *g = p->g = ir_graph_new();
    if (!g) return false;
    int nt = get_count(r, 8);
    for (int t = 0; t < nt && !r->bad; t++) {
        const char *name = get_str(r);
        smelt_dtype dt = (smelt_dtype)get_i64(r);
        ir_shape shape;
        if (!get_into(r, &shape, sizeof shape) || !shape_ok(&shape) || ir_tensor_add(g, name, dt, &shape) != t) return false;
        int64_t k = get_i64(r), off = get_i64(r), bytes = get_i64(r);
        if (r->bad || bytes != (int64_t)tensor_bytes(&g->tensors[t]) || off < 0) return false;
        if (k >= 0) {
            if (k >= mg->n_tensors || !mg->tensors[k].data || (uint64_t)off + (uint64_t)bytes > tensor_bytes(&mg->tensors[k]))
                return false;
            g->tensors[t].data = (char *)mg->tensors[k].data + off;
        } else if (k == -1) {
            if ((uint64_t)off + (uint64_t)bytes > blob_bytes) return false;
            g->tensors[t].data = (void *)(blob + off);
        } else if (k != -2) {
            return false;
        }
    }
    int n_in = get_count(r, sizeof(int));
    const int *in = get(r, sizeof(int) * (size_t)n_in);
    int n_out = get_count(r, sizeof(int));
    const int *out = get(r, sizeof(int) * (size_t)n_out);
    if (r->bad) return false;
    int *io = malloc(sizeof(int) * ((size_t)n_in + (size_t)n_out + 1));
    if (!io) return false;
    memcpy(io, in, sizeof(int) * (size_t)n_in);
    memcpy(io + n_in, out, sizeof(int) * (size_t)n_out);
    bool io_ok = true;
    for (int i = 0; i < n_in + n_out; i++) io_ok &= io[i] >= 0 && io[i] < nt;
    io_ok = io_ok && ir_graph_set_io(g, n_in, io, n_out, io + n_in);
    free(io);
    if (!io_ok) return false;

    p->n_inputs = get_count(r, 8);
    p->inputs = arena_alloc(&p->arena, sizeof(program_input) * ((size_t)p->n_inputs + 1));
    if (!p->inputs) return false;
    for (int i = 0; i < p->n_inputs && !r->bad; i++) {
        program_input *x = &p->inputs[i];
        memset(x, 0, sizeof *x);
        x->name = arena_strdup(&p->arena, get_str(r));
        x->folded = get_i64(r) != 0;
        x->dtype = (smelt_dtype)get_i64(r);
        if (!get_into(r, &x->shape, sizeof x->shape) || !shape_ok(&x->shape) || !x->name) return false;
        int64_t b = get_i64(r);
        x->bytes = b >= 0 && x->folded ? (size_t)b : 0;
        x->values = x->folded ? get(r, x->bytes) : NULL;
    }
    if (r->bad) return false;

    if (!get_into(r, &p->plan, sizeof p->plan)) return false;
    mem_plan *m = &p->plan;
    m->barrier_before = NULL; /* emission and dumps only */
    m->in_place_of = NULL;
    m->in_place_table = NULL;
    m->kernel_device = NULL;  /* one device: every kernel on device 0 */
    m->dev_offset = NULL;     /* one device: its arena is the slots' offsets */
    m->slots = NULL;
    if (m->n_slots < nt || (uint64_t)m->n_slots > (r->len - r->at) / sizeof(plan_slot)) return false;
    m->slots = dup_array(r, (size_t)m->n_slots, sizeof(plan_slot));
    if (!m->slots) return false;
    for (int s = 0; s < m->n_slots; s++) {
        const plan_slot *x = &m->slots[s];
        if (x->alias >= m->n_slots || x->bytes < 0 || x->offset < 0 ||
            (x->kind == PLAN_ARENA && x->alias < 0 && x->offset + x->bytes > m->arena_bytes))
            return false;
    }

    plan_commands *c = &p->cmds;
    if (!get_into(r, c, sizeof *c)) return false;
    c->args = NULL;
    c->ranges = NULL;
    c->home = NULL;
    c->held = NULL; /* only several devices' arenas read it */
    c->cmds = NULL;
    if (c->n_cmds < 0 || (uint64_t)c->n_cmds > (r->len - r->at) / sizeof(plan_cmd)) return false;
    c->cmds = dup_array(r, (size_t)c->n_cmds, sizeof(plan_cmd));
    int n_args = get_count(r, sizeof(int));
    c->args = c->cmds ? dup_array(r, (size_t)n_args, sizeof(int)) : NULL;
    int n_ranges = get_count(r, sizeof(plan_range));
    c->ranges = c->args ? dup_array(r, (size_t)n_ranges, sizeof(plan_range)) : NULL;
    c->home = c->ranges ? dup_array(r, (size_t)m->n_slots, sizeof(int)) : NULL;
    if (!c->home || c->n_children != 0 || c->n_devices != 1 || c->arena_bytes[0] > m->arena_bytes) return false;

    int nk = get_count(r, 8);
    lower_program_init(&p->lp, &p->arena);
    p->lp.kernels = malloc(sizeof(kir_kernel *) * ((size_t)nk + 1));
    p->kernel_device = calloc((size_t)nk + 1, sizeof(int));
    if (!p->lp.kernels || !p->kernel_device) return false;
    p->lp.cap_kernels = nk;
    for (int i = 0; i < nk && !r->bad; i++) {
        int64_t id = get_i64(r), nwg = get_i64(r), wg = get_i64(r);
        const char *what = get_str(r);
        kir_kernel *k = r->bad || id < 0 || id > INT32_MAX ? NULL : kir_kernel_new(&p->arena, (int)id, nwg, what);
        if (!k) return false;
        k->wg_size = (int)wg;
        p->lp.kernels[p->lp.n_kernels++] = k;
    }
    for (int i = 0; i < c->n_cmds; i++) { /* every index a run follows stays inside what was read */
        const plan_cmd *x = &c->cmds[i];
        if (x->kind < 0 || x->kind >= PLAN_CMD_KIND_COUNT || x->kind == PLAN_CMD_IF || x->kind == PLAN_CMD_LOOP || x->device != 0)
            return false;
        if (x->kind == PLAN_CMD_DISPATCH) {
            if (x->kernel < 0 || x->kernel >= nk || x->first_arg < 0 || x->n_args < 0 || x->first_arg + x->n_args > n_args)
                return false;
            for (int b = 0; b < x->n_args; b++)
                if (c->args[x->first_arg + b] < -1 || c->args[x->first_arg + b] >= m->n_slots) return false;
        }
        if (x->kind == PLAN_CMD_COPY) return false; /* one CPU device: its list has none */
    }
    p->stats.bytes_moved = bytes_moved;
    return !r->bad && r->at == r->len;
}

/* Frees what a failed read left and leaves p as the pipeline expects to find it. */
static void forget(smelt_program *p)
{
    program_cache_free(p);
    ir_graph_free(p->g);
    p->g = NULL;
    plan_free(&p->plan);
    plan_commands_free(&p->cmds);
    lower_program_free(&p->lp);
    free(p->kernel_device);
    p->kernel_device = NULL;
    p->inputs = NULL;
    p->n_inputs = 0;
    if (p->module[0]) p->dev[0]->ops->module_free(p->dev[0], p->module[0]);
    p->module[0] = NULL;
    p->stats = (program_stats){0};
}

static bool keep_origin(struct program_cached *pc, const smelt_options *opt, int n_inputs, const smelt_tensor *inputs)
{
    pc->opt = *opt;
    pc->devices = opt->devices ? strdup(opt->devices) : NULL;
    pc->placement = opt->placement ? strdup(opt->placement) : NULL;
    pc->opt.devices = pc->devices;
    pc->opt.placement = pc->placement;
    pc->given = calloc((size_t)n_inputs + 1, sizeof(smelt_tensor));
    pc->had_data = calloc((size_t)n_inputs + 1, sizeof(bool));
    if ((opt->devices && !pc->devices) || (opt->placement && !pc->placement) || !pc->given || !pc->had_data) return false;
    pc->n_given = n_inputs;
    for (int i = 0; i < n_inputs; i++) {
        smelt_tensor *x = &pc->given[i];
        *x = inputs[i];
        x->name = inputs[i].name ? strdup(inputs[i].name) : NULL;
        x->data = NULL;
        pc->had_data[i] = inputs[i].data != NULL;
        if (inputs[i].name && !x->name) return false;
    }
    return true;
}

smelt_status program_cache_load(smelt_program *p, const smelt_options *opt, int n_inputs, const smelt_tensor *inputs,
                                const char key[33], bool *hit)
{
    *hit = false;
    rt_cache c;
    if (rt_cache_open(&c) != SMELT_OK) {
        diag_clear();
        return SMELT_OK;
    }
    char name[64];
    snprintf(name, sizeof name, "%s%s", key, ENTRY_SUFFIX);
    size_t size = 0;
    void *map = rt_cache_map(&c, name, &size);
    rt_cache_close(&c);
    if (!map) return SMELT_OK;
    const entry_header *hd = entry_check(map, size, key);
    if (!hd) {
        munmap(map, size);
        return SMELT_OK;
    }
    p->cached = calloc(1, sizeof *p->cached);
    if (!p->cached) {
        munmap(map, size);
        return diag_fail(SMELT_ERR_NOMEM, "out of memory");
    }
    p->cached->map = map;
    p->cached->map_bytes = size;
    rbuf r = {(const char *)map + sizeof *hd, 0, hd->meta_bytes, false};
    const char *object = NULL;
    uint64_t object_digest[2] = {0, 0};
    bool ok = read_program(p, &r, (const char *)map + hd->blob_offset, size - hd->blob_offset, &object, object_digest) &&
              keep_origin(p->cached, opt, n_inputs, inputs);
    for (int i = 0; ok && i < p->n_inputs; i++) { /* the folded values must be the ones given now */
        const program_input *x = &p->inputs[i];
        const smelt_tensor *in = x->folded ? given_for(p, i, n_inputs, inputs) : NULL;
        if (x->folded)
            ok = in && in->data && in->dtype == x->dtype && in->rank == x->shape.rank &&
                 !memcmp(in->shape, x->shape.dim, sizeof(int64_t) * (size_t)in->rank) && !memcmp(in->data, x->values, x->bytes);
    }
    if (ok && rt_cpu_module_load(object, object_digest, &p->module[0]) != SMELT_OK) {
        diag_clear(); /* the object is gone or fails its check: compile */
        ok = false;
    }
    if (!ok) {
        forget(p);
        return SMELT_OK;
    }
    p->cls[0].lang = EMIT_C;
    p->cls[0].n_kernels = p->lp.n_kernels;
    p->cls[0].n_regions = p->cached->n_regions;
    *hit = true;
    return SMELT_OK;
}

void program_cache_free(smelt_program *p)
{
    struct program_cached *pc = p->cached;
    if (!pc) return;
    if (pc->map) munmap(pc->map, pc->map_bytes);
    free(pc->devices);
    free(pc->placement);
    for (int i = 0; pc->given && i < pc->n_given; i++) free((char *)pc->given[i].name);
    free(pc->given);
    free(pc->had_data);
    free(pc);
    p->cached = NULL;
}

int program_cache_nodes(const smelt_program *p) { return p->cached ? p->cached->n_nodes : p->g->n_nodes; }
int program_cache_regions(const smelt_program *p) { return p->cached ? p->cached->n_regions : p->fp.n_regions; }

smelt_status program_cache_full(const smelt_program *p, smelt_program **full)
{
    const struct program_cached *pc = p->cached;
    *full = NULL;
    int n = pc->n_given;
    smelt_tensor *in = calloc((size_t)n + 1, sizeof *in);
    void **zeros = calloc((size_t)n + 1, sizeof(void *));
    smelt_status st = in && zeros ? SMELT_OK : diag_fail(SMELT_ERR_NOMEM, "out of memory");
    for (int i = 0; !st && i < n; i++) {
        in[i] = pc->given[i];
        if (!pc->had_data[i]) continue;
        /* the folded values where the program folded this input; other
         * values are read by no pass (their shapes are what counts) */
        for (int k = 0; k < p->n_inputs && !in[i].data; k++)
            if (p->inputs[k].folded && (in[i].name ? !strcmp(in[i].name, p->inputs[k].name) : k == i))
                in[i].data = (void *)p->inputs[k].values;
        if (in[i].data) continue;
        int64_t numel = 1;
        for (int d = 0; d < in[i].rank; d++) numel *= in[i].shape[d];
        if (!(zeros[i] = calloc((size_t)numel * smelt_dtype_size(in[i].dtype) + 1, 1)))
            st = diag_fail(SMELT_ERR_NOMEM, "out of memory");
        in[i].data = zeros[i];
    }
    if (!st) st = program_compile(p->model, &pc->opt, n, in, false, full);
    for (int i = 0; zeros && i < n; i++) free(zeros[i]);
    free(zeros);
    free(in);
    return st;
}
