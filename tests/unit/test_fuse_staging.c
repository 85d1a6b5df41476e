/*
 * test_fuse_staging.c — what fused kernels do with memory: transposed reads
 * staged through workgroup tiles, large outputs streamed, write ranges that let
 * producers run together, barriers only where ranges meet, and the spans and
 * boxes each kernel records (fuse_cases.h builds and checks the graphs).
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/program.h"
#include "graph/passes.h"
#include "target/emit.h"
#include "test.h"
#include "fuse_cases.h"

static void plan_chain(const ir_graph *g, const fuse_plan *fp)
{
    CHECK(region_is(g, fp, "cos", "transpose:i gelu:i exp:i cos:r", "x", "cos"));
}

TEST(fuse_transpose_gelu_exp_cos_is_one_region)
{
    ir_graph *g = ir_graph_new();
    int x = input(g, "x", shp(2, 6, 10));
    int y = op1(g, "cos", OP_Cos, op1(g, "exp", OP_Exp, op1(g, "gelu", OP_Gelu, op1(g, "transpose", OP_Transpose, x))));
    ir_graph_set_io(g, 1, &x, 1, &y);
    check_case(g, plan_chain, 1, 1, 1e-6);
}

/* A transposed read of a large tensor is staged: each tile first copies the
 * source block into workgroup memory (reading it along its rows), then computes
 * in the output's order from the copy, prefetching the next tile's source
 * rows as it goes. Batch of 2 and sizes off the 128-tile
 * grid, so partial tiles are covered; the second shape's width (150) is off
 * the 8- and 16-column panels too. */
static void plan_staged(const ir_graph *g, const fuse_plan *fp)
{
    CHECK(region_is(g, fp, "mul", "transpose:i sigmoid:i mul:r", "x", "mul"));
}

static bool has_prefetch(const smelt_program *p)
{
    for (int i = 0; i < p->lp.n_kernels; i++)
        for (int s = 0; s < p->lp.kernels[i]->n_stmts; s++)
            if (p->lp.kernels[i]->stmts[s].kind == KS_PREFETCH) return true;
    return false;
}

TEST(fuse_transposed_read_is_staged_through_a_tile)
{
    static const int64_t dims[2][2] = {{200, 136}, {150, 133}};
    for (int shape = 0; shape < 2; shape++) {
        for (int transposed = 1; transposed >= 0; transposed--) {
            ir_graph *g = ir_graph_new();
            int x = input(g, "x", shp(3, 2, dims[shape][0], dims[shape][1]));
            int t = x;
            if (transposed) {
                t = op1(g, "transpose", OP_Transpose, x);
                attr_ints(g, node_named(g, "transpose"), "perm", 3, (const int64_t[]){0, 2, 1});
            }
            t = op1(g, "sigmoid", OP_Sigmoid, t);
            t = op2(g, "mul", OP_Mul, t, t);
            ir_graph_set_io(g, 1, &x, 1, &t);
            smelt_program *p = compile(g, 0);
            CHECK(p && workgroup_tiles(p) == transposed); /* a contiguous read needs no tile */
            CHECK(p && has_prefetch(p) == transposed);    /* and nothing fetched ahead */
            smelt_program_free(p);
            if (transposed) check_case(g, plan_staged, 1, 1, 1e-6);
            else ir_graph_free(g);
        }
    }
}

/* Panels are the target's vector width (program.c asks the host; the
 * variable overrides it): each width gives the same results, also where the
 * row width (133) is off every panel. */
static int64_t staged_panel(const smelt_program *p)
{
    for (int i = 0; i < p->lp.n_kernels; i++) {
        const kir_kernel *k = p->lp.kernels[i];
        for (int s = 0; s < k->n_stmts; s++) /* pass A's first loop: panels of columns */
            if (k->stmts[s].kind == KS_LOOP_BEGIN && kir_is_const(k, k->stmts[s].step) &&
                k->vals[k->stmts[s].step].imm.i > 1 && k->vals[k->stmts[s].step].imm.i < 64)
                return k->vals[k->stmts[s].step].imm.i;
    }
    return 0;
}

