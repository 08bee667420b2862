"""``grantlog plan GOAL`` (engine/answer/plan.py): the plan a query runs, as readable lines.

One golden per shipped model, for its typical decision with its example facts:
tests/golden/plan/<model>.txt. A change to the planner, the statistics, the demand strategy
or the model shows there as a diff to review. Rewrite with ``GRANTLOG_UPDATE_GOLDENS=1``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ROOT, check_golden
from grantlog.engine import compile_program
from grantlog.engine.answer.plan import describe
from grantlog.engine.answer.reasoner import Reasoner
from grantlog.rules import models

from grantlog.cli import main

#: each shipped model's typical decision (subject, operation, resource), allowed by its
#: example facts (examples/<model>/README.md)
DECISIONS = {
    "cdap_entity": ("maria", "deploy", "marketing.churn_model"),
    "cdap_parent": ("sam", "start", "marketing.click_analytics.sessionizer"),
    "gravitino": ("alice", "load_table", "m1.lakehouse.sales.orders"),
    "gravitino_data": ("alice", "select_table", "m1.lakehouse.sales.orders"),
    "onehouse": ("carol", "create_compaction", "orders"),
    "three_tier": ("bob", "read", "INV-2024-0001"),
}


def _paths(model: str) -> list[str]:
    """The model's rule file and its example facts, relative to the repository (as goldens
    show them)."""
    paths = [f"rules/{model}.gl"]
    if (ROOT / "examples" / model / "facts.gl").exists():
        paths.append(f"examples/{model}/facts.gl")
    return paths


def _goal(model: str) -> str:
    return "allowed({})".format(", ".join(json.dumps(v) for v in DECISIONS[model]))


def test_every_shipped_model_has_a_golden_goal() -> None:
    assert set(DECISIONS) == {m.name for m in models()}


@pytest.mark.parametrize("model", sorted(DECISIONS))
def test_plan_golden(model: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    r = Reasoner(compile_program(None, _paths(model)))
    assert r.check(*DECISIONS[model]).allowed  # the goal is one the model decides
    report = describe(r, _goal(model))
    text = "\n".join(report.lines()) + "\n"
    check_golden(f"plan/{model}.txt", text)
    assert json.loads(json.dumps(report.to_dict()))["goal"] == _goal(model)


def test_the_command_prints_the_report(monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(ROOT)
    goal = _goal("gravitino")
    report = describe(compile_program(None, _paths("gravitino")), goal)
    assert main(["plan", *_paths("gravitino"), goal]) == 0
    assert capsys.readouterr().out == "\n".join(report.lines()) + "\n"
    assert main(["plan", "--json", *_paths("gravitino"), goal]) == 0
    assert json.loads(capsys.readouterr().out) == report.to_dict()
    # the usual inputs: a shipped model by name, facts with --facts
    assert main(["plan", "--model", "gravitino", "--facts", "examples/gravitino/facts.gl",
                 goal]) == 0
    assert capsys.readouterr().out.splitlines()[:4] == report.lines()[:4]
    assert main(["plan", *_paths("gravitino"), "allowed(alice"]) == 2  # a bad goal
    assert "error" in capsys.readouterr().err


GRAPH = """\
big(X, Y) :- seed(X, Y).
seed(1, 1). seed(2, 1). seed(3, 1). seed(4, 2). seed(5, 2). seed(6, 3).
small(3).
edge(a, b). edge(b, c).
reach(X, Y) :- edge(X, Y).
reach(X, Y) :- reach(X, Z), edge(Z, Y).
"""


def test_join_order_follows_the_statistics(tmp_path: Path) -> None:
    f = tmp_path / "g.gl"
    f.write_text(GRAPH)
    report = describe(compile_program(None, [str(f)]), "big(X, Y), small(Y)")
    first, second = report.order
    assert (first.kind, first.rel, first.binds) == ("scan", "small", ("Y",))
    assert (second.kind, second.rel, second.cols) == ("lookup", "big", (1,))
    assert "seed(1)" in report.indexes  # big: a view of seed, looked up on demand
    text = "\n".join(report.lines())
    assert "  1. scan small()  small(Y)  binds Y  ~1 rows" in text
    assert "statistics:" in text and "small  1 rows, distinct (1)" in text


def test_closures_and_materialized_relations(tmp_path: Path) -> None:
    f = tmp_path / "g.gl"
    f.write_text(GRAPH)
    program = compile_program(None, [str(f)])
    report = describe(program, 'reach(a, Y)')
    relations = dict(report.relations)
    # a recursive relation outside the decision relation's reach is materialized, and the
    # plan says why (engine/compile/materialize.py's policy; an annotation shows no reason)
    assert relations == {"reach": "materialized: policy: recursive, not built on the "
                                  "decision relation"}
    assert report.lookups == ()
    assert report.indexes == ("reach(0)",)


def test_a_virtual_closure_is_walked(tmp_path: Path) -> None:
    f = tmp_path / "g.gl"
    f.write_text("@demand rel reach(x: string, y: string).\n"
                 "edge(a, b). edge(b, c).\n"
                 "reach(X, Y) :- edge(X, Y).\n"
                 "reach(X, Y) :- reach(X, Z), edge(Z, Y).\n"
                 "allowed(U, P, O) :- reach(U, O), P = read.\n")
    report = describe(compile_program(None, [str(f)]), 'allowed(a, read, c)')
    assert dict(report.closures) == {"reach": "edge"}
    how = {(lk.rel, lk.cols): lk.how for lk in report.lookups}
    walks = [h for (rel, _), h in how.items() if rel == "reach"]
    assert walks and all("walk over edge" in h or "from reach(1)" in h for h in walks)
    assert dict(report.relations)["reach"] == "on demand: closure walk"
    assert "statistics:" in "\n".join(report.lines())
