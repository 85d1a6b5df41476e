/*
 * model.c — the model half of the public API: loading, describing, dumping,
 * and tensor files.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "api/program.h"
#include "core/hash.h"
#include "onnx/onnx.h"
#include "target/emit.h"

/* What the pipeline reads of a graph, hashed: tensors (names, types,
 * shapes and their symbolic dims, constant bytes), nodes (ops, names, wiring, attributes, subgraphs),
 * inputs and outputs. False where it holds what a digest cannot stand for
 * (string constants are pointers). */
static bool digest_graph(const ir_graph *g, uint64_t h[2])
{
    bool ok = true;
    for (int t = 0; t < g->n_tensors; t++) {
        const ir_tensor *x = &g->tensors[t];
        h[0] = hash_str(h[0], x->name ? x->name : "");
        int64_t d[2] = {x->dtype, x->data != NULL};
        h[0] = hash_bytes(h[0], d, sizeof d);
        h[0] = hash_bytes(h[0], &x->shape, sizeof x->shape);
        for (int d = 0; d < x->shape.rank && d < IR_MAX_RANK; d++) h[0] = hash_str(h[0], x->dim_param[d] ? x->dim_param[d] : "");
        if (!x->data) continue;
        if (x->dtype == SMELT_STRING || x->enc.kind != IR_ENC_NONE) ok = false;
        uint64_t w[2];
        hash_wide(x->data, (size_t)ir_tensor_numel(x) * smelt_dtype_size(x->dtype), h[1], w);
        h[0] = hash_bytes(h[0], w, sizeof w);
        h[1] ^= w[1];
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *n = &g->nodes[i];
        int d[4] = {n->op, n->n_in, n->n_out, n->n_attr};
        h[0] = hash_str(h[0], n->name ? n->name : "");
        h[0] = hash_bytes(h[0], d, sizeof d);
        h[0] = hash_bytes(h[0], n->in, sizeof(int) * (size_t)n->n_in);
        h[0] = hash_bytes(h[0], n->out, sizeof(int) * (size_t)n->n_out);
        for (int a = 0; a < n->n_attr; a++) {
            const ir_attr *x = &n->attr[a];
            int64_t v[5] = {x->type, x->i, x->n, x->tensor, x->n_cap};
            h[0] = hash_str(h[0], x->name ? x->name : "");
            h[0] = hash_bytes(h[0], v, sizeof v);
            h[0] = hash_bytes(h[0], &x->f, sizeof x->f);
            h[0] = hash_str(h[0], x->s ? x->s : "");
            if (x->ints) h[0] = hash_bytes(h[0], x->ints, sizeof(int64_t) * (size_t)x->n);
            if (x->floats) h[0] = hash_bytes(h[0], x->floats, sizeof(float) * (size_t)x->n);
            for (int k = 0; x->strings && k < x->n; k++) h[0] = hash_str(h[0], x->strings[k] ? x->strings[k] : "");
            if (x->cap) h[0] = hash_bytes(h[0], x->cap, sizeof(int) * (size_t)x->n_cap);
            if (x->graph) ok &= digest_graph(x->graph, h);
        }
    }
    int d[3] = {g->n_inputs, g->n_outputs, g->opset};
    h[0] = hash_bytes(h[0], d, sizeof d);
    h[0] = hash_bytes(h[0], g->inputs, sizeof(int) * (size_t)g->n_inputs);
    h[0] = hash_bytes(h[0], g->outputs, sizeof(int) * (size_t)g->n_outputs);
    return ok;
}

smelt_status program_model_wrap(ir_graph *g, smelt_model **out)
{
    smelt_model *m = calloc(1, sizeof *m);
    if (!m) {
        ir_graph_free(g);
        return diag_fail(SMELT_ERR_NOMEM, "out of memory");
    }
    m->g = g;
    m->digest[0] = HASH_SEED;
    m->digest[1] = HASH_SEED ^ 0x9e3779b97f4a7c15ull;
    m->digest_ok = digest_graph(g, m->digest);
    *out = m;
    return SMELT_OK;
}

smelt_status smelt_model_load_file(const char *path, smelt_model **out)
{
    ir_graph *g = NULL;
    *out = NULL;
    if (!path) return diag_fail(SMELT_ERR_INVALID_ARG, "smelt_model_load_file: no path");
    TRY(onnx_load_file(path, &g));
    return program_model_wrap(g, out);
}

