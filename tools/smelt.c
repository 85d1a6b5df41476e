/*
 * smelt — the command-line tool, a thin layer over include/smelt.h.
 *
 *   smelt run     MODEL [--input NAME=FILE]... [--output-dir DIR]
 *   smelt check   DIR        (ONNX backend-test layout)
 *   smelt bench   MODEL|DIR  [--runs N] [--profile]
 *   smelt compile MODEL|DIR --emit ir|regions|kir|c|opencl|cuda|plan [-o FILE]
 *   smelt info    MODEL
 * Common: --device LIST --threads N --locals reuse|hybrid --no-fuse
 *         --shape NAME=1x3x224x224 --max-memory BYTES -v
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "smelt.h"

#define MAX_INPUTS 64

typedef struct cli {
    const char *cmd, *path, *output_dir, *emit, *out_file;
    smelt_options opt;
    int runs;
    bool devices_given;
    int profile;     /* bench: per-kernel time breakdown */
    int n_inputs;
    smelt_tensor inputs[MAX_INPUTS]; /* from --input (data) or --shape (no data) */
    char *input_names[MAX_INPUTS];
} cli;

static int usage(void)
{
    fprintf(stderr,
            "usage: smelt run     MODEL.onnx [--input NAME=FILE]... [--output-dir DIR]\n"
            "       smelt check   DIR\n"
            "       smelt bench   MODEL.onnx|DIR [--runs N] [--profile]\n"
            "       smelt compile MODEL.onnx|DIR --emit ir|regions|kir|c|opencl|cuda|plan [-o FILE]\n"
            "       smelt info    MODEL.onnx\n"
            "options: --device LIST  --threads N  --locals reuse|hybrid  --no-fuse  --fuse-pad auto|never|always\n"
            "         --shape NAME=1x3x224x224  --max-memory BYTES  -v\n");
    return 2;
}

