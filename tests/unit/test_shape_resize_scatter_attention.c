/* Shape rules of the resampling, sorting, scatter, loss, quantization, Einsum, Attention and further
 * normalization ops (ops/resize.c, scan_topk.c, gather_scatter.c, norm.c, quantize.c, einsum.c,
 * attention.c): shapes, dtypes and error messages. */
#include "core/diag.h"
#include "ir/ir.h"
#include "fuse_cases.h"
#include "test.h"

static int tensor(ir_graph *g, const char *name, smelt_dtype dt, int rank, const int64_t *dims)
{
    ir_shape s = {.rank = rank};
    for (int i = 0; i < rank; i++) s.dim[i] = dims[i];
    return ir_tensor_add(g, name, dt, &s);
}

#define T(g, name, dt, ...) tensor(g, name, dt, (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__})

/* A constant int64 1-D tensor. */
static int ints(ir_graph *g, const char *name, int cnt, const int64_t *v)
{
    ir_shape s = {.rank = 1, .dim = {cnt}};
    int t = ir_tensor_add(g, name, SMELT_I64, &s);
    int64_t *d = ir_tensor_alloc_data(g, t);
    for (int i = 0; i < cnt; i++) d[i] = v[i];
    return t;
}

static int floats(ir_graph *g, const char *name, int cnt, const float *v)
{
    ir_shape s = {.rank = 1, .dim = {cnt}};
    int t = ir_tensor_add(g, name, SMELT_F32, &s);
    float *d = ir_tensor_alloc_data(g, t);
    for (int i = 0; i < cnt; i++) d[i] = v[i];
    return t;
}

static int node(ir_graph *g, const char *name, op_id op, int n_in, const int *in, int n_out)
{
    int out[4];
    for (int i = 0; i < n_out; i++) {
        char nm[64];
        snprintf(nm, sizeof nm, "%s_out%d", name, i);
        out[i] = ir_tensor_add(g, nm, SMELT_UNDEFINED, NULL);
    }
    return ir_node_add(g, name, op, n_in, in, n_out, out);
}

static smelt_status infer(ir_graph *g, int n) { return op_get(g->nodes[n].op)->infer(g, n); }

static void check_shape(const ir_tensor *t, int rank, const int64_t *dims)
{
    CHECK_EQ_INT(t->shape.rank, rank);
    for (int i = 0; i < rank && i < t->shape.rank; i++) CHECK_EQ_INT(t->shape.dim[i], dims[i]);
}

#define CHECK_SHAPE(t, ...) check_shape(t, (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__})
#define OUT(g, n, i) ir_out(g, &(g)->nodes[n], i)

TEST(infer_resize_scales_sizes_and_policy)
{
    ir_graph *g = ir_graph_new();
    g->opset = 19;
    int x = T(g, "x", SMELT_F32, 1, 1, 4, 6);
    int sc = floats(g, "sc", 4, (float[]){1, 1, 0.5f, 1.5f});
    int n = node(g, "r", OP_Resize, 3, (int[]){x, -1, sc}, 1);
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK_SHAPE(OUT(g, n, 0), 1, 1, 2, 9);
    int sz = ints(g, "sz", 2, (int64_t[]){8, 8});
    n = node(g, "r2", OP_Resize, 4, (int[]){x, -1, -1, sz}, 1);
    ir_attr axes = {.name = "axes", .type = IR_ATTR_INTS, .n = 2, .ints = (int64_t[]){2, 3}};
    ir_node_attr_add(g, n, &axes);
    attr_str(g, n, "keep_aspect_ratio_policy", "not_larger");
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK_SHAPE(OUT(g, n, 0), 1, 1, 5, 8); /* scale min(2, 4/3): 4*4/3 rounds to 5 */
    ir_graph_free(g);
}

TEST(infer_resize_errors)
{
    ir_graph *g = ir_graph_new();
    g->opset = 19;
    int x = T(g, "x", SMELT_F32, 1, 1, 4, 6);
    int sc = floats(g, "sc", 3, (float[]){1, 1, 2});
    int n = node(g, "bad", OP_Resize, 3, (int[]){x, -1, sc}, 1);
    CHECK(infer(g, n) != SMELT_OK);
    CHECK_STR_HAS(smelt_last_error(), "3 scales/sizes for 4 axes");
    int sc4 = floats(g, "sc4", 4, (float[]){1, 1, 2, 2});
    n = node(g, "mode", OP_Resize, 3, (int[]){x, -1, sc4}, 1);
    attr_str(g, n, "mode", "bicubic");
    CHECK(infer(g, n) != SMELT_OK);
    CHECK_STR_HAS(smelt_last_error(), "mode 'bicubic'");
    int sz = ints(g, "sz", 4, (int64_t[]){1, 1, 8, 8});
    n = node(g, "both", OP_Resize, 4, (int[]){x, -1, sc4, sz}, 1);
    CHECK(infer(g, n) != SMELT_OK);
    CHECK_STR_HAS(smelt_last_error(), "exactly one of 'scales' and 'sizes'");
    ir_graph_free(g);
}

