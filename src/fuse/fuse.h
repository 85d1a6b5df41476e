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
 *              is inlined into them.
 *   epilogue   An elementwise consumer of a root's output applied at store
 *              time (bias, activation, residual add, scale): the root's
 *              output must have that consumer only, the same shape as the
 *              consumer's output, and not be a graph output; every other
 *              input of the consumer must be ready before the root runs.
 *              Chains of such consumers extend the epilogue.
 *
 * `no_fuse` makes every node its own region (one kernel per op), the
 * reference that fusion must match.
 *
 * requires: an inferred, dead-code-free graph.
 * guarantees: every live node is the root or epilogue of exactly one region,
 *             or inline (evaluated inside the regions that read it); regions
 *             are listed in an order where each one's inputs are ready.
 */
#ifndef SMELT_FUSE_FUSE_H
#define SMELT_FUSE_FUSE_H

#include <stdbool.h>
#include <stdio.h>

#include "ir/ir.h"

#define FUSE_RECOMPUTE_MAX 2

typedef enum fuse_role {
    FUSE_ROOT,
    FUSE_INLINE,
    FUSE_EPILOGUE,
} fuse_role;

typedef struct fuse_region {
    int root;
    int *nodes;      /* root, inlined producers, epilogue: in graph order */
    int n_nodes;
    int *reads;      /* tensors the region reads from memory */
    int n_reads;
    int *writes;     /* tensors the region writes to memory */
    int n_writes;
} fuse_region;

typedef struct fuse_plan {
    fuse_region *regions;
    int n_regions;
    fuse_role *role;  /* per node */
    int *inline_of;   /* per tensor: producing node when computed inline, else -1 */
    int *epilogue_of; /* per tensor: the epilogue node applied when it is stored, else -1 */
    int n_tensors;
} fuse_plan;

typedef struct fuse_options {
    bool no_fuse;
} fuse_options;

smelt_status fuse_build(const ir_graph *g, const fuse_options *opt, fuse_plan *out);
void fuse_free(fuse_plan *p);

/* `smelt compile --emit regions`: each region's root, fused ops, iteration
 * space, and the tensors it reads and writes. */
void fuse_dump(const ir_graph *g, const fuse_plan *p, FILE *f);
/* `--emit dot`: the graph with regions as Graphviz clusters. */
void fuse_dot(const ir_graph *g, const fuse_plan *p, FILE *f);

#endif
