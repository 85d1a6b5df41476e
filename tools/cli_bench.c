/* `smelt bench MODEL|DIR`: cold and cached compile, timed runs, pipelined
 * runs (--pipeline N) and a per-kernel profile (--profile). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "cli.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static smelt_kernel_profile *prof_sort_base;
static int by_time_desc(const void *a, const void *b)
{
    double x = prof_sort_base[*(const int *)a].total_ms, y = prof_sort_base[*(const int *)b].total_ms;
    return x < y ? 1 : x > y ? -1 : *(const int *)a - *(const int *)b;
}

/* bench --profile: `runs` more runs with per-kernel timing, then a table sorted by time. */
static int print_profile(cli *c, smelt_program *p)
{
    int n = smelt_program_kernel_count(p);
    smelt_kernel_profile *k = calloc((size_t)n + 1, sizeof *k);
    int *order = calloc((size_t)n + 1, sizeof(int));
    int rc = 0;
    if (!k || !order || smelt_program_set_profiling(p, 1)) rc = fail("profile");
    double t0 = now_ms();
    for (int i = 0; i < c->runs && !rc; i++)
        if (smelt_program_run(p, c->n_inputs, c->inputs)) rc = fail("run");
    double wall = now_ms() - t0, sum = 0;
    for (int i = 0; i < n && !rc; i++) {
        smelt_program_profile(p, i, &k[i]);
        order[i] = i;
        sum += k[i].total_ms;
    }
    if (!rc) {
        prof_sort_base = k;
        qsort(order, (size_t)n, sizeof(int), by_time_desc);
        printf("profile: %d kernels, %d runs, %.3f ms per run in kernels, %.3f ms per run wall\n", n, c->runs,
               sum / c->runs, wall / c->runs);
        printf("%6s %12s %12s %7s  %s\n", "kernel", "workgroups", "total_ms", "%run", "what");
        for (int j = 0; j < n; j++) {
            const smelt_kernel_profile *x = &k[order[j]];
            printf("%6d %12lld %12.3f %6.1f%%  %s\n", x->id, (long long)x->workgroups, x->total_ms,
                   wall > 0 ? 100.0 * x->total_ms / wall : 0.0, x->what);
        }
        /* Busy time per device: its kernels' dispatches, in the order devices first appear. */
        for (int j = 0; j < n; j++) {
            bool first = true;
            for (int q = 0; q < j && first; q++) first = strcmp(k[q].device, k[j].device) != 0;
            if (!first) continue;
            double busy = 0;
            int kernels = 0;
            for (int q = j; q < n; q++)
                if (strcmp(k[q].device, k[j].device) == 0) busy += k[q].total_ms, kernels++;
            printf("busy %s: %.3f ms per run (%d kernels, %.1f%% of wall)\n", k[j].device, busy / c->runs, kernels,
                   wall > 0 ? 100.0 * busy / wall : 0.0);
        }
    }
    smelt_program_set_profiling(p, 0);
    free(k);
    free(order);
    return rc;
}

/* bench --pipeline N: `runs` runs submitted with N held at once (the oldest
 * waited for and released before the next submit); runs per second. */
static int bench_pipelined(cli *c, smelt_program *p, double *per_s)
{
    smelt_ticket t[8] = {0};
    int n = c->pipeline, rc = 0;
    if (smelt_program_set_pipeline(p, n)) return fail("pipeline");
    for (int w = 0; w < 2 * n && !rc; w++) { /* warm: every run's memory touched once */
        if (t[w % n] && (smelt_program_wait(p, t[w % n]) || smelt_program_release(p, t[w % n]))) rc = fail("wait");
        if (!rc && smelt_program_submit(p, c->n_inputs, c->inputs, &t[w % n])) rc = fail("submit");
    }
    for (int k = 0; k < n && !rc; k++)
        if (t[k] && (smelt_program_wait(p, t[k]) || smelt_program_release(p, t[k]))) rc = fail("wait");
    memset(t, 0, sizeof t);
    double t0 = now_ms();
    for (int i = 0; i < c->runs + n && !rc; i++) {
        int k = i % n;
        if (t[k] && (smelt_program_wait(p, t[k]) || smelt_program_release(p, t[k]))) rc = fail("wait");
        t[k] = 0;
        if (!rc && i < c->runs && smelt_program_submit(p, c->n_inputs, c->inputs, &t[k])) rc = fail("submit");
    }
    double wall = now_ms() - t0;
    for (int k = 0; k < n; k++)
        if (t[k]) smelt_program_release(p, t[k]);
    *per_s = wall > 0 ? 1e3 * c->runs / wall : 0;
    return rc;
}

