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

# key -> rows with that key; a dict used as an insertion-ordered set (fast removal, stable order)
Index = defaultdict[Any, dict[Row, None]]


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
            ix = defaultdict(dict)
            for row in self.ensure(rel):
                ix[key(row)][row] = None
            self.indexes[k] = ix
            self._by_rel[rel].append((key, ix))
        return ix

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
                ix[key(row)][row] = None

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
                del bucket[row]
                if not bucket:
                    del ix[k]

    def size(self) -> int:
        return sum(len(v) for v in self.full.values())

    @property
    def rows(self) -> int:
        """Rows stored in all relations (kept as rows are added and removed)."""
        return self._rows
