/* test_onnx_data.c — weights outside the model's fields: big raw_data taken
 * without a copy, external data files (and their hostile forms), and the
 * tensor files (.pb, .npy) smelt reads and writes. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "graph/passes.h"
#include "lower/lower.h"
#include "onnx/onnx.h"
#include "onnx/onnx.pb-c.h"
#include "onnx_models.h"
#include "test.h"

/* ---- external data ------------------------------------------------------- */

static Onnx__TensorProto *tensor_external(const char *name, int rank, const int64_t *dims, const char *loc,
                                          const char *offset, const char *length)
{
    Onnx__TensorProto *t = tensor_raw(name, SMELT_F32, rank, dims, NULL, 0);
    t->has_data_location = 1;
    t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    const char *kv[3][2] = {{"location", loc}, {"offset", offset}, {"length", length}};
    for (int i = 0; i < 3; i++) {
        if (!kv[i][1]) continue;
        Onnx__StringStringEntryProto *e = palloc(sizeof *e);
        onnx__string_string_entry_proto__init(e);
        e->key = (char *)kv[i][0];
        e->value = (char *)kv[i][1];
        APPEND(t->external_data, t->n_external_data, e);
    }
    return t;
}

static void write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(data, 1, n, f);
        fclose(f);
    }
}

static void external_model(mb *b, const char *loc, const char *offset, const char *length)
{
    mb_init(b, 13);
    APPEND(b->g.initializer, b->g.n_initializer, tensor_external("wx", 2, D2x3, loc, offset, length));
    mb_input(b, "x", SMELT_F32, 2, D2x3);
    node_new(&b->g, "Add", "add", "x,wx", "y");
    mb_output(b, "y");
}

/* Weights of 64 KiB and more become tensor data without a copy (the
 * protobuf's own block, import.c): the values must be the file's, a bool's
 * bytes still normalised, a tensor proto decoded twice (a Constant inside a
 * function called twice) two tensors with the same values, a file loaded by
 * path (mapped) the same as from memory, and every cut of such a file a clean
 * error (ASan: nothing leaked, nothing read past the end). */