/* This process's peak resident set in kB: VmHWM, which starts afresh at exec.
 * (getrusage's ru_maxrss does not: Linux carries the pre-exec high-water mark
 * over, so a child of a large process would report its parent's peak.) */
static long peak_rss_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmHWM:", 6) == 0) kb = strtol(line + 6, NULL, 10);
    if (f) fclose(f);
    if (kb < 0) {
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        kb = ru.ru_maxrss;
    }
    return kb;
}

int cmd_bench(cli *c)
{
    struct stat sb;
    char model[4096];
    bool is_dir = stat(c->path, &sb) == 0 && S_ISDIR(sb.st_mode);
    snprintf(model, sizeof model, is_dir ? "%s/model.onnx" : "%s", c->path);
    smelt_model *m;
    if (smelt_model_load_file(model, &m)) return fail(model);
    if ((is_dir && !load_dir_inputs(c, c->path, m)) || !complete_inputs(c, m)) {
        smelt_model_free(m);
        return fail("inputs");
    }
    /* Cold: an empty cache directory of our own; cached: the same again. With
     * --no-cold (repeated timing rounds), only the second, from the usual cache. */
    char cold_dir[] = "/tmp/smelt-bench-XXXXXX";
    const char *old = getenv("SMELT_CACHE_DIR");
    char *saved = old ? strdup(old) : NULL;
    smelt_program *p = NULL;
    double t0 = now_ms(), t_cold = 0, t_warm = 0;
    int rc = 0;
    bool made = !c->no_cold && mkdtemp(cold_dir) != NULL;
    if (made) {
        setenv("SMELT_CACHE_DIR", cold_dir, 1);
        if (smelt_program_compile(m, &c->opt, c->n_inputs, c->inputs, &p)) rc = fail("compile");
        t_cold = now_ms() - t0;
        smelt_program_free(p);
        p = NULL;
    }
    if (!rc) {
        t0 = now_ms();
        if (smelt_program_compile(m, &c->opt, c->n_inputs, c->inputs, &p)) rc = fail("compile");
        t_warm = now_ms() - t0;
    }
    if (made) {
        char cmd[256];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", cold_dir);
        if (system(cmd) != 0) fprintf(stderr, "smelt: could not remove %s\n", cold_dir);
    }
    if (saved) setenv("SMELT_CACHE_DIR", saved, 1);
    else unsetenv("SMELT_CACHE_DIR");
    free(saved);
    double *t = calloc((size_t)c->runs, sizeof(double));
    if (!rc && t) {
        for (int w = 0; w < 2 && !rc; w++)
            if (smelt_program_run(p, c->n_inputs, c->inputs)) rc = fail("run");
        double all = now_ms();
        for (int i = 0; i < c->runs && !rc; i++) {
            double s = now_ms();
            if (smelt_program_run(p, c->n_inputs, c->inputs)) rc = fail("run");
            t[i] = now_ms() - s;
        }
        all = now_ms() - all;
        double piped = 0;
        if (!rc && c->pipeline > 0) rc = bench_pipelined(c, p, &piped);
        if (!rc) {
            qsort(t, (size_t)c->runs, sizeof(double), cmp_double);
            if (!c->no_cold) printf("compile_cold_ms: %.1f\n", t_cold);
            printf("compile_cached_ms: %.1f\nruns: %d\nmedian_ms: %.4f\nmin_ms: %.4f\nmax_ms: %.4f\npeak_rss_kb: %ld\n",
                   t_warm, c->runs, t[c->runs / 2], t[0], t[c->runs - 1], peak_rss_kb());
            printf("runs_per_s: %.2f\n", all > 0 ? 1e3 * c->runs / all : 0.0);
            if (c->pipeline > 0) printf("pipeline: %d\npipelined_runs_per_s: %.2f\n", c->pipeline, piped);
            if (c->profile) rc = print_profile(c, p);
        }
    }
    free(t);
    smelt_program_free(p);
    smelt_model_free(m);
    return rc;
}
