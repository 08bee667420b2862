"""Cold start (issue 26, item 5): the planner's statistics cost a bounded number of passes over
the stored relations and of closure nodes walked, however many planning questions are asked;
a batch of written rows is checked a column at a time, with the same first diagnostic as the
row-by-row check."""

from __future__ import annotations

import pytest
from grantlog.engine.core import ir
from grantlog.engine.plan.stats import Statistics
from grantlog.grammar.diagnostics import GrantlogError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import grantlog


@pytest.fixture(scope="module")
def loaded(gravitino_3000: tuple) -> tuple[ir.Program, dict[str, dict[ir.Row, int]]]:
    program, db = gravitino_3000  # tests/conftest.py
    return program, db.full


def _questions(program: ir.Program, st: Statistics) -> int:
    """Every rule body ordered with each single head variable bound, and with all bound."""
    asked = 0
    for rule in program.rules:
        names = [t.name for t in rule.head.args if isinstance(t, ir.Var)]
        for bound in [set(), set(names), *({n} for n in names)]:
            st.order(rule.body, bound)
            asked += 1
    return asked


def test_statistics_answer_many_planning_questions_with_bounded_walks(loaded: tuple) -> None:
    program, full = loaded
    st = Statistics(program, full)
    asked = _questions(program, st)
    assert asked > 200
    nodes = {v for row in full["contains"] for v in row}
    # each closure node is walked at most once per direction, each stored relation passed
    # over at most once per direction of an edge or per set of constant columns
    assert 0 < st.walked <= 2 * len(nodes)
    assert st.scans <= 2 * len(program.relations)
    walked, scans = st.walked, st.scans
    assert _questions(program, st) == asked
    assert (st.walked, st.scans) == (walked, scans)  # asked again: nothing walked or scanned


def test_asking_the_same_questions_many_times_costs_what_asking_once_does(
        loaded: tuple) -> None:
    program, full = loaded
    st = Statistics(program, full)
    for rule in program.rules:
        st.order(rule.body, {t.name for t in rule.head.args if isinstance(t, ir.Var)})
    again = Statistics(program, full)
    for _ in range(5):
        for rule in program.rules:
            again.order(rule.body, {t.name for t in rule.head.args if isinstance(t, ir.Var)})
    assert again.walked == st.walked and again.scans == st.scans


_REL = "rel t(a: int, b: string, c).\n"

_good = st.one_of(st.text(max_size=6).filter(lambda s: "\x00" not in s),
                  st.integers(-(2**63), 2**63 - 1))
_bad = st.one_of(st.booleans(), st.floats(allow_nan=False), st.none(),
                 st.just("a\x00b"), st.just(2**63), st.just(-(2**63) - 1),
                 st.text(max_size=3), st.integers(-5, 5))


class _Str(str):
    pass


@st.composite
def _rows(draw: st.DrawFn) -> list[tuple[object, ...]]:
    n = draw(st.integers(0, 30))
    rows: list[tuple[object, ...]] = [(draw(st.integers(-(2**63), 2**63 - 1)),
                                       draw(st.text(max_size=5).filter(lambda s: "\x00" not in s)),
                                       draw(_good)) for _ in range(n)]
    for _ in range(draw(st.integers(0, 3))):  # bad values in random places
        if not rows:
            break
        i = draw(st.integers(0, len(rows) - 1))
        kind = draw(st.sampled_from(["value", "short", "long", "subclass"]))
        row = list(rows[i])
        if len(row) != 3:  # already shortened or lengthened
            continue
        if kind == "value":
            row[draw(st.integers(0, 2))] = draw(_bad)
        elif kind == "short":
            row = row[:draw(st.integers(0, 2))]
        elif kind == "long":
            row.append("x")
        else:
            row[1] = _Str("s")
        rows[i] = tuple(row)
    return rows


def _per_row(relation: ir.Relation, rows: list[tuple[object, ...]]) -> str | None:
    for row in rows:
        problem = ir.row_problem(relation, row)  # type: ignore[arg-type]
        if problem:
            return problem
    return None


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(_rows())
def test_batch_column_checks_give_the_per_row_diagnostic(rows: list[tuple[object, ...]]) -> None:
    program = grantlog.compile(_REL)
    relation = program.relations["t"]
    expected = _per_row(relation, rows)
    assert ir.rows_problem(relation, rows) == expected  # type: ignore[arg-type]
    r = grantlog.Reasoner(program)
    if expected is None:
        r.insert("t", rows)  # type: ignore[arg-type]
        assert r.rows("t") == set(rows)
    else:
        with pytest.raises(GrantlogError) as e:
            r.insert("t", rows)  # type: ignore[arg-type]
        d = e.value.diagnostics[0]
        assert (d.code, d.message) == ("bad-fact", expected)


def test_a_clean_batch_is_checked_column_by_column() -> None:
    relation = grantlog.compile(_REL).relations["t"]
    rows = [(i, f"s{i}", i if i % 2 else f"v{i}") for i in range(1000)]
    assert ir.rows_problem(relation, rows) is None
    rows[700] = (7, "s\x00", 1)
    assert ir.rows_problem(relation, rows) == ir.row_problem(relation, rows[700])
