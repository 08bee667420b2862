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

import re
from collections.abc import Iterator

from . import ast
from .diagnostics import GrantlogError, Span
from .parser import parse

KEYWORDS = frozenset({"not", "rel", "import", "test", "expect"})
_FACT = re.compile(r"([ \t]*)([a-z][A-Za-z0-9_]*)(?:[ \t]*\((.*)\))?[ \t]*\.[ \t]*(//.*)?\r?")
_IDENT = re.compile(r"[a-z][A-Za-z0-9_]*")
_IDENTS = re.compile(r'(?<![A-Za-z0-9_"])(?:not|rel|import|test|expect)(?![A-Za-z0-9_])')
_INT = re.compile(r"-?[0-9]{1,18}")  # longer ones: the parser (it bounds their digits)
_ARG = re.compile(
    r'[ \t]*(?:"((?:[^"\\\n]|\\.)*)"|([a-z][A-Za-z0-9_]*)|(-?[0-9]{1,18}))[ \t]*(,|$)')
_ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "t": "\t"}
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

#: one plain fact: relation, values, (column, end column, quoted) of each value, and spans
Fact = tuple[str, tuple[str | int, ...]]


def _unescape(s: str) -> str | None:
    if "\\" not in s:
        return s
    out: list[str] = []
    i = 0
    while i < len(s):
        c = s[i]
        if c == "\\":
            e = _ESCAPES.get(s[i + 1]) if i + 1 < len(s) else None
            if e is None:
                return None  # the full parser reports the bad escape
            out.append(e)
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _args(inner: str, base: int) -> list[tuple[str | int, bool, int, int]] | None:
    """The constants of a fact's argument list (None: not plain constants). ``base``: the
    0-based column where ``inner`` starts; each constant comes with quoted and its span's
    columns (1-based, end exclusive)."""
    if not inner.strip():
        return [] if not inner.strip() else None
    out: list[tuple[str | int, bool, int, int]] = []
    if '"' not in inner:
        pos = 0
        for part in inner.split(","):
            word = part.strip(" \t")
            start = base + pos + (len(part) - len(part.lstrip(" \t")))
            pos += len(part) + 1
            if _IDENT.fullmatch(word):
                if word in KEYWORDS:
                    return None
                out.append((word, False, start + 1, start + 1 + len(word)))
            elif _INT.fullmatch(word):
                out.append((int(word), False, start + 1, start + 1 + len(word)))
            else:
                return None
        return out
    pos = 0
    while pos < len(inner):
        m = _ARG.match(inner, pos)
        if m is None:
            return None
        s, ident, num = m.group(1), m.group(2), m.group(3)
        g = 1 if s is not None else 2 if ident is not None else 3
        start = base + m.start(g) - (1 if g == 1 else 0)
        end = base + m.end(g) + (1 if g == 1 else 0)
        if s is not None:
            v = _unescape(s)
            if v is None:
                return None
            out.append((v, True, start + 1, end + 1))
        elif ident is not None:
            if ident in KEYWORDS:
                return None
            out.append((ident, False, start + 1, end + 1))
        else:
            out.append((int(num), False, start + 1, end + 1))
        pos = m.end()
        if m.group(4) == "" and pos < len(inner):
            return None
        if m.group(4) == "," and pos >= len(inner):
            return None  # a trailing comma
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
    facts: list[tuple[int, ast.Statement]] = []
    rest: list[str] = []
    lines = text.split("\n")
    fast = 0
    for item in scan_lines(text, file):
        if len(item) == 2:
            continue
        no, col, m = item
        args = _args(m.group(3) or "", m.start(3))
        if args is None:  # cannot happen: scan_lines took the line as plain constants
            return parse(text, file)
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
