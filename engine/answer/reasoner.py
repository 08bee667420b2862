"""The in-memory reasoner behind ``grantlog.Reasoner``.

The first read evaluates from scratch (stratified semi-naive, engine/evaluate.py); after that
every update is a transaction maintained incrementally (DRed, engine/incremental.py) and
reports what it changed. Reads and writes take one lock, so a read sees a whole transaction or
none of it.
"""

from __future__ import annotations

import builtins
import difflib
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, NoReturn

from grantlog.grammar.diagnostics import GrantlogError, Span, error

from ..compile.compiler import compile_goal
from ..core import ir
from ..core.index import stored_get
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
from ..eval import symmetry
from ..eval.database import Database
from ..eval.demand import DemandContext, DemandPlans, Memo
from ..eval.incremental import Maintainer
from ..eval.seminaive import EvalStats, Evaluator
from ..plan.codegen import Binder, RunFn, compile_keyed, compile_plan, solve
from ..plan.join import plan_bound
from ..plan.stats import Statistics
from .conditions import Cond, conj, disj
from .explain import Explanation, Limits, Proof, Prover, WhyNot
from .hierarchy import Hierarchy, enumerate_admitted, rollup, under_chains
from .residual import (
    KNOWN,
    SYM,
    Partial,
    Residual,
    RowFilter,
    prelude_hierarchy,
    row_relations,
    unsupported,
)

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


@dataclass(frozen=True)
class _ReasonPlan:
    """How :meth:`Reasoner._decide` reads the premises of one deciding rule."""

    names: tuple[str, ...]  # the body's named variables, as the premise function emits them
    head: tuple[tuple[int, str], ...]  # (column, variable) of the head's variables
    fn: Binder  # the body (views unfolded), keyed by the head's terms: its first instance
    #: per body atom of a derived relation: (relation, columns, terms there, its one rule
    #: when it is an unfolded view)
    premises: tuple[tuple[str, tuple[int, ...], tuple[ir.Term, ...], ir.Rule | None], ...]


@dataclass(frozen=True)
class _Goal:
    body: tuple[ir.Lit, ...]
    names: tuple[str, ...]
    rule: ir.Rule
    fn: RunFn
    #: plans by atom order (chosen from statistics)
    ordered: dict[tuple[int, ...], RunFn] = field(default_factory=dict)


def _sorted_answers(found: Iterable[ir.Value], revision: int,
                    distinct: bool = False) -> Answers[ir.Value]:
    """Distinct values (``distinct``: ``found`` has no duplicates) in value order: the
    natural order when all are strings or all ints (sorting a mix raises)."""
    values = found if distinct else set(found)
    try:
        return Answers(sorted(values), revision)
    except TypeError:
        return Answers(sorted(values, key=ir.value_key), revision)


def _page(answers: Answers[ir.Value], after: ir.Value | None,
          limit: int | None) -> Answers[ir.Value]:
    """The sorted ``answers`` after ``after`` (not included), at most ``limit`` of them."""
    if after is None and limit is None:
        return answers
    if limit is not None and limit < 0:
        raise GrantlogError([error("bad-request", f"`limit` must be 0 or more, not {limit}",
                                   Span("<api>", 0, 0, 0, 0))])
    start = 0 if after is None else ir.position_after(answers, after)
    end = len(answers) if limit is None else start + limit
    return Answers(answers[start:end], answers.revision)


def _dependents(program: ir.Program) -> dict[str, frozenset[str]]:
    """relation -> the virtual relations whose answers depend on it (itself included)."""
    users: dict[str, set[str]] = {}
    for rule in program.rules:
        for lit in rule.body:
            atom = lit.atom if isinstance(lit, ir.Neg) else lit
            if isinstance(atom, ir.Atom):
                users.setdefault(atom.rel, set()).add(rule.head.rel)
    out: dict[str, frozenset[str]] = {}
    for rel in program.relations:
        seen = {rel}
        stack = [rel]
        while stack:
            for u in users.get(stack.pop(), ()):
                if u not in seen:
                    seen.add(u)
                    stack.append(u)
        out[rel] = frozenset(seen & program.virtual)
    return out


def _atom_args(lit: ir.Lit) -> tuple[ir.Term, ...]:
    atom = lit.atom if isinstance(lit, ir.Neg) else lit
    return atom.args if isinstance(atom, ir.Atom) else ()


