"""Proofs at a past revision by point reads: the why and the why-not of a goal at revision R
without rebuilding R.

``explain(goal, at_revision=R)`` asks a reasoner of R, rebuilt from every fact that held then
(engine/answer/history.py): seconds per revision at a million tables, and a timeline with
proofs (engine/answer/timelines.py ``prove``) asks one at each edge. Here the explanation is
made goal-directed over the point-read view of R instead (engine/answer/pointread.py
:class:`~.pointread.PastView`: the facts at R read by the temporal table's indexes as the
proof and the why-not tree reach them), with the same prover and why-not search as the
rebuilt reasoner (engine/answer/explain/), so the explanation is the same, node for node:

* a fact is a ``fact`` leaf where the rebuilt reasoner's would be: a stored row of a base
  relation, or a stored (or rule-file) row of a derived one, its origin the rule files' place
  of it or "inserted at run time";
* the rebuilt reasoner picks, among a materialized row's derivations, the one whose highest
  body row was derived in the earliest evaluation round (engine/eval/database.py's levels).
  Those rounds are not stored; they are recomputed for the rows a proof reaches
  (:class:`_Levels`). Bottom-up evaluation (engine/eval/seminaive.py) runs the materialized
  strata in order, each taking rounds above the previous ones, so a level is ordered as
  (the stratum's position, the round inside it): a non-recursive stratum derives its rows in
  one round; in a recursive one, a row's round is the least height of its derivations — 1
  for an exit rule's, else one more than the highest round of its body rows of the same
  stratum (a stored row of it counts 1: it enters the first delta) — found by iterative
  deepening over the on-demand answers. Rows given as facts are level 0, as there.

Everything else (the goal's answers, the rule instances, the why-not's rows) is read from the
on-demand evaluation of the view, whose answers are those of the rebuilt reasoner
(tests/test_history_pointread.py); the prover and the why-not search take the smallest
binding among equals, never the order rows come in. tests/test_history_timeline_proofs.py
compares the explanations with the rebuilt reasoner's on generated histories.

Where point reads do not apply (:func:`explain` gives None: the journal has no point reader
for R, facts have validity intervals, a stratum mixes materialized and on-demand relations),
the rebuilt reasoner answers (:func:`explain_at`).
"""

from __future__ import annotations

import threading
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from ..core import arguments, ir
from ..core.facts import Facts, RowSpans
from ..core.journal import VALID
from ..eval.demand import DemandContext
from ..eval.derivation import Derivations
from ..plan.codegen import key_binding
from . import history, pointread
from .explain import Explanation, Limits, Prover, explain_goal
from .explain.atoms import ground
from .query import Goals
from .reasoner import INSERTED

Reasoner = Any
Key = tuple[ir.Value, ...]
#: where a program keeps what its proofs by point reads need (``ir.Program.compiled``)
KEY = "timed_proofs"
#: the levels of one materialized stratum above the previous one's (its rounds stay below)
STRIDE = 1 << 32


class _Shape:
    """What proofs by point reads need of a program, made once: its compiled goals, where
    its rule files' facts are, and each materialized relation's stratum (its position among
    the materialized strata, and its relations when the stratum is recursive)."""

    def __init__(self, program: ir.Program) -> None:
        self.goals = Goals(program)
        self.facts = Facts.of(program.facts)
        self.spans: dict[str, RowSpans] = {}
        self.stratum: dict[str, tuple[int, frozenset[str] | None]] = {}
        #: a stratum with materialized and on-demand relations (not taken: None answers)
        self.mixed = False
        position = 0
        for st in program.strata:
            kept = [rel for rel in st.relations if rel not in program.virtual]
            if not kept:
                continue
            self.mixed = self.mixed or len(kept) != len(st.relations)
            position += 1  # as engine/eval/seminaive.py compile_strata orders them
            for rel in st.relations:
                self.stratum[rel] = (position, frozenset(st.relations) if st.recursive
                                     else None)

    def origin_of(self, rel: str, row: ir.Row) -> str:
        spans = self.spans.get(rel)
        if spans is None:
            spans = self.spans[rel] = self.facts.spans(rel)
        got = spans.get(row)
        return INSERTED if got is None else str(got)


