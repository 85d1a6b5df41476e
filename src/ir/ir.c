#include "ir/ir.h"

#include "core/half.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

size_t smelt_dtype_size(smelt_dtype dt)
{
    switch (dt) {
    case SMELT_F32: case SMELT_I32: case SMELT_U32: return 4;
    case SMELT_F64: case SMELT_I64: case SMELT_U64: return 8;
    case SMELT_U8: case SMELT_I8: case SMELT_BOOL: return 1;
    case SMELT_U16: case SMELT_I16: case SMELT_F16: case SMELT_BF16: return 2;
    default: return 0;
    }
}

const char *smelt_dtype_name(smelt_dtype dt)
{
    switch (dt) {
    case SMELT_F32: return "float32";
    case SMELT_U8: return "uint8";
    case SMELT_I8: return "int8";
    case SMELT_U16: return "uint16";
    case SMELT_I16: return "int16";
    case SMELT_I32: return "int32";
    case SMELT_I64: return "int64";
    case SMELT_STRING: return "string";
    case SMELT_BOOL: return "bool";
    case SMELT_F16: return "float16";
    case SMELT_BF16: return "bfloat16";
    case SMELT_F64: return "float64";
    case SMELT_U32: return "uint32";
    case SMELT_U64: return "uint64";
    default: return "undefined";
    }
}

float smelt_half_to_float(smelt_dtype dt, uint16_t bits)
{
    return dt == SMELT_F16 ? half_f16_to_f32(bits) : dt == SMELT_BF16 ? half_bf16_to_f32(bits) : 0;
}

uint16_t smelt_float_to_half(smelt_dtype dt, float x)
{
    return dt == SMELT_F16 ? half_f32_to_f16(x) : dt == SMELT_BF16 ? half_f32_to_bf16(x) : 0;
}

int64_t smelt_tensor_numel(const smelt_tensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++) n *= t->shape[i];
    return n;
}

ir_graph *ir_graph_new(void)
{
    ir_graph *g = calloc(1, sizeof *g);
    if (g) arena_init(&g->arena);
    return g;
}

void ir_graph_free(ir_graph *g)
{
    if (!g) return;
    for (int i = 0; i < g->n_subs; i++) ir_graph_free(g->subs[i]);
    free(g->subs);
    free(g->tensors);
    free(g->nodes);
    arena_free(&g->arena);
    free(g);
}

static int grow(void **arr, int *cap, int need, size_t elem)
{
    if (need <= *cap) return 1;
    int c = *cap ? *cap * 2 : 64;
    while (c < need) c *= 2;
    void *p = realloc(*arr, (size_t)c * elem);
    if (!p) return 0;
    memset((char *)p + (size_t)*cap * elem, 0, (size_t)(c - *cap) * elem);
    *arr = p;
    *cap = c;
    return 1;
}

int ir_graph_adopt(ir_graph *g, ir_graph *sub)
{
    if (!grow((void **)&g->subs, &g->cap_subs, g->n_subs + 1, sizeof(ir_graph *))) {
        ir_graph_free(sub);
        return 0;
    }
    g->subs[g->n_subs++] = sub;
    return 1;
}

int ir_tensor_add(ir_graph *g, const char *name, smelt_dtype dt, const ir_shape *shape)
{
    if (!grow((void **)&g->tensors, &g->cap_tensors, g->n_tensors + 1, sizeof(ir_tensor))) return -1;
    ir_tensor *t = &g->tensors[g->n_tensors];
    memset(t, 0, sizeof *t);
    t->name = arena_strdup(&g->arena, name ? name : "");
    if (!t->name) return -1;
    t->dtype = dt;
    if (shape) t->shape = *shape;
    t->producer = -1;
    return g->n_tensors++;
}

void *ir_tensor_alloc_data(ir_graph *g, int t)
{
    ir_tensor *x = &g->tensors[t];
    size_t n = (size_t)ir_tensor_numel(x) * smelt_dtype_size(x->dtype);
    x->data = arena_alloc(&g->arena, n ? n : 1);
    return x->data;
}

