/* The program cache (api/program_cache.c): a hit skips the pipeline and the
 * compiler and computes what a full compile computes, on other inputs too;
 * every kind of stale or damaged entry is a miss that compiles again. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuse_cases.h"
#include "test.h"

#define ROWS 6
#define K1 96
#define N1 80
#define N2 40

/* x[6,96] @ W1[96,80] + b -> Relu -> @ W2[80,40]: both weights packed into
 * panels by the compile (constants of the entry's own, not the model's). */
static smelt_model *mlp_model(float w1_bump)
{
    ir_graph *g = ir_graph_new();
    int x = input(g, "x", shp(2, ROWS, K1));
    int w1 = constant(g, "w1", shp(2, K1, N1), 0.25f, 0.01f), b = constant(g, "b", shp(1, N1), 0.5f, 0.1f);
    int w2 = constant(g, "w2", shp(2, N1, N2), 0.2f, -0.02f);
    ((float *)g->tensors[w1].data)[K1 * N1 / 2 + 3] += w1_bump;
    int h = op1(g, "h", OP_Relu, op2(g, "a", OP_Add, op2(g, "mm1", OP_MatMul, x, w1), b));
    int y = op2(g, "y", OP_MatMul, h, w2);
    ir_graph_set_io(g, 1, &x, 1, &y);
    smelt_model *m = NULL;
    CHECK_EQ_INT(program_model_wrap(g, &m), SMELT_OK);
    CHECK(m && m->digest_ok);
    return m;
}

static void fill(float *v, int seed)
{
    for (int i = 0; i < ROWS * K1; i++) v[i] = (float)((i * 31 + seed * 17) % 29 - 14) / 9.0f;
}

static smelt_program *compile_with(const smelt_model *m, int threads, bool use_cache)
{
    smelt_options opt;
    smelt_options_init(&opt);
    opt.threads = threads;
    smelt_program *p = NULL;
    smelt_status st = program_compile(m, &opt, 0, NULL, use_cache, &p);
    if (st) fprintf(stderr, "  compile: %s\n", smelt_last_error());
    CHECK_EQ_INT(st, SMELT_OK);
    return p;
}

/* y of p on input `seed`, into out[ROWS * N2]. */
static void run(smelt_program *p, int seed, float *out)
{
    float x[ROWS * K1];
    fill(x, seed);
    smelt_tensor in = {.name = "x", .dtype = SMELT_F32, .rank = 2, .shape = {ROWS, K1}, .data = x};
    memset(out, 0, sizeof(float) * ROWS * N2);
    if (!p) return;
    CHECK_EQ_INT(smelt_program_run(p, 1, &in), SMELT_OK);
    smelt_tensor y;
    CHECK_EQ_INT(smelt_program_output(p, 0, &y), SMELT_OK);
    CHECK(y.rank == 2 && y.shape[0] == ROWS && y.shape[1] == N2);
    if (y.data) memcpy(out, y.data, sizeof(float) * ROWS * N2);
}

/* x @ W1 + b, Relu, @ W2 in double, from the model's own constants. */
static void reference(const smelt_model *m, int seed, float *out)
{
    const ir_graph *g = m->g;
    const float *w1 = g->tensors[1].data, *b = g->tensors[2].data, *w2 = g->tensors[3].data;
    float x[ROWS * K1];
    fill(x, seed);
    for (int r = 0; r < ROWS; r++) {
        double h[N1];
        for (int j = 0; j < N1; j++) {
            double s = b[j];
            for (int k = 0; k < K1; k++) s += (double)x[r * K1 + k] * w1[k * N1 + j];
            h[j] = s > 0 ? s : 0;
        }
        for (int j = 0; j < N2; j++) {
            double s = 0;
            for (int k = 0; k < N1; k++) s += h[k] * w2[k * N2 + j];
            out[r * N2 + j] = (float)s;
        }
    }
}

static void check_close(const float *a, const float *b)
{
    int bad = 0;
    for (int i = 0; i < ROWS * N2; i++) bad += !(fabsf(a[i] - b[i]) <= 1e-4f * (1 + fabsf(b[i])));
    CHECK_EQ_INT(bad, 0);
}

