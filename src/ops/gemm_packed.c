/*
 * gemm_packed.c — the packed GEMM lowering that MatMul, Gemm and Conv share
 * (ops/gemm_packed.h says what it computes and how the callers plug in).
 *
 * requires: a C target with one thread per workgroup; B's panels in place
 *           (a constant input or the caller's scratch, filled before).
 * guarantees: one kernel; each output element of C is stored once, through
 *             the caller's store.
 */
#include "ops/gemm_packed.h"

/* Units (measured on the AVX2 host, 6 x 16 tiles, KC 256: L1 32 KiB, L2 512
 * KiB a core): up to 24 row blocks (144 rows: M 128 is one unit, so each B
 * panel slice, read once from L3, feeds 22 row blocks, where two units of 11
 * ran 128 x 768 x 3072 5% and 128 x 3072 x 768 10% slower) by up to 512
 * columns where A is packed (A packed once per 512 columns: 256 cost 4-5% at
 * 512^3), MM_NC_READ where it is read in place (no pack to amortize), at least
 * MM_MIN_UNITS of them (two per core of a 2-core host; 8 split the columns of
 * 128 x 3072 x 768 into 64-wide units, 5% slower at 1 thread). Workgroup
 * memory: 144 x 528 accumulators + 144 x 256 of A, 450 KiB of stack.
 * A read in place (read_a, a 1x1 conv's X) has no pack: at M = 49 or 196 rows
 * (MobileNetV2's 1x1 convs at 7x7 and 14x14) the pack, a transposing copy
 * that every one of the MM_MIN_UNITS column blocks repeated, took about half
 * the time: 960 -> 160 channels at 7x7 0.49 -> 0.21 ms (31 -> 72 GFLOP/s),
 * 576 -> 96 at 14x14 0.60 -> 0.25 (37 -> 86), 960 -> 320 at 7x7 0.64 -> 0.42
 * (47 -> 72), 320 -> 1280 at 7x7 0.65 -> 0.60 (62 -> 67; its 1.6 MB of B
 * streams from memory), min of 300 runs, 1 thread. MM_MB, MM_NC_P and
 * MM_MIN_UNITS are defined in ops/gemm_packed.h (ops/matmul.c reads them). */
/* Columns per unit where A is read in place (read_a): no pack to amortize, so
 * the smaller accumulator (132 x 272 floats, 140 KiB, beside the A slice's 132 x
 * 256 in L2's 512 KiB, where 132 x 528 left little room for B's stream) wins:
 * MatMul with a plain A, interleaved with the 512-column form at 1 thread, best
 * of 12-100 runs, two rounds: 512^3 92.8 -> 94.2 and 90.5 -> 92.9 GFLOP/s,
 * 1024^3 82.3 -> 85.1 and 84.7 -> 85.8, 128 x 768 x 3072 84.9 -> 84.6 and
 * 84.7 -> 87.4. */
#define MM_NC_READ 256
#define MM_PAD 16   /* accumulator rows this much longer than the block (not 4 KiB apart) */

static kir_val min_idx(kir_kernel *K, kir_val a, int64_t b) { return kir_binary(K, KIR_MIN, a, kir_idx(K, b)); }

kir_val gemm_packed_clamp_row(kir_kernel *K, const gemm_packed *g, kir_val i)
{
    return g->m % g->mr ? min_idx(K, i, g->m - 1) : i;
}

kir_val gemm_packed_a_at(kir_kernel *K, int64_t kcap, int64_t mr, kir_val q, kir_val r, kir_val kk)
{
    return kir_add(K, kir_add(K, kir_mul(K, q, kir_idx(K, kcap * mr)), kir_mul(K, r, kir_idx(K, kcap))), kk);
}

int64_t gemm_packed_panels(const gemm_packed *g) { return (g->n + g->tl.nr - 1) / g->tl.nr; }

/* What a gemm loop of the unit needs (unit_body). */
typedef struct mm_panel {
    int ap, acc;           /* workgroup memory: packed A (-1: read in place), accumulators */
    int64_t ld, kcap;      /* accumulator row length, KC */
    kir_val kb, kc, p0, bb, p; /* K slice start and length, first panel, B's batch base, panel */
    kir_val i0, j0;        /* the unit's first row and column */
    bool each;             /* store each block after its gemm loop (store_each, K one slice) */
    const kir_val *bidx;
} mm_panel;

