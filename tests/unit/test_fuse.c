/*
 * test_fuse.c — region formation (fuse.h), one small hand-built graph per rule.
 *
 * Each case is checked twice: by fuse_build on the inferred graph, and end to
 * end through smelt_program_compile (whose graph is also bound, BN-folded and
 * compacted: nodes and tensors are therefore named, never numbered, below).
 * The compiled program must then compute what the `no_fuse` compile of the
 * same graph computes on the same inputs.
 *
 * A region is written as "name:role ..." (r root, i inline, e epilogue) for
 * its nodes, and as space-separated tensor names for what it reads and writes.
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

/* ---- building graphs ---------------------------------------------------------------------- */

static ir_shape shp(int rank, ...)
{
    ir_shape s = {.rank = rank};
    va_list ap;
    va_start(ap, rank);
    for (int i = 0; i < rank; i++) s.dim[i] = va_arg(ap, int);
    va_end(ap);
    return s;
}

static int input(ir_graph *g, const char *name, ir_shape s) { return ir_tensor_add(g, name, SMELT_F32, &s); }

/* A float constant with small values that vary along every dim. */
static int constant(ir_graph *g, const char *name, ir_shape s, float scale, float offset)
{
    int t = ir_tensor_add(g, name, SMELT_F32, &s);
    float *d = ir_tensor_alloc_data(g, t);
    for (int64_t i = 0; i < ir_shape_numel(&s); i++) d[i] = offset + scale * (float)((i * 7 + 3) % 11 - 5) / 5.0f;
    return t;
}

/* A node with one output tensor named like the node; returns the output tensor. */
static int op(ir_graph *g, const char *name, op_id id, int n_in, const int *in)
{
    int t = ir_tensor_add(g, name, SMELT_F32, NULL);
    ir_node_add(g, name, id, n_in, in, 1, &t);
    return t;
}
static int op1(ir_graph *g, const char *name, op_id id, int x) { return op(g, name, id, 1, &x); }
static int op2(ir_graph *g, const char *name, op_id id, int a, int b)
{
    int in[] = {a, b};
    return op(g, name, id, 2, in);
}

static void attr_ints(ir_graph *g, int node, const char *name, int n, const int64_t *v)
{
    ir_attr a = {.name = name, .type = IR_ATTR_INTS, .n = n, .ints = (int64_t *)v};
    CHECK(ir_node_attr_add(g, node, &a));
}
static void attr_int(ir_graph *g, int node, const char *name, int64_t v)
{
    ir_attr a = {.name = name, .type = IR_ATTR_INT, .i = v};
    CHECK(ir_node_attr_add(g, node, &a));
}

/* ---- looking at a plan -------------------------------------------------------------------- */

static int node_named(const ir_graph *g, const char *name)
{
    for (int i = 0; i < g->n_nodes; i++)
        if (!g->nodes[i].dead && strcmp(g->nodes[i].name, name) == 0) return i;
    return -1;
}

static const fuse_region *region_rooted(const ir_graph *g, const fuse_plan *fp, const char *root)
{
    int n = node_named(g, root);
    for (int r = 0; n >= 0 && r < fp->n_regions; r++)
        if (fp->regions[r].root == n) return &fp->regions[r];
    return NULL;
}

/* Whether the tensors ts[0..n) are exactly the space-separated names in `want`. */
static bool tensors_are(const ir_graph *g, const int *ts, int n, const char *want, const char *what)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", want);
    int count = 0;
    bool ok = true;
    for (char *save = NULL, *w = strtok_r(buf, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
        bool found = false;
        for (int i = 0; i < n; i++) found |= strcmp(g->tensors[ts[i]].name, w) == 0;
        if (!found) fprintf(stderr, "  %s: %s missing\n", what, w);
        ok &= found;
        count++;
    }
    if (count != n) {
        fprintf(stderr, "  %s: want {%s}, have {", what, want);
        for (int i = 0; i < n; i++) fprintf(stderr, " %s", g->tensors[ts[i]].name);
        fprintf(stderr, " }\n");
        ok = false;
    }
    return ok;
}

/* The region rooted at `root` holds exactly the nodes "name:role ...", reads
 * exactly `reads` and writes exactly `writes`. */
