/* place/: device lists, target classes, placement policies and overrides;
 * and plan/transfers.c: the copies between devices a placement needs, with
 * the bytes they move computed by hand. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "api/program.h"
#include "place/placement.h"
#include "plan/commands.h"
#include "rt/device.h"
#include "test.h"

TEST(place_device_lists_and_classes)
{
    place_devices d;
    CHECK(place_devices_parse(NULL, &d) == SMELT_OK);
    CHECK_EQ_INT(d.n, 1);
    CHECK(strcmp(d.dev[0].spec, "cpu:0") == 0 && d.dev[0].kind == PLACE_CPU);
    CHECK(place_devices_parse("cpu,opencl:1,cuda:2", &d) == SMELT_OK);
    CHECK_EQ_INT(d.n, 3);
    CHECK(d.dev[1].kind == PLACE_OPENCL && d.dev[1].index == 1 && d.dev[2].kind == PLACE_CUDA && d.dev[2].index == 2);
    CHECK_EQ_INT(d.n_classes, 3); /* three languages: three executables */
    /* Two identical OpenCL devices: one class, one executable. */
    CHECK(place_devices_parse("opencl:0,opencl:1", &d) == SMELT_OK);
    CHECK_EQ_INT(d.n_classes, 1);
    CHECK(d.dev[0].cls == 0 && d.dev[1].cls == 0 && d.class_first[0] == 0);
    /* Once opened they differ in identity (another driver) or limits: two. */
    snprintf(d.dev[1].ident, sizeof d.dev[1].ident, "opencl|other driver");
    place_classes(&d);
    CHECK_EQ_INT(d.n_classes, 2);
    CHECK(d.dev[1].cls == 1 && d.class_first[1] == 1);
    snprintf(d.dev[1].ident, sizeof d.dev[1].ident, "%s", d.dev[0].ident);
    d.dev[1].target.smem_limit = 65536;
    place_classes(&d);
    CHECK_EQ_INT(d.n_classes, 2);
    /* cpu, opencl, cpu:1: the two CPUs share class 0 (union-find joins them across the list). */
    CHECK(place_devices_parse("cpu,opencl,cpu:1", &d) == SMELT_OK);
    CHECK_EQ_INT(d.n_classes, 2);
    CHECK(d.dev[0].cls == 0 && d.dev[1].cls == 1 && d.dev[2].cls == 0);
    const char *bad[] = {"gpu", "cpu,", ",cpu", "cpu,cpu:0", "opencl:x", "cpu:", "cpu,cpu:1,cpu:2,cpu:3,cpu:4,cpu:5,cpu:6,cpu:7,cpu:8"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(place_devices_parse(bad[i], &d) == SMELT_ERR_DEVICE);
        diag_clear();
    }
}

/* A graph of two nodes, Conv 'c1' and Relu 'r1', as the regions see them. */
static ir_graph *two_nodes(fuse_region r[2])
{
    ir_graph *g = ir_graph_new();
    ir_shape s = {.rank = 1, .dim = {4}};
    for (int t = 0; t < 3; t++) ir_tensor_add(g, "t", SMELT_F32, &s);
    int in0 = 0, out1 = 1, out2 = 2;
    ir_node_add(g, "c1", OP_Conv, 1, &in0, 1, &out1);
    ir_node_add(g, "r1", OP_Relu, 1, &out1, 1, &out2);
    static int nodes[2] = {0, 1};
    memset(r, 0, 2 * sizeof *r);
    r[0].root = 0, r[0].nodes = &nodes[0], r[0].n_nodes = 1;
    r[1].root = 1, r[1].nodes = &nodes[1], r[1].n_nodes = 1;
    return g;
}

