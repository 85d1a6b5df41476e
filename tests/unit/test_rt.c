/* The CPU runtime: compile cache, compiler errors (the thread pool: test_pool.c). */
#include <dirent.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <sys/mman.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/sha256.h"
#include "rt/device.h"
#include "rt/cc_units.h"
#include "rt/rt.h"
#include "test.h"

static const char kernel_src[] =
    "#include <stdint.h>\n"
    "void smelt_k0(int64_t wg, void *const *bufs) { ((int64_t *)bufs[0])[wg] = wg * 2; }\n";

/* A fresh cache directory for one test, with SMELT_CACHE_DIR pointing at it;
 * cache_end() removes it and restores the environment. */
typedef struct test_cache {
    char dir[256];
} test_cache;

static void cache_begin(test_cache *c)
{
    snprintf(c->dir, sizeof c->dir, "/tmp/smelt-rt-test-XXXXXX");
    CHECK(mkdtemp(c->dir) != NULL);
    setenv("SMELT_CACHE_DIR", c->dir, 1);
}

static int count_files(const char *dir, const char *suffix)
{
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name), sl = strlen(suffix);
        if (e->d_name[0] != '.' && len >= sl && !strcmp(e->d_name + len - sl, suffix)) n++;
    }
    closedir(d);
    return n;
}

static void cache_end(test_cache *c)
{
    DIR *d = opendir(c->dir);
    if (d) {
        char path[512];
        for (struct dirent *e; (e = readdir(d));) {
            if (e->d_name[0] == '.') continue;
            snprintf(path, sizeof path, "%s/%s", c->dir, e->d_name);
            unlink(path);
        }
        closedir(d);
    }
    rmdir(c->dir);
    unsetenv("SMELT_CACHE_DIR");
    unsetenv("SMELT_CC");
}

/* A compiler wrapper that logs each call to <dir>/calls; with reject_native it
 * fails like a compiler that does not know -march=native. Used through
 * SMELT_CC="sh <script>", which also exercises splitting SMELT_CC on spaces. */
static void write_wrapper(const test_cache *c, int reject_native)
{
    char path[512];
    snprintf(path, sizeof path, "%s/wrap.sh", c->dir);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) return;
    fprintf(f, "echo x >> '%s/calls'\n", c->dir);
    if (reject_native)
        fprintf(f, "case \"$*\" in *-march=native*) "
                   "echo \"error: unsupported option '-march=native'\" >&2; exit 1;; esac\n");
    fprintf(f, "exec cc \"$@\"\n");
    fclose(f);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "sh %s", path);
    setenv("SMELT_CC", cmd, 1);
}

static int count_calls(const test_cache *c)
{
    char path[512];
    snprintf(path, sizeof path, "%s/calls", c->dir);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    int n = 0;
    for (int ch; (ch = fgetc(f)) != EOF;) n += ch == '\n';
    fclose(f);
    return n;
}

static int64_t out[1001];

static void run_and_check(rt_kernel_fn fn, rt_pool *p, int64_t n_wg)
{
    for (int i = 0; i < 1001; i++) out[i] = -1;
    void *bufs[1] = {out};
    rt_pool_run(p, fn, n_wg, bufs);
    int bad = 0;
    for (int64_t i = 0; i < n_wg; i++) bad += out[i] != i * 2;
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(out[n_wg], -1);
}

TEST(rt_cc_compiles_runs_and_caches)
{
    test_cache c;
    cache_begin(&c);
    write_wrapper(&c, 0);

    rt_so *so = NULL;
    bool cached = true;
    CHECK_EQ_INT(rt_cc_load(kernel_src, &so, &cached), SMELT_OK);
    CHECK(!cached);
    int calls = count_calls(&c);
    CHECK_EQ_INT(calls, 2); /* --version, then the compile */
    CHECK_EQ_INT(count_files(c.dir, ".so"), 1);
    CHECK_EQ_INT(count_files(c.dir, ".c"), 1);
    rt_kernel_fn fn = (rt_kernel_fn)rt_so_sym(so, "smelt_k0");
    CHECK(fn != NULL);
    CHECK(rt_so_sym(so, "smelt_k1") == NULL);

    static const int threads[] = {1, 2, 4};
    static const int64_t sizes[] = {1, 3, 1000};
    for (int t = 0; fn && t < 3; t++) {
        rt_pool *p = rt_pool_new(threads[t]);
        CHECK(p != NULL);
        CHECK_EQ_INT(rt_pool_threads(p), threads[t]);
        for (int s = 0; s < 3; s++) run_and_check(fn, p, sizes[s]);
        for (int r = 0; r < 50; r++) run_and_check(fn, p, 3 + r % 7);
        rt_pool_free(p);
    }

    rt_so *again = NULL;
    CHECK_EQ_INT(rt_cc_load(kernel_src, &again, &cached), SMELT_OK);
    CHECK(cached);
    CHECK_EQ_INT(count_calls(&c), calls);
    CHECK(rt_so_sym(again, "smelt_k0") == (void *)fn);
    rt_so_close(again);
    rt_so_close(so);
    cache_end(&c);
}

