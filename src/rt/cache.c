/*
 * cache.c — the on-disk compile cache: where it lives, why it is trusted, and
 * verified reads and atomic writes of its entries (rt/rt.h, rt/device.h).
 *
 * needs: a cache directory named by the environment (rt_cache_dir).
 * gives: file descriptors on entries whose bytes are the ones this user wrote.
 */
#define _GNU_SOURCE
#include "rt/rt.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/diag.h"
#include "core/hash.h"
#include "core/sha256.h"
#include "rt/device.h"

#define DIGEST_SUFFIX ".sha256"

const char *rt_cache_dir(char *buf, size_t cap)
{
    const char *d = getenv("SMELT_CACHE_DIR");
    int n;
    if (d && *d) {
        n = snprintf(buf, cap, "%s", d);
    } else if ((d = getenv("XDG_CACHE_HOME")) && *d) {
        n = snprintf(buf, cap, "%s/smelt", d);
    } else if ((d = getenv("HOME")) && *d) {
        n = snprintf(buf, cap, "%s/.cache/smelt", d);
    } else {
        return NULL;
    }
    return n >= 0 && (size_t)n < cap ? buf : NULL;
}

static smelt_status mkdir_p(const char *dir)
{
    char p[RT_CACHE_PATH_CAP];
    snprintf(p, sizeof p, "%s", dir);
    for (char *s = p + 1;; s++) {
        if (*s != '/' && *s != 0) continue;
        char saved = *s;
        *s = 0;
        if (mkdir(p, 0700) != 0 && errno != EEXIST)
            return diag_fail(SMELT_ERR_IO, "cannot create the cache directory '%s': %s", p,
                             strerror(errno));
        *s = saved;
        if (!saved) break;
    }
    return SMELT_OK;
}

/* Ours and writable by no one else: the rule every directory and file of the
 * cache must pass before anything in it is believed. */
static bool private_to_us(const struct stat *st)
{
    return st->st_uid == geteuid() && !(st->st_mode & (S_IWGRP | S_IWOTH));
}

smelt_status rt_cache_open(rt_cache *c)
{
    c->dfd = -1;
    if (!rt_cache_dir(c->dir, sizeof c->dir - 32))
        return diag_fail(SMELT_ERR_IO,
                         "no compile cache directory: set SMELT_CACHE_DIR, XDG_CACHE_HOME or HOME");
    TRY(mkdir_p(c->dir));
    int fd = open(c->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        smelt_status s = diag_fail(SMELT_ERR_IO, "cannot open the cache directory '%s': %s",
                                   c->dir, strerror(errno));
        if (fd >= 0) close(fd);
        return s;
    }
    if (private_to_us(&st)) {
        c->dfd = fd;
        return SMELT_OK;
    }
    /* A shared directory (another user's, or group/world-writable such as
     * /tmp): nothing in it is trusted; use a private subdirectory of ours. */
    char sub[32];
    snprintf(sub, sizeof sub, "smelt-%lu", (unsigned long)geteuid());
    size_t len = strlen(c->dir);
    snprintf(c->dir + len, sizeof c->dir - len, "/%s", sub);
    if (mkdirat(fd, sub, 0700) != 0 && errno != EEXIST) {
        smelt_status s = diag_fail(SMELT_ERR_IO,
                                   "the cache directory '%.*s' is not private to this user and "
                                   "its private subdirectory '%s' cannot be created: %s",
                                   (int)len, c->dir, c->dir, strerror(errno));
        close(fd);
        return s;
    }
    int sfd = openat(fd, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    close(fd);
    if (sfd < 0 || fstat(sfd, &st) != 0 || !private_to_us(&st)) {
        if (sfd >= 0) close(sfd);
        return diag_fail(SMELT_ERR_IO,
                         "the cache directory '%s' must be a directory owned by this user (uid "
                         "%lu) and writable by no one else; refusing to use it",
                         c->dir, (unsigned long)geteuid());
    }
    c->dfd = sfd;
    return SMELT_OK;
}

void rt_cache_close(rt_cache *c)
{
    if (c->dfd >= 0) close(c->dfd);
    c->dfd = -1;
}

/* A regular file of ours, opened without following links and without
 * blocking (a FIFO planted under the name must not hang us). */
static int open_private_file(int dfd, const char *name)
{
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || !private_to_us(&st)) {
        close(fd);
        return -1;
    }
    return fd;
}

