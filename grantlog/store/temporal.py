"""Point reads of the past, and a bulk import of history.

**Point reads** (:class:`PastFacts`): the facts of one relation at revision ``R`` whose
bound columns have given values, as an indexed lookup on the temporal table
(grantlog/store/checkpoints.py: ``grantlog_intervals``, ``added_at <= R < removed_at``) plus
the log rows between the checkpoint and ``R``; the engine's goal-directed check at a past
revision (engine/answer/pointread.py) reads its base facts through it, so an as-of check
costs the lookups its proof needs, not the whole fact set at ``R``. The lookups use
expression indexes of the temporal table on a row's first values (``checkpoints.
point_indexes``: created with the temporal table or by ``store checkpoint``); a lookup
binding none of them reads the relation's intervals at ``R``.

**Bulk import** (:func:`append_history`): many transactions written as one database
transaction (the log rows, the transactions' rows with their checksums and metadata, the
tables' net change, the head), for importing a history recorded elsewhere and for building
the benchmarks' big histories (benchmarks/history_world.py). The caller guarantees what
``Writer.apply`` requires of each change: every row added is absent, every row removed
present, at that point of the sequence.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from grantlog.engine.core import ir
from grantlog.engine.core.journal import VALID, Meta

from . import checkpoints
from .digest import MASK, digest, hex64
from .history import Committed, _bounds, _check, _has_meta, _read
from .records import encode_row

#: grantlog/store/base.py's store (typed loosely, as checkpoints.py does)
Store = Any

#: one transaction of a bulk import: (added, removed, committed_at, meta)
Change = tuple[Mapping[str, Sequence[ir.Row]], Mapping[str, Sequence[ir.Row]], float,
               Meta | None]

#: transactions written per batch of a bulk import
BATCH = 20_000


def append_history(st: Store, changes: Iterable[Change]) -> int:
    """Append ``changes`` (see :data:`Change`) as consecutive revisions after the head, in
    one database transaction; returns the new head. The tables get the net change of the
    whole sequence; the log and ``grantlog_revisions`` one entry per change, as one write
    transaction per change would have written them."""
    log_sql = st._sql("INSERT INTO grantlog_log (revision, relation, sign, row) "
                      "VALUES (?, ?, ?, ?)")
    meta_cols = bool(st._meta_columns)
    rev_sql = st._sql(
        "INSERT INTO grantlog_revisions (revision, committed_at, added, removed"
        + (", digest" if st._checksums else "") + (", author, reason, ticket" if meta_cols
                                                     else "") + ") VALUES (?, ?, ?, ?"
        + (", ?" if st._checksums else "") + (", ?, ?, ?" if meta_cols else "") + ")")
    net: dict[tuple[str, ir.Row], int] = {}
    with st._cursor() as cur:
        try:
            rev, _ = st._lock_head(cur)
            logs: list[tuple[int, str, int, str]] = []
            revs: list[tuple[Any, ...]] = []
            for added, removed, at, meta in changes:
                n_add = sum(len(v) for v in added.values())
                n_rem = sum(len(v) for v in removed.values())
                if not n_add and not n_rem:
                    continue
                rev += 1
                d = 0
                for sign, delta in ((1, added), (-1, removed)):
                    for rel, rows in delta.items():
                        if not rows:
                            continue
                        d += sign * digest(rel, rows)[1]
                        for r in rows:
                            logs.append((rev, rel, sign, encode_row(r)))
                            k = (rel, tuple(r))
                            net[k] = net.get(k, 0) + sign
                m = meta or Meta()
                revs.append((rev, at, n_add, n_rem)
                            + ((hex64(d & MASK),) if st._checksums else ())
                            + ((m.author, m.reason, m.ticket) if meta_cols else ()))
                if len(revs) >= BATCH:
                    cur.executemany(log_sql, logs)
                    cur.executemany(rev_sql, revs)
                    logs, revs = [], []
            cur.executemany(log_sql, logs)
            cur.executemany(rev_sql, revs)
            by: dict[tuple[str, int], list[ir.Row]] = {}
            for (rel, row), s in net.items():
                if s:
                    by.setdefault((rel, s), []).append(row)
            for (rel, s), rows in sorted(by.items(), key=lambda kv: -kv[0][1]):
                t = st._table(cur, rel, create=s > 0)
                (st._delete if s < 0 else st._insert)(cur, t, rows)
            cur.execute(st._sql("UPDATE grantlog_head SET revision = ? WHERE id = 1"), (rev,))
            st._analyze(cur)
            st._notify(cur, rev)
            st._commit(cur)
        except BaseException:
            st._rollback(cur)
            raise
    return int(rev)


class PastFacts:
    """The stored facts at one revision, read by point lookups (see the module docstring).

    ``revision`` must be inside what the temporal table covers: at or above the oldest
    interval's start (the horizon) and at or below the head; ``C`` (the checkpoint) may be
    below it: the log rows in ``(C, revision]`` are read once, on the first lookup, and
    kept. Each lookup is one short read: the rows it reads do not change under it (an
    interval open at the checkpoint closes only above it, log rows are never rewritten)."""

    def __init__(self, st: Store, revision: int, checkpoint: int) -> None:
        self.st = st
        self.revision = int(revision)
        self.checkpoint = int(checkpoint)
        self.upto = min(self.revision, self.checkpoint)
        self._pg = st.dialect == "postgres"
        self._overlay: tuple[dict[str, set[ir.Row]], dict[str, set[ir.Row]]] | None = None
        #: lookups made and rows read (the benchmark reports them)
        self.lookups = 0
        self.rows_read = 0

    def _read(self, sql: str, args: list[Any]) -> tuple[list[Any], dict[str, set[ir.Row]],
                                                        dict[str, set[ir.Row]]]:
        """The checkpoint's rows ``sql`` selects and the log's changes after it (:meth:`_later`),
        in one read transaction."""
        with self.st._cursor() as cur:
            self.st._begin_read(cur)
            try:
                cur.execute(self.st._sql(sql), args)
                found = cur.fetchall()
                added, removed = self._later(cur)
            finally:
                self.st._rollback(cur)
        self.rows_read += len(found)
        return found, added, removed

    def _later(self, cur: Any) -> tuple[dict[str, set[ir.Row]], dict[str, set[ir.Row]]]:
        """The net change of the log rows in ``(checkpoint, revision]``: added, removed."""
        if self._overlay is None:
            added: dict[str, set[ir.Row]] = {}
            removed: dict[str, set[ir.Row]] = {}
            if self.revision > self.checkpoint:
                cur.execute(self.st._sql(
                    "SELECT relation, sign, row FROM grantlog_log WHERE revision > ? AND "
                    "revision <= ? ORDER BY revision"), (self.checkpoint, self.revision))
                for rel, sign, row in cur.fetchall():
                    v = tuple(json.loads(row) if isinstance(row, str) else row)
                    a, r = added.setdefault(rel, set()), removed.setdefault(rel, set())
                    if int(sign) > 0:
                        r.discard(v)
                        a.add(v)
                    else:
                        a.discard(v)
                        r.add(v)
            self._overlay = (added, removed)
        return self._overlay

    def _has(self, rel: str) -> bool:
        """Whether the temporal table has intervals of ``rel`` (kept per store and
        checkpoint: only a fold adds a relation's first ones)."""
        kept = _PRESENT.get(self.st)
        if kept is None or kept[0] != self.checkpoint:
            kept = _PRESENT[self.st] = (self.checkpoint, {})
        got = kept[1].get(rel)
        if got is None:
            with self.st._cursor() as cur:
                self.st._begin_read(cur)
                try:
                    cur.execute(self.st._sql(f"SELECT 1 FROM {checkpoints.TABLE} WHERE "
                                             "relation = ? LIMIT 1"), (rel,))
                    got = kept[1][rel] = cur.fetchone() is not None
                finally:
                    self.st._rollback(cur)
        return got

    def _later_now(self) -> dict[str, set[ir.Row]]:
        """The rows the log in ``(checkpoint, revision]`` added (read once)."""
        with self.st._cursor() as cur:
            self.st._begin_read(cur)
            try:
                return self._later(cur)[0]
            finally:
                self.st._rollback(cur)

    def rows(self, rel: str, bound: Mapping[int, ir.Value]) -> list[ir.Row]:
        """The facts of ``rel`` at the revision whose column ``i`` is ``bound[i]``: looked
        up by the first column of ``bound`` that is indexed (the caller puts the most
        selective first), the others filtered."""
        return self.first(rel, bound)[0]

    def first(self, rel: str, bound: Mapping[int, ir.Value],
              limit: int | None = None) -> tuple[list[ir.Row], bool]:
        """:meth:`rows`, of the index's first ``limit`` matches only (None: all), and whether
        that is all of them (whether some fact matches, without reading every match:
        engine/answer/timed_proofs.py)."""
        if not self._has(rel):
            later = self._later_now().get(rel, set()) if self.revision > self.checkpoint \
                else set()
            return [r for r in later
                    if all(i < len(r) and r[i] == v for i, v in bound.items())], True
        self.lookups += 1
        sql = (f"SELECT row FROM {checkpoints.TABLE} WHERE relation = ? AND added_at <= ? "
               "AND (removed_at IS NULL OR removed_at > ?)")
        args: list[Any] = [rel, self.upto, self.upto]
        key = next((i for i in bound if i < checkpoints.INDEXED), None)
        if key is not None:
            v = bound[key]
            sql += f" AND {checkpoints.value_sql(self.st, key)} = ?"
            args.append(str(v) if self._pg else v)
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        found, added, removed = self._read(sql, args)
        out: set[ir.Row] = set()
        for (text,) in found:
            row = tuple(json.loads(text))
            if all(i < len(row) and row[i] == v for i, v in bound.items()):
                out.add(row)
        gone = removed.get(rel)
        if gone:
            out -= gone
        for row in added.get(rel, ()):
            if all(i < len(row) and row[i] == v for i, v in bound.items()):
                out.add(row)
        return list(out), limit is None or len(found) < limit


    def timed(self, rel: str, bound: Mapping[int, ir.Value]) -> list[ir.Row]:
        """The validity intervals' rows (the reserved relation ``@valid``: relation, fact,
        bounds) at the revision of the facts of ``rel`` whose column ``i`` is ``bound[i]``:
        looked up by the fact's first indexed column of ``bound`` (the partial indexes of
        these rows: checkpoints.point_indexes), the others filtered (engine/answer/
        pointread.py ``MomentView``: an as-of check where facts have validity intervals)."""
        keep = _valid_of(rel, bound)

        if not self._has(VALID):
            later = self._later_now().get(VALID, set()) if self.revision > self.checkpoint \
                else set()
            return [v for v in later if keep(v)]
        self.lookups += 1
        sql = (f"SELECT row FROM {checkpoints.TABLE} WHERE relation = {checkpoints.VALID_SQL} "
               f"AND added_at <= ? AND (removed_at IS NULL OR removed_at > ?) AND "
               f"{checkpoints.value_sql(self.st, 0)} = ?")
        args: list[Any] = [self.upto, self.upto, rel]
        key = next((i for i in bound if i < checkpoints.INDEXED), None)
        if key is not None:
            sql += f" AND {checkpoints.fact_sql(self.st, key)} = ?"
            args.append(str(bound[key]) if self._pg else bound[key])
        found, added, removed = self._read(sql, args)
        out = {v for (text,) in found if keep(v := tuple(json.loads(text)))}
        gone = removed.get(VALID)
        if gone:
            out -= gone
        out.update(v for v in added.get(VALID, ()) if keep(v))
        return list(out)


#: per store, (its checkpoint, whether each relation has intervals) (PastFacts._has)
_PRESENT: weakref.WeakKeyDictionary[Any, tuple[int, dict[str, bool]]] = \
    weakref.WeakKeyDictionary()

#: the most log rows between the checkpoint and a revision that a point read reads up front
#: (more: the checkpoint is too far behind; history.py rebuilds the revision instead)
OVERLAY_MAX = 50_000


def reader_at(st: Store, revision: int) -> PastFacts | None:
    """A point reader of the facts at ``revision`` (the errors of ``history.snapshot_at``
    below the horizon and above the head), or None where the store has no temporal table
    or its checkpoint is too far below ``revision`` (:data:`OVERLAY_MAX`)."""
    with _read(st) as cur:
        head, horizon = _bounds(cur)
        _check(st, revision, head, horizon)
        at = checkpoints.head(st, cur)
        if at is None:
            return None
        c = at[0]
        if revision > c:
            cur.execute(st._sql("SELECT COALESCE(SUM(added + removed), 0) FROM "
                                "grantlog_revisions WHERE revision > ? AND revision <= ?"),
                        (c, revision))
            if int(cur.fetchone()[0]) > OVERLAY_MAX:
                return None
    return PastFacts(st, revision, c)


class TimedFacts:
    """Every version of some stored facts over a stretch of revisions, read by point
    lookups (engine/answer/timed.py: a timeline evaluated over revision intervals): the
    facts of one relation whose bound columns have given values, each with the revisions
    ``[lo, hi)`` it was present in within ``[first, last + 1)``. The temporal table's
    intervals (by the same indexes as :class:`PastFacts`) and the log rows above the
    checkpoint (read once, on the first lookup that needs them). ``head``, ``horizon`` and
    ``oldest`` (the revision a timeline starts at by default: the one before the oldest
    transaction kept) bound what may be asked."""

    def __init__(self, st: Store, head: int, horizon: int, checkpoint: int,
                 oldest: int) -> None:
        self.st = st
        self.head, self.horizon, self.checkpoint, self.oldest = head, horizon, checkpoint, oldest
        self._pg = st.dialect == "postgres"
        #: per (first, last): the log's versions above the checkpoint, by relation
        self._later: dict[tuple[int, int], dict[str, dict[ir.Row, list[tuple[int, int]]]]] = {}
        #: lookups made and rows read (the benchmark reports them)
        self.lookups = 0
        self.rows_read = 0
        self._cur: Any = None

    def check(self, revision: int) -> None:
        """The errors of ``history.snapshot_at`` for a revision outside what is kept."""
        _check(self.st, revision, self.head, self.horizon)

    @contextmanager
    def reading(self) -> Iterator[None]:
        """Every read inside is of one read transaction (one snapshot, no per-lookup
        begin and rollback)."""
        if self._cur is not None:
            yield
            return
        with _read(self.st) as cur:
            self._cur = cur
            try:
                yield
            finally:
                self._cur = None

    @contextmanager
    def _reader(self) -> Iterator[Any]:
        if self._cur is not None:
            yield self._cur
        else:
            with _read(self.st) as cur:
                yield cur

    def _log(self, first: int, last: int) -> dict[str, dict[ir.Row, list[tuple[int, int]]]]:
        """Per relation and row, the intervals the log rows in ``(checkpoint, last]`` open
        and close (an interval open at the checkpoint starts at ``-1``: joined with the
        temporal table's open one)."""
        got = self._later.get((first, last))
        if got is not None:
            return got
        got = {}
        if last > self.checkpoint:
            with self._reader() as cur:
                cur.execute(self.st._sql(
                    "SELECT revision, relation, sign, row FROM grantlog_log WHERE revision > ? "
                    "AND revision <= ? ORDER BY revision"), (self.checkpoint, last))
                found = cur.fetchall()
            open_: dict[tuple[str, ir.Row], int] = {}
            for rev, rel, sign, row in found:
                v = tuple(json.loads(row) if isinstance(row, str) else row)
                k = (rel, v)
                if int(sign) > 0:
                    open_[k] = int(rev)
                else:
                    got.setdefault(rel, {}).setdefault(v, []).append(
                        (open_.pop(k, -1), int(rev)))
            for (rel, v), lo in open_.items():
                got.setdefault(rel, {}).setdefault(v, []).append((lo, last + 1))
        self._later[(first, last)] = got
        return got

    def rows(self, rel: str, bound: Mapping[int, ir.Value], first: int,
             last: int) -> dict[ir.Row, list[tuple[int, int]]]:
        """The facts of ``rel`` present at some revision of ``[first, last]`` whose column
        ``i`` is ``bound[i]``, each with its intervals there (sorted, disjoint, clipped to
        ``[first, last + 1)``): looked up by the first indexed column of ``bound`` (the
        others compared in SQL too)."""
        key = next((i for i in bound if i < checkpoints.INDEXED), None)
        # the reserved relation spelled out: the partial indexes of its rows apply
        sql = "relation = " + (checkpoints.VALID_SQL if rel == VALID else "?")
        args: list[Any] = [] if rel == VALID else [rel]
        for i in sorted(bound, key=lambda i: i != key):
            sql += f" AND {checkpoints.value_sql(self.st, i)} = ?"
            args.append(str(bound[i]) if self._pg else bound[i])
        later = self._log(first, last).get(rel, {})
        # the values are compared in SQL (as text on PostgreSQL: compared again)
        items = list(bound.items()) if self._pg else []
        return self._versions(sql, args, first, last, None if not items else lambda row: all(
            i < len(row) and row[i] == v for i, v in items), {
            row: ivs for row, ivs in later.items()
            if all(i < len(row) and row[i] == v for i, v in bound.items())})

    def timed(self, rel: str, bound: Mapping[int, ir.Value], first: int,
              last: int) -> dict[ir.Row, list[tuple[int, int]]]:
        """The validity intervals (rows of the reserved relation ``@valid``: relation, fact,
        bounds) of the facts of ``rel`` whose column ``i`` is ``bound[i]``, present at some
        revision of ``[first, last]``, each with its intervals there as :meth:`rows` gives
        them: looked up by the fact's first indexed column of ``bound`` (partial indexes of
        these rows: checkpoints.point_indexes)."""
        key = next((i for i in bound if i < checkpoints.INDEXED), None)
        sql = f"relation = {checkpoints.VALID_SQL} AND {checkpoints.value_sql(self.st, 0)} = ?"
        args: list[Any] = [rel]
        if key is not None:
            sql += f" AND {checkpoints.fact_sql(self.st, key)} = ?"
            args.append(str(bound[key]) if self._pg else bound[key])
        keep = _valid_of(rel, bound)

        later = self._log(first, last).get(VALID, {})
        return self._versions(sql, args, first, last, keep,
                              {row: ivs for row, ivs in later.items() if keep(row)})

    def present(self, rel: str, bound: Mapping[int, ir.Value], first: int, last: int) -> bool:
        """Whether some fact of ``rel`` whose column ``i`` is ``bound[i]`` is present at a
        revision of ``[first, last]`` (one indexed read, the first row found)."""
        if any(all(i < len(row) and row[i] == v for i, v in bound.items())
               for row, ivs in self._log(first, last).get(rel, {}).items()
               if any(lo >= 0 and max(lo, first) < hi for lo, hi in ivs)):
            return True
        sql = (f"SELECT 1 FROM {checkpoints.TABLE} WHERE relation = ? AND added_at <= ? AND "
               "(removed_at IS NULL OR removed_at > ?)")
        args: list[Any] = [rel, min(last, self.checkpoint), first]
        for i, v in bound.items():
            sql += f" AND {checkpoints.value_sql(self.st, i)} = ?"
            args.append(str(v) if self._pg else v)
        with self._reader() as cur:
            cur.execute(self.st._sql(sql + " LIMIT 1"), args)
            return cur.fetchone() is not None

    def revision_before(self, when: float) -> int | None:
        """The last revision committed before ``when`` (None: none the store keeps)."""
        with self._reader() as cur:
            cur.execute(self.st._sql(
                "SELECT revision FROM grantlog_revisions WHERE committed_at < ? "
                "ORDER BY committed_at DESC, revision DESC LIMIT 1"), (when,))
            got = cur.fetchone()
        return None if got is None else int(got[0])

    def _versions(self, where: str, args: list[Any], first: int, last: int,
                  keep: Callable[[ir.Row], bool] | None,
                  later: dict[ir.Row, list[tuple[int, int]]],
                  ) -> dict[ir.Row, list[tuple[int, int]]]:
        """The temporal table's rows matching ``where`` (and ``keep``) present in
        ``[first, last]`` joined with ``later``, the log's (above the checkpoint; an
        interval open at the checkpoint starts at ``-1``), clipped to the stretch."""
        self.lookups += 1
        upto = min(last, self.checkpoint)
        with self._reader() as cur:
            cur.execute(self.st._sql(
                f"SELECT row, added_at, removed_at FROM {checkpoints.TABLE} WHERE {where} "
                "AND added_at <= ? AND (removed_at IS NULL OR removed_at > ?)"),
                [*args, upto, first])
            found = cur.fetchall()
        self.rows_read += len(found)
        end = last + 1
        out: dict[ir.Row, list[tuple[int, int]]] = {}
        decoded: dict[str, ir.Row] = {}  # a fact's versions share its text: decoded once
        for text, lo, hi in found:
            row = decoded.get(text)
            if row is None:
                row = decoded[text] = tuple(json.loads(text))
            if keep is None or keep(row):
                # open at the checkpoint: until the log closes it (or the stretch ends)
                h = end if hi is None else int(hi)
                if hi is None and row in later and later[row][0][0] == -1:
                    h = later[row][0][1]
                lo, h = max(int(lo), first), min(h, end)
                if lo < h:
                    out.setdefault(row, []).append((lo, h))
        for row, ivs in later.items():  # the log's rows
            for lo, hi in ivs:
                if lo < 0:  # open at the checkpoint: the temporal table's, closed above
                    continue
                lo, hi = max(lo, first), min(hi, end)
                if lo < hi:
                    out.setdefault(row, []).append((lo, hi))
        for ivs in out.values():
            if len(ivs) > 1:
                ivs.sort()
        return out

    def transactions(self, revisions: Iterable[int]) -> dict[int, Committed]:
        """The transactions of ``revisions`` (those the store keeps), by revision."""
        wanted = sorted(set(revisions))
        out: dict[int, Committed] = {}
        with self._reader() as cur:
            cols = ", author, reason, ticket" if _has_meta(self.st, cur) else ""
            for i in range(0, len(wanted), 500):
                part = wanted[i:i + 500]
                cur.execute(self.st._sql(
                    f"SELECT revision, committed_at, added, removed{cols} FROM "
                    f"grantlog_revisions WHERE revision IN ({', '.join('?' * len(part))})"),
                    part)
                for r in cur.fetchall():
                    out[int(r[0])] = Committed(int(r[0]), float(r[1]), int(r[2]), int(r[3]),
                                               *r[4:])
        return out


def timed_reader(st: Store) -> TimedFacts | None:
    """A reader of stored facts over stretches of revisions (:class:`TimedFacts`), or None
    where the store has no temporal table (no checkpoint taken)."""
    with _read(st) as cur:
        head, horizon = _bounds(cur)
        at = checkpoints.head(st, cur)
        if at is None:
            return None
        cur.execute("SELECT MIN(revision) FROM grantlog_revisions")
        low = cur.fetchone()[0]
    return TimedFacts(st, head, horizon, at[0], head if low is None else int(low) - 1)


def _valid_of(rel: str, bound: Mapping[int, ir.Value]) -> Callable[[ir.Row], bool]:
    """Whether a ``@valid`` row is of a fact of ``rel`` whose column ``i`` is ``bound[i]``
    (each fact's JSON parsed once)."""
    facts: dict[str, ir.Row] = {}

    def keep(vrow: ir.Row) -> bool:
        text = str(vrow[1])
        fact = facts.get(text)
        if fact is None:
            fact = facts[text] = tuple(json.loads(text))
        return vrow[0] == rel and all(i < len(fact) and fact[i] == v for i, v in bound.items())

    return keep