TEST(place_policies_and_overrides)
{
    place_devices d;
    place_policy pol;
    fuse_region r[2];
    ir_graph *g = two_nodes(r);
    int cand[PLACE_MAX_DEVICES];
    CHECK(place_devices_parse("cpu,opencl:0,opencl:1", &d) == SMELT_OK);
    /* fallback: the list in order */
    CHECK(place_policy_parse("fallback", &d, &pol) == SMELT_OK);
    CHECK_EQ_INT(place_region_candidates(&pol, &d, g, &r[0], 0, cand), 3);
    CHECK(cand[0] == 0 && cand[1] == 1 && cand[2] == 2);
    /* by op type, by node name (which wins), and `*` */
    CHECK(place_policy_parse("Conv=opencl:1,r1=opencl,*=cpu", &d, &pol) == SMELT_OK);
    CHECK(place_policy_check(&pol, g) == SMELT_OK);
    CHECK_EQ_INT(place_region_candidates(&pol, &d, g, &r[0], 0, cand), 3);
    CHECK(cand[0] == 2 && cand[1] == 0 && cand[2] == 1);
    place_region_candidates(&pol, &d, g, &r[1], 1, cand);
    CHECK(cand[0] == 1 && cand[1] == 0 && cand[2] == 2);
    CHECK(place_policy_parse("Relu=opencl:1,r1=opencl:0", &d, &pol) == SMELT_OK);
    place_region_candidates(&pol, &d, g, &r[1], 1, cand);
    CHECK_EQ_INT(cand[0], 1);
    CHECK(place_policy_parse("*=opencl:1", &d, &pol) == SMELT_OK);
    place_region_candidates(&pol, &d, g, &r[0], 0, cand);
    CHECK(cand[0] == 2 && cand[1] == 0 && cand[2] == 1);
    /* split, measured or with weights by hand (one per device), and cost */
    CHECK(place_policy_parse("split", &d, &pol) == SMELT_OK);
    CHECK(pol.kind == PLACE_SPLIT && pol.split_weight[0] == 0);
    CHECK(place_policy_parse("split:3:1:2", &d, &pol) == SMELT_OK);
    CHECK(pol.kind == PLACE_SPLIT && pol.split_weight[0] == 3 && pol.split_weight[1] == 1 && pol.split_weight[2] == 2);
    CHECK(place_policy_parse("cost", &d, &pol) == SMELT_OK);
    CHECK(pol.kind == PLACE_COST);
    /* A policy word, then overrides: cost pins what they name; split refuses them, naming the rule. */
    CHECK(place_policy_parse("cost,Conv=opencl:1,*=cpu", &d, &pol) == SMELT_OK);
    CHECK(pol.kind == PLACE_COST && pol.n_over == 1 && pol.over[0].device == 2 && pol.star == 0);
    CHECK(place_region_override(&pol, g, &r[0]) == 2);
    CHECK(!pol.cost_table);
    CHECK(place_policy_parse("cost:table", &d, &pol) == SMELT_OK);
    CHECK(pol.kind == PLACE_COST && pol.cost_table);
    CHECK(place_policy_parse("cost:table,Relu=cpu", &d, &pol) == SMELT_OK);
    CHECK(pol.kind == PLACE_COST && pol.cost_table && pol.n_over == 1);
    CHECK(place_policy_parse("fallback,Relu=opencl", &d, &pol) == SMELT_OK);
    CHECK(pol.kind == PLACE_FALLBACK && pol.n_over == 1 && pol.over[0].device == 1);
    CHECK(place_policy_parse("split,Conv=cpu", &d, &pol) == SMELT_ERR_INVALID_ARG);
    CHECK_STR_HAS(smelt_last_error(), "split runs each batch share whole on one device");
    CHECK(place_policy_parse("split:1:1:1,Conv=cpu", &d, &pol) != SMELT_OK);
    CHECK_STR_HAS(smelt_last_error(), "no override (Conv=cpu)");
    CHECK(place_policy_parse("Conv=cpu,cost", &d, &pol) != SMELT_OK);
    CHECK_STR_HAS(smelt_last_error(), "a policy word goes first");
    CHECK(place_policy_parse("cost,", &d, &pol) != SMELT_OK);
    CHECK(place_policy_parse("costs,Conv=cpu", &d, &pol) != SMELT_OK);
    CHECK_STR_HAS(smelt_last_error(), "unknown placement");
    diag_clear();
    CHECK(place_policy_parse("cost", &d, &pol) == SMELT_OK);
    /* the cost assignment comes after an override, before the list */
    int assign[2] = {2, 1};
    pol.assign = assign;
    place_region_candidates(&pol, &d, g, &r[0], 0, cand);
    CHECK(cand[0] == 2 && cand[1] == 0 && cand[2] == 1);
    place_region_candidates(&pol, &d, g, &r[1], 1, cand);
    CHECK(cand[0] == 1 && cand[1] == 0 && cand[2] == 2);
    /* the errors: an unknown policy, split weights not one positive integer
     * per device, an override naming no device of the list, a malformed one,
     * a key naming nothing */
    const char *bad[] = {"bogus", "splitx", "split:3:1", "split:1:0:1", "split:1:2:3:4", "split:a:b:c", "split:1:1:1:",
                         "costly", "Conv=cuda:0", "Conv=opencl:2", "Conv=", "=cpu", "Conv=gpu"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(place_policy_parse(bad[i], &d, &pol) == SMELT_ERR_INVALID_ARG);
        diag_clear();
    }
    CHECK(place_policy_parse("NoSuchNode=cpu", &d, &pol) == SMELT_OK);
    CHECK(place_policy_check(&pol, g) == SMELT_ERR_INVALID_ARG);
    CHECK_STR_HAS(smelt_last_error(), "NoSuchNode");
    diag_clear();
    ir_graph_free(g);
}

/* t0 (input, 1000 floats) -> k0 -> t1 -> k1 -> t2 (output) -> k2 -> t3
 * (output); k1 reads only elements [250, 750) of t1. */
typedef struct chain {
    ir_graph *g;
    arena a;
    lower_program p;
    mem_plan m;
} chain;

static void chain_build(chain *h)
{
    h->g = ir_graph_new();
    arena_init(&h->a);
    lower_program_init(&h->p, &h->a);
    ir_shape s = {.rank = 1, .dim = {1000}};
    for (int t = 0; t < 4; t++) ir_tensor_add(h->g, "t", SMELT_F32, &s);
    h->g->tensors[0].is_input = true;
    h->p.kernels = calloc(3, sizeof(kir_kernel *));
    h->p.kernel_node = calloc(3, sizeof(int));
    h->p.cap_kernels = 3;
    for (int i = 0; i < 3; i++) {
        kir_kernel *k = kir_kernel_new(&h->a, i, 4, "k");
        int b = kir_buffer_add(k, SMELT_F32, 1000, i, true, false);
        if (i == 1) k->bufs[b].span_lo = 250, k->bufs[b].span_hi = 750;
        kir_buffer_add(k, SMELT_F32, 1000, i + 1, false, true);
        h->p.kernel_node[i] = -1;
        h->p.kernels[h->p.n_kernels++] = k;
    }
    int in = 0, out[2] = {2, 3};
    CHECK(ir_graph_set_io(h->g, 1, &in, 2, out));
    CHECK(plan_build(h->g, &h->p, &h->m) == SMELT_OK);
    CHECK(plan_barriers(h->g, NULL, &h->p, &h->m) == SMELT_OK);
}