int ir_node_add(ir_graph *g, const char *name, op_id op, int n_in, const int *in, int n_out,
                const int *out)
{
    if (!grow((void **)&g->nodes, &g->cap_nodes, g->n_nodes + 1, sizeof(ir_node))) return -1;
    ir_node *n = &g->nodes[g->n_nodes];
    memset(n, 0, sizeof *n);
    char gen[64];
    if (!name || !*name) {
        snprintf(gen, sizeof gen, "%s_%d", op >= 0 ? op_table[op].name : "node", g->n_nodes);
        name = gen;
    }
    n->name = arena_strdup(&g->arena, name);
    n->op = op;
    n->n_in = n_in;
    n->n_out = n_out;
    n->in = arena_alloc(&g->arena, sizeof(int) * (size_t)(n_in ? n_in : 1));
    n->out = arena_alloc(&g->arena, sizeof(int) * (size_t)(n_out ? n_out : 1));
    if (!n->name || !n->in || !n->out) return -1;
    if (n_in) memcpy(n->in, in, sizeof(int) * (size_t)n_in);
    if (n_out) memcpy(n->out, out, sizeof(int) * (size_t)n_out);
    for (int i = 0; i < n_out; i++)
        if (out[i] >= 0) g->tensors[out[i]].producer = g->n_nodes;
    return g->n_nodes++;
}

int ir_node_attr_add(ir_graph *g, int node, const ir_attr *a)
{
    ir_node *n = &g->nodes[node];
    ir_attr *arr = arena_alloc(&g->arena, sizeof(ir_attr) * (size_t)(n->n_attr + 1));
    if (!arr) return 0;
    if (n->n_attr) memcpy(arr, n->attr, sizeof(ir_attr) * (size_t)n->n_attr);
    ir_attr *d = &arr[n->n_attr];
    *d = *a;
    d->name = arena_strdup(&g->arena, a->name);
    d->s = arena_strdup(&g->arena, a->s);
    if (a->n > 0 && a->ints) d->ints = arena_memdup(&g->arena, a->ints, sizeof(int64_t) * (size_t)a->n);
    if (a->n > 0 && a->floats) d->floats = arena_memdup(&g->arena, a->floats, sizeof(float) * (size_t)a->n);
    if (a->n > 0 && a->strings) {
        d->strings = arena_alloc(&g->arena, sizeof(char *) * (size_t)a->n);
        if (!d->strings) return 0;
        for (int i = 0; i < a->n; i++) d->strings[i] = arena_strdup(&g->arena, a->strings[i]);
    }
    if (a->n_cap > 0 && !(d->cap = arena_memdup(&g->arena, a->cap, sizeof(int) * (size_t)a->n_cap))) return 0;
    n->attr = arr;
    n->n_attr++;
    return 1;
}

int ir_graph_set_io(ir_graph *g, int n_in, const int *in, int n_out, const int *out)
{
    g->inputs = arena_memdup(&g->arena, in, sizeof(int) * (size_t)(n_in ? n_in : 1));
    g->outputs = arena_memdup(&g->arena, out, sizeof(int) * (size_t)(n_out ? n_out : 1));
    if (!g->inputs || !g->outputs) return 0;
    g->n_inputs = n_in;
    g->n_outputs = n_out;
    for (int i = 0; i < g->n_tensors; i++) g->tensors[i].is_input = g->tensors[i].is_output = false;
    for (int i = 0; i < n_in; i++) g->tensors[in[i]].is_input = true;
    for (int i = 0; i < n_out; i++) g->tensors[out[i]].is_output = true;
    return 1;
}

