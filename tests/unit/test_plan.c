#include <stdlib.h>

#include "plan/plan.h"
#include "test.h"

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
        if (p->n_kernels == p->cap_kernels) {
            p->cap_kernels = p->cap_kernels ? 2 * p->cap_kernels : 64;
            p->kernels = realloc(p->kernels, sizeof(*p->kernels) * (size_t)p->cap_kernels);
            p->kernel_node = realloc(p->kernel_node, sizeof(int) * (size_t)p->cap_kernels);
        }
        p->kernel_node[p->n_kernels] = 0;
        p->kernels[p->n_kernels++] = k;
    }
}

TEST(plan_random_programs_never_overlap_live_tensors)
{
    for (unsigned seed = 1; seed <= 2000; seed++) {
        ir_graph *g = ir_graph_new();
        arena a;
        arena_init(&a);
        lower_program p;
        lower_program_init(&p, &a);
        random_program(seed, g, &p, &a);
        mem_plan m;
        CHECK(plan_build(g, &p, &m) == SMELT_OK);
        CHECK(plan_verify(&m) == SMELT_OK);
        CHECK(m.arena_bytes <= m.total_bytes);
        /* Independent check of the invariant, not through plan_verify. */
        for (int x = 0; x < m.n_slots; x++)
            for (int y = x + 1; y < m.n_slots; y++) {
                const plan_slot *u = &m.slots[x], *v = &m.slots[y];
                if (u->kind != PLAN_ARENA || v->kind != PLAN_ARENA) continue;
                bool live_together = u->first <= v->last && v->first <= u->last;
                bool overlap = u->offset < v->offset + v->bytes && v->offset < u->offset + u->bytes;
                CHECK(!(live_together && overlap));
            }
        plan_free(&m);
        lower_program_free(&p);
        arena_free(&a);
        ir_graph_free(g);
        if (test_failures) break;
    }
}

TEST(plan_chain_reuses_memory)
{
    /* t0 (input) -> t1 -> t2 -> t3 -> t4 (output), all 1000 floats: a chain
     * needs two live buffers at a time, so the arena holds two, not four. */
    ir_graph *g = ir_graph_new();
    arena a;
    arena_init(&a);
    lower_program p;
    lower_program_init(&p, &a);
    ir_shape s = {.rank = 1, .dim = {1000}};
    for (int t = 0; t < 5; t++) ir_tensor_add(g, "t", SMELT_F32, &s);
    g->tensors[0].is_input = true;
    g->tensors[4].is_output = true;
    p.cap_kernels = 4;
    p.kernels = calloc(4, sizeof(*p.kernels));
    p.kernel_node = calloc(4, sizeof(int));
    for (int i = 0; i < 4; i++) {
        kir_kernel *k = kir_kernel_new(&a, i, 1, "k");
        kir_buffer_add(k, SMELT_F32, 1000, i, true, false);
        kir_buffer_add(k, SMELT_F32, 1000, i + 1, false, true);
        p.kernels[p.n_kernels++] = k;
    }
    mem_plan m;
    CHECK(plan_build(g, &p, &m) == SMELT_OK);
    CHECK_EQ_INT(m.total_bytes, 4 * 4032);
    CHECK_EQ_INT(m.arena_bytes, 2 * 4032);
    CHECK(m.slots[0].kind == PLAN_INPUT);
    plan_free(&m);
    lower_program_free(&p);
    arena_free(&a);
    ir_graph_free(g);
}
