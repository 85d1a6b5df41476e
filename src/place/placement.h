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
 * `split` and `cost` are named by issue 18 but not built: asking for them is
 * SMELT_ERR_INVALID_ARG saying so, as is an unknown policy, an override
 * naming a device not in the list, or a key that is neither an op type nor
 * a node of the model.
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

typedef struct place_policy {
    place_override over[PLACE_MAX_OVERRIDES];
    int n_over;
    int star;    /* device of `*`, or -1 */
} place_policy;

/* Parse `text` (NULL or "" is fallback) against the devices of d. */
smelt_status place_policy_parse(const char *text, const place_devices *d, place_policy *out);

/* Every override key names an op type or a node of g. */
smelt_status place_policy_check(const place_policy *pol, const ir_graph *g);

/* The devices to try for region r, best first (every device once); their number. */
int place_region_candidates(const place_policy *pol, const place_devices *d, const ir_graph *g, const fuse_region *r,
                            int cand[PLACE_MAX_DEVICES]);

#endif
