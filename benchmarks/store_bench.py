#!/usr/bin/env python3
"""The durable store on the Gravitino-shaped workload (issue 14, "What must be shown").

For each size (tables) and each store (SQLite file, PostgreSQL server started here from the
machine's binaries with fsync on), in one run:

* **baseline**: today's load from Python lists: ``Reasoner(program)``, one transaction
  inserting every base fact, the first check;
* **bulk load**: every base fact written into an empty store as one transaction
  (``Writer.load``, what ``grantlog store load`` does), change log included;
* **reopen → first check**: a new ``Reasoner(program, store=URL)`` (read every table, seed,
  first evaluation) and its first check; the ratio to the baseline;
* **durable grant, same process**: ``insert`` of one ``privilege`` fact (then its retract, and
  so on): the call returns when the store committed and the change is visible; median/p90;
* **durable grant, second process**: another process follows the store (``follow=True``); the
  time from the writer's call to the follower having applied the revision (CLOCK_MONOTONIC is
  shared by the processes); median/p90;
* **change log**: bytes and rows per one-fact transaction, and ``compact(keep=0)``.

Ingestion (once per size): reading the world's facts from a `.gl` file, CSV files and Parquet
files (rows/s), and ``grantlog store load`` of the `.gl` file into SQLite end to end.

    .venv/bin/python benchmarks/store_bench.py                     # 100k and 1M, both stores
    .venv/bin/python benchmarks/store_bench.py --sizes 100000 --grants 100
    .venv/bin/python benchmarks/store_bench.py --write             # replace the RESULTS section

Writes benchmarks/store_results.json; with ``--write`` the "Durable store" section of
RESULTS.md.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import gravitino_workload as gw
from harness import HERE, ROOT, log, pct_floor, replace_section, run_info, timed

import grantlog
from grantlog.store import ingest, open_store

RULES = ROOT / "rules" / "gravitino.gl"
HEADING = "## Durable store: Gravitino-shaped workload"


def follower_main(url: str) -> None:
    """The second process: follow the store, print each applied revision's time."""
    program = grantlog.compile(paths=[str(RULES)])
    r = grantlog.Reasoner(program, store=url)
    lock = threading.Lock()

    def seen(changes: Any) -> None:
        t = time.monotonic()
        with lock:
            sys.stdout.write(f"{changes.revision} {t:.9f}\n")
            sys.stdout.flush()

    r.check("u0000", "load_table", "m1.cat000.big.t00000")
    r.listeners.append(seen)
    sys.stdout.write(f"ready {r.revision}\n")
    sys.stdout.flush()
    sys.stdin.readline()  # until the writer is done
    r.close()


def _settled_bytes(st: Any) -> int | None:
    """The store's size with SQLite's WAL folded into the database file (the WAL itself is
    reused, not grown, once checkpointed)."""
    if st.dialect == "sqlite":
        import sqlite3

        with sqlite3.connect(st.path) as c:
            c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return int(os.path.getsize(st.path))
    return st.size_bytes()  # type: ignore[no-any-return]


def grant_rows(w: Any, n: int) -> list[tuple[str, str, str, str]]:
    roles = w.roles
    tables = w.tables
    return [(roles[i % len(roles)], "select_table", tables[(i * 7919) % len(tables)], "allow")
            for i in range(n)]


