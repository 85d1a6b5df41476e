/*
 * place/devices.h — the devices a program runs on, their targets, and the
 * target classes executables are built for (DESIGN.md: "Executables are
 * deduplicated by target, not by device").
 *
 * A device list (`--device cpu,opencl:0,opencl:1`, smelt_options.devices) is
 * parsed into place_device rows: kind, index and the target row of the kind
 * (place/target.h). The program (api/) opens each device and replaces the
 * row's portable limits by the device's own (workgroup memory, the host
 * compiler's vector width) and its `ident` (what decides compiled code:
 * ISA/features, driver); a program stopped before the end opens nothing
 * and keeps the portable rows.
 *
 * Target classes: two devices whose targets are translation-compatible —
 * the same language, vector width, workgroup size, workgroup-memory size and
 * identity, so the same source and the same binary come out — are joined
 * (union-find); every region is lowered, emitted and built once per class
 * that runs it. Two identical PoCL devices are one class; cpu + opencl are
 * two.
 *
 * requires: nothing (names only). guarantees: every device's `cls` is in
 * [0, n_classes), classes are numbered in order of their first device.
 */
#ifndef SMELT_PLACE_DEVICES_H
#define SMELT_PLACE_DEVICES_H

#include "core/diag.h"
#include "place/target.h"

#define PLACE_MAX_DEVICES 8

typedef enum place_kind { PLACE_CPU, PLACE_OPENCL, PLACE_CUDA, PLACE_KIND_COUNT } place_kind;

typedef struct place_device {
    char spec[24];       /* as the runtime opens it: "cpu:1", "opencl:0" */
    place_kind kind;
    int index;           /* the N of kind:N */
    target_info target;  /* the kind's row; api/ fills the opened device's limits */
    char ident[256];     /* what decides compiled code (rt_device.ident); the kind until opened */
    int cls;             /* its target class */
} place_device;

typedef struct place_devices {
    place_device dev[PLACE_MAX_DEVICES];
    int n;
    int n_classes;
    int class_first[PLACE_MAX_DEVICES]; /* per class: its first device (whose target lowers for it) */
} place_devices;

/* Parse a comma list of device names (NULL or "" is "cpu"): `cpu`, `cpu:N`,
 * `opencl`, `opencl:N`, `cuda`, `cuda:N` (a plain kind is index 0). An
 * unknown name, an empty entry, a device named twice or more than
 * PLACE_MAX_DEVICES is SMELT_ERR_DEVICE naming it. Classes are computed
 * from the portable rows (place_classes again after filling the devices in). */
smelt_status place_devices_parse(const char *list, place_devices *out);

/* Join translation-compatible devices into target classes (union-find). */
void place_classes(place_devices *d);

/* Lower the workgroup memory of devices to what `limits` says, for testing
 * fallback on a device that cannot run a kernel (SMELT_DEVICE_SMEM): either
 * BYTES, for every device that has workgroup memory (smem_limit > 0: OpenCL,
 * CUDA), or a comma list of DEVICE=BYTES naming devices of the list
 * ("opencl:0=1024,opencl:1=65536"; "opencl" is "opencl:0"; a device not in
 * this list is skipped, as a split's shares compile one device each). A limit only ever
 * lowers the device's own (the smaller wins), and a CPU device, whose kernels
 * use no workgroup memory, keeps none. NULL or "" changes nothing; anything
 * else is SMELT_ERR_INVALID_ARG naming the entry. Classes are not recomputed
 * (place_classes after). */
smelt_status place_devices_limit_smem(place_devices *d, const char *limits);

/* The same for the threads one workgroup may have (SMELT_DEVICE_WG: N or
 * DEVICE=N,...): a kernel with more (the tiled GEMM's 16x16) cannot run
 * there and falls back; the target's own workgroup size (elementwise and
 * reduction kernels) comes down to the largest power of two within it. */
smelt_status place_devices_limit_wg(place_devices *d, const char *limits);

/* The opened device's thread limit (0: none) into x's target, its workgroup
 * size brought within it as above. */
void place_device_fit_wg(place_device *x, int max_wg);

const char *place_kind_name(place_kind k);

#endif
