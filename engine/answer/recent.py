"""Recent revisions from the live reasoner: a check as of one of the last :data:`WINDOW`
revisions, answered by the reasoner itself with the transactions after that revision undone
in a view, not by a reasoner rebuilt from the store (engine/answer/history.py).

A reasoner with a journal keeps, as it applies them, the net changes of its last
:data:`WINDOW` transactions (:func:`follow`: the rows each gained and lost in every stored
relation — base relations and the materialized derived ones, as incremental maintenance
computed them). The facts at a revision ``R`` among those are the facts now minus what the
transactions after ``R`` added plus what they removed: a check at ``R`` reads the reasoner's
own materialization through an overlay of that net change (:class:`Undone`: its relations and
indexes, each adjusted only at the keys the change touches) and evaluates the rest goal-
directed. The answers of virtual relations that no change after ``R`` reaches are the live
reasoner's own, shared; the others are evaluated afresh (and kept for the next check at
``R``). Exact, and it costs the check
plus the rows it reads that changed since (no reasoner built; the store is read only for
which relations the transactions wrote, once per new head). (Which derivation
a decision's reasons name, when several hold, follows the order rows were stored in, as for any
reasoner.)

It answers only where that is the whole difference; anything else goes to the rebuilt
reasoner (:func:`check` returns None): ``R`` older than the window, or inside a batch of
revisions the reasoner applied as one; a policy installed after ``R`` (or one at ``R`` other
than the reasoner's); facts with validity intervals (their visibility depends on the clock); a
transaction after ``R`` that wrote base facts of a derived relation; another question than
``check``.
"""

from __future__ import annotations

import threading
import weakref
from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Iterator, Mapping
from operator import itemgetter
from typing import Any

from ..core import arguments, ir
from ..core.journal import VALID
from ..core.results import Changes, Decision
from ..core.times import moment
from ..eval.demand import DemandContext
from .decide import Decider

Reasoner = Any
#: how many of the last revisions a reasoner answers from itself
WINDOW = 1000
#: net changes kept per reasoner (a run of checks at one revision computes it once)
CACHE = 4
#: a transaction that changes more stored rows than this is not kept (the revisions before it
#: go to the rebuilt reasoner): a bulk load would otherwise keep a copy of every row it wrote
BIG = 50_000


