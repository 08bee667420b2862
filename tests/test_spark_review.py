"""The whole-platform access review on Spark (issue #28, item 5): every (subject, operation,
resource) interval over a period of a store's history, written as Parquet, equals the
in-memory answers — the decision's rows as of every revision of the period, and the subject
timelines (engine/answer/timelines.py) — on the Gravitino example with a generated history of
grants, revokes and re-grants (any base fact of the decision's cone; DENY rows included, so
the negation is exercised), and on a small model of its own with a policy swap."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from conftest import examples
from grantlog.engine.compile.restrict import cone

import grantlog
from grantlog.store import ingest

ROOT = Path(__file__).resolve().parent.parent
Key = tuple[str, str, str]


def _history(r: Any, seed: int, n: int) -> None:
    """``n`` transactions over ``r``'s facts: retractions of facts, re-insertions of facts
    retracted earlier, and new facts made of the values of a relation's columns."""
    rng = random.Random(seed)
    program = r.program
    base = sorted(cone(program, [program.decision]) - set(program.derived))
    policy = {(f.rel, f.row) for f in program.facts}  # the rule files': not stored
    gone: list[tuple[str, tuple[Any, ...]]] = []
    for i in range(n):
        with r.transaction(author=f"a{i % 3}", reason=f"change {i}") as tx:
            for _ in range(rng.randint(1, 3)):
                stored = {x: sorted((row for row in r.rows(x) if (x, row) not in policy),
                                    key=str) for x in base}
                rel = rng.choice([x for x in base if stored[x]] or base)
                rows = stored[rel]
                kind = rng.random()
                if kind < 0.4 and rows:
                    row = rng.choice(rows)
                    tx.retract(rel, [row])
                    gone.append((rel, row))
                elif kind < 0.7 and gone:
                    back, row = gone.pop(rng.randrange(len(gone)))
                    tx.insert(back, [row])
                elif rows:
                    cols = list(zip(*rows, strict=True))
                    tx.insert(rel, [tuple(rng.choice(c) for c in cols)])


def _expected(r: Any, first: int, last: int) -> set[tuple[Key, int, int | None]]:
    """The intervals from the decision's rows as of each revision ``first..last``."""
    at = {rev: {tuple(map(str, row)) for row in
                (tuple(b.values()) for b in r.query(
                    f"{r.program.decision}(S, O, R)", at_revision=rev))}
          for rev in range(first, last + 1)}
    out: set[tuple[Key, int, int | None]] = set()
    for k in set().union(*at.values()):
        rev = first
        while rev <= last:
            if k in at[rev]:
                end = rev
                while end <= last and k in at[end]:
                    end += 1
                out.add((k, rev, end if end <= last else None))  # type: ignore[arg-type]
                rev = end
            rev += 1
    return out


def _parquet(spark: Any, path: Path) -> tuple[set[tuple[Key, int, int | None]], list[Any]]:
    rows = spark.read.parquet(str(path)).collect()
    return {((x.subject, x.operation, x.resource), x.from_revision, x.until_revision)
            for x in rows}, rows


@pytest.mark.slow  # minutes on a loaded machine; test_policies_and_recursion_and_deny is fast
def test_the_review_on_spark_equals_the_timelines(spark: Any, tmp_path: Path) -> None:
    from grantlog.spark_bridge.review import COLUMNS, review

    program = grantlog.compile(paths=[str(ROOT / "rules" / "gravitino.gl")])
    facts = ingest.read([str(ROOT / "examples" / "gravitino" / "facts.gl")], program)
    url = f"sqlite:///{tmp_path / 'h.db'}"
    with grantlog.Reasoner(program, store=url, create=True) as r:
        with r.transaction(author="setup") as tx:
            for rel, rows in facts.items():
                tx.insert(rel, rows)
        _history(r, seed=7, n=24)
        head = r.journal.head()
        since, until = 3, head - 2
        p, n = review(r, spark, str(tmp_path / "out"), since, until)
        got, rows = _parquet(spark, tmp_path / "out")
        want = _expected(r, since, until)
        assert got == want and n == len(want)
        assert {k for k, _, end in want if end is not None}  # something was lost ...
        assert {k for k, start, _ in want if start > since}  # ... and something gained
        # the in-memory subject timelines: the same intervals
        timelines = set()
        for s in sorted({k[0] for k, _, _ in want}):
            t = r.subject_timeline(s, since=since, until=until)
            for (op, res), ivs in t.intervals.items():
                for i in ivs:
                    timelines.add(((s, op, res), i.start.revision,
                                   None if i.end is None else i.end.revision))
        assert timelines == got
        # each edge carries its transaction's commit time
        x = next(x for x in rows if x.until_revision is not None and x.from_revision > since)
        assert tuple(rows[0].asDict()) == COLUMNS
        edges = {c.revision: c.committed_at for c in r.journal.transactions(0)}
        assert abs(x.from_time.timestamp() - edges[x.from_revision]) < 1e-3
        assert abs(x.until_time.timestamp() - edges[x.until_revision]) < 1e-3
        assert all(x.held_at_since == (x.from_revision == since) for x in rows)
        assert p.first == since and p.last == until


