/* The command list plan/ builds (plan/commands.h) on hand-made programs:
 * its commands and ranges, and the verifier catching broken lists. */
#include <stdlib.h>
#include <string.h>

#include "plan/commands.h"
#include "test.h"

typedef struct hand {
    ir_graph *g;
    arena a;
    lower_program p;
    mem_plan m;
} hand;

static void add(lower_program *p, kir_kernel *k)
{
    if (p->n_kernels == p->cap_kernels) {
        p->cap_kernels = p->cap_kernels ? 2 * p->cap_kernels : 16;
        p->kernels = realloc(p->kernels, sizeof(*p->kernels) * (size_t)p->cap_kernels);
        p->kernel_node = realloc(p->kernel_node, sizeof(int) * (size_t)p->cap_kernels);
    }
    p->kernel_node[p->n_kernels] = -1;
    p->kernels[p->n_kernels++] = k;
}

/* t0 (input, 1000 floats) -> k0 -> t1 -> k1 -> t2 (output), and, when
 * `fan`, a kernel between them reading t0 into t3 (a second output). */
static void hand_build(hand *h, bool fan)
{
    h->g = ir_graph_new();
    arena_init(&h->a);
    lower_program_init(&h->p, &h->a);
    ir_shape s = {.rank = 1, .dim = {1000}};
    for (int t = 0; t < 4; t++) ir_tensor_add(h->g, "t", SMELT_F32, &s);
    h->g->tensors[0].is_input = true;
    h->g->tensors[2].is_output = true;
    for (int i = 0; i < 2; i++) {
        kir_kernel *k = kir_kernel_new(&h->a, i, 4, "k");
        kir_buffer_add(k, SMELT_F32, 1000, i, true, false);
        kir_buffer_add(k, SMELT_F32, 1000, i + 1, false, true);
        add(&h->p, k);
        if (i == 0 && fan) { /* second, so that t3 cannot reuse t1's bytes */
            kir_kernel *f = kir_kernel_new(&h->a, 2, 2, "k");
            kir_buffer_add(f, SMELT_F32, 1000, 0, true, false);
            kir_buffer_add(f, SMELT_F32, 1000, 3, false, true);
            add(&h->p, f);
            h->g->tensors[3].is_output = true;
        }
    }
    int in = 0, out[2] = {2, 3};
    CHECK(ir_graph_set_io(h->g, 1, &in, fan ? 2 : 1, out));
    CHECK(plan_build(h->g, &h->p, &h->m) == SMELT_OK);
    CHECK(plan_barriers(h->g, NULL, &h->p, &h->m) == SMELT_OK);
}

static void hand_free(hand *h)
{
    plan_free(&h->m);
    lower_program_free(&h->p);
    arena_free(&h->a);
    ir_graph_free(h->g);
}

static void remove_cmd(plan_commands *c, int i)
{
    c->count[c->cmds[i].kind]--;
    memmove(c->cmds + i, c->cmds + i + 1, sizeof(plan_cmd) * (size_t)(c->n_cmds - i - 1));
    c->n_cmds--;
}

TEST(commands_chain_on_a_device_without_host_memory)
{
    hand h;
    hand_build(&h, false);
    plan_commands c;
    CHECK(plan_commands_build(h.g, NULL, &h.p, &h.m, false, &c) == SMELT_OK);
    /* upload t0, k0, barrier (k1 reads what k0 writes), k1, host barrier, download t2 */
    CHECK_EQ_INT(c.n_cmds, 6);
    CHECK_EQ_INT(c.count[PLAN_CMD_DISPATCH], 2);
    CHECK_EQ_INT(c.count[PLAN_CMD_COPY], 2);
    CHECK_EQ_INT(c.count[PLAN_CMD_BARRIER], 2);
    CHECK_EQ_INT(c.copy_bytes, 8000);
    const plan_cmd *x = c.cmds;
    CHECK(x[0].kind == PLAN_CMD_COPY && x[0].src_device == PLAN_HOST && x[0].dst_device == 0 && x[0].dst.slot == 0 &&
          x[0].dst.lo == 0 && x[0].dst.hi == 4000);
    CHECK(x[1].kind == PLAN_CMD_DISPATCH && x[1].kernel == 0 && x[1].n_workgroups == 4 && x[1].n_ranges == 2);
    CHECK(x[2].kind == PLAN_CMD_BARRIER && !x[2].host);
    CHECK(x[3].kind == PLAN_CMD_DISPATCH && x[3].kernel == 1);
    const plan_range *r = c.ranges + x[3].first_range;
    CHECK(r[0].slot == 1 && r[0].read && !r[0].write && r[0].lo == 0 && r[0].hi == 4000);
    CHECK(r[1].slot == 2 && r[1].write && r[1].hi == 4000);
    CHECK_EQ_INT(c.args[x[3].first_arg], 1);
    CHECK_EQ_INT(c.args[x[3].first_arg + 1], 2);
    CHECK(x[4].kind == PLAN_CMD_BARRIER && x[4].host);
    CHECK(x[5].kind == PLAN_CMD_COPY && x[5].src_device == 0 && x[5].dst_device == PLAN_HOST && x[5].src.slot == 2);
    for (int i = 0; i < c.n_cmds; i++) CHECK_EQ_INT(c.cmds[i].device, 0);
    plan_commands_free(&c);

    /* On host memory: no copies, the same dispatches and barriers. */
    CHECK(plan_commands_build(h.g, NULL, &h.p, &h.m, true, &c) == SMELT_OK);
    CHECK_EQ_INT(c.n_cmds, 4);
    CHECK_EQ_INT(c.count[PLAN_CMD_COPY], 0);
    CHECK(c.cmds[0].kind == PLAN_CMD_DISPATCH && c.cmds[3].kind == PLAN_CMD_BARRIER && c.cmds[3].host);
    plan_commands_free(&c);
    hand_free(&h);
}

