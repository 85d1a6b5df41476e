/* import.c — ModelProto → ir_graph: opsets, inputs, initializers, nodes, attributes (calls of
 * model-local functions are inlined by function.c).
 * Nodes of opsets before ONNX_OPSET_NATIVE are upgraded as they are imported (upgrade.c). */
#include "onnx/onnx.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/hash.h"
#include "onnx/expand.h"
#include "onnx/importer.h"
#include "onnx/onnx.pb-c.h"

#define MESSAGE_DEPTH_MAX 100
#define INLINED_NODES_MAX (1 << 20)

static bool is_default_domain(const char *d) { return !*str(d) || strcmp(d, "ai.onnx") == 0; }

smelt_status import_node_fail(const char *node, const char *op, smelt_status st, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return diag_fail(st, "node '%s' (%s): %s", node, op, msg);
}

smelt_status import_oom(void) { return diag_fail(SMELT_ERR_NOMEM, "out of memory importing the model"); }

/* ---- tensors ------------------------------------------------------------- */

/* A fresh tensor named `name`; with `uniquify`, "#2", "#3"... is appended when
 * the name is taken. Returns the index or -1 (out of memory). */
int import_tensor_new(importer *im, const char *name, bool uniquify)
{
    char *buf = NULL;
    if (uniquify && *name && strmap_get(&im->names, name) != -1) {
        size_t cap = strlen(name) + 16;
        if (!(buf = malloc(cap))) return -1;
        for (int k = 2;; k++) {
            snprintf(buf, cap, "%s#%d", name, k);
            if (strmap_get(&im->names, buf) == -1) break;
        }
        name = buf;
    }
    int t = ir_tensor_add(im->g, name, SMELT_UNDEFINED, NULL);
    free(buf);
    if (t < 0) return -1;
    if (*name && !strmap_put(&im->names, im->g->tensors[t].name, t)) return -1;
    return t;
}

/* tensor_new for upgrade.c: a uniquified name. */
static int tensor_new_unique(void *im, const char *name) { return import_tensor_new(im, name, true); }

/* ---- unpacking without copying the weights twice ---------------------------------------------- */

/* Allocations of at least this many bytes are detached arena blocks. */
#define PB_BIG_BYTES ((size_t)64 * 1024)

static int ptr_find(void *const *v, int n, const void *p)
{
    for (int i = n - 1; i >= 0; i--) /* the newest first: protobuf-c frees in reverse order of use */
        if (v[i] == p) return i;
    return -1;
}

static bool ptr_push(void ***v, int *n, int *cap, void *p)
{
    if (*n == *cap) {
        int c = *cap ? 2 * *cap : 64;
        void **nv = realloc(*v, sizeof *nv * (size_t)c);
        if (!nv) return false;
        *v = nv;
        *cap = c;
    }
    (*v)[(*n)++] = p;
    return true;
}

static void *pb_alloc(void *data, size_t size)
{
    pb_alloc_state *st = data;
    if (size < PB_BIG_BYTES) return malloc(size);
    void *p = arena_detached_alloc(size);
    if (p && !ptr_push(&st->big, &st->n_big, &st->cap_big, p)) {
        arena_detached_free(p);
        p = NULL;
    }
    return p;
}

static void pb_free(void *data, void *p)
{
    pb_alloc_state *st = data;
    int i;
    if ((i = ptr_find(st->big, st->n_big, p)) >= 0) {
        st->big[i] = st->big[--st->n_big];
        arena_detached_free(p);
    } else if (ptr_find(st->adopted, st->n_adopted, p) < 0) {
        free(p);
    }
}

/* t's data is `tp`'s raw_data block itself when protobuf-c got it from
 * pb_alloc and no tensor has it yet (a tensor proto decoded twice, such as a
 * Constant in a function called twice, is copied the second time). */
static bool adopt_raw_data(importer *im, int t, const Onnx__TensorProto *tp, smelt_dtype dt, size_t bytes)
{
    pb_alloc_state *st = im->pb;
    if (!st || dt == SMELT_BOOL || !tp->has_raw_data || tp->raw_data.len != bytes || bytes < PB_BIG_BYTES ||
        (tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL))
        return false;
    int i = ptr_find(st->big, st->n_big, tp->raw_data.data);
    if (i < 0 || !ptr_push(&st->adopted, &st->n_adopted, &st->cap_adopted, tp->raw_data.data)) return false;
    st->big[i] = st->big[--st->n_big];
    arena_adopt(&im->g->arena, tp->raw_data.data);
    im->g->tensors[t].data = tp->raw_data.data;
    return true;
}

