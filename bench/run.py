#!/usr/bin/env python3
"""Benchmark smelt against onnxruntime (and IREE's CPU backend) on the bench models; print one table.

    .venv/bin/python bench/run.py [--smelt build/smelt] [--models build/bench] [--threads 1,2]
                                  [--sets small,full,real] [--real build/realmodels] [--iree DIR]
                                  [--runs 10] [--rounds 5] [--only NAME,...]
                                  [--memcpy build/bench/memcpy] [--out FILE]

Sets (see entries()): small = bench/models.py, full = bench/fullsize.py (PyTorch exports),
real = the corpus of scripts/realmodels.py (checked with each model's own tolerances). N, the timed
runs per round, is --runs or fewer for a slow model (about a second per side per round, at least 3).
With --iree, a column for IREE llvm-cpu (bench/ireecol.py), checked like smelt and timed in the same
rounds. Under the tables: the geometric mean of smelt/ort over the full-size and real models.

For every model:
  1. correctness: `smelt run --input ... --output-dir` on the model's test input, compared with
     onnxruntime's output for the same input (np.allclose, rtol 1e-3, atol 1e-4: float32 sums in
     another order differ by ~1e-6 near zero). A wrong answer prints WRONG and is not timed.
  2. memory: `smelt info` (weights, planned arena, lower bound, unplanned sum).
  3. for each thread count T, in R interleaved rounds (--rounds, default 5): `smelt bench DIR
     --threads T --runs N` (median/min/max, peak RSS; the model's first call also compiles cold in an
     empty cache and reports it, the others pass --no-cold), then onnxruntime
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
    so.log_severity_level = 3  # ddddocr's declared output shape is wrong; ort warns on every run
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


def smelt_info(smelt, model_path, feeds):
    """`smelt info` at the test input's shapes (a model with symbolic dims needs them)."""
    shapes = [x for n, a in feeds.items() if a.ndim
              for x in ("--shape", f"{n}={'x'.join(str(d) for d in a.shape)}")]
    text = run([smelt, "info", model_path] + shapes)
    num = lambda key: int(re.search(rf"^{key}:\s+(\d+)", text, re.M).group(1))  # noqa: E731
    return {"weights": num("weights"), "arena": num("arena"), "lower_bound": num("lower bound"),
            "unplanned": num("unplanned"), "kernels": num("kernels")}


def check(smelt, model_dir, ref, extra, rtol=RTOL, atol=ATOL):
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
            if not np.allclose(got, want, rtol=rtol, atol=atol):
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
    text = run([smelt, "bench", model_dir, "--threads", "1", "--runs", "5", "--profile", "--no-cold"])
    lines = text.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("profile:"))
    return lines[start:start + 2 + n]


# Memory-bound models: timed with --no-fuse too, and against a memcpy of the bytes they must move.
MEMORY_BOUND = ("elementwise_chain", "elementwise_dag")


def entries(a):
    """The models to bench, one dict each: name, dir, set, rtol/atol, extra variants. Adding a model
    is one entry in the list of its set: bench/models.py MODELS (small, built with onnx.helper),
    bench/fullsize.py NAMES (exported from PyTorch) or scripts/realmodels.py MODELS (from wheels)."""
    sys.path.insert(0, HERE)
    out = []
    sets = a.sets.split(",")
    if "small" in sets:
        from models import MODELS
        for n, _ in MODELS:
            out.append(dict(name=n, dir=os.path.join(a.models, n), set="small", rtol=RTOL, atol=ATOL,
                            variants=[(" --no-fuse", ["--no-fuse"])] if n in MEMORY_BOUND else []))
    if "full" in sets:
        from fullsize import NAMES
        for n in NAMES:
            out.append(dict(name=n, dir=os.path.join(a.models, n), set="full", rtol=RTOL, atol=ATOL, variants=[]))
    if "real" in sets:
        sys.path.insert(0, os.path.join(ROOT, "scripts"))
        import realmodels
        for m in realmodels.MODELS:
            d = os.path.join(a.real, m["name"])
            if os.path.exists(os.path.join(d, "spec.sha256")):
                out.append(dict(name=m["name"], dir=d, set="real", rtol=m["rtol"], atol=m["atol"], variants=[]))
    only = set(a.only.split(",")) if a.only else None
    return [e for e in out if (not only or e["name"] in only) and os.path.exists(os.path.join(e["dir"], "model.onnx"))]


def round_runs(sess, feeds, runs):
    """Timed runs per round: --runs, fewer for a slow model, so that one side of a round takes about a
    second (at least 3)."""
    t = ort_time(sess, feeds, 1)[0]
    return max(3, min(runs, int(1000.0 / max(t, 1e-3))))