def _shape(program: ir.Program) -> _Shape:
    got = program.compiled.get(KEY)
    if not isinstance(got, _Shape):
        got = program.compiled[KEY] = _Shape(program)
    return got


class _Proofs:
    """One explanation's reads of a view: which rows are facts, and the levels."""

    def __init__(self, program: ir.Program, shape: _Shape, view: pointread.PastView,
                 ctx: DemandContext) -> None:
        self.program, self.shape, self.view, self.ctx = program, shape, view, ctx
        self.derived = program.derived
        self.levels = _Levels(self)
        self.prover = Prover(program, self.levels, ctx, self.origin)
        #: per row of a recursive materialized stratum: a height it has a derivation
        #: within, and the greatest height it has none within
        self.upper: dict[tuple[str, ir.Row], int] = {}
        self.fails: dict[tuple[str, ir.Row], int] = {}

    def stored(self, rel: str, row: ir.Row) -> bool:
        """Whether ``rel(row)`` is a fact at the revision (stored, or in the rule files)."""
        v = self.view
        if rel in self.derived and not v.any(rel):
            return False
        return row in v.full[rel]

    def origin(self, rel: str, row: ir.Row) -> str | None:
        return self.shape.origin_of(rel, row) if self.stored(rel, row) else None

    def level(self, rel: str, row: ir.Row) -> int | None:
        """The round the rebuilt reasoner derives ``rel(row)`` in, as an order (None: not
        a row of ``rel`` at the revision)."""
        if rel not in self.derived:
            return 0 if row in self.view.full[rel] else None
        if self.stored(rel, row):
            return 0
        if row not in self.ctx.F[rel]:
            return None
        position, same = self.shape.stratum[rel]
        return position * STRIDE + (1 if same is None else self.height(rel, row, same))

    def height(self, rel: str, row: ir.Row, same: frozenset[str]) -> int:
        """The round of a row of a recursive stratum: its least derivation height."""
        k = self.fails.get((rel, row), 0) + 1
        while not self.within(rel, row, k, same):
            k += 1
        return k

    def within(self, rel: str, row: ir.Row, k: int, same: frozenset[str]) -> bool:
        """Whether ``rel(row)`` has a derivation at most ``k`` rounds high."""
        if k <= 0:
            return False
        key = (rel, row)
        up = self.upper.get(key)
        if up is not None and up <= k:
            return True
        if self.fails.get(key, 0) >= k:
            return False
        d = self.prover.derivations
        for rule, binding in d.heads(rel, row):
            rec = [a for a in rule.body if isinstance(a, ir.Atom) and a.rel in same]
            for env in d.instances(rule, binding, self.ctx.F, self.ctx.index):
                # an exit rule's row: the first round; else one above its body's rows
                if all((k >= 2 and self.stored(a.rel, g)) or self.within(a.rel, g, k - 1, same)
                       for a in rec for g in (ground(a, env),)):
                    self.upper[key] = k
                    return True
        self.fails[key] = k
        return False


class _Level(Mapping[ir.Row, int]):
    """One relation's levels (``full[rel]`` of the rebuilt reasoner), computed per row."""

    def __init__(self, proofs: _Proofs, rel: str) -> None:
        self.proofs, self.rel = proofs, rel
        self.memo: dict[ir.Row, int | None] = {}

    def __getitem__(self, row: ir.Row) -> int:
        got = self.memo.get(row, -1)
        if got == -1:
            got = self.memo[row] = self.proofs.level(self.rel, row)
        if got is None:
            raise KeyError(row)
        return got

    def __iter__(self) -> Iterator[ir.Row]:  # not read by proofs: the rows are not listed
        return iter(())

    def __len__(self) -> int:
        return 0


class _Levels(Mapping[str, _Level]):
    def __init__(self, proofs: _Proofs) -> None:
        self.proofs = proofs
        self.by: dict[str, _Level] = {}

    def __getitem__(self, rel: str) -> _Level:
        got = self.by.get(rel)
        if got is None:
            if rel not in self.proofs.program.relations:
                raise KeyError(rel)
            got = self.by[rel] = _Level(self.proofs, rel)
        return got

    def __iter__(self) -> Iterator[str]:
        return iter(self.proofs.program.relations)

    def __len__(self) -> int:
        return len(self.proofs.program.relations)


