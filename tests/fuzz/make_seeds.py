#!/usr/bin/env python3
"""Seed corpora for the libFuzzer targets (tests/fuzz/fuzz_model.c, fuzz_tensor.c).

    make_seeds.py [OUT_DIR]   writes OUT_DIR/corpus_model/*.onnx, OUT_DIR/corpus_tensor/* and
                              OUT_DIR/model.dict (default OUT_DIR: tests/fuzz)

Models: one tiny valid model per op family (so the fuzzer starts from inputs that reach shape
inference, fusion, lowering and emission), then hand-made hostile ones (omitted inputs, huge and
negative dims, wrong attribute types, duplicate attributes, cycles, external data outside the
model's directory, an unknown op, odd opsets, names with C comment and quote characters).
Tensors: .npy of every dtype and header version, TensorProto .pb (raw and typed data), and
hostile headers. Everything is deterministic; the committed corpora are this script's output.
"""
import os
import struct
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
I64 = TensorProto.INT64


def vi(name, shape, t=F):
    return helper.make_tensor_value_info(name, t, shape)


def model(nodes, inputs, outputs, inits=(), opset=17, check=True):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    if check:  # a valid seed must load in onnxruntime (the reference)
        ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return m


def const(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def unary(op, **attrs):
    return model([helper.make_node(op, ["x"], ["y"], **attrs)], [vi("x", [2, 3])], [vi("y", None)])


def binary(op, t=F):
    return model([helper.make_node(op, ["a", "b"], ["y"])], [vi("a", [2, 3], t), vi("b", [3], t)], [vi("y", None)])


def valid_models():
    r = np.random.default_rng(0)
    w = lambda *s: r.standard_normal(s).astype(np.float32)
    ms = {}
    for op in ["Relu", "Sigmoid", "Tanh", "Exp", "Abs", "Neg", "Sqrt", "Erf", "Softplus", "Elu"]:
        ms["unary_" + op.lower()] = unary(op)
    for op in ["Add", "Sub", "Mul", "Div", "Pow", "Max", "Min"]:
        ms["binary_" + op.lower()] = binary(op)
    ms["where"] = model([helper.make_node("Greater", ["a", "b"], ["c"]), helper.make_node("Where", ["c", "a", "b"], ["y"])],
                        [vi("a", [2, 3]), vi("b", [2, 3])], [vi("y", None)])
    ms["matmul"] = model([helper.make_node("MatMul", ["x", "w"], ["y"])], [vi("x", ["n", 4])], [vi("y", None)], [const("w", w(4, 5))])
    ms["gemm_relu"] = model([helper.make_node("Gemm", ["x", "w", "b"], ["h"], transB=1), helper.make_node("Relu", ["h"], ["y"])],
                            [vi("x", [2, 4])], [vi("y", None)], [const("w", w(3, 4)), const("b", w(3))])
    ms["conv"] = model([helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1], strides=[2, 2])],
                       [vi("x", [1, 2, 5, 5])], [vi("y", None)], [const("w", w(3, 2, 3, 3)), const("b", w(3))])
    ms["conv_group"] = model([helper.make_node("Conv", ["x", "w"], ["y"], group=2, dilations=[2, 1])],
                             [vi("x", [1, 4, 6, 5])], [vi("y", None)], [const("w", w(4, 2, 2, 2))])
    ms["convtranspose"] = model([helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[2, 2])],
                                [vi("x", [1, 2, 3, 3])], [vi("y", None)], [const("w", w(2, 3, 2, 2))])
    ms["maxpool"] = model([helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2])],
                          [vi("x", [1, 1, 4, 5])], [vi("y", None)])
    ms["avgpool"] = model([helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])],
                          [vi("x", [1, 2, 4, 4])], [vi("y", None)])
    ms["globalavgpool"] = model([helper.make_node("GlobalAveragePool", ["x"], ["y"])], [vi("x", [1, 3, 4, 4])], [vi("y", None)])
    ms["batchnorm"] = model([helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"])],
                            [vi("x", [1, 2, 3, 3])], [vi("y", None)],
                            [const("s", w(2)), const("b", w(2)), const("m", w(2)), const("v", np.ones(2, np.float32))])
    ms["layernorm"] = model([helper.make_node("LayerNormalization", ["x", "s", "b"], ["y"], axis=-1)],
                            [vi("x", [2, 3, 4])], [vi("y", None)], [const("s", w(4)), const("b", w(4))])
    ms["softmax"] = model([helper.make_node("Softmax", ["x"], ["y"], axis=1)], [vi("x", [2, 5])], [vi("y", None)])
    ms["reducesum"] = model([helper.make_node("ReduceSum", ["x", "ax"], ["y"], keepdims=0)], [vi("x", [2, 3, 4])], [vi("y", None)],
                            [const("ax", np.array([1], np.int64))])
    ms["reducemean"] = model([helper.make_node("ReduceMean", ["x"], ["y"], axes=[0, 2])], [vi("x", [2, 3, 4])], [vi("y", None)])
    ms["argmax"] = model([helper.make_node("ArgMax", ["x"], ["y"], axis=1)], [vi("x", [2, 3])], [vi("y", None, I64)])
    ms["transpose"] = model([helper.make_node("Transpose", ["x"], ["y"], perm=[2, 0, 1])], [vi("x", [2, 3, 4])], [vi("y", None)])
    ms["reshape"] = model([helper.make_node("Reshape", ["x", "s"], ["y"])], [vi("x", [2, 3, 4])], [vi("y", None)],
                          [const("s", np.array([0, -1], np.int64))])
    ms["reshape_dynamic"] = model([helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Reshape", ["z", "s"], ["y"])],
                                  [vi("x", [2, 3]), vi("z", [6])], [vi("y", None)])
    ms["flatten_squeeze"] = model([helper.make_node("Flatten", ["x"], ["f"], axis=1),
                                   helper.make_node("Unsqueeze", ["f", "a"], ["u"]),
                                   helper.make_node("Squeeze", ["u", "a"], ["y"])],
                                  [vi("x", [2, 3, 4])], [vi("y", None)], [const("a", np.array([0], np.int64))])
    ms["concat"] = model([helper.make_node("Concat", ["a", "b"], ["y"], axis=1)], [vi("a", [2, 3]), vi("b", [2, 1])], [vi("y", None)])
    ms["split"] = model([helper.make_node("Split", ["x", "s"], ["y", "z"], axis=1)], [vi("x", [2, 5])], [vi("y", None), vi("z", None)],
                        [const("s", np.array([2, 3], np.int64))])
    ms["slice"] = model([helper.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["y"])], [vi("x", [4, 6])], [vi("y", None)],
                        [const("st", np.array([1, -1], np.int64)), const("en", np.array([3, -7], np.int64)),
                         const("ax", np.array([0, 1], np.int64)), const("sp", np.array([1, -2], np.int64))])
    ms["gather"] = model([helper.make_node("Gather", ["x", "i"], ["y"], axis=1)], [vi("x", [2, 5])], [vi("y", None)],
                         [const("i", np.array([[0, 4], [-1, 2]], np.int64))])
    ms["gather_elements"] = model([helper.make_node("GatherElements", ["x", "i"], ["y"], axis=0)], [vi("x", [3, 2])], [vi("y", None)],
                                  [const("i", np.array([[0, 2], [1, 0]], np.int64))])
    ms["scatternd"] = model([helper.make_node("ScatterND", ["x", "i", "u"], ["y"])], [vi("x", [4, 3]), vi("u", [2, 3])], [vi("y", None)],
                            [const("i", np.array([[1], [3]], np.int64))])
    ms["pad"] = model([helper.make_node("Pad", ["x", "p"], ["y"], mode="reflect")], [vi("x", [3, 4])], [vi("y", None)],
                      [const("p", np.array([1, 2, 1, 0], np.int64))])
    ms["expand"] = model([helper.make_node("Expand", ["x", "s"], ["y"])], [vi("x", [3, 1])], [vi("y", None)],
                         [const("s", np.array([2, 3, 4], np.int64))])
    ms["tile"] = model([helper.make_node("Tile", ["x", "r"], ["y"])], [vi("x", [2, 3])], [vi("y", None)],
                       [const("r", np.array([2, 2], np.int64))])
    ms["cast_clip"] = model([helper.make_node("Cast", ["x"], ["c"], to=TensorProto.INT32),
                             helper.make_node("Cast", ["c"], ["d"], to=F),
                             helper.make_node("Clip", ["d", "lo", "hi"], ["y"])],
                            [vi("x", [2, 3])], [vi("y", None)], [const("lo", np.float32(-1)), const("hi", np.float32(1))])
    ms["resize"] = model([helper.make_node("Resize", ["x", "", "sc"], ["y"], mode="linear")], [vi("x", [1, 1, 2, 3])], [vi("y", None)],
                         [const("sc", np.array([1, 1, 2, 1.5], np.float32))])
    ms["einsum"] = model([helper.make_node("Einsum", ["a", "b"], ["y"], equation="ij,jk->ik")], [vi("a", [2, 3]), vi("b", [3, 4])],
                         [vi("y", None)])
    ms["cumsum_trilu"] = model([helper.make_node("CumSum", ["x", "ax"], ["c"]), helper.make_node("Trilu", ["c"], ["y"], upper=0)],
                               [vi("x", [3, 3])], [vi("y", None)], [const("ax", np.array(1, np.int64))])
    ms["topk"] = model([helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=1)], [vi("x", [2, 5])], [vi("v", None), vi("i", None, I64)],
                       [const("k", np.array([2], np.int64))])
    ms["constant_of_shape_range"] = model([helper.make_node("Range", ["s", "l", "d"], ["r"]),
                                           helper.make_node("Add", ["x", "r"], ["y"])],
                                          [vi("x", [2, 4])], [vi("y", None)],
                                          [const("s", np.float32(0)), const("l", np.float32(4)), const("d", np.float32(1))])
    hs = 3
    ms["lstm"] = model([helper.make_node("LSTM", ["x", "w", "r"], ["y"], hidden_size=hs)], [vi("x", [2, 1, 2])], [vi("y", None)],
                       [const("w", w(1, 4 * hs, 2)), const("r", w(1, 4 * hs, hs))])
    ms["gru"] = model([helper.make_node("GRU", ["x", "w", "r"], ["", "h"], hidden_size=hs)], [vi("x", [2, 1, 2])], [vi("h", None)],
                      [const("w", w(1, 3 * hs, 2)), const("r", w(1, 3 * hs, hs))])
    ms["attention_like"] = model([helper.make_node("MatMul", ["q", "k"], ["s"]), helper.make_node("Softmax", ["s"], ["p"], axis=-1),
                                  helper.make_node("MatMul", ["p", "v"], ["y"])],
                                 [vi("q", [2, 4, 8]), vi("k", [2, 8, 4]), vi("v", [2, 4, 8])], [vi("y", None)])
    ms["quantize"] = model([helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
                            helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"])],
                           [vi("x", [2, 3])], [vi("y", None)], [const("s", np.float32(0.1)), const("z", np.uint8(128))])
    ms["opset7_upgrade"] = model([helper.make_node("Upsample", ["x"], ["y"], scales=[1.0, 1.0, 2.0, 2.0])],
                                 [vi("x", [1, 1, 2, 2])], [vi("y", None)], opset=7)
    ms["identity_chain"] = model([helper.make_node("Identity", ["x"], ["a"]), helper.make_node("Dropout", ["a"], ["y"])],
                                 [vi("x", [3])], [vi("y", None)])
    return ms


def hostile_models():
    ms = {}
    nc = dict(check=False)
    big = 1 << 62
    for op in ["Relu", "Add", "Pad", "Gather", "Reshape", "Slice", "Transpose", "Conv", "MatMul", "Concat"]:
        ins = {"Relu": [""], "Transpose": [""], "Add": ["x", ""], "Pad": ["x", ""], "Gather": ["x", ""],
               "Reshape": ["", "x"], "Slice": ["x", "", ""], "Conv": ["x", ""], "MatMul": ["", "x"], "Concat": ["x", ""]}[op]
        ms["omitted_input_" + op.lower()] = model([helper.make_node(op, ins, ["y"])], [vi("x", [2, 3])], [vi("y", None)], **nc)
    ms["huge_pad"] = model([helper.make_node("Pad", ["x", "p"], ["y"])], [vi("x", [2, 3])], [vi("y", None)],
                           [const("p", np.array([big, 0, 0, 0], np.int64))], **nc)
    ms["huge_expand"] = model([helper.make_node("Expand", ["x", "s"], ["y"])], [vi("x", [1])], [vi("y", None)],
                              [const("s", np.array([big, 4], np.int64))], **nc)
    ms["huge_tile"] = model([helper.make_node("Tile", ["x", "r"], ["y"])], [vi("x", [2, 3])], [vi("y", None)],
                            [const("r", np.array([big, big], np.int64))], **nc)
    ms["huge_input_dim"] = model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [(1 << 63) - 1, 2])], [vi("y", None)], **nc)
    ms["negative_input_dim"] = model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [-3, 2])], [vi("y", None)], **nc)
    ms["reshape_two_minus_one"] = model([helper.make_node("Reshape", ["x", "s"], ["y"])], [vi("x", [2, 3])], [vi("y", None)],
                                        [const("s", np.array([-1, -1], np.int64))], **nc)
    ms["reshape_zero_volume"] = model([helper.make_node("Reshape", ["x", "s"], ["y"])], [vi("x", [2, 3])], [vi("y", None)],
                                      [const("s", np.array([0, 0, -1], np.int64))], **nc)
    ms["gather_index_out_of_range"] = model([helper.make_node("Gather", ["x", "i"], ["y"])], [vi("x", [2, 3])], [vi("y", None)],
                                            [const("i", np.array([7, -9], np.int64))], **nc)
    ms["conv_kernel_bigger_than_input"] = model([helper.make_node("Conv", ["x", "w"], ["y"])], [vi("x", [1, 1, 2, 2])], [vi("y", None)],
                                                [const("w", np.ones((1, 1, 5, 5), np.float32))], **nc)
    ms["conv_stride_zero"] = model([helper.make_node("Conv", ["x", "w"], ["y"], strides=[0, 0])], [vi("x", [1, 1, 4, 4])],
                                   [vi("y", None)], [const("w", np.ones((1, 1, 2, 2), np.float32))], **nc)
    ms["axis_out_of_range"] = model([helper.make_node("Softmax", ["x"], ["y"], axis=9)], [vi("x", [2, 3])], [vi("y", None)], **nc)
    ms["perm_repeated"] = model([helper.make_node("Transpose", ["x"], ["y"], perm=[0, 0])], [vi("x", [2, 3])], [vi("y", None)], **nc)
    n = helper.make_node("Softmax", ["x"], ["y"])
    n.attribute.extend([helper.make_attribute("axis", 1), helper.make_attribute("axis", 0)])
    ms["duplicate_attribute"] = model([n], [vi("x", [2, 3])], [vi("y", None)], **nc)
    ms["attribute_wrong_type"] = model([helper.make_node("Softmax", ["x"], ["y"], axis="one")], [vi("x", [2, 3])], [vi("y", None)], **nc)
    ms["cycle"] = model([helper.make_node("Add", ["x", "b"], ["a"]), helper.make_node("Relu", ["a"], ["b"])],
                        [vi("x", [2])], [vi("b", None)], **nc)
    ms["self_loop"] = model([helper.make_node("Relu", ["y"], ["y"])], [vi("x", [2])], [vi("y", None)], **nc)
    ms["output_undefined"] = model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [2])], [vi("nowhere", None)], **nc)
    ms["output_is_input"] = model([], [vi("x", [2])], [vi("x", [2])], **nc)
    ms["duplicate_output_name"] = model([helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Neg", ["x"], ["y"])],
                                        [vi("x", [2])], [vi("y", None)], **nc)
    ms["unknown_op"] = model([helper.make_node("NoSuchOp", ["x"], ["y"])], [vi("x", [2])], [vi("y", None)], **nc)
    ms["unknown_domain"] = model([helper.make_node("Relu", ["x"], ["y"], domain="evil.domain")], [vi("x", [2])], [vi("y", None)], **nc)
    ms["opset_1"] = model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [2])], [vi("y", None)], opset=1, **nc)
    ms["opset_999"] = model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [2])], [vi("y", None)], opset=999, **nc)
    evil = 'x*/ #include "/etc/passwd" /*\\"\n'
    ms["evil_names"] = model([helper.make_node("Relu", [evil], [evil + "y"], name=evil)], [vi(evil, [2])], [vi(evil + "y", None)], **nc)
    ext = TensorProto(name="w", data_type=F, dims=[4], data_location=TensorProto.EXTERNAL)
    ext.external_data.add(key="location", value="../../../../etc/passwd")
    ms["external_data_escape"] = model([helper.make_node("Add", ["x", "w"], ["y"])], [vi("x", [4])], [vi("y", None)], [ext], **nc)
    short = TensorProto(name="w", data_type=F, dims=[1000], raw_data=b"\0" * 8)
    ms["initializer_short_data"] = model([helper.make_node("Add", ["x", "w"], ["y"])], [vi("x", [1000])], [vi("y", None)], [short], **nc)
    bad_dt = TensorProto(name="w", data_type=TensorProto.STRING, dims=[1], string_data=[b"a"])
    ms["initializer_string"] = model([helper.make_node("Add", ["x", "w"], ["y"])], [vi("x", [1])], [vi("y", None)], [bad_dt], **nc)
    rank9 = vi("x", [1] * 9)
    ms["rank_9"] = model([helper.make_node("Relu", ["x"], ["y"])], [rank9], [vi("y", None)], **nc)
    chain = [helper.make_node("Relu" if i % 2 else "Neg", ["x" if i == 0 else "t%d" % (i - 1)], ["t%d" % i]) for i in range(400)]
    ms["long_chain"] = model(chain, [vi("x", [2])], [vi("t399", None)], **nc)
    ms["empty_graph"] = model([], [], [], **nc)
    ms["zero_sized"] = model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [0, 3])], [vi("y", None)], **nc)
    ms["constant_huge_dims"] = model([helper.make_node("ConstantOfShape", ["s"], ["y"])], [], [vi("y", None)],
                                     [const("s", np.array([big, big], np.int64))], **nc)
    return ms


