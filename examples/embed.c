/*
 * embed.c — embedding smelt in a C program, using only the public header.
 *
 *     build/embed examples/digits_mlp.onnx examples/digits_test.npy examples/digits_test_labels.npy
 *
 * Loads a classifier, compiles it for the CPU with the batch dimension bound to the size of the
 * test set, runs the whole set as one batch, and prints the share of rows whose highest-scoring
 * class is the label: `accuracy: 0.973 (438/450)`. Exits non-zero on any error.
 *
 * The model is the one examples/train_digits.py exports: input float32 [N, 64] (N symbolic),
 * output float32 [N, 10]. Inputs are .npy files, read by the small reader below (only
 * little-endian, C-order arrays of float32 or int64: what numpy.save writes on common hosts).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "smelt.h"

typedef struct npy_array {
    char descr[8];      /* "<f4", "<i8", ... */
    int rank;
    int64_t shape[SMELT_MAX_RANK];
    int64_t numel;
    void *data;
} npy_array;

/* Reads `path` into `a`. Returns 0, or -1 after printing why. */
static int npy_read(const char *path, npy_array *a)
{
    memset(a, 0, sizeof *a);
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return -1;
    }
    unsigned char pre[12];
    char *header = NULL;
    int ok = 0;
    if (fread(pre, 1, 8, f) != 8 || memcmp(pre, "\x93NUMPY", 6) != 0) {
        fprintf(stderr, "%s: not a .npy file\n", path);
        goto done;
    }
    /* Version 1 stores the header length in 2 bytes, versions 2 and 3 in 4; little-endian. */
    size_t len_bytes = pre[6] == 1 ? 2 : 4, hlen = 0;
    if (fread(pre + 8, 1, len_bytes, f) != len_bytes) {
        fprintf(stderr, "%s: truncated header\n", path);
        goto done;
    }
    for (size_t i = 0; i < len_bytes; i++)
        hlen |= (size_t)pre[8 + i] << (8 * i);
    if (hlen == 0 || hlen > 65536 || !(header = malloc(hlen + 1)) ||
        fread(header, 1, hlen, f) != hlen) {
        fprintf(stderr, "%s: bad header\n", path);
        goto done;
    }
    header[hlen] = '\0';

    /* The header is a Python dict literal:
     *   {'descr': '<f4', 'fortran_order': False, 'shape': (450, 64), }  */
    const char *p = strstr(header, "'descr'");
    if (!p || !(p = strchr(p + 7, '\'')) || sscanf(p + 1, "%7[^']", a->descr) != 1) {
        fprintf(stderr, "%s: no descr in header\n", path);
        goto done;
    }
    p = strstr(header, "'fortran_order'");
    if (!p || !strstr(p, "False")) {
        fprintf(stderr, "%s: only C-order arrays are supported\n", path);
        goto done;
    }
    p = strstr(header, "'shape'");
    if (!p || !(p = strchr(p, '('))) {
        fprintf(stderr, "%s: no shape in header\n", path);
        goto done;
    }
    a->numel = 1;
    for (p++; *p && *p != ')';) {
        char *end;
        long long d = strtoll(p, &end, 10);
        if (end == p) {
            p++; /* skip ',' and spaces */
            continue;
        }
        if (d < 0 || a->rank == SMELT_MAX_RANK) {
            fprintf(stderr, "%s: unsupported shape\n", path);
            goto done;
        }
        a->shape[a->rank++] = d;
        a->numel *= d;
        p = end;
    }

    const uint16_t one = 1;
    int little = *(const unsigned char *)&one == 1;
    size_t elem;
    if (little && strcmp(a->descr, "<f4") == 0)
        elem = 4;
    else if (little && strcmp(a->descr, "<i8") == 0)
        elem = 8;
    else {
        fprintf(stderr, "%s: dtype '%s' not supported (want <f4 or <i8 on a little-endian host)\n",
                path, a->descr);
        goto done;
    }
    size_t bytes = (size_t)a->numel * elem;
    if (!(a->data = malloc(bytes ? bytes : 1)) || fread(a->data, 1, bytes, f) != bytes) {
        fprintf(stderr, "%s: truncated data\n", path);
        goto done;
    }
    ok = 1;