class _Log:
    """A reasoner's last transactions: per revision, the one it followed (and whether it
    can be undone: not when validity intervals' edges passed), and per stored row the
    revisions at which it changed (alternately gained and lost) with the last change's
    sign."""

    def __init__(self, r: Reasoner) -> None:
        self.virtual = r.program.virtual
        self.last = int(r.revision)
        #: (revision before, revision after, whether it is a transaction that can be undone)
        self.entries: deque[tuple[int, int, bool]] = deque(maxlen=WINDOW)
        #: (relation, row) -> [the revisions it changed at, ascending; +1 gained last, -1 lost]
        self.events: dict[tuple[str, ir.Row], list[Any]] = {}
        #: per relation, its rows with events, and the last revision it changed at
        self.rows: dict[str, set[ir.Row]] = {}
        self.changed_at: dict[str, int] = {}
        #: per (relation, columns), the rows with events by key (for the head they were made)
        self.keyed: dict[tuple[str, tuple[int, ...]], tuple[int, dict[Any, list[ir.Row]]]] = {}
        self.lock = threading.Lock()
        self.nets: dict[tuple[int, int], Undone] = {}
        #: per revision, the relations the journal's transaction wrote (read when asked)
        self.written: dict[int, frozenset[str]] = {}
        #: (head, the revisions policies were installed at, whether the one in force at the
        #: head is the reasoner's)
        self.policies: tuple[int, list[int], bool] | None = None

    def __call__(self, ch: Changes) -> None:
        with self.lock:
            rev = ch.revision
            self.entries.append((self.last, rev, ch.moment is None))
            self.last = rev
            if ch.moment is not None:  # the clock passed an edge: not a transaction
                return
            big = sum(len(c.added) + len(c.removed) for rel, c in ch.by_relation.items()
                      if rel not in self.virtual and c) > BIG
            if big:  # nothing before it can be undone: forget it all
                self.entries[-1] = (self.entries[-1][0], rev, False)
                self.events.clear()
                self.rows.clear()
                self.changed_at.clear()
                self.keyed.clear()
                self.nets.clear()
                return
            events, rows = self.events, self.rows
            for rel, c in ch.by_relation.items():
                if rel in self.virtual or not c:
                    continue
                self.changed_at[rel] = rev
                have = rows.setdefault(rel, set())
                for sign, part in ((1, c.added), (-1, c.removed)):
                    for row in part:
                        e = events.get((rel, row))
                        if e is None:
                            events[(rel, row)] = [[rev], sign]
                            have.add(row)
                        else:
                            e[0].append(rev)
                            e[1] = sign
            if len(events) > 4 * WINDOW and len(self.entries) == WINDOW:
                self._prune(self.entries[0][0])

    def _prune(self, oldest: int) -> None:
        """Forget the rows whose changes are all at or before ``oldest``."""
        for k in [k for k, e in self.events.items() if e[0][-1] <= oldest]:
            del self.events[k]
            self.rows[k[0]].discard(k[1])
        self.keyed.clear()

    def status(self, rel: str, row: ir.Row, revision: int) -> int:
        """+1: the row is stored now and was not at ``revision``; -1: the other way round;
        0: the same."""
        e = self.events.get((rel, row))
        if e is None:
            return 0
        revs = e[0]
        return e[1] if (len(revs) - bisect_right(revs, revision)) % 2 else 0

    def by_key(self, rel: str, cols: tuple[int, ...], head: int) -> dict[Any, list[ir.Row]]:
        """The rows of ``rel`` with changes, by their ``cols`` (made once per head)."""
        got = self.keyed.get((rel, cols))
        if got is None or got[0] != head:
            key = itemgetter(*cols)  # a value for one column, a tuple for several
            out: dict[Any, list[ir.Row]] = {}
            for row in self.rows.get(rel, ()):
                out.setdefault(key(row), []).append(row)
            got = self.keyed[(rel, cols)] = (head, out)
        return got[1]


_logs: weakref.WeakKeyDictionary[Any, _Log] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def follow(r: Reasoner) -> None:
    """Keep ``r``'s last :data:`WINDOW` transactions (a reasoner with a journal does from
    its start)."""
    with _lock:
        if r not in _logs:
            log = _logs[r] = _Log(r)
            r.listeners.append(log)


class _Rows(Mapping[ir.Row, Any]):
    """A stored relation's rows (row -> level) as they stood at a revision: a row the log
    says was gained since is left out, one lost since put back (at level 0 for a base
    relation, 1 for a derived one)."""

    def __init__(self, u: Undone, rel: str, now: Mapping[ir.Row, Any], level: int) -> None:
        self.u, self.rel, self.now, self.level = u, rel, now, level
        self._net: tuple[set[ir.Row], set[ir.Row]] | None = None

    def status(self, row: ir.Row) -> int:
        return self.u.log.status(self.rel, row, self.u.revision)

    def __contains__(self, row: object) -> bool:
        st = self.status(row)  # type: ignore[arg-type]
        return st < 0 or (st == 0 and row in self.now)

    def __getitem__(self, row: ir.Row) -> Any:
        st = self.status(row)
        if st < 0:
            return self.level
        if st > 0:
            raise KeyError(row)
        return self.now[row]

    def get(self, row: ir.Row, default: Any = None) -> Any:
        try:
            return self[row]
        except KeyError:
            return default

    def net(self) -> tuple[set[ir.Row], set[ir.Row]]:
        """The rows gained since (stored now) and lost since (stored then)."""
        if self._net is None:
            added: set[ir.Row] = set()
            removed: set[ir.Row] = set()
            for row in self.u.log.rows.get(self.rel, ()):
                st = self.status(row)
                if st:
                    (added if st > 0 else removed).add(row)
            self._net = (added, removed)
        return self._net

    def __iter__(self) -> Iterator[ir.Row]:
        added, removed = self.net()
        yield from (row for row in self.now if row not in added)
        yield from removed

    def __len__(self) -> int:
        added, removed = self.net()
        return len(self.now) - len(added) + len(removed)