TEST(fuse_staged_panels_follow_the_vector_width)
{
    static const char *const widths[] = {"4", "8", "16"};
    for (int w = 0; w < 3; w++) {
        setenv("SMELT_VECTOR_WIDTH", widths[w], 1);
        ir_graph *g = ir_graph_new();
        int x = input(g, "x", shp(3, 2, 150, 133));
        int t = op1(g, "transpose", OP_Transpose, x);
        attr_ints(g, node_named(g, "transpose"), "perm", 3, (const int64_t[]){0, 2, 1});
        t = op1(g, "sigmoid", OP_Sigmoid, t);
        t = op2(g, "mul", OP_Mul, t, t);
        ir_graph_set_io(g, 1, &x, 1, &t);
        smelt_program *p = compile(g, 0);
        CHECK(p && staged_panel(p) == atoi(widths[w]));
        smelt_program_free(p);
        check_case(g, plan_staged, 1, 1, 1e-6);
    }
    unsetenv("SMELT_VECTOR_WIDTH");
}

/* Stream loops in p's kernels, and whether its C source calls the stream copy. */
static int stream_loops(const smelt_program *p, bool *in_source)
{
    int n = 0;
    for (int i = 0; i < p->lp.n_kernels; i++)
        for (int s = 0; s < p->lp.kernels[i]->n_stmts; s++) n += p->lp.kernels[i]->stmts[s].stream;
    char *src = NULL;
    CHECK(emit_program(p->lp.kernels, p->lp.n_kernels, EMIT_C, LOCALS_HYBRID, (const int *const *)p->plan.in_place_of, &src) == SMELT_OK);
    *in_source = src && strstr(src, "smelt_stream_f32(&b") && strstr(src, "_mm_sfence()");
    free(src);
    return n;
}

/* An output of at least SMELT_STREAM_MIN_BYTES is copied out of a row of
 * workgroup memory by a stream loop (non-temporal stores in C) where the
 * panels are whole; at every vector width (16 takes the AVX-512 stores on a
 * host that has them, 4 and 8 the plain copy) the results are the same. */
TEST(fuse_large_staged_outputs_are_streamed)
{
    static const char *const widths[] = {"4", "8", "16"};
    static const struct {
        int64_t w;
        const char *min_bytes;
        int streams;
    } cases[] = {
        {144, "1", 1},         /* whole panels, over the threshold */
        {133, "1", 0},         /* a short last panel: plain stores */
        {144, "100000000", 0}, /* under the threshold */
    };
    for (int w = 0; w < 3; w++) {
        for (int c = 0; c < 3; c++) {
            setenv("SMELT_VECTOR_WIDTH", widths[w], 1);
            setenv("SMELT_STREAM_MIN_BYTES", cases[c].min_bytes, 1);
            ir_graph *g = ir_graph_new();
            int x = input(g, "x", shp(3, 2, cases[c].w, 150));
            int t = op1(g, "transpose", OP_Transpose, x);
            attr_ints(g, node_named(g, "transpose"), "perm", 3, (const int64_t[]){0, 2, 1});
            t = op1(g, "sigmoid", OP_Sigmoid, t);
            t = op2(g, "mul", OP_Mul, t, t);
            ir_graph_set_io(g, 1, &x, 1, &t);
            smelt_program *p = compile(g, 0);
            bool in_source = false;
            CHECK(p && stream_loops(p, &in_source) == cases[c].streams);
            CHECK(in_source == (cases[c].streams > 0));
            smelt_program_free(p);
            check_case(g, plan_staged, 1, 1, 1e-6);
        }
    }
    unsetenv("SMELT_VECTOR_WIDTH");
    unsetenv("SMELT_STREAM_MIN_BYTES");
}

