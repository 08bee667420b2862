"""Materialized relations and their hash indexes.

``full[rel]`` maps each row to its *level*: 0 for base facts, otherwise the evaluation round in
which the row was first derived. Levels order derivations (a row's body facts always have lower
levels), which is all the explainer needs to rebuild a minimal proof on demand (Soufflé keeps
the same kind of annotation).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from collections.abc import Set as AbstractSet
from itertools import filterfalse
from operator import itemgetter
from typing import Any, cast

from ..core.index import SORT_MIN, Index, SortedIndex, UniqueIndex, build_index, nearly_sorted
from ..core.ir import Row
from ..core.lazy_index import DEFERRED, LAZY_MIN, lazy_index
from ..core.results import Change

#: rows added at once from which an index takes them at C speed (:meth:`Database.add`)
BULK = 4096


def _put(ix: Index, k: Any, row: Row) -> None:
    bucket = ix.get(k)
    if bucket is None:
        ix[k] = (row,)
    elif type(bucket) is tuple:
        if bucket[0] != row:
            ix[k] = {bucket[0]: None, row: None}
    else:
        assert isinstance(bucket, dict)
        bucket[row] = None


class Given(set):  # type: ignore[type-arg]
    """Rows a write adds (a set, as a net change holds them) that also remember the order
    they were given in (:attr:`order`; None once the set is changed): a bulk load adds them
    to the relation in that order (:meth:`Database.add`), so its rows are read in the order
    they were made, not in a set's hash order — a million rows' index built in a fifth of
    the time (memory read in order), and a relation's first rows the first ones given."""

    __slots__ = ("order",)

    def __init__(self, rows: Collection[Row]) -> None:
        super().__init__(rows)
        self.order: Collection[Row] | None = rows if len(rows) == len(self) else None

    def add(self, row: Row) -> None:
        self.order = None
        set.add(self, row)

    def discard(self, row: object) -> None:
        self.order = None
        set.discard(self, row)

    def remove(self, row: Row) -> None:
        self.order = None
        set.remove(self, row)

    def pop(self) -> Row:
        self.order = None
        return set.pop(self)

    def clear(self) -> None:
        self.order = None
        set.clear(self)

    def update(self, *others: Iterable[Row]) -> None:
        self.order = None
        set.update(self, *others)

    def difference_update(self, *others: Iterable[Any]) -> None:
        self.order = None
        set.difference_update(self, *others)

    def intersection_update(self, *others: Iterable[Any]) -> None:
        self.order = None
        set.intersection_update(self, *others)

    def symmetric_difference_update(self, other: Iterable[Row]) -> None:
        self.order = None
        set.symmetric_difference_update(self, other)

    def __ior__(self, other: AbstractSet[Any]) -> Given:  # type: ignore[misc]
        self.order = None
        return set.__ior__(self, other)

    def __iand__(self, other: AbstractSet[Any]) -> Given:  # type: ignore[misc]
        self.order = None
        return set.__iand__(self, other)

    def __isub__(self, other: AbstractSet[Any]) -> Given:  # type: ignore[misc]
        self.order = None
        return set.__isub__(self, other)

    def __ixor__(self, other: AbstractSet[Any]) -> Given:  # type: ignore[misc]
        self.order = None
        return set.__ixor__(self, other)


class Batch:
    """The rows a transaction adds to a relation that holds none (a bulk load of
    :data:`BULK` rows or more), read as a set of them is (``len``, ``in``, iteration in the
    order given) but not copied into one: :attr:`rows`, the transaction's dict of its
    operations, or (``base``) a dict of the rows at level 0, made from them as written,
    which :meth:`Database.add` takes as the relation's at C speed. A million rows' set costs
    ~0.08 s to make and, as the collector tracks every set, ~0.1 s of each collection that
    traverses it while it lives (a transaction's changes live as long as the caller's
    ``tx``); a dict of rows holds no object the collector tracks. Only a net change
    (``net_change``) makes one, and only the reasoner reads it: :func:`settled` turns it
    into a set for the paths that change a net change's sets (a change maintained row by
    row, validity intervals), :func:`change` into the relation's :class:`Change` (its
    ``added`` made when first read: :class:`BatchChange`)."""

    __slots__ = ("base", "rows")

    def __init__(self, rows: Mapping[Row, Any], base: bool = False) -> None:
        self.rows = rows
        #: the dict's values are level 0 (base facts), what the relation's dict holds
        self.base = base

    def __len__(self) -> int:
        return len(self.rows)

    def __bool__(self) -> bool:
        return bool(self.rows)

    def __contains__(self, row: object) -> bool:
        return row in self.rows

    def __iter__(self) -> Iterator[Row]:
        return iter(self.rows)


