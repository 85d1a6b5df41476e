#!/usr/bin/env python3
"""Build LSTM / GRU / RNN test models in ONNX backend-test layout.

    .venv/bin/python tests/models/recurrent_cases.py [OUT_DIR]     (default: build/models)

Each case is written as OUT_DIR/rnn_<name>/model.onnx plus test_data_set_{0,1}/{input_*,output_*}.pb,
the layout `smelt check` reads; set 1 has set 0's shapes and other values (sequence_lens, where it
is a graph input, included), so the check runs one compiled program on inputs it was not compiled
with. Sizes are odd on purpose (seq 9, batch 3, input 7, hidden 13). Between them the cases cover
forward/reverse/bidirectional, sequence_lens of varied lengths (0 included), initial states,
peepholes, clip, input_forget, layout 1, every activation function with activation_alpha/beta,
GRU's linear_before_reset 0 and 1, omitted optional inputs and outputs, an LSTM between
Transposes (the CRNN pattern), a GRU between elementwise ops that fusion may merge into it, and
LSTM/GRU with W, R and B as graph inputs (sequence lengths 7 and 1, batch 2, one entry masked).

The reference outputs come from onnxruntime. onnxruntime runs only layout 0, so a layout-1 case is
referenced by its layout-0 twin (same weights) run on transposed inputs, its outputs transposed back.
"""
import os
import shutil
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
F32 = TensorProto.FLOAT
SEQ, BATCH, INPUT, HIDDEN = 9, 3, 7, 13
GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}


def rnn_case(seed, op, direction="forward", layout=0, bias=True, lens=None, lens_input=False,
             init_h=False, init_c=False, peep=False, outputs=("Y", "Y_h", "Y_c"), **attrs):
    """One recurrent node. lens: per-batch lengths (a constant, or a graph input when lens_input).
    Returns (model, inputs, twin): twin is the layout-0 model when layout is 1, else None."""
    rng = np.random.default_rng(seed)
    dirs = 2 if direction == "bidirectional" else 1
    g = GATES[op]

    def rnd(*shape, scale=0.5):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    inits, names = {}, []
    inits["W"] = rnd(dirs, g * HIDDEN, INPUT)
    inits["R"] = rnd(dirs, g * HIDDEN, HIDDEN)
    names += ["X", "W", "R"]
    names.append("B" if bias else "")
    if bias:
        inits["B"] = rnd(dirs, 2 * g * HIDDEN, scale=0.3)
    names.append("sequence_lens" if lens is not None else "")
    state_shape = (BATCH, dirs, HIDDEN) if layout else (dirs, BATCH, HIDDEN)
    names.append("initial_h" if init_h else "")
    if init_h:
        inits["initial_h"] = rnd(*state_shape)
    if op == "LSTM":
        names.append("initial_c" if init_c else "")
        if init_c:
            inits["initial_c"] = rnd(*state_shape)
        names.append("P" if peep else "")
        if peep:
            inits["P"] = rnd(dirs, 3 * HIDDEN)
    while names and names[-1] == "":
        names.pop()
    outs = [o if o in outputs else "" for o in (["Y", "Y_h", "Y_c"] if op == "LSTM" else ["Y", "Y_h"])]
    while outs and outs[-1] == "":
        outs.pop()

    x = rnd(BATCH, SEQ, INPUT, scale=1.0) if layout else rnd(SEQ, BATCH, INPUT, scale=1.0)
    inputs = {"X": x}
    if lens is not None:
        lv = np.array(lens, dtype=np.int32)
        if lens_input:
            inputs["sequence_lens"] = lv
        else:
            inits["sequence_lens"] = lv

    def build(lay):
        def tr(name, a):  # state tensors and X swap their first two dims between layouts
            if lay == layout or name not in ("X", "initial_h", "initial_c"):
                return a
            return np.ascontiguousarray(np.swapaxes(a, 0, 1))
        node_attrs = dict(attrs, direction=direction, hidden_size=HIDDEN)
        if lay:
            node_attrs["layout"] = 1
        node = helper.make_node(op, names, outs, name="rnn", **node_attrs)
        x_shape = [BATCH, SEQ, INPUT] if lay else [SEQ, BATCH, INPUT]
        ys = {"Y": [BATCH, SEQ, dirs, HIDDEN] if lay else [SEQ, dirs, BATCH, HIDDEN]}
        ys["Y_h"] = ys["Y_c"] = [BATCH, dirs, HIDDEN] if lay else [dirs, BATCH, HIDDEN]
        gin = [helper.make_tensor_value_info("X", F32, x_shape)]
        if lens is not None and lens_input:
            gin.append(helper.make_tensor_value_info("sequence_lens", TensorProto.INT32, [BATCH]))
        gout = [helper.make_tensor_value_info(o, F32, ys[o]) for o in outs if o]
        graph = helper.make_graph([node], f"{op.lower()}_case", gin, gout,
                                  [numpy_helper.from_array(tr(k, v), k) for k, v in inits.items()])
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14 if lay else 7 + seed % 8)],
                              producer_name="smelt tests/models")
        m.ir_version = 8
        onnx.checker.check_model(m, full_check=True)
        return m

    model = build(layout)
    return model, inputs, (build(0) if layout else None)