/* Decode `tp` into tensor t (dtype, shape and data). */
smelt_status import_tensor_decode(importer *im, int t, const Onnx__TensorProto *tp, const char *what)
{
    smelt_dtype dt;
    ir_shape shape;
    TRY(onnx_tensor_header(tp, im->base_dir, what, &dt, &shape));
    int64_t numel, bytes = onnx_tensor_bytes(dt, &shape, &numel);
    ir_tensor *x = &im->g->tensors[t];
    x->dtype = dt;
    x->shape = shape;
    if (adopt_raw_data(im, t, tp, dt, (size_t)bytes)) return SMELT_OK;
    if (!ir_tensor_alloc_data(im->g, t)) return import_oom();
    return onnx_tensor_fill(tp, im->base_dir, what, dt, numel, x->data, (size_t)bytes);
}

/* A constant tensor holding a copy of `n` elements of `dt` (a scalar if rank 0). */
static smelt_status tensor_set_const(importer *im, int t, smelt_dtype dt, int rank, size_t n, const void *vals)
{
    ir_tensor *x = &im->g->tensors[t];
    x->dtype = dt;
    x->shape = (ir_shape){.rank = rank, .dim = {(int64_t)n}};
    if (!ir_tensor_alloc_data(im->g, t)) return import_oom();
    if (n) memcpy(x->data, vals, n * smelt_dtype_size(dt));
    return SMELT_OK;
}

/* ---- scopes -------------------------------------------------------------- */

smelt_status import_scope_bind(scope *sc, const char *name, int t)
{
    return strmap_put(&sc->map, name, t) ? SMELT_OK : import_oom();
}

/* The tensor a node input names: -1 for "" or an omitted function input. */
smelt_status import_input_resolve(importer *im, scope *sc, const char *node, const char *op, const char *name, int *t)
{
    *t = -1;
    if (!*str(name)) return SMELT_OK;
    int v = strmap_get(&sc->map, name);
    if (v == -1 && sc->parent) TRY(subgraph_lookup(im, sc, name, &v));
    if (v == -1)
        return import_node_fail(node, op, SMELT_ERR_MODEL, "input '%s' is not defined by any earlier node, input or initializer",
                         name);
    *t = v == OMITTED ? -1 : v;
    return SMELT_OK;
}

/* The tensor a node output names: fresh, or the call site's for a function output. */
smelt_status import_output_define(importer *im, scope *sc, const char *node, const char *op, const char *name, int *t)
{
    if (!*str(name)) {
        *t = import_tensor_new(im, "", false);
        return *t < 0 ? import_oom() : SMELT_OK;
    }
    if (strmap_get(&sc->map, name) != -1)
        return import_node_fail(node, op, SMELT_ERR_MODEL, "output '%s' is already defined", name);
    *t = -1;
    for (size_t k = 0; sc->fn && k < sc->fn->n_output; k++)
        if (strcmp(str(sc->fn->output[k]), name) == 0) *t = sc->out_bound[k];
    if (*t < 0) {
        size_t cap = strlen(sc->prefix) + strlen(name) + 1;
        char *full = malloc(cap);
        if (!full) return import_oom();
        snprintf(full, cap, "%s%s", sc->prefix, name);
        *t = import_tensor_new(im, full, sc->fn != NULL);
        free(full);
        if (*t < 0) return import_oom();
    }
    return import_scope_bind(sc, name, *t);
}

/* ---- attributes ---------------------------------------------------------- */

/* The type of `a`, inferred from the fields set when an old model omits it. */
static int attr_type(const Onnx__AttributeProto *a)
{
    if (a->has_type && a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED) return a->type;
    if (a->has_f) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
    if (a->has_i) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    if (a->has_s) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
    if (a->t) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
    if (a->n_floats) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
    if (a->n_ints) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
    if (a->n_strings) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS;
    return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED;
}

static char *bytes_str(arena *ar, ProtobufCBinaryData b)
{
    char *s = arena_alloc(ar, b.len + 1);
    if (s && b.len) memcpy(s, b.data, b.len);
    return s;
}

