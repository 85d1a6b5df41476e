/*
 * cuda.h — compile-only access to NVRTC, for machines without a GPU.
 */
#ifndef SMELT_RT_CUDA_H
#define SMELT_RT_CUDA_H

#include <stdbool.h>

#include "smelt.h"

/* Whether libnvrtc could be loaded. */
bool rt_cuda_nvrtc_available(void);

/* Compile CUDA C `source` with NVRTC for `arch` (e.g. "sm_90"). Fails with
 * SMELT_ERR_COMPILE on any error or warning (the message holds NVRTC's log),
 * SMELT_ERR_DEVICE when NVRTC is absent. */
smelt_status rt_cuda_check(const char *source, const char *arch);

#endif
