/*
 * attention.h — Attention (scaled dot-product with masks, causal, GQA, kv cache) and
 * RotaryEmbedding.
 *
 * The functions the op table's rows name for this family (ir/ops.h gives the
 * columns; ops/op_table.c fills the table) and what the family shares between
 * its shape rules and its lowerings. Defined in ops/attention.c.
 */
#ifndef SMELT_OPS_ATTENTION_H
#define SMELT_OPS_ATTENTION_H

#include "lower/lower.h"

/* Attention's and RotaryEmbedding's attributes, parsed once (ir/ops.h
 * op_params); the head counts are checked against the shapes where those are
 * known (attention_geom_get, the RotaryEmbedding shape rule). */
typedef struct attention_params {
    bool has_scale;               /* Attention: scale given (else 1/sqrt(head size)) */
    float scale;
    float softcap;                /* default 0: none */
    int qk_mode;                  /* qk_matmul_output_mode: 0..3, default 0 */
    bool is_causal;               /* default 0 */
    int64_t q_num_heads, kv_num_heads; /* Attention with 3-D inputs: required there, default 0 */
    int64_t num_heads;            /* RotaryEmbedding with a 3-D input: required there, default 0 */
    int64_t rotary_embedding_dim; /* default 0: the whole head */
    bool interleaved;             /* default 0 */
} attention_params;
smelt_status parse_attention(const struct ir_graph *g, const struct ir_node *n, void *params);

smelt_status infer_Attention(struct ir_graph *g, int node);
smelt_status infer_RotaryEmbedding(struct ir_graph *g, int node);

/* Attention sizes: batch, query/kv heads, query length S, new kv length L,
 * past length P, total T = P + L, head sizes of Q/K (d) and V (dv). */
typedef struct attention_geom {
    bool rank3; /* inputs [B, S, heads * head_size] */
    int64_t batch, hq, hk, s, l, lv, p, t, d, dk, dv;
} attention_geom;
smelt_status attention_geom_get(const struct ir_graph *g, const struct ir_node *n, attention_geom *a);
kir_val elem_RotaryEmbedding(struct lower_ctx *c, int out, const kir_val *idx);
smelt_status lower_Attention(struct lower_ctx *c);

#endif
