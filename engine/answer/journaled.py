"""A reasoner's base facts beside its journal (engine/core/journal.py): what to write and
what to make visible.

The base facts a journaled reasoner sees are the program's own facts (the rule files': the
policy) and the journal's. The journal may hold a policy fact too (inserted at run time):
such a row stays visible whether or not the journal has it. A retract of a policy fact the
journal does not hold is refused (``policy-fact``): the journal cannot make it go away
durably; the rule file has to change.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from grantlog.grammar.diagnostics import GrantlogError, Span, error

from ..core import ir
from ..core.facts import Facts
from ..core.journal import Entry, Journal, JournalReader, compacted
from ..core.results import Delta

#: more pending transactions than this are applied as one net change
MERGE_ABOVE = 64


class Journaled:
    """The bookkeeping between a journal and a reasoner's memory. ``stored(rel)``: the base
    rows of ``rel`` in memory (the policy's and the journal's)."""

    def __init__(self, journal: Journal, program: ir.Program,
                 stored: Callable[[str], Collection[ir.Row]],
                 spans: Mapping[str, Mapping[ir.Row, Span]]) -> None:
        self.journal = journal
        self._stored = stored
        self._spans = spans
        #: the rule files' facts per relation (visible whether or not the journal has them)
        self._policy: dict[str, set[ir.Row]] = {}
        for rel, rows in Facts.of(program.facts).by_relation().items():
            self._policy[rel] = set(rows)
        #: rows the journal holds that are also policy facts
        self._overlap: dict[str, set[ir.Row]] = {}

    def note(self, rows: Mapping[str, Iterable[ir.Row]]) -> None:
        """The journal holds exactly ``rows`` (a snapshot)."""
        self._overlap = {}
        for rel, rs in rows.items():
            pol = self._policy.get(rel)
            if pol:
                both = pol.intersection(rs)
                if both:
                    self._overlap[rel] = both

    def split(self, ops: dict[str, dict[ir.Row, bool]]) -> tuple[Delta, Delta, Delta, Delta]:
        """A transaction's net change: to memory (ins, dels) and to the journal (ins, dels)."""
        mem_ins: Delta = {}
        mem_dels: Delta = {}
        j_ins: Delta = {}
        j_dels: Delta = {}
        for rel, rows in ops.items():
            pol = self._policy.get(rel, set())
            both = self._overlap.get(rel, set())
            mem = self._stored(rel)
            for row, present in rows.items():
                in_policy = row in pol
                journaled = row in both if in_policy else row in mem
                if present and not journaled:
                    j_ins.setdefault(rel, set()).add(row)
                    if not in_policy:
                        mem_ins.setdefault(rel, set()).add(row)
                elif not present and journaled:
                    j_dels.setdefault(rel, set()).add(row)
                    if not in_policy:
                        mem_dels.setdefault(rel, set()).add(row)
                elif not present and in_policy:
                    span = self._spans.get(rel, {}).get(row)
                    raise GrantlogError([error(
                        "policy-fact",
                        f"`{ir.show_atom(rel, row)}` is written in the rule files, not stored: "
                        "a store cannot retract it", span or Span("<api>", 0, 0, 0, 0),
                        "remove the fact from the rule file (and reload the policy)")])
        return mem_ins, mem_dels, j_ins, j_dels

    def written(self, ins: Delta, dels: Delta) -> None:
        """The journal added ``ins`` and removed ``dels``."""
        for rel, rows in ins.items():
            pol = self._policy.get(rel)
            if pol:
                self._overlap.setdefault(rel, set()).update(rows & pol)
        for rel, rows in dels.items():
            if rel in self._overlap:
                self._overlap[rel] -= rows

    def follow(self, entry: Entry) -> tuple[Delta, Delta]:
        """Another writer's transaction: what it changes in memory (ins, dels)."""
        mem_ins: Delta = {}
        mem_dels: Delta = {}
        for rel, rows in entry.removed.items():
            pol = self._policy.get(rel, set())
            mem = self._stored(rel)
            gone = {r for r in rows if r not in pol and r in mem}
            if gone:
                mem_dels[rel] = gone
        for rel, rows in entry.added.items():
            pol = self._policy.get(rel, set())
            mem = self._stored(rel)
            new = {r for r in rows if r not in pol and r not in mem}
            if new:
                mem_ins[rel] = new
        self.written(entry.added, entry.removed)
        return mem_ins, mem_dels

    def reload(self, rows: Mapping[str, Iterable[ir.Row]]) -> tuple[Delta, Delta]:
        """Too far behind for the journal's log: the journal holds ``rows`` (every relation
        it has); what changes in memory (ins, dels)."""
        mem_ins: Delta = {}
        mem_dels: Delta = {}
        for rel, rs in rows.items():
            pol = self._policy.get(rel, set())
            new = set(rs)
            have = {r for r in self._stored(rel) if r not in pol}
            added, removed = new - pol - have, have - new
            if added:
                mem_ins[rel] = added
            if removed:
                mem_dels[rel] = removed
        self.note(rows)
        return mem_ins, mem_dels