TEST(rt_cc_reports_syntax_errors)
{
    test_cache c;
    cache_begin(&c);
    rt_so *so = (rt_so *)&c;
    CHECK_EQ_INT(rt_cc_load("void smelt_k0(int64_t wg { oops }\n", &so, NULL), SMELT_ERR_COMPILE);
    CHECK(so == NULL);
    CHECK_STR_HAS(smelt_last_error(), "error");
    CHECK_STR_HAS(smelt_last_error(), c.dir); /* the kept source's path */
    CHECK_EQ_INT(count_files(c.dir, ".c"), 1);
    CHECK_EQ_INT(count_files(c.dir, ".so"), 0);
    cache_end(&c);
}

TEST(rt_cc_missing_compiler_is_an_error)
{
    test_cache c;
    cache_begin(&c);
    setenv("SMELT_CC", "/nonexistent/smelt-no-such-cc", 1);
    rt_so *so = NULL;
    CHECK_EQ_INT(rt_cc_load(kernel_src, &so, NULL), SMELT_ERR_DEVICE);
    CHECK(so == NULL);
    CHECK_STR_HAS(smelt_last_error(), "/nonexistent/smelt-no-such-cc");
    CHECK_STR_HAS(smelt_last_error(), "SMELT_CC");
    cache_end(&c);
}

TEST(rt_cc_retries_without_march_native)
{
    test_cache c;
    cache_begin(&c);
    write_wrapper(&c, 1);
    rt_so *so = NULL;
    CHECK_EQ_INT(rt_cc_load(kernel_src, &so, NULL), SMELT_OK);
    CHECK(so && rt_so_sym(so, "smelt_k0"));
    rt_so_close(so);
    CHECK_EQ_INT(count_calls(&c), 3); /* --version, rejected, accepted */

    /* The compiler is now known to reject it: one call per new source. */
    CHECK_EQ_INT(rt_cc_load("int smelt_other;\n", &so, NULL), SMELT_OK);
    rt_so_close(so);
    CHECK_EQ_INT(count_calls(&c), 4);
    cache_end(&c);
}

/* A source of n_k kernels behind a prelude helper they all call, padded with
 * comments past the size rt/cc.c splits at; bad_k >= 0 breaks that kernel. */
static char *split_source(int n_k, int bad_k)
{
    size_t cap = 1 << 20, len = 0;
    char *s = malloc(cap);
    if (!s) return NULL;
    len += (size_t)snprintf(s + len, cap - len, "/* generated */\n#include <stdint.h>\n"
                                                "static inline int64_t twice(int64_t x) { return 2 * x; }\n");
    for (int k = 0; k < n_k; k++) {
        len += (size_t)snprintf(s + len, cap - len, "\n/* k%d: test kernel */\n/*", k);
        for (int i = 0; i < 9000 + 500 * k; i++) s[len++] = '.';
        len += (size_t)snprintf(s + len, cap - len, "*/\nvoid smelt_k%d(int64_t wg, void *const *bufs)\n"
                                                    "{ ((int64_t *)bufs[0])[wg] = twice(wg) + %d%s; }\n",
                                k, k, k == bad_k ? " oops" : "");
    }
    return s;
}

/* Kernel smelt_k<k> of so run as one workgroup (index 3) over a 4-element
 * int64 buffer, zeroed first: the element it wrote at 3 (0 when missing). */
static int64_t call_kernel(rt_so *so, int k)
{
    char name[32];
    snprintf(name, sizeof name, "smelt_k%d", k);
    rt_kernel_fn fn = (rt_kernel_fn)rt_so_sym(so, name);
    CHECK(fn != NULL);
    int64_t v[4] = {0};
    void *bufs[1] = {v};
    if (fn) fn(3, bufs);
    return v[3];
}

