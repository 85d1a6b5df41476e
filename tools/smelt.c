/*
 * smelt — the command-line tool, a thin layer over include/smelt.h: the
 * command line, run, compile/info and main (check: cli_check.c, bench: cli_bench.c).
 *
 *   smelt run     MODEL [--input NAME=FILE]... [--output-dir DIR]
 *   smelt check   DIR [--atol A] [--rtol R] [--pipeline N]   (ONNX backend-test layout)
 *   smelt bench   MODEL|DIR  [--runs N] [--profile] [--no-cold] [--pipeline N]
 *   smelt compile MODEL|DIR --emit ir|regions|kir|c|opencl|cuda|plan [-o FILE]
 *   smelt info    MODEL
 * Common: --device LIST --place POLICY --threads N --locals reuse|hybrid --no-fuse
 *         --shape NAME=1x3x224x224 --max-memory SIZE -v   (numbers and sizes: README)
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

static int usage(void)
{
    fprintf(stderr,
            "usage: smelt run     MODEL.onnx [--input NAME=FILE]... [--output-dir DIR]\n"
            "       smelt check   DIR [--atol A] [--rtol R] [--pipeline N]\n"
            "       smelt bench   MODEL.onnx|DIR [--runs N] [--profile] [--no-cold] [--pipeline N]\n"
            "       smelt compile MODEL.onnx|DIR --emit ir|regions|kir|c|opencl|cuda|plan [-o FILE]\n"
            "       smelt info    MODEL.onnx\n"
            "options: --device LIST (cpu, cpu:N, opencl:N, cuda:N, comma-separated)  --place fallback|split|split:W0:W1..|cost|OP=DEVICE,NODE=DEVICE,*=DEVICE\n"
            "         --threads N  --locals reuse|hybrid  --no-fuse  --fuse-pad auto|never|always\n"
            "         --shape NAME=1x3x224x224  --max-memory SIZE (bytes, or e.g. 64MiB, 1MB)\n"
            "         --max-loop-iterations N  -v\n");
    return 2;
}

int fail(const char *what)
{
    fprintf(stderr, "smelt: %s%s%s\n", what ? what : "", what ? ": " : "", smelt_last_error());
    return 2;
}

double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

smelt_tensor *cli_input(cli *c, const char *name)
{
    for (int i = 0; i < c->n_inputs; i++)
        if (strcmp(c->input_names[i], name) == 0) return &c->inputs[i];
    if (c->n_inputs == MAX_INPUTS) return NULL;
    smelt_tensor *t = &c->inputs[c->n_inputs];
    memset(t, 0, sizeof *t);
    c->input_names[c->n_inputs] = strdup(name);
    if (!c->input_names[c->n_inputs]) return NULL;
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

/* A rejected argument: the flag, the value and the rule it broke. Returns 2. */
static int bad_arg(const char *flag, const char *value, const char *rule)
{
    fprintf(stderr, "smelt: %s '%s': %s\n", flag, value, rule);
    return 2;
}

/* A whole-string decimal integer, digits only (no sign, blanks or suffix). */
static bool parse_digits(const char *s, const char *end, long long *out)
{
    if (s == end) return false;
    long long v = 0;
    for (; s < end; s++) {
        if (*s < '0' || *s > '9' || __builtin_mul_overflow(v, 10, &v) ||
            __builtin_add_overflow(v, *s - '0', &v))
            return false;
    }
    *out = v;
    return true;
}

/* --threads, --runs: a whole number in [lo, hi]; 0 or 2 (after a message). */
static int parse_count(const char *flag, const char *v, long long lo, long long hi, int *out)
{
    long long n;
    if (!parse_digits(v, v + strlen(v), &n)) {
        char rule[96];
        snprintf(rule, sizeof rule, "must be a whole number from %lld to %lld", lo, hi);
        return bad_arg(flag, v, rule);
    }
    if (n < lo || n > hi) {
        char rule[96];
        snprintf(rule, sizeof rule, "must be from %lld to %lld", lo, hi);
        return bad_arg(flag, v, rule);
    }
    *out = (int)n;
    return 0;
}

/* A byte size: a whole number with an optional unit, B, kB/MB/GB/TB (powers of
 * 1000) or KiB/MiB/GiB/TiB (powers of 1024), case-insensitive; plain is bytes. */