static void chain_free(chain *h)
{
    plan_free(&h->m);
    lower_program_free(&h->p);
    arena_free(&h->a);
    ir_graph_free(h->g);
}

TEST(transfers_move_the_sub_range_a_consumer_reads)
{
    chain h;
    chain_build(&h);
    plan_commands c;
    /* k0 on the CPU (host memory), k1 on a device of its own memory, k2 back on the CPU. */
    int on[3] = {0, 1, 0};
    plan_devices pd = {.n = 2, .host_memory = {true, false}, .kernel_device = on};
    CHECK(plan_commands_place(h.g, NULL, &h.p, &h.m, &pd, &c) == SMELT_OK);
    /* t1 to d1: elements [250, 750) = bytes [1000, 3000); t2 back to d0 whole:
     * 4000 bytes; the CPU holds t2 and t3 whole, so no download. Each moves
     * through its own staging bytes (2000 and 4000, rounded up to 64). */
    CHECK_EQ_INT(c.n_transfers, 2);
    CHECK_EQ_INT(c.transfer_bytes, 2000 + 4000);
    CHECK_EQ_INT(c.copy_bytes, 2000 + 4000);
    CHECK_EQ_INT(c.count[PLAN_CMD_COPY], 4);
    CHECK_EQ_INT(c.count[PLAN_CMD_SIGNAL], 2);
    CHECK_EQ_INT(c.count[PLAN_CMD_WAIT], 2);
    CHECK_EQ_INT(c.n_events, 2);
    CHECK_EQ_INT(c.stage_bytes, 2048 + 4032);
    CHECK_EQ_INT(c.count[PLAN_CMD_DISPATCH], 3);
    CHECK(c.dispatches[0] == 2 && c.dispatches[1] == 1);
    /* Each transfer: [host barrier on A] copy A -> stage, signal e on A, [host barrier on B]
     * wait e on B, copy stage -> B; then the consumer's dispatch on B. */
    static const int want[][6] = {/* src, dst, slot, lo, hi, stage */
                                  {0, 1, 1, 1000, 3000, 0},
                                  {1, 0, 2, 0, 4000, 2048}};
    int seen = 0;
    for (int i = 0; i < c.n_cmds; i++) {
        const plan_cmd *x = &c.cmds[i];
        if (x->kind != PLAN_CMD_COPY || x->dst_device != PLAN_HOST || seen >= 2) continue;
        const int *w = want[seen];
        CHECK(x->device == w[0] && x->src_device == w[0] && x->src.slot == w[2] && x->src.lo == w[3] && x->src.hi == w[4] &&
              x->stage == w[5]);
        CHECK(i >= 1 && c.cmds[i - 1].kind == PLAN_CMD_BARRIER && c.cmds[i - 1].host && c.cmds[i - 1].device == w[0]);
        CHECK(i + 3 < c.n_cmds && c.cmds[i + 1].kind == PLAN_CMD_SIGNAL && c.cmds[i + 1].device == w[0] &&
              c.cmds[i + 1].event == seen);
        int j = i + 2;
        if (c.cmds[j].kind == PLAN_CMD_BARRIER) CHECK(c.cmds[j++].device == w[1]); /* B dispatched since its last one */
        CHECK(c.cmds[j].kind == PLAN_CMD_WAIT && c.cmds[j].device == w[1] && c.cmds[j].event == seen);
        CHECK(c.cmds[j + 1].kind == PLAN_CMD_COPY && c.cmds[j + 1].device == w[1] && c.cmds[j + 1].src_device == PLAN_HOST &&
              c.cmds[j + 1].dst_device == w[1] && c.cmds[j + 1].stage == w[5] && c.cmds[j + 1].dst.lo == w[3]);
        CHECK(c.cmds[j + 2].kind == PLAN_CMD_DISPATCH && c.cmds[j + 2].device == w[1]);
        seen++;
    }
    CHECK_EQ_INT(seen, 2);
    CHECK(c.home[2] == 0 && c.home[3] == 0);
    CHECK(c.arena_bytes[1] > 0 && c.arena_bytes[0] > 0);
    CHECK(plan_commands_verify(&c, h.g, &h.p, &h.m, false) == SMELT_OK);
    /* The verifier refuses: each wait removed (the copy out of staging is then
     * ordered after nothing), a wait moved before its signal, a copy out of a
     * device without a barrier after its producer, a copy straight between
     * two devices' memories. */
    for (int i = 0; i < c.n_cmds; i++) {
        if (c.cmds[i].kind != PLAN_CMD_WAIT) continue;
        plan_cmd saved = c.cmds[i];
        memmove(c.cmds + i, c.cmds + i + 1, sizeof(plan_cmd) * (size_t)(c.n_cmds - i - 1));
        c.n_cmds--, c.count[PLAN_CMD_WAIT]--;
        CHECK(plan_commands_verify(&c, h.g, &h.p, &h.m, false) == SMELT_ERR_INTERNAL);
        CHECK_STR_HAS(smelt_last_error(), "with no wait for an event");
        diag_clear();
        memmove(c.cmds + i + 1, c.cmds + i, sizeof(plan_cmd) * (size_t)(c.n_cmds - i));
        c.cmds[i] = saved;
        c.n_cmds++, c.count[PLAN_CMD_WAIT]++;
        CHECK(plan_commands_verify(&c, h.g, &h.p, &h.m, false) == SMELT_OK);
    }
    for (int i = 1; i < c.n_cmds; i++)
        if (c.cmds[i].kind == PLAN_CMD_SIGNAL) {
            int j = i + 1;
            while (c.cmds[j].kind != PLAN_CMD_WAIT) j++;
            plan_cmd sig = c.cmds[i], wait = c.cmds[j];
            c.cmds[i] = wait, c.cmds[j] = sig; /* the wait first: on another device, so both streams stay in order */
            CHECK(plan_commands_verify(&c, h.g, &h.p, &h.m, false) == SMELT_ERR_INTERNAL);
            CHECK_STR_HAS(smelt_last_error(), "which no command before it sets");
            diag_clear();
            c.cmds[i] = sig, c.cmds[j] = wait;
            plan_cmd producer_done = c.cmds[i - 2];
            CHECK(producer_done.kind == PLAN_CMD_BARRIER && producer_done.host);
            c.cmds[i - 2] = c.cmds[i - 3]; /* the producer's dispatch twice instead: no barrier before the copy */
            c.count[PLAN_CMD_BARRIER]--, c.count[PLAN_CMD_DISPATCH]++;
            CHECK(plan_commands_verify(&c, h.g, &h.p, &h.m, false) == SMELT_ERR_INTERNAL);
            CHECK_STR_HAS(smelt_last_error(), "with no barrier between");
            diag_clear();
            c.cmds[i - 2] = producer_done;
            c.count[PLAN_CMD_BARRIER]++, c.count[PLAN_CMD_DISPATCH]--;
            plan_cmd down = c.cmds[i - 1];
            c.cmds[i - 1].dst_device = c.cmds[j + 1].dst_device;
            CHECK(plan_commands_verify(&c, h.g, &h.p, &h.m, false) == SMELT_ERR_INTERNAL);
            CHECK_STR_HAS(smelt_last_error(), "straight into device");
            diag_clear();
            c.cmds[i - 1] = down;
            break;
        }
    CHECK(plan_commands_verify(&c, h.g, &h.p, &h.m, false) == SMELT_OK);
    plan_commands_free(&c);

    /* Both devices without host memory, k2 beside k1: the input uploaded to d0
     * whole, t1's range to d1, the outputs downloaded from d1. */
    int on2[3] = {0, 1, 1};
    plan_devices pd2 = {.n = 2, .host_memory = {false, false}, .kernel_device = on2};
    CHECK(plan_commands_place(h.g, NULL, &h.p, &h.m, &pd2, &c) == SMELT_OK);
    CHECK_EQ_INT(c.n_transfers, 1);
    CHECK_EQ_INT(c.transfer_bytes, 2000);
    CHECK_EQ_INT(c.copy_bytes, 4000 + 2000 + 4000 + 4000);
    CHECK_EQ_INT(c.n_events, 1);
    CHECK(c.home[2] == PLAN_HOST && c.home[3] == PLAN_HOST);
    plan_commands_free(&c);

    /* One device: no transfers at all. */
    CHECK(plan_commands_build(h.g, NULL, &h.p, &h.m, true, &c) == SMELT_OK);
    CHECK_EQ_INT(c.n_transfers, 0);
    CHECK_EQ_INT(c.count[PLAN_CMD_COPY], 0);
    plan_commands_free(&c);
    chain_free(&h);
}

