#!/usr/bin/env python3
"""Build If / Loop / Scan test models in ONNX backend-test layout.

    .venv/bin/python tests/models/control_cases.py [OUT_DIR]     (default: build/models_control)

Each case is written as OUT_DIR/ctrl_<name>/model.onnx plus test_data_set_{0,1}/{input_*,output_*}.pb,
the layout `smelt check` reads; reference outputs come from onnxruntime, and `smelt check` compiles one
program per input-shape signature and runs both sets on it. An If whose condition comes from a small graph
input is specialised on that input's value and guarded, so `if_branch_by_input` takes the then branch in set 0
and the else branch in set 1 on two programs. Everything else runs both sets on ONE program with values it was
not compiled with. Control flow that is not resolved when compiling runs at run time (src/graph/control_rt.c:
each subgraph compiled once into a child program, an if/loop command in the parent's command list):
`if_runtime_cond` and `if_runtime_shapes` (branches of different shapes, the output's shape known after the
run) branch on a value computed from data; `loop_runtime_trip` is a while loop whose trip count and condition
come from the input's values (the two sets run 15 and 36 iterations); `loop_const_5000` is a constant
5000-iteration loop with a scan output and `scan_long_1000` a 1000-step Scan, both run as host loops over one
compiled body. Small loops (trip count known and at most 16) are still unrolled so they fuse: Loop with a
constant trip count, loop-carried state, the iteration number and scan outputs; a while-style Loop (no trip
count) ended by a condition the body computes from a carried counter, and one whose condition compares with a
graph input read inside the body (specialised on that input, like `mode`); Scan as a running sum (forward) and
over axis 1 in reverse with a reversed scan output; an RNN cell written as Scan reading its weights from the
outer graph; an opset-8 Scan (batch axis, directions); and an If nested inside a Loop, choosing by the
iteration number's parity and reading a main-graph input two scopes up. Every case reads outer-scope values
inside its subgraphs.
"""
import os
import shutil
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
F32, I64, BOOL = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
OPSET = 17


def vi(name, dt, shape):
    return helper.make_tensor_value_info(name, dt, shape)


def const(name, arr):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(arr), name))


def model(nodes, inputs, outputs, inits=(), opset=OPSET):
    g = helper.make_graph(nodes, "control", inputs, outputs,
                          [numpy_helper.from_array(v, k) for k, v in dict(inits).items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    return m


def rnd(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def if_branch_by_input():
    """If on Equal(mode, 1): mode is a graph input; both branches read outer x and w."""
    then_g = helper.make_graph([helper.make_node("Mul", ["x", "w"], ["t0"]),
                                helper.make_node("Add", ["t0", "x"], ["t"])],
                               "then", [], [vi("t", F32, [3, 5])])
    else_g = helper.make_graph([helper.make_node("Relu", ["x"], ["e0"]),
                                helper.make_node("Sub", ["e0", "w"], ["e"])],
                               "else", [], [vi("e", F32, [3, 5])])
    nodes = [const("one", np.array(1, np.int64)),
             helper.make_node("Equal", ["mode", "one"], ["c"]),
             helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g),
             helper.make_node("Sigmoid", ["y"], ["z"])]
    rng = np.random.default_rng(1)
    m = model(nodes, [vi("x", F32, [3, 5]), vi("mode", I64, [])], [vi("z", F32, [3, 5])],
              {"w": rnd(rng, 3, 5)})
    sets = [{"x": rnd(rng, 3, 5), "mode": np.array(1, np.int64)},
            {"x": rnd(rng, 3, 5), "mode": np.array(0, np.int64)}]
    return m, sets


def if_runtime_cond():
    """If on ReduceSum(x) > 0, a run-time value (x is 8x16, too large to specialise on): set 0 takes the
    then branch, set 1 the else branch, both on one program (smelt computes both and selects)."""
    then_g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["t"])], "then", [], [vi("t", F32, [8, 4])])
    else_g = helper.make_graph([helper.make_node("Abs", ["x"], ["a"]),
                                helper.make_node("MatMul", ["a", "w"], ["e0"]),
                                helper.make_node("Neg", ["e0"], ["e"])], "else", [], [vi("e", F32, [8, 4])])
    nodes = [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0), const("zero", np.array(0, np.float32)),
             helper.make_node("Greater", ["s", "zero"], ["c"]),
             helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)]
    rng = np.random.default_rng(9)
    m = model(nodes, [vi("x", F32, [8, 16])], [vi("y", F32, [8, 4])], {"w": rnd(rng, 16, 4)})
    x = rnd(rng, 8, 16)
    sets = [{"x": np.abs(x) + 0.1}, {"x": -np.abs(rnd(rng, 8, 16)) - 0.1}]
    return m, sets


