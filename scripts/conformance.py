#!/usr/bin/env python3
"""Run `smelt check` on the ONNX backend node tests and report per-op results.

Run with the project venv (scripts/venv.sh):

    .venv/bin/python scripts/conformance.py [--filter SUBSTR] [--jobs N] [--extra=--no-fuse]

The tests are the ~1765 node tests shipped inside the installed onnx package
(onnx/backend/test/data/node/<test>/{model.onnx,test_data_set_*/}). Each is checked by its own
`smelt check` process, `--jobs` at a time, each with a wall-clock timeout. Outcomes:

    PASS     smelt check exited 0
    FAIL     exit 1: outputs did not match the reference
    ERROR    exit 2 (unsupported op, bad model, ...) or a crash
    TIMEOUT  still running after --timeout seconds (its process group is killed)
    SKIP     listed in tests/conformance/skipped.txt; not run unless --run-skipped

Files:
    build/conformance/results.txt     one line per test: `name STATUS reason`
    build/conformance/per_op.txt      the per-op table (next to --results)
    tests/conformance/must_pass.txt   tests that must pass (one name a line, # comments);
                                      any of them not passing makes this script exit 1
    tests/conformance/skipped.txt     tests of supported ops expected to fail: `name  reason`
    $SMELT_NODE_TESTS                 the node test folder to use instead of the installed onnx's
    --tests-dir DIR (repeatable)      other folders of tests in the same layout, e.g. Debian's
                                      libonnx-testdata (/usr/share/libonnx-testdata/data/node,
                                      .../pytorch-converted, .../pytorch-operator: older onnx
                                      releases, opsets down to 1); test names must not repeat
    --must-pass FILE, --skipped FILE  other lists for such a set (default: the two above)

`--update-must-pass` rewrites must_pass.txt to the tests passing now (with --filter, only the
entries inside the filter change). The smelt compile cache ($SMELT_CACHE_DIR or smelt's default)
is left alone so repeated runs are fast; `--cold-cache` runs against a fresh empty one.

The last lines printed are the overall pass rate and the must-pass verdict:
    overall: P/T passed (R%), F failed, E error, O timeout, S skipped
    must-pass: N passed, M failed
Exit status: 0 when every must-pass test passed, 1 otherwise, 2 on a usage or setup error.
"""
import argparse
import collections
import concurrent.futures
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MUST_PASS = os.path.join(ROOT, "tests", "conformance", "must_pass.txt")
SKIPPED = os.path.join(ROOT, "tests", "conformance", "skipped.txt")
MUST_PASS_HEADER = """\
# Backend node tests that must pass: scripts/conformance.py exits 1 if any of these does not.
# One test name per line. Regenerate with
#   .venv/bin/python scripts/conformance.py {args}--update-must-pass
# after making more tests pass (review the diff: a test leaving this list is a regression).
"""


def node_tests_dir():
    # A machine whose onnx ships no node data (newer releases) can point at a copy of it.
    if os.environ.get("SMELT_NODE_TESTS"):
        return os.environ["SMELT_NODE_TESTS"]
    try:
        import onnx
    except ImportError:
        sys.exit("conformance: cannot import onnx; run with the venv python (scripts/venv.sh)")
    d = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "node")
    if not os.path.isdir(d):
        sys.exit(f"conformance: {d} not found; onnx {onnx.__version__} does not ship node test "
                 "data (scripts/venv.sh pins onnx==1.22.0)")
    return d


def read_list(path):
    """Lines of a list file as (name, rest) pairs, comments and blanks dropped."""
    entries = []
    if not os.path.exists(path):
        return entries
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                name, _, rest = line.partition(" ")
                entries.append((name, rest.strip()))
    return entries


EXPANDED = re.compile(r"_expanded(_ver\d+)?$")


