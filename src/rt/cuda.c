/*
 * cuda.c — the CUDA device (rt/device.h): placeholder until its runtime lands.
 */
#include <stdio.h>

#include "core/diag.h"
#include "rt/device.h"

static smelt_status cu_open(int index, int threads, rt_device **out)
{
    (void)threads;
    (void)out;
    return diag_fail(SMELT_ERR_DEVICE, "device 'cuda:%d' is not supported by this build yet", index);
}

const rt_device_ops rt_cuda_ops = {"cuda", RT_LANG_CUDA, false, cu_open, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
