/*
 * target.c — the target rows (place/target.h).
 */
#include "place/target.h"

const target_info target_cpu = {"cpu", 8, 1, 0, 0, LOCALS_HYBRID, 0, true};
/* PoCL and GPU OpenCL alike: 128 threads. smem_limit is the 32 KiB every device offers,
 * and max_wg the 256 threads most do, used when compiling without the device;
 * program.c replaces them by the opened device's own (CL_DEVICE_LOCAL_MEM_SIZE
 * and CL_DEVICE_MAX_WORK_GROUP_SIZE, CUDA's shared memory and threads per block). */
const target_info target_opencl = {"opencl", 1, 128, 32768, 256, LOCALS_HYBRID, 0, false};
/* NVRTC compiles hybrid (single-assignment) source ~30% faster than reused slots. */
const target_info target_cuda = {"cuda", 1, 256, 48 * 1024, 1024, LOCALS_HYBRID, 0, false};
