#!/usr/bin/env bash
# Compile-only CUDA check (no GPU needed): emit CUDA C for every must-pass conformance test with
# `smelt compile DIR --emit cuda`, then compile each with NVRTC for sm_90 and sm_80 (build/nvrtc_check);
# any error or warning fails the test. Prints `cuda-compile: N passed, M failed, S skipped`; every
# test counts as skipped (exit 0) when libnvrtc is absent.
#   scripts/cuda-compile.sh [BUILD] [JOBS]
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
build="${1:-build}" jobs="${2:-$(nproc)}"
py="$root/.venv/bin/python"
node="$("$py" -c 'import onnx, os; print(os.path.join(os.path.dirname(onnx.__file__), "backend/test/data/node"))')"
out="$build/cuda-compile"
rm -rf "$out" && mkdir -p "$out"
mapfile -t tests < <(sed -e 's/#.*//' -e 's/[[:space:]].*//' tests/conformance/must_pass.txt | grep -v '^$')
: > "$out/probe.cu"  # an empty source: /dev/null is not always empty in a sandbox
if ! "$build/nvrtc_check" "$out/probe.cu" > "$out/probe.txt" 2>&1 && grep -q SKIP "$out/probe.txt"; then
    echo "cuda-compile: 0 passed, 0 failed, ${#tests[@]} skipped (no libnvrtc)"
    exit 0
fi
rm -f "$out/probe.cu"
printf '%s\n' "${tests[@]}" | xargs -P "$jobs" -I{} sh -c \
    '"$0" compile "$1/{}" --emit cuda -o "$2/{}.cu" > "$2/{}.err" 2>&1 || echo "{}: FAIL smelt compile: $(head -c 300 "$2/{}.err")"' \
    "$build/smelt" "$node" "$out" > "$out/emit.txt"
ls "$out"/*.cu 2>/dev/null | xargs -r -n 50 -P "$jobs" "$build/nvrtc_check" > "$out/nvrtc.txt" 2>&1
failed=$(( $(grep -c FAIL "$out/emit.txt") + $(grep -c ': FAIL' "$out/nvrtc.txt") ))
passed=$(grep -c ': PASS' "$out/nvrtc.txt")
grep -h FAIL "$out/emit.txt" "$out/nvrtc.txt" | cut -c1-300 | head -n 20
echo "cuda-compile: $passed passed, $failed failed, 0 skipped"
[ "$failed" -eq 0 ]