static bool region_is(const ir_graph *g, const fuse_plan *fp, const char *root, const char *nodes, const char *reads,
                      const char *writes)
{
    const fuse_region *r = region_rooted(g, fp, root);
    if (!r) {
        fprintf(stderr, "  no region rooted at %s\n", root);
        return false;
    }
    char buf[256];
    snprintf(buf, sizeof buf, "%s", nodes);
    int count = 0;
    bool ok = true;
    for (char *save = NULL, *w = strtok_r(buf, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
        char *colon = strchr(w, ':');
        fuse_role want = colon[1] == 'r' ? FUSE_ROOT : colon[1] == 'i' ? FUSE_INLINE : FUSE_EPILOGUE;
        *colon = 0;
        int n = node_named(g, w);
        bool member = false;
        for (int i = 0; n >= 0 && i < r->n_nodes; i++) member |= r->nodes[i] == n;
        if (!member) fprintf(stderr, "  region %s: node %s missing\n", root, w);
        else if (fp->role[n] != want) fprintf(stderr, "  region %s: node %s has role %d, want %d\n", root, w, fp->role[n], want);
        ok &= member && fp->role[n] == want;
        count++;
    }
    if (count != r->n_nodes) {
        fprintf(stderr, "  region %s: want nodes {%s}, have {", root, nodes);
        for (int i = 0; i < r->n_nodes; i++) fprintf(stderr, " %s", g->nodes[r->nodes[i]].name);
        fprintf(stderr, " }\n");
        ok = false;
    }
    ok &= tensors_are(g, r->reads, r->n_reads, reads, "reads");
    ok &= tensors_are(g, r->writes, r->n_writes, writes, "writes");
    return ok;
}

static fuse_role role_of(const ir_graph *g, const fuse_plan *fp, const char *name)
{
    int n = node_named(g, name);
    CHECK(n >= 0);
    return n >= 0 ? fp->role[n] : (fuse_role)-1;
}

/* ---- checking a case both ways ------------------------------------------------------------ */

typedef void (*plan_check)(const ir_graph *g, const fuse_plan *fp);

static smelt_program *compile(ir_graph *g, int no_fuse)
{
    smelt_options opt;
    smelt_options_init(&opt);
    opt.threads = 2;
    opt.no_fuse = no_fuse;
    struct smelt_model model = {g};
    smelt_program *p = NULL;
    smelt_status st = smelt_program_compile(&model, &opt, 0, NULL, &p);
    if (st) fprintf(stderr, "  compile (no_fuse=%d): %s\n", no_fuse, smelt_last_error());
    CHECK(st == SMELT_OK);
    return p;
}

/* Every output of a and b agrees to `tol` relative (exact zeros compare exactly). */
static void check_same_outputs(smelt_program *a, smelt_program *b, double tol)
{
    CHECK_EQ_INT(smelt_program_output_count(a), smelt_program_output_count(b));
    for (int o = 0; o < smelt_program_output_count(a); o++) {
        smelt_tensor x, y;
        CHECK(smelt_program_output(a, o, &x) == SMELT_OK);
        CHECK(smelt_program_output(b, o, &y) == SMELT_OK);
        CHECK_EQ_INT(smelt_tensor_numel(&x), smelt_tensor_numel(&y));
        CHECK(x.dtype == SMELT_F32 && y.dtype == SMELT_F32);
        int bad = 0;
        for (int64_t i = 0; i < smelt_tensor_numel(&x) && bad < 3; i++) {
            double u = ((const float *)x.data)[i], v = ((const float *)y.data)[i];
            if (!(fabs(u - v) <= tol * fmax(fabs(u), fabs(v)))) {
                fprintf(stderr, "  output %d [%lld]: fused %.9g, no_fuse %.9g\n", o, (long long)i, u, v);
                bad++;
            }
        }
        CHECK(bad == 0);
        bool nonzero = false; /* agreeing on all zeros would prove little */
        for (int64_t i = 0; i < smelt_tensor_numel(&x); i++) nonzero |= ((const float *)x.data)[i] != 0;
        CHECK(nonzero);
    }
}

/* Runs `check` on fuse_build's plan for the inferred (and BN-folded) graph and on the compiled
 * program's plan; requires `kernels` kernels after fusion and the no_fuse
 * program's outputs. Frees g. */
static void check_case(ir_graph *g, plan_check check, int regions, int kernels, double tol)
{
    char dir[] = "/tmp/smelt-test-fuse-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    setenv("SMELT_CACHE_DIR", dir, 1);

    ir_graph *h = ir_graph_clone(g);
    CHECK(h != NULL);
    CHECK(graph_infer(h, lower_eval_node) == SMELT_OK);
    CHECK(graph_fold_batchnorm(h) == SMELT_OK); /* the compiler's frontend, so both plans agree */
    CHECK(graph_fold_gemm_transpose(h) == SMELT_OK);
    CHECK(graph_dce(h) == SMELT_OK);
    fuse_plan fp;
    fuse_options fo = {.no_fuse = false};
    CHECK(fuse_build(h, &fo, &fp) == SMELT_OK);
    if (!test_failures) {
        CHECK_EQ_INT(fp.n_regions, regions);
        check(h, &fp);
        fuse_free(&fp);
    }
    ir_graph_free(h);

    smelt_program *p = compile(g, 0), *ref = compile(g, 1);
    if (p && ref) {
        CHECK_EQ_INT(p->fp.n_regions, regions);
        CHECK_EQ_INT(p->lp.n_kernels, kernels);
        check(p->g, &p->fp);
        smelt_tensor in[8];
        float *data[8];
        int n_in = g->n_inputs;
        for (int i = 0; i < n_in && i < 8; i++) {
            const ir_tensor *x = &g->tensors[g->inputs[i]];
            in[i] = (smelt_tensor){.name = x->name, .dtype = SMELT_F32, .rank = x->shape.rank};
            for (int d = 0; d < x->shape.rank; d++) in[i].shape[d] = x->shape.dim[d];
            int64_t n = ir_tensor_numel(x);
            data[i] = malloc(sizeof(float) * (size_t)n);
            for (int64_t j = 0; j < n; j++) data[i][j] = (float)((j * 13 + 5 * i + 1) % 23 - 11) / 7.0f;
            in[i].data = data[i];
        }
        CHECK(smelt_program_run(p, n_in, in) == SMELT_OK);
        CHECK(smelt_program_run(ref, n_in, in) == SMELT_OK);
        check_same_outputs(p, ref, tol);
        for (int i = 0; i < n_in && i < 8; i++) free(data[i]);
    }
    smelt_program_free(p);
    smelt_program_free(ref);
    ir_graph_free(g);
    unsetenv("SMELT_CACHE_DIR");
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
}

/* ---- 1. an injective + elementwise chain reads its source once ---------------------------- */

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

static int workgroup_tiles(const smelt_program *p)
{
    int n = 0;
    for (int i = 0; i < p->lp.n_kernels; i++)
        for (int b = 0; b < p->lp.kernels[i]->n_bufs; b++) n += p->lp.kernels[i]->bufs[b].workgroup;
    return n;
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
    CHECK(emit_program(p->lp.kernels, p->lp.n_kernels, EMIT_C, LOCALS_HYBRID, &src) == SMELT_OK);
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

/* ---- barriers from ranges -------------------------------------------------------------- */

static void plan_any(const ir_graph *g, const fuse_plan *fp)
{
    (void)g;
    (void)fp;
}

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
    int b = op1(g, "tanh", OP_Tanh, a); /* reads a: waits */
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

/* ---- 2. eight elementwise ops with broadcast constants: one kernel ------------------------ */

static void plan_eight(const ir_graph *g, const fuse_plan *fp)
{
    CHECK(region_is(g, fp, "e8", "e1:i e2:i e3:i e4:i e5:i e6:i e7:i e8:r", "x b1 b3 b5 b7", "e8"));
}

TEST(fuse_eight_op_chain_with_broadcast_constants_is_one_kernel)
{
    ir_graph *g = ir_graph_new();
    int x = input(g, "x", shp(2, 6, 10));
    int t = op2(g, "e1", OP_Add, x, constant(g, "b1", shp(1, 10), 0.5f, 0.1f));
    t = op1(g, "e2", OP_Tanh, t);
    t = op2(g, "e3", OP_Mul, t, constant(g, "b3", shp(1, 10), 1.0f, 1.5f));
    t = op1(g, "e4", OP_Sigmoid, t);
    t = op2(g, "e5", OP_Sub, constant(g, "b5", shp(1, 10), 0.25f, 0.0f), t);
    t = op1(g, "e6", OP_Exp, t);
    t = op2(g, "e7", OP_Div, t, constant(g, "b7", shp(2, 1, 10), 0.5f, 2.0f));
    t = op1(g, "e8", OP_Neg, t);
    ir_graph_set_io(g, 1, &x, 1, &t);
    check_case(g, plan_eight, 1, 1, 1e-6);
}

/* ---- 3. several consumers: cheap producers are recomputed, costly ones stored ------------- */

static void plan_cheap_shared(const ir_graph *g, const fuse_plan *fp)
{
    /* exp costs 1 <= FUSE_RECOMPUTE_MAX: both adds recompute it. */
    CHECK(region_is(g, fp, "add1", "exp:i add1:r", "x", "add1"));
    CHECK(region_is(g, fp, "add2", "exp:i add2:r", "x y", "add2"));
}

TEST(fuse_cheap_producer_with_two_consumers_is_recomputed)
{
    ir_graph *g = ir_graph_new();
    int x = input(g, "x", shp(2, 6, 10)), y = input(g, "y", shp(2, 6, 10));
    int t = op1(g, "exp", OP_Exp, x);
    int outs[] = {op2(g, "add1", OP_Add, t, x), op2(g, "add2", OP_Add, y, t)};
    int ins[] = {x, y};
    ir_graph_set_io(g, 2, ins, 2, outs);
    check_case(g, plan_cheap_shared, 2, 2, 1e-6);
}

static void plan_costly_shared(const ir_graph *g, const fuse_plan *fp)
{
    /* The chain's cone costs 4 > FUSE_RECOMPUTE_MAX: its last node is stored once,
     * its first three are inline in that store; the adds read it from memory. */
    CHECK(region_is(g, fp, "c4", "c1:i c2:i c3:i c4:r", "x", "c4"));
    CHECK(region_is(g, fp, "add1", "add1:r", "c4 x", "add1"));
    CHECK(region_is(g, fp, "add2", "add2:r", "y c4", "add2"));
}

TEST(fuse_costly_chain_with_two_consumers_is_materialized)
{
    ir_graph *g = ir_graph_new();
    int x = input(g, "x", shp(2, 6, 10)), y = input(g, "y", shp(2, 6, 10));
    int t = op1(g, "c4", OP_Cos, op1(g, "c3", OP_Sin, op1(g, "c2", OP_Neg, op1(g, "c1", OP_Exp, x))));
    int outs[] = {op2(g, "add1", OP_Add, t, x), op2(g, "add2", OP_Add, y, t)};
    int ins[] = {x, y};
    ir_graph_set_io(g, 2, ins, 2, outs);
    check_case(g, plan_costly_shared, 3, 3, 1e-6);
}

/* ---- 4. broadcast expansion: a costly [1,10] row is stored, a cheap one recomputed -------- */

static void plan_costly_row(const ir_graph *g, const fuse_plan *fp)
{
    CHECK(region_is(g, fp, "r3", "r1:i r2:i r3:r", "s", "r3"));
    CHECK(region_is(g, fp, "add", "add:r", "x r3", "add"));
}

TEST(fuse_costly_broadcast_row_is_materialized)
{
    ir_graph *g = ir_graph_new();
    int x = input(g, "x", shp(2, 6, 10)), s = input(g, "s", shp(2, 1, 10));
    int row = op1(g, "r3", OP_Cos, op1(g, "r2", OP_Sin, op1(g, "r1", OP_Exp, s)));
    int y = op2(g, "add", OP_Add, x, row);
    int ins[] = {x, s};
    ir_graph_set_io(g, 2, ins, 1, &y);
    check_case(g, plan_costly_row, 2, 2, 1e-6);
}

static void plan_cheap_row(const ir_graph *g, const fuse_plan *fp)
{
    CHECK(region_is(g, fp, "add", "r1:i add:r", "x s", "add"));
}

TEST(fuse_cheap_broadcast_row_is_inlined)
{
    ir_graph *g = ir_graph_new();
    int x = input(g, "x", shp(2, 6, 10)), s = input(g, "s", shp(2, 1, 10));
    int y = op2(g, "add", OP_Add, x, op1(g, "r1", OP_Exp, s));
    int ins[] = {x, s};
    ir_graph_set_io(g, 2, ins, 1, &y);
    check_case(g, plan_cheap_row, 1, 1, 1e-6);
}

/* ---- 5. a reduction's elementwise producer is inline ------------------------------------- */

static void plan_reduce(const ir_graph *g, const fuse_plan *fp)
{
    CHECK(region_is(g, fp, "sum", "exp:i sum:r", "x", "sum"));
}

TEST(fuse_exp_is_inline_in_reduce_sum)
{
    ir_graph *g = ir_graph_new();
    g->opset = 11; /* axes as an attribute */
    int x = input(g, "x", shp(2, 6, 10));
    int y = op1(g, "sum", OP_ReduceSum, op1(g, "exp", OP_Exp, x));
    static const int64_t axes[] = {1};
    attr_ints(g, g->n_nodes - 1, "axes", 1, axes);
    attr_int(g, g->n_nodes - 1, "keepdims", 1);
    ir_graph_set_io(g, 1, &x, 1, &y);
    check_case(g, plan_reduce, 1, 1, 1e-6);
}

/* ---- 6. contractions: epilogues after, only data movement inline before ------------------- */

static void plan_matmul_epilogue(const ir_graph *g, const fuse_plan *fp)
{
    CHECK(region_is(g, fp, "mm", "mm:r bias:e relu:e", "a b c", "relu"));
}

TEST(fuse_matmul_bias_relu_is_one_region)
{
    ir_graph *g = ir_graph_new();
    int a = input(g, "a", shp(2, 6, 8)), b = input(g, "b", shp(2, 8, 5));
    int y = op1(g, "relu", OP_Relu, op2(g, "bias", OP_Add, op2(g, "mm", OP_MatMul, a, b), constant(g, "c", shp(1, 5), 1.0f, 0.0f)));
    int ins[] = {a, b};
    ir_graph_set_io(g, 2, ins, 1, &y);
    check_case(g, plan_matmul_epilogue, 1, 1, 1e-6);
}

static void plan_matmul_transposed_b(const ir_graph *g, const fuse_plan *fp)
{
    CHECK(region_is(g, fp, "mm", "bt:i mm:r bias:e relu:e", "a b c", "relu"));
}

TEST(fuse_transpose_is_inline_in_matmul)
{
    ir_graph *g = ir_graph_new();
    int a = input(g, "a", shp(2, 6, 8)), b = input(g, "b", shp(2, 5, 8));
    int m = op2(g, "mm", OP_MatMul, a, op1(g, "bt", OP_Transpose, b));
    int y = op1(g, "relu", OP_Relu, op2(g, "bias", OP_Add, m, constant(g, "c", shp(1, 5), 1.0f, 0.0f)));
    int ins[] = {a, b};
    ir_graph_set_io(g, 2, ins, 1, &y);
    /* One region; lowered, the inlined transpose reads B across its rows in the
     * column loop, so B is first copied out in its own order (a second kernel)
     * and the product reads the copy unit-stride. */
    check_case(g, plan_matmul_transposed_b, 1, 2, 1e-6);
}

static void plan_matmul_exp_b(const ir_graph *g, const fuse_plan *fp)
{
    /* Exp costs 1: a contraction would evaluate it 6 times per element of b. */
    CHECK(region_is(g, fp, "be", "be:r", "b", "be"));
    CHECK(region_is(g, fp, "mm", "mm:r bias:e relu:e", "a be c", "relu"));
}

TEST(fuse_exp_is_not_inline_in_matmul)
{
    ir_graph *g = ir_graph_new();
    int a = input(g, "a", shp(2, 6, 8)), b = input(g, "b", shp(2, 8, 5));
    int m = op2(g, "mm", OP_MatMul, a, op1(g, "be", OP_Exp, b));
    int y = op1(g, "relu", OP_Relu, op2(g, "bias", OP_Add, m, constant(g, "c", shp(1, 5), 1.0f, 0.0f)));
    int ins[] = {a, b};
    ir_graph_set_io(g, 2, ins, 1, &y);
    check_case(g, plan_matmul_exp_b, 2, 2, 1e-6);
}

/* ---- 7. an epilogue's other inputs must be ready before the root runs --------------------- */

static void plan_late_operand(const ir_graph *g, const fuse_plan *fp)
{
    /* `late` is stored (it is a graph output) by a node after mm in graph
     * order, so its region runs after mm's: add cannot be mm's epilogue and
     * becomes its own root reading both from memory. */
    CHECK(region_is(g, fp, "mm", "mm:r", "a b", "mm"));
    CHECK(region_is(g, fp, "late", "late:r", "z", "late"));
    CHECK(region_is(g, fp, "add", "add:r", "mm late", "add"));
    CHECK(fp->regions[0].root == node_named(g, "mm") && fp->regions[1].root == node_named(g, "late") &&
          fp->regions[2].root == node_named(g, "add"));
}

TEST(fuse_epilogue_waits_for_operands_stored_after_the_root)
{
    ir_graph *g = ir_graph_new();
    int a = input(g, "a", shp(2, 6, 8)), b = input(g, "b", shp(2, 8, 5)), z = input(g, "z", shp(2, 6, 5));
    int m = op2(g, "mm", OP_MatMul, a, b);
    int late = op1(g, "late", OP_Cos, z);
    int y = op2(g, "add", OP_Add, m, late);
    int ins[] = {a, b, z}, outs[] = {y, late};
    ir_graph_set_io(g, 3, ins, 2, outs);
    check_case(g, plan_late_operand, 3, 3, 1e-6);
}

static void plan_late_inline_operand(const ir_graph *g, const fuse_plan *fp)
{
    /* The same Add, but `late` is inline (one consumer, cost 1): it is computed
     * from z, which is ready before mm runs, so add is mm's epilogue even though
     * `late` comes after mm in graph order. */
    CHECK(region_is(g, fp, "mm", "mm:r late:i add:e", "a b z", "add"));
}

TEST(fuse_epilogue_may_use_inline_operands_defined_after_the_root)
{
    ir_graph *g = ir_graph_new();
    int a = input(g, "a", shp(2, 6, 8)), b = input(g, "b", shp(2, 8, 5)), z = input(g, "z", shp(2, 6, 5));
    int m = op2(g, "mm", OP_MatMul, a, b);
    int y = op2(g, "add", OP_Add, op1(g, "late", OP_Cos, z), m);
    int ins[] = {a, b, z};
    ir_graph_set_io(g, 3, ins, 1, &y);
    check_case(g, plan_late_inline_operand, 1, 1, 1e-6);
}

/* ---- 8. a graph output inside a chain is stored --------------------------------------------- */

static void plan_output_mid_chain(const ir_graph *g, const fuse_plan *fp)
{
    CHECK(region_is(g, fp, "relu", "neg:i relu:r", "x", "relu"));
    CHECK(region_is(g, fp, "exp", "exp:r", "relu", "exp"));
}

TEST(fuse_graph_output_mid_chain_is_a_root)
{
    ir_graph *g = ir_graph_new();
    int x = input(g, "x", shp(2, 6, 10));
    int r = op1(g, "relu", OP_Relu, op1(g, "neg", OP_Neg, x));
    int outs[] = {r, op1(g, "exp", OP_Exp, r)};
    ir_graph_set_io(g, 1, &x, 2, outs);
    check_case(g, plan_output_mid_chain, 2, 2, 1e-6);
}

/* ---- 9. no_fuse: one region per node, one kernel per non-view node ------------------------ */

static void plan_views_fused(const ir_graph *g, const fuse_plan *fp)
{
    /* Fused, the chain is one region: the view is inline like any cost-0 node.
     * The Reshape's constant shape input is listed as a read, though its
     * element function never loads it. */
    CHECK(region_is(g, fp, "mul", "relu:i reshape:i exp:i mul:r", "x shape y", "mul"));
}

TEST(fuse_no_fuse_is_one_region_per_node)
{
    ir_graph *g = ir_graph_new();
    int x = input(g, "x", shp(2, 6, 10)), y = input(g, "y", shp(1, 60));
    int shape = ir_tensor_add(g, "shape", SMELT_I64, &(ir_shape){.rank = 1, .dim = {1}});
    ((int64_t *)ir_tensor_alloc_data(g, shape))[0] = 60;
    int v = op2(g, "reshape", OP_Reshape, op1(g, "relu", OP_Relu, x), shape);
    int out = op2(g, "mul", OP_Mul, op1(g, "exp", OP_Exp, v), y);
    int ins[] = {x, y};
    ir_graph_set_io(g, 2, ins, 1, &out);

    char dir[] = "/tmp/smelt-test-fuse-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    setenv("SMELT_CACHE_DIR", dir, 1);
    smelt_program *p = compile(g, 1);
    if (p) {
        CHECK_EQ_INT(p->g->n_nodes, 4);
        CHECK_EQ_INT(p->fp.n_regions, 4);
        CHECK_EQ_INT(p->lp.n_kernels, 3); /* the Reshape is a view: no kernel */
        for (int i = 0; i < p->g->n_nodes; i++) {
            CHECK(p->fp.role[i] == FUSE_ROOT);
            CHECK(p->fp.regions[i].root == i && p->fp.regions[i].n_nodes == 1);
        }
        for (int t = 0; t < p->g->n_tensors; t++) CHECK(p->fp.inline_of[t] < 0 && p->fp.epilogue_of[t] < 0);
        CHECK(region_is(p->g, &p->fp, "relu", "relu:r", "x", "relu"));
        CHECK(region_is(p->g, &p->fp, "reshape", "reshape:r", "relu shape", "reshape"));
        CHECK(region_is(p->g, &p->fp, "exp", "exp:r", "reshape", "exp"));
        CHECK(region_is(p->g, &p->fp, "mul", "mul:r", "exp y", "mul"));
        smelt_program_free(p);
    }
    unsetenv("SMELT_CACHE_DIR");
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);

    check_case(g, plan_views_fused, 1, 1, 1e-6);
}

/* ---- 10. Conv -> BatchNormalization -> Relu: BN folded, Relu the epilogue ------------------ */

static void plan_conv_bn_relu(const ir_graph *g, const fuse_plan *fp)
{
    CHECK(node_named(g, "bn") < 0); /* folded into conv's weights and bias */
    CHECK(region_is(g, fp, "conv", "conv:r relu:e", "x conv/folded_w conv/folded_b", "relu"));
    CHECK(role_of(g, fp, "relu") == FUSE_EPILOGUE);
}

TEST(fuse_conv_batchnorm_relu_is_one_kernel)
{
    ir_graph *g = ir_graph_new();
    int x = input(g, "x", shp(4, 1, 3, 7, 9));
    int w = constant(g, "w", shp(4, 5, 3, 3, 3), 0.3f, 0.0f), bias = constant(g, "wb", shp(1, 5), 0.2f, 0.1f);
    int cin[] = {x, w, bias};
    int c = op(g, "conv", OP_Conv, 3, cin);
    static const int64_t pads[] = {1, 1, 1, 1};
    attr_ints(g, g->n_nodes - 1, "pads", 4, pads);
    int bin[] = {c, constant(g, "scale", shp(1, 5), 0.5f, 1.0f), constant(g, "beta", shp(1, 5), 0.3f, 0.0f),
                 constant(g, "mean", shp(1, 5), 0.2f, 0.05f), constant(g, "var", shp(1, 5), 0.4f, 1.0f)};
    int y = op1(g, "relu", OP_Relu, op(g, "bn", OP_BatchNormalization, 5, bin));
    ir_graph_set_io(g, 1, &x, 1, &y);
    check_case(g, plan_conv_bn_relu, 1, 1, 1e-5);
}

/* ---- more edges: epilogues on reductions, dtype changes, views into contractions ---------- */

static void plan_reduce_epilogue(const ir_graph *g, const fuse_plan *fp)
{
    /* The reduction's [6,1] output has one same-shape elementwise consumer: a
     * chain of three epilogues, applied when the sum is stored. */
    CHECK(region_is(g, fp, "sum", "exp:i sum:r add:e abs:e sqrt:e", "x c", "sqrt"));
}

TEST(fuse_reduction_takes_an_epilogue_chain)
{
    ir_graph *g = ir_graph_new();
    g->opset = 11;
    int x = input(g, "x", shp(2, 7, 9));
    int r = op1(g, "sum", OP_ReduceSum, op1(g, "exp", OP_Exp, x));
    static const int64_t axes[] = {1};
    attr_ints(g, g->n_nodes - 1, "axes", 1, axes);
    int y = op2(g, "add", OP_Add, r, constant(g, "c", shp(2, 7, 1), 1.0f, 0.0f));
    y = op1(g, "sqrt", OP_Sqrt, op1(g, "abs", OP_Abs, y));
    ir_graph_set_io(g, 1, &x, 1, &y);
    check_case(g, plan_reduce_epilogue, 1, 1, 1e-6);
}

static void plan_softmax(const ir_graph *g, const fuse_plan *fp)
{
    /* Softmax is a reduction: the transpose and exp are inline (read once),
     * the broadcast Mul of a constant row is its epilogue. */
    CHECK(region_is(g, fp, "softmax", "transpose:i exp:i softmax:r mul:e", "x c", "mul"));
}

TEST(fuse_softmax_takes_inline_producers_and_an_epilogue)
{
    ir_graph *g = ir_graph_new();
    g->opset = 13;
    int x = input(g, "x", shp(2, 7, 9));
    int y = op1(g, "softmax", OP_Softmax, op1(g, "exp", OP_Exp, op1(g, "transpose", OP_Transpose, x)));
    y = op2(g, "mul", OP_Mul, y, constant(g, "c", shp(1, 7), 1.0f, 0.5f));
    ir_graph_set_io(g, 1, &x, 1, &y);
    check_case(g, plan_softmax, 1, 1, 1e-6);
}

static void plan_matmul_view_cast(const ir_graph *g, const fuse_plan *fp)
{
    /* A Reshape (view, cost 0) of B is inline in the contraction; Greater
     * (to bool) and Cast (back to float) are epilogues: the stored dtype
     * is the last epilogue's. The reshape's shape constant is listed as read. */
    CHECK(region_is(g, fp, "mm", "reshape:i mm:r gt:e cast:e", "a b shape c", "cast"));
}

TEST(fuse_view_inline_in_matmul_and_dtype_changing_epilogues)
{
    ir_graph *g = ir_graph_new();
    int a = input(g, "a", shp(2, 6, 8)), b = input(g, "b", shp(1, 40));
    int shape = ir_tensor_add(g, "shape", SMELT_I64, &(ir_shape){.rank = 1, .dim = {2}});
    int64_t *sd = ir_tensor_alloc_data(g, shape);
    sd[0] = 8, sd[1] = 5;
    int m = op2(g, "mm", OP_MatMul, a, op2(g, "reshape", OP_Reshape, b, shape));
    int gt = ir_tensor_add(g, "gt", SMELT_BOOL, NULL);
    int gin[] = {m, constant(g, "c", shp(1, 5), 1.0f, 0.0f)};
    ir_node_add(g, "gt", OP_Greater, 2, gin, 1, &gt);
    int y = op1(g, "cast", OP_Cast, gt);
    attr_int(g, g->n_nodes - 1, "to", 1); /* ONNX FLOAT */
    int ins[] = {a, b};
    ir_graph_set_io(g, 2, ins, 1, &y);
    check_case(g, plan_matmul_view_cast, 1, 1, 1e-6);
}

static void plan_two_matmuls(const ir_graph *g, const fuse_plan *fp)
{
    /* add reads mm1 (stored by an earlier region) and mm2: it becomes the
     * epilogue of mm2, its first input that is ready for it. */
    CHECK(region_is(g, fp, "mm1", "mm1:r", "a b", "mm1"));
    CHECK(region_is(g, fp, "mm2", "mm2:r add:e relu:e", "a c mm1", "relu"));
}

TEST(fuse_residual_add_of_two_matmuls_is_the_later_ones_epilogue)
{
    ir_graph *g = ir_graph_new();
    int a = input(g, "a", shp(2, 7, 8)), b = input(g, "b", shp(2, 8, 5)), c = input(g, "c", shp(2, 8, 5));
    int m1 = op2(g, "mm1", OP_MatMul, a, b), m2 = op2(g, "mm2", OP_MatMul, a, c);
    int y = op1(g, "relu", OP_Relu, op2(g, "add", OP_Add, m1, m2));
    int ins[] = {a, b, c};
    ir_graph_set_io(g, 3, ins, 1, &y);
    check_case(g, plan_two_matmuls, 2, 2, 1e-6);
}

static void plan_split(const ir_graph *g, const fuse_plan *fp)
{
    /* Inlining is decided per output tensor, roles per node: s0 is a graph
     * output (stored by split's own region), s1 is inline in exp. So split is
     * a member of exp's region too, evaluated inline for s1 (inline_of[s1]),
     * yet its role says FUSE_ROOT — the role of a node with several outputs
     * is not enough to tell how a region uses it; read inline_of. */
    CHECK(region_is(g, fp, "split", "split:r", "x", "s0"));
    CHECK(region_is(g, fp, "exp", "split:r exp:r", "x", "exp"));
    int s1 = -1;
    for (int t = 0; t < g->n_tensors; t++)
        if (strcmp(g->tensors[t].name, "s1") == 0) s1 = t;
    CHECK(s1 >= 0 && fp->inline_of[s1] == node_named(g, "split"));
}

TEST(fuse_split_with_one_output_stored_and_one_inline)
{
    ir_graph *g = ir_graph_new();
    g->opset = 11;
    int x = input(g, "x", shp(2, 7, 10));
    int s[2] = {ir_tensor_add(g, "s0", SMELT_F32, NULL), ir_tensor_add(g, "s1", SMELT_F32, NULL)};
    ir_node_add(g, "split", OP_Split, 1, &x, 2, s);
    attr_int(g, 0, "axis", 1);
    int outs[] = {s[0], op1(g, "exp", OP_Exp, s[1])};
    ir_graph_set_io(g, 1, &x, 2, outs);
    check_case(g, plan_split, 2, 2, 1e-6);
}

/* ---- rows: several reductions over the same rows in one kernel ----------------------------- */

static int reduce_last(ir_graph *g, const char *name, op_id id, int x)
{
    int y = op1(g, name, id, x);
    static const int64_t axes[] = {-1};
    attr_ints(g, g->n_nodes - 1, "axes", 1, axes);
    attr_int(g, g->n_nodes - 1, "keepdims", 1);
    return y;
}

static void plan_softmax_rows(const ir_graph *g, const fuse_plan *fp)
{
    CHECK(region_is(g, fp, "div", "max:i sub:i exp:i sum:i div:r", "x", "div"));
}

TEST(fuse_decomposed_softmax_is_one_kernel)
{
    ir_graph *g = ir_graph_new();
    g->opset = 11;
    int x = input(g, "x", shp(3, 3, 5, 37));
    int m = reduce_last(g, "max", OP_ReduceMax, x);
    int e = op1(g, "exp", OP_Exp, op2(g, "sub", OP_Sub, x, m));
    int y = op2(g, "div", OP_Div, e, reduce_last(g, "sum", OP_ReduceSum, e));
    ir_graph_set_io(g, 1, &x, 1, &y);
    check_case(g, plan_softmax_rows, 1, 1, 1e-6);
}

static void plan_layernorm_rows(const ir_graph *g, const fuse_plan *fp)
{
    CHECK(region_is(g, fp, "shift", "mean:i centre:i square:i var:i eps:i sd:i norm:i scale:i shift:r", "x e g b",
                    "shift"));
}

TEST(fuse_decomposed_layernorm_is_one_kernel)
{
    ir_graph *g = ir_graph_new();
    g->opset = 11;
    int x = input(g, "x", shp(3, 4, 3, 29));
    int c = op2(g, "centre", OP_Sub, x, reduce_last(g, "mean", OP_ReduceMean, x));
    int v = reduce_last(g, "var", OP_ReduceMean, op2(g, "square", OP_Mul, c, c));
    int sd = op1(g, "sd", OP_Sqrt, op2(g, "eps", OP_Add, v, constant(g, "e", shp(0), 0.0f, 1e-5f)));
    int n = op2(g, "norm", OP_Div, c, sd);
    int y = op2(g, "shift", OP_Add, op2(g, "scale", OP_Mul, n, constant(g, "g", shp(1, 29), 0.1f, 0.5f)),
                constant(g, "b", shp(1, 29), 0.05f, -0.2f));
    ir_graph_set_io(g, 1, &x, 1, &y);
    check_case(g, plan_layernorm_rows, 1, 1, 1e-5);
}

/* ---- inserts: producers write into their block of a Concat's output ------------------------ */

static void plan_concat_blocks(const ir_graph *g, const fuse_plan *fp)
{
    const fuse_region *r = region_rooted(g, fp, "mm2");
    CHECK(r && r->n_ranges == 1);
    if (r && r->n_ranges == 1) {
        /* mm2 is the second input: columns 5..12 of the concatenation */
        CHECK_EQ_INT(r->ranges[0].lo[1], 5);
        CHECK_EQ_INT(r->ranges[0].hi[1], 12);
        CHECK_EQ_INT(r->ranges[0].hi[0], 6);
    }
    const fuse_region *c = region_rooted(g, fp, "cat");
    CHECK(c && c->n_ranges == 0); /* every block was written by its producer */
}

TEST(fuse_concat_producers_write_their_own_blocks)
{
    ir_graph *g = ir_graph_new();
    int a = input(g, "a", shp(2, 6, 8));
    int m1 = op2(g, "mm1", OP_MatMul, a, constant(g, "w1", shp(2, 8, 5), 0.1f, 0.0f));
    int m2 = op2(g, "mm2", OP_MatMul, a, constant(g, "w2", shp(2, 8, 7), 0.2f, 0.0f));
    int y = op2(g, "cat", OP_Concat, m1, m2);
    attr_int(g, g->n_nodes - 1, "axis", 1);
    ir_graph_set_io(g, 1, &a, 1, &y);
    smelt_program *p = compile(g, 0);
    /* the blocks interleave in memory (columns 0..4 and 5..11 of each row), but their boxes
     * are apart: the two products share a batch */
    if (p && p->lp.n_kernels == 2) CHECK(!p->plan.barrier_before[1]);
    smelt_program_free(p);
    check_case(g, plan_concat_blocks, 3, 2, 1e-6);
}

/* A padded model output: its producer writes the interior, the Pad's own
 * dispatch only the border (ranges recorded apart), so the two run in one
 * batch; a consumer of the padded tensor waits for both. 160 x 130 floats:
 * over FUSE_PAD_SMALL, so the Pad is not fused into its producer. */
TEST(fuse_pad_border_and_interior_run_together)
{
    ir_graph *g = ir_graph_new();
    int x = input(g, "x", shp(2, 158, 127));
    int e = op1(g, "exp", OP_Exp, x);
    int pads = ir_tensor_add(g, "pads", SMELT_I64, &(ir_shape){.rank = 1, .dim = {4}});
    const int64_t pv[4] = {1, 2, 1, 1};
    for (int i = 0; i < 4; i++) ((int64_t *)ir_tensor_alloc_data(g, pads))[i] = pv[i];
    int in[2] = {e, pads};
    int y = op(g, "pad", OP_Pad, 2, in);
    int z = op2(g, "mul", OP_Mul, y, y);
    int outs[2] = {y, z};
    ir_graph_set_io(g, 1, &x, 2, outs);
    smelt_program *p = compile(g, 0);
    CHECK(p && p->lp.n_kernels == 3);
    if (p && p->lp.n_kernels == 3) {
        const fuse_region *border = region_rooted(p->g, &p->fp, "pad");
        CHECK(border && border->n_ranges == 1 && border->ranges[0].border);
        CHECK(!p->plan.barrier_before[1]); /* the interior and the border */
        CHECK(p->plan.barrier_before[2]);  /* the Mul reads both */
    }
    smelt_program_free(p);
    check_case(g, plan_any, 3, 3, 1e-6);
}

/* ---- lowering details --------------------------------------------------------------------- */

static bool has_kir_op(const smelt_program *p, kir_op op)
{
    for (int i = 0; i < p->lp.n_kernels; i++)
        for (int v = 1; v < p->lp.kernels[i]->n_vals; v++)
            if (p->lp.kernels[i]->vals[v].op == op) return true;
    return false;
}

/* Pow by a constant 1..4 is multiplications (within an ulp or two of powf);
 * any other exponent stays a pow. */
TEST(pow_by_a_small_constant_is_multiplied_out)
{
    static const float exps[] = {1, 2, 3, 4, 2.5f, -2};
    for (int e = 0; e < (int)(sizeof exps / sizeof exps[0]); e++) {
        ir_graph *g = ir_graph_new();
        int x = input(g, "x", shp(2, 5, 7));
        int y = op2(g, "pow", OP_Pow, x, constant(g, "e", shp(0), 0.0f, exps[e]));
        ir_graph_set_io(g, 1, &x, 1, &y);
        smelt_program *p = compile(g, 0);
        if (p) {
            bool small = exps[e] >= 1 && exps[e] <= 4 && exps[e] == (int)exps[e];
            CHECK(has_kir_op(p, KIR_POW) == !small);
            float data[35];
            for (int i = 0; i < 35; i++) data[i] = (float)(i - 17) / 3.0f;
            smelt_tensor in = {.name = "x", .dtype = SMELT_F32, .rank = 2, .shape = {5, 7}, .data = data};
            CHECK(smelt_program_run(p, 1, &in) == SMELT_OK);
            smelt_tensor out;
            CHECK(smelt_program_output(p, 0, &out) == SMELT_OK);
            for (int i = 0; i < 35; i++) {
                double want = pow(data[i], exps[e]), got = ((const float *)out.data)[i];
                CHECK(isnan(want) ? isnan(got) : got == want || fabs(got - want) <= 1e-6 * fabs(want));
            }
        }
        smelt_program_free(p);
        ir_graph_free(g);
    }
}

/* A Gemm's constant transB operand is transposed at compile time: the flag is
 * cleared, the node reads a new [K, N] constant, the old one is left to DCE,
 * and the product is unchanged. A transposed model input is left alone. */
TEST(gemm_constant_transposed_operand_is_folded)
{
    for (int const_b = 1; const_b >= 0; const_b--) {
        ir_graph *g = ir_graph_new();
        int x = input(g, "x", shp(2, 3, 5));
        int b = const_b ? constant(g, "b", shp(2, 4, 5), 1.0f, 0.25f) : input(g, "b", shp(2, 4, 5));
        int bias = constant(g, "c", shp(1, 4), 0.5f, 0.0f);
        int y = op(g, "gemm", OP_Gemm, 3, (const int[]){x, b, bias});
        attr_int(g, node_named(g, "gemm"), "transB", 1);
        int ins[2] = {x, b};
        ir_graph_set_io(g, const_b ? 1 : 2, ins, 1, &y);
        ir_graph *h = ir_graph_clone(g);
        CHECK(h && graph_infer(h, lower_eval_node) == SMELT_OK && graph_fold_gemm_transpose(h) == SMELT_OK);
        const ir_node *n = &h->nodes[node_named(h, "gemm")];
        CHECK_EQ_INT(ir_attr_int(n, "transB", 0), !const_b);
        CHECK_EQ_INT(n->in[1] != b, const_b);
        if (const_b) {
            const ir_tensor *bt = &h->tensors[n->in[1]];
            CHECK(bt->shape.rank == 2 && bt->shape.dim[0] == 5 && bt->shape.dim[1] == 4);
            for (int k = 0; k < 5; k++)
                for (int j = 0; j < 4; j++)
                    CHECK(((const float *)bt->data)[k * 4 + j] == ((const float *)g->tensors[b].data)[j * 5 + k]);
            CHECK(graph_dce(h) == SMELT_OK);
            for (int t = 0; t < h->n_tensors; t++) CHECK(strcmp(h->tensors[t].name, "b") != 0);
        }
        ir_graph_free(h);
        smelt_program *p = compile(g, 0);
        if (p) {
            float xd[15], bd[20];
            for (int i = 0; i < 15; i++) xd[i] = (float)(i % 7) - 3.0f;
            const float *bv = const_b ? g->tensors[b].data : bd;
            for (int i = 0; i < 20; i++) bd[i] = (float)(i % 5) * 0.5f - 1.0f;
            smelt_tensor in[2] = {{.name = "x", .dtype = SMELT_F32, .rank = 2, .shape = {3, 5}, .data = xd},
                                  {.name = "b", .dtype = SMELT_F32, .rank = 2, .shape = {4, 5}, .data = bd}};
            CHECK(smelt_program_run(p, const_b ? 1 : 2, in) == SMELT_OK);
            smelt_tensor out;
            CHECK(smelt_program_output(p, 0, &out) == SMELT_OK);
            const float *c = g->tensors[bias].data;
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 4; j++) {
                    double want = c[j];
                    for (int k = 0; k < 5; k++) want += (double)xd[i * 5 + k] * bv[j * 5 + k];
                    CHECK_NEAR(((const float *)out.data)[i * 4 + j], want, 1e-5);
                }
        }
        smelt_program_free(p);
        ir_graph_free(g);
    }
}

