"""The test suite's time (`make test`'s pytest run, CI=true HYPOTHESIS_PROFILE=ci), in one
process: `make test` splits it over two (pytest-xdist), whose wall time is `make test`'s own
report; the CPU seconds per file and per test below are the same either way.

    python benchmarks/suite_time.py                 # the whole suite once: total, 30 slowest
    python benchmarks/suite_time.py --spark-ab -k "spark and (cmp_int or tc_left_linear)" \\
        tests/test_cases.py --runs 3                # the Spark tests' settings against
                                                    # Spark's defaults, alternating runs
    python benchmarks/suite_time.py --cpu tests/test_residual.py   # CPU seconds per file

``--spark-ab`` runs the selection with tests/conftest.py's SPARK_TEST_CONF and with Spark's
defaults (GRANTLOG_TEST_SPARK_DEFAULTS=1), alternating, and prints each run's wall time, the
Spark JVM's CPU seconds (from /proc, read after each test) and the medians. ``--cpu`` runs
the selection (the whole suite by default) and ranks files and tests by CPU seconds: the pytest
process's, its descendants' (servers, the Spark JVM, Chromium; from /proc, reaped ones from
getrusage) and the tests' PostgreSQL server's, measured around each test; and counts each
test's subprocess launches by kind. Quote the load average with the figures: the machine's
other work changes them (CPU seconds least).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: a pytest plugin (written to a temp dir) that records the Spark JVM's CPU seconds
PLUGIN = '''
import os, sys
_jvm = [0.0]
def pytest_runtest_logreport(report):
    ps = sys.modules.get("pyspark")
    sc = ps and ps.SparkContext._active_spark_context
    if report.when != "teardown" or sc is None:
        return
    f = open(f"/proc/{sc._gateway.proc.pid}/stat").read().rsplit(")", 1)[1].split()
    _jvm[0] = (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
def pytest_unconfigure(config):
    with open(os.environ["SUITE_TIME_OUT"], "w") as out:
        out.write(str(_jvm[0]))
'''


#: a pytest plugin recording each test's CPU seconds (see the module's doc) as JSON lines
CPU_PLUGIN = '''
import json, os, resource, subprocess
import pytest
OUT = open(os.environ["SUITE_TIME_OUT"], "a", buffering=1)
TCK, ME, PG, LAUNCHED = os.sysconf("SC_CLK_TCK"), os.getpid(), [None], {}
_init = subprocess.Popen.__init__
def _counting(self, args, *a, **k):
    argv = [str(x) for x in ([args] if isinstance(args, (str, bytes)) else args)]
    kind = ("grantlog " + argv[argv.index("grantlog.cli") + 1] if "grantlog.cli" in argv[:-1]
            else os.path.basename(argv[0]))
    LAUNCHED[kind] = LAUNCHED.get(kind, 0) + 1
    return _init(self, args, *a, **k)
subprocess.Popen.__init__ = _counting
def _cpu():
    parent, cpu = {}, {}
    for d in filter(str.isdigit, os.listdir("/proc")):
        try:
            f = open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parent[int(d)], cpu[int(d)] = int(f[1]), sum(map(int, f[11:15])) / TCK
    def below(root):
        out, todo = 0.0, [root]
        while todo:
            p = todo.pop()
            kids = [c for c, pp in parent.items() if pp == p]
            out += sum(cpu[c] for c in kids)
            todo += kids
        return out
    me, kids = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return (me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime + below(ME)
            + (cpu.get(PG[0], 0.0) + below(PG[0]) if PG[0] else 0.0))
@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef, request):
    yield
    if fixturedef.argname == "pg_server" and fixturedef.cached_result[0] is not None:
        PG[0] = int(open(fixturedef.cached_result[0].data / "postmaster.pid").readline())
@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    (s0, o0), n0 = _cpu(), dict(LAUNCHED)
    yield
    (s1, o1) = _cpu()
    OUT.write(json.dumps({"id": item.nodeid, "pytest": s1 - s0, "others": o1 - o0,
                          "launched": {k: v - n0.get(k, 0) for k, v in LAUNCHED.items()
                                       if v > n0.get(k, 0)}}) + "\\n")
'''


def per_file(selection: list[str], top: int = 30) -> None:
    """The selection's CPU seconds by file and by test (``CPU_PLUGIN``)."""
    import json
    from collections import Counter, defaultdict

    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "suite_time_cpu.py").write_text(CPU_PLUGIN)
        out = Path(tmp, "tests.jsonl")
        env = {**os.environ, "CI": "true", "HYPOTHESIS_PROFILE": "ci", "PYTHONPATH": tmp,
               "SUITE_TIME_OUT": str(out)}
        load, t0 = os.getloadavg()[0], time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                               "-p", "suite_time_cpu", *selection], cwd=ROOT, env=env,
                              capture_output=True, text=True, check=False)
        wall = time.perf_counter() - t0
        print(done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr)
        tests = [json.loads(line) for line in out.read_text().splitlines()]
    files: dict[str, Counter[str]] = defaultdict(Counter)
    for t in tests:
        f = files[t["id"].split("::")[0]]
        f.update({"tests": 1, "pytest": t["pytest"], "others": t["others"], **t["launched"]})
    cpu = {name: c["pytest"] + c["others"] for name, c in files.items()}
    print(f"{'file':48} {'tests':>5} {'CPU s':>7} {'pytest':>7} {'others':>7}  launched")
    for name in sorted(cpu, key=cpu.__getitem__, reverse=True)[:top]:
        c = files[name]
        launched = ", ".join(f"{k} x{v}" for k, v in c.items()
                             if k not in ("tests", "pytest", "others"))
        print(f"{name:48} {c['tests']:5} {cpu[name]:7.1f} {c['pytest']:7.1f} "
              f"{c['others']:7.1f}  {launched}")
    print(f"\n{'CPU s':>7}  test")
    for t in sorted(tests, key=lambda t: -(t["pytest"] + t["others"]))[:top]:
        print(f"{t['pytest'] + t['others']:7.1f}  {t['id']}")
    print(f"\n{len(tests)} tests, CPU {sum(cpu.values()):.0f} s, wall {wall / 60:.1f} min, "
          f"load average {load:.1f} at start, {os.getloadavg()[0]:.1f} at the end")


