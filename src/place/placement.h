/*
 * place/placement.h — which device runs each region: the policy the user
 * names (`--place POLICY`, smelt_options.placement) and overrides.
 *
 *   fallback  (the default): each region on the first device of the list that
 *             can run it. place_region_candidates gives the order to try; the
 *             program (api/) lowers the region for each candidate's target in
 *             turn and takes the first that lowers within that device's
 *             limits (an op with no lowering for the target kind, a kernel over
 *             its workgroup memory), as execution providers fall back.
 *   overrides `KEY=DEVICE,...` with KEY a node name, an op type or `*` (every
 *             other region): the named device is tried first, then the list
 *             in order (a region it cannot run still runs). A node name wins
 *             over an op type, an op type over `*`. A region matches a node
 *             name when one of its nodes has that name, an op type when its
 *             root is of that type.
 *   split     data parallel (api/split.c): the batch dimension of the inputs
 *             divided across the devices in proportion to their speed,
 *             measured at compile time; `split:W0:W1:...` fixes the weights by
 *             hand (one positive integer per device, in list order).
 *   cost      each region on the device that minimises the estimated finish
 *             time of the whole graph (place/cost.h); the candidates after
 *             it are the list in order, as for fallback.
 *   cost:table  cost by the table's speeds (no calibration runs).
 *   POLICY,overrides  `fallback,KEY=DEVICE,...` is the overrides alone;
 *             `cost,KEY=DEVICE,...` pins the regions the overrides name to
 *             their devices and places the rest by cost around them.
 *             `split,...` with overrides is refused naming the rule: a split
 *             runs each batch share whole on one device, so an override
 *             could move no region of it.
 * An unknown policy, split weights that are not one positive integer per
 * device, an override naming a device not in the list, or a key that is
 * neither an op type nor a node of the model is SMELT_ERR_INVALID_ARG
 * naming it.
 */
#ifndef SMELT_PLACE_PLACEMENT_H
#define SMELT_PLACE_PLACEMENT_H

#include "fuse/fuse.h"
#include "ir/ir.h"
#include "place/devices.h"

#define PLACE_MAX_OVERRIDES 32

typedef struct place_override {
    char key[96];
    int device;  /* index into place_devices */
} place_override;

typedef enum place_policy_kind { PLACE_FALLBACK, PLACE_SPLIT, PLACE_COST } place_policy_kind;

typedef struct place_policy {
    place_policy_kind kind;
    place_override over[PLACE_MAX_OVERRIDES];
    int n_over;
    int star;    /* device of `*`, or -1 */
    int split_weight[PLACE_MAX_DEVICES]; /* split:W0:W1:... per device; all 0: measure */
    const int *assign; /* cost (api/): per region index, the device it chose, or NULL */
    bool cost_table;   /* `cost:table`: the table's speeds, not measured ones (place/cost.h) */
} place_policy;

/* Parse `text` (NULL or "" is fallback) against the devices of d. */
smelt_status place_policy_parse(const char *text, const place_devices *d, place_policy *out);

/* Every override key names an op type or a node of g. */
smelt_status place_policy_check(const place_policy *pol, const ir_graph *g);

/* The device an override gives region r (a node name's, else its root op
 * type's, else `*`'s), or -1. */
int place_region_override(const place_policy *pol, const ir_graph *g, const fuse_region *r);

/* The devices to try for region r (index ri), best first (every device once):
 * an override's device, else the cost assignment's, then the list; their number. */
int place_region_candidates(const place_policy *pol, const place_devices *d, const ir_graph *g, const fuse_region *r, int ri,
                            int cand[PLACE_MAX_DEVICES]);

#endif
