/* fuzz_tensor.c — libFuzzer target: bytes -> the tensor-file reader (.npy or a
 * serialized TensorProto, chosen by content as for a file). External data is
 * refused (no base directory), so the input alone decides what is read.
 * Built by `make fuzz` with clang -fsanitize=fuzzer,address,undefined. */
#include <stddef.h>
#include <stdint.h>

#include "onnx/onnx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    smelt_tensor t;
    if (tensor_file_read_memory(data, size, "fuzz input", NULL, &t) == SMELT_OK) {
        /* Touch every byte the reader claims to hand out, so a short buffer shows. */
        int64_t n = smelt_tensor_numel(&t);
        size_t bytes = (size_t)n * smelt_dtype_size(t.dtype);
        volatile uint8_t sum = 0;
        for (size_t i = 0; i < bytes; i++) sum += ((const uint8_t *)t.data)[i];
        (void)sum;
        tensor_file_free(&t);
    }
    return 0;
}
