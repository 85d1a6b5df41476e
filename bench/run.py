#!/usr/bin/env python3
"""Benchmark smelt against onnxruntime on the models of bench/models.py; print one table.

    .venv/bin/python bench/run.py [--smelt build/smelt] [--models build/bench] [--threads 1,2]
                                  [--runs 10] [--rounds 5] [--only NAME,...]
                                  [--memcpy build/bench/memcpy] [--out FILE]

For every model:
  1. correctness: `smelt run --input ... --output-dir` on the model's test input, compared with
     onnxruntime's output for the same input (np.allclose, rtol 1e-3, atol 1e-4: float32 sums in
     another order differ by ~1e-6 near zero). A wrong answer prints WRONG and is not timed.
  2. memory: `smelt info` (weights, planned arena, lower bound, unplanned sum).
  3. for each thread count T, in R interleaved rounds (--rounds, default 5): `smelt bench DIR
     --threads T --runs N` (median/min/max, peak RSS, cold and cached compile), then onnxruntime
     in this process (one InferenceSession with intra_op_num_threads=T, 2 warm-up runs, then N
     timed runs per round, same input); for elementwise_chain and elementwise_dag also `smelt --no-fuse`
     and a plain memcpy moving the same bytes as reading each input and writing each output once
     (bench/memcpy.c) in the same rounds. A cell is the median of the
     rounds' medians (min and max over all runs); smelt/ort is the median of the rounds' ratios,
     so a burst of load on this machine moves one round, not one side of a ratio.
     onnxruntime's peak RSS and its RSS growth during runs come from a child process
     (/proc/self/status VmHWM / VmRSS).
Where smelt is slower at 1 thread, `smelt bench --profile` names the kernels that cost most.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RTOL, ATOL = 1e-3, 1e-4


def load_pb(path):
    import onnx
    from onnx import numpy_helper
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return t.name, numpy_helper.to_array(t)


def model_inputs(model_dir):
    ds = os.path.join(model_dir, "test_data_set_0")
    files = sorted(f for f in os.listdir(ds) if f.startswith("input_"))
    return [(load_pb(os.path.join(ds, f)), os.path.join(ds, f)) for f in files]


def ort_session(model_path, threads):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    return ort.InferenceSession(model_path, so, providers=["CPUExecutionProvider"])


def proc_status(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])  # kB
    return 0


def ort_rss_child(model_dir, threads, runs):
    """In a child process: RSS before the first run, and the high-water mark after `runs` runs."""
    feeds = {name: arr for (name, arr), _ in model_inputs(model_dir)}
    sess = ort_session(os.path.join(model_dir, "model.onnx"), threads)
    before = proc_status("VmRSS")
    for _ in range(runs):
        sess.run(None, feeds)
    print(f"rss_before_kb: {before}\npeak_rss_kb: {proc_status('VmHWM')}")


def parse_kv(text):
    out = {}
    for line in text.splitlines():
        m = re.match(r"^([a-z_]+):\s+(\S+)", line)
        if m:
            try:
                out[m.group(1)] = float(m.group(2))
            except ValueError:
                pass
    return out


def run(cmd, timeout=600):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {r.returncode}: {r.stderr.strip()[-500:]}")
    return r.stdout


def smelt_info(smelt, model_path):
    text = run([smelt, "info", model_path])
    num = lambda key: int(re.search(rf"^{key}:\s+(\d+)", text, re.M).group(1))  # noqa: E731
    return {"weights": num("weights"), "arena": num("arena"), "lower_bound": num("lower bound"),
            "unplanned": num("unplanned"), "kernels": num("kernels")}


def check(smelt, model_dir, ref, extra):
    """smelt's outputs on the test input against onnxruntime's: (ok, max abs error, message)."""
    with tempfile.TemporaryDirectory(prefix="smelt-bench-") as out:
        cmd = [smelt, "run", os.path.join(model_dir, "model.onnx"), "--output-dir", out] + extra
        for (name, _), path in model_inputs(model_dir):
            cmd += ["--input", f"{name}={path}"]
        try:
            run(cmd)
        except RuntimeError as e:
            return False, float("nan"), str(e)
        err = 0.0
        for name, want in ref.items():
            path = os.path.join(out, re.sub(r"[^A-Za-z0-9_.-]", "_", name) + ".npy")
            if not os.path.exists(path):
                return False, float("nan"), f"no output {name}"
            got = np.load(path)
            if got.shape != want.shape:
                return False, float("nan"), f"{name}: shape {got.shape}, expected {want.shape}"
            err = max(err, float(np.max(np.abs(got.astype(np.float64) - want))) if want.size else 0.0)
            if not np.allclose(got, want, rtol=RTOL, atol=ATOL):
                return False, err, f"{name}: max abs error {err:.3g}"
    return True, err, ""


def ort_time(sess, feeds, runs):
    t = []
    for _ in range(runs):
        s = time.perf_counter()
        sess.run(None, feeds)
        t.append((time.perf_counter() - s) * 1e3)
    return statistics.median(t), min(t), max(t)


def summary(rounds):
    """(median of the rounds' medians, min, max) of [(median, min, max), ...]."""
    return statistics.median(r[0] for r in rounds), min(r[1] for r in rounds), max(r[2] for r in rounds)


def mb(kb_or_bytes, unit_kb=False):
    v = kb_or_bytes * 1024 if unit_kb else kb_or_bytes
    return f"{v / 2**20:.1f}"


def ms(med, lo, hi):
    return f"{med:.2f} ({lo:.2f}–{hi:.2f})"


def profile_top(smelt, model_dir, n=3):
    text = run([smelt, "bench", model_dir, "--threads", "1", "--runs", "5", "--profile"])
    lines = text.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("profile:"))
    return lines[start:start + 2 + n]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smelt", default=os.path.join(ROOT, "build", "smelt"))
    ap.add_argument("--models", default=os.path.join(ROOT, "build", "bench"))
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--runs", type=int, default=10, help="timed runs per round")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", default="")
    ap.add_argument("--memcpy", default=os.path.join(ROOT, "build", "bench", "memcpy"))
    ap.add_argument("--out", default="")
    ap.add_argument("--ort-rss", nargs=3, metavar=("DIR", "THREADS", "RUNS"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.ort_rss:
        ort_rss_child(a.ort_rss[0], int(a.ort_rss[1]), int(a.ort_rss[2]))
        return 0
    sys.path.insert(0, HERE)
    from models import MODELS
    names = [n for n, _ in MODELS if not a.only or n in a.only.split(",")]
    threads = [int(t) for t in a.threads.split(",")]
    smelt = os.path.abspath(a.smelt)

    rows, mem_rows, notes, slower = [], [], [], []
    for name in names:
        d = os.path.join(a.models, name)
        mpath = os.path.join(d, "model.onnx")
        feeds = {n: arr for (n, arr), _ in model_inputs(d)}
        ref_sess = ort_session(mpath, max(threads))
        ref = {o.name: v for o, v in zip(ref_sess.get_outputs(), ref_sess.run(None, feeds))}
        del ref_sess
        memory_bound = name in ("elementwise_chain", "elementwise_dag")
        variants = [("", [])] + ([(" --no-fuse", ["--no-fuse"])] if memory_bound else [])
        info = smelt_info(smelt, mpath)
        mem_rows.append((name, info))
        good = {}
        for label, extra in variants:
            ok, err, why = check(smelt, d, ref, extra)
            good[label] = (ok, err)
            print(f"bench: {name}{label}: {'ok' if ok else 'WRONG'} (max abs error {err:.2g}) {why}",
                  file=sys.stderr, flush=True)
        # memcpy's n bytes read n and write n: the same traffic as reading every input once
        # and writing every output once (elementwise_dag: 2 inputs + 2 outputs of 16 MiB)
        moved = sum(v.nbytes for v in feeds.values()) + sum(v.nbytes for v in ref.values())
        nbytes = moved // 2 if memory_bound else 0
        copy = nbytes and os.path.exists(a.memcpy)
        pending = {label: [] for label, _ in variants + [("memcpy", [])]}  # rows, label by label
        for t in threads:
            sess = ort_session(mpath, t)
            ort_time(sess, feeds, 2)  # warm-up
            smelt_rounds = {label: [] for label, _ in variants}
            last = {}
            ort_rounds, ratios, copy_rounds = [], [], []
            for _ in range(a.rounds):
                for label, extra in variants:
                    if not good[label][0]:
                        continue
                    s = parse_kv(run([smelt, "bench", d, "--threads", str(t), "--runs", str(a.runs)] + extra))
                    smelt_rounds[label].append((s["median_ms"], s["min_ms"], s["max_ms"]))
                    last[label] = s
                o = ort_time(sess, feeds, a.runs)
                ort_rounds.append(o)
                if good[""][0]:
                    ratios.append(smelt_rounds[""][-1][0] / o[0])
                if copy:
                    c = parse_kv(run([a.memcpy, str(nbytes), str(t), str(a.runs)]))
                    copy_rounds.append((c["median_ms"], c["min_ms"], c["max_ms"]))
            del sess
            for label, extra in variants:
                ok, err = good[label]
                if not ok:
                    pending[label].append([name + label, str(t), "WRONG", "", "", "", "", "", "", "", ""])
                    continue
                s = last[label]
                if label:
                    pending[label].append([name + label, str(t), ms(*summary(smelt_rounds[label])), "", "",
                                 mb(s["peak_rss_kb"], True), "", "", "", "", ""])
                    continue
                r = parse_kv(run([sys.executable, os.path.abspath(__file__), "--ort-rss", d, str(t), "3"]))
                ratio = statistics.median(ratios)
                if t == 1 and ratio > 1.0:
                    slower.append(name)
                pending[label].append([name, str(t), ms(*summary(smelt_rounds[label])), ms(*summary(ort_rounds)),
                             f"{ratio:.2f}", mb(s["peak_rss_kb"], True), mb(r["peak_rss_kb"], True),
                             f"{s['compile_cold_ms']:.0f} / {s['compile_cached_ms']:.0f}", mb(info["arena"]),
                             mb(r["peak_rss_kb"] - r["rss_before_kb"], True), f"{err:.1g}"])
                print(f"bench: {name} T={t}: smelt {summary(smelt_rounds[label])[0]:.2f} ms, "
                      f"ort {summary(ort_rounds)[0]:.2f} ms", file=sys.stderr, flush=True)
            if copy:
                pending["memcpy"].append([f"memcpy {nbytes >> 20} MiB", str(t), ms(*summary(copy_rounds)),
                                          "", "", "", "", "", "", "", ""])
        for label in pending:
            rows += pending[label]
    for name in slower:
        notes.append(f"{name}: smelt bench --profile --threads 1 (top kernels)")
        notes += ["    " + l for l in profile_top(smelt, os.path.join(a.models, name))]

    head = ["model", "T", "smelt ms median (min–max)", "ort ms median (min–max)", "smelt/ort",
            "smelt peak RSS MB", "ort peak RSS MB", "smelt compile cold / cached ms",
            "smelt arena MB", "ort RSS growth in run MB", "max abs err"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    out += ["", "| model | weights MB | smelt arena MB | lower bound MB | arena / lower bound | unplanned MB | kernels |",
            "|---|---|---|---|---|---|---|"]
    for name, i in mem_rows:
        out.append(f"| {name} | {mb(i['weights'])} | {mb(i['arena'])} | {mb(i['lower_bound'])} | "
                   f"{i['arena'] / max(i['lower_bound'], 1):.2f} | {mb(i['unplanned'])} | {i['kernels']} |")
    if notes:
        out += ["", "```"] + notes + ["```"]
    text = "\n".join(out) + "\n"
    sys.stdout.write(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