TEST(onnx_import_big_weights_without_a_copy)
{
    enum { N = 40000 }; /* 160 KB of float */
    static float w[N], c[N];
    static uint8_t flags[N * 4];
    for (int i = 0; i < N; i++) w[i] = (float)i * 0.25f - 7, c[i] = (float)(i % 97);
    for (int i = 0; i < N * 4; i++) flags[i] = (uint8_t)(i % 3); /* 2 is true too: read as 1 */
    static const int64_t DN[] = {N}, DF[] = {N * 4};
    mb b;
    mb_init(&b, 18);
    APPEND(b.g.initializer, b.g.n_initializer, tensor_raw("w", SMELT_F32, 1, DN, w, sizeof w));
    APPEND(b.g.initializer, b.g.n_initializer, tensor_raw("flags", SMELT_BOOL, 1, DF, flags, sizeof flags));
    Onnx__FunctionProto *f = function_new(&b, "local", "AddC", "a", "y", "");
    Onnx__NodeProto *n = node_new(NULL, "Constant", "k", "", "c");
    pb_attr_new(n, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR)->t = tensor_raw("", SMELT_F32, 1, DN, c, sizeof c);
    function_node(f, n);
    function_node(f, node_new(NULL, "Add", "add", "a,c", "y"));
    Onnx__OperatorSetIdProto *local = palloc(sizeof *local);
    onnx__operator_set_id_proto__init(local);
    local->domain = "local", local->has_version = 1, local->version = 1;
    APPEND(b.m.opset_import, b.m.n_opset_import, local);
    mb_input(&b, "x", SMELT_F32, 1, DN);
    node_new(&b.g, "Add", "a0", "x,w", "h0");
    n = node_new(&b.g, "AddC", "s1", "h0", "h1");
    n->domain = "local";
    n = node_new(&b.g, "AddC", "s2", "h1", "h2");
    n->domain = "local";
    node_new(&b.g, "Cast", "cast", "flags", "fl");
    pb_attr_int(b.g.node[b.g.n_node - 1], "to", 1);
    mb_output(&b, "h2");
    mb_output(&b, "fl");
    size_t size;
    uint8_t *buf = mb_pack(&b, &size);
    char dir[] = "/tmp/smelt_onnx_big_XXXXXX", path[300];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    write_file(path, buf, size);
    for (int by_path = 0; by_path < 2; by_path++) {
        ir_graph *g = NULL;
        CHECK_EQ_INT(by_path ? onnx_load_file(path, &g) : onnx_load_memory(buf, size, NULL, &g), SMELT_OK);
        if (!g) continue;
        int tw = tensor_named(g, "w"), tf = tensor_named(g, "flags"), k1 = tensor_named(g, "s1/c"), k2 = tensor_named(g, "s2/c");
        CHECK(tw >= 0 && tf >= 0 && k1 >= 0 && k2 >= 0);
        if (tw >= 0 && tf >= 0 && k1 >= 0 && k2 >= 0) {
            CHECK(memcmp(g->tensors[tw].data, w, sizeof w) == 0);
            CHECK(((uintptr_t)g->tensors[tw].data & 63) == 0);
            CHECK(g->tensors[k1].data != g->tensors[k2].data);
            CHECK(memcmp(g->tensors[k1].data, c, sizeof c) == 0 && memcmp(g->tensors[k2].data, c, sizeof c) == 0);
            int bad = 0;
            for (int i = 0; i < N * 4; i++) bad += ((const uint8_t *)g->tensors[tf].data)[i] != (i % 3 != 0);
            CHECK_EQ_INT(bad, 0);
        }
        ir_graph_free(g);
    }
    /* cuts: in the headers, inside each weight's bytes, one byte short */
    int loaded = 0;
    for (size_t len = 0; len < size; len += len < 256 ? 1 : 4093) {
        for (int by_path = 0; by_path < 2; by_path++) {
            ir_graph *g = NULL;
            smelt_status st;
            if (by_path) {
                write_file(path, buf, len);
                st = onnx_load_file(path, &g);
            } else {
                st = onnx_load_memory(buf, len, NULL, &g);
            }
            loaded += st == SMELT_OK;
            CHECK((st == SMELT_OK) == (g != NULL));
            ir_graph_free(g);
        }
    }
    ir_graph *g = NULL;
    CHECK(onnx_load_memory(buf, size - 1, NULL, &g) != SMELT_OK && g == NULL);
    CHECK_EQ_INT(loaded, 0);
    unlink(path);
    rmdir(dir);
    pool_free();
}

