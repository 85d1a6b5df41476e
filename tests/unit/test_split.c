/* api/split.c: the split placement — the shares, the executables for equal
 * and unequal shares, outputs equal to one device's (and to the product
 * computed here), and the rules that refuse a model whose rows mix. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "api/program.h"
#include "test.h"

TEST(split_shares_follow_the_weights)
{
    int64_t s[4];
    split_shares(8, 2, (double[]){1, 1}, s);
    CHECK(s[0] == 4 && s[1] == 4);
    split_shares(8, 2, (double[]){3, 1}, s);
    CHECK(s[0] == 6 && s[1] == 2);
    split_shares(7, 2, (double[]){1, 1}, s); /* the remainder to the first of equals */
    CHECK(s[0] == 4 && s[1] == 3);
    split_shares(8, 2, (double[]){100, 1}, s); /* 7.92 and 0.08: the slow device gets none */
    CHECK(s[0] == 8 && s[1] == 0);
    split_shares(10, 3, (double[]){1, 1, 1}, s);
    CHECK(s[0] == 4 && s[1] == 3 && s[2] == 3);
    split_shares(5, 3, (double[]){0.5, 0.3, 0.2}, s); /* 2.5, 1.5, 1: the largest remainder first */
    CHECK(s[0] == 3 && s[1] == 1 && s[2] == 1);
    split_shares(9, 2, (double[]){12.1, 0.4}, s);
    CHECK(s[0] == 9 && s[1] == 0);
}

/* x [B,64] -> MatMul w [64,8] -> Relu -> (Softmax on `axis` when axis >= -1) -> y */
static ir_graph *mm_relu(int64_t batch, int axis)
{
    ir_graph *g = ir_graph_new();
    ir_shape sx = {.rank = 2, .dim = {batch, 64}}, sw = {.rank = 2, .dim = {64, 8}};
    int x = ir_tensor_add(g, "x", SMELT_F32, &sx), w = ir_tensor_add(g, "w", SMELT_F32, &sw);
    int m = ir_tensor_add(g, "m", SMELT_F32, NULL), r = ir_tensor_add(g, "r", SMELT_F32, NULL);
    float *wd = ir_tensor_alloc_data(g, w);
    for (int i = 0; i < 64 * 8; i++) wd[i] = (float)((i * 7) % 11 - 5) / 8;
    int in_m[] = {x, w};
    ir_node_add(g, "mm", OP_MatMul, 2, in_m, 1, &m);
    ir_node_add(g, "relu", OP_Relu, 1, &m, 1, &r);
    int y = r;
    if (axis >= -1) {
        y = ir_tensor_add(g, "y", SMELT_F32, NULL);
        int n = ir_node_add(g, "soft", OP_Softmax, 1, &r, 1, &y);
        ir_attr a = {.name = "axis", .type = IR_ATTR_INT, .i = axis};
        ir_node_attr_add(g, n, &a);
    }
    for (int n = 0; n < g->n_nodes; n++) g->tensors[g->nodes[n].out[0]].producer = n;
    ir_graph_set_io(g, 1, &x, 1, &y);
    return g;
}

/* The graph and the weights programs packed into the model's cache. */
static void model_clear(struct smelt_model *m)
{
    for (packed_weight *w = atomic_load(&m->packed), *next; w; w = next) {
        next = w->next;
        free(w->data);
        free(w);
    }
    atomic_store(&m->packed, NULL);
    ir_graph_free(m->g);
}

/* Compiled for devices/place and run on x [8,64]: y [8,8] and the executables `smelt info` counts. */
static bool run_split(struct smelt_model *m, const char *devices, const char *place, const float *x, float *y, int *n_exe)
{
    smelt_options opt;
    smelt_options_init(&opt);
    opt.threads = 1;
    opt.devices = devices;
    opt.placement = place;
    smelt_program *p = NULL;
    if (smelt_program_compile(m, &opt, 0, NULL, &p) != SMELT_OK) return false;
    smelt_tensor in = {.name = "x", .dtype = SMELT_F32, .rank = 2, .shape = {8, 64}, .data = (void *)x}, out;
    bool ok = true;
    for (int r = 0; r < 3 && ok; r++) ok = smelt_program_run(p, 1, &in) == SMELT_OK; /* the workers run again and again */
    ok = ok && smelt_program_output(p, 0, &out) == SMELT_OK && out.rank == 2 && out.shape[0] == 8 && out.shape[1] == 8;
    if (ok) memcpy(y, out.data, 64 * sizeof(float));
    char *info = NULL;
    ok = ok && smelt_program_dump(p, "info", &info) == SMELT_OK;
    const char *e = info ? strstr(info, "\nexecutables: ") : NULL;
    *n_exe = e ? atoi(e + 14) : -1;
    smelt_free(info);
    smelt_program_free(p);
    return ok;
}

