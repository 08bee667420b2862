"""The canonical layout of `.gl` files (``grantlog fmt``).

The output re-parses to an equal AST and formatting it again changes nothing. Comments are
kept: a comment on its own line stays before the statement that follows it, a comment at the
end of a statement's last line stays there, a comment inside a statement moves above it. One
blank line is kept where the source had one or more.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from . import ast

LINE_WIDTH = 100
INDENT = "    "
KEYWORDS = frozenset({"not", "rel", "import", "test", "expect"})
IDENT_RE = re.compile(r"[a-z][A-Za-z0-9_]*\Z")


def quote(value: str) -> str:
    esc = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{esc}"'


def term(t: ast.Term, head_of_literal: bool = False) -> str:
    """A term as written: identifiers stay bare (keywords too, where the parser read them as
    constants), except `not` opening a comparison, which would read as a negation."""
    if isinstance(t, ast.Var):
        return t.name
    if isinstance(t.value, int):
        return str(t.value)
    if not t.quoted and IDENT_RE.match(t.value) and not (head_of_literal and t.value == "not"):
        return t.value
    return quote(t.value)


def atom(a: ast.Atom) -> str:
    if not a.args:
        return a.rel
    return f"{a.rel}({', '.join(term(t) for t in a.args)})"


def literal(lit: ast.Literal) -> str:
    if isinstance(lit, ast.Atom):
        return atom(lit)
    if isinstance(lit, ast.Negation):
        return f"not {atom(lit.atom)}"
    return f"{term(lit.left, head_of_literal=True)} {lit.op} {term(lit.right)}"


def body(lits: Iterable[ast.Literal]) -> str:
    return ", ".join(literal(x) for x in lits)


def _docs(doc: tuple[str, ...], indent: str) -> list[str]:
    return [f"{indent}///{(' ' + d) if d else ''}" for d in doc]


def clause(c: ast.Clause, indent: str = "") -> list[str]:
    head = (f"{c.label}: " if c.label else "") + atom(c.head)
    lines = _docs(c.doc, indent)
    if not c.body:
        valid = "".join(f" {kw} {term(t)}" for kw, t in (("from", c.valid_from),
                                                          ("until", c.valid_until)) if t)
        return [*lines, f"{indent}{head}{valid}."]
    one = f"{indent}{head} :- {body(c.body)}."
    if len(one) <= LINE_WIDTH:
        return [*lines, one]
    lines.append(f"{indent}{head} :-")
    for i, lit in enumerate(c.body):
        end = "." if i == len(c.body) - 1 else ","
        lines.append(f"{indent}{INDENT}{literal(lit)}{end}")
    return lines


def expect(e: ast.Expect, indent: str) -> list[str]:
    if not e.negated and e.body and isinstance(e.body[0], ast.Negation):
        # `expect not p, q.` would read as `expect not (p, q)`: keep the line break
        return [f"{indent}expect", f"{indent}{INDENT}{body(e.body)}."]
    kw = "expect not" if e.negated else "expect"
    return [f"{indent}{kw} {body(e.body)}."]


def decl(d: ast.Decl) -> list[str]:
    cols = ", ".join(f"{c.name}: {c.type}" if c.type else c.name for c in d.columns)
    notes = "".join(f"@{a} " for a in d.annotations)
    return [*_docs(d.doc, ""), f"{notes}rel {d.name}({cols})."]


def _item_lines(item: ast.Statement | ast.Expect, indent: str) -> list[str]:
    if isinstance(item, ast.Clause):
        return clause(item, indent)
    if isinstance(item, ast.Expect):
        return expect(item, indent)
    raise TypeError(item)  # pragma: no cover


def _plain(c: ast.Comment) -> ast.Comment:
    """A `///` line that documents nothing is printed as a plain `//` comment, so that moving it
    next to a statement cannot turn it into that statement's doc."""
    if c.text.startswith("///") and not c.text.startswith("////"):
        return ast.Comment("//" + c.text[3:], c.line, c.col)
    return c


class _Emitter:
    def __init__(self, comments: tuple[ast.Comment, ...]) -> None:
        self.pending = sorted((_plain(c) for c in comments), key=lambda c: (c.line, c.col))
        self.out: list[str] = []
        self.last_line = 0  # last source line accounted for

    def _gap(self, line: int) -> None:
        if self.out and line > self.last_line + 1 and self.out[-1].strip() not in ("", "{"):
            self.out.append("")

    def comments_before(self, line: int, indent: str) -> None:
        while self.pending and self.pending[0].line < line:
            c = self.pending.pop(0)
            self._gap(c.line)
            self.out.append(f"{indent}{c.text.rstrip()}")
            self.last_line = c.line

    def emit(self, lines: list[str], start: int, end: int, indent: str) -> None:
        self.comments_before(start, indent)
        inner = [c for c in self.pending if c.line <= end and c.line < end]
        for c in inner:  # comments inside a multi-line statement go above it
            self.pending.remove(c)
            self.out.append(f"{indent}{c.text.rstrip()}")
        self._gap(start)
        trailing = [c for c in self.pending if c.line == end]
        for c in trailing:
            self.pending.remove(c)
        self.out.extend(lines)
        if trailing:
            self.out[-1] += "  " + "  ".join(c.text.rstrip() for c in trailing)
        self.last_line = end


def format_module(mod: ast.Module) -> str:
    em = _Emitter(mod.comments)
    extents = mod.extents if len(mod.extents) == len(mod.statements) else None
    for i, st in enumerate(mod.statements):
        start, end = extents[i] if extents else (st.span.line, st.span.end_line)
        if isinstance(st, ast.Import):
            lines = [*_docs(st.doc, ""), f"import {quote(st.path)}."]
        elif isinstance(st, ast.Decl):
            lines = decl(st)
        elif isinstance(st, ast.Clause):
            lines = clause(st)
        else:
            _test_block(em, st, start, end)
            continue
        em.emit(lines, start, end, "")
    em.comments_before(10**9, "")
    text = "\n".join(em.out).strip("\n")
    return text + "\n" if text else ""


def _test_block(em: _Emitter, t: ast.TestBlock, start: int, end: int) -> None:
    open_line = t.span.line
    em.comments_before(start, "")
    em._gap(start)
    em.out.extend(_docs(t.doc, ""))
    em.out.append(f"test {quote(t.name)} {{")
    trailing_open = [c for c in em.pending if c.line == open_line]
    for c in trailing_open:
        em.pending.remove(c)
        em.out[-1] += "  " + c.text.rstrip()
    em.last_line = open_line
    for item in t.items:
        doc_lines = len(item.doc) if isinstance(item, ast.Clause) else 0
        s = item.span.line - doc_lines
        em.emit(_item_lines(item, INDENT), s, item.span.end_line, INDENT)
    em.comments_before(t.span.end_line, INDENT)
    em.out.append("}")
    trailing = [c for c in em.pending if c.line == t.span.end_line]
    for c in trailing:
        em.pending.remove(c)
        em.out[-1] += "  " + c.text.rstrip()
    em.last_line = t.span.end_line


def format_text(text: str, file: str = "<input>") -> str:
    """Parse and format; raises GrantlogError on a syntax error."""
    from .parser import parse

    return format_module(parse(text, file))