def loop_state_scan():
    """Loop M=5: h = tanh(h @ W + X[i]); scan output h each step, final h, carried counter."""
    body = helper.make_graph(
        [helper.make_node("Gather", ["X", "i"], ["xi"], axis=0),
         helper.make_node("MatMul", ["h", "W"], ["hw"]),
         helper.make_node("Add", ["hw", "xi"], ["a"]),
         helper.make_node("Tanh", ["a"], ["h2"]),
         helper.make_node("Cast", ["i"], ["fi"], to=F32),
         helper.make_node("Add", ["acc", "fi"], ["acc2"]),
         helper.make_node("Identity", ["cond"], ["cond2"]),
         helper.make_node("Identity", ["h2"], ["hs"])],
        "body", [vi("i", I64, []), vi("cond", BOOL, []), vi("h", F32, [1, 4]), vi("acc", F32, [])],
        [vi("cond2", BOOL, []), vi("h2", F32, [1, 4]), vi("acc2", F32, []), vi("hs", F32, [1, 4])])
    nodes = [const("M", np.array(5, np.int64)), const("T", np.array(True)), const("a0", np.array(0, np.float32)),
             helper.make_node("Loop", ["M", "T", "h0", "a0"], ["hN", "accN", "hseq"], body=body)]
    rng = np.random.default_rng(2)
    m = model(nodes, [vi("h0", F32, [1, 4]), vi("X", F32, [5, 4])],
              [vi("hN", F32, [1, 4]), vi("accN", F32, []), vi("hseq", F32, [5, 1, 4])],
              {"W": rnd(rng, 4, 4) * 0.5})
    sets = [{"h0": rnd(rng, 1, 4), "X": rnd(rng, 5, 4)} for _ in range(2)]
    return m, sets


def loop_while():
    """No trip count: the body counts k and stops when k reaches 6; y = 0.5 * y + x."""
    body = helper.make_graph(
        [const("one", np.array(1, np.int64)), const("six", np.array(6, np.int64)),
         const("half", np.array(0.5, np.float32)),
         helper.make_node("Add", ["k", "one"], ["k2"]),
         helper.make_node("Less", ["k2", "six"], ["c2"]),
         helper.make_node("Mul", ["y", "half"], ["yh"]),
         helper.make_node("Add", ["yh", "x"], ["y2"]),
         helper.make_node("ReduceSum", ["y2"], ["s"], keepdims=0)],
        "body", [vi("i", I64, []), vi("c", BOOL, []), vi("k", I64, []), vi("y", F32, [2, 3])],
        [vi("c2", BOOL, []), vi("k2", I64, []), vi("y2", F32, [2, 3]), vi("s", F32, [])])
    nodes = [const("T", np.array(True)), const("k0", np.array(0, np.int64)),
             helper.make_node("Loop", ["", "T", "k0", "y0"], ["kN", "yN", "sums"], body=body)]
    rng = np.random.default_rng(3)
    m = model(nodes, [vi("y0", F32, [2, 3]), vi("x", F32, [2, 3])],
              [vi("kN", I64, []), vi("yN", F32, [2, 3]), vi("sums", F32, [6])])
    sets = [{"y0": rnd(rng, 2, 3), "x": rnd(rng, 2, 3)} for _ in range(2)]
    return m, sets