TEST(rt_cc_compiles_large_sources_in_units_at_once)
{
    test_cache c;
    cache_begin(&c);
    write_wrapper(&c, 0);
    setenv("SMELT_CC_JOBS", "3", 1);
    char *src = split_source(8, -1);
    CHECK(src != NULL && strlen(src) > 64 * 1024);
    rt_so *so = NULL;
    CHECK_EQ_INT(rt_cc_load(src, &so, NULL), SMELT_OK);
    CHECK_EQ_INT(count_calls(&c), 5); /* --version, three units, the link */
    CHECK_EQ_INT(count_files(c.dir, ".so"), 1);
    CHECK_EQ_INT(count_files(c.dir, ".c"), 1); /* the units are gone, the whole source kept */
    CHECK_EQ_INT(count_files(c.dir, ".o"), 0);
    for (int k = 0; so && k < 8; k++) CHECK_EQ_INT(call_kernel(so, k), 6 + k);
    rt_so_close(so);
    free(src);

    /* One unit's error: the whole source is compiled once more, so the message
     * names the kept file and its lines. */
    src = split_source(8, 5);
    so = NULL;
    CHECK_EQ_INT(rt_cc_load(src, &so, NULL), SMELT_ERR_COMPILE);
    CHECK(so == NULL);
    CHECK_STR_HAS(smelt_last_error(), "oops");
    CHECK_STR_HAS(smelt_last_error(), c.dir);
    CHECK_EQ_INT(count_files(c.dir, ".o"), 0);
    free(src);

    /* SMELT_CC_JOBS=1: one compile of the whole source. */
    setenv("SMELT_CC_JOBS", "1", 1);
    src = split_source(7, -1);
    int before = count_calls(&c);
    CHECK_EQ_INT(rt_cc_load(src, &so, NULL), SMELT_OK);
    CHECK_EQ_INT(count_calls(&c), before + 1);
    CHECK(so && rt_so_sym(so, "smelt_k6"));
    rt_so_close(so);
    free(src);
    unsetenv("SMELT_CC_JOBS");
    cache_end(&c);
}

/* Kernels 0..11 of three bodies (0 mod 3: "+ 7", 1 mod 3: "+ 9", 2 mod 3: one
 * that reads its own address), padded past the split size. */
static char *dup_source(void)
{
    size_t cap = 1 << 20, len = 0;
    char *s = malloc(cap);
    if (!s) return NULL;
    len += (size_t)snprintf(s + len, cap - len, "/* generated */\n#include <stdint.h>\n");
    for (int k = 0; k < 12; k++) {
        len += (size_t)snprintf(s + len, cap - len, "\n/* k%d: test kernel %d */\n/*", k, k);
        for (int i = 0; i < 9000; i++) s[len++] = '.';
        if (k % 3 == 2)
            len += (size_t)snprintf(s + len, cap - len, "*/\nvoid smelt_k%d(int64_t wg, void *const *bufs)\n"
                                                        "{ ((int64_t *)bufs[0])[wg] = (&smelt_k%d != 0) ? 5 : 0; }\n", k, k);
        else
            len += (size_t)snprintf(s + len, cap - len, "*/\nvoid smelt_k%d(int64_t wg, void *const *bufs)\n"
                                                        "{ ((int64_t *)bufs[0])[wg] = wg + %d; }\n", k, k % 3 ? 9 : 7);
    }
    return s;
}

