/*
 * plan.h — the memory plan: where every run-time tensor lives.
 *
 * Graph inputs are read from the caller's memory and constants (weights) from
 * the graph, never copied; every other tensor (and every scratch buffer) gets
 * an offset in one activation arena, allocated once at compile time, so a run
 * allocates nothing.
 *
 * Slots. There is one slot per graph tensor, then one per scratch buffer
 * (slot == kir_buffer.tensor). A slot either owns memory (alias == -1: a
 * *root*) or is an *alias*: the same bytes as its root, which is always a
 * root (alias chains are resolved). Aliases come from two places:
 *   - views: a node whose op has OPF_VIEW (Reshape, Flatten, Squeeze,
 *     Unsqueeze, Identity) and whose output dtype equals its input's is never
 *     lowered (see plan_node_is_view); its output is an alias of its input's
 *     root — which may be an arena tensor, a graph input or a constant.
 *   - in-place: a kernel may write its output over an input that dies at that
 *     kernel (see "In-place" below); the output becomes an alias.
 * A root's live interval [first, last] covers the uses of all its aliases; a
 * graph output (root or alias) keeps its group live to the end (last ==
 * n_kernels).
 *
 * In-place. Kernel k writes buffer w (tensor t, first written at k) over the
 * root R of a read buffer when all of these hold:
 *   - R and t are arena slots of equal bytes, the two kernel buffers have the
 *     same dtype and element count, and R's group is last used at k;
 *   - every buffer of k whose slot is in R's group is read-only, and every
 *     load from it uses the index of w's only store (structurally equal index
 *     expressions), is defined before that store with no loop, branch or
 *     barrier in between, and that index varies with every loop enclosing the
 *     store and with the workgroup index. So each element is read and then
 *     overwritten by the same iteration, and no iteration reads an element
 *     another one wrote.
 * Such read buffers get in_place_of[k][b] = w, the plan's own table, which the
 * emitter is given (emit_program's `alias`) so it binds them to w's pointer
 * instead of declaring two `restrict` pointers to one memory.
 *
 * Placement. Roots in the arena are placed largest first (ties: earlier
 * first); two placers are run and the smaller arena kept:
 *   - first-fit: the lowest 64-byte-aligned offset that conflicts with no
 *     placed slot live at the same time (TFLite's arena planner);
 *   - best-fit: among the gaps left between the conflicting placed slots, the
 *     smallest one that fits (else the top).
 * Measured: on the six benchmark models (bench/models.py) both reach the
 * lower bound exactly (with views and in-place the live sets are small and
 * nest). On 2000 random programs (tests/unit/test_plan.c, SMELT_PLAN_STATS=1)
 * first-fit averages 1.040x the lower bound and best-fit 1.043x; first-fit is
 * smaller on 174 programs, best-fit on 36 (best-fit fills a tight hole early
 * and leaves a ragged top for later, smaller slots). Neither dominates and
 * planning takes microseconds, so both run and the smaller arena is kept.
 *
 * requires: a lowered program whose lowering skipped view nodes.
 * modifies: nothing of the lowered program (the plan's tables are its own).
 * guarantees: plan_verify passes.
 */
#ifndef SMELT_PLAN_PLAN_H
#define SMELT_PLAN_PLAN_H

#include "ir/ir.h"
#include "lower/lower.h"

#define PLAN_ALIGN 64
#define PLAN_MAX_DEVICES 8
/* The most bytes all intermediate tensors together may need (their sum, before
 * reuse): every arena offset and end then fits int64 with room to spare. */
#define PLAN_MAX_BYTES ((int64_t)1 << 62)

typedef enum plan_kind {
    PLAN_NONE,     /* not used at run time */
    PLAN_INPUT,    /* caller's memory */
    PLAN_CONST,    /* graph constant data */
    PLAN_ARENA     /* activation arena at `offset` */
} plan_kind;

typedef struct plan_slot {
    plan_kind kind;       /* an alias has its root's kind and offset */
    int64_t offset, bytes;
    int first, last;      /* kernels that first / last use it; for a root: of its whole group */
    int alias;            /* -1: owns its memory; else the root slot it shares memory with */
    bool in_place;        /* an alias made by in-place reuse (else by a view) */
} plan_slot;