/* x[4,256] -> Relu -> Sigmoid -> Add w -> y, one kernel per op. */
static ir_graph *three_ops(void)
{
    ir_graph *g = ir_graph_new();
    ir_shape sx = {.rank = 2, .dim = {4, 256}};
    int x = ir_tensor_add(g, "x", SMELT_F32, &sx);
    int r = ir_tensor_add(g, "r", SMELT_F32, NULL), sg = ir_tensor_add(g, "s", SMELT_F32, NULL);
    int y = ir_tensor_add(g, "y", SMELT_F32, NULL), w = ir_tensor_add(g, "w", SMELT_F32, &sx);
    float *wd = ir_tensor_alloc_data(g, w);
    for (int i = 0; i < 1024; i++) wd[i] = (float)(i % 5);
    int in_s[] = {r}, in_a[] = {sg, w};
    ir_node_add(g, "relu", OP_Relu, 1, &x, 1, &r);
    ir_node_add(g, "sigmoid", OP_Sigmoid, 1, in_s, 1, &sg);
    ir_node_add(g, "add", OP_Add, 2, in_a, 1, &y);
    for (int n = 0; n < g->n_nodes; n++) g->tensors[g->nodes[n].out[0]].producer = n;
    ir_graph_set_io(g, 1, &x, 1, &y);
    return g;
}

/* Compiled for `devices` with `place`, run on x: y, and the program's counts. */
static bool run_three(struct smelt_model *m, const char *devices, const char *place, const float *x, float *y,
                      plan_commands *counts, int *n_exe)
{
    smelt_options opt;
    smelt_options_init(&opt);
    opt.threads = 1;
    opt.no_fuse = 1;
    opt.devices = devices;
    opt.placement = place;
    smelt_program *p = NULL;
    if (smelt_program_compile(m, &opt, 0, NULL, &p) != SMELT_OK) return false;
    smelt_tensor in = {.name = "x", .dtype = SMELT_F32, .rank = 2, .shape = {4, 256}, .data = (void *)x}, out;
    bool ok = true;
    for (int r = 0; r < 2 && ok; r++) ok = smelt_program_run(p, 1, &in) == SMELT_OK; /* twice: a second run sees the same */
    ok = ok && smelt_program_output(p, 0, &out) == SMELT_OK;
    if (ok) memcpy(y, out.data, 1024 * sizeof(float));
    *counts = p->cmds;
    *n_exe = 0;
    for (int c = 0; c < p->devs.n_classes; c++) *n_exe += p->cls[c].source != NULL;
    counts->cmds = NULL, counts->args = NULL, counts->ranges = NULL, counts->home = NULL; /* freed with p */
    smelt_program_free(p);
    return ok;
}

