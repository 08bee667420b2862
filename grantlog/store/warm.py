"""Measure the planner's statistics of a store's facts right after a bulk load
(``grantlog store load``), and keep them with the store (grantlog/store/planstats.py), so
the first reasoner to open it plans without a pass over the rows; with the big relations'
snapshot (grantlog/store/snapshots.py), so that it reads them in one call."""

from __future__ import annotations

from grantlog.engine.answer.reasoner import Reasoner
from grantlog.engine.core import ir
from grantlog.engine.plan.kept import keep_statistics
from grantlog.grammar.diagnostics import GrantlogError

from . import snapshots
from .base import ANALYZE_AFTER, Store
from .journal import StoreJournal

#: a load adding at least this many facts measures the statistics right away
MEASURE_AFTER = ANALYZE_AFTER


def after_load(store: Store, program: ir.Program, added: int) -> bool:
    """After a bulk load of ``added`` new facts: when it was big, take the big relations'
    snapshot (grantlog/store/snapshots.py: the next open reads them in one call) and
    measure the statistics (:func:`measure`). Whether the statistics were kept."""
    if added < MEASURE_AFTER:
        return False
    snapshots.write(store)
    return measure(store, program)


def measure(store: Store, program: ir.Program) -> bool:
    """Measure the statistics of the store's facts now (after a bulk load): a reasoner opens
    the store, plans the decision's checks, lists and filters (``prepare``) and keeps what
    its plans measured, with the indexes it built. Whether they were kept."""
    journal = StoreJournal(store)
    r = Reasoner(program, journal=journal)
    try:
        r.prepare()
    except GrantlogError:  # no decision relation to plan for: measured when asked
        return False
    return keep_statistics(journal, r.planner.stats, r.database().indexes.keys())