/* SHA-256 of the whole file as hex; its size in *size. False on a read error. */
static bool digest_fd(int fd, char hex[2 * SHA256_BYTES + 1], size_t *size)
{
    sha256_ctx h;
    sha256_init(&h);
    char buf[1 << 16];
    size_t total = 0;
    if (lseek(fd, 0, SEEK_SET) != 0) return false;
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return false;
        if (n == 0) break;
        sha256_update(&h, buf, (size_t)n);
        total += (size_t)n;
    }
    uint8_t d[SHA256_BYTES];
    sha256_final(&h, d);
    sha256_hex(d, hex);
    if (size) *size = total;
    return lseek(fd, 0, SEEK_SET) == 0;
}

int rt_cache_open_verified(const rt_cache *c, const char *name, size_t *size)
{
    char dname[RT_CACHE_PATH_CAP];
    snprintf(dname, sizeof dname, "%s%s", name, DIGEST_SUFFIX);
    int dfd = open_private_file(c->dfd, dname);
    if (dfd < 0) return -1;
    char want[2 * SHA256_BYTES + 2];
    ssize_t n = read(dfd, want, sizeof want);
    close(dfd);
    if (n != 2 * SHA256_BYTES) return -1;
    want[n] = 0;

    int fd = open_private_file(c->dfd, name);
    if (fd < 0) return -1;
    char got[2 * SHA256_BYTES + 1];
    if (!digest_fd(fd, got, size) || strcmp(got, want) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* hash_wide of the whole file; false on a read error. */
static bool wide_fd(int fd, uint64_t out[2])
{
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size < 0 || (uint64_t)st.st_size > SIZE_MAX - 1) return false;
    size_t size = (size_t)st.st_size, got = 0;
    char *buf = malloc(size + 1);
    while (buf && got < size) {
        ssize_t n = pread(fd, buf + got, size - got, (off_t)got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += (size_t)n;
    }
    bool ok = buf && got == size;
    if (ok) hash_wide(buf, size, HASH_SEED, out);
    free(buf);
    return ok;
}

bool rt_cache_wide_digest(const rt_cache *c, const char *name, uint64_t out[2])
{
    int fd = rt_cache_open_verified(c, name, NULL);
    bool ok = fd >= 0 && wide_fd(fd, out);
    if (fd >= 0) close(fd);
    return ok;
}

int rt_cache_open_wide(const rt_cache *c, const char *name, const uint64_t want[2])
{
    int fd = open_private_file(c->dfd, name);
    uint64_t got[2];
    if (fd >= 0 && (!wide_fd(fd, got) || got[0] != want[0] || got[1] != want[1])) {
        close(fd);
        fd = -1;
    }
    return fd;
}

smelt_status rt_cache_publish(const rt_cache *c, const char *tmp, const char *name, int *fd_out)
{
    *fd_out = -1;
    int fd = openat(c->dfd, tmp, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
        fchmod(fd, 0600) != 0) {
        smelt_status s = diag_fail(SMELT_ERR_IO, "cannot secure the cache entry '%s/%s': %s",
                                   c->dir, tmp, strerror(errno ? errno : EPERM));
        if (fd >= 0) close(fd);
        return s;
    }
    char hex[2 * SHA256_BYTES + 1];
    if (!digest_fd(fd, hex, NULL)) {
        close(fd);
        return diag_fail(SMELT_ERR_IO, "cannot read back the cache entry '%s/%s': %s", c->dir,
                         tmp, strerror(errno));
    }
    /* The digest goes into place before the object: a reader that finds the
     * new object finds its digest too (or, in a race with another writer of
     * the same key, a mismatch, and rebuilds). */
    char dtmp[RT_CACHE_PATH_CAP], dname[RT_CACHE_PATH_CAP];
    snprintf(dtmp, sizeof dtmp, "%s%s", tmp, DIGEST_SUFFIX);
    snprintf(dname, sizeof dname, "%s%s", name, DIGEST_SUFFIX);
    int wfd = openat(c->dfd, dtmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    bool ok = wfd >= 0 && write(wfd, hex, 2 * SHA256_BYTES) == 2 * SHA256_BYTES;
    if (wfd >= 0) ok &= close(wfd) == 0;
    ok = ok && renameat(c->dfd, dtmp, c->dfd, dname) == 0;
    ok = ok && renameat(c->dfd, tmp, c->dfd, name) == 0;
    if (!ok) {
        smelt_status s = diag_fail(SMELT_ERR_IO, "cannot write the cache entry '%s/%s': %s",
                                   c->dir, name, strerror(errno));
        unlinkat(c->dfd, dtmp, 0);
        close(fd);
        return s;
    }
    *fd_out = fd;
    return SMELT_OK;
}

/* ---- whole entries with their digest inside ------------------------------------------------ */

void *rt_cache_map(const rt_cache *c, const char *name, size_t *size)
{
    int fd = open_private_file(c->dfd, name);
    if (fd < 0) return NULL;
    struct stat st;
    void *m = MAP_FAILED;
    if (fstat(fd, &st) == 0 && st.st_size > 0 && (uint64_t)st.st_size <= SIZE_MAX)
        m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED) return NULL;
    *size = (size_t)st.st_size;
    return m;
}

static bool write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        p += n;
        len -= (size_t)n;
    }
    return true;
}