def bench_model(e, a, smelt, threads, iree):
    """Check and time one model; returns (rows, memory info, ratio per thread count, profile wanted)."""
    import ireecol
    name, d = e["name"], e["dir"]
    mpath = os.path.join(d, "model.onnx")
    feeds = {n: arr for (n, arr), _ in model_inputs(d)}
    ref_sess = ort_session(mpath, max(threads))
    ref = {o.name: v for o, v in zip(ref_sess.get_outputs(), ref_sess.run(None, feeds))}
    del ref_sess
    variants = [("", [])] + e["variants"]
    try:
        info = smelt_info(smelt, mpath, feeds)
    except RuntimeError as ex:  # info compiles from shapes alone; a model whose branches need values fails
        print(f"bench: {name}: no memory row: {str(ex)[-200:]}", file=sys.stderr, flush=True)
        info = None
    good = {}
    for label, extra in variants:
        ok, err, why = check(smelt, d, ref, extra, e["rtol"], e["atol"])
        good[label] = (ok, err)
        print(f"bench: {name}{label}: {'ok' if ok else 'WRONG'} (max abs error {err:.2g}) {why}",
              file=sys.stderr, flush=True)
    vmfb = iree_why = None
    if iree:
        vmfb, iree_why, secs = ireecol.compile_model(a.iree, d)
        if secs:
            print(f"bench: {name}: IREE compile {secs:.1f} s{': ' + iree_why if iree_why else ''}",
                  file=sys.stderr, flush=True)
    # memcpy's n bytes read n and write n: the same traffic as reading every input once
    # and writing every output once (elementwise_dag: 2 inputs + 2 outputs of 16 MiB)
    moved = sum(v.nbytes for v in feeds.values()) + sum(v.nbytes for v in ref.values())
    nbytes = moved // 2 if name in MEMORY_BOUND else 0
    copy = nbytes and os.path.exists(a.memcpy)
    pending = {label: [] for label, _ in variants + [("memcpy", [])]}  # rows, label by label
    ratios_by_t, compiled = {}, {}
    blank = [""] * (len(HEAD) - 3)
    for t in threads:
        # onnxruntime's session lives only for its own side of each round: its intra-op threads spin
        # after a run (its default, kept for its timing), and a session held across smelt's side
        # took a core from smelt's second thread (mlp at 2 threads: smelt 3.1-3.8 ms with an idle
        # 2-thread session in this process, 1.95-2.2 without)
        sess = ort_session(mpath, t)
        runs = round_runs(sess, feeds, a.runs)
        del sess
        worker, iree_cell = None, (iree_why and "fails: " + iree_why)
        if vmfb:
            with tempfile.TemporaryDirectory(prefix="smelt-bench-iree-") as tmp:
                try:
                    worker = ireecol.Worker(a.iree, vmfb, d, t, os.path.join(tmp, "out.npz"))
                    got = np.load(os.path.join(tmp, "out.npz"))
                    got = [got[f"arr_{i}"] for i in range(len(got.files))]
                    bad = [n for (n, want), g in zip(ref.items(), got)
                           if g.shape != want.shape or not np.allclose(g, want, rtol=e["rtol"], atol=e["atol"])]
                    if bad or len(got) != len(ref):
                        iree_cell = "WRONG"
                        worker.close()
                        worker = None
                except RuntimeError as ex:
                    iree_cell, worker = "fails: " + str(ex), None
        smelt_rounds = {label: [] for label, _ in variants}
        last = {}
        ort_rounds, ratios, copy_rounds, iree_rounds = [], [], [], []
        for _ in range(a.rounds):
            for label, extra in variants:
                if not good[label][0]:
                    continue
                # one cold compile per model (in an empty cache of smelt's own); the other calls
                # compile from the usual cache
                cold = [] if not label and "compile_cold_ms" not in compiled else ["--no-cold"]
                s = parse_kv(run([smelt, "bench", d, "--threads", str(t), "--runs", str(runs)] + extra + cold))
                if not cold:
                    compiled.update(s)
                smelt_rounds[label].append((s["median_ms"], s["min_ms"], s["max_ms"]))
                last[label] = s
            sess = ort_session(mpath, t)
            ort_time(sess, feeds, 2)  # warm-up
            o = ort_time(sess, feeds, runs)
            del sess
            ort_rounds.append(o)
            if good[""][0]:
                ratios.append(smelt_rounds[""][-1][0] / o[0])
            if worker:
                iree_rounds.append(worker.time(runs))
            if copy:
                c = parse_kv(run([a.memcpy, str(nbytes), str(t), str(runs)]))
                copy_rounds.append((c["median_ms"], c["min_ms"], c["max_ms"]))
        if worker:
            worker.close()
            iree_cell = ms(*summary(iree_rounds))
        for label, extra in variants:
            ok, err = good[label]
            if not ok:
                pending[label].append([name + label, str(t), "WRONG"] + blank)
                continue
            s = last[label]
            if label:
                row = [name + label, str(t), ms(*summary(smelt_rounds[label]))] + blank
                row[HEAD.index("smelt peak RSS MB")] = mb(s["peak_rss_kb"], True)
                pending[label].append(row)
                continue
            r = parse_kv(run([sys.executable, os.path.abspath(__file__), "--ort-rss", d, str(t), "3"]))
            ratio = statistics.median(ratios)
            ratios_by_t[t] = ratio
            row = [name, str(t), ms(*summary(smelt_rounds[label])), ms(*summary(ort_rounds)),
                   f"{ratio:.2f}", mb(s["peak_rss_kb"], True), mb(r["peak_rss_kb"], True),
                   f"{compiled['compile_cold_ms']:.0f} / {compiled['compile_cached_ms']:.0f}",
                   mb(info["arena"]) if info else "-",
                   mb(r["peak_rss_kb"] - r["rss_before_kb"], True), f"{err:.1g}"]
            if iree:
                row.append(iree_cell or "")
            pending[label].append(row)
            print(f"bench: {name} T={t}: smelt {summary(smelt_rounds[label])[0]:.2f} ms, "
                  f"ort {summary(ort_rounds)[0]:.2f} ms" + (f", IREE {iree_cell}" if iree else ""),
                  file=sys.stderr, flush=True)
        if copy:
            pending["memcpy"].append([f"memcpy {nbytes >> 20} MiB", str(t), ms(*summary(copy_rounds))] + blank)
    rows = [r + ([""] if iree and len(r) < len(HEAD) + 1 else []) for label in pending for r in pending[label]]
    return rows, info, ratios_by_t, ratios_by_t.get(1, 0) > 1.0