TEST(place_program_on_two_cpus_equals_one)
{
    char dir[] = "/tmp/smelt-test-place-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    setenv("SMELT_CACHE_DIR", dir, 1);
    struct smelt_model model = {.g = three_ops()};
    float x[1024], one[1024], two[1024];
    for (int i = 0; i < 1024; i++) x[i] = (float)(i % 9) - 4;
    plan_commands c;
    int n_exe;
    CHECK(run_three(&model, "cpu", NULL, x, one, &c, &n_exe));
    CHECK_EQ_INT(c.n_transfers, 0);
    CHECK_EQ_INT(n_exe, 1);
    for (int i = 0; i < 1024 && !test_failures; i++) {
        float relu = x[i] > 0 ? x[i] : 0;
        CHECK_NEAR(one[i], 1 / (1 + expf(-relu)) + (float)(i % 5), 1e-5);
    }
    /* Sigmoid on cpu:1: Relu's output goes there whole (4096 bytes) and
     * Sigmoid's (written over it in place) comes back: two transfers. */
    CHECK(run_three(&model, "cpu:0,cpu:1", "Sigmoid=cpu:1", x, two, &c, &n_exe));
    CHECK_EQ_INT(c.n_transfers, 2);
    CHECK_EQ_INT(c.transfer_bytes, 8192);
    CHECK(c.dispatches[0] == 2 && c.dispatches[1] == 1);
    CHECK_EQ_INT(n_exe, 1); /* one class: both CPUs run the same shared object */
    for (int i = 0; i < 1024 && !test_failures; i++) CHECK_NEAR(two[i], one[i], 1e-6);
    /* By node name, and everything on cpu:1: the input is the caller's memory there too. */
    CHECK(run_three(&model, "cpu:0,cpu:1", "*=cpu:1", x, two, &c, &n_exe));
    CHECK_EQ_INT(c.n_transfers, 0);
    CHECK(c.dispatches[0] == 0 && c.dispatches[1] == 3 && c.arena_bytes[0] == 0);
    for (int i = 0; i < 1024 && !test_failures; i++) CHECK_NEAR(two[i], one[i], 1e-6);
    CHECK(run_three(&model, "cpu:0,cpu:1", "relu=cpu:1,add=cpu:1", x, two, &c, &n_exe));
    CHECK_EQ_INT(c.n_transfers, 2);
    for (int i = 0; i < 1024 && !test_failures; i++) CHECK_NEAR(two[i], one[i], 1e-6);
    /* Errors name what is wrong. */
    CHECK(!run_three(&model, "cpu:0,cpu:1", "Softmaxx=cpu:1", x, two, &c, &n_exe));
    CHECK_STR_HAS(smelt_last_error(), "Softmaxx");
    CHECK(!run_three(&model, "cpu,cpu:4096", NULL, x, two, &c, &n_exe));
    CHECK_STR_HAS(smelt_last_error(), "cpu:4096");
    diag_clear();
    ir_graph_free(model.g);
}

/* One weight read by a MatMul on the CPU and by one on OpenCL (skipped where
 * no OpenCL device exists): the CPU's kernel reads it packed into panels,
 * OpenCL's plain, each device holds only the encoding it reads, two
 * executables, and both outputs equal x w. */
