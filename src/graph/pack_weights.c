/*
 * pack_weights.c — a matmul's constant B, or a convolution's constant weight,
 * packed once, at compile time, into the panels the C target's microkernels
 * read (ir.h, IR_ENC_PANELS; ops/gemm_packed.h).
 *
 * Which convolutions run as a GEMM (ops/conv_gemm.c) is decided here, since a
 * packed weight is what sends a Conv there: 2-D, group 1, float32, a constant
 * weight and an input that is not, and a shape class where the GEMM measured
 * faster than the direct form (conv_wants_gemm). An integer convolution's
 * weight may become int16 k-pair rows instead (conv_wants_kpairs).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/passes.h"
#include "ir/op_params.h"

static void pack(const float *from, float *to, int64_t k, int64_t n, int64_t nr, bool trans)
{
    int64_t np = (n + nr - 1) / nr;
    for (int64_t p = 0; p < np; p++)
        for (int64_t kk = 0; kk < k; kk++)
            for (int64_t j = 0; j < nr; j++) {
                int64_t col = p * nr + j;
                to[(p * k + kk) * nr + j] = col >= n ? 0.0f : trans ? from[col * k + kk] : from[kk * n + col];
            }
}

static void pack_as(const float *from, void *to, int64_t k, int64_t n, int64_t nr, bool trans, smelt_dtype dt,
                    int32_t offset)
{
    if (dt == SMELT_F32) pack(from, to, k, n, nr, trans);
    else graph_pack_int8(from, to, k, n, nr, trans, dt, offset);
}

/* Tensor nt's data: `from` packed by fill(from, to, how), the cache's copy
 * (made once, keyed by from, nr and form) or g's; false on OOM. */
typedef void (*pack_fill)(const float *from, void *to, const void *how);

static bool packed_data(ir_graph *g, int nt, const float *from, int64_t nr, int form, pack_fill fill, const void *how,
                        const graph_pack_cache *cache)
{
    ir_tensor *x = &g->tensors[nt];
    x->data = cache ? cache->find(cache->user, from, nr, form) : NULL;
    if (!x->data && cache) {
        size_t bytes = (size_t)ir_tensor_numel(x) * smelt_dtype_size(x->dtype);
        void *d = malloc(bytes);
        if (!d) return false;
        fill(from, d, how);
        if (!(x->data = cache->keep(cache->user, from, nr, form, d, bytes))) return false;
    } else if (!x->data) {
        if (!ir_tensor_alloc_data(g, nt)) return false;
        fill(from, x->data, how);
    }
    return true;
}

typedef struct panels_how {
    int64_t k, n, nr;
    bool trans;
    smelt_dtype dt;
    int32_t offset;
} panels_how;

static void fill_panels(const float *from, void *to, const void *how)
{
    const panels_how *h = how;
    pack_as(from, to, h->k, h->n, h->nr, h->trans, h->dt, h->offset);
}

/* A packed copy of t (row-major [k, n], or [n, k] when `trans`) with the
 * encoding set, its data the cache's (made once) or g's; -1 on OOM. dt is
 * float32, or an 8-bit dtype with the offset graph_int8_range chose for t. */
static int packed_const(ir_graph *g, int t, bool trans, smelt_dtype dt, int32_t offset, int64_t nr, const char *name,
                        const graph_pack_cache *cache)
{
    const ir_tensor *src = &g->tensors[t];
    /* trans: rows of [n, k], any trailing dims (a Conv weight) flattened into k */
    int64_t n = src->shape.dim[trans ? 0 : 1], k = trans ? ir_tensor_numel(src) / n : src->shape.dim[0];
    int64_t np = (n + nr - 1) / nr;
    int form = (trans ? GRAPH_PACK_TRANS : 0) | (dt != SMELT_F32 ? GRAPH_PACK_INT8 : 0);
    ir_shape logical = src->shape;
    ir_shape s = {.rank = 3, .dim = {np, k, nr}};
    int nt = ir_tensor_add(g, name, dt, &s);
    if (nt < 0) return -1;
    /* g->tensors again: adding tensors may move the array */
    panels_how how = {k, n, nr, trans, dt, offset};
    if (!packed_data(g, nt, g->tensors[t].data, nr, form, fill_panels, &how, cache)) return -1;
    ir_tensor *x = &g->tensors[nt];
    x->enc = (ir_encoding){.kind = IR_ENC_PANELS, .k = k, .n = n, .nr = nr, .logical = logical, .offset = offset};
    if (logical.rank == 2) x->enc.logical = (ir_shape){.rank = 2, .dim = {k, n}};
    return nt;
}

