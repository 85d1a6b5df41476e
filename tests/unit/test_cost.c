/* place/cost.c: the cost placement's assignment on hand-built region graphs
 * whose right answer is obvious, and the FLOPs of a region. */
#include <string.h>

#include "place/cost.h"
#include "test.h"

static cost_device dev(double flops_per_ms, double link_bytes_per_ms, bool sync)
{
    return (cost_device){.flops_per_ms = flops_per_ms, .bytes_per_ms = 1e9, .launch_ms = 0.001,
                         .link_bytes_per_ms = link_bytes_per_ms, .link_ms = 0.001, .host_memory = true, .sync = sync};
}

TEST(cost_chain_stays_on_one_device_when_transfers_are_expensive)
{
    /* r0 -> r1 -> r2 -> r3, 1 MB between each; device 1 is 20% faster */
    double flops[4] = {1e6, 1e6, 1e6, 1e6}, bytes[4] = {0};
    cost_edge e[3] = {{0, 1, 1 << 20}, {1, 2, 1 << 20}, {2, 3, 1 << 20}};
    cost_graph g = {.n_regions = 4, .flops = flops, .bytes = bytes, .edges = e, .n_edges = 3, .n_dev = 2};
    g.dev[0] = dev(1e6, 1e4, false);
    g.dev[1] = dev(1.2e6, 1e4, false);
    int out[4];
    double ms;
    CHECK(cost_assign(&g, out, &ms) == SMELT_OK);
    for (int r = 0; r < 4; r++) CHECK_EQ_INT(out[r], out[0]); /* never split: a move costs 100+ ms */
    CHECK_EQ_INT(out[0], 1);                                   /* and on the faster device */
    CHECK_NEAR(ms, 4 * (1 / 1.2 + 0.001), 1e-6);
    /* the faster device cannot run r2: the chain moves once there and back, or stays on device 0 */
    bool can[8] = {1, 1, 1, 1, 1, 0, 1, 1};
    g.can = can;
    CHECK(cost_assign(&g, out, &ms) == SMELT_OK);
    for (int r = 0; r < 4; r++) CHECK_EQ_INT(out[r], 0);
    /* no device for a region, an edge backwards: errors */
    bool none[8] = {1, 1, 0, 0, 1, 1, 1, 1};
    g.can = none;
    CHECK(cost_assign(&g, out, &ms) == SMELT_ERR_INVALID_ARG);
    CHECK_STR_HAS(smelt_last_error(), "region 1 can run on no device");
    g.can = NULL;
    cost_edge back = {2, 1, 8};
    g.edges = &back;
    g.n_edges = 1;
    CHECK(cost_assign(&g, out, &ms) == SMELT_ERR_INVALID_ARG);
    diag_clear();
}

TEST(cost_a_tie_stays_on_the_first_device)
{
    /* two identical devices, a chain: every all-on-one-device run ties; the
     * first device of the list keeps it (a later one used to win the tie) */
    double flops[3] = {1e6, 1e6, 1e6}, bytes[3] = {0};
    cost_edge e[2] = {{0, 1, 1 << 20}, {1, 2, 1 << 20}};
    cost_graph g = {.n_regions = 3, .flops = flops, .bytes = bytes, .edges = e, .n_edges = 2, .n_dev = 3};
    g.dev[0] = g.dev[1] = g.dev[2] = dev(1e6, 1e4, false);
    int out[3];
    double ms;
    CHECK(cost_assign(&g, out, &ms) == SMELT_OK);
    for (int r = 0; r < 3; r++) CHECK_EQ_INT(out[r], 0);
}

TEST(cost_independent_branches_go_to_two_devices_when_transfers_are_cheap)
{
    /* r0 (small) -> r1, r2 (heavy, independent) -> r3 (small), 4 KB edges */
    double flops[4] = {1e3, 1e7, 1e7, 1e3}, bytes[4] = {0};
    cost_edge e[4] = {{0, 1, 4096}, {0, 2, 4096}, {1, 3, 4096}, {2, 3, 4096}};
    cost_graph g = {.n_regions = 4, .flops = flops, .bytes = bytes, .edges = e, .n_edges = 4, .n_dev = 2};
    g.dev[0] = dev(1e6, 1e7, false);
    g.dev[1] = dev(1e6, 1e7, false);
    int out[4];
    double ms;
    CHECK(cost_assign(&g, out, &ms) == SMELT_OK);
    CHECK(out[1] != out[2]);   /* the two branches run at once */
    CHECK(ms < 12 && ms > 10); /* about one branch's 10 ms, not two */
    /* expensive transfers (400 MB through two 10 GB/s links: 84 ms a move, more than a branch): all on one device */
    for (int i = 0; i < 4; i++) e[i].bytes = (int64_t)400 << 20;
    CHECK(cost_assign(&g, out, &ms) == SMELT_OK);
    CHECK(out[0] == out[1] && out[1] == out[2] && out[2] == out[3]);
    /* cheap transfers but devices that hold the host thread (the CPU): no overlap to win, one device */
    for (int i = 0; i < 4; i++) e[i].bytes = 4096;
    g.dev[0].sync = g.dev[1].sync = true;
    CHECK(cost_assign(&g, out, &ms) == SMELT_OK);
    CHECK(out[0] == out[1] && out[1] == out[2] && out[2] == out[3]);
    CHECK(ms > 20);
}

