#!/usr/bin/env python
"""What progress reporting (engine/core/progress.py, issue 26 item 4) costs.

Usage (from the repository root)::

    .venv/bin/python benchmarks/progress_bench.py                 # 10k tables, 5 rounds
    .venv/bin/python benchmarks/progress_bench.py --size 100000 --rounds 7

Three figures, each measured back to back in one process, alternating the variants round by
round (medians over the rounds):

* **transactions** (the fast path: a grant inserted and retracted, then a check, on the
  Gravitino-shaped workload of benchmarks/gravitino_workload.py): the code as it is, progress not
  shown, against the same code with the instrumentation stripped (``progress.each`` the identity,
  ``progress.task`` a shared null context): the overhead when nothing is shown;
* **evaluation** (a reasoner's first evaluation of the loaded workload, materialized strata):
  not shown, stripped, and shown (bars drawn to a file, as ``--progress`` off a terminal);
* **a task not shown**: one ``with progress.task(...)`` and one ``advance`` call, in ns.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import sys
import time
import timeit
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import gravitino_workload as gw  # noqa: E402
from grantlog.engine.core import progress  # noqa: E402
from grantlog.engine.eval import seminaive  # noqa: E402
from harness import log  # noqa: E402

import grantlog  # noqa: E402

RULES = HERE.parent / "rules" / "gravitino.gl"


@contextlib.contextmanager
def stripped() -> Iterator[None]:
    """The instrumentation removed: what the code cost before it was added."""
    quiet = contextlib.nullcontext(progress.nothing)
    saved = progress.each, seminaive.task
    progress.each = lambda _d, items, *_a, **_k: items  # type: ignore[assignment]
    seminaive.task = lambda *_a, **_k: quiet  # type: ignore[assignment]
    try:
        yield
    finally:
        progress.each, seminaive.task = saved  # type: ignore[assignment]


def shown() -> contextlib.AbstractContextManager[bool]:
    return progress.reporting(True, io.StringIO())


VARIANTS: dict[str, Callable[[], contextlib.AbstractContextManager[Any]]] = {
    "not shown": contextlib.nullcontext, "stripped": stripped, "shown": shown}


def transactions(r: Any, grants: list[tuple[Any, ...]], check: tuple[str, str, str]) -> float:
    """Seconds per transaction (insert, retract) with a check after each."""
    t0 = time.perf_counter()
    for row in grants:
        r.insert("privilege", [row])
        r.check(*check)
        r.retract("privilege", [row])
        r.check(*check)
    return (time.perf_counter() - t0) / (2 * len(grants))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=10_000, help="tables (default 10000)")
    ap.add_argument("--rounds", type=int, default=5, help="rounds per variant (default 5)")
    ap.add_argument("--updates", type=int, default=200, help="grants per round (default 200)")
    args = ap.parse_args()
    import os

    log(f"load average {os.getloadavg()[0]:.2f}")
    program = grantlog.compile(paths=[str(RULES)])
    w = gw.generate(args.size, seed=1)
    sampler = gw.Sampler(w, seed=2)
    check = sampler.one("load_table")

    def loaded() -> Any:
        r = grantlog.Reasoner(program)
        with r.transaction() as tx:
            for rel, rows in w.facts.items():
                tx.insert(rel, rows)
        return r

    # -- evaluation: a fresh reasoner's first evaluation ------------------------------------------
    evals: dict[str, list[float]] = {k: [] for k in VARIANTS}
    for _ in range(args.rounds):
        for name, variant in VARIANTS.items():
            r = grantlog.Reasoner(program)
            r.seed(w.facts, 1)
            with variant():
                t0 = time.perf_counter()
                r.database()
                evals[name].append(time.perf_counter() - t0)
    # -- transactions ---------------------------------------------------------------------------
    r = loaded()
    r.check(*check)
    rng = __import__("random").Random(5)
    roles, tables = w.roles[4:], w.tables
    txs: dict[str, list[float]] = {k: [] for k in VARIANTS}
    for _ in range(args.rounds):
        for name, variant in VARIANTS.items():
            grants = [(rng.choice(roles), "select_table", rng.choice(tables), "allow")
                      for _ in range(args.updates)]
            with variant():
                txs[name].append(transactions(r, grants, check))
    # -- a task not shown -----------------------------------------------------------------------

    def one() -> None:
        with progress.task("x", 1) as advance:
            advance(1)

    n = 200_000
    task_ns = min(timeit.repeat(one, number=n, repeat=5)) / n * 1e9

    def med(xs: list[float], scale: float) -> str:
        return f"{statistics.median(xs) * scale:.1f}"

    print(f"\nGravitino-shaped, {args.size:,} tables, {args.rounds} rounds (medians); load "
          f"average {os.getloadavg()[0]:.2f}")
    print("| measure | not shown | stripped (before) | shown | not shown / stripped |")
    print("|---|---|---|---|---|")
    print(f"| first evaluation, ms | {med(evals['not shown'], 1e3)} | "
          f"{med(evals['stripped'], 1e3)} | {med(evals['shown'], 1e3)} | "
          f"{statistics.median(evals['not shown']) / statistics.median(evals['stripped']):.3f} |")
    print(f"| transaction + check, µs | {med(txs['not shown'], 1e6)} | "
          f"{med(txs['stripped'], 1e6)} | {med(txs['shown'], 1e6)} | "
          f"{statistics.median(txs['not shown']) / statistics.median(txs['stripped']):.3f} |")
    print(f"\na task not shown (with + one advance): {task_ns:.0f} ns")


if __name__ == "__main__":
    main()
