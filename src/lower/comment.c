/* comment.c — a kernel's comment: what it computes, from its region's nodes.
 * requires: the region's nodes with inferred shapes; guarantees: text of
 * smelt's own words, shapes, numbers and node names reduced to [A-Za-z0-9._]
 * (the emitters sanitize it again). */
#include <stdarg.h>
#include <stdio.h>

#include "fuse/fuse.h"
#include "lower/lower.h"

/* "y[1,64,56,56] = relu(conv(x, w0, w1)): 3x3 stride 1 pad 1, 64 to 64 channels
 * (node 'conv1')": the region's nodes as one expression over the tensors it
 * reads (x: computed inputs, w: constants, single-element constants by value),
 * then the root's geometry. Only smelt's own words and sanitized node names go
 * in; the emitters sanitize the whole text again. */
typedef struct comment_buf {
    char *s;
    size_t len, cap;
    const ir_graph *g;
    const fuse_region *r; /* NULL: the root alone */
    int leaves[16], n_leaves;
    int n_data, n_const; /* leaves of each kind, counted before naming */
    bool naming;
} comment_buf;

static void cb_printf(comment_buf *b, const char *fmt, ...) DIAG_PRINTF(2, 3);
static void cb_printf(comment_buf *b, const char *fmt, ...)
{
    if (b->len >= b->cap) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    b->len = n < 0 ? b->cap : b->len + (size_t)n;
    if (b->len > b->cap) b->len = b->cap;
}

static void cb_dims(comment_buf *b, const ir_shape *s, const char *sep)
{
    for (int i = 0; i < s->rank; i++) cb_printf(b, "%s%lld", i ? sep : "", (long long)s->dim[i]);
}

/* The region node that writes tensor t, or NULL (t is read from memory). */
static const ir_node *cb_producer(const comment_buf *b, int t)
{
    const fuse_region *r = b->r;
    for (int i = 0; r && i < r->n_nodes; i++) {
        const ir_node *n = &b->g->nodes[r->nodes[i]];
        for (int o = 0; o < n->n_out; o++)
            if (n->out[o] == t) return n;
    }
    return NULL;
}

static void cb_leaf(comment_buf *b, int t)
{
    const ir_tensor *x = &b->g->tensors[t];
    int64_t numel = 1;
    for (int i = 0; i < x->shape.rank; i++) numel *= x->shape.dim[i];
    if (x->data && numel == 1 && (x->dtype == SMELT_F32 || x->dtype == SMELT_I64 || x->dtype == SMELT_I32)) {
        if (x->dtype == SMELT_F32) cb_printf(b, "%g", (double)*(const float *)x->data);
        else if (x->dtype == SMELT_I64) cb_printf(b, "%lld", (long long)*(const int64_t *)x->data);
        else cb_printf(b, "%d", (int)*(const int32_t *)x->data);
        return;
    }
    int k = 0;
    while (k < b->n_leaves && b->leaves[k] != t) k++;
    if (k == b->n_leaves && k < (int)(sizeof b->leaves / sizeof b->leaves[0])) b->leaves[b->n_leaves++] = t;
    int rank = 0; /* among the leaves of its kind */
    for (int j = 0; j < k && j < b->n_leaves; j++) rank += !b->g->tensors[b->leaves[j]].data == !x->data;
    int n_kind = x->data ? b->n_const : b->n_data;
    if (!b->naming || n_kind == 1) cb_printf(b, "%s", x->data ? "w" : "x");
    else cb_printf(b, "%s%d", x->data ? "w" : "x", rank);
}

/* `paren`: t is an operand of an infix operator. */
static void cb_expr(comment_buf *b, int t, int depth, bool paren)
{
    const ir_node *n = depth < 12 ? cb_producer(b, t) : NULL;
    if (!n) {
        cb_leaf(b, t);
        return;
    }
    static const struct { op_id op; const char *infix; } infix[] = {
        {OP_Add, " + "}, {OP_Sub, " - "}, {OP_Mul, " * "},
    };
    const op_info *oi = op_get(n->op);
    for (size_t i = 0; i < sizeof infix / sizeof infix[0]; i++) {
        if (n->op != infix[i].op || n->n_in != 2) continue;
        if (paren) cb_printf(b, "(");
        cb_expr(b, n->in[0], depth + 1, true);
        cb_printf(b, "%s", infix[i].infix);
        cb_expr(b, n->in[1], depth + 1, true);
        if (paren) cb_printf(b, ")");
        return;
    }
    for (const char *p = oi->name; *p; p++) cb_printf(b, "%c", (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p));
    cb_printf(b, "(");
    bool first = true;
    for (int i = 0; i < n->n_in; i++) {
        if (n->in[i] < 0 || (i < 32 && (oi->value_in >> i & 1))) continue; /* shape parameters: in the op's name */
        if (!first) cb_printf(b, ", ");
        first = false;
        cb_expr(b, n->in[i], depth + 1, false);
    }
    cb_printf(b, ")");
}

/* A list attribute (or, without it, `fallback` from a shape) as "3x3", or one
 * number when every entry is the same. */
static void cb_ints(comment_buf *b, const char *label, const int64_t *v, int n, const char *sep)
{
    bool same = true;
    for (int i = 1; i < n; i++) same &= v[i] == v[0];
    cb_printf(b, "%s", label);
    for (int i = 0; i < (same ? (n > 0) : n); i++) cb_printf(b, "%s%lld", i ? sep : "", (long long)v[i]);
}

/* Geometry of the root node: windows, strides, pads and channels of a
 * convolution or pooling, operand shapes of a matrix product, reduced axes. */
