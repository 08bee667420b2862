"""One reader for facts (issue 26, item 2): plain fact lines are read into rows per relation
(grammar/facts.py ``read_facts``) by compile, eval, check, test and the store; the rows, the
spans made on demand and every diagnostic are those of the full parser and of the per-fact
checks, for any file (escapes, comments, facts over several lines, doc comments, numbers,
unicode, CRLF, a byte-order mark), also when the file is read in many chunks."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from grantlog.engine.compile.checks import Unit, run_checks
from grantlog.engine.compile.loader import load
from grantlog.engine.core.facts import Facts
from grantlog.grammar import ast, facts
from grantlog.grammar.diagnostics import GrantlogError
from grantlog.grammar.parser import parse
from hypothesis import given, settings
from hypothesis import strategies as st

import grantlog
from grantlog.cli.main import main
from grantlog.store import ingest

KEYWORDS = ["not", "rel", "import", "test", "expect"]
ident = st.from_regex(r"[a-z][a-z0-9_]{0,4}", fullmatch=True).filter(
    lambda s: s not in KEYWORDS)
rel_name = st.sampled_from(["p", "q", "r", "s", "member", "lvl", "derived"])
string = st.text(st.characters(blacklist_categories=("Cs", "Cc")) | st.sampled_from(
    ['"', "\\", "\n", "\t", ",", ")", "{", "}", "é", "名"]), max_size=6) | st.sampled_from(
    ["a not b", "x, rel", ""])


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") \
        .replace("\t", "\\t") + '"'


const = st.one_of(ident, ident, string.map(_quote), st.sampled_from(KEYWORDS),
                  st.integers(-10**20, 10**20).map(str), st.integers(-99, 99).map(str))
space = st.sampled_from(["", " ", "\t"])


@st.composite
def line(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["fact"] * 8 + [
        "rule", "comment", "blank", "decl", "multi", "doc", "bad", "open", "typed", "typed"]))
    sp = draw(space)
    if kind == "fact":
        args = draw(st.lists(const, max_size=3))
        inner = f"({sp}{(',' + draw(space)).join(args)}{sp})" if args else draw(
            st.sampled_from(["", "()"]))
        tail = draw(st.sampled_from(["", " // note", "  ", "\r", " // a ) . {"]))
        return f"{sp}{draw(rel_name)}{inner}{sp}.{tail}"
    if kind == "rule":
        return f"derived(X) :- {draw(rel_name)}(X)."
    if kind == "comment":
        return f"{sp}// {draw(ident)}"
    if kind == "blank":
        return sp
    if kind == "decl":
        return draw(st.sampled_from(["rel lvl(who: string, n: int).",
                                     "@writable rel derived(x: any).", "rel member(a, b)."]))
    if kind == "multi":
        return f"{draw(rel_name)}(a,\n  {draw(const)})."
    if kind == "doc":
        return f"/// doc\n{draw(rel_name)}(a)."
    if kind == "bad":
        return draw(st.sampled_from(["p(a", "p(a) q(b).", 'p("x).', "p(X).", "p(a,)."]))
    if kind == "typed":  # lvl(who: string, n: int)
        return f"lvl({draw(const)}, {draw(const)})."
    if kind == "open":
        return f'test "t{draw(ident)}" {{\n  {draw(rel_name)}(a).\n  expect p(a).\n}}'
    raise AssertionError(kind)


@st.composite
def fact_file(draw: st.DrawFn) -> str:
    text = "\n".join(draw(st.lists(line(), max_size=14)))
    text += draw(st.sampled_from(["", "\n", "\r\n"]))
    if draw(st.booleans()):
        text = text.replace("\n", "\r\n")
    if draw(st.integers(0, 5)) == 0:
        text = "\ufeff" + text
    return text


def _shape(mod: ast.Module) -> list[object]:
    """Statements with every span (spans are left out of ``==``)."""
    out: list[object] = []
    for s in mod.statements:
        out.append((s, repr(s.span)))
        head = getattr(s, "head", None)
        if head is not None:
            out.append((repr(head.span), [repr(a.span) for a in head.args]))
    return out


def _parser_facts(mod: ast.Module) -> dict[str, list[tuple[int, object, str, list[str]]]]:
    """The parser's top-level facts per relation: (line, row, atom span, argument spans)."""
    out: dict[str, list[tuple[int, object, str, list[str]]]] = {}
    for s in mod.statements:
        if isinstance(s, ast.Clause) and s.is_fact:
            row = tuple(a.value for a in s.head.args if isinstance(a, ast.Const))
            out.setdefault(s.head.rel, []).append(
                (s.span.line, row, repr(s.head.span), [repr(a.span) for a in s.head.args]))
    return out


def _reader_facts(mod: ast.Module, table: facts.FactTable
                  ) -> dict[str, list[tuple[int, object, str, list[str]]]]:
    got: dict[str, list[tuple[int, object, str, list[str]]]] = {}
    for rel, rows in table.rows.items():
        for i, row in enumerate(rows):
            c = table.clause(rel, i)
            assert repr(table.atom_span(rel, i)) == repr(c.head.span)
            got.setdefault(rel, []).append((table.lines[rel][i], row, repr(c.head.span),
                                            [repr(a.span) for a in c.head.args]))
    for rel, items in _parser_facts(mod).items():
        got.setdefault(rel, []).extend(items)
    return {rel: sorted(items, key=lambda x: x[0]) for rel, items in got.items()}