TEST(rt_cc_compiles_identical_kernels_once)
{
    char *src = dup_source();
    CHECK(src != NULL && strlen(src) > 64 * 1024);
    if (!src) return;
    size_t starts[16];
    const char *p = src;
    int n = 0;
    for (; (p = strstr(p, "\n/* k")); p++) starts[n++] = (size_t)(p - src) + 1;
    CHECK_EQ_INT(n, 12);
    cc_units *plan = NULL;
    CHECK_EQ_INT(cc_units_plan(src, starts, n, 2, &plan), SMELT_OK);
    CHECK(plan && cc_units_distinct(plan) == 3);
    char *buf = plan ? malloc(cc_units_max_bytes(plan)) : NULL;
    size_t total = 0;
    for (int j = 0; buf && j < 2; j++) {
        total += cc_units_text(plan, j, buf);
        CHECK(strstr(buf, "smelt_k11(wg, bufs)") == NULL || strstr(buf, "void smelt_k2(int64_t wg") != NULL);
    }
    CHECK(total < strlen(src) / 2); /* three bodies of twelve */
    free(buf);
    cc_units_free(plan);

    test_cache c;
    cache_begin(&c);
    setenv("SMELT_CC_JOBS", "2", 1);
    rt_so *so = NULL;
    CHECK_EQ_INT(rt_cc_load(src, &so, NULL), SMELT_OK);
    for (int k = 0; so && k < 12; k++) CHECK_EQ_INT(call_kernel(so, k), k % 3 == 2 ? 5 : 3 + (k % 3 ? 9 : 7));
    rt_so_close(so);
    unsetenv("SMELT_CC_JOBS");
    free(src);
    cache_end(&c);
}

/* Whole entries: written atomically 0600, mapped back, and the oldest of a
 * suffix deleted past a total size (never the one kept). */
TEST(rt_cache_entries_are_put_mapped_and_pruned_oldest_first)
{
    test_cache c;
    cache_begin(&c);
    rt_cache rc;
    CHECK_EQ_INT(rt_cache_open(&rc), SMELT_OK);
    char data[1000];
    memset(data, 'x', sizeof data);
    struct iovec parts[2] = {{data, 600}, {data, 400}};
    const char *names[4] = {"a.prog", "b.prog", "c.prog", "d.other"};
    for (int i = 0; i < 4; i++) {
        CHECK_EQ_INT(rt_cache_put(&rc, names[i], parts, 2), SMELT_OK);
        char path[512];
        snprintf(path, sizeof path, "%s/%s", c.dir, names[i]);
        struct stat st;
        CHECK(stat(path, &st) == 0 && st.st_size == 1000 && (st.st_mode & 0777) == 0600);
        struct timespec t[2] = {{1000 + 10 * i, 0}, {1000 + 10 * i, 0}}; /* a older than b older than c */
        CHECK(utimensat(AT_FDCWD, path, t, 0) == 0);
    }
    size_t size = 0;
    void *m = rt_cache_map(&rc, "b.prog", &size);
    CHECK(m != NULL && size == 1000 && ((const char *)m)[999] == 'x');
    if (m) munmap(m, size);
    CHECK(rt_cache_map(&rc, "absent.prog", &size) == NULL);
    rt_cache_prune(&rc, ".prog", 2500, "a.prog"); /* 3000 bytes: one must go, the oldest but a */
    CHECK(rt_cache_map(&rc, "b.prog", &size) == NULL);
    m = rt_cache_map(&rc, "a.prog", &size);
    CHECK(m != NULL);
    if (m) munmap(m, size);
    CHECK_EQ_INT(count_files(c.dir, ".prog"), 2);
    rt_cache_prune(&rc, ".prog", 0, NULL);
    CHECK_EQ_INT(count_files(c.dir, ".prog"), 0);
    CHECK_EQ_INT(count_files(c.dir, ".other"), 1); /* another suffix is not counted or deleted */
    rt_cache_close(&rc);
    cache_end(&c);
}

TEST(rt_cache_dir_follows_the_environment)
{
    char buf[256];
    const char *home = getenv("HOME"), *xdg = getenv("XDG_CACHE_HOME");
    char *saved_home = home ? strdup(home) : NULL, *saved_xdg = xdg ? strdup(xdg) : NULL;
    setenv("SMELT_CACHE_DIR", "/a/b", 1);
    CHECK_STR_HAS(rt_cache_dir(buf, sizeof buf), "/a/b");
    unsetenv("SMELT_CACHE_DIR");
    setenv("XDG_CACHE_HOME", "/x", 1);
    CHECK(!strcmp(rt_cache_dir(buf, sizeof buf), "/x/smelt"));
    unsetenv("XDG_CACHE_HOME");
    setenv("HOME", "/h", 1);
    CHECK(!strcmp(rt_cache_dir(buf, sizeof buf), "/h/.cache/smelt"));
    CHECK(rt_cache_dir(buf, 4) == NULL);
    if (saved_home) setenv("HOME", saved_home, 1);
    if (saved_xdg) setenv("XDG_CACHE_HOME", saved_xdg, 1);
    free(saved_home);
    free(saved_xdg);
}

