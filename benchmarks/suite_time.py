"""The test suite's time (`make test`'s pytest run, CI=true HYPOTHESIS_PROFILE=ci).

    python benchmarks/suite_time.py                 # the whole suite once: total, 30 slowest
    python benchmarks/suite_time.py --spark-ab -k "spark and (cmp_int or tc_left_linear)" \\
        tests/test_cases.py --runs 3                # the Spark tests' settings against
                                                    # Spark's defaults, alternating runs

``--spark-ab`` runs the selection with tests/conftest.py's SPARK_TEST_CONF and with Spark's
defaults (GRANTLOG_TEST_SPARK_DEFAULTS=1), alternating, and prints each run's wall time, the
Spark JVM's CPU seconds (from /proc, read after each test) and the medians. Quote the load
average with the figures: the machine's other work changes them.
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
    ap.add_argument("--runs", type=int, default=3)
    args, rest = ap.parse_known_args()
    if args.spark_ab:
        spark_ab(rest or ["tests/test_cases.py", "-k", "spark"], args.runs)
    else:
        whole(rest)


if __name__ == "__main__":
    main()