/* Run p on a float input x of `rank` dims: its first output's data (the
 * program's), and the output in *out if given. */
static const float *run_x(smelt_program *p, float *xd, int rank, const int64_t *shape, smelt_tensor *out)
{
    smelt_tensor in = {.name = "x", .dtype = SMELT_F32, .rank = rank, .data = xd}, o = {0};
    for (int d = 0; d < rank; d++) in.shape[d] = shape[d];
    CHECK(smelt_program_run(p, 1, &in) == SMELT_OK);
    CHECK(smelt_program_output(p, 0, &o) == SMELT_OK);
    if (out) *out = o;
    return o.data;
}

/* got against a double reference to a relative tol: the first mismatches
 * (of case `which`) are printed; returns how many were found, at most 3. */
static int count_far(const float *got, const double *ref, int64_t n, double tol, int which)
{
    int bad = 0;
    for (int64_t k = 0; k < n && bad < 3; k++)
        if (fabs(got[k] - ref[k]) > tol * (1 + fabs(ref[k]))) {
            fprintf(stderr, "  case %d [%lld]: %g, want %g\n", which, (long long)k, got[k], ref[k]);
            bad++;
        }
    return bad;
}

/* Conv on the CPU against a direct reference: 2-D convolutions take the flat
 * form (an accumulator block and a zero-padded input tile in workgroup
 * memory: 2 buffers), with batch, groups, asymmetric pads, dilation, 1x1 and
 * row blocks that do not divide the output, and strided ones with the tile in
 * phase planes (all four for a 3x3 stride 2, one for a 1x1, four of nine for
 * a 2x2 stride 3, unequal strides with dilation); 1-D ones the row form (1 buffer). */
