/*
 * commands.c — building, checking and printing the command list (commands.h).
 */
#include "plan/commands.h"

#include <stdlib.h>
#include <string.h>

#include "core/diag.h"
#include "graph/passes.h"

smelt_status plan_commands_build(const ir_graph *g, const struct fuse_plan *fp, const lower_program *lp, const mem_plan *m,
                                 bool host_memory, plan_commands *out)
{
    plan_devices pd = {.n = 1, .host_memory = {host_memory}, .kernel_device = NULL};
    return plan_commands_place(g, fp, lp, m, &pd, out);
}

int plan_commands_n_args(const plan_commands *c)
{
    int n = 0;
    for (int i = 0; i < c->n_cmds; i++)
        if (c->cmds[i].kind == PLAN_CMD_DISPATCH && c->cmds[i].first_arg + c->cmds[i].n_args > n)
            n = c->cmds[i].first_arg + c->cmds[i].n_args;
    return n;
}

void plan_commands_free(plan_commands *c)
{
    free(c->cmds);
    free(c->args);
    free(c->ranges);
    free(c->home);
    free(c->held);
    memset(c, 0, sizeof *c);
}

/* ---- checking -------------------------------------------------------------------------- */

typedef struct touch {
    int64_t lo, hi; /* arena bytes */
    bool read, write;
    int cmd, device;
} touch;

/* Staging bytes a copy on one device filled, at that device's clock. */
typedef struct staged {
    int64_t lo, hi;     /* staging bytes */
    int root;           /* the slot and bytes they hold */
    int64_t from;
    int device, cmd;
    int64_t time;
} staged;

typedef struct checker {
    const plan_commands *c;
    const mem_plan *m;
    bool *written;  /* [(device + 1) * n_slots + root]: device PLAN_HOST is row 0 */
    touch *batch;   /* arena bytes touched since the last barrier on their device */
    int n_batch, cap_batch;
    bool busy[PLAN_MAX_DEVICES]; /* dispatched since its last host barrier */
    /* The streams' order: clock[d][e] is the last command of device e that
     * device d's stream has seen finish (its own commands count one each). */
    int64_t clock[PLAN_MAX_DEVICES][PLAN_MAX_DEVICES];
    int64_t (*event_clock)[PLAN_MAX_DEVICES]; /* per event: its device's clock when set */
    bool *event_set;
    staged *stage;
    int n_stage, cap_stage;
} checker;

static bool *written_at(checker *k, int device, int slot) { return &k->written[(size_t)(device + 1) * (size_t)k->m->n_slots + (size_t)slot]; }

static smelt_status check_range(const checker *k, int ci, const plan_range *r)
{
    const mem_plan *m = k->m;
    if (r->slot < 0 || r->slot >= m->n_slots)
        return diag_fail(SMELT_ERR_INTERNAL, "commands: command %d names slot %d, not a plan slot", ci, r->slot);
    int64_t bytes = m->slots[plan_root(m, r->slot)].bytes;
    if (r->lo < 0 || r->hi < r->lo || r->hi > bytes)
        return diag_fail(SMELT_ERR_INTERNAL, "commands: command %d touches bytes [%lld, %lld) of slot %d, outside its %lld bytes", ci,
                         (long long)r->lo, (long long)r->hi, r->slot, (long long)bytes);
    return SMELT_OK;
}

/* Range r of command ci on `device` against what other commands touched
 * since the last barrier there; kept in the batch unless `done` (a copy is
 * over when the next command starts). */