static int fail(const char *what)
{
    fprintf(stderr, "smelt: %s%s%s\n", what ? what : "", what ? ": " : "", smelt_last_error());
    return 2;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static smelt_tensor *cli_input(cli *c, const char *name)
{
    for (int i = 0; i < c->n_inputs; i++)
        if (strcmp(c->input_names[i], name) == 0) return &c->inputs[i];
    if (c->n_inputs == MAX_INPUTS) return NULL;
    smelt_tensor *t = &c->inputs[c->n_inputs];
    memset(t, 0, sizeof *t);
    c->input_names[c->n_inputs] = strdup(name);
    t->name = c->input_names[c->n_inputs];
    c->n_inputs++;
    return t;
}

static void cli_free(cli *c)
{
    for (int i = 0; i < c->n_inputs; i++) {
        free(c->inputs[i].data);
        free(c->input_names[i]);
    }
}

static int parse_args(cli *c, int argc, char **argv)
{
    memset(c, 0, sizeof *c);
    smelt_options_init(&c->opt);
    c->runs = 20;
    if (argc < 3) return usage();
    c->cmd = argv[1];
    c->path = argv[2];
    for (int i = 3; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--no-fuse") == 0) { c->opt.no_fuse = 1; continue; }
        if (strcmp(a, "-v") == 0) { c->opt.verbose = 1; continue; }
        if (strcmp(a, "--profile") == 0) { c->profile = 1; continue; }
        if (!v) return usage();
        i++;
        if (strcmp(a, "--device") == 0) c->opt.devices = v, c->devices_given = true;
        else if (strcmp(a, "--threads") == 0) c->opt.threads = atoi(v);
        else if (strcmp(a, "--runs") == 0) c->runs = atoi(v) > 0 ? atoi(v) : 1;
        else if (strcmp(a, "--output-dir") == 0) c->output_dir = v;
        else if (strcmp(a, "--emit") == 0) c->emit = v;
        else if (strcmp(a, "-o") == 0) c->out_file = v;
        else if (strcmp(a, "--max-memory") == 0) c->opt.max_memory = strtoll(v, NULL, 10);
        else if (strcmp(a, "--fuse-pad") == 0) {
            if (strcmp(v, "auto") == 0) c->opt.fuse_pad = 0;
            else if (strcmp(v, "never") == 0) c->opt.fuse_pad = 1;
            else if (strcmp(v, "always") == 0) c->opt.fuse_pad = 2;
            else return usage();
        } else if (strcmp(a, "--locals") == 0) {
            if (strcmp(v, "reuse") == 0) c->opt.locals = SMELT_LOCALS_REUSE;
            else if (strcmp(v, "hybrid") == 0) c->opt.locals = SMELT_LOCALS_HYBRID;
            else return usage();
        } else if (strcmp(a, "--input") == 0 || strcmp(a, "--shape") == 0) {
            const char *eq = strchr(v, '=');
            if (!eq) return usage();
            char name[256];
            snprintf(name, sizeof name, "%.*s", (int)(eq - v), v);
            smelt_tensor *t = cli_input(c, name);
            if (!t) return usage();
            if (strcmp(a, "--input") == 0) {
                smelt_tensor f;
                if (smelt_tensor_load(eq + 1, &f)) return fail(eq + 1);
                free(t->data);
                t->dtype = f.dtype;
                t->rank = f.rank;
                memcpy(t->shape, f.shape, sizeof f.shape);
                t->data = f.data;
                f.data = NULL;
                smelt_tensor_free(&f);
            } else {
                t->rank = 0;
                for (const char *p = eq + 1; *p && t->rank < SMELT_MAX_RANK;) {
                    t->shape[t->rank++] = strtoll(p, (char **)&p, 10);
                    if (*p == 'x' || *p == ',') p++;
                    else if (*p) return usage();
                }
            }
        } else {
            return usage();
        }
    }
    return 0;
}

/* Deterministic inputs for those not given: uniform in [-1, 1) for floats,
 * small non-negative integers for ints. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double rng_next(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}

static int fill_random(smelt_tensor *t)
{
    int64_t n = smelt_tensor_numel(t);
    size_t es = smelt_dtype_size(t->dtype);
    t->data = smelt_alloc((size_t)(n > 0 ? n : 1) * (es ? es : 1));
    if (!t->data) return 0;
    for (int64_t i = 0; i < n; i++) {
        double r = rng_next();
        switch (t->dtype) {
        case SMELT_F32: ((float *)t->data)[i] = (float)(2 * r - 1); break;
        case SMELT_F64: ((double *)t->data)[i] = 2 * r - 1; break;
        case SMELT_I64: ((int64_t *)t->data)[i] = (int64_t)(r * 4); break;
        case SMELT_I32: ((int32_t *)t->data)[i] = (int32_t)(r * 4); break;
        case SMELT_BOOL: ((uint8_t *)t->data)[i] = r < 0.5; break;
        default: memset((char *)t->data + (size_t)i * es, 0, es); break;
        }
    }
    return 1;
}

/* Complete c->inputs: every model input gets data (given, or generated). */
static int complete_inputs(cli *c, const smelt_model *m)
{
    for (int i = 0; i < smelt_model_input_count(m); i++) {
        smelt_value_info info;
        smelt_model_input_info(m, i, &info);
        smelt_tensor *t = cli_input(c, info.name);
        if (!t) return 0;
        if (t->data) continue;
        if (t->rank == 0) {
            t->rank = info.rank;
            for (int d = 0; d < info.rank; d++) {
                if (info.shape[d] < 0 && info.dim_names[d]) {
                    fprintf(stderr, "smelt: input '%s' has symbolic dim %d '%s': give --input or --shape %s=...\n",
                            info.name, d, info.dim_names[d], info.name);
                    return 0;
                }
                if (info.shape[d] < 0) {
                    fprintf(stderr, "smelt: input '%s' has unknown dim %d (no size in the model): give --input or --shape %s=...\n",
                            info.name, d, info.name);
                    return 0;
                }
                t->shape[d] = info.shape[d];
            }
        }
        t->dtype = info.dtype;
        if (!fill_random(t)) return 0;
    }
    return 1;
}

static void sanitize_name(const char *in, char *out, size_t cap)
{
    size_t n = 0;
    for (; *in && n + 1 < cap; in++) {
        bool keep = (*in >= 'a' && *in <= 'z') || (*in >= 'A' && *in <= 'Z') || (*in >= '0' && *in <= '9') ||
                    *in == '-' || *in == '_' || (*in == '.' && n > 0);
        out[n] = keep ? *in : '_';
        n++;
    }
    if (n == 0) out[n++] = '_';
    out[n] = 0;
}

static int cmd_run(cli *c)
{
    smelt_model *m;
    smelt_program *p;
    if (smelt_model_load_file(c->path, &m)) return fail(c->path);
    int rc = 0;
    if (!complete_inputs(c, m)) {
        smelt_model_free(m);
        return 2;
    }
    if (smelt_program_compile(m, &c->opt, c->n_inputs, c->inputs, &p)) {
        rc = fail(c->path);
    } else {
        if (smelt_program_run(p, c->n_inputs, c->inputs)) rc = fail("run");
        if (!rc && c->output_dir) mkdir(c->output_dir, 0777);
        for (int i = 0; !rc && i < smelt_program_output_count(p); i++) {
            smelt_tensor y;
            smelt_program_output(p, i, &y);
            if (c->output_dir) {
                char name[200], path[4096];
                sanitize_name(y.name, name, sizeof name);
                snprintf(path, sizeof path, "%s/%s.npy", c->output_dir, name);
                if (smelt_tensor_save(path, &y)) rc = fail(path);
                else printf("%s\n", path);
            } else {
                printf("%s: %s[", y.name, smelt_dtype_name(y.dtype));
                for (int d = 0; d < y.rank; d++) printf(d ? ",%lld" : "%lld", (long long)y.shape[d]);
                printf("]");
                int64_t n = smelt_tensor_numel(&y);
                for (int64_t j = 0; j < n && j < 8; j++) {
                    if (y.dtype == SMELT_F32) printf(" %g", ((float *)y.data)[j]);
                    else if (y.dtype == SMELT_F64) printf(" %g", ((double *)y.data)[j]);
                    else if (y.dtype == SMELT_I64) printf(" %lld", (long long)((int64_t *)y.data)[j]);
                }
                printf(n > 8 ? " ...\n" : "\n");
            }
        }
        smelt_program_free(p);
    }
    smelt_model_free(m);
    return rc;
}

/* ---- check: ONNX backend-test layout ------------------------------------- */

/* dir/name into buf; false when it does not fit. */
static bool path_join(char *buf, size_t cap, const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    if (a + b + 2 > cap) {
        buf[0] = 0;
        return false;
    }
    memcpy(buf, dir, a);
    buf[a] = '/';
    memcpy(buf + a + 1, name, b + 1);
    return true;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Sorted names in dir starting with prefix; returns count (<= cap). */
static int list_dir(const char *dir, const char *prefix, char **names, int cap)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < cap)
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) names[n++] = strdup(e->d_name);
    closedir(d);
    qsort(names, (size_t)n, sizeof(char *), cmp_str);
    return n;
}