typedef struct conv_case {
    int rank;               /* of x */
    int64_t x[4], w[4];
    int64_t group, pads[4], stride[2], dil[2];
    bool bias, flat;
} conv_case;

static void conv_ref(const conv_case *cc, const float *x, const float *w, const float *b, const int64_t *yd, double *y)
{
    int ns = cc->rank - 2;
    int64_t mg = cc->w[0] / cc->group, cg = cc->w[1];
    int64_t H = ns == 2 ? cc->x[2] : 1, W = cc->x[ns + 1], KH = ns == 2 ? cc->w[2] : 1, KW = cc->w[ns + 1];
    int64_t OH = ns == 2 ? yd[2] : 1, OW = yd[ns + 1];
    int64_t sh = ns == 2 ? cc->stride[0] : 1, sw = cc->stride[ns - 1], dh = ns == 2 ? cc->dil[0] : 1, dw = cc->dil[ns - 1];
    int64_t ph = ns == 2 ? cc->pads[0] : 0, pw = cc->pads[ns - 1];
    for (int64_t n = 0; n < cc->x[0]; n++)
        for (int64_t m = 0; m < cc->w[0]; m++)
            for (int64_t oh = 0; oh < OH; oh++)
                for (int64_t ow = 0; ow < OW; ow++) {
                    double acc = cc->bias ? b[m] : 0;
                    for (int64_t c = 0; c < cg; c++)
                        for (int64_t kh = 0; kh < KH; kh++)
                            for (int64_t kw = 0; kw < KW; kw++) {
                                int64_t ih = oh * sh + kh * dh - ph, iw = ow * sw + kw * dw - pw;
                                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                                int64_t ci = m / mg * cg + c;
                                acc += (double)x[((n * cc->x[1] + ci) * H + ih) * W + iw] * w[((m * cg + c) * KH + kh) * KW + kw];
                            }
                    y[((n * cc->w[0] + m) * OH + oh) * OW + ow] = acc;
                }
}