/* acc[rows of block q] += A block q (its first `rows` rows) x panel p, over
 * the K slice; in the first slice the block is zeroed just before, so the
 * microkernel's loads of it hit L1 (a pass zeroing the unit's whole
 * accumulator, 270 KiB at MC x NC = 132 x 512, went out to L2 and came back).
 * The zeroing and the gemm loop address the block through the same values
 * (its first row and column, defined before the if), so the C target can see
 * that the one zeroes exactly what the other accumulates into and start the
 * microkernel's registers at zero instead (target/emit_c_gemm.c). */
static void gemm_rows(lower_ctx *c, const gemm_packed *g, const mm_panel *pn, kir_val q, int64_t rows)
{
    kir_kernel *K = c->k;
    int64_t mr = g->mr, nr = g->tl.nr;
    kir_val z = kir_idx(K, 0), one = kir_idx(K, 1);
    kir_val row0 = kir_mul(K, q, kir_idx(K, mr)), col0 = kir_mul(K, pn->p, kir_idx(K, nr));
    kir_if_begin(K, kir_binary(K, KIR_EQ, pn->kb, z));
    kir_val zr = kir_loop_begin(K, z, kir_idx(K, rows), one);
    kir_val zj = kir_loop_begin(K, z, kir_idx(K, nr), one);
    kir_val zrow = kir_add(K, row0, zr);
    kir_store(K, pn->acc, kir_add(K, kir_add(K, kir_mul(K, zrow, kir_idx(K, pn->ld)), col0), zj),
              kir_const_f(K, g->dt, 0));
    kir_loop_end(K);
    kir_loop_end(K);
    kir_if_end(K);
    kir_val kk = kir_loop_begin_gemm(K, pn->kc);
    kir_val r = rows > 1 ? kir_loop_begin(K, z, kir_idx(K, rows), one) : z;
    kir_val a;
    if (g->read_b_group) { /* k-groups: A read in place */
        kir_val i = kir_add(K, kir_add(K, pn->i0, kir_mul(K, q, kir_idx(K, mr))), r), kp = kir_add(K, pn->kb, kk);
        kir_val ah[4], prod = 0;
        int kg = g->kgroup;
        for (int h = 0; h < kg; h++)
            ah[h] = g->read_a(c, g, pn->bidx, i, kir_add(K, kir_mul(K, kp, kir_idx(K, kg)), kir_idx(K, h)));
        kir_val jj = kir_loop_begin(K, z, kir_idx(K, nr), one);
        kir_val col = kir_add(K, kir_mul(K, kir_add(K, pn->p0, pn->p), kir_idx(K, nr)), jj);
        for (int h = 0; h < kg; h++) {
            kir_val t = kir_binary(K, KIR_MUL, ah[h], g->read_b_group(c, g, pn->bidx, kp, h, col));
            prod = h ? kir_binary(K, KIR_ADD, prod, t) : t;
        }
        kir_val row = kir_add(K, row0, r);
        kir_val ci = kir_add(K, kir_add(K, kir_mul(K, row, kir_idx(K, pn->ld)), col0), jj);
        kir_store(K, pn->acc, ci, kir_binary(K, KIR_ADD, kir_load(K, pn->acc, ci), prod));
        kir_loop_end(K);
        if (rows > 1) kir_loop_end(K);
        kir_loop_end(K);
        return;
    }
    if (pn->ap < 0) {
        kir_val i = kir_add(K, kir_add(K, pn->i0, kir_mul(K, q, kir_idx(K, mr))), r);
        a = g->read_a(c, g, pn->bidx, i, kir_add(K, pn->kb, kk));
    } else {
        a = kir_load(K, pn->ap, gemm_packed_a_at(K, pn->kcap, mr, q, r, kk));
    }
    kir_val jj = kir_loop_begin(K, z, kir_idx(K, nr), one);
    kir_val bv;
    if (g->read_b) {
        kir_val col = kir_add(K, kir_mul(K, kir_add(K, pn->p0, pn->p), kir_idx(K, nr)), jj);
        bv = g->read_b(c, g, pn->bidx, kir_add(K, pn->kb, kk), col);
    } else if (g->b_input >= 0) {
        kir_val bi[3] = {kir_add(K, pn->p0, pn->p), kir_add(K, pn->kb, kk), jj};
        bv = lower_load(c, g->b_input, bi);
        const ir_tensor *bt = ir_in(c->g, c->n, g->b_input);
        if (bt->dtype != g->dt) bv = gemm_int8_widen(K, g->dt, bv, bt->enc.offset); /* 8-bit panels (ir.h) */
    } else {
        kir_val pk = kir_add(K, kir_mul(K, kir_add(K, pn->p0, pn->p), kir_idx(K, g->k)), kir_add(K, pn->kb, kk));
        bv = lower_scratch_load(c, g->b_scratch, kir_add(K, kir_add(K, pn->bb, kir_mul(K, pk, kir_idx(K, nr))), jj));
    }
    kir_val row = kir_add(K, row0, r);
    kir_val ci = kir_add(K, kir_add(K, kir_mul(K, row, kir_idx(K, pn->ld)), col0), jj);
    kir_store(K, pn->acc, ci, kir_binary(K, KIR_ADD, kir_load(K, pn->acc, ci), kir_binary(K, KIR_MUL, a, bv)));
    kir_loop_end(K);
    if (rows > 1) kir_loop_end(K);
    kir_loop_end(K);
    if (pn->each) {
        kir_val j0 = kir_add(K, pn->j0, col0);
        kir_val cols = g->n % nr ? min_idx(K, kir_binary(K, KIR_SUB, kir_idx(K, g->n), j0), nr) : kir_idx(K, nr);
        gemm_c_block cb = {.acc = pn->acc, .ld = pn->ld, .at = kir_add(K, kir_mul(K, row0, kir_idx(K, pn->ld)), col0),
                           .i0 = kir_add(K, pn->i0, row0), .rows = kir_idx(K, rows), .j0 = j0, .cols = cols};
        g->store_block(c, g, pn->bidx, &cb);
    }
}