TEST(onnx_import_external_data)
{
    char dir[] = "/tmp/smelt_onnx_XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(!"mkdtemp");
        return;
    }
    char path[256], sub[256], model[256];
    snprintf(sub, sizeof sub, "%s/weights", dir);
    mkdir(sub, 0755);
    float data[8] = {-1, -1, 1, 2, 3, 4, 5, 6}; /* 8 bytes of padding first */
    snprintf(path, sizeof path, "%s/weights/w.bin", dir);
    write_file(path, data, sizeof data);

    mb b;
    external_model(&b, "weights/w.bin", "8", "24");
    size_t size;
    uint8_t *buf = mb_pack(&b, &size);
    snprintf(model, sizeof model, "%s/model.onnx", dir);
    write_file(model, buf, size);
    ir_graph *g;
    CHECK_EQ_INT(onnx_load_file(model, &g), SMELT_OK);
    if (g) {
        const ir_tensor *w = &g->tensors[tensor_named(g, "wx")];
        CHECK(w->data != NULL);
        if (w->data) {
            CHECK_NEAR(ir_const_double(w, 0), 1, 0);
            CHECK_NEAR(ir_const_double(w, 5), 6, 0);
        }
        ir_graph_free(g);
    }
    pool_free();

    external_model(&b, "weights/w.bin", "16", NULL);
    CHECK_EQ_INT(mb_load(&b, dir, &g), SMELT_ERR_MODEL);
    CHECK_STR_HAS(smelt_last_error(), "initializer 'wx'");
    CHECK_STR_HAS(smelt_last_error(), "too short");
    pool_free();

    external_model(&b, "weights/w.bin", "0", "12");
    CHECK_EQ_INT(mb_load(&b, dir, &g), SMELT_ERR_MODEL);
    CHECK_STR_HAS(smelt_last_error(), "length 12");
    pool_free();

    external_model(&b, "weights/../weights/w.bin", NULL, NULL);
    check_error(&b, SMELT_ERR_MODEL, "initializer 'wx'", "leaves the model's directory");
    external_model(&b, "..", NULL, NULL);
    check_error(&b, SMELT_ERR_MODEL, "initializer 'wx'", "leaves the model's directory");
    external_model(&b, path, NULL, NULL);
    check_error(&b, SMELT_ERR_MODEL, "initializer 'wx'", "is absolute");
    external_model(&b, "missing.bin", NULL, NULL);
    CHECK_EQ_INT(mb_load(&b, dir, &g), SMELT_ERR_IO);
    CHECK_STR_HAS(smelt_last_error(), "missing.bin");
    pool_free();
    external_model(&b, "weights/w.bin", "1x", NULL);
    CHECK_EQ_INT(mb_load(&b, dir, &g), SMELT_ERR_MODEL);
    CHECK_STR_HAS(smelt_last_error(), "not a number");
    pool_free();
    /* an offset past the end, and one whose sum with the length would overflow */
    external_model(&b, "weights/w.bin", "33", NULL);
    CHECK_EQ_INT(mb_load(&b, dir, &g), SMELT_ERR_MODEL);
    CHECK_STR_HAS(smelt_last_error(), "too short");
    pool_free();
    external_model(&b, "weights/w.bin", "9223372036854775807", NULL);
    CHECK_EQ_INT(mb_load(&b, dir, &g), SMELT_ERR_MODEL);
    CHECK_STR_HAS(smelt_last_error(), "too short");
    pool_free();
    external_model(&b, "weights/w.bin", "99999999999999999999", NULL);
    CHECK_EQ_INT(mb_load(&b, dir, &g), SMELT_ERR_MODEL);
    CHECK_STR_HAS(smelt_last_error(), "not a number");
    pool_free();

    /* Links are not followed: not to a file outside (/etc/passwd), not to one
     * inside, not through a linked directory. */
    char link1[300], link2[300], link3[300], fifo[300];
    snprintf(link1, sizeof link1, "%s/passwd", dir);
    CHECK(symlink("/etc/passwd", link1) == 0);
    external_model(&b, "passwd", NULL, NULL);
    CHECK_EQ_INT(mb_load(&b, dir, &g), SMELT_ERR_IO);
    CHECK_STR_HAS(smelt_last_error(), "links are not followed");
    pool_free();
    snprintf(link2, sizeof link2, "%s/w_link.bin", dir);
    CHECK(symlink("weights/w.bin", link2) == 0);
    external_model(&b, "w_link.bin", "8", NULL);
    CHECK_EQ_INT(mb_load(&b, dir, &g), SMELT_ERR_IO);
    CHECK_STR_HAS(smelt_last_error(), "links are not followed");
    pool_free();
    snprintf(link3, sizeof link3, "%s/etc", dir);
    CHECK(symlink("/etc", link3) == 0);
    external_model(&b, "etc/passwd", NULL, NULL);
    CHECK_EQ_INT(mb_load(&b, dir, &g), SMELT_ERR_IO);
    CHECK_STR_HAS(smelt_last_error(), "links are not followed");
    pool_free();
    /* A FIFO neither blocks the load nor is read. */
    snprintf(fifo, sizeof fifo, "%s/fifo.bin", dir);
    CHECK(mkfifo(fifo, 0600) == 0);
    external_model(&b, "fifo.bin", NULL, NULL);
    CHECK_EQ_INT(mb_load(&b, dir, &g), SMELT_ERR_IO);
    CHECK_STR_HAS(smelt_last_error(), "not a regular file");
    pool_free();
    /* A directory is not data either. */
    external_model(&b, "weights", NULL, NULL);
    CHECK_EQ_INT(mb_load(&b, dir, &g), SMELT_ERR_IO);
    CHECK_STR_HAS(smelt_last_error(), "not a regular file");
    pool_free();
    unlink(link1);
    unlink(link2);
    unlink(link3);
    unlink(fifo);

    unlink(path);
    unlink(model);
    rmdir(sub);
    rmdir(dir);
}