TEST(conv_flat_and_row_forms_match_a_direct_reference)
{
    static const conv_case cases[] = {
        {4, {2, 3, 9, 11}, {8, 3, 3, 3}, 1, {1, 1, 1, 1}, {1, 1}, {1, 1}, true, true},
        {4, {1, 4, 30, 23}, {4, 2, 3, 2}, 2, {0, 2, 1, 0}, {1, 1}, {2, 1}, false, true},
        {4, {1, 6, 17, 19}, {6, 1, 3, 3}, 6, {1, 1, 1, 1}, {1, 1}, {1, 1}, true, true},
        {4, {1, 16, 20, 20}, {24, 16, 1, 1}, 1, {0, 0, 0, 0}, {1, 1}, {1, 1}, true, true},
        /* flat form, several input channels per step: 1x1 over 6 channels (2 per step), 2x2 over 4 */
        {4, {1, 6, 13, 10}, {8, 6, 1, 1}, 1, {0, 0, 0, 0}, {1, 1}, {1, 1}, true, true},
        /* 1x1 read directly, rows split 11 + 11 + 9: a short last unit, batch 2 */
        {4, {2, 8, 31, 17}, {8, 8, 1, 1}, 1, {0, 0, 0, 0}, {1, 1}, {1, 1}, false, true},
        {4, {1, 4, 12, 14}, {8, 4, 2, 2}, 1, {1, 0, 0, 1}, {1, 1}, {1, 1}, false, true},
        {4, {1, 3, 9, 9}, {5, 3, 3, 3}, 1, {1, 1, 1, 1}, {2, 2}, {1, 1}, true, true},
        /* strided: depthwise 3x3 stride 2 on odd sizes, a 1x1 stride-2 downsample
         * (batch 2), a 7x7 stride-2 stem, a 2x2 stride 3, strides (1, 3) with dilation 2 */
        {4, {1, 8, 15, 13}, {8, 1, 3, 3}, 8, {1, 1, 1, 1}, {2, 2}, {1, 1}, true, true},
        {4, {2, 6, 14, 11}, {8, 6, 1, 1}, 1, {0, 0, 0, 0}, {2, 2}, {1, 1}, false, true},
        {4, {1, 3, 23, 21}, {8, 3, 7, 7}, 1, {3, 3, 3, 3}, {2, 2}, {1, 1}, true, true},
        {4, {1, 2, 17, 17}, {4, 2, 2, 2}, 1, {0, 1, 1, 0}, {3, 3}, {1, 1}, false, true},
        {4, {1, 4, 16, 19}, {4, 4, 3, 3}, 1, {2, 1, 0, 2}, {1, 3}, {2, 2}, true, true},
        {3, {2, 3, 40}, {4, 3, 5}, 1, {2, 2}, {1}, {1}, false, false},
    };
    for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
        const conv_case *cc = &cases[i];
        int ns = cc->rank - 2;
        ir_graph *g = ir_graph_new();
        ir_shape xs = {.rank = cc->rank}, ws = {.rank = cc->rank};
        for (int d = 0; d < cc->rank; d++) {
            xs.dim[d] = cc->x[d];
            ws.dim[d] = cc->w[d];
        }
        int x = input(g, "x", xs);
        int w = constant(g, "w", ws, 0.5f, 0.1f);
        int b = constant(g, "b", shp(1, (int)cc->w[0]), 0.3f, 0.2f);
        int ins[3] = {x, w, b};
        int y = op(g, "conv", OP_Conv, cc->bias ? 3 : 2, ins);
        int node = node_named(g, "conv");
        attr_ints(g, node, "pads", 2 * ns, cc->pads);
        attr_ints(g, node, "strides", ns, cc->stride);
        attr_ints(g, node, "dilations", ns, cc->dil);
        attr_int(g, node, "group", cc->group);
        ir_graph_set_io(g, 1, &x, 1, &y);
        smelt_program *p = compile(g, 0);
        if (p) {
            /* flat: accumulators and a tile, but a 1x1 without pads reads its input directly */
            bool direct = cc->rank == 4 && cc->w[2] == 1 && cc->w[3] == 1 && !cc->pads[0] && !cc->pads[1] &&
                          !cc->pads[2] && !cc->pads[3] && cc->stride[0] == 1 && cc->stride[1] == 1;
            CHECK_EQ_INT(workgroup_tiles(p), cc->flat && !direct ? 2 : 1);
            int64_t nx = ir_shape_numel(&xs);
            float *xd = malloc(sizeof(float) * (size_t)nx);
            for (int64_t k = 0; k < nx; k++) xd[k] = (float)((k * 37) % 19 - 9) / 4.0f;
            smelt_tensor out;
            const float *y = run_x(p, xd, cc->rank, cc->x, &out);
            int64_t ny = smelt_tensor_numel(&out);
            double *ref = calloc((size_t)ny, sizeof(double));
            conv_ref(cc, xd, g->tensors[w].data, g->tensors[b].data, out.shape, ref);
            CHECK(count_far(y, ref, ny, 1e-4, i) == 0);
            free(ref);
            free(xd);
        }
        smelt_program_free(p);
        ir_graph_free(g);
    }
}