TEST(place_weight_in_each_devices_encoding)
{
    rt_device *probe = NULL;
    if (rt_device_open("opencl", 1, &probe) != SMELT_OK) {
        diag_clear();
        return;
    }
    rt_device_close(probe);
    char dir[] = "/tmp/smelt-test-enc-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    setenv("SMELT_CACHE_DIR", dir, 1);
    enum { M = 8, K = 48, N = 40 };
    ir_graph *g = ir_graph_new();
    ir_shape sx = {.rank = 2, .dim = {M, K}}, sw = {.rank = 2, .dim = {K, N}};
    int x = ir_tensor_add(g, "x", SMELT_F32, &sx), w = ir_tensor_add(g, "w", SMELT_F32, &sw);
    int y[2] = {ir_tensor_add(g, "y1", SMELT_F32, NULL), ir_tensor_add(g, "y2", SMELT_F32, NULL)};
    float *wd = ir_tensor_alloc_data(g, w);
    for (int i = 0; i < K * N; i++) wd[i] = (float)((i * 7) % 11) * 0.125f - 0.5f;
    int in[2] = {x, w};
    ir_node_add(g, "m1", OP_MatMul, 2, in, 1, &y[0]);
    ir_node_add(g, "m2", OP_MatMul, 2, in, 1, &y[1]);
    for (int n = 0; n < g->n_nodes; n++) g->tensors[g->nodes[n].out[0]].producer = n;
    ir_graph_set_io(g, 1, &x, 2, y);
    struct smelt_model model = {.g = g};
    smelt_options opt;
    smelt_options_init(&opt);
    opt.threads = 1;
    opt.devices = "cpu,opencl";
    opt.placement = "m2=opencl";
    smelt_program *p = NULL;
    CHECK(smelt_program_compile(&model, &opt, 0, NULL, &p) == SMELT_OK);
    if (!p) {
        ir_graph_free(g);
        return;
    }
    int n_exe = 0;
    for (int c = 0; c < p->devs.n_classes; c++) n_exe += p->cls[c].source != NULL;
    CHECK_EQ_INT(n_exe, 2);
    int packed = -1, plain = -1;
    for (int i = 0; i < p->lp.n_kernels; i++) {
        const kir_kernel *k = p->lp.kernels[i];
        for (int b = 0; b < k->n_bufs; b++) {
            int t = k->bufs[b].tensor;
            if (t < 0 || t >= p->g->n_tensors || !p->g->tensors[t].data) continue;
            if (p->kernel_device[i] == 0) packed = t;
            else plain = t;
        }
    }
    CHECK(packed >= 0 && p->g->tensors[packed].enc.kind == IR_ENC_PANELS);
    CHECK(plain >= 0 && p->g->tensors[plain].enc.kind == IR_ENC_NONE && p->g->tensors[plain].data == wd);
    size_t ns = (size_t)p->plan.n_slots;
    if (packed >= 0 && plain >= 0) {
        CHECK(p->slot_mem[ns + (size_t)plain].mem != 0);  /* uploaded to OpenCL */
        CHECK(p->slot_mem[ns + (size_t)packed].mem == 0); /* the panels stay on the CPU */
    }
    float xd[M * K];
    for (int i = 0; i < M * K; i++) xd[i] = (float)((i * 5) % 13) * 0.25f - 1.5f;
    smelt_tensor tin = {.name = "x", .dtype = SMELT_F32, .rank = 2, .shape = {M, K}, .data = xd};
    CHECK(smelt_program_run(p, 1, &tin) == SMELT_OK);
    for (int o = 0; o < 2; o++) {
        smelt_tensor out;
        CHECK(smelt_program_output(p, o, &out) == SMELT_OK);
        const float *yd = out.data;
        for (int i = 0; i < M && !test_failures; i++)
            for (int j = 0; j < N; j++) {
                float want = 0;
                for (int kk = 0; kk < K; kk++) want += xd[i * K + kk] * wd[kk * N + j];
                CHECK_NEAR(yd[i * N + j], want, 1e-4);
            }
    }
    smelt_program_free(p);
    for (packed_weight *q = atomic_load(&model.packed), *next; q; q = next) { /* smelt_model_free's part for a model made here */
        next = q->next;
        free(q->data);
        free(q);
    }
    ir_graph_free(g);
}

/* The fallback placement moving a region for real: a MatMul and a Relu on
 * `opencl,cpu` where OpenCL's workgroup memory is limited to 1 KiB
 * (SMELT_DEVICE_SMEM): the tiled GEMM kernel stages two 16x16 f32 tiles (2
 * KiB) and cannot run there, so its region lands on the CPU, and the Relu's
 * (no workgroup memory) stays on OpenCL, its input copied across. Planned
 * without the device (portable rows); run where PoCL is installed. */
