"""The fast path for files of plain ground facts (``member(alice, eng).``, one per line).

A fact file of a million lines through the LALR parser costs ~200 µs a fact; most of it is
building the parse tree. :func:`scan` reads the lines that are exactly one ground fact with a
regular expression and hands only the other lines (rules, declarations, test blocks, facts
over several lines, anything malformed) to the full parser, with the fact lines blanked so that
every position the parser reports is still the file's own. :func:`parse_fast` builds the same
:class:`ast.Module` as :func:`parse` (spans included; a property test compares them).

A line is taken by the fast path only where a statement may start: outside braces, after a
statement ended (``.`` or ``}``), and not after a doc comment (``///`` attaches to the next
statement, which the full parser then reads).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator

from . import ast
from .diagnostics import GrantlogError, Span
from .parser import BOM, parse

KEYWORDS = frozenset({"not", "rel", "import", "test", "expect"})
_FACT = re.compile(r"([ \t]*)([a-z][A-Za-z0-9_]*)(?:[ \t]*\((.*)\))?[ \t]*\.[ \t]*(//.*)?\r?")
_IDENTS = re.compile(r'(?<![A-Za-z0-9_"])(?:not|rel|import|test|expect)(?![A-Za-z0-9_])')
_TOKEN = r'(?:"[^"\\\n]*"|[a-z][A-Za-z0-9_]*|-?[0-9]{1,18})'
#: an argument list of plain constants (strings without escapes: others go to the parser)
_LIST = re.compile(rf"[ \t]*{_TOKEN}(?:[ \t]*,[ \t]*{_TOKEN})*[ \t]*")
_TOKENS = re.compile(r'("[^"\\\n]*")|([a-z][A-Za-z0-9_]*)|(-?[0-9]{1,18})')


def values(inner: str | None) -> tuple[str | int, ...]:
    """The constants of a plain fact's argument list (from :func:`scan_lines`'s match)."""
    if inner is None or not inner.strip():
        return ()
    out: list[str | int] = []
    for q, ident, num in _TOKENS.findall(inner):
        if q:
            out.append(q[1:-1])
        elif ident:
            out.append(ident)
        else:
            out.append(int(num))
    return tuple(out)

def _args(inner: str, base: int) -> list[tuple[str | int, bool, int, int]]:
    """The constants of an argument list :func:`scan_lines` took (plain constants, strings
    without escapes), each with whether it was quoted and its span's columns (1-based, end
    exclusive); ``base``: the 0-based column where ``inner`` starts."""
    out: list[tuple[str | int, bool, int, int]] = []
    for m in _TOKENS.finditer(inner):
        quoted, ident, num = m.groups()
        a, b = base + m.start() + 1, base + m.end() + 1
        if quoted:
            out.append((quoted[1:-1], True, a, b))
        elif ident:
            out.append((ident, False, a, b))
        else:
            out.append((int(num), False, a, b))
    return out


def _significant(line: str) -> str:
    """The line without strings' contents and without its // comment (for brace and end
    tracking)."""
    out: list[str] = []
    i = 0
    n = len(line)
    while i < n:
        c = line[i]
        if c == '"':
            j = i + 1
            while j < n and line[j] != '"':
                j += 2 if line[j] == "\\" else 1
            out.append('""')
            i = j + 1
        elif c == "/" and line.startswith("//", i):
            break
        else:
            out.append(c)
            i += 1
    return "".join(out).strip()


def scan_lines(text: str, file: str,
               ) -> Iterator[tuple[int, int, re.Match[str]] | tuple[int, str]]:
    """Per line: ``(line, col, match)`` for a plain fact (its argument list is group 3: see
    :func:`values`), ``(line, text)`` for a line the full parser must read (blank and
    comment lines are skipped)."""
    depth = 0
    open_stmt = False  # a statement began and has not ended
    doc = False
    for no, line in enumerate(text.split("\n"), 1):
        stripped = line.strip()
        if not stripped or (stripped.startswith("//") and not stripped.startswith("///")):
            if stripped:
                yield no, line
            continue
        if depth == 0 and not open_stmt and not doc:
            m = _FACT.fullmatch(line)
            if m is not None and m.group(2) not in KEYWORDS:
                inner = m.group(3)
                if inner is None or not inner.strip() or (
                        _LIST.fullmatch(inner) and (
                            not KEYWORDS.intersection(_IDENTS.findall(inner)))):
                    yield no, len(m.group(1)) + 1, m
                    continue
        yield no, line
        if stripped.startswith("///"):
            doc = True
            continue
        doc = False
        sig = _significant(line)
        depth += sig.count("{") - sig.count("}")
        if sig:
            open_stmt = depth > 0 or not sig.endswith((".", "}"))


def parse_fast(text: str, file: str = "<input>") -> ast.Module:
    """:func:`parse`'s module, with plain fact lines read without the parser."""
    text = text.removeprefix(BOM)
    facts: list[tuple[int, ast.Statement]] = []
    rest: list[str] = []
    lines = text.split("\n")
    fast = 0
    for item in scan_lines(text, file):
        if len(item) == 2:
            continue
        no, col, m = item
        args = _args(m.group(3) or "", m.start(3))
        fast += 1
        rel = m.group(2)
        # the atom ends after `)` (or after the name), the clause after the `.`
        line = lines[no - 1]
        atom_end = (m.end(3) + 1 if m.group(3) is not None else m.end(2)) + 1
        dot = line.index(".", atom_end - 1) + 1
        consts = tuple(ast.Const(v, q, span=Span(file, no, a, no, b)) for v, q, a, b in args)
        atom = ast.Atom(rel, consts, span=Span(file, no, col, no, atom_end))
        facts.append((no, ast.Clause(atom, span=Span(file, no, col, no, dot + 1))))
        lines[no - 1] = ""
    if not fast:
        return parse(text, file)
    rest = lines
    try:
        mod = parse("\n".join(rest), file) if any(x.strip() for x in rest) else None
    except GrantlogError:
        # report exactly what the parser says of the whole file (its contextual lexer can
        # read a line differently after a statement than at the start)
        return parse(text, file)
    merged: list[tuple[tuple[int, int], ast.Statement, tuple[int, int]]] = []
    if mod is not None:
        ext = mod.extents if len(mod.extents) == len(mod.statements) else None
        for i, st in enumerate(mod.statements):
            merged.append(((st.span.line, st.span.col), st,
                           ext[i] if ext else (st.span.line, st.span.end_line)))
    for no, st in facts:
        merged.append(((no, st.span.col), st, (no, no)))
    merged.sort(key=lambda x: x[0])
    end = text.count("\n") + 1
    return ast.Module(file, tuple(st for _, st, _ in merged),
                      mod.comments if mod is not None else (),
                      tuple(e for _, _, e in merged), span=Span(file, 1, 1, end, 1))


#: texts up to this size are kept parsed (an editor re-checks unchanged imports on every edit)
CACHE_TEXT = 1 << 18


@functools.lru_cache(maxsize=32)
def _parse_kept(text: str, file: str) -> ast.Module:
    return parse_fast(text, file)


def parse_cached(text: str, file: str = "<input>") -> ast.Module:
    """:func:`parse_fast`, kept for the last 32 (file, text) pairs of up to 256 KiB: the AST
    is immutable, so the compiler and the language server share one parse of a file that did
    not change. A text that does not parse is parsed again each time (the error is raised)."""
    if len(text) > CACHE_TEXT:
        return parse_fast(text, file)
    return _parse_kept(text, file)
