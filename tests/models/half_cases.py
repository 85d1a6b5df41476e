#!/usr/bin/env python3
"""Build the float16 / bfloat16 test cases in ONNX backend-test layout.

    .venv/bin/python tests/models/half_cases.py [OUT_DIR]     (default: build/models_half)

Each case is OUT_DIR/<name>/model.onnx plus test_data_set_0 and test_data_set_1 (two seeded input
sets); reference outputs come from onnxruntime (1 thread). smelt computes float16 in float32 and
rounds once per stored tensor, onnxruntime rounds after every op, so float16 outputs of the
networks agree to float16 precision (check them with --atol 1e-2 --rtol 1e-2); the cast cases
are exact.

    half_cast_matrix   Cast from each numeric type (float16 and bool included) to each other one,
                       values inside every target's range (ONNX leaves out-of-range float to int
                       undefined); bfloat16 (no numpy type, so not a graph input or output here)
                       through Cast pairs: float32 -> bfloat16 -> every type, every type ->
                       bfloat16 -> float32; CastLike for float16 and bfloat16
    half_mlp           an MLP fully in float16: weights, input and output float16 (Gemm, MatMul,
                       Add, Relu, Sigmoid, Softmax), as onnxconverter-common writes
    half_conv_edges    a float32 CNN converted with Casts at its edges: float32 input, Cast to
                       float16, Conv, BatchNormalization, Relu, MaxPool, GlobalAveragePool,
                       Flatten, Gemm in float16, Cast back to float32

bfloat16 networks are not here: onnxruntime's CPU provider has no bfloat16 Gemm/MatMul/Conv to
reference them with.

Prints one line per case written (or skipped, with the reason).
"""
import os
import shutil
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as TP, helper, numpy_helper

NUMERIC = {TP.FLOAT: np.float32, TP.DOUBLE: np.float64, TP.FLOAT16: np.float16, TP.INT8: np.int8,
           TP.INT16: np.int16, TP.INT32: np.int32, TP.INT64: np.int64, TP.UINT8: np.uint8,
           TP.UINT16: np.uint16, TP.UINT32: np.uint32, TP.UINT64: np.uint64, TP.BOOL: np.bool_}
NAME = {t: TP.DataType.Name(t).lower() for t in list(NUMERIC) + [TP.BFLOAT16]}


def make_model(name, nodes, inputs, outputs, inits, opset=21):
    graph = helper.make_graph(nodes, name, inputs, outputs, inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                          producer_name="smelt tests/models/half_cases")
    m.ir_version = 10
    onnx.checker.check_model(m, full_check=True)
    return m


def vi(name, dt, shape):
    return helper.make_tensor_value_info(name, dt, shape)