def crnn_case():
    """Transpose [batch, seq, feat] -> LSTM (bidirectional) -> Transpose/Reshape -> MatMul:
    a text recogniser's head, with producers and consumers around the recurrent node."""
    rng = np.random.default_rng(40)
    dirs, g = 2, 4
    w = (rng.standard_normal((dirs, g * HIDDEN, INPUT)) * 0.5).astype(np.float32)
    r = (rng.standard_normal((dirs, g * HIDDEN, HIDDEN)) * 0.5).astype(np.float32)
    b = (rng.standard_normal((dirs, 2 * g * HIDDEN)) * 0.3).astype(np.float32)
    fc = (rng.standard_normal((2 * HIDDEN, 5)) * 0.3).astype(np.float32)
    nodes = [
        helper.make_node("Transpose", ["feat"], ["x"], perm=[1, 0, 2]),
        helper.make_node("LSTM", ["x", "W", "R", "B"], ["y"], direction="bidirectional", hidden_size=HIDDEN),
        helper.make_node("Transpose", ["y"], ["yt"], perm=[2, 0, 1, 3]),
        helper.make_node("Reshape", ["yt", "shape"], ["yr"]),
        helper.make_node("MatMul", ["yr", "fc"], ["logits"]),
    ]
    inits = [numpy_helper.from_array(a, n) for n, a in
             (("W", w), ("R", r), ("B", b), ("fc", fc), ("shape", np.array([BATCH, SEQ, 2 * HIDDEN], np.int64)))]
    graph = helper.make_graph(nodes, "crnn_head", [helper.make_tensor_value_info("feat", F32, [BATCH, SEQ, INPUT])],
                              [helper.make_tensor_value_info("logits", F32, [BATCH, SEQ, 5])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="smelt tests/models")
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    return m, {"feat": rng.standard_normal((BATCH, SEQ, INPUT)).astype(np.float32)}, None


def fused_case():
    """Sigmoid -> GRU (no B, sequence_lens a graph input) -> Relu on Y and Mul on Y_h: an
    elementwise producer the projection may inline and consumers its stores may carry."""
    rng = np.random.default_rng(41)
    w = (rng.standard_normal((1, 3 * HIDDEN, INPUT)) * 0.5).astype(np.float32)
    r = (rng.standard_normal((1, 3 * HIDDEN, HIDDEN)) * 0.5).astype(np.float32)
    nodes = [
        helper.make_node("Sigmoid", ["inp"], ["x"]),
        helper.make_node("GRU", ["x", "W", "R", "", "lens"], ["y", "yh"], hidden_size=HIDDEN),
        helper.make_node("Relu", ["y"], ["out"]),
        helper.make_node("Mul", ["yh", "yh"], ["out2"]),
    ]
    graph = helper.make_graph(nodes, "gru_fused", [helper.make_tensor_value_info("inp", F32, [SEQ, BATCH, INPUT]),
                                                   helper.make_tensor_value_info("lens", TensorProto.INT32, [BATCH])],
                              [helper.make_tensor_value_info("out", F32, [SEQ, 1, BATCH, HIDDEN]),
                               helper.make_tensor_value_info("out2", F32, [1, BATCH, HIDDEN])],
                              [numpy_helper.from_array(w, "W"), numpy_helper.from_array(r, "R")])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="smelt tests/models")
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    inputs = {"inp": rng.standard_normal((SEQ, BATCH, INPUT)).astype(np.float32),
              "lens": np.array([3, 9, 0], np.int32)}
    return m, inputs, None


def weights_input_case(seed, op, seq, **attrs):
    """W, R and B graph inputs (so not packed at compile time: the CPU projection is the packed
    GEMM over panels written per call), bidirectional, batch 2 with a shorter second entry."""
    rng = np.random.default_rng(seed)
    g, batch = GATES[op], 2
    lens = np.array([seq, max(1, seq - 3)], np.int32)
    node = helper.make_node(op, ["X", "W", "R", "B", "lens"], ["Y", "Y_h"], name="rnn", direction="bidirectional",
                            hidden_size=HIDDEN, **attrs)
    shapes = {"X": [seq, batch, INPUT], "W": [2, g * HIDDEN, INPUT], "R": [2, g * HIDDEN, HIDDEN], "B": [2, 2 * g * HIDDEN]}
    gin = [helper.make_tensor_value_info(k, F32, v) for k, v in shapes.items()]
    gout = [helper.make_tensor_value_info("Y", F32, [seq, 2, batch, HIDDEN]),
            helper.make_tensor_value_info("Y_h", F32, [2, batch, HIDDEN])]
    graph = helper.make_graph([node], f"{op.lower()}_weights_input", gin, gout, [numpy_helper.from_array(lens, "lens")])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], producer_name="smelt tests/models")
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    inputs = {k: (rng.standard_normal(v) * (1.0 if k == "X" else 0.5)).astype(np.float32) for k, v in shapes.items()}
    return m, inputs, None