TEST(commands_independent_dispatches_share_a_batch)
{
    /* The fan kernel reads only the input and writes its own output: no
     * barrier before it, and the verifier accepts it running beside k0. */
    hand h;
    hand_build(&h, true);
    plan_commands c;
    CHECK(plan_commands_build(h.g, NULL, &h.p, &h.m, true, &c) == SMELT_OK);
    CHECK_EQ_INT(c.count[PLAN_CMD_DISPATCH], 3);
    CHECK_EQ_INT(c.count[PLAN_CMD_BARRIER], 2); /* before k1, and the host's */
    CHECK(c.cmds[1].kind == PLAN_CMD_DISPATCH && c.cmds[1].kernel == 1 && c.cmds[2].kind == PLAN_CMD_BARRIER);
    plan_commands_free(&c);
    hand_free(&h);
}

TEST(commands_verifier_catches_broken_lists)
{
    hand h;
    hand_build(&h, false);
    plan_commands c;
    CHECK(plan_commands_build(h.g, NULL, &h.p, &h.m, false, &c) == SMELT_OK);
    plan_cmd saved[8];
    int n = c.n_cmds, count[PLAN_CMD_KIND_COUNT];
    memcpy(saved, c.cmds, sizeof(plan_cmd) * (size_t)n);
    memcpy(count, c.count, sizeof count);
#define RESTORE() (memcpy(c.cmds, saved, sizeof(plan_cmd) * (size_t)n), memcpy(c.count, count, sizeof count), c.n_cmds = n)
    CHECK(plan_commands_verify(&c, h.g, &h.p, &h.m, false) == SMELT_OK);

    remove_cmd(&c, 2); /* the barrier between k0 and k1: k1 reads what k0 may still be writing */
    CHECK(plan_commands_verify(&c, h.g, &h.p, &h.m, false) == SMELT_ERR_INTERNAL);
    RESTORE();
    remove_cmd(&c, 0); /* no upload: k0 reads the input before it is on the device */
    CHECK(plan_commands_verify(&c, h.g, &h.p, &h.m, false) == SMELT_ERR_INTERNAL);
    CHECK(plan_commands_verify(&c, h.g, &h.p, &h.m, true) == SMELT_OK); /* fine where the device memory is the host's */
    RESTORE();
    remove_cmd(&c, 1); /* no k0: k1 reads t1, which nothing wrote */
    CHECK(plan_commands_verify(&c, h.g, &h.p, &h.m, false) == SMELT_ERR_INTERNAL);
    RESTORE();
    remove_cmd(&c, 4); /* no host barrier: the download may read before k1 is done */
    CHECK(plan_commands_verify(&c, h.g, &h.p, &h.m, false) == SMELT_ERR_INTERNAL);
    RESTORE();
    c.ranges[c.cmds[3].first_range].hi = 4004; /* past the end of t1 */
    CHECK(plan_commands_verify(&c, h.g, &h.p, &h.m, false) == SMELT_ERR_INTERNAL);
    c.ranges[c.cmds[3].first_range].hi = 4000;
    c.args[c.cmds[3].first_arg] = 0; /* k1's buffer bound to another slot */
    CHECK(plan_commands_verify(&c, h.g, &h.p, &h.m, false) == SMELT_ERR_INTERNAL);
    c.args[c.cmds[3].first_arg] = 1;
    c.cmds[5].dst.hi = 3996; /* a download into fewer bytes than it reads */
    CHECK(plan_commands_verify(&c, h.g, &h.p, &h.m, false) == SMELT_ERR_INTERNAL);
    RESTORE();
    c.cmds[3].device = 1; /* a device the program does not have */
    CHECK(plan_commands_verify(&c, h.g, &h.p, &h.m, false) == SMELT_ERR_INTERNAL);
    RESTORE();
    CHECK(plan_commands_verify(&c, h.g, &h.p, &h.m, false) == SMELT_OK);
#undef RESTORE
    plan_commands_free(&c);
    hand_free(&h);
}
