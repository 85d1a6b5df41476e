/*
 * memcpy.c — the bandwidth reference for elementwise_chain: copy BYTES from
 * one buffer to another with THREADS threads (each copies a contiguous
 * share), RUNS times; prints the median, min and max in the lines `smelt
 * bench` uses. Both buffers are touched first, so page faults are not timed.
 *
 *     cc -O2 -pthread bench/memcpy.c -o build/bench/memcpy
 *     build/bench/memcpy BYTES THREADS RUNS
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct share {
    char *dst;
    const char *src;
    size_t n;
} share;

static void *copy(void *arg)
{
    share *s = arg;
    memcpy(s->dst, s->src, s->n);
    return NULL;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: memcpy BYTES THREADS RUNS\n");
        return 2;
    }
    size_t bytes = strtoull(argv[1], NULL, 10);
    int threads = atoi(argv[2]), runs = atoi(argv[3]);
    if (threads < 1 || threads > 64 || runs < 1) return 2;
    char *src = malloc(bytes), *dst = malloc(bytes);
    double *t = calloc((size_t)runs, sizeof(double));
    if (!src || !dst || !t) return 1;
    memset(src, 1, bytes);
    memset(dst, 2, bytes);
    share sh[64];
    pthread_t th[64];
    for (int i = 0; i < threads; i++) {
        size_t lo = bytes / (size_t)threads * (size_t)i, hi = i == threads - 1 ? bytes : bytes / (size_t)threads * (size_t)(i + 1);
        sh[i] = (share){dst + lo, src + lo, hi - lo};
    }
    for (int r = -2; r < runs; r++) {
        double s = now_ms();
        for (int i = 1; i < threads; i++) pthread_create(&th[i], NULL, copy, &sh[i]);
        copy(&sh[0]);
        for (int i = 1; i < threads; i++) pthread_join(th[i], NULL);
        if (r >= 0) t[r] = now_ms() - s;
    }
    qsort(t, (size_t)runs, sizeof(double), cmp_double);
    printf("median_ms: %.4f\nmin_ms: %.4f\nmax_ms: %.4f\ncheck: %d\n", t[runs / 2], t[0], t[runs - 1], dst[bytes - 1]);
    free(src);
    free(dst);
    free(t);
    return 0;
}
