/*
 * fold_gemm.c — a Gemm's constant transposed operand transposed once, at
 * compile time.
 */
#include <string.h>

#include "graph/passes.h"

/* New constant tensor holding constant matrix `t` ([R, C]) transposed. */
static int transposed_const(ir_graph *g, int t, const char *name)
{
    ir_shape s = g->tensors[t].shape;
    int64_t rows = s.dim[0], cols = s.dim[1];
    s.dim[0] = cols;
    s.dim[1] = rows;
    int nt = ir_tensor_add(g, name, g->tensors[t].dtype, &s);
    if (nt < 0 || !ir_tensor_alloc_data(g, nt)) return -1;
    const ir_tensor *src = &g->tensors[t]; /* again: adding tensors may move the array */
    size_t es = smelt_dtype_size(src->dtype);
    const char *from = src->data;
    char *to = g->tensors[nt].data;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) memcpy(to + (size_t)(c * rows + r) * es, from + (size_t)(r * cols + c) * es, es);
    return nt;
}

static void set_int_attr(ir_node *n, const char *name, int64_t v)
{
    for (int a = 0; a < n->n_attr; a++)
        if (strcmp(n->attr[a].name, name) == 0) n->attr[a].i = v;
}

smelt_status graph_fold_gemm_transpose(ir_graph *g)
{
    static const char *const attr[2] = {"transA", "transB"};
    for (int i = 0; i < g->n_nodes; i++) {
        for (int op = 0; op < 2; op++) {
            const ir_node *n = &g->nodes[i];
            if (n->dead || n->op != OP_Gemm || n->n_in <= op || n->in[op] < 0) continue;
            const ir_tensor *m = &g->tensors[n->in[op]];
            if (!ir_attr_int(n, attr[op], 0) || !m->data || m->shape.rank != 2 || m->dtype == SMELT_STRING) continue;
            char name[256];
            snprintf(name, sizeof name, "%s/%s", n->name, op ? "b_transposed" : "a_transposed");
            int nt = transposed_const(g, n->in[op], name);
            if (nt < 0) return diag_fail(SMELT_ERR_NOMEM, "out of memory transposing a constant of '%s'", g->nodes[i].name);
            ir_node *w = &g->nodes[i];
            int *ins = arena_memdup(&g->arena, w->in, sizeof(int) * (size_t)w->n_in);
            if (!ins) return diag_fail(SMELT_ERR_NOMEM, "out of memory transposing a constant of '%s'", w->name);
            ins[op] = nt;
            w->in = ins;
            set_int_attr(w, attr[op], 0);
        }
    }
    return ir_verify(g);
}
