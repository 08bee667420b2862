"""The intermediate representation every evaluator consumes.

Lowering (engine/compile/lower.py) turns checked AST modules into a :class:`Program`: relations with
their arity and declared columns, rules with plain terms (anonymous ``_`` renamed apart), base
facts with their origin, strata in evaluation order, and the `test` blocks.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import chain
from operator import itemgetter
from typing import Any

from grantlog.grammar.diagnostics import Diagnostic, GrantlogError, Span, error, plural

from .suggest import closest

#: where a diagnostic about an API call (not a rule file) points
API_SPAN = Span("<api>", 0, 0, 0, 0)

Value = str | int
Row = tuple[Value, ...]


@dataclass(frozen=True)
class Var:
    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Const:
    value: Value

    def __str__(self) -> str:
        return show_value(self.value)


Term = Var | Const


@dataclass(frozen=True)
class Atom:
    rel: str
    args: tuple[Term, ...]

    def __str__(self) -> str:
        return show_atom(self.rel, self.args)


@dataclass(frozen=True)
class Neg:
    atom: Atom

    def __str__(self) -> str:
        return f"not {self.atom}"


@dataclass(frozen=True)
class Cmp:
    op: str
    left: Term
    right: Term

    def __str__(self) -> str:
        return f"{self.left} {self.op} {self.right}"


Lit = Atom | Neg | Cmp


@dataclass(frozen=True)
class Rule:
    index: int
    name: str
    head: Atom
    body: tuple[Lit, ...]
    doc: tuple[str, ...] = ()
    span: Span = field(default=Span("<unknown>", 0, 0, 0, 0), compare=False)
    labelled: bool = False

    def __str__(self) -> str:
        return f"{self.head} :- {', '.join(str(b) for b in self.body)}."

    @property
    def doc_line(self) -> str | None:
        """The first paragraph of the doc comment, joined into one line."""
        para: list[str] = []
        for line in self.doc:
            if not line.strip():
                if para:
                    break
                continue
            para.append(line.strip())
        return " ".join(para) if para else None

    @property
    def summary(self) -> str:
        """The rule's name and its doc line."""
        return f"{self.name}: {self.doc_line}" if self.doc_line else self.name


@dataclass(frozen=True)
class Relation:
    name: str
    arity: int
    columns: tuple[str, ...]
    types: tuple[str | None, ...]
    doc: tuple[str, ...] = ()
    declared: bool = False
    span: Span | None = None
    annotations: tuple[str, ...] = ()


@dataclass(frozen=True)
class Fact:
    rel: str
    row: Row
    span: Span | None = None


@dataclass(frozen=True)
class Stratum:
    index: int
    relations: tuple[str, ...]
    rules: tuple[int, ...]
    recursive: bool


@dataclass(frozen=True)
class Expectation:
    body: tuple[Lit, ...]
    negated: bool
    text: str
    span: Span


@dataclass(frozen=True)
class TestCase:
    name: str
    file: str
    facts: tuple[Fact, ...]
    expects: tuple[Expectation, ...]
    span: Span


