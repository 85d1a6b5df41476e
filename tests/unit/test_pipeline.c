/* api/pipeline.c: runs submitted without waiting. Four runs with two held
 * at once equal four runs one after the other (and the formula the model
 * computes), on two CPUs with overrides putting Relu on one and the rest on
 * the other, on cpu + OpenCL where one exists, and on one device; a run's
 * outputs stay intact while later runs go; the caller's inputs may be
 * reused once submit returns; tickets that are unknown or released, a
 * full pipeline and wrong inputs are errors; a device failing in flight is
 * reported by the run's wait. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api/program.h"
#include "rt/device.h"
#include "test.h"

enum { N = 1024, RUNS = 4 };

/* x[4,256] -> Relu -> Sigmoid -> Add w -> y: y = sigmoid(relu(x)) + (i % 5). */
static ir_graph *chain(void)
{
    ir_graph *g = ir_graph_new();
    ir_shape sx = {.rank = 2, .dim = {4, 256}};
    int x = ir_tensor_add(g, "x", SMELT_F32, &sx);
    int r = ir_tensor_add(g, "r", SMELT_F32, NULL), sg = ir_tensor_add(g, "s", SMELT_F32, NULL);
    int y = ir_tensor_add(g, "y", SMELT_F32, NULL), w = ir_tensor_add(g, "w", SMELT_F32, &sx);
    float *wd = ir_tensor_alloc_data(g, w);
    for (int i = 0; i < N; i++) wd[i] = (float)(i % 5);
    int in_s[] = {r}, in_a[] = {sg, w};
    ir_node_add(g, "relu", OP_Relu, 1, &x, 1, &r);
    ir_node_add(g, "sigmoid", OP_Sigmoid, 1, in_s, 1, &sg);
    ir_node_add(g, "add", OP_Add, 2, in_a, 1, &y);
    for (int n = 0; n < g->n_nodes; n++) g->tensors[g->nodes[n].out[0]].producer = n;
    ir_graph_set_io(g, 1, &x, 1, &y);
    return g;
}

static float input_of(int run, int i) { return (float)((i * (run + 3)) % 11) - 5.0f + 0.25f * (float)run; }

static float expected(int run, int i)
{
    float v = input_of(run, i);
    return 1 / (1 + expf(-(v > 0 ? v : 0))) + (float)(i % 5);
}

static smelt_program *compile_on(struct smelt_model *m, const char *devices, const char *place)
{
    smelt_options opt;
    smelt_options_init(&opt);
    opt.threads = 1;
    opt.no_fuse = 1; /* three kernels: the overrides split them over the devices */
    opt.devices = devices;
    opt.placement = place;
    smelt_program *p = NULL;
    if (smelt_program_compile(m, &opt, 0, NULL, &p) != SMELT_OK) {
        fprintf(stderr, "  compile %s %s: %s\n", devices, place ? place : "", smelt_last_error());
        return NULL;
    }
    return p;
}

/* RUNS submits, two held at once, against RUNS smelt_program_run calls and
 * the formula. The input buffer is overwritten right after each submit. */