/* A region with two outputs (fuse.h "shared") streams each of them. */
static void plan_two_streamed(const ir_graph *g, const fuse_plan *fp)
{
    CHECK(region_is(g, fp, "mul", "transpose:i sigmoid:i mul:r", "x", "mul sigmoid"));
}

TEST(fuse_staged_region_streams_each_output)
{
    setenv("SMELT_VECTOR_WIDTH", "8", 1);
    setenv("SMELT_STREAM_MIN_BYTES", "1", 1);
    ir_graph *g = ir_graph_new();
    int x = input(g, "x", shp(3, 2, 144, 150));
    int t = op1(g, "transpose", OP_Transpose, x);
    attr_ints(g, node_named(g, "transpose"), "perm", 3, (const int64_t[]){0, 2, 1});
    int s = op1(g, "sigmoid", OP_Sigmoid, t);
    int outs[] = {s, op2(g, "mul", OP_Mul, s, s)};
    ir_graph_set_io(g, 1, &x, 2, outs);
    smelt_program *p = compile(g, 0);
    bool in_source = false;
    CHECK(p && stream_loops(p, &in_source) == 2);
    smelt_program_free(p);
    check_case(g, plan_two_streamed, 1, 1, 1e-6);
    unsetenv("SMELT_VECTOR_WIDTH");
    unsetenv("SMELT_STREAM_MIN_BYTES");
}

/* ---- barriers from ranges -------------------------------------------------------------- */

/* Kernels with a barrier before them (plan/barriers.c). */
static int barriers(const smelt_program *p, int *n_kernels)
{
    *n_kernels = p->lp.n_kernels;
    int n = 0;
    for (int i = 0; i < p->lp.n_kernels; i++) n += p->plan.barrier_before[i];
    CHECK(p->lp.n_kernels == 0 || !p->plan.barrier_before[0]);
    CHECK_EQ_INT(n, p->plan.n_barriers);
    return n;
}

/* Two MatMuls that write disjoint blocks of one Concat output (their
 * regions' write ranges) and read only the graph input share a batch; a
 * consumer of the concatenation waits for both. With ranges taken as whole
 * tensors the second producer would wait for the first (two writes to y). */
TEST(fuse_write_ranges_let_concat_producers_run_together)
{
    ir_graph *g = ir_graph_new();
    int x = input(g, "x", shp(2, 32, 24));
    int a = op2(g, "mm1", OP_MatMul, x, constant(g, "w1", shp(2, 24, 16), 0.5f, 0.01f));
    int b = op2(g, "mm2", OP_MatMul, x, constant(g, "w2", shp(2, 24, 16), -0.5f, 0.02f));
    int ab[2] = {a, b};
    int y = op(g, "concat", OP_Concat, 2, ab);
    attr_int(g, node_named(g, "concat"), "axis", 0);
    int z = op2(g, "mul", OP_Mul, y, y);
    int outs[2] = {y, z};
    ir_graph_set_io(g, 1, &x, 2, outs);
    smelt_program *p = compile(g, 0);
    int n = 0;
    if (p) {
        CHECK_EQ_INT(barriers(p, &n), 1); /* only before the Mul */
        CHECK_EQ_INT(n, 3);
        CHECK(p->plan.barrier_before[n - 1]);
    }
    smelt_program_free(p);
    check_case(g, plan_any, 4, 3, 1e-6);
}

/* A kernel that reads what the one before wrote waits; two that read the
 * same input and write their own outputs do not. */
