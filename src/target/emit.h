/*
 * emit.h — source emitters: Kernel IR → C-like source text.
 *
 * One emitter serves every C-like target; targets differ only in a small
 * dialect table (qualifiers, address spaces, builtins, how a kernel gets its
 * workgroup index). The emitter knows nothing about ONNX: it prints Kernel IR.
 * Names of locals come from kir/locals.h; names from the model appear only
 * in comments, sanitized to [A-Za-z0-9_ .,:'+-()=] so no model text can end a
 * comment or reach code.
 *
 * Every kernel of the C dialect has the signature
 *     void smelt_k<id>(int64_t wg, void *const *bufs)
 * with buffer i at bufs[i]; the runtime calls it once per workgroup.
 * OpenCL kernels take, for each parameter buffer i in order, the pair
 * (__global T *g<i>, long o<i>): a cl_mem and a byte offset into it. CUDA
 * kernels (extern "C" __global__) take one device pointer per buffer. Both
 * read the workgroup index and thread index from builtins; a parallel loop
 * becomes `for (i = lo + lid; i < hi; i += wg_size)`; workgroup buffers are
 * views into one byte array (__local / __shared__) at kir/smem.c's
 * offsets, and a comment above each kernel shows that layout.
 */
#ifndef SMELT_TARGET_EMIT_H
#define SMELT_TARGET_EMIT_H

#include "core/strbuf.h"
#include "kir/kir.h"
#include "kir/locals.h"

typedef enum emit_lang {
    EMIT_C,
    EMIT_OPENCL,
    EMIT_CUDA,
    EMIT_LANG_COUNT
} emit_lang;

/* Append kernel k to sb. `alias` (NULL: none) is what the memory plan
 * decided about in-place reuse, per buffer of k: -1, or the written buffer
 * whose memory this read-only buffer shares; such a buffer is bound to that
 * buffer's pointer instead of a second `restrict` pointer to one memory. */
smelt_status emit_kernel(strbuf *sb, const kir_kernel *k, emit_lang lang, locals_strategy s, const int *alias);

/* A whole translation unit: prelude (includes, helpers such as erf and
 * round-half-even) and every kernel in order; alias[i] is kernel i's table
 * for emit_kernel (alias NULL: no in-place reuse). Returns malloc'd text in *out. */
smelt_status emit_program(kir_kernel *const *kernels, int n, emit_lang lang, locals_strategy s,
                          const int *const *alias, char **out);

/* Name of kernel k's function ("smelt_k3") into buf. */
const char *emit_kernel_name(const kir_kernel *k, char *buf, size_t cap);

#endif