/* An integer convolution's weight as int16 rows of k-pairs (ir.h,
 * IR_ENC_KPAIRS), where the C target runs it on the k-pair microkernel
 * (ops/conv_gemm.c, conv_cols_lower): its positions would go on N (the
 * weight read as the microkernel's A) and the im2col fits, since the
 * operand the im2col writes becomes int16 pairs. The node's IR_ATTR_INT_AMAX
 * says X holds integers within amax; the weight must hold integers within
 * int16 and amax times each output channel's sum of |w| must stay within
 * 2^24, checked here again, so the int32 sums the microkernel forms equal the
 * float32 ones exactly. And at least KPAIRS_MIN_M output channels: the
 * pair im2col costs about twice the float one per element (its int16
 * conversion), paid back over M multiply-adds per element at about 1.5-2x
 * the float GEMM's rate; ddddocr_ocr_quant's 3x3 24 -> 24 convs at 32x80
 * (M 24) went 0.32-0.38 -> 0.37-0.81 ms, its 48 -> 192 ones 1.30-1.61 ->
 * 0.91 ms and its 1x1 192 -> 48 ones (M 48) 0.123 -> 0.104 (min of 5
 * loaded rounds of 20 runs, 1 thread, AVX-512 host). */
#define KPAIRS_MIN_M 32

static bool conv_wants_kpairs(const ir_graph *g, const ir_node *n, int64_t nr)
{
    const ir_tensor *x = ir_in(g, n, 0), *w = ir_in(g, n, 1), *y = &g->tensors[n->out[0]];
    int64_t amax = ir_attr_int(n, IR_ATTR_INT_AMAX, 0);
    if (amax < 1 || amax > 32767 || !x || x->data || x->dtype != SMELT_F32 || x->shape.rank != 4 ||
        w->shape.rank != 4 || y->shape.rank != 4 || ir_attr_int(n, "group", 1) != 1 || ir_tensor_numel(w) == 0)
        return false;
    for (int d = 0; d < 4; d++)
        if (x->shape.dim[d] < 1 || y->shape.dim[d] < 1) return false;
    int64_t m = w->shape.dim[0], k = ir_tensor_numel(w) / m, p = y->shape.dim[2] * y->shape.dim[3];
    if (m < KPAIRS_MIN_M || !graph_conv_on_cols(w->shape.dim[2] * w->shape.dim[3], k, m, p, nr) || !graph_im2col_fits(p, k)) return false;
    const float *v = w->data;
    for (int64_t r = 0; r < m; r++) {
        double sum = 0;
        for (int64_t i = 0; i < k; i++) {
            float e = v[r * k + i];
            if (!(e >= -32767.0f && e <= 32767.0f) || e != (float)(int32_t)e) return false;
            sum += fabs((double)e);
        }
        if ((double)amax * sum > 16777216.0) return false;
    }
    return true;
}

/* t ([m, k...], float32 integers) as int16 [m][k rounded up to even], the
 * padding column 0; how: {m, k}. */
static void fill_kpairs(const float *from, void *to, const void *how)
{
    const int64_t m = ((const int64_t *)how)[0], k = ((const int64_t *)how)[1], kp = (k + 1) / 2 * 2;
    int16_t *out = to;
    for (int64_t r = 0; r < m; r++)
        for (int64_t i = 0; i < kp; i++) out[r * kp + i] = i < k ? (int16_t)from[r * k + i] : 0;
}

static int kpairs_const(ir_graph *g, int t, const char *name, const graph_pack_cache *cache)
{
    const ir_tensor *src = &g->tensors[t];
    int64_t m = src->shape.dim[0], k = ir_tensor_numel(src) / m;
    ir_shape logical = src->shape, s = {.rank = 2, .dim = {m, (k + 1) / 2 * 2}};
    int nt = ir_tensor_add(g, name, SMELT_I16, &s);
    if (nt < 0) return -1;
    const int64_t how[2] = {m, k};
    if (!packed_data(g, nt, g->tensors[t].data, 0, GRAPH_PACK_KPAIRS, fill_kpairs, how, cache)) return -1;
    g->tensors[nt].enc = (ir_encoding){.kind = IR_ENC_KPAIRS, .k = k, .n = m, .logical = logical};
    return nt;
}