def measure_store(kind: str, url: str, program: Any, w: Any, first: tuple[str, str, str],
                  grants: int) -> dict[str, Any]:
    res: dict[str, Any] = {"store": kind}
    gc.collect()
    t0 = time.perf_counter()
    st = open_store(url, program, create=True)
    with st.writing() as wr:
        for rel, rows in w.facts.items():
            wr.load(rel, rows)
    st.close()
    res["bulk_load_s"] = time.perf_counter() - t0
    log(f"  [{kind}] bulk load {res['bulk_load_s']:.2f} s")
    gc.collect()
    t0 = time.perf_counter()
    r = grantlog.Reasoner(program, store=url, follow=False)
    t1 = time.perf_counter()
    r.check(*first)
    t2 = time.perf_counter()
    res["reopen_s"] = t1 - t0
    res["reopen_first_check_s"] = t2 - t0
    log(f"  [{kind}] reopen -> first check {t2 - t0:.2f} s (open {t1 - t0:.2f})")
    before = r.store.stats()
    before["bytes"] = _settled_bytes(r.store)
    # same process: each insert/retract returns once committed and visible
    rows = grant_rows(w, grants)
    same: list[float] = []
    for i, row in enumerate(rows):
        t0 = time.perf_counter()
        r.insert("privilege", [row])
        same.append(time.perf_counter() - t0)
        if i % 2:
            t0 = time.perf_counter()
            r.retract("privilege", [row])
            same.append(time.perf_counter() - t0)
    res["same_process_ms"] = {"p50": statistics.median(same) * 1e3,
                              "p90": pct_floor(same, 0.9) * 1e3, "n": len(same)}
    log(f"  [{kind}] same process commit-to-visible p50 {res['same_process_ms']['p50']:.2f} ms")
    after = r.store.stats()
    after["bytes"] = _settled_bytes(r.store)
    txs = after["revision"] - before["revision"]
    res["log"] = {"transactions": txs,
                  "log_rows_per_tx": (after["log_rows"] - before["log_rows"]) / txs,
                  "bytes_per_tx": ((after["bytes"] - before["bytes"]) / txs
                                   if after["bytes"] and before["bytes"] else None),
                  "log_rows_total": after["log_rows"]}
    # second process
    proc = subprocess.Popen([sys.executable, __file__, "--follower", url],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONHASHSEED": "0"})
    assert proc.stdout is not None and proc.stdin is not None
    ready = proc.stdout.readline()
    assert ready.startswith("ready"), ready
    seen: dict[int, float] = {}

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            rev, t = line.split()
            seen[int(rev)] = float(t)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    started: dict[int, float] = {}
    for row in grant_rows(w, grants + 1000)[1000:]:
        t0 = time.monotonic()
        rev = r.insert("privilege", [row]).revision
        started[rev] = t0
        time.sleep(0.02)
    time.sleep(0.5)
    proc.stdin.write("done\n")
    proc.stdin.flush()
    proc.wait(timeout=60)
    reader.join(timeout=10)
    lat = [seen[v] - started[v] for v in started if v in seen]
    res["second_process_ms"] = {"p50": statistics.median(lat) * 1e3,
                                "p90": pct_floor(lat, 0.9) * 1e3, "n": len(lat),
                                "missing": len(started) - len(lat)}
    log(f"  [{kind}] second process p50 {res['second_process_ms']['p50']:.2f} ms "
        f"({len(lat)} of {len(started)})")
    t0 = time.perf_counter()
    removed = r.store.compact(keep=0)
    res["compact"] = {"s": time.perf_counter() - t0, "removed_rows": removed,
                      "log_rows_after": r.store.stats()["log_rows"]}
    r.close()
    return res


def ingestion(program: Any, w: Any, tmp: Path, size: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    n = sum(map(len, w.facts.values()))
    paths = {"gl": tmp / "world.gl", "csv": tmp / "csv", "parquet": tmp / "parquet"}
    for fmt, path in paths.items():
        ingest.dump(w.facts, program, str(path), fmt)
    for fmt, path in paths.items():
        t = timed(lambda path=path: sum(map(len, ingest.read([str(path)], program).values())),
                  repeat=3, setup=gc.collect)
        assert t.result == n
        out[fmt] = {"rows": n, "s": t.median, "rows_per_s": n / t.median}
        log(f"  read {fmt}: {n / t.median:,.0f} rows/s")
    db = tmp / "cli.db"
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "grantlog.cli", "store", "load", f"sqlite:///{db}",
                    str(paths["gl"]), "--rules", str(RULES), "--create"], check=True,
                   capture_output=True)
    out["cli_load_gl_sqlite"] = {"s": time.perf_counter() - t0,
                                 "rows_per_s": n / (time.perf_counter() - t0)}
    log(f"  grantlog store load (.gl -> SQLite, whole command): "
        f"{out['cli_load_gl_sqlite']['rows_per_s']:,.0f} rows/s")
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    from pgserver import PgServer, find_bin

    program = grantlog.compile(paths=[str(RULES)])
    results: dict[str, Any] = {"sizes": [], **run_info()}
    pg = PgServer(durable=True).start() if "postgres" in args.stores and find_bin() else None
    try:
        for size in args.sizes:
            log(f"[{size:,} tables]")
            w = gw.generate(size, seed=1)
            n = sum(map(len, w.facts.values()))
            first = gw.Sampler(w, seed=2).one("load_table")
            entry: dict[str, Any] = {"tables": size, "facts": n, "stores": []}
            gc.collect()
            t0 = time.perf_counter()
            base = grantlog.Reasoner(program)
            with base.transaction() as tx:
                for rel, rows in w.facts.items():
                    tx.insert(rel, rows)
            base.check(*first)
            entry["baseline_load_s"] = time.perf_counter() - t0
            log(f"  baseline load from lists {entry['baseline_load_s']:.2f} s")
            del base, tx
            gc.collect()
            with tempfile.TemporaryDirectory() as tmp:
                if not args.no_ingest:
                    entry["ingest"] = ingestion(program, w, Path(tmp), size)
                for kind in args.stores:
                    if kind == "sqlite":
                        url = f"sqlite:///{Path(tmp) / f'bench{size}.db'}"
                    elif pg is not None:
                        url = pg.schema_url(f"bench{size}")
                    else:
                        log("  postgres: no server binaries, skipped")
                        continue
                    m = measure_store(kind, url, program, w, first, args.grants)
                    m["reopen_ratio"] = m["reopen_first_check_s"] / entry["baseline_load_s"]
                    entry["stores"].append(m)
                    gc.collect()
            results["sizes"].append(entry)
    finally:
        if pg is not None:
            pg.stop()
    return results


