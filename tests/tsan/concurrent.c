/*
 * concurrent.c — compile and run one model from several threads at once, through the public
 * API only, the way smelt.h says a program may be used: the model shared, one program per
 * thread, one compile cache for all. Built with -fsanitize=thread by scripts/test.sh (stage
 * tsan), where any data race ThreadSanitizer sees fails the stage.
 *
 *     build-tsan/tsan_concurrent MODEL.onnx INPUT.npy [DEVICES PLACE]
 *
 * MODEL takes one input [N, F] (N symbolic) and gives one float32 output [N, C]. Threads 0 and
 * 1 compile it fused for all N rows of INPUT, threads 2 and 3 unfused for its first 7 rows, all
 * at once into an empty cache; each runs its program three times. Every output must equal
 * thread 0's bit for bit (same program) or within 1e-5 relative (unfused; first 7 rows), and
 * again after a serial compile and run in the main thread. With DEVICES and PLACE, thread 1
 * compiles for that device list and placement (smelt_options.devices, .placement): a program
 * whose devices run their command streams on threads of their own (api/streams.c), its
 * output still bit for bit thread 0's where the devices share one target class; it then
 * submits six runs two at a time (smelt_program_submit), each equal to its plain runs. Prints `tsan: N threads agree` and
 * exits 0, or says what differed and exits 1.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "smelt.h"

#define N_THREADS 4
#define SMALL_ROWS 7

typedef struct job {
    const smelt_model *model;
    const smelt_tensor *input;
    int64_t rows;
    int no_fuse;
    const char *devices, *place; /* NULL: the defaults */
    float *out;       /* rows x cols, malloc'd by the job */
    int64_t cols;
    char error[512];
} job;

/* Six runs submitted two at a time (smelt_program_submit): each device's
 * stream takes the next run while the others finish the last, on the
 * threads api/streams.c keeps; every output bit for bit the plain run's. The
 * last two are left to smelt_program_free. */
static void pipelined(job *j, smelt_program *p, const smelt_tensor *x)
{
    smelt_ticket t[6] = {0};
    for (int r = 0; r < 6 && !j->error[0]; r++) {
        if (r >= 2) {
            smelt_tensor y;
            if (smelt_program_wait(p, t[r - 2]) != SMELT_OK || smelt_program_run_output(p, t[r - 2], 0, &y) != SMELT_OK) {
                snprintf(j->error, sizeof j->error, "pipelined run %d: %s", r - 2, smelt_last_error());
                break;
            }
            if (memcmp(j->out, y.data, (size_t)(y.shape[0] * y.shape[1]) * sizeof(float)) != 0)
                snprintf(j->error, sizeof j->error, "pipelined run %d differs from the plain runs", r - 2);
            smelt_program_release(p, t[r - 2]);
        }
        if (!j->error[0] && smelt_program_submit(p, 1, x, &t[r]) != SMELT_OK)
            snprintf(j->error, sizeof j->error, "submit %d: %s", r, smelt_last_error());
    }
}

static void *run_job(void *arg)
{
    job *j = arg;
    smelt_tensor x = *j->input;
    x.shape[0] = j->rows;
    smelt_options opt;
    smelt_options_init(&opt);
    opt.threads = 2;
    opt.no_fuse = j->no_fuse;
    if (j->devices) opt.devices = j->devices;
    opt.placement = j->place;
    smelt_program *p = NULL;
    if (smelt_program_compile(j->model, &opt, 1, &x, &p) != SMELT_OK) {
        snprintf(j->error, sizeof j->error, "compile: %s", smelt_last_error());
        return NULL;
    }
    for (int r = 0; r < 3; r++) {
        smelt_tensor y;
        if (smelt_program_run(p, 1, &x) != SMELT_OK || smelt_program_output(p, 0, &y) != SMELT_OK) {
            snprintf(j->error, sizeof j->error, "run %d: %s", r, smelt_last_error());
            break;
        }
        if (y.dtype != SMELT_F32 || y.rank != 2 || y.shape[0] != j->rows) {
            snprintf(j->error, sizeof j->error, "output has an unexpected type or shape");
            break;
        }
        size_t n = (size_t)(y.shape[0] * y.shape[1]);
        if (!j->out) j->out = malloc(n * sizeof(float));
        if (!j->out) {
            snprintf(j->error, sizeof j->error, "out of memory");
            break;
        }
        if (r > 0 && memcmp(j->out, y.data, n * sizeof(float)) != 0) {
            snprintf(j->error, sizeof j->error, "run %d differs from run 0 of the same program", r);
            break;
        }
        memcpy(j->out, y.data, n * sizeof(float));
        j->cols = y.shape[1];
    }
    if (j->devices && !j->error[0]) pipelined(j, p, &x);
    smelt_program_free(p);
    return NULL;
}