/* Resolve the attributes of `np` in scope `sc` into a malloc'd array. */
static smelt_status attrs_resolve(scope *sc, const Onnx__NodeProto *np, const char *node, rattr **out, int *n)
{
    *n = 0;
    *out = malloc(sizeof(rattr) * (np->n_attribute + 1));
    if (!*out) return import_oom();
    for (size_t i = 0; i < np->n_attribute; i++) {
        const Onnx__AttributeProto *a = np->attribute[i];
        const char *ref = str(a->ref_attr_name);
        rattr r = {str(a->name), *ref ? NULL : a};
        /* smelt's own attributes carry what its passes proved (ir.h, IR_ATTR_INT_AMAX: that X
         * holds integers): a model file does not get to claim them */
        if (!strncmp(r.name, "smelt.", 6)) continue;
        if (*ref && !sc->fn)
            return import_node_fail(node, str(np->op_type), SMELT_ERR_MODEL,
                             "attribute '%s' refers to '%s' outside a function", r.name, ref);
        for (int k = 0; *ref && !r.a && k < sc->n_call_attr; k++)
            if (strcmp(sc->call_attr[k].name, ref) == 0) r.a = sc->call_attr[k].a;
        for (int k = 0; *ref && !r.a && k < sc->n_defaults; k++)
            if (strcmp(str(sc->defaults[k]->name), ref) == 0) r.a = sc->defaults[k];
        for (int k = 0; k < *n; k++)
            if (strcmp((*out)[k].name, r.name) == 0)
                return import_node_fail(node, str(np->op_type), SMELT_ERR_MODEL, "attribute '%s' is given twice", r.name);
        if (r.a) (*out)[(*n)++] = r; /* an unresolved reference means "absent" */
    }
    return SMELT_OK;
}