static double elem_as_double(const smelt_tensor *t, int64_t i)
{
    switch (t->dtype) {
    case SMELT_F32: return ((const float *)t->data)[i];
    case SMELT_F64: return ((const double *)t->data)[i];
    case SMELT_I64: return (double)((const int64_t *)t->data)[i];
    case SMELT_I32: return ((const int32_t *)t->data)[i];
    case SMELT_I16: return ((const int16_t *)t->data)[i];
    case SMELT_I8: return ((const int8_t *)t->data)[i];
    case SMELT_U8: case SMELT_BOOL: return ((const uint8_t *)t->data)[i];
    case SMELT_U16: return ((const uint16_t *)t->data)[i];
    case SMELT_U32: return ((const uint32_t *)t->data)[i];
    case SMELT_U64: return (double)((const uint64_t *)t->data)[i];
    default: return 0;
    }
}

/* numpy's assert_allclose(actual, expected, rtol=1e-3, atol=1e-7), as the ONNX
 * backend tests use; NaNs must match NaNs, infinities must match exactly. */
static int compare(const smelt_tensor *got, const smelt_tensor *want, double *max_abs, double *max_rel, char *why, size_t cap)
{
    if (got->dtype != want->dtype) {
        snprintf(why, cap, "dtype %s, expected %s", smelt_dtype_name(got->dtype), smelt_dtype_name(want->dtype));
        return 0;
    }
    if (got->rank != want->rank || memcmp(got->shape, want->shape, sizeof(int64_t) * (size_t)got->rank) != 0) {
        snprintf(why, cap, "shape mismatch (rank %d vs %d)", got->rank, want->rank);
        return 0;
    }
    int ok = 1;
    int64_t n = smelt_tensor_numel(want);
    for (int64_t i = 0; i < n; i++) {
        double a = elem_as_double(got, i), b = elem_as_double(want, i);
        if (isnan(a) || isnan(b)) {
            if (isnan(a) != isnan(b)) {
                if (ok) snprintf(why, cap, "element %lld: %g, expected %g", (long long)i, a, b);
                ok = 0;
            }
            continue;
        }
        if (isinf(a) || isinf(b)) {
            if (a != b) {
                if (ok) snprintf(why, cap, "element %lld: %g, expected %g", (long long)i, a, b);
                ok = 0;
            }
            continue;
        }
        double d = fabs(a - b), r = b != 0 ? d / fabs(b) : d;
        if (d > *max_abs) *max_abs = d;
        if (r > *max_rel) *max_rel = r;
        double tol = (want->dtype == SMELT_F32 || want->dtype == SMELT_F64) ? 1e-7 + 1e-3 * fabs(b) : 0;
        if (d > tol) {
            if (ok) snprintf(why, cap, "element %lld: %.9g, expected %.9g", (long long)i, a, b);
            ok = 0;
        }
    }
    return ok;
}

