/*
 * transfers.c — the command list over placed kernels (plan_commands_place,
 * plan/commands.h): dispatches, barriers per device, and the copies that
 * move exactly the byte ranges a consumer reads onto its device.
 *
 * Which bytes are where: per root slot, a sorted list of disjoint byte
 * segments, each with the device that last wrote it and the set of devices
 * (and the host) that hold those bytes now. A dispatch's write makes its
 * device the only holder of the range; its read copies in the parts its
 * device does not hold, from their writer, and adds the device to their
 * holders.
 *
 * A copy between two devices is two halves through the program's staging
 * bytes, joined by an event (commands.h): the source's half and its signal
 * inserted right after the command that last wrote those bytes (each
 * segment records it), behind a host barrier on the source only, so the
 * copy starts as soon as its producer is done even where the source has more
 * kernels listed before the consumer; the destination's half where the
 * consumer needs it, after a wait on the destination only.
 */
#include <stdlib.h>
#include <string.h>

#include "core/diag.h"
#include "graph/passes.h"
#include "plan/commands.h"

typedef struct seg {
    int64_t lo, hi;
    int writer;     /* PLAN_HOST or a device */
    int cmd;        /* the command that wrote it (-1: none, the caller's or a constant) */
    unsigned holds; /* bit 0: the host; bit d + 1: device d */
} seg;

typedef struct segs {
    seg *v;
    int n, cap;
} segs;

typedef struct builder {
    plan_commands *c;
    const mem_plan *m;
    const plan_devices *pd;
    segs *at;        /* per slot (roots only) */
    bool pending[PLAN_MAX_DEVICES]; /* dispatched since its last host barrier */
    bool *touched;   /* [device * n_slots + root] */
    int cap_cmds;
    bool oom;
} builder;

static unsigned bit(int device) { return 1u << (unsigned)(device + 1); }

static seg *seg_insert(builder *b, segs *s, int at, seg x)
{
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 4;
        seg *v = realloc(s->v, sizeof(seg) * (size_t)cap);
        if (!v) {
            b->oom = true;
            return NULL;
        }
        s->v = v;
        s->cap = cap;
    }
    memmove(s->v + at + 1, s->v + at, sizeof(seg) * (size_t)(s->n - at));
    s->v[at] = x;
    s->n++;
    return &s->v[at];
}

/* A segment boundary at x (where a segment spans it). */
static void seg_split(builder *b, segs *s, int64_t x)
{
    for (int i = 0; i < s->n; i++)
        if (s->v[i].lo < x && x < s->v[i].hi) {
            seg right = s->v[i];
            right.lo = x;
            s->v[i].hi = x;
            seg_insert(b, s, i + 1, right);
            return;
        }
}

/* [lo, hi) of s now written by `device` alone. */
static void seg_write(builder *b, segs *s, int64_t lo, int64_t hi, int device)
{
    seg_split(b, s, lo);
    seg_split(b, s, hi);
    int w = 0, at = -1;
    for (int i = 0; i < s->n; i++) {
        if (s->v[i].lo >= lo && s->v[i].hi <= hi) {
            if (at < 0) at = w;
            continue;
        }
        if (at < 0 && s->v[i].lo >= hi) at = w;
        s->v[w++] = s->v[i];
    }
    s->n = w;
    seg_insert(b, s, at < 0 ? w : at, (seg){lo, hi, device, b->c->n_cmds - 1, device == PLAN_HOST ? 1u : bit(device)});
}

/* A new command at index `at` (the commands from there on move up one, and
 * so do the segments' records of them); NULL (b->oom set) when out of memory. */