static smelt_status attr_convert(importer *im, scope *sc, const char *node, const char *op, const rattr *r,
                                 ir_attr *d, capture_list *caps)
{
    const Onnx__AttributeProto *a = r->a;
    arena *ar = &im->g->arena;
    memset(d, 0, sizeof *d);
    if (a->n_floats > INT_MAX || a->n_ints > INT_MAX || a->n_strings > INT_MAX)
        return import_node_fail(node, op, SMELT_ERR_MODEL, "attribute '%s' has too many elements", r->name);
    d->name = r->name;
    d->tensor = -1;
    switch (attr_type(a)) {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT: d->type = IR_ATTR_FLOAT; d->f = a->f; break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT: d->type = IR_ATTR_INT; d->i = a->i; break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING:
        d->type = IR_ATTR_STRING;
        if (!(d->s = bytes_str(ar, a->s))) return import_oom();
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS:
        d->type = IR_ATTR_FLOATS;
        d->n = (int)a->n_floats;
        d->floats = a->floats;
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
        d->type = IR_ATTR_INTS;
        d->n = (int)a->n_ints;
        d->ints = a->ints;
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS:
        d->type = IR_ATTR_STRINGS;
        d->n = (int)a->n_strings;
        if (!(d->strings = arena_alloc(ar, sizeof(char *) * (a->n_strings + 1)))) return import_oom();
        for (size_t i = 0; i < a->n_strings; i++)
            if (!(d->strings[i] = bytes_str(ar, a->strings[i]))) return import_oom();
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR: {
        if (!a->t) return import_node_fail(node, op, SMELT_ERR_MODEL, "attribute '%s' has no tensor", r->name);
        char what[512];
        snprintf(what, sizeof what, "%s/%s", node, r->name);
        int t = import_tensor_new(im, what, true);
        if (t < 0) return import_oom();
        snprintf(what, sizeof what, "node '%s' (%s): attribute '%s'", node, op, r->name);
        TRY(import_tensor_decode(im, t, a->t, what));
        d->type = IR_ATTR_TENSOR;
        d->tensor = t;
        break;
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH:
        if (caps && a->g) TRY(subgraph_attr_import(im, sc, node, a->g, d, caps));
        else d->type = IR_ATTR_OTHER;
        break;
    default: d->type = IR_ATTR_OTHER; break;
    }
    /* An int where a float is expected is read as that float (ir_attr_float). */
    int want = onnx_attr_expected_type(r->name);
    if (want >= 0 && (int)d->type != want && !(want == IR_ATTR_FLOAT && d->type == IR_ATTR_INT))
        return import_node_fail(node, op, SMELT_ERR_MODEL, "attribute '%s' is %s but must be %s", r->name,
                         onnx_attr_type_name(d->type), onnx_attr_type_name((ir_attr_type)want));
    return SMELT_OK;
}

/* ---- nodes --------------------------------------------------------------- */

/* A Constant node becomes the constant tensor it names; no node is added. */
static smelt_status constant_import(importer *im, scope *sc, const Onnx__NodeProto *np, const char *node,
                                    const rattr *attr, int n_attr)
{
    const char *op = "Constant";
    if (np->n_output != 1 || np->n_input != 0)
        return import_node_fail(node, op, SMELT_ERR_MODEL, "takes no inputs and one output, got %zu and %zu", np->n_input,
                         np->n_output);
    if (n_attr != 1)
        return import_node_fail(node, op, SMELT_ERR_MODEL, "needs exactly one value attribute, got %d", n_attr);
    const char *an = attr->name;
    const Onnx__AttributeProto *a = attr->a;
    int t;
    TRY(import_output_define(im, sc, node, op, np->output[0], &t));
    if (strcmp(an, "value") == 0 && a->t) {
        char what[512];
        snprintf(what, sizeof what, "node '%s' (Constant): attribute 'value'", node);
        return import_tensor_decode(im, t, a->t, what);
    }
    if (strcmp(an, "value_float") == 0 && a->has_f) return tensor_set_const(im, t, SMELT_F32, 0, 1, &a->f);
    if (strcmp(an, "value_int") == 0 && a->has_i) return tensor_set_const(im, t, SMELT_I64, 0, 1, &a->i);
    if (strcmp(an, "value_floats") == 0) return tensor_set_const(im, t, SMELT_F32, 1, a->n_floats, a->floats);
    if (strcmp(an, "value_ints") == 0) return tensor_set_const(im, t, SMELT_I64, 1, a->n_ints, a->ints);
    if (!strcmp(an, "value_string") || !strcmp(an, "value_strings") || !strcmp(an, "sparse_value"))
        return import_node_fail(node, op, SMELT_ERR_UNSUPPORTED, "attribute '%s' is not supported (smelt holds no %s tensors)",
                         an, an[0] == 's' ? "sparse" : "string");
    return import_node_fail(node, op, SMELT_ERR_MODEL, "attribute '%s' is not a valid Constant value", an);
}

smelt_status import_opsets_check(size_t n, Onnx__OperatorSetIdProto *const *ops, const char *where, int *opset)
{
    for (size_t i = 0; i < n; i++) {
        if (!is_default_domain(ops[i]->domain)) continue;
        int64_t v = ops[i]->has_version ? ops[i]->version : 0;
        if (v < ONNX_OPSET_MIN || v > ONNX_OPSET_MAX)
            return diag_fail(SMELT_ERR_UNSUPPORTED, "%s imports opset %lld of the default ONNX domain; smelt supports %d..%d",
                             where, (long long)v, ONNX_OPSET_MIN, ONNX_OPSET_MAX);
        if (opset) *opset = (int)v;
        return SMELT_OK;
    }
    return SMELT_OK;
}

static smelt_status op_node_import(importer *im, scope *sc, const Onnx__NodeProto *np, const char *node, op_id op,
                                   const rattr *attr, int n_attr)
{
    const char *opn = str(np->op_type);
    if (np->n_input > INT_MAX / 2 || np->n_output > INT_MAX / 2)
        return import_node_fail(node, opn, SMELT_ERR_MODEL, "too many inputs or outputs");
    /* Subgraphs first: the outer-scope values they read become implicit inputs. */
    capture_list caps = {.base = (int)np->n_input};
    ir_attr *at = malloc(sizeof(ir_attr) * ((size_t)n_attr + 1));
    smelt_status st = at ? SMELT_OK : import_oom();
    capture_list *cp = op_get(op)->flags & OPF_CONTROL ? &caps : NULL; /* other ops keep graphs as OTHER */
    for (int i = 0; !st && i < n_attr; i++) st = attr_convert(im, sc, node, opn, &attr[i], &at[i], cp);
    int *in = st ? NULL : malloc(sizeof(int) * (np->n_input + (size_t)caps.n + np->n_output + 1));
    if (!st && !in) st = import_oom();
    int *out = in ? in + np->n_input + caps.n : NULL;
    for (size_t i = 0; !st && i < np->n_input; i++) st = import_input_resolve(im, sc, node, opn, np->input[i], &in[i]);
    for (int i = 0; !st && i < caps.n; i++) in[np->n_input + (size_t)i] = caps.t[i];
    for (size_t i = 0; !st && i < np->n_output; i++) st = import_output_define(im, sc, node, opn, np->output[i], &out[i]);
    int n = -1;
    if (!st && (n = ir_node_add(im->g, node, op, (int)np->n_input + caps.n, in, (int)np->n_output, out)) < 0)
        st = import_oom();
    for (int i = 0; !st && i < n_attr; i++)
        if (!ir_node_attr_add(im->g, n, &at[i])) st = import_oom();
    free(at);
    free(caps.t);
    if (!st && sc->opset < ONNX_OPSET_NATIVE) {
        onnx_upgrade_ctx cx = {.importer = im, .tensor_new = tensor_new_unique};
        st = onnx_upgrade_node(&cx, im->g, n, sc->opset);
    }
    free(in);
    return st;
}

/* Resolves a node's inputs, outputs and attributes as a detached ir_node for
 * an import-time expansion into ops of the table, and calls `expand` on it. */
typedef smelt_status (*node_expand_fn)(importer *im, ir_node *n, const char *opn, const void *rule);

static smelt_status detached_node_import(importer *im, scope *sc, const Onnx__NodeProto *np, const char *node,
                                         const rattr *attr, int n_attr, node_expand_fn expand, const void *rule)
{
    const char *opn = str(np->op_type);
    if (np->n_input > INT_MAX / 2 || np->n_output > INT_MAX / 2)
        return import_node_fail(node, opn, SMELT_ERR_MODEL, "too many inputs or outputs");
    int *in = malloc(sizeof(int) * (np->n_input + np->n_output + 1));
    ir_attr *at = malloc(sizeof(ir_attr) * ((size_t)n_attr + 1));
    smelt_status st = in && at ? SMELT_OK : import_oom();
    int *out = in ? in + np->n_input : NULL;
    for (size_t i = 0; !st && i < np->n_input; i++) st = import_input_resolve(im, sc, node, opn, np->input[i], &in[i]);
    for (size_t i = 0; !st && i < np->n_output; i++) st = import_output_define(im, sc, node, opn, np->output[i], &out[i]);
    for (int i = 0; !st && i < n_attr; i++) st = attr_convert(im, sc, node, opn, &attr[i], &at[i], NULL);
    if (!st) {
        ir_node n = {.name = node, .op = OP_INVALID, .n_in = (int)np->n_input, .n_out = (int)np->n_output,
                     .in = in, .out = out, .n_attr = n_attr, .attr = at};
        st = expand(im, &n, opn, rule);
    }
    free(at);
    free(in);
    return st;
}

static int expand_tensor_new(void *im, const char *name) { return import_tensor_new(im, name, true); }

/* An op replaced by a composition of table ops (onnx/expand.h: quantized and
 * com.microsoft ops). */
static smelt_status rule_expand(importer *im, ir_node *n, const char *opn, const void *rule)
{
    const expand_rule *r = rule;
    expand_ctx x = {.g = im->g, .n = n, .op = opn, .domain = r->domain, .tensor_new = expand_tensor_new, .user = im};
    return expand_node(r, &x);
}

static smelt_status expanded_node_import(importer *im, scope *sc, const Onnx__NodeProto *np, const char *node,
                                         const expand_rule *rule, const rattr *attr, int n_attr)
{
    return detached_node_import(im, sc, np, node, attr, n_attr, rule_expand, rule);
}

/* A node is a call of a model-local function, a Constant, an op of the table,
 * or an op expanded into ops of the table (default or com.microsoft domain). */
static smelt_status node_dispatch(importer *im, scope *sc, const Onnx__NodeProto *np, const char *node,
                                  const rattr *attr, int n_attr)
{
    const char *op = str(np->op_type), *domain = str(np->domain);
    const Onnx__FunctionProto *fn = import_function_find(im->m, domain, op);
    if (fn) return import_function_inline(im, sc, np, node, fn, attr, n_attr);
    const expand_rule *ex = expand_find(domain, op, sc->opset);
    if (ex && !im->g->opset)
        return import_node_fail(node, op, SMELT_ERR_UNSUPPORTED, "the model imports no opset of the default ONNX domain");
    if (ex) return expanded_node_import(im, sc, np, node, ex, attr, n_attr);
    if (!is_default_domain(domain))
        return import_node_fail(node, op, SMELT_ERR_UNSUPPORTED,
                         "unsupported op domain '%s': '%s' is neither an ONNX op nor a model-local function", domain, op);
    if (!im->g->opset)
        return import_node_fail(node, op, SMELT_ERR_UNSUPPORTED, "the model imports no opset of the default ONNX domain");
    if (strcmp(op, "Constant") == 0) return constant_import(im, sc, np, node, attr, n_attr);
    op_id id = op_lookup(op);
    if (id == OP_INVALID) return import_node_fail(node, op, SMELT_ERR_UNSUPPORTED, "unsupported op type '%s'", op);
    if (op_table[id].flags & OPF_INTERNAL)
        return import_node_fail(node, op, SMELT_ERR_UNSUPPORTED, "unsupported op type '%s' (smelt's own form of an op, not an ONNX op)", op);
    return op_node_import(im, sc, np, node, id, attr, n_attr);
}

smelt_status import_node(importer *im, scope *sc, const Onnx__NodeProto *np)
{
    const char *op = str(np->op_type);
    if (sc->fn && ++im->n_inlined > INLINED_NODES_MAX)
        return diag_fail(SMELT_ERR_UNSUPPORTED, "inlining functions yields more than %d nodes", INLINED_NODES_MAX);
    size_t cap = strlen(sc->prefix) + strlen(str(np->name)) + strlen(op) + 24;
    char *node = malloc(cap);
    if (!node) return import_oom();
    if (*str(np->name)) snprintf(node, cap, "%s%s", sc->prefix, np->name);
    else snprintf(node, cap, "%s%s_%d", sc->prefix, op, im->g->n_nodes);
    rattr *attr = NULL;
    int n_attr = 0;
    smelt_status st = attrs_resolve(sc, np, node, &attr, &n_attr);
    if (!st) st = node_dispatch(im, sc, np, node, attr, n_attr);
    free(attr);
    free(node);
    return st;
}

/* ---- the main graph ------------------------------------------------------ */

static smelt_status input_type(importer *im, int t, const Onnx__ValueInfoProto *vi, const char *kind)
{
    const char *name = str(vi->name);
    const Onnx__TypeProto *tp = vi->type;
    if (!tp) return diag_fail(SMELT_ERR_MODEL, "graph %s '%s' has no type", kind, name);
    if (tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
        return diag_fail(SMELT_ERR_UNSUPPORTED, "graph %s '%s': only tensors are supported, not sequences, maps, "
                         "optionals or sparse tensors", kind, name);
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    int et = tt->has_elem_type ? tt->elem_type : 0;
    bool held = (et > 0 && et <= SMELT_U64 && et != SMELT_STRING) || et == SMELT_BF16;
    if (et && !held)
        return diag_fail(SMELT_ERR_UNSUPPORTED, "graph %s '%s': dtype %s is not supported", kind, name,
                         onnx_dtype_name(et));
    if (t < 0) return SMELT_OK; /* outputs: checked, not trusted */
    if (!et) return diag_fail(SMELT_ERR_MODEL, "graph %s '%s' has no element type", kind, name);
    if (!tt->shape)
        return diag_fail(SMELT_ERR_UNSUPPORTED, "graph %s '%s' has no declared shape (its rank is unknown)", kind, name);
    if (tt->shape->n_dim > IR_MAX_RANK)
        return diag_fail(SMELT_ERR_UNSUPPORTED, "graph %s '%s': rank %zu exceeds the maximum of %d", kind, name,
                         tt->shape->n_dim, IR_MAX_RANK);
    ir_tensor *x = &im->g->tensors[t];
    x->dtype = (smelt_dtype)et;
    x->shape.rank = (int)tt->shape->n_dim;
    for (int i = 0; i < x->shape.rank; i++) {
        const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
        x->shape.dim[i] = -1; /* unknown unless a dim_value >= 0 says otherwise (onnx.h) */
        if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
            if (d->dim_value >= 0) x->shape.dim[i] = d->dim_value;
        } else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && *str(d->dim_param)) {
            if (!(x->dim_param[i] = arena_strdup(&im->g->arena, d->dim_param))) return import_oom();
        }
    }
    return SMELT_OK;
}