class BatchChange(Change):
    """The change of a relation a bulk load filled (:class:`Batch`): ``added`` is the set of
    the rows given, made when first read (the caller asked for the changes), not at the
    load; ``removed`` is empty (unless given, as by ``dataclasses.replace``). Reads (and
    compares) as a :class:`Change`."""

    def __init__(self, rows: Mapping[Row, Any] | None = None, added: set[Row] | None = None,
                 removed: set[Row] | None = None) -> None:  # (``dataclasses.replace``'s too)
        self._rows = {} if rows is None else rows
        self._added = added
        self.removed = set() if removed is None else removed

    @property
    def added(self) -> set[Row]:
        if self._added is None:
            self._added = set(self._rows)
        return self._added

    @added.setter
    def added(self, rows: set[Row]) -> None:
        self._added = rows

    def __bool__(self) -> bool:
        return bool(self._rows if self._added is None else self._added) or bool(self.removed)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Change):
            return NotImplemented
        return self.added == other.added and self.removed == other.removed

    __hash__ = None  # type: ignore[assignment]  # as a dataclass's (mutable, compared)


def fresh(rows: Collection[Row]) -> set[Row]:
    """``rows`` as a set of their own: a write's :class:`Given` itself (made for this
    change, no copy of a million rows; the order it kept let go), else a copy."""
    if type(rows) is Given:
        rows.order = None
        return rows
    return set(rows)


def change(plus: Collection[Row], minus: Collection[Row]) -> Change:
    """The :class:`Change` of a relation a net change adds ``plus`` to and removes ``minus``
    from (a write's own set of rows added: no copy; a :class:`Batch`'s made when read)."""
    if type(plus) is Batch and not minus:
        return BatchChange(plus.rows)
    return Change(fresh(plus), set(minus))


def settled(delta: Mapping[str, Collection[Row]]) -> dict[str, set[Row]]:
    """A net change's rows per relation as sets (a :class:`Batch` made one, its order
    kept: :class:`Given`), for the paths that read or change them as sets."""
    return {rel: Given(rows.rows) if type(rows) is Batch else rows  # type: ignore[misc]
            for rel, rows in delta.items()}


def in_order(rows: Collection[Row]) -> Collection[Row]:
    """``rows`` in the order a write gave them (:class:`Given`, :class:`Batch`), else as
    they are."""
    if type(rows) is Given and rows.order is not None:
        return rows.order
    if type(rows) is Batch:
        return rows.rows  # its keys (read at C speed)
    return rows


def net_change(ops: Mapping[str, Mapping[Row, bool]],
               stored: Callable[[str], Collection[Row]],
               batches: Mapping[str, list[Row]] | None = None,
               ) -> tuple[dict[str, set[Row]], dict[str, set[Row]]]:
    """The net effect of a transaction's operations (per relation, row -> True to insert,
    False to retract) on the ``stored`` rows of each relation: the rows it adds (absent
    now) and the rows it removes (present now). A relation's batch of inserts only (a bulk
    load) is filtered at C speed, its rows kept in the order given (:class:`Given`, or a
    :class:`Batch` when nothing is stored). ``batches``: relations a transaction inserted
    many rows into, their rows as given (engine/core/results.py ``Transaction.batches``):
    into a relation that holds none, the dict of the rows at level 0 made at once, which
    the relation's is a copy of (hashed once, not into the transaction's dict, then a
    set, then the relation's)."""
    ins: dict[str, set[Row]] = {}
    dels: dict[str, set[Row]] = {}
    for rel, given in (batches or {}).items():
        if stored(rel):
            ops = {**ops, rel: dict.fromkeys(given, True)}
        else:
            ins[rel] = Batch(dict.fromkeys(given, 0), True)  # type: ignore[assignment]
    for rel, rows in ops.items():
        have = stored(rel)
        if all(rows.values()):
            if not have and len(rows) >= BULK:  # a bulk load: the dict, no set of it
                ins[rel] = Batch(rows)  # type: ignore[assignment]  # read as a set
                continue
            # nothing stored: the rows themselves (a dict: the set and the relation's dict
            # made from it at C speed, presized, with the hashes it keeps)
            got = Given(list(filterfalse(have.__contains__, rows)) if have else rows)
            if got:
                ins[rel] = got
            continue
        for row, present in rows.items():
            if present and row not in have:
                ins.setdefault(rel, set()).add(row)
            elif not present and row in have:
                dels.setdefault(rel, set()).add(row)
    return ins, dels