static plan_cmd *push_at(builder *b, int at, plan_cmd_kind kind)
{
    plan_commands *c = b->c;
    if (c->n_cmds == b->cap_cmds) {
        int cap = b->cap_cmds ? 2 * b->cap_cmds : 64;
        plan_cmd *v = realloc(c->cmds, sizeof(plan_cmd) * (size_t)cap);
        if (!v) {
            b->oom = true;
            return NULL;
        }
        c->cmds = v;
        b->cap_cmds = cap;
    }
    if (at < c->n_cmds) {
        memmove(c->cmds + at + 1, c->cmds + at, sizeof(plan_cmd) * (size_t)(c->n_cmds - at));
        for (int r = 0; r < b->m->n_slots; r++)
            for (int i = 0; i < b->at[r].n; i++)
                if (b->at[r].v[i].cmd >= at) b->at[r].v[i].cmd++;
    }
    c->n_cmds++;
    plan_cmd *x = &c->cmds[at];
    memset(x, 0, sizeof *x);
    x->kind = kind;
    x->kernel = x->first_arg = x->first_range = x->node = x->child = x->event = -1;
    x->stage = -1;
    c->count[kind]++;
    return x;
}

static plan_cmd *push(builder *b, plan_cmd_kind kind) { return push_at(b, b->c->n_cmds, kind); }

static void host_barrier(builder *b, int device)
{
    if (!b->pending[device]) return;
    plan_cmd *x = push(b, PLAN_CMD_BARRIER);
    if (!x) return;
    x->device = device;
    x->host = true;
    b->pending[device] = false;
}

static void touch(builder *b, int device, int root)
{
    if (device >= 0) b->touched[(size_t)device * (size_t)b->m->n_slots + (size_t)root] = true;
}

/* One copy command on `device` at index `at`; `stage` as in plan_cmd. */
static void push_half(builder *b, int at, int device, int src, int dst, int root, int64_t lo, int64_t hi, int64_t stage)
{
    plan_cmd *x = push_at(b, at, PLAN_CMD_COPY);
    if (!x) return;
    x->device = device;
    x->src_device = src;
    x->dst_device = dst;
    x->src = (plan_range){root, lo, hi, true, false};
    x->dst = (plan_range){root, lo, hi, false, true};
    x->stage = stage;
}

static void push_event(builder *b, int at, plan_cmd_kind kind, int device, int event)
{
    plan_cmd *x = push_at(b, at, kind);
    if (!x) return;
    x->device = device;
    x->event = event;
}

/* A copy; between two devices, the source's half and a signal right after
 * `after` (the last command that wrote the bytes; -1: none), behind a host
 * barrier on the source, so it starts as soon as its producer is done, then
 * the destination's half where the consumer needs it, after a host barrier
 * there and a wait for the signal. */
static void push_copy(builder *b, int src, int dst, int root, int64_t lo, int64_t hi, int after)
{
    plan_commands *c = b->c;
    c->copy_bytes += hi - lo;
    touch(b, src, root);
    touch(b, dst, root);
    if (src == PLAN_HOST || dst == PLAN_HOST) {
        push_half(b, c->n_cmds, src == PLAN_HOST ? dst : src, src, dst, root, lo, hi, -1);
        return;
    }
    int64_t stage = c->stage_bytes;
    int event = c->n_events++;
    c->stage_bytes += (hi - lo + PLAN_ALIGN - 1) / PLAN_ALIGN * PLAN_ALIGN;
    c->n_transfers++;
    c->transfer_bytes += hi - lo;
    int at = after + 1;
    bool later = false; /* a command on the source after `after` */
    for (int i = at; i < c->n_cmds && !later; i++) later = c->cmds[i].device == src;
    if (!later) { /* nothing after it on the source: at the end, as its last host barrier */
        host_barrier(b, src);
        at = c->n_cmds;
    } else {
        plan_cmd *x = push_at(b, at++, PLAN_CMD_BARRIER);
        if (x) x->device = src, x->host = true;
    }
    push_half(b, at, src, src, PLAN_HOST, root, lo, hi, stage);
    push_event(b, at + 1, PLAN_CMD_SIGNAL, src, event);
    host_barrier(b, dst);
    push_event(b, c->n_cmds, PLAN_CMD_WAIT, dst, event);
    push_half(b, c->n_cmds, dst, PLAN_HOST, dst, root, lo, hi, stage);
}

