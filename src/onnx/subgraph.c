/* subgraph.c — the GraphProto attributes of If, Loop and Scan, each imported as
 * its own ir_graph: formal inputs, then the outer-scope values the body reads
 * (captured through the enclosing scopes), which become implicit inputs of the
 * control-flow node.
 * requires: the enclosing scope set up by import.c; guarantees: the body's
 * graph adopted by the node's graph, and d->cap naming the node inputs that
 * feed its captured values. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/importer.h"
#include "onnx/onnx.h"

static ir_graph *scope_graph(importer *im, const scope *sc) { return sc->g ? sc->g : im->g; }

smelt_status subgraph_lookup(importer *im, scope *sc, const char *name, int *v)
{
    scope *p = sc->parent;
    int o = strmap_get(&p->map, name);
    if (o == -1 && p->parent) TRY(subgraph_lookup(im, p, name, &o));
    *v = o;
    if (o == -1) return SMELT_OK;
    if (o != OMITTED) {
        const ir_tensor x = scope_graph(im, p)->tensors[o];
        ir_graph *g = scope_graph(im, sc);
        int *caps = realloc(sc->caps, sizeof(int) * (size_t)(sc->n_caps + 1));
        if (caps) sc->caps = caps;
        int *cap_in = caps ? realloc(sc->cap_in, sizeof(int) * (size_t)(sc->n_caps + 1)) : NULL;
        if (cap_in) sc->cap_in = cap_in;
        if (!caps || !cap_in || (*v = ir_tensor_add(g, name, x.dtype, &x.shape)) < 0) return import_oom();
        sc->caps[sc->n_caps] = o;
        sc->cap_in[sc->n_caps++] = *v;
    }
    return import_scope_bind(sc, name, *v);
}

/* A GraphProto attribute → its own ir_graph: inputs are the formal inputs,
 * then the outer-scope values it reads (*caps: their tensors in `outer`). */
static smelt_status subgraph_body(importer *im, scope *ss, const char *node, const Onnx__GraphProto *gp)
{
    ir_graph *g = im->g;
    for (size_t i = 0; i < gp->n_node; i++)
        for (size_t k = 0; k < gp->node[i]->n_output; k++)
            if (*str(gp->node[i]->output[k]) && !strmap_put(&im->names, gp->node[i]->output[k], 0)) return import_oom();
    if (gp->n_sparse_initializer)
        return diag_fail(SMELT_ERR_UNSUPPORTED, "node '%s': a subgraph's sparse initializer is not supported", node);
    for (size_t i = 0; i < gp->n_initializer; i++) {
        const char *name = str(gp->initializer[i]->name);
        char what[512];
        snprintf(what, sizeof what, "node '%s': subgraph initializer '%s'", node, name);
        int t = import_tensor_new(im, name, true);
        if (t < 0) return import_oom();
        TRY(import_scope_bind(ss, name, t));
        TRY(import_tensor_decode(im, t, gp->initializer[i], what));
    }
    int n_formal = 0;
    int *ins = malloc(sizeof(int) * (gp->n_input + 1));
    int *outs = malloc(sizeof(int) * (gp->n_output + 1));
    smelt_status st = ins && outs ? SMELT_OK : import_oom();
    for (size_t i = 0; !st && i < gp->n_input; i++) {
        const char *name = str(gp->input[i]->name);
        const Onnx__TypeProto *tp = gp->input[i]->type;
        if ((ins[n_formal] = import_tensor_new(im, name, true)) < 0) st = import_oom();
        else st = import_scope_bind(ss, name, ins[n_formal]);
        if (!st && tp && tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
            st = diag_fail(SMELT_ERR_UNSUPPORTED, "node '%s': subgraph input '%s' is not a tensor (sequences and "
                           "optionals are not supported)", node, name);
        if (!st && tp && tp->tensor_type && tp->tensor_type->has_elem_type)
            g->tensors[ins[n_formal]].dtype = (smelt_dtype)tp->tensor_type->elem_type;
        n_formal++;
    }
    for (size_t i = 0; !st && i < gp->n_node; i++) st = import_node(im, ss, gp->node[i]);
    for (size_t i = 0; !st && i < gp->n_output; i++) {
        st = import_input_resolve(im, ss, node, "subgraph", gp->output[i]->name, &outs[i]);
        if (!st && outs[i] < 0)
            st = diag_fail(SMELT_ERR_MODEL, "node '%s': subgraph output '%s' is not computed", node, str(gp->output[i]->name));
    }
    int *all = st ? NULL : malloc(sizeof(int) * ((size_t)n_formal + (size_t)ss->n_caps + 1));
    if (!st && !all) st = import_oom();
    if (!st) {
        memcpy(all, ins, sizeof(int) * (size_t)n_formal);
        if (ss->n_caps) memcpy(all + n_formal, ss->cap_in, sizeof(int) * (size_t)ss->n_caps);
        if (!ir_graph_set_io(g, n_formal + ss->n_caps, all, (int)gp->n_output, outs)) st = import_oom();
    }
    free(all);
    free(ins);
    free(outs);
    return st;
}

static smelt_status subgraph_import(importer *im, scope *outer, const char *node, const Onnx__GraphProto *gp,
                                    ir_graph **out, int **caps, int *n_caps)
{
    *out = ir_graph_new();
    if (!*out) return import_oom();
    ir_graph *saved_g = im->g;
    strmap saved_names = im->names;
    (*out)->opset = saved_g->opset;
    im->g = *out;
    strmap_init(&im->names);
    scope ss = {.prefix = "", .depth = outer->depth, .opset = outer->opset, .parent = outer, .g = *out};
    strmap_init(&ss.map);
    smelt_status st = subgraph_body(im, &ss, node, gp);
    strmap_free(&ss.map);
    strmap_free(&im->names);
    im->names = saved_names;
    im->g = saved_g;
    free(ss.cap_in);
    *caps = ss.caps;
    *n_caps = ss.n_caps;
    if (st) {
        ir_graph_free(*out);
        free(ss.caps);
        *caps = NULL;
    }
    return st;
}

smelt_status subgraph_attr_import(importer *im, scope *sc, const char *node, const Onnx__GraphProto *gp, ir_attr *d,
                                  capture_list *caps)
{
    arena *ar = &im->g->arena;
    ir_graph *sub = NULL;
    int *outer = NULL, n = 0;
    TRY(subgraph_import(im, sc, node, gp, &sub, &outer, &n));
    int *grown = realloc(caps->t, sizeof(int) * (size_t)(caps->n + n + 1));
    d->cap = arena_alloc(ar, sizeof(int) * (size_t)(n + 1));
    if (!grown || !d->cap || !ir_graph_adopt(im->g, sub)) {
        if (grown) caps->t = grown;
        free(outer);
        return import_oom();
    }
    caps->t = grown;
    for (int k = 0; k < n; k++) { /* one implicit input per outer value, shared by the node's subgraphs */
        int j = 0;
        while (j < caps->n && caps->t[j] != outer[k]) j++;
        if (j == caps->n) caps->t[caps->n++] = outer[k];
        d->cap[k] = caps->base + j;
    }
    free(outer);
    d->type = IR_ATTR_GRAPH;
    d->graph = sub;
    d->n_cap = n;
    return SMELT_OK;
}
