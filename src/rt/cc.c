/*
 * cc.c — the system compiler, the on-disk compile cache and dlopen.
 *
 * needs: a C compiler runnable as $SMELT_CC (default "cc"), a writable cache dir.
 * gives: a loaded shared object per kernel source; identical sources (for the
 *        same compiler and flags) compile once per cache, across processes.
 */
/* pipe2: a pipe that is close-on-exec from birth, so children that other
 * threads spawn meanwhile never hold its write end open. */
#define _GNU_SOURCE
#include "rt/rt.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#define CC_X86_CPUID 1
#endif

#include "core/diag.h"
#include "core/hash.h"
#include "rt/cc_units.h"

/* The one place the kernel compile flags live. The first CC_N_NATIVE flags
 * tune for this CPU and are dropped together for compilers that reject them;
 * the cache key is the same either way because the choice is fixed by the
 * compiler's identity, which the key includes. -std=c11 keeps FMA contraction
 * off, so kernels round exactly as the interpreter does; -fno-trapping-math
 * lets conditionals become vector selects (nothing reads the FP flags). On
 * x86, full-width AVX-512 vectors where the CPU has them. */
#if defined(__x86_64__) || defined(__i386__)
#define CC_NATIVE_FLAGS "-march=native", "-mprefer-vector-width=512"
enum { CC_N_NATIVE = 2 };
#else
#define CC_NATIVE_FLAGS "-march=native"
enum { CC_N_NATIVE = 1 };
#endif
static const char *const cc_flags[] = {
    CC_NATIVE_FLAGS, "-O3", "-fPIC", "-shared", "-std=c11", "-fno-math-errno", "-fno-trapping-math",
};
enum { CC_N_FLAGS = sizeof cc_flags / sizeof cc_flags[0], CC_OPT_SLOT = CC_N_NATIVE };

/* Flag i, with $SMELT_CC_OPT (-O1, -O2, -O3 or -Os) in the optimisation level's
 * slot: a knob to measure what the level costs in compile and run time
 * (scripts/compile_time.py). The flag used is part of the cache key. */
static const char *cc_flag(int i)
{
    if (i == CC_OPT_SLOT) {
        const char *env = getenv("SMELT_CC_OPT");
        if (env && (!strcmp(env, "-O1") || !strcmp(env, "-O2") || !strcmp(env, "-O3") || !strcmp(env, "-Os")))
            return env;
    }
    return cc_flags[i];
}

#define CC_MAX_ARGS 32
#define CC_OUTPUT_CAP (16 * 1024)
#define CC_ERROR_LINES 20
#define CC_PATH_CAP 4096

struct rt_so {
    void *handle;
};

/* $SMELT_CC split on blanks, in a buffer the argv points into. */
typedef struct cc_cmd {
    char cmd[1024];
    char buf[1024];
    char *argv[CC_MAX_ARGS];
    int argc;
} cc_cmd;