@dataclass
class Program:
    relations: dict[str, Relation]
    rules: list[Rule]
    #: the base facts (lowering makes an engine/core/facts.py ``Facts``: rows per relation)
    facts: Sequence[Fact]
    strata: list[Stratum]
    tests: list[TestCase]
    sources: dict[str, str]
    files: list[str]
    warnings: list[Diagnostic] = field(default_factory=list)
    decision: str = "allowed"
    #: derived relations answered on demand instead of materialized (engine/compile/materialize.py)
    virtual: frozenset[str] = frozenset()
    #: the rule files' facts with a validity interval: relation -> row -> (valid_from,
    #: valid_until), seconds since the epoch, unbounded -inf/inf (engine/answer/validity.py)
    validity: dict[str, dict[Row, tuple[float, float]]] = field(default_factory=dict)
    #: compiled artifacts shared by every Reasoner of this program (plans, generated code)
    compiled: dict[str, object] = field(default_factory=dict, repr=False, compare=False)

    def __repr__(self) -> str:
        """Short: ``<Program 37 relations, 120 rules, 96 facts, decision allowed/3>`` (the
        fields are public for the whole of it)."""
        d = self.relations.get(self.decision)
        decision = f"{self.decision}/{d.arity}" if d is not None else f"{self.decision} (none)"
        return (f"<Program {plural(len(self.relations), 'relation')}, "
                f"{plural(len(self.rules), 'rule')}, {plural(len(self.facts), 'fact')}, "
                f"decision {decision}>")

    @property
    def digest(self) -> str:
        """A hash of the rule files' texts (which policy answered: stores and logs record it)."""
        import hashlib

        h = hashlib.sha256()
        for name, text in sorted((n.replace("\\", "/").rsplit("/", 1)[-1], t)
                                 for n, t in self.sources.items()):
            h.update(name.encode() + b"\0" + text.encode() + b"\0")
        return h.hexdigest()[:16]

    def rules_for(self, rel: str) -> list[Rule]:
        # (rules, how many, head -> its rules): indexed once, again if the list changed
        got = self.compiled.get("rules_for")
        if not (isinstance(got, tuple) and got[0] is self.rules and got[1] == len(self.rules)):
            by: dict[str, list[Rule]] = {}
            for r in self.rules:
                by.setdefault(r.head.rel, []).append(r)
            got = self.compiled["rules_for"] = (self.rules, len(self.rules), by)
        return list(got[2].get(rel, ()))

    @property
    def derived(self) -> set[str]:
        return {r.head.rel for r in self.rules}

    @property
    def read_only(self) -> frozenset[str]:
        """The relations a write may not give facts of: rules derive them and they are not
        marked ``@writable``."""
        got = self.compiled.get("read_only")
        if not isinstance(got, frozenset):
            got = self.compiled["read_only"] = frozenset(
                r for r in self.derived
                if r not in self.relations or "writable" not in self.relations[r].annotations)
        return got

    def relation(self, rel: str) -> Relation:
        """The relation named ``rel``; else ``unknown-relation`` (with the closest name)."""
        r = self.relations.get(rel)
        if r is None:
            close = closest(rel, self.relations)
            raise GrantlogError([error(
                "unknown-relation", f"relation `{rel}` does not exist", API_SPAN,
                f"did you mean `{close}`?" if close else None)])
        return r

    def writable_rows(self, rel: str, rows: Iterable[Sequence[Value]]) -> list[Row]:
        """``rows`` of ``rel`` as a write gives them, checked (every backend checks alike):
        ``unknown-relation``, ``derived-relation`` (rules derive it and it is not
        ``@writable``), ``bad-fact`` (arity, types, 64-bit integers, NUL)."""
        r = self.relation(rel)
        refused = self.write_refusal(rel)
        if refused:
            raise GrantlogError([refused])
        out = [tuple(raw) for raw in rows]
        problem = rows_problem(r, out)
        if problem:
            raise GrantlogError([error("bad-fact", problem, API_SPAN)])
        return out

    def write_refusal(self, rel: str, span: Span | None = None,
                      what: str = "a write gives facts of") -> Diagnostic | None:
        """Why a write (an insert or a retract, a loaded or uploaded fact) may not give facts
        of ``rel`` — ``derived-relation``: rules derive it and it is not ``@writable`` — else
        None. ``span``: the write's place (a fact file's line; ``<api>`` when not given)."""
        if rel not in self.read_only:
            return None
        rules = [(r.name, r.span) for r in self.rules_for(rel)]
        return derived_relation(rel, rules, span or Span("<api>", 0, 0, 0, 0), what)


def derived_relation(rel: str, rules: Sequence[tuple[str, Span]], span: Span,
                     what: str) -> Diagnostic:
    """``derived-relation``: ``what`` (e.g. "a fact of") ``rel``, which ``rules`` (name,
    place) derive; names the first of them and the annotation that would allow it. The
    compiler (engine/compile/checks.py) and every write path report it alike."""
    by = ""
    if rules:
        name, at = rules[0]
        more = f" and {len(rules) - 1} more" if len(rules) > 1 else ""
        by = f" (`{name}` at {at.shown_file}:{at.line}{more})"
    return error("derived-relation",
                 f"{what} `{rel}`, which rules derive{by}; facts may be given only for base "
                 "relations", span,
                 f"if `{rel}` should take facts as well as rules, mark it "
                 f"`@writable rel {rel}(...)` in the rules")


def column_problem(relation: Relation, row: Sequence[object], start: int = 0) -> str | None:
    """What is wrong with the values of a row (from column ``start`` on) against the
    relation's declared column types (None: nothing)."""
    cols = zip(relation.columns[start:], relation.types[start:], row, strict=False)
    for col, typ, v in cols:
        if (typ == "int" and not isinstance(v, int)) or (
                typ == "string" and not isinstance(v, str)):
            return f"column `{col}` of `{relation.name}` is {typ}, got {v!r}"
    return None


def row_problem(relation: Relation, row: Row) -> str | None:
    """What is wrong with a base fact given at run time (None: nothing): its arity, a value
    that is not a string or an integer, a declared column type."""
    if len(row) != relation.arity:
        return f"`{relation.name}` takes {plural(relation.arity, 'value')}, got {len(row)}: {row!r}"
    if not all(isinstance(v, str | int) and not isinstance(v, bool) for v in row):
        return f"values must be strings or integers: {row!r}"
    if any(isinstance(v, str) and "\x00" in v for v in row):  # no store can keep it alike
        return f"values must not hold the NUL character: {row!r}"
    if any(isinstance(v, int) and not -(2**63) <= v < 2**63 for v in row):
        return f"integers are 64-bit (from {-(2**63)} to {2**63 - 1}): {row!r}"
    return column_problem(relation, row)