smelt_status smelt_model_load_memory(const void *data, size_t size, const char *base_dir, smelt_model **out)
{
    ir_graph *g = NULL;
    *out = NULL;
    if (!data) return diag_fail(SMELT_ERR_INVALID_ARG, "smelt_model_load_memory: no data");
    TRY(onnx_load_memory(data, size, base_dir, &g));
    return program_model_wrap(g, out);
}

void smelt_model_free(smelt_model *m)
{
    if (!m) return;
    for (packed_weight *w = atomic_load(&m->packed), *next; w; w = next) {
        next = w->next;
        free(w->data);
        free(w);
    }
    ir_graph_free(m->g);
    free(m);
}

int smelt_model_input_count(const smelt_model *m) { return m ? m->g->n_inputs : 0; }
int smelt_model_output_count(const smelt_model *m) { return m ? m->g->n_outputs : 0; }

static void fill_info(const ir_tensor *t, smelt_value_info *out)
{
    memset(out, 0, sizeof *out);
    out->name = t->name;
    out->dtype = t->dtype;
    out->rank = t->shape.rank;
    for (int d = 0; d < t->shape.rank; d++) {
        out->shape[d] = t->shape.dim[d];
        out->dim_names[d] = t->dim_param[d];
    }
}

smelt_status smelt_model_input_info(const smelt_model *m, int i, smelt_value_info *out)
{
    if (!m || i < 0 || i >= m->g->n_inputs) return diag_fail(SMELT_ERR_INVALID_ARG, "no input %d", i);
    fill_info(&m->g->tensors[m->g->inputs[i]], out);
    return SMELT_OK;
}

smelt_status smelt_model_output_info(const smelt_model *m, int i, smelt_value_info *out)
{
    if (!m || i < 0 || i >= m->g->n_outputs) return diag_fail(SMELT_ERR_INVALID_ARG, "no output %d", i);
    fill_info(&m->g->tensors[m->g->outputs[i]], out);
    return SMELT_OK;
}

#define STR_(x) #x
#define STR(x) STR_(x)
const char *smelt_version(void)
{
    return STR(SMELT_VERSION_MAJOR) "." STR(SMELT_VERSION_MINOR) "." STR(SMELT_VERSION_PATCH);
}

void smelt_free(void *ptr) { free(ptr); }

void *smelt_alloc(size_t bytes) { return tensor_data_alloc(bytes); }

smelt_status smelt_tensor_load(const char *path, smelt_tensor *out)
{
    if (!path || !out) return diag_fail(SMELT_ERR_INVALID_ARG, "smelt_tensor_load: no path");
    return tensor_file_read(path, out);
}

smelt_status smelt_tensor_save(const char *path, const smelt_tensor *t)
{
    if (!path || !t) return diag_fail(SMELT_ERR_INVALID_ARG, "smelt_tensor_save: no path");
    size_t n = strlen(path);
    if (n > 3 && strcmp(path + n - 3, ".pb") == 0) return tensor_file_write_pb(path, t);
    return tensor_file_write_npy(path, t);
}

void smelt_tensor_free(smelt_tensor *t)
{
    if (t) tensor_file_free(t);
}

smelt_status smelt_program_get_stats(const smelt_program *p, smelt_program_stats *out)
{
    if (!p || !out) return diag_fail(SMELT_ERR_INVALID_ARG, "smelt_program_get_stats: no program");
    if (p->split) return program_split_stats(p, out);
    out->nodes = program_cache_nodes(p);
    out->regions = program_cache_regions(p);
    out->kernels = p->lp.n_kernels;
    out->bytes_moved = p->stats.bytes_moved;
    out->arena_bytes = p->plan.arena_bytes;
    out->weight_bytes = p->plan.weight_bytes;
    return SMELT_OK;
}

/* After the regions: each kernel's element spans (kir/spans.c) of the
 * tensors it reads and writes, and where the command list puts a barrier. */
/* The tensors held in an encoded layout (ir.h, ir_encoding), for --emit
 * regions / plan / ir: the layout and which nodes read it. */