/* An integer convolution that takes the k-pairs (conv_wants_kpairs) takes
 * uint8 x int8 k-quads instead where the target has 8-bit dot products
 * (graph_pack_weights's int8_dot: AVX512-VNNI's vpdpbusd, 64 products an instruction
 * against vpdpwssd's 32) and the node carries its shift (ir.h,
 * IR_ATTR_INT_AMAX: X + s is the 8-bit input as uint8). The im2col then
 * writes X + s as uint8 quads, the GEMM sums w8 * (X + s) with w8 the weight
 * clamped to int8, and the store adds each clamped element's residual r = w -
 * w8 times its (X + s) - s and subtracts s * rowsum(w8) (ops/conv_gemm.c). A
 * uint8 weight less a per-tensor zero point spans 255, so it leaves int8 by a
 * few elements at most: ddddocr_ocr_quant's 21 weights 1 to 3 each (the
 * extremes 0 or 255 against zero points 94..178). At most KQUADS_RESIDUALS
 * such elements, each a short pass over its channel's block. So that no
 * int32 or float partial sum is inexact, 255 times each output channel's sum
 * of |w| must stay within 2^24 (amax, X's own bound, may be less than 255).
 * Measured in bench/int8_quads.c (1 thread, im2col + GEMM): ddddocr_ocr_quant's
 * 3x3 48 -> 192 at 16x40 0.565 -> 0.357 ms, 64 -> 256 at 8x20 0.241 -> 0.145. */
#define KQUADS_RESIDUALS 16

/* Whether node n takes the quads; *n_res: its weight's elements outside int8. */
static bool conv_wants_kquads(const ir_graph *g, const ir_node *n, int64_t *n_res)
{
    const ir_tensor *w = ir_in(g, n, 1), *s = ir_in(g, n, 3);
    if (!s || ir_in(g, n, 4) || ir_in(g, n, 2)) return false;
    int64_t m = w->shape.dim[0], k = ir_tensor_numel(w) / m;
    const float *v = w->data;
    *n_res = 0;
    for (int64_t r = 0; r < m; r++) {
        double sum = 0;
        for (int64_t i = 0; i < k; i++) {
            float e = v[r * k + i]; /* an integer within int16: conv_wants_kpairs checked */
            *n_res += e < -128.0f || e > 127.0f;
            sum += fabs((double)e);
        }
        if (255.0 * sum > 16777216.0 || *n_res > KQUADS_RESIDUALS) return false;
    }
    return true;
}

static float clamp_i8(float e) { return e < -128.0f ? -128.0f : e > 127.0f ? 127.0f : e; }

/* t ([m, k...], float32 integers) clamped to int8 as [m][k rounded up to a
 * multiple of 4], the padding columns 0; how: {m, k}. */
static void fill_kquads(const float *from, void *to, const void *how)
{
    const int64_t m = ((const int64_t *)how)[0], k = ((const int64_t *)how)[1], kq = (k + 3) / 4 * 4;
    int8_t *out = to;
    for (int64_t r = 0; r < m; r++)
        for (int64_t i = 0; i < kq; i++) out[r * kq + i] = i < k ? (int8_t)clamp_i8(from[r * k + i]) : 0;
}

/* Per row of t clamped to int8 the sum of its k elements, then (channel, k,
 * residual) of each element outside int8 (ir.h, IR_ATTR_INT_AMAX). */
static void fill_rowsums(const float *from, void *to, const void *how)
{
    const int64_t m = ((const int64_t *)how)[0], k = ((const int64_t *)how)[1];
    float *out = to, *res = out + m;
    for (int64_t r = 0; r < m; r++) {
        double sum = 0;
        for (int64_t i = 0; i < k; i++) {
            float e = from[r * k + i], c = clamp_i8(e);
            sum += c;
            if (c != e) *res++ = (float)r, *res++ = (float)i, *res++ = e - c;
        }
        out[r] = (float)sum; /* an integer within 2^24 (conv_wants_kquads) */
    }
}

