#!/usr/bin/env python3
"""Where a cold compile's time goes, and what the cached start-up costs (issue 17: ResNet-18 at 224
cold <= 3 s, cached <= 20 ms).

    .venv/bin/python scripts/compile_time.py [DIR] [--jobs 1,2] [--opt -O3,-O2] [--rounds 3]

DIR (default build/bench/resnet18_224, written by `make bench`) is a model test directory. Measured:
  ours     `smelt compile DIR --emit c`: import, graph passes, fusion, lowering, emission (no compiler);
           wall and CPU seconds, and the source's size
  cold     `smelt bench DIR --runs 1` with an empty SMELT_CACHE_DIR, for each SMELT_CC_JOBS (translation
           units compiled at once) and SMELT_CC_OPT (-O level): smelt's compile_cold_ms (wall) and the CPU
           seconds of smelt and every compiler it ran (getrusage of the children; on a shared machine the
           wall time moves with the load, the CPU time much less)
  cached   compile_cached_ms of the same `smelt bench` (a second compile in that process, the model already
           loaded: graph passes to a loaded program), and the wall time of a whole
           `smelt run MODEL --input ...` process against the filled cache (load, compile, one run, write),
           with its parts as `smelt run -v` prints them (model load, compile, first run; medians)
  run      `smelt bench DIR --threads 1` median per -O level, in interleaved rounds (median of rounds)
"""
import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def child_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(cmd, env=None, stderr=None):
    c0, t0 = child_cpu(), time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1200)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr.strip()[-300:]}")
    if stderr is not None:
        stderr.append(r.stderr)
    return r.stdout, time.perf_counter() - t0, child_cpu() - c0


def kv(text, key):
    m = re.search(rf"^{key}:\s+([0-9.]+)", text, re.M)
    return float(m.group(1)) if m else float("nan")


def input_name(path):
    import onnx
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return t.name


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", nargs="?", default=os.path.join(ROOT, "build", "bench", "resnet18_224"))
    ap.add_argument("--smelt", default=os.path.join(ROOT, "build", "smelt"))
    ap.add_argument("--jobs", default=f"1,{os.cpu_count()}")
    ap.add_argument("--opt", default="-O3,-O2")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=10)
    a = ap.parse_args()
    smelt = os.path.abspath(a.smelt)
    with tempfile.NamedTemporaryFile(suffix=".c") as f:
        _, wall, cpu = run([smelt, "compile", a.dir, "--emit", "c", "-o", f.name])
        print(f"ours: smelt compile --emit c: {wall * 1e3:.0f} ms wall, {cpu:.2f} s CPU, "
              f"{os.path.getsize(f.name) / 1024:.0f} KB of C")
    print("| SMELT_CC_OPT | SMELT_CC_JOBS | cold compile ms (wall) | cold CPU s (smelt + cc) | "
          "cached compile ms | cached process wall ms | its model load / compile / first run ms |")
    print("|---|---|---|---|---|---|---|")
    for opt in a.opt.split(","):
        for jobs in a.jobs.split(","):
            with tempfile.TemporaryDirectory(prefix="smelt-ct-") as cache:
                env = dict(os.environ, SMELT_CACHE_DIR=cache, SMELT_CC_JOBS=jobs, SMELT_CC_OPT=opt)
                # smelt bench compiles cold in an empty cache of its own, then again from it
                out, _, cpu = run([smelt, "bench", a.dir, "--runs", "1", "--threads", "1"], env)
                cold, cached = kv(out, "compile_cold_ms"), [kv(out, "compile_cached_ms")]
                walls, parts = [], []
                ds = os.path.join(a.dir, "test_data_set_0")
                inputs = [x for f in sorted(os.listdir(ds)) if f.startswith("input_")
                          for x in ("--input", f"{input_name(os.path.join(ds, f))}={os.path.join(ds, f)}")]
                for i in range(6):
                    err = []
                    with tempfile.TemporaryDirectory(prefix="smelt-ct-out-") as outd:
                        _, wall2, _ = run([smelt, "run", os.path.join(a.dir, "model.onnx"), "--threads", "1", "-v",
                                           "--output-dir", outd] + inputs, env, err)
                    m = re.search(r"model load ([0-9.]+) ms, compile ([0-9.]+) ms, first run ([0-9.]+) ms", err[0])
                    if i:  # the first fills the cache
                        walls.append(wall2 * 1e3)
                        if m:
                            parts.append([float(x) for x in m.groups()])
            split = " / ".join(f"{statistics.median(p[k] for p in parts):.0f}" for k in range(3)) if parts else "-"
            print(f"| {opt} | {jobs} | {cold:.0f} | {cpu:.2f} | {statistics.median(cached):.1f} | "
                  f"{statistics.median(walls):.0f} | {split} |", flush=True)
    opts = a.opt.split(",")
    if len(opts) > 1:
        with tempfile.TemporaryDirectory(prefix="smelt-ct-") as cache:
            res = {o: [] for o in opts}
            for _ in range(a.rounds):
                for o in opts:
                    env = dict(os.environ, SMELT_CACHE_DIR=cache, SMELT_CC_OPT=o)
                    out, _, _ = run([smelt, "bench", a.dir, "--runs", str(a.runs), "--threads", "1"], env)
                    res[o].append(kv(out, "median_ms"))
        base = statistics.median(res[opts[0]])
        print("run time, 1 thread: " + ", ".join(
            f"{o} {statistics.median(v):.2f} ms ({statistics.median(v) / base:.2f}x)" for o, v in res.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
