/*
 * kir/locals.h — how a kernel's SSA values become local variables in emitted source.
 *
 * One interface, two strategies; emitters never choose names themselves:
 *
 *   REUSE   every value and mutable var gets a slot; a slot whose value is dead
 *           is recycled for a later value of the same dtype. Slots are declared
 *           once at the top of the kernel and assigned where values are defined.
 *           Fewest locals; suits targets whose compilers do their own SSA
 *           (gcc, clang, NVRTC), and keeps source short.
 *   HYBRID  every immutable value is a single-assignment `const` local declared
 *           at its definition; only mutable vars (accumulators) share slots,
 *           recycled when their live ranges do not overlap. Source reads like
 *           SSA, which helps simpler downstream compilers and readers.
 *
 * Shadows. A target may write a block of code beside the scalar loop that
 * computes the same values another way: a vector form (one value per 16
 * lanes) or several interleaved copies of a loop's body. Their values are
 * shadows of the kernel's values, each a single-assignment `const` declared
 * in that block whatever the strategy (the block is straight-line code, so
 * nothing would be recycled), named by kir_locals_shadow.
 *
 * Values printed inline (constants, the workgroup index, loop induction values)
 * get no slot. A value defined outside a loop and used inside it is live until
 * the loop's end (it is read on every iteration).
 *
 * requires: a kernel that passes kir_verify.
 * guarantees: two values (or vars) whose live ranges overlap never share a slot;
 *             slots hold one dtype each.
 */
#ifndef SMELT_KIR_LOCALS_H
#define SMELT_KIR_LOCALS_H

#include <stdbool.h>
#include <stddef.h>

#include "kir/kir.h"
#include "place/target.h" /* locals_strategy: each target names its default */

typedef struct kir_locals {
    locals_strategy strategy;
    int *val_slot;        /* per value: slot, or -1 when printed inline */
    bool *val_const;      /* per value: declared `const` at its definition */
    int *var_slot;        /* per mutable var: slot */
    int n_slots;
    smelt_dtype *slot_type;
    bool *slot_at_top;    /* declared once at the kernel's top (else at definition) */
} kir_locals;

/* Assign locals for k; arrays are allocated in arena `a`. */
smelt_status kir_locals_assign(const kir_kernel *k, locals_strategy s, arena *a, kir_locals *out);

/* The name of a shadow of value v (see "Shadows"): a vector (`x<v>`) or
 * scalar (`y<v>`) local, `_<copy>` added for interleaved copy `copy` (-1: not
 * in interleaved copies). Emitters keep the letters x and y out of their slot
 * names, so a shadow never hides a slot. Returns buf. */
const char *kir_locals_shadow(kir_val v, bool vector, int copy, char *buf, size_t cap);

/* Number of distinct local declarations the emitted kernel will contain. */
int kir_locals_declared(const kir_locals *l);

#endif
