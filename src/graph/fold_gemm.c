/*
 * fold_gemm.c — constant operands that kernels would read transposed,
 * transposed once at compile time: a Gemm's under transA/transB, and the
 * weights W and R of RNN, GRU and LSTM (into the [D, K, N] order their
 * lowering reads; the node becomes PackedRNN/PackedGRU/PackedLSTM).
 */
#include <string.h>

#include "graph/passes.h"
#include "ir/op_params.h"

/* New constant tensor holding constant `t` ([R, C], or [B, R, C]: each of the B matrices)
 * transposed. */
static int transposed_const(ir_graph *g, int t, const char *name)
{
    ir_shape s = g->tensors[t].shape;
    int r0 = s.rank - 2;
    int64_t batch = r0 ? s.dim[0] : 1, rows = s.dim[r0], cols = s.dim[r0 + 1];
    s.dim[r0] = cols;
    s.dim[r0 + 1] = rows;
    int nt = ir_tensor_add(g, name, g->tensors[t].dtype, &s);
    if (nt < 0 || !ir_tensor_alloc_data(g, nt)) return -1;
    const ir_tensor *src = &g->tensors[t]; /* again: adding tensors may move the array */
    size_t es = smelt_dtype_size(src->dtype);
    for (int64_t b = 0; b < batch; b++) {
        const char *from = (const char *)src->data + (size_t)(b * rows * cols) * es;
        char *to = (char *)g->tensors[nt].data + (size_t)(b * rows * cols) * es;
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c = 0; c < cols; c++) memcpy(to + (size_t)(c * rows + r) * es, from + (size_t)(r * cols + c) * es, es);
    }
    return nt;
}

/* Input `i` of node `node` replaced by tensor `t` (the inputs array is copied: it may be shared). */
static bool input_set(ir_graph *g, int node, int i, int t)
{
    ir_node *w = &g->nodes[node];
    int *ins = arena_memdup(&g->arena, w->in, sizeof(int) * (size_t)w->n_in);
    if (!ins) return false;
    ins[i] = t;
    w->in = ins;
    return true;
}

/* RNN/GRU/LSTM with constant W [D, N, K] and R [D, N, H]: both stored as [D, K, N], so that the
 * lowering's transposing kernels do not run on every call. */
static smelt_status pack_recurrent(ir_graph *g, int node)
{
    static const struct {
        op_id from, to;
    } packed[] = {{OP_RNN, OP_PackedRNN}, {OP_GRU, OP_PackedGRU}, {OP_LSTM, OP_PackedLSTM}};
    const ir_node *n = &g->nodes[node];
    int k = 0;
    while (k < 3 && packed[k].from != n->op) k++;
    if (k == 3 || n->n_in < 3) return SMELT_OK;
    for (int i = 1; i <= 2; i++) {
        const ir_tensor *t = ir_in(g, n, i);
        if (!t || !t->data || t->shape.rank != 3 || t->dtype == SMELT_STRING) return SMELT_OK;
    }
    for (int i = 1; i <= 2; i++) {
        char name[256];
        snprintf(name, sizeof name, "%s/%s_packed", g->nodes[node].name, i == 1 ? "W" : "R");
        int nt = transposed_const(g, g->nodes[node].in[i], name);
        if (nt < 0 || !input_set(g, node, i, nt))
            return diag_fail(SMELT_ERR_NOMEM, "out of memory packing the weights of '%s'", g->nodes[node].name);
    }
    g->nodes[node].op = packed[k].to;
    return ir_node_parse_params(g, node); /* the params say which form the lowering reads */
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
            const void *pv;
            TRY(ir_node_params(g, i, &pv));
            n = &g->nodes[i];
            const gemm_params *gp = pv;
            const ir_tensor *m = &g->tensors[n->in[op]];
            if (!(op ? gp->trans_b : gp->trans_a) || !m->data || m->shape.rank != 2 || m->dtype == SMELT_STRING) continue;
            char name[256];
            snprintf(name, sizeof name, "%s/%s", n->name, op ? "b_transposed" : "a_transposed");
            int nt = transposed_const(g, n->in[op], name);
            if (nt < 0 || !input_set(g, i, op, nt))
                return diag_fail(SMELT_ERR_NOMEM, "out of memory transposing a constant of '%s'", g->nodes[i].name);
            set_int_attr(&g->nodes[i], attr[op], 0);
            TRY(ir_node_parse_params(g, i)); /* the lowering reads the flag from the params */
        }
        if (!g->nodes[i].dead) TRY(pack_recurrent(g, i));
    }
    return ir_verify(g);
}
