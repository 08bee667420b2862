"""The whole-platform access review on Spark (issue #28): every (subject, operation, resource)
interval over a period of a Gravitino-shaped store's history, written as Parquet.

    python benchmarks/spark_review_bench.py [--tables 10000] [--transactions 10000]
        [--users 1000] [--master local[2]] [--repeat 3] [--data-dir /tmp/grantlog-review-bench]
        [--since REV] [--until REV]

The store is benchmarks/history_world.py's (built once and reused: tables at revision 1, then
the transactions of its mix; ``--users``: the workload's users, 1,000 by default: the review
is every (user, privilege, object) interval, so its rows grow with users x objects). Each run
(in this process, one Spark session): the period read from the store
(engine/answer/periods.py: the facts at ``since`` and the log up to ``until``), the rules
evaluated once on Spark with the intervals carried through the joins
(spark_bridge/review.py), the intervals written as Parquet. Prints the median of ``--repeat``
runs (first run included: the JVM warms up in it), the intervals written, the Spark jobs, the
JVM's CPU time (from /proc: user + system of the driver JVM, where local mode runs the tasks)
and the load average. Not a unit test; figures go to benchmarks/RESULTS.md by hand.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import history_world

import grantlog


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tables", type=int, default=10_000)
    ap.add_argument("--transactions", type=int, default=10_000)
    ap.add_argument("--users", type=int, default=1000)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--data-dir", default=os.path.join(tempfile.gettempdir(),
                                                       "grantlog-review-bench"))
    ap.add_argument("--since", type=int, default=None)
    ap.add_argument("--until", type=int, default=None)
    a = ap.parse_args()
    os.makedirs(a.data_dir, exist_ok=True)
    more = "" if a.users == 1000 else f"u{a.users}"
    path = os.path.join(a.data_dir, f"h{a.tables}x{a.transactions}{more}.db")
    t0 = time.perf_counter()
    w = history_world.build(path, a.tables, a.transactions, seed=1, every=1000, users=a.users)
    print(f"store: {a.tables:,} tables x {a.transactions:,} transactions x {a.users:,} users "
          f"(head {w.head}), "
          f"ready in {time.perf_counter() - t0:.1f} s", flush=True)

    from grantlog.spark_bridge.review import Jobs, review, session

    spark = session(a.master)
    spark.conf.set("spark.sql.shuffle.partitions", "4")
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    program = grantlog.compile(paths=[str(history_world.RULES)])
    cpu = _jvm_cpu(spark)
    times, n = [], 0
    with grantlog.Reasoner(program, store=w.url, follow=False) as r:
        for i in range(a.repeat):
            out = os.path.join(a.data_dir, f"review{i}")
            t = time.perf_counter()
            c = cpu()
            with Jobs(spark) as j:
                p, n = review(r, spark, out, a.since, a.until)
            times.append(time.perf_counter() - t)
            load = os.getloadavg()
            print(f"run {i + 1}: {times[-1]:.1f} s, {n:,} intervals of revisions {p.first} "
                  f"to {p.last}, {j.jobs} Spark jobs ({j.stages} stages), JVM CPU "
                  f"{cpu() - c:.1f} s, load average {load[0]:.1f}", flush=True)
    load = os.getloadavg()
    print(f"median {statistics.median(times):.1f} s over {a.repeat} runs ({a.master}); "
          f"{n:,} intervals; {j.jobs} Spark jobs; "
          f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    spark.stop()


def _jvm_cpu(spark: object) -> object:
    """A function returning the driver JVM's CPU seconds so far (user + system, /proc)."""
    pid = spark._jvm.java.lang.ProcessHandle.current().pid()  # type: ignore[attr-defined]
    tick = os.sysconf("SC_CLK_TCK")

    def cpu() -> float:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / tick

    return cpu


if __name__ == "__main__":
    main()