static void check_same(const float *a, const float *b) { CHECK(memcmp(a, b, sizeof(float) * ROWS * N2) == 0); }

typedef struct cache_dir {
    char dir[64];
} cache_dir;

static void dir_begin(cache_dir *c)
{
    snprintf(c->dir, sizeof c->dir, "/tmp/smelt-test-prog-XXXXXX");
    CHECK(mkdtemp(c->dir) != NULL);
    setenv("SMELT_CACHE_DIR", c->dir, 1);
}

static void dir_end(cache_dir *c)
{
    unsetenv("SMELT_CACHE_DIR");
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", c->dir);
    CHECK(system(cmd) == 0);
}

/* The path of the one file in dir whose name ends in suffix. */
static bool find_entry(const char *dir, const char *suffix, char *path, size_t cap)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        size_t len = strlen(e->d_name), sl = strlen(suffix);
        if (len > sl && !strcmp(e->d_name + len - sl, suffix)) {
            snprintf(path, cap, "%s/%s", dir, e->d_name);
            n++;
        }
    }
    if (d) closedir(d);
    return n == 1;
}

static long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static void flip_byte(const char *path, long at)
{
    FILE *f = fopen(path, "r+b");
    CHECK(f != NULL);
    if (!f) return;
    fseek(f, at, SEEK_SET);
    int ch = fgetc(f);
    fseek(f, at, SEEK_SET);
    fputc(ch ^ 0x40, f);
    fclose(f);
}

/* Compiles m (2 threads), says whether the program came from the cache, and
 * checks its outputs on two inputs against the reference. */
static bool compile_and_check(const smelt_model *m)
{
    smelt_program *p = compile_with(m, 2, true);
    bool hit = p && p->cached;
    float got[ROWS * N2], want[ROWS * N2];
    for (int seed = 1; seed <= 2; seed++) {
        run(p, seed, got);
        reference(m, seed, want);
        check_close(got, want);
    }
    smelt_program_free(p);
    return hit;
}

TEST(program_cache_hit_skips_the_pipeline_and_the_compiler)
{
    cache_dir c;
    dir_begin(&c);
    smelt_model *m = mlp_model(0);
    smelt_program *cold = compile_with(m, 2, true), *hit = compile_with(m, 2, true), *plain = compile_with(m, 2, false);
    CHECK(cold && !cold->cached && !cold->stats.cc_cached);
    char entry[256];
    CHECK(find_entry(c.dir, ".prog", entry, sizeof entry));
    /* no regions, no kernels' bodies, no source: nothing of the pipeline ran */
    CHECK(hit && hit->cached && hit->stats.cc_cached && !hit->cls[0].source && !hit->fp.regions);
    CHECK(hit && hit->lp.n_kernels == cold->lp.n_kernels && hit->lp.kernels[0]->n_bufs == 0);
    smelt_program_stats a, b;
    CHECK(smelt_program_get_stats(cold, &a) == SMELT_OK && smelt_program_get_stats(hit, &b) == SMELT_OK);
    CHECK(a.nodes == b.nodes && a.regions == b.regions && a.kernels == b.kernels && a.bytes_moved == b.bytes_moved &&
          a.arena_bytes == b.arena_bytes && a.weight_bytes == b.weight_bytes);
    float y_cold[ROWS * N2], y_hit[ROWS * N2], y_plain[ROWS * N2], want[ROWS * N2];
    for (int seed = 1; seed <= 3; seed++) { /* inputs the entry was never written with */
        run(cold, seed, y_cold);
        run(hit, seed, y_hit);
        run(plain, seed, y_plain);
        reference(m, seed, want);
        check_same(y_hit, y_cold);
        check_same(y_hit, y_plain);
        check_close(y_hit, want);
    }
    /* dumps of a loaded program: the pipeline runs again to have something to show */
    char *text = NULL;
    CHECK_EQ_INT(smelt_program_dump(hit, "regions", &text), SMELT_OK);
    CHECK_STR_HAS(text, "mm1");
    smelt_free(text);
    text = NULL;
    CHECK_EQ_INT(smelt_program_dump(hit, "c", &text), SMELT_OK);
    CHECK_STR_HAS(text, "smelt_k0");
    smelt_free(text);
    smelt_program_free(cold);
    smelt_program_free(hit);
    smelt_program_free(plain);
    smelt_model_free(m);
    dir_end(&c);
}

