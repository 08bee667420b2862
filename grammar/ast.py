"""The abstract syntax tree of a `.gl` file.

Every node carries a :class:`Span`; spans are metadata and are ignored by ``==`` and ``hash``,
so tests build nodes without positions and goldens stay stable (the Cedar convention).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .diagnostics import NO_SPAN, Span


@dataclass(frozen=True)
class Var:
    """A variable; ``_`` alone is anonymous (every occurrence is a fresh variable)."""

    name: str
    span: Span = field(default=NO_SPAN, compare=False, repr=False, kw_only=True)

    @property
    def anonymous(self) -> bool:
        return self.name == "_"


@dataclass(frozen=True)
class Const:
    """A constant: a string (written as an identifier or quoted) or an integer."""

    value: str | int
    quoted: bool = False
    span: Span = field(default=NO_SPAN, compare=False, repr=False, kw_only=True)


Term = Var | Const


@dataclass(frozen=True)
class Atom:
    """``rel(args...)``: a relation applied to terms; a clause's head, a body literal, a
    fact, a goal."""

    rel: str
    args: tuple[Term, ...] = ()
    span: Span = field(default=NO_SPAN, compare=False, repr=False, kw_only=True)


@dataclass(frozen=True)
class Negation:
    atom: Atom
    span: Span = field(default=NO_SPAN, compare=False, repr=False, kw_only=True)


@dataclass(frozen=True)
class Comparison:
    op: str
    left: Term
    right: Term
    span: Span = field(default=NO_SPAN, compare=False, repr=False, kw_only=True)


Literal = Atom | Negation | Comparison


@dataclass(frozen=True)
class Clause:
    """A rule ``label: head :- body.`` or, with an empty body, a fact ``head.``."""

    head: Atom
    body: tuple[Literal, ...] = ()
    label: str | None = None
    doc: tuple[str, ...] = ()
    #: a fact's validity interval as written (``from TIME until TIME``; None: unbounded)
    valid_from: Const | None = None
    valid_until: Const | None = None
    span: Span = field(default=NO_SPAN, compare=False, repr=False, kw_only=True)

    @property
    def is_fact(self) -> bool:
        return not self.body


@dataclass(frozen=True)
class Column:
    name: str
    type: str | None = None
    span: Span = field(default=NO_SPAN, compare=False, repr=False, kw_only=True)


@dataclass(frozen=True)
class Decl:
    """A relation declaration ``rel name(col: type, ...).``; each annotation as written
    without its ``@``: ``materialize``, or with its argument, ``hierarchy(edge)``."""

    name: str
    columns: tuple[Column, ...] = ()
    doc: tuple[str, ...] = ()
    annotations: tuple[str, ...] = ()
    span: Span = field(default=NO_SPAN, compare=False, repr=False, kw_only=True)


@dataclass(frozen=True)
class Import:
    """``import "path".``: the statements of another file join this one's."""

    path: str
    doc: tuple[str, ...] = ()
    span: Span = field(default=NO_SPAN, compare=False, repr=False, kw_only=True)


@dataclass(frozen=True)
class Expect:
    """``expect body.`` (some answer exists) or ``expect not body.`` (no answer exists)."""

    body: tuple[Literal, ...]
    negated: bool = False
    span: Span = field(default=NO_SPAN, compare=False, repr=False, kw_only=True)


@dataclass(frozen=True)
class TestBlock:
    name: str
    items: tuple[Clause | Expect, ...] = ()
    doc: tuple[str, ...] = ()
    span: Span = field(default=NO_SPAN, compare=False, repr=False, kw_only=True)


Statement = Import | Decl | Clause | TestBlock


@dataclass(frozen=True)
class Comment:
    """A ``//`` comment; kept for the formatter, not part of the program."""

    text: str
    line: int
    col: int


@dataclass(frozen=True)
class Module:
    file: str
    statements: tuple[Statement, ...] = ()
    comments: tuple[Comment, ...] = field(default=(), compare=False, repr=False)
    #: first and last source line of each statement, doc comments included (for the formatter)
    extents: tuple[tuple[int, int], ...] = field(default=(), compare=False, repr=False)
    span: Span = field(default=NO_SPAN, compare=False, repr=False, kw_only=True)