def loop_until_input_limit():
    """While k < limit (a graph input read inside the body): the body's condition decides the trip
    count, so limit is specialised and guarded like a shape-deciding input; y = y * x + 1."""
    body = helper.make_graph(
        [const("one", np.array(1, np.int64)), const("onef", np.array(1, np.float32)),
         helper.make_node("Add", ["k", "one"], ["k2"]),
         helper.make_node("Less", ["k2", "limit"], ["c2"]),
         helper.make_node("Mul", ["y", "x"], ["yx"]),
         helper.make_node("Add", ["yx", "onef"], ["y2"])],
        "body", [vi("i", I64, []), vi("c", BOOL, []), vi("k", I64, []), vi("y", F32, [5])],
        [vi("c2", BOOL, []), vi("k2", I64, []), vi("y2", F32, [5]), vi("y2", F32, [5])])
    nodes = [const("T", np.array(True)), const("k0", np.array(0, np.int64)),
             helper.make_node("Loop", ["", "T", "k0", "y0"], ["kN", "yN", "ys"], body=body)]
    rng = np.random.default_rng(8)
    m = model(nodes, [vi("y0", F32, [5]), vi("x", F32, [5]), vi("limit", I64, [])],
              [vi("kN", I64, []), vi("yN", F32, [5]), vi("ys", F32, [3, 5])])
    sets = [{"y0": rnd(rng, 5), "x": rnd(rng, 5), "limit": np.array(3, np.int64)} for _ in range(2)]
    return m, sets


def scan_cumsum():
    """Scan: running sum over axis 0 of x [7, 3]; the state is the sum, the scan output each step's."""
    body = helper.make_graph([helper.make_node("Add", ["s", "e"], ["s2"]),
                              helper.make_node("Identity", ["s2"], ["o"])],
                             "body", [vi("s", F32, [3]), vi("e", F32, [3])], [vi("s2", F32, [3]), vi("o", F32, [3])])
    nodes = [helper.make_node("Scan", ["s0", "x"], ["sN", "cum"], body=body, num_scan_inputs=1)]
    rng = np.random.default_rng(4)
    m = model(nodes, [vi("s0", F32, [3]), vi("x", F32, [7, 3])], [vi("sN", F32, [3]), vi("cum", F32, [7, 3])])
    sets = [{"s0": rnd(rng, 3), "x": rnd(rng, 7, 3)} for _ in range(2)]
    return m, sets


def scan_reverse_axis1():
    """Scan over axis 1 of x [3, 6], read in reverse; scan output stacked on axis 1, reversed."""
    body = helper.make_graph([helper.make_node("Mul", ["s", "e"], ["p"]),
                              helper.make_node("Add", ["p", "e"], ["s2"]),
                              helper.make_node("Neg", ["s2"], ["o"])],
                             "body", [vi("s", F32, [3]), vi("e", F32, [3])], [vi("s2", F32, [3]), vi("o", F32, [3])])
    nodes = [helper.make_node("Scan", ["s0", "x"], ["sN", "ys"], body=body, num_scan_inputs=1,
                              scan_input_axes=[1], scan_input_directions=[1],
                              scan_output_axes=[1], scan_output_directions=[1])]
    rng = np.random.default_rng(5)
    m = model(nodes, [vi("s0", F32, [3]), vi("x", F32, [3, 6])], [vi("sN", F32, [3]), vi("ys", F32, [3, 6])])
    sets = [{"s0": rnd(rng, 3) * 0.5, "x": rnd(rng, 3, 6) * 0.5} for _ in range(2)]
    return m, sets


def scan8_batch():
    """Opset-8 Scan: batch axis 0 (3), sequence axis 1 (5), the second scan input read in reverse."""
    body = helper.make_graph([helper.make_node("Add", ["s", "a"], ["s1"]),
                              helper.make_node("Mul", ["s1", "b"], ["s2"]),
                              helper.make_node("Sub", ["s2", "a"], ["o"])],
                             "body", [vi("s", F32, [4]), vi("a", F32, [4]), vi("b", F32, [4])],
                             [vi("s2", F32, [4]), vi("o", F32, [4])])
    nodes = [helper.make_node("Scan", ["", "s0", "xa", "xb"], ["sN", "ys"], body=body, num_scan_inputs=2,
                              directions=[0, 1])]
    rng = np.random.default_rng(10)
    m = model(nodes, [vi("s0", F32, [3, 4]), vi("xa", F32, [3, 5, 4]), vi("xb", F32, [3, 5, 4])],
              [vi("sN", F32, [3, 4]), vi("ys", F32, [3, 5, 4])], opset=8)
    sets = [{"s0": rnd(rng, 3, 4), "xa": rnd(rng, 3, 5, 4), "xb": rnd(rng, 3, 5, 4) * 0.5} for _ in range(2)]
    return m, sets


