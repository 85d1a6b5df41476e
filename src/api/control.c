/*
 * control.c — run-time If, Loop and Scan: the child programs an if/loop
 * command names (compiled once, when the parent links) and the host side of
 * those commands (plan/commands.h; the node layout is in graph/passes.h).
 *
 * A child runs on its parent's device with its inputs bound to the parent's
 * memory (a slot, a slice of a scan input at offset i x slice, or the loop's
 * iteration/condition slots), so binding copies nothing. What the host reads
 * (a condition, a trip count, the body's condition output) comes through the
 * device's copy to the host. Child outputs are copied into the parent's
 * slots: loop-carried values into the set not being read (the two sets swap
 * each iteration), scan outputs at offset i x slice. A device without host
 * memory copies device to device through one host buffer that grows to the
 * largest copy once (its own: the copies between devices of a program over
 * several run at the same time through the program's staging bytes).
 *
 * In a program over several devices, an if/loop command runs on the device
 * its control node is placed on (plan/transfers.c brings what it reads
 * there), on that device's stream, and its children are compiled for that
 * device alone: one child program per control node and branch, on the
 * device that runs it.
 */
#include <stdlib.h>
#include <string.h>

#include "api/program.h"
#include "graph/passes.h"

/* ---- compiling the children ------------------------------------------------------------- */

/* A child of the control node placed on device d: compiled for that device
 * alone (its target, one class), run there. */
static smelt_status compile_child(smelt_program *p, const smelt_options *opt, const ir_node *n, const char *attr, int d,
                                  smelt_program **out)
{
    smelt_program *c = calloc(1, sizeof *c);
    if (!c) return diag_fail(SMELT_ERR_NOMEM, "out of memory");
    arena_init(&c->arena);
    c->devs.n = 1;
    c->devs.n_classes = 1;
    c->devs.dev[0] = p->devs.dev[d];
    c->devs.dev[0].cls = 0;
    c->devs.class_first[0] = 0;
    c->dev[0] = p->dev[d];
    c->model = p->model;
    c->bound = true;
    c->stage = SMELT_STAGE_ALL;
    smelt_status st = control_child_graph(p->g, n, attr, &c->g, &c->bind_from);
    if (!st) st = program_record_inputs(c, c->g);
    if (!st) st = program_compile_graph(c, opt);
    if (!st && !(c->bind_tensor = malloc(sizeof(int) * ((size_t)c->n_inputs + 1)))) st = diag_fail(SMELT_ERR_NOMEM, "out of memory");
    for (int i = 0; !st && i < c->n_inputs; i++) { /* compaction renumbered tensors: find the inputs by name */
        c->bind_tensor[i] = -1;
        for (int k = 0; k < c->g->n_inputs; k++)
            if (strcmp(c->g->tensors[c->g->inputs[k]].name, c->inputs[i].name) == 0) c->bind_tensor[i] = c->g->inputs[k];
    }
    if (st) {
        st = diag_context(st, "compiling '%s' of node '%s' (%s)", attr, n->name, op_get(n->op)->name);
        smelt_program_free(c);
        return st;
    }
    *out = c;
    return SMELT_OK;
}

smelt_status program_control_link(smelt_program *p, const smelt_options *opt_in)
{
    if (p->cmds.n_children == 0) return SMELT_OK;
    smelt_options opt = *opt_in;
    opt.verbose = 0;
    p->children = calloc((size_t)p->cmds.n_children, sizeof(smelt_program *));
    p->dyn_set = calloc((size_t)p->g->n_tensors + 1, sizeof(bool));
    p->run_shape = calloc((size_t)p->g->n_tensors + 1, sizeof(ir_shape));
    p->grow_mem = calloc((size_t)p->g->n_tensors + 1, sizeof(rt_mem));
    p->grow_cap = calloc((size_t)p->g->n_tensors + 1, sizeof(int64_t));
    p->grow_host = calloc((size_t)p->g->n_tensors + 1, sizeof(void *));
    p->grow_dev = calloc((size_t)p->g->n_tensors + 1, sizeof(int));
    if (!p->children || !p->dyn_set || !p->run_shape || !p->grow_mem || !p->grow_cap || !p->grow_host || !p->grow_dev)
        return diag_fail(SMELT_ERR_NOMEM, "out of memory");
    for (int ci = 0; ci < p->cmds.n_cmds; ci++) {
        const plan_cmd *c = &p->cmds.cmds[ci];
        const ir_node *n = &p->g->nodes[c->node];
        if (c->kind == PLAN_CMD_IF) {
            TRY(compile_child(p, &opt, n, "then_branch", c->device, &p->children[c->child]));
            TRY(compile_child(p, &opt, n, "else_branch", c->device, &p->children[c->child + 1]));
        } else if (c->kind == PLAN_CMD_LOOP) {
            TRY(compile_child(p, &opt, n, "body", c->device, &p->children[c->child]));
        }
    }
    return SMELT_OK;
}