/* Bring bytes [lo, hi) of root onto `device` (PLAN_HOST: the host): copy
 * each run of segments it lacks from their writer, adjacent runs with the
 * same writer as one copy. Bytes no segment covers were never written. */
static void seg_read(builder *b, int root, int64_t lo, int64_t hi, int device)
{
    segs *s = &b->at[root];
    seg_split(b, s, lo);
    seg_split(b, s, hi);
    unsigned want = device == PLAN_HOST ? 1u : bit(device);
    int64_t run_lo = 0, run_hi = 0;
    int run_src = -2, run_cmd = -1;
    for (int i = 0; i <= s->n; i++) {
        seg *x = i < s->n ? &s->v[i] : NULL;
        bool need = x && x->lo >= lo && x->hi <= hi && !(x->holds & want);
        int src = need ? x->writer : -2;
        if (run_src != -2 && (!need || src != run_src || x->lo != run_hi)) {
            push_copy(b, run_src, device, root, run_lo, run_hi, run_cmd);
            run_src = -2;
        }
        if (!need) continue;
        if (run_src == -2) {
            run_src = src;
            run_lo = x->lo;
            run_cmd = -1;
        }
        if (x->cmd > run_cmd) run_cmd = x->cmd;
        run_hi = x->hi;
        x->holds |= want;
    }
}

/* A barrier on a device where plan_barriers put one between two of its
 * kernels (some kernel in (its last dispatch, i] comes after a barrier),
 * unless a host barrier there since has ordered them already. */
static void dispatch_barrier(builder *b, int i, int device, const int *last)
{
    const mem_plan *m = b->m;
    bool need = false;
    if (last[device] >= 0 && b->pending[device]) {
        if (!m->barrier_before) need = true;
        for (int k = last[device] + 1; k <= i && !need; k++) need = m->barrier_before[k];
    }
    plan_cmd *x = need ? push(b, PLAN_CMD_BARRIER) : NULL;
    if (x) x->device = device;
}

/* The device whose memory holds bytes [0, bytes) of root whole and is the
 * host's, or PLAN_HOST when the host holds them, or -2. */
static int whole_holder(const builder *b, int root, int64_t bytes)
{
    const segs *s = &b->at[root];
    for (int d = PLAN_HOST; d < b->pd->n; d++) {
        if (d >= 0 && !b->pd->host_memory[d]) continue;
        unsigned want = d == PLAN_HOST ? 1u : bit(d);
        int64_t covered = 0;
        for (int i = 0; i < s->n && covered >= 0; i++)
            covered = s->v[i].lo == covered && (s->v[i].holds & want) ? s->v[i].hi : -1;
        if (covered >= bytes) return d;
    }
    return -2;
}

/* The if/loop command of the run-time control node whose placeholder is
 * kernel i, on `device`: what the node reads is brought onto the device,
 * the host waits for it (it reads the condition and trip count, and the
 * child programs run on the device), and the command writes its outputs
 * whole; it finishes before the next command starts. */
static void push_control(builder *b, const ir_graph *g, const lower_program *lp, int i, int device, int *n_arg, int *n_range)
{
    plan_commands *c = b->c;
    const mem_plan *m = b->m;
    int node = lp->kernel_node[i], first_arg = *n_arg, first_range = *n_range;
    const ir_node *n = &g->nodes[node];
    for (int a = 0; a < n->n_in + n->n_out; a++) {
        bool in = a < n->n_in;
        int t = in ? n->in[a] : n->out[a - n->n_in];
        if (t >= 0 && m->slots[plan_root(m, t)].kind == PLAN_NONE) t = -1;
        c->args[(*n_arg)++] = t;
        if (t >= 0) c->ranges[(*n_range)++] = (plan_range){t, 0, m->slots[plan_root(m, t)].bytes, in, !in};
    }
    for (int r = first_range; r < *n_range; r++)
        if (c->ranges[r].read) seg_read(b, plan_root(m, c->ranges[r].slot), c->ranges[r].lo, c->ranges[r].hi, device);
    b->pending[device] = true; /* always a host barrier before it, even after no dispatch */
    host_barrier(b, device);
    plan_cmd *x = push(b, n->op == OP_If ? PLAN_CMD_IF : PLAN_CMD_LOOP);
    if (!x) return;
    x->device = device;
    x->kernel = i;
    x->node = node;
    x->child = c->n_children;
    c->n_children += n->op == OP_If ? 2 : 1;
    x->first_arg = first_arg;
    x->n_args = n->n_in + n->n_out;
    x->first_range = first_range;
    x->n_ranges = *n_range - first_range;
    for (int r = first_range; r < *n_range; r++) {
        int root = plan_root(m, c->ranges[r].slot);
        touch(b, device, root);
        if (c->ranges[r].write) seg_write(b, &b->at[root], c->ranges[r].lo, c->ranges[r].hi, device);
    }
}

