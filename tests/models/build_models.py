#!/usr/bin/env python3
"""Build the small end-to-end test models in ONNX backend-test layout.

    .venv/bin/python tests/models/build_models.py [OUT_DIR]     (default: build/models)

Each model is written as OUT_DIR/<name>/model.onnx plus test_data_set_{0,1}/{input_*,output_*}.pb,
the layout `smelt check` reads; set 1 has set 0's shapes and other values, so the check runs one
compiled program on inputs it was not compiled with. Weights and inputs come from a fixed seed;
the reference outputs come from onnxruntime. Models:

    mlp          MatMul+Add, Relu, Gemm, Relu, Gemm, Softmax; symbolic batch dim "N"
    cnn          Conv, BatchNormalization, Relu, two residual blocks (Add), MaxPool,
                 strided Conv, GlobalAveragePool, Flatten, Gemm
    attention    LayerNormalization, multi-head self-attention (MatMul, Reshape, Transpose,
                 Div, Softmax), residual Add, LayerNorm decomposed (ReduceMean, Sub, Pow,
                 Sqrt, Div), feed-forward with GELU written with Erf (opset 17)
    ffn_gelu     LayerNormalization, MatMul+Add, Gelu (opset 20), MatMul+Add, residual Add
    elementwise_dag  bench/models.py's DAG of 30 elementwise ops at 2x136x136: values with 2-3
                 consumers, three Transposes, two outputs (one kernel with two outputs)
    torch_*      real architectures exported with torch.onnx (tests/models/torch_export.py:
                 tiny, resnet18, mobilenet_v2, bert, gpt, and torch's stock
                 TransformerEncoderLayer as `encoder`) when torch is importable here or by
                 Debian's /usr/bin/python3 (python3-torch, python3-torchvision); else skipped

Prints one line per model written (or skipped).
"""
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.dirname(os.path.abspath(__file__))
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

    def op(self, op_type, inputs, n_out=1, **attrs):
        outs = [self.name(op_type.lower() + "_") for _ in range(n_out)]
        self.nodes.append(helper.make_node(op_type, inputs, outs, name=self.name("n"), **attrs))
        return outs[0] if n_out == 1 else outs

    def model(self, name, inputs, outputs, opset):
        graph = helper.make_graph(self.nodes, name, inputs, outputs, self.inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="smelt tests/models")
        m.ir_version = 8  # readable by every onnxruntime we pin
        onnx.checker.check_model(m, full_check=True)
        return m


def mlp():
    b = Builder(1)
    h = b.op("Add", [b.op("MatMul", ["x", b.weight([64, 48])]), b.weight([48], 0.1)])
    h = b.op("Relu", [h])
    h = b.op("Gemm", [h, b.weight([32, 48]), b.weight([32], 0.1)], transB=1)
    h = b.op("Relu", [h])
    h = b.op("Gemm", [h, b.weight([32, 10]), b.weight([10], 0.1)], alpha=0.5, beta=1.0)
    b.nodes.append(helper.make_node("Softmax", [h], ["y"], name="softmax", axis=-1))
    m = b.model("mlp", [helper.make_tensor_value_info("x", F32, ["N", 64])],
                [helper.make_tensor_value_info("y", F32, ["N", 10])], 17)
    x = b.rng.standard_normal([5, 64]).astype(np.float32)
    return m, {"x": x}


