"""The whole-platform review on Spark in few jobs (issue #28): a non-recursive stratum costs
no Spark job (its plan stays lazy), a recursive one a job per semi-naive round, so a model's
review runs in a number of jobs set by its recursion, not by its number of strata (the
answers checked against the as-of answers at every revision); and the command line checks
its arguments (--since, --until, -o) before it starts Spark."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_spark_review import _expected, _parquet

import grantlog

ROOT = Path(__file__).resolve().parent.parent

#: a hierarchy three levels deep (a recursive closure), a DENY, and ``chain`` links of
#: non-recursive strata between the grants and the decision
HEAD = """
rel member(user: string, group: string).
rel grant(group: string, op: string, res: string).
rel deny(user: string, res: string).
rel parent(child: string, parent: string).
under(X, Y) :- parent(X, Y).
under(X, Z) :- parent(X, Y), under(Y, Z).
"""


def _model(chain: int) -> str:
    links = ["g0(G, O, R) :- grant(G, O, R)."]
    links += [f"g{i}(G, O, R) :- g{i - 1}(G, O, R), member(_, G)." for i in range(1, chain)]
    last = f"g{chain - 1}"
    return HEAD + "\n".join(links) + f"""
allowed(U, O, R) :- member(U, G), {last}(G, O, R), not deny(U, R).
allowed(U, O, R) :- member(U, G), {last}(G, O, P), under(R, P), not deny(U, R).
"""


def _history(r: Any) -> None:
    r.insert("parent", [("t1", "s1"), ("s1", "c1"), ("c1", "m1"), ("t2", "s1")])
    r.insert("member", [("u1", "g1"), ("u2", "g1")])
    r.insert("grant", [("g1", "read", "m1")])
    r.insert("deny", [("u2", "t1")])
    r.retract("parent", [("s1", "c1")])
    r.retract("deny", [("u2", "t1")])
    r.insert("parent", [("s1", "c1")])
    r.insert("grant", [("g1", "write", "s1")])
    r.retract("member", [("u1", "g1")])


def _jobs(spark: Any, tmp: Path, chain: int) -> int:
    from grantlog.spark_bridge.review import Jobs, review

    tmp.mkdir()
    program = grantlog.compile(_model(chain), filename=f"chain{chain}.gl")
    with grantlog.Reasoner(program, store=f"sqlite:///{tmp / 'h.db'}", create=True) as r:
        _history(r)
        head = r.journal.head()
        with Jobs(spark) as j:
            review(r, spark, str(tmp / "out"), 1, head)
        got, _ = _parquet(spark, tmp / "out")
        assert got == _expected(r, 1, head)
        assert {k for k, _, end in got if end is not None}  # something was lost
        return j.jobs


def test_the_jobs_are_the_recursions_rounds_not_the_strata(spark: Any, tmp_path: Path) -> None:
    """Eight strata between the grants and the decision, then the decision with a DENY:
    none of them costs a job; the hierarchy's closure (three levels: four semi-naive rounds)
    and the output (counted, written) are all the jobs. (Before: a job per base relation,
    per stratum and two or three per round: 26 here, 89 stages against 65.)"""
    jobs = _jobs(spark, tmp_path / "eight", 8)
    assert jobs <= 8, jobs


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``grantlog`` in a fresh interpreter, which says afterwards whether it imported
    pyspark (the review imports it only to start its session)."""
    code = ("import sys; from grantlog.cli import main; rc = main(sys.argv[1:]); "
            "print('pyspark imported' if 'pyspark' in sys.modules else 'no pyspark'); "
            "sys.exit(rc)")
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    tmp = tmp_path_factory.mktemp("cli")
    rules = tmp / "own.gl"
    rules.write_text(_model(1))
    url = f"sqlite:///{tmp / 's.db'}"
    with grantlog.Reasoner(grantlog.compile(paths=[str(rules)]), store=url, create=True) as r:
        _history(r)
    return str(rules), url


@pytest.mark.parametrize(("option", "value", "said"), [
    ("--since", "the day before yesterday", "`since` must be"),
    ("--until", "1", "`until` must be a revision of at least 3"),
])
def test_bad_bounds_fail_before_spark_starts(store: tuple[str, str], tmp_path: Path,
                                            option: str, value: str, said: str) -> None:
    rules, url = store
    extra = ["--since", "3"] if option == "--until" else []
    p = _cli("review", rules, "--spark", "--store", url, *extra, option, value,
             "-o", str(tmp_path / "out"))
    assert p.returncode == 2, p.stderr
    assert "error[bad-argument]" in p.stderr and said in p.stderr, p.stderr
    assert "no pyspark" in p.stdout
    assert not (tmp_path / "out").exists()


def test_an_output_that_is_not_a_review_is_left_alone(store: tuple[str, str],
                                                      tmp_path: Path) -> None:
    """Spark's overwrite would delete the directory's contents (or the file): refused."""
    rules, url = store
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    (tmp_path / "file.txt").write_text("keep me too")
    for target in (tmp_path / "mine", tmp_path / "file.txt"):
        p = _cli("review", rules, "--spark", "--store", url, "-o", str(target))
        assert p.returncode == 2, p.stderr
        assert "error[bad-argument]: `output` must be a new directory" in p.stderr, p.stderr
        assert "no pyspark" in p.stdout
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"
    assert (tmp_path / "file.txt").read_text() == "keep me too"