def op_types(where, names):
    """Map test name -> op type: the first non-Constant node of its model (`where` maps each test
    name to its folder). An `_expanded` test (the op written as a function body) counts under the
    op of the test it expands."""
    import onnx
    ops = {}

    def first_op(name):
        if name not in ops:
            try:
                model = onnx.load(os.path.join(where[name], name, "model.onnx"),
                                  load_external_data=False)
                nodes = [n.op_type for n in model.graph.node if n.op_type != "Constant"]
                ops[name] = nodes[0] if nodes else "Constant"
            except Exception:  # an unreadable model is smelt's problem; label it by name
                ops[name] = "?"
        return ops[name]

    result = {}
    for name in names:
        base = EXPANDED.sub("", name)
        if base != name and base in where:
            result[name] = first_op(base)
        else:
            result[name] = first_op(name)
    return result


def one_line(text, limit=300):
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def run_check(smelt, test_dir, extra, timeout, env, deadline=None, retry_crashes=False):
    """Run one `smelt check`; return (status, reason). With retry_crashes, a run killed by a
    signal is run once more and, if it passes then, reported as PASS with the crash named in
    the reason (a third-party OpenCL platform crashing intermittently must not hide whether
    smelt is right, nor fail CI at random; the crash stays visible in the results)."""
    status, reason = run_check_once(smelt, test_dir, extra, timeout, env, deadline)
    if retry_crashes and status == "ERROR" and reason.startswith("crashed"):
        again, why = run_check_once(smelt, test_dir, extra, timeout, env, deadline)
        if again == "PASS":
            return "PASS", f"{why} (first run {reason})"
        return again, why
    return status, reason


