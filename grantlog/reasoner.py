"""``grantlog.Reasoner``: the engine's reasoner, with a store behind it on request."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from grantlog import engine
from grantlog.engine.core import ir
from grantlog.engine.core.results import Delta
from grantlog.grammar.diagnostics import GrantlogError, Span, error

if TYPE_CHECKING:
    from grantlog.store import Store


class Reasoner(engine.Reasoner):
    """Answers questions about a compiled program over base facts that change at run time.

    ``store="sqlite:///facts.db"`` (or ``postgresql://...``, or an open store) keeps the base
    facts durable: every transaction is written to the store before it becomes visible, and
    transactions of other processes on the same store are followed from its change log
    (``follow=False`` follows only on demand: :meth:`sync`, ``at_least=``). See
    grantlog/store/reasoner.py. ``verify=True`` checks the store against its change log
    first and refuses a corrupt one (``store-corrupt``; grantlog/store/verify.py).
    """

    def __new__(cls, program: ir.Program, watch: Iterable[str] | str = (),
                backend: str = "memory", store: str | Store | None = None,
                follow: bool = True, verify: bool = False) -> Any:
        if store is None:
            return engine.Reasoner.__new__(cls, program, watch, backend)
        if backend != "memory":
            raise GrantlogError([error(
                "unsupported-feature", f"the `{backend}` backend does not read a store",
                Span("<api>", 0, 0, 0, 0), "use the default in-memory backend with `store=`")])
        from grantlog.store.reasoner import StoredReasoner

        return engine.Reasoner.__new__(StoredReasoner, program, watch)

    def __init__(self, program: ir.Program, watch: Iterable[str] | str = (),
                 backend: str = "memory", store: str | Store | None = None,
                 follow: bool = True, verify: bool = False) -> None:
        super().__init__(program, watch, backend)
        #: called with the ``Changes`` of every transaction this reasoner applies — its own
        #: and, with a store, other processes' (under the reasoner's lock: keep them short)
        self.listeners: list[Callable[[engine.Changes], None]] = []

    def _apply(self, ins: Delta, dels: Delta, watch: frozenset[str],
               revision: int) -> engine.Changes:
        changes = super()._apply(ins, dels, watch, revision)
        for fn in self.listeners:
            fn(changes)
        return changes

    def load(self, paths: Iterable[str], relation: str | None = None,
             watch: Iterable[str] | str = ()) -> engine.Changes:
        """Insert the facts of data files (`.gl`, CSV, JSON Lines, Parquet, or directories of
        them; see grantlog/store/ingest.py) as one transaction; returns its changes."""
        from grantlog.store import ingest

        data = ingest.read(paths, self.program, relation)
        with self.transaction(watch) as tx:
            for rel, rows in data.items():
                tx.insert(rel, rows)
        return tx.changes

    def close(self) -> None:
        """Release what the reasoner holds (a store's connections and follower)."""

    def __enter__(self) -> Reasoner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
