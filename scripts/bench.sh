#!/usr/bin/env bash
# `make bench`: build the benchmark models (bench/models.py), the memcpy reference
# (bench/memcpy.c) and the GEMM microbenchmark (bench/gemm.c, whose table goes to
# $BUILD/bench/gemm.md), then run bench/run.py, which prints one table of smelt against
# onnxruntime (1 and 2 threads) and writes it to $BUILD/bench/results.md.
#
# Environment: BUILD (default build), SMELT_BENCH_RUNS (timed runs per round, default 10),
# SMELT_BENCH_ROUNDS (interleaved rounds of smelt and onnxruntime, default 5),
# SMELT_BENCH_THREADS (default 1,2), SMELT_BENCH_ONLY (comma list of models; default all).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
build="${BUILD:-build}"
py="$root/.venv/bin/python"

scripts/venv.sh
mkdir -p "$build/bench"
"$py" bench/models.py "$build/bench" ${SMELT_BENCH_ONLY:+$(echo "$SMELT_BENCH_ONLY" | tr , ' ')}
${CC:-cc} -O2 -pthread bench/memcpy.c -o "$build/bench/memcpy"
# The GEMM microbenchmark (bench/gemm.c): FMA peak, OpenBLAS and smelt's MatMul at 1 thread.
"$py" bench/gemm_models.py "$build/bench"
${CC:-cc} -O2 -march=native -std=c11 -Iinclude -I/usr/include/x86_64-linux-gnu bench/gemm.c "$build/libsmelt.a" \
    -o "$build/bench/gemm" -lopenblas -lprotobuf-c -ldl -lpthread -lm
echo "bench: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
"$py" bench/run.py --smelt "$build/smelt" --models "$build/bench" --memcpy "$build/bench/memcpy" \
    --runs "${SMELT_BENCH_RUNS:-10}" --rounds "${SMELT_BENCH_ROUNDS:-5}" --threads "${SMELT_BENCH_THREADS:-1,2}" \
    ${SMELT_BENCH_ONLY:+--only "$SMELT_BENCH_ONLY"} --out "$build/bench/results.md"
"$build/bench/gemm" "$build/bench" | tee "$build/bench/gemm.md"
echo "bench: table written to $build/bench/results.md"
