"""Rendered-diagnostic goldens: the full text a user sees, caret included.

Each tests/golden/diagnostics/<name>.gl is compiled by path from the repository root (so the
rendering shows the relative path) and the output is compared with <name>.txt:

- ``str(err)`` when compilation fails;
- the rendered warnings when it succeeds (``unknown-relation`` outside strict mode);
- ``*_strict.gl`` compiles with ``strict=True``;
- ``lint_*.gl`` goes through ``grantlog.engine.compile.lint.lint`` instead.

imports/ holds multi-file inputs (import not found, import cycle); goals, a missing file and
no input at all have their own goldens. Rewrite with ``GRANTLOG_UPDATE_GOLDENS=1``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import GOLDEN_DIR, ROOT, check_golden
from grantlog.engine.compile.lint import lint
from grantlog.grammar.diagnostics import render_all

import grantlog

DIAG_DIR = GOLDEN_DIR / "diagnostics"
INPUTS = sorted(DIAG_DIR.glob("*.gl"))
IMPORT_ROOTS = ["missing.gl", "cycle_a.gl"]

# Every code the compiler and linter can report about rule text has at least one golden.
REQUIRED_CODES = {
    "syntax-error", "unsafe-variable", "arity-mismatch", "unknown-relation", "unknown-type",
    "type-mismatch", "negation-cycle", "duplicate-declaration", "duplicate-rule-name",
    "duplicate-test", "rule-in-test", "import-not-found", "import-cycle", "file-not-found",
    "no-input", "singleton-variable", "unused-relation", "derived-relation",
    "unknown-constant", "hierarchy-role",
}


@pytest.fixture(autouse=True)
def _at_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def render(paths: list[str], strict: bool = False) -> str:
    """What a user sees for these files: the error, or the warnings of a successful compile."""
    try:
        program = grantlog.compile(paths=paths, strict=strict)
    except grantlog.GrantlogError as err:
        assert err.errors, "a GrantlogError must carry at least one error"
        return str(err) + "\n"
    assert program.warnings, "golden input compiled cleanly: it exercises no diagnostic"
    return render_all(program.warnings, program.sources) + "\n"


def render_lint(path: str) -> str:
    diags, sources = lint([path])
    assert diags, "lint input produced no findings"
    return render_all(diags, sources) + "\n"


@pytest.mark.parametrize("path", INPUTS, ids=[p.name for p in INPUTS])
def test_diagnostic_golden(path: Path) -> None:
    rel = _rel(path)
    if path.stem.startswith("lint_"):
        out = render_lint(rel)
    else:
        out = render([rel], strict=path.stem.endswith("_strict"))
    assert str(ROOT) not in out, "rendering leaks an absolute path"
    check_golden(f"diagnostics/{path.stem}.txt", out)


@pytest.mark.parametrize("name", IMPORT_ROOTS)
def test_import_golden(name: str) -> None:
    out = render([_rel(DIAG_DIR / "imports" / name)])
    # The shipped-rules directory is part of the search path: named, never its checkout path.
    assert str(ROOT) not in out, "rendering leaks an absolute path"
    check_golden(f"diagnostics/imports/{Path(name).stem}.txt", out)


def test_file_not_found_golden() -> None:
    out = render([_rel(DIAG_DIR / "no_such_file.gl")])
    check_golden("diagnostics/file_not_found.txt", out)


def test_no_input_golden() -> None:
    with pytest.raises(grantlog.GrantlogError) as info:
        grantlog.compile()
    check_golden("diagnostics/no_input.txt", str(info.value) + "\n")


GOALS = [
    "allowed(U",
    "alowed(U, R)",
    "edge(1)",
    "edge(X, Y), not edge(Y, Z)",
    "edge(X, _), X < Limit",
]


def test_goal_golden() -> None:
    program = grantlog.compile("edge(1, 2).\nallowed(U, R) :- edge(U, R).\n")
    r = grantlog.Reasoner(program)
    parts: list[str] = []
    for goal in GOALS:
        with pytest.raises(grantlog.GrantlogError) as info:
            r.ask(goal)
        parts.append(f"== ask({goal!r})\n{info.value}\n")
    check_golden("diagnostics/goals.txt", "\n".join(parts))


def test_every_code_has_a_golden() -> None:
    found: set[str] = set()
    for txt in DIAG_DIR.rglob("*.txt"):
        found |= set(re.findall(r"(?:error|warning)\[([a-z-]+)\]", txt.read_text("utf-8")))
    assert found >= REQUIRED_CODES, f"no golden shows {sorted(REQUIRED_CODES - found)}"


# ---------------------------------------------------------------------------------------------
# Known bugs, stated directly (the goldens above hold the intended rendering; these say why).
# They fail until grammar/ or engine/ is fixed; tests/golden/README.md lists them.


def _syntax_error(text: str) -> grantlog.Diagnostic:
    with pytest.raises(grantlog.GrantlogError) as info:
        grantlog.compile(text, filename="x.gl")
    (d,) = info.value.diagnostics
    assert d.code == "syntax-error"
    return d


@pytest.mark.parametrize(("text", "help_"), [
    # after `edge(X` only `,` or `)` can follow; `.` and a comparison operator cannot
    ("path(X, Y) :- edge(X Y).\n", "expected `)`, `,`"),
    # after a body atom only `,` or `.` can follow; `:-` cannot
    ("p(X) :- q(X) r(X).\n", "expected `,`, `.`"),
    # at the start of a file `import`, `rel`, `test` and the end of input are all fine too
    ("Edge(1, 2).\n",
     "expected `@`, `import`, `rel`, `test`, doc comment, end of input, identifier"),
], ids=["inside-atom", "between-literals", "file-start"])
def test_syntax_help_lists_exactly_the_acceptable_tokens(text: str, help_: str) -> None:
    d = _syntax_error(text)
    assert d.help == help_, (
        f"for {text!r} the help should name exactly the tokens the parser accepts there "
        f"({help_!r}), got {d.help!r}: the LALR state's `expected` set is not exact; "
        "`UnexpectedToken.interactive_parser.accepts()` is")


@pytest.mark.parametrize(("text", "where"), [
    ("edge(1, 2).\npath(X, Y) :- edge(X, Y)\n", (2, 25)),
    ("edge(1, 2).\npath(X, Y) :- edge(X, Y)\n\n\n", (2, 25)),
    ('test "open" {\n    expect edge(1, 2).\n', (2, 23)),
], ids=["missing-dot", "missing-dot-blank-lines", "unclosed-test"])
def test_end_of_input_points_after_the_last_token(text: str, where: tuple[int, int]) -> None:
    d = _syntax_error(text)
    assert d.message == "unexpected end of input"
    assert (d.span.line, d.span.col) == where, (
        f"`unexpected end of input` should point just after the last token, at "
        f"{where[0]}:{where[1]}; it points at {d.span.line}:{d.span.col}, a blank line past the "
        "end of the file (the text ends with a newline), so the rendering shows no source")


@pytest.mark.parametrize("op", ["<", "<=", ">", ">=", "=", "!="])
@pytest.mark.parametrize("int_left", [True, False], ids=["int-left", "int-right"])
def test_int_string_comparison_message_agrees_with_evaluation(op: str, int_left: bool) -> None:
    cmp = f'Y {op} "old"' if int_left else f'"old" {op} Y'
    rule = f"c(N) :- age(N, Y), {cmp}.\n"
    untyped = grantlog.Reasoner(grantlog.compile("age(bob, 7).\n" + rule))
    truth = bool(untyped.rows("c"))
    with pytest.raises(grantlog.GrantlogError) as info:
        grantlog.compile("rel age(n: string, y: int).\nage(bob, 7).\n" + rule)
    (d,) = info.value.diagnostics
    assert d.code == "type-mismatch"
    claimed = "always true" if "always true" in d.message else "always false"
    actual = "always true" if truth else "always false"
    assert claimed == actual, (
        f"`{cmp}` with Y an int: the type-mismatch message says {claimed!r} but the evaluator "
        f"makes it {actual!r} (ints order before strings): {d.message!r}")
