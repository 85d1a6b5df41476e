"""IREE's CPU backend (llvm-cpu) as a third column of bench/run.py.

IREE comes from PyPI (iree-base-compiler, iree-base-runtime), installed by scripts/bench.sh with
`pip install --target BUILD/iree-py --no-deps` so that the shared venv is left as it is; this module
appends that directory to sys.path (after the venv's numpy). Where the packages did not install,
`available()` says why and the column is left out.

A model is imported with iree-import-onnx and compiled once with
    iree-compile --iree-hal-target-device=local --iree-hal-local-target-device-backends=llvm-cpu
                 --iree-llvmcpu-target-cpu=host
into MODEL_DIR/iree/model-KEY.vmfb (KEY: a hash of the model, the flags and IREE's version); a
failure is cached as model-KEY.fail with IREE's message, so the next bench does not retry it.
It is run in a child process per thread count (IREE's task topology is a process-wide flag:
--task_topology_max_group_count=T), which answers "time N" lines with "median min max" in ms.
"""
import hashlib
import os
import statistics
import subprocess
import sys
import time

FLAGS = ["--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=llvm-cpu",
         "--iree-llvmcpu-target-cpu=host"]


def _version(iree_dir):
    for f in os.listdir(iree_dir):
        if f.startswith("iree_base_compiler-") and f.endswith(".dist-info"):
            return f[len("iree_base_compiler-"):-len(".dist-info")]
    return None


def available(iree_dir):
    """(True, version) or (False, why)."""
    if not iree_dir or not os.path.isdir(iree_dir):
        return False, f"no IREE packages in {iree_dir} (pip install iree-base-compiler iree-base-runtime failed)"
    v = _version(iree_dir)
    for tool in ("iree-import-onnx", "iree-compile"):
        if not os.path.exists(os.path.join(iree_dir, "bin", tool)):
            return False, f"{iree_dir}/bin/{tool} missing"
    return (True, v) if v else (False, f"no iree_base_compiler dist-info in {iree_dir}")


def _env(iree_dir):
    env = dict(os.environ)
    env["PYTHONPATH"] = iree_dir + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def compile_model(iree_dir, model_dir, timeout=600):
    """(vmfb path, None, seconds) or (None, why, seconds); cached per model, flags and version."""
    model = os.path.join(model_dir, "model.onnx")
    h = hashlib.sha256()
    with open(model, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    h.update(("|".join(FLAGS) + "|" + str(_version(iree_dir))).encode())
    key = h.hexdigest()[:16]
    out = os.path.join(model_dir, "iree")
    vmfb, fail = os.path.join(out, f"model-{key}.vmfb"), os.path.join(out, f"model-{key}.fail")
    if os.path.exists(vmfb):
        return vmfb, None, 0.0
    if os.path.exists(fail):
        return None, open(fail).read().strip(), 0.0
    os.makedirs(out, exist_ok=True)
    mlir = os.path.join(out, "model.mlir")
    t0 = time.time()
    why = None
    bin_dir = os.path.join(iree_dir, "bin")
    for cmd in ([sys.executable, os.path.join(bin_dir, "iree-import-onnx"), model, "-o", mlir],
                [os.path.join(bin_dir, "iree-compile")] + FLAGS + [mlir, "-o", vmfb + ".tmp"]):
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=_env(iree_dir))
        except subprocess.TimeoutExpired:
            why = f"{os.path.basename(cmd[1] if cmd[0] == sys.executable else cmd[0])}: over {timeout} s"
            break
        if r.returncode != 0:
            lines = [x for x in (r.stderr or r.stdout).splitlines() if "error" in x.lower()] or \
                (r.stderr or r.stdout).splitlines() or ["exit %d" % r.returncode]
            why = lines[0].strip()[:200]
            break
    if os.path.exists(mlir):
        os.remove(mlir)
    if why:
        with open(fail, "w") as f:
            f.write(why + "\n")
        return None, why, time.time() - t0
    os.replace(vmfb + ".tmp", vmfb)
    return vmfb, None, time.time() - t0


class Worker:
    """A child process that holds the compiled module at T threads."""

    def __init__(self, iree_dir, vmfb, model_dir, threads, out_npz):
        self.p = subprocess.Popen([sys.executable, os.path.abspath(__file__), iree_dir, vmfb, model_dir,
                                   str(threads), out_npz], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        line = self.p.stdout.readline().strip()
        if line != "ready":
            err = self.p.stderr.read().strip().splitlines()
            self.p.wait()
            raise RuntimeError((err[-1] if err else line or "IREE worker died")[:200])

    def time(self, runs):
        self.p.stdin.write(f"time {runs}\n")
        self.p.stdin.flush()
        med, lo, hi = map(float, self.p.stdout.readline().split())
        return med, lo, hi

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def _worker(iree_dir, vmfb, model_dir, threads, out_npz):
    sys.path.append(iree_dir)
    import numpy as np
    import iree.runtime as rt
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from run import model_inputs
    rt.flags.parse_flags(f"--task_topology_max_group_count={threads}")
    cfg = rt.Config("local-task")
    ctx = rt.SystemContext(config=cfg)
    mod = rt.VmModule.mmap(cfg.vm_instance, vmfb)
    ctx.add_vm_module(mod)
    fn = ctx.modules[mod.name][next(n for n in mod.function_names if not n.startswith("__") and "$" not in n)]
    xs = [arr for (_, arr), _ in model_inputs(model_dir)]

    def call():
        ys = fn(*xs)
        ys = ys if isinstance(ys, (tuple, list)) else [ys]
        return [np.asarray(y.to_host() if hasattr(y, "to_host") else y) for y in ys]
    ys = call()
    np.savez(out_npz, *ys)
    call()  # warm-up
    print("ready", flush=True)
    for line in sys.stdin:
        n = int(line.split()[1])
        t = []
        for _ in range(n):
            s = time.perf_counter()
            call()
            t.append((time.perf_counter() - s) * 1e3)
        print(f"{statistics.median(t)} {min(t)} {max(t)}", flush=True)


if __name__ == "__main__":
    _worker(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5])
