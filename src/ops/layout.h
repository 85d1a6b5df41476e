/*
 * layout.h — data movement: reshapes, Transpose, Expand, Concat, Split, Slice, Pad,
 * Tile, DepthToSpace/SpaceToDepth, Trilu, CenterCropPad, CastLike, Dropout: shape rules,
 * index maps and the inserts (Concat, Pad) fusion writes through.
 *
 * The functions the op table's rows name for this family (ir/ops.h gives the
 * columns; ops/op_table.c fills the table) and what the family shares between
 * its shape rules and its lowerings. Defined in ops/layout.c, but Concat,
 * Split, Slice, Pad and CenterCropPad's, which are in ops/slice_pad.c.
 */
#ifndef SMELT_OPS_LAYOUT_H
#define SMELT_OPS_LAYOUT_H

#include "lower/lower.h"

typedef enum pad_mode { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE, PAD_WRAP, PAD_MODE_COUNT } pad_mode;
extern const char *const pad_mode_names[PAD_MODE_COUNT]; /* as ONNX spells them: "constant", ... */

/* The attributes of the layout ops, parsed once (ir/ops.h op_params) with
 * their defaults and the checks that need no shape. The list operands that
 * are an attribute in old opsets and an input in new ones (Slice's starts,
 * ends, axes; Pad's pads; Split's split; Squeeze's and Unsqueeze's axes) are
 * in `list` when given as attributes (infer_read_list, ops/shape.h, takes
 * them from there, or reads the input form, where they are used). */
enum { LIST_STARTS, LIST_ENDS, LIST_AXES, LIST_N }; /* Slice; Pad, Split, Squeeze, Unsqueeze: LIST_STARTS only */
#define LIST_PADS LIST_STARTS
#define LIST_SPLIT LIST_STARTS
#define LIST_SQ_AXES LIST_STARTS
typedef struct layout_params {
    int64_t axis;              /* Concat (required), Split (default 0), Flatten (default 1) */
    int64_t num_outputs;       /* Split: default the node's output count */
    bool has_num_outputs;
    int n_perm;                /* Transpose: -1 when absent (the reversed axes) */
    int perm[IR_MAX_RANK];
    int64_t blocksize;         /* DepthToSpace, SpaceToDepth: required, 1..2^20 */
    bool crd;                  /* DepthToSpace mode: CRD (else DCR, the default) */
    bool allowzero;            /* Reshape, default 0 */
    pad_mode mode;             /* Pad, default constant */
    float value;               /* Pad's fill before opset 11, default 0 */
    bool upper;                /* Trilu, default 1 */
    int n_axes;                /* CenterCropPad: -1 when absent (every axis) */
    int64_t axes[IR_MAX_RANK];
    bool lists_are_attrs;      /* Slice, Pad: the opset 1..10 form (starts/ends/axes, pads attributes) */
    int n_list[LIST_N];        /* the attribute lists above: -1 when absent */
    const int64_t *list[LIST_N]; /* the node's attribute values (in the graph's arena) */
} layout_params;
smelt_status parse_layout(const struct ir_graph *g, const struct ir_node *n, void *params);
/* n's layout_params (ir_node_params_get). */
smelt_status layout_params_of(const struct ir_graph *g, const struct ir_node *n, layout_params *scratch,
                              const layout_params **p);
/* The node's params in an index map (which cannot fail: shape inference parsed them). */
const layout_params *layout_elem_params(const struct lower_ctx *c, layout_params *scratch);

smelt_status infer_Reshape(struct ir_graph *g, int node);
smelt_status infer_Flatten(struct ir_graph *g, int node);
smelt_status infer_Squeeze(struct ir_graph *g, int node);
smelt_status infer_Unsqueeze(struct ir_graph *g, int node);
smelt_status infer_Transpose(struct ir_graph *g, int node);
smelt_status infer_Expand(struct ir_graph *g, int node);
smelt_status infer_Concat(struct ir_graph *g, int node);
smelt_status infer_Split(struct ir_graph *g, int node);
smelt_status infer_Slice(struct ir_graph *g, int node);
smelt_status infer_DepthToSpace(struct ir_graph *g, int node); /* also SpaceToDepth */
smelt_status infer_Tile(struct ir_graph *g, int node);
smelt_status infer_Pad(struct ir_graph *g, int node);
smelt_status infer_Dropout(struct ir_graph *g, int node);

/* Slice: per input axis, the first element read and the step (0 and 1 for
 * axes not sliced), and the output shape; starts/ends clamped per the spec. */
smelt_status slice_resolve(const struct ir_graph *g, const struct ir_node *n, int64_t *start, int64_t *step,
                           struct ir_shape *out);

/* Pad: per input axis, the padding before it; mode 0..3 = constant, reflect,
 * edge, wrap; and the output shape. */
smelt_status pad_resolve(const struct ir_graph *g, const struct ir_node *n, int64_t *begin, int *mode,
                         struct ir_shape *out);

/* Transpose: its permutation (`perm`, or reversed axes); returns its length. */
int transpose_perm(const struct ir_graph *g, const struct ir_node *n, int rank, int *perm);

/* Insert descriptions: the output holds input `input` unchanged at `offset`. */
bool insert_Concat(const struct ir_graph *g, const struct ir_node *n, int input, int64_t *offset);
bool insert_Pad(const struct ir_graph *g, const struct ir_node *n, int input, int64_t *offset);
kir_val elem_CastLike(struct lower_ctx *c, int out, const kir_val *idx);
kir_val elem_Reshape(struct lower_ctx *c, int out, const kir_val *idx); /* also Flatten/Squeeze/Unsqueeze */
kir_val elem_Transpose(struct lower_ctx *c, int out, const kir_val *idx);
kir_val elem_Expand(struct lower_ctx *c, int out, const kir_val *idx);
kir_val elem_Concat(struct lower_ctx *c, int out, const kir_val *idx);
kir_val elem_Split(struct lower_ctx *c, int out, const kir_val *idx);
kir_val elem_Slice(struct lower_ctx *c, int out, const kir_val *idx);
kir_val elem_DepthToSpace(struct lower_ctx *c, int out, const kir_val *idx);
kir_val elem_SpaceToDepth(struct lower_ctx *c, int out, const kir_val *idx);
kir_val elem_Tile(struct lower_ctx *c, int out, const kir_val *idx);
kir_val elem_Pad(struct lower_ctx *c, int out, const kir_val *idx);
kir_val elem_Dropout(struct lower_ctx *c, int out, const kir_val *idx);
smelt_status infer_Trilu(struct ir_graph *g, int node);
kir_val elem_Trilu(struct lower_ctx *c, int out, const kir_val *idx);
smelt_status infer_CenterCropPad(struct ir_graph *g, int node);
kir_val elem_CenterCropPad(struct lower_ctx *c, int out, const kir_val *idx);

#endif