static smelt_status check_batch(checker *k, int ci, int device, const plan_range *r, bool done)
{
    const plan_slot *s = &k->m->slots[plan_root(k->m, r->slot)];
    if (device == PLAN_HOST || s->kind != PLAN_ARENA || r->hi <= r->lo) return SMELT_OK;
    int64_t at = plan_offset(k->m, device, r->slot);
    if (at < 0) return diag_fail(SMELT_ERR_INTERNAL, "commands: command %d touches slot %d, which device %d's arena does not hold", ci, r->slot, device);
    touch t = {at + r->lo, at + r->hi, r->read, r->write, ci, device};
    for (int i = 0; i < k->n_batch; i++) {
        const touch *u = &k->batch[i];
        if (u->cmd == ci || u->device != device || u->lo >= t.hi || t.lo >= u->hi) continue;
        if ((u->write && t.read) || (u->read && t.write))
            return diag_fail(SMELT_ERR_INTERNAL, "commands: command %d %s arena bytes [%lld, %lld) that command %d %s, with no barrier between",
                             ci, t.read ? "reads" : "writes", (long long)t.lo, (long long)t.hi, u->cmd, u->write ? "writes" : "reads");
    }
    if (done) return SMELT_OK;
    if (k->n_batch == k->cap_batch) {
        int cap = k->cap_batch ? 2 * k->cap_batch : 64;
        touch *nb = realloc(k->batch, sizeof(touch) * (size_t)cap);
        if (!nb) return diag_fail(SMELT_ERR_NOMEM, "out of memory checking the command list");
        k->batch = nb;
        k->cap_batch = cap;
    }
    k->batch[k->n_batch++] = t;
    return SMELT_OK;
}

static smelt_status check_read(checker *k, int ci, int device, const plan_range *r)
{
    if (r->hi > r->lo && !*written_at(k, device, plan_root(k->m, r->slot)))
        return diag_fail(SMELT_ERR_INTERNAL, "commands: command %d reads slot %d on device %d before anything writes it there", ci,
                         r->slot, device);
    return SMELT_OK;
}

static smelt_status check_dispatch(checker *k, int ci, const plan_cmd *x, const lower_program *lp)
{
    const plan_commands *c = k->c;
    if (x->kernel < 0 || x->kernel >= lp->n_kernels)
        return diag_fail(SMELT_ERR_INTERNAL, "commands: command %d dispatches kernel %d, not a kernel", ci, x->kernel);
    const kir_kernel *kk = lp->kernels[x->kernel];
    if (x->n_args != kk->n_bufs || x->first_arg < 0 || x->n_workgroups <= 0 || x->n_ranges < 0 || x->first_range < 0)
        return diag_fail(SMELT_ERR_INTERNAL, "commands: command %d does not match kernel %d's buffers and workgroups", ci, x->kernel);
    for (int b = 0; b < kk->n_bufs; b++)
        if (c->args[x->first_arg + b] != (kk->bufs[b].workgroup ? -1 : kk->bufs[b].tensor))
            return diag_fail(SMELT_ERR_INTERNAL, "commands: command %d binds buffer %d of kernel %d to slot %d, not its own", ci, b,
                             x->kernel, c->args[x->first_arg + b]);
    const plan_range *rs = c->ranges + x->first_range;
    for (int i = 0; i < x->n_ranges; i++) {
        TRY(check_range(k, ci, &rs[i]));
        bool self = false; /* a buffer it both reads and writes (an accumulator), or in place */
        for (int j = 0; j < x->n_ranges && !self; j++)
            self = rs[j].write && plan_root(k->m, rs[j].slot) == plan_root(k->m, rs[i].slot);
        if (rs[i].read && !self) TRY(check_read(k, ci, x->device, &rs[i]));
        TRY(check_batch(k, ci, x->device, &rs[i], false));
    }
    for (int i = 0; i < x->n_ranges; i++)
        if (rs[i].write) *written_at(k, x->device, plan_root(k->m, rs[i].slot)) = true;
    k->busy[x->device] = true;
    return SMELT_OK;
}

/* An if/loop: its node is a run-time control node of its placeholder kernel,
 * and it reads whole slots written before and writes whole slots. */
