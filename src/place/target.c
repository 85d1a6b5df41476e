/*
 * target.c — the target rows (place/target.h).
 */
#include "place/target.h"

const target_info target_cpu = {"cpu", 8, 1, 0, LOCALS_HYBRID, 0, true};
/* PoCL and GPU OpenCL alike: 128 threads. smem_limit is the 32 KiB every device offers,
 * used when compiling without the device; program.c replaces it by the opened
 * device's own size (CL_DEVICE_LOCAL_MEM_SIZE, CUDA's shared memory per block). */
const target_info target_opencl = {"opencl", 1, 128, 32768, LOCALS_HYBRID, 0, false};
/* NVRTC compiles hybrid (single-assignment) source ~30% faster than reused slots. */
const target_info target_cuda = {"cuda", 1, 256, 48 * 1024, LOCALS_HYBRID, 0, false};