static smelt_status graph_import(importer *im, scope *sc)
{
    const Onnx__GraphProto *gp = im->m->graph;
    ir_graph *g = im->g;
    /* Reserve the main graph's names so inlined tensors never take one. */
    for (size_t i = 0; i < gp->n_node; i++)
        for (size_t k = 0; k < gp->node[i]->n_output; k++)
            if (*str(gp->node[i]->output[k]) && !strmap_put(&im->names, gp->node[i]->output[k], 0)) return import_oom();
    if (gp->n_sparse_initializer)
        return diag_fail(SMELT_ERR_UNSUPPORTED, "sparse initializer '%s' is not supported",
                         str(gp->sparse_initializer[0]->values ? gp->sparse_initializer[0]->values->name : NULL));
    for (size_t i = 0; i < gp->n_initializer; i++) {
        const Onnx__TensorProto *tp = gp->initializer[i];
        const char *name = str(tp->name);
        char what[512];
        snprintf(what, sizeof what, "initializer '%s'", name);
        if (!*name) return diag_fail(SMELT_ERR_MODEL, "initializer %zu has no name", i);
        if (strmap_get(&sc->map, name) != -1) return diag_fail(SMELT_ERR_MODEL, "%s is defined twice", what);
        int t = import_tensor_new(im, name, false);
        if (t < 0) return import_oom();
        TRY(import_scope_bind(sc, name, t));
        TRY(import_tensor_decode(im, t, tp, what));
    }
    int *ins = malloc(sizeof(int) * (gp->n_input + gp->n_output + 1));
    if (!ins) return import_oom();
    int *outs = ins + gp->n_input, n_in = 0;
    smelt_status st = SMELT_OK;
    for (size_t i = 0; !st && i < gp->n_input; i++) {
        const char *name = str(gp->input[i]->name);
        int c = strmap_get(&sc->map, name);
        if (c >= 0 && g->tensors[c].data) continue; /* an initializer: a constant, not an input */
        if (!*name) st = diag_fail(SMELT_ERR_MODEL, "graph input %zu has no name", i);
        else if (c >= 0) st = diag_fail(SMELT_ERR_MODEL, "graph input '%s' is declared twice", name);
        else if ((ins[n_in] = import_tensor_new(im, name, false)) < 0) st = import_oom();
        else if (!(st = import_scope_bind(sc, name, ins[n_in]))) st = input_type(im, ins[n_in++], gp->input[i], "input");
    }
    for (size_t i = 0; !st && i < gp->n_node; i++) st = import_node(im, sc, gp->node[i]);
    for (size_t i = 0; !st && i < gp->n_output; i++) {
        const char *name = str(gp->output[i]->name);
        outs[i] = strmap_get(&sc->map, name);
        if (outs[i] < 0) st = diag_fail(SMELT_ERR_MODEL, "graph output '%s' is not computed by any node", name);
        else if (gp->output[i]->type) st = input_type(im, -1, gp->output[i], "output");
    }
    if (!st && !ir_graph_set_io(g, n_in, ins, (int)gp->n_output, outs)) st = import_oom();
    free(ins);
    return st;
}