TEST(place_fallback_moves_a_region_over_the_device_limit)
{
    enum { M = 8, K = 48, N = 40 };
    ir_graph *g = ir_graph_new();
    ir_shape sx = {.rank = 2, .dim = {M, K}}, sw = {.rank = 2, .dim = {K, N}};
    int x = ir_tensor_add(g, "x", SMELT_F32, &sx), w = ir_tensor_add(g, "w", SMELT_F32, &sw);
    int h = ir_tensor_add(g, "h", SMELT_F32, NULL), y = ir_tensor_add(g, "y", SMELT_F32, NULL);
    float *wd = ir_tensor_alloc_data(g, w);
    for (int i = 0; i < K * N; i++) wd[i] = (float)((i * 7) % 11) * 0.125f - 0.6f;
    int in[2] = {x, w};
    ir_node_add(g, "mm", OP_MatMul, 2, in, 1, &h);
    ir_node_add(g, "relu", OP_Relu, 1, &h, 1, &y);
    for (int n = 0; n < g->n_nodes; n++) g->tensors[g->nodes[n].out[0]].producer = n;
    ir_graph_set_io(g, 1, &x, 1, &y);
    struct smelt_model model = {.g = g};
    smelt_options opt;
    smelt_options_init(&opt);
    opt.threads = 1;
    opt.no_fuse = 1;
    opt.devices = "opencl,cpu";
    opt.stop_after = SMELT_STAGE_PLAN;
    /* Without a limit both regions run on OpenCL, the first device. */
    unsetenv("SMELT_DEVICE_SMEM");
    smelt_program *p = NULL;
    CHECK(smelt_program_compile(&model, &opt, 0, NULL, &p) == SMELT_OK);
    CHECK(p && p->region_device[0] == 0 && p->region_device[1] == 0 && p->cmds.n_transfers == 0);
    smelt_program_free(p);
    setenv("SMELT_DEVICE_SMEM", "opencl:0=1024", 1);
    CHECK(smelt_program_compile(&model, &opt, 0, NULL, &p) == SMELT_OK);
    CHECK(p && p->devs.dev[0].target.smem_limit == 1024 && p->devs.dev[1].target.smem_limit == 0);
    CHECK(p && p->region_device[0] == 1 && p->region_device[1] == 0); /* MatMul on the CPU, Relu on OpenCL */
    CHECK(p && p->cmds.n_transfers == 1 && p->cmds.transfer_bytes == M * N * 4);
    smelt_program_free(p);
    /* Malformed limits are errors naming the entry. */
    setenv("SMELT_DEVICE_SMEM", "opencl:0=lots", 1);
    CHECK(smelt_program_compile(&model, &opt, 0, NULL, &p) != SMELT_OK);
    CHECK_STR_HAS(smelt_last_error(), "opencl:0=lots");
    setenv("SMELT_DEVICE_SMEM", "gpu=1024", 1);
    CHECK(smelt_program_compile(&model, &opt, 0, NULL, &p) != SMELT_OK);
    CHECK_STR_HAS(smelt_last_error(), "gpu=1024");
    diag_clear();
    /* BYTES alone limits every device with workgroup memory; the CPU has none to limit. */
    place_devices d;
    CHECK(place_devices_parse("cpu,opencl:0,opencl:1", &d) == SMELT_OK);
    CHECK(place_devices_limit_smem(&d, "2048") == SMELT_OK);
    CHECK(d.dev[0].target.smem_limit == 0 && d.dev[1].target.smem_limit == 2048 && d.dev[2].target.smem_limit == 2048);
    CHECK(place_devices_limit_smem(&d, "opencl:1=1000,cuda:3=10") == SMELT_OK); /* cuda:3 is not listed: skipped */
    CHECK(d.dev[1].target.smem_limit == 2048 && d.dev[2].target.smem_limit == 1000);
    CHECK(place_devices_limit_smem(&d, "opencl:1=4096") == SMELT_OK); /* only ever lowers */
    CHECK(d.dev[2].target.smem_limit == 1000);
    place_classes(&d);
    CHECK_EQ_INT(d.n_classes, 3); /* the two PoCL devices differ in limits now: two classes */
    /* A device whose workgroups may have 128 threads: the tiled GEMM's 256
     * cannot run there (its region falls back), and the target's own
     * workgroup size comes down to fit (64 under a limit of 100). */
    unsetenv("SMELT_DEVICE_SMEM");
    setenv("SMELT_DEVICE_WG", "opencl:0=128", 1);
    opt.stop_after = SMELT_STAGE_PLAN;
    CHECK(smelt_program_compile(&model, &opt, 0, NULL, &p) == SMELT_OK);
    CHECK(p && p->devs.dev[0].target.max_wg == 128 && p->devs.dev[0].target.wg_size == 128);
    CHECK(p && p->region_device[0] == 1 && p->region_device[1] == 0);
    smelt_program_free(p);
    setenv("SMELT_DEVICE_WG", "100", 1);
    CHECK(smelt_program_compile(&model, &opt, 0, NULL, &p) == SMELT_OK);
    CHECK(p && p->devs.dev[0].target.max_wg == 100 && p->devs.dev[0].target.wg_size == 64 && p->devs.dev[1].target.max_wg == 0);
    CHECK(p && p->region_device[0] == 1 && p->region_device[1] == 0);
    smelt_program_free(p);
    setenv("SMELT_DEVICE_WG", "opencl:0=", 1);
    CHECK(smelt_program_compile(&model, &opt, 0, NULL, &p) != SMELT_OK);
    CHECK_STR_HAS(smelt_last_error(), "workgroup-size limit 'opencl:0='");
    unsetenv("SMELT_DEVICE_WG");
    diag_clear();
    /* Run for real where PoCL is installed: the outputs equal relu(x w). */
    rt_device *probe = NULL;
    if (rt_device_open("opencl", 1, &probe) == SMELT_OK) {
        rt_device_close(probe);
        char dir[] = "/tmp/smelt-test-fb-XXXXXX";
        CHECK(mkdtemp(dir) != NULL);
        setenv("SMELT_CACHE_DIR", dir, 1);
        opt.stop_after = SMELT_STAGE_ALL;
        for (int lim = 0; lim < 2; lim++) { /* over the workgroup memory, then over the threads per workgroup */
            const char *var = lim ? "SMELT_DEVICE_WG" : "SMELT_DEVICE_SMEM";
            setenv(var, lim ? "128" : "1024", 1);
            CHECK(smelt_program_compile(&model, &opt, 0, NULL, &p) == SMELT_OK);
            unsetenv(var);
            CHECK(p && p->region_device[0] == 1 && p->region_device[1] == 0);
            float xd[M * K];
            for (int i = 0; i < M * K; i++) xd[i] = (float)((i * 5) % 13) * 0.25f - 1.5f;
            smelt_tensor tin = {.name = "x", .dtype = SMELT_F32, .rank = 2, .shape = {M, K}, .data = xd}, out;
            CHECK(p && smelt_program_run(p, 1, &tin) == SMELT_OK && smelt_program_output(p, 0, &out) == SMELT_OK);
            const float *yd = p ? out.data : NULL;
            for (int i = 0; yd && i < M && !test_failures; i++)
                for (int j = 0; j < N; j++) {
                    float want = 0;
                    for (int kk = 0; kk < K; kk++) want += xd[i * K + kk] * wd[kk * N + j];
                    CHECK_NEAR(yd[i * N + j], want > 0 ? want : 0, 1e-4);
                }
            smelt_program_free(p);
        }
    }
    diag_clear();
    unsetenv("SMELT_DEVICE_SMEM");
    for (packed_weight *q = atomic_load(&model.packed), *next; q; q = next) {
        next = q->next;
        free(q->data);
        free(q);
    }
    ir_graph_free(g);
}

