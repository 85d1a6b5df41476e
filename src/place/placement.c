/*
 * placement.c — placement policies and overrides (place/placement.h).
 */
#include "place/placement.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The index in d of the device named s[0, n) ("opencl" is "opencl:0"), or -1. */
static int device_named(const place_devices *d, const char *s, size_t n)
{
    char one[40];
    if (n >= sizeof one) return -1;
    memcpy(one, s, n);
    one[n] = 0;
    place_devices tmp;
    if (strchr(one, ',') || place_devices_parse(one, &tmp)) {
        diag_clear();
        return -1;
    }
    for (int i = 0; i < d->n; i++)
        if (strcmp(d->dev[i].spec, tmp.dev[0].spec) == 0) return i;
    return -1;
}

static void list_devices(const place_devices *d, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = 0;
    for (int i = 0; i < d->n && len < cap; i++) len += (size_t)snprintf(buf + len, cap - len, "%s%s", i ? ", " : "", d->dev[i].spec);
}

/* `split:W0:W1:...`: one positive integer weight per device of d. */
static smelt_status parse_split_weights(const char *text, const place_devices *d, place_policy *out)
{
    const char *p = text + 5;
    int n = 0;
    while (*p == ':') {
        char *end;
        long w = strtol(p + 1, &end, 10);
        if (end == p + 1 || w <= 0 || w > 1000000 || n == d->n) break;
        out->split_weight[n++] = (int)w;
        p = end;
    }
    if (*p || n != d->n)
        return diag_fail(SMELT_ERR_INVALID_ARG, "placement '%.80s': split weights are one positive integer per device (%d here), as split:3:1",
                         text, d->n);
    return SMELT_OK;
}

smelt_status place_policy_parse(const char *text, const place_devices *d, place_policy *out)
{
    memset(out, 0, sizeof *out);
    out->star = -1;
    if (!text || !*text || strcmp(text, "fallback") == 0) return SMELT_OK;
    if (strcmp(text, "cost") == 0 || strcmp(text, "cost:table") == 0) {
        out->kind = PLACE_COST;
        out->cost_table = text[4] == ':';
        return SMELT_OK;
    }
    size_t head = strcspn(text, ","); /* a policy word, then overrides: `cost,Conv=opencl` */
    if (strncmp(text, "split", 5) == 0 && (text[5] == 0 || text[5] == ':' || text[5] == ',')) {
        if (text[head])
            return diag_fail(SMELT_ERR_INVALID_ARG,
                             "placement '%.80s': split runs each batch share whole on one device, so no override (%.40s) can move a "
                             "region of it; give split alone, or overrides with fallback or cost ('cost,%.40s')",
                             text, text + head + 1, text + head + 1);
        out->kind = PLACE_SPLIT;
        return text[5] ? parse_split_weights(text, d, out) : SMELT_OK;
    }
    const char *p = text;
    if (!memchr(text, '=', head)) {
        if ((head == 4 && strncmp(text, "cost", 4) == 0) || (head == 10 && strncmp(text, "cost:table", 10) == 0)) {
            out->kind = PLACE_COST;
            out->cost_table = head == 10;
        } else if (!(head == 8 && strncmp(text, "fallback", 8) == 0))
            return diag_fail(SMELT_ERR_INVALID_ARG,
                             "unknown placement '%.80s' (fallback, split, split:W0:W1..., cost, cost:table, or overrides such as 'Conv=opencl:0,*=cpu', "
                             "after fallback or cost as 'cost,Conv=opencl')",
                             text);
        p = text + head + 1;
        if (!*p) return diag_fail(SMELT_ERR_INVALID_ARG, "placement '%.80s' ends in a comma", text);
    }
    while (*p) {
        size_t n = strcspn(p, ",");
        const char *eq = memchr(p, '=', n);
        if (!eq || eq == p || eq + 1 == p + n)
            return diag_fail(SMELT_ERR_INVALID_ARG, "placement override '%.*s' is not KEY=DEVICE (a policy word goes first: 'cost,Conv=opencl')",
                             (int)(n < 80 ? n : 80), p);
        size_t kl = (size_t)(eq - p);
        int dev = device_named(d, eq + 1, n - kl - 1);
        if (dev < 0) {
            char devs[200];
            list_devices(d, devs, sizeof devs);
            return diag_fail(SMELT_ERR_INVALID_ARG, "placement override '%.*s' names no device of the list (%s)",
                             (int)(n < 80 ? n : 80), p, devs);
        }
        if (kl == 1 && *p == '*') {
            out->star = dev;
        } else {
            if (out->n_over == PLACE_MAX_OVERRIDES || kl >= sizeof out->over[0].key)
                return diag_fail(SMELT_ERR_INVALID_ARG, "placement: more than %d overrides, or a key over %d characters",
                                 PLACE_MAX_OVERRIDES, (int)sizeof out->over[0].key - 1);
            place_override *o = &out->over[out->n_over++];
            memcpy(o->key, p, kl);
            o->key[kl] = 0;
            o->device = dev;
        }
        p += n;
        if (*p == ',') p++;
    }
    return SMELT_OK;
}

static bool is_op_name(const char *key)
{
    for (int o = 0; o < OP_COUNT; o++)
        if (strcmp(op_get((op_id)o)->name, key) == 0) return true;
    return false;
}

smelt_status place_policy_check(const place_policy *pol, const ir_graph *g)
{
    for (int i = 0; i < pol->n_over; i++) {
        bool found = is_op_name(pol->over[i].key);
        for (int n = 0; n < g->n_nodes && !found; n++) found = g->nodes[n].name && strcmp(g->nodes[n].name, pol->over[i].key) == 0;
        if (!found)
            return diag_fail(SMELT_ERR_INVALID_ARG, "placement override '%s': no op type and no node of the model has that name",
                             pol->over[i].key);
    }
    return SMELT_OK;
}

int place_region_override(const place_policy *pol, const ir_graph *g, const fuse_region *r)
{
    for (int i = 0; i < pol->n_over; i++)
        for (int k = 0; k < r->n_nodes; k++) {
            const char *name = g->nodes[r->nodes[k]].name;
            if (name && strcmp(name, pol->over[i].key) == 0) return pol->over[i].device;
        }
    const char *root_op = op_get(g->nodes[r->root].op)->name;
    for (int i = 0; i < pol->n_over; i++)
        if (strcmp(root_op, pol->over[i].key) == 0) return pol->over[i].device;
    return pol->star;
}

int place_region_candidates(const place_policy *pol, const place_devices *d, const ir_graph *g, const fuse_region *r, int ri,
                            int cand[PLACE_MAX_DEVICES])
{
    int n = 0, first = place_region_override(pol, g, r);
    if (first < 0 && pol->assign) first = pol->assign[ri];
    if (first >= 0) cand[n++] = first;
    for (int i = 0; i < d->n; i++)
        if (i != first) cand[n++] = i;
    return n;
}