static void dump_encodings(const ir_graph *g, FILE *f)
{
    bool any = false;
    for (int t = 0; t < g->n_tensors; t++) {
        const ir_tensor *x = &g->tensors[t];
        if (x->enc.kind == IR_ENC_NONE) continue;
        bool used = false;
        for (int i = 0; i < g->n_nodes && !used; i++)
            for (int j = 0; j < g->nodes[i].n_in; j++) used |= !g->nodes[i].dead && g->nodes[i].in[j] == t;
        if (!used) continue;
        if (!any) fprintf(f, "encodings:\n");
        any = true;
        if (x->enc.kind == IR_ENC_KPAIRS || x->enc.kind == IR_ENC_KQUADS) {
            fprintf(f, "  %%%d '%s': %s of [n=%lld, k=%lld] as [%lld, %lld], read by", t, x->name,
                    x->enc.kind == IR_ENC_KPAIRS ? "k-pairs int16" : "k-quads int8",
                    (long long)x->enc.n, (long long)x->enc.k, (long long)x->shape.dim[0], (long long)x->shape.dim[1]);
        } else {
            fprintf(f, "  %%%d '%s': panels nr=%lld of ", t, x->name, (long long)x->enc.nr);
            if (x->enc.logical.rank == 3) /* a batched GEMM's B (ir.h) */
                fprintf(f, "%lld x ", (long long)x->enc.logical.dim[0]);
            fprintf(f, "[k=%lld, n=%lld] as [%lld, %lld, %lld], read by", (long long)x->enc.k, (long long)x->enc.n,
                    (long long)x->shape.dim[0], (long long)x->shape.dim[1], (long long)x->shape.dim[2]);
        }
        for (int i = 0; i < g->n_nodes; i++)
            for (int j = 0; j < g->nodes[i].n_in; j++)
                if (!g->nodes[i].dead && g->nodes[i].in[j] == t) fprintf(f, " '%s'", g->nodes[i].name);
        fprintf(f, "\n");
    }
}

static void dump_spans(const smelt_program *p, FILE *f)
{
    fprintf(f, "%d kernels: elements each may read and write (from its index expressions: a box per dim, or a "
               "span of the flat buffer); %d barriers\n",
            p->lp.n_kernels, p->plan.n_barriers);
    for (int i = 0; i < p->lp.n_kernels; i++) {
        const kir_kernel *k = p->lp.kernels[i];
        fprintf(f, "kernel %d%s: %s\n", i, p->plan.barrier_before && p->plan.barrier_before[i] ? " (after a barrier)" : "",
                k->comment ? k->comment : "");
        for (int w = 0; w < 2; w++) {
            bool any = false;
            for (int b = 0; b < k->n_bufs; b++) {
                const kir_buffer *x = &k->bufs[b];
                if (x->workgroup || (w ? !x->written : x->written)) continue;
                if (!any) fprintf(f, "%s", w ? "  writes:" : "  reads: ");
                if (x->tensor < p->g->n_tensors) fprintf(f, " %%%d", x->tensor);
                else fprintf(f, " scratch%d", x->tensor - p->g->n_tensors);
                char box[512];
                if (x->box_rank > 0) {
                    fputs(ir_box_str(x->box_rank, x->box_lo, x->box_hi, box, sizeof box), f);
                } else {
                    fprintf(f, "[%lld:%lld of %lld]", (long long)x->span_lo, (long long)x->span_hi, (long long)x->numel);
                }
                any = true;
            }
            if (any) fprintf(f, "\n");
        }
    }
}

/* Devices, their targets, target classes, executables, transfers and the
 * arena per device (`smelt info`). */