TEST(fuse_barriers_only_where_memory_meets)
{
    ir_graph *g = ir_graph_new();
    int x = input(g, "x", shp(2, 40, 30));
    int a = op1(g, "exp", OP_Exp, x);   /* an output, so stored */
    int b = op1(g, "softmax", OP_Softmax, a); /* reads a (not an elementwise loop: a stays stored): waits */
    int c = op1(g, "sigmoid", OP_Sigmoid, x); /* reads x only, writes its own: joins b's batch */
    int outs[3] = {a, b, c};
    ir_graph_set_io(g, 1, &x, 3, outs);
    smelt_program *p = compile(g, 0);
    int n = 0;
    if (p) {
        CHECK_EQ_INT(barriers(p, &n), 1);
        CHECK_EQ_INT(n, 3);
        CHECK(!p->plan.barrier_before[0] && p->plan.barrier_before[1] && !p->plan.barrier_before[2]);
    }
    smelt_program_free(p);
    check_case(g, plan_any, 3, 3, 1e-6);
}

static int i64_vector(ir_graph *g, const char *name, int n, const int64_t *v)
{
    int t = ir_tensor_add(g, name, SMELT_I64, &(ir_shape){.rank = 1, .dim = {n}});
    for (int i = 0; i < n; i++) ((int64_t *)ir_tensor_alloc_data(g, t))[i] = v[i];
    return t;
}

/* The buffer of kernel i bound to graph tensor t, or NULL. */
static const kir_buffer *buffer_of(const smelt_program *p, int i, int t)
{
    for (int b = 0; b < p->lp.kernels[i]->n_bufs; b++)
        if (p->lp.kernels[i]->bufs[b].tensor == t) return &p->lp.kernels[i]->bufs[b];
    return NULL;
}

/* A Slice inlined into its consumer reads only its rows: the kernel's span of
 * the source (kir/spans.c, from the composed index map) is rows 2..4 of
 * 8, and bytes moved count those rows, not the whole source; a transposed
 * read spans the whole source. */
TEST(fuse_kernel_spans_follow_the_index_maps)
{
    ir_graph *g = ir_graph_new();
    int x = input(g, "x", shp(2, 8, 10));
    int in[4] = {x, i64_vector(g, "starts", 1, (const int64_t[]){2}), i64_vector(g, "ends", 1, (const int64_t[]){5}),
                 i64_vector(g, "axes", 1, (const int64_t[]){0})};
    int y = op1(g, "exp", OP_Exp, op(g, "slice", OP_Slice, 4, in));
    int t = op1(g, "transpose", OP_Transpose, x);
    attr_ints(g, node_named(g, "transpose"), "perm", 2, (const int64_t[]){1, 0});
    int z = op1(g, "tanh", OP_Tanh, t);
    int outs[2] = {y, z};
    ir_graph_set_io(g, 1, &x, 2, outs);
    smelt_program *p = compile(g, 0);
    CHECK(p && p->lp.n_kernels == 2);
    if (p && p->lp.n_kernels == 2) {
        const kir_buffer *a = buffer_of(p, 0, x), *b = buffer_of(p, 1, x), *ya = buffer_of(p, 0, y);
        CHECK(a && b && ya);
        if (a && b && ya) {
            CHECK(a->span_lo == 20 && a->span_hi == 50);
            CHECK(b->span_lo == 0 && b->span_hi == 80);
            CHECK(ya->span_lo == 0 && ya->span_hi == 30);
        }
        CHECK_EQ_INT(p->stats.bytes_moved, (30 + 30 + 80 + 80) * 4);
        CHECK(!p->plan.barrier_before[1]); /* both only read x */
        CHECK(a && a->box_rank == 2 && a->box_lo[0] == 2 && a->box_hi[0] == 5 && a->box_lo[1] == 0 &&
              a->box_hi[1] == 10);
    }
    smelt_program_free(p);
    check_case(g, plan_any, 2, 2, 1e-6);
}

/* A Slice of columns inlined into its consumer reads a box: its columns of
 * every row (kir/spans.c, "Boxes"), where the flat span runs from the
 * first row's first column to the last row's last. `--emit regions` prints
 * the box, and bytes moved count its elements. */
