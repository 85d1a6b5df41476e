/*
 * barriers.c — the command list's barriers: a dispatch waits for the ones
 * before it only where their memory meets.
 *
 * A kernel's footprint is, for each of its parameter buffers in the
 * activation arena, the bytes it may touch: the buffer's span (the elements
 * its load and store indices can reach, kir/spans.c) at the slot's offset
 * (an alias has its root's offset), narrowed for a tensor its region writes
 * only part of (fuse_range: a Concat input's block, a Pad's border) to the
 * span from the box's first element to its last. Graph inputs and
 * constants are never written, so reading them conflicts with nothing. Two
 * kernels conflict when a byte one of them writes is a byte the other reads
 * or writes: a read after a write, a write after a read (the arena reuses a
 * dead tensor's bytes for a later one), or two writes, except two writes of
 * boxes that the regions record apart (boxes_apart: a Pad's border and its
 * interior, Concat blocks along an inner axis).
 *
 * Walking the kernels in order, the dispatches since the last barrier form a
 * batch that may run at the same time; a kernel that conflicts with one in
 * the batch gets a barrier before it and starts the next batch. Kernels with
 * no workgroups are never dispatched and join no batch.
 *
 * requires: a plan built for the lowered program, and the fusion plan it
 *           was lowered from (lower_program.kernel_node names the region's root).
 * guarantees: barrier_before[0] is false; every conflicting pair of
 *             dispatched kernels has a barrier between them.
 */
#include <stdlib.h>

#include "core/diag.h"
#include "fuse/fuse.h"
#include "plan/plan.h"

typedef struct span {
    int64_t lo, hi; /* arena bytes [lo, hi) */
    bool write;
    const fuse_range *box; /* a write of exactly this range its region records, or NULL */
} span;

/* The region whose root kernel i computes, or NULL. */
static const fuse_region *region_of(const fuse_plan *fp, const lower_program *lp, int i)
{
    for (int r = 0; fp && r < fp->n_regions; r++)
        if (fp->regions[r].root == lp->kernel_node[i]) return &fp->regions[r];
    return NULL;
}

/* Element span of box [lo, hi) of a row-major shape: [first, last + 1); false when empty. */
static bool box_span(const ir_shape *s, const int64_t *lo, const int64_t *hi, int64_t *first, int64_t *end)
{
    int64_t a = 0, b = 0, stride = 1;
    for (int d = s->rank - 1; d >= 0; d--) {
        if (hi[d] <= lo[d]) return false;
        a += lo[d] * stride;
        b += (hi[d] - 1) * stride;
        stride *= s->dim[d];
    }
    *first = a;
    *end = b + 1;
    return true;
}

bool plan_buffer_range(const ir_graph *g, const struct fuse_plan *fp, const lower_program *lp, const mem_plan *m, int i,
                       int b, int64_t *lo_out, int64_t *hi_out, const fuse_range **box_out)
{
    const kir_kernel *k = lp->kernels[i];
    const kir_buffer *x = &k->bufs[b];
    *box_out = NULL;
    if (x->workgroup || x->tensor < 0 || x->tensor >= m->n_slots) return false;
    if (x->span_hi <= x->span_lo) return false; /* touches none of it */
    const plan_slot *r = &m->slots[plan_root(m, x->tensor)];
    int64_t bes = (int64_t)smelt_dtype_size(x->type);
    int64_t slo = x->span_lo * bes, shi = x->span_hi * bes;
    /* Written only: narrowed to the hull of what its region records
     * writing of it (every range of that tensor), if it records any. */
    const fuse_region *reg = region_of(fp, lp, i);
    int64_t lo = -1, hi = -1;
    int n_boxes = 0;
    for (int q = 0; x->written && !x->read && reg && x->tensor < g->n_tensors && q < reg->n_ranges; q++) {
        const fuse_range *fr = &reg->ranges[q];
        int64_t first, end, es = (int64_t)smelt_dtype_size(g->tensors[x->tensor].dtype);
        if (fr->tensor != x->tensor) continue;
        if (++n_boxes == 1) *box_out = fr;
        if (!box_span(&g->tensors[x->tensor].shape, fr->lo, fr->hi, &first, &end)) continue;
        if (lo < 0 || first * es < lo) lo = first * es;
        if (end * es > hi) hi = end * es;
    }
    if (n_boxes != 1) *box_out = NULL;
    if (lo >= 0 && hi > lo && hi <= r->bytes) {
        if (lo > slo) slo = lo;
        if (hi < shi) shi = hi;
        if (shi <= slo) return false;
    }
    *lo_out = slo;
    *hi_out = shi;
    return true;
}

