"""Spark without a goal on the Gravitino example (issue 26, item 7): how long
``grantlog spark run --rules rules/gravitino.gl -f examples/gravitino/facts.gl -r allowed
--with-reasons`` takes once the session is up.

    python benchmarks/spark_goalless_bench.py [--repeat 3] [--local-rows 20000]
        [--master local[2]] [--driver-memory 4g]

One Spark session (its start is reported apart); then ``--repeat`` times: the program
restricted to ``allowed``'s cone (what ``-r allowed`` evaluates), ``spark_bridge.run`` with
reasons and ``local_rows`` (``--local-rows 0``: every stratum on Spark, the path before the
small-input one; minutes on a loaded machine), the decision rows written as Parquet. Prints
each run, the median and the load average before and after. Not a unit test.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--local-rows", type=int, default=20_000)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--driver-memory", default="4g")
    args = ap.parse_args(argv)
    from grantlog.engine.compile.restrict import restrict

    import grantlog
    from grantlog import spark_bridge as sb

    load0 = os.getloadavg()
    t0 = time.perf_counter()
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master(args.master)
             .config("spark.driver.memory", args.driver_memory)
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    print(f"session {args.master} ready: {time.perf_counter() - t0:.1f} s", flush=True)
    times = []
    for k in range(args.repeat):
        t1 = time.perf_counter()
        program = grantlog.compile(paths=[str(ROOT / "rules" / "gravitino.gl"),
                                          str(ROOT / "examples" / "gravitino" / "facts.gl")])
        part = restrict(program, ["allowed"])
        res = sb.run(part, spark, with_reasons=True, local_rows=args.local_rows)
        with tempfile.TemporaryDirectory() as out:
            res.relations["allowed"].write.parquet(str(Path(out) / "allowed"))
            n = spark.read.parquet(str(Path(out) / "allowed")).count()
        times.append(time.perf_counter() - t1)
        strategies = sorted({s.strategy for s in res.strata})
        print(f"run {k + 1}: {times[-1]:.2f} s, {n} decision rows, strata: "
              f"{', '.join(strategies)}", flush=True)
    load1 = os.getloadavg()
    print(f"median {statistics.median(times):.2f} s over {len(times)} runs "
          f"(local_rows={args.local_rows}); load average before "
          f"{load0[0]:.1f}/{load0[1]:.1f}, after {load1[0]:.1f}/{load1[1]:.1f}")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