def scan_rnn_cell():
    """An RNN cell as Scan: h' = tanh(x_t Wx + h Wh + b), weights read from the outer graph."""
    body = helper.make_graph([helper.make_node("MatMul", ["xt", "Wx"], ["a"]),
                              helper.make_node("MatMul", ["h", "Wh"], ["b0"]),
                              helper.make_node("Add", ["a", "b0"], ["c"]),
                              helper.make_node("Add", ["c", "bias"], ["d"]),
                              helper.make_node("Tanh", ["d"], ["h2"]),
                              helper.make_node("Identity", ["h2"], ["y"])],
                             "cell", [vi("h", F32, [2, 8]), vi("xt", F32, [2, 5])],
                             [vi("h2", F32, [2, 8]), vi("y", F32, [2, 8])])
    nodes = [helper.make_node("Scan", ["h0", "x"], ["hN", "ys"], body=body, num_scan_inputs=1)]
    rng = np.random.default_rng(6)
    m = model(nodes, [vi("h0", F32, [2, 8]), vi("x", F32, [9, 2, 5])], [vi("hN", F32, [2, 8]), vi("ys", F32, [9, 2, 8])],
              {"Wx": rnd(rng, 5, 8) * 0.4, "Wh": rnd(rng, 8, 8) * 0.3, "bias": rnd(rng, 8) * 0.1})
    sets = [{"h0": rnd(rng, 2, 8), "x": rnd(rng, 9, 2, 5)} for _ in range(2)]
    return m, sets


def nested_if_in_loop():
    """Loop M=4 whose body branches on the iteration's parity: even y + x, odd y * x (x: main graph)."""
    then_g = helper.make_graph([helper.make_node("Add", ["y", "x"], ["t"])], "even", [], [vi("t", F32, [4])])
    else_g = helper.make_graph([helper.make_node("Mul", ["y", "x"], ["e"])], "odd", [], [vi("e", F32, [4])])
    body = helper.make_graph(
        [const("two", np.array(2, np.int64)), const("zero", np.array(0, np.int64)),
         helper.make_node("Mod", ["i", "two"], ["r"]),
         helper.make_node("Equal", ["r", "zero"], ["even"]),
         helper.make_node("If", ["even"], ["y2"], then_branch=then_g, else_branch=else_g),
         helper.make_node("Identity", ["c"], ["c2"])],
        "body", [vi("i", I64, []), vi("c", BOOL, []), vi("y", F32, [4])], [vi("c2", BOOL, []), vi("y2", F32, [4])])
    nodes = [const("M", np.array(4, np.int64)),
             helper.make_node("Loop", ["M", "", "y0"], ["yN"], body=body)]
    rng = np.random.default_rng(7)
    m = model(nodes, [vi("y0", F32, [4]), vi("x", F32, [4])], [vi("yN", F32, [4])])
    sets = [{"y0": rnd(rng, 4), "x": rnd(rng, 4)} for _ in range(2)]
    return m, sets


def if_runtime_shapes():
    """If on ReduceSum(x) > 0 (x 10x10: a run-time value) whose branches give different shapes: then x @ w1
    [10, 4], else (x * s) @ w2 [10, 6], s a value computed in the main graph. Only the taken branch runs; the
    output's shape is known after the run (it feeds a graph output directly)."""
    then_g = helper.make_graph([helper.make_node("MatMul", ["x", "w1"], ["t"])], "then", [], [vi("t", F32, [10, 4])])
    else_g = helper.make_graph([helper.make_node("Mul", ["x", "s"], ["xs"]),
                                helper.make_node("MatMul", ["xs", "w2"], ["e"])], "else", [], [vi("e", F32, [10, 6])])
    nodes = [helper.make_node("ReduceSum", ["x"], ["sum"], keepdims=0), const("zero", np.array(0, np.float32)),
             helper.make_node("Greater", ["sum", "zero"], ["c"]),
             helper.make_node("ReduceMax", ["x"], ["s"], keepdims=0),
             helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)]
    rng = np.random.default_rng(11)
    m = model(nodes, [vi("x", F32, [10, 10])], [vi("y", F32, [10, None])], {"w1": rnd(rng, 10, 4), "w2": rnd(rng, 10, 6)})
    sets = [{"x": np.abs(rnd(rng, 10, 10)) + 0.1}, {"x": -np.abs(rnd(rng, 10, 10)) - 0.1}]
    return m, sets


