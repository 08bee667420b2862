"""The peer engines of benchmarks/peers_bench.py agree with the workload's oracle on a small
Gravitino-shaped workload: stratified checks (owners, roles direct and through groups, DENY
winning, missing prerequisites, unregistered users), a grant and a revoke, and the bulk answer.

The engines come with the ``peers`` extra, which ``make test`` installs; one that is not
installed (a bare ``pip install -e .[dev]``) is skipped with its name; grantlog and pyDatalog
(in ``dev``) always run."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCH))

import gravitino_workload as gw  # noqa: E402
import peers_bench as pb  # noqa: E402
from peers import ENGINES  # noqa: E402

NEEDS = {"pydatalog": "pyDatalog", "clingo": "clingo", "cedar": "cedarpy", "casbin": "casbin",
         "oso": "oso"}


class Case:
    def __init__(self) -> None:
        self.w = w = gw.generate(600, seed=3, n_users=80, n_groups=12, n_roles=24, n_grants=900)
        self.oracle = gw.Oracle(w.facts)
        self.sample = pb.agreement_sample(w, 120, seed=11, pool=3000)
        self.expect = [self.oracle.decide(*q)[0] for q, _ in self.sample]
        self.schema = pb.bulk_schema(w)
        self.bulk = {(u, t) for u in w.users for t in w.schema_tables[self.schema]
                     if self.oracle.decide(u, "load_table", t)[0]}
        self.plan = pb.update_plan(w, 2, seed=12)


@pytest.fixture(scope="module")
def case() -> Case:
    return Case()


def test_the_sample_mixes_the_outcomes(case: Case) -> None:
    cats = {c.split(" / ")[1] for _, c in case.sample}
    assert {"allow: owner", "allow: role held directly", "allow: role held through a group",
            "deny: DENY wins", "deny: not added to the metalake"} <= cats
    assert any(c.startswith("deny: missing") or c.startswith("deny: DENY use_") for c in cats)
    assert {k for k, *_ in case.plan} == {"grant", "revoke"}


@pytest.mark.parametrize("name", list(ENGINES))
def test_engine_agrees_with_the_oracle(name: str, case: Case) -> None:
    if name in NEEDS:
        pytest.importorskip(NEEDS[name], reason=f"{NEEDS[name]} not installed (the peers "
                            "extra, which make test installs)")
    mod, _, cls = ENGINES[name].partition(":")
    engine = getattr(importlib.import_module(mod), cls)()
    engine.load(case.w.facts)

    got = [engine.check(*q) for q, _ in case.sample]
    bad = [(q, c) for (q, c), g, e in zip(case.sample, got, case.expect, strict=True) if g != e]
    assert not bad, bad[:5]

    if name != "pydatalog":  # its bulk query (user and table free) takes minutes
        found = engine.bulk(case.schema, sorted(case.w.users))
        assert found is None or found == case.bulk

    for kind, row, q, expect in case.plan:
        (engine.grant if kind == "grant" else engine.revoke)(row)
        assert engine.check(*q) is expect, (kind, row, q)
