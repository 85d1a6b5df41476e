/* function.c — calls of model-local functions (FunctionProto) inlined as they
 * are imported: the body's nodes join the graph under "<call>/", its formal
 * inputs and outputs bound to the call site's tensors, its attribute
 * references resolved against the call's attributes (import.c,
 * attrs_resolve) or the function's defaults. */
#include "onnx/onnx.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/importer.h"

#define FUNCTION_DEPTH_MAX 16
/* FunctionProto fields newer than the onnx.proto we compile against. */
#define FUNCTION_FIELD_ATTRIBUTE_PROTO 11

const Onnx__FunctionProto *import_function_find(const Onnx__ModelProto *m, const char *domain, const char *name)
{
    for (size_t i = 0; i < m->n_functions; i++)
        if (strcmp(str(m->functions[i]->domain), domain) == 0 && strcmp(str(m->functions[i]->name), name) == 0)
            return m->functions[i];
    return NULL;
}

/* FunctionProto.attribute_proto (default attribute values) postdates the
 * onnx.proto we build against, so protobuf-c keeps it as an unknown field. */
static smelt_status function_defaults(const Onnx__FunctionProto *fn, const char *node, scope *sc)
{
    const ProtobufCMessage *base = &fn->base;
    sc->defaults = calloc(base->n_unknown_fields + 1, sizeof *sc->defaults);
    if (!sc->defaults) return import_oom();
    for (unsigned i = 0; i < base->n_unknown_fields; i++) {
        const ProtobufCMessageUnknownField *u = &base->unknown_fields[i];
        if (u->tag != FUNCTION_FIELD_ATTRIBUTE_PROTO || u->wire_type != PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED) continue;
        /* protobuf-c keeps the length prefix in an unknown field's data. */
        const uint8_t *p = u->data;
        uint64_t len;
        Onnx__AttributeProto *a = NULL;
        if (pb_read_varint(&p, u->data + u->len, &len) && len == (uint64_t)(u->data + u->len - p))
            a = onnx__attribute_proto__unpack(NULL, (size_t)len, p);
        if (!a)
            return import_node_fail(node, str(fn->name), SMELT_ERR_MODEL, "function '%s' has a malformed attribute default",
                             str(fn->name));
        sc->defaults[sc->n_defaults++] = a;
    }
    return SMELT_OK;
}

smelt_status import_function_inline(importer *im, scope *outer, const Onnx__NodeProto *np, const char *node,
                                    const Onnx__FunctionProto *fn, const rattr *attr, int n_attr)
{
    const char *op = str(np->op_type);
    char where[600];
    snprintf(where, sizeof where, "node '%s' (%s): function '%s'", node, op, str(fn->name));
    if (outer->depth >= FUNCTION_DEPTH_MAX)
        return import_node_fail(node, op, SMELT_ERR_UNSUPPORTED, "functions nest deeper than %d (recursive?)",
                         FUNCTION_DEPTH_MAX);
    if (np->n_input > fn->n_input || np->n_output > fn->n_output)
        return import_node_fail(node, op, SMELT_ERR_MODEL, "%zu inputs and %zu outputs, but function '%s' has %zu and %zu",
                         np->n_input, np->n_output, str(fn->name), fn->n_input, fn->n_output);
    int opset = outer->opset; /* a body imports its own opset, or uses the model's */
    TRY(import_opsets_check(fn->n_opset_import, fn->opset_import, where, &opset));

    scope sc = {.depth = outer->depth + 1, .opset = opset, .fn = fn, .call_attr = attr, .n_call_attr = n_attr,
                .g = outer->g};
    strmap_init(&sc.map);
    size_t plen = strlen(node) + 2; /* node already carries the outer prefix */
    char *prefix = malloc(plen);
    int *bound = malloc(sizeof(int) * (fn->n_output + 1));
    smelt_status st = prefix && bound ? SMELT_OK : import_oom();
    if (!st) {
        snprintf(prefix, plen, "%s/", node);
        sc.prefix = prefix;
        sc.out_bound = bound;
        st = function_defaults(fn, node, &sc);
    }
    for (size_t i = 0; !st && i < fn->n_input; i++) {
        int t = -1;
        if (i < np->n_input) st = import_input_resolve(im, outer, node, op, np->input[i], &t);
        if (!st) st = import_scope_bind(&sc, str(fn->input[i]), t < 0 ? OMITTED : t);
    }
    for (size_t k = 0; !st && k < fn->n_output; k++) {
        bound[k] = -1;
        if (k < np->n_output && *str(np->output[k])) st = import_output_define(im, outer, node, op, np->output[k], &bound[k]);
    }
    for (size_t i = 0; !st && i < fn->n_node; i++) st = import_node(im, &sc, fn->node[i]);
    /* An output the body never computes may name a function input or another output. */
    for (size_t k = 0; !st && k < fn->n_output; k++) {
        const ir_tensor *x = bound[k] >= 0 ? &im->g->tensors[bound[k]] : NULL;
        if (!x || x->producer >= 0 || x->data) continue;
        int src = strmap_get(&sc.map, str(fn->output[k]));
        if (src < 0 || src == bound[k]) {
            st = import_node_fail(node, op, SMELT_ERR_MODEL, "function '%s' never computes its output '%s'", str(fn->name),
                           str(fn->output[k]));
            break;
        }
        char name[600];
        snprintf(name, sizeof name, "%sIdentity_%d", prefix, im->g->n_nodes);
        if (ir_node_add(im->g, name, OP_Identity, 1, &src, 1, &bound[k]) < 0) st = import_oom();
    }
    for (int i = 0; i < sc.n_defaults; i++) onnx__attribute_proto__free_unpacked(sc.defaults[i], NULL);
    free(sc.defaults);
    strmap_free(&sc.map);
    free(prefix);
    free(bound);
    return st;
}
