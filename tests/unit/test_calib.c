/* api/place_calib.c: the `cost` placement's measured region times and links,
 * and the `split` placement's device speeds, kept in the compile cache. A
 * second compile with the same key measures nothing (counted by
 * calib_measurements) and gets the same numbers; a flipped byte in the entry
 * is a miss; SMELT_RECALIBRATE=1 measures again. */
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/program.h"
#include "test.h"

/* x[4,256] -> Relu -> Sigmoid -> y, wrapped as a model with its digest. */
static smelt_model *relu_sigmoid(void)
{
    ir_graph *g = ir_graph_new();
    ir_shape sx = {.rank = 2, .dim = {4, 256}};
    int x = ir_tensor_add(g, "x", SMELT_F32, &sx);
    int r = ir_tensor_add(g, "r", SMELT_F32, NULL), y = ir_tensor_add(g, "y", SMELT_F32, NULL);
    ir_node_add(g, "relu", OP_Relu, 1, &x, 1, &r);
    ir_node_add(g, "sigmoid", OP_Sigmoid, 1, &r, 1, &y);
    for (int n = 0; n < g->n_nodes; n++) g->tensors[g->nodes[n].out[0]].producer = n;
    ir_graph_set_io(g, 1, &x, 1, &y);
    smelt_model *m = NULL;
    return program_model_wrap(g, &m) == SMELT_OK ? m : NULL;
}

/* Every entry ending in `.calib` in dir: one byte of it flipped at `at` from the end. */
static bool flip_entry(const char *dir, long at)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    bool done = false;
    while (d && (e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 6 || strcmp(e->d_name + n - 6, ".calib") != 0) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        int fd = open(path, O_RDWR);
        off_t end = fd >= 0 ? lseek(fd, 0, SEEK_END) : -1;
        unsigned char b;
        if (end > at && pread(fd, &b, 1, end - at) == 1) {
            b ^= 0x10;
            done |= pwrite(fd, &b, 1, end - at) == 1;
        }
        if (fd >= 0) close(fd);
    }
    if (d) closedir(d);
    return done;
}

static smelt_program *compile_with(smelt_model *m, const char *place)
{
    smelt_options opt;
    smelt_options_init(&opt);
    opt.threads = 1;
    opt.no_fuse = 1;
    opt.devices = "cpu:0,cpu:1";
    opt.placement = place;
    smelt_program *p = NULL;
    if (smelt_program_compile(m, &opt, 0, NULL, &p) != SMELT_OK) fprintf(stderr, "  compile %s: %s\n", place, smelt_last_error());
    return p;
}

TEST(calib_cost_measured_once)
{
    char dir[] = "/tmp/smelt-test-calib-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    setenv("SMELT_CACHE_DIR", dir, 1);
    unsetenv("SMELT_RECALIBRATE");
    smelt_model *m = relu_sigmoid();
    CHECK(m != NULL);
    if (!m) return;
    int64_t n0 = calib_measurements();
    smelt_program *a = compile_with(m, "cost"), *b = NULL;
    CHECK(a && a->cost_measured && !a->cost_cached && a->link_measured && a->link_bytes_per_ms[0] > 0);
    CHECK_EQ_INT(calib_measurements(), n0 + 1);
    b = compile_with(m, "cost"); /* the same key: read back, nothing measured */
    CHECK_EQ_INT(calib_measurements(), n0 + 1);
    CHECK(a && b && b->cost_measured && b->cost_cached && b->link_measured);
    if (a && b) {
        CHECK(memcmp(a->cost_dev_ms, b->cost_dev_ms, sizeof a->cost_dev_ms) == 0);
        CHECK(memcmp(a->link_bytes_per_ms, b->link_bytes_per_ms, sizeof a->link_bytes_per_ms) == 0);
        CHECK(a->cost_ms == b->cost_ms);
        char *text = NULL;
        CHECK(smelt_program_dump(b, "info", &text) == SMELT_OK);
        CHECK_STR_HAS(text, "calibration: from the compile cache");
        CHECK_STR_HAS(text, "link cpu:0\u2192cpu:1: ");
        smelt_free(text);
    }
    smelt_program_free(b);
    /* Another placement string is another key. */
    b = compile_with(m, "cost,relu=cpu:1");
    CHECK_EQ_INT(calib_measurements(), n0 + 2);
    smelt_program_free(b);
    /* A damaged entry (a byte of the payload, then of the trailing hash) is a miss, measured and written again. */
    CHECK(flip_entry(dir, 20));
    b = compile_with(m, "cost");
    CHECK_EQ_INT(calib_measurements(), n0 + 3);
    CHECK(b && !b->cost_cached);
    smelt_program_free(b);
    CHECK(flip_entry(dir, 1));
    b = compile_with(m, "cost");
    CHECK_EQ_INT(calib_measurements(), n0 + 4);
    smelt_program_free(b);
    b = compile_with(m, "cost");
    CHECK_EQ_INT(calib_measurements(), n0 + 4);
    CHECK(b && b->cost_cached);
    smelt_program_free(b);
    setenv("SMELT_RECALIBRATE", "1", 1);
    b = compile_with(m, "cost");
    CHECK_EQ_INT(calib_measurements(), n0 + 5);
    unsetenv("SMELT_RECALIBRATE");
    smelt_program_free(b);
    smelt_program_free(a);
    smelt_model_free(m);
}

TEST(calib_split_speeds_measured_once)
{
    char dir[] = "/tmp/smelt-test-calib-split-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    setenv("SMELT_CACHE_DIR", dir, 1);
    unsetenv("SMELT_RECALIBRATE");
    smelt_model *m = relu_sigmoid();
    CHECK(m != NULL);
    if (!m) return;
    int64_t n0 = calib_measurements();
    float x[1024];
    for (int i = 0; i < 1024; i++) x[i] = (float)(i % 13) - 6;
    smelt_tensor in = {.name = "x", .dtype = SMELT_F32, .rank = 2, .shape = {4, 256}, .data = x}, out;
    for (int k = 0; k < 2; k++) {
        smelt_program *p = compile_with(m, "split");
        CHECK(p != NULL);
        CHECK_EQ_INT(calib_measurements(), n0 + 1); /* the second compile reads the speeds back */
        CHECK(p && smelt_program_run(p, 1, &in) == SMELT_OK && smelt_program_output(p, 0, &out) == SMELT_OK);
        for (int i = 0; p && i < 1024 && !test_failures; i++) {
            float r = x[i] > 0 ? x[i] : 0;
            CHECK_NEAR(((float *)out.data)[i], 1 / (1 + expf(-r)), 1e-6);
        }
        smelt_program_free(p);
    }
    CHECK(flip_entry(dir, 20));
    smelt_program *p = compile_with(m, "split");
    CHECK_EQ_INT(calib_measurements(), n0 + 2);
    smelt_program_free(p);
    smelt_model_free(m);
}
