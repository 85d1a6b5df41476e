/*
 * kir/clean.h — cleanup passes over a built kernel, so the emitted source
 * reads like code a person would write.
 *
 * Each pass keeps the kernel's meaning: every buffer element stored, and
 * every value a store, loop bound or condition depends on, is the same
 * before and after. Passes only drop, merge or move statements and fold
 * values into constants; they never add loads or stores, so kir_spans run
 * afterwards gives spans no wider than before.
 *
 * kir_clean runs them in one fixed order (kir/clean.c lists it), with
 * kir_verify after each unless NDEBUG is defined.
 */
#ifndef SMELT_KIR_CLEAN_H
#define SMELT_KIR_CLEAN_H

#include "kir/kir.h"

/* requires: kir_verify(k) passes.
 * guarantees: kir_verify(k) passes; every value defined by a statement is
 * used, every variable set is read; no loop or if has an empty body. */
smelt_status kir_clean_dead(kir_kernel *k);

/* requires: kir_verify(k) passes.
 * guarantees: no loop with constant bounds runs exactly once (its body
 * stands in its place, its value a constant; parallel loops spread over
 * threads and stream loops stay); no i64 add, sub or mul has only constant
 * operands, nor adds 0 or multiplies by 0 or 1. */
smelt_status kir_clean_one_trip(kir_kernel *k);

/* requires: kir_verify(k) passes.
 * guarantees: no two statements define the same pure expression (the same
 * op on the same operands, or a load of the same buffer element, or a read
 * of the same variable, with no store to it between) where the first is in
 * scope at the second; the second's uses name the first. Leaves the dead
 * duplicates for kir_clean_dead. */
smelt_status kir_clean_cse(kir_kernel *k);

/* requires: kir_verify(k) passes.
 * guarantees: a value that does not depend on a loop's induction value (nor
 * on a variable) is defined before the loop, not in it, when that is safe:
 * only out of loops (never out of an if, nor a stream loop); a load only when
 * the loop neither stores to its buffer nor holds a barrier; a load, integer
 * division or remainder, shift or conversion only out of a loop with constant
 * bounds that runs at least once. Statements only move: none is added or
 * dropped, and the relative order of the moved ones is kept. */
smelt_status kir_clean_licm(kir_kernel *k);

/* The passes in order; `k` is left verified. */
smelt_status kir_clean(kir_kernel *k);

#endif
