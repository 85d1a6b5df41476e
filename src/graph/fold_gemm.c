/*
 * fold_gemm.c — constant operands that kernels would read transposed,
 * transposed once at compile time: a Gemm's under transA/transB, and the
 * weights W and R of RNN, GRU and LSTM (into the [D, K, N] order their
 * lowering reads; the node becomes PackedRNN/PackedGRU/PackedLSTM); and
 * DynamicQuantizeLSTM's constant 8-bit W and R less their zero points, as
 * float32, or for W int8 where every difference fits (read in place by the
 * input projection's GEMM, which widens it in registers); and for the C
 * target, that R as 8-bit panels (graph_pack_recurrent_r), and W as the
 * packed GEMM's panels (graph_pack_recurrent_w).
 */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
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

/* A new constant tensor for a packed form of node `node`'s weights, named "<node>/" and the
 * printf-formatted rest, its data allocated (to be filled): its index, or -1 (diag set). Adding
 * a tensor may move the tensor array: pointers into it are stale after this. */
static int weight_const(ir_graph *g, int node, smelt_dtype dt, const ir_shape *s, const char *fmt, ...) DIAG_PRINTF(5, 6);
static int weight_const(ir_graph *g, int node, smelt_dtype dt, const ir_shape *s, const char *fmt, ...)
{
    char name[256], what[192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    snprintf(name, sizeof name, "%s/%s", g->nodes[node].name, what);
    int nt = ir_tensor_add(g, name, dt, s);
    if (nt < 0 || !ir_tensor_alloc_data(g, nt)) {
        diag_fail(SMELT_ERR_NOMEM, "out of memory packing the weights of '%s'", g->nodes[node].name);
        return -1;
    }
    return nt;
}

/* Input `i` of node `node` replaced by the packed weights `t`, encoded as `enc`. */
static smelt_status weight_set(ir_graph *g, int node, int i, int t, ir_encoding enc)
{
    g->tensors[t].enc = enc;
    if (!input_set(g, node, i, t))
        return diag_fail(SMELT_ERR_NOMEM, "out of memory packing the weights of '%s'", g->nodes[node].name);
    return SMELT_OK;
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

/* DynamicQuantizeLSTM with a constant 8-bit W or R ([D, K, N]) and a constant (or omitted) zero
 * point ([D] or [D, N]): that input becomes the constant w - w_zp, exact, and the zero point is
 * dropped (ops/recurrent.c takes that form), so no kernel converts it on every call:
 * ddddocr_ocr_quant's W panel copy was 6-9% of its kernel time, its R copy 2%. W's constant is
 * int8 where every w - w_zp is within [-128, 127] (int8 weights with zero point 0, as
 * onnxruntime's quantize_dynamic makes them): the projection, a GEMM of seq x batch rows, reads
 * a quarter of the bytes (ddddocr_ocr_quant's 20 x 512 x 2048 a direction: 2.25-2.66 -> 2.0-2.37
 * ms, 5 interleaved rounds, 1 thread). R stays float32 here: read by rows, the recurrence's
 * per-element widening cost more than its bytes (4.5 -> 7.3 ms, ops/recurrent_lower.c); the C
 * target makes it 8-bit panels (graph_pack_recurrent_r, below). */
static int q8(const ir_tensor *t, int64_t i)
{
    return t->dtype == SMELT_I8 ? ((const int8_t *)t->data)[i] : ((const uint8_t *)t->data)[i];
}

/* Element i of direction d of 8-bit W or R t ([D, K, N]) less its zero point zp ([D], [D, N]
 * or none). */
static int less_zp(const ir_tensor *t, const ir_tensor *zp, int64_t d, int64_t i)
{
    int64_t KN = t->shape.dim[1] * t->shape.dim[2], N = t->shape.dim[2];
    return q8(t, d * KN + i) - (!zp ? 0 : q8(zp, zp->shape.rank == 1 ? d : d * N + i % N));
}

/* Whether every w - zp of t is within int8. */
static bool fits_int8(const ir_tensor *t, const ir_tensor *zp)
{
    int64_t D = t->shape.dim[0], KN = t->shape.dim[1] * t->shape.dim[2];
    for (int64_t d = 0; d < D; d++)
        for (int64_t i = 0; i < KN; i++) {
            int v = less_zp(t, zp, d, i);
            if (v < INT8_MIN || v > INT8_MAX) return false;
        }
    return true;
}

static smelt_status fold_quant_recurrent(ir_graph *g, int node)
{
    static const int pairs[2][2] = {{1, 9}, {2, 11}}; /* W, W_zero_point; R, R_zero_point */
    if (g->nodes[node].op != OP_DynamicQuantizeLSTM || g->nodes[node].n_in < 12) return SMELT_OK;
    for (int q = 0; q < 2; q++) {
        const ir_node *n = &g->nodes[node];
        const ir_tensor *t = ir_in(g, n, pairs[q][0]), *zp = ir_in(g, n, pairs[q][1]);
        if (!t || !t->data || t->shape.rank != 3 || (t->dtype != SMELT_I8 && t->dtype != SMELT_U8)) continue;
        if (zp && (!zp->data || zp->dtype != t->dtype || zp->shape.rank < 1 || zp->shape.rank > 2 ||
                   zp->shape.dim[0] != t->shape.dim[0] || (zp->shape.rank == 2 && zp->shape.dim[1] != t->shape.dim[2])))
            continue;
        char name[256];
        snprintf(name, sizeof name, "%s/%s_less_zero_point", n->name, q ? "R" : "W");
        ir_shape s = t->shape;
        int nt = ir_tensor_add(g, name, q == 0 && fits_int8(t, zp) ? SMELT_I8 : SMELT_F32, &s);
        if (nt < 0 || !ir_tensor_alloc_data(g, nt))
            return diag_fail(SMELT_ERR_NOMEM, "out of memory converting the weights of '%s'", g->nodes[node].name);
        n = &g->nodes[node];
        t = ir_in(g, n, pairs[q][0]), zp = ir_in(g, n, pairs[q][1]); /* again: adding tensors may move the array */
        int64_t D = s.dim[0], KN = s.dim[1] * s.dim[2];
        bool to8 = g->tensors[nt].dtype == SMELT_I8;
        void *to = g->tensors[nt].data;
        for (int64_t d = 0; d < D; d++)
            for (int64_t i = 0; i < KN; i++) {
                int v = less_zp(t, zp, d, i);
                if (to8) ((int8_t *)to)[d * KN + i] = (int8_t)v;
                else ((float *)to)[d * KN + i] = (float)v;
            }
        if (!input_set(g, node, pairs[q][0], nt) || !input_set(g, node, pairs[q][1], -1))
            return diag_fail(SMELT_ERR_NOMEM, "out of memory converting the weights of '%s'", g->nodes[node].name);
    }
    return SMELT_OK;
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
        if (!g->nodes[i].dead) TRY(fold_quant_recurrent(g, i));
    }
    return ir_verify(g);
}

/* Whether R ([D, H, n], integers within 8 bits less an offset: graph_int8_range said so)
 * suits the k-pair microkernel: h_q - h_zp is within 255, so 255 times each direction's column
 * sum of |r| at most 2^24 keeps every int32 sum of a step exact (target/emit_c_gemm_pairs.c). */
static bool pairs_fit(const float *r, int64_t D, int64_t H, int64_t n)
{
    for (int64_t d = 0; d < D; d++)
        for (int64_t j = 0; j < n; j++) {
            double sum = 0;
            for (int64_t k = 0; k < H; k++) sum += fabs((double)r[(d * H + k) * n + j]);
            if (255.0 * sum > 16777216.0) return false;
        }
    return true;
}

/* R of node `node` ([D, H, N] float32 integers, N whole panels of `cols`) as int16 k-pair
 * panels [D * N / cols][ceil(H / 2)][cols][2]: row kp of a panel holds, for each of its
 * columns, r[2kp][col] and r[2kp + 1][col] (0 past H), the B operand of the k-pair microkernel. */
static smelt_status pack_r_pairs(ir_graph *g, int node, int64_t cols)
{
    const ir_tensor *r = ir_in(g, &g->nodes[node], 2);
    int64_t D = r->shape.dim[0], H = r->shape.dim[1], N = r->shape.dim[2], nb = N / cols, hp = (H + 1) / 2;
    ir_shape s = {.rank = 3, .dim = {D * nb, hp, 2 * cols}};
    int nt = weight_const(g, node, SMELT_I16, &s, "R_pairs%lld", (long long)cols);
    if (nt < 0) return SMELT_ERR_NOMEM;
    r = ir_in(g, &g->nodes[node], 2); /* again: adding tensors may move the array */
    const float *from = r->data;
    int16_t *to = g->tensors[nt].data;
    for (int64_t d = 0; d < D; d++)
        for (int64_t p = 0; p < nb; p++)
            for (int64_t kp = 0; kp < hp; kp++)
                for (int64_t j = 0; j < cols; j++)
                    for (int h = 0; h < 2; h++) {
                        int64_t k = 2 * kp + h;
                        to[(((d * nb + p) * hp + kp) * cols + j) * 2 + h] = k < H ? (int16_t)from[(d * H + k) * N + p * cols + j] : 0;
                    }
    return weight_set(g, node, 2, nt, (ir_encoding){.kind = IR_ENC_PANELS, .k = H, .n = N, .nr = cols, .logical = r->shape});
}

smelt_status graph_pack_recurrent_r(ir_graph *g, int64_t cols)
{
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *n = &g->nodes[i];
        if (n->dead || n->op != OP_DynamicQuantizeLSTM || n->n_in < 3 || (n->n_in > 11 && n->in[11] >= 0)) continue;
        const ir_tensor *r = ir_in(g, n, 2);
        smelt_dtype dt;
        int32_t off;
        if (!r || !r->data || r->dtype != SMELT_F32 || r->enc.kind != IR_ENC_NONE || r->shape.rank != 3 ||
            r->shape.dim[2] % cols || !graph_int8_range(r->data, ir_tensor_numel(r), &dt, &off))
            continue;
        int64_t D = r->shape.dim[0], H = r->shape.dim[1], N = r->shape.dim[2], nb = N / cols;
        if (pairs_fit(r->data, D, H, N)) {
            TRY(pack_r_pairs(g, i, cols));
            continue;
        }
        ir_shape s = {.rank = 3, .dim = {D * nb, H, cols}};
        int nt = weight_const(g, i, dt, &s, "R_panels%lld", (long long)cols);
        if (nt < 0) return SMELT_ERR_NOMEM;
        r = ir_in(g, &g->nodes[i], 2); /* again: adding tensors may move the array */
        for (int64_t d = 0; d < D; d++)
            graph_pack_int8((const float *)r->data + d * H * N, (char *)g->tensors[nt].data + d * nb * H * cols, H, N,
                            cols, false, dt, off);
        TRY(weight_set(g, i, 2, nt, (ir_encoding){.kind = IR_ENC_PANELS, .k = H, .n = N, .nr = cols, .logical = r->shape, .offset = off}));
    }
    return ir_verify(g);
}