TEST(infer_topk_onehot_einsum)
{
    ir_graph *g = ir_graph_new();
    g->opset = 19;
    int x = T(g, "x", SMELT_F32, 3, 5);
    int k = ints(g, "k", 1, (int64_t[]){2});
    int n = node(g, "topk", OP_TopK, 2, (int[]){x, k}, 2);
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK_SHAPE(OUT(g, n, 0), 3, 2);
    CHECK_EQ_INT(OUT(g, n, 1)->dtype, SMELT_I64);
    int k9 = ints(g, "k9", 1, (int64_t[]){9});
    n = node(g, "topk9", OP_TopK, 2, (int[]){x, k9}, 2);
    CHECK(infer(g, n) != SMELT_OK);
    CHECK_STR_HAS(smelt_last_error(), "k = 9 must be in [0, 5]");

    int ind = T(g, "ind", SMELT_I64, 2, 3);
    int depth = ints(g, "depth", 1, (int64_t[]){4});
    int vals = floats(g, "vals", 2, (float[]){0, 1});
    n = node(g, "oh", OP_OneHot, 3, (int[]){ind, depth, vals}, 1);
    attr_int(g, n, "axis", 1);
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK_SHAPE(OUT(g, n, 0), 2, 4, 3);

    int a = T(g, "a", SMELT_F32, 2, 3, 4), b = T(g, "b", SMELT_F32, 2, 4, 5);
    n = node(g, "es", OP_Einsum, 2, (int[]){a, b}, 1);
    attr_str(g, n, "equation", "bij,bjk->bik");
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK_SHAPE(OUT(g, n, 0), 2, 3, 5);
    n = node(g, "es2", OP_Einsum, 1, (int[]){a}, 1);
    attr_str(g, n, "equation", "...ij->...ji");
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK_SHAPE(OUT(g, n, 0), 2, 4, 3);
    n = node(g, "es3", OP_Einsum, 2, (int[]){a, b}, 1);
    attr_str(g, n, "equation", "bij,bik->bjk");
    CHECK(infer(g, n) != SMELT_OK);
    CHECK_STR_HAS(smelt_last_error(), "has size 4, elsewhere 3");
    /* the shape-dependent checks: the ellipsis's width, a term's rank */
    int c = T(g, "c", SMELT_F32, 4, 5);
    n = node(g, "es4", OP_Einsum, 2, (int[]){a, c}, 1);
    attr_str(g, n, "equation", "...ij,...jk->...ik");
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK_SHAPE(OUT(g, n, 0), 2, 3, 5);
    n = node(g, "es5", OP_Einsum, 2, (int[]){c, a}, 1);
    attr_str(g, n, "equation", "ij,jk");
    CHECK(infer(g, n) != SMELT_OK);
    CHECK_STR_HAS(smelt_last_error(), "equation term 1 of 'ij,jk' does not match input 1 of rank 3");
    n = node(g, "es6", OP_Einsum, 1, (int[]){a}, 1);
    attr_str(g, n, "equation", "abcdefg...");
    CHECK(infer(g, n) != SMELT_OK);
    CHECK_STR_HAS(smelt_last_error(), "equation term 0 of 'abcdefg...' does not match input 0 of rank 3");
    n = node(g, "es7", OP_Einsum, 1, (int[]){a}, 1);
    attr_str(g, n, "equation", "i...");
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK_SHAPE(OUT(g, n, 0), 3, 4, 2);
    ir_graph_free(g);
}

TEST(infer_losses_and_scatter)
{
    ir_graph *g = ir_graph_new();
    g->opset = 19;
    int x = T(g, "x", SMELT_F32, 3, 5, 2), t = T(g, "t", SMELT_I64, 3, 2);
    int n = node(g, "nll", OP_NegativeLogLikelihoodLoss, 2, (int[]){x, t}, 1);
    attr_str(g, n, "reduction", "none");
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK_SHAPE(OUT(g, n, 0), 3, 2);
    n = node(g, "sce", OP_SoftmaxCrossEntropyLoss, 2, (int[]){x, t}, 2);
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK_EQ_INT(OUT(g, n, 0)->shape.rank, 0);
    CHECK_SHAPE(OUT(g, n, 1), 3, 5, 2);
    int t2 = T(g, "t2", SMELT_I64, 3, 3);
    n = node(g, "bad", OP_NegativeLogLikelihoodLoss, 2, (int[]){x, t2}, 1);
    CHECK(infer(g, n) != SMELT_OK);
    CHECK_STR_HAS(smelt_last_error(), "target [3,3] [N, d...]");

    int d = T(g, "d", SMELT_F32, 4, 4), i = T(g, "i", SMELT_I64, 2, 1), u = T(g, "u", SMELT_F32, 2, 4);
    n = node(g, "snd", OP_ScatterND, 3, (int[]){d, i, u}, 1);
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK_SHAPE(OUT(g, n, 0), 4, 4);
    int u2 = T(g, "u2", SMELT_F32, 2, 3);
    n = node(g, "snd2", OP_ScatterND, 3, (int[]){d, i, u2}, 1);
    CHECK(infer(g, n) != SMELT_OK);
    CHECK_STR_HAS(smelt_last_error(), "indices.shape[:-1] + data.shape[k:]");
    n = node(g, "se", OP_ScatterElements, 3, (int[]){d, i, i}, 1);
    CHECK(infer(g, n) != SMELT_OK);
    CHECK_STR_HAS(smelt_last_error(), "updates must have the data's dtype");
    ir_graph_free(g);
}

