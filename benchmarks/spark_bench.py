"""Spark backend on a Gravitino-shaped workload: hierarchy closure and load_table decisions.

    python benchmarks/spark_bench.py [--tables N] [--master local[*]] [--closure auto]
                                     [--check-memory]

Generates the workload of benchmarks/gravitino_workload.py (metalake > catalogs > schemas >
tables, users, groups, roles, ~20k grants), feeds its base facts to rules/gravitino.gl as
DataFrames, and reports the time of each stratum (the ``ancestor`` closure first), the total,
and the number of ``allowed(_, load_table, _)`` rows. ``--check-memory`` also evaluates the
decision relation with the in-memory engine and compares (small sizes only). Not a unit test:
timings depend on the machine.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gravitino_workload as gw
from grantlog.rules import model_path

import grantlog


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tables", type=int, default=2_000)
    ap.add_argument("--master", default="local[*]")
    ap.add_argument("--closure", default="auto")
    ap.add_argument("--check-memory", action="store_true")
    args = ap.parse_args(argv)

    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from grantlog import spark_bridge as sb

    w = gw.generate(args.tables)
    path = model_path("gravitino")
    assert path is not None
    program = grantlog.compile(paths=[path])
    spark = (SparkSession.builder.master(args.master).appName("grantlog-spark-bench")
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    inputs = {}
    for rel, rows in w.facts.items():
        cols = program.relations[rel].columns
        inputs[rel] = spark.createDataFrame(
            [tuple(r) for r in rows], ", ".join(f"`{c}` string" for c in cols))
    print(f"{args.tables} tables, {sum(len(r) for r in w.facts.values())} base facts")
    t0 = time.perf_counter()
    res = sb.run(program, spark, inputs, closure=args.closure, progress=print)
    allowed = res.relations[program.decision]
    op = allowed.columns[1]
    n_load = allowed.filter(F.col(op) == "load_table").count()
    total = time.perf_counter() - t0
    closure_s = next((r.seconds for r in res.strata if "ancestor" in r.relations), None)
    print(f"ancestor closure: {closure_s:.1f} s" if closure_s is not None else "no closure")
    print(f"allowed(_, load_table, _): {n_load} rows; total {total:.1f} s")
    if args.check_memory:
        facts = "\n".join(f"{rel}({', '.join(map(grantlog_show, row))})."
                          for rel, rows in w.facts.items() for row in rows)
        mem = grantlog.Reasoner(grantlog.compile(facts, paths=[path]))
        got = sb.collect(res.relations, [program.decision])[program.decision]
        same = got == mem.rows(program.decision)
        print(f"in-memory engine agrees: {same}")
        return 0 if same else 1
    return 0


def grantlog_show(v: str | int) -> str:
    from grantlog.spark_bridge.encoding import show

    return show(v)


if __name__ == "__main__":
    sys.exit(main())
