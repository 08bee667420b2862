"""The in-memory reasoner behind ``grantlog.Reasoner``.

The first read evaluates from scratch (stratified semi-naive, engine/eval/seminaive.py); after that
every update is a transaction maintained incrementally (DRed, engine/eval/incremental.py) and
reports what it changed. Reads and writes take one lock, so a read sees a whole transaction or
none of it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from contextlib import contextmanager
from typing import Any, NoReturn

from grantlog.grammar.diagnostics import GrantlogError, Span, error

from ..core import arguments, ir, progress
from ..core.facts import Facts, RowSpans
from ..core.hierarchy_roles import hierarchy_roles
from ..core.index import SortedRows
from ..core.journal import VALID, Journal, JournalReader, Meta
from ..core.results import (
    Answers,
    Change,
    Changes,
    Decision,
    Delta,
    RevisionConflict,
    Transaction,
    Writes,
)
from ..eval.database import Database, change, net_change, settled
from ..eval.demand import DemandContext, Memo
from ..eval.incremental import Maintainer, dependents
from ..eval.seminaive import EvalStats, Evaluator
from ..plan.demand import DemandPlans
from ..plan.join import RulePlan
from ..plan.kept import keep_statistics, kept_statistics, statistics
from . import filter as filters
from . import listing, recent, validity, vocabulary
from .conditions import Cond
from .decide import Decider, decision_relation
from .explain import Explanation, Limits, Prover, explain_goal
from .hierarchy import Hierarchy
from .journaled import Journaled, catch_up, sync, wait
from .query import Goals
from .residual import Residual, RowFilter

INSERTED = "inserted at run time"
#: a transaction touching at least BULK_MIN base rows and more than 1/BULK_RATIO of all base
#: rows is applied by re-evaluating from scratch (and diffing) instead of by DRed
BULK_MIN = 1000
#: answers of virtual lookups kept across reads before all are dropped (a bound on memory)
MEMO_LIMIT = 200_000
#: stored rows that may come and go before the plans are made again regardless of the ratio
REPLAN_SLACK = 1000
BULK_RATIO = 4
#: how long a read with ``at_least=`` waits for that revision by default (seconds)
WAIT_TIMEOUT = 5.0


class Reasoner(Writes):
    """Answers questions about a compiled program over base facts that change at run time.

    The in-memory backend (engine/core/backends.py names the others). ``journal``: where
    transactions become durable and other writers' transactions arrive from
    (engine/core/journal.py); None: the facts live in memory only."""

    def __init__(self, program: ir.Program, watch: Iterable[str] | str = (),
                 journal: Journal | None = None) -> None:
        """``watch``: virtual relations whose changes every transaction reports (``"all"``)."""
        self.program = program = arguments.program(program)
        self._watch = arguments.relation_names(program, watch)
        cache = program.compiled
        if "reasoner" not in cache:  # compiled once per program, shared by its reasoners
            cache["reasoner"] = (Evaluator(program), Maintainer(program), {})
        shared = cache["reasoner"]
        assert isinstance(shared, tuple)
        self._evaluator, self._maintainer, compiled = shared
        # plans ordered by this reasoner's own statistics; generated code shared per program
        self._plans = DemandPlans(program, compiled)
        #: the number of stored rows the current plans were made for (None: not planned)
        self._planned_for: int | None = None
        # answers of virtual relations kept across reads, dropped per relation on changes
        self._memo: Memo = {}
        self._memo_entries = 0
        self._last: DemandContext | None = None
        if "dependents" not in cache:
            cache["dependents"] = dependents(program)
        deps = cache["dependents"]
        assert isinstance(deps, dict)
        self._dependents: dict[str, frozenset[str]] = deps
        #: base facts of derived relations (rows given for a relation that rules also derive);
        #: base-only relations are stored once, in the database (level 0), not here
        self._base: dict[str, dict[ir.Row, None]] = {r: {} for r in program.derived}
        self._base_only = tuple(r for r in program.relations if r not in self._base)
        #: where each fact written in the rule files is (a fact inserted at run time has none)
        self._spans: dict[str, RowSpans] = {}
        #: base-only facts waiting for the first evaluation (the rule files' own), each
        #: relation's rows at level 0 (the database keeps the dict: engine/eval/database.py
        #: ``take``), and the rows sorted per column that a store's snapshot gave
        self._initial: dict[str, dict[ir.Row, int]] | None = {}
        self._orders: dict[str, dict[int, list[ir.Row]]] = {}
        #: the database's count of sorted indexes turned hash tables, as the view read it
        self._hashed = 0
        facts = Facts.of(program.facts)  # rows per relation; spans made when asked
        for rel, given in facts.by_relation().items():
            self._spans[rel] = facts.spans(rel)
            store = self._base.get(rel)
            if store is None:
                self._initial.setdefault(rel, {}).update(dict.fromkeys(given, 0))
            else:
                store.update(dict.fromkeys(given))
        self._db: Database | None = None
        self._lock = threading.RLock()
        self._clock = validity.clock(self)  # facts valid in an interval (validity.py)
        self._goals = Goals(program)
        #: what listing needs to group interchangeable resources (listing.py ``kinds``)
        self._symmetry: tuple[dict[str, tuple[int, ...]], set[ir.Value]] | None = None
        self.stats: EvalStats | None = None
        self._decision_rel: str | None = None  # checked once (:meth:`_decision`)
        #: the number of transactions applied (a store numbers them itself: grantlog/store)
        self.revision = 0
        #: decides checks (engine/answer/decide.py), keeping its decisions per revision
        self._decider = Decider(program, self._plans, self._base)
        #: filters: per type, whether its objects are never nested (engine/answer/hierarchy.py
        #: ``unnested``); forgotten when the hierarchy changes
        self._levels: dict[Any, Any] = {}
        #: called with the ``Changes`` of every transaction this reasoner applies — its own
        #: and, with a journal, other writers' (under the reasoner's lock: keep them short)
        self.listeners: list[Callable[[Changes], None]] = []
        #: the journal's facts beside the rule files' (None: no journal); the planner's
        #: statistics it keeps (engine/plan/kept.py: no pass over the rows to plan)
        self._journaled: Journaled | None = None
        self._kept = kept_statistics(journal)
        if journal is not None:
            self._journaled = Journaled(journal, program, self._stored, self._spans)
            rev, rows = journal.snapshot()
            self._journaled.note(rows)
            self.seed(rows, rev)
            recent.follow(self)  # its last transactions, for as-of checks

    @property
    def journal(self) -> Journal | None:
        """Where this reasoner's transactions become durable (None: memory only)."""
        return None if self._journaled is None else self._journaled.journal

    @property
    def planner(self) -> DemandPlans:
        """The planner of the virtual relations (their plans, ordered by this reasoner's
        statistics, and the views it unfolded into the rules that read them)."""
        return self._plans

    # -- updates ------------------------------------------------------------------------------

    def _relation(self, rel: str) -> ir.Relation:
        return arguments.relation(self.program, rel)

    def _rows(self, rel: str, rows: Iterable[Sequence[ir.Value]]) -> list[ir.Row]:
        return self.program.writable_rows(rel, rows)

    @contextmanager
    def transaction(self, watch: Iterable[str] | str = (), if_revision: int | None = None,
                    author: str | None = None, reason: str | None = None,
                    ticket: str | None = None) -> Iterator[Transaction]:
        """A batch of inserts and retracts applied atomically when the block ends.

        >>> with reasoner.transaction() as tx:            # doctest: +SKIP
        ...     tx.insert("member", [("dave", "eng")])
        ...     tx.retract("grant", [("eng", "read", "t1")])
        >>> tx.changes.gained("allowed")                   # doctest: +SKIP

        Nothing is applied if the block raises. Inside the block the reasoner still answers
        with the state before the transaction.

        ``tx.changes`` always covers the materialized relations; relations answered on demand
        (``program.virtual``, e.g. ``allowed``) are covered when named in ``watch`` (or with
        ``watch="all"``), because their change can be as large as the platform.

        ``if_revision``: a compare-and-set — the transaction applies only if the reasoner is
        at that revision when it commits, else :class:`RevisionConflict` and nothing changes.
        ``tx.revision`` is the revision the transaction made (the current one when it
        changed nothing). ``author``, ``reason``, ``ticket``: who writes and why, recorded
        with the transaction by a journal (engine/answer/history.py reads them back).
        """
        names = arguments.relation_names(self.program, watch, if_revision=if_revision)
        meta = Meta(*(arguments.optional_text(k, v) for k, v in
                      (("author", author), ("reason", reason), ("ticket", ticket))))
        tx = Transaction(self._rows)
        yield tx
        tx.changes = self._commit(tx, names | self._watch, if_revision, meta)
        tx.revision = tx.changes.revision

    def seed(self, rows: Mapping[str, Iterable[ir.Row]], revision: int) -> None:
        """Trusted base facts (already checked: a store's tables) taken as they are, before
        the first read evaluates; the facts are then at ``revision``. Once evaluated, the
        rows are applied as a transaction instead."""
        arguments.seed(rows, revision)
        with self._lock:
            initial = self._initial
            if self._db is not None or initial is None:
                for rel in rows.keys() - {VALID}:
                    self._relation(rel)
                ins, _ = self._delta({rel: dict.fromkeys(rs, True) for rel, rs in rows.items()})
                self._apply(ins, {}, self._watch, revision)
                return
            for rel, rs in self._clock.seed(rows).items():
                self._relation(rel)
                store = self._base.get(rel)
                if store is not None:
                    store.update(dict.fromkeys(rs))
                elif initial.get(rel):
                    initial[rel].update(dict.fromkeys(rs, 0))
                else:  # one dict, which the database keeps
                    initial[rel] = dict.fromkeys(rs, 0)
                    if isinstance(rs, SortedRows):
                        self._orders[rel] = rs.orders
            self._advance(revision)

    def _commit(self, tx: Transaction, watch: frozenset[str],
                if_revision: int | None = None, meta: Meta | None = None) -> Changes:
        with self._lock:
            if self._journaled is not None:
                return self._commit_journaled(self._journaled, tx, watch, if_revision, meta)
            if if_revision is not None and if_revision != self.revision:
                raise RevisionConflict(if_revision, self.revision)
            batches = {} if self._clock.runtime else tx.batches()  # (no interval anywhere)
            ins, dels = self._delta(self._clock.expand(tx), batches)
            batches.clear()  # the rows as given (lists of a million: let go)
            if not ins and not dels:
                return Changes({}, self.program.derived, self.revision)
            return self._apply(ins, dels, watch, self.revision + 1)

    def _commit_journaled(self, j: Journaled, tx: Transaction, watch: frozenset[str],
                          if_revision: int | None, meta: Meta | None = None) -> Changes:
        """A transaction written to the journal first (engine/core/journal.py): under the
        journal's lock, catch up with other writers, check ``if_revision``, write the net
        change; once committed, make it visible. A failure leaves memory as it was (apart
        from the other writers' transactions already applied)."""
        visible: list[tuple[Delta, Delta]] = []

        def change(locked: JournalReader) -> tuple[Delta, Delta]:
            if locked.head() != self.revision:
                catch_up(self, j, locked)
            if if_revision is not None and if_revision != self.revision:
                raise RevisionConflict(if_revision, self.revision)
            mem_ins, mem_dels, ins, dels = j.split(self._clock.expand(tx))
            visible[:] = [(mem_ins, mem_dels), (ins, dels)]
            return ins, dels

        committed = j.journal.append(change, meta)
        if committed is None:
            return Changes({}, self.program.derived, self.revision)
        (mem_ins, mem_dels), (ins, dels) = visible
        j.written(ins, dels)
        return self._apply(mem_ins, mem_dels, watch, committed)

    def _stored(self, rel: str) -> Collection[ir.Row]:
        """The base rows of ``rel`` (derived relations' here; base-only relations' are stored
        once, in the database)."""
        base = self._base.get(rel)
        return self._clock.stored(rel, lambda: self._database().full[rel] if base is None
                                  else base)

    def _delta(self, ops: dict[str, dict[ir.Row, bool]],
               batches: dict[str, list[ir.Row]] | None = None) -> tuple[Delta, Delta]:
        """The net effect of a transaction's operations (and ``batches``: many rows inserted,
        as given) on the current base facts: the rows it adds and the rows it removes
        (nothing is changed yet)."""
        return net_change(ops, self._stored, batches)

    def _apply(self, ins: Delta, dels: Delta, watch: frozenset[str],
               revision: int) -> Changes:
        """Make a net change of base facts visible (maintaining what depends on it) as
        ``revision``; every row of ``ins`` is absent and every row of ``dels`` present."""
        with self._lock:
            if VALID in ins or VALID in dels:  # intervals move rows between the sets
                ins = settled(ins)
            ins, dels = self._clock.translate(ins, dels)
            db = self._database()
            for rel, rows in ins.items():
                base = self._base.get(rel)
                if base is not None:
                    for row in rows:
                        base[row] = None
            for rel, rows in dels.items():
                base = self._base.get(rel)
                if base is not None:
                    for row in rows:
                        del base[row]
            self._advance(revision)
            self._last = None  # the next read makes a new view
            if not hierarchy_roles(self.program).stored.isdisjoint(ins.keys() | dels.keys()):
                self._levels = {}
            if not self._plans.unfolded.isdisjoint(ins.keys() | dels.keys()):
                self._planned_for = None  # rows stored in a view the plans unfolded: re-plan
            for rel, gone in dels.items():
                spans = self._spans.get(rel)
                if spans:
                    for row in gone:
                        spans.pop(row, None)
            n = sum(map(len, ins.values())) + sum(map(len, dels.values()))
            if n >= BULK_MIN and n * BULK_RATIO > self._base_rows(db):
                changed = self._rebuild_and_diff(db, ins, dels, watch)
                self._forget()
            else:
                # the watched changes are asked with this reasoner's plans (ordered by its
                # statistics) and memo, unless the plans unfolded a view that now has rows
                plans = self._plans if self._planned_for is not None else None
                ins = settled(ins)  # maintained row by row: sets (a bulk load's made one)
                changed = self._maintainer.apply(db, self._base, ins, dels, watch,
                                                 self._memo, self._dependents, plans)
                if watch:
                    self._memo_entries += self._maintainer.memo_entries
                for rel in {*ins, *dels, *changed}:
                    for v in self._dependents.get(rel, ()):
                        self._memo.pop(v, None)
            changes = Changes(changed, self.program.derived, revision, self._clock.passing)
            for fn in self.listeners:
                fn(changes)
            return changes

    def wait_for(self, revision: int, timeout: float | None = None) -> int:
        """Block until the facts are at ``revision`` or later (another thread's or process's
        transaction); ``revision-timeout`` after ``timeout`` seconds (default
        :data:`WAIT_TIMEOUT`). Returns the revision reached."""
        return wait(self, arguments.revision(revision, timeout),
                    WAIT_TIMEOUT if timeout is None else timeout)

    def sync(self) -> int:
        """Apply every transaction other writers committed to the journal since this
        reasoner's revision (what a follower does when woken; without a journal there is
        nothing to read); returns the revision reached. The journal is read outside the
        reasoner's lock: reads go on meanwhile (journaled.py :func:`~.journaled.sync`)."""
        return sync(self)

    def close(self) -> None:
        """Release the journal (a reasoner without one holds nothing to release)."""
        if self._journaled is not None:
            with self._lock:  # what the plans measured, kept for the next reasoner
                keep_statistics(self._journaled.journal, self._plans.stats,
                                () if self._db is None else self._db.indexes.keys())
            self._journaled.journal.close()

    def _advance(self, revision: int) -> None:
        """The facts are now at ``revision``: decisions made from here on say so."""
        self.revision = revision
        self._decider.at(revision)

    def _forget(self) -> None:
        """Drop every answer kept across reads."""
        self._memo.clear()
        self._memo_entries = 0
        self._last = None

    def _base_rows(self, db: Database) -> int:
        """How many base facts there are."""
        return (sum(len(db.full[r]) for r in self._base_only) +
                sum(map(len, self._base.values())))

    def _rebuild_and_diff(self, old: Database, ins: dict[str, set[ir.Row]],
                          dels: dict[str, set[ir.Row]],
                          watch: frozenset[str]) -> dict[str, Change]:
        """A bulk change (a load, a big import): evaluate from scratch, which is cheaper than
        maintaining row by row, and report the difference to the old materialization."""
        changed: dict[str, Change] = {}
        for rel in self._base_only:  # applied to the stored rows, which the new state keeps
            plus, minus = ins.get(rel, set()), dels.get(rel, set())
            if plus or minus:
                old.remove(rel, minus)
                old.add(rel, plus, 0)
                changed[rel] = change(plus, minus)  # a write's own: no copy
        self._db = None
        new = self._database(old)
        for rel in self._base:  # derived relations (base-only ones are done above)
            o, nw = old.full.get(rel, {}), new.full.get(rel, {})
            if o or nw:
                added = nw.keys() - o.keys() if o else set(nw)
                removed = o.keys() - nw.keys() if nw else set(o)
                if added or removed:
                    changed[rel] = Change(added, removed)
        if watch:
            self._maintainer.virtual_changes(new, changed, watch)
        return {r: c for r, c in changed.items() if c}

    def rebuild(self) -> None:
        """Throw the materialization away and evaluate from scratch (for comparisons): a new
        database of the base facts (rows copied, indexes built again as reads need them),
        then every stratum evaluated."""
        with self._lock:
            old = self._database()
            self._db = None
            self._forget()
            self._database(old, copy=True)

    # -- evaluation ---------------------------------------------------------------------------

    def database(self) -> Database:
        """The current materialization (evaluated if stale). Read-only for callers."""
        return self._database()

    def _database(self, old: Database | None = None, copy: bool = False) -> Database:
        """The materialization, evaluated from the base facts if there is none; ``old``: the
        previous one, whose base-only relations (stored only there) the new one takes over
        (``copy``: copies, with no index)."""
        with self._lock:
            if self._db is None:
                db = Database(self.program.relations)
                if old is not None:
                    for rel in self._base_only:
                        if copy:
                            db.add(rel, list(old.full[rel]), 0)
                        else:
                            db.adopt(old, rel)
                elif self._initial is not None:
                    for rel, given in self._initial.items():
                        db.take(rel, given, self._orders.get(rel))
                    self._initial = None
                    self._orders = {}
                for rel, rows in self._base.items():
                    if rows:
                        db.add(rel, rows, 0)
                self.stats = self._evaluator.run(db)
                self._db = db
            return self._db

    def _context(self) -> DemandContext:
        """A read's view: materialized relations, and virtual ones evaluated on demand. The
        previous read's view is used again (with the views of relations and indexes it made)
        while nothing changed: no transaction, no new plans, no answers dropped."""
        self._clock.tick()
        last, db = self._last, self._db
        if last is not None:
            self._memo_entries += last.entries
            last.entries = 0
            if self._memo_entries > MEMO_LIMIT:
                self._forget()
            elif (db is not None and last.full is db.full and last.idle()
                  and self._hashed == db.hashed):
                # nothing changed since the last read: a transaction and a rebuild drop
                # ``_last``, and the stored rows (so the plans) change only in them (nor
                # did a store's sorted index become a hash table the view should read)
                return last
        db = self._database()
        self._replan(db)
        self._hashed = db.hashed
        ctx = self._last = DemandContext(self.program, self._plans, db.full, db.index,
                                         self._memo)
        return ctx

    def _replan(self, db: Database) -> None:
        """Order goal-directed plans by the database's statistics (engine/plan/stats.py), again
        whenever the stored rows have grown or shrunk by a factor of two since."""
        n = db.rows
        last = self._planned_for
        if last is not None and (n <= 2 * last + REPLAN_SLACK and last <= 2 * n + REPLAN_SLACK):
            return
        self._plans.use(statistics(self.program, db.full, db.index, self._kept))
        self._planned_for = n
        self._decider.replanned()  # its premise functions: from the previous plans' bodies

    @contextmanager
    def _read(self) -> Iterator[None]:
        """A read: under the lock; goal-directed evaluation nested deeper than Python's stack
        (a chain of hundreds of views) becomes a diagnostic instead of a RecursionError."""
        with self._lock:
            try:
                yield
            except RecursionError:
                self._too_deep()

    @staticmethod
    def _too_deep() -> NoReturn:
        """Goal-directed evaluation overflowed the stack: a diagnostic, from the except
        clause that caught the RecursionError."""
        raise GrantlogError([error(
            "evaluation-too-deep",
            "goal-directed evaluation nests deeper than the interpreter's stack allows",
            Span("<api>", 0, 0, 0, 0),
            "mark some intermediate relations `@materialize` so they are computed "
            "bottom-up")]) from None

    @contextmanager
    def frozen(self) -> Iterator[int]:
        """Hold the reasoner still for the block — no update applies and no read runs — and
        give its revision: e.g. to fork a process that answers reads from exactly this
        state (the decision service's snapshots)."""
        with self._lock:
            yield self.revision

    def holds_value(self, rel: str, column: int, value: ir.Value) -> bool:
        """Whether some row of ``rel`` has ``value`` in ``column`` (an index lookup: no
        goal is compiled, so callers may ask about values they were sent)."""
        arguments.cell(self.program, rel, column, value)
        with self._read():
            return bool(self._context().lookup(rel, (column,), (value,)))

    def view(self) -> DemandContext:
        """The current state as generated rule code reads it (``F``, ``index``); valid until
        the next update. Internal tools (coverage, what-if) use it; applications use the
        query methods."""
        with self._lock:
            return self._context()

    def rows(self, rel: str) -> set[ir.Row]:
        """Every row of a relation, base or derived (a virtual one is evaluated in full)."""
        arguments.relation(self.program, rel, "rel")
        with self._read():
            return set(self._context().F[rel])

    def base_facts(self) -> dict[str, set[ir.Row]]:
        """Every base fact by relation, the rule files' and the inserted ones (not what rules
        derive): what a reasoner for other rules would start from."""
        with self._read():
            db = self._database()
            out = {rel: set(rows) for rel, rows in self._base.items() if rows}
            for rel in self._base_only:
                rows = db.full[rel]
                if rows:
                    out[rel] = set(rows)
            return out

    def all_rows(self) -> dict[str, set[ir.Row]]:
        """Every relation's rows by name, base and derived (copies)."""
        return self._all(set)

    def all_views(self) -> dict[str, AbstractSet[ir.Row]]:
        """:meth:`all_rows` without copies: each relation's rows as a read-only view of the
        reasoner's own (iterated in the order they were added), valid until its next change
        and not to be read while another thread writes: for a reader of millions of rows at
        once (``grantlog eval``). Virtual relations are evaluated before it returns."""
        return self._all(_view)

    def _all(self, take: Callable[[Any], Any]) -> dict[str, Any]:
        names = sorted(self.program.relations)  # virtual ones are evaluated here, one by one
        with self._read():
            ctx = self._context()
            return {r: take(ctx.F[r]) for r in progress.each("relations", names, "relation")}

    @validity.question
    def query(self, goal: str, at_least: int | None = None, *, at_revision: int | None = None,
              as_of: object = None, now: object = None) -> Answers[dict[str, ir.Value]]:
        """Every binding of the goal's named variables, sorted (``.revision``: the revision
        answered at, ``at_least`` or later: see :meth:`wait_for`). ``at_revision``/``as_of``
        (also of check, list, who, explain): as it stood then (engine/answer/history.py)."""
        g = self._goals[arguments.goal(goal, at_least)]
        if at_least is not None:
            self.wait_for(at_least)
        with self._read():
            return self._goals.answers(g, self._context(), self._plans, self.revision)

    def ask(self, goal: str, at_least: int | None = None) -> bool:
        """Whether the goal has at least one answer."""
        return bool(self.query(goal, at_least))

    def plan(self, goal: str) -> tuple[RulePlan, DemandPlans]:
        """The plan :meth:`query` runs for ``goal`` now (its atoms in the order the current
        statistics choose) and the planner of the virtual relations it reaches, with those
        statistics (engine/answer/plan.py describes both)."""
        g = self._goals[arguments.goal(goal)]
        with self._read():
            self._context()
            return self._goals.plan(g, self._plans), self._plans

    def _decision(self) -> str:
        rel = self._decision_rel
        if rel is None:
            rel = self._decision_rel = decision_relation(self.program, self._relation)
        return rel

    def prepare(self) -> None:
        """Plan the decision's checks, lists and filters and build the indexes they read now,
        not on the first checks that need them (at 1M tables the first check of a fresh
        reasoner otherwise takes ~0.3 s: a server calls this before it takes traffic)."""
        rel = self._decision()
        with self._read():
            ctx = self._context()
            vocabulary.prepare(self.program, ctx, rel)  # what a denied check's typo test reads
            if rel not in self.program.virtual:
                return
            reads = self._plans.reads(rel, (0, 1, 2)) | self._plans.reads(rel, (0, 1))
            # with a walkable hierarchy: the walks of list and filter, and the lookups a
            # filter's partial evaluation makes
            for r, cols in filters.filter_lookups(self, ctx, rel):
                if r in self.program.virtual:
                    ctx.lookup_of(r, cols)
                    reads |= self._plans.reads(r, cols)
                else:
                    reads.add((r, cols))
            for r, cols in sorted(reads):
                if r not in self.program.virtual or ctx.full.get(r):
                    ctx.base_index(r, cols)
            self._database().hash_sorted()  # a store's sorted indexes: hash tables now

    @validity.question
    def check(self, subject: str, operation: str, resource: str, at_least: int | None = None,
              strict: bool = False, *, at_revision: int | None = None,
              as_of: object = None, now: object = None) -> Decision:
        """Is ``decision(subject, operation, resource)`` true? (``allowed/3`` by convention).

        Goal-directed: only what this one question needs is evaluated. ``reasons`` names the
        rule that decided (first), then the rules that derived its premises (one level down);
        a denial has none (``explain`` gives the why-not tree). ``revision``: the facts'
        revision it saw; ``at_least``: wait until the facts are at that revision or later
        (SpiceDB's zedtokens). A typo's denial warns (answer/vocabulary.py); ``strict`` raises.
        """
        arguments.question(arguments.DECIDED, (subject, operation, resource), at_least)
        if at_least is not None and at_least > self.revision:
            self.wait_for(at_least)
        rel = self._decision()
        row = (subject, operation, resource)
        with self._lock:  # what _read does, without a generator (checks are the hot path)
            try:
                d = self._decider.decide(ctx := self._context(), rel, row)
                return d if d else vocabulary.decided(self.program, ctx, rel, row, d, strict)
            except RecursionError:
                self._too_deep()

    def prover(self, ctx: DemandContext) -> Prover:
        """The prover of a read's view (:meth:`view`): minimal proofs of its rows."""
        arguments.instance("ctx", ctx, DemandContext, "a read's view (`Reasoner.view()`)")
        db = self._database()

        def origin(rel: str, row: ir.Row) -> Span | str | None:
            base = self._base.get(rel)
            if row not in (db.full[rel] if base is None else base):
                return None
            spans = self._spans.get(rel)
            return (spans.get(row) if spans is not None else None) or INSERTED

        return Prover(self.program, db.full, ctx, origin)

    @validity.question
    def explain(self, goal: str, limits: Limits | None = None, *,
                at_revision: int | None = None, as_of: object = None) -> Explanation:
        """Why the goal holds (a proof tree for its first answer), or why it has no answer (a
        why-not tree, within ``limits``); see engine/answer/explain/."""
        g = self._goals[arguments.goal(goal, limits=(limits, Limits))]
        with self._read():
            ctx = self._context()
            return explain_goal(goal, g.rule, g.names, ctx, self.prover(ctx), limits)

    @validity.question
    def list(
        self, subject: str, operation: str, type: str | None = None,
        within: str | None = None, at_least: int | None = None,
        after: ir.Value | None = None, limit: int | None = None, strict: bool = False, *,
        at_revision: int | None = None, as_of: object = None, now: object = None,
    ) -> Answers[ir.Value]:
        """The resources ``subject`` may perform ``operation`` on, sorted; with ``type``, only
        resources of that type (in the relation declared ``@hierarchy(type)``: the prelude's
        ``entity``); with ``within``, only ``within`` and the resources below it (in the
        relation declared ``@hierarchy(closure)``: the prelude's ``ancestor_or_self``; a
        schema's tables, a catalog's schemas and tables).

        Pages: ``after`` (the last value of the previous page; the order is stable) and
        ``limit`` (at most that many); ``Answers.revision`` says what the page saw, and
        ``at_least=`` that revision keeps the pages of one listing on the same facts or later.

        Without ``within``: goal-directed from the subject and operation. With it: the
        resources below ``within`` first, then one decision per group of resources no rule
        can tell apart (the same facts up to their own name: engine/eval/symmetry.py), sharing
        what the decisions have in common (the subject's roles, the container's grants)
        (engine/answer/listing.py)."""
        arguments.question(arguments.LISTED, (subject, operation, type, within, after),
                           at_least, 3, limit)
        return listing.list_resources(self, subject, operation, type, within, at_least,
                                      after, limit, strict)

    def _residual(self, ctx: DemandContext, subject: str, operation: str,
                  type: str | None, h: Hierarchy | None = None) -> Cond:
        """The decision's condition on the resource for ``subject`` and ``operation`` (``h``:
        the view's hierarchy, shared with the caller's walks)."""
        return filters.residual(self, ctx, subject, operation, type, h)

    def filter(self, subject: str, operation: str, type: str | None = None,
               at_least: int | None = None, strict: bool = False) -> Residual:
        """The condition a resource must meet for ``decision(subject, operation, R)`` to
        hold (with ``type``: and be of that type): the decision partially evaluated with
        the resource unknown (engine/answer/residual.py). ``filter-unsupported`` when a rule the
        decision reaches says something of the resource a filter cannot."""
        arguments.question(arguments.FILTERED, (subject, operation, type), at_least, 1)
        return filters.data_filter(self, subject, operation, type, at_least, strict)

    def row_filter(self, subject: str, table: str, relation: str = "row_visible",
                   at_least: int | None = None) -> RowFilter:
        """The condition a row of ``table`` must meet for ``relation(subject, table, R)``:
        the relation partially evaluated with the row unknown, where ``row(table, R)`` and
        ``cell(R, column, value)`` are the row's own (engine/answer/residual.py). A condition on
        cells only; ``filter-unsupported`` when a rule says more of the row."""
        arguments.question(("subject", "table"), (subject, table), at_least)
        return filters.row_filter(self, subject, table, relation, at_least)

    @validity.question
    def who(self, operation: str, resource: str, at_least: int | None = None,
            strict: bool = False, *, at_revision: int | None = None,
            as_of: object = None, now: object = None) -> Answers[ir.Value]:
        """The subjects that may perform ``operation`` on ``resource``, sorted."""
        arguments.question(("operation", "resource"), (operation, resource), at_least)
        return listing.who(self, operation, resource, at_least, strict)


def _view(rows: Any) -> AbstractSet[ir.Row]:
    """A relation's rows as a read-only set: a materialized relation's dict's keys (a row's
    level as its value); a virtual relation's rows evaluated now, inside the read (under
    the lock, its errors turned into diagnostics), not when the caller reads them."""
    return rows.keys() if isinstance(rows, dict) else set(rows)