static smelt_status cc_cmd_parse(cc_cmd *c)
{
    const char *env = getenv("SMELT_CC");
    if (!env || !*env) env = "cc";
    if (strlen(env) >= sizeof c->buf)
        return diag_fail(SMELT_ERR_INVALID_ARG, "SMELT_CC is longer than %zu bytes",
                         sizeof c->buf - 1);
    strcpy(c->cmd, env);
    strcpy(c->buf, env);
    c->argc = 0;
    char *save = NULL; /* strtok_r: strtok's hidden state would race between compiling threads */
    for (char *tok = strtok_r(c->buf, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
        if (c->argc == CC_MAX_ARGS - 1)
            return diag_fail(SMELT_ERR_INVALID_ARG, "SMELT_CC has more than %d words",
                             CC_MAX_ARGS - 1);
        c->argv[c->argc++] = tok;
    }
    if (c->argc == 0) return diag_fail(SMELT_ERR_INVALID_ARG, "SMELT_CC is blank");
    c->argv[c->argc] = NULL;
    return SMELT_OK;
}

/* Start argv with stdout and stderr into a close-on-exec pipe; *fd_out is its
 * read end. cc_collect reads it and reaps the child. */
static smelt_status cc_spawn(char *const argv[], pid_t *pid_out, int *fd_out)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return diag_fail(SMELT_ERR_IO, "cannot create a pipe: %s", strerror(errno));
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
    int err = posix_spawnp(pid_out, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    if (err != 0) {
        close(fds[0]);
        return diag_fail(SMELT_ERR_DEVICE,
                         "cannot run the C compiler '%s' (set SMELT_CC to a working one): %s",
                         argv[0], strerror(err));
    }
    *fd_out = fds[0];
    return SMELT_OK;
}

/* The child's output into out (NUL-terminated, truncated to cap; the rest is
 * drained so the child never blocks on a full pipe) and its exit status. */
static smelt_status cc_collect(const char *what, pid_t pid, int fd, char *out, size_t cap, int *exit_code)
{
    size_t len = 0;
    char drain[4096];
    for (;;) {
        char *dst = len + 1 < cap ? out + len : drain;
        size_t room = len + 1 < cap ? cap - 1 - len : sizeof drain;
        ssize_t n = read(fd, dst, room);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        if (dst != drain) len += (size_t)n;
    }
    out[len] = 0;
    close(fd);
    int wst;
    while (waitpid(pid, &wst, 0) < 0)
        if (errno != EINTR)
            return diag_fail(SMELT_ERR_DEVICE, "waiting for '%s' failed: %s", what, strerror(errno));
    *exit_code = WIFEXITED(wst) ? WEXITSTATUS(wst) : 128 + WTERMSIG(wst);
    return SMELT_OK;
}

/* Run argv with stdout and stderr captured into out. */
static smelt_status run_captured(char *const argv[], char *out, size_t cap, int *exit_code)
{
    pid_t pid;
    int fd;
    TRY(cc_spawn(argv, &pid, &fd));
    return cc_collect(argv[0], pid, fd, out, cap, exit_code);
}

/* What we learn about a compiler command once per process: its identity (the
 * first line of `--version`, part of every cache key), whether it accepts
 * -march=native, and, when first asked, whether it targets VNNI there
 * (cc_targets_vnni). Keyed by the command, since SMELT_CC may change between calls. */
typedef struct cc_info {
    char cmd[1024];
    char ident[256];
    int native_ok;
    int vnni; /* 1, 0, or -1: not asked yet */
} cc_info;

#define CC_INFO_SLOTS 8
static cc_info cc_infos[CC_INFO_SLOTS];
static int cc_n_infos;
static pthread_mutex_t cc_info_mu = PTHREAD_MUTEX_INITIALIZER;

static smelt_status cc_info_get(const cc_cmd *c, cc_info *out)
{
    const char *cmd = c->cmd;
    pthread_mutex_lock(&cc_info_mu);
    for (int i = 0; i < cc_n_infos; i++)
        if (!strcmp(cc_infos[i].cmd, cmd)) {
            *out = cc_infos[i];
            pthread_mutex_unlock(&cc_info_mu);
            return SMELT_OK;
        }
    pthread_mutex_unlock(&cc_info_mu);

    char *argv[CC_MAX_ARGS + 1];
    memcpy(argv, c->argv, sizeof(char *) * (size_t)c->argc);
    argv[c->argc] = "--version";
    argv[c->argc + 1] = NULL;
    char text[1024];
    int code;
    TRY(run_captured(argv, text, sizeof text, &code));
    if (code != 0)
        return diag_fail(SMELT_ERR_DEVICE, "the C compiler '%s' failed on --version (exit %d): %.200s",
                         cmd, code, text);
    memset(out, 0, sizeof *out);
    snprintf(out->cmd, sizeof out->cmd, "%s", cmd);
    snprintf(out->ident, sizeof out->ident, "%.*s", (int)strcspn(text, "\n"), text);
    out->native_ok = 1;
    out->vnni = -1;

    pthread_mutex_lock(&cc_info_mu);
    if (cc_n_infos < CC_INFO_SLOTS) cc_infos[cc_n_infos++] = *out;
    pthread_mutex_unlock(&cc_info_mu);
    return SMELT_OK;
}

static void cc_info_forget_native(const char *cmd)
{
    pthread_mutex_lock(&cc_info_mu);
    for (int i = 0; i < cc_n_infos; i++)
        if (!strcmp(cc_infos[i].cmd, cmd)) cc_infos[i].native_ok = 0;
    pthread_mutex_unlock(&cc_info_mu);
}

static smelt_status write_file(int fd, const char *path, const char *text)
{
    size_t len = strlen(text);
    while (len) {
        ssize_t n = write(fd, text, len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            close(fd);
            return diag_fail(SMELT_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
        }
        text += n;
        len -= (size_t)n;
    }
    if (close(fd) != 0) return diag_fail(SMELT_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
    return SMELT_OK;
}

/* dlopen the entry `name` of the checked directory through /proc/self/fd/<dir>
 * where that exists, so a rename of the directory (or of one above it)
 * between the check and the load cannot substitute another directory; only
 * this user can change files inside it. (Not /proc/self/fd/<file>: the loader
 * knows objects by name, and file descriptor numbers are reused.) `path`
 * names it in messages and loads it where there is no /proc. */
/* The loader serialises dlopen and dlclose behind its own lock, which
 * ThreadSanitizer cannot see: two programs loading and dropping the same
 * cached object from two threads share one link map, and the free in one
 * thread's dlclose was reported as racing the other's dlopen. Taking our own
 * lock around both makes that order visible (it costs nothing the loader's
 * lock does not already cost). */
static pthread_mutex_t so_mu = PTHREAD_MUTEX_INITIALIZER;

static smelt_status so_open(const rt_cache *cache, const char *name, const char *path, rt_so **out)
{
    char proc[128];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d/%s", cache->dfd, name);
    pthread_mutex_lock(&so_mu);
    void *h = dlopen(access(proc, R_OK) == 0 ? proc : path, RTLD_NOW | RTLD_LOCAL);
    pthread_mutex_unlock(&so_mu);
    if (!h) {
        const char *why = dlerror();
        return diag_fail(SMELT_ERR_DEVICE, "cannot load '%s': %s", path, why ? why : "?");
    }
    rt_so *so = malloc(sizeof *so);
    if (!so) {
        pthread_mutex_lock(&so_mu);
        dlclose(h);
        pthread_mutex_unlock(&so_mu);
        return diag_fail(SMELT_ERR_NOMEM, "out of memory loading '%s'", path);
    }
    so->handle = h;
    *out = so;
    return SMELT_OK;
}

/* The first CC_ERROR_LINES lines of s, in place. */
static const char *first_lines(char *s)
{
    char *p = s;
    for (int i = 0; i < CC_ERROR_LINES && (p = strchr(p, '\n')); i++) p++;
    if (p) *p = 0;
    return s;
}

/* The compiler and its flags (the native ones only where the compiler took
 * them) at the start of argv; returns how many it wrote. */
static int cc_argv_start(const cc_cmd *c, const cc_info *info, char **argv)
{
    int n = 0;
    for (int i = 0; i < c->argc; i++) argv[n++] = c->argv[i];
    for (int i = 0; i < CC_N_FLAGS; i++)
        if (i >= CC_N_NATIVE || info->native_ok) argv[n++] = (char *)cc_flag(i);
    return n;
}

/* Compile c_path into so_path; text receives the compiler's output, code its
 * exit status. Retries without the native flags if the compiler rejects them. */
static smelt_status compile(cc_cmd *c, cc_info *info, const char *c_path, const char *so_path,
                            char *text, size_t cap, int *code)
{
    for (;;) {
        char *argv[CC_MAX_ARGS + CC_N_FLAGS + 5];
        int n = cc_argv_start(c, info, argv);
        argv[n++] = "-o";
        argv[n++] = (char *)so_path;
        argv[n++] = (char *)c_path;
        argv[n++] = "-lm";
        argv[n] = NULL;
        TRY(run_captured(argv, text, cap, code));
        if (*code == 0 || !info->native_ok || !(strstr(text, "march") || strstr(text, "mprefer"))) return SMELT_OK;
        info->native_ok = 0;
        cc_info_forget_native(info->cmd);
    }
}

/* ---- several translation units, compiled at once ---------------------------
 * A program's source is one prelude (the dialect's helpers) followed by its
 * kernels, each starting at a line "/" "* k<digits>" (target/emit_c.c). The
 * system compiler spends its time in the kernels and is single-threaded, so a
 * large source is cut at kernel boundaries into as many units as there are
 * online CPUs, each unit the prelude plus its share of the kernels (identical
 * ones once, balanced by estimated compile time: rt/cc_units.h), compiled
 * with -c concurrently and linked into the one shared object. The object's cache key stays that of the whole source.
 * Sources under CC_SPLIT_MIN_BYTES are not worth the extra link. */
#define CC_SPLIT_MIN_BYTES (64 * 1024)
#define CC_MAX_UNITS 16

/* How many units to compile source in: $SMELT_CC_JOBS (1..16) or the online
 * CPUs, at most one per kernel; 1 for small sources. */
static int cc_jobs(size_t len, int n_kernels)
{
    const char *env = getenv("SMELT_CC_JOBS");
    long jobs = env && *env ? strtol(env, NULL, 10) : sysconf(_SC_NPROCESSORS_ONLN);
    if (jobs < 1 || len < CC_SPLIT_MIN_BYTES) jobs = 1;
    if (jobs > CC_MAX_UNITS) jobs = CC_MAX_UNITS;
    if (jobs > n_kernels) jobs = n_kernels;
    return (int)jobs;
}

static bool kernel_line(const char *p) { return !strncmp(p, "/* k", 4) && p[4] >= '0' && p[4] <= '9'; }

/* Offsets of the kernels' first lines in source (at most cap); returns how many. */
static int kernel_starts(const char *source, size_t *starts, int cap)
{
    int n = 0;
    for (const char *p = source; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (kernel_line(p)) {
            if (n == cap) return -1;
            starts[n++] = (size_t)(p - source);
        }
    return n;
}

typedef struct cc_unit {
    char c[CC_PATH_CAP + 64], o[CC_PATH_CAP + 64];
    pid_t pid;
    int fd;
} cc_unit;

/* Compile source as `jobs` units into so_path; *code is 0 on success, else
 * the first failing exit status (the caller then compiles the whole source
 * once, for a message that names the kept file and its lines). */
static smelt_status compile_split(cc_cmd *c, const cc_info *info, const char *dir, const char *key,
                                  const char *source, const size_t *starts, int n_k, int jobs,
                                  const char *so_path, char *text, size_t cap, int *code)
{
    cc_unit *u = calloc((size_t)jobs, sizeof *u);
    cc_units *plan = NULL;
    char *buf = NULL;
    smelt_status st = u ? cc_units_plan(source, starts, n_k, jobs, &plan) : diag_fail(SMELT_ERR_NOMEM, "out of memory compiling kernels");
    int made = 0, spawned = 0;
    *code = 0;
    if (!st && !(buf = malloc(cc_units_max_bytes(plan)))) st = diag_fail(SMELT_ERR_NOMEM, "out of memory compiling kernels");
    if (st) goto out;
    for (int j = 0; j < jobs; j++) {
        cc_units_text(plan, j, buf);
        snprintf(u[j].c, sizeof u[j].c, "%s/%s-u%d-XXXXXX.c", dir, key, j);
        int fd = mkstemps(u[j].c, 2);
        if (fd < 0) {
            st = diag_fail(SMELT_ERR_IO, "cannot create a file in '%s': %s", dir, strerror(errno));
            goto out;
        }
        made++;
        snprintf(u[j].o, sizeof u[j].o, "%.*so", (int)strlen(u[j].c) - 1, u[j].c);
        if ((st = write_file(fd, u[j].c, buf))) goto out;
    }
    for (int j = 0; j < jobs; j++) {
        char *argv[CC_MAX_ARGS + CC_N_FLAGS + 6];
        int n = cc_argv_start(c, info, argv);
        argv[n++] = "-c";
        argv[n++] = "-o";
        argv[n++] = u[j].o;
        argv[n++] = u[j].c;
        argv[n] = NULL;
        if ((st = cc_spawn(argv, &u[j].pid, &u[j].fd))) break;
        spawned++;
    }
    for (int j = 0; j < spawned; j++) { /* reap every child, even after a failure */
        int cj = 0;
        smelt_status sj = cc_collect(c->argv[0], u[j].pid, u[j].fd, text, cap, &cj);
        if (!st) st = sj;
        if (!*code) *code = cj;
    }
    if (st || *code) goto out;
    {
        char *argv[CC_MAX_ARGS + CC_N_FLAGS + CC_MAX_UNITS + 5];
        int n = cc_argv_start(c, info, argv);
        argv[n++] = "-o";
        argv[n++] = (char *)so_path;
        for (int j = 0; j < jobs; j++) argv[n++] = u[j].o;
        argv[n++] = "-lm";
        argv[n] = NULL;
        st = run_captured(argv, text, cap, code);
    }
out:
    for (int j = 0; j < made; j++) {
        unlink(u[j].c);
        unlink(u[j].o);
    }
    free(u);
    cc_units_free(plan);
    free(buf);
    return st;
}

/* Compile source (kept at c_path) into so_path: in units at once where it is
 * large, else (or when that fails, for the whole file's message) in one. */
static smelt_status compile_source(cc_cmd *c, cc_info *info, const char *dir, const char *key, const char *source,
                                   const char *c_path, const char *so_path, char *text, size_t cap, int *code)
{
    size_t starts[1024];
    int n_k = kernel_starts(source, starts, 1024);
    int jobs = n_k > 1 ? cc_jobs(strlen(source), n_k) : 1;
    if (jobs > 1) {
        smelt_status st = compile_split(c, info, dir, key, source, starts, n_k, jobs, so_path, text, cap, code);
        if (!st && *code == 0) return SMELT_OK;
        diag_clear();
    }
    return compile(c, info, c_path, so_path, text, cap, code);
}

int rt_cc_vector_width(void)
{
    const char *env = getenv("SMELT_VECTOR_WIDTH");
    if (env && (!strcmp(env, "4") || !strcmp(env, "8") || !strcmp(env, "16"))) return atoi(env);
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return 16;
    if (__builtin_cpu_supports("avx")) return 8;
#endif
    return 4;
}

#ifdef CC_X86_CPUID
/* Register r (0 EAX .. 3 EDX) of CPUID leaf/sub, 0 where the leaf is past the highest. */
static unsigned cpuid_reg(unsigned leaf, unsigned sub, int r)
{
    unsigned v[4] = {0};
    if ((unsigned)__get_cpuid_max(leaf & 0x80000000u, NULL) < leaf) return 0;
    __cpuid_count(leaf, sub, v[0], v[1], v[2], v[3]);
    return v[r];
}

static unsigned long long xcr0(unsigned leaf1_ecx)
{
    if (!(leaf1_ecx & (1u << 27))) return 0; /* OSXSAVE: xgetbv is there */
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (unsigned long long)hi << 32 | lo;
}
#endif

void rt_cc_cpu_isa(char *buf, size_t cap)
{
#ifdef CC_X86_CPUID
    /* the words: leaf 1 ECX, EDX; leaf 7.0 EBX, ECX, EDX; leaf 7.1 EAX; 0x80000001 ECX, EDX */
    unsigned w[8] = {cpuid_reg(1, 0, 2),          cpuid_reg(1, 0, 3),          cpuid_reg(7, 0, 1),
                     cpuid_reg(7, 0, 2),          cpuid_reg(7, 0, 3),          cpuid_reg(7, 1, 0),
                     cpuid_reg(0x80000001u, 0, 2), cpuid_reg(0x80000001u, 0, 3)};
    unsigned long long xc = xcr0(w[0]);
    /* by name: the extensions the emitters' helpers test for; each needs the OS to
     * save its registers (XCR0: YMM for AVX, opmask and ZMM for AVX-512) */
    bool ymm = (xc & 6) == 6, zmm = ymm && (xc & 0xe0) == 0xe0;
    static const struct {
        const char *name;
        int word, bit, regs; /* regs: 1 YMM, 2 ZMM */
    } ext[] = {
        {"avx", 0, 28, 1},        {"avx2", 2, 5, 1},        {"fma", 0, 12, 1},        {"avx512f", 2, 16, 2},
        {"avx512bw", 2, 30, 2},   {"avx512dq", 2, 17, 2},   {"avx512vl", 2, 31, 2},   {"avx512vnni", 3, 11, 2},
        {"avx512vbmi", 3, 1, 2},  {"avx512bf16", 5, 5, 2},  {"avx512fp16", 4, 23, 2}, {"avxvnni", 5, 4, 1},
    };
#if defined(__x86_64__)
    int n = snprintf(buf, cap, "x86_64");
#else
    int n = snprintf(buf, cap, "x86");
#endif
    for (size_t i = 0; i < sizeof ext / sizeof ext[0]; i++) {
        bool on = (w[ext[i].word] >> ext[i].bit & 1) && (ext[i].regs == 2 ? zmm : ymm);
        if (on && n >= 0 && (size_t)n < cap) n += snprintf(buf + n, cap - (size_t)n, "+%s", ext[i].name);
    }
    if (n >= 0 && (size_t)n < cap)
        snprintf(buf + n, cap - (size_t)n, "|%08x.%08x.%08x.%08x.%08x.%08x.%08x.%08x.%llx", w[0], w[1], w[2], w[3], w[4], w[5],
                 w[6], w[7], xc);
#elif defined(__aarch64__)
    snprintf(buf, cap, "aarch64+neon");
#else
    snprintf(buf, cap, "generic");
#endif
}

/* Whether the compiler, with the native flags, targets AVX512BW and
 * AVX512-VNNI: its predefined macros (-dM -E), asked once per command and
 * kept in its cc_info. */
static bool cc_targets_vnni(const cc_cmd *c)
{
    cc_info info;
    if (cc_info_get(c, &info) != SMELT_OK) {
        diag_clear();
        return false;
    }
    if (info.vnni >= 0) return info.vnni == 1;
    char *argv[CC_MAX_ARGS + CC_N_NATIVE + 6];
    int n = 0;
    for (int i = 0; i < c->argc; i++) argv[n++] = c->argv[i];
    for (int i = 0; i < CC_N_NATIVE; i++) argv[n++] = (char *)cc_flag(i);
    argv[n++] = "-dM", argv[n++] = "-E", argv[n++] = "-x", argv[n++] = "c", argv[n++] = "/dev/null", argv[n] = NULL;
    size_t cap = 256 * 1024;
    char *text = malloc(cap);
    int code = 1;
    if (!text) return false;
    if (run_captured(argv, text, cap, &code) != SMELT_OK) diag_clear(), code = 1;
    bool yes = code == 0 && strstr(text, "#define __AVX512VNNI__ 1\n") && strstr(text, "#define __AVX512BW__ 1\n");
    free(text);
    pthread_mutex_lock(&cc_info_mu);
    for (int i = 0; i < cc_n_infos; i++)
        if (!strcmp(cc_infos[i].cmd, c->cmd)) cc_infos[i].vnni = yes;
    pthread_mutex_unlock(&cc_info_mu);
    return yes;
}

bool rt_cc_int8_dot(void)
{
    if (rt_cc_vector_width() != 16) return false;
    char isa[256];
    rt_cc_cpu_isa(isa, sizeof isa);
    if (!strstr(isa, "+avx512vnni")) return false; /* no compiler run on other hosts */
    cc_cmd c;
    if (cc_cmd_parse(&c) != SMELT_OK) {
        diag_clear();
        return false;
    }
    return cc_targets_vnni(&c);
}

int64_t rt_cc_stream_min_bytes(void)
{
    const char *env = getenv("SMELT_STREAM_MIN_BYTES");
    if (env && *env) {
        char *end;
        long long v = strtoll(env, &end, 10);
        if (*end == 0 && v >= 0) return v;
    }
    return (int64_t)16 << 20;
}

/* The object's cache key: 128 bits, two FNV-1a passes with different seeds
 * over everything that decides its contents, and the user (the name is an
 * address, not a check: rt_cache_open_verified checks the bytes). */
static void object_key(const char *source, const cc_info *info, char key[33])
{
    unsigned long uid = (unsigned long)geteuid();
    char isa[256];
    rt_cc_cpu_isa(isa, sizeof isa);
    uint64_t h[2] = {HASH_SEED, HASH_SEED ^ 0x9e3779b97f4a7c15ull};
    for (int k = 0; k < 2; k++) {
        size_t len = strlen(source);
        h[k] = hash_bytes(h[k], &len, sizeof len);
        h[k] = hash_str(h[k], source);
        for (int i = 0; i < CC_N_FLAGS; i++) h[k] = hash_str(h[k], cc_flag(i));
        h[k] = hash_str(h[k], info->cmd);
        h[k] = hash_str(h[k], info->ident);
        h[k] = hash_str(h[k], isa);
        h[k] = hash_bytes(h[k], &uid, sizeof uid);
    }
    snprintf(key, 33, "%016llx%016llx", (unsigned long long)h[0], (unsigned long long)h[1]);
}

smelt_status rt_cc_object_key(const char *source, char key[33])
{
    cc_cmd c;
    TRY(cc_cmd_parse(&c));
    cc_info info;
    TRY(cc_info_get(&c, &info));
    object_key(source, &info, key);
    return SMELT_OK;
}

static bool key_ok(const char *key) { return strlen(key) == 32 && strspn(key, "0123456789abcdef") == 32; }

smelt_status rt_cc_object_digest(const char *key, uint64_t digest[2])
{
    if (!key_ok(key)) return diag_fail(SMELT_ERR_INVALID_ARG, "'%.40s' is not an object key", key);
    rt_cache cache;
    TRY(rt_cache_open(&cache));
    char so_name[64];
    snprintf(so_name, sizeof so_name, "%s.so", key);
    bool ok = rt_cache_wide_digest(&cache, so_name, digest);
    smelt_status st = ok ? SMELT_OK : diag_fail(SMELT_ERR_IO, "no verified object '%s/%s' in the cache", cache.dir, so_name);
    rt_cache_close(&cache);
    return st;
}

smelt_status rt_cc_load_key(const char *key, const uint64_t digest[2], rt_so **out)
{
    *out = NULL;
    if (!key_ok(key)) return diag_fail(SMELT_ERR_INVALID_ARG, "'%.40s' is not an object key", key);
    rt_cache cache;
    TRY(rt_cache_open(&cache));
    char so_name[64], so_path[CC_PATH_CAP + 64];
    snprintf(so_name, sizeof so_name, "%s.so", key);
    snprintf(so_path, sizeof so_path, "%s/%s", cache.dir, so_name);
    int fd = rt_cache_open_wide(&cache, so_name, digest);
    smelt_status st = fd < 0 ? diag_fail(SMELT_ERR_IO, "no object '%s' with the expected bytes in the cache", so_path) : SMELT_OK;
    if (fd >= 0) close(fd);
    if (!st) st = so_open(&cache, so_name, so_path, out);
    rt_cache_close(&cache);
    return st;
}

smelt_status rt_cc_load(const char *source, rt_so **out, bool *cached)
{
    if (!source || !out) return diag_fail(SMELT_ERR_INVALID_ARG, "rt_cc_load: NULL argument");
    *out = NULL;
    if (cached) *cached = false;

    cc_cmd c;
    TRY(cc_cmd_parse(&c));
    cc_info info;
    TRY(cc_info_get(&c, &info));

    char key[33];
    object_key(source, &info, key);

    rt_cache cache;
    TRY(rt_cache_open(&cache));
    const char *dir = cache.dir;
    char so_name[64], so_path[CC_PATH_CAP + 64], c_path[CC_PATH_CAP + 64];
    snprintf(so_name, sizeof so_name, "%s.so", key);
    snprintf(so_path, sizeof so_path, "%s/%s", dir, so_name);
    snprintf(c_path, sizeof c_path, "%s/%s.c", dir, key);
    int fd = rt_cache_open_verified(&cache, so_name, NULL);
    if (fd >= 0) {
        close(fd);
        smelt_status st = so_open(&cache, so_name, so_path, out);
        if (st == SMELT_OK) {
            rt_cache_close(&cache);
            if (cached) *cached = true;
            return SMELT_OK;
        }
        diag_clear(); /* verified but unloadable (e.g. another machine's object): rebuild it */
    }

    /* Unique temporaries next to the final names, so the renames are atomic. */
    char tmp_c[CC_PATH_CAP + 64], tmp_so[CC_PATH_CAP + 64];
    snprintf(tmp_so, sizeof tmp_so, "%s/%s-XXXXXX.so", dir, key);
    fd = mkstemps(tmp_so, 3);
    smelt_status st = SMELT_OK;
    if (fd < 0) {
        st = diag_fail(SMELT_ERR_IO, "cannot create a file in '%s': %s", dir, strerror(errno));
        rt_cache_close(&cache);
        return st;
    }
    close(fd);
    snprintf(tmp_c, sizeof tmp_c, "%s/%s-XXXXXX.c", dir, key);
    fd = mkstemps(tmp_c, 2);
    st = fd < 0 ? diag_fail(SMELT_ERR_IO, "cannot create a file in '%s': %s", dir, strerror(errno))
                : write_file(fd, tmp_c, source);
    if (st) {
        if (fd >= 0) unlink(tmp_c);
        unlink(tmp_so);
        rt_cache_close(&cache);
        return st;
    }

    /* The source goes to its final name before compiling, so the compiler's
     * messages name the file we keep; a concurrent writer of the same key
     * writes the same bytes, and rename is atomic. */
    if (rename(tmp_c, c_path) != 0) {
        st = diag_fail(SMELT_ERR_IO, "cannot move '%s' to '%s': %s", tmp_c, c_path,
                       strerror(errno));
        unlink(tmp_c);
        unlink(tmp_so);
        rt_cache_close(&cache);
        return st;
    }
    char *text = malloc(CC_OUTPUT_CAP);
    if (!text) {
        unlink(tmp_so);
        rt_cache_close(&cache);
        return diag_fail(SMELT_ERR_NOMEM, "out of memory compiling kernels");
    }
    int code = 0;
    st = compile_source(&c, &info, dir, key, source, c_path, tmp_so, text, CC_OUTPUT_CAP, &code);
    if (!st && code != 0) {
        st = diag_fail(SMELT_ERR_COMPILE, "C compiler '%s' failed (exit %d) on generated source %s:\n%s",
                       info.cmd, code, c_path, first_lines(text));
    } else if (!st) {
        int so_fd = -1;
        st = rt_cache_publish(&cache, strrchr(tmp_so, '/') + 1, so_name, &so_fd);
        if (!st) {
            close(so_fd);
            st = so_open(&cache, so_name, so_path, out);
        }
    }
    free(text);
    unlink(tmp_so); /* gone already unless something failed */
    rt_cache_close(&cache);
    return st;
}

void *rt_so_sym(rt_so *so, const char *name) { return so ? dlsym(so->handle, name) : NULL; }

void rt_so_close(rt_so *so)
{
    if (!so) return;
    pthread_mutex_lock(&so_mu);
    dlclose(so->handle);
    pthread_mutex_unlock(&so_mu);
    free(so);
}
