/*
 * commands.h — the program as data: the command list every runtime executes.
 *
 * plan/ turns a lowered program and its memory plan into a list of commands,
 * each run by one device (an index into the program's devices; one device,
 * index 0, today — issue 18 fills in more):
 *   - dispatch: kernel `kernel` over n_workgroups x wg_size threads, its
 *     buffer table as plan slots (args: one per kernel buffer, -1 for
 *     workgroup memory) and the byte range of each slot it reads or writes
 *     (plan_buffer_range: the buffer's span, narrowed to the boxes its region
 *     writes);
 *   - copy: bytes [src.lo, src.hi) of slot src.slot on src_device into
 *     [dst.lo, dst.hi) of dst.slot on dst_device (PLAN_HOST: the caller's
 *     memory). Today: inputs uploaded before the first dispatch and outputs
 *     downloaded after the last on a device without host memory; later, the
 *     sub-ranges a consumer on another device reads;
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
 * barrier, so a run has finished when its last command has.
 *
 * The runtime (api/program.c) binds inputs, executes the commands in order
 * and hands out outputs; it decides nothing about order or memory.
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
    int64_t copy_bytes;             /* bytes all copies move per run */
} plan_commands;

/* The command list for one device whose memory is host memory (`host_memory`:
 * no copies) or not (inputs uploaded, arena outputs downloaded). */
smelt_status plan_commands_build(const ir_graph *g, const struct fuse_plan *fp, const lower_program *lp, const mem_plan *m,
                                 bool host_memory, plan_commands *out);
void plan_commands_free(plan_commands *c);

/* Checks: kernels, devices and slots exist; every range lies inside its
 * slot's memory; copies move as many bytes as they receive; every byte range
 * a command reads lies in a slot written before on that device (constants
 * count as written everywhere, inputs on the host, and on the device too
 * where its memory is the host's); no dispatch reads arena bytes that
 * another dispatch since the last barrier on its device writes, or writes
 * bytes such a dispatch reads (two writes are left to plan_barriers, which
 * knows the boxes the regions record apart); the list ends with a host
 * barrier. SMELT_ERR_INTERNAL naming the command. */
smelt_status plan_commands_verify(const plan_commands *c, const ir_graph *g, const lower_program *lp, const mem_plan *m,
                                  bool host_memory);

/* `--emit plan`: one line per command. */
void plan_commands_dump(const plan_commands *c, const ir_graph *g, const lower_program *lp, FILE *f);

#endif