/* Conv node i's weight as int8 k-quad rows (ir.h, IR_ENC_KQUADS) and its
 * fifth input, the rows' sums and the residuals; false on OOM. */
static bool kquads_node(ir_graph *g, int i, int64_t n_res, const graph_pack_cache *cache)
{
    int t = g->nodes[i].in[1];
    const ir_tensor *src = &g->tensors[t];
    int64_t m = src->shape.dim[0], k = ir_tensor_numel(src) / m;
    ir_shape logical = src->shape, s = {.rank = 2, .dim = {m, (k + 3) / 4 * 4}}, sums = {.rank = 1, .dim = {m + 3 * n_res}};
    char name[256];
    snprintf(name, sizeof name, "%s/kquads", src->name);
    int nq = ir_tensor_add(g, name, SMELT_I8, &s);
    snprintf(name, sizeof name, "%s/rowsums", g->tensors[t].name);
    int ns = nq < 0 ? -1 : ir_tensor_add(g, name, SMELT_F32, &sums);
    if (ns < 0) return false;
    const int64_t how[2] = {m, k};
    if (!packed_data(g, nq, g->tensors[t].data, 0, GRAPH_PACK_KQUADS, fill_kquads, how, cache) ||
        !packed_data(g, ns, g->tensors[t].data, 0, GRAPH_PACK_ROWSUMS, fill_rowsums, how, cache))
        return false;
    g->tensors[nq].enc = (ir_encoding){.kind = IR_ENC_KQUADS, .k = k, .n = m, .logical = logical};
    ir_node *w = &g->nodes[i];
    int *ins = arena_alloc(&g->arena, sizeof(int) * 5);
    if (!ins) return false;
    for (int j = 0; j < 4; j++) ins[j] = j < w->n_in ? w->in[j] : -1;
    ins[1] = nq, ins[4] = ns;
    w->in = ins;
    w->n_in = 5;
    return true;
}

/* Node w's attributes gain its plain B, its packed B and the plain one's transB. */
static bool keep_both(ir_graph *g, ir_node *w, int plain, int packed, bool trans)
{
    ir_attr *at = arena_alloc(&g->arena, sizeof(ir_attr) * (size_t)(w->n_attr + 3));
    if (!at) return false;
    if (w->n_attr > 0) memcpy(at, w->attr, sizeof(ir_attr) * (size_t)w->n_attr);
    memset(at + w->n_attr, 0, 3 * sizeof(ir_attr));
    at[w->n_attr] = (ir_attr){.name = GRAPH_PLAIN_B, .type = IR_ATTR_TENSOR, .tensor = plain};
    at[w->n_attr + 1] = (ir_attr){.name = GRAPH_PACKED_B, .type = IR_ATTR_TENSOR, .tensor = packed};
    at[w->n_attr + 2] = (ir_attr){.name = GRAPH_PLAIN_TRANS_B, .type = IR_ATTR_INT, .i = trans};
    w->attr = at;
    w->n_attr += 3;
    return true;
}

static ir_attr *find_attr(ir_node *n, const char *name)
{
    for (int a = 0; a < n->n_attr; a++)
        if (!strcmp(n->attr[a].name, name)) return &n->attr[a];
    return NULL;
}

smelt_status graph_matmul_encoding(ir_graph *g, int node, bool packed)
{
    ir_node *n = &g->nodes[node];
    ir_attr *plain = find_attr(n, GRAPH_PLAIN_B), *pk = find_attr(n, GRAPH_PACKED_B), *tb = find_attr(n, "transB");
    if (!plain || !pk || n->n_in < 2) return SMELT_OK;
    n->in[1] = packed ? pk->tensor : plain->tensor;
    if (tb) tb->i = packed ? 0 : find_attr(n, GRAPH_PLAIN_TRANS_B)->i;
    return ir_node_parse_params(g, node); /* the lowering reads transB from the params */
}

