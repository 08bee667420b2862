"""The shape of a hash index, as every evaluator and generated plan reads it."""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from .ir import Row

# key -> rows with that key: a 1-tuple for a single row (most keys of most indexes: an object's
# parent, its type), else a dict used as an insertion-ordered set (fast removal, stable order).
# Both iterate rows and test membership; the 1-tuple saves a dict per key (~200 bytes).
Bucket = tuple[Row] | dict[Row, None]
Index = dict[Any, Bucket]


class UniqueIndex(dict):  # type: ignore[type-arg]
    """An index whose every key has one row (an object's type, its parent): it keeps the row
    itself, not a 1-tuple holding it (48 bytes less per key; a million-table hierarchy has two
    million such keys), and makes the 1-tuple when read. Readers use ``get`` only, like any
    index; the database turns it into an ordinary :data:`Index` when a key gets a second row.
    """

    __slots__ = ()

    def get(self, k: Any, default: Any = None) -> Any:
        row = dict.get(self, k)
        return default if row is None else (row,)


def stored_get(ix: Any) -> tuple[Callable[[Any], Any], bool]:
    """What an index stores under a key, read without a Python call where possible: the
    getter (None for a missing key) and whether the index is a :class:`UniqueIndex` (the
    value is then the row itself, not a bucket of rows). Hot loops read indexes this way."""
    if type(ix) is UniqueIndex:
        return dict.get.__get__(ix), True
    return ix.get, False


def build_index(rows: Collection[Row], key: Callable[[Row], Any]) -> Index:
    """The index of ``rows`` (distinct, in insertion order) on ``key``, as the database keeps
    it (engine/eval/database.py): a :class:`UniqueIndex` when every key has one row (built
    at C speed), else 1-tuples and ordered dicts, keys in the order of their first row."""
    unique = UniqueIndex(zip(map(key, rows), rows, strict=True))
    if len(unique) == len(rows):
        return unique
    ix: Index = {}
    get = ix.get
    for row in rows:
        k = key(row)
        bucket = get(k)
        if bucket is None:
            ix[k] = (row,)
        elif type(bucket) is tuple:
            ix[k] = {bucket[0]: None, row: None}
        else:
            assert isinstance(bucket, dict)
            bucket[row] = None
    return ix
