#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/program.h"
#include "kir/clean.h"
#include "plan/plan.h"
#include "test.h"

/* ---- random programs, placement only ------------------------------------------------------ */

static void add_kernel(lower_program *p, kir_kernel *k)
{
    if (p->n_kernels == p->cap_kernels) {
        p->cap_kernels = p->cap_kernels ? 2 * p->cap_kernels : 64;
        p->kernels = realloc(p->kernels, sizeof(*p->kernels) * (size_t)p->cap_kernels);
        p->kernel_node = realloc(p->kernel_node, sizeof(int) * (size_t)p->cap_kernels);
    }
    p->kernel_node[p->n_kernels] = 0;
    p->kernels[p->n_kernels++] = k;
}

/* A random program: tensors 0..n_t-1 (some inputs, some constants), kernels
 * each reading a few earlier tensors and writing one new tensor. */
static void random_program(unsigned seed, ir_graph *g, lower_program *p, arena *a)
{
    srand(seed);
    int n_t = 2 + rand() % 40;
    for (int t = 0; t < n_t; t++) {
        ir_shape s = {.rank = 1, .dim = {1 + rand() % 5000}};
        ir_tensor_add(g, "t", SMELT_F32, &s);
    }
    g->tensors[0].is_input = true;
    if (rand() % 2) ir_tensor_alloc_data(g, 1);
    int out = n_t - 1;
    g->tensors[out].is_output = true;
    for (int t = 1; t < n_t; t++) {
        if (g->tensors[t].data) continue;
        kir_kernel *k = kir_kernel_new(a, p->n_kernels, 1, "k");
        int reads = 1 + rand() % 3;
        for (int r = 0; r < reads; r++) {
            int src = rand() % t;
            kir_buffer_add(k, SMELT_F32, ir_tensor_numel(&g->tensors[src]), src, true, false);
        }
        kir_buffer_add(k, SMELT_F32, ir_tensor_numel(&g->tensors[t]), t, false, true);
        add_kernel(p, k);
    }
}

/* The invariant, checked independently of plan_verify: roots live at the same
 * time do not overlap; an alias is its root's memory and lives inside it. */
static void check_invariant(const mem_plan *m)
{
    for (int x = 0; x < m->n_slots; x++) {
        const plan_slot *u = &m->slots[x];
        if (u->alias >= 0) {
            const plan_slot *r = &m->slots[u->alias];
            CHECK(r->alias < 0 && r->kind == u->kind && r->offset == u->offset);
            CHECK(u->last < 0 || (r->first <= u->first && u->last <= r->last));
            continue;
        }
        for (int y = x + 1; y < m->n_slots; y++) {
            const plan_slot *v = &m->slots[y];
            if (u->kind != PLAN_ARENA || v->kind != PLAN_ARENA || v->alias >= 0) continue;
            bool live_together = u->first <= v->last && v->first <= u->last;
            bool overlap = u->offset < v->offset + v->bytes && v->offset < u->offset + u->bytes;
            CHECK(!(live_together && overlap));
        }
    }
    CHECK(m->arena_bytes >= m->lower_bound);
    CHECK(m->arena_bytes == (m->first_fit_bytes < m->best_fit_bytes ? m->first_fit_bytes : m->best_fit_bytes));
}

TEST(plan_random_programs_never_overlap_live_tensors)
{
    int64_t ff = 0, bf = 0, lb = 0, ff_wins = 0, bf_wins = 0;
    for (unsigned seed = 1; seed <= 2000; seed++) {
        ir_graph *g = ir_graph_new();
        arena a;
        arena_init(&a);
        lower_program p;
        lower_program_init(&p, &a);
        random_program(seed, g, &p, &a);
        mem_plan m;
        CHECK(plan_build(g, &p, &m) == SMELT_OK);
        CHECK(plan_verify(&m, &p) == SMELT_OK);
        CHECK(m.arena_bytes <= m.total_bytes);
        check_invariant(&m);
        ff += m.first_fit_bytes, bf += m.best_fit_bytes, lb += m.lower_bound;
        ff_wins += m.first_fit_bytes < m.best_fit_bytes, bf_wins += m.best_fit_bytes < m.first_fit_bytes;
        plan_free(&m);
        lower_program_free(&p);
        arena_free(&a);
        ir_graph_free(g);
        if (test_failures) break;
    }
    if (getenv("SMELT_PLAN_STATS"))
        fprintf(stderr, "plan: first-fit %.4f, best-fit %.4f of the lower bound; first-fit smaller %lld times, "
                        "best-fit %lld times\n", (double)ff / (double)lb, (double)bf / (double)lb,
                (long long)ff_wins, (long long)bf_wins);
}

