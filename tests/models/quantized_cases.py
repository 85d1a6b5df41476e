#!/usr/bin/env python3
"""Build the integer/quantized and com.microsoft test cases in ONNX backend-test layout.

    .venv/bin/python tests/models/quantized_cases.py [OUT_DIR]     (default: build/models_quantized)

Each case is OUT_DIR/<name>/model.onnx plus test_data_set_0 and test_data_set_1 (two input sets,
so a program compiled once must follow its inputs); inputs come from a fixed seed, reference
outputs from onnxruntime (1 thread). `smelt check` must match integer outputs exactly.

uint8 x int8 products: onnxruntime's x86 kernels without VNNI (AVX2 vpmaddubsw) add adjacent
uint8*int8 products in saturating int16, so its result differs from the spec's int32 sum when
two such products exceed 32767. smelt computes the spec's sum; the uint8 operands of uint8 x int8
cases here stay below 128 (onnxruntime's own "reduce_range" remedy) so the reference is exact.
Cases:

    q_matmulinteger_*   MatMulInteger: uint8/int8 operands, batch dims, per-column b zero
                        points, zero points at 0/255 and -128/127, odd sizes; per-row a zero
                        points against numpy (onnxruntime refuses them)
    q_qlinearmatmul_*   QLinearMatMul: tiny y_scale so most outputs saturate, per-column
                        b scale and zero point, int8 and uint8
    q_convinteger_*     ConvInteger: asymmetric pads, strides, dilations, groups, batch 2
    q_qlinearconv_*     QLinearConv: per-channel int8 weights, int32 bias, groups
    q_*_chunked_numpy   MatMulInteger (constant and computed B) and ConvInteger (batch 2, per-channel
                        zero points, pads) whose sums pass 2^24: float32 in chunks of K
    q_convinteger_u8_3x3_exact_numpy  a 3x3 stride-1 ConvInteger of Winograd's size, exact
    q_dynamicquantize   DynamicQuantizeLinear: mixed-sign input; all-positive input
    q_ort_dynamic_*     a float MLP and a float CNN quantized by onnxruntime's quantize_dynamic,
    q_ort_optimized_*   then optimized by onnxruntime (the com.microsoft forms it writes)
    q_ort_static_qdq_*  the same models by quantize_static in QDQ form (per-channel int8 weights),
                        referenced by onnxruntime running the QDQ graph as written; *_contrib_*
                        with the com.microsoft QuantizeLinear/DequantizeLinear; *_qoperator_* in
                        QOperator form (QLinearConv, QLinearAdd, QLinearGlobalAveragePool...)
    q_contrib_*         hand-built com.microsoft ops: QGemm (float and quantized output),
                        MatMulIntegerToFloat, DynamicQuantizeMatMul, Gelu, BiasGelu, FastGelu,
                        SkipLayerNormalization (all four outputs), FusedConv, QLinearAdd,
                        QLinearMul, QLinearSigmoid, QLinearLeakyRelu, QLinearGlobalAveragePool,
                        Attention (mask_index, unidirectional, qkv_hidden_sizes, attention_bias),
                        DynamicQuantizeLSTM (bidirectional with states and peepholes; per-column)

Prints one line per case written (or skipped, with the reason).
"""
import os
import shutil
import sys
import tempfile

import logging

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

U8, I8, I32, F32 = TensorProto.UINT8, TensorProto.INT8, TensorProto.INT32, TensorProto.FLOAT
NP = {U8: np.uint8, I8: np.int8, I32: np.int32, F32: np.float32}
MS = "com.microsoft"


def make_model(name, nodes, inputs, outputs, inits, opset=21, ms=False):
    graph = helper.make_graph(nodes, name, inputs, outputs, inits)
    ops = [helper.make_opsetid("", opset)] + ([helper.make_opsetid(MS, 1)] if ms else [])
    m = helper.make_model(graph, opset_imports=ops, producer_name="smelt tests/models/quantized_cases")
    m.ir_version = 8
    if not ms:
        onnx.checker.check_model(m, full_check=True)
    return m


