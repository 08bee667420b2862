"""The planner's statistics kept with the facts (issue 26, item 5: cold start).

:class:`~engine.plan.stats.Statistics` measures what its estimates read of the rows once per
load: a sample per big relation, distinct counts, bucket sizes, the rows holding a rare
constant, the walks of a closure. At a million tables that is about half a second of passes
over the rows on the first check after a store is opened. A store keeps what was measured
(grantlog/store/base.py, ``grantlog_statistics``) and gives it back on open, so the first plan
needs no pass over the rows:

* :func:`export` turns what a :class:`Statistics` measured into JSON-able data, with the size
  of each relation it was measured on;
* :func:`statistics` makes a :class:`Statistics` whose memos are filled from such data
  (:func:`take`), for the relations whose size still fits the measured one within a factor of
  two (as the reasoner re-plans); what the data does not hold is measured on the rows, as
  without it;
* :func:`kept_statistics` / :func:`keep_statistics` read and write them through a journal
  that keeps them (:class:`Keeper`; the reasoner keeps them when it closes, if it measured
  anything new and a relation holds :data:`PREWARM` rows or more: small facts are measured in
  milliseconds, and a reader of them should not write).

The data is a cost model only: a plan read from wrong statistics is slower, never wrong (every
entry is checked for shape, arity and columns before it is taken; a malformed one is skipped).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any, Protocol, runtime_checkable

from grantlog.grammar.diagnostics import GrantlogError

from ..core import ir
from .stats import Statistics

#: the layout of :func:`export` (data of another layout is not taken)
VERSION = 1
#: rows a relation may gain or lose beyond the factor of two before its kept estimates are
#: measured again (the reasoner's re-planning slack)
SLACK = 1000
#: relations of at least this many rows have their indexes built again (:func:`prewarm`)
PREWARM = 10_000
_KINDS = ("distinct", "weighted", "matching", "edges", "reach", "indexes")


def statistics(program: ir.Program, full: Mapping[str, Any],
               index: Callable[[str, tuple[int, ...]], Any] | None = None,
               kept: Mapping[str, Any] | None = None) -> Statistics:
    """:class:`Statistics` of the rows ``full``, its memos filled from ``kept`` where it
    fits (:func:`take`), and the big indexes the last reasoner on these facts read built
    now with the database's ``index`` (as PostgreSQL's autoprewarm reloads the pages the
    last server used): the plans' walks, the listings' and the filters', built once, here,
    rather than by whichever question needs them first."""
    stats = Statistics(program, full, index)
    if isinstance(kept, Mapping) and kept:
        take(stats, kept)
        if index is not None:
            stats.prewarmed = frozenset(prewarm(stats, kept, index))
    return stats


def prewarm(stats: Statistics, kept: Mapping[str, Any],
            index: Callable[[str, tuple[int, ...]], Any]) -> list[tuple[str, tuple[int, ...]]]:
    """Build the indexes ``kept`` lists (:func:`export`) of the relations whose size still
    fits; the ones built."""
    done = []
    for entry in _entries(kept, "indexes", 2):
        rel, cols = entry
        if _fits(stats, kept, rel) and isinstance(cols, list) and cols and all(
                type(c) is int and 0 <= c < stats.program.relations[rel].arity for c in cols):
            index(rel, tuple(cols))
            done.append((rel, tuple(cols)))
    return done


def _fits(stats: Statistics, kept: Mapping[str, Any], rel: Any) -> bool:
    sizes = kept.get("sizes")
    n = sizes.get(rel) if isinstance(sizes, Mapping) and isinstance(rel, str) else None
    return (type(n) is int and rel in stats.program.relations
            and n <= 2 * stats.size(rel) + SLACK and stats.size(rel) <= 2 * n + SLACK)


def export(stats: Statistics, indexes: Iterable[tuple[str, tuple[int, ...]]] = (),
           ) -> dict[str, Any] | None:
    """What ``stats`` measured on the rows (or took from kept data), as JSON-able data for
    :func:`take` (None: nothing): per-column distinct counts, bucket sizes, the rows holding
    constants, the closure walks asked for and the edges' samples, with the sizes of the
    relations they were measured on; and which of ``indexes`` (the database's) are of a big
    relation (at least :data:`PREWARM` rows: :func:`prewarm` builds them again)."""
    rels: set[str] = set()

    def of(rel: str) -> str:
        rels.add(rel)
        return rel

    reach = stats._reach
    data: dict[str, Any] = {
        "version": VERSION,
        "distinct": [[of(r), c, d] for (r, c), d in stats._distinct.items()],
        "weighted": [[of(r), list(cols), [list(p) for p in where], w]
                     for (r, cols, where), w in stats._weighted.items()],
        "matching": [[of(r), [list(p) for p in consts], [list(row) for row in rows]]
                     for (r, consts), rows in stats._rows_with.items()],
        "edges": [[of(e), [list(row) for row in rows]]
                  for e, rows in stats._edge_samples.items()],
        "reach": [[key, node, reach[key][node]] for key, node in sorted(
            stats._starts, key=repr) if node in reach.get(key, {})
            and of(key.rsplit("/", 1)[0])],
        "indexes": [[of(r), list(cols)] for r, cols in sorted(indexes)
                    if stats.size(r) >= PREWARM],
    }
    if not any(data[k] for k in _KINDS):
        return None
    data["sizes"] = {r: stats.size(r) for r in sorted(rels)}
    return data


def take(stats: Statistics, kept: Mapping[str, Any]) -> int:
    """Fill ``stats``' memos from ``kept`` (:func:`export`), for the relations whose size
    still fits the one measured; malformed entries are skipped. How many were taken."""
    if not isinstance(kept, Mapping) or kept.get("version") != VERSION:
        return 0
    sizes = kept.get("sizes")
    if not isinstance(sizes, Mapping):
        return 0
    relations = stats.program.relations
    fits = {r: relations[r].arity for r in sizes if _fits(stats, kept, r)}

    def cols_ok(r: Any, cols: Any) -> bool:
        return r in fits and isinstance(cols, list) and all(
            type(c) is int and 0 <= c < fits[r] for c in cols)

    def pairs(r: Any, ps: Any) -> tuple[tuple[int, ir.Value], ...] | None:
        if not isinstance(ps, list) or not all(
                isinstance(p, list) and len(p) == 2 and cols_ok(r, p[:1]) and _value(p[1])
                for p in ps):
            return None
        return tuple((p[0], p[1]) for p in ps)

    def rows(r: Any, rs: Any) -> list[ir.Row] | None:
        if r not in fits or not isinstance(rs, list) or not all(
                isinstance(row, list) and len(row) == fits[r] and all(map(_value, row))
                for row in rs):
            return None
        return [tuple(row) for row in rs]

    taken = 0
    for r, c, d in _entries(kept, "distinct", 3):
        if cols_ok(r, [c]) and type(d) is int and d >= 1:
            stats._distinct[(r, c)] = d
            taken += 1
    for r, cols, where, w in _entries(kept, "weighted", 4):
        got = pairs(r, where)
        if cols_ok(r, cols) and cols and got is not None and type(w) in (int, float):
            stats._weighted[(r, tuple(cols), got)] = float(w)
            taken += 1
    for r, consts, rs in _entries(kept, "matching", 3):
        got, picked = pairs(r, consts), rows(r, rs)
        if got is not None and picked is not None:
            stats._rows_with[(r, got)] = picked
            taken += 1
    for r, rs in _entries(kept, "edges", 2):
        picked = rows(r, rs)
        if picked is not None and fits[r] == 2:
            stats._edge_samples[r] = picked
            taken += 1
    for key, node, n in _entries(kept, "reach", 3):
        if (isinstance(key, str) and key.rsplit("/", 1)[0] in fits
                and key.rsplit("/", 1)[-1] in ("down", "up") and _value(node)
                and type(n) is int and n >= 0):
            stats._reach.setdefault(key, {})[node] = n
            stats._starts.add((key, node))
            taken += 1
    return taken


def _value(v: Any) -> bool:
    return type(v) is str or type(v) is int


def _entries(kept: Mapping[str, Any], name: str, width: int) -> list[list[Any]]:
    got = kept.get(name)
    if not isinstance(got, list):
        return []
    return [e for e in got if isinstance(e, list) and len(e) == width]


@runtime_checkable
class Keeper(Protocol):
    """A journal that keeps the planner's statistics beside the facts (a store:
    grantlog/store/journal.py)."""

    def statistics(self) -> Mapping[str, Any] | None:
        """What :func:`export` gave, if it still describes the facts (None: none kept, or
        too many rows written since)."""
        ...

    def keep_statistics(self, data: Mapping[str, Any]) -> None:
        """Keep ``data`` (:func:`export`) as the facts' statistics."""
        ...


def kept_statistics(journal: object) -> Mapping[str, Any] | None:
    """The statistics a journal keeps (None: it keeps none, or they could not be read: the
    rows are measured instead)."""
    if not isinstance(journal, Keeper):
        return None
    try:
        return journal.statistics()
    except GrantlogError:
        return None


def keep_statistics(journal: object, stats: Statistics | None,
                    indexes: Collection[tuple[str, tuple[int, ...]]] = ()) -> bool:
    """Keep what ``stats`` measured with the journal's facts (a store), and which big
    ``indexes`` the database built, so the next reasoner to open it needs no pass over the
    rows; nothing when nothing new was measured or built, or the journal keeps no
    statistics. A failure to write is not an error (the next reasoner measures again).
    Whether they were kept."""
    if stats is None or not isinstance(journal, Keeper):
        return False
    big = {(r, c) for r, c in indexes if stats.size(r) >= PREWARM}
    if not stats.measured and big <= stats.prewarmed:
        return False
    if not any(stats.size(r) >= PREWARM for r in stats.program.relations):
        return False  # small facts are measured in milliseconds: no write for them
    data = export(stats, big)
    if data is None:
        return False
    try:
        journal.keep_statistics(data)
    except GrantlogError:
        return False
    return True