@dataclass(frozen=True)
class Merged:
    """Consecutive transactions as one (an :class:`~engine.core.journal.Entry`)."""

    revision: int
    added: Delta
    removed: Delta


def pending(entries: Sequence[Entry], revision: int, merge: bool) -> Sequence[Entry]:
    """The ``entries`` after ``revision``; more than :data:`MERGE_ABOVE` of them as one net
    change when ``merge``."""
    fresh = [e for e in entries if e.revision > revision]
    if len(fresh) <= MERGE_ABOVE or not merge:
        return fresh
    added: Delta = {}
    removed: Delta = {}
    for e in fresh:
        _net(e.removed, added, removed)  # a removal cancels an earlier addition
        _net(e.added, removed, added)
    return [Merged(fresh[-1].revision, added, removed)]


def _net(rows: Delta, opposite: Delta, same: Delta) -> None:
    """Add ``rows`` to ``same``, except those in ``opposite``, which they cancel."""
    for rel, rs in rows.items():
        o = opposite.get(rel, set())
        for r in rs:
            if r in o:
                o.discard(r)
            else:
                same.setdefault(rel, set()).add(r)


def wait(r: Any, revision: int, timeout: float) -> int:
    """Block until reasoner ``r``'s facts are at ``revision`` or later (``r.sync()`` reads
    its journal); ``revision-timeout`` after ``timeout`` seconds. Returns the revision."""
    if revision <= r.revision:
        return int(r.revision)
    end = time.monotonic() + timeout
    pause = 0.0005
    while True:
        r.sync()
        if r.revision >= revision:
            return int(r.revision)
        left = end - time.monotonic()
        if left <= 0:
            raise GrantlogError([error(
                "revision-timeout",
                f"revision {revision} was not reached within {timeout:g} s (at {r.revision})",
                Span("<api>", 0, 0, 0, 0),
                "the revision may not exist yet, or this reasoner cannot reach its store")])
        time.sleep(min(pause, left))
        pause = min(pause * 2, 0.02)


def sync(r: Any) -> int:
    """Reasoner ``r`` (reasoner.py) brought to its journal's head: the transactions other
    writers committed since its revision, read outside its lock, applied under it (a
    reasoner further behind than the log reloads from the snapshot). Returns the revision."""
    j: Journaled | None = r._journaled
    if j is None:
        return int(r.revision)
    have = r.revision
    try:
        entries = j.journal.since(have)
    except GrantlogError as exc:
        if not compacted(exc):
            raise
        rev, rows = j.journal.snapshot()
        with r._lock:
            if r.revision == have:
                r._apply(*j.reload(rows), r._watch, rev)
        return int(r.revision)
    if entries:
        with r._lock:
            follow(r, j, entries)
    return int(r.revision)


def catch_up(r: Any, j: Journaled, reader: JournalReader) -> None:
    """Under ``r``'s lock: apply what other writers committed since its revision, as
    ``reader`` has it (a reasoner further behind than its log reloads)."""
    try:
        entries = reader.since(r.revision)
    except GrantlogError as exc:
        if not compacted(exc):
            raise
        rev, rows = reader.snapshot()
        r._apply(*j.reload(rows), r._watch, rev)
        return
    follow(r, j, entries)


def follow(r: Any, j: Journaled, entries: Sequence[Entry]) -> None:
    """Apply other writers' transactions after ``r``'s revision, one revision at a time
    (many at once as one net change, unless listeners want each)."""
    for e in pending(entries, r.revision, merge=not r.listeners):
        r._apply(*j.follow(e), r._watch, e.revision)
