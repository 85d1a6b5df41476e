/*
 * lower/lower.h — lowering of graph nodes (regions) to Kernel IR.
 *
 * An op's lowering never touches buffers directly: it reads input elements with
 * lower_load() and writes output elements with lower_store(). The context
 * decides what a load is — a load from the tensor's buffer, or, when the
 * producer is fused into this kernel, the producer's own element function
 * evaluated at that index (index-map composition) — and what a store is — a
 * store, or an elementwise epilogue first. That is how fusion reuses every
 * op's lowering unchanged.
 *
 * Within one kernel, an inlined element requested twice at the same index is
 * computed once (memoized while the block that computed it is open).
 *
 * Element functions (op_elem_fn, injective ops) and lowerings (op_lower_fn)
 * see the node being computed in c->n. A lowering starts each kernel it needs
 * with lower_kernel_begin(), usually through lower_parallel_for(), which also
 * picks the workgroup split.
 */
#ifndef SMELT_LOWER_LOWER_H
#define SMELT_LOWER_LOWER_H

#include "ir/ir.h"
#include "kir/kir.h"
#include "kir/locals.h"
#include "place/target.h"

struct lower_state;

typedef struct lower_ctx {
    const ir_graph *g;
    const ir_node *n;         /* node whose element/kernel is being built */
    kir_kernel *k;            /* kernel being built                        */
    struct lower_state *st;   /* private to lower.c                       */
    const target_info *target;
} lower_ctx;

/* A kernel's comment (comment.c): region r (NULL: node `root` alone) as one
 * expression, e.g. "y[1,64,8,8] = relu(conv(x, w0, w1)): 3x3 stride 1 pad 1,
 * 64 to 64 channels (node 'conv1')", into buf (truncated to cap). */
struct fuse_region;
void lower_kernel_comment(const ir_graph *g, const struct fuse_region *r, const ir_node *root, char *buf, size_t cap);

/* Start a new kernel with `n_workgroups` workgroups; becomes c->k. */
kir_kernel *lower_kernel_begin(lower_ctx *c, int64_t n_workgroups);

/* Element of input `i` of c->n at multi-index idx (idx has the input's rank;
 * NULL for a scalar). The result has the input's dtype. */
kir_val lower_load(lower_ctx *c, int i, const kir_val *idx);

/* Whether input `i` of c->n is read straight from its buffer (not computed
 * inline, not an insert's skipped input, not a folded scalar): then
 * lower_load's address is the row-major linear index of idx, and an index
 * running past the last dim lands on the following elements. */
bool lower_input_is_plain(const lower_ctx *c, int i);

/* Element of input `i`, numpy-broadcast from an index of `rank` dims: leading
 * dims beyond the input's rank are dropped, size-1 dims read index 0. */
kir_val lower_load_bcast(lower_ctx *c, int i, int rank, const kir_val *idx);

/* Store v (of output o's dtype) as element idx of output o of c->n. */
void lower_store(lower_ctx *c, int o, const kir_val *idx, kir_val v);

/* Whether lower_store of output o of c->n may be given an index whose dims
 * from d0 on are zeros but the last, which carries the element's linear
 * position within those dims (a run of a plane written as one loop): the
 * store and every load of the region's epilogue then address the same
 * elements. False where an epilogue operand varies along those dims but is
 * computed inline or broadcast across part of them, where an insert offsets
 * them, or where the region stores side outputs. */
bool lower_store_is_flat(const lower_ctx *c, int o, int d0);

/* Row-major linear index of idx in shape s, and the inverse. */
kir_val lower_linear(kir_kernel *k, const ir_shape *s, const kir_val *idx);
void lower_unravel(kir_kernel *k, const ir_shape *s, kir_val linear, kir_val *idx);

/* Whether some load of k from a tensor walks memory with a stride other than
 * 0 or 1 along loop value `var` (reads across rows: a transposed index map,
 * a gather): the loop cannot run on contiguous vectors. */
bool lower_reads_across(const kir_kernel *k, kir_val var);
/* Element idx of output `out` of c->n, from its scalar or element function. */
kir_val lower_element(lower_ctx *c, int out, const kir_val *idx);


/* var = var op e(i) for i in [0, n), op KIR_ADD, KIR_MAX or KIR_MIN over a
 * float dtype; elem builds e(i). On the CPU, for n of two vectors or more,
 * lane q of V = vector width partial results (workgroup memory) takes the i
 * with i % V == q over whole vectors, so the loop vectorizes (a serial chain
 * of adds or NaN-exact maxes does not); the lanes are then folded into var in
 * order and the rest of the row added serially. The order of the additions is
 * thus fixed by V: interpreter and compiled code agree, and it differs from
 * the serial order only by rounding. */
typedef kir_val (*lower_elem_fn)(lower_ctx *c, kir_val i, void *user);
/* The one dim of s in `mask` longer than 1 (a row lower_reduce_var can take),
 * or -1 when there is none or several. */