def loop_runtime_trip():
    """A while loop whose trip count comes from the input's values: M = the number of positive elements of x
    (100 of them: a run-time value), and the body's condition k < lim with lim = 4 * max(x) computed in the main
    graph; h = tanh(h @ W + b * k) with W a constant and b = mean(x) read from the outer scope, and h each step
    as a scan output, whose length is known only at run time (a buffer that grows). The two sets run different
    trip counts on one program."""
    body = helper.make_graph(
        [const("one", np.array(1, np.int64)),
         helper.make_node("MatMul", ["h", "W"], ["hw"]),
         helper.make_node("Cast", ["k"], ["kf"], to=F32),
         helper.make_node("Mul", ["b", "kf"], ["bk"]),
         helper.make_node("Add", ["hw", "bk"], ["a"]),
         helper.make_node("Tanh", ["a"], ["h2"]),
         helper.make_node("Add", ["k", "one"], ["k2"]),
         helper.make_node("Less", ["k2", "lim"], ["c2"])],
        "body", [vi("i", I64, []), vi("c", BOOL, []), vi("k", I64, []), vi("h", F32, [1, 8])],
        [vi("c2", BOOL, []), vi("k2", I64, []), vi("h2", F32, [1, 8]), vi("h2", F32, [1, 8])])
    nodes = [const("zero", np.array(0, np.float32)), const("four", np.array(4, np.float32)),
             const("k0", np.array(0, np.int64)), const("T", np.array(True)),
             helper.make_node("Greater", ["x", "zero"], ["pos"]),
             helper.make_node("Cast", ["pos"], ["posi"], to=I64),
             helper.make_node("ReduceSum", ["posi"], ["M"], keepdims=0),
             helper.make_node("ReduceMax", ["x"], ["mx"], keepdims=0),
             helper.make_node("Mul", ["mx", "four"], ["mx4"]),
             helper.make_node("Cast", ["mx4"], ["lim"], to=I64),
             helper.make_node("ReduceMean", ["x"], ["b"], keepdims=0),
             helper.make_node("Loop", ["M", "T", "k0", "h0"], ["kN", "hN", "hs"], body=body)]
    rng = np.random.default_rng(12)
    m = model(nodes, [vi("x", F32, [100]), vi("h0", F32, [1, 8])],
              [vi("kN", I64, []), vi("hN", F32, [1, 8]), vi("hs", F32, [None, 1, 8])],
              {"W": rnd(rng, 8, 8) * 0.3})
    x0 = rnd(rng, 100)
    x0[:85] = -np.abs(x0[:85])
    x0[85:] = np.abs(x0[85:]) + 5  # 15 positive, lim >= 20: the trip count is M = 15
    x1 = np.abs(rnd(rng, 100)) * 0.5 + 0.01
    x1[0] = 9.0  # 100 positive, lim = 36: the condition ends it after 36
    return m, [{"x": x0, "h0": rnd(rng, 1, 8)}, {"x": x1, "h0": rnd(rng, 1, 8)}]


