/* fuzz_model.c — libFuzzer target: bytes -> smelt_model_load_memory ->
 * smelt_program_compile up to generated source (SMELT_STAGE_SOURCE: no system
 * compiler, no device) -> free. Symbolic input dims are bound to 2 and every
 * input gets zeroed data, so shape-deciding inputs fold like a real call's.
 * The input's size picks the target (C, OpenCL C or CUDA C: their lowerings
 * differ) and, one time in four, --no-fuse, so a replayed input takes the same
 * path again.
 * Built by `make fuzz` with clang -fsanitize=fuzzer,address,undefined. */
#include <stdint.h>
#include <stdlib.h>

#include "smelt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Inputs larger than this get no data (their shape still binds). */
#define FUZZ_INPUT_BYTES_MAX (1 << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    smelt_model *m = NULL;
    if (smelt_model_load_memory(data, size, NULL, &m) != SMELT_OK) return 0;

    int n = smelt_model_input_count(m);
    smelt_tensor *in = calloc(n > 0 ? (size_t)n : 1, sizeof *in);
    int ok = in != NULL;
    for (int i = 0; ok && i < n; i++) {
        smelt_value_info info;
        if (smelt_model_input_info(m, i, &info) != SMELT_OK) {
            ok = 0;
            break;
        }
        in[i].name = info.name;
        in[i].dtype = info.dtype;
        in[i].rank = info.rank;
        int64_t bytes = (int64_t)smelt_dtype_size(info.dtype);
        for (int d = 0; d < info.rank; d++) {
            in[i].shape[d] = info.shape[d] < 0 ? 2 : info.shape[d];
            if (bytes <= FUZZ_INPUT_BYTES_MAX && in[i].shape[d] <= FUZZ_INPUT_BYTES_MAX) bytes *= in[i].shape[d];
            else bytes = FUZZ_INPUT_BYTES_MAX + 1;
        }
        if (bytes <= FUZZ_INPUT_BYTES_MAX) in[i].data = calloc(1, bytes > 0 ? (size_t)bytes : 1);
    }
    if (ok) {
        smelt_options opt;
        smelt_options_init(&opt);
        static const char *const devices[] = {"cpu", "opencl", "cuda"};
        opt.devices = devices[size % 3];
        opt.no_fuse = size / 3 % 4 == 0;
        opt.threads = 1;
        opt.stop_after = SMELT_STAGE_SOURCE;
        smelt_program *p = NULL;
        if (smelt_program_compile(m, &opt, n, in, &p) == SMELT_OK) smelt_program_free(p);
    }
    for (int i = 0; in && i < n; i++) free(in[i].data);
    free(in);
    smelt_model_free(m);
    return 0;
}
