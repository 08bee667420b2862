"""Differential tests: the in-memory engine against the pyDatalog backend, an independent
evaluator (top-down SLG resolution instead of bottom-up semi-naive; engine/backends/pydatalog.py).

a. generated programs, goals and update sequences (tests/strategies.py) answered the same by
   both — or refused by pyDatalog with ``unsupported-feature``, which must stay rare;
b. every ``test`` block of the seed models (rules/*_test.gl) passes on pyDatalog too.

The case corpus runs on pyDatalog (and Spark) from tests/test_cases.py, as its `pydatalog`
backend, with pyDatalog's known gaps in ``KNOWN_GAPS["pydatalog"]`` there.
"""

from __future__ import annotations

import functools
import gc
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("pyDatalog")

import strategies as gen
from conftest import within
from grantlog.engine.backends.pydatalog import UNSUPPORTED, PyDatalogReasoner
from grantlog.engine.core import ir
from grantlog.engine.core.results import Changes
from hypothesis import event, given, note
from hypothesis import strategies as st

import grantlog

ROOT = Path(__file__).resolve().parent.parent
#: a generated program or update sequence must be answered within this (pyDatalog loops
#: forever on some recursive shapes when translated naively; a regression must fail, not hang)
TIMEOUT = 60.0


def _refused(err: grantlog.GrantlogError) -> bool:
    return bool(err.errors) and all(d.code == UNSUPPORTED for d in err.errors)


# ---------------------------------------------------------------------------------------------
# a. generated programs, goals and updates

#: how many generated programs pyDatalog answered and refused (for `_refusals_stay_rare`)
SEEN: Counter[str] = Counter()
#: the largest share of generated programs pyDatalog may refuse
MAX_REFUSED = 0.25


@pytest.fixture(scope="module", autouse=True)
def _frozen_heap() -> Iterator[None]:
    """pyDatalog leaves much cyclic garbage: keep the collector from rescanning everything
    the session already holds (pytest, hypothesis, compiled programs) each time (a third
    faster)."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@pytest.fixture(scope="module", autouse=True)
def _refusals_stay_rare() -> Iterator[None]:
    yield
    total = SEEN["answered"] + SEEN["refused"]
    if total >= 50:
        share = SEEN["refused"] / total
        assert share <= MAX_REFUSED, (
            f"pyDatalog refused {SEEN['refused']} of {total} generated programs ({share:.0%})")


def _oracle(program: grantlog.Program, watch: str | tuple[str, ...] = ()) -> (
        PyDatalogReasoner | None):
    """The pyDatalog reasoner, or None when it refuses the program (counted)."""
    try:
        oracle = PyDatalogReasoner(program, watch=watch)
    except grantlog.GrantlogError as err:
        assert _refused(err), str(err)
        SEEN["refused"] += 1
        event("pyDatalog refused the program")
        return None
    SEEN["answered"] += 1
    event("pyDatalog answered")
    return oracle


@given(data=st.data())
def test_generated_programs_and_goals_agree(data: st.DataObject) -> None:
    prog = data.draw(gen.programs(), label="program")
    goals = data.draw(st.lists(gen.goals(prog), min_size=1, max_size=3), label="goals")
    text = prog.text()
    note(text)
    program = grantlog.compile(text)
    memory = grantlog.Reasoner(program)
    oracle = _oracle(program)
    if oracle is None:
        return

    def answers() -> tuple[dict[str, set[ir.Row]], list[list[dict[str, ir.Value]]]]:
        return oracle.all_rows(), [oracle.query(g) for g in goals]

    rows, queried = within(TIMEOUT, answers)
    assert rows == memory.all_rows()
    for goal, got in zip(goals, queried, strict=True):
        assert got == memory.query(goal), goal


@given(data=st.data())
def test_generated_updates_report_the_same_changes(data: st.DataObject) -> None:
    prog = data.draw(gen.programs(), label="program")
    note(prog.text())
    program = grantlog.compile(prog.text())
    memory = grantlog.Reasoner(program, watch="all")
    oracle = _oracle(program, watch="all")
    if oracle is None:
        return
    for _ in range(data.draw(st.integers(1, 3), label="transactions")):
        ops = data.draw(gen.updates(prog), label="ops")
        with memory.transaction() as expected:
            for kind, rel, rows in ops:
                getattr(expected, kind)(rel, rows)

        def apply(ops: list[tuple[str, str, list[ir.Row]]] = ops) -> Changes:
            with oracle.transaction() as tx:
                for kind, rel, rows in ops:
                    getattr(tx, kind)(rel, rows)
            return tx.changes

        got = within(TIMEOUT, apply)
        assert got.by_relation == expected.changes.by_relation, ops
        assert within(TIMEOUT, oracle.all_rows) == memory.all_rows(), ops


# ---------------------------------------------------------------------------------------------
# b. the seed models' test blocks

MODELS = sorted(p.name.removesuffix("_test.gl") for p in (ROOT / "rules").glob("*_test.gl"))
#: model -> the feature that keeps pyDatalog from running its tests. Empty: all run.
SEED_GAPS: dict[str, str] = {}
#: every block runs by default; GRANTLOG_PYDATALOG_SEEDS=N runs every N-th block of each model
EVERY = max(1, int(os.environ.get("GRANTLOG_PYDATALOG_SEEDS", "1")))


@functools.cache
def _model(name: str) -> grantlog.Program:
    return grantlog.compile(paths=[ROOT / "rules" / f"{name}_test.gl"])


@functools.cache
def _blocks(name: str) -> list[ir.TestCase]:
    """The model's own test blocks (not its imports'), once per model: resolving each block's
    file for each of ~900 parametrized tests cost a third of this file's time."""
    test_file = (ROOT / "rules" / f"{name}_test.gl").resolve()
    return [t for t in _model(name).tests if Path(t.file).resolve() == test_file]