class _Index(dict):  # type: ignore[type-arg]
    """An index (key -> rows, as engine/core/index.py reads it: ``get`` only) of a relation
    as it stood at a revision: the index now, with the bucket of a key some changed row has
    made again when first read."""

    __slots__ = ("changed", "now", "rows")

    def __init__(self, now: Any, rows: _Rows, changed: dict[Any, list[ir.Row]]) -> None:
        super().__init__()
        self.now, self.rows, self.changed = now, rows, changed

    def get(self, k: Any, default: Any = None) -> Any:
        if dict.__contains__(self, k):
            got = dict.__getitem__(self, k)
        else:
            touched = self.changed.get(k)
            if touched is None:
                return self.now.get(k, default)
            status = self.rows.status
            got = (*(row for row in self.now.get(k, ()) if status(row) <= 0),
                   *(row for row in touched if status(row) < 0))
            dict.__setitem__(self, k, got)
        return got if got else default

    def __getitem__(self, k: Any) -> Any:
        got = self.get(k)
        if got is None:
            raise KeyError(k)
        return got

    def __contains__(self, k: object) -> bool:
        return self.get(k) is not None

    def keys(self) -> Any:
        """The keys with rows (what the "did you mean" of engine/answer/vocabulary.py
        reads)."""
        touched = list(self.changed)
        return (set(self.now.keys()) - set(touched)) | {k for k in touched if self.get(k)}

    def __iter__(self) -> Iterator[Any]:
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self.keys())


class Undone:
    """The changes after ``revision`` undone over the database of a reasoner at ``head``:
    its relations (:meth:`full`) and indexes (:meth:`index`) as they stood at that revision,
    each made when first read."""

    def __init__(self, log: _Log, revision: int, head: int, db: Any, program: ir.Program,
                 memo: Mapping[str, Any], dependents: Mapping[str, frozenset[str]]) -> None:
        """``memo``, ``dependents``: the live reasoner's answers of virtual relations and
        what each relation's answers depend on; the answers of those no change after
        ``revision`` reaches are the same then, and shared."""
        self.log, self.revision, self.head, self.db = log, revision, head, db
        touched = [rel for rel, at in log.changed_at.items() if at > revision]
        self.rows: dict[str, _Rows] = {
            rel: _Rows(self, rel, db.full[rel], 1 if rel in program.derived else 0)
            for rel in touched if rel in db.full}
        self.indexes: dict[tuple[str, tuple[int, ...]], Any] = {}
        reached = set().union(*(dependents.get(rel, ()) for rel in touched))
        #: answers of virtual relations in this state, kept across its checks
        self.memo: dict[str, Any] = {v: m for v, m in memo.items() if v not in reached}

    def full(self) -> Mapping[str, Any]:
        return _Full(self.db.full, self.rows)

    def index(self, rel: str, cols: tuple[int, ...]) -> Any:
        now = self.db.index(rel, cols)
        rows = self.rows.get(rel)
        if rows is None:
            return now
        got = self.indexes.get((rel, cols))
        if got is None:
            got = self.indexes[(rel, cols)] = _Index(now, rows,
                                                     self.log.by_key(rel, cols, self.head))
        return got


class _Full(Mapping[str, Any]):
    def __init__(self, now: Mapping[str, Any], undone: dict[str, Any]) -> None:
        self.now, self.undone = now, undone

    def __getitem__(self, rel: str) -> Any:
        got = self.undone.get(rel)
        return self.now[rel] if got is None else got

    def get(self, rel: str, default: Any = None) -> Any:
        return self[rel] if rel in self.now else default

    def __contains__(self, rel: object) -> bool:
        return rel in self.now

    def __iter__(self) -> Iterator[str]:
        return iter(self.now)

    def __len__(self) -> int:
        return len(self.now)


def _written(r: Reasoner, log: _Log, revision: int) -> set[str] | None:
    """The relations the journal's transactions after ``revision`` (up to the reasoner's)
    wrote; None: the journal no longer has them all."""
    journal = r.journal
    missing = [rev for rev in range(revision + 1, r.revision + 1) if rev not in log.written]
    if missing:
        try:
            entries = journal.since(missing[0] - 1)
        except Exception:
            return None
        for e in entries:
            if e.revision <= r.revision:
                log.written[e.revision] = frozenset(e.added.keys() | e.removed.keys())
        if len(log.written) > 2 * WINDOW:
            for rev in sorted(log.written)[:len(log.written) - WINDOW]:
                log.written.pop(rev, None)  # (another thread may have)
    out: set[str] = set()
    for rev in range(revision + 1, r.revision + 1):
        got = log.written.get(rev)
        if got is None:
            return None
        out |= got
    return out


