#!/usr/bin/env python3
"""History at scale (issue 28): a store of ``--tables`` tables and ``--transactions``
transactions of history (benchmarks/history_world.py, SQLite, checkpoints every ``--every``
revisions), then:

* **build**: seconds per step (generate, load revision 1, simulate, append the history in
  bulk, fold it into the temporal table);
* **store size and growth per transaction**: bytes per table and index (SQLite's
  ``dbstat``), the history's share (change log, transaction rows, temporal table and its
  indexes) divided by the number of transactions;
* **as-of check at a random past revision** (``--samples``, each at a revision not asked
  before: engine/answer/pointread.py reads its facts by index), p50/p95: *first* at that
  revision, *again* (the same check: the view kept), *another* check at the same revision;
  with the number of point lookups and rows read per first check;
* **the rebuilt reasoner** (the path before point reads) for ``--rebuild`` samples, with
  their answers compared.

    .venv/bin/python benchmarks/history_scale.py --tables 100000 --transactions 100000
    .venv/bin/python benchmarks/history_scale.py --tables 1000000 --transactions 1000000
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import history_world as hw
from grantlog.engine.answer import history, pointread

import grantlog
from grantlog.store import open_store


def pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))] * 1000


def sizes(path: str) -> dict[str, int]:
    """Bytes per table and index of a SQLite file (``dbstat``)."""
    import sqlite3

    con = sqlite3.connect(path)
    try:
        return {name: int(n) for name, n in con.execute(
            "SELECT name, SUM(pgsize) FROM dbstat GROUP BY name")}
    finally:
        con.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tables", type=int, default=100_000)
    ap.add_argument("--transactions", type=int, default=100_000)
    ap.add_argument("--every", type=int, default=1000)
    ap.add_argument("--samples", type=int, default=60)
    ap.add_argument("--rebuild", type=int, default=1,
                    help="samples also answered by the rebuilt reasoner (slow at 1M)")
    ap.add_argument("--path", default=None, help="the store (default: under /tmp)")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--json", default=None, help="write the figures here too")
    ap.add_argument("--expiring", type=float, default=0.0,
                    help="the share of the history's grants written with a validity interval "
                    "(history_world.py; checks at the clock: engine/answer/pointread.py "
                    "MomentView)")
    a = ap.parse_args()
    path = a.path or f"/tmp/grantlog-history-{a.tables}x{a.transactions}" \
        f"{f'-exp{a.expiring}' if a.expiring else ''}.db"
    t0 = time.perf_counter()
    w = hw.build(path, a.tables, a.transactions, every=a.every, log=print,
                 expiring=a.expiring)
    print(f"store {w.url}: head {w.head:,} ({'built' if w.seconds else 'reused'} in "
          f"{time.perf_counter() - t0:.1f}s)")
    for k, v in w.built.items():
        print(f"  build {k}: {v:.1f}s")
    st = open_store(w.url)
    try:
        t0 = time.perf_counter()
        st.checkpoint()  # the point reads' indexes, on a store built before they were kept
        print(f"checkpoint (indexes): {time.perf_counter() - t0:.1f}s")
    finally:
        st.close()
    by = sizes(path)
    hist_parts = ("grantlog_log", "grantlog_revisions", "grantlog_intervals")
    hist = {k: v for k, v in by.items() if k.startswith(hist_parts)}
    total = os.path.getsize(path)
    growth = sum(hist.values()) / max(w.transactions, 1)
    print(f"file: {total / 2**20:,.0f} MiB; history (log, revisions, intervals + indexes): "
          f"{sum(hist.values()) / 2**20:,.0f} MiB = {growth:,.0f} bytes per transaction")
    for k, v in sorted(hist.items(), key=lambda kv: -kv[1]):
        print(f"  {k}: {v / 2**20:,.1f} MiB ({v / max(w.transactions, 1):,.0f} B/txn)")

    t0 = time.perf_counter()
    r = grantlog.Reasoner(w.program, store=w.url, follow=False)
    r.check(w.focus_user, "select_table", w.focus_table)
    opened = time.perf_counter() - t0
    print(f"reasoner over the store, first check now: {opened:.1f}s")
    rng = random.Random(a.seed)
    checks = w.sample_checks(rng, a.samples, low=1, high=w.head - 1)
    other = w.sample_checks(random.Random(a.seed + 1), a.samples)
    first, again, another, lookups, read, cpu = [], [], [], [], [], []
    allowed = 0
    gc.collect()
    for (s, o, x, rev), (s2, o2, x2, _) in zip(checks, other, strict=True):
        t, c = time.perf_counter(), time.process_time()
        d = r.check(s, o, x, at_revision=rev)
        first.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
        view = history.kept(r, rev, points=True)
        assert isinstance(view, pointread.PastView), "not read by points"
        lookups.append(view.reader.lookups)
        read.append(view.reader.rows_read)
        allowed += d.allowed
        t = time.perf_counter()
        assert r.check(s, o, x, at_revision=rev) == d
        again.append(time.perf_counter() - t)
        t = time.perf_counter()
        r.check(s2, o2, x2, at_revision=rev)
        another.append(time.perf_counter() - t)
    print(f"as-of check at a random past revision ({len(first)} samples, {allowed} allowed):")
    for name, xs in (("first", first), ("first, CPU time", cpu), ("again", again),
                     ("another", another)):
        print(f"  {name}: p50 {pct(xs, .5):.1f} ms, p95 {pct(xs, .95):.1f} ms")
    print(f"  per first check: {statistics.median(lookups):.0f} lookups, "
          f"{statistics.median(read):.0f} rows read (medians)")
    rebuilt = []
    for s, o, x, rev in checks[:a.rebuild]:
        t = time.perf_counter()
        at, rows = r.journal.snapshot_at(rev)  # type: ignore[union-attr]
        p = grantlog.Reasoner(w.program)
        p.seed({k: v for k, v in rows.items() if v}, at)
        e = p.check(s, o, x)
        rebuilt.append(time.perf_counter() - t)
        d = r.check(s, o, x, at_revision=rev)
        assert (d.allowed, d.reasons) == (e.allowed, e.reasons), (s, o, x, rev, d, e)
        del p, rows
        gc.collect()
    if rebuilt:
        print(f"  the rebuilt reasoner (before): median {statistics.median(rebuilt):.1f} s "
              f"({len(rebuilt)} samples; same answers)")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"max RSS {rss:,.0f} MiB; load average {os.getloadavg()[0]:.1f}")
    if a.json:
        Path(a.json).write_text(json.dumps({
            "tables": a.tables, "transactions": a.transactions, "head": w.head,
            "build_s": w.built, "file_bytes": total, "history_bytes": hist,
            "bytes_per_txn": growth, "open_s": opened,
            "first_ms": [pct(first, .5), pct(first, .95)],
            "first_cpu_ms": [pct(cpu, .5), pct(cpu, .95)], "expiring": a.expiring,
            "again_ms": [pct(again, .5), pct(again, .95)],
            "another_ms": [pct(another, .5), pct(another, .95)],
            "rebuilt_s": rebuilt, "max_rss_mib": rss}, indent=1))
    r.close()


if __name__ == "__main__":
    main()