#: blocks that take pyDatalog 10-35 s each (the whole Gravitino world's consistency sweeps):
#: run in the long profile (`make test-long`); the other blocks of the model run always
LONG_BLOCKS = frozenset({
    ("gravitino", "list roles for object, reading 19: the roles on the object that the caller "
                  "sees"),
    ("gravitino", "consistency: no owner of m1 reaches into m2, and every allowed operation is in "
                  "api/2"),
    ("gravitino", "consistency: the metalake owner may perform every operation on every object in "
                  "it"),
})


def _seed_params() -> list[object]:
    out: list[object] = []
    for name in MODELS:
        for i, case in enumerate(_blocks(name)):
            if i % EVERY == 0:
                marks = [pytest.mark.slow] if (name, case.name) in LONG_BLOCKS else []
                out.append(pytest.param(name, i, id=f"{name}::{case.name}", marks=marks))
    return out


def test_the_long_blocks_exist() -> None:
    """Each block moved to the long profile is still a block of its model (a renamed block
    would otherwise run nowhere)."""
    for name, block in LONG_BLOCKS:
        assert block in {c.name for c in _blocks(name)}, (name, block)


def test_every_seed_model_runs_on_pydatalog() -> None:
    assert set(MODELS) >= {"cdap_entity", "cdap_parent", "gravitino", "onehouse", "three_tier"}
    assert set(SEED_GAPS) <= set(MODELS)
    for name in sorted(set(MODELS) - set(SEED_GAPS)):
        PyDatalogReasoner(_model(name))  # none of their features is refused


@pytest.mark.parametrize(("model", "index"), _seed_params())
def test_seed_model_block_on_pydatalog(model: str, index: int) -> None:
    if model in SEED_GAPS:
        with pytest.raises(grantlog.GrantlogError) as info:
            PyDatalogReasoner(_model(model))
        assert _refused(info.value), str(info.value)
        return
    case = _blocks(model)[index]

    def failures() -> list[str]:
        r = PyDatalogReasoner(_model(model))
        by_rel: dict[str, list[ir.Row]] = {}
        for f in case.facts:
            by_rel.setdefault(f.rel, []).append(f.row)
        for rel, rows in by_rel.items():
            r.insert(rel, rows)
        return [f"{e.span}: expected `{e.text}` {'not ' if e.negated else ''}to hold"
                for e in case.expects if r.ask(e.text) is e.negated]

    bad = within(TIMEOUT, failures)
    assert not bad, "\n".join(bad)