CASES = {
    # every optional input, both directions, ragged lengths, clip, all three outputs
    "lstm_bidir_full": lambda: rnn_case(1, "LSTM", "bidirectional", lens=[9, 5, 1], init_h=True, init_c=True,
                                        peep=True, clip=0.8),
    # layout 1, non-default activations with alpha/beta; sequence_lens a graph input
    "lstm_layout1_acts": lambda: rnn_case(2, "LSTM", "bidirectional", layout=1, lens=[4, 9, 7], lens_input=True,
                                          init_h=True, activations=["HardSigmoid", "ScaledTanh", "Softsign",
                                                                    "Sigmoid", "Elu", "Tanh"],
                                          activation_alpha=[0.3, 1.2, 0.7], activation_beta=[0.45, 0.8]),
    # reverse, input_forget, no B, only Y_h
    "lstm_reverse_forget": lambda: rnn_case(3, "LSTM", "reverse", bias=False, input_forget=1, init_c=True,
                                            outputs=("Y_h",)),
    # only Y_c; Softplus and Affine
    "lstm_yc_only": lambda: rnn_case(4, "LSTM", lens=[2, 9, 6], outputs=("Y_c",),
                                     activations=["Sigmoid", "Softplus", "Affine"], activation_alpha=[0.9],
                                     activation_beta=[0.1]),
    "gru_bidir_lbr0": lambda: rnn_case(5, "GRU", "bidirectional", lens=[9, 3, 6], lens_input=True, init_h=True,
                                       clip=1.5),
    "gru_reverse_lbr1": lambda: rnn_case(6, "GRU", "reverse", linear_before_reset=1, init_h=True,
                                         activations=["HardSigmoid", "LeakyRelu"], activation_alpha=[0.25, 0.1],
                                         activation_beta=[0.5], outputs=("Y_h",)),
    "gru_bidir_lbr1_layout1": lambda: rnn_case(7, "GRU", "bidirectional", layout=1, linear_before_reset=1,
                                               lens=[1, 9, 8], bias=True),
    "rnn_bidir_acts": lambda: rnn_case(8, "RNN", "bidirectional", lens=[9, 0, 5], init_h=True,
                                       activations=["Relu", "ThresholdedRelu"], activation_alpha=[0.2]),
    "rnn_reverse_clip": lambda: rnn_case(9, "RNN", "reverse", bias=False, clip=0.6, outputs=("Y",)),
    "lstm_crnn_head": crnn_case,
    "gru_fused_io": fused_case,
    # weights as graph inputs: sequence lengths 7 (masked to 4 for batch entry 1) and 1
    "lstm_weights_input_seq7": lambda: weights_input_case(42, "LSTM", 7),
    "lstm_weights_input_seq1": lambda: weights_input_case(43, "LSTM", 1),
    "gru_weights_input_seq7_lbr1": lambda: weights_input_case(44, "GRU", 7, linear_before_reset=1),
}


def other_values(inputs, seed):
    rng = np.random.default_rng(seed)
    out = {}
    for k, v in inputs.items():
        if v.dtype == np.int32:  # sequence lengths: another valid set
            out[k] = rng.integers(0, SEQ + 1, size=v.shape).astype(np.int32)
        else:
            out[k] = rng.standard_normal(v.shape).astype(v.dtype)
    return out


def reference(model, twin, inputs):
    if twin is None:
        sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        return sess.run(None, inputs)
    sess = ort.InferenceSession(twin.SerializeToString(), providers=["CPUExecutionProvider"])
    feed = {k: (np.ascontiguousarray(np.swapaxes(v, 0, 1)) if k == "X" else v) for k, v in inputs.items()}
    outs = sess.run(None, feed)
    names = [o.name for o in twin.graph.output]
    # Y [seq, dirs, batch, H] -> [batch, seq, dirs, H]; Y_h/Y_c [dirs, batch, H] -> [batch, dirs, H]
    return [np.ascontiguousarray(np.transpose(v, (2, 0, 1, 3)) if n == "Y" else np.swapaxes(v, 0, 1))
            for n, v in zip(names, outs)]


def write_case(out_dir, name, model, inputs, twin):
    d = os.path.join(out_dir, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    onnx.save(model, os.path.join(d, "model.onnx"))
    for s, feed in enumerate((inputs, other_values(inputs, 100 + len(name)))):
        ds = os.path.join(d, f"test_data_set_{s}")
        os.makedirs(ds)
        for i, (k, v) in enumerate(feed.items()):
            with open(os.path.join(ds, f"input_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(v, k).SerializeToString())
        for i, (o, v) in enumerate(zip(model.graph.output, reference(model, twin, feed))):
            with open(os.path.join(ds, f"output_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(v, o.name).SerializeToString())
    ops = sorted({n.op_type for n in model.graph.node})
    print(f"models: {name}: {len(model.graph.node)} nodes ({', '.join(ops)})")


def main():
    out_dir = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "models"))
    os.makedirs(out_dir, exist_ok=True)
    for name, make in CASES.items():
        write_case(out_dir, "rnn_" + name, *make())
    return 0


if __name__ == "__main__":
    sys.exit(main())