/* Two threads compiling the same new source into one cache both succeed and
 * leave exactly one object and no temporaries behind. */
static void *load_in_thread(void *arg)
{
    rt_so *so = NULL;
    *(smelt_status *)arg = rt_cc_load("int smelt_race = 7;\n", &so, NULL);
    if (so && *(int *)rt_so_sym(so, "smelt_race") != 7) *(smelt_status *)arg = SMELT_ERR_INTERNAL;
    rt_so_close(so);
    return NULL;
}

TEST(rt_cc_concurrent_loads_share_the_cache)
{
    test_cache c;
    cache_begin(&c);
    pthread_t th[2];
    smelt_status st[2] = {SMELT_ERR_INTERNAL, SMELT_ERR_INTERNAL};
    for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, load_in_thread, &st[i]);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    CHECK_EQ_INT(st[0], SMELT_OK);
    CHECK_EQ_INT(st[1], SMELT_OK);
    CHECK_EQ_INT(count_files(c.dir, ".so"), 1);
    CHECK_EQ_INT(count_files(c.dir, ".c"), 1);
    cache_end(&c);
}

/* An opened OpenCL device reports its own workgroup-memory size (OpenCL
 * guarantees at least 32 KiB on full-profile devices); the CPU has none. */
TEST(rt_device_reports_workgroup_memory)
{
    rt_device *d = NULL;
    CHECK(rt_device_open("cpu", 1, &d) == SMELT_OK);
    CHECK(d && d->smem_bytes == 0);
    rt_device_close(d);
    d = NULL;
    if (rt_device_open("opencl", 1, &d) != SMELT_OK) return; /* no OpenCL here: nothing to ask */
    CHECK(d->smem_bytes >= 32 * 1024);
    rt_device_close(d);
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
/* Whether the ISA text names extension `name` ("+name" ending at '+' or '|'). */
static bool isa_names(const char *isa, const char *name)
{
    size_t len = strlen(name);
    for (const char *p = strchr(isa, '+'); p; p = strchr(p + 1, '+'))
        if (!strncmp(p + 1, name, len) && (p[1 + len] == '+' || p[1 + len] == '|' || !p[1 + len])) return true;
    return false;
}
#endif

/* What the compiled objects' cache key and the CPU device's identity hold of
 * the CPU: the extensions by name, as GCC's own CPU model (libgcc, CPUID and
 * the OS's register state read its own way) reports them, so two AVX-512
 * hosts that differ in VNNI never share a compiled object or program. */
TEST(rt_cc_cpu_isa_names_the_cpus_extensions)
{
    char isa[256];
    rt_cc_cpu_isa(isa, sizeof isa);
    CHECK(strlen(isa) > 0 && strlen(isa) < sizeof isa - 1);
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
    CHECK(!strncmp(isa, "x86_64", 6) && strchr(isa, '|'));
    __builtin_cpu_init();
    CHECK(isa_names(isa, "avx") == !!__builtin_cpu_supports("avx"));
    CHECK(isa_names(isa, "avx2") == !!__builtin_cpu_supports("avx2"));
    CHECK(isa_names(isa, "fma") == !!__builtin_cpu_supports("fma"));
    CHECK(isa_names(isa, "avx512f") == !!__builtin_cpu_supports("avx512f"));
    CHECK(isa_names(isa, "avx512bw") == !!__builtin_cpu_supports("avx512bw"));
    CHECK(isa_names(isa, "avx512vl") == !!__builtin_cpu_supports("avx512vl"));
    CHECK(isa_names(isa, "avx512vnni") == !!__builtin_cpu_supports("avx512vnni"));
    CHECK(isa_names(isa, "avx512vbmi") == !!__builtin_cpu_supports("avx512vbmi"));
    CHECK(isa_names(isa, "avx512bf16") == !!__builtin_cpu_supports("avx512bf16"));
    /* a name is one token: avx512f is not read out of avx512fp16 */
    CHECK(!isa_names("x86_64+avx512fp16|0", "avx512f") && isa_names("x86_64+avx512f+avx512fp16|0", "avx512f"));
#endif
    char again[256];
    rt_cc_cpu_isa(again, sizeof again);
    CHECK(!strcmp(isa, again));
    rt_device *d = NULL;
    CHECK(rt_device_open("cpu", 1, &d) == SMELT_OK);
    CHECK(d && strstr(d->ident, isa) != NULL);
    rt_device_close(d);
}

/* ---- the compile cache trusts nothing it did not write --------------------------------------- */

TEST(sha256_matches_the_standard_vectors)
{
    static const struct {
        const char *msg, *hex;
    } v[] = {
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        sha256_ctx c;
        sha256_init(&c);
        /* in uneven pieces, to cross the block buffer's edges */
        size_t len = strlen(v[i].msg);
        for (size_t at = 0; at < len; at += 7)
            sha256_update(&c, v[i].msg + at, len - at < 7 ? len - at : 7);
        uint8_t d[SHA256_BYTES];
        char hex[2 * SHA256_BYTES + 1];
        sha256_final(&c, d);
        sha256_hex(d, hex);
        CHECK_STR_HAS(hex, v[i].hex);
    }
}

/* The path of the one <key>.so in dir (there must be exactly one). */
static bool find_so(const char *dir, char *path, size_t cap)
{
    DIR *d = opendir(dir);
    if (!d) return false;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len > 3 && !strcmp(e->d_name + len - 3, ".so")) {
            snprintf(path, cap, "%s/%s", dir, e->d_name);
            n++;
        }
    }
    closedir(d);
    return n == 1;
}