TEST(infer_norms_and_quant)
{
    ir_graph *g = ir_graph_new();
    g->opset = 21;
    int x = T(g, "x", SMELT_F32, 2, 6, 3), s = T(g, "s", SMELT_F32, 6), s4 = T(g, "s4", SMELT_F32, 4);
    int n = node(g, "gn", OP_GroupNormalization, 3, (int[]){x, s, s}, 1);
    attr_int(g, n, "num_groups", 3);
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK_SHAPE(OUT(g, n, 0), 2, 6, 3);
    n = node(g, "gn4", OP_GroupNormalization, 3, (int[]){x, s, s}, 1);
    attr_int(g, n, "num_groups", 4);
    CHECK(infer(g, n) != SMELT_OK);
    CHECK_STR_HAS(smelt_last_error(), "must be positive and divide the 6 channels");
    n = node(g, "rms", OP_RMSNormalization, 2, (int[]){x, s4}, 1);
    CHECK(infer(g, n) != SMELT_OK);
    CHECK_STR_HAS(smelt_last_error(), "must broadcast to X");

    int q = T(g, "q", SMELT_F32, 2, 6), qs = T(g, "qs", SMELT_F32, 6), zp = T(g, "zp", SMELT_I8, 6);
    n = node(g, "ql", OP_QuantizeLinear, 3, (int[]){q, qs, zp}, 1);
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK_EQ_INT(OUT(g, n, 0)->dtype, SMELT_I8);
    int qs3 = T(g, "qs3", SMELT_F32, 3);
    n = node(g, "ql3", OP_QuantizeLinear, 2, (int[]){q, qs3}, 1);
    CHECK(infer(g, n) != SMELT_OK);
    CHECK_STR_HAS(smelt_last_error(), "per-axis scale [3] must be [6]");
    ir_graph_free(g);
}

TEST(infer_attention_and_rotary)
{
    ir_graph *g = ir_graph_new();
    g->opset = 23;
    int q = T(g, "q", SMELT_F32, 2, 4, 3, 8), k = T(g, "k", SMELT_F32, 2, 2, 5, 8), v = T(g, "v", SMELT_F32, 2, 2, 5, 6);
    int pk = T(g, "pk", SMELT_F32, 2, 2, 7, 8), pv = T(g, "pv", SMELT_F32, 2, 2, 7, 6);
    int n = node(g, "att", OP_Attention, 6, (int[]){q, k, v, -1, pk, pv}, 4);
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK_SHAPE(OUT(g, n, 0), 2, 4, 3, 6);
    CHECK_SHAPE(OUT(g, n, 1), 2, 2, 12, 8);
    CHECK_SHAPE(OUT(g, n, 2), 2, 2, 12, 6);
    CHECK_SHAPE(OUT(g, n, 3), 2, 4, 3, 12);
    int k3 = T(g, "k3", SMELT_F32, 2, 3, 5, 8);
    n = node(g, "gqa", OP_Attention, 3, (int[]){q, k3, k3}, 1);
    CHECK(infer(g, n) != SMELT_OK);
    CHECK_STR_HAS(smelt_last_error(), "q heads divide by kv heads");
    int q3 = T(g, "q3", SMELT_F32, 2, 3, 12);
    n = node(g, "att3", OP_Attention, 3, (int[]){q3, q3, q3}, 1);
    CHECK(infer(g, n) != SMELT_OK);
    CHECK_STR_HAS(smelt_last_error(), "need positive q_num_heads and kv_num_heads");

    int x = T(g, "x", SMELT_F32, 2, 4, 3, 8), cs = T(g, "cs", SMELT_F32, 16, 4), pos = T(g, "pos", SMELT_I64, 2, 3);
    n = node(g, "rope", OP_RotaryEmbedding, 4, (int[]){x, cs, cs, pos}, 1);
    CHECK_EQ_INT(infer(g, n), SMELT_OK);
    CHECK_SHAPE(OUT(g, n, 0), 2, 4, 3, 8);
    n = node(g, "rope_odd", OP_RotaryEmbedding, 4, (int[]){x, cs, cs, pos}, 1);
    attr_int(g, n, "rotary_embedding_dim", 5);
    CHECK(infer(g, n) != SMELT_OK);
    CHECK_STR_HAS(smelt_last_error(), "must be even");
    ir_graph_free(g);
}
