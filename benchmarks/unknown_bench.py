#!/usr/bin/env python3
"""Denials of unknown constants at scale: the "did you mean" of a check naming a table or a
user that does not exist (engine/answer/vocabulary.py; issue 26, item 3).

The Gravitino workload (benchmarks/gravitino_workload.py, ``--tables`` tables, seed 1) in a
live reasoner over rules/gravitino.gl, ``prepare()``d. The unknown constants: tables dropped
(a schema's next table number), table names with two adjacent characters swapped, users not
registered (``u`` + a number past the last user, a user name with a typo) and names near
nothing. Each is asked as ``check(user, "load_table", table)`` (every answer a denial with an
``unknown-constant`` warning), one by one, timed whole; the first question pays the building
of the column's index (its own line).

Modes: ``index`` (the code as it is: each column's values kept as
engine/core/suggest.py ``Names``, built on the first suggestion and kept up to date) and
``scan`` (the code before it: every stored value of the column read per suggestion,
reproduced by making ``stored_names`` return the index's keys; where the two suggest
different names, whether the index's is less close). Then ``--writes`` tables
created and dropped (the index kept up to date by the database's watchers) and the same
checks again, with a created table's typo suggested and a dropped table's name no longer.

    .venv/bin/python benchmarks/unknown_bench.py [--tables 1000000] [--checks 200]
        [--writes 1000] [--modes scan,index]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import gravitino_workload as gw  # noqa: E402
from grantlog.engine.answer import vocabulary  # noqa: E402
from harness import log, pct, peak_rss_kib  # noqa: E402

import grantlog  # noqa: E402

#: the kinds of unknown constants, in the order :func:`unknowns` makes them
KINDS = ("dropped table", "table typo", "unknown user", "near nothing")


def unknowns(w: Any, n: int, seed: int = 5) -> list[tuple[str, str]]:
    """``n`` (user, table) pairs each with one unknown constant, of four kinds in turn."""
    rnd = random.Random(seed)
    tables, users = set(w.tables), set(w.users)
    out: list[tuple[str, str]] = []
    while len(out) < n:
        kind = len(out) % 4
        user, table = rnd.choice(w.users), rnd.choice(w.tables)
        if kind == 0:  # a dropped table: its schema's next number
            s = rnd.choice(w.schemas)
            table = f"{s}.t{len(w.schema_tables[s]) + rnd.randrange(1, 50):05d}"
        elif kind == 1:  # a typo: two adjacent characters swapped
            k = rnd.randrange(len(table) - 1)
            table = table[:k] + table[k + 1] + table[k] + table[k + 2:]
        elif kind == 2:  # a user not registered, or misspelled
            user = (f"u{len(w.users) + rnd.randrange(1000):04d}" if rnd.random() < 0.5
                    else user[:1] + user[2] + user[1] + user[3:])
        else:  # near nothing
            table = "".join(rnd.choice("qwxzjk_") for _ in range(rnd.randrange(6, 30)))
        if (table not in tables and user in users) or (user not in users and table in tables):
            out.append((user, table))
    return out


def ask(r: grantlog.Reasoner, pairs: list[tuple[str, str]]) -> tuple[list[float], list[str]]:
    """Seconds per check, and the suggestion each got (its warnings' hints)."""
    times, said = [], []
    for user, table in pairs:
        t0 = time.perf_counter()
        d = r.check(user, "load_table", table)
        times.append(time.perf_counter() - t0)
        assert not d.allowed and d.warnings, (user, table)
        said.append(" | ".join(str(w.help) for w in d.warnings))
    return times, said


def score(pair: tuple[str, str], hint: str) -> float:
    """How close the suggestions of a check's warnings are to its unknown constants (the sum
    of rapidfuzz's ratio, the suggestion's measure)."""
    from rapidfuzz import fuzz

    got = re.findall(r"did you mean `([^`]*)`", hint)
    return sum(max(fuzz.ratio(g, v) for v in pair) for g in got)


def figures(times: list[float]) -> dict[str, float]:
    ms = [t * 1000 for t in times]
    return {"p50_ms": round(statistics.median(ms), 3), "p95_ms": round(pct(ms, 0.95), 3),
            "max_ms": round(max(ms), 3)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tables", type=int, default=100_000)
    ap.add_argument("--checks", type=int, default=200)
    ap.add_argument("--writes", type=int, default=1000)
    ap.add_argument("--modes", default="scan,index")
    a = ap.parse_args()

    t0 = time.perf_counter()
    w = gw.generate(a.tables, seed=1)
    program = grantlog.compile(paths=[ROOT / "rules" / "gravitino.gl"])
    pairs = unknowns(w, a.checks)
    keep = vocabulary.stored_names
    out: dict[str, Any] = {"tables": a.tables, "checks": a.checks,
                           "load": os.getloadavg()[0]}
    said: dict[str, list[str]] = {}
    for mode in a.modes.split(","):
        if mode == "scan":
            vocabulary.stored_names = lambda ctx, rel, cols: ctx.base_index(rel, cols).keys()
        else:
            vocabulary.stored_names = keep
        r = grantlog.Reasoner(program)
        r.seed({rel: rows for rel, rows in w.facts.items()}, 0)
        r.prepare()
        log(f"{mode}: world of {a.tables} tables ready after {time.perf_counter() - t0:.1f} s")
        first, _ = ask(r, pairs[:1])
        times, said[mode] = ask(r, pairs)
        got: dict[str, Any] = {"first_ms": round(first[0] * 1000, 1), **figures(times)}
        for k, kind in enumerate(KINDS):  # the pairs take the kinds in turn
            got[kind] = figures(times[k::len(KINDS)])
        # writes: tables created and dropped, then the same checks
        rnd = random.Random(9)
        made = [f"{rnd.choice(w.schemas)}.new{i:05d}" for i in range(a.writes)]
        gone = rnd.sample(w.tables, a.writes)
        t1 = time.perf_counter()
        for new, old in zip(made, gone, strict=True):
            with r.transaction() as tx:
                tx.insert("entity", [(new, "table")])
                tx.insert("contains", [(new.rsplit(".", 1)[0], new)])
                tx.retract("entity", [(old, "table")])
                tx.retract("contains", [(old.rsplit(".", 1)[0], old)])
        got["writes_s"] = round(time.perf_counter() - t1, 2)
        after, _ = ask(r, pairs)
        got.update({f"after_{k}": v for k, v in figures(after).items()})
        typo = made[0].replace(".new", ".nwe")
        got["new_table_suggested"] = f"`{made[0]}`" in str(
            r.check(w.users[1], "load_table", typo).warnings[0].help)
        got["dropped_table_not_suggested"] = all(
            f"`{old}`" not in str(d.help)
            for old in gone[:50] for d in r.check(w.users[1], "load_table", old).warnings)
        out[mode] = got
        log(f"{mode}: {got}")
        del r
    if len(said) == 2:
        same = sum(x == y for x, y in zip(said["scan"], said["index"], strict=True))
        out["same_suggestion"] = f"{same} of {len(pairs)}"
        worse = [(p, x, y) for p, x, y in zip(pairs, said["scan"], said["index"], strict=True)
                 if score(p, y) < score(p, x)]
        out["index_less_close"] = f"{len(worse)} of {len(pairs)}"
        out["less_close"] = worse[:8]
    out["peak_rss_mib"] = round(peak_rss_kib() / 1024)
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