TEST(split_equals_one_device_and_counts_executables)
{
    char dir[] = "/tmp/smelt-test-split-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    setenv("SMELT_CACHE_DIR", dir, 1);
    struct smelt_model model = {.g = mm_relu(8, -2)};
    float x[512], one[64], two[64], want[64];
    for (int i = 0; i < 512; i++) x[i] = (float)(i % 13) / 4 - 1.5f;
    const float *w = model.g->tensors[1].data;
    for (int r = 0; r < 8; r++)
        for (int c = 0; c < 8; c++) {
            float acc = 0;
            for (int k = 0; k < 64; k++) acc += x[r * 64 + k] * w[k * 8 + c];
            want[r * 8 + c] = acc > 0 ? acc : 0;
        }
    int n_exe;
    CHECK(run_split(&model, "cpu", NULL, x, one, &n_exe));
    for (int i = 0; i < 64; i++) CHECK_NEAR(one[i], want[i], 1e-4);
    /* equal shares of one class: one executable */
    memset(two, 0, sizeof two);
    CHECK(run_split(&model, "cpu:0,cpu:1", "split:1:1", x, two, &n_exe));
    CHECK_EQ_INT(n_exe, 1);
    for (int i = 0; i < 64; i++) CHECK_NEAR(two[i], one[i], 1e-5);
    /* unequal shares (6 and 2 rows): one variant per share */
    memset(two, 0, sizeof two);
    CHECK(run_split(&model, "cpu:0,cpu:1", "split:3:1", x, two, &n_exe));
    CHECK_EQ_INT(n_exe, 2);
    for (int i = 0; i < 64; i++) CHECK_NEAR(two[i], one[i], 1e-5);
    /* 1 and 7 rows the other way round: still two variants, still equal */
    memset(two, 0, sizeof two);
    CHECK(run_split(&model, "cpu:0,cpu:1", "split:1:7", x, two, &n_exe));
    CHECK_EQ_INT(n_exe, 2);
    for (int i = 0; i < 64; i++) CHECK_NEAR(two[i], one[i], 1e-5);
    /* a share that rounds to no row leaves its device idle: one program, one executable */
    memset(two, 0, sizeof two);
    CHECK(run_split(&model, "cpu:0,cpu:1", "split:100:1", x, two, &n_exe));
    CHECK_EQ_INT(n_exe, 1);
    for (int i = 0; i < 64; i++) CHECK_NEAR(two[i], one[i], 1e-5);
    /* measured: identical devices measure as one group, so equal shares */
    memset(two, 0, sizeof two);
    CHECK(run_split(&model, "cpu:0,cpu:1", "split", x, two, &n_exe));
    CHECK_EQ_INT(n_exe, 1);
    for (int i = 0; i < 64; i++) CHECK_NEAR(two[i], one[i], 1e-5);
    model_clear(&model);
    /* Softmax along the rows of each sample splits; along axis 0 (the batch) it does not. */
    model.g = mm_relu(8, 1);
    CHECK(run_split(&model, "cpu", NULL, x, one, &n_exe));
    CHECK(run_split(&model, "cpu:0,cpu:1", "split:1:1", x, two, &n_exe));
    for (int i = 0; i < 64; i++) CHECK_NEAR(two[i], one[i], 1e-5);
    model_clear(&model);
    model.g = mm_relu(8, 0);
    CHECK(!run_split(&model, "cpu:0,cpu:1", "split", x, two, &n_exe));
    CHECK_STR_HAS(smelt_last_error(), "soft");
    CHECK_STR_HAS(smelt_last_error(), "axis 0, the batch axis");
    model_clear(&model);
    /* batch 1 */
    model.g = mm_relu(1, -2);
    CHECK(!run_split(&model, "cpu:0,cpu:1", "split", x, two, &n_exe));
    CHECK_STR_HAS(smelt_last_error(), "the batch is 1");
    diag_clear();
    model_clear(&model);
}
