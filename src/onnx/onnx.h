/*
 * onnx.h — the front door: ONNX models in, graph IR out; tensors to and from files.
 *
 * Importing
 *
 *     ir_graph *g;
 *     if (onnx_load_file("model.onnx", &g) != SMELT_OK)
 *         fprintf(stderr, "%s\n", smelt_last_error());
 *     ...
 *     ir_graph_free(g);
 *
 * requires: a serialized ModelProto (untrusted: every count, size, index and
 *           path in it is checked before use).
 * guarantees: a graph that passes ir_verify, in which
 *   - g->opset is the opset whose semantics every node follows: the model's
 *     default-domain ("" or "ai.onnx") opset, raised to ONNX_OPSET_NATIVE (7)
 *     for older models, whose nodes were upgraded to their opset-7 form as
 *     they were imported (upgrade.c); ONNX_OPSET_MAX for a model that imports
 *     none and uses no ONNX op;
 *   - initializers and Constant nodes are constant tensors (data set, no node);
 *     a graph input that is also an initializer is a constant, not an input;
 *   - graph inputs carry their declared dtype and shape; a symbolic dim is -1
 *     with dim_param[i] naming it, an unknown dim is -1 with dim_param[i] NULL.
 *     Unknown are: a dim with neither dim_value nor dim_param, and a negative
 *     dim_value (ONNX requires dim_value >= 0; older exporters wrote -1 for
 *     "unknown"). A dim_value of 0 stays 0: it is a legal size, and reading
 *     it as "unknown" would change the meaning of valid models. Unknown dims
 *     are bound like symbolic ones, from the given inputs or --shape;
 *   - node outputs have dtype SMELT_UNDEFINED and rank 0 until shape inference;
 *   - every node has an op from the op table; model-local functions are inlined
 *     (their tensors renamed "<call node>/<name>", attributes given by
 *     reference resolved from the call site or the function's defaults); the
 *     ops of onnx/expand.h (ONNX's integer/quantized ops, the com.microsoft ops
 *     smelt implements) are replaced by compositions of table ops;
 *   - an omitted optional input ("") is -1; an omitted output is an unnamed
 *     tensor nobody reads;
 *   - TENSOR attributes are constant tensors of the graph (ir_attr.tensor);
 *     GRAPH, SPARSE_TENSOR, TYPE_PROTO and list-of-those attributes are
 *     IR_ATTR_OTHER, for ops to reject by name.
 * Errors (the message names the node, op type, tensor or dtype at fault):
 *   SMELT_ERR_MODEL        malformed bytes, dangling or doubly-defined tensors,
 *                          data sizes that disagree with shapes, bad external
 *                          data paths or short external files
 *   SMELT_ERR_UNSUPPORTED  opset outside 1..27, op types outside the op table,
 *                          ops of other domains (ai.onnx.ml, com.microsoft ops
 *                          outside onnx/expand.h...) that are not model-local functions, dtypes smelt does
 *                          not hold (string, float16, bfloat16, complex, float8,
 *                          int4...), sparse initializers, rank above 8
 *   SMELT_ERR_IO           the model or an external data file cannot be read
 * On error *out is NULL and nothing leaks.
 *
 * External data (TensorProto.data_location == EXTERNAL) is read from the file
 * named by the "location" key, relative to the model's directory, at "offset"
 * for "length" bytes. Absolute locations and locations with a ".." component
 * are refused: a model may not read files outside its own directory.
 *
 * Tensor files
 *
 * `smelt run --input x=FILE` and `smelt check` read .npy files and serialized
 * ONNX TensorProtos (.pb, as in ONNX's backend tests); which one is decided by
 * the content (the npy magic "\x93NUMPY"), not the file name. Supported: npy
 * format 1.0, 2.0 and 3.0, little-endian or byte-order-free, C order, dtypes
 * f4 f8 i1 i2 i4 i8 u1 u2 u4 u8 b1.
 *
 * Host byte order is assumed little-endian, as ONNX raw_data and the npy files
 * smelt writes are.
 */
#ifndef SMELT_ONNX_ONNX_H
#define SMELT_ONNX_ONNX_H

#include <stddef.h>

#include "ir/ir.h"
#include "smelt.h"

/* Opsets of the default domain the importer accepts. */
#define ONNX_OPSET_MIN 1
#define ONNX_OPSET_MAX 27
/* The oldest opset smelt's shape rules and lowerings implement; nodes of older
 * models are upgraded to this opset's form on import. */
#define ONNX_OPSET_NATIVE 7

/* Load the model at `path`; external data is resolved next to it. */
smelt_status onnx_load_file(const char *path, ir_graph **out);
/* The ir_attr_type an attribute of this name must have in every op, or -1
 * where its type depends on the op (attr_types.c); and a type's name for
 * messages. */
int onnx_attr_expected_type(const char *name);
const char *onnx_attr_type_name(ir_attr_type t);