def _key_fn(cols: tuple[int, ...]) -> Callable[[Row], Any]:
    return itemgetter(*cols)


class Database:
    def __init__(self, relations: Iterable[str]) -> None:
        self.full: dict[str, dict[Row, int]] = {r: {} for r in relations}
        #: the highest level handed out so far (levels only grow, across updates too)
        self.level = 0
        #: (relation, columns) -> its :data:`Index`, or a :class:`SortedIndex` (read alike)
        self.indexes: dict[tuple[str, tuple[int, ...]], Any] = {}
        #: relation -> [key function, index, columns] of each of its indexes
        self._by_rel: dict[str, list[list[Any]]] = defaultdict(list)
        self._rows = 0
        #: relation -> functions told the rows just added (True) or removed (False), once
        #: the indexes are: what is kept beside them (engine/answer/vocabulary.py's names)
        self.watchers: dict[str, list[Callable[[Collection[Row], bool], None]]] = {}
        #: relation -> column -> its rows sorted on the column (engine/core/index.py
        #: ``SortedRows``), while the relation holds exactly those rows: its one-column
        #: indexes are then read by bisection (:class:`SortedIndex`), not built
        self.orders: dict[str, dict[int, list[Row]]] = {}
        #: how many of them have built their hash index (a view reading one anew reads
        #: the hash table, at C speed: the reasoner makes a new view when this moves)
        self.hashed = 0

    def ensure(self, rel: str) -> dict[Row, int]:
        got = self.full.get(rel)
        if got is None:
            got = self.full[rel] = {}
        return got

    def index(self, rel: str, cols: tuple[int, ...]) -> Index:
        """The hash index of ``rel`` on ``cols``, built on first use and kept up to date
        (a :class:`UniqueIndex` while every key has one row); of a relation a store's
        snapshot gave sorted (:attr:`orders`), on one column, a :class:`SortedIndex`,
        which reads alike and becomes a hash index once read enough; of a big relation
        whose keys repeat, a :class:`LazyIndex` (the buckets of the keys read, each found
        by a scan at C speed, until enough are read to build the hash index)."""
        k = (rel, cols)
        ix: Any = self.indexes.get(k)
        if type(ix) in DEFERRED and ix.hash is not None:
            self._settle(rel)
            ix = self.indexes[k]
        if ix is None:
            key = _key_fn(cols)
            rows = self.ensure(rel)
            order = self.orders.get(rel, {}).get(cols[0]) if len(cols) == 1 else None
            ix = self.indexes[k] = (
                SortedIndex(order, cols[0], self._count_hashed) if order is not None
                else lazy_index(rows, cols, self._count_hashed) if len(rows) >= LAZY_MIN
                else build_index(rows, key))
            self._by_rel[rel].append([key, ix, cols])
        return cast(Index, ix)  # a SortedIndex reads as one

    def _count_hashed(self) -> None:
        self.hashed += 1

    def _settle(self, rel: str) -> None:
        """Put the hash index each of ``rel``'s sorted or lazy indexes built in its place
        (readers still holding the sorted one read the same hash index through it)."""
        for entry in self._by_rel.get(rel, ()):
            ix = entry[1]
            if type(ix) in DEFERRED and ix.hash is not None:
                entry[1] = self.indexes[(rel, entry[2])] = ix.hash

    def hash_sorted(self) -> None:
        """Build the hash index of every sorted or lazy index now (``prepare``: what the
        warm walks of listings read), each in its place."""
        for rel, entries in self._by_rel.items():
            for entry in entries:
                if type(entry[1]) in DEFERRED:
                    entry[1].hashed()
            self._settle(rel)

    def take(self, rel: str, rows: dict[Row, int],
             orders: dict[int, list[Row]] | None = None) -> None:
        """Base facts (level 0) given as the relation's row dict, before any index of it:
        the dict itself is kept (no copy), and ``orders`` (the same rows sorted per
        column) if it holds exactly those rows; otherwise they are added."""
        if self.full.get(rel) or self._by_rel.get(rel):
            self.add(rel, rows, 0)
            return
        self.full[rel] = rows
        self._rows += len(rows)
        if orders and all(len(o) == len(rows) for o in orders.values()):
            self.orders[rel] = orders

    def adopt(self, other: Database, rel: str) -> None:
        """Take over ``rel``'s rows and indexes from ``other`` (which must not use them
        after): a re-evaluation keeps base relations without copying them."""
        rows = other.full.get(rel)
        if rows is None:
            return
        self.full[rel] = rows
        self._rows += len(rows)
        if rel in other.orders:
            self.orders[rel] = other.orders[rel]
        for key, ix, cols in other._by_rel.get(rel, ()):
            self.indexes[(rel, cols)] = ix
            self._by_rel[rel].append([key, ix, cols])

    def drop(self, rel: str) -> None:
        """Forget ``rel``: its rows and indexes (spark_bridge/local.py: a relation that
        leaves the driver)."""
        self._rows -= len(self.full.pop(rel, {}))
        self.orders.pop(rel, None)
        for _key, _ix, cols in self._by_rel.pop(rel, ()):
            self.indexes.pop((rel, cols), None)

    def add(self, rel: str, rows: Collection[Row], level: int) -> None:
        """Add rows not yet present (callers filter out known rows)."""
        if not rows:
            return
        own = rows.rows if type(rows) is Batch and rows.base and not level else None
        rows = in_order(rows)
        self.orders.pop(rel, None)  # indexes built from now on: of the rows as they are
        if len(rows) >= BULK:  # many rows: into hash indexes (a sorted or lazy one's writes
            for entry in self._by_rel.get(rel, ()):  # are kept over it a row at a time)
                if type(entry[1]) in DEFERRED:
                    entry[1].hashed()
        self._settle(rel)
        full = self.ensure(rel)
        before = len(full)
        # a bulk load's dict of its rows at level 0: copied as it is (at C speed; into an
        # empty dict, a copy of its table), not made again from them
        full.update(dict.fromkeys(rows, level) if own is None else own)
        self._rows += len(full) - before
        ordered: list[Row] | None = None
        for entry in self._by_rel.get(rel, ()):
            key, ix = entry[0], entry[1]
            if type(ix) is UniqueIndex:
                if ordered is None:
                    ordered = list(rows)
                self._add_unique(rel, entry, ordered)
            elif type(ix) is SortedIndex and ix.unique:
                self._add_sorted_unique(rel, entry, rows)
            else:
                # one pass, the buckets' code inline (no call a row): twice as fast as an
                # index of the new rows built first and merged a key at a time, whether
                # the keys are new or old (benchmarks/RESULTS.md, "The conformance-shaped
                # cases, continued")
                get = ix.get
                put = ix.put if type(ix) is SortedIndex else None
                for row in rows:
                    k = key(row)
                    if put is not None and put(k, row):  # kept aside (many rows)
                        continue
                    bucket = get(k)
                    if bucket is None:
                        ix[k] = (row,)
                    elif type(bucket) is tuple:
                        if bucket[0] != row:
                            ix[k] = {bucket[0]: None, row: None}
                    else:
                        bucket[row] = None
        if not before and not level and len(rows) >= SORT_MIN:
            self._sort(rel, rows if len(rows) == len(full) else full)  # (no duplicates)
        for fn in self.watchers.get(rel, ()):
            fn(rows, True)

    def _sort(self, rel: str, rows: Collection[Row]) -> None:
        """A bulk load's base rows (the relation's only ones): each column of repeated keys
        they come nearly sorted on (engine/core/index.py ``nearly_sorted``) indexed by a
        :class:`SortedIndex` over them sorted there, made now (a sort of nearly sorted
        keys: ~0.05 s a million), so that the first listing reads it a level at a time as
        after a store's open, instead of building an index of buckets (~0.3-0.5 s a
        million; issue 26, item 5)."""
        for col in range(len(next(iter(rows)))):
            cols = (col,)
            if (rel, cols) not in self.indexes:
                order = nearly_sorted(rows, col)
                if order is not None:
                    ix = self.indexes[(rel, cols)] = SortedIndex(order, col,
                                                                 self._count_hashed)
                    self._by_rel[rel].append([_key_fn(cols), ix, cols])

    def _add_sorted_unique(self, rel: str, entry: list[Any], rows: Collection[Row]) -> None:
        """Add rows to a unique :class:`SortedIndex` (kept over its sorted rows); at the
        first key with a second row, replace it by an ordinary index of every row (the
        relation's rows already hold the new ones), as :meth:`_add_unique` does."""
        key, ix, cols = entry
        for row in rows:
            k = key(row)
            old = ix.row(k)
            if old is None:
                ix[k] = (row,)
            elif old != row:
                entry[1] = self.indexes[(rel, cols)] = build_index(self.full[rel], key)
                return

    def _add_unique(self, rel: str, entry: list[Any], rows: list[Row]) -> None:
        """Add rows to a unique index; at the first key with a second row, replace it by an
        ordinary index (with the rows so far) and add the rest there. Many rows whose keys
        are all new (a bulk load into an index the first evaluation made) are added at C
        speed."""
        key, ix, cols = entry
        if len(rows) >= BULK:
            keys = list(map(key, rows))
            if not ix or not any(map(ix.__contains__, keys)):  # (none there: no lookup)
                n = len(ix)
                dict.update(ix, zip(keys, rows, strict=True))
                if len(ix) == n + len(rows):
                    return
                # a key twice among the rows: an ordinary index of all the rows, built anew
                rebuilt = entry[1] = self.indexes[(rel, cols)] = build_index(self.full[rel],
                                                                             key)
                assert type(rebuilt) is not UniqueIndex
                return
        for i, row in enumerate(rows):
            k = key(row)
            old = dict.get(ix, k)
            if old is None:
                ix[k] = row
            elif old != row:
                wide: Index = {kk: (r,) for kk, r in dict.items(ix)}
                entry[1] = wide
                self.indexes[(rel, cols)] = wide
                for r in rows[i:]:
                    _put(wide, key(r), r)
                return

    def remove(self, rel: str, rows: Collection[Row]) -> None:
        """Remove rows that are present."""
        if not rows:
            return
        self.orders.pop(rel, None)
        self._settle(rel)
        full = self.ensure(rel)
        for row in rows:
            del full[row]
        self._rows -= len(rows)
        for key, ix, _ in self._by_rel.get(rel, ()):
            if type(ix) is UniqueIndex or (type(ix) is SortedIndex and ix.unique):
                for row in rows:
                    del ix[key(row)]
                continue
            drop = ix.drop if type(ix) is SortedIndex else None
            for row in rows:
                k = key(row)
                if drop is not None and drop(k, row):  # kept aside (many rows)
                    continue
                bucket = ix[k]
                if type(bucket) is tuple:
                    del ix[k]
                else:
                    assert isinstance(bucket, dict)
                    del bucket[row]
                    if len(bucket) == 1:
                        ix[k] = (next(iter(bucket)),)
        for fn in self.watchers.get(rel, ()):
            fn(rows, False)

    def size(self) -> int:
        return sum(len(v) for v in self.full.values())

    @property
    def rows(self) -> int:
        """Rows stored in all relations (kept as rows are added and removed)."""
        return self._rows