done:
    free(header);
    fclose(f);
    if (!ok) {
        free(a->data);
        a->data = NULL;
    }
    return ok ? 0 : -1;
}

static int fail(const char *what)
{
    fprintf(stderr, "embed: %s: %s\n", what, smelt_last_error());
    return 1;
}

static int classify(const char *model_path, const npy_array *x, const npy_array *labels)
{
    smelt_model *m = NULL;
    smelt_program *p = NULL;
    int rc = 1;

    if (smelt_model_load_file(model_path, &m) != SMELT_OK)
        return fail(model_path);
    smelt_value_info in;
    if (smelt_model_input_info(m, 0, &in) != SMELT_OK) {
        rc = fail("input 0");
        goto out;
    }
    if (in.dtype != SMELT_F32 || in.rank != 2 || (in.shape[1] >= 0 && in.shape[1] != x->shape[1])) {
        fprintf(stderr, "embed: model input '%s' is not float32 [N, %lld]\n", in.name,
                (long long)x->shape[1]);
        goto out;
    }

    /* Naming the input binds its symbolic batch dimension to the size of the test set. */
    smelt_tensor input = {.name = in.name, .dtype = SMELT_F32, .rank = 2,
                          .shape = {x->shape[0], x->shape[1]}, .data = x->data};
    smelt_options opt;
    smelt_options_init(&opt);
    opt.devices = "cpu";
    if (smelt_program_compile(m, &opt, 1, &input, &p) != SMELT_OK) {
        rc = fail("compile");
        goto out;
    }
    if (smelt_program_run(p, 1, &input) != SMELT_OK) {
        rc = fail("run");
        goto out;
    }
    smelt_tensor y;
    if (smelt_program_output(p, 0, &y) != SMELT_OK) {
        rc = fail("output 0");
        goto out;
    }
    if (y.dtype != SMELT_F32 || y.rank != 2 || y.shape[0] != x->shape[0] || y.shape[1] < 1) {
        fprintf(stderr, "embed: output is not float32 [%lld, classes]\n", (long long)x->shape[0]);
        goto out;
    }

    const float *scores = y.data;
    const int64_t *label = labels->data;
    int64_t n = y.shape[0], classes = y.shape[1], correct = 0;
    for (int64_t i = 0; i < n; i++) {
        const float *row = scores + i * classes;
        int64_t best = 0;
        for (int64_t c = 1; c < classes; c++)
            if (row[c] > row[best]) best = c;
        correct += best == label[i];
    }
    printf("accuracy: %.3f (%lld/%lld)\n", n ? (double)correct / (double)n : 0.0,
           (long long)correct, (long long)n);
    rc = 0;
out:
    if (p)
        smelt_program_free(p);
    smelt_model_free(m);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s MODEL.onnx X.npy LABELS.npy\n", argv[0]);
        return 2;
    }
    npy_array x, labels;
    if (npy_read(argv[2], &x) != 0)
        return 1;
    if (npy_read(argv[3], &labels) != 0) {
        free(x.data);
        return 1;
    }
    int rc = 1;
    if (strcmp(x.descr, "<f4") != 0 || x.rank != 2 || x.shape[0] < 1)
        fprintf(stderr, "embed: %s: want float32 [N, features] with N > 0\n", argv[2]);
    else if (strcmp(labels.descr, "<i8") != 0 || labels.rank != 1 || labels.shape[0] != x.shape[0])
        fprintf(stderr, "embed: %s: want int64 [%lld]\n", argv[3], (long long)x.shape[0]);
    else
        rc = classify(argv[1], &x, &labels);
    free(x.data);
    free(labels.data);
    return rc;
}