smelt_status rt_cache_put(const rt_cache *c, const char *name, const struct iovec *parts, int n_parts)
{
    char tmp[RT_CACHE_PATH_CAP + 128];
    snprintf(tmp, sizeof tmp, "%s/%s-XXXXXX", c->dir, name);
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) return diag_fail(SMELT_ERR_IO, "cannot create a file in the cache '%s': %s", c->dir, strerror(errno));
    bool ok = fchmod(fd, 0600) == 0;
    for (int i = 0; ok && i < n_parts; i++) ok = write_all(fd, parts[i].iov_base, parts[i].iov_len);
    ok &= close(fd) == 0;
    const char *base = strrchr(tmp, '/') + 1;
    ok = ok && renameat(c->dfd, base, c->dfd, name) == 0;
    if (!ok) {
        smelt_status s = diag_fail(SMELT_ERR_IO, "cannot write the cache entry '%s/%s': %s", c->dir, name, strerror(errno));
        unlinkat(c->dfd, base, 0);
        return s;
    }
    return SMELT_OK;
}

typedef struct aged {
    char name[256];
    int64_t bytes;
    struct timespec mtime;
} aged;

static int by_age(const void *a, const void *b)
{
    const struct timespec *x = &((const aged *)a)->mtime, *y = &((const aged *)b)->mtime;
    if (x->tv_sec != y->tv_sec) return x->tv_sec < y->tv_sec ? -1 : 1;
    return x->tv_nsec < y->tv_nsec ? -1 : x->tv_nsec > y->tv_nsec;
}