/* ---- random programs with views and in-place, executed ----------------------------------- */

enum { MODE_SAME, MODE_REVERSED, MODE_MODULO };

/* Kernel t := 0.5 + sum over reads of loads, over `nwg` workgroups of a chunk each
 * (and t2 := 2 t when t2 >= 0: a second output of the same size). A read in
 * MODE_SAME loads at the store's index (in-place is allowed); the others load
 * elsewhere (in-place would be wrong, and the run below would see it). */
static void elementwise_kernel(lower_program *p, arena *a, const ir_graph *g, int t, int t2, int n_reads,
                               const int *src, const int *mode, int nwg)
{
    int64_t n = ir_tensor_numel(&g->tensors[t]), chunk = (n + nwg - 1) / nwg;
    kir_kernel *k = kir_kernel_new(a, p->n_kernels, nwg, "k");
    int w = kir_buffer_add(k, SMELT_F32, n, t, false, true);
    int w2 = t2 >= 0 ? kir_buffer_add(k, SMELT_F32, n, t2, false, true) : -1;
    int rb[4];
    for (int r = 0; r < n_reads; r++)
        rb[r] = kir_buffer_add(k, SMELT_F32, ir_tensor_numel(&g->tensors[src[r]]), src[r], true, false);
    kir_val lo = kir_mul(k, kir_wg(k), kir_idx(k, chunk));
    kir_val hi = kir_binary(k, KIR_MIN, kir_add(k, lo, kir_idx(k, chunk)), kir_idx(k, n));
    kir_val i = kir_loop_begin(k, lo, hi, kir_idx(k, 1));
    kir_val acc = kir_const_f(k, SMELT_F32, 0.5);
    for (int r = 0; r < n_reads; r++) {
        int64_t nr = k->bufs[rb[r]].numel;
        kir_val ir = kir_binary(k, KIR_MOD, i, kir_idx(k, nr));
        if (mode[r] == MODE_SAME) ir = kir_add(k, kir_mul(k, i, kir_idx(k, 1)), kir_idx(k, 0));
        if (mode[r] == MODE_REVERSED) ir = kir_binary(k, KIR_SUB, kir_idx(k, nr - 1), ir);
        kir_val v = kir_load(k, rb[r], ir);
        acc = kir_binary(k, KIR_ADD, kir_binary(k, KIR_MUL, acc, kir_const_f(k, SMELT_F32, 0.75)), v);
    }
    kir_store(k, w, kir_add(k, i, kir_idx(k, 0)), acc);
    if (w2 >= 0) kir_store(k, w2, i, kir_binary(k, KIR_MUL, acc, kir_const_f(k, SMELT_F32, 2)));
    kir_loop_end(k);
    add_kernel(p, k);
}

/* Tensors of a few sizes (so sizes often match), views (Reshape nodes) of
 * earlier tensors, kernels; some tensors (views too) are graph outputs. */
