#!/usr/bin/env python3
"""Build end-to-end test models written in the older forms of opsets 7 to 12.

    .venv/bin/python tests/models/old_opsets.py [OUT_DIR]     (default: build/models)

Same layout and reference (onnxruntime) as build_models.py, whose helpers it uses. onnxruntime
runs opsets from 7 on, so these cover the attribute forms that later became inputs and the
version-dependent semantics smelt reads from the model's opset; opsets 1 to 6 are covered by
the upgrade unit tests (tests/unit/test_onnx.c) and Debian's libonnx-testdata (conf-debian).

    old_op7     Conv, BatchNormalization-7 (spatial), Upsample-7 (scales attribute), Pad-2,
                Clip-6, Dropout-7, Softmax-7 on 4-D (2-D coercion at axis 1), Split-2,
                Slice-1, Unsqueeze-1, Squeeze-1, ReduceMean-1, TopK-1, Gemm-7, Flatten
    old_op9     Upsample-9 (scales input, linear), MaxPool-8, Sum-8 broadcasting
    old_op10    Resize-10 (asymmetric; linear, and nearest down- and upsampling), Slice-10
                (inputs), TopK-10 (k input)
    old_op11    Resize-11 tf_half_pixel_for_nn and align_corners, Clip-11, Pad-11,
                LogSoftmax-11 (2-D coercion), ReduceSum-11 (axes attribute)
    old_experimental  ImageScaler, Crop (border; border and scale), Affine, ScaledTanh,
                ParametricSoftplus: experimental ops of opsets 1..9 (opset 8)
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from build_models import ROOT, Builder, write_case  # noqa: E402

F32 = TensorProto.FLOAT


def old_op7():
    b = Builder(71)
    x = "x"
    h = b.op("Conv", [x, b.weight([4, 3, 3, 3]), b.weight([4], 0.1)], pads=[1, 1, 1, 1])
    h = b.op("BatchNormalization", [h, b.const(np.linspace(0.5, 1.5, 4).astype(np.float32)),
                                    b.weight([4], 0.1), b.weight([4], 0.1),
                                    b.const(np.linspace(0.5, 2, 4).astype(np.float32))],
             spatial=1, epsilon=1e-3)
    h = b.op("Upsample", [h], scales=[1.0, 1.0, 2.0, 2.0], mode="nearest")       # [1,4,8,8]
    h = b.op("Pad", [h], pads=[0, 0, 1, 0, 0, 0, 0, 1], mode="reflect")          # [1,4,9,9]
    h = b.op("Clip", [h], min=-0.5, max=0.75)
    h = b.op("Dropout", [h], ratio=0.3)
    sm = b.op("Softmax", [h], axis=1)                                            # coerced to [1, 324]
    a, c = b.op("Split", [sm], n_out=2, axis=1, split=[1, 3])
    s = b.op("Slice", [c], starts=[1, 2], ends=[3, 100], axes=[1, 3])            # [1,2,9,7]
    r = b.op("ReduceMean", [s], axes=[2], keepdims=0)                            # [1,2,7]
    u = b.op("Unsqueeze", [r], axes=[0])                                         # [1,1,2,7]
    q = b.op("Squeeze", [u], axes=[0, 1])                                        # [2,7]
    vals, idx = b.op("TopK", [q], n_out=2, k=3, axis=1)
    f = b.op("Flatten", [a], axis=1)                                             # [1,81]
    g = b.op("Gemm", [f, b.weight([81, 5]), b.weight([5], 0.1)], alpha=2.0, beta=0.5)
    b.nodes[-1].output[0] = "gemm"
    b.nodes.append(helper.make_node("Identity", [vals], ["topk_values"], name="id_v"))
    b.nodes.append(helper.make_node("Identity", [idx], ["topk_indices"], name="id_i"))
    m = b.model("old_op7", [helper.make_tensor_value_info("x", F32, [1, 3, 4, 4])],
                [helper.make_tensor_value_info("gemm", F32, [1, 5]),
                 helper.make_tensor_value_info("topk_values", F32, [2, 3]),
                 helper.make_tensor_value_info("topk_indices", TensorProto.INT64, [2, 3])], 7)
    return m, {"x": b.rng.standard_normal([1, 3, 4, 4]).astype(np.float32)}


def old_op9():
    b = Builder(91)
    scales = b.const(np.array([1, 1, 2, 1.5], np.float32))
    h = b.op("Upsample", ["x", scales], mode="linear")                            # [1,2,6,6]
    p, i = b.op("MaxPool", [h], n_out=2, kernel_shape=[2, 2], strides=[2, 2])
    y = b.op("Sum", [p, b.weight([3], 1.0), b.weight([2, 1, 1], 1.0)])
    b.nodes[-1].output[0] = "y"
    m = b.model("old_op9", [helper.make_tensor_value_info("x", F32, [1, 2, 3, 4])],
                [helper.make_tensor_value_info("y", F32, [1, 2, 3, 3])], 9)
    return m, {"x": b.rng.standard_normal([1, 2, 3, 4]).astype(np.float32)}


def old_op10():
    b = Builder(101)
    h = b.op("Resize", ["x", b.const(np.array([1, 1, 2.5, 1.5], np.float32))], mode="linear")
    s = b.op("Slice", [h, b.const(np.array([1, 0], np.int64)), b.const(np.array([8, 5], np.int64)),
                       b.const(np.array([2, 3], np.int64)), b.const(np.array([2, 2], np.int64))])
    v, _ = b.op("TopK", [s, b.const(np.array([2], np.int64))], n_out=2, axis=2)
    b.nodes[-1].output[0] = "y"
    # nearest, down along H and up along W: onnxruntime's ceil / floor per axis
    b.op("Resize", ["x", b.const(np.array([1, 1, 0.6, 1.7], np.float32))], mode="nearest")
    b.nodes[-1].output[0] = "nearest"
    m = b.model("old_op10", [helper.make_tensor_value_info("x", F32, [1, 2, 4, 4])],
                [helper.make_tensor_value_info("y", F32, [1, 2, 2, 3]),
                 helper.make_tensor_value_info("nearest", F32, [1, 2, 2, 6])], 10)
    return m, {"x": b.rng.standard_normal([1, 2, 4, 4]).astype(np.float32)}


def old_op11():
    b = Builder(111)
    empty = b.const(np.array([], np.float32))
    nn = b.op("Resize", ["x", empty, b.const(np.array([1, 1, 2.0, 3.0], np.float32))], mode="nearest",
              coordinate_transformation_mode="tf_half_pixel_for_nn")
    ac = b.op("Resize", ["x", empty, empty, b.const(np.array([1, 2, 7, 5], np.int64))], mode="linear",
              coordinate_transformation_mode="align_corners")
    c = b.op("Clip", [ac, b.const(np.array(-0.3, np.float32)), b.const(np.array(0.6, np.float32))])
    p = b.op("Pad", [c, b.const(np.array([0, 0, 1, 2, 0, 0, 0, 1], np.int64)),
                     b.const(np.array(0.25, np.float32))])
    ls = b.op("LogSoftmax", [p], axis=2)                                          # coerced at axis 2
    b.nodes[-1].output[0] = "logsoftmax"
    r = b.op("ReduceSum", [nn], axes=[1, -1], keepdims=1)
    b.nodes[-1].output[0] = "reduced"
    del ls, r
    m = b.model("old_op11", [helper.make_tensor_value_info("x", F32, [1, 2, 3, 4])],
                [helper.make_tensor_value_info("logsoftmax", F32, [1, 2, 8, 8]),
                 helper.make_tensor_value_info("reduced", F32, [1, 1, 6, 1])], 11)
    return m, {"x": b.rng.standard_normal([1, 2, 3, 4]).astype(np.float32)}


def old_experimental():
    """The experimental ops of opsets 1..9 that onnxruntime still runs; onnx's checker no longer
    knows them, so the model is not checked."""
    b = Builder(81)
    h = b.op("ImageScaler", ["x"], scale=0.5, bias=[0.1, -0.2, 0.3])
    h = b.op("Crop", [h], border=[1, 2, 0, 1])                                    # [1,3,4,5]
    h = b.op("Crop", [h], border=[1, 1, 0, 0], scale=[2, 3])                      # [1,3,2,3]
    h = b.op("Affine", [h], alpha=1.5, beta=-0.25)
    t = b.op("ScaledTanh", [h], alpha=2.0, beta=0.5)
    y = b.op("ParametricSoftplus", [t], alpha=0.7, beta=1.3)
    b.nodes[-1].output[0] = "y"
    del y
    graph = helper.make_graph(b.nodes, "old_experimental", [helper.make_tensor_value_info("x", F32, [1, 3, 7, 6])],
                              [helper.make_tensor_value_info("y", F32, [1, 3, 2, 3])], b.inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 8)], producer_name="smelt tests/models")
    m.ir_version = 8
    return m, {"x": b.rng.standard_normal([1, 3, 7, 6]).astype(np.float32)}


def main():
    out_dir = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                              os.path.join(ROOT, "build", "models"))
    os.makedirs(out_dir, exist_ok=True)
    for name, make in (("old_op7", old_op7), ("old_op9", old_op9), ("old_op10", old_op10),
                       ("old_op11", old_op11), ("old_experimental", old_experimental)):
        write_case(out_dir, name, *make())
    return 0


if __name__ == "__main__":
    sys.exit(main())