def run_check_once(smelt, test_dir, extra, timeout, env, deadline=None):
    """Run one `smelt check`; return (status, reason)."""
    if deadline is not None and time.monotonic() > deadline:
        return "TIMEOUT", "not run: --budget used up"
    cmd = [smelt, "check", test_dir] + extra
    try:
        # A session of its own, so a timeout also kills the system compilers smelt started.
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                errors="replace", start_new_session=True, env=env)
    except OSError as e:
        return "ERROR", f"cannot run {smelt}: {e}"
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.communicate()
        return "TIMEOUT", f"still running after {timeout:g} s"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    rc = proc.returncode
    # Lines look like `test_data_set_0: PASS max_abs_err=...`; the reason drops the status word.
    lines = [l.split() for l in out.splitlines() if l.strip()]
    bad = [l for l in lines if l[1:2] != ["PASS"]]
    if rc == 0:
        return "PASS", " ".join(lines[0][2:]) if lines else ""
    if bad:
        words = bad[0]
        reason = " ".join(words[:1] + words[2:] if words[1:2] in (["FAIL"], ["ERROR"]) else words)
    else:
        reason = (err.strip().splitlines() or [""])[-1]
    if rc == 1:
        return "FAIL", one_line(reason) or "exit 1"
    if rc == 2:
        return "ERROR", one_line(reason) or "exit 2"
    if rc < 0:
        try:
            sig = signal.Signals(-rc).name
        except ValueError:
            sig = f"signal {-rc}"
        tail = (err.strip().splitlines() or [""])[-1]
        return "ERROR", one_line(f"crashed ({sig}) {tail}")
    return "ERROR", one_line(f"exit {rc}: {reason}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--smelt", default=os.path.join(ROOT, "build", "smelt"),
                    help="the smelt tool (default: build/smelt)")
    ap.add_argument("--filter", default="", help="run only tests whose name contains SUBSTR")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                    help="checks run at once (default: os.cpu_count())")
    ap.add_argument("--extra", default="",
                    help="arguments for smelt check, e.g. --extra=--no-fuse (note the =)")
    ap.add_argument("--timeout", type=float, default=60, help="seconds per test (default 60)")
    ap.add_argument("--budget", type=float, default=0,
                    help="seconds for the whole run: tests not started by then are recorded as "
                         "TIMEOUT (default: no limit)")
    ap.add_argument("--results", default=os.path.relpath(
                        os.path.join(ROOT, "build", "conformance", "results.txt")),
                    help="results file; per_op.txt is written next to it "
                         "(default: build/conformance/results.txt)")
    ap.add_argument("--update-must-pass", action="store_true",
                    help="rewrite the must-pass list (--must-pass) to the passing tests")
    ap.add_argument("--run-skipped", action="store_true",
                    help="also run the tests in skipped.txt (and list those that pass now)")
    ap.add_argument("--cold-cache", action="store_true",
                    help="point SMELT_CACHE_DIR at a fresh empty directory for this run")
    ap.add_argument("--retry-crashes", action="store_true",
                    help="run a test killed by a signal once more (reported in its reason)")
    ap.add_argument("--must-pass-only", action="store_true",
                    help="run only the tests in must_pass.txt (e.g. for a slower device)")
    ap.add_argument("--tests-dir", action="append", default=[],
                    help="a folder of tests (model.onnx + test_data_set_*) to run instead of the "
                         "installed onnx's node tests; repeatable")
    ap.add_argument("--must-pass", default=MUST_PASS,
                    help="the must-pass list (default: tests/conformance/must_pass.txt)")
    ap.add_argument("--skipped", default=SKIPPED,
                    help="the skipped list (default: tests/conformance/skipped.txt)")
    ap.add_argument("--quiet", action="store_true",
                    help="no per-op table; only must-pass failures and the totals")
    args = ap.parse_args()

    smelt = os.path.abspath(args.smelt)
    if not (os.path.isfile(smelt) and os.access(smelt, os.X_OK)):
        print(f"conformance: {args.smelt} is not an executable (run `make` first)", file=sys.stderr)
        return 2
    # Test name -> the folder holding it.
    where = {}
    for d in args.tests_dir or [node_tests_dir()]:
        if not os.path.isdir(d):
            print(f"conformance: {d} is not a folder", file=sys.stderr)
            return 2
        for n in os.listdir(d):
            if not os.path.isfile(os.path.join(d, n, "model.onnx")):
                continue
            if n in where:
                print(f"conformance: test {n} is in both {where[n]} and {d}", file=sys.stderr)
                return 2
            where[n] = d
    all_tests = sorted(where)
    tests = [n for n in all_tests if args.filter in n]
    if not tests:
        print(f"conformance: no test matches '{args.filter}'", file=sys.stderr)
        return 2

    must_pass = [n for n, _ in read_list(args.must_pass)]
    skipped = dict(read_list(args.skipped))
    both = sorted(set(must_pass) & set(skipped))
    if both:
        print("conformance: in both must_pass.txt and skipped.txt: " + " ".join(both),
              file=sys.stderr)
        return 2
    unknown = sorted(set(must_pass) - set(all_tests))
    for n in unknown:
        print(f"conformance: must_pass.txt names {n}, which is not a node test here",
              file=sys.stderr)

    env = dict(os.environ)
    cold_dir = None
    if args.cold_cache:
        cold_dir = tempfile.mkdtemp(prefix="smelt-cache-")
        env["SMELT_CACHE_DIR"] = cold_dir
    extra = shlex.split(args.extra)
    jobs = max(1, args.jobs)

    to_run = [n for n in tests if args.run_skipped or n not in skipped]
    if args.must_pass_only:
        to_run = [n for n in to_run if n in set(must_pass)]
    results = {n: ("SKIP", skipped.get(n, "not in must_pass.txt (--must-pass-only)")) for n in tests
               if n not in to_run}
    print(f"conformance: {len(to_run)} tests, {jobs} jobs, timeout {args.timeout:g} s, "
          f"smelt {args.smelt}{' ' + args.extra if args.extra else ''}", flush=True)
    start = time.monotonic()
    deadline = start + args.budget if args.budget > 0 else None
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
            # Threads only wait on their `smelt check` processes: jobs processes run at once.
            futures = {pool.submit(run_check, smelt, os.path.join(where[n], n), extra,
                                   args.timeout, env, deadline, args.retry_crashes): n for n in to_run}
            done = 0
            for fut in concurrent.futures.as_completed(futures):
                results[futures[fut]] = fut.result()
                done += 1
                if not args.quiet and sys.stdout.isatty():
                    print(f"\r{done}/{len(to_run)}", end="", flush=True)
    finally:
        if cold_dir:
            shutil.rmtree(cold_dir, ignore_errors=True)
    if not args.quiet and sys.stdout.isatty():
        print()
    elapsed = time.monotonic() - start

    os.makedirs(os.path.dirname(os.path.abspath(args.results)), exist_ok=True)
    with open(args.results, "w") as f:
        for n in tests:
            status, reason = results[n]
            f.write(f"{n} {status} {reason}".rstrip() + "\n")

    ops = op_types(where, tests)
    statuses = ("PASS", "FAIL", "ERROR", "TIMEOUT", "SKIP")
    per_op = collections.defaultdict(collections.Counter)
    for n in tests:
        per_op[ops[n]][results[n][0]] += 1
    width = max(len(op) for op in per_op)
    table = [f"{'op':<{width}}  {'tests':>5}  " + "  ".join(f"{s.lower():>7}" for s in statuses)]
    for op in sorted(per_op, key=str.lower):
        c = per_op[op]
        table.append(f"{op:<{width}}  {sum(c.values()):>5}  " +
                     "  ".join(f"{c[s]:>7}" for s in statuses))
    full = sum(1 for c in per_op.values() if c["PASS"] == sum(c.values()))
    table.append(f"ops: {full}/{len(per_op)} with every test passing")
    per_op_file = os.path.join(os.path.dirname(args.results), "per_op.txt")
    with open(per_op_file, "w") as f:
        f.write("\n".join(table) + "\n")
    if not args.quiet:
        print("\n".join(table))

    if args.run_skipped:
        fixed = [n for n in tests if n in skipped and results[n][0] == "PASS"]
        for n in fixed:
            print(f"passes now, remove from skipped.txt: {n}")

    wanted = [n for n in must_pass if args.filter in n]
    mp_failed = [n for n in wanted if results.get(n, ("MISSING",))[0] != "PASS"]
    for n in mp_failed:
        status, reason = results.get(n, ("MISSING", "not a node test in this onnx version"))
        print(f"must-pass {status}: {n} {reason}".rstrip())

    if args.update_must_pass:
        keep = [n for n in must_pass if args.filter not in n]
        now = [n for n in tests if results[n][0] == "PASS" and n not in skipped]
        new = sorted(set(keep) | set(now))
        lost = sorted(set(wanted) - set(now))
        with open(args.must_pass, "w") as f:
            sets = "".join(f"--tests-dir {d} " for d in args.tests_dir)
            lists = "" if args.must_pass == MUST_PASS else \
                f"--must-pass {os.path.relpath(args.must_pass, ROOT)} --skipped {args.skipped} "
            f.write(MUST_PASS_HEADER.format(args=sets + lists))
            f.writelines(n + "\n" for n in new)
        print(f"must_pass.txt: {len(new)} tests ({len(set(new) - set(must_pass))} added, "
              f"{len(lost)} removed)")

    total = collections.Counter(r[0] for r in results.values())
    rate = 100.0 * total["PASS"] / len(tests)
    print(f"results: {args.results}, per op: {per_op_file} ({elapsed:.0f} s)")
    print(f"overall: {total['PASS']}/{len(tests)} passed ({rate:.1f}%), {total['FAIL']} failed, "
          f"{total['ERROR']} error, {total['TIMEOUT']} timeout, {total['SKIP']} skipped")
    print(f"must-pass: {len(wanted) - len(mp_failed)} passed, {len(mp_failed)} failed")
    return 0 if args.update_must_pass or not mp_failed else 1


if __name__ == "__main__":
    sys.exit(main())
