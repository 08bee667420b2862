"""The one reader of fact files: plain ground facts (``member(alice, eng).``, one per line)
read into rows without the parser.

A fact file of a million lines through the LALR parser costs ~200 µs a fact; most of it is
building the parse tree, and an AST node per constant keeps the garbage collector busy after.
:func:`read_facts` reads the lines that are exactly one ground fact with regular expressions
(a chunk of lines at a time, then each relation's argument lists a column at a time) into a
:class:`FactTable` — rows per relation and each row's line number; spans are made from the
line when a diagnostic or an explanation asks — and hands only the other lines (rules,
declarations, test blocks, facts over several lines, strings with escapes, anything
malformed) to the full parser, with the fact lines blanked so that every position the parser
reports is still the file's own. The compiler (engine/compile/loader.py), and through it
``eval``, ``check``, ``test``, and the store's loader (grantlog/store/ingest.py) read facts
through it; :func:`parse_fast` builds from it the same :class:`ast.Module` as :func:`parse`
(spans included; property tests compare them, tests/test_fact_reader.py).

A line is taken by the fast path only where a statement may start: outside braces, after a
statement ended (``.`` or ``}``), and not after a doc comment (``///`` attaches to the next
statement, which the full parser then reads).
"""

from __future__ import annotations

import functools
import gc
import re
from array import array
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from . import ast
from .diagnostics import GrantlogError, Span
from .parser import BOM, parse

Row = tuple[str | int, ...]
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


class FactTable:
    """The plain fact lines of one file, read without the parser: per relation its rows in
    file order and each row's line number (an ``array``: 4 bytes a fact). Spans are made on
    demand from the line (:meth:`atom_span`, :meth:`clause`), so errors still point at
    ``file:line:col`` with the parser's columns."""

    def __init__(self, file: str, text: str) -> None:
        self.file = file
        self.text = text
        self.rows: dict[str, list[Row]] = {}
        self.lines: dict[str, array[int]] = {}
        self._starts: array[int] | None = None  # where each line starts, once asked

    def __len__(self) -> int:
        return sum(map(len, self.rows.values()))

    def line(self, no: int) -> str:
        """The text of line ``no`` (1-based)."""
        if self._starts is None:
            self._starts = array("Q", [0])
            self._starts.extend(m.end() for m in re.finditer("\n", self.text))
        start = self._starts[no - 1]
        end = self.text.find("\n", start)
        return self.text[start:] if end < 0 else self.text[start:end]

    def clause(self, rel: str, i: int) -> ast.Clause:
        """Row ``i`` of ``rel`` as the parser reads it (the same nodes and spans)."""
        return _clause(self.line(self.lines[rel][i]), self.lines[rel][i], self.file)

    def atom_span(self, rel: str, i: int) -> Span:
        """The span of row ``i``'s atom (what a fact's diagnostics point at)."""
        no = self.lines[rel][i]
        m = _FACT.fullmatch(self.line(no))
        assert m is not None
        end = (m.end(3) + 1 if m.group(3) is not None else m.end(2)) + 1
        return Span(self.file, no, len(m.group(1)) + 1, no, end)


def _clause(line: str, no: int, file: str) -> ast.Clause:
    """A plain fact line as a clause, spans included."""
    m = _FACT.fullmatch(line)
    assert m is not None
    col = len(m.group(1)) + 1
    args = _args(m.group(3) or "", m.start(3))
    # the atom ends after `)` (or after the name), the clause after the `.`
    atom_end = (m.end(3) + 1 if m.group(3) is not None else m.end(2)) + 1
    dot = line.index(".", atom_end - 1) + 1
    consts = tuple(ast.Const(v, q, span=Span(file, no, a, no, b)) for v, q, a, b in args)
    atom = ast.Atom(m.group(2), consts, span=Span(file, no, col, no, atom_end))
    return ast.Clause(atom, span=Span(file, no, col, no, dot + 1))


#: a line, as a plain fact (indent, relation, argument list) or as anything else
_LINE = re.compile(r"^(?:([ \t]*)([a-z][A-Za-z0-9_]*)(?:[ \t]*\((.*)\))?[ \t]*\.[ \t]*(?://.*)?"
                   r"\r?|(.*))$", re.M)
#: text read per call of the line expression (progress advances by it)
CHUNK = 1 << 20
#: the widest relation read a column at a time (wider ones are read a line at a time)
WIDEST = 24
_T = r'(?:"([^"\\\n]*)"|([a-z][A-Za-z0-9_]*)|(-?[0-9]{1,18}))'


@functools.lru_cache(maxsize=WIDEST)
def _columns(k: int) -> re.Pattern[str]:
    """Argument lists of exactly ``k`` plain constants, one a line (3 groups a constant)."""
    return re.compile("^[ \t]*" + _T + ("[ \t]*,[ \t]*" + _T) * (k - 1) + "[ \t]*$", re.M)