/* protobuf-c unpacks nested messages recursively without a depth limit, so a
 * hostile file of deeply nested attributes could exhaust the stack. Walk the
 * wire format with the descriptors first, iteratively, and refuse deep nests. */
static bool nesting_ok(const uint8_t *p, size_t size)
{
    struct { const ProtobufCMessageDescriptor *d; const uint8_t *end; } st[MESSAGE_DEPTH_MAX];
    int top = 0;
    st[0].d = &onnx__model_proto__descriptor;
    st[0].end = p + size;
    while (top >= 0) {
        if (p >= st[top].end) {
            top--;
            continue;
        }
        uint64_t key, len;
        if (!pb_read_varint(&p, st[top].end, &key)) return true; /* malformed: unpack reports it */
        switch (key & 7) {
        case 0: if (!pb_read_varint(&p, st[top].end, &len)) return true; break;
        case 1: case 5: {
            size_t n = (key & 7) == 1 ? 8 : 4;
            if ((size_t)(st[top].end - p) < n) return true;
            p += n;
            break;
        }
        case 2: {
            if (!pb_read_varint(&p, st[top].end, &len) || len > (uint64_t)(st[top].end - p)) return true;
            const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field(st[top].d, (unsigned)(key >> 3));
            if (f && f->type == PROTOBUF_C_TYPE_MESSAGE) {
                if (top + 1 >= MESSAGE_DEPTH_MAX) return false;
                st[top + 1].d = f->descriptor;
                st[top + 1].end = p + len;
                top++;
            } else {
                p += len;
            }
            break;
        }
        default: return true;
        }
    }
    return true;
}