void program_control_free(smelt_program *p)
{
    for (int i = 0; p->children && i < p->cmds.n_children; i++) smelt_program_free(p->children[i]);
    for (int t = 0; p->grow_mem && t < p->g->n_tensors; t++) {
        if (p->grow_mem[t]) p->dev[p->grow_dev[t]]->ops->mem_free(p->dev[p->grow_dev[t]], p->grow_mem[t]);
        free(p->grow_host[t]);
    }
    free(p->grow_mem);
    free(p->grow_dev);
    free(p->grow_cap);
    free(p->grow_host);
    free(p->children);
    free(p->bind_from);
    free(p->bind_tensor);
    free(p->dyn_set);
    free(p->run_shape);
    p->children = NULL;
}

/* ---- moving bytes ----------------------------------------------------------------------- */

/* The device of the control command now running (p->ctl_dev), and its memory for slot s. */
static rt_device *cdev(const smelt_program *p) { return p->dev[p->ctl_dev]; }

static rt_arg at(rt_arg a, int64_t off) { return (rt_arg){a.mem, a.offset + off}; }

static smelt_status to_host(smelt_program *p, rt_arg src, void *dst, size_t bytes)
{
    if (cdev(p)->ops->host_memory) {
        memcpy(dst, (const char *)(uintptr_t)src.mem + src.offset, bytes);
        return SMELT_OK;
    }
    return cdev(p)->ops->download(cdev(p), src.mem, (size_t)src.offset, dst, bytes);
}

static smelt_status from_host(smelt_program *p, rt_arg dst, const void *src, size_t bytes)
{
    if (cdev(p)->ops->host_memory) {
        memmove((char *)(uintptr_t)dst.mem + dst.offset, src, bytes);
        return SMELT_OK;
    }
    return cdev(p)->ops->upload(cdev(p), dst.mem, (size_t)dst.offset, src, bytes);
}

static smelt_status dev_copy(smelt_program *p, rt_arg dst, rt_arg src, size_t bytes)
{
    if (bytes == 0 || (dst.mem == src.mem && dst.offset == src.offset)) return SMELT_OK;
    if (cdev(p)->ops->host_memory) {
        memmove((char *)(uintptr_t)dst.mem + dst.offset, (const char *)(uintptr_t)src.mem + src.offset, bytes);
        return SMELT_OK;
    }
    if (bytes > p->ctl_staging_bytes) {
        void *b = realloc(p->ctl_staging, bytes);
        if (!b) return diag_fail(SMELT_ERR_NOMEM, "out of memory");
        p->ctl_staging = b;
        p->ctl_staging_bytes = bytes;
    }
    TRY(to_host(p, src, p->ctl_staging, bytes));
    return from_host(p, dst, p->ctl_staging, bytes);
}

static size_t tensor_bytes(const ir_tensor *t) { return (size_t)ir_tensor_numel(t) * smelt_dtype_size(t->dtype); }

/* Child output k into parent memory dst (its bytes: *bytes). */
static smelt_status child_output(smelt_program *p, const smelt_program *c, int k, rt_arg dst, size_t *bytes)
{
    int t = c->g->outputs[k];
    const ir_tensor *x = &c->g->tensors[t];
    *bytes = tensor_bytes(x);
    if (x->data) return from_host(p, dst, x->data, *bytes);
    return dev_copy(p, dst, c->slot_mem[t], *bytes);
}

/* ---- running a child -------------------------------------------------------------------- */

/* Bind child input i to parent memory m (views of inputs follow). */
static void bind(smelt_program *c, int i, rt_arg m)
{
    int t = c->bind_tensor[i];
    if (t < 0) return;
    c->slot_mem[t] = m;
    c->slot_ptr[t] = c->dev[0]->ops->host_memory ? (char *)(uintptr_t)m.mem + m.offset : NULL;
}

static smelt_status run_child(smelt_program *c)
{
    for (int s = 0; s < c->plan.n_slots; s++)
        if (c->plan.slots[s].alias >= 0 && c->plan.slots[s].kind == PLAN_INPUT) {
            c->slot_mem[s] = c->slot_mem[c->plan.slots[s].alias];
            c->slot_ptr[s] = c->slot_ptr[c->plan.slots[s].alias];
        }
    return program_run_commands(c);
}

static const int *cmd_args(const smelt_program *p, const plan_cmd *c) { return p->cmds.args + c->first_arg; }

static rt_arg slot(const smelt_program *p, int s) { return p->slot_mem[(size_t)p->ctl_dev * (size_t)p->plan.n_slots + (size_t)s]; }