static int check_set(cli *c, const smelt_model *m, const char *set_dir)
{
    char *names[256];
    int rc = 0, n_in = list_dir(set_dir, "input_", names, 256);
    smelt_tensor in[256];
    int n_loaded = 0;
    char path[4096], why[512] = "";
    for (int i = 0; i < n_in; i++) {
        (void)path_join(path, sizeof path, set_dir, names[i]); /* a truncated path fails to open, with its name in the error */
        if (smelt_tensor_load(path, &in[n_loaded])) {
            rc = fail(path);
            break;
        }
        /* input_i binds to the model's i-th input, whatever the file's name says */
        smelt_value_info info;
        if (smelt_model_input_info(m, n_loaded, &info) == SMELT_OK) {
            free((void *)in[n_loaded].name);
            in[n_loaded].name = strdup(info.name);
        }
        n_loaded++;
    }
    for (int i = 0; i < n_in; i++) free(names[i]);
    smelt_program *p = NULL;
    if (!rc && smelt_program_compile(m, &c->opt, n_loaded, in, &p)) {
        printf("%s: ERROR %s\n", set_dir, smelt_last_error());
        rc = 2;
    }
    if (!rc && smelt_program_run(p, n_loaded, in)) {
        printf("%s: ERROR %s\n", set_dir, smelt_last_error());
        rc = 2;
    }
    double max_abs = 0, max_rel = 0;
    int n_out = rc ? 0 : list_dir(set_dir, "output_", names, 256);
    if (!rc && n_out != smelt_program_output_count(p)) {
        printf("%s: FAIL the model has %d outputs, the data set %d\n", set_dir, smelt_program_output_count(p), n_out);
        rc = 1;
    }
    for (int i = 0; i < n_out; i++) {
        smelt_tensor want, got;
        (void)path_join(path, sizeof path, set_dir, names[i]); /* a truncated path fails to open, with its name in the error */
        if (!rc) {
            if (smelt_tensor_load(path, &want)) {
                rc = fail(path);
            } else {
                smelt_program_output(p, i, &got);
                if (!compare(&got, &want, &max_abs, &max_rel, why, sizeof why)) {
                    printf("%s: FAIL output %d ('%s'): %s\n", set_dir, i, got.name, why);
                    rc = 1;
                }
                smelt_tensor_free(&want);
            }
        }
        free(names[i]);
    }
    if (!rc) printf("%s: PASS max_abs_err=%.3g max_rel_err=%.3g\n", set_dir, max_abs, max_rel);
    smelt_program_free(p);
    for (int i = 0; i < n_loaded; i++) smelt_tensor_free(&in[i]);
    return rc;
}