def npy_bytes(header, data=b"", version=1):
    h = header.encode("latin1")
    if version == 1:
        pre = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h))
    else:
        pre = b"\x93NUMPY" + bytes([version, 0]) + struct.pack("<I", len(h))
    return pre + h + data


def tensors():
    ts = {}
    for dt in [np.float32, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64, np.bool_]:
        a = (np.arange(6) % 3).astype(dt).reshape(2, 3)
        path = "/tmp/_seed.npy"
        np.save(path, a)
        ts["npy_" + np.dtype(dt).name + ".npy"] = open(path, "rb").read()
        ts["pb_" + np.dtype(dt).name + ".pb"] = numpy_helper.from_array(a, "t_" + np.dtype(dt).name).SerializeToString()
    os.unlink("/tmp/_seed.npy")
    ts["npy_scalar.npy"] = npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (), }\n", b"\0\0\x80?")
    ts["npy_v2.npy"] = npy_bytes("{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }\n", b"\1\0\0\0\2\0\0\0", 2)
    ts["npy_v3.npy"] = npy_bytes('{"descr": "|u1", "fortran_order": False, "shape": (3,)}\n', b"abc", 3)
    ts["pb_typed_float.pb"] = helper.make_tensor("f", F, [2, 2], [1.0, 2.0, 3.0, 4.0]).SerializeToString()
    ts["pb_typed_int64.pb"] = helper.make_tensor("i", I64, [3], [1, -2, 3]).SerializeToString()
    ts["pb_typed_bool.pb"] = helper.make_tensor("b", TensorProto.BOOL, [2], [1, 0]).SerializeToString()
    # hostile
    ts["bad_npy_huge_shape.npy"] = npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }\n")
    ts["bad_npy_dim_overflow.npy"] = npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }\n")
    ts["bad_npy_short_data.npy"] = npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (100,), }\n", b"\0" * 8)
    ts["bad_npy_header_len.npy"] = b"\x93NUMPY\x01\x00\xff\xff{'descr'"
    ts["bad_npy_truncated.npy"] = b"\x93NUMPY\x02"
    ts["bad_npy_descr_long.npy"] = npy_bytes("{'descr': '<f4444444444444444444444', 'shape': (1,), }\n", b"\0" * 4)
    ts["bad_npy_no_quote.npy"] = npy_bytes("{'descr': '<f4, 'shape': (1,), }\n", b"\0" * 4)
    ts["bad_npy_big_endian.npy"] = npy_bytes("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }\n", b"\0" * 4)
    ts["bad_npy_fortran.npy"] = npy_bytes("{'descr': '<f4', 'fortran_order': True, 'shape': (1,), }\n", b"\0" * 4)
    ts["bad_npy_rank9.npy"] = npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }\n", b"\0" * 4)
    ts["bad_npy_unterminated_shape.npy"] = npy_bytes("{'descr': '<f4', 'shape': (1, 2")
    ts["bad_pb_short_raw.pb"] = TensorProto(name="r", data_type=F, dims=[1000], raw_data=b"\0" * 4).SerializeToString()
    ts["bad_pb_negative_dim.pb"] = TensorProto(name="n", data_type=F, dims=[-1], raw_data=b"").SerializeToString()
    ts["bad_pb_huge_dims.pb"] = TensorProto(name="h", data_type=F, dims=[1 << 62, 1 << 62], raw_data=b"").SerializeToString()
    ts["bad_pb_string.pb"] = TensorProto(name="s", data_type=TensorProto.STRING, dims=[1], string_data=[b"x"]).SerializeToString()
    ts["bad_pb_float16.pb"] = TensorProto(name="h", data_type=TensorProto.FLOAT16, dims=[1], raw_data=b"\0\0").SerializeToString()
    ext = TensorProto(name="e", data_type=F, dims=[1], data_location=TensorProto.EXTERNAL)
    ext.external_data.add(key="location", value="/etc/passwd")
    ts["bad_pb_external.pb"] = ext.SerializeToString()
    ts["bad_pb_typed_mismatch.pb"] = TensorProto(name="m", data_type=F, dims=[3], float_data=[1.0]).SerializeToString()
    ts["bad_pb_garbage.pb"] = b"\xff\xff\xff\xff\x0f\x08"
    return ts


