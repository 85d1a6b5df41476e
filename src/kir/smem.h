/*
 * kir/smem.h — workgroup memory as a stack: where each workgroup buffer of a
 * kernel lives in the one byte array the emitters declare (OpenCL __local,
 * CUDA __shared__, a stack array in C).
 *
 * A buffer is live from its first write to its last read (an access inside a
 * loop that the buffer's life crosses stretches the life to the loop's whole
 * extent, since every iteration repeats it). Buffers are pushed on the stack in
 * order of first write. Before a push, the allocations on top of the stack are
 * popped while their last read is before the new first write *and* a barrier
 * lies between the two (threads of the workgroup may otherwise still read the
 * old buffer while others write the new one); when both lie inside one loop,
 * a barrier must also separate them around the loop's back edge. A barrier
 * counts only when it runs whenever both accesses do (it is not inside a
 * block that holds neither).
 *
 * promote_reuse: a buffer so marked gets one barrier inserted right after its
 * last read (hoisted out of blocks that do not contain the next buffer's first
 * write) when no barrier lies between that read and the next first write. No
 * barrier is inserted anywhere else.
 *
 * Offsets are multiples of SMEM_ALIGN. k->smem_bytes is the peak (the stack's
 * high-water mark); smem_total_bytes() is what the buffers would need with no
 * reuse at all.
 *
 * requires: a kernel that passes kir_verify. guarantees: two buffers whose
 * lives overlap, or that no barrier separates, never share a byte; the kernel
 * still passes kir_verify.
 */
#ifndef SMELT_KIR_SMEM_H
#define SMELT_KIR_SMEM_H

#include "kir/kir.h"

#define SMEM_ALIGN 16

typedef struct smem_report {
    int64_t peak;           /* bytes with reuse (== k->smem_bytes) */
    int64_t total;          /* bytes without reuse */
    int barriers_inserted;  /* by promote_reuse */
    int n_buffers;
} smem_report;

/* Insert promote_reuse barriers, then lay out every workgroup buffer (sets
 * bufs[i].smem_offset and k->smem_bytes). report may be NULL. */
smelt_status smem_assign(kir_kernel *k, smem_report *report);

/* Bytes of workgroup memory without reuse (each buffer aligned). */
int64_t smem_total_bytes(const kir_kernel *k);

#endif
