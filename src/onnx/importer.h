/*
 * importer.h — the importer's state, shared by import.c (the main graph,
 * nodes, attributes), function.c (model-local functions) and subgraph.c
 * (If/Loop/Scan bodies).
 *
 * Private to onnx/: nothing outside the folder includes it.
 */
#ifndef SMELT_ONNX_IMPORTER_H
#define SMELT_ONNX_IMPORTER_H

#include "core/diag.h"
#include "core/hash.h"
#include "ir/ir.h"
#include "onnx/onnx.pb-c.h"

#define OMITTED (-2) /* scope value of a function input the call site left out */

/* An attribute as a node sees it: its own name, the value after resolving
 * ref_attr_name against the enclosing function call. */
typedef struct rattr {
    const char *name;
    const Onnx__AttributeProto *a;
} rattr;

/* protobuf-c's allocations while unpacking a model: big ones (weight bytes,
 * mostly) are arena_detached_alloc blocks, so that a tensor's raw_data can
 * become its data without a copy (import_tensor_decode adopts the block into
 * the graph's arena). */
typedef struct pb_alloc_state {
    void **big;      /* detached blocks protobuf-c still owns */
    void **adopted;  /* blocks an arena took: protobuf-c's free leaves them */
    int n_big, cap_big, n_adopted, cap_adopted;
} pb_alloc_state;

typedef struct importer {
    ir_graph *g;
    pb_alloc_state *pb; /* NULL: the message was unpacked by plain malloc */
    const Onnx__ModelProto *m;
    const char *base_dir;
    strmap names; /* every tensor name in use, so inlined tensors get fresh ones */
    int n_inlined; /* nodes taken from function bodies, bounded against blow-up */
} importer;

/* Names visible to the nodes of the main graph, of one inlined call or of a
 * subgraph (If/Loop/Scan), whose names not defined in it come from `parent`. */
typedef struct scope scope;
struct scope {
    strmap map;               /* name → tensor, or OMITTED */
    const char *prefix;       /* "" in the main graph, "call/" inside a call */
    int depth;
    int opset;                /* default-domain opset the nodes were written for */
    const Onnx__FunctionProto *fn; /* NULL in the main graph */
    const int *out_bound;     /* fn->output[k] → the call site's tensor, or -1 */
    const rattr *call_attr;   /* the call site's attributes */
    int n_call_attr;
    Onnx__AttributeProto **defaults; /* fn's attribute_proto */
    int n_defaults;
    scope *parent;            /* a subgraph's enclosing scope, else NULL */
    ir_graph *g;              /* a subgraph's own graph (NULL: the importer's) */
    strmap *names;            /* its tensor names */
    int *caps, *cap_in;       /* outer-scope values read: parent's tensor, and this graph's input */
    int n_caps;
};


/* `caps` (NULL where the op takes no subgraph) collects the outer-scope values
 * a GRAPH attribute reads; they follow the node's `base` inputs. */
typedef struct capture_list {
    int *t, n, base;
} capture_list;

/* A protobuf varint at *p (before end), *p moved past it; false when it runs
 * past end or over 64 bits. */
static inline bool pb_read_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    *v = 0;
    for (int s = 0; s < 64 && *p < end; s += 7) {
        uint8_t b = *(*p)++;
        *v |= (uint64_t)(b & 0x7f) << s;
        if (!(b & 0x80)) return true;
    }
    return false;
}

static inline const char *str(const char *s) { return s ? s : ""; }

smelt_status import_oom(void);
/* A fresh tensor named `name`; with `uniquify`, "#2", "#3"... is appended when
 * the name is taken. Returns the index or -1 (out of memory). */
int import_tensor_new(importer *im, const char *name, bool uniquify);
/* Decode `tp` into tensor t (dtype, shape and data); `what` names it in errors. */
smelt_status import_tensor_decode(importer *im, int t, const Onnx__TensorProto *tp, const char *what);
smelt_status import_scope_bind(scope *sc, const char *name, int t);
/* The tensor a node input names: -1 for "" or an omitted function input. */
smelt_status import_input_resolve(importer *im, scope *sc, const char *node, const char *op, const char *name, int *t);
/* One NodeProto of scope `sc` into im->g. */
smelt_status import_node(importer *im, scope *sc, const Onnx__NodeProto *np);
/* A diagnostic naming the model node and its op: "node 'x' (Op): ...". */
smelt_status import_node_fail(const char *node, const char *op, smelt_status st, const char *fmt, ...)
    DIAG_PRINTF(4, 5);
/* Output `name` of a node of scope `sc`: a fresh tensor under the scope's
 * prefix, or the call site's tensor bound to a function output; *t = its index. */
smelt_status import_output_define(importer *im, scope *sc, const char *node, const char *op, const char *name, int *t);
/* The default-domain opset among `ops` in *opset (left as is when none is
 * imported); `where` names the model or function in the error. */
smelt_status import_opsets_check(size_t n, Onnx__OperatorSetIdProto *const *ops, const char *where, int *opset);

/* function.c */

/* The model-local function domain::name, or NULL. */
const Onnx__FunctionProto *import_function_find(const Onnx__ModelProto *m, const char *domain, const char *name);
/* Inline a call to model-local function `fn`: its body's nodes join the graph,
 * its tensors renamed under "<call>/", its formal inputs and outputs bound to
 * the call site's tensors. */
smelt_status import_function_inline(importer *im, scope *outer, const Onnx__NodeProto *np, const char *node,
                                    const Onnx__FunctionProto *fn, const rattr *attr, int n_attr);

/* subgraph.c */

/* A name a subgraph reads but does not define: the enclosing scopes' value,
 * captured as a new input of the subgraph (and, through the caller, an
 * implicit input of the control-flow node). *v = -1 when no scope has it. */
smelt_status subgraph_lookup(importer *im, scope *sc, const char *name, int *v);
/* GRAPH attribute `gp` of a control-flow node → d (IR_ATTR_GRAPH): its own
 * ir_graph, adopted by im->g, whose outer-scope reads are added to `caps`
 * and listed in d->cap as the node's input indices. */
smelt_status subgraph_attr_import(importer *im, scope *sc, const char *node, const Onnx__GraphProto *gp, ir_attr *d,
                                  capture_list *caps);

#endif
