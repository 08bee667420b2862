"""As-of checks by point reads: ``check(..., at_revision=R)`` without building revision R.

engine/answer/history.py answers a question at a past revision from a reasoner of that
revision, built from every fact that held then: at a million tables that is seconds per
revision. A single check needs a handful of facts: the subject's memberships and roles, the
resource's ancestors, the grants on them. When the journal can read the facts at ``R`` a few
at a time (:class:`~engine.core.journal.PointReader`: grantlog/store/temporal.py reads the
store's temporal table by index), a check at ``R`` is evaluated goal-directed over those
reads instead: the program with every derived relation answered on demand (the hierarchy's
closure walked, recursion tabled: engine/eval/demand.py), whose base relations are views
that look their rows up on first use (:class:`_Rows`, :class:`_Index`) and keep them.

Answers are those of the rebuilt reasoner (the same rules, the same plans' semantics, the
facts at ``R`` under the policy in force then); tests/test_history_pointread.py compares
them at every revision of generated histories. A view of ``R`` is kept with history.py's
reasoners (its LRU), so further checks at ``R`` reuse what it read.

Used for ``check`` (and by engine/answer/timed_proofs.py for explanations), only where the
rebuilt reasoner is not kept already and the journal has a point reader for ``R``; anything
else takes the rebuilt reasoner. Where facts have validity intervals, the view is of the facts
at the check's moment (``now``, default the clock: ``MomentView`` below, their ``@valid`` rows
read by points too).
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from ..core import arguments, ir
from ..core.facts import Facts
from ..core.journal import VALID, PointReader
from ..core.results import Decision
from ..core.times import decode, holds, instant
from ..eval.demand import DemandContext
from ..plan.demand import COARSE_ROWS, Coarse, DemandPlans
from ..plan.kept import statistics
from . import vocabulary
from .decide import Decider

#: where a program keeps its all-on-demand copy (``ir.Program.compiled``)
KEY = "pointread"


def on_demand(program: ir.Program) -> tuple[ir.Program, dict[str, dict[ir.Row, None]],
                                            _Plans]:
    """``program`` with every derived relation answered on demand, its rule files' facts
    per relation, and its plans (ordered by bound columns; the generated code shared by
    every view): made once per program."""
    got = program.compiled.get(KEY)
    if got is None:
        p = dataclasses.replace(program, virtual=frozenset(program.derived), compiled={})
        own: dict[str, dict[ir.Row, None]] = {}
        for rel, rows in Facts.of(program.facts).by_relation().items():
            own.setdefault(rel, {}).update(dict.fromkeys(rows))
        got = program.compiled[KEY] = (p, own, _Plans(p, {}))
    assert isinstance(got, tuple)
    return got


class _Plans(DemandPlans):
    """The on-demand program's plans. A relation the source program keeps materialized (a
    subject's holdings: engine/compile/materialize.py) is few rows per key of one of its
    columns, measured on the live reasoner's rows (:meth:`measure`): a lookup binding that
    column and others is answered from the lookup on it alone, shared by every lookup of
    the same value (a user's roles read once, not a role's holders once per role)."""

    def __init__(self, program: ir.Program, compiled: dict[Any, Any]) -> None:
        super().__init__(program, compiled)
        #: per materialized relation of the source: its rows per key, by column
        self.per_key: dict[str, dict[int, float]] = {}

    def measure(self, source: ir.Program, full: Mapping[str, Any],
                index: Callable[[str, tuple[int, ...]], Any]) -> None:
        for rel in sorted(source.derived - source.virtual):
            rows = full.get(rel)
            if rows and rel not in self.recursive:
                self.per_key[rel] = {c: len(rows) / max(1, len(index(rel, (c,))))
                                     for c in range(source.relations[rel].arity)}

    def coarse(self, rel: str, cols: tuple[int, ...]) -> Coarse | None:
        got = super().coarse(rel, cols)
        per = self.per_key.get(rel)
        if got is None and per and len(cols) >= 2 and self.calls(rel, cols).pos < 0:
            few, c = min((per.get(c, COARSE_ROWS + 1), c) for c in cols)
            if few <= COARSE_ROWS:
                got = self._coarse[(rel, cols)] = Coarse(
                    (c,), (cols.index(c),), tuple((x, i) for i, x in enumerate(cols)
                                                  if x != c))
        return got


class _Index(dict[Any, Any]):
    """A base relation's index on some columns at the revision: a key's rows read on its
    first lookup (a tuple; missing: none)."""

    def __init__(self, view: PastView, rel: str, cols: tuple[int, ...]) -> None:
        super().__init__()
        self.view, self.rel, self.cols = view, rel, cols
        #: per value of the selective column, the rows by this index's key
        self.groups: dict[Any, dict[Any, tuple[ir.Row, ...]]] = {}

    def __missing__(self, k: Any) -> tuple[ir.Row, ...]:
        key = (k,) if len(self.cols) == 1 else tuple(k)
        bound = dict(zip(self.cols, key, strict=True))
        if len(self.cols) == 1:
            got = self[k] = tuple(self.view.read(self.rel, bound))
            return got
        # several columns: the rows of the most selective one's value, read once for every
        # lookup sharing it (a grant's object, asked with each privilege and condition)
        c = self.view.selective(self.rel, self.cols)
        if getattr(self.view.reader, "narrows", False):  # a timeline's reads, shared between
            # its edges: the key's own rows, what this lookup answers (timed_proofs.py)
            got = self[k] = tuple(self.view.read(self.rel, {c: bound[c], **bound}))
            return got
        groups = self.groups.get(bound[c])
        if groups is None:  # that value's rows by this index's key, grouped once
            groups = self.groups[bound[c]] = {}
            one = len(self.cols) == 1
            for r in self.view.index(self.rel, (c,))[bound[c]]:
                g = r[self.cols[0]] if one else tuple(r[i] for i in self.cols)
                groups[g] = (*groups.get(g, ()), r)
        got = self[k] = groups.get(k, ())
        return got

    def get(self, k: Any, default: Any = None) -> Any:
        got = self[k]
        return got if got else default

    def __contains__(self, k: object) -> bool:
        return bool(self[k])

    def keys(self) -> Any:
        """None: the keys are not read (a typo's "did you mean" would read the whole relation
        at the revision; the rule files' constants are still suggested)."""
        return ()


class _Rows(Mapping[ir.Row, int]):
    """A base relation at the revision as a set of rows (row -> level 0): a row's presence
    read by a lookup on all its columns, the whole relation on iteration only."""

    def __init__(self, view: PastView, rel: str) -> None:
        self.view, self.rel = view, rel
        self.arity = view.program.relations[rel].arity

    def __contains__(self, row: object) -> bool:
        if not isinstance(row, tuple) or len(row) != self.arity:
            return False
        if not row:
            return bool(self.view.rows(self.rel))
        return row in self.view.index(self.rel, tuple(range(self.arity))).get(
            row if self.arity > 1 else row[0], ())

    def __getitem__(self, row: ir.Row) -> int:
        if row in self:
            return 0
        raise KeyError(row)

    def __iter__(self) -> Iterator[ir.Row]:
        return iter(self.view.rows(self.rel))

    def __len__(self) -> int:
        return len(self.view.rows(self.rel))

    def __bool__(self) -> bool:  # not read: a base relation is taken as holding facts
        return True


class _Full(dict[str, Any]):
    """``full`` of the view: each relation's :class:`_Rows`, made on first use; a derived
    relation only when facts of it are stored (else it has none: ``get`` gives None)."""

    def __init__(self, view: PastView) -> None:
        super().__init__()
        self.view = view

    def __missing__(self, rel: str) -> _Rows:
        got = self[rel] = _Rows(self.view, rel)
        return got

    def get(self, rel: str, default: Any = None) -> Any:
        if rel not in self.view.program.relations:
            return default
        if rel in self.view.program.virtual and not self.view.any(rel):
            return default
        return self[rel]


def selective(source: ir.Program, plans: DemandPlans, rel: str, cols: tuple[int, ...]) -> int:
    """Among ``cols``, the column of ``rel`` with the most distinct values (by the plans'
    statistics; the first without them): the one a point read looks up by."""
    stats = plans.stats
    if stats is None or rel not in source.relations:
        return cols[0]
    return max(cols, key=lambda c: (stats.distinct(rel, c), -c))


def planned(r: Any, program: ir.Program) -> tuple[ir.Program, dict[str, dict[ir.Row, None]],
                                                  _Plans]:
    """:func:`on_demand` of ``program``, its plans ordered by the statistics of ``r`` (the
    live reasoner's facts: planned once per program)."""
    got = on_demand(program)
    p, _, plans = got
    if plans.stats is None:
        db = r._database()
        plans.use(statistics(p, db.full, db.index, r._kept))
        plans.measure(r.program, db.full, db.index)
    return got


class PastView:
    """The facts at one revision, read through a :class:`PointReader` as checks need them,
    and a context to evaluate checks over them."""

    def __init__(self, program: ir.Program, reader: PointReader) -> None:
        self.source = program
        self.program, self.own, self.plans = on_demand(program)
        self.reader = reader
        self.revision = reader.revision
        self._ix: dict[tuple[str, tuple[int, ...]], _Index] = {}
        self.scanned: dict[str, list[ir.Row]] = {}
        self._any: dict[str, bool] = {}
        self._selective: dict[tuple[str, tuple[int, ...]], int] = {}
        self.full = _Full(self)
        self.decider = Decider(self.program, self.plans, {})
        self.decider.at(self.revision)
        self.memo: dict[Any, Any] = {}
        self.lock = threading.Lock()

    def fits(self, now: object) -> bool:
        """Whether a check at ``now`` may be answered by this view (one of the facts at a
        moment answers that moment only: ``MomentView`` below)."""
        return True

    def read(self, rel: str, bound: Mapping[int, ir.Value]) -> list[ir.Row]:
        """The rows of ``rel`` at the revision matching ``bound`` (the rule files' own too)."""
        if rel in self.scanned:
            rows = self.scanned[rel]
            return [r for r in rows if all(r[i] == v for i, v in bound.items())]
        got = list(self.reader.rows(rel, bound)) if rel in self.source.relations else []
        own = self.own.get(rel)
        if own:
            seen = set(got)
            got += [r for r in own if r not in seen
                    and all(r[i] == v for i, v in bound.items())]
        return got

    def selective(self, rel: str, cols: tuple[int, ...]) -> int:
        """Among ``cols``, the column of ``rel`` with the most distinct values (by the
        plans' statistics; the first without them)."""
        got = self._selective.get((rel, cols))
        if got is None:
            got = self._selective[(rel, cols)] = selective(self.source, self.plans, rel, cols)
        return got

    def rows(self, rel: str) -> list[ir.Row]:
        got = self.scanned.get(rel)
        if got is None:
            got = self.scanned[rel] = self.read(rel, {})
        return got

    def any(self, rel: str) -> bool:
        got = self._any.get(rel)
        if got is None:
            got = self._any[rel] = bool(self.own.get(rel)) or bool(self.rows(rel))
        return got

    def index(self, rel: str, cols: tuple[int, ...]) -> _Index:
        k = (rel, cols)
        got = self._ix.get(k)
        if got is None:
            got = self._ix[k] = _Index(self, rel, cols)
        return got

    def check(self, rel: str, row: ir.Row, strict: bool = False) -> Decision:
        """Is ``rel(row)`` (the decision relation) true at the revision, with its reasons."""
        with self.lock:
            ctx = DemandContext(self.program, self.plans, self.full, self.index, self.memo)
            d = self.decider.decide(ctx, rel, row)
            return d if d else vocabulary.decided(self.program, ctx, rel, row, d, strict)


def usable(program: ir.Program, reader: PointReader) -> bool:
    """Whether checks at the reader's revision can be read by points: no fact there has a
    validity interval (those are decided at a moment by the reasoner's clock): one row of
    them read, where the reader can stop there (``first``)."""
    if program.validity:
        return False
    first = getattr(reader, "first", None)
    if first is not None:
        some, every = first(VALID, {}, 1)
        if some or every:  # (none: unless the log after the checkpoint removed the one read)
            return not some
    return not any(True for _ in reader.rows(VALID, {}))


_NAMES = ("subject", "operation", "resource", "at_least", "strict")


def check(r: Any, revision: int, program: ir.Program, args: tuple[Any, ...],
          kwargs: Mapping[str, Any], view: PastView | None) -> tuple[Decision | None,
                                                                     PastView | None]:
    """``r.check(*args, **kwargs)`` at ``revision`` under ``program`` by point reads, in
    ``view`` (None: a new one, when the journal can): (the decision, the view), or (None,
    None) when this path does not answer (history.py asks the rebuilt reasoner). Where
    facts have validity intervals, the view is of the facts at ``now`` (default: the
    clock), kept for that moment only."""
    given = dict(zip(_NAMES, args, strict=False))
    if len(args) > len(_NAMES) or set(kwargs) - {*_NAMES, "now"} \
            or any(k in given for k in kwargs):
        return None, None
    given.update(kwargs)
    if not {"subject", "operation", "resource"} <= set(given):
        return None, None
    now = given.get("now")
    if view is not None and not view.fits(None if now is None else instant(now, "now")):
        view = None  # (kept for another moment)
    if view is None:
        make = getattr(r.journal, "point_reader", None)
        reader = None if make is None else make(revision)
        if reader is None:
            return None, None
        planned(r, program)  # planned once, by the live reasoner's statistics
        if usable(program, reader):
            view = PastView(program, reader)
        else:  # validity intervals: the facts at the moment (MomentView)
            view = moment_view(program, reader, now)
            if view is None:
                return None, None
    rel = view.program.decision
    if rel not in view.program.relations or view.program.relations[rel].arity != 3:
        return None, None  # the rebuilt reasoner's error
    row = (given["subject"], given["operation"], given["resource"])
    arguments.question(arguments.DECIDED, row)
    return view.check(rel, row, bool(given.get("strict"))), view


# -- as-of checks by point reads at a moment, where facts have validity intervals -----------


class MomentView(PastView):
    """The facts at one revision as they stood at the moment ``now``, read by points
    (engine/answer/pointread.py): a relation's stored facts, its facts stored with a
    validity interval holding at ``now`` (their ``@valid`` rows read by the fact's values:
    grantlog/store/temporal.py ``PastFacts.timed``) and the rule files' (those with an
    interval, when it holds). An as-of check where facts have intervals is then read by
    points as one without (the rebuilt reasoner of the revision at that moment answers the
    same: tests/test_history_validity_property.py)."""

    def __init__(self, program: ir.Program, reader: Any, now: float) -> None:
        super().__init__(program, reader)
        self.now = now
        #: the ``@valid`` rows at the revision of a relation's facts matching a binding
        self.valid: Callable[[str, Mapping[int, ir.Value]], list[ir.Row]] = reader.timed

    def fits(self, now: object) -> bool:
        return now == self.now

    def read(self, rel: str, bound: Mapping[int, ir.Value]) -> list[ir.Row]:
        if rel in self.scanned:
            return super().read(rel, bound)
        stored = rel in self.source.relations
        got = list(self.reader.rows(rel, bound)) if stored else []
        seen = set(got)
        ivs = self.source.validity.get(rel) or {}
        found = [row for row in self.own.get(rel, ()) if row not in seen
                 and (row not in ivs or holds(ivs[row], self.now))]
        if stored:
            for vrow in self.valid(rel, bound):
                _, fact, iv = decode(vrow)
                if holds(iv, self.now):
                    found.append(fact)
        for row in found:
            if row not in seen and all(row[i] == v for i, v in bound.items()):
                seen.add(row)
                got.append(row)
        return got


def moment_view(program: ir.Program, reader: Any, now: object) -> MomentView | None:
    """A :class:`MomentView` of the reader's revision at ``now`` (None: the wall clock);
    None where the reader cannot read validity intervals by points."""
    if getattr(reader, "timed", None) is None:
        return None
    return MomentView(program, reader, instant(time.time() if now is None else now, "now"))