int lower_one_long_dim(const ir_shape *s, uint32_t mask);
void lower_reduce_var(lower_ctx *c, int var, smelt_dtype dt, kir_op op, int64_t n, lower_elem_fn elem, void *user);
/* The same for n_vars variables at once (each var[k] op[k]= e_k(i), all of
 * dtype dt): elem fills out[0 .. n_vars) for element i, so what the terms
 * share (a load, a fused producer) is built once; each variable's order of
 * operations is lower_reduce_var's. */
typedef void (*lower_elems_fn)(lower_ctx *c, kir_val i, void *user, kir_val *out);
void lower_reduce_vars(lower_ctx *c, int n_vars, const int *var, const kir_op *op, smelt_dtype dt, int64_t n,
                       lower_elems_fn elem, void *user);

/* The reductions region c->n's region computes in c->n's loops (fuse.h
 * "siblings"), in graph order, at most FUSE_SIBLINGS_MAX - 1 into out;
 * returns how many. A lowering that stores one sets c->n to it around
 * lower_store (its epilogue follows). */
int lower_siblings(const lower_ctx *c, const ir_node **out);

/* For a lowering that builds its kernels, inspects them and rebuilds another
 * way: the number of kernels so far, and dropping the ones after it. */
int lower_mark(lower_ctx *c);
void lower_rollback(lower_ctx *c, int mark);

/* Clamp an i64 value into [0, hi) — for guarded reads such as Pad's borders. */
kir_val lower_clamp(kir_kernel *k, kir_val v, int64_t hi);

/* Begin a kernel that visits every index of `shape`: workgroups take slices
 * of the outer dims (sized so each does at least ~`work_per_elem` x 16K
 * operations of work), the innermost dim is an inner loop. body() is called
 * once, inside the loop nest, with the full index (shape->rank entries), and
 * emits the work for one element. */
typedef void (*lower_body_fn)(lower_ctx *c, const kir_val *idx, void *user);
void lower_parallel_for(lower_ctx *c, const ir_shape *shape, int64_t work_per_elem,
                        lower_body_fn body, void *user);

/* Edge of the plain tiles of lower_tiles; lower_parallel_for tries them for
 * spaces at least twice as large in both trailing dims. */
#define LOWER_TILE 64
/* lower_parallel_for's kernel again, in 2-D tiles (lower/tiles.c),
 * for a body that reads across rows; elem_out >= 0 says body stores output
 * elem_out of c->n element by element, which lets a transposed read be
 * staged through workgroup memory. */
void lower_tiles(lower_ctx *c, const ir_shape *shape, lower_body_fn body, void *user, int elem_out);

/* A scratch buffer private to this node's kernels (e.g. a reduction's partial
 * results between two kernels). Returns a pseudo-tensor usable with
 * lower_scratch_load/store in every kernel begun after this call. */
int lower_scratch(lower_ctx *c, smelt_dtype type, int64_t numel);
kir_val lower_scratch_load(lower_ctx *c, int scratch, kir_val linear);
void lower_scratch_store(lower_ctx *c, int scratch, kir_val linear, kir_val v);

/* Generic lowering of an elementwise/broadcast/injective node: one kernel over
 * its output shape (for each output), computing elements with the op's scalar
 * or element function. */
smelt_status lower_elementwise(lower_ctx *c);

/* lower_parallel_for on targets with c->target->wg_size > 1 (lower/gpu.c); ops
 * with a workgroup-cooperative form name it in op_gpu_lower (ir/ops.h). */
void lower_parallel_for_gpu(lower_ctx *c, const ir_shape *shape, int64_t work_per_elem, lower_body_fn body,
                            void *user);

/* ---- the driver's side ---------------------------------------------------- */

/* All kernels lowered for a graph, in execution order. Scratch buffers are
 * numbered after the graph's tensors: buffer.tensor == g->n_tensors + s. */
typedef struct lower_program {
    arena *arena;
    kir_kernel **kernels;
    int *kernel_node;         /* the graph node each kernel computes */
    int n_kernels, cap_kernels;
    smelt_dtype *scratch_type;
    int64_t *scratch_numel;
    int n_scratch, cap_scratch;
    const target_info *target; /* NULL: target_cpu */
} lower_program;

void lower_program_init(lower_program *p, arena *a);
void lower_program_free(lower_program *p);

/* Lower node `node` of g on its own (no fusion), appending its kernels to p;
 * each is verified. Used for constant folding. */
smelt_status lower_node(lower_program *p, const ir_graph *g, int node);

/* Node `node` computed on the host: lower_node, then the Kernel IR interpreter
 * over its kernels, writing the outputs' (allocated) data. The evaluator
 * api/ gives graph_infer for constant folding (graph_eval_fn). */
smelt_status lower_eval_node(const ir_graph *g, int node);

struct fuse_plan;
/* Lower region r of a fusion plan: the root's lowering, with loads of inlined
 * tensors replaced by their producers' element functions and stores of
 * tensors with an epilogue continued into it. */
smelt_status lower_region(lower_program *p, const ir_graph *g, const struct fuse_plan *fp, int r);

#endif