static void random_program_ops(unsigned seed, ir_graph *g, lower_program *p, arena *a)
{
    srand(seed);
    static const int64_t sizes[] = {24, 24, 40, 64};
    int steps = 2 + rand() % 30;
    ir_shape s0 = {.rank = 1, .dim = {sizes[rand() % 4]}};
    ir_tensor_add(g, "x", SMELT_F32, &s0);
    g->tensors[0].is_input = true;
    if (rand() % 2) {
        ir_shape s = {.rank = 1, .dim = {sizes[rand() % 4]}};
        int c = ir_tensor_add(g, "w", SMELT_F32, &s);
        float *d = ir_tensor_alloc_data(g, c);
        for (int64_t i = 0; i < s.dim[0]; i++) d[i] = (float)(i % 7) - 3;
    }
    for (int step = 0; step < steps; step++) {
        int n_t = g->n_tensors;
        if (rand() % 4 == 0) {
            int src = rand() % n_t;
            ir_shape s = {.rank = 2, .dim = {1, ir_tensor_numel(&g->tensors[src])}};
            int dst = ir_tensor_add(g, "v", SMELT_F32, &s);
            ir_node_add(g, "view", OP_Reshape, 1, &src, 1, &dst);
            g->tensors[dst].producer = g->n_nodes - 1;
            continue;
        }
        int src[4], mode[4], n_reads = 1 + rand() % 3;
        ir_shape s = {.rank = 1, .dim = {sizes[rand() % 4]}};
        for (int r = 0; r < n_reads; r++) {
            src[r] = rand() % n_t;
            if (rand() % 2) { /* favour the newest tensors, which tend to die here */
                src[r] = n_t - 1 - rand() % (n_t < 3 ? n_t : 3);
                s.dim[0] = ir_tensor_numel(&g->tensors[src[r]]);
            }
        }
        int t = ir_tensor_add(g, "t", SMELT_F32, &s);
        int t2 = rand() % 5 == 0 ? ir_tensor_add(g, "t2", SMELT_F32, &s) : -1;
        for (int r = 0; r < n_reads; r++) {
            int pick = rand() % 4;
            mode[r] = pick < 2 ? MODE_SAME : pick == 2 ? MODE_REVERSED : MODE_MODULO;
            if (ir_tensor_numel(&g->tensors[src[r]]) != s.dim[0]) mode[r] = MODE_MODULO;
        }
        elementwise_kernel(p, a, g, t, t2, n_reads, src, mode, 1 + rand() % 3);
    }
    g->tensors[g->n_tensors - 1].is_output = true;
    for (int t = 1; t < g->n_tensors; t++)
        if (rand() % 8 == 0) g->tensors[t].is_output = true;
}

/* Where each tensor lives in the unplanned reference run: its own buffer (a view: its source's). */
static float *ref_ptr(const ir_graph *g, float **own, int t)
{
    for (int n = 0; n < g->n_nodes; n++)
        if (g->nodes[n].out[0] == t) return ref_ptr(g, own, g->nodes[n].in[0]);
    return g->tensors[t].data ? g->tensors[t].data : own[t];
}