static void dump_devices(const smelt_program *p, FILE *f)
{
    static const char *const langs[] = {[EMIT_C] = "c", [EMIT_OPENCL] = "opencl", [EMIT_CUDA] = "cuda"};
    const place_devices *ds = &p->devs;
    fprintf(f, "devices: %d\n", ds->n);
    for (int d = 0; d < ds->n; d++) {
        const place_device *x = &ds->dev[d];
        fprintf(f, "  d%d %s: %s, target %s [%s], vector width %d, workgroup %d (at most %d), workgroup memory %lld bytes, class %d\n",
                d, x->spec, p->dev[d] ? p->dev[d]->name : "(not opened)", x->target.name, x->ident, x->target.vector_width,
                x->target.wg_size, x->target.max_wg, (long long)x->target.smem_limit, x->cls);
    }
    int n_exe = 0;
    for (int c = 0; c < ds->n_classes; c++) n_exe += p->cls[c].source != NULL;
    fprintf(f, "target classes: %d\nexecutables: %d\n", ds->n_classes, n_exe);
    for (int c = 0; c < ds->n_classes; c++) {
        if (!p->cls[c].source) continue;
        fprintf(f, "  class %d (%s): devices", c, langs[p->cls[c].lang]);
        for (int d = 0; d < ds->n; d++)
            if (ds->dev[d].cls == c) fprintf(f, " %s", ds->dev[d].spec);
        fprintf(f, "; %d regions, %d kernels\n", p->cls[c].n_regions, p->cls[c].n_kernels);
    }
    fprintf(f, "transfers: %d per run, %lld bytes\n", p->cmds.n_transfers, (long long)p->cmds.transfer_bytes);
    if (p->cost_ms > 0)
        fprintf(f, "cost estimate: %.3f ms per run (%s, place/cost.h)\n", p->cost_ms,
                p->cost_measured ? "region times measured per target class" : "table speeds");
    if (p->cost_ms > 0)
        fprintf(f, "cost pipelined: %.3f ms between runs when they overlap (smelt_program_submit: the busiest device)\n",
                p->cost_period_ms);
    if (p->cost_measured) {
        fprintf(f, "cost measured (ms per run, every region it can run on it):");
        for (int d = 0; d < ds->n; d++) fprintf(f, " %s %.3f", ds->dev[d].spec, p->cost_dev_ms[d]);
        fprintf(f, "\ncalibration: %s\n", p->cost_cached ? "from the compile cache (api/place_calib.c)" : "measured now");
    }
    /* A copy a -> b passes through host memory: a's link, then b's (place/cost.h), here for 1 MiB. */
    for (int a = 0; a < ds->n && p->link_measured; a++)
        for (int b = 0; b < ds->n; b++) {
            if (a == b) continue;
            double mib = 1 << 20, ms = p->link_ms[a] + p->link_ms[b] + mib / p->link_bytes_per_ms[a] + mib / p->link_bytes_per_ms[b];
            fprintf(f, "link %s\u2192%s: %.2f GB/s (1 MiB copy, measured)\n", ds->dev[a].spec, ds->dev[b].spec, mib / ms / 1e6);
        }
    for (int d = 0; d < ds->n; d++)
        fprintf(f, "arena %s: %lld bytes, %d dispatches\n", ds->dev[d].spec, (long long)p->cmds.arena_bytes[d], p->cmds.dispatches[d]);
}

/* Where each region runs (`--emit plan`). */
static void dump_placement(const smelt_program *p, FILE *f)
{
    fprintf(f, "placement: %d regions on %d device%s\n", p->fp.n_regions, p->devs.n, p->devs.n == 1 ? "" : "s");
    for (int r = 0; r < p->fp.n_regions; r++) {
        const ir_node *n = &p->g->nodes[p->fp.regions[r].root];
        int d = p->region_device ? p->region_device[r] : -1;
        fprintf(f, "  region %d (%s '%s'): %s\n", r, op_get(n->op)->name, n->name ? n->name : "", d < 0 ? "view, no kernel" : p->devs.dev[d].spec);
    }
}

/* The stage a dump needs compiled; -1 for an unknown dump. */
static int dump_stage(const char *what)
{
    static const struct {
        const char *what;
        smelt_stage stage;
    } needs[] = {{"ir", SMELT_STAGE_IR},     {"dot", SMELT_STAGE_REGIONS},   {"regions", SMELT_STAGE_REGIONS},
                 {"kir", SMELT_STAGE_KIR},   {"plan", SMELT_STAGE_PLAN},     {"c", SMELT_STAGE_SOURCE},
                 {"opencl", SMELT_STAGE_SOURCE}, {"cuda", SMELT_STAGE_SOURCE}, {"info", SMELT_STAGE_ALL}};
    for (size_t i = 0; i < sizeof needs / sizeof needs[0]; i++)
        if (strcmp(what, needs[i].what) == 0) return (int)needs[i].stage;
    return -1;
}

