/* `smelt check DIR`: a model in the ONNX backend-test layout, every data set
 * run and compared with its reference outputs (numpy allclose rules). */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* dir/name into buf; false when it does not fit. */
bool path_join(char *buf, size_t cap, const char *dir, const char *name)
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

/* Names in numeric order where they differ in a number: input_2.pb before
 * input_10.pb, as the backend-test layout numbers a model's inputs. */
static int cmp_str(const void *a, const void *b)
{
    const char *x = *(char *const *)a, *y = *(char *const *)b;
    while (*x && *x == *y && !(*x >= '0' && *x <= '9')) x++, y++;
    if (*x >= '0' && *x <= '9' && *y >= '0' && *y <= '9') {
        unsigned long long i = strtoull(x, NULL, 10), j = strtoull(y, NULL, 10);
        if (i != j) return i < j ? -1 : 1;
    }
    return strcmp(x, y);
}

/* Sorted names in dir starting with prefix; returns count (<= cap). */
int list_dir(const char *dir, const char *prefix, char **names, int cap)
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
    case SMELT_F16: case SMELT_BF16: return smelt_half_to_float(t->dtype, ((const uint16_t *)t->data)[i]);
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

/* numpy's assert_allclose(actual, expected, rtol, atol) for float outputs (the
 * ONNX backend tests use rtol=1e-3, atol=1e-7), exact for the others; NaNs must
 * match NaNs, infinities must match exactly. */
static int compare(const cli *c, const smelt_tensor *got, const smelt_tensor *want, double *max_abs, double *max_rel,
                   char *why, size_t cap)
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
        bool real = want->dtype == SMELT_F32 || want->dtype == SMELT_F64 || want->dtype == SMELT_F16 ||
                    want->dtype == SMELT_BF16;
        double tol = real ? c->atol + c->rtol * fabs(b) : 0;
        if (d > tol) {
            if (ok) snprintf(why, cap, "element %lld: %.9g, expected %.9g", (long long)i, a, b);
            ok = 0;
        }
    }
    return ok;
}

/* One data set: its inputs, a run, every output against its reference. The
 * program compiled for an earlier set is run again as long as it accepts the
 * inputs; a run that refuses them (other shapes, or other values of an input
 * that decides shapes) compiles a program for this set, which later sets reuse. */
static int check_set(cli *c, const smelt_model *m, const char *set_dir, smelt_program **pp, int *compiles)
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
    smelt_status st = SMELT_ERR_SHAPE;
    if (!rc && *pp) st = smelt_program_run(*pp, n_loaded, in);
    if (!rc && st == SMELT_ERR_SHAPE) {
        smelt_program_free(*pp);
        *pp = NULL;
        if (smelt_program_compile(m, &c->opt, n_loaded, in, pp)) {
            printf("%s: ERROR %s\n", set_dir, smelt_last_error());
            rc = 2;
        } else {
            ++*compiles;
            st = smelt_program_run(*pp, n_loaded, in);
        }
    }
    if (!rc && st) {
        printf("%s: ERROR %s\n", set_dir, smelt_last_error());
        rc = 2;
    }
    smelt_program *p = *pp;
    /* --pipeline N: the set submitted N times more, all held at once, each run's outputs checked too */
    smelt_ticket tk[8] = {0};
    int n_tk = rc ? 0 : c->pipeline;
    if (n_tk > 0 && smelt_program_set_pipeline(p, n_tk)) rc = fail("pipeline");
    for (int k = 0; k < n_tk && !rc; k++)
        if (smelt_program_submit(p, n_loaded, in, &tk[k])) rc = fail("submit");
    for (int k = 0; k < n_tk && !rc; k++)
        if (smelt_program_wait(p, tk[k])) {
            printf("%s: ERROR pipelined run %d: %s\n", set_dir, k, smelt_last_error());
            rc = 2;
        }
    int n_out = rc ? 0 : list_dir(set_dir, "output_", names, 256);
    if (!rc && n_out != smelt_program_output_count(p)) {
        printf("%s: FAIL the model has %d outputs, the data set %d\n", set_dir, smelt_program_output_count(p), n_out);
        rc = 1;
    }
    double worst_abs = 0, worst_rel = 0;
    for (int i = 0; i < n_out; i++) {
        smelt_tensor want, got;
        (void)path_join(path, sizeof path, set_dir, names[i]); /* a truncated path fails to open, with its name in the error */
        if (!rc) {
            if (smelt_tensor_load(path, &want)) {
                rc = fail(path);
            } else {
                double max_abs = 0, max_rel = 0;
                smelt_program_output(p, i, &got);
                int ok = compare(c, &got, &want, &max_abs, &max_rel, why, sizeof why);
                for (int k = 0; k < n_tk && ok; k++) {
                    smelt_tensor piped;
                    if (smelt_program_run_output(p, tk[k], i, &piped)) ok = 0, snprintf(why, sizeof why, "%s", smelt_last_error());
                    else ok = compare(c, &piped, &want, &max_abs, &max_rel, why, sizeof why);
                }
                printf("%s: output %d ('%s'): max_abs_err=%.3g max_rel_err=%.3g\n", set_dir, i, got.name, max_abs, max_rel);
                if (!ok) {
                    printf("%s: FAIL output %d ('%s'): %s (atol %g, rtol %g)\n", set_dir, i, got.name, why, c->atol, c->rtol);
                    rc = 1;
                }
                if (max_abs > worst_abs) worst_abs = max_abs;
                if (max_rel > worst_rel) worst_rel = max_rel;
                smelt_tensor_free(&want);
            }
        }
        free(names[i]);
    }
    for (int k = 0; k < n_tk; k++)
        if (tk[k]) smelt_program_release(p, tk[k]);
    if (!rc) printf("%s: PASS max_abs_err=%.3g max_rel_err=%.3g\n", set_dir, worst_abs, worst_rel);
    for (int i = 0; i < n_loaded; i++) smelt_tensor_free(&in[i]);
    return rc;
}

int cmd_check(cli *c)
{
    char model[4096];
    snprintf(model, sizeof model, "%s/model.onnx", c->path);
    smelt_model *m;
    if (smelt_model_load_file(model, &m)) {
        printf("%s: ERROR %s\n", c->path, smelt_last_error());
        return 2;
    }
    char *sets[256];
    int n = list_dir(c->path, "test_data_set_", sets, 256), worst = 0, compiles = 0;
    if (n == 0) {
        printf("%s: ERROR no test_data_set_* directories\n", c->path);
        worst = 2;
    }
    smelt_program *p = NULL;
    for (int i = 0; i < n; i++) {
        char dir[4096];
        (void)path_join(dir, sizeof dir, c->path, sets[i]); /* a truncated path fails to open, with its name in the error */
        int rc = check_set(c, m, dir, &p, &compiles);
        if (rc > worst) worst = rc;
        free(sets[i]);
    }
    if (n > 0) printf("%s: %d data sets, %d compiled programs\n", c->path, n, compiles);
    smelt_program_free(p);
    smelt_model_free(m);
    return worst;
}


int load_dir_inputs(cli *c, const char *dir, const smelt_model *m)
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