TEST(fuse_kernel_boxes_bound_each_dim)
{
    ir_graph *g = ir_graph_new();
    int x = input(g, "x", shp(2, 8, 10));
    int in[4] = {x, i64_vector(g, "starts", 1, (const int64_t[]){3}), i64_vector(g, "ends", 1, (const int64_t[]){7}),
                 i64_vector(g, "axes", 1, (const int64_t[]){1})};
    int y = op1(g, "exp", OP_Exp, op(g, "slice", OP_Slice, 4, in));
    ir_graph_set_io(g, 1, &x, 1, &y);
    smelt_program *p = compile(g, 0);
    CHECK(p && p->lp.n_kernels == 1);
    if (p && p->lp.n_kernels == 1) {
        const kir_buffer *a = buffer_of(p, 0, x), *w = buffer_of(p, 0, y);
        CHECK(a && w);
        if (a && w) {
            CHECK(a->span_lo == 3 && a->span_hi == 77);
            CHECK(a->box_rank == 2 && a->box_lo[0] == 0 && a->box_hi[0] == 8 && a->box_lo[1] == 3 && a->box_hi[1] == 7);
            CHECK(w->box_rank == 2 && w->box_lo[0] == 0 && w->box_hi[0] == 8 && w->box_lo[1] == 0 && w->box_hi[1] == 4);
        }
        CHECK_EQ_INT(p->stats.bytes_moved, (32 + 32) * 4);
        char *text = NULL;
        CHECK_EQ_INT(smelt_program_dump(p, "regions", &text), SMELT_OK);
        CHECK(text && strstr(text, "reads:  %0[0:8,3:7]") && strstr(text, "writes: %"));
        free(text);
    }
    smelt_program_free(p);
    check_case(g, plan_any, 1, 1, 1e-6);
}

/* Two sources read transposed get a tile each; a third read in the output's
 * order is loaded straight from memory. */
static void plan_two_staged(const ir_graph *g, const fuse_plan *fp)
{
    CHECK(region_is(g, fp, "mul", "tx:i ty:i add:i mul:r", "x y z", "mul"));
}

TEST(fuse_two_transposed_sources_are_staged_in_two_tiles)
{
    ir_graph *g = ir_graph_new();
    int x = input(g, "x", shp(2, 140, 130)), y = input(g, "y", shp(2, 140, 130));
    int z = input(g, "z", shp(2, 130, 140));
    int t = op2(g, "add", OP_Add, op1(g, "tx", OP_Transpose, x), op1(g, "ty", OP_Transpose, y));
    t = op2(g, "mul", OP_Mul, t, z);
    int ins[3] = {x, y, z};
    ir_graph_set_io(g, 3, ins, 1, &t);
    smelt_program *p = compile(g, 0);
    CHECK(p && workgroup_tiles(p) == 2);
    smelt_program_free(p);
    check_case(g, plan_two_staged, 1, 1, 1e-6);
}

/* A tile copy's panels are not a multiple of 4 KiB apart: pass B reads one
 * vector from each panel of a row, and at 4 KiB apart all of them fall into
 * one L1 set (lower/tiles.c, tile_at). 128-row tiles of 8-lane panels are
 * exactly 4 KiB apart unpadded. */
