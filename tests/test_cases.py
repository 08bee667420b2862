"""The case corpus: every file under tests/cases is one case (format: tests/cases/README.md).

Expected rows are written by hand in the case files and parsed here by a small reader that
does not use grantlog's parser, so a parser bug cannot cancel itself out.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import pytest

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
_ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "t": "\t"}


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
    out: list[str] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c == "\\":
            nxt = body[i + 1]
            if nxt not in _ESCAPES:
                raise CaseFormatError(f"unknown escape \\{nxt} in an expected row")
            out.append(_ESCAPES[nxt])
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


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


def _memory(program: grantlog.Program) -> Answers:
    return grantlog.Reasoner(program)


# Every evaluator runs the same corpus. A later pyDatalog or Spark backend is one more entry
# here (a function from the compiled program to something with `rows` and `ask`), skipped when
# its optional dependency is missing, plus its known gaps below.
BACKENDS: dict[str, Callable[[grantlog.Program], Answers]] = {
    "memory": _memory,
}

# Per-backend list of cases a backend is known to get wrong: case name -> reason. They run as
# strict xfails, so fixing one makes the suite say so (the OPA convention).
KNOWN_GAPS: dict[str, dict[str, str]] = {
    "memory": {},
}


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
    answers = BACKENDS[backend](program)
    for rel, expected in sorted(case.expect.items()):
        actual = answers.rows(rel)
        missing = sorted(expected - actual, key=repr)
        extra = sorted(actual - expected, key=repr)
        assert actual == expected, (
            f"rows of `{rel}` differ\n  missing: {missing}\n  unexpected: {extra}")
    for goal, truth in case.asks:
        assert answers.ask(goal) is truth, f"ask({goal!r}) should be {truth}"


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
