"""Fast fact loading: the fact-line fast path parses exactly as the full parser (spans
included), bad lines keep exact positions, and every file format round-trips."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from grantlog.grammar.facts import parse_fast
from grantlog.grammar.parser import parse
from hypothesis import given
from hypothesis import strategies as st

import grantlog
from grantlog.store import ingest

ROOT = Path(__file__).resolve().parent.parent

RULES = """
rel member(user: string, group: string).
rel level(user: string, n: int).
rel tag(x: any, y: any).
rel flag().
"""
PROGRAM = grantlog.compile(RULES, filename="ingest_rules.gl")

ident = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True).filter(
    lambda s: s not in {"not", "rel", "import", "test", "expect"})
string = st.text(st.characters(blacklist_categories=("Cs", "Cc")) | st.sampled_from(
    ['"', "\\", "\n", "\t"]), max_size=6)


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") \
        .replace("\t", "\\t") + '"'


const = st.one_of(ident, string.map(_quote), st.integers(-10**20, 10**20).map(str))
space = st.sampled_from(["", " ", "  ", "\t"])


@st.composite
def line(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["fact", "fact", "fact", "rule", "comment", "blank", "decl",
                                 "multi", "test", "doc"]))
    sp = draw(space)
    if kind == "fact":
        args = draw(st.lists(const, max_size=3))
        rel = draw(ident)
        inner = f"({sp}{(',' + draw(space)).join(args)}{sp})" if args else draw(
            st.sampled_from(["", "()"]))
        tail = draw(st.sampled_from(["", " // note", "  "]))
        return f"{sp}{rel}{inner}{sp}.{tail}"
    if kind == "rule":
        return f"{draw(ident)}(X) :- {draw(ident)}(X)."
    if kind == "comment":
        return f"{sp}// {draw(ident)}"
    if kind == "blank":
        return sp
    if kind == "decl":
        return f"rel {draw(ident)}(a: string)."
    if kind == "multi":
        return f"{draw(ident)}(X) :-\n  {draw(ident)}(a).\n{draw(ident)}(b,\n c)."
    if kind == "doc":
        return f"/// doc\n{draw(ident)}(a)."
    return f'test "t" {{\n  {draw(ident)}(a).\n  expect {draw(ident)}(a).\n}}'


def _shape(mod: object) -> list[object]:
    """Statements with every span (spans are left out of ``==``)."""
    out: list[object] = []
    for s in mod.statements:  # type: ignore[attr-defined]
        out.append((s, repr(s.span)))
        head = getattr(s, "head", None)
        if head is not None:
            out.append((repr(head.span), [repr(a.span) for a in head.args]))
    return out


@given(st.lists(line(), max_size=12))
def test_fast_path_parses_as_the_parser(lines: list[str]) -> None:
    text = "\n".join(lines) + "\n"
    try:
        slow = parse(text, "f.gl")
    except grantlog.GrantlogError as e:
        with pytest.raises(grantlog.GrantlogError) as info:
            parse_fast(text, "f.gl")
        assert [str(d) for d in info.value.diagnostics] == [str(d) for d in e.diagnostics]
        return
    fast = parse_fast(text, "f.gl")
    assert _shape(fast) == _shape(slow)
    assert fast.extents == slow.extents


def test_read_gl_equals_compiling_the_facts() -> None:
    facts = ROOT / "examples" / "gravitino" / "facts.gl"
    program = grantlog.compile(paths=[str(ROOT / "rules" / "gravitino.gl")])
    got = ingest.read([str(facts)], program)
    compiled = grantlog.compile(paths=[str(ROOT / "rules" / "gravitino.gl"), str(facts)])
    own = {(f.rel, f.row) for f in program.facts}
    want: dict[str, set[tuple[object, ...]]] = {}
    for f in compiled.facts:
        if (f.rel, f.row) not in own:
            want.setdefault(f.rel, set()).add(f.row)
    assert {r: set(v) for r, v in got.items()} == want


def test_bad_fact_lines_are_reported_with_positions(tmp_path: Path, golden: object) -> None:
    path = tmp_path / "bad.gl"
    path.write_text('member(alice, eng).\nlevel(bob, "three").\n  membr(carol, eng).\n'
                    "member(dave).\nlevel(erin, 4).\nok(X) :- member(X, eng).\n"
                    'tag(1, "x").\nmember(frank,\n  eng).\n', encoding="utf-8")
    with pytest.raises(grantlog.GrantlogError) as info:
        ingest.read([str(path)], PROGRAM)
    text = str(info.value).replace(str(tmp_path), "<tmp>")
    golden("store/bad_facts.txt", text)  # type: ignore[operator]
    codes = [(d.code, d.span.line, d.span.col) for d in info.value.diagnostics]
    assert codes == [("bad-fact", 2, 1), ("bad-fact", 3, 3), ("bad-fact", 4, 1),
                     ("not-a-fact", 6, 1)]


@pytest.mark.parametrize("fmt", ["gl", "csv", "jsonl", "parquet"])
def test_formats_round_trip(tmp_path: Path, fmt: str) -> None:
    rows = {"member": [("alice", "eng"), ("b,ob", 'q"uote'), ("ünï", "x\ny")],
            "level": [("alice", 3), ("bob", -12)], "flag": [()]}
    if fmt != "parquet":
        rows["tag"] = [("x", 1), (1, "x"), ("1", 1)]
    out = str(tmp_path / ("facts.gl" if fmt == "gl" else "dir"))
    ingest.dump(rows, PROGRAM, out, fmt)
    got = ingest.read([out], PROGRAM)
    if fmt == "csv":  # CSV has no types: untyped columns come back as strings
        rows["tag"] = [("x", "1"), ("1", "x"), ("1", "1")]
    if fmt == "csv" or fmt == "parquet":
        rows.pop("flag")  # a relation without columns has no rows to write
        got.pop("flag", None)
    assert {r: set(v) for r, v in got.items()} == {r: set(v) for r, v in rows.items()}


def test_csv_and_jsonl_errors_name_the_line(tmp_path: Path) -> None:
    (tmp_path / "level.csv").write_text("user,n\nalice,3\nbob,x\ncarol\n", encoding="utf-8")
    with pytest.raises(grantlog.GrantlogError) as info:
        ingest.read([str(tmp_path / "level.csv")], PROGRAM)
    assert [(d.code, d.span.line) for d in info.value.diagnostics] == [("bad-fact", 3),
                                                                        ("bad-fact", 4)]
    (tmp_path / "x.jsonl").write_text(
        json.dumps({"relation": "member", "row": ["a", "b"]}) + "\n"
        + json.dumps({"relation": "level", "user": "a", "n": 2}) + "\n"
        + "[1, 2]\n{bad\n", encoding="utf-8")
    with pytest.raises(grantlog.GrantlogError) as info:
        ingest.read([str(tmp_path / "x.jsonl")], PROGRAM)
    assert [(d.code, d.span.line) for d in info.value.diagnostics] == [("bad-fact", 3),
                                                                        ("bad-fact", 4)]
    with pytest.raises(grantlog.GrantlogError) as info:
        ingest.read([str(tmp_path / "nope.csv")], PROGRAM)
    assert info.value.diagnostics[0].code == "file-not-found"
