"""`grantlog store dump` -> `grantlog store load` round-trips facts with validity intervals
(issue #28, item 6): in every dump format (`.gl` as `fact from "T" until "T".`, JSON Lines
with `valid_from`/`valid_until`, a directory with the store's `@valid` table), on SQLite and
PostgreSQL; a second load adds nothing and never a second interval of a fact."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import grantlog
from grantlog.cli import main

RULES = """
rel member(user: string, group: string).
rel grant(group: string, res: string).
allowed(U, "read", R) :- member(U, G), grant(G, R).
"""
LATER = "2999-01-01T00:00:00.000000Z"


def _world(url: str, rules: Path) -> None:
    program = grantlog.compile(rules.read_text(), filename=str(rules))
    with grantlog.Reasoner(program, store=url, create=True) as r:
        r.insert("grant", [("g0", "r0"), ("g1", "r0")])
        r.insert("member", [("u0", "g0")], valid_until="2030-01-01")
        r.insert("member", [("u1", "g0")], valid_from="2026-01-01T10:00:00Z",
                 valid_until=LATER)
        r.insert("member", [("u2", "g1")], valid_from=LATER)  # scheduled, not yet valid
        r.insert("member", [("u3", "g1")])


def _state(url: str, rules: Path) -> tuple[dict[str, list[tuple[str, ...]]], list[str]]:
    from grantlog.store import open_store

    program = grantlog.compile(rules.read_text(), filename=str(rules))
    st = open_store(url, program, create=False)
    try:
        _, rows = st.snapshot()
    finally:
        st.close()
    with grantlog.Reasoner(program, store=url) as r:
        who = r.who("read", "r0", now="2026-06-01")
    return {rel: sorted(map(tuple, v)) for rel, v in rows.items() if v}, who


@pytest.mark.parametrize("out", ["facts.gl", "facts.jsonl", "dir-parquet", "dir-csv",
                                 "dir-jsonl"])
def test_dump_then_load_keeps_the_intervals(out: str, tmp_path: Path,
                                            store_url: str) -> None:
    rules = tmp_path / "rules.gl"
    rules.write_text(RULES)
    src = f"sqlite:///{tmp_path / 'src.db'}"
    _world(src, rules)
    dumped = tmp_path / out
    fmt = ["--format", out.split("-")[1]] if out.startswith("dir-") else []
    assert main(["store", "dump", src, "-o", str(dumped), "--rules", str(rules), *fmt]) == 0
    if out == "facts.gl":
        text = dumped.read_text()
        assert 'member(u0, g0) until "2030-01-01T00:00:00.000000Z".\n' in text
        assert f'member(u2, g1) from "{LATER}".\n' in text
        assert "member(u3, g1).\n" in text and "@valid" not in text
    if out == "facts.jsonl":
        lines = [json.loads(x) for x in dumped.read_text().splitlines()]
        assert {"relation": "member", "row": ["u1", "g0"],
                "valid_from": "2026-01-01T10:00:00.000000Z", "valid_until": LATER} in lines
    assert main(["store", "load", store_url, str(dumped), "--rules", str(rules)]) == 0
    want, got = _state(src, rules), _state(store_url, rules)
    assert got == want
    assert got[1] == ["u0", "u1", "u3"]  # u2's interval starts later, u0's still holds
    # a second load adds nothing (no revision), and no second interval of a fact
    assert main(["store", "load", store_url, str(dumped), "--rules", str(rules)]) == 0
    assert _state(store_url, rules) == want


def test_a_load_never_adds_a_second_interval(tmp_path: Path) -> None:
    rules = tmp_path / "rules.gl"
    rules.write_text(RULES)
    url = f"sqlite:///{tmp_path / 's.db'}"
    _world(url, rules)
    before = _state(url, rules)
    facts = tmp_path / "more.gl"
    # stored with an interval, given permanent; stored permanent, given with one; a new one
    facts.write_text('member(u0, g0).\nmember(u3, g1) until "2030-01-01".\n'
                     'member(u4, g0) from "2026-01-01" until "2027-01-01".\n')
    assert main(["store", "load", url, str(facts), "--rules", str(rules)]) == 0
    state, who = _state(url, rules)
    assert who == ["u0", "u1", "u3", "u4"]
    added = [row for row in state["@valid"] if row not in before[0]["@valid"]]
    assert added == [("member", '["u4","g0"]', "2026-01-01T00:00:00.000000Z",
                      "2027-01-01T00:00:00.000000Z")]
    assert state["member"] == before[0]["member"]


def test_a_fact_given_twice_with_different_intervals_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rules = tmp_path / "rules.gl"
    rules.write_text(RULES)
    url = f"sqlite:///{tmp_path / 's.db'}"
    facts = tmp_path / "f.gl"
    facts.write_text('member(u0, g0) until "2030-01-01".\nmember(u0, g0) until "2031-01-01".\n')
    assert main(["store", "load", url, str(facts), "--rules", str(rules), "--create"]) == 2
    assert "with two validity intervals" in capsys.readouterr().err
    facts.write_text('member(u0, g0) until "2030-01-01".\nmember(u0, g0).\n')
    assert main(["store", "load", url, str(facts), "--rules", str(rules), "--create"]) == 2
    assert "with and without a validity interval" in capsys.readouterr().err


def test_bad_intervals_in_a_fact_file_point_at_the_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rules = tmp_path / "rules.gl"
    rules.write_text(RULES)
    url = f"sqlite:///{tmp_path / 's.db'}"
    facts = tmp_path / "f.gl"
    facts.write_text('grant(g0, r0).\nmember(u0, g0) from "2030-01-01" until "2029-01-01".\n'
                     'allowed(u0, read, r0) until "2030-01-01".\n')
    assert main(["store", "load", url, str(facts), "--rules", str(rules), "--create"]) == 2
    err = capsys.readouterr().err
    assert f"{facts}:2:1: error[empty-validity]" in err
    assert f"{facts}:3:" in err and "derived" in err
    bad = tmp_path / "@valid.csv"
    bad.write_text('relation,fact,valid_from,valid_until\nallowed,"[1]",,\n')
    assert main(["store", "load", url, str(bad), "--rules", str(rules), "--create"]) == 2
    assert "error[" in capsys.readouterr().err