TEST(program_cache_damaged_entries_compile_again)
{
    cache_dir c;
    dir_begin(&c);
    smelt_model *m = mlp_model(0);
    CHECK(!compile_and_check(m));
    CHECK(compile_and_check(m));
    char entry[256];
    CHECK(find_entry(c.dir, ".prog", entry, sizeof entry));
    long size = file_size(entry);
    CHECK(size > 4 * K1 * N1); /* the packed panels are in it */
    /* a byte of the constants (packed weights: the bulk of the file), of the
     * description, of the header's version: each a miss, then rewritten */
    long at[] = {((size * 3 / 4) & ~3L) + 3, 200, 8}; /* a float's exponent byte */
    for (int i = 0; i < 3; i++) {
        flip_byte(entry, at[i]);
        CHECK(!compile_and_check(m));
        CHECK(compile_and_check(m));
    }
    CHECK(truncate(entry, size / 2) == 0);
    CHECK(!compile_and_check(m));
    CHECK_EQ_INT(file_size(entry), size);
    CHECK(truncate(entry, 0) == 0);
    CHECK(!compile_and_check(m));
    /* the compiled object damaged, then gone: the entry alone cannot run, so compile */
    char so[256];
    CHECK(find_entry(c.dir, ".so", so, sizeof so));
    CHECK(compile_and_check(m));
    flip_byte(so, file_size(so) / 2);
    CHECK(!compile_and_check(m));
    CHECK(compile_and_check(m));
    CHECK(unlink(so) == 0);
    CHECK(!compile_and_check(m));
    CHECK(compile_and_check(m));
    smelt_model_free(m);
    dir_end(&c);
}

TEST(program_cache_stale_entries_are_not_used)
{
    cache_dir c;
    dir_begin(&c);
    smelt_model *m = mlp_model(0), *other = mlp_model(0.5f);
    CHECK(!compile_and_check(m));
    CHECK(compile_and_check(m));
    /* one weight changed: another model */
    CHECK(!compile_and_check(other));
    CHECK(compile_and_check(other));
    CHECK(compile_and_check(m));
    /* other options: another program */
    smelt_program *p = compile_with(m, 1, true);
    CHECK(p && !p->cached);
    smelt_program_free(p);
    p = compile_with(m, 1, true);
    CHECK(p && p->cached);
    smelt_program_free(p);
    /* another device (narrower vectors), and a knob of the environment */
    /* the caller's width (SMELT_VECTOR_WIDTH=8 runs of the suite) put back, so the entry cached
     * above is the one the last check finds */
    const char *w = getenv("SMELT_VECTOR_WIDTH");
    char width[16] = "";
    if (w) snprintf(width, sizeof width, "%s", w);
    setenv("SMELT_VECTOR_WIDTH", "4", 1);
    CHECK(!compile_and_check(m));
    CHECK(compile_and_check(m));
    if (w) setenv("SMELT_VECTOR_WIDTH", width, 1);
    else unsetenv("SMELT_VECTOR_WIDTH");
    setenv("SMELT_NO_WINOGRAD", "1", 1);
    CHECK(!compile_and_check(m));
    unsetenv("SMELT_NO_WINOGRAD");
    CHECK(compile_and_check(m));
    /* where the cache is and how many compilers run change no program */
    setenv("SMELT_CC_JOBS", "1", 1);
    CHECK(compile_and_check(m));
    unsetenv("SMELT_CC_JOBS");
    smelt_model_free(m);
    smelt_model_free(other);
    dir_end(&c);
}