def table(res: dict[str, Any]) -> str:
    lines = [HEADING, "", f"Run {res['when']} at `{res['git']}` "
             "(`.venv/bin/python benchmarks/store_bench.py --write`); PostgreSQL 15 started by "
             "the benchmark on 127.0.0.1 with fsync on; SQLite in WAL mode, "
             "`synchronous=normal`. Times are medians of the run.", ""]
    lines += ["| tables (base facts) | store | bulk load | reopen → first check (÷ baseline) | "
              "grant visible, same process p50 / p90 | second process p50 / p90 | log per "
              "one-fact tx |", "|---|---|---|---|---|---|---|"]
    for e in res["sizes"]:
        for s in e["stores"]:
            lg = s["log"]
            size = f"{lg['bytes_per_tx']:.0f} B" if lg["bytes_per_tx"] is not None else "?"
            lines.append(
                f"| {e['tables']:,} ({e['facts']:,}) | {s['store']} | {s['bulk_load_s']:.2f} s "
                f"({e['facts'] / s['bulk_load_s']:,.0f} rows/s) | "
                f"{s['reopen_first_check_s']:.2f} s (÷ {e['baseline_load_s']:.2f} s = "
                f"{s['reopen_ratio']:.2f}×) | {s['same_process_ms']['p50']:.2f} / "
                f"{s['same_process_ms']['p90']:.2f} ms | {s['second_process_ms']['p50']:.2f} / "
                f"{s['second_process_ms']['p90']:.2f} ms | {lg['log_rows_per_tx']:.1f} rows, "
                f"{size} |")
    lines += ["", "Ingestion (reading the world's facts into rows, median of 3; and the whole "
              "`grantlog store load` command, .gl into SQLite):", "",
              "| tables | facts | .gl | CSV | Parquet | `store load` .gl → SQLite |",
              "|---|---|---|---|---|---|"]
    for e in res["sizes"]:
        ing = e.get("ingest")
        if ing:
            lines.append(f"| {e['tables']:,} | {e['facts']:,} | {ing['gl']['rows_per_s']:,.0f}/s "
                         f"| {ing['csv']['rows_per_s']:,.0f}/s | "
                         f"{ing['parquet']['rows_per_s']:,.0f}/s | "
                         f"{ing['cli_load_gl_sqlite']['rows_per_s']:,.0f}/s |")
    lines += ["", "Compaction: `compact(keep=0)` removed every log row of the run "
              + ", ".join(f"({e['tables']:,}, {s['store']}: {s['compact']['removed_rows']:,} rows"
                          f" in {s['compact']['s']:.2f} s)"
                          for e in res["sizes"] for s in e["stores"]), ""]
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    p.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    p.add_argument("--stores", nargs="+", default=["sqlite", "postgres"],
                   choices=["sqlite", "postgres"])
    p.add_argument("--grants", type=int, default=200)
    p.add_argument("--no-ingest", action="store_true")
    p.add_argument("--write", action="store_true", help="replace the RESULTS.md section")
    p.add_argument("--follower", metavar="URL", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.follower:
        follower_main(args.follower)
        return
    res = run(args)
    (HERE / "store_results.json").write_text(json.dumps(res, indent=2), encoding="utf-8")
    text = table(res)
    print(text)
    if args.write:
        replace_section(HEADING, text)


if __name__ == "__main__":
    main()