void rt_cache_prune(const rt_cache *c, const char *suffix, int64_t max_bytes, const char *keep)
{
    int dfd = dup(c->dfd);
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!d) {
        if (dfd >= 0) close(dfd);
        return;
    }
    rewinddir(d); /* the duplicate shares the directory's offset, where an earlier scan left it */
    aged *e = NULL;
    int n = 0, cap = 0;
    int64_t total = 0;
    size_t sl = strlen(suffix);
    for (struct dirent *x; (x = readdir(d));) {
        size_t l = strlen(x->d_name);
        struct stat st;
        if (l <= sl || l >= sizeof e->name || strcmp(x->d_name + l - sl, suffix) != 0 ||
            fstatat(c->dfd, x->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (n == cap) {
            aged *bigger = realloc(e, sizeof *e * (size_t)(cap = cap ? 2 * cap : 32));
            if (!bigger) break;
            e = bigger;
        }
        snprintf(e[n].name, sizeof e[n].name, "%s", x->d_name);
        e[n].bytes = (int64_t)st.st_size;
        e[n].mtime = st.st_mtim;
        total += e[n++].bytes;
    }
    closedir(d);
    if (total > max_bytes && n > 0) {
        qsort(e, (size_t)n, sizeof *e, by_age);
        for (int i = 0; i < n && total > max_bytes; i++) {
            if (keep && !strcmp(e[i].name, keep)) continue;
            if (unlinkat(c->dfd, e[i].name, 0) == 0) total -= e[i].bytes;
        }
    }
    free(e);
}

/* ---- device builds (rt/device.h) ------------------------------------------------------------ */

void rt_cache_key(char key[33], const char *const *parts, const size_t *lens, int n)
{
    /* The user is part of every key, so no two users ever share an entry name
     * even in a directory they both can read. */
    unsigned long uid = (unsigned long)geteuid();
    uint64_t h[2] = {HASH_SEED, HASH_SEED ^ 0x9e3779b97f4a7c15ull};
    for (int k = 0; k < 2; k++) {
        h[k] = hash_bytes(h[k], &uid, sizeof uid);
        for (int i = 0; i < n; i++) {
            h[k] = hash_bytes(h[k], &lens[i], sizeof lens[i]);
            h[k] = hash_bytes(h[k], parts[i], lens[i]);
        }
    }
    snprintf(key, 33, "%016llx%016llx", (unsigned long long)h[0], (unsigned long long)h[1]);
}

void *rt_cache_read(const char *key, const char *suffix, size_t *len)
{
    rt_cache c;
    if (rt_cache_open(&c) != SMELT_OK) {
        diag_clear();
        return NULL;
    }
    char name[96];
    snprintf(name, sizeof name, "%s%s", key, suffix);
    size_t size = 0;
    int fd = rt_cache_open_verified(&c, name, &size);
    rt_cache_close(&c);
    if (fd < 0) return NULL;
    char *buf = size ? malloc(size + 1) : NULL;
    size_t got = 0;
    while (buf && got < size) {
        ssize_t n = read(fd, buf + got, size - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += (size_t)n;
    }
    close(fd);
    if (!buf || got != size) {
        free(buf);
        return NULL;
    }
    buf[size] = 0;
    *len = size;
    return buf;
}

void rt_cache_write(const char *key, const char *suffix, const void *data, size_t len)
{
    rt_cache c;
    if (rt_cache_open(&c) != SMELT_OK) {
        diag_clear();
        return;
    }
    char tmp[RT_CACHE_PATH_CAP + 128], name[96];
    snprintf(name, sizeof name, "%s%s", key, suffix);
    snprintf(tmp, sizeof tmp, "%s/%s-XXXXXX", c.dir, name);
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd >= 0) {
        const char *base = strrchr(tmp, '/') + 1;
        const char *p = data;
        size_t left = len;
        bool ok = true;
        while (ok && left) {
            ssize_t n = write(fd, p, left);
            if (n < 0 && errno == EINTR) continue;
            ok = n > 0;
            if (ok) p += n, left -= (size_t)n;
        }
        ok &= close(fd) == 0;
        int out = -1;
        if (!ok || rt_cache_publish(&c, base, name, &out) != SMELT_OK) {
            diag_clear(); /* the cache is an optimisation: a failed write is not an error */
            unlinkat(c.dfd, base, 0);
        }
        if (out >= 0) close(out);
    }
    rt_cache_close(&c);
}