static int cmd_check(cli *c)
{
    char model[4096];
    snprintf(model, sizeof model, "%s/model.onnx", c->path);
    smelt_model *m;
    if (smelt_model_load_file(model, &m)) {
        printf("%s: ERROR %s\n", c->path, smelt_last_error());
        return 2;
    }
    char *sets[256];
    int n = list_dir(c->path, "test_data_set_", sets, 256), worst = 0;
    if (n == 0) {
        printf("%s: ERROR no test_data_set_* directories\n", c->path);
        worst = 2;
    }
    for (int i = 0; i < n; i++) {
        char dir[4096];
        (void)path_join(dir, sizeof dir, c->path, sets[i]); /* a truncated path fails to open, with its name in the error */
        int rc = check_set(c, m, dir);
        if (rc > worst) worst = rc;
        free(sets[i]);
    }
    smelt_model_free(m);
    return worst;
}

/* ---- bench, compile, info ------------------------------------------------ */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int load_dir_inputs(cli *c, const char *dir, const smelt_model *m)
{
    char set[4096], *names[256];
    snprintf(set, sizeof set, "%s/test_data_set_0", dir);
    int n = list_dir(set, "input_", names, 256), ok = 1;
    for (int i = 0; i < n; i++) {
        char path[8192];
        (void)path_join(path, sizeof path, set, names[i]); /* a truncated path fails to open, with its name in the error */
        smelt_value_info info;
        if (ok && smelt_model_input_info(m, i, &info) == SMELT_OK) {
            smelt_tensor f, *t = cli_input(c, info.name);
            if (!t || smelt_tensor_load(path, &f)) ok = 0;
            else {
                t->dtype = f.dtype;
                t->rank = f.rank;
                memcpy(t->shape, f.shape, sizeof f.shape);
                t->data = f.data;
                f.data = NULL;
                smelt_tensor_free(&f);
            }
        }
        free(names[i]);
    }
    return ok;
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
    }
    smelt_program_set_profiling(p, 0);
    free(k);
    free(order);
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

static int cmd_bench(cli *c)
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
    /* Cold: an empty cache directory of our own; cached: the same again. */
    char cold_dir[] = "/tmp/smelt-bench-XXXXXX";
    const char *old = getenv("SMELT_CACHE_DIR");
    char *saved = old ? strdup(old) : NULL;
    smelt_program *p = NULL;
    double t0 = now_ms(), t_cold = 0, t_warm = 0;
    int rc = 0;
    bool made = mkdtemp(cold_dir) != NULL;
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
        for (int i = 0; i < c->runs && !rc; i++) {
            double s = now_ms();
            if (smelt_program_run(p, c->n_inputs, c->inputs)) rc = fail("run");
            t[i] = now_ms() - s;
        }
        if (!rc) {
            qsort(t, (size_t)c->runs, sizeof(double), cmp_double);
            printf("compile_cold_ms: %.1f\ncompile_cached_ms: %.1f\nruns: %d\nmedian_ms: %.4f\nmin_ms: %.4f\nmax_ms: %.4f\npeak_rss_kb: %ld\n",
                   t_cold, t_warm, c->runs, t[c->runs / 2], t[0], t[c->runs - 1], peak_rss_kb());
            if (c->profile) rc = print_profile(c, p);
        }
    }
    free(t);
    smelt_program_free(p);
    smelt_model_free(m);
    return rc;
}