static ir_graph *clone_graph(const ir_graph *src, bool share_data)
{
    ir_graph *g = ir_graph_new();
    if (!g) return NULL;
    for (int i = 0; i < src->n_tensors; i++) {
        const ir_tensor *s = &src->tensors[i];
        int t = ir_tensor_add(g, s->name, s->dtype, &s->shape);
        if (t < 0) goto fail;
        ir_tensor *d = &g->tensors[t];
        for (int k = 0; k < IR_MAX_RANK; k++) d->dim_param[k] = arena_strdup(&g->arena, s->dim_param[k]);
        d->enc = s->enc;
        if (s->data && share_data) {
            d->data = s->data;
        } else if (s->data) {
            size_t n = (size_t)ir_tensor_numel(s) * smelt_dtype_size(s->dtype);
            d->data = arena_memdup(&g->arena, s->data, n ? n : 1);
            if (!d->data) goto fail;
        }
    }
    for (int i = 0; i < src->n_nodes; i++) {
        const ir_node *s = &src->nodes[i];
        int n = ir_node_add(g, s->name, s->op, s->n_in, s->in, s->n_out, s->out);
        if (n < 0) goto fail;
        g->nodes[n].dead = s->dead;
        for (int a = 0; a < s->n_attr; a++) {
            ir_attr at = s->attr[a];
            if (at.type == IR_ATTR_GRAPH && (!(at.graph = ir_graph_clone(at.graph)) || !ir_graph_adopt(g, at.graph)))
                goto fail;
            if (!ir_node_attr_add(g, n, &at)) goto fail;
        }
    }
    if (!ir_graph_set_io(g, src->n_inputs, src->inputs, src->n_outputs, src->outputs)) goto fail;
    g->opset = src->opset;
    return g;
fail:
    ir_graph_free(g);
    return NULL;
}

smelt_status ir_node_parse_params(ir_graph *g, int node)
{
    const op_params_info *pi = &op_params[g->nodes[node].op];
    g->nodes[node].params = NULL;
    if (!pi->parse) return SMELT_OK;
    void *p = arena_alloc(&g->arena, pi->size);
    if (!p) return ir_node_fail(&g->nodes[node], SMELT_ERR_NOMEM, "out of memory");
    memset(p, 0, pi->size);
    TRY(pi->parse(g, &g->nodes[node], p));
    g->nodes[node].params = p;
    return SMELT_OK;
}

smelt_status ir_node_params(ir_graph *g, int node, const void **params)
{
    if (!g->nodes[node].params) TRY(ir_node_parse_params(g, node));
    *params = g->nodes[node].params;
    return *params ? SMELT_OK : ir_node_fail(&g->nodes[node], SMELT_ERR_INTERNAL, "the op has no params struct");
}

smelt_status ir_node_params_get(const ir_graph *g, const ir_node *n, void *scratch, const void **params)
{
    const op_params_info *pi = &op_params[n->op];
    *params = n->params;
    if (*params) return SMELT_OK;
    if (!pi->parse) return ir_node_fail(n, SMELT_ERR_INTERNAL, "the op has no params struct");
    memset(scratch, 0, pi->size);
    TRY(pi->parse(g, n, scratch));
    *params = scratch;
    return SMELT_OK;
}

ir_graph *ir_graph_clone(const ir_graph *g) { return clone_graph(g, false); }
ir_graph *ir_graph_clone_sharing_data(const ir_graph *g) { return clone_graph(g, true); }