def _diags(e: GrantlogError) -> list[str]:
    return [str(d) for d in e.diagnostics]


@contextmanager
def chunks_of(size: int) -> Iterator[None]:
    """The reader reading ``size`` characters at a time (chunk boundaries in every file)."""
    was = facts.CHUNK
    facts.CHUNK = size
    try:
        yield
    finally:
        facts.CHUNK = was


@pytest.mark.parametrize("chunk", [facts.CHUNK, 16], ids=["one-chunk", "16-char-chunks"])
@settings(max_examples=150, deadline=None)
@given(text=fact_file())
def test_reader_gives_the_parsers_rows_spans_and_errors(chunk: int, text: str) -> None:
    with chunks_of(chunk):
        _same_as_the_parser(text)


def _same_as_the_parser(text: str) -> None:
    try:
        slow = parse(text.removeprefix("\ufeff"), "f.gl")
    except GrantlogError as e:
        with pytest.raises(GrantlogError) as info:
            facts.read_facts(text, "f.gl")
        assert _diags(info.value) == _diags(e)
        with pytest.raises(GrantlogError) as again:
            facts.parse_fast(text, "f.gl")
        assert _diags(again.value) == _diags(e)
        return
    mod, table = facts.read_facts(text, "f.gl")
    assert _reader_facts(mod, table) == {
        rel: sorted(items, key=lambda x: x[0]) for rel, items in _parser_facts(slow).items()}
    assert not any(isinstance(s, ast.Clause) and s.is_fact and s.span.line in
                   set(table.lines.get(s.head.rel, ())) for s in mod.statements)
    fast = facts.parse_fast(text, "f.gl")
    assert _shape(fast) == _shape(slow)
    assert fast.extents == slow.extents


RULES = """\
rel lvl(who: string, n: int).
rel p(x: any).
@writable rel open(x: any).
derived(X) :- p(X).
open(X) :- p(X).
"""


@settings(max_examples=80, deadline=None)
@given(text=fact_file())
def test_batch_checks_report_what_the_per_fact_checks_report(
        tmp_path_factory: pytest.TempPathFactory, text: str) -> None:
    """arity, types, derived relations, unknown relations: the checks over the rows of the
    tables report exactly what they report over one AST clause per fact"""
    d = tmp_path_factory.mktemp("f")
    (d / "rules.gl").write_text(RULES, encoding="utf-8")
    (d / "facts.gl").write_bytes(text.encode())
    paths = [str(d / "rules.gl"), str(d / "facts.gl")]
    every = load(None, paths, "<input>")
    rows = load(None, paths, "<input>", rows=True)
    assert [str(x) for x in rows.diagnostics] == [str(x) for x in every.diagnostics]
    if every.diagnostics:
        return
    per_fact = Unit(every.modules)
    run_checks(per_fact)
    batched = Unit(rows.modules, tables=rows.tables)
    run_checks(batched)
    assert sorted(map(str, batched.diagnostics)) == sorted(map(str, per_fact.diagnostics))
    assert batched.arity == per_fact.arity