/* The default A pack: element by element through load_a, k innermost. */
static void pack_a_elements(lower_ctx *c, const gemm_packed *g, const kir_val *bidx, const gemm_a_slice *s)
{
    kir_kernel *K = c->k;
    kir_val z = kir_idx(K, 0), one = kir_idx(K, 1);
    kir_val q = kir_loop_begin(K, z, s->nblk, one);
    kir_val r = kir_loop_begin(K, z, kir_idx(K, s->mr), one);
    kir_val i = gemm_packed_clamp_row(K, g, kir_add(K, kir_add(K, s->i0, kir_mul(K, q, kir_idx(K, s->mr))), r));
    kir_val kk = kir_loop_begin(K, z, s->kc, one);
    kir_val at = gemm_packed_a_at(K, s->kcap, s->mr, q, r, kk);
    kir_store(K, s->ap, at, g->load_a(c, g, bidx, i, kir_add(K, s->kb, kk)));
    kir_loop_end(K);
    kir_loop_end(K);
    kir_loop_end(K);
}

static void unit_body(lower_ctx *c, const kir_val *idx, void *user)
{
    const gemm_packed *g = user;
    kir_kernel *K = c->k;
    const kir_val *bidx = idx;
    int64_t kdeep = g->kc_max && g->kc_max < g->tl.kc ? g->kc_max : g->tl.kc;
    int64_t mr = g->mr, nr = g->tl.nr, kcap = kdeep < g->k ? kdeep : g->k, mcap = mr * g->mb;
    int64_t ld = g->nc + MM_PAD, np = gemm_packed_panels(g);
    kir_val one = kir_idx(K, 1), z = kir_idx(K, 0);
    kir_val i0 = kir_mul(K, idx[g->nb], kir_idx(K, mcap)), j0 = kir_mul(K, idx[g->nb + 1], kir_idx(K, g->nc));
    kir_val rows = g->m % mcap ? min_idx(K, kir_binary(K, KIR_SUB, kir_idx(K, g->m), i0), mcap) : kir_idx(K, mcap);
    kir_val cols = g->n % g->nc ? min_idx(K, kir_binary(K, KIR_SUB, kir_idx(K, g->n), j0), g->nc) : kir_idx(K, g->nc);
    kir_val nblk = g->m % mcap ? kir_binary(K, KIR_DIV, kir_add(K, rows, kir_idx(K, mr - 1)), kir_idx(K, mr)) : kir_idx(K, g->mb);
    kir_val npan = kir_binary(K, KIR_DIV, kir_add(K, cols, kir_idx(K, nr - 1)), kir_idx(K, nr));
    int acc = kir_smem_add(K, g->dt, mcap * ld), ap = g->read_a ? -1 : kir_smem_add(K, g->dt, g->mb * kcap * mr);

    kir_val p0 = kir_mul(K, idx[g->nb + 1], kir_idx(K, g->nc / nr)); /* the unit's first panel */
    if (g->b_input >= 0 && g->b_batched) p0 = kir_add(K, p0, kir_mul(K, g->b_index(c, g, bidx), kir_idx(K, np)));
    kir_val bb = g->b_input >= 0 || g->read_b ? z
                 : kir_mul(K, g->b_index ? g->b_index(c, g, bidx) : z, kir_idx(K, np * g->k * nr));
    kir_val kb = kir_loop_begin(K, z, kir_idx(K, g->k), kir_idx(K, kcap));
    kir_val kc = g->k > kcap ? min_idx(K, kir_binary(K, KIR_SUB, kir_idx(K, g->k), kb), kcap) : kir_idx(K, kcap);
    gemm_a_slice s = {.ap = ap, .kcap = kcap, .mr = mr, .i0 = i0, .rows = rows, .nblk = nblk, .kb = kb, .kc = kc};
    if (!g->read_a) (g->pack_a ? g->pack_a : pack_a_elements)(c, g, bidx, &s);

    /* full row blocks, then (in the unit that has it) the last M % MR rows with
     * a microkernel of that many rows, not a full block of clamped repeats */
    int64_t tail = g->m % mr;
    kir_val nfull = g->m % mcap ? kir_binary(K, KIR_DIV, rows, kir_idx(K, mr)) : kir_idx(K, g->mb);
    bool each = g->store_each && g->store_block && !g->read_b_group && g->k <= kcap;
    mm_panel pn = {.ap = ap, .acc = acc, .ld = ld, .kcap = kcap, .kb = kb, .kc = kc, .p0 = p0, .bb = bb, .i0 = i0,
                   .j0 = j0, .each = each, .bidx = bidx};
    pn.p = kir_loop_begin(K, z, npan, one);
    kir_val q = kir_loop_begin(K, z, nfull, one);
    gemm_rows(c, g, &pn, q, mr);
    kir_loop_end(K);
    if (tail) {
        kir_if_begin(K, kir_binary(K, KIR_LT, kir_mul(K, nfull, kir_idx(K, mr)), rows));
        gemm_rows(c, g, &pn, nfull, tail);
        kir_if_end(K);
    }
    kir_loop_end(K);
    kir_loop_end(K);

    if (each) return;
    if (g->store_block) {
        gemm_c_block cb = {.acc = acc, .ld = ld, .at = z, .i0 = i0, .rows = rows, .j0 = j0, .cols = cols};
        g->store_block(c, g, bidx, &cb);
        return;
    }
    kir_val row = kir_loop_begin(K, z, rows, one);
    kir_val col = kir_loop_begin(K, z, cols, one);
    kir_val v = kir_load(K, acc, kir_add(K, kir_mul(K, row, kir_idx(K, ld)), col));
    g->store(c, g, bidx, kir_add(K, i0, row), kir_add(K, j0, col), v);
    kir_loop_end(K);
    kir_loop_end(K);
}