TEST(plan_random_programs_with_views_and_in_place_compute_the_same)
{
    int views = 0, in_place = 0;
    for (unsigned seed = 1; seed <= 3000 && !test_failures; seed++) {
        ir_graph *g = ir_graph_new();
        arena a;
        arena_init(&a);
        lower_program p;
        lower_program_init(&p, &a);
        random_program_ops(seed, g, &p, &a);
        mem_plan m;
        CHECK(plan_build(g, &p, &m) == SMELT_OK);
        CHECK(plan_verify(&m, &p) == SMELT_OK);
        check_invariant(&m);
        views += m.n_views, in_place += m.n_in_place;
        int n = g->n_tensors;
        float **own = calloc((size_t)n, sizeof(float *));
        void **planned = calloc((size_t)n, sizeof(void *));
        unsigned char *mem = malloc((size_t)m.arena_bytes + 1);
        memset(mem, 0xff, (size_t)m.arena_bytes + 1); /* NaNs: reading an unwritten element shows */
        for (int t = 0; t < n; t++) {
            own[t] = calloc((size_t)ir_tensor_numel(&g->tensors[t]), sizeof(float));
            if (t == 0)
                for (int64_t i = 0; i < ir_tensor_numel(&g->tensors[0]); i++) own[0][i] = (float)i * 0.25f;
        }
        for (int t = 0; t < n; t++) {
            const plan_slot *x = &m.slots[t];
            int root = x->alias >= 0 ? x->alias : t;
            planned[t] = x->kind == PLAN_ARENA ? (void *)(mem + x->offset)
                         : x->kind == PLAN_INPUT ? (void *)own[root] : g->tensors[root].data;
        }
        for (int ki = 0; ki < p.n_kernels && !test_failures; ki++) {
            const kir_kernel *k = p.kernels[ki];
            void *rb[8], *pb[8];
            for (int b = 0; b < k->n_bufs; b++) {
                rb[b] = ref_ptr(g, own, k->bufs[b].tensor);
                pb[b] = planned[k->bufs[b].tensor];
            }
            CHECK(kir_interpret(k, rb) == SMELT_OK);
            CHECK(kir_interpret(k, pb) == SMELT_OK);
            for (int b = 0; b < k->n_bufs; b++)
                if (k->bufs[b].written) CHECK(memcmp(rb[b], pb[b], sizeof(float) * (size_t)k->bufs[b].numel) == 0);
            if (test_failures) fprintf(stderr, "  seed %u: kernel %d differs\n", seed, ki);
        }
        for (int t = 0; t < n && !test_failures; t++)
            if (g->tensors[t].is_output) {
                CHECK(planned[t] != NULL);
                CHECK(memcmp(ref_ptr(g, own, t), planned[t], sizeof(float) * (size_t)ir_tensor_numel(&g->tensors[t])) == 0);
                if (test_failures) fprintf(stderr, "  seed %u: output %d differs\n", seed, t);
            }
        for (int t = 0; t < n; t++) free(own[t]);
        free(own);
        free(planned);
        free(mem);
        plan_free(&m);
        lower_program_free(&p);
        arena_free(&a);
        ir_graph_free(g);
    }
    CHECK(views > 1000);
    CHECK(in_place > 1000);
}

/* ---- small hand-made plans ------------------------------------------------------------------ */

TEST(plan_chain_reuses_memory)
{
    /* t0 (input) -> t1 -> t2 -> t3 -> t4 (output), all 1000 floats, kernels
     * with no body (so no in-place): a chain needs two live buffers at a time,
     * so the arena holds two, not four. */
    ir_graph *g = ir_graph_new();
    arena a;
    arena_init(&a);
    lower_program p;
    lower_program_init(&p, &a);
    ir_shape s = {.rank = 1, .dim = {1000}};
    for (int t = 0; t < 5; t++) ir_tensor_add(g, "t", SMELT_F32, &s);
    g->tensors[0].is_input = true;
    g->tensors[4].is_output = true;
    for (int i = 0; i < 4; i++) {
        kir_kernel *k = kir_kernel_new(&a, i, 1, "k");
        kir_buffer_add(k, SMELT_F32, 1000, i, true, false);
        kir_buffer_add(k, SMELT_F32, 1000, i + 1, false, true);
        add_kernel(&p, k);
    }
    mem_plan m;
    CHECK(plan_build(g, &p, &m) == SMELT_OK);
    CHECK_EQ_INT(m.total_bytes, 4 * 4032);
    CHECK_EQ_INT(m.arena_bytes, 2 * 4032);
    CHECK_EQ_INT(m.lower_bound, 2 * 4032);
    CHECK_EQ_INT(m.n_in_place, 0);
    CHECK(m.slots[0].kind == PLAN_INPUT);
    plan_free(&m);
    lower_program_free(&p);
    arena_free(&a);
    ir_graph_free(g);
}