/* Loads kernel_src, runs it once, and says whether it came from the cache. */
static bool load_and_run(bool *cached)
{
    rt_so *so = NULL;
    if (rt_cc_load(kernel_src, &so, cached) != SMELT_OK) return false;
    rt_kernel_fn fn = (rt_kernel_fn)rt_so_sym(so, "smelt_k0");
    bool ok = fn != NULL;
    if (fn) {
        rt_pool *p = rt_pool_new(2);
        run_and_check(fn, p, 100);
        rt_pool_free(p);
    }
    rt_so_close(so);
    return ok;
}

static void copy_file(const char *from, const char *to)
{
    FILE *f = fopen(from, "rb"), *g = fopen(to, "wb");
    CHECK(f && g);
    for (int ch; f && g && (ch = fgetc(f)) != EOF;) fputc(ch, g);
    if (f) fclose(f);
    if (g) fclose(g);
}

TEST(rt_cache_rebuilds_truncated_and_bit_flipped_objects)
{
    test_cache c;
    cache_begin(&c);
    bool cached = true;
    CHECK(load_and_run(&cached));
    CHECK(!cached);
    char so[512];
    CHECK(find_so(c.dir, so, sizeof so));
    struct stat st;
    CHECK(stat(so, &st) == 0 && (st.st_mode & 0777) == 0600);
    off_t size = st.st_size;
    CHECK(stat(c.dir, &st) == 0 && (st.st_mode & 0777) == 0700);

    /* Truncated to half: not loaded (it would SIGBUS), rebuilt, runs. */
    CHECK(truncate(so, size / 2) == 0);
    CHECK(load_and_run(&cached));
    CHECK(!cached);
    CHECK(stat(so, &st) == 0 && st.st_size == size);
    CHECK(load_and_run(&cached));
    CHECK(cached);

    /* One bit flipped in the middle (code or data): rebuilt. */
    FILE *f = fopen(so, "r+b");
    CHECK(f != NULL);
    if (f) {
        fseek(f, size / 2, SEEK_SET);
        int ch = fgetc(f);
        fseek(f, size / 2, SEEK_SET);
        fputc(ch ^ 0x10, f);
        fclose(f);
    }
    CHECK(load_and_run(&cached));
    CHECK(!cached);

    /* A missing digest: rebuilt as well. */
    char digest[600];
    snprintf(digest, sizeof digest, "%s.sha256", so);
    CHECK(unlink(digest) == 0);
    CHECK(load_and_run(&cached));
    CHECK(!cached);
    CHECK(load_and_run(&cached));
    CHECK(cached);
    cache_end(&c);
}

/* Another user's object planted in a shared (world-writable) directory, under
 * the right name and with a matching digest, never runs. */
