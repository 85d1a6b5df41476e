/*
 * fuse/uses.h — what fuse.c and share.c both need: the consumers of every
 * tensor, and the arithmetic cost of a node per element.
 */
#ifndef SMELT_FUSE_USES_H
#define SMELT_FUSE_USES_H

#include "ir/ir.h"

/* Consumers of every tensor, as a compressed list: cons[start[t] .. start[t+1]). */
typedef struct uses {
    int *start;
    int *cons;
} uses;

bool uses_build(const ir_graph *g, uses *u);
void uses_free(uses *u);

/* Arithmetic a node adds per element (0 for index-only ops). */
int fuse_node_cost(const ir_node *n);

struct fuse_plan;
/* The multi-output pass (share.c): merges elementwise regions into the one
 * region that reads their output, see fuse.h "shared". region_root, cost and
 * depth are fuse_build's per-node arrays, kept up to date. */
bool fuse_share(const ir_graph *g, const uses *u, struct fuse_plan *p, int *region_root, int *cost, int *depth);

/* The siblings pass (siblings.c): merges regions rooted at reductions of one
 * input with the same parameters, see fuse.h "siblings". */
void fuse_siblings(const ir_graph *g, const uses *u, struct fuse_plan *p, int *region_root);

#endif