/* A one-element value (bool, or an integer trip count) of node input k, read on the host. */
static smelt_status read_scalar(smelt_program *p, const plan_cmd *c, int k, int64_t *v)
{
    const ir_node *n = &p->g->nodes[c->node];
    const ir_tensor *t = &p->g->tensors[n->in[k]];
    int s = cmd_args(p, c)[k];
    if (s < 0) return ir_node_fail(n, SMELT_ERR_INTERNAL, "input %d has no memory", k);
    if (t->dtype == SMELT_BOOL) {
        uint8_t b = 0;
        TRY(to_host(p, slot(p, s), &b, 1));
        *v = b != 0;
    } else if (t->dtype == SMELT_I64) {
        TRY(to_host(p, slot(p, s), v, 8));
    } else {
        return ir_node_fail(n, SMELT_ERR_MODEL, "input %d ('%s') is %s; a condition must be bool and a trip count int64", k,
                            t->name, smelt_dtype_name(t->dtype));
    }
    return SMELT_OK;
}

static smelt_status run_if(smelt_program *p, const plan_cmd *c)
{
    const ir_node *n = &p->g->nodes[c->node];
    const int *args = cmd_args(p, c);
    int64_t cond;
    TRY(read_scalar(p, c, 0, &cond));
    smelt_program *ch = p->children[c->child + (cond ? 0 : 1)];
    for (int i = 0; i < ch->n_inputs; i++) bind(ch, i, slot(p, args[ch->bind_from[i]]));
    TRY(run_child(ch));
    int64_t dyn = ir_attr_int(n, "smelt_dyn", 0);
    for (int k = 0; k < n->n_out; k++) {
        int s = args[n->n_in + k];
        if (s < 0) continue;
        size_t bytes;
        TRY(child_output(p, ch, k, slot(p, s), &bytes));
        if (dyn >> k & 1) {
            p->dyn_set[n->out[k]] = true;
            p->run_shape[n->out[k]] = ch->g->tensors[ch->g->outputs[k]].shape;
        }
    }
    return SMELT_OK;
}

/* The growing buffer of unbounded scan output t, holding `used` bytes, made
 * ready for `need`: doubled (at least) and the bytes so far moved over. */
static smelt_status grow(smelt_program *p, int t, int64_t used, int64_t need)
{
    if (need <= p->grow_cap[t]) return SMELT_OK;
    int64_t cap = 2 * p->grow_cap[t];
    if (cap < need) cap = need;
    rt_mem m;
    TRY(cdev(p)->ops->alloc(cdev(p), (size_t)cap, &m));
    smelt_status st = dev_copy(p, (rt_arg){m, 0}, (rt_arg){p->grow_mem[t], 0}, (size_t)used);
    if (p->grow_mem[t]) cdev(p)->ops->mem_free(cdev(p), p->grow_mem[t]);
    p->grow_mem[t] = m;
    p->grow_dev[t] = p->ctl_dev;
    p->grow_cap[t] = cap;
    return st;
}

/* After the loop: an unbounded scan output of `bytes` where the caller reads it. */
static smelt_status grown_output(smelt_program *p, int t, int64_t bytes)
{
    if (cdev(p)->ops->host_memory) {
        p->slot_ptr[t] = (void *)(uintptr_t)p->grow_mem[t];
        return SMELT_OK;
    }
    void *h = realloc(p->grow_host[t], (size_t)p->grow_cap[t] + 1);
    if (!h) return diag_fail(SMELT_ERR_NOMEM, "out of memory");
    p->grow_host[t] = h;
    p->slot_ptr[t] = h;
    return bytes ? to_host(p, (rt_arg){p->grow_mem[t], 0}, h, (size_t)bytes) : SMELT_OK;
}

