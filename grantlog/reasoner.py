"""``grantlog.Reasoner``: the engine's reasoner, with a store behind it on request."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from grantlog import engine
from grantlog.engine.core import arguments, backends, ir
from grantlog.grammar.diagnostics import GrantlogError, Span, error

if TYPE_CHECKING:
    from grantlog.engine.answer.history import Interval
    from grantlog.engine.answer.review import Review
    from grantlog.engine.answer.suggest import Bounds, Suggestions
    from grantlog.engine.answer.timelines import AccessTimeline
    from grantlog.store import Store
    from grantlog.store.follow import Follower
    from grantlog.store.history import Committed


class Reasoner(engine.Reasoner):
    """Answers questions about a compiled program over base facts that change at run time.

    ``backend``: the evaluator (engine/core/backends.py: ``memory``, the default, or
    ``pydatalog``, an independent oracle behind the same methods).

    ``store="sqlite:///facts.db"`` (or ``postgresql://...``, or an open store) keeps the base
    facts durable: every transaction is written to the store before it becomes visible, and
    transactions of other processes on the same store are followed from its change log
    (``follow=False`` follows only on demand: :meth:`sync`, ``at_least=``). See
    grantlog/store/journal.py. ``verify=True`` checks the store against its change log
    first and refuses a corrupt one (``store-corrupt``; grantlog/store/verify.py). A store URL
    that names no store is refused (``store-not-found``) unless ``create=True`` creates it.
    """

    def __new__(cls, program: ir.Program, watch: Iterable[str] | str = (),
                backend: str = backends.MEMORY, store: str | Store | None = None,
                follow: bool = True, verify: bool = False, create: bool = False) -> Any:
        _check_arguments(program, backend, store, follow=follow, verify=verify, create=create)
        if backend == backends.MEMORY:
            return super().__new__(cls)
        if store is not None:
            raise GrantlogError([error(
                "unsupported-feature", f"the `{backend}` backend does not read a store",
                Span("<api>", 0, 0, 0, 0), "use the default in-memory backend with `store=`")])
        return backends.create(backend, program, watch)

    def __init__(self, program: ir.Program, watch: Iterable[str] | str = (),
                 backend: str = backends.MEMORY, store: str | Store | None = None,
                 follow: bool = True, verify: bool = False, create: bool = False) -> None:
        #: the store holding the base facts (None: they live in memory only)
        self.store: Store | None = None
        self._follower: Follower | None = None
        if store is None:
            super().__init__(program, watch)
            return
        from grantlog.store import check, open_store
        from grantlog.store.journal import StoreJournal

        if isinstance(store, str):
            st = open_store(store, program, create=create, verify=verify)
        else:
            st = store
            if verify:
                check(st)
        journal = StoreJournal(st, owns=isinstance(store, str))
        try:
            super().__init__(program, watch, journal=journal)
        except BaseException:
            journal.close()
            raise
        self.store = st
        if follow:
            from grantlog.store.follow import Follower

            self._follower = Follower(st, self.sync)

    @property
    def follow_error(self) -> GrantlogError | None:
        """The follower's last error (None while the store answers, or without a follower)."""
        return None if self._follower is None else self._follower.error

    def load(self, paths: Iterable[str], relation: str | None = None,
             watch: Iterable[str] | str = ()) -> engine.Changes:
        """Insert the facts of data files (`.gl`, CSV, JSON Lines, Parquet, or directories of
        them; see grantlog/store/ingest.py) as one transaction; returns its changes."""
        from grantlog.store import ingest

        found = [str(p) for p in arguments.paths(paths)]
        if relation is not None:
            arguments.relation(self.program, relation)
        arguments.relation_names(self.program, watch)
        data = ingest.read(found, self.program, relation)
        with self.transaction(watch) as tx:
            for rel, rows in data.items():
                tx.insert(rel, rows)
        return tx.changes

    def timeline(self, subject: str, operation: str, resource: str, since: object = None,
                 until: object = None, proofs: bool = False) -> list[Any]:
        """The intervals in which ``check(subject, operation, resource)`` held between
        ``since`` and ``until`` (revisions, or times as ``as_of`` takes them; default: the
        whole history the store keeps), each opened and closed by a transaction (its
        revision, time, author, reason, ticket): engine/answer/timelines.py, docs/history.md.
        ``proofs=True``: each interval (a ``ProvenInterval``) also has ``why``, the proof at
        its start, and ``why_not``, the why-not at its end (engine/answer/timelines.py)."""
        from grantlog.engine.answer import timelines

        found: list[Interval] = timelines.timeline(self, subject, operation, resource, since,
                                                   until)
        if not proofs:
            return list(found)
        return list(timelines.prove(self, subject, operation, resource, found))

    def resource_timeline(self, operation: str, resource: str, since: object = None,
                          until: object = None) -> AccessTimeline:
        """Who could perform ``operation`` on ``resource`` between ``since`` and ``until``:
        per subject, the intervals, each edge a transaction (engine/answer/timelines.py)."""
        from grantlog.engine.answer import timelines

        return timelines.resource_timeline(self, operation, resource, since, until)

    def review(self, subject: str | None = None, resource: str | None = None,
               role: str | None = None, since: object = None) -> Review:
        """An access review of one subject, resource or role: each entry with its path (the
        facts of its proof) and, with ``since`` (a revision or a time; needs a store), what
        changed since, by which transaction and author (engine/answer/review.py)."""
        from grantlog.engine.answer import review

        return review.review(self, subject, resource, role, since)

    def subject_timeline(self, subject: str, operation: str | None = None,
                         since: object = None, until: object = None) -> AccessTimeline:
        """What ``subject`` could do (``operation``: only that) between ``since`` and
        ``until``: per (operation, resource), the intervals (engine/answer/timelines.py)."""
        from grantlog.engine.answer import timelines

        return timelines.subject_timeline(self, subject, operation, since, until)

    def tick(self, now: object = None) -> float:
        """Move the clock that decides which facts with a validity interval count to
        ``now`` (default: the wall clock; reads move it there by themselves): the facts whose
        interval starts or ends on the way are gained or lost as by a write, which the
        listeners and watch streams see (engine/answer/validity.py). Returns the clock."""
        from grantlog.engine.answer import validity

        return validity.tick(self, now)

    def suggest(self, *question: str, limit: int = 5,
                bounds: Bounds | None = None) -> Suggestions:
        """The smallest changes of base facts that would make a goal that does not hold hold
        (a DENY an ALLOW), each checked by running it on a copy, fewest facts first:
        ``r.suggest('allowed(alice, read, t1)')`` or ``r.suggest(subject, operation,
        resource)`` for the decision; at most ``limit``, within ``bounds``
        (engine/answer/suggest.py)."""
        from grantlog.engine.answer.suggest import Bounds, suggest

        if len(question) == 3:
            arguments.question(arguments.DECIDED, question)
            goal = ir.show_atom(self.program.decision, tuple(question))
        elif len(question) == 1:
            goal = arguments.goal(question[0])
        else:
            raise GrantlogError([error(
                "bad-argument", f"`suggest` takes a goal or a subject, operation and resource, "
                f"got {len(question)} arguments", Span("<api>", 0, 0, 0, 0),
                "e.g. `r.suggest(\"alice\", \"read\", \"t1\")`")])
        arguments.integer("limit", limit, 1)
        arguments.instance("bounds", bounds or Bounds(), Bounds, "a `Bounds` or None")
        return suggest(self, goal, limit, bounds)

    def next_edge(self) -> float | None:
        """When the next validity interval starts or ends (seconds since the epoch; None:
        no edge is to come): where a timer calls :meth:`tick`."""
        from grantlog.engine.answer import validity

        return validity.next_edge(self)

    def transactions(self, since: int = 0, upto: int | None = None) -> list[Committed]:
        """The store's transactions after revision ``since`` (up to ``upto``), oldest
        first: each one's revision, commit time, counts, and who wrote it and why
        (``author``, ``reason``, ``ticket``: None where not given). Without a store:
        ``history-unavailable``."""
        from grantlog.store.journal import StoreJournal

        journal = self.journal
        if not isinstance(journal, StoreJournal):
            raise GrantlogError([error(
                "history-unavailable", "this reasoner keeps no history: its facts live in "
                "memory only", Span("<api>", 0, 0, 0, 0),
                "open it over a store (`store=`), whose change log is the history")])
        return journal.transactions(arguments.integer("since", since, 0),
                                    arguments.optional_int("upto", upto, 0))

    def close(self) -> None:
        """Release what the reasoner holds: stop following, and close the store if this
        reasoner opened it."""
        if self._follower is not None:
            self._follower.close()
        super().close()

    def __enter__(self) -> Reasoner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _check_arguments(program: object, backend: object, store: object, **flags: object) -> None:
    """The constructor's arguments (``bad-argument``): a compiled program, a backend's name,
    a store's URL or an open store, and flags (``watch`` is checked with the program)."""
    arguments.program(program)
    arguments.text("backend", backend, "name a backend, e.g. `backend=\"memory\"`")
    for name, value in flags.items():
        arguments.flag(name, value)
    if store is None or isinstance(store, str):
        return
    from grantlog.store import Store

    arguments.instance("store", store, Store, "a store URL (`\"sqlite:///facts.db\"`) or an "
                       "open store")
