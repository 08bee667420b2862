"""The whole-platform access review on Spark (issue #28): every (subject, operation, resource)
interval over a period of a Gravitino-shaped store's history, written as Parquet.

    python benchmarks/spark_review_bench.py [--tables 10000] [--transactions 10000]
        [--users 1000] [--master local[2]] [--repeat 3] [--data-dir /tmp/grantlog-review-bench]
        [--since REV] [--until REV] [--last N] [--store PATH] [--symmetry auto|on|off]
        [--driver-memory 3g] [--no-write] [--shuffle-partitions 4]

The store is benchmarks/history_world.py's (built once and reused: tables at revision 1, then
the transactions of its mix; ``--users``: the workload's users, 1,000 by default: the review
is every (user, privilege, object) interval, so its rows grow with users x objects). Each run
(in this process, one Spark session): the period read from the store
(engine/answer/periods.py: the facts at ``since`` and the log up to ``until``), the rules
evaluated once on Spark with the intervals carried through the joins
(spark_bridge/review.py), the intervals written as Parquet. Prints the median of ``--repeat``
runs (first run included: the JVM warms up in it), the intervals written, the Spark jobs, the
JVM's CPU time (from /proc: user + system of the driver JVM, where local mode runs the tasks)
and the load average. ``--store PATH``: an existing history_world store (its sidecar
``PATH.world.json`` gives the tables and transactions; never rebuilt); ``--last N``: the
period of the last ``N`` revisions; ``--symmetry``: one representative per class of
interchangeable values (spark_bridge/review_symmetry.py; ``auto``: the review's default);
``--no-write``: the intervals counted, not written. Each step's line (the classes, every
stratum, the write) is printed with its wall time and the JVM's CPU so far. Not a unit
test; figures go to benchmarks/RESULTS.md by hand.
"""

from __future__ import annotations

import argparse
import json
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
    ap.add_argument("--last", type=int, default=None,
                    help="the period of the last N revisions (overrides --since)")
    ap.add_argument("--store", default=None, help="an existing history_world store (SQLite)")
    ap.add_argument("--symmetry", choices=("auto", "on", "off"), default="auto")
    ap.add_argument("--driver-memory", default="3g")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--shuffle-partitions", type=int, default=4)
    a = ap.parse_args()
    os.makedirs(a.data_dir, exist_ok=True)
    t0 = time.perf_counter()
    if a.store:
        side = json.loads(Path(a.store + ".world.json").read_text())
        w = history_world.build(a.store, side["tables"], side["transactions"],
                                seed=side["seed"], every=side["every"],
                                users=side.get("users", 1000))
        assert not w.seconds, "the store was rebuilt"
    else:
        more = "" if a.users == 1000 else f"u{a.users}"
        path = os.path.join(a.data_dir, f"h{a.tables}x{a.transactions}{more}.db")
        w = history_world.build(path, a.tables, a.transactions, seed=1, every=1000,
                                users=a.users)
    print(f"store: {w.tables:,} tables x {w.transactions:,} transactions x {w.users:,} users "
          f"(head {w.head}), ready in {time.perf_counter() - t0:.1f} s", flush=True)
    since = a.since if a.last is None else w.head - a.last + 1
    symmetry = {"auto": None, "on": True, "off": False}[a.symmetry]

    os.environ.setdefault("PYSPARK_SUBMIT_ARGS",
                          f"--driver-memory {a.driver_memory} pyspark-shell")
    from grantlog.engine.answer.periods import period
    from grantlog.spark_bridge import review_cache
    from grantlog.spark_bridge.review import Jobs, intervals, session

    spark = session(a.master)
    spark.conf.set("spark.sql.shuffle.partitions", str(a.shuffle_partitions))
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    program = grantlog.compile(paths=[str(history_world.RULES)])
    cpu = _jvm_cpu(spark)
    times, n = [], 0
    with grantlog.Reasoner(program, store=w.url, follow=False) as r:
        print(f"reasoner open: {time.perf_counter() - t0:.1f} s", flush=True)
        for i in range(a.repeat):
            out = os.path.join(a.data_dir, f"review{i}")
            t = time.perf_counter()
            c = cpu()
            py = time.process_time()

            def say(line: str, t: float = t, c: float = c) -> None:
                print(f"  {time.perf_counter() - t:7.1f} s wall, JVM {cpu() - c:7.1f} s: "
                      f"{line[:300]}", flush=True)

            with Jobs(spark) as j:
                p = period(r, since, a.until)
                say(f"period {p.first}..{p.last} read: "
                    f"{sum(len(v) for s in p.stretches for v in s.facts.values()):,} fact rows")
                caches: list[object] = []
                with review_cache.own_broadcasts(spark):  # as review.review does
                    df = intervals(spark, p, say, symmetry, caches)
                    if a.no_write:
                        n = df.count()
                    else:
                        df.write.mode("overwrite").parquet(out)
                        say("written")
                for kept in caches:
                    review_cache.drop(kept)
                if not a.no_write:
                    n = spark.read.parquet(out).count()
            times.append(time.perf_counter() - t)
            load = os.getloadavg()
            print(f"run {i + 1}: {times[-1]:.1f} s, {n:,} intervals of revisions {p.first} "
                  f"to {p.last}, {j.jobs} Spark jobs ({j.stages} stages), JVM CPU "
                  f"{cpu() - c:.1f} s, driver Python CPU {time.process_time() - py:.1f} s, "
                  f"symmetry {a.symmetry}, load average {load[0]:.1f}", flush=True)
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
