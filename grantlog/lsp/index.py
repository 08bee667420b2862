"""Where each relation and rule of a set of rule files is: declarations, rule heads, body
uses, facts and test blocks, with the source range of each name (1-based lines and columns,
as :class:`~grantlog.grammar.diagnostics.Span`). Built from the parser's AST (the compiler's
parser: no second one); a file that does not parse contributes nothing."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from grantlog.grammar import ast
from grantlog.grammar.diagnostics import GrantlogError
from grantlog.grammar.parser import parse


@dataclass(frozen=True)
class Name:
    """One occurrence of a relation's name (``kind``: decl, head, body, fact, test) or a
    rule's label (``kind``: rule) or a test block's name (``kind``: test-block)."""

    name: str
    kind: str
    file: str
    line: int
    col: int
    end_col: int

    def covers(self, line: int, col: int) -> bool:
        return self.line == line and self.col <= col < self.end_col


@dataclass(frozen=True)
class Symbol:
    """A declaration, a rule or a test block: what outlines and hovers show."""

    name: str
    kind: str  # relation, rule, test
    file: str
    line: int
    col: int
    end_line: int
    end_col: int
    doc: tuple[str, ...]
    #: a relation's columns as declared (``name: type``); a rule's head relation
    detail: str


def _name_at(text_lines: list[str], name: str, line: int, col: int) -> tuple[int, int]:
    """The range of ``name`` at or after (line, col) on its line (a declaration's span
    starts at ``rel``, a labelled rule's at its label)."""
    src = text_lines[line - 1] if 0 < line <= len(text_lines) else ""
    m = re.compile(r"(?<![A-Za-z0-9_])" + re.escape(name) + r"(?![A-Za-z0-9_])").search(
        src, max(0, col - 1))
    if m is None:
        return col, col + len(name)
    return m.start() + 1, m.end() + 1


class Index:
    def __init__(self, sources: Mapping[str, str]) -> None:
        self.names: list[Name] = []
        self.symbols: list[Symbol] = []
        self.decls: dict[str, Symbol] = {}
        for file, text in sources.items():
            try:
                module = parse(text, file)
            except GrantlogError:
                continue
            self._module(module, text.splitlines())

    def _module(self, module: ast.Module, lines: list[str]) -> None:
        file = module.file
        for st in module.statements:
            sp = st.span
            if isinstance(st, ast.Decl):
                col, end = _name_at(lines, st.name, sp.line, sp.col)
                self.names.append(Name(st.name, "decl", file, sp.line, col, end))
                cols = ", ".join(f"{c.name}: {c.type}" if c.type else c.name
                                 for c in st.columns)
                sym = Symbol(st.name, "relation", file, sp.line, sp.col, sp.end_line,
                             sp.end_col, st.doc, f"rel {st.name}({cols})")
                self.symbols.append(sym)
                self.decls.setdefault(st.name, sym)
            elif isinstance(st, ast.Clause):
                if st.label:
                    col, end = _name_at(lines, st.label, sp.line, sp.col)
                    self.names.append(Name(st.label, "rule", file, sp.line, col, end))
                    self.symbols.append(Symbol(st.label, "rule", file, sp.line, sp.col,
                                               sp.end_line, sp.end_col, st.doc,
                                               st.head.rel))
                self._atom(st.head, "fact" if st.is_fact else "head", file)
                for a in _atoms(st.body):
                    self._atom(a, "body", file)
            elif isinstance(st, ast.TestBlock):
                col, end = _name_at(lines, f'"{st.name}"', sp.line, sp.col)
                self.names.append(Name(st.name, "test-block", file, sp.line, col, end))
                self.symbols.append(Symbol(st.name, "test", file, sp.line, sp.col,
                                           sp.end_line, sp.end_col, st.doc, "test"))
                for item in st.items:
                    if isinstance(item, ast.Clause):
                        self._atom(item.head, "test", file)
                        for a in _atoms(item.body):
                            self._atom(a, "test", file)
                    else:
                        for a in _atoms(item.body):
                            self._atom(a, "test", file)

    def _atom(self, a: ast.Atom, kind: str, file: str) -> None:
        sp = a.span
        self.names.append(Name(a.rel, kind, file, sp.line, sp.col, sp.col + len(a.rel)))

    def at(self, file: str, line: int, col: int) -> Name | None:
        """The name under (line, col) of ``file``, if any."""
        for n in self.names:
            if n.file == file and n.covers(line, col):
                return n
        return None

    def uses(self, rel: str) -> Iterator[Name]:
        """Every occurrence of relation ``rel``'s name."""
        return (n for n in self.names
                if n.name == rel and n.kind not in ("rule", "test-block"))

    def rule(self, label: str) -> Symbol | None:
        return next((s for s in self.symbols if s.kind == "rule" and s.name == label), None)

    def in_file(self, file: str) -> list[Symbol]:
        return [s for s in self.symbols if s.file == file]


def _atoms(body: Iterable[ast.Literal]) -> Iterator[ast.Atom]:
    for lit in body:
        if isinstance(lit, ast.Atom):
            yield lit
        elif isinstance(lit, ast.Negation) and isinstance(lit.atom, ast.Atom):
            yield lit.atom
