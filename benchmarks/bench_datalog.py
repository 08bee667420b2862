"""pytest-benchmark versions of the grantlog side of ``datalog_bench.py``, at the ``--quick``
sizes (10,000-node tree closure, 400-node random digraph closure, 1,000-node same-generation).

    .venv/bin/python -m pytest benchmarks/                 # or: -k tree, --benchmark-json=out.json

Not part of the normal test run (``testpaths = ["tests"]``); ``benchmarks/conftest.py`` makes
pytest collect ``bench_*.py`` here. pyDatalog is not timed here: use ``datalog_bench.py``.
"""

from __future__ import annotations

from typing import Any

import pytest
from datalog_bench import Case, Row, cases

import grantlog

CASES = cases(quick=True)


@pytest.fixture(scope="module", params=sorted(CASES))
def case(request: pytest.FixtureRequest) -> tuple[Case, list[Row], int]:
    c = CASES[request.param]
    facts: list[Row] = list(c.build())
    return c, facts, c.expected(facts)


def test_end_to_end(benchmark: Any, case: tuple[Case, list[Row], int]) -> None:
    """compile + insert + full evaluation (first ``rows`` read), as datalog_bench.py times it."""
    c, facts, expected = case

    def run() -> int:
        r = grantlog.Reasoner(grantlog.compile(c.grantlog))
        r.insert(c.base, facts)
        return len(r.rows(c.result))

    assert benchmark(run) == expected
    benchmark.extra_info["derived_facts"] = expected


def test_rebuild(benchmark: Any, case: tuple[Case, list[Row], int]) -> None:
    """Evaluation from scratch alone: ``rebuild()`` + the full read, on a Reasoner that already
    holds the facts (set up afresh, untimed, for every round)."""
    c, facts, expected = case
    program = grantlog.compile(c.grantlog)

    def setup() -> tuple[tuple[grantlog.Reasoner], dict[str, Any]]:
        r = grantlog.Reasoner(program)
        r.insert(c.base, facts)
        return (r,), {}

    def run(r: grantlog.Reasoner) -> int:
        r.rebuild()
        return len(r.rows(c.result))

    got = benchmark.pedantic(run, setup=setup, rounds=5, iterations=1)
    assert got == expected
    benchmark.extra_info["derived_facts"] = expected