/* ---- tensor files -------------------------------------------------------- */

static bool tensors_equal(const smelt_tensor *a, const smelt_tensor *b)
{
    if (a->dtype != b->dtype || a->rank != b->rank) return false;
    for (int i = 0; i < a->rank; i++)
        if (a->shape[i] != b->shape[i]) return false;
    size_t n = (size_t)smelt_tensor_numel(a) * smelt_dtype_size(a->dtype);
    return n == 0 || memcmp(a->data, b->data, n) == 0;
}

TEST(onnx_tensor_files_round_trip)
{
    char dir[] = "/tmp/smelt_tf_XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(!"mkdtemp");
        return;
    }
    static float f[6] = {1, -2, 3.5f, 4, 5, 6};
    static int64_t l[3] = {1, -1, 1LL << 40};
    static uint8_t bo[4] = {1, 0, 0, 1};
    static uint16_t u[1] = {65535};
    static int8_t i8[5] = {-1, 2, -3, 4, -5};
    static double d[2] = {0.25, -1e200};
    smelt_tensor cases[] = {
        {.name = "x", .dtype = SMELT_F32, .rank = 2, .shape = {2, 3}, .data = f},
        {.name = "ids", .dtype = SMELT_I64, .rank = 1, .shape = {3}, .data = l},
        {.name = NULL, .dtype = SMELT_BOOL, .rank = 3, .shape = {1, 2, 2}, .data = bo},
        {.name = "scalar", .dtype = SMELT_U16, .rank = 0, .data = u},
        {.name = "i8", .dtype = SMELT_I8, .rank = 1, .shape = {5}, .data = i8},
        {.name = "d", .dtype = SMELT_F64, .rank = 2, .shape = {2, 1}, .data = d},
        {.name = "empty", .dtype = SMELT_F32, .rank = 2, .shape = {0, 4}, .data = NULL},
    };
    char path[256];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (int pb = 0; pb < 2; pb++) {
            snprintf(path, sizeof path, "%s/t%zu.%s", dir, i, pb ? "pb" : "npy");
            smelt_status st = pb ? tensor_file_write_pb(path, &cases[i]) : tensor_file_write_npy(path, &cases[i]);
            CHECK_EQ_INT(st, SMELT_OK);
            smelt_tensor back;
            CHECK_EQ_INT(tensor_file_read(path, &back), SMELT_OK);
            CHECK(tensors_equal(&cases[i], &back));
            if (pb && cases[i].name) CHECK(back.name && strcmp(back.name, cases[i].name) == 0);
            if (!pb) CHECK(back.name == NULL);
            tensor_file_free(&back);
            unlink(path);
        }
    }
    /* The content, not the name, decides the format. */
    snprintf(path, sizeof path, "%s/really_npy.pb", dir);
    CHECK_EQ_INT(tensor_file_write_npy(path, &cases[0]), SMELT_OK);
    smelt_tensor back;
    CHECK_EQ_INT(tensor_file_read(path, &back), SMELT_OK);
    CHECK(tensors_equal(&cases[0], &back));
    tensor_file_free(&back);
    unlink(path);
    /* A failed write leaves nothing behind. */
    snprintf(path, sizeof path, "%s/no/such/dir/x.npy", dir);
    CHECK_EQ_INT(tensor_file_write_npy(path, &cases[0]), SMELT_ERR_IO);
    smelt_tensor half = {.dtype = SMELT_BF16, .rank = 1, .shape = {1}, .data = u};
    snprintf(path, sizeof path, "%s/half.npy", dir);
    CHECK_EQ_INT(tensor_file_write_npy(path, &half), SMELT_ERR_UNSUPPORTED);
    CHECK(access(path, F_OK) != 0);
    rmdir(dir);
}