def _policy_changed(r: Reasoner, log: _Log, revision: int) -> bool:
    """Whether a policy was installed after ``revision``, or the one in force at it is not
    the reasoner's."""
    journal = r.journal
    head = int(r.revision)
    if log.policies is None or log.policies[0] != head:
        revs = list(journal.policy_revisions())
        program = journal.policy_at(head) if revs else None
        log.policies = (head, revs, program is None or program.digest == r.program.digest)
    _, revs, same = log.policies
    return not same or any(revision < p for p in revs)


def undone(r: Reasoner, revision: int) -> Undone | None:
    """The net change after ``revision`` undone over ``r``'s materialization, under its lock
    (None: this path cannot answer there; see the module docstring)."""
    log = _logs.get(r)
    head = int(r.revision)
    if log is None or revision >= head or revision < head - WINDOW or log.last != head:
        return None
    c = r._clock
    if c.rows or c.policy or c.due() is not None:
        return None  # facts with an interval: their visibility is the clock's
    with log.lock:
        key = (revision, head)
        got = log.nets.get(key)
        if got is not None and got.db is r._database():
            return got
        entries = log.entries
        start = bisect_left(entries, revision, key=itemgetter(0))  # in revision order
        if start == len(entries) or entries[start][0] != revision or entries[-1][1] != head:
            return None
        if not all(entries[i][2] for i in range(start, len(entries))):
            return None
    if _policy_changed(r, log, revision):
        return None
    written = _written(r, log, revision)
    if written is None or written & (r.program.derived | {VALID}):
        return None
    got = Undone(log, revision, head, r._database(), r.program, r._memo, r._dependents)
    with log.lock:
        log.nets[key] = got
        while len(log.nets) > CACHE:
            log.nets.pop(next(iter(log.nets)))
    return got


def check(r: Reasoner, at_revision: object, as_of: object, args: tuple[Any, ...],
          kwargs: dict[str, Any]) -> Decision | None:
    """``r.check(*args, **kwargs)`` at ``at_revision`` (or ``as_of``) from the live reasoner
    when that revision is recent (None: ask the rebuilt reasoner)."""
    if r not in _logs or r.journal is None or kwargs.get("now") is not None \
            or kwargs.get("at_least") is not None or len(args) > 3:
        return None
    if as_of is not None:
        if at_revision is not None:
            return None  # history's error
        revision = int(r.journal.revision_at(moment(as_of)))
    else:
        revision = arguments.integer("at_revision", at_revision, 0)
    names = ("subject", "operation", "resource")
    given = dict(zip(names, args, strict=False))
    if any(k in given for k in kwargs) or set(kwargs) - {"strict", *names}:
        return None
    given.update({k: v for k, v in kwargs.items() if k in names})
    if set(given) != set(names):
        return None
    subject, operation, resource = given["subject"], given["operation"], given["resource"]
    arguments.question(arguments.DECIDED, (subject, operation, resource))
    rel = r._decision()
    row = (subject, operation, resource)
    log = _logs[r]
    if r.revision - WINDOW <= revision < r.revision:  # the store's reads, outside the lock
        _written(r, log, revision)
        _policy_changed(r, log, revision)
    with r._lock:
        if revision == r.revision:
            return None  # the reasoner's own answer (history keeps the revision's)
        u = undone(r, revision)
        if u is None:
            return None
        r._context()  # the plans made for the stored rows, as a check now would use
        ctx = DemandContext(r.program, r._plans, u.full(), u.index, u.memo)
        decider = Decider(r.program, r._plans, r._base)
        decider.reason_plans = r._decider.reason_plans  # compiled per plans: shared
        decider.at(revision)
        from . import vocabulary

        d = decider.decide(ctx, rel, row)
        r._memo_entries += ctx.entries  # some went to the answers shared with it
        return d if d else vocabulary.decided(r.program, ctx, rel, row, d,
                                              bool(kwargs.get("strict", False)))
