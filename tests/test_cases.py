"""The case corpus: every file under tests/cases is one case (format: tests/cases/README.md),
run on every backend in `BACKENDS` (memory, pyDatalog, Spark) with per-backend `KNOWN_GAPS`.

Expected rows are written by hand in the case files and parsed here by a small reader that
does not use grantlog's parser, so a parser bug cannot cancel itself out.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import pytest
from conftest import within
from grantlog.grammar.diagnostics import NO_SPAN
from grantlog.grammar.parser import unescape

import grantlog

ROOT = Path(__file__).resolve().parent.parent
CASES_DIR = ROOT / "tests" / "cases"
CASE_SUFFIXES = (".gl", ".glx")

Value = str | int
Row = tuple[Value, ...]
Pos = tuple[int, int] | None


# ---------------------------------------------------------------------------------------------
# reading case files

_IDENT = r"[a-z][A-Za-z0-9_]*"
_CODE = r"[a-z][a-z0-9-]*"
_POS = r"(?:\s+at\s+(\d+):(\d+))?"
_EXPECT = re.compile(rf"expect\s+({_IDENT})\s*:\s*(empty)?")
_ERROR = re.compile(rf"error:\s*({_CODE}){_POS}")
_WARNING = re.compile(rf"warning:\s*({_CODE}){_POS}")
_ASK = re.compile(r"ask(\s+not)?:\s*(.+)")
_ROW = re.compile(rf"({_IDENT})(?:\((.*)\))?\.")
_ARG = re.compile(rf'\s*(?:(-?[0-9]+)|"((?:[^"\\]|\\.)*)"|({_IDENT}))\s*(,|$)')


class CaseFormatError(Exception):
    pass


@dataclass
class Case:
    path: Path
    name: str
    text: str
    strict: bool = False
    errors: list[tuple[str, Pos]] = field(default_factory=list)
    warnings: list[tuple[str, Pos]] = field(default_factory=list)
    expect: dict[str, set[Row]] = field(default_factory=dict)
    asks: list[tuple[str, bool]] = field(default_factory=list)

    @property
    def filename(self) -> str:
        """The path shown in diagnostics: relative to the repository root."""
        return self.path.relative_to(ROOT).as_posix()


def _unescape(body: str) -> str:
    """A string of an expected row: escapes as in rule text (grammar/parser.py)."""
    try:
        return unescape(f'"{body}"', NO_SPAN)
    except Exception as exc:  # the parser's syntax error
        raise CaseFormatError(f"{exc} in an expected row") from None


def parse_row(text: str) -> tuple[str, Row]:
    """``rel(1, "a b", c).`` -> ("rel", (1, "a b", "c")); ``rel.`` -> ("rel", ())."""
    m = _ROW.fullmatch(text)
    if not m:
        raise CaseFormatError(f"not a row: {text!r}")
    rel, inner = m.group(1), m.group(2)
    if inner is None or not inner.strip():
        return rel, ()
    values: list[Value] = []
    pos = 0
    while pos < len(inner):
        am = _ARG.match(inner, pos)
        if not am or am.end() == pos:
            raise CaseFormatError(f"bad value in row {text!r} at {inner[pos:]!r}")
        integer, string, ident, sep = am.groups()
        if integer is not None:
            values.append(int(integer))
        elif string is not None:
            values.append(_unescape(string))
        else:
            values.append(ident)
        pos = am.end()
        if sep == "," and pos == len(inner):
            raise CaseFormatError(f"trailing comma in row {text!r}")
    return rel, tuple(values)


def _pos(m: re.Match[str]) -> Pos:
    return (int(m.group(2)), int(m.group(3))) if m.group(2) else None


def _close(path: Path, case: Case, current: str | None, empty_ok: bool) -> None:
    """End an `expect` block: it must list rows or say `empty`."""
    if current is not None and not case.expect[current] and not empty_ok:
        raise CaseFormatError(
            f"{path}: `expect {current}:` lists no rows; write `expect {current}: empty`")


def read_case(path: Path) -> Case:
    text = path.read_text(encoding="utf-8")
    case = Case(path, path.relative_to(CASES_DIR).as_posix(), text)
    current: str | None = None  # the relation whose rows are being listed
    empty_ok = False
    for raw in text.split("\n"):
        line = raw.strip()
        if not line.startswith("//") or line.startswith("///"):
            _close(path, case, current, empty_ok)
            current = None
            continue
        directive = line[2:].strip()
        if current is not None:
            m = _ROW.fullmatch(directive)
            if m and m.group(1) == current:
                if empty_ok:
                    raise CaseFormatError(f"{path}: rows after `expect {current}: empty`")
                case.expect[current].add(parse_row(directive)[1])
                continue
            if m:
                raise CaseFormatError(f"{path}: row {directive!r} under `expect {current}:`")
            _close(path, case, current, empty_ok)
            current = None
        if m := _EXPECT.fullmatch(directive):
            rel = m.group(1)
            if rel in case.expect:
                raise CaseFormatError(f"{path}: `expect {rel}:` given twice")
            case.expect[rel] = set()
            current, empty_ok = rel, m.group(2) is not None
        elif m := _ERROR.fullmatch(directive):
            case.errors.append((m.group(1), _pos(m)))
        elif m := _WARNING.fullmatch(directive):
            case.warnings.append((m.group(1), _pos(m)))
        elif m := _ASK.fullmatch(directive):
            case.asks.append((m.group(2).strip(), m.group(1) is None))
        elif directive == "strict":
            case.strict = True
    _close(path, case, current, empty_ok)
    if case.errors and (case.expect or case.asks):
        raise CaseFormatError(f"{path}: a case expects either errors or results, not both")
    if not case.errors and not case.expect:
        raise CaseFormatError(f"{path}: no `expect` or `error` directive")
    if path.suffix == ".glx" and not case.errors:
        raise CaseFormatError(f"{path}: `.glx` is only for cases that do not parse")
    return case


def _all_cases() -> list[Case]:
    paths = sorted(p for p in CASES_DIR.rglob("*") if p.suffix in CASE_SUFFIXES)
    return [read_case(p) for p in paths]


CASES = _all_cases()
RESULT_CASES = [c for c in CASES if not c.errors]
ERROR_CASES = [c for c in CASES if c.errors]


# ---------------------------------------------------------------------------------------------
# backends


class Answers(Protocol):
    def rows(self, rel: str) -> set[Row]: ...

    def ask(self, goal: str) -> bool: ...


#: a backend: (the case, its compiled program, the test's request) -> a function that builds
#: the answers (something with `rows` and `ask`). The backend runs in the test's thread, where it
#: may resolve fixtures (the shared Spark session) or skip; the function it returns runs, like
#: every read of the answers, under the time bound of :data:`TIMEOUTS`.
Backend = Callable[[Case, grantlog.Program, pytest.FixtureRequest], Callable[[], Answers]]


def _memory(case: Case, program: grantlog.Program, request: pytest.FixtureRequest
            ) -> Callable[[], Answers]:
    return lambda: grantlog.Reasoner(program)


def _pydatalog(case: Case, program: grantlog.Program, request: pytest.FixtureRequest
               ) -> Callable[[], Answers]:
    try:
        import pyDatalog  # noqa: F401
    except ImportError as exc:
        pytest.skip(f"pyDatalog is not importable ({exc}): pip install 'grantlog[pydatalog]'")
    return lambda: grantlog.Reasoner(program, backend="pydatalog")


#: the relation that answers the i-th `// ask` goal of a case on Spark
ASK_REL = "gl_ask_{}"


class SparkAnswers:
    """A case evaluated once on Spark, its `// ask` goals included.

    Spark evaluates whole relations; it has no goal-directed `ask`. So each goal becomes one
    more rule of the same program, ``gl_ask_<i> :- <goal>.``, and the goal holds when that
    relation is non-empty: one evaluation and one collect answer every row and every goal.
    """

    def __init__(self, case: Case, program: grantlog.Program, spark: Any) -> None:
        from grantlog import spark_bridge as sb

        self.goals = {goal: ASK_REL.format(i) for i, (goal, _) in enumerate(case.asks)}
        clash = set(self.goals.values()) & set(program.relations)
        assert not clash, f"the case uses relation names reserved for ask goals: {clash}"
        if self.goals:
            text = case.text.rstrip("\n") + "\n"
            for goal, rel in self.goals.items():
                text += f"{rel} :- {goal.strip().removesuffix('.')}.\n"
            program = grantlog.compile(text, filename=case.filename, strict=case.strict)
        names = sorted({*case.expect, *self.goals.values()})
        self.got = sb.collect(sb.evaluate(program, spark), names)

    def rows(self, rel: str) -> set[Row]:
        return self.got[rel]

    def ask(self, goal: str) -> bool:
        return bool(self.got[self.goals[goal]])


def _spark(case: Case, program: grantlog.Program, request: pytest.FixtureRequest
           ) -> Callable[[], Answers]:
    # the session-scoped `spark` fixture (tests/conftest.py) skips when pyspark or java is
    # missing; fixtures are resolved in the test's thread, so that happens here
    spark = request.getfixturevalue("spark")
    return lambda: SparkAnswers(case, program, spark)


# Every evaluator runs the same corpus: one entry here (skipped when its optional dependency is
# missing) plus its known gaps below.
BACKENDS: dict[str, Backend] = {
    "memory": _memory,
    "pydatalog": _pydatalog,
    "spark": _spark,
}

# Per-backend list of cases a backend is known to get wrong (or refuses, with
# `unsupported-feature`): case name -> reason. They run as strict xfails, so fixing one makes
# the suite say so (the OPA convention).
KNOWN_GAPS: dict[str, dict[str, str]] = {
    "memory": {},
    "pydatalog": {},
    "spark": {},
}

#: seconds a backend may take to answer one case: a hang (pyDatalog loops forever on some
#: recursive shapes when translated naively) must fail the test, not block the run. Spark's
#: bound is generous: a case is a few Spark jobs, slow on a loaded 2-core machine.
TIMEOUTS: dict[str, float] = {"memory": 60.0, "pydatalog": 60.0, "spark": 600.0}

@pytest.fixture(params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


# ---------------------------------------------------------------------------------------------
# tests


def _where(d: grantlog.Diagnostic) -> Pos:
    return (d.span.line, d.span.col)


def _matches(expected: list[tuple[str, Pos]], got: list[grantlog.Diagnostic]) -> bool:
    """Same diagnostics (as a multiset of codes, and positions where the case gives one)."""
    if sorted(c for c, _ in expected) != sorted(d.code for d in got):
        return False
    remaining = list(got)
    for code, pos in sorted(expected, key=lambda e: e[1] is None):
        hit = next((d for d in remaining
                    if d.code == code and (pos is None or _where(d) == pos)), None)
        if hit is None:
            return False
        remaining.remove(hit)
    return True


def _show(diags: list[grantlog.Diagnostic]) -> str:
    return "\n".join(f"  {d.code} at {d.span.line}:{d.span.col}: {d.message}" for d in diags)


def _compile(case: Case) -> grantlog.Program:
    return grantlog.compile(case.text, filename=case.filename, strict=case.strict)


@pytest.mark.parametrize("case", RESULT_CASES, ids=[c.name for c in RESULT_CASES])
def test_case_results(case: Case, backend: str, request: pytest.FixtureRequest) -> None:
    gap = KNOWN_GAPS.get(backend, {}).get(case.name)
    if gap:
        request.applymarker(pytest.mark.xfail(reason=gap, strict=True))
    try:
        program = _compile(case)
    except grantlog.GrantlogError as err:
        pytest.fail(f"case {case.name} should compile, but:\n{err}")
    warnings = list(program.warnings)
    assert _matches(case.warnings, warnings), (
        f"warnings differ\nexpected: {case.warnings}\ngot:\n{_show(warnings)}")
    make = BACKENDS[backend](case, program, request)

    def read() -> tuple[dict[str, set[Row]], list[bool]]:
        answers = make()
        return ({rel: answers.rows(rel) for rel in case.expect},
                [answers.ask(goal) for goal, _ in case.asks])

    rows, asked = within(TIMEOUTS[backend], read)
    for rel, expected in sorted(case.expect.items()):
        actual = rows[rel]
        missing = sorted(expected - actual, key=repr)
        extra = sorted(actual - expected, key=repr)
        assert actual == expected, (
            f"rows of `{rel}` differ\n  missing: {missing}\n  unexpected: {extra}")
    for (goal, truth), got in zip(case.asks, asked, strict=True):
        assert got is truth, f"ask({goal!r}) should be {truth}"


def test_known_gaps_name_existing_cases() -> None:
    assert set(KNOWN_GAPS) <= set(BACKENDS)
    names = {c.name for c in RESULT_CASES}
    for backend, gaps in KNOWN_GAPS.items():
        assert set(gaps) <= names, f"{backend}: gaps for unknown cases {set(gaps) - names}"
        assert all(reason.strip() for reason in gaps.values()), f"{backend}: a gap needs a reason"


@pytest.mark.parametrize("case", ERROR_CASES, ids=[c.name for c in ERROR_CASES])
def test_case_errors(case: Case) -> None:
    with pytest.raises(grantlog.GrantlogError) as info:
        _compile(case)
    err = info.value
    errors = [d for d in err.diagnostics if d.severity == "error"]
    assert _matches(case.errors, errors), (
        f"errors differ\nexpected: {case.errors}\ngot:\n{_show(errors)}\n\n{err}")
    for code, _ in case.errors:
        assert f"error[{code}]" in str(err)


def test_corpus_is_complete() -> None:
    """Guard against the corpus shrinking silently (and against an empty glob)."""
    assert len(RESULT_CASES) >= 30
    assert len(ERROR_CASES) >= 15
    codes = {code for c in ERROR_CASES for code, _ in c.errors}
    assert codes >= {
        "unsafe-variable", "negation-cycle", "arity-mismatch", "type-mismatch",
        "duplicate-declaration", "unknown-type", "syntax-error", "duplicate-rule-name",
        "rule-in-test", "duplicate-test", "unknown-relation",
    }


@pytest.mark.parametrize(("text", "rel", "row"), [
    ("p.", "p", ()),
    ("p().", "p", ()),
    ('p(1, -2, a_B, "x, \\"y\\")\\n").', "p", (1, -2, "a_B", 'x, "y")\n')),
    ('p("").', "p", ("",)),
])
def test_row_reader(text: str, rel: str, row: Row) -> None:
    assert parse_row(text) == (rel, row)


@pytest.mark.parametrize("text", ["p(X).", "p(1 2).", "p(1,).", 'p("a\\q").', "P(1)."])
def test_row_reader_rejects(text: str) -> None:
    with pytest.raises(CaseFormatError):
        parse_row(text)
