#!/usr/bin/env python3
"""Measure the two local-variable allocators (`--locals reuse|hybrid`, DESIGN.md idea 2) per target.

    .venv/bin/python scripts/locals_measure.py [--models build/bench] [--only NAME,...]
                                               [--targets cc,opencl,cuda] [--runs 5] [--rounds 3]

For every model (default: the small bench models, bench/models.py) and target:
  cc      `smelt compile --emit c` source bytes; a cold `smelt bench --runs 1` (empty SMELT_CACHE_DIR,
          SMELT_CC_JOBS=1): smelt's compile_cold_ms and the CPU seconds of smelt and its compiler
          (getrusage of the children: the wall time on this shared machine moves with its load, the
          CPU time much less); then run time, `smelt bench --threads 1` median, in interleaved rounds
          (reuse, hybrid, reuse, ...), the median of the rounds' medians.
  opencl  the same with `--device opencl` (PoCL; POCL_CACHE_DIR emptied too, so PoCL compiles).
  cuda    `--emit cuda` source bytes, and build/nvrtc_check on it: NVRTC compiles it for sm_90 and
          sm_80 (no GPU here, so no run time); wall and CPU seconds of both compiles.
Prints one table, then per target the geometric mean of reuse/hybrid over the models for each column
and the allocator the numbers favour: the faster one at run time where it differs by more than 3%,
else the one that compiles faster (for cuda: compile time alone).
"""
import argparse
import math
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STRATS = ("reuse", "hybrid")


def child_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(cmd, env=None, timeout=900):
    """(stdout, wall s, CPU s of the process tree)."""
    c0, t0 = child_cpu(), time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    wall, cpu = time.perf_counter() - t0, child_cpu() - c0
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr.strip()[-300:]}")
    return r.stdout, wall, cpu


def kv(text, key):
    m = re.search(rf"^{key}:\s+([0-9.]+)", text, re.M)
    return float(m.group(1)) if m else float("nan")


def device_args(target):
    return ["--device", "opencl"] if target == "opencl" else []


def source_bytes(smelt, model, strat, lang):
    with tempfile.NamedTemporaryFile(suffix="." + lang) as f:
        run([smelt, "compile", model, "--emit", lang, "--locals", strat, "-o", f.name])
        return os.path.getsize(f.name)


def cold_compile(smelt, d, strat, target):
    with tempfile.TemporaryDirectory(prefix="smelt-locals-") as tmp:
        env = dict(os.environ, SMELT_CACHE_DIR=os.path.join(tmp, "smelt"), POCL_CACHE_DIR=os.path.join(tmp, "pocl"),
                   SMELT_CC_JOBS="1")
        out, _, cpu = run([smelt, "bench", d, "--runs", "1", "--threads", "1", "--locals", strat]
                          + device_args(target), env=env)
        return kv(out, "compile_cold_ms"), cpu


def nvrtc(smelt, model, strat, nvrtc_check):
    with tempfile.TemporaryDirectory(prefix="smelt-locals-") as tmp:
        cu = os.path.join(tmp, "k.cu")
        run([smelt, "compile", model, "--emit", "cuda", "--locals", strat, "-o", cu])
        out, wall, cpu = run([nvrtc_check, cu])
        if "PASS" not in out:
            raise RuntimeError(f"nvrtc_check: {out.strip()[:300]}")
        return os.path.getsize(cu), wall * 1e3, cpu


def geomean(xs):
    xs = [x for x in xs if x > 0 and not math.isnan(x)]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smelt", default=os.path.join(ROOT, "build", "smelt"))
    ap.add_argument("--nvrtc-check", default=os.path.join(ROOT, "build", "nvrtc_check"))
    ap.add_argument("--models", default=os.path.join(ROOT, "build", "bench"))
    ap.add_argument("--only", default="mlp,resnet,mobilenet,transformer,gpt,elementwise_chain")
    ap.add_argument("--targets", default="cc,opencl,cuda")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    smelt = os.path.abspath(a.smelt)
    targets = a.targets.split(",")
    if "cuda" in targets:
        probe = subprocess.run([a.nvrtc_check, os.devnull], capture_output=True, text=True)
        if probe.returncode == 77:
            print("locals: cuda skipped (no libnvrtc)", file=sys.stderr)
            targets.remove("cuda")
    rows, ratios = [], {t: {"src": [], "cpu": [], "run": []} for t in targets}
    for name in a.only.split(","):
        d = os.path.join(a.models, name)
        model = os.path.join(d, "model.onnx")
        if not os.path.exists(model):
            print(f"locals: {name}: no {model} (run make bench first)", file=sys.stderr)
            continue
        for target in targets:
            res = {}
            for s in STRATS:
                if target == "cuda":
                    size, wall, cpu = nvrtc(smelt, model, s, a.nvrtc_check)
                else:
                    size = source_bytes(smelt, model, s, "c" if target == "cc" else "opencl")
                    wall, cpu = cold_compile(smelt, d, s, target)
                res[s] = dict(src=size, wall=wall, cpu=cpu, runs=[])
            if target != "cuda":
                for _ in range(a.rounds):
                    for s in STRATS:
                        out, _, _ = run([smelt, "bench", d, "--runs", str(a.runs), "--threads", "1", "--locals", s]
                                        + device_args(target))
                        res[s]["runs"].append(kv(out, "median_ms"))
            for s in STRATS:
                r = res[s]
                r["run"] = statistics.median(r["runs"]) if r["runs"] else float("nan")
                rows.append(f"| {name} | {target} | {s} | {r['src'] / 1024:.0f} | {r['wall']:.0f} | {r['cpu']:.2f} | "
                            + (f"{r['run']:.2f}" if r["runs"] else "-") + " |")
            for col in ("src", "cpu", "run"):
                ratios[target][col].append(res["reuse"][col] / res["hybrid"][col] if res["hybrid"][col] else float("nan"))
            print(f"locals: {name} {target}: " + ", ".join(
                f"{s} {res[s]['src'] / 1024:.0f} KB, {res[s]['cpu']:.2f} s CPU, run {res[s]['run']:.2f} ms" for s in STRATS),
                file=sys.stderr, flush=True)
    out = ["| model | target | locals | source KB | cold compile ms (wall) | compile CPU s | run ms (1 thread) |",
           "|---|---|---|---|---|---|---|"] + rows
    out += ["", "| target | reuse/hybrid source | reuse/hybrid compile CPU | reuse/hybrid run | favoured |",
            "|---|---|---|---|---|"]
    for t in targets:
        g = {c: geomean(v) for c, v in ratios[t].items()}
        if not math.isnan(g["run"]) and abs(g["run"] - 1) > 0.03:
            pick = "reuse" if g["run"] < 1 else "hybrid"
        else:
            pick = "reuse" if g["cpu"] < 1 else "hybrid"
        out.append(f"| {t} | {g['src']:.3f} | {g['cpu']:.3f} | "
                   + ("-" if math.isnan(g["run"]) else f"{g['run']:.3f}") + f" | {pick} |")
    text = "\n".join(out) + "\n"
    sys.stdout.write(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
