/*
 * device.c — device names and opening a device by name (rt/device.h); the
 * on-disk cache that device builds share with the CPU is rt/cache.c.
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