smelt_status ir_graph_compact(ir_graph *g)
{
    int *tmap = malloc(sizeof(int) * (size_t)(g->n_tensors + 1));
    int *used = calloc((size_t)g->n_tensors + 1, sizeof(int));
    if (!tmap || !used) {
        free(tmap);
        free(used);
        return diag_fail(SMELT_ERR_NOMEM, "out of memory compacting the graph");
    }
    for (int i = 0; i < g->n_inputs; i++) used[g->inputs[i]] = 1;
    for (int i = 0; i < g->n_outputs; i++) used[g->outputs[i]] = 1;
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *n = &g->nodes[i];
        if (n->dead) continue;
        for (int k = 0; k < n->n_in; k++)
            if (n->in[k] >= 0) used[n->in[k]] = 1;
        for (int k = 0; k < n->n_out; k++)
            if (n->out[k] >= 0) used[n->out[k]] = 1;
        for (int a = 0; a < n->n_attr; a++)
            if (n->attr[a].type == IR_ATTR_TENSOR) used[n->attr[a].tensor] = 1;
    }
    int nt = 0;
    for (int i = 0; i < g->n_tensors; i++) {
        tmap[i] = used[i] ? nt : -1;
        if (used[i]) g->tensors[nt++] = g->tensors[i];
    }
    g->n_tensors = nt;
    int nn = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        if (g->nodes[i].dead) continue;
        ir_node *n = &g->nodes[nn];
        *n = g->nodes[i];
        for (int k = 0; k < n->n_in; k++)
            if (n->in[k] >= 0) n->in[k] = tmap[n->in[k]];
        for (int k = 0; k < n->n_out; k++)
            if (n->out[k] >= 0) n->out[k] = tmap[n->out[k]];
        for (int a = 0; a < n->n_attr; a++)
            if (n->attr[a].type == IR_ATTR_TENSOR) n->attr[a].tensor = tmap[n->attr[a].tensor];
        nn++;
    }
    g->n_nodes = nn;
    for (int i = 0; i < g->n_tensors; i++) g->tensors[i].producer = -1;
    for (int i = 0; i < nn; i++)
        for (int k = 0; k < g->nodes[i].n_out; k++)
            if (g->nodes[i].out[k] >= 0) g->tensors[g->nodes[i].out[k]].producer = i;
    for (int i = 0; i < g->n_inputs; i++) g->inputs[i] = tmap[g->inputs[i]];
    for (int i = 0; i < g->n_outputs; i++) g->outputs[i] = tmap[g->outputs[i]];
    free(tmap);
    free(used);
    return SMELT_OK;
}

const ir_attr *ir_attr_find(const ir_node *n, const char *name)
{
    for (int i = 0; i < n->n_attr; i++)
        if (strcmp(n->attr[i].name, name) == 0) return &n->attr[i];
    return NULL;
}

int64_t ir_attr_int(const ir_node *n, const char *name, int64_t def)
{
    const ir_attr *a = ir_attr_find(n, name);
    return a && a->type == IR_ATTR_INT ? a->i : def;
}

float ir_attr_float(const ir_node *n, const char *name, float def)
{
    const ir_attr *a = ir_attr_find(n, name);
    if (!a) return def;
    if (a->type == IR_ATTR_FLOAT) return a->f;
    if (a->type == IR_ATTR_INT) return (float)a->i;
    return def;
}

const char *ir_attr_string(const ir_node *n, const char *name, const char *def)
{
    const ir_attr *a = ir_attr_find(n, name);
    return a && a->type == IR_ATTR_STRING ? a->s : def;
}

int ir_attr_ints(const ir_node *n, const char *name, const int64_t **vals)
{
    const ir_attr *a = ir_attr_find(n, name);
    if (!a || a->type != IR_ATTR_INTS) return -1;
    *vals = a->ints;
    return a->n;
}

int ir_attr_floats(const ir_node *n, const char *name, const float **vals)
{
    const ir_attr *a = ir_attr_find(n, name);
    if (!a || a->type != IR_ATTR_FLOATS) return -1;
    *vals = a->floats;
    return a->n;
}

int64_t ir_shape_numel(const ir_shape *s)
{
    int64_t n = 1;
    for (int i = 0; i < s->rank; i++)
        if (!size_mul(n, s->dim[i], &n)) return INT64_MAX; /* only before ir_shape_ok has checked it */
    return n;
}

bool ir_shape_ok(const ir_shape *s)
{
    int64_t n;
    return s->rank >= 0 && s->rank <= IR_MAX_RANK && size_numel(s->dim, s->rank, &n);
}