def write_case(out_dir, name, model, input_sets):
    d = os.path.join(out_dir, name)
    shutil.rmtree(d, ignore_errors=True)
    data = model.SerializeToString()
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    try:
        sess = ort.InferenceSession(data, so, providers=["CPUExecutionProvider"])
    except Exception as e:  # an onnxruntime that lacks a kernel for this form
        print(f"half: {name}: skipped (onnxruntime: {str(e).splitlines()[0][:160]})")
        return
    os.makedirs(d)
    with open(os.path.join(d, "model.onnx"), "wb") as f:
        f.write(data)
    out_names = [o.name for o in model.graph.output]
    for k, inputs in enumerate(input_sets):
        ds = os.path.join(d, f"test_data_set_{k}")
        os.makedirs(ds)
        for i, (n, v) in enumerate(inputs.items()):
            with open(os.path.join(ds, f"input_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(v, n).SerializeToString())
        for i, (n, v) in enumerate(zip(out_names, sess.run(None, inputs))):
            with open(os.path.join(ds, f"output_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(v, n).SerializeToString())
    ops = sorted({n.op_type for n in model.graph.node})
    print(f"half: {name}: {len(model.graph.node)} nodes ({', '.join(ops)})")


def cast_values(rng, src):
    """Values of type src that every numeric target holds: [0, 120) with fractions for floats
    (float -> unsigned of a negative is undefined), [-120, 120) for signed integers (to unsigned
    they wrap, the same in onnxruntime and smelt), a few exact zeros."""
    n = 24
    if src == TP.BOOL:
        return rng.integers(0, 2, size=n).astype(np.bool_)
    np_t = NUMERIC[src]
    if np.issubdtype(np_t, np.floating):
        v = rng.uniform(0, 120, size=n)
        v[:3] = [0.0, 0.5, 2.5]  # ties: truncation toward zero, not rounding
        return v.astype(np_t)
    lo = -120 if np.issubdtype(np_t, np.signedinteger) else 0
    v = rng.integers(lo, 120, size=n)
    v[0] = 0
    return v.astype(np_t)


def cast_matrix(rng):
    nodes, inputs, outputs, casts_in = [], [], [], []
    for src in NUMERIC:
        x = f"x_{NAME[src]}"
        inputs.append(vi(x, src, [24]))
        for dst in NUMERIC:
            if dst == src:
                continue
            y = f"{NAME[src]}_to_{NAME[dst]}"
            nodes.append(helper.make_node("Cast", [x], [y], to=dst))
            outputs.append(vi(y, dst, [24]))
        # every type -> bfloat16 -> float32
        nodes.append(helper.make_node("Cast", [x], [f"{x}_bf"], to=TP.BFLOAT16))
        nodes.append(helper.make_node("Cast", [f"{x}_bf"], [f"{NAME[src]}_via_bfloat16"], to=TP.FLOAT))
        outputs.append(vi(f"{NAME[src]}_via_bfloat16", TP.FLOAT, [24]))
    # float32 -> bfloat16 -> every type (from the float32 input, whose values all types hold)
    nodes.append(helper.make_node("Cast", ["x_float"], ["bf"], to=TP.BFLOAT16))
    for dst in NUMERIC:
        nodes.append(helper.make_node("Cast", ["bf"], [f"bfloat16_to_{NAME[dst]}"], to=dst))
        outputs.append(vi(f"bfloat16_to_{NAME[dst]}", dst, [24]))
    # CastLike to float16 and to bfloat16 (the target's type from a second input)
    nodes.append(helper.make_node("CastLike", ["x_int32", "x_float16"], ["castlike_int32_float16"]))
    outputs.append(vi("castlike_int32_float16", TP.FLOAT16, [24]))
    nodes.append(helper.make_node("CastLike", ["x_double", "bf"], ["like_bf"]))
    nodes.append(helper.make_node("Cast", ["like_bf"], ["castlike_double_bfloat16"], to=TP.FLOAT))
    outputs.append(vi("castlike_double_bfloat16", TP.FLOAT, [24]))
    sets = [{f"x_{NAME[s]}": cast_values(rng, s) for s in NUMERIC} for _ in range(2)]
    return [("half_cast_matrix", make_model("half_cast_matrix", nodes, inputs, outputs, []), sets)]


def init(name, rng, shape, dt, scale):
    a = (rng.standard_normal(shape) * scale).astype(np.float32)
    if dt == TP.BFLOAT16:
        return helper.make_tensor(name, TP.BFLOAT16, shape, a.flatten().tolist())
    return numpy_helper.from_array(a.astype(np.float16), name)


def mlp(rng, dt, name, edges):
    """x [5,37] -> Gemm 48 -> Relu -> MatMul 33 + bias -> Sigmoid -> MatMul 10 -> Softmax."""
    inits = [init("w1", rng, [37, 48], dt, 0.2), init("b1", rng, [48], dt, 0.1),
             init("w2", rng, [48, 33], dt, 0.2), init("b2", rng, [33], dt, 0.1), init("w3", rng, [33, 10], dt, 0.3)]
    nodes = []
    x = "x"
    if edges:
        nodes.append(helper.make_node("Cast", ["x"], ["xh"], to=dt))
        x = "xh"
    nodes += [helper.make_node("Gemm", [x, "w1", "b1"], ["g1"]),
              helper.make_node("Relu", ["g1"], ["r1"]),
              helper.make_node("MatMul", ["r1", "w2"], ["m2"]),
              helper.make_node("Add", ["m2", "b2"], ["a2"]),
              helper.make_node("Sigmoid", ["a2"], ["s2"]),
              helper.make_node("MatMul", ["s2", "w3"], ["m3"]),
              helper.make_node("Softmax", ["m3"], ["yh" if edges else "y"], axis=-1)]
    if edges:
        nodes.append(helper.make_node("Cast", ["yh"], ["y"], to=TP.FLOAT))
    io = TP.FLOAT if edges else dt
    model = make_model(name, nodes, [vi("x", io, [5, 37])], [vi("y", io, [5, 10])], inits)
    np_io = np.float32 if edges else np.float16
    sets = [{"x": rng.standard_normal([5, 37]).astype(np_io)} for _ in range(2)]
    return (name, model, sets)


def conv_edges(rng):
    h = TP.FLOAT16
    inits = [init("w1", rng, [8, 3, 3, 3], h, 0.3), init("c1", rng, [8], h, 0.1),
             numpy_helper.from_array(rng.uniform(0.5, 1.5, 8).astype(np.float16), "bn_s"),
             numpy_helper.from_array((rng.standard_normal(8) * 0.1).astype(np.float16), "bn_b"),
             numpy_helper.from_array((rng.standard_normal(8) * 0.1).astype(np.float16), "bn_m"),
             numpy_helper.from_array(rng.uniform(0.5, 1.5, 8).astype(np.float16), "bn_v"),
             init("w2", rng, [12, 8, 3, 3], h, 0.2), init("wf", rng, [12, 7], h, 0.3), init("bf", rng, [7], h, 0.1)]
    nodes = [helper.make_node("Cast", ["x"], ["xh"], to=h),
             helper.make_node("Conv", ["xh", "w1", "c1"], ["c1o"], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c1o", "bn_s", "bn_b", "bn_m", "bn_v"], ["bn"]),
             helper.make_node("Relu", ["bn"], ["r1"]),
             helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Conv", ["p1", "w2"], ["c2"], strides=[1, 1]),
             helper.make_node("Relu", ["c2"], ["r2"]),
             helper.make_node("GlobalAveragePool", ["r2"], ["gap"]),
             helper.make_node("Flatten", ["gap"], ["fl"]),
             helper.make_node("Gemm", ["fl", "wf", "bf"], ["yh"]),
             helper.make_node("Cast", ["yh"], ["y"], to=TP.FLOAT)]
    model = make_model("half_conv_edges", nodes, [vi("x", TP.FLOAT, [2, 3, 15, 13])], [vi("y", TP.FLOAT, [2, 7])],
                       inits)
    sets = [{"x": rng.standard_normal([2, 3, 15, 13]).astype(np.float32)} for _ in range(2)]
    return ("half_conv_edges", model, sets)


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join("build", "models_half")
    os.makedirs(out_dir, exist_ok=True)
    rng = np.random.default_rng(16)
    cases = cast_matrix(rng) + [mlp(rng, TP.FLOAT16, "half_mlp", False), conv_edges(rng)]
    for case in cases:
        write_case(out_dir, *case)


if __name__ == "__main__":
    main()
