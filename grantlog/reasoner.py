"""``grantlog.Reasoner``: the engine's reasoner, with a store behind it on request."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from grantlog import engine
from grantlog.engine.core import arguments, backends, ir
from grantlog.grammar.diagnostics import GrantlogError, Span, error

if TYPE_CHECKING:
    from grantlog.engine.answer.history import Interval
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
                 until: object = None) -> list[Interval]:
        """The intervals in which ``check(subject, operation, resource)`` held between
        ``since`` and ``until`` (revisions, or times as ``as_of`` takes them; default: the
        whole history the store keeps), each opened and closed by a transaction (its
        revision, time, author, reason, ticket): engine/answer/history.py, docs/history.md."""
        from grantlog.engine.answer import history

        return history.timeline(self, subject, operation, resource, since, until)

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
