"""One-node MatMul models for bench/gemm.c: A [M, K] an input, B [K, N] a constant
initializer (as weights are in real models), written as OUT/mm_MxKxN.onnx
with B's bytes beside it (OUT/mm_MxKxN.B.bin) for the BLAS run."""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SIZES = [(512, 512, 512), (1024, 1024, 1024), (128, 768, 3072), (128, 3072, 768)]


def main(out):
    rng = np.random.default_rng(7)
    for m, k, n in SIZES:
        b = rng.standard_normal((k, n), dtype=np.float32)
        g = helper.make_graph(
            [helper.make_node("MatMul", ["A", "B"], ["Y"])], "mm",
            [helper.make_tensor_value_info("A", TensorProto.FLOAT, [m, k])],
            [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [m, n])],
            [numpy_helper.from_array(b, "B")])
        model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        onnx.save(model, f"{out}/mm_{m}x{k}x{n}.onnx")
        b.tofile(f"{out}/mm_{m}x{k}x{n}.B.bin")  # the same weights, raw, for the BLAS run


if __name__ == "__main__":
    main(sys.argv[1])
