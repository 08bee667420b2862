"""The shape of a hash index, as every evaluator and generated plan reads it."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator
from itertools import compress, islice, repeat
from operator import eq, gt, itemgetter
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
    if type(ix) is SortedIndex and ix.unique:
        return ix.row, True
    return ix.get, False


def stored_many(ix: Any) -> Callable[..., list[Any]]:
    """:func:`stored_get`'s getter over many keys at once: ``many(keys, default=None)`` is
    the list of what the index stores under each (``default`` for a missing key). A walk's
    level reads so: a :class:`SortedIndex` answers it without a Python call per key."""
    if type(ix) is SortedIndex:
        return ix.many
    get: Any = stored_get(ix)[0]  # dict.get, with a default

    def many(keys: list[Any], default: Any = None) -> list[Any]:
        return list(map(get, keys, repeat(default)))
    return many


def index_keys(ix: Any) -> Iterable[Any]:
    """An index's keys to iterate once (a set operand): a :class:`SortedIndex`'s own list
    of them while it has no write (no dict of a million keys made for it)."""
    if type(ix) is SortedIndex and ix.hash is None and not ix._written:
        return ix._distinct_keys()
    return ix.keys()  # type: ignore[no-any-return]


def more_keys(ix: Any, m: int) -> bool:
    """Whether index ``ix`` has more than ``m`` keys: a :class:`SortedIndex`'s distinct
    keys counted no further than that while it has no write (a million children's 7,000
    parents: the first few hundred, when a walk's level of a few thousand asks)."""
    if type(ix) is SortedIndex and ix.hash is None and not ix._written:
        return ix._more_than(m)
    return len(ix) > m


#: rows :func:`build_index` looks at for a key met twice before it tries a unique index
PROBE = 1024


def build_index(rows: Collection[Row], key: Callable[[Row], Any]) -> Index:
    """The index of ``rows`` (distinct, in insertion order) on ``key``, as the database keeps
    it (engine/eval/database.py): a :class:`UniqueIndex` when every key has one row (built
    at C speed), else 1-tuples and ordered dicts, keys in the order of their first row.
    A key twice among the first :data:`PROBE` rows skips the unique attempt (a type
    column: a million rows' dict made for nothing)."""
    probe = list(islice(map(key, rows), PROBE))
    if len(set(probe)) == len(probe):
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


#: rows a bulk load gives a relation from which its columns of repeated keys are kept sorted
#: (:func:`nearly_sorted`; engine/eval/database.py), as a store's snapshot keeps them
SORT_MIN = 1 << 15
#: neighbouring pairs of rows :func:`nearly_sorted` compares, spread over the rows, and
#: the share of them that may descend (at most one in this many)
SORT_PAIRS = 2048
DESCENTS = 16


def nearly_sorted(rows: Collection[Row], col: int) -> list[Row] | None:
    """``rows`` (distinct; a list or a dict's keys) sorted stably on column ``col`` when
    they come nearly sorted on it, else None: a column of repeated keys (one twice among
    the first :data:`PROBE` rows: a parent's children, an object's type; a key-like
    column's hash index is built at C speed anyway), of values that compare, where at most
    one in :data:`DESCENTS` of :data:`SORT_PAIRS` neighbouring pairs spread over the rows
    descends (compared at C speed): the sort then merges few runs (~0.05 s a million rows
    made in a hierarchy's order, against ~0.3-0.5 s for the index of buckets). What a
    :class:`SortedIndex` reads, as after a store's open."""
    n = len(rows)
    key = itemgetter(col)
    probe = list(map(key, islice(rows, PROBE)))
    if n < 2 or len(set(probe)) == len(probe):
        return None
    step = max(1, (n - 1) // SORT_PAIRS)
    try:
        down = sum(map(gt, map(key, islice(rows, 0, n - 1, step)),
                       map(key, islice(rows, 1, n, step))))
        if down * DESCENTS > (n - 2) // step + 1:
            return None
        return sorted(rows, key=key)
    except TypeError:  # values of types that do not compare (a number and a string)
        return None


class SortedRows(list):  # type: ignore[type-arg]
    """A relation's rows (distinct) as read in one piece (grantlog/store/snapshots.py), with,
    for some columns, the same row objects in the order of that column's values (a stable
    sort: the rows of one value in this list's order): what :class:`SortedIndex` reads, so
    that opening a store builds no hash index of a big relation."""

    __slots__ = ("orders",)

    def __init__(self, rows: Iterable[Row], orders: dict[int, list[Row]]) -> None:
        super().__init__(rows)
        self.orders = orders


#: a :class:`SortedIndex` builds its hash index after reads for this fraction of its rows
#: (at least :data:`HASH_MIN`): about the cost of building it
HASH_AFTER = 16
HASH_MIN = 4096
#: rows of one key from which a :class:`SortedIndex` keeps a row added aside (:meth:`put`)
PUT_ASIDE = 256
#: a key a write removed from a :class:`SortedIndex` (its sorted rows still hold it)
_GONE: Any = object()


class SortedIndex:
    """The index of a relation on one column, read by bisection over its rows sorted on that
    column (:class:`SortedRows`) instead of a hash table built when first read (a million
    keys: ~0.3-0.4 s however it is built): what a store's first answers read. Readers see
    what :func:`build_index` gives: ``get(k)`` is the key's bucket (a 1-tuple, or an ordered
    dict of its rows, made on first read and kept), and :func:`stored_get` reads a unique one
    (every key one row, as a :class:`UniqueIndex`) row by row. Writes (engine/eval/
    database.py) go to the buckets kept: a key set or deleted is kept over the sorted rows
    (an overlay), so the index stays exact under incremental maintenance.

    A read costs a Python call and a bisection (~10-20 dictionary reads): once an index
    has answered a sixteenth of its rows' worth of reads (:data:`HASH_AFTER`), or when
    asked (:meth:`hashed`: ``prepare``), it builds the hash index of its rows as they
    stand and reads that from then on (the database takes it in its place: engine/eval/
    database.py), so that the warm walks of a listing read a hash table as before. A
    walk's level is read with :meth:`many` (:func:`stored_many`): a key range as one dict
    at C speed, and a row added to or removed from a key of many rows (a new table: the
    type ``table``'s million) is kept aside (:meth:`put`, :meth:`drop`) until that bucket
    is read. Iteration is in key order, then new keys."""

    __slots__ = ("_distinct", "_dropped", "_keys", "_left", "_made", "_moved", "_pending",
                 "_rows", "_told", "_writes", "_written", "hash", "unique")

    def __init__(self, order: list[Row], col: int,
                 told: Callable[[], None] | None = None) -> None:
        self._rows = order
        self._keys = list(map(itemgetter(col), order))
        keys = self._keys
        #: every key one row (no two neighbours equal, compared at C speed)
        self.unique = not any(map(eq, keys, islice(keys, 1, None)))
        #: key -> bucket (or :data:`_GONE`) read or written so far
        self._made: dict[Any, Any] = {}
        #: the distinct keys in order (made when first asked: :meth:`_distinct_keys`)
        self._distinct: list[Any] | None = None
        #: key -> bucket (or :data:`_GONE`) of the keys written (set or deleted)
        self._writes: dict[Any, Any] = {}
        #: key -> rows added to its bucket of many rows not made yet (:meth:`put`)
        self._pending: dict[Any, dict[Row, None]] = {}
        #: key -> rows removed from its bucket of many rows not made yet (:meth:`drop`)
        self._dropped: dict[Any, set[Row]] = {}
        #: keys written in less those deleted (:meth:`__len__`); whether any write came
        self._moved = 0
        self._written = False
        #: reads left before the hash index is built
        self._left = max(HASH_MIN, len(keys) // HASH_AFTER)
        #: the hash index built in its place (None: not yet)
        self.hash: Index | None = None
        #: called once it is built (the database's views then read it directly)
        self._told = told

    def unwritten(self) -> tuple[list[Row], list[Any]] | None:
        """The rows in key order and their keys, while no write came and no hash index
        was built (read only), else None."""
        if self._written or self._writes or self.hash is not None:
            return None
        return self._rows, self._keys

    def hashed(self) -> Index:
        """The hash index of the rows as they stand (built once: :func:`build_index`'s
        shape, the keys written since applied), read in place of the bisections from now."""
        h = self.hash
        if h is None:
            if self.unique:
                u = UniqueIndex(zip(self._keys, self._rows, strict=True))
                for k, got in self._made.items():
                    if got is _GONE:
                        u.pop(k, None)
                    else:
                        dict.__setitem__(u, k, got[0])
                h = u
            else:
                h = {}
                made = self._made
                rows, keys = self._rows, self._keys
                i, n = 0, len(keys)
                while i < n:
                    k = keys[i]
                    j = i + 1 if i + 1 == n or keys[i + 1] != k else bisect_right(keys, k, i)
                    if k not in made:
                        h[k] = (rows[i],) if j == i + 1 else self._many_rows(k, i, j)
                    i = j
                for k, got in made.items():
                    if got is not _GONE:
                        h[k] = got
            self.hash = h
            self._made = {}
            if self._told is not None:
                self._told()
        return h

    def get(self, k: Any, default: Any = None) -> Any:
        h = self.hash
        if h is not None:
            return h.get(k, default)
        self._left -= 1
        if self._left <= 0:
            return self.hashed().get(k, default)
        got = self._made.get(k)
        if got is None:
            keys = self._keys
            try:
                lo = bisect_left(keys, k)
            except TypeError:  # a key of another type than the column's: not there
                return default
            if lo == len(keys) or keys[lo] != k:
                self._made[k] = _GONE  # asked again (a leaf's children): one dict read
                return default
            rows = self._rows
            if self.unique or lo + 1 == len(keys) or keys[lo + 1] != k:
                got = self._made[k] = (rows[lo],)
            else:
                got = self._made[k] = self._many_rows(k, lo, bisect_right(keys, k, lo))
        return default if got is _GONE else got

    def row(self, k: Any, default: Any = None) -> Any:
        """A unique index's row of ``k`` (``default``: none), as a :class:`UniqueIndex`'s
        ``dict.get`` reads it (the hot loops' getter: one call, the bisection inline)."""
        h = self.hash
        if h is not None:
            return dict.get(h, k, default)
        self._left -= 1
        if self._left <= 0:
            return dict.get(self.hashed(), k, default)
        got = self._made.get(k)
        if got is None:
            keys = self._keys
            try:
                i = bisect_left(keys, k)
            except TypeError:
                return default
            if i != len(keys) and keys[i] == k:
                got = self._made[k] = (self._rows[i],)
                return got[0]
            self._made[k] = _GONE
            return default
        return default if got is _GONE else got[0]

    def many(self, keys: list[Any], default: Any = None) -> list[Any]:
        """What the index stores under each of ``keys`` (:func:`stored_many`: a unique
        index's rows, else buckets; ``default`` for a missing key), as :meth:`row` or
        :meth:`get` a key would give, read together: when the keys span a short stretch of
        the sorted rows, that stretch is read into a dict at C speed (a schema's tables,
        named after it, are one stretch); when they are many and spread, the hash index is
        built (as after many reads one by one); else one bisection a key, inline."""
        h = self.hash
        if h is None and keys:
            kk = self._keys
            try:
                lo = bisect_left(kk, min(keys))
                hi = bisect_right(kk, max(keys), lo)
            except TypeError:  # keys of several types: one by one
                one = self.row if self.unique else self.get
                return list(map(one, keys, repeat(default)))
            if hi - lo > 4 * len(keys) + 256:  # spread: one bisection each
                if len(keys) >= self._left:
                    h = self.hashed()
                elif self.unique and not self._writes:
                    self._left -= len(keys)
                    return self._bisected(keys, default)
                elif not self.unique:
                    self._left -= len(keys)
                    return self._spread(keys, default)
                else:
                    one = self.row if self.unique else self.get
                    return list(map(one, keys, repeat(default)))
            elif hi - lo >= len(kk) // 4 or self._left <= (hi - lo) // 16:
                h = self.hashed()  # a wide range, or many read: the hash table, kept
            elif self.unique:
                self._left -= (hi - lo) // 16  # a dict of the range: ~1/16 of a key's read
                d = dict(zip(kk[lo:hi], self._rows[lo:hi], strict=True))
                for k, got in self._writes.items():
                    if got is _GONE:
                        d.pop(k, None)
                    else:
                        d[k] = got[0]
                return list(map(d.get, keys, repeat(default)))
            else:
                self._left -= (hi - lo) // 16
                return self._buckets(keys, default, lo, hi)
        if h is None:
            return []
        get = dict.get.__get__(h) if type(h) is UniqueIndex else h.get
        return list(map(get, keys, repeat(default)))

    def _bisected(self, keys: list[Any], default: Any) -> list[Any]:
        """:meth:`many` of a unique index with no write, a bisection a key inline."""
        kk, rows, n = self._keys, self._rows, len(self._keys)
        out = []
        for k in keys:
            i = bisect_left(kk, k)
            out.append(rows[i] if i != n and kk[i] == k else default)
        return out

    def _spread(self, keys: list[Any], default: Any) -> list[Any]:
        """:meth:`many` of a non-unique index, keys spread: a bisection a key, inline."""
        kk, rows, made, n = self._keys, self._rows, self._made, len(self._keys)
        out = []
        for k in keys:
            got = made.get(k)
            if got is None:
                i = bisect_left(kk, k)
                if i == n or kk[i] != k:
                    got = _GONE
                elif i + 1 == n or kk[i + 1] != k:
                    got = (rows[i],)
                else:  # several rows: the bucket made once, kept
                    got = made[k] = self._many_rows(k, i, bisect_right(kk, k, i))
            out.append(default if got is _GONE else got)
        return out

    def _buckets(self, keys: list[Any], default: Any, lo: int, hi: int) -> list[Any]:
        """:meth:`many` of a non-unique index, the keys within the rows ``lo:hi``: each
        key's last row found at C speed, a Python step only for the keys found (a level's
        leaves have no children) and those read or written before (:attr:`_made`)."""
        kk, rows, made = self._keys, self._rows, self._made
        ends = dict(zip(kk[lo:hi], range(lo + 1, hi + 1), strict=True))  # past its last
        out: list[Any] = list(map(ends.get, keys))
        for i in compress(range(len(keys)), out):  # found (an end is never 0)
            k, e = keys[i], out[i]
            if e - 1 == lo or kk[e - 2] != k:
                out[i] = (rows[e - 1],)
            else:
                got = made.get(k)  # a bucket of several rows: made once, kept
                if got is None:
                    got = made[k] = self._many_rows(k, bisect_left(kk, k, lo, e), e)
                out[i] = got
        if made:  # what writes set (and buckets made): over the sorted rows
            for i in compress(range(len(keys)), map(made.__contains__, keys)):
                got = made[keys[i]]
                out[i] = None if got is _GONE else got
        if default is not None:
            out = [default if x is None else x for x in out]
        return out

    def _many_rows(self, k: Any, lo: int, hi: int) -> dict[Row, None]:
        """The bucket of ``k``'s rows ``lo:hi`` (more than one) and the rows :meth:`put`
        added to it."""
        got = dict.fromkeys(self._rows[lo:hi])
        if self._dropped:
            for row in self._dropped.pop(k, ()):
                del got[row]
        if self._pending:
            got.update(self._pending.pop(k, {}))
        return got

    def put(self, k: Any, row: Row) -> bool:
        """Add ``row`` (new) to the bucket of ``k`` when it holds many rows and is not made
        yet: kept aside until the bucket is read (a new table among a million: no bucket
        of a million rows made for it). False: not so (the caller adds it as to a dict)."""
        if self.hash is not None or self.unique or k in self._made:
            return False
        lo, hi = self._span(k)
        if hi - lo < PUT_ASIDE:
            return False
        self._pending.setdefault(k, {})[row] = None
        self._written = True
        return True

    def drop(self, k: Any, row: Row) -> bool:
        """Remove ``row`` (present) from the bucket of ``k`` as :meth:`put` adds one: kept
        aside while the bucket is not made and keeps many rows. False: not so."""
        if self.hash is not None or self.unique or k in self._made:
            return False
        lo, hi = self._span(k)
        pending, dropped = self._pending.get(k, {}), self._dropped.get(k, set())
        if hi - lo + len(pending) - len(dropped) < PUT_ASIDE:
            return False
        if row in pending:
            del pending[row]
        else:
            self._dropped.setdefault(k, set()).add(row)
        self._written = True
        return True

    @property
    def aside(self) -> int:
        """Rows :meth:`put` keeps aside (their buckets not made yet)."""
        return sum(map(len, self._pending.values())) + sum(map(len, self._dropped.values()))

    def _span(self, k: Any) -> tuple[int, int]:
        keys = self._keys
        try:
            i = bisect_left(keys, k)
        except TypeError:
            return 0, 0
        if i == len(keys) or keys[i] != k:
            return i, i
        return (i, i + 1) if self.unique else (i, bisect_right(keys, k, i))

    def __getitem__(self, k: Any) -> Any:
        got = self.get(k)
        if got is None:
            raise KeyError(k)
        return got

    def __setitem__(self, k: Any, bucket: Any) -> None:
        assert self.hash is None  # the database writes to the hash index once built
        if self.get(k) is None:
            self._moved += 1
        self._made[k] = self._writes[k] = bucket
        self._written = True

    def __delitem__(self, k: Any) -> None:
        assert self.hash is None
        self[k]  # KeyError when absent
        self._made[k] = self._writes[k] = _GONE
        self._moved -= 1
        self._written = True

    def __contains__(self, k: Any) -> bool:
        return self.get(k) is not None

    def __iter__(self) -> Iterator[Any]:
        return iter(self.keys())

    def _iter(self) -> Iterator[Any]:
        made = self._made
        for k in self._distinct_keys():
            if made.get(k) is not _GONE:
                yield k
        for k, got in list(made.items()):
            if got is not _GONE and self._span(k)[0] == self._span(k)[1]:
                yield k

    def __len__(self) -> int:
        if self.hash is not None:
            return len(self.hash)
        return (len(self._keys) if self.unique else len(self._distinct_keys())) + self._moved

    def _distinct_keys(self) -> list[Any]:
        """The distinct keys of the sorted rows, in order: found by jumping over each key's
        run (a bisection a key) while they are few against the rows (a type index: a few
        keys over a million rows), else by one dict of them all (at C speed)."""
        got = self._distinct
        if got is None:
            keys = self._keys
            if self.unique:
                got = keys
            else:
                got, whole = self._runs(len(keys) // 64 + 16)
                if not whole:
                    got = list(dict.fromkeys(keys))
            self._distinct = got
        return got

    def _runs(self, cap: int) -> tuple[list[Any], bool]:
        """The first distinct keys of the sorted rows, at most ``cap`` of them, and whether
        they are all of them."""
        keys, got = self._keys, list[Any]()
        n, i, step = len(keys), 0, 16
        while i < n and len(got) < cap:
            k = keys[i]
            got.append(k)
            j = i + step  # the run's end looked for near the last run's length
            if j < n and keys[j] == k:
                j = bisect_right(keys, k, j)
            else:
                j = bisect_right(keys, k, i + 1, min(n, j))
            step, i = 2 * (j - i) + 1, j
        return got, i >= n

    def _more_than(self, m: int) -> bool:
        """Whether the sorted rows hold more than ``m`` distinct keys (no write came)."""
        if self._distinct is not None or self.unique:
            return len(self._distinct_keys()) > m
        cap = len(self._keys) // 64 + 16
        if m < cap:
            got, whole = self._runs(m + 1)
            if whole:
                self._distinct = got
            return len(got) > m
        return len(self._distinct_keys()) > m

    def keys(self) -> Any:
        """The keys, as a dict's view (a set operand): at C speed while nothing was
        written."""
        if self.hash is not None:
            return self.hash.keys()
        if not self._written:
            return dict.fromkeys(self._distinct_keys()).keys()
        return dict.fromkeys(self._iter()).keys()

    def items(self) -> list[tuple[Any, Any]]:
        return [(k, self.get(k)) for k in self]

    def values(self) -> list[Any]:
        return [self.get(k) for k in self]


def first_holding(rows: Iterable[Row], keys: list[Any], value: Any, limit: int) -> list[Row]:
    """The first ``limit`` of ``rows`` whose key is ``value`` (``keys``: the rows' keys, in
    their order): found by ``list.index`` (a scan at C speed, stopping at the ``limit``-th),
    no index built — what the planner's statistics read of a rare constant in a big
    relation that nothing has indexed on those columns yet."""
    at: list[int] = []
    i = -1
    index = keys.index
    try:
        while len(at) < limit:
            i = index(value, i + 1)
            at.append(i)
    except ValueError:  # no more
        pass
    if not at:
        return []
    if isinstance(rows, list):
        return [rows[i] for i in at]
    mask = bytearray(at[-1] + 1)
    for i in at:
        mask[i] = 1
    return list(compress(rows, mask))


class Fanout:
    """An edge relation walked from column ``a`` to column ``b``, read without an index
    (the planner's statistics counting a closure's nodes, engine/plan/stats.py
    ``reached``): how many edges leave each node (a ``Counter`` at C speed) and the edges
    to nodes that have edges themselves (the inner ones, walked further), found at C speed
    and indexed by ``a`` — a few thousand of a million-table hierarchy's edges, instead
    of an index of buckets of every edge. :meth:`kids` lists what the database's index on
    ``a`` would give (the same rows in the same order) less the edges to leaves."""

    __slots__ = ("_inner", "count", "has")

    def __init__(self, rows: Collection[Row], a: int, b: int,
                 keys: list[Any] | None = None) -> None:
        """``keys``: the rows' values at ``a``, when at hand (a :class:`SortedIndex`'s)."""
        counts = Counter(map(itemgetter(a), rows) if keys is None else keys)
        inner = compress(rows, map(counts.__contains__, map(itemgetter(b), rows)))
        self._inner = build_index(list(inner), itemgetter(a))
        #: node -> edges leaving it; whether a node has any
        self.count: Callable[[Any], int] = counts.__getitem__
        self.has: Callable[[Any], bool] = counts.__contains__

    def kids(self, node: Any) -> Iterable[Row]:
        """The edges from ``node`` to inner nodes."""
        return self._inner.get(node, ())