def _plain(inner: str) -> bool:
    """Whether an argument list is plain constants (no keyword among its identifiers)."""
    if not inner.strip():
        return True
    return _LIST.fullmatch(inner) is not None and KEYWORDS.isdisjoint(
        i for _, i, _ in _TOKENS.findall(inner))


def _batch(inners: list[str]) -> list[Row] | None:
    """The rows of one relation's argument lists, read a column at a time (one regular
    expression over all of them); None when one of them is not plain constants or they do
    not all have as many (then they are read a line at a time)."""
    first = inners[0]
    if not first.strip():
        return [()] * len(inners) if not "".join(inners).strip() else None
    k = len(_TOKENS.findall(first))
    if not 0 < k <= WIDEST:
        return None
    found = _columns(k).findall("\n".join(inners))
    if len(found) != len(inners):
        return None
    cols = list(zip(*found, strict=True))
    values: list[Sequence[str | int]] = []
    for j in range(0, 3 * k, 3):
        quoted, ident, num = cols[j], cols[j + 1], cols[j + 2]
        if any(num):
            values.append([int(n) if n else (i or q)
                           for q, i, n in zip(quoted, ident, num, strict=True)])
        elif any(ident):
            if not KEYWORDS.isdisjoint(ident):
                return None
            values.append(ident if all(ident) else [i or q for q, i in zip(quoted, ident,
                                                                            strict=True)])
        else:
            values.append(quoted)
    return list(zip(*values, strict=True))


class _State:
    """Where a statement may start (the fast path takes a line only there): outside
    braces, after a statement ended, not after a doc comment."""

    def __init__(self) -> None:
        self.depth = 0
        self.open_stmt = False  # a statement began and has not ended
        self.doc = False

    @property
    def clean(self) -> bool:
        return self.depth == 0 and not self.open_stmt and not self.doc

    def after(self, stripped: str, line: str) -> None:
        """The state after a line the parser reads (not blank, not a `//` comment)."""
        if stripped.startswith("///"):
            self.doc = True
            return
        self.doc = False
        sig = _significant(line)
        self.depth += sig.count("{") - sig.count("}")
        if sig:
            self.open_stmt = self.depth > 0 or not sig.endswith((".", "}"))


def _comment_or_blank(stripped: str) -> bool:
    return not stripped or (stripped.startswith("//") and not stripped.startswith("///"))