TEST(fuse_staged_panels_are_padded_off_the_page_stride)
{
    setenv("SMELT_VECTOR_WIDTH", "8", 1);
    ir_graph *g = ir_graph_new();
    int x = input(g, "x", shp(3, 2, 256, 256));
    int t = op1(g, "transpose", OP_Transpose, x);
    attr_ints(g, node_named(g, "transpose"), "perm", 3, (const int64_t[]){0, 2, 1});
    t = op2(g, "mul", OP_Mul, op1(g, "sigmoid", OP_Sigmoid, t), x);
    ir_graph_set_io(g, 1, &x, 1, &t);
    smelt_program *p = compile(g, 0);
    int tiles = 0;
    for (int i = 0; p && i < p->lp.n_kernels; i++) {
        const kir_kernel *k = p->lp.kernels[i];
        for (int b = 0; b < k->n_bufs; b++) {
            if (!k->bufs[b].workgroup || k->bufs[b].numel <= 8) continue; /* a stream row, not a tile */
            int64_t panel_bytes = k->bufs[b].numel / (128 / 8) * (int64_t)smelt_dtype_size(k->bufs[b].type);
            CHECK(panel_bytes >= 128 * 8 * 4 && panel_bytes % 4096 != 0);
            tiles++;
        }
    }
    CHECK(tiles == 1);
    smelt_program_free(p);
    unsetenv("SMELT_VECTOR_WIDTH");
    check_case(g, plan_any, 1, 1, 1e-6);
}

/* Whether p's kernels run in the interpreter, which bounds-checks every load,
 * store and prefetch (inputs zero: only the addresses matter here). */
static bool interprets(const smelt_program *p)
{
    bool ok = true;
    for (int i = 0; ok && i < p->lp.n_kernels; i++) {
        const kir_kernel *k = p->lp.kernels[i];
        void *bufs[64] = {0};
        for (int q = 0; q < k->n_bufs && q < 64; q++)
            if (!k->bufs[q].workgroup) bufs[q] = calloc((size_t)k->bufs[q].numel + 1, (size_t)kir_buffer_elem_bytes(&k->bufs[q]));
        ok = k->n_bufs <= 64 && kir_interpret(k, bufs) == SMELT_OK;
        for (int q = 0; q < k->n_bufs && q < 64; q++) free(bufs[q]);
    }
    return ok;
}

/* Whether a kernel of p prefetches from the buffer of graph tensor t. */
static bool prefetches(const smelt_program *p, int t)
{
    for (int i = 0; i < p->lp.n_kernels; i++) {
        const kir_kernel *k = p->lp.kernels[i];
        for (int s = 0; s < k->n_stmts; s++)
            if (k->stmts[s].kind == KS_PREFETCH && k->bufs[k->stmts[s].buf].tensor == t) return true;
    }
    return false;
}

/* A staged kernel fetches ahead for the next tile both what pass A copies
 * (x, read transposed) and what pass B reads along its rows (y), and after a
 * workgroup's last column tile the next workgroup's first: every address in
 * the tensors, also where tiles are partial (136 rows, 200 columns: 2 x 2
 * tiles of 128, the last ones short) and for the last workgroup. */
static void plan_staged_xy(const ir_graph *g, const fuse_plan *fp)
{
    CHECK(region_is(g, fp, "mul", "tx:i sig:i mul:r", "x y", "mul"));
}

TEST(fuse_staged_tiles_prefetch_the_next_tile_in_range)
{
    static const int64_t dims[2][3] = {{2, 200, 136}, {3, 130, 256}};
    for (int shape = 0; shape < 2; shape++) {
        const int64_t *d = dims[shape];
        ir_graph *g = ir_graph_new();
        int x = input(g, "x", shp(3, d[0], d[1], d[2])), y = input(g, "y", shp(3, d[0], d[2], d[1]));
        int t = op1(g, "tx", OP_Transpose, x);
        attr_ints(g, node_named(g, "tx"), "perm", 3, (const int64_t[]){0, 2, 1});
        t = op2(g, "mul", OP_Mul, op1(g, "sig", OP_Sigmoid, t), y);
        int ins[2] = {x, y};
        ir_graph_set_io(g, 2, ins, 1, &t);
        smelt_program *p = compile(g, 0);
        CHECK(p && workgroup_tiles(p) >= 1);
        CHECK(p && prefetches(p, x) && prefetches(p, y));
        CHECK(p && interprets(p));
        smelt_program_free(p);
        check_case(g, plan_staged_xy, 1, 1, 1e-6);
    }
}