/* The device kernel i runs on: its memory is another device's. */
static int dev_of(const mem_plan *m, int i)
{
    int d = m->kernel_device ? m->kernel_device[i] : 0;
    return d >= 0 && d < PLAN_MAX_DEVICES ? d : 0;
}

/* Kernel i's footprint in the arena, appended to *out (n spans). */
static int footprint(const ir_graph *g, const fuse_plan *fp, const lower_program *lp, const mem_plan *m, int i,
                     span *out)
{
    const kir_kernel *k = lp->kernels[i];
    int n = 0;
    for (int b = 0; b < k->n_bufs; b++) {
        const kir_buffer *x = &k->bufs[b];
        if (x->workgroup || x->tensor < 0 || x->tensor >= m->n_slots) continue;
        const plan_slot *r = &m->slots[plan_root(m, x->tensor)];
        if (r->kind != PLAN_ARENA || r->bytes <= 0) continue;
        int64_t lo, hi;
        const fuse_range *box;
        if (!plan_buffer_range(g, fp, lp, m, i, b, &lo, &hi, &box)) continue;
        int64_t at = plan_offset(m, dev_of(m, i), x->tensor);
        out[n++] = (span){at + lo, at + hi, x->written, box};
    }
    return n;
}

/* Two writes of one tensor that their regions record as boxes: disjoint when
 * one is a Pad's border (it excludes every block another region writes, fuse.h
 * "insert") and the other is not, or when the boxes miss in some dim (blocks
 * of a Concat along an inner axis, whose byte hulls interleave). */
static bool boxes_apart(const fuse_range *a, const fuse_range *b, int rank)
{
    if (!a || !b || a->tensor != b->tensor) return false;
    if (a->border != b->border) return true;
    if (a->border) return false;
    for (int d = 0; d < rank; d++)
        if (a->hi[d] <= b->lo[d] || b->hi[d] <= a->lo[d]) return true;
    return false;
}

static bool conflict(const ir_graph *g, const span *a, int na, const span *b, int nb)
{
    for (int i = 0; i < na; i++)
        for (int j = 0; j < nb; j++) {
            if (!(a[i].write || b[j].write) || a[i].lo >= b[j].hi || b[j].lo >= a[i].hi) continue;
            if (a[i].write && b[j].write && a[i].box &&
                boxes_apart(a[i].box, b[j].box, g->tensors[a[i].box->tensor].shape.rank))
                continue;
            return true;
        }
    return false;
}

smelt_status plan_barriers(const ir_graph *g, const struct fuse_plan *fp, const lower_program *lp, mem_plan *m)
{
    free(m->barrier_before);
    m->barrier_before = calloc((size_t)lp->n_kernels + 1, sizeof(bool));
    int *start = calloc((size_t)lp->n_kernels + 1, sizeof(int));
    int total = 0;
    for (int i = 0; i < lp->n_kernels; i++) total += lp->kernels[i]->n_bufs;
    span *spans = malloc(sizeof(span) * ((size_t)total + 1));
    if (!m->barrier_before || !start || !spans) {
        free(start);
        free(spans);
        return diag_fail(SMELT_ERR_NOMEM, "out of memory");
    }
    int n = 0;
    for (int i = 0; i < lp->n_kernels; i++) {
        start[i] = n;
        n += footprint(g, fp, lp, m, i, spans + n);
    }
    start[lp->n_kernels] = n;
    m->n_barriers = 0;
    int batch[PLAN_MAX_DEVICES]; /* per device: the first kernel of its current batch */
    for (int d = 0; d < PLAN_MAX_DEVICES; d++) batch[d] = -1;
    for (int i = 0; i < lp->n_kernels; i++) {
        if (lp->kernels[i]->n_workgroups <= 0) continue;
        int d = dev_of(m, i);
        bool wait = false;
        for (int j = batch[d]; j >= 0 && j < i && !wait; j++)
            wait = lp->kernels[j]->n_workgroups > 0 && dev_of(m, j) == d &&
                   conflict(g, spans + start[j], start[j + 1] - start[j], spans + start[i], start[i + 1] - start[i]);
        if (batch[d] < 0) batch[d] = i;
        if (wait) {
            m->barrier_before[i] = true;
            m->n_barriers++;
            batch[d] = i;
        }
    }
    free(start);
    free(spans);
    return SMELT_OK;
}