static const float *run_2d(smelt_program *p, float *xd, int64_t d0, int64_t d1)
{
    return run_x(p, xd, 2, (const int64_t[]){d0, d1}, NULL);
}

/* A Softmax row of one dim reduces (max, then sum of exp) in vector lanes on
 * the CPU: lane q takes the elements i % V == q of the whole vectors, the
 * rest of the row runs serially. Rows shorter than two vectors, with a tail,
 * and exactly whole, for V = 4 and 16, against a double-precision softmax. */
TEST(softmax_rows_reduce_in_vector_lanes)
{
    static const char *const widths[] = {"4", "16"};
    static const int64_t lens[] = {7, 37, 64, 200};
    for (int wi = 0; wi < 2; wi++) {
        setenv("SMELT_VECTOR_WIDTH", widths[wi], 1);
        for (int li = 0; li < 4; li++) {
            int64_t L = lens[li], rows = 3;
            ir_graph *g = ir_graph_new();
            int x = input(g, "x", shp(2, (int)rows, (int)L));
            int y = op1(g, "sm", OP_Softmax, x);
            attr_int(g, node_named(g, "sm"), "axis", -1);
            ir_graph_set_io(g, 1, &x, 1, &y);
            smelt_program *p = compile(g, 0);
            if (p) {
                int64_t v = atoi(widths[wi]);
                CHECK_EQ_INT(workgroup_tiles(p), L >= 2 * v ? 2 : 0); /* the max's lanes and the sum's */
                float *xd = malloc(sizeof(float) * (size_t)(rows * L));
                for (int64_t k = 0; k < rows * L; k++) xd[k] = (float)((k * 37) % 19 - 9) / 2.0f;
                xd[L + L / 2] = 80.0f; /* a row whose exp would overflow without the max */
                const float *yd = run_2d(p, xd, rows, L);
                int bad = 0;
                for (int64_t r = 0; r < rows; r++) {
                    double mx = -INFINITY, sum = 0;
                    for (int64_t i = 0; i < L; i++) mx = fmax(mx, xd[r * L + i]);
                    for (int64_t i = 0; i < L; i++) sum += exp(xd[r * L + i] - mx);
                    for (int64_t i = 0; i < L && bad < 3; i++) {
                        double want = exp(xd[r * L + i] - mx) / sum, got = yd[r * L + i];
                        if (fabs(got - want) > 1e-6 * (1 + want) + 1e-5 * want) {
                            fprintf(stderr, "  V=%s L=%lld [%lld][%lld]: %g, want %g\n", widths[wi], (long long)L,
                                    (long long)r, (long long)i, got, want);
                            bad++;
                        }
                    }
                }
                CHECK(bad == 0);
                free(xd);
            }
            smelt_program_free(p);
            ir_graph_free(g);
        }
    }
    unsetenv("SMELT_VECTOR_WIDTH");
}