smelt_status onnx_load_memory(const void *data, size_t size, const char *base_dir, ir_graph **out)
{
    *out = NULL;
    if (!data && size) return diag_fail(SMELT_ERR_INVALID_ARG, "onnx_load_memory: data is NULL");
    if (!nesting_ok(data, size))
        return diag_fail(SMELT_ERR_MODEL, "model messages nest deeper than %d levels", MESSAGE_DEPTH_MAX);
    pb_alloc_state pb = {0};
    ProtobufCAllocator alloc = {pb_alloc, pb_free, &pb};
    Onnx__ModelProto *m = onnx__model_proto__unpack(&alloc, size, data);
    if (!m) {
        free(pb.big);
        return diag_fail(SMELT_ERR_MODEL, "not a valid ONNX model: the protobuf could not be parsed");
    }
    importer im = {.m = m, .pb = &pb, .base_dir = base_dir, .g = ir_graph_new()};
    scope sc = {.prefix = ""};
    strmap_init(&im.names);
    strmap_init(&sc.map);
    smelt_status st = im.g ? SMELT_OK : import_oom();
    int opset = 0;
    if (!st && !m->graph) st = diag_fail(SMELT_ERR_MODEL, "the model has no graph");
    if (!st) st = import_opsets_check(m->n_opset_import, m->opset_import, "the model", &opset);
    if (!st) {
        im.g->opset = sc.opset = opset; /* 0 when not imported: then no default-domain node may appear */
        sc.g = im.g;
        st = graph_import(&im, &sc);
    }
    if (!st && !im.g->opset) im.g->opset = ONNX_OPSET_MAX;
    if (!st && im.g->opset < ONNX_OPSET_NATIVE) im.g->opset = ONNX_OPSET_NATIVE; /* nodes now in that form */
    if (!st) st = ir_verify(im.g);
    strmap_free(&sc.map);
    strmap_free(&im.names);
    onnx__model_proto__free_unpacked(m, &alloc);
    free(pb.big);
    free(pb.adopted);
    if (st) {
        ir_graph_free(im.g);
        return st;
    }
    *out = im.g;
    return SMELT_OK;
}