/* 0 when a's first `rows` rows equal b's: bit for bit (exact) or within 1e-5 relative. */
static int compare(const job *a, const job *b, int64_t rows, int exact)
{
    for (int64_t i = 0; i < rows * a->cols; i++) {
        float x = a->out[i], y = b->out[i];
        if (exact ? memcmp(&x, &y, sizeof x) != 0 : !(fabsf(x - y) <= 1e-5f * (1 + fabsf(y)))) {
            fprintf(stderr, "tsan: element %lld: %.9g vs %.9g\n", (long long)i, x, y);
            return 1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 3 && argc != 5) {
        fprintf(stderr, "usage: tsan_concurrent MODEL.onnx INPUT.npy [DEVICES PLACE]\n");
        return 2;
    }
    smelt_model *m = NULL;
    smelt_tensor input;
    if (smelt_model_load_file(argv[1], &m) != SMELT_OK || smelt_tensor_load(argv[2], &input) != SMELT_OK) {
        fprintf(stderr, "tsan: %s\n", smelt_last_error());
        smelt_model_free(m);
        return 2;
    }
    smelt_value_info info;
    smelt_model_input_info(m, 0, &info);
    free((void *)input.name);
    input.name = strdup(info.name);

    job jobs[N_THREADS + 1];
    memset(jobs, 0, sizeof jobs);
    pthread_t th[N_THREADS];
    for (int t = 0; t <= N_THREADS; t++) {
        jobs[t].model = m;
        jobs[t].input = &input;
        jobs[t].rows = t < 2 || t == N_THREADS ? input.shape[0] : SMALL_ROWS;
        jobs[t].no_fuse = t >= 2 && t < N_THREADS;
    }
    if (argc == 5) jobs[1].devices = argv[3], jobs[1].place = argv[4];
    int rc = 0;
    for (int t = 0; t < N_THREADS; t++)
        if (pthread_create(&th[t], NULL, run_job, &jobs[t]) != 0) {
            fprintf(stderr, "tsan: cannot start thread %d\n", t);
            return 2;
        }
    for (int t = 0; t < N_THREADS; t++) pthread_join(th[t], NULL);
    run_job(&jobs[N_THREADS]); /* serially, from the now warm cache */

    for (int t = 0; t <= N_THREADS; t++) {
        if (jobs[t].error[0] || !jobs[t].out) {
            fprintf(stderr, "tsan: thread %d: %s\n", t, jobs[t].error[0] ? jobs[t].error : "no output");
            rc = 1;
        }
    }
    for (int t = 1; !rc && t <= N_THREADS; t++) {
        int exact = !jobs[t].no_fuse;
        if (compare(&jobs[t], &jobs[0], jobs[t].rows, exact)) {
            fprintf(stderr, "tsan: thread %d's output differs from thread 0's\n", t);
            rc = 1;
        }
    }
    if (!rc) printf("tsan: %d threads agree (%lld rows x %lld columns)\n", N_THREADS, (long long)input.shape[0],
                    (long long)jobs[0].cols);
    for (int t = 0; t <= N_THREADS; t++) free(jobs[t].out);
    smelt_tensor_free(&input);
    smelt_model_free(m);
    return rc;
}
