"""Materialized relations and their hash indexes.

``full[rel]`` maps each row to its *level*: 0 for base facts, otherwise the evaluation round in
which the row was first derived. Levels order derivations (a row's body facts always have lower
levels), which is all the explainer needs to rebuild a minimal proof on demand (Soufflé keeps
the same kind of annotation).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Iterable
from operator import itemgetter
from typing import Any

from .ir import Row

# key -> rows with that key: a 1-tuple for a single row (most keys of most indexes: an object's
# parent, its type), else a dict used as an insertion-ordered set (fast removal, stable order).
# Both iterate rows and test membership; the 1-tuple saves a dict per key (~200 bytes).
Bucket = tuple[Row] | dict[Row, None]
Index = dict[Any, Bucket]


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


def _key_fn(cols: tuple[int, ...]) -> Callable[[Row], Any]:
    return itemgetter(*cols)


class Database:
    def __init__(self, relations: Iterable[str]) -> None:
        self.full: dict[str, dict[Row, int]] = {r: {} for r in relations}
        #: the highest level handed out so far (levels only grow, across updates too)
        self.level = 0
        self.indexes: dict[tuple[str, tuple[int, ...]], Index] = {}
        self._by_rel: dict[str, list[tuple[Callable[[Row], Any], Index]]] = defaultdict(list)
        self._rows = 0

    def ensure(self, rel: str) -> dict[Row, int]:
        got = self.full.get(rel)
        if got is None:
            got = self.full[rel] = {}
        return got

    def index(self, rel: str, cols: tuple[int, ...]) -> Index:
        """The hash index of ``rel`` on ``cols``, built on first use and kept up to date."""
        k = (rel, cols)
        ix = self.indexes.get(k)
        if ix is None:
            key = _key_fn(cols)
            ix = {}
            for row in self.ensure(rel):
                _put(ix, key(row), row)
            self.indexes[k] = ix
            self._by_rel[rel].append((key, ix))
        return ix

    def adopt(self, other: Database, rel: str) -> None:
        """Take over ``rel``'s rows and indexes from ``other`` (which must not use them
        after): a re-evaluation keeps base relations without copying them."""
        rows = other.full.get(rel)
        if rows is None:
            return
        self.full[rel] = rows
        self._rows += len(rows)
        for key, ix in other._by_rel.get(rel, ()):
            cols = next(k[1] for k, v in other.indexes.items() if v is ix)
            self.indexes[(rel, cols)] = ix
            self._by_rel[rel].append((key, ix))

    def add(self, rel: str, rows: Collection[Row], level: int) -> None:
        """Add rows not yet present (callers filter out known rows)."""
        if not rows:
            return
        full = self.ensure(rel)
        before = len(full)
        full.update(dict.fromkeys(rows, level))
        self._rows += len(full) - before
        for key, ix in self._by_rel.get(rel, ()):
            for row in rows:
                _put(ix, key(row), row)

    def remove(self, rel: str, rows: Collection[Row]) -> None:
        """Remove rows that are present."""
        if not rows:
            return
        full = self.ensure(rel)
        for row in rows:
            del full[row]
        self._rows -= len(rows)
        for key, ix in self._by_rel.get(rel, ()):
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

    def size(self) -> int:
        return sum(len(v) for v in self.full.values())

    @property
    def rows(self) -> int:
        """Rows stored in all relations (kept as rows are added and removed)."""
        return self._rows