def conv_bn(b, x, c_in, c_out, k, stride=1, relu=True):
    h = b.op("Conv", [x, b.weight([c_out, c_in, k, k]), b.weight([c_out], 0.1)],
             kernel_shape=[k, k], strides=[stride, stride], pads=[k // 2] * 4)
    scale = (1.0 + 0.1 * b.rng.standard_normal(c_out)).astype(np.float32)
    bias = (0.1 * b.rng.standard_normal(c_out)).astype(np.float32)
    mean = (0.1 * b.rng.standard_normal(c_out)).astype(np.float32)
    var = (0.5 + b.rng.random(c_out)).astype(np.float32)
    h = b.op("BatchNormalization", [h, b.const(scale), b.const(bias), b.const(mean), b.const(var)],
             epsilon=1e-5)
    return b.op("Relu", [h]) if relu else h


def cnn():
    b = Builder(2)
    h = conv_bn(b, "x", 3, 8, 3)
    for _ in range(2):  # residual blocks
        r = conv_bn(b, h, 8, 8, 3)
        r = conv_bn(b, r, 8, 8, 3, relu=False)
        h = b.op("Relu", [b.op("Add", [h, r])])
    h = b.op("MaxPool", [h], kernel_shape=[2, 2], strides=[2, 2])
    h = conv_bn(b, h, 8, 16, 3, stride=2)
    h = b.op("GlobalAveragePool", [h])
    h = b.op("Flatten", [h], axis=1)
    b.nodes.append(helper.make_node("Gemm", [h, b.weight([10, 16]), b.weight([10], 0.1)], ["y"],
                                    name="fc", transB=1))
    m = b.model("cnn", [helper.make_tensor_value_info("x", F32, [2, 3, 17, 17])],
                [helper.make_tensor_value_info("y", F32, [2, 10])], 17)
    x = b.rng.standard_normal([2, 3, 17, 17]).astype(np.float32)
    return m, {"x": x}


def layer_norm_decomposed(b, x, d):
    mean = b.op("ReduceMean", [x], axes=[-1], keepdims=1)
    centered = b.op("Sub", [x, mean])
    var = b.op("ReduceMean", [b.op("Pow", [centered, b.const(np.float32(2.0))])], axes=[-1],
               keepdims=1)
    std = b.op("Sqrt", [b.op("Add", [var, b.const(np.float32(1e-5))])])
    h = b.op("Div", [centered, std])
    gamma = (1.0 + 0.1 * b.rng.standard_normal(d)).astype(np.float32)
    return b.op("Add", [b.op("Mul", [h, b.const(gamma)]), b.weight([d], 0.1)])


def gelu_erf(b, x):
    inner = b.op("Erf", [b.op("Div", [x, b.const(np.float32(np.sqrt(2.0)))])])
    return b.op("Mul", [b.op("Mul", [x, b.const(np.float32(0.5))]),
                        b.op("Add", [inner, b.const(np.float32(1.0))])])


def attention():
    batch, seq, d, heads = 2, 7, 32, 4
    hd = d // heads
    b = Builder(3)
    gamma = (1.0 + 0.1 * b.rng.standard_normal(d)).astype(np.float32)
    h = b.op("LayerNormalization", ["x", b.const(gamma), b.weight([d], 0.1)], axis=-1,
             epsilon=1e-5)
    split_shape = b.const(np.array([batch, seq, heads, hd], np.int64))

    def project(perm):
        p = b.op("Add", [b.op("MatMul", [h, b.weight([d, d])]), b.weight([d], 0.1)])
        return b.op("Transpose", [b.op("Reshape", [p, split_shape])], perm=perm)

    q = project([0, 2, 1, 3])        # [B, H, S, hd]
    kt = project([0, 2, 3, 1])       # [B, H, hd, S]
    v = project([0, 2, 1, 3])
    scores = b.op("Div", [b.op("MatMul", [q, kt]), b.const(np.float32(np.sqrt(hd)))])
    probs = b.op("Softmax", [scores], axis=-1)
    ctx = b.op("Transpose", [b.op("MatMul", [probs, v])], perm=[0, 2, 1, 3])
    ctx = b.op("Reshape", [ctx, b.const(np.array([batch, seq, d], np.int64))])
    out = b.op("Add", [b.op("MatMul", [ctx, b.weight([d, d])]), b.weight([d], 0.1)])
    x1 = b.op("Add", ["x", out])
    h = layer_norm_decomposed(b, x1, d)
    h = b.op("Add", [b.op("MatMul", [h, b.weight([d, 4 * d])]), b.weight([4 * d], 0.1)])
    h = gelu_erf(b, h)
    h = b.op("Add", [b.op("MatMul", [h, b.weight([4 * d, d])]), b.weight([d], 0.1)])
    b.nodes.append(helper.make_node("Add", [x1, h], ["y"], name="residual"))
    m = b.model("attention", [helper.make_tensor_value_info("x", F32, [batch, seq, d])],
                [helper.make_tensor_value_info("y", F32, [batch, seq, d])], 17)
    x = b.rng.standard_normal([batch, seq, d]).astype(np.float32)
    return m, {"x": x}


def ffn_gelu():
    seq, d = 5, 24
    b = Builder(4)
    gamma = (1.0 + 0.1 * b.rng.standard_normal(d)).astype(np.float32)
    h = b.op("LayerNormalization", ["x", b.const(gamma), b.weight([d], 0.1)], axis=-1)
    h = b.op("Add", [b.op("MatMul", [h, b.weight([d, 3 * d])]), b.weight([3 * d], 0.1)])
    h = b.op("Gelu", [h])
    h = b.op("Add", [b.op("MatMul", [h, b.weight([3 * d, d])]), b.weight([d], 0.1)])
    b.nodes.append(helper.make_node("Add", ["x", h], ["y"], name="residual"))
    m = b.model("ffn_gelu", [helper.make_tensor_value_info("x", F32, [seq, d])],
                [helper.make_tensor_value_info("y", F32, [seq, d])], 20)
    x = b.rng.standard_normal([seq, d]).astype(np.float32)
    return m, {"x": x}


def elementwise_dag():
    """bench/models.py's DAG (shared values, three Transposes, two outputs: one kernel) at
    2x136x136, wide enough for its transposed reads to be staged through tiles."""
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    from models import elementwise_dag as build
    return build((2, 136, 136))


def torch_python():
    """An interpreter that can import torch: this one, else Debian's (python3-torch)."""
    for py in (sys.executable, "/usr/bin/python3"):
        if os.path.exists(py) and subprocess.run([py, "-c", "import torch"],
                                                 capture_output=True).returncode == 0:
            return py
    return None


TORCH_MODELS = ("tiny", "resnet18", "mobilenet_v2", "bert", "gpt", "encoder")


def torch_model(out_dir, name):
    """Export tests/models/torch_export.py's model `name` with whichever python has torch;
    returns (model, inputs) or a string saying why it was skipped."""
    py = torch_python()
    if not py:
        return "torch not importable (Debian package python3-torch)"
    work = os.path.join(out_dir, ".torch_export", name)
    os.makedirs(work, exist_ok=True)
    r = subprocess.run([py, os.path.join(HERE, "torch_export.py"), name, work], capture_output=True,
                       text=True)
    if r.returncode != 0:
        tail = (r.stderr.strip().splitlines() or ["?"])[-1]
        return f"torch export failed with {py}: {tail}"
    m = onnx.load(os.path.join(work, "model.onnx"))
    x = np.load(os.path.join(work, "x.npy"))
    return m, {m.graph.input[0].name: x}


def other_values(inputs, seed=1):
    """A second input set: the same shapes and dtypes with other values (floats drawn
    with the first set's spread, integers within its range), so that `smelt check`
    runs one compiled program on values it was not compiled with."""
    rng = np.random.default_rng(seed)
    out = {}
    for k, v in inputs.items():
        if v.dtype.kind == "f":
            out[k] = (rng.standard_normal(v.shape) * (v.std() or 1.0) + v.mean()).astype(v.dtype)
        elif v.dtype.kind in "iu":
            out[k] = rng.integers(v.min(), v.max() + 1, size=v.shape).astype(v.dtype)
        else:
            out[k] = rng.permutation(v.reshape(-1)).reshape(v.shape)
    return out


def write_case(out_dir, name, model, inputs):
    d = os.path.join(out_dir, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d, exist_ok=True)
    onnx.save(model, os.path.join(d, "model.onnx"))
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for s, values in enumerate((inputs, other_values(inputs))):
        ds = os.path.join(d, f"test_data_set_{s}")
        os.makedirs(ds, exist_ok=True)
        outputs = sess.run(None, values)
        for i, (k, v) in enumerate(values.items()):
            with open(os.path.join(ds, f"input_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(v, k).SerializeToString())
        for i, (info, v) in enumerate(zip(sess.get_outputs(), outputs)):
            with open(os.path.join(ds, f"output_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(v, info.name).SerializeToString())
    ops = sorted({n.op_type for n in model.graph.node})
    print(f"models: {name}: {len(model.graph.node)} nodes ({', '.join(ops)})")


def main():
    out_dir = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                              os.path.join(ROOT, "build", "models"))
    os.makedirs(out_dir, exist_ok=True)
    for name, make in (("mlp", mlp), ("cnn", cnn), ("attention", attention),
                       ("ffn_gelu", ffn_gelu), ("elementwise_dag", elementwise_dag)):
        write_case(out_dir, name, *make())
    for name in TORCH_MODELS:
        t = torch_model(out_dir, name)
        if isinstance(t, str):
            shutil.rmtree(os.path.join(out_dir, "torch_" + name), ignore_errors=True)
            print(f"models: torch_{name}: skipped: {t}")
        else:
            write_case(out_dir, "torch_" + name, *t)
    return 0


if __name__ == "__main__":
    sys.exit(main())