static smelt_status build(builder *b, const ir_graph *g, const struct fuse_plan *fp, const lower_program *lp)
{
    plan_commands *c = b->c;
    const mem_plan *m = b->m;
    const plan_devices *pd = b->pd;
    unsigned all = 1u;
    for (int d = 0; d < pd->n; d++) all |= bit(d);
    for (int s = 0; s < m->n_slots; s++) {
        const plan_slot *x = &m->slots[s];
        if (x->alias >= 0 || x->bytes <= 0) continue;
        unsigned holds = 0;
        if (x->kind == PLAN_CONST) holds = all;
        if (x->kind == PLAN_INPUT) {
            holds = 1u;
            for (int d = 0; d < pd->n; d++)
                if (pd->host_memory[d]) holds |= bit(d);
        }
        if (holds && !seg_insert(b, &b->at[s], 0, (seg){0, x->bytes, PLAN_HOST, -1, holds})) break;
    }
    int last[PLAN_MAX_DEVICES], n_arg = 0, n_range = 0;
    for (int d = 0; d < PLAN_MAX_DEVICES; d++) last[d] = -1;
    for (int i = 0; i < lp->n_kernels && !b->oom; i++) {
        const kir_kernel *k = lp->kernels[i];
        bool control = k->n_workgroups <= 0 && control_is_runtime(&g->nodes[lp->kernel_node[i]]);
        if (k->n_workgroups <= 0 && !control) continue;
        int dev = pd->kernel_device ? pd->kernel_device[i] : 0;
        if (dev < 0 || dev >= pd->n) return diag_fail(SMELT_ERR_INTERNAL, "commands: kernel %d placed on device %d of %d", i, dev, pd->n);
        if (control) {
            push_control(b, g, lp, i, dev, &n_arg, &n_range);
            last[dev] = i;
            continue;
        }
        int first_range = n_range;
        for (int bi = 0; bi < k->n_bufs; bi++) {
            const kir_buffer *kb = &k->bufs[bi];
            if (kb->workgroup) continue;
            touch(b, dev, plan_root(m, kb->tensor)); /* bound even where it touches no byte */
            int64_t lo, hi;
            const struct fuse_range *box;
            if (!plan_buffer_range(g, fp, lp, m, i, bi, &lo, &hi, &box)) continue;
            c->ranges[n_range++] = (plan_range){kb->tensor, lo, hi, kb->read, kb->written};
        }
        for (int r = first_range; r < n_range; r++)
            if (c->ranges[r].read) seg_read(b, plan_root(m, c->ranges[r].slot), c->ranges[r].lo, c->ranges[r].hi, dev);
        dispatch_barrier(b, i, dev, last);
        plan_cmd *x = push(b, PLAN_CMD_DISPATCH);
        if (!x) break;
        x->device = dev;
        x->kernel = i;
        x->n_workgroups = k->n_workgroups;
        x->wg_size = k->wg_size;
        x->first_arg = n_arg;
        x->n_args = k->n_bufs;
        x->first_range = first_range;
        x->n_ranges = n_range - first_range;
        for (int bi = 0; bi < k->n_bufs; bi++) c->args[n_arg++] = k->bufs[bi].workgroup ? -1 : k->bufs[bi].tensor;
        for (int r = first_range; r < n_range; r++) {
            int root = plan_root(m, c->ranges[r].slot);
            touch(b, dev, root);
            if (c->ranges[r].write) seg_write(b, &b->at[root], c->ranges[r].lo, c->ranges[r].hi, dev);
        }
        b->pending[dev] = true;
        c->dispatches[dev]++;
        last[dev] = i;
    }
    bool any = false;
    for (int d = 0; d < pd->n; d++) {
        any |= b->pending[d];
        host_barrier(b, d);
    }
    if (!any) { /* a list ends with the host waiting, even one with no dispatch */
        b->pending[0] = true;
        host_barrier(b, 0);
    }
    for (int o = 0; o < g->n_outputs && !b->oom; o++) {
        int root = plan_root(m, g->outputs[o]);
        const plan_slot *x = &m->slots[root];
        if (x->kind != PLAN_ARENA || x->bytes <= 0 || c->home[root] != -2) continue;
        int h = whole_holder(b, root, x->bytes);
        if (h == -2) {
            seg_read(b, root, 0, x->bytes, PLAN_HOST);
            h = PLAN_HOST;
        }
        c->home[root] = h;
    }
    if (b->oom) return diag_fail(SMELT_ERR_NOMEM, "out of memory building the command list");
    for (int d = 0; d < pd->n; d++)
        for (int s = 0; s < m->n_slots; s++) {
            const plan_slot *x = &m->slots[s];
            if (x->alias >= 0 || x->kind != PLAN_ARENA || !b->touched[(size_t)d * (size_t)m->n_slots + (size_t)s]) continue;
            int64_t at = plan_offset(m, d, s);
            if (at < 0) return diag_fail(SMELT_ERR_INTERNAL, "commands: device %d reads or writes slot %d, which its arena does not hold", d, s);
            if (at + x->bytes > c->arena_bytes[d]) c->arena_bytes[d] = at + x->bytes;
        }
    return SMELT_OK;
}

