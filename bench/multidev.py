#!/usr/bin/env python3
"""Several devices (issue 18): the split and cost placements against one device.

  split   a batch-8 conv model (cnn8: 4 conv3x3 8..32 channels at 24x24, MaxPool, GAP, Gemm) and
          the bench mlp (batch 64) with the batch split over cpu:0,cpu:1 (one core each), against
          one `cpu` with 2 threads
  cost    cnn8 with `--place cost` (region times measured when compiling) and `--place cost:table`
          (table speeds) over cpu,opencl (PoCL) against cpu alone and opencl alone; the same two
          over cpu:0,cpu:1 against cpu with 2 threads; and the compile time of `cost` (its
          calibration: the model once more per target class, warm cache) against `cost:table`
  compile a cold compile (empty cache) of the mlp on cpu:0,cpu:1 with split (which compiles both
          shares and times one of them) against cpu alone
  pipe    consecutive runs submitted two at a time (`smelt bench --pipeline 2`, smelt_program_submit)
          against one after the other, for a two-stage override placement of cnn8: its first two
          convs on cpu:0 and the rest on cpu:1 (one core each), and its first conv on PoCL
          (POCL_DEVICES="pthread pthread") and the rest on the cpu; runs per second, each round's
          sequential and pipelined numbers from one process, one after the other

Each configuration is first checked against onnxruntime's outputs (`smelt check`); then R rounds
(--rounds), each running every configuration once, interleaved (`smelt bench --no-cold`, its
median of N runs); the table gives the median over rounds, the spread (min..max of the rounds) and
the ratio to the baseline. Prints a markdown table (and writes it to --out).
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import models  # noqa: E402  (bench/models.py: Builder, conv, mlp, write_case)


def cnn8():
    b = models.Builder(21)
    h = b.op("Relu", [models.conv(b, "x", 8, 16, 3)])
    h = b.op("Relu", [models.conv(b, h, 16, 16, 3)])
    h = b.op("MaxPool", [h], kernel_shape=[2, 2], strides=[2, 2])
    h = b.op("Relu", [models.conv(b, h, 16, 32, 3)])
    h = b.op("Relu", [models.conv(b, h, 32, 32, 3)])
    h = b.op("Flatten", [b.op("GlobalAveragePool", [h])], axis=1)
    b.op("Gemm", [h, b.weight([10, 32]), b.weight([10], 0.1)], out="y", transB=1)
    return b.model("cnn8", [8, 8, 24, 24], [8, 10])


def run(cmd, env=None, timeout=300):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {r.stdout[-2000:]}{r.stderr[-2000:]}")
    return r.stdout


def have_opencl(smelt, d):
    r = subprocess.run([smelt, "info", d, "--device", "opencl"], capture_output=True, text=True)
    return r.returncode == 0


def bench_ms(smelt, d, args, runs):
    out = run([smelt, "bench", d, "--runs", str(runs), "--no-cold"] + args)
    return float(re.search(r"^median_ms: ([0-9.]+)", out, re.M).group(1))


def bench_rps(smelt, d, args, runs, env=None):
    out = run([smelt, "bench", d, "--runs", str(runs), "--no-cold", "--pipeline", "2"] + args, env=env)
    seq = float(re.search(r"^runs_per_s: ([0-9.]+)", out, re.M).group(1))
    piped = float(re.search(r"^pipelined_runs_per_s: ([0-9.]+)", out, re.M).group(1))
    return seq, piped


def cold_ms(smelt, d, args):
    cache = tempfile.mkdtemp(prefix="smelt-multidev-")
    os.chmod(cache, 0o700)
    env = dict(os.environ, SMELT_CACHE_DIR=cache)
    t0 = time.perf_counter()
    run([smelt, "info", d] + args, env=env)
    t = (time.perf_counter() - t0) * 1e3
    shutil.rmtree(cache, ignore_errors=True)
    return t


def pipe_table(a, cnn, ocl):
    """Pipelined against sequential runs of a two-stage placement (runs per second: higher is better)."""
    lines = []
    pipe_rows = [("cnn8 conv3,conv8 on cpu:0, rest on cpu:1", cnn,
                  ["--device", "cpu:0,cpu:1", "--threads", "1", "--place", "conv3=cpu:0,conv8=cpu:0,*=cpu:1"], None)]
    if ocl:
        pipe_rows.append(("cnn8 conv3 on PoCL, rest on cpu", cnn,
                          ["--device", "cpu,opencl", "--threads", "1", "--place", "conv3=opencl,*=cpu"],
                          dict(os.environ, POCL_DEVICES="pthread pthread")))
    rps = {r[0]: ([], []) for r in pipe_rows}
    for name, d, args, env in pipe_rows:
        run([a.smelt, "check", d, "--pipeline", "2"] + args, env=env)
    for _ in range(a.rounds):
        for name, d, args, env in pipe_rows:
            seq, piped = bench_rps(a.smelt, d, args, 2 * a.runs if env else 20 * a.runs, env)
            rps[name][0].append(seq)
            rps[name][1].append(piped)
    lines += ["", "| two-stage placement | sequential runs/s | spread | pipelined (2 held) runs/s | spread | ratio |",
              "|---|---:|---|---:|---|---:|"]
    for name, (seq, piped) in rps.items():
        ms, mp = statistics.median(seq), statistics.median(piped)
        lines.append(f"| {name} | {ms:.1f} | {min(seq):.1f}..{max(seq):.1f} | {mp:.1f} | {min(piped):.1f}..{max(piped):.1f} "
                     f"| {mp / ms:.2f} |")
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smelt", default=os.path.join(HERE, "..", "build", "smelt"))
    ap.add_argument("--models", default=os.path.join(HERE, "..", "build", "bench"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--out", default="")
    ap.add_argument("--only", choices=["all", "pipe"], default="all", help="pipe: only the pipelined runs' table")
    a = ap.parse_args()
    os.makedirs(a.models, exist_ok=True)
    models.write_case(a.models, "cnn8", *cnn8())
    models.write_case(a.models, "mlp", *models.mlp())
    cnn, mlp = (os.path.join(a.models, n) for n in ("cnn8", "mlp"))
    ocl = have_opencl(a.smelt, cnn)
    if a.only == "pipe":
        text = "\n".join(pipe_table(a, cnn, ocl) + [f"\nload average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}"])
        print(text)
        if a.out:
            with open(a.out, "w") as f:
                f.write(text + "\n")
        return 0
    # (name, model dir, smelt args, baseline row name or None)
    rows = [("cnn8 cpu 2 threads", cnn, ["--device", "cpu", "--threads", "2"], None),
            ("cnn8 split cpu:0,cpu:1", cnn, ["--device", "cpu:0,cpu:1", "--place", "split"], "cnn8 cpu 2 threads"),
            ("mlp cpu 2 threads", mlp, ["--device", "cpu", "--threads", "2"], None),
            ("mlp split cpu:0,cpu:1", mlp, ["--device", "cpu:0,cpu:1", "--place", "split"], "mlp cpu 2 threads"),
            ("cnn8 cost cpu:0,cpu:1", cnn, ["--device", "cpu:0,cpu:1", "--place", "cost"], "cnn8 cpu 2 threads"),
            ("cnn8 cost:table cpu:0,cpu:1", cnn, ["--device", "cpu:0,cpu:1", "--place", "cost:table"], "cnn8 cpu 2 threads")]
    if ocl:
        rows += [("cnn8 opencl alone", cnn, ["--device", "opencl"], None),
                 ("cnn8 cpu alone", cnn, ["--device", "cpu"], None),
                 ("cnn8 cost cpu,opencl", cnn, ["--device", "cpu,opencl", "--place", "cost"], "cnn8 cpu alone"),
                 ("cnn8 cost:table cpu,opencl", cnn, ["--device", "cpu,opencl", "--place", "cost:table"], "cnn8 cpu alone"),
                 ("cnn8 split cpu,opencl", cnn, ["--device", "cpu,opencl", "--place", "split"], "cnn8 cpu alone")]
    for name, d, args, _ in rows:  # correct before timed
        run([a.smelt, "check", d] + args)
    times = {r[0]: [] for r in rows}
    for _ in range(a.rounds):
        for name, d, args, _ in rows:
            runs = 3 if "opencl alone" in name else a.runs
            times[name].append(bench_ms(a.smelt, d, args, runs))
    compile_rows = [("mlp cold compile cpu", ["--device", "cpu"], None),
                    ("mlp cold compile split cpu:0,cpu:1", ["--device", "cpu:0,cpu:1", "--place", "split"],
                     "mlp cold compile cpu")]
    for name, _, _ in compile_rows:
        times[name] = []
    for _ in range(2):
        for name, args, _ in compile_rows:
            times[name].append(cold_ms(a.smelt, mlp, args))
    # the cost calibration's price: compile (warm cache, so the builds are loads) with and without it
    warm_rows = [("cnn8 compile cost:table cpu:0,cpu:1", ["--device", "cpu:0,cpu:1", "--place", "cost:table"], None),
                 ("cnn8 compile cost cpu:0,cpu:1", ["--device", "cpu:0,cpu:1", "--place", "cost"],
                  "cnn8 compile cost:table cpu:0,cpu:1")]
    if ocl:
        warm_rows += [("cnn8 compile cost:table cpu,opencl", ["--device", "cpu,opencl", "--place", "cost:table"], None),
                      ("cnn8 compile cost cpu,opencl", ["--device", "cpu,opencl", "--place", "cost"],
                       "cnn8 compile cost:table cpu,opencl")]
    for name, _, _ in warm_rows:
        times[name] = []
    for _ in range(a.rounds):
        for name, args, _ in warm_rows:
            t0 = time.perf_counter()
            run([a.smelt, "info", cnn] + args)
            times[name].append((time.perf_counter() - t0) * 1e3)
    compile_rows += warm_rows
    lines = ["| configuration | median ms | spread (rounds) | speedup over baseline |", "|---|---:|---|---:|"]
    for name, base in [(r[0], r[3]) for r in rows] + [(r[0], r[2]) for r in compile_rows]:
        t = times[name]
        med = statistics.median(t)
        ratio = f"{statistics.median(times[base]) / med:.2f} (vs {base})" if base else "baseline"
        lines.append(f"| {name} | {med:.3f} | {min(t):.3f}..{max(t):.3f} | {ratio} |")
    if not ocl:
        lines.append("| cost / split over cpu,opencl | skipped: no OpenCL device | | |")
    info = run([a.smelt, "info", cnn, "--device", "cpu:0,cpu:1", "--place", "split"])
    lines.append("")
    lines += [ln for ln in info.splitlines() if ln.startswith(("placement:", "executables:", "  class"))]
    if ocl:
        info = run([a.smelt, "info", cnn, "--device", "cpu,opencl", "--place", "cost"])
        lines += [ln for ln in info.splitlines() if ln.startswith(("cost ", "arena "))]
    lines += pipe_table(a, cnn, ocl)
    lines.append(f"\nload average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    text = "\n".join(lines)
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
