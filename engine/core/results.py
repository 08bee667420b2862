"""The engine's result types: what every backend (memory, pyDatalog, the remote client,
Spark) answers with, and the transaction the writers fill."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from grantlog.grammar.diagnostics import Diagnostic, GrantlogError, Span, error

from . import arguments, ir

Rows = set[ir.Row]
#: checks a relation's rows and returns them as tuples (raises GrantlogError on a bad row)
RowCheck = Callable[[str, Iterable[Sequence[ir.Value]]], list[ir.Row]]


def _as_rows(rel: str, rows: Iterable[Sequence[ir.Value]]) -> list[ir.Row]:
    return list(rows)  # type: ignore[arg-type]  # already tuples (``arguments.rows``)


@dataclass
class Change:
    """Rows a relation gained and lost in one transaction."""

    added: Rows = field(default_factory=set)
    removed: Rows = field(default_factory=set)

    def __bool__(self) -> bool:
        return bool(self.added or self.removed)


@dataclass(frozen=True)
class Decision:
    """The answer to ``check``: allowed or not, the rules that decided it, and the revision
    of the facts it saw (not part of equality: the same answer at two revisions is equal).
    ``warnings``: what is wrong with the question itself (``unknown-constant``: a denial
    that is only a typo, engine/answer/vocabulary.py); not part of equality either."""

    allowed: bool
    reasons: tuple[str, ...] = ()
    revision: int = field(default=0, compare=False)
    warnings: tuple[Diagnostic, ...] = field(default=(), compare=False)

    def warned(self, code: str) -> bool:
        """Is ``code`` among the warnings?"""
        return any(d.code == code for d in self.warnings)

    def __bool__(self) -> bool:
        return self.allowed


_T = TypeVar("_T")


class Answers(list[_T]):
    """The answers of ``query``, ``list`` and ``who``: a list that also says the revision of
    the facts it was answered at, and ``warnings`` about the question (``unknown-constant``:
    an empty answer that is only a typo)."""

    __slots__ = ("revision", "warnings")

    def __init__(self, items: Iterable[_T] = (), revision: int = 0,
                 warnings: tuple[Diagnostic, ...] = ()) -> None:
        super().__init__(items)
        self.revision = revision
        self.warnings = warnings


class RevisionConflict(GrantlogError):
    """A compare-and-set transaction (``if_revision=``) found another revision."""

    def __init__(self, expected: int, actual: int) -> None:
        super().__init__([error(
            "revision-conflict",
            f"the transaction expected revision {expected}, but the facts are at {actual}",
            Span("<api>", 0, 0, 0, 0), "read again and retry against the new revision")])
        self.expected = expected
        self.actual = actual


#: the reserved relation a journal keeps facts' validity intervals in (a fact with one is
#: journaled as a row ``(relation, fact as a JSON array, valid_from, valid_until)`` of it, not
#: in its own relation: engine/answer/validity.py); no program's relation has this name
VALID = "@valid"

#: base facts to add and to remove, per relation (a transaction's net effect)
Delta = dict[str, set[ir.Row]]
#: rows of a relation's first write, inserts without an interval, from which a transaction
#: keeps them as given until its operations are read (:attr:`Transaction.ops`): a bulk load's
#: rows are hashed once, into the relation's own dict (engine/answer/reasoner.py ``_commit``)
BATCH = 4096



class Transaction:
    """Collects inserts and retracts; the last operation on a row wins. Rows are checked
    for their shape here (engine/core/arguments.py ``rows``), for the relation by
    ``check_rows``; ``constants``: their values too (a client, which has no relation)."""

    def __init__(self, check_rows: RowCheck | None = None, constants: bool = False) -> None:
        #: checks and normalizes rows of a relation (raises on a bad row)
        self._check = check_rows or _as_rows
        self._constants = constants
        self._ops: dict[str, dict[ir.Row, bool]] = {}
        #: relation -> the rows of its only write so far, inserts of :data:`BATCH` rows or
        #: more without an interval, as given (its dict in :attr:`ops` made when read)
        self._batches: dict[str, list[ir.Row]] = {}
        #: the batches a reasoner took (:meth:`batches`), put back in :attr:`ops` when read
        #: after the commit (the lists as given: no copy)
        self._taken: dict[str, list[ir.Row]] = {}
        #: the rows inserted with a validity interval: (valid_from, valid_until) as given
        #: (engine/answer/validity.py checks and applies them)
        self.valid: dict[str, dict[ir.Row, tuple[object, object]]] = {}
        self.changes: Changes = Changes({}, frozenset())
        #: the revision this transaction made (set when it commits)
        self.revision: int | None = None

    @property
    def ops(self) -> dict[str, dict[ir.Row, bool]]:
        """Per relation, each row written: True to insert it, False to retract it (the last
        operation on a row wins)."""
        if self._batches:
            for rel, rows in self._batches.items():
                self._ops[rel] = dict.fromkeys(rows, True)
            self._batches = {}
        if self._taken and self.revision is not None:  # committed: a later reader's
            for rel, rows in self._taken.items():
                self._ops[rel] = dict.fromkeys(rows, True)
            self._taken = {}
        return self._ops

    def batches(self) -> dict[str, list[ir.Row]]:
        """The relations whose only write inserted :data:`BATCH` rows or more (no interval
        given in the transaction), each with its rows as given (a row may come twice),
        taken out of :attr:`ops` until the transaction has committed (:attr:`revision`
        set; then :attr:`ops` holds them again): a reasoner makes the relation's dict of
        them at once."""
        got = self._batches
        if self.valid or VALID in self._ops:
            return {}
        for rel in got:
            del self._ops[rel]
        self._batches = {}
        self._taken.update(got)  # (a second call takes nothing)
        return got

    def insert(self, rel: str, rows: Iterable[Sequence[ir.Value]], valid_from: object = None,
               valid_until: object = None) -> None:
        """``valid_from``, ``valid_until``: the facts count only from, and until (not
        including), these times (either may be None: unbounded); see docs/history.md."""
        self._add(rel, rows, True, None if valid_from is None and valid_until is None
                  else (valid_from, valid_until))

    def retract(self, rel: str, rows: Iterable[Sequence[ir.Value]]) -> None:
        self._add(rel, rows, False)

    def _add(self, rel: str, rows: Iterable[Sequence[ir.Value]], present: bool,
             valid: tuple[object, object] | None = None) -> None:
        verb = "insert" if present else "retract"
        rel = arguments.text("rel", rel, f"name the relation, e.g. `{verb}(\"member\", ...)`")
        if rel == VALID:  # a journal's interval rows as they are (a replay of its log):
            # checked with the intervals (engine/answer/validity.py ``Clock.expand``)
            rows = arguments.rows(rel, rows, verb, True)
            self._ops.setdefault(rel, {}).update(dict.fromkeys(rows, present))
            return
        checked = self._check(rel, arguments.rows(rel, rows, verb, self._constants))
        if rel in self._batches:  # a second write: the first one's dict made
            self._ops[rel] = dict.fromkeys(self._batches.pop(rel), True)
        ops = self._ops.get(rel)
        if ops is None and present and valid is None and len(checked) >= BATCH:
            self._ops[rel] = {}  # (its place among the relations written)
            self._batches[rel] = checked
        elif ops is None:  # the relation's first write: its dict (not copied into another)
            self._ops[rel] = dict.fromkeys(checked, present)
        else:
            ops.update(dict.fromkeys(checked, present))
        if valid is not None:
            self.valid.setdefault(rel, {}).update(dict.fromkeys(checked, valid))
        elif rel in self.valid:  # the last write of a row wins
            for row in checked:
                self.valid[rel].pop(row, None)


@dataclass
class Changes:
    """What a transaction changed: per relation, the rows gained and lost (net)."""

    by_relation: dict[str, Change]
    derived_relations: frozenset[str] | set[str] = field(default_factory=frozenset)
    #: the revision the transaction made (the one it found when it changed nothing)
    revision: int = 0
    #: not a transaction: the reasoner's clock passed validity intervals' edges, at this
    #: moment (seconds since the epoch; engine/answer/validity.py)
    moment: float | None = None

    def gained(self, rel: str) -> set[ir.Row]:
        c = self.by_relation.get(rel)
        return set(c.added) if c else set()

    def lost(self, rel: str) -> set[ir.Row]:
        c = self.by_relation.get(rel)
        return set(c.removed) if c else set()

    @property
    def derived(self) -> dict[str, Change]:
        """Changes of derived relations only (what rules concluded differently)."""
        return {r: c for r, c in self.by_relation.items() if r in self.derived_relations}

    def __bool__(self) -> bool:
        return bool(self.by_relation)

    def lines(self, derived_only: bool = False) -> list[str]:
        """DDlog-style lines: ``+rel(...)`` gained, ``-rel(...)`` lost, sorted."""
        out: list[str] = []
        items = self.derived if derived_only else self.by_relation
        for rel in sorted(items):
            c = items[rel]
            out += [f"-{ir.show_atom(rel, r)}" for r in sorted(c.removed, key=ir.row_key)]
            out += [f"+{ir.show_atom(rel, r)}" for r in sorted(c.added, key=ir.row_key)]
        return out

    def to_dict(self) -> dict[str, dict[str, list[list[ir.Value]]]]:
        return {
            rel: {"gained": [list(r) for r in sorted(c.added, key=ir.row_key)],
                  "lost": [list(r) for r in sorted(c.removed, key=ir.row_key)]}
            for rel, c in sorted(self.by_relation.items())
        }




class Writes:
    """``insert`` and ``retract`` as one-operation transactions, alike for every backend
    (memory, pyDatalog, the remote client); each brings its own ``transaction()``."""

    def transaction(self, watch: Iterable[str] | str = ()
                    ) -> AbstractContextManager[Transaction]:  # pragma: no cover - abstract
        raise NotImplementedError

    def insert(self, rel: str, rows: Iterable[Sequence[ir.Value]], author: str | None = None,
               reason: str | None = None, ticket: str | None = None, *,
               valid_from: object = None, valid_until: object = None) -> Changes:
        """Add base facts to ``rel`` (rows already present are ignored); returns the changes.
        ``author``, ``reason``, ``ticket``: who writes and why (as ``transaction``).
        ``valid_from``, ``valid_until``: the facts count only in that interval
        (``Transaction.insert``)."""
        with self.transaction(**_given(author, reason, ticket)) as tx:
            tx.insert(rel, rows, valid_from, valid_until)
        return tx.changes

    def retract(self, rel: str, rows: Iterable[Sequence[ir.Value]], author: str | None = None,
                reason: str | None = None, ticket: str | None = None) -> Changes:
        """Remove base facts from ``rel`` (rows not present are ignored); returns the changes.
        ``author``, ``reason``, ``ticket``: as :meth:`insert`."""
        with self.transaction(**_given(author, reason, ticket)) as tx:
            tx.retract(rel, rows)
        return tx.changes


def _given(author: str | None, reason: str | None, ticket: str | None) -> dict[str, Any]:
    """The write metadata given, by name (a backend without history takes none)."""
    meta = {"author": author, "reason": reason, "ticket": ticket}
    return {k: v for k, v in meta.items() if v is not None}