static void four_runs(struct smelt_model *m, const char *devices, const char *place)
{
    smelt_program *p = compile_on(m, devices, place);
    CHECK(p != NULL);
    if (!p) return;
    static float seq[RUNS][N], x[N];
    smelt_tensor in = {.name = "x", .dtype = SMELT_F32, .rank = 2, .shape = {4, 256}, .data = x}, out;
    for (int r = 0; r < RUNS; r++) {
        for (int i = 0; i < N; i++) x[i] = input_of(r, i);
        CHECK(smelt_program_run(p, 1, &in) == SMELT_OK && smelt_program_output(p, 0, &out) == SMELT_OK);
        memcpy(seq[r], out.data, sizeof seq[r]);
    }
    smelt_ticket t[RUNS] = {0};
    for (int r = 0; r < RUNS && !test_failures; r++) {
        if (r >= 2) { /* the oldest held run: waited for, read, released */
            CHECK(smelt_program_wait(p, t[r - 2]) == SMELT_OK);
            CHECK(smelt_program_run_output(p, t[r - 2], 0, &out) == SMELT_OK);
            for (int i = 0; i < N && !test_failures; i++) CHECK(((float *)out.data)[i] == seq[r - 2][i]);
            CHECK(smelt_program_release(p, t[r - 2]) == SMELT_OK);
        }
        for (int i = 0; i < N; i++) x[i] = input_of(r, i);
        CHECK(smelt_program_submit(p, 1, &in, &t[r]) == SMELT_OK && t[r] != 0);
        for (int i = 0; i < N; i++) x[i] = 1e9f; /* submit copied it */
    }
    for (int r = RUNS - 2; r < RUNS && !test_failures; r++) {
        CHECK(smelt_program_wait(p, t[r]) == SMELT_OK);
        CHECK(smelt_program_run_output(p, t[r], 0, &out) == SMELT_OK);
        for (int i = 0; i < N && !test_failures; i++) CHECK(((float *)out.data)[i] == seq[r][i]);
    }
    for (int r = 0; r < RUNS && !test_failures; r++)
        for (int i = 0; i < N && !test_failures; i++) CHECK_NEAR(seq[r][i], expected(r, i), 1e-5);
    /* Run 2's outputs (still held) are intact after run 3 and a plain run; run 3 is not. */
    smelt_tensor o2;
    CHECK(smelt_program_run_output(p, t[2], 0, &o2) == SMELT_OK);
    for (int i = 0; i < N; i++) x[i] = input_of(0, i);
    CHECK(smelt_program_run(p, 1, &in) == SMELT_OK);
    for (int i = 0; i < N && !test_failures; i++) CHECK(((float *)o2.data)[i] == seq[2][i]);
    CHECK(smelt_program_release(p, t[2]) == SMELT_OK);
    CHECK(smelt_program_release(p, t[3]) == SMELT_OK);
    smelt_program_free(p);
}

TEST(pipeline_runs_equal_sequential_runs)
{
    char dir[] = "/tmp/smelt-test-pipe-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    setenv("SMELT_CACHE_DIR", dir, 1);
    struct smelt_model model = {.g = chain()};
    four_runs(&model, "cpu:0,cpu:1", "relu=cpu:0,*=cpu:1");
    four_runs(&model, "cpu:0,cpu:1", "sigmoid=cpu:1"); /* cpu:0, cpu:1, cpu:0: two crossings each way */
    four_runs(&model, "cpu", NULL);                    /* one device: submit runs before it returns */
    rt_device *probe = NULL;
    if (rt_device_open("opencl", 1, &probe) == SMELT_OK) {
        rt_device_close(probe);
        four_runs(&model, "cpu,opencl", "relu=cpu,*=opencl");
        four_runs(&model, "cpu,opencl", "relu=opencl,*=cpu");
    }
    diag_clear();
    ir_graph_free(model.g);
}

static smelt_status failing_dispatch(rt_device *d, rt_kernel *k, int n_args, const rt_arg *args, int64_t n_wg, int wg_size)
{
    (void)d, (void)k, (void)n_args, (void)args, (void)n_wg, (void)wg_size;
    return diag_fail(SMELT_ERR_DEVICE, "injected: cpu:1 lost");
}

