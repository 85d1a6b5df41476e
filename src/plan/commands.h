/*
 * commands.h — the program as data: the command list every runtime executes.
 *
 * plan/ turns a lowered program and its memory plan into a list of commands,
 * each run by one device (an index into the program's devices, given per
 * kernel by placement; plan/transfers.c):
 *   - dispatch: kernel `kernel` over n_workgroups x wg_size threads, its
 *     buffer table as plan slots (args: one per kernel buffer, -1 for
 *     workgroup memory) and the byte range of each slot it reads or writes
 *     (plan_buffer_range: the buffer's span, narrowed to the boxes its region
 *     writes);
 *   - copy: bytes [src.lo, src.hi) of slot src.slot on src_device into
 *     [dst.lo, dst.hi) of dst.slot on dst_device (PLAN_HOST: the caller's
 *     memory): the bytes of an input a dispatch on a device without host
 *     memory reads, uploaded just before it; the bytes of a tensor a
 *     dispatch on another device reads, moved just before it (only the
 *     sub-range it reads, and only what that device does not hold yet);
 *     outputs downloaded after the last dispatch where the host cannot read
 *     them in place. A copy between two devices A and B is two copies
 *     through host staging memory (`stage`: the byte offset of its bytes in
 *     the program's staging buffer, -1 for any other copy): on A, after a
 *     host barrier there, A's range into the staging bytes, then a signal;
 *     on B, after a host barrier there (B's earlier dispatches may read the
 *     bytes the copy overwrites), a wait for that signal, then the staging
 *     bytes into B's range. Each device's stream touches only its own memory
 *     and the staging bytes, so the devices run their streams at once;
 *   - signal: on `device`, everything before it there is done, then event
 *     `event` is set (once per run);
 *   - wait: `device` goes on only once event `event` is set. Events are the
 *     only order between devices: a device never waits for another except
 *     where it reads what that device produced;
 *   - barrier: on `device`, everything before it is done (and its writes
 *     seen) before anything after it starts. `host` set: the host waits too
 *     (a finish), as before reading results back.
 *   - if / loop: a run-time If, or Loop/Scan (graph/control_rt.c; always
 *     after a host barrier): graph node `node`, run on the host over child
 *     programs compiled once each (api/ numbers them in command order: If:
 *     `child` is the then branch, child + 1 the else branch; Loop/Scan:
 *     `child` is the body). Its args are the node's inputs then its outputs,
 *     as plan slots (-1: absent or unused), and
 *     its ranges the whole slots it reads and writes. The host reads the
 *     condition (and a Loop's trip count) through the device's copy to the
 *     host, binds the child's inputs to the parent's slots and copies the
 *     child's outputs into them; loop-carried values swap between the node's
 *     two sets of output slots each iteration, so a run allocates nothing.
 * Dispatches with no barrier between them may run at the same time
 * (plan_barriers decides where barriers go). The list always ends with a host
 * barrier on every device that dispatched since its last one, so a run has
 * finished when every device's last command has.
 *
 * The runtime (api/program.c, api/streams.c) binds inputs, executes each
 * device's commands in list order on a host thread of its own (one stream
 * per device, ordered across devices only by signal and wait) and hands out
 * outputs; it decides nothing about order or memory.
 *
 * requires: plan_build and plan_barriers ran on the lowered program.
 * guarantees: plan_commands_verify passes.
 */
#ifndef SMELT_PLAN_COMMANDS_H
#define SMELT_PLAN_COMMANDS_H

#include <stdio.h>

#include "plan/plan.h"

#define PLAN_HOST (-1) /* device index of the caller's (host) memory in copies */

typedef enum plan_cmd_kind {
    PLAN_CMD_DISPATCH,
    PLAN_CMD_COPY,
    PLAN_CMD_BARRIER,
    PLAN_CMD_IF,
    PLAN_CMD_LOOP,
    PLAN_CMD_SIGNAL,
    PLAN_CMD_WAIT,
    PLAN_CMD_KIND_COUNT
} plan_cmd_kind;

/* Bytes [lo, hi) of a slot, relative to where the slot starts. */
typedef struct plan_range {
    int slot;
    int64_t lo, hi;
    bool read, write;   /* dispatch ranges: how the kernel uses them */
} plan_range;