typedef struct mem_plan {
    plan_slot *slots;     /* graph tensors, then scratch buffers */
    int n_slots;
    int n_kernels;
    int64_t arena_bytes;  /* planned peak: the size of the arena */
    int64_t total_bytes;  /* sum of all intermediate tensors (aligned): no planning, no aliasing */
    int64_t lower_bound;  /* most root bytes (aligned) live during one kernel */
    int64_t first_fit_bytes, best_fit_bytes; /* what each placer needed */
    int64_t weight_bytes; /* constants read by kernels */
    int n_views, n_in_place;
    bool *barrier_before; /* per kernel, from plan_barriers: wait for earlier dispatches first */
    int **in_place_of;    /* per kernel, per buffer: -1, or the written buffer of that kernel whose
                           * memory this read-only buffer shares (in place) */
    int *in_place_table;  /* the rows of in_place_of, back to back */
    int n_barriers;
    /* Several devices (plan_device_arenas): each has its own arena, holding
     * only the roots that device reads or writes (a tensor in the arena of
     * the device that produces it, a copy's destination in its consumer's),
     * placed by the same placers over the same live intervals. NULL
     * dev_offset: one device, whose arena is `offset` above. */
    const int *kernel_device; /* per kernel its device (NULL: all on device 0): plan_barriers batches per device */
    int n_devices;
    int64_t *dev_offset;      /* [device * n_slots + root]: its offset in that device's arena; -1: not held there */
    int64_t dev_arena[PLAN_MAX_DEVICES]; /* per device: its arena's bytes */
} mem_plan;

/* True when node `node` of g is a view: an OPF_VIEW op whose output 0 has
 * input 0's dtype (and is not a constant). Such nodes are not lowered. */
bool plan_node_is_view(const ir_graph *g, int node);

smelt_status plan_build(const ir_graph *g, const lower_program *p, mem_plan *out);
/* The root slot whose memory slot s uses (s itself for a root). */
static inline int plan_root(const mem_plan *m, int s) { return m->slots[s].alias >= 0 ? m->slots[s].alias : s; }
void plan_free(mem_plan *m);

/* Where slot s lives in device d's arena (plan_device_arenas), or in the one
 * arena; -1 where d does not hold it. */
static inline int64_t plan_offset(const mem_plan *m, int d, int s)
{
    int r = plan_root(m, s);
    return m->dev_offset ? m->dev_offset[(size_t)d * (size_t)m->n_slots + (size_t)r] : m->slots[r].offset;
}

/* One arena per device: held[d * n_slots + root] says which arena roots
 * device d reads or writes (plan/transfers.c, plan_commands.held); each
 * device's are placed on their own (first-fit and best-fit, the smaller
 * kept), two of them sharing bytes only where their live intervals (over the
 * whole kernel order) are apart, as in the one arena. plan_barriers must run
 * again after it: barriers depend on offsets. Checked as plan_verify checks
 * the one arena, per device. */
smelt_status plan_device_arenas(mem_plan *m, int n_devices, const bool *held);

/* Checks: arena roots are aligned and inside the arena, and no two roots live
 * at the same time overlap; aliases name a root, share its kind and offset,
 * fit inside it and are live only while it is. With p (may be NULL): every
 * kernel buffer fits its slot and lies in its live interval, and a read
 * buffer that shares memory with a written buffer of the same kernel has
 * in_place_of naming it. */
smelt_status plan_verify(const mem_plan *m, const lower_program *p);

struct fuse_plan;
/* The command list's barriers (plan/barriers.c): barrier_before[i] where
 * kernel i touches arena bytes that a kernel dispatched since the last
 * barrier writes, or writes bytes it touches; the kernels between two
 * barriers may run at the same time. */
smelt_status plan_barriers(const ir_graph *g, const struct fuse_plan *fp, const lower_program *lp, mem_plan *m);
/* The bytes [*lo, *hi) of its slot (relative to the slot's start; an alias
 * starts where its root does) that buffer b of kernel i may touch: its span
 * (kir/spans.c), narrowed for a tensor its region writes only part of to the
 * hull of the boxes it records (*box: the one box, when exactly one). False
 * when it touches nothing (or is workgroup memory). */
struct fuse_range;
bool plan_buffer_range(const ir_graph *g, const struct fuse_plan *fp, const lower_program *lp, const mem_plan *m, int i,
                       int b, int64_t *lo, int64_t *hi, const struct fuse_range **box);

/* `smelt compile --emit plan`: totals, then every used slot's kind, offset,
 * size, live interval and what it aliases. */
void plan_dump(const ir_graph *g, const mem_plan *m, FILE *f);

#endif