TEST(cost_region_flops_count_products)
{
    ir_graph *g = ir_graph_new();
    ir_shape sa = {.rank = 2, .dim = {4, 64}}, sw = {.rank = 2, .dim = {64, 8}}, sy = {.rank = 2, .dim = {4, 8}};
    int a = ir_tensor_add(g, "a", SMELT_F32, &sa), w = ir_tensor_add(g, "w", SMELT_F32, &sw);
    int y = ir_tensor_add(g, "y", SMELT_F32, &sy), z = ir_tensor_add(g, "z", SMELT_F32, &sy);
    int in[] = {a, w};
    int n0 = ir_node_add(g, "mm", OP_MatMul, 2, in, 1, &y), n1 = ir_node_add(g, "relu", OP_Relu, 1, &y, 1, &z);
    int nodes[] = {n0, n1};
    fuse_region r = {.root = n0, .nodes = nodes, .n_nodes = 2};
    CHECK_NEAR(cost_region_flops(g, &r), 2.0 * 32 * 64 + 32, 1e-9);
    ir_graph_free(g);
}

/* Measured times replace the table: by FLOPs device 1 is twice as fast, but
 * the measurement says device 0 runs both regions in a tenth of the time,
 * so both go there and the makespan is the measured sum. */
TEST(cost_follows_measured_times)
{
    double flops[2] = {1e6, 1e6}, bytes[2] = {0};
    cost_edge e = {0, 1, 1024};
    cost_graph g = {.n_regions = 2, .flops = flops, .bytes = bytes, .edges = &e, .n_edges = 1, .n_dev = 2};
    g.dev[0] = dev(1e6, 1e9, false);
    g.dev[1] = dev(2e6, 1e9, false);
    int out[2];
    double ms;
    CHECK(cost_assign(&g, out, &ms) == SMELT_OK);
    CHECK(out[0] == 1 && out[1] == 1); /* the table */
    double measured[4] = {0.05, 0.5, 0.05, 0.5}; /* [r * n_dev + d] */
    g.ms = measured;
    CHECK(cost_assign(&g, out, &ms) == SMELT_OK);
    CHECK(out[0] == 0 && out[1] == 0);
    CHECK_NEAR(ms, 0.1, 1e-9);
    /* r1 measured faster on device 1, but the copy there costs more than it saves */
    measured[3] = 0.04;
    g.dev[0].link_ms = g.dev[1].link_ms = 0.01;
    CHECK(cost_assign(&g, out, &ms) == SMELT_OK);
    CHECK(out[0] == 0 && out[1] == 0);
}

TEST(cost_period_is_the_busiest_device)
{
    /* r0 pinned to device 0, r1 to device 1, 1024 bytes between them: one run
     * is r0, both halves of the copy, r1; overlapping runs end every r + a half */
    double flops[2] = {1e6, 1e6}, bytes[2] = {0};
    cost_edge e = {0, 1, 1024};
    bool can[4] = {1, 0, 0, 1};
    cost_graph g = {.n_regions = 2, .flops = flops, .bytes = bytes, .can = can, .edges = &e, .n_edges = 1, .n_dev = 2};
    g.dev[0] = g.dev[1] = dev(1e6, 1e4, false);
    int out[2];
    double ms;
    CHECK(cost_assign(&g, out, &ms) == SMELT_OK);
    CHECK(out[0] == 0 && out[1] == 1);
    double half = 0.001 + 1024 / 1e4, region = 0.001 + 1;
    CHECK_NEAR(ms, 2 * region + 2 * half, 1e-9);
    CHECK_NEAR(cost_period(&g, out), region + half, 1e-9);
    /* both on device 0: no copy, and no overlap either */
    bool one[4] = {1, 0, 1, 0};
    g.can = one;
    CHECK(cost_assign(&g, out, &ms) == SMELT_OK);
    CHECK_NEAR(cost_period(&g, out), 2 * region, 1e-9);
}
