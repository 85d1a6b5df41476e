"""Crafted hostile models for scripts/cli-tests.sh: shapes whose sizes overflow,
omitted required inputs, out-of-range constant indices, ill-typed and duplicate
attributes. Each must fail with an error naming the node and the rule.
    python gen_models.py OUTDIR
"""
import sys

import onnx
import onnx.helper as h
from onnx import TensorProto as T

d = sys.argv[1]
BIG = 1 << 62


def save(name, nodes, inputs, outputs, inits=(), opset=17):
    g = h.make_graph(nodes, name, inputs, outputs, list(inits))
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    with open(f"{d}/{name}.onnx", "wb") as f:
        f.write(m.SerializeToString())  # no checker: these models are meant to be wrong


def vi(name, shape, dt=T.FLOAT):
    return h.make_tensor_value_info(name, dt, shape)


def i64(name, vals, dims=None):
    return h.make_tensor(name, T.INT64, [len(vals)] if dims is None else dims, vals)


x = vi("x", [2, 3])
y = vi("y", None)

# Sizes that overflow int64 or exceed the 2^40-element limit.
save("pad_huge", [h.make_node("Pad", ["x", "p"], ["y"], name="pad_big")], [x], [y], [i64("p", [BIG, 0, 0, 0])])
save("expand_huge", [h.make_node("Expand", ["x", "s"], ["y"], name="expand_big")], [x], [y], [i64("s", [BIG, 1, 3])])
save("tile_huge", [h.make_node("Tile", ["x", "r"], ["y"], name="tile_big")], [x], [y], [i64("r", [BIG, 1])])
save("reshape_overflow", [h.make_node("Reshape", ["x", "s"], ["y"], name="reshape_big")], [x], [y],
     [i64("s", [-1, BIG, 4])])
save("reshape_negative", [h.make_node("Reshape", ["x", "s"], ["y"], name="reshape_neg")], [x], [y],
     [i64("s", [-(1 << 63), 12])])
save("range_huge", [h.make_node("Range", ["a", "b", "c"], ["y"], name="range_big")], [], [y],
     [i64("a", [0], []), i64("b", [BIG], []), i64("c", [1], [])])
save("concat_huge", [h.make_node("Expand", ["x1", "s"], ["e"], name="expand_limit"),
                     h.make_node("Concat", ["e", "e"], ["y"], name="concat_big", axis=0)],
     [vi("x1", [1])], [y], [i64("s", [1 << 40])])
save("input_huge", [h.make_node("Relu", ["xh"], ["y"], name="relu_h")], [vi("xh", [BIG, 64])], [y])
save("convt_huge", [h.make_node("ConvTranspose", ["xc", "w"], ["y"], name="convt_big", output_shape=[BIG, BIG])],
     [vi("xc", [1, 1, 2, 2])], [y], [h.make_tensor("w", T.FLOAT, [1, 1, 1, 1], [1.0])])
save("resize_huge", [h.make_node("Resize", ["xr", "", "", "s"], ["y"], name="resize_big")],
     [vi("xr", [1, 1, 2, 2])], [y], [i64("s", [1, 1, BIG, BIG])])
save("slice_huge_step", [h.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["y"], name="slice_big")], [x], [y],
     [i64("st", [-(1 << 63)]), i64("en", [(1 << 63) - 1]), i64("ax", [1]), i64("sp", [BIG])])
# Window attributes, block sizes and steps whose arithmetic would overflow (UBSan found each).
x4 = vi("x4", [1, 1, 4, 4])
w4 = h.make_tensor("w", T.FLOAT, [1, 1, 2, 2], [1.0] * 4)
M = (1 << 63) - 1
save("conv_pads", [h.make_node("Conv", ["x4", "w"], ["y"], name="conv_p", pads=[M, M, M, M])], [x4], [y], [w4])
save("maxpool_pads", [h.make_node("MaxPool", ["x4"], ["y"], name="pool_p", kernel_shape=[2, 2], pads=[BIG, 0, BIG, 0])],
     [x4], [y])
save("maxpool_window", [h.make_node("MaxPool", ["x4"], ["y"], name="pool_w", kernel_shape=[1 << 40, 2],
                                    dilations=[1 << 40, 1])], [x4], [y])
save("convt_strides", [h.make_node("ConvTranspose", ["x4", "w"], ["y"], name="convt_s", strides=[BIG, BIG])], [x4], [y], [w4])
save("convt_outpad", [h.make_node("ConvTranspose", ["x4", "w"], ["y"], name="convt_o", output_padding=[M, 0])],
     [x4], [y], [w4])