class _Context(DemandContext):
    """The view's reads for one explanation. A lookup of a derived relation on some of its
    columns is listed in full only when its rows are iterated or counted; whether it has
    any (the why-not search asks before it chooses a binding, and of a negated literal with
    anonymous variables) is answered by the first derivation found: the rebuilt reasoner
    reads that from its materialization, here a full answer would read every version's
    facts it reaches (every grant of one privilege, an entity each)."""

    derivations: Derivations | None = None
    past: pointread.PastView | None = None

    def lookup(self, rel: str, cols: tuple[int, ...], key: Key) -> Mapping[ir.Row, Any]:
        if rel in self.virtual and 0 < len(cols) < self.arity[rel] \
                and self.derivations is not None:
            got = self.lookup_of(rel, cols).table.get(key)
            return _Some(self, rel, cols, key) if got is None else got
        return super().lookup(rel, cols, key)

    def exists(self, rel: str, cols: tuple[int, ...], key: Key) -> bool:
        """Whether ``rel`` has a row whose ``cols`` are ``key``: a stored one, or the first
        rule instance deriving one."""
        d, past = self.derivations, self.past
        assert d is not None and past is not None
        if past.any(rel) and past.index(rel, cols)[key[0] if len(key) == 1 else key]:
            return True
        for rule in d.rules.get(rel, ()):
            env = key_binding(tuple(rule.head.args[c] for c in cols), key)
            if env is None:
                continue
            if next(iter(d.instances(rule, env, self.F, self._first)), None) is not None:
                return True
        return False

    def _first(self, rel: str, cols: tuple[int, ...]) -> Any:
        """``index`` for :meth:`exists`: a stored relation's rows read a page at a time."""
        past = self.past
        assert past is not None
        if rel in self.virtual or rel in past.own or rel in past.scanned \
                or not hasattr(past.reader, "first"):
            return self.index(rel, cols)
        return _Pages(past, rel, cols)


class _Some(Mapping[ir.Row, int]):
    """A lookup's rows, evaluated when listed; ``bool`` asks :meth:`_Context.exists`."""

    def __init__(self, ctx: _Context, rel: str, cols: tuple[int, ...], key: Key) -> None:
        self.ctx, self.rel, self.cols, self.key = ctx, rel, cols, key
        self._rows: dict[ir.Row, int] | None = None

    def rows(self) -> dict[ir.Row, int]:
        if self._rows is None:
            self._rows = self.ctx.demand(self.rel, self.cols, self.key)
        return self._rows

    def __bool__(self) -> bool:
        if self._rows is None:
            return self.ctx.exists(self.rel, self.cols, self.key)
        return bool(self._rows)

    def __getitem__(self, row: ir.Row) -> int:
        return self.rows()[row]

    def __iter__(self) -> Iterator[ir.Row]:
        return iter(self.rows())

    def __len__(self) -> int:
        return len(self.rows())

    def keys(self) -> Any:  # itself: ``bool`` of a keys view would count the rows
        return self


class _Pages:
    """A stored relation's index on ``cols`` whose keys' rows are read a page at a time as
    they are taken (a point reader's ``first``), the rest read in full (and kept) only when
    the first page is taken and more are wanted."""

    PAGE = 32

    def __init__(self, past: pointread.PastView, rel: str, cols: tuple[int, ...]) -> None:
        self.past, self.rel, self.cols = past, rel, cols

    def get(self, k: Any, default: Any = ()) -> Iterator[ir.Row]:
        index = self.past.index(self.rel, self.cols)
        got = dict.get(index, k)  # read already
        if got is not None:
            return iter(got)
        return self._rows(index, k)

    def _rows(self, index: Any, k: Any) -> Iterator[ir.Row]:
        key = (k,) if len(self.cols) == 1 else tuple(k)
        c = self.past.selective(self.rel, self.cols)
        bound = {c: key[self.cols.index(c)]}  # the most selective column first
        bound.update(zip(self.cols, key, strict=True))
        page, complete = self.past.reader.first(self.rel, bound, self.PAGE)  # type: ignore
        yield from page
        if not complete:
            seen = set(page)
            yield from (row for row in index[k] if row not in seen)