smelt_status smelt_program_dump(const smelt_program *p, const char *what, char **text)
{
    *text = NULL;
    if (!p || !what) return diag_fail(SMELT_ERR_INVALID_ARG, "smelt_program_dump: nothing to dump");
    if (p->split) return program_split_dump(p, what, text);
    if (p->cached) { /* loaded whole from the program cache: the stages to show are made again */
        smelt_program *full;
        TRY(program_cache_full(p, &full));
        smelt_status st = smelt_program_dump(full, what, text);
        smelt_program_free(full);
        return st;
    }
    int need = dump_stage(what);
    if (need < 0) return diag_fail(SMELT_ERR_INVALID_ARG, "unknown dump '%s' (ir, regions, dot, kir, c, opencl, cuda, plan, info)", what);
    if (p->stage != SMELT_STAGE_ALL && (need == SMELT_STAGE_ALL || (int)p->stage < need))
        return diag_fail(SMELT_ERR_INVALID_ARG, "the program was compiled only up to an earlier stage than '%s' needs (stop_after)", what);
    static const char *const langs[] = {[EMIT_C] = "c", [EMIT_OPENCL] = "opencl", [EMIT_CUDA] = "cuda"};
    for (int l = 0; l < EMIT_LANG_COUNT; l++) {
        if (strcmp(what, langs[l]) != 0) continue;
        for (int c = 0; c < p->devs.n_classes; c++) /* the first executable in that language */
            if (p->cls[c].source && p->cls[c].lang == l) {
                *text = strdup(p->cls[c].source);
                return *text ? SMELT_OK : diag_fail(SMELT_ERR_NOMEM, "out of memory");
            }
        return diag_fail(SMELT_ERR_INVALID_ARG, "the program has no %s source (no region runs on such a device): compile for that device",
                         what);
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return diag_fail(SMELT_ERR_NOMEM, "out of memory");
    smelt_status st = SMELT_OK;
    if (strcmp(what, "ir") == 0) {
        ir_dump(p->g, f);
        dump_encodings(p->g, f);
    } else if (strcmp(what, "kir") == 0) {
        for (int i = 0; i < p->lp.n_kernels; i++) kir_dump(p->lp.kernels[i], f);
    } else if (strcmp(what, "plan") == 0) {
        plan_dump(p->g, &p->plan, f);
        dump_placement(p, f);
        plan_commands_dump(&p->cmds, p->g, &p->lp, f);
        dump_encodings(p->g, f);
    } else if (strcmp(what, "regions") == 0) {
        fuse_dump(p->g, &p->fp, f);
        dump_encodings(p->g, f);
        if (p->stage == SMELT_STAGE_ALL || p->stage >= SMELT_STAGE_KIR) dump_spans(p, f);
    } else if (strcmp(what, "dot") == 0) {
        fuse_dot(p->g, &p->fp, f);
    } else if (strcmp(what, "info") == 0) {
        int64_t weights = p->plan.weight_bytes;
        const mem_plan *mp = &p->plan;
        fprintf(f, "nodes:        %d\nregions:      %d\nkernels:      %d\nweights:      %lld bytes\narena:        %lld bytes (planned peak)\n"
                   "lower bound:  %lld bytes (most bytes live during one kernel)\n"
                   "unplanned:    %lld bytes (sum of all intermediates)\n"
                   "aliases:      %d views, %d in-place\nbytes moved:  %lld per run\n"
                   "barriers:     %d (kernels between two barriers may run together)\n"
                   "commands:     %d (%d dispatches, %d copies of %lld bytes, %d barriers)\n",
                p->g->n_nodes, p->fp.n_regions, p->lp.n_kernels, (long long)weights, (long long)mp->arena_bytes,
                (long long)mp->lower_bound, (long long)mp->total_bytes, mp->n_views, mp->n_in_place,
                (long long)p->stats.bytes_moved, mp->n_barriers, p->cmds.n_cmds, p->cmds.count[PLAN_CMD_DISPATCH],
                p->cmds.count[PLAN_CMD_COPY], (long long)p->cmds.copy_bytes, p->cmds.count[PLAN_CMD_BARRIER]);
        if (p->cmds.n_children) /* run-time control flow: host commands over child programs (api/control.c) */
            fprintf(f, "control:      %d if, %d loop, over %d child programs compiled once each\n", p->cmds.count[PLAN_CMD_IF],
                    p->cmds.count[PLAN_CMD_LOOP], p->cmds.n_children);
        dump_devices(p, f);
        int counts[OP_COUNT] = {0};
        for (int i = 0; i < p->g->n_nodes; i++) counts[p->g->nodes[i].op]++;
        fprintf(f, "ops:");
        for (int o = 0; o < OP_COUNT; o++)
            if (counts[o]) fprintf(f, " %s=%d", op_get((op_id)o)->name, counts[o]);
        fprintf(f, "\n");
    } else {
        st = diag_fail(SMELT_ERR_INVALID_ARG, "unknown dump '%s' (ir, regions, dot, kir, c, plan, info)", what);
    }
    fclose(f);
    if (st) {
        free(buf);
        return st;
    }
    *text = buf;
    return SMELT_OK;
}