TEST(pipeline_errors)
{
    char dir[] = "/tmp/smelt-test-pipe-err-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    setenv("SMELT_CACHE_DIR", dir, 1);
    struct smelt_model model = {.g = chain()};
    smelt_program *p = compile_on(&model, "cpu:0,cpu:1", "relu=cpu:0,*=cpu:1");
    CHECK(p != NULL);
    if (!p) {
        ir_graph_free(model.g);
        return;
    }
    static float x[N];
    smelt_tensor in = {.name = "x", .dtype = SMELT_F32, .rank = 2, .shape = {4, 256}, .data = x}, out;
    smelt_ticket a = 0, b = 0, c = 7;
    CHECK(smelt_program_wait(p, 12345) == SMELT_ERR_INVALID_ARG);
    CHECK_STR_HAS(smelt_last_error(), "ticket 12345");
    /* Wrong shapes: refused at submit, no ticket. */
    smelt_tensor bad = in;
    bad.shape[1] = 255;
    CHECK(smelt_program_submit(p, 1, &bad, &c) == SMELT_ERR_SHAPE && c == 0);
    CHECK_STR_HAS(smelt_last_error(), "input 'x'");
    CHECK(smelt_program_submit(p, 1, &in, &a) == SMELT_OK);
    CHECK(smelt_program_run_output(p, a, 0, &out) == SMELT_ERR_INVALID_ARG); /* not waited for */
    CHECK_STR_HAS(smelt_last_error(), "smelt_program_wait first");
    CHECK(smelt_program_submit(p, 1, &in, &b) == SMELT_OK && b != a);
    CHECK(smelt_program_submit(p, 1, &in, &c) == SMELT_ERR_INVALID_ARG && c == 0); /* depth 2, both held */
    CHECK_STR_HAS(smelt_last_error(), "2 runs are held");
    CHECK(smelt_program_set_pipeline(p, 3) == SMELT_ERR_INVALID_ARG); /* not while runs are held */
    CHECK(smelt_program_wait(p, a) == SMELT_OK && smelt_program_wait(p, a) == SMELT_OK);
    CHECK(smelt_program_release(p, a) == SMELT_OK);
    CHECK(smelt_program_wait(p, a) == SMELT_ERR_INVALID_ARG); /* released */
    CHECK_STR_HAS(smelt_last_error(), "released");
    CHECK(smelt_program_release(p, a) == SMELT_ERR_INVALID_ARG);
    CHECK(smelt_program_run_output(p, a, 0, &out) == SMELT_ERR_INVALID_ARG);
    CHECK(smelt_program_release(p, b) == SMELT_OK); /* never waited for: released all the same */
    CHECK(smelt_program_set_pipeline(p, 0) == SMELT_ERR_INVALID_ARG);
    CHECK(smelt_program_set_pipeline(p, 3) == SMELT_OK);
    /* A device failing while a run is in flight: cpu:1's dispatches fail (its ops swapped for a copy
     * whose dispatch does). The run's wait reports it, its outputs are refused, the next run is not
     * held up, and once the device works again so do runs. */
    rt_device_ops broken = *p->dev[1]->ops;
    const rt_device_ops *saved = p->dev[1]->ops;
    broken.dispatch = failing_dispatch;
    p->dev[1]->ops = &broken;
    smelt_ticket f = 0, g = 0;
    CHECK(smelt_program_submit(p, 1, &in, &f) == SMELT_OK);
    CHECK(smelt_program_submit(p, 1, &in, &g) == SMELT_OK);
    CHECK(smelt_program_wait(p, f) == SMELT_ERR_DEVICE);
    CHECK_STR_HAS(smelt_last_error(), "injected: cpu:1 lost");
    CHECK(smelt_program_run_output(p, f, 0, &out) == SMELT_ERR_INVALID_ARG);
    CHECK_STR_HAS(smelt_last_error(), "failed");
    CHECK(smelt_program_wait(p, g) == SMELT_ERR_DEVICE);
    p->dev[1]->ops = saved;
    CHECK(smelt_program_release(p, f) == SMELT_OK && smelt_program_release(p, g) == SMELT_OK);
    for (int i = 0; i < N; i++) x[i] = input_of(1, i);
    CHECK(smelt_program_submit(p, 1, &in, &f) == SMELT_OK && smelt_program_wait(p, f) == SMELT_OK);
    CHECK(smelt_program_run_output(p, f, 0, &out) == SMELT_OK);
    for (int i = 0; i < N && !test_failures; i++) CHECK_NEAR(((float *)out.data)[i], expected(1, i), 1e-5);
    CHECK(smelt_program_release(p, f) == SMELT_OK);
    smelt_ticket t[3];
    for (int k = 0; k < 3; k++) CHECK(smelt_program_submit(p, 1, &in, &t[k]) == SMELT_OK);
    smelt_program_free(p); /* three in flight, never waited for: freed without a leak or a hang */
    diag_clear();
    ir_graph_free(model.g);
}
