"""Materialized relations and their hash indexes.

``full[rel]`` maps each row to its *level*: 0 for base facts, otherwise the evaluation round in
which the row was first derived. Levels order derivations (a row's body facts always have lower
levels), which is all the explainer needs to rebuild a minimal proof on demand (Soufflé keeps
the same kind of annotation).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping
from itertools import filterfalse
from operator import itemgetter
from typing import Any

from ..core.index import Index, UniqueIndex, build_index
from ..core.ir import Row

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


def net_change(ops: Mapping[str, Mapping[Row, bool]],
               stored: Callable[[str], Collection[Row]],
               ) -> tuple[dict[str, set[Row]], dict[str, set[Row]]]:
    """The net effect of a transaction's operations (per relation, row -> True to insert,
    False to retract) on the ``stored`` rows of each relation: the rows it adds (absent
    now) and the rows it removes (present now). A relation's batch of inserts only (a bulk
    load) is filtered at C speed."""
    ins: dict[str, set[Row]] = {}
    dels: dict[str, set[Row]] = {}
    for rel, rows in ops.items():
        have = stored(rel)
        if all(rows.values()):
            got = set(filterfalse(have.__contains__, rows))
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
        self.indexes: dict[tuple[str, tuple[int, ...]], Index] = {}
        #: relation -> [key function, index, columns] of each of its indexes
        self._by_rel: dict[str, list[list[Any]]] = defaultdict(list)
        self._rows = 0
        #: relation -> functions told the rows just added (True) or removed (False), once
        #: the indexes are: what is kept beside them (engine/answer/vocabulary.py's names)
        self.watchers: dict[str, list[Callable[[Collection[Row], bool], None]]] = {}

    def ensure(self, rel: str) -> dict[Row, int]:
        got = self.full.get(rel)
        if got is None:
            got = self.full[rel] = {}
        return got

    def index(self, rel: str, cols: tuple[int, ...]) -> Index:
        """The hash index of ``rel`` on ``cols``, built on first use and kept up to date
        (a :class:`UniqueIndex` while every key has one row)."""
        k = (rel, cols)
        ix = self.indexes.get(k)
        if ix is None:
            key = _key_fn(cols)
            ix = self.indexes[k] = build_index(self.ensure(rel), key)
            self._by_rel[rel].append([key, ix, cols])
        return ix

    def adopt(self, other: Database, rel: str) -> None:
        """Take over ``rel``'s rows and indexes from ``other`` (which must not use them
        after): a re-evaluation keeps base relations without copying them."""
        rows = other.full.get(rel)
        if rows is None:
            return
        self.full[rel] = rows
        self._rows += len(rows)
        for key, ix, cols in other._by_rel.get(rel, ()):
            self.indexes[(rel, cols)] = ix
            self._by_rel[rel].append([key, ix, cols])

    def add(self, rel: str, rows: Collection[Row], level: int) -> None:
        """Add rows not yet present (callers filter out known rows)."""
        if not rows:
            return
        full = self.ensure(rel)
        before = len(full)
        full.update(dict.fromkeys(rows, level))
        self._rows += len(full) - before
        ordered: list[Row] | None = None
        for entry in self._by_rel.get(rel, ()):
            key, ix = entry[0], entry[1]
            if type(ix) is UniqueIndex:
                if ordered is None:
                    ordered = list(rows)
                self._add_unique(rel, entry, ordered)
            else:
                # one pass, the buckets' code inline (no call a row): twice as fast as an
                # index of the new rows built first and merged a key at a time, whether
                # the keys are new or old (benchmarks/RESULTS.md, "The conformance-shaped
                # cases, continued")
                get = ix.get
                for row in rows:
                    k = key(row)
                    bucket = get(k)
                    if bucket is None:
                        ix[k] = (row,)
                    elif type(bucket) is tuple:
                        if bucket[0] != row:
                            ix[k] = {bucket[0]: None, row: None}
                    else:
                        bucket[row] = None
        for fn in self.watchers.get(rel, ()):
            fn(rows, True)

    def _add_unique(self, rel: str, entry: list[Any], rows: list[Row]) -> None:
        """Add rows to a unique index; at the first key with a second row, replace it by an
        ordinary index (with the rows so far) and add the rest there. Many rows whose keys
        are all new (a bulk load into an index the first evaluation made) are added at C
        speed."""
        key, ix, cols = entry
        if len(rows) >= BULK:
            keys = list(map(key, rows))
            if not any(map(ix.__contains__, keys)):
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
        full = self.ensure(rel)
        for row in rows:
            del full[row]
        self._rows -= len(rows)
        for key, ix, _ in self._by_rel.get(rel, ()):
            if type(ix) is UniqueIndex:
                for row in rows:
                    del ix[key(row)]
                continue
            for row in rows:
                k = key(row)
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
