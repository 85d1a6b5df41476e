/*
 * passes.h — graph passes: Graph in, Graph out, in pipeline order.
 *
 *   graph_bind_inputs  fix symbolic input dims from the shapes the caller gives,
 *                      and turn graph inputs whose values decide shapes (inputs
 *                      in an op's value_in mask) into constants when given.
 *   graph_infer        shape and dtype inference for every node, in order,
 *                      folding each node whose inputs are all constant through
 *                      an evaluator the caller gives (graph/ uses no later
 *                      stage; api/ passes lower_eval_node, which lowers the
 *                      node and runs the Kernel IR interpreter, so folding
 *                      shares the kernels' semantics exactly).
 *   graph_dce          drop nodes whose outputs nobody reads, then compact.
 *
 * Each pass ends with ir_verify in debug and test builds.
 */
#ifndef SMELT_GRAPH_PASSES_H
#define SMELT_GRAPH_PASSES_H

#include "ir/ir.h"

/* requires: an imported graph. guarantees: every input has a concrete shape,
 * or the error names the input and the unbound dim. */
smelt_status graph_bind_inputs(ir_graph *g, int n, const smelt_tensor *inputs);

/* Largest tensor (elements) graph_infer folds at compile time; larger constant
 * expressions are left to run-time kernels. */
#define GRAPH_FOLD_MAX_ELEMS (16 * 1024 * 1024)

/* Computes node `node`'s outputs from its constant inputs into the outputs'
 * data, which graph_infer has allocated; returns an error naming the node on
 * failure. */
typedef smelt_status (*graph_eval_fn)(const ir_graph *g, int node);

/* requires: bound inputs. guarantees: every live tensor has dtype and shape;
 * with `eval`, nodes with all-constant inputs are folded (dead) and their
 * outputs hold data; with NULL, only shape rules that compute values (Shape,
 * Size, Constant...) fold. */
smelt_status graph_infer(ir_graph *g, graph_eval_fn eval);

/* requires: inferred graph. guarantees: no dead node, no unreachable tensor. */
smelt_status graph_dce(ir_graph *g);

/* Algebraic simplification: a Conv whose only consumer is an inference-mode
 * BatchNormalization with constant parameters (and constant Conv weights)
 * absorbs it: W' = W * s, B' = (B - mean) * s + bias with
 * s = scale / sqrt(var + epsilon), computed in double at compile time.
 * requires: inferred graph. guarantees: the graph computes the same values;
 * folded BatchNormalization nodes are dead (run graph_dce after). */
smelt_status graph_fold_batchnorm(ir_graph *g);

/* A Gemm with transA or transB set on a constant operand reads a copy of it
 * transposed at compile time instead, and the flag is cleared: the kernel
 * then reads it row by row with no transposing pass on every run. Likewise an
 * RNN/GRU/LSTM with constant W and R reads copies in the [D, K, N] order its
 * lowering works in, as PackedRNN/PackedGRU/PackedLSTM (ir/ops.h).
 * requires: inferred graph. guarantees: the graph computes the same values;
 * the original constant is left for graph_dce when nothing else reads it. */
smelt_status graph_fold_gemm_transpose(ir_graph *g);

/* Where packed weights live when several graphs share them (the model's
 * programs): find returns the packed copy of constant data `src` for (nr,
 * trans) made earlier, or NULL; keep takes over `data` (malloc'd, `bytes`
 * long) as that copy and returns the copy to use (another thread's, when it
 * kept one first; NULL on OOM, `data` then freed). Both may be called from
 * several threads at once. */
typedef struct graph_pack_cache {
    void *(*find)(void *user, const void *src, int64_t nr, bool trans);
    void *(*keep)(void *user, const void *src, int64_t nr, bool trans, void *data, size_t bytes);
    void *user;
} graph_pack_cache;

/* MatMul / Gemm whose B is a float32 constant matrix (and A is not constant)
 * read a copy of it packed into panels of nr columns instead (ir.h,
 * IR_ENC_PANELS; a Gemm's transB is applied in the packing and cleared). For
 * the C target, whose microkernels read such panels (ops/matmul.c); nr comes
 * from its tile table (mm_tiles_for). A weight two nodes share is packed
 * once; with a cache (may be NULL: the copies go in g's arena), once for all
 * graphs that use the cache.
 * requires: inferred graph. guarantees: the graph computes the same values;
 * the original constant is left for graph_dce when nothing else reads it. */
smelt_status graph_pack_weights(ir_graph *g, int64_t nr, const graph_pack_cache *cache);

/* If, Loop, Scan (graph/control.c), the op table's shape rule for them (OPF_CONTROL):
 * replaces node `node` by the nodes it runs, which graph_infer infers next. */
smelt_status control_expand(ir_graph *g, int node);

#endif