/* Reductions of one float dim use the same lanes (ReduceMean, ReduceMax,
 * ReduceL2, ReduceLogSumExp over rows of 7 and 37), also over a leading dim,
 * whose elements are a row apart; against double-precision references. */
TEST(reductions_of_one_dim_use_vector_lanes)
{
    static const op_id ops[] = {OP_ReduceMean, OP_ReduceMax, OP_ReduceL2, OP_ReduceLogSumExp};
    static const char *const widths[] = {"4", "16"};
    for (int wi = 0; wi < 2; wi++) {
        setenv("SMELT_VECTOR_WIDTH", widths[wi], 1);
        for (int oi = 0; oi < 4; oi++)
            for (int axis = 0; axis < 2; axis++)
                for (int64_t L = 7; L <= 37; L += 30) {
                    int64_t R = 3, d0 = axis == 1 ? R : L, d1 = axis == 1 ? L : R;
                    ir_graph *g = ir_graph_new();
                    int x = input(g, "x", shp(2, (int)d0, (int)d1));
                    int y = op1(g, "red", ops[oi], x);
                    attr_ints(g, g->n_nodes - 1, "axes", 1, (const int64_t[]){axis});
                    attr_int(g, g->n_nodes - 1, "keepdims", 0);
                    ir_graph_set_io(g, 1, &x, 1, &y);
                    smelt_program *p = compile(g, 0);
                    if (p) {
                        CHECK((workgroup_tiles(p) > 0) == (L >= 2 * atoi(widths[wi]))); /* lanes: a row of 2 vectors */
                        float *xd = malloc(sizeof(float) * (size_t)(d0 * d1));
                        for (int64_t k = 0; k < d0 * d1; k++) xd[k] = (float)((k * 29) % 17 - 8) / 3.0f;
                        const float *yd = run_2d(p, xd, d0, d1);
                        for (int64_t r = 0; r < R; r++) {
                            double acc = ops[oi] == OP_ReduceMax ? -INFINITY : 0, mx = -INFINITY;
                            for (int64_t i = 0; i < L; i++) mx = fmax(mx, xd[axis == 1 ? r * L + i : i * R + r]);
                            for (int64_t i = 0; i < L; i++) {
                                double v = xd[axis == 1 ? r * L + i : i * R + r];
                                acc = ops[oi] == OP_ReduceMax ? fmax(acc, v)
                                    : ops[oi] == OP_ReduceL2 ? acc + v * v
                                    : ops[oi] == OP_ReduceLogSumExp ? acc + exp(v - mx) : acc + v;
                            }
                            double want = ops[oi] == OP_ReduceMean ? acc / (double)L
                                        : ops[oi] == OP_ReduceL2 ? sqrt(acc)
                                        : ops[oi] == OP_ReduceLogSumExp ? log(acc) + mx : acc;
                            double got = yd[r];
                            if (fabs(got - want) > 1e-5 * (1 + fabs(want)))
                                fprintf(stderr, "  V=%s op %d axis %d L=%lld row %lld: %g, want %g\n", widths[wi], oi,
                                        axis, (long long)L, (long long)r, got, want);
                            CHECK(fabs(got - want) <= 1e-5 * (1 + fabs(want)));
                        }
                        free(xd);
                    }
                    smelt_program_free(p);
                    ir_graph_free(g);
                }
    }
    unsetenv("SMELT_VECTOR_WIDTH");
}

