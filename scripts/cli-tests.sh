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
# PATTERN in the combined output; never a signal (status > 128) or a sanitizer report.
expect() {
    local name="$1" want="$2" pattern="$3"
    shift 4
    local out rc
    out="$("$@" 2>&1)"; rc=$?
    if [ "$rc" -gt 128 ]; then echo "FAIL $name: killed by signal $((rc - 128))"; return; fi
    # A tool built with sanitizers (ASan, LeakSanitizer, UBSan) must stay silent too.
    if printf '%s' "$out" | grep -q "Sanitizer\|runtime error:"; then echo "FAIL $name: sanitizer report: $out"; return; fi
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
# Two outputs whose names sanitize to the same file name.
save("collide", [h.make_node("Relu", ["x"], ["a/b"], name="r1"), h.make_node("Neg", ["x"], ["a_b"], name="r2")],
     [x], [h.make_tensor_value_info("a/b", T.FLOAT, [2, 3]), h.make_tensor_value_info("a_b", T.FLOAT, [2, 3])])
# External data named by a link, a FIFO, a path outside the directory, and too short a file.
import os
for name, loc in [("ext_link", "passwd_link"), ("ext_fifo", "fifo.bin"), ("ext_up", "../w.bin"),
                  ("ext_abs", "/etc/passwd"), ("ext_short", "short.bin")]:
    w = h.make_tensor("w", T.FLOAT, [2, 3], [0.0] * 6)
    w.ClearField("float_data")
    w.data_location = onnx.TensorProto.EXTERNAL
    e = w.external_data.add()
    e.key, e.value = "location", loc
    save(name, [h.make_node("Add", ["x", "w"], ["y"], name="add_ext")], [x], [y], [w])
os.symlink("/etc/passwd", f"{d}/passwd_link")
os.mkfifo(f"{d}/fifo.bin")
open(f"{d}/short.bin", "wb").write(b"\0" * 20)
# Older exporters wrote dim_value -1 for an unknown dim.
save("minus_one", [h.make_node("Relu", ["m"], ["y"], name="relu3")],
     [h.make_tensor_value_info("m", T.FLOAT, [-1, 3])], [y])
# Opset 1: Mul broadcasting B along axis 1 of A (the pre-7 rule).
save("opset1", [h.make_node("Mul", ["x", "b"], ["y"], name="mul1", broadcast=1, axis=0)], [x], [y],
     [h.make_tensor("b", T.FLOAT, [2], [2, 3])], opset=1)
# If on a condition computed from run-time data whose branches give different shapes: runs when
# the result is a graph output (its shape known after the run), refused when a later node reads it;
# a condition that is not bool; a while loop that never ends (the run-time iteration guard); and a
# branch reading a name no scope defines.
br = lambda name, src: h.make_graph([h.make_node("Neg", [src], [name])], name, [],
                                    [h.make_tensor_value_info(name, T.FLOAT, [2, 3])])
big = h.make_tensor_value_info("big", T.FLOAT, [8, 16])
row = h.make_graph([h.make_node("ReduceSum", ["big"], ["r"], keepdims=0)], "row", [],
                   [h.make_tensor_value_info("r", T.FLOAT, [])])
save("if_data_cond", [h.make_node("ReduceSum", ["big"], ["s"], name="sum1", keepdims=0),
                      h.make_node("Constant", [], ["z"], value=h.make_tensor("z", T.FLOAT, [], [0.0])),
                      h.make_node("Greater", ["s", "z"], ["c"], name="gt1"),
                      h.make_node("If", ["c"], ["y"], name="if1", then_branch=br("t", "big"), else_branch=row)],
     [big], [h.make_tensor_value_info("y", T.FLOAT, None)])
save("if_data_cond_read", [h.make_node("ReduceSum", ["big"], ["s"], name="sum1", keepdims=0),
                           h.make_node("Constant", [], ["z"], value=h.make_tensor("z", T.FLOAT, [], [0.0])),
                           h.make_node("Greater", ["s", "z"], ["c"], name="gt1"),
                           h.make_node("If", ["c"], ["y0"], name="if1", then_branch=br("t", "big"), else_branch=row),
                           h.make_node("Relu", ["y0"], ["y"], name="relu4")],
     [big], [h.make_tensor_value_info("y", T.FLOAT, None)])
save("if_float_cond", [h.make_node("ReduceSum", ["big"], ["c"], name="sum2", keepdims=0),
                       h.make_node("If", ["c"], ["y"], name="if3", then_branch=br("t", "big"), else_branch=br("e", "big"))],
     [big], [h.make_tensor_value_info("y", T.FLOAT, None)])
body = h.make_graph([h.make_node("Add", ["v", "v"], ["v2"]), h.make_node("ReduceSum", ["big"], ["s"], keepdims=0),
                     h.make_node("Constant", [], ["z"], value=h.make_tensor("z", T.FLOAT, [], [-1e30])),
                     h.make_node("Greater", ["s", "z"], ["c2"])], "body",
                    [h.make_tensor_value_info("i", T.INT64, []), h.make_tensor_value_info("c", T.BOOL, []),
                     h.make_tensor_value_info("v", T.FLOAT, [])],
                    [h.make_tensor_value_info("c2", T.BOOL, []), h.make_tensor_value_info("v2", T.FLOAT, [])])
save("loop_forever", [h.make_node("Constant", [], ["one"], value=h.make_tensor("one", T.FLOAT, [], [1.0])),
                      h.make_node("Loop", ["", "", "one"], ["y"], name="loop1", body=body)],
     [big], [h.make_tensor_value_info("y", T.FLOAT, [])])
save("if_undefined", [h.make_node("Constant", [], ["c"], value=h.make_tensor("c", T.BOOL, [], [True])),
                      h.make_node("If", ["c"], ["y"], name="if2", then_branch=br("t", "nowhere"),
                                  else_branch=br("e", "x"))], [x], [y])
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
expect if-run-time-branch-shapes 0 "y: float32\\[\\(8,16\\)\\?\\]" -- "$smelt" run "$tmp/if_data_cond.onnx"
expect if-run-time-shape-read-later 2 "node 'if1' (If): output 0 ('y0') is \\[8,16\\] in the then branch and \\[\\] in the else branch, so its shape is known only at run time; smelt allows that for a graph output no other node reads" -- "$smelt" run "$tmp/if_data_cond_read.onnx"
expect if-float-condition 2 "node 'if3' (If): condition 'c' is float32 with 1 elements; it must be one bool" -- "$smelt" run "$tmp/if_float_cond.onnx"
expect loop-iteration-guard 2 "node 'loop1' (Loop): ran 1000 iterations without ending" -- "$smelt" run "$tmp/loop_forever.onnx" --max-loop-iterations 1000
expect max-loop-iterations-zero 2 "\\-\\-max-loop-iterations '0'" -- "$smelt" run "$tmp/loop_forever.onnx" --max-loop-iterations 0
expect if-undefined-name 2 "input 'nowhere' is not defined" -- "$smelt" run "$tmp/if_undefined.onnx"
expect bad-input-file nz "nothere.npy" -- "$smelt" run "$tmp/ok.onnx" --input x="$tmp/nothere.npy"
# A failing compile leaves no output directory contents behind.
mkdir -p "$tmp/out"
"$smelt" run "$tmp/unsupported.onnx" --output-dir "$tmp/out" > /dev/null 2>&1
if [ -z "$(ls -A "$tmp/out")" ]; then echo "PASS no-partial-output"; else echo "FAIL no-partial-output: $(ls "$tmp/out")"; fi
expect good-run 0 "y.npy" -- "$smelt" run "$tmp/ok.onnx" --output-dir "$tmp/out"
# --emit STAGE stops after that stage: no device is opened, no compiler runs, nothing is cached.
mkdir -p "$tmp/emit-cache"
for stage in ir regions kir plan c; do
    SMELT_CACHE_DIR="$tmp/emit-cache" "$smelt" compile "$tmp/ok.onnx" --emit "$stage" -o "$tmp/emit.$stage" > /dev/null 2>&1
done
if [ -s "$tmp/emit.ir" ] && [ -s "$tmp/emit.c" ] && [ -z "$(ls -A "$tmp/emit-cache")" ]; then
    echo "PASS emit-stops-early"
else
    echo "FAIL emit-stops-early: cache holds $(ls "$tmp/emit-cache" | wc -l) files"
fi

# Numbers are parsed strictly; every rejection names the flag and the rule.
expect threads-negative 2 "\-\-threads '-1': must be a whole number" -- "$smelt" run "$tmp/ok.onnx" --threads -1
expect threads-not-a-number 2 "\-\-threads 'abc': must be a whole number" -- "$smelt" run "$tmp/ok.onnx" --threads abc
expect threads-trailing-junk 2 "\-\-threads '4x'" -- "$smelt" run "$tmp/ok.onnx" --threads 4x
expect threads-too-many 2 "\-\-threads '99999999999999999999'" -- "$smelt" run "$tmp/ok.onnx" --threads 99999999999999999999
expect threads-missing-value 2 "\-\-threads needs a value" -- "$smelt" run "$tmp/ok.onnx" --threads
expect unknown-command 2 "unknown command 'frob'" -- "$smelt" frob "$tmp/ok.onnx"
expect compile-without-emit 2 "compile needs \-\-emit" -- "$smelt" compile "$tmp/ok.onnx"
expect unknown-option 2 "unknown option '\-\-frobnicate'" -- "$smelt" run "$tmp/ok.onnx" --frobnicate 1
expect runs-zero 2 "\-\-runs '0': must be from 1" -- "$smelt" bench "$tmp/ok.onnx" --runs 0
expect max-memory-negative 2 "\-\-max-memory '-5': must be a whole number of bytes" -- "$smelt" run "$tmp/ok.onnx" --max-memory -5
expect max-memory-bad-unit 2 "\-\-max-memory '1XB': has an unknown unit" -- "$smelt" run "$tmp/ok.onnx" --max-memory 1XB
expect max-memory-overflow 2 "\-\-max-memory '9000000TiB': is more than 2^63-1 bytes" -- "$smelt" run "$tmp/ok.onnx" --max-memory 9000000TiB
expect max-memory-units 0 "y: float32" -- "$smelt" run "$tmp/ok.onnx" --max-memory 64MiB
expect max-memory-decimal-units 0 "y: float32" -- "$smelt" run "$tmp/ok.onnx" --max-memory 1MB
expect shape-negative 2 "\-\-shape 's=-3x3': each dim must be a whole number >= 0" -- "$smelt" run "$tmp/symbolic.onnx" --shape s=-3x3
expect shape-empty-dim 2 "\-\-shape 's=2xx3'" -- "$smelt" run "$tmp/symbolic.onnx" --shape s=2xx3
expect shape-no-name 2 "\-\-shape '=2x3': must be NAME=" -- "$smelt" run "$tmp/symbolic.onnx" --shape =2x3
expect shape-too-many-dims 2 "has more than 8 dims" -- "$smelt" run "$tmp/symbolic.onnx" --shape s=1x1x1x1x1x1x1x1x1
expect shape-dim-overflow 2 "\-\-shape 's=99999999999999999999x3'" -- "$smelt" run "$tmp/symbolic.onnx" --shape s=99999999999999999999x3
expect shape-size-overflow 2 "input 's': its shape holds more than 2^63-1 bytes" -- "$smelt" run "$tmp/symbolic.onnx" --shape s=9223372036854775807x3
expect shape-zero-dim-is-legal 0 "y: float32\[0,3\]" -- "$smelt" run "$tmp/symbolic.onnx" --shape s=0x3
expect shape-contradicts-input 2 "already has data" -- "$smelt" run "$tmp/ok.onnx" --input x="$tmp/out/y.npy" --shape x=4x4

# Hostile models (tests/hostile/gen_models.py): sizes past the 2^40-element limit, omitted inputs.
"$py" "$(dirname "$0")/../tests/hostile/gen_models.py" "$tmp"
expect size-pad 2 "node 'pad_big' (Pad): pads 4611686018427387904,0 of axis 0 exceed the size limit" -- "$smelt" run "$tmp/pad_huge.onnx"
expect size-expand 2 "node 'expand_big' (Expand): output 'y' has shape \[4611686018427387904,2,3\]: every dim" -- "$smelt" run "$tmp/expand_huge.onnx"
expect size-tile 2 "node 'tile_big' (Tile): repeat 4611686018427387904 of axis 0 overflows" -- "$smelt" run "$tmp/tile_huge.onnx"
expect size-reshape 2 "node 'reshape_big' (Reshape): the target dims up to entry 1 (4611686018427387904) multiply past 2^40" -- "$smelt" run "$tmp/reshape_overflow.onnx"
expect size-reshape-negative 2 "node 'reshape_neg' (Reshape): invalid target dimension -9223372036854775808" -- "$smelt" run "$tmp/reshape_negative.onnx"
expect size-range 2 "node 'range_big' (Range): range of .* elements is too long" -- "$smelt" run "$tmp/range_huge.onnx"
expect size-concat 2 "node 'concat_big' (Concat): output 'y' has shape \[2199023255552\]: every dim" -- "$smelt" run "$tmp/concat_huge.onnx"
expect size-convtranspose 2 "node 'convt_big' (ConvTranspose): output size 4611686018427387904 of spatial dim 0 must be in 1..2^40" -- "$smelt" run "$tmp/convt_huge.onnx"
expect size-resize 2 "node 'resize_big' (Resize): size 4611686018427387904 is out of range" -- "$smelt" run "$tmp/resize_huge.onnx"
expect size-input-declared 2 "input 'xh': its shape holds more than 2^63-1 bytes" -- "$smelt" run "$tmp/input_huge.onnx"
expect slice-huge-step 0 "y: float32\[2,1\]" -- "$smelt" run "$tmp/slice_huge_step.onnx"
expect size-conv-pads 2 "node 'conv_p' (Conv): attribute pads\[0\] = 9223372036854775807 must be in 0..2^40" -- "$smelt" run "$tmp/conv_pads.onnx"
expect size-pool-pads 2 "node 'pool_p' (MaxPool): attribute pads\[0\] = 4611686018427387904 must be in 0..2^40" -- "$smelt" run "$tmp/maxpool_pads.onnx"
expect size-pool-window 2 "node 'pool_w' (MaxPool): kernel 1099511627776 dilated by 1099511627776 in spatial dim 0 exceeds 2^40" -- "$smelt" run "$tmp/maxpool_window.onnx"
expect size-convt-strides 2 "node 'convt_s' (ConvTranspose): attribute strides\[0\] = 4611686018427387904 must be in 1..2^40" -- "$smelt" run "$tmp/convt_strides.onnx"
expect size-convt-output-padding 2 "node 'convt_o' (ConvTranspose): attribute output_padding\[0\] = 9223372036854775807" -- "$smelt" run "$tmp/convt_outpad.onnx"
expect size-depth-to-space 2 "node 'd2s_b' (DepthToSpace): attribute 'blocksize' (1..2^20) is required" -- "$smelt" run "$tmp/d2s_huge.onnx"
expect size-lrn 2 "node 'lrn_s' (LRN): attribute 'size' = 4611686018427387904 must be in 1..2^40" -- "$smelt" run "$tmp/lrn_huge.onnx"
expect slice-min-step 0 "y: float32\[2,1\]" -- "$smelt" run "$tmp/slice_min_step.onnx"
for op in relu add pad gather reshape transpose; do
    expect "omitted-input-$op" 2 "node '${op}_o' (.*): input [01] is omitted (\"\") but the op requires" -- "$smelt" run "$tmp/omit_$op.onnx"
done
expect omitted-input-slice 2 "node 'slice_o' (Slice): starts and ends are required" -- "$smelt" run "$tmp/omit_slice.onnx"
expect omitted-optional-inputs 0 "y: float32\[2,3\]" -- "$smelt" run "$tmp/omit_optional.onnx"

expect index-gather-elements 2 "node 'ge_oob' (GatherElements): constant index 3 (element 2 of 'i') is out of range for axis 1 of size 3" -- "$smelt" run "$tmp/idx_gather_elements.onnx"
expect index-gather-nd 2 "node 'gnd_oob' (GatherND): constant index -3 (element 2 of 'i') is out of range for axis 0 of size 2" -- "$smelt" run "$tmp/idx_gather_nd.onnx"
expect index-scatter-elements 2 "node 'se_oob' (ScatterElements): constant index -3 (element 0 of 'i') is out of range for axis 0 of size 2" -- "$smelt" run "$tmp/idx_scatter_elements.onnx"
expect index-scatter-nd 2 "node 'snd_oob' (ScatterND): constant index 7 (element 1 of 'i') is out of range for axis 1 of size 3" -- "$smelt" run "$tmp/idx_scatter_nd.onnx"
expect index-in-range 0 "y: float32\[2\]" -- "$smelt" run "$tmp/idx_in_range.onnx"
expect attr-float-axis 2 "node 'concat_f' (Concat): attribute 'axis' is a float but must be an int" -- "$smelt" run "$tmp/attr_float_axis.onnx"
expect attr-string-axis 2 "node 'softmax_s' (Softmax): attribute 'axis' is a string but must be an int" -- "$smelt" run "$tmp/attr_string_axis.onnx"
expect attr-int-for-float 0 "y: float32\[2,3\]" -- "$smelt" run "$tmp/attr_int_alpha.onnx"
expect attr-duplicate 2 "node 'transpose_d' (Transpose): attribute 'perm' is given twice" -- "$smelt" run "$tmp/attr_duplicate.onnx"

# A 30,000-node chain compiles and runs within a 1 MiB stack, and matches numpy.
mkdir -p "$tmp/chain_out"
expect chain-30k-small-stack 0 "y.npy" -- bash -c 'ulimit -s 1024 && exec "$0" run "$1" --input x="$2" --output-dir "$3"' \
    "$smelt" "$tmp/chain30k.onnx" "$tmp/chain_x.npy" "$tmp/chain_out"
expect chain-30k-matches-numpy 0 "same" -- "$py" -c 'import sys, numpy as np; a, b = np.load(sys.argv[1]), np.load(sys.argv[2]); print("same" if a.shape == b.shape and np.array_equal(a, b) else f"differ: {a} {b}")' \
    "$tmp/chain_out/y.npy" "$tmp/chain_want.npy"

# Outputs whose names sanitize to the same file: an error before anything is written.
mkdir -p "$tmp/collide_out"
expect output-name-collision 2 "outputs 'a/b' and 'a_b' would both be written to 'a_b.npy'" -- \
    "$smelt" run "$tmp/collide.onnx" --output-dir "$tmp/collide_out"
if [ -z "$(ls -A "$tmp/collide_out")" ]; then echo "PASS output-name-collision-writes-nothing"
else echo "FAIL output-name-collision-writes-nothing: $(ls "$tmp/collide_out")"; fi

# External data: no links followed, no FIFO opened for reading (timeout: it must not hang),
# nothing outside the model's directory, no read past the end.
expect ext-symlink nz "links are not followed" -- timeout 20 "$smelt" run "$tmp/ext_link.onnx"
expect ext-fifo nz "not a regular file" -- timeout 20 "$smelt" run "$tmp/ext_fifo.onnx"
expect ext-dotdot nz "leaves the model's directory" -- timeout 20 "$smelt" run "$tmp/ext_up.onnx"
expect ext-absolute nz "is absolute" -- timeout 20 "$smelt" run "$tmp/ext_abs.onnx"
expect ext-past-eof nz "too short" -- timeout 20 "$smelt" run "$tmp/ext_short.onnx"

# Two processes compiling the same model into one cold cache both succeed with the same outputs.
mkdir -p "$tmp/race_cache" "$tmp/race1" "$tmp/race2"
SMELT_CACHE_DIR="$tmp/race_cache" "$smelt" run "$tmp/ok.onnx" --output-dir "$tmp/race1" > "$tmp/race1.log" 2>&1 &
race_pid=$!
SMELT_CACHE_DIR="$tmp/race_cache" "$smelt" run "$tmp/ok.onnx" --output-dir "$tmp/race2" > "$tmp/race2.log" 2>&1
race_rc2=$?
wait "$race_pid"; race_rc1=$?
if [ "$race_rc1" -eq 0 ] && [ "$race_rc2" -eq 0 ] && cmp -s "$tmp/race1/y.npy" "$tmp/race2/y.npy"; then
    echo "PASS concurrent-compile-same-cache"
else
    echo "FAIL concurrent-compile-same-cache: exits $race_rc1 $race_rc2: $(cat "$tmp/race1.log" "$tmp/race2.log")"
fi

# bench --no-cold: timed from the usual cache, with no cold compile (and no cold figure) first.
out="$(SMELT_CACHE_DIR="$tmp/race_cache" "$smelt" bench "$tmp/ok.onnx" --runs 2 --no-cold 2>&1)"
if printf '%s' "$out" | grep -q "^median_ms:" && printf '%s' "$out" | grep -q "^compile_cached_ms:" \
        && ! printf '%s' "$out" | grep -q "compile_cold_ms"; then
    echo "PASS bench-no-cold"
else
    echo "FAIL bench-no-cold: $out"
fi