/* The file's bytes are mapped, not read: protobuf-c copies what it keeps
 * (the weights into blocks the graph adopts), so a read would be one more
 * pass over every byte and as many fresh pages. Where mapping fails (a file
 * system without mmap) it is read. A file truncated by another process while
 * it is being parsed is the one case this does not survive (SIGBUS), as with
 * any mapped model. */
smelt_status onnx_load_file(const char *path, ir_graph **out)
{
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return diag_fail(SMELT_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    struct stat sb;
    char *buf = NULL, *dir = NULL;
    void *map = MAP_FAILED;
    size_t size = 0;
    smelt_status st = SMELT_OK;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        st = diag_fail(SMELT_ERR_IO, "'%s' is not a regular file", path);
    } else if ((uint64_t)sb.st_size > SIZE_MAX - 1 || !(dir = strdup(path))) {
        st = import_oom();
    } else if ((size = (size_t)sb.st_size) > 0 &&
               (map = mmap(NULL, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0)) == MAP_FAILED) {
        ssize_t got = 0;
        if (!(buf = malloc(size))) st = import_oom();
        while (!st && (size_t)got < size) {
            ssize_t r = read(fd, buf + got, size - (size_t)got);
            if (r <= 0) break;
            got += r;
        }
        if (!st && (size_t)got != size) st = diag_fail(SMELT_ERR_IO, "reading '%s' failed", path);
    }
    close(fd);
    if (!st) {
        char *slash = strrchr(dir, '/');
        if (slash == dir) slash[1] = 0;
        else if (slash) *slash = 0;
        static const char empty[1];
        const void *data = map != MAP_FAILED ? map : buf ? (const void *)buf : (const void *)empty;
        st = onnx_load_memory(data, size, slash ? dir : ".", out);
    }
    if (map != MAP_FAILED) munmap(map, size);
    free(buf);
    free(dir);
    return st;
}