#: the value types a column may hold, by its declared type (undeclared: either)
_COLUMN_TYPES: dict[str | None, frozenset[type]] = {
    "int": frozenset({int}), "string": frozenset({str}), None: frozenset({str, int})}


def rows_problem(relation: Relation, rows: Sequence[Row]) -> str | None:
    """What is wrong with the first bad row of a batch (:func:`row_problem`'s message for
    it; None: nothing). Checked a column at a time: every row of the relation's arity, each
    column's values of exactly the types it takes (``str`` without NUL, ``int`` within 64
    bits); only a batch that fails this is checked row by row, for the message."""
    if _rows_fine(relation, rows):
        return None
    for row in rows:
        problem = row_problem(relation, row)
        if problem:
            return problem
    return None


def _rows_fine(relation: Relation, rows: Sequence[Row]) -> bool:
    """Whether every row of ``rows`` is a fine fact of ``relation`` (False: maybe not)."""
    if not rows:
        return True
    if set(map(len, rows)) != {relation.arity}:
        return False
    types = relation.types + (None,) * (relation.arity - len(relation.types))
    if "int" not in types[:relation.arity]:  # every column takes strings: joined at once
        try:
            return "\x00" not in "".join(chain.from_iterable(rows))  # type: ignore[arg-type]
        except TypeError:  # a value of another type: column by column
            pass
    for i, typ in enumerate(types[:relation.arity]):
        col = list(map(itemgetter(i), rows))
        if typ != "int":  # strings, most often: joined, which refuses any other type
            try:
                if "\x00" in "".join(col):
                    return False
                continue  # (a subclass of str, joined too, is a str row by row as well)
            except TypeError:
                pass
        kinds = set(map(type, col))
        if not kinds <= _COLUMN_TYPES.get(typ, _COLUMN_TYPES[None]):
            return False  # a bool, a float, a subclass, a value of the other type: row by row
        if str in kinds:
            strings = col if len(kinds) == 1 else [v for v in col if type(v) is str]
            if "\x00" in "".join(strings):
                return False
        if int in kinds:
            ints = col if len(kinds) == 1 else [v for v in col if type(v) is int]
            if min(ints) < -(2**63) or max(ints) >= 2**63:
                return False
    return True


def value_key(v: Value) -> tuple[int, Value]:
    """A sort key for grantlog's total order of values: every int before every string, then
    the natural order (what comparisons use, engine/plan/codegen.py)."""
    return (0, v) if isinstance(v, int) else (1, v)


def row_key(row: Iterable[Value]) -> tuple[tuple[int, Value], ...]:
    """A sort key for rows (and bindings): :func:`value_key` column by column."""
    return tuple((0, v) if isinstance(v, int) else (1, v) for v in row)


def sorted_rows(rows: Iterable[Row]) -> list[Row]:
    """``rows`` sorted by :func:`row_key`. Rows of strings only (most relations) are sorted
    by their values joined with NUL (:func:`joined_keys`): the same order, ten times faster
    (a value holding NUL, or an integer: as tuples, which compare column by column as
    :func:`row_key` does while a column's values are of one type; a comparison of an
    integer with a string raises, and then by :func:`row_key`)."""
    out = list(rows)
    keys = joined_keys(out)
    if keys is None:
        try:
            return sorted(out)
        except TypeError:  # a column of integers and strings
            return sorted(out, key=row_key)
    by_key = dict(zip(keys, out, strict=True))  # a list of strings sorts faster than pairs
    keys.sort()
    return list(map(by_key.__getitem__, keys))


def joined_keys(rows: Sequence[Row]) -> list[str] | None:
    """Each row's values joined with NUL, which sorts before every other character: sorted,
    these strings are in the rows' :func:`row_key` order. None where they are not: an
    integer among the values, a value holding NUL, rows of several widths."""
    try:
        keys = list(map("\x00".join, rows))  # type: ignore[arg-type]
    except TypeError:  # an integer somewhere
        return None
    seps = max(len(rows[0]) - 1, 0) if rows else 0
    if len(set(map(len, rows))) > 1 or "".join(keys).count("\x00") != len(rows) * seps:
        return None  # rows of several widths, a value holding NUL
    return keys


def position_after(values: Sequence[Any], after: Any) -> int:
    """Where the values (or rows) of sorted ``values`` that come after ``after`` start: a
    cursor's page begins there."""
    key = row_key if isinstance(after, tuple | list) else value_key
    return bisect.bisect_right(values, key(after), key=key)


def show_value(v: Value) -> str:
    if isinstance(v, int):
        return str(v)
    from grantlog.grammar.formatter import IDENT_RE, KEYWORDS, quote

    if IDENT_RE.match(v) and v not in KEYWORDS:
        return v
    return quote(v)


def show_atom(rel: str, args: tuple[Term, ...] | Row) -> str:
    if not args:
        return rel
    parts = [str(a) if isinstance(a, Var | Const) else show_value(a) for a in args]
    return f"{rel}({', '.join(parts)})"
