#!/usr/bin/env bash
# Several devices (issue 18), for scripts/test.sh's multidev stage: `smelt check` of the small
# models of build/models (against onnxruntime's outputs, as single-device runs are) on device
# mixes whose placements force copies between devices, the counts `smelt info` reports
# (executables per target class, transfers), the split and cost placements on the same mixes,
# the signal/wait pairs of a copy between devices, the two-branch model of bench/branches.py with
# a branch per device, the weight encodings per device (panels on the CPU, plain on OpenCL),
# run-time If/Loop/Scan placed on the second device, and the errors for a missing device, an
# unknown policy, an override naming no listed device, split on a batch-1 model or one whose
# Reshape names the batch, and malformed split weights; and runs submitted without waiting
# (`check --pipeline N`: each data set's runs held at once, all against onnxruntime's outputs);
# the cost calibration read back from the compile cache, and the links it measured. Needs PoCL for the OpenCL mixes (skipped,
# not failed, without it). Prints `multidev: N passed, M failed`; about 4 minutes on 2 cores.
# Usage: scripts/multidev.sh [BUILD]
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
build="${1:-build}"
smelt="$build/smelt"
# The counts and encodings below (dispatches per arena, 'w9/packed16') are those of a host with
# 8-float (AVX2) vectors; an AVX-512 host's 32-column panels give other kernel counts. Compile as
# for the former on every host, so the expectations hold on both.
export SMELT_VECTOR_WIDTH=8
passed=0 failed=0
pass() { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAIL: $*"; }

# expect_line NAME PATTERN OUTPUT: OUTPUT has a line matching the extended regex PATTERN.
expect_line() {
    if printf '%s\n' "$3" | grep -Eq "$2"; then pass; else fail "$1: no line matching '$2' in:"; printf '%s\n' "$3" | head -n 40; fi
}
# expect_error NAME PATTERN CMD...: CMD fails and its message matches PATTERN.
expect_error() {
    local name="$1" pat="$2" out rc
    shift 2
    out="$("$@" 2>&1)"; rc=$?
    if [ "$rc" -ne 0 ] && printf '%s\n' "$out" | grep -Eq "$pat"; then pass; else fail "$name (exit $rc): $out"; fi
}

models=(mlp cnn attention ffn_gelu torch_tiny)
have_ocl=0
"$smelt" run examples/digits_mlp.onnx --shape x=1x64 --device opencl > /dev/null 2>&1 && have_ocl=1
# Mixes: placements that put consecutive regions on different devices (so tensors move, by sub-range).
mixes=("cpu:0,cpu:1|MatMul=cpu:1,Conv=cpu:1,Add=cpu:1")
[ "$have_ocl" -eq 1 ] && mixes+=("cpu,opencl|Conv=opencl,MatMul=opencl,Gemm=opencl,*=cpu" "opencl,cpu|Relu=cpu,Softmax=cpu,Gemm=cpu")
for m in "${models[@]}"; do
    dir="$build/models/$m"
    [ -d "$dir" ] || { fail "$dir missing (tests/models/build_models.py)"; continue; }
    for mix in "${mixes[@]}"; do
        out="$(timeout 300 "$smelt" check "$dir" --device "${mix%%|*}" --place "${mix#*|}" 2>&1)"; rc=$?
        if [ "$rc" -eq 0 ]; then pass; else fail "$m --device ${mix%%|*} --place ${mix#*|}: $out"; fi
        # pipelined: each data set submitted three times more, all held at once (smelt_program_submit)
        out="$(timeout 300 "$smelt" check "$dir" --device "${mix%%|*}" --place "${mix#*|}" --pipeline 3 2>&1)"; rc=$?
        if [ "$rc" -eq 0 ]; then pass; else fail "$m --device ${mix%%|*} --place ${mix#*|} --pipeline 3: $out"; fi
    done
    if [ "$have_ocl" -eq 1 ]; then
        out="$(POCL_DEVICES="pthread pthread" timeout 300 "$smelt" check "$dir" --device opencl:0,opencl:1 \
               --place 'MatMul=opencl:1,Conv=opencl:1,Add=opencl:1,Gemm=opencl:1' --pipeline 2 2>&1)"; rc=$?
        if [ "$rc" -eq 0 ]; then pass; else fail "$m on two PoCL devices: $out"; fi
    fi
done
# Pipelined runs (smelt_program_submit): bench reports throughput next to latency; a program that
# holds one run at a time (split, run-time control flow) refuses a second; the depth's bounds.
pb="$(timeout 300 "$smelt" bench "$build/models/cnn" --device cpu:0,cpu:1 --place 'Conv=cpu:1,*=cpu:0' --threads 1 \
      --runs 5 --no-cold --pipeline 2 2>&1)"
expect_line "bench --pipeline: throughput" '^runs_per_s: [0-9.]+$' "$pb"
expect_line "bench --pipeline: pipelined throughput" '^pipelined_runs_per_s: [0-9.]+$' "$pb"
expect_line "bench --pipeline: depth" '^pipeline: 2$' "$pb"
expect_error "split holds one run" 'holds one run at a time' \
    "$smelt" check "$build/models/cnn" --device cpu:0,cpu:1 --place split --pipeline 2
out="$(timeout 300 "$smelt" check "$build/models/cnn" --device cpu:0,cpu:1 --place split --pipeline 1 2>&1)"; rc=$?
if [ "$rc" -eq 0 ]; then pass; else fail "split --pipeline 1: $out"; fi
# The cost calibration is kept in the compile cache: measured by the first compile, read back by
# the second (an empty cache of its own); the links it measured are printed per device pair.
calib_dir="$(mktemp -d /tmp/smelt-multidev-calib-XXXXXX)"
ci1="$(SMELT_CACHE_DIR="$calib_dir" timeout 300 "$smelt" info "$build/models/cnn" --device cpu:0,cpu:1 --place cost 2>&1)"
ci2="$(SMELT_CACHE_DIR="$calib_dir" timeout 300 "$smelt" info "$build/models/cnn" --device cpu:0,cpu:1 --place cost 2>&1)"
expect_line "calibration measured" '^calibration: measured now$' "$ci1"
expect_line "calibration cached" '^calibration: from the compile cache' "$ci2"
expect_line "cost pipelined" '^cost pipelined: [0-9.]+ ms between runs when they overlap' "$ci2"
expect_line "link cpu:0 to cpu:1" '^link cpu:0→cpu:1: [0-9.]+ GB/s \(1 MiB copy, measured\)$' "$ci2"
if [ "$have_ocl" -eq 1 ]; then
    ci3="$(SMELT_CACHE_DIR="$calib_dir" timeout 300 "$smelt" info "$build/models/cnn" --device cpu,opencl --place cost 2>&1)"
    expect_line "link opencl:0 to cpu:0" '^link opencl:0→cpu:0: [0-9.]+ GB/s' "$ci3"
fi
rm -rf "$calib_dir"
expect_error "--pipeline 9" "pipeline '9': must be from 1 to 8" "$smelt" bench "$build/models/cnn" --pipeline 9

# cnn: 6 Conv, MaxPool, GlobalAveragePool, Gemm. Conv on one device, the rest on the other: the
# three tensors crossing are conv n54's output [2,8,17,17] read by MaxPool (a 2x2 stride-2 pool:
# its flat span ends at row 15, column 15 of the last channel, element 4606 of 4624), MaxPool's
# output [2,8,8,8] (1024 floats) and conv n70's (512 floats): 18424 + 4096 + 2048 bytes.
# Conv n70 (3x3 s2, 8 -> 16 channels) is two kernels, its im2col and the GEMM (graph_conv_on_cols),
# so the 6 Convs are 7 dispatches.
cnn="$build/models/cnn"
info="$("$smelt" info "$cnn" --device cpu:0,cpu:1 --place 'Conv=cpu:1,*=cpu:0' 2>&1)"
expect_line "cpu:0,cpu:1 devices" '^devices: 2$' "$info"
expect_line "cpu:0,cpu:1 classes" '^target classes: 1$' "$info"
expect_line "cpu:0,cpu:1 executables" '^executables: 1$' "$info"
expect_line "cpu:0,cpu:1 transfers" '^transfers: 3 per run, 24568 bytes$' "$info"
expect_line "cpu:0,cpu:1 arena" '^arena cpu:1: [0-9]+ bytes, 7 dispatches$' "$info"
# An arena per device: cpu:0 (MaxPool, GlobalAveragePool, Gemm) holds conv n54's output (18496
# bytes) and MaxPool's (4096) live together, then smaller ones: 22592 bytes.
expect_line "cpu:0,cpu:1 arena of cpu:0" '^arena cpu:0: 22592 bytes, 3 dispatches$' "$info"
info="$("$smelt" info "$cnn" --device cpu 2>&1)"
expect_line "cpu alone" '^transfers: 0 per run, 0 bytes$' "$info"
expect_line "cpu alone executables" '^executables: 1$' "$info"
if [ "$have_ocl" -eq 1 ]; then
    info="$("$smelt" info "$cnn" --device cpu,opencl --place 'Conv=opencl,*=cpu' 2>&1)"
    expect_line "cpu,opencl classes" '^target classes: 2$' "$info"
    expect_line "cpu,opencl executables" '^executables: 2$' "$info"
    expect_line "cpu,opencl transfers" '^transfers: 3 per run, 24568 bytes$' "$info"
    # fallback: every region runs on the first device; the other gets no executable.
    info="$("$smelt" info "$cnn" --device cpu,opencl 2>&1)"
    expect_line "cpu,opencl fallback executables" '^executables: 1$' "$info"
    expect_line "cpu,opencl fallback transfers" '^transfers: 0 per run' "$info"
    info="$(POCL_DEVICES="pthread pthread" "$smelt" info "$cnn" --device opencl:0,opencl:1 --place 'Conv=opencl:1' 2>&1)"
    expect_line "two PoCL devices classes" '^target classes: 1$' "$info"
    expect_line "two PoCL devices executables" '^executables: 1$' "$info"
    expect_line "two PoCL devices transfers" '^transfers: 3 per run, 24568 bytes$' "$info"
    expect_error "missing device" "device 'opencl:5' is not available" "$smelt" info "$cnn" --device cpu,opencl:5
    # fallback moving regions for real: OpenCL's workgroup memory limited to 1 KiB (SMELT_DEVICE_SMEM),
    # under the tiled GEMM's two 16x16 f32 tiles (2 KiB): every Conv and the Gemm land on the next
    # device, MaxPool and GlobalAveragePool (no workgroup memory) stay. The four tensors crossing:
    # conv n54's 18424 bytes to MaxPool, its 4096 back, conv n70's 2048 to GlobalAveragePool and its
    # [2,16,1,1] (128 bytes) back to the Gemm.
    for m in "${models[@]}"; do
        out="$(SMELT_DEVICE_SMEM=1024 timeout 300 "$smelt" check "$build/models/$m" --device opencl,cpu 2>&1)"; rc=$?
        if [ "$rc" -eq 0 ]; then pass; else fail "$m --device opencl,cpu with 1 KiB of workgroup memory: $out"; fi
    done
    plan="$(SMELT_DEVICE_SMEM=1024 "$smelt" compile "$cnn" --device opencl,cpu --emit plan 2>&1)"
    expect_line "fallback: conv on the cpu" "^  region 4 \(Conv 'n54'\): cpu:0$" "$plan"
    expect_line "fallback: pool stays on opencl" "^  region 5 \(MaxPool 'n66'\): opencl:0$" "$plan"
    info="$(SMELT_DEVICE_SMEM=1024 "$smelt" info "$cnn" --device opencl,cpu 2>&1)"
    expect_line "fallback opencl,cpu executables" '^executables: 2$' "$info"
    expect_line "fallback opencl,cpu regions" '^  class 0 \(opencl\): devices opencl:0; 2 regions' "$info"
    expect_line "fallback opencl,cpu transfers" '^transfers: 4 per run, 24696 bytes$' "$info"
    # Two PoCL devices, the first limited: two classes now (their limits differ), the Convs on opencl:1.
    out="$(POCL_DEVICES="pthread pthread" SMELT_DEVICE_SMEM=opencl:0=1024 timeout 300 "$smelt" check "$cnn" --device opencl:0,opencl:1 2>&1)"; rc=$?
    if [ "$rc" -eq 0 ]; then pass; else fail "cnn on two PoCL devices, the first limited: $out"; fi
    info="$(POCL_DEVICES="pthread pthread" SMELT_DEVICE_SMEM=opencl:0=1024 "$smelt" info "$cnn" --device opencl:0,opencl:1 2>&1)"
    expect_line "fallback two PoCL devices classes" '^target classes: 2$' "$info"
    expect_line "fallback two PoCL devices transfers" '^transfers: 4 per run, 24696 bytes$' "$info"
    expect_error "malformed smem limit" "workgroup-memory limit 'opencl=x'" env SMELT_DEVICE_SMEM=opencl=x "$smelt" info "$cnn" --device opencl,cpu
    # The same through the threads a workgroup may have: 128, under the tiled GEMM's 256.
    out="$(SMELT_DEVICE_WG=128 timeout 300 "$smelt" check "$cnn" --device opencl,cpu 2>&1)"; rc=$?
    if [ "$rc" -eq 0 ]; then pass; else fail "cnn --device opencl,cpu with 128 threads per workgroup: $out"; fi
    info="$(SMELT_DEVICE_WG=128 "$smelt" info "$cnn" --device opencl,cpu 2>&1)"
    expect_line "wg limit: opencl,cpu transfers" '^transfers: 4 per run, 24696 bytes$' "$info"
    expect_line "wg limit: the device line" '^  d0 opencl:0: .*workgroup 128 \(at most 128\)' "$info"
fi
expect_error "missing cpu" "device 'cpu:99' is not available" "$smelt" info "$cnn" --device cpu,cpu:99
expect_error "unknown device" "device 'gpu' is not known" "$smelt" info "$cnn" --device cpu,gpu
expect_error "unknown policy" "unknown placement 'fastest'" "$smelt" info "$cnn" --device cpu,cpu:1 --place fastest
expect_error "override naming no device" "names no device of the list" "$smelt" info "$cnn" --device cpu,cpu:1 --place 'Conv=cpu:2'
expect_error "override naming nothing" "no op type and no node" "$smelt" info "$cnn" --device cpu,cpu:1 --place 'Convv=cpu:1'

# The split placement (api/split.c): the batch divided across the devices, outputs gathered; the
# small models are batch 2, so each device gets one row (split:1:1 by hand where a measured PoCL
# share would round to no row). attention's Reshape names the batch (2): refused, naming the node.
# The cost placement (place/cost.h) on every mix.
split_models=(mlp cnn ffn_gelu torch_tiny)
split_mixes=("cpu:0,cpu:1|split" "cpu:0,cpu:1|cost")
[ "$have_ocl" -eq 1 ] && split_mixes+=("cpu,opencl|split:1:1" "cpu,opencl|cost" "opencl,cpu|cost")
for m in "${split_models[@]}"; do
    for mix in "${split_mixes[@]}"; do
        out="$(timeout 300 "$smelt" check "$build/models/$m" --device "${mix%%|*}" --place "${mix#*|}" 2>&1)"; rc=$?
        if [ "$rc" -eq 0 ]; then pass; else fail "$m --device ${mix%%|*} --place ${mix#*|}: $out"; fi
    done
    if [ "$have_ocl" -eq 1 ]; then
        for pl in split cost; do
            out="$(POCL_DEVICES="pthread pthread" timeout 300 "$smelt" check "$build/models/$m" --device opencl:0,opencl:1 --place $pl 2>&1)"; rc=$?
            if [ "$rc" -eq 0 ]; then pass; else fail "$m --place $pl on two PoCL devices: $out"; fi
        done
    fi
done
info="$("$smelt" info "$cnn" --device cpu:0,cpu:1 --place split 2>&1)"
expect_line "split cpu:0,cpu:1 executables" '^executables: 1$' "$info"
expect_line "split cpu:0,cpu:1 share" '^  class 0 \(c\): devices cpu:0 cpu:1; batch share 1;' "$info"
info="$("$smelt" info examples/digits_mlp.onnx --shape x=4x64 --device cpu:0,cpu:1 --place split:3:1 2>&1)"
expect_line "split 3:1 executables (a variant per share)" '^executables: 2$' "$info"
expect_line "split 3:1 share 3" 'devices cpu:0; batch share 3;' "$info"
if [ "$have_ocl" -eq 1 ]; then
    info="$("$smelt" info "$cnn" --device cpu,opencl --place split:1:1 2>&1)"
    expect_line "split cpu,opencl classes" '^target classes: 2$' "$info"
    expect_line "split cpu,opencl executables" '^executables: 2$' "$info"
    info="$(POCL_DEVICES="pthread pthread" "$smelt" info "$cnn" --device opencl:0,opencl:1 --place split 2>&1)"
    expect_line "split two PoCL devices executables" '^executables: 1$' "$info"
    info="$("$smelt" info "$cnn" --device opencl,cpu --place cost 2>&1)"
    expect_line "cost opencl,cpu: all on the CPU here" '^arena opencl:0: 0 bytes, 0 dispatches$' "$info"
    expect_line "cost estimate" '^cost estimate: [0-9.]+ ms per run \(region times measured per target class' "$info"
    expect_line "cost measured per device" '^cost measured \(ms per run, every region it can run on it\): opencl:0 [0-9.]+ cpu:0 [0-9.]+$' "$info"
    info="$("$smelt" info "$cnn" --device opencl,cpu --place cost:table 2>&1)"
    expect_line "cost:table" '^cost estimate: [0-9.]+ ms per run \(table speeds' "$info"
    # measured with OpenCL's workgroup memory at 1 KiB: its class cannot run the convs or the Gemm,
    # so only MaxPool and GlobalAveragePool count on it, and the whole run stays on the CPU.
    info="$(SMELT_DEVICE_SMEM=1024 "$smelt" info "$cnn" --device opencl,cpu --place cost 2>&1)"
    expect_line "cost measured, the limited device" '^arena cpu:0: [0-9]+ bytes, 10 dispatches$' "$info"
    # cost with an override: MaxPool pinned to OpenCL, the rest placed by cost around it (on the CPU).
    out="$(timeout 300 "$smelt" check "$cnn" --device opencl,cpu --place 'cost,MaxPool=opencl' 2>&1)"; rc=$?
    if [ "$rc" -eq 0 ]; then pass; else fail "cnn --place cost,MaxPool=opencl: $out"; fi
    # (smelt info: the devices opened, so cost knows PoCL for the slow CPU driver it is)
    info="$("$smelt" info "$cnn" --device opencl,cpu --place 'cost,MaxPool=opencl' 2>&1)"
    expect_line "cost,MaxPool=opencl: MaxPool pinned" '^arena opencl:0: [0-9]+ bytes, 1 dispatches$' "$info"
    expect_line "cost,MaxPool=opencl: the rest by cost" '^arena cpu:0: [0-9]+ bytes, 9 dispatches$' "$info"
fi
# cost with an override on two identical CPUs: the Convs pinned to cpu:1, cost follows them there
# with the rest (moving nothing beats any copy); unpinned, the cost model would keep them on cpu:0
# and the override alone would split the run in two.
info="$("$smelt" info "$cnn" --device cpu:0,cpu:1 --place 'cost,Conv=cpu:1' 2>&1)"
expect_line "cost,Conv=cpu:1: all follow the pin" '^arena cpu:1: [0-9]+ bytes, 10 dispatches$' "$info"
expect_line "cost,Conv=cpu:1: no transfers" '^transfers: 0 per run, 0 bytes$' "$info"
expect_error "split with overrides" "split runs each batch share whole on one device" "$smelt" info "$cnn" --device cpu:0,cpu:1 --place 'split,Conv=cpu:1'
expect_error "split batch 1" "split: the batch is 1, fewer rows than the 2 devices" \
    "$smelt" info examples/digits_mlp.onnx --shape x=1x64 --device cpu:0,cpu:1 --place split
expect_error "split Reshape naming the batch" "node 'n13' \(Reshape\)" "$smelt" info "$build/models/attention" --device cpu:0,cpu:1 --place split
expect_error "split weights" "one positive integer per device" "$smelt" info "$cnn" --device cpu:0,cpu:1 --place split:1
# Device streams (api/streams.c): a copy between devices is the source's half, a signal, the
# destination's wait and its half; no host barrier on a device the copy does not touch.
plan="$("$smelt" compile "$cnn" --emit plan --device cpu:0,cpu:1 --place 'Conv=cpu:1,*=cpu:0' 2>&1)"
expect_line "cnn plan: 3 events" '^commands: .*, 3 events\) on 2 devices$' "$plan"
expect_line "cnn plan: a signal" '^ +c[0-9]+ +d1 signal e0$' "$plan"
expect_line "cnn plan: its wait" '^ +c[0-9]+ +d0 wait e0$' "$plan"
expect_line "cnn plan: the source's half" '^ +c[0-9]+ +d1 copy [^ ]+\[0,18424\) d1 -> stage\[0\] \(18424 bytes\)$' "$plan"
# Two conv branches joined by an Add (bench/branches.py), branch b on the second device: the
# streams run at once; outputs against onnxruntime's (atol 1e-5: the sums cancel near zero).
branches="$build/bench/branches"
[ -f "$branches/model.onnx" ] || "$root/.venv/bin/python" bench/branches.py "$build/bench" > /dev/null 2>&1
if [ -f "$branches/model.onnx" ]; then
    bmix=("cpu:0,cpu:1|cpu:1")
    [ "$have_ocl" -eq 1 ] && bmix+=("cpu,opencl|opencl" "opencl,cpu|cpu")
    for mix in "${bmix[@]}"; do
        d="${mix#*|}"
        out="$(timeout 300 "$smelt" check "$branches" --atol 1e-5 --device "${mix%%|*}" --place "b0=$d,b1=$d,b2=$d,b3=$d" 2>&1)"; rc=$?
        if [ "$rc" -eq 0 ]; then pass; else fail "branches --device ${mix%%|*}: $out"; fi
    done
    if [ "$have_ocl" -eq 1 ]; then
        out="$(POCL_DEVICES="pthread pthread" timeout 300 "$smelt" check "$branches" --atol 1e-5 --device opencl:0,opencl:1 \
               --place 'b0=opencl:1,b1=opencl:1,b2=opencl:1,b3=opencl:1' 2>&1)"; rc=$?
        if [ "$rc" -eq 0 ]; then pass; else fail "branches on two PoCL devices: $out"; fi
    fi
    # Only b3 (with the Add) on cpu:1: a3's output leaves cpu:0 right after a3, before b0..b2 run
    # there (the source's half sits after its producer, not where the consumer is listed).
    plan="$("$smelt" compile "$branches" --emit plan --device cpu:0,cpu:1 --place b3=cpu:1 2>&1)"
    # (b0's first kernel found by its node: a conv on the im2col GEMM is two kernels)
    order="$(printf '%s\n' "$plan" | grep -oE "copy ra3\[0,401408\) d0 -> stage|node 'b0'" | head -n 2 | tr '\n' '|')"
    if [ "$order" = "copy ra3[0,401408) d0 -> stage|node 'b0'|" ]; then pass; else fail "branches b3=cpu:1: a3's output leaves after b0 ($order)"; fi
    info="$("$smelt" info "$branches" --device cpu:0,cpu:1 --place 'b0=cpu:1,b1=cpu:1,b2=cpu:1,b3=cpu:1' 2>&1)"
    expect_line "branches transfers" '^transfers: 1 per run, 401408 bytes$' "$info"
else
    fail "bench/branches.py could not write $branches"
fi
# Encodings per device: mlp's MatMul on OpenCL reads its weight plain, the Gemms on the CPU read
# theirs packed into panels (graph/pack_weights.c), in one program.
if [ "$have_ocl" -eq 1 ]; then
    plan="$("$smelt" compile "$build/models/mlp" --emit plan --device opencl,cpu --place 'Relu=cpu,Softmax=cpu,Gemm=cpu' 2>&1)"
    expect_line "mlp: OpenCL reads the plain weight" '^ +c[0-9]+ +d0 dispatch .*matmul.* r:w1\[0,12288\)' "$plan"
    expect_line "mlp: the CPU reads panels" '^ +c[0-9]+ +d1 dispatch .*gemm.* r:w9/packed16\[' "$plan"
fi
# Run-time control flow (tests/models/control_cases.py) on a device mix: the if/loop command runs
# on the device its node is placed on, its child programs compiled for that device alone.
ctl="$build/models_control"
[ -d "$ctl" ] || "$root/.venv/bin/python" tests/models/control_cases.py "$ctl" > /dev/null 2>&1
cmix=("cpu:0,cpu:1|If=cpu:1,Loop=cpu:1,Scan=cpu:1")
[ "$have_ocl" -eq 1 ] && cmix+=("cpu,opencl|If=opencl,Loop=opencl,Scan=opencl" "opencl,cpu|If=cpu,Loop=cpu,Scan=cpu")
for m in ctrl_if_runtime_cond ctrl_if_runtime_shapes ctrl_loop_while ctrl_nested_if_in_loop ctrl_scan_rnn_cell; do
    [ -d "$ctl/$m" ] || { fail "$ctl/$m missing (tests/models/control_cases.py)"; continue; }
    for mix in "${cmix[@]}"; do
        out="$(timeout 300 "$smelt" check "$ctl/$m" --device "${mix%%|*}" --place "${mix#*|}" --pipeline 1 2>&1)"; rc=$?
        if [ "$rc" -eq 0 ]; then pass; else fail "$m --device ${mix%%|*} --place ${mix#*|}: $out"; fi
    done
done
if [ "$have_ocl" -eq 1 ] && [ -d "$ctl/ctrl_if_runtime_cond" ]; then
    plan="$("$smelt" compile "$ctl/ctrl_if_runtime_cond" --emit plan --device cpu,opencl --place If=opencl 2>&1)"
    expect_line "if on opencl" '^ +c[0-9]+ +d1 if If_2 \(If\): then child0, else child1' "$plan"
fi
echo "multidev: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