RULES = """
rel member(user: string, group: string).
rel grant(group: string, op: string, res: string).
rel deny(user: string, res: string).
rel parent(child: string, parent: string).
under(X, Y) :- parent(X, Y).
under(X, Z) :- parent(X, Y), under(Y, Z).
allowed(U, O, R) :- member(U, G), grant(G, O, R), not deny(U, R).
allowed(U, O, R) :- member(U, G), grant(G, O, P), under(R, P), not deny(U, R).
"""


def test_policies_and_recursion_and_deny(spark: Any, tmp_path: Path) -> None:
    """A hierarchy closure (recursion), a DENY (negation) and a policy swap in the period:
    the review equals the as-of answers at every revision."""
    from grantlog.spark_bridge.review import review

    program = grantlog.compile(RULES, filename="own.gl")
    url = f"sqlite:///{tmp_path / 'own.db'}"
    with grantlog.Reasoner(program, store=url, create=True) as r:
        r.insert("parent", [("t1", "s1"), ("s1", "c1"), ("t2", "s1")])
        r.insert("member", [("u1", "g1"), ("u2", "g1")])
        r.insert("grant", [("g1", "read", "c1")])
        r.insert("deny", [("u2", "t1")])
        r.retract("deny", [("u2", "t1")])
        r.retract("parent", [("s1", "c1")])
        r.insert("parent", [("s1", "c1")])
        r.insert("deny", [("u2", "t1"), ("u1", "s1")])
        swapped = grantlog.compile(RULES.replace(", not deny(U, R).", ".", 1), filename="v2.gl")
        r.store.put_policy(swapped)  # the first rule no longer honours a DENY
        r.retract("member", [("u1", "g1")])
        r.insert("member", [("u1", "g1")])
        head = r.journal.head()
        assert r.journal.policy_revisions()
        review(r, spark, str(tmp_path / "out"), 1, head)
        got, _ = _parquet(spark, tmp_path / "out")
        assert got == _expected(r, 1, head)


def test_generated_histories_equal_the_as_of_answers(spark: Any, tmp_path: Path) -> None:
    """A differential test on generated histories (retractions, re-insertions, new rows of
    the values met) over the own model: a closure, a DENY, and rows derived twice (a grant
    on a schema and on its catalog), whose overlapping intervals every stratum merges. The
    review equals the as-of answers at every revision, interval for interval."""
    from grantlog.spark_bridge.review import review

    program = grantlog.compile(RULES, filename="own.gl")
    for seed in (3, 5)[:examples(1, 2)]:  # the second seed in the long profile
        url = f"sqlite:///{tmp_path / f'gen{seed}.db'}"
        with grantlog.Reasoner(program, store=url, create=True) as r:
            r.insert("parent", [("t1", "s1"), ("t2", "s1"), ("s1", "c1"), ("s2", "c1")])
            r.insert("member", [("u1", "g1"), ("u2", "g2"), ("u3", "g1")])
            r.insert("grant", [("g1", "read", "c1"), ("g1", "read", "s1"),
                               ("g2", "write", "s2")])
            r.insert("deny", [("u3", "t2")])
            _history(r, seed=seed, n=10)
            head = r.journal.head()
            review(r, spark, str(tmp_path / f"out{seed}"), 2, head)
            got, _ = _parquet(spark, tmp_path / f"out{seed}")
            assert got == _expected(r, 2, head)


def test_the_command_line_asks_for_a_store_and_a_directory(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from grantlog.cli import main

    rules = tmp_path / "own.gl"
    rules.write_text(RULES)
    assert main(["review", str(rules), "--spark", "-o", str(tmp_path / "out")]) == 2
    assert "no --store or no -o DIR" in capsys.readouterr().err
    url = f"sqlite:///{tmp_path / 's.db'}"
    assert main(["review", str(rules), "--spark", "--store", url, "--create", "--subject",
                 "u1", "-o", str(tmp_path / "out")]) == 2
    assert "--subject, --resource or --role" in capsys.readouterr().err
    assert main(["review", str(rules), "--store", url, "--subject", "u1",
                 "--until", "3"]) == 2
    assert "--until is for" in capsys.readouterr().err