# -- a timeline's explanations: reads shared between its edges ---------------------------------

#: a read of one edge's view: a point read (relation, bound columns and values) or a page
#: read (the same and its limit), with what it answered (the rows; a page's completeness)
_Read = tuple[str, tuple[tuple[int, ir.Value], ...], int | None]
#: the most recent explanations of a goal a new edge is compared with before it is explained
CANDIDATES = 16
#: the fewest edges whose explanations share their reads (timelines.py ``prove``): the
#: versions of a wide read over a long stretch (a role's grants over the whole history)
#: cost more than a few point reads of it (at 1M tables: a typical pair's 2-16 edges)
SHARED_FROM = 32


class Shared:
    """The reads of a timeline's explanations (engine/answer/timelines.py ``prove``: the why
    at each interval's start, the why-not at its end), shared between its edges.

    * A point read of a relation at an edge's revision is answered from every version of the
      facts it matches over the edges' revisions ``[first, last]`` (the journal's timed reader:
      the temporal table's rows with the revisions each was present in), read once for all
      the edges: the rows present at the revision. A page read (whether some fact matches:
      :class:`_Pages`) is too once those versions are read, else by the edge's own point
      reader.
    * An explanation is a function of the program, the goal and what its reads answered (the
      prover and the why-not search take the smallest binding among equals, never the order
      rows come in). Each explanation keeps the reads its view made (:class:`_SharedAt`);
      an edge whose every such read answers the same at its revision — the point reads from
      the versions, the page reads read again — has that explanation, as it is, without a
      view of its own. A relation that changed between the two revisions in a row the
      explanation read answers differently there, and the edge is explained afresh.
    """

    def __init__(self, reader: Any, first: int, last: int) -> None:
        self.reader, self.first, self.last = reader, first, last
        self._versions: dict[tuple[str, tuple[tuple[int, ir.Value], ...]], _Versions] = {}
        self._programs: dict[int, ir.Program] = {}
        #: per (program, goal, why or why-not): the explanations made, each with its reads
        self.done: dict[tuple[int, str, bool], list[tuple[dict[_Read, Any],
                                                          Explanation]]] = {}
        #: explanations made afresh, and taken from another edge (the benchmark prints them)
        self.made = self.reused = 0

    def program(self, r: Reasoner, revision: int) -> ir.Program:
        """:func:`_program`, asked once per revision."""
        got = self._programs.get(revision)
        if got is None:
            got = self._programs[revision] = _program(r, revision)
        return got

    def versions(self, rel: str, bound: Mapping[int, ir.Value]) -> _Versions:
        """The facts of ``rel`` matching ``bound`` at some revision of ``[first, last]``,
        each with its intervals there: read once, by the first column of ``bound`` (the
        most selective), the others' values selected among those versions."""
        k = (rel, tuple(bound.items()))
        got = self._versions.get(k)
        if got is None:
            if len(bound) > 1:
                c, v = k[1][0]
                rows = {row: spans for row, spans in self.versions(rel, {c: v}).rows.items()
                        if all(i < len(row) and row[i] == x for i, x in k[1])}
            else:
                rows = dict(self.reader.rows(rel, bound, self.first, self.last))
            got = self._versions[k] = _Versions(rows)
        return got

    def has(self, rel: str, bound: Mapping[int, ir.Value]) -> bool:
        return (rel, tuple(bound.items())) in self._versions

    def at(self, point: Any) -> _SharedAt:
        """``point`` (a point reader of one of the edges' revisions) reading through this."""
        return _SharedAt(self, point)

    def explain(self, r: Reasoner, revision: int, goal: str,
                holds: bool) -> Explanation | None:
        """``goal`` explained at ``revision`` (``holds``: expected to hold there, a why; else
        a why-not): an earlier edge's explanation whose reads all answer the same at
        ``revision``, else :func:`explain` through this (None where it does not apply)."""
        program = self.program(r, revision)
        k = (id(program), goal, holds)
        made: list[tuple[dict[_Read, Any], Explanation]] = self.done.setdefault(k, [])
        point: list[Any] = []  # the revision's own point reader, made for a page read
        for reads, ex in reversed(made[-CANDIDATES:]):
            if self._same(r, reads, revision, point):
                self.reused += 1
                return ex  # type: ignore[no-any-return]
        got = view(r, revision, self)
        if got is None:
            return None
        got_ex = explain(r, revision, goal, None, self)
        v = got[1]
        if got_ex is not None and isinstance(v.reader, _SharedAt) and v.reader.shared is self:
            self.made += 1
            with v.lock:  # (another thread's check may read through the kept view)
                made.append((dict(v.reader.log), got_ex))
        return got_ex

    def _same(self, r: Reasoner, reads: dict[_Read, Any], revision: int,
              point: list[Any]) -> bool:
        """Whether every read in ``reads`` answers the same at ``revision``: the point reads
        first (from the versions), the page reads (read again) only if they all do."""
        pages = []
        for k, (v, was) in reads.items():
            if v is None:
                pages.append((k, was))
            elif v.at(revision) != was:  # a point read: its answer's number at the revision
                return False
        for (rel, bound, limit), was in pages:
            b = dict(bound)
            if not point:
                make = getattr(r.journal, "point_reader", None)
                point.append(None if make is None else make(revision))
            if point[0] is None:
                return False
            page, complete = point[0].first(rel, b, limit)
            if (frozenset(page), complete) != was:
                return False
        return True