/* Element i of [D, K, N] W t as float32 (float32, or int8 less a folded zero point). */
static float w_at(const ir_tensor *t, int64_t i)
{
    return t->dtype == SMELT_F32 ? ((const float *)t->data)[i] : (float)((const int8_t *)t->data)[i];
}

smelt_status graph_pack_recurrent_w(ir_graph *g, int64_t nr)
{
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *n = &g->nodes[i];
        bool quant = n->op == OP_DynamicQuantizeLSTM;
        if (n->dead || n->n_in < 3 || (n->op != OP_PackedRNN && n->op != OP_PackedGRU && n->op != OP_PackedLSTM && !quant))
            continue;
        const ir_tensor *w = ir_in(g, n, 1), *x = ir_in(g, n, 0);
        /* quantized: the folded W (graph_fold_gemm_transpose; its zero point dropped) */
        if (!w || !w->data || !x || x->data || w->enc.kind != IR_ENC_NONE || w->shape.rank != 3 || ir_tensor_numel(w) == 0 ||
            (quant ? (n->n_in > 9 && n->in[9] >= 0) || (w->dtype != SMELT_I8 && w->dtype != SMELT_F32)
                   : w->dtype != SMELT_F32))
            continue;
        int64_t D = w->shape.dim[0], K = w->shape.dim[1], N = w->shape.dim[2], np = (N + nr - 1) / nr;
        smelt_dtype dt = quant && w->dtype == SMELT_I8 ? SMELT_I8 : SMELT_F32;
        int32_t off = 0;
        if (quant && w->dtype == SMELT_F32 && !graph_int8_range(w->data, ir_tensor_numel(w), &dt, &off)) dt = SMELT_F32, off = 0;
        ir_shape s = {.rank = 3, .dim = {D * np, K, nr}};
        int nt = weight_const(g, i, dt, &s, "W_panels%lld", (long long)nr);
        if (nt < 0) return SMELT_ERR_NOMEM;
        w = ir_in(g, &g->nodes[i], 1); /* again: adding tensors may move the array */
        void *to = g->tensors[nt].data;
        for (int64_t d = 0; d < D; d++)
            for (int64_t p = 0; p < np; p++)
                for (int64_t k = 0; k < K; k++)
                    for (int64_t j = 0; j < nr; j++) {
                        int64_t col = p * nr + j, at = ((d * np + p) * K + k) * nr + j;
                        /* columns past N: zero (float), the offset's value (8-bit); summed, never stored */
                        float v = col < N ? w_at(w, (d * K + k) * N + col) : (float)off;
                        if (dt == SMELT_F32) ((float *)to)[at] = v;
                        else if (dt == SMELT_I8) ((int8_t *)to)[at] = (int8_t)((int32_t)v - off);
                        else ((uint8_t *)to)[at] = (uint8_t)((int32_t)v - off);
                    }
        TRY(weight_set(g, i, 1, nt, (ir_encoding){.kind = IR_ENC_PANELS, .k = K, .n = N, .nr = nr, .logical = w->shape, .offset = off}));
    }
    return ir_verify(g);
}