save("d2s_huge", [h.make_node("DepthToSpace", ["x4"], ["y"], name="d2s_b", blocksize=BIG)], [x4], [y])
save("lrn_huge", [h.make_node("LRN", ["x4"], ["y"], name="lrn_s", size=BIG)], [x4], [y])
save("slice_min_step", [h.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["y"], name="slice_m")], [x], [y],
     [i64("st", [M]), i64("en", [-M - 1]), i64("ax", [1]), i64("sp", [-M - 1])])

# Required inputs omitted ("").
save("omit_relu", [h.make_node("Relu", [""], ["y"], name="relu_o")], [x], [y])
save("omit_add", [h.make_node("Add", ["x", ""], ["y"], name="add_o")], [x], [y])
save("omit_pad", [h.make_node("Pad", ["", "p"], ["y"], name="pad_o")], [x], [y], [i64("p", [0, 0, 0, 0])])
save("omit_gather", [h.make_node("Gather", ["x", ""], ["y"], name="gather_o")], [x], [y])
save("omit_reshape", [h.make_node("Reshape", ["x", ""], ["y"], name="reshape_o")], [x], [y])
save("omit_slice", [h.make_node("Slice", ["x", "", "e"], ["y"], name="slice_o")], [x], [y], [i64("e", [1])])
save("omit_transpose", [h.make_node("Transpose", [""], ["y"], name="transpose_o")], [x], [y])
# Optional inputs omitted are fine: Pad's constant_value, Slice's axes and steps, Clip's min.
save("omit_optional", [h.make_node("Pad", ["x", "p", ""], ["a"], name="pad_opt"),
                       h.make_node("Slice", ["a", "s", "e", "", ""], ["b"], name="slice_opt"),
                       h.make_node("Clip", ["b", "", "mx"], ["y"], name="clip_opt")],
     [x], [y], [i64("p", [1, 0, 0, 0]), i64("s", [1]), i64("e", [3]), h.make_tensor("mx", T.FLOAT, [], [0.5])])
save("symbolic_input", [h.make_node("Relu", ["s"], ["y"], name="relu_s")], [vi("s", ["N", 3])], [y])

# Out-of-range constant indices (x is [2,3]).
save("idx_gather_elements", [h.make_node("GatherElements", ["x", "i"], ["y"], name="ge_oob", axis=1)], [x], [y],
     [i64("i", [0, 1, 3, 0, 0, 0], [2, 3])])
save("idx_gather_nd", [h.make_node("GatherND", ["x", "i"], ["y"], name="gnd_oob")], [x], [y],
     [i64("i", [1, 2, -3, 0], [2, 2])])
save("idx_scatter_elements", [h.make_node("ScatterElements", ["x", "i", "u"], ["y"], name="se_oob", axis=0)], [x], [y],
     [i64("i", [-3], [1, 1]), h.make_tensor("u", T.FLOAT, [1, 1], [1.0])])
save("idx_scatter_nd", [h.make_node("ScatterND", ["x", "i", "u"], ["y"], name="snd_oob")], [x], [y],
     [i64("i", [0, 7], [1, 2]), h.make_tensor("u", T.FLOAT, [1], [1.0])])
save("idx_in_range", [h.make_node("GatherND", ["x", "i"], ["y"], name="gnd_ok")], [x], [y],
     [i64("i", [1, 2, -2, -3], [2, 2])])

# Attributes of the wrong type, and given twice.
save("attr_float_axis", [h.make_node("Concat", ["x", "x"], ["y"], name="concat_f", axis=1.0)], [x], [y])
save("attr_string_axis", [h.make_node("Softmax", ["x"], ["y"], name="softmax_s", axis="1")], [x], [y])
save("attr_int_alpha", [h.make_node("LeakyRelu", ["x"], ["y"], name="leaky_i", alpha=1)], [x], [y])
dup = h.make_node("Transpose", ["x"], ["y"], name="transpose_d", perm=[1, 0])
dup.attribute.extend([h.make_attribute("perm", [0, 1])])
save("attr_duplicate", [dup], [x], [y])

# A chain of 30,000 elementwise nodes (Neg, Abs, Neg, ...): no stage may recurse once per node.
import numpy as np

chain, prev = [], "x"
for i in range(30000):
    out = f"t{i}" if i < 29999 else "y"
    chain.append(h.make_node("Abs" if i % 3 == 1 else "Neg", [prev], [out], name=f"c{i}"))
    prev = out
save("chain30k", chain, [x], [y])
cx = np.array([[1.5, -2, 0.25], [-0.0, 3, -7]], dtype=np.float32)
np.save(f"{d}/chain_x.npy", cx)
r = cx.copy()
for i in range(30000):
    r = np.abs(r) if i % 3 == 1 else -r
np.save(f"{d}/chain_want.npy", r)