TEST(rt_cache_refuses_objects_planted_in_a_shared_directory)
{
    test_cache c;
    cache_begin(&c);
    /* The planted object: right symbol, wrong results, a constructor. */
    rt_so *evil = NULL;
    CHECK_EQ_INT(rt_cc_load("#include <stdint.h>\n#include <stdlib.h>\n"
                            "__attribute__((constructor)) static void planted(void) "
                            "{ setenv(\"SMELT_PLANTED_RAN\", \"1\", 1); }\n"
                            "void smelt_k0(int64_t wg, void *const *bufs) "
                            "{ ((int64_t *)bufs[0])[wg] = -wg; }\n",
                            &evil, NULL),
                 SMELT_OK);
    rt_so_close(evil);
    unsetenv("SMELT_PLANTED_RAN");
    char evil_so[512], evil_dir[300];
    CHECK(find_so(c.dir, evil_so, sizeof evil_so));
    /* Learn the name kernel_src gets, in a private directory. */
    snprintf(evil_dir, sizeof evil_dir, "%s/learn", c.dir);
    CHECK(mkdir(evil_dir, 0700) == 0);
    setenv("SMELT_CACHE_DIR", evil_dir, 1);
    bool cached;
    CHECK(load_and_run(&cached));
    char real_so[512];
    CHECK(find_so(evil_dir, real_so, sizeof real_so));

    /* The shared directory, with the evil object and its digest under that name. */
    char shared[300], plant[700], cmd[1600];
    snprintf(shared, sizeof shared, "%s/shared", c.dir);
    CHECK(mkdir(shared, 0777) == 0 && chmod(shared, 01777) == 0);
    snprintf(plant, sizeof plant, "%s/%s", shared, strrchr(real_so, '/') + 1);
    copy_file(evil_so, plant);
    snprintf(cmd, sizeof cmd, "cp '%s.sha256' '%s.sha256'", evil_so, plant);
    CHECK(system(cmd) == 0);
    chmod(plant, 0644);
    setenv("SMELT_CACHE_DIR", shared, 1);
    CHECK(load_and_run(&cached));
    CHECK(!cached);
    CHECK(getenv("SMELT_PLANTED_RAN") == NULL);
    /* It went to the private subdirectory, made 0700. */
    char priv[400];
    snprintf(priv, sizeof priv, "%s/smelt-%lu", shared, (unsigned long)geteuid());
    struct stat st;
    CHECK(stat(priv, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0700);

    /* The evil object moved into that subdirectory (as if its owner had been
     * careless) is still not loaded when the subdirectory is not private. */
    CHECK(chmod(priv, 0777) == 0);
    rt_so *so = NULL;
    CHECK_EQ_INT(rt_cc_load(kernel_src, &so, NULL), SMELT_ERR_IO);
    CHECK(so == NULL);
    CHECK_STR_HAS(smelt_last_error(), "writable by no one else");
    CHECK_STR_HAS(smelt_last_error(), priv);
    CHECK(getenv("SMELT_PLANTED_RAN") == NULL);

    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", shared, evil_dir);
    CHECK(system(cmd) == 0);
    cache_end(&c);
}

/* A directory that belongs to another user is not used itself (here it is
 * even writable by us: as root, permissions do not stop us); the cache goes
 * to its private subdirectory. Needs root to make such a directory. */
TEST(rt_cache_does_not_use_another_users_directory)
{
    if (geteuid() != 0) return;
    test_cache c;
    cache_begin(&c);
    char other[300], priv[400];
    snprintf(other, sizeof other, "%s/other", c.dir);
    CHECK(mkdir(other, 0755) == 0 && chown(other, 65534, 65534) == 0);
    setenv("SMELT_CACHE_DIR", other, 1);
    bool cached = true;
    CHECK(load_and_run(&cached));
    CHECK(!cached);
    snprintf(priv, sizeof priv, "%s/smelt-0", other);
    char so[512];
    CHECK(find_so(priv, so, sizeof so));
    struct stat st;
    CHECK(stat(priv, &st) == 0 && st.st_uid == 0 && (st.st_mode & 0777) == 0700);
    /* Its private subdirectory made by that other user is refused, with the rule. */
    char cmd[900];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", priv);
    CHECK(system(cmd) == 0);
    CHECK(mkdir(priv, 0700) == 0 && chown(priv, 65534, 65534) == 0);
    rt_so *s = NULL;
    CHECK_EQ_INT(rt_cc_load(kernel_src, &s, NULL), SMELT_ERR_IO);
    CHECK_STR_HAS(smelt_last_error(), "owned by this user");
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", other);
    CHECK(system(cmd) == 0);
    cache_end(&c);
}
