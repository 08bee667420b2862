"""The conformance-shaped cases' fast paths (issue 26): ``eval --json``'s plain rows (no
encoder where no value needs an escape), the rows added to an index in one inline pass,
and ``eval`` without the collector; each against the plain way."""

from __future__ import annotations

import gc
import json
import random
from operator import itemgetter
from pathlib import Path

import pytest
from grantlog.engine.core.index import UniqueIndex, build_index
from grantlog.engine.core.ir import row_key, sorted_rows
from grantlog.engine.eval.database import Database
from hypothesis import given, settings
from hypothesis import strategies as st

from grantlog.cli import main
from grantlog.cli.rules import json_relations

#: values that need no escape in JSON, and some that do (a quote, a backslash, control
#: characters, a newline, NUL), and some that look like the text between rows
PLAIN = ["a", "b c", "é", "\u2028", "ü\u00ff", "", "x.y.z", "[", "],", "   ", "\x7f", "𝔘"]
ESCAPED = ['"', "\\", "\n", "\t", "\x01", "\x1f", "\x00", '",\n      "', "a\\u0000"]


def want(rows: dict[str, set[tuple[object, ...]]]) -> str:
    return json.dumps({k: list(map(list, sorted_rows(v))) for k, v in rows.items()},
                      indent=2, ensure_ascii=False)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(1, 3).flatmap(lambda w: st.tuples(*[st.one_of(
    st.integers(-3, 3), st.sampled_from(["", "a", "b", "a\x00", "10", "-1"]))
    for _ in range(w)])), max_size=20))
def test_sorted_rows_is_the_row_key_order(rows: list[tuple[object, ...]]) -> None:
    # integers and strings mixed in a column, or not; rows of several widths
    assert sorted_rows(rows) == sorted(rows, key=row_key)  # type: ignore[arg-type]


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(
    st.sampled_from(["r", "s", "ab\"c"]),
    st.integers(1, 3).flatmap(lambda w: st.sets(
        st.tuples(*[st.sampled_from(PLAIN + ESCAPED) for _ in range(w)]), max_size=12)),
    max_size=3))
def test_json_relations_plain_and_escaped_rows(rows: dict[str, set[tuple[object, ...]]]
                                               ) -> None:
    assert json_relations(rows) == want(rows)


def test_json_relations_plain_rows_at_scale() -> None:
    rnd = random.Random(3)
    rows = {"p": {(f"m{rnd.randrange(500)}.{rnd.randrange(9)}", f"h{rnd.randrange(900)}")
                  for _ in range(5000)},
            "q": {(f"v{i}", "é", f"f{i % 7}") for i in range(3000)},
            "one": {("only",)}}
    assert json_relations(rows) == want(rows)
    rows["q"].add(("x", 'say "hi"', "y"))  # one value with a quote: the encoder's path
    assert json_relations(rows) == want(rows)


rows_st = st.lists(st.tuples(st.integers(0, 30), st.sampled_from("abcdef")), unique=True,
                   max_size=300)


@settings(max_examples=150, deadline=None)
@given(rows_st, st.lists(rows_st, max_size=4), st.sampled_from([(0,), (1,), (0, 1)]))
def test_rows_added_in_rounds_keep_the_index_built_from_scratch(
        first: list[tuple[int, str]], rounds: list[list[tuple[int, str]]],
        cols: tuple[int, ...]) -> None:
    """Rounds of new rows (as the semi-naive loop adds them, many or few, to keys new and
    old) leave each index equal to one built over all the rows: the same keys in the same
    order, the same rows in each bucket in the same order."""
    db = Database(["r"])
    db.add("r", first, 0)
    db.index("r", cols)
    seen = dict.fromkeys(first)
    for level, batch in enumerate(rounds, 1):
        new = [r for r in batch if r not in seen]
        seen.update(dict.fromkeys(new))
        db.add("r", new, level)
    ix = db.index("r", cols)
    ref = build_index(list(seen), itemgetter(*cols))
    assert list(ix) == list(ref)
    assert all(list(ix.get(k)) == list(ref.get(k)) for k in ref)
    if type(ix) is not UniqueIndex:
        assert all((type(b) is tuple and len(b) == 1) or (type(b) is dict and len(b) > 1)
                   for b in ix.values())


HMMER = """\
pointsTo(V, H) :- new(V, H).
pointsTo(V, H) :- assign(V, W), pointsTo(W, H).
pointsTo(V, H) :- load(V, B, F), pointsTo(B, G), heapPointsTo(G, F, H).
heapPointsTo(G, F, H) :- store(B, F, W), pointsTo(B, G), pointsTo(W, H).
alias(X, Y) :- load(_, X, F), store(Y, F, _), pointsTo(X, H), pointsTo(Y, H), X != Y.
"""


def test_eval_json_leaves_the_collector_as_it_was(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """``eval`` runs without the collector and restores it; its text is json.dumps' (a
    recursive stratum over rows of strings, some with values needing escapes)."""
    rnd = random.Random(5)
    lines = []
    for i in range(400):
        lines.append(f'new("v{i}", "h{i % 37}").')
        lines.append(f'assign("v{rnd.randrange(400)}", "v{i}").')
        lines.append(f'store("v{rnd.randrange(400)}", "f{i % 5}", "v{rnd.randrange(400)}").')
        lines.append(f'load("v{rnd.randrange(400)}", "v{rnd.randrange(400)}", "f{i % 5}").')
    lines.append('new("q\\"uote", "h\\\\1").')
    rules = tmp_path / "h.gl"
    rules.write_text(HMMER + "\n".join(lines) + "\n", encoding="utf-8")
    assert gc.isenabled()
    assert main(["eval", str(rules), "--json"]) == 0
    assert gc.isenabled()
    got = json.loads(capsys.readouterr().out)
    assert len(got["pointsTo"]) > 400 and ["q\"uote", "h\\1"] in got["pointsTo"]
    assert got == {k: sorted(v) for k, v in got.items()}
    gc.disable()
    try:
        assert main(["eval", str(rules), "--json"]) == 0
        assert not gc.isenabled()
    finally:
        gc.enable()
    assert json.loads(capsys.readouterr().out) == got