bool ir_shape_eq(const ir_shape *a, const ir_shape *b)
{
    if (a->rank != b->rank) return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dim[i] != b->dim[i]) return false;
    return true;
}

const char *ir_shape_str(const ir_shape *s, char *buf, size_t cap)
{
    size_t len = 0;
    len += (size_t)snprintf(buf + len, cap - len, "[");
    for (int i = 0; i < s->rank && len < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, i ? ",%lld" : "%lld", (long long)s->dim[i]);
    if (len < cap) snprintf(buf + len, cap - len, "]");
    return buf;
}

const char *ir_box_str(int rank, const int64_t *lo, const int64_t *hi, char *buf, size_t cap)
{
    size_t len = 0;
    len += (size_t)snprintf(buf + len, cap - len, "[");
    for (int i = 0; i < rank && len < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, i ? ",%lld:%lld" : "%lld:%lld", (long long)lo[i], (long long)hi[i]);
    if (len < cap) snprintf(buf + len, cap - len, "]");
    return buf;
}

void ir_shape_strides(const ir_shape *s, int64_t *strides)
{
    int64_t st = 1;
    for (int i = s->rank - 1; i >= 0; i--) {
        strides[i] = st;
        st *= s->dim[i];
    }
}

bool ir_shape_broadcast(const ir_shape *a, const ir_shape *b, ir_shape *out)
{
    int r = a->rank > b->rank ? a->rank : b->rank;
    ir_shape o = {.rank = r};
    for (int i = 0; i < r; i++) {
        int ia = i - (r - a->rank), ib = i - (r - b->rank);
        int64_t da = ia >= 0 ? a->dim[ia] : 1, db = ib >= 0 ? b->dim[ib] : 1;
        if (da == db || db == 1) o.dim[i] = da;
        else if (da == 1) o.dim[i] = db;
        else return false;
    }
    *out = o;
    return true;
}

int64_t ir_const_int(const ir_tensor *t, int64_t i)
{
    const void *d = t->data;
    switch (t->dtype) {
    case SMELT_I64: return ((const int64_t *)d)[i];
    case SMELT_I32: return ((const int32_t *)d)[i];
    case SMELT_I16: return ((const int16_t *)d)[i];
    case SMELT_I8: return ((const int8_t *)d)[i];
    case SMELT_U8: case SMELT_BOOL: return ((const uint8_t *)d)[i];
    case SMELT_U16: return ((const uint16_t *)d)[i];
    case SMELT_U32: return ((const uint32_t *)d)[i];
    case SMELT_U64: return (int64_t)((const uint64_t *)d)[i];
    case SMELT_F32: return (int64_t)((const float *)d)[i];
    case SMELT_F64: return (int64_t)((const double *)d)[i];
    case SMELT_F16: case SMELT_BF16: return (int64_t)smelt_half_to_float(t->dtype, ((const uint16_t *)d)[i]);
    default: return 0;
    }
}

double ir_const_double(const ir_tensor *t, int64_t i)
{
    switch (t->dtype) {
    case SMELT_F32: return ((const float *)t->data)[i];
    case SMELT_F64: return ((const double *)t->data)[i];
    case SMELT_U64: return (double)((const uint64_t *)t->data)[i];
    case SMELT_F16: case SMELT_BF16: return smelt_half_to_float(t->dtype, ((const uint16_t *)t->data)[i]);
    default: return (double)ir_const_int(t, i);
    }
}

smelt_status ir_node_fail(const ir_node *n, smelt_status st, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return diag_fail(st, "node '%s' (%s): %s", n->name, n->op >= 0 ? op_table[n->op].name : "?", msg);
}

