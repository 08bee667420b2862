"""A program's base facts, kept per relation (:class:`Facts`).

The facts of a fact file arrive as rows per relation from the fast reader
(grammar/facts.py ``read_facts``) with each row's line number only; a fact's span is made
when something asks for it (a diagnostic, an explanation naming where a fact was written),
so a million facts cost their rows and four bytes each, not a node and a span apiece.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, MutableMapping, Sequence
from typing import Any, overload

from grantlog.grammar.diagnostics import Span
from grantlog.grammar.facts import FactTable

from .ir import Fact, Row


class _Given:
    """Facts given one by one (a rule file's parsed facts, a list of :class:`Fact`)."""

    def __init__(self) -> None:
        self.rows: list[Row] = []
        self.where: list[Span | None] = []

    def span(self, i: int) -> Span | None:
        return self.where[i]


class _Read:
    """One relation's rows of a fact file read by the fast reader."""

    def __init__(self, table: FactTable, rel: str) -> None:
        self.table = table
        self.rel = rel
        self.rows = table.rows[rel]

    def span(self, i: int) -> Span | None:
        return self.table.atom_span(self.rel, i)


_Part = _Given | _Read


class Facts(Sequence[Fact]):
    """Base facts per relation, in the order given within each relation. A sequence of
    :class:`Fact` (what every evaluator reads: iterating makes each fact with its span);
    :meth:`by_relation` and :meth:`spans` are the fast ways in."""

    def __init__(self, facts: Iterable[Fact] = ()) -> None:
        self._parts: dict[str, list[_Part]] = {}
        self._n = 0
        for f in facts:
            self.add(f)

    @classmethod
    def of(cls, facts: Sequence[Fact]) -> Facts:
        """``facts`` as :class:`Facts` (itself when it is one)."""
        return facts if isinstance(facts, Facts) else cls(facts)

    def add(self, fact: Fact) -> None:
        parts = self._parts.setdefault(fact.rel, [])
        last = parts[-1] if parts else None
        if not isinstance(last, _Given):
            last = _Given()
            parts.append(last)
        last.rows.append(fact.row)
        last.where.append(fact.span)
        self._n += 1

    def add_table(self, table: FactTable) -> None:
        """The facts of a fact file read by the fast reader (kept, not copied)."""
        for rel, rows in table.rows.items():
            self._parts.setdefault(rel, []).append(_Read(table, rel))
            self._n += len(rows)

    def rows(self, rel: str) -> Sequence[Row]:
        """The rows of ``rel`` (do not modify them)."""
        parts = self._parts.get(rel, ())
        if len(parts) == 1:
            return parts[0].rows
        return list(itertools.chain.from_iterable(p.rows for p in parts))

    def of_relation(self, rel: str, keep: Callable[[Row], bool] | None = None
                    ) -> Iterator[Fact]:
        """The facts of ``rel`` (those whose row ``keep`` accepts), each with its span (made
        only for the facts yielded)."""
        for p in self._parts.get(rel, ()):
            for i, row in enumerate(p.rows):
                if keep is None or keep(row):
                    yield Fact(rel, row, p.span(i))

    def by_relation(self) -> dict[str, Sequence[Row]]:
        """Every relation's rows (do not modify them)."""
        return {rel: self.rows(rel) for rel in self._parts}

    def restrict(self, keep: Iterable[str]) -> Facts:
        """The facts of the relations ``keep`` only."""
        wanted = set(keep)
        out = Facts()
        for rel, parts in self._parts.items():
            if rel in wanted:
                out._parts[rel] = list(parts)
                out._n += sum(len(p.rows) for p in parts)
        return out

    def spans(self, rel: str) -> RowSpans:
        """Where each row of ``rel`` was first written (made when first asked)."""
        return RowSpans(self._parts.get(rel, []))

    def __len__(self) -> int:
        return self._n

    def __iter__(self) -> Iterator[Fact]:
        for rel, parts in self._parts.items():
            for p in parts:
                for i, row in enumerate(p.rows):
                    yield Fact(rel, row, p.span(i))

    @overload
    def __getitem__(self, i: int) -> Fact: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[Fact]: ...

    def __getitem__(self, i: int | slice) -> Fact | Sequence[Fact]:
        return list(self)[i]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return list(self) == list(other)

    def __repr__(self) -> str:
        return f"<Facts {self._n} of {len(self._parts)} relations>"


class RowSpans(MutableMapping[Row, Span]):
    """Row → where it was first written, for one relation; indexed on first use (an
    explanation, a retraction of a written fact), forgetting rows as they are removed."""

    def __init__(self, parts: list[_Part]) -> None:
        self._parts = parts
        self._index: dict[Row, tuple[int, int]] | None = None

    def _built(self) -> dict[Row, tuple[int, int]]:
        if self._index is None:
            index: dict[Row, tuple[int, int]] = {}
            for k in range(len(self._parts) - 1, -1, -1):  # the first place wins
                rows = self._parts[k].rows
                places = zip(itertools.repeat(k), range(len(rows) - 1, -1, -1), strict=False)
                index.update(zip(reversed(rows), places, strict=True))
            self._index = index
        return self._index

    def __getitem__(self, row: Row) -> Span:
        k, i = self._built()[row]
        span = self._parts[k].span(i)
        if span is None:
            raise KeyError(row)
        return span

    def __setitem__(self, row: Row, span: Span) -> None:
        part = _Given()
        part.rows.append(row)
        part.where.append(span)
        self._parts = [*self._parts, part]
        self._built()[row] = (len(self._parts) - 1, 0)

    def __delitem__(self, row: Row) -> None:
        del self._built()[row]

    def __iter__(self) -> Iterator[Row]:
        return iter(self._built())

    def __len__(self) -> int:
        return len(self._built())

    def __bool__(self) -> bool:
        if self._index is None:
            return any(p.rows for p in self._parts)
        return bool(self._index)

    def __contains__(self, row: Any) -> bool:
        return row in self._built()