#: the evaluators behind ``Reasoner(program, backend=...)``
BACKENDS = ("memory", "pydatalog")


class Reasoner(Writes):
    """Answers questions about a compiled program over base facts that change at run time."""

    def __new__(cls, program: ir.Program, watch: Iterable[str] | str = (),
                backend: str = "memory") -> Any:
        """``backend="pydatalog"`` answers with pyDatalog instead (an independent oracle;
        see :mod:`engine.pydatalog_backend`), behind the same methods."""
        if backend == "memory":
            return super().__new__(cls)
        if backend == "pydatalog":
            try:  # an optional dependency, imported on first use
                from ..backends.pydatalog import PyDatalogReasoner
            except ImportError as exc:
                raise GrantlogError([error(
                    "missing-dependency", f"the pyDatalog backend needs pyDatalog ({exc})",
                    Span("<api>", 0, 0, 0, 0),
                    "install it with `pip install 'grantlog[pydatalog]'`")]) from exc
            return PyDatalogReasoner(program, watch)
        close = difflib.get_close_matches(backend, BACKENDS, n=1)
        raise GrantlogError([error(
            "unknown-backend", f"backend `{backend}` does not exist",
            Span("<api>", 0, 0, 0, 0),
            f"did you mean `{close[0]}`?" if close else
            "backends: " + ", ".join(f"`{b}`" for b in BACKENDS))])

    def __init__(self, program: ir.Program, watch: Iterable[str] | str = (),
                 backend: str = "memory") -> None:
        """``watch``: virtual relations whose changes every transaction reports (``"all"``)."""
        self.program = program
        self._watch = frozenset(program.virtual if watch == "all" else
                                ([watch] if isinstance(watch, str) else watch))
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
            cache["dependents"] = _dependents(program)
        deps = cache["dependents"]
        assert isinstance(deps, dict)
        self._dependents: dict[str, frozenset[str]] = deps
        #: base facts of derived relations (rows given for a relation that rules also derive);
        #: base-only relations are stored once, in the database (level 0), not here
        self._base: dict[str, dict[ir.Row, None]] = {r: {} for r in program.derived}
        self._base_only = tuple(r for r in program.relations if r not in self._base)
        #: where each fact written in the rule files is (a fact inserted at run time has none)
        self._spans: dict[str, dict[ir.Row, Span]] = {}
        #: base-only facts waiting for the first evaluation (the rule files' own)
        self._initial: dict[str, dict[ir.Row, None]] | None = {}
        for f in program.facts:
            if f.span is not None:
                self._spans.setdefault(f.rel, {}).setdefault(f.row, f.span)
            store = self._base.get(f.rel)
            if store is None:
                store = self._initial.setdefault(f.rel, {})
            store.setdefault(f.row, None)
        self._db: Database | None = None
        self._lock = threading.RLock()
        self._goals: dict[str, _Goal] = {}
        self._reason_plans: dict[int, _ReasonPlan] = {}
        #: what listing needs to group interchangeable resources (see :meth:`_kinds`)
        self._symmetry: tuple[dict[str, tuple[int, ...]], set[ir.Value]] | None = None
        self.stats: EvalStats | None = None
        self._decision_rel: str | None = None  # checked once (:meth:`_decision`)
        #: the number of transactions applied (a store numbers them itself: grantlog/store)
        self.revision = 0
        #: decisions at the current revision, shared (immutable): every denial, every allowed
        #: one decided by a base fact, one per list of reasons
        self._denied = Decision(False, (), 0)
        self._fact = Decision(True, (), 0)
        self._allowed: dict[tuple[str, ...], Decision] = {}
        #: filters: per type, whether its objects are never nested (engine/hierarchy.py
        #: ``unnested``); forgotten when the hierarchy changes
        self._levels: dict[Any, Any] = {}

    # -- updates ------------------------------------------------------------------------------

    def _relation(self, rel: str) -> ir.Relation:
        r = self.program.relations.get(rel)
        if r is None:
            close = difflib.get_close_matches(rel, sorted(self.program.relations), n=1)
            raise GrantlogError([error(
                "unknown-relation", f"relation `{rel}` does not exist", Span("<api>", 0, 0, 0, 0),
                f"did you mean `{close[0]}`?" if close else None)])
        return r

    def _rows(self, rel: str, rows: Iterable[Sequence[ir.Value]]) -> list[ir.Row]:
        r = self._relation(rel)
        refused = self.program.write_refusal(rel)  # derived, not `@writable`
        if refused:
            raise GrantlogError([refused])
        out: list[ir.Row] = []
        for raw in rows:
            row = tuple(raw)
            problem = ir.row_problem(r, row)
            if problem:
                raise GrantlogError([error("bad-fact", problem, Span("<api>", 0, 0, 0, 0))])
            out.append(row)
        return out

    @contextmanager
    def transaction(self, watch: Iterable[str] | str = (),
                    if_revision: int | None = None) -> Iterator[Transaction]:
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
        changed nothing).
        """
        tx = Transaction(self._rows)
        yield tx
        names = self._watched(watch)
        tx.changes = self._commit(tx, names | self._watch, if_revision)
        tx.revision = tx.changes.revision

    def seed(self, rows: Mapping[str, Iterable[ir.Row]], revision: int) -> None:
        """Trusted base facts (already checked: a store's tables) taken as they are, before
        the first read evaluates; the facts are then at ``revision``. Once evaluated, the
        rows are applied as a transaction instead."""
        with self._lock:
            initial = self._initial
            if self._db is not None or initial is None:
                for rel in rows:
                    self._relation(rel)
                ins, _ = self._delta({rel: dict.fromkeys(rs, True) for rel, rs in rows.items()})
                self._apply(ins, {}, self._watch, revision)
                return
            for rel, rs in rows.items():
                self._relation(rel)
                store = self._base.get(rel)
                if store is None:
                    store = initial.setdefault(rel, {})
                store.update(dict.fromkeys(rs))
            self._advance(revision)

    def _watched(self, watch: Iterable[str] | str) -> frozenset[str]:
        if watch == "all":
            return frozenset(self.program.virtual)
        names = frozenset([watch] if isinstance(watch, str) else watch)
        for n in names:
            self._relation(n)
        return names

    def _commit(self, tx: Transaction, watch: frozenset[str],
                if_revision: int | None = None) -> Changes:
        with self._lock:
            if if_revision is not None and if_revision != self.revision:
                raise RevisionConflict(if_revision, self.revision)
            ins, dels = self._delta(tx.ops)
            if not ins and not dels:
                return Changes({}, self.program.derived, self.revision)
            return self._apply(ins, dels, watch, self.revision + 1)

    def _delta(self, ops: dict[str, dict[ir.Row, bool]]) -> tuple[Delta, Delta]:
        """The net effect of a transaction's operations on the current base facts: the rows
        it adds and the rows it removes (nothing is changed yet)."""
        db = self._database()
        ins: Delta = {}
        dels: Delta = {}
        for rel, rows in ops.items():
            base = self._base.get(rel)  # None: base-only, the database holds its rows
            stored = db.full[rel] if base is None else base
            for row, present in rows.items():
                if present and row not in stored:
                    ins.setdefault(rel, set()).add(row)
                elif not present and row in stored:
                    dels.setdefault(rel, set()).add(row)
        return ins, dels

    def _apply(self, ins: Delta, dels: Delta, watch: frozenset[str],
               revision: int) -> Changes:
        """Make a net change of base facts visible (maintaining what depends on it) as
        ``revision``; every row of ``ins`` is absent and every row of ``dels`` present."""
        with self._lock:
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
            if not {"contains", "entity"}.isdisjoint(ins.keys() | dels.keys()):
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
                changed = self._maintainer.apply(db, self._base, ins, dels, watch,
                                                 self._memo, self._dependents, plans)
                if watch:
                    self._memo_entries += self._maintainer.memo_entries
                for rel in {*ins, *dels, *changed}:
                    for v in self._dependents.get(rel, ()):
                        self._memo.pop(v, None)
            return Changes(changed, self.program.derived, revision)

    def wait_for(self, revision: int, timeout: float | None = None) -> int:
        """Block until the facts are at ``revision`` or later (another thread's or process's
        transaction); ``revision-timeout`` after ``timeout`` seconds (default
        :data:`WAIT_TIMEOUT`). Returns the revision reached."""
        if self.revision >= revision:
            return self.revision
        end = time.monotonic() + (WAIT_TIMEOUT if timeout is None else timeout)
        pause = 0.0005
        while True:
            self._catch_up()
            if self.revision >= revision:
                return self.revision
            left = end - time.monotonic()
            if left <= 0:
                raise GrantlogError([error(
                    "revision-timeout",
                    f"revision {revision} was not reached within "
                    f"{WAIT_TIMEOUT if timeout is None else timeout:g} s (at {self.revision})",
                    Span("<api>", 0, 0, 0, 0),
                    "the revision may not exist yet, or this reasoner cannot reach its store")])
            time.sleep(min(pause, left))
            pause = min(pause * 2, 0.02)

    def _catch_up(self) -> None:
        """Apply transactions committed elsewhere (a store-backed reasoner reads its log;
        an in-memory one has nothing to read)."""

    def _advance(self, revision: int) -> None:
        """The facts are now at ``revision``: decisions made from here on say so."""
        self.revision = revision
        self._denied = Decision(False, (), revision)
        self._fact = Decision(True, (), revision)
        self._allowed = {}

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
                changed[rel] = Change(set(plus), set(minus))
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
                    for rel, rows in self._initial.items():
                        db.add(rel, rows, 0)
                    self._initial = None
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
        last, db = self._last, self._db
        if last is not None:
            self._memo_entries += last.entries
            last.entries = 0
            if self._memo_entries > MEMO_LIMIT:
                self._forget()
            elif db is not None and last.full is db.full and last.idle():
                # nothing changed since the last read: a transaction and a rebuild drop
                # ``_last``, and the stored rows (so the plans) change only in them
                return last
        db = self._database()
        self._replan(db)
        ctx = self._last = DemandContext(self.program, self._plans, db.full, db.index,
                                         self._memo)
        return ctx

    def _replan(self, db: Database) -> None:
        """Order goal-directed plans by the database's statistics (engine/stats.py), again
        whenever the stored rows have grown or shrunk by a factor of two since."""
        n = db.rows
        last = self._planned_for
        if last is not None and (n <= 2 * last + REPLAN_SLACK and last <= 2 * n + REPLAN_SLACK):
            return
        self._plans.use(Statistics(self.program, db.full))
        self._planned_for = n
        self._reason_plans.clear()  # made from the previous plans' unfolded bodies

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
        self._relation(rel)
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
        self._relation(rel)
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
        with self._read():
            ctx = self._context()
            return {r: set(ctx.F[r]) for r in sorted(self.program.relations)}

    def _goal(self, text: str) -> _Goal:
        g = self._goals.get(text)
        if g is None:
            body, names = compile_goal(self.program, text)
            head = ir.Atom("<goal>", tuple(ir.Var(n) for n in names))
            rule = ir.Rule(-1, "<goal>", head, body)
            g = _Goal(body, tuple(names), rule, compile_plan(plan_bound(rule, set())))
            self._goals[text] = g
        return g

    def _goal_fn(self, g: _Goal) -> RunFn:
        """The goal's plan ordered by the current statistics (call after ``_context``)."""
        order = self._plans.order(g.rule, frozenset())
        if order is None:
            return g.fn
        fn = g.ordered.get(order)
        if fn is None:
            fn = g.ordered[order] = compile_plan(
                plan_bound(g.rule, set(), self.program.virtual, order))
        return fn

    def query(self, goal: str, at_least: int | None = None) -> Answers[dict[str, ir.Value]]:
        """Every binding of the goal's named variables, sorted (``.revision``: the revision
        answered at, ``at_least`` or later: see :meth:`wait_for`)."""
        g = self._goal(goal)
        if at_least is not None:
            self.wait_for(at_least)
        out: set[ir.Row] = set()
        with self._read():
            ctx = self._context()
            self._goal_fn(g)(ctx.F, None, ctx.index, out.add, {})
            revision = self.revision
        return Answers((dict(zip(g.names, row, strict=True))
                        for row in sorted(out, key=ir.row_key)), revision)

    def ask(self, goal: str, at_least: int | None = None) -> bool:
        """Whether the goal has at least one answer."""
        return bool(self.query(goal, at_least))

    def _decision(self) -> str:
        rel = self._decision_rel
        if rel is not None:
            return rel
        rel = self.program.decision
        r = self._relation(rel)
        if r.arity != 3:
            raise GrantlogError([error("arity-mismatch",
                                       f"decision relation `{rel}` must have 3 columns",
                                       r.span or Span("<api>", 0, 0, 0, 0))])
        self._decision_rel = rel
        return rel

    def prepare(self) -> None:
        """Plan the decision relation's checks (and its lists and filters, which bind the
        subject and the operation) and build the indexes they read now, rather than on the
        first checks that need them (at 1M tables the first check of a fresh reasoner
        otherwise takes ~0.3 s: a server calls this before it takes traffic)."""
        rel = self._decision()
        with self._read():
            ctx = self._context()
            if rel not in self.program.virtual:
                return
            reads = self._plans.reads(rel, (0, 1, 2)) | self._plans.reads(rel, (0, 1))
            if prelude_hierarchy(self.program):  # the walks of list and filter, and the
                # lookups a filter's partial evaluation makes
                reads |= {("contains", (0,)), ("contains", (1,)), ("entity", (0,)),
                          ("entity", (1,))}
                partial = Partial(self.program, ctx, self._base, self._levels)
                partial.warm(rel, (KNOWN, KNOWN, SYM))
                for r, cols in partial.lookups:
                    if r in self.program.virtual:
                        ctx.lookup_of(r, cols)
                        reads |= self._plans.reads(r, cols)
                    else:
                        reads.add((r, cols))
            for r, cols in sorted(reads):
                if r not in self.program.virtual or ctx.full.get(r):
                    ctx.base_index(r, cols)

    def check(self, subject: str, operation: str, resource: str,
              at_least: int | None = None) -> Decision:
        """Is ``decision(subject, operation, resource)`` true? (``allowed/3`` by convention).

        Goal-directed: only what this one question needs is evaluated. ``reasons`` names the
        rule that decided (first), then the rules that derived its premises (one level down);
        a denial has none (``explain`` gives the why-not tree). ``revision``: the facts'
        revision it saw; ``at_least``: wait until the facts are at that revision or later
        (SpiceDB's zedtokens; :meth:`wait_for`).
        """
        if at_least is not None and at_least > self.revision:
            self.wait_for(at_least)
        rel = self._decision()
        row = (subject, operation, resource)
        with self._lock:  # what _read does, without a generator (checks are the hot path)
            try:
                return self._decide(self._context(), rel, row)
            except RecursionError:
                self._too_deep()

    def _decide(self, ctx: DemandContext, rel: str, row: ir.Row) -> Decision:
        """The decision with cheap reasons (Cedar's "determining policies"): the rule that
        derived the row first, then the rules that derived its premises in the first body
        instance found — read from the rule indexes demand evaluation records per row, not
        from a proof search (``explain`` builds the minimal-height proof tree)."""
        if rel in self.program.virtual:
            got = ctx.demand(rel, (0, 1, 2), row)
            if not got:
                return self._denied
            rid = got[row]
            rule = self.program.rules[rid] if rid >= 0 else None
        else:
            if row not in ctx.F[rel]:
                return self._denied
            rule = self._deriving_rule(ctx, rel, row)
        if rule is None:  # a base fact of the decision relation
            return self._fact
        plan = self._reason_plans.get(rule.index)
        if plan is None:
            plan = self._reason_plans[rule.index] = self._reason_plan(rule)
        reasons = [rule.name]
        env = self._premises(ctx, plan, row)
        for prel, cols, terms, fixed in plan.premises:
            if fixed is not None:  # a view with one rule and no stored rows
                sub: ir.Rule | None = fixed
            else:
                key = tuple(t.value if isinstance(t, ir.Const) else env[t.name] for t in terms)
                sub = self._rule_of(ctx, prel, cols, key)
            if sub is not None and sub.name not in reasons:
                reasons.append(sub.name)
        names = tuple(reasons)
        decision = self._allowed.get(names)
        if decision is None:  # one per list of reasons (immutable: shared)
            decision = self._allowed[names] = Decision(True, names, self.revision)
        return decision

    def _reason_plan(self, rule: ir.Rule) -> _ReasonPlan:
        """What :meth:`_decide` needs of a deciding rule, computed once per plans."""
        names = tuple(sorted({t.name for lit in rule.body for t in _atom_args(lit)
                              if isinstance(t, ir.Var) and not t.name.startswith("_?")}))
        head = tuple((i, t.name) for i, t in enumerate(rule.head.args) if isinstance(t, ir.Var))
        bound = frozenset(n for _, n in head if n in names)
        # the body as the decision ran it: views unfolded (their answers are not kept, their
        # lookups' are), in statistics' order
        flat = self._plans.unfold(rule)
        order = self._plans.order(flat, bound)
        probe = ir.Rule(rule.index, rule.name, ir.Atom("<premises>", tuple(map(ir.Var, names))),
                        flat.body)
        pplan = plan_bound(probe, set(bound), self.program.virtual, order)
        fn = compile_keyed(pplan, rule.head.args, self.program.virtual, first=True,
                           wide=self._plans.wide(pplan))
        premises = []
        for lit in rule.body:
            if not isinstance(lit, ir.Atom) or lit.rel not in self._plans.rules:
                continue
            cols = tuple(c for c, t in enumerate(lit.args)
                         if isinstance(t, ir.Const) or not t.name.startswith("_?"))
            fixed = (self._plans.rules[lit.rel][0] if lit.rel in self._plans.unfolded
                     else None)
            premises.append((lit.rel, cols, tuple(lit.args[c] for c in cols), fixed))
        return _ReasonPlan(names, head, fn, tuple(premises))

    def _premises(self, ctx: DemandContext, plan: _ReasonPlan,
                  row: ir.Row) -> dict[str, ir.Value]:
        """The first binding of the rule's named body variables with its head equal to
        ``row``."""
        env = {n: row[i] for i, n in plan.head}
        out: dict[ir.Row, int] = {}
        ctx.bind(plan.fn)(out.setdefault, row)  # stops at the first instance
        for first in out:
            env.update(zip(plan.names, first, strict=True))
        return env

    def _rule_of(self, ctx: DemandContext, rel: str, cols: tuple[int, ...],
                 key: tuple[ir.Value, ...]) -> ir.Rule | None:
        """The rule that derived the first row of ``rel`` matching ``key`` (None: a fact)."""
        if rel in self.program.virtual:
            got = ctx.demand(rel, cols, key)
            for rid in got.values():
                return self.program.rules[rid] if rid >= 0 else None
            return None
        rows = ctx.lookup(rel, cols, key)
        for r in rows:
            return self._deriving_rule(ctx, rel, r)
        return None

    def _deriving_rule(self, ctx: DemandContext, rel: str, row: ir.Row) -> ir.Rule | None:
        """A rule of materialized ``rel`` whose body holds for ``row`` (None: a base fact)."""
        base = self._base.get(rel)
        if base is None or row in base:
            return None
        for rule in self._plans.rules.get(rel, ()):
            env: dict[str, ir.Value] = {}
            if all(env.setdefault(t.name, v) == v if isinstance(t, ir.Var) else t.value == v
                   for t, v in zip(rule.head.args, row, strict=True)):
                fn = self._plans.fn(rule, frozenset(env))
                hit: list[ir.Row] = []
                fn(ctx.F, None, ctx.index, hit.append, env)
                if hit:
                    return rule
        return None

    def _prover(self, ctx: DemandContext) -> Prover:
        db = self._database()

        def origin(rel: str, row: ir.Row) -> Span | str | None:
            base = self._base.get(rel)
            if row not in (db.full[rel] if base is None else base):
                return None
            return self._spans.get(rel, {}).get(row) or INSERTED

        return Prover(self.program, db.full, ctx, origin)

    def explain(self, goal: str, limits: Limits | None = None) -> Explanation:
        """Why the goal holds (a proof tree for its first answer), or why it has no answer (a
        why-not tree, within ``limits``); see engine/explain.py."""
        g = self._goal(goal)
        with self._read():
            ctx = self._context()
            plan = plan_bound(g.rule, set())
            answers = sorted(
                (env for env in solve(plan, ctx.F, None, ctx.index, {})),
                key=lambda e: ir.row_key(e[n] for n in g.names),
            )
            if not answers:
                why_not = WhyNot(self.program, ctx, self._prover(ctx), limits).goal(g.rule)
                return Explanation(goal, False, {}, None, why_not)
            env = answers[0]
            prover = self._prover(ctx)
            bindings = {n: env[n] for n in g.names}
            if len(g.body) == 1 and isinstance(g.body[0], ir.Atom):
                atom = g.body[0]
                row = tuple(t.value if isinstance(t, ir.Const) else env[t.name]
                            for t in atom.args)
                return Explanation(goal, True, bindings, prover.prove(atom.rel, row))
            node = prover.instance(g.rule, env, goal, 0)
            root = Proof(goal, "goal", None, bindings, None, node.children)
            return Explanation(goal, True, bindings, root)

    def list(
        self, subject: str, operation: str, type: str | None = None,
        within: str | None = None, at_least: int | None = None,
        after: ir.Value | None = None, limit: int | None = None,
    ) -> Answers[ir.Value]:
        """The resources ``subject`` may perform ``operation`` on, sorted; with ``type``, only
        resources with ``entity(resource, type)`` (the prelude's entity relation); with
        ``within``, only ``within`` and the resources below it (the prelude's
        ``ancestor_or_self``: a schema's tables, a catalog's schemas and tables).

        Pages: ``after`` (the last value of the previous page; the order is stable) and
        ``limit`` (at most that many); ``Answers.revision`` says what the page saw, and
        ``at_least=`` that revision keeps the pages of one listing on the same facts or later.

        Without ``within``: goal-directed from the subject and operation. With it: the
        resources below ``within`` first, then one decision per group of resources no rule
        can tell apart (the same facts up to their own name: engine/symmetry.py), sharing
        what the decisions have in common (the subject's roles, the container's grants)."""
        if at_least is not None:
            self.wait_for(at_least)
        rel = self._decision()
        if type is not None:
            self._relation("entity")
        if within is not None:
            self._relation("ancestor_or_self")
        fast = self._list_filtered(subject, operation, type) if within is None else None
        if fast is not None:  # through the filter: walked down from what it admits
            return _page(_sorted_answers(fast[0], fast[1], distinct=True), after, limit)
        with self._read():
            ctx = self._context()
            if within is None:
                found = [row[2] for row in ctx.lookup(rel, (0, 1), (subject, operation))]
            else:
                found = [row[1] for row in ctx.lookup("ancestor_or_self", (0,), (within,))]
            known: set[tuple[str, int]] = set()
            if type is not None:
                get, unique = (stored_get(ctx.base_index("entity", (0,)))
                               if "entity" not in self.program.derived else (None, False))
                if get is not None and unique:  # one type per object
                    found = [x for x, row in zip(found, map(get, found), strict=True)
                             if row is not None and row[1] == type]
                    known.add(("entity", 0))  # each candidate's one row: (x, type)
                else:
                    entity = ctx.F["entity"]
                    found = [x for x in found if (x, type) in entity]
            if within is not None:  # decided last: the cheap filters first
                decided: list[ir.Value] = []
                for kind in self._kinds(ctx, found, {subject, operation}, known):
                    if ctx.lookup(rel, (0, 1, 2), (subject, operation, kind[0])):
                        decided += kind
                found = decided
            revision = self.revision
        return _page(_sorted_answers(found, revision), after, limit)

    def _list_filtered(self, subject: str, operation: str, type: str | None,
                       ) -> tuple[builtins.list[ir.Value], int] | None:
        """``list`` through the decision's filter, when the model has the prelude's
        hierarchy and the filter bounds the resources: output-sensitive (the subtrees the
        filter names, not every resource); None otherwise."""
        if not prelude_hierarchy(self.program):
            return None
        with self._read():
            ctx = self._context()
            h = Hierarchy(ctx)
            try:
                cond = self._residual(ctx, subject, operation, type, h)
            except GrantlogError as err:
                if err.diagnostics and err.diagnostics[0].code == "filter-unsupported":
                    return None
                raise
            got = enumerate_admitted(cond, h)
            return None if got is None else (got, self.revision)

    def _residual(self, ctx: DemandContext, subject: str, operation: str,
                  type: str | None, h: Hierarchy | None = None) -> Cond:
        """The decision's condition on the resource for ``subject`` and ``operation`` (``h``:
        the view's hierarchy, shared with the caller's walks)."""
        hier = prelude_hierarchy(self.program)
        if hier and h is None:
            h = Hierarchy(ctx)
        found = Partial(self.program, ctx, self._base, self._levels, h).atom(
            self._decision(), (subject, operation, SYM))
        cond = disj([c for _, c in found])
        cond = cond if type is None else conj([("type", type), cond])
        if h is not None and hier and h.tree:
            cond = rollup(cond, h)
        return cond

    def filter(self, subject: str, operation: str, type: str | None = None,
               at_least: int | None = None) -> Residual:
        """The condition a resource must meet for ``decision(subject, operation, R)`` to
        hold (with ``type``: and be of that type): the decision partially evaluated with
        the resource unknown (engine/residual.py). ``filter-unsupported`` when a rule the
        decision reaches says something of the resource a filter cannot."""
        if at_least is not None:
            self.wait_for(at_least)
        with self._read():
            ctx = self._context()
            h = Hierarchy(ctx) if prelude_hierarchy(self.program) else None
            cond = self._residual(ctx, subject, operation, type, h)
            revision = self.revision
            chains = under_chains(cond, h) if h is not None else {}
        has = "ancestor_or_self" in self.program.relations

        def ancestors(x: ir.Value) -> set[ir.Value]:
            if not has:
                return {x}
            return {b["A"] for b in self.query(f"ancestor_or_self(A, {ir.show_value(x)})")}

        def types(x: ir.Value) -> set[ir.Value]:
            if "entity" not in self.program.relations:
                return set()
            return {b["T"] for b in self.query(f"entity({ir.show_value(x)}, T)")}

        def parents(x: ir.Value) -> set[ir.Value]:
            if "contains" not in self.program.relations:
                return set()
            return {b["P"] for b in self.query(f"contains(P, {ir.show_value(x)})")}

        return Residual(subject, operation, cond, revision, ancestors, types, parents, chains)

    def row_filter(self, subject: str, table: str, relation: str = "row_visible",
                   at_least: int | None = None) -> RowFilter:
        """The condition a row of ``table`` must meet for ``relation(subject, table, R)``:
        the relation partially evaluated with the row unknown, where ``row(table, R)`` and
        ``cell(R, column, value)`` are the row's own (engine/residual.py). A condition on
        cells only; ``filter-unsupported`` when a rule says more of the row."""
        r = self._relation(relation)
        if r.arity != 3:
            raise GrantlogError([error(
                "bad-request", f"a row filter asks `{relation}(subject, table, row)`; "
                f"`{relation}` has {r.arity} columns", Span("<api>", 0, 0, 0, 0))])
        if not row_relations(self.program):
            raise unsupported("row filters need the stored relations `row(table, row)` and "
                              "`cell(row, column, value)`", None)
        if at_least is not None:
            self.wait_for(at_least)
        with self._read():
            p = Partial(self.program, self._context(), self._base)
            p.rows, p.table = True, table
            cond = disj([c for _, c in p.atom(relation, (subject, table, SYM))])
            revision = self.revision
        return RowFilter(subject, table, relation, cond, revision)

    def _kinds(self, ctx: DemandContext, candidates: Sequence[ir.Value],
               fixed: set[ir.Value], known: set[tuple[str, int]] | None = None,
               ) -> builtins.list[builtins.list[ir.Value]]:
        """``candidates`` grouped into values no rule can tell apart (engine/symmetry.py):
        one decision answers for each group. Each candidate alone when the rules compare
        values by order. ``known``: (relation, column) pairs where the caller found that
        every candidate has one row, the same but for the candidate; a relation whose only
        counting column is one of them is not read again."""
        if self._symmetry is None:
            program = self.program
            cols: dict[str, set[int]] = {}
            if symmetry.generic(program):
                for rel, c in symmetry.reachable_columns(program, self._decision(), 2):
                    cols.setdefault(rel, set()).add(c)
            self._symmetry = ({rel: tuple(sorted(c)) for rel, c in cols.items()},
                              symmetry.constants(program))
        columns, consts = self._symmetry
        if not columns:
            return [[x] for x in candidates]
        full = ctx.full
        stored = {rel: c for rel, c in columns.items()
                  if (self._base[rel] if rel in self._base else full.get(rel))}
        for rel, col in known or ():
            if stored.get(rel) == (col,) and rel not in self._base:
                del stored[rel]  # the one column that counts: the same row for everyone
        base = {rel: self._base.get(rel) for rel in stored}
        return symmetry.kinds(candidates, stored, ctx.base_index, base, fixed | consts)

    def who(self, operation: str, resource: str,
            at_least: int | None = None) -> Answers[ir.Value]:
        """The subjects that may perform ``operation`` on ``resource``, sorted."""
        if at_least is not None:
            self.wait_for(at_least)
        rel = self._decision()
        with self._read():
            found = {row[0] for row in self._context().lookup(rel, (1, 2), (operation, resource))}
            revision = self.revision
        return Answers(sorted(found, key=ir.value_key), revision)