TEST(plan_elementwise_chain_runs_in_place_in_one_buffer)
{
    /* The same chain with elementwise bodies: every kernel writes over its
     * dying input, so t1..t4 share one buffer and the reads bind to the write. */
    ir_graph *g = ir_graph_new();
    arena a;
    arena_init(&a);
    lower_program p;
    lower_program_init(&p, &a);
    ir_shape s = {.rank = 1, .dim = {1000}};
    for (int t = 0; t < 5; t++) ir_tensor_add(g, "t", SMELT_F32, &s);
    g->tensors[0].is_input = true;
    g->tensors[4].is_output = true;
    for (int i = 0; i < 4; i++) {
        int src = i, mode = MODE_SAME;
        elementwise_kernel(&p, &a, g, i + 1, -1, 1, &src, &mode, 3);
    }
    mem_plan m;
    CHECK(plan_build(g, &p, &m) == SMELT_OK);
    CHECK_EQ_INT(m.arena_bytes, 4032);
    CHECK_EQ_INT(m.n_in_place, 3);
    CHECK(m.slots[4].alias == 1 && m.slots[4].in_place);
    CHECK_EQ_INT(m.in_place_of[0][1], -1); /* reads the caller's input: not in place */
    CHECK_EQ_INT(m.in_place_of[3][1], 0);
    plan_free(&m);
    lower_program_free(&p);
    arena_free(&a);
    ir_graph_free(g);
}

TEST(plan_in_place_survives_kernel_cleanup)
{
    /* x -> k0 -> a; k1: b = a * a, reading a twice at the same index. The
     * Kernel-IR cleanup merges the two loads and drops the duplicate (its value
     * stays in the table with no defining statement); b still writes over the
     * dying a. (The planner once counted the dropped load as a read of a at no
     * statement, and gave up: bench transformer's arena grew 0.66 -> 1.1 MB.) */
    ir_graph *g = ir_graph_new();
    arena ar;
    arena_init(&ar);
    lower_program p;
    lower_program_init(&p, &ar);
    ir_shape s = {.rank = 1, .dim = {256}};
    for (int t = 0; t < 3; t++) ir_tensor_add(g, "t", SMELT_F32, &s);
    g->tensors[0].is_input = true;
    g->tensors[2].is_output = true;
    int src = 0, mode = MODE_SAME;
    elementwise_kernel(&p, &ar, g, 1, -1, 1, &src, &mode, 2);
    kir_kernel *k = kir_kernel_new(&ar, 1, 1, "k");
    int w = kir_buffer_add(k, SMELT_F32, 256, 2, false, true), r = kir_buffer_add(k, SMELT_F32, 256, 1, true, false);
    kir_val i = kir_loop_begin(k, kir_idx(k, 0), kir_idx(k, 256), kir_idx(k, 1));
    kir_store(k, w, i, kir_binary(k, KIR_MUL, kir_load(k, r, i), kir_load(k, r, i)));
    kir_loop_end(k);
    add_kernel(&p, k);
    int loads = 0, defined = 0;
    CHECK(kir_clean(p.kernels[1]) == SMELT_OK);
    for (kir_val v = 1; v < p.kernels[1]->n_vals; v++)
        if (p.kernels[1]->vals[v].op == KIR_LOAD) loads++, defined += p.kernels[1]->vals[v].def >= 0;
    CHECK_EQ_INT(loads, 2);   /* the merged duplicate is still in the table ... */
    CHECK_EQ_INT(defined, 1); /* ... with no statement */
    mem_plan m;
    CHECK(plan_build(g, &p, &m) == SMELT_OK);
    CHECK(plan_verify(&m, &p) == SMELT_OK);
    CHECK_EQ_INT(m.n_in_place, 1);
    CHECK(m.slots[2].alias == 1 && m.slots[2].in_place);
    plan_free(&m);
    lower_program_free(&p);
    arena_free(&ar);
    ir_graph_free(g);
}

TEST(plan_two_outputs_never_share_one_dying_input)
{
    /* x -> k0 -> a; k1: b = f(a) (never read), c = 2 f(a) (output). Only one of
     * b and c may take a's memory, even though b is dead after k1 too: once b
     * has, a's group holds a buffer k1 writes, which rules out a second taker. */
    ir_graph *g = ir_graph_new();
    arena ar;
    arena_init(&ar);
    lower_program p;
    lower_program_init(&p, &ar);
    ir_shape s = {.rank = 1, .dim = {100}};
    for (int t = 0; t < 4; t++) ir_tensor_add(g, "t", SMELT_F32, &s);
    g->tensors[0].is_input = true;
    g->tensors[3].is_output = true;
    int src = 0, mode = MODE_SAME;
    elementwise_kernel(&p, &ar, g, 1, -1, 1, &src, &mode, 1);
    src = 1;
    elementwise_kernel(&p, &ar, g, 2, 3, 1, &src, &mode, 2);
    mem_plan m;
    CHECK(plan_build(g, &p, &m) == SMELT_OK);
    CHECK_EQ_INT(m.n_in_place, 1);
    CHECK(!(m.slots[2].alias == 1 && m.slots[3].alias == 1));
    plan_free(&m);
    lower_program_free(&p);
    arena_free(&ar);
    ir_graph_free(g);
}