smelt_status plan_commands_place(const ir_graph *g, const struct fuse_plan *fp, const lower_program *lp, const mem_plan *m,
                                 const plan_devices *pd, plan_commands *out)
{
    memset(out, 0, sizeof *out);
    if (pd->n < 1 || pd->n > PLAN_MAX_DEVICES) return diag_fail(SMELT_ERR_INTERNAL, "commands: %d devices", pd->n);
    out->n_devices = pd->n;
    memcpy(out->host_memory, pd->host_memory, sizeof out->host_memory);
    int n_args = 0;
    for (int i = 0; i < lp->n_kernels; i++) {
        n_args += lp->kernels[i]->n_bufs;
        if (lp->kernels[i]->n_workgroups <= 0) n_args += g->nodes[lp->kernel_node[i]].n_in + g->nodes[lp->kernel_node[i]].n_out;
    }
    out->args = calloc((size_t)n_args + 1, sizeof(int));
    out->ranges = calloc((size_t)n_args + 1, sizeof(plan_range));
    out->home = malloc(sizeof(int) * ((size_t)m->n_slots + 1));
    builder b = {out, m, pd, calloc((size_t)m->n_slots + 1, sizeof(segs)), {false}, NULL, 0, false};
    b.touched = calloc((size_t)pd->n * (size_t)m->n_slots + 1, sizeof(bool));
    smelt_status st = SMELT_OK;
    if (!out->args || !out->ranges || !out->home || !b.at || !b.touched) {
        st = diag_fail(SMELT_ERR_NOMEM, "out of memory building the command list");
    } else {
        for (int s = 0; s < m->n_slots; s++) out->home[s] = -2;
        st = build(&b, g, fp, lp);
        for (int s = 0; s < m->n_slots; s++)
            if (out->home[s] == -2) out->home[s] = PLAN_HOST;
    }
    for (int s = 0; b.at && s < m->n_slots; s++) free(b.at[s].v);
    free(b.at);
    out->held = b.touched; /* freed with out */
    if (!st) st = plan_commands_verify(out, g, lp, m, false);
    if (st) plan_commands_free(out);
    return st;
}