static smelt_status check_control(checker *k, int ci, const plan_cmd *x, const ir_graph *g, const lower_program *lp)
{
    const plan_commands *c = k->c;
    if (x->kernel < 0 || x->kernel >= lp->n_kernels || x->node != lp->kernel_node[x->kernel] ||
        !control_is_runtime(&g->nodes[x->node]) || x->n_args != g->nodes[x->node].n_in + g->nodes[x->node].n_out ||
        x->child < 0 || x->child + (x->kind == PLAN_CMD_IF ? 2 : 1) > c->n_children ||
        (x->kind == PLAN_CMD_IF) != (g->nodes[x->node].op == OP_If))
        return diag_fail(SMELT_ERR_INTERNAL, "commands: command %d does not match a run-time control node", ci);
    if (ci == 0 || c->cmds[ci - 1].kind != PLAN_CMD_BARRIER || !c->cmds[ci - 1].host)
        return diag_fail(SMELT_ERR_INTERNAL, "commands: command %d (if/loop) does not follow a host barrier", ci);
    const plan_range *rs = c->ranges + x->first_range;
    for (int i = 0; i < x->n_ranges; i++) {
        TRY(check_range(k, ci, &rs[i]));
        if (rs[i].read) TRY(check_read(k, ci, x->device, &rs[i]));
    }
    for (int i = 0; i < x->n_ranges; i++)
        if (rs[i].write) *written_at(k, x->device, plan_root(k->m, rs[i].slot)) = true;
    int w = 0; /* it finishes before the next command on its device starts */
    for (int i = 0; i < k->n_batch; i++)
        if (k->batch[i].device != x->device) k->batch[w++] = k->batch[i];
    k->n_batch = w;
    return SMELT_OK;
}

/* A copy out of the staging bytes on x->device: another device's copy
 * filled exactly them with the same bytes of the same slot, and an event
 * orders that copy before this one. */
static smelt_status check_unstage(const checker *k, int ci, const plan_cmd *x)
{
    int64_t n = x->dst.hi - x->dst.lo;
    for (int i = k->n_stage - 1; i >= 0; i--) {
        const staged *y = &k->stage[i];
        if (y->lo != x->stage || y->hi != x->stage + n) continue;
        if (y->root != plan_root(k->m, x->dst.slot) || y->from != x->dst.lo)
            return diag_fail(SMELT_ERR_INTERNAL, "commands: command %d copies staging bytes [%lld, %lld) as another range than command %d put there",
                             ci, (long long)y->lo, (long long)y->hi, y->cmd);
        if (k->clock[x->device][y->device] < y->time)
            return diag_fail(SMELT_ERR_INTERNAL,
                             "commands: command %d on device %d reads staging bytes that command %d on device %d fills, with no wait for "
                             "an event that device sets after it",
                             ci, x->device, y->cmd, y->device);
        return SMELT_OK;
    }
    return diag_fail(SMELT_ERR_INTERNAL, "commands: command %d copies staging bytes [%lld, %lld) that no copy before it fills", ci,
                     (long long)x->stage, (long long)(x->stage + n));
}

