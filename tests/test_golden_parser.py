"""Parser goldens: tests/golden/parser/<name>.gl parses to the tree in <name>.ast.

The dump prints every node with its span (``@line:col-end_line:end_col``, end column
exclusive) so positions are pinned as well as structure. Goals (one per line of goals.txt)
go through ``parse_goal``. Rewrite with ``GRANTLOG_UPDATE_GOLDENS=1`` and review the diff.
"""

from __future__ import annotations

from dataclasses import fields, is_dataclass
from pathlib import Path

import pytest
from conftest import GOLDEN_DIR, ROOT, check_golden
from grantlog.grammar import ast
from grantlog.grammar.diagnostics import Span
from grantlog.grammar.parser import parse, parse_goal

PARSER_DIR = GOLDEN_DIR / "parser"
INPUTS = sorted(PARSER_DIR.glob("*.gl"))


def _span(s: Span) -> str:
    return f"@{s.line}:{s.col}-{s.end_line}:{s.end_col}"


def _is_node_seq(v: object) -> bool:
    return isinstance(v, tuple) and bool(v) and all(is_dataclass(x) for x in v)


def dump(node: object, depth: int = 0, label: str = "") -> list[str]:
    """An indented tree: ``Class @span field=value ...``, child nodes one level deeper."""
    pad = "  " * depth
    scalars: list[str] = []
    children: list[tuple[str, object]] = []
    assert is_dataclass(node)
    for f in fields(node):
        if f.name == "span" or (f.name.startswith("valid_") and getattr(node, f.name) is None):
            continue  # a fact's validity interval is shown where it has one
        v = getattr(node, f.name)
        if is_dataclass(v) or _is_node_seq(v):
            children.append((f.name, v))
        else:
            scalars.append(f"{f.name}={v!r}")
    head = f"{pad}{label + ': ' if label else ''}{type(node).__name__}"
    span = getattr(node, "span", None)
    if isinstance(span, Span):
        head += " " + _span(span)
    lines = [" ".join([head, *scalars])]
    for name, v in children:
        if isinstance(v, tuple):
            lines.append(f"{pad}  {name}:")
            for item in v:
                lines += dump(item, depth + 2)
        else:
            lines += dump(v, depth + 1, name)
    return lines


def _spans_in_file(node: object, file: str) -> None:
    """Every span of the tree names the file that was parsed."""
    if not is_dataclass(node):
        return
    span = getattr(node, "span", None)
    if isinstance(span, Span):
        assert span.file == file, f"{type(node).__name__} has span in {span.file!r}"
    for f in fields(node):
        v = getattr(node, f.name)
        for item in v if isinstance(v, tuple) else (v,):
            _spans_in_file(item, file)


@pytest.mark.parametrize("path", INPUTS, ids=[p.name for p in INPUTS])
def test_parser_golden(path: Path) -> None:
    name = path.relative_to(ROOT).as_posix()
    module = parse(path.read_text(encoding="utf-8"), name)
    _spans_in_file(module, name)
    check_golden(f"parser/{path.stem}.ast", "\n".join(dump(module)) + "\n")


def test_goal_parser_golden() -> None:
    out: list[str] = []
    for line in (PARSER_DIR / "goals.txt").read_text(encoding="utf-8").splitlines():
        out.append(f"goal {line!r}")
        for lit in parse_goal(line):
            out += dump(lit, 1)
    check_golden("parser/goals.ast", "\n".join(out) + "\n")


def test_dump_is_independent_of_spans() -> None:
    """The dump of a hand-built tree prints the placeholder span, so spans come from the parser."""
    atom = ast.Atom("p", (ast.Var("X"), ast.Const(1)))
    assert dump(atom) == [
        "Atom @0:0-0:0 rel='p'",
        "  args:",
        "    Var @0:0-0:0 name='X'",
        "    Const @0:0-0:0 value=1 quoted=False",
    ]


def test_inputs_present() -> None:
    assert len(INPUTS) >= 4