static int parse_size(const char *flag, const char *v, int64_t *out)
{
    static const struct {
        const char *unit;
        int64_t scale;
    } units[] = {
        {"", 1}, {"B", 1},
        {"kB", 1000}, {"MB", 1000000}, {"GB", 1000000000}, {"TB", 1000000000000},
        {"KiB", 1ll << 10}, {"MiB", 1ll << 20}, {"GiB", 1ll << 30}, {"TiB", 1ll << 40},
    };
    const char *u = v;
    while (*u >= '0' && *u <= '9') u++;
    long long n;
    if (!parse_digits(v, u, &n))
        return bad_arg(flag, v, "must be a whole number of bytes, optionally with a unit "
                                "(B, kB, MB, GB, TB, KiB, MiB, GiB, TiB)");
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcasecmp(u, units[i].unit) != 0) continue;
        int64_t bytes;
        if (__builtin_mul_overflow((int64_t)n, units[i].scale, &bytes))
            return bad_arg(flag, v, "is more than 2^63-1 bytes");
        *out = bytes;
        return 0;
    }
    return bad_arg(flag, v, "has an unknown unit (known: B, kB, MB, GB, TB, KiB, MiB, GiB, TiB)");
}

/* NAME=D0xD1x... (or commas): every dim a whole number >= 0, 1 to SMELT_MAX_RANK dims. */
static int parse_shape(const char *v, const char *dims, smelt_tensor *t)
{
    int rank = 0;
    int64_t shape[SMELT_MAX_RANK];
    for (const char *p = dims;;) {
        const char *end = p + strcspn(p, "x,");
        long long d;
        if (!parse_digits(p, end, &d))
            return bad_arg("--shape", v, "each dim must be a whole number >= 0 (at most 2^63-1), "
                                         "separated by 'x' or ','");
        if (rank == SMELT_MAX_RANK) {
            char rule[64];
            snprintf(rule, sizeof rule, "has more than %d dims", SMELT_MAX_RANK);
            return bad_arg("--shape", v, rule);
        }
        shape[rank++] = d;
        if (!*end) break;
        p = end + 1;
    }
    t->rank = rank;
    memcpy(t->shape, shape, sizeof(int64_t) * (size_t)rank);
    return 0;
}