class _Versions:
    """The versions of the facts one read matches, each with its intervals, answered per
    revision: the revisions where some fact came or went cut them into stretches, each with
    one answer, numbered once per distinct answer (two revisions whose numbers are equal
    have the same rows). A stretch's rows are those of the last one computed with the facts
    that came and went at the cuts between them (edges are asked mostly in order)."""

    def __init__(self, rows: Mapping[ir.Row, Sequence[tuple[int, int]]]) -> None:
        self.rows = rows
        came: dict[int, list[ir.Row]] = {}
        went: dict[int, list[ir.Row]] = {}
        for row, spans in rows.items():
            for lo, hi in spans:
                came.setdefault(lo, []).append(row)
                went.setdefault(hi, []).append(row)
        #: where the answer may change: every interval's ends, sorted
        self.cuts = sorted(came.keys() | went.keys())
        self._came = [came.get(c, ()) for c in self.cuts]
        self._went = [went.get(c, ()) for c in self.cuts]
        self._stretch: dict[int, int] = {}  # stretch -> its answer's number
        self._numbers: dict[frozenset[ir.Row], int] = {}
        self.answers: list[frozenset[ir.Row]] = []
        self._s = 0  # the stretch :attr:`_rows` is of (0: before the first cut, none)
        self._rows: set[ir.Row] = set()
        #: a kept view reading through this may answer another thread's check meanwhile
        self._lock = threading.Lock()

    def at(self, revision: int) -> int:
        """The number of the answer at ``revision`` (:attr:`answers` holds its rows)."""
        s = bisect_right(self.cuts, revision)
        got = self._stretch.get(s)
        if got is not None:
            return got
        with self._lock:
            rows = self._rows
            while self._s < s:  # forward over cut ``_s``: what ended there goes, what began
                # there comes
                rows.difference_update(self._went[self._s])
                rows.update(self._came[self._s])
                self._s += 1
            while self._s > s:  # back over cut ``_s - 1``
                self._s -= 1
                rows.difference_update(self._came[self._s])
                rows.update(self._went[self._s])
            key = frozenset(rows)
            got = self._numbers.get(key)
            if got is None:
                got = self._numbers[key] = len(self.answers)
                self.answers.append(key)
            self._stretch[s] = got
        return got