HEAD = ["model", "T", "smelt ms median (min–max)", "ort ms median (min–max)", "smelt/ort",
        "smelt peak RSS MB", "ort peak RSS MB", "smelt compile cold / cached ms",
        "smelt arena MB", "ort RSS growth in run MB", "max abs err"]


def geomean(xs):
    return float(np.exp(np.mean(np.log(xs)))) if xs else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smelt", default=os.path.join(ROOT, "build", "smelt"))
    ap.add_argument("--models", default=os.path.join(ROOT, "build", "bench"))
    ap.add_argument("--real", default=os.path.join(ROOT, "build", "realmodels"),
                    help="the real-model corpus' test directories (scripts/realmodels.py fetch)")
    ap.add_argument("--sets", default="small,full", help="comma list of small, full, real")
    ap.add_argument("--iree", default="", help="directory of the IREE packages (pip --target); none: no column")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--runs", type=int, default=10, help="timed runs per round (fewer for a slow model)")
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
    import ireecol
    iree = False
    if a.iree:
        iree, why = ireecol.available(a.iree)
        print(f"bench: IREE {why if iree else 'column left out: ' + why}", file=sys.stderr, flush=True)
    threads = [int(t) for t in a.threads.split(",")]
    smelt = os.path.abspath(a.smelt)
    t0 = time.time()

    rows, mem_rows, notes, slower, headline = [], [], [], [], {t: [] for t in threads}
    for e in entries(a):
        r, info, ratios, slow = bench_model(e, a, smelt, threads, iree)
        rows += r
        mem_rows.append((e["name"], info))
        if slow:
            slower.append(e)
        if e["set"] in ("full", "real"):
            for t, v in ratios.items():
                headline[t].append(v)
    for e in slower:
        notes.append(f"{e['name']}: smelt bench --profile --threads 1 (top kernels)")
        notes += ["    " + l for l in profile_top(smelt, e["dir"])]

    head = HEAD + (["IREE llvm-cpu ms median (min–max)"] if iree else [])
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    if any(headline.values()):
        out += ["", "Geometric mean of smelt/ort over the full-size and real models (issue 17 target <= 0.8): "
                + ", ".join(f"{len(v)} models at {t} thread{'s' if t > 1 else ''}: {geomean(v):.2f}"
                            for t, v in headline.items() if v)]
    out += ["", "| model | weights MB | smelt arena MB | lower bound MB | arena / lower bound | unplanned MB | kernels |",
            "|---|---|---|---|---|---|---|"]
    for name, i in mem_rows:
        if not i:
            out.append(f"| {name} | - | - | - | - | - | - |")
            continue
        out.append(f"| {name} | {mb(i['weights'])} | {mb(i['arena'])} | {mb(i['lower_bound'])} | "
                   f"{i['arena'] / max(i['lower_bound'], 1):.2f} | {mb(i['unplanned'])} | {i['kernels']} |")
    if notes:
        out += ["", "```"] + notes + ["```"]
    out += ["", f"bench: {time.time() - t0:.0f} s"]
    text = "\n".join(out) + "\n"
    sys.stdout.write(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
