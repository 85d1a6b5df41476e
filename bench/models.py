#!/usr/bin/env python3
"""Build the benchmark models with onnx.helper, in ONNX backend-test layout.

    .venv/bin/python bench/models.py [OUT_DIR]      (default: build/bench)

Each model is written as OUT_DIR/<name>/model.onnx plus test_data_set_0/{input_*,output_*}.pb
(reference outputs from onnxruntime), the layout `smelt check` and `smelt bench DIR` read.
Weights and inputs come from fixed seeds. BatchNormalization stays a node (as PyTorch exports
it), so the compiler, not the exporter, has to fold it. Models:

    mlp               batch 64: 512 -> 1024 -> 1024 -> 512 -> 10, MatMul+Add / Gemm, Relu, Softmax
    resnet            1x64x28x28 stem, 8 residual blocks of conv3x3-bn-relu-conv3x3-bn, Add, Relu,
                      GlobalAveragePool, Flatten, Gemm
    mobilenet         1x3x160x160: strided stem, 6 depthwise-separable blocks (depthwise 3x3 conv,
                      bn, Clip(0,6), pointwise conv, bn, Clip), GlobalAveragePool, Gemm
    transformer       encoder block, seq 128, hidden 256, 4 heads, post-LN (LayerNormalization),
                      FFN 1024 with GELU written with Erf
    gpt               decoder block, seq 128, hidden 256, 4 heads, pre-LN, causal mask (Where),
                      FFN 1024 with tanh-GELU
    elementwise_chain Transpose then 8 elementwise ops on a 4096x4096 float32 tensor
    elementwise_dag   30 elementwise ops (2 of them Sigmoid and Tanh, the rest arithmetic) on two
                      64x256x256 float32 inputs: values with 2-3 consumers, three Transposes (of an
                      input and of two shared values), two graph outputs (the first also read by
                      the ops after it)
"""
import os
import shutil
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
F32 = TensorProto.FLOAT


