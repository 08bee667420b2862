#!/usr/bin/env python3
"""The why-not's suggested changes (engine/answer/suggest.py, ``Reasoner.suggest``; issue 29
item 3) on the Gravitino workload (benchmarks/gravitino_workload.py, ``--tables`` tables,
seed 1): denied checks from the workload's sampler until ``--checks`` are found, each asked
for its suggestions (``limit=5``, the default bounds) twice: ``first`` (the reasoner warm, the
question new; the copy the candidates run on made or kept) and ``again``.

Prints per pass the median and max seconds, how many searches a bound cut short (and which),
how many found at least one suggestion, the median candidates run, and the sizes found; every
suggestion is checked again on the reasoner itself (applied, asked, undone). ``--json`` prints
the figures as JSON.

    .venv/bin/python benchmarks/suggest_bench.py [--tables 20000] [--checks 20] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import gravitino_workload as gw  # noqa: E402
from grantlog.engine.core.ir import show_atom  # noqa: E402

import grantlog  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tables", type=int, default=20_000)
    ap.add_argument("--checks", type=int, default=20)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()

    w = gw.generate(a.tables, seed=1)
    program = grantlog.compile(paths=[ROOT / "rules" / "gravitino.gl"])
    r = grantlog.Reasoner(program)
    r.seed({rel: rows for rel, rows in w.facts.items()}, 0)
    r.prepare()
    sampler = gw.Sampler(w)
    denied: list[str] = []
    tries = 0
    while len(denied) < a.checks and tries < 50 * a.checks:
        tries += 1
        s, o, res = sampler.one()
        if not r.check(s, o, res).allowed:
            denied.append(show_atom(program.decision, (s, o, res)))
    out: dict[str, dict[str, object]] = {}
    for name in ("first", "again"):
        times, cut, found, tried, sizes = [], Counter(), 0, [], Counter()
        for goal in denied:
            t0 = time.perf_counter()
            got = r.suggest(goal)
            times.append(time.perf_counter() - t0)
            cut[got.cut_short or "none"] += 1
            found += bool(got.suggestions)
            tried.append(got.tried)
            for sg in got:
                sizes[sg.size] += 1
                with r.transaction() as tx:  # checked again on the reasoner itself
                    for e in sg.edits:
                        (tx.insert if e.op == "insert" else tx.retract)(e.rel, [e.row])
                assert r.ask(goal), f"{sg.sentence} does not flip {goal}"
                with r.transaction() as undo:
                    for e in sg.edits:
                        (undo.retract if e.op == "insert" else undo.insert)(e.rel, [e.row])
        out[name] = {"checks": len(denied), "median_s": round(statistics.median(times), 3),
                     "max_s": round(max(times), 3), "cut_short": dict(cut),
                     "with_suggestions": found, "median_tried": statistics.median(tried),
                     "sizes": dict(sorted(sizes.items()))}
    if a.json:
        print(json.dumps({"tables": a.tables, "load": os.getloadavg()[0], **out}, indent=2))
        return 0
    print(f"{a.tables} tables, {w.n_base_facts} base facts, {len(denied)} denied checks, "
          f"load average {os.getloadavg()[0]:.1f}")
    for name, f in out.items():
        print(f"  {name:6s} median {f['median_s']} s, max {f['max_s']} s; cut short "
              f"{f['cut_short']}; {f['with_suggestions']} with suggestions; "
              f"median candidates run {f['median_tried']}; sizes {f['sizes']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
