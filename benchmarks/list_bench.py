#!/usr/bin/env python3
"""Listing over the whole platform (issue 16): ``list(user, "load_table", type="table")`` on
the Gravitino-shaped workload, for users whose answers range from a handful of tables to most
of the metalake, against the target of 50 ms + 2 µs per listed table.

Every user ``u0000``..``u{N-1}`` is listed once (``--users``, default 24), in one process,
after ``prepare()``; each listing's answer is checked against one ``check`` per table for a
sample of tables (in the answer and not). The table reports, for the users whose answers are
nearest 10, 10,000 and 500,000 tables, the time and the budget, and every user's figures.

    .venv/bin/python benchmarks/list_bench.py [--size 1000000] [--users 24] [--write]
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import gravitino_workload as gw  # noqa: E402
from results_md import replace_section  # noqa: E402

import grantlog  # noqa: E402

RULES = ROOT / "rules" / "gravitino.gl"
HEADING = "## Listing over the whole metalake (issue 16)"
TARGETS = (10, 10_000, 500_000)


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def budget_ms(n: int) -> float:
    return 50.0 + 0.002 * n


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--size", type=int, default=1_000_000)
    p.add_argument("--users", type=int, default=24)
    p.add_argument("--write", action="store_true")
    args = p.parse_args()
    program = grantlog.compile(paths=[str(RULES)])
    w = gw.generate(args.size, seed=1)
    tables = [row[0] for row in w.facts["entity"] if row[1] == "table"]
    r = grantlog.Reasoner(program)
    with r.transaction() as tx:
        for rel, rows in w.facts.items():
            tx.insert(rel, rows)
    t0 = time.perf_counter()
    r.prepare()
    log(f"[{args.size:,}] loaded, prepared in {time.perf_counter() - t0:.2f} s")
    gc.collect()
    gc.freeze()
    rng = random.Random(7)
    rows: list[dict[str, Any]] = []
    for i in range(args.users):
        u = f"u{i:04d}"
        t0 = time.perf_counter()
        got = r.list(u, "load_table", type="table")
        ms = (time.perf_counter() - t0) * 1e3
        answer = set(got)
        probe = rng.sample(sorted(answer), min(20, len(answer))) + rng.sample(tables, 20)
        wrong = sum(r.check(u, "load_table", t).allowed != (t in answer) for t in probe)
        rows.append({"user": u, "tables": len(answer), "ms": ms, "budget_ms":
                     budget_ms(len(answer)), "wrong": wrong})
        log(f"  {u}: {len(answer):,} tables in {ms:,.1f} ms (budget "
            f"{budget_ms(len(answer)):,.1f} ms){' WRONG ' + str(wrong) if wrong else ''}")
    res = {"size": args.size, "rows": rows,
           "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "git": subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                 text=True, cwd=ROOT).stdout.strip()}
    (HERE / "list_results.json").write_text(json.dumps(res, indent=2))
    text = table(res)
    print(text)
    if args.write:
        replace_section(HEADING, text)


def table(res: dict[str, Any]) -> str:
    rows = res["rows"]
    near = [min(rows, key=lambda x: abs(x["tables"] - n)) for n in TARGETS]
    met = sum(x["ms"] <= x["budget_ms"] for x in rows)
    lines = [
        HEADING, "",
        f"Run {res['when']} at `{res['git']}` (`.venv/bin/python benchmarks/list_bench.py "
        f"--write`): {res['size']:,} tables, `list(u, \"load_table\", type=\"table\")` in "
        "process after `prepare()`, each user once (no answers kept from an earlier listing "
        "of the same user). Target: 50 ms + 2 µs per listed table. "
        f"{met} of {len(rows)} users within it.", "",
        "| answer nearest | user | tables listed | time | budget |", "|---|---|---|---|---|"]
    for n, x in zip(TARGETS, near, strict=True):
        lines.append(f"| {n:,} | {x['user']} | {x['tables']:,} | {x['ms']:,.1f} ms | "
                     f"{x['budget_ms']:,.1f} ms |")
    lines += ["", "Every user: " + ", ".join(
        f"{x['user']} {x['tables']:,} in {x['ms']:,.0f} ms" for x in rows) + "; "
        + f"{sum(x['wrong'] for x in rows)} of {sum(min(20, x['tables']) + 20 for x in rows)} "
        "probed tables disagreed with `check`.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
