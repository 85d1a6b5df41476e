#!/usr/bin/env python3
"""Two independent conv branches joined by an Add: the model where device streams overlap.

    .venv/bin/python bench/branches.py [OUT_DIR]      (default: build/bench)

Writes OUT_DIR/branches/model.onnx and test_data_set_0 (reference output from onnxruntime), the
layout `smelt check` and `smelt bench DIR` read. x [1,32,56,56] feeds branch a (Conv 'a0'..'a3',
3x3, 32 -> 32 channels, pad 1, each with a Relu 'ra0'..) and branch b (Conv 'b0'..'b3', the same
shapes, other weights); y = a + b. Placing branch b on a second device
(`--place 'b0=D,b1=D,b2=D,b3=D'`) gives two chains of four conv kernels with no data between them
until the Add: one transfer of 401408 bytes (b's last output) per run. Weights and input from a
fixed seed.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

C, H, W, DEPTH = 32, 56, 56, 4


def build(out_dir):
    rng = np.random.default_rng(18)
    nodes, inits = [], []
    ends = []
    for br in "ab":
        prev = "x"
        for i in range(DEPTH):
            w = (rng.standard_normal((C, C, 3, 3)) * (1.0 / np.sqrt(C * 9))).astype(np.float32)
            b = (rng.standard_normal(C) * 0.1).astype(np.float32)
            inits += [numpy_helper.from_array(w, f"w{br}{i}"), numpy_helper.from_array(b, f"bias{br}{i}")]
            nodes.append(helper.make_node("Conv", [prev, f"w{br}{i}", f"bias{br}{i}"], [f"c{br}{i}"], name=f"{br}{i}",
                                          kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
            nodes.append(helper.make_node("Relu", [f"c{br}{i}"], [f"r{br}{i}"], name=f"r{br}{i}"))
            prev = f"r{br}{i}"
        ends.append(prev)
    nodes.append(helper.make_node("Add", ends, ["y"], name="join"))
    graph = helper.make_graph(nodes, "branches", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, C, H, W])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, C, H, W])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    d = os.path.join(out_dir, "branches")
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    onnx.save(model, os.path.join(d, "model.onnx"))
    x = rng.standard_normal((1, C, H, W)).astype(np.float32)
    import onnxruntime as ort
    y = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    for name, arr, kind in (("x", x, "input_0"), ("y", y, "output_0")):
        t = numpy_helper.from_array(arr, name)
        with open(os.path.join(d, "test_data_set_0", kind + ".pb"), "wb") as f:
            f.write(t.SerializeToString())
    print(f"branches: {d}")


if __name__ == "__main__":
    build(sys.argv[1] if len(sys.argv) > 1 else "build/bench")