static void cb_geometry(comment_buf *b, const ir_node *n)
{
    const ir_graph *g = b->g;
    const int64_t *v;
    int cnt;
    op_kind kind = op_get(n->op)->kind;
    bool conv = n->op == OP_Conv || n->op == OP_ConvTranspose;
    if (op_describe[n->op]) {
        char d[256];
        op_describe[n->op](g, n, d, sizeof d);
        cb_printf(b, "%s", d);
    } else if (conv || ir_attr_find(n, "kernel_shape")) {
        ir_shape ws = conv && n->n_in > 1 ? ir_tensor_logical_shape(&g->tensors[n->in[1]]) : (ir_shape){0};
        const ir_shape *w = conv && n->n_in > 1 ? &ws : NULL;
        size_t at = b->len;
        if ((cnt = ir_attr_ints(n, "kernel_shape", &v)) > 0) {
            for (int i = 0; i < cnt; i++) cb_printf(b, "%s%lld", i ? "x" : ": ", (long long)v[i]);
        } else if (w && w->rank > 2) {
            for (int i = 2; i < w->rank; i++) cb_printf(b, "%s%lld", i > 2 ? "x" : ": ", (long long)w->dim[i]);
        }
        if (b->len == at) cb_printf(b, ":");
        if ((cnt = ir_attr_ints(n, "strides", &v)) > 0) cb_ints(b, " stride ", v, cnt, "x");
        else cb_printf(b, " stride 1");
        if ((cnt = ir_attr_ints(n, "pads", &v)) > 0) cb_ints(b, " pad ", v, cnt, ",");
        if ((cnt = ir_attr_ints(n, "dilations", &v)) > 0 && (v[0] != 1 || cnt > 1)) {
            bool ones = true;
            for (int i = 0; i < cnt; i++) ones &= v[i] == 1;
            if (!ones) cb_ints(b, " dilation ", v, cnt, "x");
        }
        int64_t group = ir_attr_int(n, "group", 1);
        if (group != 1) cb_printf(b, " group %lld", (long long)group);
        const ir_shape *x = &g->tensors[n->in[0]].shape, *y = &g->tensors[n->out[0]].shape;
        if (conv && x->rank > 1 && y->rank > 1)
            cb_printf(b, ", %lld to %lld channels", (long long)x->dim[1], (long long)y->dim[1]);
    } else if (kind == OPK_CONTRACTION && n->n_in >= 2) {
        cb_printf(b, ": ");
        cb_dims(b, &g->tensors[n->in[0]].shape, "x");
        cb_printf(b, " times ");
        cb_dims(b, &g->tensors[n->in[1]].shape, "x");
    } else if ((cnt = ir_attr_ints(n, "axes", &v)) > 0) {
        cb_printf(b, ": axes ");
        for (int i = 0; i < cnt; i++) cb_printf(b, "%s%lld", i ? "," : "", (long long)v[i]);
    } else if (ir_attr_find(n, "axis")) {
        cb_printf(b, ": axis %lld", (long long)ir_attr_int(n, "axis", 0));
    }
}

/* Whether tensor t is computed in the region from `root`'s output. */
static bool cb_reaches(const comment_buf *b, int t, const ir_node *root, int depth)
{
    const ir_node *n = depth < 12 ? cb_producer(b, t) : NULL;
    if (!n) return false;
    if (n == root) return true;
    for (int i = 0; i < n->n_in; i++)
        if (n->in[i] >= 0 && cb_reaches(b, n->in[i], root, depth + 1)) return true;
    return false;
}

void lower_kernel_comment(const ir_graph *g, const fuse_region *r, const ir_node *root, char *buf, size_t cap)
{
    comment_buf b = {.s = buf, .cap = cap - 1, .g = g, .r = r};
    /* the last node computed from the root (a sibling's epilogue may come later) */
    const ir_node *sink = r && r->n_nodes ? &g->nodes[r->nodes[r->n_nodes - 1]] : root;
    for (int i = r ? r->n_nodes - 1 : -1; i >= 0; i--) {
        const ir_node *n = &g->nodes[r->nodes[i]];
        if (n->n_out > 0 && n->out[0] >= 0 && cb_reaches(&b, n->out[0], root, 0)) {
            sink = n;
            break;
        }
    }
    int y = sink->out[0];
    /* once to find the leaves, once to name them */
    cb_expr(&b, y, 0, false);
    for (int i = 0; i < b.n_leaves; i++) {
        if (g->tensors[b.leaves[i]].data) b.n_const++;
        else b.n_data++;
    }
    b.len = 0;
    b.naming = true;
    b.n_leaves = 0;
    cb_printf(&b, "y[");
    cb_dims(&b, &g->tensors[y].shape, ",");
    cb_printf(&b, "] = ");
    cb_expr(&b, y, 0, false);
    cb_geometry(&b, root);
    /* siblings (fuse.h): the reductions of the root's input computed alongside it */
    for (int i = 0; r && i < r->n_nodes; i++) {
        const ir_node *n = &g->nodes[r->nodes[i]];
        if (n == root || !(op_get(n->op)->flags & OPF_SIBLINGS) || !(op_get(root->op)->flags & OPF_SIBLINGS) ||
            n->in[0] != root->in[0])
            continue;
        cb_printf(&b, ", with ");
        for (const char *p = op_get(n->op)->name; *p; p++) cb_printf(&b, "%c", (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p));
    }
    cb_printf(&b, " (node '");
    for (const char *p = root->name; p && *p && b.len < b.cap; p++) {
        unsigned char ch = (unsigned char)*p;
        bool keep = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.';
        cb_printf(&b, "%c", keep ? (char)ch : '_');
    }
    cb_printf(&b, "')");
    buf[b.len < cap ? b.len : cap - 1] = 0;
}