/* Loop and Scan: N carried values in two sets that swap, K scan outputs. */
static smelt_status run_loop(smelt_program *p, const plan_cmd *c)
{
    const ir_node *n = &p->g->nodes[c->node];
    const int *args = cmd_args(p, c), *outs = args + n->n_in;
    bool loop = n->op == OP_Loop;
    int nout = (int)ir_attr_int(n, "smelt_nout", 0);
    int N = n->n_out - nout - (loop ? 2 : 0), K = nout - N, S = loop ? 0 : (int)ir_attr_int(n, "num_scan_inputs", 1);
    const int64_t *dirs = NULL;
    int n_dirs = loop ? 0 : ir_attr_ints(n, "scan_input_directions", &dirs);
    smelt_program *body = p->children[c->child];
    int64_t m = INT64_MAX, cond = 1;
    if (loop && n->in[0] >= 0) TRY(read_scalar(p, c, 0, &m));
    if (loop && n->in[1] >= 0) TRY(read_scalar(p, c, 1, &cond));
    if (!loop) m = p->g->tensors[n->in[N]].shape.dim[0];
    int first = loop ? 2 : 0, f = loop ? 1 : 0;
    int64_t cap = -1, growing = ir_attr_int(n, "smelt_grow", 0); /* planned scan outputs hold at most cap slices */
    for (int k = 0; k < K; k++)
        if (outs[N + k] >= 0 && !(growing >> (N + k) & 1)) cap = p->g->tensors[n->out[N + k]].shape.dim[0];
    for (int j = 0; j < N; j++) /* the initial values into the first set */
        TRY(dev_copy(p, slot(p, outs[j]), slot(p, args[first + j]), tensor_bytes(&p->g->tensors[n->out[j]])));
    int cur = 0; /* which set holds the current values: 0 the outputs, 1 the second set */
    int64_t i = 0;
    for (; i < m && cond; i++) {
        if (i >= p->max_iters)
            return ir_node_fail(n, SMELT_ERR_UNSUPPORTED, "ran %lld iterations without ending; a run-time loop stops there "
                                "(the limit is smelt_options.max_loop_iterations, --max-loop-iterations)", (long long)i);
        if (cap >= 0 && i >= cap)
            return ir_node_fail(n, SMELT_ERR_INTERNAL, "runs past the %lld iterations its scan outputs hold", (long long)cap);
        if (loop) {
            uint8_t one = 1;
            TRY(from_host(p, slot(p, outs[2 * N + K]), &i, 8));
            TRY(from_host(p, slot(p, outs[2 * N + K + 1]), &one, 1));
        }
        for (int b = 0; b < body->n_inputs; b++) {
            int src = body->bind_from[b];
            rt_arg mem;
            if (src == -1) mem = slot(p, outs[2 * N + K]);
            else if (src == -2) mem = slot(p, outs[2 * N + K + 1]);
            else if (src >= first && src < first + N) mem = slot(p, outs[(cur ? N + K : 0) + src - first]);
            else if (!loop && src >= N && src < N + S) {
                int64_t at_i = n_dirs > src - N && dirs[src - N] ? m - 1 - i : i;
                int t = body->bind_tensor[b];
                size_t sl = t >= 0 ? tensor_bytes(&body->g->tensors[t]) : 0;
                mem = at(slot(p, args[src]), at_i * (int64_t)sl);
            } else mem = slot(p, args[src]);
            bind(body, b, mem);
        }
        TRY(run_child(body));
        if (loop) {
            uint8_t b = 0;
            int t = body->g->outputs[0];
            if (body->g->tensors[t].data) b = *(const uint8_t *)body->g->tensors[t].data;
            else TRY(to_host(p, body->slot_mem[t], &b, 1));
            cond = b != 0;
        }
        size_t bytes;
        for (int j = 0; j < N; j++) TRY(child_output(p, body, f + j, slot(p, outs[(cur ? 0 : N + K) + j]), &bytes));
        for (int k = 0; k < K; k++) {
            if (outs[N + k] < 0) continue;
            size_t sl = tensor_bytes(&body->g->tensors[body->g->outputs[f + N + k]]);
            rt_arg dst = slot(p, outs[N + k]);
            if (growing >> (N + k) & 1) {
                TRY(grow(p, n->out[N + k], i * (int64_t)sl, (i + 1) * (int64_t)sl));
                dst = (rt_arg){p->grow_mem[n->out[N + k]], 0};
            }
            TRY(child_output(p, body, f + N + k, at(dst, i * (int64_t)sl), &bytes));
        }
        cur = !cur;
    }
    for (int j = 0; cur && j < N; j++)
        TRY(dev_copy(p, slot(p, outs[j]), slot(p, outs[N + K + j]), tensor_bytes(&p->g->tensors[n->out[j]])));
    int64_t dyn = ir_attr_int(n, "smelt_dyn", 0);
    for (int k = 0; k < K; k++)
        if (dyn >> (N + k) & 1 && n->out[N + k] >= 0) {
            p->dyn_set[n->out[N + k]] = true;
            p->run_shape[n->out[N + k]] = p->g->tensors[n->out[N + k]].shape;
            p->run_shape[n->out[N + k]].dim[0] = i;
            if (growing >> (N + k) & 1) {
                const ir_tensor *e = &body->g->tensors[body->g->outputs[f + N + k]];
                TRY(grown_output(p, n->out[N + k], i * (int64_t)tensor_bytes(e)));
            }
        }
    return SMELT_OK;
}

smelt_status program_control_run(smelt_program *p, const plan_cmd *c)
{
    p->ctl_dev = c->device;
    return c->kind == PLAN_CMD_IF ? run_if(p, c) : run_loop(p, c);
}