#define SPAN_UNITS 64
int64_t gemm_packed_two_core_span(int64_t batch, int64_t rb, int64_t mb, int64_t np, int64_t npu)
{
    int64_t mbu = (rb + mb - 1) / mb, ncu = (np + npu - 1) / npu, load[2] = {0, 0};
    if (batch * mbu * ncu > SPAN_UNITS) return 0;
    /* the sizes are at most four: full and last along each axis; larger ones first */
    int64_t rows[2] = {mb, rb - (mbu - 1) * mb}, cols[2] = {npu, np - (ncu - 1) * npu};
    int64_t n_rows[2] = {mbu - 1, 1}, n_cols[2] = {ncu - 1, 1};
    int64_t size[4], count[4];
    for (int i = 0; i < 4; i++) size[i] = rows[i / 2] * cols[i % 2], count[i] = batch * n_rows[i / 2] * n_cols[i % 2];
    for (int done = 0; done < 4; done++) {
        int big = -1;
        for (int i = 0; i < 4; i++)
            if (count[i] >= 0 && (big < 0 || size[i] > size[big])) big = i;
        for (int64_t u = 0; u < count[big]; u++) load[load[1] < load[0]] += size[big];
        count[big] = -1;
    }
    return load[0] > load[1] ? load[0] : load[1];
}