def _facts_file(n: int, extra: str = "") -> str:
    lines = [f'member(u{i}, "g{i % 7}").' if i % 3 else f"lvl(\"u{i}\", {i})." for i in range(n)]
    return "\n".join(lines[: n // 2]) + "\n" + extra + "\n".join(lines[n // 2:]) + "\n"


def test_compile_reads_rows_and_keeps_the_facts_sequence(tmp_path: Path) -> None:
    rules = tmp_path / "rules.gl"
    rules.write_text(RULES + "q(X) :- member(X, _).\n", encoding="utf-8")
    data = tmp_path / "facts.gl"
    data.write_text(_facts_file(3000, 'member("é\\n", g1).\n'), encoding="utf-8")
    program = grantlog.compile(paths=[str(rules), str(data)])
    assert isinstance(program.facts, Facts)
    assert len(program.facts) == 3001
    rows = program.facts.by_relation()
    assert rows["lvl"][0] == ("u0", 0) and ("é\n", "g1") in rows["member"]
    listed = list(program.facts)  # what the other evaluators read
    assert len(listed) == 3001 and listed[0].span is not None
    by_rel = {f.rel for f in listed}
    assert by_rel == {"member", "lvl"}
    first = next(f for f in listed if f.rel == "lvl")
    assert (first.span.file, first.span.line, first.span.col) == (str(data), 1, 1)
    escaped = next(f for f in listed if f.row == ("é\n", "g1"))
    assert escaped.span is not None and escaped.span.line == 1501
    r = grantlog.Reasoner(program)
    assert len(r.rows("q")) == 2001
    why = r.explain('member(u1, "g1")')  # a fact names where it was written
    assert f"{data}:2:1" in str(why) or "facts.gl:2:1" in str(why)


def test_errors_in_a_big_fact_file_point_at_the_fact(tmp_path: Path) -> None:
    rules = tmp_path / "rules.gl"
    rules.write_text(RULES, encoding="utf-8")
    data = tmp_path / "facts.gl"
    data.write_text(_facts_file(2000, '  lvl(ann, "x").\nderived(z).\nmember(a).\n'),
                    encoding="utf-8")
    with pytest.raises(GrantlogError) as info:
        grantlog.compile(paths=[str(rules), str(data)])
    got = {(d.code, d.span.line, d.span.col, d.span.end_col) for d in info.value.diagnostics}
    assert got == {("type-mismatch", 1001, 12, 15), ("derived-relation", 1002, 1, 11),
                   ("arity-mismatch", 1003, 1, 10)}
    text = str(info.value)
    assert f"{data}:1001:12" in text
    assert "  lvl(ann, \"x\").\n" in text and "           ^^^" in text


def test_the_collector_is_paused_and_restored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(facts, "CHUNK", 64)
    seen: list[bool] = []
    text = _facts_file(200)
    facts.read_facts(text, "f.gl", lambda n: seen.append(gc.isenabled()))
    assert seen and not any(seen) and gc.isenabled()
    with pytest.raises(GrantlogError):
        facts.read_facts(text + "p(a\n", "f.gl")
    assert gc.isenabled()
    gc.disable()
    try:
        facts.read_facts(text, "f.gl")
        assert not gc.isenabled()  # left as it was
    finally:
        gc.enable()


def test_progress_advances_by_the_whole_text(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(facts, "CHUNK", 100)
    text = _facts_file(300, "rel x(a).\n")
    steps: list[int] = []
    _, table = facts.read_facts(text, "f.gl", steps.append)
    assert len(steps) > 10 and sum(steps) == len(text)
    assert len(table) == 300


def test_store_reads_through_the_same_reader(tmp_path: Path) -> None:
    program = grantlog.compile(RULES + "rel member(u: string, g: string).\n")
    data = tmp_path / "facts.gl"
    data.write_text(_facts_file(900, "membr(x, y).\nlvl(bob, \"three\").\n"), encoding="utf-8")
    with pytest.raises(GrantlogError) as info:
        ingest.read([str(data)], program)
    got = [(d.code, d.span.line, d.span.col) for d in info.value.diagnostics]
    assert got == [("bad-fact", 451, 1), ("bad-fact", 452, 1)]
    assert "did you mean `member`?" in info.value.diagnostics[0].message
    data.write_text(_facts_file(900), encoding="utf-8")
    rows = ingest.read([str(data)], program)
    assert len(rows["member"]) == 600 and rows["lvl"][1] == ("u3", 3)
    data.write_text(_facts_file(300, "derived(x).\n"), encoding="utf-8")  # rules derive it
    with pytest.raises(GrantlogError) as info:
        ingest.read([str(data)], program)
    assert [(d.code, d.span.line, d.span.col, d.span.end_col)
            for d in info.value.diagnostics] == [("derived-relation", 151, 1, 8)]


def test_many_bad_facts_are_capped_in_file_order(tmp_path: Path) -> None:
    program = grantlog.compile("rel a(x: int).\nrel b(x: int).\n")
    data = tmp_path / "facts.gl"
    data.write_text("".join(f"{'ab'[i % 2]}(x{i}).\n" for i in range(100)), encoding="utf-8")
    with pytest.raises(GrantlogError) as info:
        ingest.read([str(data)], program)
    lines = [d.span.line for d in info.value.diagnostics]
    assert lines[:20] == list(range(1, 21))
    assert info.value.diagnostics[-1].message == "80 more errors not shown"


def test_eval_cli_reports_a_bad_fact_with_a_caret(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rules = tmp_path / "rules.gl"
    rules.write_text(RULES, encoding="utf-8")
    data = tmp_path / "facts.gl"
    data.write_text(_facts_file(400, "lvl(bob, two).\n"), encoding="utf-8")
    code = main(["eval", str(rules), "--facts", str(data)])
    err = capsys.readouterr().err
    assert code == 2
    assert f"{data}:201:10: error[type-mismatch]" in err and "^^^" in err
    data.write_text(_facts_file(400), encoding="utf-8")
    assert main(["eval", str(rules), "--facts", str(data), "--json", "-r", "lvl"]) == 0
    assert '"u3"' in capsys.readouterr().out


def test_facts_spans_and_restrict() -> None:
    program = grantlog.compile('p(a).\np("b").\nq(1).\np(a).\n', filename="x.gl")
    f = Facts.of(program.facts)
    spans = f.spans("p")
    assert spans[("a",)].line == 1 and spans.get(("b",)).line == 2  # type: ignore[union-attr]
    assert ("c",) not in spans and len(spans) == 2 and spans
    del spans[("a",)]
    assert spans.get(("a",)) is None and len(spans) == 1
    only = f.restrict({"q"})
    assert [(x.rel, x.row) for x in only] == [("q", (1,))] and len(only) == 1
    assert Facts.of(list(program.facts)) == program.facts