/* `smelt info`: the same model without fusion, for comparison (printed first,
 * to stderr-free stdout, before the fused report). */
static int print_unfused(cli *c, const smelt_model *m, const smelt_program *fused)
{
    smelt_options o = c->opt;
    o.no_fuse = 1;
    smelt_program *u;
    if (smelt_program_compile(m, &o, c->n_inputs, c->inputs, &u)) return fail("compile --no-fuse");
    smelt_program_stats a, b;
    smelt_program_get_stats(fused, &a);
    smelt_program_get_stats(u, &b);
    printf("fusion:       %d kernels, %lld bytes moved per run (--no-fuse: %d kernels, %lld bytes; %.2fx fewer bytes)\n",
           a.kernels, (long long)a.bytes_moved, b.kernels, (long long)b.bytes_moved,
           a.bytes_moved ? (double)b.bytes_moved / (double)a.bytes_moved : 0.0);
    smelt_program_free(u);
    return 0;
}

static int cmd_dump(cli *c, const char *what)
{
    smelt_model *m;
    smelt_program *p;
    /* Source for a target needs no device: --emit opencl / cuda lowers for it. */
    bool source = !strcmp(what, "c") || !strcmp(what, "opencl") || !strcmp(what, "cuda");
    if (source) {
        c->opt.compile_only = 1;
        if (!c->devices_given) c->opt.devices = !strcmp(what, "c") ? "cpu" : what;
    }
    struct stat sb;
    char model[4096];
    bool is_dir = stat(c->path, &sb) == 0 && S_ISDIR(sb.st_mode);
    snprintf(model, sizeof model, is_dir ? "%s/model.onnx" : "%s", c->path);
    if (smelt_model_load_file(model, &m)) return fail(model);
    if ((is_dir && !load_dir_inputs(c, c->path, m)) || !complete_inputs(c, m)) {
        smelt_model_free(m);
        return 2;
    }
    int rc = 0;
    char *text = NULL;
    if (smelt_program_compile(m, &c->opt, c->n_inputs, c->inputs, &p)) {
        rc = fail(c->path);
    } else {
        if (smelt_program_dump(p, what, &text)) rc = fail("dump");
        if (!rc && strcmp(what, "info") == 0 && !c->opt.no_fuse) rc = print_unfused(c, m, p);
        smelt_program_free(p);
    }
    if (text) {
        if (c->out_file) {
            char tmp[4096];
            snprintf(tmp, sizeof tmp, "%s.tmp%d", c->out_file, (int)getpid());
            FILE *f = fopen(tmp, "w");
            if (!f || fputs(text, f) < 0 || fclose(f) != 0 || rename(tmp, c->out_file) != 0) {
                fprintf(stderr, "smelt: cannot write %s: %s\n", c->out_file, strerror(errno));
                remove(tmp);
                rc = 2;
            }
        } else {
            fputs(text, stdout);
        }
        smelt_free(text);
    }
    smelt_model_free(m);
    return rc;
}

int main(int argc, char **argv)
{
    cli c;
    int rc = parse_args(&c, argc, argv);
    if (rc) return rc;
    if (strcmp(c.cmd, "run") == 0) rc = cmd_run(&c);
    else if (strcmp(c.cmd, "check") == 0) rc = cmd_check(&c);
    else if (strcmp(c.cmd, "bench") == 0) rc = cmd_bench(&c);
    else if (strcmp(c.cmd, "compile") == 0) rc = c.emit ? cmd_dump(&c, c.emit) : usage();
    else if (strcmp(c.cmd, "info") == 0) rc = cmd_dump(&c, "info");
    else rc = usage();
    cli_free(&c);
    return rc;
}