/* ---- whole programs: views, --max-memory, no allocation during a run ------------------------ */

/* Count allocations while `counting` is set, by interposing malloc & co. over
 * glibc's. Sanitizer builds have their own allocator: there the count stays 0
 * and the test only checks the outputs. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define PLAN_COUNT_ALLOCS 0
#else
#define PLAN_COUNT_ALLOCS 1
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
static atomic_int counting, n_allocs;
void *malloc(size_t n)
{
    if (atomic_load(&counting)) atomic_fetch_add(&n_allocs, 1);
    return __libc_malloc(n);
}
void *calloc(size_t n, size_t m)
{
    if (atomic_load(&counting)) atomic_fetch_add(&n_allocs, 1);
    return __libc_calloc(n, m);
}
void *realloc(void *p, size_t n)
{
    if (atomic_load(&counting)) atomic_fetch_add(&n_allocs, 1);
    return __libc_realloc(p, n);
}
void *aligned_alloc(size_t al, size_t n)
{
    if (atomic_load(&counting)) atomic_fetch_add(&n_allocs, 1);
    return __libc_memalign(al, n);
}
#endif

/* x[4,256] -> Relu -> Reshape [1024] -> Sigmoid -> Add w -> Identity -> y, and
 * y2 = Reshape(x): a view of the input as a graph output. */
static ir_graph *views_graph(void)
{
    ir_graph *g = ir_graph_new();
    ir_shape sx = {.rank = 2, .dim = {4, 256}}, s1 = {.rank = 1, .dim = {1024}}, sh = {.rank = 1, .dim = {1}};
    int x = ir_tensor_add(g, "x", SMELT_F32, &sx);
    int r = ir_tensor_add(g, "r", SMELT_F32, NULL), v = ir_tensor_add(g, "v", SMELT_F32, NULL);
    int sg = ir_tensor_add(g, "s", SMELT_F32, NULL), ad = ir_tensor_add(g, "a", SMELT_F32, NULL);
    int y = ir_tensor_add(g, "y", SMELT_F32, NULL), y2 = ir_tensor_add(g, "y2", SMELT_F32, NULL);
    int shape = ir_tensor_add(g, "shape", SMELT_I64, &sh), w = ir_tensor_add(g, "w", SMELT_F32, &s1);
    ((int64_t *)ir_tensor_alloc_data(g, shape))[0] = 1024;
    float *wd = ir_tensor_alloc_data(g, w);
    for (int i = 0; i < 1024; i++) wd[i] = (float)(i % 5);
    int in_r[] = {x}, in_v[] = {r, shape}, in_s[] = {v}, in_a[] = {sg, w}, in_y[] = {ad}, in_y2[] = {x, shape};
    ir_node_add(g, "relu", OP_Relu, 1, in_r, 1, &r);
    ir_node_add(g, "reshape", OP_Reshape, 2, in_v, 1, &v);
    ir_node_add(g, "sigmoid", OP_Sigmoid, 1, in_s, 1, &sg);
    ir_node_add(g, "add", OP_Add, 2, in_a, 1, &ad);
    ir_node_add(g, "identity", OP_Identity, 1, in_y, 1, &y);
    ir_node_add(g, "reshape2", OP_Reshape, 2, in_y2, 1, &y2);
    for (int n = 0; n < g->n_nodes; n++) g->tensors[g->nodes[n].out[0]].producer = n;
    int outs[] = {y, y2};
    ir_graph_set_io(g, 1, &x, 2, outs);
    return g;
}

