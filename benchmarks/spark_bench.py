"""Spark backend on the Gravitino-shaped workload: one catalog's load_table decisions, all users.

    python benchmarks/spark_bench.py [--sizes 100000,1000000,5000000] [--catalog m1.cat000|all]
        [--driver-memory 8g] [--memory-limit-gb 10] [--repeat 1] [--no-memory] [--no-write]
        [--data-dir DIR] [--timeout S] [--memory-timeout S] [--master local[2]]
        [--partitions 16]

For each size, in fresh subprocesses, one after the other (never two big ones at once):

1. **generate** benchmarks/gravitino_workload.py's facts (seed 1) as CSV files, one per base
   relation (kept in ``--data-dir`` and reused);
2. **spark**: ``grantlog spark``'s Python API on ``local[2]``: the CSV files as inputs
   (``read_inputs``), rules/gravitino.gl compiled once, and the goal
   ``allowed(U, load_table, T)`` where ``catalog_of(T, "<catalog>")``: the program rewritten for
   that goal (engine/plan/magic.py), the ``ancestor`` closure in full by path doubling, the answers
   written as Parquet. Timed: the whole evaluation (inputs read and counted, every stratum,
   the answers written), the closure stratum on its own; iterations per recursive stratum; peak
   RSS of the JVM (driver memory capped by ``--driver-memory``) and of Python;
3. **memory**: the in-memory engine in the same run, under an address-space limit of
   ``--memory-limit-gb``: the same rewritten program evaluated bottom-up by
   ``grantlog.Reasoner`` (base facts inserted in one transaction, then the answer relation
   read); ``--memory-mode query`` instead asks the original program goal-directed
   (``Reasoner.query('catalog_of(T, "<catalog>"), allowed(U, load_table, T)')``, the
   application path: about 0.25 ms per (user, table) decision here, so hours at 1M tables).
   When it runs out of memory or time (``--memory-timeout``, default 30 min), that is
   reported.

Both sides' answers are compared by (row count, sum of a hash of each row). The default
catalog ``m1.cat000`` holds the workload's big schema (10,000 tables) and its share of the rest;
``--catalog all`` asks for every user × table (the goal with no ``where``).
Writes the "Spark" section of benchmarks/RESULTS.md (``--no-write``: print only). Not a unit
test: timings depend on the machine; the load average is reported with them.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness import HERE, RESULTS, git_state, replace_marked

BEGIN, END = "<!-- spark_bench -->", "<!-- /spark_bench -->"
GOAL = "allowed(U, load_table, T)"
#: the folders whose uncommitted changes the results mention
CODE = ("engine", "spark_bridge", "rules")


def loadavg() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def where_of(catalog: str) -> str | None:
    """the goal's condition: one catalog's tables, or none (``all``: every table)"""
    return None if catalog == "all" else f'catalog_of(T, "{catalog}")'


def row_hash(row: Sequence[str]) -> int:
    return int(hashlib.sha1("\x00".join(row).encode()).hexdigest()[:8], 16)


# ---------------------------------------------------------------------------------------------
# workers (each in its own process)


def work_generate(n: int, out: Path) -> dict[str, Any]:
    sys.path.insert(0, str(HERE))
    import gravitino_workload as gw

    t0 = time.perf_counter()
    w = gw.generate(n)
    out.mkdir(parents=True, exist_ok=True)
    from grantlog.rules import model_path

    import grantlog

    path = model_path("gravitino")
    assert path is not None
    program = grantlog.compile(paths=[path])
    for rel, rows in w.facts.items():
        with open(out / f"{rel}.csv", "w", newline="", encoding="utf-8") as f:
            wr = csv.writer(f)
            wr.writerow(program.relations[rel].columns)
            wr.writerows(rows)
    per_catalog: dict[str, int] = {}
    for t in w.tables:
        c = w.parent[w.parent[t]]
        per_catalog[c] = per_catalog.get(c, 0) + 1
    meta = {"n": n, "summary": gw.summary(w), "base_facts": w.n_base_facts,
            "counts": w.counts(), "catalog_tables": per_catalog,
            "generate_s": time.perf_counter() - t0}
    (out / "meta.json").write_text(json.dumps(meta, indent=1), encoding="utf-8")
    return meta


def _child_pids() -> list[int]:
    me = os.getpid()
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == me:
                out.append(int(d.name))
    return out


def _cpu_s(pid: int) -> float:
    """user + system CPU seconds of a process so far (the JVM's: the machine is shared, so
    wall time alone says little)"""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _children_cpu() -> float:
    """user + system CPU seconds of the children that ended and were waited for"""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _hwm_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def session(args: argparse.Namespace, data: Path, name: str) -> Any:
    """The benchmarks' Spark session: ``--master``, driver memory capped by
    ``--driver-memory``, ``--partitions`` shuffle partitions, UI off, scratch under ``data``."""
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master(args.master).appName(name)
             .config("spark.driver.memory", args.driver_memory)
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", str(args.partitions))
             .config("spark.local.dir", str(data / "spark-local"))
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def work_spark(args: argparse.Namespace, data: Path, catalog: str) -> dict[str, Any]:
    from grantlog.rules import model_path
    from pyspark.sql import functions as F

    import grantlog
    from grantlog import spark_bridge as sb

    path = model_path("gravitino")
    assert path is not None
    program = grantlog.compile(paths=[path])
    t0 = time.perf_counter()
    spark = session(args, data, "grantlog-spark-bench")
    spark.sparkContext.setCheckpointDir(str(data / "checkpoints"))
    session_s = time.perf_counter() - t0
    lines: list[str] = []

    def say(line: str) -> None:
        cpu = sum(_cpu_s(p) for p in _child_pids()) - jvm_cpu0
        py = time.process_time() - py_cpu0  # the driver's Python
        stamp = f"{time.perf_counter() - t1:8.1f} s {cpu:8.1f} s CPU {py:7.1f} s py  {line}"
        lines.append(stamp)
        print(stamp, file=sys.stderr, flush=True)

    jvm_cpu0 = sum(_cpu_s(p) for p in _child_pids())
    t1 = time.perf_counter()
    py_cpu0, kids_cpu0 = time.process_time(), _children_cpu()
    specs = {p.stem: {"path": str(p), "format": "csv"} for p in sorted(data.glob("*.csv"))}
    inputs = sb.read_inputs(spark, program, specs)
    res = sb.run(program, spark, inputs, goal=GOAL, where=where_of(catalog),
                 progress=say, driver_rows=args.driver_rows,
                 symmetry={"auto": None, "on": True, "off": False}[args.symmetry],
                 exceptions={"auto": None, "on": True, "off": False}[args.exceptions])
    out = data / "spark-answers"
    res.relations["allowed"].write.mode("overwrite").parquet(str(out))
    total_s = time.perf_counter() - t1
    jvm_cpu_s = sum(_cpu_s(p) for p in _child_pids()) - jvm_cpu0
    # the driver's Python (small strata run there, spark_bridge/local.py), with the second
    # process that decides rewrite 2's corrections beside them (reaped: spark_bridge/singles.py)
    py_cpu_s = time.process_time() - py_cpu0 + _children_cpu() - kids_cpu0
    ans = spark.read.parquet(str(out))
    key = F.concat_ws("\u0000", *[F.col(c) for c in ans.columns])
    h = F.conv(F.substring(F.sha1(key), 1, 8), 16, 10).cast("long")
    agg = ans.agg(F.count(F.lit(1)).alias("n"), F.sum(h).alias("h")).collect()[0]
    jvm_kib = max((_hwm_kib(p) for p in _child_pids()), default=0)
    d = res.demand
    assert d is not None
    strata = [{"relations": list(s.relations), "strategy": s.strategy,
               "iterations": s.iterations, "rows": s.rows, "seconds": round(s.seconds, 2)}
              for s in res.strata]
    closure = next((s for s in res.strata if s.relations == ("ancestor",)), None)
    largest = max(res.strata, key=lambda s: s.rows or 0)
    spark.stop()
    return {
        "session_s": session_s, "total_s": total_s, "jvm_cpu_s": jvm_cpu_s,
        "py_cpu_s": py_cpu_s,
        "closure_s": closure.seconds if closure else None,
        "closure_iterations": closure.iterations if closure else None,
        "closure_rows": closure.rows if closure else None,
        "closure_strategy": closure.strategy if closure else None,
        "recursive": [s for s, r in zip(strata, res.strata, strict=True)
                      if r.strategy in ("doubling", "graphframes", "semi-naive")],
        "strata": len(res.strata),
        "checkpointed": sum(1 for s in res.strata if s.rows is not None),
        "rules": len(d.program.rules), "original_rules": len(program.rules),
        "relations": len(d.program.relations), "magic": len(d.magic), "cut": d.cut,
        "answers": int(agg["n"]), "hash": int(agg["h"] or 0),
        "largest_stratum": "/".join(largest.relations), "largest_rows": largest.rows or 0,
        "symmetry": next((p for p in res.plans if p.startswith("symmetry:")), None),
        "exceptions": next((p for p in res.plans if p.startswith("exceptions:")), None),
        "jvm_peak_mib": jvm_kib / 1024,
        "python_peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "log": lines,
    }


def work_memory(args: argparse.Namespace, data: Path, catalog: str) -> dict[str, Any]:
    limit = int(args.memory_limit_gb * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    from grantlog.engine.plan.magic import demand
    from grantlog.rules import model_path
    from grantlog.spark_bridge.evaluator import full_on_spark  # no pyspark import

    import grantlog

    path = model_path("gravitino")
    assert path is not None
    program = grantlog.compile(paths=[path])
    where = where_of(catalog)
    t0 = time.perf_counter()
    c0 = time.process_time()
    try:
        if args.memory_mode in ("query", "list"):
            # goal-directed, as an application asks: one read of the original program
            r = grantlog.Reasoner(program)
            names = set(program.relations)
        else:
            # bottom-up over the same rewritten program Spark runs
            d = demand(program, GOAL, where, keep=full_on_spark(program))
            r = grantlog.Reasoner(d.program)
            names = set(d.program.relations)
        with r.transaction() as tx:
            for p in sorted(data.glob("*.csv")):
                if p.stem not in names:
                    continue
                with open(p, newline="", encoding="utf-8") as f:
                    rd = csv.reader(f)
                    next(rd)
                    tx.insert(p.stem, [tuple(row) for row in rd])
        t1 = time.perf_counter()
        n_got = h_got = 0
        hashing = hashing_cpu = 0.0
        got: list[tuple[str, ...]] = []
        if args.memory_mode == "list":
            # every user's listing (the listing fast path), one after the other; counted and
            # hashed as they come (100k tables: tens of millions of rows, not kept)
            users = sorted({row[0] for row in r.rows("metalake_user")})
            for u in users:
                ts = [t for t in r.list(u, "load_table", type="table")
                      if where is None or r.ask(f'catalog_of("{t}", "{catalog}")')]
                # the hashing is left out of the times (wall and CPU)
                h0, hc0 = time.perf_counter(), time.process_time()
                n_got += len(ts)
                h_got += sum(row_hash((u, "load_table", t)) for t in ts)
                hashing += time.perf_counter() - h0
                hashing_cpu += time.process_time() - hc0
        elif args.memory_mode == "query":
            asked = GOAL if where is None else f"{where}, {GOAL}"
            got = [(b["U"], "load_table", b["T"]) for b in r.query(asked)]
        else:
            got = [tuple(map(str, row)) for row in r.rows(d.answer)]
        t2 = time.perf_counter() - hashing
    except MemoryError:
        return {"error": f"MemoryError (address space limited to {args.memory_limit_gb} GiB)",
                "seconds": time.perf_counter() - t0,
                "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    h = h_got + sum(row_hash(row) for row in got)
    return {"load_s": t1 - t0, "query_s": t2 - t1, "total_s": t2 - t0,
            "cpu_s": time.process_time() - c0 - hashing_cpu, "hash_cpu_s": hashing_cpu,
            "answers": n_got + len(got),
            "hash": h, "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


# ---------------------------------------------------------------------------------------------
# the driver


def run_worker(kind: str, args: argparse.Namespace, n: int, timeout: float,
               extra: Sequence[str] = ()) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--worker", kind, "--sizes", str(n),
           "--data-dir", str(args.data_dir), "--catalog", args.catalog,
           "--driver-memory", args.driver_memory, "--memory-limit-gb",
           str(args.memory_limit_gb), "--master", args.master,
           "--partitions", str(args.partitions), "--memory-mode", args.memory_mode,
           "--driver-rows", str(args.driver_rows), "--symmetry", args.symmetry,
           "--exceptions", args.exceptions, *extra]
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, timeout=timeout, text=True)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s", "seconds": time.perf_counter() - t0}
    if p.returncode != 0:
        return {"error": f"exit status {p.returncode}", "seconds": time.perf_counter() - t0}
    result: dict[str, Any] = json.loads(p.stdout.strip().splitlines()[-1])
    result["wall_s"] = time.perf_counter() - t0
    return result


def fmt_s(x: float | None) -> str:
    return "—" if x is None else f"{x:,.1f} s"


def report(args: argparse.Namespace, runs: list[dict[str, Any]], started: str,
           load_start: str, load_end: str) -> list[str]:
    import pyspark

    cmd = " ".join(["python", "benchmarks/spark_bench.py", *sys.argv[1:]])
    out = [BEGIN, "## Spark: Gravitino-shaped workload, one catalog's load_table decisions", "",
           f"Run {started}. Command: `.venv/bin/{cmd}`", "",
           f"- machine: {os.cpu_count()} cores, shared with other engineers' jobs (load average "
           f"at start {load_start}, at the end {load_end}); {platform.system()} "
           f"{platform.release()}; Python {platform.python_version()}; pyspark "
           f"{pyspark.__version__}; Java 17",
           f"- grantlog {git_state(*CODE, label='/'.join(CODE))}; rules/gravitino.gl (whole "
           "model) compiled once",
           f"- Spark: `{args.master}`, `spark.driver.memory={args.driver_memory}`, "
           f"`spark.sql.shuffle.partitions={args.partitions}`, adaptive execution on; inputs "
           "are the CSV files (one per base relation), read with `read_inputs`",
           f"- goal: `{GOAL}`" + (" (every user × table)" if args.catalog == "all" else
                                  f" where `catalog_of(T, \"{args.catalog}\")`")
           + "; the program is rewritten for it (engine/plan/magic.py); the answers are "
           "written as Parquet",
           f"- in-memory engine: a fresh process, address space limited to "
           f"{args.memory_limit_gb} GiB, facts inserted in one transaction, then "
           + ("the same rewritten program evaluated bottom-up (`Reasoner(demand(...).program)`"
              ", the answer relation read)" if args.memory_mode == "rewritten" else
              "every registered user's `list(u, load_table, type=table)` on the original "
              "program, one user after the other" if args.memory_mode == "list" else
              "the goal-directed query `catalog_of(T, c), allowed(U, load_table, T)` on the "
              "original program"),
           f"- {args.repeat} run(s) per size and engine; medians where more than one", ""]
    for r in runs:
        out.append(f"- {r['n']:,} tables: {r['meta']['summary']}; catalog `{args.catalog}` "
                   f"holds {r['meta']['catalog_tables'].get(args.catalog, 0):,} tables")
    out.append("")
    sizes = [r["n"] for r in runs]
    head = "| | " + " | ".join(f"{n:,} tables" for n in sizes) + " |"
    out += [head, "|---|" + "--:|" * len(sizes)]

    def row(label: str, f: Any) -> None:
        out.append(f"| {label} | " + " | ".join(f(r) for r in runs) + " |")

    def sp(r: dict[str, Any], key: str) -> Any:
        ok = [x for x in r["spark"] if "error" not in x]
        if not ok:
            return None
        vals = [x[key] for x in ok]
        return statistics.median(vals) if isinstance(vals[0], int | float) else vals[0]

    def sp_err(r: dict[str, Any]) -> str | None:
        bad = [x["error"] for x in r["spark"] if "error" in x]
        return bad[0] if bad else None

    row("Spark: total (inputs read, every stratum, answers written)",
        lambda r: fmt_s(sp(r, "total_s")) if sp(r, "total_s") is not None else
        f"failed: {sp_err(r)}")
    row("Spark: JVM CPU time in the total (user + system)",
        lambda r: fmt_s(sp(r, "jvm_cpu_s")))
    row("Spark: the driver's Python CPU time in the total (small strata run there)",
        lambda r: fmt_s(sp(r, "py_cpu_s")))
    row("Spark: hierarchy closure (`ancestor`, path doubling)",
        lambda r: fmt_s(sp(r, "closure_s")))
    row("Spark: iterations per recursive stratum",
        lambda r: ", ".join(f"{'/'.join(s['relations'])} {s['strategy']} {s['iterations']}"
                            for s in (sp(r, "recursive") or [])) or "—")
    row("Spark: closure rows", lambda r: f"{sp(r, 'closure_rows') or 0:,}")
    row("Spark: rules / strata / checkpointed strata (rewritten program)",
        lambda r: f"{sp(r, 'rules')} of {sp(r, 'original_rules')} / {sp(r, 'strata')} / "
                  f"{sp(r, 'checkpointed')}" if sp(r, "rules") else "—")
    row("Spark: largest stratum (rows)",
        lambda r: f"{sp(r, 'largest_stratum')} ({sp(r, 'largest_rows'):,})"
        if sp(r, "largest_stratum") else "—")
    row("Spark: peak RSS, JVM / Python driver",
        lambda r: f"{sp(r, 'jvm_peak_mib'):,.0f} / {sp(r, 'python_peak_mib'):,.0f} MiB"
        if sp(r, "jvm_peak_mib") else "—")
    row("Spark: session start (not in the total)", lambda r: fmt_s(sp(r, "session_s")))
    row("Spark: rewrites (symmetry.py; singles.py)",
        lambda r: "; ".join(x for x in (sp(r, "symmetry"), sp(r, "exceptions")) if x) or "—")
    row("answers (user, load_table, table)",
        lambda r: f"{sp(r, 'answers'):,}" if sp(r, "answers") is not None else "—")
    row("answers' row hash (Spark)", lambda r: str(sp(r, "hash")))

    def mem(r: dict[str, Any], key: str) -> Any:
        ok = [x for x in r["memory"] if "error" not in x]
        return statistics.median([x[key] for x in ok]) if ok else None

    def mem_err(r: dict[str, Any]) -> str:
        if not r["memory"]:
            return "not run"
        bad = [x for x in r["memory"] if "error" in x]
        return f"**did not finish**: {bad[0]['error']}" if bad else ""

    row("in-memory: total (insert all + evaluate)",
        lambda r: fmt_s(mem(r, "total_s")) if mem(r, "total_s") is not None else mem_err(r))
    row("in-memory: CPU time (user + system; `list`: the rows' hashing left out)",
        lambda r: fmt_s(mem(r, "cpu_s")) if mem(r, "cpu_s") is not None else "—")
    row("in-memory: insert / evaluate and read",
        lambda r: f"{fmt_s(mem(r, 'load_s'))} / {fmt_s(mem(r, 'query_s'))}"
        if mem(r, "total_s") is not None else "—")
    row("in-memory: peak RSS", lambda r: f"{mem(r, 'peak_mib'):,.0f} MiB"
        if mem(r, "peak_mib") is not None else "—")

    def agree(r: dict[str, Any]) -> str:
        s = [(x["answers"], x["hash"]) for x in r["spark"] if "error" not in x]
        m = [(x["answers"], x["hash"]) for x in r["memory"] if "error" not in x]
        if not s or not m:
            return "—"
        return "yes" if len(set(s + m)) == 1 else f"**NO** {set(s)} vs {set(m)}"

    row("same answers (count and row hash)", agree)
    out.append("")
    out.append("Targets (issue 5):")
    by = {r["n"]: r for r in runs}
    if 1_000_000 in by:
        t = sp(by[1_000_000], "total_s")
        out.append("- 1M tables in ≤ 10 minutes on `local[2]`: " + (
            f"**met** ({t / 60:.1f} min)" if t is not None and t <= 600 else
            f"**missed** ({t / 60:.1f} min, {t / 600:.1f}× the target)" if t is not None
            else f"**missed** (failed: {sp_err(by[1_000_000])})"))
    its = {r["n"]: sp(r, "closure_iterations") for r in runs}
    out.append("- closure iterations grow with log(depth), not with size: " + ", ".join(
        f"{n:,} tables: {i}" for n, i in its.items()) + " (hierarchy depth 3: metalake > "
        "catalog > schema > table; doubling needs 1 + ⌈log2 3⌉ rounds + 1 empty)")
    if 5_000_000 in by:
        r5 = by[5_000_000]
        s5 = sp(r5, "total_s")
        out.append("- 5M tables finishes on Spark where the in-memory engine cannot: Spark "
                   + (f"finished in {s5 / 60:.1f} min" if s5 is not None else
                      f"failed ({sp_err(r5)})")
                   + "; in-memory " + (mem_err(r5) or
                                       f"finished too ({fmt_s(mem(r5, 'total_s'))})"))
    out.append("")
    for r in runs:
        ok = [x for x in r["spark"] if "error" not in x]
        if ok:
            out.append(f"<details><summary>Spark progress at {r['n']:,} tables (first run)"
                       "</summary>\n\n```")
            out += ok[0]["log"]
            out.append("```\n</details>\n")
    out.append(END)
    return out


def write_results(lines: list[str]) -> None:
    replace_marked(RESULTS, BEGIN, END, "\n".join(lines))


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="100000,1000000,5000000")
    ap.add_argument("--catalog", default="m1.cat000")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--driver-memory", default="8g")
    ap.add_argument("--partitions", type=int, default=16)
    ap.add_argument("--memory-limit-gb", type=float, default=10.0,
                    help="address-space limit of the in-memory engine's process")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=3600.0, help="per worker, seconds")
    ap.add_argument("--memory-timeout", type=float, default=1800.0,
                    help="for the in-memory engine's run, seconds")
    ap.add_argument("--no-memory", action="store_true", help="skip the in-memory engine")
    ap.add_argument("--memory-mode", choices=["rewritten", "query", "list"],
                    default="rewritten",
                    help="in-memory engine: the rewritten program bottom-up (default), or the "
                         "original program's goal-directed query, or every registered user's "
                         "`list(u, load_table, type=table)`")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--driver-rows", type=int, default=10_000_000,
                    help="relations are also held on the driver while they hold at most "
                         "this many rows in all, and the strata reading only those run there "
                         "(run(driver_rows=); 0: every stratum on Spark)")
    ap.add_argument("--symmetry", choices=["auto", "on", "off"], default="auto",
                    help="evaluate over one representative per class of interchangeable input "
                         "values (run(symmetry=); spark_bridge/symmetry.py)")
    ap.add_argument("--exceptions", choices=["auto", "on", "off"], default="auto",
                    help="values with facts of their own as members of their base class, "
                         "corrected on the driver (run(exceptions=); spark_bridge/singles.py)")
    ap.add_argument("--data-dir", type=Path,
                    default=Path(os.environ.get("TMPDIR", "/tmp")) / "grantlog-spark-bench")
    ap.add_argument("--worker", choices=["generate", "spark", "memory"], help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]

    if args.worker:
        n = sizes[0]
        data = args.data_dir / str(n)
        if args.worker == "generate":
            res = work_generate(n, data)
        elif args.worker == "spark":
            res = work_spark(args, data, args.catalog)
        else:
            res = work_memory(args, data, args.catalog)
        print(json.dumps(res))
        return 0

    started = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    load_start = loadavg()
    runs = []
    for n in sizes:
        data = args.data_dir / str(n)
        meta_path = data / "meta.json"
        if not meta_path.exists():
            print(f"[{n:,}] generating the workload ...", file=sys.stderr, flush=True)
            meta = run_worker("generate", args, n, args.timeout)
            if "error" in meta:
                print(f"[{n:,}] generation failed: {meta['error']}", file=sys.stderr)
                return 1
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        print(f"[{n:,}] {meta['summary']}", file=sys.stderr, flush=True)
        run: dict[str, Any] = {"n": n, "meta": meta, "spark": [], "memory": []}
        for k in range(args.repeat):
            print(f"[{n:,}] spark run {k + 1} (load average {loadavg()}) ...", file=sys.stderr,
                  flush=True)
            s = run_worker("spark", args, n, args.timeout)
            print(f"[{n:,}] spark: {s.get('error') or fmt_s(s['total_s'])}", file=sys.stderr,
                  flush=True)
            run["spark"].append(s)
            if not args.no_memory:
                print(f"[{n:,}] in-memory run {k + 1} (load average {loadavg()}) ...",
                      file=sys.stderr, flush=True)
                m = run_worker("memory", args, n, args.memory_timeout)
                print(f"[{n:,}] in-memory: {m.get('error') or fmt_s(m['total_s'])}",
                      file=sys.stderr, flush=True)
                run["memory"].append(m)
        runs.append(run)
    lines = report(args, runs, started, load_start, loadavg())
    print("\n".join(lines))
    if not args.no_write:
        write_results(lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