def loop_const_5000():
    """Loop M=5000 (a constant, over the unroll limit): y = 0.999 * y + x * w (x an outer input, w an outer
    constant), acc += i, and a scan output of sum(y) per iteration (5000 slices written at offset i)."""
    body = helper.make_graph(
        [const("d", np.array(0.999, np.float32)),
         helper.make_node("Mul", ["y", "d"], ["yd"]),
         helper.make_node("Mul", ["x", "w"], ["xw"]),
         helper.make_node("Add", ["yd", "xw"], ["y2"]),
         helper.make_node("Cast", ["i"], ["fi"], to=F32),
         helper.make_node("Add", ["acc", "fi"], ["acc2"]),
         helper.make_node("ReduceSum", ["y2"], ["s"], keepdims=0),
         helper.make_node("Identity", ["c"], ["c2"])],
        "body", [vi("i", I64, []), vi("c", BOOL, []), vi("y", F32, [16]), vi("acc", F32, [])],
        [vi("c2", BOOL, []), vi("y2", F32, [16]), vi("acc2", F32, []), vi("s", F32, [])])
    nodes = [const("M", np.array(5000, np.int64)), const("T", np.array(True)), const("a0", np.array(0, np.float32)),
             helper.make_node("Loop", ["M", "T", "y0", "a0"], ["yN", "accN", "sums"], body=body)]
    rng = np.random.default_rng(13)
    m = model(nodes, [vi("y0", F32, [16]), vi("x", F32, [16])], [vi("yN", F32, [16]), vi("accN", F32, []),
              vi("sums", F32, [5000])], {"w": rnd(rng, 16) * 0.01})
    return m, [{"y0": rnd(rng, 16), "x": rnd(rng, 16)} for _ in range(2)]


def scan_long_1000():
    """Scan over 1000 steps of x [1000, 4]: s = s * g + e @ V, with V an outer constant and g = sigmoid(gain) an
    outer value computed from an input; scan output s each step."""
    body = helper.make_graph([helper.make_node("Mul", ["s", "g"], ["sg"]),
                              helper.make_node("MatMul", ["e", "V"], ["ev"]),
                              helper.make_node("Add", ["sg", "ev"], ["s2"]),
                              helper.make_node("Identity", ["s2"], ["o"])],
                             "body", [vi("s", F32, [4]), vi("e", F32, [4])], [vi("s2", F32, [4]), vi("o", F32, [4])])
    nodes = [helper.make_node("Sigmoid", ["gain"], ["g"]),
             helper.make_node("Scan", ["s0", "x"], ["sN", "ys"], body=body, num_scan_inputs=1)]
    rng = np.random.default_rng(14)
    m = model(nodes, [vi("s0", F32, [4]), vi("x", F32, [1000, 4]), vi("gain", F32, [4])],
              [vi("sN", F32, [4]), vi("ys", F32, [1000, 4])], {"V": rnd(rng, 4, 4) * 0.3})
    return m, [{"s0": rnd(rng, 4), "x": rnd(rng, 1000, 4), "gain": rnd(rng, 4)} for _ in range(2)]


CASES = {"if_branch_by_input": if_branch_by_input, "if_runtime_cond": if_runtime_cond, "loop_state_scan": loop_state_scan, "loop_while": loop_while,
         "loop_until_input_limit": loop_until_input_limit,
         "scan_cumsum": scan_cumsum, "scan_reverse_axis1": scan_reverse_axis1, "scan_rnn_cell": scan_rnn_cell,
         "scan8_batch": scan8_batch,
         "nested_if_in_loop": nested_if_in_loop,
         "if_runtime_shapes": if_runtime_shapes, "loop_runtime_trip": loop_runtime_trip,
         "loop_const_5000": loop_const_5000, "scan_long_1000": scan_long_1000}


def write_case(out_dir, name, m, sets):
    d = os.path.join(out_dir, "ctrl_" + name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    onnx.save(m, os.path.join(d, "model.onnx"))
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    for s, feed in enumerate(sets):
        ds = os.path.join(d, f"test_data_set_{s}")
        os.makedirs(ds)
        for i, (k, v) in enumerate(feed.items()):
            with open(os.path.join(ds, f"input_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(v, k).SerializeToString())
        for i, (k, v) in enumerate(zip(names, sess.run(None, feed))):
            with open(os.path.join(ds, f"output_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(np.asarray(v), k).SerializeToString())


def main():
    out_dir = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "models_control"))
    os.makedirs(out_dir, exist_ok=True)
    for name, make in CASES.items():
        m, sets = make()
        write_case(out_dir, name, m, sets)
    print(f"control_cases: {len(CASES)} models in {out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