smelt_status ir_verify(const ir_graph *g)
{
    char *defined = calloc((size_t)g->n_tensors + 1, 1);
    if (!defined) return diag_fail(SMELT_ERR_NOMEM, "out of memory verifying the graph");
    smelt_status st = SMELT_OK;
    for (int i = 0; i < g->n_tensors; i++)
        if (g->tensors[i].is_input || g->tensors[i].data) defined[i] = 1;
    for (int i = 0; i < g->n_nodes && !st; i++) {
        const ir_node *n = &g->nodes[i];
        if (n->dead) continue;
        if (n->op < 0 || n->op >= OP_COUNT) {
            st = diag_fail(SMELT_ERR_INTERNAL, "ir_verify: node '%s' has no op", n->name);
            break;
        }
        const op_info *oi = op_get(n->op);
        if (n->n_in < oi->min_in || n->n_in > oi->max_in || n->n_out < oi->min_out || n->n_out > oi->max_out) {
            st = ir_node_fail(n, SMELT_ERR_MODEL, "%d inputs and %d outputs, but the op takes %d..%d inputs and %d..%d outputs",
                              n->n_in, n->n_out, oi->min_in, oi->max_in, oi->min_out, oi->max_out);
            break;
        }
        for (int k = 0; k < n->n_in && !st; k++) {
            int t = n->in[k];
            if (t < -1 || t >= g->n_tensors) st = diag_fail(SMELT_ERR_INTERNAL, "ir_verify: node '%s' input %d out of range", n->name, k);
            else if (t >= 0 && !defined[t])
                st = ir_node_fail(n, SMELT_ERR_MODEL, "input '%s' is used before it is defined", g->tensors[t].name);
        }
        for (int k = 0; k < n->n_out && !st; k++) {
            int t = n->out[k];
            if (t < -1 || t >= g->n_tensors) st = diag_fail(SMELT_ERR_INTERNAL, "ir_verify: node '%s' output %d out of range", n->name, k);
            else if (t >= 0 && defined[t]) st = ir_node_fail(n, SMELT_ERR_MODEL, "output '%s' is defined twice", g->tensors[t].name);
            else if (t >= 0) defined[t] = 1;
        }
    }
    for (int i = 0; i < g->n_outputs && !st; i++)
        if (!defined[g->outputs[i]])
            st = diag_fail(SMELT_ERR_MODEL, "graph output '%s' is never computed", g->tensors[g->outputs[i]].name);
    free(defined);
    return st;
}

void ir_dump(const ir_graph *g, FILE *f)
{
    char sb[256];
    fprintf(f, "graph: %d inputs, %d outputs, %d nodes, opset %d\n", g->n_inputs, g->n_outputs, g->n_nodes, g->opset);
    for (int i = 0; i < g->n_inputs; i++) {
        const ir_tensor *t = &g->tensors[g->inputs[i]];
        fprintf(f, "  input  %%%d '%s' %s%s\n", g->inputs[i], t->name, smelt_dtype_name(t->dtype), ir_shape_str(&t->shape, sb, sizeof sb));
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *n = &g->nodes[i];
        if (n->dead) continue;
        fprintf(f, "  n%d %s '%s' (%s):", i, op_table[n->op].name, n->name, op_kind_name(op_table[n->op].kind));
        for (int k = 0; k < n->n_out; k++) {
            const ir_tensor *t = &g->tensors[n->out[k]];
            fprintf(f, " %%%d:%s%s", n->out[k], smelt_dtype_name(t->dtype), ir_shape_str(&t->shape, sb, sizeof sb));
        }
        fprintf(f, " <-");
        for (int k = 0; k < n->n_in; k++) {
            if (n->in[k] < 0) {
                fprintf(f, " _");
                continue;
            }
            const ir_tensor *t = &g->tensors[n->in[k]];
            fprintf(f, " %%%d%s", n->in[k], t->data ? "(const)" : "");
        }
        fprintf(f, "\n");
    }
    for (int i = 0; i < g->n_outputs; i++)
        fprintf(f, "  output %%%d '%s'\n", g->outputs[i], g->tensors[g->outputs[i]].name);
}