static smelt_status check_copy(checker *k, int ci, const plan_cmd *x)
{
    int nd = k->c->n_devices;
    if (x->src_device < PLAN_HOST || x->src_device >= nd || x->dst_device < PLAN_HOST || x->dst_device >= nd ||
        x->src_device == x->dst_device)
        return diag_fail(SMELT_ERR_INTERNAL, "commands: command %d copies from device %d to device %d", ci, x->src_device,
                         x->dst_device);
    if (x->src_device >= 0 && x->dst_device >= 0)
        return diag_fail(SMELT_ERR_INTERNAL, "commands: command %d copies from device %d straight into device %d (copies between devices pass through staging)",
                         ci, x->src_device, x->dst_device);
    if (x->device != (x->src_device == PLAN_HOST ? x->dst_device : x->src_device))
        return diag_fail(SMELT_ERR_INTERNAL, "commands: command %d copies on device %d, not the device it copies from or to", ci, x->device);
    TRY(check_range(k, ci, &x->src));
    TRY(check_range(k, ci, &x->dst));
    int64_t n = x->src.hi - x->src.lo;
    if (n != x->dst.hi - x->dst.lo)
        return diag_fail(SMELT_ERR_INTERNAL, "commands: command %d copies %lld bytes into %lld", ci, (long long)n,
                         (long long)(x->dst.hi - x->dst.lo));
    if (x->stage >= 0 && (x->stage + n > k->c->stage_bytes || plan_root(k->m, x->src.slot) != plan_root(k->m, x->dst.slot)))
        return diag_fail(SMELT_ERR_INTERNAL, "commands: command %d stages bytes outside the staging buffer", ci);
    if (x->stage >= 0 && x->src_device == PLAN_HOST) TRY(check_unstage(k, ci, x));
    else TRY(check_read(k, ci, x->src_device, &x->src));
    plan_range src = x->src, dst = x->dst;
    src.read = true, src.write = false, dst.read = false, dst.write = true;
    TRY(check_batch(k, ci, x->src_device, &src, true));
    TRY(check_batch(k, ci, x->dst_device, &dst, true));
    if (x->stage >= 0 && x->dst_device == PLAN_HOST) {
        if (k->n_stage == k->cap_stage) {
            int cap = k->cap_stage ? 2 * k->cap_stage : 16;
            staged *v = realloc(k->stage, sizeof(staged) * (size_t)cap);
            if (!v) return diag_fail(SMELT_ERR_NOMEM, "out of memory checking the command list");
            k->stage = v;
            k->cap_stage = cap;
        }
        k->stage[k->n_stage++] = (staged){x->stage, x->stage + n, plan_root(k->m, x->src.slot), x->src.lo, x->device, ci,
                                          k->clock[x->device][x->device]};
        return SMELT_OK;
    }
    *written_at(k, x->dst_device, plan_root(k->m, x->dst.slot)) = true;
    return SMELT_OK;
}

/* A signal sets its event once, with its device's clock; a wait takes in
 * the clock of an event set before it. */
static smelt_status check_event(checker *k, int ci, const plan_cmd *x)
{
    if (x->event < 0 || x->event >= k->c->n_events)
        return diag_fail(SMELT_ERR_INTERNAL, "commands: command %d names event %d, not one of the %d", ci, x->event, k->c->n_events);
    int d = x->device;
    if (x->kind == PLAN_CMD_SIGNAL) {
        if (k->event_set[x->event]) return diag_fail(SMELT_ERR_INTERNAL, "commands: command %d sets event %d a second time", ci, x->event);
        k->event_set[x->event] = true;
        memcpy(k->event_clock[x->event], k->clock[d], sizeof k->clock[d]);
        return SMELT_OK;
    }
    if (!k->event_set[x->event])
        return diag_fail(SMELT_ERR_INTERNAL, "commands: command %d waits for event %d, which no command before it sets", ci, x->event);
    for (int e = 0; e < k->c->n_devices; e++)
        if (k->event_clock[x->event][e] > k->clock[d][e]) k->clock[d][e] = k->event_clock[x->event][e];
    return SMELT_OK;
}

