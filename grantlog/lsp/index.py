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
from grantlog.grammar.facts import parse_cached


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
    """``fallback``: for a file that does not parse now (being typed), the last text of it
    that did, whose names are used instead (completion and hovers keep working)."""

    def __init__(self, sources: Mapping[str, str],
                 fallback: Mapping[str, str] | None = None) -> None:
        #: files that parsed, with the text that did
        self.parsed: dict[str, str] = {}
        self.names: list[Name] = []
        self.symbols: list[Symbol] = []
        self.decls: dict[str, Symbol] = {}
        #: variables by clause: (file, line, col) of the clause -> its variables' names
        self.vars: dict[tuple[str, int, int], list[Name]] = {}
        #: constants written in facts, by (relation, column)
        self.values: dict[tuple[str, int], set[str | int]] = {}
        #: relation -> column names (declared, or c0, c1, ... from a use)
        self.columns: dict[str, tuple[str, ...]] = {}
        for file, text in sources.items():
            for attempt in (text, (fallback or {}).get(file)):
                if attempt is None:
                    continue
                try:
                    module = parse_cached(attempt, file)
                except GrantlogError:
                    continue
                self.parsed[file] = attempt
                self._module(module, attempt.splitlines())
                break

    def _module(self, module: ast.Module, lines: list[str]) -> None:
        file = module.file
        for st in module.statements:
            sp = st.span
            if isinstance(st, ast.Decl):
                col, end = _name_at(lines, st.name, sp.line, sp.col)
                self.names.append(Name(st.name, "decl", file, sp.line, col, end))
                cols = ", ".join(f"{c.name}: {c.type}" if c.type else c.name
                                 for c in st.columns)
                self.columns[st.name] = tuple(c.name for c in st.columns)
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
                self._clause_vars(st, file)
                if st.is_fact:
                    for i, t in enumerate(st.head.args):
                        if isinstance(t, ast.Const):
                            self.values.setdefault((st.head.rel, i), set()).add(t.value)
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
                        self._clause_vars(item, file)
                    else:
                        for a in _atoms(item.body):
                            self._atom(a, "test", file)
                        self._clause_vars(item, file)

    def _atom(self, a: ast.Atom, kind: str, file: str) -> None:
        sp = a.span
        self.names.append(Name(a.rel, kind, file, sp.line, sp.col, sp.col + len(a.rel)))
        self.columns.setdefault(a.rel, tuple(f"c{i}" for i in range(len(a.args))))

    def _clause_vars(self, c: ast.Clause | ast.Expect, file: str) -> None:
        """The named variables of one rule, fact or ``expect`` (a variable's scope)."""
        key = (file, c.span.line, c.span.col)
        out = self.vars.setdefault(key, [])
        lits: list[ast.Literal] = [c.head, *c.body] if isinstance(c, ast.Clause) else \
            list(c.body)
        for lit in lits:
            terms: tuple[ast.Term, ...]
            if isinstance(lit, ast.Atom):
                terms = lit.args
            elif isinstance(lit, ast.Negation):
                terms = lit.atom.args
            else:
                terms = (lit.left, lit.right)
            for t in terms:
                if isinstance(t, ast.Var) and not t.anonymous:
                    sp = t.span
                    out.append(Name(t.name, "var", file, sp.line, sp.col,
                                    sp.col + len(t.name)))

    def var_at(self, file: str, line: int, col: int) -> tuple[Name, list[Name]] | None:
        """The variable under (line, col) and every occurrence of it in its clause."""
        for (f, _, _), names in self.vars.items():
            if f != file:
                continue
            for n in names:
                if n.covers(line, col):
                    return n, [m for m in names if m.name == n.name]
        return None

    def clause_vars(self, name: Name) -> list[Name]:
        """Every variable of the clause ``name`` (a variable) is in."""
        for (f, _, _), names in self.vars.items():
            if f == name.file and name in names:
                return names
        return []

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