/* LayerNormalization over one dim sums (mean, then squared deviations) in
 * vector lanes too: rows of 7, 37 and 64 for V = 4 and 16, against double. */
TEST(layernorm_rows_sum_in_vector_lanes)
{
    static const char *const widths[] = {"4", "16"};
    static const int64_t lens[] = {7, 37, 64};
    for (int wi = 0; wi < 2; wi++) {
        setenv("SMELT_VECTOR_WIDTH", widths[wi], 1);
        for (int li = 0; li < 3; li++) {
            int64_t L = lens[li], R = 3;
            ir_graph *g = ir_graph_new();
            int x = input(g, "x", shp(2, (int)R, (int)L));
            int gam = constant(g, "gamma", shp(1, (int)L), 0.5f, 1.0f);
            int bet = constant(g, "beta", shp(1, (int)L), 0.25f, -0.5f);
            int in3[3] = {x, gam, bet};
            int y = op(g, "ln", OP_LayerNormalization, 3, in3);
            attr_int(g, g->n_nodes - 1, "axis", -1);
            ir_graph_set_io(g, 1, &x, 1, &y);
            smelt_program *p = compile(g, 0);
            if (p) {
                CHECK((workgroup_tiles(p) > 0) == (L >= 2 * atoi(widths[wi])));
                float *xd = malloc(sizeof(float) * (size_t)(R * L));
                for (int64_t k = 0; k < R * L; k++) xd[k] = (float)((k * 29) % 17 - 8) / 3.0f + 4.0f * (float)(k / L);
                const float *yd = run_2d(p, xd, R, L);
                const float *gd = g->tensors[gam].data, *bd = g->tensors[bet].data;
                int bad = 0;
                for (int64_t r = 0; r < R; r++) {
                    double mean = 0, var = 0;
                    for (int64_t i = 0; i < L; i++) mean += xd[r * L + i];
                    mean /= (double)L;
                    for (int64_t i = 0; i < L; i++) var += (xd[r * L + i] - mean) * (xd[r * L + i] - mean);
                    var /= (double)L;
                    for (int64_t i = 0; i < L && bad < 3; i++) {
                        double want = (xd[r * L + i] - mean) / sqrt(var + 1e-5) * gd[i] + bd[i];
                        double got = yd[r * L + i];
                        if (fabs(got - want) > 1e-5 * (1 + fabs(want))) {
                            fprintf(stderr, "  V=%s L=%lld [%lld][%lld]: %g, want %g\n", widths[wi], (long long)L,
                                    (long long)r, (long long)i, got, want);
                            bad++;
                        }
                    }
                }
                CHECK(bad == 0);
                free(xd);
            }
            smelt_program_free(p);
            ir_graph_free(g);
        }
    }
    unsetenv("SMELT_VECTOR_WIDTH");
}

/* 2-D float pools take the row form (one output row in workgroup memory, a
 * guard-free loop per tap over the columns it reaches); against a direct
 * reference: strides, asymmetric pads, dilation, ceil_mode, and AveragePool
 * with and without count_include_pad. */
typedef struct pool_case {
    bool max;
    int64_t x[4], k[2], s[2], d[2], pads[4];
    int ceil, include_pad;
} pool_case;

static void pool_ref(const pool_case *pc, const float *x, const int64_t *yd, double *y)
{
    int64_t H = pc->x[2], W = pc->x[3];
    for (int64_t nc = 0; nc < pc->x[0] * pc->x[1]; nc++)
        for (int64_t oh = 0; oh < yd[2]; oh++)
            for (int64_t ow = 0; ow < yd[3]; ow++) {
                double acc = pc->max ? -INFINITY : 0, cnt = 0;
                for (int64_t kh = 0; kh < pc->k[0]; kh++)
                    for (int64_t kw = 0; kw < pc->k[1]; kw++) {
                        int64_t ih = oh * pc->s[0] + kh * pc->d[0] - pc->pads[0];
                        int64_t iw = ow * pc->s[1] + kw * pc->d[1] - pc->pads[1];
                        bool in = ih >= 0 && ih < H && iw >= 0 && iw < W;
                        if (pc->include_pad ? ih < H + pc->pads[2] && iw < W + pc->pads[3] : in) cnt++;
                        if (!in) continue;
                        double v = x[(nc * H + ih) * W + iw];
                        acc = pc->max ? (v > acc ? v : acc) : acc + v;
                    }
                y[(nc * yd[2] + oh) * yd[3] + ow] = pc->max ? acc : acc / cnt;
            }
}

TEST(pool_row_form_matches_a_direct_reference)
{
    static const pool_case cases[] = {
        {true, {1, 3, 17, 15}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, 0, 0},
        {true, {2, 2, 9, 11}, {2, 3}, {1, 2}, {1, 1}, {0, 1, 1, 0}, 1, 0},
        {true, {1, 2, 12, 13}, {3, 2}, {2, 1}, {2, 2}, {2, 0, 0, 1}, 0, 0},
        {false, {1, 3, 10, 9}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, 0, 0},
        {false, {1, 3, 10, 9}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, 0, 1},
        {false, {2, 1, 11, 7}, {2, 3}, {3, 2}, {1, 1}, {0, 2, 1, 0}, 1, 1},
    };
    for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
        const pool_case *pc = &cases[i];
        ir_graph *g = ir_graph_new();
        int x = input(g, "x", shp(4, pc->x[0], pc->x[1], pc->x[2], pc->x[3]));
        int y = op1(g, "pool", pc->max ? OP_MaxPool : OP_AveragePool, x);
        int node = node_named(g, "pool");
        attr_ints(g, node, "kernel_shape", 2, pc->k);
        attr_ints(g, node, "strides", 2, pc->s);
        attr_ints(g, node, "pads", 4, pc->pads);
        if (pc->max) attr_ints(g, node, "dilations", 2, pc->d);
        attr_int(g, node, "ceil_mode", pc->ceil);
        if (!pc->max) attr_int(g, node, "count_include_pad", pc->include_pad);
        ir_graph_set_io(g, 1, &x, 1, &y);
        smelt_program *p = compile(g, 0);
        if (p) {
            CHECK_EQ_INT(workgroup_tiles(p), pc->max ? 1 : 2); /* the row (and its counts) */
            int64_t nx = pc->x[0] * pc->x[1] * pc->x[2] * pc->x[3];
            float *xd = malloc(sizeof(float) * (size_t)nx);
            for (int64_t k = 0; k < nx; k++) xd[k] = (float)((k * 29) % 23 - 11) / 3.0f;
            smelt_tensor out;
            const float *y = run_x(p, xd, 4, pc->x, &out);
            int64_t ny = smelt_tensor_numel(&out);
            double *ref = calloc((size_t)ny, sizeof(double));
            pool_ref(pc, xd, out.shape, ref);
            CHECK(count_far(y, ref, ny, 1e-5, i) == 0);
            free(ref);
            free(xd);
        }
        smelt_program_free(p);
        ir_graph_free(g);
    }
}