smelt_status plan_commands_verify(const plan_commands *c, const ir_graph *g, const lower_program *lp, const mem_plan *m,
                                  bool host_memory)
{
    if (c->n_devices < 1) return diag_fail(SMELT_ERR_INTERNAL, "commands: no device");
    if (c->n_devices > PLAN_MAX_DEVICES) return diag_fail(SMELT_ERR_INTERNAL, "commands: %d devices", c->n_devices);
    if (c->n_events < 0) return diag_fail(SMELT_ERR_INTERNAL, "commands: %d events", c->n_events);
    checker k;
    memset(&k, 0, sizeof k);
    k.c = c, k.m = m;
    k.written = calloc(((size_t)c->n_devices + 1) * (size_t)m->n_slots + 1, sizeof(bool));
    k.event_clock = calloc((size_t)c->n_events + 1, sizeof *k.event_clock);
    k.event_set = calloc((size_t)c->n_events + 1, sizeof(bool));
    if (!k.written || !k.event_clock || !k.event_set) {
        free(k.written);
        free(k.event_clock);
        free(k.event_set);
        return diag_fail(SMELT_ERR_NOMEM, "out of memory checking the command list");
    }
    for (int s = 0; s < m->n_slots; s++) {
        plan_kind kind = m->slots[plan_root(m, s)].kind;
        for (int d = PLAN_HOST; d < c->n_devices; d++)
            if (kind == PLAN_CONST || (kind == PLAN_INPUT && (d == PLAN_HOST || host_memory || c->host_memory[d])))
                *written_at(&k, d, s) = true;
    }
    smelt_status st = SMELT_OK;
    int counts[PLAN_CMD_KIND_COUNT] = {0};
    for (int ci = 0; ci < c->n_cmds && !st; ci++) {
        const plan_cmd *x = &c->cmds[ci];
        if (x->device < 0 || x->device >= c->n_devices) {
            st = diag_fail(SMELT_ERR_INTERNAL, "commands: command %d runs on device %d, not one of the %d", ci, x->device, c->n_devices);
            break;
        }
        if ((unsigned)x->kind >= PLAN_CMD_KIND_COUNT) {
            st = diag_fail(SMELT_ERR_INTERNAL, "commands: command %d has no kind", ci);
            break;
        }
        counts[x->kind]++;
        k.clock[x->device][x->device]++;
        if (x->kind == PLAN_CMD_SIGNAL || x->kind == PLAN_CMD_WAIT) st = check_event(&k, ci, x);
        else if (x->kind == PLAN_CMD_DISPATCH) st = check_dispatch(&k, ci, x, lp);
        else if (x->kind == PLAN_CMD_COPY) st = check_copy(&k, ci, x);
        else if (x->kind == PLAN_CMD_IF || x->kind == PLAN_CMD_LOOP) st = check_control(&k, ci, x, g, lp);
        else { /* a barrier orders everything on its device */
            int w = 0;
            for (int i = 0; i < k.n_batch; i++)
                if (k.batch[i].device != x->device) k.batch[w++] = k.batch[i];
            k.n_batch = w;
            if (x->host) k.busy[x->device] = false;
        }
    }
    if (!st && (c->n_cmds == 0 || c->cmds[c->n_cmds - 1].kind != PLAN_CMD_BARRIER || !c->cmds[c->n_cmds - 1].host)) {
        /* downloads may follow the last host barrier: they are synchronous */
        bool ok = false;
        for (int ci = c->n_cmds - 1; ci >= 0 && !ok; ci--) {
            const plan_cmd *x = &c->cmds[ci];
            if (x->kind == PLAN_CMD_BARRIER && x->host) ok = true;
            else if (!(x->kind == PLAN_CMD_COPY && x->dst_device == PLAN_HOST)) break;
        }
        if (!ok) st = diag_fail(SMELT_ERR_INTERNAL, "commands: the list does not end with the host waiting (a host barrier, then only copies to the host)");
    }
    for (int d = 0; d < c->n_devices && !st; d++)
        if (k.busy[d]) st = diag_fail(SMELT_ERR_INTERNAL, "commands: device %d dispatches after its last host barrier", d);
    for (int i = 0; i < PLAN_CMD_KIND_COUNT && !st; i++)
        if (counts[i] != c->count[i]) st = diag_fail(SMELT_ERR_INTERNAL, "commands: the counts of commands by kind are wrong");
    free(k.written);
    free(k.batch);
    free(k.event_clock);
    free(k.event_set);
    free(k.stage);
    return st;
}

/* ---- printing -------------------------------------------------------------------------- */