def dict_entry(b):
    return '"' + "".join(chr(c) if 32 <= c < 127 and chr(c) not in '"\\' else "\\x%02X" % c for c in b) + '"'


def model_dict():
    """libFuzzer dictionary: whole protobuf fields a mutation can insert into a NodeProto (a later
    singular field overrides an earlier one), so op types and attributes change in one step."""
    entries = set()
    for schema in onnx.defs.get_all_schemas():
        if schema.domain not in ("", "ai.onnx", "com.microsoft"):
            continue
        name = schema.name.encode()
        entries.add(b"\x22" + bytes([len(name)]) + name)  # NodeProto.op_type
        for a in schema.attributes:
            an = a.encode()
            for v in (0, 1, 2, -1, 1 << 40):  # AttributeProto{name, type INT, i} as NodeProto.attribute
                body = helper.make_attribute(a, v).SerializeToString()
                entries.add(b"\x2a" + bytes([len(body)]) + body)
            entries.add(b"\x0a" + bytes([len(an)]) + an)
    for dom in (b"com.microsoft", b"ai.onnx.ml", b""):
        entries.add(b"\x3a" + bytes([len(dom)]) + dom)  # NodeProto.domain
    return "".join(dict_entry(e) + "\n" for e in sorted(entries) if len(e) < 128)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    dm, dt = os.path.join(out, "corpus_model"), os.path.join(out, "corpus_tensor")
    os.makedirs(dm, exist_ok=True)
    os.makedirs(dt, exist_ok=True)
    ms = valid_models()
    ms.update({"bad_" + k: v for k, v in hostile_models().items()})
    for name, m in sorted(ms.items()):
        with open(os.path.join(dm, name + ".onnx"), "wb") as f:
            f.write(m.SerializeToString())
    for name, b in sorted(tensors().items()):
        with open(os.path.join(dt, name), "wb") as f:
            f.write(b)
    with open(os.path.join(out, "model.dict"), "w") as f:
        f.write("# libFuzzer dictionary for fuzz_model, written by make_seeds.py\n" + model_dict())
    print("%d models, %d tensors" % (len(ms), len(tensors())))


if __name__ == "__main__":
    main()