class _SharedAt:
    """A point reader of one revision reading through a :class:`Shared`, keeping each read
    and its answer (``log``). A lookup on several columns is read with all of them bound
    (``narrows``: engine/answer/pointread.py ``_Index``), so that what is kept is what the
    explanation was answered (a grant's object asked for one privilege: that privilege's
    grants, not every grant on the object)."""

    narrows = True

    def __init__(self, shared: Shared, point: Any) -> None:
        self.shared, self.point = shared, point
        self.revision: int = point.revision
        self.log: dict[_Read, Any] = {}

    def rows(self, rel: str, bound: Mapping[int, ir.Value]) -> list[ir.Row]:
        v = self.shared.versions(rel, bound)
        n = v.at(self.revision)
        self.log[(rel, tuple(bound.items()), None)] = (v, n)
        return list(v.answers[n])

    def first(self, rel: str, bound: Mapping[int, ir.Value],
              limit: int | None = None) -> tuple[list[ir.Row], bool]:
        if limit is None or rel == VALID or self.shared.has(rel, bound):
            # (whether any fact has a validity interval: every such row over the edges read
            # once, none in most stores; pointread.py ``usable``)
            return self.rows(rel, bound), True
        page, complete = self.point.first(rel, bound, limit)
        self.log[(rel, tuple(bound.items()), limit)] = (None, (frozenset(page), complete))
        return page, complete


def shared(r: Reasoner, revisions: Iterable[int]) -> Shared | None:
    """The reads of explanations at ``revisions`` shared (:class:`Shared`), or None where
    the journal has no timed reader (no temporal table)."""
    revs = sorted(set(revisions))
    make = getattr(r.journal, "timed_reader", None)
    reader = None if make is None or not revs else make()
    return None if reader is None else Shared(reader, revs[0], revs[-1])


def view(r: Reasoner, revision: int, shared: Shared | None = None,
         ) -> tuple[ir.Program, pointread.PastView] | None:
    """The program in force at ``revision`` and the point-read view of it (kept with the
    views of as-of checks: engine/answer/history.py), or None where point reads do not
    apply there (no point reader for it, facts with validity intervals). ``shared``: a new
    view reads through it (:class:`Shared`)."""
    journal = r.journal
    if journal is None:
        return None
    program = _program(r, revision) if shared is None else shared.program(r, revision)
    key = ("points", revision, program.digest)
    got = history._kept.get(r, key)
    if got is None or not got.fits(None):  # (not a check's view at a moment: validity.py)
        make = getattr(journal, "point_reader", None)
        reader = None if make is None else make(revision)
        if reader is not None and shared is not None:
            reader = shared.at(reader)
        if reader is None or not pointread.usable(program, reader):
            return None
        pointread.planned(r, program)  # planned once, by the live reasoner's statistics
        got = pointread.PastView(program, reader)
        history._kept.put(r, key, got)
    assert isinstance(got, pointread.PastView)
    return program, got


def _program(r: Reasoner, revision: int) -> ir.Program:
    """The program in force at ``revision`` (the reasoner's own when it is the same)."""
    program: ir.Program = r.journal.policy_at(revision) or r.program
    return r.program if program.digest == r.program.digest else program


def explain(r: Reasoner, revision: int, goal: str, limits: Limits | None = None,
            shared: Shared | None = None) -> Explanation | None:
    """``r.explain(goal, limits, at_revision=revision)`` by point reads (see the module
    docstring); None where they do not apply (:func:`explain_at` asks the rebuilt
    reasoner then). ``shared``: the reads of a timeline's other edges (:class:`Shared`)."""
    got = view(r, revision, shared)
    if got is None:
        return None
    program, v = got
    shape = _shape(program)
    if shape.mixed:
        return None
    g = shape.goals[arguments.goal(goal, limits=(limits, Limits))]
    with v.lock:
        ctx = _Context(v.program, v.plans, v.full, v.index, v.memo)
        proofs = _Proofs(program, shape, v, ctx)
        ctx.derivations, ctx.past = proofs.prover.derivations, v
        try:
            return explain_goal(goal, g.rule, g.names, ctx, proofs.prover, limits)
        except RecursionError:
            return None  # the rebuilt reasoner's answer (or its diagnostic)


def explain_at(r: Reasoner, revision: int, goal: str,
               limits: Limits | None = None) -> Explanation:
    """The explanation of ``goal`` at ``revision``: by point reads where they apply, else
    from the rebuilt reasoner of that revision, or the one it keeps already."""
    kept = history.kept(r, revision)
    got = None if kept is not None else explain(r, revision, goal, limits)
    if got is not None:
        return got
    return history.past(r, revision, None).explain(goal, limits)  # type: ignore[no-any-return]


__all__ = ["Shared", "explain", "explain_at", "shared", "view"]