/* Load a serialized model from memory. `base_dir` is where external data files
 * live; when NULL, a model with external data is refused. `data` is not kept. */
smelt_status onnx_load_memory(const void *data, size_t size, const char *base_dir, ir_graph **out);

/* Read a tensor from a .npy file or a serialized TensorProto. On success
 * out->data (dense, row-major) and out->name (the TensorProto's name; NULL for
 * npy or an unnamed proto) are malloc'd: free them with tensor_file_free.
 * Errors: SMELT_ERR_IO (unreadable, short or unrecognised file),
 * SMELT_ERR_MODEL (a TensorProto whose data disagrees with its shape),
 * SMELT_ERR_UNSUPPORTED (a dtype smelt does not hold, big-endian or Fortran
 * order npy, rank above 8). On error *out is zeroed. */
smelt_status tensor_file_read(const char *path, smelt_tensor *out);

/* tensor_file_read on `size` bytes at `data` (not kept): `name` names the
 * tensor in messages, `base_dir` is where a TensorProto's external data lives
 * (NULL: external data is refused). */
smelt_status tensor_file_read_memory(const void *data, size_t size, const char *name, const char *base_dir,
                                     smelt_tensor *out);

/* Zeroed tensor data of `bytes` (at least 1), aligned to SMELT_ALIGN bytes,
 * freed with free(): what tensor_file_read and smelt_alloc hand out. */
void *tensor_data_alloc(size_t bytes);

/* Free what tensor_file_read allocated and zero *t (safe on a zeroed tensor). */
void tensor_file_free(smelt_tensor *t);

/* Write `t` as .npy (format 1.0, data 64-byte aligned like numpy). The file is
 * written to a temporary next to `path` and renamed over it, so a failed write
 * leaves no partial file. */
smelt_status tensor_file_write_npy(const char *path, const smelt_tensor *t);

/* Write `t` as a serialized TensorProto (raw_data, t->name as its name when
 * set), atomically like tensor_file_write_npy. */
smelt_status tensor_file_write_pb(const char *path, const smelt_tensor *t);

/* ---- shared by the importer and tensor_file.c ---------------------------- */

struct Onnx__TensorProto;

/* ONNX's name of a TensorProto data type ("float16", "bfloat16", ...), also for
 * the types smelt does not hold. */
const char *onnx_dtype_name(int onnx_type);

/* Read the dtype and shape of `tp`, refusing dtypes smelt cannot hold, ranks
 * above IR_MAX_RANK and negative dims, and check that the data it carries (raw,
 * typed, or external under `base_dir`) has exactly the size of its shape, so a
 * caller may allocate that size without trusting the model. `what` names the
 * tensor in messages ("initializer 'w'", "node 'c' (Constant): attribute 'value'"). */
smelt_status onnx_tensor_header(const struct Onnx__TensorProto *tp, const char *base_dir, const char *what,
                                smelt_dtype *dt, ir_shape *shape);

/* Copy the elements of `tp` into `dst`, which holds exactly `nbytes` =
 * numel * dtype size as given by onnx_tensor_header. */
smelt_status onnx_tensor_fill(const struct Onnx__TensorProto *tp, const char *base_dir,
                              const char *what, smelt_dtype dt, int64_t numel, void *dst,
                              size_t nbytes);

/* Bytes of a tensor of `shape` and `dt` (its element count in *numel), or -1
 * when a dim is negative or the bytes overflow, counting the non-zero dims of
 * an empty tensor too (so any order of multiplying its dims stays in range). */
int64_t onnx_tensor_bytes(smelt_dtype dt, const ir_shape *shape, int64_t *numel);

/* ---- shared by the importer and upgrade.c -------------------------------- */

/* How upgrade.c names the tensors it adds: tensor_new(importer, name) returns
 * a fresh tensor whose name is `name`, made unique against every name of the
 * model, or -1 when out of memory. */
typedef struct onnx_upgrade_ctx {
    void *importer;
    int (*tensor_new)(void *importer, const char *name);
} onnx_upgrade_ctx;

/* Rewrite node `node` (the graph's last, attributes converted), written for
 * default-domain `opset` < ONNX_OPSET_NATIVE, into its opset-7 form: old
 * attributes dropped, renamed or retyped (consumed_inputs, is_test, Gemm's
 * broadcast, Pad's paddings, Cast's type names, LpPool's float p, Upsample's
 * height/width scales), attributes turned into inputs (Reshape's shape), old
 * defaults made explicit (Concat's axis, Selu's alpha and gamma), and the
 * old `broadcast`/`axis` rule of binary ops and Tile's (tiles, axis) inputs
 * expressed with helper nodes placed before the node (shape arithmetic that
 * folds at compile time). Errors name the node, the rule and the opset. */
smelt_status onnx_upgrade_node(const onnx_upgrade_ctx *cx, ir_graph *g, int node, int opset);

#endif
