/*
 * devices.c — device lists and target classes (place/devices.h).
 */
#include "place/devices.h"

#include <stdio.h>
#include <string.h>

static const struct {
    const char *name;
    place_kind kind;
    const target_info *target;
} kinds[] = {{"cpu", PLACE_CPU, &target_cpu}, {"opencl", PLACE_OPENCL, &target_opencl}, {"cuda", PLACE_CUDA, &target_cuda}};
_Static_assert(sizeof kinds / sizeof kinds[0] == PLACE_KIND_COUNT, "a row per device kind");

const char *place_kind_name(place_kind k) { return (unsigned)k < PLACE_KIND_COUNT ? kinds[k].name : "?"; }

/* s[0, n) as kind[:index]; false when it is neither. */
static bool parse_one(const char *s, size_t n, place_device *d)
{
    for (int k = 0; k < PLACE_KIND_COUNT; k++) {
        size_t kl = strlen(kinds[k].name);
        if (n < kl || strncmp(s, kinds[k].name, kl) != 0) continue;
        int index = 0;
        if (n > kl) {
            if (s[kl] != ':' || n == kl + 1 || n > kl + 4) return false;
            for (size_t j = kl + 1; j < n; j++) {
                if (s[j] < '0' || s[j] > '9') return false;
                index = index * 10 + (s[j] - '0');
            }
        }
        memset(d, 0, sizeof *d);
        d->kind = kinds[k].kind;
        d->index = index;
        d->target = *kinds[k].target;
        snprintf(d->spec, sizeof d->spec, "%s:%d", kinds[k].name, index);
        snprintf(d->ident, sizeof d->ident, "%s", kinds[k].name);
        return true;
    }
    return false;
}

smelt_status place_devices_parse(const char *list, place_devices *out)
{
    memset(out, 0, sizeof *out);
    const char *p = list && *list ? list : "cpu";
    for (;;) {
        size_t n = strcspn(p, ",");
        place_device d;
        if (n == 0) return diag_fail(SMELT_ERR_DEVICE, "device list '%.80s' has an empty entry", list);
        if (!parse_one(p, n, &d))
            return diag_fail(SMELT_ERR_DEVICE, "device '%.*s' is not known (devices: cpu, cpu:N, opencl, opencl:N, cuda, cuda:N)",
                             (int)(n < 64 ? n : 64), p);
        for (int i = 0; i < out->n; i++)
            if (strcmp(out->dev[i].spec, d.spec) == 0)
                return diag_fail(SMELT_ERR_DEVICE, "device '%s' is named twice in '%.80s'", d.spec, list);
        if (out->n == PLACE_MAX_DEVICES)
            return diag_fail(SMELT_ERR_DEVICE, "more than %d devices in '%.80s'", PLACE_MAX_DEVICES, list);
        out->dev[out->n++] = d;
        p += n;
        if (!*p) break;
        p++;
        if (!*p) return diag_fail(SMELT_ERR_DEVICE, "device list '%.80s' has an empty entry", list);
    }
    place_classes(out);
    return SMELT_OK;
}

/* The same code comes out for a and b: same emitter and every input the
 * lowerings and the device compiler read. */
static bool compatible(const place_device *a, const place_device *b)
{
    const target_info *x = &a->target, *y = &b->target;
    return a->kind == b->kind && strcmp(x->name, y->name) == 0 && x->vector_width == y->vector_width &&
           x->wg_size == y->wg_size && x->smem_limit == y->smem_limit && x->max_wg == y->max_wg && x->locals == y->locals &&
           x->stream_min_bytes == y->stream_min_bytes && x->host_memory == y->host_memory && strcmp(a->ident, b->ident) == 0;
}

static int find(int *parent, int i)
{
    while (parent[i] != i) i = parent[i] = parent[parent[i]];
    return i;
}

void place_classes(place_devices *d)
{
    int parent[PLACE_MAX_DEVICES];
    for (int i = 0; i < d->n; i++) parent[i] = i;
    for (int i = 0; i < d->n; i++)
        for (int j = 0; j < i; j++)
            if (compatible(&d->dev[i], &d->dev[j])) {
                int a = find(parent, i), b = find(parent, j);
                if (a != b) parent[a > b ? a : b] = a < b ? a : b; /* the earlier device is the root */
            }
    int cls_of_root[PLACE_MAX_DEVICES];
    for (int i = 0; i < d->n; i++) cls_of_root[i] = -1;
    d->n_classes = 0;
    for (int i = 0; i < d->n; i++) {
        int r = find(parent, i);
        if (cls_of_root[r] < 0) {
            cls_of_root[r] = d->n_classes;
            d->class_first[d->n_classes++] = i;
        }
        d->dev[i].cls = cls_of_root[r];
    }
}

/* A positive byte count s[0, n), or -1. */
static long long parse_bytes(const char *s, size_t n)
{
    long long v = 0;
    if (n == 0 || n > 12) return -1;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v > 0 ? v : -1;
}

void place_device_fit_wg(place_device *x, int max_wg)
{
    if (max_wg > 0) {
        x->target.max_wg = max_wg;
        while (x->target.wg_size > max_wg && x->target.wg_size > 1) x->target.wg_size /= 2;
    }
}

/* Lower device x's limit `which` (0: workgroup memory, 1: threads per
 * workgroup) to `v`, where it has one. Its lowerings' own workgroup size
 * follows the thread limit down (a power of two: the reductions halve it). */
static void lower_limit(place_device *x, int which, long long v)
{
    target_info *t = &x->target;
    if (which == 0) {
        if (t->smem_limit > 0 && v < t->smem_limit) t->smem_limit = v;
        return;
    }
    if (t->max_wg > 0 && v < t->max_wg) place_device_fit_wg(x, (int)v);
}

static smelt_status limit(place_devices *d, int which, const char *limits)
{
    const char *what = which ? "workgroup-size limit" : "workgroup-memory limit";
    if (!limits || !*limits) return SMELT_OK;
    if (!strchr(limits, '=')) {
        long long v = parse_bytes(limits, strlen(limits));
        if (v < 0) return diag_fail(SMELT_ERR_INVALID_ARG, "%s '%.80s' is neither N nor DEVICE=N,...", what, limits);
        for (int i = 0; i < d->n; i++) lower_limit(&d->dev[i], which, v);
        return SMELT_OK;
    }
    for (const char *p = limits; *p;) {
        size_t n = strcspn(p, ",");
        const char *eq = memchr(p, '=', n);
        place_device one;
        long long v = eq ? parse_bytes(eq + 1, n - (size_t)(eq + 1 - p)) : -1;
        if (!eq || v < 0 || !parse_one(p, (size_t)(eq - p), &one))
            return diag_fail(SMELT_ERR_INVALID_ARG, "%s '%.*s' is not DEVICE=N (as opencl:0=%s)", what, (int)(n < 80 ? n : 80), p,
                             which ? "128" : "1024");
        for (int i = 0; i < d->n; i++)
            if (strcmp(d->dev[i].spec, one.spec) == 0) lower_limit(&d->dev[i], which, v);
        p += n;
        if (*p == ',') p++;
    }
    return SMELT_OK;
}

smelt_status place_devices_limit_smem(place_devices *d, const char *limits) { return limit(d, 0, limits); }

smelt_status place_devices_limit_wg(place_devices *d, const char *limits) { return limit(d, 1, limits); }
