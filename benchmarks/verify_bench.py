"""`grantlog store verify` at scale (issue 24 item 10).

The Gravitino-shaped world of store_bench.py (``--size`` tables; 1M: ~2.1M base facts) is
bulk-loaded into a SQLite file and a schema of a throwaway PostgreSQL server, 200 one-fact
transactions go on top, and ``Store.verify()`` is timed (best and median of ``--repeat``), then
``grantlog store verify URL`` once as a command. Nothing is written to RESULTS.md: the figures
go to stdout (the issue's closing note quotes them).

    .venv/bin/python benchmarks/verify_bench.py [--size 1000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import gc
import subprocess
import sys
import tempfile
import time
from typing import Any

import gravitino_workload as gw
from harness import ROOT, timed

import grantlog
from grantlog.store import open_store


def measure(kind: str, url: str, program: grantlog.Program, w: Any, repeat: int) -> None:
    st = open_store(url, program, create=True)
    t0 = time.perf_counter()
    with st.writing() as wr:
        for rel, rows in w.facts.items():
            wr.load(rel, rows)
    load = time.perf_counter() - t0
    t0 = time.perf_counter()
    for i in range(200):  # transactions that record their checksums
        with st.writing() as wr:
            wr.apply({"privilege": {(w.roles[i % len(w.roles)], "select_table",
                                     w.tables[(i * 7919) % len(w.tables)], "allow")}}, {})
    one = (time.perf_counter() - t0) / 200
    st.close()
    gc.collect()
    st = open_store(url, create=False)
    st.attach()
    def verify() -> Any:
        report = st.verify()
        assert report.ok, report.render()
        return report

    t = timed(verify, repeat)
    st.close()
    t0 = time.perf_counter()
    cli = subprocess.run([sys.executable, "-m", "grantlog.cli", "store", "verify", url],
                         capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    print(f"[{kind}] bulk load {load:.2f} s; one-fact transaction {one * 1e3:.2f} ms; verify "
          f"best {t.best:.2f} s, median {t.median:.2f} s "
          f"({', '.join(f'{x:.2f}' for x in t.times)}); the command {seconds:.2f} s, exit "
          f"{cli.returncode}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=1_000_000, help="tables (default 1000000)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    from pgserver import PgServer  # tests/pgserver.py (on the path through harness)

    program = grantlog.compile(paths=[str(ROOT / "rules" / "gravitino.gl")])
    t0 = time.perf_counter()
    w = gw.generate(args.size, seed=1)
    facts = sum(map(len, w.facts.values()))
    print(f"{args.size:,} tables, {facts:,} base facts, generated in "
          f"{time.perf_counter() - t0:.1f} s", flush=True)
    pg = PgServer(durable=True).start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            measure("sqlite", f"sqlite:///{tmp}/verify.db", program, w, args.repeat)
            measure("postgres", pg.schema_url("verify"), program, w, args.repeat)
    finally:
        pg.stop()


if __name__ == "__main__":
    main()
