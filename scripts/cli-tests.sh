#!/usr/bin/env bash
# Bad input through the command-line tool: each case must fail with a clear message naming
# the problem, a non-zero status, no crash, and no partial output file. Prints one line per
# case, `PASS name` or `FAIL name: why`, for scripts/test.sh to count.
#   scripts/cli-tests.sh SMELT PYTHON
set -u
smelt="$1" py="$2"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# expect NAME STATUS PATTERN -- command...: exit status STATUS (or any non-zero for "nz") and
# PATTERN in the combined output; never a signal (status > 128).
expect() {
    local name="$1" want="$2" pattern="$3"
    shift 4
    local out rc
    out="$("$@" 2>&1)"; rc=$?
    if [ "$rc" -gt 128 ]; then echo "FAIL $name: killed by signal $((rc - 128))"; return; fi
    if [ "$want" = nz ] && [ "$rc" -eq 0 ]; then echo "FAIL $name: exit 0"; return; fi
    if [ "$want" != nz ] && [ "$rc" -ne "$want" ]; then echo "FAIL $name: exit $rc, want $want"; return; fi
    if ! printf '%s' "$out" | grep -q -- "$pattern"; then echo "FAIL $name: no '$pattern' in: $out"; return; fi
    echo "PASS $name"
}

head -c 3000 /dev/urandom > "$tmp/garbage.onnx"
expect garbage-model nz "not a valid ONNX model\|malformed\|parse" -- "$smelt" run "$tmp/garbage.onnx"
expect missing-model nz "garbage\|No such file\|cannot" -- "$smelt" run "$tmp/missing.onnx"

"$py" - "$tmp" <<'PY'
import sys, onnx, onnx.helper as h
from onnx import TensorProto as T
d = sys.argv[1]
def save(name, nodes, inputs, outputs, inits=(), opset=17):
    g = h.make_graph(nodes, name, inputs, outputs, list(inits))
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", opset)]), f"{d}/{name}.onnx")
x = h.make_tensor_value_info("x", T.FLOAT, [2, 3])
y = h.make_tensor_value_info("y", T.FLOAT, [2, 3])
save("unsupported", [h.make_node("NonZero", ["x"], ["y"], name="nz1")], [x], [y])
save("mismatch", [h.make_node("Add", ["x", "w"], ["y"], name="add1")], [x], [y],
     [h.make_tensor("w", T.FLOAT, [4], [1, 2, 3, 4])])
save("conv", [h.make_node("Conv", ["x4", "w"], ["y"], name="conv3", kernel_shape=[3, 3])],
     [h.make_tensor_value_info("x4", T.FLOAT, [1, 32, 8, 8])], [y],
     [h.make_tensor("w", T.FLOAT, [64, 32, 5, 5], [0.0] * (64 * 32 * 25))])
save("ok", [h.make_node("Relu", ["x"], ["y"], name="relu1")], [x], [y])
sym = h.make_tensor_value_info("s", T.FLOAT, ["N", 3])
save("symbolic", [h.make_node("Relu", ["s"], ["y"], name="relu2")], [sym], [y])
# Older exporters wrote dim_value -1 for an unknown dim.
save("minus_one", [h.make_node("Relu", ["m"], ["y"], name="relu3")],
     [h.make_tensor_value_info("m", T.FLOAT, [-1, 3])], [y])
# Opset 1: Mul broadcasting B along axis 1 of A (the pre-7 rule).
save("opset1", [h.make_node("Mul", ["x", "b"], ["y"], name="mul1", broadcast=1, axis=0)], [x], [y],
     [h.make_tensor("b", T.FLOAT, [2], [2, 3])], opset=1)
PY
expect unsupported-op 2 "node 'nz1' (NonZero)" -- "$smelt" run "$tmp/unsupported.onnx"
expect shape-mismatch 2 "node 'add1' (Add)" -- "$smelt" run "$tmp/mismatch.onnx"
expect conv-kernel-shape 2 "node 'conv3' (Conv)" -- "$smelt" run "$tmp/conv.onnx"
expect missing-device 2 "device 'tpu'" -- "$smelt" run "$tmp/ok.onnx" --device tpu
expect unbound-symbolic-dim nz "symbolic dim" -- "$smelt" run "$tmp/symbolic.onnx"
expect unbound-unknown-dim nz "input 'm' has unknown dim 0" -- "$smelt" run "$tmp/minus_one.onnx"
expect minus-one-dim-given 0 "y.npy" -- "$smelt" run "$tmp/minus_one.onnx" --shape m=5x3 --output-dir "$tmp/out1"
expect opset1-broadcast 0 "y.npy" -- "$smelt" run "$tmp/opset1.onnx" --output-dir "$tmp/out1"
expect max-memory 2 "memory plan needs" -- "$smelt" run "$tmp/ok.onnx" --max-memory 1
expect bad-input-file nz "nothere.npy" -- "$smelt" run "$tmp/ok.onnx" --input x="$tmp/nothere.npy"
# A failing compile leaves no output directory contents behind.
mkdir -p "$tmp/out"
"$smelt" run "$tmp/unsupported.onnx" --output-dir "$tmp/out" > /dev/null 2>&1
if [ -z "$(ls -A "$tmp/out")" ]; then echo "PASS no-partial-output"; else echo "FAIL no-partial-output: $(ls "$tmp/out")"; fi
expect good-run 0 "y.npy" -- "$smelt" run "$tmp/ok.onnx" --output-dir "$tmp/out"