static const char *slot_name(const ir_graph *g, int s, char *buf, size_t cap)
{
    if (s < g->n_tensors) return g->tensors[s].name;
    snprintf(buf, cap, "scratch%d", s - g->n_tensors);
    return buf;
}

static void print_device(int d, FILE *f)
{
    if (d == PLAN_HOST) fprintf(f, "host");
    else fprintf(f, "d%d", d);
}

void plan_commands_dump(const plan_commands *c, const ir_graph *g, const lower_program *lp, FILE *f)
{
    fprintf(f, "commands: %d (%d dispatches, %d copies of %lld bytes, %d barriers", c->n_cmds, c->count[PLAN_CMD_DISPATCH],
            c->count[PLAN_CMD_COPY], (long long)c->copy_bytes, c->count[PLAN_CMD_BARRIER]);
    if (c->n_events) fprintf(f, ", %d events", c->n_events);
    if (c->count[PLAN_CMD_IF] + c->count[PLAN_CMD_LOOP])
        fprintf(f, ", %d if, %d loop over %d child programs", c->count[PLAN_CMD_IF], c->count[PLAN_CMD_LOOP], c->n_children);
    fprintf(f, ") on %d device%s\n", c->n_devices, c->n_devices == 1 ? "" : "s");
    char buf[32];
    for (int ci = 0; ci < c->n_cmds; ci++) {
        const plan_cmd *x = &c->cmds[ci];
        fprintf(f, "  c%-4d d%d ", ci, x->device);
        if (x->kind == PLAN_CMD_BARRIER) {
            fprintf(f, "barrier%s\n", x->host ? " (host waits)" : "");
        } else if (x->kind == PLAN_CMD_SIGNAL || x->kind == PLAN_CMD_WAIT) {
            fprintf(f, "%s e%d\n", x->kind == PLAN_CMD_SIGNAL ? "signal" : "wait", x->event);
        } else if (x->kind == PLAN_CMD_COPY) {
            fprintf(f, "copy %s[%lld,%lld) ", slot_name(g, x->src.slot, buf, sizeof buf), (long long)x->src.lo, (long long)x->src.hi);
            if (x->stage >= 0 && x->src_device == PLAN_HOST) fprintf(f, "stage[%lld]", (long long)x->stage);
            else print_device(x->src_device, f);
            fprintf(f, " -> ");
            if (x->stage >= 0 && x->dst_device == PLAN_HOST) fprintf(f, "stage[%lld]", (long long)x->stage);
            else print_device(x->dst_device, f);
            fprintf(f, " (%lld bytes)\n", (long long)(x->dst.hi - x->dst.lo));
        } else if (x->kind == PLAN_CMD_IF || x->kind == PLAN_CMD_LOOP) {
            const ir_node *n = &g->nodes[x->node];
            if (x->kind == PLAN_CMD_IF) fprintf(f, "if %s (%s): then child%d, else child%d", n->name, op_get(n->op)->name, x->child, x->child + 1);
            else fprintf(f, "loop %s (%s): body child%d", n->name, op_get(n->op)->name, x->child);
            for (int i = 0; i < x->n_ranges; i++) {
                const plan_range *r = &c->ranges[x->first_range + i];
                fprintf(f, " %s%s", r->write ? "w:" : "r:", slot_name(g, r->slot, buf, sizeof buf));
            }
            fprintf(f, "\n");
        } else {
            const kir_kernel *k = lp->kernels[x->kernel];
            fprintf(f, "dispatch k%d x%lld wg%d (%s)", k->id, (long long)x->n_workgroups, x->wg_size, k->comment ? k->comment : "");
            for (int i = 0; i < x->n_ranges; i++) {
                const plan_range *r = &c->ranges[x->first_range + i];
                fprintf(f, " %s%s[%lld,%lld)", r->write ? (r->read ? "rw:" : "w:") : "r:", slot_name(g, r->slot, buf, sizeof buf),
                        (long long)r->lo, (long long)r->hi);
            }
            fprintf(f, "\n");
        }
    }
}
