/*
 * device.c — device names, opening a device by name, and the on-disk cache
 * that device builds share with the CPU's shared objects (rt/device.h).
 */
#include "rt/device.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/diag.h"
#include "core/hash.h"
#include "rt/rt.h"

static const rt_device_ops *const kinds[] = {&rt_cpu_ops, &rt_opencl_ops, &rt_cuda_ops};
#define N_KINDS ((int)(sizeof kinds / sizeof kinds[0]))

/* spec[0, len) as kind and index; NULL when it names no known kind. */
static const rt_device_ops *parse(const char *spec, size_t len, int *index)
{
    *index = 0;
    for (int i = 0; i < N_KINDS; i++) {
        size_t n = strlen(kinds[i]->kind);
        if (len < n || strncmp(spec, kinds[i]->kind, n) != 0) continue;
        if (len == n) return kinds[i];
        if (spec[n] != ':' || len == n + 1 || len > n + 6) continue;
        int v = 0;
        for (size_t j = n + 1; j < len; j++) {
            if (spec[j] < '0' || spec[j] > '9') return NULL;
            v = v * 10 + (spec[j] - '0');
        }
        *index = v;
        return kinds[i];
    }
    return NULL;
}

bool rt_device_name_ok(const char *spec, size_t len)
{
    int index;
    return parse(spec, len, &index) != NULL;
}

smelt_status rt_device_open(const char *spec, int threads, rt_device **out)
{
    *out = NULL;
    int index;
    const rt_device_ops *ops = parse(spec, strlen(spec), &index);
    if (!ops)
        return diag_fail(SMELT_ERR_DEVICE, "unknown device '%.64s' (known: cpu, opencl, opencl:N, cuda, cuda:N)", spec);
    return ops->open(index, threads, out);
}

void rt_cache_key(char key[33], const char *const *parts, const size_t *lens, int n)
{
    uint64_t h[2] = {HASH_SEED, HASH_SEED ^ 0x9e3779b97f4a7c15ull};
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < n; i++) {
            h[k] = hash_bytes(h[k], &lens[i], sizeof lens[i]);
            h[k] = hash_bytes(h[k], parts[i], lens[i]);
        }
    snprintf(key, 33, "%016llx%016llx", (unsigned long long)h[0], (unsigned long long)h[1]);
}

static bool cache_path(const char *key, const char *suffix, char *path, size_t cap)
{
    char dir[3072];
    if (!rt_cache_dir(dir, sizeof dir)) return false;
    int n = snprintf(path, cap, "%s/%s%s", dir, key, suffix);
    return n > 0 && (size_t)n < cap;
}

void *rt_cache_read(const char *key, const char *suffix, size_t *len)
{
    char path[4096];
    if (!cache_path(key, suffix, path, sizeof path)) return NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (n > 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1)) &&
        fread(buf, 1, (size_t)n, f) == (size_t)n) {
        buf[n] = 0;
        *len = (size_t)n;
    } else {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    return buf;
}

void rt_cache_write(const char *key, const char *suffix, const void *data, size_t len)
{
    char path[4096], dir[3072], tmp[4200];
    if (!cache_path(key, suffix, path, sizeof path) || !rt_cache_dir(dir, sizeof dir)) return;
    /* The CPU's cc.c creates the directory; do the same here, one level. */
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) return;
    snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) return;
    bool ok = fwrite(data, 1, len, f) == len;
    ok &= fclose(f) == 0;
    if (!ok || rename(tmp, path) != 0) unlink(tmp);
}
