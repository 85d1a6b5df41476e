/*
 * place/cost.h — the `cost` placement: each region on the device that
 * minimises the estimated finish time of the whole graph.
 *
 * The model. A region r costs on device d
 *     launch(d) + max(flops(r) / flops_per_ms(d), bytes(r) / bytes_per_ms(d))
 * (compute- or memory-bound, whichever is slower), and a tensor crossing
 * from the device of its producer to another costs
 *     link_ms + bytes / link_bytes_per_ms
 * with `bytes` the sub-range the consumer reads (its kernels' spans, as
 * plan/transfers.c copies it); a graph input read, or an output written, on
 * a device without host memory costs the same link once. Each device runs
 * its own command stream on a host thread of its own (api/streams.c), so
 * devices overlap; a device marked `sync` (none of cost_device_table's
 * rows since the streams; kept for a runtime that issues every device's
 * commands from one thread) would delay every device until its dispatch
 * ends.
 *
 * The assignment (cost_assign), greedy, not exact:
 *   1. list scheduling by earliest finish time over the region DAG, in
 *      region order (a topological order): each region goes to the device,
 *      among those that can run it, on which it would finish first given
 *      where its producers finished and what reaching it costs (ties: the
 *      earlier device of the list);
 *   2. every region on one device, for each device that can run them all,
 *      replaces it when that run is no longer (a tie: no copies) (step 1 is myopic: a fast device
 *      taken early can strand a chain behind a region it cannot run);
 *   3. up to three passes of single moves (region r to device d) kept when
 *      the simulated run gets shorter.
 *   Cost: O(passes x regions x devices x (regions + edges)). A chain stays on one device when moving its
 * tensor costs more than the faster device saves; two independent heavy
 * branches go to two devices that run concurrently when the transfers are
 * cheap. Pipelining consecutive runs (run k+1's first regions while run k's
 * last ones finish) is not modelled: a run starts when the last one ended.
 *
 * Speeds. Measured where the program runs (api/place_cost.c): the whole
 * model compiled once per target class with every region on that class's
 * first device, run on zero inputs (one warm run, then the best of three)
 * with a clock around each dispatch; a region's time is the sum of its
 * kernels' (cost_graph.ms), and a region that class cannot run (it fell
 * back to another device) is marked so (cost_graph.can). Else (a program
 * stopped before running anything, `cost:table`) a table per kind
 * (cost_device_table): CPU lanes x threads, PoCL's CPU devices (an OpenCL
 * device whose identity names a PoCL CPU driver) far slower per FLOP than
 * smelt's C, a GPU fast with a slow link through host memory. Copies are
 * costed by measured links where the region times are measured (a copy to
 * each device and back through host memory at 64 KiB, 1 MiB and 4 MiB: the
 * fixed part and the speed), else by the table's. The measurements are kept
 * in the compile cache (api/place_calib.c): a second compile of the same
 * model, options, shapes and devices reads them back. The assignment places
 * one run; cost_period then says how often runs can end when consecutive
 * ones overlap (smelt_program_submit): the busiest device's share.
 */
#ifndef SMELT_PLACE_COST_H
#define SMELT_PLACE_COST_H

#include <stdbool.h>
#include <stdint.h>

#include "fuse/fuse.h"
#include "ir/ir.h"
#include "place/devices.h"

typedef struct cost_device {
    double flops_per_ms, bytes_per_ms, launch_ms;
    double link_bytes_per_ms, link_ms; /* a copy to or from this device */
    bool host_memory;                  /* graph inputs and outputs need no copy */
    bool sync;                         /* a dispatch holds the host until it ends */
} cost_device;

typedef struct cost_edge {
    int from, to;    /* regions, from < to */
    int64_t bytes;   /* what `to` reads of what `from` wrote */
} cost_edge;

typedef struct cost_graph {
    int n_regions;
    const double *flops;        /* per region */
    const double *bytes;        /* per region: what its kernels read and write */
    const int64_t *host_bytes;  /* per region: graph inputs it reads and outputs it writes (NULL: none) */
    const bool *can;            /* [r * n_dev + d]: d can run r (NULL: every device) */
    const double *ms;           /* [r * n_dev + d]: region r's measured time on d (NULL: the estimate above) */
    const cost_edge *edges;
    int n_edges;
    int n_dev;
    cost_device dev[PLACE_MAX_DEVICES];
} cost_graph;

/* Per region its device (out[n_regions]); the estimated time of one run
 * (makespan, may be NULL). SMELT_ERR_INVALID_ARG when a region can run on no
 * device or an edge goes backwards. */
smelt_status cost_assign(const cost_graph *g, int *out, double *makespan);

/* The time between two consecutive runs' ends when runs overlap
 * (smelt_program_submit): the busiest device's regions and its halves of
 * the copies, for the assignment `assign`. */
double cost_period(const cost_graph *g, const int *assign);
/* The table speed of device d. */
cost_device cost_device_table(const place_device *d, int threads);

/* The FLOPs of region r of g (products: 2 x MACs; other nodes one per
 * output element). */
double cost_region_flops(const ir_graph *g, const fuse_region *r);

#endif
