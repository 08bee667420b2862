#!/usr/bin/env python3
"""Cold start on the Gravitino-shaped workload (issue 26, item 5): the time to the first
answered check, from Python lists and from an opened SQLite store.

* **lists**: ``Reasoner(program)``, one transaction inserting every base fact (``insert``),
  then the first check (``first check``: the first evaluation and the planner's statistics),
  then the first listing (``first list``: ``list(subject, op, type="table")`` for the
  first check's subject; budget 50 ms + 2 µs per listed table);
* **store**: the facts bulk-loaded into a new SQLite file, the big relations' snapshot taken
  (grantlog/store/snapshots.py; ``--no-snapshot``: none, the open reads the tables) and the
  planner's statistics measured and kept with them, as ``grantlog store load`` does
  (``measure``, timed apart; ``--no-kept``: none kept, each open measures the rows), then
  ``Reasoner(program, store=URL, follow=False)`` (``open``), its first check and first list;
* **store, list first**: a listing as the first question after opening the store;
* **store, prepared**: ``prepare()`` after opening (what ``grantlog serve`` does before it
  takes traffic: plans and indexes of checks, lists and filters), then the first listing.

``--answers``: the first listing is also measured for the probe users of
benchmarks/models/worlds.py (``small``: 3 tables, ``medium``: ~5k, ``all``: every table),
each after a load of its own (a first listing is the first after a load), from lists and
(but with ``--lists-only``) from the store after the first check. ``--model``: one of
worlds.MODELS (the world translated; its table-loading operation asked). Every first
listing is also given with the collector's CPU within it (``gc``, from ``gc.callbacks``):
a full collection of the millions of rows a load made lands in whichever step allocates
past its threshold, often the first listing.

Each figure is the median over ``--repeat`` runs, each run in a fresh process state (a new
Reasoner; the workload generated once).

    .venv/bin/python benchmarks/cold_start_bench.py --sizes 100000 --repeat 3
    .venv/bin/python benchmarks/cold_start_bench.py --sizes 1000000 --cpu --model unary \
        --answers subject small medium all --lists-only
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import gravitino_workload as gw
from harness import HERE, load_store, log

if str(HERE / "models") not in sys.path:
    sys.path.insert(0, str(HERE / "models"))
import worlds

import grantlog
from grantlog.store import open_store, planstats, snapshots, warm

#: wall-clock time; ``--cpu``: the process's CPU time (on a shared machine, the work done
#: without the waits for a core)
clock = time.perf_counter
#: the collector's time so far (``gc.callbacks``, in ``clock``'s unit)
collected = [0.0, 0.0]


def _gc_timer(phase: str, info: dict[str, Any]) -> None:
    if phase == "start":
        collected[1] = clock()
    else:
        collected[0] += clock() - collected[1]


Run = tuple[float, float, float, int, float]  # load, first check, first list, tables, its gc


def questions(r: Any, first: tuple[str, str, str], user: str, t0: float, t1: float) -> Run:
    r.check(*first)
    t2 = clock()
    g2 = collected[0]
    n = len(r.list(user, first[1], type="table"))
    t3 = clock()
    return t1 - t0, t2 - t1, t3 - t2, n, collected[0] - g2


def from_lists(program: Any, facts: Any, first: tuple[str, str, str], user: str) -> Run:
    gc.collect()
    r = grantlog.Reasoner(program)
    t0 = clock()
    with r.transaction() as tx:
        for rel, rows in facts.items():
            tx.insert(rel, rows)
    return questions(r, first, user, t0, clock())


def forget(url: str, kept: bool) -> None:
    """Without ``kept``: drop the statistics a previous reasoner kept at its close."""
    if not kept:
        st = open_store(url)
        st.attach()
        planstats.forget(st)
        st.close()


def measure(program: Any, url: str, snapshot: bool = True) -> float:
    """The big relations' snapshot taken (``snapshot``) and the planner's statistics measured
    and kept after the load (``grantlog store load``)."""
    gc.collect()
    t0 = clock()
    st = open_store(url, program)
    try:
        if snapshot:
            snapshots.write(st)
        warm.measure(st, program)
    finally:
        st.close()
    return clock() - t0


def from_store(program: Any, url: str, first: tuple[str, str, str], user: str,
               kept: bool = True) -> Run:
    forget(url, kept)
    gc.collect()
    t0 = clock()
    r = grantlog.Reasoner(program, store=url, follow=False)
    try:
        return questions(r, first, user, t0, clock())
    finally:
        r.close()


def list_first(program: Any, url: str, first: tuple[str, str, str],
               prepare: bool, kept: bool = True) -> tuple[float, float]:
    """(prepare, first list) after opening the store; prepare 0 when not asked for."""
    forget(url, kept)
    gc.collect()
    r = grantlog.Reasoner(program, store=url, follow=False)
    try:
        t0 = clock()
        if prepare:
            r.prepare()
        t1 = clock()
        r.list(first[0], first[1], type="table")
        return t1 - t0, clock() - t1
    finally:
        r.close()


def _answers(med: Any, label: str, runs: dict[str, list[Run]]) -> str:
    """The first listings of each answer: ms (of which gc) against the budget."""
    out = []
    for key, xs in runs.items():
        n = xs[0][3]
        ms, gcms = med(x[2] for x in xs) * 1e3, med(x[4] for x in xs) * 1e3
        budget = 50 + 2e-3 * n
        verdict = ("PASS" if ms <= budget else "MISS, PASS without gc" if ms - gcms <= budget
                   else "MISS")
        out.append(f"{key} {n:,}: {ms:,.1f} ms (gc {gcms:,.1f}; without {ms - gcms:,.1f}) / "
                   f"{budget:,.1f} {verdict}")
    return f"{label} first lists: " + "; ".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cpu", action="store_true",
                    help="measure the process's CPU time instead of the wall clock")
    ap.add_argument("--no-kept", action="store_true",
                    help="keep no planner statistics with the store: every open measures")
    ap.add_argument("--no-snapshot", action="store_true",
                    help="take no snapshot of the big relations: every open reads the tables")
    ap.add_argument("--model", choices=worlds.MODELS, default="shipped",
                    help="the model (benchmarks/models/worlds.py) and its translated world")
    ap.add_argument("--answers", nargs="+", default=[],
                    choices=["subject", "small", "medium", "all"],
                    help="first listings measured apart, each after a load of its own: the "
                    "first check's subject's answer, or a probe user's")
    ap.add_argument("--lists-only", action="store_true", help="no store runs")
    a = ap.parse_args()
    kept = not a.no_kept
    if a.cpu:
        global clock
        clock = time.process_time
    gc.callbacks.append(_gc_timer)
    med = statistics.median
    for size in a.sizes:
        w, probes = worlds.workload(size, 1)
        world = worlds.translate(a.model, w, probes)
        program = world.program()
        first = gw.Sampler(w, seed=2).one("load_table")
        first = (first[0], world.load, first[2])
        users = {"subject": first[0], "small": "probe_small", "medium": "probe_medium",
                 "all": "probe_all"}
        lists, answers, stored_answers = [], {}, {}
        for _ in range(a.repeat):  # alternated: a load per first listing
            lists.append(from_lists(program, world.facts, first, first[0]))
            for key in a.answers:
                answers.setdefault(key, []).append(
                    from_lists(program, world.facts, first, users[key]))
        n = lists[0][3]
        line = (f"{size:,} tables, {a.model}  lists: insert {med(x[0] for x in lists):.2f} s, "
                f"first check {med(x[1] for x in lists):.2f} s, insert + check "
                f"{med(x[0] + x[1] for x in lists):.2f} s, first list "
                f"{med(x[2] for x in lists):.3f} s (gc {med(x[4] for x in lists):.3f})")
        if not a.lists_only:
            with tempfile.TemporaryDirectory() as tmp:
                url = f"sqlite:///{Path(tmp) / 'cold.db'}"
                load_store(url, program, world)
                measured = measure(program, url, not a.no_snapshot) if kept else 0.0
                stored = [from_store(program, url, first, first[0], kept)
                          for _ in range(a.repeat)]
                for key in a.answers:
                    stored_answers[key] = [from_store(program, url, first, users[key], kept)
                                           for _ in range(a.repeat)]
                listed = [list_first(program, url, first, False, kept)[1]
                          for _ in range(a.repeat)]
                prepared = [list_first(program, url, first, True, kept)
                            for _ in range(a.repeat)]
            line += (
                f" | store: measure {measured:.2f} s, open {med(x[0] for x in stored):.2f} s, "
                f"first check {med(x[1] for x in stored):.2f} s, first list "
                f"{med(x[2] for x in stored):.3f} s (gc {med(x[4] for x in stored):.3f}) | "
                f"store, list first {med(listed):.3f} s | store, prepared: prepare "
                f"{med(x[0] for x in prepared):.2f} s, first list "
                f"{med(x[1] for x in prepared):.3f} s")
        log(line + f" | {n:,} tables listed, budget {0.05 + 2e-6 * n:.3f} s")
        if answers:
            log(_answers(med, "  lists", answers))
        if stored_answers:
            log(_answers(med, "  store", stored_answers))
    return 0


if __name__ == "__main__":
    sys.exit(main())
