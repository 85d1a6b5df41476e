/* fuse_cases.c — the graph builders and case checks of fuse_cases.h. */
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/program.h"
#include "graph/passes.h"
#include "target/emit.h"
#include "test.h"
#include "fuse_cases.h"

/* ---- building graphs ---------------------------------------------------------------------- */

ir_shape shp(int rank, ...)
{
    ir_shape s = {.rank = rank};
    va_list ap;
    va_start(ap, rank);
    for (int i = 0; i < rank; i++) s.dim[i] = va_arg(ap, int);
    va_end(ap);
    return s;
}

int input(ir_graph *g, const char *name, ir_shape s) { return ir_tensor_add(g, name, SMELT_F32, &s); }

/* A float constant with small values that vary along every dim. */
int constant(ir_graph *g, const char *name, ir_shape s, float scale, float offset)
{
    int t = ir_tensor_add(g, name, SMELT_F32, &s);
    float *d = ir_tensor_alloc_data(g, t);
    for (int64_t i = 0; i < ir_shape_numel(&s); i++) d[i] = offset + scale * (float)((i * 7 + 3) % 11 - 5) / 5.0f;
    return t;
}

/* A node with one output tensor named like the node; returns the output tensor. */
int op(ir_graph *g, const char *name, op_id id, int n_in, const int *in)
{
    int t = ir_tensor_add(g, name, SMELT_F32, NULL);
    ir_node_add(g, name, id, n_in, in, 1, &t);
    return t;
}
int op1(ir_graph *g, const char *name, op_id id, int x) { return op(g, name, id, 1, &x); }
int op2(ir_graph *g, const char *name, op_id id, int a, int b)
{
    int in[] = {a, b};
    return op(g, name, id, 2, in);
}

void attr_ints(ir_graph *g, int node, const char *name, int n, const int64_t *v)
{
    ir_attr a = {.name = name, .type = IR_ATTR_INTS, .n = n, .ints = (int64_t *)v};
    CHECK(ir_node_attr_add(g, node, &a));
}
void attr_int(ir_graph *g, int node, const char *name, int64_t v)
{
    ir_attr a = {.name = name, .type = IR_ATTR_INT, .i = v};
    CHECK(ir_node_attr_add(g, node, &a));
}

void attr_str(ir_graph *g, int node, const char *name, const char *s)
{
    ir_attr a = {.name = name, .type = IR_ATTR_STRING, .s = s};
    ir_node_attr_add(g, node, &a);
}

/* ---- looking at a plan -------------------------------------------------------------------- */

int node_named(const ir_graph *g, const char *name)
{
    for (int i = 0; i < g->n_nodes; i++)
        if (!g->nodes[i].dead && strcmp(g->nodes[i].name, name) == 0) return i;
    return -1;
}

const fuse_region *region_rooted(const ir_graph *g, const fuse_plan *fp, const char *root)
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
bool region_is(const ir_graph *g, const fuse_plan *fp, const char *root, const char *nodes, const char *reads,
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
        fuse_role want = colon[1] == 'r' ? FUSE_ROOT : colon[1] == 'i' ? FUSE_INLINE : colon[1] == 's' ? FUSE_SIBLING : FUSE_EPILOGUE;
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

fuse_role role_of(const ir_graph *g, const fuse_plan *fp, const char *name)
{
    int n = node_named(g, name);
    CHECK(n >= 0);
    return n >= 0 ? fp->role[n] : (fuse_role)-1;
}

/* ---- checking a case both ways ------------------------------------------------------------ */

smelt_program *compile(ir_graph *g, int no_fuse) { return compile_threads(g, no_fuse, 2); }

smelt_program *compile_threads(ir_graph *g, int no_fuse, int threads) { return compile_locals(g, no_fuse, threads, -1); }

smelt_program *compile_locals(ir_graph *g, int no_fuse, int threads, int locals)
{
    smelt_options opt;
    smelt_options_init(&opt);
    opt.threads = threads;
    opt.no_fuse = no_fuse;
    if (locals >= 0) opt.locals = (smelt_locals)locals;
    struct smelt_model model = {.g = g};
    smelt_program *p = NULL;
    smelt_status st = smelt_program_compile(&model, &opt, 0, NULL, &p);
    /* The program reads its model's packed weights (api/program.h): they stay,
     * reachable, for the rest of the run, as this model ends here. */
    static packed_weight *kept;
    for (packed_weight *w = atomic_load(&model.packed), *next; w; w = next) {
        next = w->next;
        w->next = kept;
        kept = w;
    }
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
void check_case(ir_graph *g, plan_check check, int regions, int kernels, double tol)
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

int kernel_op_count(const smelt_program *p, kir_op op)
{
    int n = 0;
    for (int i = 0; i < p->lp.n_kernels; i++) {
        const kir_kernel *k = p->lp.kernels[i];
        for (int s = 0; s < k->n_stmts; s++)
            if (k->stmts[s].kind == KS_DEF && k->vals[k->stmts[s].val].op == op) n++;
    }
    return n;
}

int workgroup_tiles(const smelt_program *p)
{
    int n = 0;
    for (int i = 0; i < p->lp.n_kernels; i++)
        for (int b = 0; b < p->lp.kernels[i]->n_bufs; b++) n += p->lp.kernels[i]->bufs[b].workgroup;
    return n;
}

void plan_any(const ir_graph *g, const fuse_plan *fp)
{
    (void)g;
    (void)fp;
}

/* Run p on a float input x of `rank` dims: its first output's data (the
 * program's), and the output in *out if given. */
const float *run_x(smelt_program *p, float *xd, int rank, const int64_t *shape, smelt_tensor *out)
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
int count_far(const float *got, const double *ref, int64_t n, double tol, int which)
{
    int bad = 0;
    for (int64_t k = 0; k < n && bad < 3; k++)
        if (fabs(got[k] - ref[k]) > tol * (1 + fabs(ref[k]))) {
            fprintf(stderr, "  case %d [%lld]: %g, want %g\n", which, (long long)k, got[k], ref[k]);
            bad++;
        }
    return bad;
}