static int parse_args(cli *c, int argc, char **argv)
{
    memset(c, 0, sizeof *c);
    smelt_options_init(&c->opt);
    c->runs = 20;
    c->atol = 1e-7; /* the ONNX backend tests' defaults */
    c->rtol = 1e-3;
    if (argc < 3) return usage();
    c->cmd = argv[1];
    c->path = argv[2];
    for (int i = 3; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--no-fuse") == 0) { c->opt.no_fuse = 1; continue; }
        if (strcmp(a, "-v") == 0) { c->opt.verbose = 1; continue; }
        if (strcmp(a, "--profile") == 0) { c->profile = 1; continue; }
        if (strcmp(a, "--no-cold") == 0) { c->no_cold = 1; continue; }
        static const char *const with_value[] = {"--device", "--place", "--threads", "--runs", "--output-dir", "--emit", "-o",
                                                 "--max-memory", "--fuse-pad", "--locals", "--input", "--shape", "--atol", "--rtol",
                                                 "--max-loop-iterations", "--pipeline"};
        bool known = false;
        for (size_t k = 0; k < sizeof with_value / sizeof with_value[0]; k++) known |= !strcmp(a, with_value[k]);
        if (!known) {
            fprintf(stderr, "smelt: unknown option '%s'\n", a);
            return usage();
        }
        if (!v) {
            fprintf(stderr, "smelt: %s needs a value\n", a);
            return usage();
        }
        i++;
        int rc = 0;
        if (strcmp(a, "--device") == 0) c->opt.devices = v, c->devices_given = true;
        else if (strcmp(a, "--place") == 0) c->opt.placement = v;
        else if (strcmp(a, "--threads") == 0) rc = parse_count(a, v, 0, 4096, &c->opt.threads);
        else if (strcmp(a, "--runs") == 0) rc = parse_count(a, v, 1, 1000000, &c->runs);
        else if (strcmp(a, "--pipeline") == 0) rc = parse_count(a, v, 1, 8, &c->pipeline);
        else if (strcmp(a, "--output-dir") == 0) c->output_dir = v;
        else if (strcmp(a, "--emit") == 0) c->emit = v;
        else if (strcmp(a, "-o") == 0) c->out_file = v;
        else if (strcmp(a, "--atol") == 0 || strcmp(a, "--rtol") == 0) {
            char *end;
            double x = strtod(v, &end);
            if (*end || end == v || !(x >= 0) || isinf(x)) rc = bad_arg(a, v, "must be a finite number >= 0");
            else *(a[2] == 'a' ? &c->atol : &c->rtol) = x;
        } else if (strcmp(a, "--max-memory") == 0) rc = parse_size(a, v, &c->opt.max_memory);
        else if (strcmp(a, "--max-loop-iterations") == 0) {
            int n = 0;
            rc = parse_count(a, v, 1, 2147483647, &n);
            c->opt.max_loop_iterations = n;
        }
        else if (strcmp(a, "--fuse-pad") == 0) {
            if (strcmp(v, "auto") == 0) c->opt.fuse_pad = 0;
            else if (strcmp(v, "never") == 0) c->opt.fuse_pad = 1;
            else if (strcmp(v, "always") == 0) c->opt.fuse_pad = 2;
            else rc = bad_arg(a, v, "must be auto, never or always");
        } else if (strcmp(a, "--locals") == 0) {
            if (strcmp(v, "reuse") == 0) c->opt.locals = SMELT_LOCALS_REUSE;
            else if (strcmp(v, "hybrid") == 0) c->opt.locals = SMELT_LOCALS_HYBRID;
            else rc = bad_arg(a, v, "must be reuse or hybrid");
        } else {
            /* --input / --shape NAME=... */
            const char *eq = strchr(v, '=');
            if (!eq || eq == v) return bad_arg(a, v, "must be NAME=...");
            if (eq - v > 255) return bad_arg(a, v, "the input name is longer than 255 bytes");
            char name[256];
            snprintf(name, sizeof name, "%.*s", (int)(eq - v), v);
            smelt_tensor *t = cli_input(c, name);
            if (!t) {
                char rule[64];
                snprintf(rule, sizeof rule, "more than %d inputs named", MAX_INPUTS);
                return bad_arg(a, v, rule);
            }
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
            } else if (t->data) {
                rc = bad_arg(a, v, "this input already has data (from --input), whose shape it would contradict");
            } else {
                rc = parse_shape(v, eq + 1, t);
            }
        }
        if (rc) return rc;
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
    /* The shape may come from --shape: count with overflow checks before allocating. */
    size_t es = smelt_dtype_size(t->dtype);
    int64_t n = 1, bytes;
    bool zero = false;
    for (int d = 0; d < t->rank; d++) zero |= t->shape[d] == 0;
    for (int d = 0; d < t->rank && !zero; d++)
        if (t->shape[d] < 0 || __builtin_mul_overflow(n, t->shape[d], &n)) n = -1;
    if (zero) n = 0;
    if (n < 0 || __builtin_mul_overflow(n, (int64_t)(es ? es : 1), &bytes)) {
        fprintf(stderr, "smelt: input '%s': its shape holds more than 2^63-1 bytes of %s\n", t->name,
                smelt_dtype_name(t->dtype));
        return 0;
    }
    t->data = (uint64_t)bytes < SIZE_MAX ? smelt_alloc((size_t)(bytes ? bytes : 1)) : NULL;
    if (!t->data) {
        fprintf(stderr, "smelt: input '%s': cannot allocate %lld bytes for its generated data\n", t->name,
                (long long)bytes);
        return 0;
    }
    for (int64_t i = 0; i < n; i++) {
        double r = rng_next();
        switch (t->dtype) {
        case SMELT_F32: ((float *)t->data)[i] = (float)(2 * r - 1); break;
        case SMELT_F64: ((double *)t->data)[i] = 2 * r - 1; break;
        case SMELT_F16: case SMELT_BF16:
            ((uint16_t *)t->data)[i] = smelt_float_to_half(t->dtype, (float)(2 * r - 1));
            break;
        case SMELT_I64: ((int64_t *)t->data)[i] = (int64_t)(r * 4); break;
        case SMELT_I32: ((int32_t *)t->data)[i] = (int32_t)(r * 4); break;
        case SMELT_BOOL: ((uint8_t *)t->data)[i] = r < 0.5; break;
        default: memset((char *)t->data + (size_t)i * es, 0, es); break;
        }
    }
    return 1;
}