def tensor(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def rand_u7(rng, shape):
    """uint8 values below 128: the uint8 operand of a uint8 x int8 product (see the docstring)."""
    return rand_q(rng, U8, shape, 0, 127)


def rand_q(rng, dt, shape, lo=None, hi=None):
    info = np.iinfo(NP[dt])
    return rng.integers(info.min if lo is None else lo, (info.max if hi is None else hi) + 1, size=shape,
                        dtype=np.int64).astype(NP[dt])


def session(model_bytes, optimize=True):
    so = ort.SessionOptions()
    if not optimize:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    return ort.InferenceSession(model_bytes, so, providers=["CPUExecutionProvider"])


def write_case(out_dir, name, model, input_sets, reference=None, optimize=True):
    """reference(inputs) -> outputs replaces onnxruntime for forms it does not run; optimize=False
    runs onnxruntime without graph optimizations (a QDQ model then runs as written, in float,
    not through the integer kernels its QDQ fusion would pick)."""
    d = os.path.join(out_dir, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    data = model.SerializeToString()
    if reference is None:
        try:
            sess = session(data, optimize)
        except Exception as e:  # an onnxruntime that lacks a kernel for this form
            print(f"quantized: {name}: skipped (onnxruntime: {str(e).splitlines()[0][:160]})")
            shutil.rmtree(d, ignore_errors=True)
            return
        reference = lambda inputs: sess.run(None, inputs)  # noqa: E731
    out_names = [o.name for o in model.graph.output]
    with open(os.path.join(d, "model.onnx"), "wb") as f:
        f.write(data)
    for k, inputs in enumerate(input_sets):
        ds = os.path.join(d, f"test_data_set_{k}")
        os.makedirs(ds)
        outputs = reference(inputs)
        for i, (n, v) in enumerate(inputs.items()):
            with open(os.path.join(ds, f"input_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(v, n).SerializeToString())
        for i, (n, v) in enumerate(zip(out_names, outputs)):
            with open(os.path.join(ds, f"output_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(v, n).SerializeToString())
    ops = sorted({(n.domain + "." if n.domain else "") + n.op_type for n in model.graph.node})
    print(f"quantized: {name}: {len(model.graph.node)} nodes ({', '.join(ops)})")


def vi(name, dt, shape):
    return helper.make_tensor_value_info(name, dt, shape)


# ---- standard integer ops ---------------------------------------------------------------------

def matmulinteger_cases(rng):
    cases = []
    # uint8 x uint8, 3-D A (batch 3), per-column b zero points at the extremes.
    azp = np.array(255, np.uint8)
    bzp = rand_q(rng, U8, [9])
    bzp[0], bzp[1] = 0, 255
    b = rand_q(rng, U8, [7, 9])
    n = [helper.make_node("MatMulInteger", ["a", "b", "azp", "bzp"], ["y"], name="mmi")]
    m = make_model("mmi_u8", n, [vi("a", U8, [3, 5, 7])], [vi("y", I32, [3, 5, 9])],
                   [tensor("b", b), tensor("azp", azp), tensor("bzp", bzp)])
    cases.append(("q_matmulinteger_u8", m, [{"a": rand_q(rng, U8, [3, 5, 7])} for _ in range(2)]))
    # int8 x int8, zero points -128 / 127, B a graph input too.
    n = [helper.make_node("MatMulInteger", ["a", "b", "azp", "bzp"], ["y"], name="mmi")]
    m = make_model("mmi_s8", n, [vi("a", I8, [5, 13]), vi("b", I8, [13, 11])], [vi("y", I32, [5, 11])],
                   [tensor("azp", np.array(-128, np.int8)), tensor("bzp", np.array(127, np.int8))])
    cases.append(("q_matmulinteger_s8", m,
                  [{"a": rand_q(rng, I8, [5, 13]), "b": rand_q(rng, I8, [13, 11])} for _ in range(2)]))
    # uint8 x int8 without zero points, 4-D batched with a broadcast B.
    n = [helper.make_node("MatMulInteger", ["a", "b"], ["y"], name="mmi")]
    m = make_model("mmi_u8s8", n, [vi("a", U8, [2, 3, 4, 19])], [vi("y", I32, [2, 3, 4, 6])],
                   [tensor("b", rand_q(rng, I8, [19, 6]))])
    cases.append(("q_matmulinteger_u8s8", m, [{"a": rand_u7(rng, [2, 3, 4, 19])} for _ in range(2)]))
    # Per-row a zero point (the spec allows it, onnxruntime's kernel does not): numpy's int64
    # product is the reference.
    azp = rand_q(rng, U8, [6])
    b = rand_q(rng, U8, [8, 5])
    n = [helper.make_node("MatMulInteger", ["a", "b", "azp"], ["y"], name="mmi")]
    m = make_model("mmi_rowzp", n, [vi("a", U8, [6, 8])], [vi("y", I32, [6, 5])], [tensor("b", b), tensor("azp", azp)])
    ref = lambda inp: [((inp["a"].astype(np.int64) - azp[:, None]) @ b.astype(np.int64)).astype(np.int32)]  # noqa: E731
    cases.append(("q_matmulinteger_u8_perrow_numpy", m, [{"a": rand_q(rng, U8, [6, 8])} for _ in range(2)], ref))
    return cases


def qlinearmatmul_cases(rng):
    cases = []
    for dt, name in ((U8, "u8"), (I8, "s8")):
        b = rand_q(rng, dt, [33, 17])
        info = np.iinfo(NP[dt])
        inits = [tensor("as", np.array(0.02, np.float32)), tensor("azp", np.array(info.max - 3, NP[dt])),
                 tensor("b", b), tensor("bs", np.array(0.013, np.float32)), tensor("bzp", np.array(info.min + 1, NP[dt])),
                 tensor("ys", np.array(0.05, np.float32)), tensor("yzp", np.array(info.min + 100, NP[dt]))]
        n = [helper.make_node("QLinearMatMul", ["a", "as", "azp", "b", "bs", "bzp", "ys", "yzp"], ["y"], name="qlmm")]
        m = make_model("qlmm_" + name, n, [vi("a", dt, [2, 4, 33])], [vi("y", dt, [2, 4, 17])], inits)
        cases.append((f"q_qlinearmatmul_{name}", m, [{"a": rand_q(rng, dt, [2, 4, 33])} for _ in range(2)]))
    # per-column b scale and zero point, uint8, a y_scale that makes most outputs saturate.
    inits = [tensor("as", np.array(0.1, np.float32)), tensor("azp", np.array(0, np.uint8)),
             tensor("b", rand_q(rng, U8, [21, 10])), tensor("bs", (rng.random(10) * 0.05 + 0.01).astype(np.float32)),
             tensor("bzp", rand_q(rng, U8, [10])), tensor("ys", np.array(0.5, np.float32)),
             tensor("yzp", np.array(255, np.uint8))]
    n = [helper.make_node("QLinearMatMul", ["a", "as", "azp", "b", "bs", "bzp", "ys", "yzp"], ["y"], name="qlmm")]
    m = make_model("qlmm_percol", n, [vi("a", U8, [7, 21])], [vi("y", U8, [7, 10])], inits)
    cases.append(("q_qlinearmatmul_percolumn_saturate", m, [{"a": rand_q(rng, U8, [7, 21])} for _ in range(2)]))
    return cases


def convinteger_cases(rng):
    cases = []
    w = rand_q(rng, U8, [5, 3, 3, 3])
    n = [helper.make_node("ConvInteger", ["x", "w", "xzp", "wzp"], ["y"], name="ci", pads=[1, 2, 0, 1], strides=[2, 1])]
    m = make_model("ci_u8", n, [vi("x", U8, [2, 3, 9, 11])], [vi("y", I32, [2, 5, 4, 12])],
                   [tensor("w", w), tensor("xzp", np.array(200, np.uint8)), tensor("wzp", np.array(255, np.uint8))])
    cases.append(("q_convinteger_u8_pads_strides", m, [{"x": rand_q(rng, U8, [2, 3, 9, 11])} for _ in range(2)]))
    w = rand_q(rng, I8, [6, 2, 3, 2])
    n = [helper.make_node("ConvInteger", ["x", "w", "xzp"], ["y"], name="ci", group=2, dilations=[2, 1], pads=[2, 0, 1, 1])]
    m = make_model("ci_s8_group", n, [vi("x", U8, [1, 4, 8, 7])], [vi("y", I32, [1, 6, 7, 7])],
                   [tensor("w", w), tensor("xzp", np.array(7, np.uint8))])
    cases.append(("q_convinteger_u8s8_group_dilation", m, [{"x": rand_u7(rng, [1, 4, 8, 7])} for _ in range(2)]))
    return cases


def qlinearconv_cases(rng):
    cases = []
    m_out = 6
    inits = [tensor("xs", np.array(0.03, np.float32)), tensor("xzp", np.array(128, np.uint8)),
             tensor("w", rand_q(rng, I8, [m_out, 2, 3, 3])),
             tensor("ws", (rng.random(m_out) * 0.02 + 0.005).astype(np.float32)),
             tensor("wzp", np.zeros(m_out, np.int8)), tensor("ys", np.array(0.04, np.float32)),
             tensor("yzp", np.array(100, np.uint8)),
             tensor("bias", rng.integers(-3000, 3000, size=m_out).astype(np.int32))]
    n = [helper.make_node("QLinearConv", ["x", "xs", "xzp", "w", "ws", "wzp", "ys", "yzp", "bias"], ["y"], name="qc",
                          group=2, pads=[1, 1, 1, 1], strides=[1, 2])]
    m = make_model("qc_perchannel", n, [vi("x", U8, [2, 4, 10, 9])], [vi("y", U8, [2, 6, 10, 5])], inits)
    cases.append(("q_qlinearconv_u8s8_perchannel_group", m, [{"x": rand_u7(rng, [2, 4, 10, 9])} for _ in range(2)]))
    inits = [tensor("xs", np.array(0.1, np.float32)), tensor("xzp", np.array(3, np.uint8)),
             tensor("w", rand_q(rng, U8, [4, 3, 1, 1])), tensor("ws", np.array(0.07, np.float32)),
             tensor("wzp", np.array(250, np.uint8)), tensor("ys", np.array(0.2, np.float32)),
             tensor("yzp", np.array(0, np.uint8))]
    n = [helper.make_node("QLinearConv", ["x", "xs", "xzp", "w", "ws", "wzp", "ys", "yzp"], ["y"], name="qc")]
    m = make_model("qc_1x1", n, [vi("x", U8, [3, 3, 5, 5])], [vi("y", U8, [3, 4, 5, 5])], inits)
    cases.append(("q_qlinearconv_u8_1x1_saturate", m, [{"x": rand_q(rng, U8, [3, 3, 5, 5])} for _ in range(2)]))
    return cases


def dynamicquantize_cases(rng):
    n = [helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "ys", "yzp"], name="dql")]
    m = make_model("dql", n, [vi("x", F32, [3, 17])], [vi("y", U8, [3, 17]), vi("ys", F32, []), vi("yzp", U8, [])], [])
    sets = [{"x": (rng.standard_normal([3, 17]) * 4 - 1).astype(np.float32)},
            {"x": (rng.random([3, 17]) * 9 + 0.5).astype(np.float32)}]
    return [("q_dynamicquantize", m, sets)]


# ---- onnxruntime's own quantizer and optimizer ------------------------------------------------

def ort_quantized(rng, out_dir):
    try:
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as e:
        print(f"quantized: q_ort_dynamic_*: skipped ({e})")
        return []
    cases = []

    def w(shape, scale=0.3):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    # MLP: MatMul + Add + GELU (erf form) + MatMul + Add, residual Add, LayerNormalization.
    inits = [tensor("w1", w([24, 40])), tensor("b1", w([40], 0.1)), tensor("w2", w([40, 24])),
             tensor("b2", w([24], 0.1)), tensor("g", w([24], 1.0)), tensor("be", w([24], 0.1)),
             tensor("sq", np.array(1.4142135, np.float32)), tensor("one", np.array(1.0, np.float32)),
             tensor("half", np.array(0.5, np.float32))]
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["m1"]), helper.make_node("Add", ["m1", "b1"], ["h"]),
             helper.make_node("Div", ["h", "sq"], ["hd"]), helper.make_node("Erf", ["hd"], ["he"]),
             helper.make_node("Add", ["he", "one"], ["hp"]), helper.make_node("Mul", ["h", "hp"], ["hm"]),
             helper.make_node("Mul", ["hm", "half"], ["gl"]),
             helper.make_node("MatMul", ["gl", "w2"], ["m2"]), helper.make_node("Add", ["m2", "b2"], ["o"]),
             helper.make_node("Add", ["o", "x"], ["r"]),
             helper.make_node("LayerNormalization", ["r", "g", "be"], ["y"], axis=-1, epsilon=1e-5)]
    mlp = make_model("mlp", nodes, [vi("x", F32, [2, 5, 24])], [vi("y", F32, [2, 5, 24])], inits, opset=17)
    # CNN: Conv + Relu, Conv + Add (residual) + Relu; cnn_head adds GlobalAveragePool and Sigmoid.
    inits = [tensor("cw1", w([8, 3, 3, 3])), tensor("cb1", w([8], 0.1)), tensor("cw2", w([8, 8, 3, 3], 0.15)),
             tensor("cb2", w([8], 0.1)), tensor("cw3", w([8, 3, 1, 1]))]
    nodes = [helper.make_node("Conv", ["x", "cw1", "cb1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "cw2", "cb2"], ["c2"], pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["x", "cw3"], ["sc"]),
             helper.make_node("Add", ["c2", "sc"], ["s"]), helper.make_node("Relu", ["s"], ["y"])]
    cnn = make_model("cnn", nodes, [vi("x", F32, [2, 3, 9, 10])], [vi("y", F32, [2, 8, 9, 10])], inits, opset=17)
    nodes = nodes[:-1] + [helper.make_node("Relu", ["s"], ["r"]), helper.make_node("GlobalAveragePool", ["r"], ["g"]),
                          helper.make_node("Flatten", ["g"], ["f"]), helper.make_node("Sigmoid", ["f"], ["y"])]
    cnn_head = make_model("cnn_head", nodes, [vi("x", F32, [2, 3, 9, 10])], [vi("y", F32, [2, 8])], inits, opset=17)

    tmp = tempfile.mkdtemp()
    try:
        for name, model, shape in (("mlp", mlp, [2, 5, 24]), ("cnn", cnn, [2, 3, 9, 10])):
            src, q = os.path.join(tmp, name + ".onnx"), os.path.join(tmp, name + "_q.onnx")
            onnx.save(model, src)
            sets = [{"x": rng.standard_normal(shape).astype(np.float32)} for _ in range(2)]
            for wt, wname in ((QuantType.QUInt8, "u8"), (QuantType.QInt8, "s8")):
                # int8 weights against uint8 activations: reduce_range (7-bit weights) keeps
                # onnxruntime's int16 pair sums from saturating (see the docstring).
                quantize_dynamic(src, q, weight_type=wt, reduce_range=wt == QuantType.QInt8)
                qm = onnx.load(q)
                cases.append((f"q_ort_dynamic_{name}_{wname}", qm, sets))
                # What onnxruntime's optimizer makes of it (DynamicQuantizeMatMul, MatMulIntegerToFloat,
                # FusedConv, Gelu, SkipLayerNormalization... as the CPU provider fuses them).
                so = ort.SessionOptions()
                so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
                opt = os.path.join(tmp, name + "_opt.onnx")
                so.optimized_model_filepath = opt
                ort.InferenceSession(q, so, providers=["CPUExecutionProvider"])
                cases.append((f"q_ort_optimized_{name}_{wname}", onnx.load(opt), sets))
        # quantize_static in QDQ form, per-channel int8 weights (QuantizeLinear/DequantizeLinear pairs).
        from onnxruntime.quantization import CalibrationDataReader, QuantFormat, quantize_static

        class Reader(CalibrationDataReader):
            def __init__(self, shape):
                self.data = iter([{"x": rng.standard_normal(shape).astype(np.float32)} for _ in range(4)])

            def get_next(self):
                return next(self.data, None)

        for name, model, shape in (("mlp", mlp, [2, 5, 24]), ("cnn", cnn, [2, 3, 9, 10])):
            src, q = os.path.join(tmp, name + ".onnx"), os.path.join(tmp, name + "_qdq.onnx")
            onnx.save(model, src)
            sets = [{"x": rng.standard_normal(shape).astype(np.float32)} for _ in range(2)]
            for contrib in (False, True):
                quantize_static(src, q, Reader(shape), quant_format=QuantFormat.QDQ, per_channel=True,
                                activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                                extra_options={"UseQDQContribOps": contrib})
                cases.append((f"q_ort_static_qdq{'_contrib' if contrib else ''}_{name}", onnx.load(q), sets, None, False))
        # quantize_static in QOperator form: QLinearConv and com.microsoft QLinearAdd,
        # QLinearGlobalAveragePool, QLinearSigmoid.
        shape = [2, 3, 9, 10]
        src, q = os.path.join(tmp, "cnn_head.onnx"), os.path.join(tmp, "cnn_head_qop.onnx")
        onnx.save(cnn_head, src)
        quantize_static(src, q, Reader(shape), quant_format=QuantFormat.QOperator, per_channel=True)
        sets = [{"x": rng.standard_normal(shape).astype(np.float32)} for _ in range(2)]
        cases.append(("q_ort_static_qoperator_cnn", onnx.load(q), sets))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return cases


# ---- hand-built com.microsoft ops -------------------------------------------------------------

def contrib_cases(rng):
    cases = []
    mk = lambda *a, **k: helper.make_node(*a, domain=MS, **k)  # noqa: E731

    # QGemm (uint8 A x int8 B), float output (no y_scale) with transB and an int32 C, and quantized output.
    b = rand_q(rng, I8, [12, 9])
    inits = [tensor("as", np.array(0.05, np.float32)), tensor("azp", np.array(120, np.uint8)), tensor("b", b),
             tensor("bs", (rng.random(12) * 0.02 + 0.01).astype(np.float32)), tensor("bzp", np.zeros(12, np.int8)),
             tensor("c", rng.integers(-500, 500, size=12).astype(np.int32)),
             tensor("ys", np.array(0.3, np.float32)), tensor("yzp", np.array(10, np.uint8))]
    n = [mk("QGemm", ["a", "as", "azp", "b", "bs", "bzp", "c"], ["yf"], name="qg_f", transB=1, alpha=0.75),
         mk("QGemm", ["a", "as", "azp", "b", "bs", "bzp", "c", "ys", "yzp"], ["yq"], name="qg_q", transB=1)]
    m = make_model("qgemm", n, [vi("a", U8, [7, 9])], [vi("yf", F32, [7, 12]), vi("yq", U8, [7, 12])], inits, ms=True)
    cases.append(("q_contrib_qgemm", m, [{"a": rand_u7(rng, [7, 9])} for _ in range(2)]))

    # MatMulIntegerToFloat with per-column b scale and bias; DynamicQuantizeMatMul on float A.
    inits = [tensor("b", rand_q(rng, U8, [10, 6])), tensor("as", np.array(0.04, np.float32)),
             tensor("bs", (rng.random(6) * 0.03 + 0.01).astype(np.float32)), tensor("azp", np.array(3, np.uint8)),
             tensor("bzp", rand_q(rng, U8, [6])), tensor("bias", rng.standard_normal(6).astype(np.float32)),
             tensor("b2", rand_q(rng, U8, [10, 5])), tensor("bs2", np.array(0.02, np.float32)),
             tensor("bzp2", np.array(131, np.uint8))]
    n = [mk("MatMulIntegerToFloat", ["a", "b", "as", "bs", "azp", "bzp", "bias"], ["y1"], name="mitf"),
         mk("DynamicQuantizeMatMul", ["x", "b2", "bs2", "bzp2"], ["y2"], name="dqmm")]
    m = make_model("mitf", n, [vi("a", U8, [2, 3, 10]), vi("x", F32, [4, 10])],
                   [vi("y1", F32, [2, 3, 6]), vi("y2", F32, [4, 5])], inits, ms=True)
    cases.append(("q_contrib_matmulintegertofloat", m,
                  [{"a": rand_q(rng, U8, [2, 3, 10]), "x": rng.standard_normal([4, 10]).astype(np.float32)}
                   for _ in range(2)]))

    # Gelu, BiasGelu, FastGelu (with and without bias), SkipLayerNormalization with every output.
    h = 16
    inits = [tensor("bias", rng.standard_normal(h).astype(np.float32)), tensor("gamma", rng.random(h).astype(np.float32)),
             tensor("beta", rng.standard_normal(h).astype(np.float32)),
             tensor("fbias", (rng.standard_normal(h) * 0.2).astype(np.float32))]
    n = [mk("Gelu", ["x"], ["g1"], name="gelu"), mk("BiasGelu", ["x", "bias"], ["g2"], name="biasgelu"),
         mk("FastGelu", ["xf", "fbias"], ["g3"], name="fastgelu_b"), mk("FastGelu", ["xf"], ["g4"], name="fastgelu"),
         mk("SkipLayerNormalization", ["x", "skip", "gamma", "beta", "bias"], ["ln", "mean", "isd", "sum"],
            name="sln", epsilon=1e-5),
         mk("SkipLayerNormalization", ["x", "skip", "gamma"], ["ln2"], name="sln2")]
    outs = [vi(o, F32, None) for o in ("g1", "g2", "g3", "g4", "ln", "mean", "isd", "sum", "ln2")]
    # FastGelu's input stays moderate: far into the negative tail 1 + tanh cancels, and onnxruntime's
    # tanh approximation is then off by ~0.3% (smelt's by ~0.1%, against float64).
    ins = [vi("x", F32, [2, 3, h]), vi("skip", F32, [2, 3, h]), vi("xf", F32, [2, 3, h])]
    m = make_model("float_contrib", n, ins, outs, inits, ms=True)
    cases.append(("q_contrib_gelu_skiplayernorm", m,
                  [{"x": rng.standard_normal([2, 3, h]).astype(np.float32) * 2,
                    "skip": rng.standard_normal([2, 3, h]).astype(np.float32),
                    "xf": rng.uniform(-3, 3, [2, 3, h]).astype(np.float32)} for _ in range(2)]))

    # FusedConv with each activation, one with the Z (sum) input.
    inits = [tensor("w", (rng.standard_normal([4, 3, 3, 3]) * 0.3).astype(np.float32)),
             tensor("b", rng.standard_normal(4).astype(np.float32) * 0.1)]
    acts = [("Relu", []), ("Tanh", []), ("Sigmoid", []), ("LeakyRelu", [0.1]), ("Clip", [-0.5, 0.6]),
            ("HardSigmoid", [0.3, 0.4])]
    n, outs = [], []
    for i, (act, params) in enumerate(acts):
        extra = {"activation_params": params} if params else {}
        ins = ["x", "w", "b"] + (["z"] if i == 0 else [])
        n.append(mk("FusedConv", ins, [f"y{i}"], name=f"fc{i}", activation=act, pads=[1, 1, 1, 1], **extra))
        outs.append(vi(f"y{i}", F32, None))
    m = make_model("fusedconv", n, [vi("x", F32, [2, 3, 6, 5]), vi("z", F32, [2, 4, 6, 5])], outs, inits, ms=True)
    cases.append(("q_contrib_fusedconv", m,
                  [{"x": rng.standard_normal([2, 3, 6, 5]).astype(np.float32),
                    "z": rng.standard_normal([2, 4, 6, 5]).astype(np.float32)} for _ in range(2)]))
    # onnxruntime's QOperator ops on quantized tensors: QLinearAdd (broadcast), QLinearMul,
    # QLinearSigmoid over every uint8 value, QLinearLeakyRelu (int8), QLinearGlobalAveragePool.
    p = [tensor("as", np.array(0.07, np.float32)), tensor("azp", np.array(131, np.uint8)),
         tensor("bs", np.array(0.03, np.float32)), tensor("bzp", np.array(17, np.uint8)),
         tensor("cs", np.array(0.09, np.float32)), tensor("czp", np.array(120, np.uint8)),
         tensor("ss", np.array(1.0 / 256, np.float32)), tensor("szp", np.array(0, np.uint8)),
         tensor("ls", np.array(0.05, np.float32)), tensor("lzp", np.array(-5, np.int8)),
         tensor("ks", np.array(0.04, np.float32)), tensor("kzp", np.array(3, np.int8)),
         tensor("ps", np.array(0.06, np.float32)), tensor("pzp", np.array(100, np.uint8))]
    n = [mk("QLinearAdd", ["a", "as", "azp", "b", "bs", "bzp", "cs", "czp"], ["add"], name="qadd"),
         mk("QLinearMul", ["a", "as", "azp", "b", "bs", "bzp", "cs", "czp"], ["mul"], name="qmul"),
         mk("QLinearSigmoid", ["all", "as", "azp", "ss", "szp"], ["sig"], name="qsig"),
         mk("QLinearLeakyRelu", ["l", "ls", "lzp", "ks", "kzp"], ["leaky"], name="qleaky", alpha=0.13),
         mk("QLinearGlobalAveragePool", ["a", "as", "azp", "ps", "pzp"], ["gap"], name="qgap"),
         mk("QLinearGlobalAveragePool", ["a", "as", "azp", "ps", "pzp"], ["gapl"], name="qgapl", channels_last=1)]
    ins = [vi("a", U8, [2, 5, 6, 7]), vi("b", U8, [5, 1, 7]), vi("all", U8, [256]), vi("l", I8, [3, 50])]
    outs = [helper.make_tensor_value_info(o, dt, None)
            for o, dt in (("add", U8), ("mul", U8), ("sig", U8), ("leaky", I8), ("gap", U8), ("gapl", U8))]
    m = make_model("qlinear_ops", n, ins, outs, p, ms=True)
    cases.append(("q_contrib_qlinear_ops", m,
                  [{"a": rand_q(rng, U8, [2, 5, 6, 7]), "b": rand_q(rng, U8, [5, 1, 7]),
                    "all": np.arange(256, dtype=np.uint8), "l": rand_q(rng, I8, [3, 50])} for _ in range(2)]))
    # Attention: key-padding mask_index [B, T] (0 masks); unidirectional with scale, unequal V hidden
    # size (qkv_hidden_sizes) and an additive attention_bias.
    bsz, sq, hin = 2, 5, 12
    inits = [tensor("aw", (rng.standard_normal([hin, 48]) * 0.3).astype(np.float32)),
             tensor("ab", (rng.standard_normal(48) * 0.1).astype(np.float32)),
             tensor("aw2", (rng.standard_normal([hin, 40]) * 0.3).astype(np.float32)),
             tensor("ab2", (rng.standard_normal(40) * 0.1).astype(np.float32))]
    n = [mk("Attention", ["ax", "aw", "ab", "amask"], ["att"], name="att_mask", num_heads=4),
         mk("Attention", ["ax", "aw2", "ab2", "", "", "abias"], ["att2"], name="att_causal", num_heads=2,
            unidirectional=1, scale=0.3, qkv_hidden_sizes=[16, 16, 8])]
    ins = [vi("ax", F32, [bsz, sq, hin]), vi("amask", I32, [bsz, sq]), vi("abias", F32, [1, 2, sq, sq])]
    m = make_model("ms_attention", n, ins, [vi("att", F32, None), vi("att2", F32, None)], inits, ms=True)
    cases.append(("q_contrib_attention", m,
                  [{"ax": rng.standard_normal([bsz, sq, hin]).astype(np.float32),
                    "amask": np.array([[1, 1, 1, 1, 1], [1, 1, 0, 1, 0]] if k == 0 else [[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]],
                                      np.int32),
                    "abias": rng.standard_normal([1, 2, sq, sq]).astype(np.float32)} for k in range(2)]))

    # DynamicQuantizeLSTM: bidirectional, int8 weights with per-direction scales, initial states and
    # peepholes; a forward one with uint8 weights and per-column scales and zero points. |w - 0| stays
    # below 64 for int8 (see the docstring: onnxruntime's int16 pair sums then cannot saturate).
    seq, batch, inp, hid = 5, 1, 7, 6
    n4 = 4 * hid
    inits = [tensor("w", rand_q(rng, I8, [2, inp, n4], -63, 63)), tensor("r", rand_q(rng, I8, [2, hid, n4], -63, 63)),
             tensor("b", (rng.standard_normal([2, 2 * n4]) * 0.3).astype(np.float32)),
             tensor("ws", np.array([0.011, 0.013], np.float32)), tensor("wzp", np.array([0, 0], np.int8)),
             tensor("rs", np.array([0.017, 0.009], np.float32)), tensor("rzp", np.array([0, 0], np.int8)),
             tensor("p", (rng.standard_normal([2, 3 * hid]) * 0.2).astype(np.float32)),
             tensor("w1", rand_q(rng, U8, [1, inp, n4], 0, 127)), tensor("r1", rand_q(rng, U8, [1, hid, n4], 0, 127)),
             tensor("ws1", (rng.random([1, n4]) * 0.02 + 0.005).astype(np.float32)),
             tensor("wzp1", np.array([64], np.uint8)),
             tensor("rs1", (rng.random([1, n4]) * 0.02 + 0.005).astype(np.float32)),
             tensor("rzp1", np.array([70], np.uint8))]
    n = [mk("DynamicQuantizeLSTM", ["x", "w", "r", "b", "", "h0", "c0", "p", "ws", "wzp", "rs", "rzp"],
            ["y", "yh", "yc"], name="dqlstm_bi", hidden_size=hid, direction="bidirectional"),
         mk("DynamicQuantizeLSTM", ["x", "w1", "r1", "", "", "", "", "", "ws1", "wzp1", "rs1", "rzp1"],
            ["y1"], name="dqlstm_fw", hidden_size=hid)]
    ins = [vi("x", F32, [seq, batch, inp]), vi("h0", F32, [2, batch, hid]), vi("c0", F32, [2, batch, hid])]
    outs = [vi(o, F32, None) for o in ("y", "yh", "yc", "y1")]
    m = make_model("dqlstm", n, ins, outs, inits, ms=True)
    cases.append(("q_contrib_dynamicquantizelstm", m,
                  [{"x": rng.standard_normal([seq, batch, inp]).astype(np.float32),
                    "h0": (rng.standard_normal([2, batch, hid]) * 0.5).astype(np.float32),
                    "c0": (rng.standard_normal([2, batch, hid]) * 0.5).astype(np.float32)} for _ in range(2)]))
    return cases


# ---- contractions past float32's exact range (onnx/quantized.c's K chunks) ---------------------

def conv_ref(x, w, xzp, wzp, pads):
    """ConvInteger, stride 1, in int64: (x - xzp) padded with zeros, times (w - wzp)."""
    xs = np.pad(x.astype(np.int64) - np.int64(xzp), [(0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])])
    ws = w.astype(np.int64) - np.asarray(wzp, np.int64).reshape(-1, 1, 1, 1)
    kh, kw = w.shape[2:]
    oh, ow = xs.shape[2] - kh + 1, xs.shape[3] - kw + 1
    y = np.zeros([x.shape[0], w.shape[0], oh, ow], np.int64)
    for i in range(kh):
        for j in range(kw):
            y += np.einsum("nchw,kc->nkhw", xs[:, :, i:i + oh, j:j + ow], ws[:, :, i, j])
    return y.astype(np.int32)


def exact_cases(rng):
    """Sums past 2^24, where one float32 contraction would round: references in int64 numpy.
    Operands near their extremes, so every chunk boundary is needed."""
    cases = []
    # Constant B, per-column zero points: column sums of |b - bzp| up to 1100 * 255, cut into chunks.
    k = 1100
    b = rand_q(rng, U8, [k, 13])
    b[:, :6] = np.where(rng.random([k, 6]) < 0.5, 0, 255)
    bzp = rand_q(rng, U8, [13])
    bzp[:6] = 0
    bzp[3] = 255
    azp = np.array(2, np.uint8)
    n = [helper.make_node("MatMulInteger", ["a", "b", "azp", "bzp"], ["y"], name="mmi")]
    m = make_model("mmi_bigk", n, [vi("a", U8, [2, 3, k])], [vi("y", I32, [2, 3, 13])],
                   [tensor("b", b), tensor("azp", azp), tensor("bzp", bzp)])
    ref = lambda inp, b=b, bzp=bzp: [((inp["a"].astype(np.int64) - 2) @ (b.astype(np.int64) - bzp)).astype(np.int32)]  # noqa: E731
    cases.append(("q_matmulinteger_u8_chunked_numpy", m, [{"a": rand_q(rng, U8, [2, 3, k], 200, 255)} for _ in range(2)],
                  ref))
    # B a graph input: only the dtypes bound it (chunks of 258 rows); int8 at its extremes.
    k = 777
    n = [helper.make_node("MatMulInteger", ["a", "b", "azp", "bzp"], ["y"], name="mmi")]
    m = make_model("mmi_bigk_input", n, [vi("a", I8, [5, k]), vi("b", I8, [k, 7])], [vi("y", I32, [5, 7])],
                   [tensor("azp", np.array(-128, np.int8)), tensor("bzp", np.array(127, np.int8))])
    ref = lambda inp: [((inp["a"].astype(np.int64) + 128) @ (inp["b"].astype(np.int64) - 127)).astype(np.int32)]  # noqa: E731
    cases.append(("q_matmulinteger_s8_input_chunked_numpy", m,
                  [{"a": rand_q(rng, I8, [5, k], 90, 127), "b": rand_q(rng, I8, [k, 7], -128, -100)} for _ in range(2)],
                  ref))
    # ConvInteger over 300 channels (batch 2, per-channel w zero point, pads): chunks of channels.
    c = 300
    w = np.where(rng.random([4, c, 3, 3]) < 0.5, 0, 255).astype(np.uint8)
    wzp = np.array([0, 255, 3, 0], np.uint8)
    pads = [1, 0, 2, 1]
    n = [helper.make_node("ConvInteger", ["x", "w", "xzp", "wzp"], ["y"], name="ci", pads=pads)]
    m = make_model("ci_bigc", n, [vi("x", U8, [2, c, 5, 6])], [vi("y", I32, [2, 4, 6, 5])],
                   [tensor("w", w), tensor("xzp", np.array(1, np.uint8)), tensor("wzp", wzp)])
    ref = lambda inp, w=w: [conv_ref(inp["x"], w, 1, wzp, pads)]  # noqa: E731
    cases.append(("q_convinteger_u8_chunked_numpy", m, [{"x": rand_q(rng, U8, [2, c, 5, 6], 180, 255)} for _ in range(2)],
                  ref))
    # 64 to 64 channels, 3x3 stride 1 at 28x28: one float chunk (sums below 2^24) of the shape
    # graph/winograd.c takes, whose fractional transforms would round the integer sums.
    w = rand_q(rng, U8, [64, 64, 3, 3], 0, 100)
    n = [helper.make_node("ConvInteger", ["x", "w"], ["y"], name="ci", pads=[1, 1, 1, 1])]
    m = make_model("ci_wino_shape", n, [vi("x", U8, [1, 64, 28, 28])], [vi("y", I32, [1, 64, 28, 28])],
                   [tensor("w", w)])
    ref = lambda inp, w=w: [conv_ref(inp["x"], w, 0, np.zeros(64, np.uint8), [1, 1, 1, 1])]  # noqa: E731
    cases.append(("q_convinteger_u8_3x3_exact_numpy", m, [{"x": rand_q(rng, U8, [1, 64, 28, 28])} for _ in range(2)],
                  ref))
    return cases


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join("build", "models_quantized")
    os.makedirs(out_dir, exist_ok=True)
    logging.getLogger().setLevel(logging.ERROR)  # quantize_dynamic's advice to pre-process
    rng = np.random.default_rng(14)
    cases = (matmulinteger_cases(rng) + qlinearmatmul_cases(rng) + convinteger_cases(rng) + qlinearconv_cases(rng)
             + dynamicquantize_cases(rng) + ort_quantized(rng, out_dir) + contrib_cases(rng) + exact_cases(rng))
    for case in cases:
        write_case(out_dir, *case)


if __name__ == "__main__":
    main()
