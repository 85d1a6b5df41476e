/*
 * fuse_cases.h — building small graphs by hand and checking what fusion makes
 * of them, shared by the fusion and lowering tests (test_fuse_*.c,
 * test_lower_forms.c, test_lower_reduce.c).
 *
 * check_case checks a case twice: by fuse_build on the inferred graph, and end
 * to end through smelt_program_compile (whose graph is also bound, BN-folded and
 * compacted: nodes and tensors are therefore named, never numbered). The
 * compiled program must then compute what the `no_fuse` compile of the same
 * graph computes on the same inputs.
 *
 * A region is written as "name:role ..." (r root, i inline, e epilogue, s sibling) for
 * its nodes, and as space-separated tensor names for what it reads and writes.
 */
#ifndef SMELT_TEST_FUSE_CASES_H
#define SMELT_TEST_FUSE_CASES_H

#include <stdbool.h>
#include <stdint.h>

#include "api/program.h"

typedef void (*plan_check)(const ir_graph *g, const fuse_plan *fp);

ir_shape shp(int rank, ...);
int input(ir_graph *g, const char *name, ir_shape s);
int constant(ir_graph *g, const char *name, ir_shape s, float scale, float offset);
int op(ir_graph *g, const char *name, op_id id, int n_in, const int *in);
int op1(ir_graph *g, const char *name, op_id id, int x);
int op2(ir_graph *g, const char *name, op_id id, int a, int b);
void attr_ints(ir_graph *g, int node, const char *name, int n, const int64_t *v);
void attr_int(ir_graph *g, int node, const char *name, int64_t v);
void attr_str(ir_graph *g, int node, const char *name, const char *s);
int node_named(const ir_graph *g, const char *name);
const fuse_region *region_rooted(const ir_graph *g, const fuse_plan *fp, const char *root);
bool region_is(const ir_graph *g, const fuse_plan *fp, const char *root, const char *nodes, const char *reads, const char *writes);
fuse_role role_of(const ir_graph *g, const fuse_plan *fp, const char *name);
smelt_program *compile(ir_graph *g, int no_fuse);
/* compile with a thread pool of `threads` (compile's is 2) */
smelt_program *compile_threads(ir_graph *g, int no_fuse, int threads);
/* ... with smelt_options.locals = `locals` (a smelt_locals; -1: the target's default) */
smelt_program *compile_locals(ir_graph *g, int no_fuse, int threads, int locals);
void check_case(ir_graph *g, plan_check check, int regions, int kernels, double tol);
int workgroup_tiles(const smelt_program *p);
/* Statements of the program's kernels computing op `op` (after cleanup). */
int kernel_op_count(const smelt_program *p, kir_op op);
/* Run p on a float input x of `rank` dims: its first output's data (the
 * program's), and the output in *out if given. */
const float *run_x(smelt_program *p, float *xd, int rank, const int64_t *shape, smelt_tensor *out);
/* got against a double reference to a relative tol: the first mismatches
 * (of case `which`) are printed; returns how many were found, at most 3. */
int count_far(const float *got, const double *ref, int64_t n, double tol, int which);
void plan_any(const ir_graph *g, const fuse_plan *fp);

#endif