def _pytest(args: list[str], env: dict[str, str]) -> tuple[float, str]:
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          check=False)
    wall = time.perf_counter() - t0
    if done.returncode not in (0, 5):
        sys.exit(done.stdout[-3000:] + done.stderr[-3000:])
    return wall, done.stdout


def spark_ab(selection: list[str], runs: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "suite_time_plugin.py").write_text(PLUGIN)
        out = Path(tmp, "jvm.txt")
        base = {**os.environ, "CI": "true", "HYPOTHESIS_PROFILE": "ci",
                "PYTHONPATH": tmp, "SUITE_TIME_OUT": str(out)}
        got: dict[str, list[tuple[float, float]]] = {"tests' settings": [], "defaults": []}
        for _ in range(runs):
            for name, extra in (("defaults", {"GRANTLOG_TEST_SPARK_DEFAULTS": "1"}),
                                ("tests' settings", {})):
                wall, _ = _pytest(["-p", "suite_time_plugin", *selection], {**base, **extra})
                jvm = float(out.read_text() or 0)
                got[name].append((wall, jvm))
                print(f"{name:16} wall {wall:6.1f} s  JVM CPU {jvm:6.1f} s  load "
                      f"{os.getloadavg()[0]:.1f}", flush=True)
        for name, xs in got.items():
            print(f"median {name:16} wall {statistics.median(w for w, _ in xs):6.1f} s  "
                  f"JVM CPU {statistics.median(j for _, j in xs):6.1f} s")


def whole(extra: list[str]) -> None:
    env = {**os.environ, "CI": "true", "HYPOTHESIS_PROFILE": "ci"}
    load = os.getloadavg()[0]
    wall, out = _pytest(["--durations=30", *extra], env)
    slow = re.search(r"=+ slowest 30 durations =+\n(.*?)\n(?:=|\n)", out, re.S)
    print(slow.group(1) if slow else "")
    print(out.strip().splitlines()[-1])
    print(f"wall {wall / 60:.1f} min, load average {load:.1f} at start, "
          f"{os.getloadavg()[0]:.1f} at the end")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spark-ab", action="store_true",
                    help="compare the Spark tests' settings with Spark's defaults")
    ap.add_argument("--cpu", action="store_true",
                    help="CPU seconds per file and per test (servers and the JVM included)")
    ap.add_argument("--runs", type=int, default=3)
    args, rest = ap.parse_known_args()
    if args.cpu:
        per_file(rest)
    elif args.spark_ab:
        spark_ab(rest or ["tests/test_cases.py", "-k", "spark"], args.runs)
    else:
        whole(rest)


if __name__ == "__main__":
    main()