/* Complete c->inputs: every model input gets data (given, or generated). */
int complete_inputs(cli *c, const smelt_model *m)
{
    for (int i = 0; i < smelt_model_input_count(m); i++) {
        smelt_value_info info;
        smelt_model_input_info(m, i, &info);
        smelt_tensor *t = cli_input(c, info.name);
        if (!t) {
            fprintf(stderr, "smelt: input '%s': more than %d inputs, or out of memory\n", info.name, MAX_INPUTS);
            return 0;
        }
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

/* Output names become file names (sanitize_name); two outputs that would
 * share a file are an error before anything is written, rather than one
 * silently overwriting the other or a renaming the user must guess. */
static int check_output_files(const smelt_program *p)
{
    int n = smelt_program_output_count(p);
    for (int i = 0; i < n; i++) {
        smelt_tensor a;
        char fa[200];
        smelt_program_output(p, i, &a);
        sanitize_name(a.name, fa, sizeof fa);
        for (int j = 0; j < i; j++) {
            smelt_tensor b;
            char fb[200];
            smelt_program_output(p, j, &b);
            sanitize_name(b.name, fb, sizeof fb);
            if (strcmp(fa, fb) != 0) continue;
            fprintf(stderr, "smelt: --output-dir: outputs '%s' and '%s' would both be written to '%s.npy'; "
                            "run without --output-dir to see both\n", b.name, a.name, fa);
            return 2;
        }
    }
    return 0;
}

static int cmd_run(cli *c)
{
    smelt_model *m;
    smelt_program *p;
    /* -v: the start-up in its parts (the compile's own stages are printed by it) */
    double t0 = now_ms();
    if (smelt_model_load_file(c->path, &m)) return fail(c->path);
    double t_load = now_ms() - t0;
    int rc = 0;
    if (!complete_inputs(c, m)) {
        smelt_model_free(m);
        return 2;
    }
    t0 = now_ms();
    if (smelt_program_compile(m, &c->opt, c->n_inputs, c->inputs, &p)) {
        rc = fail(c->path);
    } else {
        double t_compile = now_ms() - t0;
        if (!rc && c->output_dir) rc = check_output_files(p);
        t0 = now_ms();
        if (!rc && smelt_program_run(p, c->n_inputs, c->inputs)) rc = fail("run");
        if (!rc && c->opt.verbose)
            fprintf(stderr, "smelt: model load %.1f ms, compile %.1f ms, first run %.1f ms\n", t_load, t_compile,
                    now_ms() - t0);
        if (!rc && c->output_dir) mkdir(c->output_dir, 0777);
        for (int i = 0; !rc && i < smelt_program_output_count(p); i++) {
            smelt_tensor y;
            smelt_program_output(p, i, &y);
            if (c->output_dir) {
                char name[200], path[4096];
                sanitize_name(y.name, name, sizeof name);
                /* bfloat16 has no npy type: a TensorProto file instead */
                snprintf(path, sizeof path, "%s/%s.%s", c->output_dir, name, y.dtype == SMELT_BF16 ? "pb" : "npy");
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
                    else if (y.dtype == SMELT_F16 || y.dtype == SMELT_BF16)
                        printf(" %g", smelt_half_to_float(y.dtype, ((uint16_t *)y.data)[j]));
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
    /* --emit STAGE stops after that stage: no device, no system compiler.
     * Source for a target needs no device: --emit opencl / cuda lowers for it.
     * regions are shown with the boxes their kernels touch, so they lower too. */
    static const struct {
        const char *what;
        smelt_stage stop;
    } stops[] = {{"ir", SMELT_STAGE_IR},     {"dot", SMELT_STAGE_REGIONS},    {"regions", SMELT_STAGE_KIR},
                 {"kir", SMELT_STAGE_KIR},   {"plan", SMELT_STAGE_PLAN},      {"c", SMELT_STAGE_SOURCE},
                 {"opencl", SMELT_STAGE_SOURCE}, {"cuda", SMELT_STAGE_SOURCE}};
    for (size_t i = 0; i < sizeof stops / sizeof stops[0]; i++)
        if (strcmp(what, stops[i].what) == 0) c->opt.stop_after = stops[i].stop;
    bool source = c->opt.stop_after == SMELT_STAGE_SOURCE;
    if (source && !c->devices_given) c->opt.devices = !strcmp(what, "c") ? "cpu" : what;
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
    if (rc) {
        cli_free(&c);
        return rc;
    }
    if (strcmp(c.cmd, "run") == 0) rc = cmd_run(&c);
    else if (strcmp(c.cmd, "check") == 0) rc = cmd_check(&c);
    else if (strcmp(c.cmd, "bench") == 0) rc = cmd_bench(&c);
    else if (strcmp(c.cmd, "compile") == 0 && c.emit) rc = cmd_dump(&c, c.emit);
    else if (strcmp(c.cmd, "compile") == 0) rc = (fprintf(stderr, "smelt: compile needs --emit STAGE\n"), usage());
    else if (strcmp(c.cmd, "info") == 0) rc = cmd_dump(&c, "info");
    else rc = (fprintf(stderr, "smelt: unknown command '%s'\n", c.cmd), usage());
    cli_free(&c);
    return rc;
}
