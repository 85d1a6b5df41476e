#!/usr/bin/env bash
# The conformance and model suites on an NVIDIA GPU, in one command (run on a machine with a GPU,
# a driver and the CUDA toolkit's NVRTC): builds, then
#   models       `smelt check` of each tests/models model with --device cuda
#   conformance  scripts/conformance.py over the must-pass list with --device cuda
# Last line: `N passed, M failed`; exit 1 when M > 0.
#   scripts/gpu-tests.sh [DEVICE]      (default cuda; e.g. cuda:1)
# On a machine without network access, SMELT_PY names a python that already has onnx,
# onnxruntime and numpy (the venv is then not made), and SMELT_NODE_TESTS a copy of the node
# test data when that onnx ships none.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
dev="${1:-cuda}" build="${BUILD:-build}" jobs="${SMELT_TEST_JOBS:-$(nproc)}"
py="${SMELT_PY:-$root/.venv/bin/python}"
make -j"$jobs" all || exit 1
[ -n "${SMELT_PY:-}" ] || scripts/venv.sh || exit 1
if ! "$build/smelt" run examples/digits_mlp.onnx --shape x=1x64 --device "$dev" > /dev/null; then
    echo "gpu-tests: device '$dev' does not work (message above)"
    exit 1
fi
passed=0 failed=0
"$py" tests/models/build_models.py "$build/models" || exit 1
for dir in "$build"/models/*/; do
    if timeout 300 "$build/smelt" check "${dir%/}" --device "$dev"; then passed=$((passed + 1))
    else failed=$((failed + 1)); echo "FAIL: $(basename "$dir") --device $dev"; fi
done
out="$("$py" scripts/conformance.py --quiet --must-pass-only --jobs "$jobs" --smelt "$build/smelt" --extra="--device $dev" \
       --results "$build/conformance-$dev/results.txt" 2>&1)"
printf '%s\n' "$out"
counts="$(printf '%s\n' "$out" | sed -n 's/^must-pass: \([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p')"
if [ -n "$counts" ]; then
    passed=$((passed + ${counts% *})) failed=$((failed + ${counts#* }))
else
    failed=$((failed + 1)); echo "FAIL: conformance gave no verdict"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