typedef struct plan_cmd {
    plan_cmd_kind kind;
    int device;              /* the device that executes it */
    /* dispatch */
    int kernel;              /* index into the lowered program's kernels */
    int first_arg, n_args;   /* plan_commands.args[first_arg ..]: per kernel buffer, its slot (-1: workgroup memory) */
    int first_range, n_ranges; /* plan_commands.ranges[first_range ..]: what it touches */
    int64_t n_workgroups;
    int wg_size;
    /* copy */
    int src_device, dst_device; /* PLAN_HOST: the caller's memory */
    plan_range src, dst;
    int64_t stage;           /* half of a copy between two devices: offset in the staging bytes; else -1 */
    /* signal / wait */
    int event;
    /* barrier */
    bool host;               /* the host waits for the device as well */
    /* if / loop (args and ranges as for a dispatch) */
    int node;                /* the graph node */
    int child;               /* its first child program (see above) */
} plan_cmd;

typedef struct plan_commands {
    plan_cmd *cmds;
    int n_cmds;
    int *args;
    plan_range *ranges;
    int n_devices;
    int count[PLAN_CMD_KIND_COUNT]; /* commands of each kind */
    int n_children;                 /* child programs the if/loop commands name */
    int64_t copy_bytes;             /* bytes all copies move per run (a copy between devices counted once) */
    int n_events;                   /* events the signal commands set, numbered from 0 */
    int64_t stage_bytes;            /* host staging bytes the copies between devices pass through */
    bool host_memory[PLAN_MAX_DEVICES]; /* per device: its memory is the host's */
    int n_transfers;                /* copies between two devices per run */
    int64_t transfer_bytes;         /* the bytes they move */
    int64_t arena_bytes[PLAN_MAX_DEVICES]; /* per device: the arena it needs (its own: mem_plan.dev_arena;
                                             * else the one plan's offsets, up to the end of the last slot
                                             * it touches) */
    int dispatches[PLAN_MAX_DEVICES];      /* per device: its dispatches */
    bool *held;                     /* [device * n_slots + root]: the device reads or writes it (its arena
                                     * holds it: plan_device_arenas) */
    int *home;                      /* per slot (roots): the device whose memory holds an output after a
                                     * run, the host reading it in place; PLAN_HOST: downloaded (or the
                                     * caller's, or a constant) */
} plan_commands;

/* Where the kernels run: per kernel its device (NULL: all on device 0), and
 * per device whether its memory is the host's. */
typedef struct plan_devices {
    int n;
    bool host_memory[PLAN_MAX_DEVICES];
    const int *kernel_device;
} plan_devices;

/* The command list for kernels placed on several devices (plan/transfers.c):
 * dispatches in kernel order, each on its device; before a dispatch, the
 * copies that bring the byte ranges it reads (plan_buffer_range) onto its
 * device where the latest bytes are elsewhere (tracked per byte range and
 * device, so a range already copied is not copied again); a barrier on a
 * device where plan_barriers put one between two of its kernels; outputs
 * downloaded only where no host-memory device holds them whole. */
smelt_status plan_commands_place(const ir_graph *g, const struct fuse_plan *fp, const lower_program *lp, const mem_plan *m,
                                 const plan_devices *pd, plan_commands *out);

/* The command list for one device whose memory is host memory (`host_memory`:
 * no copies) or not (inputs uploaded, arena outputs downloaded):
 * plan_commands_place with every kernel on device 0. */
smelt_status plan_commands_build(const ir_graph *g, const struct fuse_plan *fp, const lower_program *lp, const mem_plan *m,
                                 bool host_memory, plan_commands *out);
void plan_commands_free(plan_commands *c);
/* The buffer tables' length: dispatches index it by their first_arg. */
int plan_commands_n_args(const plan_commands *c);

/* Checks: kernels, devices and slots exist; every range lies inside its
 * slot's memory; copies move as many bytes as they receive; every byte range
 * a command reads lies in a slot written before on that device (constants
 * count as written everywhere, inputs on the host, and on a device too
 * where its memory is the host's: c->host_memory, or every device when
 * `host_memory`); no dispatch reads arena bytes that another dispatch since
 * the last barrier on its device writes, or writes bytes such a dispatch
 * reads (two writes are left to plan_barriers, which knows the boxes the
 * regions record apart); no copy goes from one device's memory straight
 * into another's; every cross-device read is ordered after its producer by
 * an event: the streams are modelled with a vector clock per device (a
 * signal records its device's clock, a wait takes the maximum), and a copy
 * out of the staging bytes must follow, in its device's clock, the copy on
 * another device that filled them; every event is set once and waited for
 * only after it is set, in list order; every device that dispatches has a
 * host barrier after its last dispatch, and the list ends with the host
 * waiting. SMELT_ERR_INTERNAL naming the command. */
smelt_status plan_commands_verify(const plan_commands *c, const ir_graph *g, const lower_program *lp, const mem_plan *m,
                                  bool host_memory);

/* `--emit plan`: one line per command. */
void plan_commands_dump(const plan_commands *c, const ir_graph *g, const lower_program *lp, FILE *f);

#endif