@contextmanager
def collector_paused() -> Iterator[None]:
    """The garbage collector off inside the block (a bulk read makes a tuple per fact,
    none of them garbage, and a collection walks every one); restored after, also on an
    error. The rows are looked at once by the next collection, which then stops tracking
    them (a tuple of strings and integers cannot be in a cycle)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def read_facts(text: str, file: str = "<input>",
               advance: Callable[[int], None] | None = None) -> tuple[ast.Module, FactTable]:
    """The file as the parser reads it, its plain fact lines apart: (the module of every
    other statement, the table of the plain facts). The lines are read a megabyte at a
    time (``advance`` is told each one's length), the argument lists of each relation
    together (:func:`_batch`); a line whose arguments turn out not to be plain constants
    goes to the parser with the rest (the line-at-a-time reading of :func:`scan_lines`
    decides where such a line would change what follows). Raises the parser's
    :class:`GrantlogError` for a file that does not parse."""
    if len(text) <= CHUNK:
        return _read(text, file, advance)
    with collector_paused():
        return _read(text, file, advance)


def _read(text: str, file: str,
          advance: Callable[[int], None] | None) -> tuple[ast.Module, FactTable]:
    text = text.removeprefix(BOM)
    table = FactTable(file, text)
    rest: list[tuple[int, str]] = []
    state = _State()
    clean = True
    pos, no, n = 0, 1, len(text)
    while True:
        end = n if n - pos <= CHUNK else text.rfind("\n", pos, pos + CHUNK)
        if end < pos:  # a line longer than a chunk
            end = text.find("\n", pos + CHUNK)
            end = n if end < 0 else end
        found = _LINE.findall(text, pos, end)
        if len(found) != text.count("\n", pos, end) + 1:  # never: one tuple a line
            return _exactly(text, file)
        lines: list[str] | None = None
        first = no
        # this chunk's fact lines per relation: their argument lists and line numbers
        pending: dict[str, tuple[list[str], array[int]]] = {}
        for no, (_ind, rel, inner, other) in enumerate(found, first):
            if rel:
                if clean and rel not in KEYWORDS:
                    got = pending.get(rel)
                    if got is None:
                        got = pending[rel] = ([], array("I"))
                    got[0].append(inner)
                    got[1].append(no)
                    continue
                if lines is None:
                    lines = text[pos:end].split("\n")
                other = lines[no - first]
            stripped = other.strip()
            if _comment_or_blank(stripped):
                if stripped:
                    rest.append((no, other))
                continue
            rest.append((no, other))
            state.after(stripped, other)
            clean = state.clean
        del found, lines
        if not _take(pending, table, rest):
            return _exactly(text, file)  # a line that is not a plain fact changes what follows
        if advance is not None:
            advance(min(end + 1, n) - pos)  # the chunk and its newline
        if end >= n:
            break
        pos, no = end + 1, no + 1
    return _rest(text, file, rest, table), table


def _take(pending: dict[str, tuple[list[str], array[int]]], table: FactTable,
          rest: list[tuple[int, str]]) -> bool:
    """Read the argument lists of a chunk's fact lines into the table, a relation at a
    time; a line whose arguments are not plain constants goes to ``rest``. False when such
    a line would change where statements may start (then the file is read a line at a
    time: :func:`_exactly`)."""
    for rel, (inners, nos) in pending.items():
        rows = _batch(inners)
        if rows is None:
            rows, taken = [], array("I")
            for inner, at in zip(inners, nos, strict=True):
                if _plain(inner):
                    rows.append(values(inner))
                    taken.append(at)
                    continue
                line = table.line(at)
                sig = _significant(line)
                if "{" in sig or "}" in sig or not sig.endswith("."):
                    return False
                rest.append((at, line))
            nos = taken
            if not rows:
                continue
        if rel in table.rows:
            table.rows[rel].extend(rows)
            table.lines[rel].extend(nos)
        else:
            table.rows[rel] = rows
            table.lines[rel] = nos
    return True


def _exactly(text: str, file: str) -> tuple[ast.Module, FactTable]:
    """:func:`read_facts` a line at a time (:func:`scan_lines`)."""
    table = FactTable(file, text)
    rest: list[tuple[int, str]] = []
    nos: dict[str, list[int]] = {}
    for item in scan_lines(text, file):
        if len(item) == 2:
            rest.append(item)
            continue
        no, _col, m = item
        table.rows.setdefault(m.group(2), []).append(values(m.group(3)))
        nos.setdefault(m.group(2), []).append(no)
    table.lines = {rel: array("I", at) for rel, at in nos.items()}
    return _rest(text, file, rest, table), table


def _rest(text: str, file: str, rest: list[tuple[int, str]], table: FactTable) -> ast.Module:
    """The module of the lines the fast path left (the others blank, so every position is
    the file's own); the whole file's when no line was taken, or when the rest does not
    parse (then the parser reports exactly what it says of the whole file: its contextual
    lexer can read a line differently after a statement than at the start)."""
    if not table.rows:
        return parse(text, file)
    total = text.count("\n") + 1
    span = Span(file, 1, 1, total, 1)
    if not rest:
        return ast.Module(file, (), (), (), span=span)
    rest.sort()
    parts: list[str] = []
    prev = 1
    for no, line in rest:
        parts.append("\n" * (no - prev))
        parts.append(line)
        prev = no
    parts.append("\n" * (total - prev))
    try:
        mod = parse("".join(parts), file)
    except GrantlogError:
        whole = parse(text, file)  # raises, as a rule
        table.rows.clear()
        table.lines.clear()
        return whole
    return ast.Module(file, mod.statements, mod.comments, mod.extents, span=span)


def parse_fast(text: str, file: str = "<input>") -> ast.Module:
    """:func:`parse`'s module, with plain fact lines read without the parser
    (:func:`read_facts`, each fact then made into its clause)."""
    mod, table = read_facts(text, file)
    if not table.rows:
        return mod
    merged: list[tuple[tuple[int, int], ast.Statement, tuple[int, int]]] = []
    ext = mod.extents if len(mod.extents) == len(mod.statements) else None
    for i, st in enumerate(mod.statements):
        merged.append(((st.span.line, st.span.col), st,
                       ext[i] if ext else (st.span.line, st.span.end_line)))
    for rel, nos in table.lines.items():
        for i, no in enumerate(nos):
            c = table.clause(rel, i)
            merged.append(((no, c.span.col), c, (no, no)))
    merged.sort(key=lambda x: x[0])
    return ast.Module(file, tuple(st for _, st, _ in merged), mod.comments,
                      tuple(e for _, _, e in merged), span=mod.span)
#: texts up to this size are kept parsed (an editor re-checks unchanged imports on every edit)
CACHE_TEXT = 1 << 18


@functools.lru_cache(maxsize=32)
def _parse_kept(text: str, file: str) -> ast.Module:
    return parse_fast(text, file)


@functools.lru_cache(maxsize=32)
def _read_kept(text: str, file: str) -> tuple[ast.Module, FactTable]:
    return read_facts(text, file)


def read_cached(text: str, file: str = "<input>") -> tuple[ast.Module, FactTable]:
    """:func:`read_facts`, kept as :func:`parse_cached` keeps its modules (the table is
    shared: do not modify it)."""
    if len(text) > CACHE_TEXT:
        return read_facts(text, file)
    return _read_kept(text, file)


def parse_cached(text: str, file: str = "<input>") -> ast.Module:
    """:func:`parse_fast`, kept for the last 32 (file, text) pairs of up to 256 KiB: the AST
    is immutable, so the compiler and the language server share one parse of a file that did
    not change. A text that does not parse is parsed again each time (the error is raised)."""
    if len(text) > CACHE_TEXT:
        return parse_fast(text, file)
    return _parse_kept(text, file)