TEST(plan_program_views_in_place_and_no_allocation_in_run)
{
    char dir[] = "/tmp/smelt-test-plan-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    setenv("SMELT_CACHE_DIR", dir, 1);
    struct smelt_model model = {.g = views_graph()}; /* no matmul: no packed weights to free */
    smelt_options opt;
    smelt_options_init(&opt);
    opt.threads = 2;
    opt.no_fuse = 1; /* one kernel per op, so the plan has tensors to alias and overwrite */
    smelt_program *p = NULL;
    CHECK(smelt_program_compile(&model, &opt, 0, NULL, &p) == SMELT_OK);
    if (p) {
        CHECK_EQ_INT(p->lp.n_kernels, 3);     /* Relu, Sigmoid, Add: the views are not kernels */
        CHECK_EQ_INT(p->plan.n_views, 3);
        CHECK_EQ_INT(p->plan.n_in_place, 2);  /* Sigmoid over Relu's output, Add over Sigmoid's */
        CHECK_EQ_INT(p->plan.arena_bytes, 4096);
        float x[1024];
        for (int i = 0; i < 1024; i++) x[i] = (float)(i % 9) - 4;
        smelt_tensor in = {.name = "x", .dtype = SMELT_F32, .rank = 2, .shape = {4, 256}, .data = x};
        CHECK(smelt_program_run(p, 1, &in) == SMELT_OK);
#if PLAN_COUNT_ALLOCS
        void *volatile probe; /* the counter counts: one malloc here */
        atomic_store(&n_allocs, 0);
        atomic_store(&counting, 1);
        probe = malloc(16);
        atomic_store(&counting, 0);
        free(probe);
        CHECK_EQ_INT(atomic_load(&n_allocs), 1);
        atomic_store(&n_allocs, 0);
        atomic_store(&counting, 1);
#endif
        for (int r = 0; r < 5; r++) CHECK(smelt_program_run(p, 1, &in) == SMELT_OK);
#if PLAN_COUNT_ALLOCS
        atomic_store(&counting, 0);
        CHECK_EQ_INT(atomic_load(&n_allocs), 0);
#endif
        smelt_tensor y, y2;
        CHECK(smelt_program_output(p, 0, &y) == SMELT_OK);
        CHECK(smelt_program_output(p, 1, &y2) == SMELT_OK);
        CHECK(y2.data == (void *)x); /* a view of the input is the input */
        CHECK_EQ_INT(y2.rank, 1);
        for (int i = 0; i < 1024 && !test_failures; i++) {
            float relu = x[i] > 0 ? x[i] : 0;
            CHECK_NEAR(((float *)y.data)[i], 1 / (1 + expf(-relu)) + (float)(i % 5), 1e-5);
        }
        smelt_program_free(p);
    }
    opt.max_memory = 4095;
    CHECK(smelt_program_compile(&model, &opt, 0, NULL, &p) == SMELT_ERR_NOMEM);
    CHECK(p == NULL);
    CHECK_STR_HAS(smelt_last_error(), "needs 4096 bytes");
    CHECK_STR_HAS(smelt_last_error(), "limit of 4095 bytes");
    opt.max_memory = 4096;
    CHECK(smelt_program_compile(&model, &opt, 0, NULL, &p) == SMELT_OK);
    /* Two programs from one model read its weight w in place: not copied. */
    smelt_program *p2 = NULL;
    CHECK(smelt_program_compile(&model, &opt, 0, NULL, &p2) == SMELT_OK);
    for (int i = 0; p && p2 && i < 2; i++) {
        const ir_graph *pg = (i ? p2 : p)->g;
        int wt = -1;
        for (int t = 0; t < pg->n_tensors; t++)
            if (strcmp(pg->tensors[t].name, "w") == 0) wt = t;
        CHECK(wt >= 0 && pg->tensors[wt].data == model.g->tensors[8].data);
    }
    smelt_program_free(p2);
    smelt_program_free(p);
    ir_graph_free(model.g);
    unsetenv("SMELT_CACHE_DIR");
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
}