smelt_status gemm_packed_lower(lower_ctx *c, gemm_packed *g)
{
    if (g->m <= 0 || g->n <= 0 || g->k <= 0) /* the callers take empty products elsewhere */
        return ir_node_fail(c->n, SMELT_ERR_INTERNAL, "packed GEMM of an empty product (%lld x %lld x %lld)",
                            (long long)g->m, (long long)g->k, (long long)g->n);
    int64_t nr = g->tl.nr, np = gemm_packed_panels(g);
    g->mr = g->m < g->tl.mr ? g->m : g->tl.mr;
    int64_t rb = (g->m + g->mr - 1) / g->mr;
    /* row blocks per unit: at most MM_MB, as even as whole blocks allow (M 512
     * is 4 units of 22, 22, 22 and 20 blocks, not 3 x 24 + 14) */
    int64_t mb_max = g->mb_max ? g->mb_max : MM_MB, nc_max = g->nc_max ? g->nc_max : g->read_a ? MM_NC_READ : MM_NC_P;
    int64_t mbu = (rb + mb_max - 1) / mb_max;
    g->mb = (rb + mbu - 1) / mbu;
    mbu = (rb + g->mb - 1) / g->mb;
    int64_t batch = 1;
    for (int d = 0; d < g->nb; d++) batch *= g->batch[d];
    /* columns per unit: at most MM_NC_P (MM_NC_READ), fewer (in whole panels)
     * where that leaves under MM_MIN_UNITS units, so small M still spreads over
     * the threads by N: the widest units that make MM_MIN_UNITS (768 columns at
     * M 128, halved from 512 or 256 until there were enough, were 6 units of 128
     * columns, each packing or reading all of A; 4 of 192 keep two cores as
     * busy). With a floor of nc_min columns (an im2col pack) the halving stays,
     * each step checked against the floor. Then panels spread evenly over the
     * units. */
    int64_t npu = nc_max / nr < np ? nc_max / nr : np, others = batch * mbu;
    if (others * ((np + npu - 1) / npu) < MM_MIN_UNITS && g->nc_min > 0) {
        while (npu > 1 && (npu + 1) / 2 * nr >= g->nc_min && others * ((np + npu - 1) / npu) < MM_MIN_UNITS)
            npu = (npu + 1) / 2;
    } else if (others * ((np + npu - 1) / npu) < MM_MIN_UNITS) {
        int64_t want = (MM_MIN_UNITS + others - 1) / others;
        if (want > np) want = np;
        int64_t fit = (np + want - 1) / want; /* want units, or more where ceil falls short */
        if ((np + fit - 1) / fit < want) fit = np / want > 1 ? np / want : 1;
        if (fit < npu) npu = fit;
    }
    int64_t ncu = (np + npu - 1) / npu;
    /* an even number when they are few, so two cores get equal halves (a QKV
     * projection's 2304 columns made 5 units: 3 on one core, 2 on the other) */
    if (batch * mbu * ncu % 2 && batch * mbu * ncu < 4 * MM_MIN_UNITS && ncu < np) ncu++;
    npu = (np + ncu - 1) / ncu;
    /* and whole units that two cores can share evenly: 5 panels of one unit
     * each at M 49 (MobileNetV2's 960 -> 160 at 7x7) put 3 on one core and 2
     * on the other, as 10 panels in units of 3, 3, 3 and 1 put 6 and 4; where
     * the span is over 10% above half the work (at 5%, 9 units of 23 row blocks
     * and one of 16 became 17 units, no faster), the fewest splits of the rows,
     * then of the columns, that bring it closest to half (up to twice the
     * units along each axis) */
    int64_t span = batch * mbu * ncu < 4 * MM_MIN_UNITS ? gemm_packed_two_core_span(batch, rb, g->mb, np, npu) : 0;
    int64_t half = (batch * rb * np + 1) / 2;
    if (span * 10 > half * 11) {
        int64_t best_mb = g->mb, best_npu = npu;
        for (int64_t cu = ncu; cu <= np && cu <= 2 * ncu; cu++)
            for (int64_t mu = mbu; mu <= rb && mu <= 2 * mbu; mu++) {
                int64_t mb = (rb + mu - 1) / mu, pu = (np + cu - 1) / cu, t = gemm_packed_two_core_span(batch, rb, mb, np, pu);
                if (t && t < span) span = t, best_mb = mb, best_npu = pu;
            }
        g->mb = best_mb, npu = best_npu;
        mbu = (rb + g->mb - 1) / g->mb;
    }
    g->nc = npu * nr;
    ir_shape units = {.rank = g->nb + 3};
    for (int d = 0; d < g->nb; d++) units.dim[d] = g->batch[d];
    units.dim[g->nb] = mbu;
    units.dim[g->nb + 1] = (np + npu - 1) / npu;
    units.dim[g->nb + 2] = 1;
    lower_parallel_for(c, &units, 2 * g->mr * g->mb * g->nc * g->k, unit_body, g);
    return c->k ? SMELT_OK : ir_node_fail(c->n, SMELT_ERR_NOMEM, "out of memory");
}