static smelt_status read_bytes(const char *path, const void *data, size_t n, smelt_tensor *t)
{
    write_file(path, data, n);
    smelt_status st = tensor_file_read(path, t);
    unlink(path);
    return st;
}

TEST(onnx_tensor_files_npy_variants_and_errors)
{
    char path[] = "/tmp/smelt_npy_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) {
        CHECK(!"mkstemp");
        return;
    }
    close(fd);
    /* Version 2.0 header, numpy spacing, int32 (2,). */
    char buf[256] = "\x93NUMPY\x02\x00";
    const char *hdr = "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }        \n";
    size_t hl = strlen(hdr);
    buf[8] = (char)hl, buf[9] = buf[10] = buf[11] = 0;
    memcpy(buf + 12, hdr, hl);
    int32_t v[2] = {7, -9};
    memcpy(buf + 12 + hl, v, sizeof v);
    smelt_tensor t;
    CHECK_EQ_INT(read_bytes(path, buf, 12 + hl + sizeof v, &t), SMELT_OK);
    CHECK(t.dtype == SMELT_I32 && t.rank == 1 && t.shape[0] == 2 && ((int32_t *)t.data)[1] == -9);
    tensor_file_free(&t);

    CHECK_EQ_INT(read_bytes(path, buf, 12 + hl + 4, &t), SMELT_ERR_IO); /* short data */
    CHECK_STR_HAS(smelt_last_error(), "short");
    CHECK(t.data == NULL);

    const char *bad[][2] = {
        {"{'descr': '>i4', 'fortran_order': False, 'shape': (2,), }", "big-endian"},
        {"{'descr': '<i4', 'fortran_order': True, 'shape': (2,), }", "Fortran"},
        {"{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", "'<c8'"},
        {"{'descr': '<i4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }", "rank"},
        {"{'descr': '<i4', 'fortran_order': False, 'shape': (2,x), }", "malformed"},
        {"{'descr': '<i4', 'fortran_order': False }", "malformed"},
        /* Empty, but its other dims multiply past int64 (found by tests/fuzz/fuzz_tensor). */
        {"{'descr': '<i4', 'fortran_order': False, 'shape': (0,4611686018427387904,4), }", "too large"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        hl = strlen(bad[i][0]);
        memcpy(buf, "\x93NUMPY\x01\x00", 8);
        buf[8] = (char)hl, buf[9] = 0;
        memcpy(buf + 10, bad[i][0], hl);
        memset(buf + 10 + hl, 0, 8);
        smelt_status st = read_bytes(path, buf, 10 + hl + 8, &t);
        CHECK(st == SMELT_ERR_UNSUPPORTED || st == SMELT_ERR_IO);
        CHECK_STR_HAS(smelt_last_error(), bad[i][1]);
    }
    CHECK_EQ_INT(read_bytes(path, "\x93NUMPY\x01\x00\xff\x00{", 11, &t), SMELT_ERR_IO);
    CHECK_EQ_INT(read_bytes(path, "\xff\xff\xff", 3, &t), SMELT_ERR_IO);
    CHECK_EQ_INT(read_bytes(path, "", 0, &t), SMELT_ERR_IO);
    CHECK_EQ_INT(tensor_file_read("/nonexistent/x.npy", &t), SMELT_ERR_IO);

    /* From memory: the same bytes give the same tensor; errors name the given name. */
    hl = strlen(hdr);
    memcpy(buf, "\x93NUMPY\x02\x00", 8);
    buf[8] = (char)hl, buf[9] = buf[10] = buf[11] = 0;
    memcpy(buf + 12, hdr, hl);
    memcpy(buf + 12 + hl, v, sizeof v);
    CHECK_EQ_INT(tensor_file_read_memory(buf, 12 + hl + sizeof v, "mem", NULL, &t), SMELT_OK);
    CHECK(t.dtype == SMELT_I32 && t.rank == 1 && t.shape[0] == 2 && ((int32_t *)t.data)[0] == 7);
    tensor_file_free(&t);
    CHECK_EQ_INT(tensor_file_read_memory(buf, 12 + hl, "mem", NULL, &t), SMELT_ERR_IO);
    CHECK_STR_HAS(smelt_last_error(), "'mem'");
}