class Builder:
    """Collects nodes and random initializers for one graph."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.count = [], [], 0

    def name(self, prefix):
        self.count += 1
        return f"{prefix}{self.count}"

    def const(self, array, prefix="c"):
        n = self.name(prefix)
        self.inits.append(numpy_helper.from_array(np.asarray(array), n))
        return n

    def weight(self, shape, scale=None, prefix="w"):
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
        scale = scale if scale is not None else 1.0 / np.sqrt(fan_in)
        return self.const((self.rng.standard_normal(shape) * scale).astype(np.float32), prefix)

    def op(self, op_type, inputs, out=None, **attrs):
        o = out or self.name(op_type.lower() + "_")
        self.nodes.append(helper.make_node(op_type, inputs, [o], name=self.name(op_type.lower()),
                                           **attrs))
        return o

    def model(self, name, x_shape, y_shape, opset=17):
        graph = helper.make_graph(self.nodes, name,
                                  [helper.make_tensor_value_info("x", F32, x_shape)],
                                  [helper.make_tensor_value_info("y", F32, y_shape)], self.inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="smelt bench/models.py")
        m.ir_version = 8
        onnx.checker.check_model(m, full_check=True)
        x = self.rng.standard_normal(x_shape).astype(np.float32)
        return m, {"x": x}


def mlp():
    b = Builder(11)
    h = b.op("Relu", [b.op("Add", [b.op("MatMul", ["x", b.weight([512, 1024])]),
                                   b.weight([1024], 0.1)])])
    h = b.op("Relu", [b.op("Gemm", [h, b.weight([1024, 1024]), b.weight([1024], 0.1)], transB=1)])
    h = b.op("Relu", [b.op("Gemm", [h, b.weight([1024, 512]), b.weight([512], 0.1)])])
    h = b.op("Gemm", [h, b.weight([512, 10]), b.weight([10], 0.1)])
    b.op("Softmax", [h], out="y", axis=-1)
    return b.model("mlp", [64, 512], [64, 10])


def bn(b, x, c):
    scale = (1.0 + 0.1 * b.rng.standard_normal(c)).astype(np.float32)
    bias = (0.1 * b.rng.standard_normal(c)).astype(np.float32)
    mean = (0.1 * b.rng.standard_normal(c)).astype(np.float32)
    var = (0.5 + b.rng.random(c)).astype(np.float32)
    return b.op("BatchNormalization", [x, b.const(scale), b.const(bias), b.const(mean),
                                       b.const(var)], epsilon=1e-5)


def conv(b, x, c_in, c_out, k, stride=1, group=1):
    # PyTorch exports conv-before-bn without a bias.
    return b.op("Conv", [x, b.weight([c_out, c_in // group, k, k])], kernel_shape=[k, k],
                strides=[stride, stride], pads=[k // 2] * 4, group=group)


def resnet():
    b = Builder(12)
    c = 64
    h = b.op("Relu", [bn(b, conv(b, "x", c, c, 3), c)])
    for _ in range(8):
        r = b.op("Relu", [bn(b, conv(b, h, c, c, 3), c)])
        r = bn(b, conv(b, r, c, c, 3), c)
        h = b.op("Relu", [b.op("Add", [h, r])])
    h = b.op("Flatten", [b.op("GlobalAveragePool", [h])], axis=1)
    b.op("Gemm", [h, b.weight([10, c]), b.weight([10], 0.1)], out="y", transB=1)
    return b.model("resnet", [1, c, 28, 28], [1, 10])


def mobilenet():
    b = Builder(13)
    relu6 = lambda x: b.op("Clip", [x, b.const(np.float32(0)), b.const(np.float32(6))])  # noqa: E731
    h = relu6(bn(b, conv(b, "x", 3, 32, 3, stride=2), 32))
    c = 32
    for c_out, stride in ((64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2)):
        h = relu6(bn(b, conv(b, h, c, c, 3, stride=stride, group=c), c))
        h = relu6(bn(b, conv(b, h, c, c_out, 1), c_out))
        c = c_out
    h = b.op("Flatten", [b.op("GlobalAveragePool", [h])], axis=1)
    b.op("Gemm", [h, b.weight([1000, c]), b.weight([1000], 0.1)], out="y", transB=1)
    return b.model("mobilenet", [1, 3, 160, 160], [1, 1000])


SEQ, D, HEADS, FF = 128, 256, 4, 1024


def layer_norm(b, x):
    gamma = (1.0 + 0.1 * b.rng.standard_normal(D)).astype(np.float32)
    return b.op("LayerNormalization", [x, b.const(gamma), b.weight([D], 0.1)], axis=-1,
                epsilon=1e-5)


def linear(b, x, n_in, n_out):
    return b.op("Add", [b.op("MatMul", [x, b.weight([n_in, n_out])]), b.weight([n_out], 0.1)])


def self_attention(b, x, causal):
    hd = D // HEADS
    split = b.const(np.array([1, SEQ, HEADS, hd], np.int64))
    q = b.op("Transpose", [b.op("Reshape", [linear(b, x, D, D), split])], perm=[0, 2, 1, 3])
    k = b.op("Transpose", [b.op("Reshape", [linear(b, x, D, D), split])], perm=[0, 2, 3, 1])
    v = b.op("Transpose", [b.op("Reshape", [linear(b, x, D, D), split])], perm=[0, 2, 1, 3])
    s = b.op("Mul", [b.op("MatMul", [q, k]), b.const(np.float32(1.0 / np.sqrt(hd)))])
    if causal:
        mask = np.tril(np.ones((SEQ, SEQ), bool))
        s = b.op("Where", [b.const(mask), s, b.const(np.float32(-1e9))])
    p = b.op("Softmax", [s], axis=-1)
    ctx = b.op("Transpose", [b.op("MatMul", [p, v])], perm=[0, 2, 1, 3])
    ctx = b.op("Reshape", [ctx, b.const(np.array([1, SEQ, D], np.int64))])
    return linear(b, ctx, D, D)


def transformer():
    b = Builder(14)
    x1 = layer_norm(b, b.op("Add", ["x", self_attention(b, "x", causal=False)]))
    h = linear(b, x1, D, FF)
    erf = b.op("Erf", [b.op("Mul", [h, b.const(np.float32(1.0 / np.sqrt(2.0)))])])
    h = b.op("Mul", [b.op("Mul", [h, b.const(np.float32(0.5))]),
                     b.op("Add", [erf, b.const(np.float32(1.0))])])
    h = linear(b, h, FF, D)
    layer_norm_out = layer_norm(b, b.op("Add", [x1, h]))
    b.op("Identity", [layer_norm_out], out="y")
    return b.model("transformer", [1, SEQ, D], [1, SEQ, D])


def gpt():
    b = Builder(15)
    x1 = b.op("Add", ["x", self_attention(b, layer_norm(b, "x"), causal=True)])
    h = linear(b, layer_norm(b, x1), D, FF)
    # GPT-2's tanh GELU: 0.5 h (1 + tanh(sqrt(2/pi) (h + 0.044715 h^3)))
    cube = b.op("Pow", [h, b.const(np.float32(3.0))])
    inner = b.op("Add", [h, b.op("Mul", [cube, b.const(np.float32(0.044715))])])
    t = b.op("Tanh", [b.op("Mul", [inner, b.const(np.float32(np.sqrt(2.0 / np.pi)))])])
    h = b.op("Mul", [b.op("Mul", [h, b.const(np.float32(0.5))]),
                     b.op("Add", [t, b.const(np.float32(1.0))])])
    h = linear(b, h, FF, D)
    b.op("Add", [x1, h], out="y")
    return b.model("gpt", [1, SEQ, D], [1, SEQ, D])


def elementwise_chain():
    b = Builder(16)
    h = b.op("Transpose", ["x"], perm=[1, 0])
    h = b.op("Mul", [h, b.const(np.float32(1.5))])
    h = b.op("Add", [h, b.const(np.float32(0.25))])
    h = b.op("Relu", [h])
    h = b.op("Sub", [h, b.const(np.float32(0.5))])
    h = b.op("Abs", [h])
    h = b.op("Sigmoid", [h])
    h = b.op("Mul", [h, h])
    b.op("Neg", [h], out="y")
    return b.model("elementwise_chain", [4096, 4096], [4096, 4096])


def elementwise_dag(shape=(64, 256, 256)):
    """An elementwise DAG that is one kernel only when shared values stay in registers
    (tests/models/build_models.py builds it smaller, with two input sets)."""
    b = Builder(17)
    shape = list(shape)
    op, k = b.op, lambda v: b.const(np.float32(v))
    tr = lambda v: op("Transpose", [v], perm=[0, 2, 1])
    a = op("Mul", ["x", "x2"])             # read by c, d and a Transpose
    s = op("Add", ["x", "x2"])             # read by d and f
    c = op("Abs", [a])                     # read by e and the last op
    d = op("Sub", [a, s])                  # read by e and a Transpose
    e = op("Mul", [c, d])
    f = op("Sigmoid", [s])
    g = op("Add", [e, f])                  # read by h, j and m
    h = op("Mul", [g, k(0.5)])
    i = op("Add", [h, tr("x")])
    j = op("Abs", [g])
    m0 = op("Max", [i, j])
    m1 = op("Mul", [m0, tr(a)])
    m = op("Sub", [g, m1])
    n = op("Relu", [m])                    # read by o, p and v
    o = op("Add", [op("Mul", [n, k(0.25)]), k(1.0)])
    p = op("Mul", [n, "x2"])
    q = op("Div", [p, o])
    r = op("Add", [q, tr(d)])
    t = op("Min", [r, k(4.0)])
    u = op("Neg", [op("Abs", [t])])
    y1 = op("Mul", [u, k(0.5)], out="y1")  # a graph output, read by v and z
    v = op("Add", [y1, n])
    w = op("Tanh", [v])
    z = op("Mul", [w, y1])
    op("Mul", [z, c], out="y")
    graph = helper.make_graph(b.nodes, "elementwise_dag",
                              [helper.make_tensor_value_info(nm, F32, shape) for nm in ("x", "x2")],
                              [helper.make_tensor_value_info(nm, F32, shape) for nm in ("y1", "y")], b.inits)
    mdl = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="smelt bench/models.py")
    mdl.ir_version = 8
    onnx.checker.check_model(mdl, full_check=True)
    return mdl, {nm: b.rng.standard_normal(shape).astype(np.float32) for nm in ("x", "x2")}


MODELS = (("mlp", mlp), ("resnet", resnet), ("mobilenet", mobilenet),
          ("transformer", transformer), ("gpt", gpt), ("elementwise_chain", elementwise_chain),
          ("elementwise_dag", elementwise_dag))


def write_case(out_dir, name, model, inputs):
    d = os.path.join(out_dir, name)
    shutil.rmtree(d, ignore_errors=True)
    ds = os.path.join(d, "test_data_set_0")
    os.makedirs(ds, exist_ok=True)
    onnx.save(model, os.path.join(d, "model.onnx"))
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    outputs = sess.run(None, inputs)
    for i, (k, v) in enumerate(inputs.items()):
        with open(os.path.join(ds, f"input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(v, k).SerializeToString())
    for i, (info, v) in enumerate(zip(sess.get_outputs(), outputs)):
        with open(os.path.join(ds, f"output_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(v, info.name).SerializeToString())
    print(f"bench models: {name}: {len(model.graph.node)} nodes")


def main():
    out_dir = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                              os.path.join(ROOT, "build", "bench"))
    only = set(sys.argv[2:])
    os.makedirs(out_dir, exist_ok=True)
    for name, make in MODELS:
        if not only or name in only:
            write_case(out_dir, name, *make())
    return 0


if __name__ == "__main__":
    sys.exit(main())