/* One arena per device (plan_device_arenas): four arena tensors A [k0,k1]
 * 1000 bytes, B [k1,k2] 2000, C [k2,k3] 512, D [k3,k4] 4096; device 0 holds
 * A and C, device 1 B and D. In one arena C meets B and D and lands at 4096
 * (4608 bytes in all); each device's own arena holds only its two, apart in
 * time, so both at offset 0: 1024 and 4096 bytes. */
TEST(place_arena_per_device)
{
    plan_slot s[4] = {{.kind = PLAN_ARENA, .bytes = 1000, .first = 0, .last = 1, .alias = -1},
                      {.kind = PLAN_ARENA, .bytes = 2000, .first = 1, .last = 2, .alias = -1},
                      {.kind = PLAN_ARENA, .bytes = 512, .first = 2, .last = 3, .alias = -1},
                      {.kind = PLAN_ARENA, .bytes = 4096, .first = 3, .last = 4, .alias = -1}};
    mem_plan m = {.slots = s, .n_slots = 4, .n_kernels = 4};
    bool held[8] = {true, false, true, false, false, true, false, true};
    CHECK(plan_device_arenas(&m, 2, held) == SMELT_OK);
    CHECK_EQ_INT(m.dev_arena[0], 1024);
    CHECK_EQ_INT(m.dev_arena[1], 4096);
    CHECK(plan_offset(&m, 0, 0) == 0 && plan_offset(&m, 0, 2) == 0 && plan_offset(&m, 1, 1) == 0 && plan_offset(&m, 1, 3) == 0);
    CHECK(plan_offset(&m, 0, 1) == -1 && plan_offset(&m, 1, 0) == -1); /* not held there */
    /* C live with A on device 0 now: they may not share bytes. */
    s[2].first = 1;
    CHECK(plan_device_arenas(&m, 2, held) == SMELT_OK);
    CHECK_EQ_INT(m.dev_arena[0], 1536);
    CHECK(plan_offset(&m, 0, 0) != plan_offset(&m, 0, 2));
    free(m.dev_offset);
    /* A program on two CPUs: Sigmoid on cpu:1 reads Relu's output r there and
     * writes over it in place, and Add on cpu:0 writes y over that in place:
     * one root of 4096 bytes, held by both. */
    char dir[] = "/tmp/smelt-test-arena-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    setenv("SMELT_CACHE_DIR", dir, 1);
    struct smelt_model model = {.g = three_ops()};
    float x[1024], one[1024], two[1024];
    for (int i = 0; i < 1024; i++) x[i] = (float)(i % 7) - 3;
    plan_commands c;
    int n_exe;
    CHECK(run_three(&model, "cpu", NULL, x, one, &c, &n_exe));
    CHECK(run_three(&model, "cpu:0,cpu:1", "Sigmoid=cpu:1", x, two, &c, &n_exe));
    CHECK_EQ_INT(c.arena_bytes[0], 4096);
    CHECK_EQ_INT(c.arena_bytes[1], 4096);
    for (int i = 0; i < 1024 && !test_failures; i++) CHECK_NEAR(two[i], one[i], 1e-6);
    ir_graph_free(model.g);
}

/* `cost` measures where it runs: the program compiled once more per target
 * class and timed (api/place_measure.c); `cost:table` and a program stopped
 * before running use the table. The run's outputs equal one CPU's. */
TEST(place_cost_measures_region_times)
{
    char dir[] = "/tmp/smelt-test-measure-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    setenv("SMELT_CACHE_DIR", dir, 1);
    struct smelt_model model = {.g = three_ops()};
    smelt_options opt;
    smelt_options_init(&opt);
    opt.threads = 1;
    opt.no_fuse = 1;
    opt.devices = "cpu:0,cpu:1";
    opt.placement = "cost";
    smelt_program *p = NULL;
    CHECK(smelt_program_compile(&model, &opt, 0, NULL, &p) == SMELT_OK);
    CHECK(p && p->cost_measured && p->cost_dev_ms[0] > 0 && p->cost_dev_ms[1] > 0 && p->cost_ms > 0);
    if (p) { /* one class: both devices carry the same measurement */
        CHECK(p->cost_dev_ms[0] == p->cost_dev_ms[1]);
        float x[1024], one[1024];
        for (int i = 0; i < 1024; i++) x[i] = (float)(i % 9) - 4;
        smelt_tensor in = {.name = "x", .dtype = SMELT_F32, .rank = 2, .shape = {4, 256}, .data = x}, out;
        CHECK(smelt_program_run(p, 1, &in) == SMELT_OK && smelt_program_output(p, 0, &out) == SMELT_OK);
        memcpy(one, out.data, sizeof one);
        for (int i = 0; i < 1024 && !test_failures; i++) {
            float relu = x[i] > 0 ? x[i] : 0;
            CHECK_NEAR(one[i], 1 / (1 + expf(-relu)) + (float)(i % 5), 1e-5);
        }
    }
    smelt_program_free(p);
    opt.placement = "cost:table";
    CHECK(smelt_program_compile(&model, &opt, 0, NULL, &p) == SMELT_OK);
    CHECK(p && !p->cost_measured && p->cost_ms > 0);
    smelt_program_free(p);
    opt.placement = "cost";
    opt.stop_after = SMELT_STAGE_PLAN;
    CHECK(smelt_program_compile(&model, &opt, 0, NULL, &p) == SMELT_OK);
    CHECK(p && !p->cost_measured);
    smelt_program_free(p);
    ir_graph_free(model.g);
}