/* Whether Conv node n runs as a GEMM over its packed weight (ops/conv_gemm.c),
 * the rule measured per shape class against the direct form (ops/conv.c) at 1
 * thread, README "Benchmarks". The GEMM's fixed costs per output element
 * (accumulators zeroed, stored through the epilogue) are paid back over K =
 * C * KH * KW multiply-adds. So: 1x1 convs with K >= 64 and M >= 32 (1.9-2.3x
 * faster than direct at M >= 64; at 32..63, since a stride-1 1x1 reads A in
 * place with no pack, 192 -> 32 and 144 -> 32 channels at 28x28 1.5x faster:
 * 0.171 -> 0.114 and 0.118 -> 0.086 ms; 96 -> 24 and 144 -> 24 at 56x56 tie,
 * 0.224 / 0.337 ms either way, and stay direct). Small K stays direct, in
 * place or not: 16 -> 96 at 112x112 0.81 against 0.95 ms, 24 -> 144 at 56x56
 * 0.40 against 0.42, 32 -> 16 at 112x112 0.21 against 0.30 (min of 200 runs, 1
 * thread); these are memory-bound (16 -> 96 moves 5.6 MB in 0.81 ms, 6.9 GB/s
 * against memcpy's 8-9).
 * Larger kernels, any stride, read an im2col written once per image into
 * scratch (its cost ~7-14% of the GEMM's), with M >= 32 output channels, K >=
 * 27 and that im2col within GRAPH_IM2COL_MAX_BYTES; measured (single-conv
 * models + ReLU, min of 3 x 100 runs on the 2-core VM under load, direct ->
 * GEMM): ResNet-18's 3x3 s1 128 -> 128 at 28x28 4.0 -> 3.1 ms, 256 -> 256 at
 * 14x14 4.5 -> 3.0, 512 -> 512 at 7x7 5.4 -> 3.5; the 7x7 s2 stem 3 -> 64 at
 * 224 5.2 -> 4.6; MobileNetV2's 3x3 s2 stem 3 -> 32 0.54 -> 0.45; 3x3 32 -> 32
 * at 56x56 1.0 -> 0.86, 32 -> 64 2.0 -> 1.6; but 3x3 16 -> 16 at 56x56 0.25 ->
 * 0.29 and 5x5 8 -> 16 at 28x28 0.09 -> 0.13 (M 16: too few columns per
 * packed A element). 3x3 s1 convs that Winograd's pass takes (graph/winograd.c)
 * never get here: at 64 -> 64, 56x56 it ran 2.0 ms, the GEMM 3.7. Grouped and
 * depthwise convs stay direct. */
static bool conv_wants_gemm(const ir_graph *g, const ir_node *n, int64_t nr)
{
    const ir_tensor *x = ir_in(g, n, 0), *w = ir_in(g, n, 1), *y = &g->tensors[n->out[0]];
    if (!x || x->data || x->dtype != SMELT_F32 || x->shape.rank != 4 || w->shape.rank != 4 || y->shape.rank != 4 ||
        ir_attr_int(n, "group", 1) != 1 || ir_tensor_numel(w) == 0)
        return false;
    for (int d = 0; d < 4; d++)
        if (x->shape.dim[d] < 1 || y->shape.dim[d] < 1) return false;
    int64_t kh = w->shape.dim[2], kw = w->shape.dim[3], k = w->shape.dim[1] * kh * kw, m = w->shape.dim[0];
    int64_t p = y->shape.dim[2] * y->shape.dim[3];
    /* the positions on N (ops/conv_gemm.c) where the lowering will take it: a
     * 1x1 whose plane is X's (stride 1, no pads), or an im2col that fits */
    if (graph_conv_on_cols(kh * kw, k, m, p, nr) &&
        (kh * kw == 1 && p % nr == 0 ? x->shape.dim[2] == y->shape.dim[2] && x->shape.dim[3] == y->shape.dim[3]
                                     : graph_im2col_fits(p, k)))
        return false;
    if (kh == 1 && kw == 1) return k >= 64 && m >= 32;
    return k >= 27 && m >= 32 && graph_im2col_fits(p, k);
}

