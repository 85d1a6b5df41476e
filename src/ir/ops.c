#include "ir/ops.h"

#include <string.h>

static const char *const kind_names[] = {
    "elementwise", "broadcast", "injective", "reduction", "contraction", "opaque",
};
_Static_assert(sizeof kind_names / sizeof kind_names[0] == OPK_COUNT, "kind_names");

op_id op_lookup(const char *op_type)
{
    for (int i = 0; i < OP_COUNT; i++)
        if (strcmp(op_table[i].name, op_type) == 0) return (op_id)i;
    return OP_INVALID;
}

const char *op_kind_name(op_kind k) { return (unsigned)k < OPK_COUNT ? kind_names[k] : "?"; }
