"""An index of a big relation built lazily, for the keys asked only (issue 26, item 5).

The first answer after a load from Python lists reads a few keys of indexes nothing built yet:
the owners of one user among 57,000 ownership rows, a role's grants among 20,000. An index of
buckets built in Python costs ~0.3 µs a row (17 ms for those 57,000 rows); one key's rows
found by a scan of the key column at C speed cost ~0.01 µs a row (0.6 ms). :class:`LazyIndex`
answers a key by such a scan, keeps the bucket, and builds the hash index (what
:func:`~engine.core.index.build_index` gives) once it has scanned :data:`SCANS` keys: an
evaluation that reads many keys pays at most ~a third more than the build, a listing that
reads a few pays none of it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from itertools import compress, islice, repeat
from operator import eq, itemgetter
from typing import Any

from .index import PROBE, Index, SortedIndex, UniqueIndex
from .ir import Row

#: rows from which the database indexes a relation whose keys repeat lazily
#: (engine/eval/database.py ``Database.index``)
LAZY_MIN = 1 << 14
#: keys scanned before the hash index is built (a scan: ~1/30 of the build)
SCANS = 8
#: rows of one key found one ``list.index`` at a time; past that, the rest at C speed
_FEW = 64
#: a key with no rows (read, or its rows written away)
_GONE: Any = object()
#: rows a loop reads from which a generated plan filters them by a later scan's index at C
#: speed (:func:`semijoin`), and has the indexes it probes per row hashed (:func:`ready`)
SEMI = 512
#: the containers :func:`semijoin` reads at C speed, and the row collections it reads twice
_HASHES = (dict, UniqueIndex)
_REREAD = (set, frozenset, dict, list, tuple)


def ready(ix: Any, reads: int) -> Any:
    """``ix`` (an index a loop of ``reads`` rows probes once a row) as the loop should read
    it: a sorted or lazy index (read through a Python call a probe) hashed now when the
    reads are at least a quarter of its rows (the build costs about what as many probes
    do: a loop that reads many keys would have it built after a few anyway), and then the
    hash index itself; any other index as it is."""
    if type(ix) not in DEFERRED:
        return ix
    if ix.hash is None and (reads < SEMI or 4 * reads < len(ix._rows)):
        return ix
    return ix.hashed()


def semijoin(rows: Any, within: Any, cols: tuple[int, ...]) -> Any:
    """The rows (of a loop over a whole relation or delta) whose values at ``cols`` are a
    key of ``within`` (an index, or a relation's rows for a membership test, that a later
    step of the plan reads with that key): the others would find nothing there. Filtered
    at C speed when the loop is long and both can be read so (``rows`` itself otherwise):
    a semi-join before the nested loops, which then run for the rows that join only."""
    if type(within) not in _HASHES or type(rows) not in _REREAD or len(rows) < SEMI:
        return rows
    return compress(rows, map(dict.__contains__.__get__(within), map(itemgetter(*cols), rows)))


def lazy_index(rows: Collection[Row], cols: tuple[int, ...],
               told: Callable[[], None] | None = None) -> Index | LazyIndex:
    """The index of ``rows`` (distinct, in insertion order) on ``cols``: a
    :class:`UniqueIndex` when every key has one row (built at C speed, as
    :func:`~engine.core.index.build_index` does), else a :class:`LazyIndex` over a copy
    of the rows (``told``: called once it builds its hash index)."""
    key = itemgetter(*cols)
    probe = list(islice(map(key, rows), PROBE))
    if len(set(probe)) == len(probe):
        unique = UniqueIndex(zip(map(key, rows), rows, strict=True))
        if len(unique) == len(rows):
            return unique
    return LazyIndex(list(rows), cols, told)


class LazyIndex:
    """The index of rows on columns ``cols`` (keys that repeat), read as a hash index is
    (``get``, ``in``, ``[]``, iteration), built for the keys asked. A key's bucket (a
    1-tuple, or an ordered dict of its rows in their order, as
    :func:`~engine.core.index.build_index` makes it) is made when the key is first read,
    and kept: from the rows holding its value in one column (the one of the most distinct
    values among the first rows: a grant's role, not its effect), found by a scan of that
    column at C speed, once per value. After :data:`SCANS` scans, or when asked
    (:meth:`hashed`: ``prepare``; iteration and ``len``), the hash index of the rows as
    they stand is built and read from then on (the database takes it in its place).
    Writes (engine/eval/database.py) read a key's bucket before they change it, so the
    buckets kept are an exact overlay of the rows given at creation."""

    __slots__ = ("_at", "_col", "_found", "_key", "_left", "_made", "_rows", "_told",
                 "_values", "hash")

    def __init__(self, rows: list[Row], cols: tuple[int, ...],
                 told: Callable[[], None] | None = None) -> None:
        self._rows = rows
        self._key = itemgetter(*cols)
        #: the column scanned, and its place in a key (None: the key is its value)
        self._at: int | None = None
        self._col = cols[0]
        if len(cols) > 1:
            probe = list(islice(rows, PROBE))
            self._at = max(range(len(cols)),
                           key=lambda i: len(set(map(itemgetter(cols[i]), probe))))
            self._col = cols[self._at]
        #: the rows' values in that column, in their order (made at the first scan)
        self._values: list[Any] | None = None
        #: value -> the rows holding it there, of the values scanned
        self._found: dict[Any, list[Row]] = {}
        #: key -> bucket (or :data:`_GONE`) read or written so far
        self._made: dict[Any, Any] = {}
        self._left = SCANS
        #: the hash index built in its place (None: not yet)
        self.hash: Index | None = None
        self._told = told

    def hashed(self) -> Index:
        """The hash index of the rows as they stand (built once), read from now on."""
        if self.hash is not None:
            return self.hash
        h: dict[Any, Any] = {}
        get, key = h.get, self._key
        for row in self._rows:  # build_index's loop (never unique: keys repeat)
            k = key(row)
            bucket = get(k)
            if bucket is None:
                h[k] = (row,)
            elif type(bucket) is tuple:
                h[k] = {bucket[0]: None, row: None}
            else:
                bucket[row] = None
        for k, got in self._made.items():  # the buckets read or written: as they are
            if got is _GONE:
                h.pop(k, None)
            else:
                h[k] = got
        self.hash = h
        self._rows, self._values, self._found, self._made = [], None, {}, {}
        if self._told is not None:
            self._told()
        return h

    def get(self, k: Any, default: Any = None) -> Any:
        h = self.hash
        if h is not None:
            return h.get(k, default)
        got = self._made.get(k)
        if got is None:
            got = self._bucket(k)
            if got is None:  # scanned enough: the hash index
                return self.hashed().get(k, default)
            self._made[k] = got
        return default if got is _GONE else got

    def _bucket(self, k: Any) -> Any:
        """The bucket of ``k`` in the rows given (:data:`_GONE`: none), or None when it
        would take a scan and none is left."""
        at = self._at
        if at is None:
            v = k
        elif type(k) is tuple and len(k) > at:
            v = k[at]
        else:  # not a key of these columns
            return _GONE
        rows = self._found.get(v)
        if rows is None:
            if self._left <= 0:
                return None
            self._left -= 1
            rows = self._found[v] = self._scan(v)
        if at is not None:
            key = self._key
            rows = [row for row in rows if key(row) == k]
        if not rows:
            return _GONE
        return (rows[0],) if len(rows) == 1 else dict.fromkeys(rows)

    def _scan(self, v: Any) -> list[Row]:
        """The rows given holding ``v`` in the column scanned, in their order, found at C
        speed."""
        values = self._values
        if values is None:
            values = self._values = list(map(itemgetter(self._col), self._rows))
        rows, at, i = self._rows, list[int](), -1
        index = values.index
        try:
            while len(at) < _FEW:
                i = index(v, i + 1)
                at.append(i)
        except ValueError:  # no more
            return list(map(rows.__getitem__, at))
        i += 1  # many: the rest in one pass
        return [*map(rows.__getitem__, at),
                *compress(islice(rows, i, None), map(eq, islice(values, i, None), repeat(v)))]

    def __getitem__(self, k: Any) -> Any:
        got = self.get(k)
        if got is None:
            raise KeyError(k)
        return got

    def __setitem__(self, k: Any, bucket: Any) -> None:
        if self.hash is not None:
            self.hash[k] = bucket
        else:
            self._made[k] = bucket

    def __delitem__(self, k: Any) -> None:
        if self.hash is not None:
            del self.hash[k]
            return
        self[k]  # KeyError when absent
        self._made[k] = _GONE

    def __contains__(self, k: Any) -> bool:
        return self.get(k) is not None

    def __len__(self) -> int:
        return len(self.hashed())

    def __iter__(self) -> Iterator[Any]:
        return iter(self.hashed())

    def keys(self) -> Any:
        return self.hashed().keys()

    def items(self) -> Any:
        return self.hashed().items()

    def values(self) -> Any:
        return self.hashed().values()


#: the indexes that build their hash index when read enough, the database then taking it
#: in their place (engine/eval/database.py ``Database._settle``); a long loop has it built
#: at once (:func:`ready`)
DEFERRED = (SortedIndex, LazyIndex)