smelt_status graph_pack_weights(ir_graph *g, int64_t nr, bool (*int8_dot)(void), const graph_pack_cache *cache,
                                bool keep_plain)
{
    int dot = int8_dot ? -1 : 0; /* -1: not asked yet */
    int *done = NULL; /* per tensor: its packed copy + 1 (two nodes sharing a weight share the copy) */
    int n_done = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *n = &g->nodes[i];
        if (n->dead || (n->op != OP_MatMul && n->op != OP_Gemm && n->op != OP_Conv) || n->n_in < 2 || n->in[1] < 0) continue;
        bool conv = n->op == OP_Conv, trans = conv;
        if (n->op == OP_Gemm) {
            const void *pv;
            smelt_status st = ir_node_params(g, i, &pv);
            if (st != SMELT_OK) {
                free(done);
                return st;
            }
            n = &g->nodes[i];
            trans = ((const gemm_params *)pv)->trans_b;
        }
        const ir_tensor *b = &g->tensors[n->in[1]], *a = ir_in(g, n, 0);
        if (conv && !keep_plain && b->data && b->enc.kind == IR_ENC_NONE && b->dtype == SMELT_F32 &&
            conv_wants_kpairs(g, n, nr)) {
            int64_t n_res;
            if (dot && conv_wants_kquads(g, n, &n_res) && (dot > 0 || (dot = int8_dot() ? 1 : 0))) {
                if (!kquads_node(g, i, n_res, cache)) goto nomem;
                continue;
            }
            char name[256];
            snprintf(name, sizeof name, "%s/kpairs", b->name);
            int nt = kpairs_const(g, n->in[1], name, cache);
            if (nt < 0) goto nomem;
            ir_node *w = &g->nodes[i];
            int *ins = arena_memdup(&g->arena, w->in, sizeof(int) * (size_t)w->n_in);
            if (!ins) goto nomem;
            ins[1] = nt;
            w->in = ins;
            continue;
        }
        if (!b->data || b->enc.kind != IR_ENC_NONE || b->dtype != SMELT_F32 || (!conv && b->shape.rank != 2) || !a ||
            a->data || ir_tensor_numel(b) == 0 || (conv && !conv_wants_gemm(g, n, nr)))
            continue;
        int t = n->in[1];
        if (t >= n_done) {
            int *d = realloc(done, sizeof(int) * (size_t)g->n_tensors);
            if (!d) goto nomem;
            memset(d + n_done, 0, sizeof(int) * (size_t)(g->n_tensors - n_done));
            done = d, n_done = g->n_tensors;
        }
        /* a weight read transposed by one node and not by another gets two copies */
        int64_t want_k = trans ? ir_tensor_numel(b) / b->shape.dim[0] : b->shape.dim[0];
        /* a MatMul with few rows of A: 8-bit panels where B's values allow (pack_int8.c) */
        smelt_dtype dt = SMELT_F32;
        int32_t off = 0;
        bool int8 = n->op == OP_MatMul && !keep_plain && ir_tensor_numel(a) / want_k <= GRAPH_INT8_MAX_M &&
                    graph_int8_range(b->data, ir_tensor_numel(b), &dt, &off);
        if (!int8) dt = SMELT_F32, off = 0;
        int nt = done[t] > 0 && g->tensors[done[t] - 1].enc.k == want_k &&
                         (g->tensors[done[t] - 1].dtype == SMELT_F32) == !int8 ? done[t] - 1 : -1;
        if (nt < 0) {
            char name[256];
            snprintf(name, sizeof name, "%s/packed%lld", b->name, (long long)nr);
            if ((nt = packed_const(g, t, trans, dt, off, nr, name, cache)) < 0) goto nomem;
            done[t] = nt + 1;
        }
        ir_node *w = &g->nodes[i];
        int *ins = arena_memdup(&g->arena, w->in, sizeof(int) * (size_t)w->n_in);
        if (!ins) goto nomem;
        if (keep_plain && !keep_both(g, w, t, nt, trans)) goto nomem;
        ins[1] = nt;
        w->in = ins;
        if (trans && !conv) {
            for (int at = 0; at < w->n_attr; at++)
                if (!strcmp(w->attr[at].name, "transB")) w->attr[at].i = 0;
            smelt_status st = ir_node_parse_params(g, i); /* the lowering reads transB from the params */
            if (st != SMELT_OK) {
                free(done);
                return st;
            }
        }
    }
    free(done);
    return ir_verify(g);
nomem:
    free(done);
    return diag_fail(SMELT_ERR_NOMEM, "out of memory packing a matmul or convolution weight");
}
