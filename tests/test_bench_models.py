"""The benchmark models of issue 26 (benchmarks/models/): they lint clean and their test blocks
pass; renamed.gl is the shipped model renamed (regenerated, it is the same file); their
generated worlds decide as a from-scratch evaluation (tests/naive.py) does and as the shipped
model does on the same world; benchmarks/models_bench.py runs end to end on a tiny world."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from naive import naive_eval_text

import grantlog
from grantlog.cli import main

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "benchmarks" / "models"))

import gravitino_workload as gw  # noqa: E402
import models_bench  # noqa: E402
import worlds  # noqa: E402

Tiny = tuple[gw.Workload, dict[str, int]]

OWN = ("renamed", "unary", "twotrees")
#: a world small enough for the naive evaluator (16 tables, 9 users with the probes)
TINY = {"n_users": 6, "n_groups": 3, "n_roles": 10, "n_grants": 24}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("model", OWN)
def test_the_model_lints_clean_and_its_tests_pass(
        model: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(worlds.RULES[model])
    code, out, err = run(capsys, "lint", path)
    assert (code, out, err) == (0, "", "")
    code, out, err = run(capsys, "test", path)
    assert code == 0, out + err
    assert " 0 failed" in out + err
    program = grantlog.compile(paths=[path])
    assert program.tests, "the model has test blocks"
    assert list(program.sources) == [path], "self-contained: no import"


def test_renamed_is_the_shipped_model_with_every_relation_renamed() -> None:
    text = worlds.RULES["renamed"].read_text(encoding="utf-8")
    assert worlds.renamed_file_text(text[text.index(worlds.OWN_TESTS):]) == text
    shipped = grantlog.compile(paths=[str(worlds.RULES["shipped"])])
    renamed = grantlog.compile(paths=[str(worlds.RULES["renamed"])])
    assert sorted(worlds.RENAMES) == sorted(shipped.relations)
    assert sorted(worlds.RENAMES.values()) == sorted(renamed.relations)
    assert renamed.decision == worlds.RENAMES[shipped.decision]
    assert "@hierarchy(" not in text and list(renamed.sources) == [str(worlds.RULES["renamed"])]


@pytest.fixture(scope="module")
def tiny() -> Tiny:
    return worlds.workload(16, 2, **TINY)


def _reasoner(world: worlds.World) -> grantlog.Reasoner:
    r = grantlog.Reasoner(world.program())
    with r.transaction() as tx:
        for rel, rows in world.facts.items():
            tx.insert(rel, rows)
    return r


@pytest.mark.parametrize("model", ["unary", "twotrees"])
def test_the_world_decides_as_a_from_scratch_evaluation(model: str, tiny: Tiny) -> None:
    w, probes = tiny
    world = worlds.translate(model, w, probes)
    db = naive_eval_text(world.rules.read_text() + "".join(worlds.fact_lines(world.facts)))
    program = grantlog.compile(paths=[str(world.rules)])
    expected = {u: sorted(x for s, op, x in db[program.decision]
                          if s == u and op == world.load) for u in w.users}
    assert len(expected["probe_small"]) == 3 and len(expected["probe_all"]) == 16
    r = _reasoner(world)
    for u in w.users:
        assert list(r.list(u, world.load)) == expected[u], u
    for u in (*worlds.PROBES, w.users[1], w.users[2]):
        for t in w.tables:
            assert r.check(u, world.load, t).allowed == (t in expected[u]), (u, t)
    f = r.filter("probe_medium", world.load, "table")
    assert {t for t in w.tables if f.holds(t)} == set(expected["probe_medium"])


def test_every_model_lists_what_the_shipped_model_lists(tiny: Tiny) -> None:
    w, probes = tiny
    answers = {}
    for model in worlds.MODELS:
        world = worlds.translate(model, w, probes)
        r = _reasoner(world)
        answers[model] = {u: list(r.list(u, world.load)) for u in w.users}
    assert sum(len(a) for a in answers["shipped"].values()) > 16
    for model in (*OWN, "bare"):
        assert answers[model] == answers["shipped"], model


def test_the_fact_file_reads_back_as_the_rows(tiny: Tiny, tmp_path: Path) -> None:
    w, probes = tiny
    world = worlds.translate("twotrees", w, probes)
    path = worlds.write_facts(world, tmp_path / "twotrees.facts.gl")
    r = grantlog.Reasoner(grantlog.compile(paths=[str(world.rules)]))
    r.load([str(path)])
    for rel, rows in world.facts.items():
        assert r.rows(rel) == set(rows), rel


def test_models_bench_runs_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                      ) -> None:
    out = tmp_path / "res.json"
    models_bench.main(["--sizes", "60", "--tiny", "--checks", "40", "--rounds", "2",
                       "--repeats", "1", "--json", str(out)])
    text = capsys.readouterr().out
    assert text.startswith(models_bench.HEADING) and "### 60 tables" in text
    res = json.loads(out.read_text())
    per = res["sizes"]["60"]
    assert list(per) == list(worlds.MODELS)
    for model, x in per.items():
        for key, row in x["lists"].items():
            assert row["error"] is None, (model, key, row["error"])
            assert row["check_disagrees"] == 0, (model, key)
            assert row["same_as_shipped"] in (None, True), (model, key)
        assert x["lists"]["probe_all"]["tables"] == 60
        assert x["lists"]["probe_small"]["tables"] == 3
        assert all(f["error"] is None for f in x["filters"].values()), model
        assert x["checks"]["allowed"]["n"] + x["checks"]["denied"]["n"] == 40
        assert x["fast_paths"]["roles"]["source"] in ("declared", "recognised")
